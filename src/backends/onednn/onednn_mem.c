/* Memory of a plan: descriptors, buffers (arena, caller's inputs and
 * outputs, fixed constant data), memories over them (several memories may
 * view one buffer: reshapes, transposes, in-place results), reorders
 * between layouts (cached per value), the weight cache, and steps. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backends/onednn/onednn.h"

ait_status dn_check(dnnl_status_t st, const char *what) {
  if (st == dnnl_success) return AIT_OK;
  if (st == dnnl_out_of_memory) return ait_err(AIT_E_NOMEM, "onednn: out of memory in %s", what);
  if (st == dnnl_unimplemented)
    return ait_err(AIT_E_UNSUPPORTED, "onednn: %s is not implemented for these shapes", what);
  return ait_err(AIT_E_RUNTIME, "onednn: %s failed (dnnl status %d)", what, (int)st);
}

dnnl_data_type_t dn_dt(ait_dtype dt) {
  switch (dt) {
  case AIT_FLOAT32: return dnnl_f32;
  case AIT_BFLOAT16: return dnnl_bf16;
  case AIT_FLOAT16: return dnnl_f16;
  case AIT_INT8: return dnnl_s8;
  case AIT_UINT8: return dnnl_u8;
  case AIT_INT32: return dnnl_s32;
  default: return dnnl_data_type_undef;
  }
}

static ait_dtype ait_of(dnnl_data_type_t dt) {
  switch (dt) {
  case dnnl_f32: return AIT_FLOAT32;
  case dnnl_bf16: return AIT_BFLOAT16;
  case dnnl_f16: return AIT_FLOAT16;
  case dnnl_s8: return AIT_INT8;
  case dnnl_u8: return AIT_UINT8;
  case dnnl_s32: return AIT_INT32;
  default: return AIT_UNDEFINED;
  }
}

ait_status dn_md_plain(dnnl_memory_desc_t *md, int rank, const int64_t *dims, dnnl_data_type_t dt) {
  dnnl_dims_t d, st;
  int r = rank > 0 ? rank : 1;
  for (int k = 0; k < r; k++)
    d[k] = rank > 0 ? dims[k] : 1;
  dnnl_dim_t acc = 1;
  for (int k = r - 1; k >= 0; k--) {
    st[k] = acc;
    acc *= d[k] > 0 ? d[k] : 1;
  }
  return dn_check(dnnl_memory_desc_init_by_strides(md, r, d, dt, st), "memory descriptor");
}

bool dn_md_is_plain(const dnnl_memory_desc_t *md) {
  return md->ndims > 0 && md->format_kind == dnnl_blocked &&
         md->format_desc.blocking.inner_nblks == 0;
}

bool dn_md_is_plain_dense(const dnnl_memory_desc_t *md) {
  if (!dn_md_is_plain(md) || md->offset0 != 0) return false;
  dnnl_dim_t acc = 1;
  for (int k = md->ndims - 1; k >= 0; k--) {
    if (md->padded_dims[k] != md->dims[k]) return false;
    if (md->dims[k] != 1 && md->format_desc.blocking.strides[k] != acc) return false;
    acc *= md->dims[k];
  }
  return true;
}

/* Dense: every byte belongs to one element (row-major, NHWC, blocked, or a
 * permutation of those), so an elementwise primitive may keep the layout. */
bool dn_md_is_dense(const dnnl_memory_desc_t *md) {
  if (md->ndims == 0) return true; /* host-only: plain by construction */
  if (md->format_kind != dnnl_blocked || md->offset0 != 0) return false;
  size_t n = 1;
  for (int k = 0; k < md->ndims; k++)
    n *= (size_t)md->padded_dims[k];
  int esize = md->data_type == dnnl_f32 || md->data_type == dnnl_s32    ? 4
              : md->data_type == dnnl_bf16 || md->data_type == dnnl_f16 ? 2
                                                                        : 1;
  return dnnl_memory_desc_get_size(md) == n * (size_t)esize;
}

dnnl_memory_desc_t dn_md_with_dt(const dnnl_memory_desc_t *md, dnnl_data_type_t dt) {
  dnnl_memory_desc_t r = *md;
  r.data_type = dt;
  return r;
}

