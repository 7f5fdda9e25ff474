/* Per input signature: the ONNX (semantic) dims of every value of the
 * program. XNNPACK 2022-02 takes static shapes only, so every plan starts
 * here. Window geometry comes from the reference's helpers (ops/nn_impl.h),
 * so pads, auto_pad and ceil_mode mean exactly what they mean in `eager`. */
#include <string.h>

#include "backends/xnnpack/xnn_impl.h"
#include "ops/nn_impl.h"

typedef struct sctx {
  const xnn_state *s;
  xplan *p;
  const xop *op;
} sctx;

static ait_status bad(const sctx *c, const char *what) {
  return ait_err(AIT_E_SHAPE, "xnnpack: %s: %s", xnn_op_desc(c->s, c->op), what);
}

static const xpv *in_pv(const sctx *c, int j) { return &c->p->pv[c->op->in[j]]; }

static void set_out(sctx *c, int rank, const int64_t *dims) {
  xpv *o = &c->p->pv[c->op->out];
  o->rank = rank;
  memcpy(o->dims, dims, (size_t)rank * sizeof *dims);
}

ait_status xnn_window(const xnn_state *s, const xop *op, const xpv *in, xwin *w) {
  const ait_node *n = &s->g->nodes[op->node];
  int nsp = in->rank - 2;
  if (nsp != 1 && nsp != 2)
    return ait_err(AIT_E_SHAPE, "xnnpack: %s: the input has rank %d, windows take 3 or 4",
                   xnn_op_desc(s, op), in->rank);
  nn_win nw;
  bool conv = op->kind == XK_CONV || op->kind == XK_DWCONV || op->kind == XK_DECONV;
  int64_t k[2] = {1, 1};
  if (conv) { /* packed [M, kh, kw, C/g] or [1, kh, kw, M]; kh = 1 for 1D */
    k[0] = s->consts[op->w].t->dims[1];
    k[1] = s->consts[op->w].t->dims[2];
  }
  const int64_t *kp = nsp == 2 ? k : k + 1;
  if (op->kind == XK_DECONV) {
    AIT_TRY(nn_win_convt(n, nsp, in->dims + 2, kp, &nw));
    for (int i = 0; i < nsp; i++) {
      int64_t natural = nw.s[i] * (nw.in[i] - 1) + nw.out_pad[i] + (kp[i] - 1) * nw.d[i] + 1 -
                        nw.pb[i] - nw.pe[i];
      if (natural != nw.out[i])
        return ait_err(AIT_E_UNSUPPORTED,
                       "xnnpack: %s: an output_shape past the natural output (XNNPACK cannot "
                       "zero-extend)",
                       xnn_op_desc(s, op));
    }
  } else if (conv) {
    AIT_TRY(nn_win_conv(n, nsp, in->dims + 2, kp, false, true, &nw));
  } else {
    AIT_TRY(nn_win_conv(n, nsp, in->dims + 2, NULL, op->ceil_mode != 0,
                        op->kind == XK_MAXPOOL && nn_pool_has_dilations(n), &nw));
    for (int i = 0; i < nsp; i++) { /* ceil_mode: pad the end so XNNPACK's floor gives ceil */
      int64_t need = (nw.out[i] - 1) * nw.s[i] + (nw.k[i] - 1) * nw.d[i] + 1 -
                     (nw.in[i] + nw.pb[i] + nw.pe[i]);
      if (need > 0) nw.pe[i] += need;
    }
  }
  int h = nsp == 2 ? 0 : -1, x = nsp - 1; /* 1D: a height of 1 */
  *w = (xwin){.ih = 1, .oh = 1, .kh = 1, .sh = 1, .dh = 1};
  if (h == 0) {
    *w = (xwin){.ih = nw.in[0],
                .oh = nw.out[0],
                .kh = conv ? kp[0] : nw.k[0],
                .sh = nw.s[0],
                .dh = nw.d[0],
                .pt = nw.pb[0],
                .pb = nw.pe[0]};
    if (op->kind == XK_DECONV) w->ah = nw.out_pad[0];
  }
  w->iw = nw.in[x];
  w->ow = nw.out[x];
  w->kw = conv ? kp[x] : nw.k[x];
  w->sw = nw.s[x];
  w->dw = nw.d[x];
  w->pl = nw.pb[x];
  w->pr = nw.pe[x];
  w->aw = op->kind == XK_DECONV ? nw.out_pad[x] : 0;
  return AIT_OK;
}

