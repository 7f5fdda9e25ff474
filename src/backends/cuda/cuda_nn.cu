/* Normalisation and pooling kernels of the cuda backend: LayerNormalization
 * (optionally fused with the residual Add before it), Softmax/LogSoftmax,
 * 2-D max/average pooling and global pooling, in NCHW or NHWC. All compute
 * in float32 whatever the storage type. */
#include <climits>

#include "backends/cuda/cuda_device.cuh"
#include "backends/cuda/cuda_gpool.h"

/* ---- LayerNormalization -------------------------------------------------- */

__global__ void ln_kernel(int dt, const void *x, const void *res, void *sum, void *y, int64_t cols,
                          const float *gamma, const float *beta, float eps) {
  __shared__ float sh[32];
  int64_t base = (int64_t)blockIdx.x * cols;
  float s = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    float v = cuk_ldf(x, dt, base + j);
    if (res) v += cuk_ldf(res, dt, base + j);
    s += v;
  }
  float mean = cuk_block_sum(s, sh) / (float)cols;
  float q = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    float v = cuk_ldf(x, dt, base + j);
    if (res) v += cuk_ldf(res, dt, base + j);
    q += (v - mean) * (v - mean);
  }
  float rstd = rsqrtf(cuk_block_sum(q, sh) / (float)cols + eps);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    float v = cuk_ldf(x, dt, base + j);
    if (res) v += cuk_ldf(res, dt, base + j);
    if (sum) cuk_stf(sum, dt, base + j, v);
    float o = (v - mean) * rstd * gamma[j];
    if (beta) o += beta[j];
    cuk_stf(y, dt, base + j, o);
  }
}

static int row_threads(int64_t cols) {
  int64_t t = (cols + 31) / 32 * 32;
  return t > 256 ? 256 : t < 32 ? 32 : (int)t;
}

/* 16-bit rows of cols % 8 == 0, cols <= 8192: each thread keeps its 8
 * elements in registers, so x (and res) are read once instead of three
 * times, in 16-byte accesses. */
template <typename T>
__global__ void ln_vec8(const T *x, const T *res, T *sum, T *y, int cols, const float *gamma,
                        const float *beta, float eps) {
  __shared__ float sh[32];
  int64_t base = (int64_t)blockIdx.x * cols;
  int j = threadIdx.x * 8;
  bool on = j < cols;
  float v[8], r[8], s = 0.0f;
#pragma unroll
  for (int k = 0; k < 8; k++)
    v[k] = 0.0f;
  if (on) {
    cuk_ld8(x + base + j, v);
    if (res) {
      cuk_ld8(res + base + j, r);
#pragma unroll
      for (int k = 0; k < 8; k++)
        v[k] += r[k];
    }
#pragma unroll
    for (int k = 0; k < 8; k++)
      s += v[k];
  }
  float mean = cuk_block_sum(s, sh) / (float)cols, q = 0.0f;
  if (on)
#pragma unroll
    for (int k = 0; k < 8; k++)
      q += (v[k] - mean) * (v[k] - mean);
  float rstd = rsqrtf(cuk_block_sum(q, sh) / (float)cols + eps);
  if (!on) return;
  if (sum) cuk_st8(sum + base + j, v);
#pragma unroll
  for (int k = 0; k < 8; k++)
    v[k] = (v[k] - mean) * rstd * gamma[j + k] + (beta ? beta[j + k] : 0.0f);
  cuk_st8(y + base + j, v);
}

/* 16-bit rows of cols % 8 == 0, cols <= 1024 (BERT-base: 768): one warp per
 * row, each lane keeping up to 4 chunks of 8 in registers. ln_vec8's block
 * per row spent its time in two block reductions (4 __syncthreads) for 96
 * threads of work: 14.6 us per LayerNorm at BERT-base batch 32, 4x the
 * memory time. Shuffles alone reduce here. part != NULL: each block also
 * writes the absmax of the values it stored (as stored, rounded) to
 * part[blockIdx.x], sparing dtype=fp8 a pass over y. */
