/* Fusion: a Conv, Gemm or MatMul absorbs the chain that follows it, in this
 * order, each step only when the intermediate value has no other reader:
 *   bias      Add of a per-channel (Conv) / per-column (MatMul) constant
 *   scale     Mul / Div by a constant scalar (MatMul, before anything else)
 *   residual  Add of another tensor Z (Conv, MatMul)
 *   activation Relu, Clip, Sigmoid, Tanh, LeakyRelu, HardSigmoid, HardSwish,
 *             and Gelu written out as x * 0.5 * (1 + erf(x / sqrt 2))
 * The node becomes FusedConv / FusedGemm / FusedMatMul (domain ai.aitune,
 * see src/ops/fused_impl.h) and keeps its name; the absorbed nodes die.
 *
 * nat_pass_epilogue (native only: the other users of the passes lower
 * activations by name) goes further, with epilogue programs: a gate that
 * multiplies the product (SiLU, HardSwish spelled out, Mish), more
 * activations after the first, a Mul by a per-channel constant (folded into
 * the weights), and the same gates without a producer (FusedUnary). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/native/native.h"
#include "ir/passes/passes.h"

typedef enum base_kind { B_NONE, B_CONV, B_GEMM, B_MATMUL } base_kind;

static base_kind kind_of(const ait_node *n) {
  if (ait_is_op(n, "Conv")) return B_CONV;
  if (ait_is_op(n, "Gemm")) return B_GEMM;
  if (ait_is_op(n, "MatMul")) return B_MATMUL;
  if (!strcmp(n->domain, AIT_FUSED_DOMAIN)) {
    if (!strcmp(n->op_type, "FusedConv")) return B_CONV;
    if (!strcmp(n->op_type, "FusedGemm")) return B_GEMM;
    if (!strcmp(n->op_type, "FusedMatMul")) return B_MATMUL;
  }
  return B_NONE;
}

static int in_at(const ait_node *n, int k) { return k < n->n_in ? n->in[k] : -1; }

static bool has_act(const ait_node *n) { return ait_attr_str(n, "activation", "")[0] != '\0'; }

/* The other input of binary node c, given one of them is y; -1 if neither. */
static int other_input(const ait_node *c, int y) {
  if (c->n_in != 2) return -1;
  if (c->in[0] == y) return c->in[1];
  if (c->in[1] == y) return c->in[0];
  return -1;
}

/* Scalar float32 constant value of v, if it is one. */
static bool const_scalar(const ait_graph *g, int v, float *out) {
  if (!nat_is_const(g, v)) return false;
  const ait_tensor *t = g->values[v].init;
  if (t->dtype != AIT_FLOAT32 || ait_tensor_numel(t) != 1) return false;
  *out = *(const float *)t->data;
  return true;
}

/* Make p a fused node (first absorption) and grow its inputs to n_in. */
static ait_status become_fused(ait_node *p, base_kind k, int n_in) {
  static const char *const names[] = {"", "FusedConv", "FusedGemm", "FusedMatMul"};
  if (strcmp(p->domain, AIT_FUSED_DOMAIN)) AIT_TRY(nat_node_make_fused(p, names[k]));
  if (p->n_in < n_in) {
    int *more = realloc(p->in, sizeof(int) * (size_t)n_in);
    if (!more) return ait_err(AIT_E_NOMEM, "out of memory fusing %s", ait_node_desc(p));
    for (int k2 = p->n_in; k2 < n_in; k2++)
      more[k2] = -1;
    p->in = more;
    p->n_in = n_in;
  }
  return AIT_OK;
}

/* p now writes what node c wrote; c dies. */
static void absorb(nat_uses *u, int pi, int ci) {
  ait_graph *g = u->g;
  g->nodes[pi].out[0] = g->nodes[ci].out[0];
  g->values[g->nodes[ci].out[0]].producer = pi;
  u->dead[ci] = true;
}

/* Number of output channels (Conv) / columns (MatMul) of p, or -1. */
static int64_t out_features(const ait_graph *g, const ait_node *p, base_kind k) {
  int w = in_at(p, 1);
  if (w < 0) return -1;
  const ait_value *wv = &g->values[w];
  if (k == B_CONV) return wv->rank >= 3 ? wv->dims[0].v : -1;
  if (k == B_MATMUL) return wv->rank >= 2 ? wv->dims[wv->rank - 1].v : -1;
  return -1;
}

/* A constant c that adds one value per feature: shape [.., F, 1 .. 1] with
 * `trail` trailing 1s after the feature axis (Conv: spatial rank; MatMul: 0)
 * or a scalar. New [F] float32 tensor, or NULL when it does not fit. */
