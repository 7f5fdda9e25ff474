/* Sequence operators: SequenceEmpty, SequenceConstruct, SequenceInsert,
 * SequenceAt, SequenceErase, SequenceLength, SplitToSequence,
 * ConcatFromSequence.
 *
 * A sequence is an ait_tensor of kind AIT_KIND_SEQUENCE owning its items;
 * every kernel here builds a new sequence of deep copies, so inputs are never
 * shared with outputs. */
#include <stdlib.h>
#include <string.h>

#include "ir/shape.h"
#include "ops/misc_impl.h"

/* ---- helpers ------------------------------------------------------------ */

static ait_status need_sequence(const ait_tensor *s, const char *what) {
  if (!s) return ait_err(AIT_E_INVALID_ARG, "input '%s' is missing", what);
  if (s->kind != AIT_KIND_SEQUENCE)
    return ait_err(AIT_E_INVALID_ARG, "input '%s' must be a sequence, got a %s", what,
                   s->kind == AIT_KIND_NONE ? "empty optional" : "tensor");
  return AIT_OK;
}

static ait_status need_tensor(const ait_tensor *t, const char *what) {
  if (!t) return ait_err(AIT_E_INVALID_ARG, "input '%s' is missing", what);
  if (t->kind != AIT_KIND_TENSOR)
    return ait_err(AIT_E_INVALID_ARG, "input '%s' must be a tensor, got a %s", what,
                   t->kind == AIT_KIND_NONE ? "empty optional" : "sequence");
  return AIT_OK;
}

/* Read the scalar position tensor `pos` for a sequence of n items. The
 * accepted range is [-n, n-1], or [-n, n] when `insert` (a position one past
 * the end appends). */
static ait_status read_position(const ait_tensor *pos, int n, bool insert, int *out) {
  AIT_TRY(need_tensor(pos, "position"));
  if (pos->dtype != AIT_INT32 && pos->dtype != AIT_INT64)
    return ait_err(AIT_E_DTYPE, "position must be int32 or int64, got %s",
                   ait_dtype_name(pos->dtype));
  if (ait_tensor_numel(pos) != 1)
    return ait_err(AIT_E_SHAPE, "position must be a scalar, got %lld elements",
                   (long long)ait_tensor_numel(pos));
  int64_t p = ait_scalar_i64(pos);
  int64_t hi = insert ? n : n - 1;
  if (p < -(int64_t)n || p > hi)
    return ait_err(AIT_E_INVALID_ARG,
                   "position %lld is out of range [%d, %lld] for a sequence of %d", (long long)p,
                   -n, (long long)hi, n);
  *out = (int)(p < 0 ? p + n : p);
  return AIT_OK;
}

/* Copy cnt elements from src (starting at element soff) into dst (at doff).
 * Strings are duplicated so that dst owns its own copies. */
static ait_status copy_elems(ait_tensor *dst, int64_t doff, const ait_tensor *src, int64_t soff,
                             int64_t cnt) {
  if (cnt <= 0) return AIT_OK;
  if (src->dtype == AIT_STRING) {
    char *const *s = (char *const *)src->data + soff;
    char **d = (char **)dst->data + doff;
    for (int64_t i = 0; i < cnt; i++) {
      d[i] = strdup(s[i] ? s[i] : "");
      if (!d[i]) return ait_err(AIT_E_NOMEM, "out of memory copying strings");
    }
    return AIT_OK;
  }
  size_t es = ait_elem_size(src->dtype);
  memcpy((char *)dst->data + (size_t)doff * es, (const char *)src->data + (size_t)soff * es,
         (size_t)cnt * es);
  return AIT_OK;
}

/* Append a deep copy of t to seq. */
static ait_status push_clone(ait_tensor *seq, const ait_tensor *t) {
  ait_tensor *c = ait_tensor_clone(t);
  if (!c) return AIT_E_NOMEM; /* the clone set the message */
  return ait_sequence_push(seq, c);
}

/* New sequence of element dtype dt in *out holding copies of items [0, n) of
 * src except item `skip` (-1 keeps all). */
static ait_status copy_sequence(const ait_tensor *src, int skip, ait_tensor **out) {
  ait_tensor *s = ait_sequence_new(src->dtype);
  if (!s) return AIT_E_NOMEM;
  for (int i = 0; i < src->n_items; i++) {
    if (i == skip) continue;
    ait_status st = push_clone(s, src->items[i]);
    if (st != AIT_OK) {
      ait_tensor_free(s);
      return st;
    }
  }
  *out = s;
  return AIT_OK;
}

