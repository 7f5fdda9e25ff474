/* Elementwise lowering of the cuda backend: numpy broadcasting turned into
 * an iteration over the output in its storage order with per-input strides
 * (0 along broadcast axes), merged into as few dimensions as possible; the
 * per-channel epilogue used after GEMMs, convolutions and BatchNorm; and the
 * unary, binary and Where ops on top of them. */
#ifdef AIT_HAVE_CUDA

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_impl.h"
#include "ir/passes/passes.h"

/* ---- n-ary elementwise step ------------------------------------------------ */

typedef struct ew_prm {
  cuk_ew k;
  int tin[3], tout;
} ew_prm;

static ait_status ew_run(cu_state *s, cu_plan *p, cu_step *st) {
  ew_prm *e = st->prm;
  for (int i = 0; i < e->k.n_in; i++)
    e->k.in[i] = cu_ptr(p, e->tin[i]);
  e->k.out = cu_ptr(p, e->tout);
  return cu_check(cuk_eltwise(s->stream, &e->k), st->what);
}

static bool is_int_type(ait_dtype dt) {
  return dt == AIT_INT64 || dt == AIT_INT32 || dt == AIT_INT8 || dt == AIT_UINT8 || dt == AIT_BOOL;
}

ait_status cu_emit_eltwise(cu_planner *pl, int node, const char *what, int op, const float *p,
                           const int *in, int n_in, int out, int act, const float *ap, float beta) {
  cu_plan *pp = pl->p;
  const cu_tensor *O = &pp->t[out];
  int r = O->rank;
  int perm[AIT_MAX_RANK];
  for (int k = 0; k < r; k++)
    perm[k] = k;
  if (O->layout == CU_NHWC) {
    perm[1] = 2;
    perm[2] = 3;
    perm[3] = 1;
  }
  ew_prm *e = calloc(1, sizeof *e);
  if (!e) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
  int64_t st[3][AIT_MAX_RANK];
  memset(st, 0, sizeof st);
  for (int i = 0; i < n_in; i++) {
    const cu_tensor *T = &pp->t[in[i]];
    int64_t L[AIT_MAX_RANK];
    cu_strides(T, L);
    if (T->rank > r) {
      free(e);
      return ait_err(AIT_E_SHAPE, "cuda: %s input %d has rank %d, above the output's %d", what, i,
                     T->rank, r);
    }
    for (int k = 0; k < r; k++) {
      int ki = k - (r - T->rank);
      if (ki < 0 || T->dims[ki] == 1) continue;
      if (T->dims[ki] != O->dims[k]) {
        free(e);
        return ait_err(AIT_E_SHAPE, "cuda: %s input %d dim %d is %lld, the output's %lld", what, i,
                       ki, (long long)T->dims[ki], (long long)O->dims[k]);
      }
      st[i][k] = L[ki];
    }
    e->tin[i] = in[i];
    e->k.dt[i] = T->dt;
  }
  /* storage order of the output, dims of size 1 dropped, mergeable dims merged */
  int rank = 0;
  int64_t dims[AIT_MAX_RANK];
  int64_t ist[3][AIT_MAX_RANK];
  for (int j = 0; j < r; j++) {
    int k = perm[j];
    if (O->dims[k] == 1) continue;
    bool merge = rank > 0;
    for (int i = 0; i < n_in && merge; i++)
      merge = ist[i][rank - 1] == st[i][k] * O->dims[k];
    if (merge) {
      dims[rank - 1] *= O->dims[k];
      for (int i = 0; i < n_in; i++)
        ist[i][rank - 1] = st[i][k];
      continue;
    }
    dims[rank] = O->dims[k];
    for (int i = 0; i < n_in; i++)
      ist[i][rank] = st[i][k];
    rank++;
  }
  if (rank == 0) {
    dims[0] = 1;
    for (int i = 0; i < n_in; i++)
      ist[i][0] = 0;
    rank = 1;
  }
  e->k.op = op;
  e->k.act = act;
  if (p) e->k.p[0] = p[0], e->k.p[1] = p[1];
  if (ap) e->k.ap[0] = ap[0], e->k.ap[1] = ap[1];
  e->k.beta = beta;
  e->k.n_in = n_in;
  e->k.rank = rank;
  e->k.n = cu_numel(O);
  for (int j = 0; j < rank; j++) {
    e->k.dims[j] = dims[j];
    for (int i = 0; i < n_in; i++)
      e->k.st[i][j] = ist[i][j];
  }
  /* integer math when the data inputs are integers (Where: inputs 1 and 2) */
  bool ints = true;
  for (int i = op == CUK_WHERE ? 1 : 0; i < n_in; i++)
    ints = ints && is_int_type(pp->t[in[i]].dt);
  e->k.int_math = ints && act == CUK_COPY;
  e->k.out_dt = O->dt;
  e->tout = out;
  cu_step *s;
  AIT_TRY(cu_step_add(pl, node, what, ew_run, e, &s));
  for (int i = 0; i < n_in; i++)
    cu_step_use(s, in[i]);
  cu_step_use(s, out);
  return AIT_OK;
}

