/* GEMM for the native backend: OpenBLAS SGEMM (single-threaded) on blocks of
 * C that the pool runs in parallel, each block finished by the fused
 * epilogue (bias, residual, activation) while it is still in cache. Gemm,
 * MatMul and their fused forms are built on it. */
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/native/native.h"
#include "backends/native/native_mm.h"

/* ---- epilogue ------------------------------------------------------------ */

NAT_CLONES void nat_epilogue_apply(const nat_epilogue *e, float *c, int64_t ldc, int64_t i0,
                                   int64_t i1, int64_t j0, int64_t j1) {
  if (!e) return;
  int64_t n = j1 - j0;
  for (int64_t i = i0; i < i1; i++) {
    float *row = c + i * ldc + j0;
    if (e->row_bias) {
      float b = e->row_bias[i];
      for (int64_t j = 0; j < n; j++)
        row[j] += b;
    }
    if (e->col_bias) {
      const float *b = e->col_bias + j0;
      for (int64_t j = 0; j < n; j++)
        row[j] += b[j];
    }
    if (e->z) {
      const float *z = e->z + i * e->ldz + j0;
      for (int64_t j = 0; j < n; j++)
        row[j] += z[j];
    }
    if (e->zb) {
      const float *z = e->zb + i * e->zb_rs + j0 * e->zb_cs;
      if (e->zb_cs == 1)
        for (int64_t j = 0; j < n; j++)
          row[j] += z[j];
      else if (e->zb_cs == 0)
        for (int64_t j = 0; j < n; j++)
          row[j] += z[0];
      else
        for (int64_t j = 0; j < n; j++)
          row[j] += z[j * e->zb_cs];
    }
    nat_act_f32(&e->act, row, n);
  }
}

/* ---- GEMV (one row of A) ---------------------------------------------------- */

/* A single row of A makes the product a matrix-vector one: memory-bound on
 * B, which SGEMM's packing only slows down. Own loops over column chunks,
 * parallel on the pool (each chunk of B is read by one thread). */

/* 8 floats (GCC vector extension, 4-byte aligned loads); macros rather
 * than functions, as vector arguments would change the ABI of the baseline
 * clone */
typedef float nat_v8 __attribute__((vector_size(32), aligned(4), may_alias));
#define ld8(p) (*(const nat_v8 *)(const void *)(p))
#define hsum8(v) ((((v)[0] + (v)[4]) + ((v)[1] + (v)[5])) + (((v)[2] + (v)[6]) + ((v)[3] + (v)[7])))

/* c[j] = alpha * dot(a, B row j) for j in [j0, j1): B is [N, K] (transB). */
NAT_CLONES static void gemv_rows(const float *a, const float *B, int64_t ldb, int64_t K,
                                 float alpha, float *c, int64_t j0, int64_t j1) {
  int64_t j = j0, K8 = K & ~(int64_t)7;
  for (; j + 4 <= j1; j += 4) {
    const float *w0 = B + j * ldb, *w1 = w0 + ldb, *w2 = w1 + ldb, *w3 = w2 + ldb;
    nat_v8 s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
    for (int64_t k = 0; k < K8; k += 8) {
      nat_v8 x = ld8(a + k);
      s0 += ld8(w0 + k) * x;
      s1 += ld8(w1 + k) * x;
      s2 += ld8(w2 + k) * x;
      s3 += ld8(w3 + k) * x;
    }
    float t0 = hsum8(s0), t1 = hsum8(s1), t2 = hsum8(s2), t3 = hsum8(s3);
    for (int64_t k = K8; k < K; k++) {
      t0 += w0[k] * a[k], t1 += w1[k] * a[k], t2 += w2[k] * a[k], t3 += w3[k] * a[k];
    }
    c[j] = alpha * t0, c[j + 1] = alpha * t1, c[j + 2] = alpha * t2, c[j + 3] = alpha * t3;
  }
  for (; j < j1; j++) {
    const float *w = B + j * ldb;
    nat_v8 s = {0};
    for (int64_t k = 0; k < K8; k += 8)
      s += ld8(w + k) * ld8(a + k);
    float t = hsum8(s);
    for (int64_t k = K8; k < K; k++)
      t += w[k] * a[k];
    c[j] = alpha * t;
  }
}

