/* AVX2 tiles of the quantized matrix product, for CPUs without AVX-512 (AMD
 * Zen 2/3, Intel client parts) and for runs at native's AVX2 level. Each
 * function carries its own target attribute; the driver (quant_gemm.c)
 * calls them only when the state's level and the CPU allow.
 *
 * They read the same packed panels of 64 output channels as the AVX-512
 * tiles, a tile being up to QNT_MR rows times the panel, walked 16 channels
 * (two ymm) at a time so the accumulators stay in the 16 ymm registers:
 *  - f32:  weights dequantized into a panel buffer (int8: q*s + b; e4m3:
 *          -> fp16 bit pattern -> vcvtph2ps, exact), then FMA; fp8 with
 *          dynamic activations uses it too, on activations rounded to e4m3;
 *  - u8:   int8 dynamic activations stored + 128 as u8, times s8 weights:
 *          with AVX-VNNI, vpdpbusd ymm on 8-bit weights (QNT_L_QUAD, exact
 *          like the AVX-512 tile); without, vpmaddubsw + vpmaddwd on 7-bit
 *          weights (QNT_L_QUAD7): vpmaddubsw adds two u8 x s8 products
 *          into int16 with saturation, and 2 * 255 * 64 <= 32767 holds
 *          only for |w| <= 64. The 7-bit codes are the 8-bit ones halved
 *          (scales doubled) at pack time, or quantized so; the activations
 *          are 7-bit rows too (qnt_avx2_quant_rows_a7: two steps summed in
 *          int16), or 8-bit ones (AIT_QUANT_NO_A7, rows not finite). */
#include "backends/quant/quant.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#include <math.h>
#include <string.h>

#define T_AVX2 __attribute__((target("avx2,fma,f16c")))
#define T_AVXVNNI __attribute__((target("avx2,fma,f16c,avxvnni")))
#define INLINE static inline __attribute__((always_inline))

/* Lane masks for the first c of 8 lanes: mask_tab + 8 - c. */
static const int32_t mask_tab[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

INLINE T_AVX2 __m256i lanes(int c) {
  c = c < 0 ? 0 : c > 8 ? 8 : c;
  return _mm256_loadu_si256((const __m256i *)(mask_tab + 8 - c));
}

/* Store v (+ c when acc, + bias) into the first n (0..8) columns. */
INLINE T_AVX2 void store8(float *c, __m256 v, int n, bool acc, const float *bias) {
  if (n <= 0) return;
  if (n >= 8) {
    if (acc) v = _mm256_add_ps(v, _mm256_loadu_ps(c));
    if (bias) v = _mm256_add_ps(v, _mm256_loadu_ps(bias));
    _mm256_storeu_ps(c, v);
    return;
  }
  __m256i m = lanes(n);
  if (acc) v = _mm256_add_ps(v, _mm256_maskload_ps(c, m));
  if (bias) v = _mm256_add_ps(v, _mm256_maskload_ps(bias, m));
  _mm256_maskstore_ps(c, m, v);
}

/* 8 e4m3 codes -> floats times 2^-8: the low 7 bits shifted into an fp16
 * exponent/mantissa are the same number scaled by 2^-8, subnormals
 * included, and vcvtph2ps converts fp16 exactly. */
INLINE T_AVX2 __m256 e4m3x8(const uint8_t *src) {
  __m128i h = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)src));
  __m128i mag = _mm_slli_epi16(_mm_and_si128(h, _mm_set1_epi16(0x7F)), 7);
  __m128i sgn = _mm_slli_epi16(_mm_and_si128(h, _mm_set1_epi16(0x80)), 8);
  return _mm256_cvtph_ps(_mm_or_si128(mag, sgn));
}

INLINE T_AVX2 __m256 int8x8(const uint8_t *src) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)src)));
}

/* ---- weight-only: dequantized panel + float tile ---------------------- */

T_AVX2 void qnt_avx2_dequant_panel(const qnt_weight *w, int64_t p, int64_t k0, int64_t kc,
                                   float *buf) {
  const uint8_t *src = w->codes + (p * w->K + k0) * QNT_PANEL;
  bool fp8 = w->type == QNT_FP8;
  int64_t g = k0 / w->gsize, gend = (g + 1) * w->gsize;
  const float *ps = NULL, *pb = NULL;
  for (int64_t k = 0; k < kc; k++) {
    if (k == 0 || k0 + k == gend) {
      if (k) g++, gend += w->gsize;
      ps = w->pscale + (p * w->G + g) * QNT_PANEL;
      pb = w->pbias + (p * w->G + g) * QNT_PANEL;
    }
    const uint8_t *row = src + k * QNT_PANEL;
    float *dst = buf + k * QNT_PANEL;
    for (int j = 0; j < 8; j++) {
      __m256 s = _mm256_loadu_ps(ps + 8 * j), v;
      if (fp8)
        v = _mm256_mul_ps(e4m3x8(row + 8 * j), _mm256_mul_ps(s, _mm256_set1_ps(256.0f)));
      else
        v = _mm256_fmadd_ps(int8x8(row + 8 * j), s, _mm256_loadu_ps(pb + 8 * j));
      _mm256_store_ps(dst + 8 * j, v);
    }
  }
}

/* mr rows x 16 channels (columns c0.. of the panel buffer b). */
INLINE T_AVX2 void tile16_f32(const int mr, int64_t kc, const float *a, int64_t lda, const float *b,
                              float *c, int64_t ldc, int n, bool acc, const float *bias) {
  __m256 r[QNT_MR][2];
#pragma GCC unroll 6
  for (int i = 0; i < mr; i++)
    r[i][0] = r[i][1] = _mm256_setzero_ps();
  for (int64_t k = 0; k < kc; k++) {
    const float *bk = b + k * QNT_PANEL;
    __m256 b0 = _mm256_load_ps(bk), b1 = _mm256_load_ps(bk + 8);
#pragma GCC unroll 6
    for (int i = 0; i < mr; i++) {
      __m256 av = _mm256_broadcast_ss(a + i * lda + k);
      r[i][0] = _mm256_fmadd_ps(av, b0, r[i][0]);
      r[i][1] = _mm256_fmadd_ps(av, b1, r[i][1]);
    }
  }
#pragma GCC unroll 6
  for (int i = 0; i < mr; i++) {
    store8(c + i * ldc, r[i][0], n, acc, bias);
    store8(c + i * ldc + 8, r[i][1], n - 8, acc, bias ? bias + 8 : NULL);
  }
}

T_AVX2 void qnt_avx2_tile_f32(int mr, int64_t kc, const float *a, int64_t lda, const float *b,
                              float *c, int64_t ldc, int ncols, bool acc, const float *bias) {
  for (int c0 = 0; c0 < ncols; c0 += 16) {
#define QNT_F(n)                                                                                   \
  tile16_f32(n, kc, a, lda, b + c0, c + c0, ldc, ncols - c0, acc, bias ? bias + c0 : NULL)
    switch (mr) {
    case 1: QNT_F(1); break;
    case 2: QNT_F(2); break;
    case 3: QNT_F(3); break;
    case 4: QNT_F(4); break;
    case 5: QNT_F(5); break;
    default: QNT_F(6); break;
    }
#undef QNT_F
  }
}

/* Few rows: the weights dequantized in registers as the product reads
 * them (no panel buffer), over the whole reduction axis, 16 channels at a
 * time. */
