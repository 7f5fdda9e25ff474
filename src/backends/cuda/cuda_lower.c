/* Lowering of shape and data-movement ops (views, Transpose, Slice, Expand,
 * Concat, Split, Gather, Cast, ConstantOfShape) and of normalisation and
 * pooling ops (Softmax, LayerNormalization, BatchNormalization, pooling) to
 * steps of the cuda backend. Output shapes come from the plan graph, where
 * they are concrete; attributes that depend on shapes (pads, slice starts)
 * are read from it or from values folded on the host. */
#ifdef AIT_HAVE_CUDA

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_impl.h"
#include "ir/passes/passes.h"

static int node_index(cu_planner *pl, const ait_node *n) { return (int)(n - pl->g->nodes); }

static int64_t prod(const int64_t *d, int from, int to) {
  int64_t p = 1;
  for (int k = from; k < to; k++)
    p *= d[k];
  return p;
}

/* ---- views and copies ------------------------------------------------------ */

ait_status cu_lower_view(cu_planner *pl, const ait_node *n) {
  int x;
  AIT_TRY(cu_in(pl, n->in[0], CU_PLAIN, &x));
  return cu_view(pl, n->out[0], x);
}

typedef struct copy_prm {
  cuk_copy k;
  int src, dst;
} copy_prm;

static ait_status copy_run(cu_state *s, cu_plan *p, cu_step *st) {
  copy_prm *c = st->prm;
  c->k.in = cu_ptr(p, c->src);
  c->k.out = cu_ptr(p, c->dst);
  return cu_check(cuk_strided_copy(s->stream, &c->k), st->what);
}

ait_status cu_emit_copy(cu_planner *pl, int node, const char *what, int src, int dst, int64_t base,
                        const int64_t *st) {
  const cu_tensor *D = &pl->p->t[dst];
  copy_prm *c = calloc(1, sizeof *c);
  if (!c) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
  c->k.esize = (int)ait_elem_size(D->dt);
  c->k.n = cu_numel(D);
  c->k.base = base;
  int r = 0;
  for (int k = 0; k < D->rank; k++) {
    if (D->dims[k] == 1) continue;
    if (r > 0 && c->k.st[r - 1] == st[k] * D->dims[k]) { /* merge with the outer dim */
      c->k.dims[r - 1] *= D->dims[k];
      c->k.st[r - 1] = st[k];
      continue;
    }
    c->k.dims[r] = D->dims[k];
    c->k.st[r] = st[k];
    r++;
  }
  if (r == 0) c->k.dims[r++] = 1;
  c->k.rank = r;
  c->src = src;
  c->dst = dst;
  cu_step *s;
  AIT_TRY(cu_step_add(pl, node, what, copy_run, c, &s));
  cu_step_use(s, src);
  cu_step_use(s, dst);
  return AIT_OK;
}

/* A Transpose [N, A, B] -> [N, B, A] next to 1-D convolutions under NHWC,
 * as a view (*done) where the bytes agree: of a convolution's channels-last
 * image [N, C, 1, L] as the plain [N, L, C] result; or, when only 1-D
 * convolutions (and the like) read the result [N, C, L], of the plain data
 * [N, L, C] as that result's image (wav2vec2's positional convolution sits
 * between two such Transposes; so does its feature extractor's end). */
static ait_status transpose_image(cu_planner *pl, const ait_node *n, bool *done) {
  *done = false;
  if (!pl->s->o.nhwc || !cu_transpose_021(pl->g, n)) return AIT_OK;
  const ait_value *yv = &pl->g->values[n->out[0]];
  int64_t yd[3];
  for (int k = 0; k < 3; k++)
    if ((yd[k] = yv->dims[k].v) < 0) return AIT_OK;
  int img = cu_conv1d_image(pl, n->in[0]), t;
  if (img >= 0) {
    const cu_tensor *I = &pl->p->t[img];
    if (I->dims[0] != yd[0] || I->dims[1] != yd[2] || I->dims[3] != yd[1]) return AIT_OK;
    AIT_TRY(cu_view_as(pl, img, 3, yd, CU_PLAIN, n->out[0], &t));
    *done = true;
    return AIT_OK;
  }
  if (!cu_conv1d_readers_only(pl, n->out[0])) return AIT_OK;
  int x;
  AIT_TRY(cu_in(pl, n->in[0], CU_PLAIN, &x));
  const cu_tensor *X = &pl->p->t[x];
  if (X->rank != 3 || X->dims[0] != yd[0] || X->dims[1] != yd[2] || X->dims[2] != yd[1])
    return AIT_OK;
  int64_t id[4] = {yd[0], yd[1], 1, yd[2]};
  AIT_TRY(cu_view_as(pl, x, 4, id, CU_NHWC, n->out[0], &t));
  *done = true;
  return AIT_OK;
}

