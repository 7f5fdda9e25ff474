/* The onednn backend against the reference (eager) on small models built in
 * memory: a CNN block (Conv + BatchNorm folded, residual Add + Relu fused,
 * GlobalAveragePool, Flatten, Gemm, Softmax), a transformer block (MatMul +
 * bias + GELU pattern, LayerNormalization, batched MatMul of two inputs,
 * Softmax), Gelu (opset 20), two input signatures (re-planning), bf16 where
 * the CPU has it,
 * Winograd 3x3 convolutions (conv=winograd) with save/load, save/load with a
 * corrupted file, and bad inputs. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <oneapi/dnnl/dnnl.h>

#include "backends/backend.h"
#include "backends/common/state_io.h"
#include "backends/onednn/onednn.h"
#include "check.h"
#include "core/fileio.h"
#include "model_builder.h"
#include "onnx/onnx_io.h"

static ait_graph *parse(tb_model *tb) {
  size_t size;
  uint8_t *buf = tb_pack(tb, &size);
  tb_free(tb);
  ait_graph *g = NULL;
  CHECK_ERR(ait_onnx_parse_model(buf, size, NULL, &g, NULL), AIT_OK, NULL);
  free(buf);
  return g;
}

static void fill(float *p, int64_t n, float scale, int seed) {
  for (int64_t i = 0; i < n; i++)
    p[i] = scale * sinf(0.37f * (float)(i + 1) * (float)seed + 0.11f * (float)seed);
}

/* x[N,4,6,6] -> Conv1x1 -> BatchNorm -> + x -> Relu -> GAP -> Flatten
 * -> Gemm(transB) -> Softmax */
static ait_graph *cnn_graph(void) {
  static const int64_t dx[4] = {-1, 4, 6, 6}, dy[2] = {-1, 3}, dw[4] = {4, 4, 1, 1}, dc[1] = {4};
  static const int64_t dg[2] = {3, 4}, db[1] = {3};
  float w[16], b[4], sc[4], sh[4], mean[4], var[4], g2[12], b2[3];
  fill(w, 16, 0.5f, 1), fill(b, 4, 0.1f, 2), fill(sc, 4, 0.3f, 3), fill(sh, 4, 0.2f, 4);
  fill(mean, 4, 0.1f, 5), fill(g2, 12, 0.7f, 6), fill(b2, 3, 0.2f, 7);
  for (int i = 0; i < 4; i++)
    var[i] = 0.5f + 0.1f * (float)i, sc[i] += 1.0f;
  tb_model *tb = tb_new(17);
  tb_input(tb, "x", AIT_FLOAT32, 4, dx);
  tb_output(tb, "y", AIT_FLOAT32, 2, dy);
  tb_init_f32(tb, "W", 4, dw, w);
  tb_init_f32(tb, "B", 1, dc, b);
  tb_init_f32(tb, "scale", 1, dc, sc);
  tb_init_f32(tb, "shift", 1, dc, sh);
  tb_init_f32(tb, "mean", 1, dc, mean);
  tb_init_f32(tb, "var", 1, dc, var);
  tb_init_f32(tb, "G", 2, dg, g2);
  tb_init_f32(tb, "gb", 1, db, b2);
  tb_node(tb, "Conv", "conv", (const char *[]){"x", "W", "B", NULL}, (const char *[]){"c", NULL});
  tb_node(tb, "BatchNormalization", "bn",
          (const char *[]){"c", "scale", "shift", "mean", "var", NULL},
          (const char *[]){"n", NULL});
  tb_node(tb, "Add", "res", (const char *[]){"n", "x", NULL}, (const char *[]){"r", NULL});
  tb_node(tb, "Relu", "relu", (const char *[]){"r", NULL}, (const char *[]){"a", NULL});
  tb_node(tb, "GlobalAveragePool", "gap", (const char *[]){"a", NULL}, (const char *[]){"p", NULL});
  tb_node(tb, "Flatten", "flat", (const char *[]){"p", NULL}, (const char *[]){"f", NULL});
  int gm = tb_node(tb, "Gemm", "fc", (const char *[]){"f", "G", "gb", NULL},
                   (const char *[]){"l", NULL});
  tb_attr_int(tb, gm, "transB", 1);
  int sm = tb_node(tb, "Softmax", "sm", (const char *[]){"l", NULL}, (const char *[]){"y", NULL});
  tb_attr_int(tb, sm, "axis", 1);
  return parse(tb);
}

