/* Ordering ops of the 'tensor' family: Unique, TopK, CumSum, CumProd. */
#include <stdlib.h>
#include <string.h>

#include "ops/tensor_impl.h"

/* A tensor viewed as [outer, n, inner] along one axis: "slice" j is the
 * sub-tensor at position j of the middle axis. */
typedef struct axis_view {
  const char *data;
  ait_dtype dt;
  size_t esz;
  int64_t outer, n, inner;
} axis_view;

static axis_view view_of(const ait_tensor *x, int axis, bool flat) {
  axis_view v = {x->data, x->dtype, ait_elem_size(x->dtype), 1, ait_tensor_numel(x), 1};
  if (!flat) {
    v.outer = ait_shape_numel(axis, x->dims);
    v.n = x->dims[axis];
    v.inner = ait_shape_numel(x->rank - axis - 1, x->dims + axis + 1);
  }
  return v;
}

static const char *view_at(const axis_view *v, int64_t o, int64_t j, int64_t i) {
  return v->data + (size_t)((o * v->n + j) * v->inner + i) * v->esz;
}

/* ---- Unique ----------------------------------------------------------- */

/* Lexicographic compare of slices a and b (row-major over outer, inner). */
static int slice_cmp(const void *ctx, int64_t a, int64_t b) {
  const axis_view *v = ctx;
  for (int64_t o = 0; o < v->outer; o++)
    for (int64_t i = 0; i < v->inner; i++) {
      int c = tn_cmp_elem(v->dt, view_at(v, o, a, i), view_at(v, o, b, i));
      if (c) return c;
    }
  return 0;
}

TN_KERNEL(tn_unique) {
  const ait_tensor *x = in[0];
  const ait_attr *aa = ait_node_attr(node, "axis");
  bool sorted = ait_attr_int(node, "sorted", 1) != 0;
  int axis = 0;
  if (aa) {
    if (x->rank < 1) return ait_err(AIT_E_SHAPE, "Unique along an axis of a scalar");
    AIT_TRY(ait_norm_axis(aa->i, x->rank, &axis));
  }
  axis_view v = view_of(x, axis, !aa);
  int64_t n = v.n;
  /* order: slices sorted (stable); grp[j]: group of slice j in output order;
   * first[g]: first occurrence of group g; cnt[g]: its size. */
  int64_t *buf = malloc((size_t)(4 * n + 1) * sizeof *buf);
  if (!buf) return ait_err(AIT_E_NOMEM, "out of memory in Unique");
  int64_t *order = buf, *grp = buf + n, *first = buf + 2 * n, *cnt = buf + 3 * n, m = 0;
  for (int64_t j = 0; j < n; j++)
    order[j] = j;
  ait_status st = tn_sort_idx(order, n, slice_cmp, &v);
  if (st != AIT_OK) goto done;
  for (int64_t s = 0; s < n; s++) {
    if (s == 0 || slice_cmp(&v, order[s - 1], order[s])) {
      first[m] = order[s]; /* stable sort: the lowest index comes first */
      cnt[m++] = 0;
    }
    grp[order[s]] = m - 1;
    cnt[m - 1]++;
  }
  if (!sorted) {                        /* renumber groups by first occurrence */
    int64_t *rank_of = order, next = 0; /* order is no longer needed */
    for (int64_t g = 0; g < m; g++)
      rank_of[g] = -1;
    for (int64_t j = 0; j < n; j++)
      if (rank_of[grp[j]] < 0) rank_of[grp[j]] = next++;
    int64_t *tmp = malloc((size_t)(2 * m + 1) * sizeof *tmp);
    if (!tmp) {
      st = ait_err(AIT_E_NOMEM, "out of memory in Unique");
      goto done;
    }
    for (int64_t g = 0; g < m; g++) {
      tmp[rank_of[g]] = first[g];
      tmp[m + rank_of[g]] = cnt[g];
    }
    memcpy(first, tmp, (size_t)m * sizeof *tmp);
    memcpy(cnt, tmp + m, (size_t)m * sizeof *tmp);
    free(tmp);
    for (int64_t j = 0; j < n; j++)
      grp[j] = rank_of[grp[j]];
  }
  int64_t dims[AIT_MAX_RANK];
  int r = 1;
  if (aa) {
    r = x->rank;
    memcpy(dims, x->dims, sizeof dims);
  }
  dims[axis] = m;
  st = tn_new(x->dtype, r, dims, &out[0]);
  if (st != AIT_OK) goto done;
  char *o = out[0]->data;
  for (int64_t a = 0; a < v.outer; a++)
    for (int64_t g = 0; g < m; g++, o += (size_t)v.inner * v.esz)
      memcpy(o, view_at(&v, a, first[g], 0), (size_t)v.inner * v.esz);
  st = tn_finish(out[0], AIT_OK);
  const int64_t *src[3] = {first, grp, cnt};
  int64_t len[3] = {m, n, m};
  for (int k = 1; k < 4 && st == AIT_OK; k++) {
    if (k >= n_out || node->out[k] < 0) continue;
    st = tn_new(AIT_INT64, 1, &len[k - 1], &out[k]);
    if (st == AIT_OK) tn_move(out[k]->data, src[k - 1], sizeof(int64_t), len[k - 1]);
  }
done:
  free(buf);
  return st;
}

