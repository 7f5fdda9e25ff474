/* Constant folding as a graph rewrite (ait_pass_fold_constants). The
 * foldable predicate it shares with every other folder (shape inference,
 * onednn, xnnpack, cuda) is in passes.h. */
#include <stdlib.h>

#include "core/error.h"
#include "ir/passes/passes.h"

void ait_value_set_const(ait_graph *g, int v, ait_tensor *t) {
  ait_value *val = &g->values[v];
  ait_tensor_free(val->init);
  val->init = t;
  val->producer = -1;
  val->type = AIT_VT_TENSOR;
  val->dtype = t->dtype;
  val->rank = t->rank;
  for (int k = 0; k < AIT_MAX_RANK; k++) {
    free((char *)val->dims[k].sym);
    val->dims[k].sym = NULL;
    val->dims[k].v = k < t->rank ? t->dims[k] : 0;
  }
}

ait_status ait_pass_fold_constants(ait_graph *g, bool *dead, ait_node_eval_fn eval, int *folded) {
  return ait_pass_fold_constants_if(g, dead, eval, NULL, folded);
}

ait_status ait_pass_fold_constants_if(ait_graph *g, bool *dead, ait_node_eval_fn eval,
                                      bool (*accept)(const ait_node *n), int *folded) {
  enum { MAX_IO = 64 };
  const ait_tensor *in[MAX_IO];
  ait_tensor *out[MAX_IO];
  for (int i = 0; i < g->n_nodes; i++) {
    ait_node *n = &g->nodes[i];
    if (dead[i] || !ait_node_foldable(n) || (accept && !accept(n))) continue;
    if (n->n_in > MAX_IO || n->n_out > MAX_IO || n->n_out < 1) continue;
    bool ok = true;
    for (int k = 0; k < n->n_in && ok; k++) {
      ok = n->in[k] < 0 || ait_value_is_const(g, n->in[k]);
      in[k] = n->in[k] >= 0 ? g->values[n->in[k]].init : NULL;
    }
    if (!ok) continue;
    if (eval(n, in, n->n_in, out) != AIT_OK) {
      ait_err_clear(); /* the node stays; running it will report the error */
      continue;
    }
    for (int k = 0; k < n->n_out; k++)
      ok = ok && (n->out[k] < 0 || (out[k] && out[k]->kind == AIT_KIND_TENSOR));
    for (int k = 0; k < n->n_out; k++) {
      if (ok && n->out[k] >= 0)
        ait_value_set_const(g, n->out[k], out[k]);
      else
        ait_tensor_free(out[k]);
    }
    if (ok) {
      dead[i] = true;
      (*folded)++;
    }
  }
  return AIT_OK;
}

/* Shape node n's result with -1 where x's dim is not a known size; NULL
 * for a Shape with start/end attributes or of unknown rank. */
static ait_tensor *partial_shape(const ait_graph *g, const ait_node *n) {
  if (n->n_in < 1 || n->in[0] < 0 || ait_node_attr(n, "start") || ait_node_attr(n, "end"))
    return NULL;
  const ait_value *x = &g->values[n->in[0]];
  if (x->rank < 0) return NULL;
  int64_t r = x->rank;
  ait_tensor *t = ait_tensor_new(AIT_INT64, 1, &r);
  if (!t) return NULL;
  for (int k = 0; k < x->rank; k++)
    ((int64_t *)t->data)[k] = x->dims[k].v >= 0 ? x->dims[k].v : -1;
  return t;
}

ait_status ait_pass_fold_known_shapes(ait_graph *g, bool *dead, ait_node_eval_fn eval,
                                      int *folded) {
  enum { MAX_IN = 8 };
  for (int i = 0; i < g->n_nodes; i++) {
    ait_node *n = &g->nodes[i];
    if (dead[i] || !(ait_is_op(n, "Slice") || ait_is_op(n, "Gather"))) continue;
    if (n->n_in < 1 || n->n_in > MAX_IN || n->n_out != 1 || n->out[0] < 0 || n->in[0] < 0) continue;
    int p = g->values[n->in[0]].producer;
    if (p < 0 || dead[p] || !ait_is_op(&g->nodes[p], "Shape")) continue;
    const ait_tensor *in[MAX_IN] = {0};
    bool ok = true;
    for (int k = 1; k < n->n_in && ok; k++) {
      ok = n->in[k] < 0 || ait_value_is_const(g, n->in[k]);
      in[k] = n->in[k] >= 0 ? g->values[n->in[k]].init : NULL;
    }
    ait_tensor *shape = ok ? partial_shape(g, &g->nodes[p]) : NULL;
    if (!shape) continue;
    in[0] = shape;
    ait_tensor *out = NULL;
    if (eval(n, in, n->n_in, &out) != AIT_OK) {
      ait_err_clear(); /* the node stays; running it reports the error */
      out = NULL;
    }
    ait_tensor_free(shape);
    ok = out && out->kind == AIT_KIND_TENSOR && out->dtype == AIT_INT64;
    for (int64_t e = 0; ok && e < ait_tensor_numel(out); e++)
      ok = ((const int64_t *)out->data)[e] >= 0; /* no dim that is not known */
    if (!ok) {
      ait_tensor_free(out);
      continue;
    }
    ait_value_set_const(g, n->out[0], out);
    dead[i] = true;
    (*folded)++;
  }
  return AIT_OK;
}
