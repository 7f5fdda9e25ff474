/* QuantizeLinear, DequantizeLinear (per tensor, or per axis from opset 13)
 * and DynamicQuantizeLinear. Rounding is half to even; results saturate to
 * the range of the quantized type. */
#include <math.h>
#include <stdlib.h>

#include "ops/image_impl.h"

/* How a scale (and its zero point) applies to x: element i of x uses
 * parameter (i / inner) % ch. Per tensor: ch = 1. */
static ait_status q_layout(const ait_node *node, const ait_tensor *x, const ait_tensor *scale,
                           const ait_tensor *zp, int64_t *ch, int64_t *inner) {
  int64_t ns = ait_tensor_numel(scale);
  if (zp && ait_tensor_numel(zp) != ns)
    return ait_err(AIT_E_SHAPE, "zero point has %lld values but scale has %lld",
                   (long long)ait_tensor_numel(zp), (long long)ns);
  if (ns == 1) {
    *ch = 1;
    *inner = ait_tensor_numel(x);
    return AIT_OK;
  }
  if (node->opset < 13)
    return ait_err(AIT_E_SHAPE, "scale must be a scalar before opset 13, got %lld values",
                   (long long)ns);
  if (scale->rank != 1)
    return ait_err(AIT_E_SHAPE, "scale must be a scalar or 1-D, got rank %d", scale->rank);
  int axis;
  AIT_TRY(ait_norm_axis(ait_attr_int(node, "axis", 1), x->rank, &axis));
  if (x->dims[axis] != ns)
    return ait_err(AIT_E_SHAPE, "scale has %lld values but X has %lld along axis %d", (long long)ns,
                   (long long)x->dims[axis], axis);
  *ch = ns;
  *inner = ait_shape_numel(x->rank - axis - 1, x->dims + axis + 1);
  return AIT_OK;
}

static bool is_float(ait_dtype dt) {
  const ait_dtype_traits *tr = ait_dtype_traits_of(dt);
  return tr && tr->is_float;
}

IMG_KERNEL(img_quantize_linear) {
  const ait_tensor *x = img_in(in, n_in, 0), *sc = img_in(in, n_in, 1), *zp = img_in(in, n_in, 2);
  if (!x || !sc) return ait_err(AIT_E_INVALID_ARG, "x and y_scale are required");
  if (!is_float(x->dtype) && x->dtype != AIT_INT32)
    return ait_err(AIT_E_DTYPE, "x must be float or int32, got %s", ait_dtype_name(x->dtype));
  if (!is_float(sc->dtype))
    return ait_err(AIT_E_DTYPE, "y_scale must be float, got %s", ait_dtype_name(sc->dtype));
  ait_dtype ydt = zp ? zp->dtype : AIT_UINT8;
  int64_t lo, hi;
  if (!img_qrange(ydt, &lo, &hi))
    return ait_err(AIT_E_UNSUPPORTED, "cannot quantize to %s", ait_dtype_name(ydt));
  int64_t ch, inner;
  AIT_TRY(q_layout(node, x, sc, zp, &ch, &inner));

  AIT_TRY(img_new(ydt, x->rank, x->dims, &out[0]));
  const ait_dtype_traits *xt = ait_dtype_traits_of(x->dtype), *st = ait_dtype_traits_of(sc->dtype);
  const ait_dtype_traits *yt = ait_dtype_traits_of(ydt);
  const ait_dtype_traits *zt = zp ? ait_dtype_traits_of(zp->dtype) : NULL;
  /* float32 / float32 divides in float, as the ONNX reference does */
  bool f32 = x->dtype == AIT_FLOAT32 && sc->dtype == AIT_FLOAT32;
  const float *xf = x->data;
  void *y = out[0]->data;
  int64_t n = ait_tensor_numel(x), outer = n ? n / (ch * inner) : 0, i = 0;
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t c = 0; c < ch; c++) {
      double s = ait_load_f64(st, sc->data, c);
      int64_t z = zt ? ait_load_i64(zt, zp->data, c) : 0;
      for (int64_t k = 0; k < inner; k++, i++) {
        double q = f32 ? (double)(xf[i] / (float)s) : ait_load_f64(xt, x->data, i) / s;
        int64_t v = q != q ? z : img_round_sat(q, lo - z, hi - z) + z;
        if (ydt == AIT_UINT8)
          ((uint8_t *)y)[i] = (uint8_t)v;
        else if (ydt == AIT_INT8)
          ((int8_t *)y)[i] = (int8_t)v;
        else
          ait_store_i64(yt, y, i, v);
      }
    }
  }
  return AIT_OK;
}

IMG_KERNEL(img_dequantize_linear) {
  const ait_tensor *x = img_in(in, n_in, 0), *sc = img_in(in, n_in, 1), *zp = img_in(in, n_in, 2);
  if (!x || !sc) return ait_err(AIT_E_INVALID_ARG, "x and x_scale are required");
  int64_t lo, hi;
  if (!img_qrange(x->dtype, &lo, &hi) && x->dtype != AIT_INT32)
    return ait_err(AIT_E_DTYPE, "cannot dequantize %s", ait_dtype_name(x->dtype));
  if (!is_float(sc->dtype))
    return ait_err(AIT_E_DTYPE, "x_scale must be float, got %s", ait_dtype_name(sc->dtype));
  if (zp && zp->dtype != x->dtype)
    return ait_err(AIT_E_DTYPE, "x_zero_point is %s but x is %s", ait_dtype_name(zp->dtype),
                   ait_dtype_name(x->dtype));
  int64_t ch, inner;
  AIT_TRY(q_layout(node, x, sc, zp, &ch, &inner));

  AIT_TRY(img_new(sc->dtype, x->rank, x->dims, &out[0]));
  const ait_dtype_traits *xt = ait_dtype_traits_of(x->dtype), *st = ait_dtype_traits_of(sc->dtype);
  const ait_dtype_traits *zt = zp ? ait_dtype_traits_of(zp->dtype) : NULL;
  int64_t n = ait_tensor_numel(x), outer = n ? n / (ch * inner) : 0, i = 0;
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t c = 0; c < ch; c++) {
      int64_t z = zt ? ait_load_i64(zt, zp->data, c) : 0;
      double s = ait_load_f64(st, sc->data, c);
      for (int64_t k = 0; k < inner; k++, i++) {
        int64_t q = x->dtype == AIT_UINT8  ? ((const uint8_t *)x->data)[i]
                    : x->dtype == AIT_INT8 ? ((const int8_t *)x->data)[i]
                                           : ait_load_i64(xt, x->data, i);
        float d = (float)(q - z);
        if (sc->dtype == AIT_FLOAT32)
          ((float *)out[0]->data)[i] = d * (float)s;
        else
          ait_store_f64(st, out[0]->data, i, (double)d * s);
      }
    }
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
  same_shape(g, node, 0, ait_node_in(g, node, 0), zp ? zp->dtype : AIT_UINT8);
  return AIT_OK;
}

IMG_SHAPE(img_dequantize_linear_shape) {
  const ait_value *sc = ait_node_in(g, node, 1);
  same_shape(g, node, 0, ait_node_in(g, node, 0), sc ? sc->dtype : AIT_FLOAT32);
  return AIT_OK;
}

IMG_SHAPE(img_dynamic_quantize_linear_shape) {
  same_shape(g, node, 0, ait_node_in(g, node, 0), AIT_UINT8);
  if (node->n_out > 1) ait_set_out(g, node, 1, AIT_FLOAT32, 0, NULL);
  if (node->n_out > 2) ait_set_out(g, node, 2, AIT_UINT8, 0, NULL);
  return AIT_OK;
}