/* x[N,S,8], k[N,8,S] -> MatMul(Wq) + bq -> GELU (erf form) -> LayerNorm
 * -> MatMul with k -> Softmax */
static ait_graph *transformer_graph(void) {
  static const int64_t dx[3] = {-1, -1, 8}, dk[3] = {-1, 8, -1}, dy[3] = {-1, -1, -1};
  static const int64_t dw[2] = {8, 8}, dv[1] = {8}, d1[1] = {1};
  float w[64], b[8], ls[8], lb[8];
  fill(w, 64, 0.4f, 8), fill(b, 8, 0.1f, 9), fill(ls, 8, 0.2f, 10), fill(lb, 8, 0.1f, 11);
  for (int i = 0; i < 8; i++)
    ls[i] += 1.f;
  const float sqrt2[1] = {1.41421354f}, one[1] = {1.f}, half[1] = {0.5f};
  tb_model *tb = tb_new(17);
  tb_input(tb, "x", AIT_FLOAT32, 3, dx);
  tb_input(tb, "k", AIT_FLOAT32, 3, dk);
  tb_output(tb, "y", AIT_FLOAT32, 3, dy);
  tb_init_f32(tb, "Wq", 2, dw, w);
  tb_init_f32(tb, "bq", 1, dv, b);
  tb_init_f32(tb, "ls", 1, dv, ls);
  tb_init_f32(tb, "lb", 1, dv, lb);
  tb_init_f32(tb, "sqrt2", 1, d1, sqrt2);
  tb_init_f32(tb, "one", 1, d1, one);
  tb_init_f32(tb, "half", 1, d1, half);
  tb_node(tb, "MatMul", "q", (const char *[]){"x", "Wq", NULL}, (const char *[]){"q0", NULL});
  tb_node(tb, "Add", "qb", (const char *[]){"bq", "q0", NULL}, (const char *[]){"h", NULL});
  tb_node(tb, "Div", "d", (const char *[]){"h", "sqrt2", NULL}, (const char *[]){"hd", NULL});
  tb_node(tb, "Erf", "erf", (const char *[]){"hd", NULL}, (const char *[]){"he", NULL});
  tb_node(tb, "Add", "e1", (const char *[]){"he", "one", NULL}, (const char *[]){"h1", NULL});
  tb_node(tb, "Mul", "m1", (const char *[]){"h", "h1", NULL}, (const char *[]){"hm", NULL});
  tb_node(tb, "Mul", "m2", (const char *[]){"hm", "half", NULL}, (const char *[]){"gelu", NULL});
  tb_node(tb, "LayerNormalization", "ln", (const char *[]){"gelu", "ls", "lb", NULL},
          (const char *[]){"z", NULL});
  tb_node(tb, "MatMul", "att", (const char *[]){"z", "k", NULL}, (const char *[]){"s", NULL});
  tb_node(tb, "Softmax", "sm", (const char *[]){"s", NULL}, (const char *[]){"y", NULL});
  return parse(tb);
}

/* x[N,16,10,10] -> Conv3x3 pad 1 (16->32) + bias -> Relu -> Conv3x3 pad 1
 * (32->16) -> + x: the shapes oneDNN's Winograd kernels take, with a bias,
 * an activation and a residual sum as post-ops. */
