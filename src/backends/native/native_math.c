/* Vectorised float32 math for the native kernels: exp (Cephes' polynomial,
 * about 1 ulp where it does not underflow), erf (Abramowitz & Stegun
 * 7.1.26, absolute error below 1.5e-7) and the activations built on them;
 * GELU on AVX-512 has a table of its own (gelu512).
 *
 * libm's expf/erff are scalar calls, and the compiler will not if-convert
 * the clamps of a scalar version under the default -ftrapping-math, so the
 * loops are written with GCC/Clang vector extensions, eight lanes at a time;
 * other compilers get scalar loops. */
#include <math.h>
#include <string.h>

#include "backends/native/native.h"

#if defined(__GNUC__) || defined(__clang__)
/* Eight lanes: two SSE registers on the baseline build, one AVX register in
 * the AVX2 clone (NAT_CLONES). Helpers take pointers: passing 32-byte
 * vectors by value would depend on the ABI of the clone. */
typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));

#define SPLAT(x) ((v8f){(x), (x), (x), (x), (x), (x), (x), (x)})
/* m ? a : b, lane by lane (m lanes are all ones or all zeros) */
#define VSEL(m, a, b) ((v8f)(((m) & (v8i)(a)) | (~(m) & (v8i)(b))))

static inline void vexp(v8f *io) {
  v8f in = *io;
  v8f x = VSEL(in > SPLAT(-87.0f), in, SPLAT(-87.0f)); /* NaN goes here, put back below */
  x = VSEL(x < SPLAT(88.0f), x, SPLAT(88.0f));
  /* n = round(x / ln 2) with the 1.5 * 2^23 trick (no SSE4.1 round needed) */
  v8f n = (x * SPLAT(1.44269504088896341f) + SPLAT(12582912.0f)) - SPLAT(12582912.0f);
  v8f r = x - n * SPLAT(0.693359375f);
  r = r - n * SPLAT(-2.12194440e-4f);
  v8f p = SPLAT(1.9875691500e-4f);
  p = p * r + SPLAT(1.3981999507e-3f);
  p = p * r + SPLAT(8.3334519073e-3f);
  p = p * r + SPLAT(4.1665795894e-2f);
  p = p * r + SPLAT(1.6666665459e-1f);
  p = p * r + SPLAT(5.0000001201e-1f);
  v8f y = p * r * r + r + SPLAT(1.0f);
  v8i e = (__builtin_convertvector(n, v8i) + 127) << 23;
  v8f res = y * (v8f)e;
  res = VSEL(in > SPLAT(88.7f), SPLAT(INFINITY), res);
  res = VSEL(in < SPLAT(-87.3f), SPLAT(0.0f), res); /* below the normal range */
  *io = VSEL(in == in, res, in);
}

static inline void verf(v8f *io) {
  const v8i abs_mask = {0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff,
                        0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff};
  v8f x = *io;
  v8f a = (v8f)((v8i)x & abs_mask);
  v8f t = SPLAT(1.0f) / (SPLAT(1.0f) + SPLAT(0.3275911f) * a);
  v8f p = SPLAT(1.061405429f);
  p = p * t - SPLAT(1.453152027f);
  p = p * t + SPLAT(1.421413741f);
  p = p * t - SPLAT(0.284496736f);
  p = p * t + SPLAT(0.254829592f);
  v8f e = -a * a;
  vexp(&e);
  v8f y = SPLAT(1.0f) - p * t * e;
  y = (v8f)(((v8i)y & abs_mask) | ((v8i)x & ~abs_mask)); /* sign of x */
  /* |x| < 0.5: Taylor's x P(x^2) (nat_erf8's) */
  v8f z = x * x, s = SPLAT(1.2055332981789664e-4f);
  s = s * z + SPLAT(-8.548325508299338e-4f);
  s = s * z + SPLAT(5.223977625442188e-3f);
  s = s * z + SPLAT(-2.6866170645131252e-2f);
  s = s * z + SPLAT(1.1283791670955126e-1f);
  s = s * z + SPLAT(-3.7612638903183754e-1f);
  s = s * z + SPLAT(1.1283791670955126f);
  *io = VSEL(a < SPLAT(0.5f), s * x, y);
}

static inline void vgelu(v8f *io) {
  v8f x = *io, e = x * SPLAT(0.70710678118654752f);
  verf(&e);
  *io = SPLAT(0.5f) * x * (SPLAT(1.0f) + e);
}

static inline void vsigmoid(v8f *io) {
  v8f e = -*io;
  vexp(&e);
  *io = SPLAT(1.0f) / (SPLAT(1.0f) + e);
}

