/* FusedConvNhwc's kernels on AVX2+FMA: native_nhwc512.c's design for
 * vectors of eight channels and sixteen registers (driver and portable path
 * in native_nhwc.c). The last vector of a block is read and written through
 * a lane mask when M (or C) is not a multiple of 8; each kernel exists
 * with and without that tail, so full vectors use plain loads:
 *   pointwise  a register tile of 6 pixels x 16 channels, 4 x 24 or
 *              12 x 8 (at most 12 accumulators, the weight row's vectors
 *              and one broadcast in 16 registers); bias, residual and
 *              clamp on the tile before it is stored
 *   depthwise  3x3: native_nhwc_dw3256.c
 *   stem       a small group-1 window: per pixel, taps x input channels
 *              broadcast against weight vectors, up to 32 channels a tile
 * Compiled with per-function target attributes; nat_nhwc256_available()
 * says whether the run's level (nat_isa) allows them. */
#include <stdbool.h>
#include <stdint.h>

#include "backends/native/native.h"
#include "backends/native/native_nhwc_pw.h"
#include "ops/fused_impl.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "backends/native/native_avx2.h"

#define T256 __attribute__((target("avx2,fma")))
#define INL static inline __attribute__((always_inline))

bool nat_nhwc256_available(void) { return nat_isa() >= NAT_ISA_AVX2; }

/* Vector p of a block: through mask m when it is the block's tail. */
#define LD8(p, tl, m) ((tl) ? _mm256_maskload_ps((p), (m)) : _mm256_loadu_ps(p))
#define ST8(p, tl, m, v)                                                                           \
  do {                                                                                             \
    if (tl)                                                                                        \
      _mm256_maskstore_ps((p), (m), (v));                                                          \
    else                                                                                           \
      _mm256_storeu_ps((p), (v));                                                                  \
  } while (0)

/* ---- pointwise ------------------------------------------------------------ */

#define PW_PREFETCH 8

/* y[i][0..8nv) = clamp(b + sum_k x[i][k] w[k][..] + z[i][..]) for mr pixels;
 * the last vector through mask lm when tail. */
INL T256 void pw_tile(const int mr, const int nv, const bool tail, int64_t K, const float *x,
                      int64_t ldx, const float *w, int64_t ldw, __m256i lm, const float *b,
                      const float *z, float *y, int64_t ldy, __m256 lo, __m256 hi,
                      const float *wn) {
  __m256 acc[12][3];
#pragma GCC unroll 3
  for (int j = 0; j < 3; j++) {
    if (j >= nv) break;
    const bool tl = tail && j == nv - 1;
    __m256 bj = b ? LD8(b + 8 * j, tl, lm) : _mm256_setzero_ps();
#pragma GCC unroll 12
    for (int i = 0; i < 12; i++)
      if (i < mr) acc[i][j] = bj;
  }
  for (int64_t k = 0; k < K; k++) {
    const float *wk = w + k * ldw;
    __m256 wv[3];
    _mm_prefetch((const char *)(wk + PW_PREFETCH * ldw), _MM_HINT_T0);
    if (nv == 3) _mm_prefetch((const char *)(wk + PW_PREFETCH * ldw + 16), _MM_HINT_T0);
    if (wn) _mm_prefetch((const char *)(wn + 16 * k), _MM_HINT_T1); /* nat_pw_next */
#pragma GCC unroll 3
    for (int j = 0; j < 3; j++)
      if (j < nv) wv[j] = LD8(wk + 8 * j, tail && j == nv - 1, lm);
#pragma GCC unroll 12
    for (int i = 0; i < 12; i++) {
      if (i >= mr) break;
      __m256 xb = _mm256_broadcast_ss(x + i * ldx + k);
#pragma GCC unroll 3
      for (int j = 0; j < 3; j++)
        if (j < nv) acc[i][j] = _mm256_fmadd_ps(xb, wv[j], acc[i][j]);
    }
  }
#pragma GCC unroll 12
  for (int i = 0; i < 12; i++) {
    if (i >= mr) break;
#pragma GCC unroll 3
    for (int j = 0; j < 3; j++) {
      if (j >= nv) break;
      const bool tl = tail && j == nv - 1;
      __m256 v = acc[i][j];
      if (z) v = _mm256_add_ps(v, LD8(z + i * ldy + 8 * j, tl, lm));
      v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
      ST8(y + i * ldy + 8 * j, tl, lm, v);
    }
  }
}

