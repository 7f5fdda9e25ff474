/* Device objects of the cuda backend: the stream, library handles and the
 * shared workspace; weights uploaded once per (value, format); host type
 * conversions; the cache of chosen algorithms; error reporting. */
#ifdef AIT_HAVE_CUDA

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_debug.h"
#include "backends/cuda/cuda_impl.h"

/* ---- errors --------------------------------------------------------------- */

ait_status cu_check(cudaError_t e, const char *what) {
  if (e == cudaSuccess) return AIT_OK;
  cudaGetLastError(); /* clear a non-sticky error so later calls do not see it */
  return ait_err(AIT_E_RUNTIME, "cuda: %s: %s (%s)", what, cudaGetErrorString(e),
                 cudaGetErrorName(e));
}

ait_status cu_check_lt(cublasStatus_t e, const char *what) {
  if (e == CUBLAS_STATUS_SUCCESS) return AIT_OK;
  return ait_err(AIT_E_RUNTIME, "cuda: %s: cuBLASLt %s (%s)", what, cublasLtGetStatusString(e),
                 cublasLtGetStatusName(e));
}

ait_status cu_check_dnn(cudnnStatus_t e, const char *what) {
  if (e == CUDNN_STATUS_SUCCESS) return AIT_OK;
  return ait_err(AIT_E_RUNTIME, "cuda: %s: cuDNN %s", what, cudnnGetErrorString(e));
}

/* ---- device objects ------------------------------------------------------- */

ait_status cu_state_open(cu_state *s) {
  if (s->dry) return AIT_OK;
  AIT_TRY(cu_check(cudaSetDevice(s->o.device), "selecting the device"));
  if (s->open) return AIT_OK;
  struct cudaDeviceProp prop;
  AIT_TRY(cu_check(cudaGetDeviceProperties(&prop, s->o.device), "reading device properties"));
  snprintf(s->device_name, sizeof s->device_name, "%s", prop.name);
  s->sm = prop.major * 10 + prop.minor;
  s->n_sm = prop.multiProcessorCount;
  s->open = true; /* from here on cu_state_close undoes whatever was made */
  AIT_TRY(
      cu_check(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking), "creating a stream"));
  if (s->o.ws_bytes > 0)
    AIT_TRY(cu_check(cudaMalloc(&s->ws, (size_t)s->o.ws_bytes), "allocating the workspace"));
  AIT_TRY(cu_check(cudaMalloc((void **)&s->d_err, sizeof(int) * 4), "allocating the error flag"));
  AIT_TRY(cu_check(cudaEventCreate(&s->ev[0]), "creating an event"));
  AIT_TRY(cu_check(cudaEventCreate(&s->ev[1]), "creating an event"));
  for (int i = 0; i < 3; i++)
    AIT_TRY(cu_check(cudaEventCreate(&s->run_ev[i]), "creating an event"));
  return AIT_OK;
}

/* The library handles are made on first use: a model without convolutions
 * never loads cuDNN's engines (seconds, on a cold start). */
ait_status cu_need_lt(cu_state *s) {
  if (s->lt) return AIT_OK;
  return cu_check_lt(cublasLtCreate(&s->lt), "creating the cuBLASLt handle");
}

ait_status cu_need_dnn(cu_state *s) {
  if (s->dnn) return AIT_OK;
  AIT_TRY(cu_check_dnn(cudnnCreate(&s->dnn), "creating the cuDNN handle"));
  return cu_check_dnn(cudnnSetStream(s->dnn, s->stream), "setting the cuDNN stream");
}