/* c[j0..j1) = alpha * a . B[:, j0..j1): B is [K, N]. */
NAT_CLONES static void gemv_cols(const float *a, const float *B, int64_t ldb, int64_t K,
                                 float alpha, float *c, int64_t j0, int64_t j1) {
  int64_t j = j0;
  for (; j + 32 <= j1; j += 32) {
    nat_v8 s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
    for (int64_t k = 0; k < K; k++) {
      const float *w = B + k * ldb + j;
      nat_v8 x = {a[k], a[k], a[k], a[k], a[k], a[k], a[k], a[k]};
      s0 += ld8(w) * x;
      s1 += ld8(w + 8) * x;
      s2 += ld8(w + 16) * x;
      s3 += ld8(w + 24) * x;
    }
    for (int l = 0; l < 8; l++) {
      c[j + l] = alpha * s0[l], c[j + 8 + l] = alpha * s1[l];
      c[j + 16 + l] = alpha * s2[l], c[j + 24 + l] = alpha * s3[l];
    }
  }
  if (j < j1) {
    for (int64_t q = j; q < j1; q++)
      c[q] = 0.0f;
    for (int64_t k = 0; k < K; k++)
      for (int64_t q = j; q < j1; q++)
        c[q] += a[k] * B[k * ldb + q];
    for (int64_t q = j; q < j1; q++)
      c[q] *= alpha;
  }
}

/* ---- few rows of A (2..8) ------------------------------------------------ */

/* A batch of a few rows is still memory-bound on B, and SGEMM packs all of
 * B for each call: for every column, read B once and multiply it with all
 * the rows of A (which stay in L1), 8 accumulators at most. */
#define NAT_FEW_ROWS 8

/* transB: c[i][j] = alpha * dot(A row i, B row j), rows i < MR (chunking
 * the reduction so A's chunk stays in L1 measured no faster) */
#define FEW_T(MR)                                                                                  \
  static inline __attribute__((always_inline)) void few_t##MR(                                     \
      const float *A, int64_t lda, const float *B, int64_t ldb, int64_t K, float alpha, float *C,  \
      int64_t ldc, int64_t j0, int64_t j1) {                                                       \
    int64_t K8 = K & ~(int64_t)7;                                                                  \
    for (int64_t j = j0; j < j1; j++) {                                                            \
      const float *w = B + j * ldb;                                                                \
      nat_v8 s[MR];                                                                                \
      _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++) s[i] = (nat_v8){0};                     \
      for (int64_t k = 0; k < K8; k += 8) {                                                        \
        nat_v8 x = ld8(w + k);                                                                     \
        _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++) s[i] += ld8(A + i * lda + k) * x;     \
      }                                                                                            \
      _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++) {                                       \
        float t = hsum8(s[i]);                                                                     \
        for (int64_t k = K8; k < K; k++)                                                           \
          t += A[i * lda + k] * w[k];                                                              \
        C[i * ldc + j] = alpha * t;                                                                \
      }                                                                                            \
    }                                                                                              \
  }
