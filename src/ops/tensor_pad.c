/* Pad, CenterCropPad, DepthToSpace, SpaceToDepth, Trilu and ReverseSequence
 * of the 'tensor' family. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops/tensor_impl.h"

/* ---- Pad -------------------------------------------------------------- */

typedef enum pad_mode { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP } pad_mode;

typedef struct pad_args {
  int64_t begin[AIT_MAX_RANK], end[AIT_MAX_RANK];
  pad_mode mode;
} pad_args;

static ait_status pad_mode_of(const ait_node *node, pad_mode *m) {
  const char *s = ait_attr_str(node, "mode", "constant");
  if (!strcmp(s, "constant"))
    *m = PAD_CONSTANT;
  else if (!strcmp(s, "reflect"))
    *m = PAD_REFLECT;
  else if (!strcmp(s, "edge"))
    *m = PAD_EDGE;
  else if (!strcmp(s, "wrap"))
    *m = PAD_WRAP;
  else
    return ait_err(AIT_E_INVALID_ARG, "Pad mode '%s' is unknown", s);
  return AIT_OK;
}

/* Spreads pads (2 * n_axes values, all begins then all ends) over rank. */
static ait_status pad_spread(const int64_t *pads, int n_pads, const int64_t *axes, int n_axes,
                             int rank, pad_args *a) {
  memset(a->begin, 0, sizeof a->begin);
  memset(a->end, 0, sizeof a->end);
  if (!axes) n_axes = rank;
  if (n_pads != 2 * n_axes)
    return ait_err(AIT_E_INVALID_ARG, "Pad has %d pads for %d axes", n_pads, n_axes);
  bool seen[AIT_MAX_RANK] = {false};
  for (int i = 0; i < 2 * n_axes; i++)
    if (pads[i] > ((int64_t)1 << 40) || pads[i] < -((int64_t)1 << 40))
      return ait_err(AIT_E_INVALID_ARG, "Pad amount %lld is too large", (long long)pads[i]);
  for (int i = 0; i < n_axes; i++) {
    int ax = i;
    if (axes) AIT_TRY(ait_norm_axis(axes[i], rank, &ax));
    if (ax >= rank || seen[ax]) return ait_err(AIT_E_INVALID_ARG, "Pad axes repeat or overflow");
    seen[ax] = true;
    a->begin[ax] = pads[i];
    a->end[ax] = pads[n_axes + i];
  }
  return AIT_OK;
}

static ait_status pad_run(const ait_node *node, const ait_tensor *x, const pad_args *pa,
                          const unsigned char *cv, ait_tensor **out);

/* Source index along one axis for output position i - begin, or -1 for the
 * constant value. */
static int64_t pad_map(int64_t i, int64_t d, pad_mode m) {
  if (i >= 0 && i < d) return i;
  switch (m) {
  case PAD_EDGE: return i < 0 ? 0 : d - 1;
  case PAD_WRAP: return ((i % d) + d) % d;
  case PAD_REFLECT: {
    if (d == 1) return 0;
    int64_t p = 2 * (d - 1), r = ((i % p) + p) % p;
    return r < d ? r : p - r;
  }
  default: return -1;
  }
}

TN_KERNEL(tn_pad) {
  const ait_tensor *x = in[0];
  int r = x->rank;
  pad_args a;
  AIT_TRY(pad_mode_of(node, &a.mode));
  size_t esz = ait_elem_size(x->dtype);
  unsigned char cv[16] = {0}; /* the constant, as one element */
  const char *cs = "";        /* strings: the constant as a borrowed pointer */
  if (node->opset < 11) {
    int n;
    const int64_t *p = ait_attr_ints(node, node->opset < 2 ? "paddings" : "pads", &n);
    if (!p) return ait_err(AIT_E_INVALID_ARG, "Pad needs the pads attribute");
    AIT_TRY(pad_spread(p, n, NULL, 0, r, &a));
    const ait_dtype_traits *tr = ait_dtype_traits_of(x->dtype);
    if (tr) tr->from_f64(cv, ait_attr_float(node, "value", 0.0f));
  } else {
    const ait_tensor *p = tn_in(in, n_in, 1), *c = tn_in(in, n_in, 2), *ax = tn_in(in, n_in, 3);
    if (!p) return ait_err(AIT_E_INVALID_ARG, "Pad needs the pads input");
    int64_t pads[2 * AIT_MAX_RANK], axes[AIT_MAX_RANK];
    int n, na = 0;
    AIT_TRY(tn_read_ints(p, "Pad pads", pads, 2 * AIT_MAX_RANK, &n));
    if (ax) AIT_TRY(tn_read_ints(ax, "Pad axes", axes, AIT_MAX_RANK, &na));
    AIT_TRY(pad_spread(pads, n, ax ? axes : NULL, na, r, &a));
    if (c && ait_tensor_numel(c) > 0) {
      if (c->dtype != x->dtype)
        return ait_err(AIT_E_DTYPE, "Pad constant_value is %s, data is %s",
                       ait_dtype_name(c->dtype), ait_dtype_name(x->dtype));
      if (x->dtype == AIT_STRING)
        cs = *(char *const *)c->data ? *(char *const *)c->data : "";
      else
        memcpy(cv, c->data, esz);
    }
  }
  if (x->dtype == AIT_STRING) memcpy(cv, &cs, sizeof cs);
  return pad_run(node, x, &a, cv, out);
}