ait_status dn_md_expand(const dnnl_memory_desc_t *md, int r, dnnl_memory_desc_t *out) {
  if (r == md->ndims) return *out = *md, AIT_OK;
  if (!dn_md_is_plain(md) || r < md->ndims || r > DNNL_MAX_NDIMS)
    return ait_err(AIT_E_INTERNAL, "onednn: cannot expand a blocked layout to rank %d", r);
  dnnl_dims_t d, st;
  int lead = r - md->ndims;
  dnnl_dim_t span = md->format_desc.blocking.strides[0] * md->dims[0];
  for (int k = 0; k < r; k++) {
    d[k] = k < lead ? 1 : md->dims[k - lead];
    st[k] = k < lead ? (span > 0 ? span : 1) : md->format_desc.blocking.strides[k - lead];
  }
  return dn_check(dnnl_memory_desc_init_by_strides(out, r, d, md->data_type, st),
                  "memory descriptor");
}

dnnl_primitive_attr_t dn_attr_new(void) {
  dnnl_primitive_attr_t a = NULL;
  if (dnnl_primitive_attr_create(&a) != dnnl_success) return NULL;
  dnnl_primitive_attr_set_scratchpad_mode(a, dnnl_scratchpad_mode_user);
  return a;
}

const char *dn_impl(const_dnnl_primitive_desc_t pd) {
  const char *name = "?";
  dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name);
  return name;
}

/* ---- buffers and memories ------------------------------------------------ */

#define GROW(arr, n, cap, init)                                                                    \
  do {                                                                                             \
    if ((n) == (cap)) {                                                                            \
      int c_ = (cap) ? 2 * (cap) : (init);                                                         \
      void *p_ = realloc((arr), (size_t)c_ * sizeof *(arr));                                       \
      if (!p_) return ait_err(AIT_E_NOMEM, "out of memory"), -1;                                   \
      (arr) = p_, (cap) = c_;                                                                      \
    }                                                                                              \
  } while (0)

int dn_buf_new(dn_plan *p, dn_buf_kind kind, int64_t size) {
  GROW(p->bufs, p->n_bufs, p->cap_bufs, 64);
  p->bufs[p->n_bufs] = (dn_buf){
      .kind = kind, .size = size, .first = -1, .last = -1, .last_reader = -1, .offset = -1};
  return p->n_bufs++;
}

static int mem_push(dn_plan *p, const dn_mem *m) {
  GROW(p->mems, p->n_mems, p->cap_mems, 64);
  p->mems[p->n_mems] = *m;
  return p->n_mems++;
}

int dn_mem_new(dn_ctx *c, const dnnl_memory_desc_t *md, int buf) {
  if (buf < 0) return -1;
  dn_mem m;
  memset(&m, 0, sizeof m);
  m.md = *md;
  m.buf = buf;
  m.dt = ait_of(md->data_type);
  m.rank = md->ndims;
  for (int k = 0; k < md->ndims; k++)
    m.dims[k] = md->dims[k];
  if (dn_check(dnnl_memory_create(&m.m, md, c->s->eng, DNNL_MEMORY_NONE), "memory")) return -1;
  int i = mem_push(c->p, &m);
  if (i < 0) dnnl_memory_destroy(m.m);
  return i;
}

int dn_mem_host(dn_ctx *c, ait_dtype dt, int rank, const int64_t *dims, int buf) {
  if (buf < 0) return -1;
  dnnl_data_type_t d = dn_dt(dt);
  if (d != dnnl_data_type_undef && rank <= DNNL_MAX_NDIMS) {
    dnnl_memory_desc_t md;
    if (dn_md_plain(&md, rank, dims, d)) return -1;
    int i = dn_mem_new(c, &md, buf);
    if (i >= 0) {
      c->p->mems[i].rank = rank;
      memcpy(c->p->mems[i].dims, dims, (size_t)rank * sizeof *dims);
    }
    return i;
  }
  dn_mem m;
  memset(&m, 0, sizeof m);
  m.dt = dt, m.rank = rank, m.buf = buf;
  memcpy(m.dims, dims, (size_t)rank * sizeof *dims);
  return mem_push(c->p, &m);
}

