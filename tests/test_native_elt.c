/* native's elementwise kernels and epilogue programs against the reference:
 * every op on random shapes and broadcast patterns (tails that are not a
 * multiple of 8 or 16, NaN and infinities among the inputs), at each ISA
 * level (avx512, avx2, portable) and on one thread; bool and integer
 * outputs exactly. Then the fusion passes: the rewrite happened (op counts
 * after the passes) and eager(rewritten) == eager(original) == native. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/native/native.h"
#include "check.h"
#include "graph_check.h"
#include "model_builder.h"
#include "runtime/eager.h"

#define IN(...) ((const char *const[]){__VA_ARGS__, NULL})

static uint32_t rng = 4242;
static uint32_t next(void) {
  rng = rng * 1664525u + 1013904223u;
  return rng >> 8;
}
static float frand(float lo, float hi) {
  return lo + (hi - lo) * (float)(next() & 0xffff) / 65535.0f;
}

/* Random contents of dtype dt; floats get NaN, +-inf, +-0 at a few places
 * when `specials`. */
static ait_tensor *rand_of(ait_dtype dt, int rank, const int64_t *dims, bool specials) {
  ait_tensor *t = ait_tensor_new(dt, rank, dims);
  int64_t n = ait_tensor_numel(t);
  for (int64_t i = 0; i < n; i++) {
    switch (dt) {
    case AIT_FLOAT32: {
      float v = frand(-4.0f, 4.0f);
      if (specials && next() % 23 == 0) {
        static const float sp[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 30.0f, -30.0f};
        v = sp[next() % 7];
      }
      ((float *)t->data)[i] = v;
      break;
    }
    case AIT_FLOAT16: ((uint16_t *)t->data)[i] = ait_f32_to_f16(frand(-100.0f, 100.0f)); break;
    case AIT_INT32: ((int32_t *)t->data)[i] = (int32_t)(next() % 21) - 10; break;
    case AIT_INT64: ((int64_t *)t->data)[i] = (int64_t)(next() % 21) - 10; break;
    case AIT_BOOL: ((uint8_t *)t->data)[i] = next() % 2; break;
    default: break;
    }
  }
  return t;
}

/* Whether a and b agree: same dtype and shape, floats within tol relative
 * to 1 + |b| (NaN where the other is NaN, infinities equal), everything
 * else bit for bit. */
static bool same(const ait_tensor *a, const ait_tensor *b, double tol) {
  if (!a || !b || a->dtype != b->dtype || a->rank != b->rank ||
      memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->rank))
    return false;
  int64_t n = ait_tensor_numel(a);
  if (a->dtype != AIT_FLOAT32)
    return !memcmp(a->data, b->data, (size_t)n * ait_dtype_size(a->dtype));
  const float *x = a->data, *y = b->data;
  for (int64_t i = 0; i < n; i++) {
    if (isnan(x[i]) || isnan(y[i])) {
      if (isnan(x[i]) != isnan(y[i])) {
        fprintf(stderr, "  at %lld: %g vs reference %g\n", (long long)i, x[i], y[i]);
        return false;
      }
      continue;
    }
    if (x[i] == y[i]) continue;
    if (!(fabs((double)x[i] - y[i]) / (1.0 + fabs((double)y[i])) <= tol)) {
      fprintf(stderr, "  at %lld: %.9g vs reference %.9g\n", (long long)i, x[i], y[i]);
      return false;
    }
  }
  return true;
}

static ait_status run_on(const char *spec, const ait_graph *g, const ait_tensor *const *in,
                         int n_in, ait_tensor **out) {
  ait_backend_config cfg;
  AIT_TRY(ait_backend_config_parse(spec, &cfg));
  void *state = NULL;
  AIT_TRY(cfg.iface->build(&cfg, g, NULL, &state));
  ait_tensor *outs[8] = {0};
  ait_status st = cfg.iface->infer(state, in, n_in, outs);
  cfg.iface->destroy(state);
  *out = outs[0];
  for (int k = 1; k < g->n_outputs; k++)
    ait_tensor_free(outs[k]);
  return st;
}

static const char *const specs[] = {"native:isa=avx512", "native:isa=avx2", "native:isa=portable",
                                    "native:threads=1,isa=avx2"};

