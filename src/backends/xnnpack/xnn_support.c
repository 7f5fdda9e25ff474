/* Which ONNX nodes map onto Debian's XNNPACK (2022-02 subgraph API), with a
 * reason for every refusal. The same checks guard build(), so a graph of
 * supported nodes always lowers. Windowed ops take 1D and 2D windows (1D as
 * 2D of height 1); weights must be constants (XNNPACK packs them when a
 * runtime is made). What this XNNPACK version lacks: Transpose, MatMul of
 * two run-time operands, Tanh/Exp/Log/Erf, reductions other than the global
 * average pool, LayerNormalization, Gather, Resize with ONNX's modes, 3D
 * windows. Its fp16 path (XNN_FLAG_FORCE_FP16_INFERENCE) is emulated on x86
 * and covers few nodes; dtype=fp16 takes only those (the `fp16` column). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/xnnpack/xnn_impl.h"
#include "ir/passes/passes.h"
#include "ops/op.h"

static bool fail(char *why, size_t n, const char *fmt, ...) AIT_PRINTF(3, 4);
static bool fail(char *why, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, n, fmt, ap);
  va_end(ap);
  return false;
}

bool xnn_foldable(const ait_graph *g, const ait_node *n, const uint8_t *cmask) {
  if (n->domain[0] || !ait_node_pure(n)) return false;
  int present = 0;
  for (int i = 0; i < n->n_in; i++) {
    if (n->in[i] < 0) continue;
    if (!cmask[n->in[i]]) return false;
    present++;
  }
  if (!present && strcmp(n->op_type, "Constant")) return false;
  for (int i = 0; i < n->n_out; i++)
    if (n->out[i] >= 0 && g->values[n->out[i]].type != AIT_VT_TENSOR) return false;
  return true;
}

uint8_t *xnn_const_mask(const ait_graph *g) {
  uint8_t *m = calloc((size_t)g->n_values + 1, 1);
  if (!m) {
    ait_err(AIT_E_NOMEM, "out of memory");
    return NULL;
  }
  for (int v = 0; v < g->n_values; v++) {
    const ait_value *x = &g->values[v];
    m[v] = x->init && x->producer < 0 && !x->outer && x->init->kind == AIT_KIND_TENSOR;
  }
  /* nodes are in topological order; a second sweep covers graphs that are not */
  for (bool changed = true; changed;) {
    changed = false;
    for (int i = 0; i < g->n_nodes; i++) {
      const ait_node *n = &g->nodes[i];
      if (!xnn_foldable(g, n, m)) continue;
      for (int o = 0; o < n->n_out; o++)
        if (n->out[o] >= 0 && !m[n->out[o]]) m[n->out[o]] = changed = true;
    }
  }
  return m;
}

/* ---- helpers over the graph's declared values ----------------------------- */

typedef struct chk {
  const ait_graph *g;
  const ait_node *n;
  const uint8_t *cm;
  bool fp16;
  char *why;
  size_t nwhy;
} chk;

static const ait_value *val(const chk *c, int i) {
  return i < c->n->n_in && c->n->in[i] >= 0 ? &c->g->values[c->n->in[i]] : NULL;
}
static bool is_const(const chk *c, int i) {
  return i < c->n->n_in && c->n->in[i] >= 0 && c->cm[c->n->in[i]];
}
static bool present(const chk *c, int i) { return i < c->n->n_in && c->n->in[i] >= 0; }

/* Input i is a float32 tensor of known rank in [lo, hi] (run-time or constant). */
static bool f32_in(const chk *c, int i, int lo, int hi) {
  const ait_value *v = val(c, i);
  if (!v) return fail(c->why, c->nwhy, "%s: input %d is missing", c->n->op_type, i);
  if (v->type != AIT_VT_TENSOR || v->dtype != AIT_FLOAT32)
    return fail(c->why, c->nwhy, "%s: input '%s' is %s, xnnpack runs float32 only", c->n->op_type,
                v->name, ait_dtype_name(v->dtype));
  if (v->rank < lo || v->rank > hi) {
    if (v->rank < 0)
      return fail(c->why, c->nwhy, "%s: the rank of input '%s' is unknown", c->n->op_type, v->name);
    return fail(c->why, c->nwhy, "%s: input '%s' has rank %d, xnnpack takes %d..%d here",
                c->n->op_type, v->name, v->rank, lo, hi);
  }
  return true;
}

