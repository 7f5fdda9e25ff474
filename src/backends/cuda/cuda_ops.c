/* The cuda backend's op table: one row per op it runs on the device, with
 * the conditions supports() checks on top of types (cu_supports_node) and
 * the function that turns a node into steps when a plan is made. */
#ifdef AIT_HAVE_CUDA

#include <stdio.h>
#include <string.h>

#include "backends/cuda/cuda_impl.h"

static bool present(const ait_node *n, int k) { return k < n->n_in && n->in[k] >= 0; }

/* Output k of n is read by a node or is a graph output. */
static bool out_read(const ait_graph *g, const ait_node *n, int k) {
  if (k >= n->n_out || n->out[k] < 0) return false;
  int v = n->out[k];
  for (int i = 0; i < g->n_outputs; i++)
    if (g->outputs[i] == v) return true;
  for (int i = 0; i < g->n_nodes; i++)
    for (int j = 0; j < g->nodes[i].n_in; j++)
      if (g->nodes[i].in[j] == v) return true;
  return false;
}

static bool only_first_output(const ait_graph *g, const ait_node *n, char *why, size_t len) {
  for (int k = 1; k < n->n_out; k++)
    if (out_read(g, n, k)) {
      snprintf(why, len, "%s: output %d is used; only the first output is supported", n->op_type,
               k);
      return false;
    }
  return true;
}

/* A constant (an initializer, or computed from initializers only: exporters
 * share weights through Identity nodes). */
static bool is_weight(const ait_graph *g, int v, signed char *memo) {
  return v >= 0 && cu_value_static(g, v, memo);
}

static bool known_rank(const ait_graph *g, const ait_node *n, int k, int want, char *why,
                       size_t len, const char *what) {
  if (!present(n, k)) return true;
  int r = g->values[n->in[k]].rank;
  if (r < 0 || r == want) return true;
  snprintf(why, len, "%s: %s (rank %d, needs %d)", n->op_type, what, r, want);
  return false;
}

/* The activation attributes of a fused node parse. */
static bool act_ok(const ait_node *n, char *why, size_t len) {
  if (strcmp(n->domain, AIT_FUSED_DOMAIN)) return true;
  ait_act a;
  if (ait_act_parse(n, &a) == AIT_OK) return true;
  snprintf(why, len, "%s: %s", n->op_type, ait_last_error());
  ait_err_clear();
  return false;
}

static bool chk_dropout(const ait_graph *g, const ait_node *n, signed char *memo, char *why,
                        size_t len) {
  if (!only_first_output(g, n, why, len)) return false;
  if (ait_attr_int(n, "is_test", 1) == 0 && n->opset < 7) {
    snprintf(why, len, "Dropout in training mode");
    return false;
  }
  if (present(n, 2)) {
    const ait_tensor *t = g->values[n->in[2]].init;
    if (!t || ait_tensor_numel(t) != 1 || ait_scalar_i64(t) != 0) {
      snprintf(why, len, "Dropout: training_mode must be a constant false");
      return false;
    }
  }
  return true;
}

static bool chk_static_inputs(const ait_graph *g, const ait_node *n, signed char *memo, int from,
                              char *why, size_t len) {
  for (int k = from; k < n->n_in; k++)
    if (n->in[k] >= 0 && !cu_value_static(g, n->in[k], memo)) {
      snprintf(why, len,
               "%s: input %d ('%s') must be known while planning (a constant or "
               "computed from shapes)",
               n->op_type, k, g->values[n->in[k]].name);
      return false;
    }
  return true;
}

static bool chk_slice(const ait_graph *g, const ait_node *n, signed char *memo, char *why,
                      size_t len) {
  return chk_static_inputs(g, n, memo, 1, why, len);
}

static bool chk_gather(const ait_graph *g, const ait_node *n, signed char *memo, char *why,
                       size_t len) {
  ait_dtype dt = present(n, 1) ? g->values[n->in[1]].dtype : AIT_UNDEFINED;
  if (dt != AIT_UNDEFINED && dt != AIT_INT64 && dt != AIT_INT32) {
    snprintf(why, len, "Gather: indices are %s (int32/int64 only)", ait_dtype_name(dt));
    return false;
  }
  return true;
}

