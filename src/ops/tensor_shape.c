/* Shape-only ops and constant generators of the 'tensor' family: Reshape,
 * Shape, Size, Flatten, Squeeze, Unsqueeze, Identity, Dropout,
 * ConstantOfShape, EyeLike, Range. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/tensor_impl.h"

/* A copy of x with a new shape of the same element count. */
static ait_status reshaped_copy(const ait_tensor *x, int rank, const int64_t *dims,
                                ait_tensor **out) {
  if (ait_shape_numel(rank, dims) != ait_tensor_numel(x)) {
    char a[160], b[160];
    return ait_err(AIT_E_SHAPE, "cannot reshape %s into %s",
                   ait_shape_str(x->rank, x->dims, a, sizeof a),
                   ait_shape_str(rank, dims, b, sizeof b));
  }
  ait_tensor *t = ait_tensor_clone(x);
  if (!t) return ait_err(AIT_E_NOMEM, "out of memory copying a tensor");
  t->rank = rank;
  if (rank) memcpy(t->dims, dims, (size_t)rank * sizeof *dims);
  *out = t;
  return AIT_OK;
}

/* ---- Reshape ----------------------------------------------------------- */

/* Output dims of Reshape from the requested shape (0 = copy, -1 = infer). */
static ait_status reshape_dims(const ait_tensor *x, const int64_t *shape, int n, bool allowzero,
                               int64_t *dims) {
  int infer = -1;
  int64_t known = 1;
  for (int k = 0; k < n; k++) {
    int64_t d = shape[k];
    if (d == 0 && !allowzero) {
      if (k >= x->rank)
        return ait_err(AIT_E_SHAPE, "Reshape shape[%d] = 0 copies a dim the rank-%d input lacks", k,
                       x->rank);
      d = x->dims[k];
    } else if (d == -1) {
      if (infer >= 0) return ait_err(AIT_E_SHAPE, "Reshape shape has more than one -1");
      infer = k;
      d = 1;
    } else if (d < 0 || d > ((int64_t)1 << 40)) {
      return ait_err(AIT_E_SHAPE, "Reshape shape[%d] = %lld is invalid", k, (long long)d);
    }
    if (d && known > ((int64_t)1 << 40) / d)
      return ait_err(AIT_E_SHAPE, "Reshape shape has too many elements");
    dims[k] = d;
    known *= d;
  }
  if (infer >= 0) {
    int64_t total = ait_tensor_numel(x);
    if (known == 0 || total % known)
      return ait_err(AIT_E_SHAPE, "Reshape cannot infer the -1 dim: %lld elements over %lld",
                     (long long)total, (long long)known);
    dims[infer] = total / known;
  }
  return AIT_OK;
}

TN_KERNEL(tn_reshape) {
  int64_t shape[AIT_MAX_RANK], dims[AIT_MAX_RANK];
  int n = 0;
  if (node->opset < 5) {
    const int64_t *a = ait_attr_ints(node, "shape", &n);
    if (n > AIT_MAX_RANK) return ait_err(AIT_E_UNSUPPORTED, "Reshape to rank %d", n);
    if (n) memcpy(shape, a, (size_t)n * sizeof *a);
  } else {
    const ait_tensor *s = tn_in(in, n_in, 1);
    if (!s) return ait_err(AIT_E_INVALID_ARG, "Reshape needs the shape input");
    AIT_TRY(tn_read_ints(s, "Reshape shape", shape, AIT_MAX_RANK, &n));
  }
  bool allowzero = ait_attr_int(node, "allowzero", 0) != 0;
  AIT_TRY(reshape_dims(in[0], shape, n, allowzero, dims));
  return reshaped_copy(in[0], n, dims, &out[0]);
}

