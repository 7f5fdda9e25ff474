/* The shared graph-rewriting layer (src/ir/passes/), each pass on its own:
 * the rewritten graph on eager equals the original on eager, on random
 * inputs, and the rewrite did what it should (and nothing where the
 * pattern is not there). Constant folding, no-op and Transpose/Reshape pair
 * elimination, BatchNormalization into Conv
 * (and a lone BatchNormalization as a depthwise Conv), the GELU matcher
 * (erf and tanh forms, both associations) with its one tolerance, SiLU and
 * the spelled-out HardSwish, and attention (scales, masks, swin's
 * windowed mask, K^T either way). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/native/native.h"
#include "check.h"
#include "ir/copy.h"
#include "ir/passes/passes.h"
#include "model_builder.h"
#include "ops/op.h"
#include "runtime/eager.h"

static uint32_t rng = 777;
static float frand(void) {
  rng = rng * 1664525u + 1013904223u;
  return (float)((rng >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static ait_tensor *rand_tensor(int rank, const int64_t *dims, float lo, float hi) {
  ait_tensor *t = ait_tensor_new(AIT_FLOAT32, rank, dims);
  float *d = t->data;
  for (int64_t i = 0; i < ait_tensor_numel(t); i++)
    d[i] = lo + (hi - lo) * (frand() + 1.0f) * 0.5f;
  return t;
}

static void rand_init(tb_model *m, const char *name, int rank, const int64_t *dims, float lo,
                      float hi) {
  ait_tensor *t = rand_tensor(rank, dims, lo, hi);
  tb_init_f32(m, name, rank, dims, t->data);
  ait_tensor_free(t);
}

/* Normalized error: max |a - b| / max(1, max |b|); INFINITY on a shape
 * mismatch. */
static double nerr(const ait_tensor *a, const ait_tensor *b) {
  if (!a || !b || a->dtype != AIT_FLOAT32 || b->dtype != AIT_FLOAT32 || a->rank != b->rank ||
      memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->rank))
    return INFINITY;
  const float *x = a->data, *y = b->data;
  double num = 0, den = 1;
  for (int64_t i = 0; i < ait_tensor_numel(a); i++) {
    double d = fabs((double)x[i] - y[i]);
    if (isnan(d)) return INFINITY;
    num = d > num ? d : num;
    den = fabs((double)y[i]) > den ? fabs((double)y[i]) : den;
  }
  return num / den;
}

/* eager(rewritten) against eager(original) on `trials` random inputs of
 * the graph's declared (static) input shape. */
static void check_same_on_eager(const ait_graph *g, const ait_graph *rw, double tol,
                                const char *what) {
  enum { MAX_OUT = 8 };
  CHECK(g->n_outputs <= MAX_OUT && rw->n_outputs == g->n_outputs);
  for (int trial = 0; trial < 3 && g->n_outputs <= MAX_OUT; trial++) {
    ait_tensor *in[4] = {0};
    for (int i = 0; i < g->n_inputs; i++) {
      const ait_value *v = &g->values[g->inputs[i]];
      int64_t dims[AIT_MAX_RANK];
      for (int k = 0; k < v->rank; k++)
        dims[k] = v->dims[k].v;
      in[i] = rand_tensor(v->rank, dims, -4.0f, 4.0f);
    }
    ait_tensor *ref[MAX_OUT] = {0}, *got[MAX_OUT] = {0}; /* one slot per output */
    CHECK(ait_eager_run(g, (const ait_tensor *const *)in, g->n_inputs, ref) == AIT_OK);
    ait_status st = ait_eager_run(rw, (const ait_tensor *const *)in, g->n_inputs, got);
    if (st) fprintf(stderr, "%s: %s\n", what, ait_last_error());
    CHECK(st == AIT_OK);
    for (int k = 0; k < g->n_outputs; k++) {
      /* a float output within tol, any other bit for bit */
      double e =
          ref[k] && ref[k]->dtype != AIT_FLOAT32 && got[k] && got[k]->dtype == ref[k]->dtype &&
                  ait_tensor_nbytes(got[k]) == ait_tensor_nbytes(ref[k])
              ? (memcmp(got[k]->data, ref[k]->data, ait_tensor_nbytes(ref[k])) ? INFINITY : 0)
              : nerr(got[k], ref[k]);
      if (!(e <= tol))
        fprintf(stderr, "%s: output %d: normalized error %g > %g\n", what, k, e, tol);
      CHECK(e <= tol);
      ait_tensor_free(ref[k]);
      ait_tensor_free(got[k]);
    }
    for (int i = 0; i < 4; i++)
      ait_tensor_free(in[i]);
  }
}

static int live_nodes(const ait_graph *g, const char *op) {
  int c = 0;
  for (int i = 0; i < g->n_nodes; i++)
    c += !op || !strcmp(g->nodes[i].op_type, op);
  return c;
}

/* ---- simplification: no-ops and pairs ----------------------------------- */

/* rw = g's copy with `pass` run and compacted; *removed its count. */
static ait_graph *simplified(const ait_graph *g, ait_status (*pass)(ait_graph *, bool *, int *),
                             int *removed) {
  ait_graph *rw = ait_graph_clone(g, NULL, true);
  bool *dead = rw ? calloc((size_t)rw->n_nodes + 1, sizeof *dead) : NULL;
  *removed = 0;
  CHECK(dead && pass(rw, dead, removed) == AIT_OK && nat_graph_compact(rw, dead) == AIT_OK);
  free(dead);
  return rw;
}

/* Parse m into *g and run `pass` on a copy, *rw; it must remove `want`
 * nodes. False when there is no graph to check. */
static bool run_simplify(tb_model *m, ait_status (*pass)(ait_graph *, bool *, int *), int want,
                         ait_graph **g, ait_graph **rw) {
  *rw = NULL;
  *g = tb_parse_graph(m);
  CHECK(*g != NULL);
  if (!*g) return false;
  int removed = 0;
  *rw = simplified(*g, pass, &removed);
  if (removed != want) fprintf(stderr, "%d nodes removed, want %d\n", removed, want);
  CHECK(removed == want && *rw != NULL);
  return *rw != NULL;
}

/* X -Identity- A -Relu- B -Dropout- C -Transpose(identity)- Y, and a
 * Dropout whose mask is an output (it stays): Relu alone writes Y. */