int dn_mem_alloc(dn_ctx *c, const dnnl_memory_desc_t *md) {
  return dn_mem_new(c, md, dn_buf_new(c->p, DN_BUF_ARENA, (int64_t)dnnl_memory_desc_get_size(md)));
}

void dn_set_value(dn_ctx *c, int v, int mem) {
  c->p->pv[v].mem = mem;
  dn_buf *b = &c->p->bufs[c->p->mems[mem].buf];
  int lu = c->s->last_use[v];
  if (lu > b->last_reader) b->last_reader = lu;
  if (c->op > b->last_reader) b->last_reader = c->op;
}

bool dn_can_overwrite(dn_ctx *c, int v) {
  int mem = v >= 0 ? c->p->pv[v].mem : -1;
  if (mem < 0 || c->p->pv[v].host) return false;
  const dn_buf *b = &c->p->bufs[c->p->mems[mem].buf];
  return b->kind == DN_BUF_ARENA && b->last_reader <= c->op && c->s->last_use[v] <= c->op;
}

/* ---- values in layouts ------------------------------------------------------ */

ait_status dn_value_any(dn_ctx *c, int v, int *mem) {
  dn_pval *pv = &c->p->pv[v];
  if (pv->mem >= 0) return *mem = pv->mem, AIT_OK;
  if (!pv->host)
    return ait_err(AIT_E_INTERNAL, "onednn: value '%s' is read before it is computed",
                   c->s->g->values[v].name);
  int b = dn_buf_new(c->p, DN_BUF_FIXED, (int64_t)ait_tensor_nbytes(pv->host));
  if (b < 0) return AIT_E_NOMEM;
  c->p->bufs[b].ptr = pv->host->data;
  int m = dn_mem_host(c, pv->host->dtype, pv->host->rank, pv->host->dims, b);
  if (m < 0) return AIT_E_NOMEM;
  pv->mem = m;
  return *mem = m, AIT_OK;
}

static int reo_find(const dn_plan *p, int v, const dnnl_memory_desc_t *md) {
  for (int i = 0; i < p->n_reo; i++)
    if (p->reo[i].value == v && dnnl_memory_desc_equal(&p->mems[p->reo[i].mem].md, md))
      return p->reo[i].mem;
  return -1;
}

static ait_status reo_add(dn_plan *p, int v, int mem) {
  if (p->n_reo == p->cap_reo) {
    int cap = p->cap_reo ? 2 * p->cap_reo : 32;
    dn_reo *r = realloc(p->reo, (size_t)cap * sizeof *r);
    if (!r) return ait_err(AIT_E_NOMEM, "out of memory");
    p->reo = r, p->cap_reo = cap;
  }
  p->reo[p->n_reo++] = (dn_reo){v, mem};
  return AIT_OK;
}

static void *aligned(size_t size) {
  void *p = NULL;
  return posix_memalign(&p, 64, size ? size : 64) ? NULL : p;
}

ait_status dn_reorder_now(dn_state *s, const dnnl_memory_desc_t *smd, void *src,
                          const dnnl_memory_desc_t *dmd, void *dst) {
  dnnl_primitive_desc_t pd = NULL;
  dnnl_primitive_t prim = NULL;
  dnnl_memory_t sm = NULL, dm = NULL;
  ait_status st =
      dn_check(dnnl_reorder_primitive_desc_create(&pd, smd, s->eng, dmd, s->eng, NULL), "reorder");
  if (!st) st = dn_check(dnnl_primitive_create(&prim, pd), "reorder");
  if (!st) st = dn_check(dnnl_memory_create(&sm, smd, s->eng, src), "memory");
  if (!st) st = dn_check(dnnl_memory_create(&dm, dmd, s->eng, dst), "memory");
  if (!st) {
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, sm}, {DNNL_ARG_TO, dm}};
    st = dn_check(dnnl_primitive_execute(prim, s->stream, 2, args), "reorder");
    if (!st) st = dn_check(dnnl_stream_wait(s->stream), "reorder");
  }
  dnnl_memory_destroy(sm);
  dnnl_memory_destroy(dm);
  dnnl_primitive_destroy(prim);
  dnnl_primitive_desc_destroy(pd);
  return st;
}

