#include "ir/graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/hash.h"

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

/* ---- name index ------------------------------------------------------ */

static uint64_t name_hash(const char *s) { return ait_fnv1a64(AIT_FNV_OFFSET, s, strlen(s)); }

static void index_put(ait_name_index *ix, const ait_graph *g, int v) {
  size_t mask = ix->cap - 1, i = (size_t)name_hash(g->values[v].name) & mask;
  for (; ix->slot[i] >= 0; i = (i + 1) & mask)
    if (!strcmp(g->values[ix->slot[i]].name, g->values[v].name)) return; /* first one wins */
  ix->slot[i] = v;
}

ait_status ait_name_index_sync(ait_name_index *ix, const ait_graph *g) {
  if (ix->n > g->n_values) ix->n = 0, ix->cap = 0; /* values were compacted: start over */
  if ((size_t)g->n_values * 2 >= ix->cap) {
    size_t cap = 64;
    while (cap <= (size_t)g->n_values * 2)
      cap *= 2;
    int *slot = malloc(sizeof(int) * cap);
    if (!slot) return ait_err(AIT_E_NOMEM, "out of memory indexing value names");
    free(ix->slot);
    ix->slot = slot;
    ix->cap = cap;
    memset(slot, 0xff, sizeof(int) * cap); /* -1 everywhere */
    ix->n = 0;
  }
  for (; ix->n < g->n_values; ix->n++)
    index_put(ix, g, ix->n);
  return AIT_OK;
}

int ait_name_index_find(const ait_name_index *ix, const ait_graph *g, const char *name) {
  if (!ix->cap) return -1;
  size_t mask = ix->cap - 1;
  for (size_t i = (size_t)name_hash(name) & mask; ix->slot[i] >= 0; i = (i + 1) & mask)
    if (!strcmp(g->values[ix->slot[i]].name, name)) return ix->slot[i];
  return -1;
}

void ait_name_index_free(ait_name_index *ix) {
  free(ix->slot);
  memset(ix, 0, sizeof *ix);
}

/* ---- topological order ------------------------------------------------ */

/* Min-heap of ready node indices: among ready nodes the one earliest in the
 * file goes first, so a valid file order is kept as it is. */
static void heap_push(int *h, int *n, int x) {
  int i = (*n)++;
  for (; i > 0 && h[(i - 1) / 2] > x; i = (i - 1) / 2)
    h[i] = h[(i - 1) / 2];
  h[i] = x;
}

static int heap_pop(int *h, int *n) {
  int top = h[0], x = h[--(*n)], i = 0;
  for (;;) {
    int c = 2 * i + 1;
    if (c >= *n) break;
    if (c + 1 < *n && h[c + 1] < h[c]) c++;
    if (h[c] >= x) break;
    h[i] = h[c];
    i = c;
  }
  if (*n) h[i] = x;
  return top;
}

/* Kahn's algorithm over a consumer list (value -> reading nodes), so the
 * sort is O(nodes + edges + nodes log nodes) for any graph size. */
ait_status ait_graph_toposort(ait_graph *g) {
  int nn = g->n_nodes > 0 ? g->n_nodes : 0, nv = g->n_values > 0 ? g->n_values : 0;
  size_t n_edges = 0;
  for (int i = 0; i < nn; i++)
    n_edges += (size_t)(g->nodes[i].n_in > 0 ? g->nodes[i].n_in : 0);
  int *producer = malloc(sizeof(int) * (size_t)(nv + 1));
  int *pending = calloc((size_t)nn + 1, sizeof(int));
  int *order = malloc(sizeof(int) * ((size_t)nn + 1));
  int *heap = malloc(sizeof(int) * ((size_t)nn + 1));
  int *first = calloc((size_t)nv + 2, sizeof(int)); /* CSR offsets into use[] */
  int *use = malloc(sizeof(int) * (n_edges + 1));
  char *is_input = calloc((size_t)nv + 1, 1);
  ait_node *sorted = NULL;
  ait_status st = AIT_OK;
  if (!producer || !pending || !order || !heap || !first || !use || !is_input) {
    st = ait_err(AIT_E_NOMEM, "out of memory sorting the graph");
    goto out;
  }
  for (int j = 0; j < g->n_inputs; j++)
    if (g->inputs[j] >= 0 && g->inputs[j] < nv) is_input[g->inputs[j]] = 1;
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
      if (producer[v] < 0 && !g->values[v].init && !g->values[v].outer && !is_input[v]) {
        st = ait_err(AIT_E_INVALID_MODEL,
                     "%s reads tensor '%s', which is not a graph input, an initializer or the "
                     "output of any node",
                     ait_node_desc(&g->nodes[i]), g->values[v].name);
        goto out;
      }
      if (producer[v] >= 0) {
        pending[i]++;
        first[v + 1]++;
      }
    }
  for (int v = 0; v < nv; v++) /* counts -> list ends */
    first[v + 1] += first[v];
  first[nv + 1] = first[nv];
  for (int i = nn - 1; i >= 0; i--) /* fill backwards: each list in node order, ends -> starts */
    for (int k = g->nodes[i].n_in - 1; k >= 0; k--) {
      int v = g->nodes[i].in[k];
      if (v >= 0 && producer[v] >= 0) use[--first[v + 1]] = i;
    }
  /* now first[v + 1] is the start of v's list and first[v + 2] its end */
  int n_heap = 0, n_order = 0;
  for (int i = 0; i < nn; i++)
    if (pending[i] == 0) heap_push(heap, &n_heap, i);
  while (n_heap) {
    int pick = heap_pop(heap, &n_heap);
    order[n_order++] = pick;
    for (int k = 0; k < g->nodes[pick].n_out; k++) {
      int v = g->nodes[pick].out[k];
      if (v < 0) continue;
      for (int e = first[v + 1]; e < first[v + 2]; e++)
        if (--pending[use[e]] == 0) heap_push(heap, &n_heap, use[e]);
    }
  }
  if (n_order < nn) {
    for (int i = 0; i < nn; i++)
      if (pending[i] > 0) {
        st = ait_err(AIT_E_INVALID_MODEL, "the graph has a cycle through %s",
                     ait_node_desc(&g->nodes[i]));
        goto out;
      }
  }
  if (!(sorted = malloc(sizeof(ait_node) * ((size_t)nn + 1)))) {
    st = ait_err(AIT_E_NOMEM, "out of memory sorting the graph");
    goto out;
  }
  for (int i = 0; i < nn; i++)
    sorted[i] = g->nodes[order[i]];
  if (nn) memcpy(g->nodes, sorted, sizeof(ait_node) * (size_t)nn); /* nodes is NULL when nn == 0 */
  for (int v = 0; v < nv; v++)
    g->values[v].producer = -1;
  for (int i = 0; i < nn; i++)
    for (int k = 0; k < g->nodes[i].n_out; k++)
      if (g->nodes[i].out[k] >= 0) g->values[g->nodes[i].out[k]].producer = i;
out:
  free(sorted);
  free(producer);
  free(pending);
  free(order);
  free(heap);
  free(first);
  free(use);
  free(is_input);
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