/* y[i] = f(x[i]) eight at a time; the tail through a padded block. */
#define MAP8(f, x, y, n)                                                                           \
  do {                                                                                             \
    int64_t i_ = 0;                                                                                \
    for (; i_ + 8 <= (n); i_ += 8) {                                                               \
      v8f v_;                                                                                      \
      memcpy(&v_, (x) + i_, sizeof v_);                                                            \
      f(&v_);                                                                                      \
      memcpy((y) + i_, &v_, sizeof v_);                                                            \
    }                                                                                              \
    if (i_ < (n)) {                                                                                \
      float b_[8] = {0};                                                                           \
      memcpy(b_, (x) + i_, sizeof(float) * (size_t)((n)-i_));                                      \
      v8f v_;                                                                                      \
      memcpy(&v_, b_, sizeof v_);                                                                  \
      f(&v_);                                                                                      \
      memcpy(b_, &v_, sizeof v_);                                                                  \
      memcpy((y) + i_, b_, sizeof(float) * (size_t)((n)-i_));                                      \
    }                                                                                              \
  } while (0)

/* GELU's tanh form, 0.5 x (1 + tanh(u)) with u = sqrt(2/pi) (x + 0.044715
 * x^3), as x sigmoid(2u): the same function without the cancellation of 1
 * + tanh(u) for negative x. */
