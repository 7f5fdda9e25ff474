/* Cast and CastLike between every numeric dtype, bool and string.
 *
 * Numbers follow numpy's astype, which the ONNX reference uses: integers
 * convert exactly through int64 (wrapping when narrowed), floats to integers
 * truncate toward zero (saturating, NaN -> 0, where numpy is undefined),
 * anything to bool is `x != 0`. Doubles and integers reach float16/bfloat16
 * with a single rounding. Strings are formatted like numpy's str() of the
 * element (shortest repr that reads back to the same value) and parsed with
 * strtod/strtoll; a string that is not a number is an error. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise_impl.h"

static const struct {
  const char *name;
  ait_dtype dt;
} type_names[] = {
    {"FLOAT", AIT_FLOAT32},
    {"UINT8", AIT_UINT8},
    {"INT8", AIT_INT8},
    {"UINT16", AIT_UINT16},
    {"INT16", AIT_INT16},
    {"INT32", AIT_INT32},
    {"INT64", AIT_INT64},
    {"STRING", AIT_STRING},
    {"BOOL", AIT_BOOL},
    {"FLOAT16", AIT_FLOAT16},
    {"DOUBLE", AIT_FLOAT64},
    {"UINT32", AIT_UINT32},
    {"UINT64", AIT_UINT64},
    {"BFLOAT16", AIT_BFLOAT16},
    {"FLOAT8E4M3FN", AIT_FLOAT8E4M3FN},
    {"FLOAT8E4M3FNUZ", AIT_FLOAT8E4M3FNUZ},
    {"FLOAT8E5M2", AIT_FLOAT8E5M2},
    {"FLOAT8E5M2FNUZ", AIT_FLOAT8E5M2FNUZ},
    {"UINT4", AIT_UINT4},
    {"INT4", AIT_INT4},
    {"FLOAT4E2M1", AIT_FLOAT4E2M1},
    {"FLOAT8E8M0", AIT_FLOAT8E8M0},
    {"UINT2", AIT_UINT2},
    {"INT2", AIT_INT2},
};

/* A dtype Cast can produce or read: numeric, bool or string. */
static bool castable(ait_dtype dt) {
  if (dt == AIT_STRING) return true;
  const ait_dtype_traits *t = ait_dtype_traits_of(dt);
  return t && t->to_f64;
}

ait_status ait_ew_cast_target(const ait_node *node, ait_dtype *dt) {
  const ait_attr *a = ait_node_attr(node, "to");
  if (!a) return ait_err(AIT_E_INVALID_ARG, "Cast needs attribute 'to'");
  if (a->type == AIT_ATTR_STRING) {
    for (size_t i = 0; i < sizeof type_names / sizeof type_names[0]; i++)
      if (a->s && !strcmp(a->s, type_names[i].name)) {
        *dt = type_names[i].dt;
        return AIT_OK;
      }
    return ait_err(AIT_E_UNSUPPORTED, "Cast to type '%s' is not supported", a->s ? a->s : "");
  }
  if (a->i <= 0 || a->i > AIT_DTYPE_LAST || !castable((ait_dtype)a->i))
    return ait_err(AIT_E_UNSUPPORTED, "Cast to dtype %lld is not supported", (long long)a->i);
  *dt = (ait_dtype)a->i;
  return AIT_OK;
}

/* ---- numbers ----------------------------------------------------------- */

/* d rounded to float with round-to-odd, so that a second rounding to
 * float16/bfloat16 (11 / 8 bits < 24 - 1) equals rounding d directly. */
static float f32_round_odd(double d) {
  float f = (float)d;
  if (isnan(d) || (double)f == d) return f;
  if (fabs((double)f) > fabs(d)) f = nextafterf(f, 0.0f); /* truncate toward zero */
  uint32_t bits;
  memcpy(&bits, &f, 4);
  bits |= 1u; /* inexact: make it odd */
  memcpy(&f, &bits, 4);
  return f;
}

/* How Cast rounds into the 8-bit floats: its `saturate` and `round_mode`
 * attributes (opset 19 and 24; defaults 1 and "up"). */
typedef struct cast_mode {
  bool saturate;
  ait_e8m0_round round;
} cast_mode;

static ait_status cast_mode_of(const ait_node *node, cast_mode *m) {
  m->saturate = ait_attr_int(node, "saturate", 1) != 0;
  m->round = AIT_E8M0_UP;
  const char *r = ait_attr_str(node, "round_mode", "up");
  if (!strcmp(r, "down"))
    m->round = AIT_E8M0_DOWN;
  else if (!strcmp(r, "nearest"))
    m->round = AIT_E8M0_NEAREST;
  else if (strcmp(r, "up"))
    return ait_err(AIT_E_INVALID_ARG, "Cast: round_mode '%.40s' is not up, down or nearest", r);
  return AIT_OK;
}

