/* Index-driven ops of the 'tensor' family: Gather, GatherElements, GatherND,
 * ScatterElements (and the deprecated Scatter), ScatterND, OneHot, Compress,
 * NonZero. Every index is validated before it is used. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/tensor_impl.h"

/* Normalized copy of all indices of t against dim. *out is malloc'ed. */
static ait_status norm_indices(const ait_tensor *t, int64_t dim, const char *what, int64_t **out) {
  AIT_TRY(tn_check_index_dtype(t, what));
  int64_t n = ait_tensor_numel(t);
  int64_t *v = malloc((size_t)(n ? n : 1) * sizeof *v);
  if (!v) return ait_err(AIT_E_NOMEM, "out of memory reading %s", what);
  for (int64_t i = 0; i < n; i++) {
    ait_status st = tn_norm_index(tn_index_at(t, i), dim, what, &v[i]);
    if (st != AIT_OK) {
      free(v);
      return st;
    }
  }
  *out = v;
  return AIT_OK;
}

/* ---- Gather ----------------------------------------------------------- */

TN_KERNEL(tn_gather) {
  const ait_tensor *x = in[0], *ind = tn_in(in, n_in, 1);
  if (!ind) return ait_err(AIT_E_INVALID_ARG, "Gather needs indices");
  if (x->rank < 1) return ait_err(AIT_E_SHAPE, "Gather of a scalar");
  int axis = 0;
  AIT_TRY(ait_norm_axis(ait_attr_int(node, "axis", 0), x->rank, &axis));
  int r = x->rank - 1 + ind->rank;
  if (r > AIT_MAX_RANK) return ait_err(AIT_E_UNSUPPORTED, "Gather output rank %d", r);
  int64_t dims[AIT_MAX_RANK];
  memcpy(dims, x->dims, (size_t)axis * sizeof *dims);
  memcpy(dims + axis, ind->dims, (size_t)ind->rank * sizeof *dims);
  memcpy(dims + axis + ind->rank, x->dims + axis + 1, (size_t)(x->rank - axis - 1) * sizeof *dims);
  int64_t *ix = NULL;
  AIT_TRY(norm_indices(ind, x->dims[axis], "Gather index", &ix));
  ait_status st = tn_new(x->dtype, r, dims, &out[0]);
  if (st == AIT_OK) {
    size_t esz = ait_elem_size(x->dtype);
    int64_t outer = ait_shape_numel(axis, x->dims), n = ait_tensor_numel(ind);
    int64_t inner = ait_shape_numel(x->rank - axis - 1, x->dims + axis + 1);
    size_t blk = (size_t)inner * esz;
    char *o = out[0]->data;
    for (int64_t a = 0; a < outer; a++) {
      const char *base = (const char *)x->data + (size_t)(a * x->dims[axis]) * blk;
      for (int64_t j = 0; j < n; j++, o += blk)
        memcpy(o, base + (size_t)ix[j] * blk, blk);
    }
    st = tn_finish(out[0], AIT_OK);
  }
  free(ix);
  return st;
}

TN_SHAPE(tn_gather_shape) {
  ait_value *x = ait_node_in(g, node, 0), *ind = ait_node_in(g, node, 1);
  if (!x) return AIT_OK;
  if (x->rank < 1 || !ind || ind->rank < 0 || x->rank - 1 + ind->rank > AIT_MAX_RANK) {
    ait_set_out(g, node, 0, x->dtype, -1, NULL);
    return AIT_OK;
  }
  int axis = 0;
  AIT_TRY(ait_norm_axis(ait_attr_int(node, "axis", 0), x->rank, &axis));
  ait_dim d[AIT_MAX_RANK];
  int r = 0;
  for (int k = 0; k < axis; k++)
    d[r++] = x->dims[k];
  for (int k = 0; k < ind->rank; k++)
    d[r++] = ind->dims[k];
  for (int k = axis + 1; k < x->rank; k++)
    d[r++] = x->dims[k];
  ait_set_out(g, node, 0, x->dtype, r, d);
  return AIT_OK;
}

