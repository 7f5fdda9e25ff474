/* RoiAlign (opset 10, 16) and NonMaxSuppression (opset 10, 11). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/image_impl.h"

/* ---- RoiAlign --------------------------------------------------------------
 * Each output bin averages (or maxes) a grid of bilinear samples, as in the
 * ONNX reference and onnxruntime: the max mode takes the largest weighted
 * corner, not the interpolated value. */

typedef struct ra_sample {
  int64_t pos[4]; /* y_low*W+x_low, y_low*W+x_high, y_high*W+x_low, y_high*W+x_high */
  double w[4];
} ra_sample;

static ra_sample ra_bilinear(double y, double x, int64_t h, int64_t w) {
  ra_sample s = {{0, 0, 0, 0}, {0, 0, 0, 0}};
  if (!(y >= -1.0 && y <= (double)h && x >= -1.0 && x <= (double)w)) return s; /* NaN too */
  if (y < 0) y = 0;
  if (x < 0) x = 0;
  int64_t yl = (int64_t)y, xl = (int64_t)x, yh, xh;
  if (yl >= h - 1)
    yh = yl = h - 1, y = (double)yl;
  else
    yh = yl + 1;
  if (xl >= w - 1)
    xh = xl = w - 1, x = (double)xl;
  else
    xh = xl + 1;
  double ly = y - (double)yl, lx = x - (double)xl, hy = 1 - ly, hx = 1 - lx;
  s.pos[0] = yl * w + xl, s.pos[1] = yl * w + xh, s.pos[2] = yh * w + xl, s.pos[3] = yh * w + xh;
  s.w[0] = hy * hx, s.w[1] = hy * lx, s.w[2] = ly * hx, s.w[3] = ly * lx;
  return s;
}

IMG_KERNEL(img_roi_align) {
  const ait_tensor *x = img_in(in, n_in, 0), *rois = img_in(in, n_in, 1);
  const ait_tensor *bi = img_in(in, n_in, 2);
  if (!x || !rois || !bi)
    return ait_err(AIT_E_INVALID_ARG, "X, rois and batch_indices are required");
  const ait_dtype_traits *xt = ait_dtype_traits_of(x->dtype),
                         *rt = ait_dtype_traits_of(rois->dtype);
  if (!xt || !xt->is_float || !rt || !rt->is_float)
    return ait_err(AIT_E_DTYPE, "X and rois must be float");
  if (bi->dtype != AIT_INT64 && bi->dtype != AIT_INT32)
    return ait_err(AIT_E_DTYPE, "batch_indices must be int64");
  if (x->rank != 4) return ait_err(AIT_E_SHAPE, "X must be 4-D, got rank %d", x->rank);
  int64_t R = rois->rank == 2 ? rois->dims[0] : -1;
  if (rois->rank != 2 || rois->dims[1] != 4 || bi->rank != 1 || bi->dims[0] != R)
    return ait_err(AIT_E_SHAPE, "rois must be [num_rois, 4] and batch_indices [num_rois]");
  const char *mode = ait_attr_str(node, "mode", "avg");
  bool is_max = !strcmp(mode, "max");
  if (!is_max && strcmp(mode, "avg")) return ait_err(AIT_E_INVALID_ARG, "unknown mode '%s'", mode);
  const char *ctm = ait_attr_str(node, "coordinate_transformation_mode",
                                 node->opset >= 16 ? "half_pixel" : "output_half_pixel");
  bool half_pixel = !strcmp(ctm, "half_pixel");
  if (!half_pixel && strcmp(ctm, "output_half_pixel"))
    return ait_err(AIT_E_INVALID_ARG, "unknown coordinate_transformation_mode '%s'", ctm);
  int64_t ph_n = ait_attr_int(node, "output_height", 1),
          pw_n = ait_attr_int(node, "output_width", 1);
  int64_t ratio = ait_attr_int(node, "sampling_ratio", 0);
  double scale = ait_attr_float(node, "spatial_scale", 1.0f);
  if (ph_n < 1 || pw_n < 1 || ratio < 0 || ph_n > IMG_ATTR_MAX || pw_n > IMG_ATTR_MAX ||
      ratio > IMG_ATTR_MAX || (double)ph_n * (double)pw_n > 1e9)
    return ait_err(AIT_E_INVALID_ARG, "output_height/width must be >= 1 and sampling_ratio >= 0");

  int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
  int64_t odims[4] = {R, C, ph_n, pw_n};
  if ((H == 0 || W == 0) && R * C > 0) return ait_err(AIT_E_SHAPE, "X has an empty image plane");
  AIT_TRY(img_new(x->dtype, 4, odims, &out[0]));
  const ait_dtype_traits *bt = ait_dtype_traits_of(bi->dtype);
  double *xv = NULL;
  ra_sample *pre = NULL;
  ait_status st = img_load_f64(x, &xv);
  for (int64_t r = 0; r < R && st == AIT_OK; r++) {
    int64_t b = ait_load_i64(bt, bi->data, r);
    if (b < 0 || b >= N) {
      st = ait_err(AIT_E_INVALID_ARG, "batch index %lld is out of range [0, %lld)", (long long)b,
                   (long long)N);
      break;
    }
    double off = half_pixel ? 0.5 : 0.0, c4[4];
    for (int i = 0; i < 4; i++)
      c4[i] = ait_load_f64(rt, rois->data, r * 4 + i) * scale - off;
    double rw = c4[2] - c4[0], rh = c4[3] - c4[1];
    if (!half_pixel) rw = fmax(rw, 1.0), rh = fmax(rh, 1.0);
    double bh = rh / (double)ph_n, bw = rw / (double)pw_n;
    double gh_d = ratio > 0 ? (double)ratio : ceil(rh / (double)ph_n);
    double gw_d = ratio > 0 ? (double)ratio : ceil(rw / (double)pw_n);
    if (!(gh_d * gw_d * (double)ph_n * (double)pw_n < 1e8)) {
      st = ait_err(AIT_E_INVALID_ARG, "roi %lld is not finite or needs too many samples",
                   (long long)r);
      break;
    }
    int64_t gh = gh_d > 0 ? (int64_t)gh_d : 0, gw = gw_d > 0 ? (int64_t)gw_d : 0;
    double count = (double)(gh * gw > 1 ? gh * gw : 1);
    free(pre);
    pre = malloc((size_t)(ph_n * pw_n * gh * gw + 1) * sizeof *pre);
    if (!pre) {
      st = ait_err(AIT_E_NOMEM, "cannot allocate RoiAlign samples");
      break;
    }
    ra_sample *ps = pre;
    for (int64_t ph = 0; ph < ph_n; ph++)
      for (int64_t pw = 0; pw < pw_n; pw++)
        for (int64_t iy = 0; iy < gh; iy++) {
          double yy = c4[1] + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gh;
          for (int64_t ix = 0; ix < gw; ix++) {
            double xx = c4[0] + (double)pw * bw + ((double)ix + 0.5) * bw / (double)gw;
            *ps++ = ra_bilinear(yy, xx, H, W);
          }
        }
    for (int64_t c = 0; c < C; c++) {
      const double *plane = xv + (b * C + c) * H * W;
      ps = pre;
      for (int64_t o = 0; o < ph_n * pw_n; o++) {
        double v = 0;
        for (int64_t k = 0; k < gh * gw; k++, ps++) {
          if (is_max) {
            double m = ps->w[0] * plane[ps->pos[0]];
            for (int t = 1; t < 4; t++)
              m = fmax(m, ps->w[t] * plane[ps->pos[t]]);
            v = k == 0 ? m : fmax(v, m);
          } else {
            for (int t = 0; t < 4; t++)
              v += ps->w[t] * plane[ps->pos[t]];
          }
        }
        if (!is_max) v /= count;
        ait_store_f64(xt, out[0]->data, ((r * C + c) * ph_n * pw_n) + o, v);
      }
    }
  }
  free(pre);
  free(xv);
  return st;
}