static ait_graph *wino_graph(void) {
  static const int64_t dx[4] = {-1, 16, 10, 10}, dw1[4] = {32, 16, 3, 3}, dw2[4] = {16, 32, 3, 3};
  static const int64_t db1[1] = {32};
  static const int64_t pads[4] = {1, 1, 1, 1};
  float w1[32 * 16 * 9], w2[16 * 32 * 9], b1[32];
  fill(w1, 32 * 16 * 9, 0.08f, 21), fill(w2, 16 * 32 * 9, 0.06f, 22), fill(b1, 32, 0.1f, 23);
  tb_model *tb = tb_new(17);
  tb_input(tb, "x", AIT_FLOAT32, 4, dx);
  tb_output(tb, "y", AIT_FLOAT32, 4, dx);
  tb_init_f32(tb, "W1", 4, dw1, w1);
  tb_init_f32(tb, "B1", 1, db1, b1);
  tb_init_f32(tb, "W2", 4, dw2, w2);
  int c1 = tb_node(tb, "Conv", "c1", (const char *[]){"x", "W1", "B1", NULL},
                   (const char *[]){"h", NULL});
  tb_attr_ints(tb, c1, "pads", 4, pads);
  tb_node(tb, "Relu", "r", (const char *[]){"h", NULL}, (const char *[]){"a", NULL});
  int c2 =
      tb_node(tb, "Conv", "c2", (const char *[]){"a", "W2", NULL}, (const char *[]){"z", NULL});
  tb_attr_ints(tb, c2, "pads", 4, pads);
  tb_node(tb, "Add", "res", (const char *[]){"z", "x", NULL}, (const char *[]){"y", NULL});
  return parse(tb);
}

static ait_tensor *random_tensor(int rank, const int64_t *dims, int seed) {
  ait_tensor *t = ait_tensor_new(AIT_FLOAT32, rank, dims);
  if (t) fill(t->data, ait_tensor_numel(t), 1.f, seed);
  return t;
}

/* max |got - want| / (atol + rtol |want|) over the output, and cosine */
static void compare(const ait_tensor *got, const ait_tensor *want, double rtol, double atol,
                    double min_cos, const char *what) {
  CHECK(got && want && got->rank == want->rank);
  if (!got || !want || got->rank != want->rank) return;
  for (int k = 0; k < got->rank; k++)
    CHECK(got->dims[k] == want->dims[k]);
  const float *a = got->data, *b = want->data;
  double worst = 0, dot = 0, na = 0, nb = 0;
  for (int64_t i = 0; i < ait_tensor_numel(want); i++) {
    double e = fabs((double)a[i] - b[i]) / (atol + rtol * fabs((double)b[i]));
    if (e > worst) worst = e;
    dot += (double)a[i] * b[i], na += (double)a[i] * a[i], nb += (double)b[i] * b[i];
  }
  double cosine = na > 0 && nb > 0 ? dot / sqrt(na * nb) : 1.0;
  if (worst > 1 || cosine < min_cos)
    fprintf(stderr, "%s: worst error %.3g x tolerance, cosine %.6f\n", what, worst, cosine);
  CHECK(worst <= 1 && cosine >= min_cos);
}

/* Run graph g on backend spec and on eager with inputs in[], compare. */
static void check_against_eager(const ait_graph *g, const char *spec, ait_tensor **in, double rtol,
                                double atol, double min_cos) {
  ait_backend_config cfg, ref;
  CHECK_ERR(ait_backend_config_parse(spec, &cfg), AIT_OK, NULL);
  CHECK_ERR(ait_backend_config_parse("eager", &ref), AIT_OK, NULL);
  const ait_tensor *const *ins = (const ait_tensor *const *)in;
  const ait_tensor *const *samples[1] = {ins};
  ait_build_info info = {.samples = samples, .n_samples = 1};
  void *s = NULL, *r = NULL;
  CHECK_ERR(cfg.iface->build(&cfg, g, &info, &s), AIT_OK, NULL);
  CHECK_ERR(ref.iface->build(&ref, g, NULL, &r), AIT_OK, NULL);
  ait_tensor *got[4] = {0}, *want[4] = {0};
  if (s && r) {
    for (int rep = 0; rep < 2; rep++) { /* the second run reuses the plan */
      for (int k = 0; k < g->n_outputs; k++)
        ait_tensor_free(got[k]), got[k] = NULL;
      CHECK_ERR(cfg.iface->infer(s, ins, g->n_inputs, got), AIT_OK, NULL);
    }
    CHECK_ERR(ref.iface->infer(r, ins, g->n_inputs, want), AIT_OK, NULL);
    for (int k = 0; k < g->n_outputs; k++)
      compare(got[k], want[k], rtol, atol, min_cos, spec);
  }
  for (int k = 0; k < 4; k++)
    ait_tensor_free(got[k]), ait_tensor_free(want[k]);
  if (s) cfg.iface->destroy(s);
  if (r) ref.iface->destroy(r);
}

