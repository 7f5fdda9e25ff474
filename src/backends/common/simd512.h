/* AVX-512 helpers every backend's kernels may share (native's, quant's).
 * Include only from x86-64 GCC/Clang code compiled with the avx512f target
 * attribute on the calling function. */
#ifndef AIT_BACKENDS_COMMON_SIMD512_H
#define AIT_BACKENDS_COMMON_SIMD512_H

#include <immintrin.h>

/* r[i][j] = r[j][i] for 16 rows of 16 lanes (any 32-bit data): unpack
 * pairs, then 64-bit halves, then 128-bit lanes twice. */
static inline __attribute__((always_inline, target("avx512f"))) void ait_transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int a = 0; a < 16; a += 4) { /* r[a + c]: column 4L + c of rows a..a+3 */
    r[a] = _mm512_shuffle_ps(t[a], t[a + 2], 0x44);
    r[a + 1] = _mm512_shuffle_ps(t[a], t[a + 2], 0xEE);
    r[a + 2] = _mm512_shuffle_ps(t[a + 1], t[a + 3], 0x44);
    r[a + 3] = _mm512_shuffle_ps(t[a + 1], t[a + 3], 0xEE);
  }
  for (int c = 0; c < 4; c++) {
    t[c] = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x88);
    t[4 + c] = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xDD);
    t[8 + c] = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x88);
    t[12 + c] = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xDD);
  }
  for (int c = 0; c < 4; c++) {
    r[c] = _mm512_shuffle_f32x4(t[c], t[8 + c], 0x88);
    r[8 + c] = _mm512_shuffle_f32x4(t[c], t[8 + c], 0xDD);
    r[4 + c] = _mm512_shuffle_f32x4(t[4 + c], t[12 + c], 0x88);
    r[12 + c] = _mm512_shuffle_f32x4(t[4 + c], t[12 + c], 0xDD);
  }
}

#endif
