/* What OpenVINO computes wrong, one row per case (ov_refuse.h). Measured
 * with OpenVINO 2026.4.1 on the onnx 1.23.2 node tests and the 1.12 ones:
 *   build/aitune conformance --backend openvino build/onnx-node-tests/node
 *   build/aitune conformance --backend openvino /usr/share/libonnx-testdata/data/node
 * A row's `cond` is what the message shows; `reason` says what goes wrong. */
#include "backends/openvino/ov_refuse.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/dtype.h"

typedef enum {
  ALWAYS,
  ATTR_INT_EQ,   /* integer attribute attr (default def) == ival */
  ATTR_INT_GE,   /* integer attribute attr (default def) >= ival */
  ATTR_STR_EQ,   /* string attribute attr == sval */
  ATTR_STR_NE,   /* string attribute attr present and != sval (its default) */
  IN_SIGNED_INT, /* input idx is a signed integer */
  IN_INT,        /* input idx is an integer */
  IN_DTYPE,      /* input idx has dtype dt */
  OUT_DTYPE,     /* output idx has dtype dt */
  IN_NOT_CONST,  /* input idx is computed at run time (not an initializer) */
  IN_PRESENT,    /* optional input idx is given */
  FN             /* fn(g, n) */
} cond_kind;

typedef struct refusal {
  const char *op;
  cond_kind kind;
  const char *attr;
  int idx;
  int64_t ival, def;
  const char *sval;
  ait_dtype dt;
  bool (*fn)(const ait_graph *g, const ait_node *n);
  const char *cond;
  const char *reason;
} refusal;

static const ait_value *input(const ait_graph *g, const ait_node *n, int k) {
  if (!g || k >= n->n_in || n->in[k] < 0) return NULL;
  return &g->values[n->in[k]];
}

static const ait_value *output(const ait_graph *g, const ait_node *n, int k) {
  if (!g || k >= n->n_out || n->out[k] < 0) return NULL;
  return &g->values[n->out[k]];
}

/* Cast (CastLike) to an 8-bit float with saturate = 1, the default: values
 * beyond the range become NaN or inf instead of the largest finite value. */
static bool cast_f8_saturating(const ait_graph *g, const ait_node *n) {
  const ait_value *y = output(g, n, 0);
  return y && (AIT_DT_BIT(y->dtype) & AIT_DT_F8) && ait_attr_int(n, "saturate", 1);
}

/* Cast (CastLike) of a float to int4 or uint4: OpenVINO rounds to nearest
 * (2.5 -> 3, -2.6 -> -3) where ONNX truncates toward zero as for every
 * integer type; integral values and integer inputs come out right (both
 * wrap). The node tests' data is integral, so they pass: measured on
 * fractions (test_openvino's test_4bit). */
static bool cast_float_to_int4(const ait_graph *g, const ait_node *n) {
  const ait_value *x = input(g, n, 0), *y = output(g, n, 0);
  const ait_dtype_traits *t = x ? ait_dtype_traits_of(x->dtype) : NULL;
  return y && (y->dtype == AIT_INT4 || y->dtype == AIT_UINT4) && (!t || t->is_float);
}

/* Attention with is_causal, an attn_mask and a past KV cache: OpenVINO puts
 * the causal triangle at the start of the cache, not after the past. */
static bool causal_mask_past(const ait_graph *g, const ait_node *n) {
  return ait_attr_int(n, "is_causal", 0) && input(g, n, 3) && input(g, n, 4);
}

/* DFT of a real signal (last dimension 1) or onesided: wrong values and
 * shapes; only complex input (last dimension 2) comes out right. Unknown
 * shapes are refused too. */
static bool dft_real_or_onesided(const ait_graph *g, const ait_node *n) {
  if (ait_attr_int(n, "onesided", 0)) return true;
  const ait_value *x = input(g, n, 0);
  return !x || x->rank < 1 || x->dims[x->rank - 1].v != 2;
}

/* MaxPool with ceil_mode whose last window would start in the end padding:
 * ONNX drops that window (the output is one shorter), OpenVINO keeps it.
 * Unknown spatial sizes are refused, since the case cannot be ruled out. */
