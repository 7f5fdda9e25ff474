/* What the onednn backend runs, node by node, and why not when it does not.
 *
 * Three ways a node runs here: on a oneDNN primitive (float32 tensors; the
 * table below), folded (every input constant: evaluated once at build, or
 * derived from input shapes: evaluated once per input signature), or as
 * glue on plain buffers with the reference kernel (Gather, Cast, Erf,
 * non-float Concat: small data movement around the primitives). */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/onednn/onednn.h"
#include "ir/passes/passes.h"

bool dn_node_foldable(const ait_node *n) { return ait_node_pure(n); }

static bool is_shape_op(const ait_node *n) {
  return !n->domain[0] && (!strcmp(n->op_type, "Shape") || !strcmp(n->op_type, "Size"));
}

void dn_classify(const ait_graph *g, uint8_t *cls) {
  for (int v = 0; v < g->n_values; v++) {
    const ait_value *val = &g->values[v];
    cls[v] = val->producer < 0 && val->init && val->init->kind == AIT_KIND_TENSOR && !val->outer
                 ? DN_V_CONST
                 : DN_V_RUNTIME;
  }
  for (int i = 0; i < g->n_nodes; i++) {
    const ait_node *n = &g->nodes[i];
    uint8_t c = DN_V_RUNTIME;
    if (is_shape_op(n) && n->op) {
      c = DN_V_STATIC;
    } else if (dn_node_foldable(n)) {
      c = DN_V_CONST;
      for (int k = 0; k < n->n_in; k++) {
        int v = n->in[k];
        if (v < 0) continue;
        if (cls[v] == DN_V_RUNTIME) c = DN_V_RUNTIME;
        if (cls[v] == DN_V_STATIC && c == DN_V_CONST) c = DN_V_STATIC;
      }
    }
    for (int k = 0; k < n->n_out; k++)
      if (n->out[k] >= 0) cls[n->out[k]] = c;
  }
}

bool dn_is_graph_output(const ait_graph *g, int v) {
  for (int i = 0; i < g->n_outputs; i++)
    if (g->outputs[i] == v) return true;
  return false;
}

int dn_value_uses(const ait_graph *g, int v) {
  int uses = dn_is_graph_output(g, v) ? 1 : 0;
  for (int i = 0; i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i].n_in; k++)
      uses += g->nodes[i].in[k] == v;
  return uses;
}

bool dn_const_scalar(const ait_graph *g, int v, float *out) {
  if (v < 0 || !g->values[v].init) return false;
  const ait_tensor *t = g->values[v].init;
  if (t->kind != AIT_KIND_TENSOR || ait_tensor_numel(t) != 1) return false;
  const ait_dtype_traits *tr = ait_dtype_traits_of(t->dtype);
  if (!tr || !(tr->is_float || tr->is_int)) return false;
  *out = (float)ait_load_f64(tr, t->data, 0);
  return true;
}

/* ---- op kinds ----------------------------------------------------------- */

typedef struct kind_row {
  const char *op;
  dn_opk kind;
} kind_row;

static const kind_row kinds[] = {
    {"Conv", DN_K_CONV},
    {"MatMul", DN_K_MATMUL},
    {"Gemm", DN_K_GEMM},
    {"MaxPool", DN_K_POOL},
    {"AveragePool", DN_K_POOL},
    {"GlobalAveragePool", DN_K_POOL},
    {"GlobalMaxPool", DN_K_POOL},
    {"Add", DN_K_BINARY},
    {"Sub", DN_K_BINARY},
    {"Mul", DN_K_BINARY},
    {"Div", DN_K_BINARY},
    {"Max", DN_K_BINARY},
    {"Min", DN_K_BINARY},
    {"Softmax", DN_K_SOFTMAX},
    {"LogSoftmax", DN_K_SOFTMAX},
    {"LayerNormalization", DN_K_LNORM},
    {"BatchNormalization", DN_K_BNORM},
    {"Concat", DN_K_CONCAT},
    {"Reshape", DN_K_VIEW},
    {"Flatten", DN_K_VIEW},
    {"Squeeze", DN_K_VIEW},
    {"Unsqueeze", DN_K_VIEW},
    {"Identity", DN_K_VIEW},
    {"Dropout", DN_K_VIEW},
    {"Transpose", DN_K_TRANSPOSE},
    {"Gather", DN_K_HOST},
    {"Cast", DN_K_HOST},
    {"Erf", DN_K_HOST},
};

