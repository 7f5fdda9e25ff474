/* Backend `quant`: every preset and custom configuration against eager
 * (cosine >= 0.99, the tuner's floor for quantized candidates) on an MLP and
 * a convolutional model, AVX-512 and portable kernels; fp8 e4m3 encoding;
 * pre-flight failures of the microscaling presets on the CPU; the filter
 * (op types, patterns, minimum size, the C callback); configuration errors;
 * both JSON forms; save/load without re-quantizing, corrupted files; bad
 * inputs; and a tuning run through the public API with a node filter.
 * Then the AVX2 tiles (with and without AVX-VNNI) against the portable
 * kernel and the float product on random shapes, and the presets on
 * bert_tiny (argv[1]) at each ISA level. */
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/model_impl.h"
#include "backends/common/state_io.h"
#include "backends/quant/quant.h"
#include "check.h"
#include "core/error.h"
#include "core/fileio.h"
#include "model_builder.h"
#include "onnx/onnx_io.h"
#include "runtime/eager.h"

extern const ait_backend_iface ait_backend_quant;
static const ait_backend_iface *Q = &ait_backend_quant;

static float frand(uint32_t *s) {
  *s = *s * 1664525u + 1013904223u;
  return (float)((*s >> 8) & 0xFFFF) / 32768.0f - 1.0f;
}

static void fill(float *v, int64_t n, float scale, uint32_t seed) {
  for (int64_t i = 0; i < n; i++)
    v[i] = frand(&seed) * scale;
}

static ait_model *load_tb(tb_model *tb, uint8_t **bytes, size_t *nbytes) {
  size_t size;
  uint8_t *buf = tb_pack(tb, &size);
  tb_free(tb);
  ait_model *m = NULL;
  CHECK_ERR(ait_model_load_buffer(buf, size, NULL, &m), AIT_OK, NULL);
  if (bytes) {
    *bytes = buf;
    *nbytes = size;
  } else {
    free(buf);
  }
  return m;
}

/* x[N,70] -> MatMul fc1 [70,96] -> Add -> Relu -> Gemm fc2 [96,80] (alpha
 * 0.5) -> Relu -> Gemm classifier [10,80] (transB) -> y[N,10]. K = 70 is
 * no multiple of 4, 16 or 32, so every padding path runs. */
enum { K1 = 70, H1 = 96, H2 = 80, NCLS = 10 };
static ait_model *mlp_model(uint8_t **bytes, size_t *nbytes) {
  static float w1[K1 * H1], b1[H1], w2[H1 * H2], b2[H2], w3[NCLS * H2], b3[NCLS];
  fill(w1, K1 * H1, 0.2f, 1), fill(b1, H1, 0.1f, 2), fill(w2, H1 * H2, 0.15f, 3);
  fill(b2, H2, 0.1f, 4), fill(w3, NCLS * H2, 0.2f, 5), fill(b3, NCLS, 0.1f, 6);
  w2[17] = 1.5f; /* an outlier, for the percentile scale */
  const int64_t dx[2] = {-1, K1}, dy[2] = {-1, NCLS}, dw1[2] = {K1, H1}, db1[1] = {H1};
  const int64_t dw2[2] = {H1, H2}, db2[1] = {H2}, dw3[2] = {NCLS, H2}, db3[1] = {NCLS};
  tb_model *tb = tb_new(13);
  tb_input(tb, "x", AIT_FLOAT32, 2, dx);
  tb_output(tb, "y", AIT_FLOAT32, 2, dy);
  tb_init_f32(tb, "W1", 2, dw1, w1), tb_init_f32(tb, "b1", 1, db1, b1);
  tb_init_f32(tb, "W2", 2, dw2, w2), tb_init_f32(tb, "b2", 1, db2, b2);
  tb_init_f32(tb, "W3", 2, dw3, w3), tb_init_f32(tb, "b3", 1, db3, b3);
  tb_node(tb, "MatMul", "fc1", (const char *[]){"x", "W1", NULL}, (const char *[]){"h", NULL});
  tb_node(tb, "Add", "add1", (const char *[]){"h", "b1", NULL}, (const char *[]){"hb", NULL});
  tb_node(tb, "Relu", "relu1", (const char *[]){"hb", NULL}, (const char *[]){"r1", NULL});
  tb_node(tb, "Gemm", "fc2", (const char *[]){"r1", "W2", "b2", NULL},
          (const char *[]){"h2", NULL});
  tb_node(tb, "Relu", "relu2", (const char *[]){"h2", NULL}, (const char *[]){"r2", NULL});
  int cls = tb_node(tb, "Gemm", "classifier", (const char *[]){"r2", "W3", "b3", NULL},
                    (const char *[]){"y", NULL});
  tb_attr_int(tb, cls, "transB", 1);
  return load_tb(tb, bytes, nbytes);
}

/* ids[N,L] (int64) -> Gather embed [V,D] -> MatMul proj [D,P] -> y[N,L,P]:
 * an embedding table looked up by index, then a product. */
enum { EV = 50, ED = 40, EP = 24, EL = 5 };
static float embed_w[EV * ED], proj_w[ED * EP];
static ait_model *embed_model(void) {
  fill(embed_w, EV * ED, 1.0f, 21), fill(proj_w, ED * EP, 0.3f, 22);
  const int64_t dx[2] = {-1, EL}, dy[3] = {-1, EL, EP}, de[2] = {EV, ED}, dp[2] = {ED, EP};
  tb_model *tb = tb_new(13);
  tb_input(tb, "ids", AIT_INT64, 2, dx);
  tb_output(tb, "y", AIT_FLOAT32, 3, dy);
  tb_init_f32(tb, "E", 2, de, embed_w), tb_init_f32(tb, "P", 2, dp, proj_w);
  tb_node(tb, "Gather", "embed", (const char *[]){"E", "ids", NULL}, (const char *[]){"e", NULL});
  tb_node(tb, "MatMul", "proj", (const char *[]){"e", "P", NULL}, (const char *[]){"y", NULL});
  return load_tb(tb, NULL, NULL);
}

/* x[N,RD] -> MatMul up [RD,RF] -> Add -> Relu -> MatMul down [RF,RD] -> Add
 * bias -> Add x -> y[N,RD]: a residual block, whose second product native
 * fuses with its bias and the residual (the quantized tiles add both). */
enum { RD = 72, RF = 136 };
static float res_w1[RD * RF], res_b1[RF], res_w2[RF * RD], res_b2[RD];
static ait_model *residual_model(void) {
  fill(res_w1, RD * RF, 0.2f, 31), fill(res_b1, RF, 0.1f, 32);
  fill(res_w2, RF * RD, 0.15f, 33), fill(res_b2, RD, 0.1f, 34);
  const int64_t dx[2] = {-1, RD}, d1[2] = {RD, RF}, db1[1] = {RF}, d2[2] = {RF, RD}, db2[1] = {RD};
  tb_model *tb = tb_new(13);
  tb_input(tb, "x", AIT_FLOAT32, 2, dx);
  tb_output(tb, "y", AIT_FLOAT32, 2, dx);
  tb_init_f32(tb, "W1", 2, d1, res_w1), tb_init_f32(tb, "b1", 1, db1, res_b1);
  tb_init_f32(tb, "W2", 2, d2, res_w2), tb_init_f32(tb, "b2", 1, db2, res_b2);
  tb_node(tb, "MatMul", "up", (const char *[]){"x", "W1", NULL}, (const char *[]){"h", NULL});
  tb_node(tb, "Add", "up_bias", (const char *[]){"h", "b1", NULL}, (const char *[]){"hb", NULL});
  tb_node(tb, "Relu", "act", (const char *[]){"hb", NULL}, (const char *[]){"r", NULL});
  tb_node(tb, "MatMul", "down", (const char *[]){"r", "W2", NULL}, (const char *[]){"d", NULL});
  tb_node(tb, "Add", "down_bias", (const char *[]){"d", "b2", NULL}, (const char *[]){"db", NULL});
  tb_node(tb, "Add", "residual", (const char *[]){"db", "x", NULL}, (const char *[]){"y", NULL});
  return load_tb(tb, NULL, NULL);
}

/* x[N,RD] -> MatMul a [RD,RF] and MatMul b [RD,RF] -> Add -> y[N,RF]: two
 * products of one input, which int8dq quantizes once for both. */
static ait_model *shared_model(void) {
  static float wa[RD * RF], wb[RD * RF];
  fill(wa, RD * RF, 0.2f, 51), fill(wb, RD * RF, 0.2f, 52);
  const int64_t dx[2] = {-1, RD}, dy[2] = {-1, RF}, dw[2] = {RD, RF};
  tb_model *tb = tb_new(13);
  tb_input(tb, "x", AIT_FLOAT32, 2, dx);
  tb_output(tb, "y", AIT_FLOAT32, 2, dy);
  tb_init_f32(tb, "Wa", 2, dw, wa), tb_init_f32(tb, "Wb", 2, dw, wb);
  tb_node(tb, "MatMul", "a", (const char *[]){"x", "Wa", NULL}, (const char *[]){"ya", NULL});
  tb_node(tb, "MatMul", "b", (const char *[]){"x", "Wb", NULL}, (const char *[]){"yb", NULL});
  tb_node(tb, "Add", "sum", (const char *[]){"ya", "yb", NULL}, (const char *[]){"y", NULL});
  return load_tb(tb, NULL, NULL);
}

/* x[N,RD] -> MatMul by Transpose(Slice(W[2RD,RD], rows RD..2RD)), the
 * bounds from Shape(x) as nn.MultiheadAttention exports its key weight:
 * quant folds the view into a constant weight and quantizes the product. */
static ait_model *view_model(void) {
  static float w[2 * RD * RD];
  fill(w, 2 * RD * RD, 0.2f, 71);
  const int64_t dx[2] = {-1, RD}, dw[2] = {2 * RD, RD}, d1[1] = {1};
  const int64_t one[1] = {1}, two[1] = {2}, zero[1] = {0};
  tb_model *tb = tb_new(13);
  tb_input(tb, "x", AIT_FLOAT32, 2, dx);
  tb_output(tb, "y", AIT_FLOAT32, 2, dx);
  tb_init_f32(tb, "W", 2, dw, w);
  tb_init_i64(tb, "one", 1, d1, one), tb_init_i64(tb, "two", 1, d1, two);
  tb_init_i64(tb, "zero", 1, d1, zero);
  tb_node(tb, "Shape", "shape", (const char *[]){"x", NULL}, (const char *[]){"s", NULL});
  tb_node(tb, "Slice", "dim", (const char *[]){"s", "one", "two", NULL},
          (const char *[]){"e", NULL});
  tb_node(tb, "Mul", "end", (const char *[]){"e", "two", NULL}, (const char *[]){"e2", NULL});
  tb_node(tb, "Slice", "rows", (const char *[]){"W", "e", "e2", "zero", NULL},
          (const char *[]){"wk", NULL});
  tb_node(tb, "Transpose", "wt", (const char *[]){"wk", NULL}, (const char *[]){"wkt", NULL});
  tb_node(tb, "MatMul", "key", (const char *[]){"x", "wkt", NULL}, (const char *[]){"y", NULL});
  return load_tb(tb, NULL, NULL);
}