#define PW_ARGS                                                                                    \
  int64_t K, const float *x, int64_t ldx, const float *w, int64_t ldw, __m256i lm, const float *b, \
      const float *z, float *y, int64_t ldy, __m256 lo, __m256 hi, const float *wn
#define PW_PASS K, x, ldx, w, ldw, lm, b, z, y, ldy, lo, hi, wn
#define PW_CASE(R, NV)                                                                             \
  case R:                                                                                          \
    if (tail)                                                                                      \
      pw_tile(R, NV, true, PW_PASS);                                                               \
    else                                                                                           \
      pw_tile(R, NV, false, PW_PASS);                                                              \
    break;

/* One function per vector count, a case per row count up to that count's
 * tile (12, 6, 4 rows): each tile fully unrolled with its accumulators in
 * registers. */
static T256 void pw_nv1(int mr, bool tail, PW_ARGS) {
  switch (mr) {
    PW_CASE(1, 1)
    PW_CASE(2, 1)
    PW_CASE(3, 1)
    PW_CASE(4, 1)
    PW_CASE(5, 1)
    PW_CASE(6, 1)
    PW_CASE(7, 1)
    PW_CASE(8, 1)
    PW_CASE(9, 1)
    PW_CASE(10, 1)
    PW_CASE(11, 1)
    PW_CASE(12, 1)
  default: break;
  }
}
static T256 void pw_nv2(int mr, bool tail, PW_ARGS) {
  switch (mr) {
    PW_CASE(1, 2)
    PW_CASE(2, 2)
    PW_CASE(3, 2)
    PW_CASE(4, 2)
    PW_CASE(5, 2)
    PW_CASE(6, 2)
  default: break;
  }
}
static T256 void pw_nv3(int mr, bool tail, PW_ARGS) {
  switch (mr) {
    PW_CASE(1, 3)
    PW_CASE(2, 3)
    PW_CASE(3, 3)
    PW_CASE(4, 3)
  default: break;
  }
}

/* Rows a tile of nv vectors takes at most (12 accumulators). */
static const int pw_rows_of[4] = {0, 12, 6, 4};

/* The register tile for P pixels by M channels: mr rows by nv vectors of
 * 8, the one that leaves the fewest unused slots in the last row and
 * column blocks (ties: the first, 6 x 2, whose 8 loads per 12 multiply-adds
 * leave the load ports room). 4 x 3 counts 5% less: its packed weight rows
 * of 96 bytes straddle cache lines every other row (1024 x 1024 on 14x14
 * ran at 87-88 GFLOP/s on it, 93-96 on 6 x 2, AVX2 on this AVX-512 Xeon). */
void nat_nhwc256_pw_tile(int64_t P, int64_t M, int *mr, int *nv) {
  static const int cand[][2] = {{6, 2}, {4, 3}, {12, 1}};
  static const double weight[] = {1.0, 0.95, 1.0};
  int64_t m8 = (M + 7) / 8;
  double best = -1;
  for (size_t i = 0; i < sizeof cand / sizeof cand[0]; i++) {
    int64_t r = cand[i][0], v = cand[i][1];
    double use = weight[i] * (double)P / (double)((P + r - 1) / r * r) *
                 ((double)m8 / (double)((m8 + v - 1) / v * v));
    if (use > best + 1e-9) best = use, *mr = (int)r, *nv = (int)v;
  }
}

/* GELU on a tile while it is in L1 (native_math.c's AVX2 table form). */
static void gelu_tile(float *y, int64_t ldy, int64_t rows, int64_t n) {
  nat_gelu256_tile(y, ldy, rows, n);
}

/* As native_nhwc512.c's: a panel of X stays in L2 while every channel
 * block's weights stream past it once. */
