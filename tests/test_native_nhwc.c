/* Native's layout pass beyond convolutions (native_layout.c): pooling
 * (FusedPoolNhwc), channel Concat, elementwise ops with per-channel and
 * squeeze-excite operands, BatchNormalization after no conv (a depthwise
 * 1x1 conv), and the rewrites the epilogue pass makes for CNN exports
 * (HardSwish spelled out, native_fuse.c). Each graph runs through native in
 * NHWC at every ISA level (avx512, avx2, portable) on 1 and 4 threads,
 * twice per state, against eager on the original graph, and its
 * rewritten graph is checked for the ops it should hold (no reorder inside
 * the chain, the fused ops present). */
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

static uint32_t rng = 4242;
static uint32_t urand(uint32_t n) {
  rng = rng * 1664525u + 1013904223u;
  return (rng >> 8) % n;
}
static void fill(float *v, int64_t n, float scale) {
  for (int64_t i = 0; i < n; i++)
    v[i] = ((float)urand(65536) / 32768.0f - 1.0f) * scale;
}

#define IN(...) ((const char *const[]){__VA_ARGS__, NULL})

/* A float32 initializer of random values (or `v` for all when v != 0).
 * The builder keeps a pointer to the dims until the model is packed:
 * they are copied into a bank that lives as long as the program. */
static void init(tb_model *m, const char *name, int rank, const int64_t *dims_in, float scale,
                 float v) {
  static int64_t bank[1024][4];
  static int used;
  int64_t *dims = bank[used++ % 1024];
  memcpy(dims, dims_in, sizeof(int64_t) * (size_t)rank);
  int64_t n = 1;
  for (int i = 0; i < rank; i++)
    n *= dims[i];
  float *d = malloc(sizeof(float) * (size_t)(n ? n : 1));
  fill(d, n, scale);
  if (v != 0.0f)
    for (int64_t i = 0; i < n; i++)
      d[i] = v;
  tb_init_f32(m, name, rank, dims, d);
  free(d);
}

/* conv `name` (k x k, pads k/2) from value `x` (C channels) to `y` (M). */
static int conv(tb_model *m, const char *name, const char *x, const char *y, int64_t C, int64_t M,
                int64_t k) {
  char w[64], b[64];
  snprintf(w, sizeof w, "%s_w", name);
  snprintf(b, sizeof b, "%s_b", name);
  const int64_t wd[4] = {M, C, k, k}, bd[1] = {M}, p = k / 2, pads[4] = {p, p, p, p};
  init(m, w, 4, wd, 0.4f, 0);
  init(m, b, 1, bd, 0.2f, 0);
  int n = tb_node(m, "Conv", name, IN(x, w, b), IN(y));
  tb_attr_ints(m, n, "pads", 4, pads);
  return n;
}

typedef struct want {
  const char *op;
  int count; /* exactly, or at most -count - 1 when negative */
} want;

/* Graph g against eager at every level and thread count, and (at avx2,
 * layout=nhwc) its rewritten graph holds the wanted op counts. */