/* An INTS attribute added after loading (the test builder sets ints only). */
static void add_ints(ait_node *n, const char *name, const int64_t *v, int cnt) {
  ait_attr *a = realloc(n->attrs, sizeof *a * (size_t)(n->n_attrs + 1));
  if (!a) return;
  n->attrs = a;
  a = &n->attrs[n->n_attrs++];
  memset(a, 0, sizeof *a);
  a->name = strdup(name);
  a->type = AIT_ATTR_INTS;
  a->n = cnt;
  a->ints = malloc(sizeof(int64_t) * (size_t)cnt);
  memcpy(a->ints, v, sizeof(int64_t) * (size_t)cnt);
}

static ait_node *find_node(const ait_graph *g, const char *name) {
  for (int i = 0; i < g->n_nodes; i++)
    if (!strcmp(g->nodes[i].name, name)) return &g->nodes[i];
  return NULL;
}

/* x[N,4,12,12] -> Conv conv1 [16,4,3,3] + bias, pads 1, strides 2 -> Relu
 * -> Conv pw [24,16,1,1] -> Relu -> Conv grouped [24,12,3,3] group 2, pads
 * 2, dilations 2 -> y */
static ait_model *conv_model(void) {
  static float w1[16 * 4 * 9], b1[16], w2[24 * 16], w3[24 * 12 * 9];
  fill(w1, 16 * 4 * 9, 0.3f, 11), fill(b1, 16, 0.1f, 12), fill(w2, 24 * 16, 0.3f, 13);
  fill(w3, 24 * 12 * 9, 0.2f, 14);
  const int64_t dx[4] = {-1, 4, 12, 12}, dy[4] = {-1, 24, -1, -1};
  const int64_t dw1[4] = {16, 4, 3, 3}, db1[1] = {16}, dw2[4] = {24, 16, 1, 1},
                dw3[4] = {24, 12, 3, 3};
  tb_model *tb = tb_new(13);
  tb_input(tb, "x", AIT_FLOAT32, 4, dx);
  tb_output(tb, "y", AIT_FLOAT32, 4, dy);
  tb_init_f32(tb, "W1", 4, dw1, w1), tb_init_f32(tb, "B1", 1, db1, b1);
  tb_init_f32(tb, "W2", 4, dw2, w2), tb_init_f32(tb, "W3", 4, dw3, w3);
  tb_node(tb, "Conv", "conv1", (const char *[]){"x", "W1", "B1", NULL},
          (const char *[]){"c1", NULL});
  tb_node(tb, "Relu", "r1", (const char *[]){"c1", NULL}, (const char *[]){"a1", NULL});
  tb_node(tb, "Conv", "pw", (const char *[]){"a1", "W2", NULL}, (const char *[]){"c2", NULL});
  tb_node(tb, "Relu", "r2", (const char *[]){"c2", NULL}, (const char *[]){"a2", NULL});
  int g3 = tb_node(tb, "Conv", "grouped", (const char *[]){"a2", "W3", NULL},
                   (const char *[]){"y", NULL});
  tb_attr_int(tb, g3, "group", 2);
  ait_model *m = load_tb(tb, NULL, NULL);
  if (!m) return NULL;
  ait_graph *g = m->graph;
  const int64_t one[4] = {1, 1, 1, 1}, two[4] = {2, 2, 2, 2};
  add_ints(find_node(g, "conv1"), "pads", one, 4);
  add_ints(find_node(g, "conv1"), "strides", two, 2);
  add_ints(find_node(g, "grouped"), "pads", two, 4);
  add_ints(find_node(g, "grouped"), "dilations", two, 2);
  return m;
}

/* Parse spec, then set key=val directly (options that take free text may
 * not parse in every registry version). */
static ait_status config(const char *spec, const char *key, const char *val,
                         ait_backend_config *cfg) {
  AIT_TRY(ait_backend_config_parse(spec, cfg));
  if (key) {
    snprintf(cfg->keys[cfg->n], sizeof cfg->keys[0], "%s", key);
    snprintf(cfg->vals[cfg->n], sizeof cfg->vals[0], "%s", val);
    cfg->n++;
  }
  return AIT_OK;
}

static ait_status build(const char *spec, const char *key, const char *val, const ait_graph *g,
                        const ait_build_info *info, qnt_state **st) {
  ait_backend_config cfg;
  *st = NULL;
  AIT_TRY(config(spec, key, val, &cfg));
  return Q->build(&cfg, g, info, (void **)st);
}

static ait_tensor *input(const ait_graph *g, int64_t batch, uint32_t seed) {
  const ait_value *v = &g->values[g->inputs[0]];
  int64_t dims[AIT_MAX_RANK];
  for (int i = 0; i < v->rank; i++)
    dims[i] = i == 0 ? batch : v->dims[i].v;
  ait_tensor *t = ait_tensor_new(AIT_FLOAT32, v->rank, dims);
  if (t) fill(t->data, ait_tensor_numel(t), 1.0f, seed);
  return t;
}

static double cosine(const ait_tensor *a, const ait_tensor *b, double *max_rel) {
  const float *x = a->data, *y = b->data;
  double dot = 0, nx = 0, ny = 0, ma = 0, sc = 0;
  for (int64_t i = 0; i < ait_tensor_numel(a); i++) {
    dot += (double)x[i] * y[i], nx += (double)x[i] * x[i], ny += (double)y[i] * y[i];
    ma = fabs(x[i] - y[i]) > ma ? fabs(x[i] - y[i]) : ma;
    sc = fabs(y[i]) > sc ? fabs(y[i]) : sc;
  }
  if (max_rel) *max_rel = ma / sc;
  return dot / sqrt(nx * ny);
}

/* Run state s and eager on one input; cosine of the output (-1 on failure). */
static double vs_eager(qnt_state *s, const ait_graph *g, const ait_tensor *x, double *max_rel,
                       ait_tensor **keep) {
  ait_tensor *got = NULL, *want = NULL;
  const ait_tensor *in[1] = {x};
  CHECK_ERR(Q->infer(s, in, 1, &got), AIT_OK, NULL);
  CHECK_ERR(ait_eager_run(g, in, 1, &want), AIT_OK, NULL);
  double c = -1;
  if (got && want && got->rank == want->rank && !memcmp(got->dims, want->dims, sizeof got->dims))
    c = cosine(got, want, max_rel);
  if (keep)
    *keep = got;
  else
    ait_tensor_free(got);
  ait_tensor_free(want);
  return c;
}

/* ---- tests ------------------------------------------------------------- */

/* Whether int8 activations run on 7-bit weights here (QNT_L_QUAD7: AVX2
 * without VNNI, e.g. AIT_MAX_ISA=avx2 with AIT_QUANT_NO_AVXVNNI=1, or a
 * Zen 2/3 CPU): those kernels then multiply other weights than the portable
 * ones, and agree with them to `floor` only as 7-bit weights allow. */
static double agree(double floor, bool int8_act) {
  qnt_cpu c = qnt_cpu_detect();
  bool seven = int8_act && qnt_layout_for(QNT_INT8, true, c) == QNT_L_QUAD7;
  return seven ? 0.9995 : floor;
}

static void test_e4m3(void) {
  for (int b = 0; b < 256; b++) {
    if ((b & 0x7F) == 0x7F) {
      CHECK(isnan(ait_e4m3_decode((uint8_t)b)));
      continue;
    }
    float v = ait_e4m3_decode((uint8_t)b);
    CHECK(ait_e4m3_encode(v) == b || (v == 0 && (b & 0x7F) == 0));
  }
  CHECK(ait_e4m3_encode(448.0f) == 0x7E && ait_e4m3_encode(1e6f) == 0x7E);
  CHECK(ait_e4m3_encode(-1e6f) == 0xFE && ait_e4m3_encode(460.0f) == 0x7E);
  CHECK(ait_e4m3_encode(1.0625f) == 0x38); /* tie between 1 and 1.125: even */
  CHECK(ait_e4m3_encode(1.1875f) == 0x3A); /* tie between 1.125 and 1.25: even */
  CHECK(ait_e4m3_encode(ldexpf(1, -9)) == 0x01 && ait_e4m3_decode(0x01) == ldexpf(1, -9));
  CHECK(ait_e4m3_decode(0x08) == ldexpf(1, -6) && ait_e4m3_round(3.3f) == 3.25f);
}

static void test_transpose(void) {
  if (!qnt_cpu_detect().avx512) return;
  const int64_t sizes[][2] = {{16, 16}, {33, 70}, {49, 256}, {5, 3}, {128, 17}};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    int64_t R = sizes[i][0], C = sizes[i][1];
    float *src = malloc(sizeof(float) * (size_t)(R * (C + 3)));
    float *dst = malloc(sizeof(float) * (size_t)(C * (R + 5)));
    fill(src, R * (C + 3), 1.0f, (uint32_t)i);
    qnt_x86_transpose(src, R, C, C + 3, dst, R + 5);
    int bad = 0;
    for (int64_t r = 0; r < R; r++)
      for (int64_t c = 0; c < C; c++)
        bad += dst[c * (R + 5) + r] != src[r * (C + 3) + c];
    CHECK(bad == 0);
    free(src), free(dst);
  }
}

/* Dequantized weights lie within half a step of the originals, and every
 * packed layout holds the same codes. */