/* Every spec against eager on g; `what` names the case in failures. */
static void check_specs(const ait_graph *g, const ait_tensor *const *in, int n_in, double tol,
                        const char *what) {
  ait_tensor *ref = NULL;
  CHECK(ait_eager_run(g, in, n_in, &ref) == AIT_OK);
  for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++) {
    ait_tensor *got = NULL;
    ait_status st = run_on(specs[s], g, in, n_in, &got);
    bool ok = st == AIT_OK && same(got, ref, tol);
    if (!ok)
      fprintf(stderr, "%s on %s: differs from eager (%s)\n", what, specs[s], ait_last_error());
    CHECK(ok);
    ait_tensor_free(got);
  }
  ait_tensor_free(ref);
}

/* The node of a one-node graph runs on a native kernel (not the reference). */
static bool is_fast(const ait_graph *g) {
  return g->n_nodes == 1 && nat_dispatch(g, &g->nodes[0]).kind == NAT_FAST;
}

/* ---- one-node graphs ---------------------------------------------------- */

typedef struct op_case {
  const char *op;
  int n_in;
  ait_dtype in_dt, out_dt;
  double tol;
  int opset;
} op_case;

static const op_case binary_cases[] = {
    {"Add", 2, AIT_FLOAT32, AIT_FLOAT32, 0, 17},
    {"Sub", 2, AIT_FLOAT32, AIT_FLOAT32, 0, 17},
    {"Mul", 2, AIT_FLOAT32, AIT_FLOAT32, 0, 17},
    {"Div", 2, AIT_FLOAT32, AIT_FLOAT32, 0, 17},
    {"Pow", 2, AIT_FLOAT32, AIT_FLOAT32, 1e-6, 17},
    {"Max", 2, AIT_FLOAT32, AIT_FLOAT32, 0, 17},
    {"Min", 2, AIT_FLOAT32, AIT_FLOAT32, 0, 17},
    {"Add", 2, AIT_INT32, AIT_INT32, 0, 17},
    {"Sub", 2, AIT_INT64, AIT_INT64, 0, 17},
    {"Mul", 2, AIT_INT64, AIT_INT64, 0, 17},
    {"Mul", 2, AIT_INT32, AIT_INT32, 0, 17},
    {"Max", 2, AIT_INT64, AIT_INT64, 0, 17},
    {"Equal", 2, AIT_FLOAT32, AIT_BOOL, 0, 17},
    {"Equal", 2, AIT_INT64, AIT_BOOL, 0, 17},
    {"Equal", 2, AIT_INT32, AIT_BOOL, 0, 17},
    {"Less", 2, AIT_FLOAT32, AIT_BOOL, 0, 17},
    {"Greater", 2, AIT_INT64, AIT_BOOL, 0, 17},
    {"LessOrEqual", 2, AIT_FLOAT32, AIT_BOOL, 0, 17},
    {"GreaterOrEqual", 2, AIT_INT32, AIT_BOOL, 0, 17},
    {"And", 2, AIT_BOOL, AIT_BOOL, 0, 17},
    {"Or", 2, AIT_BOOL, AIT_BOOL, 0, 17},
    {"Xor", 2, AIT_BOOL, AIT_BOOL, 0, 17},
};

static const op_case unary_cases[] = {
    {"Abs", 1, AIT_FLOAT32, AIT_FLOAT32, 0, 17},
    {"Neg", 1, AIT_FLOAT32, AIT_FLOAT32, 0, 17},
    {"Exp", 1, AIT_FLOAT32, AIT_FLOAT32, 1e-6, 17},
    {"Log", 1, AIT_FLOAT32, AIT_FLOAT32, 1e-6, 17},
    {"Sqrt", 1, AIT_FLOAT32, AIT_FLOAT32, 0, 17},
    {"Reciprocal", 1, AIT_FLOAT32, AIT_FLOAT32, 0, 17},
    {"Floor", 1, AIT_FLOAT32, AIT_FLOAT32, 0, 17},
    {"Ceil", 1, AIT_FLOAT32, AIT_FLOAT32, 0, 17},
    {"Round", 1, AIT_FLOAT32, AIT_FLOAT32, 0, 17},
    {"Sigmoid", 1, AIT_FLOAT32, AIT_FLOAT32, 1e-6, 17},
    {"Tanh", 1, AIT_FLOAT32, AIT_FLOAT32, 1e-6, 17},
    {"Erf", 1, AIT_FLOAT32, AIT_FLOAT32, 1e-6, 17},
    {"Relu", 1, AIT_FLOAT32, AIT_FLOAT32, 0, 17},
    {"LeakyRelu", 1, AIT_FLOAT32, AIT_FLOAT32, 1e-7, 17},
    {"Elu", 1, AIT_FLOAT32, AIT_FLOAT32, 1e-6, 17},
    {"Selu", 1, AIT_FLOAT32, AIT_FLOAT32, 1e-6, 17},
    {"Softplus", 1, AIT_FLOAT32, AIT_FLOAT32, 1e-6, 17},
    {"Softsign", 1, AIT_FLOAT32, AIT_FLOAT32, 1e-7, 17},
    {"HardSigmoid", 1, AIT_FLOAT32, AIT_FLOAT32, 1e-7, 17},
    {"HardSwish", 1, AIT_FLOAT32, AIT_FLOAT32, 1e-6, 17},
    {"Sin", 1, AIT_FLOAT32, AIT_FLOAT32, 1e-6, 17},
    {"Cos", 1, AIT_FLOAT32, AIT_FLOAT32, 1e-6, 17},
    {"Gelu", 1, AIT_FLOAT32, AIT_FLOAT32, 1e-6, 20},
    {"Not", 1, AIT_BOOL, AIT_BOOL, 0, 17},
};

