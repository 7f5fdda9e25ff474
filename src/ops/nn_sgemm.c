/* The reference float32 GEMM: packed panels and a 6x8 register tile, as in
 * BLIS/GotoBLAS, written with GCC/Clang vector extensions so that the
 * baseline x86-64 (SSE2) build vectorises it; other compilers get a scalar
 * tile. Every C element is summed in float, in order over k, without fused
 * multiply-add, so results match the naive triple loop exactly and do not
 * depend on block sizes or vector width. */
#include <stdlib.h>
#include <string.h>

#include "ops/nn_impl.h"

enum { MR = 6, NR = 8, KC = 256, MC = 16 * MR, NC = 128 * NR };

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

#if defined(__GNUC__) || defined(__clang__)
typedef float v4f __attribute__((vector_size(16)));

static inline v4f ldu(const float *p) {
  v4f v;
  memcpy(&v, p, sizeof v);
  return v;
}
static inline void stu(float *p, v4f v) { memcpy(p, &v, sizeof v); }

/* c[MR x NR] (row stride ldc) = (load ? c : 0) + a-panel * b-panel. a holds
 * kc columns of MR values, b holds kc rows of NR values (64-byte aligned). */
static void tile(int64_t kc, const float *restrict a, const float *restrict b, float *restrict c,
                 int64_t ldc, bool load) {
  v4f c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0}, c20 = {0}, c21 = {0};
  v4f c30 = {0}, c31 = {0}, c40 = {0}, c41 = {0}, c50 = {0}, c51 = {0};
  if (load) {
    c00 = ldu(c), c01 = ldu(c + 4), c10 = ldu(c + ldc), c11 = ldu(c + ldc + 4);
    c20 = ldu(c + 2 * ldc), c21 = ldu(c + 2 * ldc + 4);
    c30 = ldu(c + 3 * ldc), c31 = ldu(c + 3 * ldc + 4);
    c40 = ldu(c + 4 * ldc), c41 = ldu(c + 4 * ldc + 4);
    c50 = ldu(c + 5 * ldc), c51 = ldu(c + 5 * ldc + 4);
  }
  for (int64_t p = 0; p < kc; p++, a += MR, b += NR) {
    const v4f b0 = *(const v4f *)b, b1 = *(const v4f *)(b + 4);
    v4f x;
    x = (v4f){a[0], a[0], a[0], a[0]};
    c00 += x * b0, c01 += x * b1;
    x = (v4f){a[1], a[1], a[1], a[1]};
    c10 += x * b0, c11 += x * b1;
    x = (v4f){a[2], a[2], a[2], a[2]};
    c20 += x * b0, c21 += x * b1;
    x = (v4f){a[3], a[3], a[3], a[3]};
    c30 += x * b0, c31 += x * b1;
    x = (v4f){a[4], a[4], a[4], a[4]};
    c40 += x * b0, c41 += x * b1;
    x = (v4f){a[5], a[5], a[5], a[5]};
    c50 += x * b0, c51 += x * b1;
  }
  stu(c, c00), stu(c + 4, c01), stu(c + ldc, c10), stu(c + ldc + 4, c11);
  stu(c + 2 * ldc, c20), stu(c + 2 * ldc + 4, c21);
  stu(c + 3 * ldc, c30), stu(c + 3 * ldc + 4, c31);
  stu(c + 4 * ldc, c40), stu(c + 4 * ldc + 4, c41);
  stu(c + 5 * ldc, c50), stu(c + 5 * ldc + 4, c51);
}
#else
static void tile(int64_t kc, const float *restrict a, const float *restrict b, float *restrict c,
                 int64_t ldc, bool load) {
  float acc[MR][NR];
  for (int i = 0; i < MR; i++)
    for (int j = 0; j < NR; j++)
      acc[i][j] = load ? c[i * ldc + j] : 0.0f;
  for (int64_t p = 0; p < kc; p++, a += MR, b += NR)
    for (int i = 0; i < MR; i++)
      for (int j = 0; j < NR; j++)
        acc[i][j] += a[i] * b[j];
  for (int i = 0; i < MR; i++)
    for (int j = 0; j < NR; j++)
      c[i * ldc + j] = acc[i][j];
}
#endif

/* A tile cut by the matrix edge: computed in a local MR x NR buffer. */
static void edge_tile(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int64_t mr,
                      int64_t nr, bool load) {
  float t[MR * NR];
  memset(t, 0, sizeof t);
  if (load)
    for (int64_t i = 0; i < mr; i++)
      memcpy(t + i * NR, c + i * ldc, (size_t)nr * sizeof *t);
  tile(kc, a, b, t, NR, load);
  for (int64_t i = 0; i < mr; i++)
    memcpy(c + i * ldc, t + i * NR, (size_t)nr * sizeof *t);
}

