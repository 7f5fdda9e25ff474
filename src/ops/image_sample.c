/* GridSample (opset 16; 5-D volumetric input from opset 20), AffineGrid and
 * MaxUnpool. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/image_impl.h"

/* ---- GridSample ------------------------------------------------------------
 * Follows the ONNX reference (and PyTorch): the normalized grid coordinate
 * in [-1, 1] is mapped to pixels (corner or edge aligned); out-of-range
 * coordinates are clamped (border) or reflected (reflection) first, then
 * each tap reads 0 (zeros), the clamped pixel (border) or the reflected
 * pixel (reflection). */

enum { GS_LINEAR, GS_NEAREST, GS_CUBIC };
enum { GS_ZEROS, GS_BORDER, GS_REFLECTION };

typedef struct gs_plane {
  const double *v; /* one D x H x W volume (D = 1 for images) */
  int64_t len[3];  /* D, H, W */
  int pad;
  double lo[3], hi[3]; /* reflection borders of z, y and x */
} gs_plane;

static double gs_denorm(double n, int64_t len, bool align) {
  return align ? (n + 1) / 2.0 * (double)(len - 1) : ((n + 1) * (double)len - 1) / 2.0;
}

/* Reflect x by the nearer border until it lies in [lo, hi]. */
static double gs_reflect(double x, double lo, double hi) {
  double rng = hi - lo;
  if (!(rng > 0)) return lo;
  if (x < lo) {
    double dx = lo - x, n = floor(dx / rng), r = dx - n * rng;
    return fmod(n, 2.0) == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    double dx = x - hi, n = floor(dx / rng), r = dx - n * rng;
    return fmod(n, 2.0) == 0 ? hi - r : lo + r;
  }
  return x;
}

