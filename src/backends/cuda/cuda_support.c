/* supports() of the cuda backend. A node runs here when either
 *  - it is computable on the host while planning: Shape/Size, or a
 *    deterministic op whose inputs are all constants or themselves so
 *    (the shape arithmetic exporters write around Reshape), with a result
 *    small enough to keep or an op the device can also run; or
 *  - the op table (cuda_ops.c) has a device lowering for it, its tensors
 *    have types the device stores, and the op's own check passes. */
#ifdef AIT_HAVE_CUDA

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_impl.h"
#include "ir/passes/passes.h"

bool cu_dtype_ok(ait_dtype dt) {
  switch (dt) {
  case AIT_FLOAT32:
  case AIT_FLOAT16:
  case AIT_BFLOAT16:
  case AIT_INT64:
  case AIT_INT32:
  case AIT_INT8:
  case AIT_UINT8:
  case AIT_BOOL: return true;
  default: return false;
  }
}

static bool has_subgraph(const ait_node *n) {
  for (int k = 0; k < n->n_attrs; k++)
    if (n->attrs[k].g) return true;
  return false;
}

static bool is_shape_op(const ait_node *n) {
  return !n->domain[0] && (!strcmp(n->op_type, "Shape") || !strcmp(n->op_type, "Size"));
}

/* Iterative on the producer chain would be nicer; depth is bounded by the
 * graph's depth, a few thousand frames at most. */
bool cu_host_input(const ait_graph *g, int v) {
  const ait_value *val = &g->values[v];
  if (val->producer >= 0 || val->init || val->type != AIT_VT_TENSOR || val->rank < 0) return false;
  if (val->dtype != AIT_INT64 && val->dtype != AIT_INT32) return false;
  bool input = false;
  for (int i = 0; i < g->n_inputs && !input; i++)
    input = g->inputs[i] == v;
  int64_t n = 1;
  for (int k = 0; k < val->rank; k++) {
    if (val->dims[k].v < 0) return false;
    n *= val->dims[k].v;
  }
  return input && n <= CU_HOST_INPUT_MAX;
}

bool cu_value_static(const ait_graph *g, int v, signed char *memo) {
  if (v < 0 || v >= g->n_values) return false;
  if (memo[v]) return memo[v] > 0;
  const ait_value *val = &g->values[v];
  bool r;
  memo[v] = -1; /* a cycle (malformed graph) reads as not static */
  if (val->producer < 0 || val->producer >= g->n_nodes)
    r = (val->init != NULL && !val->outer) || cu_host_input(g, v);
  else
    r = cu_node_static(g, &g->nodes[val->producer], memo);
  memo[v] = r ? 1 : -1;
  return r;
}

bool cu_node_static(const ait_graph *g, const ait_node *n, signed char *memo) {
  if (is_shape_op(n)) return true;
  if (!ait_node_foldable(n)) return false;
  for (int k = 0; k < n->n_in; k++)
    if (n->in[k] >= 0 && !cu_value_static(g, n->in[k], memo)) return false;
  return true;
}

/* A node computed while planning that has no CUDA kernel: its results are
 * kept as plan constants, so they must fit CU_FOLD_HOST_MAX; dims not known
 * before planning (computed from the input shapes) are taken on trust, and
 * the plan fails naming the node when they do not fit. */
static bool small_or_int(const ait_graph *g, const ait_node *n) {
  for (int k = 0; k < n->n_out; k++) {
    if (n->out[k] < 0) continue;
    const ait_value *v = &g->values[n->out[k]];
    if (v->dtype == AIT_INT64 || v->dtype == AIT_INT32 || v->dtype == AIT_BOOL) continue;
    if (v->init || v->rank < 0) continue;
    int64_t numel = 1;
    bool known = true;
    for (int d = 0; d < v->rank && known; d++) {
      known = v->dims[d].v >= 0;
      numel *= known ? v->dims[d].v : 1;
    }
    if (known && numel > CU_FOLD_HOST_MAX) return false;
  }
  return true;
}

static bool supports(const ait_graph *g, const ait_node *n, signed char *memo, char *why,
                     size_t len) {
  if (has_subgraph(n)) {
    snprintf(why, len, "%s: control flow (a node with a subgraph) is not supported", n->op_type);
    return false;
  }
  bool fused = !strcmp(n->domain, AIT_FUSED_DOMAIN);
  if ((!n->op || !n->op->kernel) && !fused) {
    const char *reason = "unknown op";
    ait_op_lookup(n->domain, n->op_type, n->opset, &reason);
    snprintf(why, len, "%s at opset %d: %s", n->op_type, n->opset, reason);
    return false;
  }
  const cu_op_row *row = cu_op_find(n->domain, n->op_type);
  if (cu_node_static(g, n, memo)) {
    if (row || small_or_int(g, n)) return true;
    snprintf(why, len,
             "%s is computed from constants while planning, but its result is too big to "
             "keep (over 2^24 elements) and there is no CUDA kernel for it",
             n->op_type);
    return false;
  }
  if (!row) {
    snprintf(why, len, "no CUDA kernel for %s%s%s (and its inputs are not all constants or shapes)",
             n->domain[0] ? n->domain : "", n->domain[0] ? "." : "", n->op_type);
    return false;
  }
  for (int k = 0; k < n->n_in + n->n_out; k++) {
    int v = k < n->n_in ? n->in[k] : n->out[k - n->n_in];
    if (v < 0) continue;
    ait_dtype dt = g->values[v].dtype;
    if (g->values[v].type != AIT_VT_TENSOR) {
      snprintf(why, len, "%s: '%s' is a sequence or optional; the cuda backend runs tensors only",
               n->op_type, g->values[v].name);
      return false;
    }
    if (dt != AIT_UNDEFINED && !cu_dtype_ok(dt)) {
      snprintf(why, len, "%s %s %d ('%s') is %s, a type the cuda backend does not handle",
               n->op_type, k < n->n_in ? "input" : "output", k < n->n_in ? k : k - n->n_in,
               g->values[v].name, ait_dtype_name(dt));
      return false;
    }
  }
  return !row->check || row->check(g, n, memo, why, len);
}

bool cu_supports_node(const ait_graph *g, const ait_node *n, char *why, size_t len) {
  signed char *memo = calloc((size_t)g->n_values + 1, 1);
  if (!memo) {
    snprintf(why, len, "out of memory");
    return false;
  }
  bool ok = supports(g, n, memo, why, len);
  free(memo);
  return ok;
}

#endif
