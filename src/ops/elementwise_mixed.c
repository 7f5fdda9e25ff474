/* Elementwise ops whose inputs have different dtypes: Pow (base and exponent
 * types may differ from opset 12) and Where (bool condition, any X/Y). Both
 * use the shared broadcasting iterator. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise_impl.h"

/* ---- Pow --------------------------------------------------------------- */

typedef struct pow_ctx {
  const void *a, *b;
  void *o;
  const ait_dtype_traits *ta, *tb;
  bool f32;        /* base and exponent float32 */
  bool ints;       /* integer base and exponent: exact integer power */
  bool e_unsigned; /* the exponent is an unsigned integer type */
  bool bad;        /* 0 to a negative integer power */
} pow_ctx;

/* base^e by squaring, wrapping like C unsigned arithmetic. A negative e
 * gives the truncated result (0 unless |base| == 1). */
static int64_t ipow(int64_t base, int64_t e, bool e_unsigned, bool *bad) {
  if (!e_unsigned && e < 0) {
    if (base == 0) *bad = true;
    if (base == 1) return 1;
    if (base == -1) return (e & 1) ? -1 : 1;
    return 0;
  }
  uint64_t ue = (uint64_t)e, r = 1, b = (uint64_t)base;
  for (; ue; ue >>= 1, b *= b)
    if (ue & 1) r *= b;
  return (int64_t)r;
}

static void pow_row(void *vc, int64_t n, int64_t o, const int64_t *off, const int64_t *st) {
  pow_ctx *c = vc;
  int64_t ia = off[0], ib = off[1];
  if (c->f32) {
    const float *a = c->a, *b = c->b;
    float *y = (float *)c->o + o;
    for (int64_t i = 0; i < n; i++, ia += st[0], ib += st[1])
      y[i] = (float)pow((double)a[ia], (double)b[ib]);
    return;
  }
  for (int64_t i = 0, k = o; i < n; i++, k++, ia += st[0], ib += st[1]) {
    if (c->ints) {
      int64_t r = ipow(ait_load_i64(c->ta, c->a, ia), ait_load_i64(c->tb, c->b, ib), c->e_unsigned,
                       &c->bad);
      ait_store_i64(c->ta, c->o, k, r);
    } else {
      double r = pow(ait_load_f64(c->ta, c->a, ia), ait_load_f64(c->tb, c->b, ib));
      ait_store_f64(c->ta, c->o, k, r); /* integer bases truncate (saturating) */
    }
  }
}

ait_status ait_ew_k_Pow(ait_kctx *ctx, const ait_node *node, const ait_tensor *const *in, int n_in,
                        ait_tensor **out, int n_out) {
  AIT_TRY(ait_ew_need(in, n_in, 0, "X"));
  AIT_TRY(ait_ew_need(in, n_in, 1, "Y"));
  const ait_tensor *a = in[0], *b = in[1];
  const ait_dtype_traits *ta = ait_dtype_traits_of(a->dtype), *tb = ait_dtype_traits_of(b->dtype);
  if (!ta || !(ta->is_float || ta->is_int) || !tb || !(tb->is_float || tb->is_int))
    return ait_err(AIT_E_DTYPE, "Pow does not take %s base with %s exponent",
                   ait_dtype_name(a->dtype), ait_dtype_name(b->dtype));
  ait_ew_shape s[2], os;
  AIT_TRY(ait_ew_binary_shapes(node, a, b, s, &os));
  ait_tensor *o;
  AIT_TRY(ait_ew_new_out(a->dtype, &os, &o));
  pow_ctx c = {a->data, b->data, o->data, ta, tb, false, false, false, false};
  c.f32 = a->dtype == AIT_FLOAT32 && b->dtype == AIT_FLOAT32;
  c.ints = ta->is_int && tb->is_int;
  c.e_unsigned = tb->is_int && !tb->is_signed;
  ait_ew_foreach(&os, 2, s, pow_row, &c);
  if (c.bad) {
    ait_tensor_free(o);
    return ait_err(AIT_E_RUNTIME, "Pow raises integer 0 to a negative power");
  }
  *out = o;
  return AIT_OK;
}

