/* Shapes per input signature: the output shape of every op from its
 * inputs' shapes in this plan (and constant or shape-derived inputs such
 * as Reshape's target). Window geometry comes from the reference ops'
 * helper so that pads, auto_pad and ceil_mode mean exactly what eager
 * computes. */
#include <string.h>

#include "backends/onednn/onednn.h"
#include "ops/nn_impl.h"

static ait_status bcast(int ra, const int64_t *a, int rb, const int64_t *b, int *r, int64_t *out,
                        const ait_node *n) {
  ait_status st = ait_shape_broadcast(ra, a, rb, b, r, out);
  if (st) return ait_err_prefix(st, "onednn: %s", ait_node_desc(n));
  return AIT_OK;
}

static ait_status conv_shape(dn_ctx *c, const dn_op *op, const ait_node *n, int *rank,
                             int64_t *dims) {
  const dn_pval *x = &c->p->pv[op->in[0]];
  const ait_tensor *w = c->s->slots[op->w].t;
  if (x->rank < 3 || x->rank != w->rank)
    return ait_err(AIT_E_SHAPE, "onednn: %s: input rank %d, weights rank %d", ait_node_desc(n),
                   x->rank, w->rank);
  int64_t group = ait_attr_int(n, "group", 1);
  if (group < 1 || x->dims[1] != w->dims[1] * group || w->dims[0] % group)
    return ait_err(AIT_E_SHAPE, "onednn: %s: %lld input channels, weights %lld x group %lld",
                   ait_node_desc(n), (long long)x->dims[1], (long long)w->dims[1],
                   (long long)group);
  nn_win win;
  AIT_TRY(nn_win_conv(n, x->rank - 2, x->dims + 2, w->dims + 2, false, true, &win));
  *rank = x->rank;
  dims[0] = x->dims[0];
  dims[1] = w->dims[0];
  for (int k = 0; k < win.nsp; k++)
    dims[2 + k] = win.out[k];
  return AIT_OK;
}

static ait_status pool_shape(dn_ctx *c, const dn_op *op, const ait_node *n, int *rank,
                             int64_t *dims) {
  const dn_pval *x = &c->p->pv[op->in[0]];
  if (x->rank < 3)
    return ait_err(AIT_E_SHAPE, "onednn: %s: input rank %d", ait_node_desc(n), x->rank);
  *rank = x->rank;
  dims[0] = x->dims[0], dims[1] = x->dims[1];
  if (!strncmp(n->op_type, "Global", 6)) {
    for (int k = 2; k < x->rank; k++)
      dims[k] = 1;
    return AIT_OK;
  }
  nn_win win;
  AIT_TRY(nn_win_conv(n, x->rank - 2, x->dims + 2, NULL, ait_attr_int(n, "ceil_mode", 0) != 0,
                      nn_pool_has_dilations(n), &win));
  for (int k = 0; k < win.nsp; k++)
    dims[2 + k] = win.out[k];
  return AIT_OK;
}

/* Dims of value v in this plan (constants included). */
static void vdims(dn_ctx *c, int v, int *r, int64_t *d) {
  const dn_pval *pv = &c->p->pv[v];
  *r = pv->rank;
  memcpy(d, pv->dims, (size_t)pv->rank * sizeof *d);
}

static ait_status matmul_shape(dn_ctx *c, const dn_op *op, const ait_node *n, int *rank,
                               int64_t *dims) {
  int ra, rb;
  int64_t a[AIT_MAX_RANK], b[AIT_MAX_RANK];
  vdims(c, op->in[0], &ra, a);
  if (op->w >= 0) {
    const ait_tensor *w = c->s->slots[op->w].t;
    rb = w->rank;
    memcpy(b, w->dims, (size_t)rb * sizeof *b);
  } else {
    vdims(c, op->in[1], &rb, b);
  }
  if (ra < 2 || rb < 2)
    return ait_err(AIT_E_SHAPE, "onednn: %s: operands of rank %d and %d", ait_node_desc(n), ra, rb);
  int64_t m = op->trans_a ? a[ra - 1] : a[ra - 2], ka = op->trans_a ? a[ra - 2] : a[ra - 1];
  int64_t kb = op->trans_b ? b[rb - 1] : b[rb - 2], nn = op->trans_b ? b[rb - 2] : b[rb - 1];
  if (ka != kb)
    return ait_err(AIT_E_SHAPE, "onednn: %s: inner dims %lld and %lld differ", ait_node_desc(n),
                   (long long)ka, (long long)kb);
  AIT_TRY(bcast(ra - 2, a, rb - 2, b, rank, dims, n));
  dims[*rank] = m, dims[*rank + 1] = nn;
  *rank += 2;
  return AIT_OK;
}

