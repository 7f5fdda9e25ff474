/* Build: ONNX nodes -> xops. Nodes whose inputs are all constant are folded
 * with the reference kernels; weights are packed into XNNPACK's layouts once
 * (Conv OIHW -> OHWI, depthwise -> 1HWO, ConvTranspose IOHW -> OHWI per
 * group, Gemm/MatMul B -> [N, K] with alpha folded in); Relu/Clip following
 * a node that takes an output range is fused into it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/xnnpack/xnn_impl.h"
#include "ops/op.h"
#include "runtime/eager.h"

/* ---- tables ---------------------------------------------------------------- */

static ait_status grow(void **p, int *cap, int need, size_t elem) {
  if (need <= *cap) return AIT_OK;
  int nc = *cap ? *cap * 2 : 64;
  while (nc < need)
    nc *= 2;
  void *q = realloc(*p, (size_t)nc * elem);
  if (!q) return ait_err(AIT_E_NOMEM, "out of memory");
  *p = q;
  *cap = nc;
  return AIT_OK;
}

int xnn_add_value(xnn_state *s, int cst) {
  if (grow((void **)&s->vals, &s->cap_vals, s->n_vals + 1, sizeof *s->vals)) return -1;
  s->vals[s->n_vals] = (xval){cst, -1};
  return s->n_vals++;
}

int xnn_add_const(xnn_state *s, ait_tensor *t, int src) {
  if (grow((void **)&s->consts, &s->cap_consts, s->n_consts + 1, sizeof *s->consts)) {
    if (src < 0) ait_tensor_free(t);
    return -1;
  }
  s->consts[s->n_consts] = (xconst){t, src};
  return s->n_consts++;
}

int xnn_add_op(xnn_state *s, const xop *op) {
  if (grow((void **)&s->ops, &s->cap_ops, s->n_ops + 1, sizeof *s->ops)) return -1;
  s->ops[s->n_ops] = *op;
  if (op->out >= 0) s->vals[op->out].prod = s->n_ops;
  return s->n_ops++;
}

void xnn_program_free(xnn_state *s) {
  for (int i = 0; i < s->n_consts; i++)
    if (s->consts[i].src < 0) ait_tensor_free(s->consts[i].t);
  free(s->consts);
  free(s->vals);
  free(s->ops);
  s->consts = NULL;
  s->vals = NULL;
  s->ops = NULL;
  s->n_consts = s->n_vals = s->n_ops = 0;
  s->cap_consts = s->cap_vals = s->cap_ops = 0;
}

const char *xnn_op_desc(const xnn_state *s, const xop *op) {
  return op->node >= 0 && op->node < s->g->n_nodes ? ait_node_desc(&s->g->nodes[op->node])
                                                   : "an xnnpack op";
}

/* ---- constants ------------------------------------------------------------- */

/* The constant behind value v (registering an initializer on first use). */
static const ait_tensor *cval(xnn_state *s, int v) {
  if (v < 0 || v >= s->n_vals) return NULL;
  if (s->vals[v].cst < 0 && v < s->g->n_values) {
    const ait_value *x = &s->g->values[v];
    if (!x->init || x->producer >= 0 || x->init->kind != AIT_KIND_TENSOR) return NULL;
    int c = xnn_add_const(s, x->init, v);
    if (c < 0) return NULL;
    s->vals[v].cst = c;
  }
  return s->vals[v].cst >= 0 ? s->consts[s->vals[v].cst].t : NULL;
}

static ait_status need_f32(xnn_state *s, const ait_node *n, int v, const ait_tensor **t) {
  *t = cval(s, v);
  if (!*t || (*t)->dtype != AIT_FLOAT32)
    return ait_err(AIT_E_UNSUPPORTED, "xnnpack: %s: input '%s' is not a float32 constant",
                   ait_node_desc(n), v >= 0 ? s->g->values[v].name : "?");
  return AIT_OK;
}

