/* The graph IR: values (tensors flowing between nodes) and nodes (op calls).
 *
 * A graph owns everything it points to: names, attributes, initializer data
 * and subgraphs. Values and nodes are addressed by index. A node input or
 * output of -1 is an absent optional. Subgraphs (If/Loop/Scan bodies) are
 * graphs whose `parent` is the enclosing graph; a value a subgraph reads from
 * an enclosing scope is a local value with `outer` set, resolved by name at
 * run time. */
#ifndef AIT_IR_GRAPH_H
#define AIT_IR_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "aitune.h"
#include "core/limits.h"
#include "core/tensor.h"

struct ait_op_def;

/* One dimension: a known size (v >= 0), or unknown (v < 0) with an optional
 * symbolic name (owned by the graph). */
typedef struct ait_dim {
  int64_t v;
  const char *sym;
} ait_dim;

typedef enum ait_value_type {
  AIT_VT_TENSOR = 0,
  AIT_VT_SEQUENCE = 1,
  AIT_VT_OPTIONAL = 2
} ait_value_type;

typedef struct ait_value {
  char *name;
  ait_value_type type;
  ait_dtype dtype; /* element dtype; AIT_UNDEFINED when unknown */
  int rank;        /* -1 when unknown */
  ait_dim dims[AIT_MAX_RANK];
  ait_tensor *init; /* constant data (initializer or folded), owned; else NULL */
  int producer;     /* index of the producing node, -1 for inputs/initializers */
  bool outer;       /* read from an enclosing graph's scope */
} ait_value;

typedef enum ait_attr_type {
  AIT_ATTR_UNDEFINED = 0,
  AIT_ATTR_FLOAT = 1,
  AIT_ATTR_INT = 2,
  AIT_ATTR_STRING = 3,
  AIT_ATTR_TENSOR = 4,
  AIT_ATTR_GRAPH = 5,
  AIT_ATTR_FLOATS = 6,
  AIT_ATTR_INTS = 7,
  AIT_ATTR_STRINGS = 8
} ait_attr_type;

typedef struct ait_graph ait_graph;

typedef struct ait_attr {
  char *name;
  ait_attr_type type;
  float f;
  int64_t i;
  char *s;       /* STRING (NUL-terminated; binary strings are rare in ONNX attrs) */
  ait_tensor *t; /* TENSOR */
  ait_graph *g;  /* GRAPH */
  int n;         /* element count of floats/ints/strings */
  float *floats;
  int64_t *ints;
  char **strings;
} ait_attr;

typedef struct ait_node {
  char *name;
  char *op_type;
  char *domain; /* "" for the default ai.onnx domain */
  int n_in, n_out;
  int *in, *out; /* value indices, -1 = absent */
  int n_attrs;
  ait_attr *attrs;
  int opset;                   /* opset of the node's domain in the model */
  const struct ait_op_def *op; /* resolved registry row, or NULL when unknown */
} ait_node;

typedef struct ait_opset_import {
  char *domain;
  int64_t version;
} ait_opset_import;

struct ait_graph {
  char *name;
  ait_value *values;
  int n_values, cap_values;
  ait_node *nodes;
  int n_nodes, cap_nodes;
  int *inputs; /* graph inputs that are not initializers, declaration order */
  int n_inputs;
  int *outputs;
  int n_outputs;
  ait_graph *parent;        /* enclosing graph of a subgraph, else NULL */
  ait_opset_import *opsets; /* top-level graph only; subgraphs use the root's */
  int n_opsets;
  int ir_version;
  ait_limits limits; /* top-level graph only: what it was loaded under (zeros: defaults) */
};

/* New empty graph. NULL (and last error) on out-of-memory. */
ait_graph *ait_graph_new(const char *name, ait_graph *parent);
/* Free a graph with all it owns, subgraphs included. NULL is fine. */
void ait_graph_free(ait_graph *g);
/* The outermost graph (the one holding the opset imports). */
const ait_graph *ait_graph_root(const ait_graph *g);

/* Index of the value named `name`, or -1. Linear search: code that looks up
 * many names (the loader) uses an ait_name_index instead. */
int ait_graph_find_value(const ait_graph *g, const char *name);

/* Name -> value index over one graph's values (open addressing), so loading
 * a graph of n values costs O(n), not O(n^2). Zero-initialize; sync indexes
 * the values added since the last sync (and starts over if values were
 * removed); find returns the first value of that name, as
 * ait_graph_find_value does, or -1. Only valid for the graph it was synced
 * with, until values are renamed or removed. */
typedef struct ait_name_index {
  int *slot;
  size_t cap;
  int n;
} ait_name_index;
ait_status ait_name_index_sync(ait_name_index *ix, const ait_graph *g);
int ait_name_index_find(const ait_name_index *ix, const ait_graph *g, const char *name);
void ait_name_index_free(ait_name_index *ix);
/* Add a value (name copied). Returns its index, or -1 on out-of-memory. */
int ait_graph_add_value(ait_graph *g, const char *name);
/* Append a node; returns a pointer to the zeroed node (valid until the next
 * add) or NULL on out-of-memory. Its strings are copied. */
ait_node *ait_graph_add_node(ait_graph *g, const char *name, const char *op_type,
                             const char *domain);
/* Opset version the model imports for domain ("" = ai.onnx), or -1. */
int64_t ait_graph_opset(const ait_graph *g, const char *domain);

/* Sort nodes topologically (stable: keeps file order where it can) and fill
 * each value's producer. AIT_E_INVALID_MODEL naming a node on a cycle, or a
 * value used before anything produces it. */
ait_status ait_graph_toposort(ait_graph *g);

/* ---- attribute access for kernels and shape functions ---------------- */

const ait_attr *ait_node_attr(const ait_node *n, const char *name);
int64_t ait_attr_int(const ait_node *n, const char *name, int64_t def);
float ait_attr_float(const ait_node *n, const char *name, float def);
/* String attribute, or def. Owned by the graph. */
const char *ait_attr_str(const ait_node *n, const char *name, const char *def);
/* INTS attribute: element pointer (owned by the graph) and *count; NULL with
 * *count = 0 when absent. */
const int64_t *ait_attr_ints(const ait_node *n, const char *name, int *count);
const float *ait_attr_floats(const ait_node *n, const char *name, int *count);
const ait_tensor *ait_attr_tensor(const ait_node *n, const char *name);
const ait_graph *ait_attr_graph(const ait_node *n, const char *name);

/* Human description of a node for error messages: "Conv node 'conv1'".
 * Returns a pointer to a per-thread buffer overwritten by the next call. */
const char *ait_node_desc(const ait_node *n);

#endif
