/* Layout pass: convolutional networks in channels-last (NHWC) layout.
 *
 * With channels innermost a pointwise conv is a GEMM whose rows are pixels,
 * any other group-1 conv an implicit GEMM over taps x channels, and a
 * depthwise conv or a pooling window sixteen (eight) channels per vector:
 * native's NHWC kernels (native_nhwc*.c) run them faster than im2col +
 * SGEMM and the NCHW loops. The pass finds the nodes that have an NHWC
 * form (`layout_kind`):
 *   pointwise  1x1, stride 1, no padding, group 1
 *   depthwise  one channel per group, any window, stride, dilation, padding
 *   window     group 1, any window, stride, dilation and padding, at least
 *              WIN_MIN_C input channels (the implicit GEMM)
 *   stem       group 1, fewer input channels (may read the NCHW input)
 *   grouped    2+ channels a group: the implicit GEMM per group
 *   pool       MaxPool / AveragePool over 2-D (FusedPoolNhwc)
 *   elementwise  ops applied per element (Relu, Add, Mul ...) whose inputs
 *              are of the output's shape, or broadcast per channel or as a
 *              scalar (the channel operand [N, C, 1, 1] has the bytes of
 *              [N, 1, 1, C]: a view)
 *   concat     Concat along the channels (axis 3 in NHWC)
 * joins those connected through their activation inputs into components,
 * and rewrites each component that holds a conv: convs into FusedConvNhwc
 * with HWIO weights, pools into FusedPoolNhwc, the others onto the NHWC
 * twins of their inputs. A Transpose to NHWC is added where a component
 * reads a value from outside (but a stem conv reads NCHW itself:
 * x_layout="NCHW"), and one back to NCHW where something outside reads a
 * component's output: reorders only at the edges (a view where H = W = 1).
 * A GlobalAveragePool reading a converted value pools it in NHWC, and so
 * does a ReduceMean over H and W. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/native/native.h"
#include "backends/native/native_nhwc_post.h"
#include "ir/passes/passes.h"
#include "ops/nn_impl.h"

enum { L_NONE = 0, L_PW, L_DW, L_STEM, L_WIN, L_GRP, L_POOL, L_ELT, L_CONCAT, L_TIN, L_TOUT };

static bool is_conv_kind(int k) { return k >= L_PW && k <= L_GRP; }

/* Input channels from which a group-1 window conv is L_WIN (native_nhwc.c's
 * WIN_MIN_C: below, the stem kernels run it). */
#define WIN_MIN_C 8

static bool is_conv(const ait_node *n) {
  return ait_is_op(n, "Conv") || ait_is_op_in(n, AIT_FUSED_DOMAIN, "FusedConv");
}

static bool const_f32(const ait_graph *g, int v, int rank) {
  return nat_is_const(g, v) && g->values[v].init->dtype == AIT_FLOAT32 &&
         (rank < 0 || g->values[v].init->rank == rank);
}

/* Whether node n's activation (attributes) is one FusedInvertedResidual's
 * stages run: a clamp (none, Relu or Clip), or SiLU, HardSwish or
 * HardSigmoid past it, which its kernels apply in registers
 * (native_nhwc_post.h: MobileNetV3's HardSwish blocks). */
static bool clamp_act(const ait_node *n) {
  ait_act act;
  nat_post p;
  if (ait_act_parse(n, &act) != AIT_OK) {
    ait_err_clear();
    return false;
  }
  return act.kind == AIT_ACT_NONE || act.kind == AIT_ACT_RELU || act.kind == AIT_ACT_CLIP ||
         nat_post_of(&act, &p);
}

/* Which NHWC conv kernel could run conv node n (L_NONE: none). */
static int conv_kind(const ait_graph *g, const ait_node *n) {
  if (n->n_out != 1 || n->n_in < 2 || n->in[0] < 0) return L_NONE;
  const ait_value *x = &g->values[n->in[0]];
  if (x->dtype != AIT_FLOAT32 || x->rank != 4 || nat_is_const(g, n->in[0])) return L_NONE;
  if (!const_f32(g, n->in[1], 4)) return L_NONE;
  if (n->n_in > 2 && n->in[2] >= 0 && !const_f32(g, n->in[2], 1)) return L_NONE;
  const char *pad = ait_attr_str(n, "auto_pad", "NOTSET");
  if (strcmp(pad, "NOTSET")) return L_NONE;
  ait_act act;
  if (ait_act_parse(n, &act) != AIT_OK) {
    ait_err_clear();
    return L_NONE;
  }
  const int64_t *wd = g->values[n->in[1]].init->dims;
  int64_t group = ait_attr_int(n, "group", 1), C = x->dims[1].v;
  int64_t sp[2] = {x->dims[2].v, x->dims[3].v}, k[2] = {wd[2], wd[3]};
  nn_win w;
  if (nn_win_conv(n, 2, sp, k, false, true, &w) != AIT_OK) {
    ait_err_clear();
    return L_NONE;
  }
  bool dilated = w.d[0] != 1 || w.d[1] != 1;
  if (group == 1) {
    if (C >= 0 && wd[1] != C) return L_NONE;
    if (wd[2] == 1 && wd[3] == 1 && w.s[0] == 1 && w.s[1] == 1 && !w.pb[0] && !w.pb[1] &&
        !w.pe[0] && !w.pe[1] && !dilated)
      return L_PW;
    if (wd[1] >= WIN_MIN_C || dilated) return L_WIN;
    return L_STEM;
  }
  if (wd[1] == 1 && wd[0] == group && C == group) return L_DW; /* any window, stride, ... */
  if (C > 0 && C % group == 0 && wd[0] % group == 0 && wd[1] == C / group) return L_GRP;
  return L_NONE;
}

/* Whether depthwise node d (L_DW) is the K x K (K 3, 5 or 7), pads-K/2,
 * stride 1 or 2 undilated conv a FusedInvertedResidual's middle stage runs
 * (MobileNetV2's 3x3s, MnasNet's and MobileNetV3's 5x5s). */
