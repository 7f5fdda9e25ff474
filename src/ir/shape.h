/* Static shape and dtype inference over the IR, and the shape functions
 * shared by many operators. Symbolic dims (ait_dim.sym) are carried through
 * where an op passes a dim along unchanged. */
#ifndef AIT_IR_SHAPE_H
#define AIT_IR_SHAPE_H

#include "ir/graph.h"
#include "ir/passes/passes.h"

/* Input i / output i of node n as a value of g; NULL when absent. */
ait_value *ait_node_in(ait_graph *g, const ait_node *n, int i);
ait_value *ait_node_out(ait_graph *g, const ait_node *n, int i);

/* Set output i's dtype and shape (dims may be NULL when rank < 0). */
void ait_set_out(ait_graph *g, const ait_node *n, int i, ait_dtype dt, int rank,
                 const ait_dim *dims);

/* Infer dtypes and shapes for every node of g (and its subgraphs), in
 * topological order. Values already declared in value_info keep their
 * declaration where inference knows less. A node whose inputs are known
 * and which is foldable (ait_node_foldable) is run through `fold` (the
 * loader passes ait_eager_run_node; NULL: no folding), and small results
 * are kept as known values. */
ait_status ait_graph_infer_shapes(ait_graph *g, ait_node_eval_fn fold);

/* Shared shape functions. */
ait_status ait_shape_same(ait_graph *g, const ait_node *n); /* out0 = in0 */
ait_status
ait_shape_broadcast_fn(ait_graph *g,
                       const ait_node *n); /* numpy broadcast of all inputs, dtype of in0 */
ait_status ait_shape_compare_fn(ait_graph *g, const ait_node *n); /* broadcast, dtype bool */

#endif