static inline void vgelu_tanh(v8f *io) {
  v8f x = *io, u = x * (SPLAT(1.5957691216057308f) + SPLAT(0.0713548162726f) * x * x);
  vsigmoid(&u);
  *io = x * u;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "backends/native/native_avx512.h"
#define NAT_HAVE_GELU512 1
/* GELU sixteen lanes at a time on AVX-512 (the activation of every BERT
 * FFN, run in the epilogue of its first product). Not vgelu's math: its exp
 * and reciprocal cost 1.9 cycles an element on Zen 4, and a rational erf
 * waits on vdivps (one per 6 cycles there). A table of short polynomials
 * needs only multiply-adds and permutes: 0.5 erf(a / sqrt 2), a = |x|, in
 * 32 pieces of width 1/5.6, piece j of degree 4 in d = 5.6 a - j; the k-th
 * coefficients of all pieces fill two registers, and vpermt2ps picks each
 * lane's by the low five bits of j. Piece 31 is the constant 0.5, so large
 * |x| give x and -0 exactly. gelu_tab[k][j], the coefficient of d^k in
 * piece j, is fitted and printed by scripts/gelu_table.py (pieces within
 * 1.5e-8 of 0.5 erf, the constant within 2.6e-8). Measured on
 * Zen 4 (128 x 1024 floats, chunks of 64 to all): 0.22 against 0.52 ns an
 * element (0.8 against 1.9 cycles); error at most 8.3e-8 max(1, |x|) over
 * every finite float, most of it the final rounding (A&S + exp: 2.1e-7). */
static const float gelu_tab[5][32] = {
    {0.0f,         0.0708628893f, 0.139507577f, 0.203921989f, 0.262474746f, 0.314033151f,
     0.358011603f, 0.394350231f,  0.423436284f, 0.445988476f, 0.462927222f, 0.475251526f,
     0.483937711f, 0.489868134f,  0.493790329f, 0.496303141f, 0.497862637f, 0.498800159f,
     0.499346167f, 0.499654174f,  0.499822468f, 0.499911577f, 0.499957263f, 0.499979973f,
     0.49999088f,  0.499995977f,  0.499998271f, 0.499999285f, 0.499999702f, 0.499999881f,
     0.49999997f,  0.5f},
    {0.0712396875f,   0.0701128468f,   0.06683819f,     0.0617167279f,
     0.0551991798f,   0.0478204414f,   0.0401278473f,   0.0326159261f,
     0.0256781895f,   0.0195817109f,   0.0144639937f,   0.0103484932f,
     0.00717162108f,  0.00481403107f,  0.0031300534f,   0.00197126926f,
     0.00120251765f,  0.000710539578f, 0.00040666468f,  0.000225442564f,
     0.000121056117f, 6.29635033e-05f, 3.17206686e-05f, 1.54791487e-05f,
     7.31643377e-06f, 3.34970196e-06f, 1.48545701e-06f, 6.38072947e-07f,
     2.6547707e-07f,  1.06988551e-07f, 4.17636628e-08f, 0.0f},
    {1.40607625e-07f,  -0.00111790572f,  -0.00213139085f,  -0.00295200804f,
     -0.00352046988f,  -0.00381182646f,  -0.00383834471f,  -0.00364017254f,
     -0.00327538396f,  -0.00280963467f,  -0.00230570347f,  -0.00181515364f,
     -0.00137196621f,  -0.000997670344f, -0.000698460208f, -0.000471095205f,
     -0.00030686846f,  -0.000192329739f, -0.000117148666f, -6.86776402e-05f,
     -3.8199847e-05f,  -2.08866695e-05f, -1.07921815e-05f, -5.73877651e-06f,
     -2.42183569e-06f, -1.12822056e-06f, -2.83609552e-07f, -1.92223439e-07f,
     2.44219791e-07f,  1.87011537e-07f,  -4.17804415e-07f, 0.0f},
    {-0.000379498844f, -0.000360294158f, -0.0003096289f,  -0.000233633546f,
     -0.000143666883f, -5.15985921e-05f, 3.14324534e-05f, 9.7178854e-05f,
     0.000141811892f,  0.000164571175f,  0.000168148865f, 0.000157140763f,
     0.00013687207f,   0.000112289832f,  8.73495883e-05f, 6.47142515e-05f,
     4.58097638e-05f,  3.10499345e-05f,  2.01891944e-05f, 1.26105315e-05f,
     7.57445787e-06f,  4.37897688e-06f,  2.43830937e-06f, 1.30859098e-06f,
     6.78320134e-07f,  3.38657713e-07f,  1.6334026e-07f,  7.59533592e-08f,
     3.41325688e-08f,  1.48082044e-08f,  6.20644958e-09f, 0.0f},
    {2.16615604e-06f,  8.89039893e-06f,  1.64432713e-05f,  2.12405466e-05f,
     2.37073236e-05f,  2.08479414e-05f,  1.74030756e-05f,  1.39093345e-05f,
     8.67223753e-06f,  2.31551735e-06f,  -2.65747599e-06f, -3.39650546e-06f,
     -6.36725372e-06f, -6.8684335e-06f,  -6.84987435e-06f, -6.58066574e-06f,
     -3.83942461e-06f, -4.17126375e-06f, -5.56409873e-07f, -4.42329764e-08f,
     -2.58736554e-06f, -1.38449491e-06f, -1.69492864e-06f, 3.38845645e-08f,
     -1.6234834e-06f,  -8.86711121e-07f, -1.35827975e-06f, -3.44356067e-07f,
     -1.45698834e-06f, -9.48468085e-07f, 1.58891874e-06f,  0.0f},
};

typedef struct gelu_lut {
  __m512 lo[5], hi[5]; /* coefficient k of pieces 0..15 and 16..31 */
} gelu_lut;

static inline __attribute__((always_inline, target("avx512f"))) __m512 gelu16(__m512 v,
                                                                              const gelu_lut *t) {
  const __m512 s = _mm512_set1_ps(5.6f), magic = _mm512_set1_ps(8388608.0f); /* 2^23 */
  __m512 a0 = _mm512_abs_ps(v);
  /* NaN (min returns its second operand) and inf land in piece 31 */
  __m512 a = _mm512_min_ps(a0, _mm512_set1_ps(5.5f));
  /* a s + 2^23 rounds a s to the integer j, the low bits of the float */
  __m512 k = _mm512_fmadd_ps(a, s, magic);
  __m512 d = _mm512_fmsub_ps(a, s, _mm512_sub_ps(k, magic));
  __m512i j = _mm512_castps_si512(k);
  __m512 e = _mm512_permutex2var_ps(t->lo[4], j, t->hi[4]);
  e = _mm512_fmadd_ps(e, d, _mm512_permutex2var_ps(t->lo[3], j, t->hi[3]));
  e = _mm512_fmadd_ps(e, d, _mm512_permutex2var_ps(t->lo[2], j, t->hi[2]));
  e = _mm512_fmadd_ps(e, d, _mm512_permutex2var_ps(t->lo[1], j, t->hi[1]));
  e = _mm512_fmadd_ps(e, d, _mm512_permutex2var_ps(t->lo[0], j, t->hi[0]));
  /* x/2 + |x| e in one rounding (x Phi(x) carries inf, NaN and -inf's
   * NaN), formed negated and flipped: the exact 0 of x <= -5.45 or x = -0
   * is then -0, as x Phi(x) gives, not the +0 of a plain sum */
  __m512 ng = _mm512_fnmsub_ps(a0, e, _mm512_mul_ps(v, _mm512_set1_ps(0.5f)));
  return _mm512_castsi512_ps(
      _mm512_xor_si512(_mm512_castps_si512(ng), _mm512_set1_epi32((int)0x80000000u)));
}

static inline __attribute__((always_inline, target("avx512f"))) void gelu_lut_load(gelu_lut *t) {
  for (int c = 0; c < 5; c++) {
    t->lo[c] = _mm512_loadu_ps(gelu_tab[c]);
    t->hi[c] = _mm512_loadu_ps(gelu_tab[c] + 16);
  }
}

static inline __attribute__((always_inline, target("avx512f"))) void gelu_row(float *x, int64_t n,
                                                                              const gelu_lut *t) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) { /* unmasked, two blocks a step: ~8% faster */
    __m512 y0 = gelu16(_mm512_loadu_ps(x + i), t), y1 = gelu16(_mm512_loadu_ps(x + i + 16), t);
    _mm512_storeu_ps(x + i, y0);
    _mm512_storeu_ps(x + i + 16, y1);
  }
  for (; i < n; i += 16) {
    __mmask16 m = nat_tail16(n - i);
    _mm512_mask_storeu_ps(x + i, m, gelu16(_mm512_maskz_loadu_ps(m, x + i), t));
  }
}

__attribute__((target("avx512f"))) static void gelu512(float *x, int64_t n) {
  gelu_lut t;
  gelu_lut_load(&t);
  gelu_row(x, n, &t);
}

__attribute__((target("avx512f"))) static void gelu512_tile(float *y, int64_t ldy, int64_t rows,
                                                            int64_t n) {
  gelu_lut t;
  gelu_lut_load(&t);
  for (int64_t r = 0; r < rows; r++)
    gelu_row(y + r * ldy, n, &t);
}

