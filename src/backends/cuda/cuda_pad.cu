/* Kernels for the data-movement and normalisation ops the suite's models
 * partitioned to native before (docs/benchmarks-gpu.md, Round 8): Pad
 * (swin_t), Resize (deeplabv3) and InstanceNormalization (wav2vec2).
 * Semantics follow the reference (src/ops); floats compute in float32. */
#include "backends/cuda/cuda_device.cuh"
#include "backends/cuda/cuda_inorm.h"

/* ---- Pad ------------------------------------------------------------------- */

/* Source coordinate of output coordinate o on an axis of len inputs that
 * starts `begin` outputs after the padding; -1: the constant. */
__device__ __forceinline__ int64_t pad_src(int mode, int64_t o, int64_t begin, int64_t len) {
  int64_t c = o - begin;
  if (c >= 0 && c < len) return c;
  if (mode == 0 || len <= 0) return -1;
  if (mode == 2) return c < 0 ? 0 : len - 1; /* edge */
  if (mode == 3) {                           /* wrap */
    c %= len;
    return c < 0 ? c + len : c;
  }
  if (len == 1) return 0; /* reflect */
  int64_t period = 2 * (len - 1);
  c %= period;
  if (c < 0) c += period;
  return c >= len ? period - c : c;
}

template <typename T> __global__ void pad_kernel(cuk_pad p, T cval) {
  const T *in = (const T *)p.in;
  T *out = (T *)p.out;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < p.n;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t r = i, src = 0, mul = 1;
    bool inside = true;
    for (int k = p.rank - 1; k >= 0; k--) {
      int64_t o = r % p.odims[k];
      r /= p.odims[k];
      int64_t c = pad_src(p.mode, o, p.begin[k], p.idims[k]);
      if (c < 0) inside = false;
      src += c * mul;
      mul *= p.idims[k];
    }
    out[i] = inside ? in[src] : cval;
  }
}

