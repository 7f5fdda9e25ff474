/* Unary elementwise ops as a table (op -> scalar function), one shared loop,
 * and a direct float32 loop for the ops that are hot in real models. Also
 * Clip, IsInf, IsNaN and Not.
 *
 * Floats of every width are computed in double and rounded once to the
 * output type; integer inputs (where the spec allows them) use exact int64 /
 * uint64 functions. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "ops/elementwise_impl.h"

/* Attribute values of one node, in double and float. */
typedef struct ew_par {
  double a, b;
  float af, bf;
} ew_par;

typedef struct ew_unop {
  double (*f)(double x, const ew_par *p); /* every float dtype */
  int64_t (*s)(int64_t x);                /* signed ints; NULL: not allowed */
  uint64_t (*u)(uint64_t x);              /* unsigned ints; NULL: not allowed */
  bool ints_via_f64;                      /* ints go through f (Shrink) */
  const char *a_name, *b_name;            /* attributes read into ew_par */
  float a_def, b_def;
} ew_unop;

enum {
#define X(name) EWU_##name,
  AIT_EW_UNARY_OPS(X)
#undef X
      EWU_COUNT
};

/* ---- scalar functions -------------------------------------------------- */

#define F(name, expr)                                                                              \
  static double f_##name(double x, const ew_par *p) { return (expr); }
F(abs, fabs(x))
F(acos, acos(x))
F(acosh, acosh(x))
F(asin, asin(x))
F(asinh, asinh(x))
F(atan, atan(x))
F(atanh, atanh(x))
F(cos, cos(x))
F(cosh, cosh(x))
F(sin, sin(x))
F(sinh, sinh(x))
F(tan, tan(x))
F(tanh, tanh(x))
F(exp, exp(x))
F(log, log(x))
F(sqrt, sqrt(x))
F(reciprocal, 1.0 / x)
F(neg, -x)
F(ceil, ceil(x))
F(floor, floor(x))
F(round, nearbyint(x))                  /* halves to even in the default rounding mode */
F(sign, x > 0 ? 1.0 : x < 0 ? -1.0 : x) /* keeps 0 and NaN */
F(erf, erf(x))
F(sigmoid, x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x)))
F(relu, x < 0 ? 0.0 : x)
F(leakyrelu, x < 0 ? p->a * x : x)
F(elu, x < 0 ? p->a * expm1(x) : x)
F(selu, x > 0 ? p->b * x : p->b * (p->a * exp(x) - p->a))
F(celu, fmax(0.0, x) + fmin(0.0, p->a *expm1(x / p->a)))
F(softplus, x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)))
F(softsign, x / (1.0 + fabs(x)))
F(thresholdedrelu, x > p->a ? x : 0.0)
F(shrink, x<-p->a ? x + p->b : x> p->a ? x - p->b : 0.0)
#undef F

/* Mish-22: x tanh(softplus(x)); Swish-24: x sigmoid(alpha x) */
static double f_softplus_(double x) { return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)); }
static double f_mish(double x, const ew_par *p) { return x * tanh(f_softplus_(x)); }
static double f_swish(double x, const ew_par *p) {
  double z = p->a * x;
  return x * (z >= 0 ? 1.0 / (1.0 + exp(-z)) : exp(z) / (1.0 + exp(z)));
}

