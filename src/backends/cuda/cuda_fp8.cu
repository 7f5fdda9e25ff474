/* Dynamic per-tensor fp8 quantization of GEMM activations (dtype=fp8), and
 * dtype=fp8wo's dequantization of e4m3 weights (at the end of the file):
 * absmax over the tensor (one atomic per block), then every element scaled
 * by 448 / absmax and converted to e4m3 by the hardware conversion (round to
 * nearest even, saturating: the encoder of src/backends/quant). The scale
 * never leaves the device, so the launches are capturable. */
#include <cuda_fp8.h>

#include "backends/cuda/cuda_device.cuh"

#define CUK_E4M3_MAX 448.0f

/* Absmax in two steps without atomics or a memset (one graph node less per
 * quantized activation): the first kernel (or the producer of x itself:
 * LayerNormalization, cuk_layernorm) writes one partial maximum per block,
 * the quantizing kernel reduces those partials in every block (a few KB
 * from L2) before it converts. NaN and Inf are skipped, as before. */
__device__ __forceinline__ float amax_step(float m, float v) {
  float a = fabsf(v);
  return a > m && !isinf(a) ? a : m; /* NaN compares false: skipped */
}

__global__ void amax_kernel(int dt, const void *x, int64_t n, float *part) {
  __shared__ float sh[32];
  float m = 0.0f;
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    m = amax_step(m, cuk_ldf(x, dt, i));
  m = cuk_block_max(m, sh);
  if (threadIdx.x == 0) part[blockIdx.x] = m;
}

/* 16-bit storage, n % 8 == 0, aligned: 16-byte loads. */
template <typename T> __global__ void amax_vec8(const T *x, int64_t n8, float *part) {
  __shared__ float sh[32];
  float m = 0.0f, v[8];
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n8; i += stride) {
    cuk_ld8(x + i * 8, v);
#pragma unroll
    for (int k = 0; k < 8; k++)
      m = amax_step(m, v[k]);
  }
  m = cuk_block_max(m, sh);
  if (threadIdx.x == 0) part[blockIdx.x] = m;
}

/* The tensor's absmax from the partials at sc + 8, and the scale; block 0
 * publishes both (sc[0], sc[4]) for cuBLASLt. */
__device__ __forceinline__ float quant_inv(float *sc, int parts) {
  __shared__ float sh[32];
  float m = 0.0f;
  for (int i = threadIdx.x; i < parts; i += blockDim.x)
    m = fmaxf(m, sc[8 + i]);
  float amax = cuk_block_max(m, sh);
  float scale = amax > 0.0f ? amax / CUK_E4M3_MAX : 1.0f;
  if (blockIdx.x == 0 && threadIdx.x == 0) sc[0] = amax, sc[4] = scale;
  return 1.0f / scale;
}

__global__ void quant_kernel(int dt, const void *x, int64_t n, float *sc, int parts,
                             unsigned char *q) {
  float inv = quant_inv(sc, parts);
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    q[i] = __nv_cvt_float_to_fp8(cuk_ldf(x, dt, i) * inv, __NV_SATFINITE, __NV_E4M3);
}

