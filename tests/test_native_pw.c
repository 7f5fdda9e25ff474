/* native's pointwise (1x1) convolutions in NHWC (nat_nhwc256_pw,
 * nat_nhwc512_pw) against eager on random shapes at every ISA level, on 1
 * and 3 threads, batches 1 and 3: a window or grouped conv (strides,
 * padding, groups) then a 1x1 with bias, the residual of a second 1x1
 * branch and ReLU, odd channel counts (every vector tail), both orders of
 * the kernel's loops (weights under NAT_PW_W_BYTES run tile by tile over
 * every column block; larger ones in panels of pixels, as even as whole
 * tiles, ResNeXt's 7x7 layers of 2048 channels among them; at AVX2, panels
 * of X that stay in L1 for K up to 256, and row tiles as even as they come
 * where the last would be short) and the next weight block's prefetch. The layout pass must make
 * every conv a FusedConvNhwc, and the kernels decline none. */
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

static uint32_t rng = 9191;
static uint32_t urand(uint32_t n) {
  rng = rng * 1664525u + 1013904223u;
  return (rng >> 8) % n;
}
static int64_t irand(int64_t lo, int64_t hi) {
  return lo + (int64_t)urand((uint32_t)(hi - lo + 1));
}
static void fill(float *v, int64_t n, float scale) {
  for (int64_t i = 0; i < n; i++)
    v[i] = ((float)urand(65536) / 32768.0f - 1.0f) * scale;
}

/* A float32 initializer of random values (the builder keeps a pointer to
 * the dims until the model is parsed: they live in a bank). */
static void init(tb_model *m, const char *name, int rank, const int64_t *dims_in, float scale) {
  static int64_t bank[256][4];
  static int used;
  int64_t *dims = bank[used++ % 256];
  memcpy(dims, dims_in, sizeof(int64_t) * (size_t)rank);
  int64_t n = 1;
  for (int i = 0; i < rank; i++)
    n *= dims[i];
  float *d = malloc(sizeof(float) * (size_t)(n ? n : 1));
  fill(d, n, scale);
  tb_init_f32(m, name, rank, dims, d);
  free(d);
}

/* conv `name` from x (C channels) to y (M): k x k, stride s, pads p, group g. */
static void conv(tb_model *m, const char *name, const char *x, const char *y, int64_t C, int64_t M,
                 int64_t k, int64_t s, int64_t p, int64_t g) {
  char w[64], b[64];
  snprintf(w, sizeof w, "%s_w", name);
  snprintf(b, sizeof b, "%s_b", name);
  const int64_t wd[4] = {M, C / g, k, k}, bd[1] = {M}, pads[4] = {p, p, p, p}, st[2] = {s, s};
  /* weights scaled by the fan-in: sums of thousands of terms stay near 1 */
  init(m, w, 4, wd, 1.5f / sqrtf((float)(C / g * k * k)));
  init(m, b, 1, bd, 0.2f);
  int n = tb_node(m, "Conv", name, IN(x, w, b), IN(y));
  tb_attr_ints(m, n, "pads", 4, pads);
  tb_attr_ints(m, n, "strides", 2, st);
  if (g > 1) tb_attr_int(m, n, "group", g);
}

typedef struct pw_case {
  int64_t C, H, K, M; /* input channels, map, the 1x1's input and output channels */
  int64_t k, s, p, g; /* the first conv's window, stride, pads, groups */
} pw_case;

/* x -> conv (k, s, p, g) -> Relu -> 1x1 (K -> M) -+-> Add -> Relu -> y
 *   \-> strided 1x1 (C -> M) -------------------/   (the residual) */