static void test_cnn(void) {
  ait_graph *g = cnn_graph();
  if (!g) return;
  for (int n = 1; n <= 3; n += 2) {
    int64_t d[4] = {n, 4, 6, 6};
    ait_tensor *x = random_tensor(4, d, n);
    check_against_eager(g, "onednn", &x, 1e-3, 1e-4, 0.9999);
    check_against_eager(g, "onednn:threads=1", &x, 1e-3, 1e-4, 0.9999);
    char why[256];
    if (ait_backend_find("onednn")->supports) {
      ait_backend_config bf;
      ait_backend_config_parse("onednn:dtype=bf16", &bf);
      if (bf.iface->supports(&bf, g, &g->nodes[0], why, sizeof why))
        check_against_eager(g, "onednn:dtype=bf16", &x, 5e-2, 5e-2, 0.99);
      else
        CHECK(strstr(why, "bf16") != NULL);
    }
    ait_tensor_free(x);
  }
  ait_graph_free(g);
}

static void test_transformer(void) {
  ait_graph *g = transformer_graph();
  if (!g) return;
  int64_t dx[3] = {2, 5, 8}, dk[3] = {2, 8, 5};
  ait_tensor *in[2] = {random_tensor(3, dx, 3), random_tensor(3, dk, 4)};
  check_against_eager(g, "onednn", in, 1e-3, 1e-4, 0.9999);
  ait_tensor_free(in[0]), ait_tensor_free(in[1]);
  ait_graph_free(g);
}

/* Gelu (opset 20) after MatMul + bias: gelu_erf / gelu_tanh, fused as a
 * post-op, against the reference; an unknown `approximate` is refused. */
static void test_gelu_op(void) {
  static const char *const modes[] = {"none", "tanh", "bogus"};
  for (int k = 0; k < 3; k++) {
    static const int64_t dx[2] = {-1, 12}, dy[2] = {-1, 20}, dw[2] = {12, 20}, db[1] = {20};
    float w[240], b[20];
    fill(w, 240, 0.6f, 11), fill(b, 20, 0.4f, 12);
    tb_model *tb = tb_new(20);
    tb_input(tb, "x", AIT_FLOAT32, 2, dx);
    tb_output(tb, "y", AIT_FLOAT32, 2, dy);
    tb_init_f32(tb, "W", 2, dw, w);
    tb_init_f32(tb, "b", 1, db, b);
    tb_node(tb, "MatMul", "mm", (const char *[]){"x", "W", NULL}, (const char *[]){"h", NULL});
    tb_node(tb, "Add", "bias", (const char *[]){"h", "b", NULL}, (const char *[]){"hb", NULL});
    int n = tb_node(tb, "Gelu", "gelu", (const char *[]){"hb", NULL}, (const char *[]){"y", NULL});
    tb_attr_str(tb, n, "approximate", modes[k]);
    ait_graph *g = parse(tb);
    if (!g) continue;
    ait_backend_config cfg;
    CHECK_ERR(ait_backend_config_parse("onednn", &cfg), AIT_OK, NULL);
    char why[256];
    bool sup = cfg.iface->supports(&cfg, g, &g->nodes[g->n_nodes - 1], why, sizeof why);
    CHECK(sup == (k < 2));
    if (sup) {
      int64_t d[2] = {7, 12};
      ait_tensor *x = random_tensor(2, d, 5 + k);
      check_against_eager(g, "onednn", &x, 1e-4, 1e-5, 0.99999);
      ait_tensor_free(x);
    }
    ait_graph_free(g);
  }
}

