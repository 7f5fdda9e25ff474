/* Per input signature: which layout each value lives in, where layouts
 * change, how the program splits into XNNPACK runtimes, and the staging
 * buffers between them.
 *
 * Layouts: windowed ops (Conv, pools, PRelu) run channels last (NHWC, or
 * [N, L, C] for 1D windows); Gemm/MatMul/Reshape read ONNX order;
 * elementwise ops follow their operands. A value with one channel or one
 * spatial position has the same bytes in both layouts, so its conversion is
 * an XNNPACK reshape inside the runtime; any other conversion is a host
 * transpose, and whatever reads its result runs in a later segment. Graph
 * inputs and outputs are converted at the edges, outside the runtimes. */
#include <stdlib.h>
#include <string.h>

#include "backends/xnnpack/xnn_impl.h"

int xnn_pv_add(xplan *p, const xpv *v) {
  if (p->n_pv == p->cap_pv) {
    int nc = p->cap_pv ? 2 * p->cap_pv : 64;
    xpv *q = realloc(p->pv, (size_t)nc * sizeof *q);
    if (!q) {
      ait_err(AIT_E_NOMEM, "out of memory");
      return -1;
    }
    p->pv = q;
    p->cap_pv = nc;
  }
  p->pv[p->n_pv] = *v;
  return p->n_pv++;
}

ait_status xnn_plan_own(xplan *p, ait_tensor *t) {
  if (p->n_owned == p->cap_owned) {
    int nc = p->cap_owned ? 2 * p->cap_owned : 16;
    ait_tensor **q = realloc(p->owned, (size_t)nc * sizeof *q);
    if (!q) {
      ait_tensor_free(t);
      return ait_err(AIT_E_NOMEM, "out of memory");
    }
    p->owned = q;
    p->cap_owned = nc;
  }
  p->owned[p->n_owned++] = t;
  return AIT_OK;
}

int xnn_pv_dims(const xpv *v, size_t *dims) {
  if (v->layout == XL_NHWC) {
    dims[0] = (size_t)v->dims[0];
    for (int i = 2; i < v->rank; i++)
      dims[i - 1] = (size_t)v->dims[i];
    dims[v->rank - 1] = (size_t)v->dims[1];
    return v->rank;
  }
  for (int i = 0; i < v->rank; i++)
    dims[i] = (size_t)v->dims[i];
  if (v->rank == 0) {
    dims[0] = 1; /* XNNPACK's unary operators assert rank >= 1; [1] holds the same bytes */
    return 1;
  }
  return v->rank;
}

void xnn_plan_free(xplan *p) {
  if (!p) return;
  for (int k = 0; p->rt && k < p->n_segs; k++)
    if (p->rt[k]) xnn_delete_runtime(p->rt[k]);
  for (int i = 0; i < p->n_pv; i++)
    free(p->pv[i].buf);
  for (int i = 0; i < p->n_owned; i++)
    ait_tensor_free(p->owned[i]);
  free(p->owned);
  free(p->rt);
  free(p->op_seg);
  free(p->res);
  free(p->pv);
  free(p);
}

/* ---- layouts ------------------------------------------------------------------ */

/* Channels first and channels last hold the same bytes when there is one
 * channel or one spatial position. */
static bool same_bytes(int rank, const int64_t *d) {
  return d[1] == 1 || ait_shape_numel(rank - 2, d + 2) == 1;
}

/* x's dims right-aligned to `rank` (leading ones), as broadcasting reads them. */
static void align(const xpv *x, int rank, int64_t *dims) {
  for (int i = 0; i < rank; i++)
    dims[i] = 1;
  for (int i = 0; i < x->rank; i++)
    dims[rank - x->rank + i] = x->dims[i];
}

/* Constant v channels last at `rank` (aligned first). */
static int const_cl(xplan *p, int v, int rank) {
  const xpv *c = &p->pv[v];
  xpv nv = {.rank = rank, .layout = XL_NHWC, .src = -2 - v, .seg = -1, .cst = c->cst};
  align(c, rank, nv.dims);
  if (!same_bytes(rank, nv.dims)) {
    size_t sd[AIT_MAX_RANK];
    int64_t pd[AIT_MAX_RANK];
    xnn_pv_dims(&nv, sd);
    for (int i = 0; i < rank; i++)
      pd[i] = (int64_t)sd[i];
    ait_tensor *t = ait_tensor_new(AIT_FLOAT32, rank, pd);
    if (!t || xnn_plan_own(p, t)) return -1;
    xnn_transpose_cl(c->cst->data, t->data, rank, nv.dims, true);
    nv.cst = t;
  }
  return xnn_pv_add(p, &nv); /* src = -2 - v: a memo tag, never a conversion source */
}

