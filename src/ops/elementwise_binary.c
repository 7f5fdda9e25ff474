/* Binary elementwise ops as a table (op -> scalar functions per number
 * kind), one broadcasting loop, and a direct float32 loop for arithmetic.
 * Also the variadic ops built on the same table (Max, Min, Sum, Mean).
 *
 * Number kinds: floats of every width are computed in double and rounded once
 * to the output type; signed integers in int64 and unsigned integers (and
 * bool) in uint64, so integer results are exact (wrapping like C on
 * overflow). Integer division or modulo by zero is an error. */
#include <math.h>
#include <string.h>

#include "ops/elementwise_impl.h"

enum {
  EWB_ADD,
  EWB_SUB,
  EWB_MUL,
  EWB_DIV,
  EWB_MOD,
  EWB_FMOD,
  EWB_SHL,
  EWB_SHR,
  EWB_AND,
  EWB_OR,
  EWB_XOR,
  EWB_EQ,
  EWB_GT,
  EWB_GE,
  EWB_LT,
  EWB_LE,
  EWB_MAX,
  EWB_MIN,
  EWB_PRELU,
  EWB_BAND,
  EWB_BOR,
  EWB_BXOR,
  EWB_COUNT
};

typedef struct ew_binop {
  double (*f)(double a, double b);                  /* float kinds; NULL: not allowed */
  int64_t (*s)(int64_t a, int64_t b, bool *bad);    /* signed ints; *bad on x/0 */
  uint64_t (*u)(uint64_t a, uint64_t b, bool *bad); /* unsigned ints and bool */
  uint32_t dtypes;                                  /* accepted input dtypes */
  bool to_bool;                                     /* the result is bool */
} ew_binop;

/* ---- scalar functions -------------------------------------------------- */

#define ARITH(name, fexpr, sexpr, uexpr)                                                           \
  static double f_##name(double a, double b) { return (fexpr); }                                   \
  static int64_t s_##name(int64_t a, int64_t b, bool *bad) { return (sexpr); }                     \
  static uint64_t u_##name(uint64_t a, uint64_t b, bool *bad) { return (uexpr); }
/* signed add/sub/mul wrap through uint64 instead of overflowing */
ARITH(add, a + b, (int64_t)((uint64_t)a + (uint64_t)b), a + b)
ARITH(sub, a - b, (int64_t)((uint64_t)a - (uint64_t)b), a - b)
ARITH(mul, a *b, (int64_t)((uint64_t)a *(uint64_t)b), a *b)
ARITH(eq, a == b, a == b, a == b)
ARITH(gt, a > b, a > b, a > b)
ARITH(ge, a >= b, a >= b, a >= b)
ARITH(lt, a < b, a < b, a < b)
ARITH(le, a <= b, a <= b, a <= b)
/* NaN propagates, as numpy.maximum / numpy.minimum */
ARITH(max, (a > b || a != a) ? a : b, a > b ? a : b, a > b ? a : b)
ARITH(min, (a < b || a != a) ? a : b, a < b ? a : b, a < b ? a : b)
ARITH(prelu, a < 0 ? a * b : a, a < 0 ? (int64_t)((uint64_t)a * (uint64_t)b) : a, a)
#undef ARITH