/* CenterCropPad-18: per axis in `axes` (default all), crop the centre
 * (start rounded down) or pad with zeros (the odd pixel on the right): a
 * Pad of begin = floor((t - d) / 2) toward the centre, end = the rest. */
TN_KERNEL(tn_center_crop_pad) {
  const ait_tensor *x = in[0], *sh = tn_in(in, n_in, 1);
  if (!sh) return ait_err(AIT_E_INVALID_ARG, "CenterCropPad needs the shape input");
  int64_t t[AIT_MAX_RANK], axes[AIT_MAX_RANK];
  int nt, na = 0;
  AIT_TRY(tn_read_ints(sh, "CenterCropPad shape", t, AIT_MAX_RANK, &nt));
  const int64_t *ax = ait_attr_ints(node, "axes", &na);
  if (!ax) na = x->rank;
  if (na > AIT_MAX_RANK || na != nt)
    return ait_err(AIT_E_INVALID_ARG, "CenterCropPad has %d sizes for %d axes", nt, na);
  for (int i = 0; i < na; i++)
    axes[i] = ax ? ax[i] : i;
  int64_t pads[2 * AIT_MAX_RANK];
  for (int i = 0; i < na; i++) {
    int k;
    AIT_TRY(ait_norm_axis(axes[i], x->rank, &k));
    if (t[i] < 0) return ait_err(AIT_E_INVALID_ARG, "CenterCropPad size %lld < 0", (long long)t[i]);
    int64_t d = x->dims[k], diff = t[i] - d;
    pads[i] = diff >= 0 ? diff / 2 : -((-diff) / 2);
    pads[na + i] = diff - pads[i];
  }
  pad_args a;
  AIT_TRY(pad_spread(pads, 2 * na, axes, na, x->rank, &a));
  a.mode = PAD_CONSTANT;
  unsigned char cv[16] = {0};
  const char *cs = "";
  if (x->dtype == AIT_STRING) memcpy(cv, &cs, sizeof cs);
  return pad_run(node, x, &a, cv, out);
}

TN_SHAPE(tn_center_crop_pad_shape) {
  ait_value *x = ait_node_in(g, node, 0);
  if (!x) return AIT_OK;
  int64_t t[AIT_MAX_RANK], od[AIT_MAX_RANK];
  int nt, na = 0;
  const int64_t *ax = ait_attr_ints(node, "axes", &na);
  if (x->rank < 0 || !tn_const_ints(g, node, 1, t, AIT_MAX_RANK, &nt) || !tn_value_dims(x, od) ||
      nt != (ax ? na : x->rank)) {
    tn_set_out_dims(g, node, 0, x->dtype, x->rank, NULL);
    return AIT_OK;
  }
  for (int i = 0; i < nt; i++) {
    int k;
    AIT_TRY(ait_norm_axis(ax ? ax[i] : i, x->rank, &k));
    od[k] = t[i];
  }
  tn_set_out_dims(g, node, 0, x->dtype, x->rank, od);
  return AIT_OK;
}

/* Pad x by a (negative amounts crop) into out[0], cv being the constant as
 * one element. */
