/* Per segment: the XNNPACK subgraph of the xops the plan put there, its
 * runtime (on the state's thread pool), and the external values pointed at
 * the plan's staging buffers once (they never move, so setup runs once). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/xnnpack/xnn_impl.h"
#include "ops/nn_impl.h"

typedef struct dctx {
  xnn_state *s;
  xplan *p;
  int seg;
  xnn_subgraph_t sg;
  uint32_t *id;  /* per plan value: XNNPACK value id in this subgraph */
  int32_t *ext;  /* per plan value: external id in this subgraph, -1 */
  const xop *op; /* the xop being defined (messages) */
} dctx;

static ait_status xfail(const dctx *d, enum xnn_status st, const char *what) {
  return ait_err(st == xnn_status_out_of_memory ? AIT_E_NOMEM : AIT_E_UNSUPPORTED,
                 "xnnpack: %s: XNNPACK refused %s (%s)",
                 d->op ? xnn_op_desc(d->s, d->op) : "segment", what, xnn_status_str(st));
}

#define XTRY(d, call, what)                                                                        \
  do {                                                                                             \
    enum xnn_status xst_ = (call);                                                                 \
    if (xst_ != xnn_status_success) return xfail(d, xst_, what);                                   \
  } while (0)

static ait_status def_tensor(dctx *d, int rank, const size_t *dims, const void *data, uint32_t ext,
                             uint32_t flags, uint32_t *id) {
  if (rank > XNN_MAX_TENSOR_DIMS)
    return ait_err(AIT_E_UNSUPPORTED, "xnnpack: %s: a rank-%d tensor (XNNPACK takes 6)",
                   d->op ? xnn_op_desc(d->s, d->op) : "segment", rank);
  XTRY(d,
       xnn_define_tensor_value(d->sg, xnn_datatype_fp32, (size_t)rank, dims, data, ext, flags, id),
       "a tensor");
  return AIT_OK;
}

/* A static tensor over constant t (packed weights). */
static ait_status def_static(dctx *d, const ait_tensor *t, uint32_t *id) {
  size_t dims[AIT_MAX_RANK];
  for (int i = 0; i < t->rank; i++)
    dims[i] = (size_t)t->dims[i];
  return def_tensor(d, t->rank, dims, t->data, XNN_INVALID_VALUE_ID, 0, id);
}

/* An internal (runtime-owned) tensor of the given stored dims. */
static ait_status def_temp(dctx *d, int rank, const size_t *dims, uint32_t *id) {
  return def_tensor(d, rank, dims, NULL, XNN_INVALID_VALUE_ID, 0, id);
}

/* The id to read plan value r: a static constant, an in-runtime view of
 * another value, or an external input staged by the host. */
static ait_status id_in(dctx *d, int r, uint32_t *id) {
  if (d->id[r] != XNN_INVALID_VALUE_ID) {
    *id = d->id[r];
    return AIT_OK;
  }
  xpv *v = &d->p->pv[r];
  size_t dims[AIT_MAX_RANK];
  int rank = xnn_pv_dims(v, dims);
  if (v->cst) {
    AIT_TRY(def_tensor(d, rank, dims, v->cst->data, XNN_INVALID_VALUE_ID, 0, &d->id[r]));
  } else if (v->src >= 0 && !v->host) {
    uint32_t src;
    AIT_TRY(id_in(d, v->src, &src));
    AIT_TRY(def_temp(d, rank, dims, &d->id[r]));
    XTRY(d, xnn_define_static_reshape(d->sg, (size_t)rank, dims, src, d->id[r], 0),
         "a layout view (reshape)");
  } else if (d->ext[r] >= 0) {
    AIT_TRY(def_tensor(d, rank, dims, NULL, (uint32_t)d->ext[r], XNN_VALUE_FLAG_EXTERNAL_INPUT,
                       &d->id[r]));
  } else {
    return ait_err(AIT_E_RUNTIME, "xnnpack: %s: plan value %d has no source in segment %d",
                   d->op ? xnn_op_desc(d->s, d->op) : "segment", r, d->seg);
  }
  *id = d->id[r];
  return AIT_OK;
}