/* ---- per-channel epilogue ---------------------------------------------------- */

typedef struct epi_prm {
  cuk_epi k;
  int x, y, scale, shift, z;
} epi_prm;

static ait_status epi_run(cu_state *s, cu_plan *p, cu_step *st) {
  epi_prm *e = st->prm;
  e->k.x = cu_ptr(p, e->x);
  e->k.y = cu_ptr(p, e->y);
  e->k.scale = e->scale >= 0 ? cu_ptr(p, e->scale) : NULL;
  e->k.shift = e->shift >= 0 ? cu_ptr(p, e->shift) : NULL;
  e->k.z = e->z >= 0 ? cu_ptr(p, e->z) : NULL;
  return cu_check(cuk_epilogue(s->stream, &e->k), st->what);
}

bool cu_act_code(const ait_act *a, int *code, float *p) {
  p[0] = a->p[0];
  p[1] = a->p[1];
  switch (a->kind) {
  case AIT_ACT_RELU: *code = CUK_RELU; return true;
  case AIT_ACT_CLIP: *code = CUK_CLIP; return true;
  case AIT_ACT_SIGMOID: *code = CUK_SIGMOID; return true;
  case AIT_ACT_TANH: *code = CUK_TANH; return true;
  case AIT_ACT_LEAKY_RELU: *code = CUK_LEAKY_RELU; return true;
  case AIT_ACT_HARD_SIGMOID: *code = CUK_HARD_SIGMOID; return true;
  case AIT_ACT_HARD_SWISH: *code = CUK_HARD_SWISH; return true;
  case AIT_ACT_GELU: *code = CUK_GELU; return true;
  case AIT_ACT_GELU_TANH: *code = CUK_GELU_TANH; return true;
  default: *code = CUK_COPY; return false;
  }
}

/* What cu_act_code lowers, as native's passes read it (nat_run_passes_for):
 * a producer takes these activations, and no epilogue programs. */
const nat_accepts cu_accepts = {
    .acts = NAT_ACT_BIT(AIT_ACT_RELU) | NAT_ACT_BIT(AIT_ACT_CLIP) | NAT_ACT_BIT(AIT_ACT_SIGMOID) |
            NAT_ACT_BIT(AIT_ACT_TANH) | NAT_ACT_BIT(AIT_ACT_LEAKY_RELU) |
            NAT_ACT_BIT(AIT_ACT_HARD_SIGMOID) | NAT_ACT_BIT(AIT_ACT_HARD_SWISH) |
            NAT_ACT_BIT(AIT_ACT_GELU) | NAT_ACT_BIT(AIT_ACT_GELU_TANH),
    .programs = false};

