/* Reduce* kernels: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd,
 * ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceSumSquare.
 *
 * One generic reduction over any set of axes: every input element is folded
 * into the accumulator of its output element, found by walking the input in
 * row-major order with output strides that are 0 along reduced axes. Float
 * inputs accumulate in double; integer inputs accumulate exactly in 64-bit
 * integers (wrapping like the C type does). float32 Sum/Mean over trailing
 * axes (the transformer case: LayerNorm decompositions, pooling) take a
 * direct loop.
 *
 * Axes are an attribute up to opset 12 (ReduceSum) / 17 (the others) and
 * input 1 afterwards, with noop_with_empty_axes. No axes means all axes;
 * with noop_with_empty_axes the reduction runs over an empty set of axes,
 * i.e. each output element sees exactly one input element (as the ONNX
 * reference does: ReduceSumSquare then squares, ReduceL1 takes |x|). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/shape.h"
#include "ops/reduce_impl.h"

typedef enum red_op {
  RED_SUM,
  RED_MEAN,
  RED_MAX,
  RED_MIN,
  RED_PROD,
  RED_L1,
  RED_L2,
  RED_LOG_SUM,
  RED_LOG_SUM_EXP,
  RED_SUM_SQUARE
} red_op;

/* Opset from which axes are input 1 instead of an attribute. */
static int axes_input_since(const char *op_type) {
  return strcmp(op_type, "ReduceSum") == 0 ? 13 : 18;
}

/* Reduced axes of a rank-`rank` input. n_axes == 0 means all axes, or none
 * when noop is set. Duplicate or out-of-range axes are errors. */
static ait_status mark_axes(int rank, const int64_t *axes, int n_axes, bool noop, bool *red) {
  for (int d = 0; d < AIT_MAX_RANK; d++)
    red[d] = false;
  if (rank == 0) return AIT_OK; /* a scalar reduces to itself */
  if (n_axes == 0) {
    for (int d = 0; d < rank; d++)
      red[d] = !noop;
    return AIT_OK;
  }
  for (int i = 0; i < n_axes; i++) {
    int a;
    AIT_TRY(ait_norm_axis(axes[i], rank, &a));
    if (red[a]) return ait_err(AIT_E_INVALID_ARG, "axis %lld is listed twice", (long long)axes[i]);
    red[a] = true;
  }
  return AIT_OK;
}

/* Axes of a node at run time: attribute or input 1, depending on opset. */
static ait_status node_axes(const ait_node *node, const ait_tensor *const *in, int n_in,
                            int64_t *axes, int *n_axes, bool *noop) {
  *n_axes = 0;
  *noop = false;
  if (node->opset >= axes_input_since(node->op_type)) {
    if (n_in > 1 && in[1]) {
      ait_status s = ait_read_ints(in[1], axes, AIT_MAX_RANK, n_axes);
      if (s != AIT_OK) return ait_err_prefix(s, "input 'axes'");
    }
    if (*n_axes == 0) *noop = ait_attr_int(node, "noop_with_empty_axes", 0) != 0;
    return AIT_OK;
  }
  int n;
  const int64_t *a = ait_attr_ints(node, "axes", &n);
  if (n > AIT_MAX_RANK)
    return ait_err(AIT_E_INVALID_ARG, "%d axes given, at most %d fit", n, AIT_MAX_RANK);
  if (n) memcpy(axes, a, (size_t)n * sizeof *axes);
  *n_axes = n;
  return AIT_OK;
}

/* ---- walking the input with output offsets ----------------------------- */

typedef struct red_iter {
  int rank;
  int64_t dims[AIT_MAX_RANK];
  int64_t ostr[AIT_MAX_RANK]; /* output stride per input axis, 0 if reduced */
  int64_t idx[AIT_MAX_RANK];
  int64_t o; /* output offset of the current input element */
} red_iter;

static void iter_init(red_iter *it, const ait_tensor *x, const bool *red) {
  it->rank = x->rank;
  it->o = 0;
  int64_t s = 1;
  for (int d = x->rank - 1; d >= 0; d--) {
    it->dims[d] = x->dims[d];
    it->idx[d] = 0;
    it->ostr[d] = red[d] ? 0 : s;
    if (!red[d]) s *= x->dims[d];
  }
}

