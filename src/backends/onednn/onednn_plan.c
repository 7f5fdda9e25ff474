/* Plans: one per input signature (dtypes and shapes of the inputs). A plan
 * walks the ops in order, gives every value its shape and memory, creates
 * the primitives (falling back to the reference kernels for an op oneDNN
 * refuses at these shapes), then places the activations in one arena by
 * liveness: buffers whose step ranges do not overlap share bytes. */
#include <stdlib.h>
#include <string.h>

#include "backends/common/plan.h"
#include "backends/onednn/onednn.h"
#include "runtime/eager.h"

void dn_plan_free(dn_plan *p) {
  if (!p) return;
  for (int i = 0; i < p->n_steps; i++) {
    dn_step *st = &p->steps[i];
    if (st->prim) dnnl_primitive_destroy(st->prim);
    free(st->arg_ids), free(st->arg_mems), free(st->xargs), free(st->in_mems);
  }
  for (int i = 0; i < p->n_mems; i++)
    if (p->mems[i].m) dnnl_memory_destroy(p->mems[i].m);
  for (int i = 0; i < p->n_bufs; i++)
    if (p->bufs[i].owns) free(p->bufs[i].ptr);
  if (p->pv)
    for (int v = 0; p->pv[v].rank >= -1; v++) /* sentinel rank -2 ends the array */
      if (p->pv[v].host_owned) ait_tensor_free(p->pv[v].host);
  if (p->scratch_mem) dnnl_memory_destroy(p->scratch_mem);
  free(p->scratch), free(p->arena);
  free(p->steps), free(p->mems), free(p->bufs), free(p->reo), free(p->pv);
  free(p->out_mem);
  free(p);
}

void dn_plans_clear(dn_state *s) { ait_plan_cache_clear(&s->plans); }

/* ---- shape glue evaluated once per plan ------------------------------------ */

static ait_status plan_static(dn_ctx *c, const dn_op *op) {
  const ait_node *n = &c->s->g->nodes[op->node];
  const ait_tensor *in[16] = {0};
  ait_tensor *heads[16] = {0}, *out[16] = {0};
  if (n->n_in > 16 || n->n_out > 16)
    return ait_err(AIT_E_UNSUPPORTED, "onednn: %s has too many inputs", ait_node_desc(n));
  ait_status st = AIT_OK;
  for (int k = 0; k < n->n_in && !st; k++) {
    int v = n->in[k];
    if (v < 0) continue;
    dn_pval *pv = &c->p->pv[v];
    if (pv->host) {
      in[k] = pv->host;
    } else { /* Shape/Size read only the shape of a runtime value */
      heads[k] = ait_tensor_wrap(pv->dt, pv->rank, pv->dims, NULL);
      if (!heads[k]) st = AIT_E_NOMEM;
      in[k] = heads[k];
    }
  }
  if (!st) st = ait_eager_run_node(n, in, n->n_in, out);
  for (int k = 0; k < n->n_in; k++)
    ait_tensor_free(heads[k]);
  if (st) return ait_err_prefix(st, "onednn: %s", ait_node_desc(n));
  for (int k = 0; k < n->n_out; k++) {
    int v = n->out[k];
    if (v < 0 || !out[k] || out[k]->kind != AIT_KIND_TENSOR) {
      ait_tensor_free(out[k]);
      continue;
    }
    dn_pval *pv = &c->p->pv[v];
    pv->host = out[k], pv->host_owned = true;
    pv->rank = out[k]->rank, pv->dt = out[k]->dtype;
    memcpy(pv->dims, out[k]->dims, (size_t)out[k]->rank * sizeof *pv->dims);
  }
  return AIT_OK;
}

/* ---- views: Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout --------- */