/* B is [K, N]: c[i][j..j+8) += A[i][k] * B[k][j..j+8) over k, rows i < MR */
#define FEW_N(MR)                                                                                  \
  static inline __attribute__((always_inline)) void few_n##MR(                                     \
      const float *A, int64_t lda, const float *B, int64_t ldb, int64_t K, float alpha, float *C,  \
      int64_t ldc, int64_t j0, int64_t j1) {                                                       \
    int64_t j = j0;                                                                                \
    for (; j + 8 <= j1; j += 8) {                                                                  \
      nat_v8 s[MR];                                                                                \
      _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++) s[i] = (nat_v8){0};                     \
      for (int64_t k = 0; k < K; k++) {                                                            \
        nat_v8 b = ld8(B + k * ldb + j);                                                           \
        _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++) s[i] += A[i * lda + k] * b;           \
      }                                                                                            \
      _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++) for (int l = 0; l < 8; l++)             \
          C[i * ldc + j + l] = alpha * s[i][l];                                                    \
    }                                                                                              \
    for (; j < j1; j++)                                                                            \
      for (int i = 0; i < MR; i++) {                                                               \
        float t = 0;                                                                               \
        for (int64_t k = 0; k < K; k++)                                                            \
          t += A[i * lda + k] * B[k * ldb + j];                                                    \
        C[i * ldc + j] = alpha * t;                                                                \
      }                                                                                            \
  }
FEW_T(2)
FEW_T(3)
FEW_T(4)
FEW_T(5)
FEW_T(6)
FEW_T(7)
FEW_T(8)
FEW_N(2)
FEW_N(3)
FEW_N(4)
FEW_N(5)
FEW_N(6)
FEW_N(7)
FEW_N(8)
#undef FEW_T
#undef FEW_N

NAT_CLONES static void few_rows(bool tb, int64_t M, const float *A, int64_t lda, const float *B,
                                int64_t ldb, int64_t K, float alpha, float *C, int64_t ldc,
                                int64_t j0, int64_t j1) {
#define FEW_CASE(m)                                                                                \
  case m:                                                                                          \
    if (tb)                                                                                        \
      few_t##m(A, lda, B, ldb, K, alpha, C, ldc, j0, j1);                                          \
    else                                                                                           \
      few_n##m(A, lda, B, ldb, K, alpha, C, ldc, j0, j1);                                          \
    return;
  switch (M) {
    FEW_CASE(2)
    FEW_CASE(3)
    FEW_CASE(4)
    FEW_CASE(5)
    FEW_CASE(6)
    FEW_CASE(7)
    FEW_CASE(8)
  default: return;
  }
#undef FEW_CASE
}

typedef struct gemv_job {
  bool tb;
  int64_t N, K, step, ldb;
  float alpha;
  const float *a, *B;
  float *c;
  const nat_epilogue *e;
  int64_t M, lda, ldc; /* rows of A (1: a GEMV) */
} gemv_job;

static void gemv_task(void *arg, int64_t t, int tid) {
  const gemv_job *j = arg;
  int64_t j0 = t * j->step, j1 = j0 + j->step < j->N ? j0 + j->step : j->N;
  if (j->M > 1)
    few_rows(j->tb, j->M, j->a, j->lda, j->B, j->ldb, j->K, j->alpha, j->c, j->ldc, j0, j1);
  else if (j->tb)
    gemv_rows(j->a, j->B, j->ldb, j->K, j->alpha, j->c, j0, j1);
  else
    gemv_cols(j->a, j->B, j->ldb, j->K, j->alpha, j->c, j0, j1);
  nat_epilogue_apply(j->e, j->c, j->ldc, 0, j->M, j0, j1);
}

/* Multiply-adds (= floats of B read) above which a GEMV is split over the
 * pool: it is memory-bound, so two cores pay off much earlier than for a
 * GEMM, once the hand-off (~2 us) is small against reading B. */
#define NAT_GEMV_PAR_MIN 131072.0

/* c = alpha * a . B for M (1..NAT_FEW_ROWS) rows of a, row strides lda and
 * ldc. */
