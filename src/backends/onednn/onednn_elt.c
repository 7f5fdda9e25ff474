/* Post-op attributes and the elementwise primitives: eltwise, binary,
 * concat. A primitive gets as many of its op's post-ops as oneDNN accepts
 * for the shapes at hand (all, then fewer); the rest run as standalone
 * in-place eltwise/binary steps on its destination, so the numbers are the
 * same either way. */
#include <stdlib.h>
#include <string.h>

#include "backends/onednn/onednn.h"

/* Dims of a binary post-op operand (value or folded slot). */
static void operand_dims(dn_ctx *c, const dn_post *p, int *r, int64_t *d) {
  if (p->oslot >= 0) {
    const ait_tensor *t = c->s->slots[p->oslot].t;
    *r = t->rank;
    memcpy(d, t->dims, (size_t)t->rank * sizeof *d);
  } else {
    *r = c->p->pv[p->operand].rank;
    memcpy(d, c->p->pv[p->operand].dims, (size_t)*r * sizeof *d);
  }
}

void dn_fit_rank(int r, const int64_t *d, int out_rank, int64_t *e) {
  int merge = r > out_rank ? r - out_rank + 1 : 1, lead = r < out_rank ? out_rank - r : 0;
  for (int k = 0; k < lead; k++)
    e[k] = 1;
  int64_t m = 1;
  for (int k = 0; k < merge && k < r; k++)
    m *= d[k];
  if (r > 0) e[lead] = m;
  for (int k = merge; k < r; k++)
    e[lead + 1 + k - merge] = d[k];
  if (r == 0 && out_rank > 0) e[out_rank - 1] = 1;
}

static bool same_dims(int ra, const int64_t *a, int rb, const int64_t *b) {
  if (ra != rb) return false;
  for (int k = 0; k < ra; k++)
    if (a[k] != b[k]) return false;
  return true;
}

/* Memory of slot data as a plain float32 tensor. */
static ait_status slot_mem(dn_ctx *c, int slot, int *mem) {
  const ait_tensor *t = c->s->slots[slot].t;
  int b = dn_buf_new(c->p, DN_BUF_FIXED, (int64_t)ait_tensor_nbytes(t));
  if (b < 0) return AIT_E_NOMEM;
  c->p->bufs[b].ptr = t->data;
  if ((*mem = dn_mem_host(c, t->dtype, t->rank, t->dims, b)) < 0) return AIT_E_NOMEM;
  return AIT_OK;
}

/* Broadcast operand of rank <= out_rank as a plain md of rank out_rank. */
static ait_status operand_md(dn_ctx *c, const dn_post *p, int out_rank, dnnl_memory_desc_t *md) {
  int r;
  int64_t d[AIT_MAX_RANK], e[DNNL_MAX_NDIMS];
  operand_dims(c, p, &r, d);
  dn_fit_rank(r, d, out_rank, e);
  dnnl_data_type_t dt = dnnl_f32;
  if (p->oslot < 0 && c->p->pv[p->operand].mem >= 0) {
    dnnl_data_type_t m = c->p->mems[c->p->pv[p->operand].mem].md.data_type;
    if (m == dnnl_bf16) dt = m;
  }
  return dn_md_plain(md, out_rank, e, dt);
}