static inline void iter_next(red_iter *it) {
  for (int d = it->rank - 1; d >= 0; d--) {
    it->o += it->ostr[d];
    if (++it->idx[d] < it->dims[d]) return;
    it->o -= it->ostr[d] * it->dims[d];
    it->idx[d] = 0;
  }
}

/* ---- float inputs: accumulate in double -------------------------------- */

static ait_status reduce_float(red_op op, const ait_tensor *x, const bool *red, ait_tensor *y) {
  const ait_dtype_traits *tr = ait_dtype_traits_of(x->dtype);
  int64_t n = ait_tensor_numel(x), m = ait_tensor_numel(y);
  if (m == 0) return AIT_OK;
  double *acc = malloc((size_t)m * sizeof *acc);
  double *mx = op == RED_LOG_SUM_EXP ? malloc((size_t)m * sizeof *mx) : NULL;
  if (!acc || (op == RED_LOG_SUM_EXP && !mx)) {
    free(acc);
    free(mx);
    return ait_err(AIT_E_NOMEM, "out of memory for %lld accumulators", (long long)m);
  }
  double init = op == RED_PROD ? 1.0 : op == RED_MAX ? -INFINITY : op == RED_MIN ? INFINITY : 0.0;
  for (int64_t j = 0; j < m; j++)
    acc[j] = init;
  red_iter it;
  if (op == RED_LOG_SUM_EXP) {
    /* shift by the largest finite element of each group for stability */
    for (int64_t j = 0; j < m; j++)
      mx[j] = -INFINITY;
    iter_init(&it, x, red);
    for (int64_t i = 0; i < n; i++, iter_next(&it)) {
      double v = ait_load_f64(tr, x->data, i);
      if (isfinite(v) && v > mx[it.o]) mx[it.o] = v;
    }
    for (int64_t j = 0; j < m; j++)
      if (mx[j] == -INFINITY) mx[j] = 0.0;
  }
  iter_init(&it, x, red);
  for (int64_t i = 0; i < n; i++, iter_next(&it)) {
    double v = ait_load_f64(tr, x->data, i);
    double *a = &acc[it.o];
    switch (op) {
    case RED_SUM:
    case RED_MEAN:
    case RED_LOG_SUM: *a += v; break;
    case RED_MAX: /* a NaN, once taken, is never replaced */
      if (v > *a || v != v) *a = v;
      break;
    case RED_MIN:
      if (v < *a || v != v) *a = v;
      break;
    case RED_PROD: *a *= v; break;
    case RED_L1: *a += fabs(v); break;
    case RED_L2:
    case RED_SUM_SQUARE: *a += v * v; break;
    case RED_LOG_SUM_EXP: *a += exp(v - mx[it.o]); break;
    }
  }
  double count = (double)(n / m);
  for (int64_t j = 0; j < m; j++) {
    double r = acc[j];
    switch (op) {
    case RED_MEAN: r = r / count; break;
    case RED_L2: r = sqrt(r); break;
    case RED_LOG_SUM: r = log(r); break;
    case RED_LOG_SUM_EXP: r = log(r) + mx[j]; break;
    default: break;
    }
    ait_store_f64(tr, y->data, j, r);
  }
  free(acc);
  free(mx);
  return AIT_OK;
}

/* float32 Sum/Mean over trailing axes: y[r] = sum of row r of length k. */
static void reduce_rows_f32(const float *x, float *y, int64_t rows, int64_t k, bool mean) {
  for (int64_t r = 0; r < rows; r++) {
    const float *p = x + r * k;
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int64_t i = 0;
    for (; i + 4 <= k; i += 4) {
      s0 += p[i];
      s1 += p[i + 1];
      s2 += p[i + 2];
      s3 += p[i + 3];
    }
    for (; i < k; i++)
      s0 += p[i];
    double s = (s0 + s1) + (s2 + s3);
    y[r] = (float)(mean ? s / (double)k : s);
  }
}

/* True when the reduced axes are exactly the last few (at least one). */
static bool trailing_axes(int rank, const bool *red) {
  int d = rank - 1;
  if (d < 0 || !red[d]) return false;
  while (d >= 0 && red[d])
    d--;
  for (; d >= 0; d--)
    if (red[d]) return false;
  return true;
}