/* A new owned float32 constant of the given shape; its id in *id. */
static float *new_const(xnn_state *s, int rank, const int64_t *dims, int *id) {
  ait_tensor *t = ait_tensor_new(AIT_FLOAT32, rank, dims);
  if (!t) return NULL;
  *id = xnn_add_const(s, t, -1);
  return *id < 0 ? NULL : t->data;
}

/* A new constant value holding `count` floats shaped dims (rank). */
static int const_value(xnn_state *s, int rank, const int64_t *dims, const float *data) {
  int c;
  float *d = new_const(s, rank, dims, &c);
  if (!d) return -1;
  memcpy(d, data, (size_t)ait_shape_numel(rank, dims) * sizeof(float));
  return xnn_add_value(s, c);
}

static ait_status fold(xnn_state *s, const ait_node *n) {
  const ait_tensor *in[64] = {0};
  ait_tensor *out[16] = {0};
  if (n->n_in > 64 || n->n_out > 16)
    return ait_err(AIT_E_UNSUPPORTED, "xnnpack: %s has too many inputs to fold", ait_node_desc(n));
  for (int i = 0; i < n->n_in; i++)
    if (n->in[i] >= 0 && !(in[i] = cval(s, n->in[i])))
      return ait_err(AIT_E_RUNTIME, "xnnpack: %s: constant input %d is missing", ait_node_desc(n),
                     i);
  ait_status st = ait_eager_run_node(n, in, n->n_in, out);
  for (int o = 0; o < n->n_out; o++) {
    if (!st && n->out[o] >= 0 && out[o]) {
      int c = xnn_add_const(s, out[o], -1);
      if (c < 0)
        st = AIT_E_NOMEM;
      else
        s->vals[n->out[o]].cst = c;
    } else {
      ait_tensor_free(out[o]);
    }
  }
  return st ? ait_err_prefix(st, "xnnpack: folding %s", ait_node_desc(n)) : AIT_OK;
}

/* ---- per op ------------------------------------------------------------------ */

static xop base(const ait_node *n, int node, xk_kind kind) {
  xop op;
  memset(&op, 0, sizeof op);
  op.kind = kind;
  op.node = node;
  for (int i = 0; i < XNN_MAX_IN; i++)
    op.in[i] = -1;
  op.in[0] = n->n_in > 0 ? n->in[0] : -1;
  op.n_in = 1;
  op.out = n->out[0];
  op.w = op.b = -1;
  op.fmin = -INFINITY;
  op.fmax = INFINITY;
  return op;
}

static ait_status add(xnn_state *s, const xop *op) {
  return xnn_add_op(s, op) < 0 ? AIT_E_NOMEM : AIT_OK;
}

/* Bias [m]: the node's constant, or zeros. */
static ait_status bias_of(xnn_state *s, const ait_node *n, int i, int64_t m, int *b) {
  if (i < n->n_in && n->in[i] >= 0) {
    const ait_tensor *t;
    AIT_TRY(need_f32(s, n, n->in[i], &t));
    if (ait_tensor_numel(t) != m)
      return ait_err(AIT_E_SHAPE, "xnnpack: %s: bias of %lld values for %lld channels",
                     ait_node_desc(n), (long long)ait_tensor_numel(t), (long long)m);
    *b = s->vals[n->in[i]].cst;
    return AIT_OK;
  }
  return new_const(s, 1, &m, b) ? AIT_OK : AIT_E_NOMEM;
}