/* Broadcast patterns: pairs of shapes (rank, dims), then a third for Where. */
typedef struct shape {
  int rank;
  int64_t d[4];
} shape;
typedef struct bpat {
  shape a, b, c;
} bpat;

static const bpat pats[] = {
    {{3, {3, 5, 37}}, {3, {3, 5, 37}}, {3, {3, 5, 37}}},
    {{3, {2, 7, 19}}, {1, {19}}, {0, {0}}},
    {{3, {4, 9, 13}}, {3, {4, 1, 13}}, {2, {9, 1}}},
    {{3, {5, 1, 17}}, {3, {1, 6, 1}}, {1, {17}}},
    {{1, {1}}, {2, {11, 23}}, {2, {11, 23}}},
    {{4, {2, 3, 1, 33}}, {3, {3, 7, 1}}, {4, {2, 1, 7, 33}}},
    {{0, {0}}, {2, {3, 29}}, {1, {29}}},
    {{2, {300, 1000}}, {2, {300, 1}}, {2, {1, 1000}}}, /* large: split over the pool */
    {{1, {70001}}, {1, {70001}}, {0, {0}}},            /* one long row: split by columns */
};

static ait_graph *one_node(const op_case *c, const shape *sh, int n_sh, ait_dtype cond_dt) {
  tb_model *m = tb_new(c->opset);
  static const char *names[3] = {"a", "b", "c"};
  for (int k = 0; k < n_sh; k++)
    tb_input(m, names[k], k == 0 && cond_dt ? (int)cond_dt : (int)c->in_dt, sh[k].rank, sh[k].d);
  const char *ins[4] = {"a", n_sh > 1 ? "b" : NULL, n_sh > 2 ? "c" : NULL, NULL};
  tb_node(m, c->op, "n", ins, IN("y"));
  int ro = sh[0].rank;
  int64_t od[AIT_MAX_RANK];
  memcpy(od, sh[0].d, sizeof(int64_t) * (size_t)ro);
  for (int k = 1; k < n_sh; k++) {
    int64_t prev[AIT_MAX_RANK];
    memcpy(prev, od, sizeof prev);
    CHECK(ait_shape_broadcast(ro, prev, sh[k].rank, sh[k].d, &ro, od) == AIT_OK);
  }
  tb_output(m, "y", (int)c->out_dt, ro, od);
  return tb_parse_graph(m);
}

static void test_binary(void) {
  for (size_t i = 0; i < sizeof binary_cases / sizeof binary_cases[0]; i++)
    for (size_t p = 0; p < sizeof pats / sizeof pats[0]; p++) {
      const op_case *c = &binary_cases[i];
      shape sh[2] = {pats[p].a, pats[p].b};
      if (p % 2) sh[0] = pats[p].b, sh[1] = pats[p].a; /* broadcast on either side */
      ait_graph *g = one_node(c, sh, 2, 0);
      CHECK(g && is_fast(g));
      ait_tensor *x = rand_of(c->in_dt, sh[0].rank, sh[0].d, true);
      ait_tensor *w = rand_of(c->in_dt, sh[1].rank, sh[1].d, true);
      if (!strcmp(c->op, "Equal") && c->in_dt == AIT_FLOAT32) /* some equal pairs */
        for (int64_t k = 0; k < ait_tensor_numel(w) && k < ait_tensor_numel(x); k += 3)
          ((float *)w->data)[k] = ((float *)x->data)[k];
      char what[96];
      snprintf(what, sizeof what, "%s(%s) pattern %zu", c->op, ait_dtype_name(c->in_dt), p);
      const ait_tensor *in[2] = {x, w};
      check_specs(g, in, 2, c->tol, what);
      ait_tensor_free(x);
      ait_tensor_free(w);
      ait_graph_free(g);
    }
}

