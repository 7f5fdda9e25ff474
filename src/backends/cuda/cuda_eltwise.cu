/* Elementwise kernels of the cuda backend: n-ary broadcast elementwise ops
 * with a fused activation, the per-channel epilogue of GEMMs and
 * convolutions, strided copies (transpose, slice, expand, layout changes),
 * gather and fill. */
#include "backends/cuda/cuda_copy.h"
#include "backends/cuda/cuda_device.cuh"

/* ---- n-ary elementwise ------------------------------------------------- */

__device__ __forceinline__ float binary_f(int op, float a, float b) {
  switch (op) {
  case CUK_ADD: return a + b;
  case CUK_SUB: return a - b;
  case CUK_MUL: return a * b;
  case CUK_DIV: return a / b;
  case CUK_POW: return powf(a, b);
  case CUK_MAX: return isnan(a) || isnan(b) ? a + b : fmaxf(a, b);
  case CUK_MIN: return isnan(a) || isnan(b) ? a + b : fminf(a, b);
  case CUK_PRELU: return a < 0.0f ? b * a : a;
  case CUK_EQ: return a == b;
  case CUK_LT: return a < b;
  case CUK_GT: return a > b;
  case CUK_LE: return a <= b;
  case CUK_GE: return a >= b;
  case CUK_AND: return (a != 0.0f) && (b != 0.0f);
  case CUK_OR: return (a != 0.0f) || (b != 0.0f);
  case CUK_XOR: return (a != 0.0f) != (b != 0.0f);
  case CUK_FMOD: return fmodf(a, b);
  case CUK_MOD: {
    float r = fmodf(a, b);
    return r != 0.0f && ((r < 0.0f) != (b < 0.0f)) ? r + b : r;
  }
  default: return a;
  }
}

__device__ __forceinline__ long long binary_i(int op, long long a, long long b) {
  switch (op) {
  case CUK_ADD: return a + b;
  case CUK_SUB: return a - b;
  case CUK_MUL: return a * b;
  case CUK_DIV: return b ? a / b : 0;
  case CUK_MAX: return a > b ? a : b;
  case CUK_MIN: return a < b ? a : b;
  case CUK_EQ: return a == b;
  case CUK_LT: return a < b;
  case CUK_GT: return a > b;
  case CUK_LE: return a <= b;
  case CUK_GE: return a >= b;
  case CUK_AND: return a && b;
  case CUK_OR: return a || b;
  case CUK_XOR: return (a != 0) != (b != 0);
  case CUK_FMOD: return b ? a % b : 0;
  case CUK_MOD: {
    long long r = b ? a % b : 0;
    return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
  }
  case CUK_POW: {
    long long r = 1;
    for (long long e = 0; e < b && e < 64; e++)
      r *= a;
    return r;
  }
  default: return a;
  }
}

__device__ __forceinline__ long long unary_i(int op, long long x) {
  switch (op) {
  case CUK_NEG: return -x;
  case CUK_ABS: return x < 0 ? -x : x;
  case CUK_NOT: return !x;
  case CUK_SIGN: return x > 0 ? 1 : x < 0 ? -1 : 0;
  case CUK_RELU: return x < 0 ? 0 : x;
  default: return x;
  }
}

/* I: the index type. 32-bit (unsigned) where every offset fits (ew_fits32):
 * the coordinate arithmetic is a division per axis per element, and 64-bit
 * division is emulated, several times slower (the fp32 NCHW image to bf16
 * NHWC conversion at batch 32 took 0.95 ms of shufflenet's 2.6 on an H200). */