static ait_status sh_conv(sctx *c) {
  const xpv *x = in_pv(c, 0);
  const ait_tensor *w = c->s->consts[c->op->w].t;
  int64_t m, cin;
  if (c->op->kind == XK_DWCONV) {
    m = w->dims[3];
    cin = m / c->op->groups;
  } else {
    m = w->dims[0];
    cin = w->dims[3] * c->op->groups;
  }
  if (x->rank < 3 || x->dims[1] != cin) return bad(c, "input channels do not match the weight");
  xwin win;
  AIT_TRY(xnn_window(c->s, c->op, x, &win));
  int64_t out[4] = {x->dims[0], m, win.oh, win.ow};
  if (x->rank == 3) out[2] = win.ow;
  set_out(c, x->rank, out);
  return AIT_OK;
}

static ait_status sh_fc(sctx *c) {
  const xpv *x = in_pv(c, 0);
  const ait_tensor *w = c->s->consts[c->op->w].t;
  if (x->rank < 1 || x->dims[x->rank - 1] != w->dims[1])
    return bad(c, "the inner dimension does not match the weight");
  int64_t out[AIT_MAX_RANK];
  memcpy(out, x->dims, sizeof out);
  out[x->rank - 1] = w->dims[0];
  set_out(c, x->rank, out);
  return AIT_OK;
}

static ait_status sh_pool(sctx *c) {
  const xpv *x = in_pv(c, 0);
  if (x->rank != 3 && x->rank != 4) return bad(c, "the input is not 3D or 4D");
  int64_t out[4] = {x->dims[0], x->dims[1], 1, 1};
  if (c->op->kind != XK_GAP) {
    xwin win;
    AIT_TRY(xnn_window(c->s, c->op, x, &win));
    out[2] = x->rank == 4 ? win.oh : win.ow;
    out[3] = win.ow;
  }
  set_out(c, x->rank, out);
  return AIT_OK;
}

static ait_status sh_binary(sctx *c) {
  const xpv *a = in_pv(c, 0), *b = in_pv(c, 1);
  int r;
  int64_t out[AIT_MAX_RANK];
  if (ait_shape_broadcast(a->rank, a->dims, b->rank, b->dims, &r, out))
    return ait_err_prefix(AIT_E_SHAPE, "xnnpack: %s", xnn_op_desc(c->s, c->op));
  set_out(c, r, out);
  return AIT_OK;
}

static ait_status sh_same(sctx *c) {
  set_out(c, in_pv(c, 0)->rank, in_pv(c, 0)->dims);
  return AIT_OK;
}

static ait_status norm_axis(sctx *c, int64_t a, int r, int *out) {
  if (a < -r || a >= r) return bad(c, "axis out of range");
  *out = (int)(a < 0 ? a + r : a);
  return AIT_OK;
}

static ait_status sh_reshape(sctx *c) {
  const xpv *x = in_pv(c, 0);
  const xop *op = c->op;
  int64_t out[2 * AIT_MAX_RANK];
  int r = 0;
  switch (op->sub) {
  case XR_RESHAPE: {
    int infer = -1;
    int64_t known = 1;
    if (op->n_spec > AIT_MAX_RANK) return bad(c, "the target shape has too many dims");
    for (int i = 0; i < op->n_spec; i++) {
      int64_t d = op->spec[i];
      if (d == 0 && !op->allowzero) {
        if (i >= x->rank) return bad(c, "a 0 in the shape past the input rank");
        d = x->dims[i];
      }
      if (d == -1) {
        if (infer >= 0) return bad(c, "two -1 in the shape");
        infer = i;
        d = 1;
      } else if (d < 0) {
        return bad(c, "a negative dim in the shape");
      }
      out[r++] = d;
      known *= d;
    }
    int64_t numel = ait_shape_numel(x->rank, x->dims);
    if (infer >= 0) {
      if (known == 0 || numel % known) return bad(c, "cannot infer the -1 dim");
      out[infer] = numel / known;
    }
    break;
  }
  case XR_FLATTEN: {
    int a = op->axis < 0 ? op->axis + x->rank : op->axis;
    if (a < 0 || a > x->rank) return bad(c, "axis out of range");
    out[0] = ait_shape_numel(a, x->dims);
    out[1] = ait_shape_numel(x->rank - a, x->dims + a);
    r = 2;
    break;
  }
  case XR_SQUEEZE: {
    bool drop[AIT_MAX_RANK] = {0};
    for (int i = 0; i < op->n_spec; i++) {
      int a = 0;
      AIT_TRY(norm_axis(c, op->spec[i], x->rank, &a));
      if (x->dims[a] != 1) return bad(c, "squeezing a dim that is not 1");
      drop[a] = true;
    }
    for (int i = 0; i < x->rank; i++)
      if (!(op->n_spec ? drop[i] : x->dims[i] == 1)) out[r++] = x->dims[i];
    break;
  }
  case XR_UNSQUEEZE: {
    int ro = x->rank + op->n_spec;
    bool ins[2 * AIT_MAX_RANK] = {0};
    if (ro > AIT_MAX_RANK) return bad(c, "the output rank is too large");
    for (int i = 0; i < op->n_spec; i++) {
      int a = 0;
      AIT_TRY(norm_axis(c, op->spec[i], ro, &a));
      if (ins[a]) return bad(c, "a repeated axis");
      ins[a] = true;
    }
    for (int i = 0, k = 0; i < ro; i++)
      out[r++] = ins[i] ? 1 : x->dims[k++];
    break;
  }
  default: return bad(c, "unknown reshape mode");
  }
  if (ait_shape_numel(r, out) != ait_shape_numel(x->rank, x->dims))
    return bad(c, "the element count changes");
  set_out(c, r, out);
  return AIT_OK;
}

