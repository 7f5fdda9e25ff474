#include <string.h>

#include "ops/op.h"

ait_status ait_norm_axis(int64_t axis, int rank, int *out) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= (rank ? rank : 1))
    return ait_err(AIT_E_INVALID_ARG, "axis %lld is out of range for rank %d", (long long)axis,
                   rank);
  *out = (int)a;
  return AIT_OK;
}

ait_status ait_read_ints(const ait_tensor *t, int64_t *vals, int max, int *n) {
  if (t->dtype != AIT_INT64 && t->dtype != AIT_INT32)
    return ait_err(AIT_E_DTYPE, "expected an int32/int64 tensor, got %s", ait_dtype_name(t->dtype));
  int64_t cnt = ait_tensor_numel(t);
  if (cnt > max)
    return ait_err(AIT_E_INVALID_ARG, "%lld values where at most %d fit", (long long)cnt, max);
  const ait_dtype_traits *tr = ait_dtype_traits_of(t->dtype);
  for (int64_t i = 0; i < cnt; i++)
    vals[i] = ait_load_i64(tr, t->data, i);
  *n = (int)cnt;
  return AIT_OK;
}

double ait_scalar_f64(const ait_tensor *t) {
  const ait_dtype_traits *tr = ait_dtype_traits_of(t->dtype);
  if (!tr || ait_tensor_numel(t) < 1) return 0.0;
  return ait_load_f64(tr, t->data, 0);
}

int64_t ait_scalar_i64(const ait_tensor *t) {
  const ait_dtype_traits *tr = ait_dtype_traits_of(t->dtype);
  if (!tr || ait_tensor_numel(t) < 1) return 0;
  return ait_load_i64(tr, t->data, 0);
}