ait_status dn_posts_attr(dn_ctx *c, const dn_op *op, int count, int out_rank,
                         const int64_t *out_dims, bool sum_ok, dn_postset *ps) {
  memset(ps, 0, sizeof *ps);
  ps->sum_value = ps->sum_index = -1;
  if (!(ps->attr = dn_attr_new())) return ait_err(AIT_E_NOMEM, "onednn: attribute");
  dnnl_post_ops_t po = NULL;
  AIT_TRY(dn_check(dnnl_post_ops_create(&po), "post-ops"));
  ait_status st = AIT_OK;
  for (int k = 0; k < count && !st; k++) {
    const dn_post *p = &op->post[k];
    if (!p->binary) {
      st = dn_check(dnnl_post_ops_append_eltwise(po, 1.f, p->e.alg, p->e.alpha, p->e.beta),
                    "eltwise post-op");
      continue;
    }
    int r;
    int64_t d[AIT_MAX_RANK], e[DNNL_MAX_NDIMS];
    operand_dims(c, p, &r, d);
    dn_fit_rank(r, d, out_rank, e);
    if (sum_ok && p->alg == dnnl_binary_add && p->oslot < 0 && ps->sum_value < 0 &&
        !c->p->pv[p->operand].host && same_dims(out_rank, e, out_rank, out_dims)) {
      ps->sum_value = p->operand, ps->sum_index = k;
      st = dn_check(dnnl_post_ops_append_sum(po, 1.f), "sum post-op");
      continue;
    }
    dnnl_memory_desc_t md;
    st = operand_md(c, p, out_rank, &md);
    if (!st) st = dn_check(dnnl_post_ops_append_binary(po, p->alg, &md), "binary post-op");
  }
  if (!st) st = dn_check(dnnl_primitive_attr_set_post_ops(ps->attr, po), "post-ops");
  dnnl_post_ops_destroy(po);
  ps->n_fused = count;
  if (st) dn_posts_free(ps);
  return st;
}

void dn_posts_free(dn_postset *ps) {
  if (ps->attr) dnnl_primitive_attr_destroy(ps->attr);
  ps->attr = NULL;
}

/* Memories of the fused binary operands (after the pd accepted them). */
static ait_status posts_bind(dn_ctx *c, const dn_op *op, int out_rank, dn_postset *ps) {
  ps->n_args = 0;
  for (int k = 0; k < ps->n_fused; k++) {
    const dn_post *p = &op->post[k];
    if (!p->binary || k == ps->sum_index) continue;
    dnnl_memory_desc_t md, flat;
    int base;
    AIT_TRY(operand_md(c, p, out_rank, &md));
    if (p->oslot >= 0) {
      AIT_TRY(slot_mem(c, p->oslot, &base));
    } else {
      const dn_pval *pv = &c->p->pv[p->operand];
      AIT_TRY(dn_md_plain(&flat, pv->rank, pv->dims, md.data_type));
      AIT_TRY(dn_value_in(c, p->operand, &flat, &base));
    }
    int m = dn_mem_new(c, &md, c->p->mems[base].buf);
    if (m < 0) return AIT_E_NOMEM;
    ps->ids[ps->n_args] = DNNL_ARG_ATTR_MULTIPLE_POST_OP(k) | DNNL_ARG_SRC_1;
    ps->mems[ps->n_args++] = m;
  }
  return AIT_OK;
}

/* How many of op's post-ops one primitive may take. oneDNN 2.6's jit
 * post-op chain gives two eltwise post-ops of the same algorithm the
 * parameters of the first (two `linear` steps with different scales come
 * out wrong), so a chain stops before such a repeat. */
static int posts_limit(const dn_op *op) {
  for (int k = 0; k < op->n_post; k++)
    for (int j = 0; j < k && !op->post[k].binary; j++)
      if (!op->post[j].binary && op->post[j].e.alg == op->post[k].e.alg &&
          (op->post[j].e.alpha != op->post[k].e.alpha || op->post[j].e.beta != op->post[k].e.beta))
        return k;
  return op->n_post;
}

ait_status dn_pd_with_posts(dn_ctx *c, const dn_op *op, int out_rank, const int64_t *out_dims,
                            bool sum_ok, dn_pd_fn make, void *arg, dnnl_primitive_desc_t *pd,
                            dn_postset *ps) {
  for (int count = posts_limit(op); count >= 0; count--) {
    AIT_TRY(dn_posts_attr(c, op, count, out_rank, out_dims, sum_ok, ps));
    ait_status st = make(c, op, ps->attr, arg, pd);
    /* reference implementations with post-ops are slow (and the eltwise one
     * computes zeros in 2.6): run the post-ops as their own steps instead */
    if (st == AIT_OK && count > 0 && !strncmp(dn_impl(*pd), "ref", 3)) {
      dnnl_primitive_desc_destroy(*pd);
      *pd = NULL;
      st = AIT_E_UNSUPPORTED;
    }
    if (st == AIT_OK) return posts_bind(c, op, out_rank, ps);
    dn_posts_free(ps);
    if (st != AIT_E_UNSUPPORTED) return st;
  }
  return ait_err(AIT_E_UNSUPPORTED, "onednn: %s: no implementation",
                 ait_node_desc(&c->s->g->nodes[op->node]));
}