ait_status cu_emit_epilogue(cu_planner *pl, int node, const char *what, int x, int y, int axis,
                            int scale, int shift, int z, const ait_act *act) {
  const cu_tensor *Y = &pl->p->t[y];
  if (axis < 0 || axis >= Y->rank || (Y->layout == CU_NHWC && axis != 1))
    return ait_err(AIT_E_INTERNAL, "cuda: %s epilogue on axis %d of a rank-%d tensor", what, axis,
                   Y->rank);
  epi_prm *e = calloc(1, sizeof *e);
  if (!e) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
  e->k.dt = Y->dt;
  e->k.n = cu_numel(Y);
  e->k.C = Y->dims[axis];
  e->k.inner = 1;
  if (Y->layout != CU_NHWC)
    for (int k = axis + 1; k < Y->rank; k++)
      e->k.inner *= Y->dims[k];
  e->k.act = CUK_COPY;
  if (act) cu_act_code(act, &e->k.act, e->k.ap);
  e->x = x;
  e->y = y;
  e->scale = scale;
  e->shift = shift;
  e->z = z;
  cu_step *s;
  AIT_TRY(cu_step_add(pl, node, what, epi_run, e, &s));
  cu_step_use(s, x);
  cu_step_use(s, y);
  cu_step_use(s, scale);
  cu_step_use(s, shift);
  cu_step_use(s, z);
  return AIT_OK;
}

/* ---- unary / binary / Where ---------------------------------------------- */

static int node_index(cu_planner *pl, const ait_node *n) { return (int)(n - pl->g->nodes); }

/* The matchers' view of a plan graph: readers by a scan (only gates'
 * candidates ask), graph outputs counted as readers. */
static int gate_readers(const void *ctx, int v, int *nodes, int max) {
  const ait_graph *g = ctx;
  int cnt = 0;
  for (int k = 0; k < max; k++)
    nodes[k] = -1;
  for (int i = 0; i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i].n_in; k++)
      if (g->nodes[i].in[k] == v) {
        if (cnt < max) nodes[cnt] = i;
        cnt++;
      }
  for (int k = 0; k < g->n_outputs; k++)
    cnt += g->outputs[k] == v;
  return cnt;
}

static bool gate_scalar(const void *ctx, int v, float *out) {
  const ait_graph *g = ctx;
  if (v < 0) return false;
  const ait_tensor *t = g->values[v].init;
  if (!t || t->dtype != AIT_FLOAT32 || ait_tensor_numel(t) != 1) return false;
  *out = *(const float *)t->data;
  return true;
}

static ait_match_view gate_view(const ait_graph *g) {
  return (ait_match_view){.g = g, .readers = gate_readers, .scalar = gate_scalar, .ctx = g};
}

/* Output layout of an elementwise node: channels-last when an input of the
 * output's full shape is. */
static cu_layout ew_layout(cu_planner *pl, const int *in, int n_in, int out_value) {
  const ait_value *o = &pl->g->values[out_value];
  for (int i = 0; i < n_in; i++) {
    const cu_tensor *T = &pl->p->t[in[i]];
    if (T->layout != CU_NHWC || o->rank != 4) continue;
    bool same = true;
    for (int k = 0; k < 4; k++)
      same = same && T->dims[k] == o->dims[k].v;
    if (same) return CU_NHWC;
  }
  return CU_PLAIN;
}

static const struct {
  const char *name;
  int op;
} unary_ops[] = {
    {"Relu", CUK_RELU},
    {"Sigmoid", CUK_SIGMOID},
    {"Tanh", CUK_TANH},
    {"Erf", CUK_ERF},
    {"Exp", CUK_EXP},
    {"Log", CUK_LOG},
    {"Sqrt", CUK_SQRT},
    {"Reciprocal", CUK_RECIP},
    {"Neg", CUK_NEG},
    {"Abs", CUK_ABS},
    {"Ceil", CUK_CEIL},
    {"Floor", CUK_FLOOR},
    {"Round", CUK_ROUND},
    {"Sin", CUK_SIN},
    {"Cos", CUK_COS},
    {"Not", CUK_NOT},
    {"Sign", CUK_SIGN},
    {"Softplus", CUK_SOFTPLUS},
    {"HardSwish", CUK_HARD_SWISH},
    {"LeakyRelu", CUK_LEAKY_RELU},
    {"Elu", CUK_ELU},
    {"HardSigmoid", CUK_HARD_SIGMOID},
    {"Gelu", CUK_GELU},
    {"Clip", CUK_CLIP},
    {"Selu", CUK_SELU},
    {"ThresholdedRelu", CUK_THRESHOLDED_RELU},
    {"IsNaN", CUK_ISNAN},
    {"IsInf", CUK_ISINF},
};

