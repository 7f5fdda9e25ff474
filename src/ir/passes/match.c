/* The pattern library: one matcher per spelled-out pattern, over a view
 * (ait_match_view) each backend answers from its own use counts. */
#include <float.h>
#include <math.h>

#include "ir/passes/passes.h"

static bool near(float a, float b) { return fabsf(a - b) <= AIT_MATCH_RTOL * fabsf(b); }

/* The one reader of v, or -1 (v has other readers, or is an output). */
static int sole_reader(const ait_match_view *v, int x) {
  int r = -1;
  return x >= 0 && v->readers(v->ctx, x, &r, 1) == 1 ? r : -1;
}

/* Node i is the binary op `op` with x as an input (either side when
 * commutative); the other input in *other. */
static bool takes(const ait_match_view *v, int i, const char *op, int x, bool commutative,
                  int *other) {
  const ait_node *n = &v->g->nodes[i];
  if (!ait_is_op(n, op) || n->n_in != 2 || n->n_out < 1) return false;
  if (n->in[0] == x) return *other = n->in[1], true;
  if (commutative && n->in[1] == x) return *other = n->in[0], true;
  return false;
}

/* Node i is op(x, c) with c a scalar constant; its value in *c. */
static bool takes_scalar(const ait_match_view *v, int i, const char *op, int x, bool commutative,
                         float *c) {
  int other;
  return takes(v, i, op, x, commutative, &other) && v->scalar(v->ctx, other, c);
}

/* The halving and the product with x after the gate value av, o being x's
 * reader outside the gate: (x * av) * 0.5, (x * 0.5) * av, or x * (av *
 * 0.5) (the dynamo exporter's order). The two nodes in order in *n1, *n2,
 * the second computing the result. */
static bool halved_product(const ait_match_view *v, int x, int o, int av, int *n1, int *n2) {
  int other, ov = v->g->nodes[o].out[0];
  float c;
  *n1 = o;
  if (takes(v, o, "Mul", x, true, &other) && other == av && sole_reader(v, av) == o) {
    *n2 = sole_reader(v, ov);
    return *n2 >= 0 && takes_scalar(v, *n2, "Mul", ov, true, &c) && c == 0.5f;
  }
  if (takes_scalar(v, o, "Mul", x, true, &c) && c == 0.5f) {
    *n2 = sole_reader(v, ov);
    return *n2 >= 0 && takes(v, *n2, "Mul", ov, true, &other) && other == av &&
           sole_reader(v, av) == *n2;
  }
  int h = sole_reader(v, av);
  if (h < 0 || !takes_scalar(v, h, "Mul", av, true, &c) || c != 0.5f) return false;
  int hv = v->g->nodes[h].out[0];
  *n1 = h, *n2 = o;
  return takes(v, o, "Mul", x, true, &other) && other == hv && sole_reader(v, hv) == o;
}

static bool match_gelu_erf(const ait_match_view *v, int x, const int r[2], ait_gelu_match *m) {
  const ait_graph *g = v->g;
  float c;
  for (int pick = 0; pick < 2; pick++) {
    int d = r[pick], o = r[1 - pick], n1, n2;
    bool div = takes_scalar(v, d, "Div", x, false, &c) && near(c, 1.41421356f);
    bool mul = !div && takes_scalar(v, d, "Mul", x, true, &c) && near(c, 0.70710678f);
    if (!div && !mul) continue;
    int e = sole_reader(v, g->nodes[d].out[0]);
    if (e < 0 || !ait_is_op(&g->nodes[e], "Erf") || g->nodes[e].n_in != 1) continue;
    int ev = g->nodes[e].out[0], a = sole_reader(v, ev);
    if (a < 0 || !takes_scalar(v, a, "Add", ev, true, &c) || c != 1.f) continue;
    if (!halved_product(v, x, o, g->nodes[a].out[0], &n1, &n2)) continue;
    *m = (ait_gelu_match){.nodes = {d, e, a, n1, n2}, .n_nodes = 5, .tanh = false};
    return true;
  }
  return false;
}

