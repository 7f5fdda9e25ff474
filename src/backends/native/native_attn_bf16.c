/* Attention's two products with bfloat16 operands and float sums
 * (AVX512-BF16's vdpbf16ps), for FusedAttention nodes marked `bf16` (set by
 * `native:attention=bf16` and by quant's dynamic presets; the tuner judges
 * such a candidate as reduced precision, like any other).
 *
 * vdpbf16ps multiplies pairs: each 32-bit lane of both operands holds two
 * bfloat16 values along the reduction, and a lane's two products are added
 * into its float accumulator. So both products pack their operands as
 * pairs along the reduction: the left one (Q rows, P rows) is row-major
 * already (adjacent elements form a pair), the right one (K, V) pairs two
 * reduction rows element by element, one 32-bit word per output column.
 * The tile is the SGEMM one: up to 6 rows x 64 columns in 24 accumulators,
 * fewer columns with more rows (head size 32: 12 x 32). Half the
 * instructions of the float products, and no packing by OpenBLAS for these
 * small matrices. Rounding is to nearest even, as AVX512-BF16 converts. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "backends/native/native.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "backends/native/native_avx512.h"

#define TBF __attribute__((target("avx512f,avx512bw,avx512bf16")))
#define INL static inline __attribute__((always_inline))

bool nat_attn_bf16_available(void) {
  return nat_isa() >= NAT_ISA_AVX512 && __builtin_cpu_supports("avx512bf16");
}

/* 16 floats of row r, columns c.. c+15 (< C), of a matrix with strides
 * (rs, cs); zeros past C or at r >= R. */
INL TBF __m512 load16(const float *x, int64_t rs, int64_t cs, int64_t R, int64_t C, int64_t r,
                      int64_t c) {
  if (r >= R) return _mm512_setzero_ps();
  __mmask16 m = nat_tail16(C - c);
  const float *p = x + r * rs + c * cs;
  if (cs == 1) return _mm512_maskz_loadu_ps(m, p);
  float t[16] = {0};
  for (int i = 0; i < 16; i++)
    if (m >> i & 1) t[i] = p[i * cs];
  return _mm512_loadu_ps(t);
}

TBF void nat_attn_bf16_pack_rows(const float *x, int64_t rs, int64_t cs, int64_t R, int64_t C,
                                 uint32_t *out, int64_t ldo) {
  int64_t C2 = (C + 1) / 2;
  for (int64_t r = 0; r < R; r++)
    for (int64_t c = 0; c < 2 * C2; c += 32) {
      __m512 lo = load16(x, rs, cs, R, C, r, c), hi = load16(x, rs, cs, R, C, r, c + 16);
      /* lanes 0..15 from lo, 16..31 from hi, in order: word w = (x[2w], x[2w+1]) */
      __m512i v = (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
      _mm512_mask_storeu_epi32(out + r * ldo + c / 2, nat_tail16(C2 - c / 2), v);
    }
}

TBF void nat_attn_bf16_pack_pairs(const float *x, int64_t rs, int64_t cs, int64_t R, int64_t C,
                                  uint32_t *out, int64_t ldo) {
  int64_t R2 = (R + 1) / 2;
  if (rs == 1 && cs != 1) {
    /* each column's pairs are adjacent floats (the keys of x K'): pack 16
     * columns as rows of words, then transpose them into place */
    for (int64_t c0 = 0; c0 < ldo; c0 += 16)
      for (int64_t p0 = 0; p0 < R2; p0 += 16) {
        __m512 w[16]; /* 32-bit words of bfloat16 pairs, moved as floats */
        for (int i = 0; i < 16; i++) {
          int64_t c = c0 + i;
          __m512 lo = load16(x, cs, 1, C, R, c, 2 * p0),
                 hi = load16(x, cs, 1, C, R, c, 2 * p0 + 16);
          w[i] = (__m512)_mm512_cvtne2ps_pbh(hi, lo);
        }
        ait_transpose16(w);
        for (int i = 0; i < 16 && p0 + i < R2; i++)
          _mm512_mask_storeu_epi32(out + (p0 + i) * ldo + c0, nat_tail16(ldo - c0), (__m512i)w[i]);
      }
    return;
  }
  /* (lane 2i, 2i+1) of the result = (a_i, b_i): a word per column */
  static const uint16_t order[32] = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
                                     8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  __m512i idx = _mm512_loadu_si512(order);
  for (int64_t p = 0; p < R2; p++)
    for (int64_t c = 0; c < ldo; c += 16) {
      __m512 a = load16(x, rs, cs, R, C, 2 * p, c), b = load16(x, rs, cs, R, C, 2 * p + 1, c);
      __m512i v = _mm512_permutexvar_epi16(idx, (__m512i)_mm512_cvtne2ps_pbh(b, a));
      _mm512_mask_storeu_epi32(out + p * ldo + c, nat_tail16(ldo - c), v);
    }
}

/* 16 mask values of row mr from column j: unit stride, one value for the
 * whole row (stride 0), or gathered */
INL TBF __m512 mask16(const float *mr, int64_t mcs, int64_t j, __mmask16 k) {
  if (mcs == 1) return _mm512_maskz_loadu_ps(k, mr + j);
  if (mcs == 0) return _mm512_maskz_mov_ps(k, _mm512_set1_ps(mr[0]));
  float t[16] = {0};
  for (int i = 0; i < 16; i++)
    if (k >> i & 1) t[i] = mr[(j + i) * mcs];
  return _mm512_loadu_ps(t);
}

/* exp for x <= 0 (scores minus their row max), to ~1e-6 relative: enough
 * for values rounded to bfloat16 next. Below -87 the result is ~1e-38
 * instead of 0; a NaN stays NaN (max keeps its second operand's NaN). */
INL TBF __m512 exp_neg(__m512 x) {
  __m512 z = _mm512_max_ps(_mm512_set1_ps(-87.0f), x);
  __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(z, _mm512_set1_ps(1.44269504088896341f)),
                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(0.693359375f), z);
  r = _mm512_fnmadd_ps(k, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 q = _mm512_set1_ps(8.3334519073e-3f); /* Taylor to r^5 on |r| <= ln2 / 2 */
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(4.1665795894e-2f));
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(1.6666665459e-1f));
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(5.0000001201e-1f));
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(_mm512_fmadd_ps(q, r, _mm512_set1_ps(1.0f)), k);
}

