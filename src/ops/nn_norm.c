/* Normalizations: BatchNormalization (inference and training_mode),
 * InstanceNormalization, LayerNormalization, RMSNormalization,
 * GroupNormalization, LpNormalization, LRN, MeanVarianceNormalization.
 * All compute in double over converted copies (statistics in double are more
 * accurate than the float32 reference, never less). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/nn_impl.h"

/* Load up to 6 optional tensors as double; frees all on failure. */
static ait_status load_all(const ait_tensor *const *t, double **v, int n) {
  for (int i = 0; i < n; i++) {
    v[i] = NULL;
    if (t[i] && !(v[i] = nn_load_f64(t[i]))) {
      for (int j = 0; j < i; j++)
        free(v[j]);
      return AIT_E_NOMEM;
    }
  }
  return AIT_OK;
}
static void free_all(double **v, int n) {
  for (int i = 0; i < n; i++)
    free(v[i]);
}

static ait_status check_vec(const ait_tensor *t, int64_t n, const char *what) {
  if (!t) return ait_err(AIT_E_INVALID_ARG, "input %s is required", what);
  AIT_TRY(nn_check_float(t, what));
  if (ait_tensor_numel(t) != n)
    return ait_err(AIT_E_SHAPE, "%s has %lld elements, expected %lld", what,
                   (long long)ait_tensor_numel(t), (long long)n);
  return AIT_OK;
}

/* ---- BatchNormalization ---------------------------------------------- */

NN_KERNEL(nn_batchnorm_kernel) {
  NN_NEED_IN0;
  const ait_tensor *X = in[0];
  AIT_TRY(nn_check_float(X, "X"));
  if (X->rank < 2) return ait_err(AIT_E_SHAPE, "X must be N x C x ..., got rank %d", X->rank);
  if (n_in < 5) return ait_err(AIT_E_INVALID_ARG, "BatchNormalization needs 5 inputs");
  bool spatial = node->opset >= 9 || ait_attr_int(node, "spatial", 1) != 0;
  bool training = node->opset >= 14 && ait_attr_int(node, "training_mode", 0) != 0;
  double eps = ait_attr_float(node, "epsilon", 1e-5f);
  double momentum = ait_attr_float(node, "momentum", 0.9f);
  int64_t N = X->dims[0], C = X->dims[1], inner = 1;
  for (int i = 2; i < X->rank; i++)
    inner *= X->dims[i];
  int64_t P = spatial ? C : C * inner; /* parameters per sample */
  const char *names[4] = {"scale", "B", "mean", "var"};
  for (int i = 1; i < 5; i++)
    AIT_TRY(check_vec(in[i], P, names[i - 1]));
  if (training && !spatial) return ait_err(AIT_E_UNSUPPORTED, "training with spatial=0");
  for (int i = 1; i < n_out; i++)
    if (node->out[i] >= 0 && !training)
      return ait_err(AIT_E_UNSUPPORTED, "BatchNormalization training outputs before opset 14 "
                                        "(or without training_mode)");
  AIT_TRY(nn_new(&out[0], X->dtype, X->rank, X->dims));
  double *v[5];
  AIT_TRY(load_all(in, v, 5));
  double *x = v[0], *scale = v[1], *bias = v[2], *mean = v[3], *var = v[4];
  double *bm = NULL, *bv = NULL; /* batch statistics (training) */
  ait_status st = AIT_OK;
  if (training) {
    bm = calloc((size_t)C + 1, sizeof *bm), bv = calloc((size_t)C + 1, sizeof *bv);
    if (!bm || !bv) {
      st = ait_err(AIT_E_NOMEM, "out of memory for batch statistics");
      goto done;
    }
    double cnt = (double)(N * inner);
    for (int64_t c = 0; c < C; c++) {
      double s = 0, q = 0;
      for (int64_t n = 0; n < N; n++)
        for (int64_t j = 0; j < inner; j++)
          s += x[(n * C + c) * inner + j];
      bm[c] = s / cnt;
      for (int64_t n = 0; n < N; n++)
        for (int64_t j = 0; j < inner; j++) {
          double d = x[(n * C + c) * inner + j] - bm[c];
          q += d * d;
        }
      bv[c] = q / cnt;
    }
  }
  for (int64_t n = 0; n < N; n++)
    for (int64_t c = 0; c < C; c++)
      for (int64_t j = 0; j < inner; j++) {
        int64_t i = (n * C + c) * inner + j, p = spatial ? c : c * inner + j;
        double m = training ? bm[p] : mean[p], s = training ? bv[p] : var[p];
        x[i] = (x[i] - m) / sqrt(s + eps) * scale[p] + bias[p];
      }
  nn_store_f64(out[0], x);
  for (int k = 1; k < 3 && k < n_out && training; k++) {
    if (node->out[k] < 0) continue;
    const ait_tensor *like = in[k + 2];
    double *run = k == 1 ? mean : var, *batch = k == 1 ? bm : bv;
    if ((st = nn_new(&out[k], like->dtype, like->rank, like->dims))) goto done;
    for (int64_t c = 0; c < C; c++)
      run[c] = run[c] * momentum + batch[c] * (1.0 - momentum);
    nn_store_f64(out[k], run);
  }
done:
  free(bm), free(bv);
  free_all(v, 5);
  return st;
}

