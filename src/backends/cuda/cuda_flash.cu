/* FlashAttention-2 style attention for head size 64 (cuk_attention with
 * p->flash set, when cuk_flash_ok says it applies).
 *
 * Why a second kernel: the WMMA kernel (cuda_attn.cu) keeps the running
 * output in shared memory and round-trips scores through it, which made it
 * latency-bound (91 us per BERT-base layer at batch 32). Here, as in
 * FlashAttention-2, each warp owns 16 query rows and keeps everything in
 * registers: Q fragments, the scores of a 64-key tile (mma.sync
 * m16n8k16, fp32 accumulators), the running max / sum and the output. The
 * score accumulators are laid out exactly as the A operand of the next
 * mma, so P never touches shared memory. K and V tiles are shared by the
 * block's 4 warps and double-buffered with cp.async, so the next tile loads
 * while this one is multiplied. Shared rows are padded by 16 bytes so the
 * 8 row addresses of an ldmatrix fall in distinct banks.
 *
 * Block: 64 query rows of one (batch, head), 4 warps, 45 KB of shared
 * memory (4 blocks per SM). Mask: added to the scaled scores, read through
 * its strides (broadcast dims have stride 0, served from L1). */
#include <stdint.h>

#include "backends/cuda/cuda_device.cuh"

#define FD 64           /* head size */
#define FT 64           /* query rows per block and keys per tile */
#define FP (FD + 8)     /* shared row pitch (elements): 144 bytes */
#define FTILE (FT * FP) /* elements of one shared tile */

__device__ __forceinline__ uint32_t smem_u32(const void *p) {
  return (uint32_t)__cvta_generic_to_shared(p);
}

/* 16 bytes global -> shared, zero-filled when !valid (rows past the end) */
__device__ __forceinline__ void cp16(void *dst, const void *src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(dst)), "l"(src),
               "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void ldsm4(uint32_t *r, const void *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(p)));
}
__device__ __forceinline__ void ldsm4t(uint32_t *r, const void *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(p)));
}