template <typename I> __global__ void ew_kernel(cuk_ew p) {
  I n = (I)p.n, stride = (I)gridDim.x * blockDim.x;
  for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    I off0 = 0, off1 = 0, off2 = 0, r = i;
    for (int d = p.rank - 1; d >= 0; d--) {
      I dim = (I)p.dims[d], c = r % dim;
      r /= dim;
      off0 += c * (I)p.st[0][d];
      off1 += c * (I)p.st[1][d];
      off2 += c * (I)p.st[2][d];
    }
    if (p.int_math) {
      long long a = cuk_ldi(p.in[0], p.dt[0], off0), v;
      if (p.op == CUK_WHERE)
        v = a ? cuk_ldi(p.in[1], p.dt[1], off1) : cuk_ldi(p.in[2], p.dt[2], off2);
      else if (p.op >= CUK_ADD)
        v = binary_i(p.op, a, cuk_ldi(p.in[1], p.dt[1], off1));
      else
        v = unary_i(p.op, a);
      cuk_sti(p.out, p.out_dt, (int64_t)i, v);
      continue;
    }
    float a = cuk_ldf(p.in[0], p.dt[0], off0), v;
    if (p.op == CUK_WHERE)
      v = a != 0.0f ? cuk_ldf(p.in[1], p.dt[1], off1) : cuk_ldf(p.in[2], p.dt[2], off2);
    else if (p.op >= CUK_ADD) {
      float b = cuk_ldf(p.in[1], p.dt[1], off1);
      if (p.op == CUK_ADD || p.op == CUK_SUB) b *= p.beta;
      v = binary_f(p.op, a, b);
    } else
      v = cuk_unary(p.op, a, p.p[0], p.p[1]);
    if (p.act != CUK_COPY) v = cuk_unary(p.act, v, p.ap[0], p.ap[1]);
    cuk_stf(p.out, p.out_dt, (int64_t)i, v);
  }
}

/* A copy (a cast when the types differ) that transposes the two inner axes
 * of [B, R, C] (output contiguous; input element (b, r, c) at b * sb + r +
 * c * sc): NCHW to NHWC and back, with the conversion to or from 16 bits
 * on the way. Few columns (an image's 3 channels): one thread per row
 * reads its C inputs, each coalesced across the warp, and writes its C
 * adjacent outputs. More: 32 x 32 tiles through shared memory. */
__global__ void tr_rows_kernel(const void *in, int in_dt, void *out, int out_dt, int64_t B, int R,
                               int C, int64_t sb, int64_t sc) {
  int64_t rows = B * R, stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < rows; i += stride) {
    int64_t b = i / R, r = i - b * R, src = b * sb + r;
    for (int c = 0; c < C; c++)
      cuk_stf(out, out_dt, i * C + c, cuk_ldf(in, in_dt, src + c * sc));
  }
}

__global__ void tr_tile_kernel(const void *in, int in_dt, void *out, int out_dt, int R, int C,
                               int64_t sb, int64_t sc) {
  __shared__ float tile[32][33];
  int64_t b = blockIdx.z;
  int r0 = blockIdx.y * 32, c0 = blockIdx.x * 32, tx = threadIdx.x;
  for (int j = threadIdx.y; j < 32; j += blockDim.y) {
    int c = c0 + j, r = r0 + tx;
    if (c < C && r < R) tile[j][tx] = cuk_ldf(in, in_dt, b * sb + r + (int64_t)c * sc);
  }
  __syncthreads();
  for (int j = threadIdx.y; j < 32; j += blockDim.y) {
    int r = r0 + j, c = c0 + tx;
    if (r < R && c < C) cuk_stf(out, out_dt, (b * R + r) * C + c, tile[tx][j]);
  }
}

/* A binary float op on 16-bit tensors, 8 elements per thread, where input
 * k reads element i % per[k] (per = n: the same shape as the output; less:
 * a broadcast over leading axes, like a position embedding added to a
 * batch). */
template <typename T> __global__ void ew_bin_vec8(cuk_ew p, int64_t per0, int64_t per1) {
  int64_t n8 = p.n / 8, stride = (int64_t)gridDim.x * blockDim.x;
  const T *a = (const T *)p.in[0], *b = (const T *)p.in[1];
  T *y = (T *)p.out;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n8; i += stride) {
    float va[8], vb[8];
    cuk_ld8(a + (i * 8) % per0, va);
    cuk_ld8(b + (i * 8) % per1, vb);
#pragma unroll
    for (int k = 0; k < 8; k++) {
      float bb = p.op == CUK_ADD || p.op == CUK_SUB ? vb[k] * p.beta : vb[k];
      float v = binary_f(p.op, va[k], bb);
      va[k] = p.act != CUK_COPY ? cuk_unary(p.act, v, p.ap[0], p.ap[1]) : v;
    }
    cuk_st8(y + i * 8, va);
  }
}

