/* NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
 *
 * Input [N, C, d1..dk] is read as [N, C, D] with D = d1*..*dk, the target
 * [N, d1..dk] as [N, D]. For each (n, d) with target t != ignore_index:
 *   loss[n, d] = -w[t] * logp[n, t, d]     (w[t] = 1 without weights)
 * and ignored positions contribute 0 to the loss and to the weight sum.
 * reduction: "none" -> loss (shape of target), "sum" -> sum of loss,
 * "mean" -> sum of loss / sum of w[t] over the positions not ignored.
 * SoftmaxCrossEntropyLoss first takes logp = log_softmax over C and can
 * also output it (output 1, shape of the input). Math is in double. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/shape.h"
#include "ops/reduce_impl.h"

typedef enum loss_red { LOSS_NONE, LOSS_SUM, LOSS_MEAN } loss_red;

static ait_status loss_reduction(const ait_node *node, loss_red *r) {
  const char *s = ait_attr_str(node, "reduction", "mean");
  if (!strcmp(s, "none"))
    *r = LOSS_NONE;
  else if (!strcmp(s, "sum"))
    *r = LOSS_SUM;
  else if (!strcmp(s, "mean"))
    *r = LOSS_MEAN;
  else
    return ait_err(AIT_E_INVALID_ARG, "reduction '%s' is not none, sum or mean", s);
  return AIT_OK;
}

typedef struct loss_geo {
  int64_t N, C, D;
} loss_geo;

/* Check input/target/weight shapes and dtypes. */
static ait_status loss_check(const ait_node *node, const ait_tensor *x, const ait_tensor *t,
                             const ait_tensor *w, loss_geo *g) {
  const ait_dtype_traits *tr = ait_dtype_traits_of(x->dtype);
  if (!tr || !tr->is_float)
    return ait_err(AIT_E_DTYPE, "%s needs a float input, got %s", node->op_type,
                   ait_dtype_name(x->dtype));
  if (t->dtype != AIT_INT32 && t->dtype != AIT_INT64)
    return ait_err(AIT_E_DTYPE, "target must be int32 or int64, got %s", ait_dtype_name(t->dtype));
  if (x->rank < 2) return ait_err(AIT_E_SHAPE, "input must be [N, C, ...], got rank %d", x->rank);
  char b1[96], b2[96];
  bool ok = t->rank == x->rank - 1 && t->dims[0] == x->dims[0];
  for (int d = 1; ok && d < t->rank; d++)
    ok = t->dims[d] == x->dims[d + 1];
  if (!ok)
    return ait_err(AIT_E_SHAPE, "target %s does not match input %s",
                   ait_shape_str(t->rank, t->dims, b1, sizeof b1),
                   ait_shape_str(x->rank, x->dims, b2, sizeof b2));
  g->N = x->dims[0];
  g->C = x->dims[1];
  g->D = 1;
  for (int d = 2; d < x->rank; d++)
    g->D *= x->dims[d];
  if (w) {
    const ait_dtype_traits *wt = ait_dtype_traits_of(w->dtype);
    if (!wt || !(wt->is_float || wt->is_int))
      return ait_err(AIT_E_DTYPE, "weight must be numeric, got %s", ait_dtype_name(w->dtype));
    if (w->rank != 1 || w->dims[0] != g->C)
      return ait_err(AIT_E_SHAPE, "weight %s must be [C] = [%lld]",
                     ait_shape_str(w->rank, w->dims, b1, sizeof b1), (long long)g->C);
  }
  return AIT_OK;
}

/* The negative log-likelihood of logp ([N, C, D], double) at the target;
 * out0 gets the loss in dtype dt. */
static ait_status nll_core(const ait_node *node, const double *logp, const loss_geo *g,
                           const ait_tensor *t, const ait_tensor *w, ait_dtype dt,
                           ait_tensor **out0) {
  loss_red red = LOSS_MEAN;
  AIT_TRY(loss_reduction(node, &red));
  bool has_ii = ait_node_attr(node, "ignore_index") != NULL;
  int64_t ii = ait_attr_int(node, "ignore_index", 0);
  const ait_dtype_traits *ttr = ait_dtype_traits_of(t->dtype);
  const ait_dtype_traits *wtr = w ? ait_dtype_traits_of(w->dtype) : NULL;
  ait_tensor *y =
      red == LOSS_NONE ? ait_tensor_new(dt, t->rank, t->dims) : ait_tensor_new(dt, 0, NULL);
  if (!y) return AIT_E_NOMEM;
  const ait_dtype_traits *ytr = ait_dtype_traits_of(dt);
  double sum = 0.0, wsum = 0.0;
  for (int64_t n = 0; n < g->N; n++) {
    for (int64_t d = 0; d < g->D; d++) {
      int64_t i = n * g->D + d;
      int64_t c = ait_load_i64(ttr, t->data, i);
      double loss = 0.0;
      if (!(has_ii && c == ii)) {
        if (c < 0 || c >= g->C) {
          ait_tensor_free(y);
          return ait_err(AIT_E_INVALID_ARG, "target %lld at [%lld] is outside [0, %lld)",
                         (long long)c, (long long)i, (long long)g->C);
        }
        double wc = wtr ? ait_load_f64(wtr, w->data, c) : 1.0;
        loss = -wc * logp[(n * g->C + c) * g->D + d];
        wsum += wc;
      }
      sum += loss;
      if (red == LOSS_NONE) ait_store_f64(ytr, y->data, i, loss);
    }
  }
  if (red == LOSS_SUM) ait_store_f64(ytr, y->data, 0, sum);
  if (red == LOSS_MEAN) ait_store_f64(ytr, y->data, 0, sum / wsum);
  *out0 = y;
  return AIT_OK;
}

