/* Graph editing for the native backend's passes: a deep copy of the caller's
 * graph (passes never touch the original), attribute and initializer
 * helpers, use counts, and compaction after nodes were removed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/native/native.h"
#include "ir/copy.h"

/* ---- copy ------------------------------------------------------------- */

/* The copy itself is src/ir/copy.c's; these names keep the passes short. */
ait_graph *nat_graph_clone(const ait_graph *s, ait_graph *parent, bool borrow) {
  return ait_graph_clone(s, parent, borrow);
}

void nat_node_clear(ait_node *n) { ait_node_clear(n); }

/* ---- attributes and initializers --------------------------------------- */

/* The attribute slot named `name` of n, cleared, added when absent. */
static ait_attr *attr_slot(ait_node *n, const char *name, ait_attr_type type) {
  ait_attr *a = NULL;
  for (int k = 0; k < n->n_attrs; k++)
    if (!strcmp(n->attrs[k].name, name)) a = &n->attrs[k];
  char *nm = strdup(name);
  if (!nm) return NULL;
  if (a) {
    ait_attr_clear(a);
  } else {
    ait_attr *more = realloc(n->attrs, sizeof *more * (size_t)(n->n_attrs + 1));
    if (!more) {
      free(nm);
      return NULL;
    }
    n->attrs = more;
    a = &n->attrs[n->n_attrs++];
    memset(a, 0, sizeof *a);
  }
  a->name = nm;
  a->type = type;
  return a;
}

ait_status nat_node_make_fused(ait_node *n, const char *op) {
  char *t = strdup(op), *d = strdup(AIT_FUSED_DOMAIN);
  if (!t || !d) {
    free(t);
    free(d);
    return ait_err(AIT_E_NOMEM, "out of memory rewriting %s", ait_node_desc(n));
  }
  free(n->op_type);
  free(n->domain);
  n->op_type = t;
  n->domain = d;
  n->opset = 1;
  n->op = ait_fused_op(op);
  return AIT_OK;
}

ait_status nat_attr_set_str(ait_node *n, const char *name, const char *v) {
  ait_attr *a = attr_slot(n, name, AIT_ATTR_STRING);
  if (!a || !(a->s = strdup(v))) return ait_err(AIT_E_NOMEM, "out of memory setting an attribute");
  return AIT_OK;
}

ait_status nat_attr_set_int(ait_node *n, const char *name, int64_t v) {
  ait_attr *a = attr_slot(n, name, AIT_ATTR_INT);
  if (!a) return ait_err(AIT_E_NOMEM, "out of memory setting an attribute");
  a->i = v;
  return AIT_OK;
}

ait_status nat_attr_set_float(ait_node *n, const char *name, float v) {
  ait_attr *a = attr_slot(n, name, AIT_ATTR_FLOAT);
  if (!a) return ait_err(AIT_E_NOMEM, "out of memory setting an attribute");
  a->f = v;
  return AIT_OK;
}

ait_status nat_attr_set_floats(ait_node *n, const char *name, const float *v, int count) {
  ait_attr *a = attr_slot(n, name, AIT_ATTR_FLOATS);
  if (!a || !(a->floats = malloc(sizeof(float) * (size_t)(count + 1))))
    return ait_err(AIT_E_NOMEM, "out of memory setting an attribute");
  a->n = count;
  if (count > 0) memcpy(a->floats, v, sizeof(float) * (size_t)count);
  return AIT_OK;
}

ait_status nat_attr_set_ints(ait_node *n, const char *name, const int64_t *v, int count) {
  ait_attr *a = attr_slot(n, name, AIT_ATTR_INTS);
  if (!a || !(a->ints = malloc(sizeof(int64_t) * (size_t)(count + 1))))
    return ait_err(AIT_E_NOMEM, "out of memory setting an attribute");
  a->n = count;
  if (count > 0) memcpy(a->ints, v, sizeof(int64_t) * (size_t)count);
  return AIT_OK;
}

