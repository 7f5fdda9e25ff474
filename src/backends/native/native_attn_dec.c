/* Attention scores for a few query rows (a decoder step over its KV cache:
 * one new token a sequence): s[i][j] = alpha * q_i . k_j as dot products
 * along D, keys read row by row (k_j's D floats contiguous). The transposed
 * score tile of native_attn512.c / native_attn256.c puts query rows in the
 * vector lanes, which for one row leaves 15 of 16 (7 of 8) lanes idle; here
 * the lanes run along D and each key costs D / 16 (D / 8) multiply-adds and
 * one horizontal sum. The softmax and the product with V stay those
 * kernels' (nat_attn512_softmax / _values, rows of P). AVX-512 and AVX2+FMA
 * forms, picked by the caller's level. */
#include <stdint.h>

#include "backends/native/native.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "backends/native/native_avx2.h"
#include "backends/native/native_avx512.h"

__attribute__((target("avx512f,fma"))) void
nat_attn512_scores_rows(const float *q, int64_t ldq, int64_t rows, int64_t D, float alpha,
                        const float *k, int64_t kjs, int64_t Sk, float *s, int64_t lds) {
  const int64_t dfull = D / 16 * 16;
  const __mmask16 tail = nat_tail16(D - dfull);
  for (int64_t i = 0; i < rows; i++) {
    const float *qi = q + i * ldq;
    float *si = s + i * lds;
    int64_t j = 0;
    for (; j + 4 <= Sk; j += 4) {
      const float *k0 = k + j * kjs, *k1 = k0 + kjs, *k2 = k1 + kjs, *k3 = k2 + kjs;
      __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
      int64_t d = 0;
      for (; d < dfull; d += 16) {
        __m512 x = _mm512_loadu_ps(qi + d);
        a0 = _mm512_fmadd_ps(x, _mm512_loadu_ps(k0 + d), a0);
        a1 = _mm512_fmadd_ps(x, _mm512_loadu_ps(k1 + d), a1);
        a2 = _mm512_fmadd_ps(x, _mm512_loadu_ps(k2 + d), a2);
        a3 = _mm512_fmadd_ps(x, _mm512_loadu_ps(k3 + d), a3);
      }
      if (d < D) {
        __m512 x = _mm512_maskz_loadu_ps(tail, qi + d);
        a0 = _mm512_fmadd_ps(x, _mm512_maskz_loadu_ps(tail, k0 + d), a0);
        a1 = _mm512_fmadd_ps(x, _mm512_maskz_loadu_ps(tail, k1 + d), a1);
        a2 = _mm512_fmadd_ps(x, _mm512_maskz_loadu_ps(tail, k2 + d), a2);
        a3 = _mm512_fmadd_ps(x, _mm512_maskz_loadu_ps(tail, k3 + d), a3);
      }
      si[j] = alpha * _mm512_reduce_add_ps(a0);
      si[j + 1] = alpha * _mm512_reduce_add_ps(a1);
      si[j + 2] = alpha * _mm512_reduce_add_ps(a2);
      si[j + 3] = alpha * _mm512_reduce_add_ps(a3);
    }
    for (; j < Sk; j++) {
      const float *kj = k + j * kjs;
      __m512 a = _mm512_setzero_ps();
      for (int64_t d = 0; d < D; d += 16) {
        __mmask16 m = nat_tail16(D - d);
        a = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, qi + d), _mm512_maskz_loadu_ps(m, kj + d), a);
      }
      si[j] = alpha * _mm512_reduce_add_ps(a);
    }
  }
}

__attribute__((target("avx2,fma"))) void
nat_attn256_scores_rows(const float *q, int64_t ldq, int64_t rows, int64_t D, float alpha,
                        const float *k, int64_t kjs, int64_t Sk, float *s, int64_t lds) {
  const int64_t dfull = D / 8 * 8;
  const __m256i tail = nat_tail8(D - dfull);
  for (int64_t i = 0; i < rows; i++) {
    const float *qi = q + i * ldq;
    float *si = s + i * lds;
    int64_t j = 0;
    for (; j + 4 <= Sk; j += 4) {
      const float *k0 = k + j * kjs, *k1 = k0 + kjs, *k2 = k1 + kjs, *k3 = k2 + kjs;
      __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
      int64_t d = 0;
      for (; d < dfull; d += 8) {
        __m256 x = _mm256_loadu_ps(qi + d);
        a0 = _mm256_fmadd_ps(x, _mm256_loadu_ps(k0 + d), a0);
        a1 = _mm256_fmadd_ps(x, _mm256_loadu_ps(k1 + d), a1);
        a2 = _mm256_fmadd_ps(x, _mm256_loadu_ps(k2 + d), a2);
        a3 = _mm256_fmadd_ps(x, _mm256_loadu_ps(k3 + d), a3);
      }
      if (d < D) {
        __m256 x = _mm256_maskload_ps(qi + d, tail);
        a0 = _mm256_fmadd_ps(x, _mm256_maskload_ps(k0 + d, tail), a0);
        a1 = _mm256_fmadd_ps(x, _mm256_maskload_ps(k1 + d, tail), a1);
        a2 = _mm256_fmadd_ps(x, _mm256_maskload_ps(k2 + d, tail), a2);
        a3 = _mm256_fmadd_ps(x, _mm256_maskload_ps(k3 + d, tail), a3);
      }
      si[j] = alpha * nat_hsum8(a0);
      si[j + 1] = alpha * nat_hsum8(a1);
      si[j + 2] = alpha * nat_hsum8(a2);
      si[j + 3] = alpha * nat_hsum8(a3);
    }
    for (; j < Sk; j++) {
      const float *kj = k + j * kjs;
      __m256 a = _mm256_setzero_ps();
      for (int64_t d = 0; d < D; d += 8) {
        __m256i m = nat_tail8(D - d);
        a = _mm256_fmadd_ps(_mm256_maskload_ps(qi + d, m), _mm256_maskload_ps(kj + d, m), a);
      }
      si[j] = alpha * nat_hsum8(a);
    }
  }
}

#else

void nat_attn512_scores_rows(const float *q, int64_t ldq, int64_t rows, int64_t D, float alpha,
                             const float *k, int64_t kjs, int64_t Sk, float *s, int64_t lds) {
  (void)q, (void)ldq, (void)rows, (void)D, (void)alpha, (void)k, (void)kjs, (void)Sk, (void)s,
      (void)lds;
}
void nat_attn256_scores_rows(const float *q, int64_t ldq, int64_t rows, int64_t D, float alpha,
                             const float *k, int64_t kjs, int64_t Sk, float *s, int64_t lds) {
  nat_attn512_scores_rows(q, ldq, rows, D, alpha, k, kjs, Sk, s, lds);
}

#endif