/* ---- integer (and bool) inputs: exact 64-bit accumulation --------------- */

static ait_status reduce_int(red_op op, const ait_tensor *x, const bool *red, ait_tensor *y) {
  const ait_dtype_traits *tr = ait_dtype_traits_of(x->dtype);
  bool sgn = tr->is_signed;
  int64_t n = ait_tensor_numel(x), m = ait_tensor_numel(y);
  if (m == 0) return AIT_OK;
  if (op == RED_L2 || op == RED_LOG_SUM || op == RED_LOG_SUM_EXP)
    return reduce_float(op, x, red, y); /* defined through sqrt/log: via double */
  uint64_t *acc = malloc((size_t)m * sizeof *acc);
  bool *seen = calloc((size_t)m, sizeof *seen);
  if (!acc || !seen) {
    free(acc);
    free(seen);
    return ait_err(AIT_E_NOMEM, "out of memory for %lld accumulators", (long long)m);
  }
  for (int64_t j = 0; j < m; j++)
    acc[j] = op == RED_PROD ? 1u : 0u;
  red_iter it;
  iter_init(&it, x, red);
  for (int64_t i = 0; i < n; i++, iter_next(&it)) {
    /* unsigned arithmetic wraps like the target type (no signed overflow) */
    uint64_t v = (uint64_t)ait_load_i64(tr, x->data, i);
    uint64_t *a = &acc[it.o];
    switch (op) {
    case RED_SUM:
    case RED_MEAN: *a += v; break;
    case RED_PROD: *a *= v; break;
    case RED_L1: *a += (sgn && (int64_t)v < 0) ? 0u - v : v; break;
    case RED_SUM_SQUARE: *a += v * v; break;
    case RED_MAX:
    case RED_MIN: {
      bool less = sgn ? (int64_t)v < (int64_t)*a : v < *a;
      bool greater = sgn ? (int64_t)v > (int64_t)*a : v > *a;
      if (!seen[it.o] || (op == RED_MAX ? greater : less)) *a = v;
      seen[it.o] = true;
      break;
    }
    default: break;
    }
  }
  int64_t count = n / m;
  for (int64_t j = 0; j < m; j++) {
    if ((op == RED_MAX || op == RED_MIN) && !seen[j]) {
      /* empty group: the identity, i.e. the type's lowest/highest value
       * (saturating from -inf/inf; bool's are false/true) */
      if (x->dtype == AIT_BOOL)
        ((uint8_t *)y->data)[j] = op != RED_MAX;
      else
        ait_store_f64(tr, y->data, j, op == RED_MAX ? -INFINITY : INFINITY);
      continue;
    }
    uint64_t r = acc[j];
    if (op == RED_MEAN && count > 0) r = sgn ? (uint64_t)((int64_t)r / count) : r / (uint64_t)count;
    ait_store_i64(tr, y->data, j, (int64_t)r);
  }
  free(acc);
  free(seen);
  return AIT_OK;
}

/* ---- kernels ------------------------------------------------------------ */

static ait_status reduce_run(red_op op, const ait_node *node, const ait_tensor *const *in, int n_in,
                             ait_tensor **out) {
  const ait_tensor *x = in[0];
  const ait_dtype_traits *tr = ait_dtype_traits_of(x->dtype);
  bool is_bool = x->dtype == AIT_BOOL && (op == RED_MAX || op == RED_MIN);
  if (!tr || !(tr->is_float || tr->is_int || is_bool))
    return ait_err(AIT_E_DTYPE, "%s does not take %s input", node->op_type,
                   ait_dtype_name(x->dtype));
  int64_t axes[AIT_MAX_RANK];
  int n_axes;
  bool noop, red[AIT_MAX_RANK];
  AIT_TRY(node_axes(node, in, n_in, axes, &n_axes, &noop));
  AIT_TRY(mark_axes(x->rank, axes, n_axes, noop, red));
  bool keep = ait_attr_int(node, "keepdims", 1) != 0;
  int64_t dims[AIT_MAX_RANK];
  int rank = 0;
  for (int d = 0; d < x->rank; d++) {
    if (!red[d])
      dims[rank++] = x->dims[d];
    else if (keep)
      dims[rank++] = 1;
  }
  ait_tensor *y = ait_tensor_new(x->dtype, rank, dims);
  if (!y) return AIT_E_NOMEM;
  ait_status s;
  int64_t m = ait_tensor_numel(y);
  if (x->dtype == AIT_FLOAT32 && (op == RED_SUM || op == RED_MEAN) && m > 0 &&
      ait_tensor_numel(x) > 0 && trailing_axes(x->rank, red)) {
    reduce_rows_f32(x->data, y->data, m, ait_tensor_numel(x) / m, op == RED_MEAN);
    s = AIT_OK;
  } else if (tr->is_float) {
    s = reduce_float(op, x, red, y);
  } else {
    s = reduce_int(op, x, red, y);
  }
  if (s != AIT_OK) {
    ait_tensor_free(y);
    return s;
  }
  out[0] = y;
  return AIT_OK;
}