static ait_status lower_conv(xnn_state *s, const ait_node *n, int node) {
  const ait_tensor *w;
  AIT_TRY(need_f32(s, n, n->in[1], &w));
  const float *W = w->data;
  bool d1 = w->rank == 3; /* 1D: a kernel of height 1 */
  int64_t m = w->dims[0], cg = w->dims[1], kh = d1 ? 1 : w->dims[2], kw = w->dims[d1 ? 2 : 3];
  int64_t group = ait_attr_int(n, "group", 1);
  bool dw = group > 1 && cg == 1;
  xop op = base(n, node, dw ? XK_DWCONV : XK_CONV);
  op.groups = (int32_t)(dw ? m / group : group);
  int64_t dims[4] = {dw ? 1 : m, kh, kw, dw ? m : cg};
  float *P = new_const(s, 4, dims, &op.w);
  if (!P) return AIT_E_NOMEM;
  for (int64_t o = 0; o < m; o++)
    for (int64_t c = 0; c < cg; c++)
      for (int64_t y = 0; y < kh; y++)
        for (int64_t x = 0; x < kw; x++) {
          float v = W[((o * cg + c) * kh + y) * kw + x];
          if (dw)
            P[(y * kw + x) * m + o] = v;
          else
            P[((o * kh + y) * kw + x) * cg + c] = v;
        }
  AIT_TRY(bias_of(s, n, 2, m, &op.b));
  return add(s, &op);
}

static ait_status lower_convt(xnn_state *s, const ait_node *n, int node) {
  const ait_tensor *w;
  AIT_TRY(need_f32(s, n, n->in[1], &w));
  const float *W = w->data;
  bool d1 = w->rank == 3; /* 1D: a kernel of height 1 */
  int64_t cin = w->dims[0], cog = w->dims[1], kh = d1 ? 1 : w->dims[2], kw = w->dims[d1 ? 2 : 3];
  int64_t g = ait_attr_int(n, "group", 1), cig = cin / g, m = cog * g;
  xop op = base(n, node, XK_DECONV);
  op.groups = (int32_t)g;
  int64_t dims[4] = {m, kh, kw, cig};
  float *P = new_const(s, 4, dims, &op.w);
  if (!P) return AIT_E_NOMEM;
  for (int64_t gi = 0; gi < g; gi++)
    for (int64_t oc = 0; oc < cog; oc++)
      for (int64_t ic = 0; ic < cig; ic++)
        for (int64_t y = 0; y < kh; y++)
          for (int64_t x = 0; x < kw; x++)
            P[(((gi * cog + oc) * kh + y) * kw + x) * cig + ic] =
                W[(((gi * cig + ic) * cog + oc) * kh + y) * kw + x];
  AIT_TRY(bias_of(s, n, 2, m, &op.b));
  return add(s, &op);
}

/* FC weight [N, K] = alpha * (B or B^T) from a constant B [K, N] (or [N, K]). */
static ait_status pack_fc(xnn_state *s, const ait_node *n, bool trans_b, float alpha, xop *op,
                          int64_t *N) {
  const ait_tensor *b;
  AIT_TRY(need_f32(s, n, n->in[1], &b));
  int64_t k = trans_b ? b->dims[1] : b->dims[0], nn = trans_b ? b->dims[0] : b->dims[1];
  int64_t dims[2] = {nn, k};
  float *P = new_const(s, 2, dims, &op->w);
  if (!P) return AIT_E_NOMEM;
  const float *B = b->data;
  for (int64_t i = 0; i < nn; i++)
    for (int64_t j = 0; j < k; j++)
      P[i * k + j] = alpha * (trans_b ? B[i * k + j] : B[j * nn + i]);
  *N = nn;
  return AIT_OK;
}

static ait_status lower_matmul(xnn_state *s, const ait_node *n, int node) {
  xop op = base(n, node, XK_FC);
  int64_t nn;
  AIT_TRY(pack_fc(s, n, false, 1.0f, &op, &nn));
  return add(s, &op);
}

static ait_status binary(xnn_state *s, int node, xb_op sub, int a, int b, int out, float lo,
                         float hi) {
  xop op = base(&s->g->nodes[node], node, XK_BINARY);
  op.sub = sub;
  op.in[0] = a;
  op.in[1] = b;
  op.n_in = 2;
  op.out = out;
  op.fmin = lo;
  op.fmax = hi;
  return add(s, &op);
}

