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

/* Whether environment variable `name` is set to something other than "" or "0". */
static bool env_on(const char *name) {
  const char *v = getenv(name);
  return v && *v && strcmp(v, "0") != 0;
}

/* AVX-VNNI: CPUID leaf 7 subleaf 1, EAX bit 4 (GCC 12's
 * __builtin_cpu_supports does not know it), with the OS saving ymm state
 * (which AVX2 being usable implies). */
static bool has_avxvnni(void) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static _Atomic int cpu = -1; /* cpuid traps in some VMs: once */
  int v = cpu;
  if (v < 0) {
    unsigned a = 0, b, c = 0, d;
    __asm__("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
    v = 0;
    if (a >= 7) {
      a = 7, c = 1;
      __asm__("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
      v = (a >> 4) & 1;
    }
    cpu = v;
  }
  return v && !env_on("AIT_QUANT_NO_AVXVNNI");
#else
  return false;
#endif
}

qnt_cpu qnt_cpu_detect(void) {
  qnt_cpu c = {false, false, false, false, false};
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  c.avx512 = nat_isa() >= NAT_ISA_AVX512;
  c.vnni = c.avx512 && __builtin_cpu_supports("avx512vnni");
  c.bf16 = c.avx512 && __builtin_cpu_supports("avx512bf16");
  /* F16C comes with every AVX2 CPU (Intel since Ivy Bridge, AMD since
   * Piledriver); clang's __builtin_cpu_supports does not know "f16c" */
  c.avx2 =
      nat_isa() >= NAT_ISA_AVX2 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  c.avxvnni = c.avx2 && has_avxvnni();
#endif
  return c;
}

qnt_layout qnt_layout_for(qnt_wtype t, bool act, qnt_cpu cpu) {
  bool floats = cpu.avx512 || cpu.avx2; /* some float tile runs */
  if (!act) return floats ? QNT_L_PANEL : QNT_L_ROWS;
  /* QUAD runs the zmm VNNI tile at the AVX-512 level, the AVX-VNNI one
   * below it (the driver goes by nat_isa()) */
  if (t == QNT_INT8 && cpu.avx512) return cpu.vnni ? QNT_L_QUAD : QNT_L_QUAD7;
  if (t == QNT_INT8) return cpu.avxvnni ? QNT_L_QUAD : cpu.avx2 ? QNT_L_QUAD7 : QNT_L_ROWS;
  /* fp8 x fp8 without AVX512-BF16: activations rounded to e4m3, float tiles */
  return cpu.bf16 ? QNT_L_PAIR : floats ? QNT_L_PANEL : QNT_L_ROWS;
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

float qnt_row_threshold(float amax, double sumsq, int64_t K, float outliers) {
  if (!(outliers > 0) || K <= 0) return amax;
  float rms = (float)sqrt(sumsq / (double)K), t = outliers * rms;
  /* a row whose max is within twice that loses little to absmax (a step
   * of at most 2 * outliers / 127 rms): only far outliers pay for the
   * correction (on MiniLM this keeps the accuracy and a third of the cost) */
  if (amax <= 2.0f * t) return amax;
  return t > 0 && t < amax ? t : amax;
}

/* Per-row dynamic quantization of x: int8 codes (q8) or e4m3-rounded
 * values (qf), with the row scale in sa; int8 rows with outliers record
 * them in oidx/ores/ocnt as the AVX-512 path does. */
static void quant_rows_port(const qnt_mm *p, int8_t *q8, float *qf, float *sa, int32_t *oidx,
                            float *ores, int32_t *ocnt) {
  int64_t K = p->w->K;
  float qmax = p->w->type == QNT_INT8 ? 127.0f : AIT_E4M3_MAX;
  for (int64_t m = 0; m < p->M; m++) {
    const float *x = p->x + m * p->ldx;
    float amax = 0;
    double sumsq = 0;
    for (int64_t k = 0; k < K; k++) {
      amax = fabsf(x[k]) > amax ? fabsf(x[k]) : amax;
      sumsq += (double)x[k] * x[k];
    }
    float t = amax;
    if (ocnt) {
      t = qnt_row_threshold(amax, sumsq, K, p->outliers);
      int64_t above = 0;
      for (int64_t k = 0; t < amax && k < K; k++)
        above += fabsf(x[k]) > t;
      if (above > QNT_MAX_OUTLIERS) t = amax;
    }
    float s = t > 0 && isfinite(t) ? t / qmax : 1.0f;
    sa[m] = s;
    if (ocnt) {
      int32_t n = 0;
      for (int64_t k = 0; t < amax && k < K; k++)
        if (fabsf(x[k]) > t) {
          oidx[m * QNT_MAX_OUTLIERS + n] = (int32_t)k;
          ores[m * QNT_MAX_OUTLIERS + n] = x[k] - copysignf(127.0f * s, x[k]);
          n++;
        }
      ocnt[m] = n;
    }
    for (int64_t k = 0; k < K; k++) {
      if (q8)
        q8[m * K + k] = ait_int8_encode(x[k], s, 0, -127.0f, 127.0f);
      else
        qf[m * K + k] = ait_e4m3_round(x[k] / s);
    }
  }
}

static ait_status matmul_port(const qnt_mm *p) {
  const qnt_weight *w = p->w;
  int64_t K = w->K, M = p->M;
  float *row = malloc(sizeof(float) * (size_t)K), *sa = NULL, *qf = NULL, *ores = NULL;
  int8_t *q8 = NULL;
  int32_t *oidx = NULL, *ocnt = NULL;
  bool outl = p->act && w->type == QNT_INT8 && p->outliers > 0;
  float lut[256];
  for (int i = 0; i < 256; i++)
    lut[i] = w->type == QNT_FP8 ? ait_e4m3_decode((uint8_t)i) : (float)(int8_t)i;
  if (p->act) {
    sa = malloc(sizeof(float) * (size_t)(M ? M : 1));
    if (w->type == QNT_INT8)
      q8 = malloc(nz(M * K));
    else
      qf = malloc(sizeof(float) * nz(M * K));
  }
  if (outl) {
    size_t no = nz(M * QNT_MAX_OUTLIERS);
    oidx = malloc(sizeof(int32_t) * no);
    ores = malloc(sizeof(float) * no);
    ocnt = malloc(sizeof(int32_t) * nz(M));
  }
  ait_status st = AIT_OK;
  if (!row || (p->act && (!sa || (!q8 && !qf))) || (outl && (!oidx || !ores || !ocnt)))
    st = ait_err(AIT_E_NOMEM, "out of memory in a quantized matmul");
  else if (p->e && p->n0 != 0)
    st = ait_err(AIT_E_INTERNAL, "quant: an epilogue needs the whole product");
  if (st) {
    free(row), free(sa), free(q8), free(qf), free(oidx), free(ores), free(ocnt);
    return st;
  }
  if (p->act) quant_rows_port(p, q8, qf, sa, oidx, ores, ocnt);
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
      float fix = 0; /* outliers: their residual times the weight */
      for (int32_t o = 0; ocnt && o < ocnt[m]; o++) {
        int64_t k = oidx[m * QNT_MAX_OUTLIERS + o], g = k / w->gsize;
        fix += ores[m * QNT_MAX_OUTLIERS + o] * sc[g] *
               ((float)(int8_t)codes[k] - (zp ? (float)zp[g] : 0.0f));
      }
      p->y[m * p->ldy + j] = sa[m] * acc + b + fix;
    }
  }
  if (p->e) nat_epilogue_apply(p->e, p->y, p->ldy, 0, M, 0, p->nn);
  free(row), free(sa), free(q8), free(qf), free(oidx), free(ores), free(ocnt);
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
  /* int8 activation outliers per row (QNT_MAX_OUTLIERS a row), or NULL:
   * channel, its slot in wdq (-1: none left), what the codes miss */
  int32_t *oidx, *oslot, *ocnt;
  float *ores;
  float *wdq;     /* [QNT_MAX_SLOTS][N]: the outlier channels' weights in float */
  bool unslotted; /* some outlier found no slot (more than QNT_MAX_SLOTS channels) */
  bool z512;      /* the AVX-512 tiles (the run's level), else the AVX2 ones */
  bool a7;        /* QUAD7 on 7-bit rows: lo[M] their offsets, wtot[P * 64] */
  float *lo, *wtot;
  const float *xa; /* float tiles: their activations (x, or x rounded to e4m3) */
  int64_t ldxa;
} job;