template <typename T>
__global__ void ln_warp(const T *x, const T *res, T *sum, T *y, int64_t rows, int cols,
                        const float *gamma, const float *beta, float eps, float *part) {
  int64_t row = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  int lane = threadIdx.x & 31;
  float am = 0.0f;
  if (row < rows) { /* no early return: every warp reaches the barrier below */
    int64_t base = row * cols;
    float v[4][8], s = 0.0f;
#pragma unroll
    for (int c = 0; c < 4; c++) {
      int j = (c * 32 + lane) * 8;
      if (j < cols) {
        cuk_ld8(x + base + j, v[c]);
        if (res) {
          float r[8];
          cuk_ld8(res + base + j, r);
#pragma unroll
          for (int k = 0; k < 8; k++)
            v[c][k] += r[k];
        }
#pragma unroll
        for (int k = 0; k < 8; k++)
          s += v[c][k];
      }
    }
    for (int o = 16; o > 0; o >>= 1)
      s += __shfl_xor_sync(0xffffffffu, s, o);
    float mean = s / (float)cols, q = 0.0f;
#pragma unroll
    for (int c = 0; c < 4; c++)
      if ((c * 32 + lane) * 8 < cols)
#pragma unroll
        for (int k = 0; k < 8; k++)
          q += (v[c][k] - mean) * (v[c][k] - mean);
    for (int o = 16; o > 0; o >>= 1)
      q += __shfl_xor_sync(0xffffffffu, q, o);
    float rstd = rsqrtf(q / (float)cols + eps);
#pragma unroll
    for (int c = 0; c < 4; c++) {
      int j = (c * 32 + lane) * 8;
      if (j < cols) {
        if (sum) cuk_st8(sum + base + j, v[c]);
#pragma unroll
        for (int k = 0; k < 8; k++) {
          v[c][k] = (v[c][k] - mean) * rstd * gamma[j + k] + (beta ? beta[j + k] : 0.0f);
          if (part) {
            float a = fabsf(cuk_to_f(cuk_from_f<T>(v[c][k])));
            if (a > am && !isinf(a)) am = a; /* NaN compares false: skipped */
          }
        }
        cuk_st8(y + base + j, v[c]);
      }
    }
  }
  if (part) { /* uniform across the block */
    __shared__ float sh[32];
    am = cuk_block_max(am, sh);
    if (threadIdx.x == 0) part[blockIdx.x] = am;
  }
}

/* ln_warp takes 4 rows per block, and only from 4096 rows: it was measured
 * faster than ln_vec8 at BERT-base batch 32 (12.9 vs 14.6 us per
 * LayerNorm) and slower at batch 1 (128 rows: 8.2 vs 5.4 us, whether 1 or
 * 8 rows per block), where ln_vec8's 3 warps per row hide more latency. */
#define LN_WARPS 4
static bool ln_warp_fits(int dt, int64_t rows, int64_t cols) {
  return (dt == CUK_BF16 || dt == CUK_F16) && cols % 8 == 0 && cols <= 1024 && rows >= 4096;
}

extern "C" int cuk_layernorm_parts(int dt, int64_t rows, int64_t cols) {
  if (!ln_warp_fits(dt, rows, cols)) return 0;
  int64_t b = (rows + LN_WARPS - 1) / LN_WARPS;
  return b <= CUK_FP8_PARTS ? (int)b : 0;
}