static ait_status axes_of(dn_ctx *c, const ait_node *n, int64_t *axes, int *count) {
  int cnt = 0;
  const int64_t *a = ait_attr_ints(n, "axes", &cnt);
  if (a) {
    memcpy(axes, a, (size_t)(cnt < AIT_MAX_RANK ? cnt : AIT_MAX_RANK) * sizeof *axes);
  } else if (n->n_in > 1 && n->in[1] >= 0) {
    const ait_tensor *t = c->p->pv[n->in[1]].host;
    if (!t) return ait_err(AIT_E_UNSUPPORTED, "onednn: %s: axes not known", ait_node_desc(n));
    AIT_TRY(ait_read_ints(t, axes, AIT_MAX_RANK, &cnt));
  }
  *count = cnt;
  return AIT_OK;
}

static ait_status view_dims(dn_ctx *c, const ait_node *n, const dn_pval *x, int *r, int64_t *d) {
  const char *op = n->op_type;
  int64_t total = ait_shape_numel(x->rank, x->dims);
  *r = x->rank;
  memcpy(d, x->dims, (size_t)x->rank * sizeof *d);
  if (!strcmp(op, "Flatten")) {
    int axis;
    int64_t a = ait_attr_int(n, "axis", 1);
    if (a == x->rank)
      axis = x->rank;
    else
      AIT_TRY(ait_norm_axis(a, x->rank, &axis));
    int64_t rows = 1;
    for (int k = 0; k < axis; k++)
      rows *= x->dims[k];
    *r = 2, d[0] = rows, d[1] = rows ? total / rows : 0;
  } else if (!strcmp(op, "Reshape")) {
    const ait_tensor *t = c->p->pv[n->in[1]].host;
    int cnt, infer = -1;
    int64_t want[AIT_MAX_RANK], known = 1;
    if (!t) return ait_err(AIT_E_UNSUPPORTED, "onednn: Reshape target not known");
    AIT_TRY(ait_read_ints(t, want, AIT_MAX_RANK, &cnt));
    for (int k = 0; k < cnt; k++) {
      d[k] = want[k] == 0 && k < x->rank ? x->dims[k] : want[k];
      if (d[k] == -1 && infer < 0)
        infer = k;
      else if (d[k] < 0)
        return ait_err(AIT_E_SHAPE, "onednn: %s: bad target dim %lld", ait_node_desc(n),
                       (long long)d[k]);
      else
        known *= d[k];
    }
    if (infer >= 0) d[infer] = known ? total / known : 0;
    *r = cnt;
    if (ait_shape_numel(cnt, d) != total)
      return ait_err(AIT_E_SHAPE, "onednn: %s: %lld elements cannot take that shape",
                     ait_node_desc(n), (long long)total);
  } else if (!strcmp(op, "Squeeze") || !strcmp(op, "Unsqueeze")) {
    int64_t axes[AIT_MAX_RANK];
    int cnt = 0;
    bool un = op[0] == 'U', drop[AIT_MAX_RANK] = {0};
    AIT_TRY(axes_of(c, n, axes, &cnt));
    int out_rank = un ? x->rank + cnt : x->rank;
    if (out_rank > AIT_MAX_RANK)
      return ait_err(AIT_E_SHAPE, "onednn: %s: rank too large", ait_node_desc(n));
    bool mark[AIT_MAX_RANK] = {0};
    for (int k = 0; k < cnt; k++) {
      int a;
      AIT_TRY(ait_norm_axis(axes[k], out_rank, &a));
      (un ? mark : drop)[a] = true;
    }
    if (!un && cnt == 0)
      for (int k = 0; k < x->rank; k++)
        drop[k] = x->dims[k] == 1;
    int j = 0, o = 0;
    for (int k = 0; k < out_rank; k++) {
      if (un) {
        d[k] = mark[k] ? 1 : x->dims[j++];
      } else if (!drop[k]) {
        d[o++] = x->dims[k];
      } else if (x->dims[k] != 1) {
        return ait_err(AIT_E_SHAPE, "onednn: %s: axis %d is not 1", ait_node_desc(n), k);
      }
    }
    *r = un ? out_rank : o;
  }
  return AIT_OK;
}

