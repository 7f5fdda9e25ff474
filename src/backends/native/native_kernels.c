/* Which native kernel runs which node: a table by op, plus the shape logic
 * of the ops that become views (no copy). Everything not listed runs the
 * registry's reference kernel. A fast kernel may still decline a node at run
 * time (dtype, rank, attributes) and the reference runs it instead. */
#include <string.h>

#include "backends/native/native.h"
#include "backends/native/native_elt.h"
#include "backends/native/native_mm.h"

typedef struct fast_row {
  const char *domain, *op;
  int min_opset;
  nat_kernel fn;
} fast_row;

static const fast_row fast_rows[] = {
    {"", "Conv", 1, nat_k_conv_seq}, /* 1-D on native_mm's tiles, else nat_k_conv */
    {AIT_FUSED_DOMAIN, "FusedConv", 1, nat_k_conv_seq},
    {"", "ConvTranspose", 1, nat_k_convt},
    {AIT_FUSED_DOMAIN, "FusedConvNhwc", 1, nat_k_conv_nhwc},
    {AIT_FUSED_DOMAIN, "FusedInvertedResidual", 1, nat_k_inv_res},
    {AIT_FUSED_DOMAIN, "FusedGapNhwc", 1, nat_k_gap_nhwc},
    {AIT_FUSED_DOMAIN, "FusedPoolNhwc", 1, nat_k_pool_nhwc},
    {"", "Gemm", 1, nat_k_gemm},
    {AIT_FUSED_DOMAIN, "FusedGemm", 1, nat_k_gemm},
    {"", "MatMul", 1, nat_k_matmul},
    {AIT_FUSED_DOMAIN, "FusedMatMul", 1, nat_k_matmul},
    {AIT_FUSED_DOMAIN, "FusedAttention", 1, nat_k_attention},
    /* elementwise (native_eltwise.c, native_elt_unary.c) */
    {"", "Add", 7, nat_k_binary},
    {"", "Sub", 7, nat_k_binary},
    {"", "Mul", 7, nat_k_binary},
    {"", "Div", 7, nat_k_binary},
    {"", "Pow", 7, nat_k_binary},
    {"", "Max", 8, nat_k_binary},
    {"", "Min", 8, nat_k_binary},
    {"", "PRelu", 7, nat_k_binary},
    {"", "Equal", 7, nat_k_compare},
    {"", "Less", 7, nat_k_compare},
    {"", "Greater", 7, nat_k_compare},
    {"", "LessOrEqual", 12, nat_k_compare},
    {"", "GreaterOrEqual", 12, nat_k_compare},
    {"", "And", 7, nat_k_logic},
    {"", "Or", 7, nat_k_logic},
    {"", "Xor", 7, nat_k_logic},
    {"", "Not", 1, nat_k_not},
    {"", "Where", 9, nat_k_where},
    {"", "Cast", 6, nat_k_cast},
    {AIT_FUSED_DOMAIN, "FusedUnary", 1, nat_k_unary},
    {AIT_FUSED_DOMAIN, "FusedInstanceNorm", 1, nat_k_instancenorm},
    {"", "ReduceMax", 1, nat_k_reduce},
    {"", "ReduceMin", 1, nat_k_reduce},
    {"", "ReduceSum", 1, nat_k_reduce},
    {"", "ReduceMean", 1, nat_k_reduce},
    {"", "Relu", 6, nat_k_unary},
    {"", "Sigmoid", 6, nat_k_unary},
    {"", "Tanh", 6, nat_k_unary},
    {"", "HardSwish", 1, nat_k_unary},
    {"", "HardSigmoid", 6, nat_k_unary},
    {"", "LeakyRelu", 6, nat_k_unary},
    {"", "Clip", 1, nat_k_unary},
    {"", "Erf", 1, nat_k_unary},
    {"", "Exp", 6, nat_k_unary},
    {"", "Sqrt", 6, nat_k_unary},
    {"", "Neg", 6, nat_k_unary},
    {"", "Abs", 6, nat_k_unary},
    {"", "Log", 6, nat_k_unary},
    {"", "Reciprocal", 6, nat_k_unary},
    {"", "Floor", 6, nat_k_unary},
    {"", "Ceil", 6, nat_k_unary},
    {"", "Softplus", 1, nat_k_unary},
    {"", "Softsign", 1, nat_k_unary},
    {"", "Elu", 6, nat_k_unary},
    {"", "Selu", 6, nat_k_unary},
    {"", "Sin", 1, nat_k_unary},
    {"", "Cos", 1, nat_k_unary},
    {"", "Round", 11, nat_k_unary},
    {"", "Gelu", 20, nat_k_unary},
    {"", "MaxPool", 1, nat_k_maxpool},
    {"", "GlobalAveragePool", 1, nat_k_gap},
    {"", "Softmax", 1, nat_k_softmax},
    {"", "LayerNormalization", 17, nat_k_layernorm},
    {"", "RMSNormalization", 23, nat_k_rmsnorm},
    {"", "RotaryEmbedding", 23, nat_k_rope},
    {"", "BatchNormalization", 1, nat_k_batchnorm},
    {"", "InstanceNormalization", 1, nat_k_instancenorm},
    {"", "Transpose", 1, nat_k_transpose},
    /* data movement (native_gather.c) */
    {"", "Gather", 1, nat_k_gather},
    {"", "Slice", 10, nat_k_slice},
    {"", "Pad", 11, nat_k_pad},
    {"", "Concat", 1, nat_k_concat},
    {"", "Resize", 11, nat_k_resize},
    {"", "RNN", 7, nat_k_rnn},
    {"", "GRU", 7, nat_k_gru},
    {"", "LSTM", 7, nat_k_lstm},
};