static double clamp01(double v) { return v < 0 ? 0.0 : v > 1 ? 1.0 : v; }
static double f_hardsigmoid(double x, const ew_par *p) { return clamp01(p->a * x + p->b); }
static double f_hardswish(double x, const ew_par *p) { return x * clamp01(x / 6.0 + 0.5); }
/* Gelu-20: p->a = 1 for approximate="tanh", 0 for "none" (erf) */
static double f_gelu(double x, const ew_par *p) {
  if (p->a != 0) return 0.5 * x * (1.0 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
  return 0.5 * x * (1.0 + erf(x * 0.70710678118654752440));
}

static int64_t s_abs(int64_t x) { return x < 0 ? (int64_t)(0 - (uint64_t)x) : x; }
static int64_t s_neg(int64_t x) { return (int64_t)(0 - (uint64_t)x); } /* wraps like C */
static int64_t s_sign(int64_t x) { return x > 0 ? 1 : x < 0 ? -1 : 0; }
static int64_t s_relu(int64_t x) { return x < 0 ? 0 : x; }
static int64_t s_bnot(int64_t x) { return ~x; } /* BitwiseNot-18; narrow types wrap on store */
static uint64_t u_bnot(uint64_t x) { return ~x; }
static uint64_t u_same(uint64_t x) { return x; }
static uint64_t u_sign(uint64_t x) { return x != 0; }

static const ew_unop unops[EWU_COUNT] = {
    [EWU_Abs] = {f_abs, s_abs, u_same, false, NULL, NULL, 0, 0},
    [EWU_Acos] = {f_acos, NULL, NULL, false, NULL, NULL, 0, 0},
    [EWU_Acosh] = {f_acosh, NULL, NULL, false, NULL, NULL, 0, 0},
    [EWU_Asin] = {f_asin, NULL, NULL, false, NULL, NULL, 0, 0},
    [EWU_Asinh] = {f_asinh, NULL, NULL, false, NULL, NULL, 0, 0},
    [EWU_Atan] = {f_atan, NULL, NULL, false, NULL, NULL, 0, 0},
    [EWU_Atanh] = {f_atanh, NULL, NULL, false, NULL, NULL, 0, 0},
    [EWU_Cos] = {f_cos, NULL, NULL, false, NULL, NULL, 0, 0},
    [EWU_Cosh] = {f_cosh, NULL, NULL, false, NULL, NULL, 0, 0},
    [EWU_Sin] = {f_sin, NULL, NULL, false, NULL, NULL, 0, 0},
    [EWU_Sinh] = {f_sinh, NULL, NULL, false, NULL, NULL, 0, 0},
    [EWU_Tan] = {f_tan, NULL, NULL, false, NULL, NULL, 0, 0},
    [EWU_Tanh] = {f_tanh, NULL, NULL, false, NULL, NULL, 0, 0},
    [EWU_Exp] = {f_exp, NULL, NULL, false, NULL, NULL, 0, 0},
    [EWU_Log] = {f_log, NULL, NULL, false, NULL, NULL, 0, 0},
    [EWU_Sqrt] = {f_sqrt, NULL, NULL, false, NULL, NULL, 0, 0},
    [EWU_Reciprocal] = {f_reciprocal, NULL, NULL, false, NULL, NULL, 0, 0},
    [EWU_Neg] = {f_neg, s_neg, NULL, false, NULL, NULL, 0, 0},
    [EWU_Ceil] = {f_ceil, NULL, NULL, false, NULL, NULL, 0, 0},
    [EWU_Floor] = {f_floor, NULL, NULL, false, NULL, NULL, 0, 0},
    [EWU_Round] = {f_round, NULL, NULL, false, NULL, NULL, 0, 0},
    [EWU_Sign] = {f_sign, s_sign, u_sign, false, NULL, NULL, 0, 0},
    [EWU_Erf] = {f_erf, NULL, NULL, false, NULL, NULL, 0, 0},
    [EWU_Sigmoid] = {f_sigmoid, NULL, NULL, false, NULL, NULL, 0, 0},
    [EWU_HardSigmoid] = {f_hardsigmoid, NULL, NULL, false, "alpha", "beta", 0.2f, 0.5f},
    [EWU_HardSwish] = {f_hardswish, NULL, NULL, false, NULL, NULL, 0, 0},
    [EWU_Relu] = {f_relu, s_relu, u_same, false, NULL, NULL, 0, 0},
    [EWU_LeakyRelu] = {f_leakyrelu, NULL, NULL, false, "alpha", NULL, 0.01f, 0},
    [EWU_Elu] = {f_elu, NULL, NULL, false, "alpha", NULL, 1.0f, 0},
    [EWU_Selu] = {f_selu, NULL, NULL, false, "alpha", "gamma", 1.67326319217681884765625f,
                  1.05070102214813232421875f},
    [EWU_Celu] = {f_celu, NULL, NULL, false, "alpha", NULL, 1.0f, 0},
    [EWU_Softplus] = {f_softplus, NULL, NULL, false, NULL, NULL, 0, 0},
    [EWU_Softsign] = {f_softsign, NULL, NULL, false, NULL, NULL, 0, 0},
    [EWU_ThresholdedRelu] = {f_thresholdedrelu, NULL, NULL, false, "alpha", NULL, 1.0f, 0},
    [EWU_Shrink] = {f_shrink, NULL, NULL, true, "lambd", "bias", 0.5f, 0.0f},
    [EWU_Gelu] = {f_gelu, NULL, NULL, false, NULL, NULL, 0, 0}, /* "approximate": unary_run */
    [EWU_Mish] = {f_mish, NULL, NULL, false, NULL, NULL, 0, 0},
    [EWU_Swish] = {f_swish, NULL, NULL, false, "alpha", NULL, 1.0f, 0},
    [EWU_BitwiseNot] = {NULL, s_bnot, u_bnot, false, NULL, NULL, 0, 0},
};

/* ---- float32 fast path ------------------------------------------------- */

static inline float clamp01f(float v) { return v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v; }

#define LOOP(expr)                                                                                 \
  for (int64_t i = 0; i < n; i++) {                                                                \
    float x = xs[i];                                                                               \
    ys[i] = (expr);                                                                                \
  }                                                                                                \
  return true

/* Direct loops for hot ops; false when op has none (the caller then goes
 * through the double table function). */
static bool unary_f32(int op, const ew_par *p, const float *xs, float *ys, int64_t n) {
  const float a = p->af, b = p->bf;
  switch (op) {
  case EWU_Relu: LOOP(x < 0.0f ? 0.0f : x);
  case EWU_LeakyRelu: LOOP(x < 0.0f ? a * x : x);
  case EWU_Sigmoid: LOOP(x >= 0.0f ? 1.0f / (1.0f + expf(-x)) : expf(x) / (1.0f + expf(x)));
  case EWU_Tanh: LOOP(tanhf(x));
  case EWU_Exp: LOOP(expf(x));
  case EWU_Log: LOOP(logf(x));
  case EWU_Sqrt: LOOP(sqrtf(x));
  case EWU_Abs: LOOP(fabsf(x));
  case EWU_Neg: LOOP(-x);
  case EWU_Erf: LOOP(erff(x));
  case EWU_Reciprocal: LOOP(1.0f / x);
  case EWU_Floor: LOOP(floorf(x));
  case EWU_Ceil: LOOP(ceilf(x));
  case EWU_HardSigmoid: LOOP(clamp01f(a * x + b));
  case EWU_HardSwish: LOOP(x * clamp01f(x / 6.0f + 0.5f));
  case EWU_Elu: LOOP(x < 0.0f ? a * expm1f(x) : x);
  case EWU_Gelu:
    if (a != 0.0f) {
      LOOP(0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x))));
    }
    LOOP(0.5f * x * (1.0f + erff(x * 0.7071067812f)));
  default: return false;
  }
}
#undef LOOP

