/* Layout ops of the 'tensor' family: Transpose, Concat, Split, Slice,
 * Expand, Tile. All move raw elements; strided views do the work. */
#include <stdlib.h>
#include <string.h>

#include "ops/tensor_impl.h"

/* ---- Transpose -------------------------------------------------------- */

static ait_status get_perm(const ait_node *node, int rank, int *perm) {
  int n;
  const int64_t *p = ait_attr_ints(node, "perm", &n);
  if (!p) {
    for (int k = 0; k < rank; k++)
      perm[k] = rank - 1 - k;
    return AIT_OK;
  }
  if (n != rank)
    return ait_err(AIT_E_INVALID_ARG, "Transpose perm has %d entries for rank %d", n, rank);
  bool seen[AIT_MAX_RANK] = {false};
  for (int k = 0; k < n; k++) {
    if (p[k] < 0 || p[k] >= rank || seen[p[k]])
      return ait_err(AIT_E_INVALID_ARG, "Transpose perm is not a permutation of 0..%d", rank - 1);
    seen[p[k]] = true;
    perm[k] = (int)p[k];
  }
  return AIT_OK;
}

TN_KERNEL(tn_transpose) {
  const ait_tensor *x = in[0];
  int perm[AIT_MAX_RANK];
  int64_t dims[AIT_MAX_RANK];
  AIT_TRY(get_perm(node, x->rank, perm));
  for (int k = 0; k < x->rank; k++)
    dims[k] = x->dims[perm[k]];
  AIT_TRY(tn_new(x->dtype, x->rank, dims, &out[0]));
  if (ait_tensor_numel(x))
    tn_transpose_raw(out[0]->data, x->data, ait_elem_size(x->dtype), x->rank, x->dims, perm);
  return tn_finish(out[0], AIT_OK);
}

TN_SHAPE(tn_transpose_shape) {
  ait_value *x = ait_node_in(g, node, 0);
  if (!x) return AIT_OK;
  int perm[AIT_MAX_RANK];
  ait_dim d[AIT_MAX_RANK];
  if (x->rank < 0) {
    ait_set_out(g, node, 0, x->dtype, -1, NULL);
    return AIT_OK;
  }
  AIT_TRY(get_perm(node, x->rank, perm));
  for (int k = 0; k < x->rank; k++)
    d[k] = x->dims[perm[k]];
  ait_set_out(g, node, 0, x->dtype, x->rank, d);
  return AIT_OK;
}

/* ---- Concat ----------------------------------------------------------- */

TN_KERNEL(tn_concat) {
  if (n_in < 1 || !in[0]) return ait_err(AIT_E_INVALID_ARG, "Concat needs at least one input");
  const ait_tensor *x = in[0];
  if (x->rank == 0) return ait_err(AIT_E_SHAPE, "Concat of scalars");
  int axis = 0;
  AIT_TRY(ait_norm_axis(ait_attr_int(node, "axis", node->opset < 4 ? 1 : 0), x->rank, &axis));
  int64_t dims[AIT_MAX_RANK];
  memcpy(dims, x->dims, sizeof dims);
  dims[axis] = 0;
  for (int i = 0; i < n_in; i++) {
    const ait_tensor *t = in[i];
    if (!t) return ait_err(AIT_E_INVALID_ARG, "Concat input %d is missing", i);
    if (t->dtype != x->dtype)
      return ait_err(AIT_E_DTYPE, "Concat input %d is %s, input 0 is %s", i,
                     ait_dtype_name(t->dtype), ait_dtype_name(x->dtype));
    if (t->rank != x->rank)
      return ait_err(AIT_E_SHAPE, "Concat input %d has rank %d, input 0 rank %d", i, t->rank,
                     x->rank);
    for (int k = 0; k < x->rank; k++)
      if (k != axis && t->dims[k] != x->dims[k]) {
        char a[160], b[160];
        return ait_err(AIT_E_SHAPE, "Concat input %d has shape %s, input 0 %s", i,
                       ait_shape_str(t->rank, t->dims, a, sizeof a),
                       ait_shape_str(x->rank, x->dims, b, sizeof b));
      }
    dims[axis] += t->dims[axis];
  }
  AIT_TRY(tn_new(x->dtype, x->rank, dims, &out[0]));
  size_t esz = ait_elem_size(x->dtype);
  int64_t outer = ait_shape_numel(axis, dims);
  int64_t inner = ait_shape_numel(x->rank - axis - 1, dims + axis + 1);
  char *o = out[0]->data;
  for (int64_t j = 0; j < outer; j++)
    for (int i = 0; i < n_in; i++) {
      int64_t blk = in[i]->dims[axis] * inner;
      tn_move(o, (const char *)in[i]->data + (size_t)(j * blk) * esz, esz, blk);
      o += (size_t)blk * esz;
    }
  return tn_finish(out[0], AIT_OK);
}