/* ---- GatherElements / ScatterElements --------------------------------- */

/* For each element of ind (row-major), the data offset it addresses:
 * the element's own coordinates with the axis coordinate replaced by the
 * index. offs is malloc'ed. */
static ait_status element_offsets(const ait_tensor *x, const ait_tensor *ind, int axis,
                                  const char *what, int64_t **offs) {
  AIT_TRY(tn_check_index_dtype(ind, what));
  if (ind->rank != x->rank)
    return ait_err(AIT_E_SHAPE, "%s has rank %d, data rank %d", what, ind->rank, x->rank);
  for (int k = 0; k < x->rank; k++)
    if (k != axis && ind->dims[k] > x->dims[k])
      return ait_err(AIT_E_SHAPE, "%s dim %d (%lld) exceeds the data's (%lld)", what, k,
                     (long long)ind->dims[k], (long long)x->dims[k]);
  int64_t n = ait_tensor_numel(ind), st[AIT_MAX_RANK], idx[AIT_MAX_RANK] = {0};
  ait_shape_strides(x->rank, x->dims, st);
  int64_t *v = malloc((size_t)(n ? n : 1) * sizeof *v);
  if (!v) return ait_err(AIT_E_NOMEM, "out of memory in %s", what);
  for (int64_t i = 0; i < n; i++) {
    int64_t a;
    ait_status s = tn_norm_index(tn_index_at(ind, i), x->dims[axis], what, &a);
    if (s != AIT_OK) {
      free(v);
      return s;
    }
    int64_t off = a * st[axis];
    for (int k = 0; k < x->rank; k++)
      if (k != axis) off += idx[k] * st[k];
    v[i] = off;
    for (int k = x->rank - 1; k >= 0 && ++idx[k] >= ind->dims[k]; k--)
      idx[k] = 0;
  }
  *offs = v;
  return AIT_OK;
}

TN_KERNEL(tn_gather_elements) {
  const ait_tensor *x = in[0], *ind = tn_in(in, n_in, 1);
  if (!ind) return ait_err(AIT_E_INVALID_ARG, "GatherElements needs indices");
  if (x->rank < 1) return ait_err(AIT_E_SHAPE, "GatherElements of a scalar");
  int axis = 0;
  AIT_TRY(ait_norm_axis(ait_attr_int(node, "axis", 0), x->rank, &axis));
  int64_t *offs = NULL;
  AIT_TRY(element_offsets(x, ind, axis, "GatherElements index", &offs));
  ait_status st = tn_new(x->dtype, ind->rank, ind->dims, &out[0]);
  if (st == AIT_OK) {
    size_t esz = ait_elem_size(x->dtype);
    int64_t n = ait_tensor_numel(ind);
    for (int64_t i = 0; i < n; i++)
      memcpy((char *)out[0]->data + (size_t)i * esz, (const char *)x->data + (size_t)offs[i] * esz,
             esz);
    st = tn_finish(out[0], AIT_OK);
  }
  free(offs);
  return st;
}

TN_SHAPE(tn_gather_elements_shape) {
  ait_value *x = ait_node_in(g, node, 0), *ind = ait_node_in(g, node, 1);
  if (!x || !ind) return AIT_OK;
  ait_set_out(g, node, 0, x->dtype, ind->rank, ind->rank >= 0 ? ind->dims : NULL);
  return AIT_OK;
}

typedef enum reduction { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN } reduction;

static ait_status reduction_of(const ait_node *node, ait_dtype dt, reduction *r) {
  const char *s = ait_attr_str(node, "reduction", "none");
  if (!strcmp(s, "none"))
    *r = RED_NONE;
  else if (!strcmp(s, "add"))
    *r = RED_ADD;
  else if (!strcmp(s, "mul"))
    *r = RED_MUL;
  else if (!strcmp(s, "max"))
    *r = RED_MAX;
  else if (!strcmp(s, "min"))
    *r = RED_MIN;
  else
    return ait_err(AIT_E_INVALID_ARG, "%s reduction '%s' is unknown", node->op_type, s);
  if (*r != RED_NONE && !ait_dtype_traits_of(dt))
    return ait_err(AIT_E_DTYPE, "%s reduction '%s' on %s", node->op_type, s, ait_dtype_name(dt));
  return AIT_OK;
}