static ait_status id_out(dctx *d, int v, uint32_t *id) {
  size_t dims[AIT_MAX_RANK];
  int rank = xnn_pv_dims(&d->p->pv[v], dims);
  bool ext = d->ext[v] >= 0;
  AIT_TRY(def_tensor(d, rank, dims, NULL, ext ? (uint32_t)d->ext[v] : XNN_INVALID_VALUE_ID,
                     ext ? XNN_VALUE_FLAG_EXTERNAL_OUTPUT : 0, &d->id[v]));
  *id = d->id[v];
  return AIT_OK;
}

static int res(const dctx *d, int j) {
  return d->p->res[(size_t)(d->op - d->s->ops) * XNN_MAX_IN + j];
}

/* ---- per kind ----------------------------------------------------------------- */

static ait_status def_conv(dctx *d, uint32_t x, uint32_t y) {
  const xop *op = d->op;
  const ait_tensor *w = d->s->consts[op->w].t;
  const xpv *in = &d->p->pv[res(d, 0)];
  xwin v;
  uint32_t wid, bid;
  AIT_TRY(xnn_window(d->s, op, in, &v));
  AIT_TRY(def_static(d, w, &wid));
  AIT_TRY(def_static(d, d->s->consts[op->b].t, &bid));
  int64_t m = w->dims[0];
  enum xnn_status st;
  if (op->kind == XK_DECONV)
    st = xnn_define_deconvolution_2d(
        d->sg, (uint32_t)v.pt, (uint32_t)v.pr, (uint32_t)v.pb, (uint32_t)v.pl, (uint32_t)v.ah,
        (uint32_t)v.aw, (uint32_t)v.kh, (uint32_t)v.kw, (uint32_t)v.sh, (uint32_t)v.sw,
        (uint32_t)v.dh, (uint32_t)v.dw, (uint32_t)op->groups, (size_t)w->dims[3],
        (size_t)(m / op->groups), op->fmin, op->fmax, x, wid, bid, y, 0);
  else if (op->kind == XK_DWCONV)
    st = xnn_define_depthwise_convolution_2d(
        d->sg, (uint32_t)v.pt, (uint32_t)v.pr, (uint32_t)v.pb, (uint32_t)v.pl, (uint32_t)v.kh,
        (uint32_t)v.kw, (uint32_t)v.sh, (uint32_t)v.sw, (uint32_t)v.dh, (uint32_t)v.dw,
        (uint32_t)op->groups, (size_t)in->dims[1], op->fmin, op->fmax, x, wid, bid, y, 0);
  else
    st = xnn_define_convolution_2d(d->sg, (uint32_t)v.pt, (uint32_t)v.pr, (uint32_t)v.pb,
                                   (uint32_t)v.pl, (uint32_t)v.kh, (uint32_t)v.kw, (uint32_t)v.sh,
                                   (uint32_t)v.sw, (uint32_t)v.dh, (uint32_t)v.dw,
                                   (uint32_t)op->groups, (size_t)w->dims[3],
                                   (size_t)(m / op->groups), op->fmin, op->fmax, x, wid, bid, y, 0);
  XTRY(d, st, "the convolution");
  return AIT_OK;
}

static ait_status def_fc(dctx *d, uint32_t x, uint32_t y) {
  uint32_t wid, bid = XNN_INVALID_VALUE_ID;
  AIT_TRY(def_static(d, d->s->consts[d->op->w].t, &wid));
  if (d->op->b >= 0) AIT_TRY(def_static(d, d->s->consts[d->op->b].t, &bid));
  XTRY(d, xnn_define_fully_connected(d->sg, d->op->fmin, d->op->fmax, x, wid, bid, y, 0),
       "the fully connected node");
  return AIT_OK;
}

