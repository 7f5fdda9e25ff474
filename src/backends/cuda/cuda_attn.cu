/* Attention kernels of the cuda backend.
 *
 * cuk_attention: softmax(scale * Q K^T + mask) V in one pass over the keys
 * (online softmax, as FlashAttention), Tensor Cores through WMMA, for
 * bfloat16 / float16 storage with float32 accumulation. Q, K, V and the
 * output are read and written through strides, so the head transposes of
 * BERT-style graphs ([B, S, H, D] <-> [B, H, S, D]) cost nothing. A block
 * takes 64 query rows of one (batch, head); each of its 4 warps 16 rows.
 *
 * cuk_softmax_masked: softmax(x + mask) along rows, the mask broadcast by
 * strides: the float32 path's fusion of the additive attention mask. */
#include <mma.h>

#include "backends/cuda/cuda_device.cuh"

using namespace nvcuda;

#define TILE 64
#define PPITCH (TILE + 8) /* P tile pitch (16-bit elements) */
#define SPITCH (TILE + 4) /* score tile pitch (floats) */

template <typename T> __device__ __forceinline__ T from_f(float v);
template <> __device__ __forceinline__ __half from_f<__half>(float v) {
  return __float2half_rn(cuk_sat(v, CUK_F16_MAX));
}
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <typename T> __device__ __forceinline__ float to_f(T v);
template <> __device__ __forceinline__ float to_f<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float to_f<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

/* rows [row0, row0 + TILE) of a [len, D] matrix at base (row stride rs,
 * elements contiguous) into smem (pitch dp); rows past len are zeros. */
template <typename T>
__device__ void load_tile(T *dst, int dp, const T *base, long long rs, int row0, int len, int D,
                          bool vec) {
  if (vec) { /* 8 elements (16 bytes) at a time */
    int per = D / 8;
    for (int i = threadIdx.x; i < TILE * per; i += blockDim.x) {
      int r = i / per, c = (i % per) * 8;
      uint4 v = make_uint4(0, 0, 0, 0);
      if (row0 + r < len) v = *(const uint4 *)(base + (long long)(row0 + r) * rs + c);
      *(uint4 *)(dst + r * dp + c) = v;
    }
    return;
  }
  for (int i = threadIdx.x; i < TILE * D; i += blockDim.x) {
    int r = i / D, c = i % D;
    dst[r * dp + c] = row0 + r < len ? base[(long long)(row0 + r) * rs + c] : from_f<T>(0.0f);
  }
}