TBF void nat_attn_bf16_softmax(const float *s, int64_t rows, int64_t Sk, const float *m,
                               int64_t mrs, int64_t mcs, float *inv, uint32_t *pb, int64_t ldp) {
  int64_t S2 = (Sk + 1) / 2;
  for (int64_t i = 0; i < rows; i++) {
    const float *row = s + i * Sk, *mr = m ? m + i * mrs : NULL;
    __m512 mx = _mm512_set1_ps(-INFINITY);
    for (int64_t j = 0; j < Sk; j += 16) { /* max of scores + mask */
      __mmask16 k = nat_tail16(Sk - j);
      __m512 x = _mm512_maskz_loadu_ps(k, row + j);
      if (mr) x = _mm512_add_ps(x, mask16(mr, mcs, j, k));
      mx = _mm512_mask_max_ps(mx, k, mx, x);
    }
    __m512 top = _mm512_set1_ps(_mm512_reduce_max_ps(mx)), sum = _mm512_setzero_ps();
    for (int64_t j = 0; j < Sk; j += 32) { /* exp, sum, pairs of bfloat16 */
      __mmask16 k0 = nat_tail16(Sk - j), k1 = nat_tail16(Sk - j - 16);
      __m512 x0 = _mm512_maskz_loadu_ps(k0, row + j), x1 = _mm512_maskz_loadu_ps(k1, row + j + 16);
      if (mr) {
        x0 = _mm512_add_ps(x0, mask16(mr, mcs, j, k0));
        x1 = _mm512_add_ps(x1, mask16(mr, mcs, j + 16, k1));
      }
      __m512 e0 = _mm512_maskz_mov_ps(k0, exp_neg(_mm512_sub_ps(x0, top)));
      __m512 e1 = _mm512_maskz_mov_ps(k1, exp_neg(_mm512_sub_ps(x1, top)));
      sum = _mm512_add_ps(sum, _mm512_add_ps(e0, e1));
      _mm512_mask_storeu_epi32(pb + i * ldp + j / 2, nat_tail16(S2 - j / 2),
                               (__m512i)_mm512_cvtne2ps_pbh(e1, e0));
    }
    inv[i] = 1.0f / _mm512_reduce_add_ps(sum); /* applied to the output rows */
  }
}

/* c[i][0..16NV) (+ masked to ncols) = alpha * scale[i] * sum over k2 pairs;
 * rows past mr read row mr-1 and are not stored. */