/* exp sixteen lanes at a time (softmax: attention's second cost after its
 * products). */
__attribute__((target("avx512f"))) static void exp512(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, m, nat_exp16(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

/* One LayerNormalization row, y = (x - mean) / sqrt(var + eps) * scale
 * (+ bias), sixteen lanes at a time: the mean, then the mean of squared
 * deviations (two passes, no cancellation), then the output. The row (1 KB
 * for BERT's 256) stays in L1 between passes. Two accumulators a pass
 * halve the chain of dependent adds. Against the 8-lane loops of
 * native_nn.c: the 4-layer BERT's nine LayerNorms (128 x 256 each) 130 -> 76
 * us a run on one thread. */
__attribute__((target("avx512f"))) static void layernorm512(const float *x, float *y, int64_t n,
                                                            const float *scale, const float *bias,
                                                            double eps) {
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 = _mm512_add_ps(s0, _mm512_loadu_ps(x + i));
    s1 = _mm512_add_ps(s1, _mm512_loadu_ps(x + i + 16));
  }
  for (; i < n; i += 16)
    s0 = _mm512_add_ps(s0, _mm512_maskz_loadu_ps(nat_tail16(n - i), x + i));
  float mean = _mm512_reduce_add_ps(_mm512_add_ps(s0, s1)) / (float)n;
  __m512 mv = _mm512_set1_ps(mean);
  s0 = s1 = _mm512_setzero_ps();
  for (i = 0; i + 32 <= n; i += 32) {
    __m512 d0 = _mm512_sub_ps(_mm512_loadu_ps(x + i), mv);
    __m512 d1 = _mm512_sub_ps(_mm512_loadu_ps(x + i + 16), mv);
    s0 = _mm512_fmadd_ps(d0, d0, s0);
    s1 = _mm512_fmadd_ps(d1, d1, s1);
  }
  for (; i < n; i += 16) {
    __mmask16 m = nat_tail16(n - i);
    __m512 d = _mm512_maskz_sub_ps(m, _mm512_maskz_loadu_ps(m, x + i), mv);
    s0 = _mm512_fmadd_ps(d, d, s0);
  }
  float var = _mm512_reduce_add_ps(_mm512_add_ps(s0, s1)) / (float)n;
  __m512 iv = _mm512_set1_ps((float)(1.0 / sqrt((double)var + eps)));
  for (i = 0; i < n; i += 16) {
    __mmask16 m = nat_tail16(n - i);
    __m512 d = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), mv), iv);
    __m512 b = bias ? _mm512_maskz_loadu_ps(m, bias + i) : _mm512_setzero_ps();
    _mm512_mask_storeu_ps(y + i, m, _mm512_fmadd_ps(d, _mm512_maskz_loadu_ps(m, scale + i), b));
  }
}

/* Sigmoid and tanh sixteen lanes at a time, as nat_sigmoid8/nat_tanh8
 * (native_avx2_math.h): exp of -|x| only, so neither overflows. */
static inline __attribute__((always_inline, target("avx512f"))) __m512 sigmoid16(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.0f);
  __m512 e = nat_exp16(_mm512_castsi512_ps(
      _mm512_or_si512(_mm512_castps_si512(x), _mm512_set1_epi32((int)0x80000000u))));
  __m512 r = _mm512_div_ps(one, _mm512_add_ps(one, e));
  __mmask16 neg =
      _mm512_test_epi32_mask(_mm512_castps_si512(x), _mm512_set1_epi32((int)0x80000000u));
  return _mm512_mask_mul_ps(r, neg, e, r);
}

static inline __attribute__((always_inline, target("avx512f"))) __m512 tanh16(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.0f);
  __m512 a = _mm512_abs_ps(x);
  __m512 e = nat_exp16(_mm512_mul_ps(a, _mm512_set1_ps(-2.0f)));
  __m512 big = _mm512_div_ps(_mm512_sub_ps(one, e), _mm512_add_ps(one, e));
  __m512 z = _mm512_mul_ps(x, x), p = _mm512_set1_ps(-5.70498872745e-3f);
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(2.06390887954e-2f));
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-5.37397155531e-2f));
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(1.33314422036e-1f));
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-3.33332819422e-1f));
  __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(p, z), x, x);
  __m512i sg = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32((int)0x80000000u));
  __m512 r =
      _mm512_mask_mov_ps(big, _mm512_cmp_ps_mask(a, _mm512_set1_ps(0.625f), _CMP_LT_OQ), small);
  r = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(_mm512_abs_ps(r)), sg)); /* -0 too */
  return _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);
}