/* Rows [i0, i0+mc) x cols [p0, p0+kc) of A into MR-row panels, zero-padded. */
static void pack_a(const float *A, int64_t rsa, int64_t csa, int64_t i0, int64_t mc, int64_t p0,
                   int64_t kc, float *pa) {
  for (int64_t r = 0; r < mc; r += MR) {
    int64_t mr = min64(MR, mc - r);
    for (int64_t p = 0; p < kc; p++, pa += MR) {
      const float *src = A + (i0 + r) * rsa + (p0 + p) * csa;
      int64_t i = 0;
      for (; i < mr; i++)
        pa[i] = src[i * rsa];
      for (; i < MR; i++)
        pa[i] = 0.0f;
    }
  }
}

/* Rows [p0, p0+kc) x cols [j0, j0+nc) of B into NR-column panels, zero-padded. */
static void pack_b(const float *B, int64_t rsb, int64_t csb, int64_t p0, int64_t kc, int64_t j0,
                   int64_t nc, float *pb) {
  for (int64_t q = 0; q < nc; q += NR) {
    int64_t nr = min64(NR, nc - q);
    for (int64_t p = 0; p < kc; p++, pb += NR) {
      const float *src = B + (p0 + p) * rsb + (j0 + q) * csb;
      int64_t j = 0;
      if (csb == 1 && nr == NR) {
        memcpy(pb, src, NR * sizeof *pb);
        continue;
      }
      for (; j < nr; j++)
        pb[j] = src[j * csb];
      for (; j < NR; j++)
        pb[j] = 0.0f;
    }
  }
}

static float *alloc_panel(int64_t n) {
  size_t bytes = ((size_t)n * sizeof(float) + 63) & ~(size_t)63;
  return aligned_alloc(64, bytes ? bytes : 64);
}

/* One row of C (row i of A) by streaming rows of a row-major B: for skinny
 * products, where packing would cost as much as the arithmetic. Same
 * summation order as the tile. */
static void row_times_b(int64_t N, int64_t K, const float *a, int64_t csa, const float *B,
                        int64_t rsb, float *restrict c, bool accumulate) {
  if (!accumulate) memset(c, 0, (size_t)N * sizeof *c);
  for (int64_t p = 0; p < K; p++) {
    const float x = a[p * csa], *restrict b = B + p * rsb;
    for (int64_t j = 0; j < N; j++)
      c[j] += x * b[j];
  }
}

ait_status nn_sgemm(int64_t M, int64_t N, int64_t K, const float *A, int64_t rsa, int64_t csa,
                    const float *B, int64_t rsb, int64_t csb, float *C, int64_t ldc,
                    bool accumulate) {
  if (M <= 0 || N <= 0) return AIT_OK;
  if (K <= 0) {
    if (!accumulate)
      for (int64_t i = 0; i < M; i++)
        memset(C + i * ldc, 0, (size_t)N * sizeof *C);
    return AIT_OK;
  }
  if (M < 4 && csb == 1) {
    for (int64_t i = 0; i < M; i++)
      row_times_b(N, K, A + i * rsa, csa, B, rsb, C + i * ldc, accumulate);
    return AIT_OK;
  }
  int64_t kcmax = min64(K, KC);
  int64_t mcmax = (min64(M, MC) + MR - 1) / MR * MR;
  int64_t ncmax = (min64(N, NC) + NR - 1) / NR * NR;
  float *pa = alloc_panel(mcmax * kcmax), *pb = alloc_panel(ncmax * kcmax);
  if (!pa || !pb) {
    free(pa);
    free(pb);
    return ait_err(AIT_E_NOMEM, "out of memory for GEMM panels (%lldx%lldx%lld)", (long long)M,
                   (long long)N, (long long)K);
  }
  for (int64_t jc = 0; jc < N; jc += NC) {
    int64_t nc = min64(NC, N - jc);
    for (int64_t pc = 0; pc < K; pc += KC) {
      int64_t kc = min64(KC, K - pc);
      bool load = accumulate || pc > 0;
      pack_b(B, rsb, csb, pc, kc, jc, nc, pb);
      for (int64_t ic = 0; ic < M; ic += MC) {
        int64_t mc = min64(MC, M - ic);
        pack_a(A, rsa, csa, ic, mc, pc, kc, pa);
        for (int64_t jr = 0; jr < nc; jr += NR) {
          int64_t nr = min64(NR, nc - jr);
          for (int64_t ir = 0; ir < mc; ir += MR) {
            int64_t mr = min64(MR, mc - ir);
            float *c = C + (ic + ir) * ldc + jc + jr;
            const float *a = pa + ir * kc, *b = pb + jr * kc;
            if (mr == MR && nr == NR)
              tile(kc, a, b, c, ldc, load);
            else
              edge_tile(kc, a, b, c, ldc, mr, nr, load);
          }
        }
      }
    }
  }
  free(pa);
  free(pb);
  return AIT_OK;
}
