/* The compute primitives: convolution, matmul, pooling, softmax, layer and
 * batch normalization. Convolution lets oneDNN choose every layout
 * (format `any`): activations stay in the blocked layout it picks and the
 * next primitive usually takes them as they are; weights are reordered once
 * into the layout chosen (dn_weights). Under dtype=bf16, convolution and
 * matmul compute in bf16 and the ops after them keep their input's type. */
#include <string.h>

#include "backends/onednn/onednn.h"
#include "ops/nn_impl.h"

static const ait_node *node_of(dn_ctx *c, const dn_op *op) { return &c->s->g->nodes[op->node]; }

static bool is_graph_input(const ait_graph *g, int v) {
  for (int i = 0; i < g->n_inputs; i++)
    if (g->inputs[i] == v) return true;
  return false;
}

/* Under dtype=bf16, whether this convolution/matmul computes in bf16. The
 * first layer (reading a graph input) and the last (writing a graph
 * output) stay float32, as mixed-precision practice has it: rounding the
 * input image and the logits costs the most accuracy for the least time. */
static bool use_bf16(dn_ctx *c, const dn_op *op) {
  if (!c->s->bf16) return false;
  return !is_graph_input(c->s->g, op->in[0]) && c->s->last_use[op->out] != DN_NEVER;
}

static void to_dims(int r, const int64_t *d, dnnl_dim_t *out) {
  for (int k = 0; k < r; k++)
    out[k] = d[k];
}

/* Execution args of a primitive plus the fused post-op operands. */
static ait_status step_with_posts(dn_ctx *c, dnnl_primitive_desc_t pd, int n, int *ids, int *mems,
                                  const dn_postset *ps) {
  for (int k = 0; k < ps->n_args; k++)
    ids[n] = ps->ids[k], mems[n++] = ps->mems[k];
  return dn_step_prim(c, pd, n, ids, mems);
}

/* ---- convolution ---------------------------------------------------------- */

bool dn_wino_fits(int64_t group, int rank, const int64_t *kd, const int64_t *strides,
                  const int64_t *dilations) {
  if (group != 1 || rank != 4) return false;
  for (int k = 0; k < 2; k++)
    if (kd[k] != 3 || (strides && strides[k] != 1) || (dilations && dilations[k] != 1))
      return false;
  return true;
}

typedef struct conv_arg {
  dnnl_memory_desc_t src, w, b, dst;
  dnnl_dims_t st, dil, pl, pr;
  bool has_b;
  dnnl_alg_kind_t alg;
} conv_arg;

static ait_status conv_make(dn_ctx *c, const dn_op *op, dnnl_primitive_attr_t attr, void *arg,
                            dnnl_primitive_desc_t *pd) {
  conv_arg *a = arg;
  dnnl_convolution_desc_t d;
  AIT_TRY(dn_check(dnnl_dilated_convolution_forward_desc_init(
                       &d, dnnl_forward_inference, a->alg, &a->src, &a->w, a->has_b ? &a->b : NULL,
                       &a->dst, a->st, a->dil, a->pl, a->pr),
                   "convolution"));
  return dn_check(dnnl_primitive_desc_create(pd, &d, attr, c->s->eng, NULL), "convolution");
}