static ait_tensor *feature_bias(const ait_graph *g, int c, int64_t F, int trail, int out_rank) {
  if (!nat_is_const(g, c) || F < 1) return NULL;
  const ait_tensor *t = g->values[c].init;
  if (t->dtype != AIT_FLOAT32 || t->rank > out_rank) return NULL;
  int64_t n = ait_tensor_numel(t);
  if (n != 1 && n != F) return NULL;
  if (n == F && F > 1) {
    int fa = t->rank - 1 - trail; /* the feature axis of t */
    if (fa < 0 || t->dims[fa] != F) return NULL;
  }
  ait_tensor *b = ait_tensor_new(AIT_FLOAT32, 1, &F);
  if (!b) return NULL;
  const float *src = t->data;
  float *dst = b->data;
  for (int64_t i = 0; i < F; i++)
    dst[i] = src[n == 1 ? 0 : i];
  return b;
}

/* Add + constant bias into a Conv / MatMul without bias, residual or act. */
static ait_status try_bias(nat_uses *u, int pi, int ci, base_kind k, bool *done) {
  ait_graph *g = u->g;
  ait_node *p = &g->nodes[pi], *c = &g->nodes[ci];
  int y = p->out[0], bias_at = 2;
  if (!ait_is_op(c, "Add") || c->opset < 7 || k == B_GEMM || has_act(p)) return AIT_OK;
  if (in_at(p, 3) >= 0 || in_at(p, bias_at) >= 0) return AIT_OK;
  int o = other_input(c, y);
  const ait_value *yv = &g->values[y];
  if (o < 0 || o == y || yv->rank < 1) return AIT_OK;
  int64_t F = out_features(g, p, k);
  int trail = k == B_CONV ? yv->rank - 2 : 0;
  if (k == B_CONV && yv->rank < 3) return AIT_OK;
  if (k == B_MATMUL && g->values[in_at(p, 1)].rank < 2) return AIT_OK;
  ait_tensor *b = feature_bias(g, o, F, trail, yv->rank);
  if (!b) return AIT_OK;
  const ait_value *cv = &g->values[c->out[0]];
  if (cv->rank >= 0 && cv->rank != yv->rank) { /* the Add must not grow the shape */
    ait_tensor_free(b);
    return AIT_OK;
  }
  int bv = nat_add_initializer(g, g->values[o].name, "_fused", b);
  if (bv < 0) return AIT_E_NOMEM;
  p = &g->nodes[pi];
  AIT_TRY(become_fused(p, k, 3));
  p->in[bias_at] = bv;
  absorb(u, pi, ci);
  *done = true;
  return AIT_OK;
}

/* Mul / Div by a constant scalar right after a MatMul: alpha. */
static ait_status try_scale(nat_uses *u, int pi, int ci, base_kind k, bool *done) {
  ait_graph *g = u->g;
  ait_node *p = &g->nodes[pi], *c = &g->nodes[ci];
  int y = p->out[0];
  if (k != B_MATMUL || has_act(p) || in_at(p, 2) >= 0 || in_at(p, 3) >= 0) return AIT_OK;
  bool mul = ait_is_op(c, "Mul"), div = ait_is_op(c, "Div");
  if ((!mul && !div) || c->opset < 7 || c->n_in != 2) return AIT_OK;
  if (div && c->in[0] != y) return AIT_OK;
  float v;
  if (!const_scalar(g, other_input(c, y), &v) || (div && v == 0.0f)) return AIT_OK;
  if (g->values[c->in[0] == y ? c->in[1] : c->in[0]].init->rank > g->values[y].rank) return AIT_OK;
  float alpha = ait_attr_float(p, "alpha", 1.0f) * (mul ? v : 1.0f / v);
  AIT_TRY(become_fused(p, k, 2));
  AIT_TRY(nat_attr_set_float(p, "alpha", alpha));
  absorb(u, pi, ci);
  *done = true;
  return AIT_OK;
}

/* Add of another float32 tensor: the residual input Z. */
static ait_status try_residual(nat_uses *u, int pi, int ci, base_kind k, bool *done) {
  ait_graph *g = u->g;
  ait_node *p = &g->nodes[pi], *c = &g->nodes[ci];
  int y = p->out[0];
  if (!ait_is_op(c, "Add") || c->opset < 7 || k == B_GEMM || has_act(p) || in_at(p, 3) >= 0)
    return AIT_OK;
  int z = other_input(c, y);
  if (z < 0 || z == y || g->values[z].dtype != AIT_FLOAT32) return AIT_OK;
  if (g->values[z].type != AIT_VT_TENSOR) return AIT_OK;
  AIT_TRY(become_fused(p, k, 4));
  p->in[3] = z;
  absorb(u, pi, ci);
  *done = true;
  return AIT_OK;
}

