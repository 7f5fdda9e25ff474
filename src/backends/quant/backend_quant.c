/* Backend `quant`: int8 / fp8 weight quantization with CPU kernels (see
 * quant.h for the pieces and docs/quantization.md for the user's view).
 * Written "quant:preset=int8dq"; the default preset is fp8wo, as torchao's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/quant/quant.h"
#include "core/error.h"
#include "ops/op.h"
#include "runtime/eager.h"

/* exclude= and config= take free text: an ENUM without choices. */
static const ait_option_def quant_options[] = {
    {"preset", AIT_OPT_ENUM, "fp8wo", "int8wo|int8dq|fp8wo|fp8dq|mxfp8dq|nvfp4dq",
     "int8/fp8 weights, wo = weight-only, dq = dynamically quantized activations too; "
     "mxfp8dq/nvfp4dq need NVIDIA compute capability >= 10.0"},
    {"weights", AIT_OPT_ENUM, "int8", "int8|fp8|mxfp8|nvfp4", "custom: weight format"},
    {"granularity", AIT_OPT_ENUM, "channel", "tensor|channel|group",
     "custom: one scale per tensor, per output channel or per group along the reduction axis"},
    {"group", AIT_OPT_INT, "128", "16..65536", "custom: group length (a multiple of 16)"},
    {"symmetric", AIT_OPT_BOOL, "on", NULL, "custom: off = int8 with a zero point"},
    {"scale", AIT_OPT_ENUM, "absmax", "absmax|percentile",
     "custom: scale from max |w| or from a percentile of |w| (clips outliers)"},
    {"percentile", AIT_OPT_FLOAT, "99.99", NULL, "custom: the percentile of scale=percentile"},
    {"act", AIT_OPT_BOOL, "off", NULL,
     "custom: quantize activations per row at run time (int8 or fp8, as the weights)"},
    {"outliers", AIT_OPT_FLOAT, "0", NULL,
     "custom, int8 with act=on: clip each activation row at this many times its rms and add "
     "the (at most 8) elements above back in float (int8dq uses 4; 0: absmax per row)"},
    {"attention", AIT_OPT_ENUM, "fp32", "fp32|bf16",
     "custom: attention's two products (activations x activations) in bfloat16 with float "
     "sums on AVX512-BF16 CPUs (the dq presets: bf16)"},
    {"ops", AIT_OPT_STRING, "MatMul+Gemm+Conv+Gather", NULL,
     "filter: op types to quantize, joined by + (products with constant weights; Gather: "
     "embedding tables)"},
    {"exclude", AIT_OPT_STRING, "", NULL,
     "filter: node-name patterns (fnmatch, joined by +) kept in float, e.g. *classifier*"},
    {"min_weight", AIT_OPT_INT, "0", "0..1000000000000",
     "filter: weights with fewer elements stay float"},
    {"config", AIT_OPT_STRING, "", NULL,
     "JSON file: {\"quantization\": \"int8dq\"} or the full form (docs/quantization.md)"},
    {"threads", AIT_OPT_INT, "auto", "1..256", "threads of the quantized kernels (auto: cores)"},
    {"isa", AIT_OPT_ENUM, "auto", "auto|avx512|avx2|portable",
     "level of the whole state, as native:isa (auto: the CPU's, capped by AIT_MAX_ISA); "
     "avx512 uses VNNI/BF16 where present, avx2 AVX-VNNI where present"},
    {"kernels", AIT_OPT_ENUM, "auto", "auto|avx512|avx2|portable",
     "caps quant's own kernels below the state's level (native's kernels keep isa's)"},
};

static bool quant_available(char *why, size_t n) { return true; }

static bool has_subgraph(const ait_node *node) {
  for (int k = 0; k < node->n_attrs; k++)
    if (node->attrs[k].g) return true;
  return false;
}

static bool quant_supports(const ait_backend_config *cfg, const ait_graph *g, const ait_node *node,
                           char *why, size_t n) {
  if (has_subgraph(node)) {
    snprintf(why, n, "%s has a subgraph; quant runs graphs without control flow", node->op_type);
    return false;
  }
  if (node->op && node->op->kernel) return true;
  const char *reason = "unknown op";
  ait_op_lookup(node->domain, node->op_type, node->opset, &reason);
  snprintf(why, n,
           "%s at opset %d: %s (quant runs every op it does not quantize on native, which "
           "runs the ops the reference runs)",
           node->op_type, node->opset, reason);
  return false;
}