static void gemv(nat_run *r, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *a,
                 int64_t lda, const float *B, int64_t ldb, float *c, int64_t ldc,
                 const nat_epilogue *e) {
  gemv_job j = {tb, N, K, N, ldb, alpha, a, B, c, e, M, lda, ldc};
  int threads = r ? nat_run_threads(r) : 1;
  if (threads <= 1 || (double)N * (double)K < NAT_GEMV_PAR_MIN || N < 64) {
    gemv_task(&j, 0, 0);
    return;
  }
  /* about 4 chunks per thread (a late worker leaves its share to the
   * others), in whole cache lines of C and groups of 4 rows of B */
  int64_t step = (N + threads * 4 - 1) / (threads * 4);
  step = (step + 15) / 16 * 16;
  if (step < 32) step = 32;
  j.step = step;
  nat_pool_run(nat_run_pool(r), (N + step - 1) / step, gemv_task, &j);
}

/* ---- register-tile GEMM (AVX-512, AVX2) ------------------------------------ */

/* B [K, N] packed for the pointwise-convolution tiles (native_nhwc*.c):
 * column blocks of bw (zero-padded), each K x bw contiguous, so a tile
 * reads its weights as one stream instead of one row per page (a 1024-wide
 * B: every step of K in another page). B is input `input` of the running
 * node, kept in its pack slot `slot`; NULL when it is not a constant or
 * memory runs short (B is then read as stored). */
const float *nat_pack_tiles(nat_run *r, int slot, int input, const float *B, int64_t K, int64_t N,
                            int64_t bw) {
  if (!nat_input_is_const(r, input)) return NULL;
  int64_t nb = (N + bw - 1) / bw, key[4] = {K, N, bw, (int64_t)(intptr_t)B};
  bool fresh;
  float *p = nat_node_pack(r, slot, key, (size_t)(nb * bw * K) * sizeof(float), &fresh);
  for (int64_t b = 0; p && fresh && b < nb; b++) {
    int64_t m0 = b * bw, mc = N - m0 < bw ? N - m0 : bw;
    float *dst = p + b * bw * K;
    for (int64_t k = 0; k < K; k++) {
      memcpy(dst + k * bw, B + k * N + m0, (size_t)mc * sizeof(float));
      if (mc < bw) memset(dst + k * bw + mc, 0, (size_t)(bw - mc) * sizeof(float));
    }
  }
  return p;
}

/* B as the tiles read it: packed once into the node's pack slot when it is
 * a constant (input `input`), B[k][n] at B[k * rs + n * cs]; else NULL
 * (only a plain B, cs == 1, is then read as stored). */
static const float *mm_pack(nat_run *r, int input, const float *B, int64_t K, int64_t N, int64_t rs,
                            int64_t cs, int nr) {
  if (!nat_input_is_const(r, input)) return NULL;
  int64_t key[4] = {K, N, nr + (cs == 1 ? 0 : 1024), (int64_t)(intptr_t)B};
  bool fresh;
  float *p = nat_node_pack(r, NAT_DATA_TILES, key,
                           (size_t)nat_mm_packed_floats(K, N, nr) * sizeof(float), &fresh);
  if (p && fresh) nat_mm_pack(p, B, K, N, rs, cs, nr);
  return p;
}

/* C = A . op(B) (+ epilogue) on the tiles: B [K][N] at B[k * rs + n * cs]
 * (rs = N, cs = 1 as stored; rs = 1, cs = K transposed), input `input` of
 * the node. False, doing nothing, where the tiles do not apply. */
