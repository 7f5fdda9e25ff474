/* Resize (opset 10, 11, 13, 18, 19) and Upsample (opset 7, 9).
 *
 * Interpolation is separable: each resized axis is resampled in turn, last
 * axis first, on a double copy of the data. An output position j of an axis
 * maps to a source coordinate x by coordinate_transformation_mode and takes
 * 1 (nearest), 2 (linear) or 4 (cubic) taps around it; taps beyond the edge
 * read the edge element (or, with exclude_outside, get weight 0 and the
 * other weights are renormalised). Following the ONNX reference, the
 * "resized length" in those formulas is input length * scale, which is not
 * an integer when scales (rather than sizes) are given. Opset 18 adds axes
 * (roi, scales and sizes for a subset of the axes), keep_aspect_ratio_policy
 * and antialias (the linear or cubic filter stretched by 1 / scale when
 * downscaling); opset 19 the half_pixel_symmetric transformation. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/image_impl.h"

enum { RZ_NEAREST, RZ_LINEAR, RZ_CUBIC };
enum {
  CT_HALF_PIXEL,
  CT_PYTORCH_HALF_PIXEL,
  CT_ALIGN_CORNERS,
  CT_ASYMMETRIC,
  CT_TF_HALF_PIXEL_FOR_NN,
  CT_TF_CROP_AND_RESIZE,
  CT_HALF_PIXEL_SYMMETRIC
};
enum { KA_STRETCH, KA_NOT_LARGER, KA_NOT_SMALLER };
enum { NM_ROUND_PREFER_FLOOR, NM_ROUND_PREFER_CEIL, NM_FLOOR, NM_CEIL, NM_SIMPLE };

typedef struct rz_params {
  int mode, ct, nm, keep;
  double cubic_a, extrapolation;
  bool exclude_outside, antialias;
  int rank, n_axes;       /* n_axes: how many values roi/scales/sizes have */
  int axes[AIT_MAX_RANK]; /* the axes they refer to (opset 18; all by default) */
  int64_t in[AIT_MAX_RANK], out[AIT_MAX_RANK];
  double scale[AIT_MAX_RANK];   /* output / input, as given or computed from sizes */
  double resized[AIT_MAX_RANK]; /* input * scale (the "resized length") */
  double roi_a[AIT_MAX_RANK], roi_b[AIT_MAX_RANK];
} rz_params;

/* Looks s up in names[0..n); -1 when absent. */
static int lookup(const char *s, const char *const *names, int n) {
  for (int i = 0; i < n; i++)
    if (!strcmp(s, names[i])) return i;
  return -1;
}