static void test_remove_noops(void) {
  tb_model *m = tb_new(17);
  int64_t xd[2] = {3, 5};
  tb_input(m, "X", AIT_FLOAT32, 2, xd);
  tb_output(m, "Y", AIT_FLOAT32, 2, xd);
  tb_output(m, "M", AIT_BOOL, 2, xd);
  tb_node(m, "Identity", "i", (const char *[]){"X", NULL}, (const char *[]){"A", NULL});
  tb_node(m, "Relu", "r", (const char *[]){"A", NULL}, (const char *[]){"B", NULL});
  tb_node(m, "Dropout", "d", (const char *[]){"B", NULL}, (const char *[]){"C", NULL});
  int t = tb_node(m, "Transpose", "t", (const char *[]){"C", NULL}, (const char *[]){"Y", NULL});
  tb_attr_ints(m, t, "perm", 2, (const int64_t[]){0, 1});
  tb_node(m, "Dropout", "dm", (const char *[]){"X", NULL}, (const char *[]){"D", "M", NULL});
  ait_graph *g, *rw;
  if (!run_simplify(m, ait_pass_remove_noops, 3, &g, &rw)) {
    ait_graph_free(g);
    return;
  }
  CHECK(live_nodes(rw, NULL) == 2 && live_nodes(rw, "Relu") == 1 && live_nodes(rw, "Dropout") == 1);
  for (int i = 0; i < rw->n_nodes; i++)
    if (ait_is_op(&rw->nodes[i], "Relu"))
      CHECK(rw->nodes[i].in[0] == ait_graph_find_value(rw, "X") &&
            rw->nodes[i].out[0] == ait_graph_find_value(rw, "Y"));
  check_same_on_eager(g, rw, 0.0, "remove no-ops");
  ait_graph_free(rw);
  ait_graph_free(g);
}

/* Transpose pairs (one composing to the identity: gone; one not: a single
 * Transpose) and Reshape pairs (merged; one whose shape copies a dim with
 * a 0 stays). */
static void test_remove_pairs(void) {
  tb_model *m = tb_new(17);
  int64_t xd[3] = {2, 3, 4}, yd[3] = {3, 4, 2}, sd[1] = {2}, s3[1] = {3};
  tb_input(m, "X", AIT_FLOAT32, 3, xd);
  tb_output(m, "Y", AIT_FLOAT32, 3, yd);
  tb_output(m, "Z", AIT_FLOAT32, 2, (const int64_t[]){4, 6});
  tb_output(m, "W", AIT_FLOAT32, 3, (const int64_t[]){2, 12, 1});
  const int64_t perms[4][3] = {{1, 2, 0}, {2, 0, 1}, {0, 2, 1}, {2, 1, 0}};
  const char *io[5] = {"X", "T1", "T2", "T3", "T4"};
  for (int k = 0; k < 4; k++) {
    char name[8];
    snprintf(name, sizeof name, "t%d", k);
    int n = tb_node(m, "Transpose", name, (const char *[]){k == 2 ? "R" : io[k], NULL},
                    (const char *[]){k == 3 ? "Y" : io[k + 1], NULL});
    tb_attr_ints(m, n, "perm", 3, perms[k]);
    if (k == 1) tb_node(m, "Relu", "r", (const char *[]){"T2", NULL}, (const char *[]){"R", NULL});
  }
  tb_init_i64(m, "S1", 1, sd, (const int64_t[]){6, 4});
  tb_init_i64(m, "S2", 1, sd, (const int64_t[]){4, 6});
  tb_init_i64(m, "S3", 1, sd, (const int64_t[]){2, 12});
  tb_init_i64(m, "S4", 1, s3, (const int64_t[]){0, -1, 1});
  tb_node(m, "Reshape", "a", (const char *[]){"X", "S1", NULL}, (const char *[]){"P1", NULL});
  tb_node(m, "Reshape", "b", (const char *[]){"P1", "S2", NULL}, (const char *[]){"Z", NULL});
  tb_node(m, "Reshape", "c", (const char *[]){"X", "S3", NULL}, (const char *[]){"P3", NULL});
  tb_node(m, "Reshape", "e", (const char *[]){"P3", "S4", NULL}, (const char *[]){"W", NULL});
  ait_graph *g, *rw; /* removed: t0+t1 (both), t2+t3 (one), a+b (one) */
  if (!run_simplify(m, ait_pass_remove_pairs, 4, &g, &rw)) {
    ait_graph_free(g);
    return;
  }
  CHECK(live_nodes(rw, "Transpose") == 1 && live_nodes(rw, "Reshape") == 3);
  for (int i = 0; i < rw->n_nodes; i++) {
    const ait_node *n = &rw->nodes[i];
    if (ait_is_op(n, "Relu")) CHECK(n->in[0] == ait_graph_find_value(rw, "X"));
    int cnt = 0;
    const int64_t *p = ait_is_op(n, "Transpose") ? ait_attr_ints(n, "perm", &cnt) : NULL;
    if (p) CHECK(cnt == 3 && p[0] == 1 && p[1] == 2 && p[2] == 0);
  }
  check_same_on_eager(g, rw, 0.0, "remove pairs");
  ait_graph_free(rw);
  ait_graph_free(g);
}

/* ---- constant folding ----------------------------------------------------- */

static void test_fold_constants(void) {
  tb_model *m = tb_new(17);
  int64_t xd[2] = {2, 3}, cd[1] = {3}, sd[1] = {2};
  tb_input(m, "X", AIT_FLOAT32, 2, xd);
  tb_output(m, "Y", AIT_FLOAT32, 2, xd);
  rand_init(m, "A", 1, cd, -1, 1);
  rand_init(m, "B", 1, cd, -1, 1);
  int64_t shape[2] = {3, 2};
  tb_init_i64(m, "S", 1, sd, shape);
  tb_node(m, "Mul", "c", (const char *[]){"A", "B", NULL}, (const char *[]){"C", NULL});
  tb_node(m, "Exp", "d", (const char *[]){"C", NULL}, (const char *[]){"D", NULL});
  tb_node(m, "Add", "e", (const char *[]){"X", "D", NULL}, (const char *[]){"E", NULL});
  tb_node(m, "Reshape", "r", (const char *[]){"E", "S", NULL}, (const char *[]){"R", NULL});
  tb_node(m, "Reshape", "y", (const char *[]){"R", "S2", NULL}, (const char *[]){"Y", NULL});
  int64_t back[2] = {2, 3};
  tb_init_i64(m, "S2", 1, sd, back);
  ait_graph *g = tb_parse_graph(m);
  CHECK(g != NULL);
  if (!g) return;
  ait_graph *rw = ait_graph_clone(g, NULL, true);
  bool *dead = calloc((size_t)rw->n_nodes, sizeof *dead);
  int folded = 0;
  CHECK(ait_pass_fold_constants(rw, dead, ait_eager_run_node, &folded) == AIT_OK);
  CHECK(folded == 2); /* Mul and Exp; not what reads X */
  CHECK(nat_graph_compact(rw, dead) == AIT_OK);
  CHECK(live_nodes(rw, NULL) == 3 && live_nodes(rw, "Exp") == 0);
  /* folding runs the reference kernels: exact */
  check_same_on_eager(g, rw, 0.0, "fold constants");
  free(dead);
  ait_graph_free(rw);
  ait_graph_free(g);
}

