/* The quantized matrix product y = x * w^T: the driver that splits the work
 * over panels of 64 output channels and row chunks on the thread pool and
 * calls the AVX-512 tiles (quant_avx512.c), and the portable C path on
 * canonical rows (any CPU; grouped convolutions). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/quant/quant.h"
#include "core/error.h"

/* Reduction block of the panel buffers (64 KB of float, 32 KB of bf16),
 * and the row count up to which weights are converted in registers instead
 * (too few rows to pay for writing a buffer). */
enum { KC_F32 = 256, KC_BF16 = 256, SMALL_M = 12 };

qnt_cpu qnt_cpu_detect(void) {
  qnt_cpu c = {false, false, false};
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  c.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl");
  c.vnni = c.avx512 && __builtin_cpu_supports("avx512vnni");
  c.bf16 = c.avx512 && __builtin_cpu_supports("avx512bf16");
#endif
  return c;
}

qnt_layout qnt_layout_for(qnt_wtype t, bool act, qnt_cpu cpu) {
  if (!act) return cpu.avx512 ? QNT_L_PANEL : QNT_L_ROWS;
  if (t == QNT_INT8) return cpu.vnni ? QNT_L_QUAD : QNT_L_ROWS;
  return cpu.bf16 ? QNT_L_PAIR : QNT_L_ROWS;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* A malloc size that is never 0. */
static size_t nz(int64_t n) { return n > 0 ? (size_t)n : 1; }

/* ---- portable path (canonical rows) ------------------------------------ */

static float dot(const float *a, const float *b, int64_t n) {
  float s[8] = {0};
  int64_t k = 0;
  for (; k + 8 <= n; k += 8)
    for (int i = 0; i < 8; i++)
      s[i] += a[k + i] * b[k + i];
  for (; k < n; k++)
    s[0] += a[k] * b[k];
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

/* Per-row dynamic quantization of x: int8 codes (q8) or e4m3-rounded
 * values (qf), with the row scale in sa. */
static void quant_rows_port(const qnt_mm *p, int8_t *q8, float *qf, float *sa) {
  int64_t K = p->w->K;
  float qmax = p->w->type == QNT_INT8 ? 127.0f : QNT_E4M3_MAX;
  for (int64_t m = 0; m < p->M; m++) {
    const float *x = p->x + m * p->ldx;
    float amax = 0;
    for (int64_t k = 0; k < K; k++)
      amax = fabsf(x[k]) > amax ? fabsf(x[k]) : amax;
    float s = amax > 0 && isfinite(amax) ? amax / qmax : 1.0f;
    sa[m] = s;
    for (int64_t k = 0; k < K; k++) {
      float v = x[k] / s;
      if (q8) {
        v = nearbyintf(v);
        q8[m * K + k] = (int8_t)(v < -127 ? -127 : v > 127 ? 127 : v);
      } else {
        qf[m * K + k] = qnt_e4m3_round(v);
      }
    }
  }
}

static ait_status matmul_port(const qnt_mm *p) {
  const qnt_weight *w = p->w;
  int64_t K = w->K, M = p->M;
  float *row = malloc(sizeof(float) * (size_t)K), *sa = NULL, *qf = NULL;
  int8_t *q8 = NULL;
  float lut[256];
  for (int i = 0; i < 256; i++)
    lut[i] = w->type == QNT_FP8 ? qnt_e4m3_decode((uint8_t)i) : (float)(int8_t)i;
  if (p->act) {
    sa = malloc(sizeof(float) * (size_t)(M ? M : 1));
    if (w->type == QNT_INT8)
      q8 = malloc(nz(M * K));
    else
      qf = malloc(sizeof(float) * nz(M * K));
  }
  if (!row || (p->act && (!sa || (!q8 && !qf)))) {
    free(row), free(sa), free(q8), free(qf);
    return ait_err(AIT_E_NOMEM, "out of memory in a quantized matmul");
  }
  if (p->act) quant_rows_port(p, q8, qf, sa);
  if (p->e && p->n0 != 0) {
    free(row), free(sa), free(q8), free(qf);
    return ait_err(AIT_E_INTERNAL, "quant: an epilogue needs the whole product");
  }
  for (int64_t j = 0; j < p->nn; j++) {
    int64_t n = p->n0 + j;
    const uint8_t *codes = w->codes + n * K;
    const float *sc = w->scale + n * w->G;
    const int8_t *zp = w->zero ? w->zero + n * w->G : NULL;
    float b = p->bias ? p->bias[j] : 0.0f;
    if (!p->act) { /* dequantize the row once, then plain dot products */
      for (int64_t k = 0; k < K; k++) {
        int64_t g = k / w->gsize;
        row[k] = sc[g] * (lut[codes[k]] - (zp ? (float)zp[g] : 0.0f));
      }
      for (int64_t m = 0; m < M; m++)
        p->y[m * p->ldy + j] = dot(p->x + m * p->ldx, row, K) + b;
      continue;
    }
    for (int64_t k = 0; k < K; k++)
      row[k] = lut[codes[k]];
    for (int64_t m = 0; m < M; m++) {
      float acc = 0;
      for (int64_t g = 0; g < w->G; g++) {
        int64_t k0 = g * w->gsize, k1 = min64(K, k0 + w->gsize);
        if (q8) {
          const int8_t *a = q8 + m * K;
          int32_t isum = 0, asum = 0;
          for (int64_t k = k0; k < k1; k++) {
            isum += (int32_t)a[k] * (int32_t)(int8_t)codes[k];
            asum += a[k];
          }
          if (zp) isum -= (int32_t)zp[g] * asum;
          acc += sc[g] * (float)isum;
        } else {
          acc += sc[g] * dot(qf + m * K + k0, row + k0, k1 - k0);
        }
      }
      p->y[m * p->ldy + j] = sa[m] * acc + b;
    }
  }
  if (p->e) nat_epilogue_apply(p->e, p->y, p->ldy, 0, M, 0, p->nn);
  free(row), free(sa), free(q8), free(qf);
  return AIT_OK;
}

/* ---- AVX-512 driver ------------------------------------------------------ */

typedef struct job {
  const qnt_mm *p;
  int64_t mchunk;
  const uint8_t *qa;  /* int8 x int8: u8 activations, row stride lda */
  const uint16_t *ba; /* fp8 x fp8: bf16 activations, row stride lda */
  int64_t lda;
  const float *sa;
  const int32_t *asum; /* [M][G] sums of activation codes (asymmetric weights) */
} job;

static void rows_of(const job *j, size_t mc, int64_t *m0, int64_t *m1) {
  *m0 = (int64_t)mc * j->mchunk;
  *m1 = min64(j->p->M, *m0 + j->mchunk);
}

static int panel_cols(const qnt_weight *w, int64_t p) { return (int)min64(64, w->N - 64 * p); }

/* The fused epilogue on a finished block, while it is in cache. */
static void finish(const qnt_mm *p, int64_t P, int64_t m0, int64_t m1, int ncols) {
  if (p->e) nat_epilogue_apply(p->e, p->y, p->ldy, m0, m1, 64 * P, 64 * P + ncols);
}

static void task_f32(void *ctx, size_t pi, size_t mc) {
  const job *j = ctx;
  const qnt_mm *p = j->p;
  const qnt_weight *w = p->w;
  int64_t P = (int64_t)pi, m0, m1, K = w->K;
  rows_of(j, mc, &m0, &m1);
  int ncols = panel_cols(w, P);
  if (m1 - m0 <= SMALL_M) {
    for (int64_t r = m0; r < m1; r += QNT_MR)
      qnt_x86_tile_wo((int)min64(QNT_MR, m1 - r), w, P, p->x + r * p->ldx, p->ldx,
                      p->y + r * p->ldy + 64 * P, p->ldy, ncols, p->bias ? p->bias + 64 * P : NULL);
    finish(p, P, m0, m1, ncols);
    return;
  }
  float buf[KC_F32 * QNT_PANEL] __attribute__((aligned(64)));
  for (int64_t k0 = 0; k0 < K; k0 += KC_F32) {
    int64_t kc = min64(KC_F32, K - k0);
    qnt_x86_dequant_panel(w, P, k0, kc, buf);
    const float *bias = k0 + kc >= K && p->bias ? p->bias + 64 * P : NULL;
    for (int64_t r = m0; r < m1; r += QNT_MR)
      qnt_x86_tile_f32((int)min64(QNT_MR, m1 - r), kc, p->x + r * p->ldx + k0, p->ldx, buf,
                       p->y + r * p->ldy + 64 * P, p->ldy, ncols, k0 > 0, bias);
  }
  finish(p, P, m0, m1, ncols);
}

static void task_vnni(void *ctx, size_t pi, size_t mc) {
  const job *j = ctx;
  const qnt_mm *p = j->p;
  const qnt_weight *w = p->w;
  int64_t P = (int64_t)pi, m0, m1, K4 = (w->K + 3) / 4;
  rows_of(j, mc, &m0, &m1);
  int ncols = panel_cols(w, P);
  for (int64_t g = 0; g < w->G; g++) {
    int64_t a4 = g * w->gsize / 4, b4 = (min64(w->K, (g + 1) * w->gsize) + 3) / 4;
    size_t par = (size_t)((P * w->G + g) * QNT_PANEL);
    const uint8_t *b = w->codes + (P * K4 + a4) * QNT_PANEL * 4;
    const float *bias = g == w->G - 1 && p->bias ? p->bias + 64 * P : NULL;
    for (int64_t r = m0; r < m1; r += QNT_MR)
      qnt_x86_tile_vnni((int)min64(QNT_MR, m1 - r), b4 - a4, j->qa + r * j->lda + a4 * 4, j->lda, b,
                        p->y + r * p->ldy + 64 * P, p->ldy, ncols, g > 0, j->sa + r,
                        w->pscale + par, w->pwsum + par, w->pzero ? w->pzero + par : NULL,
                        j->asum ? j->asum + r * w->G + g : NULL, w->G, bias);
  }
  finish(p, P, m0, m1, ncols);
}

static void task_bf16(void *ctx, size_t pi, size_t mc) {
  const job *j = ctx;
  const qnt_mm *p = j->p;
  const qnt_weight *w = p->w;
  int64_t P = (int64_t)pi, m0, m1, K = w->K;
  rows_of(j, mc, &m0, &m1);
  uint16_t buf[KC_BF16 * QNT_PANEL] __attribute__((aligned(64)));
  int ncols = panel_cols(w, P);
  /* few rows read the codes directly; more rows share a converted buffer */
  bool direct = m1 - m0 <= SMALL_M;
  for (int64_t k0 = 0; k0 < K;) {
    int64_t g = k0 / w->gsize, k1 = min64(K, (g + 1) * w->gsize);
    if (!direct) k1 = min64(k1, k0 + KC_BF16);
    const void *b = w->codes + (P * ((K + 1) / 2) + k0 / 2) * QNT_PANEL * 2;
    if (!direct) {
      qnt_x86_pair_panel(w, P, k0, k1 - k0, buf);
      b = buf;
    }
    const float *bias = k1 >= K && p->bias ? p->bias + 64 * P : NULL;
    const float *sw = w->pscale + (P * w->G + g) * QNT_PANEL;
    for (int64_t r = m0; r < m1; r += QNT_MR)
      qnt_x86_tile_bf16((int)min64(QNT_MR, m1 - r), direct, (k1 - k0 + 1) / 2,
                        j->ba + r * j->lda + k0, j->lda, b, p->y + r * p->ldy + 64 * P, p->ldy,
                        ncols, k0 > 0, j->sa + r, sw, bias);
    k0 = k1;
  }
  finish(p, P, m0, m1, ncols);
}

typedef void (*task_fn)(void *ctx, size_t panel, size_t chunk);

typedef struct task_run {
  task_fn fn;
  job *j;
  int64_t chunks;
} task_run;

static void pool_task(void *arg, int64_t t, int tid) {
  const task_run *tr = arg;
  tr->fn(tr->j, (size_t)(t / tr->chunks), (size_t)(t % tr->chunks));
}

static void run_tasks(nat_pool *pool, task_fn fn, job *j, int64_t P) {
  int64_t M = j->p->M;
  int64_t threads = pool ? nat_pool_threads(pool) : 1;
  /* whole panels per task when there are enough; else also split rows, in
   * chunks big enough to pay for dequantizing the panel again */
  int64_t chunks = 1;
  if (P < 2 * threads && M >= 8 * QNT_MR) {
    chunks = (2 * threads + P - 1) / P;
    chunks = min64(chunks, M / (4 * QNT_MR));
  }
  j->mchunk = (M + chunks - 1) / chunks;
  j->mchunk = (j->mchunk + QNT_MR - 1) / QNT_MR * QNT_MR;
  chunks = (M + j->mchunk - 1) / j->mchunk;
  if (M == 0) return;
  /* waking the workers costs microseconds: small products run here */
  double macs = (double)M * (double)j->p->w->K * (double)j->p->nn;
  if (pool && threads > 1 && P * chunks > 1 && macs >= NAT_PAR_MIN_MACS) {
    task_run tr = {fn, j, chunks};
    nat_pool_run(pool, P * chunks, pool_task, &tr);
    return;
  }
  for (int64_t a = 0; a < P; a++)
    for (int64_t b = 0; b < chunks; b++)
      fn(j, (size_t)a, (size_t)b);
}

ait_status qnt_matmul(const qnt_mm *p, nat_pool *pool) {
  const qnt_weight *w = p->w;
  if (w->layout == QNT_L_ROWS) return matmul_port(p);
  if (p->n0 != 0 || p->nn != w->N)
    return ait_err(AIT_E_INTERNAL, "quant: a packed weight runs whole");
  int64_t P = (w->N + QNT_PANEL - 1) / QNT_PANEL, M = p->M, K = w->K;
  job j = {p, 0, NULL, NULL, 0, NULL, NULL};
  if (w->layout == QNT_L_PANEL) {
    run_tasks(pool, task_f32, &j, P);
    return AIT_OK;
  }
  void *act = NULL;
  float *sa = malloc(sizeof(float) * (size_t)(M ? M : 1));
  int32_t *asum = NULL;
  if (w->layout == QNT_L_QUAD) {
    j.lda = (K + 3) / 4 * 4;
    act = malloc(nz(M * j.lda));
    if (w->asym) asum = malloc(sizeof(int32_t) * nz(M * w->G));
  } else {
    j.lda = (K + 1) / 2 * 2;
    act = malloc(sizeof(uint16_t) * nz(M * j.lda));
  }
  if (!sa || !act || (w->asym && w->layout == QNT_L_QUAD && !asum)) {
    free(sa), free(act), free(asum);
    return ait_err(AIT_E_NOMEM, "out of memory quantizing %lld activation rows", (long long)M);
  }
  j.sa = sa;
  j.asum = asum;
  if (w->layout == QNT_L_QUAD) {
    qnt_x86_quant_rows_u8(p->x, M, K, p->ldx, act, j.lda, sa, w, asum);
    j.qa = act;
    run_tasks(pool, task_vnni, &j, P);
  } else {
    qnt_x86_quant_rows_bf16(p->x, M, K, p->ldx, act, j.lda, sa);
    j.ba = act;
    run_tasks(pool, task_bf16, &j, P);
  }
  free(sa), free(act), free(asum);
  return AIT_OK;
}