TN_SHAPE(tn_concat_shape) {
  ait_value *x = ait_node_in(g, node, 0);
  if (!x) return AIT_OK;
  int rank = -1;
  for (int i = 0; i < node->n_in && rank < 0; i++) {
    ait_value *v = ait_node_in(g, node, i);
    if (v) rank = v->rank;
  }
  if (rank <= 0) {
    ait_set_out(g, node, 0, x->dtype, -1, NULL);
    return AIT_OK;
  }
  int axis = 0;
  AIT_TRY(ait_norm_axis(ait_attr_int(node, "axis", node->opset < 4 ? 1 : 0), rank, &axis));
  ait_dim d[AIT_MAX_RANK];
  for (int k = 0; k < rank; k++)
    d[k] = (ait_dim){-1, NULL};
  int64_t sum = 0;
  for (int i = 0; i < node->n_in; i++) {
    ait_value *v = ait_node_in(g, node, i);
    if (!v || v->rank < 0) {
      sum = -1;
      continue;
    }
    if (v->rank != rank)
      return ait_err(AIT_E_SHAPE, "Concat input %d has rank %d, expected %d", i, v->rank, rank);
    for (int k = 0; k < rank; k++)
      if (k != axis && d[k].v < 0 && (v->dims[k].v >= 0 || !d[k].sym)) d[k] = v->dims[k];
    if (sum >= 0) sum = v->dims[axis].v < 0 ? -1 : sum + v->dims[axis].v;
  }
  d[axis] = (ait_dim){sum, NULL};
  ait_set_out(g, node, 0, x->dtype, rank, d);
  return AIT_OK;
}

/* ---- Split ------------------------------------------------------------ */

/* Sizes of the n parts along a dim of size dim. split/n_split from the
 * attribute or input; NULL for an equal split. */
static ait_status split_sizes(const ait_node *node, int64_t dim, const int64_t *split, int n_split,
                              int n, int64_t *sizes) {
  if (split) {
    if (n_split != n)
      return ait_err(AIT_E_INVALID_ARG, "Split has %d sizes for %d outputs", n_split, n);
    int64_t sum = 0;
    for (int i = 0; i < n; i++) {
      if (split[i] < 0) return ait_err(AIT_E_INVALID_ARG, "Split size %d is negative", i);
      sizes[i] = split[i];
      if (__builtin_add_overflow(sum, split[i], &sum))
        return ait_err(AIT_E_INVALID_ARG, "Split sizes overflow 64 bits");
    }
    if (sum != dim)
      return ait_err(AIT_E_SHAPE, "Split sizes sum to %lld, the axis has %lld", (long long)sum,
                     (long long)dim);
    return AIT_OK;
  }
  if (n <= 0) return ait_err(AIT_E_INVALID_ARG, "Split has no outputs");
  if (dim % n == 0) {
    for (int i = 0; i < n; i++)
      sizes[i] = dim / n;
    return AIT_OK;
  }
  if (node->opset < 18)
    return ait_err(AIT_E_SHAPE, "Split: axis of %lld does not divide into %d equal parts",
                   (long long)dim, n);
  int64_t c = (dim + n - 1) / n; /* opset 18: ceil-sized parts, the last smaller */
  for (int i = 0; i < n; i++) {
    int64_t left = dim - c * i;
    sizes[i] = left < 0 ? 0 : left < c ? left : c;
  }
  return AIT_OK;
}

static int split_count(const ait_node *node) {
  if (node->opset >= 18 && ait_node_attr(node, "num_outputs"))
    return (int)ait_attr_int(node, "num_outputs", node->n_out);
  return node->n_out;
}