ait_status dn_dst_for(dn_ctx *c, const dnnl_memory_desc_t *md, int sum_value, int avoid_a,
                      int avoid_b, int *mem) {
  if (sum_value < 0) {
    if ((*mem = dn_mem_alloc(c, md)) < 0) return AIT_E_NOMEM;
    return AIT_OK;
  }
  int r = c->p->pv[sum_value].mem;
  int rb = c->p->mems[r].buf;
  const dnnl_memory_desc_t *rmd = &c->p->mems[r].md;
  bool same = dnnl_memory_desc_equal(rmd, md);
  /* plain dense layouts of the same bytes (a flattened matmul) also match */
  if (!same && dn_md_is_plain_dense(rmd) && dn_md_is_plain_dense(md) &&
      rmd->data_type == md->data_type &&
      dnnl_memory_desc_get_size(rmd) == dnnl_memory_desc_get_size(md))
    same = true;
  if (dn_can_overwrite(c, sum_value) && rb != avoid_a && rb != avoid_b && same) {
    if (dnnl_memory_desc_equal(rmd, md)) return *mem = r, AIT_OK;
    return (*mem = dn_mem_new(c, md, rb)) < 0 ? AIT_E_NOMEM : AIT_OK;
  }
  /* copy the residual into the destination first; the sum adds onto it */
  if ((*mem = dn_mem_alloc(c, md)) < 0) return AIT_E_NOMEM;
  int src, to = *mem;
  AIT_TRY(dn_value_any(c, sum_value, &src));
  const dn_pval *pv = &c->p->pv[sum_value];
  if (md->ndims != pv->rank && dn_md_is_plain_dense(md)) {
    /* a flattened destination: copy through a view with the value's shape */
    dnnl_memory_desc_t view;
    AIT_TRY(dn_md_plain(&view, pv->rank, pv->dims, md->data_type));
    if ((to = dn_mem_new(c, &view, c->p->mems[*mem].buf)) < 0) return AIT_E_NOMEM;
  }
  dnnl_primitive_desc_t pd = NULL;
  AIT_TRY(dn_check(dnnl_reorder_primitive_desc_create(&pd, &c->p->mems[src].md, c->s->eng,
                                                      &c->p->mems[to].md, c->s->eng, NULL),
                   "reorder"));
  int ids[2] = {DNNL_ARG_FROM, DNNL_ARG_TO}, mems[2] = {src, to};
  ait_status st = dn_step_prim(c, pd, 2, ids, mems);
  dnnl_primitive_desc_destroy(pd);
  return st;
}

/* ---- standalone steps --------------------------------------------------------- */

static ait_status eltwise_step(dn_ctx *c, const dn_elt *e, int src, int dst,
                               dnnl_primitive_attr_t attr, const dn_postset *ps) {
  dnnl_eltwise_desc_t d;
  dnnl_primitive_desc_t pd = NULL;
  AIT_TRY(dn_check(dnnl_eltwise_forward_desc_init(&d, dnnl_forward_inference, e->alg,
                                                  &c->p->mems[src].md, e->alpha, e->beta),
                   "eltwise"));
  dnnl_primitive_attr_t a = attr ? attr : dn_attr_new();
  ait_status st = dn_check(dnnl_primitive_desc_create(&pd, &d, a, c->s->eng, NULL), "eltwise");
  if (!attr) dnnl_primitive_attr_destroy(a);
  AIT_TRY(st);
  int ids[2 + DN_MAX_POST] = {DNNL_ARG_SRC, DNNL_ARG_DST}, mems[2 + DN_MAX_POST] = {src, dst};
  int n = 2;
  for (int k = 0; ps && k < ps->n_args; k++)
    ids[n] = ps->ids[k], mems[n++] = ps->mems[k];
  st = dn_step_prim(c, pd, n, ids, mems);
  dnnl_primitive_desc_destroy(pd);
  return st;
}

