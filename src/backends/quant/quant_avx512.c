/* AVX-512 tiles of the quantized matrix product. Each function carries its
 * own target attribute, so the library builds without -march flags and the
 * driver (quant_gemm.c) calls them only after checking the CPU at run time.
 *
 * A tile is up to QNT_MR rows of the activations times one panel of 64
 * output channels (4 zmm columns), accumulated in registers:
 *  - f32:  weights dequantized into a small panel buffer (int8: q*s + b;
 *          fp8: e4m3 -> fp16 bit pattern -> vcvtph2ps, exact), then FMA;
 *  - vnni: u8 activations (int8 + 128) x s8 weights with vpdpbusd into
 *          int32, corrected by 128 * sum(w) (and the zero point) at the end;
 *  - bf16: e4m3 activations and weights, both exact in bfloat16, with
 *          vdpbf16ps: products exact, sums in float. */
#include "backends/quant/quant.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "backends/common/simd512.h"

#define T_F32 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))
#define T_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2")))
#define T_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,avx2,f16c")))
#define T_BASE __attribute__((target("avx512f,avx2")))
#define INLINE static inline __attribute__((always_inline))

/* Valid-column mask of the j-th 16-wide vector of a panel with ncols. */
static inline __mmask16 col_mask(int ncols, int j) {
  int c = ncols - 16 * j;
  return c >= 16 ? (__mmask16)0xFFFF : c <= 0 ? (__mmask16)0 : (__mmask16)((1u << c) - 1);
}

/* Store v (+ c when acc, + bias) into the valid columns. */
INLINE T_BASE void store_out(float *c, __m512 v, __mmask16 m, bool acc, const float *bias) {
  if (!m) return;
  if (acc) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, c));
  if (bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, bias));
  _mm512_mask_storeu_ps(c, m, v);
}

/* 16 e4m3 codes -> floats times 2^-8: the code's low 7 bits shifted into an
 * fp16 exponent/mantissa are the same number scaled by 2^-8, subnormals
 * included, and vcvtph2ps converts fp16 exactly. */
INLINE T_BASE __m512 e4m3x16(__m128i c) {
  __m256i h = _mm256_cvtepu8_epi16(c);
  __m256i mag = _mm256_slli_epi16(_mm256_and_si256(h, _mm256_set1_epi16(0x7F)), 7);
  __m256i sgn = _mm256_slli_epi16(_mm256_and_si256(h, _mm256_set1_epi16(0x80)), 8);
  return _mm512_cvtph_ps(_mm256_or_si256(mag, sgn));
}

/* ---- layout changes around convolutions ---------------------------------- */

/* dst[c][r] = src[r][c] for an R x C matrix: 16 x 16 blocks transposed in
 * registers (ait_transpose16), scalar edges. */
T_F32 void qnt_x86_transpose(const float *src, int64_t R, int64_t C, int64_t lds, float *dst,
                             int64_t ldd) {
  int64_t R16 = R / 16 * 16, C16 = C / 16 * 16;
  for (int64_t r0 = 0; r0 < R16; r0 += 16)
    for (int64_t c0 = 0; c0 < C16; c0 += 16) {
      __m512 r[16];
      for (int i = 0; i < 16; i++)
        r[i] = _mm512_loadu_ps(src + (r0 + i) * lds + c0);
      ait_transpose16(r);
      for (int i = 0; i < 16; i++)
        _mm512_storeu_ps(dst + (c0 + i) * ldd + r0, r[i]);
    }
  for (int64_t r = 0; r < R; r++) /* the edges */
    for (int64_t c = r < R16 ? C16 : 0; c < C; c++)
      dst[c * ldd + r] = src[r * lds + c];
}

/* ---- weight-only: dequantized panel + float tile ---------------------- */