/* A binary float op on 16-bit [N, L, C] (C % 8 == 0) of which input bk is
 * broadcast over L, [N, 1, C]: squeeze-excite's x * s[N, C, 1, 1] on a
 * channels-last x at batch > 1 (at batch 1 it has a period, ew_bin_vec8). */
template <typename T> __global__ void ew_bin_nlc_vec8(cuk_ew p, int bk, int64_t C, int64_t img) {
  int64_t n8 = p.n / 8, stride = (int64_t)gridDim.x * blockDim.x;
  const T *a = (const T *)p.in[0], *b = (const T *)p.in[1];
  T *y = (T *)p.out;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n8; i += stride) {
    int64_t e = i * 8, s = e / img * C + e % C;
    float va[8], vb[8];
    cuk_ld8(a + (bk == 0 ? s : e), va);
    cuk_ld8(b + (bk == 1 ? s : e), vb);
#pragma unroll
    for (int k = 0; k < 8; k++) {
      float bb = p.op == CUK_ADD || p.op == CUK_SUB ? vb[k] * p.beta : vb[k];
      float v = binary_f(p.op, va[k], bb);
      va[k] = p.act != CUK_COPY ? cuk_unary(p.act, v, p.ap[0], p.ap[1]) : v;
    }
    cuk_st8(y + e, va);
  }
}

/* 8 contiguous values of a float / 16-bit float tensor as float32. */
__device__ __forceinline__ void ld8f(const void *p, int dt, int64_t i, float *v) {
  if (dt == CUK_F32) {
    float4 a = ((const float4 *)p)[i / 4], b = ((const float4 *)p)[i / 4 + 1];
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
  } else if (dt == CUK_BF16) {
    cuk_ld8((const __nv_bfloat16 *)p + i, v);
  } else {
    cuk_ld8((const __half *)p + i, v);
  }
}
__device__ __forceinline__ void st8f(void *p, int dt, int64_t i, const float *v) {
  if (dt == CUK_F32) {
    ((float4 *)p)[i / 4] = make_float4(v[0], v[1], v[2], v[3]);
    ((float4 *)p)[i / 4 + 1] = make_float4(v[4], v[5], v[6], v[7]);
  } else if (dt == CUK_BF16) {
    cuk_st8((__nv_bfloat16 *)p + i, v);
  } else {
    cuk_st8((__half *)p + i, v);
  }
}

/* A unary float op (a type conversion under CUK_COPY) on a contiguous
 * input, 8 elements per thread: the float32 copy of a 16-bit output is one
 * such pass (BERT-base b32: 12.6 MB). */
__global__ void ew_un_vec8(cuk_ew p) {
  int64_t n8 = p.n / 8, stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n8; i += stride) {
    float v[8];
    ld8f(p.in[0], p.dt[0], i * 8, v);
#pragma unroll
    for (int k = 0; k < 8; k++) {
      float x = p.op == CUK_COPY ? v[k] : cuk_unary(p.op, v[k], p.p[0], p.p[1]);
      v[k] = p.act != CUK_COPY ? cuk_unary(p.act, x, p.ap[0], p.ap[1]) : x;
    }
    st8f(p.out, p.out_dt, i * 8, v);
  }
}

static bool float_type(int dt) { return dt == CUK_F32 || dt == CUK_BF16 || dt == CUK_F16; }

/* Input k's elements repeat with this period along the flat output index
 * (its strides are the contiguous ones over trailing axes and 0 over the
 * leading ones), or 0 when they do not. */
static int64_t ew_period(const cuk_ew *p, int k) {
  int64_t run = 1;
  int d = p->rank - 1;
  for (; d >= 0 && p->st[k][d] == (p->dims[d] == 1 ? p->st[k][d] : run); d--)
    run *= p->dims[d];
  for (; d >= 0; d--)
    if (p->st[k][d] != 0 && p->dims[d] != 1) return 0;
  return run;
}

/* Every coordinate and offset of p fits an unsigned 32-bit index (strides
 * are never negative here: broadcasts are 0, views positive). */
