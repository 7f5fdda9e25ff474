/* infer(): find or make the plan of the input signature, stage the inputs
 * (NCHW -> NHWC where a windowed op reads them), run the segments with their
 * host transposes in between, and copy the outputs out in ONNX order. */
#include <stdlib.h>
#include <string.h>

#include "backends/xnnpack/xnn_impl.h"

void xnn_transpose_cl(const float *src, float *dst, int rank, const int64_t *d, bool to_nhwc) {
  /* [a][b][hw] <-> [a][hw][b], in tiles so both sides stay in cache */
  int64_t a = d[0], b = d[1], hw = ait_shape_numel(rank - 2, d + 2);
  const int64_t T = 32;
  if (b == 1 || hw == 1) { /* the same bytes in both layouts */
    memcpy(dst, src, (size_t)(a * b * hw) * sizeof(float));
    return;
  }
  for (int64_t n = 0; n < a; n++) {
    const float *s = src + n * b * hw;
    float *o = dst + n * b * hw;
    for (int64_t i0 = 0; i0 < b; i0 += T)
      for (int64_t j0 = 0; j0 < hw; j0 += T) {
        int64_t i1 = i0 + T < b ? i0 + T : b, j1 = j0 + T < hw ? j0 + T : hw;
        for (int64_t i = i0; i < i1; i++)
          for (int64_t j = j0; j < j1; j++) {
            if (to_nhwc)
              o[j * b + i] = s[i * hw + j];
            else
              o[i * hw + j] = s[j * b + i];
          }
      }
  }
}

void xnn_plans_free(xnn_state *s) { ait_plan_cache_clear(&s->plans); }

static int graph_input_index(const xnn_state *s, int v) {
  for (int i = 0; i < s->g->n_inputs; i++)
    if (s->g->inputs[i] == v) return i;
  return -1;
}

static bool read_by_ops(const xnn_state *s, int v) {
  for (int i = 0; i < s->n_ops; i++)
    for (int j = 0; j < s->ops[i].n_in; j++)
      if (s->ops[i].in[j] == v) return true;
  return false;
}

/* The inputs agree with what the graph declares (dtype, rank, fixed dims). */
static ait_status check_inputs(const xnn_state *s, const ait_tensor *const *in, int n_in) {
  const ait_graph *g = s->g;
  if (n_in != g->n_inputs)
    return ait_err(AIT_E_INVALID_ARG, "xnnpack: %d inputs given, the graph has %d", n_in,
                   g->n_inputs);
  for (int i = 0; i < n_in; i++) {
    const ait_value *v = &g->values[g->inputs[i]];
    const ait_tensor *t = in[i];
    if (!t || t->kind != AIT_KIND_TENSOR)
      return ait_err(AIT_E_INVALID_ARG, "xnnpack: input '%s' is not a tensor", v->name);
    bool used = read_by_ops(s, g->inputs[i]);
    if (used && t->dtype != AIT_FLOAT32)
      return ait_err(AIT_E_DTYPE, "xnnpack: input '%s' is %s, float32 expected", v->name,
                     ait_dtype_name(t->dtype));
    if (v->rank >= 0 && t->rank != v->rank)
      return ait_err(AIT_E_SHAPE, "xnnpack: input '%s' has rank %d, the graph declares %d", v->name,
                     t->rank, v->rank);
    for (int d = 0; v->rank >= 0 && d < v->rank; d++)
      if (v->dims[d].v >= 0 && t->dims[d] != v->dims[d].v) {
        char got[128];
        return ait_err(AIT_E_SHAPE, "xnnpack: input '%s' has shape %s, dim %d must be %lld",
                       v->name, ait_shape_str(t->rank, t->dims, got, sizeof got), d,
                       (long long)v->dims[d].v);
      }
    if (used && t->rank > 0 && ait_tensor_numel(t) == 0)
      return ait_err(AIT_E_SHAPE, "xnnpack: input '%s' is empty", v->name);
  }
  return AIT_OK;
}