T_F32 void qnt_x86_dequant_panel(const qnt_weight *w, int64_t p, int64_t k0, int64_t kc,
                                 float *buf) {
  const uint8_t *src = w->codes + (p * w->K + k0) * QNT_PANEL;
  bool fp8 = w->type == QNT_FP8;
  int64_t g = k0 / w->gsize, gend = (g + 1) * w->gsize;
  __m512 s[4], b[4];
  for (int64_t k = 0; k < kc; k++) {
    if (k == 0 || k0 + k == gend) {
      if (k) g++, gend += w->gsize;
      const float *ps = w->pscale + (p * w->G + g) * QNT_PANEL;
      const float *pb = w->pbias + (p * w->G + g) * QNT_PANEL;
      for (int j = 0; j < 4; j++) {
        s[j] = _mm512_loadu_ps(ps + 16 * j);
        if (fp8) s[j] = _mm512_mul_ps(s[j], _mm512_set1_ps(256.0f));
        b[j] = _mm512_loadu_ps(pb + 16 * j);
      }
    }
    const uint8_t *row = src + k * QNT_PANEL;
    float *dst = buf + k * QNT_PANEL;
    for (int j = 0; j < 4; j++) {
      __m128i c = _mm_loadu_si128((const __m128i *)(row + 16 * j));
      __m512 v;
      if (fp8)
        v = _mm512_mul_ps(e4m3x16(c), s[j]);
      else
        v = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(c)), s[j], b[j]);
      _mm512_store_ps(dst + 16 * j, v);
    }
  }
}

INLINE T_F32 void tile_f32(const int mr, int64_t kc, const float *a, int64_t lda, const float *b,
                           float *c, int64_t ldc, int ncols, bool acc, const float *bias) {
  __m512 r[QNT_MR][4];
#pragma GCC unroll 6
  for (int i = 0; i < mr; i++)
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++)
      r[i][j] = _mm512_setzero_ps();
  for (int64_t k = 0; k < kc; k++) {
    const float *bk = b + k * QNT_PANEL;
    __m512 b0 = _mm512_load_ps(bk), b1 = _mm512_load_ps(bk + 16);
    __m512 b2 = _mm512_load_ps(bk + 32), b3 = _mm512_load_ps(bk + 48);
#pragma GCC unroll 6
    for (int i = 0; i < mr; i++) {
      __m512 av = _mm512_set1_ps(a[i * lda + k]);
      r[i][0] = _mm512_fmadd_ps(av, b0, r[i][0]);
      r[i][1] = _mm512_fmadd_ps(av, b1, r[i][1]);
      r[i][2] = _mm512_fmadd_ps(av, b2, r[i][2]);
      r[i][3] = _mm512_fmadd_ps(av, b3, r[i][3]);
    }
  }
#pragma GCC unroll 6
  for (int i = 0; i < mr; i++)
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++)
      store_out(c + i * ldc + 16 * j, r[i][j], col_mask(ncols, j), acc,
                bias ? bias + 16 * j : NULL);
}

T_F32 void qnt_x86_tile_f32(int mr, int64_t kc, const float *a, int64_t lda, const float *b,
                            float *c, int64_t ldc, int ncols, bool acc, const float *bias) {
  switch (mr) {
  case 1: tile_f32(1, kc, a, lda, b, c, ldc, ncols, acc, bias); break;
  case 2: tile_f32(2, kc, a, lda, b, c, ldc, ncols, acc, bias); break;
  case 3: tile_f32(3, kc, a, lda, b, c, ldc, ncols, acc, bias); break;
  case 4: tile_f32(4, kc, a, lda, b, c, ldc, ncols, acc, bias); break;
  case 5: tile_f32(5, kc, a, lda, b, c, ldc, ncols, acc, bias); break;
  default: tile_f32(6, kc, a, lda, b, c, ldc, ncols, acc, bias); break;
  }
}

/* Few rows: the weights are dequantized in registers as the product reads
 * them (no panel buffer), over the whole reduction axis. */
