/* The native backend: its graph passes on their own (eager on the original
 * graph == eager on the rewritten graph, and the rewrite did what it should),
 * the backend against the reference, its plan cache across input shapes,
 * save/load, options, the thread pool and the arena planner. */
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/native/native.h"
#include "check.h"
#include "graph_check.h"
#include "model_builder.h"
#include "onnx/onnx_io.h"
#include "runtime/eager.h"

char *openblas_get_corename(void); /* cblas.h (OpenBLAS), linked through libaitune */

/* ---- helpers -------------------------------------------------------------- */

static uint32_t rng = 12345;
static float frand(void) {
  rng = rng * 1664525u + 1013904223u;
  return (float)((rng >> 8) & 0xffff) / 32768.0f - 1.0f;
}
static void fill(float *v, int64_t n, float scale) {
  for (int64_t i = 0; i < n; i++)
    v[i] = frand() * scale;
}

static ait_graph *parse(tb_model *m) { return tb_parse_graph(m); }

static ait_tensor *rand_tensor(int rank, const int64_t *dims) {
  ait_tensor *t = ait_tensor_new(AIT_FLOAT32, rank, dims);
  fill(t->data, ait_tensor_numel(t), 1.0f);
  return t;
}

/* Build backend `spec` on g, run once, destroy. out[0] receives output 0. */
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

/* The rewritten copy of g and what the passes did. */
static ait_graph *rewrite(const ait_graph *g, nat_pass_stats *stats) {
  ait_graph *c = nat_graph_clone(g, NULL, true);
  if (!c || nat_run_passes_ex(c, stats, true) != AIT_OK) {
    fprintf(stderr, "rewrite: %s\n", ait_last_error());
    ait_graph_free(c);
    return NULL;
  }
  return c;
}

static const ait_node *find_node(const ait_graph *g, const char *name) {
  for (int i = 0; i < g->n_nodes; i++)
    if (!strcmp(g->nodes[i].name, name)) return &g->nodes[i];
  return NULL;
}

/* eager(original) vs eager(rewritten) vs native (with options `opts`, ""
 * for none, e.g. ",layout=nhwc"), all on the same inputs. */
static void check_equivalent_opts(const ait_graph *g, const ait_graph *rw,
                                  const ait_tensor *const *in, int n_in, double tol,
                                  const char *opts) {
  ait_tensor *ref = NULL, *re = NULL, *nat = NULL, *nat1 = NULL, *off = NULL;
  char spec[128], spec1[128];
  snprintf(spec, sizeof spec, "native%s%s", opts[0] ? ":" : "", opts[0] ? opts + 1 : "");
  snprintf(spec1, sizeof spec1, "native:threads=1%s", opts);
  CHECK(ait_eager_run(g, in, n_in, &ref) == AIT_OK);
  CHECK(ait_eager_run(rw, in, n_in, &re) == AIT_OK);
  CHECK(run_on(spec, g, in, n_in, &nat) == AIT_OK);
  CHECK(run_on(spec1, g, in, n_in, &nat1) == AIT_OK);
  CHECK(run_on("native:fuse=off,threads=3", g, in, n_in, &off) == AIT_OK);
  double d1 = check_rel_diff(re, ref), d2 = check_rel_diff(nat, ref),
         d3 = check_rel_diff(nat1, ref), d4 = check_rel_diff(off, ref);
  if (!(d1 <= tol && d2 <= tol && d3 <= tol && d4 <= tol))
    fprintf(stderr, "differences: rewritten %g, native %g, threads=1 %g, fuse=off %g\n", d1, d2, d3,
            d4);
  CHECK(d1 <= tol);
  CHECK(d2 <= tol);
  CHECK(d3 <= tol);
  CHECK(d4 <= tol);
  ait_tensor_free(ref);
  ait_tensor_free(re);
  ait_tensor_free(nat);
  ait_tensor_free(nat1);
  ait_tensor_free(off);
}

static void check_equivalent(const ait_graph *g, const ait_graph *rw, const ait_tensor *const *in,
                             int n_in, double tol) {
  check_equivalent_opts(g, rw, in, n_in, tol, "");
}

#define IN(...) ((const char *const[]){__VA_ARGS__, NULL})

/* ---- a small CNN: Conv+BN+Relu, depthwise + Clip, pointwise + residual ---- */

static ait_graph *cnn_model(void) {
  static float w1[8 * 3 * 3 * 3], b1[8], sc[8], bb[8], mu[8], var[8], wd[8 * 9], w2[8 * 8],
      w3[8 * 5], c3[5], lo = 0.0f, hi = 6.0f;
  static const int64_t dx[4] = {-1, 3, 10, 10}, dw1[4] = {8, 3, 3, 3}, d8[1] = {8},
                       dwd[4] = {8, 1, 3, 3}, dw2[4] = {8, 8, 1, 1}, dw3[2] = {8, 5}, d5[1] = {5},
                       d0[1] = {0}, dy[2] = {-1, 5};
  fill(w1, 8 * 27, 0.3f), fill(b1, 8, 0.1f), fill(sc, 8, 1.0f), fill(bb, 8, 0.2f);
  fill(mu, 8, 0.2f), fill(wd, 72, 0.4f), fill(w2, 64, 0.3f), fill(w3, 40, 0.5f), fill(c3, 5, 0.1f);
  for (int i = 0; i < 8; i++)
    var[i] = 0.5f + 0.1f * (float)i;
  tb_model *m = tb_new(17);
  tb_input(m, "x", 1, 4, dx);
  tb_output(m, "y", 1, 2, dy);
  tb_init_f32(m, "w1", 4, dw1, w1);
  tb_init_f32(m, "b1", 1, d8, b1);
  tb_init_f32(m, "scale", 1, d8, sc);
  tb_init_f32(m, "bias", 1, d8, bb);
  tb_init_f32(m, "mean", 1, d8, mu);
  tb_init_f32(m, "var", 1, d8, var);
  tb_init_f32(m, "wd", 4, dwd, wd);
  tb_init_f32(m, "w2", 4, dw2, w2);
  tb_init_f32(m, "w3", 2, dw3, w3);
  tb_init_f32(m, "c3", 1, d5, c3);
  tb_init_f32(m, "lo", 0, d0, &lo);
  tb_init_f32(m, "hi", 0, d0, &hi);
  tb_node(m, "Conv", "conv1", IN("x", "w1", "b1"), IN("c1"));
  tb_node(m, "BatchNormalization", "bn1", IN("c1", "scale", "bias", "mean", "var"), IN("n1"));
  tb_node(m, "Relu", "relu1", IN("n1"), IN("r1"));
  int dw = tb_node(m, "Conv", "dw", IN("r1", "wd"), IN("d1"));
  tb_attr_int(m, dw, "group", 8);
  tb_node(m, "Clip", "relu6", IN("d1", "lo", "hi"), IN("d2"));
  tb_node(m, "Conv", "pw", IN("d2", "w2"), IN("p1"));
  tb_node(m, "Identity", "ident", IN("p1"), IN("p2"));
  tb_node(m, "Add", "residual", IN("p2", "d2"), IN("s1"));
  tb_node(m, "Relu", "relu2", IN("s1"), IN("s2"));
  tb_node(m, "GlobalAveragePool", "gap", IN("s2"), IN("g1"));
  tb_node(m, "Flatten", "flat", IN("g1"), IN("f1"));
  tb_node(m, "Gemm", "fc", IN("f1", "w3", "c3"), IN("h1"));
  tb_node(m, "Sigmoid", "sig", IN("h1"), IN("y"));
  return parse(m);
}

static void test_cnn(void) {
  ait_graph *g = cnn_model();
  CHECK(g != NULL);
  if (!g) return;
  nat_pass_stats st;
  ait_graph *rw = rewrite(g, &st);
  CHECK(rw != NULL);
  if (!rw) {
    ait_graph_free(g);
    return;
  }
  CHECK(st.bn_folded == 1);
  CHECK(st.removed == 1); /* the Identity */
  CHECK(check_count_op(rw, "BatchNormalization") == 0);
  CHECK(check_count_op(rw, "Relu") == 0 && check_count_op(rw, "Clip") == 0 &&
        check_count_op(rw, "Add") == 0);
  CHECK(check_count_op(rw, "Sigmoid") == 0 && check_count_op(rw, "Identity") == 0);
  CHECK(check_count_op(rw, "FusedConv") == 3 && check_count_op(rw, "FusedGemm") == 1);
  /* names survive: errors keep naming the user's nodes */
  const ait_node *c1 = find_node(rw, "conv1"), *pw = find_node(rw, "pw"), *dw = find_node(rw, "dw");
  CHECK(c1 && !strcmp(ait_attr_str(c1, "activation", ""), "Relu"));
  CHECK(dw && !strcmp(ait_attr_str(dw, "activation", ""), "Clip"));
  CHECK(pw && pw->n_in == 4 && pw->in[3] >= 0 &&
        !strcmp(ait_attr_str(pw, "activation", ""), "Relu"));
  CHECK(g->n_nodes == 13); /* the caller's graph is untouched */
  CHECK(check_count_op(g, "BatchNormalization") == 1);
  const int64_t d2[4] = {2, 3, 10, 10}, d1[4] = {1, 3, 10, 10};
  ait_tensor *x2 = rand_tensor(4, d2), *x1 = rand_tensor(4, d1);
  check_equivalent(g, rw, (const ait_tensor *const *)&x2, 1, 1e-5);
  check_equivalent(g, rw, (const ait_tensor *const *)&x1, 1, 1e-5);
  ait_tensor_free(x2);
  ait_tensor_free(x1);
  ait_graph_free(rw);
  ait_graph_free(g);
}

/* ---- a transformer-ish block: MatMul+bias+Gelu, scale, residual, LayerNorm -- */

static ait_graph *mlp_model(void) {
  static float w1[16 * 32], b1[32], w2[32 * 16], b2[16], sqrt2 = 1.41421356f, one = 1.0f,
                                                         half = 0.5f, scale = 0.125f;
  static const int64_t dx[3] = {-1, 6, 16}, dw1[2] = {16, 32}, d32[1] = {32}, dw2[2] = {32, 16},
                       d16[1] = {16}, d0[1] = {0};
  fill(w1, 16 * 32, 0.3f), fill(b1, 32, 0.1f), fill(w2, 32 * 16, 0.3f), fill(b2, 16, 0.1f);
  tb_model *m = tb_new(17);
  tb_input(m, "x", 1, 3, dx);
  tb_output(m, "y", 1, 3, dx);
  tb_init_f32(m, "w1", 2, dw1, w1);
  tb_init_f32(m, "b1", 1, d32, b1);
  tb_init_f32(m, "w2", 2, dw2, w2);
  tb_init_f32(m, "b2", 1, d16, b2);
  tb_init_f32(m, "sqrt2", 0, d0, &sqrt2);
  tb_init_f32(m, "one", 0, d0, &one);
  tb_init_f32(m, "half", 0, d0, &half);
  tb_init_f32(m, "scale", 0, d0, &scale);
  tb_node(m, "MatMul", "ff1", IN("x", "w1"), IN("m1"));
  tb_node(m, "Add", "ff1_bias", IN("b1", "m1"), IN("a1"));
  tb_node(m, "Div", "gelu_div", IN("a1", "sqrt2"), IN("g1"));
  tb_node(m, "Erf", "gelu_erf", IN("g1"), IN("g2"));
  tb_node(m, "Add", "gelu_add", IN("g2", "one"), IN("g3"));
  tb_node(m, "Mul", "gelu_mul", IN("a1", "g3"), IN("g4"));
  tb_node(m, "Mul", "gelu_half", IN("g4", "half"), IN("g5"));
  tb_node(m, "MatMul", "ff2", IN("g5", "w2"), IN("m2"));
  tb_node(m, "Mul", "ff2_scale", IN("m2", "scale"), IN("m3"));
  tb_node(m, "Add", "ff2_res", IN("x", "m3"), IN("a2"));
  int sm = tb_node(m, "Softmax", "softmax", IN("a2"), IN("s1"));
  tb_attr_int(m, sm, "axis", -1);
  tb_node(m, "Dropout", "drop", IN("s1"), IN("y"));
  return parse(m);
}

static void test_mlp(void) {
  ait_graph *g = mlp_model();
  CHECK(g != NULL);
  if (!g) return;
  nat_pass_stats st;
  ait_graph *rw = rewrite(g, &st);
  CHECK(rw != NULL);
  if (!rw) {
    ait_graph_free(g);
    return;
  }
  CHECK(check_count_op(rw, "FusedMatMul") == 2 && check_count_op(rw, "MatMul") == 0);
  CHECK(check_count_op(rw, "Erf") == 0 && check_count_op(rw, "Div") == 0 &&
        check_count_op(rw, "Mul") == 0);
  CHECK(check_count_op(rw, "Add") == 0 && check_count_op(rw, "Dropout") == 0);
  CHECK(rw->n_nodes == 3);
  const ait_node *ff1 = find_node(rw, "ff1"), *ff2 = find_node(rw, "ff2");
  CHECK(ff1 && !strcmp(ait_attr_str(ff1, "activation", ""), "Gelu") && ff1->in[2] >= 0);
  CHECK(ff2 && ait_attr_float(ff2, "alpha", 1.0f) == 0.125f && ff2->n_in == 4);
  /* the graph output keeps its name though the Dropout that wrote it went */
  CHECK(!strcmp(rw->values[rw->outputs[0]].name, "y"));
  const int64_t d3[3] = {3, 6, 16}, d1[3] = {1, 1, 16};
  ait_tensor *x = rand_tensor(3, d3), *x1 = rand_tensor(3, d1); /* x1: GEMV */
  check_equivalent(g, rw, (const ait_tensor *const *)&x, 1, 1e-5);
  check_equivalent(g, rw, (const ait_tensor *const *)&x1, 1, 1e-5);
  ait_tensor_free(x);
  ait_tensor_free(x1);
  ait_graph_free(rw);
  ait_graph_free(g);
}

