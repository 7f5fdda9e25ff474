/* DeformConv-19/22 and Col2Im-18, N-d, in double.
 *
 * DeformConv: each kernel tap k of output position o reads X at
 * o * stride - pad_begin + k * dilation + offset (per offset group; the
 * offsets of a tap are one per spatial axis, in axis order), interpolated
 * N-linearly with zeros outside the input, times mask (ones by default),
 * then the grouped convolution sum plus B.
 *
 * Col2Im: the blocks of input (N, C * prod(block), L), L enumerating block
 * positions lexicographically, are summed back into (N, C, image...) at
 * block position * stride - pad_begin + k * dilation. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/nn_impl.h"

#define MAXD NN_MAX_SP

/* Spatial attribute `name` (n values, default def), or AIT_E_INVALID_ARG. */
static ait_status sp_attr(const ait_node *node, const char *name, int n, int64_t def, int64_t *v,
                          int64_t min) {
  int c = 0;
  const int64_t *a = ait_attr_ints(node, name, &c);
  if (a && c != n) return ait_err(AIT_E_INVALID_ARG, "%s has %d values, expected %d", name, c, n);
  for (int i = 0; i < n; i++) {
    v[i] = a ? a[i] : def;
    if (v[i] < min || v[i] > ((int64_t)1 << 40))
      return ait_err(AIT_E_INVALID_ARG, "%s[%d] = %lld is out of range", name, i, (long long)v[i]);
  }
  return AIT_OK;
}

/* Value of a (D1 x ... x Dn) volume at real coordinates p, N-linear over
 * the 2^n neighbours, zero outside. */
static double sample_zero(const double *v, int nd, const int64_t *dims, const double *p) {
  int64_t f[MAXD];
  double r[MAXD], out = 0;
  for (int d = 0; d < nd; d++) {
    if (!(p[d] > -1 && p[d] < (double)dims[d])) return 0; /* every neighbour outside (or NaN) */
    f[d] = (int64_t)floor(p[d]), r[d] = p[d] - (double)f[d];
  }
  for (int k = 0; k < (1 << nd); k++) {
    double w = 1;
    int64_t at = 0;
    bool in = true;
    for (int d = 0; d < nd && in; d++) {
      int up = (k >> d) & 1;
      int64_t i = f[d] + up;
      w *= up ? r[d] : 1 - r[d];
      in = i >= 0 && i < dims[d];
      at = at * dims[d] + i;
    }
    if (in && w != 0) out += w * v[at];
  }
  return out;
}

typedef struct dc_geo {
  int nd;
  int64_t N, C, OC, G, OG, cpg, ocpg;
  int64_t in[MAXD], out[MAXD], k[MAXD], s[MAXD], d[MAXD], pb[MAXD];
  int64_t isp, osp, ksp;
} dc_geo;