static void cast_numbers(const ait_tensor *x, ait_tensor *y, cast_mode m) {
  const ait_dtype_traits *tx = ait_dtype_traits_of(x->dtype), *ty = ait_dtype_traits_of(y->dtype);
  int64_t n = ait_tensor_numel(x);
  ait_dtype to = y->dtype;
  if (ait_dtype_is_small_float(to) && (!m.saturate || to == AIT_FLOAT8E8M0)) {
    uint8_t *ys = y->data; /* one rounding from the exact double */
    for (int64_t i = 0; i < n; i++) {
      double v = ait_load_f64(tx, x->data, i);
      ys[i] = to == AIT_FLOAT8E8M0 ? ait_e8m0_from_f64(v, m.saturate, m.round)
                                   : ait_small_from_f64(to, v, false);
    }
  } else if (x->dtype == AIT_FLOAT32 && to == AIT_FLOAT16) {
    const float *xs = x->data;
    uint16_t *ys = y->data;
    for (int64_t i = 0; i < n; i++)
      ys[i] = ait_f32_to_f16(xs[i]);
  } else if (x->dtype == AIT_FLOAT16 && to == AIT_FLOAT32) {
    const uint16_t *xs = x->data;
    float *ys = y->data;
    for (int64_t i = 0; i < n; i++)
      ys[i] = ait_f16_to_f32(xs[i]);
  } else if (to == AIT_FLOAT16 || to == AIT_BFLOAT16) {
    uint16_t *ys = y->data;
    for (int64_t i = 0; i < n; i++) {
      float f = f32_round_odd(ait_load_f64(tx, x->data, i));
      ys[i] = to == AIT_FLOAT16 ? ait_f32_to_f16(f) : ait_f32_to_bf16(f);
    }
  } else if (tx->is_int && to == AIT_FLOAT32) { /* one rounding, also for huge int64 */
    float *ys = y->data;
    for (int64_t i = 0; i < n; i++) {
      int64_t v = ait_load_i64(tx, x->data, i);
      ys[i] = tx->is_signed ? (float)v : (float)(uint64_t)v;
    }
  } else if (tx->is_float || ty->is_float) {
    for (int64_t i = 0; i < n; i++)
      ait_store_f64(ty, y->data, i, ait_load_f64(tx, x->data, i));
  } else { /* integer or bool to integer or bool: exact */
    for (int64_t i = 0; i < n; i++)
      ait_store_i64(ty, y->data, i, ait_load_i64(tx, x->data, i));
  }
}

/* ---- to string --------------------------------------------------------- */

/* numpy's str() of a float: the shortest digits that read back to the same
 * value, positional for 1e-4 <= |v| < cutoff (1e3 half, 1e6 float, 1e16
 * double), scientific otherwise. */
