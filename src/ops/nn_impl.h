/* Private interface of the 'nn' operator family (src/ops/nn_*.c): the
 * float32 GEMM every hot kernel is built on, sliding-window geometry shared by
 * Conv/ConvTranspose/pools (kernels and shape functions), dtype conversion
 * helpers, and the kernel and shape-function declarations listed in nn.c. */
#ifndef AIT_OPS_NN_IMPL_H
#define AIT_OPS_NN_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/shape.h"
#include "ops/op.h"

/* ---- float32 GEMM (nn_gemm.c) ------------------------------------------ */

/* C[M,N] = A[M,K] * B[K,N]            (accumulate == false)
 * C[M,N] = C[M,N] + A[M,K] * B[K,N]   (accumulate == true)
 * A element (i,p) is at A[i*rsa + p*csa], B element (p,j) at B[p*rsb + j*csb]
 * (so transposed operands are just other strides); C is row-major with row
 * stride ldc. Each C[i][j] is summed in float strictly in order p = 0..K-1,
 * starting from 0 (or from C), with no fused multiply-add: the result equals
 * the naive loop bit for bit, whatever the blocking. Returns AIT_E_NOMEM when
 * the packing buffers cannot be allocated. */
ait_status nn_sgemm(int64_t M, int64_t N, int64_t K, const float *A, int64_t rsa, int64_t csa,
                    const float *B, int64_t rsb, int64_t csb, float *C, int64_t ldc,
                    bool accumulate);

/* ---- dtype helpers (nn_util.c) ----------------------------------------- */

/* New float32 / float64 copy of a numeric tensor's elements (malloc; the
 * caller frees). NULL with AIT_E_NOMEM set on failure. For float32 / float64
 * input the copy is a memcpy. */
float *nn_load_f32(const ait_tensor *t);
double *nn_load_f64(const ait_tensor *t);
/* Store n values converted to t's dtype into t->data. */
void nn_store_f32(ait_tensor *t, const float *v);
void nn_store_f64(ait_tensor *t, const double *v);
/* Float32 view of a float tensor: its own data when it is float32 (*owned =
 * NULL), else a converted copy in *owned that the caller frees. */
ait_status nn_f32_in(const ait_tensor *t, const float **v, float **owned);
/* Float32 buffer to write tensor t's values into: t->data when t is float32,
 * else a new scratch buffer in *owned; nn_f32_done() converts and frees it. */
ait_status nn_f32_out(ait_tensor *t, float **v, float **owned);
void nn_f32_done(ait_tensor *t, float *owned);
/* *out = new zeroed tensor; AIT_E_NOMEM (message already set) on failure. */
ait_status nn_new(ait_tensor **out, ait_dtype dt, int rank, const int64_t *dims);
/* AIT_E_DTYPE unless t is float16/bfloat16/float32/float64. */
ait_status nn_check_float(const ait_tensor *t, const char *what);
/* AIT_E_DTYPE unless a and b have the same dtype. */
ait_status nn_check_same_dtype(const ait_tensor *a, const ait_tensor *b, const char *what);

/* ---- sliding windows (nn_window.c) ------------------------------------- */

#define NN_MAX_SP (AIT_MAX_RANK - 2)

/* Geometry of a windowed op over nsp spatial dims (input N x C x in[...]). */
typedef struct nn_win {
  int nsp;
  int64_t in[NN_MAX_SP], out[NN_MAX_SP]; /* spatial sizes; -1 = unknown (shape fns) */
  int64_t k[NN_MAX_SP];                  /* kernel size */
  int64_t s[NN_MAX_SP], d[NN_MAX_SP];    /* strides, dilations */
  int64_t pb[NN_MAX_SP], pe[NN_MAX_SP];  /* pads at the begin / end */
  int64_t out_pad[NN_MAX_SP];            /* ConvTranspose output_padding */
} nn_win;

/* Conv/pool geometry from the node's attributes (kernel_shape unless
 * `kernel` is given, strides, dilations, pads, auto_pad) and the spatial
 * input sizes (-1 = unknown: the output size is then -1 too). `ceil_mode`
 * selects ceil rounding for pools (the last window must start inside the
 * input or its begin padding). use_dilations: false for ops without it. */
ait_status nn_win_conv(const ait_node *node, int nsp, const int64_t *in, const int64_t *kernel,
                       bool ceil_mode, bool use_dilations, nn_win *w);
/* ConvTranspose geometry (output_shape, output_padding, auto_pad, pads). */
ait_status nn_win_convt(const ait_node *node, int nsp, const int64_t *in, const int64_t *kernel,
                        nn_win *w);