static bool block_dw(const ait_graph *g, const ait_node *d) {
  const ait_value *x = &g->values[d->in[0]];
  const ait_tensor *w = g->values[d->in[1]].init;
  int64_t sp[2] = {x->dims[x->rank == 4 && strcmp(d->op_type, "FusedConvNhwc") ? 2 : 1].v,
                   x->dims[x->rank == 4 && strcmp(d->op_type, "FusedConvNhwc") ? 3 : 2].v};
  int64_t k[2] = {w->dims[0], w->dims[1]}; /* HWIO by now */
  nn_win win;
  if ((k[0] != 3 && k[0] != 5 && k[0] != 7) || k[1] != k[0] ||
      nn_win_conv(d, 2, sp, k, false, true, &win) != AIT_OK) {
    ait_err_clear();
    return false;
  }
  if (win.d[0] != 1 || win.d[1] != 1 || win.s[0] != win.s[1] || (win.s[0] != 1 && win.s[0] != 2))
    return false;
  for (int i = 0; i < 2; i++)
    if (win.pb[i] != k[0] / 2 || win.pe[i] != k[0] / 2) return false;
  return true;
}

/* Whether two dims are certainly equal: known and equal, or one symbol. */
static bool dim_eq(const ait_dim *x, const ait_dim *y) {
  if (x->v >= 0 && y->v >= 0) return x->v == y->v;
  return x->sym && y->sym && !strcmp(x->sym, y->sym);
}

/* Whether values a and b certainly have the same rank-4 dims. */
static bool same_dims4(const ait_value *a, const ait_value *b) {
  if (a->rank != 4 || b->rank != 4) return false;
  for (int k = 0; k < 4; k++)
    if (!dim_eq(&a->dims[k], &b->dims[k])) return false;
  return true;
}

static int64_t numel_known(const ait_value *v) {
  int64_t n = 1;
  for (int k = 0; k < v->rank; k++) {
    if (v->dims[k].v < 0) return -1;
    n *= v->dims[k].v;
  }
  return n;
}

/* How input v of an elementwise node writing `out` (rank 4) is read in NHWC:
 * 1 an activation (the output's shape: its NHWC twin), 2 unchanged (one
 * element, a scalar in any layout), 3 per channel ([d0, C, 1, 1] or
 * [C, 1, 1]: a view of it as [d0, 1, 1, C] / [1, 1, C]), 0 none of these. */
static int elt_operand(const ait_graph *g, int v, const ait_value *out) {
  if (v < 0) return 0;
  const ait_value *x = &g->values[v];
  if (x->type != AIT_VT_TENSOR || x->dtype != out->dtype) return 0;
  if (same_dims4(x, out)) return nat_is_const(g, v) ? 0 : 1;
  if (x->rank >= 0 && x->rank <= 4 && numel_known(x) == 1) return 2;
  int64_t C = out->dims[1].v;
  if (C < 1) return 0;
  /* [1 or N, C, 1, 1]: a constant of batch 1, or a value of the output's batch */
  if (x->rank == 4 && x->dims[1].v == C && x->dims[2].v == 1 && x->dims[3].v == 1 &&
      (x->dims[0].v == 1 || (!nat_is_const(g, v) && dim_eq(&x->dims[0], &out->dims[0]))))
    return 3;
  if (x->rank == 3 && nat_is_const(g, v) && x->dims[0].v == C && x->dims[1].v == 1 &&
      x->dims[2].v == 1)
    return 3;
  return 0;
}

/* Elementwise ops the pass carries into NHWC (on float32): unary ones read
 * input 0 only (Clip's bounds are scalars), binary ones both. */
static const char *const unary_ops[] = {"Relu",      "Sigmoid", "Tanh", "HardSwish", "HardSigmoid",
                                        "LeakyRelu", "Clip",    "Elu",  "Selu",      "Softplus",
                                        "Neg",       "Abs",     "Sqrt", "Exp",       "Erf",
                                        "Gelu",      "Identity"};
static const char *const binary_ops[] = {"Add", "Sub", "Mul", "Div", "Max", "Min"};

static bool in_list(const char *op, const char *const *list, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(op, list[i])) return true;
  return false;
}

/* Whether n is elementwise with every input readable in NHWC (and at
 * least one activation input). */
static bool elt_kind(const ait_graph *g, const ait_node *n) {
  if (n->n_out != 1 || n->out[0] < 0 || n->n_in < 1) return false;
  const ait_value *o = &g->values[n->out[0]];
  if (o->rank != 4 || o->dtype != AIT_FLOAT32) return false;
  bool unary =
      (!n->domain[0] && in_list(n->op_type, unary_ops, sizeof unary_ops / sizeof *unary_ops)) ||
      ait_is_op_in(n, AIT_FUSED_DOMAIN, "FusedUnary");
  bool binary = !n->domain[0] && n->n_in == 2 &&
                in_list(n->op_type, binary_ops, sizeof binary_ops / sizeof *binary_ops);
  if (unary) {
    for (int k = 1; k < n->n_in; k++)
      if (n->in[k] >= 0 && !nat_is_const(g, n->in[k])) return false;
    return elt_operand(g, n->in[0], o) == 1;
  }
  if (!binary) return false;
  int a = elt_operand(g, n->in[0], o), b = elt_operand(g, n->in[1], o);
  return a && b && (a == 1 || b == 1);
}

/* Which NHWC form node n has (L_NONE: none). */
/* Transpose node n of a rank-4 float32 tensor by `perm`. */
static bool transpose_by(const ait_graph *g, const ait_node *n, const int64_t *perm) {
  if (n->domain[0] || strcmp(n->op_type, "Transpose") || n->n_in != 1 || n->n_out != 1 ||
      n->in[0] < 0 || n->out[0] < 0)
    return false;
  const ait_value *x = &g->values[n->in[0]];
  int cnt = 0;
  const int64_t *p = ait_attr_ints(n, "perm", &cnt);
  return x->rank == 4 && x->dtype == AIT_FLOAT32 && p && cnt == 4 &&
         !memcmp(p, perm, sizeof(int64_t) * 4);
}