static double f_div(double a, double b) { return a / b; }
/* Integer division truncates toward zero; INT64_MIN / -1 wraps. */
static int64_t s_div(int64_t a, int64_t b, bool *bad) {
  if (b == 0) return *bad = true, 0;
  return b == -1 ? (int64_t)(0 - (uint64_t)a) : a / b;
}
static uint64_t u_div(uint64_t a, uint64_t b, bool *bad) {
  if (b == 0) return *bad = true, 0;
  return a / b;
}
/* Mod with fmod=0: the result takes the divisor's sign (Python's %). */
static double f_mod(double a, double b) {
  double r = fmod(a, b);
  return r != 0 && (r < 0) != (b < 0) ? r + b : r;
}
static int64_t s_mod(int64_t a, int64_t b, bool *bad) {
  if (b == 0) return *bad = true, 0;
  if (b == -1) return 0;
  int64_t r = a % b;
  return r != 0 && (r < 0) != (b < 0) ? r + b : r;
}
/* Mod with fmod=1: the result takes the dividend's sign (C's fmod / %). */
static double f_fmod(double a, double b) { return fmod(a, b); }
static int64_t s_fmod(int64_t a, int64_t b, bool *bad) {
  if (b == 0) return *bad = true, 0;
  return b == -1 ? 0 : a % b;
}
static uint64_t u_mod(uint64_t a, uint64_t b, bool *bad) {
  if (b == 0) return *bad = true, 0;
  return a % b;
}
/* Shifts by the type's width or more give 0 (narrow types wrap on store,
 * and values load sign- or zero-extended, so a 64-bit shift gives the
 * narrow type's answer). Signed (BitShift-28): right shifts are arithmetic;
 * a negative or too large count leaves only the sign fill, -1 for a right
 * shift of a negative X and 0 otherwise. */
static uint64_t u_shl(uint64_t a, uint64_t b, bool *bad) { return b >= 64 ? 0 : a << b; }
static uint64_t u_shr(uint64_t a, uint64_t b, bool *bad) { return b >= 64 ? 0 : a >> b; }
static int64_t s_shl(int64_t a, int64_t b, bool *bad) {
  return b < 0 || b >= 64 ? 0 : (int64_t)((uint64_t)a << b);
}
static int64_t s_shr(int64_t a, int64_t b, bool *bad) {
  if (b < 0 || b >= 64) return a < 0 ? -1 : 0;
  return a < 0 ? ~(~a >> b) : a >> b; /* arithmetic without relying on >> of negatives */
}
/* BitwiseAnd/Or/Xor-18 */
static int64_t s_band(int64_t a, int64_t b, bool *bad) { return a & b; }
static int64_t s_bor(int64_t a, int64_t b, bool *bad) { return a | b; }
static int64_t s_bxor(int64_t a, int64_t b, bool *bad) { return a ^ b; }
static uint64_t u_band(uint64_t a, uint64_t b, bool *bad) { return a & b; }
static uint64_t u_bor(uint64_t a, uint64_t b, bool *bad) { return a | b; }
static uint64_t u_bxor(uint64_t a, uint64_t b, bool *bad) { return a ^ b; }
static uint64_t u_and(uint64_t a, uint64_t b, bool *bad) { return (a != 0) & (b != 0); }
static uint64_t u_or(uint64_t a, uint64_t b, bool *bad) { return (a != 0) | (b != 0); }
static uint64_t u_xor(uint64_t a, uint64_t b, bool *bad) { return (a != 0) ^ (b != 0); }

