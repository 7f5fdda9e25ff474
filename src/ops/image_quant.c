/* QuantizeLinear, DequantizeLinear (per tensor, per axis from opset 13,
 * blocked from opset 21; 8-bit floats from 19, 4-bit types from 21, 2-bit
 * from 25) and DynamicQuantizeLinear. Rounding is half to even; integer
 * results saturate to the range of the quantized type, float ones follow
 * `saturate` as Cast does (src/core/dtype_small.c). */
#include <math.h>
#include <stdlib.h>

#include "ops/image_impl.h"

/* How a scale (and its zero point) applies to x. x is read as
 * [outer, len, inner] around the quantization axis; element (o, a, k) uses
 * parameter o * ostride + (a / block) * astride + k * kstride. Per tensor
 * every stride is 0; per axis (opset 13) astride is 1; blocked (opset 21:
 * the scale has x's rank, its axis ceil(len / block_size) long) all three
 * count. */
typedef struct q_layout {
  int64_t outer, len, inner, block;
  int64_t ostride, astride, kstride;
} q_layout;

static ait_status q_layout_of(const ait_node *node, const ait_tensor *x, const ait_tensor *scale,
                              const ait_tensor *zp, q_layout *l) {
  int64_t ns = ait_tensor_numel(scale), n = ait_tensor_numel(x);
  if (zp && ait_tensor_numel(zp) != ns)
    return ait_err(AIT_E_SHAPE, "zero point has %lld values but scale has %lld",
                   (long long)ait_tensor_numel(zp), (long long)ns);
  *l = (q_layout){1, 1, n, 1, 0, 0, 0};
  int64_t block = ait_attr_int(node, "block_size", 0);
  if (ns == 1 && block == 0) return AIT_OK;
  if (node->opset < 13)
    return ait_err(AIT_E_SHAPE, "scale must be a scalar before opset 13, got %lld values",
                   (long long)ns);
  int axis;
  AIT_TRY(ait_norm_axis(ait_attr_int(node, "axis", 1), x->rank, &axis));
  l->outer = ait_shape_numel(axis, x->dims);
  l->len = x->dims[axis];
  l->inner = ait_shape_numel(x->rank - axis - 1, x->dims + axis + 1);
  if (block == 0) {
    if (scale->rank != 1)
      return ait_err(AIT_E_SHAPE, "scale must be a scalar or 1-D without block_size, got rank %d",
                     scale->rank);
    if (l->len != ns)
      return ait_err(AIT_E_SHAPE, "scale has %lld values but X has %lld along axis %d",
                     (long long)ns, (long long)l->len, axis);
    l->astride = 1;
    return AIT_OK;
  }
  if (node->opset < 21 || block < 0)
    return ait_err(AIT_E_INVALID_ARG, "block_size %lld needs opset >= 21 and a positive value",
                   (long long)block);
  if (scale->rank != x->rank)
    return ait_err(AIT_E_SHAPE, "a blocked scale must have X's rank %d, got %d", x->rank,
                   scale->rank);
  for (int d = 0; d < x->rank; d++) {
    int64_t want = d == axis ? (x->dims[d] + block - 1) / block : x->dims[d];
    if (scale->dims[d] != want)
      return ait_err(AIT_E_SHAPE, "blocked scale dim %d is %lld, expected %lld (block_size %lld)",
                     d, (long long)scale->dims[d], (long long)want, (long long)block);
  }
  int64_t sa = scale->dims[axis];
  l->block = block;
  l->ostride = sa * l->inner;
  l->astride = l->inner;
  l->kstride = 1;
  return AIT_OK;
}

static bool is_float(ait_dtype dt) {
  const ait_dtype_traits *tr = ait_dtype_traits_of(dt);
  return tr && tr->is_float && !ait_dtype_is_small_float(dt);
}

/* The quantized type: the zero point's, else output_dtype (opset 21), else
 * uint8; both given must agree. */
static ait_status q_out_dtype(const ait_node *node, const ait_tensor *zp, ait_dtype *dt) {
  int64_t want = ait_attr_int(node, "output_dtype", 0);
  if (zp && want && want != (int64_t)zp->dtype)
    return ait_err(AIT_E_DTYPE, "output_dtype %lld differs from the zero point's %s",
                   (long long)want, ait_dtype_name(zp->dtype));
  *dt = zp ? zp->dtype : want ? (ait_dtype)want : AIT_UINT8;
  return AIT_OK;
}

