/* Unary elementwise ops on float32 (activations through nat_act_f32, math
 * through native_math.c's vector functions or libm), FusedUnary (an
 * epilogue program without a producer), Not, and Cast between float32,
 * float16, int32, int64 and bool. Contiguous input and output, split over
 * the pool in chunks. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "backends/native/native.h"
#include "backends/native/native_elt.h"
#include "ops/elementwise_impl.h"

/* y[0..n) = f(x[0..n)) with parameters p (x and y may be the same). */
typedef void (*un_fn)(const float *x, float *y, int64_t n, const float *p);

#define UN_LOOP(NAME, EXPR)                                                                        \
  static void NAME(const float *x, float *y, int64_t n, const float *p) {                          \
    for (int64_t i = 0; i < n; i++) {                                                              \
      float v = x[i];                                                                              \
      y[i] = (EXPR);                                                                               \
    }                                                                                              \
  }
/* The simple ones vectorise as they are: an AVX2 copy too. */
#define UN_LOOP2(NAME, EXPR)                                                                       \
  __attribute__((target("avx2,fma"))) static void NAME##_avx2(const float *x, float *y, int64_t n, \
                                                              const float *p) {                    \
    for (int64_t i = 0; i < n; i++) {                                                              \
      float v = x[i];                                                                              \
      y[i] = (EXPR);                                                                               \
    }                                                                                              \
  }                                                                                                \
  UN_LOOP(NAME##_base, EXPR)                                                                       \
  static void NAME(const float *x, float *y, int64_t n, const float *p) {                          \
    (nat_isa() >= NAT_ISA_AVX2 ? NAME##_avx2 : NAME##_base)(x, y, n, p);                           \
  }

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
UN_LOOP2(u_abs, fabsf(v))
UN_LOOP2(u_neg, -v)
UN_LOOP2(u_sqrt, sqrtf(v))
UN_LOOP2(u_recip, 1.0f / v)
UN_LOOP2(u_floor, floorf(v))
UN_LOOP2(u_ceil, ceilf(v))
UN_LOOP2(u_round, nearbyintf(v)) /* halves to even, as the reference */
UN_LOOP2(u_softsign, v / (1.0f + fabsf(v)))
#else
UN_LOOP(u_abs, fabsf(v))
UN_LOOP(u_neg, -v)
UN_LOOP(u_sqrt, sqrtf(v))
UN_LOOP(u_recip, 1.0f / v)
UN_LOOP(u_floor, floorf(v))
UN_LOOP(u_ceil, ceilf(v))
UN_LOOP(u_round, nearbyintf(v))
UN_LOOP(u_softsign, v / (1.0f + fabsf(v)))
#endif
UN_LOOP(u_log, logf(v))
UN_LOOP(u_sin, sinf(v))
UN_LOOP(u_cos, cosf(v))

/* Exp and Erf match the reference bit for bit (libm): graphs split between
 * backends must not depend on where a node ran. The fast approximations
 * serve inside Softmax, Sigmoid, Tanh and Gelu. */
UN_LOOP(u_exp, expf(v))
UN_LOOP(u_erf, erff(v))

/* Elu (p[0] = alpha) and Selu (alpha, gamma): exp of the negative part. */
static void elu_common(const float *x, float *y, int64_t n, float alpha, float gamma) {
  float t[256];
  for (int64_t lo = 0; lo < n; lo += 256) {
    int64_t m = n - lo < 256 ? n - lo : 256;
    for (int64_t i = 0; i < m; i++)
      t[i] = x[lo + i] < 0.0f ? x[lo + i] : 0.0f;
    nat_exp_f32(t, t, m);
    for (int64_t i = 0; i < m; i++) {
      float v = x[lo + i];
      y[lo + i] = v < 0.0f ? gamma * alpha * (t[i] - 1.0f) : v != v ? v : gamma * v;
    }
  }
}
static void u_elu(const float *x, float *y, int64_t n, const float *p) {
  elu_common(x, y, n, p[0], 1.0f);
}
static void u_selu(const float *x, float *y, int64_t n, const float *p) {
  elu_common(x, y, n, p[0], p[1]);
}

/* ---- the op table -------------------------------------------------------- */

/* An op runs either as an activation (act != NONE: nat_act_f32, which
 * covers programs too) or through fn. Attribute names and defaults fill the
 * parameters. */
typedef struct un_def {
  const char *op;
  ait_act_kind act;
  un_fn fn;
  const char *a0, *a1;
  float d0, d1;
} un_def;

static const un_def defs[] = {
    {"Relu", AIT_ACT_RELU, NULL, NULL, NULL, 0, 0},
    {"Sigmoid", AIT_ACT_SIGMOID, NULL, NULL, NULL, 0, 0},
    {"Tanh", AIT_ACT_TANH, NULL, NULL, NULL, 0, 0},
    {"HardSwish", AIT_ACT_HARD_SWISH, NULL, NULL, NULL, 0, 0},
    {"LeakyRelu", AIT_ACT_LEAKY_RELU, NULL, "alpha", NULL, 0.01f, 0},
    {"HardSigmoid", AIT_ACT_HARD_SIGMOID, NULL, "alpha", "beta", 0.2f, 0.5f},
    {"Softplus", AIT_ACT_SOFTPLUS, NULL, NULL, NULL, 0, 0},
    {"Abs", AIT_ACT_NONE, u_abs, NULL, NULL, 0, 0},
    {"Neg", AIT_ACT_NONE, u_neg, NULL, NULL, 0, 0},
    {"Sqrt", AIT_ACT_NONE, u_sqrt, NULL, NULL, 0, 0},
    {"Reciprocal", AIT_ACT_NONE, u_recip, NULL, NULL, 0, 0},
    {"Floor", AIT_ACT_NONE, u_floor, NULL, NULL, 0, 0},
    {"Ceil", AIT_ACT_NONE, u_ceil, NULL, NULL, 0, 0},
    {"Round", AIT_ACT_NONE, u_round, NULL, NULL, 0, 0},
    {"Softsign", AIT_ACT_NONE, u_softsign, NULL, NULL, 0, 0},
    {"Exp", AIT_ACT_NONE, u_exp, NULL, NULL, 0, 0},
    {"Erf", AIT_ACT_NONE, u_erf, NULL, NULL, 0, 0},
    {"Log", AIT_ACT_NONE, u_log, NULL, NULL, 0, 0},
    {"Sin", AIT_ACT_NONE, u_sin, NULL, NULL, 0, 0},
    {"Cos", AIT_ACT_NONE, u_cos, NULL, NULL, 0, 0},
    {"Elu", AIT_ACT_NONE, u_elu, "alpha", NULL, 1.0f, 0},
    {"Selu", AIT_ACT_NONE, u_selu, "alpha", "gamma", 1.67326319217681884765625f,
     1.05070102214813232421875f},
};

typedef struct un_job {
  ait_act act;
  un_fn fn;
  float p[2];
  const float *x;
  float *y;
  int64_t n, per_task;
} un_job;

static void un_task(void *arg, int64_t t, int tid) {
  const un_job *j = arg;
  int64_t lo = t * j->per_task, hi = lo + j->per_task < j->n ? lo + j->per_task : j->n;
  if (j->fn) {
    j->fn(j->x + lo, j->y + lo, hi - lo, j->p);
    return;
  }
  if (j->y != j->x) memcpy(j->y + lo, j->x + lo, sizeof(float) * (size_t)(hi - lo));
  nat_act_f32(&j->act, j->y + lo, hi - lo);
}

/* Scalar float32 bound of Clip-11+, or the default when absent. */
static bool clip_bound(const ait_tensor *t, float def, float *v) {
  if (!t) {
    *v = def;
    return true;
  }
  if (t->dtype != AIT_FLOAT32 || t->kind != AIT_KIND_TENSOR || ait_tensor_numel(t) != 1)
    return false;
  *v = *(const float *)t->data;
  return true;
}

/* The activation or function of node n; false when native does not run it. */
static bool un_setup(const ait_node *n, const ait_tensor *const *in, int n_in, un_job *j) {
  const char *op = n->op_type;
  if (n->domain[0]) { /* FusedUnary */
    if (ait_act_parse(n, &j->act) != AIT_OK) {
      ait_err_clear();
      return false;
    }
    return true;
  }
  if (!strcmp(op, "Clip")) {
    j->act.kind = AIT_ACT_CLIP;
    if (n->opset < 11) {
      j->act.p[0] = ait_attr_float(n, "min", -FLT_MAX);
      j->act.p[1] = ait_attr_float(n, "max", FLT_MAX);
      return true;
    }
    return clip_bound(n_in > 1 ? in[1] : NULL, -INFINITY, &j->act.p[0]) &&
           clip_bound(n_in > 2 ? in[2] : NULL, INFINITY, &j->act.p[1]);
  }
  if (!strcmp(op, "Gelu")) { /* opset 20; after a product it is fused instead */
    const char *a = ait_attr_str(n, "approximate", "none");
    j->act.kind = !strcmp(a, "none")   ? AIT_ACT_GELU
                  : !strcmp(a, "tanh") ? AIT_ACT_GELU_TANH
                                       : AIT_ACT_NONE;
    return j->act.kind != AIT_ACT_NONE;
  }
  for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++) {
    const un_def *d = &defs[i];
    if (op[0] != d->op[0] || strcmp(op, d->op)) continue;
    float p0 = d->a0 ? ait_attr_float(n, d->a0, d->d0) : 0;
    float p1 = d->a1 ? ait_attr_float(n, d->a1, d->d1) : 0;
    j->act.kind = d->act;
    j->act.p[0] = j->p[0] = p0;
    j->act.p[1] = j->p[1] = p1;
    j->fn = d->fn;
    return true;
  }
  return false;
}

ait_status nat_k_unary(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  const ait_tensor *X = in[0];
  if (!X || X->kind != AIT_KIND_TENSOR || X->dtype != AIT_FLOAT32) return AIT_E_UNSUPPORTED;
  un_job j;
  memset(&j, 0, sizeof j);
  if (!un_setup(n, in, n_in, &j)) return AIT_E_UNSUPPORTED;
  ait_tensor *Y;
  AIT_TRY(nat_output(r, 0, AIT_FLOAT32, X->rank, X->dims, &Y));
  j.x = X->data;
  j.y = Y->data;
  j.n = ait_tensor_numel(X);
  if (j.n == 0) return AIT_OK;
  j.per_task = nat_chunk(r, j.n, 16384);
  nat_pool_run(nat_run_pool(r), (j.n + j.per_task - 1) / j.per_task, un_task, &j);
  return AIT_OK;
}

/* ---- Cast and Not ---------------------------------------------------------- */

typedef void (*cast_fn)(const void *x, void *y, int64_t n);

/* float32 to an integer type: truncation toward zero, saturating, NaN to 0
 * (as the reference's conversion through double). */
#define CAST_F2I(NAME, T, LO, HI)                                                                  \
  static void NAME(const void *xv, void *yv, int64_t n) {                                          \
    const float *x = xv;                                                                           \
    T *y = yv;                                                                                     \
    for (int64_t i = 0; i < n; i++) {                                                              \
      float v = x[i];                                                                              \
      y[i] = v != v ? 0 : v <= (LO) ? (T)(LO) : v >= (HI) ? (T)(HI) : (T)v;                        \
    }                                                                                              \
  }
#define CAST_PLAIN(NAME, TX, TY, EXPR)                                                             \
  static void NAME(const void *xv, void *yv, int64_t n) {                                          \
    const TX *x = xv;                                                                              \
    TY *y = yv;                                                                                    \
    for (int64_t i = 0; i < n; i++) {                                                              \
      TX v = x[i];                                                                                 \
      y[i] = (EXPR);                                                                               \
    }                                                                                              \
  }

CAST_F2I(c_f32_i32, int32_t, -2147483648.0f, 2147483647.0f)
/* int64: saturate at +-2^63 (2^63 is the first float at or above the max) */
static void c_f32_i64(const void *xv, void *yv, int64_t n) {
  const float *x = xv;
  int64_t *y = yv;
  for (int64_t i = 0; i < n; i++) {
    float v = x[i];
    y[i] = v != v                        ? 0
           : v < -9223372036854775808.0f ? INT64_MIN
           : v >= 9223372036854775808.0f ? INT64_MAX
                                         : (int64_t)v;
  }
}
CAST_PLAIN(c_f32_b, float, uint8_t, v != 0.0f)
CAST_PLAIN(c_i32_f32, int32_t, float, (float)v)
CAST_PLAIN(c_i64_f32, int64_t, float, (float)v)
CAST_PLAIN(c_b_f32, uint8_t, float, v ? 1.0f : 0.0f)
CAST_PLAIN(c_i64_i32, int64_t, int32_t, (int32_t)(uint32_t)(uint64_t)v) /* wraps */
CAST_PLAIN(c_i32_i64, int32_t, int64_t, (int64_t)v)
CAST_PLAIN(c_i64_b, int64_t, uint8_t, v != 0)
CAST_PLAIN(c_i32_b, int32_t, uint8_t, v != 0)
CAST_PLAIN(c_b_i64, uint8_t, int64_t, v ? 1 : 0)
CAST_PLAIN(c_b_i32, uint8_t, int32_t, v ? 1 : 0)
CAST_PLAIN(c_f32_f16, float, uint16_t, ait_f32_to_f16(v))
CAST_PLAIN(c_f16_f32, uint16_t, float, ait_f16_to_f32(v))
CAST_PLAIN(c_not, uint8_t, uint8_t, !v)

static const struct {
  ait_dtype from, to;
  cast_fn fn;
} casts[] = {
    {AIT_FLOAT32, AIT_INT32, c_f32_i32},   {AIT_FLOAT32, AIT_INT64, c_f32_i64},
    {AIT_FLOAT32, AIT_BOOL, c_f32_b},      {AIT_INT32, AIT_FLOAT32, c_i32_f32},
    {AIT_INT64, AIT_FLOAT32, c_i64_f32},   {AIT_BOOL, AIT_FLOAT32, c_b_f32},
    {AIT_INT64, AIT_INT32, c_i64_i32},     {AIT_INT32, AIT_INT64, c_i32_i64},
    {AIT_INT64, AIT_BOOL, c_i64_b},        {AIT_INT32, AIT_BOOL, c_i32_b},
    {AIT_BOOL, AIT_INT64, c_b_i64},        {AIT_BOOL, AIT_INT32, c_b_i32},
    {AIT_FLOAT32, AIT_FLOAT16, c_f32_f16}, {AIT_FLOAT16, AIT_FLOAT32, c_f16_f32},
};

typedef struct cast_job {
  cast_fn fn;
  const char *x;
  char *y;
  size_t xs, ys;
  int64_t n, per_task;
} cast_job;

static void cast_task(void *arg, int64_t t, int tid) {
  const cast_job *j = arg;
  int64_t lo = t * j->per_task, hi = lo + j->per_task < j->n ? lo + j->per_task : j->n;
  if (j->fn)
    j->fn(j->x + (size_t)lo * j->xs, j->y + (size_t)lo * j->ys, hi - lo);
  else
    memcpy(j->y + (size_t)lo * j->ys, j->x + (size_t)lo * j->xs, (size_t)(hi - lo) * j->xs);
}

static ait_status run_cast(nat_run *r, const ait_tensor *X, ait_dtype to, cast_fn fn) {
  ait_tensor *Y;
  AIT_TRY(nat_output(r, 0, to, X->rank, X->dims, &Y));
  cast_job j = {
      fn, X->data, Y->data, ait_dtype_size(X->dtype), ait_dtype_size(to), ait_tensor_numel(X), 0};
  if (j.n == 0) return AIT_OK;
  j.per_task = nat_chunk(r, j.n, 16384);
  nat_pool_run(nat_run_pool(r), (j.n + j.per_task - 1) / j.per_task, cast_task, &j);
  return AIT_OK;
}

ait_status nat_k_cast(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  const ait_tensor *X = in[0];
  ait_dtype to;
  if (!X || X->kind != AIT_KIND_TENSOR || X->dtype == AIT_STRING) return AIT_E_UNSUPPORTED;
  if (ait_ew_cast_target(n, &to) != AIT_OK) {
    ait_err_clear();
    return AIT_E_UNSUPPORTED;
  }
  if (to == X->dtype) return run_cast(r, X, to, NULL);
  for (size_t i = 0; i < sizeof casts / sizeof casts[0]; i++)
    if (casts[i].from == X->dtype && casts[i].to == to) return run_cast(r, X, to, casts[i].fn);
  return AIT_E_UNSUPPORTED;
}

ait_status nat_k_not(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  const ait_tensor *X = in[0];
  if (!X || X->kind != AIT_KIND_TENSOR || X->dtype != AIT_BOOL) return AIT_E_UNSUPPORTED;
  return run_cast(r, X, AIT_BOOL, c_not);
}