static void check_graph(const char *what, ait_graph *g, int64_t C, int64_t H, int64_t W,
                        const want *w, int n_want, int64_t batches) {
  CHECK(g != NULL);
  if (!g) return;
  for (int64_t batch = 1; batch <= batches; batch++) {
    const int64_t xd[4] = {batch, C, H, W};
    ait_tensor *x = ait_tensor_new(AIT_FLOAT32, 4, xd), *ref = NULL;
    fill(x->data, ait_tensor_numel(x), 1.0f);
    CHECK(ait_eager_run(g, (const ait_tensor *const *)&x, 1, &ref) == AIT_OK);
    static const char *const isas[] = {"avx512", "avx2", "portable"};
    for (int a = 0; ref && a < 3; a++)
      for (int t = 1; t <= 4; t += 3) {
        char spec[96];
        snprintf(spec, sizeof spec, "native:layout=nhwc,isa=%s,threads=%d", isas[a], t);
        ait_backend_config cfg;
        void *state = NULL;
        long long nb = nat_conv_nhwc_declined();
        CHECK(ait_backend_config_parse(spec, &cfg) == AIT_OK);
        ait_status st = cfg.iface->build(&cfg, g, NULL, &state);
        if (st) fprintf(stderr, "%s on %s: %s\n", what, spec, ait_last_error());
        CHECK(st == AIT_OK);
        if (!state) continue;
        if (a == 1 && t == 1 && batch == 1)
          for (int k = 0; k < n_want; k++) {
            int got = check_count_op(((nat_state *)state)->g, w[k].op);
            bool ok = w[k].count >= 0 ? got == w[k].count : got <= -w[k].count - 1;
            if (!ok) {
              const ait_graph *rg = ((nat_state *)state)->g;
              fprintf(stderr, "%s: %d %s after the passes:", what, got, w[k].op);
              for (int i = 0; i < rg->n_nodes; i++)
                fprintf(stderr, " %s(%s)", rg->nodes[i].op_type, rg->nodes[i].name);
              fprintf(stderr, "\n");
            }
            CHECK(ok);
          }
        for (int run = 0; run < 2; run++) {
          ait_tensor *y = NULL;
          st = cfg.iface->infer(state, (const ait_tensor *const *)&x, 1, &y);
          double d = st == AIT_OK ? check_rel_diff(y, ref) : INFINITY;
          if (!(d <= 1e-4))
            fprintf(stderr, "%s on %s batch %lld: difference %g (%s)\n", what, spec,
                    (long long)batch, d, st == AIT_OK ? "ok" : ait_last_error());
          CHECK(d <= 1e-4);
          ait_tensor_free(y);
        }
        CHECK(nat_conv_nhwc_declined() == nb);
        cfg.iface->destroy(state);
      }
    ait_tensor_free(ref);
    ait_tensor_free(x);
  }
  ait_graph_free(g);
}

/* x [N, C, H, W] (N symbolic) in, y out. */
static tb_model *model(int64_t C, int64_t H, int64_t W) {
  tb_model *m = tb_new(17);
  const int64_t dx[4] = {-1, C, H, W}, dy[4] = {-1, -1, -1, -1};
  tb_input(m, "x", 1, 4, dx);
  tb_output(m, "y", 1, 4, dy);
  return m;
}