/* ---- few rows: 2..8 rows of A read each column of B once ---------------- */

/* x[M,201] -> Gemm (transB, [700,201], bias) -> Relu -> MatMul [700,45] -> y:
 * both layouts of B, reductions and widths that are no multiple of 8, the
 * first product large enough to split over the pool. */
static ait_graph *few_rows_model(void) {
  static float w1[700 * 201], b1[700], w2[700 * 45];
  fill(w1, 700 * 201, 0.1f), fill(b1, 700, 0.1f), fill(w2, 700 * 45, 0.05f);
  const int64_t dx[2] = {-1, 201}, dy[2] = {-1, 45}, d1[2] = {700, 201}, db[1] = {700};
  const int64_t d2[2] = {700, 45};
  tb_model *m = tb_new(13);
  tb_input(m, "x", 1, 2, dx);
  tb_output(m, "y", 1, 2, dy);
  tb_init_f32(m, "w1", 2, d1, w1);
  tb_init_f32(m, "b1", 1, db, b1);
  tb_init_f32(m, "w2", 2, d2, w2);
  tb_attr_int(m, tb_node(m, "Gemm", "fc1", IN("x", "w1", "b1"), IN("h")), "transB", 1);
  tb_node(m, "Relu", "relu", IN("h"), IN("r"));
  tb_node(m, "MatMul", "fc2", IN("r", "w2"), IN("y"));
  return parse(m);
}

static void test_few_rows(void) {
  ait_graph *g = few_rows_model();
  CHECK(g != NULL);
  if (!g) return;
  nat_pass_stats st;
  ait_graph *rw = rewrite(g, &st);
  CHECK(rw != NULL);
  const int64_t rows[] = {1, 2, 3, 5, 8, 9};
  for (size_t i = 0; rw && i < sizeof rows / sizeof rows[0]; i++) {
    const int64_t d[2] = {rows[i], 201};
    ait_tensor *x = rand_tensor(2, d);
    check_equivalent(g, rw, (const ait_tensor *const *)&x, 1, 1e-5);
    ait_tensor_free(x);
  }
  ait_graph_free(rw);
  ait_graph_free(g);
}

/* ---- one row over constant weights: the packed GEMV ----------------------- */

/* x[M,301] -> Gemm ([301,250], bias) -> Relu -> Gemm (transB, [290,250],
 * bias) -> MatMul [290,231] (+ z) -> y: both layouts of B, reductions that
 * are no multiple of 16 and widths that are no multiple of 4, each B large
 * enough to be packed; z is a graph input, so the MatMul keeps a residual. */
static ait_graph *gemv_model(void) {
  static float w1[301 * 250], b1[250], w2[290 * 250], b2[290], w3[290 * 231];
  fill(w1, 301 * 250, 0.1f), fill(b1, 250, 0.1f), fill(w2, 290 * 250, 0.1f);
  fill(b2, 290, 0.1f), fill(w3, 290 * 231, 0.1f);
  const int64_t dx[2] = {-1, 301}, dy[2] = {-1, 231}, d1[2] = {301, 250}, db1[1] = {250};
  const int64_t d2[2] = {290, 250}, db2[1] = {290}, d3[2] = {290, 231};
  tb_model *m = tb_new(13);
  tb_input(m, "x", 1, 2, dx);
  tb_input(m, "z", 1, 2, dy);
  tb_output(m, "y", 1, 2, dy);
  tb_init_f32(m, "w1", 2, d1, w1);
  tb_init_f32(m, "b1", 1, db1, b1);
  tb_init_f32(m, "w2", 2, d2, w2);
  tb_init_f32(m, "b2", 1, db2, b2);
  tb_init_f32(m, "w3", 2, d3, w3);
  tb_node(m, "Gemm", "fc1", IN("x", "w1", "b1"), IN("h"));
  tb_node(m, "Relu", "relu", IN("h"), IN("r"));
  tb_attr_int(m, tb_node(m, "Gemm", "fc2", IN("r", "w2", "b2"), IN("h2")), "transB", 1);
  tb_node(m, "MatMul", "fc3", IN("h2", "w3"), IN("m3"));
  tb_node(m, "Add", "res", IN("m3", "z"), IN("y"));
  return parse(m);
}

/* Packed copies of a kind a native state holds (one per product that took
 * the path). */
static int packs_kind(void *state, int kind) {
  const nat_state *s = state;
  int n = 0;
  for (int i = 0; s->node_data && i < s->g->n_nodes; i++)
    n += s->node_data[i * NAT_DATA_KINDS + kind] != NULL;
  return n;
}

/* g on `spec` three times (a release before the third): each run agrees
 * with eager, the later ones bit for bit with the first (packs reused, then
 * rebuilt), and the state holds `want` packs of `kind` after every run. */
static void check_packs(const ait_graph *g, const char *spec, const ait_tensor *const *in, int n_in,
                        int kind, int want) {
  ait_backend_config cfg;
  CHECK(ait_backend_config_parse(spec, &cfg) == AIT_OK);
  void *state = NULL;
  CHECK(cfg.iface->build(&cfg, g, NULL, &state) == AIT_OK);
  if (!state) return;
  ait_tensor *ref = NULL, *out[3][1] = {{0}};
  CHECK(ait_eager_run(g, in, n_in, &ref) == AIT_OK);
  for (int k = 0; k < 3; k++) {
    if (k == 2) nat_exec_release(state);
    CHECK(cfg.iface->infer(state, in, n_in, out[k]) == AIT_OK);
    CHECK(check_rel_diff(out[k][0], ref) <= 1e-5);
    if (k)
      CHECK(out[k][0] && out[0][0] &&
            !memcmp(out[k][0]->data, out[0][0]->data, ait_tensor_nbytes(out[0][0])));
    CHECK(packs_kind(state, kind) == want);
  }
  for (int k = 0; k < 3; k++)
    ait_tensor_free(out[k][0]);
  ait_tensor_free(ref);
  cfg.iface->destroy(state);
}

/* Gelu (opset 20): the reference against the closed forms in double, both
 * `approximate` values, a bad one refused; native folds approximate="none"
 * after a MatMul + bias into the product's epilogue (no Gelu node left) and
 * agrees with the reference; "tanh" stays a node of its own. */
static ait_graph *gelu_model(const char *approximate, bool matmul) {
  static float w[24 * 40], b[40];
  fill(w, 24 * 40, 0.3f), fill(b, 40, 0.5f);
  const int64_t dx[2] = {-1, 24}, dy[2] = {-1, 40}, dw[2] = {24, 40}, db[1] = {40};
  tb_model *m = tb_new(20);
  tb_input(m, "x", 1, 2, matmul ? dx : (const int64_t[]){-1, 40});
  tb_output(m, "y", 1, 2, dy);
  const char *g_in = "x";
  if (matmul) {
    tb_init_f32(m, "w", 2, dw, w);
    tb_init_f32(m, "b", 1, db, b);
    tb_node(m, "MatMul", "mm", IN("x", "w"), IN("h"));
    tb_node(m, "Add", "bias", IN("h", "b"), IN("hb"));
    g_in = "hb";
  }
  int n = tb_node(m, "Gelu", "gelu", IN(g_in), IN("y"));
  if (approximate) tb_attr_str(m, n, "approximate", approximate);
  return parse(m);
}

static void test_gelu_op(void) {
  static const char *const modes[] = {NULL, "none", "tanh"};
  for (int k = 0; k < 3; k++) {
    ait_graph *g = gelu_model(modes[k], false);
    CHECK(g != NULL);
    if (!g) continue;
    const int64_t dx[2] = {3, 40};
    ait_tensor *x = rand_tensor(2, dx), *y = NULL;
    float *xv = x->data;
    xv[0] = 0, xv[1] = -3.5f, xv[2] = 6.0f, xv[3] = -0.25f; /* and 116 random in [-1, 1) */
    CHECK(ait_eager_run(g, (const ait_tensor *const *)&x, 1, &y) == AIT_OK);
    double worst = 0;
    for (int i = 0; y && i < 120; i++) {
      double v = xv[i],
             want = k == 2 ? 0.5 * v * (1 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)))
                           : 0.5 * v * (1 + erf(v / sqrt(2.0)));
      double d = fabs(((float *)y->data)[i] - want) / (1 + fabs(want));
      if (d > worst) worst = d;
    }
    if (!(worst <= 1e-6))
      fprintf(stderr, "gelu %s: worst %g\n", modes[k] ? modes[k] : "default", worst);
    CHECK(worst <= 1e-6);
    /* native runs the op itself (not the reference's fallback) and agrees */
    ait_tensor *yn = NULL;
    CHECK(run_on("native", g, (const ait_tensor *const *)&x, 1, &yn) == AIT_OK);
    if (!(check_rel_diff(yn, y) <= 1e-6))
      fprintf(stderr, "gelu %s on native: %g\n", modes[k] ? modes[k] : "default",
              check_rel_diff(yn, y));
    CHECK(check_rel_diff(yn, y) <= 1e-6);
    ait_tensor_free(yn);
    /* the tanh form differs from the erf one: the attribute was read */
    CHECK(y && (k == 2) == (fabsf(((float *)y->data)[3] -
                                  (float)(0.5 * -0.25 * (1 + erf(-0.25 / sqrt(2.0))))) > 1e-7f));
    ait_tensor_free(y), ait_tensor_free(x);
    ait_graph_free(g);
  }
  ait_graph *g = gelu_model("exact", false);
  if (g) {
    const int64_t dx[2] = {1, 40};
    ait_tensor *x = rand_tensor(2, dx), *y = NULL;
    CHECK_ERR(ait_eager_run(g, (const ait_tensor *const *)&x, 1, &y), AIT_E_INVALID_ARG, "exact");
    ait_tensor_free(x);
    ait_graph_free(g);
  }
  for (int k = 1; k < 3; k++) {
    g = gelu_model(modes[k], true);
    if (!g) continue;
    nat_pass_stats st;
    ait_graph *rw = rewrite(g, &st);
    CHECK(rw && check_count_op(rw, "Gelu") == 0); /* both forms fused (the tanh one as GeluTanh) */
    /* 5 rows: the few-rows product; 37: the register tiles, GELU on each
     * tile after its store (40 columns: a masked last vector) */
    for (int64_t rows = 5; rows < 40; rows += 32) {
      const int64_t dx[2] = {rows, 24};
      ait_tensor *x = rand_tensor(2, dx);
      if (rw) check_equivalent(g, rw, (const ait_tensor *const *)&x, 1, 1e-5);
      ait_tensor_free(x);
    }
    ait_graph_free(rw);
    ait_graph_free(g);
  }
}

static void test_gemv_packed(void) {
  ait_graph *g = gemv_model();
  CHECK(g != NULL);
  if (!g) return;
  nat_pass_stats st;
  ait_graph *rw = rewrite(g, &st);
  CHECK(rw != NULL);
  const int64_t rows[] = {1, 3};
  for (size_t i = 0; rw && i < sizeof rows / sizeof rows[0]; i++) {
    const int64_t dx[2] = {rows[i], 301}, dz[2] = {rows[i], 231};
    ait_tensor *in[2] = {rand_tensor(2, dx), rand_tensor(2, dz)};
    check_equivalent(g, rw, (const ait_tensor *const *)in, 2, 1e-5);
    check_equivalent_opts(g, rw, (const ait_tensor *const *)in, 2, 1e-5, ",gemv=plain");
    ait_tensor_free(in[0]), ait_tensor_free(in[1]);
  }
  /* the path runs (three packs, none with gemv=plain), its packs are reused
   * on the next run and rebuilt after a release, with the same outputs */
  const int64_t dx[2] = {1, 301}, dz[2] = {1, 231};
  ait_tensor *in[2] = {rand_tensor(2, dx), rand_tensor(2, dz)};
  bool vec = nat_isa() >= NAT_ISA_AVX2; /* native_gemv.c's dispatch */
  check_packs(g, "native", (const ait_tensor *const *)in, 2, NAT_DATA_GEMV, vec ? 3 : 0);
  check_packs(g, "native:gemv=plain", (const ait_tensor *const *)in, 2, NAT_DATA_GEMV, 0);
  /* each output is one thread's whole sum, so however the guided chunks
   * fall (1..9 threads), the outputs are those of one thread, bit for bit */
  ait_tensor *one = NULL;
  CHECK(run_on("native:threads=1", g, (const ait_tensor *const *)in, 2, &one) == AIT_OK);
  for (int t = 2; one && t <= 9; t++) {
    char spec[64];
    snprintf(spec, sizeof spec, "native:threads=%d", t);
    ait_tensor *got = NULL;
    CHECK(run_on(spec, g, (const ait_tensor *const *)in, 2, &got) == AIT_OK);
    CHECK(got && !memcmp(got->data, one->data, ait_tensor_nbytes(one)));
    ait_tensor_free(got);
  }
  ait_tensor_free(one);
  ait_tensor_free(in[0]), ait_tensor_free(in[1]);
  ait_graph_free(rw);
  ait_graph_free(g);
}