/* Activation node c applied to p's output. */
static bool act_of(const ait_graph *g, const ait_node *c, ait_act *a) {
  memset(a, 0, sizeof *a);
  if (c->domain[0] || c->n_in < 1) return false;
  const char *op = c->op_type;
  if (!strcmp(op, "Relu")) {
    a->kind = AIT_ACT_RELU;
  } else if (!strcmp(op, "Sigmoid")) {
    a->kind = AIT_ACT_SIGMOID;
  } else if (!strcmp(op, "Tanh")) {
    a->kind = AIT_ACT_TANH;
  } else if (!strcmp(op, "HardSwish")) {
    a->kind = AIT_ACT_HARD_SWISH;
  } else if (!strcmp(op, "Softplus")) {
    a->kind = AIT_ACT_SOFTPLUS;
  } else if (!strcmp(op, "Gelu") && c->opset >= 20 &&
             !strcmp(ait_attr_str(c, "approximate", "none"), "tanh")) {
    a->kind = AIT_ACT_GELU_TANH;
  } else if (!strcmp(op, "Gelu") && c->opset >= 20 &&
             !strcmp(ait_attr_str(c, "approximate", "none"), "none")) {
    a->kind = AIT_ACT_GELU; /* the op of opset 20; exported graphs before it spell it out */
  } else if (!strcmp(op, "LeakyRelu")) {
    a->kind = AIT_ACT_LEAKY_RELU;
    a->p[0] = ait_attr_float(c, "alpha", 0.01f);
  } else if (!strcmp(op, "HardSigmoid")) {
    a->kind = AIT_ACT_HARD_SIGMOID;
    a->p[0] = ait_attr_float(c, "alpha", 0.2f);
    a->p[1] = ait_attr_float(c, "beta", 0.5f);
  } else if (!strcmp(op, "Clip")) {
    a->kind = AIT_ACT_CLIP;
    a->p[0] = -INFINITY;
    a->p[1] = INFINITY;
    if (c->opset < 11) {
      a->p[0] = ait_attr_float(c, "min", -FLT_MAX);
      a->p[1] = ait_attr_float(c, "max", FLT_MAX);
    } else {
      if (in_at(c, 1) >= 0 && !const_scalar(g, c->in[1], &a->p[0])) return false;
      if (in_at(c, 2) >= 0 && !const_scalar(g, c->in[2], &a->p[1])) return false;
    }
    if (isnan(a->p[0]) || isnan(a->p[1])) return false;
  } else {
    return false;
  }
  return true;
}

static ait_status set_act(ait_node *p, const ait_act *a) {
  AIT_TRY(nat_attr_set_str(p, "activation", ait_act_name(a->kind)));
  if (a->kind == AIT_ACT_PROGRAM) {
    char text[160];
    float params[2 * AIT_ACT_MAX_STEPS];
    int np = ait_act_program_text(a, text, sizeof text, params);
    if (np < 0) return ait_err(AIT_E_INTERNAL, "epilogue of %s too long", ait_node_desc(p));
    AIT_TRY(nat_attr_set_str(p, "epilogue", text));
    return nat_attr_set_floats(p, "activation_params", params, np);
  }
  int np = ait_act_n_params(a->kind);
  return np ? nat_attr_set_floats(p, "activation_params", a->p, np) : AIT_OK;
}

const nat_accepts nat_accepts_named = {
    .acts = NAT_ACT_BIT(AIT_ACT_RELU) | NAT_ACT_BIT(AIT_ACT_CLIP) | NAT_ACT_BIT(AIT_ACT_SIGMOID) |
            NAT_ACT_BIT(AIT_ACT_TANH) | NAT_ACT_BIT(AIT_ACT_LEAKY_RELU) |
            NAT_ACT_BIT(AIT_ACT_HARD_SIGMOID) | NAT_ACT_BIT(AIT_ACT_HARD_SWISH) |
            NAT_ACT_BIT(AIT_ACT_GELU),
    .programs = false};

/* native's epilogue pass: every activation, and programs */
static const nat_accepts accepts_all = {.acts = ~0u, .programs = true};

/* A producer's activation, where the target accepts its kind. */
static ait_status try_act(nat_uses *u, int pi, int ci, base_kind k, const nat_accepts *acc,
                          bool *done) {
  ait_graph *g = u->g;
  ait_node *p = &g->nodes[pi], *c = &g->nodes[ci];
  ait_act a;
  if (has_act(p) || c->in[0] != p->out[0] || !act_of(g, c, &a)) return AIT_OK;
  if (!(acc->acts & NAT_ACT_BIT(a.kind))) return AIT_OK;
  AIT_TRY(become_fused(p, k, p->n_in));
  AIT_TRY(set_act(p, &a));
  absorb(u, pi, ci);
  *done = true;
  return AIT_OK;
}

/* The only live reader of v, when it has exactly one and v is not an
 * output; else -1. */
static int sole_reader(const nat_uses *u, int v) {
  return v >= 0 && u->uses[v] == 1 && !u->is_out[v] ? u->consumer[v] : -1;
}

/* The shared matchers (src/ir/passes/match.c) see the graph through these:
 * the live readers of a value, counted as nat_uses counts them. */
static int view_readers(const void *ctx, int v, int *nodes, int max) {
  const nat_uses *u = ctx;
  const ait_graph *g = u->g;
  int filled = 0;
  for (int k = 0; k < max; k++)
    nodes[k] = -1;
  if (u->uses[v] == 1 && max > 0) {
    nodes[filled++] = u->consumer[v];
  } else {
    for (int i = 0; i < g->n_nodes && filled < max; i++) {
      if (u->dead[i]) continue;
      for (int k = 0; k < g->nodes[i].n_in && filled < max; k++)
        if (g->nodes[i].in[k] == v) nodes[filled++] = i;
    }
  }
  return u->uses[v] + (u->is_out[v] ? 1 : 0);
}

