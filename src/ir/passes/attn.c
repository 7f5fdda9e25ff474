/* The attention pattern, one definition for every backend (native's
 * FusedAttention, cuda's attention kernel and masked softmax): from a
 * Softmax node back to the product of the queries with the keys and on to
 * the product with the values, over a view (ait_match_view) each backend
 * answers from its own use counts. passes.h documents the forms. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "ir/passes/passes.h"
#include "ops/fused_impl.h"

/* The one reader of v, or -1 (v has other readers, or is an output). */
static int sole_reader(const ait_match_view *v, int x) {
  int r = -1;
  return x >= 0 && v->readers(v->ctx, x, &r, 1) == 1 ? r : -1;
}

/* The live producer of x when x is read by `at` alone; else -1. */
static int sole_producer(const ait_match_view *v, int x, int at) {
  int p = x >= 0 ? v->g->values[x].producer : -1;
  return p >= 0 && sole_reader(v, x) == at ? p : -1;
}

static bool add_node(ait_attn_match *m, int i) {
  if (m->n_nodes >= AIT_ATTN_MAX_NODES) return false;
  m->nodes[m->n_nodes++] = i;
  return true;
}

/* Value x is a float32 scalar factor known now: *f. */
static bool factor(const ait_match_view *v, int x, float *f) {
  return x >= 0 && v->scalar(v->ctx, x, f) && isfinite(*f) && *f != 0.0f;
}

/* Node i scales one operand by a scalar constant: Mul (either side) or
 * Div (the operand divided). The operand in *x, the factor in *f. */
static bool scaling(const ait_match_view *v, int i, int *x, float *f) {
  const ait_node *n = &v->g->nodes[i];
  if (n->n_in != 2 || n->n_out < 1 || n->in[0] < 0 || n->in[1] < 0) return false;
  if (ait_is_op(n, "Div") && factor(v, n->in[1], f) && isfinite(1.0f / *f))
    return *x = n->in[0], *f = 1.0f / *f, true;
  if (!ait_is_op(n, "Mul")) return false;
  if (factor(v, n->in[1], f)) return *x = n->in[0], true;
  if (factor(v, n->in[0], f)) return *x = n->in[1], true;
  return false;
}

/* Value a broadcasts onto dims sd[0..rank) without growing them: rank at
 * most `rank`, each known dim 1 or the scores' (an unknown dim is
 * checked by the backend when the sizes are known). */
static bool fits(const ait_graph *g, int a, const int64_t *sd, int rank) {
  const ait_value *mv = &g->values[a];
  if (mv->dtype != AIT_FLOAT32 || mv->rank < 0 || mv->rank > rank) return false;
  for (int k = 0; k < mv->rank; k++) {
    int64_t d = mv->dims[k].v, w = sd[k + rank - mv->rank];
    if (d >= 0 && d != 1 && w >= 0 && d != w) return false;
  }
  return true;
}

/* The product of Q and K^T writing scores s, read by `at` alone: MatMul,
 * or FusedMatMul with only alpha and Z. */
static bool product(const ait_match_view *v, int s, int at, ait_attn_match *m) {
  const ait_graph *g = v->g;
  int p = sole_producer(v, s, at);
  if (p < 0) return false;
  const ait_node *n = &g->nodes[p];
  bool fmm = ait_is_op_in(n, AIT_FUSED_DOMAIN, "FusedMatMul");
  if ((!fmm && !ait_is_op(n, "MatMul")) || n->n_in < 2 || n->in[0] < 0 || n->in[1] < 0)
    return false;
  if (fmm) {
    if ((n->n_in > 2 && n->in[2] >= 0) || ait_attr_str(n, "activation", "")[0]) return false;
    if (n->n_in > 3 && n->in[3] >= 0) {
      if (m->mask >= 0) return false; /* one plain mask */
      m->mask = n->in[3], m->mask_add = -1;
    }
    m->alpha = ait_attr_float(n, "alpha", 1.0f);
  }
  m->scores = p;
  m->scores_out = s;
  m->q = n->in[0], m->kt = n->in[1];
  return true;
}