/* Input i is a run-time float32 tensor (the data operand). */
static bool data_in(const chk *c, int i, int lo, int hi) {
  if (is_const(c, i))
    return fail(c->why, c->nwhy, "%s: input %d is a constant where xnnpack wants run-time data",
                c->n->op_type, i);
  return f32_in(c, i, lo, hi);
}

static bool const_in(const chk *c, int i, const char *what) {
  if (!is_const(c, i))
    return fail(c->why, c->nwhy, "%s: %s (input %d) must be a constant for xnnpack", c->n->op_type,
                what, i);
  return true;
}

/* Every output but output 0 is absent or read by nobody. */
static bool only_out0(const chk *c) {
  for (int o = 1; o < c->n->n_out; o++) {
    int v = c->n->out[o];
    if (v < 0) continue;
    for (int k = 0; k < c->g->n_outputs; k++)
      if (c->g->outputs[k] == v) goto used;
    for (int i = 0; i < c->g->n_nodes; i++)
      for (int j = 0; j < c->g->nodes[i].n_in; j++)
        if (c->g->nodes[i].in[j] == v) goto used;
    continue;
  used:
    return fail(c->why, c->nwhy, "%s: output %d ('%s') is used; xnnpack computes output 0 only",
                c->n->op_type, o, c->g->values[v].name);
  }
  const ait_value *y = c->n->n_out > 0 && c->n->out[0] >= 0 ? &c->g->values[c->n->out[0]] : NULL;
  if (!y) return fail(c->why, c->nwhy, "%s: output 0 is absent", c->n->op_type);
  if (y->dtype != AIT_FLOAT32 && y->dtype != AIT_UNDEFINED)
    return fail(c->why, c->nwhy, "%s: output is %s, xnnpack runs float32 only", c->n->op_type,
                ait_dtype_name(y->dtype));
  if (y->rank > XNN_MAX_TENSOR_DIMS)
    return fail(c->why, c->nwhy, "%s: output rank %d is over XNNPACK's %d", c->n->op_type, y->rank,
                XNN_MAX_TENSOR_DIMS);
  return true;
}

static bool ints_ok(const chk *c, const char *name, int want, int64_t lo) {
  int cnt = 0;
  const int64_t *v = ait_attr_ints(c->n, name, &cnt);
  if (!v) return true;
  if (cnt != want)
    return fail(c->why, c->nwhy, "%s: %s has %d values, %d wanted", c->n->op_type, name, cnt, want);
  for (int i = 0; i < cnt; i++)
    if (v[i] < lo)
      return fail(c->why, c->nwhy, "%s: %s[%d] = %lld", c->n->op_type, name, i, (long long)v[i]);
  return true;
}

/* The window attributes (auto_pad, strides, pads, dilations) of a 1D or 2D
 * window (nsp spatial dims). */
static bool window_ok(const chk *c, int nsp, bool dilations) {
  const char *ap = ait_attr_str(c->n, "auto_pad", "NOTSET");
  if (strcmp(ap, "NOTSET") && strcmp(ap, "VALID") && strcmp(ap, "SAME_UPPER") &&
      strcmp(ap, "SAME_LOWER"))
    return fail(c->why, c->nwhy, "%s: auto_pad '%s'", c->n->op_type, ap);
  if (!ints_ok(c, "strides", nsp, 1) || !ints_ok(c, "pads", 2 * nsp, 0)) return false;
  if (dilations) return ints_ok(c, "dilations", nsp, 1);
  int cnt = 0;
  const int64_t *d = ait_attr_ints(c->n, "dilations", &cnt);
  for (int i = 0; i < cnt; i++)
    if (d[i] != 1) return fail(c->why, c->nwhy, "%s: dilations other than 1", c->n->op_type);
  return true;
}

/* ---- per op ---------------------------------------------------------------- */

