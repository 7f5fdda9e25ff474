/* Build-time folding. Nodes whose inputs are all constant run once with
 * the reference kernel. BatchNormalization and per-channel Mul/Add/Sub/Div
 * constants after a Conv fold into its weights and bias; a constant Add
 * after MatMul/Gemm becomes the primitive's bias. Folded tensors are new
 * owned slots; the graph's initializers are never modified. Which nodes
 * fold and the BatchNormalization arithmetic are the shared ones
 * (src/ir/passes/passes.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/onednn/onednn.h"
#include "ir/passes/passes.h"
#include "runtime/eager.h"

ait_status dn_fold_constants(dn_state *s) {
  const ait_graph *g = s->g;
  for (int i = 0; i < g->n_nodes; i++) {
    const ait_node *n = &g->nodes[i];
    if (n->n_out < 1 || n->out[0] < 0 || s->vclass[n->out[0]] != DN_V_CONST) continue;
    /* Identity of a constant shares its tensor (BERT ties weights this way) */
    if ((!strcmp(n->op_type, "Identity") || !strcmp(n->op_type, "Dropout")) && n->n_in >= 1 &&
        n->in[0] >= 0 && s->vslot[n->in[0]] >= 0) {
      s->vslot[n->out[0]] = s->vslot[n->in[0]];
      continue;
    }
    const ait_tensor *in[16] = {0};
    ait_tensor *out[16] = {0};
    if (n->n_in > 16 || n->n_out > 16)
      return ait_err(AIT_E_UNSUPPORTED, "onednn: %s has too many inputs to fold", ait_node_desc(n));
    for (int k = 0; k < n->n_in; k++)
      in[k] = n->in[k] >= 0 ? s->slots[s->vslot[n->in[k]]].t : NULL;
    ait_status st = ait_eager_run_node(n, in, n->n_in, out);
    if (st) return ait_err_prefix(st, "onednn: folding %s", ait_node_desc(n));
    for (int k = 0; k < n->n_out; k++) {
      if (!out[k]) continue;
      if (n->out[k] < 0 || out[k]->kind != AIT_KIND_TENSOR) {
        ait_tensor_free(out[k]);
        continue;
      }
      s->vslot[n->out[k]] = dn_slot_add(s, out[k], true);
      if (s->vslot[n->out[k]] < 0) {
        for (int j = k + 1; j < n->n_out; j++)
          ait_tensor_free(out[j]);
        return AIT_E_NOMEM;
      }
    }
  }
  return AIT_OK;
}

static const float *slot_f32(const dn_state *s, int slot) {
  const ait_tensor *t = slot >= 0 ? s->slots[slot].t : NULL;
  return t && t->dtype == AIT_FLOAT32 ? t->data : NULL;
}

/* Per-channel values of constant v for a result of rank r with oc channels
 * on axis 1: scalar or shaped [oc,1..] / [1,oc,1..]. NULL when not. */
static const float *per_channel(const dn_state *s, int v, int r, int64_t oc, bool *scalar) {
  int slot = v >= 0 ? s->vslot[v] : -1;
  const ait_tensor *t = slot >= 0 ? s->slots[slot].t : NULL;
  if (!t || t->dtype != AIT_FLOAT32 || t->rank > r) return NULL;
  *scalar = ait_tensor_numel(t) == 1;
  if (*scalar) return t->data;
  int ch = 1 - (r - t->rank); /* the tensor's axis that lines up with channels */
  if (ch < 0) return NULL;
  for (int k = 0; k < t->rank; k++)
    if (t->dims[k] != (k == ch ? oc : 1)) return NULL;
  return t->data;
}

/* New owned float32 copy of slot (or zeros of n when slot < 0). */
static ait_tensor *copy_or_zeros(const dn_state *s, int slot, int64_t n) {
  if (slot < 0) return ait_tensor_new(AIT_FLOAT32, 1, &n);
  const ait_tensor *t = s->slots[slot].t;
  ait_tensor *c = ait_tensor_new(AIT_FLOAT32, t->rank, t->dims);
  if (c) memcpy(c->data, t->data, ait_tensor_nbytes(t));
  return c;
}

/* W[oc,...] *= mul[oc]; b[oc] = b[oc] * mul[oc] + add[oc] (NULL = 1 / 0). */
static ait_status affine(dn_state *s, dn_op *op, const float *mul, bool mul_scalar,
                         const float *add, bool add_scalar) {
  const ait_tensor *w = s->slots[op->w].t;
  int64_t oc = w->dims[0], per = ait_tensor_numel(w) / oc;
  ait_tensor *nw = mul ? copy_or_zeros(s, op->w, 0) : NULL;
  ait_tensor *nb = copy_or_zeros(s, op->b, oc);
  if ((mul && !nw) || !nb) {
    ait_tensor_free(nw), ait_tensor_free(nb);
    return AIT_E_NOMEM;
  }
  float *wd = nw ? nw->data : NULL, *bd = nb->data;
  for (int64_t c = 0; c < oc; c++) {
    float m = mul ? mul[mul_scalar ? 0 : c] : 1.f, a = add ? add[add_scalar ? 0 : c] : 0.f;
    for (int64_t j = 0; wd && j < per; j++)
      wd[c * per + j] *= m;
    bd[c] = bd[c] * m + a;
  }
  if (nw && (op->w = dn_slot_add(s, nw, true)) < 0) {
    ait_tensor_free(nb);
    return AIT_E_NOMEM;
  }
  if ((op->b = dn_slot_add(s, nb, true)) < 0) return AIT_E_NOMEM;
  return AIT_OK;
}