TN_SHAPE(tn_reshape_shape) {
  ait_value *x = ait_node_in(g, node, 0);
  int64_t shape[AIT_MAX_RANK];
  int n = 0;
  bool have;
  if (node->opset < 5) {
    const int64_t *a = ait_attr_ints(node, "shape", &n);
    have = a && n <= AIT_MAX_RANK;
    if (have && n) memcpy(shape, a, (size_t)n * sizeof *a);
  } else {
    have = tn_const_ints(g, node, 1, shape, AIT_MAX_RANK, &n);
  }
  ait_dtype dt = x ? x->dtype : AIT_UNDEFINED;
  if (!have) {
    ait_value *s = ait_node_in(g, node, 1);
    int rank = (s && s->rank == 1 && s->dims[0].v >= 0 && s->dims[0].v <= AIT_MAX_RANK)
                   ? (int)s->dims[0].v
                   : -1;
    ait_dim d[AIT_MAX_RANK];
    for (int k = 0; k < rank; k++)
      d[k] = (ait_dim){-1, NULL};
    ait_set_out(g, node, 0, dt, rank, rank >= 0 ? d : NULL);
    return AIT_OK;
  }
  bool allowzero = ait_attr_int(node, "allowzero", 0) != 0;
  ait_dim d[AIT_MAX_RANK];
  int infer = -1;
  int64_t known = 1, total = 1;
  bool total_known = x && x->rank >= 0;
  for (int k = 0; total_known && k < x->rank; k++) {
    if (x->dims[k].v < 0)
      total_known = false;
    else
      total *= x->dims[k].v;
  }
  for (int k = 0; k < n; k++) {
    d[k] = (ait_dim){shape[k], NULL};
    if (shape[k] == 0 && !allowzero) {
      if (x && x->rank > k)
        d[k] = x->dims[k];
      else
        d[k].v = -1;
    } else if (shape[k] == -1) {
      infer = k;
      d[k].v = 1;
    } else if (shape[k] < -1) {
      return ait_err(AIT_E_SHAPE, "Reshape shape[%d] = %lld is invalid", k, (long long)shape[k]);
    }
    const int64_t lim = (int64_t)1 << 40;
    if (d[k].v < 0 || d[k].v > lim || (d[k].v && known > lim / d[k].v))
      known = -1;
    else if (known >= 0)
      known *= d[k].v;
  }
  if (infer >= 0) {
    d[infer].v = (total_known && known > 0 && total % known == 0) ? total / known : -1;
  }
  ait_set_out(g, node, 0, dt, n, d);
  return AIT_OK;
}

/* ---- Shape, Size ------------------------------------------------------ */

static void shape_range(const ait_node *node, int rank, int *start, int *end) {
  int64_t s = ait_attr_int(node, "start", 0), e = ait_attr_int(node, "end", rank);
  if (s < 0) s += rank;
  if (e < 0) e += rank;
  s = s < 0 ? 0 : s > rank ? rank : s;
  e = e < 0 ? 0 : e > rank ? rank : e;
  *start = (int)s;
  *end = (int)(e < s ? s : e);
}

TN_KERNEL(tn_shape) {
  int s = 0, e = 0;
  shape_range(node, in[0]->rank, &s, &e);
  int64_t n = e - s;
  AIT_TRY(tn_new(AIT_INT64, 1, &n, &out[0]));
  for (int k = s; k < e; k++)
    ((int64_t *)out[0]->data)[k - s] = in[0]->dims[k];
  return AIT_OK;
}

TN_SHAPE(tn_shape_shape) {
  ait_value *x = ait_node_in(g, node, 0);
  if (!x || x->rank < 0) {
    ait_dim d = {-1, NULL};
    ait_set_out(g, node, 0, AIT_INT64, 1, &d);
    return AIT_OK;
  }
  int s = 0, e = 0;
  shape_range(node, x->rank, &s, &e);
  int64_t n = e - s;
  tn_set_out_dims(g, node, 0, AIT_INT64, 1, &n);
  return AIT_OK;
}

TN_KERNEL(tn_size) {
  AIT_TRY(tn_new(AIT_INT64, 0, NULL, &out[0]));
  *(int64_t *)out[0]->data = ait_tensor_numel(in[0]);
  return AIT_OK;
}

TN_SHAPE(tn_size_shape) {
  ait_set_out(g, node, 0, AIT_INT64, 0, NULL);
  return AIT_OK;
}

/* ---- Flatten ---------------------------------------------------------- */

static ait_status flatten_axis(const ait_node *node, int rank, int *axis) {
  int64_t a = ait_attr_int(node, "axis", 1);
  if (a < 0) a += rank;
  if (a < 0 || a > rank)
    return ait_err(AIT_E_INVALID_ARG, "Flatten axis %lld is out of range for rank %d",
                   (long long)ait_attr_int(node, "axis", 1), rank);
  *axis = (int)a;
  return AIT_OK;
}