static void test_quantize(void) {
  enum { N = 70, K = 45 };
  static float w[N * K];
  fill(w, N * K, 1.0f, 99);
  for (int n = 0; n < N; n++)
    w[n * K + n % K] *= 8; /* a large value per row */
  struct {
    qnt_wtype t;
    qnt_gran g;
    int64_t group;
    bool sym;
  } cases[] = {{QNT_INT8, QNT_CHANNEL, 0, true},
               {QNT_INT8, QNT_TENSOR, 0, true},
               {QNT_INT8, QNT_GROUP, 16, false},
               {QNT_FP8, QNT_CHANNEL, 0, true},
               {QNT_FP8, QNT_GROUP, 32, true}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    qnt_config cfg = {.weights = cases[c].t,
                      .gran = cases[c].g,
                      .group = cases[c].group,
                      .symmetric = cases[c].sym};
    qnt_weight q;
    CHECK_ERR(qnt_weight_quantize(&cfg, w, N, K, K, 1, &q), AIT_OK, NULL);
    CHECK(q.G == (cases[c].g == QNT_GROUP ? (K + cases[c].group - 1) / cases[c].group : 1));
    int bad = 0;
    for (int n = 0; n < N; n++)
      for (int k = 0; k < K; k++) {
        float s = q.scale[n * q.G + k / q.gsize], v = qnt_weight_value(&q, n, k), x = w[n * K + k];
        float tol = cases[c].t == QNT_INT8 ? 0.5001f * s : fabsf(x) / 16 + s / 512;
        bad += fabsf(v - x) > tol;
      }
    CHECK(bad == 0);
    uint8_t *rows = malloc(N * K);
    memcpy(rows, q.codes, N * K);
    for (int l = QNT_L_PANEL; l <= QNT_L_QUAD; l++) {
      qnt_weight p = q;
      p.codes = malloc(N * K);
      memcpy(p.codes, rows, N * K);
      p.scale = malloc(sizeof(float) * (size_t)(N * q.G));
      memcpy(p.scale, q.scale, sizeof(float) * (size_t)(N * q.G));
      if (q.zero) {
        p.zero = malloc((size_t)(N * q.G));
        memcpy(p.zero, q.zero, (size_t)(N * q.G));
      }
      CHECK_ERR(qnt_weight_pack(&p, (qnt_layout)l), AIT_OK, NULL);
      int diff = 0;
      for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++)
          diff += qnt_weight_code(&p, n, k) != rows[n * K + k];
      CHECK(diff == 0 && p.layout == (qnt_layout)l);
      qnt_weight_free(&p);
    }
    free(rows);
    qnt_weight_free(&q);
  }
}

static const char *const presets[] = {"int8wo", "int8dq", "fp8wo", "fp8dq"};

static void check_configs(const ait_graph *g, const char *const *specs, int n, int expect_q,
                          int64_t batch) {
  ait_tensor *x = input(g, batch, 42);
  for (int i = 0; i < n; i++)
    for (int k = 0; k < 2; k++) {
      char spec[160];
      snprintf(spec, sizeof spec, "%s%s", specs[i],
               !k                      ? ""
               : strchr(specs[i], ':') ? ",kernels=portable"
                                       : ":kernels=portable");
      qnt_state *s = NULL;
      CHECK_ERR(build(spec, NULL, NULL, g, NULL, &s), AIT_OK, NULL);
      if (!s) continue;
      double rel = 1, c = vs_eager(s, g, x, &rel, NULL);
      if (c < 0.99 || rel > 0.1) fprintf(stderr, "%s: cosine %.6f, max rel %.4f\n", spec, c, rel);
      CHECK(c >= 0.99 && rel <= 0.1);
      CHECK(s->n_q == expect_q && s->n_quantized == expect_q);
      /* a quarter of float32 plus scales (packed panels pad small layers) */
      if (k) CHECK(s->qbytes * 3 < s->float_bytes);
      Q->destroy(s);
    }
  ait_tensor_free(x);
}

static void test_presets(const ait_graph *mlp, const ait_graph *conv) {
  char specs[4][64];
  const char *p[4];
  for (int i = 0; i < 4; i++) {
    snprintf(specs[i], sizeof specs[i], "quant:preset=%s", presets[i]);
    p[i] = specs[i];
  }
  check_configs(mlp, p, 4, 3, 5);
  check_configs(mlp, p, 4, 3, 13); /* more rows than one tile */
  check_configs(conv, p, 4, 3, 2);
  const char *def[1] = {"quant"};
  check_configs(mlp, def, 1, 3, 3);
  /* AVX-512 and portable kernels compute the same thing */
  ait_tensor *x = input(mlp, 7, 3);
  for (int i = 0; i < 4; i++) {
    qnt_state *a = NULL, *b = NULL;
    char spec[96];
    snprintf(spec, sizeof spec, "%s,kernels=portable", specs[i]);
    CHECK_ERR(build(specs[i], NULL, NULL, mlp, NULL, &a), AIT_OK, NULL);
    CHECK_ERR(build(spec, NULL, NULL, mlp, NULL, &b), AIT_OK, NULL);
    ait_tensor *ya = NULL, *yb = NULL;
    const ait_tensor *in[1] = {x};
    if (a && b && !Q->infer(a, in, 1, &ya) && !Q->infer(b, in, 1, &yb))
      CHECK(cosine(ya, yb, NULL) > agree(0.9999, !strcmp(presets[i], "int8dq")));
    ait_tensor_free(ya), ait_tensor_free(yb);
    Q->destroy(a), Q->destroy(b);
  }
  ait_tensor_free(x);
}

static void test_custom(const ait_graph *mlp, const ait_graph *conv) {
  const char *const specs[] = {
      "quant:weights=int8,granularity=group,group=32",
      "quant:weights=int8,granularity=tensor",
      "quant:symmetric=off",
      "quant:scale=percentile,percentile=99.9",
      "quant:symmetric=off,act=on",
      "quant:granularity=group,group=16,act=on",
      "quant:granularity=group,group=32,symmetric=off,act=on",
      "quant:weights=fp8,granularity=group,group=16",
      "quant:weights=fp8,granularity=group,group=32,act=on",
      "quant:weights=fp8,granularity=tensor,act=on",
  };
  int n = (int)(sizeof specs / sizeof specs[0]);
  check_configs(mlp, specs, n, 3, 9);
  check_configs(conv, specs, n, 3, 1);
  /* what the custom options resolve to */
  ait_backend_config cfg;
  qnt_config c;
  CHECK_ERR(config("quant:granularity=group,group=64,symmetric=off,act=on", NULL, NULL, &cfg),
            AIT_OK, NULL);
  CHECK_ERR(qnt_config_resolve(&cfg, &c), AIT_OK, NULL);
  CHECK(!c.preset[0] && c.weights == QNT_INT8 && c.gran == QNT_GROUP && c.group == 64);
  CHECK(!c.symmetric && c.act && c.ops == QNT_OP_ALL);
}

static void test_preflight(const ait_graph *mlp) {
  qnt_state *s = NULL;
  CHECK_ERR(build("quant:preset=mxfp8dq", NULL, NULL, mlp, NULL, &s), AIT_E_UNSUPPORTED,
            "compute capability 10.0");
  const char *msg = ait_last_error();
  CHECK(strstr(msg, "mxfp8dq") && strstr(msg, "MatMul node 'fc1'"));
  CHECK(strstr(msg, "bfloat16") && strstr(msg, "70 is not divisible by 32"));
  CHECK_ERR(build("quant:preset=nvfp4dq", NULL, NULL, mlp, NULL, &s), AIT_E_UNSUPPORTED,
            "NVFP4 support (NVIDIA compute capability 10.0");
  CHECK(strstr(ait_last_error(), "not both divisible by 16"));
  /* the checks apply to the selected nodes only: the classifier alone has
   * K = 80, divisible by 16 (not by 32) */
  CHECK_ERR(build("quant:preset=mxfp8dq", "exclude", "fc*", mlp, NULL, &s), AIT_E_UNSUPPORTED,
            "Gemm node 'classifier'");
  CHECK(!strstr(ait_last_error(), "fc1"));
  CHECK(s == NULL);
  ait_backend_config cfg;
  const char *want[][2] = {{"quant:preset=int8dq", "int8"},
                           {"quant:preset=fp8wo", "fp8"},
                           {"quant:preset=mxfp8dq", "fp8"},
                           {"quant:preset=nvfp4dq", "fp4"},
                           {"quant", "fp8"},
                           {"quant:weights=int8", "int8"}};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    CHECK_ERR(config(want[i][0], NULL, NULL, &cfg), AIT_OK, NULL);
    CHECK(!strcmp(Q->precision(&cfg), want[i][1]));
  }
}

static int filter_calls, filter_saw_matmul;
static int reject_fc2(void *user, const char *op_type, const char *name) {
  filter_calls++;
  if (!strcmp(op_type, "MatMul")) filter_saw_matmul++;
  return strcmp(name, (const char *)user) != 0;
}
static int reject_all(void *user, const char *op_type, const char *name) { return 0; }

static int count_q(const char *spec, const char *key, const char *val, const ait_graph *g,
                   const ait_build_info *info) {
  qnt_state *s = NULL;
  CHECK_ERR(build(spec, key, val, g, info, &s), AIT_OK, NULL);
  int n = s ? s->n_q : -1;
  Q->destroy(s);
  return n;
}

static void test_filter(const ait_graph *mlp) {
  CHECK(count_q("quant:preset=int8dq", "exclude", "*classif*", mlp, NULL) == 2);
  CHECK(count_q("quant:preset=int8dq", "exclude", "fc1+classifier", mlp, NULL) == 1);
  CHECK(count_q("quant:preset=int8dq,ops=Gemm", NULL, NULL, mlp, NULL) == 2);
  CHECK(count_q("quant:ops=MatMul", NULL, NULL, mlp, NULL) == 1);
  CHECK(count_q("quant:preset=fp8wo,min_weight=1000", NULL, NULL, mlp, NULL) == 2);
  ait_build_info info = {0};
  info.node_filter = reject_fc2;
  info.node_filter_user = (void *)"fc2";
  CHECK(count_q("quant:preset=int8wo", NULL, NULL, mlp, &info) == 2);
  CHECK(filter_calls == 3 && filter_saw_matmul == 1);
  /* the excluded node keeps its float op */
  qnt_state *s = NULL;
  CHECK_ERR(build("quant:preset=int8dq", NULL, NULL, mlp, &info, &s), AIT_OK, NULL);
  if (s) {
    const ait_node *fc2 = find_node(s->g, "fc2"), *fc1 = find_node(s->g, "fc1");
    /* native's fused form (Gemm + Relu), run by native's kernel */
    CHECK(fc2 && !strcmp(fc2->op_type, "FusedGemm") && fc2->op != NULL);
    CHECK(fc1 && !strcmp(fc1->op_type, "QMatMul") && !strcmp(fc1->domain, QNT_DOMAIN));
    Q->destroy(s);
  }
  info.node_filter = reject_all;
  CHECK_ERR(build("quant:preset=int8dq", NULL, NULL, mlp, &info, &s), AIT_E_UNSUPPORTED,
            "no node to quantize");
  CHECK_ERR(build("quant:preset=int8dq,min_weight=100000", NULL, NULL, mlp, NULL, &s),
            AIT_E_UNSUPPORTED, "no node to quantize");
}