static bool view_scalar(const void *ctx, int v, float *out) {
  return const_scalar(((const nat_uses *)ctx)->g, v, out);
}

ait_match_view nat_uses_view(const nat_uses *u) {
  return (ait_match_view){.g = u->g, .readers = view_readers, .scalar = view_scalar, .ctx = u};
}

/* The spelled-out Gelu on y (ait_match_gelu), in a form acc accepts. */
static bool match_gelu(const nat_uses *u, int y, const nat_accepts *acc, ait_gelu_match *m) {
  ait_match_view view = nat_uses_view(u);
  return ait_match_gelu(&view, y, m) &&
         (acc->acts & NAT_ACT_BIT(m->tanh ? AIT_ACT_GELU_TANH : AIT_ACT_GELU));
}

/* The spelled-out Gelu after producer pi into its activation. */
static ait_status try_gelu(nat_uses *u, int pi, base_kind k, const nat_accepts *acc, bool *done) {
  ait_graph *g = u->g;
  ait_node *p = &g->nodes[pi];
  ait_gelu_match m;
  if (has_act(p) || !match_gelu(u, p->out[0], acc, &m)) return AIT_OK;
  ait_act act = {.kind = m.tanh ? AIT_ACT_GELU_TANH : AIT_ACT_GELU};
  AIT_TRY(become_fused(p, k, p->n_in));
  AIT_TRY(set_act(p, &act));
  absorb(u, pi, m.nodes[m.n_nodes - 1]);
  for (int i = 0; i < m.n_nodes - 1; i++)
    u->dead[m.nodes[i]] = true;
  *done = true;
  return AIT_OK;
}

/* ---- epilogue programs ------------------------------------------------ */

/* y -> G1 -> .. -> Gk -> Mul(y, .): a gate of elementwise activations whose
 * result multiplies y itself (SiLU: Sigmoid; HardSwish: HardSigmoid; Mish:
 * Softplus, Tanh). Fills the program's steps and the nodes to drop (gate
 * nodes, then the Mul last); *n_nodes = k + 1. y must have exactly two
 * readers: G1 and the Mul. */
static bool match_gated(const nat_uses *u, int y, int skip, ait_act *prog, int *nodes,
                        int *n_nodes) {
  const ait_graph *g = u->g;
  if (y < 0 || u->uses[y] != 2 || g->values[y].dtype != AIT_FLOAT32) return false;
  int first = -1;
  for (int i = 0; i < g->n_nodes && first < 0; i++) {
    if (u->dead[i] || i == skip) continue;
    const ait_node *n = &g->nodes[i];
    ait_act a;
    if (n->n_in >= 1 && n->in[0] == y && !ait_is_op(n, "Mul") && act_of(g, n, &a)) first = i;
  }
  if (first < 0) return false;
  memset(prog, 0, sizeof *prog);
  prog->kind = AIT_ACT_PROGRAM;
  int at = first, k = 0;
  for (;;) {
    const ait_node *n = &g->nodes[at];
    ait_act a;
    if (k == AIT_ACT_MAX_STEPS || n->n_out < 1 || !act_of(g, n, &a)) return false;
    prog->steps[k].kind = a.kind;
    prog->steps[k].p[0] = a.p[0], prog->steps[k].p[1] = a.p[1];
    nodes[k++] = at;
    int v = n->out[0];
    int next = sole_reader(u, v);
    if (next < 0 || u->dead[next]) return false;
    const ait_node *m = &g->nodes[next];
    if (ait_is_op(m, "Mul") && m->opset >= 7 && other_input(m, v) == y) {
      prog->steps[k - 1].mul_x = true;
      prog->n_steps = k;
      nodes[k] = next;
      *n_nodes = k + 1;
      return g->values[m->out[0]].dtype == AIT_FLOAT32;
    }
    if (m->in[0] != v) return false;
    at = next;
  }
}

/* The gated chain after producer pi into its activation, as a program. */
static ait_status try_gated(nat_uses *u, int pi, base_kind k, bool *done) {
  ait_graph *g = u->g;
  ait_node *p = &g->nodes[pi];
  ait_act prog;
  int nodes[AIT_ACT_MAX_STEPS + 1], nn = 0;
  if (has_act(p) || u->is_out[p->out[0]] || !match_gated(u, p->out[0], pi, &prog, nodes, &nn))
    return AIT_OK;
  AIT_TRY(become_fused(p, k, p->n_in));
  AIT_TRY(set_act(p, &prog));
  absorb(u, pi, nodes[nn - 1]);
  for (int i = 0; i < nn - 1; i++)
    u->dead[nodes[i]] = true;
  *done = true;
  return AIT_OK;
}

/* An activation after a producer that has one already: one more step of
 * its program (a gated step is matched first, by try_gated). */
