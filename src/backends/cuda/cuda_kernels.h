/* C interface of the cuda backend's own kernels (cuda_eltwise.cu, cuda_nn.cu,
 * cuda_attn.cu): what cuBLASLt and cuDNN do not fuse. Every launcher
 * enqueues work on `s` and returns the launch status (cudaGetLastError); none
 * synchronises, allocates or reads host memory, so all are safe to capture
 * into a CUDA graph. Element types are ONNX codes (the same numbers as
 * ait_dtype); float tensors are float32, float16 or bfloat16 and kernels
 * compute in float32. Pointers are device pointers. */
#ifndef AIT_BACKENDS_CUDA_KERNELS_H
#define AIT_BACKENDS_CUDA_KERNELS_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
  CUK_F32 = 1,
  CUK_U8 = 2,
  CUK_I8 = 3,
  CUK_I32 = 6,
  CUK_I64 = 7,
  CUK_BOOL = 9,
  CUK_F16 = 10,
  CUK_BF16 = 16
};

#define CUK_MAX_DIMS 8

/* Elementwise operations. Unary ops are also the activations of fused
 * epilogues (CUK_COPY = none); p[0], p[1] are their parameters. */
typedef enum cuk_op {
  CUK_COPY = 0, /* y = x (a cast when the dtypes differ) */
  CUK_RELU,
  CUK_SIGMOID,
  CUK_TANH,
  CUK_ERF,
  CUK_EXP,
  CUK_LOG,
  CUK_SQRT,
  CUK_RECIP,
  CUK_NEG,
  CUK_ABS,
  CUK_CEIL,
  CUK_FLOOR,
  CUK_ROUND,
  CUK_SIN,
  CUK_COS,
  CUK_GELU,         /* exact, with erf */
  CUK_GELU_TANH,    /* tanh approximation */
  CUK_LEAKY_RELU,   /* p0 = alpha */
  CUK_HARD_SIGMOID, /* max(0, min(1, p0 * x + p1)) */
  CUK_HARD_SWISH,   /* x * hard_sigmoid(x; 1/6, 1/2) */
  CUK_SOFTPLUS,
  CUK_CLIP, /* p0 = min, p1 = max */
  CUK_ELU,  /* p0 = alpha */
  CUK_NOT,  /* bool */
  CUK_SIGN,
  CUK_SELU,             /* p0 = alpha, p1 = gamma */
  CUK_THRESHOLDED_RELU, /* p0 = alpha */
  CUK_ISNAN,
  CUK_ISINF,        /* p0: detect negative, p1: detect positive */
  CUK_SILU,         /* x * sigmoid(x) */
  CUK_HARD_SWISH_P, /* x * hard_sigmoid(x; p0, p1) */
  CUK_UNARY_END,
  CUK_ADD = 64,
  CUK_SUB,
  CUK_MUL,
  CUK_DIV,
  CUK_POW,
  CUK_MAX,
  CUK_MIN,
  CUK_PRELU, /* x < 0 ? slope * x : x */
  CUK_EQ,
  CUK_LT,
  CUK_GT,
  CUK_LE,
  CUK_GE,
  CUK_AND,
  CUK_OR,
  CUK_XOR,
  CUK_MOD,  /* integer modulus with the divisor's sign (Python's %) */
  CUK_FMOD, /* C fmod / truncated remainder */
  CUK_BINARY_END,
  CUK_WHERE = 128 /* in0 ? in1 : in2 */
} cuk_op;

/* out = act(op(in...)), iterating `dims` (outermost first) over the output,
 * which is contiguous in that order; input i is read at sum(coord * st[i]).
 * Binary ops see in1 scaled by `beta` for CUK_ADD / CUK_SUB (Gemm's C). With
 * int_math the op runs on int64 values (integer inputs). */
typedef struct cuk_ew {
  int op, act;
  float p[2], ap[2];
  float beta;
  int n_in; /* 1..3 */
  int rank; /* >= 1 */
  int int_math;
  int64_t n;
  int64_t dims[CUK_MAX_DIMS];
  int64_t st[3][CUK_MAX_DIMS];
  int dt[3];
  const void *in[3];
  int out_dt;
  void *out;
} cuk_ew;
cudaError_t cuk_eltwise(cudaStream_t s, const cuk_ew *p);