#define DP(acc, a, b) acc = _mm512_dpbf16_ps(acc, (__m512bh)(a), (__m512bh)(b))
#define BF16_TILE(MR, NV)                                                                          \
  static TBF void tile_##MR##x##NV(int mr, int64_t k2, const uint32_t *a, int64_t lda,             \
                                   const uint32_t *b, int64_t ldb, float *c, int64_t ldc,          \
                                   int ncols, float alpha, const float *scale) {                   \
    __m512 acc[MR][NV];                                                                            \
    const uint32_t *ar[MR];                                                                        \
    _Pragma("GCC unroll 12") for (int i = 0; i < MR; i++) {                                        \
      ar[i] = a + (i < mr ? i : mr - 1) * lda;                                                     \
      _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) acc[i][v] = _mm512_setzero_ps();        \
    }                                                                                              \
    for (int64_t k = 0; k < k2; k++) {                                                             \
      __m512i bv[NV];                                                                              \
      _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) bv[v] =                                 \
          _mm512_loadu_si512(b + k * ldb + 16 * v);                                                \
      _Pragma("GCC unroll 12") for (int i = 0; i < MR; i++) {                                      \
        __m512i av = _mm512_set1_epi32((int)ar[i][k]);                                             \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) DP(acc[i][v], av, bv[v]);             \
      }                                                                                            \
    }                                                                                              \
    _Pragma("GCC unroll 12") for (int i = 0; i < MR; i++) {                                        \
      if (i >= mr) break;                                                                          \
      __m512 s = _mm512_set1_ps(scale ? alpha * scale[i] : alpha);                                 \
      _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) {                                       \
        __mmask16 m = nat_tail16(ncols - 16 * v);                                                  \
        float *ci = c + i * ldc + 16 * v;                                                          \
        if (m == (__mmask16)0xFFFF)                                                                \
          _mm512_storeu_ps(ci, _mm512_mul_ps(acc[i][v], s));                                       \
        else                                                                                       \
          _mm512_mask_storeu_ps(ci, m, _mm512_mul_ps(acc[i][v], s));                               \
      }                                                                                            \
    }                                                                                              \
  }
BF16_TILE(6, 4)
BF16_TILE(8, 3)
BF16_TILE(12, 2)
BF16_TILE(12, 1)
#undef BF16_TILE
#undef DP

TBF void nat_attn_bf16_gemm(const uint32_t *a, int64_t lda, const uint32_t *b, int64_t ldb,
                            int64_t k2, int64_t rows, int64_t ncols, float alpha,
                            const float *scale, float *c, int64_t ldc) {
  for (int64_t c0 = 0; c0 < ncols; c0 += 64) {
    int nc = (int)(ncols - c0 < 64 ? ncols - c0 : 64), nv = (nc + 15) / 16;
    int MR = nv == 4 ? 6 : nv == 3 ? 8 : 12;
    for (int64_t r = 0; r < rows; r += MR) {
      int mr = (int)(rows - r < MR ? rows - r : MR);
      const uint32_t *ai = a + r * lda;
      const float *sc = scale ? scale + r : NULL;
      float *ci = c + r * ldc + c0;
      switch (nv) {
      case 4: tile_6x4(mr, k2, ai, lda, b + c0, ldb, ci, ldc, nc, alpha, sc); break;
      case 3: tile_8x3(mr, k2, ai, lda, b + c0, ldb, ci, ldc, nc, alpha, sc); break;
      case 2: tile_12x2(mr, k2, ai, lda, b + c0, ldb, ci, ldc, nc, alpha, sc); break;
      default: tile_12x1(mr, k2, ai, lda, b + c0, ldb, ci, ldc, nc, alpha, sc); break;
      }
    }
  }
}

#else /* not x86-64 with GCC/Clang: never taken */

bool nat_attn_bf16_available(void) { return false; }
void nat_attn_bf16_pack_rows(const float *x, int64_t rs, int64_t cs, int64_t R, int64_t C,
                             uint32_t *out, int64_t ldo) {}
void nat_attn_bf16_pack_pairs(const float *x, int64_t rs, int64_t cs, int64_t R, int64_t C,
                              uint32_t *out, int64_t ldo) {}
void nat_attn_bf16_gemm(const uint32_t *a, int64_t lda, const uint32_t *b, int64_t ldb, int64_t k2,
                        int64_t rows, int64_t ncols, float alpha, const float *scale, float *c,
                        int64_t ldc) {}

#endif