/* ---- kernels ------------------------------------------------------------ */

AIT_MISC_KERNEL(ait_k_sequence_empty) {
  ait_dtype dt = (ait_dtype)ait_attr_int(node, "dtype", AIT_FLOAT32);
  if (!ait_dtype_traits_of(dt) && dt != AIT_STRING)
    return ait_err(AIT_E_UNSUPPORTED, "SequenceEmpty dtype %d is not supported", (int)dt);
  out[0] = ait_sequence_new(dt);
  return out[0] ? AIT_OK : AIT_E_NOMEM;
}

AIT_MISC_KERNEL(ait_k_sequence_construct) {
  if (n_in < 1) return ait_err(AIT_E_INVALID_ARG, "SequenceConstruct needs at least one input");
  for (int i = 0; i < n_in; i++) {
    AIT_TRY(need_tensor(in[i], "inputs"));
    if (in[i]->dtype != in[0]->dtype)
      return ait_err(AIT_E_DTYPE, "input %d is %s but input 0 is %s", i,
                     ait_dtype_name(in[i]->dtype), ait_dtype_name(in[0]->dtype));
  }
  ait_tensor *s = ait_sequence_new(in[0]->dtype);
  if (!s) return AIT_E_NOMEM;
  out[0] = s; /* freed by the executor on failure */
  for (int i = 0; i < n_in; i++)
    AIT_TRY(push_clone(s, in[i]));
  return AIT_OK;
}

AIT_MISC_KERNEL(ait_k_sequence_insert) {
  AIT_TRY(need_sequence(in[0], "input_sequence"));
  AIT_TRY(need_tensor(n_in > 1 ? in[1] : NULL, "tensor"));
  const ait_tensor *seq = in[0], *t = in[1];
  /* an empty sequence of unknown element type adopts the tensor's */
  bool untyped = seq->n_items == 0 && seq->dtype == AIT_UNDEFINED;
  if (!untyped && t->dtype != seq->dtype)
    return ait_err(AIT_E_DTYPE, "cannot insert a %s tensor into a sequence of %s",
                   ait_dtype_name(t->dtype), ait_dtype_name(seq->dtype));
  int at = seq->n_items;
  if (n_in > 2 && in[2]) AIT_TRY(read_position(in[2], seq->n_items, true, &at));

  ait_tensor *s = ait_sequence_new(t->dtype);
  if (!s) return AIT_E_NOMEM;
  out[0] = s;
  for (int i = 0; i <= seq->n_items; i++) {
    if (i == at) AIT_TRY(push_clone(s, t));
    if (i < seq->n_items) AIT_TRY(push_clone(s, seq->items[i]));
  }
  return AIT_OK;
}

AIT_MISC_KERNEL(ait_k_sequence_at) {
  AIT_TRY(need_sequence(in[0], "input_sequence"));
  int at = 0;
  AIT_TRY(read_position(n_in > 1 ? in[1] : NULL, in[0]->n_items, false, &at));
  out[0] = ait_tensor_clone(in[0]->items[at]);
  return out[0] ? AIT_OK : AIT_E_NOMEM;
}

AIT_MISC_KERNEL(ait_k_sequence_erase) {
  AIT_TRY(need_sequence(in[0], "input_sequence"));
  int n = in[0]->n_items, at = n - 1;
  if (n_in > 1 && in[1]) AIT_TRY(read_position(in[1], n, false, &at));
  if (n == 0) return ait_err(AIT_E_INVALID_ARG, "cannot erase from an empty sequence");
  return copy_sequence(in[0], at, &out[0]);
}

AIT_MISC_KERNEL(ait_k_sequence_length) {
  AIT_TRY(need_sequence(in[0], "input_sequence"));
  ait_tensor *t = ait_tensor_new(AIT_INT64, 0, NULL);
  if (!t) return AIT_E_NOMEM;
  *(int64_t *)t->data = in[0]->n_items;
  out[0] = t;
  return AIT_OK;
}

/* Chunk lengths of SplitToSequence along an axis of size dim. *lens is
 * malloc'ed (at least one slot); *n its count. */
