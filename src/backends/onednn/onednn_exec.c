/* Running a plan, and host steps: glue ops (Gather, Cast, Erf, non-float
 * Concat) and ops oneDNN refuses at some shapes run with the reference
 * kernels on plain float32 (or their own dtype) buffers, node by node over
 * the op's nodes. */
#include <stdlib.h>
#include <string.h>

#include "backends/onednn/onednn.h"
#include "runtime/eager.h"

ait_status dn_plan_host(dn_ctx *c, int op_index) {
  const dn_op *op = &c->s->ops[op_index];
  const ait_graph *g = c->s->g;
  dn_pval *y = &c->p->pv[op->out];
  int *in_mems = malloc((size_t)(op->n_ext + 1) * sizeof *in_mems);
  if (!in_mems) return ait_err(AIT_E_NOMEM, "out of memory");
  ait_status st = AIT_OK;
  for (int k = 0; k < op->n_ext && !st; k++) {
    int v = op->ext[k];
    in_mems[k] = -1;
    if (c->p->pv[v].host) continue;
    st = dn_value_dense(c, v, true, dn_dt(g->values[v].dtype), &in_mems[k]);
  }
  int64_t bytes = ait_shape_numel(y->rank, y->dims) * (int64_t)ait_elem_size(y->dt);
  int b = st ? -1 : dn_buf_new(c->p, DN_BUF_ARENA, bytes);
  int m = b < 0 ? -1 : dn_mem_host(c, y->dt, y->rank, y->dims, b);
  dn_step *step = NULL;
  if (!st && m < 0) st = AIT_E_NOMEM;
  if (!st) st = dn_step_add(c->p, &step);
  if (st) {
    free(in_mems);
    return st;
  }
  step->kind = DN_STEP_HOST;
  step->op = op_index;
  step->in_mems = in_mems;
  step->n_args = op->n_ext;
  step->out_mem = m;
  dn_set_value(c, op->out, m);
  return AIT_OK;
}

static void *mem_ptr(const dn_plan *p, int mem) { return p->bufs[p->mems[mem].buf].ptr; }

typedef struct host_vals {
  int n;
  int *value;
  ait_tensor **t;
  bool *owned;
} host_vals;

static const ait_tensor *host_find(const host_vals *h, int v) {
  for (int i = h->n - 1; i >= 0; i--)
    if (h->value[i] == v) return h->t[i];
  return NULL;
}

static void host_free(host_vals *h) {
  for (int i = 0; i < h->n; i++)
    if (h->owned[i]) ait_tensor_free(h->t[i]);
  free(h->value), free(h->t), free(h->owned);
}

static ait_status run_nodes(const dn_state *s, const dn_op *op, host_vals *h) {
  const ait_graph *g = s->g;
  for (int q = 0; q < op->n_nodes; q++) {
    const ait_node *n = &g->nodes[op->nodes[q]];
    const ait_tensor *in[32] = {0};
    ait_tensor *out[32] = {0};
    if (n->n_in > 32 || n->n_out > 32)
      return ait_err(AIT_E_UNSUPPORTED, "onednn: %s has too many inputs", ait_node_desc(n));
    for (int k = 0; k < n->n_in; k++)
      in[k] = n->in[k] >= 0 ? host_find(h, n->in[k]) : NULL;
    ait_status st = ait_eager_run_node(n, in, n->n_in, out);
    if (st) return ait_err_prefix(st, "onednn: %s", ait_node_desc(n));
    for (int k = 0; k < n->n_out; k++) {
      if (!out[k]) continue;
      if (n->out[k] < 0) {
        ait_tensor_free(out[k]);
        continue;
      }
      h->value[h->n] = n->out[k], h->t[h->n] = out[k], h->owned[h->n++] = true;
    }
  }
  return AIT_OK;
}