/* The 4-D Transposes of channels-last code written for NCHW (ConvNeXt's
 * dwconv -> Transpose(0, 2, 3, 1) -> LayerNorm, Linear, Linear ->
 * Transpose(0, 3, 1, 2) -> layer scale, residual Add), as views (*done)
 * under NHWC: (0, 2, 3, 1) of a value held channels-last is its bytes as
 * the plain [N, H, W, C] result; (0, 3, 1, 2) of plain [N, H, W, C] is the
 * channels-last image of the [N, C, H, W] result (a reader that wants it
 * plain pays the one copy the Transpose was). At batch 32, convnext_tiny's
 * 46 Transposes took 1.78 ms of the H200's time, their layout steps more. */
static ait_status transpose_nhwc(cu_planner *pl, const ait_node *n, bool *done) {
  *done = false;
  if (!pl->s->o.nhwc || n->n_in < 1 || n->in[0] < 0 || n->n_out < 1 || n->out[0] < 0) return AIT_OK;
  const ait_value *xv = &pl->g->values[n->in[0]], *yv = &pl->g->values[n->out[0]];
  int cnt = 0;
  const int64_t *perm = ait_attr_ints(n, "perm", &cnt);
  if (xv->rank != 4 || yv->rank != 4 || cnt != 4 || perm[0] != 0) return AIT_OK;
  bool to_last = perm[1] == 2 && perm[2] == 3 && perm[3] == 1;
  bool to_first = perm[1] == 3 && perm[2] == 1 && perm[3] == 2;
  if (!to_last && !to_first) return AIT_OK;
  int64_t yd[4];
  for (int k = 0; k < 4; k++)
    if ((yd[k] = yv->dims[k].v) < 0) return AIT_OK;
  int t;
  if (to_last) {
    int img = pl->p->vt[CU_NHWC][n->in[0]];
    if (img < 0) return AIT_OK;
    const cu_tensor *I = &pl->p->t[img];
    if (I->rank != 4 || I->layout != CU_NHWC || I->dims[0] != yd[0] || I->dims[2] != yd[1] ||
        I->dims[3] != yd[2] || I->dims[1] != yd[3])
      return AIT_OK;
    AIT_TRY(cu_view_as(pl, img, 4, yd, CU_PLAIN, n->out[0], &t));
    *done = true;
    return AIT_OK;
  }
  int x;
  AIT_TRY(cu_in(pl, n->in[0], CU_PLAIN, &x));
  const cu_tensor *X = &pl->p->t[x];
  if (X->rank != 4 || X->layout != CU_PLAIN || X->dims[0] != yd[0] || X->dims[1] != yd[2] ||
      X->dims[2] != yd[3] || X->dims[3] != yd[1])
    return AIT_OK;
  AIT_TRY(cu_view_as(pl, x, 4, yd, CU_NHWC, n->out[0], &t));
  *done = true;
  return AIT_OK;
}

ait_status cu_lower_transpose(cu_planner *pl, const ait_node *n) {
  int x, y;
  bool done;
  AIT_TRY(transpose_image(pl, n, &done));
  if (done) return AIT_OK;
  AIT_TRY(transpose_nhwc(pl, n, &done));
  if (done) return AIT_OK;
  AIT_TRY(cu_in(pl, n->in[0], CU_PLAIN, &x));
  const cu_tensor *X = &pl->p->t[x];
  int cnt = 0, r = X->rank, last = -1;
  bool in_order = true; /* the axes of more than one element keep their order */
  const int64_t *perm = ait_attr_ints(n, "perm", &cnt);
  int64_t xs[AIT_MAX_RANK], st[AIT_MAX_RANK];
  cu_strides(X, xs);
  for (int k = 0; k < r; k++) {
    int64_t a = cnt == r ? perm[k] : r - 1 - k;
    if (a < 0) a += r;
    if (a < 0 || a >= r) return ait_err(AIT_E_INVALID_ARG, "cuda: bad Transpose perm");
    st[k] = xs[a];
    if (X->dims[a] == 1) continue;
    in_order = in_order && a > last;
    last = (int)a;
  }
  if (in_order) return cu_view(pl, n->out[0], x); /* [N, C, 1, 1] -> [N, 1, 1, C]: no copy */
  AIT_TRY(cu_out(pl, n->out[0], CU_PLAIN, &y));
  return cu_emit_copy(pl, node_index(pl, n), "Transpose", x, y, 0, st);
}

/* Integer vector from host value input k, or attribute `attr`. */
static ait_status ints_of(cu_planner *pl, const ait_node *n, int k, const char *attr, int64_t *v,
                          int *cnt, bool *given) {
  *given = false;
  *cnt = 0;
  if (n->opset < 10 && attr) {
    const int64_t *a = ait_attr_ints(n, attr, cnt);
    if (!a) return AIT_OK;
    if (*cnt > AIT_MAX_RANK) return ait_err(AIT_E_INVALID_ARG, "cuda: too many %s", attr);
    memcpy(v, a, sizeof(int64_t) * (size_t)*cnt);
    *given = true;
    return AIT_OK;
  }
  if (k >= n->n_in || n->in[k] < 0) return AIT_OK;
  const ait_tensor *t = cu_host_value(pl, n, k);
  if (!t)
    return ait_err(AIT_E_UNSUPPORTED, "cuda: input %d of %s is not known while planning", k,
                   n->op_type);
  AIT_TRY(ait_read_ints(t, v, AIT_MAX_RANK, cnt));
  *given = true;
  return AIT_OK;
}

