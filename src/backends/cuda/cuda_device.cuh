/* Device helpers shared by the cuda backend's kernels: typed loads and
 * stores through a runtime element type (uniform across a launch, so the
 * switch costs little next to memory traffic), block reductions and launch
 * sizes. Reduced-precision stores saturate finite values to the largest
 * finite number of the type, so masks such as -FLT_MAX stay finite. */
#ifndef AIT_BACKENDS_CUDA_DEVICE_CUH
#define AIT_BACKENDS_CUDA_DEVICE_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "backends/cuda/cuda_kernels.h"

#define CUK_BF16_MAX 3.38953139e38f
#define CUK_F16_MAX 65504.0f

__device__ __forceinline__ float cuk_ldf(const void *p, int dt, int64_t i) {
  switch (dt) {
  case CUK_F32: return ((const float *)p)[i];
  case CUK_F16: return __half2float(((const __half *)p)[i]);
  case CUK_BF16: return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
  case CUK_I64: return (float)((const long long *)p)[i];
  case CUK_I32: return (float)((const int *)p)[i];
  case CUK_I8: return (float)((const signed char *)p)[i];
  case CUK_U8: return (float)((const unsigned char *)p)[i];
  case CUK_BOOL: return ((const unsigned char *)p)[i] ? 1.0f : 0.0f;
  default: return 0.0f;
  }
}

__device__ __forceinline__ long long cuk_ldi(const void *p, int dt, int64_t i) {
  switch (dt) {
  case CUK_I64: return ((const long long *)p)[i];
  case CUK_I32: return ((const int *)p)[i];
  case CUK_I8: return ((const signed char *)p)[i];
  case CUK_U8: return ((const unsigned char *)p)[i];
  case CUK_BOOL: return ((const unsigned char *)p)[i] ? 1 : 0;
  default: return (long long)cuk_ldf(p, dt, i);
  }
}

__device__ __forceinline__ float cuk_sat(float v, float m) {
  return isnan(v) || isinf(v) ? v : fminf(fmaxf(v, -m), m);
}

__device__ __forceinline__ float cuk_to_f(__half v) { return __half2float(v); }
__device__ __forceinline__ float cuk_to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ __forceinline__ T cuk_from_f(float v);
template <> __device__ __forceinline__ __half cuk_from_f<__half>(float v) {
  return __float2half_rn(cuk_sat(v, CUK_F16_MAX));
}
template <> __device__ __forceinline__ __nv_bfloat16 cuk_from_f<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(cuk_sat(v, CUK_BF16_MAX));
}

__device__ __forceinline__ void cuk_stf(void *p, int dt, int64_t i, float v) {
  switch (dt) {
  case CUK_F32: ((float *)p)[i] = v; break;
  case CUK_F16: ((__half *)p)[i] = __float2half_rn(cuk_sat(v, CUK_F16_MAX)); break;
  case CUK_BF16: ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn(cuk_sat(v, CUK_BF16_MAX)); break;
  case CUK_I64: ((long long *)p)[i] = (long long)v; break;
  case CUK_I32: ((int *)p)[i] = (int)v; break;
  case CUK_I8: ((signed char *)p)[i] = (signed char)(int)v; break;
  case CUK_U8: ((unsigned char *)p)[i] = (unsigned char)(int)v; break;
  case CUK_BOOL: ((unsigned char *)p)[i] = v != 0.0f; break;
  default: break;
  }
}

__device__ __forceinline__ void cuk_sti(void *p, int dt, int64_t i, long long v) {
  switch (dt) {
  case CUK_I64: ((long long *)p)[i] = v; break;
  case CUK_I32: ((int *)p)[i] = (int)v; break;
  case CUK_I8: ((signed char *)p)[i] = (signed char)v; break;
  case CUK_U8: ((unsigned char *)p)[i] = (unsigned char)v; break;
  case CUK_BOOL: ((unsigned char *)p)[i] = v != 0; break;
  default: cuk_stf(p, dt, i, (float)v); break;
  }
}