/* ---- MatMuls on AVX-512 register tiles (tiles=on) ------------------------- */

/* x[R,37] -> MatMul [37,70] + bias -> Relu -> MatMul [70,24] + z -> Clip(0, 6)
 * -> MatMul [24,40] -> y: widths off the 16-lane vectors (70), the 24-wide
 * tile, an odd reduction, bias, residual, both clamps, and a product
 * without epilogue. */
static ait_graph *tiles_model(void) {
  static float w1[37 * 70], b1[70], w2[70 * 24], w3[24 * 40], lo = 0.0f, hi = 6.0f;
  fill(w1, 37 * 70, 0.3f), fill(b1, 70, 0.1f), fill(w2, 70 * 24, 0.2f), fill(w3, 24 * 40, 0.3f);
  const int64_t dx[2] = {-1, 37}, dz[2] = {-1, 24}, dy[2] = {-1, 40}, d1[2] = {37, 70};
  const int64_t db[1] = {70}, d2[2] = {70, 24}, d3[2] = {24, 40}, d0[1] = {0};
  tb_model *m = tb_new(13);
  tb_input(m, "x", 1, 2, dx);
  tb_input(m, "z", 1, 2, dz);
  tb_output(m, "y", 1, 2, dy);
  tb_init_f32(m, "w1", 2, d1, w1);
  tb_init_f32(m, "b1", 1, db, b1);
  tb_init_f32(m, "w2", 2, d2, w2);
  tb_init_f32(m, "w3", 2, d3, w3);
  tb_init_f32(m, "lo", 0, d0, &lo);
  tb_init_f32(m, "hi", 0, d0, &hi);
  tb_node(m, "MatMul", "mm1", IN("x", "w1"), IN("h0"));
  tb_node(m, "Add", "bias", IN("h0", "b1"), IN("h1"));
  tb_node(m, "Relu", "relu", IN("h1"), IN("r"));
  tb_node(m, "MatMul", "mm2", IN("r", "w2"), IN("m2"));
  tb_node(m, "Add", "res", IN("m2", "z"), IN("a2"));
  tb_node(m, "Clip", "clip", IN("a2", "lo", "hi"), IN("c"));
  tb_node(m, "MatMul", "mm3", IN("c", "w3"), IN("y"));
  return parse(m);
}

static void test_tiles(void) {
  ait_graph *g = tiles_model();
  CHECK(g != NULL);
  if (!g) return;
  nat_pass_stats st;
  ait_graph *rw = rewrite(g, &st);
  CHECK(rw != NULL && check_count_op(rw, "FusedMatMul") == 2 && check_count_op(rw, "MatMul") == 1);
  CHECK(rw != NULL && check_count_op(rw, "Relu") == 0 && check_count_op(rw, "Clip") == 0);
  const int64_t rows[] = {16, 17, 40, 130};
  for (size_t i = 0; rw && i < sizeof rows / sizeof rows[0]; i++) {
    const int64_t dx[2] = {rows[i], 37}, dz[2] = {rows[i], 24};
    ait_tensor *in[2] = {rand_tensor(2, dx), rand_tensor(2, dz)}, *on = NULL, *off = NULL;
    check_equivalent(g, rw, (const ait_tensor *const *)in, 2, 1e-5);
    check_equivalent_opts(g, rw, (const ait_tensor *const *)in, 2, 1e-5, ",tiles=off");
    /* the tiles really ran where the CPU has them: their sums differ from SGEMM's */
    CHECK(run_on("native", g, (const ait_tensor *const *)in, 2, &on) == AIT_OK);
    CHECK(run_on("native:tiles=off", g, (const ait_tensor *const *)in, 2, &off) == AIT_OK);
    if (nat_nhwc_available()) CHECK(check_rel_diff(on, off) > 0);
    ait_tensor_free(on), ait_tensor_free(off);
    /* each constant B packed once, reused, rebuilt after a release; none with tiles=off */
    check_packs(g, "native", (const ait_tensor *const *)in, 2, NAT_DATA_TILES,
                nat_nhwc_available() ? 3 : 0);
    check_packs(g, "native:tiles=off", (const ait_tensor *const *)in, 2, NAT_DATA_TILES, 0);
    ait_tensor_free(in[0]), ait_tensor_free(in[1]);
  }
  ait_graph_free(rw);
  ait_graph_free(g);
}

/* ---- attention: Transposes, MatMul, scale, mask, Softmax, MatMul ---------- */

static ait_graph *attention_model_of(int64_t S, int64_t H, int64_t D, const int64_t *dm) {
  static float scale = 4.0f;
  const int64_t dq[4] = {-1, S, H, D};
  static const int64_t d0[1] = {0};
  static const int64_t p0213[4] = {0, 2, 1, 3}, p0231[4] = {0, 2, 3, 1};
  tb_model *m = tb_new(17);
  tb_input(m, "q", 1, 4, dq);
  tb_input(m, "k", 1, 4, dq);
  tb_input(m, "v", 1, 4, dq);
  tb_input(m, "mask", 1, 4, dm);
  tb_output(m, "y", 1, 4, dq);
  tb_init_f32(m, "scale", 0, d0, &scale);
  tb_attr_ints(m, tb_node(m, "Transpose", "tq", IN("q"), IN("qt")), "perm", 4, p0213);
  tb_attr_ints(m, tb_node(m, "Transpose", "tk", IN("k"), IN("kt")), "perm", 4, p0231);
  tb_attr_ints(m, tb_node(m, "Transpose", "tv", IN("v"), IN("vt")), "perm", 4, p0213);
  tb_node(m, "MatMul", "qk", IN("qt", "kt"), IN("s0"));
  tb_node(m, "Div", "scale", IN("s0", "scale"), IN("s1"));
  tb_node(m, "Add", "add_mask", IN("s1", "mask"), IN("s2"));
  tb_attr_int(m, tb_node(m, "Softmax", "softmax", IN("s2"), IN("p")), "axis", -1);
  tb_node(m, "MatMul", "pv", IN("p", "vt"), IN("y0"));
  tb_attr_ints(m, tb_node(m, "Transpose", "to", IN("y0"), IN("y")), "perm", 4, p0213);
  return parse(m);
}

static ait_graph *attention_model(void) {
  static const int64_t dm[4] = {-1, 1, 1, 130};
  return attention_model_of(130, 2, 16, dm);
}

/* native:attention=bf16 on g against the reference: bfloat16 operands
 * (8 significant bits) with float sums keep the outputs within ~1e-3; on a
 * CPU with AVX512-BF16 where the kernel applies (head size a multiple of 16)
 * the result must differ from float32's, else the path did not run. */
static void check_bf16(const ait_graph *g, const ait_tensor *const *in, int n_in, bool applies) {
  ait_tensor *ref = NULL, *bf = NULL, *bf1 = NULL, *f32 = NULL;
  CHECK(ait_eager_run(g, in, n_in, &ref) == AIT_OK);
  CHECK(run_on("native:attention=bf16", g, in, n_in, &bf) == AIT_OK);
  CHECK(run_on("native:attention=bf16,threads=1", g, in, n_in, &bf1) == AIT_OK);
  CHECK(run_on("native", g, in, n_in, &f32) == AIT_OK);
  double d = check_rel_diff(bf, ref), d1 = check_rel_diff(bf1, ref), df = check_rel_diff(bf, f32);
  fprintf(stderr, "attention bf16: max rel %.2e (threads=1 %.2e), vs float32 %.2e\n", d, d1, df);
  CHECK(d <= 5e-3 && d1 <= 5e-3);
  CHECK(bf && bf1 && !memcmp(bf->data, bf1->data, ait_tensor_nbytes(bf))); /* deterministic */
  if (applies && nat_attn_bf16_available()) CHECK(df > 0);
  ait_tensor_free(ref);
  ait_tensor_free(bf);
  ait_tensor_free(bf1);
  ait_tensor_free(f32);
}

/* Head sizes 64 and 32 (the AVX-512 P V kernel's 4- and 2-vector tiles),
 * a mask per query row (broadcast along the keys: a load across the lanes
 * of the transposed scores), a full mask (a gather), and BERT's shape with
 * a padding mask (a broadcast; 128 keys: 21 tiles of 6 and one of 2). The
 * blocks' row counts (64, 6, 33) cover full and partial vectors of rows. */
static void test_attention_shapes(void) {
  static const int64_t m1[4] = {-1, 1, 70, 1}, m2[4] = {-1, 1, 33, 33}, m3[4] = {-1, 1, 1, 128};
  const struct {
    int64_t S, H, D;
    const int64_t *dm;
  } cases[] = {{70, 3, 64, m1}, {33, 2, 32, m2}, {128, 4, 64, m3}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    ait_graph *g = attention_model_of(cases[c].S, cases[c].H, cases[c].D, cases[c].dm);
    nat_pass_stats st;
    ait_graph *rw = g ? rewrite(g, &st) : NULL;
    CHECK(rw && check_count_op(rw, "FusedAttention") == 1);
    if (rw) {
      const int64_t dq[4] = {2, cases[c].S, cases[c].H, cases[c].D};
      int64_t dm[4] = {2, 1, cases[c].dm[2], cases[c].dm[3]};
      ait_tensor *in[4] = {rand_tensor(4, dq), rand_tensor(4, dq), rand_tensor(4, dq),
                           rand_tensor(4, dm)};
      float *mk = in[3]->data;
      /* a per-row mask only shifts a row: a small shift keeps float's
       * precision (-10000 + score rounds to 1e-3), a full mask pads keys */
      float pad = cases[c].dm[3] == 1 ? -2.5f : -10000.0f;
      for (int64_t i = 0; i < ait_tensor_numel(in[3]); i++)
        mk[i] = i % 7 == 3 ? pad : 0.0f;
      check_equivalent(g, rw, (const ait_tensor *const *)in, 4, 1e-5);
      check_bf16(g, (const ait_tensor *const *)in, 4, true);
      for (int i = 0; i < 4; i++)
        ait_tensor_free(in[i]);
    }
    ait_graph_free(rw);
    ait_graph_free(g);
  }
}

/* rank 3, key already transposed, Mul by a scale, no mask, Softmax axis 2 */
static ait_graph *attention3_model_of(int64_t S, int64_t D, int64_t Dv) {
  static float scale = 0.3f;
  const int64_t dq[3] = {-1, S, D}, dk[3] = {-1, D, S}, dv[3] = {-1, S, Dv};
  static const int64_t d0[1] = {0};
  tb_model *m = tb_new(13);
  tb_input(m, "q", 1, 3, dq);
  tb_input(m, "kt", 1, 3, dk);
  tb_input(m, "v", 1, 3, dv);
  tb_output(m, "y", 1, 3, dv);
  tb_init_f32(m, "scale", 0, d0, &scale);
  tb_node(m, "MatMul", "qk", IN("q", "kt"), IN("s0"));
  tb_node(m, "Mul", "scale", IN("scale", "s0"), IN("s1"));
  tb_attr_int(m, tb_node(m, "Softmax", "softmax", IN("s1"), IN("p")), "axis", 2);
  tb_node(m, "MatMul", "pv", IN("p", "v"), IN("y"));
  return parse(m);
}

static ait_graph *attention3_model(void) { return attention3_model_of(70, 8, 12); }

/* The transposed scores with keys stored transposed (a stride along the
 * head dim), head sizes not a multiple of 16 (Qᵀ packed from partial
 * vectors), no mask; key counts leaving 5 and 1 keys past the tiles of 6,
 * blocks of 64, 37 and 49 rows; and scores in the hundreds (q scaled up),
 * where exp overflows unless the maximum per row is subtracted: its
 * outputs are near-one-hot mixes whose rounding allows 1e-4. */
static void test_attention3_shapes(void) {
  const struct {
    int64_t S, D, Dv;
    float qscale;
    double tol;
  } cases[] = {{101, 40, 32, 1.0f, 1e-5}, {49, 24, 16, 1.0f, 1e-5}, {70, 40, 32, 150.0f, 1e-4}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    int64_t S = cases[c].S, D = cases[c].D, Dv = cases[c].Dv;
    ait_graph *g = attention3_model_of(S, D, Dv);
    nat_pass_stats st;
    ait_graph *rw = g ? rewrite(g, &st) : NULL;
    CHECK(rw && check_count_op(rw, "FusedAttention") == 1);
    if (rw) {
      const int64_t dq[3] = {2, S, D}, dk[3] = {2, D, S}, dv[3] = {2, S, Dv};
      ait_tensor *in[3] = {rand_tensor(3, dq), rand_tensor(3, dk), rand_tensor(3, dv)};
      float *q = in[0]->data;
      for (int64_t i = 0; i < ait_tensor_numel(in[0]); i++)
        q[i] *= cases[c].qscale;
      check_equivalent(g, rw, (const ait_tensor *const *)in, 3, cases[c].tol);
      for (int i = 0; i < 3; i++)
        ait_tensor_free(in[i]);
    }
    ait_graph_free(rw);
    ait_graph_free(g);
  }
}

/* The padded tail attention may leave out: keys whose mask is so far below
 * the best key's that no score can lift them; never when the scores can
 * (large q or k), when the mask has no such tail, or holds a NaN. */