ait_status cu_lower_slice(cu_planner *pl, const ait_node *n) {
  int x, y;
  AIT_TRY(cu_in(pl, n->in[0], CU_PLAIN, &x));
  const cu_tensor *X = &pl->p->t[x];
  int r = X->rank;
  int64_t starts[AIT_MAX_RANK], ends[AIT_MAX_RANK], axes[AIT_MAX_RANK], steps[AIT_MAX_RANK];
  int ns, ne, na, nst;
  bool gs, ge, ga, gst;
  AIT_TRY(ints_of(pl, n, 1, "starts", starts, &ns, &gs));
  AIT_TRY(ints_of(pl, n, 2, "ends", ends, &ne, &ge));
  AIT_TRY(ints_of(pl, n, 3, "axes", axes, &na, &ga));
  AIT_TRY(ints_of(pl, n, 4, NULL, steps, &nst, &gst));
  if (!gs || !ge || ns != ne || (ga && na != ns) || (gst && nst != ns))
    return ait_err(AIT_E_INVALID_ARG, "cuda: Slice starts/ends/axes/steps do not match");
  int64_t start[AIT_MAX_RANK], step[AIT_MAX_RANK];
  for (int k = 0; k < r; k++)
    start[k] = 0, step[k] = 1;
  for (int i = 0; i < ns; i++) {
    int64_t a = ga ? axes[i] : i;
    if (a < 0) a += r;
    if (a < 0 || a >= r) return ait_err(AIT_E_INVALID_ARG, "cuda: Slice axis out of range");
    int64_t d = X->dims[a], s = starts[i], sp = gst ? steps[i] : 1;
    if (sp == 0) return ait_err(AIT_E_INVALID_ARG, "cuda: Slice step 0");
    if (s < 0) s += d;
    if (sp > 0)
      s = s < 0 ? 0 : s > d ? d : s;
    else
      s = s < 0 ? 0 : s > d - 1 ? d - 1 : s;
    start[a] = s;
    step[a] = sp;
  }
  /* everything, in order (torchvision's Swin crops each window reverse to
   * the unpadded map, whole at 224x224: 24 of swin_t's 82 Slices): the same
   * bytes */
  const ait_value *ov = &pl->g->values[n->out[0]];
  bool whole = ov->rank == r;
  for (int k = 0; whole && k < r; k++)
    whole = start[k] == 0 && step[k] == 1 && ov->dims[k].v == X->dims[k];
  if (whole) return cu_view(pl, n->out[0], x);
  int64_t xs[AIT_MAX_RANK], st[AIT_MAX_RANK], base = 0;
  cu_strides(X, xs);
  for (int k = 0; k < r; k++) {
    base += start[k] * xs[k];
    st[k] = step[k] * xs[k];
  }
  AIT_TRY(cu_out(pl, n->out[0], CU_PLAIN, &y));
  if (pl->p->t[y].rank != r) return ait_err(AIT_E_SHAPE, "cuda: Slice output rank differs");
  return cu_emit_copy(pl, node_index(pl, n), "Slice", x, y, base, st);
}

ait_status cu_lower_expand(cu_planner *pl, const ait_node *n) {
  int x, y;
  AIT_TRY(cu_in(pl, n->in[0], CU_PLAIN, &x));
  AIT_TRY(cu_out(pl, n->out[0], CU_PLAIN, &y));
  const cu_tensor *X = &pl->p->t[x], *Y = &pl->p->t[y];
  int64_t xs[AIT_MAX_RANK], st[AIT_MAX_RANK];
  cu_strides(X, xs);
  for (int k = 0; k < Y->rank; k++) {
    int kx = k - (Y->rank - X->rank);
    st[k] = kx < 0 || X->dims[kx] == 1 ? 0 : xs[kx];
    if (kx >= 0 && X->dims[kx] != 1 && X->dims[kx] != Y->dims[k])
      return ait_err(AIT_E_SHAPE, "cuda: Expand dim %d: %lld to %lld", k, (long long)X->dims[kx],
                     (long long)Y->dims[k]);
  }
  return cu_emit_copy(pl, node_index(pl, n), "Expand", x, y, 0, st);
}