/* Unary op / activation on one float. */
__device__ __forceinline__ float cuk_unary(int op, float x, float p0, float p1) {
  switch (op) {
  case CUK_COPY: return x;
  case CUK_RELU: return x < 0.0f ? 0.0f : x;
  case CUK_SIGMOID: return 1.0f / (1.0f + expf(-x));
  case CUK_TANH: return tanhf(x);
  case CUK_ERF: return erff(x);
  case CUK_EXP: return expf(x);
  case CUK_LOG: return logf(x);
  case CUK_SQRT: return sqrtf(x);
  case CUK_RECIP: return 1.0f / x;
  case CUK_NEG: return -x;
  case CUK_ABS: return fabsf(x);
  case CUK_CEIL: return ceilf(x);
  case CUK_FLOOR: return floorf(x);
  case CUK_ROUND: return rintf(x);
  case CUK_SIN: return sinf(x);
  case CUK_COS: return cosf(x);
  case CUK_GELU: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
  case CUK_GELU_TANH: {
    float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
    return 0.5f * x * (1.0f + tanhf(u));
  }
  case CUK_LEAKY_RELU: return x < 0.0f ? p0 * x : x;
  case CUK_HARD_SIGMOID: return fminf(1.0f, fmaxf(0.0f, p0 * x + p1));
  case CUK_HARD_SWISH: return x * fminf(1.0f, fmaxf(0.0f, x / 6.0f + 0.5f));
  case CUK_HARD_SWISH_P: return x * fminf(1.0f, fmaxf(0.0f, p0 * x + p1));
  case CUK_SILU: return x / (1.0f + expf(-x));
  case CUK_SOFTPLUS: return x > 20.0f ? x : log1pf(expf(x));
  case CUK_CLIP: return x < p0 ? p0 : x > p1 ? p1 : x;
  case CUK_ELU: return x < 0.0f ? p0 * (expf(x) - 1.0f) : x;
  case CUK_NOT: return x == 0.0f ? 1.0f : 0.0f;
  case CUK_SIGN: return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : 0.0f;
  case CUK_SELU: return p1 * (x > 0.0f ? x : p0 * (expf(x) - 1.0f));
  case CUK_THRESHOLDED_RELU: return x > p0 ? x : 0.0f;
  case CUK_ISNAN: return isnan(x) ? 1.0f : 0.0f;
  case CUK_ISINF:
    return (isinf(x) && ((x < 0.0f && p0 != 0.0f) || (x > 0.0f && p1 != 0.0f))) ? 1.0f : 0.0f;
  default: return x;
  }
}

/* 8 contiguous 16-bit floats (one 16-byte access) to / from float32: the
 * vector paths of memory-bound kernels (bfloat16 / float16 storage). */
template <typename T> __device__ __forceinline__ void cuk_ld8(const T *p, float *v) {
  uint4 u = *(const uint4 *)p;
  const T *e = (const T *)&u;
#pragma unroll
  for (int k = 0; k < 8; k++)
    v[k] = cuk_to_f(e[k]);
}
template <typename T> __device__ __forceinline__ void cuk_st8(T *p, const float *v) {
  uint4 u;
  T *e = (T *)&u;
#pragma unroll
  for (int k = 0; k < 8; k++)
    e[k] = cuk_from_f<T>(v[k]);
  *(uint4 *)p = u;
}
/* Is every pointer 16-byte aligned (NULL counts as aligned)? */
static inline bool cuk_al16(const void *a, const void *b = NULL, const void *c = NULL) {
  return (((uintptr_t)a | (uintptr_t)b | (uintptr_t)c) & 15) == 0;
}

/* Launch size for a grid-stride loop over n items. */
static inline unsigned cuk_blocks(int64_t n, int threads) {
  int64_t b = (n + threads - 1) / threads;
  if (b < 1) b = 1;
  if (b > 65536) b = 65536;
  return (unsigned)b;
}

/* Sum of v over the block (blockDim.x a multiple of 32, at most 1024); every
 * thread gets the result. `sh` holds 32 floats. */
__device__ __forceinline__ float cuk_block_sum(float v, float *sh) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  __syncthreads(); /* sh may still be read from a previous reduction */
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  v = lane < nw ? sh[lane] : 0.0f;
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float cuk_block_max(float v, float *sh) {
  for (int o = 16; o > 0; o >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  __syncthreads();
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  v = lane < nw ? sh[lane] : -INFINITY;
  for (int o = 16; o > 0; o >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

#endif