/* Per-channel epilogue, in place or not: y = act(x * scale[c] + shift[c] + z)
 * with c = (i / inner) % C. scale, shift (float32) and z (dtype dt, same
 * shape and layout as y) may be NULL. */
typedef struct cuk_epi {
  int dt;
  int64_t n, C, inner;
  const void *x;
  void *y;
  const float *scale, *shift;
  const void *z;
  int act;
  float ap[2];
} cuk_epi;
cudaError_t cuk_epilogue(cudaStream_t s, const cuk_epi *p);

/* out[i] = in[base + sum(coord_k * st[k])] over the contiguous output of
 * shape dims: transposes, slices (negative steps too), broadcasts (stride
 * 0), layout changes. esize: bytes per element (1, 2, 4 or 8). */
typedef struct cuk_copy {
  int esize, rank;
  int64_t n, base;
  int64_t dims[CUK_MAX_DIMS];
  int64_t st[CUK_MAX_DIMS];
  const void *in;
  void *out;
} cuk_copy;
cudaError_t cuk_strided_copy(cudaStream_t s, const cuk_copy *p);

/* Gather along one axis: out[o, j, k] = data[o, idx[j], k] for o < outer,
 * j < n_idx, k < inner; negative indices count from the end; an index out of
 * range writes zeros and sets *err to 1. */
cudaError_t cuk_gather(cudaStream_t s, int esize, const void *data, const void *idx, int idx_dt,
                       void *out, int64_t outer, int64_t axis_len, int64_t n_idx, int64_t inner,
                       int *err);

/* LayerNormalization over rows of `cols` contiguous elements:
 * y = (x - mean) / sqrt(var + eps) * gamma + beta (beta may be NULL). With
 * res != NULL, x + res is normalised (and written to sum when sum != NULL).
 * part != NULL (dtype=fp8, y feeds an fp8 GEMM): also the absmax of y as
 * cuk_layernorm_parts(dt, rows, cols) partial maxima (> 0 required), for
 * cuk_fp8_quantize_parts. */
cudaError_t cuk_layernorm(cudaStream_t s, int dt, const void *x, const void *res, void *sum,
                          void *y, int64_t rows, int64_t cols, const float *gamma,
                          const float *beta, float eps, float *part);
int cuk_layernorm_parts(int dt, int64_t rows, int64_t cols); /* 0: cannot */

/* Softmax (log = 1: LogSoftmax) along an axis of length len with stride
 * inner, for each of outer * inner lines. */
cudaError_t cuk_softmax(cudaStream_t s, int dt, const void *x, void *y, int64_t outer, int64_t len,
                        int64_t inner, int log);

/* 2-D pooling over NCHW (nhwc = 0) or NHWC (nhwc = 1) tensors. mode 0: max,
 * 1: average counting padding, 2: average over the real elements only. */
typedef struct cuk_pool {
  int dt, nhwc, mode;
  int64_t N, C, H, W, OH, OW;
  int kh, kw, sh, sw, ph, pw, ph_end, pw_end, dh, dw;
  const void *x;
  void *y;
} cuk_pool;
cudaError_t cuk_pool2d(cudaStream_t s, const cuk_pool *p);

/* Columns of an NHWC convolution for a GEMM (im2col): row m = (n, oh, ow)
 * of y [N * OH * OW, kp] holds the input patch in (r, s, c) order (the KRSC
 * filter's order), zeros where the patch leaves the input and in the
 * columns from R * S * C to kp. es: element bytes (2 or 4). */
typedef struct cuk_im2col {
  int es;
  int64_t N, H, W, C, OH, OW, R, S, kp;
  int pad_h, pad_w, str_h, str_w, dil_h, dil_w;
  const void *x;
  void *y;
} cuk_im2col;
cudaError_t cuk_im2col_nhwc(cudaStream_t s, const cuk_im2col *p);
/* Global average (max = 0) or max pooling of [N, C, HW] (nhwc: [N, HW, C])
 * into [N, C]; HW split over several blocks (warps) where the grid would be
 * small (cuk_gpool_splits, cuda_gpool.h), the partials in the workspace ws
 * of ws_bytes (NULL: no split). */