TN_KERNEL(tn_split) {
  const ait_tensor *x = in[0];
  int axis = 0;
  AIT_TRY(ait_norm_axis(ait_attr_int(node, "axis", 0), x->rank, &axis));
  if (x->rank == 0) return ait_err(AIT_E_SHAPE, "Split of a scalar");
  int n = split_count(node), n_split = 0;
  if (n != n_out)
    return ait_err(AIT_E_INVALID_ARG, "Split num_outputs %d but %d outputs", n, n_out);
  const int64_t *split = NULL;
  int64_t *sizes = malloc((size_t)(n > 0 ? n : 1) * 2 * sizeof *sizes);
  if (!sizes) return ait_err(AIT_E_NOMEM, "out of memory in Split");
  ait_status st = AIT_OK;
  const ait_tensor *s = node->opset >= 13 ? tn_in(in, n_in, 1) : NULL;
  if (s) {
    st = tn_read_ints(s, "Split split", sizes + n, n, &n_split);
    split = sizes + n;
  } else if (node->opset < 13 && ait_node_attr(node, "split")) {
    split = ait_attr_ints(node, "split", &n_split);
  }
  if (st == AIT_OK) st = split_sizes(node, x->dims[axis], split, n_split, n, sizes);
  size_t esz = ait_elem_size(x->dtype);
  int64_t outer = ait_shape_numel(axis, x->dims);
  int64_t inner = ait_shape_numel(x->rank - axis - 1, x->dims + axis + 1);
  int64_t off = 0, row = x->dims[axis] * inner;
  for (int i = 0; i < n && st == AIT_OK; i++) {
    int64_t dims[AIT_MAX_RANK];
    memcpy(dims, x->dims, sizeof dims);
    dims[axis] = sizes[i];
    st = tn_new(x->dtype, x->rank, dims, &out[i]);
    if (st != AIT_OK) break;
    int64_t blk = sizes[i] * inner;
    for (int64_t j = 0; j < outer; j++)
      tn_move((char *)out[i]->data + (size_t)(j * blk) * esz,
              (const char *)x->data + (size_t)(j * row + off) * esz, esz, blk);
    off += blk;
    st = tn_finish(out[i], st);
  }
  free(sizes);
  return st;
}

TN_SHAPE(tn_split_shape) {
  ait_value *x = ait_node_in(g, node, 0);
  if (!x) return AIT_OK;
  int n = node->n_out;
  if (x->rank <= 0 || n > 64) {
    for (int i = 0; i < n; i++)
      tn_set_out_dims(g, node, i, x->dtype, x->rank > 0 ? x->rank : -1, NULL);
    return AIT_OK;
  }
  int axis = 0;
  AIT_TRY(ait_norm_axis(ait_attr_int(node, "axis", 0), x->rank, &axis));
  int64_t sizes[64], split[64];
  int n_split = 0;
  bool known = x->dims[axis].v >= 0;
  const int64_t *sp = NULL;
  if (node->opset >= 13 && node->n_in > 1 && node->in[1] >= 0) {
    known = tn_const_ints(g, node, 1, split, 64, &n_split);
    sp = split;
  } else if (node->opset < 13 && ait_node_attr(node, "split")) {
    sp = ait_attr_ints(node, "split", &n_split);
  }
  if (sp && known && x->dims[axis].v < 0) { /* sizes are known even if the dim is not */
    for (int i = 0; i < n && i < n_split; i++)
      sizes[i] = sp[i];
    known = n_split == n;
  } else if (known) {
    known = split_sizes(node, x->dims[axis].v, sp, n_split, n, sizes) == AIT_OK;
  }
  for (int i = 0; i < n; i++) {
    ait_dim d[AIT_MAX_RANK];
    memcpy(d, x->dims, sizeof d);
    d[axis] = (ait_dim){known ? sizes[i] : -1, NULL};
    ait_set_out(g, node, i, x->dtype, x->rank, d);
  }
  return AIT_OK;
}

/* ---- Slice ------------------------------------------------------------ */

typedef struct slice_args {
  int64_t starts[AIT_MAX_RANK], ends[AIT_MAX_RANK], axes[AIT_MAX_RANK], steps[AIT_MAX_RANK];
  int n;
} slice_args;