/* The outlier correction of the tile family the job runs. */
static void outlier_fix(const job *j, const uint8_t *b, int k4, float r, const float *sw,
                        const int8_t *zw, float *y, int ncols) {
  if (j->z512)
    qnt_x86_outlier_fix(b, k4, r, sw, zw, y, ncols);
  else
    qnt_avx2_outlier_fix(b, k4, r, sw, zw, y, ncols);
}

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
  const float *x = j->xa;
  int64_t ldx = j->ldxa;
  if (m1 - m0 <= SMALL_M) {
    for (int64_t r = m0; r < m1; r += QNT_MR)
      (j->z512 ? qnt_x86_tile_wo : qnt_avx2_tile_wo)((int)min64(QNT_MR, m1 - r), w, P, x + r * ldx,
                                                     ldx, p->y + r * p->ldy + 64 * P, p->ldy, ncols,
                                                     p->bias ? p->bias + 64 * P : NULL);
    finish(p, P, m0, m1, ncols);
    return;
  }
  float buf[KC_F32 * QNT_PANEL] __attribute__((aligned(64)));
  for (int64_t k0 = 0; k0 < K; k0 += KC_F32) {
    int64_t kc = min64(KC_F32, K - k0);
    (j->z512 ? qnt_x86_dequant_panel : qnt_avx2_dequant_panel)(w, P, k0, kc, buf);
    const float *bias = k0 + kc >= K && p->bias ? p->bias + 64 * P : NULL;
    for (int64_t r = m0; r < m1; r += QNT_MR)
      (j->z512 ? qnt_x86_tile_f32
               : qnt_avx2_tile_f32)((int)min64(QNT_MR, m1 - r), kc, x + r * ldx + k0, ldx, buf,
                                    p->y + r * p->ldy + 64 * P, p->ldy, ncols, k0 > 0, bias);
  }
  finish(p, P, m0, m1, ncols);
}

