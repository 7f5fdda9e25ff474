/* Optimizers of domain ai.onnx.preview.training: Momentum, Adagrad, Adam.
 *
 * Inputs are R (learning rate, scalar), T (step count, scalar int64) and then
 * k groups of n tensors each: X[0..n), G[0..n), and the optimizer state
 * (Momentum: V; Adagrad: H; Adam: V, H). Outputs are the updated X[0..n) then
 * the updated state tensors, group by group. The update is elementwise and
 * computed in double. */
#include <math.h>
#include <string.h>

#include "ir/shape.h"
#include "ops/reduce_impl.h"

/* Number n of tensors per group; checks counts, dtypes and shapes. */
static ait_status opt_check(const ait_node *node, const ait_tensor *const *in, int n_in, int n_out,
                            int groups, int *n) {
  if (n_in < 2 + groups || (n_in - 2) % groups)
    return ait_err(AIT_E_INVALID_ARG, "%s takes R, T and %d groups of equal size, got %d inputs",
                   node->op_type, groups, n_in);
  *n = (n_in - 2) / groups;
  if (n_out > (groups - 1) * *n)
    return ait_err(AIT_E_INVALID_ARG, "%s has %d outputs, at most %d", node->op_type, n_out,
                   (groups - 1) * *n);
  for (int i = 0; i < n_in; i++)
    if (!in[i]) return ait_err(AIT_E_INVALID_ARG, "input %d is missing", i);
  for (int i = 0; i < 2; i++) {
    const ait_dtype_traits *tr = ait_dtype_traits_of(in[i]->dtype);
    if (!tr || !(tr->is_float || tr->is_int) || ait_tensor_numel(in[i]) != 1)
      return ait_err(AIT_E_INVALID_ARG, "input %s must be a numeric scalar", i ? "T" : "R");
  }
  for (int i = 2; i < n_in; i++) {
    const ait_tensor *x = in[2 + (i - 2) % *n], *t = in[i];
    const ait_dtype_traits *tr = ait_dtype_traits_of(t->dtype);
    if (!tr || !tr->is_float)
      return ait_err(AIT_E_DTYPE, "input %d must be float, got %s", i, ait_dtype_name(t->dtype));
    bool same = t->rank == x->rank;
    for (int d = 0; same && d < t->rank; d++)
      same = t->dims[d] == x->dims[d];
    if (!same) {
      char b1[96], b2[96];
      return ait_err(AIT_E_SHAPE, "input %d %s differs from its X %s", i,
                     ait_shape_str(t->rank, t->dims, b1, sizeof b1),
                     ait_shape_str(x->rank, x->dims, b2, sizeof b2));
    }
  }
  return AIT_OK;
}

/* Required float attribute. */
static ait_status req_float(const ait_node *node, const char *name, double *v) {
  const ait_attr *a = ait_node_attr(node, name);
  if (!a) return ait_err(AIT_E_INVALID_ARG, "missing attribute '%s'", name);
  *v = a->type == AIT_ATTR_INT ? (double)a->i : a->f;
  return AIT_OK;
}

/* Allocate outputs out[first + j*n + i] like X_i for j < k; leaves NULL for
 * outputs the node does not use. */
static ait_status opt_alloc(const ait_node *node, const ait_tensor *const *in, ait_tensor **out,
                            int n_out, int n, int k) {
  for (int j = 0; j < k; j++)
    for (int i = 0; i < n; i++) {
      int o = j * n + i;
      if (o >= n_out || node->out[o] < 0) continue;
      out[o] = ait_tensor_new_like(in[2 + i]);
      if (!out[o]) return AIT_E_NOMEM;
    }
  return AIT_OK;
}

static inline double ld(const ait_tensor *t, int64_t e) {
  return ait_load_f64(ait_dtype_traits_of(t->dtype), t->data, e);
}
static inline void st(ait_tensor *t, int64_t e, double v) {
  if (t) ait_store_f64(ait_dtype_traits_of(t->dtype), t->data, e, v);
}