#define BOOLS AIT_DT_BIT(AIT_BOOL)
static const ew_binop binops[EWB_COUNT] = {
    [EWB_ADD] = {f_add, s_add, u_add, AIT_DT_NUMERIC, false},
    [EWB_SUB] = {f_sub, s_sub, u_sub, AIT_DT_NUMERIC, false},
    [EWB_MUL] = {f_mul, s_mul, u_mul, AIT_DT_NUMERIC, false},
    [EWB_DIV] = {f_div, s_div, u_div, AIT_DT_NUMERIC, false},
    [EWB_MOD] = {f_mod, s_mod, u_mod, AIT_DT_NUMERIC, false},
    [EWB_FMOD] = {f_fmod, s_fmod, u_mod, AIT_DT_NUMERIC, false},
    [EWB_SHL] = {NULL, s_shl, u_shl, AIT_DT_INTS, false},
    [EWB_SHR] = {NULL, s_shr, u_shr, AIT_DT_INTS, false},
    [EWB_BAND] = {NULL, s_band, u_band, AIT_DT_INTS, false},
    [EWB_BOR] = {NULL, s_bor, u_bor, AIT_DT_INTS, false},
    [EWB_BXOR] = {NULL, s_bxor, u_bxor, AIT_DT_INTS, false},
    [EWB_AND] = {NULL, NULL, u_and, BOOLS, true},
    [EWB_OR] = {NULL, NULL, u_or, BOOLS, true},
    [EWB_XOR] = {NULL, NULL, u_xor, BOOLS, true},
    [EWB_EQ] = {f_eq, s_eq, u_eq, AIT_DT_NUMERIC | BOOLS, true},
    [EWB_GT] = {f_gt, s_gt, u_gt, AIT_DT_NUMERIC, true},
    [EWB_GE] = {f_ge, s_ge, u_ge, AIT_DT_NUMERIC, true},
    [EWB_LT] = {f_lt, s_lt, u_lt, AIT_DT_NUMERIC, true},
    [EWB_LE] = {f_le, s_le, u_le, AIT_DT_NUMERIC, true},
    [EWB_MAX] = {f_max, s_max, u_max, AIT_DT_NUMERIC, false},
    [EWB_MIN] = {f_min, s_min, u_min, AIT_DT_NUMERIC, false},
    [EWB_PRELU] = {f_prelu, s_prelu, u_prelu, AIT_DT_NUMERIC, false},
};
#undef BOOLS

/* ---- float32 fast path ------------------------------------------------- */

/* One loop body per stride pattern: both contiguous, one side a broadcast
 * scalar along the row, or general steps. */
#define BLOOP(expr)                                                                                \
  do {                                                                                             \
    if (sa == 1 && sb == 1) {                                                                      \
      for (int64_t i = 0; i < n; i++) {                                                            \
        float x = a[i], y = b[i];                                                                  \
        o[i] = (expr);                                                                             \
      }                                                                                            \
    } else if (sa == 1 && sb == 0) {                                                               \
      float y = b[0];                                                                              \
      for (int64_t i = 0; i < n; i++) {                                                            \
        float x = a[i];                                                                            \
        o[i] = (expr);                                                                             \
      }                                                                                            \
    } else if (sa == 0 && sb == 1) {                                                               \
      float x = a[0];                                                                              \
      for (int64_t i = 0; i < n; i++) {                                                            \
        float y = b[i];                                                                            \
        o[i] = (expr);                                                                             \
      }                                                                                            \
    } else {                                                                                       \
      for (int64_t i = 0; i < n; i++) {                                                            \
        float x = a[i * sa], y = b[i * sb];                                                        \
        o[i] = (expr);                                                                             \
      }                                                                                            \
    }                                                                                              \
    return true;                                                                                   \
  } while (0)

/* o may alias a (the variadic ops accumulate in place). */
static bool binary_f32(int op, int64_t n, float *o, const float *a, int64_t sa, const float *b,
                       int64_t sb) {
  switch (op) {
  case EWB_ADD: BLOOP(x + y);
  case EWB_SUB: BLOOP(x - y);
  case EWB_MUL: BLOOP(x * y);
  case EWB_DIV: BLOOP(x / y);
  case EWB_MAX: BLOOP((x > y || x != x) ? x : y);
  case EWB_MIN: BLOOP((x < y || x != x) ? x : y);
  case EWB_PRELU: BLOOP(x < 0.0f ? x * y : x);
  default: return false;
  }
}
#undef BLOOP

/* ---- bool fast path (attention masks are built with And) ---------------- */

static void binary_bool(int op, int64_t n, uint8_t *o, const uint8_t *a, int64_t sa,
                        const uint8_t *b, int64_t sb) {
  for (int64_t i = 0; i < n; i++) {
    uint8_t x = a[i * sa] != 0, y = b[i * sb] != 0;
    o[i] = op == EWB_AND ? (x & y) : op == EWB_OR ? (x | y) : (x ^ y);
  }
}