ait_status cu_lower_split(cu_planner *pl, const ait_node *n) {
  int x;
  AIT_TRY(cu_in(pl, n->in[0], CU_PLAIN, &x));
  int r = pl->p->t[x].rank, axis;
  AIT_TRY(ait_norm_axis(ait_attr_int(n, "axis", 0), r, &axis));
  int64_t xs[AIT_MAX_RANK];
  cu_strides(&pl->p->t[x], xs);
  int64_t at = 0;
  for (int k = 0; k < n->n_out; k++) {
    if (n->out[k] < 0) continue;
    const ait_value *ov = &pl->g->values[n->out[k]];
    if (ov->rank != r) return ait_err(AIT_E_SHAPE, "cuda: Split output rank differs");
    int64_t len = ov->dims[axis].v;
    if (!pl->g->values[n->out[k]].init) {
      int y;
      AIT_TRY(cu_out(pl, n->out[k], CU_PLAIN, &y));
      AIT_TRY(cu_emit_copy(pl, node_index(pl, n), "Split", x, y, at * xs[axis], xs));
    }
    at += len;
  }
  return AIT_OK;
}

typedef struct concat_prm {
  int dst, n;
  int src[64];
  int64_t col[64], width[64];
  int64_t height, pitch;
} concat_prm;

static ait_status concat_run(cu_state *s, cu_plan *p, cu_step *st) {
  concat_prm *c = st->prm;
  char *dst = cu_ptr(p, c->dst);
  for (int i = 0; i < c->n; i++) {
    cudaError_t e = c->height == 1 /* one block each: a plain copy (no pitch limit) */
                        ? cudaMemcpyAsync(dst + c->col[i], cu_ptr(p, c->src[i]),
                                          (size_t)c->width[i], cudaMemcpyDeviceToDevice, s->stream)
                        : cudaMemcpy2DAsync(dst + c->col[i], (size_t)c->pitch, cu_ptr(p, c->src[i]),
                                            (size_t)c->width[i], (size_t)c->width[i],
                                            (size_t)c->height, cudaMemcpyDeviceToDevice, s->stream);
    AIT_TRY(cu_check(e, "Concat"));
  }
  return AIT_OK;
}

/* A channel Concat of rank-4 values of which one lives in NHWC (a
 * convolution's output): concatenated in NHWC, where the channels are the
 * innermost axis, instead of converting every input to NCHW and the result
 * back (DenseNet: 62 such Concats, 5 of its 11 ms at batch 32 in layout
 * glue). */
static bool concat_nhwc(cu_planner *pl, const ait_node *n) {
  const ait_value *ov = &pl->g->values[n->out[0]];
  int axis;
  if (ov->rank != 4 || ait_norm_axis(ait_attr_int(n, "axis", 0), 4, &axis) || axis != 1) {
    ait_err_clear();
    return false;
  }
  for (int i = 0; i < n->n_in; i++) {
    int v = n->in[i];
    if (v >= 0 && pl->p->vt[CU_NHWC][v] >= 0 && pl->p->vt[CU_PLAIN][v] < 0) return true;
  }
  return false;
}

ait_status cu_lower_concat(cu_planner *pl, const ait_node *n) {
  int y;
  cu_layout lay = concat_nhwc(pl, n) ? CU_NHWC : CU_PLAIN;
  AIT_TRY(cu_out(pl, n->out[0], lay, &y));
  const cu_tensor *Y = &pl->p->t[y];
  int axis;
  AIT_TRY(ait_norm_axis(ait_attr_int(n, "axis", 0), Y->rank, &axis));
  if (n->n_in > 64) return ait_err(AIT_E_UNSUPPORTED, "cuda: Concat of more than 64 inputs");
  concat_prm *c = calloc(1, sizeof *c);
  if (!c) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
  int64_t es = (int64_t)ait_elem_size(Y->dt), inner = prod(Y->dims, axis + 1, Y->rank) * es;
  c->dst = y;
  c->height = prod(Y->dims, 0, axis);
  if (lay == CU_NHWC) { /* rows of N * H * W pixels, each input's channels side by side */
    inner = es;
    c->height = Y->dims[0] * Y->dims[2] * Y->dims[3];
  }
  c->pitch = Y->dims[axis] * inner;
  int64_t col = 0;
  ait_status st = AIT_OK;
  for (int i = 0; i < n->n_in && !st; i++) {
    if (n->in[i] < 0) continue;
    int x;
    st = cu_in(pl, n->in[i], lay, &x);
    if (st) break;
    const cu_tensor *X = &pl->p->t[x];
    Y = &pl->p->t[y]; /* cu_in may have grown the tensor array */
    if (X->dt != Y->dt || X->rank != Y->rank || X->layout != lay) {
      st = ait_err(AIT_E_SHAPE, "cuda: Concat input %d does not match the output", i);
      break;
    }
    int64_t w = X->dims[axis] * inner;
    if (w > 0 && c->height > 0) {
      c->src[c->n] = x;
      c->col[c->n] = col;
      c->width[c->n] = w;
      c->n++;
    }
    col += w;
  }
  if (!st && col != c->pitch)
    st = ait_err(AIT_E_SHAPE, "cuda: Concat inputs do not fill the output");
  if (st) {
    free(c);
    return st;
  }
  cu_step *s;
  AIT_TRY(cu_step_add(pl, node_index(pl, n), "Concat", concat_run, c, &s));
  cu_step_use(s, y);
  for (int i = 0; i < c->n; i++)
    cu_step_use(s, c->src[i]);
  return AIT_OK;
}