/* Per-axis start/step/count for dim d, ONNX clamping rules. */
static void slice_axis(int64_t start, int64_t end, int64_t step, int64_t d, int64_t *first,
                       int64_t *count) {
  /* a step longer than the axis takes at most one element: clamp it so that
   * no arithmetic below can overflow */
  if (step > d) step = d > 0 ? d : 1;
  if (step < -d) step = d > 0 ? -d : -1;
  if (start < 0) start += d;
  if (end < 0) end += d;
  if (step > 0) {
    start = start < 0 ? 0 : start > d ? d : start;
    end = end < 0 ? 0 : end > d ? d : end;
    *count = end > start ? (end - start + step - 1) / step : 0;
  } else {
    start = start < 0 ? 0 : start > d - 1 ? d - 1 : start;
    end = end < -1 ? -1 : end > d - 1 ? d - 1 : end;
    *count = start > end ? (start - end + (-step) - 1) / (-step) : 0;
  }
  *first = start;
}

/* Validates the argument arrays against rank; fills default axes/steps. */
static ait_status slice_check(slice_args *a, bool have_axes, bool have_steps, int rank,
                              bool *seen) {
  memset(seen, 0, (size_t)AIT_MAX_RANK * sizeof *seen);
  for (int i = 0; i < a->n; i++) {
    if (!have_axes) a->axes[i] = i;
    if (!have_steps) a->steps[i] = 1;
    int ax;
    AIT_TRY(ait_norm_axis(a->axes[i], rank, &ax));
    if (ax >= rank || seen[ax])
      return ait_err(AIT_E_INVALID_ARG, "Slice axis %lld is repeated or out of range",
                     (long long)a->axes[i]);
    seen[ax] = true;
    a->axes[i] = ax;
    if (a->steps[i] == 0) return ait_err(AIT_E_INVALID_ARG, "Slice step is 0");
  }
  return AIT_OK;
}

static ait_status slice_read(const ait_node *node, const ait_tensor *const *in, int n_in, int rank,
                             slice_args *a, bool *seen) {
  bool have_axes, have_steps = false;
  if (node->opset < 10) {
    int ns, ne, na;
    const int64_t *s = ait_attr_ints(node, "starts", &ns), *e = ait_attr_ints(node, "ends", &ne);
    const int64_t *ax = ait_attr_ints(node, "axes", &na);
    if (!s || !e || ns != ne || ns > AIT_MAX_RANK || (ax && na != ns))
      return ait_err(AIT_E_INVALID_ARG, "Slice needs starts and ends of equal length");
    a->n = ns;
    memcpy(a->starts, s, (size_t)ns * sizeof *s);
    memcpy(a->ends, e, (size_t)ns * sizeof *e);
    if (ax) memcpy(a->axes, ax, (size_t)ns * sizeof *ax);
    have_axes = ax != NULL;
  } else {
    const ait_tensor *s = tn_in(in, n_in, 1), *e = tn_in(in, n_in, 2);
    const ait_tensor *ax = tn_in(in, n_in, 3), *st = tn_in(in, n_in, 4);
    if (!s || !e) return ait_err(AIT_E_INVALID_ARG, "Slice needs starts and ends");
    int ne, m;
    AIT_TRY(tn_read_ints(s, "Slice starts", a->starts, AIT_MAX_RANK, &a->n));
    AIT_TRY(tn_read_ints(e, "Slice ends", a->ends, AIT_MAX_RANK, &ne));
    if (ne != a->n) return ait_err(AIT_E_INVALID_ARG, "Slice starts and ends differ in length");
    have_axes = ax != NULL;
    if (ax) {
      AIT_TRY(tn_read_ints(ax, "Slice axes", a->axes, AIT_MAX_RANK, &m));
      if (m != a->n) return ait_err(AIT_E_INVALID_ARG, "Slice axes and starts differ in length");
    }
    have_steps = st != NULL;
    if (st) {
      AIT_TRY(tn_read_ints(st, "Slice steps", a->steps, AIT_MAX_RANK, &m));
      if (m != a->n) return ait_err(AIT_E_INVALID_ARG, "Slice steps and starts differ in length");
    }
  }
  return slice_check(a, have_axes, have_steps, rank, seen);
}