INLINE T_AVX2 void tile16_wo(const int mr, const bool fp8, const qnt_weight *w, int64_t p, int c0,
                             const float *a, int64_t lda, float *c, int64_t ldc, int n,
                             const float *bias) {
  __m256 r[QNT_MR][2];
#pragma GCC unroll 6
  for (int i = 0; i < mr; i++)
    r[i][0] = r[i][1] = _mm256_setzero_ps();
  const uint8_t *src = w->codes + p * w->K * QNT_PANEL + c0;
  for (int64_t g = 0; g < w->G; g++) {
    const float *ps = w->pscale + (p * w->G + g) * QNT_PANEL + c0;
    const float *pb = w->pbias + (p * w->G + g) * QNT_PANEL + c0;
    __m256 f = _mm256_set1_ps(fp8 ? 256.0f : 1.0f);
    __m256 s0 = _mm256_mul_ps(_mm256_loadu_ps(ps), f),
           s1 = _mm256_mul_ps(_mm256_loadu_ps(ps + 8), f);
    __m256 z0 = _mm256_loadu_ps(pb), z1 = _mm256_loadu_ps(pb + 8);
    int64_t k1 = (g + 1) * w->gsize < w->K ? (g + 1) * w->gsize : w->K;
    for (int64_t k = g * w->gsize; k < k1; k++) {
      const uint8_t *row = src + k * QNT_PANEL;
      __m256 w0, w1;
      if (fp8) {
        w0 = _mm256_mul_ps(e4m3x8(row), s0);
        w1 = _mm256_mul_ps(e4m3x8(row + 8), s1);
      } else {
        w0 = _mm256_fmadd_ps(int8x8(row), s0, z0);
        w1 = _mm256_fmadd_ps(int8x8(row + 8), s1, z1);
      }
#pragma GCC unroll 6
      for (int i = 0; i < mr; i++) {
        __m256 av = _mm256_broadcast_ss(a + i * lda + k);
        r[i][0] = _mm256_fmadd_ps(av, w0, r[i][0]);
        r[i][1] = _mm256_fmadd_ps(av, w1, r[i][1]);
      }
    }
  }
#pragma GCC unroll 6
  for (int i = 0; i < mr; i++) {
    store8(c + i * ldc, r[i][0], n, false, bias);
    store8(c + i * ldc + 8, r[i][1], n - 8, false, bias ? bias + 8 : NULL);
  }
}

T_AVX2 void qnt_avx2_tile_wo(int mr, const qnt_weight *w, int64_t p, const float *a, int64_t lda,
                             float *c, int64_t ldc, int ncols, const float *bias) {
  bool fp8 = w->type == QNT_FP8;
  for (int c0 = 0; c0 < ncols; c0 += 16) {
    const float *b = bias ? bias + c0 : NULL;
#define QNT_W(n, f) tile16_wo(n, f, w, p, c0, a, lda, c + c0, ldc, ncols - c0, b)
    if (fp8) {
      switch (mr) {
      case 1: QNT_W(1, true); break;
      case 2: QNT_W(2, true); break;
      case 3: QNT_W(3, true); break;
      case 4: QNT_W(4, true); break;
      case 5: QNT_W(5, true); break;
      default: QNT_W(6, true); break;
      }
    } else {
      switch (mr) {
      case 1: QNT_W(1, false); break;
      case 2: QNT_W(2, false); break;
      case 3: QNT_W(3, false); break;
      case 4: QNT_W(4, false); break;
      case 5: QNT_W(5, false); break;
      default: QNT_W(6, false); break;
      }
    }
#undef QNT_W
  }
}

/* ---- activation rows ---------------------------------------------------- */

INLINE T_AVX2 float hmax8(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}

INLINE T_AVX2 float hsum8(__m256 v) {
  __m128 m = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_add_ps(m, _mm_movehl_ps(m, m));
  m = _mm_add_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}

INLINE T_AVX2 int32_t hsum8i(__m256i v) {
  __m128i m = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  m = _mm_add_epi32(m, _mm_shuffle_epi32(m, 0x4E));
  m = _mm_add_epi32(m, _mm_shuffle_epi32(m, 0xB1));
  return _mm_cvtsi128_si32(m);
}

/* max |x| and (when sumsq) the sum of squares of a row, in one pass: 32 a
 * step into four sums (one sum waited on the FMA's latency, 4 cycles per 8
 * elements, a third of the activation rows' time) */
INLINE T_AVX2 float row_stats(const float *x, int64_t K, double *sumsq) {
  __m256 m = _mm256_setzero_ps(), q = _mm256_setzero_ps();
  __m256 abs = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  __m256 m1 = m, q1 = q, q2 = q, q3 = q;
  int64_t k = 0;
  for (; k + 32 <= K; k += 32) {
    __m256 v0 = _mm256_loadu_ps(x + k), v1 = _mm256_loadu_ps(x + k + 8);
    __m256 v2 = _mm256_loadu_ps(x + k + 16), v3 = _mm256_loadu_ps(x + k + 24);
    m = _mm256_max_ps(m, _mm256_max_ps(_mm256_and_ps(v0, abs), _mm256_and_ps(v1, abs)));
    m1 = _mm256_max_ps(m1, _mm256_max_ps(_mm256_and_ps(v2, abs), _mm256_and_ps(v3, abs)));
    q = _mm256_fmadd_ps(v0, v0, q);
    q1 = _mm256_fmadd_ps(v1, v1, q1);
    q2 = _mm256_fmadd_ps(v2, v2, q2);
    q3 = _mm256_fmadd_ps(v3, v3, q3);
  }
  m = _mm256_max_ps(m, m1);
  q = _mm256_add_ps(_mm256_add_ps(q, q1), _mm256_add_ps(q2, q3));
  for (; k < K; k += 8) {
    __m256 v = K - k >= 8 ? _mm256_loadu_ps(x + k) : _mm256_maskload_ps(x + k, lanes((int)(K - k)));
    m = _mm256_max_ps(m, _mm256_and_ps(v, abs));
    q = _mm256_fmadd_ps(v, v, q);
  }
  if (sumsq) *sumsq = hsum8(q);
  return hmax8(m);
}