static ait_status plan_view(dn_ctx *c, const dn_op *op) {
  const ait_node *n = &c->s->g->nodes[op->node];
  dn_pval *x = &c->p->pv[op->in[0]], *y = &c->p->pv[op->out];
  AIT_TRY(view_dims(c, n, x, &y->rank, y->dims));
  y->dt = x->dt;
  int base;
  AIT_TRY(dn_value_dense(c, op->in[0], true, dnnl_data_type_undef, &base));
  const dn_mem *bm = &c->p->mems[base];
  int m;
  if (bm->md.ndims) {
    dnnl_memory_desc_t md;
    AIT_TRY(dn_md_plain(&md, y->rank, y->dims, bm->md.data_type));
    m = dn_mem_new(c, &md, bm->buf);
    if (m >= 0) c->p->mems[m].rank = y->rank; /* rank 0 keeps a 1-D descriptor */
  } else {
    m = dn_mem_host(c, bm->dt, y->rank, y->dims, bm->buf);
  }
  if (m < 0) return AIT_E_NOMEM;
  dn_set_value(c, op->out, m);
  return AIT_OK;
}

/* Transpose: a strided view when the data is plain; matmul reads such views
 * directly, anything else that needs a dense layout reorders it. */
static ait_status plan_transpose(dn_ctx *c, const dn_op *op) {
  const ait_node *n = &c->s->g->nodes[op->node];
  dn_pval *x = &c->p->pv[op->in[0]], *y = &c->p->pv[op->out];
  int cnt = 0, perm[AIT_MAX_RANK], inv[DNNL_MAX_NDIMS];
  const int64_t *p = ait_attr_ints(n, "perm", &cnt);
  if (p && cnt != x->rank)
    return ait_err(AIT_E_SHAPE, "onednn: %s: perm has %d values for rank %d", ait_node_desc(n), cnt,
                   x->rank);
  bool seen[AIT_MAX_RANK] = {0};
  for (int k = 0; k < x->rank; k++) {
    perm[k] = p ? (int)p[k] : x->rank - 1 - k;
    if (perm[k] < 0 || perm[k] >= x->rank || seen[perm[k]])
      return ait_err(AIT_E_INVALID_ARG, "onednn: %s: bad perm", ait_node_desc(n));
    seen[perm[k]] = true;
    inv[perm[k]] = k;
  }
  y->rank = x->rank, y->dt = x->dt;
  for (int k = 0; k < x->rank; k++)
    y->dims[k] = x->dims[perm[k]];
  int base;
  AIT_TRY(dn_value_any(c, op->in[0], &base));
  if (!c->p->mems[base].md.ndims || x->rank < 1)
    return ait_err(AIT_E_UNSUPPORTED, "onednn: transpose of %s", ait_dtype_name(x->dt));
  if (!dn_md_is_plain(&c->p->mems[base].md))
    AIT_TRY(dn_value_dense(c, op->in[0], true, dnnl_data_type_undef, &base));
  dnnl_memory_desc_t md;
  AIT_TRY(dn_check(dnnl_memory_desc_permute_axes(&md, &c->p->mems[base].md, inv), "transpose"));
  int m = dn_mem_new(c, &md, c->p->mems[base].buf);
  if (m < 0) return AIT_E_NOMEM;
  dn_set_value(c, op->out, m);
  return AIT_OK;
}

/* ---- the plan driver ------------------------------------------------------- */

static bool same_shape(const dn_pval *a, int r, const int64_t *d) {
  if (a->rank != r) return false;
  for (int k = 0; k < r; k++)
    if (a->dims[k] != d[k]) return false;
  return true;
}

/* Drop steps and cached reorders made after a failed attempt. */
static void rollback(dn_plan *p, int n_steps, int n_reo) {
  for (int i = n_steps; i < p->n_steps; i++) {
    dn_step *st = &p->steps[i];
    if (st->prim) dnnl_primitive_destroy(st->prim);
    free(st->arg_ids), free(st->arg_mems), free(st->xargs), free(st->in_mems);
  }
  p->n_steps = n_steps;
  p->n_reo = n_reo;
}

