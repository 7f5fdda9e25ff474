/* Post-op chains: what follows a primitive and can run inside it as
 * oneDNN post-ops. Activations become eltwise post-ops; a binary op with a
 * constant scalar becomes a linear (or clip) eltwise; with another tensor it
 * becomes a binary post-op (a same-shape Add may become a sum at plan
 * time); x * 0.5 * (1 + erf(x / sqrt 2)) becomes gelu_erf and x *
 * sigmoid(x) becomes swish (the shared matchers, src/ir/passes/match.c). Every intermediate must
 * have exactly one reader and not be a graph output. Whether oneDNN accepts a post-op for a given
 * shape is only known when planning; refused ones then run as standalone
 * in-place steps. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "backends/onednn/onednn.h"
#include "ir/passes/passes.h"

/* Reading nodes of v (a node reading it twice counts twice). */
static int readers(const ait_graph *g, int v, int *out, int max) {
  int n = 0;
  for (int i = 0; i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i].n_in; k++)
      if (g->nodes[i].in[k] == v) {
        if (n < max) out[n] = i;
        n++;
      }
  return n;
}

/* The single reader of v (v not a graph output), or -1. */
static int single_reader(const ait_graph *g, int v, const bool *taken) {
  int r[2];
  if (dn_is_graph_output(g, v) || readers(g, v, r, 2) != 1 || taken[r[0]]) return -1;
  return r[0];
}

/* The shared matchers (src/ir/passes/match.c) see the graph through these:
 * every reader of a value, a graph output counting as one more. */
static int view_readers(const void *ctx, int v, int *nodes, int max) {
  const ait_graph *g = ((const dn_state *)ctx)->g;
  for (int k = 0; k < max; k++)
    nodes[k] = -1;
  return readers(g, v, nodes, max) + (dn_is_graph_output(g, v) ? 1 : 0);
}

static bool view_scalar(const void *ctx, int v, float *out) {
  return dn_const_scalar(((const dn_state *)ctx)->g, v, out);
}

/* x * 0.5 * (1 + erf(x / sqrt 2)) (ait_match_gelu's erf form), on nodes
 * not taken. */
static bool match_gelu(const dn_state *s, int x, const bool *taken, int *nodes, int *y) {
  ait_match_view view = {.g = s->g, .readers = view_readers, .scalar = view_scalar, .ctx = s};
  ait_gelu_match m;
  if (!ait_match_gelu(&view, x, &m) || m.tanh) return false; /* the erf form's 5 nodes */
  for (int k = 0; k < m.n_nodes; k++)
    if (taken[m.nodes[k]]) return false;
  for (int k = 0; k < m.n_nodes; k++)
    nodes[k] = m.nodes[k];
  *y = m.y;
  return true;
}

/* x * sigmoid(x) (ait_match_silu), on nodes not taken. */
static bool match_silu(const dn_state *s, int x, const bool *taken, int *nodes, int *y) {
  ait_match_view view = {.g = s->g, .readers = view_readers, .scalar = view_scalar, .ctx = s};
  ait_silu_match m;
  if (!ait_match_silu(&view, x, &m) || taken[m.nodes[0]] || taken[m.nodes[1]]) return false;
  nodes[0] = m.nodes[0], nodes[1] = m.nodes[1];
  *y = m.y;
  return true;
}

bool dn_match_pattern(const dn_state *s, int x, const bool *taken, dn_elt *e, int *nodes, int *n,
                      int *y) {
  if (s->g->values[x].dtype != AIT_FLOAT32 || dn_is_graph_output(s->g, x)) return false;
  if (match_gelu(s, x, taken, nodes, y)) {
    *e = (dn_elt){dnnl_eltwise_gelu_erf, 0.f, 0.f};
    *n = 5;
    return true;
  }
  if (match_silu(s, x, taken, nodes, y)) {
    *e = (dn_elt){dnnl_eltwise_swish, 1.f, 0.f};
    *n = 2;
    return true;
  }
  return false;
}

/* Other operand o of a binary post-op must broadcast into v (it may not
 * grow the result); unknown dims are checked again when planning. */
static bool broadcasts_into(const ait_graph *g, int o, int v) {
  const ait_value *a = &g->values[o], *b = &g->values[v];
  if (a->rank < 0 || b->rank < 0) return b->rank >= 0 || a->rank < 0;
  if (a->rank > b->rank) return false;
  for (int k = 0; k < a->rank; k++) {
    int64_t da = a->dims[k].v, db = b->dims[b->rank - a->rank + k].v;
    if (da > 1 && db > 0 && da != db) return false;
    if (da > 1 && db < 0) return false; /* may grow a symbolic 1 */
  }
  return true;
}