T_AVX2 void qnt_avx2_quant_rows_u8(const float *x, int64_t M, int64_t K, int64_t ldx, uint8_t *q,
                                   int64_t ldq, float *sa, const qnt_weight *w, int32_t *asum,
                                   float outliers, int32_t *oidx, float *ores, int32_t *ocnt) {
  for (int64_t m = 0; m < M; m++) {
    const float *xr = x + m * ldx;
    uint8_t *qr = q + m * ldq;
    double sumsq = 0;
    float amax = row_stats(xr, K, outliers > 0 ? &sumsq : NULL), t = amax;
    int n = 0;
    int32_t idx[QNT_MAX_OUTLIERS + 1];
    if (outliers > 0 && (t = qnt_row_threshold(amax, sumsq, K, outliers)) < amax) {
      /* 8 at a time: a compare, and a bit scan only where one is above */
      __m256 tv = _mm256_set1_ps(t), abs = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
      for (int64_t k = 0; k < K && n <= QNT_MAX_OUTLIERS; k += 8) {
        __m256 v =
            K - k >= 8 ? _mm256_loadu_ps(xr + k) : _mm256_maskload_ps(xr + k, lanes((int)(K - k)));
        unsigned bits =
            (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_and_ps(v, abs), tv, _CMP_GT_OQ));
        for (; bits && n <= QNT_MAX_OUTLIERS; bits &= bits - 1)
          idx[n++] = (int32_t)(k + __builtin_ctz(bits));
      }
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
    __m256 inv = _mm256_set1_ps(1.0f / s);
    __m256i lo = _mm256_set1_epi32(-127), hi = _mm256_set1_epi32(127);
    __m256i off = _mm256_set1_epi32(128), gsum = _mm256_setzero_si256();
    /* bytes 0, 4, 8, 12 of each 128-bit lane: the low byte of each int32 */
    __m256i pick = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0,
                                    4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    int64_t gend = w->gsize, g = 0, k = 0;
    /* 32 at a time where no group ends inside (asum needs the group sums):
     * four conversions packed to bytes with signed saturation (the codes
     * are within +-127), + 128 as bytes */
    for (; !asum && k + 32 <= K; k += 32) {
      __m256i v0 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xr + k), inv));
      __m256i v1 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xr + k + 8), inv));
      __m256i v2 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xr + k + 16), inv));
      __m256i v3 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xr + k + 24), inv));
      __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(v0, v1), _mm256_packs_epi32(v2, v3));
      /* the packs interleave 128-bit lanes: dwords 0 4 1 5 2 6 3 7 */
      b = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
      b = _mm256_max_epi8(b, _mm256_set1_epi8(-127)); /* -128 only from saturation */
      _mm256_storeu_si256((__m256i *)(qr + k), _mm256_xor_si256(b, _mm256_set1_epi8((char)0x80)));
    }
    for (; k < K; k += 8) {
      int nk = K - k >= 8 ? 8 : (int)(K - k);
      __m256 xv = nk == 8 ? _mm256_loadu_ps(xr + k) : _mm256_maskload_ps(xr + k, lanes(nk));
      __m256i v = _mm256_cvtps_epi32(_mm256_mul_ps(xv, inv));
      v = _mm256_min_epi32(_mm256_max_epi32(v, lo), hi);
      if (asum) gsum = _mm256_add_epi32(gsum, v);
      __m256i b = _mm256_shuffle_epi8(_mm256_add_epi32(v, off), pick);
      uint32_t b0 = (uint32_t)_mm256_extract_epi32(b, 0), b1 = (uint32_t)_mm256_extract_epi32(b, 4);
      uint8_t bytes[8];
      memcpy(bytes, &b0, 4);
      memcpy(bytes + 4, &b1, 4);
      memcpy(qr + k, bytes, (size_t)nk);
      if (asum && (k + 8 >= gend || k + 8 >= K)) {
        asum[m * w->G + g++] = hsum8i(gsum);
        gsum = _mm256_setzero_si256();
        gend += w->gsize;
      }
    }
    for (k = K; k < ldq; k++)
      qr[k] = 128; /* code 0: the padded weights are 0 too */
  }
}

/* min, max and the sum of squares of a row in one pass (16 a step, two
 * sums each). */
INLINE T_AVX2 void row_range(const float *x, int64_t K, float *mn, float *mx, double *sumsq) {
  __m256 lo0 = _mm256_set1_ps(INFINITY), hi0 = _mm256_set1_ps(-INFINITY), lo1 = lo0, hi1 = hi0;
  __m256 q0 = _mm256_setzero_ps(), q1 = q0;
  int64_t k = 0;
  for (; k + 16 <= K; k += 16) {
    __m256 v0 = _mm256_loadu_ps(x + k), v1 = _mm256_loadu_ps(x + k + 8);
    lo0 = _mm256_min_ps(lo0, v0), hi0 = _mm256_max_ps(hi0, v0);
    lo1 = _mm256_min_ps(lo1, v1), hi1 = _mm256_max_ps(hi1, v1);
    q0 = _mm256_fmadd_ps(v0, v0, q0), q1 = _mm256_fmadd_ps(v1, v1, q1);
  }
  for (; k < K; k += 8) {
    __m256i m = lanes((int)(K - k));
    __m256 v = _mm256_maskload_ps(x + k, m), mf = _mm256_castsi256_ps(m);
    lo0 = _mm256_min_ps(lo0, _mm256_blendv_ps(lo0, v, mf));
    hi0 = _mm256_max_ps(hi0, _mm256_blendv_ps(hi0, v, mf));
    q0 = _mm256_fmadd_ps(v, v, q0);
  }
  lo0 = _mm256_min_ps(lo0, lo1), hi0 = _mm256_max_ps(hi0, hi1);
  *mn = -hmax8(_mm256_sub_ps(_mm256_setzero_ps(), lo0));
  *mx = hmax8(hi0);
  *sumsq = hsum8(_mm256_add_ps(q0, q1));
}

T_AVX2 bool qnt_avx2_quant_rows_a7(const float *x, int64_t M, int64_t K, int64_t ldx, uint8_t *q,
                                   int64_t ldq, float *sa, float *lo, float outliers, int32_t *oidx,
                                   float *ores, int32_t *ocnt) {
  for (int64_t m = 0; m < M; m++) {
    const float *xr = x + m * ldx;
    uint8_t *qr = q + m * ldq;
    double sumsq = 0;
    float mn, mx;
    row_range(xr, K, &mn, &mx, &sumsq);
    float amax = fmaxf(-mn, mx), t = amax;
    if (!(amax < 3.0e38f)) return false; /* inf or NaN: the 8-bit path's rules */
    int n = 0;
    int32_t idx[QNT_MAX_OUTLIERS + 1];
    if (outliers > 0 && (t = qnt_row_threshold(amax, sumsq, K, outliers)) < amax) {
      __m256 tv = _mm256_set1_ps(t), abs = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
      for (int64_t k = 0; k < K && n <= QNT_MAX_OUTLIERS; k += 8) {
        __m256 v =
            K - k >= 8 ? _mm256_loadu_ps(xr + k) : _mm256_maskload_ps(xr + k, lanes((int)(K - k)));
        unsigned bits =
            (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_and_ps(v, abs), tv, _CMP_GT_OQ));
        for (; bits && n <= QNT_MAX_OUTLIERS; bits &= bits - 1)
          idx[n++] = (int32_t)(k + __builtin_ctz(bits));
      }
      if (n > QNT_MAX_OUTLIERS) t = amax, n = 0;
    }
    float l = fmaxf(mn, -t), h = fminf(mx, t);
    float s = (h - l) / 127.0f;
    if (!(s > 0) || !(s < 3.0e38f)) s = 1.0f; /* a constant row: every code 0 is l */
    sa[m] = s, lo[m] = l;
    if (ocnt) {
      for (int o = 0; o < n; o++) {
        float v = xr[idx[o]];
        oidx[m * QNT_MAX_OUTLIERS + o] = idx[o];
        ores[m * QNT_MAX_OUTLIERS + o] = v - (v > h ? h : l);
      }
      ocnt[m] = n;
    }
    __m256 inv = _mm256_set1_ps(1.0f / s), lv = _mm256_set1_ps(l);
    __m256i zero = _mm256_setzero_si256(), top = _mm256_set1_epi32(127);
    __m256i pick = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0,
                                    4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    int64_t k = 0;
    /* 32 at a time, packed with signed saturation (codes within 0..127
     * before clamping, but for the outliers), negatives clamped to 0 */
    for (; k + 32 <= K; k += 32) {
      __m256i v0 =
          _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(xr + k), lv), inv));
      __m256i v1 =
          _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(xr + k + 8), lv), inv));
      __m256i v2 =
          _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(xr + k + 16), lv), inv));
      __m256i v3 =
          _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(xr + k + 24), lv), inv));
      __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(v0, v1), _mm256_packs_epi32(v2, v3));
      b = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
      _mm256_storeu_si256((__m256i *)(qr + k), _mm256_max_epi8(b, zero));
    }
    for (; k < K; k += 8) {
      int nk = K - k >= 8 ? 8 : (int)(K - k);
      __m256 xv = nk == 8 ? _mm256_loadu_ps(xr + k) : _mm256_maskload_ps(xr + k, lanes(nk));
      __m256i v = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_sub_ps(xv, lv), inv));
      v = _mm256_min_epi32(_mm256_max_epi32(v, zero), top);
      __m256i b = _mm256_shuffle_epi8(v, pick);
      uint32_t b0 = (uint32_t)_mm256_extract_epi32(b, 0), b1 = (uint32_t)_mm256_extract_epi32(b, 4);
      uint8_t bytes[8];
      memcpy(bytes, &b0, 4);
      memcpy(bytes + 4, &b1, 4);
      memcpy(qr + k, bytes, (size_t)nk);
    }
    for (k = K; k < ldq; k++)
      qr[k] = 0; /* the padded weights are 0 */
  }
  return true;
}

