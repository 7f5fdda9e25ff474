/* Lowering of reductions (ReduceSum/Mean/Max/Min/Prod/L1/L2/SumSquare/
 * LogSum/LogSumExp, ArgMax/ArgMin) and of the variadic elementwise ops
 * (Sum, Mean, Max, Min of any number of inputs) for the cuda backend. */
#ifdef AIT_HAVE_CUDA

#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_impl.h"

static const struct {
  const char *name;
  int op;
  int axes_input_since; /* opset from which axes is an input, not an attribute */
} reduce_ops[] = {
    {"ReduceSum", CUK_R_SUM, 13},       {"ReduceMean", CUK_R_MEAN, 18},
    {"ReduceMax", CUK_R_MAX, 18},       {"ReduceMin", CUK_R_MIN, 18},
    {"ReduceProd", CUK_R_PROD, 18},     {"ReduceL1", CUK_R_L1, 18},
    {"ReduceL2", CUK_R_L2, 18},         {"ReduceSumSquare", CUK_R_SUMSQ, 18},
    {"ReduceLogSum", CUK_R_LOGSUM, 18}, {"ReduceLogSumExp", CUK_R_LOGSUMEXP, 18},
    {"ArgMax", CUK_R_ARGMAX, 1000},     {"ArgMin", CUK_R_ARGMIN, 1000},
};

bool cu_is_reduce(const char *op) {
  for (size_t i = 0; i < sizeof reduce_ops / sizeof reduce_ops[0]; i++)
    if (!strcmp(op, reduce_ops[i].name)) return true;
  return false;
}

typedef struct reduce_prm {
  cuk_reduce k;
  int x, y;
} reduce_prm;

static ait_status reduce_run(cu_state *s, cu_plan *p, cu_step *st) {
  reduce_prm *r = st->prm;
  r->k.x = cu_ptr(p, r->x);
  r->k.y = cu_ptr(p, r->y);
  return cu_check(cuk_reduce_run(s->stream, &r->k), st->what);
}

/* Which axes of a rank-r input node n reduces; *all_noop when it copies. */
static ait_status reduced_axes(cu_planner *pl, const ait_node *n, int r, int since, bool *red,
                               bool *noop) {
  *noop = false;
  for (int k = 0; k < r; k++)
    red[k] = false;
  if (since == 1000) { /* ArgMax / ArgMin: one axis */
    int a;
    AIT_TRY(ait_norm_axis(ait_attr_int(n, "axis", 0), r, &a));
    red[a] = true;
    return AIT_OK;
  }
  int64_t axes[AIT_MAX_RANK];
  int cnt = 0;
  if (n->opset >= since) {
    if (n->n_in > 1 && n->in[1] >= 0) {
      const ait_tensor *t = cu_host_value(pl, n, 1);
      if (!t)
        return ait_err(AIT_E_UNSUPPORTED, "cuda: %s axes not known while planning", n->op_type);
      AIT_TRY(ait_read_ints(t, axes, AIT_MAX_RANK, &cnt));
    }
  } else {
    const int64_t *a = ait_attr_ints(n, "axes", &cnt);
    if (cnt > AIT_MAX_RANK) return ait_err(AIT_E_INVALID_ARG, "cuda: too many axes");
    for (int k = 0; k < cnt; k++)
      axes[k] = a[k];
  }
  if (cnt == 0) {
    if (ait_attr_int(n, "noop_with_empty_axes", 0)) {
      *noop = true;
      return AIT_OK;
    }
    for (int k = 0; k < r; k++)
      red[k] = true;
    return AIT_OK;
  }
  for (int k = 0; k < cnt; k++) {
    int a;
    AIT_TRY(ait_norm_axis(axes[k], r, &a));
    red[a] = true;
  }
  return AIT_OK;
}