/* ---- InstanceNormalization ------------------------------------------- */

NN_KERNEL(nn_instancenorm_kernel) {
  NN_NEED_IN0;
  const ait_tensor *X = in[0];
  AIT_TRY(nn_check_float(X, "input"));
  if (X->rank < 3) return ait_err(AIT_E_SHAPE, "input must be N x C x D1 ..., rank %d", X->rank);
  if (n_in < 3) return ait_err(AIT_E_INVALID_ARG, "InstanceNormalization needs 3 inputs");
  int64_t N = X->dims[0], C = X->dims[1], planes = N * C;
  int64_t inner = planes ? ait_tensor_numel(X) / planes : 0;
  AIT_TRY(check_vec(in[1], C, "scale"));
  AIT_TRY(check_vec(in[2], C, "B"));
  double eps = ait_attr_float(node, "epsilon", 1e-5f);
  AIT_TRY(nn_new(&out[0], X->dtype, X->rank, X->dims));
  double *v[3];
  AIT_TRY(load_all(in, v, 3));
  for (int64_t n = 0; n < N; n++)
    for (int64_t c = 0; c < C; c++) {
      double *x = v[0] + (n * C + c) * inner, s = 0, q = 0;
      for (int64_t j = 0; j < inner; j++)
        s += x[j];
      double m = s / (double)inner;
      for (int64_t j = 0; j < inner; j++)
        q += (x[j] - m) * (x[j] - m);
      double r = 1.0 / sqrt(q / (double)inner + eps);
      for (int64_t j = 0; j < inner; j++)
        x[j] = (x[j] - m) * r * v[1][c] + v[2][c];
    }
  nn_store_f64(out[0], v[0]);
  free_all(v, 3);
  return AIT_OK;
}

/* ---- LayerNormalization ---------------------------------------------- */

