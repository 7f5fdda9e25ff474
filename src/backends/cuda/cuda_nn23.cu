/* Kernels for the opset-23 transformer ops the cuda backend runs itself:
 * RMSNormalization, RotaryEmbedding and the general case of Attention (what
 * the fused kernels of cuda_attn.cu / cuda_flash.cu do not take: float32,
 * any head size, causal or windowed masks, grouped-query heads, softcap,
 * boolean masks). Semantics follow the reference (src/ops/nn_norm.c,
 * nn_rope.c, nn_attn.c); all compute in float32. */
#include "backends/cuda/cuda_device.cuh"

/* ---- RMSNormalization ------------------------------------------------------ */

/* One block per row: y = x / sqrt(mean(x^2) + eps) * gamma. */
__global__ void rms_kernel(int dt, const void *x, void *y, int64_t cols, const float *gamma,
                           float eps) {
  __shared__ float sh[32];
  int64_t base = (int64_t)blockIdx.x * cols;
  float q = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    float v = cuk_ldf(x, dt, base + j);
    q += v * v;
  }
  float inv = rsqrtf(cuk_block_sum(q, sh) / (float)cols + eps);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
    cuk_stf(y, dt, base + j, cuk_ldf(x, dt, base + j) * inv * gamma[j]);
}

extern "C" cudaError_t cuk_rmsnorm(cudaStream_t s, int dt, const void *x, void *y, int64_t rows,
                                   int64_t cols, const float *gamma, float eps) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  if (rows > 2147483647) return cudaErrorInvalidValue;
  int64_t t = (cols + 31) / 32 * 32;
  int threads = t > 256 ? 256 : t < 32 ? 32 : (int)t;
  rms_kernel<<<(unsigned)rows, threads, 0, s>>>(dt, x, y, cols, gamma, eps);
  return cudaGetLastError();
}

/* ---- RotaryEmbedding --------------------------------------------------------- */

/* One thread per element of X (contiguous, (B, H, S, D) or (B, S, H*D)). */
__global__ void rope_kernel(cuk_rope p, int *err) {
  int64_t n = p.B * p.H * p.S * p.D;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t d = i % p.D, r = i / p.D, s, b; /* the head does not matter: caches go by token */
    if (p.three_d) {
      r /= p.H, s = r % p.S, b = r / p.S;
    } else {
      s = r % p.S, b = r / p.S / p.H;
    }
    if (d >= p.rd) {
      cuk_stf(p.y, p.dt, i, cuk_ldf(p.x, p.dt, i));
      continue;
    }
    int64_t half = p.rd / 2, k, i1, i2, base = i - d;
    bool first;
    if (p.interleaved) {
      k = d / 2, i1 = 2 * k, i2 = 2 * k + 1, first = (d & 1) == 0;
    } else {
      k = d % half, i1 = k, i2 = k + half, first = d < half;
    }
    int64_t row = p.pos ? cuk_ldi(p.pos, p.pos_dt, b * p.S + s) : b * p.S + s;
    if (row < 0 || row >= p.rows) {
      *err = 2;
      cuk_stf(p.y, p.dt, i, 0.0f);
      continue;
    }
    float c = cuk_ldf(p.cos, p.dt, row * half + k), sn = cuk_ldf(p.sin, p.dt, row * half + k);
    float x1 = cuk_ldf(p.x, p.dt, base + i1), x2 = cuk_ldf(p.x, p.dt, base + i2);
    cuk_stf(p.y, p.dt, i, first ? c * x1 - sn * x2 : sn * x1 + c * x2);
  }
}

extern "C" cudaError_t cuk_rotary(cudaStream_t s, const cuk_rope *p, int *err) {
  int64_t n = p->B * p->H * p->S * p->D;
  if (n <= 0) return cudaSuccess;
  rope_kernel<<<cuk_blocks(n, 256), 256, 0, s>>>(*p, err);
  return cudaGetLastError();
}

/* ---- Attention, the general case ------------------------------------------- */

/* One warp per query row, keys in order with an online softmax. Lane l owns
 * the head dims l, l + 32, ...: its slice of the (pre-scaled) query and of
 * the running output sit in shared memory that no other lane touches, so
 * the only communication is the shuffle reduction of each score. Keys whose
 * bias is -inf (mask, causal, window) are skipped: the decision is the same
 * in every lane. */