int nat_add_initializer(ait_graph *g, const char *base, const char *suffix, ait_tensor *t) {
  char name[512];
  snprintf(name, sizeof name, "%s%s", base, suffix);
  for (int k = 2; ait_graph_find_value(g, name) >= 0; k++)
    snprintf(name, sizeof name, "%s%s_%d", base, suffix, k);
  int v = ait_graph_add_value(g, name);
  if (v < 0) {
    ait_tensor_free(t);
    return -1;
  }
  ait_value *val = &g->values[v];
  val->init = t;
  val->dtype = t->dtype;
  val->rank = t->rank;
  for (int k = 0; k < t->rank; k++)
    val->dims[k].v = t->dims[k];
  return v;
}

/* ---- use counts --------------------------------------------------------- */

/* Count reads of top-level values by subgraphs of `sub` (by name). */
static void count_outer(const ait_graph *top, const ait_graph *sub, int *uses, int at,
                        int *consumer) {
  for (int i = 0; i < sub->n_values; i++) {
    if (!sub->values[i].outer) continue;
    int v = ait_graph_find_value(top, sub->values[i].name);
    if (v >= 0) {
      uses[v] += 1;
      consumer[v] = at;
    }
  }
  for (int i = 0; i < sub->n_nodes; i++)
    for (int k = 0; k < sub->nodes[i].n_attrs; k++)
      if (sub->nodes[i].attrs[k].g) count_outer(top, sub->nodes[i].attrs[k].g, uses, at, consumer);
}

ait_status nat_uses_refresh(nat_uses *u) {
  ait_graph *g = u->g;
  if (g->n_nodes > u->n_nodes_cap) {
    bool *d = realloc(u->dead, sizeof *d * (size_t)g->n_nodes);
    if (!d) return ait_err(AIT_E_NOMEM, "out of memory in a graph pass");
    memset(d + u->n_nodes_cap, 0, sizeof *d * (size_t)(g->n_nodes - u->n_nodes_cap));
    u->dead = d;
    u->n_nodes_cap = g->n_nodes;
  }
  if (g->n_values > u->n_values_cap) {
    size_t n = (size_t)g->n_values * 2;
    int *a = realloc(u->uses, sizeof *a * n);
    if (a) u->uses = a;
    int *c = realloc(u->consumer, sizeof *c * n);
    if (c) u->consumer = c;
    bool *o = realloc(u->is_out, sizeof *o * n);
    if (o) u->is_out = o;
    if (!a || !c || !o) return ait_err(AIT_E_NOMEM, "out of memory in a graph pass");
    u->n_values_cap = (int)n;
  }
  for (int v = 0; v < g->n_values; v++) {
    u->uses[v] = 0;
    u->consumer[v] = -1;
    u->is_out[v] = false;
  }
  for (int k = 0; k < g->n_outputs; k++)
    u->is_out[g->outputs[k]] = true;
  for (int i = 0; i < g->n_nodes; i++) {
    if (u->dead[i]) continue;
    const ait_node *n = &g->nodes[i];
    for (int k = 0; k < n->n_in; k++)
      if (n->in[k] >= 0) {
        u->uses[n->in[k]]++;
        u->consumer[n->in[k]] = i;
      }
    for (int k = 0; k < n->n_attrs; k++)
      if (n->attrs[k].g) count_outer(g, n->attrs[k].g, u->uses, i, u->consumer);
  }
  return AIT_OK;
}

void nat_uses_free(nat_uses *u) {
  free(u->dead);
  free(u->uses);
  free(u->consumer);
  free(u->is_out);
  memset(u, 0, sizeof *u);
}

/* ---- compaction ---------------------------------------------------------- */

static void mark_outer_names(const ait_graph *top, const ait_graph *sub, bool *keep) {
  for (int i = 0; i < sub->n_values; i++)
    if (sub->values[i].outer) {
      int v = ait_graph_find_value(top, sub->values[i].name);
      if (v >= 0) keep[v] = true;
    }
  for (int i = 0; i < sub->n_nodes; i++)
    for (int k = 0; k < sub->nodes[i].n_attrs; k++)
      if (sub->nodes[i].attrs[k].g) mark_outer_names(top, sub->nodes[i].attrs[k].g, keep);
}