static ait_status binary_pd(dn_ctx *c, dnnl_alg_kind_t alg, const dnnl_memory_desc_t *a,
                            const dnnl_memory_desc_t *b, const dnnl_memory_desc_t *dst,
                            dnnl_primitive_attr_t attr, dnnl_primitive_desc_t *pd) {
  dnnl_binary_desc_t d;
  AIT_TRY(dn_check(dnnl_binary_desc_init(&d, alg, a, b, dst), "binary"));
  dnnl_primitive_attr_t at = attr ? attr : dn_attr_new();
  ait_status st = dn_check(dnnl_primitive_desc_create(pd, &d, at, c->s->eng, NULL), "binary");
  if (!attr) dnnl_primitive_attr_destroy(at);
  return st;
}

ait_status dn_plan_posts_after(dn_ctx *c, const dn_op *op, int from, int dst) {
  const dn_mem *dm = &c->p->mems[dst];
  for (int k = from; k < op->n_post; k++) {
    const dn_post *p = &op->post[k];
    if (!p->binary) {
      AIT_TRY(eltwise_step(c, &p->e, dst, dst, NULL, NULL));
      continue;
    }
    int r, opnd;
    int64_t d[AIT_MAX_RANK];
    operand_dims(c, p, &r, d);
    dnnl_memory_desc_t md;
    if (p->oslot < 0 && same_dims(r, d, dm->rank, dm->dims)) {
      AIT_TRY(dn_value_in(c, p->operand, &dm->md, &opnd));
    } else {
      int base;
      AIT_TRY(operand_md(c, p, dm->md.ndims, &md));
      md = dn_md_with_dt(&md, dm->md.data_type);
      if (p->oslot >= 0) {
        AIT_TRY(slot_mem(c, p->oslot, &base));
        if (dm->md.data_type != dnnl_f32) {
          /* constant operand in the destination's type: reorder it once */
          dnnl_memory_desc_t conv = dn_md_with_dt(&c->p->mems[base].md, dm->md.data_type);
          int b = dn_buf_new(c->p, DN_BUF_FIXED, (int64_t)dnnl_memory_desc_get_size(&conv));
          void *ptr = NULL;
          if (b < 0 || posix_memalign(&ptr, 64, dnnl_memory_desc_get_size(&conv) + 64))
            return ait_err(AIT_E_NOMEM, "out of memory");
          c->p->bufs[b].ptr = ptr, c->p->bufs[b].owns = true;
          AIT_TRY(dn_reorder_now(c->s, &c->p->mems[base].md, c->p->bufs[c->p->mems[base].buf].ptr,
                                 &conv, ptr));
          if ((base = dn_mem_new(c, &conv, b)) < 0) return AIT_E_NOMEM;
        }
      } else {
        const dn_pval *pv = &c->p->pv[p->operand];
        dnnl_memory_desc_t flat;
        AIT_TRY(dn_md_plain(&flat, pv->rank, pv->dims, md.data_type));
        AIT_TRY(dn_value_in(c, p->operand, &flat, &base));
      }
      if ((opnd = dn_mem_new(c, &md, c->p->mems[base].buf)) < 0) return AIT_E_NOMEM;
    }
    dnnl_primitive_desc_t pd = NULL;
    AIT_TRY(binary_pd(c, p->alg, &dm->md, &c->p->mems[opnd].md, &dm->md, NULL, &pd));
    int ids[3] = {DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_DST}, mems[3] = {dst, opnd, dst};
    ait_status st = dn_step_prim(c, pd, 3, ids, mems);
    dnnl_primitive_desc_destroy(pd);
    AIT_TRY(st);
    dm = &c->p->mems[dst]; /* the arrays may have moved */
  }
  return AIT_OK;
}

/* ---- eltwise ---------------------------------------------------------------- */

typedef struct elt_arg {
  const dnnl_memory_desc_t *md;
} elt_arg;

