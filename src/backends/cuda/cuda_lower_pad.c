/* Lowering of Pad, Resize and InstanceNormalization (kernels in
 * cuda_pad.cu): what swin_t, deeplabv3 and wav2vec2 partitioned to native
 * before (docs/benchmarks-gpu.md, Round 8). Their operands other than the
 * data are known while planning (cuda_ops.c checks); shapes come from the
 * plan graph, concrete. Tensors are read and written in the plain layout. */
#ifdef AIT_HAVE_CUDA

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_impl.h"

static int node_index(cu_planner *pl, const ait_node *n) { return (int)(n - pl->g->nodes); }

static bool has_in(const ait_node *n, int k) { return k < n->n_in && n->in[k] >= 0; }

/* ---- Pad --------------------------------------------------------------------- */

typedef struct pad_prm {
  cuk_pad k;
  int x, y;
} pad_prm;

static ait_status pad_run(cu_state *s, cu_plan *p, cu_step *st) {
  pad_prm *d = st->prm;
  d->k.in = cu_ptr(p, d->x);
  d->k.out = cu_ptr(p, d->y);
  return cu_check(cuk_pad_run(s->stream, &d->k), "Pad");
}

int cu_pad_mode(const char *mode) {
  static const char *const modes[] = {"constant", "reflect", "edge", "wrap", NULL};
  for (int i = 0; modes[i]; i++)
    if (!strcmp(mode, modes[i])) return i;
  return -1;
}

ait_status cu_lower_pad(cu_planner *pl, const ait_node *n) {
  int x, y;
  AIT_TRY(cu_in(pl, n->in[0], CU_PLAIN, &x));
  int r = pl->p->t[x].rank, mode = cu_pad_mode(ait_attr_str(n, "mode", "constant"));
  if (mode < 0 || (mode == 3 && n->opset < 19))
    return ait_err(AIT_E_UNSUPPORTED, "cuda: Pad mode '%s'", ait_attr_str(n, "mode", "constant"));
  if (r < 1 || r > CUK_MAX_DIMS || pl->g->values[n->out[0]].rank != r)
    return ait_err(AIT_E_UNSUPPORTED, "cuda: Pad of a rank-%d tensor", r);
  int64_t pads[2 * AIT_MAX_RANK], axes[AIT_MAX_RANK];
  int np = 0, na = r;
  double cv = 0.0;
  const ait_tensor *cvt = NULL;
  if (n->opset < 11) {
    const int64_t *a = ait_attr_ints(n, "pads", &np);
    if (!a || np > 2 * AIT_MAX_RANK) return ait_err(AIT_E_INVALID_ARG, "cuda: Pad pads");
    memcpy(pads, a, sizeof(int64_t) * (size_t)np);
    cv = ait_attr_float(n, "value", 0.0f);
  } else {
    const ait_tensor *pt = cu_host_value(pl, n, 1);
    if (!pt) return ait_err(AIT_E_UNSUPPORTED, "cuda: Pad pads are not known while planning");
    AIT_TRY(ait_read_ints(pt, pads, 2 * AIT_MAX_RANK, &np));
    if (has_in(n, 2)) {
      cvt = cu_host_value(pl, n, 2);
      if (!cvt)
        return ait_err(AIT_E_UNSUPPORTED, "cuda: Pad constant_value is not known while planning");
      if (ait_tensor_numel(cvt) == 0) cvt = NULL;
    }
    if (has_in(n, 3)) {
      const ait_tensor *at = cu_host_value(pl, n, 3);
      if (!at) return ait_err(AIT_E_UNSUPPORTED, "cuda: Pad axes are not known while planning");
      AIT_TRY(ait_read_ints(at, axes, AIT_MAX_RANK, &na));
    }
  }
  if (np != 2 * na) return ait_err(AIT_E_SHAPE, "cuda: Pad has %d pads for %d axes", np, na);
  /* no padding at all (torchvision's Swin pads every window partition, by 0
   * where the map is a multiple of the window: 15 copies of swin_t's
   * largest tensors, 0.73 ms at batch 32 in Round 9): the same bytes */
  bool none = true;
  for (int i = 0; i < np; i++)
    none = none && pads[i] == 0;
  if (none) return cu_view(pl, n->out[0], x);
  AIT_TRY(cu_out(pl, n->out[0], CU_PLAIN, &y));
  const cu_tensor *X = &pl->p->t[x], *Y = &pl->p->t[y];
  pad_prm *d = calloc(1, sizeof *d);
  if (!d) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
  cuk_pad *k = &d->k;
  for (int i = 0; i < na; i++) {
    int ax = i;
    if (has_in(n, 3) && n->opset >= 18) {
      int a;
      ait_status st = ait_norm_axis(axes[i], r, &a);
      if (st) {
        free(d);
        return st;
      }
      ax = a;
    }
    k->begin[ax] = pads[i];
  }
  for (int i = 0; i < r; i++) {
    k->idims[i] = X->dims[i];
    k->odims[i] = Y->dims[i];
  }
  k->esize = (int)ait_elem_size(X->dt);
  k->rank = r;
  k->mode = mode;
  k->n = cu_numel(Y);
  /* the constant in the storage type's bytes */
  unsigned long long bits = 0;
  ait_status st = AIT_OK;
  if (cvt) {
    st = cu_host_convert(cvt->dtype, cvt->data, X->dt, &bits, 1);
  } else {
    float f = (float)cv;
    st = cu_host_convert(AIT_FLOAT32, &f, X->dt, &bits, 1);
  }
  k->cval = bits;
  d->x = x;
  d->y = y;
  if (st) {
    free(d);
    return st;
  }
  cu_step *s;
  AIT_TRY(cu_step_add(pl, node_index(pl, n), "Pad", pad_run, d, &s));
  cu_step_use(s, x);
  cu_step_use(s, y);
  return AIT_OK;
}