/* c += a (16x16, row) * b (16x8, col), fp32 accumulators */
template <typename T>
__device__ __forceinline__ void mma(float *c, const uint32_t *a, const uint32_t *b);
template <>
__device__ __forceinline__ void mma<__nv_bfloat16>(float *c, const uint32_t *a, const uint32_t *b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
               "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
template <>
__device__ __forceinline__ void mma<__half>(float *c, const uint32_t *a, const uint32_t *b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
               "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

template <typename T> __device__ __forceinline__ uint32_t pack2(float x, float y);
template <> __device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float x, float y) {
  __nv_bfloat162 v = __floats2bfloat162_rn(x, y);
  return *(uint32_t *)&v;
}
template <> __device__ __forceinline__ uint32_t pack2<__half>(float x, float y) {
  __half2 v = __floats2half2_rn(x, y);
  return *(uint32_t *)&v;
}

/* rows [row0, row0 + FT) of a [len, FD] matrix (row stride rs) into a
 * shared tile, 16 bytes per cp.async; rows past len are zero-filled. */
template <typename T>
__device__ __forceinline__ void load_async(T *dst, const T *base, long long rs, int row0, int len) {
  for (int i = threadIdx.x; i < FT * (FD / 8); i += blockDim.x) {
    int r = i >> 3, c = (i & 7) * 8;
    bool ok = row0 + r < len;
    const T *src = ok ? base + (long long)(row0 + r) * rs + c : base;
    cp16(dst + r * FP + c, src, ok);
  }
}

template <typename T> __global__ void __launch_bounds__(128) flash_kernel(cuk_attn p) {
  extern __shared__ __align__(128) unsigned char smem[];
  T *Qs = (T *)smem, *Ks = Qs + FTILE, *Vs = Ks + 2 * FTILE; /* K, V: 2 buffers each */
  const int b = blockIdx.z, h = blockIdx.y, q0 = blockIdx.x * FT;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, tg = lane & 3; /* mma fragment row group, column pair */
  const T *Q = (const T *)p.q + b * p.qb + h * p.qh;
  const T *K = (const T *)p.k + b * p.kb + h * p.kh;
  const T *V = (const T *)p.v + b * p.vb + h * p.vh;
  const T *M = p.mask ? (const T *)p.mask + (p.mw > 0 ? b % p.mw : b) * p.mb + h * p.mh : NULL;
  const int nt = (p.Sk + FT - 1) / FT;

  load_async<T>(Qs, Q, p.qs, q0, p.S);
  load_async<T>(Ks, K, p.ks, 0, p.Sk);
  load_async<T>(Vs, V, p.vs, 0, p.Sk);
  cp_commit();

  uint32_t qf[FD / 16][4]; /* this warp's 16 Q rows as A fragments */
  float o[FD / 8][4];      /* output accumulators: rows g and g + 8 */
  float mx[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
#pragma unroll
  for (int j = 0; j < FD / 8; j++)
    o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
  /* query rows of this thread's accumulators, and their mask rows */
  const int qi0 = q0 + warp * 16 + g, qi1 = qi0 + 8;
  const T *M0 = M && qi0 < p.S ? M + qi0 * p.mi : NULL;
  const T *M1 = M && qi1 < p.S ? M + qi1 * p.mi : NULL;

  for (int t = 0; t < nt; t++) {
    const int buf = t & 1, k0 = t * FT;
    if (t + 1 < nt) { /* the next tile into the other buffer while this one computes */
      load_async<T>(Ks + (buf ^ 1) * FTILE, K, p.ks, k0 + FT, p.Sk);
      load_async<T>(Vs + (buf ^ 1) * FTILE, V, p.vs, k0 + FT, p.Sk);
      cp_commit();
      cp_wait<1>();
    } else {
      cp_wait<0>();
    }
    __syncthreads();
    if (t == 0) {
#pragma unroll
      for (int d = 0; d < FD / 16; d++)
        ldsm4(qf[d], Qs + (warp * 16 + (lane & 15)) * FP + d * 16 + (lane >> 4) * 8);
    }
    const T *Kt = Ks + buf * FTILE, *Vt = Vs + buf * FTILE;

    /* S = Q K^T: 16 rows x 64 keys, 8 n-tiles of 8 keys */
    float s[FT / 8][4];
#pragma unroll
    for (int j = 0; j < FT / 8; j++)
      s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
#pragma unroll
    for (int d = 0; d < FD / 16; d++) {
#pragma unroll
      for (int j = 0; j < FT / 8; j += 2) {
        /* matrices: keys j*8 (+8) x d*16 (+8): b fragments of n-tiles j, j+1 */
        uint32_t kb[4];
        int mi = lane >> 3;
        ldsm4(kb, Kt + (j * 8 + (mi >> 1) * 8 + (lane & 7)) * FP + d * 16 + (mi & 1) * 8);
        mma<T>(s[j], qf[d], kb);
        mma<T>(s[j + 1], qf[d], kb + 2);
      }
    }

    /* scale, mask, keys past the end; row max of this tile */
    float tm[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int j = 0; j < FT / 8; j++) {
#pragma unroll
      for (int e = 0; e < 4; e++) {
        int kj = k0 + j * 8 + tg * 2 + (e & 1);
        const T *Mr = e < 2 ? M0 : M1;
        /* natural units: a -FLT_MAX mask stays finite (times log2(e) it
         * would not), so a fully masked row averages V as the reference does */
        float v = s[j][e] * p.scale;
        if (Mr && kj < p.Sk) v += cuk_to_f(Mr[kj * p.mj]);
        v = kj < p.Sk ? v : -INFINITY;
        s[j][e] = v;
        tm[e >> 1] = fmaxf(tm[e >> 1], v);
      }
    }
    float alpha[2];
#pragma unroll
    for (int r = 0; r < 2; r++) {
      tm[r] = fmaxf(tm[r], __shfl_xor_sync(0xffffffffu, tm[r], 1));
      tm[r] = fmaxf(tm[r], __shfl_xor_sync(0xffffffffu, tm[r], 2));
      float mn = fmaxf(mx[r], tm[r]);
      float ref = mn == -INFINITY ? 0.0f : mn; /* a row masked so far: no NaN */
      alpha[r] = __expf(mx[r] - ref);
      mx[r] = mn;
      tm[r] = ref;
    }
    float rs[2] = {0.0f, 0.0f};
    uint32_t pf[FT / 16][4]; /* P as A fragments: keys 16k .. 16k + 16 */
#pragma unroll
    for (int j = 0; j < FT / 8; j++) {
      float e0 = __expf(s[j][0] - tm[0]), e1 = __expf(s[j][1] - tm[0]);
      float e2 = __expf(s[j][2] - tm[1]), e3 = __expf(s[j][3] - tm[1]);
      rs[0] += e0 + e1;
      rs[1] += e2 + e3;
      pf[j >> 1][(j & 1) * 2] = pack2<T>(e0, e1);
      pf[j >> 1][(j & 1) * 2 + 1] = pack2<T>(e2, e3);
    }
#pragma unroll
    for (int r = 0; r < 2; r++) {
      rs[r] += __shfl_xor_sync(0xffffffffu, rs[r], 1);
      rs[r] += __shfl_xor_sync(0xffffffffu, rs[r], 2);
      l[r] = l[r] * alpha[r] + rs[r];
    }
#pragma unroll
    for (int j = 0; j < FD / 8; j++) {
      o[j][0] *= alpha[0], o[j][1] *= alpha[0];
      o[j][2] *= alpha[1], o[j][3] *= alpha[1];
    }

    /* O += P V: V tile [key][d] read transposed as b fragments */
#pragma unroll
    for (int k = 0; k < FT / 16; k++) {
#pragma unroll
      for (int j = 0; j < FD / 8; j += 2) {
        uint32_t vb[4];
        int mi = lane >> 3;
        ldsm4t(vb, Vt + (k * 16 + (mi & 1) * 8 + (lane & 7)) * FP + j * 8 + (mi >> 1) * 8);
        mma<T>(o[j], pf[k], vb);
        mma<T>(o[j + 1], pf[k], vb + 2);
      }
    }
    __syncthreads(); /* this buffer is refilled by the next iteration's loads */
  }
  cp_wait<0>(); /* no keys (Sk == 0): Q's load is still in flight */
  __syncthreads();

  /* normalise, stage the warp's 16 rows in its part of Qs (Q is in
   * registers), then 16-byte stores */
  float inv[2] = {l[0] > 0.0f ? 1.0f / l[0] : 0.0f, l[1] > 0.0f ? 1.0f / l[1] : 0.0f};
  T *Os = Qs + warp * 16 * FP;
#pragma unroll
  for (int j = 0; j < FD / 8; j++) {
    int c = j * 8 + tg * 2;
    /* a convex combination of V's rows: within the type's range */
    *(uint32_t *)(Os + g * FP + c) = pack2<T>(o[j][0] * inv[0], o[j][1] * inv[0]);
    *(uint32_t *)(Os + (g + 8) * FP + c) = pack2<T>(o[j][2] * inv[1], o[j][3] * inv[1]);
  }
  __syncwarp();
  T *O = (T *)p.o + b * p.ob + h * p.oh;
  for (int i = lane; i < 16 * (FD / 8); i += 32) {
    int r = i >> 3, c = (i & 7) * 8, qi = q0 + warp * 16 + r;
    if (qi < p.S) *(uint4 *)(O + (long long)qi * p.os + c) = *(const uint4 *)(Os + r * FP + c);
  }
}

#define FLASH_SMEM (5 * FTILE * 2) /* Q, 2 K and 2 V tiles of 16-bit elements */

extern "C" int cuk_flash_fits(int dt, int D) {
  return (dt == CUK_BF16 || dt == CUK_F16) && D == FD;
}

extern "C" int cuk_flash_ok(const cuk_attn *p) { return cuk_flash_fits(p->dt, p->D) && p->vec; }

extern "C" cudaError_t cuk_flash_prepare(int dt) {
  return dt == CUK_BF16
             ? cudaFuncSetAttribute(flash_kernel<__nv_bfloat16>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, FLASH_SMEM)
             : cudaFuncSetAttribute(flash_kernel<__half>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, FLASH_SMEM);
}

extern "C" cudaError_t cuk_flash(cudaStream_t s, const cuk_attn *p) {
  if (!cuk_flash_ok(p)) return cudaErrorInvalidValue;
  if (p->B <= 0 || p->H <= 0 || p->S <= 0) return cudaSuccess;
  if (p->B > 65535 || p->H > 65535) return cudaErrorInvalidValue;
  dim3 grid((unsigned)((p->S + FT - 1) / FT), (unsigned)p->H, (unsigned)p->B);
  if (p->dt == CUK_BF16)
    flash_kernel<__nv_bfloat16><<<grid, 128, FLASH_SMEM, s>>>(*p);
  else
    flash_kernel<__half><<<grid, 128, FLASH_SMEM, s>>>(*p);
  return cudaGetLastError();
}