/* Ops whose fast kernels make every output (the others make output 0 only). */
static const char *const all_output_ops[] = {"RNN", "GRU", "LSTM"};

static const char *const view_ops[] = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"};

/* Whether value v is read by any node or is a graph output. */
static bool is_read(const ait_graph *g, int v) {
  if (v < 0) return false;
  for (int k = 0; k < g->n_outputs; k++)
    if (g->outputs[k] == v) return true;
  for (int i = 0; i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i].n_in; k++)
      if (g->nodes[i].in[k] == v) return true;
  return false;
}

/* The fast row for node n, or NULL. */
static const fast_row *fast_row_of(const ait_node *n) {
  for (size_t i = 0; i < sizeof fast_rows / sizeof fast_rows[0]; i++) {
    const fast_row *f = &fast_rows[i];
    if (!strcmp(n->domain, f->domain) && !strcmp(n->op_type, f->op) && n->opset >= f->min_opset)
      return f;
  }
  return NULL;
}

nat_node nat_dispatch(const ait_graph *g, const ait_node *n) {
  nat_node d = {NAT_REF, NULL};
  if (!n->op || !n->op->kernel || n->n_out < 1 || n->n_in < 1 || n->in[0] < 0) return d;
  const fast_row *f = fast_row_of(n);
  bool all = false;
  for (size_t i = 0; f && !f->domain[0] && i < sizeof all_output_ops / sizeof all_output_ops[0];
       i++)
    all |= !strcmp(n->op_type, all_output_ops[i]);
  if (all) { /* output 0 may be absent: Y_h alone is common */
    d.kind = NAT_FAST;
    d.fast = f->fn;
    return d;
  }
  if (n->out[0] < 0) return d;
  for (int k = 1; k < n->n_out; k++) /* other fast kernels make output 0 only */
    if (is_read(g, n->out[k])) return d;
  if (!n->domain[0]) {
    for (size_t i = 0; i < sizeof view_ops / sizeof view_ops[0]; i++)
      if (!strcmp(n->op_type, view_ops[i]) && n->n_out == 1) {
        if (!strcmp(n->op_type, "Reshape") && n->opset < 5) return d;
        if (g->values[n->in[0]].type != AIT_VT_TENSOR) return d;
        d.kind = NAT_VIEW;
        return d;
      }
  }
  if (f) {
    d.kind = NAT_FAST;
    d.fast = f->fn;
  }
  return d;
}

/* ---- views ----------------------------------------------------------------- */

