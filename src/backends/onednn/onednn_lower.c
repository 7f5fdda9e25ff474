/* Lowering: the graph becomes a list of ops, one per oneDNN primitive (plus
 * views, host glue and per-signature shape arithmetic). A primitive's op
 * absorbs what follows it when that can run inside it: BatchNormalization
 * and per-channel constants fold into Conv weights, bias Adds become the
 * primitive's bias, activations and residual/broadcast binaries become
 * post-ops (onednn_fuse.c). An op runs where its last node was, so every
 * operand of an absorbed node is ready by then. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/onednn/onednn.h"

int dn_slot_add(dn_state *s, ait_tensor *t, bool owned) {
  if (s->n_slots == s->cap_slots) {
    int cap = s->cap_slots ? 2 * s->cap_slots : 64;
    dn_slot *n = realloc(s->slots, (size_t)cap * sizeof *n);
    if (!n) {
      if (owned) ait_tensor_free(t);
      ait_err(AIT_E_NOMEM, "out of memory");
      return -1;
    }
    s->slots = n, s->cap_slots = cap;
  }
  s->slots[s->n_slots] = (dn_slot){t, owned};
  return s->n_slots++;
}

ait_status dn_op_add_node(dn_op *op, int node) {
  int *n = realloc(op->nodes, (size_t)(op->n_nodes + 1) * sizeof *n);
  if (!n) return ait_err(AIT_E_NOMEM, "out of memory");
  op->nodes = n;
  op->nodes[op->n_nodes++] = node;
  return AIT_OK;
}

static void op_clear(dn_op *op) {
  free(op->nodes);
  free(op->ins);
  free(op->ext);
}

void dn_ops_free(dn_state *s) {
  for (int i = 0; i < s->n_ops; i++)
    op_clear(&s->ops[i]);
  free(s->ops);
  s->ops = NULL;
  s->n_ops = s->cap_ops = 0;
}

static dn_op new_op(dn_kind kind, int node, const ait_node *n) {
  dn_op op;
  memset(&op, 0, sizeof op);
  op.kind = kind;
  op.node = node;
  op.in[0] = n->n_in > 0 ? n->in[0] : -1;
  op.in[1] = -1;
  op.out = n->out[0];
  op.w = op.b = op.scale = op.shift = op.mean = op.var = -1;
  return op;
}

static int slot_of(const dn_state *s, int v) { return v >= 0 ? s->vslot[v] : -1; }

typedef ait_status (*fold_fn)(dn_state *s, dn_op *op, const ait_node *n, bool *folded);

/* Absorb the single readers of op's output that fold into its constants
 * (BatchNorm and per-channel affine into Conv, a bias into MatMul). */
static ait_status absorb_folds(dn_state *s, dn_op *op, bool *taken, int *pos, fold_fn fold) {
  const ait_graph *g = s->g;
  for (;;) {
    int v = op->out;
    if (dn_is_graph_output(g, v) || dn_value_uses(g, v) != 1) break;
    int c = -1;
    for (int i = 0; i < g->n_nodes && c < 0; i++)
      for (int k = 0; k < g->nodes[i].n_in; k++)
        if (g->nodes[i].in[k] == v) c = i;
    if (c < 0 || taken[c]) break;
    bool folded = false;
    AIT_TRY(fold(s, op, &g->nodes[c], &folded));
    if (!folded) break;
    AIT_TRY(dn_op_add_node(op, c));
    taken[c] = true;
    op->out = g->nodes[c].out[0];
    *pos = c;
  }
  return AIT_OK;
}

/* A new owned float32 slot holding k * slot. */
static int scaled_slot(dn_state *s, int slot, float k) {
  const ait_tensor *t = s->slots[slot].t;
  ait_tensor *n = t->dtype == AIT_FLOAT32 ? ait_tensor_new(AIT_FLOAT32, t->rank, t->dims) : NULL;
  if (!n) return -1;
  for (int64_t i = 0; i < ait_tensor_numel(t); i++)
    ((float *)n->data)[i] = k * ((const float *)t->data)[i];
  return dn_slot_add(s, n, true);
}