/* ---- the shared loop --------------------------------------------------- */

typedef struct bin_ctx {
  int op;
  const void *a, *b;
  void *o;
  const ait_dtype_traits *ta, *tb, *to;
  char kind;  /* 'f' float, 's' signed, 'u' unsigned/bool */
  bool f32;   /* all float32: try the direct loop */
  bool logic; /* And/Or/Xor on bool: the direct loop */
  bool bad;   /* an integer division by zero happened */
} bin_ctx;

static void bin_row(void *vc, int64_t n, int64_t o, const int64_t *off, const int64_t *st) {
  bin_ctx *c = vc;
  if (c->f32 && binary_f32(c->op, n, (float *)c->o + o, (const float *)c->a + off[0], st[0],
                           (const float *)c->b + off[1], st[1]))
    return;
  if (c->logic) {
    binary_bool(c->op, n, (uint8_t *)c->o + o, (const uint8_t *)c->a + off[0], st[0],
                (const uint8_t *)c->b + off[1], st[1]);
    return;
  }
  const ew_binop *d = &binops[c->op];
  int64_t ia = off[0], ib = off[1];
  for (int64_t i = 0, k = o; i < n; i++, k++, ia += st[0], ib += st[1]) {
    if (c->kind == 'f') {
      double r = d->f(ait_load_f64(c->ta, c->a, ia), ait_load_f64(c->tb, c->b, ib));
      ait_store_f64(c->to, c->o, k, r);
    } else if (c->kind == 's') {
      int64_t r = d->s(ait_load_i64(c->ta, c->a, ia), ait_load_i64(c->tb, c->b, ib), &c->bad);
      ait_store_i64(c->to, c->o, k, r);
    } else {
      uint64_t r = d->u((uint64_t)ait_load_i64(c->ta, c->a, ia),
                        (uint64_t)ait_load_i64(c->tb, c->b, ib), &c->bad);
      ait_store_i64(c->to, c->o, k, (int64_t)r);
    }
  }
}

/* Check that op accepts dtype dt (for both operands). */
static ait_status check_dtype(int op, const ait_node *node, ait_dtype dt) {
  if (!(binops[op].dtypes & AIT_DT_BIT(dt)) || !ait_dtype_traits_of(dt))
    return ait_err(AIT_E_DTYPE, "%s does not take %s inputs", node->op_type, ait_dtype_name(dt));
  return AIT_OK;
}

/* o = op(a, b) where a, b are seen with shapes s[0], s[1] broadcast to o's. */
static ait_status apply(int op, const ait_node *node, const ait_tensor *a, const ait_tensor *b,
                        const ait_ew_shape s[2], ait_tensor *o) {
  const ait_dtype_traits *ta = ait_dtype_traits_of(a->dtype);
  bin_ctx c = {op,
               a->data,
               b->data,
               o->data,
               ta,
               ait_dtype_traits_of(b->dtype),
               ait_dtype_traits_of(o->dtype),
               0,
               false,
               false,
               false};
  c.logic = a->dtype == AIT_BOOL && (op == EWB_AND || op == EWB_OR || op == EWB_XOR);
  c.kind = ta->is_float ? 'f' : ta->is_signed ? 's' : 'u';
  c.f32 = a->dtype == AIT_FLOAT32 && b->dtype == AIT_FLOAT32 && o->dtype == AIT_FLOAT32;
  ait_ew_shape os = ait_ew_shape_of(o);
  ait_ew_foreach(&os, 2, s, bin_row, &c);
  if (c.bad) return ait_err(AIT_E_RUNTIME, "integer division by zero in %s", node->op_type);
  return AIT_OK;
}

/* Equal on strings (opset 19): byte-wise equality of each broadcast pair. */
typedef struct str_ctx {
  char *const *a, *const *b;
  uint8_t *o;
} str_ctx;