/* erf sixteen lanes at a time, as nat_erf8: A&S from 0.5, Taylor below */
static inline __attribute__((always_inline, target("avx512f"))) __m512 erf16(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.0f);
  __m512 a = _mm512_abs_ps(x);
  __m512 t = _mm512_div_ps(one, _mm512_fmadd_ps(_mm512_set1_ps(0.3275911f), a, one));
  __m512 p = _mm512_set1_ps(1.061405429f);
  p = _mm512_fmsub_ps(p, t, _mm512_set1_ps(1.453152027f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.421413741f));
  p = _mm512_fmsub_ps(p, t, _mm512_set1_ps(0.284496736f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.254829592f));
  __m512 e = nat_exp16(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(a, a)));
  __m512 y = _mm512_abs_ps(_mm512_fnmadd_ps(_mm512_mul_ps(p, t), e, one));
  __m512i sg = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32((int)0x80000000u));
  y = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(y), sg));
  __m512 z = _mm512_mul_ps(x, x), s = _mm512_set1_ps(1.2055332981789664e-4f); /* nat_erf8's */
  s = _mm512_fmadd_ps(s, z, _mm512_set1_ps(-8.548325508299338e-4f));
  s = _mm512_fmadd_ps(s, z, _mm512_set1_ps(5.223977625442188e-3f));
  s = _mm512_fmadd_ps(s, z, _mm512_set1_ps(-2.6866170645131252e-2f));
  s = _mm512_fmadd_ps(s, z, _mm512_set1_ps(1.1283791670955126e-1f));
  s = _mm512_fmadd_ps(s, z, _mm512_set1_ps(-3.7612638903183754e-1f));
  s = _mm512_fmadd_ps(s, z, _mm512_set1_ps(1.1283791670955126f));
  y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(a, _mm512_set1_ps(0.5f), _CMP_LT_OQ),
                         _mm512_mul_ps(s, x));
  return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);
}

/* y = f(x) sixteen lanes a step, the tail masked */
#define MAP16(f, x, y, n)                                                                          \
  do {                                                                                             \
    for (int64_t i_ = 0; i_ < (n); i_ += 16) {                                                     \
      __mmask16 m_ = nat_tail16((n)-i_);                                                           \
      _mm512_mask_storeu_ps((y) + i_, m_, f(_mm512_maskz_loadu_ps(m_, (x) + i_)));                 \
    }                                                                                              \
  } while (0)

__attribute__((target("avx512f"))) static void sigmoid512(const float *x, float *y, int64_t n) {
  MAP16(sigmoid16, x, y, n);
}
__attribute__((target("avx512f"))) static void tanh512(const float *x, float *y, int64_t n) {
  MAP16(tanh16, x, y, n);
}
__attribute__((target("avx512f"))) static void erf512(const float *x, float *y, int64_t n) {
  MAP16(erf16, x, y, n);
}

/* vgelu_tanh's x sigmoid(2u) */
static inline __attribute__((always_inline, target("avx512f"))) __m512 gelu_tanh16(__m512 x) {
  __m512 c = _mm512_fmadd_ps(_mm512_set1_ps(0.0713548162726f), _mm512_mul_ps(x, x),
                             _mm512_set1_ps(1.5957691216057308f));
  return _mm512_mul_ps(x, sigmoid16(_mm512_mul_ps(x, c)));
}
__attribute__((target("avx512f"))) static void gelu_tanh512(const float *x, float *y, int64_t n) {
  MAP16(gelu_tanh16, x, y, n);
}

/* One softmax row, y = exp(x - max) / sum, sixteen lanes a step: the max,
 * then exp and the sum in one pass, then the scale (x and y may be the
 * same). */
__attribute__((target("avx512f"))) static void softmax512(const float *x, float *y, int64_t n) {
  __m512 mx = _mm512_set1_ps(-INFINITY);
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = nat_tail16(n - i);
    mx = _mm512_mask_max_ps(mx, m, mx, _mm512_maskz_loadu_ps(m, x + i));
  }
  __m512 top = _mm512_set1_ps(_mm512_reduce_max_ps(mx)), s0 = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = nat_tail16(n - i);
    __m512 e = nat_exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), top));
    _mm512_mask_storeu_ps(y + i, m, e);
    s0 = _mm512_mask_add_ps(s0, m, s0, e);
  }
  __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(s0));
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = nat_tail16(n - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, y + i), inv));
  }
}

/* ---- AVX2 + FMA: the eight-lane twins ------------------------------------ */
#include "backends/native/native_avx2_math.h"

#define MAP8V(f, x, y, n)                                                                          \
  do {                                                                                             \
    int64_t i_ = 0;                                                                                \
    for (; i_ + 8 <= (n); i_ += 8)                                                                 \
      _mm256_storeu_ps((y) + i_, f(_mm256_loadu_ps((x) + i_)));                                    \
    if (i_ < (n)) {                                                                                \
      __m256i m_ = nat_tail8((n)-i_);                                                              \
      _mm256_maskstore_ps((y) + i_, m_, f(_mm256_maskload_ps((x) + i_, m_)));                      \
    }                                                                                              \
  } while (0)