/* ---- Resize ------------------------------------------------------------------- */

typedef struct resize_prm {
  cuk_resize k;
  int x, y;
} resize_prm;

static ait_status resize_run(cu_state *s, cu_plan *p, cu_step *st) {
  resize_prm *d = st->prm;
  d->k.x = cu_ptr(p, d->x);
  d->k.y = cu_ptr(p, d->y);
  return cu_check(cuk_resize_run(s->stream, &d->k), "Resize");
}

int cu_resize_coord(const char *ct) {
  static const char *const cts[] = {"half_pixel", "pytorch_half_pixel", "align_corners",
                                    "asymmetric", NULL};
  for (int i = 0; cts[i]; i++)
    if (!strcmp(ct, cts[i])) return i;
  return -1;
}

int cu_resize_nearest(const char *nm) {
  static const char *const nms[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil",
                                    NULL};
  for (int i = 0; nms[i]; i++)
    if (!strcmp(nm, nms[i])) return i;
  return -1;
}

ait_status cu_lower_resize(cu_planner *pl, const ait_node *n) {
  int x, y;
  AIT_TRY(cu_in(pl, n->in[0], CU_PLAIN, &x));
  AIT_TRY(cu_out(pl, n->out[0], CU_PLAIN, &y));
  const cu_tensor *X = &pl->p->t[x], *Y = &pl->p->t[y];
  int r = X->rank;
  if (r < 2 || Y->rank != r)
    return ait_err(AIT_E_UNSUPPORTED, "cuda: Resize of a rank-%d tensor", r);
  for (int k = 0; k < r - 2; k++)
    if (X->dims[k] != Y->dims[k])
      return ait_err(AIT_E_UNSUPPORTED, "cuda: Resize of axis %d (only the last two)", k);
  const char *mode = ait_attr_str(n, "mode", "nearest");
  int coord = cu_resize_coord(ait_attr_str(n, "coordinate_transformation_mode", "half_pixel"));
  int nearest = cu_resize_nearest(ait_attr_str(n, "nearest_mode", "round_prefer_floor"));
  if (n->opset < 11)
    return ait_err(AIT_E_UNSUPPORTED, "cuda: Resize before opset 11 (cuda_ops.c refuses it)");
  if (coord < 0 || nearest < 0 || (strcmp(mode, "nearest") && strcmp(mode, "linear")))
    return ait_err(AIT_E_UNSUPPORTED, "cuda: Resize mode or coordinate transformation");
  const ait_tensor *scales = cu_host_value(pl, n, 2);
  if (scales && ait_tensor_numel(scales) == 0) scales = NULL;
  double sc[2] = {0, 0};
  if (scales) {
    const ait_dtype_traits *tr = ait_dtype_traits_of(scales->dtype);
    if (!tr || !tr->is_float || ait_tensor_numel(scales) != r)
      return ait_err(AIT_E_UNSUPPORTED, "cuda: Resize scales of %lld values for rank %d",
                     (long long)ait_tensor_numel(scales), r);
    for (int k = 0; k < r - 2; k++)
      if (ait_load_f64(tr, scales->data, k) != 1.0)
        return ait_err(AIT_E_UNSUPPORTED, "cuda: Resize of axis %d (only the last two)", k);
    sc[0] = ait_load_f64(tr, scales->data, r - 2);
    sc[1] = ait_load_f64(tr, scales->data, r - 1);
  }
  resize_prm *d = calloc(1, sizeof *d);
  if (!d) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
  cuk_resize *k = &d->k;
  k->dt = X->dt;
  k->mode = strcmp(mode, "nearest") ? 1 : 0;
  k->coord = coord;
  k->nearest = nearest;
  k->NC = ait_shape_numel(r - 2, X->dims);
  k->H = X->dims[r - 2], k->W = X->dims[r - 1];
  k->OH = Y->dims[r - 2], k->OW = Y->dims[r - 1];
  if (scales) { /* the resized length is scale * input, as the reference has it */
    k->sh = (float)sc[0], k->sw = (float)sc[1];
    k->lh = (float)(sc[0] * (double)k->H), k->lw = (float)(sc[1] * (double)k->W);
  } else {
    k->sh = k->H ? (float)((double)k->OH / (double)k->H) : 1.0f;
    k->sw = k->W ? (float)((double)k->OW / (double)k->W) : 1.0f;
    k->lh = (float)k->OH, k->lw = (float)k->OW;
  }
  d->x = x;
  d->y = y;
  cu_step *s;
  AIT_TRY(cu_step_add(pl, node_index(pl, n), "Resize", resize_run, d, &s));
  cu_step_use(s, x);
  cu_step_use(s, y);
  return AIT_OK;
}