static void test_where_prelu(void) {
  static const ait_dtype dts[] = {AIT_FLOAT32, AIT_INT64, AIT_INT32, AIT_BOOL};
  for (size_t t = 0; t < 4; t++)
    for (size_t p = 0; p < sizeof pats / sizeof pats[0]; p++) {
      op_case c = {"Where", 3, dts[t], dts[t], 0, 17};
      shape sh[3] = {pats[p].c, pats[p].a, pats[p].b};
      ait_graph *g = one_node(&c, sh, 3, AIT_BOOL);
      CHECK(g && is_fast(g));
      ait_tensor *cond = rand_of(AIT_BOOL, sh[0].rank, sh[0].d, false);
      ait_tensor *x = rand_of(dts[t], sh[1].rank, sh[1].d, true);
      ait_tensor *w = rand_of(dts[t], sh[2].rank, sh[2].d, true);
      char what[64];
      snprintf(what, sizeof what, "Where(%s) pattern %zu", ait_dtype_name(dts[t]), p);
      const ait_tensor *in[3] = {cond, x, w};
      check_specs(g, in, 3, 0, what);
      ait_tensor_free(cond);
      ait_tensor_free(x);
      ait_tensor_free(w);
      ait_graph_free(g);
    }
  /* PRelu: the slope broadcasts to X */
  static const shape xs[] = {{4, {2, 5, 7, 9}}, {3, {3, 17, 33}}};
  static const shape ss[] = {{3, {5, 1, 1}}, {1, {33}}};
  for (int i = 0; i < 2; i++) {
    op_case c = {"PRelu", 2, AIT_FLOAT32, AIT_FLOAT32, 0, 16};
    shape sh[2] = {xs[i], ss[i]};
    ait_graph *g = one_node(&c, sh, 2, 0);
    CHECK(g && is_fast(g));
    ait_tensor *x = rand_of(AIT_FLOAT32, sh[0].rank, sh[0].d, true);
    ait_tensor *w = rand_of(AIT_FLOAT32, sh[1].rank, sh[1].d, false);
    const ait_tensor *in[2] = {x, w};
    check_specs(g, in, 2, 0, "PRelu");
    ait_tensor_free(x);
    ait_tensor_free(w);
    ait_graph_free(g);
  }
}

static void test_unary(void) {
  static const shape sizes[] = {{1, {1}}, {2, {3, 7}}, {3, {2, 3, 43}}, {1, {1000003}}};
  for (size_t i = 0; i < sizeof unary_cases / sizeof unary_cases[0]; i++)
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
      const op_case *c = &unary_cases[i];
      ait_graph *g = one_node(c, &sizes[s], 1, 0);
      CHECK(g && is_fast(g));
      ait_tensor *x = rand_of(c->in_dt, sizes[s].rank, sizes[s].d, true);
      if (c->in_dt == AIT_FLOAT32 && s == 2) /* small magnitudes, where tanh/erf cancel */
        for (int64_t k = 0; k < ait_tensor_numel(x); k += 2)
          ((float *)x->data)[k] *= 1e-3f;
      char what[64];
      snprintf(what, sizeof what, "%s size %zu", c->op, s);
      const ait_tensor *in[1] = {x};
      check_specs(g, in, 1, c->tol, what);
      ait_tensor_free(x);
      ait_graph_free(g);
    }
}