static ait_status dc_geometry(const ait_node *node, const ait_tensor *x, const ait_tensor *w,
                              const ait_tensor *off, const ait_tensor *mask, const ait_tensor *b,
                              dc_geo *g) {
  if (x->rank < 3 || x->rank - 2 > MAXD || w->rank != x->rank || off->rank != x->rank)
    return ait_err(AIT_E_SHAPE, "X, W and offset must have one rank >= 3");
  g->nd = x->rank - 2;
  g->N = x->dims[0], g->C = x->dims[1], g->OC = w->dims[0];
  g->G = ait_attr_int(node, "group", 1), g->OG = ait_attr_int(node, "offset_group", 1);
  if (g->G <= 0 || g->OG <= 0 || g->C % g->G || g->OC % g->G || g->C % g->OG ||
      w->dims[1] * g->G != g->C)
    return ait_err(AIT_E_SHAPE, "group %lld / offset_group %lld do not fit %lld channels and W",
                   (long long)g->G, (long long)g->OG, (long long)g->C);
  g->cpg = g->C / g->G, g->ocpg = g->OC / g->G;
  int64_t pads[2 * MAXD];
  AIT_TRY(sp_attr(node, "strides", g->nd, 1, g->s, 1));
  AIT_TRY(sp_attr(node, "dilations", g->nd, 1, g->d, 1));
  AIT_TRY(sp_attr(node, "pads", 2 * g->nd, 0, pads, 0));
  g->isp = g->osp = g->ksp = 1;
  for (int i = 0; i < g->nd; i++) {
    g->in[i] = x->dims[2 + i], g->k[i] = w->dims[2 + i], g->pb[i] = pads[i];
    int64_t span = (g->k[i] - 1) * g->d[i] + 1, o = (g->in[i] + pads[i] + pads[g->nd + i] - span);
    g->out[i] = o < 0 ? 0 : o / g->s[i] + 1;
    if (off->dims[2 + i] != g->out[i])
      return ait_err(AIT_E_SHAPE, "offset's spatial dim %d is %lld, the output's %lld", i,
                     (long long)off->dims[2 + i], (long long)g->out[i]);
    g->isp *= g->in[i], g->osp *= g->out[i], g->ksp *= g->k[i];
  }
  if (off->dims[0] != g->N || off->dims[1] != g->OG * g->ksp * g->nd)
    return ait_err(AIT_E_SHAPE, "offset must be (N, offset_group * prod(kernel) * %d, out...)",
                   g->nd);
  if (mask && (mask->rank != x->rank || mask->dims[0] != g->N || mask->dims[1] != g->OG * g->ksp ||
               ait_tensor_numel(mask) != g->N * g->OG * g->ksp * g->osp))
    return ait_err(AIT_E_SHAPE, "mask must be (N, offset_group * prod(kernel), out...)");
  if (b && ait_tensor_numel(b) != g->OC) return ait_err(AIT_E_SHAPE, "B must have oC values");
  return AIT_OK;
}

NN_KERNEL(nn_deform_conv_kernel) {
  const ait_tensor *x = n_in > 0 ? in[0] : NULL, *w = n_in > 1 ? in[1] : NULL;
  const ait_tensor *off = n_in > 2 ? in[2] : NULL, *b = n_in > 3 ? in[3] : NULL;
  const ait_tensor *mask = n_in > 4 ? in[4] : NULL;
  if (!x || !w || !off) return ait_err(AIT_E_INVALID_ARG, "X, W and offset are required");
  AIT_TRY(nn_check_float(x, "X"));
  dc_geo g = {0};
  AIT_TRY(dc_geometry(node, x, w, off, mask, b, &g));
  int64_t od[AIT_MAX_RANK] = {g.N, g.OC};
  for (int i = 0; i < g.nd; i++)
    od[2 + i] = g.out[i];
  AIT_TRY(nn_new(&out[0], x->dtype, x->rank, od));
  double *xv = nn_load_f64(x), *wv = nn_load_f64(w), *ov = nn_load_f64(off);
  double *mv = mask ? nn_load_f64(mask) : NULL, *bv = b ? nn_load_f64(b) : NULL;
  double *y = calloc((size_t)(g.N * g.OC * g.osp + 1), sizeof *y);
  /* the sampled column of one output position: C * prod(kernel) values */
  double *col = malloc((size_t)(g.C * g.ksp + 1) * sizeof *col);
  ait_status st = xv && wv && ov && (!mask || mv) && (!b || bv) && y && col
                      ? AIT_OK
                      : ait_err(AIT_E_NOMEM, "out of memory in DeformConv");
  for (int64_t n = 0; !st && n < g.N; n++)
    for (int64_t o = 0; o < g.osp; o++) {
      int64_t oc_[MAXD], rem = o;
      for (int i = g.nd - 1; i >= 0; i--)
        oc_[i] = rem % g.out[i], rem /= g.out[i];
      for (int64_t c = 0; c < g.C; c++) {
        int64_t og = c / (g.C / g.OG);
        for (int64_t k = 0; k < g.ksp; k++) {
          int64_t kc[MAXD], kr = k;
          for (int i = g.nd - 1; i >= 0; i--)
            kc[i] = kr % g.k[i], kr /= g.k[i];
          double p[MAXD];
          for (int i = 0; i < g.nd; i++) {
            int64_t ch = ((og * g.ksp + k) * g.nd + i) * g.osp + o;
            p[i] = (double)(oc_[i] * g.s[i] - g.pb[i] + kc[i] * g.d[i]) +
                   ov[n * off->dims[1] * g.osp + ch];
          }
          double m = mv ? mv[(n * g.OG * g.ksp + og * g.ksp + k) * g.osp + o] : 1.0;
          col[c * g.ksp + k] = m * sample_zero(xv + (n * g.C + c) * g.isp, g.nd, g.in, p);
        }
      }
      for (int64_t oc = 0; oc < g.OC; oc++) {
        int64_t grp = oc / g.ocpg;
        double s = bv ? bv[oc] : 0;
        const double *wr = wv + oc * g.cpg * g.ksp, *cr = col + grp * g.cpg * g.ksp;
        for (int64_t j = 0; j < g.cpg * g.ksp; j++)
          s += wr[j] * cr[j];
        y[(n * g.OC + oc) * g.osp + o] = s;
      }
    }
  if (!st) nn_store_f64(out[0], y);
  free(xv), free(wv), free(ov), free(mv), free(bv), free(y), free(col);
  return st;
}

