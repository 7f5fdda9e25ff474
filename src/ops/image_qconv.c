/* ConvInteger and QLinearConv on 8-bit operands: shift X by its (per
 * tensor) zero point and W by its per-tensor or per-output-channel zero
 * point, then run the int64-accumulating convolution of image_common.c.
 * Padding therefore contributes the zero point, i.e. the real value 0. */
#include <stdlib.h>

#include "ops/image_impl.h"

static bool is_q8(ait_dtype dt) { return dt == AIT_UINT8 || dt == AIT_INT8; }

/* dst[i] = t[i] - zp[(i / inner) % nzp], with zp a scalar or one value per
 * block of `inner` elements (per output channel for W). NULL zp is 0. */
static ait_status shifted(const ait_tensor *t, const ait_tensor *zp, int64_t inner,
                          const char *what, int32_t **dst) {
  int64_t n = ait_tensor_numel(t), nz = zp ? ait_tensor_numel(zp) : 1;
  if (zp && zp->dtype != t->dtype)
    return ait_err(AIT_E_DTYPE, "%s zero point is %s but the tensor is %s", what,
                   ait_dtype_name(zp->dtype), ait_dtype_name(t->dtype));
  if (zp && nz != 1 && (zp->rank != 1 || nz != t->dims[0]))
    return ait_err(AIT_E_SHAPE, "%s zero point must be a scalar or have %lld values, got %lld",
                   what, (long long)t->dims[0], (long long)nz);
  int32_t *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
  if (!v) return ait_err(AIT_E_NOMEM, "cannot allocate %s", what);
  const ait_dtype_traits *tr = ait_dtype_traits_of(t->dtype);
  const ait_dtype_traits *zt = zp ? ait_dtype_traits_of(zp->dtype) : NULL;
  for (int64_t i = 0; i < n; i++) {
    int64_t z = zt ? ait_load_i64(zt, zp->data, nz == 1 ? 0 : (i / inner) % nz) : 0;
    v[i] = (int32_t)(ait_load_i64(tr, t->data, i) - z);
  }
  *dst = v;
  return AIT_OK;
}

/* Geometry, shifted X and W, and the int64 accumulators of the convolution. */
typedef struct qconv {
  img_conv c;
  int32_t *x, *w;
  int64_t *acc;
  int64_t odims[AIT_MAX_RANK];
} qconv;

static void qconv_free(qconv *q) {
  free(q->x);
  free(q->w);
  free(q->acc);
}

static ait_status qconv_run(const ait_node *node, const ait_tensor *x, const ait_tensor *zx,
                            const ait_tensor *w, const ait_tensor *zw, const int32_t *bias,
                            const ait_tensor *bias_t, qconv *q) {
  if (!is_q8(x->dtype) || !is_q8(w->dtype))
    return ait_err(AIT_E_DTYPE, "X and W must be int8/uint8, got %s and %s",
                   ait_dtype_name(x->dtype), ait_dtype_name(w->dtype));
  if (zx && ait_tensor_numel(zx) != 1)
    return ait_err(AIT_E_SHAPE, "the X zero point must be a scalar");
  AIT_TRY(img_conv_setup(node, x->rank, x->dims, w->rank, w->dims, &q->c));
  if (bias_t && (bias_t->rank != 1 || bias_t->dims[0] != q->c.cout))
    return ait_err(AIT_E_SHAPE, "B must have %lld values", (long long)q->c.cout);
  AIT_TRY(shifted(x, zx, 1, "X", &q->x));
  AIT_TRY(shifted(w, zw, ait_shape_numel(w->rank - 1, w->dims + 1), "W", &q->w));
  q->odims[0] = q->c.n;
  q->odims[1] = q->c.cout;
  for (int i = 0; i < q->c.nsp; i++)
    q->odims[2 + i] = q->c.out[i];
  int64_t n = ait_shape_numel(x->rank, q->odims);
  q->acc = malloc((size_t)(n > 0 ? n : 1) * sizeof *q->acc);
  if (!q->acc) return ait_err(AIT_E_NOMEM, "cannot allocate conv accumulators");
  img_conv_int(&q->c, q->x, q->w, bias, q->acc);
  return AIT_OK;
}

IMG_KERNEL(img_conv_integer) {
  const ait_tensor *x = img_in(in, n_in, 0), *w = img_in(in, n_in, 1);
  if (!x || !w) return ait_err(AIT_E_INVALID_ARG, "x and w are required");
  qconv q = {0};
  ait_status st = qconv_run(node, x, img_in(in, n_in, 2), w, img_in(in, n_in, 3), NULL, NULL, &q);
  if (st == AIT_OK) st = img_new(AIT_INT32, x->rank, q.odims, &out[0]);
  if (st == AIT_OK) {
    int32_t *y = out[0]->data;
    int64_t n = ait_tensor_numel(out[0]);
    for (int64_t i = 0; i < n; i++)
      y[i] = (int32_t)q.acc[i];
  }
  qconv_free(&q);
  return st;
}

/* Inputs: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale,
 * y_zero_point, B (int32). w_scale is per tensor or per output channel. */