static bool tile_gemm_b(nat_run *r, int64_t P, int64_t N, int64_t K, const float *A, const float *B,
                        int input, int64_t rs, int64_t cs, float *C, const nat_epilogue *e) {
  int level = nat_isa();
  if (P < 16 || N < 16 || K < 1 || !nat_run_tiles(r) || !nat_mm_available(level) || e->row_bias ||
      e->zb || (e->z && e->ldz != N))
    return false;
  nat_mm m;
  memset(&m, 0, sizeof m);
  nat_mm_init(&m, level, P, N, K);
  m.b = mm_pack(r, input, B, K, N, rs, cs, m.nr);
  if (!m.b) {
    if (cs != 1) return false;
    m.b = B, m.ldb = rs;
  }
  m.a = A, m.lda = K;
  m.bias = e->col_bias, m.z = e->z, m.ldz = e->ldz;
  m.c = C, m.ldc = N;
  m.lo = -INFINITY, m.hi = INFINITY;
  ait_act post = e->act;
  if (e->act.kind == AIT_ACT_RELU) {
    m.lo = 0.0f, post.kind = AIT_ACT_NONE;
  } else if (e->act.kind == AIT_ACT_CLIP) {
    m.lo = e->act.p[0], m.hi = e->act.p[1], post.kind = AIT_ACT_NONE;
  } else if (e->act.kind == AIT_ACT_GELU) {
    m.gelu = true, post.kind = AIT_ACT_NONE;
  }
  nat_mm_pool(r, &m, &post);
  return true;
}

static bool tile_gemm(nat_run *r, int64_t P, int64_t N, int64_t K, const float *A, const float *B,
                      float *C, const nat_epilogue *e) {
  return tile_gemm_b(r, P, N, K, A, B, 1, N, 1, C, e);
}

/* ---- parallel SGEMM ------------------------------------------------------ */

typedef struct gemm_job {
  nat_gemm_fn fn;
  _Atomic long long *calls; /* the state's count of provider calls, may be NULL */
  bool ta, tb, split_rows;
  int64_t M, N, K, step;
  float alpha;
  const float *A, *B;
  int64_t lda, ldb, ldc;
  float *C;
  const nat_epilogue *e;
} gemm_job;

static void gemm_block(const gemm_job *j, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  const float *a = j->A + (j->ta ? i0 : i0 * j->lda);
  const float *b = j->B + (j->tb ? j0 * j->ldb : j0);
  if (i1 > i0 && j1 > j0) {
    if (j->K > 0 && j->calls) atomic_fetch_add_explicit(j->calls, 1, memory_order_relaxed);
    if (j->K > 0)
      j->fn(j->ta, j->tb, i1 - i0, j1 - j0, j->K, j->alpha, a, j->lda, b, j->ldb,
            j->C + i0 * j->ldc + j0, j->ldc);
    else
      for (int64_t i = i0; i < i1; i++)
        memset(j->C + i * j->ldc + j0, 0, sizeof(float) * (size_t)(j1 - j0));
  }
  nat_epilogue_apply(j->e, j->C, j->ldc, i0, i1, j0, j1);
}

static void gemm_task(void *arg, int64_t t, int tid) {
  const gemm_job *j = arg;
  int64_t lo = t * j->step;
  if (j->split_rows) {
    int64_t hi = lo + j->step < j->M ? lo + j->step : j->M;
    gemm_block(j, lo, hi, 0, j->N);
  } else {
    int64_t hi = lo + j->step < j->N ? lo + j->step : j->N;
    gemm_block(j, 0, j->M, lo, hi);
  }
}

/* nat_sgemm with GEMM provider fn; r NULL: on the calling thread. */
static void sgemm_on(nat_run *r, nat_gemm_fn fn, _Atomic long long *calls, bool ta, bool tb,
                     int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                     const float *B, int64_t ldb, float *C, int64_t ldc, const nat_epilogue *e) {
  if (M >= 1 && M <= NAT_FEW_ROWS && K >= 1 && (tb ? ldb >= K : ldb >= N) &&
      (M == 1 || (!ta && lda >= K && ldc >= N))) {
    gemv(r, tb, M, N, K, alpha, A, lda, B, ldb, C, ldc, e);
    return;
  }
  gemm_job j = {fn, calls, ta, tb, false, M, N, K, 0, alpha, A, B, lda, ldb, ldc, C, e};
  int threads = r ? nat_run_threads(r) : 1;
  double work = (double)M * (double)N * (double)(K > 0 ? K : 1);
  if (threads <= 1 || work < NAT_PAR_MIN_MACS || M * N < 256) {
    gemm_block(&j, 0, M, 0, N);
    return;
  }
  /* split the longer side; blocks of at least 16 rows / 64 columns */
  j.split_rows = M > N;
  int64_t len = j.split_rows ? M : N, quantum = j.split_rows ? 16 : 64;
  int64_t parts = threads * 2;
  if (len / parts < quantum) parts = threads;
  if (len / parts < quantum) parts = len / quantum > 1 ? len / quantum : 1;
  int64_t step = (len + parts - 1) / parts;
  j.step = step;
  nat_pool_run(nat_run_pool(r), (len + step - 1) / step, gemm_task, &j);
}

