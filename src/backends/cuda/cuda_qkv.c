/* One GEMM for the Q, K and V projections of attention (a rewrite of the
 * cuda backend's graph copy, after native's passes).
 *
 * BERT-style exporters write three products of one activation X:
 *
 *   q0 = X Wq + bq   k0 = X Wk + bk   v0 = X Wv + bv      (each [.., N])
 *   each then Reshape [B, S, H, D] -> Transpose -> attention
 *
 * Three GEMMs of N = 768 leave most of an H200 idle at BERT-base's sizes;
 * one of N = 3 * 768 fills it. The rewrite concatenates the weights
 * ([K, 3N]) and biases, runs one FusedMatMul into qkv [.., 3N] and splits it
 * (Split on the last axis) into the original q0, k0, v0. Where the plan then
 * fuses the attention, cu_find_attention absorbs the Split and the three
 * Reshapes too: the attention kernel reads Q, K and V in place from qkv
 * through strides, so the Split costs nothing; elsewhere the Split runs as
 * three strided copies.
 *
 * Only under qkv=on (the default), for 16-bit, fp8 and fp8wo storage with
 * attention=auto|on (the fused kernel's cases), and only for three products
 * of the same X with constant float32 weights of the same [K, N], the same
 * bias presence, no residual, activation or scale, each read once by a
 * Reshape whose result a Transpose reads once. */
#ifdef AIT_HAVE_CUDA

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_impl.h"
#include "ir/passes/passes.h"

/* Node i is a projection this rewrite takes. */
static bool projection(const nat_uses *u, int i) {
  const ait_graph *g = u->g;
  const ait_node *n = &g->nodes[i];
  bool fmm = ait_is_op_in(n, AIT_FUSED_DOMAIN, "FusedMatMul");
  if (u->dead[i] || (!fmm && !ait_is_op_in(n, "", "MatMul")) || n->n_in < 2 || n->out[0] < 0)
    return false;
  if (fmm && (ait_attr_float(n, "alpha", 1.0f) != 1.0f || ait_attr_str(n, "activation", "")[0] ||
              (n->n_in > 3 && n->in[3] >= 0)))
    return false;
  const ait_value *w = &g->values[n->in[1]];
  if (!nat_is_const(g, n->in[1]) || w->init->dtype != AIT_FLOAT32 || w->init->rank != 2)
    return false;
  if (fmm && n->n_in > 2 && n->in[2] >= 0) {
    const ait_value *b = &g->values[n->in[2]];
    if (!nat_is_const(g, n->in[2]) || b->init->dtype != AIT_FLOAT32 ||
        ait_tensor_numel(b->init) != w->init->dims[1])
      return false;
  }
  int y = n->out[0];
  const ait_value *yv = &g->values[y];
  if (u->uses[y] != 1 || u->is_out[y] || yv->rank < 2) return false;
  int r = u->consumer[y];
  if (!ait_is_op_in(&g->nodes[r], "", "Reshape") || g->nodes[r].in[0] != y) return false;
  int ro = g->nodes[r].out[0];
  return ro >= 0 && u->uses[ro] == 1 && !u->is_out[ro] &&
         ait_is_op_in(&g->nodes[u->consumer[ro]], "", "Transpose");
}

static bool has_bias(const ait_node *n) {
  return !strcmp(n->domain, AIT_FUSED_DOMAIN) && n->n_in > 2 && n->in[2] >= 0;
}

/* Projections j and i agree (same X, weight shape, bias presence). */
static bool same_kind(const ait_graph *g, int i, int j) {
  const ait_node *a = &g->nodes[i], *b = &g->nodes[j];
  const ait_tensor *wa = g->values[a->in[1]].init, *wb = g->values[b->in[1]].init;
  return a->in[0] == b->in[0] && wa->dims[0] == wb->dims[0] && wa->dims[1] == wb->dims[1] &&
         has_bias(a) == has_bias(b);
}

/* Concatenate along the last axis: [K, N] x 3 -> [K, 3N], or [N] x 3. */
static ait_tensor *concat3(ait_graph *g, const int *v) {
  const ait_tensor *t0 = g->values[v[0]].init;
  int64_t K = t0->rank == 2 ? t0->dims[0] : 1, N = t0->dims[t0->rank - 1];
  int64_t dims[2] = {K, 3 * N};
  ait_tensor *t = t0->rank == 2 ? ait_tensor_new(AIT_FLOAT32, 2, dims)
                                : ait_tensor_new(AIT_FLOAT32, 1, &dims[1]);
  if (!t) return NULL;
  float *d = t->data;
  for (int k = 0; k < 3; k++) {
    const float *s = g->values[v[k]].init->data;
    for (int64_t r = 0; r < K; r++)
      memcpy(d + r * 3 * N + k * N, s + r * N, sizeof(float) * (size_t)N);
  }
  return t;
}

/* Merge projections p[0..2] (node order) into p[0] + a Split; p[1], p[2]
 * become dead. */