/* ---- Where ------------------------------------------------------------- */

typedef struct where_ctx {
  const uint8_t *cond;
  const char *x, *y;
  char *o;
  size_t size;  /* element size */
  bool strings; /* copy `char *` elements by value */
  bool nomem;
} where_ctx;

/* Typed copies for the common element sizes (a mask of -inf and 0 is a
 * Where over a [batch, 1, seq, seq] condition) */
#define WHERE_TYPED(T)                                                                             \
  do {                                                                                             \
    const T *x = (const T *)c->x, *y = (const T *)c->y;                                            \
    T *out = (T *)c->o + o;                                                                        \
    for (int64_t i = 0; i < n; i++, ic += st[0], ix += st[1], iy += st[2])                         \
      out[i] = c->cond[ic] ? x[ix] : y[iy];                                                        \
    return;                                                                                        \
  } while (0)

static void where_row(void *vc, int64_t n, int64_t o, const int64_t *off, const int64_t *st) {
  where_ctx *c = vc;
  int64_t ic = off[0], ix = off[1], iy = off[2];
  if (!c->strings) switch (c->size) {
    case 1: WHERE_TYPED(uint8_t);
    case 2: WHERE_TYPED(uint16_t);
    case 4: WHERE_TYPED(uint32_t);
    case 8: WHERE_TYPED(uint64_t);
    default: break;
    }
  for (int64_t i = 0, k = o; i < n; i++, k++, ic += st[0], ix += st[1], iy += st[2]) {
    const char *src = c->cond[ic] ? c->x + (size_t)ix * c->size : c->y + (size_t)iy * c->size;
    char *dst = c->o + (size_t)k * c->size;
    if (c->strings) {
      const char *str = *(char *const *)src;
      char *copy = strdup(str ? str : "");
      if (!copy) c->nomem = true;
      memcpy(dst, &copy, sizeof copy);
    } else {
      memcpy(dst, src, c->size);
    }
  }
}
#undef WHERE_TYPED

ait_status ait_ew_k_Where(ait_kctx *ctx, const ait_node *node, const ait_tensor *const *in,
                          int n_in, ait_tensor **out, int n_out) {
  AIT_TRY(ait_ew_need(in, n_in, 0, "condition"));
  AIT_TRY(ait_ew_need(in, n_in, 1, "X"));
  AIT_TRY(ait_ew_need(in, n_in, 2, "Y"));
  if (in[0]->dtype != AIT_BOOL)
    return ait_err(AIT_E_DTYPE, "Where condition must be bool, got %s",
                   ait_dtype_name(in[0]->dtype));
  if (in[1]->dtype != in[2]->dtype)
    return ait_err(AIT_E_DTYPE, "Where X is %s, Y is %s", ait_dtype_name(in[1]->dtype),
                   ait_dtype_name(in[2]->dtype));
  ait_ew_shape s[3] = {ait_ew_shape_of(in[0]), ait_ew_shape_of(in[1]), ait_ew_shape_of(in[2])};
  ait_ew_shape os;
  AIT_TRY(ait_ew_broadcast_shape(3, s, &os));
  ait_tensor *o;
  AIT_TRY(ait_ew_new_out(in[1]->dtype, &os, &o));
  where_ctx c = {in[0]->data,
                 in[1]->data,
                 in[2]->data,
                 o->data,
                 ait_elem_size(in[1]->dtype),
                 in[1]->dtype == AIT_STRING,
                 false};
  ait_ew_foreach(&os, 3, s, where_row, &c);
  if (c.nomem) {
    ait_tensor_free(o);
    return ait_err(AIT_E_NOMEM, "out of memory copying strings in Where");
  }
  *out = o;
  return AIT_OK;
}