static ait_status def_pool(dctx *d, uint32_t x, uint32_t y) {
  const xop *op = d->op;
  if (op->kind == XK_GAP) {
    XTRY(d, xnn_define_global_average_pooling_2d(d->sg, op->fmin, op->fmax, x, y, 0),
         "the global average pool");
    return AIT_OK;
  }
  const xpv *in = &d->p->pv[res(d, 0)];
  xwin v;
  AIT_TRY(xnn_window(d->s, op, in, &v));
  if (op->kind == XK_MAXPOOL) {
    XTRY(d,
         xnn_define_max_pooling_2d(d->sg, (uint32_t)v.pt, (uint32_t)v.pr, (uint32_t)v.pb,
                                   (uint32_t)v.pl, (uint32_t)v.kh, (uint32_t)v.kw, (uint32_t)v.sh,
                                   (uint32_t)v.sw, (uint32_t)v.dh, (uint32_t)v.dw, op->fmin,
                                   op->fmax, x, y, 0),
         "the max pool");
    return AIT_OK;
  }
  if (op->count_include_pad && (v.pt || v.pl || v.pb || v.pr)) {
    /* padded zeros count: pad explicitly, then pool without padding */
    size_t pre[4] = {0, (size_t)v.pt, (size_t)v.pl, 0},
           post[4] = {0, (size_t)v.pb, (size_t)v.pr, 0};
    size_t dims[4] = {(size_t)in->dims[0], (size_t)(v.ih + v.pt + v.pb),
                      (size_t)(v.iw + v.pl + v.pr), (size_t)in->dims[1]};
    uint32_t t;
    AIT_TRY(def_temp(d, 4, dims, &t));
    XTRY(d, xnn_define_static_constant_pad(d->sg, pre, post, 0.0f, x, t, 0), "the pool's pad");
    x = t;
    v.pt = v.pl = v.pb = v.pr = 0;
  }
  XTRY(d,
       xnn_define_average_pooling_2d(d->sg, (uint32_t)v.pt, (uint32_t)v.pr, (uint32_t)v.pb,
                                     (uint32_t)v.pl, (uint32_t)v.kh, (uint32_t)v.kw, (uint32_t)v.sh,
                                     (uint32_t)v.sw, op->fmin, op->fmax, x, y, 0),
       "the average pool");
  return AIT_OK;
}

static ait_status def_binary(dctx *d, uint32_t y) {
  uint32_t a, b;
  AIT_TRY(id_in(d, res(d, 0), &a));
  AIT_TRY(id_in(d, res(d, 1), &b));
  const xop *op = d->op;
  enum xnn_status st;
  switch (op->sub) {
  case XB_ADD: st = xnn_define_add2(d->sg, op->fmin, op->fmax, a, b, y, 0); break;
  case XB_SUB: st = xnn_define_subtract(d->sg, op->fmin, op->fmax, a, b, y, 0); break;
  case XB_MUL: st = xnn_define_multiply2(d->sg, op->fmin, op->fmax, a, b, y, 0); break;
  case XB_DIV: st = xnn_define_divide(d->sg, op->fmin, op->fmax, a, b, y, 0); break;
  case XB_MAX: st = xnn_define_maximum2(d->sg, a, b, y, 0); break;
  default: st = xnn_define_minimum2(d->sg, a, b, y, 0); break;
  }
  XTRY(d, st, "the elementwise node");
  return AIT_OK;
}