/* The plan value holding v in layout `want` at `rank` (a conversion when
 * needed). A value of lower rank asked for channels last is aligned first;
 * only ONNX-order values are converted to channels last, and only
 * channels-last values of the same rank back. */
static int resolve(const xnn_state *s, xplan *p, int v, xlayout want, int rank) {
  const xpv *x = &p->pv[v];
  if (x->layout == want && x->rank == rank) return v;
  if (x->cst && want == XL_PLAIN) return v;
  int tag = x->cst ? -2 - v : v;
  for (int i = s->n_vals; i < p->n_pv; i++)
    if (p->pv[i].src == tag && p->pv[i].layout == want && p->pv[i].rank == rank) return i;
  if (x->cst) return const_cl(p, v, rank);
  xpv nv = {.rank = rank, .layout = want, .src = v, .seg = -1};
  align(x, rank, nv.dims);
  nv.host = !same_bytes(rank, nv.dims);
  return xnn_pv_add(p, &nv);
}

static bool is_cl_dyn(const xplan *p, int v) {
  return v >= 0 && !p->pv[v].cst && p->pv[v].layout == XL_NHWC;
}

/* Softmax over the channels of an NHWC value is XNNPACK's innermost softmax. */
static bool softmax_on_channels(const xop *op, const xpv *x) {
  if (x->rank != 4) return false;
  int a = op->axis < 0 ? op->axis + 4 : op->axis;
  if (a != 1) return false;
  return !op->sub || x->dims[2] * x->dims[3] == 1;
}

/* Elements after the softmax axis that ONNX order leaves inside each row
 * (opset >= 13 reduces one axis; older opsets everything from the axis on). */
static int64_t softmax_inner(const xop *op, const xpv *x) {
  int a = op->axis < 0 ? op->axis + x->rank : op->axis;
  return op->sub ? 1 : ait_shape_numel(x->rank - a - 1, x->dims + a + 1);
}

static ait_status layouts(const xnn_state *s, xplan *p) {
  for (int i = 0; i < s->n_ops; i++) {
    const xop *op = &s->ops[i];
    int32_t *r = &p->res[(size_t)i * XNN_MAX_IN];
    xlayout out = XL_PLAIN, want = XL_PLAIN;
    int rank = p->pv[op->out].rank; /* of channels-last operands */
    switch (op->kind) {
    case XK_CONV:
    case XK_DWCONV:
    case XK_DECONV:
    case XK_MAXPOOL:
    case XK_AVGPOOL:
    case XK_GAP:
    case XK_PRELU: want = out = XL_NHWC; break;
    case XK_CLAMP:
    case XK_UNARY:
    case XK_PAD: want = out = p->pv[op->in[0]].layout; break;
    case XK_BINARY:
    case XK_CONCAT: {
      /* channels last when a run-time operand is, and every such operand
       * has the output's rank (a rank change needs ONNX order) */
      bool cl = rank == 3 || rank == 4, any = false;
      for (int j = 0; j < op->n_in; j++) {
        const xpv *x = &p->pv[op->in[j]];
        any = any || is_cl_dyn(p, op->in[j]);
        if (is_cl_dyn(p, op->in[j]) && x->rank != rank) cl = false;
        if (op->kind == XK_CONCAT && !x->cst && x->rank != rank) cl = false;
      }
      want = out = cl && any ? XL_NHWC : XL_PLAIN;
      break;
    }
    case XK_SOFTMAX: {
      const xpv *x = &p->pv[op->in[0]];
      bool ch = softmax_on_channels(op, x);
      want = out = ch && (x->layout == XL_NHWC || softmax_inner(op, x) > 1) ? XL_NHWC : XL_PLAIN;
      break;
    }
    default: break; /* FC, RESHAPE: ONNX order */
    }
    for (int j = 0; j < op->n_in; j++) {
      if (op->in[j] < 0) continue;
      /* PRelu's slope is read as [C] by the define step */
      xlayout w = op->kind == XK_PRELU && j == 1 ? XL_PLAIN : want;
      r[j] = resolve(s, p, op->in[j], w, w == XL_NHWC ? rank : p->pv[op->in[j]].rank);
      if (r[j] < 0) return AIT_E_NOMEM;
    }
    p->pv[op->out].layout = out;
  }
  return AIT_OK;
}