static ait_status concat_shape(dn_ctx *c, const dn_op *op, const ait_node *n, int *rank,
                               int64_t *dims) {
  vdims(c, op->ins[0], rank, dims);
  int axis;
  AIT_TRY(ait_norm_axis(op->axis, *rank, &axis));
  for (int k = 1; k < op->n_ins; k++) {
    int r;
    int64_t d[AIT_MAX_RANK];
    vdims(c, op->ins[k], &r, d);
    for (int j = 0; j < r && r == *rank; j++)
      if (j != axis && d[j] != dims[j]) r = -1;
    if (r != *rank)
      return ait_err(AIT_E_SHAPE, "onednn: %s: input %d does not match input 0", ait_node_desc(n),
                     k);
    dims[axis] += d[axis];
  }
  return AIT_OK;
}

/* Host glue: Gather, Cast, Erf, Concat. */
static ait_status host_shape(dn_ctx *c, const dn_op *op, const ait_node *n, int *rank,
                             int64_t *dims, ait_dtype *dt) {
  *dt = c->p->pv[n->in[0]].dt;
  if (!strcmp(n->op_type, "Concat")) return concat_shape(c, op, n, rank, dims);
  vdims(c, n->in[0], rank, dims);
  if (!strcmp(n->op_type, "Cast")) *dt = (ait_dtype)ait_attr_int(n, "to", AIT_FLOAT32);
  if (strcmp(n->op_type, "Gather")) { /* elementwise: the inputs broadcast */
    for (int k = 1; k < n->n_in; k++) {
      int rb, ra = *rank;
      int64_t a[AIT_MAX_RANK], b[AIT_MAX_RANK];
      if (n->in[k] < 0 || dn_op_kind(n) != DN_K_UNARY) continue;
      memcpy(a, dims, (size_t)ra * sizeof *a);
      vdims(c, n->in[k], &rb, b);
      AIT_TRY(bcast(ra, a, rb, b, rank, dims, n));
    }
    return AIT_OK;
  }
  int ri, axis;
  int64_t idx[AIT_MAX_RANK], out[AIT_MAX_RANK];
  vdims(c, n->in[1], &ri, idx);
  AIT_TRY(ait_norm_axis(ait_attr_int(n, "axis", 0), *rank, &axis));
  if (*rank - 1 + ri > AIT_MAX_RANK)
    return ait_err(AIT_E_SHAPE, "onednn: %s: result rank too large", ait_node_desc(n));
  int r = 0;
  for (int k = 0; k < axis; k++)
    out[r++] = dims[k];
  for (int k = 0; k < ri; k++)
    out[r++] = idx[k];
  for (int k = axis + 1; k < *rank; k++)
    out[r++] = dims[k];
  memcpy(dims, out, (size_t)r * sizeof *dims);
  *rank = r;
  return AIT_OK;
}

ait_status dn_op_shape(dn_ctx *c, const dn_op *op, int *rank, int64_t *dims, ait_dtype *dt) {
  const ait_node *n = &c->s->g->nodes[op->node];
  int ra, rb;
  int64_t a[AIT_MAX_RANK], b[AIT_MAX_RANK];
  *dt = AIT_FLOAT32;
  switch (op->kind) {
  case DN_CONV: AIT_TRY(conv_shape(c, op, n, rank, dims)); break;
  case DN_MATMUL: AIT_TRY(matmul_shape(c, op, n, rank, dims)); break;
  case DN_POOL: AIT_TRY(pool_shape(c, op, n, rank, dims)); break;
  case DN_ELTWISE:
    vdims(c, op->in[0], rank, dims);
    if (dn_op_kind(n) == DN_K_BINARY) { /* x op scalar may broadcast the scalar's rank */
      vdims(c, n->in[0], &ra, a);
      vdims(c, n->in[1], &rb, b);
      AIT_TRY(bcast(ra, a, rb, b, rank, dims, n));
    }
    break;
  case DN_BINARY:
    vdims(c, op->in[0], &ra, a);
    vdims(c, op->in[1], &rb, b);
    AIT_TRY(bcast(ra, a, rb, b, rank, dims, n));
    break;
  case DN_SOFTMAX:
  case DN_LNORM:
  case DN_BNORM: vdims(c, op->in[0], rank, dims); break;
  case DN_CONCAT: AIT_TRY(concat_shape(c, op, n, rank, dims)); break;
  case DN_HOST: return host_shape(c, op, n, rank, dims, dt);
  default: return ait_err(AIT_E_INTERNAL, "onednn: no shape for op kind %d", (int)op->kind);
  }
  /* binary post-ops may broadcast the result further */
  for (int k = 0; k < op->n_post; k++) {
    if (!op->post[k].binary) continue;
    if (op->post[k].oslot >= 0) {
      const ait_tensor *t = c->s->slots[op->post[k].oslot].t;
      rb = t->rank;
      memcpy(b, t->dims, (size_t)rb * sizeof *b);
    } else {
      vdims(c, op->post[k].operand, &rb, b);
    }
    ra = *rank;
    memcpy(a, dims, (size_t)ra * sizeof *a);
    AIT_TRY(bcast(ra, a, rb, b, rank, dims, n));
  }
  return AIT_OK;
}