INLINE T_F32 void tile_wo(const int mr, const bool fp8, const qnt_weight *w, int64_t p,
                          const float *a, int64_t lda, float *c, int64_t ldc, int ncols,
                          const float *bias) {
  __m512 r[QNT_MR][4];
#pragma GCC unroll 6
  for (int i = 0; i < mr; i++)
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++)
      r[i][j] = _mm512_setzero_ps();
  const uint8_t *src = w->codes + p * w->K * QNT_PANEL;
  for (int64_t g = 0; g < w->G; g++) {
    const float *ps = w->pscale + (p * w->G + g) * QNT_PANEL;
    const float *pb = w->pbias + (p * w->G + g) * QNT_PANEL;
    __m512 s[4], b[4];
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
      s[j] = _mm512_loadu_ps(ps + 16 * j);
      if (fp8) s[j] = _mm512_mul_ps(s[j], _mm512_set1_ps(256.0f));
      b[j] = _mm512_loadu_ps(pb + 16 * j);
    }
    int64_t k1 = (g + 1) * w->gsize < w->K ? (g + 1) * w->gsize : w->K;
    for (int64_t k = g * w->gsize; k < k1; k++) {
      const uint8_t *row = src + k * QNT_PANEL;
      __m512 wv[4];
#pragma GCC unroll 4
      for (int j = 0; j < 4; j++) {
        __m128i q = _mm_loadu_si128((const __m128i *)(row + 16 * j));
        wv[j] = fp8 ? _mm512_mul_ps(e4m3x16(q), s[j])
                    : _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), s[j], b[j]);
      }
#pragma GCC unroll 6
      for (int i = 0; i < mr; i++) {
        __m512 av = _mm512_set1_ps(a[i * lda + k]);
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
          r[i][j] = _mm512_fmadd_ps(av, wv[j], r[i][j]);
      }
    }
  }
#pragma GCC unroll 6
  for (int i = 0; i < mr; i++)
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++)
      store_out(c + i * ldc + 16 * j, r[i][j], col_mask(ncols, j), false,
                bias ? bias + 16 * j : NULL);
}

T_F32 void qnt_x86_tile_wo(int mr, const qnt_weight *w, int64_t p, const float *a, int64_t lda,
                           float *c, int64_t ldc, int ncols, const float *bias) {
#define QNT_WO(n, f) tile_wo(n, f, w, p, a, lda, c, ldc, ncols, bias)
  if (w->type == QNT_FP8) {
    switch (mr) {
    case 1: QNT_WO(1, true); break;
    case 2: QNT_WO(2, true); break;
    case 3: QNT_WO(3, true); break;
    case 4: QNT_WO(4, true); break;
    case 5: QNT_WO(5, true); break;
    default: QNT_WO(6, true); break;
    }
  } else {
    switch (mr) {
    case 1: QNT_WO(1, false); break;
    case 2: QNT_WO(2, false); break;
    case 3: QNT_WO(3, false); break;
    case 4: QNT_WO(4, false); break;
    case 5: QNT_WO(5, false); break;
    default: QNT_WO(6, false); break;
    }
  }
#undef QNT_WO
}

/* ---- int8 x int8 on VNNI --------------------------------------------------- */

INLINE T_BASE float hmax_abs(const float *x, int64_t K) {
  __m512 m = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + 16 <= K; k += 16)
    m = _mm512_max_ps(m, _mm512_abs_ps(_mm512_loadu_ps(x + k)));
  if (k < K)
    m = _mm512_max_ps(
        m, _mm512_abs_ps(_mm512_maskz_loadu_ps((__mmask16)((1u << (K - k)) - 1), x + k)));
  return _mm512_reduce_max_ps(m);
}

/* max |x| and the sum of squares in one pass */
INLINE T_BASE float row_stats(const float *x, int64_t K, double *sumsq) {
  __m512 m = _mm512_setzero_ps(), q = _mm512_setzero_ps();
  for (int64_t k = 0; k < K; k += 16) {
    __mmask16 mk = K - k >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (K - k)) - 1);
    __m512 v = _mm512_maskz_loadu_ps(mk, x + k);
    m = _mm512_max_ps(m, _mm512_abs_ps(v));
    q = _mm512_fmadd_ps(v, v, q);
  }
  *sumsq = _mm512_reduce_add_ps(q);
  return _mm512_reduce_max_ps(m);
}