static ait_status lower_gemm(xnn_state *s, const ait_node *n, int node) {
  float alpha = ait_attr_float(n, "alpha", 1.0f), beta = ait_attr_float(n, "beta", 1.0f);
  xop op = base(n, node, XK_FC);
  int64_t nn;
  AIT_TRY(pack_fc(s, n, ait_attr_int(n, "transB", 0) != 0, alpha, &op, &nn));
  int cv = n->n_in > 2 ? n->in[2] : -1;
  if (cv < 0 || beta == 0.0f) return add(s, &op);
  const ait_tensor *c = cval(s, cv);
  if (c) {
    if (c->dtype != AIT_FLOAT32)
      return ait_err(AIT_E_UNSUPPORTED, "xnnpack: %s: C is not float32", ait_node_desc(n));
    int64_t cn = ait_tensor_numel(c);
    const float *C = c->data;
    if ((cn == nn && (c->rank == 1 || c->dims[0] == 1)) || cn == 1) {
      float *bias = new_const(s, 1, &nn, &op.b);
      if (!bias) return AIT_E_NOMEM;
      for (int64_t i = 0; i < nn; i++)
        bias[i] = beta * C[cn == 1 ? 0 : i];
      return add(s, &op);
    }
    float *scaled = malloc((size_t)cn * sizeof(float));
    if (!scaled) return ait_err(AIT_E_NOMEM, "out of memory");
    for (int64_t i = 0; i < cn; i++)
      scaled[i] = beta * C[i];
    cv = const_value(s, c->rank, c->dims, scaled);
    free(scaled);
    if (cv < 0) return AIT_E_NOMEM;
  } else if (beta != 1.0f) {
    int64_t one = 1;
    int bv = const_value(s, 1, &one, &beta), t = xnn_add_value(s, -1);
    if (bv < 0 || t < 0) return AIT_E_NOMEM;
    AIT_TRY(binary(s, node, XB_MUL, cv, bv, t, -INFINITY, INFINITY));
    cv = t;
  }
  int y = op.out, t = xnn_add_value(s, -1);
  if (t < 0) return AIT_E_NOMEM;
  op.out = t;
  AIT_TRY(add(s, &op));
  return binary(s, node, XB_ADD, t, cv, y, -INFINITY, INFINITY);
}

static ait_status lower_pool(xnn_state *s, const ait_node *n, int node) {
  xk_kind k = !strcmp(n->op_type, "MaxPool")       ? XK_MAXPOOL
              : !strcmp(n->op_type, "AveragePool") ? XK_AVGPOOL
                                                   : XK_GAP;
  xop op = base(n, node, k);
  op.ceil_mode = (int32_t)ait_attr_int(n, "ceil_mode", 0);
  op.count_include_pad = (int32_t)ait_attr_int(n, "count_include_pad", 0);
  return add(s, &op);
}

/* Opset < 7 broadcast=1: B's dims start at `axis` of A. With trailing ones
 * appended (a new constant, or a reshape of run-time data) it broadcasts the
 * numpy way; returns the value to use for B. */
static int legacy_b(xnn_state *s, const ait_node *n, int node) {
  int b = n->in[1];
  if (n->opset >= 7 || !ait_attr_int(n, "broadcast", 0)) return b;
  int ra = s->g->values[n->in[0]].rank, rb = s->g->values[b].rank;
  int64_t axis = ait_attr_int(n, "axis", ra - rb);
  if (axis < 0) axis += ra;
  int extra = ra - (int)axis - rb;
  if (extra <= 0) return b;
  const ait_tensor *c = cval(s, b);
  if (c) {
    int64_t dims[AIT_MAX_RANK];
    memcpy(dims, c->dims, sizeof(int64_t) * (size_t)c->rank);
    for (int i = 0; i < extra; i++)
      dims[c->rank + i] = 1;
    return const_value(s, c->rank + extra, dims, c->data);
  }
  xop op = base(n, node, XK_RESHAPE);
  op.in[0] = b;
  op.sub = XR_RESHAPE;
  op.n_spec = rb + extra; /* 0 keeps B's dim, then ones */
  for (int i = 0; i < op.n_spec; i++)
    op.spec[i] = i < rb ? 0 : 1;
  op.out = xnn_add_value(s, -1);
  if (op.out < 0 || add(s, &op)) return -1;
  return op.out;
}