static ait_status try_more_act(nat_uses *u, int pi, int ci, base_kind k, bool *done) {
  ait_graph *g = u->g;
  ait_node *p = &g->nodes[pi], *c = &g->nodes[ci];
  ait_act a, cur;
  if (!has_act(p) || c->in[0] != p->out[0] || !act_of(g, c, &a)) return AIT_OK;
  if (ait_act_parse(p, &cur) != AIT_OK) {
    ait_err_clear();
    return AIT_OK;
  }
  if (cur.kind != AIT_ACT_PROGRAM) {
    ait_act one = cur;
    memset(&cur, 0, sizeof cur);
    cur.kind = AIT_ACT_PROGRAM;
    cur.n_steps = 1;
    cur.steps[0].kind = one.kind;
    cur.steps[0].p[0] = one.p[0], cur.steps[0].p[1] = one.p[1];
  }
  if (cur.n_steps == AIT_ACT_MAX_STEPS) return AIT_OK;
  ait_act_step *st = &cur.steps[cur.n_steps++];
  st->kind = a.kind;
  st->p[0] = a.p[0], st->p[1] = a.p[1];
  AIT_TRY(become_fused(p, k, p->n_in));
  AIT_TRY(set_act(p, &cur));
  absorb(u, pi, ci);
  *done = true;
  return AIT_OK;
}

/* Mul by a per-channel (Conv) / per-column (MatMul) constant right after
 * the product, before any bias-free addend or activation: folded into
 * constant weights (and bias), no work left at run time. */
static ait_status try_channel_scale(nat_uses *u, int pi, int ci, base_kind k, bool *done) {
  ait_graph *g = u->g;
  ait_node *p = &g->nodes[pi], *c = &g->nodes[ci];
  int y = p->out[0];
  if (!ait_is_op(c, "Mul") || c->opset < 7 || (k != B_CONV && k != B_MATMUL) || has_act(p) ||
      in_at(p, 3) >= 0 || ait_attr_float(p, "alpha", 1.0f) != 1.0f)
    return AIT_OK;
  int o = other_input(c, y), w = in_at(p, 1), b = in_at(p, 2);
  const ait_value *yv = &g->values[y];
  if (o < 0 || o == y || yv->rank < (k == B_CONV ? 3 : 1) || !nat_is_const(g, w)) return AIT_OK;
  if (b >= 0 && !nat_is_const(g, b)) return AIT_OK;
  const ait_value *cv = &g->values[c->out[0]];
  if (cv->rank >= 0 && cv->rank != yv->rank) return AIT_OK;
  const ait_tensor *W = g->values[w].init;
  if (W->dtype != AIT_FLOAT32 || (k == B_MATMUL && W->rank != 2)) return AIT_OK;
  int64_t F = out_features(g, p, k);
  ait_tensor *sc = feature_bias(g, o, F, k == B_CONV ? yv->rank - 2 : 0, yv->rank);
  if (!sc) return AIT_OK;
  ait_tensor *W2 = ait_tensor_clone(W), *B2 = NULL;
  if (b >= 0) B2 = ait_tensor_clone(g->values[b].init);
  if (!W2 || (b >= 0 && (!B2 || B2->dtype != AIT_FLOAT32 || ait_tensor_numel(B2) != F))) {
    ait_tensor_free(sc), ait_tensor_free(W2), ait_tensor_free(B2);
    return W2 ? AIT_OK : AIT_E_NOMEM;
  }
  const float *s = sc->data;
  float *wd = W2->data;
  int64_t per = ait_tensor_numel(W2) / F;
  for (int64_t i = 0; i < ait_tensor_numel(W2); i++)
    wd[i] *= s[k == B_CONV ? i / per : i % F];
  if (B2)
    for (int64_t i = 0; i < F; i++)
      ((float *)B2->data)[i] *= s[i];
  ait_tensor_free(sc);
  int wv = nat_add_initializer(g, g->values[w].name, "_scaled", W2);
  int bv = B2 ? nat_add_initializer(g, g->values[b].name, "_scaled", B2) : -1;
  if (wv < 0 || (B2 && bv < 0)) return AIT_E_NOMEM;
  p = &g->nodes[pi];
  AIT_TRY(become_fused(p, k, p->n_in));
  p->in[1] = wv;
  if (B2) p->in[2] = bv;
  absorb(u, pi, ci);
  *done = true;
  return AIT_OK;
}

/* Absorb as much of what follows node pi as the rules and acc allow. */
static ait_status fuse_from(nat_uses *u, int pi, int *count, const nat_accepts *acc) {
  bool programs = acc->programs;
  ait_graph *g = u->g;
  for (;;) {
    ait_node *p = &g->nodes[pi];
    base_kind k = kind_of(p);
    int y = p->out[0];
    if (y < 0 || g->values[y].dtype != AIT_FLOAT32) return AIT_OK;
    bool done = false;
    AIT_TRY(try_gelu(u, pi, k, acc, &done));
    if (!done && programs) AIT_TRY(try_gated(u, pi, k, &done));
    int ci = sole_reader(u, y);
    if (!done && ci >= 0 && !u->dead[ci] && g->nodes[ci].n_out >= 1) {
      if (!done) AIT_TRY(try_bias(u, pi, ci, k, &done));
      if (!done) AIT_TRY(try_scale(u, pi, ci, k, &done));
      if (!done) AIT_TRY(try_residual(u, pi, ci, k, &done));
      if (!done) AIT_TRY(try_act(u, pi, ci, k, acc, &done));
      if (!done && programs) AIT_TRY(try_channel_scale(u, pi, ci, k, &done));
      if (!done && programs) AIT_TRY(try_more_act(u, pi, ci, k, &done));
    }
    if (!done) return AIT_OK;
    (*count)++;
    AIT_TRY(nat_uses_refresh(u));
  }
}