/* From value x (read by `at` alone) back to the product: [Add mask]
 * [Mul/Div scale] (the mask added after the scaling, as exporters write
 * it), either input of the Add on the path. */
static bool walk(const ait_match_view *v, int x, int at, int rank, ait_attn_match *m, int depth) {
  const ait_graph *g = v->g;
  int p = sole_producer(v, x, at);
  if (p < 0 || depth > 3) return false;
  const ait_node *n = &g->nodes[p];
  int y;
  float f;
  if (ait_is_op(n, "Add") && m->mask < 0 && m->n_scale == 0 && n->n_in == 2 && n->in[0] >= 0 &&
      n->in[1] >= 0) {
    for (int side = 0; side < 2; side++) {
      ait_attn_match keep = *m;
      int a = n->in[1 - side];
      if (g->values[a].rank > rank || g->values[a].dtype != AIT_FLOAT32) continue;
      m->mask = a, m->mask_add = p;
      if (add_node(m, p) && walk(v, n->in[side], p, rank, m, depth + 1)) return true;
      *m = keep;
    }
    return false;
  }
  if (m->n_scale < 2 && scaling(v, p, &y, &f)) {
    m->scale_nodes[m->n_scale++] = p;
    m->scale *= f;
    return add_node(m, p) && walk(v, y, p, rank, m, depth + 1);
  }
  return product(v, x, at, m);
}

/* Known static dims of value x into d (false when one is not known). */
static bool static_dims(const ait_graph *g, int x, int64_t *d) {
  const ait_value *xv = &g->values[x];
  for (int k = 0; k < xv->rank; k++)
    if ((d[k] = xv->dims[k].v) < 0) return false;
  return xv->rank >= 0;
}

/* Swin's shifted windows: x = Reshape(Add(Reshape(s, [G, W, ...]), mask),
 * back to s's dims), the mask broadcast over G (its G dim 1 or absent),
 * so batch b of the scores takes the mask's window b % W. The scores
 * value (the first Reshape's input) in *s. */
static bool windowed(const ait_match_view *v, int x, int at, int rank, ait_attn_match *m, int *s) {
  const ait_graph *g = v->g;
  int r2 = sole_producer(v, x, at);
  if (r2 < 0 || !ait_is_op(&g->nodes[r2], "Reshape") || rank != 4) return false;
  int a = g->nodes[r2].in[0];
  int add = sole_producer(v, a, r2);
  if (add < 0 || !ait_is_op(&g->nodes[add], "Add") || g->nodes[add].n_in != 2) return false;
  for (int side = 0; side < 2; side++) {
    int u = g->nodes[add].in[side], mask = g->nodes[add].in[1 - side];
    int r1 = sole_producer(v, u, add);
    if (r1 < 0 || mask < 0 || !ait_is_op(&g->nodes[r1], "Reshape")) continue;
    int in = g->nodes[r1].in[0];
    int64_t sd[4], xd[4], ud[5];
    if (in < 0 || g->values[in].rank != 4 || g->values[x].rank != 4 || g->values[u].rank != 5 ||
        g->values[a].rank != 5 || !static_dims(g, in, sd) || !static_dims(g, x, xd) ||
        !static_dims(g, u, ud))
      continue;
    bool same = true;
    for (int k = 0; k < 4; k++)
      same = same && sd[k] == xd[k] && (k == 0 || ud[k + 1] == sd[k]);
    if (!same || ud[0] * ud[1] != sd[0] || ud[1] < 1) continue;
    const ait_value *mv = &g->values[mask];
    if (mv->dtype != AIT_FLOAT32 || mv->rank > 5 || (mv->rank == 5 && mv->dims[0].v != 1) ||
        !fits(g, mask, ud, 5))
      continue;
    /* the Add's output keeps the 5-D dims: the mask grows nothing */
    int64_t ad[5];
    if (!static_dims(g, a, ad) || memcmp(ad, ud, sizeof ad)) continue;
    m->wmask = mask, m->wmask_add = add, m->windows = ud[1];
    m->wreshape[0] = r1, m->wreshape[1] = r2;
    *s = in;
    return add_node(m, r2) && add_node(m, add) && add_node(m, r1);
  }
  return false;
}