static ait_status def_unary(dctx *d, uint32_t x, uint32_t y) {
  const xop *op = d->op;
  enum xnn_status st;
  switch (op->sub) {
  case XU_HARDSWISH: st = xnn_define_hardswish(d->sg, x, y, 0); break;
  case XU_SIGMOID: st = xnn_define_sigmoid(d->sg, x, y, 0); break;
  case XU_ABS: st = xnn_define_abs(d->sg, x, y, 0); break;
  case XU_NEG: st = xnn_define_negate(d->sg, x, y, 0); break;
  case XU_FLOOR: st = xnn_define_floor(d->sg, x, y, 0); break;
  case XU_CEIL: st = xnn_define_ceiling(d->sg, x, y, 0); break;
  case XU_ROUND: st = xnn_define_bankers_rounding(d->sg, x, y, 0); break;
  case XU_SQRT: st = xnn_define_square_root(d->sg, x, y, 0); break;
  case XU_SQUARE: st = xnn_define_square(d->sg, x, y, 0); break;
  case XU_ELU: st = xnn_define_elu(d->sg, op->alpha, x, y, 0); break;
  default: st = xnn_define_leaky_relu(d->sg, op->alpha, x, y, 0); break;
  }
  XTRY(d, st, "the unary node");
  return AIT_OK;
}

static ait_status def_prelu(dctx *d, uint32_t x, uint32_t y) {
  const xpv *in = &d->p->pv[res(d, 0)];
  const ait_tensor *slope = d->p->pv[res(d, 1)].cst;
  int64_t c = in->dims[1], n = ait_tensor_numel(slope);
  if (n != 1 && n != c)
    return ait_err(AIT_E_SHAPE, "xnnpack: %s: %lld slopes for %lld channels",
                   xnn_op_desc(d->s, d->op), (long long)n, (long long)c);
  ait_tensor *t = ait_tensor_new(AIT_FLOAT32, 1, &c);
  if (!t) return AIT_E_NOMEM;
  AIT_TRY(xnn_plan_own(d->p, t));
  for (int64_t i = 0; i < c; i++)
    ((float *)t->data)[i] = ((const float *)slope->data)[n == 1 ? 0 : i];
  uint32_t sid;
  AIT_TRY(def_static(d, t, &sid));
  XTRY(d, xnn_define_prelu(d->sg, x, sid, y, 0), "the PRelu node");
  return AIT_OK;
}

/* Softmax: on channels of NHWC data directly, else rows [outer, n] of ONNX
 * order reshaped around XNNPACK's innermost softmax. */
static ait_status def_softmax(dctx *d, uint32_t x, uint32_t y) {
  const xpv *in = &d->p->pv[res(d, 0)];
  int r = in->rank, a = d->op->axis < 0 ? d->op->axis + r : d->op->axis;
  if (in->layout == XL_NHWC || a == r - 1) {
    XTRY(d, xnn_define_softmax(d->sg, x, y, 0), "the softmax");
    return AIT_OK;
  }
  if (!d->op->sub && ait_shape_numel(r - a - 1, in->dims + a + 1) != 1)
    return ait_err(AIT_E_UNSUPPORTED, "xnnpack: %s: softmax over a middle axis",
                   xnn_op_desc(d->s, d->op));
  size_t rows[2] = {(size_t)ait_shape_numel(a, in->dims),
                    (size_t)ait_shape_numel(r - a, in->dims + a)};
  size_t dims[AIT_MAX_RANK];
  int ro = xnn_pv_dims(&d->p->pv[d->op->out], dims);
  uint32_t t0, t1;
  AIT_TRY(def_temp(d, 2, rows, &t0));
  AIT_TRY(def_temp(d, 2, rows, &t1));
  XTRY(d, xnn_define_static_reshape(d->sg, 2, rows, x, t0, 0), "the softmax's reshape");
  XTRY(d, xnn_define_softmax(d->sg, t0, t1, 0), "the softmax");
  XTRY(d, xnn_define_static_reshape(d->sg, (size_t)ro, dims, t1, y, 0), "the softmax's reshape");
  return AIT_OK;
}

/* Stored position of ONNX axis a in a channels-last value of rank r. */
static int to_stored(int a, int r) { return a == 0 ? 0 : a == 1 ? r - 1 : a - 1; }