/* A weight sliced at bounds taken from a Shape (nn.MultiheadAttention's
 * export): Gather(Shape(X), 1) -> Unsqueeze -> Slice(W) -> MatMul. The
 * Gather of a known dim folds, then the rest; of a symbolic dim it stays. */
static ait_graph *shape_slice_model(int gather_axis) {
  tb_model *m = tb_new(17);
  int64_t xd[2] = {-1, 3}, wd[2] = {3, 6}, one[1] = {1}, yd[2] = {-1, 3};
  tb_input(m, "X", AIT_FLOAT32, 2, xd);
  tb_output(m, "Y", AIT_FLOAT32, 2, yd);
  rand_init(m, "W", 2, wd, -1, 1);
  int64_t idx = gather_axis, zero = 0, ax1 = 1;
  tb_init_i64(m, "I", 0, NULL, &idx);
  tb_init_i64(m, "Z", 1, one, &zero);
  tb_init_i64(m, "A0", 1, one, &zero);
  tb_init_i64(m, "A1", 1, one, &ax1);
  tb_node(m, "Shape", "s", (const char *[]){"X", NULL}, (const char *[]){"S", NULL});
  tb_node(m, "Gather", "g", (const char *[]){"S", "I", NULL}, (const char *[]){"G", NULL});
  tb_node(m, "Unsqueeze", "u", (const char *[]){"G", "A0", NULL}, (const char *[]){"E", NULL});
  tb_node(m, "Slice", "sl", (const char *[]){"W", "Z", "E", "A1", NULL},
          (const char *[]){"WS", NULL});
  tb_node(m, "MatMul", "mm", (const char *[]){"X", "WS", NULL}, (const char *[]){"Y", NULL});
  ait_graph *g = tb_parse_graph(m);
  return g;
}

static void test_fold_known_shapes(void) {
  for (int axis = 0; axis < 2; axis++) {
    ait_graph *g = shape_slice_model(axis);
    CHECK(g != NULL);
    if (!g) return;
    ait_graph *rw = ait_graph_clone(g, NULL, true);
    bool *dead = calloc((size_t)rw->n_nodes, sizeof *dead);
    int folded = 0;
    CHECK(ait_pass_fold_known_shapes(rw, dead, ait_eager_run_node, &folded) == AIT_OK);
    CHECK(folded == (axis == 1)); /* X's dim 1 is 3; dim 0 is symbolic */
    CHECK(ait_pass_fold_constants(rw, dead, ait_eager_run_node, &folded) == AIT_OK);
    CHECK(folded == (axis == 1 ? 3 : 0)); /* then Unsqueeze and Slice */
    CHECK(nat_graph_compact(rw, dead) == AIT_OK);
    CHECK(live_nodes(rw, "Slice") == (axis == 0) && live_nodes(rw, "MatMul") == 1);
    if (axis == 1) { /* the symbolic batch: eager on [2, 3] inputs */
      ait_value *x = &rw->values[rw->inputs[0]], *x0 = &g->values[g->inputs[0]];
      x->dims[0].v = x0->dims[0].v = 2;
      check_same_on_eager(g, rw, 0.0, "fold known shapes");
    }
    free(dead);
    ait_graph_free(rw);
    ait_graph_free(g);
  }
}

/* The shared predicates: which nodes fold. */
static void test_foldable(void) {
  const ait_op_def *relu = ait_op_lookup("", "Relu", 14, NULL);
  const ait_op_def *drop = ait_op_lookup("", "Dropout", 13, NULL);
  const ait_op_def *rnd = ait_op_lookup("", "RandomNormal", 1, NULL);
  CHECK(relu && drop && rnd);
  if (!relu || !drop || !rnd) return;
  ait_node n = {.op_type = "Relu", .domain = "", .op = relu};
  CHECK(ait_node_pure(&n) && ait_node_foldable(&n) && ait_is_op(&n, "Relu"));
  n = (ait_node){.op_type = "Dropout", .domain = "", .op = drop};
  CHECK(ait_node_pure(&n) && !ait_node_foldable(&n));
  n = (ait_node){.op_type = "RandomNormal", .domain = "", .op = rnd};
  CHECK(!ait_node_pure(&n) && !ait_node_foldable(&n));
  n = (ait_node){.op_type = "Relu", .domain = "com.example", .op = relu};
  CHECK(!ait_is_op(&n, "Relu"));
  n = (ait_node){.op_type = "Relu", .domain = "", .op = NULL};
  CHECK(!ait_node_pure(&n));
}

/* ---- BatchNormalization --------------------------------------------------- */

static ait_graph *conv_bn_model(bool with_conv) {
  tb_model *m = tb_new(17);
  int64_t xd[4] = {1, 4, 6, 6}, wd[4] = {8, 4, 3, 3}, yd[4] = {1, 8, 4, 4}, c8[1] = {8},
          c4[1] = {4};
  int64_t C = with_conv ? 8 : 4;
  const int64_t *cd = with_conv ? c8 : c4;
  tb_input(m, "X", AIT_FLOAT32, 4, xd);
  tb_output(m, "Y", AIT_FLOAT32, 4, with_conv ? yd : xd);
  const char *bn_in = "X";
  if (with_conv) {
    rand_init(m, "W", 4, wd, -0.5f, 0.5f);
    rand_init(m, "Bc", 1, c8, -0.5f, 0.5f);
    tb_node(m, "Conv", "conv", (const char *[]){"X", "W", "Bc", NULL}, (const char *[]){"C", NULL});
    bn_in = "C";
  }
  rand_init(m, "scale", 1, cd, 0.5f, 1.5f);
  rand_init(m, "bias", 1, cd, -1, 1);
  rand_init(m, "mean", 1, cd, -1, 1);
  rand_init(m, "var", 1, cd, 0.1f, 2.0f);
  (void)C;
  int b = tb_node(m, "BatchNormalization", "bn",
                  (const char *[]){bn_in, "scale", "bias", "mean", "var", NULL},
                  (const char *[]){"Y", NULL});
  tb_attr_float(m, b, "epsilon", 1e-3f);
  return tb_parse_graph(m);
}

static void test_fold_batchnorm(void) {
  ait_graph *g = conv_bn_model(true);
  CHECK(g != NULL);
  if (!g) return;
  ait_graph *rw = ait_graph_clone(g, NULL, true);
  nat_uses u = {.g = rw};
  nat_pass_stats st = {0};
  CHECK(nat_uses_refresh(&u) == AIT_OK);
  CHECK(nat_pass_fold_batchnorm(&u, &st) == AIT_OK);
  CHECK(st.bn_folded == 1);
  CHECK(nat_graph_compact(rw, u.dead) == AIT_OK);
  nat_uses_free(&u);
  CHECK(live_nodes(rw, NULL) == 1 && live_nodes(rw, "Conv") == 1);
  check_same_on_eager(g, rw, 1e-5, "Conv+BatchNormalization");
  ait_graph_free(rw);
  ait_graph_free(g);

  /* a BatchNormalization after no conv: the whole pass chain rewrites it
   * as a depthwise Conv (ait_bn_fold with no weights) */
  g = conv_bn_model(false);
  CHECK(g != NULL);
  if (!g) return;
  rw = ait_graph_clone(g, NULL, true);
  CHECK(nat_run_passes_ex(rw, &st, true) == AIT_OK);
  CHECK(st.bn_folded == 1);
  CHECK(live_nodes(rw, "BatchNormalization") == 0);
  check_same_on_eager(g, rw, 1e-5, "BatchNormalization as a depthwise Conv");
  ait_graph_free(rw);
  ait_graph_free(g);
}

