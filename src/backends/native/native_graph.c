/* Graph editing for the native backend's passes: a deep copy of the caller's
 * graph (passes never touch the original), attribute and initializer
 * helpers, use counts, and compaction after nodes were removed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/native/native.h"

/* ---- copy ------------------------------------------------------------- */

static char *dup_or_null(const char *s, bool *fail) {
  if (!s) return NULL;
  char *d = strdup(s);
  if (!d) *fail = true;
  return d;
}

static bool attr_copy(ait_attr *d, const ait_attr *s, ait_graph *owner, bool borrow) {
  bool fail = false;
  memset(d, 0, sizeof *d);
  d->type = s->type;
  d->f = s->f;
  d->i = s->i;
  d->n = s->n;
  d->name = dup_or_null(s->name, &fail);
  d->s = dup_or_null(s->s, &fail);
  if (s->t && !(d->t = ait_tensor_clone(s->t))) fail = true;
  if (s->g && !(d->g = nat_graph_clone(s->g, owner, borrow))) fail = true;
  if (s->floats && s->n > 0) {
    if ((d->floats = malloc(sizeof(float) * (size_t)s->n)))
      memcpy(d->floats, s->floats, sizeof(float) * (size_t)s->n);
    else
      fail = true;
  }
  if (s->ints && s->n > 0) {
    if ((d->ints = malloc(sizeof(int64_t) * (size_t)s->n)))
      memcpy(d->ints, s->ints, sizeof(int64_t) * (size_t)s->n);
    else
      fail = true;
  }
  if (s->strings && s->n > 0) {
    if ((d->strings = calloc((size_t)s->n, sizeof(char *))))
      for (int k = 0; k < s->n; k++)
        d->strings[k] = dup_or_null(s->strings[k], &fail);
    else
      fail = true;
  }
  return !fail;
}

static void attr_clear(ait_attr *a) {
  free(a->name);
  free(a->s);
  ait_tensor_free(a->t);
  ait_graph_free(a->g);
  free(a->floats);
  free(a->ints);
  for (int i = 0; a->strings && i < a->n; i++)
    free(a->strings[i]);
  free(a->strings);
  memset(a, 0, sizeof *a);
}

void nat_node_clear(ait_node *n) {
  free(n->name);
  free(n->op_type);
  free(n->domain);
  free(n->in);
  free(n->out);
  for (int k = 0; k < n->n_attrs; k++)
    attr_clear(&n->attrs[k]);
  free(n->attrs);
  memset(n, 0, sizeof *n);
}

static bool value_copy(ait_value *d, const ait_value *s, bool borrow) {
  bool fail = false;
  *d = *s;
  d->init = NULL;
  for (int k = 0; k < AIT_MAX_RANK; k++)
    d->dims[k].sym = NULL;
  d->name = dup_or_null(s->name, &fail);
  for (int k = 0; k < AIT_MAX_RANK; k++)
    d->dims[k].sym = dup_or_null(s->dims[k].sym, &fail);
  if (s->init) {
    const ait_tensor *t = s->init;
    bool wrap = borrow && t->kind == AIT_KIND_TENSOR && t->dtype != AIT_STRING;
    d->init = wrap ? ait_tensor_wrap(t->dtype, t->rank, t->dims, t->data) : ait_tensor_clone(t);
    if (!d->init) fail = true;
  }
  return !fail;
}

static bool node_copy(ait_node *d, const ait_node *s, ait_graph *owner, bool borrow) {
  bool fail = false;
  memset(d, 0, sizeof *d);
  d->name = dup_or_null(s->name, &fail);
  d->op_type = dup_or_null(s->op_type, &fail);
  d->domain = dup_or_null(s->domain ? s->domain : "", &fail);
  d->opset = s->opset;
  d->op = s->op;
  d->in = malloc(sizeof(int) * (size_t)(s->n_in + 1));
  d->out = malloc(sizeof(int) * (size_t)(s->n_out + 1));
  if (!d->in || !d->out) return false;
  d->n_in = s->n_in;
  d->n_out = s->n_out;
  memcpy(d->in, s->in, sizeof(int) * (size_t)s->n_in);
  memcpy(d->out, s->out, sizeof(int) * (size_t)s->n_out);
  if (s->n_attrs > 0) {
    if (!(d->attrs = calloc((size_t)s->n_attrs, sizeof *d->attrs))) return false;
    for (int k = 0; k < s->n_attrs; k++) {
      d->n_attrs = k + 1;
      if (!attr_copy(&d->attrs[k], &s->attrs[k], owner, borrow)) return false;
    }
  }
  return !fail;
}

static int *dup_ints(const int *v, int n, bool *fail) {
  int *d = malloc(sizeof(int) * (size_t)(n + 1));
  if (!d) {
    *fail = true;
    return NULL;
  }
  if (n > 0) memcpy(d, v, sizeof(int) * (size_t)n);
  return d;
}

ait_graph *nat_graph_clone(const ait_graph *s, ait_graph *parent, bool borrow) {
  ait_graph *g = ait_graph_new(s->name, parent);
  if (!g) return NULL;
  bool fail = false;
  g->ir_version = s->ir_version;
  g->values = calloc((size_t)s->n_values + 1, sizeof *g->values);
  g->nodes = calloc((size_t)s->n_nodes + 1, sizeof *g->nodes);
  if (!g->values || !g->nodes) goto nomem;
  g->cap_values = s->n_values + 1;
  g->cap_nodes = s->n_nodes + 1;
  for (int i = 0; i < s->n_values; i++) {
    g->n_values = i + 1;
    if (!value_copy(&g->values[i], &s->values[i], borrow)) goto nomem;
  }
  for (int i = 0; i < s->n_nodes; i++) {
    g->n_nodes = i + 1;
    if (!node_copy(&g->nodes[i], &s->nodes[i], g, borrow)) goto nomem;
  }
  g->inputs = dup_ints(s->inputs, s->n_inputs, &fail);
  g->n_inputs = s->n_inputs;
  g->outputs = dup_ints(s->outputs, s->n_outputs, &fail);
  g->n_outputs = s->n_outputs;
  if (fail) goto nomem;
  if (s->n_opsets > 0) {
    if (!(g->opsets = calloc((size_t)s->n_opsets, sizeof *g->opsets))) goto nomem;
    for (int i = 0; i < s->n_opsets; i++) {
      g->n_opsets = i + 1;
      g->opsets[i].version = s->opsets[i].version;
      if (!(g->opsets[i].domain = strdup(s->opsets[i].domain))) goto nomem;
    }
  }
  return g;
nomem:
  ait_graph_free(g);
  ait_err(AIT_E_NOMEM, "out of memory copying graph '%s'", s->name);
  return NULL;
}

/* ---- attributes and initializers --------------------------------------- */

/* The attribute slot named `name` of n, cleared, added when absent. */
static ait_attr *attr_slot(ait_node *n, const char *name, ait_attr_type type) {
  ait_attr *a = NULL;
  for (int k = 0; k < n->n_attrs; k++)
    if (!strcmp(n->attrs[k].name, name)) a = &n->attrs[k];
  char *nm = strdup(name);
  if (!nm) return NULL;
  if (a) {
    attr_clear(a);
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

ait_status nat_attr_set_str(ait_node *n, const char *name, const char *v) {
  ait_attr *a = attr_slot(n, name, AIT_ATTR_STRING);
  if (!a || !(a->s = strdup(v))) return ait_err(AIT_E_NOMEM, "out of memory setting an attribute");
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