/* Round |v| <= 448 to the nearest e4m3 value, kept as a float (as
 * ait_e4m3_round: ties to even, subnormal steps of 2^-9). */
INLINE T_AVX2 __m256 round_e4m3(__m256 v) {
  __m256i bits = _mm256_castps_si256(v);
  __m256i sgnm = _mm256_set1_epi32((int)0x80000000u);
  __m256i sign = _mm256_and_si256(bits, sgnm);
  __m256i a = _mm256_andnot_si256(sgnm, bits);
  __m256i odd = _mm256_and_si256(_mm256_srli_epi32(a, 20), _mm256_set1_epi32(1));
  __m256i r = _mm256_add_epi32(a, _mm256_add_epi32(_mm256_set1_epi32(0x7FFFF), odd));
  __m256 normal = _mm256_castsi256_ps(_mm256_and_si256(r, _mm256_set1_epi32((int)0xFFF00000u)));
  __m256 af = _mm256_castsi256_ps(a);
  __m256 sub = _mm256_mul_ps(_mm256_round_ps(_mm256_mul_ps(af, _mm256_set1_ps(512.0f)),
                                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                             _mm256_set1_ps(1.0f / 512.0f));
  __m256 tiny = _mm256_cmp_ps(af, _mm256_set1_ps(0.015625f), _CMP_LT_OQ);
  __m256 res = _mm256_min_ps(_mm256_blendv_ps(normal, sub, tiny), _mm256_set1_ps(448.0f));
  return _mm256_castsi256_ps(_mm256_or_si256(_mm256_castps_si256(res), sign));
}

T_AVX2 void qnt_avx2_quant_rows_f8(const float *x, int64_t M, int64_t K, int64_t ldx, float *q,
                                   int64_t ldq) {
  for (int64_t m = 0; m < M; m++) {
    const float *xr = x + m * ldx;
    float *qr = q + m * ldq;
    float amax = row_stats(xr, K, NULL);
    float s = amax > 0 && amax < 3.0e38f ? amax / AIT_E4M3_MAX : 1.0f;
    __m256 inv = _mm256_set1_ps(1.0f / s), sv = _mm256_set1_ps(s);
    int64_t k = 0;
    for (; k + 8 <= K; k += 8)
      _mm256_storeu_ps(qr + k,
                       _mm256_mul_ps(round_e4m3(_mm256_mul_ps(_mm256_loadu_ps(xr + k), inv)), sv));
    for (; k < K; k++)
      qr[k] = ait_e4m3_round(xr[k] / s) * s;
  }
}

/* ---- int8 x int8: u8 activations x s8 weights ---------------------------- */

T_AVX2 void qnt_avx2_outlier_fix(const uint8_t *b, int k4, float r, const float *sw,
                                 const int8_t *zw, float *y, int ncols) {
  /* column c's code is byte k4 of 32-bit lane c: shift it to the top, then
   * back down with its sign */
  __m128i up = _mm_cvtsi32_si128(24 - 8 * k4), down = _mm_cvtsi32_si128(24);
  __m256 rv = _mm256_set1_ps(r);
  for (int c = 0; c < ncols; c += 8) {
    __m256i m = lanes(ncols - c);
    __m256i v = _mm256_loadu_si256((const __m256i *)(b + 4 * c));
    __m256 wv = _mm256_cvtepi32_ps(_mm256_sra_epi32(_mm256_sll_epi32(v, up), down));
    if (zw) {
      int8_t z8[8] = {0};
      memcpy(z8, zw + c, (size_t)(ncols - c < 8 ? ncols - c : 8));
      wv = _mm256_sub_ps(wv, int8x8((const uint8_t *)z8));
    }
    wv = _mm256_mul_ps(wv, _mm256_maskload_ps(sw + c, m));
    _mm256_maskstore_ps(y + c, m, _mm256_fmadd_ps(rv, wv, _mm256_maskload_ps(y + c, m)));
  }
}

/* One row of a tile's 16 channels (c0.. of the panel): int32 sums minus
 * 128 * sum(w) (the activations were stored + 128) and the zero-point
 * term, scaled, the row's outliers, bias and residual added, stored. */
INLINE T_AVX2 void u8_row(const __m256i *r, int i, int c0, float *c, int64_t ldc, int n, bool acc,
                          const qnt_vnni_post *q) {
  int cnt = q->ocnt ? q->ocnt[i] : 0;
  const int32_t *slot = cnt ? q->oslot + i * QNT_MAX_OUTLIERS : NULL;
  const float *res = cnt ? q->ores + i * QNT_MAX_OUTLIERS : NULL;
#pragma GCC unroll 2
  for (int j = 0; j < 2; j++) {
    int nj = n - 8 * j, co = c0 + 8 * j;
    if (nj <= 0) continue;
    __m256i v =
        q->a7 ? r[j]
              : _mm256_sub_epi32(r[j], _mm256_slli_epi32(
                                           _mm256_loadu_si256((const __m256i *)(q->wsum + co)), 7));
    if (q->zw) {
      __m256i z = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(q->zw + co)));
      v = _mm256_sub_epi32(v, _mm256_mullo_epi32(z, _mm256_set1_epi32(q->asum[i * q->asum_ld])));
    }
    __m256 s = _mm256_mul_ps(_mm256_loadu_ps(q->sw + co), _mm256_set1_ps(q->sa[i]));
    __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(v), s);
    if (q->lo) f = _mm256_fmadd_ps(_mm256_set1_ps(q->lo[i]), _mm256_loadu_ps(q->wtot + co), f);
    /* the packed parameters hold 64 entries a panel: whole vectors load */
    for (int o = 0; o < cnt; o++)
      if (slot[o] >= 0) {
        const float *wr = q->wdq + slot[o] * q->ldw + co;
        __m256 wv = nj >= 8 ? _mm256_loadu_ps(wr) : _mm256_maskload_ps(wr, lanes(nj));
        f = _mm256_fmadd_ps(_mm256_set1_ps(res[o]), wv, f);
      }
    if (q->z) {
      const float *zr = q->z + i * q->ldz + co;
      f = _mm256_add_ps(f, nj >= 8 ? _mm256_loadu_ps(zr) : _mm256_maskload_ps(zr, lanes(nj)));
    }
    store8(c + i * ldc + co, f, nj, acc, q->bias ? q->bias + co : NULL);
  }
}