/* The plan of in's signature, found in the shared cache (common/plan.h:
 * the least recently used of XNN_MAX_PLANS goes) or made and kept. */
static ait_status plan_for(xnn_state *s, const ait_tensor *const *in, int n_in, xplan **out) {
  if ((*out = ait_plan_cache_find(&s->plans, in, n_in))) return AIT_OK;
  xplan *p = NULL;
  AIT_TRY(xnn_plan_new(s, in, &p));
  AIT_TRY(ait_plan_cache_add(&s->plans, in, n_in, p)); /* frees p on failure */
  return *out = p, AIT_OK;
}

/* Host transposes whose results the segment `seg` reads first. */
static void host_convs(const xnn_state *s, xplan *p, const ait_tensor *const *in, int seg) {
  for (int i = s->n_vals; i < p->n_pv; i++) {
    xpv *v = &p->pv[i];
    if (v->src < 0 || !v->host || v->avail != seg) continue;
    int gi = graph_input_index(s, v->src);
    const float *src = gi >= 0 ? in[gi]->data : p->pv[v->src].buf;
    xnn_transpose_cl(src, v->buf, v->rank, v->dims, v->layout == XL_NHWC);
  }
}

static ait_status output_of(const xnn_state *s, const xplan *p, const ait_tensor *const *in, int v,
                            ait_tensor **out) {
  int gi = graph_input_index(s, v);
  if (gi >= 0 || s->vals[v].cst >= 0) {
    *out = ait_tensor_clone(gi >= 0 ? in[gi] : s->consts[s->vals[v].cst].t);
    return *out ? AIT_OK : AIT_E_NOMEM;
  }
  const xpv *x = &p->pv[v];
  if (!x->buf)
    return ait_err(AIT_E_RUNTIME, "xnnpack: output '%s' was not computed", s->g->values[v].name);
  ait_tensor *t = ait_tensor_new(AIT_FLOAT32, x->rank, x->dims);
  if (!t) return AIT_E_NOMEM;
  if (x->layout == XL_NHWC)
    xnn_transpose_cl(x->buf, t->data, x->rank, x->dims, false);
  else
    memcpy(t->data, x->buf, ait_tensor_nbytes(t));
  *out = t;
  return AIT_OK;
}

ait_status xnn_prepare(xnn_state *s, const ait_tensor *const *in, int n_in) {
  xplan *p;
  AIT_TRY(check_inputs(s, in, n_in));
  return plan_for(s, in, n_in, &p);
}

ait_status xnn_exec(xnn_state *s, const ait_tensor *const *in, int n_in, ait_tensor **out) {
  const ait_graph *g = s->g;
  for (int o = 0; o < g->n_outputs; o++)
    out[o] = NULL;
  AIT_TRY(check_inputs(s, in, n_in));
  xplan *p;
  AIT_TRY(plan_for(s, in, n_in, &p));
  for (int i = 0; i < g->n_inputs; i++) {
    xpv *v = &p->pv[g->inputs[i]];
    if (v->buf) memcpy(v->buf, in[i]->data, ait_tensor_nbytes(in[i]));
  }
  for (int k = 0; k < p->n_segs; k++) {
    host_convs(s, p, in, k);
    enum xnn_status st = xnn_invoke_runtime(p->rt[k]);
    if (st != xnn_status_success)
      return ait_err(AIT_E_RUNTIME, "xnnpack: running segment %d failed (%s)", k,
                     xnn_status_str(st));
  }
  for (int o = 0; o < g->n_outputs; o++) {
    ait_status st = output_of(s, p, in, g->outputs[o], &out[o]);
    if (st) {
      for (int j = 0; j <= o; j++) {
        ait_tensor_free(out[j]);
        out[j] = NULL;
      }
      return st;
    }
  }
  return AIT_OK;
}