ait_status nn_deform_conv_shape(ait_graph *g, const ait_node *n) {
  const ait_value *x = ait_node_in(g, n, 0), *w = ait_node_in(g, n, 1), *off = ait_node_in(g, n, 2);
  ait_dtype dt = x ? x->dtype : AIT_UNDEFINED;
  if (!x || !w || !off || x->rank < 3 || off->rank != x->rank || w->rank != x->rank) {
    ait_set_out(g, n, 0, dt, x ? x->rank : -1, NULL);
    return AIT_OK;
  }
  ait_dim d[AIT_MAX_RANK];
  d[0] = x->dims[0], d[1] = w->dims[0];
  for (int i = 2; i < x->rank; i++)
    d[i] = off->dims[i];
  ait_set_out(g, n, 0, dt, x->rank, d);
  return AIT_OK;
}

/* ---- Col2Im --------------------------------------------------------------- */

NN_KERNEL(nn_col2im_kernel) {
  const ait_tensor *x = n_in > 0 ? in[0] : NULL, *is = n_in > 1 ? in[1] : NULL;
  const ait_tensor *bs = n_in > 2 ? in[2] : NULL;
  if (!x || !is || !bs) return ait_err(AIT_E_INVALID_ARG, "input, image_shape, block_shape needed");
  AIT_TRY(nn_check_float(x, "input"));
  int64_t img[MAXD], blk[MAXD], s[MAXD], d[MAXD], pads[2 * MAXD], nb[MAXD];
  int nd, nbk;
  AIT_TRY(ait_read_ints(is, img, MAXD, &nd));
  AIT_TRY(ait_read_ints(bs, blk, MAXD, &nbk));
  if (nd < 1 || nbk != nd)
    return ait_err(AIT_E_SHAPE, "image_shape and block_shape differ in length");
  AIT_TRY(sp_attr(node, "strides", nd, 1, s, 1));
  AIT_TRY(sp_attr(node, "dilations", nd, 1, d, 1));
  AIT_TRY(sp_attr(node, "pads", 2 * nd, 0, pads, 0));
  if (x->rank != 3) return ait_err(AIT_E_SHAPE, "input must be (N, C * prod(block), L)");
  int64_t kprod = 1, L = 1, isp = 1;
  for (int i = 0; i < nd; i++) {
    if (img[i] < 0 || blk[i] < 1 || img[i] > ((int64_t)1 << 40) || blk[i] > ((int64_t)1 << 40))
      return ait_err(AIT_E_INVALID_ARG, "image_shape / block_shape out of range");
    int64_t span = (blk[i] - 1) * d[i] + 1, o = img[i] + pads[i] + pads[nd + i] - span;
    nb[i] = o < 0 ? 0 : o / s[i] + 1;
    kprod *= blk[i], L *= nb[i], isp *= img[i];
  }
  if (kprod <= 0 || x->dims[1] % kprod || x->dims[2] != L)
    return ait_err(AIT_E_SHAPE, "input is (%lld, %lld, %lld); block product %lld, %lld blocks",
                   (long long)x->dims[0], (long long)x->dims[1], (long long)x->dims[2],
                   (long long)kprod, (long long)L);
  int64_t N = x->dims[0], C = x->dims[1] / kprod, od[AIT_MAX_RANK] = {N, C};
  if (nd + 2 > AIT_MAX_RANK) return ait_err(AIT_E_SHAPE, "image rank too large");
  for (int i = 0; i < nd; i++)
    od[2 + i] = img[i];
  AIT_TRY(nn_new(&out[0], x->dtype, nd + 2, od));
  double *xv = nn_load_f64(x), *y = calloc((size_t)(N * C * isp + 1), sizeof *y);
  ait_status st = xv && y ? AIT_OK : ait_err(AIT_E_NOMEM, "out of memory in Col2Im");
  for (int64_t nc = 0; !st && nc < N * C; nc++)
    for (int64_t k = 0; k < kprod; k++)
      for (int64_t l = 0; l < L; l++) {
        int64_t kr = k, lr = l, at = 0;
        bool inside = true;
        int64_t kc[MAXD], lc[MAXD];
        for (int i = nd - 1; i >= 0; i--)
          kc[i] = kr % blk[i], kr /= blk[i], lc[i] = lr % nb[i], lr /= nb[i];
        for (int i = 0; i < nd && inside; i++) {
          int64_t p = lc[i] * s[i] - pads[i] + kc[i] * d[i];
          inside = p >= 0 && p < img[i];
          at = at * img[i] + p;
        }
        if (inside) y[nc * isp + at] += xv[(nc * kprod + k) * L + l];
      }
  if (!st) nn_store_f64(out[0], y);
  free(xv), free(y);
  return st;
}