static ait_status pad_run(const ait_node *node, const ait_tensor *x, const pad_args *pa,
                          const unsigned char *cv, ait_tensor **out) {
  int r = x->rank;
  pad_args a = *pa;
  size_t esz = ait_elem_size(x->dtype);
  int64_t od[AIT_MAX_RANK], ist[AIT_MAX_RANK];
  for (int k = 0; k < r; k++) {
    od[k] = x->dims[k] + a.begin[k] + a.end[k];
    if (od[k] < 0) return ait_err(AIT_E_SHAPE, "Pad makes axis %d negative", k);
    if (a.mode != PAD_CONSTANT && x->dims[k] == 0 && od[k] > 0)
      return ait_err(AIT_E_SHAPE, "Pad cannot %s-pad the empty axis %d",
                     ait_attr_str(node, "mode", ""), k);
  }
  AIT_TRY(tn_new(x->dtype, r, od, &out[0]));
  int64_t total = ait_tensor_numel(out[0]);
  if (total == 0) return AIT_OK;
  ait_shape_strides(r, x->dims, ist);
  char *o = out[0]->data;
  const char *src = x->data;
  if (r == 0) {
    memcpy(o, src, esz);
    return tn_finish(out[0], AIT_OK);
  }
  /* Row by row along the last axis: map each outer coordinate, then copy the
   * middle of the row in one piece and the borders element by element. */
  int64_t n = od[r - 1], d = x->dims[r - 1], b = a.begin[r - 1];
  int64_t lo = b < 0 ? 0 : b, hi = b + d < n ? b + d : n; /* output range inside the data */
  int64_t rows = total / n, idx[AIT_MAX_RANK] = {0};
  for (int64_t row = 0; row < rows; row++, o += (size_t)n * esz) {
    int64_t off = 0;
    bool fill = false;
    for (int k = 0; k < r - 1; k++) {
      int64_t i = pad_map(idx[k] - a.begin[k], x->dims[k], a.mode);
      if (i < 0)
        fill = true;
      else
        off += i * ist[k];
    }
    for (int k = r - 2; k >= 0 && ++idx[k] >= od[k]; k--)
      idx[k] = 0;
    for (int64_t j = 0; j < n; j++) {
      if (!fill && j == lo && hi > lo) {
        memcpy(o + (size_t)j * esz, src + (size_t)(off + j - b) * esz, (size_t)(hi - lo) * esz);
        j = hi - 1;
        continue;
      }
      int64_t i = fill ? -1 : pad_map(j - b, d, a.mode);
      memcpy(o + (size_t)j * esz, i < 0 ? (const char *)cv : src + (size_t)(off + i) * esz, esz);
    }
  }
  return tn_finish(out[0], AIT_OK);
}

TN_SHAPE(tn_pad_shape) {
  ait_value *x = ait_node_in(g, node, 0);
  if (!x) return AIT_OK;
  if (x->rank < 0) {
    ait_set_out(g, node, 0, x->dtype, -1, NULL);
    return AIT_OK;
  }
  pad_args a;
  int64_t pads[2 * AIT_MAX_RANK], axes[AIT_MAX_RANK];
  int n = 0, na = 0;
  bool known;
  bool has_axes = node->opset >= 18 && node->n_in > 3 && node->in[3] >= 0;
  if (node->opset < 11) {
    const int64_t *p = ait_attr_ints(node, node->opset < 2 ? "paddings" : "pads", &n);
    known = p && n <= 2 * AIT_MAX_RANK;
    if (known) memcpy(pads, p, (size_t)n * sizeof *p);
  } else {
    known = tn_const_ints(g, node, 1, pads, 2 * AIT_MAX_RANK, &n) &&
            (!has_axes || tn_const_ints(g, node, 3, axes, AIT_MAX_RANK, &na));
  }
  if (!known || pad_spread(pads, n, has_axes ? axes : NULL, na, x->rank, &a) != AIT_OK) {
    tn_set_out_dims(g, node, 0, x->dtype, x->rank, NULL);
    return AIT_OK;
  }
  ait_dim d[AIT_MAX_RANK];
  for (int k = 0; k < x->rank; k++) {
    d[k] = x->dims[k];
    if (a.begin[k] || a.end[k])
      d[k] = (ait_dim){d[k].v < 0 ? -1 : d[k].v + a.begin[k] + a.end[k], NULL};
  }
  ait_set_out(g, node, 0, x->dtype, x->rank, d);
  return AIT_OK;
}

/* ---- DepthToSpace, SpaceToDepth -------------------------------------- */

static ait_status block_of(const ait_node *node, int64_t *b) {
  *b = ait_attr_int(node, "blocksize", 0);
  /* b * b must fit 64 bits: no tensor has 2^31 channels per pixel */
  if (*b <= 0 || *b > INT32_MAX)
    return ait_err(AIT_E_INVALID_ARG, "blocksize %lld is out of range (1 .. 2^31-1)",
                   (long long)*b);
  return AIT_OK;
}

/* x * y, or -1 when it overflows (the caller reports it) */
static int64_t mul_or_neg(int64_t x, int64_t y) {
  int64_t r;
  return __builtin_mul_overflow(x, y, &r) ? -1 : r;
}

static bool is_crd(const ait_node *node) {
  return !strcmp(ait_attr_str(node, "mode", "DCR"), "CRD");
}