/* ---- segments and buffers ------------------------------------------------------- */

static bool is_graph_input(const xnn_state *s, int v) {
  for (int i = 0; i < s->g->n_inputs; i++)
    if (s->g->inputs[i] == v) return true;
  return false;
}

/* The value whose bytes input slot r reads (the source of an in-runtime view). */
static int read_of(const xplan *p, int r) {
  const xpv *v = &p->pv[r];
  return v->src >= 0 && !v->host ? v->src : r;
}

static int avail_of(xplan *p, int r) {
  xpv *v = &p->pv[r];
  if (v->src >= 0 && v->host) {
    const xpv *src = &p->pv[v->src];
    v->avail = src->seg < 0 ? 0 : src->seg + 1;
    return v->avail;
  }
  return p->pv[read_of(p, r)].avail;
}

static ait_status segments(const xnn_state *s, xplan *p) {
  int last = 0;
  for (int i = 0; i < s->n_ops; i++) {
    const xop *op = &s->ops[i];
    int seg = 0;
    for (int j = 0; j < op->n_in; j++) {
      if (op->in[j] < 0) continue;
      int a = avail_of(p, p->res[(size_t)i * XNN_MAX_IN + j]);
      if (a > seg) seg = a;
    }
    p->op_seg[i] = seg;
    p->pv[op->out].seg = seg;
    p->pv[op->out].avail = seg;
    if (seg > last) last = seg;
  }
  p->n_segs = s->n_ops ? last + 1 : 0;
  for (int i = 0; i < s->n_ops; i++)
    for (int j = 0; j < s->ops[i].n_in; j++) {
      if (s->ops[i].in[j] < 0) continue;
      xpv *u = &p->pv[read_of(p, p->res[(size_t)i * XNN_MAX_IN + j])];
      if (!u->cst && u->seg != p->op_seg[i]) u->ext = true;
    }
  for (int i = s->n_vals; i < p->n_pv; i++)
    if (p->pv[i].src >= 0 && p->pv[i].host && !is_graph_input(s, p->pv[i].src))
      p->pv[p->pv[i].src].ext = true;
  for (int k = 0; k < s->g->n_outputs; k++) {
    int v = s->g->outputs[k];
    if (v < s->n_vals && s->vals[v].prod >= 0) p->pv[v].ext = true;
  }
  for (int i = 0; i < p->n_pv; i++) {
    xpv *v = &p->pv[i];
    if (!v->ext || v->cst) continue;
    size_t bytes = (size_t)ait_shape_numel(v->rank, v->dims) * sizeof(float) + XNN_EXTRA_BYTES;
    bytes = (bytes + 63) & ~(size_t)63;
    v->buf = aligned_alloc(64, bytes);
    if (!v->buf) return ait_err(AIT_E_NOMEM, "xnnpack: out of memory for a %zu-byte buffer", bytes);
    memset(v->buf, 0, bytes);
  }
  return AIT_OK;
}

ait_status xnn_plan_new(xnn_state *s, const ait_tensor *const *in, xplan **out) {
  xplan *p = calloc(1, sizeof *p);
  if (!p) return ait_err(AIT_E_NOMEM, "out of memory");
  p->res = malloc(((size_t)s->n_ops * XNN_MAX_IN + 1) * sizeof *p->res);
  p->op_seg = calloc((size_t)s->n_ops + 1, sizeof *p->op_seg);
  ait_status st = p->res && p->op_seg ? AIT_OK : ait_err(AIT_E_NOMEM, "out of memory");
  for (int v = 0; !st && v < s->n_vals; v++) {
    xpv nv = {.rank = -1, .src = -1, .seg = -1};
    if (s->vals[v].cst >= 0) nv.cst = s->consts[s->vals[v].cst].t;
    if (xnn_pv_add(p, &nv) < 0) st = AIT_E_NOMEM;
  }
  if (!st) st = xnn_plan_shapes(s, p, in);
  if (!st) st = layouts(s, p);
  if (!st) st = segments(s, p);
  if (!st && p->n_segs) {
    p->rt = calloc((size_t)p->n_segs, sizeof *p->rt);
    if (!p->rt) st = ait_err(AIT_E_NOMEM, "out of memory");
  }
  for (int k = 0; !st && k < p->n_segs; k++)
    st = xnn_define_segment(s, p, k);
  if (st) {
    xnn_plan_free(p);
    return st;
  }
  *out = p;
  return AIT_OK;
}