static ait_status lower_binary(xnn_state *s, const ait_node *n, int node) {
  static const char *const names[] = {"Add", "Sub", "Mul", "Div", "Max", "Min"};
  int sub = 0;
  while (strcmp(names[sub], n->op_type))
    sub++;
  int b = sub <= XB_DIV ? legacy_b(s, n, node) : n->in[1];
  if (b < 0) return AIT_E_NOMEM;
  return binary(s, node, (xb_op)sub, n->in[0], b, n->out[0], -INFINITY, INFINITY);
}

static ait_status clip_bound(xnn_state *s, const ait_node *n, int i, float *v) {
  if (i >= n->n_in || n->in[i] < 0) return AIT_OK;
  const ait_tensor *t = cval(s, n->in[i]);
  if (!t || ait_tensor_numel(t) != 1)
    return ait_err(AIT_E_UNSUPPORTED, "xnnpack: %s: bound %d is not a constant scalar",
                   ait_node_desc(n), i);
  *v = (float)ait_scalar_f64(t);
  return AIT_OK;
}

static ait_status lower_clamp(xnn_state *s, const ait_node *n, int node) {
  xop op = base(n, node, XK_CLAMP);
  if (!strcmp(n->op_type, "Relu")) {
    op.fmin = 0.0f;
  } else if (!strcmp(n->op_type, "Clip")) {
    if (n->opset < 11) {
      op.fmin = ait_attr_float(n, "min", -INFINITY);
      op.fmax = ait_attr_float(n, "max", INFINITY);
    } else {
      AIT_TRY(clip_bound(s, n, 1, &op.fmin));
      AIT_TRY(clip_bound(s, n, 2, &op.fmax));
    }
  }
  return add(s, &op);
}

static ait_status lower_unary(xnn_state *s, const ait_node *n, int node) {
  static const struct {
    const char *name;
    xu_op op;
  } map[] = {{"HardSwish", XU_HARDSWISH},
             {"Sigmoid", XU_SIGMOID},
             {"Abs", XU_ABS},
             {"Neg", XU_NEG},
             {"Floor", XU_FLOOR},
             {"Ceil", XU_CEIL},
             {"Round", XU_ROUND},
             {"Sqrt", XU_SQRT},
             {"Elu", XU_ELU},
             {"LeakyRelu", XU_LEAKY}};
  xop op = base(n, node, XK_UNARY);
  op.sub = -1;
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (!strcmp(map[i].name, n->op_type)) op.sub = map[i].op;
  if (op.sub < 0) return ait_err(AIT_E_UNSUPPORTED, "xnnpack: %s", ait_node_desc(n));
  op.alpha = ait_attr_float(n, "alpha", op.sub == XU_ELU ? 1.0f : 0.01f);
  return add(s, &op);
}

/* HardSigmoid = clamp(alpha * x + beta, 0, 1): a multiply and a clamped add. */
static ait_status lower_hardsigmoid(xnn_state *s, const ait_node *n, int node) {
  float alpha = ait_attr_float(n, "alpha", 0.2f), beta = ait_attr_float(n, "beta", 0.5f);
  int64_t one = 1;
  int av = const_value(s, 1, &one, &alpha), bv = const_value(s, 1, &one, &beta);
  int t = xnn_add_value(s, -1);
  if (av < 0 || bv < 0 || t < 0) return AIT_E_NOMEM;
  AIT_TRY(binary(s, node, XB_MUL, n->in[0], av, t, -INFINITY, INFINITY));
  return binary(s, node, XB_ADD, t, bv, n->out[0], 0.0f, 1.0f);
}