static ait_status fold_bn(dn_state *s, dn_op *op, const ait_node *n, bool *folded) {
  const ait_tensor *w = s->slots[op->w].t;
  int64_t oc = w->dims[0];
  const float *p[4];
  for (int k = 0; k < 4; k++) {
    int v = n->in[k + 1], slot = v >= 0 ? s->vslot[v] : -1;
    p[k] = slot_f32(s, slot);
    if (!p[k] || ait_tensor_numel(s->slots[slot].t) != oc) return AIT_OK;
  }
  float eps = ait_attr_float(n, "epsilon", 1e-5f);
  float *mul = malloc((size_t)oc * sizeof *mul), *add = malloc((size_t)oc * sizeof *add);
  if (!mul || !add) {
    free(mul), free(add);
    return ait_err(AIT_E_NOMEM, "out of memory");
  }
  /* y = (x - mean) * gamma / sqrt(var + eps) + beta as x * mul + add */
  ait_bn_fold(NULL, oc, 1, NULL, p[0], p[1], p[2], p[3], eps, mul, add);
  ait_status st = affine(s, op, mul, false, add, false);
  free(mul), free(add);
  if (!st) *folded = true;
  return st;
}

ait_status dn_fold_into_conv(dn_state *s, dn_op *op, const ait_node *n, bool *folded) {
  *folded = false;
  if (op->w < 0 || op->n_post > 0 || n->domain[0]) return AIT_OK;
  const ait_tensor *w = s->slots[op->w].t;
  if (w->dtype != AIT_FLOAT32) return AIT_OK;
  for (int k = 1; k < n->n_out; k++)
    if (n->out[k] >= 0 && dn_value_uses(s->g, n->out[k]) > 0) return AIT_OK;
  if (!strcmp(n->op_type, "BatchNormalization")) {
    if (n->n_in < 5 || !ait_bn_is_inference(n) || n->in[0] != op->out) return AIT_OK;
    return fold_bn(s, op, n, folded);
  }
  bool add = !strcmp(n->op_type, "Add"), sub = !strcmp(n->op_type, "Sub");
  bool mul = !strcmp(n->op_type, "Mul"), div = !strcmp(n->op_type, "Div");
  if (!(add || sub || mul || div) || n->n_in != 2) return AIT_OK;
  bool first = n->in[0] == op->out;
  int other = first ? n->in[1] : n->in[0];
  if ((sub || div) && !first) return AIT_OK;
  bool scalar;
  const float *c = per_channel(s, other, w->rank, w->dims[0], &scalar);
  if (!c) return AIT_OK;
  int64_t cnt = scalar ? 1 : w->dims[0];
  float *tmp = malloc((size_t)cnt * sizeof *tmp);
  if (!tmp) return ait_err(AIT_E_NOMEM, "out of memory");
  for (int64_t i = 0; i < cnt; i++)
    tmp[i] = sub ? -c[i] : div ? 1.f / c[i] : c[i];
  if (div) /* 1/c is inexact unless c is a power of two */
    for (int64_t i = 0; i < cnt; i++) {
      int ex;
      if (fabsf(frexpf(c[i], &ex)) != 0.5f) {
        free(tmp);
        return AIT_OK;
      }
    }
  ait_status st = add || sub ? affine(s, op, NULL, false, tmp, scalar)
                             : affine(s, op, tmp, scalar, NULL, false);
  free(tmp);
  if (!st) *folded = true;
  return st;
}

ait_status dn_fold_into_matmul(dn_state *s, dn_op *op, const ait_node *n, bool *folded) {
  *folded = false;
  if (op->w < 0 || op->b >= 0 || op->n_post > 0 || op->trans_b || n->domain[0]) return AIT_OK;
  if (strcmp(n->op_type, "Add") || n->n_in != 2) return AIT_OK;
  int other = n->in[0] == op->out ? n->in[1] : n->in[0];
  int slot = other >= 0 ? s->vslot[other] : -1;
  const ait_tensor *w = s->slots[op->w].t, *c = slot >= 0 ? s->slots[slot].t : NULL;
  if (!c || c->dtype != AIT_FLOAT32 || w->rank != 2) return AIT_OK;
  int64_t N = w->dims[1];
  if (c->rank < 1 || c->dims[c->rank - 1] != N || ait_tensor_numel(c) != N) return AIT_OK;
  /* the bias must not widen the result's rank */
  const ait_value *ov = &s->g->values[op->out];
  if (ov->rank < 0 || c->rank > ov->rank) return AIT_OK;
  op->b = slot;
  *folded = true;
  return AIT_OK;
}
