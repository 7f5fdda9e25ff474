/* Helpers shared by the image family: output allocation, loading tensors as
 * double, quantized ranges, and the integer convolution used by ConvInteger
 * and QLinearConv. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/image_impl.h"

ait_status img_new(ait_dtype dt, int rank, const int64_t *dims, ait_tensor **out) {
  *out = ait_tensor_new(dt, rank, dims);
  if (!*out) return ait_err(AIT_E_NOMEM, "cannot allocate a %s output", ait_dtype_name(dt));
  return AIT_OK;
}

ait_status img_load_f64(const ait_tensor *t, double **out) {
  const ait_dtype_traits *tr = ait_dtype_traits_of(t->dtype);
  if (!tr || t->dtype == AIT_STRING)
    return ait_err(AIT_E_DTYPE, "expected a numeric tensor, got %s", ait_dtype_name(t->dtype));
  int64_t n = ait_tensor_numel(t);
  double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
  if (!v) return ait_err(AIT_E_NOMEM, "cannot allocate %lld doubles", (long long)n);
  if (t->dtype == AIT_FLOAT32) {
    const float *f = t->data;
    for (int64_t i = 0; i < n; i++)
      v[i] = f[i];
  } else {
    for (int64_t i = 0; i < n; i++)
      v[i] = ait_load_f64(tr, t->data, i);
  }
  *out = v;
  return AIT_OK;
}

bool img_qrange(ait_dtype dt, int64_t *lo, int64_t *hi) {
  switch (dt) {
  case AIT_UINT8: *lo = 0, *hi = 255; return true;
  case AIT_INT8: *lo = -128, *hi = 127; return true;
  case AIT_UINT16: *lo = 0, *hi = 65535; return true;
  case AIT_INT16: *lo = -32768, *hi = 32767; return true;
  case AIT_UINT4: *lo = 0, *hi = 15; return true;
  case AIT_INT4: *lo = -8, *hi = 7; return true;
  case AIT_UINT2: *lo = 0, *hi = 3; return true;
  case AIT_INT2: *lo = -2, *hi = 1; return true;
  default: return false;
  }
}

int64_t img_round_sat(double v, int64_t lo, int64_t hi) {
  if (v != v) return 0;
  v = nearbyint(v); /* the default rounding mode rounds half to even */
  if (v <= (double)lo) return lo;
  if (v >= (double)hi) return hi;
  return (int64_t)v;
}

void img_cubic_coeffs(double r, double A, double *c) {
  double r1 = r + 1, s = 1 - r, s1 = 2 - r;
  c[0] = ((A * r1 - 5 * A) * r1 + 8 * A) * r1 - 4 * A;
  c[1] = ((A + 2) * r - (A + 3)) * r * r + 1;
  c[2] = ((A + 2) * s - (A + 3)) * s * s + 1;
  c[3] = ((A * s1 - 5 * A) * s1 + 8 * A) * s1 - 4 * A;
}

/* ---- convolution geometry ------------------------------------------------ */