static ait_status lower_prelu(xnn_state *s, const ait_node *n, int node) {
  const ait_tensor *t;
  AIT_TRY(need_f32(s, n, n->in[1], &t));
  xop op = base(n, node, XK_PRELU);
  op.in[1] = n->in[1];
  op.n_in = 2;
  return add(s, &op);
}

static ait_status lower_softmax(xnn_state *s, const ait_node *n, int node) {
  xop op = base(n, node, XK_SOFTMAX);
  op.sub = n->opset < 13;
  op.axis = (int32_t)ait_attr_int(n, "axis", n->opset >= 13 ? -1 : 1);
  return add(s, &op);
}

/* Integer values of constant input i into op->spec. */
static ait_status spec_from_input(xnn_state *s, const ait_node *n, int i, xop *op) {
  const ait_tensor *t = cval(s, n->in[i]);
  int cnt = 0;
  if (!t)
    return ait_err(AIT_E_UNSUPPORTED, "xnnpack: %s: input %d is not constant", ait_node_desc(n), i);
  AIT_TRY(ait_read_ints(t, op->spec, 2 * AIT_MAX_RANK, &cnt));
  op->n_spec = cnt;
  return AIT_OK;
}

static ait_status spec_from_attr(const ait_node *n, const char *name, xop *op) {
  int cnt = 0;
  const int64_t *v = ait_attr_ints(n, name, &cnt);
  if (cnt > 2 * AIT_MAX_RANK)
    return ait_err(AIT_E_UNSUPPORTED, "xnnpack: %s: %s has %d values", ait_node_desc(n), name, cnt);
  for (int i = 0; i < cnt; i++)
    op->spec[i] = v[i];
  op->n_spec = cnt;
  return AIT_OK;
}

static ait_status lower_reshape(xnn_state *s, const ait_node *n, int node) {
  xop op = base(n, node, XK_RESHAPE);
  if (!strcmp(n->op_type, "Reshape")) {
    op.sub = XR_RESHAPE;
    op.allowzero = (int32_t)ait_attr_int(n, "allowzero", 0);
    AIT_TRY(spec_from_input(s, n, 1, &op));
  } else if (!strcmp(n->op_type, "Flatten")) {
    op.sub = XR_FLATTEN;
    op.axis = (int32_t)ait_attr_int(n, "axis", 1);
  } else {
    op.sub = !strcmp(n->op_type, "Squeeze") ? XR_SQUEEZE : XR_UNSQUEEZE;
    if (n->n_in > 1 && n->in[1] >= 0)
      AIT_TRY(spec_from_input(s, n, 1, &op));
    else
      AIT_TRY(spec_from_attr(n, "axes", &op));
  }
  return add(s, &op);
}

static ait_status lower_concat(xnn_state *s, const ait_node *n, int node) {
  xop op = base(n, node, XK_CONCAT);
  op.axis = (int32_t)ait_attr_int(n, "axis", 0);
  op.n_in = n->n_in;
  for (int i = 0; i < n->n_in; i++) {
    op.in[i] = n->in[i];
  }
  return add(s, &op);
}

static ait_status lower_pad(xnn_state *s, const ait_node *n, int node) {
  xop op = base(n, node, XK_PAD);
  if (n->opset >= 11) {
    AIT_TRY(spec_from_input(s, n, 1, &op));
    if (n->n_in > 2 && n->in[2] >= 0) {
      const ait_tensor *v = cval(s, n->in[2]);
      if (!v || ait_tensor_numel(v) != 1)
        return ait_err(AIT_E_UNSUPPORTED, "xnnpack: %s: constant_value is not a scalar",
                       ait_node_desc(n));
      op.alpha = (float)ait_scalar_f64(v);
    }
  } else {
    AIT_TRY(spec_from_attr(n, n->opset >= 2 ? "pads" : "paddings", &op));
    op.alpha = ait_attr_float(n, "value", 0.0f);
  }
  for (int i = 0; i < op.n_spec; i++)
    if (op.spec[i] < 0)
      return ait_err(AIT_E_UNSUPPORTED, "xnnpack: %s: negative pads", ait_node_desc(n));
  return add(s, &op);
}