void cu_state_close(cu_state *s) {
  if (s->dry) {
    for (int i = 0; i < s->n_plans; i++)
      cu_plan_free(s->plans[i]);
    s->n_plans = 0;
    free(s->w);
    s->w = NULL;
    s->n_w = s->cap_w = 0;
    return;
  }
  if (!s->open) return;
  cudaSetDevice(s->o.device);
  if (s->stream) cudaStreamSynchronize(s->stream);
  for (int i = 0; i < s->n_plans; i++)
    cu_plan_free(s->plans[i]);
  s->n_plans = 0;
  cu_weights_free(s);
  if (s->ws) cudaFree(s->ws);
  if (s->d_err) cudaFree(s->d_err);
  if (s->ev[0]) cudaEventDestroy(s->ev[0]);
  if (s->ev[1]) cudaEventDestroy(s->ev[1]);
  for (int i = 0; i < 3; i++) {
    if (s->run_ev[i]) cudaEventDestroy(s->run_ev[i]);
    s->run_ev[i] = NULL;
  }
  if (s->dnn) cudnnDestroy(s->dnn);
  if (s->lt) cublasLtDestroy(s->lt);
  if (s->stream) cudaStreamDestroy(s->stream);
  s->ws = NULL;
  s->d_err = NULL;
  s->ev[0] = s->ev[1] = NULL;
  s->dnn = NULL;
  s->lt = NULL;
  s->stream = NULL;
  s->open = false;
  cudaGetLastError();
}

/* ---- host conversions ------------------------------------------------------ */

void cu_f32_to_store(ait_dtype dt, const float *src, void *dst, int64_t n) {
  if (dt == AIT_FLOAT32) {
    memcpy(dst, src, sizeof(float) * (size_t)n);
    return;
  }
  uint16_t *d = dst;
  float lim = dt == AIT_FLOAT16 ? 65504.0f : 3.38953139e38f;
  for (int64_t i = 0; i < n; i++) {
    float v = src[i];
    if (isfinite(v)) v = v > lim ? lim : v < -lim ? -lim : v;
    d[i] = dt == AIT_FLOAT16 ? ait_f32_to_f16(v) : ait_f32_to_bf16(v);
  }
}

static bool is_float_type(ait_dtype dt) {
  return dt == AIT_FLOAT32 || dt == AIT_FLOAT16 || dt == AIT_BFLOAT16 || dt == AIT_FLOAT64;
}

ait_status cu_host_convert(ait_dtype from, const void *src, ait_dtype to, void *dst, int64_t n) {
  const ait_dtype_traits *tf = ait_dtype_traits_of(from), *tt = ait_dtype_traits_of(to);
  if (!tf || !tt || from == AIT_STRING || to == AIT_STRING)
    return ait_err(AIT_E_DTYPE, "cuda: cannot convert %s to %s", ait_dtype_name(from),
                   ait_dtype_name(to));
  if (from == to) {
    memcpy(dst, src, (size_t)n * tf->size);
    return AIT_OK;
  }
  if (from == AIT_FLOAT32 && (to == AIT_FLOAT16 || to == AIT_BFLOAT16)) {
    cu_f32_to_store(to, src, dst, n);
    return AIT_OK;
  }
  if (is_float_type(to) && is_float_type(from)) {
    float *tmp = malloc(sizeof(float) * (size_t)(n + 1));
    if (!tmp) return ait_err(AIT_E_NOMEM, "cuda: out of memory converting");
    for (int64_t i = 0; i < n; i++)
      tmp[i] = (float)ait_load_f64(tf, src, i);
    if (to == AIT_FLOAT32)
      memcpy(dst, tmp, sizeof(float) * (size_t)n);
    else if (to == AIT_FLOAT16 || to == AIT_BFLOAT16)
      cu_f32_to_store(to, tmp, dst, n);
    else
      for (int64_t i = 0; i < n; i++)
        ait_store_f64(tt, dst, i, tmp[i]);
    free(tmp);
    return AIT_OK;
  }
  for (int64_t i = 0; i < n; i++) {
    if (is_float_type(from) || is_float_type(to))
      ait_store_f64(tt, dst, i, ait_load_f64(tf, src, i));
    else
      ait_store_i64(tt, dst, i, ait_load_i64(tf, src, i));
  }
  return AIT_OK;
}

/* ---- weights ------------------------------------------------------------- */

void cu_weights_free(cu_state *s) {
  for (int i = 0; !s->dry && i < s->n_w; i++)
    cudaFree(s->w[i].ptr);
  free(s->w);
  s->w = NULL;
  s->n_w = s->cap_w = 0;
}