/* conv -> MaxPool / AveragePool (every attribute) -> conv. */
static void test_pools(void) {
  typedef struct pool_case {
    const char *op;
    int64_t k, s, pad, ceil, include_pad, dil;
  } pool_case;
  static const pool_case cases[] = {
      {"MaxPool", 3, 2, 1, 0, 0, 1},     {"MaxPool", 3, 1, 1, 0, 0, 1},
      {"MaxPool", 2, 2, 0, 1, 0, 1},     {"MaxPool", 3, 2, 0, 1, 0, 2},
      {"AveragePool", 3, 2, 1, 0, 0, 1}, {"AveragePool", 3, 2, 1, 0, 1, 1},
      {"AveragePool", 2, 2, 0, 1, 0, 1}, {"AveragePool", 3, 2, 1, 1, 1, 1},
      {"AveragePool", 5, 3, 2, 0, 0, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const pool_case *p = &cases[i];
    int64_t C = 5 + (int64_t)i * 4;
    tb_model *m = model(C, 15 + (int64_t)i % 3, 13);
    conv(m, "c1", "x", "a", C, C + 3, 3);
    const int64_t k[2] = {p->k, p->k}, s[2] = {p->s, p->s},
                  pd[4] = {p->pad, p->pad, p->pad, p->pad};
    const int64_t dl[2] = {p->dil, p->dil};
    int n = tb_node(m, p->op, "pool", IN("a"), IN("b"));
    tb_attr_ints(m, n, "kernel_shape", 2, k);
    tb_attr_ints(m, n, "strides", 2, s);
    tb_attr_ints(m, n, "pads", 4, pd);
    if (p->ceil) tb_attr_int(m, n, "ceil_mode", 1);
    if (p->include_pad) tb_attr_int(m, n, "count_include_pad", 1);
    if (p->dil > 1) tb_attr_ints(m, n, "dilations", 2, dl);
    conv(m, "c2", "b", "y", C + 3, 7, 1);
    const want w[] = {{"FusedPoolNhwc", 1}, {"MaxPool", 0}, {"AveragePool", 0}, {"Transpose", 1}};
    char what[64];
    snprintf(what, sizeof what, "%s case %zu", p->op, i);
    check_graph(what, tb_parse_graph(m), C, 15 + (int64_t)i % 3, 13, w, 4, 2);
  }
}

/* Random pools between two convs: MaxPool and AveragePool, kernels 1 to
 * 5, strides 1 to 3, pads below the kernel (uneven), ceil_mode,
 * count_include_pad, dilations (MaxPool); channels 1 to 150 (several of
 * the vector kernels' blocks of 32 / 64 channels and every tail), maps of
 * 5 to 20. */
static void test_pools_random(int count) {
  for (int i = 0; i < count; i++) {
    bool max = urand(2);
    int64_t k = 1 + urand(5), st = 1 + urand(3), dil = max && urand(3) == 0 ? 2 : 1;
    int64_t C = 1 + urand(150), H = (k - 1) * dil + 5 + urand(16),
            W = (k - 1) * dil + 5 + urand(16);
    int64_t ks[2] = {k, k}, ss[2] = {st, st}, dl[2] = {dil, dil}, pd[4];
    for (int a = 0; a < 4; a++)
      pd[a] = urand((uint32_t)k);
    tb_model *m = model(8, H, W);
    conv(m, "c1", "x", "a", 8, C, 1);
    int n = tb_node(m, max ? "MaxPool" : "AveragePool", "pool", IN("a"), IN("b"));
    tb_attr_ints(m, n, "kernel_shape", 2, ks);
    tb_attr_ints(m, n, "strides", 2, ss);
    tb_attr_ints(m, n, "pads", 4, pd);
    if (urand(2)) tb_attr_int(m, n, "ceil_mode", 1);
    if (!max && urand(2)) tb_attr_int(m, n, "count_include_pad", 1);
    if (dil > 1) tb_attr_ints(m, n, "dilations", 2, dl);
    conv(m, "c2", "b", "y", C, 5, 1);
    const want w[] = {{"FusedPoolNhwc", 1}, {"MaxPool", 0}, {"AveragePool", 0}};
    char what[128];
    snprintf(what, sizeof what, "random %s k%lld s%lld d%lld C%lld %lldx%lld",
             max ? "MaxPool" : "AveragePool", (long long)k, (long long)st, (long long)dil,
             (long long)C, (long long)H, (long long)W);
    check_graph(what, tb_parse_graph(m), 8, H, W, w, 3, 2);
  }
}

/* Inception / SqueezeNet: two convs of x concatenated, then a conv. */
static void test_concat(void) {
  tb_model *m = model(6, 11, 14);
  conv(m, "c1", "x", "a", 6, 16, 1);
  conv(m, "c2", "x", "b", 6, 9, 3);
  const int64_t k[2] = {3, 3}, s[2] = {1, 1}, pd[4] = {1, 1, 1, 1};
  int n = tb_node(m, "MaxPool", "pool", IN("x"), IN("p"));
  tb_attr_ints(m, n, "kernel_shape", 2, k);
  tb_attr_ints(m, n, "strides", 2, s);
  tb_attr_ints(m, n, "pads", 4, pd);
  n = tb_node(m, "Concat", "cat", IN("a", "b", "p"), IN("c"));
  tb_attr_int(m, n, "axis", 1);
  conv(m, "c3", "c", "y", 31, 8, 3);
  /* the pool reads x from outside: one reorder in, one out */
  const want w[] = {{"Concat", 1}, {"Transpose", 2}};
  check_graph("concat", tb_parse_graph(m), 6, 11, 14, w, 2, 2);
}

/* ResNet-shaped 1x1s on the AVX-512 6 x 4 assembly loop (M a multiple of
 * 64: full column blocks; K % 4 = 3 and 0; 90 pixels: 15 tiles) and a
 * stride-2 3x3 of three column blocks (the next block's weights prefetched
 * over the first tiles), with a residual Add and Relu after the first. */
static void test_pw_tiles(void) {
  tb_model *m = model(8, 9, 10);
  conv(m, "c1", "x", "a", 8, 67, 3);
  conv(m, "c2", "a", "b", 67, 128, 1);
  conv(m, "c2r", "a", "br", 67, 128, 1);
  tb_node(m, "Add", "add", IN("b", "br"), IN("s"));
  tb_node(m, "Relu", "relu", IN("s"), IN("r"));
  conv(m, "c3", "r", "c", 128, 192, 1);
  int n = conv(m, "c4", "c", "y", 192, 192, 3);
  const int64_t st[2] = {2, 2};
  tb_attr_ints(m, n, "strides", 2, st);
  const want w[] = {{"FusedConvNhwc", 5}, {"Transpose", 1}}; /* the output reorder */
  check_graph("pointwise tiles", tb_parse_graph(m), 8, 9, 10, w, 2, 2);
}

/* 1x1s of 96 and 144 channels (multiples of 48) on 7 x 7 and 8 x 8 maps:
 * the AVX-512 7 x 3 and 8 x 3 assembly loops (K % 4 = 3 and 0). */
static void test_pw_tiles3(int64_t H) {
  tb_model *m = model(8, H, H);
  conv(m, "c1", "x", "a", 8, 67, 3);
  conv(m, "c2", "a", "b", 67, 96, 1);
  tb_node(m, "Relu", "relu", IN("b"), IN("r"));
  conv(m, "c3", "r", "y", 96, 144, 1);
  const want w[] = {{"FusedConvNhwc", 3}};
  check_graph(H == 7 ? "pointwise tiles 7 x 3" : "pointwise tiles 8 x 3", tb_parse_graph(m), 8, H,
              H, w, 1, 2);
}

/* 3-channel stems into outputs of 3 x 2^k vectors and others up to 128
 * and past it (native_nhwc_stem3_tmpl.h's tiles of 3 vectors: SqueezeNet's
 * 96-output 7x7/s2 stem), 7x7 and 3x3, strides 2 and 1, random pads, then
 * Relu and a 1x1, against eager at every level. */
static void test_stem3_wide(void) {
  static const int64_t Ms[] = {96, 48, 112, 128, 144, 72, 24, 160};
  for (int cs = 0; cs < 8; cs++) {
    int64_t M = Ms[cs], k = cs % 3 == 2 ? 3 : 7, s = cs % 4 == 3 ? 1 : 2;
    int64_t H = k + urand(20), W = k + urand(cs % 2 ? 30 : 90);
    tb_model *m = model(3, H, W);
    char w[32], b[32];
    snprintf(w, sizeof w, "stem_w%d", cs);
    snprintf(b, sizeof b, "stem_b%d", cs);
    const int64_t wd[4] = {M, 3, k, k}, bd[1] = {M}, st[2] = {s, s};
    const int64_t pads[4] = {urand((uint32_t)k), urand((uint32_t)k), urand((uint32_t)k),
                             urand((uint32_t)k)};
    init(m, w, 4, wd, 0.4f, 0);
    init(m, b, 1, bd, 0.2f, 0);
    int n = tb_node(m, "Conv", "stem", IN("x", w, b), IN("a"));
    tb_attr_ints(m, n, "pads", 4, pads);
    tb_attr_ints(m, n, "strides", 2, st);
    tb_node(m, "Relu", "relu", IN("a"), IN("r"));
    conv(m, "c2", "r", "y", M, 16, 1);
    char what[96];
    snprintf(what, sizeof what, "stem 3 -> %lld %lldx%lld/s%lld on %lldx%lld", (long long)M,
             (long long)k, (long long)k, (long long)s, (long long)H, (long long)W);
    const want wt[] = {{"FusedConvNhwc", 2}};
    check_graph(what, tb_parse_graph(m), 3, H, W, wt, 1, 2);
  }
}

/* DenseNet: Concat -> BatchNormalization -> Relu -> conv. */
static void test_batchnorm(void) {
  tb_model *m = model(8, 9, 10);
  conv(m, "c1", "x", "a", 8, 12, 3);
  int n = tb_node(m, "Concat", "cat", IN("x", "a"), IN("c"));
  tb_attr_int(m, n, "axis", 1);
  const int64_t d[1] = {20};
  init(m, "scale", 1, d, 1.0f, 0);
  init(m, "bias", 1, d, 0.5f, 0);
  init(m, "mean", 1, d, 0.5f, 0);
  init(m, "var", 1, d, 0.0f, 0.7f);
  tb_node(m, "BatchNormalization", "bn", IN("c", "scale", "bias", "mean", "var"), IN("b"));
  tb_node(m, "Relu", "relu", IN("b"), IN("r"));
  conv(m, "c2", "r", "y", 20, 10, 1);
  const want w[] = {{"BatchNormalization", 0}, {"Relu", 0}, {"Transpose", -3}};
  check_graph("batchnorm", tb_parse_graph(m), 8, 9, 10, w, 3, 2);
}

/* Elementwise ops on NHWC: per-channel constants ([1, C, 1, 1], [C, 1, 1]),
 * a scalar, a residual Add, and a squeeze-excite scale (GlobalAveragePool ->
 * 1x1 -> Relu -> 1x1 -> Sigmoid -> Mul). */
static void test_elementwise(void) {
  tb_model *m = model(7, 12, 9);
  conv(m, "c1", "x", "a0", 7, 24, 3);
  tb_node(m, "Relu", "r1", IN("a0"), IN("a"));
  const int64_t d4[4] = {1, 24, 1, 1}, d3[3] = {24, 1, 1}, d0[1] = {1};
  init(m, "k4", 4, d4, 1.0f, 0);
  init(m, "k3", 3, d3, 1.0f, 0);
  init(m, "k0", 1, d0, 0, 0.25f);
  tb_node(m, "Mul", "m4", IN("a", "k4"), IN("b"));
  tb_node(m, "Add", "a3", IN("k3", "b"), IN("c"));
  tb_node(m, "Sub", "s0", IN("c", "k0"), IN("d"));
  tb_node(m, "Add", "res", IN("d", "a"), IN("e"));
  tb_node(m, "GlobalAveragePool", "gap", IN("e"), IN("g"));
  conv(m, "se1", "g", "g1", 24, 6, 1);
  tb_node(m, "Relu", "ser", IN("g1"), IN("g2"));
  conv(m, "se2", "g2", "g3", 6, 24, 1);
  tb_node(m, "Sigmoid", "sig", IN("g3"), IN("s"));
  tb_node(m, "Mul", "scale", IN("e", "s"), IN("f"));
  conv(m, "c2", "f", "y", 24, 5, 3);
  const want w[] = {{"Transpose", 1}, {"FusedGapNhwc", 1}, {"GlobalAveragePool", 0}};
  check_graph("elementwise", tb_parse_graph(m), 7, 12, 9, w, 3, 2);
}

/* Paddle's HardSwish: conv -> Add 3 -> Clip(0, 6) -> Mul(conv, .) -> Div 6,
 * and the Div before the Mul, and a Mul by 1/6. */
static void test_hardswish_spelled(void) {
  for (int v = 0; v < 3; v++) {
    tb_model *m = model(5, 10, 11);
    conv(m, "c1", "x", "a", 5, 11, 3);
    const int64_t d0[1] = {1};
    init(m, "three", 1, d0, 0, 3.0f);
    init(m, "zero", 0, d0, 0, 0);
    init(m, "six", 0, d0, 0, 6.0f);
    init(m, "sixth", 1, d0, 0, 1.0f / 6.0f);
    tb_node(m, "Add", "add", IN("a", "three"), IN("b"));
    tb_node(m, "Clip", "clip", IN("b", "zero", "six"), IN("c"));
    if (v == 1) {
      tb_node(m, "Div", "div", IN("c", "six"), IN("d"));
      tb_node(m, "Mul", "mul", IN("a", "d"), IN("e"));
    } else {
      tb_node(m, "Mul", "mul", IN("c", "a"), IN("d"));
      if (v == 0)
        tb_node(m, "Div", "div", IN("d", "six"), IN("e"));
      else
        tb_node(m, "Mul", "div", IN("sixth", "d"), IN("e"));
    }
    conv(m, "c2", "e", "y", 11, 4, 1);
    const want w[] = {{"Clip", 0}, {"Div", 0}, {"Mul", 0}, {"Add", 0}, {"FusedConvNhwc", 2}};
    char what[32];
    snprintf(what, sizeof what, "hardswish %d", v);
    check_graph(what, tb_parse_graph(m), 5, 10, 11, w, 5, 2);
  }
}

/* conv -> Resize (native_resize.c: every mode it takes, scales up and down,
 * sizes) -> conv. */
static void test_resize(void) {
  typedef struct rs_case {
    const char *mode, *ct, *nearest;
    float sh, sw;   /* scales of H and W; 0: sizes below */
    int64_t oh, ow; /* sizes */
  } rs_case;
  static const rs_case cases[] = {
      {"linear", "half_pixel", NULL, 2.0f, 2.0f, 0, 0},
      {"linear", "align_corners", NULL, 0, 0, 23, 17},
      {"linear", "pytorch_half_pixel", NULL, 0.5f, 1.5f, 0, 0},
      {"linear", "asymmetric", NULL, 3.0f, 0.75f, 0, 0},
      {"nearest", "asymmetric", "floor", 2.0f, 3.0f, 0, 0},
      {"nearest", "half_pixel", "round_prefer_ceil", 0, 0, 5, 31},
      {"nearest", "align_corners", NULL, 1.25f, 0.5f, 0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const rs_case *r = &cases[i];
    tb_model *m = model(6, 10, 12);
    conv(m, "c1", "x", "a", 6, 9, 3);
    static const int64_t d4[1] = {4};
    if (r->sh > 0) {
      float sc[4] = {1, 1, r->sh, r->sw};
      tb_init_f32(m, "scales", 1, d4, sc);
      int n = tb_node(m, "Resize", "rs", IN("a", "", "scales"), IN("b"));
      tb_attr_str(m, n, "mode", r->mode);
      tb_attr_str(m, n, "coordinate_transformation_mode", r->ct);
      if (r->nearest) tb_attr_str(m, n, "nearest_mode", r->nearest);
    } else {
      static int64_t sz[8][4]; /* kept until the model is packed */
      int64_t *sizes = sz[i % 8];
      sizes[0] = 1, sizes[1] = 9, sizes[2] = r->oh, sizes[3] = r->ow;
      tb_init_i64(m, "sizes", 1, d4, sizes);
      int n = tb_node(m, "Resize", "rs", IN("a", "", "", "sizes"), IN("b"));
      tb_attr_str(m, n, "mode", r->mode);
      tb_attr_str(m, n, "coordinate_transformation_mode", r->ct);
      if (r->nearest) tb_attr_str(m, n, "nearest_mode", r->nearest);
    }
    conv(m, "c2", "b", "y", 9, 4, 1);
    char what[48];
    snprintf(what, sizeof what, "resize %zu", i);
    const want w[] = {{"Resize", 1}};
    long long ran = nat_resize_runs();
    check_graph(what, tb_parse_graph(m), 6, 10, 12, w, 1, r->sh > 0 ? 2 : 1);
    CHECK(nat_resize_runs() >= ran + 6 * 2); /* 6 states, two runs each, a batch at least */
  }
}

/* DeepLabV3's pooling branch: GlobalAveragePool -> 1x1 conv, resized back
 * to the map's size by sizes computed from two Shapes (so the Resize's
 * output dims are unknown), concatenated with the map. The Shapes read
 * the NHWC twins (a Gather reorders the dims; start/end kept), the Concat
 * joins NHWC with its unknown-dims input: reorders only for the Resize's
 * output and for y, none for the map. */
static void test_shape_concat(void) {
  tb_model *m = model(6, 10, 12);
  conv(m, "c1", "x", "a", 6, 16, 3);
  tb_node(m, "GlobalAveragePool", "gap", IN("a"), IN("p"));
  conv(m, "c2", "p", "g", 16, 8, 1);
  int n = tb_node(m, "Shape", "sg", IN("g"), IN("nc"));
  tb_attr_int(m, n, "end", 2);
  n = tb_node(m, "Shape", "sa", IN("a"), IN("hw"));
  tb_attr_int(m, n, "start", -2);
  n = tb_node(m, "Concat", "sizes", IN("nc", "hw"), IN("sz"));
  tb_attr_int(m, n, "axis", 0);
  n = tb_node(m, "Resize", "rs", IN("g", "", "", "sz"), IN("u"));
  tb_attr_str(m, n, "mode", "nearest");
  n = tb_node(m, "Concat", "cat", IN("a", "u"), IN("c"));
  tb_attr_int(m, n, "axis", 1);
  conv(m, "c3", "c", "y", 24, 8, 1); /* a 1x1: reads the Concat in NHWC (a window conv would
                                      * read an NCHW one itself) */
  const want w[] = {{"Transpose", 2}, {"Gather", 2}, {"Shape", 2}};
  check_graph("shape and concat", tb_parse_graph(m), 6, 10, 12, w, 3, 2);
}

/* SiLU past the clamp (native_nhwc_act.c) at each vector level the run
 * allows, on every length 1-300 (tails, the unrolled pairs) of values
 * over [-100, 100] and the special ones, against the double x / (1 + e^-x):
 * within 8e-7 relative (about 13 ulp; the kernels measure under 5), or
 * 1e-35 absolute far below zero, NaN kept, SiLU(inf) = inf. */
static void test_silu_kernels(void) {
  typedef void (*silu_fn)(float *, int64_t);
  const silu_fn fns[2] = {nat_nhwc256_silu, nat_nhwc512_silu};
  const bool have[2] = {nat_nhwc256_available(), nat_nhwc512_available()};
  static const float special[] = {0.0f,   -0.0f, 1e-40f, -1e-40f, 87.0f,  -87.0f, 88.5f,
                                  -88.5f, 1e30f, -1e30f, 16.6f,   -16.6f, 5.14f,  -5.14f};
  float x[300], y[300];
  for (int lv = 0; lv < 2; lv++) {
    if (!have[lv]) continue;
    for (int64_t n = 1; n <= 300; n++) {
      for (int64_t i = 0; i < n; i++)
        x[i] = urand(4) == 0 ? special[urand(sizeof special / sizeof *special)]
                             : ((float)urand(1 << 20) / (float)(1 << 19) - 1.0f) * 100.0f;
      bool nan_at = n > 2, inf_at = n > 3;
      if (nan_at) x[n - 2] = NAN;
      if (inf_at) x[n - 3] = INFINITY;
      memcpy(y, x, sizeof(float) * (size_t)n);
      fns[lv](y, n);
      for (int64_t i = 0; i < n; i++) {
        double ref = (double)x[i] / (1.0 + exp(-(double)x[i])), d = fabs((double)y[i] - ref);
        bool ok = isnan(x[i])   ? isnan(y[i])
                  : isinf(x[i]) ? y[i] == x[i]
                                : d <= 8e-7 * fabs(ref) || d <= 1e-35;
        if (!ok)
          fprintf(stderr, "silu level %d n %lld: silu(%.9g) = %.9g, want %.9g\n", lv, (long long)n,
                  x[i], y[i], ref);
        CHECK(ok);
      }
    }
  }
}

int main(void) {
  test_silu_kernels();
  test_resize();
  test_pools();
  test_pools_random(24);
  test_concat();
  test_pw_tiles();
  test_pw_tiles3(7);
  test_pw_tiles3(8);
  test_stem3_wide();
  test_batchnorm();
  test_elementwise();
  test_hardswish_spelled();
  test_shape_concat();
  return check_result("test_native_nhwc");
}