/* *dst = reduce(*dst, *src) for one element. */
static void reduce_elem(const ait_dtype_traits *tr, reduction r, void *dst, const void *src) {
  if (tr->is_float) {
    double a = tr->to_f64(dst), b = tr->to_f64(src);
    double v = r == RED_ADD ? a + b : r == RED_MUL ? a * b : r == RED_MAX ? fmax(a, b) : fmin(a, b);
    tr->from_f64(dst, v);
    return;
  }
  uint64_t a = (uint64_t)tr->to_i64(dst), b = (uint64_t)tr->to_i64(src), v;
  bool lt = tr->size == 8 && !tr->is_signed ? a < b : (int64_t)a < (int64_t)b;
  switch (r) {
  case RED_ADD: v = a + b; break;
  case RED_MUL: v = a * b; break;
  case RED_MAX: v = lt ? b : a; break;
  default: v = lt ? a : b; break;
  }
  tr->from_i64(dst, (int64_t)v);
}

/* Output = data; then out[offs[i] + j] (op)= upd[i * blk + j]. */
static ait_status scatter_apply(const ait_node *node, const ait_tensor *x, const ait_tensor *upd,
                                const int64_t *offs, int64_t n, int64_t blk, reduction red,
                                ait_tensor **out) {
  AIT_TRY(tn_new(x->dtype, x->rank, x->dims, out));
  size_t esz = ait_elem_size(x->dtype);
  tn_move((*out)->data, x->data, esz, ait_tensor_numel(x));
  char *o = (*out)->data;
  const char *u = upd->data;
  const ait_dtype_traits *tr = ait_dtype_traits_of(x->dtype);
  for (int64_t i = 0; i < n; i++) {
    if (red == RED_NONE) {
      tn_move(o + (size_t)offs[i] * esz, u + (size_t)(i * blk) * esz, esz, blk);
      continue;
    }
    for (int64_t j = 0; j < blk; j++)
      reduce_elem(tr, red, o + (size_t)(offs[i] + j) * esz, u + (size_t)(i * blk + j) * esz);
  }
  return tn_finish(*out, AIT_OK);
}

TN_KERNEL(tn_scatter_elements) {
  const ait_tensor *x = in[0], *ind = tn_in(in, n_in, 1), *upd = tn_in(in, n_in, 2);
  if (!ind || !upd)
    return ait_err(AIT_E_INVALID_ARG, "%s needs indices and updates", node->op_type);
  if (x->rank < 1) return ait_err(AIT_E_SHAPE, "%s of a scalar", node->op_type);
  if (upd->dtype != x->dtype)
    return ait_err(AIT_E_DTYPE, "%s updates are %s, data is %s", node->op_type,
                   ait_dtype_name(upd->dtype), ait_dtype_name(x->dtype));
  if (upd->rank != ind->rank || memcmp(upd->dims, ind->dims, (size_t)ind->rank * sizeof *ind->dims))
    return ait_err(AIT_E_SHAPE, "%s updates and indices differ in shape", node->op_type);
  reduction red;
  AIT_TRY(reduction_of(node, x->dtype, &red));
  int axis = 0;
  AIT_TRY(ait_norm_axis(ait_attr_int(node, "axis", 0), x->rank, &axis));
  int64_t *offs = NULL;
  AIT_TRY(element_offsets(x, ind, axis, "scatter index", &offs));
  ait_status st = scatter_apply(node, x, upd, offs, ait_tensor_numel(ind), 1, red, &out[0]);
  free(offs);
  return st;
}

/* ---- GatherND / ScatterND --------------------------------------------- */