/* ---- the shared loop --------------------------------------------------- */

static ait_status unary_run(int op, const ait_node *node, const ait_tensor *const *in, int n_in,
                            ait_tensor **out) {
  AIT_TRY(ait_ew_need(in, n_in, 0, "X"));
  const ait_tensor *x = in[0];
  const ew_unop *u = &unops[op];
  const ait_dtype_traits *t = ait_dtype_traits_of(x->dtype);
  bool is_u = t && t->is_int && !t->is_signed;
  bool ok = t && ((t->is_float && u->f) ||
                  (t->is_int && (u->ints_via_f64 || (is_u ? u->u != NULL : u->s != NULL))));
  if (!ok)
    return ait_err(AIT_E_DTYPE, "%s does not take %s input", node->op_type,
                   ait_dtype_name(x->dtype));
  ew_par p = {0, 0, 0, 0};
  p.af = u->a_name ? ait_attr_float(node, u->a_name, u->a_def) : 0.0f;
  p.bf = u->b_name ? ait_attr_float(node, u->b_name, u->b_def) : 0.0f;
  if (op == EWU_Gelu) {
    const char *ap = ait_attr_str(node, "approximate", "none");
    if (strcmp(ap, "none") && strcmp(ap, "tanh"))
      return ait_err(AIT_E_INVALID_ARG, "Gelu approximate='%s': none or tanh", ap);
    p.af = !strcmp(ap, "tanh") ? 1.0f : 0.0f;
  }
  p.a = p.af;
  p.b = p.bf;
  ait_tensor *y = ait_tensor_new_like(x);
  if (!y) return AIT_E_NOMEM;
  int64_t n = ait_tensor_numel(x);
  if (x->dtype == AIT_FLOAT32 && unary_f32(op, &p, x->data, y->data, n)) {
    /* done */
  } else if (t->is_float || u->ints_via_f64) {
    for (int64_t i = 0; i < n; i++)
      ait_store_f64(t, y->data, i, u->f(ait_load_f64(t, x->data, i), &p));
  } else if (is_u) {
    for (int64_t i = 0; i < n; i++)
      ait_store_i64(t, y->data, i, (int64_t)u->u((uint64_t)ait_load_i64(t, x->data, i)));
  } else {
    for (int64_t i = 0; i < n; i++)
      ait_store_i64(t, y->data, i, u->s(ait_load_i64(t, x->data, i)));
  }
  *out = y;
  return AIT_OK;
}