/* Windowed ops run 1D (as 2D of height 1) and 2D windows. */
static bool spatial_in(const chk *c) {
  if (!data_in(c, 0, 3, 4)) return false;
  const ait_value *x = val(c, 0);
  if (x->dims[1].v == 0) return fail(c->why, c->nwhy, "%s: no channels", c->n->op_type);
  return true;
}

static bool ck_conv(const chk *c) {
  if (!spatial_in(c) || !const_in(c, 1, "the weight")) return false;
  int r = val(c, 0)->rank;
  if (!f32_in(c, 1, r, r)) return false;
  const ait_value *w = val(c, 1), *x = val(c, 0);
  int64_t group = ait_attr_int(c->n, "group", 1), m = w->dims[0].v;
  if (group < 1 || m < 1 || w->dims[1].v < 1 || m % group)
    return fail(c->why, c->nwhy, "Conv: group %lld with %lld filters", (long long)group,
                (long long)m);
  if (x->dims[1].v >= 0 && x->dims[1].v != w->dims[1].v * group)
    return fail(c->why, c->nwhy, "Conv: %lld input channels, the weight wants %lld",
                (long long)x->dims[1].v, (long long)(w->dims[1].v * group));
  if (present(c, 2) && (!const_in(c, 2, "the bias") || !f32_in(c, 2, 1, 1))) return false;
  int nk = 0;
  const int64_t *k = ait_attr_ints(c->n, "kernel_shape", &nk);
  for (int i = 0; k && i < nk; i++)
    if (nk != r - 2 || k[i] != w->dims[2 + i].v)
      return fail(c->why, c->nwhy, "Conv: kernel_shape does not match the weight");
  return window_ok(c, r - 2, true) && only_out0(c);
}

static bool ck_convt(const chk *c) {
  if (!spatial_in(c) || !const_in(c, 1, "the weight")) return false;
  int r = val(c, 0)->rank;
  if (!f32_in(c, 1, r, r)) return false;
  const ait_value *w = val(c, 1), *x = val(c, 0);
  int64_t group = ait_attr_int(c->n, "group", 1);
  if (group < 1 || w->dims[0].v < 1 || w->dims[1].v < 1 || w->dims[0].v % group)
    return fail(c->why, c->nwhy, "ConvTranspose: group %lld with %lld input channels",
                (long long)group, (long long)w->dims[0].v);
  if (x->dims[1].v >= 0 && x->dims[1].v != w->dims[0].v)
    return fail(c->why, c->nwhy, "ConvTranspose: %lld input channels, the weight wants %lld",
                (long long)x->dims[1].v, (long long)w->dims[0].v);
  if (present(c, 2) && (!const_in(c, 2, "the bias") || !f32_in(c, 2, 1, 1))) return false;
  if (!ints_ok(c, "output_padding", r - 2, 0)) return false;
  return window_ok(c, r - 2, true) && only_out0(c);
}

static bool ck_gemm(const chk *c) {
  if (ait_attr_int(c->n, "transA", 0))
    return fail(c->why, c->nwhy, "Gemm: transA=1 (XNNPACK has no transpose)");
  if (!data_in(c, 0, 2, 2) || !const_in(c, 1, "B (the weight)") || !f32_in(c, 1, 2, 2))
    return false;
  if (present(c, 2)) {
    if (!f32_in(c, 2, 0, 2)) return false;
    if (!is_const(c, 2) && ait_attr_float(c->n, "beta", 1.0f) == 0.0f)
      return fail(c->why, c->nwhy, "Gemm: beta = 0 with a run-time C");
  }
  return only_out0(c);
}

static bool ck_matmul(const chk *c) {
  if (!const_in(c, 1, "B (the weight)"))
    return false; /* XNNPACK 2022-02 has no batched matmul of two run-time operands */
  return data_in(c, 0, 1, XNN_MAX_TENSOR_DIMS) && f32_in(c, 1, 2, 2) && only_out0(c);
}