static int layout_kind(const ait_graph *g, const ait_node *n) {
  static const int64_t to_nhwc[4] = {0, 2, 3, 1}, to_nchw[4] = {0, 3, 1, 2};
  if (is_conv(n)) return conv_kind(g, n);
  if (n->domain[0] && strcmp(n->domain, AIT_FUSED_DOMAIN)) return L_NONE;
  if (n->n_in < 1 || n->in[0] < 0 || n->n_out < 1) return L_NONE;
  /* the model's own reorders (ConvNeXt: a depthwise conv, then
   * Transpose(0,2,3,1) into LayerNorm and the MLP, Transpose(0,3,1,2)
   * back into the residual Add): the first reads a twin as it is, the
   * second's NCHW output has its input as twin */
  if (transpose_by(g, n, to_nhwc)) return L_TIN;
  if (transpose_by(g, n, to_nchw)) return L_TOUT;
  const ait_value *x = &g->values[n->in[0]];
  if (!n->domain[0] && (!strcmp(n->op_type, "MaxPool") || !strcmp(n->op_type, "AveragePool"))) {
    if (x->rank != 4 || x->dtype != AIT_FLOAT32 || (n->n_out > 1 && n->out[1] >= 0) ||
        strcmp(ait_attr_str(n, "auto_pad", "NOTSET"), "NOTSET"))
      return L_NONE;
    return L_POOL;
  }
  if (ait_is_op(n, "Concat")) {
    const ait_value *o = &g->values[n->out[0]];
    int64_t axis = ait_attr_int(n, "axis", 0);
    if (o->rank != 4 || o->dtype != AIT_FLOAT32 || (axis != 1 && axis != -3)) return L_NONE;
    /* the inputs' other dims need not be known: Concat itself requires them
     * equal (DeepLabV3's pooling branch comes through a Resize whose sizes
     * are computed from a Shape, so its output dims are not known here) */
    for (int k = 0; k < n->n_in; k++) {
      const ait_value *v = n->in[k] >= 0 ? &g->values[n->in[k]] : NULL;
      if (!v || v->rank != 4 || v->dtype != AIT_FLOAT32 || nat_is_const(g, n->in[k])) return L_NONE;
    }
    return L_CONCAT;
  }
  return elt_kind(g, n) ? L_ELT : L_NONE;
}

/* Whether input k of node n (of kind `kind`) is an activation the node
 * reads in NHWC (joins components, needs the value's twin). */
static bool act_input(const ait_graph *g, const ait_node *n, int kind, int k) {
  if (k >= n->n_in || n->in[k] < 0) return false;
  switch (kind) {
  case L_PW:
  case L_DW:
  case L_STEM:
  case L_WIN:
  case L_GRP: return k == 0 || k == 3;
  case L_POOL:
  case L_TIN: return k == 0;
  case L_CONCAT: return true;
  case L_ELT: return elt_operand(g, n->in[k], &g->values[n->out[0]]) == 1;
  default: return false;
  }
}

static int find(int *parent, int i) {
  while (parent[i] != i)
    i = parent[i] = parent[parent[i]];
  return i;
}

/* A new value for the NHWC twin of value v (dims permuted, symbols
 * dropped). Returns its index or -1. */
static int twin_value(ait_graph *g, int v, const int64_t *perm) {
  char name[512];
  snprintf(name, sizeof name, "%s_nhwc", g->values[v].name);
  for (int k = 2; ait_graph_find_value(g, name) >= 0; k++)
    snprintf(name, sizeof name, "%s_nhwc_%d", g->values[v].name, k);
  int t = ait_graph_add_value(g, name);
  if (t < 0) return -1;
  const ait_value *src = &g->values[v];
  ait_value *dst = &g->values[t];
  dst->type = AIT_VT_TENSOR;
  dst->dtype = src->dtype;
  dst->rank = src->rank;
  for (int k = 0; k < src->rank && k < 4; k++)
    dst->dims[k].v = src->dims[perm[k]].v;
  return t;
}

/* A new node of op `op` (standard domain, the graph's opset) reading `in`
 * and writing `out`; its index, or -1 (error set). */
static int add_node1(ait_graph *g, const char *op, int in, int out) {
  char name[512];
  snprintf(name, sizeof name, "%s/reorder", g->values[out].name);
  ait_node *n = ait_graph_add_node(g, name, op, "");
  if (!n) {
    ait_err(AIT_E_NOMEM, "out of memory adding a reorder");
    return -1;
  }
  n->opset = (int)ait_graph_opset(g, "");
  if (n->opset < 1) n->opset = 13;
  n->op = ait_op_lookup("", op, n->opset, NULL);
  n->in = malloc(sizeof(int) * 2);
  n->out = malloc(sizeof(int));
  if (!n->in || !n->out) {
    ait_err(AIT_E_NOMEM, "out of memory adding a reorder");
    return -1;
  }
  n->n_in = n->n_out = 1;
  n->in[0] = in;
  n->out[0] = out;
  if (!n->op) {
    ait_err(AIT_E_INTERNAL, "no %s kernel for a reorder", op);
    return -1;
  }
  return (int)(n - g->nodes);
}

/* Append a reorder of value in (rank 4) by perm into value out: a
 * Transpose, or a Reshape (a view: no copy) where H and W are 1 and the
 * bytes do not move. */
static ait_status add_transpose(ait_graph *g, int in, int out, const int64_t *perm) {
  const ait_value *x = &g->values[in];
  bool nhwc = perm[3] == 1; /* to NHWC: {0, 2, 3, 1}; to NCHW: {0, 3, 1, 2} */
  int64_t h = x->dims[nhwc ? 2 : 1].v, w = x->dims[nhwc ? 3 : 2].v;
  if (h == 1 && w == 1) {
    int64_t d1 = 4;
    ait_tensor *shape = ait_tensor_new(AIT_INT64, 1, &d1);
    if (!shape) return ait_err(AIT_E_NOMEM, "out of memory adding a reorder");
    int64_t *sv = shape->data; /* 0: dim 0 as it is (the batch may be symbolic) */
    sv[0] = 0, sv[1] = nhwc ? 1 : -1, sv[2] = 1, sv[3] = nhwc ? -1 : 1;
    int sh = nat_add_initializer(g, g->values[out].name, "_shape", shape);
    if (sh < 0) return ait_err(AIT_E_NOMEM, "out of memory adding a reorder");
    int k = add_node1(g, "Reshape", in, out);
    if (k < 0) return AIT_E_NOMEM;
    g->nodes[k].in[1] = sh;
    g->nodes[k].n_in = 2;
    return AIT_OK;
  }
  int k = add_node1(g, "Transpose", in, out);
  if (k < 0) return AIT_E_INTERNAL;
  return nat_attr_set_ints(&g->nodes[k], "perm", perm, 4);
}