TN_KERNEL(tn_slice) {
  const ait_tensor *x = in[0];
  slice_args a;
  bool seen[AIT_MAX_RANK];
  AIT_TRY(slice_read(node, in, n_in, x->rank, &a, &seen[0]));
  int64_t dims[AIT_MAX_RANK], strides[AIT_MAX_RANK], in_strides[AIT_MAX_RANK], offset = 0;
  ait_shape_strides(x->rank, x->dims, in_strides);
  memcpy(dims, x->dims, sizeof dims);
  memcpy(strides, in_strides, sizeof strides);
  for (int i = 0; i < a.n; i++) {
    int ax = (int)a.axes[i];
    int64_t first, count;
    slice_axis(a.starts[i], a.ends[i], a.steps[i], x->dims[ax], &first, &count);
    if (count <= 1) a.steps[i] = 1; /* the stride is never applied */
    dims[ax] = count;
    strides[ax] = in_strides[ax] * a.steps[i];
    if (count > 0) offset += first * in_strides[ax];
  }
  AIT_TRY(tn_new(x->dtype, x->rank, dims, &out[0]));
  size_t esz = ait_elem_size(x->dtype);
  if (ait_tensor_numel(out[0]))
    tn_strided_copy(out[0]->data, (const char *)x->data + (size_t)offset * esz, esz, x->rank, dims,
                    strides);
  return tn_finish(out[0], AIT_OK);
}

/* Constant Slice arguments for the shape function; false when unknown. */
static bool slice_const(ait_graph *g, const ait_node *node, int rank, slice_args *a) {
  bool seen[AIT_MAX_RANK];
  if (node->opset < 10) return slice_read(node, NULL, 0, rank, a, seen) == AIT_OK;
  int ne, m;
  if (!tn_const_ints(g, node, 1, a->starts, AIT_MAX_RANK, &a->n) ||
      !tn_const_ints(g, node, 2, a->ends, AIT_MAX_RANK, &ne) || ne != a->n)
    return false;
  bool has_axes = node->n_in > 3 && node->in[3] >= 0;
  bool has_steps = node->n_in > 4 && node->in[4] >= 0;
  if (has_axes && (!tn_const_ints(g, node, 3, a->axes, AIT_MAX_RANK, &m) || m != a->n))
    return false;
  if (has_steps && (!tn_const_ints(g, node, 4, a->steps, AIT_MAX_RANK, &m) || m != a->n))
    return false;
  return slice_check(a, has_axes, has_steps, rank, seen) == AIT_OK;
}

TN_SHAPE(tn_slice_shape) {
  ait_value *x = ait_node_in(g, node, 0);
  if (!x) return AIT_OK;
  slice_args a;
  if (x->rank < 0) {
    ait_set_out(g, node, 0, x->dtype, -1, NULL);
    return AIT_OK;
  }
  ait_dim d[AIT_MAX_RANK];
  memcpy(d, x->dims, sizeof d);
  if (!slice_const(g, node, x->rank, &a)) {
    for (int k = 0; k < x->rank; k++)
      d[k] = (ait_dim){-1, NULL};
  } else {
    for (int i = 0; i < a.n; i++) {
      int ax = (int)a.axes[i];
      int64_t first, count = -1;
      if (x->dims[ax].v >= 0)
        slice_axis(a.starts[i], a.ends[i], a.steps[i], x->dims[ax].v, &first, &count);
      d[ax] = (ait_dim){count, NULL};
    }
  }
  ait_set_out(g, node, 0, x->dtype, x->rank, d);
  return AIT_OK;
}

/* ---- Expand, Tile ----------------------------------------------------- */

TN_KERNEL(tn_expand) {
  const ait_tensor *x = in[0], *s = tn_in(in, n_in, 1);
  if (!s) return ait_err(AIT_E_INVALID_ARG, "Expand needs the shape input");
  int64_t shape[AIT_MAX_RANK], dims[AIT_MAX_RANK], strides[AIT_MAX_RANK];
  int n, r;
  AIT_TRY(tn_read_ints(s, "Expand shape", shape, AIT_MAX_RANK, &n));
  for (int k = 0; k < n; k++)
    if (shape[k] < 0) return ait_err(AIT_E_SHAPE, "Expand shape[%d] is negative", k);
  AIT_TRY(ait_shape_broadcast(x->rank, x->dims, n, shape, &r, dims));
  AIT_TRY(tn_new(x->dtype, r, dims, &out[0]));
  ait_broadcast_strides(x->rank, x->dims, r, dims, strides);
  if (ait_tensor_numel(out[0]))
    tn_strided_copy(out[0]->data, x->data, ait_elem_size(x->dtype), r, dims, strides);
  return tn_finish(out[0], AIT_OK);
}

