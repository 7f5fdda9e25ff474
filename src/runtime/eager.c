#include "runtime/eager.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "ops/op.h"
#include "ops/op_arity.h"
#include "runtime/observe.h"

/* One graph run in progress: the graph, the value table, and the run that
 * encloses it (for subgraphs reading outer-scope values). A context made by
 * ait_eager_run_node_bodies has no graph: its bodies go to `body`. */
struct ait_kctx {
  const ait_graph *g;
  const ait_tensor **vals; /* current tensor of each value, NULL when not (yet) live */
  ait_tensor **owned;      /* tensors this run allocated (freed after last use) */
  struct ait_kctx *parent;
  ait_body_fn body;
  void *body_user;
};

ait_status ait_eager_unsupported(const ait_node *n) {
  const char *why = "unknown op";
  ait_op_lookup(n->domain, n->op_type, n->opset, &why);
  return ait_err(AIT_E_UNSUPPORTED,
                 "%s: op %s of domain %s at opset %d is not implemented by the reference "
                 "kernels (%s), so no backend can run it",
                 ait_node_desc(n), n->op_type, n->domain[0] ? n->domain : "ai.onnx", n->opset, why);
}

static ait_status unsupported(const ait_node *n) { return ait_eager_unsupported(n); }

ait_status ait_eager_check(const ait_graph *g) {
  for (int i = 0; i < g->n_nodes; i++) {
    const ait_node *n = &g->nodes[i];
    if (!n->op || !n->op->kernel) return unsupported(n);
    for (int k = 0; k < n->n_attrs; k++)
      if (n->attrs[k].g) AIT_TRY(ait_eager_check(n->attrs[k].g));
  }
  return AIT_OK;
}

static ait_status call_kernel(ait_kctx *ctx, const ait_node *n, const ait_tensor *const *in,
                              int n_in, ait_tensor **out) {
  if (!n->op || !n->op->kernel) return unsupported(n);
  if (n->n_out < 1) /* every ONNX op has an output; kernels write out[0] */
    return ait_err(AIT_E_INVALID_MODEL, "%s has no outputs", ait_node_desc(n));
  int miss = ait_op_missing_input(n, in, n_in);
  if (miss >= 0) /* kernels may assume what the spec requires is there */
    return ait_err(AIT_E_INVALID_MODEL, "%s lacks its required input %d%s", ait_node_desc(n), miss,
                   miss < n->n_in ? " (its name is empty)" : "");
  if (n->op->dtypes && n_in > 0 && in[0] && in[0]->kind == AIT_KIND_TENSOR &&
      !(n->op->dtypes & AIT_DT_BIT(in[0]->dtype)))
    return ait_err(AIT_E_UNSUPPORTED,
                   "%s: input 0 has dtype %s, which backend eager does not support for %s",
                   ait_node_desc(n), ait_dtype_name(in[0]->dtype), n->op_type);
  for (int k = 0; k < n->n_out; k++)
    out[k] = NULL;
  ait_status st = n->op->kernel(ctx, n, in, n_in, out, n->n_out);
  if (st == AIT_OK) {
    for (int k = 0; k < n->n_out; k++)
      if (n->out[k] >= 0 && !out[k])
        st = ait_err(AIT_E_INTERNAL, "kernel produced no tensor for output %d", k);
  }
  if (st) {
    for (int k = 0; k < n->n_out; k++) {
      ait_tensor_free(out[k]);
      out[k] = NULL;
    }
    return ait_err_prefix(st, "%s", ait_node_desc(n));
  }
  return AIT_OK;
}

ait_status ait_eager_run_node(const ait_node *n, const ait_tensor *const *in, int n_in,
                              ait_tensor **out) {
  return call_kernel(NULL, n, in, n_in, out);
}

ait_status ait_eager_run_node_bodies(const ait_node *n, const ait_tensor *const *in, int n_in,
                                     ait_tensor **out, ait_body_fn body, void *user) {
  ait_kctx ctx = {NULL, NULL, NULL, NULL, body, user};
  return call_kernel(&ctx, n, in, n_in, out);
}

/* The tensor an outer-scope value names, searching enclosing runs. */
static const ait_tensor *outer_lookup(const ait_kctx *ctx, const char *name) {
  for (; ctx; ctx = ctx->parent) {
    int v = ait_graph_find_value(ctx->g, name);
    if (v < 0) continue;
    if (ctx->vals[v]) return ctx->vals[v];
    if (ctx->g->values[v].outer) continue;
    return NULL;
  }
  return NULL;
}

/* Mark in last[] the values of graph `top` that subgraph `sub` reads from an
 * enclosing scope, as used by node `at`. */
static void mark_outer_uses(const ait_graph *top, const ait_graph *sub, int at, int *last) {
  for (int i = 0; i < sub->n_values; i++) {
    if (!sub->values[i].outer) continue;
    int v = ait_graph_find_value(top, sub->values[i].name);
    if (v >= 0 && last[v] < at) last[v] = at;
  }
  for (int i = 0; i < sub->n_nodes; i++)
    for (int k = 0; k < sub->nodes[i].n_attrs; k++)
      if (sub->nodes[i].attrs[k].g) mark_outer_uses(top, sub->nodes[i].attrs[k].g, at, last);
}