#define REDUCE_KERNEL(fn, op)                                                                      \
  AIT_REDUCE_KERNEL(fn) { return reduce_run(op, node, in, n_in, out); }
REDUCE_KERNEL(ait_k_reduce_sum, RED_SUM)
REDUCE_KERNEL(ait_k_reduce_mean, RED_MEAN)
REDUCE_KERNEL(ait_k_reduce_max, RED_MAX)
REDUCE_KERNEL(ait_k_reduce_min, RED_MIN)
REDUCE_KERNEL(ait_k_reduce_prod, RED_PROD)
REDUCE_KERNEL(ait_k_reduce_l1, RED_L1)
REDUCE_KERNEL(ait_k_reduce_l2, RED_L2)
REDUCE_KERNEL(ait_k_reduce_log_sum, RED_LOG_SUM)
REDUCE_KERNEL(ait_k_reduce_log_sum_exp, RED_LOG_SUM_EXP)
REDUCE_KERNEL(ait_k_reduce_sum_square, RED_SUM_SQUARE)

/* ---- shape -------------------------------------------------------------- */

ait_status ait_reduce_shape(ait_graph *g, const ait_node *n) {
  ait_value *x = ait_node_in(g, n, 0);
  if (!x) return AIT_OK;
  bool keep = ait_attr_int(n, "keepdims", 1) != 0;
  if (x->rank < 0) {
    ait_set_out(g, n, 0, x->dtype, -1, NULL);
    return AIT_OK;
  }
  int64_t axes[AIT_MAX_RANK];
  int n_axes = 0;
  bool noop = false, red[AIT_MAX_RANK];
  ait_dim dims[AIT_MAX_RANK];
  if (n->opset >= axes_input_since(n->op_type)) {
    ait_value *a = ait_node_in(g, n, 1);
    if (a && !a->init) { /* axes known only at run time */
      for (int d = 0; d < x->rank; d++)
        dims[d] = (ait_dim){-1, NULL};
      ait_set_out(g, n, 0, x->dtype, keep ? x->rank : -1, dims);
      return AIT_OK;
    }
    if (a && ait_read_ints(a->init, axes, AIT_MAX_RANK, &n_axes) != AIT_OK)
      return ait_err_prefix(AIT_E_SHAPE, "%s: input 'axes'", ait_node_desc(n));
    if (n_axes == 0) noop = ait_attr_int(n, "noop_with_empty_axes", 0) != 0;
  } else {
    const int64_t *a = ait_attr_ints(n, "axes", &n_axes);
    if (n_axes > AIT_MAX_RANK)
      return ait_err(AIT_E_SHAPE, "%s: %d axes given, at most %d fit", ait_node_desc(n), n_axes,
                     AIT_MAX_RANK);
    if (n_axes) memcpy(axes, a, (size_t)n_axes * sizeof *axes);
  }
  if (mark_axes(x->rank, axes, n_axes, noop, red) != AIT_OK)
    return ait_err_prefix(AIT_E_SHAPE, "%s", ait_node_desc(n));
  int rank = 0;
  for (int d = 0; d < x->rank; d++) {
    if (!red[d])
      dims[rank++] = x->dims[d];
    else if (keep)
      dims[rank++] = (ait_dim){1, NULL};
  }
  ait_set_out(g, n, 0, x->dtype, rank, dims);
  return AIT_OK;
}
