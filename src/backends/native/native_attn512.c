/* Attention's softmax and second product on AVX-512, for one block of
 * query rows of one (batch, head): the masked softmax in two passes (mask
 * and max, then exp and sum) with the normalisation left to the output
 * rows, and Y = P V for head sizes that are multiples of 16 up to 64
 * (BERT's 32 and 64) from a register tile with P broadcast from memory. At
 * these sizes (64 x 32 x 128) an SGEMM call spends much of its time
 * packing. (The scores Q Kᵀ stay on SGEMM: its small-matrix kernel handles
 * the transposed keys, and a register-tile version that transposed them
 * first measured no faster.) Compiled with per-function target attributes;
 * nat_attn512_available() says whether the CPU can run it. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "backends/native/native.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "backends/native/native_avx512.h"

#define T512 __attribute__((target("avx512f")))
#define INL static inline __attribute__((always_inline))

bool nat_attn512_available(void) { return __builtin_cpu_supports("avx512f"); }

/* y[i][0..16nv) = sum_k p[i][k] v[k][0..16nv) for mr rows */
INL T512 void pv_tile(int mr, int nv, int64_t Sk, const float *p, int64_t ldp, const float *v,
                      int64_t ldv, float *y, int64_t ldy, const float *scale) {
  __m512 acc[8][4];
#pragma GCC unroll 8
  for (int i = 0; i < 8; i++)
#pragma GCC unroll 4
    for (int c = 0; c < 4; c++)
      acc[i][c] = _mm512_setzero_ps();
  for (int64_t k = 0; k < Sk; k++) {
    const float *b = v + k * ldv;
    __m512 b0 = _mm512_loadu_ps(b), b1 = nv > 1 ? _mm512_loadu_ps(b + 16) : b0;
    __m512 b2 = nv > 2 ? _mm512_loadu_ps(b + 32) : b0, b3 = nv > 3 ? _mm512_loadu_ps(b + 48) : b0;
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++)
      if (i < mr) {
        __m512 a = _mm512_set1_ps(p[i * ldp + k]);
        acc[i][0] = _mm512_fmadd_ps(a, b0, acc[i][0]);
        if (nv > 1) acc[i][1] = _mm512_fmadd_ps(a, b1, acc[i][1]);
        if (nv > 2) acc[i][2] = _mm512_fmadd_ps(a, b2, acc[i][2]);
        if (nv > 3) acc[i][3] = _mm512_fmadd_ps(a, b3, acc[i][3]);
      }
  }
#pragma GCC unroll 8
  for (int i = 0; i < 8; i++)
    if (i < mr)
#pragma GCC unroll 4
      for (int c = 0; c < 4; c++)
        if (c < nv)
          _mm512_storeu_ps(y + i * ldy + 16 * c,
                           scale ? _mm512_mul_ps(acc[i][c], _mm512_set1_ps(scale[i])) : acc[i][c]);
}

T512 void nat_attn512_softmax(float *s, int64_t rows, int64_t Sk, const float *m, int64_t mrs,
                              int64_t mcs, float *inv) {
  for (int64_t i = 0; i < rows; i++) {
    float *row = s + i * Sk;
    const float *mr = m ? m + i * mrs : NULL;
    __m512 mx = _mm512_set1_ps(-INFINITY);
    for (int64_t j = 0; j < Sk; j += 16) { /* mask added, max taken: one pass */
      __mmask16 k = nat_tail16(Sk - j);
      __m512 x = _mm512_maskz_loadu_ps(k, row + j);
      if (mr && mcs == 1)
        x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(k, mr + j));
      else if (mr)
        for (int64_t c = j; c < j + 16 && c < Sk; c++)
          row[c] += mr[c * mcs];
      if (mr && mcs != 1) x = _mm512_maskz_loadu_ps(k, row + j);
      _mm512_mask_storeu_ps(row + j, k, x);
      mx = _mm512_mask_max_ps(mx, k, mx, x);
    }
    __m512 top = _mm512_set1_ps(_mm512_reduce_max_ps(mx)), sum = _mm512_setzero_ps();
    for (int64_t j = 0; j < Sk; j += 16) { /* exp and sum: a second pass */
      __mmask16 k = nat_tail16(Sk - j);
      __m512 e = nat_exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, row + j), top));
      _mm512_mask_storeu_ps(row + j, k, e);
      sum = _mm512_mask_add_ps(sum, k, sum, e);
    }
    inv[i] = 1.0f / _mm512_reduce_add_ps(sum); /* applied to the output rows */
  }
}

T512 void nat_attn512_values(const float *p, int64_t rows, int64_t Sk, const float *v, int64_t ldv,
                             int64_t Dv, float *y, int64_t ldy, const float *scale) {
  int nv = (int)(Dv / 16);
  /* rows per tile: 8 x 4 accumulators would take all 32 vector registers
   * and spill the loaded V rows and the broadcast (Dv = 64: P V ran slower
   * than SGEMM's Q K^T); 6 x 4 leaves room */
  int step = nv == 4 ? 6 : 8;
  for (int64_t i = 0; i < rows; i += step) {
    int mr = (int)(rows - i < step ? rows - i : step);
    const float *pi = p + i * Sk, *sc = scale ? scale + i : NULL;
    float *yi = y + i * ldy;
    switch (mr) {
    case 1: pv_tile(1, nv, Sk, pi, Sk, v, ldv, yi, ldy, sc); break;
    case 2: pv_tile(2, nv, Sk, pi, Sk, v, ldv, yi, ldy, sc); break;
    case 3: pv_tile(3, nv, Sk, pi, Sk, v, ldv, yi, ldy, sc); break;
    case 4: pv_tile(4, nv, Sk, pi, Sk, v, ldv, yi, ldy, sc); break;
    case 5: pv_tile(5, nv, Sk, pi, Sk, v, ldv, yi, ldy, sc); break;
    case 6: pv_tile(6, nv, Sk, pi, Sk, v, ldv, yi, ldy, sc); break;
    case 7: pv_tile(7, nv, Sk, pi, Sk, v, ldv, yi, ldy, sc); break;
    default: pv_tile(8, nv, Sk, pi, Sk, v, ldv, yi, ldy, sc); break;
    }
  }
}

#else /* not x86-64 with GCC/Clang: never taken */

bool nat_attn512_available(void) { return false; }
void nat_attn512_values(const float *p, int64_t rows, int64_t Sk, const float *v, int64_t ldv,
                        int64_t Dv, float *y, int64_t ldy, const float *scale) {}
void nat_attn512_softmax(float *s, int64_t rows, int64_t Sk, const float *m, int64_t mrs,
                         int64_t mcs, float *inv) {}

#endif