static ait_status plan_op(dn_ctx *c, const dn_op *op) {
  dn_pval *y = &c->p->pv[op->out];
  switch (op->kind) {
  case DN_STATIC: return plan_static(c, op);
  case DN_VIEW: return plan_view(c, op);
  case DN_TRANSPOSE: {
    int ns = c->p->n_steps, nr = c->p->n_reo;
    ait_status st = plan_transpose(c, op);
    if (st != AIT_E_UNSUPPORTED) return st;
    rollback(c->p, ns, nr);
    return dn_plan_host(c, c->op); /* host-only dtypes */
  }
  case DN_HOST:
    AIT_TRY(dn_op_shape(c, op, &y->rank, y->dims, &y->dt));
    return dn_plan_host(c, c->op);
  default: break;
  }
  /* the primitive's own shape must be the final one (post-ops only broadcast in) */
  dn_op bare = *op;
  int r;
  int64_t d[AIT_MAX_RANK];
  ait_dtype dt;
  bare.n_post = 0;
  AIT_TRY(dn_op_shape(c, &bare, &r, d, &dt));
  AIT_TRY(dn_op_shape(c, op, &y->rank, y->dims, &y->dt));
  for (int k = 0; k < y->rank; k++)
    if (y->dims[k] == 0) return dn_plan_host(c, c->op); /* empty tensors */
  if (!same_shape(y, r, d)) return dn_plan_host(c, c->op);
  int ns = c->p->n_steps, nr = c->p->n_reo;
  ait_status st = AIT_E_INTERNAL;
  switch (op->kind) {
  case DN_CONV: st = dn_plan_conv(c, op); break;
  case DN_MATMUL: st = dn_plan_matmul(c, op); break;
  case DN_POOL: st = dn_plan_pool(c, op); break;
  case DN_ELTWISE: st = dn_plan_eltwise(c, op); break;
  case DN_BINARY: st = dn_plan_binary(c, op); break;
  case DN_SOFTMAX: st = dn_plan_softmax(c, op); break;
  case DN_LNORM: st = dn_plan_lnorm(c, op); break;
  case DN_BNORM: st = dn_plan_bnorm(c, op); break;
  case DN_CONCAT: st = dn_plan_concat(c, op); break;
  default: break;
  }
  if (st != AIT_E_UNSUPPORTED && st != AIT_E_RUNTIME) return st;
  /* oneDNN has no implementation for these shapes (or refused the
   * arguments): the reference kernels compute the op instead */
  rollback(c->p, ns, nr);
  y->mem = -1;
  return dn_plan_host(c, c->op);
}

/* Outputs: the producer writes straight into the caller's tensor when the
 * value is plain float32 in a buffer of its own; else a final reorder. */