TN_KERNEL(tn_gather_nd) {
  const ait_tensor *x = in[0], *ind = tn_in(in, n_in, 1);
  if (!ind) return ait_err(AIT_E_INVALID_ARG, "GatherND needs indices");
  AIT_TRY(tn_check_index_dtype(ind, "GatherND indices"));
  int64_t b = ait_attr_int(node, "batch_dims", 0);
  int q = ind->rank, r = x->rank;
  if (q < 1 || r < 1 || b < 0 || b >= q || b >= r)
    return ait_err(AIT_E_SHAPE, "GatherND: batch_dims %lld with data rank %d, indices rank %d",
                   (long long)b, r, q);
  int64_t m = ind->dims[q - 1];
  if (m < 1 || m > r - b)
    return ait_err(AIT_E_SHAPE, "GatherND: index tuples of %lld for data rank %d", (long long)m, r);
  for (int k = 0; k < b; k++)
    if (ind->dims[k] != x->dims[k])
      return ait_err(AIT_E_SHAPE, "GatherND: batch dim %d differs (%lld vs %lld)", k,
                     (long long)ind->dims[k], (long long)x->dims[k]);
  int ro = q - 1 + r - (int)(b + m);
  if (ro > AIT_MAX_RANK) return ait_err(AIT_E_UNSUPPORTED, "GatherND output rank %d", ro);
  int64_t dims[AIT_MAX_RANK], st[AIT_MAX_RANK];
  memcpy(dims, ind->dims, (size_t)(q - 1) * sizeof *dims);
  memcpy(dims + q - 1, x->dims + b + m, (size_t)(r - b - m) * sizeof *dims);
  ait_shape_strides(r, x->dims, st);
  int64_t batches = ait_shape_numel((int)b, x->dims);
  int64_t tuples = ait_shape_numel(q - 1 - (int)b, ind->dims + b); /* per batch */
  int64_t slice = ait_shape_numel(r - (int)(b + m), x->dims + b + m);
  int64_t bstride = b > 0 ? st[b - 1] : 0;
  size_t esz = ait_elem_size(x->dtype);
  for (int64_t i = 0; i < batches * tuples * m; i++) { /* validate first */
    int64_t a, k = i % m;
    AIT_TRY(tn_norm_index(tn_index_at(ind, i), x->dims[b + k], "GatherND index", &a));
  }
  AIT_TRY(tn_new(x->dtype, ro, dims, &out[0]));
  char *o = out[0]->data;
  for (int64_t bt = 0; bt < batches; bt++)
    for (int64_t t = 0; t < tuples; t++, o += (size_t)slice * esz) {
      int64_t off = bt * bstride, base = (bt * tuples + t) * m;
      for (int64_t k = 0; k < m; k++) {
        int64_t v = tn_index_at(ind, base + k);
        off += (v < 0 ? v + x->dims[b + k] : v) * st[b + k];
      }
      tn_move(o, (const char *)x->data + (size_t)off * esz, esz, slice);
    }
  return tn_finish(out[0], AIT_OK);
}

TN_SHAPE(tn_gather_nd_shape) {
  ait_value *x = ait_node_in(g, node, 0), *ind = ait_node_in(g, node, 1);
  if (!x) return AIT_OK;
  int64_t b = ait_attr_int(node, "batch_dims", 0);
  if (!ind || ind->rank < 1 || x->rank < 0 || ind->dims[ind->rank - 1].v < 0) {
    ait_set_out(g, node, 0, x->dtype, -1, NULL);
    return AIT_OK;
  }
  int q = ind->rank, r = x->rank;
  int64_t m = ind->dims[q - 1].v;
  /* b and m are the model's: bound them before any arithmetic */
  if (b < 0 || b > r || m < 1 || m > r - b || q - 1 + r - (int)(b + m) > AIT_MAX_RANK)
    return ait_err(AIT_E_SHAPE, "GatherND: index tuples of %lld for data rank %d", (long long)m, r);
  int ro = q - 1 + r - (int)(b + m);
  ait_dim d[AIT_MAX_RANK];
  memcpy(d, ind->dims, (size_t)(q - 1) * sizeof *d);
  memcpy(d + q - 1, x->dims + b + m, (size_t)(r - b - m) * sizeof *d);
  ait_set_out(g, node, 0, x->dtype, ro, d);
  return AIT_OK;
}