extern "C" cudaError_t cuk_pad_run(cudaStream_t s, const cuk_pad *p) {
  if (p->n <= 0) return cudaSuccess;
  if (p->rank < 1 || p->rank > CUK_MAX_DIMS) return cudaErrorInvalidValue;
  unsigned b = cuk_blocks(p->n, 256);
  switch (p->esize) {
  case 1: pad_kernel<uint8_t><<<b, 256, 0, s>>>(*p, (uint8_t)p->cval); break;
  case 2: pad_kernel<uint16_t><<<b, 256, 0, s>>>(*p, (uint16_t)p->cval); break;
  case 4: pad_kernel<uint32_t><<<b, 256, 0, s>>>(*p, (uint32_t)p->cval); break;
  case 8: pad_kernel<unsigned long long><<<b, 256, 0, s>>>(*p, (unsigned long long)p->cval); break;
  default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

/* ---- Resize ------------------------------------------------------------------ */

/* Input coordinate of output coordinate o (ONNX coordinate_transformation_mode). */
__device__ __forceinline__ float rs_coord(int coord, int64_t o, float scale, int64_t in_len,
                                          float len) {
  float x = (float)o;
  switch (coord) {
  case CUK_RS_HALF_PIXEL: return (x + 0.5f) / scale - 0.5f;
  case CUK_RS_PYTORCH_HALF_PIXEL: return len > 1.0f ? (x + 0.5f) / scale - 0.5f : 0.0f;
  case CUK_RS_ALIGN_CORNERS: return len == 1.0f ? 0.0f : x * (float)(in_len - 1) / (len - 1.0f);
  default: return x / scale; /* asymmetric */
  }
}

__device__ __forceinline__ int64_t rs_nearest(int mode, float x, int64_t len) {
  int64_t r;
  switch (mode) { /* as the reference (src/ops/image_resize.c) */
  case CUK_RS_FLOOR: r = (int64_t)floorf(x); break;
  case CUK_RS_CEIL: r = (int64_t)ceilf(x); break;
  case CUK_RS_PREFER_CEIL: r = (int64_t)floorf(x + 0.5f); break;
  default: r = (int64_t)ceilf(x - 0.5f); break; /* round_prefer_floor */
  }
  return r < 0 ? 0 : r >= len ? len - 1 : r;
}

/* One thread per output element of [NC, OH, OW]. */
__global__ void resize_kernel(cuk_resize p) {
  int64_t n = p.NC * p.OH * p.OW;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t ow = i % p.OW, oh = (i / p.OW) % p.OH, nc = i / (p.OW * p.OH);
    int64_t base = nc * p.H * p.W;
    float yh = rs_coord(p.coord, oh, p.sh, p.H, p.lh), yw = rs_coord(p.coord, ow, p.sw, p.W, p.lw);
    float v;
    if (p.mode == 0) {
      v = cuk_ldf(p.x, p.dt,
                  base + rs_nearest(p.nearest, yh, p.H) * p.W + rs_nearest(p.nearest, yw, p.W));
    } else { /* linear: outside [0, len - 1] reads the edge */
      yh = fminf(fmaxf(yh, 0.0f), (float)(p.H - 1));
      yw = fminf(fmaxf(yw, 0.0f), (float)(p.W - 1));
      int64_t h0 = (int64_t)floorf(yh), w0 = (int64_t)floorf(yw);
      int64_t h1 = h0 + 1 < p.H ? h0 + 1 : h0, w1 = w0 + 1 < p.W ? w0 + 1 : w0;
      float ah = yh - (float)h0, aw = yw - (float)w0;
      float a = cuk_ldf(p.x, p.dt, base + h0 * p.W + w0),
            b = cuk_ldf(p.x, p.dt, base + h0 * p.W + w1);
      float c = cuk_ldf(p.x, p.dt, base + h1 * p.W + w0),
            d = cuk_ldf(p.x, p.dt, base + h1 * p.W + w1);
      v = (a * (1.0f - aw) + b * aw) * (1.0f - ah) + (c * (1.0f - aw) + d * aw) * ah;
    }
    cuk_stf(p.y, p.dt, i, v);
  }
}

extern "C" cudaError_t cuk_resize_run(cudaStream_t s, const cuk_resize *p) {
  int64_t n = p->NC * p->OH * p->OW;
  if (n <= 0) return cudaSuccess;
  if (p->H <= 0 || p->W <= 0) return cudaErrorInvalidValue;
  resize_kernel<<<cuk_blocks(n, 256), 256, 0, s>>>(*p);
  return cudaGetLastError();
}

/* ---- InstanceNormalization --------------------------------------------------- */

/* One block per row (n, c): mean and variance over the row's cols elements
 * (two passes, as the reference), then y = act((x - mean) * rsqrt(var +
 * eps) * scale[c] + bias[c]). Rows of up to PER * blockDim.x elements are
 * read once into registers (wav2vec2's 3199 at 256 threads x 16): the two
 * statistics passes and the output then cost no more reads of x, which
 * makes the step one read and one write of the tensor. PER == 0: rows of
 * any length, read three times (L1/L2 hits after the first). */
template <int PER>
__global__ void instnorm_kernel(int dt, const void *x, void *y, int64_t cols, int64_t C,
                                const float *scale, const float *bias, float eps, int act, float p0,
                                float p1) {
  __shared__ float sh[32];
  int64_t row = blockIdx.x, base = row * cols, c = row % C;
  float v[PER > 0 ? PER : 1];
  float sum = 0.0f;
  if (PER > 0) {
#pragma unroll
    for (int k = 0; k < PER; k++) {
      int64_t j = threadIdx.x + (int64_t)k * blockDim.x;
      v[k] = j < cols ? cuk_ldf(x, dt, base + j) : 0.0f;
      sum += v[k];
    }
  } else {
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
      sum += cuk_ldf(x, dt, base + j);
  }
  float mean = cuk_block_sum(sum, sh) / (float)cols;
  float q = 0.0f;
  if (PER > 0) {
#pragma unroll
    for (int k = 0; k < PER; k++) {
      int64_t j = threadIdx.x + (int64_t)k * blockDim.x;
      float d = v[k] - mean;
      q += j < cols ? d * d : 0.0f;
    }
  } else {
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      float d = cuk_ldf(x, dt, base + j) - mean;
      q += d * d;
    }
  }
  float inv = rsqrtf(cuk_block_sum(q, sh) / (float)cols + eps);
  float a = inv * scale[c], b = bias[c] - mean * a;
  if (PER > 0) {
#pragma unroll
    for (int k = 0; k < PER; k++) {
      int64_t j = threadIdx.x + (int64_t)k * blockDim.x;
      if (j < cols) cuk_stf(y, dt, base + j, cuk_unary(act, v[k] * a + b, p0, p1));
    }
  } else {
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
      cuk_stf(y, dt, base + j, cuk_unary(act, cuk_ldf(x, dt, base + j) * a + b, p0, p1));
  }
}

