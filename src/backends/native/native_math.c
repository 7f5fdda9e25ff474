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

NAT_CLONES void nat_exp_f32(const float *x, float *y, int64_t n) { MAP8(vexp, x, y, n); }
NAT_CLONES void nat_erf_f32(const float *x, float *y, int64_t n) { MAP8(verf, x, y, n); }

NAT_CLONES void nat_act_f32(const ait_act *a, float *x, int64_t n) {
  switch (a->kind) {
  case AIT_ACT_GELU: MAP8(vgelu, x, x, n); return;
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
