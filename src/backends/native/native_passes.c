/* Graph passes of the native backend (fusion lives in native_fuse.c):
 * constant folding, removal of no-op nodes and of Transpose/Reshape pairs,
 * Conv+BatchNormalization folding, on the shared rewriting layer
 * (src/ir/passes/: the folding and simplification passes, the
 * BatchNormalization arithmetic, ait_is_op). Every pass works on the
 * backend's own copy of the graph and marks removed nodes dead;
 * nat_run_passes compacts the graph once at the end. */
#include <stdlib.h>
#include <string.h>

#include "backends/native/native.h"
#include "ir/passes/passes.h"
#include "runtime/eager.h"

ait_status nat_pass_fold_constants(nat_uses *u, nat_pass_stats *s) {
  AIT_TRY(ait_pass_fold_constants(u->g, u->dead, ait_eager_run_node, &s->folded));
  return nat_uses_refresh(u);
}

/* No-ops (Identity, inference Dropout, identity Transposes),
 * then Transpose and Reshape pairs: the shared passes (simplify.c). */
ait_status nat_pass_remove_noops(nat_uses *u, nat_pass_stats *s) {
  AIT_TRY(ait_pass_remove_noops(u->g, u->dead, &s->removed));
  AIT_TRY(ait_pass_remove_pairs(u->g, u->dead, &s->removed));
  return nat_uses_refresh(u);
}

/* ---- Conv + BatchNormalization --------------------------------------- */

/* float32 constant of exactly n elements, or NULL. */
static const float *const_vec(const ait_graph *g, int v, int64_t n) {
  if (!nat_is_const(g, v)) return NULL;
  const ait_tensor *t = g->values[v].init;
  return t->dtype == AIT_FLOAT32 && ait_tensor_numel(t) == n ? t->data : NULL;
}

/* BatchNormalization b computes the inference affine, on an input and an
 * output, and nobody reads its training outputs. */
static bool bn_rewritable(const nat_uses *u, const ait_node *b) {
  if (b->n_in < 5 || b->in[0] < 0 || b->out[0] < 0 || !ait_bn_is_inference(b)) return false;
  for (int k = 1; k < b->n_out; k++)
    if (b->out[k] >= 0 && (u->uses[b->out[k]] > 0 || u->is_out[b->out[k]])) return false;
  return true;
}

typedef ait_status (*bn_rewrite_fn)(nat_uses *u, int bi, bool *done);

/* Every live BatchNormalization through `fn`, counted in s->bn_folded. */
static ait_status each_bn(nat_uses *u, nat_pass_stats *s, bn_rewrite_fn fn) {
  ait_graph *g = u->g;
  for (int i = 0; i < g->n_nodes; i++) {
    if (u->dead[i] || !ait_is_op(&g->nodes[i], "BatchNormalization")) continue;
    bool done = false;
    AIT_TRY(fn(u, i, &done));
    if (done) {
      s->bn_folded++;
      AIT_TRY(nat_uses_refresh(u));
    }
  }
  return AIT_OK;
}

/* Fold BatchNormalization node b into the Conv that produces its input. */
static ait_status fold_one_bn(nat_uses *u, int bi, bool *done) {
  ait_graph *g = u->g;
  ait_node *b = &g->nodes[bi];
  *done = false;
  if (!bn_rewritable(u, b)) return AIT_OK;
  int x = b->in[0], pi = g->values[x].producer;
  if (pi < 0 || u->dead[pi] || !nat_single_use(u, x, bi)) return AIT_OK;
  ait_node *c = &g->nodes[pi];
  if (!ait_is_op(c, "Conv") || c->n_in < 2 || c->out[0] != x) return AIT_OK;
  int wv = c->in[1], bv = c->n_in > 2 ? c->in[2] : -1;
  if (!nat_is_const(g, wv)) return AIT_OK;
  const ait_tensor *W = g->values[wv].init;
  if (W->dtype != AIT_FLOAT32 || W->rank < 3) return AIT_OK;
  int64_t M = W->dims[0], per = ait_tensor_numel(W) / (M ? M : 1);
  const float *scale = const_vec(g, b->in[1], M), *bias = const_vec(g, b->in[2], M);
  const float *mean = const_vec(g, b->in[3], M), *var = const_vec(g, b->in[4], M);
  const float *cb = bv >= 0 ? const_vec(g, bv, M) : NULL;
  if (!scale || !bias || !mean || !var || (bv >= 0 && !cb)) return AIT_OK;
  double eps = ait_attr_float(b, "epsilon", 1e-5f);
  ait_tensor *W2 = ait_tensor_clone(W);
  ait_tensor *B2 = ait_tensor_new(AIT_FLOAT32, 1, &M);
  int *more = realloc(c->in, sizeof(int) * 3);
  if (more) c->in = more;
  if (!W2 || !B2 || !more) {
    ait_tensor_free(W2);
    ait_tensor_free(B2);
    return ait_err(AIT_E_NOMEM, "out of memory folding %s", ait_node_desc(b));
  }
  ait_bn_fold(W2->data, M, per, cb, scale, bias, mean, var, eps, W2->data, B2->data);
  char *wname = g->values[wv].name;
  int nw = nat_add_initializer(g, wname, "_bn", W2);
  if (nw < 0) {
    ait_tensor_free(B2);
    return AIT_E_NOMEM;
  }
  int nbv = nat_add_initializer(g, g->values[nw].name, "_bias", B2);
  if (nbv < 0) return AIT_E_NOMEM;
  c = &g->nodes[pi];
  b = &g->nodes[bi];
  c->in[1] = nw;
  c->in[2] = nbv;
  c->n_in = 3;
  c->out[0] = b->out[0];
  g->values[b->out[0]].producer = pi;
  u->dead[bi] = true;
  *done = true;
  return AIT_OK;
}