/* ---- Gather, Cast, fill ---------------------------------------------------- */

typedef struct gather_prm {
  int data, idx, out;
  int esize, idx_dt;
  int64_t outer, axis_len, n_idx, inner;
} gather_prm;

static ait_status gather_run(cu_state *s, cu_plan *p, cu_step *st) {
  gather_prm *g = st->prm;
  return cu_check(cuk_gather(s->stream, g->esize, cu_ptr(p, g->data), cu_ptr(p, g->idx), g->idx_dt,
                             cu_ptr(p, g->out), g->outer, g->axis_len, g->n_idx, g->inner,
                             s->d_err),
                  "Gather");
}

/* Gather of one constant index along an axis with nothing but 1s before
 * it: a contiguous part of the data, taken as a view (*done) where it starts
 * on the arena's alignment, as every kernel's vector loads want. Swin's and
 * nn.MultiheadAttention's Q, K and V are three such parts of one qkv tensor
 * (swin_t: 36 Gathers, 0.33 ms at batch 32 in Round 9). */
static ait_status gather_part(cu_planner *pl, const ait_node *n, int d, bool *done) {
  *done = false;
  const cu_tensor *D = &pl->p->t[d];
  const ait_tensor *it = cu_host_value(pl, n, 1);
  int axis;
  if (!it || it->rank != 0 || (it->dtype != AIT_INT64 && it->dtype != AIT_INT32) ||
      D->layout != CU_PLAIN || ait_norm_axis(ait_attr_int(n, "axis", 0), D->rank, &axis)) {
    ait_err_clear();
    return AIT_OK;
  }
  if (prod(D->dims, 0, axis) != 1) return AIT_OK;
  int64_t idx = it->dtype == AIT_INT64 ? *(const int64_t *)it->data : *(const int32_t *)it->data;
  if (idx < 0) idx += D->dims[axis];
  if (idx < 0 || idx >= D->dims[axis]) return AIT_OK; /* the kernel flags it */
  int64_t off = idx * prod(D->dims, axis + 1, D->rank) * (int64_t)ait_elem_size(D->dt);
  if (off % 256) return AIT_OK;
  AIT_TRY(cu_view_part(pl, n->out[0], d, off));
  *done = true;
  return AIT_OK;
}

ait_status cu_lower_gather(cu_planner *pl, const ait_node *n) {
  int d, i, y;
  AIT_TRY(cu_in(pl, n->in[0], CU_PLAIN, &d));
  bool done;
  AIT_TRY(gather_part(pl, n, d, &done));
  if (done) return AIT_OK;
  AIT_TRY(cu_in(pl, n->in[1], CU_PLAIN, &i));
  AIT_TRY(cu_out(pl, n->out[0], CU_PLAIN, &y));
  const cu_tensor *D = &pl->p->t[d], *I = &pl->p->t[i];
  int axis;
  AIT_TRY(ait_norm_axis(ait_attr_int(n, "axis", 0), D->rank, &axis));
  if (I->dt != AIT_INT64 && I->dt != AIT_INT32)
    return ait_err(AIT_E_DTYPE, "cuda: Gather indices must be int32 or int64");
  gather_prm *g = calloc(1, sizeof *g);
  if (!g) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
  g->data = d;
  g->idx = i;
  g->out = y;
  g->esize = (int)ait_elem_size(D->dt);
  g->idx_dt = I->dt;
  g->outer = prod(D->dims, 0, axis);
  g->axis_len = D->dims[axis];
  g->inner = prod(D->dims, axis + 1, D->rank);
  g->n_idx = cu_numel(I);
  if (g->outer * g->n_idx * g->inner != cu_numel(&pl->p->t[y])) {
    free(g);
    return ait_err(AIT_E_SHAPE, "cuda: Gather output size does not match");
  }
  cu_step *s;
  AIT_TRY(cu_step_add(pl, node_index(pl, n), "Gather", gather_run, g, &s));
  cu_step_use(s, d);
  cu_step_use(s, i);
  cu_step_use(s, y);
  return AIT_OK;
}

ait_status cu_lower_cast(cu_planner *pl, const ait_node *n) {
  int x, y;
  AIT_TRY(cu_in_any(pl, n->in[0], &x));
  const ait_value *ov = &pl->g->values[n->out[0]];
  if (pl->p->t[x].layout == CU_PLAIN && pl->p->t[x].dt == cu_store_type(pl->s, ov->dtype))
    return cu_view(pl, n->out[0], x);
  AIT_TRY(cu_out(pl, n->out[0], pl->p->t[x].layout, &y));
  int in[1] = {x};
  return cu_emit_eltwise(pl, node_index(pl, n), "Cast", CUK_COPY, NULL, in, 1, y, CUK_COPY, NULL,
                         1.0f);
}