static bool pool_ceil_window_in_pad(const ait_graph *g, const ait_node *n) {
  if (!ait_attr_int(n, "ceil_mode", 0)) return false;
  const ait_value *x = input(g, n, 0);
  int nk = 0, ns = 0, np = 0, nd = 0;
  const int64_t *k = ait_attr_ints(n, "kernel_shape", &nk);
  const int64_t *s = ait_attr_ints(n, "strides", &ns);
  const int64_t *p = ait_attr_ints(n, "pads", &np);
  const int64_t *d = ait_attr_ints(n, "dilations", &nd);
  if (!x || !k || x->rank != nk + 2) return true;
  for (int a = 0; a < nk; a++) {
    int64_t in = x->dims[a + 2].v;
    if (in < 0) return true;
    int64_t st = ns == nk ? s[a] : 1, dil = nd == nk ? d[a] : 1;
    int64_t pb = np == 2 * nk ? p[a] : 0, pe = np == 2 * nk ? p[a + nk] : 0;
    int64_t span = in + pb + pe - ((k[a] - 1) * dil + 1);
    if (st <= 0 || span < 0) return true;
    int64_t out = (span + st - 1) / st + 1;
    if ((out - 1) * st >= in + pb) return true;
  }
  return false;
}

/* ReduceL1, ReduceLogSum, ReduceLogSumExp before opset 18 (axes an
 * attribute): OpenVINO ignores the attribute and reduces every axis (the
 * onnx 1.12 node tests; from opset 18, axes as an input, they are right). */
static bool reduce_axes_attribute(const ait_graph *g, const ait_node *n) {
  int count = 0;
  return n->opset < 18 && ait_attr_ints(n, "axes", &count) && count > 0;
}

/* Resize with align_corners (linear, cubic) that shrinks an axis: OpenVINO's
 * values differ (upsampling is right). Unknown sizes are refused. */
static bool resize_align_corners_down(const ait_graph *g, const ait_node *n) {
  if (strcmp(ait_attr_str(n, "coordinate_transformation_mode", "half_pixel"), "align_corners") ||
      !strcmp(ait_attr_str(n, "mode", "nearest"), "nearest"))
    return false;
  const ait_value *x = input(g, n, 0), *y = output(g, n, 0);
  if (!x || !y || x->rank < 0 || x->rank != y->rank) return true;
  for (int a = 0; a < x->rank; a++)
    if (x->dims[a].v < 0 || y->dims[a].v < 0 || y->dims[a].v < x->dims[a].v) return true;
  return false;
}

/* Does the value v hold (or is it computed from, up to a few nodes back) a
 * constant with an infinity of the given sign? Walks producers breadth-first
 * over a bounded number of nodes; constants are initializers, folded values
 * and Constant nodes' `value`. */
static bool tensor_has_inf(const ait_tensor *t, int sign) {
  const ait_dtype_traits *tr =
      t && t->kind == AIT_KIND_TENSOR ? ait_dtype_traits_of(t->dtype) : NULL;
  if (!tr || !tr->is_float || !tr->to_f64 || !t->data) return false;
  int64_t n = ait_tensor_numel(t);
  for (int64_t i = 0; i < n && i < (1 << 20); i++) {
    double x = tr->to_f64((const uint8_t *)t->data + (size_t)i * tr->size);
    if (isinf(x) && (x > 0) == (sign > 0)) return true;
  }
  return false;
}

#define UPSTREAM_MAX 64

static bool inf_upstream(const ait_graph *g, int v0, int sign) {
  int queue[UPSTREAM_MAX], n = 0;
  if (!g || v0 < 0) return false;
  queue[n++] = v0;
  for (int at = 0; at < n; at++) {
    const ait_value *v = &g->values[queue[at]];
    if (tensor_has_inf(v->init, sign)) return true;
    if (v->producer < 0) continue;
    const ait_node *p = &g->nodes[v->producer];
    for (int k = 0; k < p->n_attrs; k++)
      if (!strcmp(p->op_type, "Constant") && tensor_has_inf(p->attrs[k].t, sign)) return true;
    for (int k = 0; k < p->n_in && n < UPSTREAM_MAX; k++) {
      bool seen = p->in[k] < 0;
      for (int j = 0; j < n && !seen; j++)
        seen = queue[j] == p->in[k];
      if (!seen) queue[n++] = p->in[k];
    }
  }
  return false;
}