TN_KERNEL(tn_depth_to_space) {
  const ait_tensor *x = in[0];
  int64_t b;
  AIT_TRY(block_of(node, &b));
  if (x->rank != 4) return ait_err(AIT_E_SHAPE, "DepthToSpace needs rank 4, got %d", x->rank);
  int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
  if (C % (b * b))
    return ait_err(AIT_E_SHAPE, "DepthToSpace: %lld channels do not divide by blocksize^2 %lld",
                   (long long)C, (long long)(b * b));
  int64_t c = C / (b * b), od[4] = {N, c, mul_or_neg(H, b), mul_or_neg(W, b)};
  if (od[2] < 0 || od[3] < 0)
    return ait_err(AIT_E_SHAPE, "DepthToSpace: %lldx%lld times blocksize %lld overflows",
                   (long long)H, (long long)W, (long long)b);
  bool crd = is_crd(node);
  int64_t vd[6] = {N, b, b, c, H, W};
  int dcr_perm[6] = {0, 3, 4, 1, 5, 2}, crd_perm[6] = {0, 1, 4, 2, 5, 3};
  if (crd) {
    vd[1] = c;
    vd[2] = b;
    vd[3] = b;
  }
  AIT_TRY(tn_new(x->dtype, 4, od, &out[0]));
  if (ait_tensor_numel(x))
    tn_transpose_raw(out[0]->data, x->data, ait_elem_size(x->dtype), 6, vd,
                     crd ? crd_perm : dcr_perm);
  return tn_finish(out[0], AIT_OK);
}

TN_KERNEL(tn_space_to_depth) {
  const ait_tensor *x = in[0];
  int64_t b;
  AIT_TRY(block_of(node, &b));
  if (x->rank != 4) return ait_err(AIT_E_SHAPE, "SpaceToDepth needs rank 4, got %d", x->rank);
  int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
  if (H % b || W % b)
    return ait_err(AIT_E_SHAPE, "SpaceToDepth: %lldx%lld does not divide by blocksize %lld",
                   (long long)H, (long long)W, (long long)b);
  int64_t od[4] = {N, mul_or_neg(C, b * b), H / b, W / b}, vd[6] = {N, C, H / b, b, W / b, b};
  if (od[1] < 0)
    return ait_err(AIT_E_SHAPE, "SpaceToDepth: %lld channels times blocksize^2 overflow",
                   (long long)C);
  /* DCR: channel (bh * b + bw) * C + c; CRD (opset 28): c * b * b + bh * b + bw */
  const char *mode = node->opset >= 28 ? ait_attr_str(node, "mode", "DCR") : "DCR";
  bool crd = !strcmp(mode, "CRD");
  if (!crd && strcmp(mode, "DCR"))
    return ait_err(AIT_E_INVALID_ARG, "SpaceToDepth mode '%.20s': DCR or CRD", mode);
  int dcr[6] = {0, 3, 5, 1, 2, 4}, crdp[6] = {0, 1, 3, 5, 2, 4}, *perm = crd ? crdp : dcr;
  AIT_TRY(tn_new(x->dtype, 4, od, &out[0]));
  if (ait_tensor_numel(x))
    tn_transpose_raw(out[0]->data, x->data, ait_elem_size(x->dtype), 6, vd, perm);
  return tn_finish(out[0], AIT_OK);
}

static ait_status space_shape(ait_graph *g, const ait_node *node, bool to_space) {
  ait_value *x = ait_node_in(g, node, 0);
  if (!x) return AIT_OK;
  int64_t b, d[4] = {-1, -1, -1, -1};
  if (block_of(node, &b) != AIT_OK) return AIT_E_INVALID_ARG;
  if (x->rank >= 0 && x->rank != 4)
    return ait_err(AIT_E_SHAPE, "%s needs rank 4, got %d", node->op_type, x->rank);
  if (x->rank == 4) {
    for (int k = 0; k < 4; k++)
      d[k] = x->dims[k].v;
    if (to_space) {
      d[1] = d[1] < 0 ? -1 : d[1] / (b * b);
      d[2] = d[2] < 0 ? -1 : mul_or_neg(d[2], b);
      d[3] = d[3] < 0 ? -1 : mul_or_neg(d[3], b);
    } else {
      d[1] = d[1] < 0 ? -1 : mul_or_neg(d[1], b * b);
      d[2] = d[2] < 0 ? -1 : d[2] / b;
      d[3] = d[3] < 0 ? -1 : d[3] / b;
    }
  }
  ait_dim dd[4];
  for (int k = 0; k < 4; k++)
    dd[k] = (ait_dim){d[k], NULL};
  if (x->rank == 4) dd[0] = x->dims[0];
  ait_set_out(g, node, 0, x->dtype, 4, dd);
  return AIT_OK;
}