/* The tanh form; r[0..nr) are x's readers (3 with Pow, 5 with x * x * x:
 * Mul(x, x) reads x twice). */
static bool match_gelu_tanh(const ait_match_view *v, int x, const int *r, int nr,
                            ait_gelu_match *m) {
  const ait_graph *g = v->g;
  float c;
  int other;
  for (int pick = 0; pick < nr; pick++) {
    int first = r[pick], cube = -1, sq = -1;
    const ait_node *f = &g->nodes[first];
    if (takes_scalar(v, first, "Pow", x, false, &c) && c == 3.0f && nr == 3) {
      cube = first;
    } else if (ait_is_op(f, "Mul") && f->n_in == 2 && f->in[0] == x && f->in[1] == x && nr == 5) {
      sq = first;
      cube = sole_reader(v, f->out[0]);
      if (cube < 0 || !takes(v, cube, "Mul", f->out[0], true, &other) || other != x) continue;
    } else {
      continue;
    }
    int cv = g->nodes[cube].out[0], m3 = sole_reader(v, cv);
    if (m3 < 0 || !takes_scalar(v, m3, "Mul", cv, true, &c) || !near(c, 0.044715f)) continue;
    int m3v = g->nodes[m3].out[0], a1 = sole_reader(v, m3v);
    if (a1 < 0 || !takes(v, a1, "Add", m3v, true, &other) || other != x) continue;
    int a1v = g->nodes[a1].out[0], m4 = sole_reader(v, a1v);
    if (m4 < 0 || !takes_scalar(v, m4, "Mul", a1v, true, &c) || !near(c, 0.7978845608f)) continue;
    int t = sole_reader(v, g->nodes[m4].out[0]);
    if (t < 0 || !ait_is_op(&g->nodes[t], "Tanh") || g->nodes[t].n_in != 1) continue;
    int tv = g->nodes[t].out[0], a2 = sole_reader(v, tv);
    if (a2 < 0 || !takes_scalar(v, a2, "Add", tv, true, &c) || c != 1.f) continue;
    /* x's one reader left: the product with x */
    int o = -1, n_other = 0;
    for (int k = 0; k < nr; k++)
      if (r[k] != first && r[k] != cube && r[k] != a1) o = r[k], n_other++;
    int n1, n2;
    if (n_other != 1 || !halved_product(v, x, o, g->nodes[a2].out[0], &n1, &n2)) continue;
    ait_gelu_match g8 = {.n_nodes = 0, .tanh = true};
    if (sq >= 0) g8.nodes[g8.n_nodes++] = sq;
    int rest[] = {cube, m3, a1, m4, t, a2, n1, n2};
    for (size_t k = 0; k < sizeof rest / sizeof rest[0]; k++)
      g8.nodes[g8.n_nodes++] = rest[k];
    *m = g8;
    return true;
  }
  return false;
}

bool ait_match_gelu(const ait_match_view *v, int x, ait_gelu_match *m) {
  const ait_graph *g = v->g;
  int r[5] = {-1, -1, -1, -1, -1};
  if (x < 0 || g->values[x].dtype != AIT_FLOAT32) return false;
  int nr = v->readers(v->ctx, x, r, 5);
  if (nr < 2 || nr > 5) return false;
  for (int k = 0; k < nr; k++)
    if (r[k] < 0) return false;
  bool ok = nr == 2 ? r[0] != r[1] && match_gelu_erf(v, x, r, m) : match_gelu_tanh(v, x, r, nr, m);
  if (!ok || g->nodes[m->nodes[m->n_nodes - 1]].out[0] < 0) return false;
  m->y = g->nodes[m->nodes[m->n_nodes - 1]].out[0];
  return true;
}

/* ---- SiLU ------------------------------------------------------------------ */