NAT_T256 static void exp256(const float *x, float *y, int64_t n) { MAP8V(nat_exp8, x, y, n); }
NAT_T256 static void erf256(const float *x, float *y, int64_t n) { MAP8V(nat_erf8, x, y, n); }
NAT_T256 static void sigmoid256(const float *x, float *y, int64_t n) {
  MAP8V(nat_sigmoid8, x, y, n);
}
NAT_INL256 __m256 gelu_tanh8(__m256 x) {
  __m256 c = _mm256_fmadd_ps(_mm256_set1_ps(0.0713548162726f), _mm256_mul_ps(x, x),
                             _mm256_set1_ps(1.5957691216057308f));
  return _mm256_mul_ps(x, nat_sigmoid8(_mm256_mul_ps(x, c)));
}
NAT_T256 static void gelu_tanh256(const float *x, float *y, int64_t n) {
  MAP8V(gelu_tanh8, x, y, n);
}
NAT_T256 static void tanh256(const float *x, float *y, int64_t n) { MAP8V(nat_tanh8, x, y, n); }

/* GELU eight lanes at a time on a table of its own: gelu16's 32 pieces
 * cost AVX2 four vpermps and three blends a coefficient (no two-table
 * permute), 1.4 ns an element on a Xeon, where the blends take three
 * micro-ops each; the five gathers tried before them were no faster. Here
 * 8 pieces of width 1/S, S = 6.5 / 5.6, fill one register a coefficient:
 * pieces 0-6 are degree 7 in d = a S - j, a = |x|, and piece 7 is the
 * constant 0.5 (from a = 5.6 on; a is clamped to 7.25 / S, so j <= 7 and
 * NaN, which min turns into the clamp, lands there too): 8 permutes and 7
 * multiply-adds a vector. gelu_tab8[k][j], the coefficient of d^k in piece
 * j, is fitted and printed by scripts/gelu_table256.py (pieces within
 * 9.6e-9 of 0.5 erf, the constant within 1.1e-8); the final arithmetic is
 * gelu16's, so x >= 6 gives x and x <= -6 gives -0 exactly. */
/* S = 1.16071427; max error of the pieces 9.59e-09, of the constant tail 1.07e-08 */
static const float gelu_tab8[8][8] = {
    {0.0f, 0.305529237f, 0.457562685f, 0.495125622f, 0.499715686f, 0.499991745f, 0.499999881f,
     0.5f},
    {0.343704134f, 0.237141475f, 0.0778889507f, 0.0121783856f, 0.000906461093f, 3.21184198e-05f,
     5.41757231e-07f, 0.0f},
    {-4.35390177e-07f, -0.0880092233f, -0.0578124523f, -0.0135594066f, -0.00134556042f,
     -5.91070166e-05f, -1.08632707e-06f, 0.0f},
    {-0.042513039f, -0.00756153418f, 0.0189722292f, 0.00855766423f, 0.00121959078f, 6.97565483e-05f,
     1.72396653e-06f, 0.0f},
    {-3.76900934e-05f, 0.0122904796f, 0.000107833839f, -0.00308359461f, -0.000739784737f,
     -6.25472821e-05f, -3.04210062e-06f, 0.0f},
    {0.00485724164f, -0.00098108931f, -0.00214542029f, 0.000421503559f, 0.000303012785f,
     3.47919267e-05f, 1.38070425e-06f, 0.0f},
    {-0.000206013399f, -0.00107430422f, 0.000511247548f, 0.000144441234f, -7.28659579e-05f,
     -2.35049401e-06f, 2.4875244e-06f, 0.0f},
    {-0.000272310077f, 0.000192651074f, 8.08856712e-05f, -8.28888587e-05f, 4.97281235e-06f,
     5.38199856e-06f, 4.46311674e-07f, 0.0f},
};

typedef struct gelu_lut8 {
  __m256 c[8]; /* coefficient k of the 8 pieces */
} gelu_lut8;

NAT_INL256 void gelu_lut8_load(gelu_lut8 *t) {
  for (int k = 0; k < 8; k++)
    t->c[k] = _mm256_loadu_ps(gelu_tab8[k]);
}

NAT_INL256 __m256 gelu8(__m256 v, const gelu_lut8 *t) {
  const float S = 1.16071427f;
  const __m256 s = _mm256_set1_ps(S), magic = _mm256_set1_ps(8388608.0f),
               sign = _mm256_set1_ps(-0.0f);
  __m256 a0 = _mm256_andnot_ps(sign, v);
  __m256 a = _mm256_min_ps(a0, _mm256_set1_ps(7.25f / S));
  __m256 k = _mm256_fmadd_ps(a, s, magic);
  __m256 d = _mm256_fmsub_ps(a, s, _mm256_sub_ps(k, magic));
  __m256i j = _mm256_castps_si256(k);
  __m256 e = _mm256_permutevar8x32_ps(t->c[7], j);
#pragma GCC unroll 7
  for (int c = 6; c >= 0; c--)
    e = _mm256_fmadd_ps(e, d, _mm256_permutevar8x32_ps(t->c[c], j));
  __m256 ng = _mm256_fnmsub_ps(a0, e, _mm256_mul_ps(v, _mm256_set1_ps(0.5f)));
  return _mm256_xor_ps(ng, sign);
}