TN_KERNEL(tn_scatter_nd) {
  const ait_tensor *x = in[0], *ind = tn_in(in, n_in, 1), *upd = tn_in(in, n_in, 2);
  if (!ind || !upd) return ait_err(AIT_E_INVALID_ARG, "ScatterND needs indices and updates");
  AIT_TRY(tn_check_index_dtype(ind, "ScatterND indices"));
  if (upd->dtype != x->dtype)
    return ait_err(AIT_E_DTYPE, "ScatterND updates are %s, data is %s", ait_dtype_name(upd->dtype),
                   ait_dtype_name(x->dtype));
  int q = ind->rank, r = x->rank;
  if (q < 1) return ait_err(AIT_E_SHAPE, "ScatterND indices must have rank >= 1");
  int64_t k = ind->dims[q - 1];
  if (k < 1 || k > r)
    return ait_err(AIT_E_SHAPE, "ScatterND: index tuples of %lld for data rank %d", (long long)k,
                   r);
  /* updates shape = indices.shape[:-1] + data.shape[k:] */
  bool ok = upd->rank == q - 1 + r - (int)k;
  for (int i = 0; ok && i < q - 1; i++)
    ok = upd->dims[i] == ind->dims[i];
  for (int i = (int)k; ok && i < r; i++)
    ok = upd->dims[q - 1 + i - k] == x->dims[i];
  if (!ok) return ait_err(AIT_E_SHAPE, "ScatterND updates have the wrong shape");
  reduction red;
  AIT_TRY(reduction_of(node, x->dtype, &red));
  int64_t st[AIT_MAX_RANK], n = ait_tensor_numel(ind) / k;
  ait_shape_strides(r, x->dims, st);
  int64_t *offs = malloc((size_t)(n ? n : 1) * sizeof *offs);
  if (!offs) return ait_err(AIT_E_NOMEM, "out of memory in ScatterND");
  for (int64_t i = 0; i < n; i++) {
    int64_t off = 0;
    for (int64_t j = 0; j < k; j++) {
      int64_t a;
      ait_status s = tn_norm_index(tn_index_at(ind, i * k + j), x->dims[j], "ScatterND index", &a);
      if (s != AIT_OK) {
        free(offs);
        return s;
      }
      off += a * st[j];
    }
    offs[i] = off;
  }
  int64_t blk = ait_shape_numel(r - (int)k, x->dims + k);
  ait_status s = scatter_apply(node, x, upd, offs, n, blk, red, &out[0]);
  free(offs);
  return s;
}

/* ---- OneHot ----------------------------------------------------------- */