ait_status img_conv_setup(const ait_node *node, int xrank, const int64_t *xd, int wrank,
                          const int64_t *wd, img_conv *c) {
  memset(c, 0, sizeof *c);
  if (xrank < 3) return ait_err(AIT_E_SHAPE, "X must have rank >= 3, got rank %d", xrank);
  if (wrank != xrank) return ait_err(AIT_E_SHAPE, "W has rank %d but X has rank %d", wrank, xrank);
  int nsp = xrank - 2;
  c->nsp = nsp;
  c->n = xd[0];
  c->cin = xd[1];
  c->cout = wd[0];
  c->group = ait_attr_int(node, "group", 1);
  if (c->group < 1)
    return ait_err(AIT_E_INVALID_ARG, "group must be >= 1, got %lld", (long long)c->group);
  if (c->cin != wd[1] * c->group)
    return ait_err(AIT_E_SHAPE, "X has %lld channels but W expects %lld x group %lld",
                   (long long)c->cin, (long long)wd[1], (long long)c->group);
  if (c->cout % c->group)
    return ait_err(AIT_E_SHAPE, "W's %lld output channels are not divisible by group %lld",
                   (long long)c->cout, (long long)c->group);

  int nk, np, ns, nd;
  const int64_t *ks = ait_attr_ints(node, "kernel_shape", &nk);
  const int64_t *pads = ait_attr_ints(node, "pads", &np);
  const int64_t *st = ait_attr_ints(node, "strides", &ns);
  const int64_t *dl = ait_attr_ints(node, "dilations", &nd);
  if (ks && nk != nsp)
    return ait_err(AIT_E_INVALID_ARG, "kernel_shape has %d values for %d spatial dims", nk, nsp);
  if (pads && np != 2 * nsp)
    return ait_err(AIT_E_INVALID_ARG, "pads has %d values, expected %d", np, 2 * nsp);
  if (st && ns != nsp)
    return ait_err(AIT_E_INVALID_ARG, "strides has %d values for %d spatial dims", ns, nsp);
  if (dl && nd != nsp)
    return ait_err(AIT_E_INVALID_ARG, "dilations has %d values for %d spatial dims", nd, nsp);
  const char *ap = ait_attr_str(node, "auto_pad", "NOTSET");
  bool same_upper = !strcmp(ap, "SAME_UPPER"), same_lower = !strcmp(ap, "SAME_LOWER");
  bool valid = !strcmp(ap, "VALID");
  if (!same_upper && !same_lower && !valid && strcmp(ap, "NOTSET"))
    return ait_err(AIT_E_INVALID_ARG, "unknown auto_pad '%s'", ap);

  for (int i = 0; i < nsp; i++) {
    c->in[i] = xd[2 + i];
    c->k[i] = wd[2 + i];
    if (ks && ks[i] != c->k[i])
      return ait_err(AIT_E_SHAPE, "kernel_shape[%d] = %lld but W has %lld", i, (long long)ks[i],
                     (long long)c->k[i]);
    c->s[i] = st ? st[i] : 1;
    c->d[i] = dl ? dl[i] : 1;
    if (c->s[i] < 1 || c->d[i] < 1 || c->s[i] > IMG_ATTR_MAX || c->d[i] > IMG_ATTR_MAX ||
        c->k[i] > IMG_ATTR_MAX)
      return ait_err(AIT_E_INVALID_ARG, "strides and dilations must be in [1, 2^30]");
    int64_t ek = (c->k[i] - 1) * c->d[i] + 1; /* extent of the dilated kernel */
    if (same_upper || same_lower) {
      int64_t o = (c->in[i] + c->s[i] - 1) / c->s[i];
      int64_t total = (o - 1) * c->s[i] + ek - c->in[i];
      if (total < 0) total = 0;
      c->pb[i] = same_upper ? total / 2 : total - total / 2;
      c->pe[i] = total - c->pb[i];
    } else if (!valid && pads) {
      c->pb[i] = pads[i];
      c->pe[i] = pads[nsp + i];
      if (c->pb[i] < 0 || c->pe[i] < 0 || c->pb[i] > IMG_ATTR_MAX || c->pe[i] > IMG_ATTR_MAX)
        return ait_err(AIT_E_INVALID_ARG, "pads must be in [0, 2^30]");
    }
    int64_t span = c->in[i] + c->pb[i] + c->pe[i] - ek;
    if (c->k[i] < 1 || span < 0)
      return ait_err(AIT_E_SHAPE, "kernel extent %lld exceeds padded input %lld on spatial dim %d",
                     (long long)ek, (long long)(c->in[i] + c->pb[i] + c->pe[i]), i);
    c->out[i] = span / c->s[i] + 1;
  }
  return AIT_OK;
}