static ait_status split_lengths(const ait_tensor *split, int64_t dim, int64_t **lens, int *n) {
  int64_t cnt = 0;
  if (!split) {
    cnt = dim;
  } else {
    AIT_TRY(need_tensor(split, "split"));
    if (split->dtype != AIT_INT32 && split->dtype != AIT_INT64)
      return ait_err(AIT_E_DTYPE, "split must be int32 or int64, got %s",
                     ait_dtype_name(split->dtype));
    if (split->rank > 1) return ait_err(AIT_E_SHAPE, "split must be a scalar or 1-D");
    if (split->rank == 0) {
      int64_t len = ait_scalar_i64(split);
      if (len <= 0)
        return ait_err(AIT_E_INVALID_ARG, "scalar split must be positive, got %lld",
                       (long long)len);
      cnt = (dim + len - 1) / len;
    } else {
      cnt = split->dims[0];
    }
  }
  if (cnt > (1 << 24)) return ait_err(AIT_E_INVALID_ARG, "too many chunks (%lld)", (long long)cnt);
  int64_t *l = malloc((size_t)(cnt ? cnt : 1) * sizeof *l);
  if (!l) return ait_err(AIT_E_NOMEM, "out of memory");
  const ait_dtype_traits *tr = split ? ait_dtype_traits_of(split->dtype) : NULL;
  int64_t sum = 0;
  for (int64_t i = 0; i < cnt; i++) {
    if (!split) {
      l[i] = 1;
    } else if (split->rank == 0) {
      int64_t len = ait_scalar_i64(split);
      l[i] = dim - sum < len ? dim - sum : len;
    } else {
      l[i] = ait_load_i64(tr, split->data, i);
      if (l[i] < 0) {
        int64_t bad = l[i];
        free(l);
        return ait_err(AIT_E_INVALID_ARG, "split[%lld] = %lld is negative", (long long)i,
                       (long long)bad);
      }
    }
    sum += l[i];
  }
  if (sum != dim) {
    free(l);
    return ait_err(AIT_E_INVALID_ARG, "split lengths sum to %lld but the axis has %lld",
                   (long long)sum, (long long)dim);
  }
  *lens = l;
  *n = (int)cnt;
  return AIT_OK;
}

AIT_MISC_KERNEL(ait_k_split_to_sequence) {
  AIT_TRY(need_tensor(in[0], "input"));
  const ait_tensor *x = in[0];
  const ait_tensor *split = n_in > 1 ? in[1] : NULL;
  int axis;
  AIT_TRY(ait_norm_axis(ait_attr_int(node, "axis", 0), x->rank, &axis));
  if (x->rank == 0) return ait_err(AIT_E_SHAPE, "SplitToSequence needs an input of rank >= 1");
  bool keepdims = ait_attr_int(node, "keepdims", 1) != 0;
  int64_t dim = x->dims[axis], outer = 1, inner = 1;
  for (int i = 0; i < axis; i++)
    outer *= x->dims[i];
  for (int i = axis + 1; i < x->rank; i++)
    inner *= x->dims[i];

  int64_t *lens = NULL;
  int n = 0;
  AIT_TRY(split_lengths(split, dim, &lens, &n));
  ait_status st = AIT_OK;
  ait_tensor *s = ait_sequence_new(x->dtype);
  if (!s) st = AIT_E_NOMEM;
  int64_t pos = 0;
  for (int c = 0; st == AIT_OK && c < n; c++) {
    int64_t dims[AIT_MAX_RANK];
    memcpy(dims, x->dims, sizeof dims);
    dims[axis] = lens[c];
    int rank = x->rank;
    if (!split && !keepdims) { /* drop the split axis (each chunk has length 1) */
      memmove(dims + axis, dims + axis + 1, (size_t)(rank - axis - 1) * sizeof *dims);
      rank--;
    }
    ait_tensor *t = ait_tensor_new(x->dtype, rank, dims);
    if (!t) {
      st = AIT_E_NOMEM;
      break;
    }
    int64_t blk = lens[c] * inner;
    for (int64_t o = 0; st == AIT_OK && o < outer; o++)
      st = copy_elems(t, o * blk, x, (o * dim + pos) * inner, blk);
    pos += lens[c];
    if (st != AIT_OK)
      ait_tensor_free(t);
    else
      st = ait_sequence_push(s, t);
  }
  free(lens);
  if (st != AIT_OK) {
    ait_tensor_free(s);
    return st;
  }
  out[0] = s;
  return AIT_OK;
}