#define SDPA_WARPS 4

__global__ void sdpa_kernel(cuk_sdpa p) {
  extern __shared__ float smem[];
  int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  int64_t rows = (int64_t)p.B * p.Hq * p.Sq;
  int64_t r = (int64_t)blockIdx.x * SDPA_WARPS + warp;
  if (r >= rows) return;
  float *qs = smem + (int64_t)warp * (p.D + p.Dv), *acc = qs + p.D;
  int64_t i = r % p.Sq, h = (r / p.Sq) % p.Hq, b = r / ((int64_t)p.Sq * p.Hq);
  int64_t kvh = h / (p.Hq / p.Hkv);
  const int64_t qo = b * p.qb + h * p.qh + i * p.qs;
  const int64_t ko = b * p.kb + kvh * p.kh, vo = b * p.vb + kvh * p.vh;
  for (int d = lane; d < p.D; d += 32)
    qs[d] = cuk_ldf(p.q, p.dt, qo + d) * p.scale;
  for (int d = lane; d < p.Dv; d += 32)
    acc[d] = 0.0f;
  float m = -INFINITY, l = 0.0f;
  for (int64_t j = 0; j < p.T; j++) {
    float bias = 0.0f;
    if (p.mask) {
      if (j >= p.Tm) continue;
      int64_t at = b * p.mb + h * p.mh + i * p.mi + j * p.mj;
      if (p.mask_dt == CUK_BOOL) {
        if (!((const unsigned char *)p.mask)[at]) continue;
      } else {
        bias = cuk_ldf(p.mask, p.mask_dt, at);
        if (isinf(bias) && bias < 0.0f) continue;
      }
    }
    int64_t diff = i - j;
    if ((p.causal && diff < 0) || (p.left >= 0 && diff > p.left) ||
        (p.right >= 0 && -diff > p.right))
      continue;
    float dot = 0.0f;
    for (int d = lane; d < p.D; d += 32)
      dot += qs[d] * cuk_ldf(p.k, p.dt, ko + j * p.ks + d);
    for (int o = 16; o > 0; o >>= 1)
      dot += __shfl_xor_sync(0xffffffffu, dot, o);
    if (p.softcap > 0.0f) dot = p.softcap * tanhf(dot / p.softcap);
    float sc = dot + bias;
    float mn = fmaxf(m, sc);
    float corr = m == -INFINITY ? 0.0f : __expf(m - mn), pj = __expf(sc - mn);
    l = l * corr + pj;
    for (int d = lane; d < p.Dv; d += 32)
      acc[d] = acc[d] * corr + pj * cuk_ldf(p.v, p.dt, vo + j * p.vs + d);
    m = mn;
  }
  const int64_t oo = b * p.ob + h * p.oh + i * p.os;
  float inv = l > 0.0f ? 1.0f / l : 0.0f; /* no key allowed: a zero row (the spec) */
  for (int d = lane; d < p.Dv; d += 32)
    cuk_stf(p.o, p.dt, oo + d, acc[d] * inv);
}

extern "C" size_t cuk_sdpa_smem(int D, int Dv) {
  return sizeof(float) * (size_t)SDPA_WARPS * (size_t)(D + Dv);
}

extern "C" cudaError_t cuk_sdpa_prepare(int D, int Dv) {
  size_t bytes = cuk_sdpa_smem(D, Dv);
  if (bytes <= 48 * 1024) return cudaSuccess;
  return cudaFuncSetAttribute(sdpa_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
}

extern "C" cudaError_t cuk_sdpa_run(cudaStream_t s, const cuk_sdpa *p) {
  int64_t rows = (int64_t)p->B * p->Hq * p->Sq;
  if (rows <= 0 || p->Dv <= 0) return cudaSuccess;
  if (p->Hkv <= 0 || p->Hq % p->Hkv) return cudaErrorInvalidValue;
  int64_t blocks = (rows + SDPA_WARPS - 1) / SDPA_WARPS;
  if (blocks > 2147483647) return cudaErrorInvalidValue;
  sdpa_kernel<<<(unsigned)blocks, 32 * SDPA_WARPS, cuk_sdpa_smem(p->D, p->Dv), s>>>(*p);
  return cudaGetLastError();
}