/* Weights OIHW -> HWIO as a new initializer; its index or -1. */
static int hwio_weights(ait_graph *g, int v) {
  const ait_tensor *w = g->values[v].init;
  int64_t M = w->dims[0], C = w->dims[1], kh = w->dims[2], kw = w->dims[3];
  int64_t d[4] = {kh, kw, C, M};
  ait_tensor *t = ait_tensor_new(AIT_FLOAT32, 4, d);
  if (!t) return -1;
  const float *s = w->data;
  float *o = t->data;
  for (int64_t m = 0; m < M; m++)
    for (int64_t c = 0; c < C; c++)
      for (int64_t i = 0; i < kh * kw; i++)
        o[(i * C + c) * M + m] = s[(m * C + c) * kh * kw + i];
  return nat_add_initializer(g, g->values[v].name, "_hwio", t);
}

/* The NHWC value standing for value v: its twin when a converted node
 * writes it, else a Transpose of it made once (twin[] caches both). */
static int nhwc_input(ait_graph *g, int v, int *twin, ait_status *st) {
  static const int64_t to_nhwc[4] = {0, 2, 3, 1};
  if (twin[v] >= 0) return twin[v];
  int t = twin_value(g, v, to_nhwc);
  if (t < 0 || (*st = add_transpose(g, v, t, to_nhwc)) != AIT_OK) {
    if (!*st) *st = AIT_E_NOMEM;
    return -1;
  }
  twin[v] = t;
  return t;
}

static ait_status rewrite(ait_graph *g, int i, int kind, int *twin, bool *converted_out,
                          int *writer) {
  static const int64_t to_nhwc[4] = {0, 2, 3, 1};
  ait_status st = AIT_OK;
  int x = g->nodes[i].in[0];
  /* a window conv reading a value from outside reads it as NCHW itself
   * (native_nhwc.c copies it padded, reordered on the way) */
  bool nchw = (kind == L_STEM || kind == L_WIN || kind == L_GRP) && twin[x] < 0;
  if (!nchw && (x = nhwc_input(g, x, twin, &st)) < 0) return st;
  int z = -1;
  if (g->nodes[i].n_in > 3 && g->nodes[i].in[3] >= 0) {
    z = nhwc_input(g, g->nodes[i].in[3], twin, &st);
    if (z < 0) return st;
  }
  int w = hwio_weights(g, g->nodes[i].in[1]);
  int o = g->nodes[i].out[0];
  int y = w >= 0 && o >= 0 ? twin_value(g, o, to_nhwc) : -1;
  if (y < 0) return ait_err(AIT_E_NOMEM, "out of memory in the layout pass");
  ait_node *n = &g->nodes[i];
  int *in = malloc(sizeof(int) * 4);
  if (!in) return ait_err(AIT_E_NOMEM, "out of memory in the layout pass");
  if ((st = nat_node_make_fused(n, "FusedConvNhwc")) != AIT_OK) {
    free(in);
    return st;
  }
  in[0] = x;
  in[1] = w;
  in[2] = n->n_in > 2 ? n->in[2] : -1;
  in[3] = z;
  free(n->in);
  n->in = in;
  n->n_in = 4;
  n->out[0] = y;
  if (nchw) AIT_TRY(nat_attr_set_str(n, "x_layout", "NCHW"));
  twin[o] = y;
  writer[y] = i;
  converted_out[o] = true;
  return AIT_OK;
}

/* A per-channel operand v ([d0, C, 1, 1] or [C, 1, 1]) in NHWC: its twin
 * when it has one, a view of it as [d0, 1, 1, C] (nhwc_input's reorder of a
 * 1x1 image is a Reshape), or a constant [.., 1, 1, C] made once. */
static int channel_operand(ait_graph *g, int v, int *twin, ait_status *st) {
  if (twin[v] >= 0) return twin[v];
  if (!nat_is_const(g, v)) return nhwc_input(g, v, twin, st);
  ait_tensor *t = ait_tensor_clone(g->values[v].init);
  if (!t) {
    *st = ait_err(AIT_E_NOMEM, "out of memory in the layout pass");
    return -1;
  }
  int r = t->rank;
  int64_t C = t->dims[r - 3]; /* [.., C, 1, 1]: the same bytes as [.., 1, 1, C] */
  t->dims[r - 3] = 1;
  t->dims[r - 1] = C;
  int c = nat_add_initializer(g, g->values[v].name, "_nhwc", t);
  if (c < 0) *st = ait_err(AIT_E_NOMEM, "out of memory in the layout pass");
  twin[v] = c;
  return c;
}

/* Pool, elementwise and concat node i onto the NHWC twins of its inputs. */
static ait_status rewrite_other(ait_graph *g, int i, int kind, int *twin, bool *converted_out,
                                int *writer, bool *kill) {
  static const int64_t to_nhwc[4] = {0, 2, 3, 1};
  ait_status st = AIT_OK;
  int o = g->nodes[i].out[0];
  if (kind == L_TOUT) { /* its input is its output's twin; the node goes (a reorder comes
                         * back by edges_out where something outside reads the output) */
    twin[o] = g->nodes[i].in[0];
    converted_out[o] = true;
    kill[i] = true;
    return AIT_OK;
  }
  if (kind == L_TIN) { /* a view of the twin */
    int t = nhwc_input(g, g->nodes[i].in[0], twin, &st);
    if (t < 0) return st ? st : AIT_E_NOMEM;
    ait_node *n = &g->nodes[i];
    char *op = strdup("Identity");
    if (!op) return ait_err(AIT_E_NOMEM, "out of memory in the layout pass");
    free(n->op_type);
    n->op_type = op;
    n->op = ait_op_lookup("", "Identity", 13, NULL);
    n->opset = 13;
    n->in[0] = t;
    return AIT_OK;
  }
  const ait_value ov = g->values[o];
  for (int k = 0; k < g->nodes[i].n_in; k++) {
    int v = g->nodes[i].in[k], t = v;
    if (v < 0 || (kind == L_POOL && k > 0)) continue;
    int how = kind == L_ELT ? elt_operand(g, v, &ov) : 1;
    if (how == 1)
      t = nhwc_input(g, v, twin, &st);
    else if (how == 3)
      t = channel_operand(g, v, twin, &st);
    if (t < 0) return st ? st : AIT_E_NOMEM;
    g->nodes[i].in[k] = t;
  }
  int y = twin_value(g, o, to_nhwc);
  if (y < 0) return ait_err(AIT_E_NOMEM, "out of memory in the layout pass");
  ait_node *n = &g->nodes[i];
  if (kind == L_POOL) {
    char op[32];
    snprintf(op, sizeof op, "%s", n->op_type);
    int opset = n->opset;
    AIT_TRY(nat_node_make_fused(n, "FusedPoolNhwc"));
    AIT_TRY(nat_attr_set_str(n, "pool", op));
    AIT_TRY(nat_attr_set_int(n, "pool_opset", opset));
    n->n_out = 1; /* no Indices (layout_kind) */
  } else if (kind == L_CONCAT) {
    AIT_TRY(nat_attr_set_int(n, "axis", 3));
  }
  n->out[0] = y;
  twin[o] = y;
  writer[y] = i;
  converted_out[o] = true;
  return AIT_OK;
}

