/* Batch-1 products over constant weights (Gemm/MatMul with one row of A and
 * an initializer as B). Such a product is memory-bound: it streams all of B
 * on every run, from L3 or DRAM. The plain GEMV reads four rows (or
 * columns) of B side by side, four streams a page or more apart, which the
 * hardware prefetchers follow badly. Here B is packed once, on the node's
 * first batch-1 run, into blocks of 4 outputs x 16 reduction steps
 * interleaved, so the product reads one sequential stream (a bare loop
 * over the MLP benchmark's 7.4 MB of weights: 40 us packed against 46 us
 * as row streams on this 2-core Zen 4).
 *
 * The packed copy costs as much memory as B; it lives in the node's pack
 * slot (nat_node_pack) until the state's plans are released. The packed
 * kernel has an AVX-512 form and an AVX2 one (the same packing, each
 * 16-step group read as two 8-float halves), picked by the run's level;
 * at the portable level the plain GEMV runs. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "backends/native/native.h"

/* Floats of B below which packing does not pay (the product fits in L2). */
#define GEMV_PACK_MIN 65536.0

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "backends/native/native_avx2.h"
#include "backends/native/native_avx512.h"

#define T512 __attribute__((target("avx512f,fma")))
#define T256 __attribute__((target("avx2,fma")))

/* B as ceil(N/4) blocks; block b holds outputs 4b..4b+3 as Kp/16 groups of
 * 4 x 16 floats (output q's 16 reduction steps at q*16), zero-padded to Kp
 * (K rounded up to 16) and to whole blocks. */
typedef struct gemv_pack {
  int64_t N, K, Kp;
  const float *p; /* 64-byte aligned */
} gemv_pack;

static void pack_fill(float *p, const float *B, bool tb, int64_t N, int64_t K, int64_t Kp,
                      int64_t ldb) {
  memset(p, 0, (size_t)((N + 3) / 4 * 4 * Kp) * sizeof(float));
  for (int64_t j = 0; j < N; j++) {
    float *blk = p + (j / 4) * 4 * Kp + (j % 4) * 16;
    if (tb) {
      const float *row = B + j * ldb; /* B is [N, K] */
      for (int64_t k = 0; k < K; k++)
        blk[(k / 16) * 64 + k % 16] = row[k];
    } else {
      for (int64_t k = 0; k < K; k++) /* B is [K, N] */
        blk[(k / 16) * 64 + k % 16] = B[k * ldb + j];
    }
  }
}

/* c[j0..j1) = alpha * a . B for outputs j0 (a multiple of 4) to j1. */
T512 static void gemv_blocks(const gemv_pack *pk, const float *a, float alpha, float *c, int64_t j0,
                             int64_t j1) {
  const int64_t K = pk->K, Kp = pk->Kp, kfull = K / 16 * 16;
  const __mmask16 tail = nat_tail16(K - kfull);
  for (int64_t j = j0; j < j1; j += 4) {
    const float *w = pk->p + j * Kp;
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    int64_t k = 0;
    for (; k < kfull; k += 16, w += 64) {
      __m512 x = _mm512_loadu_ps(a + k);
      s0 = _mm512_fmadd_ps(_mm512_load_ps(w), x, s0);
      s1 = _mm512_fmadd_ps(_mm512_load_ps(w + 16), x, s1);
      s2 = _mm512_fmadd_ps(_mm512_load_ps(w + 32), x, s2);
      s3 = _mm512_fmadd_ps(_mm512_load_ps(w + 48), x, s3);
    }
    if (k < Kp) { /* the padded group: a read masked, B's padding is zero */
      __m512 x = _mm512_maskz_loadu_ps(tail, a + k);
      s0 = _mm512_fmadd_ps(_mm512_load_ps(w), x, s0);
      s1 = _mm512_fmadd_ps(_mm512_load_ps(w + 16), x, s1);
      s2 = _mm512_fmadd_ps(_mm512_load_ps(w + 32), x, s2);
      s3 = _mm512_fmadd_ps(_mm512_load_ps(w + 48), x, s3);
    }
    float t[4] = {_mm512_reduce_add_ps(s0), _mm512_reduce_add_ps(s1), _mm512_reduce_add_ps(s2),
                  _mm512_reduce_add_ps(s3)};
    for (int q = 0; q < 4 && j + q < j1; q++)
      c[j + q] = alpha * t[q];
  }
}