static ait_status sh_pad(sctx *c) {
  const xpv *x = in_pv(c, 0);
  if (c->op->n_spec != 2 * x->rank) return bad(c, "pads do not match the input rank");
  int64_t out[AIT_MAX_RANK];
  for (int i = 0; i < x->rank; i++)
    out[i] = x->dims[i] + c->op->spec[i] + c->op->spec[x->rank + i];
  set_out(c, x->rank, out);
  return AIT_OK;
}

static ait_status sh_concat(sctx *c) {
  const xpv *x = in_pv(c, 0);
  int a = 0;
  AIT_TRY(norm_axis(c, c->op->axis, x->rank, &a));
  int64_t out[AIT_MAX_RANK];
  memcpy(out, x->dims, sizeof out);
  for (int j = 1; j < c->op->n_in; j++) {
    const xpv *y = in_pv(c, j);
    if (y->rank != x->rank) return bad(c, "inputs of different ranks");
    for (int i = 0; i < x->rank; i++)
      if (i != a && y->dims[i] != x->dims[i]) return bad(c, "inputs differ off the axis");
    out[a] += y->dims[a];
  }
  set_out(c, x->rank, out);
  return AIT_OK;
}

static ait_status shape_of(sctx *c) {
  for (int j = 0; j < c->op->n_in; j++)
    if (c->op->in[j] >= 0 && in_pv(c, j)->rank < 0) return bad(c, "an input has no shape");
  switch (c->op->kind) {
  case XK_CONV:
  case XK_DWCONV:
  case XK_DECONV: return sh_conv(c);
  case XK_FC: return sh_fc(c);
  case XK_MAXPOOL:
  case XK_AVGPOOL:
  case XK_GAP: return sh_pool(c);
  case XK_BINARY: return sh_binary(c);
  case XK_CLAMP:
  case XK_UNARY:
  case XK_PRELU:
  case XK_SOFTMAX: return sh_same(c);
  case XK_RESHAPE: return sh_reshape(c);
  case XK_PAD: return sh_pad(c);
  case XK_CONCAT: return sh_concat(c);
  default: return bad(c, "unknown xop");
  }
}

ait_status xnn_plan_shapes(const xnn_state *s, xplan *p, const ait_tensor *const *in) {
  const ait_graph *g = s->g;
  for (int i = 0; i < g->n_inputs; i++) {
    xpv *v = &p->pv[g->inputs[i]];
    v->rank = in[i]->rank;
    memcpy(v->dims, in[i]->dims, sizeof v->dims);
  }
  for (int v = 0; v < s->n_vals; v++)
    if (s->vals[v].cst >= 0) {
      const ait_tensor *t = s->consts[s->vals[v].cst].t;
      p->pv[v].rank = t->rank;
      memcpy(p->pv[v].dims, t->dims, sizeof t->dims);
    }
  for (int i = 0; i < s->n_ops; i++) {
    sctx c = {s, p, &s->ops[i]};
    AIT_TRY(shape_of(&c));
    const xpv *o = &p->pv[s->ops[i].out];
    for (int d = 0; d < o->rank; d++)
      if (o->dims[d] <= 0) return bad(&c, "an empty or negative output dim");
    if (o->rank > XNN_MAX_TENSOR_DIMS) return bad(&c, "more dims than XNNPACK takes (6)");
  }
  return AIT_OK;
}
