/* Small helpers of the nn family: dtype conversion to and from float32 /
 * float64 working buffers, output allocation, dtype checks. */
#include <stdlib.h>
#include <string.h>

#include "ops/nn_impl.h"

float *nn_load_f32(const ait_tensor *t) {
  int64_t n = ait_tensor_numel(t);
  float *v = malloc((size_t)(n ? n : 1) * sizeof *v);
  if (!v) {
    ait_err(AIT_E_NOMEM, "out of memory for %lld float32 values", (long long)n);
    return NULL;
  }
  if (t->dtype == AIT_FLOAT32) {
    if (n) memcpy(v, t->data, (size_t)n * sizeof *v);
  } else if (t->dtype == AIT_FLOAT16) {
    const uint16_t *h = t->data;
    for (int64_t i = 0; i < n; i++)
      v[i] = ait_f16_to_f32(h[i]);
  } else if (t->dtype == AIT_BFLOAT16) {
    const uint16_t *h = t->data;
    for (int64_t i = 0; i < n; i++)
      v[i] = ait_bf16_to_f32(h[i]);
  } else {
    const ait_dtype_traits *tr = ait_dtype_traits_of(t->dtype);
    for (int64_t i = 0; i < n; i++)
      v[i] = tr ? (float)ait_load_f64(tr, t->data, i) : 0.0f;
  }
  return v;
}

double *nn_load_f64(const ait_tensor *t) {
  int64_t n = ait_tensor_numel(t);
  double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
  if (!v) {
    ait_err(AIT_E_NOMEM, "out of memory for %lld float64 values", (long long)n);
    return NULL;
  }
  if (t->dtype == AIT_FLOAT64) {
    if (n) memcpy(v, t->data, (size_t)n * sizeof *v);
  } else if (t->dtype == AIT_FLOAT32) {
    const float *f = t->data;
    for (int64_t i = 0; i < n; i++)
      v[i] = f[i];
  } else {
    const ait_dtype_traits *tr = ait_dtype_traits_of(t->dtype);
    for (int64_t i = 0; i < n; i++)
      v[i] = tr ? ait_load_f64(tr, t->data, i) : 0.0;
  }
  return v;
}

void nn_store_f32(ait_tensor *t, const float *v) {
  int64_t n = ait_tensor_numel(t);
  if (t->dtype == AIT_FLOAT32) {
    if (n) memcpy(t->data, v, (size_t)n * sizeof *v);
  } else if (t->dtype == AIT_FLOAT16) {
    uint16_t *h = t->data;
    for (int64_t i = 0; i < n; i++)
      h[i] = ait_f32_to_f16(v[i]);
  } else if (t->dtype == AIT_BFLOAT16) {
    uint16_t *h = t->data;
    for (int64_t i = 0; i < n; i++)
      h[i] = ait_f32_to_bf16(v[i]);
  } else {
    const ait_dtype_traits *tr = ait_dtype_traits_of(t->dtype);
    for (int64_t i = 0; tr && i < n; i++)
      ait_store_f64(tr, t->data, i, v[i]);
  }
}

void nn_store_f64(ait_tensor *t, const double *v) {
  int64_t n = ait_tensor_numel(t);
  if (t->dtype == AIT_FLOAT64) {
    if (n) memcpy(t->data, v, (size_t)n * sizeof *v);
  } else if (t->dtype == AIT_FLOAT32) {
    float *f = t->data;
    for (int64_t i = 0; i < n; i++)
      f[i] = (float)v[i];
  } else {
    const ait_dtype_traits *tr = ait_dtype_traits_of(t->dtype);
    for (int64_t i = 0; tr && i < n; i++)
      ait_store_f64(tr, t->data, i, v[i]);
  }
}

ait_status nn_f32_in(const ait_tensor *t, const float **v, float **owned) {
  *owned = NULL;
  if (t->dtype == AIT_FLOAT32) {
    *v = t->data;
    return AIT_OK;
  }
  *owned = nn_load_f32(t);
  *v = *owned;
  return *owned ? AIT_OK : AIT_E_NOMEM;
}

ait_status nn_f32_out(ait_tensor *t, float **v, float **owned) {
  *owned = NULL;
  if (t->dtype == AIT_FLOAT32) {
    *v = t->data;
    return AIT_OK;
  }
  int64_t n = ait_tensor_numel(t);
  *owned = calloc((size_t)(n ? n : 1), sizeof(float));
  *v = *owned;
  if (!*owned) return ait_err(AIT_E_NOMEM, "out of memory for %lld float32 values", (long long)n);
  return AIT_OK;
}

void nn_f32_done(ait_tensor *t, float *owned) {
  if (!owned) return;
  nn_store_f32(t, owned);
  free(owned);
}

ait_status nn_new(ait_tensor **out, ait_dtype dt, int rank, const int64_t *dims) {
  *out = ait_tensor_new(dt, rank, dims);
  return *out ? AIT_OK : AIT_E_NOMEM;
}

ait_status nn_check_float(const ait_tensor *t, const char *what) {
  if (!(AIT_DT_FLOATS & AIT_DT_BIT(t->dtype)))
    return ait_err(AIT_E_DTYPE, "%s must be a float tensor, got %s", what,
                   ait_dtype_name(t->dtype));
  return AIT_OK;
}

ait_status nn_check_same_dtype(const ait_tensor *a, const ait_tensor *b, const char *what) {
  if (a->dtype != b->dtype)
    return ait_err(AIT_E_DTYPE, "%s has dtype %s, expected %s", what, ait_dtype_name(b->dtype),
                   ait_dtype_name(a->dtype));
  return AIT_OK;
}