/* e4m3 image of a 2-D GEMM weight: [N, K] bytes, padding, the float32 scale. */
static ait_status e4m3_image(const ait_tensor *t, cu_wfmt fmt, void **out, int64_t *bytes) {
  if (t->rank != 2) return ait_err(AIT_E_SHAPE, "cuda: an fp8 GEMM weight needs rank 2");
  int64_t n = ait_tensor_numel(t), off = cu_e4m3_scale_offset(n);
  *bytes = off + 16;
  float *f = malloc(sizeof(float) * (size_t)(n + 1));
  uint8_t *img = calloc(1, (size_t)*bytes);
  ait_status st = f && img ? cu_host_convert(t->dtype, t->data, AIT_FLOAT32, f, n)
                           : ait_err(AIT_E_NOMEM, "cuda: out of memory preparing weights");
  if (!st) {
    float scale = ait_cuda_e4m3_weight(f, t->dims[0], t->dims[1], fmt == CU_W_E4M3_KN, img);
    memcpy(img + off, &scale, sizeof scale);
  }
  free(f);
  if (st) {
    free(img);
    return st;
  }
  *out = img;
  return AIT_OK;
}

/* The host bytes of constant t in format fmt (new buffer, *bytes its size). */
static ait_status weight_image(const cu_state *s, const ait_tensor *t, cu_wfmt fmt, void **out,
                               int64_t *bytes) {
  if (fmt == CU_W_E4M3_KN || fmt == CU_W_E4M3_NK) return e4m3_image(t, fmt, out, bytes);
  if (fmt == CU_W_E4M3_CH_KN || fmt == CU_W_E4M3_CH_NK) /* state weights only: cu_weight_get */
    return ait_err(AIT_E_INTERNAL, "cuda: an fp8wo weight image of a plan constant");
  int64_t n = ait_tensor_numel(t);
  ait_dtype dt = fmt == CU_W_F32 ? AIT_FLOAT32 : cu_store_type(s, t->dtype);
  *bytes = n * (int64_t)ait_elem_size(dt);
  void *img = malloc((size_t)*bytes + 16);
  if (!img) return ait_err(AIT_E_NOMEM, "cuda: out of memory preparing weights");
  ait_status st = cu_host_convert(t->dtype, t->data, dt, img, n);
  if (!st && fmt == CU_W_KRSC) {
    if (t->rank < 3 || t->rank > 5) {
      st = ait_err(AIT_E_SHAPE, "cuda: a channels-last filter needs rank 3 to 5, got %d", t->rank);
    } else { /* [K, C, spatial...] as [K, spatial..., C] */
      int64_t K = t->dims[0], C = t->dims[1], RS = ait_shape_numel(t->rank - 2, t->dims + 2);
      size_t es = ait_elem_size(dt);
      char *tr = malloc((size_t)*bytes + 16);
      if (!tr) st = ait_err(AIT_E_NOMEM, "cuda: out of memory preparing weights");
      for (int64_t k = 0; tr && k < K; k++)
        for (int64_t c = 0; c < C; c++)
          for (int64_t r = 0; r < RS; r++)
            memcpy(tr + (size_t)(((k * RS) + r) * C + c) * es,
                   (char *)img + (size_t)(((k * C) + c) * RS + r) * es, es);
      if (tr) {
        free(img);
        img = tr;
      }
    }
  }
  if (st) {
    free(img);
    return st;
  }
  *out = img;
  return AIT_OK;
}