static ait_status clip_bound(cu_planner *pl, const ait_node *n, int k, float *v) {
  if (k >= n->n_in || n->in[k] < 0) return AIT_OK;
  const ait_tensor *t = cu_host_value(pl, n, k);
  if (!t || ait_tensor_numel(t) != 1)
    return ait_err(AIT_E_UNSUPPORTED, "cuda: Clip bound %d is not a known scalar", k);
  *v = (float)ait_scalar_f64(t);
  return AIT_OK;
}

ait_status cu_lower_unary(cu_planner *pl, const ait_node *n) {
  int op = -1;
  for (size_t i = 0; i < sizeof unary_ops / sizeof unary_ops[0]; i++)
    if (!strcmp(n->op_type, unary_ops[i].name)) op = unary_ops[i].op;
  if (op < 0) return ait_err(AIT_E_INTERNAL, "cuda: %s is not a unary op", n->op_type);
  float p[2] = {0, 0};
  switch (op) {
  case CUK_LEAKY_RELU: p[0] = ait_attr_float(n, "alpha", 0.01f); break;
  case CUK_ELU: p[0] = ait_attr_float(n, "alpha", 1.0f); break;
  case CUK_HARD_SIGMOID:
    p[0] = ait_attr_float(n, "alpha", 0.2f);
    p[1] = ait_attr_float(n, "beta", 0.5f);
    break;
  case CUK_GELU:
    if (!strcmp(ait_attr_str(n, "approximate", "none"), "tanh")) op = CUK_GELU_TANH;
    break;
  case CUK_SELU:
    p[0] = ait_attr_float(n, "alpha", 1.67326319217681884765625f);
    p[1] = ait_attr_float(n, "gamma", 1.05070102214813232421875f);
    break;
  case CUK_THRESHOLDED_RELU: p[0] = ait_attr_float(n, "alpha", 1.0f); break;
  case CUK_ISINF:
    p[0] = (float)ait_attr_int(n, "detect_negative", 1);
    p[1] = (float)ait_attr_int(n, "detect_positive", 1);
    break;
  case CUK_CLIP:
    p[0] = -INFINITY;
    p[1] = INFINITY;
    if (n->opset < 11) {
      p[0] = ait_attr_float(n, "min", -FLT_MAX);
      p[1] = ait_attr_float(n, "max", FLT_MAX);
    } else {
      AIT_TRY(clip_bound(pl, n, 1, &p[0]));
      AIT_TRY(clip_bound(pl, n, 2, &p[1]));
    }
    break;
  default: break;
  }
  int x, y;
  AIT_TRY(cu_in_any(pl, n->in[0], &x));
  AIT_TRY(cu_out(pl, n->out[0], pl->p->t[x].layout, &y));
  int in[1] = {x};
  return cu_emit_eltwise(pl, node_index(pl, n), n->op_type, op, p, in, 1, y, CUK_COPY, NULL, 1.0f);
}

static const struct {
  const char *name;
  int op;
} binary_ops[] = {
    {"Add", CUK_ADD},           {"Sub", CUK_SUB}, {"Mul", CUK_MUL},    {"Div", CUK_DIV},
    {"Pow", CUK_POW},           {"Max", CUK_MAX}, {"Min", CUK_MIN},    {"PRelu", CUK_PRELU},
    {"Equal", CUK_EQ},          {"Less", CUK_LT}, {"Greater", CUK_GT}, {"LessOrEqual", CUK_LE},
    {"GreaterOrEqual", CUK_GE}, {"And", CUK_AND}, {"Or", CUK_OR},      {"Xor", CUK_XOR},
    {"Mod", CUK_MOD},
};

int cu_binary_code(const char *op_type) {
  for (size_t i = 0; i < sizeof binary_ops / sizeof binary_ops[0]; i++)
    if (!strcmp(op_type, binary_ops[i].name)) return binary_ops[i].op;
  return -1;
}

/* Before opset 7 a binary op broadcast its second input only when asked
 * (broadcast=1), placing its dims at `axis` of the first's (PRelu: the
 * slope along the channel axis); numpy broadcasting aligns to the right. */