/* ---- InstanceNormalization ------------------------------------------------------ */

typedef struct inorm_prm {
  int x, y;
  const float *scale, *bias;
  int64_t rows, cols, C;
  float eps;
  int act; /* FusedInstanceNorm's activation (cuk code), CUK_COPY for none */
  float ap[2];
  bool nhwc; /* x and y are images [N, C, 1, L] of rank-3 values: rows = N, cols = L */
} inorm_prm;

static ait_status inorm_run(cu_state *s, cu_plan *p, cu_step *st) {
  inorm_prm *d = st->prm;
  int dt = p->t[d->x].dt;
  if (d->nhwc)
    return cu_check(cuk_instnorm_nhwc(s->stream, dt, cu_ptr(p, d->x), cu_ptr(p, d->y), d->rows,
                                      d->cols, d->C, d->scale, d->bias, d->eps, d->act, d->ap,
                                      s->n_sm, s->ws, s->o.ws_bytes),
                    "InstanceNormalization");
  return cu_check(cuk_instnorm(s->stream, dt, cu_ptr(p, d->x), cu_ptr(p, d->y), d->rows, d->cols,
                               d->C, d->scale, d->bias, d->eps, d->act, d->ap),
                  "InstanceNormalization");
}

bool cu_instnorm_act(const ait_node *n, int *code, float *ap) {
  *code = CUK_COPY;
  ap[0] = ap[1] = 0.0f;
  if (strcmp(n->domain, AIT_FUSED_DOMAIN)) return true;
  ait_act a;
  if (ait_act_parse(n, &a) != AIT_OK) return false;
  if (a.kind == AIT_ACT_NONE) return true;
  return cu_act_code(&a, code, ap);
}