template <typename T> __global__ void __launch_bounds__(128) attn_kernel(cuk_attn p) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int D = p.D, dp = D + 8, op = D + 4;
  T *Qs = (T *)smem, *Ks = Qs + TILE * dp, *Vs = Ks + TILE * dp, *Ps = Vs + TILE * dp;
  float *Ss = (float *)(Ps + TILE * PPITCH), *Os = Ss + TILE * SPITCH;
  float *m = Os + TILE * op, *l = m + TILE, *al = l + TILE;
  const int b = blockIdx.z, h = blockIdx.y, q0 = blockIdx.x * TILE;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, w0 = warp * 16;
  const T *Q = (const T *)p.q + b * p.qb + h * p.qh;
  const T *K = (const T *)p.k + b * p.kb + h * p.kh;
  const T *V = (const T *)p.v + b * p.vb + h * p.vh;
  const T *M = p.mask ? (const T *)p.mask + (p.mw > 0 ? b % p.mw : b) * p.mb + h * p.mh : NULL;

  for (int i = threadIdx.x; i < TILE; i += blockDim.x) {
    m[i] = -INFINITY;
    l[i] = 0.0f;
  }
  for (int i = threadIdx.x; i < TILE * op; i += blockDim.x)
    Os[i] = 0.0f;
  load_tile<T>(Qs, dp, Q, p.qs, q0, p.S, D, p.vec);

  for (int k0 = 0; k0 < p.Sk; k0 += TILE) {
    __syncthreads(); /* the previous tile's K, V and P are no longer read */
    load_tile<T>(Ks, dp, K, p.ks, k0, p.Sk, D, p.vec);
    load_tile<T>(Vs, dp, V, p.vs, k0, p.Sk, D, p.vec);
    __syncthreads();

    /* S = Q K^T for this warp's 16 rows and the 64 keys of the tile */
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[TILE / 16];
    for (int j = 0; j < TILE / 16; j++)
      wmma::fill_fragment(acc[j], 0.0f);
    for (int d0 = 0; d0 < D; d0 += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
      wmma::load_matrix_sync(a, Qs + w0 * dp + d0, dp);
      for (int j = 0; j < TILE / 16; j++) {
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> kb;
        wmma::load_matrix_sync(kb, Ks + j * 16 * dp + d0, dp);
        wmma::mma_sync(acc[j], a, kb, acc[j]);
      }
    }
    for (int j = 0; j < TILE / 16; j++)
      wmma::store_matrix_sync(Ss + w0 * SPITCH + j * 16, acc[j], SPITCH, wmma::mem_row_major);
    __syncwarp();

    /* online softmax of the warp's rows: 2 columns per lane. The 16 rows
     * are independent: every score and mask value is loaded first (the mask
     * loads are global: issued together, not one latency per row), and the
     * unrolled rows let the compiler interleave their shuffle reductions. */
    float sv[16][2], mo[16];
#pragma unroll
    for (int rr = 0; rr < 16; rr++) {
      int r = w0 + rr, qi = q0 + r;
      mo[rr] = m[r];
#pragma unroll
      for (int c = 0; c < 2; c++) {
        int j = lane + 32 * c, kj = k0 + j;
        float v = Ss[r * SPITCH + j] * p.scale;
        if (M && qi < p.S && kj < p.Sk) v += to_f<T>(M[qi * p.mi + kj * p.mj]);
        sv[rr][c] = kj < p.Sk ? v : -INFINITY;
      }
    }
    __syncwarp(); /* every lane has read m[] before lane 0 updates it */
#pragma unroll
    for (int rr = 0; rr < 16; rr++) {
      int r = w0 + rr;
      float mx = fmaxf(sv[rr][0], sv[rr][1]);
      for (int o = 16; o > 0; o >>= 1)
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
      float m_new = fmaxf(mo[rr], mx);
      float ref = m_new == -INFINITY ? 0.0f : m_new; /* a row masked so far: no NaN */
      float e0 = __expf(sv[rr][0] - ref), e1 = __expf(sv[rr][1] - ref), sum = e0 + e1;
      for (int o = 16; o > 0; o >>= 1)
        sum += __shfl_xor_sync(0xffffffffu, sum, o);
      Ps[r * PPITCH + lane] = from_f<T>(e0);
      Ps[r * PPITCH + lane + 32] = from_f<T>(e1);
      if (lane == 0) {
        float a = __expf(mo[rr] - ref);
        l[r] = l[r] * a + sum;
        m[r] = m_new;
        al[r] = a;
      }
    }
    __syncwarp();
    for (int i = lane; i < 16 * D; i += 32) {
      int r = w0 + i / D;
      Os[r * op + i % D] *= al[r];
    }
    __syncwarp();

    /* O += P V */
    for (int d0 = 0; d0 < D; d0 += 16) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> o;
      wmma::load_matrix_sync(o, Os + w0 * op + d0, op, wmma::mem_row_major);
      for (int j0 = 0; j0 < TILE; j0 += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> pa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> vb;
        wmma::load_matrix_sync(pa, Ps + w0 * PPITCH + j0, PPITCH);
        wmma::load_matrix_sync(vb, Vs + j0 * dp + d0, dp);
        wmma::mma_sync(o, pa, vb, o);
      }
      wmma::store_matrix_sync(Os + w0 * op + d0, o, op, wmma::mem_row_major);
    }
    __syncwarp();
  }
  __syncthreads();
  T *O = (T *)p.o + b * p.ob + h * p.oh;
  for (int i = threadIdx.x; i < TILE * D; i += blockDim.x) {
    int r = i / D, c = i % D, qi = q0 + r;
    if (qi >= p.S) continue;
    float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
    O[(long long)qi * p.os + c] = from_f<T>(Os[r * op + c] * inv);
  }
}