extern "C" cudaError_t cuk_instnorm(cudaStream_t s, int dt, const void *x, void *y, int64_t rows,
                                    int64_t cols, int64_t C, const float *scale, const float *bias,
                                    float eps, int act, const float *ap) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  if (rows > 2147483647 || C <= 0) return cudaErrorInvalidValue;
  float p0 = ap ? ap[0] : 0.0f, p1 = ap ? ap[1] : 0.0f;
  unsigned nb = (unsigned)rows;
  /* short rows: fewer threads, so that most of each block's lanes hold data */
  if (cols <= 128 * 4) {
    int64_t t = (cols + 3) / 4;
    int threads = t < 32 ? 32 : (int)((t + 31) / 32 * 32);
    instnorm_kernel<4><<<nb, threads, 0, s>>>(dt, x, y, cols, C, scale, bias, eps, act, p0, p1);
  } else if (cols <= 256 * 8) {
    instnorm_kernel<8><<<nb, 256, 0, s>>>(dt, x, y, cols, C, scale, bias, eps, act, p0, p1);
  } else if (cols <= 256 * 16) {
    instnorm_kernel<16><<<nb, 256, 0, s>>>(dt, x, y, cols, C, scale, bias, eps, act, p0, p1);
  } else {
    instnorm_kernel<0><<<nb, 512, 0, s>>>(dt, x, y, cols, C, scale, bias, eps, act, p0, p1);
  }
  return cudaGetLastError();
}

/* Channels-last: block (32 channels, n, slab), 32 x 16 threads, lanes over
 * channels (each row of 32 is one contiguous read), the 16 rows of threads
 * over the slab's part of L. The statistics in one pass: each thread's
 * elements by Welford's update, the 16 partial (count, mean, M2) of a
 * channel merged by Chan's formula (as stable as the reference's two
 * passes, which would read the block's slab once more: it does not fit L1
 * at wav2vec2's L = 3199). One slab: then the output. Several (a grid of
 * too few blocks: wav2vec2's 512 channels at batch 1 made 16 blocks on 132
 * multiprocessors, 0.167 ms for 3 MB), a first kernel writes each slab's
 * (count, mean, M2) to part[n][slab][c], and a second merges a channel's
 * slabs, in order, before writing its slab of y. */

__device__ static void in_welford(int dt, const void *x, int64_t base, int64_t l0, int64_t l1,
                                  int64_t C, int ry, float *n, float *mean, float *m2) {
  float cn = 0.0f, cm = 0.0f, cq = 0.0f;
  for (int64_t l = l0 + ry; l < l1; l += CUK_IN_ROWS) {
    float v = cuk_ldf(x, dt, base + l * C);
    cn += 1.0f;
    float d = v - cm;
    cm += d / cn;
    cq += d * (v - cm);
  }
  *n = cn, *mean = cm, *m2 = cq;
}

/* Chan's merge of (nb, mb, qb) into (na, ma, qa). */
__device__ static void in_merge(float *na, float *ma, float *qa, float nb, float mb, float qb) {
  if (nb == 0.0f) return;
  float nn = *na + nb, d = mb - *ma;
  *ma += d * (nb / nn);
  *qa += qb + d * d * (*na * nb / nn);
  *na = nn;
}

/* The 16 rows' partials of each lane's channel merged into row 0. */
__device__ static void in_block_merge(float (*sn)[33], float (*sm)[33], float (*sq)[33], int lane,
                                      int ry) {
  __syncthreads();
  if (ry == 0) {
    float na = sn[0][lane], ma = sm[0][lane], qa = sq[0][lane];
    for (int k = 1; k < CUK_IN_ROWS; k++)
      in_merge(&na, &ma, &qa, sn[k][lane], sm[k][lane], sq[k][lane]);
    sn[0][lane] = na;
    sm[0][lane] = ma;
    sq[0][lane] = qa;
  }
  __syncthreads();
}

__device__ static void in_write(int dt, const void *x, void *y, int64_t base, int64_t l0,
                                int64_t l1, int64_t C, int ry, float a, float b, int act, float p0,
                                float p1) {
#pragma unroll 4
  for (int64_t l = l0 + ry; l < l1; l += CUK_IN_ROWS)
    cuk_stf(y, dt, base + l * C, cuk_unary(act, cuk_ldf(x, dt, base + l * C) * a + b, p0, p1));
}

/* part: NULL for one slab (statistics and output in one kernel); else the
 * first kernel's output, [N][slabs][C][3]. */