NN_KERNEL(nn_layernorm_kernel) {
  NN_NEED_IN0;
  const ait_tensor *X = in[0], *S = n_in > 1 ? in[1] : NULL, *B = n_in > 2 ? in[2] : NULL;
  AIT_TRY(nn_check_float(X, "X"));
  if (!S) return ait_err(AIT_E_INVALID_ARG, "input Scale is required");
  AIT_TRY(nn_check_float(S, "Scale"));
  if (B) AIT_TRY(nn_check_float(B, "B"));
  int axis;
  AIT_TRY(ait_norm_axis(ait_attr_int(node, "axis", -1), X->rank, &axis));
  double eps = ait_attr_float(node, "epsilon", 1e-5f);
  int64_t stash = ait_attr_int(node, "stash_type", 1);
  ait_dtype sdt = (stash == AIT_FLOAT32 || stash == AIT_FLOAT64 || stash == AIT_FLOAT16 ||
                   stash == AIT_BFLOAT16)
                      ? (ait_dtype)stash
                      : AIT_FLOAT32;
  /* Scale and B broadcast against X (numpy rules, unidirectional) */
  int64_t ss[AIT_MAX_RANK], bs[AIT_MAX_RANK] = {0}, xs[AIT_MAX_RANK];
  int r;
  int64_t bd[AIT_MAX_RANK];
  AIT_TRY(ait_shape_broadcast(X->rank, X->dims, S->rank, S->dims, &r, bd));
  if (r != X->rank || ait_shape_numel(r, bd) != ait_tensor_numel(X))
    return ait_err(AIT_E_SHAPE, "Scale does not broadcast to X");
  if (B) {
    AIT_TRY(ait_shape_broadcast(X->rank, X->dims, B->rank, B->dims, &r, bd));
    if (r != X->rank || ait_shape_numel(r, bd) != ait_tensor_numel(X))
      return ait_err(AIT_E_SHAPE, "B does not broadcast to X");
    ait_broadcast_strides(B->rank, B->dims, X->rank, X->dims, bs);
  }
  ait_broadcast_strides(S->rank, S->dims, X->rank, X->dims, ss);
  ait_shape_strides(X->rank, X->dims, xs);
  int64_t sdims[AIT_MAX_RANK];
  for (int i = 0; i < X->rank; i++)
    sdims[i] = i < axis ? X->dims[i] : 1;
  int64_t outer = ait_shape_numel(axis, X->dims),
          inner = ait_shape_numel(X->rank - axis, X->dims + axis);
  AIT_TRY(nn_new(&out[0], X->dtype, X->rank, X->dims));
  if (n_out > 1 && node->out[1] >= 0) AIT_TRY(nn_new(&out[1], sdt, X->rank, sdims));
  if (n_out > 2 && node->out[2] >= 0) AIT_TRY(nn_new(&out[2], sdt, X->rank, sdims));
  const ait_tensor *ts[3] = {X, S, B};
  double *v[3], *mean = malloc((size_t)(outer + 1) * sizeof(double)),
                *inv = malloc((size_t)(outer + 1) * sizeof(double));
  if (!mean || !inv || load_all(ts, v, 3)) {
    free(mean), free(inv);
    return ait_err(AIT_E_NOMEM, "out of memory in LayerNormalization");
  }
  for (int64_t o = 0; o < outer; o++) {
    double *x = v[0] + o * inner, s = 0, q = 0;
    for (int64_t j = 0; j < inner; j++)
      s += x[j];
    mean[o] = s / (double)inner;
    for (int64_t j = 0; j < inner; j++)
      q += (x[j] - mean[o]) * (x[j] - mean[o]);
    inv[o] = 1.0 / sqrt(q / (double)inner + eps);
    for (int64_t j = 0; j < inner; j++) {
      int64_t i = o * inner + j, si = 0, bi = 0, rem = i;
      for (int d = 0; d < X->rank; d++) {
        int64_t c = rem / xs[d];
        rem -= c * xs[d];
        si += c * ss[d], bi += c * bs[d];
      }
      x[j] = (x[j] - mean[o]) * inv[o] * v[1][si] + (B ? v[2][bi] : 0.0);
    }
  }
  nn_store_f64(out[0], v[0]);
  if (n_out > 1 && out[1]) nn_store_f64(out[1], mean);
  if (n_out > 2 && out[2]) nn_store_f64(out[2], inv);
  free(mean), free(inv);
  free_all(v, 3);
  return AIT_OK;
}

/* ---- RMSNormalization (opset 23) --------------------------------------- */

/* Y = X / sqrt(mean(X^2 over axes axis..r-1) + epsilon) * scale, scale
 * broadcast unidirectionally to X; in double, which is at least stash_type's
 * precision. */
NN_KERNEL(nn_rmsnorm_kernel) {
  NN_NEED_IN0;
  const ait_tensor *X = in[0], *S = n_in > 1 ? in[1] : NULL;
  AIT_TRY(nn_check_float(X, "X"));
  if (!S) return ait_err(AIT_E_INVALID_ARG, "input scale is required");
  AIT_TRY(nn_check_float(S, "scale"));
  int axis;
  AIT_TRY(ait_norm_axis(ait_attr_int(node, "axis", -1), X->rank, &axis));
  double eps = ait_attr_float(node, "epsilon", 1e-5f);
  int64_t bd[AIT_MAX_RANK], ss[AIT_MAX_RANK], xs[AIT_MAX_RANK];
  int r;
  AIT_TRY(ait_shape_broadcast(X->rank, X->dims, S->rank, S->dims, &r, bd));
  if (r != X->rank || ait_shape_numel(r, bd) != ait_tensor_numel(X))
    return ait_err(AIT_E_SHAPE, "scale does not broadcast to X");
  ait_broadcast_strides(S->rank, S->dims, X->rank, X->dims, ss);
  ait_shape_strides(X->rank, X->dims, xs);
  int64_t outer = ait_shape_numel(axis, X->dims),
          inner = ait_shape_numel(X->rank - axis, X->dims + axis);
  AIT_TRY(nn_new(&out[0], X->dtype, X->rank, X->dims));
  const ait_tensor *ts[2] = {X, S};
  double *v[2];
  if (load_all(ts, v, 2)) return ait_err(AIT_E_NOMEM, "out of memory in RMSNormalization");
  for (int64_t o = 0; o < outer; o++) {
    double *x = v[0] + o * inner, q = 0;
    for (int64_t j = 0; j < inner; j++)
      q += x[j] * x[j];
    double inv = 1.0 / sqrt(q / (double)(inner ? inner : 1) + eps);
    for (int64_t j = 0; j < inner; j++) {
      int64_t rem = o * inner + j, si = 0;
      for (int d = 0; d < X->rank; d++) {
        int64_t c = rem / xs[d];
        rem -= c * xs[d];
        si += c * ss[d];
      }
      x[j] = x[j] * inv * v[1][si];
    }
  }
  nn_store_f64(out[0], v[0]);
  free_all(v, 2);
  return AIT_OK;
}