ait_status dn_plan_conv(dn_ctx *c, const dn_op *op) {
  const ait_node *n = node_of(c, op);
  const dn_pval *x = &c->p->pv[op->in[0]], *y = &c->p->pv[op->out];
  const ait_tensor *w = c->s->slots[op->w].t;
  int64_t group = ait_attr_int(n, "group", 1);
  nn_win win;
  AIT_TRY(nn_win_conv(n, x->rank - 2, x->dims + 2, w->dims + 2, false, true, &win));
  conv_arg a;
  memset(&a, 0, sizeof a);
  for (int k = 0; k < win.nsp; k++) {
    a.st[k] = win.s[k], a.dil[k] = win.d[k] - 1, a.pl[k] = win.pb[k], a.pr[k] = win.pe[k];
  }
  dnnl_dims_t xd, wd, yd, bd = {w->dims[0]};
  int wr = w->rank;
  to_dims(x->rank, x->dims, xd);
  to_dims(y->rank, y->dims, yd);
  if (group > 1) {
    wd[0] = group, wd[1] = w->dims[0] / group;
    for (int k = 1; k < w->rank; k++)
      wd[k + 1] = w->dims[k];
    wr++;
  } else {
    to_dims(w->rank, w->dims, wd);
  }
  a.has_b = op->b >= 0;
  ait_status st = AIT_E_UNSUPPORTED;
  dnnl_primitive_desc_t pd = NULL;
  dn_postset ps;
  /* Winograd only where it can pay: fp32, 3x3, stride 1, no dilation or groups.
   * oneDNN says unimplemented for shapes its kernels do not take; then direct. */
  bool wino =
      c->s->wino && !use_bf16(c, op) && dn_wino_fits(group, w->rank, w->dims + 2, win.s, win.d);
  for (int bf = use_bf16(c, op) ? 1 : 0, wi = wino; bf >= 0 && st == AIT_E_UNSUPPORTED;
       wi ? (void)(wi = 0) : (void)bf--) {
    a.alg = wi ? dnnl_convolution_winograd : dnnl_convolution_direct;
    dnnl_data_type_t dt = bf ? dnnl_bf16 : dnnl_f32;
    dnnl_memory_desc_init_by_tag(&a.src, x->rank, xd, dt, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&a.w, wr, wd, dt, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&a.b, 1, bd, dnnl_f32, dnnl_a);
    dnnl_memory_desc_init_by_tag(&a.dst, y->rank, yd, dt, dnnl_format_tag_any);
    st = dn_pd_with_posts(c, op, y->rank, y->dims, true, conv_make, &a, &pd, &ps);
  }
  AIT_TRY(st);
  const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
  const dnnl_memory_desc_t *wmd = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
  const dnnl_memory_desc_t *bmd = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 1);
  const dnnl_memory_desc_t *dmd = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
  int src = -1, wm = -1, bm = -1, dst = -1;
  dnnl_memory_desc_t wplain, bplain;
  st = dn_value_in(c, op->in[0], smd, &src);
  if (!st) st = dn_md_plain(&wplain, wr, (const int64_t *)wd, dnnl_f32);
  if (!st) st = dn_weights(c, op->w, &wplain, wmd, &wm);
  if (!st && a.has_b) st = dn_md_plain(&bplain, 1, (const int64_t *)bd, dnnl_f32);
  if (!st && a.has_b) st = dn_weights(c, op->b, &bplain, bmd, &bm);
  if (!st) st = dn_dst_for(c, dmd, ps.sum_value, c->p->mems[src].buf, -1, &dst);
  if (!st) {
    int ids[5 + DN_MAX_POST] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS};
    int mems[5 + DN_MAX_POST] = {src, wm, dst, bm};
    st = step_with_posts(c, pd, a.has_b ? 4 : 3, ids, mems, &ps);
  }
  int fused = ps.n_fused;
  dn_posts_free(&ps);
  dnnl_primitive_desc_destroy(pd);
  AIT_TRY(st);
  dn_set_value(c, op->out, dst);
  return dn_plan_posts_after(c, op, fused, dst);
}

/* ---- matmul ------------------------------------------------------------------ */

typedef struct mm_arg {
  dnnl_memory_desc_t a, b, bias, dst;
  bool has_bias;
} mm_arg;

static ait_status mm_make(dn_ctx *c, const dn_op *op, dnnl_primitive_attr_t attr, void *arg,
                          dnnl_primitive_desc_t *pd) {
  mm_arg *m = arg;
  dnnl_matmul_desc_t d;
  AIT_TRY(dn_check(dnnl_matmul_desc_init(&d, &m->a, &m->b, m->has_bias ? &m->bias : NULL, &m->dst),
                   "matmul"));
  return dn_check(dnnl_primitive_desc_create(pd, &d, attr, c->s->eng, NULL), "matmul");
}

/* Memory of a runtime matmul operand as a plain (maybe strided) layout of
 * type dt, transposed when asked, with rank r. */