/* The arithmetic itself, against the formula in double. */
static void test_bn_fold_math(void) {
  enum { M = 5, PER = 3 };
  float w[M * PER], cb[M], sc[M], bi[M], mu[M], var[M], wo[M * PER], bo[M], k[M], ko[M];
  for (int i = 0; i < M * PER; i++)
    w[i] = frand();
  for (int m = 0; m < M; m++)
    cb[m] = frand(), sc[m] = frand(), bi[m] = frand(), mu[m] = frand(), var[m] = frand() + 1.5f;
  ait_bn_fold(w, M, PER, cb, sc, bi, mu, var, 1e-5, wo, bo);
  ait_bn_fold(NULL, M, 1, NULL, sc, bi, mu, var, 1e-5, k, ko);
  for (int m = 0; m < M; m++) {
    double kk = sc[m] / sqrt((double)var[m] + 1e-5);
    CHECK(k[m] == (float)kk);
    CHECK(ko[m] == (float)(bi[m] - mu[m] * kk));
    CHECK(bo[m] == (float)((cb[m] - mu[m]) * kk + bi[m]));
    for (int j = 0; j < PER; j++)
      CHECK(wo[m * PER + j] == (float)(w[m * PER + j] * kk));
  }
  ait_node b = {.op_type = "BatchNormalization", .domain = "", .opset = 15};
  CHECK(ait_bn_is_inference(&b));
}

/* ---- GELU ------------------------------------------------------------------ */

/* A view that counts readers by scanning (graph outputs count one more). */
static int scan_readers(const void *ctx, int v, int *nodes, int max) {
  const ait_graph *g = ctx;
  int n = 0, filled = 0;
  for (int k = 0; k < max; k++)
    nodes[k] = -1;
  for (int i = 0; i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i].n_in; k++)
      if (g->nodes[i].in[k] == v) {
        if (filled < max) nodes[filled++] = i;
        n++;
      }
  for (int i = 0; i < g->n_outputs; i++)
    n += g->outputs[i] == v;
  return n;
}

static bool init_scalar(const void *ctx, int v, float *out) {
  const ait_graph *g = ctx;
  if (!ait_value_is_const(g, v)) return false;
  const ait_tensor *t = g->values[v].init;
  if (t->dtype != AIT_FLOAT32 || ait_tensor_numel(t) != 1) return false;
  *out = *(const float *)t->data;
  return true;
}

/* A model at `opset` whose float32 "x" [3, 5] is MatMul(X, W): the producer
 * a pattern follows; the pattern writes output "Y" of the same shape. */
static tb_model *matmul_model(int opset) {
  tb_model *m = tb_new(opset);
  static const int64_t xd[2] = {3, 8}, wd[2] = {8, 5}, yd[2] = {3, 5}; /* borrowed by m */
  tb_input(m, "X", AIT_FLOAT32, 2, xd);
  tb_output(m, "Y", AIT_FLOAT32, 2, yd);
  rand_init(m, "W", 2, wd, -1, 1);
  tb_node(m, "MatMul", "mm", (const char *[]){"X", "W", NULL}, (const char *[]){"x", NULL});
  return m;
}

typedef enum gelu_form {
  G_HALF_LAST,
  G_HALF_FIRST,
  G_MUL_RSQRT2,
  G_TANH_POW,
  G_TANH_CUBE,
  G_HALF_INNER, /* x * ((1 + erf) * 0.5): the dynamo exporter's order */
  G_TANH_INNER  /* x * (0.5 * (1 + tanh)) with Pow */
} gelu_form;

/* Gemm -> spelled-out GELU, with sqrt2 as the constant (or 1/sqrt2 for a
 * Mul), `extra`: a third reader of the Gemm's output. */
static ait_graph *gelu_model(gelu_form form, float sqrt2, float one, bool extra) {
  tb_model *m = matmul_model(20);
  int64_t s[1] = {1};
  tb_init_f32(m, "k", 0, s, &sqrt2);
  tb_init_f32(m, "one", 0, s, &one);
  float half = 0.5f;
  tb_init_f32(m, "half", 0, s, &half);
  if (form == G_TANH_POW || form == G_TANH_CUBE || form == G_TANH_INNER) {
    /* 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))): k is 0.044715 */
    static const float three = 3.0f, c1 = 0.7978845608f;
    tb_init_f32(m, "three", 0, s, &three);
    tb_init_f32(m, "c1", 0, s, &c1);
    if (form != G_TANH_CUBE) {
      tb_node(m, "Pow", "p", (const char *[]){"x", "three", NULL}, (const char *[]){"x3", NULL});
    } else {
      tb_node(m, "Mul", "p", (const char *[]){"x", "x", NULL}, (const char *[]){"x2", NULL});
      tb_node(m, "Mul", "p3", (const char *[]){"x2", "x", NULL}, (const char *[]){"x3", NULL});
    }
    tb_node(m, "Mul", "q", (const char *[]){"k", "x3", NULL}, (const char *[]){"q", NULL});
    tb_node(m, "Add", "a1", (const char *[]){"x", "q", NULL}, (const char *[]){"u", NULL});
    tb_node(m, "Mul", "m4", (const char *[]){"u", "c1", NULL}, (const char *[]){"uu", NULL});
    tb_node(m, "Tanh", "e", (const char *[]){"uu", NULL}, (const char *[]){"r", NULL});
    tb_node(m, "Add", "a", (const char *[]){"r", "one", NULL}, (const char *[]){"t", NULL});
    if (form == G_TANH_INNER) { /* x * (0.5 * (1 + tanh)) */
      tb_node(m, "Mul", "h", (const char *[]){"half", "t", NULL}, (const char *[]){"th", NULL});
      tb_node(m, "Mul", "y", (const char *[]){"x", "th", NULL},
              (const char *[]){extra ? "y0" : "Y", NULL});
    } else if (form == G_TANH_POW) { /* (0.5 * x) * (1 + tanh) */
      tb_node(m, "Mul", "h", (const char *[]){"half", "x", NULL}, (const char *[]){"xh", NULL});
      tb_node(m, "Mul", "y", (const char *[]){"xh", "t", NULL},
              (const char *[]){extra ? "y0" : "Y", NULL});
    } else { /* (x * (1 + tanh)) * 0.5 */
      tb_node(m, "Mul", "h", (const char *[]){"x", "t", NULL}, (const char *[]){"xt", NULL});
      tb_node(m, "Mul", "y", (const char *[]){"xt", "half", NULL},
              (const char *[]){extra ? "y0" : "Y", NULL});
    }
    if (extra)
      tb_node(m, "Add", "z", (const char *[]){"y0", "x", NULL}, (const char *[]){"Y", NULL});
    return tb_parse_graph(m);
  }
  if (form == G_MUL_RSQRT2)
    tb_node(m, "Mul", "d", (const char *[]){"k", "x", NULL}, (const char *[]){"q", NULL});
  else
    tb_node(m, "Div", "d", (const char *[]){"x", "k", NULL}, (const char *[]){"q", NULL});
  tb_node(m, "Erf", "e", (const char *[]){"q", NULL}, (const char *[]){"r", NULL});
  tb_node(m, "Add", "a", (const char *[]){"one", "r", NULL}, (const char *[]){"t", NULL});
  if (form == G_HALF_INNER) {
    tb_node(m, "Mul", "h", (const char *[]){"t", "half", NULL}, (const char *[]){"th", NULL});
    tb_node(m, "Mul", "y", (const char *[]){"th", "x", NULL},
            (const char *[]){extra ? "y0" : "Y", NULL});
  } else if (form == G_HALF_FIRST) {
    tb_node(m, "Mul", "h", (const char *[]){"x", "half", NULL}, (const char *[]){"xh", NULL});
    tb_node(m, "Mul", "y", (const char *[]){"t", "xh", NULL},
            (const char *[]){extra ? "y0" : "Y", NULL});
  } else {
    tb_node(m, "Mul", "h", (const char *[]){"x", "t", NULL}, (const char *[]){"xt", NULL});
    tb_node(m, "Mul", "y", (const char *[]){"xt", "half", NULL},
            (const char *[]){extra ? "y0" : "Y", NULL});
  }
  if (extra) tb_node(m, "Add", "z", (const char *[]){"y0", "x", NULL}, (const char *[]){"Y", NULL});
  return tb_parse_graph(m);
}

