/* The broadcasting iterator of the elementwise family, operand shapes
 * (numpy and legacy opset < 7 broadcasting), shape functions and small
 * kernel helpers. */
#include <string.h>

#include "ir/shape.h"
#include "ops/elementwise_impl.h"

ait_status ait_ew_need(const ait_tensor *const *in, int n_in, int i, const char *what) {
  if (i >= n_in || !in[i]) return ait_err(AIT_E_INVALID_ARG, "missing input %d (%s)", i, what);
  if (in[i]->kind != AIT_KIND_TENSOR)
    return ait_err(AIT_E_INVALID_ARG, "input %d (%s) is not a tensor", i, what);
  return AIT_OK;
}

ait_status ait_ew_new_out(ait_dtype dt, const ait_ew_shape *s, ait_tensor **out) {
  *out = ait_tensor_new(dt, s->rank, s->dims);
  return *out ? AIT_OK : AIT_E_NOMEM; /* ait_tensor_new set the message */
}

ait_status ait_ew_broadcast_shape(int n, const ait_ew_shape *in, ait_ew_shape *out) {
  ait_ew_shape acc = {0, {0}};
  for (int k = 0; k < n; k++) {
    ait_ew_shape next;
    AIT_TRY(ait_shape_broadcast(acc.rank, acc.dims, in[k].rank, in[k].dims, &next.rank, next.dims));
    acc = next;
  }
  *out = acc;
  return AIT_OK;
}

void ait_ew_foreach(const ait_ew_shape *out, int n_in, const ait_ew_shape *in, ait_ew_row_fn fn,
                    void *ctx) {
  int64_t numel = ait_shape_numel(out->rank, out->dims);
  if (numel <= 0 || n_in > AIT_EW_MAX_OPS) return;
  int64_t full[AIT_EW_MAX_OPS][AIT_MAX_RANK];
  for (int k = 0; k < n_in; k++)
    ait_broadcast_strides(in[k].rank, in[k].dims, out->rank, out->dims, full[k]);

  /* Coalesce: drop size-1 dims, merge a dim into the previous one when every
   * operand steps through both as one contiguous (or all-broadcast) run. */
  int r = 0;
  int64_t dims[AIT_MAX_RANK], st[AIT_EW_MAX_OPS][AIT_MAX_RANK];
  for (int i = 0; i < out->rank; i++) {
    if (out->dims[i] == 1) continue;
    bool merge = r > 0;
    for (int k = 0; k < n_in && merge; k++)
      merge = st[k][r - 1] == full[k][i] * out->dims[i];
    if (merge) {
      dims[r - 1] *= out->dims[i];
      for (int k = 0; k < n_in; k++)
        st[k][r - 1] = full[k][i];
    } else {
      dims[r] = out->dims[i];
      for (int k = 0; k < n_in; k++)
        st[k][r] = full[k][i];
      r++;
    }
  }
  if (r == 0) { /* a single element */
    dims[0] = 1;
    for (int k = 0; k < n_in; k++)
      st[k][0] = 0;
    r = 1;
  }

  int64_t n = dims[r - 1], rows = numel / n;
  int64_t idx[AIT_MAX_RANK] = {0}, off[AIT_EW_MAX_OPS] = {0}, step[AIT_EW_MAX_OPS];
  for (int k = 0; k < n_in; k++)
    step[k] = st[k][r - 1];
  for (int64_t row = 0, o = 0; row < rows; row++, o += n) {
    fn(ctx, n, o, off, step);
    for (int d = r - 2; d >= 0; d--) { /* odometer over the outer dims */
      for (int k = 0; k < n_in; k++)
        off[k] += st[k][d];
      if (++idx[d] < dims[d]) break;
      for (int k = 0; k < n_in; k++)
        off[k] -= st[k][d] * dims[d];
      idx[d] = 0;
    }
  }
}

/* Legacy (opset < 7) binary broadcasting: the output has A's shape; with
 * broadcast=1, B's dims line up with A's starting at `axis` (default: B is a
 * suffix of A), each equal to A's or 1; with broadcast=0 shapes are equal. */