static ait_status legacy_broadcast(cu_planner *pl, const ait_node *n, int op, int *in) {
  const cu_tensor *A = &pl->p->t[in[0]], *B = &pl->p->t[in[1]];
  if (B->rank >= A->rank) return AIT_OK;
  bool prelu = op == CUK_PRELU;
  if (!prelu && !ait_attr_int(n, "broadcast", 0)) return AIT_OK;
  int64_t axis = ait_attr_int(n, "axis", -1);
  if (axis < 0)
    axis =
        prelu && B->rank == 1 && A->rank >= 2 && B->dims[0] == A->dims[1] ? 1 : A->rank - B->rank;
  if (axis + B->rank > A->rank)
    return ait_err(AIT_E_SHAPE, "cuda: %s broadcast axis %lld does not fit", n->op_type,
                   (long long)axis);
  int64_t dims[AIT_MAX_RANK];
  for (int k = 0; k < A->rank; k++)
    dims[k] = k >= axis && k < axis + B->rank ? B->dims[k - axis] : 1;
  int b = in[1];
  if (B->layout != CU_PLAIN) AIT_TRY(cu_in(pl, n->in[1], CU_PLAIN, &b));
  return cu_view_dims(pl, b, A->rank, dims, &in[1]);
}

/* x * s + r with s a constant of one float per channel ([C, 1, 1] or [1,
 * C, 1, 1]) and the Add of r [N, C, H, W] the Mul's only reader: one
 * per-channel epilogue step (ConvNeXt's layer scale and residual, 18 Mul
 * and 18 Add passes). *done when lowered. */
static ait_status scale_add(cu_planner *pl, const ait_node *n, bool *done) {
  *done = false;
  const ait_graph *g = pl->g;
  if (!ait_is_op_in(n, "", "Mul") || n->n_in != 2 || n->in[0] < 0 || n->in[1] < 0 || n->n_out < 1 ||
      n->out[0] < 0)
    return AIT_OK;
  int si = g->values[n->in[0]].init ? 0 : 1, xv = n->in[1 - si], sv = n->in[si];
  const ait_tensor *S = g->values[sv].init;
  const ait_value *X = &g->values[xv];
  if (!S || S->dtype != AIT_FLOAT32 || X->rank != 4 || g->values[xv].init) return AIT_OK;
  int64_t C = X->dims[1].v;
  bool chan = C > 0 && ait_tensor_numel(S) == C &&
              ((S->rank == 3 && S->dims[1] == 1 && S->dims[2] == 1) ||
               (S->rank == 4 && S->dims[0] == 1 && S->dims[2] == 1 && S->dims[3] == 1));
  if (!chan) return AIT_OK;
  ait_match_view view = gate_view(g);
  int r[1], add;
  if (view.readers(view.ctx, n->out[0], r, 1) != 1 || (add = r[0]) < 0 ||
      pl->role[add] != CU_ROLE_NONE)
    return AIT_OK;
  const ait_node *a = &g->nodes[add];
  if (!ait_is_op_in(a, "", "Add") || a->n_in != 2 || a->n_out < 1 || a->out[0] < 0 || a->opset < 7)
    return AIT_OK;
  int rv = a->in[0] == n->out[0] ? a->in[1] : a->in[0];
  if (rv < 0 || rv == n->out[0] || g->values[rv].rank != 4 || g->values[a->out[0]].rank != 4)
    return AIT_OK;
  for (int k = 0; k < 4; k++)
    if (g->values[rv].dims[k].v != X->dims[k].v || X->dims[k].v < 0 ||
        g->values[a->out[0]].dims[k].v != X->dims[k].v)
      return AIT_OK;
  int x, z, y, sc;
  AIT_TRY(cu_in_any(pl, xv, &x));
  cu_layout lay = pl->p->t[x].layout;
  AIT_TRY(cu_in(pl, rv, lay, &z));
  if (pl->p->t[z].layout != lay || pl->p->t[z].dt != pl->p->t[x].dt) return AIT_OK;
  AIT_TRY(cu_const_raw(pl, AIT_FLOAT32, 1, &C, S->data, &sc));
  AIT_TRY(cu_out(pl, a->out[0], lay, &y));
  pl->role[add] = CU_ROLE_SKIP;
  *done = true;
  return cu_emit_epilogue(pl, node_index(pl, n), "Mul + Add", x, y, 1, sc, -1, z, NULL);
}