static bool ew_fits32(const cuk_ew *p) {
  const int64_t lim = 0x7fffffff;
  if (p->n > lim) return false;
  for (int k = 0; k < p->n_in; k++) {
    int64_t hi = 0;
    for (int d = 0; d < p->rank; d++) {
      if (p->dims[d] > lim || p->st[k][d] < 0 || p->st[k][d] > lim) return false;
      hi += (p->dims[d] - 1) * p->st[k][d];
      if (hi > lim) return false;
    }
  }
  return true;
}

/* A one-input copy whose input, its axes merged where its strides allow,
 * is a transpose of the two inner axes of [B, R, C]: run it on the
 * transpose kernels. false: not that shape (nothing launched). */
static bool ew_transpose(cudaStream_t s, const cuk_ew *p) {
  int64_t d[CUK_MAX_DIMS], st[CUK_MAX_DIMS];
  int r = 0;
  for (int k = 0; k < p->rank; k++) {
    if (p->dims[k] == 1) continue;
    if (r > 0 && st[r - 1] == p->st[0][k] * p->dims[k]) {
      d[r - 1] *= p->dims[k];
      st[r - 1] = p->st[0][k];
      continue;
    }
    d[r] = p->dims[k];
    st[r++] = p->st[0][k];
  }
  if (r == 2) { /* B = 1 */
    d[2] = d[1], st[2] = st[1], d[1] = d[0], st[1] = st[0];
    d[0] = 1, st[0] = 0;
    r = 3;
  }
  if (r != 3 || st[1] != 1 || st[2] <= 1 || st[0] < 0 || d[1] > 0x7fffffff || d[2] > 0x7fffffff)
    return false;
  int64_t B = d[0];
  int R = (int)d[1], C = (int)d[2];
  if (C <= 16) {
    tr_rows_kernel<<<cuk_blocks(B * R, 256), 256, 0, s>>>(p->in[0], p->dt[0], p->out, p->out_dt, B,
                                                          R, C, st[0], st[2]);
    return true;
  }
  if (B > 65535) return false;
  dim3 grid((unsigned)((C + 31) / 32), (unsigned)((R + 31) / 32), (unsigned)B);
  tr_tile_kernel<<<grid, dim3(32, 8), 0, s>>>(p->in[0], p->dt[0], p->out, p->out_dt, R, C, st[0],
                                              st[2]);
  return true;
}

extern "C" cudaError_t cuk_eltwise(cudaStream_t s, const cuk_ew *p) {
  if (p->n <= 0) return cudaSuccess;
  int dt = p->out_dt;
  if (p->n_in == 2 && !p->int_math && p->op >= CUK_ADD && p->op != CUK_WHERE &&
      (dt == CUK_BF16 || dt == CUK_F16) && p->dt[0] == dt && p->dt[1] == dt && p->n % 8 == 0 &&
      cuk_al16(p->in[0], p->in[1], p->out)) {
    int64_t per0 = ew_period(p, 0), per1 = ew_period(p, 1);
    if (per0 > 0 && per1 > 0 && per0 % 8 == 0 && per1 % 8 == 0) {
      unsigned b = cuk_blocks(p->n / 8, 256);
      if (dt == CUK_BF16)
        ew_bin_vec8<__nv_bfloat16><<<b, 256, 0, s>>>(*p, per0, per1);
      else
        ew_bin_vec8<__half><<<b, 256, 0, s>>>(*p, per0, per1);
      return cudaGetLastError();
    }
    int64_t C = p->dims[p->rank - 1];
    if (p->rank == 3 && C % 8 == 0) {
      int bk = -1;
      for (int k = 0; k < 2; k++)
        if (p->st[k][0] == C && p->st[k][1] == 0 && p->st[k][2] == 1 && ew_period(p, 1 - k) == p->n)
          bk = k;
      if (bk >= 0) {
        unsigned b = cuk_blocks(p->n / 8, 256);
        int64_t img = p->dims[1] * C;
        if (dt == CUK_BF16)
          ew_bin_nlc_vec8<__nv_bfloat16><<<b, 256, 0, s>>>(*p, bk, C, img);
        else
          ew_bin_nlc_vec8<__half><<<b, 256, 0, s>>>(*p, bk, C, img);
        return cudaGetLastError();
      }
    }
  }
  if (p->n_in == 1 && !p->int_math && p->op < CUK_ADD && float_type(dt) && float_type(p->dt[0]) &&
      p->n % 8 == 0 && cuk_al16(p->in[0], p->out) && ew_period(p, 0) == p->n) {
    ew_un_vec8<<<cuk_blocks(p->n / 8, 256), 256, 0, s>>>(*p);
    return cudaGetLastError();
  }
  if (p->n_in == 1 && !p->int_math && p->op == CUK_COPY && p->act == CUK_COPY && float_type(dt) &&
      float_type(p->dt[0]) && ew_transpose(s, p))
    return cudaGetLastError();
  if (ew_fits32(p))
    ew_kernel<uint32_t><<<cuk_blocks(p->n, 256), 256, 0, s>>>(*p);
  else
    ew_kernel<int64_t><<<cuk_blocks(p->n, 256), 256, 0, s>>>(*p);
  return cudaGetLastError();
}