static void str_eq_row(void *vc, int64_t n, int64_t o, const int64_t *off, const int64_t *st) {
  str_ctx *c = vc;
  for (int64_t i = 0; i < n; i++) {
    const char *x = c->a[off[0] + i * st[0]], *y = c->b[off[1] + i * st[1]];
    c->o[o + i] = !strcmp(x ? x : "", y ? y : "");
  }
}

static ait_status string_equal(const ait_node *node, const ait_tensor *a, const ait_tensor *b,
                               ait_tensor **out) {
  if (node->opset < 19)
    return ait_err(AIT_E_DTYPE, "Equal on strings needs opset >= 19 (model: %d)", node->opset);
  ait_ew_shape s[2], os;
  AIT_TRY(ait_ew_binary_shapes(node, a, b, s, &os));
  ait_tensor *o;
  AIT_TRY(ait_ew_new_out(AIT_BOOL, &os, &o));
  str_ctx c = {a->data, b->data, o->data};
  ait_ew_foreach(&os, 2, s, str_eq_row, &c);
  *out = o;
  return AIT_OK;
}

/* A binary node: dtype checks, shapes (legacy-aware unless `numpy`), run. */
static ait_status binary_run(int op, const ait_node *node, const ait_tensor *const *in, int n_in,
                             ait_tensor **out) {
  AIT_TRY(ait_ew_need(in, n_in, 0, "A"));
  AIT_TRY(ait_ew_need(in, n_in, 1, "B"));
  const ait_tensor *a = in[0], *b = in[1];
  if (a->dtype != b->dtype)
    return ait_err(AIT_E_DTYPE, "%s inputs differ in dtype: %s and %s", node->op_type,
                   ait_dtype_name(a->dtype), ait_dtype_name(b->dtype));
  if (op == EWB_EQ && a->dtype == AIT_STRING) return string_equal(node, a, b, out);
  AIT_TRY(check_dtype(op, node, a->dtype));
  ait_ew_shape s[2], os;
  AIT_TRY(ait_ew_binary_shapes(node, a, b, s, &os));
  ait_tensor *o;
  AIT_TRY(ait_ew_new_out(binops[op].to_bool ? AIT_BOOL : a->dtype, &os, &o));
  ait_status st = apply(op, node, a, b, s, o);
  if (st != AIT_OK) {
    ait_tensor_free(o);
    return st;
  }
  *out = o;
  return AIT_OK;
}

#define KERNEL(name, op)                                                                           \
  ait_status ait_ew_k_##name(ait_kctx *ctx, const ait_node *node, const ait_tensor *const *in,     \
                             int n_in, ait_tensor **out, int n_out) {                              \
    return binary_run(op, node, in, n_in, out);                                                    \
  }
KERNEL(Add, EWB_ADD)
KERNEL(Sub, EWB_SUB)
KERNEL(Mul, EWB_MUL)
KERNEL(Div, EWB_DIV)
KERNEL(And, EWB_AND)
KERNEL(Or, EWB_OR)
KERNEL(Xor, EWB_XOR)
KERNEL(Equal, EWB_EQ)
KERNEL(Greater, EWB_GT)
KERNEL(GreaterOrEqual, EWB_GE)
KERNEL(Less, EWB_LT)
KERNEL(LessOrEqual, EWB_LE)
KERNEL(BitwiseAnd, EWB_BAND)
KERNEL(BitwiseOr, EWB_BOR)
KERNEL(BitwiseXor, EWB_BXOR)
#undef KERNEL

/* SwiGLU-28: Y = A sigmoid(alpha A) B, A and B of one shape (no
 * broadcasting), in double. */
