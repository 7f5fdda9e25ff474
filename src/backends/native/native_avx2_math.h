/* AVX2 + FMA helpers of native's math and attention kernels
 * (native_math.c, native_attn256.c): the eight-lane twins of
 * native_avx512.h's. Include only from x86-64 GCC/Clang code whose calling
 * functions carry the "avx2,fma" target attribute. AVX2 has no mask
 * registers: a tail is a vector of all-ones lanes for maskload/maskstore. */
#ifndef AIT_BACKENDS_NATIVE_AVX2_MATH_H
#define AIT_BACKENDS_NATIVE_AVX2_MATH_H

#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#define NAT_T256 __attribute__((target("avx2,fma")))
#define NAT_INL256 static inline __attribute__((always_inline, target("avx2,fma")))

/* The first n of 8 lanes as a maskload/maskstore mask (none for n <= 0,
 * all from 8): lane l is all ones when l < n. */
NAT_INL256 __m256i nat_tail8(int64_t n) {
  int32_t k = n >= 8 ? 8 : n <= 0 ? 0 : (int32_t)n;
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* Cephes' exp polynomial on z already clamped to [-87, 88]: 2^n built in
 * the exponent field (n + 127 stays in [1, 254] on that range). */
NAT_INL256 __m256 nat_exp8_poly(__m256 z) {
  __m256 k = _mm256_round_ps(_mm256_mul_ps(z, _mm256_set1_ps(1.44269504088896341f)),
                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(0.693359375f), z);
  r = _mm256_fnmadd_ps(k, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 q = _mm256_set1_ps(1.9875691500e-4f);
  q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(1.3981999507e-3f));
  q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(8.3334519073e-3f));
  q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(4.1665795894e-2f));
  q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(1.6666665459e-1f));
  q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(5.0000001201e-1f));
  __m256 e = _mm256_add_ps(_mm256_fmadd_ps(_mm256_mul_ps(q, r), r, r), _mm256_set1_ps(1.0f));
  __m256i p2 =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(e, _mm256_castsi256_ps(p2));
}

/* exp of eight lanes: about 1 ulp where it does not underflow; inf above
 * 88.7, 0 below -87.3, NaN stays (as nat_exp16). */
NAT_INL256 __m256 nat_exp8(__m256 in) {
  __m256 e = nat_exp8_poly(
      _mm256_min_ps(_mm256_max_ps(in, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f)));
  e = _mm256_blendv_ps(e, _mm256_set1_ps(INFINITY),
                       _mm256_cmp_ps(in, _mm256_set1_ps(88.7f), _CMP_GT_OQ));
  e = _mm256_blendv_ps(e, _mm256_setzero_ps(),
                       _mm256_cmp_ps(in, _mm256_set1_ps(-87.3f), _CMP_LT_OQ));
  return _mm256_blendv_ps(e, in, _mm256_cmp_ps(in, in, _CMP_UNORD_Q));
}

/* e^r for |r| <= ln 2 / 2 by a degree-5 minimax polynomial: relative
 * error 9.2e-8 in exact arithmetic, about 2 ulp in float (nat_exp8_fast,
 * nat_silu8). */
NAT_INL256 __m256 nat_exp8_fast_poly(__m256 r) {
  __m256 p = _mm256_set1_ps(8.2903029397e-3f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1897922754e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6667635739e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.9999150634e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(9.9999970198e-1f));
  return _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
}

/* 1.5 * 2^23 + 127: z log2 e plus this rounds to k = round(z log2 e) in
 * the low mantissa bits, as k + 127: shifted into the exponent field
 * they are 2^k (no round, no convert). */
#define NAT_EXP8_SHIFT 12583039.0f

/* e^z on z already clamped to [-87, 88], cheaper than nat_exp8_poly for
 * gates: k by the shifter, r = z - k ln 2 in two parts, e^r by
 * nat_exp8_fast_poly, 2^k from the shifter's bits. About 2 ulp; 12
 * operations against 17. No range or NaN fix-ups: the caller clamps. */
NAT_INL256 __m256 nat_exp8_fast(__m256 z) {
  const __m256 shift = _mm256_set1_ps(NAT_EXP8_SHIFT);
  __m256 t = _mm256_fmadd_ps(z, _mm256_set1_ps(1.44269504088896341f), shift);
  __m256 k = _mm256_sub_ps(t, shift);
  __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(0.693359375f), z);
  r = _mm256_fnmadd_ps(k, _mm256_set1_ps(-2.12194440e-4f), r);
  return _mm256_mul_ps(nat_exp8_fast_poly(r),
                       _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_castps_si256(t), 23)));
}

/* SiLU x / (1 + e^-x): x raised to -88 (max returns its second operand
 * for NaN: NaN stays), e^-x as nat_exp8_fast of x capped at 87 with the
 * negation folded into the FMAs and 1 + e^-x one FMA, the reciprocal by
 * rcp and one Newton step (about 1.4e-7 relative): 17 operations. Error
 * under 5 ulp (3.1e-7 relative); below -88 the result is 0 or the tiny
 * SiLU(-88) (-5e-37), -inf included; SiLU(inf) = inf. */
NAT_INL256 __m256 nat_silu8(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f), two = _mm256_set1_ps(2.0f);
  const __m256 shift = _mm256_set1_ps(NAT_EXP8_SHIFT);
  __m256 xm = _mm256_max_ps(_mm256_set1_ps(-88.0f), x);
  __m256 xc = _mm256_min_ps(xm, _mm256_set1_ps(87.0f));
  __m256 t = _mm256_fnmadd_ps(xc, _mm256_set1_ps(1.44269504088896341f), shift);
  __m256 k = _mm256_sub_ps(t, shift);                               /* round(-x log2 e) */
  __m256 r = _mm256_fnmsub_ps(k, _mm256_set1_ps(0.693359375f), xc); /* -x - k ln 2 */
  r = _mm256_fnmadd_ps(k, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 d =
      _mm256_fmadd_ps(nat_exp8_fast_poly(r),
                      _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_castps_si256(t), 23)), one);
  __m256 rc = _mm256_rcp_ps(d);
  rc = _mm256_mul_ps(rc, _mm256_fnmadd_ps(d, rc, two));
  return _mm256_mul_ps(xm, rc);
}