TN_SHAPE(tn_unique_shape) {
  ait_value *x = ait_node_in(g, node, 0);
  if (!x) return AIT_OK;
  const ait_attr *aa = ait_node_attr(node, "axis");
  int64_t n = -1;
  if (!aa) {
    tn_set_out_dims(g, node, 0, x->dtype, 1, NULL);
    int64_t dims[AIT_MAX_RANK];
    if (tn_value_dims(x, dims)) {
      n = 1;
      for (int k = 0; k < x->rank; k++)
        n = (n < 0 || dims[k] < 0) ? -1 : n * dims[k];
    }
  } else if (x->rank < 1) {
    ait_set_out(g, node, 0, x->dtype, -1, NULL);
  } else {
    int axis;
    AIT_TRY(ait_norm_axis(aa->i, x->rank, &axis));
    ait_dim d[AIT_MAX_RANK];
    memcpy(d, x->dims, sizeof d);
    n = d[axis].v;
    d[axis] = (ait_dim){-1, NULL};
    ait_set_out(g, node, 0, x->dtype, x->rank, d);
  }
  for (int k = 1; k < node->n_out && k < 4; k++)
    if (node->out[k] >= 0) tn_set_out_dims(g, node, k, AIT_INT64, 1, k == 2 ? &n : NULL);
  return AIT_OK;
}

/* ---- TopK ------------------------------------------------------------- */

typedef struct topk_ctx {
  const axis_view *v;
  int64_t o, i;
  bool largest;
} topk_ctx;

static int topk_cmp(const void *ctx, int64_t a, int64_t b) {
  const topk_ctx *c = ctx;
  int r = tn_cmp_elem(c->v->dt, view_at(c->v, c->o, a, c->i), view_at(c->v, c->o, b, c->i));
  return c->largest ? -r : r;
}

static ait_status topk_k(const ait_node *node, const ait_tensor *const *in, int n_in, int64_t *k) {
  if (node->opset < 10) {
    *k = ait_attr_int(node, "k", -1);
    return AIT_OK;
  }
  const ait_tensor *kt = tn_in(in, n_in, 1);
  if (!kt || ait_tensor_numel(kt) != 1)
    return ait_err(AIT_E_INVALID_ARG, "TopK needs a 1-element K");
  AIT_TRY(tn_check_index_dtype(kt, "TopK K"));
  *k = tn_index_at(kt, 0);
  return AIT_OK;
}

TN_KERNEL(tn_topk) {
  const ait_tensor *x = in[0];
  if (x->rank < 1) return ait_err(AIT_E_SHAPE, "TopK of a scalar");
  int axis = 0;
  int64_t k = 0;
  AIT_TRY(ait_norm_axis(ait_attr_int(node, "axis", -1), x->rank, &axis));
  AIT_TRY(topk_k(node, in, n_in, &k));
  if (k < 0 || k > x->dims[axis])
    return ait_err(AIT_E_INVALID_ARG, "TopK K = %lld for an axis of %lld", (long long)k,
                   (long long)x->dims[axis]);
  axis_view v = view_of(x, axis, false);
  int64_t dims[AIT_MAX_RANK];
  memcpy(dims, x->dims, sizeof dims);
  dims[axis] = k;
  AIT_TRY(tn_new(x->dtype, x->rank, dims, &out[0]));
  ait_tensor *ix = NULL;
  if (n_out > 1) {
    AIT_TRY(tn_new(AIT_INT64, x->rank, dims, &out[1]));
    ix = out[1];
  }
  int64_t *idx = malloc((size_t)(v.n + 1) * sizeof *idx);
  if (!idx) return ait_err(AIT_E_NOMEM, "out of memory in TopK");
  topk_ctx c = {&v, 0, 0, ait_attr_int(node, "largest", 1) != 0};
  ait_status st = AIT_OK;
  for (c.o = 0; c.o < v.outer && st == AIT_OK; c.o++)
    for (c.i = 0; c.i < v.inner && st == AIT_OK; c.i++) {
      for (int64_t j = 0; j < v.n; j++)
        idx[j] = j;
      st = tn_sort_idx(idx, v.n, topk_cmp, &c); /* stable: ties keep the lower index first */
      for (int64_t j = 0; j < k && st == AIT_OK; j++) {
        int64_t p = (c.o * k + j) * v.inner + c.i;
        memcpy((char *)out[0]->data + (size_t)p * v.esz, view_at(&v, c.o, idx[j], c.i), v.esz);
        if (ix) ((int64_t *)ix->data)[p] = idx[j];
      }
    }
  free(idx);
  return tn_finish(out[0], st);
}

