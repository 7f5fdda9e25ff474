/* What the graph tests read of a rewritten graph and of an output against
 * eager's, written once (test_native, _conv, _elt, _rnn, _nhwc, _pw, _mobile, native_check.h). */
#ifndef AIT_TEST_GRAPH_CHECK_H
#define AIT_TEST_GRAPH_CHECK_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/tensor.h"
#include "ir/graph.h"

/* Nodes of g whose op type is `op`. */
static inline int check_count_op(const ait_graph *g, const char *op) {
  int n = 0;
  for (int i = 0; i < g->n_nodes; i++)
    n += !strcmp(g->nodes[i].op_type, op);
  return n;
}

/* Largest |a - b| / (1 + |b|) over two float32 tensors; NaN as soon as
 * one element gives NaN (a later !(d <= NaN) would otherwise replace it,
 * and a NaN output must fail every "<= tol" check). Other dtypes must be
 * equal bit for bit (0 or INFINITY). INFINITY on a shape or dtype mismatch. */
static inline double check_rel_diff(const ait_tensor *a, const ait_tensor *b) {
  if (!a || !b || a->dtype != b->dtype || a->rank != b->rank ||
      memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->rank))
    return INFINITY;
  if (a->dtype != AIT_FLOAT32)
    return memcmp(a->data, b->data, ait_tensor_nbytes(a)) ? INFINITY : 0.0;
  double m = 0;
  const float *x = a->data, *y = b->data;
  for (int64_t i = 0; i < ait_tensor_numel(a); i++) {
    double d = fabs((double)x[i] - y[i]) / (1.0 + fabs((double)y[i]));
    if (isnan(d)) return d;
    if (d > m) m = d;
  }
  return m;
}

#endif
