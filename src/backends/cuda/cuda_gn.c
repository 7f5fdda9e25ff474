/* GroupNorm as torch exports it, as one FusedInstanceNorm (a rewrite of the
 * cuda backend's graph copy, after native's passes).
 *
 * torch writes GroupNorm(C, C) on x [N, C, T] (wav2vec2's feature extractor)
 * as
 *
 *   Reshape(x, [0, C, -1]) -> InstanceNormalization(s, b) -> Reshape(.,
 *   Shape(x) or [0, C, -1]) -> Mul(gamma [C, 1]) -> Add(beta [C, 1])
 *
 * and its GELU after it spelled out (Div, Erf, Add, Mul, Mul). On the device
 * each of those seven elementwise nodes is a pass over the whole activation
 * (at batch 32, 26M elements each; Round 9's profile: 1.5 ms of wav2vec2's
 * 3.6). One FusedInstanceNorm on x with scale s * gamma and shift b * gamma
 * + beta and the GELU as its activation reads x once and writes y once
 * (cuk_instnorm). The op and its reference kernel are the ones native's
 * epilogue pass makes (src/ops/fused.c), which cuda's passes do not run:
 * that pass also makes ops this backend has no kernel for. */
#ifdef AIT_HAVE_CUDA

#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_impl.h"
#include "ir/passes/passes.h"

/* The one live reader of v when it has exactly one, is op `op` and v is not
 * a graph output; else -1. */
static int sole_op(const nat_uses *u, int v, const char *op) {
  if (v < 0 || u->uses[v] != 1 || u->is_out[v]) return -1;
  int r = u->consumer[v];
  const ait_node *n = &u->g->nodes[r];
  return !u->dead[r] && ait_is_op_in(n, "", op) && n->n_out >= 1 ? r : -1;
}

static int other_input(const ait_node *c, int y) {
  if (c->n_in != 2) return -1;
  if (c->in[0] == y) return c->in[1];
  if (c->in[1] == y) return c->in[0];
  return -1;
}

/* Constant shape v of Reshape r is [0 | N, C, -1 | T] for x [N, C, T]
 * (allowzero 0 for the 0): the same planes as x. */
static bool same_planes(const ait_graph *g, const ait_node *r, int v, const ait_value *x) {
  if (v < 0 || !nat_is_const(g, v) || ait_attr_int(r, "allowzero", 0) != 0) return false;
  const ait_tensor *t = g->values[v].init;
  if (t->dtype != AIT_INT64 || ait_tensor_numel(t) != 3) return false;
  const int64_t *s = t->data;
  return (s[0] == 0 || (s[0] > 0 && s[0] == x->dims[0].v)) && s[1] == x->dims[1].v &&
         (s[2] == -1 || (s[2] > 0 && s[2] == x->dims[2].v));
}

/* Constant c broadcasts one float32 per channel of [N, C, T] (shape [C, 1]
 * or [1, C, 1], or a scalar): a new [C] tensor of them, else NULL. */
static ait_tensor *per_channel(const ait_graph *g, int c, int64_t C) {
  if (c < 0 || !nat_is_const(g, c)) return NULL;
  const ait_tensor *t = g->values[c].init;
  if (t->dtype != AIT_FLOAT32 || t->rank > 3) return NULL;
  int64_t n = ait_tensor_numel(t);
  if (n != 1 && n != C) return NULL;
  if (n == C && C > 1 && (t->rank < 2 || t->dims[t->rank - 2] != C)) return NULL;
  ait_tensor *b = ait_tensor_new(AIT_FLOAT32, 1, &C);
  if (!b) return NULL;
  const float *src = t->data;
  float *dst = b->data;
  for (int64_t i = 0; i < C; i++)
    dst[i] = src[n == 1 ? 0 : i];
  return b;
}

/* The shared GELU matcher sees the graph through nat_uses. */
static int view_readers(const void *ctx, int v, int *nodes, int max) {
  const nat_uses *u = ctx;
  const ait_graph *g = u->g;
  int filled = 0;
  for (int k = 0; k < max; k++)
    nodes[k] = -1;
  for (int i = 0; i < g->n_nodes && filled < max; i++) {
    if (u->dead[i]) continue;
    for (int k = 0; k < g->nodes[i].n_in && filled < max; k++)
      if (g->nodes[i].in[k] == v) nodes[filled++] = i;
  }
  return u->uses[v] + (u->is_out[v] ? 1 : 0);
}

static bool view_scalar(const void *ctx, int v, float *out) {
  const ait_graph *g = ((const nat_uses *)ctx)->g;
  if (!nat_is_const(g, v)) return false;
  const ait_tensor *t = g->values[v].init;
  if (t->dtype != AIT_FLOAT32 || ait_tensor_numel(t) != 1) return false;
  *out = *(const float *)t->data;
  return true;
}

