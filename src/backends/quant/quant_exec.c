/* The rewritten graph and its executor. The copy borrows the model's
 * constant data (the model outlives the state), so only the quantized
 * weights are new memory. Quantized nodes become ai.aitune.quant ops whose
 * weight input is dropped; everything else keeps its reference kernel. The
 * executor runs nodes in topological order and frees each intermediate
 * after its last reader, as eager does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/quant/quant.h"
#include "core/error.h"
#include "ir/copy.h"
#include "runtime/eager.h"

static bool copy_value(ait_value *d, const ait_value *s) {
  *d = *s;
  d->init = NULL;
  d->name = NULL;
  for (int k = 0; k < AIT_MAX_RANK; k++)
    d->dims[k].sym = NULL;
  if (!(d->name = strdup(s->name ? s->name : ""))) return false;
  for (int k = 0; k < AIT_MAX_RANK; k++)
    if (s->dims[k].sym && !(d->dims[k].sym = strdup(s->dims[k].sym))) return false;
  if (s->init && s->init->kind == AIT_KIND_TENSOR)
    d->init = ait_tensor_wrap(s->init->dtype, s->init->rank, s->init->dims, s->init->data);
  else if (s->init)
    d->init = ait_tensor_clone(s->init);
  return !s->init || d->init;
}

/* A top-level copy of s whose constants borrow s's data. */
static ait_graph *clone_borrowing(const ait_graph *s) {
  ait_graph *g = ait_graph_new(s->name, NULL);
  if (!g) return NULL;
  g->ir_version = s->ir_version;
  g->values = calloc((size_t)s->n_values + 1, sizeof *g->values);
  g->nodes = calloc((size_t)s->n_nodes + 1, sizeof *g->nodes);
  g->inputs = malloc(sizeof(int) * ((size_t)s->n_inputs + 1));
  g->outputs = malloc(sizeof(int) * ((size_t)s->n_outputs + 1));
  if (!g->values || !g->nodes || !g->inputs || !g->outputs) goto fail;
  g->cap_values = s->n_values + 1;
  g->cap_nodes = s->n_nodes + 1;
  for (int i = 0; i < s->n_values; i++) {
    g->n_values = i + 1; /* a partial value is freed with the graph */
    if (!copy_value(&g->values[i], &s->values[i])) goto fail;
  }
  for (int i = 0; i < s->n_nodes; i++) {
    if (!ait_node_copy(&g->nodes[i], &s->nodes[i], g, false)) goto fail;
    g->n_nodes = i + 1;
  }
  memcpy(g->inputs, s->inputs, sizeof(int) * (size_t)s->n_inputs);
  memcpy(g->outputs, s->outputs, sizeof(int) * (size_t)s->n_outputs);
  g->n_inputs = s->n_inputs;
  g->n_outputs = s->n_outputs;
  return g;
fail:
  ait_graph_free(g);
  ait_err(AIT_E_NOMEM, "out of memory copying the graph");
  return NULL;
}

static ait_status rewrite_node(ait_node *n) {
  char op[32];
  snprintf(op, sizeof op, "Q%s", n->op_type);
  char *t = strdup(op), *d = strdup(QNT_DOMAIN);
  if (!t || !d) {
    free(t);
    free(d);
    return ait_err(AIT_E_NOMEM, "out of memory");
  }
  free(n->op_type);
  free(n->domain);
  n->op_type = t;
  n->domain = d;
  n->op = NULL;
  n->in[1] = -1; /* the weight now lives in the quantized node */
  return AIT_OK;
}

void qnt_state_free(qnt_state *s) {
  if (!s) return;
  for (int i = 0; i < s->n_q; i++)
    qnt_weight_free(&s->q[i].w);
  free(s->q);
  free(s->node_q);
  free(s->last);
  ait_graph_free(s->g);
  if (s->pool) pthreadpool_destroy(s->pool);
  free(s);
}

static ait_status check_isa(const qnt_config *c, qnt_cpu cpu) {
  if (c->isa != QNT_ISA_AVX512) return AIT_OK;
  const char *need = !cpu.avx512                                     ? "avx512f/avx512bw/avx512vl"
                     : c->act && c->weights == QNT_INT8 && !cpu.vnni ? "avx512vnni"
                     : c->act && c->weights == QNT_FP8 && !cpu.bf16  ? "avx512bf16"
                                                                     : NULL;
  if (need)
    return ait_err(AIT_E_UNSUPPORTED, "quant: kernels=avx512 needs %s, which this CPU lacks", need);
  return AIT_OK;
}