/* ---- GroupNormalization (opsets 18, 21) --------------------------------- */

/* Mean and variance per sample per group of C / num_groups channels (and
 * every spatial position); scale and bias per channel from opset 21, per
 * group at opset 18 (the version 21 replaced). */
NN_KERNEL(nn_groupnorm_kernel) {
  NN_NEED_IN0;
  const ait_tensor *X = in[0], *S = n_in > 1 ? in[1] : NULL, *B = n_in > 2 ? in[2] : NULL;
  AIT_TRY(nn_check_float(X, "X"));
  if (X->rank < 2) return ait_err(AIT_E_SHAPE, "X must be N x C x ..., got rank %d", X->rank);
  int64_t G = ait_attr_int(node, "num_groups", 0), N = X->dims[0], C = X->dims[1];
  if (G <= 0 || C % G)
    return ait_err(AIT_E_INVALID_ARG, "num_groups %lld must divide the %lld channels", (long long)G,
                   (long long)C);
  int64_t per = node->opset >= 21 ? C : G;
  AIT_TRY(check_vec(S, per, "scale"));
  AIT_TRY(check_vec(B, per, "bias"));
  double eps = ait_attr_float(node, "epsilon", 1e-5f);
  int64_t inner = ait_shape_numel(X->rank - 2, X->dims + 2), cg = C / G, len = cg * inner;
  AIT_TRY(nn_new(&out[0], X->dtype, X->rank, X->dims));
  const ait_tensor *ts[3] = {X, S, B};
  double *v[3];
  if (load_all(ts, v, 3)) return ait_err(AIT_E_NOMEM, "out of memory in GroupNormalization");
  for (int64_t n = 0; n < N; n++)
    for (int64_t gi = 0; gi < G; gi++) {
      double *x = v[0] + (n * G + gi) * len, m = 0, q = 0;
      for (int64_t j = 0; j < len; j++)
        m += x[j];
      m /= (double)(len ? len : 1);
      for (int64_t j = 0; j < len; j++)
        q += (x[j] - m) * (x[j] - m);
      double inv = 1.0 / sqrt(q / (double)(len ? len : 1) + eps);
      for (int64_t j = 0; j < len; j++) {
        int64_t p = per == C ? gi * cg + j / inner : gi;
        x[j] = (x[j] - m) * inv * v[1][p] + v[2][p];
      }
    }
  nn_store_f64(out[0], v[0]);
  free_all(v, 3);
  return AIT_OK;
}

/* ---- LpNormalization (opsets 1, 22) ------------------------------------- */

/* x / ||x||_p along `axis` (p 1 or 2); a zero norm gives 0 (opset 22 says
 * so; 0/0 was NaN before). */
NN_KERNEL(nn_lpnorm_kernel) {
  NN_NEED_IN0;
  const ait_tensor *X = in[0];
  AIT_TRY(nn_check_float(X, "input"));
  int64_t p = ait_attr_int(node, "p", 2);
  if (p != 1 && p != 2)
    return ait_err(AIT_E_INVALID_ARG, "LpNormalization p must be 1 or 2, got %lld", (long long)p);
  int axis;
  AIT_TRY(ait_norm_axis(ait_attr_int(node, "axis", -1), X->rank, &axis));
  int64_t outer = ait_shape_numel(axis, X->dims), n = X->dims[axis];
  int64_t inner = ait_shape_numel(X->rank - axis - 1, X->dims + axis + 1);
  AIT_TRY(nn_new(&out[0], X->dtype, X->rank, X->dims));
  double *x = nn_load_f64(X);
  if (!x) return AIT_E_NOMEM;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      double *r = x + o * n * inner + i, s = 0;
      for (int64_t k = 0; k < n; k++)
        s += p == 1 ? fabs(r[k * inner]) : r[k * inner] * r[k * inner];
      double norm = p == 1 ? s : sqrt(s);
      for (int64_t k = 0; k < n; k++)
        r[k * inner] = norm == 0 ? 0 : r[k * inner] / norm;
    }
  nn_store_f64(out[0], x);
  free(x);
  return AIT_OK;
}

/* ---- LRN ------------------------------------------------------------- */