static void test_config_errors(const ait_graph *mlp) {
  qnt_state *s = NULL;
  CHECK_ERR(build("quant:preset=int8wo,granularity=group", NULL, NULL, mlp, NULL, &s),
            AIT_E_INVALID_ARG, "preset=int8wo and the custom option granularity=group together");
  CHECK_ERR(build("quant:act=on,preset=fp8dq", NULL, NULL, mlp, NULL, &s), AIT_E_INVALID_ARG,
            "a preset fixes every quantization setting");
  CHECK_ERR(build("quant:group=64", NULL, NULL, mlp, NULL, &s), AIT_E_INVALID_ARG,
            "group=64 needs granularity=group");
  CHECK_ERR(build("quant:granularity=group,group=24", NULL, NULL, mlp, NULL, &s), AIT_E_INVALID_ARG,
            "multiple of 16");
  CHECK_ERR(build("quant:weights=fp8,symmetric=off", NULL, NULL, mlp, NULL, &s), AIT_E_INVALID_ARG,
            "needs int8 weights");
  CHECK_ERR(build("quant:percentile=99", NULL, NULL, mlp, NULL, &s), AIT_E_INVALID_ARG,
            "needs scale=percentile");
  CHECK_ERR(build("quant:preset=int4", NULL, NULL, mlp, NULL, &s), AIT_E_INVALID_ARG, "not one of");
  CHECK_ERR(build("quant:ops=Softmax", NULL, NULL, mlp, NULL, &s), AIT_E_INVALID_ARG, NULL);
  CHECK_ERR(build("quant:preset=int8dq,attention=fp32", NULL, NULL, mlp, NULL, &s),
            AIT_E_INVALID_ARG, "custom option attention=fp32");
  CHECK(s == NULL);
  ait_backend_config cfg;
  CHECK_ERR(config("quant:preset=int8wo,scale=percentile", NULL, NULL, &cfg), AIT_OK, NULL);
  CHECK(!strcmp(Q->precision(&cfg), "int8")); /* no crash on a bad combination */
}

static char tmpdir[64];

static void write_text(const char *name, const char *text, char *path, size_t n) {
  snprintf(path, n, "%s/%s", tmpdir, name);
  FILE *f = fopen(path, "w");
  if (!f) return;
  fputs(text, f);
  fclose(f);
}

