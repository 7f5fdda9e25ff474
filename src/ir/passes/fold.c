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
  enum { MAX_IO = 64 };
  const ait_tensor *in[MAX_IO];
  ait_tensor *out[MAX_IO];
  for (int i = 0; i < g->n_nodes; i++) {
    ait_node *n = &g->nodes[i];
    if (dead[i] || !ait_node_foldable(n)) continue;
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