static void check_case(const char *what, const pw_case *c) {
  tb_model *m = tb_new(17);
  const int64_t dx[4] = {-1, c->C, c->H, c->H}, dy[4] = {-1, -1, -1, -1};
  tb_input(m, "x", 1, 4, dx);
  tb_output(m, "y", 1, 4, dy);
  conv(m, "c1", "x", "a", c->C, c->K, c->k, c->s, c->p, c->g);
  tb_node(m, "Relu", "r1", IN("a"), IN("ar"));
  conv(m, "c2", "ar", "b", c->K, c->M, 1, 1, 0, 1);
  int64_t OH = (c->H + 2 * c->p - c->k) / c->s + 1;
  /* the residual branch: a 1x1 of stride s where it lands on OH */
  int64_t rs = OH == (c->H - 1) / c->s + 1 ? c->s : 0;
  if (rs) {
    conv(m, "c3", "x", "r", c->C, c->M, 1, rs, 0, 1);
    tb_node(m, "Add", "add", IN("b", "r"), IN("s"));
    tb_node(m, "Relu", "r2", IN("s"), IN("y"));
  } else {
    tb_node(m, "Relu", "r2", IN("b"), IN("y"));
  }
  ait_graph *g = tb_parse_graph(m);
  CHECK(g != NULL);
  if (!g) return;
  int convs = rs ? 3 : 2;
  for (int64_t batch = 1; batch <= 3; batch += 2) {
    const int64_t xd[4] = {batch, c->C, c->H, c->H};
    ait_tensor *x = ait_tensor_new(AIT_FLOAT32, 4, xd), *ref = NULL;
    fill(x->data, ait_tensor_numel(x), 1.0f);
    CHECK(ait_eager_run(g, (const ait_tensor *const *)&x, 1, &ref) == AIT_OK);
    static const char *const isas[] = {"avx512", "avx2", "portable"};
    for (int a = 0; ref && a < 3; a++)
      for (int t = 1; t <= 3; t += 2) {
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
        if (a == 1 && t == 1 && batch == 1) { /* every conv in NHWC (the 1x1 maybe inside a
                                                 FusedInvertedResidual after a depthwise) */
          const ait_graph *rg = ((nat_state *)state)->g;
          int left = check_count_op(rg, "Conv"), fused = check_count_op(rg, "FusedConvNhwc");
          if (left || fused < convs - 1)
            fprintf(stderr, "%s: %d Conv, %d FusedConvNhwc of %d convs\n", what, left, fused,
                    convs);
          CHECK(!left && fused >= convs - 1);
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

int main(void) {
  /* fixed: the shapes of both loop orders and of the panels' edges */
  static const pw_case fixed[] = {
      {8, 7, 2048, 1024 + 9, 3, 1, 1, 1},   /* 7x7, 2048 channels: 2 panels of 25 and 24 */
      {16, 7, 1024, 2048 + 3, 3, 1, 1, 16}, /* grouped, then the expanding 1x1 */
      {12, 14, 512, 1024 + 5, 3, 2, 1, 4},  /* stride 2 */
      {9, 30, 64, 131, 3, 1, 1, 1},         /* small weights, 900 pixels: tile by tile */
      {128, 28, 128, 256, 3, 1, 1, 32},     /* ResNeXt's first stage: 4 channels a group */
      {24, 12, 600, 250, 1, 1, 0, 1},       /* 1x1 -> 1x1 */
      {16, 14, 131, 32, 3, 1, 1, 1},        /* 32 channels: the 12 x 2 (AVX-512) and 6 x 2
                                               (AVX2) assembly loops, K % 4 = 3 */
      {16, 9, 160, 160, 1, 1, 0, 1},        /* RegNet's 160: 5 blocks of 12 x 2, K % 4 = 0 */
      /* AVX2: 49 pixels on 24 KB panels of X (18, 18, 13) and tiles as even as they come
         (13: 4, 4, 5 rows: the 4 x 2 and 5 x 2 assembly loops), K % 4 = 0 and 2 */
      {16, 7, 256, 64, 1, 1, 0, 1},
      {16, 7, 130, 48, 1, 1, 0, 1},
      /* stems (3 channels, stride 2) on the stem kernels' fixed-shape tiles: the last tile
         of a row moved back to end with it, 32 (12 x 2), 64 (6 x 4), 48 (AVX2 only) and 96
         channels, rows too short for the AVX-512 tile */
      {3, 33, 32, 40, 3, 2, 1, 1},
      {3, 40, 64, 24, 7, 2, 3, 1},
      {3, 23, 48, 16, 3, 2, 1, 1},
      {3, 30, 96, 8, 7, 2, 3, 1},
      {3, 13, 32, 8, 3, 2, 1, 1},
      /* stride-2 1x1s on the pointwise tiles (gathered pixels): ResNet's downsamples, the
         first conv one too; odd maps (the last row and column of pixels dropped), channels
         off the vector widths */
      {64, 14, 128, 256, 1, 2, 0, 1},
      {256, 15, 64, 512, 3, 2, 1, 1},
      {40, 9, 37, 70, 1, 2, 0, 1},
      {24, 7, 24, 33, 3, 2, 1, 4},
  };
  char what[96];
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
    snprintf(what, sizeof what, "fixed case %zu", i);
    check_case(what, &fixed[i]);
  }
  /* random: channels 1 to 300 (every tail of 8 and 16), maps 1 to 24,
   * windows 1 to 3, strides 1 to 2, pads up to 1, groups dividing both */
  for (int i = 0; i < 24; i++) {
    pw_case c;
    c.g = irand(0, 2) ? 1 : irand(2, 8);
    c.C = c.g * irand(1, 12);
    c.K = c.g * irand(1, 300 / c.g);
    c.M = irand(1, 300);
    c.H = irand(1, 24);
    c.k = irand(1, 3);
    c.s = irand(1, 2);
    c.p = c.k > 1 ? irand(0, 1) : 0;
    if (c.H + 2 * c.p < c.k) c.H = c.k;
    snprintf(what, sizeof what, "random case %d (C %lld K %lld M %lld H %lld k %lld s %lld g %lld)",
             i, (long long)c.C, (long long)c.K, (long long)c.M, (long long)c.H, (long long)c.k,
             (long long)c.s, (long long)c.g);
    check_case(what, &c);
  }
  return check_result("test_native_pw");
}