/* A pool window of nsp dims with two elements or more. */
static bool pool_kernel(const chk *c, int nsp) {
  int nk = 0;
  const int64_t *k = ait_attr_ints(c->n, "kernel_shape", &nk);
  if (!k || nk != nsp)
    return fail(c->why, c->nwhy, "%s: needs a kernel_shape of %d dims", c->n->op_type, nsp);
  int64_t size = 1;
  for (int i = 0; i < nk; i++) {
    if (k[i] < 1)
      return fail(c->why, c->nwhy, "%s: kernel_shape[%d] = %lld", c->n->op_type, i,
                  (long long)k[i]);
    size *= k[i];
  }
  if (size < 2)
    return fail(c->why, c->nwhy, "%s: a window of one element (XNNPACK pools need 2+)",
                c->n->op_type);
  return true;
}

static bool ck_maxpool(const chk *c) {
  if (!spatial_in(c)) return false;
  int nsp = val(c, 0)->rank - 2;
  return pool_kernel(c, nsp) && window_ok(c, nsp, true) && only_out0(c);
}

static bool ck_avgpool(const chk *c) {
  if (ait_attr_int(c->n, "ceil_mode", 0))
    return fail(c->why, c->nwhy, "AveragePool: ceil_mode=1 (XNNPACK rounds down)");
  if (!spatial_in(c)) return false;
  int nsp = val(c, 0)->rank - 2;
  return pool_kernel(c, nsp) && window_ok(c, nsp, false) && only_out0(c);
}

static bool ck_gap(const chk *c) { return spatial_in(c) && only_out0(c); }

static bool ck_binary(const chk *c) {
  if (c->n->n_in != 2)
    return fail(c->why, c->nwhy, "%s: %d inputs (xnnpack takes 2)", c->n->op_type, c->n->n_in);
  if (!f32_in(c, 0, 0, XNN_MAX_TENSOR_DIMS) || !f32_in(c, 1, 0, XNN_MAX_TENSOR_DIMS)) return false;
  bool legacy = c->n->opset < 7 && strcmp(c->n->op_type, "Max") && strcmp(c->n->op_type, "Min");
  if (legacy && ait_attr_int(c->n, "broadcast", 0)) {
    /* B lines up with A from `axis`: trailing ones make it numpy broadcasting */
    int ra = val(c, 0)->rank, rb = val(c, 1)->rank;
    int64_t axis = ait_attr_int(c->n, "axis", ra - rb);
    if (axis < 0) axis += ra;
    if (rb > ra || axis < 0 || axis + rb > ra)
      return fail(c->why, c->nwhy, "%s: B of rank %d cannot broadcast into rank %d at axis %lld",
                  c->n->op_type, rb, ra, (long long)axis);
  }
  return only_out0(c);
}

static bool ck_unary(const chk *c) { return data_in(c, 0, 0, XNN_MAX_TENSOR_DIMS) && only_out0(c); }

static bool scalar_const(const chk *c, int i, const char *what) {
  if (!present(c, i)) return true;
  if (!const_in(c, i, what)) return false;
  const ait_value *v = val(c, i);
  for (int d = 0; d < v->rank; d++)
    if (v->dims[d].v != 1)
      return fail(c->why, c->nwhy, "%s: %s is not a scalar", c->n->op_type, what);
  return true;
}

static bool ck_clip(const chk *c) {
  return ck_unary(c) && scalar_const(c, 1, "min") && scalar_const(c, 2, "max");
}

static bool ck_dropout(const chk *c) {
  if (present(c, 2)) {
    const ait_value *t = val(c, 2);
    if (!is_const(c, 2) || !t->init || ait_tensor_numel(t->init) != 1 || ait_scalar_f64(t->init))
      return fail(c->why, c->nwhy, "Dropout: training_mode is not a constant false");
  }
  return ck_unary(c);
}

static bool ck_prelu(const chk *c) {
  if (!spatial_in(c)) return false;
  int r = val(c, 0)->rank;
  if (!const_in(c, 1, "the slope") || !f32_in(c, 1, 0, r)) return false;
  const ait_value *s = val(c, 1), *x = val(c, 0);
  int64_t d[4] = {1, 1, 1, 1}, numel = 1; /* the slope right-aligned to X's rank */
  for (int i = 0; i < s->rank; i++) {
    d[r - s->rank + i] = s->dims[i].v;
    numel *= s->dims[i].v;
  }
  bool per_channel = d[0] == 1 && (x->dims[1].v < 0 || d[1] == x->dims[1].v);
  for (int i = 2; i < r; i++)
    per_channel = per_channel && d[i] == 1;
  if (numel != 1 && !per_channel)
    return fail(c->why, c->nwhy, "PRelu: the slope is neither a scalar nor per channel");
  return only_out0(c);
}