static int value_named(const ait_graph *g, const char *name) {
  return ait_graph_find_value(g, name);
}

/* The match rewritten by hand into one Gelu-20 node in place of the first
 * matched node (the others dead): the graph the fusion means. */
static ait_graph *rewrite_gelu(const ait_graph *g, int x, const ait_gelu_match *mt) {
  ait_graph *rw = ait_graph_clone(g, NULL, true);
  bool *dead = calloc((size_t)rw->n_nodes, sizeof *dead);
  ait_node *n = &rw->nodes[mt->nodes[0]];
  free(n->op_type);
  n->op_type = strdup("Gelu");
  n->op = ait_op_lookup("", "Gelu", 20, NULL);
  n->opset = 20;
  n->in[0] = x;
  n->n_in = 1;
  n->out[0] = mt->y;
  if (mt->tanh) CHECK(nat_attr_set_str(n, "approximate", "tanh") == AIT_OK);
  rw->values[mt->y].producer = mt->nodes[0];
  for (int k = 1; k < mt->n_nodes; k++)
    dead[mt->nodes[k]] = true;
  CHECK(n->op != NULL);
  CHECK(nat_graph_compact(rw, dead) == AIT_OK);
  free(dead);
  return rw;
}

static void test_gelu(void) {
  const float sqrt2 = 1.41421356f, rsqrt2 = 0.70710678f;
  const struct {
    gelu_form form;
    float k, one;
    bool extra, want;
  } cases[] = {
      {G_HALF_LAST, sqrt2, 1.0f, false, true},
      {G_HALF_FIRST, sqrt2, 1.0f, false, true},
      {G_MUL_RSQRT2, rsqrt2, 1.0f, false, true},
      {G_HALF_LAST, sqrt2 * (1 + 5e-7f), 1.0f, false, true}, /* within AIT_MATCH_RTOL */
      {G_HALF_LAST, 1.4142f, 1.0f, false, false},            /* 1e-5 off: not GELU */
      {G_HALF_LAST, sqrt2, 2.0f, false, false},              /* not 1 + erf */
      {G_HALF_FIRST, sqrt2, 1.0f, true, false},              /* x has a third reader */
      {G_TANH_POW, 0.044715f, 1.0f, false, true},
      {G_TANH_CUBE, 0.044715f, 1.0f, false, true},
      {G_TANH_POW, 0.0447f, 1.0f, false, false},   /* not GELU's constant */
      {G_TANH_CUBE, 0.044715f, 1.0f, true, false}, /* x has another reader */
      {G_HALF_INNER, sqrt2, 1.0f, false, true},
      {G_HALF_INNER, sqrt2, 1.0f, true, false}, /* x has a third reader */
      {G_HALF_INNER, sqrt2, 2.0f, false, false},
      {G_TANH_INNER, 0.044715f, 1.0f, false, true},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    ait_graph *g = gelu_model(cases[c].form, cases[c].k, cases[c].one, cases[c].extra);
    CHECK(g != NULL);
    if (!g) continue;
    ait_match_view view = {.g = g, .readers = scan_readers, .scalar = init_scalar, .ctx = g};
    int x = value_named(g, "x");
    ait_gelu_match mt;
    bool got = ait_match_gelu(&view, x, &mt);
    if (got != cases[c].want) fprintf(stderr, "gelu case %zu: matched %d\n", c, got);
    CHECK(got == cases[c].want);
    if (got) {
      gelu_form f = cases[c].form;
      bool tanh = f == G_TANH_POW || f == G_TANH_CUBE || f == G_TANH_INNER;
      CHECK(mt.tanh == tanh && mt.y == value_named(g, "Y"));
      CHECK(mt.n_nodes == (!tanh ? 5 : f == G_TANH_CUBE ? 9 : 8));
      ait_graph *rw = rewrite_gelu(g, x, &mt);
      CHECK(live_nodes(rw, NULL) == 2 && live_nodes(rw, "Gelu") == 1);
      check_same_on_eager(g, rw, 1e-6, "GELU match as Gelu-20");
      ait_graph_free(rw);
      /* and native's fusion of it (the matcher's user): MatMul + GELU */
      nat_pass_stats st;
      rw = ait_graph_clone(g, NULL, true);
      CHECK(nat_run_passes_ex(rw, &st, true) == AIT_OK);
      CHECK(live_nodes(rw, NULL) == 1);
      check_same_on_eager(g, rw, 1e-5, "native's GELU fusion");
      ait_graph_free(rw);
    }
    ait_graph_free(g);
  }
}

/* What a target accepts is data (nat_accepts): the fusion pass hands a
 * producer only the activations in its set. The tanh GELU joins the MatMul
 * only where GELU_TANH is accepted (cuda's set; not the named set), the erf
 * one only where GELU is; either way the graph computes the same. */