ait_status nat_pass_fuse(nat_uses *u, nat_pass_stats *s, const nat_accepts *acc) {
  ait_graph *g = u->g;
  for (int i = 0; i < g->n_nodes; i++) {
    if (u->dead[i] || kind_of(&g->nodes[i]) == B_NONE || g->nodes[i].n_out < 1) continue;
    if (g->nodes[i].n_out > 1 && g->nodes[i].out[1] >= 0) continue;
    AIT_TRY(fuse_from(u, i, &s->fused, acc));
  }
  return AIT_OK;
}

/* A gated chain without a producer to join (its input has other readers,
 * or comes from anything but a product): one FusedUnary in place of the
 * gate's first node. Then single-reader activations after a FusedUnary
 * join its program. */
static ait_status fuse_unary_from(nat_uses *u, int i, int *count) {
  ait_graph *g = u->g;
  ait_node *n = &g->nodes[i];
  ait_act prog, a;
  int nodes[AIT_ACT_MAX_STEPS + 1], nn = 0;
  ait_gelu_match ge;
  if (n->n_in < 1 || n->n_out < 1) return AIT_OK;
  int y = (ait_is_op(n, "Mul") && n->n_in == 2 && !nat_is_const(g, n->in[0])) ? n->in[0]
          : ait_is_op(n, "Mul") && n->n_in == 2                               ? n->in[1]
                                                                              : n->in[0];
  if ((ait_is_op(n, "Div") || ait_is_op(n, "Mul") || ait_is_op(n, "Pow")) &&
      match_gelu(u, y, &accepts_all, &ge) && ge.nodes[0] == i) {
    /* a spelled-out Gelu after anything but a product (wav2vec2's GroupNorm):
     * one pass on the vector GELU instead of five (or eight), Erf on libm */
    memset(&prog, 0, sizeof prog);
    prog.kind = ge.tanh ? AIT_ACT_GELU_TANH : AIT_ACT_GELU;
    AIT_TRY(nat_node_make_fused(n, "FusedUnary"));
    n->in[0] = y;
    n->n_in = 1;
    AIT_TRY(set_act(n, &prog));
    absorb(u, i, ge.nodes[ge.n_nodes - 1]);
    for (int k = 1; k < ge.n_nodes - 1; k++)
      u->dead[ge.nodes[k]] = true;
    (*count)++;
    AIT_TRY(nat_uses_refresh(u));
    return AIT_OK;
  }
  if (!act_of(g, n, &a)) return AIT_OK;
  y = n->in[0];
  if (!match_gated(u, y, -1, &prog, nodes, &nn) || nodes[0] != i) return AIT_OK;
  AIT_TRY(nat_node_make_fused(n, "FusedUnary"));
  n->n_in = 1; /* Clip's bounds are in the program now */
  AIT_TRY(set_act(n, &prog));
  absorb(u, i, nodes[nn - 1]);
  for (int k = 1; k < nn - 1; k++)
    u->dead[nodes[k]] = true;
  (*count)++;
  AIT_TRY(nat_uses_refresh(u));
  for (;;) { /* activations after it: more steps */
    n = &g->nodes[i];
    int ci = sole_reader(u, n->out[0]);
    if (ci < 0 || u->dead[ci] || prog.n_steps == AIT_ACT_MAX_STEPS) return AIT_OK;
    const ait_node *c = &g->nodes[ci];
    if (c->n_out < 1 || c->in[0] != n->out[0] || !act_of(g, c, &a)) return AIT_OK;
    ait_act_step *st = &prog.steps[prog.n_steps++];
    st->kind = a.kind;
    st->p[0] = a.p[0], st->p[1] = a.p[1];
    AIT_TRY(set_act(n, &prog));
    absorb(u, i, ci);
    (*count)++;
    AIT_TRY(nat_uses_refresh(u));
  }
}

/* The single live reader of v (not an output), if it is op `op`; else -1. */
static int sole_op(const nat_uses *u, int v, const char *op) {
  int r = sole_reader(u, v);
  return r >= 0 && !u->dead[r] && ait_is_op(&u->g->nodes[r], op) && u->g->nodes[r].n_out >= 1 ? r
                                                                                              : -1;
}