/* Gemm: Y = alpha * A B + beta * C. alpha folds into constant B, beta into
 * constant C (the bias when shaped [N] or [1,N], else a binary post-op);
 * a computed C with beta != 1 gives beta * (alpha/beta * A B + C). */
static ait_status lower_gemm(dn_state *s, dn_op *op, const ait_node *n) {
  float alpha = ait_attr_float(n, "alpha", 1.f), beta = ait_attr_float(n, "beta", 1.f);
  op->trans_a = ait_attr_int(n, "transA", 0) != 0;
  op->trans_b = ait_attr_int(n, "transB", 0) != 0;
  int c = n->n_in > 2 && beta != 0.f ? n->in[2] : -1, cs = slot_of(s, c);
  float pre = alpha, after = 1.f;
  if (op->w >= 0 && alpha != 1.f) {
    if ((op->w = scaled_slot(s, op->w, alpha)) < 0) return ait_err(AIT_E_NOMEM, "out of memory");
    pre = 1.f;
  }
  if (c >= 0 && cs < 0 && beta != 1.f) pre /= beta, after = beta;
  if (cs >= 0 && beta != 1.f && (cs = scaled_slot(s, cs, beta)) < 0)
    return ait_err(AIT_E_NOMEM, "out of memory");
  if (pre != 1.f)
    op->post[op->n_post++] =
        (dn_post){.e = {dnnl_eltwise_linear, pre, 0.f}, .operand = -1, .oslot = -1};
  if (cs >= 0) {
    const ait_tensor *ct = s->slots[cs].t;
    bool bias_shape = ct->rank == 1 || (ct->rank == 2 && ct->dims[0] == 1);
    if (bias_shape && op->n_post == 0 && ait_tensor_numel(ct) > 1)
      op->b = cs;
    else
      op->post[op->n_post++] =
          (dn_post){.binary = true, .alg = dnnl_binary_add, .operand = -1, .oslot = cs};
  } else if (c >= 0) {
    op->post[op->n_post++] =
        (dn_post){.binary = true, .alg = dnnl_binary_add, .operand = c, .oslot = -1};
  }
  if (after != 1.f)
    op->post[op->n_post++] =
        (dn_post){.e = {dnnl_eltwise_linear, after, 0.f}, .operand = -1, .oslot = -1};
  return AIT_OK;
}

static dnnl_alg_kind_t pool_alg(const ait_node *n) {
  if (!strcmp(n->op_type, "MaxPool") || !strcmp(n->op_type, "GlobalMaxPool"))
    return dnnl_pooling_max;
  if (!strcmp(n->op_type, "AveragePool") && ait_attr_int(n, "count_include_pad", 0))
    return dnnl_pooling_avg_include_padding;
  return dnnl_pooling_avg_exclude_padding;
}

/* A binary node with one constant scalar operand as an eltwise step on the
 * other; false when it is not one. */
static bool scalar_binary(const ait_graph *g, const ait_node *n, int *x, dn_elt *e) {
  float c;
  bool first;
  if (n->n_in != 2) return false;
  if (dn_const_scalar(g, n->in[1], &c))
    first = true;
  else if (dn_const_scalar(g, n->in[0], &c))
    first = false;
  else
    return false;
  *x = first ? n->in[0] : n->in[1];
  const char *op = n->op_type;
  if (!strcmp(op, "Add"))
    *e = (dn_elt){dnnl_eltwise_linear, 1.f, c};
  else if (!strcmp(op, "Sub"))
    *e = first ? (dn_elt){dnnl_eltwise_linear, 1.f, -c} : (dn_elt){dnnl_eltwise_linear, -1.f, c};
  else if (!strcmp(op, "Mul"))
    *e = (dn_elt){dnnl_eltwise_linear, c, 0.f};
  else if (!strcmp(op, "Div"))
    *e = first ? (dn_elt){dnnl_eltwise_linear, 1.f / c, 0.f} : (dn_elt){dnnl_eltwise_pow, c, -1.f};
  else if (!strcmp(op, "Max"))
    *e = (dn_elt){dnnl_eltwise_clip_v2, c, FLT_MAX};
  else if (!strcmp(op, "Min"))
    *e = (dn_elt){dnnl_eltwise_clip_v2, -FLT_MAX, c};
  else
    return false;
  /* 1/c is not exact: keep Div by a non-power-of-two as a real division */
  if (!strcmp(op, "Div") && first) {
    int ex;
    float m = frexpf(c, &ex);
    if (m != 0.5f && m != -0.5f) return false;
  }
  return true;
}