static void test_json(const ait_graph *mlp) {
  char path[128];
  qnt_state *s = NULL;
  write_text("user.json", "{\"quantization\": \"int8dq\"}", path, sizeof path);
  CHECK_ERR(build("quant", "config", path, mlp, NULL, &s), AIT_OK, NULL);
  if (s) {
    CHECK(s->cfg.weights == QNT_INT8 && s->cfg.act && !strcmp(s->cfg.preset, "int8dq"));
    CHECK(s->n_q == 3 && s->cfg.attn_bf16); /* the dq presets: bf16 attention products */
    Q->destroy(s);
  }
  write_text("full.json",
             "{\"quantization\": {\"weights\": \"fp8\", \"granularity\": \"group\", "
             "\"group_size\": 32, \"activations\": \"dynamic\", \"attention\": \"bf16\"}, "
             "\"filter\": {\"exclude\": [\"classifier\"], \"ops\": [\"MatMul\", \"Gemm\"]}}",
             path, sizeof path);
  CHECK_ERR(build("quant", "config", path, mlp, NULL, &s), AIT_OK, NULL);
  if (s) {
    CHECK(s->cfg.weights == QNT_FP8 && s->cfg.gran == QNT_GROUP && s->cfg.group == 32);
    CHECK(s->cfg.act && s->n_q == 2 && !s->cfg.preset[0] && s->cfg.attn_bf16);
    /* the full form written back parses to the same configuration */
    char *json = qnt_config_to_json(&s->cfg);
    qnt_config back = s->cfg;
    bool has_filter = false;
    CHECK_ERR(qnt_config_parse_json(json, "round trip", &back, &has_filter), AIT_OK, NULL);
    CHECK(has_filter && qnt_config_same_quant(&back, &s->cfg) && back.ops == s->cfg.ops);
    CHECK(back.n_exclude == 1 && !strcmp(back.exclude[0], "classifier"));
    CHECK(json && strstr(json, "\"attention\":\t\"bf16\""));
    back.attn_bf16 = false; /* the attention products are part of the quantization */
    CHECK(!qnt_config_same_quant(&back, &s->cfg));
    free(json);
    Q->destroy(s);
  }
  /* filter options on the backend string override the file's */
  CHECK_ERR(build("quant:ops=MatMul", "config", path, mlp, NULL, &s), AIT_OK, NULL);
  if (s) CHECK(s->n_q == 1);
  Q->destroy(s);
  s = NULL;
  CHECK_ERR(build("quant:preset=int8wo", "config", path, mlp, NULL, &s), AIT_E_INVALID_ARG,
            "gives the quantization; do not also set preset=int8wo");
  CHECK_ERR(build("quant:act=on", "config", path, mlp, NULL, &s), AIT_E_INVALID_ARG,
            "do not also set act=on");
  const char *bad[][2] = {
      {"{\"quantization\": ", "is not valid JSON"},
      {"{\"quantization\": \"int4\"}", "unknown preset"},
      {"{\"quantisation\": \"int8dq\"}", "unknown key quantisation"},
      {"{\"preset\": \"int8dq\", \"quantization\": {\"weights\": \"int8\"}}",
       "would mix a preset with a custom configuration"},
      {"{\"quantization\": {\"weights\": \"int4\"}}", "weights must be int8, fp8"},
      {"{\"quantization\": {\"granularity\": \"row\"}}", "granularity must be"},
      {"{\"quantization\": {\"attention\": \"int8\"}}", "attention must be fp32 or bf16"},
      {"{\"quantization\": {\"weights\": \"fp8\", \"symmetric\": false}}", "needs int8 weights"},
      {"{\"quantization\": \"int8wo\", \"filter\": {\"ops\": [\"Relu\"]}}", "not one of MatMul"},
      {"[1, 2]", "must be a JSON object"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    write_text("bad.json", bad[i][0], path, sizeof path);
    CHECK_ERR(build("quant", "config", path, mlp, NULL, &s), AIT_E_INVALID_ARG, bad[i][1]);
  }
  CHECK_ERR(build("quant", "config", "/nonexistent/q.json", mlp, NULL, &s), AIT_E_IO,
            "quant: config=/nonexistent/q.json");
  CHECK(s == NULL);
}

static void corrupt(const char *path, long at, int truncate_to) {
  FILE *f = fopen(path, "r+b");
  if (!f) return;
  if (truncate_to >= 0) {
    fclose(f);
    CHECK(truncate(path, truncate_to) == 0);
    return;
  }
  fseek(f, at, SEEK_SET);
  int c = fgetc(f);
  fseek(f, at, SEEK_SET);
  fputc(c ^ 0x5A, f);
  fclose(f);
}

static void test_save_load(const ait_graph *mlp, const ait_graph *conv) {
  const char *specs[] = {"quant:preset=int8dq", "quant:preset=fp8wo",
                         "quant:symmetric=off,act=on,granularity=group,group=32",
                         "quant:weights=fp8,act=on"};
  /* the saved weights against the portable kernels, on the activation codes
   * those use too (8-bit: the vpmaddubsw tiles' 7-bit rows are checked in
   * avx2_product) */
  setenv("AIT_QUANT_NO_A7", "1", 1);
  for (int i = 0; i < 4; i++)
    for (int which = 0; which < 2; which++) {
      const ait_graph *g = which ? conv : mlp;
      char dir[128];
      snprintf(dir, sizeof dir, "%s/state%d%d", tmpdir, i, which);
      mkdir(dir, 0755);
      ait_backend_config cfg;
      CHECK_ERR(config(specs[i], NULL, NULL, &cfg), AIT_OK, NULL);
      qnt_state *a = NULL, *b = NULL;
      CHECK_ERR(Q->build(&cfg, g, NULL, (void **)&a), AIT_OK, NULL);
      if (!a) continue;
      ait_tensor *x = input(g, 3, 7), *ya = NULL, *yb = NULL;
      const ait_tensor *in[1] = {x};
      CHECK_ERR(Q->infer(a, in, 1, &ya), AIT_OK, NULL);
      CHECK_ERR(Q->save(a, dir), AIT_OK, NULL);
      CHECK_ERR(Q->load(&cfg, g, dir, (void **)&b), AIT_OK, NULL);
      if (b) {
        CHECK(b->n_quantized == 0 && b->n_q == a->n_q); /* nothing quantized again */
        CHECK_ERR(Q->infer(b, in, 1, &yb), AIT_OK, NULL);
        CHECK(ya && yb && !memcmp(ya->data, yb->data, ait_tensor_nbytes(ya)));
      }
      ait_tensor_free(yb);
      Q->destroy(b);
      b = NULL;
      /* the same saved weights on the portable kernels */
      char spec[160];
      snprintf(spec, sizeof spec, "%s,kernels=portable", specs[i]);
      ait_backend_config port;
      CHECK_ERR(config(spec, NULL, NULL, &port), AIT_OK, NULL);
      CHECK_ERR(Q->load(&port, g, dir, (void **)&b), AIT_OK, NULL);
      yb = NULL;
      if (b && !Q->infer(b, in, 1, &yb)) CHECK(cosine(ya, yb, NULL) > 0.9999);
      ait_tensor_free(yb);
      Q->destroy(b);
      ait_tensor_free(ya);
      ait_tensor_free(x);
      Q->destroy(a);
    }
  unsetenv("AIT_QUANT_NO_A7");
  /* a configuration that disagrees with the saved one, and damaged files */
  char dir[128], wpath[160], cpath[160];
  snprintf(dir, sizeof dir, "%s/state00", tmpdir);
  snprintf(wpath, sizeof wpath, "%s/quant_weights.bin", dir);
  snprintf(cpath, sizeof cpath, "%s/quant_config.json", dir);
  ait_backend_config cfg;
  void *b = NULL;
  CHECK_ERR(config("quant:preset=fp8wo", NULL, NULL, &cfg), AIT_OK, NULL);
  CHECK_ERR(Q->load(&cfg, mlp, dir, &b), AIT_E_INVALID_ARG, "quantized as int8dq");
  CHECK_ERR(config("quant:preset=int8dq", NULL, NULL, &cfg), AIT_OK, NULL);
  CHECK_ERR(Q->load(&cfg, conv, dir, &b), AIT_E_INVALID_MODEL, "not for this model");
  struct stat st;
  CHECK(stat(wpath, &st) == 0);
  corrupt(wpath, (long)st.st_size / 2, -1);
  CHECK_ERR(Q->load(&cfg, mlp, dir, &b), AIT_E_PARSE, "corrupted (checksum mismatch)");
  corrupt(wpath, 0, 100);
  CHECK_ERR(Q->load(&cfg, mlp, dir, &b), AIT_E_PARSE, "corrupted");
  corrupt(wpath, 0, 3);
  CHECK_ERR(Q->load(&cfg, mlp, dir, &b), AIT_E_PARSE, "not an aitune saved-state file");
  /* the format before the shared one, another backend's state, a section missing */
  static const char old_file[24] = "AITQNTW\0\2\0\0\0\1\0\0\0";
  CHECK_ERR(ait_write_file_atomic(wpath, old_file, sizeof old_file), AIT_OK, NULL);
  CHECK_ERR(Q->load(&cfg, mlp, dir, &b), AIT_E_PARSE, "older aitune format ('AITQNTW')");
  ait_state_out o;
  ait_state_out_init(&o, "onednn", 3);
  ait_state_out_section(&o, "head");
  CHECK_ERR(ait_state_out_save(&o, wpath), AIT_OK, NULL);
  CHECK_ERR(Q->load(&cfg, mlp, dir, &b), AIT_E_PARSE,
            "holds the state of 'onednn', not of 'quant'");
  ait_state_out_init(&o, "quant", 3); /* quant_io.c's QNT_VERSION */
  ait_state_out_section(&o, "nodes");
  CHECK_ERR(ait_state_out_save(&o, wpath), AIT_OK, NULL);
  CHECK_ERR(Q->load(&cfg, mlp, dir, &b), AIT_E_PARSE, "no section 'head'");
  CHECK(b == NULL);
  write_text("state00/quant_config.json", "{\"quantization\": 5}", cpath, sizeof cpath);
  CHECK_ERR(Q->load(&cfg, mlp, dir, &b), AIT_E_INVALID_ARG, "preset name or an object");
  CHECK_ERR(Q->load(&cfg, mlp, "/nonexistent/dir", &b), AIT_E_IO, NULL);
  CHECK(b == NULL);
}

/* int8dq's activation outliers: a row with a few large elements keeps its
 * small ones, which an absmax scale would round to a few levels; the
 * AVX-512 and portable kernels agree; a row with more large elements than
 * the cap falls back to absmax. */
static void test_outliers(const ait_graph *mlp) {
  ait_tensor *x = input(mlp, 7, 11);
  if (!x) return;
  float *d = x->data;
  for (int m = 0; m < 6; m++)
    d[m * K1 + (m * 13) % K1] = m % 2 ? 60.0f : -45.0f;
  for (int k = 0; k < 20; k++) /* row 6: more large values than the cap */
    d[6 * K1 + 3 * k] = 30.0f;
  const char *specs[] = {"quant:preset=int8dq", "quant:preset=int8dq,kernels=portable",
                         "quant:weights=int8,act=on", "quant:weights=int8,act=on,outliers=4"};
  double c[4] = {0}, rel[4] = {1, 1, 1, 1};
  ait_tensor *y[4] = {NULL};
  for (int i = 0; i < 4; i++) {
    qnt_state *s = NULL;
    CHECK_ERR(build(specs[i], NULL, NULL, mlp, NULL, &s), AIT_OK, NULL);
    if (!s) continue;
    CHECK((i == 2) == (s->cfg.outliers == 0));
    c[i] = vs_eager(s, mlp, x, &rel[i], &y[i]);
    Q->destroy(s);
  }
  fprintf(stderr, "outliers: cosine %.6f / %.6f (portable) / %.6f (absmax), max rel %.4f / %.4f\n",
          c[0], c[1], c[2], rel[0], rel[2]);
  /* with 7-bit weights their error sets the largest deviation */
  CHECK(c[0] > c[2] && (rel[0] < rel[2] || (agree(1, true) < 1 && rel[0] <= rel[2])));
  CHECK(c[0] > 0.999);
  if (y[0] && y[1]) CHECK(cosine(y[0], y[1], NULL) > agree(0.99999, true));
  if (y[0] && y[3]) CHECK(cosine(y[0], y[3], NULL) == 1.0 || cosine(y[0], y[3], NULL) > 0.9999999);
  for (int i = 0; i < 4; i++)
    ait_tensor_free(y[i]);
  ait_tensor_free(x);
  /* the option needs int8 activations */
  qnt_state *s = NULL;
  CHECK_ERR(build("quant:weights=int8,outliers=4", NULL, NULL, mlp, NULL, &s), AIT_E_INVALID_ARG,
            "act=on with int8 weights");
  CHECK_ERR(build("quant:weights=fp8,act=on,outliers=4", NULL, NULL, mlp, NULL, &s),
            AIT_E_INVALID_ARG, "activation outliers");
  CHECK_ERR(build("quant:preset=int8dq,outliers=3", NULL, NULL, mlp, NULL, &s), AIT_E_INVALID_ARG,
            "preset=int8dq");
  /* the JSON forms carry it */
  qnt_config cf, back;
  ait_backend_config cfg;
  CHECK_ERR(config("quant:preset=int8dq", NULL, NULL, &cfg), AIT_OK, NULL);
  CHECK_ERR(qnt_config_resolve(&cfg, &cf), AIT_OK, NULL);
  char *json = qnt_config_to_json(&cf);
  bool has_filter = false;
  CHECK(json && strstr(json, "\"activation_outliers\""));
  memset(&back, 0, sizeof back);
  if (json) CHECK_ERR(qnt_config_parse_json(json, "test", &back, &has_filter), AIT_OK, NULL);
  CHECK(back.outliers == cf.outliers && qnt_config_same_quant(&back, &cf));
  free(json);
}

/* The residual block with outliers in x: the AVX-512 tiles (bias, residual
 * and outlier corrections added in registers, per channel and per group)
 * agree with the portable kernels and with the float model. */
static void residual_case(const ait_graph *g, int rows, bool many);

static void test_residual(void) {
  ait_model *m = residual_model();
  if (!m) return;
  residual_case(m->graph, 23, false); /* 23 rows: a partial row tile */
  /* 80 rows with an outlier each on channel r % RD: 72 distinct channels,
   * more than the QNT_MAX_SLOTS float rows, so some take the slow path */
  residual_case(m->graph, 80, true);
  ait_model_free(m);
}

static void residual_case(const ait_graph *g, int rows, bool many) {
  ait_tensor *x = input(g, rows, 41);
  float *d = x ? x->data : NULL;
  for (int r = 0; d && r < rows; r += many ? 1 : 2)
    d[r * RD + (many ? r : r * 7) % RD] = r % 4 ? 40.0f : -55.0f;
  const char *specs[] = {"quant:preset=int8dq", "quant:preset=int8dq,kernels=portable",
                         "quant:weights=int8,act=on,outliers=4,granularity=group,group=32",
                         "quant:weights=int8,act=on,outliers=4,granularity=group,group=32,"
                         "kernels=portable"};
  ait_tensor *y[4] = {NULL};
  for (int i = 0; x && i < 4; i++) {
    qnt_state *s = NULL;
    CHECK_ERR(build(specs[i], NULL, NULL, g, NULL, &s), AIT_OK, NULL);
    if (!s) continue;
    CHECK(s->n_q == 2);
    double rel = 1, c = vs_eager(s, g, x, &rel, &y[i]);
    fprintf(stderr, "residual (%d rows) %s: cosine %.6f, max rel %.4f\n", rows, specs[i], c, rel);
    CHECK(c > 0.999);
    Q->destroy(s);
  }
  for (int i = 0; i < 4; i += 2)
    if (y[i] && y[i + 1]) CHECK(cosine(y[i], y[i + 1], NULL) > agree(0.99999, true));
  for (int i = 0; i < 4; i++)
    ait_tensor_free(y[i]);
  ait_tensor_free(x);
}

/* Products of one input share its int8 quantization within a run, never
 * across runs: a second input gives its own (correct) result, and the
 * outputs equal the portable kernels', which quantize per product. */
static void test_shared(void) {
  ait_model *m = shared_model();
  if (!m) return;
  qnt_state *s = NULL, *port = NULL;
  CHECK_ERR(build("quant:preset=int8dq", NULL, NULL, m->graph, NULL, &s), AIT_OK, NULL);
  CHECK_ERR(build("quant:preset=int8dq,kernels=portable", NULL, NULL, m->graph, NULL, &port),
            AIT_OK, NULL);
  if (s && port) {
    bool u8 = s->q[0].w.layout == QNT_L_QUAD || s->q[0].w.layout == QNT_L_QUAD7;
    CHECK(s->n_q == 2 && s->n_bufs == (u8 ? 1 : 0) && port->n_bufs == 0);
    for (int k = 0; k < 3; k++) {
      ait_tensor *x = input(m->graph, 9 + 4 * (k == 2), 61 + (uint32_t)k), *y = NULL, *yp = NULL;
      double rel = 1, c = vs_eager(s, m->graph, x, &rel, &y);
      vs_eager(port, m->graph, x, NULL, &yp);
      CHECK(c > 0.999 && y && yp && cosine(y, yp, NULL) > agree(0.99999, true));
      ait_tensor_free(x);
      ait_tensor_free(y);
      ait_tensor_free(yp);
    }
  }
  Q->destroy(s);
  Q->destroy(port);
  ait_model_free(m);
}

/* A weight behind a Slice and a Transpose (bounds from a Shape) is folded
 * and quantized, at every level, and agrees with eager. */
static void test_view_weight(void) {
  ait_model *m = view_model();
  if (!m) return;
  const char *specs[] = {"quant:preset=int8dq", "quant:preset=int8dq,kernels=portable",
                         "quant:preset=int8wo"};
  ait_tensor *x = input(m->graph, 11, 72);
  for (int i = 0; x && i < 3; i++) {
    qnt_state *s = NULL;
    CHECK_ERR(build(specs[i], NULL, NULL, m->graph, NULL, &s), AIT_OK, NULL);
    if (!s) continue;
    CHECK(s->n_q == 1);
    double rel = 1, c = vs_eager(s, m->graph, x, &rel, NULL);
    if (c < 0.999) fprintf(stderr, "view weight %s: cosine %.6f\n", specs[i], c);
    CHECK(c > 0.999);
    Q->destroy(s);
  }
  ait_tensor_free(x);
  ait_model_free(m);
}

/* Embedding tables: quantized per row by default (Gather is in the default
 * ops), looked up exactly as the float table would be, saved and loaded;
 * ops= without Gather keeps the table float; a bad index is an error. */
static void test_gather(void) {
  ait_model *m = embed_model();
  if (!m) return;
  const ait_graph *g = m->graph;
  const int64_t d[2] = {3, EL};
  ait_tensor *ids = ait_tensor_new(AIT_INT64, 2, d);
  for (int i = 0; ids && i < 3 * EL; i++)
    ((int64_t *)ids->data)[i] = (i * 17) % EV - (i == 4 ? EV : 0); /* one negative index */
  const char *specs[] = {"quant:preset=int8wo", "quant:preset=int8dq", "quant:preset=fp8wo",
                         "quant:preset=int8dq,kernels=portable"};
  for (int i = 0; i < 4 && ids; i++) {
    qnt_state *s = NULL;
    CHECK_ERR(build(specs[i], NULL, NULL, g, NULL, &s), AIT_OK, NULL);
    if (!s) continue;
    CHECK(s->n_q == 2 && s->q[0].site.kind == QNT_K_GATHER && s->q[0].w.N == EV);
    double rel = 1, c = vs_eager(s, g, ids, &rel, NULL);
    if (c < 0.999) fprintf(stderr, "%s on the embedding model: cosine %.6f\n", specs[i], c);
    CHECK(c >= 0.999 && rel < 0.05);
    /* a quarter of the float table, plus one scale per row */
    CHECK(qnt_weight_bytes(&s->q[0].w) * 3 < sizeof embed_w);
    if (i == 1) {
      char dir[128];
      snprintf(dir, sizeof dir, "%s/gather", tmpdir);
      mkdir(dir, 0755);
      ait_backend_config cfg;
      void *b = NULL;
      ait_tensor *ya = NULL, *yb = NULL;
      const ait_tensor *in[1] = {ids};
      CHECK_ERR(config(specs[i], NULL, NULL, &cfg), AIT_OK, NULL);
      CHECK_ERR(Q->save(s, dir), AIT_OK, NULL);
      CHECK_ERR(Q->load(&cfg, g, dir, &b), AIT_OK, NULL);
      if (b && !Q->infer(s, in, 1, &ya) && !Q->infer(b, in, 1, &yb))
        CHECK(!memcmp(ya->data, yb->data, ait_tensor_nbytes(ya)));
      ait_tensor_free(ya), ait_tensor_free(yb);
      Q->destroy(b);
      /* an index outside the table */
      ((int64_t *)ids->data)[3] = EV;
      ya = (ait_tensor *)1;
      CHECK_ERR(Q->infer(s, in, 1, &ya), AIT_E_INVALID_ARG, "index 50 is out of range for 50 rows");
      CHECK(ya == NULL);
      ((int64_t *)ids->data)[3] = 1;
    }
    Q->destroy(s);
  }
  CHECK(count_q("quant:preset=int8dq,ops=MatMul", NULL, NULL, g, NULL) == 1);
  CHECK(count_q("quant:preset=int8wo,ops=Gather", NULL, NULL, g, NULL) == 1);
  CHECK(count_q("quant:preset=int8wo", "exclude", "embed", g, NULL) == 1);
  qnt_state *s = NULL;
  CHECK_ERR(build("quant:ops=Gather+Softmax", NULL, NULL, g, NULL, &s), AIT_E_INVALID_ARG,
            "'Softmax' is not one of MatMul, Gemm, Conv, Gather");
  ait_tensor_free(ids);
  ait_model_free(m);
}

static void test_bad_input(const ait_graph *mlp) {
  qnt_state *s = NULL;
  CHECK_ERR(build("quant:preset=int8dq", NULL, NULL, mlp, NULL, &s), AIT_OK, NULL);
  if (!s) return;
  const int64_t d[2] = {2, K1 + 1};
  ait_tensor *x = ait_tensor_new(AIT_FLOAT32, 2, d), *y = (ait_tensor *)1;
  const ait_tensor *in[1] = {x};
  CHECK_ERR(Q->infer(s, in, 1, &y), AIT_E_SHAPE, "A's last dimension must be 70");
  CHECK(strstr(ait_last_error(), "QMatMul node 'fc1'"));
  CHECK(y == NULL);
  CHECK_ERR(Q->infer(s, in, 0, &y), AIT_E_INVALID_ARG, "takes 1 inputs");
  /* deactivate frees what the executor built around the weights; the next
   * run builds it again and gives the same bytes */
  const int64_t dg[2] = {3, K1};
  ait_tensor *xg = ait_tensor_new(AIT_FLOAT32, 2, dg), *y1 = NULL, *y2 = NULL;
  if (xg) fill(xg->data, 3 * K1, 1.0f, 77);
  const ait_tensor *ing[1] = {xg};
  CHECK_ERR(Q->infer(s, ing, 1, &y1), AIT_OK, NULL);
  CHECK_ERR(Q->deactivate(s), AIT_OK, NULL);
  CHECK_ERR(Q->activate(s), AIT_OK, NULL);
  CHECK_ERR(Q->infer(s, ing, 1, &y2), AIT_OK, NULL);
  CHECK(y1 && y2 && !memcmp(y1->data, y2->data, ait_tensor_nbytes(y1)));
  ait_tensor_free(y1), ait_tensor_free(y2), ait_tensor_free(xg);
  char why[128];
  CHECK(Q->supports(NULL, mlp, &mlp->nodes[0], why, sizeof why));
  ait_tensor_free(x);
  Q->destroy(s);
}

static int tune_calls;
static int count_filter(void *user, const char *op_type, const char *name) {
  tune_calls++;
  return strcmp(name, "classifier") != 0;
}

/* The public API: the tuner passes ait_tune_options.node_filter to build. */
static void test_tune(const uint8_t *bytes, size_t n) {
  char path[128];
  snprintf(path, sizeof path, "%s/mlp.onnx", tmpdir);
  FILE *f = fopen(path, "wb");
  if (!f) return;
  fwrite(bytes, 1, n, f);
  fclose(f);
  ait_module *m = NULL;
  CHECK_ERR(ait_module_create(path, "mlp", &m), AIT_OK, NULL);
  if (!m) return;
  const char *cands[1] = {"quant:preset=int8dq"};
  ait_tune_options o;
  ait_tune_options_init(&o);
  o.strategy = AIT_STRATEGY_ONE_BACKEND;
  o.backends = cands;
  o.n_backends = 1;
  o.batch_sizes = (const int[]){4};
  o.n_batch_sizes = 1;
  o.perf_validation = 0;
  o.min_runs = o.max_runs = 3;
  o.cv_target = 0;
  o.time_budget_s = 0.2;
  o.cache_dir = "";
  o.node_filter = count_filter;
  CHECK_ERR(ait_module_tune(m, &o), AIT_OK, NULL);
  CHECK(tune_calls >= 3);
  char *json = NULL;
  CHECK_ERR(ait_module_report_json(m, &json), AIT_OK, NULL);
  CHECK(json && strstr(json, "quant"));
  if (json && !strstr(json, "\"selected\"")) fprintf(stderr, "report: %s\n", json);
  ait_free(json);
  ait_module_free(m);
}

/* ---- AVX2 kernels (quant_avx2.c) ---------------------------------------- */

/* One product through the AVX2 tiles of layout qnt_layout_for() gives on
 * an AVX2 CPU with or without AVX-VNNI, against the portable kernel on the
 * same codes (the canonical rows of the packed weight: for QUAD7 its 7-bit
 * codes) and against the float product. With AVX-512 VNNI the AVX-VNNI
 * tile must match the zmm one too. */
typedef struct avx2_case {
  qnt_wtype t;
  bool act, vnni;
  qnt_gran gran;
  int64_t group;
  bool sym;
  float outliers;
  bool w7;  /* weights quantized straight to 7 bits (what build does for QUAD7) */
  bool sat; /* activations and weights at the ends of their ranges: every
             * vpmaddubsw pair at 2 * 255 * 64, the most its int16 holds */
  bool pos; /* one-sided activations (as after GELU), for QUAD7's 7-bit
             * rows (with sat: codes 127, four products 4 * 127 * 64) */
} avx2_case;

/* What QUAD7 gives on 7-bit rows (qnt_avx2_quant_rows_a7's contract, in
 * double): false when some row is not finite (the product then takes the
 * 8-bit codes). */
static bool a7_reference(const qnt_weight *q, const float *x, int64_t M, int64_t K, int64_t ldx,
                         const float *bias, float outliers, float *y) {
  for (int64_t m = 0; m < M; m++) {
    const float *xr = x + m * ldx;
    float mn = INFINITY, mx = -INFINITY;
    double sumsq = 0;
    for (int64_t k = 0; k < K; k++)
      mn = fminf(mn, xr[k]), mx = fmaxf(mx, xr[k]), sumsq += (double)xr[k] * xr[k];
    float amax = fmaxf(-mn, mx), t = amax;
    if (outliers > 0 && (t = qnt_row_threshold(amax, sumsq, K, outliers)) < amax) {
      int above = 0;
      for (int64_t k = 0; k < K; k++)
        above += fabsf(xr[k]) > t;
      if (above > QNT_MAX_OUTLIERS) t = amax;
    }
    if (!(amax < 3.0e38f)) return false;
    float l = fmaxf(mn, -t), h = fminf(mx, t);
    float s = (h - l) / 127.0f;
    if (!(s > 0)) s = 1.0f;
    for (int64_t n = 0; n < q->N; n++) {
      double acc = bias[n];
      for (int64_t k = 0; k < K; k++) {
        float v = xr[k], u = fminf(fmaxf(rintf((v - l) / s), 0.0f), 127.0f);
        double wv = qnt_weight_value(q, n, k);
        acc += ((double)l + (double)s * u) * wv;
        if (fabsf(v) > t) acc += (double)(v - (v > h ? h : l)) * wv; /* an outlier */
      }
      y[m * q->N + n] = (float)acc;
    }
  }
  return true;
}

static void avx2_product(const avx2_case *c, int64_t M, int64_t K, int64_t N, uint32_t seed) {
  float *w = malloc(sizeof(float) * (size_t)(N * K)), *bias = malloc(sizeof(float) * (size_t)N);
  int64_t ldx = K + 3;
  float *x = malloc(sizeof(float) * (size_t)(M * ldx));
  float *ya = malloc(sizeof(float) * (size_t)(M * N)),
        *yr = malloc(sizeof(float) * (size_t)(M * N));
  float *yz = malloc(sizeof(float) * (size_t)(M * N)),
        *yf = malloc(sizeof(float) * (size_t)(M * N));
  fill(w, N * K, 0.2f, seed), fill(bias, N, 0.1f, seed + 1), fill(x, M * ldx, 1.0f, seed + 2);
  for (int64_t m = 0; c->outliers > 0 && m < M; m += 2) /* far outliers, on a few channels */
    x[m * ldx + (m * 7) % K] = m % 4 ? 25.0f : -30.0f;
  for (int64_t i = 0; c->sat && i < M * ldx; i++) /* codes 127 (u8 255), a row of each sign */
    x[i] = (i / ldx) % 3 ? 1.0f : -1.0f;
  for (int64_t i = 0; c->sat && i < N * K; i++) /* codes +-64, one sign a channel */
    w[i] = (i / K) % 2 ? 0.3f : -0.3f;
  for (int64_t i = 0; c->pos && i < M * ldx; i++) /* min -0.05, outliers above */
    x[i] = c->sat ? (i % ldx ? 1.0f : 0.0f) : fabsf(x[i]) - 0.05f;
  for (int64_t m = 0; c->pos && c->outliers > 0 && m < M; m += 2)
    x[m * ldx + (m * 7) % K] = m % 4 ? 25.0f : 30.0f;
  qnt_config cfg = {
      .weights = c->t, .gran = c->gran, .group = c->group, .symmetric = c->sym, .w7 = c->w7};
  qnt_weight q, ref;
  CHECK_ERR(qnt_weight_quantize(&cfg, w, N, K, K, 1, &q), AIT_OK, NULL);
  qnt_cpu cpu = {.avx2 = true, .avxvnni = c->vnni};
  qnt_layout l = qnt_layout_for(c->t, c->act, cpu);
  CHECK(l == (!c->act           ? QNT_L_PANEL
              : c->t == QNT_FP8 ? QNT_L_PANEL
              : c->vnni         ? QNT_L_QUAD
                                : QNT_L_QUAD7));
  /* a second packing for the zmm tiles, from the same rows */
  qnt_weight z = q;
  bool zmm =
      qnt_cpu_detect().avx512 && (l != QNT_L_QUAD || qnt_cpu_detect().vnni) && l != QNT_L_QUAD7;
  if (zmm) {
    z.codes = malloc(q.n_codes), z.scale = malloc(sizeof(float) * (size_t)(N * q.G));
    z.zero = q.zero ? malloc((size_t)(N * q.G)) : NULL;
    memcpy(z.codes, q.codes, q.n_codes),
        memcpy(z.scale, q.scale, sizeof(float) * (size_t)(N * q.G));
    if (q.zero) memcpy(z.zero, q.zero, (size_t)(N * q.G));
    CHECK_ERR(qnt_weight_pack(&z, l), AIT_OK, NULL);
  }
  CHECK_ERR(qnt_weight_pack(&q, l), AIT_OK, NULL);
  q.ymm = true;
  /* the portable reference on the packed weight's own codes and scales */
  ref = q;
  ref.layout = QNT_L_ROWS, ref.ymm = false;
  ref.pscale = ref.pbias = NULL, ref.pwsum = NULL, ref.pzero = NULL;
  ref.n_codes = (size_t)(N * K);
  ref.codes = malloc(ref.n_codes), ref.scale = malloc(sizeof(float) * (size_t)(N * q.G));
  ref.zero = q.zero ? malloc((size_t)(N * q.G)) : NULL;
  memcpy(ref.scale, q.scale, sizeof(float) * (size_t)(N * q.G));
  if (q.zero) memcpy(ref.zero, q.zero, (size_t)(N * q.G));
  for (int64_t n = 0; n < N; n++)
    for (int64_t k = 0; k < K; k++)
      ref.codes[n * K + k] = qnt_weight_code(&q, n, k);
  /* QUAD7: 7-bit rows (ya7), checked against their own reference (y7);
   * the 8-bit codes (AIT_QUANT_NO_A7) against the portable kernel, as any
   * other layout */
  float *ya7 = malloc(sizeof(float) * (size_t)(M * N)),
        *y7 = malloc(sizeof(float) * (size_t)(M * N));
  bool a7 = l == QNT_L_QUAD7 && a7_reference(&q, x, M, K, ldx, bias, c->outliers, y7);
  CHECK(l != QNT_L_QUAD7 || a7 == (M > 0));
  qnt_mm p = {&q, c->act, x, M, ldx, ya7, N, 0, N, bias, c->outliers, NULL, NULL, NULL, 0};
  CHECK_ERR(qnt_matmul(&p, NULL), AIT_OK, NULL);
  setenv("AIT_QUANT_NO_A7", "1", 1);
  p.y = ya;
  CHECK_ERR(qnt_matmul(&p, NULL), AIT_OK, NULL);
  unsetenv("AIT_QUANT_NO_A7");
  double d7 = 0;
  for (int64_t i = 0; i < M * N; i++) /* without 7-bit rows: the same path */
    d7 = fmax(d7, fabs(ya7[i] - (a7 ? y7[i] : ya[i])));
  p.w = &ref, p.y = yr;
  CHECK_ERR(qnt_matmul(&p, NULL), AIT_OK, NULL);
  if (zmm) {
    p.w = &z, p.y = yz;
    CHECK_ERR(qnt_matmul(&p, NULL), AIT_OK, NULL);
  }
  /* the float product with the original weights */
  for (int64_t m = 0; m < M; m++)
    for (int64_t n = 0; n < N; n++) {
      double s = bias[n];
      for (int64_t k = 0; k < K; k++)
        s += (double)x[m * ldx + k] * w[n * K + k];
      yf[m * N + n] = (float)s;
    }
  double ymax = 0, dr = 0, dz = 0, dot = 0, na = 0, nf = 0;
  for (int64_t i = 0; i < M * N; i++) {
    ymax = fmax(ymax, fabs(yr[i]));
    dr = fmax(dr, fabs(ya[i] - yr[i]));
    if (zmm) dz = fmax(dz, fabs(ya[i] - yz[i]));
    dot += (double)ya7[i] * yf[i], na += (double)ya7[i] * ya7[i], nf += (double)yf[i] * yf[i];
  }
  double cs = dot / sqrt(na * nf + 1e-30);
  /* int8 activations: a code may round the other way where x * (1/s) and
   * x / s differ (the vector paths multiply); e4m3 activations likewise */
  double tol = (c->act ? 2e-3 : 2e-5) * (ymax + 1);
  /* e4m3 on both sides loses more on short rows (K = 8: 0.9989) */
  double floor = c->act && c->t == QNT_FP8 ? 0.998 : 0.999;
  if (dr > tol || (zmm && dz > tol) || cs < floor || d7 > (a7 ? tol : 0))
    fprintf(stderr,
            "avx2 %s%s%s M=%lld K=%lld N=%lld layout %d: max diff %.3g vs portable, %.3g vs "
            "zmm, %.3g vs the a7 reference%s (of %.3g), cosine vs float %.6f\n",
            c->t == QNT_FP8 ? "fp8" : "int8", c->act ? " act" : "", c->vnni ? " avxvnni" : "",
            (long long)M, (long long)K, (long long)N, (int)l, dr, dz, d7, a7 ? "" : " (unused)",
            ymax, cs);
  CHECK(dr <= tol && (!zmm || dz <= tol) && cs >= floor && d7 <= (a7 ? tol : 0));
  free(ya7), free(y7);
  qnt_weight_free(&q), qnt_weight_free(&ref);
  if (zmm) qnt_weight_free(&z);
  free(w), free(bias), free(x), free(ya), free(yr), free(yz), free(yf);
}

static void test_avx2_products(void) {
  int prev = nat_isa_enter(NAT_ISA_AVX2);
  qnt_cpu cpu = qnt_cpu_detect();
  nat_isa_enter(prev);
  if (!cpu.avx2) {
    fprintf(stderr, "test_avx2_products: no AVX2 level here, skipped\n");
    return;
  }
  const avx2_case cases[] = {
      {QNT_INT8, true, false, QNT_CHANNEL, 0, true, QNT_OUTLIERS, false, false,
       false}, /* int8dq, Zen 2/3 */
      {QNT_INT8, true, false, QNT_GROUP, 32, true, 0, false, false, false},
      {QNT_INT8, false, false, QNT_CHANNEL, 0, true, 0, false, false, false}, /* int8wo */
      {QNT_INT8, false, false, QNT_GROUP, 16, false, 0, false, false, false},
      {QNT_FP8, false, false, QNT_CHANNEL, 0, true, 0, false, false, false}, /* fp8wo */
      {QNT_FP8, true, false, QNT_CHANNEL, 0, true, 0, false, false,
       false}, /* fp8dq without AVX512-BF16 */
      {QNT_FP8, true, false, QNT_GROUP, 32, true, 0, false, false, false},
      {QNT_INT8, true, true, QNT_CHANNEL, 0, true, QNT_OUTLIERS, false, false,
       false}, /* int8dq on AVX-VNNI */
      {QNT_INT8, true, true, QNT_GROUP, 32, false, QNT_OUTLIERS, false, false, false},
      /* int8dq as built for the vpmaddubsw tiles: 7-bit codes, a scale per 128 */
      {QNT_INT8, true, false, QNT_GROUP, 128, true, QNT_OUTLIERS, true, false, false},
      {QNT_INT8, true, false, QNT_GROUP, 32, true, 0, true, true, false}, /* saturating */
      {QNT_INT8, true, false, QNT_CHANNEL, 0, true, 0, true, true, false},
      /* one-sided rows, with outliers, saturating (7-bit rows) */
      {QNT_INT8, true, false, QNT_GROUP, 128, true, QNT_OUTLIERS, true, false, true},
      {QNT_INT8, true, false, QNT_GROUP, 32, true, 0, true, false, true},
      {QNT_INT8, true, false, QNT_CHANNEL, 0, true, QNT_OUTLIERS, false, false, true},
      {QNT_INT8, true, false, QNT_GROUP, 128, true, 0, true, true, true},
      {QNT_INT8, true, false, QNT_GROUP, 24, true, 0, true, true, true},
  };
  const int64_t shapes[][3] = {{1, 45, 17},   {5, 77, 64},   {6, 200, 70},  {7, 259, 130},
                               {13, 45, 96},  {37, 131, 70}, {24, 300, 64}, {2, 8, 9},
                               {12, 384, 64}, {19, 640, 80}, {53, 259, 70}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (cases[i].vnni && !cpu.avxvnni) continue; /* no AVX-VNNI tile to run here */
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
      avx2_product(&cases[i], shapes[s][0], shapes[s][1], shapes[s][2], (uint32_t)(7 * i + s));
  }
}

/* 7-bit codes: halved with ties to even, scales doubled, values kept to
 * within half a (doubled) step. */
static void test_quad7(void) {
  enum { N = 9, K = 37 };
  float w[N * K];
  fill(w, N * K, 1.0f, 5);
  qnt_config cfg = {.weights = QNT_INT8, .gran = QNT_CHANNEL, .symmetric = true};
  qnt_weight q;
  CHECK_ERR(qnt_weight_quantize(&cfg, w, N, K, K, 1, &q), AIT_OK, NULL);
  float s8[N];
  memcpy(s8, q.scale, sizeof s8);
  CHECK_ERR(qnt_weight_pack(&q, QNT_L_QUAD7), AIT_OK, NULL);
  int bad = 0;
  for (int n = 0; n < N; n++) {
    bad += q.scale[n] != 2 * s8[n];
    for (int k = 0; k < K; k++) { /* half an 8-bit step, then one more from halving */
      int c = (int8_t)qnt_weight_code(&q, n, k);
      bad += c < -64 || c > 64 || fabsf(qnt_weight_value(&q, n, k) - w[n * K + k]) > 1.501f * s8[n];
    }
  }
  CHECK(bad == 0);
  qnt_weight_free(&q);
  /* straight to 7 bits (cfg.w7): |q| <= 64 at max|w| / 64, half a step off,
   * and packing changes nothing */
  cfg.w7 = true;
  CHECK_ERR(qnt_weight_quantize(&cfg, w, N, K, K, 1, &q), AIT_OK, NULL);
  bad = 0;
  for (int n = 0; n < N; n++) {
    float amax = 0;
    for (int k = 0; k < K; k++)
      amax = fmaxf(amax, fabsf(w[n * K + k]));
    bad += fabsf(q.scale[n] - amax / 64) > 1e-6f * amax;
  }
  memcpy(s8, q.scale, sizeof s8);
  CHECK_ERR(qnt_weight_pack(&q, QNT_L_QUAD7), AIT_OK, NULL);
  for (int n = 0; n < N; n++) {
    bad += q.scale[n] != s8[n];
    for (int k = 0; k < K; k++) {
      int c = (int8_t)qnt_weight_code(&q, n, k);
      bad += c < -64 || c > 64 || fabsf(qnt_weight_value(&q, n, k) - w[n * K + k]) > 0.501f * s8[n];
    }
  }
  CHECK(bad == 0);
  qnt_weight_free(&q);
  cfg.w7 = false;
  /* asymmetric weights have no 7-bit form */
  cfg.symmetric = false;
  CHECK_ERR(qnt_weight_quantize(&cfg, w, N, K, K, 1, &q), AIT_OK, NULL);
  CHECK_ERR(qnt_weight_pack(&q, QNT_L_QUAD7), AIT_E_INTERNAL, "symmetric");
  qnt_weight_free(&q);
}

/* A model folder's committed inputs (model.onnx next to test_data_set_0). */
static int read_inputs(const char *model, ait_tensor **in, int cap) {
  char dir[512], file[600];
  snprintf(dir, sizeof dir, "%s", model);
  char *slash = strrchr(dir, '/');
  if (slash) *slash = '\0';
  int n = 0;
  for (; n < cap; n++) {
    snprintf(file, sizeof file, "%s/test_data_set_0/input_%d.pb", dir, n);
    if (access(file, R_OK) != 0 || ait_tensor_file_read(file, &in[n], NULL) != AIT_OK) break;
  }
  return n;
}

/* The presets end to end on bert_tiny at each level (and at AVX2 without
 * AVX-VNNI, the Zen 2/3 path), cosine >= 0.99 against the float model; the
 * layouts are the level's. */
static void test_levels_bert(const char *path) {
  ait_model *m = NULL;
  if (!path || ait_model_load(path, &m) != AIT_OK) {
    fprintf(stderr, "test_levels_bert: no model at %s, skipped\n", path ? path : "(none)");
    return;
  }
  ait_tensor *in[4] = {0};
  int n_in = read_inputs(path, in, 4);
  const ait_tensor *cin[4] = {in[0], in[1], in[2], in[3]};
  ait_tensor *want = NULL;
  CHECK_ERR(ait_eager_run(m->graph, cin, n_in, &want), AIT_OK, NULL);
  const struct {
    const char *isa;
    bool novnni;
  } levels[] = {{"avx512", false}, {"avx2", false}, {"avx2", true}, {"portable", false}};
  for (size_t l = 0; l < sizeof levels / sizeof levels[0] && want; l++) {
    if (!strcmp(levels[l].isa, "avx512") && nat_isa_cpu() < NAT_ISA_AVX512) continue;
    if (!strcmp(levels[l].isa, "avx2") && nat_isa_cpu() < NAT_ISA_AVX2) continue;
    if (levels[l].novnni) setenv("AIT_QUANT_NO_AVXVNNI", "1", 1);
    for (int i = 0; i < 4; i++) {
      char spec[96];
      snprintf(spec, sizeof spec, "quant:preset=%s,isa=%s", presets[i], levels[l].isa);
      qnt_state *s = NULL;
      CHECK_ERR(build(spec, NULL, NULL, m->graph, NULL, &s), AIT_OK, NULL);
      if (!s) continue;
      CHECK(nat_state_isa(s->ns) == nat_isa_parse(levels[l].isa));
      /* the products' layouts follow the level */
      int bad = 0;
      for (int k = 0; k < s->n_q; k++) {
        const qnt_weight *w = &s->q[k].w;
        if (s->q[k].site.kind == QNT_K_GATHER) continue;
        bool z = !strcmp(levels[l].isa, "avx512"), y = !strcmp(levels[l].isa, "avx2");
        qnt_layout want_l = !z && !y             ? QNT_L_ROWS
                            : !s->cfg.act        ? QNT_L_PANEL
                            : w->type == QNT_FP8 ? (z && s->cpu.bf16 ? QNT_L_PAIR : QNT_L_PANEL)
                            : z                  ? (s->cpu.vnni ? QNT_L_QUAD : QNT_L_QUAD7)
                            : s->cpu.avxvnni     ? QNT_L_QUAD
                                                 : QNT_L_QUAD7;
        bad += w->layout != want_l || (w->layout != QNT_L_ROWS && w->ymm != y);
      }
      CHECK(bad == 0 && (!levels[l].novnni || !s->cpu.avxvnni));
      ait_tensor *got = NULL;
      CHECK_ERR(Q->infer(s, cin, n_in, &got), AIT_OK, NULL);
      double rel = 1, c = got ? cosine(got, want, &rel) : -1;
      fprintf(stderr, "bert_tiny %s%s: cosine %.6f vs float\n", spec,
              levels[l].novnni ? " (no AVX-VNNI)" : "", c);
      CHECK(c >= 0.99);
      ait_tensor_free(got);
      Q->destroy(s);
    }
    unsetenv("AIT_QUANT_NO_AVXVNNI");
  }
  /* isa above the level is capped (as native:isa); kernels= above it is an
   * error; an unknown level is refused */
  qnt_state *s = NULL;
  CHECK_ERR(build("quant:preset=int8dq,isa=avx512", NULL, NULL, m->graph, NULL, &s), AIT_OK, NULL);
  if (s)
    CHECK(nat_state_isa(s->ns) == (int)nat_isa_cpu() &&
          s->cpu.avx512 == (nat_isa_cpu() >= NAT_ISA_AVX512));
  Q->destroy(s);
  s = NULL;
  if (nat_isa_cpu() < NAT_ISA_AVX512)
    CHECK_ERR(build("quant:preset=int8dq,kernels=avx512", NULL, NULL, m->graph, NULL, &s),
              AIT_E_UNSUPPORTED, "kernels=avx512 needs avx512f");
  Q->destroy(s);
  s = NULL;
  CHECK_ERR(build("quant:preset=int8dq,isa=bogus", NULL, NULL, m->graph, NULL, &s),
            AIT_E_INVALID_ARG, NULL);
  Q->destroy(s);
  ait_tensor_free(want);
  for (int i = 0; i < n_in; i++)
    ait_tensor_free(in[i]);
  ait_model_free(m);
}

int main(int argc, char **argv) {
  if (!ait_backend_find("quant")) CHECK_ERR(ait_backend_register(Q), AIT_OK, NULL);
  snprintf(tmpdir, sizeof tmpdir, "/tmp/test_quant.XXXXXX");
  if (!mkdtemp(tmpdir)) return 1;
  uint8_t *bytes = NULL;
  size_t nbytes = 0;
  ait_model *mlp = mlp_model(&bytes, &nbytes), *conv = conv_model();
  if (!mlp || !conv) return check_result("test_quant");
  test_e4m3();
  test_transpose();
  test_quantize();
  test_presets(mlp->graph, conv->graph);
  test_custom(mlp->graph, conv->graph);
  test_preflight(mlp->graph);
  test_filter(mlp->graph);
  test_config_errors(mlp->graph);
  test_json(mlp->graph);
  test_save_load(mlp->graph, conv->graph);
  test_bad_input(mlp->graph);
  test_outliers(mlp->graph);
  test_residual();
  test_shared();
  test_view_weight();
  test_gather();
  test_tune(bytes, nbytes);
  test_quad7();
  test_avx2_products();
  test_levels_bert(argc > 1 ? argv[1] : NULL);
  free(bytes);
  ait_model_free(mlp);
  ait_model_free(conv);
  char cmd[96];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
  return check_result("test_quant");
}