static void test_attention_live_keys(void) {
  enum { S = 12, D = 4 };
  float m[S], q[2 * D], k[D * S]; /* q [2][D], k' [D][S] */
  for (int i = 0; i < 2 * D; i++)
    q[i] = 0.5f - 0.1f * (float)i;
  for (int i = 0; i < D * S; i++)
    k[i] = 0.05f * (float)(i % 7) - 0.1f;
  for (int t = 0; t < S; t++)
    m[t] = t >= 9 ? -10000.0f : 0.0f;
  CHECK(nat_attn_live_keys(m, 1, S, q, D, 1, 2, k, S, 1, D, 0.5f) == 9);
  /* one live key inside the tail keeps it from there on */
  m[10] = 0.0f;
  CHECK(nat_attn_live_keys(m, 1, S, q, D, 1, 2, k, S, 1, D, 0.5f) == 11);
  m[10] = -10000.0f;
  /* scores of up to 2e4 could outweigh a -1e4 mask: every key stays */
  CHECK(nat_attn_live_keys(m, 1, S, q, D, 1, 2, k, S, 1, D, 4e4f) == S);
  /* a mask only 50 below: exp(-50) is not zero in float */
  for (int t = 9; t < S; t++)
    m[t] = -50.0f;
  CHECK(nat_attn_live_keys(m, 1, S, q, D, 1, 2, k, S, 1, D, 0.5f) == S);
  /* -inf pads too; a NaN anywhere keeps everything */
  for (int t = 9; t < S; t++)
    m[t] = -INFINITY;
  CHECK(nat_attn_live_keys(m, 1, S, q, D, 1, 2, k, S, 1, D, 0.5f) == 9);
  m[3] = NAN;
  CHECK(nat_attn_live_keys(m, 1, S, q, D, 1, 2, k, S, 1, D, 0.5f) == S);
  m[3] = 0.0f;
  k[S + 10] = NAN; /* in a padded key: its NaN score must still reach the rows */
  CHECK(nat_attn_live_keys(m, 1, S, q, D, 1, 2, k, S, 1, D, 0.5f) == S);
  k[S + 10] = 0.0f;
  /* a stride along the mask (mks) and keys stored key-major (kds = 1) */
  float m2[2 * S];
  for (int t = 0; t < S; t++)
    m2[2 * t] = t >= 5 ? -1e4f : 0.0f, m2[2 * t + 1] = 123.0f;
  CHECK(nat_attn_live_keys(m2, 2, S, q, D, 1, 2, k, 1, D, D, 0.5f) == 5);
}

static void test_attention(void) {
  ait_graph *g = attention_model(), *g3 = attention3_model();
  CHECK(g != NULL && g3 != NULL);
  if (!g || !g3) {
    ait_graph_free(g);
    ait_graph_free(g3);
    return;
  }
  nat_pass_stats st;
  ait_graph *rw = rewrite(g, &st), *rw3 = rewrite(g3, &st);
  CHECK(rw != NULL && rw3 != NULL);
  if (rw && rw3) {
    CHECK(rw->n_nodes == 1 && check_count_op(rw, "FusedAttention") == 1);
    const ait_node *a = find_node(rw, "pv");
    int cq = 0, ck = 0, cv = 0, co = 0;
    CHECK(a && ait_attr_float(a, "alpha", 1.0f) == 0.25f && a->n_in == 4 && a->in[3] >= 0);
    CHECK(a && ait_attr_ints(a, "q_perm", &cq) && ait_attr_ints(a, "k_perm", &ck) &&
          ait_attr_ints(a, "v_perm", &cv) && ait_attr_ints(a, "out_perm", &co) && ck == 4 &&
          ait_attr_ints(a, "k_perm", &ck)[3] == 1);
    CHECK(!strcmp(rw->values[rw->outputs[0]].name, "y"));
    CHECK(rw3->n_nodes == 1 && check_count_op(rw3, "FusedAttention") == 1);
    const ait_node *a3 = find_node(rw3, "pv");
    CHECK(a3 && !ait_attr_ints(a3, "q_perm", &cq) && a3->in[3] < 0);
    const int64_t dq[4] = {2, 130, 2, 16}, dm[4] = {2, 1, 1, 130};
    ait_tensor *in[4] = {rand_tensor(4, dq), rand_tensor(4, dq), rand_tensor(4, dq),
                         rand_tensor(4, dm)};
    float *mk = in[3]->data; /* a padding mask: 0 or -10000 */
    for (int i = 0; i < 2 * 130; i++)
      mk[i] = (i % 130) > 100 + i / 130 ? -10000.0f : 0.0f;
    check_equivalent(g, rw, (const ait_tensor *const *)in, 4, 1e-5);
    check_bf16(g, (const ait_tensor *const *)in, 4, true);
    const int64_t d3q[3] = {3, 70, 8}, d3k[3] = {3, 8, 70}, d3v[3] = {3, 70, 12};
    ait_tensor *in3[3] = {rand_tensor(3, d3q), rand_tensor(3, d3k), rand_tensor(3, d3v)};
    check_equivalent(g3, rw3, (const ait_tensor *const *)in3, 3, 1e-5);
    check_bf16(g3, (const ait_tensor *const *)in3, 3, false); /* head size 12: float32 */
    for (int i = 0; i < 4; i++)
      ait_tensor_free(in[i]);
    for (int i = 0; i < 3; i++)
      ait_tensor_free(in3[i]);
  }
  ait_graph_free(rw);
  ait_graph_free(rw3);
  ait_graph_free(g);
  ait_graph_free(g3);
}

/* ---- NHWC chains: stem, inverted residual blocks ------------------------- */

typedef struct ir_shape {
  int64_t C, E, M, stride, H, W; /* E = 0: no expand conv (dw on the stem) */
  bool residual;
  bool gap; /* a GlobalAveragePool after the last conv */
} ir_shape;

/* stem 3x3/2 (3 -> C) + Clip, [expand 1x1 (C -> E) + Clip], depthwise 3x3
 * (stride, pad 1) + Clip, project 1x1 (-> M), [+ stem output], then a 1x1
 * (M -> 5) + Relu as the graph output. */
static ait_graph *ir_model(const ir_shape *s) {
  int64_t C = s->C, E = s->E ? s->E : s->C, M = s->M;
  float *w0 = malloc(sizeof(float) * (size_t)(C * 27)), *b0 = malloc(sizeof(float) * (size_t)C);
  float *we = malloc(sizeof(float) * (size_t)(E * C)), *be = malloc(sizeof(float) * (size_t)E);
  float *wd = malloc(sizeof(float) * (size_t)(E * 9)), *bd = malloc(sizeof(float) * (size_t)E);
  float *wp = malloc(sizeof(float) * (size_t)(M * E)),
        *wo = malloc(sizeof(float) * (size_t)(5 * M));
  float lo = 0.0f, hi = 6.0f;
  fill(w0, C * 27, 0.5f), fill(b0, C, 0.5f), fill(we, E * C, 0.4f), fill(be, E, 0.3f);
  fill(wd, E * 9, 0.5f), fill(bd, E, 0.2f), fill(wp, M * E, 0.3f), fill(wo, 5 * M, 0.4f);
  const int64_t dx[4] = {-1, 3, s->H, s->W}, dy[4] = {-1, 5, -1, -1}, d0[1] = {0};
  const int64_t dw0[4] = {C, 3, 3, 3}, dC[1] = {C}, dwe[4] = {E, C, 1, 1}, dE[1] = {E};
  const int64_t dwd[4] = {E, 1, 3, 3}, dwp[4] = {M, E, 1, 1}, dwo[4] = {5, M, 1, 1};
  const int64_t p1[4] = {1, 1, 1, 1}, s2[2] = {2, 2}, sd[2] = {s->stride, s->stride};
  tb_model *m = tb_new(17);
  tb_input(m, "x", 1, 4, dx);
  tb_output(m, "y", 1, 4, dy);
  tb_init_f32(m, "w0", 4, dw0, w0);
  tb_init_f32(m, "b0", 1, dC, b0);
  tb_init_f32(m, "we", 4, dwe, we);
  tb_init_f32(m, "be", 1, dE, be);
  tb_init_f32(m, "wd", 4, dwd, wd);
  tb_init_f32(m, "bd", 1, dE, bd);
  tb_init_f32(m, "wp", 4, dwp, wp);
  tb_init_f32(m, "wo", 4, dwo, wo);
  tb_init_f32(m, "lo", 0, d0, &lo);
  tb_init_f32(m, "hi", 0, d0, &hi);
  int n = tb_node(m, "Conv", "stem", IN("x", "w0", "b0"), IN("s0"));
  tb_attr_ints(m, n, "pads", 4, p1);
  tb_attr_ints(m, n, "strides", 2, s2);
  tb_node(m, "Clip", "stem_clip", IN("s0", "lo", "hi"), IN("s1"));
  if (s->E) {
    tb_node(m, "Conv", "expand", IN("s1", "we", "be"), IN("e0"));
    tb_node(m, "Clip", "expand_clip", IN("e0", "lo", "hi"), IN("e1"));
  }
  n = tb_node(m, "Conv", "dw", IN(s->E ? "e1" : "s1", "wd", "bd"), IN("d0"));
  tb_attr_int(m, n, "group", E);
  tb_attr_ints(m, n, "pads", 4, p1);
  tb_attr_ints(m, n, "strides", 2, sd);
  tb_node(m, "Clip", "dw_clip", IN("d0", "lo", "hi"), IN("d1"));
  tb_node(m, "Conv", "project", IN("d1", "wp"), IN("p0"));
  if (s->residual) tb_node(m, "Add", "residual", IN("p0", "s1"), IN("p1"));
  tb_node(m, "Conv", "out", IN(s->residual ? "p1" : "p0", "wo"), IN("o0"));
  tb_node(m, "Relu", "out_relu", IN("o0"), IN(s->gap ? "r0" : "y"));
  if (s->gap) tb_node(m, "GlobalAveragePool", "pool", IN("r0"), IN("y"));
  free(w0), free(b0), free(we), free(be), free(wd), free(bd), free(wp), free(wo);
  return parse(m);
}

static void test_nhwc(void) {
  static const ir_shape shapes[] = {
      {16, 96, 16, 1, 28, 28, true, false},   /* MobileNetV2-like, multiples of 16 */
      {24, 40, 20, 2, 31, 29, false, false},  /* stride 2, odd sizes, tails */
      {8, 24, 8, 1, 10, 12, true, false},     /* channels below 16 */
      {32, 0, 16, 1, 24, 24, false, false},   /* no expand: dw right after the stem */
      {16, 200, 72, 2, 18, 18, false, false}, /* several 64-wide column blocks */
      {8, 24, 8, 1, 40, 36, true, false},     /* blocks of 16+ rows run in bands */
      {24, 40, 20, 2, 70, 66, false, false},  /* bands, stride 2 */
      {32, 0, 16, 1, 40, 36, false, false},   /* no expand, bands: the stem joins the block */
      {8, 0, 8, 1, 31, 29, false, false},     /* ... odd sizes (the stem's padded edges) */
      {32, 0, 24, 2, 24, 24, false, false},   /* ... channel slices (a 6x6 output) */
      {16, 96, 16, 1, 28, 28, true, true},    /* pooled in NHWC: no reorder at all */
  };
  /* separate convs, then the block fused (whatever its size), then with
   * the stem joining a block that has no expand conv */
  nat_set_scratch_poison(true);
  for (int fuse = 0; fuse < 3; fuse++)
    for (int mode = 0; mode < 3; mode++) {
      /* AVX-512, portable, and bands last first (each takes the rows its
       * neighbour shares, on one thread; in order only on several) */
      int portable = mode == 1;
      if (mode == 2 && !fuse) continue;
      nat_nhwc_set_portable(portable);
      nat_nhwc_set_bands_reversed(mode == 2);
      nat_layout_set_block_bytes(fuse ? 0 : INT64_MAX);
      nat_layout_set_fuse_stems(fuse == 2);
      for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        const ir_shape *s = &shapes[k];
        ait_graph *g = ir_model(s);
        CHECK(g != NULL);
        if (!g) continue;
        nat_pass_stats st;
        ait_graph *rw = rewrite(g, &st);
        CHECK(rw && nat_pass_layout(rw, &st) == AIT_OK);
        if (!rw) {
          ait_graph_free(g);
          continue;
        }
        /* every conv moved; one reorder, at the output (the stem reads NCHW) */
        int convs = s->E ? 5 : 4;
        bool stem_in = fuse == 2 && !s->E; /* the stem is the block's first stage */
        CHECK(st.relayout == convs && st.blocks == (fuse > 0));
        CHECK(check_count_op(rw, "FusedConvNhwc") == (!fuse ? convs : stem_in ? 1 : 2));
        CHECK(check_count_op(rw, "FusedInvertedResidual") == (fuse > 0));
        CHECK(check_count_op(rw, "Transpose") == !s->gap && check_count_op(rw, "Add") == 0);
        CHECK(check_count_op(rw, "FusedGapNhwc") == s->gap &&
              check_count_op(rw, "GlobalAveragePool") == 0);
        const ait_node *stem = find_node(rw, stem_in ? "project" : "stem");
        CHECK(stem &&
              !strcmp(ait_attr_str(stem, stem_in ? "stem_x_layout" : "x_layout", ""), "NCHW"));
        for (int64_t batch = 1; batch <= 3; batch += 2) {
          const int64_t d[4] = {batch, 3, s->H, s->W};
          ait_tensor *x = rand_tensor(4, d);
          check_equivalent_opts(g, rw, (const ait_tensor *const *)&x, 1, 1e-4, ",layout=nhwc");
          ait_tensor_free(x);
        }
        ait_graph_free(rw);
        ait_graph_free(g);
      }
    }
  nat_layout_set_block_bytes(0); /* the defaults */
  nat_layout_set_fuse_stems(true);
  nat_nhwc_set_portable(false);
  nat_nhwc_set_bands_reversed(false);
  nat_set_scratch_poison(false);
  /* layout=nchw keeps every conv NCHW */
  ait_graph *g = ir_model(&shapes[0]);
  ait_backend_config cfg;
  void *state = NULL;
  CHECK(g && ait_backend_config_parse("native:layout=nchw", &cfg) == AIT_OK);
  CHECK(g && cfg.iface->build(&cfg, g, NULL, &state) == AIT_OK);
  if (state) {
    CHECK(check_count_op(((nat_state *)state)->g, "FusedConvNhwc") == 0);
    cfg.iface->destroy(state);
  }
  /* the rewritten graph saves and loads with its NHWC ops */
  state = NULL;
  void *loaded = NULL;
  char dir[] = "/tmp/ait_test_nhwc_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  CHECK(g && ait_backend_config_parse("native:layout=nhwc", &cfg) == AIT_OK);
  CHECK(g && cfg.iface->build(&cfg, g, NULL, &state) == AIT_OK);
  CHECK(state && cfg.iface->save(state, dir) == AIT_OK);
  CHECK(state && cfg.iface->load(&cfg, g, dir, &loaded) == AIT_OK);
  if (state && loaded) {
    CHECK(check_count_op(((nat_state *)loaded)->g, "FusedInvertedResidual") == 1);
    const int64_t d[4] = {2, 3, shapes[0].H, shapes[0].W};
    ait_tensor *x = rand_tensor(4, d), *a = NULL, *b = NULL;
    CHECK(cfg.iface->infer(state, (const ait_tensor *const *)&x, 1, &a) == AIT_OK);
    CHECK(cfg.iface->infer(loaded, (const ait_tensor *const *)&x, 1, &b) == AIT_OK);
    CHECK(check_rel_diff(a, b) == 0.0);
    ait_tensor_free(x);
    ait_tensor_free(a);
    ait_tensor_free(b);
  }
  if (loaded) cfg.iface->destroy(loaded);
  if (state) cfg.iface->destroy(state);
  char path[256];
  snprintf(path, sizeof path, "%s/native.onnx", dir);
  unlink(path);
  rmdir(dir);
  ait_graph_free(g);
}