dn_opk dn_op_kind(const ait_node *n) {
  if (n->domain[0] && strcmp(n->domain, "ai.onnx")) return DN_K_NONE;
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (!strcmp(n->op_type, kinds[i].op)) return kinds[i].kind;
  /* unary ops by name only (parameters are checked by dn_unary_elts) */
  static const char *const unary[] = {"Relu",       "LeakyRelu", "Elu",  "Selu",        "Sigmoid",
                                      "Tanh",       "Exp",       "Log",  "Sqrt",        "Abs",
                                      "Neg",        "Softplus",  "Clip", "HardSigmoid", "HardSwish",
                                      "Reciprocal", "Pow",       "Mish", "Round",       "Gelu"};
  for (size_t i = 0; i < sizeof unary / sizeof unary[0]; i++)
    if (!strcmp(n->op_type, unary[i])) return DN_K_UNARY;
  return DN_K_NONE;
}

/* ---- unary ops as eltwise steps ----------------------------------------- */

static bool clip_bounds(const ait_graph *g, const ait_node *n, float *lo, float *hi) {
  *lo = -FLT_MAX, *hi = FLT_MAX;
  if (n->opset < 11) {
    *lo = ait_attr_float(n, "min", -FLT_MAX);
    *hi = ait_attr_float(n, "max", FLT_MAX);
    return true;
  }
  if (n->n_in > 1 && n->in[1] >= 0 && !dn_const_scalar(g, n->in[1], lo)) return false;
  if (n->n_in > 2 && n->in[2] >= 0 && !dn_const_scalar(g, n->in[2], hi)) return false;
  return true;
}

bool dn_unary_elts(const ait_graph *g, const ait_node *n, dn_elt *e, int *count) {
  const char *op = n->op_type;
  *count = 1;
  e[0] = (dn_elt){dnnl_alg_kind_undef, 0.f, 0.f};
  if (!strcmp(op, "Relu")) {
    e[0].alg = dnnl_eltwise_relu;
  } else if (!strcmp(op, "LeakyRelu")) {
    e[0] = (dn_elt){dnnl_eltwise_relu, ait_attr_float(n, "alpha", 0.01f), 0.f};
  } else if (!strcmp(op, "Elu")) {
    e[0] = (dn_elt){dnnl_eltwise_elu, ait_attr_float(n, "alpha", 1.0f), 0.f};
  } else if (!strcmp(op, "Selu")) {
    e[0] = (dn_elt){dnnl_eltwise_elu, ait_attr_float(n, "alpha", 1.67326319217681884765625f), 0.f};
    e[1] =
        (dn_elt){dnnl_eltwise_linear, ait_attr_float(n, "gamma", 1.05070102214813232421875f), 0.f};
    *count = 2;
  } else if (!strcmp(op, "Sigmoid")) {
    e[0].alg = dnnl_eltwise_logistic;
  } else if (!strcmp(op, "Tanh")) {
    e[0].alg = dnnl_eltwise_tanh;
  } else if (!strcmp(op, "Exp")) {
    e[0].alg = dnnl_eltwise_exp;
  } else if (!strcmp(op, "Log")) {
    e[0].alg = dnnl_eltwise_log;
  } else if (!strcmp(op, "Sqrt")) {
    e[0].alg = dnnl_eltwise_sqrt;
  } else if (!strcmp(op, "Abs")) {
    e[0].alg = dnnl_eltwise_abs;
  } else if (!strcmp(op, "Neg")) {
    e[0] = (dn_elt){dnnl_eltwise_linear, -1.f, 0.f};
  } else if (!strcmp(op, "Softplus")) {
    e[0] = (dn_elt){dnnl_eltwise_soft_relu, 0.f, 0.f};
  } else if (!strcmp(op, "HardSwish")) {
    e[0].alg = dnnl_eltwise_hardswish;
  } else if (!strcmp(op, "Mish")) {
    e[0].alg = dnnl_eltwise_mish;
  } else if (!strcmp(op, "Gelu") && n->opset >= 20) {
    const char *ap = ait_attr_str(n, "approximate", "none");
    if (!strcmp(ap, "none"))
      e[0].alg = dnnl_eltwise_gelu_erf;
    else if (!strcmp(ap, "tanh"))
      e[0].alg = dnnl_eltwise_gelu_tanh;
    else
      return false;
  } else if (!strcmp(op, "Round")) {
    e[0].alg = dnnl_eltwise_round;
  } else if (!strcmp(op, "Reciprocal")) {
    e[0] = (dn_elt){dnnl_eltwise_pow, 1.f, -1.f};
  } else if (!strcmp(op, "HardSigmoid")) {
    e[0] = (dn_elt){dnnl_eltwise_linear, ait_attr_float(n, "alpha", 0.2f),
                    ait_attr_float(n, "beta", 0.5f)};
    e[1] = (dn_elt){dnnl_eltwise_clip_v2, 0.f, 1.f};
    *count = 2;
  } else if (!strcmp(op, "Clip")) {
    float lo, hi;
    if (!clip_bounds(g, n, &lo, &hi)) return false;
    e[0] = (dn_elt){dnnl_eltwise_clip_v2, lo, hi};
    if (lo == 0.f && hi == FLT_MAX) e[0] = (dn_elt){dnnl_eltwise_relu, 0.f, 0.f};
  } else if (!strcmp(op, "Pow")) {
    float p;
    if (n->n_in < 2 || !dn_const_scalar(g, n->in[1], &p)) return false;
    e[0] = (dn_elt){dnnl_eltwise_pow, 1.f, p};
    if (p == 2.f) e[0] = (dn_elt){dnnl_eltwise_square, 0.f, 0.f};
    if (p == 1.f) e[0] = (dn_elt){dnnl_eltwise_linear, 1.f, 0.f};
    if (p == 0.5f) e[0] = (dn_elt){dnnl_eltwise_sqrt, 0.f, 0.f};
  } else {
    return false;
  }
  return true;
}