/* Conv weights [M][Cg][kernel...] in (kernel offset, channel) order along
 * the reduction axis, as quant_ops.c's channel-last im2row reads them. A new
 * array, or NULL on no memory. */
static float *conv_weight_kc(const ait_tensor *W, const qnt_site *s) {
  int64_t Cg = s->wdims[1], kn = s->K / Cg;
  float *t = malloc(sizeof(float) * (size_t)(s->N * s->K));
  if (!t) return NULL;
  const float *w = W->data;
  for (int64_t m = 0; m < s->N; m++)
    for (int64_t c = 0; c < Cg; c++)
      for (int64_t kk = 0; kk < kn; kk++)
        t[m * s->K + kk * Cg + c] = w[m * s->K + c * kn + kk];
  return t;
}

static ait_status quantize_site(const qnt_config *c, const ait_graph *g, const qnt_site *s,
                                qnt_weight *w) {
  const ait_tensor *W = g->values[s->wval].init;
  const ait_node *n = &g->nodes[s->node];
  float *kc = NULL;
  if (s->kind == QNT_K_CONV && !(kc = conv_weight_kc(W, s)))
    return ait_err(AIT_E_NOMEM, "out of memory");
  bool rows_major = s->kind == QNT_K_CONV || s->kind == QNT_K_GATHER ||
                    (s->kind == QNT_K_GEMM && ait_attr_int(n, "transB", 0) != 0);
  /* MatMul/Gemm weights are [K, N]: element (n, k) at k*N + n */
  ait_status st = qnt_weight_quantize(c, kc ? kc : W->data, s->N, s->K, rows_major ? s->K : 1,
                                      rows_major ? 1 : s->N, w);
  free(kc);
  if (st) return ait_err_prefix(st, "%s", ait_node_desc(n));
  if (s->kind == QNT_K_GEMM || (s->kind == QNT_K_MATMUL && s->fused)) {
    float alpha = ait_attr_float(n, "alpha", 1.0f);
    for (int64_t i = 0; i < w->N * w->G; i++)
      w->scale[i] *= alpha;
  }
  return AIT_OK;
}

static ait_status quant_build(const ait_backend_config *cfg, const ait_graph *g,
                              const ait_build_info *info, void **state) {
  qnt_config c;
  AIT_TRY(qnt_config_resolve(cfg, &c));
  AIT_TRY(ait_eager_check(g));
  for (int i = 0; i < g->n_nodes; i++)
    if (has_subgraph(&g->nodes[i]))
      return ait_err(AIT_E_UNSUPPORTED,
                     "quant: %s has a subgraph; quant runs graphs without "
                     "control flow",
                     ait_node_desc(&g->nodes[i]));
  /* the microscaling formats fail their pre-flight check on this CPU:
   * report it before any work */
  qnt_site *sites = NULL;
  int n = 0;
  if (c.weights == QNT_MXFP8 || c.weights == QNT_NVFP4) {
    AIT_TRY(qnt_select(&c, g, info, &sites, &n));
    free(sites);
    return ait_err(AIT_E_INTERNAL, "quant: %s passed its pre-flight check on a CPU",
                   qnt_wtype_name(c.weights));
  }
  ait_graph *pg = NULL;
  AIT_TRY(qnt_graph_prepare(g, c.attn_bf16, &pg));
  ait_status st = qnt_select(&c, pg, info, &sites, &n);
  qnt_node *q = st ? NULL : calloc((size_t)n, sizeof *q);
  if (!st && !q) st = ait_err(AIT_E_NOMEM, "out of memory");
  /* The vpmaddubsw tiles (AVX2 without VNNI) multiply 7-bit weights: per
   * output channel, half a bit lost on every weight took all-MiniLM-L6's
   * int8dq from 0.994 to 0.962 cosine against fp32 (its layer-0 output
   * products carry weights 15-39x their channel's rms). A scale per
   * QNT_GROUP7 steps of the reduction axis confines such weights to their
   * group, and quantizing straight to 7 bits rounds each weight once:
   * 0.996 there. The products only (tables are read by rows); the saved
   * weights record their group length. */
  qnt_config c7 = c;
  if (c.weights == QNT_INT8 && c.symmetric && c.act &&
      qnt_state_layout(&c, QNT_INT8) == QNT_L_QUAD7) {
    c7.w7 = true;
    if (c7.gran == QNT_CHANNEL || (c7.gran == QNT_GROUP && c7.group > QNT_GROUP7))
      c7.gran = QNT_GROUP, c7.group = QNT_GROUP7;
  }
  for (int i = 0; i < n && !st; i++) {
    q[i].site = sites[i];
    /* tables and grouped convolutions run on rows, not on QUAD7 */
    bool product =
        sites[i].kind != QNT_K_GATHER &&
        !(sites[i].kind == QNT_K_CONV && ait_attr_int(&pg->nodes[sites[i].node], "group", 1) != 1);
    st = quantize_site(product ? &c7 : &c, pg, &sites[i], &q[i].w);
  }
  free(sites);
  if (st) {
    for (int i = 0; q && i < n; i++)
      qnt_weight_free(&q[i].w);
    free(q);
    ait_graph_free(pg);
    return st;
  }
  qnt_state *s = NULL;
  AIT_TRY(qnt_state_make(&c, pg, q, n, &s));
  s->n_quantized = n;
  *state = s;
  return AIT_OK;
}