IMG_KERNEL(img_quantize_linear) {
  const ait_tensor *x = img_in(in, n_in, 0), *sc = img_in(in, n_in, 1), *zp = img_in(in, n_in, 2);
  if (!x || !sc) return ait_err(AIT_E_INVALID_ARG, "x and y_scale are required");
  if (!is_float(x->dtype) && x->dtype != AIT_INT32)
    return ait_err(AIT_E_DTYPE, "x must be float or int32, got %s", ait_dtype_name(x->dtype));
  if (!is_float(sc->dtype))
    return ait_err(AIT_E_DTYPE, "y_scale must be float, got %s", ait_dtype_name(sc->dtype));
  ait_dtype ydt = AIT_UINT8;
  AIT_TRY(q_out_dtype(node, zp, &ydt));
  bool small_float = ait_dtype_is_small_float(ydt) && ydt != AIT_FLOAT8E8M0;
  bool saturate = ait_attr_int(node, "saturate", 1) != 0;
  int64_t lo = 0, hi = 0;
  if (!small_float && !img_qrange(ydt, &lo, &hi))
    return ait_err(AIT_E_UNSUPPORTED, "cannot quantize to %s", ait_dtype_name(ydt));
  q_layout l;
  AIT_TRY(q_layout_of(node, x, sc, zp, &l));

  AIT_TRY(img_new(ydt, x->rank, x->dims, &out[0]));
  const ait_dtype_traits *xt = ait_dtype_traits_of(x->dtype), *st = ait_dtype_traits_of(sc->dtype);
  const ait_dtype_traits *yt = ait_dtype_traits_of(ydt);
  const ait_dtype_traits *zt = zp ? ait_dtype_traits_of(zp->dtype) : NULL;
  /* the division runs in `precision` (opset 23), else in y_scale's type:
   * float32 / float32 divides in float, as the ONNX reference does */
  int64_t prec = ait_attr_int(node, "precision", 0);
  bool f32 = x->dtype == AIT_FLOAT32 && (prec ? prec == AIT_FLOAT32 : sc->dtype == AIT_FLOAT32);
  void *y = out[0]->data;
  int64_t i = 0;
  for (int64_t o = 0; o < l.outer; o++)
    for (int64_t a = 0; a < l.len; a++)
      for (int64_t k = 0; k < l.inner; k++, i++) {
        int64_t p = o * l.ostride + (a / l.block) * l.astride + k * l.kstride;
        double s = ait_load_f64(st, sc->data, p);
        double q = f32 ? (double)(((const float *)x->data)[i] / (float)s)
                       : ait_load_f64(xt, x->data, i) / s;
        if (small_float) {
          double z = zt ? ait_load_f64(zt, zp->data, p) : 0;
          ((uint8_t *)y)[i] = ait_small_from_f64(ydt, q + z, saturate);
          continue;
        }
        int64_t z = zt ? ait_load_i64(zt, zp->data, p) : 0;
        int64_t v = q != q ? z : img_round_sat(q, lo - z, hi - z) + z;
        if (ydt == AIT_UINT8)
          ((uint8_t *)y)[i] = (uint8_t)v;
        else if (ydt == AIT_INT8)
          ((int8_t *)y)[i] = (int8_t)v;
        else
          ait_store_i64(yt, y, i, v);
      }
  return AIT_OK;
}

IMG_KERNEL(img_dequantize_linear) {
  const ait_tensor *x = img_in(in, n_in, 0), *sc = img_in(in, n_in, 1), *zp = img_in(in, n_in, 2);
  if (!x || !sc) return ait_err(AIT_E_INVALID_ARG, "x and x_scale are required");
  int64_t lo, hi;
  bool small_float = ait_dtype_is_small_float(x->dtype);
  if (!small_float && !img_qrange(x->dtype, &lo, &hi) && x->dtype != AIT_INT32)
    return ait_err(AIT_E_DTYPE, "cannot dequantize %s", ait_dtype_name(x->dtype));
  if (!is_float(sc->dtype))
    return ait_err(AIT_E_DTYPE, "x_scale must be float, got %s", ait_dtype_name(sc->dtype));
  if (zp && zp->dtype != x->dtype)
    return ait_err(AIT_E_DTYPE, "x_zero_point is %s but x is %s", ait_dtype_name(zp->dtype),
                   ait_dtype_name(x->dtype));
  ait_dtype ydt = (ait_dtype)ait_attr_int(node, "output_dtype", sc->dtype);
  if (!is_float(ydt)) return ait_err(AIT_E_DTYPE, "output_dtype %d is not a float type", (int)ydt);
  q_layout l;
  AIT_TRY(q_layout_of(node, x, sc, zp, &l));

  AIT_TRY(img_new(ydt, x->rank, x->dims, &out[0]));
  const ait_dtype_traits *xt = ait_dtype_traits_of(x->dtype), *st = ait_dtype_traits_of(sc->dtype);
  const ait_dtype_traits *yt = ait_dtype_traits_of(ydt);
  const ait_dtype_traits *zt = zp ? ait_dtype_traits_of(zp->dtype) : NULL;
  int64_t i = 0;
  for (int64_t o = 0; o < l.outer; o++)
    for (int64_t a = 0; a < l.len; a++)
      for (int64_t k = 0; k < l.inner; k++, i++) {
        int64_t p = o * l.ostride + (a / l.block) * l.astride + k * l.kstride;
        double s = ait_load_f64(st, sc->data, p);
        if (small_float) {
          double d = ait_load_f64(xt, x->data, i) - (zt ? ait_load_f64(zt, zp->data, p) : 0);
          ait_store_f64(yt, out[0]->data, i,
                        ydt == AIT_FLOAT32 ? (double)((float)d * (float)s) : d * s);
          continue;
        }
        int64_t z = zt ? ait_load_i64(zt, zp->data, p) : 0;
        int64_t q = x->dtype == AIT_UINT8  ? ((const uint8_t *)x->data)[i]
                    : x->dtype == AIT_INT8 ? ((const int8_t *)x->data)[i]
                                           : ait_load_i64(xt, x->data, i);
        float d = (float)(q - z);
        if (ydt == AIT_FLOAT32)
          ((float *)out[0]->data)[i] = d * (float)s;
        else
          ait_store_f64(yt, out[0]->data, i, (double)d * s);
      }
  return AIT_OK;
}