static void format_float(const ait_dtype_traits *t, ait_dtype dt, const void *elem, char *buf,
                         size_t size) {
  double v = t->to_f64(elem);
  if (isnan(v) || isinf(v)) {
    snprintf(buf, size, "%s", isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
    return;
  }
  char sci[64];
  unsigned char back[8];
  int p = 1;
  for (; p < 17; p++) {
    snprintf(sci, sizeof sci, "%.*e", p - 1, v);
    t->from_f64(back, strtod(sci, NULL));
    if (!memcmp(back, elem, t->size)) break;
  }
  snprintf(sci, sizeof sci, "%.*e", p - 1, v);
  double cutoff = dt == AIT_FLOAT64 ? 1e16 : dt == AIT_FLOAT32 ? 1e6 : 1e3;
  if (v == 0 || (fabs(v) >= 1e-4 && fabs(v) < cutoff)) {
    int e = atoi(strchr(sci, 'e') + 1), frac = p - 1 - e;
    snprintf(buf, size, "%.*f", frac < 0 ? 0 : frac, v);
    if (!strchr(buf, '.') && strlen(buf) + 3 <= size) strcat(buf, ".0");
  } else {
    snprintf(buf, size, "%s", sci);
  }
}

static ait_status to_strings(const ait_tensor *x, ait_tensor *y) {
  const ait_dtype_traits *t = ait_dtype_traits_of(x->dtype);
  char **ys = y->data;
  for (int64_t i = 0, n = ait_tensor_numel(x); i < n; i++) {
    char buf[64];
    const void *elem = (const char *)x->data + (size_t)i * t->size;
    if (t->is_float)
      format_float(t, x->dtype, elem, buf, sizeof buf);
    else if (x->dtype == AIT_BOOL)
      snprintf(buf, sizeof buf, "%s", t->to_i64(elem) ? "True" : "False");
    else if (t->is_signed)
      snprintf(buf, sizeof buf, "%lld", (long long)t->to_i64(elem));
    else
      snprintf(buf, sizeof buf, "%llu", (unsigned long long)(uint64_t)t->to_i64(elem));
    ys[i] = strdup(buf);
    if (!ys[i]) return ait_err(AIT_E_NOMEM, "out of memory casting to string");
  }
  return AIT_OK;
}

/* ---- from string ------------------------------------------------------- */

/* True when only white space is left at s. */
static bool at_end(const char *s) {
  while (isspace((unsigned char)*s))
    s++;
  return *s == '\0';
}

static ait_status parse_one(const char *s, const ait_dtype_traits *t, ait_dtype dt, void *elem) {
  char *end;
  if (dt == AIT_BOOL) { /* numpy's spelling first, then any number */
    const char *p = s;
    while (isspace((unsigned char)*p))
      p++;
    if (!strncmp(p, "True", 4) && at_end(p + 4)) return t->from_i64(elem, 1), AIT_OK;
    if (!strncmp(p, "False", 5) && at_end(p + 5)) return t->from_i64(elem, 0), AIT_OK;
  }
  if (t->is_int) {
    errno = 0;
    if (t->is_signed) {
      long long v = strtoll(s, &end, 10);
      if (end != s && at_end(end) && !errno) return t->from_i64(elem, v), AIT_OK;
    } else if (!strchr(s, '-')) {
      unsigned long long v = strtoull(s, &end, 10);
      if (end != s && at_end(end) && !errno) return t->from_i64(elem, (int64_t)v), AIT_OK;
    }
  }
  double d = strtod(s, &end);
  if (end == s || !at_end(end))
    return ait_err(AIT_E_INVALID_ARG, "Cast cannot read '%.40s' as %s", s, ait_dtype_name(dt));
  if (dt == AIT_FLOAT16 || dt == AIT_BFLOAT16) {
    float f = f32_round_odd(d);
    uint16_t h = dt == AIT_FLOAT16 ? ait_f32_to_f16(f) : ait_f32_to_bf16(f);
    memcpy(elem, &h, 2);
  } else {
    t->from_f64(elem, d);
  }
  return AIT_OK;
}

static ait_status from_strings(const ait_tensor *x, ait_tensor *y) {
  const ait_dtype_traits *t = ait_dtype_traits_of(y->dtype);
  char *const *xs = x->data;
  for (int64_t i = 0, n = ait_tensor_numel(x); i < n; i++)
    AIT_TRY(parse_one(xs[i] ? xs[i] : "", t, y->dtype, (char *)y->data + (size_t)i * t->size));
  return AIT_OK;
}

/* ---- kernels ----------------------------------------------------------- */

static ait_status cast_run(const ait_tensor *x, ait_dtype to, cast_mode m, ait_tensor **out) {
  if (!castable(x->dtype))
    return ait_err(AIT_E_UNSUPPORTED, "Cast from %s is not supported", ait_dtype_name(x->dtype));
  if (!castable(to))
    return ait_err(AIT_E_UNSUPPORTED, "Cast to %s is not supported", ait_dtype_name(to));
  if (x->dtype == to) {
    *out = ait_tensor_clone(x);
    return *out ? AIT_OK : AIT_E_NOMEM;
  }
  ait_tensor *y = ait_tensor_new(to, x->rank, x->dims);
  if (!y) return AIT_E_NOMEM;
  ait_status st = AIT_OK;
  if (x->dtype == AIT_STRING)
    st = from_strings(x, y);
  else if (to == AIT_STRING)
    st = to_strings(x, y);
  else
    cast_numbers(x, y, m);
  if (st != AIT_OK) {
    ait_tensor_free(y);
    return st;
  }
  *out = y;
  return AIT_OK;
}

ait_status ait_ew_k_Cast(ait_kctx *ctx, const ait_node *node, const ait_tensor *const *in, int n_in,
                         ait_tensor **out, int n_out) {
  AIT_TRY(ait_ew_need(in, n_in, 0, "input"));
  ait_dtype to;
  cast_mode m;
  AIT_TRY(ait_ew_cast_target(node, &to));
  AIT_TRY(cast_mode_of(node, &m));
  return cast_run(in[0], to, m, out);
}

ait_status ait_ew_k_CastLike(ait_kctx *ctx, const ait_node *node, const ait_tensor *const *in,
                             int n_in, ait_tensor **out, int n_out) {
  AIT_TRY(ait_ew_need(in, n_in, 0, "input"));
  AIT_TRY(ait_ew_need(in, n_in, 1, "target_type"));
  cast_mode m;
  AIT_TRY(cast_mode_of(node, &m));
  return cast_run(in[0], in[1]->dtype, m, out);
}