#define GEMV_PF 1024
/* gemv_blocks on AVX2: per output two accumulators (the group's halves),
 * eight chains in flight to cover the multiply-add latency. */
T256 static void gemv_blocks256(const gemv_pack *pk, const float *a, float alpha, float *c,
                                int64_t j0, int64_t j1) {
  const int64_t K = pk->K, Kp = pk->Kp, kfull = K / 16 * 16;
  const __m256i t0 = nat_tail8(K - kfull), t1 = nat_tail8(K - kfull - 8);
  for (int64_t j = j0; j < j1; j += 4) {
    const float *w = pk->p + j * Kp;
    __m256 s[8];
    for (int q = 0; q < 8; q++)
      s[q] = _mm256_setzero_ps();
    for (int64_t k = 0; k < Kp; k += 16, w += 64) {
      __m256 x0, x1;
      _mm_prefetch((const char *)(w + GEMV_PF), _MM_HINT_T0);
      _mm_prefetch((const char *)(w + GEMV_PF + 16), _MM_HINT_T0);
      _mm_prefetch((const char *)(w + GEMV_PF + 32), _MM_HINT_T0);
      _mm_prefetch((const char *)(w + GEMV_PF + 48), _MM_HINT_T0);
      if (k < kfull) {
        x0 = _mm256_loadu_ps(a + k), x1 = _mm256_loadu_ps(a + k + 8);
      } else { /* the padded group: reads masked, B's padding is zero */
        x0 = _mm256_maskload_ps(a + k, t0), x1 = _mm256_maskload_ps(a + k + 8, t1);
      }
#pragma GCC unroll 4
      for (int q = 0; q < 4; q++) {
        s[2 * q] = _mm256_fmadd_ps(_mm256_load_ps(w + 16 * q), x0, s[2 * q]);
        s[2 * q + 1] = _mm256_fmadd_ps(_mm256_load_ps(w + 16 * q + 8), x1, s[2 * q + 1]);
      }
    }
    for (int q = 0; q < 4 && j + q < j1; q++)
      c[j + q] = alpha * nat_hsum8(_mm256_add_ps(s[2 * q], s[2 * q + 1]));
  }
}

/* A few rows of A (2..NAT_GEMV_ROWS) over the same packed B: B is still
 * read once from memory, each 4-output block then from L1 once per group
 * of rows. AVX-512: groups of up to 4 rows, 16 accumulators (row, output);
 * AVX2: up to 3 rows, 12 accumulators, each taking both 8-float halves of
 * a group (the weights read as memory operands). Rows at a[i * lda], c at
 * c[i * ldc]. */