/* Any number of spatial dims: per output element, sum over taps. */
static void conv_int_nd(const img_conv *c, const int32_t *x, const int32_t *w, const int32_t *bias,
                        int64_t *y) {
  int nsp = c->nsp;
  int64_t in_plane = ait_shape_numel(nsp, c->in), out_plane = ait_shape_numel(nsp, c->out);
  int64_t ktaps = ait_shape_numel(nsp, c->k);
  int64_t cin_g = c->cin / c->group, cout_g = c->cout / c->group;
  int64_t in_str[AIT_MAX_RANK], k_str[AIT_MAX_RANK];
  ait_shape_strides(nsp, c->in, in_str);
  ait_shape_strides(nsp, c->k, k_str);

  for (int64_t n = 0; n < c->n; n++) {
    for (int64_t oc = 0; oc < c->cout; oc++) {
      int64_t g = oc / cout_g;
      const int32_t *wo = w + oc * cin_g * ktaps;
      int64_t *yo = y + (n * c->cout + oc) * out_plane;
      for (int64_t op = 0; op < out_plane; op++) {
        int64_t o[AIT_MAX_RANK], rem = op;
        for (int i = nsp - 1; i >= 0; i--)
          o[i] = rem % c->out[i], rem /= c->out[i];
        int64_t acc = bias ? bias[oc] : 0;
        for (int64_t kt = 0; kt < ktaps; kt++) {
          int64_t off = 0;
          bool inside = true;
          for (int i = 0; i < nsp && inside; i++) {
            int64_t ki = (kt / k_str[i]) % c->k[i];
            int64_t pos = o[i] * c->s[i] - c->pb[i] + ki * c->d[i];
            inside = pos >= 0 && pos < c->in[i];
            off += pos * in_str[i];
          }
          if (!inside) continue;
          const int32_t *xp = x + (n * c->cin + g * cin_g) * in_plane + off;
          for (int64_t ic = 0; ic < cin_g; ic++)
            acc += (int64_t)xp[ic * in_plane] * wo[ic * ktaps + kt];
        }
        yo[op] = acc;
      }
    }
  }
}

/* Smallest o >= 0 with o * s + off >= 0, and largest o < n_out with
 * o * s + off < len: the output range whose tap lands inside the input. */
static void tap_range(int64_t off, int64_t s, int64_t len, int64_t n_out, int64_t *lo,
                      int64_t *hi) {
  *lo = off >= 0 ? 0 : (-off + s - 1) / s;
  *hi = len - 1 - off < 0 ? -1 : (len - 1 - off) / s;
  if (*hi > n_out - 1) *hi = n_out - 1;
}

/* One or two spatial dims (1-D as H = 1): accumulate whole output rows per
 * (input channel, tap), which keeps the inner loop contiguous. */
static void conv_int_2d(const img_conv *c, const int32_t *x, const int32_t *w, const int32_t *bias,
                        int64_t *y) {
  bool one = c->nsp == 1;
  int64_t H = one ? 1 : c->in[0], W = c->in[c->nsp - 1];
  int64_t OH = one ? 1 : c->out[0], OW = c->out[c->nsp - 1];
  int64_t KH = one ? 1 : c->k[0], KW = c->k[c->nsp - 1];
  int64_t sh = one ? 1 : c->s[0], sw = c->s[c->nsp - 1];
  int64_t dh = one ? 1 : c->d[0], dw = c->d[c->nsp - 1];
  int64_t ph = one ? 0 : c->pb[0], pw = c->pb[c->nsp - 1];
  int64_t cin_g = c->cin / c->group, cout_g = c->cout / c->group;
  for (int64_t n = 0; n < c->n; n++) {
    for (int64_t oc = 0; oc < c->cout; oc++) {
      int64_t g = oc / cout_g, *yo = y + (n * c->cout + oc) * OH * OW;
      for (int64_t i = 0; i < OH * OW; i++)
        yo[i] = bias ? bias[oc] : 0;
      for (int64_t ic = 0; ic < cin_g; ic++) {
        const int32_t *xp = x + (n * c->cin + g * cin_g + ic) * H * W;
        const int32_t *wp = w + (oc * cin_g + ic) * KH * KW;
        for (int64_t kh = 0; kh < KH; kh++) {
          int64_t oh_lo, oh_hi;
          tap_range(kh * dh - ph, sh, H, OH, &oh_lo, &oh_hi);
          for (int64_t kw = 0; kw < KW; kw++) {
            int64_t wv = wp[kh * KW + kw], ow_lo, ow_hi, offw = kw * dw - pw;
            if (wv == 0) continue;
            tap_range(offw, sw, W, OW, &ow_lo, &ow_hi);
            for (int64_t oh = oh_lo; oh <= oh_hi; oh++) {
              const int32_t *row = xp + (oh * sh + kh * dh - ph) * W;
              int64_t *yrow = yo + oh * OW;
              for (int64_t ow = ow_lo; ow <= ow_hi; ow++)
                yrow[ow] += wv * row[ow * sw + offw];
            }
          }
        }
      }
    }
  }
}

void img_conv_int(const img_conv *c, const int32_t *x, const int32_t *w, const int32_t *bias,
                  int64_t *y) {
  if (c->nsp <= 2)
    conv_int_2d(c, x, w, bias, y);
  else
    conv_int_nd(c, x, w, bias, y);
}
