/* MaxPool (with optional Indices), AveragePool, LpPool and their Global
 * forms. Values are computed in double over a converted copy of the input
 * (exact for float32 and the small integer types MaxPool takes), which keeps
 * one loop for every dtype; pooling is memory-bound, so this costs little. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/nn_impl.h"

typedef enum { POOL_MAX, POOL_AVG, POOL_LP } pool_kind;

typedef struct pool_args {
  pool_kind kind;
  bool count_include_pad;
  double p;          /* LpPool exponent */
  int storage_order; /* MaxPool Indices: 0 row-major, 1 column-major */
  int64_t NC;        /* N * C planes */
  nn_win w;
  int64_t in_n, out_n;
} pool_args;

/* One output value of plane x (and the flat in-plane index of the max). */
static double pool_one(const pool_args *a, const double *x, const int64_t *o, int64_t *arg) {
  const nn_win *w = &a->w;
  int nsp = w->nsp;
  int64_t start[NN_MAX_SP], lo[NN_MAX_SP], hi[NN_MAX_SP], kk[NN_MAX_SP];
  double padded = 1; /* window positions inside the explicitly padded input */
  for (int i = 0; i < nsp; i++) {
    start[i] = o[i] * w->s[i] - w->pb[i];
    int64_t K = w->k[i], d = w->d[i] > 0 ? w->d[i] : 1;
    int64_t l = nn_win_taps_below(start[i], d, K, 0),
            h = nn_win_taps_below(start[i], d, K, w->in[i]);
    int64_t pl = nn_win_taps_below(start[i], d, K, -w->pb[i]);
    int64_t ph = nn_win_taps_below(start[i], d, K, w->in[i] + w->pe[i]);
    lo[i] = l, hi[i] = h > l ? h : l;
    padded *= ph > pl ? (double)(ph - pl) : 0.0;
  }
  double acc = a->kind == POOL_MAX ? -INFINITY : 0.0;
  int64_t count = 0, best = -1;
  for (int i = 0; i < nsp; i++) {
    if (lo[i] >= hi[i]) goto empty;
    kk[i] = lo[i];
  }
  for (;;) {
    int64_t idx = 0;
    for (int i = 0; i < nsp; i++)
      idx = idx * w->in[i] + start[i] + kk[i] * w->d[i];
    double v = x[idx];
    if (a->kind == POOL_MAX) {
      if (best < 0 || v > acc) acc = v, best = idx;
    } else if (a->kind == POOL_AVG) {
      acc += v;
    } else {
      acc += pow(fabs(v), a->p);
    }
    count++;
    int i = nsp - 1;
    for (; i >= 0; i--) {
      if (++kk[i] < hi[i]) break;
      kk[i] = lo[i];
    }
    if (i < 0) break;
  }
empty:
  if (arg) *arg = best;
  if (a->kind == POOL_AVG) return acc / (double)(a->count_include_pad ? padded : count);
  if (a->kind == POOL_LP) return pow(acc, 1.0 / a->p);
  return acc;
}

/* Flat index of in-plane row-major index idx in column-major order. */
static int64_t col_major(const nn_win *w, int64_t idx) {
  int64_t c[NN_MAX_SP], r = 0;
  for (int i = w->nsp - 1; i >= 0; i--)
    c[i] = idx % w->in[i], idx /= w->in[i];
  for (int i = w->nsp - 1; i >= 0; i--)
    r = r * w->in[i] + c[i];
  return r;
}

static ait_status pool_run(const ait_node *node, const ait_tensor *X, ait_tensor **out, int n_out,
                           pool_args *a) {
  if (X->rank < 3)
    return ait_err(AIT_E_SHAPE, "pool input must be N x C x spatial..., got rank %d", X->rank);
  bool ceil_mode = ait_attr_int(node, "ceil_mode", 0) != 0;
  bool dil = nn_pool_has_dilations(node);
  AIT_TRY(nn_win_conv(node, X->rank - 2, X->dims + 2, NULL, ceil_mode, dil, &a->w));
  a->NC = X->dims[0] * X->dims[1];
  a->in_n = nn_win_in_numel(&a->w);
  a->out_n = nn_win_out_numel(&a->w);
  int64_t dims[AIT_MAX_RANK] = {X->dims[0], X->dims[1]};
  memcpy(dims + 2, a->w.out, (size_t)a->w.nsp * sizeof *dims);
  AIT_TRY(nn_new(&out[0], X->dtype, X->rank, dims));
  bool want_idx = a->kind == POOL_MAX && n_out > 1 && node->out[1] >= 0;
  if (want_idx) AIT_TRY(nn_new(&out[1], AIT_INT64, X->rank, dims));
  double *x = nn_load_f64(X), *y = malloc((size_t)(a->NC * a->out_n + 1) * sizeof *y);
  if (!x || !y) {
    free(x), free(y);
    return ait_err(AIT_E_NOMEM, "out of memory for pooling buffers");
  }
  int64_t *ind = want_idx ? out[1]->data : NULL;
  for (int64_t pl = 0; pl < a->NC; pl++) {
    int64_t o[NN_MAX_SP] = {0};
    for (int64_t q = 0; q < a->out_n; q++) {
      int64_t arg = -1, at = pl * a->out_n + q;
      y[at] = pool_one(a, x + pl * a->in_n, o, ind ? &arg : NULL);
      if (ind)
        ind[at] = pl * a->in_n + (arg < 0 ? 0 : a->storage_order ? col_major(&a->w, arg) : arg);
      for (int i = a->w.nsp - 1; i >= 0; i--) {
        if (++o[i] < a->w.out[i]) break;
        o[i] = 0;
      }
    }
  }
  nn_store_f64(out[0], y);
  free(x), free(y);
  return AIT_OK;
}