TN_KERNEL(tn_flatten) {
  int axis = 0;
  AIT_TRY(flatten_axis(node, in[0]->rank, &axis));
  int64_t dims[2] = {ait_shape_numel(axis, in[0]->dims),
                     ait_shape_numel(in[0]->rank - axis, in[0]->dims + axis)};
  return reshaped_copy(in[0], 2, dims, &out[0]);
}

TN_SHAPE(tn_flatten_shape) {
  ait_value *x = ait_node_in(g, node, 0);
  int64_t dims[AIT_MAX_RANK], d[2] = {1, 1};
  if (!tn_value_dims(x, dims)) {
    tn_set_out_dims(g, node, 0, x ? x->dtype : AIT_UNDEFINED, 2, (int64_t[]){-1, -1});
    return AIT_OK;
  }
  int axis = 0;
  AIT_TRY(flatten_axis(node, x->rank, &axis));
  for (int k = 0; k < x->rank; k++) {
    int64_t *p = &d[k < axis ? 0 : 1];
    *p = (*p < 0 || dims[k] < 0) ? -1 : *p * dims[k];
  }
  tn_set_out_dims(g, node, 0, x->dtype, 2, d);
  return AIT_OK;
}

/* ---- Squeeze, Unsqueeze ----------------------------------------------- */

/* Axes from the attribute (opset < 13) or input 1; *have = false when none. */
static ait_status axes_of(const ait_node *node, const ait_tensor *const *in, int n_in,
                          int64_t *axes, int *n, bool *have) {
  *n = 0;
  *have = false;
  if (node->opset < 13) {
    const ait_attr *a = ait_node_attr(node, "axes");
    if (!a) return AIT_OK;
    if (a->n > AIT_MAX_RANK) return ait_err(AIT_E_INVALID_ARG, "too many axes (%d)", a->n);
    if (a->n) memcpy(axes, a->ints, (size_t)a->n * sizeof *axes);
    *n = a->n;
    *have = true;
    return AIT_OK;
  }
  const ait_tensor *t = tn_in(in, n_in, 1);
  if (!t) return AIT_OK;
  *have = true;
  return tn_read_ints(t, "axes", axes, AIT_MAX_RANK, n);
}

/* Normalizes axes into [0, rank) and marks them in flags; rejects repeats. */
static ait_status mark_axes(const int64_t *axes, int n, int rank, bool *flags) {
  memset(flags, 0, (size_t)AIT_MAX_RANK * sizeof *flags);
  for (int k = 0; k < n; k++) {
    int a;
    AIT_TRY(ait_norm_axis(axes[k], rank, &a));
    if (a >= rank) return ait_err(AIT_E_INVALID_ARG, "axis %lld out of range", (long long)axes[k]);
    if (flags[a]) return ait_err(AIT_E_INVALID_ARG, "axis %lld is repeated", (long long)axes[k]);
    flags[a] = true;
  }
  return AIT_OK;
}

TN_KERNEL(tn_squeeze) {
  const ait_tensor *x = in[0];
  int64_t axes[AIT_MAX_RANK], dims[AIT_MAX_RANK];
  int n, r = 0;
  bool have, flags[AIT_MAX_RANK];
  AIT_TRY(axes_of(node, in, n_in, axes, &n, &have));
  if (have && n > 0) {
    if (x->rank == 0) return ait_err(AIT_E_INVALID_ARG, "Squeeze axes given for a scalar");
    AIT_TRY(mark_axes(axes, n, x->rank, flags));
  } else {
    for (int k = 0; k < x->rank; k++)
      flags[k] = x->dims[k] == 1;
  }
  for (int k = 0; k < x->rank; k++) {
    if (!flags[k])
      dims[r++] = x->dims[k];
    else if (x->dims[k] != 1)
      return ait_err(AIT_E_SHAPE, "Squeeze axis %d has size %lld, not 1", k, (long long)x->dims[k]);
  }
  return reshaped_copy(x, r, dims, &out[0]);
}

/* Constant axes for a shape function. */
static bool const_axes(ait_graph *g, const ait_node *node, int64_t *axes, int *n, bool *have) {
  *n = 0;
  *have = false;
  if (node->opset < 13) {
    const ait_attr *a = ait_node_attr(node, "axes");
    if (!a) return true;
    if (a->n > AIT_MAX_RANK) return false;
    if (a->n) memcpy(axes, a->ints, (size_t)a->n * sizeof *axes);
    *n = a->n;
    *have = true;
    return true;
  }
  if (node->n_in < 2 || node->in[1] < 0) return true;
  *have = true;
  return tn_const_ints(g, node, 1, axes, AIT_MAX_RANK, n);
}

