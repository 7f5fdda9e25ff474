/* Dynamic per-tensor fp8 quantization of GEMM activations (dtype=fp8):
 * absmax over the tensor (one atomic per block), then every element scaled
 * by 448 / absmax and converted to e4m3 by the hardware conversion (round to
 * nearest even, saturating: the encoder of src/backends/quant). The scale
 * never leaves the device, so the three launches are capturable. */
#include <cuda_fp8.h>

#include "backends/cuda/cuda_device.cuh"

#define CUK_E4M3_MAX 448.0f

__global__ void amax_kernel(int dt, const void *x, int64_t n, float *amax) {
  __shared__ float sh[32];
  float m = 0.0f;
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    float a = fabsf(cuk_ldf(x, dt, i));
    if (a > m && !isinf(a)) m = a; /* NaN compares false: skipped */
  }
  m = cuk_block_max(m, sh);
  /* non-negative floats order like their bit patterns */
  if (threadIdx.x == 0) atomicMax((unsigned *)amax, __float_as_uint(m));
}

__global__ void quant_kernel(int dt, const void *x, int64_t n, float *sc, unsigned char *q) {
  float amax = sc[0];
  float scale = amax > 0.0f ? amax / CUK_E4M3_MAX : 1.0f, inv = 1.0f / scale;
  if (blockIdx.x == 0 && threadIdx.x == 0) sc[4] = scale;
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    q[i] = __nv_cvt_float_to_fp8(cuk_ldf(x, dt, i) * inv, __NV_SATFINITE, __NV_E4M3);
}

/* 16-bit storage, n % 8 == 0, aligned: 16-byte loads, 8-byte stores. */
template <typename T> __global__ void amax_vec8(const T *x, int64_t n8, float *amax) {
  __shared__ float sh[32];
  float m = 0.0f, v[8];
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n8; i += stride) {
    cuk_ld8(x + i * 8, v);
#pragma unroll
    for (int k = 0; k < 8; k++) {
      float a = fabsf(v[k]);
      if (a > m && !isinf(a)) m = a;
    }
  }
  m = cuk_block_max(m, sh);
  if (threadIdx.x == 0) atomicMax((unsigned *)amax, __float_as_uint(m));
}

template <typename T>
__global__ void quant_vec8(const T *x, int64_t n8, float *sc, unsigned char *q) {
  float amax = sc[0];
  float scale = amax > 0.0f ? amax / CUK_E4M3_MAX : 1.0f, inv = 1.0f / scale;
  if (blockIdx.x == 0 && threadIdx.x == 0) sc[4] = scale;
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n8; i += stride) {
    float v[8];
    cuk_ld8(x + i * 8, v);
    uint2 o;
    __nv_fp8x2_storage_t *e = (__nv_fp8x2_storage_t *)&o;
#pragma unroll
    for (int k = 0; k < 4; k++)
      e[k] = __nv_cvt_float2_to_fp8x2(make_float2(v[2 * k] * inv, v[2 * k + 1] * inv),
                                      __NV_SATFINITE, __NV_E4M3);
    *(uint2 *)(q + i * 8) = o;
  }
}

extern "C" cudaError_t cuk_fp8_quantize(cudaStream_t s, int dt, const void *x, int64_t n, float *sc,
                                        unsigned char *q) {
  cudaError_t e = cudaMemsetAsync(sc, 0, sizeof(float), s);
  if (e != cudaSuccess || n <= 0) return e;
  if ((dt == CUK_BF16 || dt == CUK_F16) && n % 8 == 0 && cuk_al16(x, q)) {
    int64_t n8 = n / 8;
    unsigned b = cuk_blocks(n8, 256) > 1024 ? 1024 : cuk_blocks(n8, 256);
    if (dt == CUK_BF16) {
      amax_vec8<<<b, 256, 0, s>>>((const __nv_bfloat16 *)x, n8, sc);
      quant_vec8<<<cuk_blocks(n8, 256), 256, 0, s>>>((const __nv_bfloat16 *)x, n8, sc, q);
    } else {
      amax_vec8<<<b, 256, 0, s>>>((const __half *)x, n8, sc);
      quant_vec8<<<cuk_blocks(n8, 256), 256, 0, s>>>((const __half *)x, n8, sc, q);
    }
    return cudaGetLastError();
  }
  unsigned b = cuk_blocks(n, 256);
  if (b > 1024) b = 1024; /* few atomics; each thread loops */
  amax_kernel<<<b, 256, 0, s>>>(dt, x, n, sc);
  quant_kernel<<<cuk_blocks(n, 256), 256, 0, s>>>(dt, x, n, sc, q);
  return cudaGetLastError();
}

/* Hardware e4m3 encoding of n floats (tests compare it with the host's). */
__global__ void encode_kernel(const float *x, int64_t n, unsigned char *q) {
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) q[i] = __nv_cvt_float_to_fp8(x[i], __NV_SATFINITE, __NV_E4M3);
}

extern "C" cudaError_t cuk_fp8_encode(cudaStream_t s, const float *x, int64_t n, unsigned char *q) {
  if (n <= 0) return cudaSuccess;
  encode_kernel<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(x, n, q);
  return cudaGetLastError();
}
