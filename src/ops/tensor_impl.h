/* Private to the 'tensor' operator family (data movement and shape ops).
 *
 * Most kernels here move elements without looking at them, so they work on
 * raw bytes of ait_elem_size() each. String tensors hold `char *` elements;
 * the kernels move the pointers like any other 8-byte element and then call
 * tn_finish(), which replaces every pointer of the output by its own copy
 * (strdup) on success, or clears the borrowed pointers on failure so that
 * freeing the output never frees input strings. */
#ifndef AIT_OPS_TENSOR_IMPL_H
#define AIT_OPS_TENSOR_IMPL_H

#include <stdbool.h>
#include <string.h>

#include "ir/shape.h"
#include "ops/op.h"

/* ---- helpers (tensor_common.c) ----------------------------------------- */

/* Input i, or NULL when absent (beyond n_in, NULL, or an optional without
 * a value). */
static inline const ait_tensor *tn_in(const ait_tensor *const *in, int n_in, int i) {
  if (i >= n_in || !in[i] || in[i]->kind == AIT_KIND_NONE) return NULL;
  return in[i];
}

/* Output tensor of dtype/shape, stored in *out; AIT_E_NOMEM etc. on failure. */
ait_status tn_new(ait_dtype dt, int rank, const int64_t *dims, ait_tensor **out);

/* Completes an output whose string elements are borrowed pointers: on
 * st == AIT_OK each element becomes an owned copy; otherwise the borrowed
 * pointers are cleared. Returns st (or AIT_E_NOMEM). NULL / non-string
 * tensors pass through. */
ait_status tn_finish(ait_tensor *t, ait_status st);

/* Copy `n` elements of size esz: dst[0..n) = src[0..n). */
static inline void tn_move(void *dst, const void *src, size_t esz, int64_t n) {
  if (n > 0) memcpy(dst, src, (size_t)n * esz);
}

/* Largest rank of a strided view (Tile views rank r as 2r). */
#define TN_MAX_VIEW (2 * AIT_MAX_RANK)

/* Gather-by-strides (rank <= TN_MAX_VIEW): writes the tensor of shape (rank, dims), row-major and
 * contiguous, into dst, reading element idx of it from
 * src[sum(idx[k] * strides[k])] (strides in elements, may be 0 or negative).
 * Contiguous runs are copied with memcpy. */
void tn_strided_copy(void *dst, const void *src, size_t esz, int rank, const int64_t *dims,
                     const int64_t *strides);

/* Transpose src (viewed with shape (rank, dims)) by perm into dst. */
void tn_transpose_raw(void *dst, const void *src, size_t esz, int rank, const int64_t *dims,
                      const int *perm);

/* Integer (int32/int64) tensor into vals (at most max); `what` names the
 * input in errors. */
ait_status tn_read_ints(const ait_tensor *t, const char *what, int64_t *vals, int max, int *n);

/* Element i of an int32/int64 index tensor. */
static inline int64_t tn_index_at(const ait_tensor *t, int64_t i) {
  if (t->dtype == AIT_INT32) return ((const int32_t *)t->data)[i];
  return ((const int64_t *)t->data)[i];
}
/* Checks that t is an int32/int64 index tensor. */
ait_status tn_check_index_dtype(const ait_tensor *t, const char *what);
/* Normalizes index v (negative counts from the end) into [0, dim);
 * AIT_E_INVALID_ARG naming `what` when out of range. */
ait_status tn_norm_index(int64_t v, int64_t dim, const char *what, int64_t *out);

/* Three-way compare of elements a and b of dtype dt (native order; NaN
 * sorts after every number and equals NaN; strings by strcmp). */
int tn_cmp_elem(ait_dtype dt, const void *a, const void *b);

/* Stable sort of idx[0..n) by cmp(ctx, a, b). AIT_E_NOMEM on failure. */
typedef int (*tn_cmp_fn)(const void *ctx, int64_t a, int64_t b);
ait_status tn_sort_idx(int64_t *idx, int64_t n, tn_cmp_fn cmp, const void *ctx);

/* Shape-function helpers. Constant integer input i of node (an initializer
 * or folded value), read into vals; false when absent or not constant. */
