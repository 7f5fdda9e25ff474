/* AVX2+FMA helpers shared by native's 8-lane kernels (native_nhwc256.c,
 * native_gemv.c). Include only from x86-64 GCC/Clang code whose calling
 * functions have the avx2,fma target attribute. Names end in 8 (lanes). */
#ifndef AIT_BACKENDS_NATIVE_AVX2_H
#define AIT_BACKENDS_NATIVE_AVX2_H

#include <immintrin.h>
#include <stdint.h>

/* ---- avx2-kern: masks and reductions ---------------------------------------- */

/* The first n of 8 lanes as a maskload/maskstore mask (none for n <= 0,
 * all from 8). */
static inline __attribute__((always_inline, target("avx2"))) __m256i nat_tail8(int64_t n) {
  int32_t k = n >= 8 ? 8 : n <= 0 ? 0 : (int32_t)n;
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* The sum of 8 lanes. */
static inline __attribute__((always_inline, target("avx2"))) float nat_hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

/* ---- end avx2-kern ---------------------------------------------------------- */

#endif