static ait_status legacy_shapes(const ait_node *node, const ait_tensor *a, const ait_tensor *b,
                                ait_ew_shape s[2], ait_ew_shape *out) {
  char sa[128], sb[128];
  s[0] = ait_ew_shape_of(a);
  *out = s[0];
  if (!ait_attr_int(node, "broadcast", 0)) {
    if (a->rank != b->rank || memcmp(a->dims, b->dims, (size_t)a->rank * sizeof a->dims[0]))
      return ait_err(AIT_E_SHAPE, "shapes %s and %s differ and broadcast=0 (opset %d)",
                     ait_shape_str(a->rank, a->dims, sa, sizeof sa),
                     ait_shape_str(b->rank, b->dims, sb, sizeof sb), node->opset);
    s[1] = s[0];
    return AIT_OK;
  }
  int64_t axis = ait_attr_int(node, "axis", a->rank - b->rank);
  if (axis < 0) axis += a->rank;
  if (b->rank > a->rank || axis < 0 || axis + b->rank > a->rank)
    return ait_err(AIT_E_SHAPE, "shape %s cannot broadcast into %s at axis %lld",
                   ait_shape_str(b->rank, b->dims, sb, sizeof sb),
                   ait_shape_str(a->rank, a->dims, sa, sizeof sa), (long long)axis);
  s[1].rank = a->rank;
  for (int i = 0; i < a->rank; i++) {
    int64_t d = i >= axis && i < axis + b->rank ? b->dims[i - axis] : 1;
    if (d != 1 && d != a->dims[i])
      return ait_err(AIT_E_SHAPE, "shape %s cannot broadcast into %s at axis %lld",
                     ait_shape_str(b->rank, b->dims, sb, sizeof sb),
                     ait_shape_str(a->rank, a->dims, sa, sizeof sa), (long long)axis);
    s[1].dims[i] = d;
  }
  return AIT_OK;
}

ait_status ait_ew_binary_shapes(const ait_node *node, const ait_tensor *a, const ait_tensor *b,
                                ait_ew_shape s[2], ait_ew_shape *out) {
  if (node->opset < 7) return legacy_shapes(node, a, b, s, out);
  s[0] = ait_ew_shape_of(a);
  s[1] = ait_ew_shape_of(b);
  return ait_ew_broadcast_shape(2, s, out);
}

/* ---- shape functions --------------------------------------------------- */

static ait_status binary_shape(ait_graph *g, const ait_node *n, bool to_bool) {
  if (n->opset >= 7) return to_bool ? ait_shape_compare_fn(g, n) : ait_shape_broadcast_fn(g, n);
  ait_value *a = ait_node_in(g, n, 0); /* legacy: the output has A's shape */
  if (a) ait_set_out(g, n, 0, to_bool ? AIT_BOOL : a->dtype, a->rank, a->dims);
  return AIT_OK;
}

ait_status ait_ew_shape_binary(ait_graph *g, const ait_node *n) {
  return binary_shape(g, n, false);
}
ait_status ait_ew_shape_compare(ait_graph *g, const ait_node *n) {
  return binary_shape(g, n, true);
}

ait_status ait_ew_shape_bool(ait_graph *g, const ait_node *n) {
  ait_value *a = ait_node_in(g, n, 0);
  if (a) ait_set_out(g, n, 0, AIT_BOOL, a->rank, a->dims);
  return AIT_OK;
}

ait_status ait_ew_shape_where(ait_graph *g, const ait_node *n) {
  AIT_TRY(ait_shape_broadcast_fn(g, n)); /* shape of all three, dtype fixed below */
  ait_value *x = ait_node_in(g, n, 1), *o = ait_node_out(g, n, 0);
  if (x && o) o->dtype = x->dtype;
  return AIT_OK;
}

ait_status ait_ew_shape_cast(ait_graph *g, const ait_node *n) {
  ait_dtype dt;
  AIT_TRY(ait_ew_cast_target(n, &dt));
  ait_value *a = ait_node_in(g, n, 0);
  if (a) ait_set_out(g, n, 0, dt, a->rank, a->dims);
  return AIT_OK;
}

ait_status ait_ew_shape_castlike(ait_graph *g, const ait_node *n) {
  ait_value *a = ait_node_in(g, n, 0), *like = ait_node_in(g, n, 1);
  if (a) ait_set_out(g, n, 0, like ? like->dtype : AIT_UNDEFINED, a->rank, a->dims);
  return AIT_OK;
}