ait_status nat_pass_fold_batchnorm(nat_uses *u, nat_pass_stats *s) {
  return each_bn(u, s, fold_one_bn);
}

/* A BatchNormalization that follows no conv (DenseNet's pre-activation
 * BN -> Relu -> Conv on each concat) as the per-channel affine it is in
 * inference: a depthwise 1x1 Conv with weights scale / sqrt(var + eps) and
 * bias bias - mean * that. The epilogue pass then joins the Relu, and the
 * layout pass runs it in NHWC with its neighbours instead of reordering
 * around a BatchNormalization. Native only (nat_run_passes_ex with
 * `attention`): other users of the passes lower BatchNormalization
 * themselves. */
static ait_status bn_to_conv(nat_uses *u, int bi, bool *done) {
  ait_graph *g = u->g;
  ait_node *b = &g->nodes[bi];
  *done = false;
  if (!bn_rewritable(u, b)) return AIT_OK;
  const ait_value *x = &g->values[b->in[0]];
  if (x->rank != 4 || x->dtype != AIT_FLOAT32 || x->dims[1].v < 1) return AIT_OK;
  int64_t C = x->dims[1].v;
  const float *scale = const_vec(g, b->in[1], C), *bias = const_vec(g, b->in[2], C);
  const float *mean = const_vec(g, b->in[3], C), *var = const_vec(g, b->in[4], C);
  if (!scale || !bias || !mean || !var) return AIT_OK;
  double eps = ait_attr_float(b, "epsilon", 1e-5f);
  int64_t wd[4] = {C, 1, 1, 1};
  ait_tensor *W = ait_tensor_new(AIT_FLOAT32, 4, wd), *B = ait_tensor_new(AIT_FLOAT32, 1, &C);
  if (!W || !B) {
    ait_tensor_free(W), ait_tensor_free(B);
    return ait_err(AIT_E_NOMEM, "out of memory rewriting %s", ait_node_desc(b));
  }
  ait_bn_fold(NULL, C, 1, NULL, scale, bias, mean, var, eps, W->data, B->data);
  int wv = nat_add_initializer(g, g->values[b->in[1]].name, "_dw", W);
  if (wv < 0) {
    ait_tensor_free(B);
    return AIT_E_NOMEM;
  }
  int bv = nat_add_initializer(g, g->values[wv].name, "_bias", B);
  if (bv < 0) return AIT_E_NOMEM;
  b = &g->nodes[bi];
  int opset = (int)ait_graph_opset(g, "");
  const ait_op_def *conv = ait_op_lookup("", "Conv", opset > 0 ? opset : 11, NULL);
  char *op = strdup("Conv");
  if (!conv || !op) {
    free(op);
    return ait_err(AIT_E_NOMEM, "out of memory rewriting %s", ait_node_desc(b));
  }
  free(b->op_type);
  b->op_type = op;
  b->opset = opset > 0 ? opset : 11;
  b->op = conv;
  b->in[1] = wv;
  b->in[2] = bv;
  b->n_in = 3;
  b->n_out = 1;
  int64_t k1[2] = {1, 1};
  AIT_TRY(nat_attr_set_int(b, "group", C));
  AIT_TRY(nat_attr_set_ints(b, "kernel_shape", k1, 2));
  *done = true;
  return AIT_OK;
}

static ait_status nat_pass_bn_to_conv(nat_uses *u, nat_pass_stats *s) {
  return each_bn(u, s, bn_to_conv);
}

ait_status nat_run_passes(ait_graph *g, nat_pass_stats *stats) {
  return nat_run_passes_ex(g, stats, false);
}

ait_status nat_run_passes_ex(ait_graph *g, nat_pass_stats *stats, bool attention) {
  return nat_run_passes_for(g, stats, attention, NULL);
}

ait_status nat_run_passes_for(ait_graph *g, nat_pass_stats *stats, bool attention,
                              const nat_accepts *acc) {
  nat_uses u = {.g = g};
  memset(stats, 0, sizeof *stats);
  ait_status st = nat_uses_refresh(&u);
  if (!st) st = nat_pass_fold_constants(&u, stats);
  if (!st) st = nat_pass_remove_noops(&u, stats);
  if (!st) st = nat_pass_fold_batchnorm(&u, stats);
  if (!st) st = nat_pass_fuse(&u, stats, acc ? acc : &nat_accepts_named);
  if (!st && attention) st = nat_pass_bn_to_conv(&u, stats);
  if (!st && attention) st = nat_pass_epilogue(&u, stats);
  if (!st && attention) st = nat_pass_attention(&u, stats);
  if (!st) st = nat_graph_compact(g, u.dead);
  if (!st) st = nat_resolve_fused(g);
  nat_uses_free(&u);
  return st;
}