extern "C" cudaError_t cuk_layernorm(cudaStream_t s, int dt, const void *x, const void *res,
                                     void *sum, void *y, int64_t rows, int64_t cols,
                                     const float *gamma, const float *beta, float eps,
                                     float *part) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  if (rows > 2147483647) return cudaErrorInvalidValue;
  int parts = part ? cuk_layernorm_parts(dt, rows, cols) : 0;
  if (part && parts <= 0) return cudaErrorInvalidValue;
  bool v16 =
      (dt == CUK_BF16 || dt == CUK_F16) && cols % 8 == 0 && cuk_al16(x, res, sum) && cuk_al16(y);
  if (v16 && ln_warp_fits(dt, rows, cols)) {
    int wpb = LN_WARPS;
    unsigned blocks = (unsigned)((rows + wpb - 1) / wpb);
    if (dt == CUK_BF16)
      ln_warp<__nv_bfloat16><<<blocks, 32 * wpb, 0, s>>>(
          (const __nv_bfloat16 *)x, (const __nv_bfloat16 *)res, (__nv_bfloat16 *)sum,
          (__nv_bfloat16 *)y, rows, (int)cols, gamma, beta, eps, part);
    else
      ln_warp<__half><<<blocks, 32 * wpb, 0, s>>>((const __half *)x, (const __half *)res,
                                                  (__half *)sum, (__half *)y, rows, (int)cols,
                                                  gamma, beta, eps, part);
    return cudaGetLastError();
  }
  if (v16 && cols <= 8192) {
    int threads = (int)((cols / 8 + 31) / 32 * 32);
    if (dt == CUK_BF16)
      ln_vec8<__nv_bfloat16><<<(unsigned)rows, threads, 0, s>>>(
          (const __nv_bfloat16 *)x, (const __nv_bfloat16 *)res, (__nv_bfloat16 *)sum,
          (__nv_bfloat16 *)y, (int)cols, gamma, beta, eps);
    else
      ln_vec8<__half><<<(unsigned)rows, threads, 0, s>>>((const __half *)x, (const __half *)res,
                                                         (__half *)sum, (__half *)y, (int)cols,
                                                         gamma, beta, eps);
  } else {
    ln_kernel<<<(unsigned)rows, row_threads(cols), 0, s>>>(dt, x, res, sum, y, cols, gamma, beta,
                                                           eps);
  }
  cudaError_t e = cudaGetLastError();
  /* unaligned: the partials the caller expects, in a pass of their own */
  if (e == cudaSuccess && part) e = cuk_fp8_amax_parts(s, dt, y, rows * cols, part, parts);
  return e;
}

/* ---- Softmax ------------------------------------------------------------- */

/* One block per contiguous row (inner == 1). */
__global__ void softmax_rows(int dt, const void *x, void *y, int64_t len, int log) {
  __shared__ float sh[32];
  int64_t base = (int64_t)blockIdx.x * len;
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x)
    m = fmaxf(m, cuk_ldf(x, dt, base + j));
  m = cuk_block_max(m, sh);
  float s = 0.0f;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x)
    s += expf(cuk_ldf(x, dt, base + j) - m);
  s = cuk_block_sum(s, sh);
  float inv = 1.0f / s, ls = logf(s);
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
    float v = cuk_ldf(x, dt, base + j) - m;
    cuk_stf(y, dt, base + j, log ? v - ls : expf(v) * inv);
  }
}

/* One thread per strided line (inner > 1). */
__global__ void softmax_lines(int dt, const void *x, void *y, int64_t outer, int64_t len,
                              int64_t inner, int log) {
  int64_t n = outer * inner, stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < n; t += stride) {
    int64_t base = (t / inner) * len * inner + t % inner;
    float m = -INFINITY, s = 0.0f;
    for (int64_t j = 0; j < len; j++)
      m = fmaxf(m, cuk_ldf(x, dt, base + j * inner));
    for (int64_t j = 0; j < len; j++)
      s += expf(cuk_ldf(x, dt, base + j * inner) - m);
    float inv = 1.0f / s, ls = logf(s);
    for (int64_t j = 0; j < len; j++) {
      float v = cuk_ldf(x, dt, base + j * inner) - m;
      cuk_stf(y, dt, base + j * inner, log ? v - ls : expf(v) * inv);
    }
  }
}