/* ---- per-channel epilogue ---------------------------------------------- */

__global__ void epi_kernel(cuk_epi p) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += stride) {
    int64_t c = (i / p.inner) % p.C;
    float v = cuk_ldf(p.x, p.dt, i);
    if (p.scale) v *= p.scale[c];
    if (p.shift) v += p.shift[c];
    if (p.z) v += cuk_ldf(p.z, p.dt, i);
    cuk_stf(p.y, p.dt, i, cuk_unary(p.act, v, p.ap[0], p.ap[1]));
  }
}

/* The common GEMM epilogue (bias + activation over [rows, C] in 16-bit
 * storage): 8 elements per thread in 16-byte accesses, one channel index per
 * 8 (C % 8 == 0), no 64-bit division per element. */
template <typename T> __global__ void epi_vec8(cuk_epi p) {
  int64_t n8 = p.n / 8, stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n8; i += stride) {
    int64_t c0 = (i * 8) % p.C;
    float v[8], z[8];
    cuk_ld8((const T *)p.x + i * 8, v);
    if (p.z) cuk_ld8((const T *)p.z + i * 8, z);
#pragma unroll
    for (int k = 0; k < 8; k++) {
      float x = v[k];
      if (p.scale) x *= p.scale[c0 + k];
      if (p.shift) x += p.shift[c0 + k];
      if (p.z) x += z[k];
      v[k] = cuk_unary(p.act, x, p.ap[0], p.ap[1]);
    }
    cuk_st8((T *)p.y + i * 8, v);
  }
}

extern "C" cudaError_t cuk_epilogue(cudaStream_t s, const cuk_epi *p) {
  if (p->n <= 0) return cudaSuccess;
  bool vec = (p->dt == CUK_BF16 || p->dt == CUK_F16) && p->inner == 1 && p->C % 8 == 0 &&
             p->n % 8 == 0 && cuk_al16(p->x, p->y, p->z);
  if (vec && p->dt == CUK_BF16)
    epi_vec8<__nv_bfloat16><<<cuk_blocks(p->n / 8, 256), 256, 0, s>>>(*p);
  else if (vec)
    epi_vec8<__half><<<cuk_blocks(p->n / 8, 256), 256, 0, s>>>(*p);
  else
    epi_kernel<<<cuk_blocks(p->n, 256), 256, 0, s>>>(*p);
  return cudaGetLastError();
}

/* ---- strided copy -------------------------------------------------------- */

/* I: the index type, int where every offset fits (cuk_copy_fits32). */
template <typename T, typename I> __global__ void copy_kernel(cuk_copy p) {
  I n = (I)p.n, stride = (I)gridDim.x * (I)blockDim.x;
  I dims[CUK_MAX_DIMS], st[CUK_MAX_DIMS];
  int rank = p.rank;
  for (int d = 0; d < rank; d++)
    dims[d] = (I)p.dims[d], st[d] = (I)p.st[d];
  const T *in = (const T *)p.in;
  T *out = (T *)p.out;
  for (I i = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; i < n; i += stride) {
    I off = (I)p.base, r = i;
    for (int d = rank - 1; d >= 0; d--) {
      off += (r % dims[d]) * st[d];
      r /= dims[d];
    }
    out[i] = in[off];
  }
}

