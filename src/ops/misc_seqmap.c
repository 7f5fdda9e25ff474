/* SequenceMap (runs its body once per sequence element) and the optional
 * operators Optional, OptionalHasElement, OptionalGetElement.
 *
 * An optional without a value is a tensor of kind AIT_KIND_NONE (or an absent
 * input); an optional with a value is simply that tensor or sequence. */
#include <stdlib.h>

#include "ir/shape.h"
#include "ops/misc_impl.h"

/* ---- SequenceMap ---------------------------------------------------------- */

AIT_MISC_KERNEL(ait_k_sequence_map) {
  const ait_graph *body = ait_attr_graph(node, "body");
  if (!body) return ait_err(AIT_E_INVALID_MODEL, "SequenceMap needs a 'body' graph attribute");
  if (!in[0] || in[0]->kind != AIT_KIND_SEQUENCE)
    return ait_err(AIT_E_INVALID_ARG, "input 0 of SequenceMap must be a sequence");
  if (body->n_inputs != n_in)
    return ait_err(AIT_E_INVALID_MODEL, "SequenceMap has %d inputs but its body takes %d", n_in,
                   body->n_inputs);
  if (body->n_outputs != n_out)
    return ait_err(AIT_E_INVALID_MODEL, "SequenceMap has %d outputs but its body gives %d", n_out,
                   body->n_outputs);
  int n = in[0]->n_items;
  for (int j = 1; j < n_in; j++) {
    if (!in[j] || in[j]->kind == AIT_KIND_NONE)
      return ait_err(AIT_E_INVALID_ARG, "SequenceMap input %d is missing", j);
    if (in[j]->kind == AIT_KIND_SEQUENCE && in[j]->n_items != n)
      return ait_err(AIT_E_SHAPE, "SequenceMap input %d has %d items but input 0 has %d", j,
                     in[j]->n_items, n);
  }

  /* Outputs: one sequence per body output. An empty input sequence gives
   * empty sequences typed by the body's declared outputs. */
  for (int k = 0; k < n_out; k++) {
    out[k] = ait_sequence_new(body->values[body->outputs[k]].dtype);
    if (!out[k]) return AIT_E_NOMEM; /* the executor frees the others */
  }
  const ait_tensor **args = malloc((size_t)n_in * sizeof *args);
  ait_tensor **res = calloc((size_t)(n_out ? n_out : 1), sizeof *res);
  ait_status st = args && res ? AIT_OK : ait_err(AIT_E_NOMEM, "out of memory");
  for (int i = 0; st == AIT_OK && i < n; i++) {
    for (int j = 0; j < n_in; j++)
      args[j] = in[j]->kind == AIT_KIND_SEQUENCE ? in[j]->items[i] : in[j];
    for (int k = 0; k < n_out; k++)
      res[k] = NULL;
    st = ait_kctx_run_graph(ctx, body, args, n_in, res);
    if (st != AIT_OK) ait_err_prefix(st, "SequenceMap iteration %d", i);
    for (int k = 0; k < n_out; k++) {
      ait_tensor *r = res[k];
      res[k] = NULL;
      if (st != AIT_OK) {
        ait_tensor_free(r);
        continue;
      }
      if (!r || r->kind != AIT_KIND_TENSOR) {
        ait_tensor_free(r);
        st = ait_err(AIT_E_RUNTIME, "SequenceMap body output %d is not a tensor", k);
        continue;
      }
      if (out[k]->n_items == 0) out[k]->dtype = r->dtype;
      if (r->dtype != out[k]->dtype) {
        ait_tensor_free(r);
        st = ait_err(AIT_E_DTYPE, "SequenceMap body output %d changes dtype between iterations", k);
        continue;
      }
      st = ait_sequence_push(out[k], r);
    }
  }
  free(args);
  free(res);
  return st;
}

AIT_MISC_SHAPE(ait_s_sequence_map) {
  const ait_graph *body = ait_attr_graph(node, "body");
  for (int k = 0; k < node->n_out; k++) {
    ait_value *v = ait_node_out(g, node, k);
    if (!v) continue;
    ait_dtype dt =
        body && k < body->n_outputs ? body->values[body->outputs[k]].dtype : AIT_UNDEFINED;
    ait_set_out(g, node, k, dt, -1, NULL);
    v->type = AIT_VT_SEQUENCE;
  }
  return AIT_OK;
}

/* ---- optionals ------------------------------------------------------------ */

static bool has_value(const ait_tensor *t) { return t && t->kind != AIT_KIND_NONE; }

AIT_MISC_KERNEL(ait_k_optional) {
  const ait_tensor *x = n_in > 0 ? in[0] : NULL;
  out[0] = has_value(x) ? ait_tensor_clone(x) : ait_none_new();
  return out[0] ? AIT_OK : AIT_E_NOMEM;
}

AIT_MISC_KERNEL(ait_k_optional_has_element) {
  ait_tensor *y = ait_tensor_new(AIT_BOOL, 0, NULL);
  if (!y) return AIT_E_NOMEM;
  *(bool *)y->data = has_value(n_in > 0 ? in[0] : NULL);
  out[0] = y;
  return AIT_OK;
}

AIT_MISC_KERNEL(ait_k_optional_get_element) {
  const ait_tensor *x = n_in > 0 ? in[0] : NULL;
  if (!has_value(x))
    return ait_err(AIT_E_INVALID_ARG, "OptionalGetElement: the optional input has no value");
  out[0] = ait_tensor_clone(x);
  return out[0] ? AIT_OK : AIT_E_NOMEM;
}

AIT_MISC_SHAPE(ait_s_optional) {
  ait_value *x = ait_node_in(g, node, 0), *y = ait_node_out(g, node, 0);
  if (!y) return AIT_OK;
  if (x) ait_set_out(g, node, 0, x->dtype, x->rank, x->rank > 0 ? x->dims : NULL);
  y->type = AIT_VT_OPTIONAL;
  return AIT_OK;
}

AIT_MISC_SHAPE(ait_s_optional_has_element) {
  ait_set_out(g, node, 0, AIT_BOOL, 0, NULL);
  return AIT_OK;
}

AIT_MISC_SHAPE(ait_s_optional_get_element) {
  ait_value *x = ait_node_in(g, node, 0), *y = ait_node_out(g, node, 0);
  if (!x || !y) return AIT_OK;
  ait_set_out(g, node, 0, x->dtype, x->rank, x->rank > 0 ? x->dims : NULL);
  /* from opset 18 the input may be a plain tensor or sequence; for an
   * optional input the declared output type stays as the loader set it */
  if (x->type != AIT_VT_OPTIONAL) y->type = x->type;
  return AIT_OK;
}