#define PW_PANEL_BYTES (384 * 1024)

T256 void nat_nhwc256_pw(const nat_nhwc *c, int64_t p0, int64_t p1, int64_t m0, int64_t m1) {
  __m256 lo = _mm256_set1_ps(c->lo), hi = _mm256_set1_ps(c->hi);
  int64_t K = c->C, M = c->M, bw = 8 * c->pw_nv;
  int rows = c->pw_mr;
  int64_t panel = nat_pw_panel(p1 - p0, K, m1 - m0, rows, PW_PANEL_BYTES);
  for (int64_t q0 = p0; q0 < p1; q0 += panel) {
    int64_t q1 = q0 + panel < p1 ? q0 + panel : p1;
    for (int64_t m = m0; m < m1; m += bw) {
      int64_t mc = m1 - m < bw ? m1 - m : bw;
      int nv = (int)((mc + 7) / 8), most = pw_rows_of[nv];
      bool tail = mc % 8 != 0;
      __m256i lm = nat_tail8(mc - 8 * (nv - 1));
      /* packed weights (wpk): blocks of K x bw, block m / bw at m * K */
      const float *w = c->wpk ? c->wpk + m * K : c->w + m, *b = c->b ? c->b + m : NULL;
      int64_t ldw = c->wpk ? bw : M;
      const float *next = c->wpk && m + bw < m1 ? w + bw * K : NULL;
      int64_t t = 0; /* tiles of this block so far */
      for (int64_t p = q0; p < q1; p += rows) {
        int mr = q1 - p < rows ? (int)(q1 - p) : rows;
        if (p + rows < q1)
          nat_pw_prefetch_out(c->y + (p + rows) * M + m, c->z ? c->z + (p + rows) * M + m : NULL, M,
                              q1 - p - rows < rows ? q1 - p - rows : rows, mc);
        for (int i = 0; i < mr; i += most, t++) { /* a tile never wider than its registers */
          int r = mr - i < most ? mr - i : most;
          const float *x = c->x + (p + i) * K, *z = c->z ? c->z + (p + i) * M + m : NULL;
          float *y = c->y + (p + i) * M + m;
          const float *wn = nat_pw_next(next, K, bw, t);
          switch (nv) {
          case 1: pw_nv1(r, tail, K, x, K, w, ldw, lm, b, z, y, M, lo, hi, wn); break;
          case 2: pw_nv2(r, tail, K, x, K, w, ldw, lm, b, z, y, M, lo, hi, wn); break;
          default: pw_nv3(r, tail, K, x, K, w, ldw, lm, b, z, y, M, lo, hi, wn); break;
          }
        }
        if (c->gelu) gelu_tile(c->y + p * M + m, M, mr, mc);
      }
    }
  }
}

/* ---- stem: small group-1 windows ---------------------------------------- */

/* Pixels [ow, ow + np) of output row (n, oh), all taps inside the row
 * horizontally, channels [m0, m0 + 8 nv) (the last vector through lm). */