typedef struct fill_prm {
  int y;
  double v;
} fill_prm;

static ait_status fill_run(cu_state *s, cu_plan *p, cu_step *st) {
  fill_prm *f = st->prm;
  const cu_tensor *Y = &p->t[f->y];
  return cu_check(cuk_fill(s->stream, Y->dt, Y->ptr, cu_numel(Y), f->v), "ConstantOfShape");
}

ait_status cu_lower_fill(cu_planner *pl, const ait_node *n) {
  int y;
  AIT_TRY(cu_out(pl, n->out[0], CU_PLAIN, &y));
  fill_prm *f = calloc(1, sizeof *f);
  if (!f) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
  f->y = y;
  const ait_tensor *v = ait_attr_tensor(n, "value");
  f->v = v && ait_tensor_numel(v) == 1 ? ait_scalar_f64(v) : 0.0;
  cu_step *s;
  AIT_TRY(cu_step_add(pl, node_index(pl, n), "ConstantOfShape", fill_run, f, &s));
  cu_step_use(s, y);
  return AIT_OK;
}

/* ---- Softmax, LayerNormalization, BatchNormalization ------------------------ */

typedef struct rows_prm {
  int x, y, res, sum;
  int part; /* LayerNorm, dtype=fp8: absmax partials for the GEMM reading y (-1: none) */
  int64_t outer, len, inner;
  int log;
  const float *gamma, *beta;
  float eps;
} rows_prm;

static ait_status softmax_run(cu_state *s, cu_plan *p, cu_step *st) {
  rows_prm *r = st->prm;
  return cu_check(cuk_softmax(s->stream, p->t[r->x].dt, cu_ptr(p, r->x), cu_ptr(p, r->y), r->outer,
                              r->len, r->inner, r->log),
                  st->what);
}

ait_status cu_lower_softmax(cu_planner *pl, const ait_node *n) {
  int x, y;
  AIT_TRY(cu_in(pl, n->in[0], CU_PLAIN, &x));
  AIT_TRY(cu_out(pl, n->out[0], CU_PLAIN, &y));
  const cu_tensor *X = &pl->p->t[x];
  int axis;
  AIT_TRY(ait_norm_axis(ait_attr_int(n, "axis", n->opset < 13 ? 1 : -1), X->rank, &axis));
  rows_prm *r = calloc(1, sizeof *r);
  if (!r) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
  r->x = x;
  r->y = y;
  r->log = !strcmp(n->op_type, "LogSoftmax");
  r->outer = prod(X->dims, 0, axis);
  if (n->opset < 13) {
    r->len = prod(X->dims, axis, X->rank);
    r->inner = 1;
  } else {
    r->len = X->dims[axis];
    r->inner = prod(X->dims, axis + 1, X->rank);
  }
  cu_step *s;
  AIT_TRY(cu_step_add(pl, node_index(pl, n), n->op_type, softmax_run, r, &s));
  cu_step_use(s, x);
  cu_step_use(s, y);
  return AIT_OK;
}

static ait_status ln_run(cu_state *s, cu_plan *p, cu_step *st) {
  rows_prm *r = st->prm;
  return cu_check(cuk_layernorm(s->stream, p->t[r->x].dt, cu_ptr(p, r->x),
                                r->res >= 0 ? cu_ptr(p, r->res) : NULL,
                                r->sum >= 0 ? cu_ptr(p, r->sum) : NULL, cu_ptr(p, r->y), r->outer,
                                r->len, r->gamma, r->beta, r->eps,
                                r->part >= 0 ? (float *)cu_ptr(p, r->part) + 8 : NULL),
                  "LayerNormalization");
}

int cu_layernorm_amax(cu_planner *pl, int y, int sc) {
  cu_plan *p = pl->p;
  for (int i = p->n_steps - 1; i >= 0; i--) {
    rows_prm *r = p->steps[i].run == ln_run ? p->steps[i].prm : NULL;
    if (!r || r->y != y) continue;
    int parts = r->part < 0 ? cuk_layernorm_parts(p->t[y].dt, r->outer, r->len) : 0;
    if (parts <= 0) return 0;
    r->part = sc;
    cu_step_use(&p->steps[i], sc); /* sc lives from here to the GEMM */
    return parts;
  }
  return 0;
}