bool ait_match_silu(const ait_match_view *v, int x, ait_silu_match *m) {
  const ait_graph *g = v->g;
  int r[2] = {-1, -1}, other;
  if (x < 0 || g->values[x].dtype != AIT_FLOAT32) return false;
  if (v->readers(v->ctx, x, r, 2) != 2 || r[0] < 0 || r[1] < 0 || r[0] == r[1]) return false;
  for (int pick = 0; pick < 2; pick++) {
    const ait_node *s = &g->nodes[r[pick]];
    if (!ait_is_op(s, "Sigmoid") || s->n_in != 1 || s->n_out < 1 || s->out[0] < 0) continue;
    int mul = r[1 - pick];
    if (!takes(v, mul, "Mul", x, true, &other) || other != s->out[0] ||
        sole_reader(v, s->out[0]) != mul || g->nodes[mul].out[0] < 0)
      continue;
    *m = (ait_silu_match){.nodes = {r[pick], mul}, .y = g->nodes[mul].out[0]};
    return true;
  }
  return false;
}

/* ---- HardSwish spelled out ---------------------------------------------- */

/* Clip node n's bounds, when they are known constants. */
static bool clip_bounds(const ait_match_view *v, const ait_node *n, float *lo, float *hi) {
  *lo = -INFINITY, *hi = INFINITY;
  if (n->opset < 11) {
    *lo = ait_attr_float(n, "min", -FLT_MAX);
    *hi = ait_attr_float(n, "max", FLT_MAX);
  } else {
    if (n->n_in > 1 && n->in[1] >= 0 && !v->scalar(v->ctx, n->in[1], lo)) return false;
    if (n->n_in > 2 && n->in[2] >= 0 && !v->scalar(v->ctx, n->in[2], hi)) return false;
  }
  return !isnan(*lo) && !isnan(*hi);
}

/* Node i divides its input x by d: Div(x, d), or Mul by 1/d (within the
 * one tolerance). */
static bool divides_by(const ait_match_view *v, int i, int x, float d) {
  const ait_node *n = &v->g->nodes[i];
  int other;
  float c;
  if (ait_is_op(n, "Div"))
    return n->n_in == 2 && n->in[0] == x && v->scalar(v->ctx, n->in[1], &c) && c == d;
  return takes(v, i, "Mul", x, true, &other) && v->scalar(v->ctx, other, &c) && near(c * d, 1.0f);
}

bool ait_match_hard_swish(const ait_match_view *v, int add, ait_hard_swish_match *m) {
  const ait_graph *g = v->g;
  const ait_node *a = &g->nodes[add];
  float c, lo, d;
  int other;
  if (!ait_is_op(a, "Add") || a->n_in != 2 || a->n_out < 1 || a->out[0] < 0 || a->opset < 7)
    return false;
  int x = v->scalar(v->ctx, a->in[1], &c)   ? a->in[0]
          : v->scalar(v->ctx, a->in[0], &c) ? a->in[1]
                                            : -1;
  if (x < 0 || g->values[x].dtype != AIT_FLOAT32) return false;
  int clip = sole_reader(v, a->out[0]);
  if (clip < 0 || !ait_is_op(&g->nodes[clip], "Clip") || g->nodes[clip].n_out < 1 ||
      g->nodes[clip].in[0] != a->out[0] || !clip_bounds(v, &g->nodes[clip], &lo, &d) ||
      lo != 0.0f || !(d > 0.0f) || !isfinite(d))
    return false;
  int cv = g->nodes[clip].out[0], r = sole_reader(v, cv), mul, div;
  bool mul_first = false;
  if (r < 0) return false;
  if (takes(v, r, "Mul", cv, true, &other) && other == x) { /* x * clip, then / d */
    mul = r, mul_first = true;
    div = sole_reader(v, g->nodes[r].out[0]);
    if (div < 0 || !divides_by(v, div, g->nodes[r].out[0], d)) return false;
  } else if (divides_by(v, r, cv, d)) { /* clip / d, then x * . */
    div = r;
    mul = sole_reader(v, g->nodes[r].out[0]);
    if (mul < 0 || !takes(v, mul, "Mul", g->nodes[r].out[0], true, &other) || other != x)
      return false;
  } else {
    return false;
  }
  *m = (ait_hard_swish_match){.add = add,
                              .clip = clip,
                              .mul = mul,
                              .div = div,
                              .x = x,
                              .c = c,
                              .d = d,
                              .mul_first = mul_first};
  return true;
}