static ait_status mm_operand(dn_ctx *c, int v, bool trans, int r, dnnl_data_type_t dt, bool dense,
                             int *mem, dnnl_memory_desc_t *md) {
  int base;
  AIT_TRY(dn_value_any(c, v, &base));
  const dnnl_memory_desc_t *bm = &c->p->mems[base].md;
  if (!dn_md_is_plain(bm) || bm->data_type != dt || (dense && !dn_md_is_plain_dense(bm)))
    AIT_TRY(dn_value_dense(c, v, true, dt, &base));
  dnnl_memory_desc_t m = c->p->mems[base].md;
  if (trans) {
    int perm[DNNL_MAX_NDIMS];
    for (int k = 0; k < m.ndims; k++)
      perm[k] = k;
    perm[m.ndims - 1] = m.ndims - 2, perm[m.ndims - 2] = m.ndims - 1;
    dnnl_memory_desc_t t;
    AIT_TRY(dn_check(dnnl_memory_desc_permute_axes(&t, &m, perm), "transpose"));
    m = t;
  }
  AIT_TRY(dn_md_expand(&m, r, md));
  *mem = base;
  return AIT_OK;
}

/* Whether op may run as one [rows, N] GEMM over a flattened input:
 * constant 2-D weights, and every binary post-op operand either of the
 * result's shape or broadcast along the last axis only. */
static bool mm_can_flatten(dn_ctx *c, const dn_op *op, const dn_pval *y) {
  if (op->w < 0 || op->trans_a || y->rank <= 2 || c->s->slots[op->w].t->rank != 2) return false;
  for (int k = 0; k < op->n_post; k++) {
    const dn_post *p = &op->post[k];
    if (!p->binary) continue;
    const ait_tensor *t = p->oslot >= 0 ? c->s->slots[p->oslot].t : NULL;
    int r = t ? t->rank : c->p->pv[p->operand].rank;
    const int64_t *d = t ? t->dims : c->p->pv[p->operand].dims;
    bool full = r == y->rank, lead_ones = true;
    for (int j = 0; j < r; j++) {
      full = full && d[j] == y->dims[j];
      lead_ones = lead_ones && (j == r - 1 || d[j] == 1);
    }
    if (!full && !lead_ones) return false;
  }
  return true;
}

/* The Transpose node reading v when it is v's only reader: the matmul then
 * writes its result in the transposed order, so the Transpose is a plain
 * row-major view (attention's [b, h, s, d] -> [b, s, h, d]). */
static const ait_node *transpose_reader(dn_ctx *c, int v) {
  const dn_state *s = c->s;
  int found = -1;
  if (s->last_use[v] == DN_NEVER) return NULL;
  for (int i = c->op + 1; i < s->n_ops; i++)
    for (int k = 0; k < s->ops[i].n_ext; k++)
      if (s->ops[i].ext[k] == v) {
        if (found >= 0 && found != i) return NULL;
        found = i;
      }
  if (found < 0 || s->ops[found].kind != DN_TRANSPOSE || s->ops[found].in[0] != v) return NULL;
  return &s->g->nodes[s->ops[found].node];
}

static ait_status mm_dst(dn_ctx *c, const dn_op *op, const dn_pval *y, dnnl_data_type_t dt,
                         dnnl_memory_desc_t *md) {
  AIT_TRY(dn_md_plain(md, y->rank, y->dims, dt));
  const ait_node *t = transpose_reader(c, op->out);
  int cnt = 0;
  const int64_t *p = t ? ait_attr_ints(t, "perm", &cnt) : NULL;
  if (!t || (p && cnt != y->rank)) return AIT_OK;
  int perm[DNNL_MAX_NDIMS];
  int64_t td[AIT_MAX_RANK];
  for (int k = 0; k < y->rank; k++) {
    perm[k] = p ? (int)p[k] : y->rank - 1 - k;
    if (perm[k] < 0 || perm[k] >= y->rank) return AIT_OK;
    td[k] = y->dims[perm[k]];
  }
  dnnl_memory_desc_t tmd;
  AIT_TRY(dn_md_plain(&tmd, y->rank, td, dt));
  return dn_check(dnnl_memory_desc_permute_axes(md, &tmd, perm), "transpose");
}