IMG_SHAPE(img_roi_align_shape) {
  const ait_value *x = ait_node_in(g, node, 0), *rois = ait_node_in(g, node, 1);
  ait_dim dims[4] = {{-1, NULL},
                     {-1, NULL},
                     {ait_attr_int(node, "output_height", 1), NULL},
                     {ait_attr_int(node, "output_width", 1), NULL}};
  if (rois && rois->rank == 2) dims[0] = rois->dims[0];
  if (x && x->rank == 4) dims[1] = x->dims[1];
  ait_set_out(g, node, 0, x ? x->dtype : AIT_UNDEFINED, 4, dims);
  return AIT_OK;
}

/* ---- NonMaxSuppression -----------------------------------------------------
 * Per batch and class: candidates with score > score_threshold (all when no
 * threshold is given), by descending score (ties: lower box index first);
 * a candidate is kept unless its IoU with an already kept box exceeds
 * iou_threshold; at most max_output_boxes_per_class are kept. Output rows
 * are [batch, class, box]. */

typedef struct nms_cand {
  double score;
  int64_t box;
} nms_cand;

static int nms_cmp(const void *a, const void *b) {
  const nms_cand *x = a, *y = b;
  if (x->score != y->score) return x->score > y->score ? -1 : 1;
  return x->box < y->box ? -1 : x->box > y->box;
}

/* Box as (ymin, xmin, ymax, xmax) from either box format. */
static void nms_corners(const double *b, bool center, double *c) {
  if (center) {
    c[0] = b[1] - b[3] / 2, c[2] = b[1] + b[3] / 2;
    c[1] = b[0] - b[2] / 2, c[3] = b[0] + b[2] / 2;
  } else {
    c[0] = fmin(b[0], b[2]), c[2] = fmax(b[0], b[2]);
    c[1] = fmin(b[1], b[3]), c[3] = fmax(b[1], b[3]);
  }
}