/* Save, load, run; a corrupted file is an error, never a crash. */
static void test_save_load(void) {
  ait_graph *g = cnn_graph();
  if (!g) return;
  int64_t d[4] = {2, 4, 6, 6};
  ait_tensor *x = random_tensor(4, d, 7);
  const ait_tensor *const ins[1] = {x};
  const ait_tensor *const *samples[1] = {ins};
  ait_build_info info = {.samples = samples, .n_samples = 1};
  ait_backend_config cfg;
  ait_backend_config_parse("onednn", &cfg);
  void *s = NULL, *l = NULL;
  char dir[] = "/tmp/ait_test_onednn_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  CHECK_ERR(cfg.iface->build(&cfg, g, &info, &s), AIT_OK, NULL);
  CHECK_ERR(cfg.iface->save(s, dir), AIT_OK, NULL);
  CHECK_ERR(cfg.iface->load(&cfg, g, dir, &l), AIT_OK, NULL);
  ait_tensor *a[1] = {0}, *b[1] = {0};
  if (s && l) {
    CHECK_ERR(cfg.iface->infer(s, ins, 1, a), AIT_OK, NULL);
    CHECK_ERR(cfg.iface->infer(l, ins, 1, b), AIT_OK, NULL);
    compare(b[0], a[0], 0, 1e-7, 1.0, "loaded");
  }
  ait_tensor_free(a[0]), ait_tensor_free(b[0]);
  if (l) cfg.iface->destroy(l), l = NULL;
  /* flip one byte in the middle, then cut the file short */
  char *path = ait_path_join(dir, "onednn.bin");
  void *data = NULL;
  size_t size = 0;
  CHECK_ERR(ait_read_file(path, &data, &size), AIT_OK, NULL);
  if (data && size > 64) {
    ((uint8_t *)data)[size / 2] ^= 0x5a;
    CHECK_ERR(ait_write_file_atomic(path, data, size), AIT_OK, NULL);
    CHECK_ERR(cfg.iface->load(&cfg, g, dir, &l), AIT_E_PARSE, "corrupted (checksum mismatch)");
    CHECK(l == NULL);
    CHECK_ERR(ait_write_file_atomic(path, data, 20), AIT_OK, NULL);
    CHECK_ERR(cfg.iface->load(&cfg, g, dir, &l), AIT_E_PARSE, "onednn");
    /* the format before the shared one; the right owner with a section missing */
    memcpy(data, "AITDNNL", 8);
    CHECK_ERR(ait_write_file_atomic(path, data, size), AIT_OK, NULL);
    CHECK_ERR(cfg.iface->load(&cfg, g, dir, &l), AIT_E_PARSE, "older aitune format ('AITDNNL')");
    ait_state_out o;
    ait_state_out_init(&o, "onednn", 2); /* onednn_io.c's DN_VERSION */
    ait_state_out_section(&o, "weights");
    CHECK_ERR(ait_state_out_save(&o, path), AIT_OK, NULL);
    CHECK_ERR(cfg.iface->load(&cfg, g, dir, &l), AIT_E_PARSE, "no section 'head'");
    CHECK(l == NULL);
  }
  free(data);
  unlink(path);
  free(path);
  rmdir(dir);
  if (s) cfg.iface->destroy(s);
  ait_tensor_free(x);
  ait_graph_free(g);
}

/* Winograd weights in a state's cache (the form oneDNN asked for). */
static int wino_weights(void *state) {
  const dn_state *s = state;
  int n = 0;
  for (int i = 0; s && i < s->sh->n_wc; i++)
    n += s->sh->wc[i].md.format_kind == dnnl_format_kind_wino;
  return n;
}

/* conv=winograd agrees with eager within fp32 tolerances, really runs
 * Winograd where oneDNN has it, and saves and loads its transformed weights. */