/* Values written by converted nodes that something else still reads (or
 * that are graph outputs) get a Transpose back from their twin. */
static ait_status edges_out(ait_graph *g, int n_values, const int *twin, const bool *conv_out) {
  static const int64_t to_nchw[4] = {0, 3, 1, 2};
  bool *read = calloc((size_t)n_values + 1, sizeof *read);
  if (!read) return ait_err(AIT_E_NOMEM, "out of memory in the layout pass");
  for (int k = 0; k < g->n_outputs; k++)
    if (g->outputs[k] < n_values) read[g->outputs[k]] = true;
  for (int i = 0; i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i].n_in; k++) {
      int v = g->nodes[i].in[k];
      if (v >= 0 && v < n_values) read[v] = true;
    }
  ait_status st = AIT_OK;
  for (int v = 0; v < n_values && !st; v++)
    if (conv_out[v] && read[v]) st = add_transpose(g, twin[v], v, to_nchw);
  free(read);
  return st;
}

/* A GlobalAveragePool reading a converted value reads its NHWC twin as
 * FusedGapNhwc: its output [N, C, 1, 1] has the bytes of the NHWC one, so
 * the reorder back to NCHW goes (unless something else reads it). */
static ait_status pool_in_nhwc(ait_graph *g, int n_values, const int *twin, const bool *conv_out) {
  for (int i = 0; i < g->n_nodes; i++) {
    ait_node *n = &g->nodes[i];
    int v = n->n_in > 0 ? n->in[0] : -1;
    if (n->domain[0] || strcmp(n->op_type, "GlobalAveragePool") || n->n_in != 1 || n->n_out != 1 ||
        v < 0 || v >= n_values || !conv_out[v] || g->values[v].rank != 4 ||
        g->values[v].dtype != AIT_FLOAT32)
      continue;
    AIT_TRY(nat_node_make_fused(n, "FusedGapNhwc"));
    n->in[0] = twin[v];
  }
  return AIT_OK;
}

/* Whether n is a ReduceMean over H and W of a rank-4 float32 value (axes
 * {2, 3} in any order or spelling, as an attribute or, from opset 18, a
 * constant input), a global average pool (MnasNet's x.mean([2, 3])). */
static bool mean_hw(const ait_graph *g, const ait_node *n) {
  if (n->domain[0] || strcmp(n->op_type, "ReduceMean") || n->n_in < 1 || n->n_out != 1 ||
      n->in[0] < 0 || n->out[0] < 0)
    return false;
  const ait_value *x = &g->values[n->in[0]];
  if (x->rank != 4 || x->dtype != AIT_FLOAT32) return false;
  int cnt = 0;
  const int64_t *ax = ait_attr_ints(n, "axes", &cnt);
  if (n->n_in > 1 && n->in[1] >= 0) {
    const ait_tensor *t = nat_is_const(g, n->in[1]) ? g->values[n->in[1]].init : NULL;
    if (ax || !t || t->dtype != AIT_INT64 || t->rank != 1) return false;
    ax = t->data, cnt = (int)t->dims[0];
  }
  if (!ax || cnt != 2) return false;
  bool seen[4] = {false, false, false, false};
  for (int k = 0; k < 2; k++) {
    int64_t a = ax[k] < 0 ? ax[k] + 4 : ax[k];
    if (a < 2 || a > 3) return false;
    seen[a] = true;
  }
  return seen[2] && seen[3] && !ait_attr_int(n, "noop_with_empty_axes", 0);
}

/* A ReduceMean over H and W (mean_hw) reading a converted value reads its
 * NHWC twin as FusedGapNhwc: no reorder of the whole map back to NCHW for
 * C numbers. Its output [N, C, 1, 1] is the ReduceMean's with keepdims; a
 * Reshape (a view) makes it [N, C] without. */
static ait_status mean_in_nhwc(ait_graph *g, int n_values, const int *twin, const bool *conv_out) {
  static const int64_t keep[4] = {0, 1, 2, 3};
  int nn = g->n_nodes;
  for (int i = 0; i < nn; i++) {
    ait_node *n = &g->nodes[i];
    int v = n->n_in > 0 ? n->in[0] : -1;
    if (v < 0 || v >= n_values || !conv_out[v] || !mean_hw(g, n)) continue;
    bool keepdims = ait_attr_int(n, "keepdims", 1) != 0;
    int o = n->out[0];
    if (!keepdims) {
      if (g->values[o].rank != 2) continue;
      int t = twin_value(g, v, keep); /* [N, C, 1, 1], retyped below */
      if (t < 0) return ait_err(AIT_E_NOMEM, "out of memory in the layout pass");
      ait_value *tv = &g->values[t];
      tv->dims[1].v = g->values[v].dims[1].v, tv->dims[2].v = tv->dims[3].v = 1;
      int64_t d1 = 2;
      ait_tensor *shape = ait_tensor_new(AIT_INT64, 1, &d1);
      if (!shape) return ait_err(AIT_E_NOMEM, "out of memory in the layout pass");
      ((int64_t *)shape->data)[0] = 0, ((int64_t *)shape->data)[1] = -1;
      int sh = nat_add_initializer(g, g->values[o].name, "_shape", shape);
      if (sh < 0) return ait_err(AIT_E_NOMEM, "out of memory in the layout pass");
      n = &g->nodes[i];
      n->out[0] = t;
      g->values[t].producer = i;
      int k = add_node1(g, "Reshape", t, o);
      if (k < 0) return AIT_E_NOMEM;
      g->nodes[k].in[1] = sh;
      g->nodes[k].n_in = 2;
      g->values[o].producer = k;
      n = &g->nodes[i];
    }
    AIT_TRY(nat_node_make_fused(n, "FusedGapNhwc"));
    n->in[0] = twin[v];
    n->n_in = 1;
  }
  return AIT_OK;
}