static ait_status mm_plan(dn_ctx *c, const dn_op *op, dnnl_data_type_t dt, bool dense) {
  const dn_pval *y = &c->p->pv[op->out];
  const ait_tensor *w = op->w >= 0 ? c->s->slots[op->w].t : NULL;
  bool flat = mm_can_flatten(c, op, y);
  int r = flat ? 2 : y->rank, am, bm = -1, biasm = -1, dst = -1;
  int64_t nn = y->dims[y->rank - 1], od[AIT_MAX_RANK];
  dn_fit_rank(y->rank, y->dims, r, od);
  mm_arg m;
  memset(&m, 0, sizeof m);
  if (flat) {
    int64_t ad[2] = {od[0], c->p->pv[op->in[0]].dims[c->p->pv[op->in[0]].rank - 1]};
    AIT_TRY(dn_value_dense(c, op->in[0], true, dt, &am));
    AIT_TRY(dn_md_plain(&m.a, 2, ad, dt));
  } else {
    AIT_TRY(mm_operand(c, op->in[0], op->trans_a, r, dt, dense, &am, &m.a));
  }
  dnnl_memory_desc_t wplain;
  if (w) {
    dnnl_dims_t wd;
    for (int k = 0; k < r; k++)
      wd[k] = k < r - w->rank ? 1 : w->dims[k - (r - w->rank)];
    AIT_TRY(dn_md_plain(&wplain, r, (const int64_t *)wd, dnnl_f32));
    if (op->trans_b) { /* logical [.., K, N] over data stored [.., N, K] */
      int perm[DNNL_MAX_NDIMS];
      dnnl_memory_desc_t view;
      for (int k = 0; k < r; k++)
        perm[k] = k;
      perm[r - 1] = r - 2, perm[r - 2] = r - 1;
      AIT_TRY(dn_check(dnnl_memory_desc_permute_axes(&view, &wplain, perm), "transpose"));
      wplain = view;
    }
    dnnl_memory_desc_init_by_tag(&m.b, r, wplain.dims, dt, dnnl_format_tag_any);
  } else {
    AIT_TRY(mm_operand(c, op->in[1], op->trans_b, r, dt, dense, &bm, &m.b));
  }
  m.has_bias = op->b >= 0;
  dnnl_dims_t bd;
  for (int k = 0; k < r; k++)
    bd[k] = k == r - 1 ? nn : 1;
  if (m.has_bias) AIT_TRY(dn_md_plain(&m.bias, r, (const int64_t *)bd, dnnl_f32));
  if (flat)
    AIT_TRY(dn_md_plain(&m.dst, r, od, dt));
  else
    AIT_TRY(mm_dst(c, op, y, dt, &m.dst));
  dnnl_primitive_desc_t pd = NULL;
  dn_postset ps;
  AIT_TRY(dn_pd_with_posts(c, op, r, od, true, mm_make, &m, &pd, &ps));
  ait_status st = AIT_OK;
  if (!dense && !strncmp(dn_impl(pd), "ref", 3)) st = AIT_E_UNSUPPORTED; /* retry dense */
  if (!st && w) {
    const dnnl_memory_desc_t *wmd = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    st = dn_weights(c, op->w, &wplain, wmd, &bm);
  }
  if (!st && m.has_bias) st = dn_weights(c, op->b, &m.bias, &m.bias, &biasm);
  /* views with the ranks and strides the primitive was created with */
  if (!st && (am = dn_mem_new(c, &m.a, c->p->mems[am].buf)) < 0) st = AIT_E_NOMEM;
  if (!st && !w && (bm = dn_mem_new(c, &m.b, c->p->mems[bm].buf)) < 0) st = AIT_E_NOMEM;
  if (!st)
    st = dn_dst_for(c, &m.dst, ps.sum_value, c->p->mems[am].buf, w ? -1 : c->p->mems[bm].buf, &dst);
  if (!st) {
    int ids[5 + DN_MAX_POST] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS};
    int mems[5 + DN_MAX_POST] = {am, bm, dst, biasm};
    st = step_with_posts(c, pd, m.has_bias ? 4 : 3, ids, mems, &ps);
  }
  int fused = ps.n_fused;
  dn_posts_free(&ps);
  dnnl_primitive_desc_destroy(pd);
  AIT_TRY(st);
  AIT_TRY(dn_plan_posts_after(c, op, fused, dst));
  if (flat) { /* the value keeps its shape: a view of the [rows, N] result */
    dnnl_memory_desc_t md;
    AIT_TRY(dn_md_plain(&md, y->rank, y->dims, dt));
    if ((dst = dn_mem_new(c, &md, c->p->mems[dst].buf)) < 0) return AIT_E_NOMEM;
  }
  dn_set_value(c, op->out, dst);
  return AIT_OK;
}