/* Indices of the elements with |x| > t, up to cap + 1 of them. */
INLINE T_BASE int collect_above(const float *x, int64_t K, float t, int32_t *idx, int cap) {
  __m512 tv = _mm512_set1_ps(t);
  int n = 0;
  for (int64_t k = 0; k < K && n <= cap; k += 16) {
    __mmask16 mk = K - k >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (K - k)) - 1);
    __m512 v = _mm512_abs_ps(_mm512_maskz_loadu_ps(mk, x + k));
    unsigned bits = (unsigned)_mm512_mask_cmp_ps_mask(mk, v, tv, _CMP_GT_OQ);
    for (; bits && n <= cap; bits &= bits - 1)
      idx[n++] = (int32_t)(k + __builtin_ctz(bits));
  }
  return n;
}

T_VNNI void qnt_x86_quant_rows_u8(const float *x, int64_t M, int64_t K, int64_t ldx, uint8_t *q,
                                  int64_t ldq, float *sa, const qnt_weight *w, int32_t *asum,
                                  float outliers, int32_t *oidx, float *ores, int32_t *ocnt) {
  for (int64_t m = 0; m < M; m++) {
    const float *xr = x + m * ldx;
    uint8_t *qr = q + m * ldq;
    double sumsq = 0;
    float amax = outliers > 0 ? row_stats(xr, K, &sumsq) : hmax_abs(xr, K), t = amax;
    int n = 0;
    int32_t idx[QNT_MAX_OUTLIERS + 1];
    if (outliers > 0 && (t = qnt_row_threshold(amax, sumsq, K, outliers)) < amax) {
      n = collect_above(xr, K, t, idx, QNT_MAX_OUTLIERS);
      if (n > QNT_MAX_OUTLIERS) { /* too many to add back: absmax */
        t = amax;
        n = 0;
      }
    }
    float s = t > 0 && t < 3.0e38f ? t / 127.0f : 1.0f;
    sa[m] = s;
    if (ocnt) { /* what the clipped codes miss */
      for (int o = 0; o < n; o++) {
        float v = xr[idx[o]];
        oidx[m * QNT_MAX_OUTLIERS + o] = idx[o];
        ores[m * QNT_MAX_OUTLIERS + o] = v - copysignf(127.0f * s, v);
      }
      ocnt[m] = n;
    }
    __m512 inv = _mm512_set1_ps(1.0f / s);
    __m512i off = _mm512_set1_epi32(128), lo = _mm512_set1_epi32(-127), hi = _mm512_set1_epi32(127);
    __m512i gsum = _mm512_setzero_si512();
    int64_t gend = w->gsize, g = 0;
    for (int64_t k = 0; k < K; k += 16) {
      __mmask16 mk = K - k >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (K - k)) - 1);
      __m512i v = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_maskz_loadu_ps(mk, xr + k), inv));
      v = _mm512_min_epi32(_mm512_max_epi32(v, lo), hi);
      if (asum) gsum = _mm512_add_epi32(gsum, v);
      _mm_mask_storeu_epi8(qr + k, mk, _mm512_cvtepi32_epi8(_mm512_add_epi32(v, off)));
      if (asum && (k + 16 >= gend || k + 16 >= K)) {
        asum[m * w->G + g++] = _mm512_reduce_add_epi32(gsum);
        gsum = _mm512_setzero_si512();
        gend += w->gsize;
      }
    }
    for (int64_t k = K; k < ldq; k++)
      qr[k] = 128; /* code 0: the padded weights are 0 too */
  }
}

