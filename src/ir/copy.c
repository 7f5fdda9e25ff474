#include "ir/copy.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

static char *dup_or_null(const char *s, bool *fail) {
  if (!s) return NULL;
  char *d = strdup(s);
  if (!d) *fail = true;
  return d;
}

void ait_attr_clear(ait_attr *a) {
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

bool ait_attr_copy(ait_attr *d, const ait_attr *s, ait_graph *owner, bool borrow) {
  bool fail = false;
  memset(d, 0, sizeof *d);
  d->type = s->type;
  d->f = s->f;
  d->i = s->i;
  d->n = s->n;
  d->name = dup_or_null(s->name, &fail);
  d->s = dup_or_null(s->s, &fail);
  if (s->t && !(d->t = ait_tensor_clone(s->t))) fail = true;
  if (s->g && !(d->g = ait_graph_clone(s->g, owner, borrow))) fail = true;
  if (s->floats && s->n > 0 && (d->floats = malloc(sizeof(float) * (size_t)s->n)))
    memcpy(d->floats, s->floats, sizeof(float) * (size_t)s->n);
  else if (s->floats && s->n > 0)
    fail = true;
  if (s->ints && s->n > 0 && (d->ints = malloc(sizeof(int64_t) * (size_t)s->n)))
    memcpy(d->ints, s->ints, sizeof(int64_t) * (size_t)s->n);
  else if (s->ints && s->n > 0)
    fail = true;
  if (s->strings && s->n > 0) {
    if ((d->strings = calloc((size_t)s->n, sizeof(char *))))
      for (int k = 0; k < s->n; k++)
        d->strings[k] = dup_or_null(s->strings[k], &fail);
    else
      fail = true;
  }
  if (fail) ait_attr_clear(d);
  return !fail;
}

void ait_node_clear(ait_node *n) {
  free(n->name);
  free(n->op_type);
  free(n->domain);
  free(n->in);
  free(n->out);
  for (int k = 0; k < n->n_attrs; k++)
    ait_attr_clear(&n->attrs[k]);
  free(n->attrs);
  memset(n, 0, sizeof *n);
}

bool ait_node_copy(ait_node *d, const ait_node *s, ait_graph *owner, bool borrow) {
  bool fail = false;
  memset(d, 0, sizeof *d);
  d->name = dup_or_null(s->name, &fail);
  d->op_type = dup_or_null(s->op_type, &fail);
  d->domain = dup_or_null(s->domain ? s->domain : "", &fail);
  d->opset = s->opset;
  d->op = s->op;
  d->in = malloc(sizeof(int) * (size_t)(s->n_in + 1));
  d->out = malloc(sizeof(int) * (size_t)(s->n_out + 1));
  d->attrs = calloc((size_t)s->n_attrs + 1, sizeof *d->attrs);
  if (fail || !d->in || !d->out || !d->attrs) {
    ait_node_clear(d);
    return false;
  }
  d->n_in = s->n_in;
  d->n_out = s->n_out;
  memcpy(d->in, s->in, sizeof(int) * (size_t)s->n_in);
  memcpy(d->out, s->out, sizeof(int) * (size_t)s->n_out);
  for (int k = 0; k < s->n_attrs; k++) {
    if (!ait_attr_copy(&d->attrs[k], &s->attrs[k], owner, borrow)) {
      ait_node_clear(d);
      return false;
    }
    d->n_attrs = k + 1;
  }
  return true;
}

/* Copy value s into d; the init is cloned, or borrowed when borrow is set. */
static bool value_copy(ait_value *d, const ait_value *s, bool borrow) {
  bool fail = false;
  *d = *s;
  d->init = NULL;
  d->name = dup_or_null(s->name, &fail);
  for (int k = 0; k < AIT_MAX_RANK; k++)
    d->dims[k].sym = dup_or_null(s->dims[k].sym, &fail);
  if (s->init) {
    const ait_tensor *t = s->init;
    d->init = borrow && t->kind == AIT_KIND_TENSOR && t->dtype != AIT_STRING
                  ? ait_tensor_wrap(t->dtype, t->rank, t->dims, t->data)
                  : ait_tensor_clone(t);
    if (!d->init) fail = true;
  }
  return !fail;
}

static ait_status copy_opsets(ait_graph *g, const ait_graph *s) {
  const ait_graph *root = ait_graph_root(s);
  if (root->n_opsets == 0 || s->parent) return AIT_OK;
  g->opsets = calloc((size_t)root->n_opsets, sizeof *g->opsets);
  if (!g->opsets) return ait_err(AIT_E_NOMEM, "out of memory");
  for (int i = 0; i < root->n_opsets; i++) {
    g->opsets[i].version = root->opsets[i].version;
    if (!(g->opsets[i].domain = strdup(root->opsets[i].domain)))
      return ait_err(AIT_E_NOMEM, "out of memory");
    g->n_opsets = i + 1;
  }
  return AIT_OK;
}

ait_graph *ait_graph_clone(const ait_graph *s, ait_graph *parent, bool borrow) {
  ait_graph *g = ait_graph_new(s->name, parent);
  if (!g) return NULL;
  g->ir_version = s->ir_version;
  if (!parent)
    g->limits = ait_graph_root(s)->limits; /* a new root loads and folds as its source did */
  g->values = calloc((size_t)s->n_values + 1, sizeof *g->values);
  g->nodes = calloc((size_t)s->n_nodes + 1, sizeof *g->nodes);
  g->inputs = malloc(sizeof(int) * ((size_t)s->n_inputs + 1));
  g->outputs = malloc(sizeof(int) * ((size_t)s->n_outputs + 1));
  if (!g->values || !g->nodes || !g->inputs || !g->outputs) goto nomem;
  g->cap_values = s->n_values + 1;
  g->cap_nodes = s->n_nodes + 1;
  for (int i = 0; i < s->n_values; i++) {
    if (!value_copy(&g->values[i], &s->values[i], borrow)) {
      g->n_values = i + 1; /* the partial value is freed with the graph */
      goto nomem;
    }
    g->n_values = i + 1;
  }
  for (int i = 0; i < s->n_nodes; i++) {
    if (!ait_node_copy(&g->nodes[i], &s->nodes[i], g, borrow)) goto nomem;
    g->n_nodes = i + 1;
  }
  memcpy(g->inputs, s->inputs, sizeof(int) * (size_t)s->n_inputs);
  g->n_inputs = s->n_inputs;
  memcpy(g->outputs, s->outputs, sizeof(int) * (size_t)s->n_outputs);
  g->n_outputs = s->n_outputs;
  if (!parent && copy_opsets(g, s) != AIT_OK) goto nomem;
  return g;
nomem:
  ait_graph_free(g);
  ait_err(AIT_E_NOMEM, "out of memory copying graph '%s'", s->name);
  return NULL;
}

/* Names of outer-scope values that subgraph sub (recursively) reads. */
static void mark_outer(const ait_graph *g, const ait_graph *sub, char *used) {
  for (int i = 0; i < sub->n_values; i++) {
    if (!sub->values[i].outer) continue;
    int v = ait_graph_find_value(g, sub->values[i].name);
    if (v >= 0) used[v] = 1;
  }
  for (int i = 0; i < sub->n_nodes; i++)
    for (int k = 0; k < sub->nodes[i].n_attrs; k++)
      if (sub->nodes[i].attrs[k].g) mark_outer(g, sub->nodes[i].attrs[k].g, used);
}

ait_status ait_graph_extract(const ait_graph *g, const int *nodes, int n, ait_graph **out,
                             int *in_map, int *out_map) {
  int nv = g->n_values;
  char *in_set = calloc((size_t)g->n_nodes + 1, 1);
  char *read_in = calloc((size_t)nv + 1, 1), *read_out = calloc((size_t)nv + 1, 1);
  char *made_in = calloc((size_t)nv + 1, 1);
  int *map = malloc(sizeof(int) * ((size_t)nv + 1));
  ait_graph *s = NULL;
  ait_status st = AIT_OK;
  if (!in_set || !read_in || !read_out || !made_in || !map) {
    st = ait_err(AIT_E_NOMEM, "out of memory partitioning the graph");
    goto out;
  }
  for (int i = 0; i < n; i++)
    in_set[nodes[i]] = 1;
  /* who reads what, inside and outside the set */
  for (int i = 0; i < g->n_nodes; i++) {
    const ait_node *nd = &g->nodes[i];
    char *reads = in_set[i] ? read_in : read_out;
    for (int k = 0; k < nd->n_in; k++)
      if (nd->in[k] >= 0) reads[nd->in[k]] = 1;
    for (int k = 0; k < nd->n_attrs; k++)
      if (nd->attrs[k].g) mark_outer(g, nd->attrs[k].g, reads);
    if (in_set[i])
      for (int k = 0; k < nd->n_out; k++)
        if (nd->out[k] >= 0) made_in[nd->out[k]] = 1;
  }
  for (int k = 0; k < g->n_outputs; k++)
    read_out[g->outputs[k]] = 1;
  if (!(s = ait_graph_new(g->name, NULL))) {
    st = AIT_E_NOMEM;
    goto out;
  }
  s->ir_version = g->ir_version;
  s->inputs = malloc(sizeof(int) * ((size_t)nv + 1));
  s->outputs = malloc(sizeof(int) * ((size_t)nv + 1));
  s->nodes = calloc((size_t)n + 1, sizeof *s->nodes);
  s->values = calloc((size_t)nv + 1, sizeof *s->values);
  if (!s->inputs || !s->outputs || !s->nodes || !s->values || copy_opsets(s, g) != AIT_OK) {
    st = ait_err(AIT_E_NOMEM, "out of memory partitioning the graph");
    goto out;
  }
  s->cap_nodes = n + 1;
  s->cap_values = nv + 1;
  for (int v = 0; v < nv; v++) {
    map[v] = -1;
    if (!read_in[v] && !made_in[v]) continue;
    const ait_value *src = &g->values[v];
    bool constant = src->init && !made_in[v];
    int nvi = s->n_values;
    if (!value_copy(&s->values[nvi], src, true)) {
      st = ait_err(AIT_E_NOMEM, "out of memory partitioning the graph");
      goto out;
    }
    s->n_values++;
    ait_value *dv = &s->values[nvi];
    dv->outer = false;
    dv->producer = -1;
    if (!constant && dv->init) { /* a folded value produced inside stays computed */
      ait_tensor_free(dv->init);
      dv->init = NULL;
    }
    map[v] = nvi;
    if (!made_in[v] && !constant) {
      in_map[s->n_inputs] = v;
      s->inputs[s->n_inputs++] = nvi;
    }
    if (made_in[v] && read_out[v]) {
      out_map[s->n_outputs] = v;
      s->outputs[s->n_outputs++] = nvi;
    }
  }
  for (int i = 0; i < n; i++) {
    ait_node *d = &s->nodes[i];
    if (!ait_node_copy(d, &g->nodes[nodes[i]], s, true)) {
      st = ait_err(AIT_E_NOMEM, "out of memory partitioning the graph");
      goto out;
    }
    s->n_nodes = i + 1;
    for (int k = 0; k < d->n_in; k++)
      if (d->in[k] >= 0) d->in[k] = map[d->in[k]];
    for (int k = 0; k < d->n_out; k++)
      if (d->out[k] >= 0) d->out[k] = map[d->out[k]];
  }
  st = ait_graph_toposort(s);
out:
  free(in_set);
  free(read_in);
  free(read_out);
  free(made_in);
  free(map);
  if (st) {
    ait_graph_free(s);
    return st;
  }
  *out = s;
  return AIT_OK;
}