bool tn_const_ints(ait_graph *g, const ait_node *node, int i, int64_t *vals, int max, int *n);
/* Known-dims array of v as int64 (-1 unknown); false when rank unknown. */
bool tn_value_dims(const ait_value *v, int64_t *dims);
/* Set output i to (dt, rank, dims) with plain dims (-1 = unknown; dims NULL:
 * all unknown). */
void tn_set_out_dims(ait_graph *g, const ait_node *node, int i, ait_dtype dt, int rank,
                     const int64_t *dims);

/* ---- kernels and shape functions, by file ----------------------------- */

#define TN_KERNEL(name)                                                                            \
  ait_status name(ait_kctx *ctx, const ait_node *node, const ait_tensor *const *in, int n_in,      \
                  ait_tensor **out, int n_out)
#define TN_SHAPE(name) ait_status name(ait_graph *g, const ait_node *node)

/* tensor_shape.c */
TN_KERNEL(tn_reshape);
TN_KERNEL(tn_shape);
TN_KERNEL(tn_size);
TN_KERNEL(tn_flatten);
TN_KERNEL(tn_squeeze);
TN_KERNEL(tn_unsqueeze);
TN_KERNEL(tn_identity);
TN_KERNEL(tn_center_crop_pad);
TN_KERNEL(tn_tensor_scatter);
TN_KERNEL(tn_bitcast);
TN_KERNEL(tn_cumprod);
TN_KERNEL(tn_dropout);
TN_KERNEL(tn_constant_of_shape);
TN_KERNEL(tn_eye_like);
TN_KERNEL(tn_range);
TN_SHAPE(tn_reshape_shape);
TN_SHAPE(tn_shape_shape);
TN_SHAPE(tn_size_shape);
TN_SHAPE(tn_flatten_shape);
TN_SHAPE(tn_squeeze_shape);
TN_SHAPE(tn_unsqueeze_shape);
TN_SHAPE(tn_identity_shape);
TN_SHAPE(tn_bitcast_shape);
TN_SHAPE(tn_center_crop_pad_shape);
TN_SHAPE(tn_dropout_shape);
TN_SHAPE(tn_constant_of_shape_shape);
TN_SHAPE(tn_eye_like_shape);
TN_SHAPE(tn_range_shape);

/* tensor_move.c */
TN_KERNEL(tn_transpose);
TN_KERNEL(tn_concat);
TN_KERNEL(tn_split);
TN_KERNEL(tn_slice);
TN_KERNEL(tn_expand);
TN_KERNEL(tn_tile);
TN_SHAPE(tn_transpose_shape);
TN_SHAPE(tn_concat_shape);
TN_SHAPE(tn_split_shape);
TN_SHAPE(tn_slice_shape);
TN_SHAPE(tn_expand_shape);
TN_SHAPE(tn_tile_shape);

/* tensor_pad.c */
TN_KERNEL(tn_pad);
TN_KERNEL(tn_depth_to_space);
TN_KERNEL(tn_space_to_depth);
TN_KERNEL(tn_trilu);
TN_KERNEL(tn_reverse_sequence);
TN_SHAPE(tn_pad_shape);
TN_SHAPE(tn_depth_to_space_shape);
TN_SHAPE(tn_space_to_depth_shape);

/* tensor_gather.c */
TN_KERNEL(tn_gather);
TN_KERNEL(tn_gather_elements);
TN_KERNEL(tn_gather_nd);
TN_KERNEL(tn_scatter_elements);
TN_KERNEL(tn_scatter_nd);
TN_KERNEL(tn_onehot);
TN_KERNEL(tn_compress);
TN_KERNEL(tn_nonzero);
TN_SHAPE(tn_gather_shape);
TN_SHAPE(tn_gather_elements_shape);
TN_SHAPE(tn_gather_nd_shape);
TN_SHAPE(tn_onehot_shape);
TN_SHAPE(tn_nonzero_shape);
TN_SHAPE(tn_compress_shape);

/* tensor_sort.c */
TN_KERNEL(tn_unique);
TN_KERNEL(tn_topk);
TN_KERNEL(tn_cumsum);
TN_SHAPE(tn_unique_shape);
TN_SHAPE(tn_topk_shape);

#endif