static ait_status def_pad(dctx *d, uint32_t x, uint32_t y) {
  const xpv *in = &d->p->pv[res(d, 0)];
  size_t pre[XNN_MAX_TENSOR_DIMS] = {0}, post[XNN_MAX_TENSOR_DIMS] = {0};
  for (int i = 0; i < in->rank; i++) {
    int at = in->layout == XL_NHWC ? to_stored(i, in->rank) : i;
    pre[at] = (size_t)d->op->spec[i];
    post[at] = (size_t)d->op->spec[in->rank + i];
  }
  XTRY(d, xnn_define_static_constant_pad(d->sg, pre, post, d->op->alpha, x, y, 0), "the pad");
  return AIT_OK;
}

/* Concat without a concat node (none in this XNNPACK): each input padded
 * with zeros to the full size at its offset, then the pieces added. */
static ait_status def_concat(dctx *d, uint32_t y) {
  const xop *op = d->op;
  const xpv *out = &d->p->pv[op->out];
  int r = out->rank, a = op->axis < 0 ? op->axis + r : op->axis;
  int at = out->layout == XL_NHWC ? to_stored(a, r) : a;
  size_t dims[AIT_MAX_RANK];
  int ro = xnn_pv_dims(out, dims);
  uint32_t acc = XNN_INVALID_VALUE_ID;
  int64_t off = 0;
  for (int j = 0; j < op->n_in; j++) {
    const xpv *v = &d->p->pv[res(d, j)];
    uint32_t x, t;
    AIT_TRY(id_in(d, res(d, j), &x));
    if (op->n_in == 1) {
      XTRY(d, xnn_define_clamp(d->sg, -INFINITY, INFINITY, x, y, 0), "the concat copy");
      return AIT_OK;
    }
    size_t pre[XNN_MAX_TENSOR_DIMS] = {0}, post[XNN_MAX_TENSOR_DIMS] = {0};
    pre[at] = (size_t)off;
    post[at] = (size_t)(out->dims[a] - off - v->dims[a]);
    off += v->dims[a];
    AIT_TRY(def_temp(d, ro, dims, &t));
    XTRY(d, xnn_define_static_constant_pad(d->sg, pre, post, 0.0f, x, t, 0), "the concat's pad");
    if (acc == XNN_INVALID_VALUE_ID) {
      acc = t;
      continue;
    }
    uint32_t sum = y;
    if (j + 1 < op->n_in) AIT_TRY(def_temp(d, ro, dims, &sum));
    XTRY(d, xnn_define_add2(d->sg, -INFINITY, INFINITY, acc, t, sum, 0), "the concat's add");
    acc = sum;
  }
  return AIT_OK;
}

/* Whether an xop of this segment reads plan value v. */
static bool read_here(const dctx *d, int v) {
  const xplan *p = d->p;
  for (int i = 0; i < d->s->n_ops; i++) {
    if (p->op_seg[i] != d->seg) continue;
    for (int j = 0; j < d->s->ops[i].n_in; j++) {
      if (d->s->ops[i].in[j] < 0) continue;
      int r = p->res[(size_t)i * XNN_MAX_IN + j];
      if (r == v || (p->pv[r].src == v && !p->pv[r].host)) return true;
    }
  }
  return false;
}

static ait_status def_kind(dctx *d, uint32_t x, uint32_t y);

/* XNNPACK's windowed nodes are 2D: a rank-3 channels-last value [N, L, C]
 * goes through them as [N, 1, L, C], the same bytes, reshaped in and out. */