TN_SHAPE(tn_depth_to_space_shape) { return space_shape(g, node, true); }
TN_SHAPE(tn_space_to_depth_shape) { return space_shape(g, node, false); }

/* ---- Trilu ------------------------------------------------------------ */

TN_KERNEL(tn_trilu) {
  const ait_tensor *x = in[0], *kt = tn_in(in, n_in, 1);
  if (x->rank < 2) return ait_err(AIT_E_SHAPE, "Trilu needs rank >= 2, got %d", x->rank);
  int64_t k = 0;
  if (kt) {
    if (ait_tensor_numel(kt) != 1) return ait_err(AIT_E_SHAPE, "Trilu k must be a scalar");
    AIT_TRY(tn_check_index_dtype(kt, "Trilu k"));
    k = tn_index_at(kt, 0);
  }
  bool upper = ait_attr_int(node, "upper", 1) != 0;
  int64_t N = x->dims[x->rank - 2], M = x->dims[x->rank - 1];
  int64_t lim = N + M + 1;
  k = k < -lim ? -lim : k > lim ? lim : k; /* no overflow below */
  AIT_TRY(tn_new(x->dtype, x->rank, x->dims, &out[0]));
  size_t esz = ait_elem_size(x->dtype);
  int64_t rows = ait_tensor_numel(x) / (M ? M : 1);
  if (M == 0) rows = 0;
  for (int64_t row = 0; row < rows; row++) {
    int64_t i = row % N, j0, j1; /* keep columns [j0, j1) */
    if (upper) {
      j0 = i + k < 0 ? 0 : i + k > M ? M : i + k;
      j1 = M;
    } else {
      j0 = 0;
      j1 = i + k + 1 < 0 ? 0 : i + k + 1 > M ? M : i + k + 1;
    }
    size_t base = (size_t)(row * M) * esz;
    tn_move((char *)out[0]->data + base + (size_t)j0 * esz,
            (const char *)x->data + base + (size_t)j0 * esz, esz, j1 - j0);
  }
  return tn_finish(out[0], AIT_OK);
}

/* ---- ReverseSequence -------------------------------------------------- */

TN_KERNEL(tn_reverse_sequence) {
  const ait_tensor *x = in[0], *lens = tn_in(in, n_in, 1);
  if (!lens) return ait_err(AIT_E_INVALID_ARG, "ReverseSequence needs sequence_lens");
  if (x->rank < 2) return ait_err(AIT_E_SHAPE, "ReverseSequence needs rank >= 2");
  int64_t ba = ait_attr_int(node, "batch_axis", 1), ta = ait_attr_int(node, "time_axis", 0);
  if (!((ba == 0 && ta == 1) || (ba == 1 && ta == 0)))
    return ait_err(AIT_E_INVALID_ARG, "ReverseSequence batch_axis/time_axis must be 0 and 1");
  AIT_TRY(tn_check_index_dtype(lens, "sequence_lens"));
  int64_t B = x->dims[ba], T = x->dims[ta];
  if (ait_tensor_numel(lens) != B)
    return ait_err(AIT_E_SHAPE, "sequence_lens has %lld values for a batch of %lld",
                   (long long)ait_tensor_numel(lens), (long long)B);
  for (int64_t b = 0; b < B; b++) {
    int64_t l = tn_index_at(lens, b);
    if (l < 0 || l > T)
      return ait_err(AIT_E_INVALID_ARG, "sequence_lens[%lld] = %lld is outside [0, %lld]",
                     (long long)b, (long long)l, (long long)T);
  }
  AIT_TRY(tn_new(x->dtype, x->rank, x->dims, &out[0]));
  size_t esz = ait_elem_size(x->dtype);
  int64_t inner = ait_shape_numel(x->rank - 2, x->dims + 2), d1 = x->dims[1];
  for (int64_t b = 0; b < B; b++) {
    int64_t l = tn_index_at(lens, b);
    for (int64_t t = 0; t < T; t++) {
      int64_t s = t < l ? l - 1 - t : t;
      int64_t dst = ba == 0 ? b * d1 + t : t * d1 + b, src = ba == 0 ? b * d1 + s : s * d1 + b;
      tn_move((char *)out[0]->data + (size_t)(dst * inner) * esz,
              (const char *)x->data + (size_t)(src * inner) * esz, esz, inner);
    }
  }
  return tn_finish(out[0], AIT_OK);
}