/* vpdpbusd (VEX, AVX-VNNI) through asm, as the AVX-512 tile does: GCC
 * copies the accumulator around the intrinsic. */
#define QNT_DPBUSD(acc, a, b) __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(a), "x"(b))

/* mr rows x 16 channels over k4 groups of 4 bytes, with vpdpbusd. */
#define QNT_VROW(i)                                                                                \
  if (mr > i) {                                                                                    \
    int32_t a4;                                                                                    \
    memcpy(&a4, a + i * lda + 4 * k, sizeof a4);                                                   \
    __m256i av = _mm256_set1_epi32(a4);                                                            \
    QNT_DPBUSD(r##i[0], av, b0);                                                                   \
    QNT_DPBUSD(r##i[1], av, b1);                                                                   \
  }

INLINE T_AVXVNNI void tile16_vnni(const int mr, int64_t k4, const uint8_t *a, int64_t lda,
                                  const uint8_t *b, int c0, float *c, int64_t ldc, int n, bool acc,
                                  const qnt_vnni_post *post, const uint8_t **pf,
                                  const uint8_t *pf_end) {
  const uint8_t *pl = pf ? *pf : NULL;
  __m256i z = _mm256_setzero_si256();
  __m256i r0[2] = {z, z}, r1[2] = {z, z}, r2[2] = {z, z};
  __m256i r3[2] = {z, z}, r4[2] = {z, z}, r5[2] = {z, z};
  const uint8_t *bc = b + 4 * c0;
  for (int64_t k = 0; k < k4; k++) {
    const uint8_t *bk = bc + k * QNT_PANEL * 4;
    __m256i b0 = _mm256_loadu_si256((const __m256i *)bk);
    __m256i b1 = _mm256_loadu_si256((const __m256i *)(bk + 32));
    if (pl < pf_end) { /* a line of the next panel a step, while any is left */
      _mm_prefetch((const char *)pl, _MM_HINT_T1);
      pl += 64;
    }
    QNT_VROW(0) QNT_VROW(1) QNT_VROW(2) QNT_VROW(3) QNT_VROW(4) QNT_VROW(5)
  }
  if (pf) *pf = pl;
  const __m256i *rows[6] = {r0, r1, r2, r3, r4, r5};
#pragma GCC unroll 6
  for (int i = 0; i < mr; i++)
    u8_row(rows[i], i, c0, c, ldc, n, acc, post);
}
#undef QNT_VROW

T_AVXVNNI static void tile_vnni(int mr, int64_t k4, const uint8_t *a, int64_t lda, const uint8_t *b,
                                int c0, float *c, int64_t ldc, int n, bool acc,
                                const qnt_vnni_post *post, const uint8_t **pf,
                                const uint8_t *pf_end) {
#define QNT_U(m) tile16_vnni(m, k4, a, lda, b, c0, c, ldc, n, acc, post, pf, pf_end)
  switch (mr) {
  case 1: QNT_U(1); break;
  case 2: QNT_U(2); break;
  case 3: QNT_U(3); break;
  case 4: QNT_U(4); break;
  case 5: QNT_U(5); break;
  default: QNT_U(6); break;
  }
#undef QNT_U
}

/* Without VNNI: vpmaddubsw (u8 x s8 pairs into int16; the 7-bit weights
 * keep it from saturating) and vpmaddwd by ones into int32, 4 rows at most
 * (the product's temporary and the ones take registers too). Named
 * accumulators: with arrays GCC copied each one around every add, and the
 * three instructions per product already keep the front end busy. */
#define QNT_PROW(i)                                                                                \
  if (mr > i) {                                                                                    \
    int32_t a4;                                                                                    \
    memcpy(&a4, a + i * lda + 4 * k, sizeof a4);                                                   \
    __m256i av = _mm256_set1_epi32(a4);                                                            \
    s##i##0 = _mm256_add_epi32(s##i##0, _mm256_madd_epi16(_mm256_maddubs_epi16(av, b0), ones));    \
    s##i##1 = _mm256_add_epi32(s##i##1, _mm256_madd_epi16(_mm256_maddubs_epi16(av, b1), ones));    \
  }

INLINE T_AVX2 void tile16_madd(const int mr, int64_t k4, const uint8_t *a, int64_t lda,
                               const uint8_t *b, int c0, float *c, int64_t ldc, int n, bool acc,
                               const qnt_vnni_post *post) {
  __m256i ones = _mm256_set1_epi16(1);
  __m256i s00 = _mm256_setzero_si256(), s01 = s00, s10 = s00, s11 = s00;
  __m256i s20 = s00, s21 = s00, s30 = s00, s31 = s00;
  const uint8_t *bc = b + 4 * c0;
  for (int64_t k = 0; k < k4; k++) {
    const uint8_t *bk = bc + k * QNT_PANEL * 4;
    __m256i b0 = _mm256_loadu_si256((const __m256i *)bk);
    __m256i b1 = _mm256_loadu_si256((const __m256i *)(bk + 32));
    QNT_PROW(0) QNT_PROW(1) QNT_PROW(2) QNT_PROW(3)
  }
  const __m256i r0[2] = {s00, s01}, r1[2] = {s10, s11}, r2[2] = {s20, s21}, r3[2] = {s30, s31};
  const __m256i *rows[4] = {r0, r1, r2, r3};
#pragma GCC unroll 4
  for (int i = 0; i < mr; i++)
    u8_row(rows[i], i, c0, c, ldc, n, acc, post);
}
#undef QNT_PROW

T_AVX2 static void tile_madd(int mr, int64_t k4, const uint8_t *a, int64_t lda, const uint8_t *b,
                             int c0, float *c, int64_t ldc, int n, bool acc,
                             const qnt_vnni_post *post) {
#define QNT_U(m) tile16_madd(m, k4, a, lda, b, c0, c, ldc, n, acc, post)
  switch (mr) {
  case 1: QNT_U(1); break;
  case 2: QNT_U(2); break;
  case 3: QNT_U(3); break;
  default: QNT_U(4); break;
  }
#undef QNT_U
}

/* 6 rows x 16 channels of one group (k4 >= 1 steps of 4 bytes) with
 * vpmaddubsw, all in asm: the 12 int32 accumulators (ymm0-11) start at
 * -128 * sum(w) of the group (the activations are stored + 128), the ones
 * (ymm12), the broadcast and two products fill the 16 ymm registers, the
 * weights are memory operands (each vector read by 6 rows; loads have
 * ports to spare), the k-loop is unrolled by two (its scalar adds and
 * branch share ports 0 and 1 with the multiply-adds); then each sum,
 * converted, times the group's weight scales goes into the float sums f
 * (f = when `first`, else f +=: row i's two vectors at f + 16 i). In C,
 * GCC moved the accumulators between registers every step and spilled one,
 * and the int32 sums went through memory to a C epilogue per group: 3/4
 * of the loop's rate in the model. vpmaddubsw and vpmaddwd share ports 0
 * and 1 (32 multiply-adds a cycle at best); a: row 0's first group of 4
 * bytes, rows lda apart; ws, sw: the group's 16 sums and scales. */
#define QNT_M6(src, x0, x1)                                                                        \
  "vpbroadcastd " src ", %%ymm13\n\t"                                                              \
  "vpmaddubsw (%[b]), %%ymm13, %%ymm14\n\t"                                                        \
  "vpmaddubsw 32(%[b]), %%ymm13, %%ymm15\n\t"                                                      \
  "vpmaddwd %%ymm12, %%ymm14, %%ymm14\n\t"                                                         \
  "vpmaddwd %%ymm12, %%ymm15, %%ymm15\n\t"                                                         \
  "vpaddd %%ymm14, %%" x0 ", %%" x0 "\n\t"                                                         \
  "vpaddd %%ymm15, %%" x1 ", %%" x1 "\n\t"
#define QNT_S6(off)                                                                                \
  QNT_M6(off "(%[a])", "ymm0", "ymm1")                                                             \
  QNT_M6(off "(%[a],%[l])", "ymm2", "ymm3")                                                        \
  QNT_M6(off "(%[a],%[l],2)", "ymm4", "ymm5")                                                      \
  QNT_M6(off "(%[a3])", "ymm6", "ymm7")                                                            \
  QNT_M6(off "(%[a3],%[l])", "ymm8", "ymm9")                                                       \
  QNT_M6(off "(%[a3],%[l],2)", "ymm10", "ymm11")
/* f[i] += float(ymm x) * ymm s, or (QNT_F6S) f[i] = */
#define QNT_F6(i, x, s)                                                                            \
  "vcvtdq2ps %%" x ", %%" x "\n\t"                                                                 \
  "vfmadd213ps " #i "*32(%[f]), %%" s ", %%" x "\n\t"                                              \
  "vmovups %%" x ", " #i "*32(%[f])\n\t"
#define QNT_F6S(i, x, s)                                                                           \
  "vcvtdq2ps %%" x ", %%" x "\n\t"                                                                 \
  "vmulps %%" s ", %%" x ", %%" x "\n\t"                                                           \
  "vmovups %%" x ", " #i "*32(%[f])\n\t"
// clang-format off
#define QNT_F12A                                                                                   \
  QNT_F6(0, "ymm0", "ymm12")                                                                       \
  QNT_F6(1, "ymm1", "ymm13")                                                                       \
  QNT_F6(2, "ymm2", "ymm12")                                                                       \
  QNT_F6(3, "ymm3", "ymm13")                                                                       \
  QNT_F6(4, "ymm4", "ymm12")                                                                       \
  QNT_F6(5, "ymm5", "ymm13")                                                                       \
  QNT_F6(6, "ymm6", "ymm12")                                                                       \
  QNT_F6(7, "ymm7", "ymm13")                                                                       \
  QNT_F6(8, "ymm8", "ymm12")                                                                       \
  QNT_F6(9, "ymm9", "ymm13")                                                                       \
  QNT_F6(10, "ymm10", "ymm12")                                                                     \
  QNT_F6(11, "ymm11", "ymm13")
#define QNT_F12M                                                                                   \
  QNT_F6S(0, "ymm0", "ymm12")                                                                      \
  QNT_F6S(1, "ymm1", "ymm13")                                                                      \
  QNT_F6S(2, "ymm2", "ymm12")                                                                      \
  QNT_F6S(3, "ymm3", "ymm13")                                                                      \
  QNT_F6S(4, "ymm4", "ymm12")                                                                      \
  QNT_F6S(5, "ymm5", "ymm13")                                                                      \
  QNT_F6S(6, "ymm6", "ymm12")                                                                      \
  QNT_F6S(7, "ymm7", "ymm13")                                                                      \
  QNT_F6S(8, "ymm8", "ymm12")                                                                      \
  QNT_F6S(9, "ymm9", "ymm13")                                                                      \
  QNT_F6S(10, "ymm10", "ymm12")                                                                    \
  QNT_F6S(11, "ymm11", "ymm13")
// clang-format on
INLINE T_AVX2 void madd6_group(int64_t k4, const uint8_t *a, int64_t lda, const uint8_t *b,
                               const int32_t *ws, const float *sw, float *f, int64_t first,
                               const uint8_t **pf, int64_t ps) {
  const uint8_t *a3 = a + 3 * lda, *pl = *pf;
  int64_t pairs = k4 >> 1;
  __asm__ volatile(
      "vmovdqu (%[ws]), %%ymm14\n\t"
      "vmovdqu 32(%[ws]), %%ymm15\n\t"
      "vpslld $7, %%ymm14, %%ymm14\n\t"
      "vpslld $7, %%ymm15, %%ymm15\n\t"
      "vpxor %%xmm0, %%xmm0, %%xmm0\n\t"
      "vpsubd %%ymm15, %%ymm0, %%ymm1\n\t"
      "vpsubd %%ymm14, %%ymm0, %%ymm0\n\t"
      "vmovdqa %%ymm0, %%ymm2\n\t"
      "vmovdqa %%ymm1, %%ymm3\n\t"
      "vmovdqa %%ymm0, %%ymm4\n\t"
      "vmovdqa %%ymm1, %%ymm5\n\t"
      "vmovdqa %%ymm0, %%ymm6\n\t"
      "vmovdqa %%ymm1, %%ymm7\n\t"
      "vmovdqa %%ymm0, %%ymm8\n\t"
      "vmovdqa %%ymm1, %%ymm9\n\t"
      "vmovdqa %%ymm0, %%ymm10\n\t"
      "vmovdqa %%ymm1, %%ymm11\n\t"
      "vpcmpeqw %%ymm12, %%ymm12, %%ymm12\n\t"
      "vpsrlw $15, %%ymm12, %%ymm12\n\t"
      "test %[p], %[p]\n\t"
      "jz 2f\n\t"
      "1:\n\t" QNT_S6("") "add $256, %[b]\n\t"
                          "prefetcht1 (%[pl])\n\t"
                          "add %[ps], %[pl]\n\t" QNT_S6(
                              "4") "add $256, %[b]\n\t"
                                   "add $8, %[a]\n\t"
                                   "add $8, %[a3]\n\t"
                                   "dec %[p]\n\t"
                                   "jnz 1b\n\t"
                                   "2:\n\t"
                                   "test $1, %[n]\n\t"
                                   "jz 3f\n\t" QNT_S6("") "3:\n\t"
                                                          "vmovups (%[sw]), %%ymm12\n\t"
                                                          "vmovups 32(%[sw]), %%ymm13\n\t"
                                                          "test %[first], %[first]\n\t"
                                                          "jnz 5f\n\t" QNT_F12A "jmp 6f\n\t"
                                                          "5:\n\t" QNT_F12M "6:\n\t"
      : [a] "+r"(a), [a3] "+r"(a3), [b] "+r"(b), [p] "+r"(pairs), [pl] "+r"(pl)
      : [l] "r"(lda), [n] "r"(k4), [ws] "r"(ws), [sw] "r"(sw), [f] "r"(f), [first] "r"(first),
        [ps] "r"(ps)
      : "cc", "memory", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",
        "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
  *pf = pl;
}
/* madd6_group on 7-bit rows (qnt_avx2_quant_rows_a7: codes 0..127, no offset: the sums start at
 * 0): two steps' vpmaddubsw results summed in int16 (4 * 127 * 64 fits)
 * before one vpmaddwd, 4 steps a loop. The second step's broadcast is
 * loaded twice (a load, where a register for it is lacking). */
#define QNT_P6(s0, s1, x0, x1)                                                                     \
  "vpbroadcastd " s0 ", %%ymm13\n\t"                                                               \
  "vpmaddubsw (%[b]), %%ymm13, %%ymm14\n\t"                                                        \
  "vpmaddubsw 32(%[b]), %%ymm13, %%ymm15\n\t"                                                      \
  "vpbroadcastd " s1 ", %%ymm13\n\t"                                                               \
  "vpmaddubsw 256(%[b]), %%ymm13, %%ymm13\n\t"                                                     \
  "vpaddw %%ymm13, %%ymm14, %%ymm14\n\t"                                                           \
  "vpbroadcastd " s1 ", %%ymm13\n\t"                                                               \
  "vpmaddubsw 288(%[b]), %%ymm13, %%ymm13\n\t"                                                     \
  "vpaddw %%ymm13, %%ymm15, %%ymm15\n\t"                                                           \
  "vpmaddwd %%ymm12, %%ymm14, %%ymm14\n\t"                                                         \
  "vpmaddwd %%ymm12, %%ymm15, %%ymm15\n\t"                                                         \
  "vpaddd %%ymm14, %%" x0 ", %%" x0 "\n\t"                                                         \
  "vpaddd %%ymm15, %%" x1 ", %%" x1 "\n\t"
#define QNT_PS6(o0, o1)                                                                            \
  QNT_P6(o0 "(%[a])", o1 "(%[a])", "ymm0", "ymm1")                                                 \
  QNT_P6(o0 "(%[a],%[l])", o1 "(%[a],%[l])", "ymm2", "ymm3")                                       \
  QNT_P6(o0 "(%[a],%[l],2)", o1 "(%[a],%[l],2)", "ymm4", "ymm5")                                   \
  QNT_P6(o0 "(%[a3])", o1 "(%[a3])", "ymm6", "ymm7")                                               \
  QNT_P6(o0 "(%[a3],%[l])", o1 "(%[a3],%[l])", "ymm8", "ymm9")                                     \
  QNT_P6(o0 "(%[a3],%[l],2)", o1 "(%[a3],%[l],2)", "ymm10", "ymm11")
INLINE T_AVX2 void madd6_group_a7(int64_t k4, const uint8_t *a, int64_t lda, const uint8_t *b,
                                  const float *sw, float *f, int64_t first, const uint8_t **pf,
                                  int64_t ps) {
  const uint8_t *a3 = a + 3 * lda, *pl = *pf;
  int64_t quads = k4 >> 2;
  __asm__ volatile(
      "vpxor %%xmm0, %%xmm0, %%xmm0\n\t"
      "vpxor %%xmm1, %%xmm1, %%xmm1\n\t"
      "vpxor %%xmm2, %%xmm2, %%xmm2\n\t"
      "vpxor %%xmm3, %%xmm3, %%xmm3\n\t"
      "vpxor %%xmm4, %%xmm4, %%xmm4\n\t"
      "vpxor %%xmm5, %%xmm5, %%xmm5\n\t"
      "vpxor %%xmm6, %%xmm6, %%xmm6\n\t"
      "vpxor %%xmm7, %%xmm7, %%xmm7\n\t"
      "vpxor %%xmm8, %%xmm8, %%xmm8\n\t"
      "vpxor %%xmm9, %%xmm9, %%xmm9\n\t"
      "vpxor %%xmm10, %%xmm10, %%xmm10\n\t"
      "vpxor %%xmm11, %%xmm11, %%xmm11\n\t"
      "vpcmpeqw %%ymm12, %%ymm12, %%ymm12\n\t"
      "vpsrlw $15, %%ymm12, %%ymm12\n\t"
      "test %[p], %[p]\n\t"
      "jz 2f\n\t"
      "1:\n\t" QNT_PS6("", "4") "prefetcht1 (%[pl])\n\t"
                                "add %[ps], %[pl]\n\t"
                                "add $512, %[b]\n\t" QNT_PS6(
                                    "8", "12") "prefetcht1 (%[pl])\n\t"
                                               "add %[ps], %[pl]\n\t"
                                               "add $512, %[b]\n\t"
                                               "add $16, %[a]\n\t"
                                               "add $16, %[a3]\n\t"
                                               "dec %[p]\n\t"
                                               "jnz 1b\n\t"
                                               "2:\n\t"
                                               "test $2, %[n]\n\t"
                                               "jz 3f\n\t" QNT_PS6(
                                                   "", "4") "add $512, %[b]\n\t"
                                                            "add $8, %[a]\n\t"
                                                            "add $8, %[a3]\n\t"
                                                            "3:\n\t"
                                                            "test $1, %[n]\n\t"
                                                            "jz 4f\n\t" QNT_S6(
                                                                "") "4:\n\t"
                                                                    "vmovups (%[sw]), %%ymm12\n\t"
                                                                    "vmovups 32(%[sw]), %%ymm13\n\t"
                                                                    "test %[first], %[first]\n\t"
                                                                    "jnz 5f\n\t" QNT_F12A
                                                                    "jmp 6f\n\t"
                                                                    "5:\n\t" QNT_F12M "6:\n\t"
      : [a] "+r"(a), [a3] "+r"(a3), [b] "+r"(b), [p] "+r"(quads), [pl] "+r"(pl)
      : [l] "r"(lda), [n] "r"(k4), [sw] "r"(sw), [f] "r"(f), [first] "r"(first), [ps] "r"(ps)
      : "cc", "memory", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",
        "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
  *pf = pl;
}
#undef QNT_P6
#undef QNT_PS6
#undef QNT_M6
#undef QNT_S6
#undef QNT_F6
#undef QNT_F6S
#undef QNT_F12A
#undef QNT_F12M

/* 6 rows x 16 channels of a QUAD7 panel (symmetric weights), every group
 * of the reduction axis in turn into float sums (madd6_group); then the
 * row scale, the outliers, the residual and the bias, and one store. */
T_AVX2 static void tile6_madd(const qnt_weight *w, int64_t P, const uint8_t *a, int64_t lda, int c0,
                              float *c, int64_t ldc, int n, const qnt_vnni_post *q,
                              const uint8_t **pf, int64_t ps) {
  int64_t K4 = (w->K + 3) / 4;
  float f[96] __attribute__((aligned(32)));
  for (int64_t g = 0; g < w->G; g++) {
    int64_t a4 = g * w->gsize / 4, b4 = ((g + 1) * w->gsize < w->K ? (g + 1) * w->gsize : w->K);
    b4 = (b4 + 3) / 4;
    /* the packed parameters hold 64 entries a panel: whole vectors load */
    const uint8_t *b = w->codes + (P * K4 + a4) * QNT_PANEL * 4 + 4 * c0;
    if (q->a7)
      madd6_group_a7(b4 - a4, a + 4 * a4, lda, b, q->sw + g * QNT_PANEL + c0, f, g == 0, pf, ps);
    else
      madd6_group(b4 - a4, a + 4 * a4, lda, b, q->wsum + g * QNT_PANEL + c0,
                  q->sw + g * QNT_PANEL + c0, f, g == 0, pf, ps);
  }
  /* the usual tile: 16 channels, no outliers in its rows: straight-line
   * stores (the general loop's per-row branches took a tenth of the tile) */
  bool plain = n >= 16;
  for (int i = 0; plain && q->ocnt && i < 6; i++)
    plain = q->ocnt[i] == 0;
  if (plain) {
    __m256 b0 = _mm256_setzero_ps(), b1 = b0, t0 = b0, t1 = b0;
    if (q->bias) b0 = _mm256_loadu_ps(q->bias + c0), b1 = _mm256_loadu_ps(q->bias + c0 + 8);
    if (q->lo) t0 = _mm256_loadu_ps(q->wtot + c0), t1 = _mm256_loadu_ps(q->wtot + c0 + 8);
#pragma GCC unroll 6
    for (int i = 0; i < 6; i++) {
      __m256 sa = _mm256_set1_ps(q->sa[i]);
      __m256 v0 = _mm256_fmadd_ps(_mm256_load_ps(f + 16 * i), sa, b0);
      __m256 v1 = _mm256_fmadd_ps(_mm256_load_ps(f + 16 * i + 8), sa, b1);
      if (q->lo) {
        __m256 l = _mm256_set1_ps(q->lo[i]);
        v0 = _mm256_fmadd_ps(l, t0, v0), v1 = _mm256_fmadd_ps(l, t1, v1);
      }
      if (q->z) {
        v0 = _mm256_add_ps(v0, _mm256_loadu_ps(q->z + i * q->ldz + c0));
        v1 = _mm256_add_ps(v1, _mm256_loadu_ps(q->z + i * q->ldz + c0 + 8));
      }
      _mm256_storeu_ps(c + i * ldc + c0, v0);
      _mm256_storeu_ps(c + i * ldc + c0 + 8, v1);
    }
    return;
  }
#pragma GCC unroll 6
  for (int i = 0; i < 6; i++) {
    int cnt = q->ocnt ? q->ocnt[i] : 0;
    const int32_t *slot = cnt ? q->oslot + i * QNT_MAX_OUTLIERS : NULL;
    const float *res = cnt ? q->ores + i * QNT_MAX_OUTLIERS : NULL;
    __m256 sa = _mm256_set1_ps(q->sa[i]);
#pragma GCC unroll 2
    for (int j = 0; j < 2; j++) {
      int nj = n - 8 * j, co = c0 + 8 * j;
      if (nj <= 0) continue;
      __m256 v = _mm256_mul_ps(_mm256_load_ps(f + 16 * i + 8 * j), sa);
      if (q->lo) v = _mm256_fmadd_ps(_mm256_set1_ps(q->lo[i]), _mm256_loadu_ps(q->wtot + co), v);
      for (int o = 0; o < cnt; o++)
        if (slot[o] >= 0) {
          const float *wr = q->wdq + slot[o] * q->ldw + co;
          __m256 wv = nj >= 8 ? _mm256_loadu_ps(wr) : _mm256_maskload_ps(wr, lanes(nj));
          v = _mm256_fmadd_ps(_mm256_set1_ps(res[o]), wv, v);
        }
      if (q->z) {
        const float *zr = q->z + i * q->ldz + co;
        v = _mm256_add_ps(v, nj >= 8 ? _mm256_loadu_ps(zr) : _mm256_maskload_ps(zr, lanes(nj)));
      }
      store8(c + i * ldc + co, v, nj, false, q->bias ? q->bias + co : NULL);
    }
  }
}

/* The post's row pointers advanced by `rows` rows. */
static qnt_vnni_post post_rows(const qnt_vnni_post *p, int rows) {
  qnt_vnni_post q = *p;
  q.sa += rows;
  if (q.asum) q.asum += rows * q.asum_ld;
  if (q.z) q.z += rows * q.ldz;
  if (q.ocnt) q.ocnt += rows;
  if (q.oslot) q.oslot += rows * QNT_MAX_OUTLIERS;
  if (q.ores) q.ores += rows * QNT_MAX_OUTLIERS;
  if (q.lo) q.lo += rows;
  return q;
}

void qnt_avx2_tile_u8(int mr, bool vnni, int64_t k4, const uint8_t *a, int64_t lda,
                      const uint8_t *b, float *c, int64_t ldc, int ncols, bool acc,
                      const qnt_vnni_post *post, const uint8_t **pf, const uint8_t *pf_end) {
  for (int c0 = 0; c0 < ncols; c0 += 16) {
    if (vnni) {
      tile_vnni(mr, k4, a, lda, b, c0, c, ldc, ncols - c0, acc, post, pf, pf_end);
      continue;
    }
    for (int r = 0; r < mr; r += 4) { /* tiles of 4 rows */
      qnt_vnni_post rows = post_rows(post, r);
      tile_madd(mr - r < 4 ? mr - r : 4, k4, a + r * lda, lda, b, c0, c + r * ldc, ldc, ncols - c0,
                acc, &rows);
    }
  }
}

void qnt_avx2_tile_madd6(const qnt_weight *w, int64_t P, int tiles, const uint8_t *a, int64_t lda,
                         float *c, int64_t ldc, int ncols, const qnt_vnni_post *post,
                         const uint8_t *pf, int64_t pf_lines) {
  /* one line of pf a step pair of the k-loops while lines are left; then
   * the same line of this panel, in L1, again (no branch in the loop) */
  const uint8_t *end = pf ? pf + 64 * pf_lines : NULL, *here = w->codes;
  for (int c0 = 0; c0 < ncols; c0 += 16)
    for (int t = 0; t < tiles; t++) {
      qnt_vnni_post q = post_rows(post, 6 * t);
      bool more = pf && pf < end;
      const uint8_t **p = more ? &pf : &here;
      tile6_madd(w, P, a + 6 * t * lda, lda, c0, c + 6 * t * ldc, ldc, ncols - c0, &q, p,
                 more ? 64 : 0);
    }
}

#else /* no x86-64: the driver never calls these (qnt_cpu_detect says no) */

void qnt_avx2_dequant_panel(const qnt_weight *w, int64_t p, int64_t k0, int64_t kc, float *buf) {}
void qnt_avx2_tile_f32(int mr, int64_t kc, const float *a, int64_t lda, const float *b, float *c,
                       int64_t ldc, int ncols, bool acc, const float *bias) {}
void qnt_avx2_tile_wo(int mr, const qnt_weight *w, int64_t p, const float *a, int64_t lda, float *c,
                      int64_t ldc, int ncols, const float *bias) {}
void qnt_avx2_quant_rows_u8(const float *x, int64_t M, int64_t K, int64_t ldx, uint8_t *q,
                            int64_t ldq, float *sa, const qnt_weight *w, int32_t *asum,
                            float outliers, int32_t *oidx, float *ores, int32_t *ocnt) {}
bool qnt_avx2_quant_rows_a7(const float *x, int64_t M, int64_t K, int64_t ldx, uint8_t *q,
                            int64_t ldq, float *sa, float *lo, float outliers, int32_t *oidx,
                            float *ores, int32_t *ocnt) {
  return false;
}
void qnt_avx2_quant_rows_f8(const float *x, int64_t M, int64_t K, int64_t ldx, float *q,
                            int64_t ldq) {}
void qnt_avx2_outlier_fix(const uint8_t *b, int k4, float r, const float *sw, const int8_t *zw,
                          float *y, int ncols) {}
void qnt_avx2_tile_u8(int mr, bool vnni, int64_t k4, const uint8_t *a, int64_t lda,
                      const uint8_t *b, float *c, int64_t ldc, int ncols, bool acc,
                      const qnt_vnni_post *post, const uint8_t **pf, const uint8_t *pf_end) {}
void qnt_avx2_tile_madd6(const qnt_weight *w, int64_t P, int tiles, const uint8_t *a, int64_t lda,
                         float *c, int64_t ldc, int ncols, const qnt_vnni_post *post,
                         const uint8_t *pf, int64_t pf_lines) {}
#endif