/* A Shape reading a converted value reads its NHWC twin, and a Gather puts
 * the dims back in NCHW order (DeepLabV3 takes the backbone's output shape
 * for its Resize: without this, 960 channels of 14x14 went back to NCHW
 * every run for four integers). */
static ait_status shape_in_nhwc(ait_graph *g, int n_values, const int *twin, const bool *conv_out) {
  static const int64_t nchw_of[4] = {0, 3, 1, 2}; /* NCHW dim k is NHWC dim nchw_of[k] */
  int nn = g->n_nodes;
  for (int i = 0; i < nn; i++) {
    ait_node *n = &g->nodes[i];
    int v = n->n_in > 0 ? n->in[0] : -1;
    if (n->domain[0] || strcmp(n->op_type, "Shape") || n->n_in != 1 || n->n_out != 1 ||
        n->out[0] < 0 || v < 0 || v >= n_values || !conv_out[v] || g->values[v].rank != 4)
      continue;
    int64_t a = ait_attr_int(n, "start", 0), b = ait_attr_int(n, "end", 4);
    a = a < 0 ? a + 4 : a, b = b < 0 ? b + 4 : b;
    a = a < 0 ? 0 : a > 4 ? 4 : a, b = b < 0 ? 0 : b > 4 ? 4 : b;
    int64_t cnt = b > a ? b - a : 0, four = 4;
    ait_tensor *idx = ait_tensor_new(AIT_INT64, 1, &cnt);
    if (!idx) return ait_err(AIT_E_NOMEM, "out of memory in the layout pass");
    for (int64_t k = 0; k < cnt; k++)
      ((int64_t *)idx->data)[k] = nchw_of[a + k];
    int s = n->out[0], ix = nat_add_initializer(g, g->values[s].name, "_nchw_dims", idx);
    int t = ix >= 0 ? twin_value(g, v, nchw_of) : -1; /* a fresh value, retyped below */
    if (t < 0) return ait_err(AIT_E_NOMEM, "out of memory in the layout pass");
    ait_value *tv = &g->values[t];
    tv->dtype = AIT_INT64, tv->rank = 1, tv->dims[0].v = four;
    n = &g->nodes[i];
    if (ait_node_attr(n, "start")) AIT_TRY(nat_attr_set_int(n, "start", 0));
    if (ait_node_attr(n, "end")) AIT_TRY(nat_attr_set_int(n, "end", 4));
    n->in[0] = twin[v];
    n->out[0] = t;
    g->values[t].producer = i;
    int k = add_node1(g, "Gather", t, s);
    if (k < 0) return AIT_E_NOMEM;
    g->nodes[k].in[1] = ix;
    g->nodes[k].n_in = 2;
    g->values[s].producer = k;
  }
  return AIT_OK;
}

/* ---- inverted residual blocks ---------------------------------------------- */

/* Blocks whose expanded activations take at least this many bytes (per
 * image) are fused (every block by default: large ones run in bands of
 * rows, small ones in channel slices, native_nhwc.c). */
static int64_t block_min_bytes = 0;
void nat_layout_set_block_bytes(int64_t bytes) { block_min_bytes = bytes; }
/* Whether squeeze-excite gates join the projection they feed (tests). */
static bool se_scales = true;
void nat_layout_set_se_scales(bool on) { se_scales = on; }
/* Whether a stem conv joins the block it feeds (tests turn it off). */
static bool fuse_stems = true;
void nat_layout_set_fuse_stems(bool on) { fuse_stems = on; }

/* The converted node writing value v when one node alone reads v, else -1. */
static int sole_writer(const int *writer, const int *reads, int v) {
  return v >= 0 && reads[v] == 1 && writer[v] >= 0 ? writer[v] : -1;
}

static ait_status copy_act(ait_node *to, const ait_node *from, const char *prefix) {
  char key[64];
  const char *act = ait_attr_str(from, "activation", NULL),
             *prog = ait_attr_str(from, "epilogue", NULL);
  int cnt = 0;
  const float *pr = ait_attr_floats(from, "activation_params", &cnt);
  snprintf(key, sizeof key, "%sactivation", prefix);
  if (act) AIT_TRY(nat_attr_set_str(to, key, act));
  snprintf(key, sizeof key, "%sactivation_params", prefix);
  if (pr) AIT_TRY(nat_attr_set_floats(to, key, pr, cnt));
  snprintf(key, sizeof key, "%sepilogue", prefix); /* an epilogue program's steps */
  if (prog) AIT_TRY(nat_attr_set_str(to, key, prog));
  return AIT_OK;
}

/* The stem_* attributes of a block whose first stage is stem node e (a
 * FusedConvNhwc window conv): its strides, pads and input layout. False
 * when its window is not one the block runs (padding wider than the
 * kernel). */
static bool stem_geometry(const ait_graph *g, const ait_node *e, int64_t st[2], int64_t pd[4]) {
  const ait_tensor *w = g->values[e->in[1]].init; /* HWIO */
  const ait_value *x = &g->values[e->in[0]];
  bool nchw = !strcmp(ait_attr_str(e, "x_layout", "NHWC"), "NCHW");
  int64_t sp[2] = {x->dims[nchw ? 2 : 1].v, x->dims[nchw ? 3 : 2].v},
          k[2] = {w->dims[0], w->dims[1]};
  nn_win win;
  if (x->rank != 4 || nn_win_conv(e, 2, sp, k, false, true, &win) != AIT_OK) {
    ait_err_clear();
    return false;
  }
  for (int i = 0; i < 2; i++) {
    if (win.pb[i] > k[i] || win.pe[i] > k[i]) return false;
    st[i] = win.s[i], pd[i] = win.pb[i], pd[2 + i] = win.pe[i];
  }
  return true;
}