dnnl_alg_kind_t dn_binary_alg(const char *op) {
  if (!strcmp(op, "Add")) return dnnl_binary_add;
  if (!strcmp(op, "Sub")) return dnnl_binary_sub;
  if (!strcmp(op, "Mul")) return dnnl_binary_mul;
  if (!strcmp(op, "Div")) return dnnl_binary_div;
  if (!strcmp(op, "Max")) return dnnl_binary_max;
  if (!strcmp(op, "Min")) return dnnl_binary_min;
  return dnnl_alg_kind_undef;
}

/* The op for node i (not absorbed by an earlier op). */
static ait_status lower_node(dn_state *s, int i, bool *taken, dn_op *op, int *pos) {
  const ait_graph *g = s->g;
  const ait_node *n = &g->nodes[i];
  bool chain = true;
  *pos = i;
  if (n->n_out > 0 && n->out[0] >= 0 && s->vclass[n->out[0]] == DN_V_STATIC) {
    *op = new_op(DN_STATIC, i, n);
    return dn_op_add_node(op, i);
  }
  dn_elt e[2];
  int cnt = 0, x;
  switch (dn_op_kind(n)) {
  case DN_K_CONV:
    *op = new_op(DN_CONV, i, n);
    op->w = slot_of(s, n->in[1]);
    op->b = n->n_in > 2 ? slot_of(s, n->in[2]) : -1;
    if (op->w < 0 || (n->n_in > 2 && n->in[2] >= 0 && op->b < 0))
      return ait_err(AIT_E_UNSUPPORTED, "%s: weights and bias must be constant", ait_node_desc(n));
    AIT_TRY(dn_op_add_node(op, i));
    AIT_TRY(absorb_folds(s, op, taken, pos, dn_fold_into_conv));
    break;
  case DN_K_MATMUL:
  case DN_K_GEMM:
    *op = new_op(DN_MATMUL, i, n);
    AIT_TRY(dn_op_add_node(op, i));
    op->w = slot_of(s, n->in[1]);
    if (op->w < 0) op->in[1] = n->in[1];
    if (dn_op_kind(n) == DN_K_GEMM)
      AIT_TRY(lower_gemm(s, op, n));
    else
      AIT_TRY(absorb_folds(s, op, taken, pos, dn_fold_into_matmul));
    break;
  case DN_K_POOL:
    *op = new_op(DN_POOL, i, n);
    op->alg = pool_alg(n);
    AIT_TRY(dn_op_add_node(op, i));
    break;
  case DN_K_UNARY:
    *op = new_op(DN_ELTWISE, i, n);
    if (!dn_unary_elts(g, n, e, &cnt)) {
      /* parameters computed at run time (a partition cut them off their
       * Constant): the reference kernel */
      op->kind = DN_HOST;
      chain = false;
      AIT_TRY(dn_op_add_node(op, i));
      break;
    }
    op->elt = e[0];
    for (int k = 1; k < cnt; k++)
      op->post[op->n_post++] = (dn_post){.e = e[k], .operand = -1, .oslot = -1};
    AIT_TRY(dn_op_add_node(op, i));
    break;
  case DN_K_BINARY:
    *op = new_op(DN_BINARY, i, n);
    AIT_TRY(dn_op_add_node(op, i));
    if (scalar_binary(g, n, &x, &e[0])) {
      op->kind = DN_ELTWISE;
      op->elt = e[0];
      op->in[0] = x;
    } else {
      op->alg = dn_binary_alg(n->op_type);
      op->in[1] = n->in[1];
    }
    break;
  case DN_K_SOFTMAX:
    *op = new_op(DN_SOFTMAX, i, n);
    op->axis = (int)ait_attr_int(n, "axis", n->opset >= 13 ? -1 : 1);
    op->alg = !strcmp(n->op_type, "LogSoftmax") ? dnnl_softmax_log : dnnl_softmax_accurate;
    AIT_TRY(dn_op_add_node(op, i));
    break;
  case DN_K_LNORM:
    *op = new_op(DN_LNORM, i, n);
    op->axis = (int)ait_attr_int(n, "axis", -1);
    op->eps = ait_attr_float(n, "epsilon", 1e-5f);
    op->scale = slot_of(s, n->in[1]);
    op->shift = n->n_in > 2 ? slot_of(s, n->in[2]) : -1;
    if (op->scale < 0 || (n->n_in > 2 && n->in[2] >= 0 && op->shift < 0))
      op->kind = DN_HOST, chain = false; /* parameters computed at run time */
    AIT_TRY(dn_op_add_node(op, i));
    break;
  case DN_K_BNORM:
    *op = new_op(DN_BNORM, i, n);
    op->eps = ait_attr_float(n, "epsilon", 1e-5f);
    op->scale = slot_of(s, n->in[1]);
    op->shift = slot_of(s, n->in[2]);
    op->mean = slot_of(s, n->in[3]);
    op->var = slot_of(s, n->in[4]);
    if (op->scale < 0 || op->shift < 0 || op->mean < 0 || op->var < 0)
      op->kind = DN_HOST, chain = false; /* parameters computed at run time */
    AIT_TRY(dn_op_add_node(op, i));
    break;
  case DN_K_CONCAT:
    *op = new_op(g->values[n->out[0]].dtype == AIT_FLOAT32 ? DN_CONCAT : DN_HOST, i, n);
    op->axis = (int)ait_attr_int(n, "axis", 0);
    op->ins = malloc((size_t)(n->n_in + 1) * sizeof *op->ins);
    if (!op->ins) return ait_err(AIT_E_NOMEM, "out of memory");
    for (int k = 0; k < n->n_in; k++)
      if (n->in[k] >= 0) op->ins[op->n_ins++] = n->in[k];
    AIT_TRY(dn_op_add_node(op, i));
    chain = op->kind == DN_CONCAT;
    break;
  case DN_K_VIEW:
    *op = new_op(DN_VIEW, i, n);
    chain = false;
    AIT_TRY(dn_op_add_node(op, i));
    break;
  case DN_K_TRANSPOSE:
    *op = new_op(DN_TRANSPOSE, i, n);
    chain = false;
    AIT_TRY(dn_op_add_node(op, i));
    break;
  case DN_K_HOST:
    *op = new_op(DN_HOST, i, n);
    chain = false;
    AIT_TRY(dn_op_add_node(op, i));
    break;
  case DN_K_NONE:
    return ait_err(AIT_E_UNSUPPORTED, "onednn: %s is not supported", ait_node_desc(n));
  }
  if (chain) AIT_TRY(dn_fuse_chain(s, op, taken, pos));
  return AIT_OK;
}

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