static void test_cast(void) {
  static const ait_dtype dts[] = {AIT_FLOAT32, AIT_INT64, AIT_INT32, AIT_BOOL, AIT_FLOAT16};
  static const shape sh = {2, {37, 1001}};
  for (int a = 0; a < 5; a++)
    for (int b = 0; b < 5; b++) {
      if ((dts[a] == AIT_FLOAT16 && dts[b] != AIT_FLOAT32 && b != a) ||
          (dts[b] == AIT_FLOAT16 && dts[a] != AIT_FLOAT32 && b != a))
        continue;
      op_case c = {"Cast", 1, dts[a], dts[b], 0, 17};
      tb_model *m = tb_new(17);
      tb_input(m, "a", (int)dts[a], sh.rank, sh.d);
      int nd = tb_node(m, "Cast", "n", IN("a"), IN("y"));
      tb_attr_int(m, nd, "to", (int64_t)dts[b]);
      tb_output(m, "y", (int)dts[b], sh.rank, sh.d);
      ait_graph *g = tb_parse_graph(m);
      CHECK(g && is_fast(g));
      ait_tensor *x = rand_of(dts[a], sh.rank, sh.d, true);
      if (dts[a] == AIT_FLOAT32) { /* out of every integer range, and halves */
        float *v = x->data;
        v[1] = 3e9f, v[2] = -3e9f, v[3] = 1e19f, v[4] = -1e19f, v[5] = 2.5f, v[6] = -2.5f;
      }
      char what[64];
      snprintf(what, sizeof what, "Cast %s to %s", ait_dtype_name(dts[a]), ait_dtype_name(dts[b]));
      const ait_tensor *in[1] = {x};
      check_specs(g, in, 1, c.tol, what);
      ait_tensor_free(x);
      ait_graph_free(g);
    }
}

/* ReduceMax/Min/Sum/Mean over axis blocks (and one that is not a block:
 * the reference runs it), keepdims on and off. */
static void test_reduce(void) {
  static const char *const ops[] = {"ReduceMax", "ReduceMin", "ReduceSum", "ReduceMean"};
  static const shape sh[] = {{3, {3, 37, 19}}, {4, {2, 5, 1, 1029}}, {2, {1, 70001}}};
  static const struct {
    int n;
    int64_t axes[3];
  } ax[] = {{1, {-1}}, {1, {1}}, {2, {0, 1}}, {0, {0}}, {2, {0, 2}}, {1, {0}}};
  for (int o = 0; o < 4; o++)
    for (int s = 0; s < 3; s++)
      for (size_t a = 0; a < sizeof ax / sizeof ax[0]; a++)
        for (int keep = 0; keep < 2; keep++) {
          bool fits = true;
          for (int k = 0; k < ax[a].n; k++)
            fits &= ax[a].axes[k] < sh[s].rank;
          if (!fits) continue;
          tb_model *m = tb_new(11); /* axes as an attribute for all four */
          tb_input(m, "a", 1, sh[s].rank, sh[s].d);
          int nd = tb_node(m, ops[o], "n", IN("a"), IN("y"));
          if (ax[a].n) tb_attr_ints(m, nd, "axes", ax[a].n, ax[a].axes);
          tb_attr_int(m, nd, "keepdims", keep);
          int64_t od[4];
          int orank = 0;
          bool red[4] = {false};
          for (int k = 0; k < ax[a].n; k++)
            red[ax[a].axes[k] < 0 ? ax[a].axes[k] + sh[s].rank : ax[a].axes[k]] = true;
          for (int k = 0; k < sh[s].rank; k++)
            if (ax[a].n && !red[k])
              od[orank++] = sh[s].d[k];
            else if (keep)
              od[orank++] = 1;
          tb_output(m, "y", 1, orank, od);
          ait_graph *g = tb_parse_graph(m);
          CHECK(g && is_fast(g));
          ait_tensor *x = rand_of(AIT_FLOAT32, sh[s].rank, sh[s].d, o < 2);
          char what[64];
          snprintf(what, sizeof what, "%s shape %d axes %zu keepdims %d", ops[o], s, a, keep);
          const ait_tensor *in[1] = {x};
          check_specs(g, in, 1, 2e-5, what);
          ait_tensor_free(x);
          ait_graph_free(g);
        }
}

/* ---- fusion -------------------------------------------------------------- */

static ait_graph *rewrite(const ait_graph *g) {
  ait_graph *c = nat_graph_clone(g, NULL, true);
  nat_pass_stats stats;
  if (!c || nat_run_passes_ex(c, &stats, true) != AIT_OK) {
    fprintf(stderr, "rewrite: %s\n", ait_last_error());
    ait_graph_free(c);
    return NULL;
  }
  return c;
}

static const char *epilogue_of(const ait_graph *g, const char *op) {
  for (int i = 0; i < g->n_nodes; i++)
    if (!strcmp(g->nodes[i].op_type, op)) return ait_attr_str(&g->nodes[i], "epilogue", "");
  return "";
}