static ait_status rz_attrs(const ait_node *node, bool legacy, int rank, rz_params *p) {
  static const char *const modes[] = {"nearest", "linear", "cubic", "bilinear"};
  static const char *const cts[] = {
      "half_pixel",           "pytorch_half_pixel", "align_corners",       "asymmetric",
      "tf_half_pixel_for_nn", "tf_crop_and_resize", "half_pixel_symmetric"};
  static const char *const nms[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  static const char *const keeps[] = {"stretch", "not_larger", "not_smaller"};
  const char *m = ait_attr_str(node, "mode", "nearest");
  p->mode = lookup(m, modes, 4);
  if (p->mode == 3) p->mode = RZ_LINEAR; /* Upsample-7 spelling */
  if (p->mode < 0 || (legacy && p->mode == RZ_CUBIC))
    return ait_err(AIT_E_INVALID_ARG, "unsupported mode '%s'", m);
  p->n_axes = rank;
  for (int i = 0; i < rank; i++)
    p->axes[i] = i;
  if (legacy) { /* Upsample and Resize-10: asymmetric, truncating nearest */
    p->ct = CT_ASYMMETRIC;
    p->nm = NM_SIMPLE;
    p->cubic_a = -0.75;
    return AIT_OK;
  }
  const char *ct = ait_attr_str(node, "coordinate_transformation_mode", "half_pixel");
  const char *nm = ait_attr_str(node, "nearest_mode", "round_prefer_floor");
  p->ct = lookup(ct, cts, node->opset >= 19 ? 7 : 6);
  p->nm = lookup(nm, nms, 4);
  if (p->ct < 0)
    return ait_err(AIT_E_INVALID_ARG, "unsupported coordinate_transformation_mode '%s'", ct);
  if (p->nm < 0) return ait_err(AIT_E_INVALID_ARG, "unsupported nearest_mode '%s'", nm);
  p->cubic_a = ait_attr_float(node, "cubic_coeff_a", -0.75f);
  p->exclude_outside = ait_attr_int(node, "exclude_outside", 0) != 0;
  p->extrapolation = ait_attr_float(node, "extrapolation_value", 0.0f);
  if (node->opset < 18) return AIT_OK;
  /* opset 18: antialias (linear and cubic), axes, keep_aspect_ratio_policy */
  p->antialias = ait_attr_int(node, "antialias", 0) != 0 && p->mode != RZ_NEAREST;
  const char *keep = ait_attr_str(node, "keep_aspect_ratio_policy", "stretch");
  p->keep = lookup(keep, keeps, 3);
  if (p->keep < 0) return ait_err(AIT_E_INVALID_ARG, "unknown keep_aspect_ratio_policy '%s'", keep);
  int n = 0;
  const int64_t *ax = ait_attr_ints(node, "axes", &n);
  if (ax) {
    if (n > rank) return ait_err(AIT_E_INVALID_ARG, "Resize has %d axes for rank %d", n, rank);
    bool seen[AIT_MAX_RANK] = {false};
    for (int i = 0; i < n; i++) {
      AIT_TRY(ait_norm_axis(ax[i], rank, &p->axes[i]));
      if (seen[p->axes[i]]) return ait_err(AIT_E_INVALID_ARG, "Resize axes repeat %d", p->axes[i]);
      seen[p->axes[i]] = true;
    }
    p->n_axes = n;
  }
  return AIT_OK;
}

/* Output dims and scales from `scales` (float values) or `sizes` (ints),
 * given for p->axes (others keep their size, scale 1); with sizes and a
 * keep_aspect_ratio_policy, one scale (the min or max of sizes / input)
 * for every listed axis and round-half-up sizes. */
static ait_status rz_dims(const ait_tensor *x, const ait_tensor *scales, const ait_tensor *sizes,
                          const float *attr_scales, int n_attr, bool upsample, rz_params *p) {
  p->rank = x->rank;
  memcpy(p->in, x->dims, (size_t)x->rank * sizeof *p->in);
  for (int i = 0; i < x->rank; i++)
    p->out[i] = p->in[i], p->scale[i] = 1.0, p->resized[i] = (double)p->in[i];
  if (scales && sizes)
    return ait_err(AIT_E_INVALID_ARG, "only one of scales and sizes may be given");
  int n = sizes ? (int)ait_tensor_numel(sizes) : scales ? (int)ait_tensor_numel(scales) : n_attr;
  if (!sizes && !scales && !attr_scales)
    return ait_err(AIT_E_INVALID_ARG, "one of scales and sizes is required");
  if (n != p->n_axes)
    return ait_err(AIT_E_SHAPE, "%s has %d values for %d axes", sizes ? "sizes" : "scales", n,
                   p->n_axes);
  if (sizes) {
    int64_t v[AIT_MAX_RANK];
    int cnt;
    AIT_TRY(ait_read_ints(sizes, v, AIT_MAX_RANK, &cnt));
    double keep = p->keep == KA_NOT_LARGER ? INFINITY : 0;
    for (int k = 0; k < n; k++) {
      int i = p->axes[k];
      if (v[k] < 0)
        return ait_err(AIT_E_INVALID_ARG, "sizes[%d] = %lld is negative", k, (long long)v[k]);
      if (p->in[i] == 0 && v[k] != 0)
        return ait_err(AIT_E_SHAPE, "cannot resize an empty axis %d to %lld", i, (long long)v[k]);
      p->out[i] = v[k];
      p->scale[i] = p->in[i] ? (double)v[k] / (double)p->in[i] : 1.0;
      p->resized[i] = (double)v[k];
      if (p->keep == KA_NOT_LARGER && p->scale[i] < keep) keep = p->scale[i];
      if (p->keep == KA_NOT_SMALLER && p->scale[i] > keep) keep = p->scale[i];
    }
    for (int k = 0; p->keep != KA_STRETCH && k < n; k++) {
      int i = p->axes[k];
      double len = keep * (double)p->in[i];
      if (!(len < 9.0e15)) return ait_err(AIT_E_INVALID_ARG, "resize scale %g is too large", keep);
      p->scale[i] = keep;
      p->resized[i] = len;
      p->out[i] = (int64_t)(len + 0.5);
    }
    return AIT_OK;
  }
  const ait_dtype_traits *str = scales ? ait_dtype_traits_of(scales->dtype) : NULL;
  if (scales && (!str || !str->is_float))
    return ait_err(AIT_E_DTYPE, "scales must be float, got %s", ait_dtype_name(scales->dtype));
  for (int k = 0; k < n; k++) {
    int i = p->axes[k];
    double s = scales ? ait_load_f64(str, scales->data, k) : (double)attr_scales[k];
    if (!(s > 0) || (upsample && !(s >= 1)) || !(s * (double)p->in[i] < 9.0e15))
      return ait_err(AIT_E_INVALID_ARG, "scales[%d] = %g is out of range", k, s);
    p->scale[i] = s;
    p->resized[i] = s * (double)p->in[i];
    p->out[i] = (int64_t)floor(p->resized[i]);
  }
  return AIT_OK;
}

static ait_status rz_roi(const ait_tensor *roi, rz_params *p) {
  for (int i = 0; i < p->rank; i++)
    p->roi_a[i] = 0.0, p->roi_b[i] = 1.0;
  if (p->ct != CT_TF_CROP_AND_RESIZE) return AIT_OK;
  if (!roi) return ait_err(AIT_E_INVALID_ARG, "tf_crop_and_resize needs roi");
  int n = p->n_axes;
  if (ait_tensor_numel(roi) != 2 * n)
    return ait_err(AIT_E_SHAPE, "roi has %lld values, expected %d",
                   (long long)ait_tensor_numel(roi), 2 * n);
  const ait_dtype_traits *tr = ait_dtype_traits_of(roi->dtype);
  if (!tr || !tr->is_float) return ait_err(AIT_E_DTYPE, "roi must be float");
  for (int k = 0; k < n; k++) {
    p->roi_a[p->axes[k]] = ait_load_f64(tr, roi->data, k);
    p->roi_b[p->axes[k]] = ait_load_f64(tr, roi->data, n + k);
  }
  return AIT_OK;
}

/* Source coordinate of output position j along axis ax. */
static double rz_coord(const rz_params *p, int ax, int64_t j) {
  double x = (double)j, s = p->scale[ax], len = p->resized[ax], in = (double)p->in[ax];
  switch (p->ct) {
  case CT_PYTORCH_HALF_PIXEL: return len > 1 ? (x + 0.5) / s - 0.5 : 0.0;
  case CT_ALIGN_CORNERS: return len == 1 ? 0.0 : x * (in - 1) / (len - 1);
  case CT_ASYMMETRIC: return x / s;
  case CT_HALF_PIXEL_SYMMETRIC: { /* centred when the integer length differs from in * scale */
    double adj = len > 0 ? (double)p->out[ax] / len : 1.0;
    return in / 2 * (1 - adj) + (x + 0.5) / s - 0.5;
  }
  case CT_TF_HALF_PIXEL_FOR_NN: return (x + 0.5) / s;
  case CT_TF_CROP_AND_RESIZE: {
    double a = p->roi_a[ax], b = p->roi_b[ax];
    double c = len == 1 ? (b - a) * (in - 1) / 2 : x * (b - a) * (in - 1) / (len - 1);
    return c + a * (in - 1);
  }
  default: return (x + 0.5) / s - 0.5; /* half_pixel */
  }
}

static double rz_nearest(const rz_params *p, int ax, double x) {
  switch (p->nm) {
  case NM_ROUND_PREFER_CEIL: return floor(x + 0.5);
  case NM_FLOOR: return floor(x);
  case NM_CEIL: return ceil(x);
  case NM_SIMPLE: return p->scale[ax] < 1.0 ? ceil(x) : floor(x);
  default: return ceil(x - 0.5); /* round_prefer_floor */
  }
}

/* Taps per output position along axis ax: 1, 2 or 4, or with antialias
 * (downscaling linear/cubic) the filter stretched by 1 / scale; 0 when that
 * is absurdly many (a scale of 1e-9). */
static int rz_ntap(const rz_params *p, int ax) {
  if (p->mode == RZ_NEAREST) return 1;
  double s = p->scale[ax] < 1 ? p->scale[ax] : 1;
  if (!p->antialias || s >= 1) return p->mode == RZ_LINEAR ? 2 : 4;
  double start = floor((p->mode == RZ_LINEAR ? -1 : -2) / s) + 1, n = 2 - 2 * start;
  return n > 1 << 20 ? 0 : (int)n;
}

/* The Keys cubic kernel at distance d. */
static double cubic_at(double d, double A) {
  d = fabs(d);
  if (d <= 1) return ((A + 2) * d - (A + 3)) * d * d + 1;
  if (d < 2) return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A;
  return 0;
}

/* Taps of output position j: ntap indices into [0, in) and weights, or
 * *extrap for a tf_crop_and_resize position outside the input. */
static void rz_taps(const rz_params *p, int ax, int64_t j, int ntap, int64_t *idx, double *w,
                    bool *extrap) {
  int64_t in = p->in[ax];
  double x = rz_coord(p, ax, j);
  *extrap = p->ct == CT_TF_CROP_AND_RESIZE && (x < 0 || x > (double)(in - 1));
  if (x != x) x = 0; /* NaN from a bad roi: read element 0 */
  if (x < -1e15) x = -1e15;
  if (x > 1e15) x = 1e15;
  int64_t first;
  if (p->mode == RZ_NEAREST) {
    first = (int64_t)rz_nearest(p, ax, x);
    w[0] = 1.0;
  } else if (p->antialias && p->scale[ax] < 1) {
    /* the filter stretched by 1 / scale over ntap inputs from floor(x) +
     * start (an integer x counts as the previous pixel at ratio 1, as the
     * spec's reference does), weights normalised */
    double s = p->scale[ax], f = floor(x), r = x - f, sum = 0;
    if (r == 0) f -= 1, r = 1;
    int start = 1 - ntap / 2;
    first = (int64_t)f + start;
    for (int t = 0; t < ntap; t++) {
      double d = ((double)(start + t) - r) * s;
      w[t] = p->mode == RZ_LINEAR ? fmax(0.0, 1 - fabs(d)) : cubic_at(d, p->cubic_a);
      sum += w[t];
    }
    for (int t = 0; sum != 0 && t < ntap; t++)
      w[t] /= sum;
  } else {
    double f = floor(x), r = x - f;
    first = (int64_t)f - (p->mode == RZ_CUBIC);
    if (p->mode == RZ_LINEAR)
      w[0] = 1 - r, w[1] = r;
    else
      img_cubic_coeffs(r, p->cubic_a, w);
  }
  double sum = 0;
  for (int t = 0; t < ntap; t++) {
    int64_t i = first + t;
    if (p->exclude_outside && (i < 0 || i >= in)) w[t] = 0;
    sum += w[t];
    idx[t] = i < 0 ? 0 : i >= in ? in - 1 : i;
  }
  if (p->exclude_outside && sum != 0)
    for (int t = 0; t < ntap; t++)
      w[t] /= sum;
}

/* Resamples axis ax of src (shape cur) into dst; cur[ax] becomes out[ax]. */
static ait_status rz_axis(const rz_params *p, int ax, const double *src, int64_t *cur,
                          double *dst) {
  int ntap = rz_ntap(p, ax);
  int64_t outer = ait_shape_numel(ax, cur), in = cur[ax], n_out = p->out[ax];
  if (ntap == 0 || (double)n_out * ntap > 1e9)
    return ait_err(AIT_E_INVALID_ARG, "antialiased resize by %g needs too many taps", p->scale[ax]);
  int64_t inner = ait_shape_numel(p->rank - ax - 1, cur + ax + 1);
  int64_t *idx = malloc((size_t)(n_out * ntap + 1) * sizeof *idx);
  double *w = malloc((size_t)(n_out * ntap + 1) * sizeof *w);
  bool *ex = malloc((size_t)(n_out + 1) * sizeof *ex);
  if (!idx || !w || !ex) {
    free(idx), free(w), free(ex);
    return ait_err(AIT_E_NOMEM, "cannot allocate resize taps");
  }
  for (int64_t j = 0; j < n_out; j++)
    rz_taps(p, ax, j, ntap, idx + j * ntap, w + j * ntap, &ex[j]);
  for (int64_t o = 0; o < outer; o++) {
    const double *s = src + o * in * inner;
    double *d = dst + o * n_out * inner;
    for (int64_t j = 0; j < n_out; j++) {
      const int64_t *ij = idx + j * ntap;
      const double *wj = w + j * ntap;
      for (int64_t i = 0; i < inner; i++) {
        double v = 0;
        if (ex[j])
          v = p->extrapolation;
        else
          for (int t = 0; t < ntap; t++)
            v += wj[t] * s[ij[t] * inner + i];
        d[j * inner + i] = v;
      }
    }
  }
  free(idx), free(w), free(ex);
  cur[ax] = n_out;
  return AIT_OK;
}

static ait_status rz_run(const rz_params *p, const ait_tensor *x, ait_tensor **out) {
  const ait_dtype_traits *tr = ait_dtype_traits_of(x->dtype);
  if (!tr || x->dtype == AIT_STRING)
    return ait_err(AIT_E_DTYPE, "cannot resize %s", ait_dtype_name(x->dtype));
  int64_t cur[AIT_MAX_RANK], cap = ait_tensor_numel(x);
  memcpy(cur, p->in, sizeof cur);
  /* the largest intermediate: any prefix of the axes resized */
  for (int ax = p->rank; ax >= 0; ax--) {
    if (ax < p->rank) cur[ax] = p->out[ax];
    double big = 1;
    for (int i = 0; i < p->rank; i++)
      big *= (double)cur[i];
    if (big > 1e12) return ait_err(AIT_E_NOMEM, "resize to %g elements is too large", big);
    int64_t n = ait_shape_numel(p->rank, cur);
    if (n > cap) cap = n;
  }
  int64_t on = ait_shape_numel(p->rank, p->out);
  memcpy(cur, p->in, sizeof cur);
  double *a = malloc((size_t)(cap + 1) * sizeof *a), *b = malloc((size_t)(cap + 1) * sizeof *b);
  ait_status st = AIT_OK;
  if (!a || !b) st = ait_err(AIT_E_NOMEM, "cannot allocate resize buffers");
  for (int64_t i = 0, n = ait_tensor_numel(x); i < n && st == AIT_OK; i++)
    a[i] = ait_load_f64(tr, x->data, i);
  for (int ax = p->rank - 1; ax >= 0 && st == AIT_OK; ax--) {
    bool identity = p->out[ax] == p->in[ax] && p->scale[ax] == 1.0 &&
                    p->ct != CT_TF_CROP_AND_RESIZE && p->ct != CT_TF_HALF_PIXEL_FOR_NN &&
                    p->ct != CT_HALF_PIXEL_SYMMETRIC;
    if (identity) continue;
    st = rz_axis(p, ax, a, cur, b);
    double *t = a;
    a = b, b = t;
  }
  if (st == AIT_OK) st = img_new(x->dtype, p->rank, p->out, out);
  if (st == AIT_OK) {
    if (x->dtype == AIT_FLOAT32) {
      float *y = (*out)->data;
      for (int64_t i = 0; i < on; i++)
        y[i] = (float)a[i];
    } else {
      for (int64_t i = 0; i < on; i++)
        ait_store_f64(tr, (*out)->data, i, tr->is_float ? a[i] : nearbyint(a[i]));
    }
  }
  free(a);
  free(b);
  return st;
}

/* Resize-10: (X, scales). Resize-11: (X, roi, scales[, sizes]), where an
 * empty roi or scales stands for absent. Resize-13: all but X optional. */
IMG_KERNEL(img_resize) {
  const ait_tensor *x = img_in(in, n_in, 0);
  if (!x) return ait_err(AIT_E_INVALID_ARG, "X is required");
  rz_params p;
  memset(&p, 0, sizeof p);
  bool legacy = node->opset < 11;
  AIT_TRY(rz_attrs(node, legacy, x->rank, &p));
  const ait_tensor *scales = img_in_nonempty(in, n_in, legacy ? 1 : 2);
  const ait_tensor *sizes = legacy ? NULL : img_in_nonempty(in, n_in, 3);
  AIT_TRY(rz_dims(x, scales, sizes, NULL, 0, false, &p));
  AIT_TRY(rz_roi(legacy ? NULL : img_in_nonempty(in, n_in, 1), &p));
  return rz_run(&p, x, &out[0]);
}

/* Upsample-7: scales attribute; Upsample-9: scales input. Scales >= 1. */
IMG_KERNEL(img_upsample) {
  const ait_tensor *x = img_in(in, n_in, 0);
  if (!x) return ait_err(AIT_E_INVALID_ARG, "X is required");
  rz_params p;
  memset(&p, 0, sizeof p);
  AIT_TRY(rz_attrs(node, true, x->rank, &p));
  int n_attr = 0;
  const float *attr = node->opset < 9 ? ait_attr_floats(node, "scales", &n_attr) : NULL;
  const ait_tensor *scales = node->opset < 9 ? NULL : img_in(in, n_in, 1);
  if (!attr && !scales) return ait_err(AIT_E_INVALID_ARG, "scales are required");
  AIT_TRY(rz_dims(x, scales, NULL, attr, n_attr, true, &p));
  AIT_TRY(rz_roi(NULL, &p));
  return rz_run(&p, x, &out[0]);
}

/* ---- taps for native kernels --------------------------------------------- */

void img_resize2d_free(img_resize2d *p) {
  free(p->ih), free(p->iw), free(p->wh), free(p->ww);
  memset(p, 0, sizeof *p);
}

ait_status img_resize2d_plan(const ait_node *node, const ait_tensor *const *in, int n_in,
                             img_resize2d *out) {
  memset(out, 0, sizeof *out);
  const ait_tensor *x = img_in(in, n_in, 0);
  if (!x || x->rank != 4 || !(!strcmp(node->op_type, "Resize") && node->opset >= 11))
    return AIT_E_UNSUPPORTED;
  rz_params p;
  memset(&p, 0, sizeof p);
  if (rz_attrs(node, false, x->rank, &p) != AIT_OK) {
    ait_err_clear();
    return AIT_E_UNSUPPORTED;
  }
  /* antialias (opset 18) has more than two taps: the reference */
  if (p.mode == RZ_CUBIC || p.ct == CT_TF_CROP_AND_RESIZE || p.exclude_outside || p.antialias)
    return AIT_E_UNSUPPORTED;
  if (rz_dims(x, img_in_nonempty(in, n_in, 2), img_in_nonempty(in, n_in, 3), NULL, 0, false, &p) !=
          AIT_OK ||
      rz_roi(NULL, &p) != AIT_OK) {
    ait_err_clear();
    return AIT_E_UNSUPPORTED;
  }
  /* N and C as they are (and not through a tf_half_pixel_for_nn shift) */
  for (int ax = 0; ax < 2; ax++)
    if (p.out[ax] != p.in[ax] || p.scale[ax] != 1.0 || p.ct == CT_TF_HALF_PIXEL_FOR_NN)
      return AIT_E_UNSUPPORTED;
  int nt = p.mode == RZ_NEAREST ? 1 : 2;
  out->ntap = nt;
  memcpy(out->out, p.out, sizeof out->out);
  out->ih = malloc(sizeof(int64_t) * (size_t)(p.out[2] * nt + 1));
  out->iw = malloc(sizeof(int64_t) * (size_t)(p.out[3] * nt + 1));
  out->wh = malloc(sizeof(float) * (size_t)(p.out[2] * nt + 1));
  out->ww = malloc(sizeof(float) * (size_t)(p.out[3] * nt + 1));
  if (!out->ih || !out->iw || !out->wh || !out->ww) {
    img_resize2d_free(out);
    return ait_err(AIT_E_NOMEM, "cannot allocate resize taps");
  }
  for (int ax = 2; ax < 4; ax++)
    for (int64_t j = 0; j < p.out[ax]; j++) {
      int64_t idx[4];
      double w[4];
      bool ex;
      rz_taps(&p, ax, j, nt, idx, w, &ex);
      for (int t = 0; t < nt; t++) {
        (ax == 2 ? out->ih : out->iw)[j * nt + t] = idx[t];
        (ax == 2 ? out->wh : out->ww)[j * nt + t] = (float)w[t];
      }
    }
  return AIT_OK;
}

/* ---- shapes -------------------------------------------------------------- */

/* Output shape from X (value x) and constant scales (tensor or floats) or
 * sizes; unknown dims where the inputs are not constant. */
static void resize_shape(ait_graph *g, const ait_node *node, const ait_value *x,
                         const ait_tensor *scales, const float *fs, int nfs,
                         const ait_tensor *sizes) {
  ait_dtype dt = x ? x->dtype : AIT_UNDEFINED;
  int rank = x ? x->rank : -1;
  ait_dim dims[AIT_MAX_RANK];
  if (sizes && ait_tensor_numel(sizes) <= AIT_MAX_RANK) {
    rank = (int)ait_tensor_numel(sizes);
    const ait_dtype_traits *tr = ait_dtype_traits_of(sizes->dtype);
    for (int i = 0; i < rank; i++)
      dims[i] = (ait_dim){tr ? ait_load_i64(tr, sizes->data, i) : -1, NULL};
    ait_set_out(g, node, 0, dt, rank, dims);
    return;
  }
  if (rank < 0) {
    ait_set_out(g, node, 0, dt, -1, NULL);
    return;
  }
  int ns = scales ? (int)ait_tensor_numel(scales) : fs ? nfs : -1;
  const ait_dtype_traits *tr = scales ? ait_dtype_traits_of(scales->dtype) : NULL;
  for (int i = 0; i < rank; i++) {
    dims[i] = (ait_dim){-1, NULL};
    if (ns != rank || (scales && !tr)) continue;
    double s = scales ? ait_load_f64(tr, scales->data, i) : (double)fs[i];
    if (s == 1.0)
      dims[i] = x->dims[i];
    else if (x->dims[i].v >= 0 && s > 0 && s * (double)x->dims[i].v < 9.0e15)
      dims[i].v = (int64_t)floor(s * (double)x->dims[i].v);
  }
  ait_set_out(g, node, 0, dt, rank, dims);
}

static const ait_tensor *const_in(ait_graph *g, const ait_node *node, int i) {
  const ait_value *v = ait_node_in(g, node, i);
  return v && v->init && v->init->kind == AIT_KIND_TENSOR && ait_tensor_numel(v->init) > 0 ? v->init
                                                                                           : NULL;
}

static bool in_present(ait_graph *g, const ait_node *node, int i) {
  const ait_value *v = ait_node_in(g, node, i);
  return v && !(v->init && ait_tensor_numel(v->init) == 0) && !(v->rank == 1 && v->dims[0].v == 0);
}

IMG_SHAPE(img_resize_shape) {
  const ait_value *x = ait_node_in(g, node, 0);
  bool legacy = node->opset < 11;
  const ait_tensor *scales = const_in(g, node, legacy ? 1 : 2);
  const ait_tensor *sizes = legacy ? NULL : const_in(g, node, 3);
  /* a non-constant sizes (or scales) input leaves the dims unknown */
  if (!legacy && !sizes && in_present(g, node, 3)) scales = NULL;
  bool subset = node->opset >= 18 &&
                (ait_node_attr(node, "axes") ||
                 strcmp(ait_attr_str(node, "keep_aspect_ratio_policy", "stretch"), "stretch"));
  if (!subset) {
    resize_shape(g, node, x, scales, NULL, 0, sizes);
    return AIT_OK;
  }
  /* axes or an aspect policy: the kernel's own arithmetic on the known dims */
  ait_tensor hdr = {0};
  rz_params p;
  memset(&p, 0, sizeof p);
  bool known = x && x->rank >= 0 && (scales || sizes);
  for (int i = 0; known && i < x->rank; i++)
    known = x->dims[i].v >= 0, hdr.dims[i] = x->dims[i].v;
  if (known) {
    hdr.rank = x->rank;
    known = rz_attrs(node, false, x->rank, &p) == AIT_OK &&
            rz_dims(&hdr, scales, sizes, NULL, 0, false, &p) == AIT_OK;
  }
  ait_dim d[AIT_MAX_RANK];
  for (int i = 0; x && i < x->rank; i++)
    d[i] = known ? (ait_dim){p.out[i], NULL} : (ait_dim){-1, NULL};
  ait_set_out(g, node, 0, x ? x->dtype : AIT_UNDEFINED, x ? x->rank : -1, d);
  return AIT_OK;
}

IMG_SHAPE(img_upsample_shape) {
  const ait_value *x = ait_node_in(g, node, 0);
  int nfs = 0;
  const float *fs = node->opset < 9 ? ait_attr_floats(node, "scales", &nfs) : NULL;
  resize_shape(g, node, x, node->opset < 9 ? NULL : const_in(g, node, 1), fs, nfs, NULL);
  return AIT_OK;
}