#define KERNEL(name)                                                                               \
  ait_status ait_ew_k_##name(ait_kctx *ctx, const ait_node *node, const ait_tensor *const *in,     \
                             int n_in, ait_tensor **out, int n_out) {                              \
    return unary_run(EWU_##name, node, in, n_in, out);                                             \
  }
AIT_EW_UNARY_OPS(KERNEL)
#undef KERNEL

/* ---- Clip -------------------------------------------------------------- */

/* Bound k (1 = min, 2 = max) of Clip-11+: a one-element tensor of X's dtype,
 * or absent. */
static ait_status clip_bound(const ait_tensor *const *in, int n_in, int k, ait_dtype dt,
                             const ait_tensor **b) {
  *b = NULL;
  if (k >= n_in || !in[k] || in[k]->kind == AIT_KIND_NONE) return AIT_OK;
  const char *what = k == 1 ? "min" : "max";
  if (in[k]->kind != AIT_KIND_TENSOR || in[k]->dtype != dt)
    return ait_err(AIT_E_DTYPE, "Clip %s is %s, X is %s", what, ait_dtype_name(in[k]->dtype),
                   ait_dtype_name(dt));
  if (ait_tensor_numel(in[k]) != 1)
    return ait_err(AIT_E_SHAPE, "Clip %s must be a scalar, it has %lld elements", what,
                   (long long)ait_tensor_numel(in[k]));
  *b = in[k];
  return AIT_OK;
}

ait_status ait_ew_k_Clip(ait_kctx *ctx, const ait_node *node, const ait_tensor *const *in, int n_in,
                         ait_tensor **out, int n_out) {
  AIT_TRY(ait_ew_need(in, n_in, 0, "input"));
  const ait_tensor *x = in[0];
  const ait_dtype_traits *t = ait_dtype_traits_of(x->dtype);
  if (!t || !(t->is_float || t->is_int) || (node->opset < 11 && !t->is_float))
    return ait_err(AIT_E_DTYPE, "Clip-%d does not take %s input", node->opset,
                   ait_dtype_name(x->dtype));
  double lo = -INFINITY, hi = INFINITY;
  int64_t slo = INT64_MIN, shi = INT64_MAX;
  uint64_t ulo = 0, uhi = UINT64_MAX;
  if (node->opset < 11) {
    lo = ait_attr_float(node, "min", -FLT_MAX);
    hi = ait_attr_float(node, "max", FLT_MAX);
  } else {
    const ait_tensor *bmin, *bmax;
    AIT_TRY(clip_bound(in, n_in, 1, x->dtype, &bmin));
    AIT_TRY(clip_bound(in, n_in, 2, x->dtype, &bmax));
    if (bmin) {
      lo = ait_load_f64(t, bmin->data, 0);
      slo = ait_load_i64(t, bmin->data, 0);
      ulo = (uint64_t)slo;
    }
    if (bmax) {
      hi = ait_load_f64(t, bmax->data, 0);
      shi = ait_load_i64(t, bmax->data, 0);
      uhi = (uint64_t)shi;
    }
  }
  ait_tensor *y = ait_tensor_new_like(x);
  if (!y) return AIT_E_NOMEM;
  int64_t n = ait_tensor_numel(x);
  /* lower bound first, then upper: min > max gives max, as numpy.clip */
  if (x->dtype == AIT_FLOAT32) {
    const float *xs = x->data, flo = (float)lo, fhi = (float)hi;
    float *ys = y->data;
    for (int64_t i = 0; i < n; i++) {
      float v = xs[i] < flo ? flo : xs[i];
      ys[i] = v > fhi ? fhi : v;
    }
  } else if (t->is_float) {
    for (int64_t i = 0; i < n; i++) {
      double v = ait_load_f64(t, x->data, i);
      v = v < lo ? lo : v;
      ait_store_f64(t, y->data, i, v > hi ? hi : v);
    }
  } else if (t->is_signed) {
    for (int64_t i = 0; i < n; i++) {
      int64_t v = ait_load_i64(t, x->data, i);
      v = v < slo ? slo : v;
      ait_store_i64(t, y->data, i, v > shi ? shi : v);
    }
  } else {
    for (int64_t i = 0; i < n; i++) {
      uint64_t v = (uint64_t)ait_load_i64(t, x->data, i);
      v = v < ulo ? ulo : v;
      ait_store_i64(t, y->data, i, (int64_t)(v > uhi ? uhi : v));
    }
  }
  *out = y;
  return AIT_OK;
}

/* ---- predicates -------------------------------------------------------- */

/* Bool output of x's shape, for the float predicates. */
static ait_status predicate_out(const ait_node *node, const ait_tensor *x, ait_tensor **y) {
  const ait_dtype_traits *t = ait_dtype_traits_of(x->dtype);
  if (!t || !t->is_float)
    return ait_err(AIT_E_DTYPE, "%s does not take %s input", node->op_type,
                   ait_dtype_name(x->dtype));
  *y = ait_tensor_new(AIT_BOOL, x->rank, x->dims);
  return *y ? AIT_OK : AIT_E_NOMEM;
}

ait_status ait_ew_k_IsInf(ait_kctx *ctx, const ait_node *node, const ait_tensor *const *in,
                          int n_in, ait_tensor **out, int n_out) {
  AIT_TRY(ait_ew_need(in, n_in, 0, "X"));
  ait_tensor *y = NULL;
  AIT_TRY(predicate_out(node, in[0], &y));
  bool pos = ait_attr_int(node, "detect_positive", 1) != 0;
  bool neg = ait_attr_int(node, "detect_negative", 1) != 0;
  const ait_dtype_traits *t = ait_dtype_traits_of(in[0]->dtype);
  uint8_t *ys = y->data;
  for (int64_t i = 0, n = ait_tensor_numel(y); i < n; i++) {
    double v = ait_load_f64(t, in[0]->data, i);
    ys[i] = isinf(v) && (v > 0 ? pos : neg);
  }
  *out = y;
  return AIT_OK;
}

ait_status ait_ew_k_IsNaN(ait_kctx *ctx, const ait_node *node, const ait_tensor *const *in,
                          int n_in, ait_tensor **out, int n_out) {
  AIT_TRY(ait_ew_need(in, n_in, 0, "X"));
  ait_tensor *y = NULL;
  AIT_TRY(predicate_out(node, in[0], &y));
  const ait_dtype_traits *t = ait_dtype_traits_of(in[0]->dtype);
  uint8_t *ys = y->data;
  for (int64_t i = 0, n = ait_tensor_numel(y); i < n; i++)
    ys[i] = isnan(ait_load_f64(t, in[0]->data, i));
  *out = y;
  return AIT_OK;
}

ait_status ait_ew_k_Not(ait_kctx *ctx, const ait_node *node, const ait_tensor *const *in, int n_in,
                        ait_tensor **out, int n_out) {
  AIT_TRY(ait_ew_need(in, n_in, 0, "X"));
  const ait_tensor *x = in[0];
  if (x->dtype != AIT_BOOL)
    return ait_err(AIT_E_DTYPE, "Not takes bool input, got %s", ait_dtype_name(x->dtype));
  ait_tensor *y = ait_tensor_new_like(x);
  if (!y) return AIT_E_NOMEM;
  const uint8_t *xs = x->data;
  uint8_t *ys = y->data;
  for (int64_t i = 0, n = ait_tensor_numel(x); i < n; i++)
    ys[i] = !xs[i];
  *out = y;
  return AIT_OK;
}