ait_status cu_lower_reduce(cu_planner *pl, const ait_node *n) {
  size_t i = 0;
  while (i < sizeof reduce_ops / sizeof reduce_ops[0] && strcmp(n->op_type, reduce_ops[i].name))
    i++;
  if (i == sizeof reduce_ops / sizeof reduce_ops[0])
    return ait_err(AIT_E_INTERNAL, "cuda: %s is not a reduction", n->op_type);
  int x, y;
  AIT_TRY(cu_in(pl, n->in[0], CU_PLAIN, &x));
  const cu_tensor *X = &pl->p->t[x];
  int r = X->rank;
  bool red[AIT_MAX_RANK], noop;
  AIT_TRY(reduced_axes(pl, n, r, reduce_ops[i].axes_input_since, red, &noop));
  if (noop) return cu_view(pl, n->out[0], x);
  AIT_TRY(cu_out(pl, n->out[0], CU_PLAIN, &y));
  X = &pl->p->t[x];
  reduce_prm *q = calloc(1, sizeof *q);
  if (!q) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
  int64_t st[AIT_MAX_RANK];
  cu_strides(X, st);
  q->k.op = reduce_ops[i].op;
  q->k.dt = X->dt;
  q->k.out_dt = pl->p->t[y].dt;
  q->k.select_last = (int)ait_attr_int(n, "select_last_index", 0);
  q->k.n_out = 1;
  q->k.n_red_total = 1;
  for (int k = 0; k < r; k++) {
    if (red[k]) {
      q->k.red_dims[q->k.n_red] = X->dims[k];
      q->k.red_st[q->k.n_red++] = st[k];
      q->k.n_red_total *= X->dims[k];
    } else {
      q->k.keep_dims[q->k.n_keep] = X->dims[k];
      q->k.keep_st[q->k.n_keep++] = st[k];
      q->k.n_out *= X->dims[k];
    }
  }
  if (q->k.n_out != cu_numel(&pl->p->t[y])) {
    free(q);
    return ait_err(AIT_E_SHAPE, "cuda: %s output size does not match its axes", n->op_type);
  }
  q->x = x;
  q->y = y;
  cu_step *s;
  AIT_TRY(cu_step_add(pl, (int)(n - pl->g->nodes), n->op_type, reduce_run, q, &s));
  cu_step_use(s, x);
  cu_step_use(s, y);
  return AIT_OK;
}

/* Sum / Mean / Max / Min of n inputs: the first two into the output, then
 * each next one added into it in place (broadcasting to the output). */
ait_status cu_lower_variadic(cu_planner *pl, const ait_node *n) {
  bool mean = !strcmp(n->op_type, "Mean");
  int op = !strcmp(n->op_type, "Max") ? CUK_MAX : !strcmp(n->op_type, "Min") ? CUK_MIN : CUK_ADD;
  int y, in[2];
  AIT_TRY(cu_out(pl, n->out[0], CU_PLAIN, &y));
  int node = (int)(n - pl->g->nodes);
  int first = -1;
  for (int k = 0; k < n->n_in; k++) {
    if (n->in[k] < 0) continue;
    int x;
    AIT_TRY(cu_in(pl, n->in[k], CU_PLAIN, &x));
    if (first < 0) {
      first = x;
      continue;
    }
    in[0] = first;
    in[1] = x;
    AIT_TRY(cu_emit_eltwise(pl, node, n->op_type, op, NULL, in, 2, y, CUK_COPY, NULL, 1.0f));
    first = y;
  }
  if (first < 0) return ait_err(AIT_E_INVALID_ARG, "cuda: %s without inputs", n->op_type);
  if (first != y) { /* one input */
    in[0] = first;
    AIT_TRY(cu_emit_eltwise(pl, node, n->op_type, CUK_COPY, NULL, in, 1, y, CUK_COPY, NULL, 1.0f));
  }
  if (!mean) return AIT_OK;
  int cnt = 0;
  for (int k = 0; k < n->n_in; k++)
    cnt += n->in[k] >= 0;
  float inv = 1.0f / (float)cnt;
  int c;
  AIT_TRY(cu_const_raw(pl, AIT_FLOAT32, 0, NULL, &inv, &c));
  in[0] = y;
  in[1] = c;
  return cu_emit_eltwise(pl, node, "Mean", CUK_MUL, NULL, in, 2, y, CUK_COPY, NULL, 1.0f);
}

#endif
