/* Softmax, LogSoftmax, Hardmax, ArgMax, ArgMin.
 *
 * The softmax family normalises along groups laid out as [outer, n, inner]:
 * before opset 13 the input is coerced to 2-D at `axis` (default 1), so a
 * group is the whole trailing block [axis, rank) (inner = 1); from opset 13
 * a group is the single axis `axis` (default -1). float32 groups with
 * inner = 1 (the transformer case) run directly on floats; everything else
 * goes through double. */
#include <math.h>
#include <stdlib.h>

#include "ir/shape.h"
#include "ops/reduce_impl.h"

typedef enum sm_mode { SM_SOFTMAX, SM_LOG, SM_HARD } sm_mode;

typedef struct sm_geo {
  int64_t outer, n, inner;
} sm_geo;

static ait_status softmax_geo(const ait_node *node, const ait_tensor *x, sm_geo *g) {
  bool single_axis = node->opset >= 13;
  int64_t axis = ait_attr_int(node, "axis", single_axis ? -1 : 1);
  g->outer = g->n = g->inner = 1;
  if (x->rank == 0) return AIT_OK;
  int a;
  if (!single_axis && (axis == x->rank)) {
    a = x->rank; /* coerced to [numel, 1] */
  } else {
    AIT_TRY(ait_norm_axis(axis, x->rank, &a));
  }
  for (int d = 0; d < a; d++)
    g->outer *= x->dims[d];
  if (single_axis) {
    g->n = x->dims[a];
    for (int d = a + 1; d < x->rank; d++)
      g->inner *= x->dims[d];
  } else {
    for (int d = a; d < x->rank; d++)
      g->n *= x->dims[d];
  }
  return AIT_OK;
}

/* One group of n contiguous float32 values. */
static void softmax_row_f32(const float *x, float *y, int64_t n, sm_mode mode) {
  float m = x[0];
  int64_t arg = 0;
  for (int64_t i = 1; i < n && m == m; i++)
    if (x[i] > m || x[i] != x[i]) {
      m = x[i];
      arg = i;
    }
  if (mode == SM_HARD) {
    for (int64_t i = 0; i < n; i++)
      y[i] = i == arg ? 1.0f : 0.0f;
    return;
  }
  double s = 0;
  if (mode == SM_LOG) {
    for (int64_t i = 0; i < n; i++)
      s += expf(x[i] - m);
    float ls = (float)log(s);
    for (int64_t i = 0; i < n; i++)
      y[i] = (x[i] - m) - ls;
    return;
  }
  for (int64_t i = 0; i < n; i++) {
    float e = expf(x[i] - m);
    y[i] = e;
    s += e;
  }
  float inv = (float)(1.0 / s);
  for (int64_t i = 0; i < n; i++)
    y[i] *= inv;
}

/* One group in double, in place. NaN as the first maximum of Hardmax wins,
 * as numpy's argmax does. */
static void softmax_row_f64(double *v, int64_t n, sm_mode mode) {
  double m = v[0];
  int64_t arg = 0;
  for (int64_t i = 1; i < n && m == m; i++)
    if (v[i] > m || v[i] != v[i]) {
      m = v[i];
      arg = i;
    }
  if (mode == SM_HARD) {
    for (int64_t i = 0; i < n; i++)
      v[i] = i == arg ? 1.0 : 0.0;
    return;
  }
  double s = 0;
  for (int64_t i = 0; i < n; i++)
    s += exp(v[i] - m);
  if (mode == SM_LOG) {
    double ls = log(s);
    for (int64_t i = 0; i < n; i++)
      v[i] = (v[i] - m) - ls;
  } else {
    for (int64_t i = 0; i < n; i++)
      v[i] = exp(v[i] - m) / s;
  }
}

static ait_status softmax_run(sm_mode mode, const ait_node *node, const ait_tensor *x,
                              ait_tensor **out) {
  const ait_dtype_traits *tr = ait_dtype_traits_of(x->dtype);
  if (!tr || !tr->is_float)
    return ait_err(AIT_E_DTYPE, "%s needs a float input, got %s", node->op_type,
                   ait_dtype_name(x->dtype));
  sm_geo g;
  AIT_TRY(softmax_geo(node, x, &g));
  ait_tensor *y = ait_tensor_new_like(x);
  if (!y) return AIT_E_NOMEM;
  if (ait_tensor_numel(x) == 0) {
    out[0] = y;
    return AIT_OK;
  }
  if (x->dtype == AIT_FLOAT32 && g.inner == 1) {
    const float *xf = x->data;
    float *yf = y->data;
    for (int64_t o = 0; o < g.outer; o++)
      softmax_row_f32(xf + o * g.n, yf + o * g.n, g.n, mode);
    out[0] = y;
    return AIT_OK;
  }
  double *buf = malloc((size_t)g.n * sizeof *buf);
  if (!buf) {
    ait_tensor_free(y);
    return ait_err(AIT_E_NOMEM, "out of memory for a group of %lld values", (long long)g.n);
  }
  for (int64_t o = 0; o < g.outer; o++) {
    for (int64_t i = 0; i < g.inner; i++) {
      int64_t base = o * g.n * g.inner + i;
      for (int64_t k = 0; k < g.n; k++)
        buf[k] = ait_load_f64(tr, x->data, base + k * g.inner);
      softmax_row_f64(buf, g.n, mode);
      for (int64_t k = 0; k < g.n; k++)
        ait_store_f64(tr, y->data, base + k * g.inner, buf[k]);
    }
  }
  free(buf);
  out[0] = y;
  return AIT_OK;
}