/* ReduceMax of a row holding only -inf gives -3.4e38 (the lowest finite
 * float32) instead of -inf, ReduceMin of only +inf gives +3.4e38: the
 * fully masked rows of the Attention function bodies (Where(mask, 0, -inf),
 * then ReduceMax to find rows with nothing left). Refused where the input is
 * computed from a constant holding that infinity; an infinity arriving in a
 * graph input is not seen (the tuner's numeric check stands behind it). */
static bool reduce_max_neg_inf(const ait_graph *g, const ait_node *n) {
  return n->n_in > 0 && inf_upstream(g, n->in[0], -1);
}

static bool reduce_min_pos_inf(const ait_graph *g, const ait_node *n) {
  return n->n_in > 0 && inf_upstream(g, n->in[0], +1);
}

/* NonMaxSuppression: OpenVINO suppresses a box at IoU >= iou_threshold,
 * ONNX only at IoU > iou_threshold. With a threshold of 0 (also when absent)
 * every pair of boxes that do not overlap ties, and a threshold given at run
 * time may be 0 or hit a tie (test_nonmaxsuppression_iou_threshold_boundary):
 * refused unless it is a constant > 0, where only an IoU exactly equal to it
 * differs. */
static bool nms_threshold_not_positive(const ait_graph *g, const ait_node *n) {
  const ait_value *t = input(g, n, 3);
  if (!t || !t->init || t->init->kind != AIT_KIND_TENSOR || ait_tensor_numel(t->init) != 1)
    return true;
  const ait_dtype_traits *tr = ait_dtype_traits_of(t->init->dtype);
  return !tr || !tr->to_f64 || !(tr->to_f64(t->init->data) > 0);
}

/* QuantizeLinear rounds after adding the zero point (round(x / s + zp)),
 * ONNX before (round(x / s) + zp): with round-half-to-even an odd zero point
 * flips every exact half (x / s = 25.5, zp 153: 178, not 179). Refused for a
 * zero point that is odd or computed at run time; an even one is exact. */
static bool quantize_odd_zero_point(const ait_graph *g, const ait_node *n) {
  const ait_value *z = input(g, n, 2);
  if (!z) return false; /* no zero point: 0 */
  if (!z->init || z->init->kind != AIT_KIND_TENSOR) return true;
  const ait_dtype_traits *tr = ait_dtype_traits_of(z->init->dtype);
  if (!tr || !tr->is_int || !tr->to_f64) return !tr || !tr->is_float; /* float8 zero points: 0 */
  int64_t count = ait_tensor_numel(z->init);
  for (int64_t i = 0; i < count; i++) {
    double v = tr->to_f64((const uint8_t *)z->init->data + (size_t)i * tr->size);
    if (fmod(v, 2.0) != 0) return true;
  }
  return false;
}

#define RANDOM(name)                                                                               \
  {                                                                                                \
    .op = name, .kind = ALWAYS, .cond = "any",                                                     \
    .reason = "random values: OpenVINO's generator is not the reference's (numpy's MT19937, also " \
              "with a seed), so no check can judge them; the reference draws them"                 \
  }