TN_SHAPE(tn_squeeze_shape) {
  ait_value *x = ait_node_in(g, node, 0);
  ait_dtype dt = x ? x->dtype : AIT_UNDEFINED;
  int64_t axes[AIT_MAX_RANK];
  int n, r = 0;
  bool have, flags[AIT_MAX_RANK];
  if (!x || x->rank < 0 || !const_axes(g, node, axes, &n, &have)) {
    ait_set_out(g, node, 0, dt, -1, NULL);
    return AIT_OK;
  }
  if (have && n > 0) {
    if (mark_axes(axes, n, x->rank, flags) != AIT_OK) return AIT_E_INVALID_ARG;
  } else {
    for (int k = 0; k < x->rank; k++) {
      if (x->dims[k].v < 0) { /* unknown whether it squeezes */
        ait_set_out(g, node, 0, dt, -1, NULL);
        return AIT_OK;
      }
      flags[k] = x->dims[k].v == 1;
    }
  }
  ait_dim d[AIT_MAX_RANK];
  for (int k = 0; k < x->rank; k++)
    if (!flags[k]) d[r++] = x->dims[k];
  ait_set_out(g, node, 0, dt, r, d);
  return AIT_OK;
}

TN_KERNEL(tn_unsqueeze) {
  const ait_tensor *x = in[0];
  int64_t axes[AIT_MAX_RANK], dims[AIT_MAX_RANK];
  int n;
  bool have, flags[AIT_MAX_RANK];
  AIT_TRY(axes_of(node, in, n_in, axes, &n, &have));
  if (!have) return ait_err(AIT_E_INVALID_ARG, "Unsqueeze needs axes");
  int r = x->rank + n;
  if (r > AIT_MAX_RANK) return ait_err(AIT_E_UNSUPPORTED, "Unsqueeze to rank %d", r);
  AIT_TRY(mark_axes(axes, n, r, flags));
  for (int k = 0, j = 0; k < r; k++)
    dims[k] = flags[k] ? 1 : x->dims[j++];
  return reshaped_copy(x, r, dims, &out[0]);
}

TN_SHAPE(tn_unsqueeze_shape) {
  ait_value *x = ait_node_in(g, node, 0);
  ait_dtype dt = x ? x->dtype : AIT_UNDEFINED;
  int64_t axes[AIT_MAX_RANK];
  int n;
  bool have, flags[AIT_MAX_RANK];
  if (!x || x->rank < 0 || !const_axes(g, node, axes, &n, &have) || !have ||
      x->rank + n > AIT_MAX_RANK) {
    ait_value *a = node->opset >= 13 ? ait_node_in(g, node, 1) : NULL;
    int r = -1; /* the rank may still be known from the axes' length */
    if (x && x->rank >= 0 && a && a->rank == 1 && a->dims[0].v >= 0 &&
        x->rank + a->dims[0].v <= AIT_MAX_RANK)
      r = x->rank + (int)a->dims[0].v;
    tn_set_out_dims(g, node, 0, dt, r, NULL);
    return AIT_OK;
  }
  int r = x->rank + n;
  if (mark_axes(axes, n, r, flags) != AIT_OK) return AIT_E_INVALID_ARG;
  ait_dim d[AIT_MAX_RANK];
  for (int k = 0, j = 0; k < r; k++)
    d[k] = flags[k] ? (ait_dim){1, NULL} : x->dims[j++];
  ait_set_out(g, node, 0, dt, r, d);
  return AIT_OK;
}

/* ---- Identity, Dropout ------------------------------------------------ */

TN_KERNEL(tn_identity) {
  out[0] = ait_tensor_clone(in[0]);
  if (!out[0]) return ait_err(AIT_E_NOMEM, "out of memory copying the Identity input");
  return AIT_OK;
}

TN_SHAPE(tn_identity_shape) {
  ait_value *x = ait_node_in(g, node, 0);
  if (!x) return AIT_OK;
  ait_set_out(g, node, 0, x->dtype, x->rank, x->rank >= 0 ? x->dims : NULL);
  return AIT_OK;
}