static bool chk_cast(const ait_graph *g, const ait_node *n, signed char *memo, char *why,
                     size_t len) {
  ait_dtype to = (ait_dtype)ait_attr_int(n, "to", 0);
  if (!cu_dtype_ok(to)) {
    snprintf(why, len, "Cast to %s", ait_dtype_name(to));
    return false;
  }
  return true;
}

static bool chk_layernorm(const ait_graph *g, const ait_node *n, signed char *memo, char *why,
                          size_t len) {
  if (!only_first_output(g, n, why, len)) return false;
  if (!is_weight(g, n->in[1], memo) || (present(n, 2) && !is_weight(g, n->in[2], memo))) {
    snprintf(why, len, "LayerNormalization: scale and bias must be constants");
    return false;
  }
  return true;
}

static bool chk_rmsnorm(const ait_graph *g, const ait_node *n, signed char *memo, char *why,
                        size_t len) {
  if (n->n_in < 2 || !is_weight(g, n->in[1], memo)) {
    snprintf(why, len, "RMSNormalization: the scale must be a constant");
    return false;
  }
  return true;
}

static bool chk_rope(const ait_graph *g, const ait_node *n, signed char *memo, char *why,
                     size_t len) {
  if (n->n_in < 3 || !present(n, 1) || !present(n, 2)) {
    snprintf(why, len, "RotaryEmbedding without cos_cache and sin_cache");
    return false;
  }
  return known_rank(g, n, 3, 2, why, len, "position_ids must be (B, S)");
}

/* ONNX Attention (opset 23+): Y only, no KV cache. */
static bool chk_attention(const ait_graph *g, const ait_node *n, signed char *memo, char *why,
                          size_t len) {
  if (!only_first_output(g, n, why, len)) return false;
  if (present(n, 4) || present(n, 5)) {
    snprintf(why, len, "Attention: past_key/past_value (a KV cache) are not supported");
    return false;
  }
  if (n->opset >= 24 && present(n, 6)) {
    snprintf(why, len, "Attention: nonpad_kv_seqlen is not supported");
    return false;
  }
  if (n->n_in < 3 || !present(n, 0) || !present(n, 1) || !present(n, 2)) {
    snprintf(why, len, "Attention without Q, K and V");
    return false;
  }
  int r = g->values[n->in[0]].rank;
  if (r >= 0 && r != 3 && r != 4) {
    snprintf(why, len, "Attention: Q of rank %d", r);
    return false;
  }
  return true;
}

static bool chk_batchnorm(const ait_graph *g, const ait_node *n, signed char *memo, char *why,
                          size_t len) {
  if (!only_first_output(g, n, why, len)) return false;
  if ((n->opset >= 14 && ait_attr_int(n, "training_mode", 0)) ||
      (n->opset < 7 && !ait_attr_int(n, "is_test", 0))) {
    snprintf(why, len, "BatchNormalization in training mode");
    return false;
  }
  for (int k = 1; k <= 4; k++)
    if (!present(n, k) || !is_weight(g, n->in[k], memo)) {
      snprintf(why, len, "BatchNormalization: scale, bias, mean and var must be constants");
      return false;
    }
  int r = g->values[n->in[0]].rank;
  if (r >= 0 && r < 2) {
    snprintf(why, len, "BatchNormalization of a rank-%d tensor", r);
    return false;
  }
  return true;
}

static bool chk_pool(const ait_graph *g, const ait_node *n, signed char *memo, char *why,
                     size_t len) {
  if (!only_first_output(g, n, why, len)) return false;
  if (ait_attr_int(n, "storage_order", 0) != 0) {
    snprintf(why, len, "%s: storage_order 1", n->op_type);
    return false;
  }
  return known_rank(g, n, 0, 4, why, len, "only 2-D pooling");
}

static bool chk_global_pool(const ait_graph *g, const ait_node *n, signed char *memo, char *why,
                            size_t len) {
  int r = g->values[n->in[0]].rank;
  if (r >= 0 && r < 3) {
    snprintf(why, len, "%s of a rank-%d tensor", n->op_type, r);
    return false;
  }
  return true;
}