/* Constant int input i of n into v (at most max); false when not constant. */
static bool const_ints(ait_graph *g, const ait_node *n, int i, int64_t *v, int max, int *cnt) {
  const ait_value *c = ait_node_in(g, n, i);
  return c && c->init && ait_read_ints(c->init, v, max, cnt) == AIT_OK;
}

ait_status nn_col2im_shape(ait_graph *g, const ait_node *n) {
  const ait_value *x = ait_node_in(g, n, 0);
  ait_dtype dt = x ? x->dtype : AIT_UNDEFINED;
  int64_t img[MAXD], blk[MAXD];
  int nd = 0, nb = 0;
  if (!x || x->rank != 3 || !const_ints(g, n, 1, img, MAXD, &nd) || nd + 2 > AIT_MAX_RANK) {
    ait_set_out(g, n, 0, dt, -1, NULL);
    return AIT_OK;
  }
  int64_t kprod = 1;
  bool blocks = const_ints(g, n, 2, blk, MAXD, &nb) && nb == nd;
  for (int i = 0; blocks && i < nb; i++)
    kprod = blk[i] > 0 && kprod <= ((int64_t)1 << 40) / blk[i] ? kprod * blk[i] : -1;
  ait_dim d[AIT_MAX_RANK];
  d[0] = x->dims[0];
  d[1] = (ait_dim){blocks && kprod > 0 && x->dims[1].v >= 0 ? x->dims[1].v / kprod : -1, NULL};
  for (int i = 0; i < nd; i++)
    d[2 + i] = (ait_dim){img[i], NULL};
  ait_set_out(g, n, 0, dt, nd + 2, d);
  return AIT_OK;
}
