/* Which nodes get quantized: MatMul, Gemm and Conv nodes with a constant
 * weight, narrowed by the configured op types, name patterns, minimum weight
 * size and the caller's callback; then the pre-flight checks of the format
 * on exactly those nodes, so a build fails before any work is done. */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/quant/quant.h"
#include "core/error.h"
#include "ops/fused_impl.h"

static const char *node_name(const ait_node *n) { return n->name ? n->name : ""; }

/* A constant float weight of rank `lo`..`hi` as input `idx` of node n. */
static const ait_value *const_weight(const ait_graph *g, const ait_node *n, int idx, int lo,
                                     int hi) {
  if (n->n_in <= idx || n->in[idx] < 0) return NULL;
  const ait_value *v = &g->values[n->in[idx]];
  const ait_tensor *t = v->init;
  if (!t || t->kind != AIT_KIND_TENSOR || t->rank < lo || t->rank > hi) return NULL;
  if (t->dtype != AIT_FLOAT32 && t->dtype != AIT_BFLOAT16 && t->dtype != AIT_FLOAT16) return NULL;
  return v;
}

bool qnt_site_of(const ait_graph *g, int k, qnt_site *s) {
  const ait_node *n = &g->nodes[k];
  memset(s, 0, sizeof *s);
  s->node = k;
  const char *op = n->op_type;
  if (n->domain && n->domain[0]) {
    /* native's fused ops: the product, then bias / residual / activation */
    if (strcmp(n->domain, AIT_FUSED_DOMAIN) || strncmp(op, "Fused", 5)) return false;
    op += 5;
    s->fused = true;
  }
  const ait_value *w = NULL;
  if (!strcmp(op, "MatMul")) {
    s->kind = QNT_K_MATMUL;
    if (!(w = const_weight(g, n, 1, 2, 2))) return false;
    s->K = w->init->dims[0];
    s->N = w->init->dims[1];
  } else if (!strcmp(op, "Gemm")) {
    s->kind = QNT_K_GEMM;
    if (!(w = const_weight(g, n, 1, 2, 2))) return false;
    bool tb = ait_attr_int(n, "transB", 0) != 0;
    s->K = w->init->dims[tb ? 1 : 0];
    s->N = w->init->dims[tb ? 0 : 1];
  } else if (!strcmp(op, "Gather") && !s->fused) {
    /* an embedding table: constant [rows, width], rows looked up */
    s->kind = QNT_K_GATHER;
    int64_t axis = ait_attr_int(n, "axis", 0);
    if ((axis != 0 && axis != -2) || !(w = const_weight(g, n, 0, 2, 2))) return false;
    if (n->n_in < 2 || n->in[1] < 0 || nat_is_const(g, n->in[1])) return false;
    s->N = w->init->dims[0];
    s->K = w->init->dims[1];
  } else if (!strcmp(op, "Conv")) {
    s->kind = QNT_K_CONV;
    if (!(w = const_weight(g, n, 1, 3, AIT_MAX_RANK))) return false;
    int64_t group = ait_attr_int(n, "group", 1);
    if (group < 1 || w->init->dims[0] % group) return false;
    s->N = w->init->dims[0];
    s->K = 1;
    for (int i = 1; i < w->init->rank; i++)
      s->K *= w->init->dims[i];
  } else {
    return false;
  }
  if (s->N < 1 || s->K < 1) return false;
  s->wval = (int)(w - g->values);
  s->wrank = w->init->rank;
  memcpy(s->wdims, w->init->dims, sizeof(int64_t) * (size_t)s->wrank);
  return true;
}

const char *qnt_site_op(const qnt_site *s) {
  static const char *const names[] = {"MatMul", "Gemm", "Conv", "Gather"};
  return names[s->kind];
}

/* "MatMul node 'fc1'": named by the op the user wrote, not native's fused form. */
static const char *site_desc(const ait_graph *g, const qnt_site *s, char *buf, size_t n) {
  snprintf(buf, n, "%s node '%s'", qnt_site_op(s), node_name(&g->nodes[s->node]));
  return buf;
}

static unsigned op_bit(qnt_kind k) {
  static const unsigned bits[] = {QNT_OP_MATMUL, QNT_OP_GEMM, QNT_OP_CONV, QNT_OP_GATHER};
  return bits[k];
}

static bool filter_admits(const qnt_config *c, const ait_graph *g, const qnt_site *s,
                          const ait_build_info *info) {
  const ait_node *n = &g->nodes[s->node];
  if (!(c->ops & op_bit(s->kind))) return false;
  for (int i = 0; i < c->n_exclude; i++)
    if (fnmatch(c->exclude[i], node_name(n), 0) == 0) return false;
  if (ait_tensor_numel(g->values[s->wval].init) < c->min_weight) return false;
  if (info && info->node_filter &&
      !info->node_filter(info->node_filter_user, qnt_site_op(s), node_name(n)))
    return false;
  return true;
}