cudaError_t cuk_global_pool(cudaStream_t s, int dt, int nhwc, int max, const void *x, void *y,
                            int64_t N, int64_t C, int64_t HW, int n_sm, void *ws, int64_t ws_bytes);

/* Reductions: for every output element (the kept axes, in order), op over
 * the reduced axes; ARGMAX / ARGMIN reduce one axis and store int64 indices
 * (select_last: the last of equal values). */
enum {
  CUK_R_SUM = 0,
  CUK_R_MEAN,
  CUK_R_MAX,
  CUK_R_MIN,
  CUK_R_PROD,
  CUK_R_L1,
  CUK_R_L2,
  CUK_R_SUMSQ,
  CUK_R_LOGSUM,
  CUK_R_LOGSUMEXP,
  CUK_R_ARGMAX,
  CUK_R_ARGMIN
};
typedef struct cuk_reduce {
  int op, dt, out_dt, select_last;
  int n_keep, n_red;
  int64_t n_out, n_red_total;
  int64_t keep_dims[CUK_MAX_DIMS], keep_st[CUK_MAX_DIMS];
  int64_t red_dims[CUK_MAX_DIMS], red_st[CUK_MAX_DIMS];
  const void *x;
  void *y;
} cuk_reduce;
cudaError_t cuk_reduce_run(cudaStream_t s, const cuk_reduce *p);

/* y[0..n) = v, converted to dt. */
cudaError_t cuk_fill(cudaStream_t s, int dt, void *y, int64_t n, double v);

/* Attention out = softmax(scale * Q K^T + mask) V for bfloat16 / float16
 * (dt), head size D a multiple of 16 up to 128. Every operand is addressed
 * as [batch, head, row, d] with d contiguous and the strides below (in
 * elements), so [B, S, H, D] activations are read and written in place:
 * q/k/v/o at b * xb + h * xh + row * xs + d; the mask (may be NULL, same
 * type) at b * mb + h * mh + i * mi + j * mj for query i and key j (0
 * strides broadcast). vec: every stride is a multiple of 8 and every base
 * 16-byte aligned (vector loads). cuk_attention_prepare() once per type
 * before launches (raises the shared-memory limit; not capturable).
 * flash: the FlashAttention-2 style kernel (cuda_flash.cu) where
 * cuk_flash_ok() says it applies (head size 64, vec), else the WMMA one. */
typedef struct cuk_attn {
  int dt, vec, flash;
  int B, H, S, Sk, D;
  float scale;
  const void *q, *k, *v, *mask;
  void *o;
  long long qb, qh, qs, kb, kh, ks, vb, vh, vs, ob, oh, os, mb, mh, mi, mj;
  long long mw; /* > 0: batch b reads the mask at (b % mw) * mb (swin's windows) */
} cuk_attn;
int cuk_attention_ok(int dt, int D);
cudaError_t cuk_attention_prepare(int dt, int D);
cudaError_t cuk_attention(cudaStream_t s, const cuk_attn *p);
int cuk_flash_fits(int dt, int D); /* type and head size; cuk_flash_ok adds vec */
int cuk_flash_ok(const cuk_attn *p);
cudaError_t cuk_flash_prepare(int dt);
cudaError_t cuk_flash(cudaStream_t s, const cuk_attn *p);

/* Softmax of x + mask along rows of len (rows = B * H * S, row r is query
 * r % S of head (r / S) % H of batch r / (S * H)), the mask read at
 * b * mb + h * mh + i * mi + j * mj (b % mw in place of b when mw > 0). */
cudaError_t cuk_softmax_masked(cudaStream_t s, int dt, const void *x, void *y, int64_t rows,
                               int64_t len, const void *mask, int64_t H, int64_t S, int64_t mb,
                               int64_t mh, int64_t mi, int64_t mj, int64_t mw);

