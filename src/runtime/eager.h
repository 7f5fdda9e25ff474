/* The reference executor ("eager"): runs a graph node by node in topological
 * order with the registry's reference kernels, freeing each intermediate
 * after its last use. It is the oracle every other backend is checked
 * against, so it favours clarity over speed. */
#ifndef AIT_RUNTIME_EAGER_H
#define AIT_RUNTIME_EAGER_H

#include "core/tensor.h"
#include "ir/graph.h"

/* Run one node outside any graph run (used for folding at load time).
 * out[0..n->n_out) receive new tensors the caller owns (NULL for unused). */
ait_status ait_eager_run_node(const ait_node *n, const ait_tensor *const *in, int n_in,
                              ait_tensor **out);

/* Run one node whose subgraphs (If/Loop/Scan bodies) another executor runs:
 * every body run the node's kernel asks for goes to body(user, ...), with
 * ait_kctx_run_graph's contract (inputs borrowed, outputs[0..body->n_outputs)
 * new tensors the caller owns; outer-scope values are body's business). */
typedef ait_status (*ait_body_fn)(void *user, const ait_graph *body,
                                  const ait_tensor *const *inputs, int n_inputs,
                                  ait_tensor **outputs);
ait_status ait_eager_run_node_bodies(const ait_node *n, const ait_tensor *const *in, int n_in,
                                     ait_tensor **out, ait_body_fn body, void *user);

/* Check that every node of g (and its subgraphs) has a reference kernel.
 * AIT_E_UNSUPPORTED naming the node, op and opset otherwise. */
ait_status ait_eager_check(const ait_graph *g);
/* The error for node n, which has no reference kernel: names the node, the
 * op, its domain (ai.onnx for ""), the model's opset and why ("unknown op",
 * "needs opset >= N"). Returns AIT_E_UNSUPPORTED. */
ait_status ait_eager_unsupported(const ait_node *n);

/* Run a top-level graph. inputs[i] is graph input i (borrowed, not copied).
 * outputs[0..g->n_outputs) receive new tensors the caller owns. */
ait_status ait_eager_run(const ait_graph *g, const ait_tensor *const *inputs, int n_inputs,
                         ait_tensor **outputs);

#endif