static inline __attribute__((always_inline)) T512 void rows512(const gemv_pack *pk, const float *a,
                                                               int64_t lda, int mr, float alpha,
                                                               float *c, int64_t ldc, int64_t j,
                                                               int64_t jn) {
  const int64_t K = pk->K, Kp = pk->Kp, kfull = K / 16 * 16;
  const __mmask16 tail = nat_tail16(K - kfull);
  const float *w = pk->p + j * Kp;
  __m512 s[4][4];
  for (int i = 0; i < 4; i++)
    for (int q = 0; q < 4; q++)
      s[i][q] = _mm512_setzero_ps();
  for (int64_t k = 0; k < Kp; k += 16, w += 64) {
    __m512 w0 = _mm512_load_ps(w), w1 = _mm512_load_ps(w + 16);
    __m512 w2 = _mm512_load_ps(w + 32), w3 = _mm512_load_ps(w + 48);
    __mmask16 m = k < kfull ? (__mmask16)0xffff : tail;
    for (int i = 0; i < 4; i++) {
      if (i >= mr) break;
      __m512 x = _mm512_maskz_loadu_ps(m, a + i * lda + k);
      s[i][0] = _mm512_fmadd_ps(w0, x, s[i][0]);
      s[i][1] = _mm512_fmadd_ps(w1, x, s[i][1]);
      s[i][2] = _mm512_fmadd_ps(w2, x, s[i][2]);
      s[i][3] = _mm512_fmadd_ps(w3, x, s[i][3]);
    }
  }
  for (int i = 0; i < mr; i++)
    for (int q = 0; q < 4 && q < jn; q++)
      c[i * ldc + j + q] = alpha * _mm512_reduce_add_ps(s[i][q]);
}

T512 static void gemv_rows512(const gemv_pack *pk, const float *a, int64_t lda, int64_t M,
                              float alpha, float *c, int64_t ldc, int64_t j0, int64_t j1) {
  for (int64_t j = j0; j < j1; j += 4)
    for (int64_t i = 0; i < M; i += 4) {
      int64_t mr = M - i < 4 ? M - i : 4;
      const float *ai = a + i * lda;
      float *ci = c + i * ldc;
      switch (mr) { /* constant row counts: the accumulators stay in registers */
      case 4: rows512(pk, ai, lda, 4, alpha, ci, ldc, j, j1 - j); break;
      case 3: rows512(pk, ai, lda, 3, alpha, ci, ldc, j, j1 - j); break;
      case 2: rows512(pk, ai, lda, 2, alpha, ci, ldc, j, j1 - j); break;
      default: rows512(pk, ai, lda, 1, alpha, ci, ldc, j, j1 - j); break;
      }
    }
}

static inline __attribute__((always_inline)) T256 void rows256(const gemv_pack *pk, const float *a,
                                                               int64_t lda, int mr, float alpha,
                                                               float *c, int64_t ldc, int64_t j,
                                                               int64_t jn) {
  const int64_t K = pk->K, Kp = pk->Kp, kfull = K / 16 * 16;
  const __m256i t0 = nat_tail8(K - kfull), t1 = nat_tail8(K - kfull - 8);
  const __m256i all = _mm256_set1_epi32(-1);
  const float *w = pk->p + j * Kp;
  __m256 s[3][4];
  for (int i = 0; i < 3; i++)
    for (int q = 0; q < 4; q++)
      s[i][q] = _mm256_setzero_ps();
  for (int64_t k = 0; k < Kp; k += 16, w += 64) {
    bool full = k < kfull;
    __m256i m0 = full ? all : t0, m1 = full ? all : t1;
    for (int i = 0; i < 3; i++) {
      if (i >= mr) break;
      __m256 x0 = _mm256_maskload_ps(a + i * lda + k, m0);
      __m256 x1 = _mm256_maskload_ps(a + i * lda + k + 8, m1);
      for (int q = 0; q < 4; q++) {
        s[i][q] = _mm256_fmadd_ps(_mm256_load_ps(w + 16 * q), x0, s[i][q]);
        s[i][q] = _mm256_fmadd_ps(_mm256_load_ps(w + 16 * q + 8), x1, s[i][q]);
      }
    }
  }
  for (int i = 0; i < mr; i++)
    for (int q = 0; q < 4 && q < jn; q++)
      c[i * ldc + j + q] = alpha * nat_hsum8(s[i][q]);
}

