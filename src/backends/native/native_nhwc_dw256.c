/* FusedConvNhwc's depthwise convolutions of any window, stride and
 * dilation on AVX2+FMA (one channel per group; the 3x3 ones without
 * dilation run native_nhwc256.c's register-resident kernel). The driver
 * (native_nhwc.c) first copies the input into a zero-padded image, so
 * every tap of every output lies inside it and the loops have no border
 * case: per output row and vector of 8 channels, runs of 8, 4, 2 or 1
 * outputs accumulate tap by tap, each tap's weight vector loaded once for
 * the run (n + 1 loads per n multiply-adds: the FMA units, not the loads,
 * set the pace). Bias, residual and clamp before the store; the last
 * vector through a lane mask when C is not a multiple of 8. The AVX-512
 * twin is native_nhwc_dw512.c. */
#include <stdbool.h>
#include <stdint.h>

#include "backends/native/native.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "backends/native/native_avx2.h"

#define T256 __attribute__((target("avx2,fma")))
#define INL static inline __attribute__((always_inline))

#define LD8(p, tl, m) ((tl) ? _mm256_maskload_ps((p), (m)) : _mm256_loadu_ps(p))
#define ST8(p, tl, m, v)                                                                           \
  do {                                                                                             \
    if (tl)                                                                                        \
      _mm256_maskstore_ps((p), (m), (v));                                                          \
    else                                                                                           \
      _mm256_storeu_ps((p), (v));                                                                  \
  } while (0)

/* n outputs of one channel vector: x is the first tap of the first output
 * (padded input, row stride xr, pixel stride C), the outputs sw pixels
 * apart, taps dh rows and dw pixels apart. */
INL T256 void dwk_run(const int n, const bool tail, const nat_nhwc *c, const float *x, int64_t xr,
                      const float *w, __m256i m, __m256 bias, const float *z, __m256 lo, __m256 hi,
                      float *y) {
  const int64_t C = c->C, os = c->sw * C, ts = (c->dw > 0 ? c->dw : 1) * C;
  const int64_t rs = (c->dh > 0 ? c->dh : 1) * xr;
  __m256 acc[8];
#pragma GCC unroll 8
  for (int t = 0; t < n; t++)
    acc[t] = bias;
  for (int64_t ki = 0; ki < c->kh; ki++, x += rs) {
    const float *xk = x;
    for (int64_t kj = 0; kj < c->kw; kj++, xk += ts) {
      __m256 wv = LD8(w + (ki * c->kw + kj) * C, tail, m);
#pragma GCC unroll 8
      for (int t = 0; t < n; t++)
        acc[t] = _mm256_fmadd_ps(LD8(xk + t * os, tail, m), wv, acc[t]);
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < n; t++) {
    __m256 v = acc[t];
    if (z) v = _mm256_add_ps(v, LD8(z + t * C, tail, m));
    v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
    ST8(y + t * C, tail, m, v);
  }
}

#define DWK_ARGS                                                                                   \
  const nat_nhwc *c, const float *x, int64_t xr, const float *w, __m256i m, __m256 bias,           \
      const float *z, __m256 lo, __m256 hi, float *y
#define DWK_PASS c, x, xr, w, m, bias, z, lo, hi, y
static T256 void dwk_runs(int n, bool tail, DWK_ARGS) {
  switch (n * 2 + tail) {
  case 16: dwk_run(8, false, DWK_PASS); break;
  case 17: dwk_run(8, true, DWK_PASS); break;
  case 8: dwk_run(4, false, DWK_PASS); break;
  case 9: dwk_run(4, true, DWK_PASS); break;
  case 4: dwk_run(2, false, DWK_PASS); break;
  case 5: dwk_run(2, true, DWK_PASS); break;
  case 2: dwk_run(1, false, DWK_PASS); break;
  default: dwk_run(1, true, DWK_PASS); break;
  }
}

/* Output rows [r0, r1) (of N*OH): c->x is the padded input [N][H][W][C]
 * (c->H, c->W its padded sizes), every window inside it. */
T256 void nat_nhwc256_dwk(const nat_nhwc *c, int64_t r0, int64_t r1) {
  __m256 lo = _mm256_set1_ps(c->lo), hi = _mm256_set1_ps(c->hi);
  const int64_t C = c->C, W = c->W, OW = c->OW, xr = W * C;
  for (int64_t r = r0; r < r1; r++) {
    int64_t n = r / c->OH, oh = r % c->OH;
    const float *xrow = c->x + (n * c->H + oh * c->sh) * xr;
    float *yrow = c->y + (r - c->y_r0) * OW * C;
    const float *zrow = c->z ? c->z + r * OW * C : NULL;
    for (int64_t cb = 0; cb < C; cb += 8) {
      bool tail = C - cb < 8;
      __m256i m = nat_tail8(C - cb);
      __m256 bias = c->b ? LD8(c->b + cb, tail, m) : _mm256_setzero_ps();
      for (int64_t ow = 0; ow < OW;) {
        int64_t left = OW - ow;
        int run = left >= 8 ? 8 : left >= 4 ? 4 : left >= 2 ? 2 : 1;
        dwk_runs(run, tail, c, xrow + ow * c->sw * C + cb, xr, c->w + cb, m, bias,
                 zrow ? zrow + ow * C + cb : NULL, lo, hi, yrow + ow * C + cb);
        ow += run;
      }
    }
  }
}

#else

void nat_nhwc256_dwk(const nat_nhwc *c, int64_t r0, int64_t r1) {}

#endif