/* ---- plans per input signature, activate/deactivate, save/load ------------ */

static void test_state(void) {
  ait_graph *g = cnn_model();
  CHECK(g != NULL);
  if (!g) return;
  ait_backend_config cfg;
  CHECK(ait_backend_config_parse("native:threads=2", &cfg) == AIT_OK);
  void *state = NULL;
  CHECK(cfg.iface->build(&cfg, g, NULL, &state) == AIT_OK);
  const int64_t batches[5] = {2, 3, 2, 1, 3};
  for (int i = 0; state && i < 5; i++) {
    const int64_t d[4] = {batches[i], 3, 10, 10};
    ait_tensor *x = rand_tensor(4, d), *got = NULL, *want = NULL;
    CHECK(cfg.iface->infer(state, (const ait_tensor *const *)&x, 1, &got) == AIT_OK);
    CHECK(ait_eager_run(g, (const ait_tensor *const *)&x, 1, &want) == AIT_OK);
    CHECK(check_rel_diff(got, want) <= 1e-5);
    if (i == 2) { /* big memory goes, comes back on the next run */
      CHECK(cfg.iface->deactivate(state) == AIT_OK);
      CHECK(((nat_state *)state)->plans.n == 0);
      CHECK(cfg.iface->activate(state) == AIT_OK);
    }
    ait_tensor_free(x);
    ait_tensor_free(got);
    ait_tensor_free(want);
  }
  CHECK(state && ((nat_state *)state)->plans.n == 2); /* batches 1 and 3 since deactivate */
  /* save, load, same answers; loading runs no passes */
  char dir[] = "/tmp/ait_test_native_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  CHECK(cfg.iface->save(state, dir) == AIT_OK);
  void *loaded = NULL;
  ait_status ls = cfg.iface->load(&cfg, g, dir, &loaded);
  if (ls) fprintf(stderr, "load: %s\n", ait_last_error());
  CHECK(ls == AIT_OK);
  if (loaded) {
    nat_state *s = loaded;
    /* the fused convs as saved (NHWC where the layout pass moved them) */
    CHECK(s->stats.fused == 0 &&
          check_count_op(s->g, "FusedConv") + check_count_op(s->g, "FusedConvNhwc") == 3);
    const int64_t d[4] = {2, 3, 10, 10};
    ait_tensor *x = rand_tensor(4, d), *a = NULL, *b = NULL;
    CHECK(cfg.iface->infer(state, (const ait_tensor *const *)&x, 1, &a) == AIT_OK);
    CHECK(cfg.iface->infer(loaded, (const ait_tensor *const *)&x, 1, &b) == AIT_OK);
    CHECK(check_rel_diff(a, b) == 0.0);
    ait_tensor_free(x);
    ait_tensor_free(a);
    ait_tensor_free(b);
    cfg.iface->destroy(loaded);
  }
  char path[256];
  snprintf(path, sizeof path, "%s/native.onnx", dir);
  unlink(path);
  rmdir(dir);
  if (state) cfg.iface->destroy(state);
  ait_graph_free(g);
}

/* ---- shape computations cached per signature ------------------------------- */

/* y = Reshape(Relu(Flatten(x)), Shape(x)) + ConstantOfShape(Shape(x));
 * n = Shape(NonZero(x)), whose value depends on the data, not the shape. */
static ait_graph *shape_model(void) {
  static const int64_t dx[3] = {-1, 4, 6}, dn[1] = {2};
  tb_model *m = tb_new(17);
  tb_input(m, "x", 1, 3, dx);
  tb_output(m, "y", 1, 3, dx);
  tb_output(m, "n", 7, 1, dn);
  tb_node(m, "Flatten", "flat", IN("x"), IN("f"));
  tb_node(m, "Relu", "relu", IN("f"), IN("r"));
  tb_node(m, "Shape", "shape", IN("x"), IN("s"));
  tb_node(m, "Reshape", "reshape", IN("r", "s"), IN("y0"));
  tb_node(m, "ConstantOfShape", "zeros", IN("s"), IN("z"));
  tb_node(m, "Add", "add", IN("y0", "z"), IN("y"));
  tb_node(m, "NonZero", "nonzero", IN("x"), IN("nz"));
  tb_node(m, "Shape", "nz_shape", IN("nz"), IN("n"));
  return parse(m);
}

static void test_shape_cache(void) {
  ait_graph *g = shape_model();
  CHECK(g != NULL);
  if (!g) return;
  ait_backend_config cfg;
  CHECK(ait_backend_config_parse("native", &cfg) == AIT_OK);
  void *state = NULL;
  CHECK(cfg.iface->build(&cfg, g, NULL, &state) == AIT_OK);
  const int64_t batches[8] = {2, 2, 2, 3, 2, 2, 3, 3};
  for (int i = 0; state && i < 8; i++) {
    const int64_t d[3] = {batches[i], 4, 6};
    ait_tensor *x = rand_tensor(3, d);
    float *xv = x->data;
    for (int k = 0; k < i; k++) /* a different number of zeros each time */
      xv[k] = 0.0f;
    ait_tensor *got[2] = {0}, *want[2] = {0};
    CHECK(cfg.iface->infer(state, (const ait_tensor *const *)&x, 1, got) == AIT_OK);
    CHECK(ait_eager_run(g, (const ait_tensor *const *)&x, 1, want) == AIT_OK);
    CHECK(check_rel_diff(got[0], want[0]) == 0.0);
    CHECK(got[1] && want[1] && got[1]->dtype == AIT_INT64 && ait_tensor_numel(got[1]) == 2 &&
          !memcmp(got[1]->data, want[1]->data, 2 * sizeof(int64_t)));
    for (int k = 0; k < 2; k++) {
      ait_tensor_free(got[k]);
      ait_tensor_free(want[k]);
    }
    ait_tensor_free(x);
  }
  nat_state *s = state;
  int so = 0;
  for (int i = 0; s && i < s->g->n_nodes; i++)
    so += s->shape_only[i];
  CHECK(so == 3); /* shape, zeros, nz_shape */
  if (state) cfg.iface->destroy(state);
  ait_graph_free(g);
}

/* ---- options ---------------------------------------------------------------- */

static void test_options(void) {
  ait_backend_config cfg;
  CHECK_ERR(ait_backend_config_parse("native:threads=0", &cfg), AIT_E_INVALID_ARG, "threads");
  CHECK_ERR(ait_backend_config_parse("native:fuse=maybe", &cfg), AIT_E_INVALID_ARG, "fuse");
  CHECK(ait_backend_config_parse("native:threads=3,fuse=off", &cfg) == AIT_OK);
  CHECK(ait_backend_config_int(&cfg, "threads", 0) == 3);
  char why[128];
  CHECK(cfg.iface->available(why, sizeof why));
  CHECK_ERR(ait_backend_config_parse("native:gemm=mkl", &cfg), AIT_E_INVALID_ARG, "gemm");
}

/* What unused_option says of spec's state after one run of g on x. */
static const char *unused_after_run(const char *spec, const ait_graph *g, const ait_tensor *x,
                                    char *why, size_t n) {
  ait_backend_config cfg;
  void *state = NULL;
  const char *opt = "(build failed)";
  if (ait_backend_config_parse(spec, &cfg) || cfg.iface->build(&cfg, g, NULL, &state)) return opt;
  ait_tensor *outs[8] = {0};
  opt = cfg.iface->infer(state, &x, 1, outs) ? "(run failed)"
                                             : cfg.iface->unused_option(state, why, n);
  for (int k = 0; k < g->n_outputs; k++)
    ait_tensor_free(outs[k]);
  cfg.iface->destroy(state);
  return opt;
}

/* native:gemm=X knows whether any run reached X: 18 rows without the tiles
 * go through SGEMM; 6 rows run on native's GEMV, and the default provider
 * (auto) is never an unused option. */
static void test_gemm_unused(void) {
  ait_graph *g = mlp_model();
  nat_gemm_fn fn = NULL;
  if (!g || nat_gemm_provider("blis", &fn) != AIT_OK) {
    ait_graph_free(g);
    return;
  }
  const int64_t d18[3] = {3, 6, 16}, d6[3] = {1, 6, 16};
  ait_tensor *x18 = rand_tensor(3, d18), *x6 = rand_tensor(3, d6);
  char why[256] = "";
  CHECK(unused_after_run("native:gemm=blis,tiles=off", g, x18, why, sizeof why) == NULL);
  const char *opt = unused_after_run("native:gemm=blis", g, x6, why, sizeof why);
  CHECK(opt && !strcmp(opt, "gemm") && strstr(why, "gemm=blis"));
  CHECK(unused_after_run("native", g, x6, why, sizeof why) == NULL);
  CHECK(unused_after_run("native:gemm=auto", g, x6, why, sizeof why) == NULL);
  /* the default is auto now: a named openblas that no run reached is too */
  opt = unused_after_run("native:gemm=openblas", g, x6, why, sizeof why);
  CHECK(opt && !strcmp(opt, "gemm"));
  ait_tensor_free(x18);
  ait_tensor_free(x6);
  ait_graph_free(g);
}

/* gemm=auto is OpenBLAS unless OpenBLAS runs pre-AVX2 kernels on an AVX2
 * CPU (an OpenBLAS older than the CPU model), then BLIS when installed. */
static void test_gemm_auto(void) {
  char why[256] = "";
  const char *pick = nat_gemm_auto(why, sizeof why);
  const char *core = openblas_get_corename();
  bool old_kernels = core && (!strcmp(core, "Prescott") || !strcmp(core, "Nehalem") ||
                              !strcmp(core, "Core2") || !strcmp(core, "Sandybridge"));
  nat_gemm_fn fn = NULL;
  bool blis = nat_gemm_provider("blis", &fn) == AIT_OK;
  printf("gemm=auto: %s (OpenBLAS core %s)%s%s\n", pick, core ? core : "?", why[0] ? ": " : "",
         why);
  CHECK(!strcmp(pick, old_kernels && blis && nat_isa_cpu() >= NAT_ISA_AVX2 ? "blis" : "openblas"));
  CHECK(nat_gemm_provider("auto", &fn) == AIT_OK && fn);
  CHECK(nat_gemm_provider("nonesuch", &fn) == AIT_E_INVALID_ARG);
}