/* eager(original) == eager(rewritten) == native at each ISA level. */
static void check_fused(const ait_graph *g, const ait_graph *rw, const ait_tensor *const *in,
                        int n_in, double tol, const char *what) {
  ait_tensor *ref = NULL, *re = NULL;
  CHECK(ait_eager_run(g, in, n_in, &ref) == AIT_OK);
  CHECK(ait_eager_run(rw, in, n_in, &re) == AIT_OK);
  if (!same(re, ref, tol)) fprintf(stderr, "%s: rewritten graph differs on eager\n", what);
  CHECK(same(re, ref, tol));
  ait_tensor_free(re);
  ait_tensor_free(ref);
  check_specs(g, in, n_in, tol, what);
}

static float *randv(int64_t n, float scale) {
  float *v = malloc(sizeof(float) * (size_t)n);
  for (int64_t i = 0; i < n; i++)
    v[i] = frand(-scale, scale);
  return v;
}

/* x [1, 6, 11, 13] -> Conv 3x3 (8 channels, bias) -> tail; `tail` adds the
 * nodes after "c" and names the output "y". */
typedef void (*tail_fn)(tb_model *m);

static ait_graph *conv_model(tail_fn tail) {
  tb_model *m = tb_new(17);
  int64_t xd[4] = {1, 6, 11, 13}, wd[4] = {8, 6, 3, 3}, bd[1] = {8};
  tb_input(m, "x", 1, 4, xd);
  float *w = randv(8 * 6 * 9, 0.3f), *b = randv(8, 0.5f);
  tb_init_f32(m, "w", 4, wd, w);
  tb_init_f32(m, "b", 1, bd, b);
  free(w);
  free(b);
  int c = tb_node(m, "Conv", "conv", IN("x", "w", "b"), IN("c"));
  int64_t pads[4] = {1, 1, 1, 1};
  tb_attr_ints(m, c, "pads", 4, pads);
  tail(m);
  int64_t yd[4] = {1, 8, 11, 13};
  tb_output(m, "y", 1, 4, yd);
  return tb_parse_graph(m);
}

static void silu_tail(tb_model *m) {
  tb_node(m, "Sigmoid", "sig", IN("c"), IN("s"));
  tb_node(m, "Mul", "mul", IN("c", "s"), IN("y"));
}
static void hswish_tail(tb_model *m) { tb_node(m, "HardSwish", "hs", IN("c"), IN("y")); }
static void hsig_mul_tail(tb_model *m) { /* HardSwish spelled out */
  int n = tb_node(m, "HardSigmoid", "hsig", IN("c"), IN("s"));
  (void)n;
  tb_node(m, "Mul", "mul", IN("s", "c"), IN("y"));
}
static void mish_tail(tb_model *m) {
  tb_node(m, "Softplus", "sp", IN("c"), IN("s"));
  tb_node(m, "Tanh", "th", IN("s"), IN("t"));
  tb_node(m, "Mul", "mul", IN("c", "t"), IN("y"));
}
static void chscale_tail(tb_model *m) { /* Mul by a per-channel constant, then Relu */
  static const int64_t d[3] = {8, 1, 1};
  float *v = randv(8, 2.0f);
  tb_init_f32(m, "scale", 3, d, v);
  free(v);
  tb_node(m, "Mul", "mul", IN("c", "scale"), IN("m"));
  tb_node(m, "Relu", "relu", IN("m"), IN("y"));
}
/* squeeze-excite: y = c * sigmoid(conv1x1(relu(conv1x1(GAP(c))))) */
static void se_tail(tb_model *m) {
  static const int64_t d1[4] = {4, 8, 1, 1}, d2[4] = {8, 4, 1, 1};
  float *w1 = randv(32, 0.5f), *w2 = randv(32, 0.5f);
  tb_init_f32(m, "se1", 4, d1, w1);
  tb_init_f32(m, "se2", 4, d2, w2);
  free(w1);
  free(w2);
  tb_node(m, "GlobalAveragePool", "gap", IN("c"), IN("g"));
  tb_node(m, "Conv", "fc1", IN("g", "se1"), IN("f1"));
  tb_node(m, "Relu", "r1", IN("f1"), IN("f1r"));
  tb_node(m, "Conv", "fc2", IN("f1r", "se2"), IN("f2"));
  tb_node(m, "Sigmoid", "sg", IN("f2"), IN("s"));
  tb_node(m, "Mul", "scale", IN("c", "s"), IN("y"));
}
/* SiLU, then a residual-free Relu6 on top: a program of two steps */
static void silu_clip_tail(tb_model *m) {
  static const int64_t one[1] = {1};
  static const float lo = 0.0f, hi = 6.0f;
  tb_init_f32(m, "lo", 0, one, &lo);
  tb_init_f32(m, "hi", 0, one, &hi);
  tb_node(m, "Sigmoid", "sig", IN("c"), IN("s"));
  tb_node(m, "Mul", "mul", IN("c", "s"), IN("m"));
  tb_node(m, "Clip", "clip", IN("m", "lo", "hi"), IN("y"));
}