extern "C" cudaError_t cuk_softmax(cudaStream_t s, int dt, const void *x, void *y, int64_t outer,
                                   int64_t len, int64_t inner, int log) {
  if (outer <= 0 || len <= 0 || inner <= 0) return cudaSuccess;
  if (inner == 1) {
    if (outer > 2147483647) return cudaErrorInvalidValue;
    softmax_rows<<<(unsigned)outer, row_threads(len), 0, s>>>(dt, x, y, len, log);
  } else {
    softmax_lines<<<cuk_blocks(outer * inner, 128), 128, 0, s>>>(dt, x, y, outer, len, inner, log);
  }
  return cudaGetLastError();
}

/* ---- pooling ------------------------------------------------------------- */

__global__ void pool_kernel(cuk_pool p) {
  int64_t n_out = p.N * p.C * p.OH * p.OW, stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n_out; i += stride) {
    int64_t n, c, oh, ow;
    if (p.nhwc) {
      c = i % p.C;
      ow = (i / p.C) % p.OW;
      oh = (i / (p.C * p.OW)) % p.OH;
      n = i / (p.C * p.OW * p.OH);
    } else {
      ow = i % p.OW;
      oh = (i / p.OW) % p.OH;
      c = (i / (p.OW * p.OH)) % p.C;
      n = i / (p.OW * p.OH * p.C);
    }
    float acc = p.mode == 0 ? -INFINITY : 0.0f;
    int cnt = 0, cnt_pad = 0;
    for (int a = 0; a < p.kh; a++) {
      int64_t h = oh * p.sh - p.ph + (int64_t)a * p.dh;
      bool h_in = h >= 0 && h < p.H, h_pad = h >= -p.ph && h < p.H + p.ph_end;
      for (int b = 0; b < p.kw; b++) {
        int64_t w = ow * p.sw - p.pw + (int64_t)b * p.dw;
        bool w_in = w >= 0 && w < p.W, w_pad = w >= -p.pw && w < p.W + p.pw_end;
        cnt_pad += h_pad && w_pad;
        if (!h_in || !w_in) continue;
        int64_t at =
            p.nhwc ? ((n * p.H + h) * p.W + w) * p.C + c : ((n * p.C + c) * p.H + h) * p.W + w;
        float v = cuk_ldf(p.x, p.dt, at);
        acc = p.mode == 0 ? fmaxf(acc, v) : acc + v;
        cnt++;
      }
    }
    if (p.mode == 1) acc /= (float)(cnt_pad > 0 ? cnt_pad : 1);
    if (p.mode == 2) acc /= (float)(cnt > 0 ? cnt : 1);
    cuk_stf(p.y, p.dt, i, acc);
  }
}

/* NHWC 16-bit pooling, 8 channels per thread (16-byte loads): the generic
 * kernel's one element per thread took 15 us for ResNet-50's 3x3 max pool
 * at batch 1. */