/* Row tile by row tile. Outlier corrections, bias and residual are added
 * in registers before the tile is stored, and the rest of the epilogue (the
 * activation) runs on the block right after, while it is in L1. As passes
 * over the whole chunk afterwards, the corrections and the residual waited
 * on cache misses and on masked stores that do not forward to loads. */
static void task_vnni(void *ctx, size_t pi, size_t mc) {
  const job *j = ctx;
  const qnt_mm *p = j->p;
  const qnt_weight *w = p->w;
  int64_t P = (int64_t)pi, m0, m1, K4 = (w->K + 3) / 4;
  rows_of(j, mc, &m0, &m1);
  int ncols = panel_cols(w, P);
  /* the residual goes in with the tile; what is left of the epilogue after */
  const float *z = p->e ? p->e->z : NULL;
  int64_t ldz = p->e ? p->e->ldz : 0;
  nat_epilogue rest = p->e ? *p->e : (nat_epilogue){0};
  rest.z = NULL;
  bool more = p->e && (rest.row_bias || rest.col_bias || rest.zb || rest.act.kind != AIT_ACT_NONE);
  /* AVX-VNNI on few rows: the next panel's codes prefetched meanwhile */
  const uint8_t *vpf = NULL, *vpf_end = NULL;
  if (!j->z512 && w->layout == QNT_L_QUAD && m1 - m0 <= 16 && 64 * (P + 1) < w->N) {
    vpf = w->codes + (P + 1) * K4 * QNT_PANEL * 4;
    vpf_end = vpf + K4 * QNT_PANEL * 4;
  }
  for (int64_t r = m0, mr; r < m1; r += mr) {
    mr = min64(QNT_MR, m1 - r);
    /* QUAD7, 6 rows: one call walks all groups (their sums stay in
     * registers; a call per group ran short loops), for up to QNT_T7 row
     * tiles, 16 channels at a time */
    bool whole = w->layout == QNT_L_QUAD7 && mr == 6 && !j->z512;
    int tiles = whole ? (int)min64(QNT_T7, (m1 - r) / 6) : 1;
    if (whole) mr = 6 * tiles;
    for (int64_t g = 0; g < (whole ? 1 : w->G); g++) {
      int64_t a4 = g * w->gsize / 4, b4 = (min64(w->K, (g + 1) * w->gsize) + 3) / 4;
      size_t par = (size_t)((P * w->G + g) * QNT_PANEL);
      bool last = g == w->G - 1; /* bias and outliers come with the last group */
      qnt_vnni_post post = {j->sa + r,
                            w->pscale + par,
                            w->pwsum + par,
                            w->pzero ? w->pzero + par : NULL,
                            j->asum ? j->asum + r * w->G + g : NULL,
                            w->G,
                            last && p->bias ? p->bias + 64 * P : NULL,
                            last && z ? z + r * ldz + 64 * P : NULL,
                            ldz,
                            last && j->ocnt ? j->ocnt + r : NULL,
                            j->oslot ? j->oslot + r * QNT_MAX_OUTLIERS : NULL,
                            j->ores ? j->ores + r * QNT_MAX_OUTLIERS : NULL,
                            j->wdq ? j->wdq + 64 * P : NULL,
                            w->N,
                            j->a7,
                            last && j->a7 ? j->lo + r : NULL,
                            j->a7 ? j->wtot + 64 * P : NULL};
      const uint8_t *a = j->qa + r * j->lda + a4 * 4, *b = w->codes + (P * K4 + a4) * QNT_PANEL * 4;
      float *y = p->y + r * p->ldy + 64 * P;
      if (whole) {
        post.bias = p->bias ? p->bias + 64 * P : NULL;
        post.z = z ? z + r * ldz + 64 * P : NULL;
        post.ocnt = j->ocnt ? j->ocnt + r : NULL;
        post.lo = j->a7 ? j->lo + r : NULL;
        /* the task's last whole strip prefetches the next panel's codes */
        bool pre = m1 - r - mr < 6 && 64 * (P + 1) < w->N;
        const uint8_t *pf = pre ? w->codes + (P + 1) * K4 * QNT_PANEL * 4 : NULL;
        qnt_avx2_tile_madd6(w, P, tiles, j->qa + r * j->lda, j->lda, y, p->ldy, ncols, &post, pf,
                            pre ? K4 * 4 : 0);
      } else if (j->z512)
        qnt_x86_tile_vnni((int)mr, b4 - a4, a, j->lda, b, y, p->ldy, ncols, g > 0, &post);
      else
        qnt_avx2_tile_u8((int)mr, w->layout == QNT_L_QUAD, b4 - a4, a, j->lda, b, y, p->ldy, ncols,
                         g > 0, &post, vpf ? &vpf : NULL, vpf_end);
    }
    for (int64_t m = r; j->unslotted && m < r + mr; m++) { /* outliers without a float row */
      const int32_t *slot = j->oslot + m * QNT_MAX_OUTLIERS;
      float *y = p->y + m * p->ldy + 64 * P;
      for (int32_t o = 0; o < j->ocnt[m]; o++) {
        if (slot[o] >= 0) continue;
        int64_t k = j->oidx[m * QNT_MAX_OUTLIERS + o], g = k / w->gsize;
        size_t par = (size_t)((P * w->G + g) * QNT_PANEL);
        outlier_fix(j, w->codes + (P * K4 + k / 4) * QNT_PANEL * 4, (int)(k % 4),
                    j->ores[m * QNT_MAX_OUTLIERS + o], w->pscale + par,
                    w->pzero ? w->pzero + par : NULL, y, ncols);
      }
    }
    if (more) nat_epilogue_apply(&rest, p->y, p->ldy, r, r + mr, 64 * P, 64 * P + ncols);
  }
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
  /* whole panels per task when there are enough (4 a thread: a thread that
   * starts late, or is descheduled, leaves less of a tail); else also split
   * rows, in chunks big enough to pay for dequantizing the panel again */
  int64_t chunks = 1;
  if (P < 4 * threads && M >= 8 * QNT_MR) {
    chunks = (4 * threads + P - 1) / P;
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

typedef struct rows_run {
  job *j;
  uint8_t *q;
  float *sa;
  int32_t *asum;
  int64_t chunk;
  bool a7;        /* try 7-bit rows (qnt_avx2_quant_rows_a7) */
  _Atomic int no; /* some row of an a7 try did not qualify */
} rows_run;

static void rows_task(void *arg, int64_t t, int tid) {
  rows_run *rr = arg;
  const job *j = rr->j;
  const qnt_mm *p = j->p;
  int64_t m0 = t * rr->chunk, m1 = min64(p->M, m0 + rr->chunk), G = p->w->G;
  if (rr->a7) {
    if (!rr->no &&
        !qnt_avx2_quant_rows_a7(
            p->x + m0 * p->ldx, m1 - m0, p->w->K, p->ldx, rr->q + m0 * j->lda, j->lda, rr->sa + m0,
            j->lo + m0, p->outliers, j->oidx ? j->oidx + m0 * QNT_MAX_OUTLIERS : NULL,
            j->ores ? j->ores + m0 * QNT_MAX_OUTLIERS : NULL, j->ocnt ? j->ocnt + m0 : NULL))
      rr->no = 1;
    return;
  }
  (j->z512 ? qnt_x86_quant_rows_u8 : qnt_avx2_quant_rows_u8)(
      p->x + m0 * p->ldx, m1 - m0, p->w->K, p->ldx, rr->q + m0 * j->lda, j->lda, rr->sa + m0, p->w,
      rr->asum ? rr->asum + m0 * G : NULL, p->outliers,
      j->oidx ? j->oidx + m0 * QNT_MAX_OUTLIERS : NULL,
      j->ores ? j->ores + m0 * QNT_MAX_OUTLIERS : NULL, j->ocnt ? j->ocnt + m0 : NULL);
}

/* The int8 activation rows, split over the pool when there are many;
 * with a7, 7-bit rows are tried first (true: taken). */
static bool quant_rows(nat_pool *pool, job *j, float *sa, int32_t *asum, bool a7) {
  int64_t M = j->p->M, threads = pool ? nat_pool_threads(pool) : 1;
  rows_run rr = {j, (uint8_t *)j->qa, sa, asum, M, a7, 0};
  bool par = threads > 1 && M * j->p->w->K >= 65536;
  if (par) rr.chunk = (M + 2 * threads - 1) / (2 * threads);
  for (;;) {
    if (par)
      nat_pool_run(pool, (M + rr.chunk - 1) / rr.chunk, rows_task, &rr);
    else if (M > 0)
      rows_task(&rr, 0, 0);
    if (!rr.a7 || !rr.no) return rr.a7;
    rr.a7 = false; /* a row two-sided: the 8-bit codes, from the start */
  }
}

/* Each channel's dequantized weight sum (QUAD7: scale times code sum, over
 * the groups), 64 a panel, what the 7-bit rows' offsets multiply. */
static void weight_sums(const qnt_weight *w, float *wtot) {
  int64_t P = (w->N + QNT_PANEL - 1) / QNT_PANEL;
  for (int64_t p = 0; p < P; p++)
    for (int c = 0; c < QNT_PANEL; c++) {
      float t = 0;
      for (int64_t g = 0; g < w->G; g++) {
        size_t i = (size_t)((p * w->G + g) * QNT_PANEL + c);
        t += w->pscale[i] * (float)w->pwsum[i];
      }
      wtot[p * QNT_PANEL + c] = t;
    }
}

/* Outliers fall on a few channels (those a LayerNorm scales up), again and
 * again from row to row: give each distinct channel (up to QNT_MAX_SLOTS) a
 * float copy of its weights, so a correction is a plain multiply-add. map
 * has K entries of scratch. */
static void outlier_slots(job *j, int32_t *map) {
  const qnt_weight *w = j->p->w;
  int slots = 0;
  for (int64_t k = 0; k < w->K; k++)
    map[k] = -1;
  for (int64_t m = 0; m < j->p->M; m++)
    for (int32_t o = 0; o < j->ocnt[m]; o++) {
      int32_t k = j->oidx[m * QNT_MAX_OUTLIERS + o];
      if (map[k] < 0 && slots < QNT_MAX_SLOTS) { /* column k of every panel, dequantized */
        float *row = j->wdq + (int64_t)slots * w->N;
        int64_t K4 = (w->K + 3) / 4, g = k / w->gsize;
        memset(row, 0, sizeof(float) * (size_t)w->N);
        for (int64_t P = 0; P * QNT_PANEL < w->N; P++) {
          size_t par = (size_t)((P * w->G + g) * QNT_PANEL);
          outlier_fix(j, w->codes + (P * K4 + k / 4) * QNT_PANEL * 4, (int)(k % 4), 1.0f,
                      w->pscale + par, w->pzero ? w->pzero + par : NULL, row + P * QNT_PANEL,
                      panel_cols(w, P));
        }
        map[k] = slots++;
      }
      j->oslot[m * QNT_MAX_OUTLIERS + o] = map[k];
      j->unslotted |= map[k] < 0;
    }
}

/* Bytes of n elements of size sz, rounded up to a cache line. */
static size_t line(int64_t n, size_t sz) { return ((size_t)(n > 0 ? n : 1) * sz + 63) / 64 * 64; }

ait_status qnt_matmul(const qnt_mm *p, nat_pool *pool) {
  const qnt_weight *w = p->w;
  if (w->layout == QNT_L_ROWS) return matmul_port(p);
  if (p->n0 != 0 || p->nn != w->N)
    return ait_err(AIT_E_INTERNAL, "quant: a packed weight runs whole");
  int64_t P = (w->N + QNT_PANEL - 1) / QNT_PANEL, M = p->M, K = w->K;
  job j = {.p = p, .xa = p->x, .ldxa = p->ldx};
  /* the tiles the weight was packed for (QUAD7 has only the AVX2 one) */
  j.z512 = !w->ymm && w->layout != QNT_L_QUAD7;
  if (w->layout == QNT_L_PANEL) {
    float *heap = NULL, *xr = NULL;
    if (p->act) { /* fp8 x fp8 without AVX512-BF16: e4m3 activations in float */
      int64_t ld = (K + 15) / 16 * 16;
      size_t bytes = line(M * ld, sizeof(float));
      xr = p->r ? nat_scratch(p->r, (int64_t)bytes) : NULL;
      if (!xr && !(xr = heap = aligned_alloc(64, bytes)))
        return ait_err(AIT_E_NOMEM, "out of memory quantizing %lld activation rows", (long long)M);
      qnt_avx2_quant_rows_f8(p->x, M, K, p->ldx, xr, ld);
      j.xa = xr, j.ldxa = ld;
    }
    run_tasks(pool, task_f32, &j, P);
    free(heap);
    return AIT_OK;
  }
  /* the quantized rows and their side tables (the activation part), and
   * the outlier slots of this weight: the executor's scratch when there is
   * one (no fresh pages per call), else the heap; the activation part in
   * the shared buffer when the product has one */
  bool quad = w->layout == QNT_L_QUAD || w->layout == QNT_L_QUAD7;
  bool outl = quad && p->outliers > 0;
  j.lda = quad ? (K + 3) / 4 * 4 : (K + 1) / 2 * 2;
  size_t s_sa = line(M, sizeof(float)), s_act = line(M * j.lda, quad ? 1 : sizeof(uint16_t));
  size_t s_asum = quad && w->asym ? line(M * w->G, sizeof(int32_t)) : 0;
  size_t s_out = outl ? line(M * QNT_MAX_OUTLIERS, sizeof(int32_t)) : 0;
  size_t s_cnt = outl ? line(M, sizeof(int32_t)) : 0;
  size_t s_map = outl ? line(K, sizeof(int32_t)) : 0;
  size_t s_wdq = outl ? line(QNT_MAX_SLOTS * w->N, sizeof(float)) : 0;
  /* QUAD7 on the AVX2 tiles: 7-bit rows unless AIT_QUANT_NO_A7 (or a row is not finite) */
  bool try7 = w->layout == QNT_L_QUAD7 && !j.z512 && !w->asym;
  size_t s_lo = try7 ? line(M, sizeof(float)) : 0, s_wt = try7 ? line(P * QNT_PANEL, 4) : 0;
  size_t a_total = s_sa + s_act + s_asum + 2 * s_out + s_cnt + s_lo;
  size_t w_total = s_out + s_map + s_wdq + s_wt;
  qnt_actbuf *sh = quad ? p->share : NULL;
  bool reuse = sh && sh->run == p->run && sh->x == p->x && sh->M == M;
  if (sh && !reuse && sh->cap < a_total) {
    char *m = aligned_alloc(64, a_total);
    if (!m)
      return ait_err(AIT_E_NOMEM, "out of memory quantizing %lld activation rows", (long long)M);
    free(sh->mem);
    sh->mem = m;
    sh->cap = a_total;
  }
  size_t total = (sh ? 0 : a_total) + w_total;
  char *heap = NULL, *base = p->r ? nat_scratch(p->r, (int64_t)total) : NULL;
  if (!base && !(base = heap = aligned_alloc(64, total)))
    return ait_err(AIT_E_NOMEM, "out of memory quantizing %lld activation rows", (long long)M);
  char *abase = sh ? sh->mem : base, *wbase = sh ? base : base + a_total;
  float *sa = (float *)abase;
  void *act = abase + s_sa;
  int32_t *asum = s_asum ? (int32_t *)(abase + s_sa + s_act) : NULL;
  if (outl) {
    char *o = abase + s_sa + s_act + s_asum;
    j.oidx = (int32_t *)o;
    j.ores = (float *)(o + s_out);
    j.ocnt = (int32_t *)(o + 2 * s_out);
    j.oslot = (int32_t *)wbase;
    j.wdq = (float *)(wbase + s_out + s_map);
  }
  j.sa = sa;
  j.asum = asum;
  if (try7) j.lo = (float *)(abase + s_sa + s_act + s_asum + 2 * s_out + s_cnt);
  if (quad) {
    j.qa = act;
    if (!reuse) j.a7 = quant_rows(pool, &j, sa, asum, try7 && !env_on("AIT_QUANT_NO_A7"));
    if (sh && reuse) j.a7 = sh->a7;
    if (sh && !reuse) sh->run = p->run, sh->x = p->x, sh->M = M, sh->a7 = j.a7;
    if (j.a7) weight_sums(w, j.wtot = (float *)(wbase + s_out + s_map + s_wdq));
    if (outl) outlier_slots(&j, (int32_t *)(wbase + s_out));
    run_tasks(pool, task_vnni, &j, P);
  } else {
    qnt_x86_quant_rows_bf16(p->x, M, K, p->ldx, act, j.lda, sa);
    j.ba = act;
    run_tasks(pool, task_bf16, &j, P);
  }
  free(heap);
  return AIT_OK;
}