/* Axes from the `axes` attribute (opset < 13) or input 1. */
static ait_status read_axes(const ait_node *n, const ait_tensor *const *in, int n_in, int64_t *axes,
                            int *count, bool *given) {
  *count = 0;
  *given = false;
  if (n->opset < 13) {
    const int64_t *a = ait_attr_ints(n, "axes", count);
    if (!a) return AIT_OK;
    if (*count > AIT_MAX_RANK) return AIT_E_UNSUPPORTED;
    memcpy(axes, a, sizeof(int64_t) * (size_t)*count);
    *given = true;
    return AIT_OK;
  }
  if (n_in < 2 || !in[1]) return AIT_OK;
  *given = true;
  return ait_read_ints(in[1], axes, AIT_MAX_RANK, count) == AIT_OK ? AIT_OK : AIT_E_UNSUPPORTED;
}

static ait_status reshape_shape(const ait_node *n, const ait_tensor *x, const ait_tensor *s,
                                int *rank, int64_t *dims) {
  int64_t want[AIT_MAX_RANK];
  int cnt = 0;
  if (!s || ait_read_ints(s, want, AIT_MAX_RANK, &cnt) != AIT_OK) return AIT_E_UNSUPPORTED;
  bool allowzero = n->opset >= 14 && ait_attr_int(n, "allowzero", 0) != 0;
  int64_t known = 1, numel = ait_tensor_numel(x);
  int infer = -1;
  for (int i = 0; i < cnt; i++) {
    int64_t d = want[i];
    if (d == 0 && !allowzero) {
      if (i >= x->rank) return AIT_E_UNSUPPORTED;
      d = x->dims[i];
    }
    if (d == -1) {
      if (infer >= 0) return AIT_E_UNSUPPORTED;
      infer = i;
      continue;
    }
    if (d < 0 || __builtin_mul_overflow(known, d, &known)) return AIT_E_UNSUPPORTED;
    dims[i] = d;
  }
  if (infer >= 0) {
    if (known == 0 || numel % known) return AIT_E_UNSUPPORTED;
    dims[infer] = numel / known;
  } else if (known != numel) {
    return AIT_E_UNSUPPORTED;
  }
  *rank = cnt;
  return AIT_OK;
}

ait_status nat_view_shape(const ait_node *n, const ait_tensor *const *in, int n_in, int *rank,
                          int64_t *dims) {
  const ait_tensor *x = in[0];
  const char *op = n->op_type;
  int r = x->rank;
  if (!strcmp(op, "Identity")) {
    *rank = r;
    memcpy(dims, x->dims, sizeof(int64_t) * (size_t)r);
    return AIT_OK;
  }
  if (!strcmp(op, "Reshape")) return reshape_shape(n, x, n_in > 1 ? in[1] : NULL, rank, dims);
  if (!strcmp(op, "Flatten")) {
    int64_t axis = ait_attr_int(n, "axis", 1);
    if (axis < 0) axis += r;
    if (axis < 0 || axis > r) return AIT_E_UNSUPPORTED;
    dims[0] = ait_shape_numel((int)axis, x->dims);
    dims[1] = ait_shape_numel(r - (int)axis, x->dims + axis);
    *rank = 2;
    return AIT_OK;
  }
  int64_t axes[AIT_MAX_RANK];
  int na = 0;
  bool given = false;
  if (read_axes(n, in, n_in, axes, &na, &given) != AIT_OK) return AIT_E_UNSUPPORTED;
  bool mark[AIT_MAX_RANK + 1] = {false};
  if (!strcmp(op, "Squeeze")) {
    for (int i = 0; i < na; i++) {
      int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
      if (a < 0 || a >= r || x->dims[a] != 1) return AIT_E_UNSUPPORTED;
      mark[a] = true;
    }
    int o = 0;
    for (int i = 0; i < r; i++)
      if (!(given ? mark[i] : x->dims[i] == 1)) dims[o++] = x->dims[i];
    *rank = o;
    return AIT_OK;
  }
  if (!strcmp(op, "Unsqueeze")) {
    int ro = r + na;
    if (!given || ro > AIT_MAX_RANK) return AIT_E_UNSUPPORTED;
    for (int i = 0; i < na; i++) {
      int64_t a = axes[i] < 0 ? axes[i] + ro : axes[i];
      if (a < 0 || a >= ro || mark[a]) return AIT_E_UNSUPPORTED;
      mark[a] = true;
    }
    for (int i = 0, k = 0; i < ro; i++)
      dims[i] = mark[i] ? 1 : x->dims[k++];
    *rank = ro;
    return AIT_OK;
  }
  return AIT_E_UNSUPPORTED;
}