template <typename T> __global__ void pool_nhwc8(cuk_pool p) {
  int64_t cg = p.C / 8, n_out = p.N * p.OH * p.OW * cg, stride = (int64_t)gridDim.x * blockDim.x;
  const T *x = (const T *)p.x;
  T *y = (T *)p.y;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n_out; i += stride) {
    int64_t c = (i % cg) * 8, pix = i / cg;
    int64_t ow = pix % p.OW, oh = (pix / p.OW) % p.OH, n = pix / (p.OW * p.OH);
    float acc[8], v[8];
#pragma unroll
    for (int k = 0; k < 8; k++)
      acc[k] = p.mode == 0 ? -INFINITY : 0.0f;
    int cnt = 0, cnt_pad = 0;
    for (int a = 0; a < p.kh; a++) {
      int64_t h = oh * p.sh - p.ph + (int64_t)a * p.dh;
      bool h_in = h >= 0 && h < p.H, h_pad = h >= -p.ph && h < p.H + p.ph_end;
      for (int b = 0; b < p.kw; b++) {
        int64_t w = ow * p.sw - p.pw + (int64_t)b * p.dw;
        bool w_in = w >= 0 && w < p.W, w_pad = w >= -p.pw && w < p.W + p.pw_end;
        cnt_pad += h_pad && w_pad;
        if (!h_in || !w_in) continue;
        cuk_ld8(x + ((n * p.H + h) * p.W + w) * p.C + c, v);
#pragma unroll
        for (int k = 0; k < 8; k++)
          acc[k] = p.mode == 0 ? fmaxf(acc[k], v[k]) : acc[k] + v[k];
        cnt++;
      }
    }
    float div = p.mode == 1   ? (float)(cnt_pad > 0 ? cnt_pad : 1)
                : p.mode == 2 ? (float)(cnt > 0 ? cnt : 1)
                              : 1.0f;
#pragma unroll
    for (int k = 0; k < 8; k++)
      acc[k] /= div;
    cuk_st8(y + pix * p.C + c, acc);
  }
}

extern "C" cudaError_t cuk_pool2d(cudaStream_t s, const cuk_pool *p) {
  int64_t n = p->N * p->C * p->OH * p->OW;
  if (n <= 0) return cudaSuccess;
  if (p->nhwc && p->C % 8 == 0 && (p->dt == CUK_BF16 || p->dt == CUK_F16) && cuk_al16(p->x, p->y)) {
    if (p->dt == CUK_BF16)
      pool_nhwc8<__nv_bfloat16><<<cuk_blocks(n / 8, 256), 256, 0, s>>>(*p);
    else
      pool_nhwc8<__half><<<cuk_blocks(n / 8, 256), 256, 0, s>>>(*p);
    return cudaGetLastError();
  }
  pool_kernel<<<cuk_blocks(n, 256), 256, 0, s>>>(*p);
  return cudaGetLastError();
}

/* One thread per unit of U bytes of a column row; units never straddle
 * two (r, s) positions (C * es is a multiple of sizeof(U)). */
template <typename U> __global__ void im2col_kernel(cuk_im2col p) {
  const int per = (int)sizeof(U) / p.es; /* elements per unit */
  int64_t upr = p.kp / per, n_units = p.N * p.OH * p.OW * upr;
  int64_t rsc = p.R * p.S * p.C, stride = (int64_t)gridDim.x * blockDim.x;
  const U *x = (const U *)p.x;
  U *y = (U *)p.y;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n_units; i += stride) {
    int64_t m = i / upr, col = (i % upr) * per;
    U v{};
    if (col < rsc) {
      int64_t c = col % p.C, rs = col / p.C, r = rs / p.S, sx = rs % p.S;
      int64_t ow = m % p.OW, oh = (m / p.OW) % p.OH, n = m / (p.OW * p.OH);
      int64_t h = oh * p.str_h - p.pad_h + r * p.dil_h, w = ow * p.str_w - p.pad_w + sx * p.dil_w;
      if (h >= 0 && h < p.H && w >= 0 && w < p.W)
        v = x[(((n * p.H + h) * p.W + w) * p.C + c) / per];
    }
    y[i] = v;
  }
}