static ait_status def_spatial(dctx *d, uint32_t x, uint32_t y) {
  const xpv *in = &d->p->pv[res(d, 0)], *out = &d->p->pv[d->op->out];
  uint32_t x4 = x, y4 = y;
  size_t di[4], dout[4];
  if (in->rank == 3) {
    size_t s3[3], o3[3];
    xnn_pv_dims(in, s3);
    xnn_pv_dims(out, o3);
    di[0] = s3[0], di[1] = 1, di[2] = s3[1], di[3] = s3[2];
    dout[0] = o3[0], dout[1] = 1, dout[2] = o3[1], dout[3] = o3[2];
    AIT_TRY(def_temp(d, 4, di, &x4));
    AIT_TRY(def_temp(d, 4, dout, &y4));
    XTRY(d, xnn_define_static_reshape(d->sg, 4, di, x, x4, 0), "a 1D-to-2D reshape");
  }
  ait_status st = d->op->kind == XK_PRELU                              ? def_prelu(d, x4, y4)
                  : d->op->kind >= XK_MAXPOOL && d->op->kind <= XK_GAP ? def_pool(d, x4, y4)
                                                                       : def_conv(d, x4, y4);
  if (st || in->rank != 3) return st;
  XTRY(d, xnn_define_static_reshape(d->sg, 3, (size_t[]){dout[0], dout[2], dout[3]}, y4, y, 0),
       "a 2D-to-1D reshape");
  return AIT_OK;
}

static ait_status def_op(dctx *d) {
  const xop *op = d->op;
  uint32_t x = XNN_INVALID_VALUE_ID, y, y_ext = XNN_INVALID_VALUE_ID;
  if (op->kind == XK_RESHAPE) {
    /* a reshape reads the bytes, so a layout view of its input is not needed */
    int r = res(d, 0);
    const xpv *v = &d->p->pv[r];
    AIT_TRY(id_in(d, v->src >= 0 && !v->host ? v->src : r, &x));
  } else if (op->kind != XK_BINARY && op->kind != XK_CONCAT) {
    AIT_TRY(id_in(d, res(d, 0), &x));
  }
  if (d->s->fp16 && d->ext[op->out] >= 0 && read_here(d, op->out)) {
    /* XNNPACK's fp16 rewrite (2022-02) asserts when an external output is
     * also read inside the runtime: compute into a temporary, copy out */
    size_t dims[AIT_MAX_RANK];
    int rank = xnn_pv_dims(&d->p->pv[op->out], dims);
    AIT_TRY(def_tensor(d, rank, dims, NULL, (uint32_t)d->ext[op->out],
                       XNN_VALUE_FLAG_EXTERNAL_OUTPUT, &y_ext));
    AIT_TRY(def_temp(d, rank, dims, &y));
    d->id[op->out] = y;
  } else {
    AIT_TRY(id_out(d, op->out, &y));
  }
  AIT_TRY(def_kind(d, x, y));
  if (y_ext != XNN_INVALID_VALUE_ID)
    XTRY(d, xnn_define_clamp(d->sg, -INFINITY, INFINITY, y, y_ext, 0), "an output copy");
  return AIT_OK;
}

static ait_status def_kind(dctx *d, uint32_t x, uint32_t y) {
  const xop *op = d->op;
  switch (op->kind) {
  case XK_CONV:
  case XK_DWCONV:
  case XK_DECONV:
  case XK_MAXPOOL:
  case XK_AVGPOOL:
  case XK_GAP:
  case XK_PRELU: return def_spatial(d, x, y);
  case XK_FC: return def_fc(d, x, y);
  case XK_BINARY: return def_binary(d, y);
  case XK_CLAMP:
    XTRY(d, xnn_define_clamp(d->sg, op->fmin, op->fmax, x, y, 0), "the clamp");
    return AIT_OK;
  case XK_UNARY: return def_unary(d, x, y);
  case XK_SOFTMAX: return def_softmax(d, x, y);
  case XK_RESHAPE: {
    size_t dims[AIT_MAX_RANK];
    int ro = xnn_pv_dims(&d->p->pv[op->out], dims);
    XTRY(d, xnn_define_static_reshape(d->sg, (size_t)ro, dims, x, y, 0), "the reshape");
    return AIT_OK;
  }
  case XK_PAD: return def_pad(d, x, y);
  case XK_CONCAT: return def_concat(d, y);
  default: return ait_err(AIT_E_RUNTIME, "xnnpack: unknown xop kind %d", op->kind);
  }
}