TN_SHAPE(tn_topk_shape) {
  ait_value *x = ait_node_in(g, node, 0);
  if (!x) return AIT_OK;
  if (x->rank < 1) {
    ait_set_out(g, node, 0, x->dtype, -1, NULL);
    ait_set_out(g, node, 1, AIT_INT64, -1, NULL);
    return AIT_OK;
  }
  int axis, n;
  AIT_TRY(ait_norm_axis(ait_attr_int(node, "axis", -1), x->rank, &axis));
  int64_t k = -1;
  if (node->opset < 10)
    k = ait_attr_int(node, "k", -1);
  else if (!tn_const_ints(g, node, 1, &k, 1, &n) || n != 1)
    k = -1;
  ait_dim d[AIT_MAX_RANK];
  memcpy(d, x->dims, sizeof d);
  d[axis] = (ait_dim){k, NULL};
  ait_set_out(g, node, 0, x->dtype, x->rank, d);
  if (node->n_out > 1) ait_set_out(g, node, 1, AIT_INT64, x->rank, d);
  return AIT_OK;
}

/* ---- CumSum, CumProd ------------------------------------------------- */

/* The running sum (CumSum-11) or product (CumProd-26) along the axis input,
 * inclusive or `exclusive`, forward or `reverse`. Floats round to the dtype
 * after each step as a loop in that dtype would; integers wrap. */
static ait_status cumulative(const ait_node *node, const ait_tensor *const *in, int n_in,
                             ait_tensor **out, bool prod) {
  const char *name = prod ? "CumProd" : "CumSum";
  const ait_tensor *x = in[0], *at = tn_in(in, n_in, 1);
  const ait_dtype_traits *tr = ait_dtype_traits_of(x->dtype);
  if (!tr || x->dtype == AIT_BOOL)
    return ait_err(AIT_E_DTYPE, "%s of %s", name, ait_dtype_name(x->dtype));
  if (!at || ait_tensor_numel(at) != 1)
    return ait_err(AIT_E_INVALID_ARG, "%s needs a scalar axis", name);
  AIT_TRY(tn_check_index_dtype(at, prod ? "CumProd axis" : "CumSum axis"));
  if (x->rank < 1) return ait_err(AIT_E_SHAPE, "%s of a scalar", name);
  int axis = 0;
  AIT_TRY(ait_norm_axis(tn_index_at(at, 0), x->rank, &axis));
  bool excl = ait_attr_int(node, "exclusive", 0) != 0, rev = ait_attr_int(node, "reverse", 0) != 0;
  AIT_TRY(tn_new(x->dtype, x->rank, x->dims, &out[0]));
  axis_view v = view_of(x, axis, false);
  for (int64_t o = 0; o < v.outer; o++)
    for (int64_t i = 0; i < v.inner; i++) {
      double accf = prod ? 1 : 0;
      float acc32 = prod ? 1.0f : 0.0f;
      uint64_t acci = prod ? 1 : 0;
      for (int64_t s = 0; s < v.n; s++) {
        int64_t j = rev ? v.n - 1 - s : s, p = (o * v.n + j) * v.inner + i;
        if (x->dtype == AIT_FLOAT32) {
          float xv = ((const float *)x->data)[p], next = prod ? acc32 * xv : acc32 + xv;
          ((float *)out[0]->data)[p] = excl ? acc32 : next;
          acc32 = next;
        } else if (tr->is_float) { /* round like the dtype after each step */
          double xv = ait_load_f64(tr, x->data, p);
          unsigned char tmp[8];
          tr->from_f64(tmp, prod ? accf * xv : accf + xv);
          double next = tr->to_f64(tmp);
          ait_store_f64(tr, out[0]->data, p, excl ? accf : next);
          accf = next;
        } else {
          uint64_t xv = (uint64_t)ait_load_i64(tr, x->data, p);
          uint64_t next = prod ? acci * xv : acci + xv;
          ait_store_i64(tr, out[0]->data, p, (int64_t)(excl ? acci : next));
          acci = next;
        }
      }
    }
  return AIT_OK;
}

TN_KERNEL(tn_cumsum) { return cumulative(node, in, n_in, out, false); }
TN_KERNEL(tn_cumprod) { return cumulative(node, in, n_in, out, true); }