extern "C" cudaError_t cuk_im2col_nhwc(cudaStream_t s, const cuk_im2col *p) {
  int64_t n = p->N * p->OH * p->OW * p->kp;
  if (n <= 0) return cudaSuccess;
  if ((p->C * p->es) % 16 == 0 && (p->kp * p->es) % 16 == 0)
    im2col_kernel<uint4><<<cuk_blocks(n * p->es / 16, 256), 256, 0, s>>>(*p);
  else if (p->es == 2)
    im2col_kernel<uint16_t><<<cuk_blocks(n, 256), 256, 0, s>>>(*p);
  else if (p->es == 4)
    im2col_kernel<uint32_t><<<cuk_blocks(n, 256), 256, 0, s>>>(*p);
  else
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

/* Global pooling, the split over HW chosen on the host (cuda_gpool.h): with
 * parts > 1 each worker writes its part's sum (or max) as float32 to
 * part[(n * C + c) * parts + z] and gpool_finish combines them. */
__device__ __forceinline__ float gp_op(int max, float a, float b) {
  return max ? fmaxf(a, b) : a + b;
}

/* V consecutive elements from i on as float32: V = 8 for 16-bit storage
 * (one 16-byte access), 4 for float32, 1 for any type. */
template <int V>
__device__ __forceinline__ void gp_load(const void *x, int dt, int64_t i, float *v) {
  if constexpr (V == 1) {
    v[0] = cuk_ldf(x, dt, i);
  } else if constexpr (V == 4) {
    float4 f = *(const float4 *)((const float *)x + i);
    v[0] = f.x, v[1] = f.y, v[2] = f.z, v[3] = f.w;
  } else if (dt == CUK_BF16) {
    cuk_ld8((const __nv_bfloat16 *)x + i, v);
  } else {
    cuk_ld8((const __half *)x + i, v);
  }
}

/* Channels-last [N, HW, C]: a block per (tile of `tile` channel vectors,
 * image) and part of HW, blockIdx.x = n * tiles + tile index; its rows of
 * threads take every rows-th position (a row of threads reads tile * V
 * contiguous channels), then a tree over the rows in shared memory. */
template <int V>
__global__ void gpool_nhwc_kernel(int dt, int max, const void *x, void *y, float *part, int64_t C,
                                  int64_t HW, int tile, int64_t tiles, int64_t chunk) {
  __shared__ float sh[CUK_GP_THREADS][V];
  int t = threadIdx.x, tx = t % tile, ty = t / tile, rows = CUK_GP_THREADS / tile;
  int64_t n = blockIdx.x / tiles, c0 = (blockIdx.x % tiles * tile + tx) * V;
  int64_t j0 = (int64_t)blockIdx.z * chunk, j1 = j0 + chunk < HW ? j0 + chunk : HW;
  float acc[V];
#pragma unroll
  for (int k = 0; k < V; k++)
    acc[k] = max ? -INFINITY : 0.0f;
  if (c0 < C) {
    const int64_t base = n * HW * C + c0;
#pragma unroll 4
    for (int64_t j = j0 + ty; j < j1; j += rows) {
      float v[V];
      gp_load<V>(x, dt, base + j * C, v);
#pragma unroll
      for (int k = 0; k < V; k++)
        acc[k] = gp_op(max, acc[k], v[k]);
    }
  }
#pragma unroll
  for (int k = 0; k < V; k++)
    sh[t][k] = acc[k];
  __syncthreads();
  for (int r = rows / 2; r > 0; r >>= 1) {
    if (ty < r)
#pragma unroll
      for (int k = 0; k < V; k++)
        sh[t][k] = gp_op(max, sh[t][k], sh[t + r * tile][k]);
    __syncthreads();
  }
  if (ty != 0 || c0 >= C) return;
#pragma unroll
  for (int k = 0; k < V; k++) {
    int64_t i = n * C + c0 + k;
    if (part)
      part[i * gridDim.z + blockIdx.z] = sh[tx][k];
    else
      cuk_stf(y, dt, i, max ? sh[tx][k] : sh[tx][k] / (float)HW);
  }
}

/* NCHW [N * C, HW]: a warp per (plane, part), coalesced along the plane,
 * reduced with shuffles. */
__global__ void gpool_nchw_kernel(int dt, int max, const void *x, void *y, float *part, int64_t NC,
                                  int64_t HW, int parts, int64_t chunk) {
  int lane = threadIdx.x & 31;
  int64_t nw = (int64_t)gridDim.x * (blockDim.x >> 5), total = NC * parts;
  for (int64_t w = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5; w < total; w += nw) {
    int64_t i = w / parts, z = w % parts;
    int64_t j0 = z * chunk, j1 = j0 + chunk < HW ? j0 + chunk : HW;
    float acc = max ? -INFINITY : 0.0f;
    for (int64_t j = j0 + lane; j < j1; j += 32)
      acc = gp_op(max, acc, cuk_ldf(x, dt, i * HW + j));
    for (int o = 16; o > 0; o >>= 1)
      acc = gp_op(max, acc, __shfl_xor_sync(0xffffffffu, acc, o));
    if (lane) continue;
    if (part)
      part[w] = acc;
    else
      cuk_stf(y, dt, i, max ? acc : acc / (float)HW);
  }
}

__global__ void gpool_finish(int dt, int max, const float *part, void *y, int64_t NC, int parts,
                             int64_t HW) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < NC; i += stride) {
    float acc = part[i * parts];
    for (int z = 1; z < parts; z++)
      acc = gp_op(max, acc, part[i * parts + z]);
    cuk_stf(y, dt, i, max ? acc : acc / (float)HW);
  }
}