static ait_status merge(nat_uses *u, const int *p) {
  ait_graph *g = u->g;
  int w[3], b[3], out[3];
  bool bias = has_bias(&g->nodes[p[0]]);
  for (int k = 0; k < 3; k++) {
    w[k] = g->nodes[p[k]].in[1];
    b[k] = bias ? g->nodes[p[k]].in[2] : -1;
    out[k] = g->nodes[p[k]].out[0];
  }
  ait_tensor *wt = concat3(g, w);
  if (!wt) return AIT_E_NOMEM;
  int wv = nat_add_initializer(g, g->values[w[0]].name, "_qkv", wt);
  if (wv < 0) return AIT_E_NOMEM;
  int bv = -1;
  if (bias) {
    ait_tensor *bt = concat3(g, b);
    if (!bt) return AIT_E_NOMEM;
    if ((bv = nat_add_initializer(g, g->values[b[0]].name, "_qkv", bt)) < 0) return AIT_E_NOMEM;
  }
  char name[512];
  snprintf(name, sizeof name, "%s_qkv", g->values[out[0]].name);
  for (int k = 2; ait_graph_find_value(g, name) >= 0; k++)
    snprintf(name, sizeof name, "%s_qkv_%d", g->values[out[0]].name, k);
  int qkv = ait_graph_add_value(g, name);
  if (qkv < 0) return AIT_E_NOMEM;
  ait_value *qv = &g->values[qkv];
  const ait_value *ov = &g->values[out[0]];
  qv->type = AIT_VT_TENSOR;
  qv->dtype = ov->dtype;
  qv->rank = ov->rank;
  for (int k = 0; k < ov->rank; k++) { /* symbolic names are owned per value */
    qv->dims[k].v = ov->dims[k].v;
    qv->dims[k].sym = ov->dims[k].sym && k < ov->rank - 1 ? strdup(ov->dims[k].sym) : NULL;
  }
  int64_t last = qv->dims[qv->rank - 1].v;
  qv->dims[qv->rank - 1].v = last > 0 ? 3 * last : -1;
  qv->producer = -1;
  ait_node *n = &g->nodes[p[0]];
  n->in[1] = wv;
  if (bias) n->in[2] = bv;
  n->out[0] = qkv;
  /* the Split; its index is the graph's last (node pointers move) */
  int64_t opset = ait_graph_opset(g, "");
  char sname[512];
  snprintf(sname, sizeof sname, "%s_split", name);
  ait_node *s = ait_graph_add_node(g, sname, "Split", "");
  if (!s) return AIT_E_NOMEM;
  s->opset = (int)(opset > 0 ? opset : 13);
  s->in = malloc(sizeof(int));
  s->out = malloc(sizeof(int) * 3);
  if (!s->in || !s->out) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
  s->n_in = 1;
  s->in[0] = qkv;
  s->n_out = 3;
  memcpy(s->out, out, sizeof out);
  AIT_TRY(nat_attr_set_int(s, "axis", -1));
  if (s->opset >= 18) AIT_TRY(nat_attr_set_int(s, "num_outputs", 3));
  s->op = ait_op_lookup("", "Split", s->opset, NULL);
  u->dead[p[1]] = u->dead[p[2]] = true;
  return AIT_OK;
}

ait_status cu_pass_qkv(ait_graph *g, const cu_opts *o, int *merged) {
  *merged = 0;
  if ((o->prec != CU_BF16 && o->prec != CU_FP16 && o->prec != CU_FP8 && o->prec != CU_FP8WO) ||
      !o->qkv || !o->attention || o->attn_gemm || o->attn_wmma)
    return AIT_OK;
  nat_uses u;
  memset(&u, 0, sizeof u);
  u.g = g;
  AIT_TRY(nat_uses_refresh(&u));
  ait_status st = AIT_OK;
  int n0 = g->n_nodes;
  for (int i = 0; !st && i < n0; i++) {
    if (!projection(&u, i)) continue;
    int p[3] = {i, -1, -1}, n = 1;
    for (int j = i + 1; j < n0 && n < 3; j++)
      if (projection(&u, j) && same_kind(g, i, j)) p[n++] = j;
    if (n < 3) continue;
    /* the dead array must cover the node merge() appends */
    bool *more = realloc(u.dead, sizeof(bool) * (size_t)(g->n_nodes + 2));
    if (!more) {
      st = ait_err(AIT_E_NOMEM, "cuda: out of memory");
      break;
    }
    u.dead = more;
    u.dead[g->n_nodes] = u.dead[g->n_nodes + 1] = false;
    st = merge(&u, p);
    if (!st) (*merged)++;
  }
  if (!st && *merged) {
    bool *dead = calloc((size_t)g->n_nodes + 1, sizeof(bool));
    if (!dead) st = ait_err(AIT_E_NOMEM, "cuda: out of memory");
    for (int i = 0; !st && i < g->n_nodes && i < n0; i++)
      dead[i] = u.dead[i];
    if (!st) st = nat_graph_compact(g, dead);
    free(dead);
  }
  nat_uses_free(&u);
  return st;
}

#endif