ait_status cu_lower_layernorm(cu_planner *pl, const ait_node *n) {
  int x, y;
  AIT_TRY(cu_in(pl, n->in[0], CU_PLAIN, &x));
  AIT_TRY(cu_out(pl, n->out[0], CU_PLAIN, &y));
  const cu_tensor *X = &pl->p->t[x];
  int axis;
  AIT_TRY(ait_norm_axis(ait_attr_int(n, "axis", -1), X->rank, &axis));
  rows_prm *r = calloc(1, sizeof *r);
  if (!r) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
  r->x = x;
  r->y = y;
  r->res = r->sum = r->part = -1;
  r->outer = prod(X->dims, 0, axis);
  r->len = prod(X->dims, axis, X->rank);
  r->eps = ait_attr_float(n, "epsilon", 1e-5f);
  ait_status st = AIT_OK;
  for (int k = 1; k <= 2 && !st; k++) {
    const ait_tensor *w = cu_host_value(pl, n, k);
    if (k == 2 && (n->n_in < 3 || n->in[2] < 0)) break;
    if (!w || ait_tensor_numel(w) != r->len) {
      st = ait_err(AIT_E_UNSUPPORTED,
                   "cuda: LayerNormalization %s must be a constant of %lld values",
                   k == 1 ? "scale" : "bias", (long long)r->len);
      break;
    }
    void *ptr;
    st = cu_const_weight(pl, n->in[k], CU_W_F32, &ptr);
    if (k == 1)
      r->gamma = ptr;
    else
      r->beta = ptr;
  }
  if (st) {
    free(r);
    return st;
  }
  cu_step *s;
  AIT_TRY(cu_step_add(pl, node_index(pl, n), "LayerNormalization", ln_run, r, &s));
  cu_step_use(s, x);
  cu_step_use(s, y);
  return AIT_OK;
}

/* The Relu that alone reads value v (not a graph output) and no other
 * role claims, or -1. */
static int sole_relu(const cu_planner *pl, int v) {
  const ait_graph *g = pl->g;
  int r = -1;
  for (int k = 0; k < g->n_outputs; k++)
    if (g->outputs[k] == v) return -1;
  for (int i = 0; i < g->n_nodes; i++) {
    const ait_node *n = &g->nodes[i];
    for (int a = 0; a < n->n_attrs; a++)
      if (n->attrs[a].type == AIT_ATTR_GRAPH) return -1; /* a body may read v */
    for (int k = 0; k < n->n_in; k++)
      if (n->in[k] == v) {
        if (r >= 0) return -1;
        r = i;
      }
  }
  if (r < 0 || !ait_is_op_in(&g->nodes[r], "", "Relu") || pl->role[r] != CU_ROLE_NONE ||
      g->nodes[r].n_out < 1 || g->nodes[r].out[0] < 0)
    return -1;
  return r;
}

/* BatchNormalization as a per-channel affine step; with the Relu after it
 * (DenseNet's pre-activations: 62 BatchNorm and 62 Relu passes over the
 * concatenated features) in the same pass. */
ait_status cu_lower_batchnorm(cu_planner *pl, const ait_node *n) {
  int x, y, relu = sole_relu(pl, n->out[0]);
  ait_act act = {.kind = AIT_ACT_RELU};
  AIT_TRY(cu_in_any(pl, n->in[0], &x));
  if (relu >= 0) pl->role[relu] = CU_ROLE_SKIP;
  AIT_TRY(cu_out(pl, relu >= 0 ? pl->g->nodes[relu].out[0] : n->out[0], pl->p->t[x].layout, &y));
  int64_t C = pl->p->t[x].dims[1];
  const ait_tensor *w[4];
  for (int k = 0; k < 4; k++) {
    w[k] = cu_host_value(pl, n, k + 1);
    if (!w[k] || ait_tensor_numel(w[k]) != C)
      return ait_err(AIT_E_UNSUPPORTED,
                     "cuda: BatchNormalization input %d must be a constant of "
                     "%lld values",
                     k + 1, (long long)C);
  }
  float *ab = malloc(sizeof(float) * (size_t)(2 * C + 1));
  if (!ab) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
  double eps = ait_attr_float(n, "epsilon", 1e-5f);
  for (int64_t c = 0; c < C; c++) {
    const ait_dtype_traits *tr[4];
    double v[4];
    for (int k = 0; k < 4; k++) {
      tr[k] = ait_dtype_traits_of(w[k]->dtype);
      v[k] = tr[k] ? ait_load_f64(tr[k], w[k]->data, c) : 0.0;
    }
    double a = v[0] / sqrt(v[3] + eps);
    ab[c] = (float)a;
    ab[C + c] = (float)(v[1] - v[2] * a);
  }
  int ta, tb;
  ait_status st = cu_const_raw(pl, AIT_FLOAT32, 1, &C, ab, &ta);
  if (!st) st = cu_const_raw(pl, AIT_FLOAT32, 1, &C, ab + C, &tb);
  free(ab);
  AIT_TRY(st);
  return cu_emit_epilogue(pl, node_index(pl, n), "BatchNormalization", x, y, 1, ta, tb, -1,
                          relu >= 0 ? &act : NULL);
}

/* ---- pooling ---------------------------------------------------------------- */

typedef struct pool_prm {
  cuk_pool k;
  int x, y;
} pool_prm;