/* HardSwish spelled out by exporters that have no HardSwish op
 * (ait_match_hard_swish: x * relu6(x + 3) / 6 and its kin) is y *
 * HardSigmoid(y; 1/d, c/d). The Add becomes that HardSigmoid (the Clip and
 * the Div die), so the gate matcher below joins it to y's producer. */
static ait_status spelled_hard_sigmoid(nat_uses *u, int ai, int *count) {
  ait_graph *g = u->g;
  ait_node *A = &g->nodes[ai];
  ait_match_view view = nat_uses_view(u);
  ait_hard_swish_match hs;
  if (!ait_match_hard_swish(&view, ai, &hs)) return AIT_OK;
  int y = hs.x, m = hs.mul, div = hs.div, ci = hs.clip;
  float c = hs.c, d = hs.d;
  bool mul_first = hs.mul_first;
  /* the Add becomes HardSigmoid(y) */
  char *op = strdup("HardSigmoid");
  if (!op) return ait_err(AIT_E_NOMEM, "out of memory fusing %s", ait_node_desc(A));
  free(A->op_type);
  A->op_type = op;
  A->opset = 6;
  A->op = ait_op_lookup("", "HardSigmoid", 6, NULL);
  A->in[0] = y;
  A->n_in = 1;
  AIT_TRY(nat_attr_set_float(A, "alpha", 1.0f / d));
  AIT_TRY(nat_attr_set_float(A, "beta", c / d));
  ait_node *M = &g->nodes[m], *D = &g->nodes[div];
  int gate = A->out[0];
  if (mul_first) { /* Mul(y, clip) -> Div: the Mul reads the gate and writes the Div's output */
    M->in[0] = y, M->in[1] = gate;
    M->out[0] = D->out[0];
    g->values[D->out[0]].producer = m;
  } else { /* Div(clip) -> Mul(y, .): the Mul reads the gate */
    M->in[M->in[0] == y ? 1 : 0] = gate;
  }
  u->dead[ci] = u->dead[div] = true;
  (*count)++;
  return nat_uses_refresh(u);
}

/* Whether constant shape v is [0 | N, C, -1 | T] for x [N, C, T] (Reshape
 * `r`, allowzero 0 for the 0): the same planes as x. */
static bool same_planes(const ait_graph *g, const ait_node *r, int v, const ait_value *x) {
  if (!nat_is_const(g, v) || ait_attr_int(r, "allowzero", 0) != 0) return false;
  const ait_tensor *t = g->values[v].init;
  if (t->dtype != AIT_INT64 || ait_tensor_numel(t) != 3) return false;
  const int64_t *s = t->data;
  return (s[0] == 0 || (s[0] > 0 && s[0] == x->dims[0].v)) && s[1] == x->dims[1].v &&
         (s[2] == -1 || (s[2] > 0 && s[2] == x->dims[2].v));
}

/* torch's GroupNorm with groups == channels and affine, on x [N, C, T]:
 * Reshape(x, [0, C, -1]) -> InstanceNormalization(s, b) -> Reshape(.,
 * Shape(x) or [0, C, -1]) (or none: dynamo) -> Mul(gamma[C, 1]) ->
 * Add(beta[C, 1]), then a
 * spelled-out Gelu or not: one FusedInstanceNorm on x with scale s * gamma
 * and shift b * gamma + beta (native_nn.c, nat_k_instancenorm). */