ait_status ait_ew_k_SwiGLU(ait_kctx *ctx, const ait_node *node, const ait_tensor *const *in,
                           int n_in, ait_tensor **out, int n_out) {
  AIT_TRY(ait_ew_need(in, n_in, 0, "A"));
  AIT_TRY(ait_ew_need(in, n_in, 1, "B"));
  const ait_tensor *a = in[0], *b = in[1];
  const ait_dtype_traits *t = ait_dtype_traits_of(a->dtype);
  if (a->dtype != b->dtype || !t || !t->is_float)
    return ait_err(AIT_E_DTYPE, "SwiGLU takes two float inputs of one dtype, got %s and %s",
                   ait_dtype_name(a->dtype), ait_dtype_name(b->dtype));
  if (a->rank != b->rank || memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->rank))
    return ait_err(AIT_E_SHAPE, "SwiGLU's A and B must have the same shape");
  double alpha = ait_attr_float(node, "alpha", 1.0f);
  ait_tensor *y = ait_tensor_new_like(a);
  if (!y) return AIT_E_NOMEM;
  for (int64_t i = 0, n = ait_tensor_numel(a); i < n; i++) {
    double x = ait_load_f64(t, a->data, i), z = alpha * x;
    double sg = z >= 0 ? 1.0 / (1.0 + exp(-z)) : exp(z) / (1.0 + exp(z));
    ait_store_f64(t, y->data, i, x * sg * ait_load_f64(t, b->data, i));
  }
  *out = y;
  return AIT_OK;
}

ait_status ait_ew_k_Mod(ait_kctx *ctx, const ait_node *node, const ait_tensor *const *in, int n_in,
                        ait_tensor **out, int n_out) {
  return binary_run(ait_attr_int(node, "fmod", 0) ? EWB_FMOD : EWB_MOD, node, in, n_in, out);
}

ait_status ait_ew_k_BitShift(ait_kctx *ctx, const ait_node *node, const ait_tensor *const *in,
                             int n_in, ait_tensor **out, int n_out) {
  const char *dir = ait_attr_str(node, "direction", "");
  if (strcmp(dir, "LEFT") && strcmp(dir, "RIGHT"))
    return ait_err(AIT_E_INVALID_ARG, "BitShift direction must be LEFT or RIGHT, got '%s'", dir);
  const ait_dtype_traits *t = n_in > 0 && in[0] ? ait_dtype_traits_of(in[0]->dtype) : NULL;
  if (t && t->is_signed && node->opset < 28)
    return ait_err(AIT_E_DTYPE, "BitShift on %s needs opset >= 28 (model: %d)",
                   ait_dtype_name(in[0]->dtype), (int)node->opset);
  return binary_run(dir[0] == 'L' ? EWB_SHL : EWB_SHR, node, in, n_in, out);
}

/* PRelu: slope broadcasts to X's shape (unidirectionally); below opset 7 a
 * 1-D slope of X's channel count applies per channel. */
ait_status ait_ew_k_PRelu(ait_kctx *ctx, const ait_node *node, const ait_tensor *const *in,
                          int n_in, ait_tensor **out, int n_out) {
  AIT_TRY(ait_ew_need(in, n_in, 0, "X"));
  AIT_TRY(ait_ew_need(in, n_in, 1, "slope"));
  const ait_tensor *x = in[0], *slope = in[1];
  if (x->dtype != slope->dtype)
    return ait_err(AIT_E_DTYPE, "PRelu slope is %s, X is %s", ait_dtype_name(slope->dtype),
                   ait_dtype_name(x->dtype));
  AIT_TRY(check_dtype(EWB_PRELU, node, x->dtype));
  ait_ew_shape s[2] = {ait_ew_shape_of(x), ait_ew_shape_of(slope)}, os;
  if (node->opset < 7 && slope->rank == 1 && x->rank >= 2 && slope->dims[0] != 1 &&
      slope->dims[0] == x->dims[1]) { /* PRelu-1/6: a [C] slope is per channel (axis 1) */
    s[1].rank = x->rank;
    for (int i = 0; i < x->rank; i++)
      s[1].dims[i] = i == 1 ? x->dims[1] : 1;
  }
  AIT_TRY(ait_ew_broadcast_shape(2, s, &os));
  if (os.rank != x->rank || memcmp(os.dims, x->dims, sizeof x->dims[0] * (size_t)x->rank)) {
    char sx[128], ss[128];
    return ait_err(AIT_E_SHAPE, "PRelu slope %s does not broadcast to X %s",
                   ait_shape_str(slope->rank, slope->dims, ss, sizeof ss),
                   ait_shape_str(x->rank, x->dims, sx, sizeof sx));
  }
  ait_tensor *o;
  AIT_TRY(ait_ew_new_out(x->dtype, &os, &o));
  ait_status st = apply(EWB_PRELU, node, x, slope, s, o);
  if (st != AIT_OK) {
    ait_tensor_free(o);
    return st;
  }
  *out = o;
  return AIT_OK;
}