AIT_REDUCE_KERNEL(ait_k_momentum) {
  int n;
  AIT_TRY(opt_check(node, in, n_in, n_out, 3, &n));
  double alpha = 0, beta = 0, norm = 0;
  AIT_TRY(req_float(node, "alpha", &alpha));
  AIT_TRY(req_float(node, "beta", &beta));
  AIT_TRY(req_float(node, "norm_coefficient", &norm));
  const char *mode = ait_attr_str(node, "mode", NULL);
  if (!mode || (strcmp(mode, "standard") && strcmp(mode, "nesterov")))
    return ait_err(AIT_E_INVALID_ARG, "attribute 'mode' must be standard or nesterov");
  bool nesterov = !strcmp(mode, "nesterov");
  double r = ait_scalar_f64(in[0]);
  int64_t t = ait_scalar_i64(in[1]);
  double beta_adj = t > 0 ? beta : 1.0; /* the first step takes the whole gradient */
  AIT_TRY(opt_alloc(node, in, out, n_out, n, 2));
  for (int i = 0; i < n; i++) {
    const ait_tensor *X = in[2 + i], *G = in[2 + n + i], *V = in[2 + 2 * n + i];
    ait_tensor *Xo = out[i], *Vo = out[n + i];
    for (int64_t e = 0; e < ait_tensor_numel(X); e++) {
      double x = ld(X, e), g = norm * x + ld(G, e);
      double v = alpha * ld(V, e) + beta_adj * g;
      st(Xo, e, nesterov ? x - r * (g + alpha * v) : x - r * v);
      st(Vo, e, v);
    }
  }
  return AIT_OK;
}

AIT_REDUCE_KERNEL(ait_k_adagrad) {
  int n;
  AIT_TRY(opt_check(node, in, n_in, n_out, 3, &n));
  double decay = ait_attr_float(node, "decay_factor", 0.0f);
  double eps = ait_attr_float(node, "epsilon", 1e-6f);
  double norm = ait_attr_float(node, "norm_coefficient", 0.0f);
  double r = ait_scalar_f64(in[0]) / (1.0 + (double)ait_scalar_i64(in[1]) * decay);
  AIT_TRY(opt_alloc(node, in, out, n_out, n, 2));
  for (int i = 0; i < n; i++) {
    const ait_tensor *X = in[2 + i], *G = in[2 + n + i], *H = in[2 + 2 * n + i];
    ait_tensor *Xo = out[i], *Ho = out[n + i];
    for (int64_t e = 0; e < ait_tensor_numel(X); e++) {
      double x = ld(X, e), g = norm * x + ld(G, e);
      double h = ld(H, e) + g * g;
      st(Xo, e, x - r * g / (sqrt(h) + eps));
      st(Ho, e, h);
    }
  }
  return AIT_OK;
}

AIT_REDUCE_KERNEL(ait_k_adam) {
  int n;
  AIT_TRY(opt_check(node, in, n_in, n_out, 4, &n));
  double alpha = ait_attr_float(node, "alpha", 0.9f);
  double beta = ait_attr_float(node, "beta", 0.999f);
  double eps = ait_attr_float(node, "epsilon", 1e-6f);
  double norm = ait_attr_float(node, "norm_coefficient", 0.0f);
  double norm_post = ait_attr_float(node, "norm_coefficient_post", 0.0f);
  double r = ait_scalar_f64(in[0]);
  int64_t t = ait_scalar_i64(in[1]);
  if (t > 0) /* bias correction of both moments */
    r = r * sqrt(1.0 - pow(beta, (double)t)) / (1.0 - pow(alpha, (double)t));
  AIT_TRY(opt_alloc(node, in, out, n_out, n, 3));
  for (int i = 0; i < n; i++) {
    const ait_tensor *X = in[2 + i], *G = in[2 + n + i], *V = in[2 + 2 * n + i],
                     *H = in[2 + 3 * n + i];
    ait_tensor *Xo = out[i], *Vo = out[n + i], *Ho = out[2 * n + i];
    for (int64_t e = 0; e < ait_tensor_numel(X); e++) {
      double x = ld(X, e), g = norm * x + ld(G, e);
      double v = alpha * ld(V, e) + (1.0 - alpha) * g;
      double h = beta * ld(H, e) + (1.0 - beta) * g * g;
      double xn = x - r * (v / (sqrt(h) + eps));
      st(Xo, e, (1.0 - norm_post) * xn);
      st(Vo, e, v);
      st(Ho, e, h);
    }
  }
  return AIT_OK;
}

/* Every output j*n + i has the dtype and shape of X_i. */
ait_status ait_optimizer_shape(ait_graph *g, const ait_node *n) {
  int groups = !strcmp(n->op_type, "Adam") ? 4 : 3;
  if (n->n_in < 2 + groups || (n->n_in - 2) % groups) return AIT_OK;
  int k = (n->n_in - 2) / groups;
  for (int o = 0; o < n->n_out; o++) {
    if (n->out[o] < 0) continue;
    ait_value *x = ait_node_in(g, n, 2 + o % k);
    if (x) ait_set_out(g, n, o, x->dtype, x->rank, x->rank >= 0 ? x->dims : NULL);
  }
  return AIT_OK;
}