IMG_KERNEL(img_qlinear_conv) {
  const ait_tensor *x = img_in(in, n_in, 0), *sx = img_in(in, n_in, 1);
  const ait_tensor *w = img_in(in, n_in, 3), *sw = img_in(in, n_in, 4);
  const ait_tensor *sy = img_in(in, n_in, 6), *zy = img_in(in, n_in, 7), *b = img_in(in, n_in, 8);
  if (!x || !sx || !w || !sw || !sy)
    return ait_err(AIT_E_INVALID_ARG, "x, x_scale, w, w_scale and y_scale are required");
  if (ait_tensor_numel(sx) != 1 || ait_tensor_numel(sy) != 1 || (zy && ait_tensor_numel(zy) != 1))
    return ait_err(AIT_E_SHAPE, "x_scale, y_scale and y_zero_point must be scalars");
  if (b && b->dtype != AIT_INT32)
    return ait_err(AIT_E_DTYPE, "B must be int32, got %s", ait_dtype_name(b->dtype));
  ait_dtype ydt = zy ? zy->dtype : x->dtype;
  int64_t lo, hi;
  if (!img_qrange(ydt, &lo, &hi) || !is_q8(ydt))
    return ait_err(AIT_E_DTYPE, "y_zero_point must be int8/uint8, got %s", ait_dtype_name(ydt));
  int64_t nsw = ait_tensor_numel(sw);
  if (nsw != 1 && (sw->rank != 1 || w->rank < 1 || nsw != w->dims[0]))
    return ait_err(AIT_E_SHAPE, "w_scale must be a scalar or have one value per output channel");

  qconv q = {0};
  ait_status st = qconv_run(node, x, img_in(in, n_in, 2), w, img_in(in, n_in, 5),
                            b ? (const int32_t *)b->data : NULL, b, &q);
  if (st == AIT_OK) st = img_new(ydt, x->rank, q.odims, &out[0]);
  if (st == AIT_OK) {
    const ait_dtype_traits *swt = ait_dtype_traits_of(sw->dtype), *yt = ait_dtype_traits_of(ydt);
    float fx = (float)ait_scalar_f64(sx), fy = (float)ait_scalar_f64(sy);
    double yz = zy ? (double)ait_scalar_i64(zy) : 0.0;
    int64_t plane = ait_shape_numel(q.c.nsp, q.c.out), n = ait_tensor_numel(out[0]);
    for (int64_t i = 0; i < n; i++) {
      int64_t oc = (i / plane) % q.c.cout;
      float mult = fx * (float)ait_load_f64(swt, sw->data, nsw == 1 ? 0 : oc) / fy;
      ait_store_i64(yt, out[0]->data, i, img_round_sat((double)q.acc[i] * mult + yz, lo, hi));
    }
  }
  qconv_free(&q);
  return st;
}

/* ---- shapes -------------------------------------------------------------- */

/* Output shape of a conv whose X is input ix and W input iw. Spatial dims
 * stay unknown unless X's and W's spatial dims are all known. */
static ait_status conv_shape(ait_graph *g, const ait_node *node, int ix, int iw, ait_dtype dt) {
  const ait_value *x = ait_node_in(g, node, ix), *w = ait_node_in(g, node, iw);
  if (!x || x->rank < 3) {
    ait_set_out(g, node, 0, dt, -1, NULL);
    return AIT_OK;
  }
  ait_dim dims[AIT_MAX_RANK];
  for (int i = 0; i < x->rank; i++)
    dims[i] = (ait_dim){-1, NULL};
  dims[0] = x->dims[0];
  if (w && w->rank == x->rank) {
    dims[1] = w->dims[0];
    int64_t xd[AIT_MAX_RANK], wd[AIT_MAX_RANK];
    bool spatial = true, all = x->dims[1].v >= 0 && w->dims[0].v >= 0 && w->dims[1].v >= 0;
    for (int i = 0; i < x->rank; i++) {
      xd[i] = x->dims[i].v;
      wd[i] = w->dims[i].v;
      if (i >= 2) spatial = spatial && xd[i] >= 0 && wd[i] >= 0;
    }
    img_conv c;
    if (spatial && !all) { /* channel counts do not change the spatial dims */
      int64_t group = ait_attr_int(node, "group", 1);
      xd[0] = 1, xd[1] = group, wd[0] = group, wd[1] = 1;
    }
    if (spatial) {
      ait_status st = img_conv_setup(node, x->rank, xd, w->rank, wd, &c);
      if (st != AIT_OK && all) return st;
      if (st == AIT_OK)
        for (int i = 0; i < c.nsp; i++)
          dims[2 + i] = (ait_dim){c.out[i], NULL};
    }
  }
  ait_set_out(g, node, 0, dt, x->rank, dims);
  return AIT_OK;
}

IMG_SHAPE(img_conv_integer_shape) { return conv_shape(g, node, 0, 1, AIT_INT32); }

IMG_SHAPE(img_qlinear_conv_shape) {
  const ait_value *zy = ait_node_in(g, node, 7), *x = ait_node_in(g, node, 0);
  return conv_shape(g, node, 0, 3, zy ? zy->dtype : x ? x->dtype : AIT_UINT8);
}