/* Project node q (pointwise, NHWC) reading a depthwise node d (no residual)
 * that reads an expand node e (pointwise, no residual; optional): q
 * becomes FusedInvertedResidual(X, We, Be, Wd, Bd, Wp, Bp, Z), d and e die.
 * With stem, e is a stem conv instead (a small window, perhaps reading
 * NCHW): it becomes the block's first stage (stem_* attributes), so its
 * output, the largest activation of a MobileNet, is made a few rows at a
 * time in the block's ring and never written out. */
static ait_status make_block(ait_graph *g, int q, int d, int e, bool stem, bool *dead) {
  const ait_node *D = &g->nodes[d], *P = e >= 0 ? &g->nodes[e] : NULL;
  int cnt = 0;
  const int64_t *st = ait_attr_ints(D, "strides", &cnt);
  int64_t strides[2] = {st && cnt == 2 ? st[0] : 1, st && cnt == 2 ? st[1] : 1};
  int *in = malloc(sizeof(int) * 8);
  if (!in) return ait_err(AIT_E_NOMEM, "out of memory in the layout pass");
  ait_node *Q = &g->nodes[q];
  in[0] = P ? P->in[0] : D->in[0];
  in[1] = P ? P->in[1] : -1;
  in[2] = P && P->n_in > 2 ? P->in[2] : -1;
  in[3] = D->in[1];
  in[4] = D->n_in > 2 ? D->in[2] : -1;
  in[5] = Q->in[1];
  in[6] = Q->n_in > 2 ? Q->in[2] : -1;
  in[7] = Q->n_in > 3 ? Q->in[3] : -1;
  ait_status made = nat_node_make_fused(Q, "FusedInvertedResidual");
  if (made) {
    free(in);
    return made;
  }
  free(Q->in);
  Q->in = in;
  Q->n_in = 8;
  AIT_TRY(nat_attr_set_ints(Q, "strides", strides, 2));
  AIT_TRY(copy_act(Q, D, "dw_"));
  if (P) AIT_TRY(copy_act(Q, P, "expand_"));
  if (stem) {
    int64_t sst[2], spd[4];
    if (!stem_geometry(g, P, sst, spd))
      return ait_err(AIT_E_INTERNAL, "layout: stem window changed");
    AIT_TRY(nat_attr_set_ints(Q, "stem_strides", sst, 2));
    AIT_TRY(nat_attr_set_ints(Q, "stem_pads", spd, 4));
    AIT_TRY(nat_attr_set_str(Q, "stem_x_layout", ait_attr_str(P, "x_layout", "NHWC")));
  }
  dead[d] = true;
  if (e >= 0) dead[e] = true;
  return AIT_OK;
}

static ait_status fuse_blocks(ait_graph *g, const int *kind, int nn, const int *writer, bool *dead,
                              nat_pass_stats *s) {
  int *reads = calloc((size_t)g->n_values + 1, sizeof *reads);
  if (!reads) return ait_err(AIT_E_NOMEM, "out of memory in the layout pass");
  for (int i = 0; i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i].n_in; k++)
      if (g->nodes[i].in[k] >= 0) reads[g->nodes[i].in[k]]++;
  for (int k = 0; k < g->n_outputs; k++)
    reads[g->outputs[k]] += 2;
  ait_status st = AIT_OK;
  for (int q = 0; q < nn && !st; q++) {
    const ait_node *Q = &g->nodes[q];
    if (kind[q] != L_PW || strcmp(Q->op_type, "FusedConvNhwc")) continue;
    int d = sole_writer(writer, reads, Q->in[0]);
    if (d < 0 || kind[d] != L_DW || (g->nodes[d].n_in > 3 && g->nodes[d].in[3] >= 0)) continue;
    if (!clamp_act(Q) || !clamp_act(&g->nodes[d])) continue; /* the block's stages clamp */
    if (!block_dw(g, &g->nodes[d])) continue;
    int e = sole_writer(writer, reads, g->nodes[d].in[0]);
    bool stem = false;
    if (e >= 0 && g->nodes[e].n_in > 3 && g->nodes[e].in[3] >= 0) e = -1; /* a residual */
    if (e >= 0 && !clamp_act(&g->nodes[e])) e = -1;
    if (e >= 0 && kind[e] == L_STEM) {
      int64_t sst[2], spd[4];
      const ait_tensor *we = g->values[g->nodes[e].in[1]].init; /* HWIO */
      stem = fuse_stems && we->dims[0] * we->dims[1] * we->dims[2] <= 64 &&
             stem_geometry(g, &g->nodes[e], sst, spd);
      if (!stem) e = -1;
    } else if (e >= 0 && kind[e] != L_PW) {
      e = -1;
    }
    const ait_value *dx = &g->values[g->nodes[d].in[0]];
    int64_t bytes = 4 * dx->dims[1].v * dx->dims[2].v * dx->dims[3].v;
    if (dx->rank != 4 || dx->dims[1].v < 0 || dx->dims[2].v < 0 || bytes < block_min_bytes)
      continue;
    st = make_block(g, q, d, e, stem, dead);
    s->blocks++;
  }
  free(reads);
  return st;
}

/* Squeeze-excite gates into the projection they feed: a pointwise
 * FusedConvNhwc q reading, alone, Mul(D, S) with D [N, H, W, C] and S
 * [N, 1, 1, C] (the gate: a Sigmoid or HardSigmoid of the pooled branch)
 * reads D itself and S as its fifth input (native_nhwc.c run_pw_scaled:
 * on weights scaled per image, no pass over D); the Mul dies. */