static void test_accepts(void) {
  const nat_accepts none = {.acts = 0, .programs = false};
  const nat_accepts with_tanh = {.acts = nat_accepts_named.acts | NAT_ACT_BIT(AIT_ACT_GELU_TANH),
                                 .programs = false};
  const struct {
    gelu_form form;
    float k;
    const nat_accepts *acc;
    bool fused;
  } cases[] = {
      {G_HALF_LAST, 1.41421356f, &nat_accepts_named, true},
      {G_HALF_LAST, 1.41421356f, &none, false},
      {G_TANH_POW, 0.044715f, &nat_accepts_named, false},
      {G_TANH_POW, 0.044715f, &with_tanh, true},
      {G_TANH_INNER, 0.044715f, &with_tanh, true},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    ait_graph *g = gelu_model(cases[c].form, cases[c].k, 1.0f, false);
    CHECK(g != NULL);
    if (!g) continue;
    nat_pass_stats st;
    ait_graph *rw = ait_graph_clone(g, NULL, true);
    CHECK(nat_run_passes_for(rw, &st, false, cases[c].acc) == AIT_OK);
    bool one = live_nodes(rw, NULL) == 1;
    if (one != cases[c].fused)
      fprintf(stderr, "accepts case %zu: %d nodes\n", c, live_nodes(rw, NULL));
    CHECK(one == cases[c].fused);
    check_same_on_eager(g, rw, 1e-5, "fusion limited to what the target accepts");
    ait_graph_free(rw);
    ait_graph_free(g);
  }
}

/* ---- SiLU and spelled-out HardSwish --------------------------------------- */

/* MatMul -> x * Sigmoid(x) (sig_first: Mul(s, x)); extra: the Sigmoid's
 * output is read again. */
static ait_graph *silu_model(bool sig_first, bool extra) {
  tb_model *m = matmul_model(17);
  tb_node(m, "Sigmoid", "s", (const char *[]){"x", NULL}, (const char *[]){"s", NULL});
  tb_node(m, "Mul", "y", (const char *[]){sig_first ? "s" : "x", sig_first ? "x" : "s", NULL},
          (const char *[]){extra ? "y0" : "Y", NULL});
  if (extra) tb_node(m, "Add", "z", (const char *[]){"y0", "s", NULL}, (const char *[]){"Y", NULL});
  return tb_parse_graph(m);
}

/* MatMul -> x * Clip(x + c, 0, d) / dv: mul_first (x * clip, then Div by
 * dv) or clip * (1/dv) first, then x *. */
static ait_graph *hard_swish_model(bool mul_first, float c, float d, float dv) {
  tb_model *m = matmul_model(17);
  int64_t s[1] = {1};
  float zero = 0.0f, inv = 1.0f / dv;
  tb_init_f32(m, "c", 0, s, &c);
  tb_init_f32(m, "lo", 0, s, &zero);
  tb_init_f32(m, "hi", 0, s, &d);
  tb_init_f32(m, "dv", 0, s, mul_first ? &dv : &inv);
  tb_node(m, "Add", "a", (const char *[]){"x", "c", NULL}, (const char *[]){"a", NULL});
  tb_node(m, "Clip", "k", (const char *[]){"a", "lo", "hi", NULL}, (const char *[]){"k", NULL});
  if (mul_first) {
    tb_node(m, "Mul", "m", (const char *[]){"x", "k", NULL}, (const char *[]){"p", NULL});
    tb_node(m, "Div", "d", (const char *[]){"p", "dv", NULL}, (const char *[]){"Y", NULL});
  } else {
    tb_node(m, "Mul", "d", (const char *[]){"k", "dv", NULL}, (const char *[]){"q", NULL});
    tb_node(m, "Mul", "m", (const char *[]){"q", "x", NULL}, (const char *[]){"Y", NULL});
  }
  return tb_parse_graph(m);
}

/* Native's fusion of the pattern (a matcher's user): one node is left. */
static void check_native_fuses(const ait_graph *g, const char *what) {
  nat_pass_stats st;
  ait_graph *rw = ait_graph_clone(g, NULL, true);
  CHECK(nat_run_passes_ex(rw, &st, true) == AIT_OK);
  if (live_nodes(rw, NULL) != 1) fprintf(stderr, "%s: %d nodes\n", what, live_nodes(rw, NULL));
  CHECK(live_nodes(rw, NULL) == 1);
  check_same_on_eager(g, rw, 1e-5, what);
  ait_graph_free(rw);
}

static void test_silu(void) {
  for (int c = 0; c < 3; c++) {
    ait_graph *g = silu_model(c == 1, c == 2);
    CHECK(g != NULL);
    if (!g) continue;
    ait_match_view view = {.g = g, .readers = scan_readers, .scalar = init_scalar, .ctx = g};
    ait_silu_match mt;
    bool got = ait_match_silu(&view, value_named(g, "x"), &mt);
    CHECK(got == (c != 2)); /* the Sigmoid read again: no */
    if (got) {
      CHECK(mt.y == value_named(g, "Y") && ait_is_op(&g->nodes[mt.nodes[0]], "Sigmoid"));
      check_native_fuses(g, "native's SiLU fusion");
    }
    ait_graph_free(g);
  }
}

static void test_hard_swish(void) {
  const struct {
    bool mul_first;
    float c, d, dv;
    bool want;
  } cases[] = {
      {true, 3.0f, 6.0f, 6.0f, true},   {false, 3.0f, 6.0f, 6.0f, true},
      {true, 2.0f, 5.0f, 5.0f, true},   /* any offset and bound */
      {true, 3.0f, 6.0f, 5.0f, false},  /* divided by another bound */
      {false, 3.0f, 6.0f, 6.1f, false}, /* multiplied by another reciprocal */
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    ait_graph *g = hard_swish_model(cases[c].mul_first, cases[c].c, cases[c].d, cases[c].dv);
    CHECK(g != NULL);
    if (!g) continue;
    ait_match_view view = {.g = g, .readers = scan_readers, .scalar = init_scalar, .ctx = g};
    int add = -1;
    for (int i = 0; i < g->n_nodes; i++)
      if (ait_is_op(&g->nodes[i], "Add")) add = i;
    ait_hard_swish_match mt;
    bool got = ait_match_hard_swish(&view, add, &mt);
    if (got != cases[c].want) fprintf(stderr, "hard swish case %zu: matched %d\n", c, got);
    CHECK(got == cases[c].want);
    if (!got) {
      ait_graph_free(g);
      continue;
    }
    CHECK(mt.x == value_named(g, "x") && mt.c == cases[c].c && mt.d == cases[c].d &&
          mt.mul_first == cases[c].mul_first);
    if (cases[c].c == 3.0f && cases[c].d == 6.0f) { /* the match as HardSwish-14 */
      ait_graph *rw = ait_graph_clone(g, NULL, true);
      bool *dead = calloc((size_t)rw->n_nodes, sizeof *dead);
      int last = mt.mul_first ? mt.div : mt.mul, y = rw->nodes[last].out[0];
      ait_node *n = &rw->nodes[mt.add];
      free(n->op_type);
      n->op_type = strdup("HardSwish");
      n->op = ait_op_lookup("", "HardSwish", 14, NULL);
      n->opset = 14;
      n->in[0] = mt.x;
      n->n_in = 1;
      n->out[0] = y;
      rw->values[y].producer = mt.add;
      dead[mt.clip] = dead[mt.mul] = dead[mt.div] = true;
      CHECK(n->op != NULL && nat_graph_compact(rw, dead) == AIT_OK);
      CHECK(live_nodes(rw, NULL) == 2);
      check_same_on_eager(g, rw, 1e-6, "HardSwish match as HardSwish-14");
      free(dead);
      ait_graph_free(rw);
    }
    check_native_fuses(g, "native's HardSwish fusion");
    ait_graph_free(g);
  }
}