T_VNNI void qnt_x86_outlier_fix(const uint8_t *b, int k4, float r, const float *sw,
                                const int8_t *zw, float *y, int ncols) {
  /* column c's code is byte k4 of 32-bit lane c: shift it to the top, then
   * back down with its sign */
  __m128i up = _mm_cvtsi32_si128(24 - 8 * k4);
  __m128i down = _mm_cvtsi32_si128(24);
  __m512 rv = _mm512_set1_ps(r);
  for (int c = 0; c < ncols; c += 16) {
    __mmask16 m = col_mask(ncols, c / 16);
    __m512i v = _mm512_loadu_si512(b + 4 * c);
    v = _mm512_sra_epi32(_mm512_sll_epi32(v, up), down);
    __m512 w = _mm512_cvtepi32_ps(v);
    if (zw)
      w = _mm512_sub_ps(w, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
                               _mm_maskz_loadu_epi8(m, (const __m128i *)(zw + c)))));
    w = _mm512_mul_ps(w, _mm512_maskz_loadu_ps(m, sw + c));
    _mm512_mask_storeu_ps(y + c, m, _mm512_fmadd_ps(rv, w, _mm512_maskz_loadu_ps(m, y + c)));
  }
}

/* One row of a VNNI tile: int32 sums minus 128 * sum(w) (the activations
 * were stored + 128) and the zero-point term, scaled, the row's outliers
 * and the residual added in registers, then stored (plain stores for whole vectors: the
 * epilogue reads them right back, and a masked store does not forward). */
INLINE T_VNNI void vnni_row(const __m512i *r, int i, float *c, int64_t ldc, int ncols, bool acc,
                            const qnt_vnni_post *q) {
  int cnt = q->ocnt ? q->ocnt[i] : 0;
  const int32_t *slot = cnt ? q->oslot + i * QNT_MAX_OUTLIERS : NULL;
  const float *res = cnt ? q->ores + i * QNT_MAX_OUTLIERS : NULL;
#pragma GCC unroll 4
  for (int j = 0; j < 4; j++) {
    __mmask16 m = col_mask(ncols, j); /* 0: nothing is stored */
    if (!m) continue;
    __m512i v = _mm512_sub_epi32(r[j], _mm512_slli_epi32(_mm512_loadu_si512(q->wsum + 16 * j), 7));
    if (q->zw) {
      __m512i z = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(q->zw + 16 * j)));
      v = _mm512_sub_epi32(v, _mm512_mullo_epi32(z, _mm512_set1_epi32(q->asum[i * q->asum_ld])));
    }
    __m512 s = _mm512_mul_ps(_mm512_loadu_ps(q->sw + 16 * j), _mm512_set1_ps(q->sa[i]));
    __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(v), s);
    float *ci = c + i * ldc + 16 * j;
    if (acc) f = _mm512_add_ps(f, _mm512_maskz_loadu_ps(m, ci));
    for (int o = 0; o < cnt; o++)
      if (slot[o] >= 0)
        f = _mm512_fmadd_ps(_mm512_set1_ps(res[o]),
                            _mm512_maskz_loadu_ps(m, q->wdq + slot[o] * q->ldw + 16 * j), f);
    if (q->bias) f = _mm512_add_ps(f, _mm512_maskz_loadu_ps(m, q->bias + 16 * j));
    if (q->z) f = _mm512_add_ps(f, _mm512_maskz_loadu_ps(m, q->z + i * q->ldz + 16 * j));
    if (m == (__mmask16)0xFFFF)
      _mm512_storeu_ps(ci, f);
    else
      _mm512_mask_storeu_ps(ci, m, f);
  }
}

/* vpdpbusd through asm: GCC 12 copies the accumulator around the intrinsic
 * and keeps an array of 24 accumulators in memory. */
#define QNT_DPBUSD(acc, a, b) __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b))