static ait_status run_graph(ait_kctx *parent, const ait_graph *g, const ait_tensor *const *inputs,
                            int n_inputs, ait_tensor **outputs) {
  if (n_inputs != g->n_inputs)
    return ait_err(AIT_E_INVALID_ARG, "graph '%s' takes %d inputs, got %d", g->name, g->n_inputs,
                   n_inputs);
  int nv = g->n_values;
  ait_kctx ctx = {g,
                  calloc((size_t)nv + 1, sizeof(void *)),
                  calloc((size_t)nv + 1, sizeof(void *)),
                  parent,
                  NULL,
                  NULL};
  int *last = malloc(sizeof(int) * ((size_t)nv + 1));
  ait_status st = AIT_OK;
  if (!ctx.vals || !ctx.owned || !last) {
    st = ait_err(AIT_E_NOMEM, "out of memory starting a graph run");
    goto out;
  }
  /* liveness: the last node that reads each value; graph outputs live on */
  for (int v = 0; v < nv; v++)
    last[v] = -1;
  for (int i = 0; i < g->n_nodes; i++) {
    const ait_node *n = &g->nodes[i];
    for (int k = 0; k < n->n_in; k++)
      if (n->in[k] >= 0) last[n->in[k]] = i;
    for (int k = 0; k < n->n_attrs; k++)
      if (n->attrs[k].g) mark_outer_uses(g, n->attrs[k].g, i, last);
  }
  for (int k = 0; k < g->n_outputs; k++)
    last[g->outputs[k]] = g->n_nodes;
  for (int v = 0; v < nv; v++) {
    const ait_value *val = &g->values[v];
    if (val->init && val->producer < 0)
      ctx.vals[v] = val->init;
    else if (val->outer)
      ctx.vals[v] = outer_lookup(parent, val->name);
  }
  for (int i = 0; i < n_inputs; i++)
    ctx.vals[g->inputs[i]] = inputs[i];

  const ait_tensor *in[64];
  ait_tensor *out[64];
  for (int i = 0; i < g->n_nodes && !st; i++) {
    const ait_node *n = &g->nodes[i];
    if (n->n_in > 64 || n->n_out > 64) {
      st = ait_err(AIT_E_UNSUPPORTED, "%s has more than 64 inputs or outputs", ait_node_desc(n));
      break;
    }
    for (int k = 0; k < n->n_in; k++) {
      in[k] = n->in[k] >= 0 ? ctx.vals[n->in[k]] : NULL;
      if (n->in[k] >= 0 && !in[k])
        st = ait_err(AIT_E_INVALID_MODEL, "%s: input '%s' has no value", ait_node_desc(n),
                     g->values[n->in[k]].name);
    }
    if (st) break;
    double t0 = ait_observing() ? ait_observe_now() : 0;
    if ((st = call_kernel(&ctx, n, in, n->n_in, out)) != AIT_OK) break;
    if (t0 > 0) ait_observe_node(n, ait_observe_now() - t0);
    for (int k = 0; k < n->n_out; k++) {
      int v = n->out[k];
      if (v < 0 || last[v] < 0) { /* unused output */
        ait_tensor_free(out[k]);
        continue;
      }
      ctx.owned[v] = out[k];
      ctx.vals[v] = out[k];
    }
    for (int k = 0; k < n->n_in; k++) { /* free what this node was the last to read */
      int v = n->in[k];
      if (v >= 0 && last[v] == i && ctx.owned[v]) {
        ait_tensor_free(ctx.owned[v]);
        ctx.owned[v] = NULL;
        ctx.vals[v] = NULL;
      }
    }
  }
  for (int k = 0; k < g->n_outputs && !st; k++) {
    int v = g->outputs[k];
    if (ctx.owned[v]) {
      outputs[k] = ctx.owned[v];
      ctx.owned[v] = NULL; /* vals[v] stays: a value listed twice is cloned next time */
    } else if (ctx.vals[v]) {
      if (!(outputs[k] = ait_tensor_clone(ctx.vals[v]))) st = AIT_E_NOMEM;
    } else {
      st = ait_err(AIT_E_INVALID_MODEL, "graph output '%s' has no value", g->values[v].name);
    }
    if (st)
      for (int j = 0; j < k; j++) {
        ait_tensor_free(outputs[j]);
        outputs[j] = NULL;
      }
  }
out:
  for (int v = 0; ctx.owned && v < nv; v++)
    ait_tensor_free(ctx.owned[v]);
  free(ctx.vals);
  free(ctx.owned);
  free(last);
  return st;
}

ait_status ait_eager_run(const ait_graph *g, const ait_tensor *const *inputs, int n_inputs,
                         ait_tensor **outputs) {
  return run_graph(NULL, g, inputs, n_inputs, outputs);
}

ait_status ait_kctx_run_graph(ait_kctx *ctx, const ait_graph *body, const ait_tensor *const *inputs,
                              int n_inputs, ait_tensor **outputs) {
  if (!ctx) return ait_err(AIT_E_INTERNAL, "subgraph run without a graph run");
  if (ctx->body) return ctx->body(ctx->body_user, body, inputs, n_inputs, outputs);
  return run_graph(ctx, body, inputs, n_inputs, outputs);
}