ait_status dn_value_in(dn_ctx *c, int v, const dnnl_memory_desc_t *want, int *mem) {
  int base;
  AIT_TRY(dn_value_any(c, v, &base));
  const dn_mem *bm = &c->p->mems[base];
  if (bm->md.ndims == 0)
    return ait_err(AIT_E_DTYPE, "onednn: value '%s' is %s, which oneDNN does not take",
                   c->s->g->values[v].name, ait_dtype_name(bm->dt));
  if (dnnl_memory_desc_equal(&bm->md, want)) return *mem = base, AIT_OK;
  int m = reo_find(c->p, v, want);
  if (m >= 0) return *mem = m, AIT_OK;
  if (c->p->pv[v].host) { /* constant data: reorder once, now */
    size_t size = dnnl_memory_desc_get_size(want);
    int b = dn_buf_new(c->p, DN_BUF_FIXED, (int64_t)size);
    if (b < 0) return AIT_E_NOMEM;
    if (!(c->p->bufs[b].ptr = aligned(size))) return ait_err(AIT_E_NOMEM, "out of memory");
    c->p->bufs[b].owns = true;
    AIT_TRY(dn_reorder_now(c->s, &bm->md, c->p->bufs[bm->buf].ptr, want, c->p->bufs[b].ptr));
    if ((m = dn_mem_new(c, want, b)) < 0) return AIT_E_NOMEM;
  } else {
    if ((m = dn_mem_alloc(c, want)) < 0) return AIT_E_NOMEM;
    dnnl_primitive_desc_t pd = NULL;
    AIT_TRY(dn_check(dnnl_reorder_primitive_desc_create(&pd, &c->p->mems[base].md, c->s->eng, want,
                                                        c->s->eng, NULL),
                     "reorder"));
    int ids[2] = {DNNL_ARG_FROM, DNNL_ARG_TO}, mems[2] = {base, m};
    ait_status st = dn_step_prim(c, pd, 2, ids, mems);
    dnnl_primitive_desc_destroy(pd);
    AIT_TRY(st);
    /* the copy lives as long as the value */
    dn_buf *b = &c->p->bufs[c->p->mems[m].buf];
    if (c->s->last_use[v] > b->last_reader) b->last_reader = c->s->last_use[v];
  }
  AIT_TRY(reo_add(c->p, v, m));
  return *mem = m, AIT_OK;
}

ait_status dn_value_dense(dn_ctx *c, int v, bool plain, dnnl_data_type_t dt, int *mem) {
  int base = 0; /* set by dn_value_any (GCC cannot tell once it inlines it) */
  AIT_TRY(dn_value_any(c, v, &base));
  const dn_mem *bm = &c->p->mems[base];
  if (bm->md.ndims == 0) return *mem = base, AIT_OK;
  bool ok = plain ? dn_md_is_plain_dense(&bm->md) : dn_md_is_dense(&bm->md);
  if (ok && (dt == dnnl_data_type_undef || dt == bm->md.data_type)) return *mem = base, AIT_OK;
  dnnl_memory_desc_t want;
  dnnl_data_type_t d = dt == dnnl_data_type_undef ? bm->md.data_type : dt;
  if (ok) {
    want = dn_md_with_dt(&bm->md, d);
  } else {
    const dn_pval *pv = &c->p->pv[v];
    AIT_TRY(dn_md_plain(&want, pv->rank, pv->dims, d));
  }
  return dn_value_in(c, v, &want, mem);
}

/* The reordered copy of const slot `slot` in layout md, made once; the
 * cache is shared with the state's clones, which may plan at the same time:
 * looked up and filled under its lock (entries are never freed before it). */