/* Padding that cuDNN can do: symmetric on every spatial axis. */
static bool conv_pads_ok(const ait_graph *g, const ait_node *n, char *why, size_t len) {
  const char *ap = ait_attr_str(n, "auto_pad", "NOTSET");
  const ait_value *w = &g->values[n->in[1]];
  int cnt = 0, nsp = w->rank - 2;
  if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
    const int64_t *st = ait_attr_ints(n, "strides", &cnt);
    int dc = 0;
    const int64_t *dl = ait_attr_ints(n, "dilations", &dc);
    for (int k = 0; k < nsp; k++) {
      int64_t s = st && k < cnt ? st[k] : 1, d = dl && k < dc ? dl[k] : 1;
      int64_t kk = w->dims[2 + k].v;
      if (s != 1 || kk < 0 || ((kk - 1) * d) % 2) {
        snprintf(why, len, "Conv: auto_pad %s may pad asymmetrically (cuDNN pads symmetrically)",
                 ap);
        return false;
      }
    }
    return true;
  }
  if (!strcmp(ap, "VALID")) return true;
  const int64_t *p = ait_attr_ints(n, "pads", &cnt);
  for (int k = 0; p && k < nsp && cnt == 2 * nsp; k++)
    if (p[k] != p[k + nsp]) {
      snprintf(why, len, "Conv: asymmetric pads on spatial axis %d (%lld, %lld)", k,
               (long long)p[k], (long long)p[k + nsp]);
      return false;
    }
  return true;
}

/* 2-D convolutions, 1-D ones (as 2-D of height 1) and 3-D ones (cuda_conv.c). */
static bool chk_conv(const ait_graph *g, const ait_node *n, signed char *memo, char *why,
                     size_t len) {
  int wr = g->values[n->in[1]].rank;
  if (!is_weight(g, n->in[1], memo) || wr < 3 || wr > 5) {
    snprintf(why, len, "%s: the filter must be a constant 3-D, 4-D or 5-D tensor (1-D to 3-D)",
             n->op_type);
    return false;
  }
  if (!known_rank(g, n, 0, wr, why, len, "only 1-D, 2-D and 3-D convolutions")) return false;
  if (present(n, 2) && !is_weight(g, n->in[2], memo)) {
    snprintf(why, len, "%s: the bias must be a constant", n->op_type);
    return false;
  }
  return act_ok(n, why, len) && conv_pads_ok(g, n, why, len);
}

static bool chk_gemm(const ait_graph *g, const ait_node *n, signed char *memo, char *why,
                     size_t len) {
  if (!known_rank(g, n, 0, 2, why, len, "A must be 2-D")) return false;
  if (!known_rank(g, n, 1, 2, why, len, "B must be 2-D")) return false;
  return act_ok(n, why, len);
}

static bool chk_matmul(const ait_graph *g, const ait_node *n, signed char *memo, char *why,
                       size_t len) {
  if (!strcmp(n->domain, AIT_FUSED_DOMAIN) && present(n, 2) && !is_weight(g, n->in[2], memo)) {
    snprintf(why, len, "FusedMatMul: the bias must be a constant");
    return false;
  }
  return act_ok(n, why, len);
}

static bool chk_unary(const ait_graph *g, const ait_node *n, signed char *memo, char *why,
                      size_t len) {
  if (!strcmp(n->op_type, "Clip")) {
    ait_dtype dt = g->values[n->in[0]].dtype;
    if (dt != AIT_UNDEFINED && dt != AIT_FLOAT32 && dt != AIT_FLOAT16 && dt != AIT_BFLOAT16) {
      snprintf(why, len, "Clip of %s (float only)", ait_dtype_name(dt));
      return false;
    }
    return chk_static_inputs(g, n, memo, 1, why, len);
  }
  if (!strcmp(n->op_type, "Gelu")) {
    const char *a = ait_attr_str(n, "approximate", "none");
    if (strcmp(a, "none") && strcmp(a, "tanh")) {
      snprintf(why, len, "Gelu: approximate='%s'", a);
      return false;
    }
  }
  return true;
}

static bool chk_binary(const ait_graph *g, const ait_node *n, signed char *memo, char *why,
                       size_t len) {
  if (n->n_in < 1) {
    snprintf(why, len, "%s without inputs", n->op_type);
    return false;
  }
  if (!strcmp(n->op_type, "Mod") && !ait_attr_int(n, "fmod", 0)) {
    ait_dtype dt = g->values[n->in[0]].dtype;
    if (dt == AIT_FLOAT32 || dt == AIT_FLOAT16 || dt == AIT_BFLOAT16) {
      snprintf(why, len, "Mod of floats needs fmod=1");
      return false;
    }
  }
  return true;
}

