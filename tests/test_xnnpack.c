/* The xnnpack backend against the reference on small models that cover each
 * mapping (convolutions of every kind, pools, broadcasting in NHWC, Gemm and
 * MatMul, layout changes that split the program into segments, Concat
 * through pads, activations), its plan cache across batch sizes, fp16,
 * bad inputs, unsupported nodes, and save/load with corrupted files. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/common/state_io.h"
#include "backends/xnnpack/xnn_impl.h"
#include "check.h"
#include "core/fileio.h"
#include "core/hash.h"
#include "model_builder.h"
#include "onnx/onnx.pb-c.h"
#include "onnx/onnx_io.h"
#include "runtime/eager.h"

/* ---- helpers -------------------------------------------------------------- */

static uint32_t rng = 2024;
static float frand(void) {
  rng = rng * 1664525u + 1013904223u;
  return (float)((rng >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* A float32 initializer of random values (dims must outlive tb_pack). */
static void init_rand(tb_model *m, const char *name, int rank, const int64_t *dims, float scale) {
  float buf[4096];
  int64_t n = 1;
  for (int i = 0; i < rank; i++)
    n *= dims[i];
  for (int64_t i = 0; i < n && i < 4096; i++)
    buf[i] = frand() * scale;
  tb_init_f32(m, name, rank, dims, buf);
}

/* The builder sets int attributes and float initializers only: the other
 * attributes and int64 initializers are edited into the packed model. */
typedef struct edit {
  char kind; /* 'i' ints, 'f' float, 's' string attribute; 'I' int64 initializer */
  const char *node, *name;
  int n;
  int64_t ints[8];
  float f;
  const char *s;
} edit;

static Onnx__NodeProto *pb_node(Onnx__ModelProto *mp, const char *name) {
  for (size_t i = 0; i < mp->graph->n_node; i++)
    if (!strcmp(mp->graph->node[i]->name, name)) return mp->graph->node[i];
  fprintf(stderr, "no node %s\n", name);
  exit(2);
}

static void apply(Onnx__ModelProto *mp, const edit *e) {
  if (e->kind == 'I') {
    for (size_t i = 0; i < mp->graph->n_initializer; i++) {
      Onnx__TensorProto *t = mp->graph->initializer[i];
      if (strcmp(t->name, e->name)) continue;
      t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
      free(t->float_data);
      t->float_data = NULL;
      t->n_float_data = 0;
      t->dims[0] = e->n;
      t->n_int64_data = (size_t)e->n;
      t->int64_data = malloc(sizeof(int64_t) * (size_t)e->n);
      memcpy(t->int64_data, e->ints, sizeof(int64_t) * (size_t)e->n);
    }
    return;
  }
  Onnx__NodeProto *n = pb_node(mp, e->node);
  n->attribute = realloc(n->attribute, sizeof *n->attribute * (n->n_attribute + 1));
  Onnx__AttributeProto *a = malloc(sizeof *a);
  onnx__attribute_proto__init(a);
  a->name = strdup(e->name);
  a->has_type = 1;
  if (e->kind == 'i') {
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    a->n_ints = (size_t)e->n;
    a->ints = malloc(sizeof(int64_t) * (size_t)e->n);
    memcpy(a->ints, e->ints, sizeof(int64_t) * (size_t)e->n);
  } else if (e->kind == 'f') {
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    a->has_f = 1;
    a->f = e->f;
  } else {
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    a->has_s = 1;
    a->s.len = strlen(e->s);
    a->s.data = (uint8_t *)strdup(e->s);
  }
  n->attribute[n->n_attribute++] = a;
}

static ait_graph *parse_with(tb_model *m, const edit *edits, int n_edits) {
  size_t size = 0;
  uint8_t *buf = tb_pack(m, &size);
  tb_free(m);
  if (n_edits) {
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, size, buf);
    free(buf);
    for (int i = 0; i < n_edits; i++)
      apply(mp, &edits[i]);
    size = onnx__model_proto__get_packed_size(mp);
    buf = malloc(size + 1);
    onnx__model_proto__pack(mp, buf);
    onnx__model_proto__free_unpacked(mp, NULL);
  }
  ait_graph *g = NULL;
  ait_status st = ait_onnx_parse_model(buf, size, ".", &g, NULL);
  free(buf);
  if (st) fprintf(stderr, "parse: %s\n", ait_last_error());
  return g;
}
static ait_graph *parse(tb_model *m) { return parse_with(m, NULL, 0); }

#define EDITS(...)                                                                                 \
  (const edit[]){__VA_ARGS__}, (int)(sizeof((const edit[]){__VA_ARGS__}) / sizeof(edit))
#define NINTS(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t))
#define INTS(node, name, ...)                                                                      \
  { 'i', node, name, NINTS(__VA_ARGS__), {__VA_ARGS__}, 0, NULL }
#define FLOAT(node, name, v)                                                                       \
  { 'f', node, name, 0, {0}, v, NULL }
#define STR(node, name, v)                                                                         \
  { 's', node, name, 0, {0}, 0, v }
#define I64(init, ...)                                                                             \
  { 'I', NULL, init, NINTS(__VA_ARGS__), {__VA_ARGS__}, 0, NULL }

static ait_tensor *rand_tensor(int rank, const int64_t *dims) {
  ait_tensor *t = ait_tensor_new(AIT_FLOAT32, rank, dims);
  for (int64_t i = 0; i < ait_tensor_numel(t); i++)
    ((float *)t->data)[i] = frand();
  return t;
}

/* Inputs of g with symbolic dims set to `batch`. */
static void make_inputs(const ait_graph *g, int64_t batch, ait_tensor **in) {
  for (int i = 0; i < g->n_inputs; i++) {
    const ait_value *v = &g->values[g->inputs[i]];
    int64_t dims[AIT_MAX_RANK];
    for (int d = 0; d < v->rank; d++)
      dims[d] = v->dims[d].v >= 0 ? v->dims[d].v : batch;
    in[i] = rand_tensor(v->rank, dims);
  }
}
static void free_all(ait_tensor **t, int n) {
  for (int i = 0; i < n; i++) {
    ait_tensor_free(t[i]);
    t[i] = NULL;
  }
}

/* Every element within atol + rtol * |want|; the shapes equal. */
static bool close_to(const char *label, int k, const ait_tensor *got, const ait_tensor *want,
                     double rtol, double atol) {
  if (!got || !want || got->rank != want->rank ||
      memcmp(got->dims, want->dims, sizeof(int64_t) * (size_t)want->rank)) {
    fprintf(stderr, "%s: output %d: shape differs\n", label, k);
    return false;
  }
  const float *a = got->data, *b = want->data;
  for (int64_t i = 0; i < ait_tensor_numel(want); i++)
    if (!(fabs((double)a[i] - b[i]) <= atol + rtol * fabs((double)b[i]))) {
      fprintf(stderr, "%s: output %d [%lld]: %g, want %g\n", label, k, (long long)i, a[i], b[i]);
      return false;
    }
  return true;
}

static void *build(const char *spec, const ait_graph *g, ait_backend_config *cfg) {
  void *state = NULL;
  CHECK_ERR(ait_backend_config_parse(spec, cfg), AIT_OK, NULL);
  char why[512];
  for (int i = 0; i < g->n_nodes; i++)
    if (!cfg->iface->supports(cfg, g, &g->nodes[i], why, sizeof why)) {
      fprintf(stderr, "%s: node %s unsupported: %s\n", spec, g->nodes[i].name, why);
      CHECK(false);
    }
  CHECK_ERR(cfg->iface->build(cfg, g, NULL, &state), AIT_OK, NULL);
  return state;
}

/* One run of state against eager at batch `batch`. */
static void compare_run(const char *label, const ait_graph *g, const ait_backend_config *cfg,
                        void *state, int64_t batch, double rtol, double atol) {
  ait_tensor *in[8] = {0}, *ref[16] = {0}, *got[16] = {0};
  make_inputs(g, batch, in);
  CHECK_ERR(ait_eager_run(g, (const ait_tensor *const *)in, g->n_inputs, ref), AIT_OK, NULL);
  CHECK_ERR(cfg->iface->infer(state, (const ait_tensor *const *)in, g->n_inputs, got), AIT_OK,
            NULL);
  for (int k = 0; k < g->n_outputs; k++)
    CHECK(close_to(label, k, got[k], ref[k], rtol, atol));
  free_all(in, g->n_inputs);
  free_all(ref, g->n_outputs);
  free_all(got, g->n_outputs);
}

/* Build `spec` on g, compare at batches 1 and 3, free g. */
static void check_model(const char *label, ait_graph *g, const char *spec, double rtol,
                        double atol) {
  if (!g) {
    CHECK(false);
    return;
  }
  ait_backend_config cfg;
  void *state = build(spec, g, &cfg);
  if (state) {
    compare_run(label, g, &cfg, state, 1, rtol, atol);
    compare_run(label, g, &cfg, state, 3, rtol, atol);
    cfg.iface->destroy(state);
  }
  ait_graph_free(g);
}

#define NODE(m, op, name, ins, outs) tb_node(m, op, name, (const char *[])ins, (const char *[])outs)
#define L(...)                                                                                     \
  { __VA_ARGS__, NULL }

static const int64_t d_any4[4] = {-1, -1, -1, -1}, d_any2[2] = {-1, -1}, d_any3[3] = {-1, -1, -1};

/* ---- models ------------------------------------------------------------------- */

/* Conv (pads, stride) -> Relu -> depthwise Conv (multiplier 2) -> Clip; the
 * first conv's output is also a graph output (read inside the runtime). */
static ait_graph *m_convs(void) {
  static const int64_t dx[4] = {-1, 3, 9, 9}, dw[4] = {8, 3, 3, 3}, db[1] = {8},
                       dd[4] = {16, 1, 3, 3}, ddb[1] = {16};
  static const float lo = 0.0f, hi = 0.5f;
  tb_model *m = tb_new(13);
  tb_input(m, "x", AIT_FLOAT32, 4, dx);
  tb_output(m, "y", AIT_FLOAT32, 4, d_any4);
  tb_output(m, "c", AIT_FLOAT32, 4, d_any4);
  init_rand(m, "w", 4, dw, 0.3f);
  init_rand(m, "b", 1, db, 0.1f);
  init_rand(m, "wd", 4, dd, 0.3f);
  init_rand(m, "bd", 1, ddb, 0.1f);
  tb_init_f32(m, "lo", 0, NULL, &lo);
  tb_init_f32(m, "hi", 0, NULL, &hi);
  NODE(m, "Conv", "c1", L("x", "w", "b"), L("c"));
  NODE(m, "Relu", "r1", L("c"), L("r"));
  int dw_node = NODE(m, "Conv", "dw", L("r", "wd", "bd"), L("d"));
  tb_attr_int(m, dw_node, "group", 8);
  NODE(m, "Clip", "clip", L("d", "lo", "hi"), L("y"));
  return parse_with(m, EDITS(INTS("c1", "pads", 1, 1, 1, 1), INTS("c1", "strides", 2, 2),
                             INTS("dw", "pads", 1, 0, 2, 1)));
}

/* Grouped dilated SAME_UPPER conv, strided 1x1 conv, two ConvTransposes,
 * depthwise convolutions of 5x5 (strided) and 7x7 (past XNNPACK's largest
 * depthwise microkernel of 25 taps). */
static ait_graph *m_grouped(void) {
  static const int64_t dx[4] = {-1, 4, 8, 8}, dg[4] = {6, 2, 3, 3}, d1[4] = {5, 6, 1, 1},
                       dt[4] = {4, 3, 3, 3}, dt2[4] = {4, 2, 2, 2}, dbt[1] = {3},
                       d5[4] = {4, 1, 5, 5}, d7[4] = {8, 1, 7, 7};
  tb_model *m = tb_new(13);
  tb_input(m, "x", AIT_FLOAT32, 4, dx);
  tb_output(m, "y", AIT_FLOAT32, 4, d_any4);
  tb_output(m, "t1", AIT_FLOAT32, 4, d_any4);
  tb_output(m, "t2", AIT_FLOAT32, 4, d_any4);
  tb_output(m, "dw7", AIT_FLOAT32, 4, d_any4);
  init_rand(m, "w5", 4, d5, 0.3f);
  init_rand(m, "w7", 4, d7, 0.3f);
  int n5 = NODE(m, "Conv", "dw5", L("x", "w5"), L("o5"));
  tb_attr_int(m, n5, "group", 4);
  int n7 = NODE(m, "Conv", "dw7", L("o5", "w7"), L("dw7"));
  tb_attr_int(m, n7, "group", 4);
  init_rand(m, "wg", 4, dg, 0.3f);
  init_rand(m, "w1", 4, d1, 0.3f);
  init_rand(m, "wt", 4, dt, 0.3f);
  init_rand(m, "wt2", 4, dt2, 0.3f);
  init_rand(m, "bt", 1, dbt, 0.3f);
  int gn = NODE(m, "Conv", "grp", L("x", "wg"), L("gout"));
  tb_attr_int(m, gn, "group", 2);
  NODE(m, "Conv", "pw", L("gout", "w1"), L("y"));
  NODE(m, "ConvTranspose", "ct", L("x", "wt", "bt"), L("t1"));
  int ct2 = NODE(m, "ConvTranspose", "ct2", L("x", "wt2"), L("t2"));
  tb_attr_int(m, ct2, "group", 2);
  return parse_with(m, EDITS(INTS("grp", "dilations", 2, 2), STR("grp", "auto_pad", "SAME_UPPER"),
                             INTS("pw", "strides", 2, 2), INTS("ct", "strides", 2, 2),
                             INTS("ct", "pads", 1, 1, 1, 1), INTS("ct", "output_padding", 1, 1),
                             INTS("ct2", "strides", 2, 2), INTS("dw5", "strides", 2, 2),
                             INTS("dw5", "pads", 2, 2, 2, 2), INTS("dw7", "pads", 3, 3, 3, 3)));
}

/* MaxPool with ceil_mode, AveragePools counting pads or not, the global pool. */
static ait_graph *m_pools(void) {
  static const int64_t dx[4] = {-1, 3, 10, 10};
  tb_model *m = tb_new(13);
  tb_input(m, "x", AIT_FLOAT32, 4, dx);
  tb_output(m, "ap1", AIT_FLOAT32, 4, d_any4);
  tb_output(m, "ap0", AIT_FLOAT32, 4, d_any4);
  tb_output(m, "gp", AIT_FLOAT32, 4, d_any4);
  int mp = NODE(m, "MaxPool", "mp", L("x"), L("m"));
  tb_attr_int(m, mp, "ceil_mode", 1);
  int a1 = NODE(m, "AveragePool", "a1", L("m"), L("ap1"));
  tb_attr_int(m, a1, "count_include_pad", 1);
  NODE(m, "AveragePool", "a0", L("x"), L("ap0"));
  NODE(m, "GlobalAveragePool", "gap", L("m"), L("gp"));
  return parse_with(m, EDITS(INTS("mp", "kernel_shape", 3, 3), INTS("mp", "strides", 2, 2),
                             INTS("mp", "pads", 1, 1, 1, 1), INTS("a1", "kernel_shape", 3, 3),
                             INTS("a1", "pads", 1, 1, 1, 1), INTS("a0", "kernel_shape", 3, 2),
                             INTS("a0", "strides", 2, 2), INTS("a0", "pads", 1, 0, 1, 1)));
}

/* Broadcasting against an NHWC value: constants, and run-time operands of
 * rank 1, 3 (a view) and 3 (a host transpose). */
static ait_graph *m_eltwise(void) {
  static const int64_t dx[4] = {-1, 4, 6, 6}, dz[1] = {6}, dq[3] = {4, 1, 1}, du[3] = {4, 6, 1},
                       dw[4] = {4, 4, 1, 1}, dc[3] = {4, 1, 1};
  static const float two = 2.0f;
  tb_model *m = tb_new(13);
  tb_input(m, "x", AIT_FLOAT32, 4, dx);
  tb_input(m, "z", AIT_FLOAT32, 1, dz);
  tb_input(m, "q", AIT_FLOAT32, 3, dq);
  tb_input(m, "u", AIT_FLOAT32, 3, du);
  tb_output(m, "y", AIT_FLOAT32, 4, d_any4);
  tb_output(m, "y2", AIT_FLOAT32, 4, d_any4);
  init_rand(m, "w", 4, dw, 0.5f);
  init_rand(m, "cst", 3, dc, 0.5f);
  tb_init_f32(m, "two", 0, NULL, &two);
  NODE(m, "Conv", "pw", L("x", "w"), L("h"));
  NODE(m, "Add", "add", L("h", "cst"), L("a"));
  NODE(m, "Sub", "sub", L("a", "z"), L("s"));
  NODE(m, "Mul", "mul", L("s", "q"), L("mq"));
  NODE(m, "Mul", "mul2", L("mq", "u"), L("mu"));
  NODE(m, "Div", "div", L("mu", "two"), L("dv"));
  NODE(m, "Max", "max", L("dv", "h"), L("y"));
  NODE(m, "Min", "min", L("x", "u"), L("y2")); /* plain layout, no conv before it */
  return parse(m);
}

/* Gemm (transB, alpha, beta, C [N]) -> Relu -> MatMul -> Add; MatMul of a
 * rank-3 input; Gemm with a run-time C. */
static ait_graph *m_gemm(void) {
  static const int64_t dx[2] = {-1, 10}, dx3[3] = {-1, 3, 10}, dc[2] = {-1, 6}, dw[2] = {6, 10},
                       dcb[1] = {6}, dw2[2] = {6, 5}, db2[1] = {5}, dw3[2] = {10, 4};
  tb_model *m = tb_new(13);
  tb_input(m, "x", AIT_FLOAT32, 2, dx);
  tb_input(m, "x3", AIT_FLOAT32, 3, dx3);
  tb_input(m, "cin", AIT_FLOAT32, 2, dc);
  tb_output(m, "y1", AIT_FLOAT32, 2, d_any2);
  tb_output(m, "y2", AIT_FLOAT32, 3, d_any3);
  tb_output(m, "y3", AIT_FLOAT32, 2, d_any2);
  init_rand(m, "w", 2, dw, 0.5f);
  init_rand(m, "cb", 1, dcb, 0.5f);
  init_rand(m, "w2", 2, dw2, 0.5f);
  init_rand(m, "b2", 1, db2, 0.5f);
  init_rand(m, "w3", 2, dw3, 0.5f);
  int g1 = NODE(m, "Gemm", "g1", L("x", "w", "cb"), L("ga"));
  tb_attr_int(m, g1, "transB", 1);
  NODE(m, "Relu", "relu", L("ga"), L("gr"));
  NODE(m, "MatMul", "mm", L("gr", "w2"), L("mmo"));
  NODE(m, "Add", "add", L("mmo", "b2"), L("y1"));
  NODE(m, "MatMul", "mm3", L("x3", "w3"), L("y2"));
  int g3 = NODE(m, "Gemm", "g3", L("x", "w", "cin"), L("y3"));
  tb_attr_int(m, g3, "transB", 1);
  return parse_with(m, EDITS(FLOAT("g1", "alpha", 0.5f), FLOAT("g1", "beta", 2.0f)));
}

/* Conv -> Flatten (NHWC to ONNX order: a host transpose, two segments) ->
 * Gemm -> Softmax; Softmax over the channels of the conv output. */
static ait_graph *m_segments(void) {
  static const int64_t dx[4] = {-1, 3, 5, 5}, dw[4] = {4, 3, 3, 3}, df[2] = {7, 100}, dfb[1] = {7};
  tb_model *m = tb_new(13);
  tb_input(m, "x", AIT_FLOAT32, 4, dx);
  tb_output(m, "y", AIT_FLOAT32, 2, d_any2);
  tb_output(m, "sm", AIT_FLOAT32, 4, d_any4);
  init_rand(m, "w", 4, dw, 0.5f);
  init_rand(m, "wf", 2, df, 0.3f);
  init_rand(m, "bf", 1, dfb, 0.3f);
  NODE(m, "Conv", "conv", L("x", "w"), L("h"));
  NODE(m, "Flatten", "flat", L("h"), L("f"));
  int gm = NODE(m, "Gemm", "fc", L("f", "wf", "bf"), L("logits"));
  tb_attr_int(m, gm, "transB", 1);
  NODE(m, "Softmax", "soft", L("logits"), L("y"));
  int sc = NODE(m, "Softmax", "softc", L("h"), L("sm"));
  tb_attr_int(m, sc, "axis", 1);
  return parse_with(m, EDITS(INTS("conv", "pads", 1, 1, 1, 1)));
}

/* Concat of two conv outputs on channels, Pad with a value; Reshape,
 * Unsqueeze, Squeeze and a plain Concat. */
static ait_graph *m_shapes(void) {
  static const int64_t dx[4] = {-1, 3, 5, 5}, dx2[2] = {-1, 12}, da[4] = {2, 3, 1, 1},
                       db[4] = {3, 3, 1, 1}, dp[8] = {8}, ds[1] = {3}, d1[1] = {1};
  static const float zeros[8] = {0}, half = 0.5f;
  tb_model *m = tb_new(13);
  tb_input(m, "x", AIT_FLOAT32, 4, dx);
  tb_input(m, "x2", AIT_FLOAT32, 2, dx2);
  tb_output(m, "y1", AIT_FLOAT32, 4, d_any4);
  tb_output(m, "y2", AIT_FLOAT32, 3, d_any3);
  init_rand(m, "wa", 4, da, 0.5f);
  init_rand(m, "wb", 4, db, 0.5f);
  tb_init_f32(m, "pads", 1, dp, zeros);
  tb_init_f32(m, "shape", 1, ds, zeros);
  tb_init_f32(m, "axes", 1, d1, zeros);
  tb_init_f32(m, "half", 0, NULL, &half);
  NODE(m, "Conv", "ca", L("x", "wa"), L("a"));
  NODE(m, "Conv", "cb", L("x", "wb"), L("b"));
  int cat = NODE(m, "Concat", "cat", L("a", "b"), L("ab"));
  tb_attr_int(m, cat, "axis", 1);
  NODE(m, "Pad", "pad", L("ab", "pads", "half"), L("y1"));
  NODE(m, "Reshape", "rs", L("x2", "shape"), L("r"));
  NODE(m, "Unsqueeze", "us", L("r", "axes"), L("u"));
  NODE(m, "Squeeze", "sq", L("u", "axes"), L("s"));
  int c2 = NODE(m, "Concat", "cat2", L("s", "r"), L("y2"));
  tb_attr_int(m, c2, "axis", 2);
  return parse_with(
      m, EDITS(I64("pads", 0, 0, 1, 2, 0, 1, 2, 1), I64("shape", -1, 3, 4), I64("axes", 1)));
}

/* Activations on NHWC data and on plain data; BatchNormalization. */
static ait_graph *m_acts(void) {
  static const int64_t dx[4] = {-1, 4, 5, 5}, dx2[2] = {-1, 7}, dw[4] = {4, 4, 1, 1},
                       dsl[3] = {4, 1, 1}, dc[1] = {4};
  static const float var[4] = {0.5f, 1.0f, 2.0f, 0.25f}, three = 3.0f;
  tb_model *m = tb_new(14); /* HardSwish */
  tb_input(m, "x", AIT_FLOAT32, 4, dx);
  tb_input(m, "x2", AIT_FLOAT32, 2, dx2);
  const char *outs[] = {"y1", "y2", "y3", "y4", "y5", "y6", "y7", "y8", "y9"};
  for (int i = 0; i < 7; i++)
    tb_output(m, outs[i], AIT_FLOAT32, 4, d_any4);
  tb_output(m, "y8", AIT_FLOAT32, 2, d_any2);
  tb_output(m, "y9", AIT_FLOAT32, 2, d_any2);
  init_rand(m, "w", 4, dw, 0.8f);
  init_rand(m, "slope", 3, dsl, 0.5f);
  init_rand(m, "sc", 1, dc, 1.0f);
  init_rand(m, "bb", 1, dc, 1.0f);
  init_rand(m, "mean", 1, dc, 0.5f);
  tb_init_f32(m, "var", 1, dc, var);
  tb_init_f32(m, "three", 0, NULL, &three);
  NODE(m, "Conv", "pw", L("x", "w"), L("h"));
  NODE(m, "HardSwish", "hs", L("h"), L("y1"));
  NODE(m, "Sigmoid", "sg", L("h"), L("y2"));
  NODE(m, "LeakyRelu", "lr", L("h"), L("y3"));
  NODE(m, "Elu", "elu", L("h"), L("y4"));
  NODE(m, "PRelu", "pr", L("h", "slope"), L("y5"));
  NODE(m, "HardSigmoid", "hsg", L("h"), L("y6"));
  NODE(m, "BatchNormalization", "bn", L("h", "sc", "bb", "mean", "var"), L("y7"));
  NODE(m, "Abs", "abs", L("x2"), L("ab"));
  NODE(m, "Sqrt", "sqrt", L("ab"), L("sq"));
  NODE(m, "Neg", "neg", L("sq"), L("ng"));
  NODE(m, "Floor", "floor", L("ng"), L("y8"));
  NODE(m, "Mul", "m3", L("x2", "three"), L("x3"));
  NODE(m, "Round", "round", L("x3"), L("rd"));
  NODE(m, "Ceil", "ceil", L("x3"), L("ce"));
  NODE(m, "Add", "rc", L("rd", "ce"), L("y9"));
  return parse_with(m, EDITS(FLOAT("lr", "alpha", 0.2f), FLOAT("elu", "alpha", 0.7f)));
}

/* 1D windows (channels last at rank 3): grouped dilated Conv, depthwise
 * Conv, PRelu, broadcasting Add, ConvTranspose, pools, BatchNormalization,
 * then Flatten (a host transpose at rank 3). */
static ait_graph *m_conv1d(void) {
  static const int64_t dx[3] = {-1, 4, 16}, dw[3] = {6, 2, 3}, dd[3] = {6, 1, 5}, dsl[2] = {6, 1},
                       dc[2] = {6, 1}, dt[3] = {6, 2, 4}, db[1] = {6}, dn[1] = {6};
  static const float var[6] = {0.5f, 2.0f, 1.0f, 0.25f, 3.0f, 1.5f};
  tb_model *m = tb_new(13);
  tb_input(m, "x", AIT_FLOAT32, 3, dx);
  tb_output(m, "y", AIT_FLOAT32, 3, d_any3);
  tb_output(m, "g", AIT_FLOAT32, 3, d_any3);
  tb_output(m, "f", AIT_FLOAT32, 2, d_any2);
  init_rand(m, "w", 3, dw, 0.4f);
  init_rand(m, "wd", 3, dd, 0.4f);
  init_rand(m, "slope", 2, dsl, 0.5f);
  init_rand(m, "c", 2, dc, 0.5f);
  init_rand(m, "wt", 3, dt, 0.4f);
  init_rand(m, "bt", 1, db, 0.2f);
  init_rand(m, "sc", 1, dn, 1.0f);
  init_rand(m, "bb", 1, dn, 1.0f);
  init_rand(m, "mean", 1, dn, 0.5f);
  tb_init_f32(m, "var", 1, dn, var);
  int c1 = NODE(m, "Conv", "c1", L("x", "w"), L("h"));
  tb_attr_int(m, c1, "group", 2);
  int c2 = NODE(m, "Conv", "dw", L("h", "wd"), L("h2"));
  tb_attr_int(m, c2, "group", 6);
  NODE(m, "PRelu", "pr", L("h2", "slope"), L("h3"));
  NODE(m, "Add", "add", L("h3", "c"), L("h4"));
  NODE(m, "MaxPool", "mp", L("h4"), L("h5"));
  int ap = NODE(m, "AveragePool", "ap", L("h5"), L("h6"));
  tb_attr_int(m, ap, "count_include_pad", 1);
  int ct = NODE(m, "ConvTranspose", "ct", L("h6", "wt", "bt"), L("t"));
  tb_attr_int(m, ct, "group", 3);
  NODE(m, "BatchNormalization", "bn", L("t", "sc", "bb", "mean", "var"), L("y"));
  NODE(m, "GlobalAveragePool", "gap", L("h4"), L("g"));
  NODE(m, "Flatten", "flat", L("h5"), L("f"));
  return parse_with(
      m, EDITS(INTS("c1", "pads", 2, 1), INTS("c1", "dilations", 2), INTS("dw", "pads", 2, 2),
               INTS("dw", "strides", 2), INTS("mp", "kernel_shape", 3), INTS("mp", "strides", 2),
               INTS("mp", "pads", 1, 1), INTS("ap", "kernel_shape", 2), INTS("ap", "pads", 1, 0),
               INTS("ct", "strides", 2), INTS("ct", "output_padding", 1)));
}

/* Softmax at opset 11: the input flattened to 2D at the axis. */
static ait_graph *m_softmax11(void) {
  static const int64_t dx[3] = {-1, 3, 4};
  tb_model *m = tb_new(11);
  tb_input(m, "x", AIT_FLOAT32, 3, dx);
  tb_output(m, "y", AIT_FLOAT32, 3, d_any3);
  NODE(m, "Softmax", "soft", L("x"), L("y"));
  return parse(m);
}

/* Opset 6 broadcasting: B lines up with A at `axis` (a constant B and a
 * run-time one, both needing trailing ones). */
static ait_graph *m_legacy(void) {
  static const int64_t dx[3] = {-1, 3, 4}, db[1] = {3}, dq[1] = {3};
  tb_model *m = tb_new(6);
  tb_input(m, "x", AIT_FLOAT32, 3, dx);
  tb_input(m, "q", AIT_FLOAT32, 1, dq);
  tb_output(m, "y", AIT_FLOAT32, 3, d_any3);
  init_rand(m, "b", 1, db, 1.0f);
  int a = NODE(m, "Add", "add", L("x", "b"), L("xb"));
  tb_attr_int(m, a, "broadcast", 1);
  tb_attr_int(m, a, "axis", 1);
  int mu = NODE(m, "Mul", "mul", L("xb", "q"), L("y"));
  tb_attr_int(m, mu, "broadcast", 1);
  tb_attr_int(m, mu, "axis", -2);
  return parse(m);
}

static ait_graph *m_tanh(void) {
  static const int64_t dx[2] = {-1, 3};
  tb_model *m = tb_new(13);
  tb_input(m, "x", AIT_FLOAT32, 2, dx);
  tb_output(m, "y", AIT_FLOAT32, 2, d_any2);
  NODE(m, "Tanh", "th", L("x"), L("y"));
  return parse(m);
}

/* ---- checks beyond the numbers ------------------------------------------------------ */

/* Layout changes split the program only where bytes must move: NHWC data
 * read by Flatten (a host transpose) starts a second runtime; a reshape of
 * a 1x1 map or a broadcast operand of one channel stays inside one. */
static void check_segments(const char *label, ait_graph *g, int want) {
  ait_backend_config cfg;
  void *state = g ? build("xnnpack", g, &cfg) : NULL;
  if (state) {
    compare_run(label, g, &cfg, state, 2, 1e-3, 1e-4);
    const xnn_state *s = state;
    int got = -1;
    for (int i = 0; i < s->plans.n; i++) /* signature: kind and dtype, rank, dims */
      if (s->plans.e[i].sig[2] == 2) got = ((const xplan *)s->plans.e[i].plan)->n_segs;
    if (got != want) fprintf(stderr, "%s: %d segments, want %d\n", label, got, want);
    CHECK(got == want);
    cfg.iface->destroy(state);
  }
  CHECK(state != NULL);
  ait_graph_free(g);
}

/* One state across batch sizes: more signatures than plans are kept. */
static void test_plan_cache(void) {
  ait_graph *g = m_convs();
  ait_backend_config cfg;
  void *state = g ? build("xnnpack:threads=2", g, &cfg) : NULL;
  if (!state) {
    CHECK(false);
    ait_graph_free(g);
    return;
  }
  const int64_t batches[] = {1, 3, 2, 5, 6, 4, 1, 3};
  for (size_t i = 0; i < sizeof batches / sizeof batches[0]; i++)
    compare_run("plan cache", g, &cfg, state, batches[i], 1e-3, 1e-4);
  CHECK_ERR(cfg.iface->deactivate(state), AIT_OK, NULL);
  CHECK_ERR(cfg.iface->activate(state), AIT_OK, NULL);
  compare_run("after deactivate", g, &cfg, state, 2, 1e-3, 1e-4);
  cfg.iface->destroy(state);
  ait_graph_free(g);
}

/* States of one thread count share a pthreadpool (a partition makes one
 * state per segment: pools of their own spun against each other); it lives
 * while any state uses it, and another count gets another pool. */
static void test_shared_pool(void) {
  ait_graph *g = m_convs();
  ait_backend_config ca, cb, cc;
  void *a = g ? build("xnnpack:threads=2", g, &ca) : NULL;
  void *b = g ? build("xnnpack:threads=2", g, &cb) : NULL;
  void *c = g ? build("xnnpack:threads=3", g, &cc) : NULL;
  CHECK(a && b && c);
  if (a && b && c) {
    const xnn_state *sa = a, *sb = b, *sc = c;
    CHECK(sa->pool && sa->pool == sb->pool && sc->pool && sc->pool != sa->pool);
    ca.iface->destroy(a), a = NULL;
    compare_run("shared pool, other state gone", g, &cb, b, 2, 1e-3, 1e-4);
    compare_run("three threads", g, &cc, c, 3, 1e-3, 1e-4);
  }
  if (a) ca.iface->destroy(a);
  if (b) cb.iface->destroy(b);
  if (c) cc.iface->destroy(c);
  /* a new state after all were gone gets a working pool */
  void *d = g ? build("xnnpack:threads=2", g, &ca) : NULL;
  CHECK(d != NULL);
  if (d) {
    compare_run("pool made again", g, &ca, d, 1, 1e-3, 1e-4);
    ca.iface->destroy(d);
  }
  ait_graph_free(g);
}

static double cpu_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* After a run the pool's workers go quiet (XNN_FLAG_YIELD_WORKERS): left
 * spinning, they burned ~50 ms of CPU after every run, and in the tuner's
 * runoff whatever ran next (native, onednn) ran at one core's speed for
 * whole blocks. Process CPU time over 100 ms of sleep after a run: its
 * median over 5 runs (after one unmeasured, whose first-use work can take
 * tens of ms once) must stay small. */
static void test_quiet_after_run(void) {
  ait_graph *g = m_convs();
  ait_backend_config cfg;
  void *s = g ? build("xnnpack:threads=2", g, &cfg) : NULL;
  CHECK(s != NULL);
  if (s) {
    double used[6];
    for (int rep = 0; rep < 6; rep++) {
      compare_run("quiet after run", g, &cfg, s, 4, 1e-3, 1e-4);
      double c0 = cpu_seconds();
      struct timespec nap = {0, 100 * 1000 * 1000};
      nanosleep(&nap, NULL);
      used[rep] = cpu_seconds() - c0;
    }
    double *v = used + 1; /* sort the 5 measured */
    for (int i = 1; i < 5; i++)
      for (int k = i; k > 0 && v[k] < v[k - 1]; k--) {
        double x = v[k];
        v[k] = v[k - 1], v[k - 1] = x;
      }
    if (v[2] > 0.010) fprintf(stderr, "quiet after run: %.1f ms of CPU while idle\n", v[2] * 1e3);
    CHECK(v[2] <= 0.010);
    cfg.iface->destroy(s);
  }
  ait_graph_free(g);
}

static void test_bad_inputs(void) {
  ait_graph *g = m_convs();
  ait_backend_config cfg;
  void *state = g ? build("xnnpack", g, &cfg) : NULL;
  if (!state) {
    CHECK(false);
    ait_graph_free(g);
    return;
  }
  ait_tensor *out[2] = {(ait_tensor *)1, (ait_tensor *)1};
  ait_tensor *x = rand_tensor(4, (const int64_t[]){1, 4, 9, 9});
  CHECK_ERR(cfg.iface->infer(state, (const ait_tensor *const *)&x, 1, out), AIT_E_SHAPE,
            "xnnpack: input 'x'");
  CHECK(out[0] == NULL && out[1] == NULL);
  ait_tensor_free(x);
  x = ait_tensor_new(AIT_FLOAT64, 4, (const int64_t[]){1, 3, 9, 9});
  CHECK_ERR(cfg.iface->infer(state, (const ait_tensor *const *)&x, 1, out), AIT_E_DTYPE, "float64");
  CHECK_ERR(cfg.iface->infer(state, (const ait_tensor *const *)&x, 0, out), AIT_E_INVALID_ARG,
            "inputs");
  ait_tensor_free(x);
  x = rand_tensor(4, (const int64_t[]){1, 3, 2, 2}); /* too small for the 3x3 windows */
  CHECK(cfg.iface->infer(state, (const ait_tensor *const *)&x, 1, out) != AIT_OK);
  CHECK(out[0] == NULL && out[1] == NULL);
  ait_tensor_free(x);
  compare_run("after errors", g, &cfg, state, 2, 1e-3, 1e-4);
  cfg.iface->destroy(state);
  ait_graph_free(g);

  g = m_tanh();
  CHECK(g != NULL);
  if (!g) return;
  char why[256] = "";
  CHECK_ERR(ait_backend_config_parse("xnnpack", &cfg), AIT_OK, NULL);
  CHECK(!cfg.iface->supports(&cfg, g, &g->nodes[0], why, sizeof why));
  CHECK(strstr(why, "Tanh") != NULL);
  CHECK_ERR(cfg.iface->build(&cfg, g, NULL, &state), AIT_E_UNSUPPORTED, "Tanh");
  ait_graph_free(g);
}

/* fp16: what this XNNPACK runs in fp16 passes the fp16 tolerance; what it
 * does not is refused with a reason naming the option. */
static void test_fp16(void) {
  ait_backend_config cfg;
  CHECK_ERR(ait_backend_config_parse("xnnpack:dtype=fp16", &cfg), AIT_OK, NULL);
  ait_graph *g = m_convs();
  char why[512];
  bool ok = g && cfg.iface->supports(&cfg, g, &g->nodes[0], why, sizeof why);
  if (ok) {
    check_model("fp16 convs", g, "xnnpack:dtype=fp16", 1e-2, 1e-2);
    g = m_pools();
    /* AveragePool has no fp16 path here: refused */
    CHECK(!cfg.iface->supports(&cfg, g, &g->nodes[1], why, sizeof why));
    CHECK(strstr(why, "fp16") != NULL);
  } else {
    fprintf(stderr, "fp16 unavailable here: %s\n", why);
    CHECK(strstr(why, "fp16") != NULL);
  }
  ait_graph_free(g);
}

/* Flip a byte at `at` (or cut the file there). With `resum`, the
 * saved-state checksum (ait_checksum64 of every byte before the last 8,
 * stored in them: backends/common/state_io.h) is made to match again, so
 * the checks behind the checksum are what must catch the damage. */
static void corrupt_file(const char *path, long at, bool truncate, bool resum) {
  void *data = NULL;
  size_t size = 0;
  if (ait_read_file(path, &data, &size)) return;
  if (!truncate && (size_t)at < size) ((uint8_t *)data)[at] ^= 0x5a;
  if (resum && size > 8) {
    uint64_t h = ait_checksum64(data, size - 8);
    memcpy((uint8_t *)data + size - 8, &h, sizeof h);
  }
  ait_write_file_atomic(path, data, truncate ? (size_t)at : size);
  free(data);
}

/* Save, load and run; then the ways a saved state goes bad. */
static void test_save_load(ait_graph *g) {
  ait_backend_config cfg, cfg16;
  void *state = g ? build("xnnpack", g, &cfg) : NULL, *loaded = NULL;
  if (!state) {
    CHECK(false);
    ait_graph_free(g);
    return;
  }
  char dir[] = "/tmp/test_xnnpack_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char *path = ait_path_join(dir, "xnnpack.bin");
  CHECK_ERR(cfg.iface->save(state, dir), AIT_OK, NULL);
  CHECK_ERR(cfg.iface->load(&cfg, g, dir, &loaded), AIT_OK, NULL);
  if (loaded) {
    compare_run("loaded", g, &cfg, loaded, 2, 1e-3, 1e-4);
    cfg.iface->destroy(loaded);
  }
  CHECK_ERR(ait_backend_config_parse("xnnpack:dtype=fp16", &cfg16), AIT_OK, NULL);
  loaded = NULL;
  CHECK(cfg.iface->load(&cfg16, g, dir, &loaded) != AIT_OK && !loaded);
  corrupt_file(path, 200, false, false);
  CHECK_ERR(cfg.iface->load(&cfg, g, dir, &loaded), AIT_E_PARSE, "corrupted");
  CHECK_ERR(cfg.iface->save(state, dir), AIT_OK, NULL);
  corrupt_file(path, 100, true, false);
  CHECK_ERR(cfg.iface->load(&cfg, g, dir, &loaded), AIT_E_PARSE, "corrupted");
  /* the format before the shared one, another backend's state, a wrong section */
  static const char old_file[64] = "AITXNNP\0\1\0\0\0";
  CHECK_ERR(ait_write_file_atomic(path, old_file, sizeof old_file), AIT_OK, NULL);
  CHECK_ERR(cfg.iface->load(&cfg, g, dir, &loaded), AIT_E_PARSE, "older aitune format ('AITXNNP')");
  ait_state_out o;
  ait_state_out_init(&o, "cuda", 2);
  ait_state_out_section(&o, "head");
  CHECK_ERR(ait_state_out_save(&o, path), AIT_OK, NULL);
  CHECK_ERR(cfg.iface->load(&cfg, g, dir, &loaded), AIT_E_PARSE, "holds the state of 'cuda'");
  ait_state_out_init(&o, "xnnpack", 2); /* xnn_io.c's XIO_VERSION */
  ait_state_out_section(&o, "program");
  CHECK_ERR(ait_state_out_save(&o, path), AIT_OK, NULL);
  CHECK_ERR(cfg.iface->load(&cfg, g, dir, &loaded), AIT_E_PARSE, "no section 'head'");
  CHECK(loaded == NULL);
  unlink(path);
  CHECK_ERR(cfg.iface->load(&cfg, g, dir, &loaded), AIT_E_IO, NULL);
  CHECK(loaded == NULL);
  rmdir(dir);
  free(path);
  cfg.iface->destroy(state);
  ait_graph_free(g);
}

/* A byte of a saved program flipped anywhere: an error or a run, never a
 * crash (the checksum catches it first; this also walks the checks behind it). */
static void test_load_fuzz(void) {
  ait_graph *g = m_convs();
  ait_backend_config cfg;
  void *state = g ? build("xnnpack", g, &cfg) : NULL;
  if (!state) {
    CHECK(false);
    ait_graph_free(g);
    return;
  }
  char dir[] = "/tmp/test_xnnpack_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char *path = ait_path_join(dir, "xnnpack.bin");
  for (long at = 0; at < 4000; at += 7) {
    void *loaded = NULL;
    CHECK_ERR(cfg.iface->save(state, dir), AIT_OK, NULL);
    corrupt_file(path, at, false, true);
    if (cfg.iface->load(&cfg, g, dir, &loaded) != AIT_OK) continue;
    /* it loaded: running it may fail, but must not crash */
    ait_tensor *in[1] = {0}, *out[2] = {0};
    make_inputs(g, 1, in);
    if (cfg.iface->infer(loaded, (const ait_tensor *const *)in, 1, out) == AIT_OK) free_all(out, 2);
    free_all(in, 1);
    cfg.iface->destroy(loaded);
  }
  unlink(path);
  rmdir(dir);
  free(path);
  cfg.iface->destroy(state);
  ait_graph_free(g);
}

int main(void) {
  const ait_backend_iface *b = ait_backend_find("xnnpack");
  char why[256];
  CHECK(b && b->available(why, sizeof why));
  if (!b || !b->available(why, sizeof why)) return check_result("test_xnnpack");
  check_model("convs", m_convs(), "xnnpack", 1e-3, 1e-4);
  check_model("convs 1 thread", m_convs(), "xnnpack:threads=1", 1e-3, 1e-4);
  check_model("grouped", m_grouped(), "xnnpack", 1e-3, 1e-4);
  check_model("pools", m_pools(), "xnnpack", 1e-3, 1e-4);
  check_model("eltwise", m_eltwise(), "xnnpack", 1e-3, 1e-4);
  check_model("gemm", m_gemm(), "xnnpack", 1e-3, 1e-4);
  check_model("segments", m_segments(), "xnnpack", 1e-3, 1e-4);
  check_model("shapes", m_shapes(), "xnnpack", 1e-3, 1e-4);
  check_model("activations", m_acts(), "xnnpack", 1e-3, 1e-4);
  check_model("softmax opset 11", m_softmax11(), "xnnpack", 1e-3, 1e-4);
  check_model("1D windows", m_conv1d(), "xnnpack", 1e-3, 1e-4);
  check_model("opset 6 broadcasting", m_legacy(), "xnnpack", 1e-3, 1e-4);
  check_segments("segments: convs", m_convs(), 1);
  check_segments("segments: conv, flatten", m_segments(), 2);
  check_segments("segments: 1D", m_conv1d(), 2);
  check_segments("segments: eltwise", m_eltwise(), 1); /* inputs are transposed up front */
  test_plan_cache();
  test_shared_pool();
  test_quiet_after_run();
  test_bad_inputs();
  test_fp16();
  test_save_load(m_segments());
  test_save_load(m_convs()); /* a fused activation: values without a producer */
  test_load_fuzz();
  return check_result("test_xnnpack");
}