static int64_t clamp_i(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* The voxel at integer coordinates c (z, y, x), as the padding mode reads
 * one outside the volume. */
static double gs_pixel(const gs_plane *p, const int64_t *c) {
  int64_t at = 0;
  for (int d = 0; d < 3; d++) {
    int64_t i = c[d];
    if (p->pad == GS_ZEROS && (i < 0 || i >= p->len[d])) return 0.0;
    if (p->pad == GS_REFLECTION) i = (int64_t)gs_reflect((double)i, p->lo[d], p->hi[d]);
    at = at * p->len[d] + clamp_i(i, 0, p->len[d] - 1);
  }
  return p->v[at];
}

/* Value at coordinates x[3] (z, y, x); nd = 2 keeps z at 0. Linear reads
 * 2^nd taps, cubic (images only) 4 x 4. */
static double gs_sample(const gs_plane *p, int mode, int nd, const double *x) {
  int64_t c[3] = {0, 0, 0};
  if (mode == GS_NEAREST) {
    for (int d = 3 - nd; d < 3; d++)
      c[d] = (int64_t)x[d];
    return gs_pixel(p, c);
  }
  int64_t f[3] = {0, 0, 0};
  double r[3] = {0, 0, 0};
  for (int d = 3 - nd; d < 3; d++)
    f[d] = (int64_t)floor(x[d]), r[d] = x[d] - (double)f[d];
  if (mode == GS_LINEAR) {
    double v = 0;
    for (int k = 0; k < (1 << nd); k++) {
      double w = 1;
      for (int d = 3 - nd, bit = 0; d < 3; d++, bit++) {
        int up = (k >> bit) & 1;
        c[d] = f[d] + up;
        w *= up ? r[d] : 1 - r[d];
      }
      if (w != 0) v += w * gs_pixel(p, c);
    }
    return v;
  }
  double cx[4], cy[4], v = 0;
  img_cubic_coeffs(r[2], -0.75, cx);
  img_cubic_coeffs(r[1], -0.75, cy);
  for (int i = 0; i < 4; i++) {
    double row = 0;
    for (int j = 0; j < 4; j++) {
      c[1] = f[1] - 1 + i, c[2] = f[2] - 1 + j;
      row += cx[j] * gs_pixel(p, c);
    }
    v += cy[i] * row;
  }
  return v;
}

/* Source pixel coordinate along one axis of length len, with the padding
 * mode's treatment of out-of-range values; NaN stays NaN. */
static double gs_coord(double n, int64_t len, bool align, int mode, int pad) {
  double x = gs_denorm(n, len, align);
  if (x != x) return x;
  if (mode == GS_NEAREST) x = nearbyint(x); /* half to even, as PyTorch */
  double lo = align ? 0.0 : -0.5, hi = align ? (double)(len - 1) : (double)len - 0.5;
  if (x < lo || x > hi) {
    if (pad == GS_BORDER)
      x = x < 0 ? 0 : x > (double)(len - 1) ? (double)(len - 1) : x;
    else if (pad == GS_REFLECTION)
      x = gs_reflect(x, lo, hi);
  }
  /* keep far-away coordinates convertible to int64 */
  return x < -1e15 ? -1e15 : x > 1e15 ? 1e15 : x;
}

/* GridSample-16 (4-D, bilinear/nearest/bicubic) and -20 (also 5-D
 * volumetric input, modes spelled linear/nearest/cubic; cubic stays 4-D). */
IMG_KERNEL(img_grid_sample) {
  static const struct {
    const char *name;
    int mode;
  } modes[] = {{"bilinear", GS_LINEAR},
               {"nearest", GS_NEAREST},
               {"bicubic", GS_CUBIC},
               {"linear", GS_LINEAR},
               {"cubic", GS_CUBIC}};
  static const char *const pads[] = {"zeros", "border", "reflection"};
  const ait_tensor *x = img_in(in, n_in, 0), *grid = img_in(in, n_in, 1);
  if (!x || !grid) return ait_err(AIT_E_INVALID_ARG, "X and grid are required");
  const char *ms = ait_attr_str(node, "mode", node->opset >= 20 ? "linear" : "bilinear");
  const char *ps = ait_attr_str(node, "padding_mode", "zeros");
  int mode = -1, pad = -1;
  for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
    if (!strcmp(ms, modes[i].name)) mode = modes[i].mode;
  for (int i = 0; i < 3; i++)
    if (!strcmp(ps, pads[i])) pad = i;
  if (mode < 0) return ait_err(AIT_E_INVALID_ARG, "unknown mode '%s'", ms);
  if (pad < 0) return ait_err(AIT_E_INVALID_ARG, "unknown padding_mode '%s'", ps);
  bool align = ait_attr_int(node, "align_corners", 0) != 0;
  const ait_dtype_traits *xt = ait_dtype_traits_of(x->dtype),
                         *gt = ait_dtype_traits_of(grid->dtype);
  if (!xt || !xt->is_float || !gt || !gt->is_float)
    return ait_err(AIT_E_DTYPE, "X and grid must be float, got %s and %s", ait_dtype_name(x->dtype),
                   ait_dtype_name(grid->dtype));
  if (x->rank != 4 && !(x->rank == 5 && node->opset >= 20))
    return ait_err(AIT_E_UNSUPPORTED, "X must be 4-D (5-D from opset 20), got rank %d", x->rank);
  int nd = x->rank - 2;
  if (nd == 3 && mode == GS_CUBIC)
    return ait_err(AIT_E_UNSUPPORTED, "cubic GridSample of a 5-D input is not defined");
  if (grid->rank != x->rank || grid->dims[0] != x->dims[0] || grid->dims[x->rank - 1] != nd)
    return ait_err(AIT_E_SHAPE, "grid must have shape [N=%lld, spatial..., %d]",
                   (long long)x->dims[0], nd);
  int64_t N = x->dims[0], C = x->dims[1], osp = ait_shape_numel(nd, grid->dims + 1);
  int64_t isp = ait_shape_numel(nd, x->dims + 2), odims[5] = {N, C, 1, 1, 1};
  for (int d = 0; d < nd; d++)
    odims[2 + d] = grid->dims[1 + d];
  if (isp == 0 && N * C * osp > 0) return ait_err(AIT_E_SHAPE, "cannot sample from an empty image");

  double *xv = NULL, *gv = NULL, *yv = NULL;
  ait_status st = img_load_f64(x, &xv);
  if (st == AIT_OK) st = img_load_f64(grid, &gv);
  if (st == AIT_OK) st = img_new(x->dtype, x->rank, odims, &out[0]);
  if (st == AIT_OK && !(yv = malloc((size_t)(N * C * osp + 1) * sizeof *yv)))
    st = ait_err(AIT_E_NOMEM, "cannot allocate GridSample output");
  gs_plane p = {.len = {1, 1, 1}, .pad = pad};
  for (int d = 0; d < nd; d++)
    p.len[3 - nd + d] = x->dims[2 + d];
  for (int d = 0; d < 3; d++) {
    p.lo[d] = align ? 0.0 : -0.5;
    p.hi[d] = align ? (double)(p.len[d] - 1) : (double)p.len[d] - 0.5;
  }
  for (int64_t n = 0; n < N && st == AIT_OK; n++) {
    for (int64_t o = 0; o < osp; o++) {
      const double *gp = gv + (n * osp + o) * nd; /* (x, y[, z]): the last axis first */
      double c[3] = {0, 0, 0};
      bool nan = false;
      for (int k = 0; k < nd; k++) {
        int d = 2 - k;
        c[d] = gs_coord(gp[k], p.len[d], align, mode, pad);
        nan |= c[d] != c[d];
      }
      for (int64_t ch = 0; ch < C; ch++) {
        p.v = xv + (n * C + ch) * isp;
        yv[(n * C + ch) * osp + o] = nan ? NAN : gs_sample(&p, mode, nd, c);
      }
    }
  }
  if (st == AIT_OK)
    for (int64_t i = 0, cnt = ait_tensor_numel(out[0]); i < cnt; i++)
      ait_store_f64(xt, out[0]->data, i, yv[i]);
  free(xv);
  free(gv);
  free(yv);
  return st;
}

IMG_SHAPE(img_grid_sample_shape) {
  const ait_value *x = ait_node_in(g, node, 0), *grid = ait_node_in(g, node, 1);
  ait_dtype dt = x ? x->dtype : AIT_UNDEFINED;
  if (!x || !grid || (x->rank != 4 && x->rank != 5) || grid->rank != x->rank) {
    ait_set_out(g, node, 0, dt, x && x->rank >= 0 ? x->rank : -1, NULL);
    return AIT_OK;
  }
  ait_dim dims[5] = {x->dims[0], x->dims[1]};
  for (int d = 2; d < x->rank; d++)
    dims[d] = grid->dims[d - 1];
  ait_set_out(g, node, 0, dt, x->rank, dims);
  return AIT_OK;
}

/* ---- AffineGrid -----------------------------------------------------------
 * AffineGrid-20: grid[n, (d,) h, w] = theta[n] (x, y[, z], 1), the base
 * positions evenly spaced in [-1, 1] (pixel centres at the ends with
 * align_corners, pixel edges without), for size (N, C, H, W) or
 * (N, C, D, H, W). */

static double ag_base(int64_t i, int64_t len, bool align) {
  if (len <= 1) return align ? -1.0 : 0.0;
  return align ? -1 + 2.0 * (double)i / (double)(len - 1) : (2.0 * (double)i + 1) / (double)len - 1;
}

IMG_KERNEL(img_affine_grid) {
  const ait_tensor *th = img_in(in, n_in, 0), *sz = img_in(in, n_in, 1);
  if (!th || !sz) return ait_err(AIT_E_INVALID_ARG, "theta and size are required");
  const ait_dtype_traits *tt = ait_dtype_traits_of(th->dtype);
  if (!tt || !tt->is_float) return ait_err(AIT_E_DTYPE, "theta must be float");
  int64_t s[5];
  int ns = 0;
  AIT_TRY(ait_read_ints(sz, s, 5, &ns));
  if (ns != 4 && ns != 5) return ait_err(AIT_E_SHAPE, "size must have 4 or 5 values, got %d", ns);
  int nd = ns - 2;
  if (th->rank != 3 || th->dims[0] != s[0] || th->dims[1] != nd || th->dims[2] != nd + 1)
    return ait_err(AIT_E_SHAPE, "theta must be (N, %d, %d)", nd, nd + 1);
  bool align = ait_attr_int(node, "align_corners", 0) != 0;
  int64_t od[5] = {s[0]};
  for (int d = 0; d < nd; d++) {
    if (s[2 + d] < 0 || s[2 + d] > ((int64_t)1 << 40))
      return ait_err(AIT_E_INVALID_ARG, "size[%d] = %lld is out of range", 2 + d,
                     (long long)s[2 + d]);
    od[1 + d] = s[2 + d];
  }
  od[1 + nd] = nd;
  AIT_TRY(img_new(th->dtype, nd + 2, od, &out[0]));
  int64_t sp = ait_shape_numel(nd, od + 1);
  for (int64_t n = 0; n < s[0]; n++)
    for (int64_t p = 0; p < sp; p++) {
      double pos[4] = {0, 0, 0, 1}; /* x, y[, z], 1 */
      int64_t r = p;
      for (int d = nd - 1; d >= 0; d--) { /* spatial dims D, H, W: W is x */
        int64_t len = od[1 + d], i = r % len;
        r /= len;
        pos[nd - 1 - d] = ag_base(i, len, align);
      }
      pos[nd] = 1;
      for (int k = 0; k < nd; k++) {
        double v = 0;
        for (int j = 0; j <= nd; j++)
          v += ait_load_f64(tt, th->data, (n * nd + k) * (nd + 1) + j) * pos[j];
        ait_store_f64(tt, out[0]->data, (n * sp + p) * nd + k, v);
      }
    }
  return AIT_OK;
}

IMG_SHAPE(img_affine_grid_shape) {
  const ait_value *th = ait_node_in(g, node, 0), *sz = ait_node_in(g, node, 1);
  ait_dtype dt = th ? th->dtype : AIT_UNDEFINED;
  int64_t s[5];
  int ns = 0;
  if (!sz || !sz->init || ait_read_ints(sz->init, s, 5, &ns) != AIT_OK || (ns != 4 && ns != 5)) {
    ait_set_out(g, node, 0, dt, -1, NULL);
    return AIT_OK;
  }
  ait_dim d[5] = {{s[0], NULL}};
  for (int i = 2; i < ns; i++)
    d[i - 1] = (ait_dim){s[i], NULL};
  d[ns - 1] = (ait_dim){ns - 2, NULL};
  ait_set_out(g, node, 0, dt, ns - 1, d);
  return AIT_OK;
}

/* ---- MaxUnpool -------------------------------------------------------------
 * Y is zero except Y.flat[I[i]] = X.flat[i]. The output shape is
 * output_shape when given, else (in - 1) * stride - pad_begin - pad_end +
 * kernel per spatial dim. As the spec and MaxPool's Indices define them, the
 * indices address the output tensor itself (onnx/onnx#2398); the ONNX
 * reference instead scatters into the inferred shape and pads that out to
 * output_shape, which test_maxunpool_export_with_output_shape encodes. */

static ait_status unpool_dims(const ait_node *node, int rank, const int64_t *xd, int64_t *od) {
  int nsp = rank - 2, nk, np, ns;
  const int64_t *k = ait_attr_ints(node, "kernel_shape", &nk);
  const int64_t *pads = ait_attr_ints(node, "pads", &np);
  const int64_t *st = ait_attr_ints(node, "strides", &ns);
  if (rank < 3) return ait_err(AIT_E_SHAPE, "X must have rank >= 3, got %d", rank);
  if (!k || nk != nsp) return ait_err(AIT_E_INVALID_ARG, "kernel_shape needs %d values", nsp);
  if ((pads && np != 2 * nsp) || (st && ns != nsp))
    return ait_err(AIT_E_INVALID_ARG, "pads/strides do not match %d spatial dims", nsp);
  od[0] = xd[0];
  od[1] = xd[1];
  for (int i = 0; i < nsp; i++) {
    int64_t s = st ? st[i] : 1, pb = pads ? pads[i] : 0, pe = pads ? pads[nsp + i] : 0;
    if (s < 1 || s > IMG_ATTR_MAX || pb < 0 || pb > IMG_ATTR_MAX || pe < 0 || pe > IMG_ATTR_MAX ||
        k[i] < 1 || k[i] > IMG_ATTR_MAX)
      return ait_err(AIT_E_INVALID_ARG, "kernel_shape, strides and pads must be in range");
    if (xd[2 + i] < 0) {
      od[2 + i] = -1;
      continue;
    }
    od[2 + i] = (xd[2 + i] - 1) * s - pb - pe + k[i];
    if (od[2 + i] < 0) return ait_err(AIT_E_SHAPE, "inferred output dim %d is negative", 2 + i);
  }
  return AIT_OK;
}

IMG_KERNEL(img_max_unpool) {
  const ait_tensor *x = img_in(in, n_in, 0), *idx = img_in(in, n_in, 1);
  const ait_tensor *shape = img_in(in, n_in, 2);
  if (!x || !idx) return ait_err(AIT_E_INVALID_ARG, "X and I are required");
  if (idx->dtype != AIT_INT64) return ait_err(AIT_E_DTYPE, "I must be int64");
  if (idx->rank != x->rank || memcmp(idx->dims, x->dims, (size_t)x->rank * sizeof *x->dims))
    return ait_err(AIT_E_SHAPE, "I must have the shape of X");
  int64_t od[AIT_MAX_RANK];
  AIT_TRY(unpool_dims(node, x->rank, x->dims, od));
  if (shape) {
    int cnt;
    AIT_TRY(ait_read_ints(shape, od, AIT_MAX_RANK, &cnt));
    if (cnt != x->rank)
      return ait_err(AIT_E_SHAPE, "output_shape has %d values for rank %d", cnt, x->rank);
    for (int i = 0; i < cnt; i++)
      if (od[i] < 0) return ait_err(AIT_E_INVALID_ARG, "output_shape[%d] is negative", i);
  }
  AIT_TRY(img_new(x->dtype, x->rank, od, &out[0]));
  int64_t n = ait_tensor_numel(x), total = ait_tensor_numel(out[0]);
  size_t esz = ait_elem_size(x->dtype);
  const int64_t *iv = idx->data;
  for (int64_t i = 0; i < n; i++) {
    if (iv[i] < 0 || iv[i] >= total)
      return ait_err(AIT_E_INVALID_ARG, "index %lld is outside the output of %lld elements",
                     (long long)iv[i], (long long)total);
    memcpy((char *)out[0]->data + (size_t)iv[i] * esz, (const char *)x->data + (size_t)i * esz,
           esz);
  }
  return AIT_OK;
}

IMG_SHAPE(img_max_unpool_shape) {
  const ait_value *x = ait_node_in(g, node, 0), *shape = ait_node_in(g, node, 2);
  ait_dtype dt = x ? x->dtype : AIT_UNDEFINED;
  ait_dim dims[AIT_MAX_RANK];
  int64_t v[AIT_MAX_RANK];
  if (shape && shape->init) {
    int cnt;
    if (ait_read_ints(shape->init, v, AIT_MAX_RANK, &cnt) == AIT_OK) {
      for (int i = 0; i < cnt; i++)
        dims[i] = (ait_dim){v[i], NULL};
      ait_set_out(g, node, 0, dt, cnt, dims);
      return AIT_OK;
    }
  }
  if (!x || x->rank < 3) {
    ait_set_out(g, node, 0, dt, -1, NULL);
    return AIT_OK;
  }
  int64_t xd[AIT_MAX_RANK];
  for (int i = 0; i < x->rank; i++)
    xd[i] = x->dims[i].v;
  if (shape || unpool_dims(node, x->rank, xd, v) != AIT_OK)
    for (int i = 0; i < x->rank; i++)
      v[i] = -1;
  for (int i = 0; i < x->rank; i++)
    dims[i] = (ait_dim){v[i], NULL};
  if (!shape) dims[0] = x->dims[0], dims[1] = x->dims[1];
  ait_set_out(g, node, 0, dt, x->rank, dims);
  return AIT_OK;
}
