/* The recurrent product at both vector widths, from one template
 * (native_rnn_tile_tmpl.h): AVX-512 holds 8 rows x 2 panels in 16 zmm
 * accumulators, so at batch 8 R streams once a step; AVX2 4 rows x 1 panel
 * in 8 ymm (its 16 registers hold no more; 6 rows measured no faster, R
 * still streaming twice at batch 8). At batch 8 this product is most of a
 * GRU/LSTM step (gru_seq: 256 x 768 per step and layer). */
#include <stdint.h>
#include <string.h>

#include "backends/native/native_rnn.h"

#if defined(RNN_HAVE_AVX2)

#define RT_FN nat_rnn_product512
#define RT_TARGET __attribute__((target("avx512f,fma")))
#define RT_V __m512
#define RT_VW 16
#define RT_VPP 1
#define RT_MR 8
#define RT_NPB 2
#define RT_NPS 4
#define RT_NP1 4
#define RT_LOAD(p) _mm512_loadu_ps(p)
#define RT_SET1(x) _mm512_set1_ps(x)
#define RT_ZERO() _mm512_setzero_ps()
#define RT_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define RT_STORE(p, v, n)                                                                          \
  _mm512_mask_storeu_ps(p, (n) >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n)) - 1u), v)
#include "backends/native/native_rnn_tile_tmpl.h"
#undef RT_FN
#undef RT_TARGET
#undef RT_V
#undef RT_VW
#undef RT_VPP
#undef RT_MR
#undef RT_NPB
#undef RT_NPS
#undef RT_NP1
#undef RT_LOAD
#undef RT_SET1
#undef RT_ZERO
#undef RT_FMA
#undef RT_STORE

/* n floats of v to p (n < 8 through a buffer: AVX2 has no masked store of
 * a count) */
static inline __attribute__((always_inline, target("avx2,fma"))) void store8(float *p, __m256 v,
                                                                             int64_t n) {
  if (n >= 8) {
    _mm256_storeu_ps(p, v);
    return;
  }
  float t[8];
  _mm256_storeu_ps(t, v);
  memcpy(p, t, sizeof(float) * (size_t)n);
}

#define RT_FN nat_rnn_product256
#define RT_TARGET __attribute__((target("avx2,fma")))
#define RT_V __m256
#define RT_VW 8
#define RT_VPP 2
#define RT_MR 4
#define RT_NPB 1
#define RT_NPS 2
#define RT_NP1 4
#define RT_LOAD(p) _mm256_loadu_ps(p)
#define RT_SET1(x) _mm256_set1_ps(x)
#define RT_ZERO() _mm256_setzero_ps()
#define RT_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define RT_STORE(p, v, n) store8(p, v, n)
#include "backends/native/native_rnn_tile_tmpl.h"

#endif