/* ---- variadic ops ------------------------------------------------------ */

/* Fold op over all inputs, broadcasting: o = op(in0, in1), o = op(o, in2),
 * ...; Mean divides the sum by the input count at the end. */
static ait_status variadic_run(int op, bool mean, const ait_node *node, const ait_tensor *const *in,
                               int n_in, ait_tensor **out) {
  if (n_in < 1) return ait_err(AIT_E_INVALID_ARG, "%s needs at least one input", node->op_type);
  ait_ew_shape os = {0, {0}};
  for (int k = 0; k < n_in; k++) {
    AIT_TRY(ait_ew_need(in, n_in, k, "data"));
    if (in[k]->dtype != in[0]->dtype)
      return ait_err(AIT_E_DTYPE, "%s input %d is %s, input 0 is %s", node->op_type, k,
                     ait_dtype_name(in[k]->dtype), ait_dtype_name(in[0]->dtype));
    ait_ew_shape sk = ait_ew_shape_of(in[k]), pair[2] = {os, sk};
    AIT_TRY(ait_ew_broadcast_shape(2, pair, &os));
  }
  ait_dtype dt = in[0]->dtype;
  AIT_TRY(check_dtype(op, node, dt));
  const ait_dtype_traits *t = ait_dtype_traits_of(dt);
  if (mean && !t->is_float)
    return ait_err(AIT_E_DTYPE, "Mean does not take %s inputs", ait_dtype_name(dt));
  ait_tensor *o;
  AIT_TRY(ait_ew_new_out(dt, &os, &o));
  ait_status st = AIT_OK;
  if (n_in == 1) {
    if (ait_tensor_nbytes(o)) memcpy(o->data, in[0]->data, ait_tensor_nbytes(o));
  } else {
    ait_ew_shape s[2] = {ait_ew_shape_of(in[0]), ait_ew_shape_of(in[1])};
    st = apply(op, node, in[0], in[1], s, o);
    for (int k = 2; k < n_in && st == AIT_OK; k++) {
      s[0] = os;
      s[1] = ait_ew_shape_of(in[k]);
      st = apply(op, node, o, in[k], s, o);
    }
  }
  if (st != AIT_OK) {
    ait_tensor_free(o);
    return st;
  }
  if (mean) {
    int64_t n = ait_tensor_numel(o);
    for (int64_t i = 0; i < n; i++)
      ait_store_f64(t, o->data, i, ait_load_f64(t, o->data, i) / n_in);
  }
  *out = o;
  return AIT_OK;
}

#define KERNEL(name, op, mean)                                                                     \
  ait_status ait_ew_k_##name(ait_kctx *ctx, const ait_node *node, const ait_tensor *const *in,     \
                             int n_in, ait_tensor **out, int n_out) {                              \
    return variadic_run(op, mean, node, in, n_in, out);                                            \
  }
KERNEL(Max, EWB_MAX, false)
KERNEL(Min, EWB_MIN, false)
KERNEL(Sum, EWB_ADD, false)
KERNEL(Mean, EWB_ADD, true)
#undef KERNEL