static bool nms_suppress(const double *a, const double *b, double iou_thr) {
  double iy0 = fmax(a[0], b[0]), iy1 = fmin(a[2], b[2]);
  double ix0 = fmax(a[1], b[1]), ix1 = fmin(a[3], b[3]);
  if (!(ix1 > ix0) || !(iy1 > iy0)) return false;
  double inter = (ix1 - ix0) * (iy1 - iy0);
  double area_a = (a[2] - a[0]) * (a[3] - a[1]), area_b = (b[2] - b[0]) * (b[3] - b[1]);
  double uni = area_a + area_b - inter;
  if (!(inter > 0) || !(area_a > 0) || !(area_b > 0) || !(uni > 0)) return false;
  return inter / uni > iou_thr;
}

IMG_KERNEL(img_non_max_suppression) {
  const ait_tensor *boxes = img_in(in, n_in, 0), *scores = img_in(in, n_in, 1);
  const ait_tensor *tmax = img_in_nonempty(in, n_in, 2), *tiou = img_in_nonempty(in, n_in, 3);
  const ait_tensor *tscore = img_in_nonempty(in, n_in, 4);
  if (!boxes || !scores) return ait_err(AIT_E_INVALID_ARG, "boxes and scores are required");
  const ait_dtype_traits *bt = ait_dtype_traits_of(boxes->dtype),
                         *st_ = ait_dtype_traits_of(scores->dtype);
  if (!bt || !bt->is_float || !st_ || !st_->is_float)
    return ait_err(AIT_E_DTYPE, "boxes and scores must be float");
  if (boxes->rank != 3 || boxes->dims[2] != 4 || scores->rank != 3 ||
      scores->dims[0] != boxes->dims[0] || scores->dims[2] != boxes->dims[1])
    return ait_err(AIT_E_SHAPE, "boxes must be [B, N, 4] and scores [B, C, N]");
  int64_t center = ait_attr_int(node, "center_point_box", 0);
  if (center != 0 && center != 1)
    return ait_err(AIT_E_INVALID_ARG, "center_point_box must be 0 or 1");
  int64_t maxk = tmax ? ait_scalar_i64(tmax) : 0;
  double iou_thr = tiou ? ait_scalar_f64(tiou) : 0.0,
         score_thr = tscore ? ait_scalar_f64(tscore) : 0;
  if (maxk < 0) maxk = 0;
  int64_t B = boxes->dims[0], N = boxes->dims[1], C = scores->dims[1];

  double *bv = NULL, *sv = NULL, *corn = malloc((size_t)(N * 4 + 1) * sizeof *corn);
  nms_cand *cand = malloc((size_t)(N + 1) * sizeof *cand);
  int64_t *kept = malloc((size_t)(N + 1) * sizeof *kept), *sel = NULL, nsel = 0, cap = 0;
  ait_status st =
      corn && cand && kept ? AIT_OK : ait_err(AIT_E_NOMEM, "cannot allocate NMS buffers");
  if (st == AIT_OK) st = img_load_f64(boxes, &bv);
  if (st == AIT_OK) st = img_load_f64(scores, &sv);
  for (int64_t b = 0; b < B && st == AIT_OK; b++) {
    for (int64_t i = 0; i < N; i++)
      nms_corners(bv + (b * N + i) * 4, center, corn + i * 4);
    for (int64_t c = 0; c < C && st == AIT_OK; c++) {
      const double *s = sv + (b * C + c) * N;
      int64_t nc = 0, nk = 0;
      for (int64_t i = 0; i < N; i++)
        if (!tscore || s[i] > score_thr) cand[nc++] = (nms_cand){s[i], i};
      qsort(cand, (size_t)nc, sizeof *cand, nms_cmp);
      for (int64_t i = 0; i < nc && nk < maxk; i++) {
        bool keep = true;
        for (int64_t j = 0; j < nk && keep; j++)
          keep = !nms_suppress(corn + cand[i].box * 4, corn + kept[j] * 4, iou_thr);
        if (!keep) continue;
        kept[nk++] = cand[i].box;
        if (nsel == cap) {
          cap = cap ? 2 * cap : 64;
          int64_t *ns = realloc(sel, (size_t)cap * 3 * sizeof *ns);
          if (!ns) {
            st = ait_err(AIT_E_NOMEM, "cannot grow NMS output");
            break;
          }
          sel = ns;
        }
        sel[nsel * 3] = b, sel[nsel * 3 + 1] = c, sel[nsel * 3 + 2] = cand[i].box;
        nsel++;
      }
    }
  }
  int64_t odims[2] = {nsel, 3};
  if (st == AIT_OK) st = img_new(AIT_INT64, 2, odims, &out[0]);
  if (st == AIT_OK && nsel) memcpy(out[0]->data, sel, (size_t)nsel * 3 * sizeof *sel);
  free(bv), free(sv), free(corn), free(cand), free(kept), free(sel);
  return st;
}

IMG_SHAPE(img_non_max_suppression_shape) {
  ait_dim dims[2] = {{-1, NULL}, {3, NULL}};
  ait_set_out(g, node, 0, AIT_INT64, 2, dims);
  return AIT_OK;
}