AIT_REDUCE_KERNEL(ait_k_softmax) { return softmax_run(SM_SOFTMAX, node, in[0], out); }
AIT_REDUCE_KERNEL(ait_k_log_softmax) { return softmax_run(SM_LOG, node, in[0], out); }
AIT_REDUCE_KERNEL(ait_k_hardmax) { return softmax_run(SM_HARD, node, in[0], out); }

/* ---- ArgMax / ArgMin ---------------------------------------------------- */

/* Sign of a - b for elements i, j of a numeric buffer; NaN is larger than
 * everything (so ArgMax finds it, and ArgMin below treats it specially). */
static int cmp_elem(const ait_dtype_traits *tr, const void *p, int64_t i, int64_t j) {
  if (tr->is_float) {
    double a = ait_load_f64(tr, p, i), b = ait_load_f64(tr, p, j);
    return a < b ? -1 : a > b ? 1 : 0;
  }
  if (tr->is_signed) {
    int64_t a = ait_load_i64(tr, p, i), b = ait_load_i64(tr, p, j);
    return a < b ? -1 : a > b ? 1 : 0;
  }
  uint64_t a = (uint64_t)ait_load_i64(tr, p, i), b = (uint64_t)ait_load_i64(tr, p, j);
  return a < b ? -1 : a > b ? 1 : 0;
}

static bool elem_is_nan(const ait_dtype_traits *tr, const void *p, int64_t i) {
  if (!tr->is_float) return false;
  double v = ait_load_f64(tr, p, i);
  return v != v;
}

typedef struct arg_geo {
  int axis; /* -1 for a scalar input */
  int64_t outer, n, inner;
  int rank;
  int64_t dims[AIT_MAX_RANK];
} arg_geo;

static ait_status arg_geo_of(const ait_node *node, int rank, const int64_t *dims, arg_geo *g) {
  bool keep = ait_attr_int(node, "keepdims", 1) != 0;
  g->outer = g->n = g->inner = 1;
  g->rank = 0;
  g->axis = -1;
  if (rank == 0) return AIT_OK;
  AIT_TRY(ait_norm_axis(ait_attr_int(node, "axis", 0), rank, &g->axis));
  for (int d = 0; d < rank; d++) {
    if (d < g->axis) g->outer *= dims[d];
    if (d > g->axis) g->inner *= dims[d];
    if (d != g->axis)
      g->dims[g->rank++] = dims[d];
    else if (keep)
      g->dims[g->rank++] = 1;
  }
  g->n = dims[g->axis];
  return AIT_OK;
}

static ait_status arg_run(bool is_max, const ait_node *node, const ait_tensor *x,
                          ait_tensor **out) {
  const ait_dtype_traits *tr = ait_dtype_traits_of(x->dtype);
  if (!tr || !(tr->is_float || tr->is_int))
    return ait_err(AIT_E_DTYPE, "%s does not take %s input", node->op_type,
                   ait_dtype_name(x->dtype));
  bool last = ait_attr_int(node, "select_last_index", 0) != 0;
  arg_geo g;
  AIT_TRY(arg_geo_of(node, x->rank, x->dims, &g));
  if (g.n == 0 && g.outer * g.inner > 0)
    return ait_err(AIT_E_INVALID_ARG, "%s over axis %d of size 0", node->op_type, g.axis);
  ait_tensor *y = ait_tensor_new(AIT_INT64, g.rank, g.dims);
  if (!y) return AIT_E_NOMEM;
  int64_t *yd = y->data;
  for (int64_t o = 0; o < g.outer; o++) {
    for (int64_t i = 0; i < g.inner; i++) {
      int64_t base = o * g.n * g.inner + i, best = 0;
      bool best_nan = elem_is_nan(tr, x->data, base);
      for (int64_t k = 1; k < g.n && !best_nan; k++) {
        int64_t at = base + k * g.inner;
        if (elem_is_nan(tr, x->data, at)) { /* the first NaN is both max and min */
          best = k;
          best_nan = true;
          break;
        }
        int c = cmp_elem(tr, x->data, at, base + best * g.inner);
        if ((is_max ? c > 0 : c < 0) || (last && c == 0)) best = k;
      }
      yd[o * g.inner + i] = best;
    }
  }
  out[0] = y;
  return AIT_OK;
}

AIT_REDUCE_KERNEL(ait_k_argmax) { return arg_run(true, node, in[0], out); }
AIT_REDUCE_KERNEL(ait_k_argmin) { return arg_run(false, node, in[0], out); }

ait_status ait_argreduce_shape(ait_graph *g, const ait_node *n) {
  ait_value *x = ait_node_in(g, n, 0);
  if (!x) return AIT_OK;
  if (x->rank < 0) {
    ait_set_out(g, n, 0, AIT_INT64, -1, NULL);
    return AIT_OK;
  }
  bool keep = ait_attr_int(n, "keepdims", 1) != 0;
  ait_dim dims[AIT_MAX_RANK];
  int rank = 0, axis = 0;
  if (x->rank > 0 && ait_norm_axis(ait_attr_int(n, "axis", 0), x->rank, &axis) != AIT_OK)
    return ait_err_prefix(AIT_E_SHAPE, "%s", ait_node_desc(n));
  for (int d = 0; d < x->rank; d++) {
    if (d != axis)
      dims[rank++] = x->dims[d];
    else if (keep)
      dims[rank++] = (ait_dim){1, NULL};
  }
  ait_set_out(g, n, 0, AIT_INT64, rank, dims);
  return AIT_OK;
}