static const refusal rows[] = {
    {.op = "Attention",
     .kind = ATTR_INT_GE,
     .attr = "left_window_size",
     .ival = 0,
     .def = -1,
     .cond = "left_window_size >= 0",
     .reason = "sliding-window attention (opset 25): OpenVINO ignores the window"},
    {.op = "Attention",
     .kind = ATTR_INT_GE,
     .attr = "right_window_size",
     .ival = 0,
     .def = -1,
     .cond = "right_window_size >= 0",
     .reason = "sliding-window attention (opset 25): OpenVINO ignores the window"},
    {.op = "Attention",
     .kind = FN,
     .fn = causal_mask_past,
     .cond = "is_causal with attn_mask and past_key",
     .reason =
         "OpenVINO aligns the causal mask with the start of the KV cache, not after the past"},
    {.op = "BitShift",
     .kind = IN_SIGNED_INT,
     .idx = 0,
     .cond = "a signed input",
     .reason = "negative values, negative shifts and shifts >= the width differ from the opset-28 "
               "rules (arithmetic right shift, 0 or -1 past the width)"},
    {.op = "Cast",
     .kind = FN,
     .fn = cast_f8_saturating,
     .cond = "an 8-bit float output and saturate = 1",
     .reason = "OpenVINO does not saturate: NaN or inf instead of the largest finite value"},
    {.op = "CastLike",
     .kind = FN,
     .fn = cast_f8_saturating,
     .cond = "an 8-bit float output and saturate = 1",
     .reason = "OpenVINO does not saturate: NaN or inf instead of the largest finite value"},
    {.op = "Cast",
     .kind = FN,
     .fn = cast_float_to_int4,
     .cond = "a float input and an int4 or uint4 output",
     .reason = "OpenVINO rounds to nearest where ONNX truncates toward zero (2.5 -> 3, not 2)"},
    {.op = "CastLike",
     .kind = FN,
     .fn = cast_float_to_int4,
     .cond = "a float input and an int4 or uint4 output",
     .reason = "OpenVINO rounds to nearest where ONNX truncates toward zero (2.5 -> 3, not 2)"},
    {.op = "Cast",
     .kind = OUT_DTYPE,
     .idx = 0,
     .dt = AIT_FLOAT8E8M0,
     .cond = "a float8e8m0 output",
     .reason = "rounds to a different power of two"},
    {.op = "CastLike",
     .kind = OUT_DTYPE,
     .idx = 0,
     .dt = AIT_FLOAT8E8M0,
     .cond = "a float8e8m0 output",
     .reason = "rounds to a different power of two"},
    {.op = "DFT",
     .kind = FN,
     .fn = dft_real_or_onesided,
     .cond = "a real input (last dimension not 2) or onesided",
     .reason = "wrong values and output shapes"},
    {.op = "DynamicQuantizeLinear",
     .kind = ALWAYS,
     .cond = "any",
     .reason = "its scale rounds differently: codes off by one"},
    {.op = "GRU",
     .kind = ATTR_INT_EQ,
     .attr = "layout",
     .ival = 1,
     .cond = "layout = 1",
     .reason = "batch-first layout gives wrong values"},
    {.op = "LSTM",
     .kind = ATTR_INT_EQ,
     .attr = "layout",
     .ival = 1,
     .cond = "layout = 1",
     .reason = "batch-first layout gives wrong values"},
    {.op = "LSTM",
     .kind = IN_PRESENT,
     .idx = 7,
     .cond = "peepholes (input P)",
     .reason = "wrong values"},
    {.op = "RNN",
     .kind = ATTR_INT_EQ,
     .attr = "layout",
     .ival = 1,
     .cond = "layout = 1",
     .reason = "batch-first layout gives wrong values"},
    {.op = "MaxPool",
     .kind = FN,
     .fn = pool_ceil_window_in_pad,
     .cond = "ceil_mode with a last window starting in the end padding (or unknown sizes)",
     .reason = "OpenVINO keeps the window ONNX drops: the output is one longer"},
    {.op = "Mod",
     .kind = IN_DTYPE,
     .idx = 0,
     .dt = AIT_FLOAT64,
     .cond = "float64",
     .reason = "computed in float32 (-0.100000381 for -0.1)"},
    {.op = "NonMaxSuppression",
     .kind = FN,
     .fn = nms_threshold_not_positive,
     .cond = "an iou_threshold that is not a constant > 0",
     .reason = "OpenVINO suppresses at IoU >= the threshold, ONNX at IoU >: at 0 every pair of "
               "boxes that do not overlap ties"},
    {.op = "QuantizeLinear",
     .kind = FN,
     .fn = quantize_odd_zero_point,
     .cond = "an odd or run-time zero point",
     .reason = "OpenVINO rounds after adding the zero point: exact halves come out one off"},
    RANDOM("Bernoulli"),
    RANDOM("Multinomial"),
    RANDOM("RandomNormal"),
    RANDOM("RandomNormalLike"),
    RANDOM("RandomUniform"),
    RANDOM("RandomUniformLike"),
    {.op = "ReduceMax",
     .kind = FN,
     .fn = reduce_max_neg_inf,
     .cond = "an input computed from a -inf constant",
     .reason = "a row of only -inf gives -3.4e38 (the lowest finite float32), not -inf"},
    {.op = "ReduceMin",
     .kind = FN,
     .fn = reduce_min_pos_inf,
     .cond = "an input computed from a +inf constant",
     .reason = "a row of only +inf gives 3.4e38 (the largest finite float32), not +inf"},
    {.op = "QuantizeLinear",
     .kind = OUT_DTYPE,
     .idx = 0,
     .dt = AIT_UINT16,
     .cond = "uint16 output",
     .reason = "rounding off by one"},
    {.op = "ReduceL1",
     .kind = FN,
     .fn = reduce_axes_attribute,
     .cond = "the axes attribute (opset < 18)",
     .reason = "OpenVINO ignores it and reduces every axis"},
    {.op = "ReduceLogSum",
     .kind = FN,
     .fn = reduce_axes_attribute,
     .cond = "the axes attribute (opset < 18)",
     .reason = "OpenVINO ignores it and reduces every axis"},
    {.op = "ReduceLogSumExp",
     .kind = FN,
     .fn = reduce_axes_attribute,
     .cond = "the axes attribute (opset < 18)",
     .reason = "OpenVINO ignores it and reduces every axis"},
    {.op = "Resize",
     .kind = ATTR_INT_EQ,
     .attr = "antialias",
     .ival = 1,
     .cond = "antialias = 1",
     .reason = "OpenVINO ignores antialiasing"},
    {.op = "Resize",
     .kind = ATTR_STR_NE,
     .attr = "keep_aspect_ratio_policy",
     .sval = "stretch",
     .cond = "keep_aspect_ratio_policy not stretch",
     .reason = "OpenVINO ignores the policy: wrong output shapes"},
    {.op = "Resize",
     .kind = ATTR_INT_EQ,
     .attr = "exclude_outside",
     .ival = 1,
     .cond = "exclude_outside = 1",
     .reason = "wrong cubic weights at the borders"},
    {.op = "Resize",
     .kind = FN,
     .fn = resize_align_corners_down,
     .cond = "align_corners (linear, cubic) shrinking an axis (or unknown sizes)",
     .reason = "wrong values"},
    {.op = "RoiAlign",
     .kind = ATTR_STR_EQ,
     .attr = "mode",
     .sval = "max",
     .cond = "mode = max",
     .reason = "wrong values"},
    {.op = "SpaceToDepth",
     .kind = ATTR_STR_EQ,
     .attr = "mode",
     .sval = "CRD",
     .cond = "mode = CRD",
     .reason = "OpenVINO orders the channels as DCR"},
    {.op = "Tile",
     .kind = IN_NOT_CONST,
     .idx = 1,
     .cond = "repeats computed at run time",
     .reason = "zeros instead of the tiled values"},
    {.op = "TopK",
     .kind = IN_INT,
     .idx = 0,
     .cond = "an integer input",
     .reason = "among equal values OpenVINO returns a later index than ONNX's lowest"},
};