static size_t attn_smem(int D) {
  size_t dp = D + 8, op = D + 4;
  return 3 * TILE * dp * 2 + TILE * PPITCH * 2 + TILE * SPITCH * 4 + TILE * op * 4 + 3 * TILE * 4;
}

extern "C" int cuk_attention_ok(int dt, int D) {
  return (dt == CUK_BF16 || dt == CUK_F16) && D >= 16 && D <= 128 && D % 16 == 0;
}

extern "C" cudaError_t cuk_attention_prepare(int dt, int D) {
  if (!cuk_attention_ok(dt, D)) return cudaErrorInvalidValue;
  int bytes = (int)attn_smem(128); /* the largest, once for all head sizes */
  cudaError_t e = cuk_flash_prepare(dt);
  if (e != cudaSuccess) return e;
  e = dt == CUK_BF16 ? cudaFuncSetAttribute(attn_kernel<__nv_bfloat16>,
                                            cudaFuncAttributeMaxDynamicSharedMemorySize, bytes)
                     : cudaFuncSetAttribute(attn_kernel<__half>,
                                            cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  return e;
}

extern "C" cudaError_t cuk_attention(cudaStream_t s, const cuk_attn *p) {
  if (p->flash && cuk_flash_ok(p)) return cuk_flash(s, p);
  if (!cuk_attention_ok(p->dt, p->D)) return cudaErrorInvalidValue;
  if (p->B <= 0 || p->H <= 0 || p->S <= 0) return cudaSuccess;
  if (p->B > 65535 || p->H > 65535) return cudaErrorInvalidValue;
  dim3 grid((unsigned)((p->S + TILE - 1) / TILE), (unsigned)p->H, (unsigned)p->B);
  size_t bytes = attn_smem(p->D);
  if (p->dt == CUK_BF16)
    attn_kernel<__nv_bfloat16><<<grid, 128, bytes, s>>>(*p);
  else
    attn_kernel<__half><<<grid, 128, bytes, s>>>(*p);
  return cudaGetLastError();
}

/* ---- masked softmax (float path) ----------------------------------------- */

__global__ void softmax_masked_rows(int dt, const void *x, void *y, int64_t len, const void *mask,
                                    int64_t H, int64_t S, int64_t mb, int64_t mh, int64_t mi,
                                    int64_t mj, int64_t mw) {
  __shared__ float sh[32];
  int64_t r = blockIdx.x, base = r * len;
  int64_t i = r % S, hh = (r / S) % H, bb = r / (S * H);
  if (mw > 0) bb %= mw;
  int64_t mbase = bb * mb + hh * mh + i * mi;
  float mx = -INFINITY;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x)
    mx = fmaxf(mx, cuk_ldf(x, dt, base + j) + cuk_ldf(mask, dt, mbase + j * mj));
  mx = cuk_block_max(mx, sh);
  float ref = mx == -INFINITY ? 0.0f : mx, sum = 0.0f;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x)
    sum += expf(cuk_ldf(x, dt, base + j) + cuk_ldf(mask, dt, mbase + j * mj) - ref);
  sum = cuk_block_sum(sum, sh);
  float inv = 1.0f / sum;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x)
    cuk_stf(y, dt, base + j,
            expf(cuk_ldf(x, dt, base + j) + cuk_ldf(mask, dt, mbase + j * mj) - ref) * inv);
}

