/* AVX-512 helpers shared by native's kernels (native_math.c,
 * native_attn512.c, native_attn_bf16.c, native_nhwc512.c); what other
 * backends share too lives in backends/common/simd512.h. Include only from x86-64
 * GCC/Clang code compiled with the avx512f target attribute on the calling function. */
#ifndef AIT_BACKENDS_NATIVE_AVX512_H
#define AIT_BACKENDS_NATIVE_AVX512_H

#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "backends/common/simd512.h"

/* The first n of 16 lanes (none for n <= 0, all from 16). */
static inline __mmask16 nat_tail16(int64_t n) {
  return n >= 16 ? (__mmask16)0xFFFF : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1);
}

/* Cephes' exp polynomial on z already clamped to [-87, 88]: 2^n by scalef. */
static inline __attribute__((always_inline, target("avx512f"))) __m512 nat_exp16_poly(__m512 z) {
  __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(z, _mm512_set1_ps(1.44269504088896341f)),
                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(0.693359375f), z);
  r = _mm512_fnmadd_ps(k, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 q = _mm512_set1_ps(1.9875691500e-4f);
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(1.3981999507e-3f));
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(8.3334519073e-3f));
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(4.1665795894e-2f));
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(1.6666665459e-1f));
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(5.0000001201e-1f));
  __m512 e = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(q, r), r, r), _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(e, k);
}

/* exp of sixteen lanes: about 1 ulp where it does not underflow; inf above
 * 88.7, 0 below -87.3, NaN stays. */
static inline __attribute__((always_inline, target("avx512f"))) __m512 nat_exp16(__m512 in) {
  __m512 e = nat_exp16_poly(
      _mm512_min_ps(_mm512_max_ps(in, _mm512_set1_ps(-87.0f)), _mm512_set1_ps(88.0f)));
  e = _mm512_mask_mov_ps(e, _mm512_cmp_ps_mask(in, _mm512_set1_ps(88.7f), _CMP_GT_OQ),
                         _mm512_set1_ps(INFINITY));
  e = _mm512_mask_mov_ps(e, _mm512_cmp_ps_mask(in, _mm512_set1_ps(-87.3f), _CMP_LT_OQ),
                         _mm512_setzero_ps());
  return _mm512_mask_mov_ps(e, _mm512_cmp_ps_mask(in, in, _CMP_UNORD_Q), in);
}

/* e^r for |r| <= ln 2 / 2: native_avx2_math.h's nat_exp8_fast_poly on
 * sixteen lanes. */
static inline __attribute__((always_inline, target("avx512f"))) __m512
nat_exp16_fast_poly(__m512 r) {
  __m512 p = _mm512_set1_ps(8.2903029397e-3f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1897922754e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6667635739e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.9999150634e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(9.9999970198e-1f));
  return _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
}

/* e^z on z already clamped to [-87, 88], the sixteen-lane twin of
 * native_avx2_math.h's nat_exp8_fast (k by the 1.5 * 2^23 shifter, a
 * degree-5 minimax polynomial, about 2 ulp; 2^k by scalef). No range or
 * NaN fix-ups: the caller clamps. */
static inline __attribute__((always_inline, target("avx512f"))) __m512 nat_exp16_fast(__m512 z) {
  const __m512 shift = _mm512_set1_ps(12582912.0f); /* 1.5 * 2^23 */
  __m512 k = _mm512_sub_ps(_mm512_fmadd_ps(z, _mm512_set1_ps(1.44269504088896341f), shift), shift);
  __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(0.693359375f), z);
  r = _mm512_fnmadd_ps(k, _mm512_set1_ps(-2.12194440e-4f), r);
  return _mm512_scalef_ps(nat_exp16_fast_poly(r), k);
}

/* SiLU x / (1 + e^-x), nat_silu8's twin (the negation folded into the
 * FMAs, 2^k by scalef, rcp14 and one Newton step: under 4 ulp). */
static inline __attribute__((always_inline, target("avx512f"))) __m512 nat_silu16(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.0f), two = _mm512_set1_ps(2.0f);
  const __m512 shift = _mm512_set1_ps(12582912.0f);
  __m512 xm = _mm512_max_ps(_mm512_set1_ps(-88.0f), x);
  __m512 xc = _mm512_min_ps(xm, _mm512_set1_ps(87.0f));
  __m512 k =
      _mm512_sub_ps(_mm512_fnmadd_ps(xc, _mm512_set1_ps(1.44269504088896341f), shift), shift);
  __m512 r = _mm512_fnmsub_ps(k, _mm512_set1_ps(0.693359375f), xc); /* -x - k ln 2 */
  r = _mm512_fnmadd_ps(k, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 d = _mm512_add_ps(one, _mm512_scalef_ps(nat_exp16_fast_poly(r), k));
  __m512 rc = _mm512_rcp14_ps(d);
  rc = _mm512_mul_ps(rc, _mm512_fnmadd_ps(d, rc, two));
  return _mm512_mul_ps(xm, rc);
}

/* exp of sixteen lanes known to be finite and <= 0 (GELU's -x^2 / 2 after
 * clamping): no range or NaN fix-ups; below -87 it returns e^-87 (~1.6e-38)
 * instead of 0. */
static inline __attribute__((always_inline, target("avx512f"))) __m512 nat_exp16_nonpos(__m512 in) {
  return nat_exp16_poly(_mm512_max_ps(in, _mm512_set1_ps(-87.0f)));
}

#endif
