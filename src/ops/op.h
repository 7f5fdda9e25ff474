/* Operators as data.
 *
 * Each operator implementation is one row: (domain, op, since-version,
 * accepted dtypes of input 0, shape function, kernel). A family of operators
 * (elementwise, tensor, nn, ...) keeps its rows in one table in
 * src/ops/<family>.c; src/ops/registry.c lists the families. A node resolves
 * to the row of its (domain, op) with the highest since-version that is
 * <= the model's opset for that domain (as cONNXr does), so a model at
 * opset 11 never gets opset-13 semantics.
 *
 * Kernel contract (reference executor `eager`):
 *  - in[i] is the i-th input, NULL when the optional input is absent; inputs
 *    are read-only and may be borrowed caller memory.
 *  - The kernel allocates each output with ait_tensor_new() (or clones) and
 *    stores it in out[i]; it owns nothing afterwards. Outputs the node does
 *    not use (node->out[i] == -1) may be left NULL.
 *  - On failure it returns the status from ait_err(...) with a message that
 *    names the problem; the executor prefixes the node and frees any non-NULL
 *    out[i]. Kernels never abort, exit or print.
 *  - ctx gives access to subgraph execution (If/Loop/Scan) and is otherwise
 *    opaque. */
#ifndef AIT_OPS_OP_H
#define AIT_OPS_OP_H

#include <stdint.h>

#include "aitune.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/tensor.h"
#include "ir/graph.h"

typedef struct ait_kctx ait_kctx;

typedef ait_status (*ait_kernel_fn)(ait_kctx *ctx, const ait_node *node,
                                    const ait_tensor *const *in, int n_in, ait_tensor **out,
                                    int n_out);

/* Static shape and dtype inference for one node: reads the input values of g
 * (dtype, rank, dims, and init for constant inputs) and fills the output
 * values. Leaves what it cannot know as unknown (rank -1 / dim -1). Returns
 * an error only when the inputs are certainly invalid (AIT_E_SHAPE/DTYPE). */
typedef ait_status (*ait_shape_fn)(ait_graph *g, const ait_node *node);

typedef struct ait_op_def {
  const char *domain; /* "" for ai.onnx */
  const char *name;
  int since;          /* since-version of this implementation */
  uint32_t dtypes;    /* AIT_DT_BIT mask accepted for input 0; 0 = any */
  ait_shape_fn shape; /* NULL: inferred by folding when inputs are constant */
  ait_kernel_fn kernel;
} ait_op_def;

typedef struct ait_op_family {
  const char *name;
  const ait_op_def *rows; /* ait_op_family_size() rows */
} ait_op_family;

/* All families, NULL-name terminated. */
extern const ait_op_family ait_op_families[];

/* Row for (domain, op) at `opset`: highest since <= opset. NULL when the op is
 * unknown or only newer versions exist; *why then says which
 * ("unknown op" / "needs opset >= N"). */
/* Number of rows of family f (index into ait_op_families). */
int ait_op_family_size(int family);
const ait_op_def *ait_op_lookup(const char *domain, const char *name, int64_t opset,
                                const char **why);

/* Run a subgraph of the current node's graph (If/Loop/Scan bodies). inputs
 * are the body's formal inputs in order (borrowed); outputs[] receives
 * g->n_outputs new tensors the caller owns. Outer-scope values resolve
 * against the graph running the current node. */
ait_status ait_kctx_run_graph(ait_kctx *ctx, const ait_graph *body, const ait_tensor *const *inputs,
                              int n_inputs, ait_tensor **outputs);

/* ---- helpers shared by kernels ---------------------------------------- */

/* Normalize axis into [0, rank) (negative counts from the end);
 * AIT_E_INVALID_ARG naming the axis when out of range. */
ait_status ait_norm_axis(int64_t axis, int rank, int *out);
/* Read an integer tensor (int32/int64) of at most max elements into vals. */
ait_status ait_read_ints(const ait_tensor *t, int64_t *vals, int max, int *n);
/* A scalar (or 1-element) tensor of any numeric dtype as double / int64. */
double ait_scalar_f64(const ait_tensor *t);
int64_t ait_scalar_i64(const ait_tensor *t);
/* New output tensor with dtype/shape of `like`. */
static inline ait_tensor *ait_tensor_new_like(const ait_tensor *like) {
  return ait_tensor_new(like->dtype, like->rank, like->dims);
}

#endif