ait_status cu_lower_instnorm(cu_planner *pl, const ait_node *n) {
  int act;
  float ap[2];
  if (!cu_instnorm_act(n, &act, ap))
    return ait_err(AIT_E_UNSUPPORTED, "cuda: %s: an activation without a kernel", n->op_type);
  /* rank-3 data that a 1-D convolution left channels-last is read so, and
   * the result stays so (its image) for the next 1-D convolution; the
   * graph's form of it only when something else reads it */
  int x, y, img = -1, y4 = -1;
  if (pl->g->values[n->in[0]].rank == 3) img = cu_conv1d_image(pl, n->in[0]);
  if (img >= 0) {
    x = img;
    const cu_tensor *X = &pl->p->t[x];
    AIT_TRY(cu_temp(pl, X->dt, 4, X->dims, CU_NHWC, &y));
    if (!cu_conv1d_readers_only(pl, n->out[0])) {
      int y3;
      int64_t yd[4];
      memcpy(yd, pl->p->t[y].dims, sizeof yd);
      AIT_TRY(cu_out(pl, n->out[0], CU_PLAIN, &y3));
      AIT_TRY(cu_view_dims(pl, y3, 4, yd, &y4));
    }
    pl->p->vt[CU_NHWC][n->out[0]] = y;
  } else {
    AIT_TRY(cu_in(pl, n->in[0], CU_PLAIN, &x));
    AIT_TRY(cu_out(pl, n->out[0], CU_PLAIN, &y));
  }
  const cu_tensor *X = &pl->p->t[x];
  if (X->rank < 3)
    return ait_err(AIT_E_UNSUPPORTED, "cuda: InstanceNormalization of a rank-%d tensor", X->rank);
  int64_t C = X->dims[1];
  for (int k = 1; k <= 2; k++) {
    const ait_tensor *w = cu_host_value(pl, n, k);
    if (!w || ait_tensor_numel(w) != C)
      return ait_err(AIT_E_UNSUPPORTED,
                     "cuda: InstanceNormalization scale and B must be constants of %lld values",
                     (long long)C);
  }
  inorm_prm *d = calloc(1, sizeof *d);
  if (!d) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
  void *sp = NULL, *bp = NULL;
  ait_status st = cu_const_weight(pl, n->in[1], CU_W_F32, &sp);
  if (!st) st = cu_const_weight(pl, n->in[2], CU_W_F32, &bp);
  if (st) {
    free(d);
    return st;
  }
  d->x = x;
  d->y = y;
  d->scale = sp;
  d->bias = bp;
  d->C = C;
  d->nhwc = img >= 0;
  d->rows = d->nhwc ? X->dims[0] : X->dims[0] * C;
  d->cols = ait_shape_numel(X->rank - 2, X->dims + 2);
  d->eps = ait_attr_float(n, "epsilon", 1e-5f);
  d->act = act;
  d->ap[0] = ap[0];
  d->ap[1] = ap[1];
  cu_step *s;
  AIT_TRY(cu_step_add(pl, node_index(pl, n), n->op_type, inorm_run, d, &s));
  cu_step_use(s, x);
  cu_step_use(s, y);
  if (y4 < 0) return AIT_OK;
  int64_t ys[4];
  cu_strides(&pl->p->t[y], ys);
  return cu_emit_copy(pl, node_index(pl, n), "InstanceNorm layout", y, y4, 0, ys);
}

#endif