static bool chk_reduce(const ait_graph *g, const ait_node *n, signed char *memo, char *why,
                       size_t len) {
  return chk_static_inputs(g, n, memo, 1, why, len);
}

static bool chk_castlike(const ait_graph *g, const ait_node *n, signed char *memo, char *why,
                         size_t len) {
  ait_dtype to = n->n_in > 1 && n->in[1] >= 0 ? g->values[n->in[1]].dtype : AIT_UNDEFINED;
  if (to == AIT_UNDEFINED || !cu_dtype_ok(to)) {
    snprintf(why, len, "CastLike to %s", ait_dtype_name(to));
    return false;
  }
  return true;
}

static bool chk_pad(const ait_graph *g, const ait_node *n, signed char *memo, char *why,
                    size_t len) {
  const char *mode = ait_attr_str(n, "mode", "constant");
  int m = cu_pad_mode(mode);
  if (m < 0 || (m == 3 && n->opset < 19)) {
    snprintf(why, len, "Pad: mode '%s'", mode);
    return false;
  }
  int r = g->values[n->in[0]].rank;
  if (r > CUK_MAX_DIMS) {
    snprintf(why, len, "Pad of a rank-%d tensor", r);
    return false;
  }
  return chk_static_inputs(g, n, memo, 1, why, len);
}

/* Resize of the last two axes: nearest or linear, no antialias, the usual
 * coordinate transformations; roi, scales and sizes known while planning. */
static bool chk_resize(const ait_graph *g, const ait_node *n, signed char *memo, char *why,
                       size_t len) {
  const char *mode = ait_attr_str(n, "mode", "nearest");
  const char *ct = ait_attr_str(n, "coordinate_transformation_mode",
                                n->opset < 11 ? "asymmetric" : "half_pixel");
  const char *nm = ait_attr_str(n, "nearest_mode", "round_prefer_floor");
  if (n->opset < 11) { /* opset 10's rounding is the reference's legacy one */
    snprintf(why, len, "Resize before opset 11");
    return false;
  }
  if (strcmp(mode, "nearest") && strcmp(mode, "linear")) {
    snprintf(why, len, "Resize: mode '%s' (nearest and linear only)", mode);
    return false;
  }
  if (cu_resize_coord(ct) < 0) {
    snprintf(why, len, "Resize: coordinate_transformation_mode '%s'", ct);
    return false;
  }
  if (cu_resize_nearest(nm) < 0) {
    snprintf(why, len, "Resize: nearest_mode '%s'", nm);
    return false;
  }
  int cnt = 0;
  if ((ait_attr_int(n, "antialias", 0) && strcmp(mode, "nearest")) ||
      ait_attr_ints(n, "axes", &cnt) ||
      strcmp(ait_attr_str(n, "keep_aspect_ratio_policy", "stretch"), "stretch")) {
    snprintf(why, len, "Resize: antialias, axes or keep_aspect_ratio_policy");
    return false;
  }
  int r = g->values[n->in[0]].rank;
  if (r >= 0 && r < 2) {
    snprintf(why, len, "Resize of a rank-%d tensor", r);
    return false;
  }
  return chk_static_inputs(g, n, memo, 1, why, len);
}

static bool chk_instnorm(const ait_graph *g, const ait_node *n, signed char *memo, char *why,
                         size_t len) {
  if (n->n_in < 3 || !is_weight(g, n->in[1], memo) || !is_weight(g, n->in[2], memo)) {
    snprintf(why, len, "InstanceNormalization: scale and B must be constants");
    return false;
  }
  int r = g->values[n->in[0]].rank;
  if (r >= 0 && r < 3) {
    snprintf(why, len, "InstanceNormalization of a rank-%d tensor", r);
    return false;
  }
  int act;
  float ap[2];
  if (!cu_instnorm_act(n, &act, ap)) {
    snprintf(why, len, "%s with activation '%s'", n->op_type, ait_attr_str(n, "activation", ""));
    return false;
  }
  return true;
}