static void test_conv_fusions(void) {
  struct {
    const char *what;
    tail_fn tail;
    int nodes;            /* after the passes */
    const char *epilogue; /* of the FusedConv, "" for none */
    const char *act;
  } cases[] = {
      {"Conv+SiLU", silu_tail, 1, "Sigmoid*x", "Program"},
      {"Conv+HardSwish", hswish_tail, 1, "", "HardSwish"},
      {"Conv+HardSigmoid*x", hsig_mul_tail, 1, "HardSigmoid*x", "Program"},
      {"Conv+Mish", mish_tail, 1, "Softplus;Tanh*x", "Program"},
      {"Conv+Mul(channel const)+Relu", chscale_tail, 1, "", "Relu"},
      {"Conv+SE", se_tail, 5, "", ""},
      {"Conv+SiLU+Clip", silu_clip_tail, 1, "Sigmoid*x;Clip", "Program"},
  };
  int64_t xd[4] = {1, 6, 11, 13};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ait_graph *g = conv_model(cases[i].tail);
    ait_graph *rw = rewrite(g);
    CHECK(g && rw);
    if (!g || !rw) continue;
    int fused = check_count_op(rw, "FusedConv");
    if (rw->n_nodes != cases[i].nodes || fused < 1)
      fprintf(stderr, "%s: %d nodes after the passes (%d FusedConv), wanted %d\n", cases[i].what,
              rw->n_nodes, fused, cases[i].nodes);
    CHECK(rw->n_nodes == cases[i].nodes);
    CHECK(fused >= 1);
    CHECK(!strcmp(epilogue_of(rw, "FusedConv"), cases[i].epilogue));
    const ait_node *fc = NULL;
    for (int k = 0; k < rw->n_nodes; k++)
      if (!strcmp(rw->nodes[k].name, "conv")) fc = &rw->nodes[k];
    CHECK(fc && !strcmp(ait_attr_str(fc, "activation", ""), cases[i].act));
    ait_tensor *x = rand_of(AIT_FLOAT32, 4, xd, false);
    const ait_tensor *in[1] = {x};
    check_fused(g, rw, in, 1, 1e-5, cases[i].what);
    ait_tensor_free(x);
    ait_graph_free(rw);
    ait_graph_free(g);
  }
}

/* x [5, 24] -> MatMul [24, 40] + bias -> GELU (erf form) or SiLU or Mish. */
static ait_graph *matmul_model(int which) {
  tb_model *m = tb_new(17);
  int64_t xd[2] = {5, 24}, wd[2] = {24, 40}, bd[1] = {40}, one[1] = {1};
  tb_input(m, "x", 1, 2, xd);
  float *w = randv(24 * 40, 0.4f), *b = randv(40, 0.5f);
  tb_init_f32(m, "w", 2, wd, w);
  tb_init_f32(m, "b", 1, bd, b);
  free(w);
  free(b);
  tb_node(m, "MatMul", "mm", IN("x", "w"), IN("p"));
  tb_node(m, "Add", "bias", IN("p", "b"), IN("c"));
  if (which == 0) {
    float s2 = 1.41421356f, o = 1.0f, h = 0.5f;
    tb_init_f32(m, "s2", 1, one, &s2);
    tb_init_f32(m, "one", 1, one, &o);
    tb_init_f32(m, "half", 1, one, &h);
    tb_node(m, "Div", "d", IN("c", "s2"), IN("d"));
    tb_node(m, "Erf", "e", IN("d"), IN("e"));
    tb_node(m, "Add", "a", IN("e", "one"), IN("a"));
    tb_node(m, "Mul", "m1", IN("c", "a"), IN("m1"));
    tb_node(m, "Mul", "m2", IN("m1", "half"), IN("y"));
  } else if (which == 1) {
    silu_tail(m);
  } else {
    mish_tail(m);
  }
  int64_t yd[2] = {5, 40};
  tb_output(m, "y", 1, 2, yd);
  return tb_parse_graph(m);
}