static void test_winograd(void) {
  ait_graph *g = wino_graph();
  if (!g) return;
  int64_t d[4] = {2, 16, 10, 10};
  ait_tensor *x = random_tensor(4, d, 5);
  check_against_eager(g, "onednn:conv=winograd", &x, 1e-3, 1e-4, 0.9999);
  const ait_tensor *const ins[1] = {x};
  const ait_tensor *const *samples[1] = {ins};
  ait_build_info info = {.samples = samples, .n_samples = 1};
  ait_backend_config cfg, direct;
  ait_backend_config_parse("onednn:conv=winograd", &cfg);
  ait_backend_config_parse("onednn", &direct);
  void *s = NULL, *l = NULL, *dsn = NULL;
  char dir[] = "/tmp/ait_test_onednn_wino_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  CHECK_ERR(cfg.iface->build(&cfg, g, &info, &s), AIT_OK, NULL);
  CHECK_ERR(direct.iface->build(&direct, g, &info, &dsn), AIT_OK, NULL);
  ait_tensor *a[1] = {0}, *b[1] = {0}, *c[1] = {0};
  if (s && dsn) {
    CHECK_ERR(cfg.iface->infer(s, ins, 1, a), AIT_OK, NULL);
    CHECK_ERR(direct.iface->infer(dsn, ins, 1, c), AIT_OK, NULL);
    /* with oneDNN's avx512_core ISA (its Winograd kernels') both convs take it */
    if ((dnnl_get_effective_cpu_isa() & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core)
      CHECK(wino_weights(s) == 2);
    CHECK(wino_weights(dsn) == 0);
    CHECK_ERR(cfg.iface->save(s, dir), AIT_OK, NULL);
    CHECK_ERR(cfg.iface->load(&cfg, g, dir, &l), AIT_OK, NULL);
  }
  if (l) {
    CHECK_ERR(cfg.iface->infer(l, ins, 1, b), AIT_OK, NULL);
    compare(b[0], a[0], 0, 1e-7, 1.0, "loaded winograd");
    /* Winograd rounds differently from the direct form, but not by much */
    compare(a[0], c[0], 1e-4, 1e-5, 0.99999, "winograd vs direct");
  }
  ait_tensor_free(a[0]), ait_tensor_free(b[0]), ait_tensor_free(c[0]);
  char *path = ait_path_join(dir, "onednn.bin");
  unlink(path);
  free(path);
  rmdir(dir);
  if (l) cfg.iface->destroy(l);
  if (s) cfg.iface->destroy(s);
  if (dsn) direct.iface->destroy(dsn);
  ait_tensor_free(x);
  ait_graph_free(g);
  /* a model without a 3x3 stride-1 conv: refused, not a duplicate of direct */
  g = cnn_graph();
  void *none = NULL;
  if (g) CHECK_ERR(cfg.iface->build(&cfg, g, NULL, &none), AIT_E_UNSUPPORTED, "3x3");
  CHECK(none == NULL);
  ait_graph_free(g);
}

/* Wrong dtype, wrong count: errors naming the input; outputs stay NULL. */
static void test_bad_inputs(void) {
  ait_graph *g = cnn_graph();
  if (!g) return;
  ait_backend_config cfg;
  ait_backend_config_parse("onednn", &cfg);
  void *s = NULL;
  CHECK_ERR(cfg.iface->build(&cfg, g, NULL, &s), AIT_OK, NULL);
  int64_t d[4] = {1, 4, 6, 6}, bad[4] = {1, 5, 6, 6};
  ait_tensor *xi = ait_tensor_new(AIT_INT64, 4, d), *xs = random_tensor(4, bad, 1);
  ait_tensor *out[1] = {(ait_tensor *)1};
  const ait_tensor *const in1[1] = {xi};
  if (s) {
    CHECK_ERR(cfg.iface->infer(s, in1, 1, out), AIT_E_DTYPE, "input 'x'");
    CHECK(out[0] == NULL);
    CHECK_ERR(cfg.iface->infer(s, in1, 0, out), AIT_E_INVALID_ARG, "inputs");
    const ait_tensor *const in2[1] = {xs};
    CHECK_ERR(cfg.iface->infer(s, in2, 1, out), AIT_E_SHAPE, "x");
    CHECK(out[0] == NULL);
    cfg.iface->destroy(s);
  }
  /* supports() says why it refuses */
  char why[256] = "";
  ait_node fake = g->nodes[0];
  fake.op_type = "TopK";
  CHECK(!cfg.iface->supports(&cfg, g, &fake, why, sizeof why) && strstr(why, "TopK"));
  ait_tensor_free(xi), ait_tensor_free(xs);
  ait_graph_free(g);
}

int main(void) {
  char why[256];
  const ait_backend_iface *b = ait_backend_find("onednn");
  CHECK(b != NULL);
  if (!b || !b->available(why, sizeof why)) return check_result("test_onednn");
  test_cnn();
  test_transformer();
  test_gelu_op();
  test_save_load();
  test_winograd();
  test_bad_inputs();
  return check_result("test_onednn");
}