/* Values the op reads from outside itself, and the node order. */
static ait_status op_finish(const ait_graph *g, dn_op *op) {
  qsort(op->nodes, (size_t)op->n_nodes, sizeof *op->nodes, cmp_int);
  int cap = 0;
  for (int k = 0; k < op->n_nodes; k++)
    cap += g->nodes[op->nodes[k]].n_in;
  op->ext = malloc((size_t)(cap + 1) * sizeof *op->ext);
  if (!op->ext) return ait_err(AIT_E_NOMEM, "out of memory");
  for (int k = 0; k < op->n_nodes; k++) {
    const ait_node *n = &g->nodes[op->nodes[k]];
    for (int j = 0; j < n->n_in; j++) {
      int v = n->in[j];
      bool inner = false, seen = false;
      if (v < 0) continue;
      for (int q = 0; q < k && !inner; q++)
        for (int o = 0; o < g->nodes[op->nodes[q]].n_out; o++)
          inner |= g->nodes[op->nodes[q]].out[o] == v;
      for (int q = 0; q < op->n_ext; q++)
        seen |= op->ext[q] == v;
      if (!inner && !seen) op->ext[op->n_ext++] = v;
    }
  }
  return AIT_OK;
}

static ait_status lower_ops(dn_state *s, bool *taken, int *pos) {
  const ait_graph *g = s->g;
  for (int i = 0; i < g->n_nodes; i++) {
    if (taken[i]) continue;
    const ait_node *n = &g->nodes[i];
    dn_op *op = &s->ops[s->n_ops];
    memset(op, 0, sizeof *op);
    int nodes[8], nn, y;
    dn_elt e;
    taken[i] = true;
    if (n->n_in > 0 && n->in[0] >= 0 && s->vclass[n->in[0]] == DN_V_RUNTIME &&
        dn_match_pattern(s, n->in[0], taken, &e, nodes, &nn, &y)) {
      *op = new_op(DN_ELTWISE, i, n);
      op->elt = e;
      op->out = y;
      pos[s->n_ops] = i;
      s->n_ops++;
      for (int k = 0; k < nn; k++) {
        AIT_TRY(dn_op_add_node(op, nodes[k]));
        taken[nodes[k]] = true;
        if (nodes[k] > pos[s->n_ops - 1]) pos[s->n_ops - 1] = nodes[k];
      }
      AIT_TRY(dn_fuse_chain(s, op, taken, &pos[s->n_ops - 1]));
      continue;
    }
    s->n_ops++;
    ait_status st = lower_node(s, i, taken, op, &pos[s->n_ops - 1]);
    if (st) return ait_err_prefix(st, "onednn: lowering %s", ait_node_desc(n));
  }
  return AIT_OK;
}