static ait_status run_host(const dn_state *s, const dn_plan *p, const dn_step *step) {
  const dn_op *op = &s->ops[step->op];
  const ait_graph *g = s->g;
  int cap = op->n_ext + 1;
  for (int q = 0; q < op->n_nodes; q++)
    cap += g->nodes[op->nodes[q]].n_out;
  host_vals h = {0, malloc((size_t)cap * sizeof(int)), malloc((size_t)cap * sizeof(ait_tensor *)),
                 malloc((size_t)cap * sizeof(bool))};
  ait_status st = h.value && h.t && h.owned ? AIT_OK : ait_err(AIT_E_NOMEM, "out of memory");
  for (int k = 0; k < op->n_ext && !st; k++) {
    int v = op->ext[k];
    const dn_pval *pv = &p->pv[v];
    ait_tensor *t = pv->host;
    bool owned = false;
    if (step->in_mems[k] >= 0) {
      t = ait_tensor_wrap(g->values[v].dtype != AIT_UNDEFINED ? g->values[v].dtype : pv->dt,
                          pv->rank, pv->dims, mem_ptr(p, step->in_mems[k]));
      owned = true;
      if (!t) st = AIT_E_NOMEM;
    }
    h.value[h.n] = v, h.t[h.n] = t, h.owned[h.n++] = owned;
  }
  if (!st) st = run_nodes(s, op, &h);
  const ait_tensor *r = st ? NULL : host_find(&h, op->out);
  const dn_pval *y = &p->pv[op->out];
  if (!st && (!r || r->dtype != y->dt || r->rank != y->rank ||
              memcmp(r->dims, y->dims, (size_t)y->rank * sizeof *y->dims)))
    st = ait_err(AIT_E_SHAPE, "onednn: %s produced a shape other than planned",
                 ait_node_desc(&g->nodes[op->node]));
  if (!st) memcpy(mem_ptr(p, step->out_mem), r->data, ait_tensor_nbytes(r));
  host_free(&h);
  return st;
}

ait_status dn_plan_run(dn_state *s, dn_plan *p, const ait_tensor *const *in, int n_in,
                       ait_tensor **out) {
  const ait_graph *g = s->g;
  for (int k = 0; k < g->n_outputs; k++) {
    const dn_pval *pv = &p->pv[g->outputs[k]];
    if (!(out[k] = ait_tensor_new(pv->dt, pv->rank, pv->dims))) return AIT_E_NOMEM;
  }
  for (int i = 0; i < p->n_bufs; i++) {
    dn_buf *b = &p->bufs[i];
    if (b->kind == DN_BUF_INPUT) b->ptr = in[b->io]->data;
    if (b->kind == DN_BUF_OUTPUT) b->ptr = out[b->io]->data;
  }
  for (int i = 0; i < p->n_mems; i++) {
    const dn_buf *b = &p->bufs[p->mems[i].buf];
    if (p->mems[i].m && (b->kind == DN_BUF_INPUT || b->kind == DN_BUF_OUTPUT))
      AIT_TRY(dn_check(dnnl_memory_set_data_handle(p->mems[i].m, b->ptr), "memory"));
  }
  for (int i = 0; i < p->n_steps; i++) {
    const dn_step *st = &p->steps[i];
    ait_status rc = AIT_OK;
    if (st->kind == DN_STEP_PRIM) {
      rc = dn_check(dnnl_primitive_execute(st->prim, s->stream, st->n_args, st->xargs),
                    "primitive execution");
      if (rc && st->op < s->n_ops)
        rc = ait_err_prefix(rc, "%s", ait_node_desc(&g->nodes[s->ops[st->op].node]));
    } else if (st->kind == DN_STEP_HOST) {
      rc = run_host(s, p, st);
    } else {
      const dn_mem *m = &p->mems[st->out_mem];
      size_t bytes = (size_t)ait_shape_numel(m->rank, m->dims) * ait_elem_size(m->dt);
      memcpy(mem_ptr(p, st->out_mem), mem_ptr(p, st->src_mem), bytes);
    }
    if (rc) return rc;
  }
  p->runs++;
  return dn_check(dnnl_stream_wait(s->stream), "stream");
}