/* The input as a double array, or NULL (error set). */
static double *load_f64(const ait_tensor *x) {
  int64_t n = ait_tensor_numel(x);
  double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
  if (!v) {
    ait_err(AIT_E_NOMEM, "out of memory for %lld values", (long long)n);
    return NULL;
  }
  const ait_dtype_traits *tr = ait_dtype_traits_of(x->dtype);
  for (int64_t i = 0; i < n; i++)
    v[i] = ait_load_f64(tr, x->data, i);
  return v;
}

AIT_REDUCE_KERNEL(ait_k_nll_loss) {
  if (n_in < 2 || !in[1]) return ait_err(AIT_E_INVALID_ARG, "missing input 'target'");
  const ait_tensor *w = n_in > 2 ? in[2] : NULL;
  loss_geo g;
  AIT_TRY(loss_check(node, in[0], in[1], w, &g));
  double *x = load_f64(in[0]);
  if (!x) return AIT_E_NOMEM;
  ait_status s = nll_core(node, x, &g, in[1], w, in[0]->dtype, &out[0]);
  free(x);
  return s;
}

/* log_softmax over C at each (n, d) of a [N, C, D] array, in place. */
static void log_softmax_c(double *v, const loss_geo *g) {
  for (int64_t n = 0; n < g->N; n++) {
    for (int64_t d = 0; d < g->D; d++) {
      double *p = v + n * g->C * g->D + d;
      double m = -INFINITY, s = 0.0;
      for (int64_t c = 0; c < g->C; c++)
        m = p[c * g->D] > m ? p[c * g->D] : m;
      for (int64_t c = 0; c < g->C; c++)
        s += exp(p[c * g->D] - m);
      double ls = log(s);
      for (int64_t c = 0; c < g->C; c++)
        p[c * g->D] = p[c * g->D] - m - ls;
    }
  }
}

AIT_REDUCE_KERNEL(ait_k_sce_loss) {
  if (n_in < 2 || !in[1]) return ait_err(AIT_E_INVALID_ARG, "missing input 'labels'");
  const ait_tensor *w = n_in > 2 ? in[2] : NULL;
  const ait_tensor *x = in[0];
  loss_geo g;
  AIT_TRY(loss_check(node, x, in[1], w, &g));
  double *logp = load_f64(x);
  if (!logp) return AIT_E_NOMEM;
  log_softmax_c(logp, &g);
  ait_status s = nll_core(node, logp, &g, in[1], w, x->dtype, &out[0]);
  if (s == AIT_OK && n_out > 1 && node->out[1] >= 0) {
    ait_tensor *lp = ait_tensor_new_like(x);
    if (!lp) {
      s = AIT_E_NOMEM;
    } else {
      const ait_dtype_traits *tr = ait_dtype_traits_of(x->dtype);
      for (int64_t i = 0; i < ait_tensor_numel(x); i++)
        ait_store_f64(tr, lp->data, i, logp[i]);
      out[1] = lp;
    }
  }
  free(logp);
  return s;
}

ait_status ait_loss_shape(ait_graph *g, const ait_node *n) {
  ait_value *x = ait_node_in(g, n, 0), *t = ait_node_in(g, n, 1);
  if (!x) return AIT_OK;
  const char *r = ait_attr_str(n, "reduction", "mean");
  if (strcmp(r, "none"))
    ait_set_out(g, n, 0, x->dtype, 0, NULL);
  else if (t)
    ait_set_out(g, n, 0, x->dtype, t->rank, t->rank >= 0 ? t->dims : NULL);
  if (n->n_out > 1 && n->out[1] >= 0)
    ait_set_out(g, n, 1, x->dtype, x->rank, x->rank >= 0 ? x->dims : NULL);
  return AIT_OK;
}