static void value_clear(ait_value *v) {
  free(v->name);
  ait_tensor_free(v->init);
  for (int k = 0; k < AIT_MAX_RANK; k++)
    free((char *)v->dims[k].sym);
}

ait_status nat_graph_compact(ait_graph *g, const bool *dead) {
  int nn = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    if (dead && dead[i]) {
      nat_node_clear(&g->nodes[i]);
      continue;
    }
    g->nodes[nn++] = g->nodes[i];
  }
  g->n_nodes = nn;
  int nv = g->n_values;
  bool *keep = calloc((size_t)nv + 1, sizeof *keep);
  int *map = malloc(sizeof(int) * ((size_t)nv + 1));
  if (!keep || !map) {
    free(keep);
    free(map);
    return ait_err(AIT_E_NOMEM, "out of memory compacting the graph");
  }
  for (int i = 0; i < g->n_nodes; i++) {
    const ait_node *n = &g->nodes[i];
    for (int k = 0; k < n->n_in; k++)
      if (n->in[k] >= 0) keep[n->in[k]] = true;
    for (int k = 0; k < n->n_out; k++)
      if (n->out[k] >= 0) keep[n->out[k]] = true;
    for (int k = 0; k < n->n_attrs; k++)
      if (n->attrs[k].g) mark_outer_names(g, n->attrs[k].g, keep);
  }
  for (int k = 0; k < g->n_inputs; k++)
    keep[g->inputs[k]] = true;
  for (int k = 0; k < g->n_outputs; k++)
    keep[g->outputs[k]] = true;
  int m = 0;
  for (int v = 0; v < nv; v++) {
    if (!keep[v]) {
      value_clear(&g->values[v]);
      map[v] = -1;
      continue;
    }
    map[v] = m;
    g->values[m++] = g->values[v];
  }
  g->n_values = m;
  for (int i = 0; i < g->n_nodes; i++) {
    ait_node *n = &g->nodes[i];
    for (int k = 0; k < n->n_in; k++)
      if (n->in[k] >= 0) n->in[k] = map[n->in[k]];
    for (int k = 0; k < n->n_out; k++)
      if (n->out[k] >= 0) n->out[k] = map[n->out[k]];
  }
  for (int k = 0; k < g->n_inputs; k++)
    g->inputs[k] = map[g->inputs[k]];
  for (int k = 0; k < g->n_outputs; k++)
    g->outputs[k] = map[g->outputs[k]];
  free(keep);
  free(map);
  return ait_graph_toposort(g);
}

/* ---- fused ops ---------------------------------------------------------- */

static bool resolve_in(ait_graph *g) {
  bool any = false;
  for (int i = 0; i < g->n_nodes; i++) {
    ait_node *n = &g->nodes[i];
    if (!strcmp(n->domain, AIT_FUSED_DOMAIN)) {
      any = true;
      if (n->opset < 1) n->opset = 1;
      if (!n->op) n->op = ait_fused_op(n->op_type);
    }
    for (int k = 0; k < n->n_attrs; k++)
      if (n->attrs[k].g) any |= resolve_in(n->attrs[k].g);
  }
  return any;
}

ait_status nat_resolve_fused(ait_graph *g) {
  if (!resolve_in(g) || ait_graph_opset(g, AIT_FUSED_DOMAIN) >= 1) return AIT_OK;
  ait_graph *root = (ait_graph *)ait_graph_root(g);
  ait_opset_import *more = realloc(root->opsets, sizeof *more * (size_t)(root->n_opsets + 1));
  if (!more) return ait_err(AIT_E_NOMEM, "out of memory adding an opset import");
  root->opsets = more;
  if (!(more[root->n_opsets].domain = strdup(AIT_FUSED_DOMAIN)))
    return ait_err(AIT_E_NOMEM, "out of memory adding an opset import");
  more[root->n_opsets++].version = 1;
  return AIT_OK;
}