T256 static void gemv_rows256(const gemv_pack *pk, const float *a, int64_t lda, int64_t M,
                              float alpha, float *c, int64_t ldc, int64_t j0, int64_t j1) {
  for (int64_t j = j0; j < j1; j += 4)
    for (int64_t i = 0; i < M; i += 3) {
      int64_t mr = M - i < 3 ? M - i : 3;
      const float *ai = a + i * lda;
      float *ci = c + i * ldc;
      switch (mr) {
      case 3: rows256(pk, ai, lda, 3, alpha, ci, ldc, j, j1 - j); break;
      case 2: rows256(pk, ai, lda, 2, alpha, ci, ldc, j, j1 - j); break;
      default: rows256(pk, ai, lda, 1, alpha, ci, ldc, j, j1 - j); break;
      }
    }
}

/* The packed kernels of the run's level, NULL at the portable one. */
typedef void (*gemv_fn)(const gemv_pack *pk, const float *a, float alpha, float *c, int64_t j0,
                        int64_t j1);
typedef void (*gemv_rows_fn)(const gemv_pack *pk, const float *a, int64_t lda, int64_t M,
                             float alpha, float *c, int64_t ldc, int64_t j0, int64_t j1);
static gemv_fn pack_kernel(void) {
  static const gemv_fn by_level[] = {
      [NAT_ISA_PORTABLE] = NULL, [NAT_ISA_AVX2] = gemv_blocks256, [NAT_ISA_AVX512] = gemv_blocks};
  int l = nat_isa();
  return l >= NAT_ISA_PORTABLE && l <= NAT_ISA_AVX512 ? by_level[l] : NULL;
}
static gemv_rows_fn rows_kernel(void) {
  static const gemv_rows_fn by_level[] = {
      [NAT_ISA_PORTABLE] = NULL, [NAT_ISA_AVX2] = gemv_rows256, [NAT_ISA_AVX512] = gemv_rows512};
  int l = nat_isa();
  return l >= NAT_ISA_PORTABLE && l <= NAT_ISA_AVX512 ? by_level[l] : NULL;
}

#else

typedef struct gemv_pack {
  int64_t N, K, Kp;
  const float *p;
} gemv_pack;
static void pack_fill(float *p, const float *B, bool tb, int64_t N, int64_t K, int64_t Kp,
                      int64_t ldb) {}
typedef void (*gemv_fn)(const gemv_pack *pk, const float *a, float alpha, float *c, int64_t j0,
                        int64_t j1);
typedef void (*gemv_rows_fn)(const gemv_pack *pk, const float *a, int64_t lda, int64_t M,
                             float alpha, float *c, int64_t ldc, int64_t j0, int64_t j1);
static gemv_fn pack_kernel(void) { return NULL; }
static gemv_rows_fn rows_kernel(void) { return NULL; }

#endif

#define GEMV_MAX_CHUNKS 128

typedef struct gemv_job {
  gemv_fn fn;        /* the level's packed kernel (one row) */
  gemv_rows_fn rows; /* the level's packed kernel of a few rows */
  const gemv_pack *pk;
  const float *a;
  int64_t lda, M, ldc; /* rows of a and c */
  float alpha;
  float *c;
  const nat_epilogue *e;
  int n_chunks;
  int64_t bound[GEMV_MAX_CHUNKS + 1]; /* chunk t: outputs bound[t] .. bound[t+1] */
} gemv_job;

/* Guided chunks: each takes 5/8 of what is left divided by the threads, in
 * units of 16 outputs (whole cache lines of c), so the first round gives
 * every thread about a third of the product (2 threads) and the chunks then
 * shrink to one unit, which evens out the end. Every chunk costs a claim
 * and a count on lines the threads share: the MLP's products in 32 equal
 * chunks took 47 us a run against 43-44 for static halves and for 10
 * guided ones (a bare loop, the modes interleaved in one process); the
 * MLP benchmark through `aitune bench` went from 45.0 to 42.5 us. */