ait_status dn_plan_matmul(dn_ctx *c, const dn_op *op) {
  dnnl_data_type_t dt = use_bf16(c, op) ? dnnl_bf16 : dnnl_f32;
  int n_steps = c->p->n_steps;
  ait_status st = mm_plan(c, op, dt, false);
  if (st == AIT_E_UNSUPPORTED && c->p->n_steps == n_steps) st = mm_plan(c, op, dt, true);
  if (st == AIT_E_UNSUPPORTED && dt == dnnl_bf16 && c->p->n_steps == n_steps)
    st = mm_plan(c, op, dnnl_f32, true);
  return st;
}

/* ---- pooling ------------------------------------------------------------------- */

typedef struct pool_arg {
  dnnl_memory_desc_t src, dst;
  dnnl_dims_t st, k, dil, pl, pr;
} pool_arg;

static ait_status pool_make(dn_ctx *c, const dn_op *op, dnnl_primitive_attr_t attr, void *arg,
                            dnnl_primitive_desc_t *pd) {
  pool_arg *a = arg;
  dnnl_pooling_v2_desc_t d;
  AIT_TRY(dn_check(dnnl_pooling_v2_forward_desc_init(&d, dnnl_forward_inference, op->alg, &a->src,
                                                     &a->dst, a->st, a->k, a->dil, a->pl, a->pr),
                   "pooling"));
  return dn_check(dnnl_primitive_desc_create(pd, &d, attr, c->s->eng, NULL), "pooling");
}

ait_status dn_plan_pool(dn_ctx *c, const dn_op *op) {
  const ait_node *n = node_of(c, op);
  const dn_pval *x = &c->p->pv[op->in[0]], *y = &c->p->pv[op->out];
  int nsp = x->rank - 2;
  pool_arg a;
  memset(&a, 0, sizeof a);
  if (!strncmp(n->op_type, "Global", 6)) {
    for (int k = 0; k < nsp; k++)
      a.st[k] = 1, a.k[k] = x->dims[2 + k];
  } else {
    nn_win win;
    AIT_TRY(nn_win_conv(n, nsp, x->dims + 2, NULL, ait_attr_int(n, "ceil_mode", 0) != 0,
                        nn_pool_has_dilations(n), &win));
    for (int k = 0; k < nsp; k++) {
      int64_t keff = (win.k[k] - 1) * win.d[k] + 1;
      int64_t need = (win.out[k] - 1) * win.s[k] + keff - win.in[k] - win.pb[k];
      a.st[k] = win.s[k], a.k[k] = win.k[k], a.dil[k] = win.d[k] - 1;
      a.pl[k] = win.pb[k], a.pr[k] = need > win.pe[k] ? need : win.pe[k];
      /* ceil_mode overhang: ONNX divides by the window inside the explicit padding */
      if (need > win.pe[k] && op->alg == dnnl_pooling_avg_include_padding)
        return ait_err(AIT_E_UNSUPPORTED, "onednn: average pool with ceil_mode overhang");
    }
  }
  int src;
  AIT_TRY(dn_value_dense(c, op->in[0], false, dnnl_data_type_undef, &src));
  a.src = c->p->mems[src].md;
  dnnl_dims_t yd;
  to_dims(y->rank, y->dims, yd);
  dnnl_memory_desc_init_by_tag(&a.dst, y->rank, yd, a.src.data_type, dnnl_format_tag_any);
  dnnl_primitive_desc_t pd = NULL;
  dn_postset ps;
  AIT_TRY(dn_pd_with_posts(c, op, y->rank, y->dims, false, pool_make, &a, &pd, &ps));
  int dst = dn_mem_alloc(c, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0));
  ait_status st = dst < 0 ? AIT_E_NOMEM : AIT_OK;
  if (!st) {
    int ids[2 + DN_MAX_POST] = {DNNL_ARG_SRC, DNNL_ARG_DST}, mems[2 + DN_MAX_POST] = {src, dst};
    st = step_with_posts(c, pd, 2, ids, mems, &ps);
  }
  int fused = ps.n_fused;
  dn_posts_free(&ps);
  dnnl_primitive_desc_destroy(pd);
  AIT_TRY(st);
  dn_set_value(c, op->out, dst);
  return dn_plan_posts_after(c, op, fused, dst);
}