static ait_status elt_make(dn_ctx *c, const dn_op *op, dnnl_primitive_attr_t attr, void *arg,
                           dnnl_primitive_desc_t *pd) {
  const elt_arg *a = arg;
  dnnl_eltwise_desc_t d;
  AIT_TRY(dn_check(dnnl_eltwise_forward_desc_init(&d, dnnl_forward_inference, op->elt.alg, a->md,
                                                  op->elt.alpha, op->elt.beta),
                   "eltwise"));
  return dn_check(dnnl_primitive_desc_create(pd, &d, attr, c->s->eng, NULL), "eltwise");
}

static bool shares_buf(dn_ctx *c, const dn_postset *ps, int buf) {
  for (int k = 0; k < ps->n_args; k++)
    if (c->p->mems[ps->mems[k]].buf == buf) return true;
  return false;
}

ait_status dn_plan_eltwise(dn_ctx *c, const dn_op *op) {
  const dn_pval *out = &c->p->pv[op->out];
  const dn_pval *x = &c->p->pv[op->in[0]];
  if (!same_dims(x->rank, x->dims, out->rank, out->dims))
    return ait_err(AIT_E_UNSUPPORTED, "onednn: broadcasting eltwise");
  int src;
  AIT_TRY(dn_value_dense(c, op->in[0], false, dnnl_data_type_undef, &src));
  dnnl_memory_desc_t md = c->p->mems[src].md;
  dnnl_primitive_desc_t pd = NULL;
  dn_postset ps;
  elt_arg a = {&md};
  dn_op bare = *op; /* the post-ops run as their own steps (see dn_pd_with_posts) */
  bare.n_post = 0;
  AIT_TRY(dn_pd_with_posts(c, &bare, md.ndims, md.dims, false, elt_make, &a, &pd, &ps));
  int dst = src;
  if (!dn_can_overwrite(c, op->in[0]) || shares_buf(c, &ps, c->p->mems[src].buf))
    dst = dn_mem_alloc(c, &md);
  ait_status st = dst < 0 ? AIT_E_NOMEM : AIT_OK;
  if (!st) {
    int ids[2 + DN_MAX_POST] = {DNNL_ARG_SRC, DNNL_ARG_DST}, mems[2 + DN_MAX_POST] = {src, dst};
    int n = 2;
    for (int k = 0; k < ps.n_args; k++)
      ids[n] = ps.ids[k], mems[n++] = ps.mems[k];
    st = dn_step_prim(c, pd, n, ids, mems);
  }
  dnnl_primitive_desc_destroy(pd);
  int fused = ps.n_fused;
  dn_posts_free(&ps);
  AIT_TRY(st);
  dn_set_value(c, op->out, dst);
  return dn_plan_posts_after(c, op, fused, dst);
}

/* ---- binary ---------------------------------------------------------------- */

typedef struct bin_arg {
  const dnnl_memory_desc_t *a, *b;
} bin_arg;

static ait_status bin_make(dn_ctx *c, const dn_op *op, dnnl_primitive_attr_t attr, void *arg,
                           dnnl_primitive_desc_t *pd) {
  const bin_arg *a = arg;
  return binary_pd(c, op->alg, a->a, a->b, a->a, attr, pd);
}