extern "C" cudaError_t cuk_strided_copy(cudaStream_t s, const cuk_copy *p) {
  if (p->n <= 0) return cudaSuccess;
  if (p->rank < 1 || p->rank > CUK_MAX_DIMS) return cudaErrorInvalidValue;
  cuk_copy q = *p;
  q.esize = cuk_copy_widen(q.esize, q.rank, &q.n, &q.base, q.dims, q.st, (uintptr_t)q.in,
                           (uintptr_t)q.out);
  bool i32 = cuk_copy_fits32(q.rank, q.n, q.base, q.dims, q.st);
  unsigned b = cuk_blocks(q.n, 256);
#define COPY(T)                                                                                    \
  do {                                                                                             \
    if (i32)                                                                                       \
      copy_kernel<T, int><<<b, 256, 0, s>>>(q);                                                    \
    else                                                                                           \
      copy_kernel<T, int64_t><<<b, 256, 0, s>>>(q);                                                \
  } while (0)
  switch (q.esize) {
  case 1: COPY(uint8_t); break;
  case 2: COPY(uint16_t); break;
  case 4: COPY(uint32_t); break;
  case 8: COPY(unsigned long long); break;
  case 16: COPY(uint4); break;
  default: return cudaErrorInvalidValue;
  }
#undef COPY
  return cudaGetLastError();
}

/* ---- gather -------------------------------------------------------------- */

template <typename T>
__global__ void gather_kernel(const T *data, const void *idx, int idx_dt, T *out, int64_t outer,
                              int64_t axis_len, int64_t n_idx, int64_t inner, int *err) {
  int64_t n = outer * n_idx * inner, stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    int64_t k = i % inner, j = (i / inner) % n_idx, o = i / (inner * n_idx);
    long long x = cuk_ldi(idx, idx_dt, j);
    if (x < 0) x += axis_len;
    if (x < 0 || x >= axis_len) {
      *err = 1;
      out[i] = T();
      continue;
    }
    out[i] = data[(o * axis_len + x) * inner + k];
  }
}

extern "C" cudaError_t cuk_gather(cudaStream_t s, int esize, const void *data, const void *idx,
                                  int idx_dt, void *out, int64_t outer, int64_t axis_len,
                                  int64_t n_idx, int64_t inner, int *err) {
  int64_t n = outer * n_idx * inner;
  if (n <= 0) return cudaSuccess;
  if (esize < 16 && (inner * esize) % 16 == 0 && cuk_al16(data, out)) { /* rows of 16-byte units */
    inner = inner * esize / 16;
    esize = 16;
    n = outer * n_idx * inner;
  }
  unsigned b = cuk_blocks(n, 256);
#define GATHER(T)                                                                                  \
  gather_kernel<T><<<b, 256, 0, s>>>((const T *)data, idx, idx_dt, (T *)out, outer, axis_len,      \
                                     n_idx, inner, err)
  switch (esize) {
  case 1: GATHER(uint8_t); break;
  case 2: GATHER(uint16_t); break;
  case 4: GATHER(uint32_t); break;
  case 8: GATHER(unsigned long long); break;
  case 16: GATHER(uint4); break;
  default: return cudaErrorInvalidValue;
  }
#undef GATHER
  return cudaGetLastError();
}

/* ---- fill ---------------------------------------------------------------- */

__global__ void fill_kernel(int dt, void *y, int64_t n, double v) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    if (dt == CUK_I64 || dt == CUK_I32 || dt == CUK_I8 || dt == CUK_U8 || dt == CUK_BOOL)
      cuk_sti(y, dt, i, (long long)v);
    else
      cuk_stf(y, dt, i, (float)v);
  }
}

extern "C" cudaError_t cuk_fill(cudaStream_t s, int dt, void *y, int64_t n, double v) {
  if (n <= 0) return cudaSuccess;
  fill_kernel<<<cuk_blocks(n, 256), 256, 0, s>>>(dt, y, n, v);
  return cudaGetLastError();
}
