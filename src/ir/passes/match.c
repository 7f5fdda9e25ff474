/* The pattern library: one matcher per spelled-out pattern, over a view
 * (ait_match_view) each backend answers from its own use counts. */
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

bool ait_match_gelu(const ait_match_view *v, int x, ait_gelu_match *m) {
  const ait_graph *g = v->g;
  int r[2] = {-1, -1};
  float c;
  if (x < 0 || g->values[x].dtype != AIT_FLOAT32) return false;
  if (v->readers(v->ctx, x, r, 2) != 2 || r[0] < 0 || r[1] < 0 || r[0] == r[1]) return false;
  for (int pick = 0; pick < 2; pick++) {
    int d = r[pick], o = r[1 - pick], other;
    bool div = takes_scalar(v, d, "Div", x, false, &c) && near(c, 1.41421356f);
    bool mul = !div && takes_scalar(v, d, "Mul", x, true, &c) && near(c, 0.70710678f);
    if (!div && !mul) continue;
    int e = sole_reader(v, g->nodes[d].out[0]);
    if (e < 0 || !ait_is_op(&g->nodes[e], "Erf") || g->nodes[e].n_in != 1) continue;
    int ev = g->nodes[e].out[0], a = sole_reader(v, ev);
    if (a < 0 || !takes_scalar(v, a, "Add", ev, true, &c) || c != 1.f) continue;
    int av = g->nodes[a].out[0], ov = g->nodes[o].out[0], last;
    if (takes(v, o, "Mul", x, true, &other) && other == av && sole_reader(v, av) == o) {
      /* (x * (1 + erf)) * 0.5 */
      last = sole_reader(v, ov);
      if (last < 0 || !takes_scalar(v, last, "Mul", ov, true, &c) || c != 0.5f) continue;
    } else if (takes_scalar(v, o, "Mul", x, true, &c) && c == 0.5f) {
      /* (x * 0.5) * (1 + erf) */
      last = sole_reader(v, ov);
      if (last < 0 || !takes(v, last, "Mul", ov, true, &other) || other != av ||
          sole_reader(v, av) != last)
        continue;
    } else {
      continue;
    }
    if (g->nodes[last].out[0] < 0) continue;
    *m = (ait_gelu_match){.nodes = {d, e, a, o, last}, .n_nodes = 5, .y = g->nodes[last].out[0]};
    return true;
  }
  return false;
}