static ait_status prepare(qnt_state *s, const ait_graph *g) {
  AIT_TRY(check_isa(&s->cfg, s->cpu));
  if (!(s->g = clone_borrowing(g))) return AIT_E_NOMEM;
  int nn = s->g->n_nodes, nv = s->g->n_values;
  s->node_q = malloc(sizeof(int) * ((size_t)nn + 1));
  s->last = malloc(sizeof(int) * ((size_t)nv + 1));
  if (!s->node_q || !s->last) return ait_err(AIT_E_NOMEM, "out of memory");
  for (int i = 0; i < nn; i++)
    s->node_q[i] = -1;
  for (int i = 0; i < s->n_q; i++) {
    qnt_node *q = &s->q[i];
    ait_node *n = &s->g->nodes[q->site.node];
    /* grouped convolutions run per group on rows; the packed panels hold
     * whole matrices */
    bool grouped = q->site.kind == QNT_K_CONV && ait_attr_int(n, "group", 1) != 1;
    qnt_layout l = grouped ? QNT_L_ROWS : qnt_layout_for(q->w.type, s->cfg.act, s->cpu);
    if (q->w.layout == QNT_L_ROWS) AIT_TRY(qnt_weight_pack(&q->w, l));
    AIT_TRY(rewrite_node(n));
    s->node_q[q->site.node] = i;
    s->qbytes += qnt_weight_bytes(&q->w);
    s->float_bytes += (size_t)(q->w.N * q->w.K) * sizeof(float);
  }
  for (int v = 0; v < nv; v++)
    s->last[v] = -1;
  for (int i = 0; i < nn; i++) {
    const ait_node *n = &s->g->nodes[i];
    for (int k = 0; k < n->n_in; k++)
      if (n->in[k] >= 0) s->last[n->in[k]] = i;
  }
  for (int k = 0; k < s->g->n_outputs; k++)
    s->last[s->g->outputs[k]] = nn;
  if (s->cfg.threads > 1 && !(s->pool = pthreadpool_create((size_t)s->cfg.threads)))
    return ait_err(AIT_E_NOMEM, "quant: cannot start a pool of %d threads", s->cfg.threads);
  return AIT_OK;
}

ait_status qnt_state_make(const qnt_config *c, const ait_graph *g, qnt_node *q, int n,
                          qnt_state **out) {
  qnt_state *s = calloc(1, sizeof *s);
  if (!s) {
    for (int i = 0; i < n; i++)
      qnt_weight_free(&q[i].w);
    free(q);
    return ait_err(AIT_E_NOMEM, "out of memory");
  }
  s->cfg = *c;
  s->q = q;
  s->n_q = n;
  s->cpu = c->isa == QNT_ISA_PORTABLE ? (qnt_cpu){false, false, false} : qnt_cpu_detect();
  ait_status st = prepare(s, g);
  if (st) {
    qnt_state_free(s);
    return st;
  }
  *out = s;
  return AIT_OK;
}

static ait_status run_node(qnt_state *s, int i, const ait_tensor *const *in, ait_tensor **out) {
  const ait_node *n = &s->g->nodes[i];
  if (s->node_q[i] < 0) return ait_eager_run_node(n, in, n->n_in, out);
  for (int k = 0; k < n->n_out; k++)
    out[k] = NULL;
  ait_status st = qnt_op_run(s, &s->q[s->node_q[i]], n, in, n->n_in, out);
  if (st) return ait_err_prefix(st, "%s", ait_node_desc(n));
  return AIT_OK;
}

ait_status qnt_state_run(qnt_state *s, const ait_tensor *const *inputs, int n_inputs,
                         ait_tensor **outputs) {
  const ait_graph *g = s->g;
  for (int k = 0; k < g->n_outputs; k++)
    outputs[k] = NULL;
  if (n_inputs != g->n_inputs)
    return ait_err(AIT_E_INVALID_ARG, "quant: the graph takes %d inputs, got %d", g->n_inputs,
                   n_inputs);
  int nv = g->n_values;
  const ait_tensor **vals = calloc((size_t)nv + 1, sizeof *vals);
  ait_tensor **owned = calloc((size_t)nv + 1, sizeof *owned);
  ait_status st = vals && owned ? AIT_OK : ait_err(AIT_E_NOMEM, "out of memory");
  for (int v = 0; v < nv && !st; v++)
    if (g->values[v].init && g->values[v].producer < 0) vals[v] = g->values[v].init;
  for (int i = 0; i < n_inputs && !st; i++)
    vals[g->inputs[i]] = inputs[i];
  const ait_tensor *in[64];
  ait_tensor *out[64];
  for (int i = 0; i < g->n_nodes && !st; i++) {
    const ait_node *n = &g->nodes[i];
    if (n->n_in > 64 || n->n_out > 64) {
      st = ait_err(AIT_E_UNSUPPORTED, "%s has more than 64 inputs or outputs", ait_node_desc(n));
      break;
    }
    for (int k = 0; k < n->n_in && !st; k++) {
      in[k] = n->in[k] >= 0 ? vals[n->in[k]] : NULL;
      if (n->in[k] >= 0 && !in[k])
        st = ait_err(AIT_E_INVALID_MODEL, "%s: input '%s' has no value", ait_node_desc(n),
                     g->values[n->in[k]].name);
    }
    if (st || (st = run_node(s, i, in, out))) break;
    for (int k = 0; k < n->n_out; k++) {
      int v = n->out[k];
      if (v < 0 || s->last[v] < 0) {
        ait_tensor_free(out[k]);
        continue;
      }
      owned[v] = out[k];
      vals[v] = out[k];
    }
    for (int k = 0; k < n->n_in; k++) {
      int v = n->in[k];
      if (v >= 0 && s->last[v] == i && owned[v]) {
        ait_tensor_free(owned[v]);
        owned[v] = NULL;
        vals[v] = NULL;
      }
    }
  }
  for (int k = 0; k < g->n_outputs && !st; k++) {
    int v = g->outputs[k];
    if (owned[v]) {
      outputs[k] = owned[v];
      owned[v] = NULL;
    } else if (vals[v]) {
      if (!(outputs[k] = ait_tensor_clone(vals[v]))) st = AIT_E_NOMEM;
    } else {
      st = ait_err(AIT_E_INVALID_MODEL, "graph output '%s' has no value", g->values[v].name);
    }
  }
  if (st)
    for (int k = 0; k < g->n_outputs; k++) {
      ait_tensor_free(outputs[k]);
      outputs[k] = NULL;
    }
  for (int v = 0; owned && v < nv; v++)
    ait_tensor_free(owned[v]);
  free(vals);
  free(owned);
  return st;
}
