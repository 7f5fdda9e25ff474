#include "ir/graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

ait_graph *ait_graph_new(const char *name, ait_graph *parent) {
  ait_graph *g = calloc(1, sizeof *g);
  if (!g || !(g->name = strdup(name ? name : ""))) {
    free(g);
    ait_err(AIT_E_NOMEM, "out of memory creating a graph");
    return NULL;
  }
  g->parent = parent;
  return g;
}

static void attr_free(ait_attr *a) {
  free(a->name);
  free(a->s);
  ait_tensor_free(a->t);
  ait_graph_free(a->g);
  free(a->floats);
  free(a->ints);
  for (int i = 0; a->strings && i < a->n; i++)
    free(a->strings[i]);
  free(a->strings);
}

void ait_graph_free(ait_graph *g) {
  if (!g) return;
  for (int i = 0; i < g->n_values; i++) {
    free(g->values[i].name);
    ait_tensor_free(g->values[i].init);
    for (int k = 0; k < AIT_MAX_RANK; k++)
      free((char *)g->values[i].dims[k].sym);
  }
  for (int i = 0; i < g->n_nodes; i++) {
    ait_node *n = &g->nodes[i];
    free(n->name);
    free(n->op_type);
    free(n->domain);
    free(n->in);
    free(n->out);
    for (int k = 0; k < n->n_attrs; k++)
      attr_free(&n->attrs[k]);
    free(n->attrs);
  }
  for (int i = 0; i < g->n_opsets; i++)
    free(g->opsets[i].domain);
  free(g->opsets);
  free(g->values);
  free(g->nodes);
  free(g->inputs);
  free(g->outputs);
  free(g->name);
  free(g);
}

const ait_graph *ait_graph_root(const ait_graph *g) {
  while (g->parent)
    g = g->parent;
  return g;
}

int ait_graph_find_value(const ait_graph *g, const char *name) {
  for (int i = 0; i < g->n_values; i++)
    if (!strcmp(g->values[i].name, name)) return i;
  return -1;
}

int ait_graph_add_value(ait_graph *g, const char *name) {
  if (g->n_values == g->cap_values) {
    int cap = g->cap_values ? g->cap_values * 2 : 64;
    ait_value *v = realloc(g->values, (size_t)cap * sizeof *v);
    if (!v) return ait_err(AIT_E_NOMEM, "out of memory adding value '%s'", name), -1;
    g->values = v;
    g->cap_values = cap;
  }
  ait_value *v = &g->values[g->n_values];
  memset(v, 0, sizeof *v);
  v->rank = -1;
  v->producer = -1;
  if (!(v->name = strdup(name))) return ait_err(AIT_E_NOMEM, "out of memory"), -1;
  return g->n_values++;
}

ait_node *ait_graph_add_node(ait_graph *g, const char *name, const char *op_type,
                             const char *domain) {
  if (g->n_nodes == g->cap_nodes) {
    int cap = g->cap_nodes ? g->cap_nodes * 2 : 64;
    ait_node *n = realloc(g->nodes, (size_t)cap * sizeof *n);
    if (!n) return ait_err(AIT_E_NOMEM, "out of memory adding a node"), NULL;
    g->nodes = n;
    g->cap_nodes = cap;
  }
  ait_node *n = &g->nodes[g->n_nodes];
  memset(n, 0, sizeof *n);
  n->name = strdup(name ? name : "");
  n->op_type = strdup(op_type ? op_type : "");
  n->domain = strdup(domain && strcmp(domain, "ai.onnx") ? domain : "");
  if (!n->name || !n->op_type || !n->domain) {
    free(n->name);
    free(n->op_type);
    free(n->domain);
    return ait_err(AIT_E_NOMEM, "out of memory"), NULL;
  }
  g->n_nodes++;
  return n;
}

int64_t ait_graph_opset(const ait_graph *g, const char *domain) {
  g = ait_graph_root(g);
  if (!domain || !strcmp(domain, "ai.onnx")) domain = "";
  for (int i = 0; i < g->n_opsets; i++)
    if (!strcmp(g->opsets[i].domain, domain)) return g->opsets[i].version;
  return -1;
}

/* Kahn's algorithm; among ready nodes the one earliest in the file goes first,
 * so a valid file order is kept as it is. */
