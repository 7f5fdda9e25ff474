/* Copies of IR pieces: deep copies of attributes, nodes and whole graphs,
 * and extraction of a set of nodes as a standalone graph (for partitioning a
 * model across backends). */
#ifndef AIT_IR_COPY_H
#define AIT_IR_COPY_H

#include "ir/graph.h"

/* Deep copies. Subgraph attributes get `owner` as their parent. With
 * `borrow`, constant tensors (initializers, folded values) of the copy and
 * its subgraphs borrow the source's data instead of copying it, so the source
 * must outlive the copy (backends rewriting a model they were handed). On
 * failure (out of memory) return false / NULL; partial copies are freed. */
bool ait_attr_copy(ait_attr *dst, const ait_attr *src, ait_graph *owner, bool borrow);
void ait_attr_clear(ait_attr *a);
bool ait_node_copy(ait_node *dst, const ait_node *src, ait_graph *owner, bool borrow);
void ait_node_clear(ait_node *n);
ait_graph *ait_graph_clone(const ait_graph *src, ait_graph *parent, bool borrow);

/* The nodes nodes[0..n) of top-level graph g (in topological order) as a new
 * standalone graph. Its inputs are the values those nodes read that are
 * produced elsewhere (or are graph inputs); its outputs are the values they
 * produce that anything else reads (or that are graph outputs). Constant
 * values (initializers, folded values) become initializers that borrow g's
 * data, so g must outlive the result. in_map[i] / out_map[i] receive the
 * value index in g of the extracted graph's input / output i (arrays of
 * g->n_values entries at least). */
ait_status ait_graph_extract(const ait_graph *g, const int *nodes, int n, ait_graph **out,
                             int *in_map, int *out_map);

#endif