ait_status cu_weight_get(cu_state *s, int v, cu_wfmt fmt, void **ptr) {
  for (int i = 0; i < s->n_w; i++)
    if (s->w[i].value == v && s->w[i].fmt == fmt) {
      *ptr = s->w[i].ptr;
      return AIT_OK;
    }
  if (v < 0 || v >= s->g->n_values || !nat_is_const(s->g, v))
    return ait_err(AIT_E_INTERNAL, "cuda: value %d is not a weight", v);
  if (s->n_w == s->cap_w) {
    int cap = s->cap_w ? s->cap_w * 2 : 64;
    cu_weight *more = realloc(s->w, sizeof *more * (size_t)cap);
    if (!more) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
    s->w = more;
    s->cap_w = cap;
  }
  void *img = NULL, *dev = NULL;
  int64_t bytes = 0;
  AIT_TRY(fmt == CU_W_E4M3_CH_KN || fmt == CU_W_E4M3_CH_NK
              ? cu_fp8wo_image(s, v, fmt == CU_W_E4M3_CH_NK, &img, &bytes)
              : weight_image(s, s->g->values[v].init, fmt, &img, &bytes));
  if (s->dry) { /* a distinct fake address per weight */
    free(img);
    dev = (void *)(uintptr_t)(((uint64_t)s->n_w + 1) << 32);
    s->w[s->n_w++] = (cu_weight){v, fmt, dev, bytes};
    *ptr = dev;
    return AIT_OK;
  }
  ait_status st =
      cu_check(cudaMalloc(&dev, (size_t)(bytes > 0 ? bytes : 16)), "allocating weights");
  if (!st && bytes > 0)
    st = cu_check(cudaMemcpyAsync(dev, img, (size_t)bytes, cudaMemcpyHostToDevice, s->stream),
                  "uploading weights");
  free(img);
  if (st) {
    if (dev) cudaFree(dev);
    return ait_err_prefix(st, "weight '%s'", s->g->values[v].name);
  }
  s->w[s->n_w++] = (cu_weight){v, fmt, dev, bytes};
  *ptr = dev;
  return AIT_OK;
}

ait_status cu_const_weight(cu_planner *pl, int v, cu_wfmt fmt, void **ptr) {
  if (nat_is_const(pl->s->g, v)) return cu_weight_get(pl->s, v, fmt, ptr);
  const ait_value *val = &pl->g->values[v];
  if (!val->init || val->init->kind != AIT_KIND_TENSOR)
    return ait_err(AIT_E_UNSUPPORTED, "cuda: '%s' is not a constant", val->name);
  cu_plan *p = pl->p;
  if (p->n_extra == p->cap_extra) {
    int cap = p->cap_extra ? p->cap_extra * 2 : 16;
    void **more = realloc(p->extra, sizeof *more * (size_t)cap);
    if (!more) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
    p->extra = more;
    p->cap_extra = cap;
  }
  void *img = NULL, *dev = NULL;
  int64_t bytes = 0;
  AIT_TRY(weight_image(pl->s, val->init, fmt, &img, &bytes));
  if (pl->s->dry) {
    free(img);
    *ptr = (void *)(uintptr_t)0x7f0000000000ull;
    return AIT_OK;
  }
  ait_status st =
      cu_check(cudaMalloc(&dev, (size_t)(bytes > 0 ? bytes : 16)), "allocating constants");
  if (!st && bytes > 0)
    st = cu_check(cudaMemcpyAsync(dev, img, (size_t)bytes, cudaMemcpyHostToDevice, pl->s->stream),
                  "uploading constants");
  free(img);
  if (st) {
    if (dev) cudaFree(dev);
    return st;
  }
  p->extra[p->n_extra++] = dev;
  *ptr = dev;
  return AIT_OK;
}

/* ---- algorithms --------------------------------------------------------------- */

const cu_algo *cu_algo_find(const cu_state *s, const char *key) {
  for (int i = 0; i < s->n_algos; i++)
    if (!strcmp(s->algos[i].key, key)) return &s->algos[i];
  return NULL;
}

ait_status cu_algo_put(cu_state *s, const cu_algo *a) {
  for (int i = 0; i < s->n_algos; i++)
    if (!strcmp(s->algos[i].key, a->key)) {
      s->algos[i] = *a;
      return AIT_OK;
    }
  if (s->n_algos == s->cap_algos) {
    int cap = s->cap_algos ? s->cap_algos * 2 : 32;
    cu_algo *more = realloc(s->algos, sizeof *more * (size_t)cap);
    if (!more) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
    s->algos = more;
    s->cap_algos = cap;
  }
  s->algos[s->n_algos++] = *a;
  return AIT_OK;
}

#endif
