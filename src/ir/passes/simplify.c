/* Simplification passes: no-op elimination (Identity, inference Dropout,
 * a Transpose of the identity perm; not a lone Reshape to its input's own
 * shape: native's GroupNorm fusion reads one as the pattern's start) and
 * pair elimination (Transpose of a Transpose: one Transpose of
 * the composed perm, none when that is the identity; Reshape of a Reshape:
 * the outer one reads the inner one's input). Both work over a dead-node
 * mask like the folding pass, counting readers themselves (a read from a
 * subgraph counts, by name), so any backend's copy of a graph can run them. */
#include <stdlib.h>
#include <string.h>

#include "ir/passes/passes.h"

typedef struct uses {
  int *n;    /* per value: live readers, subgraph reads included */
  bool *out; /* per value: a graph output */
} uses;

/* Reads of g's values by subgraphs of sub (by name), counted into n. */
static void count_outer(const ait_graph *g, const ait_graph *sub, int *n) {
  for (int i = 0; i < sub->n_values; i++) {
    if (!sub->values[i].outer) continue;
    int v = ait_graph_find_value(g, sub->values[i].name);
    if (v >= 0) n[v]++;
  }
  for (int i = 0; i < sub->n_nodes; i++)
    for (int k = 0; k < sub->nodes[i].n_attrs; k++)
      if (sub->nodes[i].attrs[k].g) count_outer(g, sub->nodes[i].attrs[k].g, n);
}

static ait_status uses_new(const ait_graph *g, const bool *dead, uses *u) {
  u->n = calloc((size_t)g->n_values + 1, sizeof *u->n);
  u->out = calloc((size_t)g->n_values + 1, sizeof *u->out);
  if (!u->n || !u->out) {
    free(u->n);
    free(u->out);
    return ait_err(AIT_E_NOMEM, "out of memory in a graph pass");
  }
  for (int k = 0; k < g->n_outputs; k++)
    if (g->outputs[k] >= 0) u->out[g->outputs[k]] = true;
  for (int i = 0; i < g->n_nodes; i++) {
    const ait_node *n = &g->nodes[i];
    if (dead[i]) continue;
    for (int k = 0; k < n->n_in; k++)
      if (n->in[k] >= 0) u->n[n->in[k]]++;
    for (int k = 0; k < n->n_attrs; k++)
      if (n->attrs[k].g) count_outer(g, n->attrs[k].g, u->n);
  }
  return AIT_OK;
}

static void uses_free(uses *u) {
  free(u->n);
  free(u->out);
}

/* Whether a subgraph of g reads value `name` from the enclosing scope. */
static bool read_by_subgraph(const ait_graph *g, const char *name) {
  for (int i = 0; i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i].n_attrs; k++) {
      const ait_graph *sub = g->nodes[i].attrs[k].g;
      if (!sub) continue;
      int v = ait_graph_find_value(sub, name);
      if ((v >= 0 && sub->values[v].outer) || read_by_subgraph(sub, name)) return true;
    }
  return false;
}

/* Node i computes y = x: drop it. Its readers read x; or, y being a graph
 * output (its name must stay), x's producer writes y, when x has no other
 * reader. False when neither can be done. */
static bool bypass(ait_graph *g, bool *dead, uses *u, int i) {
  ait_node *n = &g->nodes[i];
  int x = n->in[0], y = n->out[0];
  if (g->values[x].type != g->values[y].type) return false;
  if (u->out[y]) {
    int p = g->values[x].producer;
    if (p < 0 || dead[p] || u->n[x] != 1 || u->out[x] || ait_value_is_const(g, x) ||
        read_by_subgraph(g, g->values[x].name))
      return false;
    ait_node *pn = &g->nodes[p];
    for (int k = 0; k < pn->n_out; k++)
      if (pn->out[k] == x) pn->out[k] = y;
    g->values[y].producer = p;
    u->n[x] = 0;
  } else {
    if (read_by_subgraph(g, g->values[y].name)) return false;
    for (int j = 0; j < g->n_nodes; j++) {
      if (dead[j]) continue;
      for (int k = 0; k < g->nodes[j].n_in; k++)
        if (g->nodes[j].in[k] == y) g->nodes[j].in[k] = x;
    }
    u->n[x] += u->n[y] - 1;
    u->n[y] = 0;
  }
  for (int k = 1; k < n->n_in; k++)
    if (n->in[k] >= 0) u->n[n->in[k]]--;
  dead[i] = true;
  return true;
}

/* The perm of Transpose n (rank entries) in perm; false without one. */
static bool perm_of(const ait_node *n, int64_t *perm, int *rank) {
  const int64_t *p = ait_attr_ints(n, "perm", rank);
  if (!p || *rank < 1 || *rank > AIT_MAX_RANK) return false;
  memcpy(perm, p, sizeof *perm * (size_t)*rank);
  return true;
}

static bool is_identity_perm(const int64_t *perm, int rank) {
  for (int k = 0; k < rank; k++)
    if (perm[k] != k) return false;
  return true;
}

/* Both sides' dims are all known and equal. */
static bool same_static_shape(const ait_graph *g, int a, int b) {
  const ait_value *x = &g->values[a], *y = &g->values[b];
  if (x->rank < 0 || x->rank != y->rank) return false;
  for (int k = 0; k < x->rank; k++)
    if (x->dims[k].v < 0 || x->dims[k].v != y->dims[k].v) return false;
  return true;
}