/* gemm=blis computes what OpenBLAS does, or says why it cannot. */
static void test_gemm_provider(void) {
  ait_graph *g = mlp_model();
  CHECK(g != NULL);
  if (!g) return;
  const int64_t d3[3] = {3, 6, 16};
  ait_tensor *x = rand_tensor(3, d3), *ref = NULL, *got = NULL;
  CHECK(ait_eager_run(g, (const ait_tensor *const *)&x, 1, &ref) == AIT_OK);
  nat_gemm_fn fn = NULL;
  if (nat_gemm_provider("blis", &fn) == AIT_OK) {
    CHECK(run_on("native:gemm=blis", g, (const ait_tensor *const *)&x, 1, &got) == AIT_OK);
    CHECK(check_rel_diff(got, ref) <= 1e-5);
  } else {
    CHECK_ERR(run_on("native:gemm=blis", g, (const ait_tensor *const *)&x, 1, &got),
              AIT_E_UNSUPPORTED, "gemm=blis is unavailable");
    fprintf(stderr, "note: %s\n", ait_last_error());
  }
  ait_tensor_free(x);
  ait_tensor_free(ref);
  ait_tensor_free(got);
  ait_graph_free(g);
}

/* ---- thread pool and arena planner ------------------------------------------- */

typedef struct sum_job {
  int64_t *slots;
} sum_job;

static void sum_task(void *arg, int64_t t, int tid) { ((sum_job *)arg)->slots[t] = t * 2 + 1; }

static void test_pool(void) {
  for (int threads = 1; threads <= 4; threads++) {
    nat_pool *p = nat_pool_new(threads);
    CHECK(p != NULL && nat_pool_threads(p) == threads);
    int64_t slots[1000];
    sum_job j = {slots};
    for (int round = 0; round < 50; round++) {
      memset(slots, 0, sizeof slots);
      int64_t n = 1 + (round * 37) % 1000;
      nat_pool_run(p, n, sum_task, &j);
      int64_t bad = 0;
      for (int64_t t = 0; t < n; t++)
        bad += slots[t] != t * 2 + 1;
      CHECK(bad == 0);
      if (round % 7 == 3) nat_pool_park(p); /* the next run wakes the sleepers */
      if (round % 14 == 3) usleep(2000);
    }
    nat_pool_free(p);
  }
}

static void test_planner(void) {
  enum { N = 40 };
  int64_t size[N], off[N], total = 0, sum = 0;
  int first[N], last[N];
  for (int v = 0; v < N; v++) {
    size[v] = v % 7 == 3 ? 0 : 64 * (1 + (v * 13) % 9);
    first[v] = v;
    last[v] = v + (v * 7) % 5;
    sum += size[v];
  }
  CHECK(nat_plan_assign(N, size, first, last, off, &total) == AIT_OK);
  CHECK(total < sum); /* lifetimes are short: memory is reused */
  for (int a = 0; a < N; a++) {
    CHECK((size[a] == 0) == (off[a] < 0));
    for (int b = a + 1; b < N; b++) {
      if (!size[a] || !size[b] || first[a] > last[b] || first[b] > last[a]) continue;
      bool apart = off[a] + size[a] <= off[b] || off[b] + size[b] <= off[a];
      CHECK(apart);
    }
  }
}

/* The shared plan cache (common/plan.h, native's, onednn's and xnnpack's):
 * found by signature, at most `max` kept, the least recently used dropped. */
static int plans_freed;
static void count_free(void *plan) {
  free(plan);
  plans_freed++;
}

static void test_plan_cache(void) {
  ait_plan_cache c = {.max = 3, .free_plan = count_free};
  ait_tensor t[5];
  const ait_tensor *in[5];
  for (int b = 0; b < 5; b++) {
    memset(&t[b], 0, sizeof t[b]);
    t[b].dtype = AIT_FLOAT32;
    t[b].rank = 2;
    t[b].dims[0] = b + 1;
    t[b].dims[1] = 8;
    in[b] = &t[b];
  }
  plans_freed = 0;
  for (int b = 0; b < 3; b++) {
    int *plan = malloc(sizeof *plan);
    if (plan) *plan = b;
    CHECK(plan && ait_plan_cache_add(&c, &in[b], 1, plan) == AIT_OK);
  }
  int *hit = ait_plan_cache_find(&c, &in[0], 1); /* batch 1: now the most recent */
  CHECK(hit && *hit == 0);
  int *plan = malloc(sizeof *plan);
  CHECK(plan && ait_plan_cache_add(&c, &in[3], 1, plan) == AIT_OK); /* batch 2 goes */
  CHECK(c.n == 3 && plans_freed == 1);
  CHECK(ait_plan_cache_find(&c, &in[1], 1) == NULL);
  CHECK(ait_plan_cache_find(&c, &in[0], 1) && ait_plan_cache_find(&c, &in[2], 1));
  CHECK(ait_plan_cache_find(&c, &in[3], 1) && !ait_plan_cache_find(&c, &in[4], 1));
  t[4].dims[0] = 1; /* another dtype, the same dims: another signature */
  t[4].dtype = AIT_FLOAT16;
  CHECK(ait_plan_cache_find(&c, &in[4], 1) == NULL);
  ait_plan_cache_clear(&c);
  CHECK(c.n == 0 && plans_freed == 4);
}

/* GELU against x Phi(x) in double, the error scaled by max(1, |x|):
 * densely over [-12, 12] (~2700 points a unit: every piece of the AVX-512
 * table, so a coefficient off by a few ulps of its term shows) and at
 * floats of every exponent; the exact limits (x from 6 on, -0 from -6
 * down, -0 at -0); and the lengths that take the masked tail. Bounds: the
 * AVX-512 table measures 8.3e-8 over all finite floats, the AVX2 one
 * 7.7e-8 on these inputs, the 8-lane A&S form 2.0e-7. */
static double gelu_ref(double x) { return 0.5 * x * erfc(-x / sqrt(2.0)); }

static void test_gelu_math(void) {
  enum { N = 1 << 16, DENSE = N - 4 * 277 };
  static float x[N], y[N];
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  bool table = nat_isa() >= NAT_ISA_AVX2; /* nat_act_f32's dispatch: AVX-512's or AVX2's table */
#else
  bool table = false;
#endif
  const double bound = table ? 1.2e-7 : 2.5e-7;
  ait_act gelu = {.kind = AIT_ACT_GELU};
  for (int i = 0; i < DENSE; i++)
    x[i] = -12.0f + 24.0f * (float)i / (float)(DENSE - 1);
  for (int e = -149, i = DENSE; e <= 127; e++) /* 277 exponents, two mantissas, both signs */
    for (int k = 0; k < 4; k++)
      x[i++] = ldexpf((k & 1) ? -1.0f : 1.0f, e) * ((k & 2) && e < 127 ? 1.75f : 1.0f);
  memcpy(y, x, sizeof y);
  nat_act_f32(&gelu, y, N);
  double worst = 0, at = 0;
  for (int i = 0; i < N; i++) {
    double v = x[i], err = fabs(y[i] - gelu_ref(v)) / (fabs(v) > 1 ? fabs(v) : 1);
    if (err > worst) worst = err, at = v;
  }
  if (!(worst <= bound)) fprintf(stderr, "gelu: error %.3g at x = %.9g\n", worst, at);
  CHECK(worst <= bound);
  bool limits = true;
  for (int i = 0; i < N; i++) {
    if (x[i] >= 6.0f) limits &= y[i] == x[i];
    if (x[i] <= -6.0f || (x[i] == 0 && signbit(x[i]))) limits &= y[i] == 0 && signbit(y[i]);
  }
  float z = -0.0f;
  nat_act_f32(&gelu, &z, 1);
  CHECK(limits && z == 0 && signbit(z));
  /* every length to 40 from offset 3: the same values as the long call */
  for (int n = 1; n <= 40; n++) {
    float part[40];
    memcpy(part, x + 3, sizeof(float) * (size_t)n);
    nat_act_f32(&gelu, part, n);
    CHECK(!memcmp(part, y + 3, sizeof(float) * (size_t)n));
  }
}

/* The vectorised Sigmoid and exp against libm, over ranges that cover both
 * tails and a length that leaves a partial block; non-finite GELU inputs as
 * the reference activation gives them. */
static void test_math(void) {
  enum { N = 4099 };
  static float x[N], y[N];
  double worst_sig = 0;
  ait_act gelu = {.kind = AIT_ACT_GELU}, sig = {.kind = AIT_ACT_SIGMOID};
  for (int i = 0; i < N; i++)
    x[i] = -12.0f + 24.0f * (float)i / (float)(N - 1);
  memcpy(y, x, sizeof y);
  nat_act_f32(&sig, y, N);
  for (int i = 0; i < N; i++) {
    double want = 1.0 / (1.0 + exp(-(double)x[i]));
    worst_sig = fabs(y[i] - want) > worst_sig ? fabs(y[i] - want) : worst_sig;
  }
  if (worst_sig > 1e-6) fprintf(stderr, "activations: sigmoid err %.3g\n", worst_sig);
  CHECK(worst_sig <= 1e-6);
  /* exp against libm, relative, over the whole range and its limits */
  double worst_exp = 0;
  for (int i = 0; i < N; i++)
    x[i] = -100.0f + 200.0f * (float)i / (float)(N - 1);
  nat_exp_f32(x, y, N);
  for (int i = 0; i < N; i++) {
    double want = exp((double)x[i]);
    if (x[i] > 88.7f) {
      CHECK(isinf(y[i]));
    } else if (x[i] < -87.3f) {
      CHECK(y[i] == 0.0f);
    } else if (x[i] > -87.0f && x[i] < 88.0f) {
      double err = fabs(y[i] - want) / want;
      worst_exp = err > worst_exp ? err : worst_exp;
    }
  }
  if (worst_exp > 1e-6) fprintf(stderr, "exp: relative error %.3g\n", worst_exp);
  CHECK(worst_exp <= 1e-6);
  /* non-finite inputs as the reference activation gives them */
  float odd[3] = {NAN, INFINITY, -INFINITY};
  for (int i = 0; i < 3; i++) {
    float want = ait_act_f32(&gelu, odd[i]), got = odd[i];
    nat_act_f32(&gelu, &got, 1);
    CHECK((isnan(want) && isnan(got)) || want == got);
  }
}

/* LayerNormalization over the last axis, with and without bias: lengths
 * around the AVX-512 row kernel's 32- and 16-float steps (tails of 5, 8,
 * 12 and none) and rows far from zero mean (a one-pass variance would
 * cancel). */
static void test_layernorm(void) {
  static const int64_t lens[] = {5, 16, 40, 256, 300};
  for (size_t c = 0; c < sizeof lens / sizeof lens[0]; c++)
    for (int with_bias = 0; with_bias < 2; with_bias++) {
      int64_t L = lens[c], dx[2] = {-1, L}, dp[1] = {L};
      float *sc = malloc(sizeof(float) * (size_t)L), *bi = malloc(sizeof(float) * (size_t)L);
      for (int64_t i = 0; i < L; i++)
        sc[i] = 0.5f + frand(), bi[i] = frand();
      tb_model *m = tb_new(17);
      tb_input(m, "x", 1, 2, dx);
      tb_output(m, "y", 1, 2, dx);
      tb_init_f32(m, "s", 1, dp, sc);
      tb_init_f32(m, "b", 1, dp, bi);
      tb_node(m, "LayerNormalization", "ln", with_bias ? IN("x", "s", "b") : IN("x", "s"), IN("y"));
      ait_graph *g = parse(m);
      CHECK(g != NULL);
      const int64_t di[2] = {7, L};
      ait_tensor *x = rand_tensor(2, di);
      float *xv = x->data;
      for (int64_t i = 0; i < 7 * L; i++)
        xv[i] += 5.0f * (float)(i / L); /* row r has mean ~5 r */
      ait_tensor *ref = NULL, *nat = NULL;
      CHECK(g && ait_eager_run(g, (const ait_tensor *const *)&x, 1, &ref) == AIT_OK);
      CHECK(g && run_on("native", g, (const ait_tensor *const *)&x, 1, &nat) == AIT_OK);
      double d = check_rel_diff(nat, ref);
      if (!(d <= 1e-5)) fprintf(stderr, "layernorm %lld bias %d: %g\n", (long long)L, with_bias, d);
      CHECK(d <= 1e-5);
      ait_tensor_free(ref), ait_tensor_free(nat), ait_tensor_free(x);
      ait_graph_free(g);
      free(sc), free(bi);
    }
}

/* ---- ISA levels: the AVX2 twins against AVX-512, portable and eager ------ */

/* The levels this CPU runs, highest first (forced per state by native:isa,
 * per thread by nat_isa_enter). */
static int isa_levels(int *lv) {
  int n = 0;
  for (int l = NAT_ISA_AVX512; l >= NAT_ISA_PORTABLE; l--)
    if (l <= (int)nat_isa_cpu()) lv[n++] = l;
  return n;
}

/* As run_on, also giving the state's count of SGEMM provider calls. */
static ait_status run_counting(const char *spec, const ait_graph *g, const ait_tensor *const *in,
                               int n_in, ait_tensor **out, long long *calls) {
  ait_backend_config cfg;
  AIT_TRY(ait_backend_config_parse(spec, &cfg));
  void *state = NULL;
  AIT_TRY(cfg.iface->build(&cfg, g, NULL, &state));
  ait_tensor *outs[8] = {0};
  ait_status st = cfg.iface->infer(state, in, n_in, outs);
  *calls = atomic_load(&((nat_state *)state)->gemm_calls);
  cfg.iface->destroy(state);
  *out = outs[0];
  for (int k = 1; k < g->n_outputs; k++)
    ait_tensor_free(outs[k]);
  return st;
}

/* g at every level (threads=1 and the default) against eager: within tol,
 * and through the vector kernels (no SGEMM call: the transposed scores)
 * at AVX2 and above when `vector` says they apply. */