/* ---- supports() ---------------------------------------------------------- */

static ait_dtype vdt(const ait_graph *g, int v) {
  return v >= 0 ? g->values[v].dtype : AIT_UNDEFINED;
}
static int vrank(const ait_graph *g, int v) { return v >= 0 ? g->values[v].rank : -1; }

/* Outputs past the first must be absent or unused (Dropout mask, MaxPool
 * Indices, LayerNormalization Mean/InvStdDev). */
static bool extra_outputs_unused(const ait_graph *g, const ait_node *n) {
  for (int k = 1; k < n->n_out; k++)
    if (n->out[k] >= 0 && dn_value_uses(g, n->out[k]) > 0) return false;
  return true;
}

#define WHY(...) (snprintf(why, nw, __VA_ARGS__), false)

static bool need_f32(const ait_graph *g, const ait_node *n, int k, char *why, size_t nw) {
  int v = k < n->n_in ? n->in[k] : -1;
  if (v < 0) return WHY("%s: input %d is missing", n->op_type, k);
  if (vdt(g, v) != AIT_FLOAT32)
    return WHY("%s: input %d is %s (oneDNN ops here take float32)", n->op_type, k,
               ait_dtype_name(vdt(g, v)));
  return true;
}

static bool need_const(const uint8_t *cls, const ait_node *n, int k, const char *what, char *why,
                       size_t nw) {
  int v = k < n->n_in ? n->in[k] : -1;
  if (v >= 0 && cls[v] != DN_V_CONST)
    return WHY("%s: %s (input %d) must be a constant", n->op_type, what, k);
  return true;
}

static bool check_conv(const ait_graph *g, const uint8_t *cls, const ait_node *n, char *why,
                       size_t nw) {
  if (!need_f32(g, n, 0, why, nw) || !need_f32(g, n, 1, why, nw)) return false;
  if (!need_const(cls, n, 1, "the weights", why, nw) || !need_const(cls, n, 2, "the bias", why, nw))
    return false;
  int r = vrank(g, n->in[0]);
  if (r >= 0 && (r < 3 || r > 5)) return WHY("Conv: %d-D input (oneDNN takes 1-D to 3-D)", r - 2);
  return true;
}