static bool ck_softmax(const chk *c) {
  if (!data_in(c, 0, 1, XNN_MAX_TENSOR_DIMS)) return false;
  int r = val(c, 0)->rank;
  int64_t axis = ait_attr_int(c->n, "axis", c->n->opset >= 13 ? -1 : 1);
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) return fail(c->why, c->nwhy, "Softmax: axis out of range");
  if (c->n->opset >= 13 && axis != r - 1 && !(r == 4 && axis == 1))
    return fail(c->why, c->nwhy,
                "Softmax: axis %lld of rank %d (XNNPACK reduces the innermost axis only)",
                (long long)axis, r);
  return only_out0(c);
}

static bool ck_reshape(const chk *c) {
  if (!data_in(c, 0, 0, XNN_MAX_TENSOR_DIMS)) return false;
  if (!strcmp(c->n->op_type, "Reshape") && !const_in(c, 1, "the shape")) return false;
  if ((!strcmp(c->n->op_type, "Squeeze") || !strcmp(c->n->op_type, "Unsqueeze")) && present(c, 1) &&
      !const_in(c, 1, "axes"))
    return false;
  return only_out0(c);
}

static bool ck_concat(const chk *c) {
  if (c->n->n_in < 1 || c->n->n_in > XNN_MAX_IN)
    return fail(c->why, c->nwhy, "Concat: %d inputs (xnnpack takes 1..%d)", c->n->n_in, XNN_MAX_IN);
  int r = val(c, 0) ? val(c, 0)->rank : -1;
  for (int i = 0; i < c->n->n_in; i++) {
    if (!f32_in(c, i, 1, XNN_MAX_TENSOR_DIMS)) return false;
    if (val(c, i)->rank != r) return fail(c->why, c->nwhy, "Concat: inputs of different ranks");
  }
  return only_out0(c);
}

static bool ck_pad(const chk *c) {
  const char *mode = ait_attr_str(c->n, "mode", "constant");
  if (strcmp(mode, "constant"))
    return fail(c->why, c->nwhy, "Pad: mode '%s' (XNNPACK pads with a constant only)", mode);
  if (!data_in(c, 0, 1, XNN_MAX_TENSOR_DIMS)) return false;
  if (c->n->opset >= 11) {
    if (!const_in(c, 1, "pads") || !scalar_const(c, 2, "constant_value")) return false;
    if (present(c, 3)) return fail(c->why, c->nwhy, "Pad: the axes input");
    const ait_value *p = val(c, 1);
    if (p->init && p->init->dtype == AIT_INT64)
      for (int64_t i = 0; i < ait_tensor_numel(p->init); i++)
        if (((const int64_t *)p->init->data)[i] < 0)
          return fail(c->why, c->nwhy, "Pad: negative pads (cropping)");
  } else {
    int np = 0;
    const int64_t *p = ait_attr_ints(c->n, c->n->opset >= 2 ? "pads" : "paddings", &np);
    for (int i = 0; i < np; i++)
      if (p[i] < 0) return fail(c->why, c->nwhy, "Pad: negative pads (cropping)");
  }
  return only_out0(c);
}

static bool ck_bn(const chk *c) {
  if (!data_in(c, 0, 2, XNN_MAX_TENSOR_DIMS)) return false;
  if (ait_attr_int(c->n, "training_mode", 0))
    return fail(c->why, c->nwhy, "BatchNormalization: training_mode=1");
  if (c->n->opset < 9 && !ait_attr_int(c->n, "spatial", 1))
    return fail(c->why, c->nwhy, "BatchNormalization: spatial=0");
  static const char *const names[] = {"scale", "B", "mean", "var"};
  for (int i = 1; i <= 4; i++)
    if (!const_in(c, i, names[i - 1]) || !f32_in(c, i, 1, 1)) return false;
  return only_out0(c);
}

/* ---- the table ------------------------------------------------------------- */