/* ---- attention (ait_match_attention) -------------------------------------- */

typedef enum attn_scale { A_NONE, A_DIV, A_MUL_LEFT, A_MUL_RIGHT } attn_scale;
typedef enum attn_mask { M_NONE, M_PAD, M_CAUSAL, M_WINDOW, M_GROWS } attn_mask;

/* Q [4, 2, 5, 4], K [4, 2, 6, 4] (K^T through a Transpose, or the input
 * KT [4, 2, 4, 6] itself), V [4, 2, 6, 4]: Softmax(scale(Q K^T) + mask)
 * V. M_PAD: an input [4, 1, 1, 6]; M_CAUSAL: a constant [5, 6]; M_WINDOW:
 * a bias [1, 2, 5, 6] and swin's Reshape [2, 2, 2, 5, 6] + window mask [2,
 * 1, 5, 6] + Reshape back; M_GROWS: a mask [4, 2, 5, 6] onto scores of
 * batch 1 (Q, K and V of batch 1): it grows them. mask_late: the scaling after the
 * mask; twice: the Softmax read again. */
static ait_graph *attn_model(bool k_tr, attn_scale sc, attn_mask mk, bool mask_late, bool twice) {
  tb_model *m = tb_new(17);
  static const int64_t qd[4] = {4, 2, 5, 4}, q1[4] = {1, 2, 5, 4}, kd[4] = {4, 2, 6, 4},
                       ktd[4] = {4, 2, 4, 6}, pd[4] = {4, 1, 1, 6}, cd[2] = {5, 6},
                       bd[4] = {1, 2, 5, 6}, wd[4] = {2, 1, 5, 6}, gd[4] = {4, 2, 5, 6},
                       yd[4] = {4, 2, 5, 4}, s0[1] = {1}, r5[1] = {5}, r4[1] = {4},
                       k1[4] = {1, 2, 6, 4}, kt1[4] = {1, 2, 4, 6};
  bool grows = mk == M_GROWS;
  static const int64_t perm[4] = {0, 1, 3, 2}, shp5[5] = {2, 2, 2, 5, 6}, shp4[4] = {4, 2, 5, 6};
  tb_input(m, "Q", AIT_FLOAT32, 4, grows ? q1 : qd);
  if (k_tr)
    tb_input(m, "K", AIT_FLOAT32, 4, grows ? k1 : kd);
  else
    tb_input(m, "KT", AIT_FLOAT32, 4, grows ? kt1 : ktd);
  tb_input(m, "V", AIT_FLOAT32, 4, grows ? k1 : kd);
  if (mk == M_PAD) tb_input(m, "mask", AIT_FLOAT32, 4, pd);
  tb_output(m, "Y", AIT_FLOAT32, 4, yd);
  if (twice) tb_output(m, "P2", AIT_FLOAT32, 4, gd);
  if (k_tr) {
    int t =
        tb_node(m, "Transpose", "kt", (const char *[]){"K", NULL}, (const char *[]){"KT", NULL});
    tb_attr_ints(m, t, "perm", 4, perm);
  }
  float c = 0.5f;
  tb_init_f32(m, "c", 0, s0, &c);
  tb_node(m, "MatMul", "qk", (const char *[]){"Q", "KT", NULL}, (const char *[]){"S0", NULL});
  const char *cur = "S0";
  const char *scaled = sc == A_NONE ? "S0" : "S1";
  if (!mask_late) {
    if (sc == A_DIV)
      tb_node(m, "Div", "sc", (const char *[]){cur, "c", NULL}, (const char *[]){"S1", NULL});
    else if (sc == A_MUL_LEFT)
      tb_node(m, "Mul", "sc", (const char *[]){"c", cur, NULL}, (const char *[]){"S1", NULL});
    else if (sc == A_MUL_RIGHT)
      tb_node(m, "Mul", "sc", (const char *[]){cur, "c", NULL}, (const char *[]){"S1", NULL});
    cur = scaled;
  }
  if (mk == M_PAD) {
    tb_node(m, "Add", "mask_add", (const char *[]){"mask", cur, NULL},
            (const char *[]){"S2", NULL});
    cur = "S2";
  } else if (mk == M_CAUSAL || mk == M_GROWS) {
    ait_tensor *t = rand_tensor(mk == M_GROWS ? 4 : 2, mk == M_GROWS ? gd : cd, -1, 1);
    float *d = t->data;
    for (int i = 0; mk == M_CAUSAL && i < 5; i++)
      for (int j = 0; j < 6; j++)
        d[i * 6 + j] = j <= i ? 0.0f : -1e9f;
    tb_init_f32(m, "cm", mk == M_GROWS ? 4 : 2, mk == M_GROWS ? gd : cd, d);
    ait_tensor_free(t);
    tb_node(m, "Add", "mask_add", (const char *[]){cur, "cm", NULL}, (const char *[]){"S2", NULL});
    cur = "S2";
  } else if (mk == M_WINDOW) {
    rand_init(m, "bias", 4, bd, -1, 1);
    ait_tensor *t = rand_tensor(4, wd, -1, 1);
    float *d = t->data;
    for (int64_t i = 0; i < 60; i++) /* swin's: 0 or -100 */
      d[i] = d[i] > 0.3f ? -100.0f : 0.0f;
    tb_init_f32(m, "wm", 4, wd, d);
    ait_tensor_free(t);
    tb_init_i64(m, "shp5", 1, r5, shp5);
    tb_init_i64(m, "shp4", 1, r4, shp4);
    tb_node(m, "Add", "bias_add", (const char *[]){cur, "bias", NULL},
            (const char *[]){"S2", NULL});
    tb_node(m, "Reshape", "r1", (const char *[]){"S2", "shp5", NULL}, (const char *[]){"W0", NULL});
    tb_node(m, "Add", "wadd", (const char *[]){"W0", "wm", NULL}, (const char *[]){"W1", NULL});
    tb_node(m, "Reshape", "r2", (const char *[]){"W1", "shp4", NULL}, (const char *[]){"S3", NULL});
    cur = "S3";
  }
  if (mask_late) {
    tb_node(m, "Mul", "sc", (const char *[]){cur, "c", NULL}, (const char *[]){"S9", NULL});
    cur = "S9";
  }
  int sm = tb_node(m, "Softmax", "sm", (const char *[]){cur, NULL}, (const char *[]){"P", NULL});
  tb_attr_int(m, sm, "axis", -1);
  tb_node(m, "MatMul", "pv", (const char *[]){"P", "V", NULL}, (const char *[]){"Y", NULL});
  if (twice)
    tb_node(m, "Identity", "p2", (const char *[]){"P", NULL}, (const char *[]){"P2", NULL});
  return tb_parse_graph(m);
}