static bool check_matmul(const ait_graph *g, const uint8_t *cls, const ait_node *n, bool gemm,
                         char *why, size_t nw) {
  if (!need_f32(g, n, 0, why, nw) || !need_f32(g, n, 1, why, nw)) return false;
  for (int k = 0; k < 2; k++) {
    int r = vrank(g, n->in[k]);
    if (r < 0) return WHY("%s: input %d has unknown rank", n->op_type, k);
    if (r < 2) return WHY("%s: input %d is %d-D (needs 2-D or more)", n->op_type, k, r);
    if (gemm && r != 2) return WHY("Gemm: input %d is %d-D", k, r);
  }
  if (gemm && n->n_in > 2 && n->in[2] >= 0) {
    if (vdt(g, n->in[2]) != AIT_FLOAT32) return WHY("Gemm: C is not float32");
    if (vrank(g, n->in[2]) > 2) return WHY("Gemm: C has rank %d", vrank(g, n->in[2]));
  }
  return true;
}

static bool check_pool(const ait_graph *g, const ait_node *n, char *why, size_t nw) {
  if (!need_f32(g, n, 0, why, nw)) return false;
  int r = vrank(g, n->in[0]);
  if (r >= 0 && (r < 3 || r > 5)) return WHY("%s: %d-D input", n->op_type, r);
  if (!extra_outputs_unused(g, n)) return WHY("MaxPool: the Indices output is used");
  if (ait_attr_int(n, "storage_order", 0) != 0) return WHY("MaxPool: storage_order=1");
  return true;
}

static bool check_binary(const ait_graph *g, const uint8_t *cls, const ait_node *n, char *why,
                         size_t nw) {
  if (n->n_in != 2) return WHY("%s with %d inputs (needs 2)", n->op_type, n->n_in);
  for (int k = 0; k < 2; k++)
    if (!need_f32(g, n, k, why, nw)) return false;
  if (cls[n->in[0]] != DN_V_RUNTIME && cls[n->in[1]] != DN_V_RUNTIME)
    return WHY("%s: no runtime input", n->op_type);
  return true;
}

static bool check_view(const ait_graph *g, const uint8_t *cls, const ait_node *n, char *why,
                       size_t nw) {
  if (!extra_outputs_unused(g, n)) return WHY("%s: the second output is used", n->op_type);
  if (!strcmp(n->op_type, "Dropout")) {
    if (n->n_in > 2 && n->in[2] >= 0) return WHY("Dropout: training_mode input");
    return true;
  }
  bool shape_in =
      !strcmp(n->op_type, "Reshape") ||
      ((!strcmp(n->op_type, "Squeeze") || !strcmp(n->op_type, "Unsqueeze")) && n->opset >= 13);
  if (shape_in && n->n_in > 1 && n->in[1] >= 0 && cls[n->in[1]] == DN_V_RUNTIME)
    return WHY("%s: its shape/axes input is computed at run time (must be constant or come "
               "from input shapes)",
               n->op_type);
  if (!strcmp(n->op_type, "Reshape") && ait_attr_int(n, "allowzero", 0))
    return WHY("Reshape: allowzero=1");
  return true;
}