ait_status cu_lower_binary(cu_planner *pl, const ait_node *n) {
  int op = cu_binary_code(n->op_type);
  if (op < 0) return ait_err(AIT_E_INTERNAL, "cuda: %s is not a binary op", n->op_type);
  if (op == CUK_MUL) {
    bool done;
    AIT_TRY(scale_add(pl, n, &done));
    if (done) return AIT_OK;
  }
  if (op == CUK_MOD && ait_attr_int(n, "fmod", 0)) op = CUK_FMOD;
  if (n->n_in > 2) return cu_lower_variadic(pl, n);
  int in[2], y;
  if (n->n_in == 1) { /* Max / Min of one input */
    AIT_TRY(cu_in_any(pl, n->in[0], &in[0]));
    AIT_TRY(cu_out(pl, n->out[0], pl->p->t[in[0]].layout, &y));
    return cu_emit_eltwise(pl, node_index(pl, n), n->op_type, CUK_COPY, NULL, in, 1, y, CUK_COPY,
                           NULL, 1.0f);
  }
  AIT_TRY(cu_in_any(pl, n->in[0], &in[0]));
  AIT_TRY(cu_in_any(pl, n->in[1], &in[1]));
  if (n->opset < 7) AIT_TRY(legacy_broadcast(pl, n, op, in));
  AIT_TRY(cu_out(pl, n->out[0], ew_layout(pl, in, 2, n->out[0]), &y));
  return cu_emit_eltwise(pl, node_index(pl, n), n->op_type, op, NULL, in, 2, y, CUK_COPY, NULL,
                         1.0f);
}

ait_status cu_lower_where(cu_planner *pl, const ait_node *n) {
  int in[3], y;
  for (int i = 0; i < 3; i++)
    AIT_TRY(cu_in_any(pl, n->in[i], &in[i]));
  AIT_TRY(cu_out(pl, n->out[0], ew_layout(pl, in, 3, n->out[0]), &y));
  return cu_emit_eltwise(pl, node_index(pl, n), "Where", CUK_WHERE, NULL, in, 3, y, CUK_COPY, NULL,
                         1.0f);
}

/* ---- gates: SiLU and the spelled-out HardSwish as one step --------------- */

static bool roles_free(const cu_planner *pl, const int *nodes, int n) {
  for (int k = 0; k < n; k++)
    if (pl->role[nodes[k]] != CU_ROLE_NONE) return false;
  return true;
}

/* The 2-D Conv (FusedConv without activation or residual) writing x, or
 * -1: a SiLU or HardSwish after it runs in its epilogue (the depthwise
 * kernel's store, cuDNN's split epilogue pass, the GEMM form's activation
 * pass). */
static int conv_producer(const cu_planner *pl, int x) {
  const ait_graph *g = pl->g;
  int p = g->values[x].producer;
  if (p < 0 || pl->role[p] != CU_ROLE_NONE) return -1;
  const ait_node *n = &g->nodes[p];
  bool fused = ait_is_op_in(n, AIT_FUSED_DOMAIN, "FusedConv");
  if ((!fused && !ait_is_op_in(n, "", "Conv")) || n->n_in < 2 || n->in[1] < 0 || n->n_out != 1 ||
      n->out[0] != x)
    return -1;
  const ait_tensor *w = g->values[n->in[1]].init;
  if (!w || w->rank != 4 || (fused && n->n_in > 3 && n->in[3] >= 0)) return -1;
  ait_act a;
  if (fused && (ait_act_parse(n, &a) || a.kind != AIT_ACT_NONE)) return -1;
  return p;
}

/* The step op and parameters of a matched HardSwish, and its output value. */
static int hswish_of(const ait_graph *g, const ait_hard_swish_match *m, int *op, float *p) {
  p[0] = p[1] = 0.0f;
  if (m->c == 3.0f && m->d == 6.0f) {
    *op = CUK_HARD_SWISH;
  } else {
    *op = CUK_HARD_SWISH_P;
    p[0] = 1.0f / m->d;
    p[1] = m->c / m->d;
  }
  return g->nodes[m->mul_first ? m->div : m->mul].out[0];
}