__global__ void instnorm_nhwc_kernel(int dt, const void *x, void *y, int64_t L, int64_t C,
                                     const float *scale, const float *bias, float eps, int act,
                                     float p0, float p1, int64_t slab, float *part) {
  __shared__ float sn[CUK_IN_ROWS][33], sm[CUK_IN_ROWS][33], sq[CUK_IN_ROWS][33];
  int lane = threadIdx.x, ry = threadIdx.y;
  int64_t c = (int64_t)blockIdx.x * 32 + lane, base = (int64_t)blockIdx.y * L * C + c;
  int64_t l0 = (int64_t)blockIdx.z * slab, l1 = l0 + slab < L ? l0 + slab : L;
  bool on = c < C;
  float n = 0.0f, mean = 0.0f, m2 = 0.0f;
  if (on) in_welford(dt, x, base, l0, l1, C, ry, &n, &mean, &m2);
  sn[ry][lane] = n;
  sm[ry][lane] = mean;
  sq[ry][lane] = m2;
  in_block_merge(sn, sm, sq, lane, ry);
  if (!on) return;
  if (part) { /* first of two kernels: this slab's statistics */
    if (ry == 0) {
      float *o = part + (((int64_t)blockIdx.y * gridDim.z + blockIdx.z) * C + c) * 3;
      o[0] = sn[0][lane], o[1] = sm[0][lane], o[2] = sq[0][lane];
    }
    return;
  }
  float inv = rsqrtf(sq[0][lane] / (float)L + eps);
  float a = inv * scale[c], b = bias[c] - sm[0][lane] * a;
  in_write(dt, x, y, base, l0, l1, C, ry, a, b, act, p0, p1);
}

/* Second kernel: a channel's slabs merged (in slab order, by every block
 * of the channel alike), then this block's slab of y. */
__global__ void instnorm_nhwc_out_kernel(int dt, const void *x, void *y, int64_t L, int64_t C,
                                         const float *scale, const float *bias, float eps, int act,
                                         float p0, float p1, int64_t slab, const float *part) {
  __shared__ float sa[2][32];
  int lane = threadIdx.x, ry = threadIdx.y;
  int64_t c = (int64_t)blockIdx.x * 32 + lane, base = (int64_t)blockIdx.y * L * C + c;
  int64_t l0 = (int64_t)blockIdx.z * slab, l1 = l0 + slab < L ? l0 + slab : L;
  bool on = c < C;
  if (on && ry == 0) {
    const float *q = part + (int64_t)blockIdx.y * gridDim.z * C * 3 + c * 3;
    float na = q[0], ma = q[1], qa = q[2]; /* slab 0 holds element 0: na >= 1 */
    for (unsigned k = 1; k < gridDim.z; k++) {
      const float *r = q + (int64_t)k * C * 3;
      in_merge(&na, &ma, &qa, r[0], r[1], r[2]);
    }
    float inv = rsqrtf(qa / (float)L + eps);
    sa[0][lane] = inv * scale[c];
    sa[1][lane] = bias[c] - ma * sa[0][lane];
  }
  __syncthreads();
  if (!on) return;
  in_write(dt, x, y, base, l0, l1, C, ry, sa[0][lane], sa[1][lane], act, p0, p1);
}

extern "C" cudaError_t cuk_instnorm_nhwc(cudaStream_t s, int dt, const void *x, void *y, int64_t N,
                                         int64_t L, int64_t C, const float *scale,
                                         const float *bias, float eps, int act, const float *ap,
                                         int n_sm, void *ws, int64_t ws_bytes) {
  if (N <= 0 || L <= 0 || C <= 0) return cudaSuccess;
  if (N > 65535 || (C + 31) / 32 > 2147483647) return cudaErrorInvalidValue;
  float p0 = ap ? ap[0] : 0.0f, p1 = ap ? ap[1] : 0.0f;
  int slabs = ws ? cuk_instnorm_nhwc_slabs(N, L, C, n_sm, ws_bytes) : 1;
  int64_t slab = (L + slabs - 1) / slabs;
  slabs = (int)((L + slab - 1) / slab); /* every slab non-empty: slab 0 starts at 0 */
  dim3 grid((unsigned)((C + 31) / 32), (unsigned)N, (unsigned)slabs), block(32, CUK_IN_ROWS);
  float *part = slabs > 1 ? (float *)ws : NULL;
  instnorm_nhwc_kernel<<<grid, block, 0, s>>>(dt, x, y, L, C, scale, bias, eps, act, p0, p1, slab,
                                              part);
  if (part)
    instnorm_nhwc_out_kernel<<<grid, block, 0, s>>>(dt, x, y, L, C, scale, bias, eps, act, p0, p1,
                                                    slab, part);
  return cudaGetLastError();
}