/* 16-bit rows of len % 8 == 0, len <= 1024, a key-contiguous mask (mj = 1):
 * one warp per row, each lane keeping up to 4 chunks of 8 in registers, so
 * x and the mask are read once, in 16-byte accesses. */
template <typename T>
__global__ void softmax_masked_warp(const T *x, T *y, int64_t rows, int len, const T *mask,
                                    int64_t H, int64_t S, int64_t mb, int64_t mh, int64_t mi,
                                    int64_t mw) {
  int64_t r = (int64_t)blockIdx.x * (blockDim.x / 32) + (threadIdx.x >> 5);
  int lane = threadIdx.x & 31;
  if (r >= rows) return;
  int64_t i = r % S, hh = (r / S) % H, bb = r / (S * H);
  if (mw > 0) bb %= mw;
  const T *xr = x + r * len, *mr = mask + bb * mb + hh * mh + i * mi;
  float v[4][8], mx = -INFINITY;
#pragma unroll
  for (int c = 0; c < 4; c++) {
    int j = (c * 32 + lane) * 8;
    if (j < len) {
      float mk[8];
      cuk_ld8(xr + j, v[c]);
      cuk_ld8(mr + j, mk);
#pragma unroll
      for (int k = 0; k < 8; k++) {
        v[c][k] += mk[k];
        mx = fmaxf(mx, v[c][k]);
      }
    }
  }
  for (int o = 16; o > 0; o >>= 1)
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  float ref = mx == -INFINITY ? 0.0f : mx, sum = 0.0f;
#pragma unroll
  for (int c = 0; c < 4; c++)
    if ((c * 32 + lane) * 8 < len)
#pragma unroll
      for (int k = 0; k < 8; k++)
        sum += (v[c][k] = __expf(v[c][k] - ref));
  for (int o = 16; o > 0; o >>= 1)
    sum += __shfl_xor_sync(0xffffffffu, sum, o);
  float inv = 1.0f / sum;
#pragma unroll
  for (int c = 0; c < 4; c++) {
    int j = (c * 32 + lane) * 8;
    if (j < len) {
#pragma unroll
      for (int k = 0; k < 8; k++)
        v[c][k] *= inv;
      cuk_st8(y + r * len + j, v[c]);
    }
  }
}

extern "C" cudaError_t cuk_softmax_masked(cudaStream_t s, int dt, const void *x, void *y,
                                          int64_t rows, int64_t len, const void *mask, int64_t H,
                                          int64_t S, int64_t mb, int64_t mh, int64_t mi,
                                          int64_t mj, int64_t mw) {
  if (rows <= 0 || len <= 0) return cudaSuccess;
  if (rows > 2147483647 || H <= 0 || S <= 0) return cudaErrorInvalidValue;
  if ((dt == CUK_BF16 || dt == CUK_F16) && len % 8 == 0 && len <= 1024 && mj == 1 && mb % 8 == 0 &&
      mh % 8 == 0 && mi % 8 == 0 && cuk_al16(x, y, mask)) {
    unsigned blocks = (unsigned)((rows + 7) / 8);
    if (dt == CUK_BF16)
      softmax_masked_warp<__nv_bfloat16>
          <<<blocks, 256, 0, s>>>((const __nv_bfloat16 *)x, (__nv_bfloat16 *)y, rows, (int)len,
                                  (const __nv_bfloat16 *)mask, H, S, mb, mh, mi, mw);
    else
      softmax_masked_warp<__half><<<blocks, 256, 0, s>>>(
          (const __half *)x, (__half *)y, rows, (int)len, (const __half *)mask, H, S, mb, mh, mi, mw);
    return cudaGetLastError();
  }
  int64_t t = (len + 31) / 32 * 32;
  int threads = t > 256 ? 256 : (int)t;
  softmax_masked_rows<<<(unsigned)rows, threads, 0, s>>>(dt, x, y, len, mask, H, S, mb, mh, mi, mj, mw);
  return cudaGetLastError();
}