static void test_matmul_fusions(void) {
  static const char *const what[] = {"MatMul+GELU", "MatMul+SiLU", "MatMul+Mish"};
  static const char *const acts[] = {"Gelu", "Program", "Program"};
  int64_t xd[2] = {5, 24};
  for (int i = 0; i < 3; i++) {
    ait_graph *g = matmul_model(i), *rw = rewrite(g);
    CHECK(g && rw);
    if (!g || !rw) continue;
    CHECK(rw->n_nodes == 1 && check_count_op(rw, "FusedMatMul") == 1);
    CHECK(rw->n_nodes == 1 && !strcmp(ait_attr_str(&rw->nodes[0], "activation", ""), acts[i]));
    ait_tensor *x = rand_of(AIT_FLOAT32, 2, xd, false);
    const ait_tensor *in[1] = {x};
    check_fused(g, rw, in, 1, 1e-5, what[i]);
    ait_tensor_free(x);
    ait_graph_free(rw);
    ait_graph_free(g);
  }
}

/* A gate without a producer: x -> Sigmoid -> Mul(x, .) -> Tanh becomes one
 * FusedUnary with the program [Sigmoid*x; Tanh]; x also feeds an Add, so a
 * producer could not have taken it. */
static void test_standalone(void) {
  tb_model *m = tb_new(17);
  int64_t xd[3] = {3, 5, 1001};
  tb_input(m, "x", 1, 3, xd);
  tb_node(m, "Sigmoid", "s", IN("x"), IN("s"));
  tb_node(m, "Mul", "m", IN("s", "x"), IN("m"));
  tb_node(m, "Tanh", "t", IN("m"), IN("y"));
  tb_output(m, "y", 1, 3, xd);
  ait_graph *g = tb_parse_graph(m), *rw = rewrite(g);
  CHECK(g && rw);
  if (!g || !rw) return;
  CHECK(rw->n_nodes == 1 && check_count_op(rw, "FusedUnary") == 1);
  CHECK(!strcmp(epilogue_of(rw, "FusedUnary"), "Sigmoid*x;Tanh"));
  ait_tensor *x = rand_of(AIT_FLOAT32, 3, xd, true);
  const ait_tensor *in[1] = {x};
  check_fused(g, rw, in, 1, 1e-6, "Sigmoid*x;Tanh");
  ait_tensor_free(x);
  ait_graph_free(rw);
  ait_graph_free(g);
}

/* Programs are attributes: bad ones are errors, not crashes. */
static void test_program_attrs(void) {
  ait_node n;
  memset(&n, 0, sizeof n);
  n.op_type = (char *)"FusedUnary";
  ait_attr at[3];
  memset(at, 0, sizeof at);
  at[0].name = (char *)"activation", at[0].type = AIT_ATTR_STRING, at[0].s = (char *)"Program";
  at[1].name = (char *)"epilogue", at[1].type = AIT_ATTR_STRING, at[1].s = (char *)"Sigmoid*x;Foo";
  float p[4] = {0};
  at[2].name = (char *)"activation_params", at[2].type = AIT_ATTR_FLOATS, at[2].n = 4;
  at[2].floats = p;
  n.attrs = at;
  n.n_attrs = 3;
  ait_act a;
  CHECK_ERR(ait_act_parse(&n, &a), AIT_E_INVALID_ARG, "unknown step");
  at[1].s = (char *)"Sigmoid*x;Tanh";
  CHECK(ait_act_parse(&n, &a) == AIT_OK && a.n_steps == 2 && a.steps[0].mul_x && !a.steps[1].mul_x);
  at[2].n = 3;
  CHECK_ERR(ait_act_parse(&n, &a), AIT_E_INVALID_ARG, "activation_params");
  at[1].s = (char *)"Tanh;Tanh;Tanh;Tanh;Tanh";
  at[2].n = 4;
  CHECK_ERR(ait_act_parse(&n, &a), AIT_E_INVALID_ARG, "too long");
  at[1].s = (char *)"";
  CHECK_ERR(ait_act_parse(&n, &a), AIT_E_INVALID_ARG, "empty");
}

int main(int argc, char **argv) {
  test_program_attrs();
  test_binary();
  test_where_prelu();
  test_unary();
  test_cast();
  test_reduce();
  test_conv_fusions();
  test_matmul_fusions();
  test_standalone();
  return check_result("test_native_elt");
}