TN_KERNEL(tn_onehot) {
  const ait_tensor *ind = in[0], *dt = tn_in(in, n_in, 1), *vals = tn_in(in, n_in, 2);
  if (!dt || !vals) return ait_err(AIT_E_INVALID_ARG, "OneHot needs depth and values");
  const ait_dtype_traits *itr = ait_dtype_traits_of(ind->dtype);
  if (!itr || !ait_dtype_traits_of(dt->dtype))
    return ait_err(AIT_E_DTYPE, "OneHot indices and depth must be numeric");
  if (ait_tensor_numel(dt) != 1) return ait_err(AIT_E_SHAPE, "OneHot depth must be a scalar");
  if (ait_tensor_numel(vals) != 2)
    return ait_err(AIT_E_SHAPE, "OneHot values must have 2 elements");
  double dd = ait_scalar_f64(dt);
  if (!(dd >= 1) || dd > (double)((int64_t)1 << 40))
    return ait_err(AIT_E_INVALID_ARG, "OneHot depth %g is invalid", dd);
  int64_t depth = (int64_t)dd;
  int r = ind->rank + 1, axis;
  if (r > AIT_MAX_RANK) return ait_err(AIT_E_UNSUPPORTED, "OneHot output rank %d", r);
  AIT_TRY(ait_norm_axis(ait_attr_int(node, "axis", -1), r, &axis));
  int64_t dims[AIT_MAX_RANK];
  for (int k = 0, j = 0; k < r; k++)
    dims[k] = k == axis ? depth : ind->dims[j++];
  AIT_TRY(tn_new(vals->dtype, r, dims, &out[0]));
  size_t esz = ait_elem_size(vals->dtype);
  const char *off = vals->data, *on = off + esz;
  char *o = out[0]->data;
  int64_t total = ait_tensor_numel(out[0]);
  for (int64_t i = 0; i < total; i++)
    memcpy(o + (size_t)i * esz, off, esz);
  int64_t outer = ait_shape_numel(axis, ind->dims);
  int64_t inner = ait_shape_numel(ind->rank - axis, ind->dims + axis);
  for (int64_t a = 0; a < outer; a++)
    for (int64_t i = 0; i < inner; i++) {
      double v = trunc(ait_load_f64(itr, ind->data, a * inner + i));
      if (v < 0) v += (double)depth;
      if (!(v >= 0 && v < (double)depth)) continue; /* out of range: all off */
      memcpy(o + (size_t)((a * depth + (int64_t)v) * inner + i) * esz, on, esz);
    }
  return tn_finish(out[0], AIT_OK);
}

TN_SHAPE(tn_onehot_shape) {
  ait_value *ind = ait_node_in(g, node, 0), *vals = ait_node_in(g, node, 2);
  ait_value *dv = ait_node_in(g, node, 1);
  ait_dtype dt = vals ? vals->dtype : AIT_UNDEFINED;
  if (!ind || ind->rank < 0 || ind->rank + 1 > AIT_MAX_RANK) {
    ait_set_out(g, node, 0, dt, -1, NULL);
    return AIT_OK;
  }
  int r = ind->rank + 1, axis;
  AIT_TRY(ait_norm_axis(ait_attr_int(node, "axis", -1), r, &axis));
  int64_t depth = -1;
  if (dv && dv->init && ait_tensor_numel(dv->init) == 1 && ait_dtype_traits_of(dv->init->dtype))
    depth = (int64_t)ait_scalar_f64(dv->init);
  ait_dim d[AIT_MAX_RANK];
  for (int k = 0, j = 0; k < r; k++)
    d[k] = k == axis ? (ait_dim){depth, NULL} : ind->dims[j++];
  ait_set_out(g, node, 0, dt, r, d);
  return AIT_OK;
}

/* ---- Compress, NonZero ------------------------------------------------ */

TN_KERNEL(tn_compress) {
  const ait_tensor *x = in[0], *c = tn_in(in, n_in, 1);
  if (!c) return ait_err(AIT_E_INVALID_ARG, "Compress needs a condition");
  if (c->dtype != AIT_BOOL || c->rank != 1)
    return ait_err(AIT_E_DTYPE, "Compress condition must be a 1-D bool tensor");
  const ait_attr *aa = ait_node_attr(node, "axis");
  int axis = 0, r = 1;
  int64_t dims[AIT_MAX_RANK], outer = 1, n, inner = 1;
  if (aa) {
    AIT_TRY(ait_norm_axis(aa->i, x->rank, &axis));
    if (x->rank < 1) return ait_err(AIT_E_SHAPE, "Compress along an axis of a scalar");
    r = x->rank;
    memcpy(dims, x->dims, sizeof dims);
    outer = ait_shape_numel(axis, x->dims);
    n = x->dims[axis];
    inner = ait_shape_numel(r - axis - 1, x->dims + axis + 1);
  } else {
    n = ait_tensor_numel(x);
  }
  if (c->dims[0] > n)
    return ait_err(AIT_E_SHAPE, "Compress condition has %lld entries for an axis of %lld",
                   (long long)c->dims[0], (long long)n);
  const uint8_t *cond = c->data;
  int64_t kept = 0;
  for (int64_t i = 0; i < c->dims[0]; i++)
    kept += cond[i] != 0;
  dims[axis] = kept;
  AIT_TRY(tn_new(x->dtype, r, dims, &out[0]));
  size_t esz = ait_elem_size(x->dtype);
  char *o = out[0]->data;
  for (int64_t a = 0; a < outer; a++)
    for (int64_t i = 0; i < c->dims[0]; i++)
      if (cond[i]) {
        tn_move(o, (const char *)x->data + (size_t)((a * n + i) * inner) * esz, esz, inner);
        o += (size_t)inner * esz;
      }
  return tn_finish(out[0], AIT_OK);
}