/* ---- softmax and the normalizations ----------------------------------------------- */

typedef struct norm_arg {
  dnnl_memory_desc_t md;
  int axis;
  unsigned flags;
} norm_arg;

static ait_status softmax_make(dn_ctx *c, const dn_op *op, dnnl_primitive_attr_t attr, void *arg,
                               dnnl_primitive_desc_t *pd) {
  norm_arg *a = arg;
  dnnl_softmax_v2_desc_t d;
  AIT_TRY(dn_check(dnnl_softmax_v2_forward_desc_init(&d, dnnl_forward_inference, op->alg, &a->md,
                                                     &a->md, a->axis),
                   "softmax"));
  return dn_check(dnnl_primitive_desc_create(pd, &d, attr, c->s->eng, NULL), "softmax");
}

static ait_status lnorm_make(dn_ctx *c, const dn_op *op, dnnl_primitive_attr_t attr, void *arg,
                             dnnl_primitive_desc_t *pd) {
  norm_arg *a = arg;
  dnnl_layer_normalization_desc_t d;
  AIT_TRY(dn_check(dnnl_layer_normalization_forward_desc_init(&d, dnnl_forward_inference, &a->md,
                                                              NULL, op->eps, a->flags),
                   "layer normalization"));
  return dn_check(dnnl_primitive_desc_create(pd, &d, attr, c->s->eng, NULL), "layer normalization");
}

static ait_status bnorm_make(dn_ctx *c, const dn_op *op, dnnl_primitive_attr_t attr, void *arg,
                             dnnl_primitive_desc_t *pd) {
  norm_arg *a = arg;
  dnnl_batch_normalization_desc_t d;
  AIT_TRY(dn_check(dnnl_batch_normalization_forward_desc_init(&d, dnnl_forward_inference, &a->md,
                                                              op->eps, a->flags),
                   "batch normalization"));
  return dn_check(dnnl_primitive_desc_create(pd, &d, attr, c->s->eng, NULL), "batch normalization");
}

/* Per-channel constant of c elements as a plain float32 memory. */
static ait_status vec_mem(dn_ctx *c, int slot, int64_t n, int *mem) {
  if (slot < 0 || ait_tensor_numel(c->s->slots[slot].t) != n ||
      c->s->slots[slot].t->dtype != AIT_FLOAT32)
    return ait_err(AIT_E_UNSUPPORTED, "onednn: per-channel parameter of %lld values expected",
                   (long long)n);
  dnnl_memory_desc_t md;
  AIT_TRY(dn_md_plain(&md, 1, &n, dnnl_f32));
  return dn_weights(c, slot, &md, &md, mem);
}

/* Softmax / LayerNormalization over a 2-D [rows, cols] view of the input
 * (plain dense), BatchNormalization on the input's own layout. */