typedef struct op_rule {
  const char *name;
  bool (*check)(const chk *c);
  bool fp16; /* runs under XNN_FLAG_FORCE_FP16_INFERENCE in this XNNPACK */
} op_rule;

/* fp16: what the 2022-02 fp16 rewrite accepts (probed): convolutions,
 * add/multiply of two run-time tensors, clamp, pools other than the average
 * pool, leaky relu, pad, reshape. HardSwish asserts inside the library under
 * forced fp16, Gemm/Sigmoid/Softmax/Sub/Div/AveragePool are refused. */
static const op_rule rules[] = {
    {"Conv", ck_conv, true},
    {"ConvTranspose", ck_convt, false},
    {"Gemm", ck_gemm, false},
    {"MatMul", ck_matmul, false},
    {"MaxPool", ck_maxpool, true},
    {"AveragePool", ck_avgpool, false},
    {"GlobalAveragePool", ck_gap, true},
    {"Add", ck_binary, true},
    {"Mul", ck_binary, true},
    {"Sub", ck_binary, false},
    {"Div", ck_binary, false},
    {"Max", ck_binary, false},
    {"Min", ck_binary, false},
    {"Relu", ck_unary, true},
    {"Clip", ck_clip, true},
    {"Identity", ck_unary, true},
    {"Dropout", ck_dropout, true},
    {"LeakyRelu", ck_unary, true},
    {"Elu", ck_unary, false},
    {"HardSwish", ck_unary, false},
    {"HardSigmoid", ck_unary, false},
    {"Sigmoid", ck_unary, false},
    {"Abs", ck_unary, false},
    {"Neg", ck_unary, false},
    {"Floor", ck_unary, false},
    {"Ceil", ck_unary, false},
    {"Round", ck_unary, false},
    {"Sqrt", ck_unary, false},
    {"PRelu", ck_prelu, false},
    {"Softmax", ck_softmax, false},
    {"Reshape", ck_reshape, true},
    {"Flatten", ck_reshape, true},
    {"Squeeze", ck_reshape, true},
    {"Unsqueeze", ck_reshape, true},
    {"Concat", ck_concat, true},
    {"Pad", ck_pad, true},
    {"BatchNormalization", ck_bn, false},
};

bool xnn_node_ok(const ait_graph *g, const ait_node *n, bool fp16, const uint8_t *cmask, char *why,
                 size_t nwhy) {
  if (xnn_foldable(g, n, cmask)) return true; /* computed once at build time */
  if (n->domain[0])
    return fail(why, nwhy, "%s of domain '%s' is not an ONNX op xnnpack maps", n->op_type,
                n->domain);
  const op_rule *r = NULL;
  for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
    if (!strcmp(rules[i].name, n->op_type)) r = &rules[i];
  if (!r)
    return fail(why, nwhy, "%s: no XNNPACK node for it in this version (2022-02)", n->op_type);
  if (!n->op || !n->op->kernel)
    return fail(why, nwhy, "%s at opset %d has no reference kernel to check against", n->op_type,
                n->opset);
  for (int i = 0; i < n->n_in; i++) { /* XNNPACK has no zero-size tensors */
    const ait_value *v = n->in[i] >= 0 ? &g->values[n->in[i]] : NULL;
    for (int d = 0; v && v->type == AIT_VT_TENSOR && d < v->rank; d++)
      if (v->dims[d].v == 0)
        return fail(why, nwhy, "%s: input %d ('%s') is empty, which XNNPACK cannot hold",
                    n->op_type, i, v->name);
  }
  chk c = {g, n, cmask, fp16, why, nwhy};
  if (!r->check(&c)) return false;
  if (fp16 && !r->fp16)
    return fail(why, nwhy,
                "%s: dtype=fp16 is unavailable for it (this XNNPACK's fp16 path has no such "
                "node); use dtype=fp32",
                n->op_type);
  if (fp16 &&
      (!strcmp(n->op_type, "Add") || !strcmp(n->op_type, "Mul") || !strcmp(n->op_type, "Concat")))
    for (int i = 0; i < n->n_in; i++)
      if (is_const(&c, i))
        return fail(why, nwhy, "%s: dtype=fp16 takes no constant operand in this XNNPACK",
                    n->op_type);
  return true;
}