/* dtype=fp8: q[0..n) = e4m3(x / scale) with scale = absmax(x) / 448 (1 when
 * x is all zero); sc (8 + CUK_FP8_PARTS floats, device, 16-byte aligned)
 * receives absmax in sc[0] and the scale in sc[4], 16-byte aligned for
 * cuBLASLt's scale pointer; sc + 8 holds per-block partial maxima.
 * cuk_fp8_quantize: partials, then the conversion. cuk_fp8_quantize_parts:
 * the conversion alone, for `parts` partials already at sc + 8 (written by
 * cuk_fp8_amax_parts or by the producer of x: cuk_layernorm's part). */
#define CUK_FP8_PARTS 2048
cudaError_t cuk_fp8_quantize(cudaStream_t s, int dt, const void *x, int64_t n, float *sc,
                             unsigned char *q);
cudaError_t cuk_fp8_quantize_parts(cudaStream_t s, int dt, const void *x, int64_t n, float *sc,
                                   int parts, unsigned char *q);
cudaError_t cuk_fp8_amax_parts(cudaStream_t s, int dt, const void *x, int64_t n, float *part,
                               int parts);
/* dtype=fp8wo: y (bfloat16, rows x cols) = e4m3(q) * scale, one scale per
 * row (scale_rows) or per column; q, y of the same row-major layout. */
cudaError_t cuk_fp8wo_dequant(cudaStream_t s, const unsigned char *q, const float *scale,
                              int64_t rows, int64_t cols, int scale_rows, void *y);
/* q[i] = e4m3(x[i]) by the hardware conversion, for tests. */
cudaError_t cuk_fp8_encode(cudaStream_t s, const float *x, int64_t n, unsigned char *q);

/* RMSNormalization over rows of `cols` contiguous elements (cuda_nn23.cu):
 * y = x / sqrt(mean(x^2) + eps) * gamma (float32, cols values). */
cudaError_t cuk_rmsnorm(cudaStream_t s, int dt, const void *x, void *y, int64_t rows, int64_t cols,
                        const float *gamma, float eps);

/* RotaryEmbedding of contiguous X, (B, H, S, D) or with three_d (B, S, H*D),
 * into y of the same shape: the first rd dims of each head rotate in pairs
 * (k, k + rd/2), or (2k, 2k+1) when interleaved, by cos/sin (dt, rows x
 * rd/2) at row pos[b * S + s] (pos_dt integers; NULL: row b * S + s). A
 * position outside [0, rows) writes zeros and sets *err to 2. */
typedef struct cuk_rope {
  int dt, three_d, interleaved, pos_dt;
  int64_t B, H, S, D, rd, rows;
  const void *x, *cos, *sin, *pos;
  void *y;
} cuk_rope;
cudaError_t cuk_rotary(cudaStream_t s, const cuk_rope *p, int *err);

/* ONNX Attention, the general case (cuda_nn23.cu): for query i of head h
 * and key j < T, score = scale * q.k (q read at b*qb + h*qh + i*qs + d,
 * k at b*kb + (h / (Hq / Hkv))*kh + j*ks + d, v likewise), capped by
 * softcap * tanh(score / softcap) when softcap > 0, plus the mask (NULL:
 * none; mask_dt CUK_BOOL: false = -inf; else added; keys j >= Tm: -inf;
 * read at b*mb + h*mh + i*mi + j*mj), -inf when causal and j > i, or
 * outside the window (left / right >= 0: i - j > left, j - i > right); o =
 * softmax V, a zero row where no key is allowed. cuk_sdpa_prepare(D, Dv)
 * once before launches (shared-memory limit; not capturable). */
typedef struct cuk_sdpa {
  int dt, mask_dt, causal;
  int B, Hq, Hkv, Sq, D, Dv;
  int64_t T, Tm, left, right;
  float scale, softcap;
  const void *q, *k, *v, *mask;
  void *o;
  long long qb, qh, qs, kb, kh, ks, vb, vh, vs, ob, oh, os, mb, mh, mi, mj;
} cuk_sdpa;
size_t cuk_sdpa_smem(int D, int Dv);
cudaError_t cuk_sdpa_prepare(int D, int Dv);
cudaError_t cuk_sdpa_run(cudaStream_t s, const cuk_sdpa *p);