/* Named accumulators (rows 0..5 x columns 0..3); rows >= mr fold away. */
#define QNT_VROW(i)                                                                                \
  if (mr > i) {                                                                                    \
    int32_t a4;                                                                                    \
    memcpy(&a4, a + i * lda + 4 * k, sizeof a4);                                                   \
    __m512i av = _mm512_set1_epi32(a4);                                                            \
    QNT_DPBUSD(r##i[0], av, b0);                                                                   \
    QNT_DPBUSD(r##i[1], av, b1);                                                                   \
    QNT_DPBUSD(r##i[2], av, b2);                                                                   \
    QNT_DPBUSD(r##i[3], av, b3);                                                                   \
  }

INLINE T_VNNI void tile_vnni(const int mr, int64_t k4, const uint8_t *a, int64_t lda,
                             const uint8_t *b, float *c, int64_t ldc, int ncols, bool acc,
                             const qnt_vnni_post *post) {
  __m512i z = _mm512_setzero_si512();
  __m512i r0[4] = {z, z, z, z}, r1[4] = {z, z, z, z}, r2[4] = {z, z, z, z};
  __m512i r3[4] = {z, z, z, z}, r4[4] = {z, z, z, z}, r5[4] = {z, z, z, z};
  for (int64_t k = 0; k < k4; k++) {
    const uint8_t *bk = b + k * QNT_PANEL * 4;
    __m512i b0 = _mm512_loadu_si512(bk), b1 = _mm512_loadu_si512(bk + 64);
    __m512i b2 = _mm512_loadu_si512(bk + 128), b3 = _mm512_loadu_si512(bk + 192);
    QNT_VROW(0) QNT_VROW(1) QNT_VROW(2) QNT_VROW(3) QNT_VROW(4) QNT_VROW(5)
  }
  const __m512i *rows[6] = {r0, r1, r2, r3, r4, r5};
#pragma GCC unroll 6
  for (int i = 0; i < mr; i++)
    vnni_row(rows[i], i, c, ldc, ncols, acc, post);
}
#undef QNT_VROW

T_VNNI void qnt_x86_tile_vnni(int mr, int64_t k4, const uint8_t *a, int64_t lda, const uint8_t *b,
                              float *c, int64_t ldc, int ncols, bool acc,
                              const qnt_vnni_post *post) {
#define QNT_VNNI(n) tile_vnni(n, k4, a, lda, b, c, ldc, ncols, acc, post)
  switch (mr) {
  case 1: QNT_VNNI(1); break;
  case 2: QNT_VNNI(2); break;
  case 3: QNT_VNNI(3); break;
  case 4: QNT_VNNI(4); break;
  case 5: QNT_VNNI(5); break;
  default: QNT_VNNI(6); break;
  }
#undef QNT_VNNI
}

/* ---- fp8 x fp8 on AVX512-BF16 ------------------------------------------------ */

/* Round |v| <= 448 to the nearest e4m3 value, kept as a float. */
INLINE T_BF16 __m512 round_e4m3(__m512 v) {
  __m512i bits = _mm512_castps_si512(v);
  __m512i sign = _mm512_and_si512(bits, _mm512_set1_epi32((int)0x80000000u));
  __m512i a = _mm512_andnot_si512(_mm512_set1_epi32((int)0x80000000u), bits);
  __m512i odd = _mm512_and_si512(_mm512_srli_epi32(a, 20), _mm512_set1_epi32(1));
  __m512i r = _mm512_add_epi32(a, _mm512_add_epi32(_mm512_set1_epi32(0x7FFFF), odd));
  __m512 normal = _mm512_castsi512_ps(_mm512_and_si512(r, _mm512_set1_epi32((int)0xFFF00000u)));
  __m512 af = _mm512_castsi512_ps(a);
  __m512 sub = _mm512_mul_ps(
      _mm512_roundscale_ps(_mm512_mul_ps(af, _mm512_set1_ps(512.0f)), _MM_FROUND_TO_NEAREST_INT),
      _mm512_set1_ps(1.0f / 512.0f));
  __mmask16 tiny = _mm512_cmp_ps_mask(af, _mm512_set1_ps(0.015625f), _CMP_LT_OQ);
  __m512 res = _mm512_min_ps(_mm512_mask_blend_ps(tiny, normal, sub), _mm512_set1_ps(448.0f));
  return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(res), sign));
}

T_BF16 void qnt_x86_quant_rows_bf16(const float *x, int64_t M, int64_t K, int64_t ldx, uint16_t *q,
                                    int64_t ldq, float *sa) {
  for (int64_t m = 0; m < M; m++) {
    const float *xr = x + m * ldx;
    uint16_t *qr = q + m * ldq;
    float amax = hmax_abs(xr, K);
    float s = amax > 0 && amax < 3.0e38f ? amax / AIT_E4M3_MAX : 1.0f;
    sa[m] = s;
    __m512 inv = _mm512_set1_ps(1.0f / s);
    for (int64_t k = 0; k < K; k += 16) {
      __mmask16 mk = K - k >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (K - k)) - 1);
      __m512 v = round_e4m3(_mm512_mul_ps(_mm512_maskz_loadu_ps(mk, xr + k), inv));
      __m256bh h = _mm512_cvtneps_pbh(v);
      __m256i hi;
      memcpy(&hi, &h, sizeof hi);
      _mm256_mask_storeu_epi16(qr + k, mk, hi);
    }
    for (int64_t k = K; k < ldq; k++)
      qr[k] = 0;
  }
}