static ait_status plan_norm(dn_ctx *c, const dn_op *op) {
  const ait_node *n = node_of(c, op);
  const dn_pval *x = &c->p->pv[op->in[0]];
  int src, axis = 1;
  norm_arg a;
  memset(&a, 0, sizeof a);
  dn_pd_fn make = op->kind == DN_SOFTMAX ? softmax_make
                  : op->kind == DN_LNORM ? lnorm_make
                                         : bnorm_make;
  int margs = 0, mids[4], mmems[4];
  if (op->kind == DN_BNORM) {
    AIT_TRY(dn_value_dense(c, op->in[0], false, dnnl_data_type_undef, &src));
    a.md = c->p->mems[src].md;
    a.flags = dnnl_use_global_stats | dnnl_use_scale | dnnl_use_shift;
    int slots[4] = {op->mean, op->var, op->scale, op->shift};
    int ids[4] = {DNNL_ARG_MEAN, DNNL_ARG_VARIANCE, DNNL_ARG_SCALE, DNNL_ARG_SHIFT};
    for (int k = 0; k < 4; k++) {
      AIT_TRY(vec_mem(c, slots[k], x->dims[1], &mmems[k]));
      mids[margs++] = ids[k];
    }
  } else {
    AIT_TRY(ait_norm_axis(op->axis, x->rank > 0 ? x->rank : 1, &axis));
    bool opset13 = op->kind == DN_LNORM || n->opset >= 13;
    int64_t rows = 1, cols = 1;
    for (int k = 0; k < x->rank; k++) {
      if (k < axis)
        rows *= x->dims[k];
      else
        cols *= x->dims[k];
    }
    AIT_TRY(dn_value_dense(c, op->in[0], true, dnnl_data_type_undef, &src));
    a.md = c->p->mems[src].md;
    bool flat =
        !opset13 || (op->kind == DN_LNORM && (axis != x->rank - 1 || x->rank < 2 || x->rank > 5));
    if (flat) {
      /* a 2-D view: binary post-op operands would not line up with it */
      for (int k = 0; k < op->n_post; k++)
        if (op->post[k].binary)
          return ait_err(AIT_E_UNSUPPORTED, "onednn: binary post-op on a flattened norm");
      int64_t d2[2] = {rows, cols};
      AIT_TRY(dn_md_plain(&a.md, 2, d2, a.md.data_type));
      axis = 1;
    }
    a.axis = axis;
    if (op->kind == DN_LNORM) {
      a.flags = dnnl_use_scale;
      AIT_TRY(vec_mem(c, op->scale, cols, &mmems[0]));
      mids[margs++] = DNNL_ARG_SCALE;
      if (op->shift >= 0) {
        a.flags |= dnnl_use_shift;
        AIT_TRY(vec_mem(c, op->shift, cols, &mmems[1]));
        mids[margs++] = DNNL_ARG_SHIFT;
      }
    }
  }
  dnnl_primitive_desc_t pd = NULL;
  dn_postset ps;
  AIT_TRY(dn_pd_with_posts(c, op, a.md.ndims, a.md.dims, false, make, &a, &pd, &ps));
  int in = src;
  if (!dnnl_memory_desc_equal(&c->p->mems[src].md, &a.md) &&
      (in = dn_mem_new(c, &a.md, c->p->mems[src].buf)) < 0)
    return AIT_E_NOMEM;
  int dst = in;
  if (!dn_can_overwrite(c, op->in[0]) || ps.n_args) dst = dn_mem_alloc(c, &a.md);
  ait_status st = dst < 0 ? AIT_E_NOMEM : AIT_OK;
  if (!st) {
    int ids[6 + DN_MAX_POST] = {DNNL_ARG_SRC, DNNL_ARG_DST}, mems[6 + DN_MAX_POST] = {in, dst};
    int cnt = 2;
    for (int k = 0; k < margs; k++)
      ids[cnt] = mids[k], mems[cnt++] = mmems[k];
    st = step_with_posts(c, pd, cnt, ids, mems, &ps);
  }
  int fused = ps.n_fused;
  dn_posts_free(&ps);
  dnnl_primitive_desc_destroy(pd);
  AIT_TRY(st);
  AIT_TRY(dn_plan_posts_after(c, op, fused, dst));
  /* the value keeps its own shape: a view of a flattened result */
  int out = dst;
  if (a.md.ndims != x->rank) {
    dnnl_memory_desc_t md;
    AIT_TRY(dn_md_plain(&md, x->rank, x->dims, a.md.data_type));
    if ((out = dn_mem_new(c, &md, c->p->mems[dst].buf)) < 0) return AIT_E_NOMEM;
  }
  dn_set_value(c, op->out, out);
  return AIT_OK;
}

ait_status dn_plan_softmax(dn_ctx *c, const dn_op *op) { return plan_norm(c, op); }
ait_status dn_plan_lnorm(dn_ctx *c, const dn_op *op) { return plan_norm(c, op); }
ait_status dn_plan_bnorm(dn_ctx *c, const dn_op *op) { return plan_norm(c, op); }