static ait_status weights_cached(dn_state *s, int slot, const dnnl_memory_desc_t *plain,
                                 const dnnl_memory_desc_t *md, void **out) {
  dn_shared *sh = s->sh;
  void *data = NULL;
  for (int i = 0; i < sh->n_wc && !data; i++)
    if (sh->wc[i].slot == slot && dnnl_memory_desc_equal(&sh->wc[i].md, md)) data = sh->wc[i].data;
  if (data) return *out = data, AIT_OK;
  if (sh->n_wc == sh->cap_wc) {
    int cap = sh->cap_wc ? 2 * sh->cap_wc : 32;
    dn_wentry *w = realloc(sh->wc, (size_t)cap * sizeof *w);
    if (!w) return ait_err(AIT_E_NOMEM, "out of memory");
    sh->wc = w, sh->cap_wc = cap;
  }
  size_t size = dnnl_memory_desc_get_size(md);
  if (!(data = aligned(size))) return ait_err(AIT_E_NOMEM, "out of memory for weights");
  ait_status st = dn_reorder_now(s, plain, s->slots[slot].t->data, md, data);
  if (st) {
    free(data);
    return st;
  }
  sh->wc[sh->n_wc++] = (dn_wentry){slot, *md, data, size};
  return *out = data, AIT_OK;
}

ait_status dn_weights(dn_ctx *c, int slot, const dnnl_memory_desc_t *plain,
                      const dnnl_memory_desc_t *md, int *mem) {
  dn_state *s = c->s;
  void *data = NULL;
  if (dnnl_memory_desc_equal(plain, md)) data = s->slots[slot].t->data;
  if (!data) {
    pthread_mutex_lock(s->sh->lock);
    ait_status st = weights_cached(s, slot, plain, md, &data);
    pthread_mutex_unlock(s->sh->lock);
    AIT_TRY(st);
  }
  int b = dn_buf_new(c->p, DN_BUF_FIXED, (int64_t)dnnl_memory_desc_get_size(md));
  if (b < 0) return AIT_E_NOMEM;
  c->p->bufs[b].ptr = data;
  if ((*mem = dn_mem_new(c, md, b)) < 0) return AIT_E_NOMEM;
  return AIT_OK;
}

/* ---- steps ----------------------------------------------------------------- */

ait_status dn_step_add(dn_plan *p, dn_step **out) {
  if (p->n_steps == p->cap_steps) {
    int cap = p->cap_steps ? 2 * p->cap_steps : 64;
    dn_step *st = realloc(p->steps, (size_t)cap * sizeof *st);
    if (!st) return ait_err(AIT_E_NOMEM, "out of memory");
    p->steps = st, p->cap_steps = cap;
  }
  *out = &p->steps[p->n_steps++];
  memset(*out, 0, sizeof **out);
  (*out)->out_mem = (*out)->src_mem = -1;
  return AIT_OK;
}

ait_status dn_step_prim(dn_ctx *c, dnnl_primitive_desc_t pd, int n, const int *ids,
                        const int *mems) {
  const dnnl_memory_desc_t *sp = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  int64_t sp_size = sp ? (int64_t)dnnl_memory_desc_get_size(sp) : 0;
  dnnl_primitive_t prim = NULL;
  AIT_TRY(dn_check(dnnl_primitive_create(&prim, pd), "primitive creation"));
  dn_step *st = NULL; /* set by dn_step_add (GCC cannot tell once it inlines it) */
  ait_status s = dn_step_add(c->p, &st);
  if (s) {
    dnnl_primitive_destroy(prim);
    return s;
  }
  st->kind = DN_STEP_PRIM;
  st->prim = prim;
  st->op = c->op;
  int total = n + (sp_size > 0);
  st->arg_ids = malloc((size_t)total * sizeof *st->arg_ids);
  st->arg_mems = malloc((size_t)total * sizeof *st->arg_mems);
  st->xargs = malloc((size_t)total * sizeof *st->xargs);
  if (!st->arg_ids || !st->arg_mems || !st->xargs) return ait_err(AIT_E_NOMEM, "out of memory");
  for (int i = 0; i < n; i++)
    st->arg_ids[i] = ids[i], st->arg_mems[i] = mems[i];
  if (sp_size > 0) {
    st->arg_ids[n] = DNNL_ARG_SCRATCHPAD, st->arg_mems[n] = -2; /* the plan's scratchpad */
    if (sp_size > c->p->scratch_bytes) c->p->scratch_bytes = sp_size;
  }
  st->n_args = total;
  return AIT_OK;
}