NN_KERNEL(nn_lrn_kernel) {
  NN_NEED_IN0;
  const ait_tensor *X = in[0];
  AIT_TRY(nn_check_float(X, "X"));
  if (X->rank < 2) return ait_err(AIT_E_SHAPE, "X must be N x C x ..., got rank %d", X->rank);
  int64_t size = ait_attr_int(node, "size", 0);
  if (size < 1) return ait_err(AIT_E_INVALID_ARG, "LRN size = %lld must be >= 1", (long long)size);
  double alpha = ait_attr_float(node, "alpha", 1e-4f), beta = ait_attr_float(node, "beta", 0.75f);
  double bias = ait_attr_float(node, "bias", 1.0f);
  int64_t N = X->dims[0], C = X->dims[1], inner = 1;
  for (int i = 2; i < X->rank; i++)
    inner *= X->dims[i];
  AIT_TRY(nn_new(&out[0], X->dtype, X->rank, X->dims));
  double *x = nn_load_f64(X), *y = malloc((size_t)(ait_tensor_numel(X) + 1) * sizeof *y);
  if (!x || !y) {
    free(x), free(y);
    return ait_err(AIT_E_NOMEM, "out of memory in LRN");
  }
  int64_t before = (size - 1) / 2, after = size / 2; /* floor / ceil of (size-1)/2 */
  for (int64_t n = 0; n < N; n++)
    for (int64_t c = 0; c < C; c++)
      for (int64_t j = 0; j < inner; j++) {
        /* the window clipped to the channels: a huge size (a model's
         * attribute) must not cost size steps per element */
        double sq = 0;
        int64_t k0 = c - before > 0 ? c - before : 0, k1 = after < C - 1 - c ? c + after : C - 1;
        for (int64_t k = k0; k <= k1; k++) {
          double t = x[(n * C + k) * inner + j];
          sq += t * t;
        }
        int64_t i = (n * C + c) * inner + j;
        y[i] = x[i] / pow(bias + alpha / (double)size * sq, beta);
      }
  nn_store_f64(out[0], y);
  free(x), free(y);
  return AIT_OK;
}

/* ---- MeanVarianceNormalization ---------------------------------------- */

NN_KERNEL(nn_mvn_kernel) {
  NN_NEED_IN0;
  const ait_tensor *X = in[0];
  AIT_TRY(nn_check_float(X, "X"));
  bool reduce[AIT_MAX_RANK] = {false};
  int na = 0;
  const int64_t *axes = ait_attr_ints(node, "axes", &na);
  static const int64_t def_axes[3] = {0, 2, 3};
  if (!axes) axes = def_axes, na = 3;
  for (int i = 0; i < na; i++) {
    int a;
    AIT_TRY(ait_norm_axis(axes[i], X->rank, &a));
    reduce[a] = true;
  }
  int64_t gdims[AIT_MAX_RANK], gstr[AIT_MAX_RANK], xs[AIT_MAX_RANK];
  for (int i = 0; i < X->rank; i++)
    gdims[i] = reduce[i] ? 1 : X->dims[i];
  ait_shape_strides(X->rank, gdims, gstr);
  ait_shape_strides(X->rank, X->dims, xs);
  int64_t n = ait_tensor_numel(X), groups = ait_shape_numel(X->rank, gdims);
  AIT_TRY(nn_new(&out[0], X->dtype, X->rank, X->dims));
  double *x = nn_load_f64(X), *sum = calloc((size_t)groups + 1, sizeof *sum),
         *sq = calloc((size_t)groups + 1, sizeof *sq);
  int64_t *gid = malloc((size_t)(n + 1) * sizeof *gid);
  if (!x || !sum || !sq || !gid) {
    free(x), free(sum), free(sq), free(gid);
    return ait_err(AIT_E_NOMEM, "out of memory in MeanVarianceNormalization");
  }
  int64_t per = groups ? n / groups : 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t rem = i, g = 0;
    for (int d = 0; d < X->rank; d++) {
      int64_t c = rem / xs[d];
      rem -= c * xs[d];
      if (!reduce[d]) g += c * gstr[d];
    }
    gid[i] = g;
    sum[g] += x[i];
  }
  for (int64_t g = 0; g < groups; g++)
    sum[g] /= (double)per;
  for (int64_t i = 0; i < n; i++) {
    double d = x[i] - sum[gid[i]];
    sq[gid[i]] += d * d;
  }
  for (int64_t g = 0; g < groups; g++)
    sq[g] = sqrt(sq[g] / (double)per) + 1e-9;
  for (int64_t i = 0; i < n; i++)
    x[i] = (x[i] - sum[gid[i]]) / sq[gid[i]];
  nn_store_f64(out[0], x);
  free(x), free(sum), free(sq), free(gid);
  return AIT_OK;
}