/* The spelled-out HardSwish on x whose nodes alone read x (its Add and
 * its Mul by x), or false. */
static bool hswish_on(const ait_match_view *view, int x, ait_hard_swish_match *m) {
  int r[2];
  if (view->readers(view->ctx, x, r, 2) != 2 || r[0] < 0 || r[1] < 0) return false;
  for (int k = 0; k < 2; k++)
    if (ait_match_hard_swish(view, r[k], m) && m->x == x && (m->mul == r[1 - k])) return true;
  return false;
}

int cu_gate_after_conv(cu_planner *pl, int x, int *op, float *p) {
  ait_match_view view = gate_view(pl->g);
  ait_silu_match m;
  ait_hard_swish_match h;
  p[0] = p[1] = 0.0f;
  if (ait_match_silu(&view, x, &m)) {
    *op = CUK_SILU;
    return m.y;
  }
  if (hswish_on(&view, x, &h)) return hswish_of(pl->g, &h, op, p);
  return -1;
}

ait_status cu_find_gates(cu_planner *pl) {
  const ait_graph *g = pl->g;
  ait_match_view view = gate_view(g);
  for (int i = 0; i < g->n_nodes; i++) {
    const ait_node *n = &g->nodes[i];
    if (pl->role[i] != CU_ROLE_NONE || n->n_in < 1 || n->in[0] < 0) continue;
    if (ait_is_op(n, "Sigmoid")) {
      ait_silu_match m;
      if (!ait_match_silu(&view, n->in[0], &m) || m.nodes[0] != i || !roles_free(pl, m.nodes, 2))
        continue;
      int pc = conv_producer(pl, n->in[0]);
      pl->role[i] = pc >= 0 ? CU_ROLE_SKIP : CU_ROLE_SILU;
      pl->role[m.nodes[1]] = CU_ROLE_SKIP;
      if (pc >= 0) pl->role[pc] = CU_ROLE_CONV_GATE;
    } else if (ait_is_op(n, "Add")) {
      ait_hard_swish_match m;
      if (!ait_match_hard_swish(&view, i, &m)) continue;
      int nodes[4] = {m.add, m.clip, m.mul, m.div};
      if (!roles_free(pl, nodes, 4)) continue;
      ait_hard_swish_match h;
      int pc = hswish_on(&view, m.x, &h) && h.add == i ? conv_producer(pl, m.x) : -1;
      pl->role[m.clip] = pl->role[m.mul] = pl->role[m.div] = CU_ROLE_SKIP;
      pl->role[i] = pc >= 0 ? CU_ROLE_SKIP : CU_ROLE_HARD_SWISH;
      if (pc >= 0) pl->role[pc] = CU_ROLE_CONV_GATE;
    }
  }
  return AIT_OK;
}

/* At the gate's first node (the Sigmoid; the Add), which cu_find_gates
 * marked, the whole gate into the value its last node writes. */
ait_status cu_lower_gate(cu_planner *pl, const ait_node *n) {
  ait_match_view view = gate_view(pl->g);
  int i = node_index(pl, n), x, yv, op;
  float p[2] = {0, 0};
  if (pl->role[i] == CU_ROLE_SILU) {
    ait_silu_match m;
    if (!ait_match_silu(&view, n->in[0], &m))
      return ait_err(AIT_E_INTERNAL, "cuda: the SiLU at %s no longer matches", ait_node_desc(n));
    x = n->in[0], yv = m.y, op = CUK_SILU;
  } else {
    ait_hard_swish_match m;
    if (!ait_match_hard_swish(&view, i, &m))
      return ait_err(AIT_E_INTERNAL, "cuda: the HardSwish at %s no longer matches",
                     ait_node_desc(n));
    x = m.x, yv = hswish_of(pl->g, &m, &op, p);
  }
  int xt, y;
  AIT_TRY(cu_in_any(pl, x, &xt));
  AIT_TRY(cu_out(pl, yv, pl->p->t[xt].layout, &y));
  int in[1] = {xt};
  return cu_emit_eltwise(pl, i, op == CUK_SILU ? "SiLU" : "HardSwish", op, p, in, 1, y, CUK_COPY,
                         NULL, 1.0f);
}

#endif