/* Depthwise 2-D convolution of NHWC x [N, H, W, C] into NHWC y [N, OH, OW,
 * C] (cuda_dwconv.cu): y = act(sum over taps of x * w + bias), w float32
 * [R * S, C] (tap-major), bias float32 [C] or NULL, act a cuk_op with
 * parameters ap (CUK_COPY: none). */
typedef struct cuk_dwconv {
  int dt, act;
  float ap[2];
  int64_t N, H, W, C, OH, OW;
  int R, S, pad_h, pad_w, str_h, str_w, dil_h, dil_w;
  const void *x;
  const float *w, *bias;
  void *y;
} cuk_dwconv;
cudaError_t cuk_dwconv_nhwc(cudaStream_t s, const cuk_dwconv *p);

/* Pad (cuda_pad.cu): out (contiguous, odims) from in (contiguous, idims);
 * on axis k, output coordinate o reads input o - begin[k] when inside, else
 * by mode: 0 the constant (cval: its bytes in the storage type, esize 1, 2,
 * 4 or 8), 1 reflect, 2 edge, 3 wrap. Negative begins crop. */
typedef struct cuk_pad {
  int esize, rank, mode;
  int64_t n;
  int64_t odims[CUK_MAX_DIMS], idims[CUK_MAX_DIMS], begin[CUK_MAX_DIMS];
  unsigned long long cval;
  const void *in;
  void *out;
} cuk_pad;
cudaError_t cuk_pad_run(cudaStream_t s, const cuk_pad *p);

/* Resize of the last two axes of a contiguous [NC, H, W] tensor into [NC,
 * OH, OW] (cuda_pad.cu): mode 0 nearest (nearest: CUK_RS_* rounding), 1
 * linear (bilinear; coordinates outside the input read its edge); coord a
 * CUK_RS_* coordinate transformation; sh, sw the scales (output / input),
 * lh, lw the resized lengths (scale * input, or the sizes asked for). */
enum {
  CUK_RS_HALF_PIXEL = 0,
  CUK_RS_PYTORCH_HALF_PIXEL,
  CUK_RS_ALIGN_CORNERS,
  CUK_RS_ASYMMETRIC,
  CUK_RS_PREFER_FLOOR = 0,
  CUK_RS_PREFER_CEIL,
  CUK_RS_FLOOR,
  CUK_RS_CEIL
};
typedef struct cuk_resize {
  int dt, mode, coord, nearest;
  int64_t NC, H, W, OH, OW;
  float sh, sw, lh, lw;
  const void *x;
  void *y;
} cuk_resize;
cudaError_t cuk_resize_run(cudaStream_t s, const cuk_resize *p);

/* InstanceNormalization over rows of `cols` contiguous elements, row r of
 * channel r % C (cuda_pad.cu): y = act((x - mean) / sqrt(var + eps) *
 * scale[c] + bias[c]) (float32, C values each; act a cuk unary code with
 * parameters ap[2], CUK_COPY for none: FusedInstanceNorm's GELU). */
cudaError_t cuk_instnorm(cudaStream_t s, int dt, const void *x, void *y, int64_t rows, int64_t cols,
                         int64_t C, const float *scale, const float *bias, float eps, int act,
                         const float *ap);
/* The same on channels-last data x, y [N, L, C] (the image of a 1-D
 * convolution's result): row (n, c) is x[n, :, c]. With n_sm > 0 and a
 * workspace ws of ws_bytes (device memory free for this call), a grid of
 * too few blocks for n_sm multiprocessors splits L into slabs: partial
 * statistics into ws, then a second kernel merges them and writes y (ws
 * NULL or too small: one kernel). */
cudaError_t cuk_instnorm_nhwc(cudaStream_t s, int dt, const void *x, void *y, int64_t N, int64_t L,
                              int64_t C, const float *scale, const float *bias, float eps, int act,
                              const float *ap, int n_sm, void *ws, int64_t ws_bytes);
/* (The split's choice: cuk_instnorm_nhwc_slabs, cuda_inorm.h.) */

#ifdef __cplusplus
}
#endif

#endif