extern "C" cudaError_t cuk_global_pool(cudaStream_t s, int dt, int nhwc, int max, const void *x,
                                       void *y, int64_t N, int64_t C, int64_t HW, int n_sm,
                                       void *ws, int64_t ws_bytes) {
  if (N * C <= 0) return cudaSuccess;
  if (HW <= 0) return cudaErrorInvalidValue;
  int v = 1;
  if (nhwc && (dt == CUK_BF16 || dt == CUK_F16) && C % 8 == 0 && cuk_al16(x)) v = 8;
  if (nhwc && dt == CUK_F32 && C % 4 == 0 && cuk_al16(x)) v = 4;
  int64_t units = C / v;
  int parts = ws ? cuk_gpool_splits(nhwc, N, C, HW, units, n_sm, ws_bytes) : 1;
  int64_t chunk = (HW + parts - 1) / parts;
  parts = (int)((HW + chunk - 1) / chunk); /* every part non-empty */
  float *part = parts > 1 ? (float *)ws : NULL;
  if (nhwc) {
    int tile = cuk_gpool_tile(units);
    int64_t tiles = (units + tile - 1) / tile;
    if (N * tiles > 2147483647) return cudaErrorInvalidValue;
    dim3 grid((unsigned)(N * tiles), 1, (unsigned)parts);
    if (v == 8)
      gpool_nhwc_kernel<8><<<grid, CUK_GP_THREADS, 0, s>>>(dt, max, x, y, part, C, HW, tile, tiles,
                                                           chunk);
    else if (v == 4)
      gpool_nhwc_kernel<4><<<grid, CUK_GP_THREADS, 0, s>>>(dt, max, x, y, part, C, HW, tile, tiles,
                                                           chunk);
    else
      gpool_nhwc_kernel<1><<<grid, CUK_GP_THREADS, 0, s>>>(dt, max, x, y, part, C, HW, tile, tiles,
                                                           chunk);
  } else {
    gpool_nchw_kernel<<<cuk_blocks(N * C * parts * 32, CUK_GP_THREADS), CUK_GP_THREADS, 0, s>>>(
        dt, max, x, y, part, N * C, HW, parts, chunk);
  }
  if (part)
    gpool_finish<<<cuk_blocks(N * C, 256), 256, 0, s>>>(dt, max, part, y, N * C, parts, HW);
  return cudaGetLastError();
}

/* ---- reductions ----------------------------------------------------------- */

__device__ __forceinline__ int64_t red_offset(const cuk_reduce &p, int64_t j, int64_t base) {
  for (int d = p.n_red - 1; d >= 0; d--) {
    base += (j % p.red_dims[d]) * p.red_st[d];
    j /= p.red_dims[d];
  }
  return base;
}