static ait_status fuse_se_scales(ait_graph *g, const int *kind, int nn, const int *writer,
                                 bool *dead) {
  int *reads = calloc((size_t)g->n_values + 1, sizeof *reads);
  if (!reads) return ait_err(AIT_E_NOMEM, "out of memory in the layout pass");
  for (int i = 0; i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i].n_in; k++)
      if (!dead[i] && g->nodes[i].in[k] >= 0) reads[g->nodes[i].in[k]]++;
  for (int k = 0; k < g->n_outputs; k++)
    reads[g->outputs[k]] += 2;
  ait_status st = AIT_OK;
  for (int q = 0; q < nn && !st; q++) {
    ait_node *Q = &g->nodes[q];
    if (kind[q] != L_PW || dead[q] || strcmp(Q->op_type, "FusedConvNhwc") || Q->n_in > 4 ||
        Q->in[0] < 0 || reads[Q->in[0]] != 1)
      continue;
    int m = writer[Q->in[0]]; /* the converted node writing it */
    if (m < 0 || m >= g->n_nodes || dead[m] || !ait_is_op(&g->nodes[m], "Mul") ||
        g->nodes[m].n_in != 2 || g->nodes[m].n_out != 1)
      continue;
    const ait_value *x = &g->values[Q->in[0]];
    int d = -1, sc = -1;
    for (int k = 0; k < 2 && d < 0; k++) {
      int a = g->nodes[m].in[k], b = g->nodes[m].in[1 - k];
      if (a < 0 || b < 0 || nat_is_const(g, b)) continue;
      const ait_value *va = &g->values[a], *vb = &g->values[b];
      if (va->rank != 4 || x->rank != 4 || vb->rank != 4 || va->dtype != AIT_FLOAT32 ||
          vb->dtype != AIT_FLOAT32 || vb->dims[1].v != 1 || vb->dims[2].v != 1 ||
          !dim_eq(&vb->dims[3], &va->dims[3]))
        continue;
      /* the batch known and equal, or unknown in both (twins lose its
       * name): the kernel checks S against [N, 1, 1, C] at run time */
      if (!dim_eq(&vb->dims[0], &va->dims[0]) &&
          !(vb->dims[0].v < 0 && va->dims[0].v < 0 && x->dims[0].v < 0))
        continue;
      bool same = true; /* D is the product's shape */
      for (int i = 1; i < 4; i++)
        same = same && dim_eq(&va->dims[i], &x->dims[i]);
      if (!same) continue;
      d = a, sc = b;
    }
    if (d < 0) continue;
    int *in = malloc(sizeof(int) * 5);
    if (!in) {
      st = ait_err(AIT_E_NOMEM, "out of memory in the layout pass");
      break;
    }
    for (int k = 0; k < 4; k++)
      in[k] = k < Q->n_in ? Q->in[k] : -1;
    in[0] = d, in[4] = sc;
    free(Q->in);
    Q->in = in;
    Q->n_in = 5;
    dead[m] = true;
  }
  free(reads);
  return st;
}

ait_status nat_pass_layout(ait_graph *g, nat_pass_stats *s) {
  int nn = g->n_nodes, nv = g->n_values;
  int *kind = calloc((size_t)nn + 1, sizeof *kind), *parent = malloc(sizeof(int) * (nn + 1));
  bool *has_conv = calloc((size_t)nn + 1, sizeof *has_conv);
  if (!kind || !parent || !has_conv) {
    free(kind);
    free(parent);
    free(has_conv);
    return ait_err(AIT_E_NOMEM, "out of memory in the layout pass");
  }
  for (int i = 0; i < nn; i++) {
    parent[i] = i;
    kind[i] = layout_kind(g, &g->nodes[i]);
  }
  for (int i = 0; i < nn; i++) {
    if (!kind[i]) continue;
    for (int k = 0; k < g->nodes[i].n_in; k++) {
      if (!act_input(g, &g->nodes[i], kind[i], k)) continue;
      int v = g->nodes[i].in[k];
      int p = v >= 0 ? g->values[v].producer : -1;
      if (p >= 0 && kind[p]) parent[find(parent, p)] = find(parent, i);
    }
  }
  for (int i = 0; i < nn; i++)
    if (is_conv_kind(kind[i])) has_conv[find(parent, i)] = true;
  /* twin[] grows with the values the rewrite adds: size it for the worst
   * case (per node a twin, a weight, reorders and views of its inputs) */
  int cap = nv + 8 * nn + 1;
  for (int i = 0; i < nn; i++)
    cap += 2 * g->nodes[i].n_in;
  int *twin = malloc(sizeof(int) * (size_t)cap), *writer = malloc(sizeof(int) * (size_t)cap);
  bool *conv_out = calloc((size_t)cap, sizeof *conv_out);
  ait_status st = twin && writer && conv_out ? AIT_OK : ait_err(AIT_E_NOMEM, "out of memory");
  for (int v = 0; v < cap && twin && writer; v++)
    twin[v] = writer[v] = -1;
  int done = 0, moved = 0;
  bool *kill = calloc((size_t)nn + 1, sizeof *kill);
  if (!st && !kill) st = ait_err(AIT_E_NOMEM, "out of memory in the layout pass");
  for (int i = 0; i < nn && !st; i++) /* topological order: producers first */
    if (kind[i] && has_conv[find(parent, i)]) {
      if (is_conv_kind(kind[i])) {
        st = rewrite(g, i, kind[i], twin, conv_out, writer);
        done++;
      } else {
        st = rewrite_other(g, i, kind[i], twin, conv_out, writer, kill);
      }
      moved++;
    }
  if (!st && g->n_values > cap) st = ait_err(AIT_E_INTERNAL, "layout pass: value table overflow");
  if (!st && moved) st = pool_in_nhwc(g, nv, twin, conv_out);
  if (!st && moved) st = mean_in_nhwc(g, nv, twin, conv_out);
  if (!st && moved) st = shape_in_nhwc(g, nv, twin, conv_out);
  if (!st && moved) st = edges_out(g, nv, twin, conv_out);
  bool *dead = moved ? calloc((size_t)g->n_nodes + 1, sizeof *dead) : NULL;
  if (!st && moved && !dead) st = ait_err(AIT_E_NOMEM, "out of memory in the layout pass");
  for (int i = 0; dead && kill && i < nn; i++)
    dead[i] |= kill[i];
  free(kill);
  if (!st && moved) st = fuse_blocks(g, kind, nn, writer, dead, s);
  if (!st && moved && se_scales) st = fuse_se_scales(g, kind, nn, writer, dead);
  if (!st && moved) st = nat_graph_compact(g, dead);
  free(dead);
  free(writer);
  if (!st) s->relayout = done;
  free(twin);
  free(conv_out);
  free(kind);
  free(parent);
  free(has_conv);
  return st;
}