INL T256 void stem_tile(const int np, const int nv, const nat_nhwc *c, int64_t n, int64_t oh,
                        int64_t ow, int64_t m0, __m256i lm, __m256 lo, __m256 hi) {
  int64_t M = c->M;
  __m256 acc[12][4];
  __m256i mk[4];
#pragma GCC unroll 4
  for (int j = 0; j < 4; j++) {
    if (j >= nv) break;
    mk[j] = j == nv - 1 ? lm : _mm256_set1_epi32(-1);
    __m256 b = c->b ? _mm256_maskload_ps(c->b + m0 + 8 * j, mk[j]) : _mm256_setzero_ps();
#pragma GCC unroll 12
    for (int i = 0; i < np; i++)
      acc[i][j] = b;
  }
  for (int64_t ki = 0; ki < c->kh; ki++) {
    int64_t ih = oh * c->sh - c->pt + ki;
    if (ih < 0 || ih >= c->H) continue;
    for (int64_t kj = 0; kj < c->kw; kj++) {
      const float *x = c->x + n * c->xs_n + ih * c->xs_h + (ow * c->sw - c->pl + kj) * c->xs_w;
      const float *w = c->w + (ki * c->kw + kj) * c->C * M + m0;
      for (int64_t ci = 0; ci < c->C; ci++) {
        __m256 wv[4];
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
          if (j < nv) wv[j] = _mm256_maskload_ps(w + ci * M + 8 * j, mk[j]);
        const float *xc = x + ci * c->xs_c;
#pragma GCC unroll 12
        for (int i = 0; i < np; i++) {
          __m256 xb = _mm256_broadcast_ss(xc + i * c->sw * c->xs_w);
#pragma GCC unroll 4
          for (int j = 0; j < 4; j++)
            if (j < nv) acc[i][j] = _mm256_fmadd_ps(xb, wv[j], acc[i][j]);
        }
      }
    }
  }
#pragma GCC unroll 12
  for (int i = 0; i < np; i++) {
    int64_t p = (n * c->OH + oh - c->y_r0) * c->OW + ow + i;
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
      if (j >= nv) break;
      __m256 v = acc[i][j];
      if (c->z) v = _mm256_add_ps(v, _mm256_maskload_ps(c->z + p * M + m0 + 8 * j, mk[j]));
      v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
      _mm256_maskstore_ps(c->y + p * M + m0 + 8 * j, mk[j], v);
    }
  }
}

/* One output pixel with bounds checks on every tap. */
static T256 void stem_pixel(const nat_nhwc *c, int64_t n, int64_t oh, int64_t ow, __m256 lo,
                            __m256 hi) {
  int64_t M = c->M, p = (n * c->OH + oh - c->y_r0) * c->OW + ow;
  for (int64_t m0 = 0; m0 < M; m0 += 8) {
    __m256i mk = nat_tail8(M - m0);
    __m256 acc = c->b ? _mm256_maskload_ps(c->b + m0, mk) : _mm256_setzero_ps();
    for (int64_t ki = 0; ki < c->kh; ki++) {
      int64_t ih = oh * c->sh - c->pt + ki;
      if (ih < 0 || ih >= c->H) continue;
      for (int64_t kj = 0; kj < c->kw; kj++) {
        int64_t iw = ow * c->sw - c->pl + kj;
        if (iw < 0 || iw >= c->W) continue;
        const float *x = c->x + n * c->xs_n + ih * c->xs_h + iw * c->xs_w;
        const float *w = c->w + (ki * c->kw + kj) * c->C * M + m0;
        for (int64_t ci = 0; ci < c->C; ci++)
          acc = _mm256_fmadd_ps(_mm256_set1_ps(x[ci * c->xs_c]), _mm256_maskload_ps(w + ci * M, mk),
                                acc);
      }
    }
    if (c->z) acc = _mm256_add_ps(acc, _mm256_maskload_ps(c->z + p * M + m0, mk));
    acc = _mm256_min_ps(_mm256_max_ps(acc, lo), hi);
    _mm256_maskstore_ps(c->y + p * M + m0, mk, acc);
  }
}

/* A stem tile with the pixel and vector counts as constants (np x nv at
 * most 12 accumulators: 12 x 1, 6 x 2, 4 x 3, 3 x 4). */
#define STEM_ARGS                                                                                  \
  const nat_nhwc *c, int nv, int64_t n, int64_t oh, int64_t ow, int64_t m0, __m256i lm, __m256 lo, \
      __m256 hi
#define STEM_PASS c, n, oh, ow, m0, lm, lo, hi
static T256 void stem_tiles(int np, STEM_ARGS) {
  switch (np * 8 + nv) {
  case 12 * 8 + 1: stem_tile(12, 1, STEM_PASS); break;
  case 6 * 8 + 1: stem_tile(6, 1, STEM_PASS); break;
  case 6 * 8 + 2: stem_tile(6, 2, STEM_PASS); break;
  case 4 * 8 + 1: stem_tile(4, 1, STEM_PASS); break;
  case 4 * 8 + 2: stem_tile(4, 2, STEM_PASS); break;
  case 4 * 8 + 3: stem_tile(4, 3, STEM_PASS); break;
  case 3 * 8 + 1: stem_tile(3, 1, STEM_PASS); break;
  case 3 * 8 + 2: stem_tile(3, 2, STEM_PASS); break;
  case 3 * 8 + 3: stem_tile(3, 3, STEM_PASS); break;
  case 3 * 8 + 4: stem_tile(3, 4, STEM_PASS); break;
  default: break;
  }
}