/* External values of segment k: ext values it reads or writes. */
static int number_externals(dctx *d) {
  const xnn_state *s = d->s;
  xplan *p = d->p;
  int n = 0;
  for (int i = 0; i < s->n_ops; i++) {
    if (p->op_seg[i] != d->seg) continue;
    const xop *op = &s->ops[i];
    for (int j = 0; j < op->n_in; j++) {
      if (op->in[j] < 0) continue;
      int r = p->res[(size_t)i * XNN_MAX_IN + j];
      int u = p->pv[r].src >= 0 && !p->pv[r].host ? p->pv[r].src : r;
      if (p->pv[u].ext && d->ext[u] < 0) d->ext[u] = n++;
    }
    if (p->pv[op->out].ext && d->ext[op->out] < 0) d->ext[op->out] = n++;
  }
  return n;
}

static ait_status define_all(dctx *d, int n_ext) {
  for (int i = 0; i < d->s->n_ops; i++) {
    if (d->p->op_seg[i] != d->seg) continue;
    d->op = &d->s->ops[i];
    AIT_TRY(def_op(d));
  }
  d->op = NULL;
  xnn_runtime_t rt = NULL;
  /* workers yield after the last operator instead of spinning: left
   * spinning they held a core for ~50 ms after each run (test_xnnpack), and
   * whatever ran next in the process (other candidates in the tuner's
   * runoff, native segments of a partition) ran at one core's speed */
  uint32_t flags = XNN_FLAG_YIELD_WORKERS | (d->s->fp16 ? XNN_FLAG_FORCE_FP16_INFERENCE : 0);
  enum xnn_status st = xnn_create_runtime_v2(d->sg, d->s->pool, flags, &rt);
  if (st != xnn_status_success) {
    if (d->s->fp16)
      return ait_err(AIT_E_UNSUPPORTED,
                     "xnnpack: dtype=fp16: this XNNPACK cannot run segment %d in fp16 (%s)", d->seg,
                     xnn_status_str(st));
    return xfail(d, st, "the runtime");
  }
  d->p->rt[d->seg] = rt;
  struct xnn_external_value *ev = malloc(((size_t)n_ext + 1) * sizeof *ev);
  if (!ev) return ait_err(AIT_E_NOMEM, "out of memory");
  for (int v = 0; v < d->p->n_pv; v++)
    if (d->ext[v] >= 0)
      ev[d->ext[v]] = (struct xnn_external_value){(uint32_t)d->ext[v], d->p->pv[v].buf};
  st = xnn_setup_runtime(rt, (size_t)n_ext, ev);
  free(ev);
  if (st != xnn_status_success) return xfail(d, st, "the runtime setup");
  return AIT_OK;
}

ait_status xnn_define_segment(xnn_state *s, xplan *p, int k) {
  dctx d = {s, p, k, NULL, NULL, NULL, NULL};
  d.id = malloc((size_t)p->n_pv * sizeof *d.id);
  d.ext = malloc((size_t)p->n_pv * sizeof *d.ext);
  if (!d.id || !d.ext) {
    free(d.id);
    free(d.ext);
    return ait_err(AIT_E_NOMEM, "out of memory");
  }
  for (int i = 0; i < p->n_pv; i++) {
    d.id[i] = XNN_INVALID_VALUE_ID;
    d.ext[i] = -1;
  }
  int n_ext = number_externals(&d);
  ait_status st = AIT_OK;
  enum xnn_status xs = xnn_create_subgraph((uint32_t)n_ext, 0, &d.sg);
  if (xs != xnn_status_success) st = xfail(&d, xs, "a subgraph");
  if (!st) st = define_all(&d, n_ext);
  if (d.sg) xnn_delete_subgraph(d.sg);
  free(d.id);
  free(d.ext);
  return st;
}