__global__ void reduce_kernel(cuk_reduce p) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  bool ints = p.dt == CUK_I64 || p.dt == CUK_I32 || p.dt == CUK_I8 || p.dt == CUK_U8;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < p.n_out; i += stride) {
    int64_t base = 0, r = i;
    for (int d = p.n_keep - 1; d >= 0; d--) {
      base += (r % p.keep_dims[d]) * p.keep_st[d];
      r /= p.keep_dims[d];
    }
    if (p.op == CUK_R_ARGMAX || p.op == CUK_R_ARGMIN) {
      bool mx = p.op == CUK_R_ARGMAX;
      float best = 0.0f;
      long long at = 0;
      for (int64_t j = 0; j < p.n_red_total; j++) {
        float v = cuk_ldf(p.x, p.dt, red_offset(p, j, base));
        bool better = j == 0 || (mx ? (p.select_last ? v >= best : v > best)
                                    : (p.select_last ? v <= best : v < best));
        if (better) best = v, at = j;
      }
      cuk_sti(p.y, CUK_I64, i, at);
      continue;
    }
    if (ints &&
        (p.op == CUK_R_SUM || p.op == CUK_R_MAX || p.op == CUK_R_MIN || p.op == CUK_R_PROD)) {
      long long acc = p.op == CUK_R_PROD  ? 1
                      : p.op == CUK_R_MAX ? LLONG_MIN
                      : p.op == CUK_R_MIN ? LLONG_MAX
                                          : 0;
      for (int64_t j = 0; j < p.n_red_total; j++) {
        long long v = cuk_ldi(p.x, p.dt, red_offset(p, j, base));
        acc = p.op == CUK_R_SUM    ? acc + v
              : p.op == CUK_R_PROD ? acc * v
              : p.op == CUK_R_MAX  ? (v > acc ? v : acc)
                                   : (v < acc ? v : acc);
      }
      cuk_sti(p.y, p.out_dt, i, acc);
      continue;
    }
    float m = 0.0f;
    if (p.op == CUK_R_LOGSUMEXP) {
      m = -INFINITY;
      for (int64_t j = 0; j < p.n_red_total; j++)
        m = fmaxf(m, cuk_ldf(p.x, p.dt, red_offset(p, j, base)));
      if (m == -INFINITY) m = 0.0f;
    }
    float acc = p.op == CUK_R_MAX    ? -INFINITY
                : p.op == CUK_R_MIN  ? INFINITY
                : p.op == CUK_R_PROD ? 1.0f
                                     : 0.0f;
    for (int64_t j = 0; j < p.n_red_total; j++) {
      float v = cuk_ldf(p.x, p.dt, red_offset(p, j, base));
      switch (p.op) {
      case CUK_R_MAX: acc = isnan(v) ? v : fmaxf(acc, v); break;
      case CUK_R_MIN: acc = isnan(v) ? v : fminf(acc, v); break;
      case CUK_R_PROD: acc *= v; break;
      case CUK_R_L1: acc += fabsf(v); break;
      case CUK_R_L2:
      case CUK_R_SUMSQ: acc += v * v; break;
      case CUK_R_LOGSUMEXP: acc += expf(v - m); break;
      default: acc += v; break;
      }
    }
    switch (p.op) {
    case CUK_R_MEAN: acc /= (float)(p.n_red_total > 0 ? p.n_red_total : 1); break;
    case CUK_R_L2: acc = sqrtf(acc); break;
    case CUK_R_LOGSUM: acc = logf(acc); break;
    case CUK_R_LOGSUMEXP: acc = m + logf(acc); break;
    default: break;
    }
    cuk_stf(p.y, p.out_dt, i, acc);
  }
}

extern "C" cudaError_t cuk_reduce_run(cudaStream_t s, const cuk_reduce *p) {
  if (p->n_out <= 0) return cudaSuccess;
  reduce_kernel<<<cuk_blocks(p->n_out, 128), 128, 0, s>>>(*p);
  return cudaGetLastError();
}