ait_status dn_lower(dn_state *s) {
  const ait_graph *g = s->g;
  s->vclass = malloc((size_t)g->n_values + 1);
  s->vslot = malloc(((size_t)g->n_values + 1) * sizeof *s->vslot);
  s->last_use = malloc(((size_t)g->n_values + 1) * sizeof *s->last_use);
  bool *taken = calloc((size_t)g->n_nodes + 1, sizeof *taken);
  int *pos = malloc(((size_t)g->n_nodes + 1) * sizeof *pos);
  if (!s->vclass || !s->vslot || !s->last_use || !taken || !pos) {
    free(taken), free(pos);
    return ait_err(AIT_E_NOMEM, "out of memory");
  }
  dn_classify(g, s->vclass);
  for (int v = 0; v < g->n_values; v++) {
    s->vslot[v] = -1;
    if (s->vclass[v] == DN_V_CONST && g->values[v].producer < 0 &&
        (s->vslot[v] = dn_slot_add(s, g->values[v].init, false)) < 0) {
      free(taken), free(pos);
      return AIT_E_NOMEM;
    }
  }
  ait_status st = dn_fold_constants(s);
  for (int i = 0; i < g->n_nodes && !st; i++)
    taken[i] = g->nodes[i].n_out > 0 && g->nodes[i].out[0] >= 0 &&
               s->vclass[g->nodes[i].out[0]] == DN_V_CONST;
  /* pos has one entry per op; ops never outnumber nodes */
  if (!st) {
    s->cap_ops = g->n_nodes + 1;
    s->ops = calloc((size_t)s->cap_ops, sizeof *s->ops);
    if (!s->ops) st = ait_err(AIT_E_NOMEM, "out of memory");
  }
  if (!st) st = lower_ops(s, taken, pos);
  /* order ops by the position of their last node */
  for (int i = 1; i < s->n_ops && !st; i++) {
    dn_op op = s->ops[i];
    int p = pos[i], j = i - 1;
    for (; j >= 0 && pos[j] > p; j--)
      s->ops[j + 1] = s->ops[j], pos[j + 1] = pos[j];
    s->ops[j + 1] = op, pos[j + 1] = p;
  }
  for (int i = 0; i < s->n_ops && !st; i++)
    st = op_finish(g, &s->ops[i]);
  free(taken), free(pos);
  if (st) return st;
  for (int v = 0; v < g->n_values; v++)
    s->last_use[v] = -1;
  for (int i = 0; i < s->n_ops; i++) {
    const dn_op *op = &s->ops[i];
    for (int k = 0; k < op->n_ext; k++)
      s->last_use[op->ext[k]] = i;
  }
  for (int k = 0; k < g->n_outputs; k++)
    s->last_use[g->outputs[k]] = DN_NEVER;
  return AIT_OK;
}