NAT_INL256 void gelu_row8(float *x, int64_t n, const gelu_lut8 *t) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(x + i, gelu8(_mm256_loadu_ps(x + i), t));
  if (i < n) {
    __m256i m = nat_tail8(n - i);
    _mm256_maskstore_ps(x + i, m, gelu8(_mm256_maskload_ps(x + i, m), t));
  }
}

NAT_T256 static void gelu256(float *x, int64_t n) {
  gelu_lut8 t;
  gelu_lut8_load(&t);
  gelu_row8(x, n, &t);
}

NAT_T256 static void gelu256_tile(float *y, int64_t ldy, int64_t rows, int64_t n) {
  gelu_lut8 t;
  gelu_lut8_load(&t);
  for (int64_t r = 0; r < rows; r++)
    gelu_row8(y + r * ldy, n, &t);
}

/* layernorm512's three passes eight lanes at a time */
NAT_T256 static void layernorm256(const float *x, float *y, int64_t n, const float *scale,
                                  const float *bias, double eps) {
  /* plain loads but for the tail: maskload and maskstore cost several
   * micro-ops on Intel (the first version, masked throughout, ran no
   * faster than the compiler's 8-lane loops) */
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  int64_t i = 0, n8 = n & ~(int64_t)7;
  __m256i tm = nat_tail8(n - n8);
  for (; i + 16 <= n; i += 16) {
    s0 = _mm256_add_ps(s0, _mm256_loadu_ps(x + i));
    s1 = _mm256_add_ps(s1, _mm256_loadu_ps(x + i + 8));
  }
  for (; i < n8; i += 8)
    s0 = _mm256_add_ps(s0, _mm256_loadu_ps(x + i));
  if (n8 < n) s1 = _mm256_add_ps(s1, _mm256_maskload_ps(x + n8, tm));
  float mean = nat_hsum8(_mm256_add_ps(s0, s1)) / (float)n;
  __m256 mv = _mm256_set1_ps(mean);
  s0 = s1 = _mm256_setzero_ps();
  for (i = 0; i + 16 <= n; i += 16) {
    __m256 d0 = _mm256_sub_ps(_mm256_loadu_ps(x + i), mv);
    __m256 d1 = _mm256_sub_ps(_mm256_loadu_ps(x + i + 8), mv);
    s0 = _mm256_fmadd_ps(d0, d0, s0);
    s1 = _mm256_fmadd_ps(d1, d1, s1);
  }
  for (; i < n8; i += 8) {
    __m256 d = _mm256_sub_ps(_mm256_loadu_ps(x + i), mv);
    s0 = _mm256_fmadd_ps(d, d, s0);
  }
  if (n8 < n) {
    __m256 d =
        _mm256_and_ps(_mm256_sub_ps(_mm256_maskload_ps(x + n8, tm), mv), _mm256_castsi256_ps(tm));
    s1 = _mm256_fmadd_ps(d, d, s1);
  }
  float var = nat_hsum8(_mm256_add_ps(s0, s1)) / (float)n;
  __m256 iv = _mm256_set1_ps((float)(1.0 / sqrt((double)var + eps)));
  for (i = 0; i < n8; i += 8) {
    __m256 d = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), mv), iv);
    __m256 b = bias ? _mm256_loadu_ps(bias + i) : _mm256_setzero_ps();
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(d, _mm256_loadu_ps(scale + i), b));
  }
  if (n8 < n) {
    __m256 d = _mm256_mul_ps(_mm256_sub_ps(_mm256_maskload_ps(x + n8, tm), mv), iv);
    __m256 b = bias ? _mm256_maskload_ps(bias + n8, tm) : _mm256_setzero_ps();
    _mm256_maskstore_ps(y + n8, tm, _mm256_fmadd_ps(d, _mm256_maskload_ps(scale + n8, tm), b));
  }
}

/* softmax512's row eight lanes at a time */
NAT_T256 static void softmax256(const float *x, float *y, int64_t n) {
  __m256 mx = _mm256_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    mx = _mm256_max_ps(mx, _mm256_loadu_ps(x + i));
  if (i < n) { /* masked lanes load 0: keep mx there */
    __m256i m = nat_tail8(n - i);
    mx = _mm256_blendv_ps(mx, _mm256_max_ps(mx, _mm256_maskload_ps(x + i, m)),
                          _mm256_castsi256_ps(m));
  }
  __m256 top = _mm256_set1_ps(nat_hmax8(mx)), s0 = _mm256_setzero_ps();
  for (i = 0; i + 8 <= n; i += 8) {
    __m256 e = nat_exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), top));
    _mm256_storeu_ps(y + i, e);
    s0 = _mm256_add_ps(s0, e);
  }
  if (i < n) {
    __m256i m = nat_tail8(n - i);
    __m256 e = _mm256_and_ps(nat_exp8(_mm256_sub_ps(_mm256_maskload_ps(x + i, m), top)),
                             _mm256_castsi256_ps(m));
    _mm256_maskstore_ps(y + i, m, e);
    s0 = _mm256_add_ps(s0, e);
  }
  __m256 inv = _mm256_set1_ps(1.0f / nat_hsum8(s0));
  for (i = 0; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(y + i), inv));
  if (i < n) {
    __m256i m = nat_tail8(n - i);
    _mm256_maskstore_ps(y + i, m, _mm256_mul_ps(_mm256_maskload_ps(y + i, m), inv));
  }
}