static const cu_op_row rows[] = {
    {"", "Identity", NULL, cu_lower_view},
    {"", "Dropout", chk_dropout, cu_lower_view},
    {"", "Reshape", NULL, cu_lower_view},
    {"", "Flatten", NULL, cu_lower_view},
    {"", "Squeeze", NULL, cu_lower_view},
    {"", "Unsqueeze", NULL, cu_lower_view},
    {"", "Transpose", NULL, cu_lower_transpose},
    {"", "Slice", chk_slice, cu_lower_slice},
    {"", "Expand", NULL, cu_lower_expand},
    {"", "Concat", NULL, cu_lower_concat},
    {"", "Split", NULL, cu_lower_split},
    {"", "Gather", chk_gather, cu_lower_gather},
    {"", "Cast", chk_cast, cu_lower_cast},
    {"", "CastLike", chk_castlike, cu_lower_cast},
    {"", "Sum", NULL, cu_lower_variadic},
    {"", "Mean", NULL, cu_lower_variadic},
    {"", "ConstantOfShape", NULL, cu_lower_fill},
    {"", "Softmax", NULL, cu_lower_softmax},
    {"", "LogSoftmax", NULL, cu_lower_softmax},
    {"", "LayerNormalization", chk_layernorm, cu_lower_layernorm},
    {"", "RMSNormalization", chk_rmsnorm, cu_lower_rmsnorm},
    {"", "RotaryEmbedding", chk_rope, cu_lower_rope},
    {"", "Attention", chk_attention, cu_lower_onnx_attention},
    {"", "BatchNormalization", chk_batchnorm, cu_lower_batchnorm},
    {"", "MaxPool", chk_pool, cu_lower_pool},
    {"", "AveragePool", chk_pool, cu_lower_pool},
    {"", "GlobalAveragePool", chk_global_pool, cu_lower_global_pool},
    {"", "GlobalMaxPool", chk_global_pool, cu_lower_global_pool},
    {"", "Conv", chk_conv, cu_lower_conv},
    {"", "Gemm", chk_gemm, cu_lower_gemm},
    {"", "MatMul", chk_matmul, cu_lower_matmul},
    {"", "Where", NULL, cu_lower_where},
    {"", "Pad", chk_pad, cu_lower_pad},
    {"", "Resize", chk_resize, cu_lower_resize},
    {"", "InstanceNormalization", chk_instnorm, cu_lower_instnorm},
    {AIT_FUSED_DOMAIN, "FusedConv", chk_conv, cu_lower_conv},
    {AIT_FUSED_DOMAIN, "FusedGemm", chk_gemm, cu_lower_gemm},
    {AIT_FUSED_DOMAIN, "FusedMatMul", chk_matmul, cu_lower_matmul},
    {AIT_FUSED_DOMAIN, "FusedInstanceNorm", chk_instnorm, cu_lower_instnorm},
};

static const char *const unary[] = {"Relu",      "Sigmoid",
                                    "Tanh",      "Erf",
                                    "Exp",       "Log",
                                    "Sqrt",      "Reciprocal",
                                    "Neg",       "Abs",
                                    "Ceil",      "Floor",
                                    "Round",     "Sin",
                                    "Cos",       "Not",
                                    "Sign",      "Softplus",
                                    "HardSwish", "LeakyRelu",
                                    "Elu",       "HardSigmoid",
                                    "Gelu",      "Clip",
                                    "Selu",      "ThresholdedRelu",
                                    "IsNaN",     "IsInf",
                                    NULL};

static const cu_op_row unary_row = {"", "", chk_unary, cu_lower_unary};
static const cu_op_row reduce_row = {"", "", chk_reduce, cu_lower_reduce};
static const cu_op_row binary_row = {"", "", chk_binary, cu_lower_binary};

const cu_op_row *cu_op_find(const char *domain, const char *op) {
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    if (!strcmp(rows[i].domain, domain ? domain : "") && !strcmp(rows[i].op, op)) return &rows[i];
  if (domain && domain[0]) return NULL;
  for (int i = 0; unary[i]; i++)
    if (!strcmp(unary[i], op)) return &unary_row;
  if (cu_is_reduce(op)) return &reduce_row;
  return cu_binary_code(op) >= 0 ? &binary_row : NULL;
}

#endif