void nat_sgemm(nat_run *r, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
               const float *A, int64_t lda, const float *B, int64_t ldb, float *C, int64_t ldc,
               const nat_epilogue *e) {
  nat_gemm_fn fn = r ? nat_run_gemm(r) : NULL;
  if (!fn) nat_gemm_provider("openblas", &fn);
  sgemm_on(r, fn, r ? nat_run_gemm_calls(r) : NULL, ta, tb, M, N, K, alpha, A, lda, B, ldb, C, ldc,
           e);
}

/* ---- Gemm / FusedGemm ----------------------------------------------------- */

ait_status nat_k_gemm(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  const ait_tensor *A = in[0], *B = n_in > 1 ? in[1] : NULL, *C = n_in > 2 ? in[2] : NULL;
  if (!A || !B || A->dtype != AIT_FLOAT32 || B->dtype != AIT_FLOAT32 || A->rank != 2 ||
      B->rank != 2 || (C && (C->dtype != AIT_FLOAT32 || C->kind != AIT_KIND_TENSOR)))
    return AIT_E_UNSUPPORTED;
  bool ta = ait_attr_int(n, "transA", 0) != 0, tb = ait_attr_int(n, "transB", 0) != 0;
  float alpha = ait_attr_float(n, "alpha", 1.0f), beta = ait_attr_float(n, "beta", 1.0f);
  int64_t M = A->dims[ta ? 1 : 0], K = A->dims[ta ? 0 : 1];
  int64_t kb = B->dims[tb ? 1 : 0], N = B->dims[tb ? 0 : 1];
  if (K != kb || (C && beta != 1.0f)) return AIT_E_UNSUPPORTED;
  nat_epilogue e;
  memset(&e, 0, sizeof e);
  AIT_TRY(ait_act_parse(n, &e.act));
  int64_t odims[2] = {M, N};
  if (C) {
    int64_t bd[AIT_MAX_RANK], st[2];
    int rk;
    if (ait_shape_broadcast(2, odims, C->rank, C->dims, &rk, bd) != AIT_OK || rk != 2 ||
        bd[0] != M || bd[1] != N) {
      ait_err_clear();
      return AIT_E_UNSUPPORTED;
    }
    ait_broadcast_strides(C->rank, C->dims, 2, odims, st);
    e.zb = C->data;
    e.zb_rs = st[0];
    e.zb_cs = st[1];
  }
  ait_tensor *Y;
  AIT_TRY(nat_output(r, 0, AIT_FLOAT32, 2, odims, &Y));
  if (!ta && nat_gemv_const_rows(r, 1, tb, M, N, K, alpha, A->data, K, B->data, B->dims[1], Y->data,
                                 N, &e))
    return AIT_OK;
  if (!ta && alpha == 1.0f) { /* the register tiles: C as a bias row or a residual */
    nat_epilogue te = e;
    if (te.zb && te.zb_cs == 1 && (te.zb_rs == 0 || te.zb_rs == N)) {
      if (te.zb_rs == 0)
        te.col_bias = te.zb;
      else
        te.z = te.zb, te.ldz = N;
      te.zb = NULL;
    }
    if (tile_gemm_b(r, M, N, K, A->data, B->data, 1, tb ? 1 : N, tb ? K : 1, Y->data, &te))
      return AIT_OK;
  }
  nat_sgemm(r, ta, tb, M, N, K, alpha, A->data, A->dims[1], B->data, B->dims[1], Y->data, N, &e);
  return AIT_OK;
}

