/* Activations past the clamp of FusedConvNhwc's kernels, at the AVX2 and
 * AVX-512 levels: SiLU x / (1 + e^-x) (EfficientNet, MnasNet-like nets put
 * it after every expansion and depthwise conv) in one pass in registers,
 * where the general path (nat_act_f32: native_elt_act.c) makes three over
 * a block and divides. The reciprocal is rcp (rcp14) with one Newton step,
 * about 1e-7 relative. e^-x is capped at e^88, so 1 + e stays finite and
 * the result goes to -0 far below zero instead of NaN; NaN stays NaN. The
 * driver (native_nhwc.c) calls these on each slice while it is in cache. */
#include <stdint.h>

#include "backends/native/native.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "backends/native/native_avx2_math.h"
#include "backends/native/native_avx512.h"

NAT_INL256 __m256 silu8(__m256 v) {
  const __m256 one = _mm256_set1_ps(1.0f), two = _mm256_set1_ps(2.0f);
  __m256 neg = _mm256_min_ps(_mm256_sub_ps(_mm256_setzero_ps(), v), _mm256_set1_ps(88.0f));
  __m256 d = _mm256_add_ps(one, nat_exp8(neg)), r = _mm256_rcp_ps(d);
  r = _mm256_mul_ps(r, _mm256_fnmadd_ps(d, r, two));
  return _mm256_mul_ps(v, r);
}

NAT_T256 void nat_nhwc256_silu(float *x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(x + i, silu8(_mm256_loadu_ps(x + i)));
  if (i < n) {
    __m256i m = nat_tail8(n - i);
    _mm256_maskstore_ps(x + i, m, silu8(_mm256_maskload_ps(x + i, m)));
  }
}

__attribute__((target("avx512f,fma"))) void nat_nhwc512_silu(float *x, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f), two = _mm512_set1_ps(2.0f);
  const __m512 cap = _mm512_set1_ps(88.0f);
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = nat_tail16(n - i);
    __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    __m512 d =
        _mm512_add_ps(one, nat_exp16(_mm512_min_ps(_mm512_sub_ps(_mm512_setzero_ps(), v), cap)));
    __m512 r = _mm512_rcp14_ps(d);
    r = _mm512_mul_ps(r, _mm512_fnmadd_ps(d, r, two));
    _mm512_mask_storeu_ps(x + i, m, _mm512_mul_ps(v, r));
  }
}

#else

void nat_nhwc256_silu(float *x, int64_t n) {}
void nat_nhwc512_silu(float *x, int64_t n) {}

#endif