T256 void nat_nhwc256_stem(const nat_nhwc *c, int64_t r0, int64_t r1) {
  __m256 lo = _mm256_set1_ps(c->lo), hi = _mm256_set1_ps(c->hi);
  /* outputs whose taps all lie inside the row: [jl, jh) */
  int64_t S = c->sw, jl = (c->pl + S - 1) / S;
  int64_t jh = c->W - c->kw + c->pl >= 0 ? (c->W - c->kw + c->pl) / S + 1 : 0;
  if (jh > c->OW) jh = c->OW;
  if (jl > jh) jl = jh;
  static const int np_of[5] = {0, 12, 6, 4, 3};
  int64_t width = c->M < 32 ? c->M : 32;
  int np = np_of[(width + 7) / 8];
  for (int64_t r = r0; r < r1; r++) {
    int64_t n = r / c->OH, oh = r % c->OH;
    for (int64_t ow = 0; ow < c->OW;) {
      if (ow >= jl && ow + np <= jh) {
        for (int64_t m0 = 0; m0 < c->M; m0 += 32) {
          int64_t mc = c->M - m0 < 32 ? c->M - m0 : 32;
          int nv = (int)((mc + 7) / 8);
          stem_tiles(np, c, nv, n, oh, ow, m0, nat_tail8(mc - 8 * (nv - 1)), lo, hi);
        }
        ow += np;
      } else {
        stem_pixel(c, n, oh, ow, lo, hi);
        ow++;
      }
    }
  }
}

/* ---- 1x1 depthwise (a per-channel scale and shift) ------------------------ */

/* Output rows [r0, r1) of a 1x1 stride-1 unpadded depthwise conv (DenseNet's
 * BatchNormalization + Relu before each 1x1 conv): input and output pixels
 * are the same, so the rows are one run of pixels x C, each vector
 * y = clamp(x w + b + z) (the general kernel strode 8 pixels apart per
 * channel vector: 8% of DenseNet-121 at AVX2). */
T256 void nat_nhwc256_dw1(const nat_nhwc *c, int64_t r0, int64_t r1) {
  __m256 lo = _mm256_set1_ps(c->lo), hi = _mm256_set1_ps(c->hi);
  const int64_t C = c->C, P = (r1 - r0) * c->OW;
  const float *x = c->x + r0 * c->OW * C, *z = c->z ? c->z + r0 * c->OW * C : NULL;
  float *y = c->y + (r0 - c->y_r0) * c->OW * C;
  for (int64_t p = 0; p < P; p++, x += C, y += C, z = z ? z + C : NULL)
    for (int64_t k = 0; k < C; k += 8) {
      bool tl = C - k < 8;
      __m256i m = nat_tail8(C - k);
      __m256 b = c->b ? LD8(c->b + k, tl, m) : _mm256_setzero_ps();
      __m256 v = _mm256_fmadd_ps(LD8(x + k, tl, m), LD8(c->w + k, tl, m), b);
      if (z) v = _mm256_add_ps(v, LD8(z + k, tl, m));
      ST8(y + k, tl, m, _mm256_min_ps(_mm256_max_ps(v, lo), hi));
    }
}

#else

bool nat_nhwc256_available(void) { return false; }
void nat_nhwc256_pw_tile(int64_t P, int64_t M, int *mr, int *nv) { *mr = 6, *nv = 2; }
void nat_nhwc256_pw(const nat_nhwc *c, int64_t p0, int64_t p1, int64_t m0, int64_t m1) {}
void nat_nhwc256_stem(const nat_nhwc *c, int64_t r0, int64_t r1) {}

void nat_nhwc256_dw1(const nat_nhwc *c, int64_t r0, int64_t r1) {}
#endif
