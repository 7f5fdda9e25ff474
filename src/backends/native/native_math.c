/* Vectorised float32 math for the native kernels: exp (Cephes' polynomial,
 * about 1 ulp where it does not underflow), erf (Abramowitz & Stegun
 * 7.1.26, absolute error below 1.5e-7) and the activations built on them.
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
  *io = (v8f)(((v8i)y & abs_mask) | ((v8i)x & ~abs_mask)); /* sign of x */
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

NAT_CLONES void nat_erf_f32(const float *x, float *y, int64_t n) { MAP8(verf, x, y, n); }

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "backends/native/native_avx512.h"
#define NAT_HAVE_GELU512 1
/* GELU sixteen lanes at a time on AVX-512 (the activation of every BERT
 * FFN: a tenth of a quantized encoder's time on eight lanes). Same math as
 * vgelu (A&S 7.1.26 erf, Cephes exp), with the division replaced by rcp14
 * and one Newton step (~23 bits) and 2^n by scalef. */
__attribute__((target("avx512f"))) static void gelu512(float *x, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
    __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    /* |x|/sqrt 2, at most 10 (erf is 1 in float from 4 on; keeps inf and
     * NaN out of the polynomial: the final x * phi carries them) */
    __m512 a = _mm512_min_ps(_mm512_abs_ps(_mm512_mul_ps(v, _mm512_set1_ps(0.70710678118654752f))),
                             _mm512_set1_ps(10.0f));
    __m512 d = _mm512_fmadd_ps(_mm512_set1_ps(0.3275911f), a, one);
    __m512 t = _mm512_rcp14_ps(d);
    t = _mm512_mul_ps(t, _mm512_fnmadd_ps(d, t, _mm512_set1_ps(2.0f)));
    __m512 p = _mm512_set1_ps(1.061405429f);
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.453152027f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.421413741f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.284496736f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.254829592f));
    /* a is finite (a NaN input became 10 in the min above) */
    __m512 e = nat_exp16_nonpos(_mm512_mul_ps(_mm512_sub_ps(_mm512_setzero_ps(), a), a));
    __m512 erf = _mm512_fnmadd_ps(_mm512_mul_ps(p, t), e, one); /* erf(|x|/sqrt 2) */
    /* 0.5 x (1 + sign(x) erf): for x < 0, 1 - erf */
    __mmask16 neg = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ);
    __m512 phi = _mm512_mask_sub_ps(_mm512_add_ps(one, erf), neg, one, erf);
    _mm512_mask_storeu_ps(x + i, m, _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), v), phi));
  }
}

/* exp sixteen lanes at a time (softmax: attention's second cost after its
 * products). */
__attribute__((target("avx512f"))) static void exp512(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, m, nat_exp16(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

/* (the C runtime initialises the CPU model in a constructor) */
static bool have_avx512(void) { return __builtin_cpu_supports("avx512f"); }
#endif

NAT_CLONES void nat_exp_f32(const float *x, float *y, int64_t n) {
#ifdef NAT_HAVE_GELU512
  if (have_avx512()) {
    exp512(x, y, n);
    return;
  }
#endif
  MAP8(vexp, x, y, n);
}

NAT_CLONES void nat_act_f32(const ait_act *a, float *x, int64_t n) {
  switch (a->kind) {
  case AIT_ACT_GELU:
#ifdef NAT_HAVE_GELU512
    if (have_avx512()) {
      gelu512(x, n);
      return;
    }
#endif
    MAP8(vgelu, x, x, n);
    return;
  case AIT_ACT_SIGMOID: MAP8(vsigmoid, x, x, n); return;
  default: ait_act_apply_f32(a, x, n); return;
  }
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

void nat_act_f32(const ait_act *a, float *x, int64_t n) { ait_act_apply_f32(a, x, n); }

#endif