/* ---- MatMul / FusedMatMul ------------------------------------------------- */

typedef struct mm_job {
  nat_run *r;
  nat_gemm_fn fn;
  int64_t M, N, K, batch;
  int rb; /* batch rank */
  int64_t bdims[AIT_MAX_RANK], sa[AIT_MAX_RANK], sb[AIT_MAX_RANK], sz[AIT_MAX_RANK];
  const float *a, *b, *z;
  float *c;
  float alpha;
  nat_epilogue e; /* z / zb filled per batch item */
  int64_t zrs, zcs;
  bool serial_items; /* parallel over items, each GEMM single-threaded */
} mm_job;

static void mm_item(const mm_job *j, int64_t q, nat_run *r) {
  int64_t oa = 0, ob = 0, oz = 0, rem = q;
  for (int i = j->rb - 1; i >= 0; i--) {
    int64_t c = rem % j->bdims[i];
    rem /= j->bdims[i];
    oa += c * j->sa[i], ob += c * j->sb[i], oz += c * j->sz[i];
  }
  nat_epilogue e = j->e;
  if (j->z) {
    e.zb = j->z + oz;
    e.zb_rs = j->zrs;
    e.zb_cs = j->zcs;
  }
  sgemm_on(r, j->fn, nat_run_gemm_calls(j->r), false, false, j->M, j->N, j->K, j->alpha,
           j->a + oa * j->M * j->K, j->K, j->b + ob * j->K * j->N, j->N, j->c + q * j->M * j->N,
           j->N, &e);
}

static void mm_task(void *arg, int64_t q, int tid) { mm_item(arg, q, NULL); }