/* Whether this pool node's opset has the dilations attribute. */
bool nn_pool_has_dilations(const ait_node *node);
/* Product of w->out / w->in / w->k over the spatial dims. */
/* How many of a window's taps k = 0..K-1 (at start + k d, d >= 1) lie below
 * lim, in closed form: K is the model's (2^40 taps over a 32-wide input
 * must not take 2^40 steps). Inline, and dividing only when dilated: the
 * pooling kernels call it per output. */
static inline int64_t nn_win_taps_below(int64_t start, int64_t d, int64_t K, int64_t lim) {
  __int128 gap = (__int128)lim - start;
  if (gap <= 0) return 0;
  __int128 n = d == 1 ? gap : (gap + d - 1) / d;
  return n < K ? (int64_t)n : K;
}
int64_t nn_win_out_numel(const nn_win *w);
int64_t nn_win_in_numel(const nn_win *w);
int64_t nn_win_k_numel(const nn_win *w);

/* ---- Einsum as batched GEMM (nn_einsum_gemm.c) ------------------------- */

/* Y = einsum of two float32/float16/bfloat16 operands whose axes carry labels
 * lab_a / lab_b (ids < n_labels <= 64, size[] per label) into out_labs. Sets
 * *done when the contraction fits a batched GEMM (no diagonals, no sums over
 * one operand only, no size-1 broadcasting) and Y is filled; leaves *done
 * false and Y untouched otherwise. */
ait_status nn_einsum_gemm(const ait_tensor *A, const ait_tensor *B, const int *lab_a,
                          const int *lab_b, const int *out_labs, int n_out, const int64_t *size,
                          int n_labels, ait_tensor *Y, bool *done);

/* ---- kernels ------------------------------------------------------------- */

#define NN_KERNEL(name)                                                                            \
  ait_status name(ait_kctx *ctx, const ait_node *node, const ait_tensor *const *in, int n_in,      \
                  ait_tensor **out, int n_out)

/* First statement of kernels that read in[0]. */
#define NN_NEED_IN0                                                                                \
  if (n_in < 1 || !in[0]) return ait_err(AIT_E_INVALID_ARG, "input 0 is required")

NN_KERNEL(nn_gemm_kernel);
NN_KERNEL(nn_matmul_kernel);
NN_KERNEL(nn_conv_kernel);
NN_KERNEL(nn_convt_kernel);
NN_KERNEL(nn_maxpool_kernel);
NN_KERNEL(nn_avgpool_kernel);
NN_KERNEL(nn_lppool_kernel);
NN_KERNEL(nn_global_avgpool_kernel);
NN_KERNEL(nn_global_maxpool_kernel);
NN_KERNEL(nn_global_lppool_kernel);
NN_KERNEL(nn_batchnorm_kernel);
NN_KERNEL(nn_instancenorm_kernel);
NN_KERNEL(nn_layernorm_kernel);
NN_KERNEL(nn_lrn_kernel);
NN_KERNEL(nn_mvn_kernel);
NN_KERNEL(nn_einsum_kernel);
NN_KERNEL(nn_rmsnorm_kernel);
NN_KERNEL(nn_groupnorm_kernel);
NN_KERNEL(nn_lpnorm_kernel);
NN_KERNEL(nn_attention_kernel);
NN_KERNEL(nn_rope_kernel);
NN_KERNEL(nn_flex_attention_kernel);
NN_KERNEL(nn_deform_conv_kernel);
NN_KERNEL(nn_col2im_kernel);
NN_KERNEL(nn_linear_attention_kernel);
NN_KERNEL(nn_causal_conv_kernel);

/* ---- shape functions ----------------------------------------------------- */

ait_status nn_gemm_shape(ait_graph *g, const ait_node *n);
ait_status nn_matmul_shape(ait_graph *g, const ait_node *n);
ait_status nn_conv_shape(ait_graph *g, const ait_node *n);
ait_status nn_convt_shape(ait_graph *g, const ait_node *n);
ait_status nn_pool_shape(ait_graph *g, const ait_node *n); /* also MaxPool Indices */
ait_status nn_global_pool_shape(ait_graph *g, const ait_node *n);
ait_status nn_batchnorm_shape(ait_graph *g, const ait_node *n);
ait_status nn_layernorm_shape(ait_graph *g, const ait_node *n);
ait_status nn_einsum_shape(ait_graph *g, const ait_node *n);
ait_status nn_attention_shape(ait_graph *g, const ait_node *n);
ait_status nn_flex_attention_shape(ait_graph *g, const ait_node *n);
ait_status nn_deform_conv_shape(ait_graph *g, const ait_node *n);
ait_status nn_col2im_shape(ait_graph *g, const ait_node *n);
ait_status nn_linear_attention_shape(ait_graph *g, const ait_node *n);
ait_status nn_causal_conv_shape(ait_graph *g, const ait_node *n);

#endif