/* (the C runtime initialises the CPU model in a constructor) */
static bool have_avx512(void) { return nat_isa() >= NAT_ISA_AVX512; }
static bool have_avx2(void) { return nat_isa() >= NAT_ISA_AVX2; }
#endif

/* Each entry point picks the widest level of the run (nat_isa()): the
 * AVX-512 and AVX2 kernels above, else the eight-lane vector-extension
 * loops of the baseline build. */
NAT_CLONES void nat_exp_f32(const float *x, float *y, int64_t n) {
#ifdef NAT_HAVE_GELU512
  if (have_avx512()) {
    exp512(x, y, n);
    return;
  }
  if (have_avx2()) {
    exp256(x, y, n);
    return;
  }
#endif
  MAP8(vexp, x, y, n);
}

NAT_CLONES void nat_erf_f32(const float *x, float *y, int64_t n) {
#ifdef NAT_HAVE_GELU512
  if (have_avx512()) {
    erf512(x, y, n);
    return;
  }
  if (have_avx2()) {
    erf256(x, y, n);
    return;
  }
#endif
  MAP8(verf, x, y, n);
}

NAT_CLONES void nat_gelu_tanh_f32(const float *x, float *y, int64_t n) {
#ifdef NAT_HAVE_GELU512
  if (have_avx512()) {
    gelu_tanh512(x, y, n);
    return;
  }
  if (have_avx2()) {
    gelu_tanh256(x, y, n);
    return;
  }
#endif
  MAP8(vgelu_tanh, x, y, n);
}

NAT_CLONES void nat_act_f32(const ait_act *a, float *x, int64_t n) {
  switch (a->kind) {
  case AIT_ACT_GELU:
#ifdef NAT_HAVE_GELU512
    if (have_avx512()) {
      gelu512(x, n);
      return;
    }
    if (have_avx2()) {
      gelu256(x, n);
      return;
    }
#endif
    MAP8(vgelu, x, x, n);
    return;
  case AIT_ACT_SIGMOID:
#ifdef NAT_HAVE_GELU512
    if (have_avx512()) {
      sigmoid512(x, x, n);
      return;
    }
    if (have_avx2()) {
      sigmoid256(x, x, n);
      return;
    }
#endif
    MAP8(vsigmoid, x, x, n);
    return;
  case AIT_ACT_TANH:
#ifdef NAT_HAVE_GELU512
    if (have_avx512()) {
      tanh512(x, x, n);
      return;
    }
    if (have_avx2()) {
      tanh256(x, x, n);
      return;
    }
#endif
    ait_act_apply_f32(a, x, n);
    return;
  default: nat_elt_act_f32(a, x, n); return; /* native_elt_act.c */
  }
}

void nat_gelu512_tile(float *y, int64_t ldy, int64_t rows, int64_t n) {
#ifdef NAT_HAVE_GELU512
  gelu512_tile(y, ldy, rows, n);
#endif
}

void nat_gelu256_tile(float *y, int64_t ldy, int64_t rows, int64_t n) {
#ifdef NAT_HAVE_GELU512
  gelu256_tile(y, ldy, rows, n);
#endif
}

bool nat_layernorm_row(const float *x, float *y, int64_t n, const float *scale, const float *bias,
                       double eps) {
#ifdef NAT_HAVE_GELU512
  if (have_avx512()) {
    layernorm512(x, y, n, scale, bias, eps);
    return true;
  }
  if (have_avx2()) {
    layernorm256(x, y, n, scale, bias, eps);
    return true;
  }
#endif
  return false;
}

bool nat_softmax_row(const float *x, float *y, int64_t n) {
#ifdef NAT_HAVE_GELU512
  if (have_avx512()) {
    softmax512(x, y, n);
    return true;
  }
  if (have_avx2()) {
    softmax256(x, y, n);
    return true;
  }
#endif
  return false;
}

#else /* no vector extensions: libm */

void nat_exp_f32(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    y[i] = expf(x[i]);
}

void nat_erf_f32(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    y[i] = erff(x[i]);
}

void nat_gelu_tanh_f32(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    y[i] = x[i] / (1.0f + expf(-1.5957691216057308f * (x[i] + 0.044715f * x[i] * x[i] * x[i])));
}

void nat_act_f32(const ait_act *a, float *x, int64_t n) { nat_elt_act_f32(a, x, n); }

void nat_gelu512_tile(float *y, int64_t ldy, int64_t rows, int64_t n) {}
void nat_gelu256_tile(float *y, int64_t ldy, int64_t rows, int64_t n) {}

bool nat_layernorm_row(const float *x, float *y, int64_t n, const float *scale, const float *bias,
                       double eps) {
  return false;
}

bool nat_softmax_row(const float *x, float *y, int64_t n) { return false; }

#endif