/* 1 / (1 + e^-x): exp of -|x| (never overflows), then e / (1 + e) for
 * negative x: no 1 - tiny cancellation, NaN stays. Error about 2 ulp. */
NAT_INL256 __m256 nat_sigmoid8(__m256 x) {
  const __m256 sign = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f);
  __m256 na = _mm256_or_ps(x, sign); /* -|x| */
  __m256 e = nat_exp8(na), r = _mm256_div_ps(one, _mm256_add_ps(one, e));
  /* x < 0: e / (1 + e); x >= 0: 1 / (1 + e) */
  return _mm256_blendv_ps(r, _mm256_mul_ps(e, r), x);
}

/* tanh x = sign(x) (1 - e) / (1 + e), e = e^-2|x|; for |x| < 0.0625 an
 * odd polynomial (Cephes' tanhf), where 1 - e would cancel. Error about
 * 2 ulp; tanh(+-inf) = +-1, NaN stays. */
NAT_INL256 __m256 nat_tanh8(__m256 x) {
  const __m256 sign = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f);
  __m256 a = _mm256_andnot_ps(sign, x);
  __m256 e = nat_exp8(_mm256_mul_ps(a, _mm256_set1_ps(-2.0f)));
  __m256 big = _mm256_div_ps(_mm256_sub_ps(one, e), _mm256_add_ps(one, e));
  __m256 z = _mm256_mul_ps(x, x);
  __m256 p = _mm256_set1_ps(-5.70498872745e-3f);
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(2.06390887954e-2f));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-5.37397155531e-2f));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(1.33314422036e-1f));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-3.33332819422e-1f));
  __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, z), x, x);
  __m256 r = _mm256_blendv_ps(big, small, _mm256_cmp_ps(a, _mm256_set1_ps(0.625f), _CMP_LT_OQ));
  r = _mm256_or_ps(_mm256_andnot_ps(sign, r), _mm256_and_ps(x, sign)); /* sign of x, -0 too */
  return _mm256_blendv_ps(r, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

/* erf: Abramowitz & Stegun 7.1.26 from |x| = 0.5 (absolute error 1.5e-7,
 * 3.8e-7 after float rounding), a Taylor polynomial below (4 ulp). */
NAT_INL256 __m256 nat_erf8(__m256 x) {
  const __m256 sign = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f);
  __m256 a = _mm256_andnot_ps(sign, x);
  __m256 t = _mm256_div_ps(one, _mm256_fmadd_ps(_mm256_set1_ps(0.3275911f), a, one));
  __m256 p = _mm256_set1_ps(1.061405429f);
  p = _mm256_fmsub_ps(p, t, _mm256_set1_ps(1.453152027f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.421413741f));
  p = _mm256_fmsub_ps(p, t, _mm256_set1_ps(0.284496736f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.254829592f));
  __m256 e = nat_exp8(_mm256_xor_ps(_mm256_mul_ps(a, a), sign));
  __m256 y = _mm256_fnmadd_ps(_mm256_mul_ps(p, t), e, one);
  y = _mm256_or_ps(_mm256_andnot_ps(sign, y), _mm256_and_ps(x, sign));
  /* |x| < 0.5: Taylor's x P(x^2) to x^13 (A&S's absolute error would be
   * large relative to erf there, and erf(0) not 0) */
  __m256 z = _mm256_mul_ps(x, x), s = _mm256_set1_ps(1.2055332981789664e-4f);
  s = _mm256_fmadd_ps(s, z, _mm256_set1_ps(-8.548325508299338e-4f));
  s = _mm256_fmadd_ps(s, z, _mm256_set1_ps(5.223977625442188e-3f));
  s = _mm256_fmadd_ps(s, z, _mm256_set1_ps(-2.6866170645131252e-2f));
  s = _mm256_fmadd_ps(s, z, _mm256_set1_ps(1.1283791670955126e-1f));
  s = _mm256_fmadd_ps(s, z, _mm256_set1_ps(-3.7612638903183754e-1f));
  s = _mm256_fmadd_ps(s, z, _mm256_set1_ps(1.1283791670955126f));
  y = _mm256_blendv_ps(y, _mm256_mul_ps(s, x), _mm256_cmp_ps(a, _mm256_set1_ps(0.5f), _CMP_LT_OQ));
  return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

/* Horizontal sum and maximum of eight lanes. */
NAT_INL256 float nat_hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

NAT_INL256 float nat_hmax8(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

/* r[i][j] = r[j][i] for 8 rows of 8 lanes: unpack pairs, then 64-bit
 * halves, then 128-bit lanes. */
NAT_INL256 void nat_transpose8(__m256 r[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int a = 0; a < 8; a += 4) {
    u[a] = _mm256_shuffle_ps(t[a], t[a + 2], 0x44);
    u[a + 1] = _mm256_shuffle_ps(t[a], t[a + 2], 0xEE);
    u[a + 2] = _mm256_shuffle_ps(t[a + 1], t[a + 3], 0x44);
    u[a + 3] = _mm256_shuffle_ps(t[a + 1], t[a + 3], 0xEE);
  }
  for (int c = 0; c < 4; c++) {
    r[c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x20);
    r[4 + c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x31);
  }
}

#endif