/* Whether node n is an inference no-op: y = x. */
static bool is_noop(const ait_graph *g, const uses *u, const ait_node *n) {
  if (n->n_in < 1 || n->in[0] < 0 || n->n_out < 1 || n->out[0] < 0) return false;
  if (ait_is_op(n, "Identity")) return true;
  if (ait_is_op(n, "Transpose")) {
    int64_t perm[AIT_MAX_RANK];
    int rank;
    return perm_of(n, perm, &rank) && is_identity_perm(perm, rank);
  }
  if (!ait_is_op(n, "Dropout")) return false;
  for (int k = 1; k < n->n_out; k++) /* the mask is wanted */
    if (n->out[k] >= 0 && (u->n[n->out[k]] > 0 || u->out[n->out[k]])) return false;
  if (n->opset < 7) return ait_attr_int(n, "is_test", 0) != 0;
  if (n->opset >= 12 && n->n_in > 2 && n->in[2] >= 0) {
    int t = n->in[2];
    return ait_value_is_const(g, t) && ait_tensor_numel(g->values[t].init) == 1 &&
           ait_scalar_i64(g->values[t].init) == 0;
  }
  return true;
}

ait_status ait_pass_remove_noops(ait_graph *g, bool *dead, int *removed) {
  uses u;
  AIT_TRY(uses_new(g, dead, &u));
  for (int i = 0; i < g->n_nodes; i++)
    if (!dead[i] && is_noop(g, &u, &g->nodes[i]) && bypass(g, dead, &u, i)) ++*removed;
  uses_free(&u);
  return AIT_OK;
}

/* The producer of node n's data input when it is a live op `op` whose
 * output only n reads (not an output, not read by a subgraph); else -1. */
static int sole_producer(const ait_graph *g, const bool *dead, const uses *u, const ait_node *n,
                         const char *op) {
  int v = n->in[0], p = v >= 0 ? g->values[v].producer : -1;
  if (p < 0 || dead[p] || !ait_is_op(&g->nodes[p], op) || g->nodes[p].n_in < 1 ||
      g->nodes[p].in[0] < 0 || u->n[v] != 1 || u->out[v] || read_by_subgraph(g, g->values[v].name))
    return -1;
  return p;
}

/* Outer Transpose i of inner p: i reads p's input, under the composed perm
 * (y[i] = inner's axis perm_outer[i], which is x's axis perm_inner[.]). */
static bool merge_transposes(ait_graph *g, bool *dead, uses *u, int i, int p) {
  ait_node *n = &g->nodes[i];
  int64_t pi[AIT_MAX_RANK], po[AIT_MAX_RANK];
  int ri, ro;
  if (!perm_of(&g->nodes[p], pi, &ri) || !perm_of(n, po, &ro) || ri != ro) return false;
  ait_attr *a = NULL;
  for (int k = 0; k < n->n_attrs && !a; k++)
    if (!strcmp(n->attrs[k].name, "perm")) a = &n->attrs[k];
  for (int k = 0; k < ro; k++)
    a->ints[k] = pi[po[k]];
  n->in[0] = g->nodes[p].in[0];
  dead[p] = true;
  u->n[g->nodes[p].out[0]] = 0;
  if (is_identity_perm(a->ints, ro)) bypass(g, dead, u, i);
  return true;
}

/* Outer Reshape i of inner p: i reads p's input when its own shape does
 * not depend on the input's dims (a 0 copies an input dim unless
 * allowzero). */
static bool merge_reshapes(ait_graph *g, bool *dead, uses *u, int i, int p) {
  ait_node *n = &g->nodes[i];
  if (n->n_in < 2 || !ait_value_is_const(g, n->in[1])) return false;
  const ait_tensor *s = g->values[n->in[1]].init;
  if (s->dtype != AIT_INT64) return false;
  const int64_t *d = s->data;
  for (int64_t k = 0; !ait_attr_int(n, "allowzero", 0) && k < ait_tensor_numel(s); k++)
    if (d[k] == 0) return false;
  const ait_node *pn = &g->nodes[p];
  for (int k = 1; k < pn->n_in; k++)
    if (pn->in[k] >= 0) u->n[pn->in[k]]--;
  n->in[0] = pn->in[0];
  dead[p] = true;
  u->n[pn->out[0]] = 0;
  if (same_static_shape(g, n->in[0], n->out[0])) bypass(g, dead, u, i);
  return true;
}

ait_status ait_pass_remove_pairs(ait_graph *g, bool *dead, int *removed) {
  uses u;
  AIT_TRY(uses_new(g, dead, &u));
  for (int i = 0; i < g->n_nodes; i++) {
    const ait_node *n = &g->nodes[i];
    if (dead[i] || n->n_in < 1 || n->n_out < 1 || n->out[0] < 0) continue;
    bool t = ait_is_op(n, "Transpose"), r = ait_is_op(n, "Reshape");
    int p = t || r ? sole_producer(g, dead, &u, n, n->op_type) : -1;
    if (p < 0) continue;
    if (t ? merge_transposes(g, dead, &u, i, p) : merge_reshapes(g, dead, &u, i, p))
      *removed += 1 + dead[i]; /* the inner node, and the outer one when it went too */
  }
  uses_free(&u);
  return AIT_OK;
}