bool ait_match_attention(const ait_match_view *v, int softmax, ait_attn_match *m) {
  const ait_graph *g = v->g;
  const ait_node *s = &g->nodes[softmax];
  if (!ait_is_op(s, "Softmax") || s->n_in != 1 || s->n_out != 1 || s->in[0] < 0 || s->out[0] < 0)
    return false;
  int x = s->in[0], p = s->out[0];
  const ait_value *xv = &g->values[x];
  int rank = xv->rank;
  int64_t axis = ait_attr_int(s, "axis", s->opset >= 13 ? -1 : 1);
  if (rank < 3 || rank > 4 || xv->dtype != AIT_FLOAT32 || (axis != -1 && axis != rank - 1))
    return false;
  int pv = sole_reader(v, p);
  if (pv < 0 || !ait_is_op(&g->nodes[pv], "MatMul") || g->nodes[pv].n_in != 2 ||
      g->nodes[pv].in[0] != p || g->nodes[pv].in[1] == p || g->nodes[pv].out[0] < 0)
    return false;
  *m = (ait_attn_match){.softmax = softmax,
                        .pv = pv,
                        .v = g->nodes[pv].in[1],
                        .y = g->nodes[pv].out[0],
                        .mask = -1,
                        .mask_add = -1,
                        .wmask = -1,
                        .wmask_add = -1,
                        .wreshape = {-1, -1},
                        .k_tr = -1,
                        .q_scale = -1,
                        .k_scale = -1,
                        .q_factor = 1.0f,
                        .k_factor = 1.0f,
                        .alpha = 1.0f,
                        .scale = 1.0f};
  add_node(m, pv);
  add_node(m, softmax);
  int sv = x, at = softmax;
  if (windowed(v, x, softmax, rank, m, &sv)) at = m->wreshape[0];
  if (g->values[sv].rank != rank || !walk(v, sv, at, rank, m, 0) || !add_node(m, m->scores))
    return false;
  /* the mask grows nothing: checked on the product's dims */
  int64_t sd[4];
  const ait_value *so = &g->values[m->scores_out];
  if (so->rank != rank) return false;
  for (int k = 0; k < rank; k++)
    sd[k] = so->dims[k].v;
  if (m->mask >= 0 && !fits(g, m->mask, sd, rank)) return false;
  m->scale *= m->alpha;
  const ait_value *qv = &g->values[m->q], *kv = &g->values[m->kt], *vv = &g->values[m->v];
  if (qv->rank != rank || kv->rank != rank || vv->rank != rank || qv->dtype != AIT_FLOAT32 ||
      kv->dtype != AIT_FLOAT32 || vv->dtype != AIT_FLOAT32)
    return false;
  /* K^T as a Transpose of K swapping the last two axes (either form) */
  int t = sole_producer(v, m->kt, m->scores);
  if (t >= 0 && ait_is_op(&g->nodes[t], "Transpose") && g->nodes[t].n_in == 1) {
    int cnt = 0;
    const int64_t *perm = ait_attr_ints(&g->nodes[t], "perm", &cnt);
    bool swap = perm && cnt == rank && perm[rank - 1] == rank - 2 && perm[rank - 2] == rank - 1;
    for (int k = 0; swap && k < rank - 2; k++)
      swap = perm[k] == k;
    if (swap) m->k_tr = t;
  }
  /* Q and K^T each scaled by a constant before the product (TorchScript's
   * scaled_dot_product_attention: sqrt(1 / sqrt(D)) on each) */
  int qs = sole_producer(v, m->q, m->scores), ks = sole_producer(v, m->kt, m->scores), y;
  float f;
  if (qs >= 0 && scaling(v, qs, &y, &f) && g->values[y].rank == rank)
    m->q_scale = qs, m->q_factor = f;
  if (ks >= 0 && scaling(v, ks, &y, &f) && g->values[y].rank == rank)
    m->k_scale = ks, m->k_factor = f;
  return true;
}