/* y_scale = (max(0, max x) - min(0, min x)) / 255, zero point rounds
 * -min / scale; all in float32 as the spec's reference does. */
IMG_KERNEL(img_dynamic_quantize_linear) {
  const ait_tensor *x = img_in(in, n_in, 0);
  if (!x) return ait_err(AIT_E_INVALID_ARG, "x is required");
  if (x->dtype != AIT_FLOAT32)
    return ait_err(AIT_E_DTYPE, "x must be float32, got %s", ait_dtype_name(x->dtype));
  const float *xd = x->data;
  int64_t n = ait_tensor_numel(x);
  float mx = 0.0f, mn = 0.0f;
  for (int64_t i = 0; i < n; i++) {
    if (xd[i] > mx) mx = xd[i];
    if (xd[i] < mn) mn = xd[i];
  }
  float scale = (mx == mn ? 1.0f : mx - mn) / 255.0f;
  float zpf = 0.0f - mn / scale;
  if (zpf < 0.0f) zpf = 0.0f;
  if (zpf > 255.0f) zpf = 255.0f;
  int64_t zp = img_round_sat(zpf, 0, 255);

  AIT_TRY(img_new(AIT_UINT8, x->rank, x->dims, &out[0]));
  uint8_t *y = out[0]->data;
  for (int64_t i = 0; i < n; i++) {
    float q = xd[i] / scale;
    y[i] = (uint8_t)(q != q ? zp : img_round_sat(nearbyintf(q) + (double)zp, 0, 255));
  }
  if (n_out > 1) {
    AIT_TRY(img_new(AIT_FLOAT32, 0, NULL, &out[1]));
    *(float *)out[1]->data = scale;
  }
  if (n_out > 2) {
    AIT_TRY(img_new(AIT_UINT8, 0, NULL, &out[2]));
    *(uint8_t *)out[2]->data = (uint8_t)zp;
  }
  return AIT_OK;
}

/* ---- shapes -------------------------------------------------------------- */

static void same_shape(ait_graph *g, const ait_node *node, int o, const ait_value *x,
                       ait_dtype dt) {
  ait_set_out(g, node, o, dt, x ? x->rank : -1, x && x->rank >= 0 ? x->dims : NULL);
}

IMG_SHAPE(img_quantize_linear_shape) {
  const ait_value *zp = ait_node_in(g, node, 2);
  ait_dtype dt = (ait_dtype)ait_attr_int(node, "output_dtype", AIT_UINT8);
  same_shape(g, node, 0, ait_node_in(g, node, 0), zp ? zp->dtype : dt);
  return AIT_OK;
}

IMG_SHAPE(img_dequantize_linear_shape) {
  const ait_value *sc = ait_node_in(g, node, 1);
  ait_dtype dt = sc ? sc->dtype : AIT_FLOAT32;
  same_shape(g, node, 0, ait_node_in(g, node, 0),
             (ait_dtype)ait_attr_int(node, "output_dtype", dt));
  return AIT_OK;
}

IMG_SHAPE(img_dynamic_quantize_linear_shape) {
  same_shape(g, node, 0, ait_node_in(g, node, 0), AIT_UINT8);
  if (node->n_out > 1) ait_set_out(g, node, 1, AIT_FLOAT32, 0, NULL);
  if (node->n_out > 2) ait_set_out(g, node, 2, AIT_UINT8, 0, NULL);
  return AIT_OK;
}