static bool elem_nonzero(ait_dtype dt, const ait_dtype_traits *tr, const void *p) {
  if (dt == AIT_STRING) {
    const char *s = *(char *const *)p;
    return s && *s;
  }
  return tr->to_f64(p) != 0.0;
}

TN_KERNEL(tn_nonzero) {
  const ait_tensor *x = in[0];
  const ait_dtype_traits *tr = ait_dtype_traits_of(x->dtype);
  if (!tr && x->dtype != AIT_STRING)
    return ait_err(AIT_E_DTYPE, "NonZero of %s", ait_dtype_name(x->dtype));
  int r = x->rank ? x->rank : 1; /* a scalar counts as shape [1] */
  int64_t n = ait_tensor_numel(x), cnt = 0, xd[AIT_MAX_RANK] = {1}, idx[AIT_MAX_RANK] = {0};
  if (x->rank) memcpy(xd, x->dims, sizeof xd);
  size_t esz = ait_elem_size(x->dtype);
  for (int64_t i = 0; i < n; i++)
    cnt += elem_nonzero(x->dtype, tr, (const char *)x->data + i * esz);
  int64_t dims[2] = {r, cnt};
  AIT_TRY(tn_new(AIT_INT64, 2, dims, &out[0]));
  int64_t *o = out[0]->data, j = 0;
  for (int64_t i = 0; i < n; i++) {
    if (elem_nonzero(x->dtype, tr, (const char *)x->data + i * esz)) {
      for (int k = 0; k < r; k++)
        o[k * cnt + j] = idx[k];
      j++;
    }
    for (int k = r - 1; k >= 0 && ++idx[k] >= xd[k]; k--)
      idx[k] = 0;
  }
  return AIT_OK;
}

TN_SHAPE(tn_nonzero_shape) {
  ait_value *x = ait_node_in(g, node, 0);
  int64_t d[2] = {x && x->rank >= 0 ? (x->rank ? x->rank : 1) : -1, -1};
  tn_set_out_dims(g, node, 0, AIT_INT64, 2, d);
  return AIT_OK;
}

TN_SHAPE(tn_compress_shape) {
  ait_value *x = ait_node_in(g, node, 0), *c = ait_node_in(g, node, 1);
  if (!x) return AIT_OK;
  int64_t kept = -1; /* known when the condition is constant */
  if (c && c->init && c->init->kind == AIT_KIND_TENSOR && c->init->dtype == AIT_BOOL) {
    kept = 0;
    for (int64_t i = 0; i < ait_tensor_numel(c->init); i++)
      kept += ((const uint8_t *)c->init->data)[i] != 0;
  }
  const ait_attr *aa = ait_node_attr(node, "axis");
  if (!aa) {
    tn_set_out_dims(g, node, 0, x->dtype, 1, &kept);
    return AIT_OK;
  }
  if (x->rank < 1) {
    ait_set_out(g, node, 0, x->dtype, -1, NULL);
    return AIT_OK;
  }
  int axis = 0;
  AIT_TRY(ait_norm_axis(aa->i, x->rank, &axis));
  ait_dim d[AIT_MAX_RANK];
  memcpy(d, x->dims, sizeof d);
  d[axis] = (ait_dim){kept, NULL};
  ait_set_out(g, node, 0, x->dtype, x->rank, d);
  return AIT_OK;
}