static void gemv_chunks(gemv_job *j, int64_t N, int threads) {
  int64_t units = (N + 15) / 16, left = units, at = 0;
  int64_t least = units / (16 * (int64_t)threads) + 1; /* at most ~16 small ones per thread */
  j->n_chunks = 0;
  j->bound[0] = 0;
  while (left > 0) {
    int64_t c = threads < 2 ? left : (left * 5 + 8 * threads - 1) / (8 * threads);
    if (c < least) c = least;
    if (c > left || j->n_chunks == GEMV_MAX_CHUNKS - 1) c = left;
    at += c, left -= c;
    j->bound[++j->n_chunks] = at * 16 < N ? at * 16 : N;
  }
}

static void gemv_task(void *arg, int64_t t, int tid) {
  const gemv_job *j = arg;
  int64_t j0 = j->bound[t], j1 = j->bound[t + 1];
  if (j->M == 1)
    j->fn(j->pk, j->a, j->alpha, j->c, j0, j1);
  else
    j->rows(j->pk, j->a, j->lda, j->M, j->alpha, j->c, j->ldc, j0, j1);
  nat_epilogue_apply(j->e, j->c, j->ldc, 0, j->M, j0, j1);
}

/* Ask for transparent huge pages under the whole 2 MiB pages of a new
 * packed copy, before its first touch (where THP is "madvise", the default
 * of Debian's kernels): the product streams every byte of it on every run,
 * and on 4 KiB pages it takes a TLB miss each 4 KiB. A hint: failure
 * changes nothing. */
#define HUGE_PAGE ((uintptr_t)2 << 20)

static void huge_pages(void *p, size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  const uintptr_t huge = HUGE_PAGE;
  uintptr_t lo = ((uintptr_t)p + huge - 1) & ~(huge - 1), hi = ((uintptr_t)p + bytes) & ~(huge - 1);
  if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
  (void)p, (void)bytes;
#endif
}

bool nat_gemv_const(nat_run *r, int bk, bool tb, int64_t N, int64_t K, float alpha, const float *a,
                    const float *B, int64_t ldb, float *c, const nat_epilogue *e) {
  return nat_gemv_const_rows(r, bk, tb, 1, N, K, alpha, a, K, B, ldb, c, N, e);
}

bool nat_gemv_const_rows(nat_run *r, int bk, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                         const float *a, int64_t lda, const float *B, int64_t ldb, float *c,
                         int64_t ldc, const nat_epilogue *e) {
  gemv_fn fn = pack_kernel();
  gemv_rows_fn rows = rows_kernel();
  if (!nat_run_gemv_pack(r) || !fn || !rows || M < 1 || M > NAT_GEMV_ROWS || N < 4 || K < 1 ||
      (double)N * (double)K < GEMV_PACK_MIN || !nat_input_is_const(r, bk))
    return false;
  int64_t Kp = (K + 15) / 16 * 16, key[4] = {N, K, tb, (int64_t)(intptr_t)B};
  bool fresh;
  size_t bytes = (size_t)((N + 3) / 4 * 4 * Kp) * sizeof(float);
  /* a copy of a huge page or more starts on a huge-page boundary and may
   * end on one: 4 MiB more of address space, never touched, so that every
   * page of it can be huge (the partial ones at each end would not be) */
  size_t slack = bytes >= HUGE_PAGE ? 2 * HUGE_PAGE : 0;
  char *raw = nat_node_pack(r, NAT_DATA_GEMV, key, bytes + slack, &fresh);
  if (!raw) return false;
  float *p = (float *)(slack ? (char *)(((uintptr_t)raw + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1)) : raw);
  if (fresh) {
    huge_pages(p, slack ? (bytes + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1) : bytes);
    pack_fill(p, B, tb, N, K, Kp, ldb);
  }
  gemv_pack pk = {N, K, Kp, p};
  gemv_job j = {fn, rows, &pk, a, lda, M, ldc, alpha, c, e, 0, {0}};
  gemv_chunks(&j, N, nat_run_threads(r));
  nat_pool_run(nat_run_pool(r), j.n_chunks, gemv_task, &j);
  return true;
}
