/* Private to the 'image' operator family: quantization (QuantizeLinear,
 * DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, QLinearMatMul,
 * ConvInteger, QLinearConv), resampling (Resize, Upsample, GridSample,
 * MaxUnpool), detection (RoiAlign, NonMaxSuppression) and Det.
 *
 * Kernels follow the contract of ops/op.h. Float math runs in double (or
 * float where the ONNX reference computes in float32 and rounding of the
 * result depends on it); every dtype passes through the dtype traits. */
#ifndef AIT_OPS_IMAGE_IMPL_H
#define AIT_OPS_IMAGE_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/shape.h"
#include "ops/op.h"

/* Input i, or NULL when absent (beyond n_in, NULL, an optional without a
 * value). */
static inline const ait_tensor *img_in(const ait_tensor *const *in, int n_in, int i) {
  if (i >= n_in || i < 0 || !in[i] || in[i]->kind != AIT_KIND_TENSOR) return NULL;
  return in[i];
}

/* Like img_in, but a tensor with no elements also counts as absent (Resize's
 * empty roi/scales inputs). */
static inline const ait_tensor *img_in_nonempty(const ait_tensor *const *in, int n_in, int i) {
  const ait_tensor *t = img_in(in, n_in, i);
  return t && ait_tensor_numel(t) > 0 ? t : NULL;
}

/* New output tensor stored in *out; the status of ait_tensor_new on failure. */
ait_status img_new(ait_dtype dt, int rank, const int64_t *dims, ait_tensor **out);

/* Whole tensor as a new double array (malloc'ed, caller frees; NULL numel 0
 * gives a 1-element array). Fails with AIT_E_DTYPE for non-numeric data. */
ait_status img_load_f64(const ait_tensor *t, double **out);

/* The inclusive integer range of a quantized dtype (uint8, int8, uint16,
 * int16); false for other dtypes. */
bool img_qrange(ait_dtype dt, int64_t *lo, int64_t *hi);

/* Round half to even and saturate into [lo, hi]; NaN gives 0 before the
 * zero point is added by the caller. */
int64_t img_round_sat(double v, int64_t lo, int64_t hi);

/* Keys cubic convolution weights of the taps at offsets -1, 0, 1, 2 from
 * floor(x), for r = x - floor(x) in [0, 1) and coefficient A. */
void img_cubic_coeffs(double r, double A, double *c);

/* A Resize (opset 11+) of a 4-D input over its last two axes, as native's
 * kernel runs it: output dims and per output row / column the ntap (1:
 * nearest, 2: linear) input indices and weights of the reference's
 * rz_taps (image_resize.c), so the two cannot disagree on coordinates.
 * Arrays malloc'ed (img_resize2d_free). AIT_E_UNSUPPORTED, error clear,
 * for cubic, tf_crop_and_resize, exclude_outside, N or C resized, or
 * attributes the reference would refuse (it reports those). */
typedef struct img_resize2d {
  int64_t out[4];
  int ntap;
  int64_t *ih, *iw; /* [out[2] * ntap], [out[3] * ntap] */
  float *wh, *ww;
} img_resize2d;
ait_status img_resize2d_plan(const ait_node *node, const ait_tensor *const *in, int n_in,
                             img_resize2d *plan);
void img_resize2d_free(img_resize2d *plan);

/* Upper bound on strides, dilations, pads and kernel sizes, so that
 * geometry arithmetic cannot overflow int64. */
#define IMG_ATTR_MAX ((int64_t)1 << 30)

/* ---- convolution geometry (ConvInteger, QLinearConv) --------------------- */

typedef struct img_conv {
  int nsp;                     /* number of spatial dims */
  int64_t n, cin, cout, group; /* batch, input/output channels, groups */
  int64_t in[AIT_MAX_RANK], k[AIT_MAX_RANK], out[AIT_MAX_RANK];
  int64_t s[AIT_MAX_RANK], d[AIT_MAX_RANK], pb[AIT_MAX_RANK], pe[AIT_MAX_RANK];
} img_conv;

/* Fill c from X's and W's shapes and the node's Conv attributes (group,
 * kernel_shape, pads, strides, dilations, auto_pad). */
ait_status img_conv_setup(const ait_node *node, int xrank, const int64_t *xd, int wrank,
                          const int64_t *wd, img_conv *c);

/* y[n][oc][o...] = sum over the group's input channels and kernel taps of
 * x * w (+ bias[oc] when bias is non-NULL). x: [n, cin, in...], w: [cout,
 * cin/group, k...], both already shifted by their zero points; y holds
 * n * cout * prod(out) accumulators. Taps in the padding contribute 0. */
void img_conv_int(const img_conv *c, const int32_t *x, const int32_t *w, const int32_t *bias,
                  int64_t *y);

/* ---- kernels ------------------------------------------------------------- */

#define IMG_KERNEL(name)                                                                           \
  ait_status name(ait_kctx *ctx, const ait_node *node, const ait_tensor *const *in, int n_in,      \
                  ait_tensor **out, int n_out)
#define IMG_SHAPE(name) ait_status name(ait_graph *g, const ait_node *node)

IMG_KERNEL(img_quantize_linear);
IMG_KERNEL(img_dequantize_linear);
IMG_KERNEL(img_dynamic_quantize_linear);
IMG_SHAPE(img_quantize_linear_shape);
IMG_SHAPE(img_dequantize_linear_shape);
IMG_SHAPE(img_dynamic_quantize_linear_shape);

IMG_KERNEL(img_matmul_integer);
IMG_KERNEL(img_qlinear_matmul);
IMG_SHAPE(img_matmul_integer_shape);
IMG_SHAPE(img_qlinear_matmul_shape);

IMG_KERNEL(img_conv_integer);
IMG_KERNEL(img_qlinear_conv);
IMG_SHAPE(img_conv_integer_shape);
IMG_SHAPE(img_qlinear_conv_shape);

IMG_KERNEL(img_resize);
IMG_KERNEL(img_upsample);
IMG_SHAPE(img_resize_shape);
IMG_SHAPE(img_upsample_shape);

IMG_KERNEL(img_grid_sample);
IMG_KERNEL(img_affine_grid);
IMG_KERNEL(img_max_unpool);
IMG_SHAPE(img_grid_sample_shape);
IMG_SHAPE(img_affine_grid_shape);
IMG_SHAPE(img_max_unpool_shape);

IMG_KERNEL(img_roi_align);
IMG_KERNEL(img_non_max_suppression);
IMG_SHAPE(img_roi_align_shape);
IMG_SHAPE(img_non_max_suppression_shape);

IMG_KERNEL(img_det);
IMG_SHAPE(img_det_shape);

#endif