static void check_levels(const ait_graph *g, const ait_tensor *const *in, int n_in, double tol,
                         bool vector, const char *what) {
  ait_tensor *ref = NULL;
  CHECK(ait_eager_run(g, in, n_in, &ref) == AIT_OK);
  int lv[3], nl = isa_levels(lv);
  for (int i = 0; i < nl; i++)
    for (int t = 0; t < 2; t++) {
      char spec[64];
      snprintf(spec, sizeof spec, "native:isa=%s%s", nat_isa_name(lv[i]), t ? ",threads=1" : "");
      ait_tensor *y = NULL;
      long long calls = -1;
      CHECK(run_counting(spec, g, in, n_in, &y, &calls) == AIT_OK);
      double d = check_rel_diff(y, ref);
      if (!(d <= tol)) fprintf(stderr, "%s on %s: difference %g\n", what, spec, d);
      CHECK(d <= tol);
      if (vector) CHECK((calls == 0) == (lv[i] >= NAT_ISA_AVX2));
      ait_tensor_free(y);
    }
  ait_tensor_free(ref);
}

/* Random attention shapes at every level: query and key counts across
 * the tiles of 6 keys and the vectors of 8 and 16 rows, head sizes not a
 * multiple of 8 (Qᵀ's partial blocks) and V's heads of any size (AVX2's
 * masked last vector; AVX-512 takes multiples of 16 only and hands the
 * others to AVX2), masks broadcast along the rows, along the keys and
 * full (the gather), padding tails. */
static void test_isa_attention(void) {
  uint32_t saved = rng;
  rng = 777;
  for (int c = 0; c < 14; c++) {
    int64_t S = 1 + (int64_t)((frand() + 1.0f) * 75.0f),
            D = 1 + (int64_t)((frand() + 1.0f) * 40.0f);
    int kind = c % 4; /* 0..2: 4-d with a mask; 3: rank 3, keys transposed, no mask */
    if (kind == 3) {
      int64_t Dv = 1 + (int64_t)((frand() + 1.0f) * 40.0f);
      ait_graph *g = attention3_model_of(S, D, Dv);
      CHECK(g != NULL);
      if (!g) continue;
      const int64_t dq[3] = {2, S, D}, dk[3] = {2, D, S}, dv[3] = {2, S, Dv};
      ait_tensor *in[3] = {rand_tensor(3, dq), rand_tensor(3, dk), rand_tensor(3, dv)};
      char what[64];
      snprintf(what, sizeof what, "attention S %lld D %lld Dv %lld", (long long)S, (long long)D,
               (long long)Dv);
      check_levels(g, (const ait_tensor *const *)in, 3, 1e-5, true, what);
      for (int i = 0; i < 3; i++)
        ait_tensor_free(in[i]);
      ait_graph_free(g);
      continue;
    }
    /* attention_model_of's heads: D is both head sizes; 4 heads of D */
    int64_t H = 1 + c % 3;
    const int64_t dms[3][4] = {{-1, 1, 1, S}, {-1, 1, S, 1}, {-1, 1, S, S}};
    ait_graph *g = attention_model_of(S, H, D, dms[kind]);
    CHECK(g != NULL);
    if (!g) continue;
    const int64_t dq[4] = {2, S, H, D};
    int64_t dm[4] = {2, 1, dms[kind][2], dms[kind][3]};
    ait_tensor *in[4] = {rand_tensor(4, dq), rand_tensor(4, dq), rand_tensor(4, dq),
                         rand_tensor(4, dm)};
    float *mk = in[3]->data;
    for (int64_t i = 0; i < ait_tensor_numel(in[3]); i++)
      mk[i] = kind == 1                         ? frand()
              : kind == 0 && i % S >= S - S / 4 ? -10000.0f /* a padded tail */
              : kind == 2 && i % 5 == 2         ? -10000.0f
                                                : 0.0f;
    char what[64];
    snprintf(what, sizeof what, "attention S %lld H %lld D %lld mask %d", (long long)S,
             (long long)H, (long long)D, kind);
    check_levels(g, (const ait_tensor *const *)in, 4, 1e-5, true, what);
    for (int i = 0; i < 4; i++)
      ait_tensor_free(in[i]);
    ait_graph_free(g);
  }
  rng = saved;
}

/* One op on x [rows, L] (attributes none but Softmax's axis and
 * LayerNormalization's scale and bias), at every level against eager. */
static void check_rows_op(const char *op, int64_t rows, int64_t L, double tol) {
  int64_t dx[2] = {-1, L}, dp[1] = {L};
  float *sc = malloc(sizeof(float) * (size_t)L), *bi = malloc(sizeof(float) * (size_t)L);
  for (int64_t i = 0; i < L; i++)
    sc[i] = 0.5f + frand(), bi[i] = frand();
  tb_model *m = tb_new(17);
  tb_input(m, "x", 1, 2, dx);
  tb_output(m, "y", 1, 2, dx);
  tb_init_f32(m, "s", 1, dp, sc);
  tb_init_f32(m, "b", 1, dp, bi);
  if (!strcmp(op, "LayerNormalization"))
    tb_node(m, op, "n", IN("x", "s", "b"), IN("y"));
  else if (!strcmp(op, "Softmax"))
    tb_attr_int(m, tb_node(m, op, "n", IN("x"), IN("y")), "axis", -1);
  else
    tb_node(m, op, "n", IN("x"), IN("y"));
  ait_graph *g = parse(m);
  CHECK(g != NULL);
  const int64_t di[2] = {rows, L};
  ait_tensor *x = rand_tensor(2, di);
  float *xv = x->data;
  for (int64_t i = 0; i < rows * L; i++) /* rows far from 0 and wide: both tails of exp */
    xv[i] = xv[i] * 8.0f + (float)(i / L % 5);
  char what[64];
  snprintf(what, sizeof what, "%s [%lld, %lld]", op, (long long)rows, (long long)L);
  if (g) check_levels(g, (const ait_tensor *const *)&x, 1, tol, false, what);
  ait_tensor_free(x);
  ait_graph_free(g);
  free(sc), free(bi);
}

/* Softmax, LayerNormalization and the activations on lengths around the
 * vectors (none a multiple of 8 but 8, 16 and 256). Sigmoid, Tanh and
 * Gelu against libm within 1e-6 (the outputs are within [-1, 8] or so). */
static void test_isa_rows(void) {
  static const int64_t lens[] = {1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 100, 256, 257};
  static const char *const ops[] = {"Softmax", "LayerNormalization", "Sigmoid", "Tanh"};
  for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
    for (size_t c = 0; c < sizeof lens / sizeof lens[0]; c++)
      check_rows_op(ops[o], 5, lens[c], o == 1 ? 1e-5 : 1e-6);
}

/* Relative error (in units of 2^-24 of the result) of the vectorised
 * functions against double libm at each level, on dense grids and every
 * exponent; GELU bit for bit across the levels at and above AVX2 (one
 * table), also through nat_gelu256_tile. Bounds: exp 2 ulp (measured
 * 1.3), sigmoid and tanh 4 ulp (exp, an add and a divide: measured 2.9
 * and 2.3), erf 4 ulp below |x| = 0.5 (a Taylor polynomial) and by its
 * absolute error 4e-7 from there (A&S 1.5e-7 plus float rounding: 3.8e-7
 * measured). */
static double ulps(double got, double want) {
  if (want == 0) return got == 0 ? 0 : INFINITY;
  return fabs(got - want) / fabs(want) * 16777216.0;
}

static void test_isa_math(void) {
  enum { N = 20000 };
  static float x[N], y[N], g[3][N];
  int n = 0;
  for (int i = 0; i < 16000; i++)
    x[n++] = -20.0f + 40.0f * (float)i / 15999.0f;
  for (int e = -126; e <= 6 && n + 2 <= N; e++) /* small and large magnitudes, both signs */
    for (int k = 0; k < 2; k++)
      x[n++] = ldexpf(k ? -1.37f : 1.21f, e);
  int lv[3], nl = isa_levels(lv), prev = nat_isa_enter(-1);
  for (int li = 0; li < nl; li++) {
    nat_isa_enter(lv[li]);
    double we = 0, ws = 0, wt = 0, wf = 0;
    nat_exp_f32(x, y, n);
    for (int i = 0; i < n; i++)
      if (x[i] > -87.0f && x[i] < 88.0f) we = fmax(we, ulps(y[i], exp((double)x[i])));
    ait_act sig = {.kind = AIT_ACT_SIGMOID}, th = {.kind = AIT_ACT_TANH};
    memcpy(y, x, sizeof(float) * (size_t)n);
    nat_act_f32(&sig, y, n);
    for (int i = 0; i < n; i++) {
      double w = 1.0 / (1.0 + exp(-(double)x[i]));
      if (w > 1e-37) ws = fmax(ws, ulps(y[i], w)); /* not in the denormals */
    }
    memcpy(y, x, sizeof(float) * (size_t)n);
    nat_act_f32(&th, y, n);
    for (int i = 0; i < n; i++)
      wt = fmax(wt, ulps(y[i], tanh((double)x[i])));
    nat_erf_f32(x, y, n);
    for (int i = 0; i < n; i++)
      wf = fmax(wf, fabsf(x[i]) < 0.5f ? ulps(y[i], erf((double)x[i])) * 1e-7
                                       : fabs(y[i] - erf((double)x[i])));
    if (!(we <= 2 && ws <= 4 && wt <= 4 && wf <= 4e-7))
      fprintf(stderr, "math at %s: exp %.2f ulp, sigmoid %.2f, tanh %.2f, erf %.3g\n",
              nat_isa_name(lv[li]), we, ws, wt, wf);
    CHECK(we <= 2 && ws <= 4 && wt <= 4 && wf <= 4e-7); /* erf: 4 ulp counted as 4e-7 */
    /* limits and non-finite values as libm gives them */
    float odd[5] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f}, o[5];
    memcpy(o, odd, sizeof o);
    nat_act_f32(&th, o, 5);
    CHECK(isnan(o[0]) && o[1] == 1.0f && o[2] == -1.0f && o[3] == 0 && signbit(o[4]));
    memcpy(o, odd, sizeof o);
    nat_act_f32(&sig, o, 5);
    CHECK(isnan(o[0]) && o[1] == 1.0f && o[2] == 0.0f && o[3] == 0.5f && o[4] == 0.5f);
    nat_erf_f32(odd, o, 5);
    CHECK(isnan(o[0]) && o[1] == 1.0f && o[2] == -1.0f && o[3] == 0 && signbit(o[4]));
    /* every length to 20 from offset 5 gives the long call's values */
    ait_act gelu = {.kind = AIT_ACT_GELU};
    /* GELU's non-finite and signed-zero inputs as x Phi(x) gives them (-inf: -inf * 0) */
    memcpy(o, odd, sizeof o);
    nat_act_f32(&gelu, o, 5);
    CHECK(isnan(o[0]) && o[1] == INFINITY && isnan(o[2]) && o[3] == 0 && !signbit(o[3]) &&
          o[4] == 0 && signbit(o[4]));
    memcpy(g[li], x, sizeof(float) * (size_t)n);
    nat_act_f32(&gelu, g[li], n);
    for (int len = 1; len <= 20; len++) {
      float part[20], want[20];
      memcpy(part, x + 5, sizeof(float) * (size_t)len);
      nat_act_f32(&th, part, len);
      memcpy(want, x + 5, sizeof want);
      nat_act_f32(&th, want, 20);
      CHECK(!memcmp(part, want, sizeof(float) * (size_t)len));
    }
    if (lv[li] >= NAT_ISA_AVX2) { /* the tile: 3 rows of 37 of a 40-float stride */
      float t[3 * 40];
      memcpy(t, x + 1000, sizeof t);
      nat_gelu256_tile(t, 40, 3, 37);
      for (int r = 0; r < 3; r++) {
        CHECK(!memcmp(t + 40 * r, g[li] + 1000 + 40 * r, sizeof(float) * 37));
        CHECK(!memcmp(t + 40 * r + 37, x + 1000 + 40 * r + 37, sizeof(float) * 3));
      }
    }
  }
  /* the levels' tables differ (AVX2's: 8 pieces of degree 7, one permute a
   * coefficient), each within 1.2e-7 max(1, |x|) of GELU (test_gelu_math):
   * they agree to twice that */
  for (int li = 0; li + 1 < nl; li++) {
    if (lv[li + 1] < NAT_ISA_AVX2) continue;
    double worst = 0;
    for (int i = 0; i < n; i++)
      worst = fmax(worst, fabs((double)g[li][i] - g[li + 1][i]) / fmax(1.0, fabs((double)x[i])));
    CHECK(worst <= 2.4e-7);
  }
  nat_isa_enter(prev);
}

/* ==== avx2-kern: every vector kernel at each ISA level, random shapes ===== */

/* Each level named explicitly (native:isa=L) in one process, so one run of
 * the test checks the AVX-512, the AVX2 and the portable kernels against
 * eager whatever AIT_MAX_ISA says (a level above the CPU's is capped). */
static const char *const kern_levels[] = {"avx512", "avx2", "portable"};

static uint32_t isa_rng = 12345u;
static int64_t isa_rand(int64_t lo, int64_t hi) { /* uniform in [lo, hi] */
  isa_rng = isa_rng * 1664525u + 1013904223u;
  return lo + (int64_t)((isa_rng >> 8) % (uint32_t)(hi - lo + 1));
}