/* The match rewritten by hand into one FusedAttention (its reference
 * kernel) in the P V product's place, the other matched nodes dead; a
 * windowed mask is tiled over the batch and added to the plain one, as a
 * constant (the test's shapes are static). */
static ait_graph *rewrite_attn(const ait_graph *g, const ait_attn_match *mt) {
  ait_graph *rw = ait_graph_clone(g, NULL, true);
  bool *dead = calloc((size_t)rw->n_nodes, sizeof *dead);
  int mask = mt->mask;
  if (mt->wmask >= 0) {
    const ait_value *sv = &rw->values[mt->scores_out];
    int64_t d[4];
    for (int k = 0; k < 4; k++)
      d[k] = sv->dims[k].v;
    ait_tensor *t = ait_tensor_new(AIT_FLOAT32, 4, d);
    const ait_tensor *w = rw->values[mt->wmask].init, *b = rw->values[mt->mask].init;
    CHECK(w && b && w->rank == 4 && b->rank == 4);
    float *o = t->data;
    const float *wd = w->data, *bd = b->data;
    for (int64_t n = 0; n < d[0]; n++) /* wm [W, 1, Sq, Sk], bias [1, H, Sq, Sk] */
      for (int64_t h = 0; h < d[1]; h++)
        for (int64_t ij = 0; ij < d[2] * d[3]; ij++)
          *o++ = wd[(n % mt->windows) * d[2] * d[3] + ij] + bd[h * d[2] * d[3] + ij];
    mask = nat_add_initializer(rw, "merged", "_mask", t);
  }
  ait_node *n = &rw->nodes[mt->pv];
  CHECK(nat_node_make_fused(n, "FusedAttention") == AIT_OK);
  int *ins = malloc(sizeof(int) * 4);
  ins[0] = mt->q, ins[1] = mt->kt, ins[2] = mt->v, ins[3] = mask;
  free(n->in);
  n->in = ins;
  n->n_in = 4;
  CHECK(nat_attr_set_float(n, "alpha", mt->scale) == AIT_OK);
  for (int k = 0; k < mt->n_nodes; k++)
    if (mt->nodes[k] != mt->pv) dead[mt->nodes[k]] = true;
  CHECK(nat_resolve_fused(rw) == AIT_OK);
  CHECK(nat_graph_compact(rw, dead) == AIT_OK);
  free(dead);
  return rw;
}

static void test_attention(void) {
  const struct {
    bool k_tr;
    attn_scale sc;
    attn_mask mk;
    bool late, twice, want;
  } cases[] = {
      {true, A_DIV, M_PAD, false, false, true},
      {false, A_MUL_LEFT, M_PAD, false, false, true},
      {true, A_MUL_RIGHT, M_NONE, false, false, true},
      {false, A_NONE, M_NONE, false, false, true},
      {true, A_DIV, M_CAUSAL, false, false, true},
      {true, A_DIV, M_WINDOW, false, false, true},
      {false, A_MUL_RIGHT, M_WINDOW, false, false, true},
      {true, A_MUL_RIGHT, M_PAD, true, false, false}, /* scaled after the mask: no */
      {true, A_DIV, M_PAD, false, true, false},       /* P read again: no */
      {true, A_DIV, M_GROWS, false, false, false},    /* the mask grows the scores: no */
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    ait_graph *g =
        attn_model(cases[c].k_tr, cases[c].sc, cases[c].mk, cases[c].late, cases[c].twice);
    CHECK(g != NULL);
    if (!g) continue;
    ait_match_view view = {.g = g, .readers = scan_readers, .scalar = init_scalar, .ctx = g};
    int sm = -1;
    for (int i = 0; i < g->n_nodes; i++)
      if (ait_is_op(&g->nodes[i], "Softmax")) sm = i;
    ait_attn_match mt;
    bool got = ait_match_attention(&view, sm, &mt);
    if (got != cases[c].want) fprintf(stderr, "attention case %zu: matched %d\n", c, got);
    CHECK(got == cases[c].want);
    if (!got) {
      ait_graph_free(g);
      continue;
    }
    float want_scale = cases[c].sc == A_NONE ? 1.0f : cases[c].sc == A_DIV ? 2.0f : 0.5f;
    CHECK(mt.scale == want_scale && mt.y == value_named(g, "Y"));
    CHECK((mt.k_tr >= 0) == cases[c].k_tr && mt.kt == value_named(g, "KT"));
    CHECK((mt.mask >= 0) == (cases[c].mk != M_NONE));
    CHECK((mt.wmask >= 0) == (cases[c].mk == M_WINDOW) &&
          (cases[c].mk != M_WINDOW || mt.windows == 2));
    ait_graph *rw = rewrite_attn(g, &mt);
    CHECK(live_nodes(rw, "FusedAttention") == 1 && live_nodes(rw, "Softmax") == 0);
    check_same_on_eager(g, rw, 1e-5, "attention match as FusedAttention");
    ait_graph_free(rw);
    /* native's fusion (a matcher's user): one FusedAttention, but for the
     * windowed mask, which native leaves as it is */
    nat_pass_stats st;
    rw = ait_graph_clone(g, NULL, true);
    CHECK(nat_run_passes_ex(rw, &st, true) == AIT_OK);
    int fused = live_nodes(rw, "FusedAttention");
    if (fused != (cases[c].mk != M_WINDOW))
      fprintf(stderr, "attention case %zu: native fused %d\n", c, fused);
    CHECK(fused == (cases[c].mk != M_WINDOW));
    check_same_on_eager(g, rw, 1e-5, "native's attention fusion");
    ait_graph_free(rw);
    ait_graph_free(g);
  }
}

int main(void) {
  test_foldable();
  test_fold_constants();
  test_remove_noops();
  test_remove_pairs();
  test_fold_known_shapes();
  test_bn_fold_math();
  test_fold_batchnorm();
  test_gelu();
  test_accepts();
  test_silu();
  test_hard_swish();
  test_attention();
  return check_result("test_passes");
}