TN_SHAPE(tn_expand_shape) {
  ait_value *x = ait_node_in(g, node, 0);
  if (!x) return AIT_OK;
  int64_t shape[AIT_MAX_RANK];
  int n;
  if (x->rank < 0 || !tn_const_ints(g, node, 1, shape, AIT_MAX_RANK, &n)) {
    ait_value *s = ait_node_in(g, node, 1); /* the rank may still be known */
    int r = -1;
    if (x->rank >= 0 && s && s->rank == 1 && s->dims[0].v >= 0 && s->dims[0].v <= AIT_MAX_RANK)
      r = x->rank > (int)s->dims[0].v ? x->rank : (int)s->dims[0].v;
    tn_set_out_dims(g, node, 0, x->dtype, r, NULL);
    return AIT_OK;
  }
  int r = n > x->rank ? n : x->rank;
  ait_dim d[AIT_MAX_RANK];
  for (int k = 0; k < r; k++) {
    int i = k - (r - x->rank), j = k - (r - n);
    ait_dim a = i >= 0 ? x->dims[i] : (ait_dim){1, NULL};
    int64_t b = j >= 0 ? shape[j] : 1;
    if (b == 1)
      d[k] = a;
    else if (a.v == 1 || a.v < 0 || a.v == b)
      d[k] = (ait_dim){b, NULL};
    else
      return ait_err(AIT_E_SHAPE, "Expand: dim %lld does not broadcast to %lld", (long long)a.v,
                     (long long)b);
  }
  ait_set_out(g, node, 0, x->dtype, r, d);
  return AIT_OK;
}

TN_KERNEL(tn_tile) {
  const ait_tensor *x = in[0], *rep = tn_in(in, n_in, 1);
  if (!rep) return ait_err(AIT_E_INVALID_ARG, "Tile needs the repeats input");
  int64_t reps[AIT_MAX_RANK], dims[AIT_MAX_RANK];
  int n;
  AIT_TRY(tn_read_ints(rep, "Tile repeats", reps, AIT_MAX_RANK, &n));
  if (n != x->rank) return ait_err(AIT_E_SHAPE, "Tile has %d repeats for rank %d", n, x->rank);
  /* Output [r0*d0, r1*d1, ...] is the row-major view [r0, d0, r1, d1, ...]
   * of the input broadcast along the r axes. */
  int64_t vd[TN_MAX_VIEW], vs[TN_MAX_VIEW], st[AIT_MAX_RANK];
  ait_shape_strides(x->rank, x->dims, st);
  for (int k = 0; k < n; k++) {
    if (reps[k] < 0) return ait_err(AIT_E_INVALID_ARG, "Tile repeats[%d] is negative", k);
    if (x->dims[k] && reps[k] > ((int64_t)1 << 40) / x->dims[k])
      return ait_err(AIT_E_INVALID_ARG, "Tile repeats[%d] = %lld is too large", k,
                     (long long)reps[k]);
    dims[k] = x->dims[k] * reps[k];
    vd[2 * k] = reps[k];
    vs[2 * k] = 0;
    vd[2 * k + 1] = x->dims[k];
    vs[2 * k + 1] = st[k];
  }
  AIT_TRY(tn_new(x->dtype, n, dims, &out[0]));
  if (ait_tensor_numel(out[0]))
    tn_strided_copy(out[0]->data, x->data, ait_elem_size(x->dtype), 2 * n, vd, vs);
  return tn_finish(out[0], AIT_OK);
}

TN_SHAPE(tn_tile_shape) {
  ait_value *x = ait_node_in(g, node, 0);
  if (!x) return AIT_OK;
  int64_t reps[AIT_MAX_RANK];
  int n;
  if (x->rank < 0 || !tn_const_ints(g, node, 1, reps, AIT_MAX_RANK, &n) || n != x->rank) {
    tn_set_out_dims(g, node, 0, x->dtype, x->rank, NULL);
    return AIT_OK;
  }
  ait_dim d[AIT_MAX_RANK];
  for (int k = 0; k < n; k++) {
    d[k] = x->dims[k];
    int64_t p; /* a product past 2^63 (untrusted repeats) is unknown here; the kernel refuses it */
    if (reps[k] != 1)
      d[k] = (ait_dim){
          d[k].v < 0 || reps[k] < 0 || __builtin_mul_overflow(d[k].v, reps[k], &p) ? -1 : p, NULL};
  }
  ait_set_out(g, node, 0, x->dtype, n, d);
  return AIT_OK;
}