/* y = x * a + b per channel (axis 1), a = scale / sqrt(var + eps), b = B - mean * a. */
static ait_status lower_bn(xnn_state *s, const ait_node *n, int node) {
  const ait_tensor *p[4];
  for (int i = 0; i < 4; i++)
    AIT_TRY(need_f32(s, n, n->in[i + 1], &p[i]));
  int64_t c = ait_tensor_numel(p[0]);
  for (int i = 1; i < 4; i++)
    if (ait_tensor_numel(p[i]) != c)
      return ait_err(AIT_E_SHAPE, "xnnpack: %s: parameters of different sizes", ait_node_desc(n));
  int r = s->g->values[n->in[0]].rank;
  int64_t dims[AIT_MAX_RANK];
  dims[0] = c;
  for (int i = 1; i < r - 1; i++)
    dims[i] = 1;
  float eps = ait_attr_float(n, "epsilon", 1e-5f);
  int ca, cb;
  float *a = new_const(s, r - 1, dims, &ca), *b = a ? new_const(s, r - 1, dims, &cb) : NULL;
  if (!b) return AIT_E_NOMEM;
  const float *sc = p[0]->data, *bb = p[1]->data, *mean = p[2]->data, *var = p[3]->data;
  for (int64_t i = 0; i < c; i++) {
    a[i] = (float)(sc[i] / sqrt((double)var[i] + eps));
    b[i] = bb[i] - mean[i] * a[i];
  }
  int av = xnn_add_value(s, ca), bv = xnn_add_value(s, cb), t = xnn_add_value(s, -1);
  if (av < 0 || bv < 0 || t < 0) return AIT_E_NOMEM;
  AIT_TRY(binary(s, node, XB_MUL, n->in[0], av, t, -INFINITY, INFINITY));
  return binary(s, node, XB_ADD, t, bv, n->out[0], -INFINITY, INFINITY);
}

typedef ait_status (*lower_fn)(xnn_state *s, const ait_node *n, int node);