/* BitCast-26: the same bits as dtype `to` (same bit width; sub-byte types
 * are held one per byte, so their codes are masked and re-extended). */
static ait_status bitcast_target(const ait_node *node, ait_dtype from, ait_dtype *to) {
  int64_t t = ait_attr_int(node, "to", 0);
  if (t <= 0 || t > AIT_DTYPE_LAST || t == AIT_STRING || !ait_dtype_size((ait_dtype)t) ||
      from == AIT_STRING)
    return ait_err(AIT_E_UNSUPPORTED, "BitCast from %s to dtype %lld is not supported",
                   ait_dtype_name(from), (long long)t);
  if (ait_dtype_file_bits(from) != ait_dtype_file_bits((ait_dtype)t))
    return ait_err(AIT_E_DTYPE, "BitCast from %s (%d bits) to %s (%d bits): widths differ",
                   ait_dtype_name(from), ait_dtype_file_bits(from), ait_dtype_name((ait_dtype)t),
                   ait_dtype_file_bits((ait_dtype)t));
  *to = (ait_dtype)t;
  return AIT_OK;
}

TN_KERNEL(tn_bitcast) {
  const ait_tensor *x = in[0];
  ait_dtype to = AIT_UNDEFINED;
  AIT_TRY(bitcast_target(node, x->dtype, &to));
  AIT_TRY(tn_new(to, x->rank, x->dims, &out[0]));
  int bits = ait_dtype_file_bits(to);
  int64_t n = ait_tensor_numel(x);
  if (bits >= 8) {
    if (n) memcpy(out[0]->data, x->data, ait_tensor_nbytes(x));
    return AIT_OK;
  }
  unsigned mask = (1u << bits) - 1u, top = 1u << (bits - 1);
  bool sext = to == AIT_INT4 || to == AIT_INT2;
  for (int64_t i = 0; i < n; i++) {
    unsigned c = ((const uint8_t *)x->data)[i] & mask;
    ((uint8_t *)out[0]->data)[i] = (uint8_t)(sext && (c & top) ? c | ~mask : c);
  }
  return AIT_OK;
}

TN_SHAPE(tn_bitcast_shape) {
  ait_value *x = ait_node_in(g, node, 0);
  if (!x) return AIT_OK;
  ait_dtype to = AIT_UNDEFINED;
  if (x->dtype != AIT_UNDEFINED) AIT_TRY(bitcast_target(node, x->dtype, &to));
  ait_set_out(g, node, 0, to, x->rank, x->rank >= 0 ? x->dims : NULL);
  return AIT_OK;
}

/* MT19937 seeded like numpy's legacy np.random.seed(seed), drawing doubles
 * like RandomState.uniform(0, 1): training-mode Dropout then draws the same
 * mask as the ONNX reference for the same seed. */
typedef struct mt19937 {
  uint32_t s[624];
  int i;
} mt19937;

static void mt_seed(mt19937 *m, uint32_t seed) {
  m->s[0] = seed;
  for (int i = 1; i < 624; i++)
    m->s[i] = 1812433253u * (m->s[i - 1] ^ (m->s[i - 1] >> 30)) + (uint32_t)i;
  m->i = 624;
}