static bool check_node(const ait_backend_config *cfg, const ait_graph *g, const uint8_t *cls,
                       const ait_node *n, char *why, size_t nw) {
  /* strings own their characters: copying tensors bytewise would alias them */
  for (int k = 0; k < n->n_in + n->n_out; k++) {
    int v = k < n->n_in ? n->in[k] : n->out[k - n->n_in];
    if (v >= 0 && g->values[v].dtype == AIT_STRING)
      return WHY("%s: string tensors are not handled by the onednn backend", n->op_type);
    if (v >= 0 && g->values[v].type != AIT_VT_TENSOR)
      return WHY("%s: sequences and optionals are not handled by the onednn backend", n->op_type);
  }
  /* constants fold at build; shape arithmetic once per input signature */
  bool all_fixed = true, all_const = true;
  for (int k = 0; k < n->n_in; k++) {
    int v = n->in[k];
    if (v < 0) continue;
    if (cls[v] == DN_V_RUNTIME) all_fixed = all_const = false;
    if (cls[v] == DN_V_STATIC) all_const = false;
  }
  if ((all_fixed || is_shape_op(n)) && n->op && dn_node_foldable(n)) return true;
  if (!n->op) {
    const char *reason = "unknown op";
    ait_op_lookup(n->domain, n->op_type, n->opset, &reason);
    return WHY("%s at opset %d: %s", n->op_type, n->opset, reason);
  }
  (void)all_const;
  dn_elt e[2];
  int cnt;
  switch (dn_op_kind(n)) {
  case DN_K_CONV: return check_conv(g, cls, n, why, nw);
  case DN_K_MATMUL: return check_matmul(g, cls, n, false, why, nw);
  case DN_K_GEMM: return check_matmul(g, cls, n, true, why, nw);
  case DN_K_POOL: return check_pool(g, n, why, nw);
  case DN_K_UNARY:
    if (!need_f32(g, n, 0, why, nw)) return false;
    if (!dn_unary_elts(g, n, e, &cnt))
      return WHY("%s: its parameters (inputs 1..) must be constant scalars", n->op_type);
    return true;
  case DN_K_BINARY: return check_binary(g, cls, n, why, nw);
  case DN_K_SOFTMAX: return need_f32(g, n, 0, why, nw);
  case DN_K_LNORM:
    if (!need_f32(g, n, 0, why, nw)) return false;
    if (!need_const(cls, n, 1, "Scale", why, nw) || !need_const(cls, n, 2, "B", why, nw))
      return false;
    if (!extra_outputs_unused(g, n)) return WHY("LayerNormalization: Mean/InvStdDev are used");
    return true;
  case DN_K_BNORM:
    if (!need_f32(g, n, 0, why, nw)) return false;
    for (int k = 1; k < 5; k++)
      if (!need_const(cls, n, k, "scale/B/mean/var", why, nw)) return false;
    if (n->n_out > 1 && !extra_outputs_unused(g, n))
      return WHY("BatchNormalization: training outputs are used");
    if (ait_attr_int(n, "training_mode", 0)) return WHY("BatchNormalization: training_mode=1");
    return true;
  case DN_K_CONCAT:
  case DN_K_HOST: return true;
  case DN_K_VIEW: return check_view(g, cls, n, why, nw);
  case DN_K_TRANSPOSE: return true;
  case DN_K_NONE: break;
  }
  return WHY("%s is not an op the onednn backend runs", n->op_type);
}

bool dn_supports(const ait_backend_config *cfg, const ait_graph *g, const ait_node *node, char *why,
                 size_t nw) {
  const char *dt = ait_backend_config_get(cfg, "dtype");
  if (dt && !strcmp(dt, "bf16") && !dn_cpu_has_bf16(why, nw)) return false;
  uint8_t *cls = malloc((size_t)g->n_values + 1);
  if (!cls) return WHY("out of memory");
  dn_classify(g, cls);
  bool ok = check_node(cfg, g, cls, node, why, nw);
  free(cls);
  return ok;
}

bool dn_cpu_has_bf16(char *why, size_t nw) {
  static int cached = -1; /* the CPU does not change under a running process */
  if (cached < 0) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    bool flag = false;
    char line[8192];
    while (f && !flag && fgets(line, sizeof line, f))
      if (!strncmp(line, "flags", 5))
        flag = strstr(line, " avx512_bf16") != NULL || strstr(line, " amx_bf16") != NULL;
    if (f) fclose(f);
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    bool lib = (isa & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16;
    cached = flag ? (lib ? 1 : 2) : 0;
  }
  if (cached == 1) return true;
  if (cached == 0)
    return WHY("dtype=bf16 needs a CPU with avx512_bf16 or amx_bf16 (not in /proc/cpuinfo)");
  return WHY("dtype=bf16: the CPU has bf16 but oneDNN's effective ISA (%d) does not use it",
             (int)dnnl_get_effective_cpu_isa());
}