static lower_fn lowering_of(const char *op) {
  static const struct {
    const char *name;
    lower_fn fn;
  } table[] = {
      {"Conv", lower_conv},
      {"ConvTranspose", lower_convt},
      {"Gemm", lower_gemm},
      {"MatMul", lower_matmul},
      {"MaxPool", lower_pool},
      {"AveragePool", lower_pool},
      {"GlobalAveragePool", lower_pool},
      {"Add", lower_binary},
      {"Sub", lower_binary},
      {"Mul", lower_binary},
      {"Div", lower_binary},
      {"Max", lower_binary},
      {"Min", lower_binary},
      {"Relu", lower_clamp},
      {"Clip", lower_clamp},
      {"Identity", lower_clamp},
      {"Dropout", lower_clamp},
      {"LeakyRelu", lower_unary},
      {"Elu", lower_unary},
      {"HardSwish", lower_unary},
      {"Sigmoid", lower_unary},
      {"Abs", lower_unary},
      {"Neg", lower_unary},
      {"Floor", lower_unary},
      {"Ceil", lower_unary},
      {"Round", lower_unary},
      {"Sqrt", lower_unary},
      {"HardSigmoid", lower_hardsigmoid},
      {"PRelu", lower_prelu},
      {"Softmax", lower_softmax},
      {"Reshape", lower_reshape},
      {"Flatten", lower_reshape},
      {"Squeeze", lower_reshape},
      {"Unsqueeze", lower_reshape},
      {"Concat", lower_concat},
      {"Pad", lower_pad},
      {"BatchNormalization", lower_bn},
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (!strcmp(table[i].name, op)) return table[i].fn;
  return NULL;
}

/* ---- activation fusion --------------------------------------------------------- */

static bool takes_range(const xop *op) {
  switch (op->kind) {
  case XK_CONV:
  case XK_DWCONV:
  case XK_DECONV:
  case XK_FC:
  case XK_MAXPOOL:
  case XK_AVGPOOL:
  case XK_GAP: return true;
  case XK_BINARY: return op->sub <= XB_DIV;
  default: return false;
  }
}

/* Clamp after a producer that takes an output range, when the clamp is the
 * only reader: the producer clamps instead and the clamp goes away. */
static ait_status fuse_clamps(xnn_state *s) {
  int *uses = calloc((size_t)s->n_vals + 1, sizeof *uses);
  bool *dead = calloc((size_t)s->n_ops + 1, sizeof *dead);
  if (!uses || !dead) {
    free(uses);
    free(dead);
    return ait_err(AIT_E_NOMEM, "out of memory");
  }
  for (int i = 0; i < s->n_ops; i++)
    for (int j = 0; j < s->ops[i].n_in; j++)
      if (s->ops[i].in[j] >= 0) uses[s->ops[i].in[j]]++;
  for (int k = 0; k < s->g->n_outputs; k++)
    uses[s->g->outputs[k]] += 2; /* never fuse away a graph output */
  for (int i = 0; i < s->n_ops; i++) {
    xop *c = &s->ops[i];
    int v = c->in[0], p = v >= 0 ? s->vals[v].prod : -1;
    if (c->kind != XK_CLAMP || p < 0 || uses[v] != 1 || !takes_range(&s->ops[p])) continue;
    float lo = fmaxf(s->ops[p].fmin, c->fmin), hi = fminf(s->ops[p].fmax, c->fmax);
    if (!(lo < hi)) continue;
    s->ops[p].fmin = lo;
    s->ops[p].fmax = hi;
    s->ops[p].out = c->out;
    s->vals[c->out].prod = p;
    dead[i] = true;
  }
  int n = 0;
  for (int v = 0; v < s->n_vals; v++)
    s->vals[v].prod = -1; /* fused-away intermediates have no producer any more */
  for (int i = 0; i < s->n_ops; i++) {
    if (dead[i]) continue;
    s->ops[n] = s->ops[i];
    if (s->ops[n].out >= 0) s->vals[s->ops[n].out].prod = n;
    n++;
  }
  s->n_ops = n;
  free(uses);
  free(dead);
  return AIT_OK;
}

ait_status xnn_lower(xnn_state *s) {
  const ait_graph *g = s->g;
  uint8_t *cm = xnn_const_mask(g);
  if (!cm) return AIT_E_NOMEM;
  ait_status st = AIT_OK;
  for (int v = 0; v < g->n_values && !st; v++)
    if (xnn_add_value(s, -1) < 0) st = AIT_E_NOMEM;
  char why[512];
  for (int i = 0; i < g->n_nodes && !st; i++) {
    const ait_node *n = &g->nodes[i];
    if (!xnn_node_ok(g, n, s->fp16, cm, why, sizeof why)) {
      st = ait_err(AIT_E_UNSUPPORTED, "xnnpack: %s: %s", ait_node_desc(n), why);
      break;
    }
    if (xnn_foldable(g, n, cm)) {
      st = fold(s, n);
      continue;
    }
    st = lowering_of(n->op_type)(s, n, i);
  }
  free(cm);
  /* initializers read as operands (binary, concat) become constants too */
  for (int i = 0; i < s->n_ops && !st; i++)
    for (int j = 0; j < s->ops[i].n_in; j++) {
      int v = s->ops[i].in[j];
      if (v >= 0 && v < g->n_values && s->vals[v].cst < 0 && g->values[v].producer < 0 &&
          g->values[v].init && !cval(s, v))
        st = ait_err(AIT_E_NOMEM, "out of memory");
    }
  if (!st) st = fuse_clamps(s);
  return st;
}