ait_status dn_plan_binary(dn_ctx *c, const dn_op *op) {
  const dn_pval *out = &c->p->pv[op->out];
  int a = op->in[0], b = op->in[1];
  bool commutative = op->alg != dnnl_binary_sub && op->alg != dnnl_binary_div;
  const dn_pval *pa = &c->p->pv[a], *pb = &c->p->pv[b];
  if (!same_dims(pa->rank, pa->dims, out->rank, out->dims)) {
    if (!commutative || !same_dims(pb->rank, pb->dims, out->rank, out->dims))
      return ait_err(AIT_E_UNSUPPORTED, "onednn: first operand broadcasts");
    int t = a;
    a = b, b = t;
    pb = &c->p->pv[b];
  }
  int src0, src1;
  AIT_TRY(dn_value_dense(c, a, false, dnnl_data_type_undef, &src0));
  dnnl_memory_desc_t md0 = c->p->mems[src0].md, md1;
  if (same_dims(pb->rank, pb->dims, out->rank, out->dims)) {
    AIT_TRY(dn_value_in(c, b, &md0, &src1));
  } else {
    int base;
    AIT_TRY(dn_value_dense(c, b, true, md0.data_type, &base));
    AIT_TRY(dn_md_expand(&c->p->mems[base].md, md0.ndims, &md1));
    if ((src1 = dn_mem_new(c, &md1, c->p->mems[base].buf)) < 0) return AIT_E_NOMEM;
  }
  md1 = c->p->mems[src1].md;
  dnnl_primitive_desc_t pd = NULL;
  dn_postset ps;
  bin_arg ba = {&md0, &md1};
  AIT_TRY(dn_pd_with_posts(c, op, md0.ndims, md0.dims, false, bin_make, &ba, &pd, &ps));
  int dst = src0;
  int buf0 = c->p->mems[src0].buf;
  if (!dn_can_overwrite(c, a) || c->p->mems[src1].buf == buf0 || shares_buf(c, &ps, buf0))
    dst = dn_mem_alloc(c, &md0);
  ait_status st = dst < 0 ? AIT_E_NOMEM : AIT_OK;
  if (!st) {
    int ids[3 + DN_MAX_POST] = {DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_DST};
    int mems[3 + DN_MAX_POST] = {src0, src1, dst}, n = 3;
    for (int k = 0; k < ps.n_args; k++)
      ids[n] = ps.ids[k], mems[n++] = ps.mems[k];
    st = dn_step_prim(c, pd, n, ids, mems);
  }
  dnnl_primitive_desc_destroy(pd);
  int fused = ps.n_fused;
  dn_posts_free(&ps);
  AIT_TRY(st);
  dn_set_value(c, op->out, dst);
  return dn_plan_posts_after(c, op, fused, dst);
}

/* ---- concat ----------------------------------------------------------------- */

ait_status dn_plan_concat(dn_ctx *c, const dn_op *op) {
  const dn_pval *out = &c->p->pv[op->out];
  int axis, n = op->n_ins;
  AIT_TRY(ait_norm_axis(op->axis, out->rank, &axis));
  dnnl_memory_desc_t *mds = malloc((size_t)n * sizeof *mds);
  int *mems = malloc((size_t)(n + 1) * sizeof *mems), *ids = malloc((size_t)(n + 1) * sizeof *ids);
  ait_status st = mds && mems && ids ? AIT_OK : ait_err(AIT_E_NOMEM, "out of memory");
  dnnl_primitive_desc_t pd = NULL;
  for (int plain = 0; plain < 2 && !st && !pd; plain++) {
    dnnl_data_type_t dt = dnnl_data_type_undef;
    for (int k = 0; k < n && !st; k++) {
      st = dn_value_dense(c, op->ins[k], plain, dt, &mems[k]);
      if (!st) mds[k] = c->p->mems[mems[k]].md, dt = mds[0].data_type;
    }
    if (st) break;
    dnnl_memory_desc_t dst;
    dnnl_dims_t d;
    for (int k = 0; k < out->rank; k++)
      d[k] = out->dims[k];
    dnnl_primitive_attr_t attr = dn_attr_new();
    st = dn_check(dnnl_memory_desc_init_by_tag(&dst, out->rank, d, dt, dnnl_format_tag_any), "md");
    if (!st)
      st = dn_check(dnnl_concat_primitive_desc_create(&pd, &dst, n, axis, mds, attr, c->s->eng),
                    "concat");
    dnnl_primitive_attr_destroy(attr);
    if (st == AIT_E_UNSUPPORTED && !plain) st = AIT_OK, pd = NULL;
  }
  if (!st) {
    const dnnl_memory_desc_t *dmd = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    int dst = dn_mem_alloc(c, dmd);
    for (int k = 0; k < n; k++)
      ids[k] = DNNL_ARG_MULTIPLE_SRC + k;
    ids[n] = DNNL_ARG_DST, mems[n] = dst;
    st = dst < 0 ? AIT_E_NOMEM : dn_step_prim(c, pd, n + 1, ids, mems);
    if (!st) {
      dn_set_value(c, op->out, dst);
      st = dn_plan_posts_after(c, op, 0, dst);
    }
  }
  if (pd) dnnl_primitive_desc_destroy(pd);
  free(mds), free(mems), free(ids);
  return st;
}