/* 32 e4m3 codes -> bfloat16 of the values times 2^-8 (exact: 4 significant
 * bits, exponents far from bfloat16's limits). */
INLINE T_BF16 __m512bh pair32(const uint8_t *src) {
  __m512 lo = e4m3x16(_mm_loadu_si128((const __m128i *)src));
  __m512 hi = e4m3x16(_mm_loadu_si128((const __m128i *)(src + 16)));
  return _mm512_cvtne2ps_pbh(hi, lo);
}

T_BF16 void qnt_x86_pair_panel(const qnt_weight *w, int64_t p, int64_t k0, int64_t kc,
                               uint16_t *buf) {
  int64_t K2 = (w->K + 1) / 2, t0 = k0 / 2, t1 = (k0 + kc + 1) / 2;
  const uint8_t *src = w->codes + (p * K2 + t0) * QNT_PANEL * 2;
  for (int64_t t = t0; t < t1; t++, src += QNT_PANEL * 2, buf += QNT_PANEL * 2)
    for (int q = 0; q < 4; q++) {
      __m512bh v = pair32(src + 32 * q);
      memcpy(buf + 32 * q, &v, sizeof v);
    }
}

/* b is a converted panel buffer (bf16) or, with `codes`, the packed e4m3
 * pairs themselves, converted here in registers. */
INLINE T_BF16 void tile_bf16(const int mr, const bool codes, int64_t k2, const uint16_t *a,
                             int64_t lda, const void *b, float *c, int64_t ldc, int ncols, bool acc,
                             const float *sa, const float *sw, const float *bias) {
  __m512 r[QNT_MR][4];
#pragma GCC unroll 6
  for (int i = 0; i < mr; i++)
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++)
      r[i][j] = _mm512_setzero_ps();
  for (int64_t t = 0; t < k2; t++) {
    __m512bh b0, b1, b2, b3;
    if (codes) {
      const uint8_t *bt = (const uint8_t *)b + t * QNT_PANEL * 2;
      b0 = pair32(bt), b1 = pair32(bt + 32), b2 = pair32(bt + 64), b3 = pair32(bt + 96);
    } else {
      const uint16_t *bt = (const uint16_t *)b + t * QNT_PANEL * 2;
      memcpy(&b0, bt, 64), memcpy(&b1, bt + 32, 64), memcpy(&b2, bt + 64, 64),
          memcpy(&b3, bt + 96, 64);
    }
#pragma GCC unroll 6
    for (int i = 0; i < mr; i++) {
      int32_t a2;
      memcpy(&a2, a + i * lda + 2 * t, sizeof a2);
      __m512i ai = _mm512_set1_epi32(a2);
      __m512bh av;
      memcpy(&av, &ai, sizeof av);
      r[i][0] = _mm512_dpbf16_ps(r[i][0], av, b0);
      r[i][1] = _mm512_dpbf16_ps(r[i][1], av, b1);
      r[i][2] = _mm512_dpbf16_ps(r[i][2], av, b2);
      r[i][3] = _mm512_dpbf16_ps(r[i][3], av, b3);
    }
  }