static ait_status plan_outputs(dn_ctx *c) {
  const ait_graph *g = c->s->g;
  dn_plan *p = c->p;
  c->op = c->s->n_ops;
  for (int k = 0; k < g->n_outputs; k++) {
    int v = g->outputs[k];
    dn_pval *pv = &p->pv[v];
    int64_t bytes = ait_shape_numel(pv->rank, pv->dims) * (int64_t)ait_elem_size(pv->dt);
    int src;
    AIT_TRY(dn_value_any(c, v, &src));
    const dn_mem *sm = &p->mems[src];
    dn_buf *b = &p->bufs[sm->buf];
    if (!pv->host && sm->md.ndims && sm->md.data_type == dnnl_f32 && pv->dt == AIT_FLOAT32 &&
        dn_md_is_plain_dense(&sm->md) && b->kind == DN_BUF_ARENA && b->size == bytes) {
      b->kind = DN_BUF_OUTPUT, b->io = k;
      p->out_mem[k] = src;
      continue;
    }
    int ob = dn_buf_new(p, DN_BUF_OUTPUT, bytes);
    if (ob < 0) return AIT_E_NOMEM;
    p->bufs[ob].io = k;
    int om = dn_mem_host(c, pv->dt, pv->rank, pv->dims, ob);
    if (om < 0) return AIT_E_NOMEM;
    p->out_mem[k] = om;
    dn_step *st;
    if (p->mems[src].md.ndims && p->mems[om].md.ndims) {
      dnnl_primitive_desc_t pd = NULL;
      AIT_TRY(dn_check(dnnl_reorder_primitive_desc_create(&pd, &p->mems[src].md, c->s->eng,
                                                          &p->mems[om].md, c->s->eng, NULL),
                       "output reorder"));
      int ids[2] = {DNNL_ARG_FROM, DNNL_ARG_TO}, mems[2] = {src, om};
      ait_status s = dn_step_prim(c, pd, 2, ids, mems);
      dnnl_primitive_desc_destroy(pd);
      AIT_TRY(s);
    } else {
      AIT_TRY(dn_step_add(p, &st));
      st->kind = DN_STEP_COPY, st->src_mem = src, st->out_mem = om, st->op = c->op;
    }
  }
  return AIT_OK;
}

/* Liveness of arena buffers over steps; placement by ait_plan_assign. */
static void touch(dn_plan *p, int mem, int step) {
  if (mem < 0) return;
  dn_buf *b = &p->bufs[p->mems[mem].buf];
  if (b->first < 0 || step < b->first) b->first = step;
  if (step > b->last) b->last = step;
}

static ait_status place_arena(dn_plan *p) {
  for (int i = 0; i < p->n_steps; i++) {
    const dn_step *st = &p->steps[i];
    if (st->kind == DN_STEP_PRIM)
      for (int k = 0; k < st->n_args; k++)
        touch(p, st->arg_mems[k], i);
    if (st->kind == DN_STEP_HOST)
      for (int k = 0; k < st->n_args; k++)
        touch(p, st->in_mems[k], i);
    touch(p, st->out_mem, i);
    touch(p, st->src_mem, i);
  }
  /* the shared liveness planner (src/backends/common/plan.c) */
  size_t nb = (size_t)p->n_bufs + 1;
  int64_t *size = calloc(nb, sizeof *size), *off = calloc(nb, sizeof *off);
  int *first = calloc(nb, sizeof *first), *last = calloc(nb, sizeof *last);
  ait_status st = size && off && first && last ? AIT_OK : ait_err(AIT_E_NOMEM, "out of memory");
  for (int i = 0; !st && i < p->n_bufs; i++) {
    const dn_buf *b = &p->bufs[i];
    bool in_arena = b->kind == DN_BUF_ARENA && b->first >= 0;
    size[i] = in_arena ? b->size : 0;
    first[i] = b->first, last[i] = b->last;
  }
  int64_t total = 0;
  if (!st) st = ait_plan_assign(p->n_bufs, size, first, last, off, &total);
  for (int i = 0; !st && i < p->n_bufs; i++) {
    dn_buf *b = &p->bufs[i];
    if (b->kind == DN_BUF_ARENA && b->first >= 0) b->offset = off[i] >= 0 ? off[i] : 0;
  }
  free(size), free(off), free(first), free(last);
  AIT_TRY(st);
  p->arena_bytes = total;
  if (total && posix_memalign(&p->arena, 64, (size_t)total))
    return ait_err(AIT_E_NOMEM, "onednn: out of memory for a %lld-byte arena", (long long)total);
  for (int i = 0; i < p->n_bufs; i++) {
    dn_buf *b = &p->bufs[i];
    if (b->kind == DN_BUF_ARENA) b->ptr = b->offset >= 0 ? (char *)p->arena + b->offset : NULL;
  }
  return AIT_OK;
}