/* What the microscaling formats need of one weight; "" when it qualifies. */
static void mx_node_problems(const qnt_config *c, const ait_graph *g, const qnt_site *s, char *buf,
                             size_t n) {
  const ait_tensor *w = g->values[s->wval].init;
  const char *fmt = c->weights == QNT_MXFP8 ? "mxfp8" : "nvfp4";
  size_t at = 0;
  buf[0] = '\0';
  if (w->dtype != AIT_BFLOAT16)
    at += (size_t)snprintf(buf + at, n - at, "; its weight '%s' is %s, %s needs bfloat16 weights",
                           g->values[s->wval].name, ait_dtype_name(w->dtype), fmt);
  if (at < n && c->weights == QNT_MXFP8 && s->K % 32)
    at += (size_t)snprintf(buf + at, n - at,
                           "; its reduction dimension %lld is not divisible by 32 (mxfp8 blocks)",
                           (long long)s->K);
  if (at < n && c->weights == QNT_NVFP4 && (s->K % 16 || s->N % 16))
    snprintf(buf + at, n - at,
             "; its weight dimensions %lld x %lld (output x reduction) are not both divisible "
             "by 16 (nvfp4 blocks)",
             (long long)s->N, (long long)s->K);
}

/* mxfp8dq / nvfp4dq: the CPU has no native microscaling arithmetic, so the
 * check names the hardware requirement, the first selected node, and the
 * first node that would also fail the dtype/shape requirements. */
static ait_status mx_preflight(const qnt_config *c, const ait_graph *g, const qnt_site *sites,
                               int n) {
  char label[64], why[320] = "", bad[400] = "";
  const ait_node *first_bad = NULL;
  for (int i = 0; i < n && !first_bad; i++) {
    mx_node_problems(c, g, &sites[i], why, sizeof why);
    if (why[0]) {
      char d[160];
      first_bad = &g->nodes[sites[i].node];
      snprintf(bad, sizeof bad, "; %s fails too%s", site_desc(g, &sites[i], d, sizeof d), why);
    }
  }
  char first_desc[160];
  site_desc(g, &sites[0], first_desc, sizeof first_desc);
  return ait_err(AIT_E_UNSUPPORTED,
                 "quant: %s needs hardware with native %s support (NVIDIA compute capability 10.0 "
                 "or newer) and bfloat16 weights; this backend runs on the CPU, which has none "
                 "(offending node: %s, the first of %d selected)%s",
                 qnt_config_label(c, label, sizeof label),
                 c->weights == QNT_MXFP8 ? "MXFP8" : "NVFP4", first_desc, n, bad);
}

ait_status qnt_select(const qnt_config *c, const ait_graph *g, const ait_build_info *info,
                      qnt_site **sites, int *n) {
  *sites = NULL;
  *n = 0;
  qnt_site *out = calloc((size_t)g->n_nodes + 1, sizeof *out);
  if (!out) return ait_err(AIT_E_NOMEM, "out of memory");
  int candidates = 0;
  for (int k = 0; k < g->n_nodes; k++) {
    qnt_site s;
    if (!qnt_site_of(g, k, &s)) continue;
    candidates++;
    if (filter_admits(c, g, &s, info)) out[(*n)++] = s;
  }
  ait_status st = AIT_OK;
  char label[64];
  if (*n == 0) {
    st = ait_err(AIT_E_UNSUPPORTED,
                 "quant: no node to quantize: the filter keeps none of the %d MatMul/Gemm/Conv/"
                 "Gather nodes with constant weights",
                 candidates);
  } else if (c->weights == QNT_MXFP8 || c->weights == QNT_NVFP4) {
    st = mx_preflight(c, g, out, *n);
  } else {
    for (int i = 0; i < *n && !st; i++) {
      const ait_value *w = &g->values[out[i].wval];
      char d[160];
      if (w->init->dtype != AIT_FLOAT32)
        st = ait_err(AIT_E_UNSUPPORTED,
                     "quant: %s: %s weight '%s' is %s; the CPU kernels quantize float32 weights",
                     qnt_config_label(c, label, sizeof label), site_desc(g, &out[i], d, sizeof d),
                     w->name, ait_dtype_name(w->init->dtype));
    }
  }
  if (st) {
    free(out);
    *n = 0;
    return st;
  }
  *sites = out;
  return AIT_OK;
}