AIT_MISC_KERNEL(ait_k_concat_from_sequence) {
  AIT_TRY(need_sequence(in[0], "input_sequence"));
  const ait_tensor *seq = in[0];
  if (!ait_node_attr(node, "axis"))
    return ait_err(AIT_E_INVALID_ARG, "ConcatFromSequence needs the 'axis' attribute");
  bool new_axis = ait_attr_int(node, "new_axis", 0) != 0;
  if (seq->n_items == 0) return ait_err(AIT_E_INVALID_ARG, "cannot concatenate an empty sequence");
  const ait_tensor *t0 = seq->items[0];
  int r = t0->rank, axis;
  if (new_axis && r + 1 > AIT_MAX_RANK)
    return ait_err(AIT_E_UNSUPPORTED, "result rank %d exceeds %d", r + 1, AIT_MAX_RANK);
  AIT_TRY(ait_norm_axis(ait_attr_int(node, "axis", 0), new_axis ? r + 1 : r, &axis));
  if (!new_axis && r == 0)
    return ait_err(AIT_E_SHAPE, "cannot concatenate scalars without new_axis");

  /* Each item is viewed as [outer, len_i, inner]: len_i is its size along the
   * axis (1 for a new axis). */
  int64_t outer = 1, inner = 1, total = 0;
  for (int i = 0; i < axis; i++)
    outer *= t0->dims[i];
  for (int i = new_axis ? axis : axis + 1; i < r; i++)
    inner *= t0->dims[i];
  for (int k = 0; k < seq->n_items; k++) {
    const ait_tensor *t = seq->items[k];
    if (t->dtype != t0->dtype || t->rank != r)
      return ait_err(AIT_E_SHAPE,
                     "sequence item %d (%s, rank %d) differs from item 0 (%s, rank %d)", k,
                     ait_dtype_name(t->dtype), t->rank, ait_dtype_name(t0->dtype), r);
    for (int i = 0; i < r; i++)
      if (t->dims[i] != t0->dims[i] && (new_axis || i != axis)) {
        char a[128], b[128];
        return ait_err(AIT_E_SHAPE, "sequence item %d has shape %s, item 0 has %s", k,
                       ait_shape_str(r, t->dims, a, sizeof a),
                       ait_shape_str(r, t0->dims, b, sizeof b));
      }
    total += new_axis ? 1 : t->dims[axis];
  }
  int64_t dims[AIT_MAX_RANK];
  int ro = new_axis ? r + 1 : r;
  for (int i = 0; i < ro; i++) {
    if (i < axis || (i > axis && !new_axis))
      dims[i] = t0->dims[i];
    else if (i > axis)
      dims[i] = t0->dims[i - 1];
    else
      dims[i] = total;
  }
  ait_tensor *y = ait_tensor_new(t0->dtype, ro, dims);
  if (!y) return AIT_E_NOMEM;
  out[0] = y;
  int64_t off = 0;
  for (int64_t o = 0; o < outer; o++)
    for (int k = 0; k < seq->n_items; k++) {
      const ait_tensor *t = seq->items[k];
      int64_t blk = (new_axis ? 1 : t->dims[axis]) * inner;
      AIT_TRY(copy_elems(y, off, t, o * blk, blk));
      off += blk;
    }
  return AIT_OK;
}

/* ---- shape functions ----------------------------------------------------- */

static void set_sequence_out(ait_graph *g, const ait_node *node, int i, ait_dtype dt) {
  ait_value *v = ait_node_out(g, node, i);
  if (!v) return;
  ait_set_out(g, node, i, dt, -1, NULL);
  v->type = AIT_VT_SEQUENCE;
}

AIT_MISC_SHAPE(ait_s_sequence_empty) {
  set_sequence_out(g, node, 0, (ait_dtype)ait_attr_int(node, "dtype", AIT_FLOAT32));
  return AIT_OK;
}

AIT_MISC_SHAPE(ait_s_sequence_of_in0) {
  ait_value *x = ait_node_in(g, node, 0);
  set_sequence_out(g, node, 0, x ? x->dtype : AIT_UNDEFINED);
  return AIT_OK;
}

AIT_MISC_SHAPE(ait_s_sequence_at) {
  ait_value *x = ait_node_in(g, node, 0);
  ait_set_out(g, node, 0, x ? x->dtype : AIT_UNDEFINED, -1, NULL);
  return AIT_OK;
}

AIT_MISC_SHAPE(ait_s_sequence_length) {
  ait_set_out(g, node, 0, AIT_INT64, 0, NULL);
  return AIT_OK;
}

AIT_MISC_SHAPE(ait_s_concat_from_sequence) {
  ait_value *x = ait_node_in(g, node, 0);
  ait_set_out(g, node, 0, x ? x->dtype : AIT_UNDEFINED, -1, NULL);
  return AIT_OK;
}