ait_status nat_k_matmul(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  const ait_tensor *A = in[0], *B = n_in > 1 ? in[1] : NULL;
  const ait_tensor *bias = n_in > 2 ? in[2] : NULL, *Z = n_in > 3 ? in[3] : NULL;
  if (!A || !B || A->dtype != AIT_FLOAT32 || B->dtype != AIT_FLOAT32 || A->rank < 2 || B->rank < 2)
    return AIT_E_UNSUPPORTED;
  mm_job j;
  memset(&j, 0, sizeof j);
  int ra = A->rank, rb = B->rank;
  j.M = A->dims[ra - 2];
  j.K = A->dims[ra - 1];
  j.N = B->dims[rb - 1];
  if (B->dims[rb - 2] != j.K) return AIT_E_UNSUPPORTED;
  if (ait_shape_broadcast(ra - 2, A->dims, rb - 2, B->dims, &j.rb, j.bdims) != AIT_OK) {
    ait_err_clear();
    return AIT_E_UNSUPPORTED;
  }
  ait_broadcast_strides(ra - 2, A->dims, j.rb, j.bdims, j.sa);
  ait_broadcast_strides(rb - 2, B->dims, j.rb, j.bdims, j.sb);
  j.batch = ait_shape_numel(j.rb, j.bdims);
  int orank = j.rb + 2;
  if (orank > AIT_MAX_RANK) return AIT_E_UNSUPPORTED;
  int64_t odims[AIT_MAX_RANK];
  memcpy(odims, j.bdims, sizeof(int64_t) * (size_t)j.rb);
  odims[j.rb] = j.M;
  odims[j.rb + 1] = j.N;
  if (bias && (bias->dtype != AIT_FLOAT32 || bias->kind != AIT_KIND_TENSOR ||
               ait_tensor_numel(bias) != j.N || bias->rank > orank ||
               (bias->rank >= 1 && bias->dims[bias->rank - 1] != j.N)))
    return AIT_E_UNSUPPORTED;
  if (Z) { /* Z must broadcast to the product's shape without growing it */
    int rk;
    int64_t bd[AIT_MAX_RANK];
    if (Z->dtype != AIT_FLOAT32 || Z->kind != AIT_KIND_TENSOR || Z->rank > orank ||
        ait_shape_broadcast(orank, odims, Z->rank, Z->dims, &rk, bd) != AIT_OK || rk != orank ||
        memcmp(bd, odims, sizeof(int64_t) * (size_t)orank)) {
      ait_err_clear();
      return AIT_E_UNSUPPORTED;
    }
    int64_t zs[AIT_MAX_RANK];
    ait_broadcast_strides(Z->rank, Z->dims, orank, odims, zs);
    memcpy(j.sz, zs, sizeof(int64_t) * (size_t)j.rb);
    j.zrs = zs[orank - 2];
    j.zcs = zs[orank - 1];
    j.z = Z->data;
  }
  AIT_TRY(ait_act_parse(n, &j.e.act));
  j.alpha = ait_attr_float(n, "alpha", 1.0f);
  j.e.col_bias = bias ? bias->data : NULL;
  if (j.z && !bias && ait_tensor_numel(Z) == j.N && j.zcs == 1) {
    /* a residual that is one row (a bias computed in the graph, e.g. a
     * Slice of nn.MultiheadAttention's packed in_proj_bias): the bias */
    j.e.col_bias = j.z;
    j.z = NULL;
  }
  ait_tensor *Y;
  AIT_TRY(nat_output(r, 0, AIT_FLOAT32, orank, odims, &Y));
  j.a = A->data;
  j.b = B->data;
  j.c = Y->data;
  j.r = r;
  j.fn = nat_run_gemm(r);
  bool b_shared = true; /* B is the same matrix for every item */
  for (int i = 0; i < j.rb; i++)
    b_shared = b_shared && j.sb[i] == 0;
  /* items of A (and Z) follow each other in memory when nothing broadcasts */
  bool a_dense = ait_shape_numel(ra - 2, A->dims) == j.batch;
  bool z_rows = !j.z || ait_tensor_numel(Z) == j.batch * j.M * j.N;
  int64_t rows = j.batch * j.M;
  if (rb == 2 && a_dense &&
      (rows == 1 ? !j.z || ait_tensor_numel(Z) == j.N : z_rows && rows <= NAT_GEMV_ROWS)) {
    /* a few rows over a constant B: the packed GEMV where it applies */
    nat_epilogue e = j.e;
    e.z = j.z;
    e.ldz = j.N;
    if (nat_gemv_const_rows(r, 1, false, rows, j.N, j.K, j.alpha, j.a, j.K, j.b, j.N, j.c, j.N, &e))
      return AIT_OK;
  }
  if (b_shared && a_dense && z_rows && j.alpha == 1.0f) { /* all rows on register tiles */
    nat_epilogue e = j.e;
    e.z = j.z;
    e.ldz = j.N;
    if (tile_gemm(r, j.batch * j.M, j.N, j.K, j.a, j.b, j.c, &e)) return AIT_OK;
  }
  if (b_shared && a_dense && z_rows && j.rb > 0 && j.batch > 1) {
    /* one GEMM over all rows of A */
    nat_epilogue e = j.e;
    e.z = j.z;
    e.ldz = j.N;
    nat_sgemm(r, false, false, j.batch * j.M, j.N, j.K, j.alpha, j.a, j.K, j.b, j.N, j.c, j.N, &e);
    return AIT_OK;
  }
  int threads = nat_run_threads(r);
  double work = (double)j.batch * (double)j.M * (double)j.N * (double)j.K;
  if (j.batch >= threads && threads > 1 && work >= NAT_PAR_MIN_MACS) {
    nat_pool_run(nat_run_pool(r), j.batch, mm_task, &j);
  } else {
    for (int64_t q = 0; q < j.batch; q++)
      mm_item(&j, q, r);
  }
  return AIT_OK;
}
