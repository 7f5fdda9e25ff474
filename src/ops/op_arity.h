/* Which inputs an operator requires, from the ONNX schemas (generated table
 * in op_arity.c, by scripts/gen_arity.py). The executor refuses a node that
 * lacks one, so a kernel never sees NULL where the spec promises a tensor
 * (a node `Identity("")` used to reach the kernel at load-time folding). */
#ifndef AIT_OPS_OP_ARITY_H
#define AIT_OPS_OP_ARITY_H

#include <stdint.h>

#include "core/tensor.h"
#include "ir/graph.h"

typedef struct ait_op_arity {
  const char *domain; /* "" for ai.onnx */
  const char *name;
  int since;         /* the version from which this mask holds */
  uint32_t required; /* bit i: input i is required */
} ait_op_arity;

extern const ait_op_arity ait_op_arities[]; /* sorted by (domain, name, since) */
extern const int ait_op_arities_n;

/* Bit mask of the inputs node n must have at its opset (0 for ops the ONNX
 * schemas do not know, e.g. fused or contrib ops). */
uint32_t ait_op_required_inputs(const ait_node *n);

/* Index of the first required input of n that is absent (i >= n_in or
 * in[i] == NULL), or -1 when all are present. */
int ait_op_missing_input(const ait_node *n, const ait_tensor *const *in, int n_in);

#endif