ait_status ait_graph_toposort(ait_graph *g) {
  int nn = g->n_nodes > 0 ? g->n_nodes : 0, nv = g->n_values > 0 ? g->n_values : 0;
  int *producer = malloc(sizeof(int) * (size_t)(nv ? nv : 1));
  int *pending = calloc((size_t)(nn ? nn : 1), sizeof(int));
  int *order = malloc(sizeof(int) * (size_t)(nn ? nn : 1));
  char *done = calloc((size_t)(nn ? nn : 1), 1);
  ait_status st = AIT_OK;
  if (!producer || !pending || !order || !done) {
    st = ait_err(AIT_E_NOMEM, "out of memory sorting the graph");
    goto out;
  }
  for (int v = 0; v < nv; v++)
    producer[v] = -1;
  for (int i = 0; i < nn; i++)
    for (int k = 0; k < g->nodes[i].n_out; k++) {
      int v = g->nodes[i].out[k];
      if (v < 0) continue;
      if (producer[v] >= 0) {
        st = ait_err(AIT_E_INVALID_MODEL, "tensor '%s' is produced by two nodes ('%s' and '%s')",
                     g->values[v].name, g->nodes[producer[v]].name, g->nodes[i].name);
        goto out;
      }
      producer[v] = i;
    }
  for (int i = 0; i < nn; i++)
    for (int k = 0; k < g->nodes[i].n_in; k++) {
      int v = g->nodes[i].in[k];
      if (v < 0) continue;
      if (producer[v] < 0 && !g->values[v].init && !g->values[v].outer) {
        bool is_input = false;
        for (int j = 0; j < g->n_inputs; j++)
          is_input |= g->inputs[j] == v;
        if (!is_input) {
          st = ait_err(AIT_E_INVALID_MODEL,
                       "%s reads tensor '%s', which is not a graph input, an initializer or the "
                       "output of any node",
                       ait_node_desc(&g->nodes[i]), g->values[v].name);
          goto out;
        }
      }
      if (producer[v] >= 0) pending[i]++;
    }
  int n_order = 0;
  while (n_order < nn) {
    int pick = -1;
    for (int i = 0; i < nn && pick < 0; i++)
      if (!done[i] && pending[i] == 0) pick = i;
    if (pick < 0) {
      for (int i = 0; i < nn; i++)
        if (!done[i]) {
          st = ait_err(AIT_E_INVALID_MODEL, "the graph has a cycle through %s",
                       ait_node_desc(&g->nodes[i]));
          goto out;
        }
      break;
    }
    done[pick] = 1;
    order[n_order++] = pick;
    for (int k = 0; k < g->nodes[pick].n_out; k++) {
      int v = g->nodes[pick].out[k];
      if (v < 0) continue;
      for (int i = 0; i < nn; i++)
        for (int j = 0; j < g->nodes[i].n_in; j++)
          if (g->nodes[i].in[j] == v) pending[i]--;
    }
  }
  ait_node *sorted = malloc(sizeof(ait_node) * ((size_t)nn + 1));
  if (!sorted) {
    st = ait_err(AIT_E_NOMEM, "out of memory sorting the graph");
    goto out;
  }
  for (int i = 0; i < nn; i++)
    sorted[i] = g->nodes[order[i]];
  memcpy(g->nodes, sorted, sizeof(ait_node) * (size_t)nn);
  free(sorted);
  for (int v = 0; v < nv; v++)
    g->values[v].producer = -1;
  for (int i = 0; i < nn; i++)
    for (int k = 0; k < g->nodes[i].n_out; k++)
      if (g->nodes[i].out[k] >= 0) g->values[g->nodes[i].out[k]].producer = i;
out:
  free(producer);
  free(pending);
  free(order);
  free(done);
  return st;
}

const ait_attr *ait_node_attr(const ait_node *n, const char *name) {
  for (int i = 0; i < n->n_attrs; i++)
    if (!strcmp(n->attrs[i].name, name)) return &n->attrs[i];
  return NULL;
}

int64_t ait_attr_int(const ait_node *n, const char *name, int64_t def) {
  const ait_attr *a = ait_node_attr(n, name);
  return a && a->type == AIT_ATTR_INT ? a->i : def;
}

float ait_attr_float(const ait_node *n, const char *name, float def) {
  const ait_attr *a = ait_node_attr(n, name);
  if (a && a->type == AIT_ATTR_FLOAT) return a->f;
  if (a && a->type == AIT_ATTR_INT) return (float)a->i;
  return def;
}

const char *ait_attr_str(const ait_node *n, const char *name, const char *def) {
  const ait_attr *a = ait_node_attr(n, name);
  return a && a->type == AIT_ATTR_STRING && a->s ? a->s : def;
}

const int64_t *ait_attr_ints(const ait_node *n, const char *name, int *count) {
  const ait_attr *a = ait_node_attr(n, name);
  if (!a || a->type != AIT_ATTR_INTS) {
    *count = 0;
    return NULL;
  }
  *count = a->n;
  return a->ints;
}

const float *ait_attr_floats(const ait_node *n, const char *name, int *count) {
  const ait_attr *a = ait_node_attr(n, name);
  if (!a || a->type != AIT_ATTR_FLOATS) {
    *count = 0;
    return NULL;
  }
  *count = a->n;
  return a->floats;
}

const ait_tensor *ait_attr_tensor(const ait_node *n, const char *name) {
  const ait_attr *a = ait_node_attr(n, name);
  return a && a->type == AIT_ATTR_TENSOR ? a->t : NULL;
}

const ait_graph *ait_attr_graph(const ait_node *n, const char *name) {
  const ait_attr *a = ait_node_attr(n, name);
  return a && a->type == AIT_ATTR_GRAPH ? a->g : NULL;
}

const char *ait_node_desc(const ait_node *n) {
  static _Thread_local char buf[320];
  if (n->name && n->name[0])
    snprintf(buf, sizeof buf, "%s%s%s node '%s'", n->domain[0] ? n->domain : "",
             n->domain[0] ? "." : "", n->op_type, n->name);
  else
    snprintf(buf, sizeof buf, "unnamed %s%s%s node", n->domain[0] ? n->domain : "",
             n->domain[0] ? "." : "", n->op_type);
  return buf;
}