/* a2 * (a1 * x + b1) + b2 as one linear step when the chain ends in one. */
static bool merge_linear(dn_op *op, const dn_elt *e) {
  dn_post *last = op->n_post ? &op->post[op->n_post - 1] : NULL;
  if (e->alg != dnnl_eltwise_linear || !last || last->binary || last->e.alg != dnnl_eltwise_linear)
    return false;
  last->e.beta = e->alpha * last->e.beta + e->beta;
  last->e.alpha *= e->alpha;
  return true;
}

/* Node c (reading v) as post-op(s) of op; false when it cannot be one. */
static bool as_post(dn_state *s, dn_op *op, const ait_node *c, int v) {
  const ait_graph *g = s->g;
  dn_elt e[2];
  int cnt;
  if (c->n_out < 1 || c->out[0] < 0 || g->values[c->out[0]].dtype != AIT_FLOAT32) return false;
  for (int k = 1; k < c->n_out; k++)
    if (c->out[k] >= 0 && dn_value_uses(g, c->out[k]) > 0) return false;
  dn_opk kind = dn_op_kind(c);
  if (kind == DN_K_UNARY && c->in[0] == v && dn_unary_elts(g, c, e, &cnt)) {
    if (cnt == 1 && merge_linear(op, &e[0])) return true;
    if (op->n_post + cnt > DN_MAX_POST) return false;
    for (int k = 0; k < cnt; k++)
      op->post[op->n_post++] = (dn_post){.e = e[k], .operand = -1, .oslot = -1};
    return true;
  }
  if (kind != DN_K_BINARY || c->n_in != 2 || c->in[0] == c->in[1]) return false;
  if (op->n_post >= DN_MAX_POST) return false;
  bool first = c->in[0] == v;
  int other = first ? c->in[1] : c->in[0];
  if (g->values[other].dtype != AIT_FLOAT32) return false;
  const char *name = c->op_type;
  float k;
  if (dn_const_scalar(g, other, &k)) {
    dn_elt el = {dnnl_eltwise_linear, 1.f, 0.f};
    int ex;
    if (!strcmp(name, "Add"))
      el.beta = k;
    else if (!strcmp(name, "Sub"))
      el = first ? (dn_elt){dnnl_eltwise_linear, 1.f, -k} : (dn_elt){dnnl_eltwise_linear, -1.f, k};
    else if (!strcmp(name, "Mul"))
      el.alpha = k;
    else if (!strcmp(name, "Div") && first && fabsf(frexpf(k, &ex)) == 0.5f)
      el.alpha = 1.f / k;
    else if (!strcmp(name, "Max"))
      el = (dn_elt){dnnl_eltwise_clip_v2, k, FLT_MAX};
    else if (!strcmp(name, "Min"))
      el = (dn_elt){dnnl_eltwise_clip_v2, -FLT_MAX, k};
    else
      el.alg = dnnl_alg_kind_undef;
    if (el.alg != dnnl_alg_kind_undef) {
      if (merge_linear(op, &el)) return true;
      op->post[op->n_post++] = (dn_post){.e = el, .operand = -1, .oslot = -1};
      return true;
    }
  }
  bool commutative = strcmp(name, "Sub") && strcmp(name, "Div");
  if (!first && !commutative) return false;
  if (!broadcasts_into(g, other, v)) return false;
  op->post[op->n_post++] =
      (dn_post){.binary = true, .alg = dn_binary_alg(name), .operand = other, .oslot = -1};
  return true;
}

ait_status dn_fuse_chain(dn_state *s, dn_op *op, bool *taken, int *pos) {
  const ait_graph *g = s->g;
  for (;;) {
    int v = op->out, nodes[8], nn, y;
    dn_elt e;
    if (op->n_post >= DN_MAX_POST) break;
    if (dn_match_pattern(s, v, taken, &e, nodes, &nn, &y)) {
      op->post[op->n_post++] = (dn_post){.e = e, .operand = -1, .oslot = -1};
      for (int k = 0; k < nn; k++) {
        AIT_TRY(dn_op_add_node(op, nodes[k]));
        taken[nodes[k]] = true;
        if (nodes[k] > *pos) *pos = nodes[k];
      }
      op->out = y;
      continue;
    }
    int c = single_reader(g, v, taken);
    if (c < 0 || !as_post(s, op, &g->nodes[c], v)) break;
    AIT_TRY(dn_op_add_node(op, c));
    taken[c] = true;
    if (c > *pos) *pos = c;
    op->out = g->nodes[c].out[0];
  }
  return AIT_OK;
}
