/* FusedConvNhwc's depthwise convolutions of any window, stride and
 * dilation on AVX-512: native_nhwc_dw256.c's design (see there) on vectors
 * of 16 channels, runs of up to 16 outputs. */
#include <stdbool.h>
#include <stdint.h>

#include "backends/native/native.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "backends/native/native_avx512.h"

#define T512 __attribute__((target("avx512f,fma")))
#define INL static inline __attribute__((always_inline))

INL T512 void dwk_run(const int n, const nat_nhwc *c, const float *x, int64_t xr, const float *w,
                      __mmask16 m, __m512 bias, const float *z, __m512 lo, __m512 hi, float *y) {
  const int64_t C = c->C, os = c->sw * C, ts = (c->dw > 0 ? c->dw : 1) * C;
  const int64_t rs = (c->dh > 0 ? c->dh : 1) * xr;
  __m512 acc[16];
#pragma GCC unroll 16
  for (int t = 0; t < n; t++)
    acc[t] = bias;
  for (int64_t ki = 0; ki < c->kh; ki++, x += rs) {
    const float *xk = x;
    for (int64_t kj = 0; kj < c->kw; kj++, xk += ts) {
      __m512 wv = _mm512_maskz_loadu_ps(m, w + (ki * c->kw + kj) * C);
#pragma GCC unroll 16
      for (int t = 0; t < n; t++)
        acc[t] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, xk + t * os), wv, acc[t]);
    }
  }
#pragma GCC unroll 16
  for (int t = 0; t < n; t++) {
    __m512 v = acc[t];
    if (z) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, z + t * C));
    v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
    _mm512_mask_storeu_ps(y + t * C, m, v);
  }
}

#define DWK_ARGS                                                                                   \
  const nat_nhwc *c, const float *x, int64_t xr, const float *w, __mmask16 m, __m512 bias,         \
      const float *z, __m512 lo, __m512 hi, float *y
#define DWK_PASS c, x, xr, w, m, bias, z, lo, hi, y
static T512 void dwk_runs(int n, DWK_ARGS) {
  switch (n) {
  case 16: dwk_run(16, DWK_PASS); break;
  case 8: dwk_run(8, DWK_PASS); break;
  case 4: dwk_run(4, DWK_PASS); break;
  case 2: dwk_run(2, DWK_PASS); break;
  default: dwk_run(1, DWK_PASS); break;
  }
}

T512 void nat_nhwc512_dwk(const nat_nhwc *c, int64_t r0, int64_t r1) {
  __m512 lo = _mm512_set1_ps(c->lo), hi = _mm512_set1_ps(c->hi);
  const int64_t C = c->C, W = c->W, OW = c->OW, xr = W * C;
  for (int64_t r = r0; r < r1; r++) {
    int64_t n = r / c->OH, oh = r % c->OH;
    const float *xrow = c->x + (n * c->H + oh * c->sh) * xr;
    float *yrow = c->y + (r - c->y_r0) * OW * C;
    const float *zrow = c->z ? c->z + r * OW * C : NULL;
    for (int64_t cb = 0; cb < C; cb += 16) {
      __mmask16 m = nat_tail16(C - cb);
      __m512 bias = c->b ? _mm512_maskz_loadu_ps(m, c->b + cb) : _mm512_setzero_ps();
      for (int64_t ow = 0; ow < OW;) {
        int64_t left = OW - ow;
        int run = left >= 16 ? 16 : left >= 8 ? 8 : left >= 4 ? 4 : left >= 2 ? 2 : 1;
        dwk_runs(run, c, xrow + ow * c->sw * C + cb, xr, c->w + cb, m, bias,
                 zrow ? zrow + ow * C + cb : NULL, lo, hi, yrow + ow * C + cb);
        ow += run;
      }
    }
  }
}

#else

void nat_nhwc512_dwk(const nat_nhwc *c, int64_t r0, int64_t r1) {}

#endif