static ait_status lp_exponent(const ait_node *node, double *p) {
  const ait_attr *at = ait_node_attr(node, "p");
  *p = 2.0;
  if (at) *p = at->type == AIT_ATTR_FLOAT ? (double)at->f : (double)at->i;
  if (!(*p > 0.0)) return ait_err(AIT_E_INVALID_ARG, "LpPool p = %g must be positive", *p);
  return AIT_OK;
}

NN_KERNEL(nn_maxpool_kernel) {
  NN_NEED_IN0;
  const ait_tensor *X = in[0];
  if (!(AIT_DT_FLOATS & AIT_DT_BIT(X->dtype)) && X->dtype != AIT_INT8 && X->dtype != AIT_UINT8)
    return ait_err(AIT_E_DTYPE, "MaxPool does not take %s", ait_dtype_name(X->dtype));
  pool_args a = {.kind = POOL_MAX};
  a.storage_order = (int)ait_attr_int(node, "storage_order", 0);
  if (a.storage_order != 0 && a.storage_order != 1)
    return ait_err(AIT_E_INVALID_ARG, "storage_order = %d", a.storage_order);
  return pool_run(node, X, out, n_out, &a);
}

NN_KERNEL(nn_avgpool_kernel) {
  NN_NEED_IN0;
  AIT_TRY(nn_check_float(in[0], "X"));
  pool_args a = {.kind = POOL_AVG};
  a.count_include_pad = ait_attr_int(node, "count_include_pad", 0) != 0;
  return pool_run(node, in[0], out, n_out, &a);
}

NN_KERNEL(nn_lppool_kernel) {
  NN_NEED_IN0;
  AIT_TRY(nn_check_float(in[0], "X"));
  pool_args a = {.kind = POOL_LP};
  AIT_TRY(lp_exponent(node, &a.p));
  return pool_run(node, in[0], out, n_out, &a);
}

/* ---- global pools: one value per (n, c) plane --------------------------- */

static ait_status global_run(const ait_node *node, const ait_tensor *X, ait_tensor **out,
                             pool_kind kind) {
  if (!X) return ait_err(AIT_E_INVALID_ARG, "input X is required");
  AIT_TRY(nn_check_float(X, "X"));
  if (X->rank < 2) return ait_err(AIT_E_SHAPE, "input must be N x C x ..., got rank %d", X->rank);
  double p = 2.0;
  if (kind == POOL_LP) AIT_TRY(lp_exponent(node, &p));
  int64_t dims[AIT_MAX_RANK] = {X->dims[0], X->dims[1]};
  for (int i = 2; i < X->rank; i++)
    dims[i] = 1;
  AIT_TRY(nn_new(&out[0], X->dtype, X->rank, dims));
  int64_t planes = X->dims[0] * X->dims[1], n = planes ? ait_tensor_numel(X) / planes : 0;
  double *x = nn_load_f64(X), *y = malloc((size_t)(planes + 1) * sizeof *y);
  if (!x || !y) {
    free(x), free(y);
    return ait_err(AIT_E_NOMEM, "out of memory for pooling buffers");
  }
  for (int64_t pl = 0; pl < planes; pl++) {
    const double *v = x + pl * n;
    double acc = kind == POOL_MAX ? -INFINITY : 0.0;
    for (int64_t i = 0; i < n; i++) {
      if (kind == POOL_MAX)
        acc = (i == 0 || v[i] > acc) ? v[i] : acc;
      else if (kind == POOL_AVG)
        acc += v[i];
      else
        acc += pow(fabs(v[i]), p);
    }
    if (kind == POOL_AVG) acc = n ? acc / (double)n : NAN;
    if (kind == POOL_LP) acc = pow(acc, 1.0 / p);
    y[pl] = acc;
  }
  nn_store_f64(out[0], y);
  free(x), free(y);
  return AIT_OK;
}

NN_KERNEL(nn_global_avgpool_kernel) {
  return global_run(node, n_in > 0 ? in[0] : NULL, out, POOL_AVG);
}
NN_KERNEL(nn_global_maxpool_kernel) {
  return global_run(node, n_in > 0 ? in[0] : NULL, out, POOL_MAX);
}
NN_KERNEL(nn_global_lppool_kernel) {
  return global_run(node, n_in > 0 ? in[0] : NULL, out, POOL_LP);
}