static uint32_t mt_next(mt19937 *m) {
  if (m->i >= 624) {
    for (int k = 0; k < 624; k++) {
      uint32_t y = (m->s[k] & 0x80000000u) | (m->s[(k + 1) % 624] & 0x7fffffffu);
      m->s[k] = m->s[(k + 397) % 624] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
    }
    m->i = 0;
  }
  uint32_t y = m->s[m->i++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  return y ^ (y >> 18);
}

static double mt_double(mt19937 *m) {
  uint32_t a = mt_next(m) >> 5, b = mt_next(m) >> 6;
  return (a * 67108864.0 + b) / 9007199254740992.0;
}

TN_KERNEL(tn_dropout) {
  const ait_tensor *x = in[0];
  double ratio = ait_attr_float(node, "ratio", 0.5f);
  bool training = false;
  if (node->opset >= 12) {
    const ait_tensor *r = tn_in(in, n_in, 1), *t = tn_in(in, n_in, 2);
    ratio = r ? ait_scalar_f64(r) : 0.5;
    training = t && ait_scalar_i64(t) != 0;
  }
  const ait_dtype_traits *tr = ait_dtype_traits_of(x->dtype);
  if (!tr || !tr->is_float)
    return ait_err(AIT_E_DTYPE, "Dropout needs a float input, got %s", ait_dtype_name(x->dtype));
  if (training && (ratio < 0 || ratio >= 1))
    return ait_err(AIT_E_INVALID_ARG, "Dropout ratio %g is outside [0, 1)", ratio);
  bool drop = training && ratio > 0;
  bool want_mask = n_out > 1 && node->out[1] >= 0;
  ait_dtype mdt = node->opset >= 10 ? AIT_BOOL : x->dtype;
  out[0] = ait_tensor_clone(x);
  if (!out[0]) return ait_err(AIT_E_NOMEM, "out of memory in Dropout");
  if (want_mask) AIT_TRY(tn_new(mdt, x->rank, x->dims, &out[1]));
  const ait_dtype_traits *mtr = ait_dtype_traits_of(mdt);
  mt19937 *rng = NULL;
  if (drop) {
    rng = malloc(sizeof *rng);
    if (!rng) return ait_err(AIT_E_NOMEM, "out of memory in Dropout");
    mt_seed(rng, (uint32_t)ait_attr_int(node, "seed", 0));
  }
  double scale = drop ? 1.0 / (1.0 - ratio) : 1.0;
  int64_t n = ait_tensor_numel(x);
  for (int64_t i = 0; i < n; i++) {
    bool keep = true;
    if (drop) {
      keep = mt_double(rng) >= ratio;
      ait_store_f64(tr, out[0]->data, i, keep ? ait_load_f64(tr, x->data, i) * scale : 0.0);
    }
    if (want_mask) ait_store_f64(mtr, out[1]->data, i, keep ? 1.0 : 0.0);
  }
  free(rng);
  return AIT_OK;
}

TN_SHAPE(tn_dropout_shape) {
  ait_value *x = ait_node_in(g, node, 0);
  if (!x) return AIT_OK;
  const ait_dim *d = x->rank >= 0 ? x->dims : NULL;
  ait_set_out(g, node, 0, x->dtype, x->rank, d);
  if (node->n_out > 1 && node->out[1] >= 0)
    ait_set_out(g, node, 1, node->opset >= 10 ? AIT_BOOL : x->dtype, x->rank, d);
  return AIT_OK;
}

/* ---- ConstantOfShape, EyeLike, Range ---------------------------------- */

TN_KERNEL(tn_constant_of_shape) {
  int64_t dims[AIT_MAX_RANK];
  int n;
  AIT_TRY(tn_read_ints(in[0], "ConstantOfShape shape", dims, AIT_MAX_RANK, &n));
  for (int k = 0; k < n; k++)
    if (dims[k] < 0)
      return ait_err(AIT_E_SHAPE, "ConstantOfShape dim %d is negative (%lld)", k,
                     (long long)dims[k]);
  const ait_tensor *v = ait_attr_tensor(node, "value");
  if (v && ait_tensor_numel(v) != 1)
    return ait_err(AIT_E_INVALID_ARG, "ConstantOfShape value must hold one element, has %lld",
                   (long long)ait_tensor_numel(v));
  ait_dtype dt = v ? v->dtype : AIT_FLOAT32;
  AIT_TRY(tn_new(dt, n, dims, &out[0]));
  if (!v) return AIT_OK;
  size_t esz = ait_elem_size(dt);
  char *o = out[0]->data;
  int64_t total = ait_tensor_numel(out[0]);
  for (int64_t i = 0; i < total; i++)
    memcpy(o + (size_t)i * esz, v->data, esz);
  return tn_finish(out[0], AIT_OK);
}

TN_SHAPE(tn_constant_of_shape_shape) {
  const ait_tensor *v = ait_attr_tensor(node, "value");
  ait_dtype dt = v ? v->dtype : AIT_FLOAT32;
  int64_t dims[AIT_MAX_RANK];
  int n;
  if (tn_const_ints(g, node, 0, dims, AIT_MAX_RANK, &n)) {
    tn_set_out_dims(g, node, 0, dt, n, dims);
    return AIT_OK;
  }
  ait_value *s = ait_node_in(g, node, 0);
  int rank = (s && s->rank == 1 && s->dims[0].v >= 0 && s->dims[0].v <= AIT_MAX_RANK)
                 ? (int)s->dims[0].v
                 : -1;
  for (int k = 0; k < rank; k++)
    dims[k] = -1;
  tn_set_out_dims(g, node, 0, dt, rank, dims);
  return AIT_OK;
}

static ait_dtype eye_dtype(const ait_node *node, ait_dtype in_dt) {
  const ait_attr *a = ait_node_attr(node, "dtype");
  return a ? (ait_dtype)a->i : in_dt;
}

TN_KERNEL(tn_eye_like) {
  const ait_tensor *x = in[0];
  if (x->rank != 2) return ait_err(AIT_E_SHAPE, "EyeLike needs a 2-D input, got rank %d", x->rank);
  ait_dtype dt = eye_dtype(node, x->dtype);
  const ait_dtype_traits *tr = ait_dtype_traits_of(dt);
  if (!tr) return ait_err(AIT_E_DTYPE, "EyeLike cannot make a %s tensor", ait_dtype_name(dt));
  int64_t k = ait_attr_int(node, "k", 0);
  if (k > x->dims[1] || k < -x->dims[0]) k = x->dims[1]; /* no diagonal; avoids overflow */
  AIT_TRY(tn_new(dt, 2, x->dims, &out[0]));
  for (int64_t i = 0; i < x->dims[0]; i++) {
    int64_t j = i + k;
    if (j >= 0 && j < x->dims[1]) ait_store_f64(tr, out[0]->data, i * x->dims[1] + j, 1.0);
  }
  return AIT_OK;
}

TN_SHAPE(tn_eye_like_shape) {
  ait_value *x = ait_node_in(g, node, 0);
  if (!x) return AIT_OK;
  ait_set_out(g, node, 0, eye_dtype(node, x->dtype), x->rank, x->rank >= 0 ? x->dims : NULL);
  return AIT_OK;
}

TN_KERNEL(tn_range) {
  const ait_tensor *s = in[0], *l = tn_in(in, n_in, 1), *d = tn_in(in, n_in, 2);
  if (!l || !d) return ait_err(AIT_E_INVALID_ARG, "Range needs start, limit and delta");
  const ait_dtype_traits *tr = ait_dtype_traits_of(s->dtype);
  if (!tr || s->dtype == AIT_BOOL || l->dtype != s->dtype || d->dtype != s->dtype)
    return ait_err(AIT_E_DTYPE, "Range needs start, limit and delta of one numeric type");
  if (ait_tensor_numel(s) != 1 || ait_tensor_numel(l) != 1 || ait_tensor_numel(d) != 1)
    return ait_err(AIT_E_SHAPE, "Range start, limit and delta must be scalars");
  int64_t n;
  if (tr->is_float) {
    double a = ait_scalar_f64(s), b = ait_scalar_f64(l), st = ait_scalar_f64(d);
    if (st == 0 || !isfinite(a) || !isfinite(b) || !isfinite(st))
      return ait_err(AIT_E_INVALID_ARG, "Range needs finite values and a nonzero delta");
    double c = ceil((b - a) / st);
    if (c > (double)((int64_t)1 << 40))
      return ait_err(AIT_E_INVALID_ARG, "Range would produce %g elements", c);
    n = c > 0 ? (int64_t)c : 0;
    AIT_TRY(tn_new(s->dtype, 1, &n, &out[0]));
    for (int64_t i = 0; i < n; i++)
      ait_store_f64(tr, out[0]->data, i, a + (double)i * st);
  } else {
    int64_t a = ait_scalar_i64(s), b = ait_scalar_i64(l), st = ait_scalar_i64(d);
    if (st == 0) return ait_err(AIT_E_INVALID_ARG, "Range delta is 0");
    double c = ceil(((double)b - (double)a) / (double)st);
    if (c > (double)((int64_t)1 << 40))
      return ait_err(AIT_E_INVALID_ARG, "Range would produce %g elements", c);
    n = c > 0 ? (int64_t)c : 0;
    AIT_TRY(tn_new(s->dtype, 1, &n, &out[0]));
    for (int64_t i = 0; i < n; i++)
      ait_store_i64(tr, out[0]->data, i, (int64_t)((uint64_t)a + (uint64_t)i * (uint64_t)st));
  }
  return AIT_OK;
}

TN_SHAPE(tn_range_shape) {
  ait_value *s = ait_node_in(g, node, 0);
  tn_set_out_dims(g, node, 0, s ? s->dtype : AIT_UNDEFINED, 1, NULL);
  return AIT_OK;
}