static ait_status fuse_groupnorm(nat_uses *u, int i, int *count) {
  ait_graph *g = u->g;
  const ait_node *n = &g->nodes[i];
  if (!ait_is_op(n, "InstanceNormalization") || n->n_in != 3 || n->n_out < 1 || n->in[0] < 0)
    return AIT_OK;
  int xin = n->in[0], rp = g->values[xin].producer;
  if (rp < 0 || u->dead[rp] || !ait_is_op(&g->nodes[rp], "Reshape") || g->nodes[rp].n_in < 2 ||
      sole_reader(u, xin) != i)
    return AIT_OK;
  int x = g->nodes[rp].in[0];
  const ait_value *xv = &g->values[x];
  if (xv->dtype != AIT_FLOAT32 || xv->rank != 3 || xv->dims[1].v < 1) return AIT_OK;
  int64_t C = xv->dims[1].v;
  if (!same_planes(g, &g->nodes[rp], g->nodes[rp].in[1], xv)) return AIT_OK;
  /* the Reshape back; the dynamo exporter leaves it out (the first one kept
   * x's shape, so the normalised planes are already [N, C, T]) */
  int r1 = sole_op(u, n->out[0], "Reshape"), sh = -1, shp = -1;
  bool back = false;
  if (r1 >= 0) {
    if (g->nodes[r1].n_in < 2) return AIT_OK;
    sh = g->nodes[r1].in[1], shp = sh >= 0 ? g->values[sh].producer : -1;
    back = shp >= 0 && ait_is_op(&g->nodes[shp], "Shape") && g->nodes[shp].in[0] == x &&
           ait_attr_int(&g->nodes[shp], "start", 0) == 0 &&
           ait_attr_int(&g->nodes[shp], "end", INT64_MAX) >= 3;
    if (!back && !same_planes(g, &g->nodes[r1], sh, xv)) return AIT_OK;
  } else {
    const ait_value *nv = &g->values[n->out[0]];
    if (nv->rank != 3 || nv->dims[1].v != C || nv->dims[2].v != xv->dims[2].v || nv->dims[2].v < 1)
      return AIT_OK;
  }
  int y1 = r1 >= 0 ? g->nodes[r1].out[0] : n->out[0], mi = sole_op(u, y1, "Mul");
  if (mi < 0) return AIT_OK;
  int y2 = g->nodes[mi].out[0], ai = sole_op(u, y2, "Add");
  if (ai < 0) return AIT_OK;
  int y3 = g->nodes[ai].out[0];
  const ait_value *ov = &g->values[y3];
  if (ov->rank != 3 || ov->dims[1].v != C || !nat_is_const(g, n->in[1]) ||
      !nat_is_const(g, n->in[2]))
    return AIT_OK;
  const ait_tensor *S = g->values[n->in[1]].init, *B = g->values[n->in[2]].init;
  if (S->dtype != AIT_FLOAT32 || B->dtype != AIT_FLOAT32 || ait_tensor_numel(S) != C ||
      ait_tensor_numel(B) != C)
    return AIT_OK;
  ait_tensor *gm = feature_bias(g, other_input(&g->nodes[mi], y1), C, 1, 3);
  ait_tensor *bt = gm ? feature_bias(g, other_input(&g->nodes[ai], y2), C, 1, 3) : NULL;
  ait_gelu_match ge;
  bool gelu = bt && match_gelu(u, y3, &accepts_all, &ge);
  if (!bt) {
    ait_tensor_free(gm);
    return AIT_OK;
  }
  float *s2 = gm->data, *b2 = bt->data; /* gm, bt become the new scale, shift */
  const float *s = S->data, *b = B->data;
  for (int64_t c = 0; c < C; c++) {
    b2[c] = b[c] * s2[c] + b2[c];
    s2[c] = s[c] * s2[c];
  }
  int sv = nat_add_initializer(g, g->values[n->in[1]].name, "_gn", gm);
  if (sv < 0) {
    ait_tensor_free(bt);
    return AIT_E_NOMEM;
  }
  int bv = nat_add_initializer(g, g->values[n->in[2]].name, "_gn", bt);
  if (bv < 0) return AIT_E_NOMEM;
  ait_node *f = &g->nodes[i];
  AIT_TRY(nat_node_make_fused(f, "FusedInstanceNorm"));
  f->in[0] = x, f->in[1] = sv, f->in[2] = bv;
  if (gelu) {
    ait_act act = {.kind = ge.tanh ? AIT_ACT_GELU_TANH : AIT_ACT_GELU};
    AIT_TRY(set_act(f, &act));
    for (int k = 0; k < ge.n_nodes - 1; k++)
      u->dead[ge.nodes[k]] = true;
    absorb(u, i, ge.nodes[ge.n_nodes - 1]);
    u->dead[ai] = true;
  } else {
    absorb(u, i, ai);
  }
  u->dead[rp] = u->dead[mi] = true;
  if (r1 >= 0) u->dead[r1] = true;
  /* the Shape of x fed only the Reshape back: as a reader of x it would
   * keep x's plain form alive (cuda's NHWC 1-D convolutions) */
  if (back && u->uses[sh] == 1 && !u->is_out[sh]) u->dead[shp] = true;
  (*count)++;
  return nat_uses_refresh(u);
}

ait_status nat_pass_groupnorm(ait_graph *g, int *fused) {
  *fused = 0;
  nat_uses u;
  memset(&u, 0, sizeof u);
  u.g = g;
  ait_status st = nat_uses_refresh(&u);
  for (int i = 0; !st && i < g->n_nodes; i++)
    if (!u.dead[i]) st = fuse_groupnorm(&u, i, fused);
  if (!st && *fused) st = nat_graph_compact(g, u.dead);
  if (!st && *fused) st = nat_resolve_fused(g);
  nat_uses_free(&u);
  return st;
}

ait_status nat_pass_epilogue(nat_uses *u, nat_pass_stats *s) {
  ait_graph *g = u->g;
  for (int i = 0; i < g->n_nodes; i++)
    if (!u->dead[i]) AIT_TRY(spelled_hard_sigmoid(u, i, &s->fused));
  for (int i = 0; i < g->n_nodes; i++) {
    if (u->dead[i] || kind_of(&g->nodes[i]) == B_NONE || g->nodes[i].n_out < 1) continue;
    if (g->nodes[i].n_out > 1 && g->nodes[i].out[1] >= 0) continue;
    AIT_TRY(fuse_from(u, i, &s->fused, &accepts_all));
  }
  for (int i = 0; i < g->n_nodes; i++)
    if (!u->dead[i]) AIT_TRY(fuse_groupnorm(u, i, &s->fused));
  for (int i = 0; i < g->n_nodes; i++)
    if (!u->dead[i]) AIT_TRY(fuse_unary_from(u, i, &s->fused));
  return AIT_OK;
}
