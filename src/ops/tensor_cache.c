/* TensorScatter-24 of the 'tensor' family: the KV-cache update. present is
 * past with update's rows written along `axis` (not 0) at write_indices[b]
 * (0 without it) for batch b, modulo the cache length in mode "circular";
 * in mode "linear" rows past the end are an error. */
#include <string.h>

#include "ops/tensor_impl.h"

TN_KERNEL(tn_tensor_scatter) {
  const ait_tensor *past = in[0], *up = tn_in(in, n_in, 1), *wi = tn_in(in, n_in, 2);
  if (!up) return ait_err(AIT_E_INVALID_ARG, "TensorScatter needs the update input");
  if (up->dtype != past->dtype || up->rank != past->rank)
    return ait_err(AIT_E_SHAPE, "update must have past_cache's dtype and rank");
  int axis;
  AIT_TRY(ait_norm_axis(ait_attr_int(node, "axis", -2), past->rank, &axis));
  if (axis == 0) return ait_err(AIT_E_INVALID_ARG, "TensorScatter's axis cannot be the batch axis");
  for (int k = 0; k < past->rank; k++)
    if (k != axis && up->dims[k] != past->dims[k])
      return ait_err(AIT_E_SHAPE, "update differs from past_cache in dim %d", k);
  const char *mode = ait_attr_str(node, "mode", "linear");
  bool circular = !strcmp(mode, "circular");
  if (!circular && strcmp(mode, "linear"))
    return ait_err(AIT_E_INVALID_ARG, "TensorScatter mode '%.40s': linear or circular", mode);
  int64_t B = past->dims[0], L = past->dims[axis], S = up->dims[axis];
  if (S > L)
    return ait_err(AIT_E_SHAPE, "update has %lld rows, the cache %lld", (long long)S, (long long)L);
  if (wi) {
    AIT_TRY(tn_check_index_dtype(wi, "write_indices"));
    if (ait_tensor_numel(wi) != B)
      return ait_err(AIT_E_SHAPE, "write_indices has %lld values for batch %lld",
                     (long long)ait_tensor_numel(wi), (long long)B);
  }
  AIT_TRY(tn_new(past->dtype, past->rank, past->dims, &out[0]));
  size_t esz = ait_elem_size(past->dtype);
  tn_move(out[0]->data, past->data, esz, ait_tensor_numel(past));
  int64_t outer = ait_shape_numel(axis, past->dims), per_b = B ? outer / B : 0;
  int64_t inner = ait_shape_numel(past->rank - axis - 1, past->dims + axis + 1);
  ait_status st = AIT_OK;
  for (int64_t o = 0; o < outer && !st; o++) {
    int64_t b = per_b ? o / per_b : 0, w = wi ? tn_index_at(wi, b) : 0;
    for (int64_t s = 0; s < S; s++) {
      int64_t at = w + s;
      if (circular) at = L ? ((at % L) + L) % L : 0;
      if (at < 0 || at >= L) {
        st = ait_err(AIT_E_INVALID_ARG, "write index %lld + %lld is outside the cache's %lld rows",
                     (long long)w, (long long)s, (long long)L);
        break;
      }
      tn_move((char *)out[0]->data + (size_t)((o * L + at) * inner) * esz,
              (const char *)up->data + (size_t)((o * S + s) * inner) * esz, esz, inner);
    }
  }
  return tn_finish(out[0], st);
}