/* 16-bit storage, n % 8 == 0, aligned: 16-byte loads, 8-byte stores. */
template <typename T>
__global__ void quant_vec8(const T *x, int64_t n8, float *sc, int parts, unsigned char *q) {
  float inv = quant_inv(sc, parts);
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

static bool vec8(int dt, int64_t n, const void *x, const void *q) {
  return (dt == CUK_BF16 || dt == CUK_F16) && n % 8 == 0 && cuk_al16(x, q);
}

extern "C" cudaError_t cuk_fp8_amax_parts(cudaStream_t s, int dt, const void *x, int64_t n,
                                          float *part, int parts) {
  if (parts <= 0 || parts > CUK_FP8_PARTS) return cudaErrorInvalidValue;
  if (vec8(dt, n, x, x)) {
    if (dt == CUK_BF16)
      amax_vec8<<<parts, 256, 0, s>>>((const __nv_bfloat16 *)x, n / 8, part);
    else
      amax_vec8<<<parts, 256, 0, s>>>((const __half *)x, n / 8, part);
  } else {
    amax_kernel<<<parts, 256, 0, s>>>(dt, x, n, part);
  }
  return cudaGetLastError();
}

extern "C" cudaError_t cuk_fp8_quantize_parts(cudaStream_t s, int dt, const void *x, int64_t n,
                                              float *sc, int parts, unsigned char *q) {
  if (n <= 0) return cudaSuccess;
  if (parts <= 0 || parts > CUK_FP8_PARTS) return cudaErrorInvalidValue;
  if (vec8(dt, n, x, q)) {
    int64_t n8 = n / 8;
    if (dt == CUK_BF16)
      quant_vec8<<<cuk_blocks(n8, 256), 256, 0, s>>>((const __nv_bfloat16 *)x, n8, sc, parts, q);
    else
      quant_vec8<<<cuk_blocks(n8, 256), 256, 0, s>>>((const __half *)x, n8, sc, parts, q);
  } else {
    quant_kernel<<<cuk_blocks(n, 256), 256, 0, s>>>(dt, x, n, sc, parts, q);
  }
  return cudaGetLastError();
}

extern "C" cudaError_t cuk_fp8_quantize(cudaStream_t s, int dt, const void *x, int64_t n, float *sc,
                                        unsigned char *q) {
  if (n <= 0) return cudaMemsetAsync(sc, 0, sizeof(float), s);
  /* few partials; each thread loops */
  unsigned b = cuk_blocks(vec8(dt, n, x, q) ? n / 8 : n, 256);
  int parts = b > 1024 ? 1024 : (int)b;
  cudaError_t e = cuk_fp8_amax_parts(s, dt, x, n, sc + 8, parts);
  return e != cudaSuccess ? e : cuk_fp8_quantize_parts(s, dt, x, n, sc, parts, q);
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

/* dtype=fp8wo: a GEMM weight kept as e4m3 codes q [rows, cols] with one
 * scale per output channel (per row when scale_rows, else per column)
 * dequantized into bfloat16 y of the same layout before the GEMM reads it:
 * y = bf16(e4m3(q) * scale), rounded to nearest even (e4m3 values are exact
 * in half precision, so the product is the only rounding). */
__device__ __forceinline__ float2 e4m3x2_to_f2(unsigned short b2) {
  __half2_raw h = __nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)b2, __NV_E4M3);
  return __half22float2(__half2(h));
}

__global__ void fp8wo_kernel(const unsigned char *q, const float *scale, int64_t rows, int64_t cols,
                             int scale_rows, __nv_bfloat16 *y) {
  int64_t n = rows * cols, stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    __half_raw h = __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)q[i], __NV_E4M3);
    float s = scale[scale_rows ? i / cols : i % cols];
    y[i] = cuk_from_f<__nv_bfloat16>(__half2float(__half(h)) * s);
  }
}

/* cols % 8 == 0, aligned: 8 codes (8 bytes) in, 8 bfloat16 (16 bytes) out
 * per thread, all in one row */
__global__ void fp8wo_vec8(const unsigned char *q, const float *scale, int64_t n8, int64_t cols,
                           int scale_rows, __nv_bfloat16 *y) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n8; i += stride) {
    uint2 c = *(const uint2 *)(q + i * 8);
    const unsigned short *c2 = (const unsigned short *)&c;
    int64_t e = i * 8;
    float s[8], v[8];
    if (scale_rows) {
      float r = scale[e / cols];
#pragma unroll
      for (int k = 0; k < 8; k++)
        s[k] = r;
    } else {
      float4 a = *(const float4 *)(scale + e % cols), b = *(const float4 *)(scale + e % cols + 4);
      s[0] = a.x, s[1] = a.y, s[2] = a.z, s[3] = a.w, s[4] = b.x, s[5] = b.y, s[6] = b.z,
      s[7] = b.w;
    }
#pragma unroll
    for (int k = 0; k < 4; k++) {
      float2 f = e4m3x2_to_f2(c2[k]);
      v[2 * k] = f.x * s[2 * k];
      v[2 * k + 1] = f.y * s[2 * k + 1];
    }
    cuk_st8(y + e, v);
  }
}

extern "C" cudaError_t cuk_fp8wo_dequant(cudaStream_t s, const unsigned char *q, const float *scale,
                                         int64_t rows, int64_t cols, int scale_rows, void *y) {
  int64_t n = rows * cols;
  if (n <= 0) return cudaSuccess;
  __nv_bfloat16 *yb = (__nv_bfloat16 *)y;
  if (cols % 8 == 0 && cuk_al16(q, scale, y))
    fp8wo_vec8<<<cuk_blocks(n / 8, 256), 256, 0, s>>>(q, scale, n / 8, cols, scale_rows, yb);
  else
    fp8wo_kernel<<<cuk_blocks(n, 256), 256, 0, s>>>(q, scale, rows, cols, scale_rows, yb);
  return cudaGetLastError();
}
