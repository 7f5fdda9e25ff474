/* FLOP estimates from static shapes (unknown dims count as 1). */
#include "ir/flops.h"

#include <string.h>

static int64_t dim_or_1(const ait_value *v, int k) {
  return k < v->rank && v->dims[k].v >= 0 ? v->dims[k].v : 1;
}
/* In double: an estimate, and a model's dims may multiply past 64 bits */
static double numel_of(const ait_value *v) {
  double n = 1;
  for (int k = 0; k < v->rank; k++)
    n *= (double)dim_or_1(v, k);
  return v->rank < 0 ? 0 : n;
}

/* Multiply-adds counted as 2 FLOPs; only the ops that dominate real models. */
double ait_node_flops(const ait_graph *g, const ait_node *n) {
  const ait_value *out = n->n_out && n->out[0] >= 0 ? &g->values[n->out[0]] : NULL;
  const ait_value *a = n->n_in && n->in[0] >= 0 ? &g->values[n->in[0]] : NULL;
  const ait_value *b = n->n_in > 1 && n->in[1] >= 0 ? &g->values[n->in[1]] : NULL;
  if (!out || out->rank < 0) return 0;
  /* the native engine's fused ops count as the op they were fused from */
  const char *op = n->op_type;
  if (!strcmp(n->domain, "ai.aitune") && !strncmp(op, "Fused", 5)) op += 5;
  if (!strcmp(op, "Conv") || !strcmp(op, "ConvTranspose")) {
    if (!b || b->rank < 2) return 0;
    double k = 1;
    for (int i = 1; i < b->rank; i++)
      k *= (double)dim_or_1(b, i);
    /* ConvTranspose: every input element meets C_out/group x kernel weights */
    if (!strcmp(op, "ConvTranspose")) return a ? 2.0 * numel_of(a) * k : 0;
    return 2.0 * numel_of(out) * k;
  }
  if (!strcmp(op, "MatMul") || !strcmp(op, "Gemm")) {
    if (!a || a->rank < 1) return 0;
    int64_t k = dim_or_1(a, a->rank - 1);
    if (!strcmp(op, "Gemm") && ait_attr_int(n, "transA", 0)) k = dim_or_1(a, 0);
    return 2.0 * numel_of(out) * (double)k;
  }
  return numel_of(out); /* elementwise-ish: one op per output */
}