int ov_refusal_count(void) { return (int)(sizeof rows / sizeof rows[0]); }

static bool applies(const refusal *r, const ait_graph *g, const ait_node *n) {
  const ait_value *v = NULL;
  const ait_dtype_traits *t = NULL;
  switch (r->kind) {
  case ALWAYS: return true;
  case ATTR_INT_EQ: return ait_attr_int(n, r->attr, r->def) == r->ival;
  case ATTR_INT_GE: return ait_attr_int(n, r->attr, r->def) >= r->ival;
  case ATTR_STR_EQ: return !strcmp(ait_attr_str(n, r->attr, ""), r->sval);
  case ATTR_STR_NE: return strcmp(ait_attr_str(n, r->attr, r->sval), r->sval) != 0;
  case IN_SIGNED_INT:
  case IN_INT:
    v = input(g, n, r->idx);
    t = v ? ait_dtype_traits_of(v->dtype) : NULL;
    return t && t->is_int && (r->kind == IN_INT || t->is_signed);
  case IN_DTYPE: return (v = input(g, n, r->idx)) && v->dtype == r->dt;
  case OUT_DTYPE: return (v = output(g, n, r->idx)) && v->dtype == r->dt;
  case IN_NOT_CONST: return (v = input(g, n, r->idx)) && !v->init;
  case IN_PRESENT: return r->idx < n->n_in && n->in[r->idx] >= 0;
  case FN: return r->fn(g, n);
  }
  return false;
}

bool ov_refuses(const ait_graph *g, const ait_node *n, char *why, size_t len) {
  if (n->domain[0] && strcmp(n->domain, "ai.onnx")) return false;
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    const refusal *r = &rows[i];
    if (strcmp(n->op_type, r->op) || !applies(r, g, n)) continue;
    snprintf(why, len, "OpenVINO computes %s with %s wrong: %s (%s)", r->op, r->cond, r->reason,
             ait_node_desc(n));
    return true;
  }
  return false;
}