static ait_status finalize(dn_state *s, dn_plan *p) {
  AIT_TRY(place_arena(p));
  if (p->scratch_bytes > 0) {
    dnnl_memory_desc_t md;
    dnnl_dims_t d = {p->scratch_bytes};
    int64_t n = p->scratch_bytes;
    AIT_TRY(dn_check(dnnl_memory_desc_init_by_tag(&md, 1, d, dnnl_u8, dnnl_a), "scratchpad"));
    if (posix_memalign(&p->scratch, 64, (size_t)n))
      return ait_err(AIT_E_NOMEM, "onednn: out of memory for the scratchpad");
    AIT_TRY(dn_check(dnnl_memory_create(&p->scratch_mem, &md, s->eng, p->scratch), "memory"));
  }
  for (int i = 0; i < p->n_mems; i++) {
    const dn_buf *b = &p->bufs[p->mems[i].buf];
    if (p->mems[i].m && (b->kind == DN_BUF_ARENA || b->kind == DN_BUF_FIXED))
      AIT_TRY(dn_check(dnnl_memory_set_data_handle(p->mems[i].m, b->ptr), "memory"));
  }
  for (int i = 0; i < p->n_steps; i++) {
    dn_step *st = &p->steps[i];
    if (st->kind != DN_STEP_PRIM) continue;
    for (int k = 0; k < st->n_args; k++) {
      st->xargs[k].arg = st->arg_ids[k];
      st->xargs[k].memory = st->arg_mems[k] == -2 ? p->scratch_mem : p->mems[st->arg_mems[k]].m;
    }
  }
  return AIT_OK;
}

static ait_status plan_build(dn_state *s, dn_plan *p, const ait_tensor *const *in, int n_in) {
  const ait_graph *g = s->g;
  dn_ctx c = {s, p, 0};
  for (int v = 0; v < g->n_values; v++) {
    dn_pval *pv = &p->pv[v];
    pv->mem = -1;
    pv->dt = g->values[v].dtype;
    if (s->vslot[v] >= 0) {
      pv->host = s->slots[s->vslot[v]].t;
      pv->rank = pv->host->rank, pv->dt = pv->host->dtype;
      memcpy(pv->dims, pv->host->dims, (size_t)pv->rank * sizeof *pv->dims);
    }
  }
  for (int i = 0; i < n_in; i++) {
    dn_pval *pv = &p->pv[g->inputs[i]];
    pv->rank = in[i]->rank, pv->dt = in[i]->dtype;
    memcpy(pv->dims, in[i]->dims, (size_t)in[i]->rank * sizeof *pv->dims);
    int b = dn_buf_new(p, DN_BUF_INPUT, (int64_t)ait_tensor_nbytes(in[i]));
    if (b < 0) return AIT_E_NOMEM;
    p->bufs[b].io = i;
    int m = dn_mem_host(&c, in[i]->dtype, in[i]->rank, in[i]->dims, b);
    if (m < 0) return AIT_E_NOMEM;
    pv->mem = m;
  }
  for (int i = 0; i < s->n_ops; i++) {
    c.op = i;
    ait_status st = plan_op(&c, &s->ops[i]);
    if (st) return st;
  }
  AIT_TRY(plan_outputs(&c));
  return finalize(s, p);
}

ait_status dn_plan_make(dn_state *s, const ait_tensor *const *in, int n_in, dn_plan **out) {
  const ait_graph *g = s->g;
  *out = NULL;
  dn_plan *p = calloc(1, sizeof *p);
  if (!p) return ait_err(AIT_E_NOMEM, "out of memory");
  p->pv = calloc((size_t)g->n_values + 1, sizeof *p->pv);
  p->out_mem = malloc(((size_t)g->n_outputs + 1) * sizeof *p->out_mem);
  if (!p->pv || !p->out_mem) {
    dn_plan_free(p);
    return ait_err(AIT_E_NOMEM, "out of memory");
  }
  p->pv[g->n_values].rank = -2; /* sentinel for dn_plan_free */
  ait_status st = plan_build(s, p, in, n_in);
  if (st) {
    dn_plan_free(p);
    return st;
  }
  *out = p;
  return AIT_OK;
}