static ait_status pool_run(cu_state *s, cu_plan *p, cu_step *st) {
  pool_prm *q = st->prm;
  q->k.x = cu_ptr(p, q->x);
  q->k.y = cu_ptr(p, q->y);
  return cu_check(cuk_pool2d(s->stream, &q->k), st->what);
}

static int64_t attr_at(const ait_node *n, const char *name, int k, int64_t def) {
  int cnt = 0;
  const int64_t *v = ait_attr_ints(n, name, &cnt);
  return v && k < cnt ? v[k] : def;
}

ait_status cu_lower_pool(cu_planner *pl, const ait_node *n) {
  int x, y;
  AIT_TRY(cu_in_any(pl, n->in[0], &x));
  const cu_tensor *X = &pl->p->t[x];
  if (X->rank != 4) return ait_err(AIT_E_UNSUPPORTED, "cuda: only 2-D pooling");
  AIT_TRY(cu_out(pl, n->out[0], X->layout, &y));
  X = &pl->p->t[x];
  const cu_tensor *Y = &pl->p->t[y];
  pool_prm *q = calloc(1, sizeof *q);
  if (!q) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
  cuk_pool *k = &q->k;
  k->dt = X->dt;
  k->nhwc = X->layout == CU_NHWC;
  bool max = !strcmp(n->op_type, "MaxPool");
  k->mode = max ? 0 : ait_attr_int(n, "count_include_pad", 0) ? 1 : 2;
  k->N = X->dims[0];
  k->C = X->dims[1];
  k->H = X->dims[2];
  k->W = X->dims[3];
  k->OH = Y->dims[2];
  k->OW = Y->dims[3];
  k->kh = (int)attr_at(n, "kernel_shape", 0, 1);
  k->kw = (int)attr_at(n, "kernel_shape", 1, 1);
  k->sh = (int)attr_at(n, "strides", 0, 1);
  k->sw = (int)attr_at(n, "strides", 1, 1);
  k->dh = (int)attr_at(n, "dilations", 0, 1);
  k->dw = (int)attr_at(n, "dilations", 1, 1);
  const char *ap = ait_attr_str(n, "auto_pad", "NOTSET");
  if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
    int64_t th = (k->OH - 1) * k->sh + (int64_t)(k->kh - 1) * k->dh + 1 - k->H;
    int64_t tw = (k->OW - 1) * k->sw + (int64_t)(k->kw - 1) * k->dw + 1 - k->W;
    th = th < 0 ? 0 : th;
    tw = tw < 0 ? 0 : tw;
    bool upper = !strcmp(ap, "SAME_UPPER");
    k->ph = (int)(upper ? th / 2 : th - th / 2);
    k->pw = (int)(upper ? tw / 2 : tw - tw / 2);
    k->ph_end = (int)(th - k->ph);
    k->pw_end = (int)(tw - k->pw);
  } else if (strcmp(ap, "VALID")) {
    k->ph = (int)attr_at(n, "pads", 0, 0);
    k->pw = (int)attr_at(n, "pads", 1, 0);
    k->ph_end = (int)attr_at(n, "pads", 2, 0);
    k->pw_end = (int)attr_at(n, "pads", 3, 0);
  }
  q->x = x;
  q->y = y;
  cu_step *s;
  AIT_TRY(cu_step_add(pl, node_index(pl, n), n->op_type, pool_run, q, &s));
  cu_step_use(s, x);
  cu_step_use(s, y);
  return AIT_OK;
}

typedef struct gpool_prm {
  int x, y, nhwc, max;
  int64_t N, C, HW;
} gpool_prm;

static ait_status gpool_run(cu_state *s, cu_plan *p, cu_step *st) {
  gpool_prm *q = st->prm;
  return cu_check(cuk_global_pool(s->stream, p->t[q->x].dt, q->nhwc, q->max, cu_ptr(p, q->x),
                                  cu_ptr(p, q->y), q->N, q->C, q->HW, s->n_sm, s->ws,
                                  s->o.ws_bytes),
                  st->what);
}

ait_status cu_lower_global_pool(cu_planner *pl, const ait_node *n) {
  int x, y;
  AIT_TRY(cu_in_any(pl, n->in[0], &x));
  AIT_TRY(cu_out(pl, n->out[0], CU_PLAIN, &y));
  const cu_tensor *X = &pl->p->t[x];
  if (X->rank < 3) return ait_err(AIT_E_UNSUPPORTED, "cuda: global pooling needs rank >= 3");
  gpool_prm *q = calloc(1, sizeof *q);
  if (!q) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
  q->x = x;
  q->y = y;
  q->nhwc = X->layout == CU_NHWC;
  q->max = !strcmp(n->op_type, "GlobalMaxPool");
  q->N = X->dims[0];
  q->C = X->dims[1];
  q->HW = prod(X->dims, 2, X->rank);
  cu_step *s;
  AIT_TRY(cu_step_add(pl, node_index(pl, n), n->op_type, gpool_run, q, &s));
  cu_step_use(s, x);
  cu_step_use(s, y);
  return AIT_OK;
}

#endif