static ait_status quant_infer(void *state, const ait_tensor *const *in, int n_in,
                              ait_tensor **out) {
  return qnt_state_run(state, in, n_in, out);
}

/* The quantized weights are the state; they stay (a quarter of the float
 * model) while other candidates are measured. What native's executor built
 * around them (plans, arena, pool, scratch) goes, and comes back on the next
 * run. */
static ait_status quant_activate(void *state) { return AIT_OK; }

static ait_status quant_deactivate(void *state) {
  qnt_state *s = state;
  nat_exec_release(s->ns);
  return AIT_OK;
}

static void quant_idle(void *state) { nat_state_park(((qnt_state *)state)->ns); }

static ait_status quant_save(void *state, const char *dir) { return qnt_save(state, dir); }

static ait_status quant_load(const ait_backend_config *cfg, const ait_graph *g, const char *dir,
                             void **state) {
  qnt_config saved, asked;
  memset(&saved, 0, sizeof saved);
  qnt_node *q = NULL;
  int n = 0;
  ait_graph *pg = NULL;
  AIT_TRY(qnt_graph_prepare(g, false, &pg));
  ait_status st = qnt_load(pg, dir, &saved, &q, &n);
  if (!st && saved.attn_bf16) st = nat_attention_bf16(pg); /* marks nodes, keeps indices */
  if (st) {
    for (int i = 0; q && i < n; i++)
      qnt_weight_free(&q[i].w);
    free(q);
    ait_graph_free(pg);
    return st;
  }
  qnt_config_runtime(cfg, &saved);
  /* a config file may be gone by now: the saved form is authoritative, but
   * a configuration that resolves must agree with it */
  if (qnt_config_resolve(cfg, &asked) == AIT_OK && !qnt_config_same_quant(&asked, &saved)) {
    char a[64], b[64];
    for (int i = 0; i < n; i++)
      qnt_weight_free(&q[i].w);
    free(q);
    ait_graph_free(pg);
    return ait_err(AIT_E_INVALID_ARG,
                   "quant: %s holds weights quantized as %s; the configuration asks for %s", dir,
                   qnt_config_label(&saved, a, sizeof a), qnt_config_label(&asked, b, sizeof b));
  }
  ait_err_clear();
  qnt_state *s = NULL;
  AIT_TRY(qnt_state_make(&saved, pg, q, n, &s));
  *state = s;
  return AIT_OK;
}

static void quant_destroy(void *state) { qnt_state_free(state); }

static const char *quant_precision(const ait_backend_config *cfg) {
  qnt_config c;
  if (qnt_config_resolve(cfg, &c) != AIT_OK) {
    ait_err_clear();
    return "int8";
  }
  return qnt_config_precision(&c);
}

/* Quantization changes numerics on purpose: a candidate only when named
 * (or added by memory pressure), never by default. */
static const char *const quant_variants[] = {NULL};

const ait_backend_iface ait_backend_quant = {
    .name = "quant",
    .summary = "int8/fp8 weight quantization (presets int8wo, int8dq, fp8wo, fp8dq): VNNI and "
               "AVX512-BF16 kernels on native's executor, native's kernels for the rest",
    .options = quant_options,
    .n_options = (int)(sizeof quant_options / sizeof quant_options[0]),
    .available = quant_available,
    .supports = quant_supports,
    .build = quant_build,
    .infer = quant_infer,
    .activate = quant_activate,
    .deactivate = quant_deactivate,
    .idle = quant_idle,
    .save = quant_save,
    .load = quant_load,
    .destroy = quant_destroy,
    .precision = quant_precision,
    .variants = quant_variants,
};