/* Rewrite the GroupNorm whose InstanceNormalization is node i, if it is one. */
static ait_status fuse_one(nat_uses *u, int i, bool *done) {
  ait_graph *g = u->g;
  const ait_node *n = &g->nodes[i];
  *done = false;
  if (u->dead[i] || !ait_is_op_in(n, "", "InstanceNormalization") || n->n_in != 3 || n->n_out < 1 ||
      n->in[0] < 0)
    return AIT_OK;
  int xin = n->in[0], rp = g->values[xin].producer;
  if (rp < 0 || u->dead[rp] || !ait_is_op_in(&g->nodes[rp], "", "Reshape") ||
      sole_op(u, xin, "InstanceNormalization") != i)
    return AIT_OK;
  int x = g->nodes[rp].in[0];
  const ait_value *xv = &g->values[x];
  if (xv->dtype != AIT_FLOAT32 || xv->rank != 3 || xv->dims[1].v < 1) return AIT_OK;
  int64_t C = xv->dims[1].v;
  if (g->nodes[rp].n_in < 2 || !same_planes(g, &g->nodes[rp], g->nodes[rp].in[1], xv))
    return AIT_OK;
  int r1 = sole_op(u, n->out[0], "Reshape");
  if (r1 < 0 || g->nodes[r1].n_in < 2) return AIT_OK;
  int sh = g->nodes[r1].in[1], shp = sh >= 0 ? g->values[sh].producer : -1;
  bool back = shp >= 0 && ait_is_op_in(&g->nodes[shp], "", "Shape") && g->nodes[shp].in[0] == x &&
              ait_attr_int(&g->nodes[shp], "start", 0) == 0 &&
              ait_attr_int(&g->nodes[shp], "end", INT64_MAX) >= 3;
  if (!back && !same_planes(g, &g->nodes[r1], sh, xv)) return AIT_OK;
  int y1 = g->nodes[r1].out[0], mi = sole_op(u, y1, "Mul");
  if (mi < 0) return AIT_OK;
  int y2 = g->nodes[mi].out[0], ai = sole_op(u, y2, "Add");
  if (ai < 0) return AIT_OK;
  int y3 = g->nodes[ai].out[0];
  const ait_value *ov = &g->values[y3];
  if (ov->rank != 3 || ov->dims[1].v != C || !nat_is_const(g, n->in[1]) ||
      !nat_is_const(g, n->in[2]))
    return AIT_OK;
  const ait_tensor *S = g->values[n->in[1]].init, *B = g->values[n->in[2]].init;
  if (S->dtype != AIT_FLOAT32 || B->dtype != AIT_FLOAT32 || ait_tensor_numel(S) != C ||
      ait_tensor_numel(B) != C)
    return AIT_OK;
  ait_tensor *gm = per_channel(g, other_input(&g->nodes[mi], y1), C);
  ait_tensor *bt = gm ? per_channel(g, other_input(&g->nodes[ai], y2), C) : NULL;
  if (!bt) {
    ait_tensor_free(gm);
    return AIT_OK;
  }
  ait_match_view view = {.g = g, .readers = view_readers, .scalar = view_scalar, .ctx = u};
  ait_gelu_match ge;
  bool gelu = ait_match_gelu(&view, y3, &ge);
  float *s2 = gm->data, *b2 = bt->data; /* gm, bt become the new scale, shift */
  const float *s = S->data, *b = B->data;
  for (int64_t c = 0; c < C; c++) {
    b2[c] = b[c] * s2[c] + b2[c];
    s2[c] = s[c] * s2[c];
  }
  int sv = nat_add_initializer(g, g->values[n->in[1]].name, "_gn", gm);
  if (sv < 0) {
    ait_tensor_free(bt);
    return ait_err(AIT_E_NOMEM, "cuda: out of memory");
  }
  int bv = nat_add_initializer(g, g->values[n->in[2]].name, "_gn", bt);
  if (bv < 0) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
  ait_node *f = &g->nodes[i];
  AIT_TRY(nat_node_make_fused(f, "FusedInstanceNorm"));
  f->in[0] = x, f->in[1] = sv, f->in[2] = bv;
  int last = ai;
  if (gelu) {
    AIT_TRY(nat_attr_set_str(f, "activation",
                             ait_act_name(ge.tanh ? AIT_ACT_GELU_TANH : AIT_ACT_GELU)));
    for (int k = 0; k < ge.n_nodes - 1; k++)
      u->dead[ge.nodes[k]] = true;
    u->dead[ai] = true;
    last = ge.nodes[ge.n_nodes - 1];
  }
  f->out[0] = g->nodes[last].out[0];
  g->values[f->out[0]].producer = i;
  u->dead[last] = u->dead[rp] = u->dead[r1] = u->dead[mi] = true;
  /* the Shape of x fed only the Reshape back: as a reader of x it would
   * keep x's plain form alive under NHWC (cu_conv1d_readers_only) */
  if (back && u->uses[sh] == 1 && !u->is_out[sh]) u->dead[shp] = true;
  *done = true;
  return AIT_OK;
}

ait_status cu_pass_groupnorm(ait_graph *g, int *fused) {
  *fused = 0;
  nat_uses u;
  memset(&u, 0, sizeof u);
  u.g = g;
  AIT_TRY(nat_uses_refresh(&u));
  ait_status st = AIT_OK;
  for (int i = 0; !st && i < g->n_nodes; i++) {
    bool done = false;
    st = fuse_one(&u, i, &done);
    if (!st && done) {
      (*fused)++;
      st = nat_uses_refresh(&u);
    }
  }
  if (!st && *fused) st = nat_graph_compact(g, u.dead);
  if (!st && *fused) st = nat_resolve_fused(g);
  nat_uses_free(&u);
  return st;
}

#endif