#pragma GCC unroll 4
  for (int j = 0; j < 4; j++) {
    __mmask16 m = col_mask(ncols, j); /* 0: nothing is stored */
    /* the weights were converted as value * 2^-8 */
    __m512 s = _mm512_mul_ps(_mm512_loadu_ps(sw + 16 * j), _mm512_set1_ps(256.0f));
#pragma GCC unroll 6
    for (int i = 0; i < mr; i++) {
      __m512 f = _mm512_mul_ps(r[i][j], _mm512_mul_ps(s, _mm512_set1_ps(sa[i])));
      float *ci = c + i * ldc + 16 * j;
      if (acc) f = _mm512_add_ps(f, _mm512_maskz_loadu_ps(m, ci));
      if (bias) f = _mm512_add_ps(f, _mm512_maskz_loadu_ps(m, bias + 16 * j));
      _mm512_mask_storeu_ps(ci, m, f);
    }
  }
}

T_BF16 void qnt_x86_tile_bf16(int mr, bool codes, int64_t k2, const uint16_t *a, int64_t lda,
                              const void *b, float *c, int64_t ldc, int ncols, bool acc,
                              const float *sa, const float *sw, const float *bias) {
#define QNT_BF16(n, cd) tile_bf16(n, cd, k2, a, lda, b, c, ldc, ncols, acc, sa, sw, bias)
  if (codes) {
    switch (mr) {
    case 1: QNT_BF16(1, true); break;
    case 2: QNT_BF16(2, true); break;
    case 3: QNT_BF16(3, true); break;
    case 4: QNT_BF16(4, true); break;
    case 5: QNT_BF16(5, true); break;
    default: QNT_BF16(6, true); break;
    }
  } else {
    switch (mr) {
    case 1: QNT_BF16(1, false); break;
    case 2: QNT_BF16(2, false); break;
    case 3: QNT_BF16(3, false); break;
    case 4: QNT_BF16(4, false); break;
    case 5: QNT_BF16(5, false); break;
    default: QNT_BF16(6, false); break;
    }
  }
#undef QNT_BF16
}

#else /* no x86-64: the driver never calls these (qnt_cpu_detect says no) */

void qnt_x86_dequant_panel(const qnt_weight *w, int64_t p, int64_t k0, int64_t kc, float *buf) {}
void qnt_x86_tile_f32(int mr, int64_t kc, const float *a, int64_t lda, const float *b, float *c,
                      int64_t ldc, int ncols, bool acc, const float *bias) {}
void qnt_x86_quant_rows_u8(const float *x, int64_t M, int64_t K, int64_t ldx, uint8_t *q,
                           int64_t ldq, float *sa, const qnt_weight *w, int32_t *asum,
                           float outliers, int32_t *oidx, float *ores, int32_t *ocnt) {}
void qnt_x86_tile_vnni(int mr, int64_t k4, const uint8_t *a, int64_t lda, const uint8_t *b,
                       float *c, int64_t ldc, int ncols, bool acc, const qnt_vnni_post *post) {}
void qnt_x86_outlier_fix(const uint8_t *b, int k4, float r, const float *sw, const int8_t *zw,
                         float *y, int ncols) {}
void qnt_x86_quant_rows_bf16(const float *x, int64_t M, int64_t K, int64_t ldx, uint16_t *q,
                             int64_t ldq, float *sa) {}
void qnt_x86_pair_panel(const qnt_weight *w, int64_t p, int64_t k0, int64_t kc, uint16_t *buf) {}
void qnt_x86_tile_bf16(int mr, bool codes, int64_t k2, const uint16_t *a, int64_t lda,
                       const void *b, float *c, int64_t ldc, int ncols, bool acc, const float *sa,
                       const float *sw, const float *bias) {}
void qnt_x86_tile_wo(int mr, const qnt_weight *w, int64_t p, const float *a, int64_t lda, float *c,
                     int64_t ldc, int ncols, const float *bias) {}
void qnt_x86_transpose(const float *src, int64_t R, int64_t C, int64_t lds, float *dst,
                       int64_t ldd) {}
#endif