/* Inverted residual chains of random odd shapes (channel tails of both
 * vector widths, strides 1 and 2, batch 1..3, with and without expand or
 * residual), separate convs and fused blocks, at every level. */
static void test_isa_nhwc(void) {
  nat_set_scratch_poison(true);
  for (int k = 0; k < 10; k++) {
    ir_shape s;
    s.C = isa_rand(3, 40);
    s.E = k % 4 == 3 ? 0 : isa_rand(5, 150);
    s.M = k % 3 == 0 ? s.C : isa_rand(3, 90);
    s.stride = 1 + k % 2;
    s.H = isa_rand(9, 44), s.W = isa_rand(9, 44);
    s.residual = s.stride == 1 && s.M == s.C;
    s.gap = k % 5 == 4;
    ait_graph *g = ir_model(&s);
    CHECK(g != NULL);
    if (!g) continue;
    nat_pass_stats st;
    ait_graph *rw = rewrite(g, &st);
    for (int fuse = 0; rw && fuse < 2; fuse++) {
      nat_layout_set_block_bytes(fuse ? 0 : INT64_MAX);
      int64_t batch = isa_rand(1, 3);
      const int64_t d[4] = {batch, 3, s.H, s.W};
      ait_tensor *x = rand_tensor(4, d), *ref = NULL;
      CHECK(ait_eager_run(g, (const ait_tensor *const *)&x, 1, &ref) == AIT_OK);
      for (size_t l = 0; l < sizeof kern_levels / sizeof kern_levels[0]; l++)
        for (int t = 1; t <= 2; t++) {
          char spec[96];
          snprintf(spec, sizeof spec, "native:isa=%s,layout=nhwc,threads=%d", kern_levels[l], t);
          ait_tensor *y = NULL;
          CHECK(run_on(spec, g, (const ait_tensor *const *)&x, 1, &y) == AIT_OK);
          double dd = check_rel_diff(y, ref);
          if (!(dd <= 1e-4))
            fprintf(stderr, "isa nhwc %s: C %lld E %lld M %lld s %lld %lldx%lld n %lld: %g\n", spec,
                    (long long)s.C, (long long)s.E, (long long)s.M, (long long)s.stride,
                    (long long)s.H, (long long)s.W, (long long)batch, dd);
          CHECK(dd <= 1e-4);
          ait_tensor_free(y);
        }
      ait_tensor_free(ref), ait_tensor_free(x);
    }
    nat_layout_set_block_bytes(0);
    ait_graph_free(rw);
    ait_graph_free(g);
  }
  nat_set_scratch_poison(false);
}

/* The MatMul tiles (random row counts, odd widths: tails of 8 and 16
 * lanes, the 24-wide tile) and the packed GEMV at each level; the vector
 * levels pack their weights (3 packs each), the portable one none. */
static void test_isa_products(void) {
  ait_graph *g = tiles_model(), *gv = gemv_model(), *gg = gelu_model("none", true);
  CHECK(g && gv && gg);
  for (size_t l = 0; g && gv && gg && l < sizeof kern_levels / sizeof kern_levels[0]; l++) {
    char spec[64], spec2[64];
    snprintf(spec, sizeof spec, "native:isa=%s", kern_levels[l]);
    snprintf(spec2, sizeof spec2, "native:isa=%s,threads=2", kern_levels[l]);
    int level = nat_isa_parse(kern_levels[l]);
    for (int k = 0; k < 4; k++) {
      const int64_t rows = isa_rand(16, 150), dx[2] = {rows, 37}, dz[2] = {rows, 24};
      ait_tensor *in[2] = {rand_tensor(2, dx), rand_tensor(2, dz)}, *ref = NULL, *y = NULL;
      CHECK(ait_eager_run(g, (const ait_tensor *const *)in, 2, &ref) == AIT_OK);
      for (int t = 0; t < 2; t++) {
        CHECK(run_on(t ? spec2 : spec, g, (const ait_tensor *const *)in, 2, &y) == AIT_OK);
        CHECK(check_rel_diff(y, ref) <= 1e-5);
        ait_tensor_free(y);
      }
      if (k == 0)
        check_packs(g, spec, (const ait_tensor *const *)in, 2, NAT_DATA_TILES,
                    level >= NAT_ISA_AVX2 ? 3 : 0);
      /* GELU on each tile (40 columns: a masked last vector of either width) */
      const int64_t dg[2] = {rows, 24};
      ait_tensor *xg = rand_tensor(2, dg), *rg = NULL, *yg = NULL;
      CHECK(ait_eager_run(gg, (const ait_tensor *const *)&xg, 1, &rg) == AIT_OK);
      CHECK(run_on(spec2, gg, (const ait_tensor *const *)&xg, 1, &yg) == AIT_OK);
      CHECK(check_rel_diff(yg, rg) <= 1e-5);
      ait_tensor_free(xg), ait_tensor_free(rg), ait_tensor_free(yg);
      ait_tensor_free(ref), ait_tensor_free(in[0]), ait_tensor_free(in[1]);
    }
    const int64_t dx[2] = {1, 301}, dz[2] = {1, 231};
    ait_tensor *in[2] = {rand_tensor(2, dx), rand_tensor(2, dz)};
    check_packs(gv, spec, (const ait_tensor *const *)in, 2, NAT_DATA_GEMV,
                level >= NAT_ISA_AVX2 ? 3 : 0);
    check_packs(gv, spec2, (const ait_tensor *const *)in, 2, NAT_DATA_GEMV,
                level >= NAT_ISA_AVX2 ? 3 : 0);
    ait_tensor_free(in[0]), ait_tensor_free(in[1]);
  }
  ait_graph_free(g), ait_graph_free(gv), ait_graph_free(gg);
}

/* ==== end avx2-kern ======================================================== */

/* ---- opset 23: Attention as FusedAttention, RMSNormalization ---------------- */

/* The dynamo exporter's opset-23 attention: q, k, v (B, S, H, D) transposed
 * to (B, H, S, D), Attention (causal or with a float mask, or neither), the
 * output transposed back; then an RMSNormalization of the result. */
static ait_graph *onnx_attention_model(int64_t S, int64_t H, int64_t D, bool causal, bool mask) {
  const int64_t dq[4] = {1, S, H, D}, dm[2] = {S, S}, ds[1] = {D};
  static const int64_t p0213[4] = {0, 2, 1, 3};
  static float scale[64];
  for (int i = 0; i < 64; i++)
    scale[i] = 0.5f + (float)i / 64;
  tb_model *m = tb_new(23);
  tb_input(m, "q", 1, 4, dq);
  tb_input(m, "k", 1, 4, dq);
  tb_input(m, "v", 1, 4, dq);
  if (mask) tb_input(m, "mask", 1, 2, dm);
  tb_output(m, "y", 1, 4, dq);
  tb_init_f32(m, "g", 1, ds, scale);
  tb_attr_ints(m, tb_node(m, "Transpose", "tq", IN("q"), IN("qt")), "perm", 4, p0213);
  tb_attr_ints(m, tb_node(m, "Transpose", "tk", IN("k"), IN("kt")), "perm", 4, p0213);
  tb_attr_ints(m, tb_node(m, "Transpose", "tv", IN("v"), IN("vt")), "perm", 4, p0213);
  int a = tb_node(m, "Attention", "attn",
                  mask ? IN("qt", "kt", "vt", "mask") : IN("qt", "kt", "vt"), IN("a"));
  tb_attr_int(m, a, "is_causal", causal);
  tb_attr_ints(m, tb_node(m, "Transpose", "to", IN("a"), IN("a2")), "perm", 4, p0213);
  tb_attr_int(m, tb_node(m, "RMSNormalization", "rms", IN("a2", "g"), IN("y")), "axis", -1);
  return parse(m);
}

static void test_onnx_attention(void) {
  const struct {
    int64_t S, H, D;
    bool causal, mask;
  } cases[] = {{40, 2, 32, false, false}, {33, 3, 16, true, false}, {24, 2, 64, false, true}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    ait_graph *g =
        onnx_attention_model(cases[c].S, cases[c].H, cases[c].D, cases[c].causal, cases[c].mask);
    nat_pass_stats st;
    ait_graph *rw = g ? rewrite(g, &st) : NULL;
    /* every Transpose absorbed: one FusedAttention, then the RMSNormalization */
    CHECK(rw && rw->n_nodes == 2 && check_count_op(rw, "FusedAttention") == 1 &&
          check_count_op(rw, "Attention") == 0 && check_count_op(rw, "RMSNormalization") == 1);
    if (rw) {
      const int64_t dq[4] = {1, cases[c].S, cases[c].H, cases[c].D},
                    dm[2] = {cases[c].S, cases[c].S};
      ait_tensor *in[4] = {rand_tensor(4, dq), rand_tensor(4, dq), rand_tensor(4, dq),
                           cases[c].mask ? rand_tensor(2, dm) : NULL};
      check_equivalent(g, rw, (const ait_tensor *const *)in, cases[c].mask ? 4 : 3, 1e-5);
      for (int i = 0; i < 4; i++)
        ait_tensor_free(in[i]);
    }
    ait_graph_free(rw);
    ait_graph_free(g);
  }
  /* what the fused kernel does not do stays on the reference: grouped heads */
  const int64_t dq[4] = {1, 8, 4, 16}, dk[4] = {1, 2, 8, 16};
  tb_model *m = tb_new(23);
  tb_input(m, "q", 1, 4, dq);
  tb_input(m, "k", 1, 4, dk);
  tb_input(m, "v", 1, 4, dk);
  tb_output(m, "y", 1, 4, dq);
  tb_node(m, "Attention", "attn", IN("q", "k", "v"), IN("y"));
  ait_graph *g = parse(m);
  nat_pass_stats st;
  ait_graph *rw = g ? rewrite(g, &st) : NULL;
  CHECK(rw && check_count_op(rw, "Attention") == 1 && check_count_op(rw, "FusedAttention") == 0);
  ait_graph_free(rw);
  ait_graph_free(g);
}

/* RotaryEmbedding on native's float kernel against the reference: 4-D
 * with position ids (half split, partial rotation), 3-D without
 * (interleaved). */
static void test_onnx_rope(void) {
  for (int c = 0; c < 2; c++) {
    bool pos = c == 0;
    const int64_t B = 2, H = 3, S = 5, D = 16, half = pos ? 4 : 8, P = 9;
    const int64_t dx4[4] = {B, H, S, D}, dx3[3] = {B, S, H * D};
    const int64_t dcp[2] = {P, half}, dcn[3] = {B, S, half}, dp[2] = {B, S};
    tb_model *m = tb_new(23);
    tb_input(m, "x", 1, pos ? 4 : 3, pos ? dx4 : dx3);
    tb_input(m, "cos", 1, pos ? 2 : 3, pos ? dcp : dcn);
    tb_input(m, "sin", 1, pos ? 2 : 3, pos ? dcp : dcn);
    if (pos) tb_input(m, "pos", AIT_INT64, 2, dp);
    tb_output(m, "y", 1, pos ? 4 : 3, pos ? dx4 : dx3);
    int r = tb_node(m, "RotaryEmbedding", "rope",
                    pos ? IN("x", "cos", "sin", "pos") : IN("x", "cos", "sin"), IN("y"));
    if (pos) tb_attr_int(m, r, "rotary_embedding_dim", 2 * half);
    if (!pos) {
      tb_attr_int(m, r, "num_heads", H);
      tb_attr_int(m, r, "interleaved", 1);
    }
    ait_graph *g = parse(m);
    ait_tensor *in[4] = {
        rand_tensor(pos ? 4 : 3, pos ? dx4 : dx3), rand_tensor(pos ? 2 : 3, pos ? dcp : dcn),
        rand_tensor(pos ? 2 : 3, pos ? dcp : dcn), pos ? ait_tensor_new(AIT_INT64, 2, dp) : NULL};
    for (int64_t i = 0; pos && i < B * S; i++)
      ((int64_t *)in[3]->data)[i] = (i * 5 + 2) % P;
    ait_tensor *ref = NULL, *nat = NULL;
    CHECK(g && ait_eager_run(g, (const ait_tensor *const *)in, pos ? 4 : 3, &ref) == AIT_OK);
    CHECK(g && run_on("native", g, (const ait_tensor *const *)in, pos ? 4 : 3, &nat) == AIT_OK);
    CHECK(ref && nat && check_rel_diff(nat, ref) <= 1e-6);
    ait_tensor_free(ref), ait_tensor_free(nat);
    for (int i = 0; i < 4; i++)
      ait_tensor_free(in[i]);
    ait_graph_free(g);
  }
}

int main(void) {
  test_onnx_attention();
  test_onnx_rope();
  test_gelu_math();
  test_math();
  test_cnn();
  test_mlp();
  test_few_rows();
  test_gemv_packed();
  test_gelu_op();
  test_tiles();
  test_attention();
  test_attention_live_keys();
  test_attention_shapes();
  test_layernorm();
  test_attention3_shapes();
  test_nhwc();
  test_state();
  test_shape_cache();
  test_options();
  test_gemm_provider();
  test_gemm_unused();
  test_gemm_auto();
  test_pool();
  test_planner();
  test_plan_cache();
  test_isa_math();
  test_isa_rows();
  test_isa_attention();
  test_isa_nhwc();     /* avx2-kern */
  test_isa_products(); /* avx2-kern */
  return check_result("test_native");
}
