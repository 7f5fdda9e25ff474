/* Activations past the clamp that FusedConvNhwc's vector kernels run in
 * registers (native_nhwc_post.h): the driver's passes (nat_nhwc256_post,
 * nat_nhwc512_post) against a double reference on every length 1-200, and
 * the depthwise kernels of any window (native_nhwc_dw256.c / dw512.c),
 * which apply them to each tile before its store, on random depthwise
 * convs (window, stride, dilation, pads, channels, batch) followed by
 * HardSwish, x * Sigmoid(x), HardSigmoid or Relu, through native (layout
 * NHWC) at avx512, avx2 and portable on 1 and 3 threads against eager;
 * and a ReduceMean over H and W after a conv (MnasNet's global pool), which
 * the layout pass runs on the NHWC map (native_layout.c: no Transpose);
 * the 3x3 depthwise row kernels against a double reference; and 3-channel
 * stems on the NCHW input (native_nhwc_stem3.h) against eager. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/native/native.h"
#include "backends/native/native_nhwc_post.h"
#include "check.h"
#include "graph_check.h"
#include "model_builder.h"
#include "runtime/eager.h"

static uint32_t rng = 777;
static uint32_t urand(uint32_t n) {
  rng = rng * 1664525u + 1013904223u;
  return (rng >> 8) % n;
}
static float frand(float scale) { return ((float)urand(65536) / 32768.0f - 1.0f) * scale; }

#define IN(...) ((const char *const[]){__VA_ARGS__, NULL})

static double post_ref(const nat_post *p, double x) {
  if (p->kind == NAT_POST_SILU) return x / (1.0 + exp(-x));
  double t = (double)p->a * x + (double)p->b;
  t = t < 0 ? 0 : t > 1 ? 1 : t;
  return p->mul_x ? t * x : t;
}

static void test_post_passes(void) {
  typedef void (*post_fn)(const nat_post *, float *, int64_t);
  const post_fn fns[2] = {nat_nhwc256_post, nat_nhwc512_post};
  const bool have[2] = {nat_nhwc256_available(), nat_nhwc512_available()};
  const nat_post posts[4] = {{NAT_POST_SILU, 0, 0, false},
                             {NAT_POST_HSIG, 1.0f / 6.0f, 0.5f, true},
                             {NAT_POST_HSIG, 0.2f, 0.5f, false},
                             {NAT_POST_HSIG, 0.3f, 0.25f, true}};
  float x[200], y[200];
  for (int lv = 0; lv < 2; lv++) {
    if (!have[lv]) continue;
    for (int k = 0; k < 4; k++)
      for (int64_t n = 1; n <= 200; n++) {
        for (int64_t i = 0; i < n; i++)
          x[i] = frand(urand(2) ? 8.0f : 60.0f);
        if (n > 2) x[n - 2] = NAN;
        memcpy(y, x, sizeof(float) * (size_t)n);
        fns[lv](&posts[k], y, n);
        for (int64_t i = 0; i < n; i++) {
          double ref = post_ref(&posts[k], x[i]), d = fabs((double)y[i] - ref);
          bool ok = isnan(x[i]) ? isnan(y[i]) : d <= 1e-6 * fabs(ref) + 1e-7;
          if (!ok)
            fprintf(stderr, "post level %d kind %d n %lld: f(%.9g) = %.9g, want %.9g\n", lv, k,
                    (long long)n, x[i], y[i], ref);
          CHECK(ok);
        }
      }
  }
}

static void init(tb_model *m, const char *name, int rank, const int64_t *dims, float scale) {
  int64_t n = 1;
  for (int i = 0; i < rank; i++)
    n *= dims[i];
  float *d = malloc(sizeof(float) * (size_t)(n ? n : 1));
  for (int64_t i = 0; i < n; i++)
    d[i] = frand(scale);
  tb_init_f32(m, name, rank, dims, d);
  free(d);
}

/* Backend `spec` built on g (NULL on failure, reported under `what`). */
static void *build_on(const char *spec, const ait_graph *g, ait_backend_config *cfg,
                      const char *what) {
  void *state = NULL;
  CHECK(ait_backend_config_parse(spec, cfg) == AIT_OK);
  ait_status st = cfg->iface->build(cfg, g, NULL, &state);
  if (st) fprintf(stderr, "%s on %s: %s\n", what, spec, ait_last_error());
  CHECK(st == AIT_OK);
  return st ? NULL : state;
}

/* One run of state on x matches ref to 1e-5 (reported under `what`). */
static void check_run(const ait_backend_config *cfg, void *state, const ait_tensor *x,
                      const ait_tensor *ref, const char *what, const char *spec) {
  ait_tensor *y = NULL;
  ait_status st = cfg->iface->infer(state, (const ait_tensor *const *)&x, 1, &y);
  double e = st == AIT_OK ? check_rel_diff(y, ref) : INFINITY;
  if (!(e <= 1e-5)) fprintf(stderr, "%s on %s: difference %g\n", what, spec, e);
  CHECK(e <= 1e-5);
  ait_tensor_free(y);
}

/* One random depthwise conv + activation against eager at every level
 * (from case 48: 3x3, dilation 1, the activations in turn). */
static void dw_case(int cs) {
  static int64_t dims[64][4];
  int64_t C = 1 + urand(40), H = 1 + urand(18), W = 1 + urand(urand(2) ? 18 : 40), N = 1 + urand(2);
  int64_t k = 1 + 2 * urand(4), kw = urand(3) ? k : 1 + 2 * urand(3), s = 1 + urand(2);
  int64_t d = urand(3) ? 1 : 2 + urand(2), act = urand(4);
  if (cs >= 48 && cs < 64) /* 3x3 undilated (native_nhwc_dw3*.c's rows), each activation */
    k = kw = 3, d = 1, act = cs % 4;
  if (cs >= 64) { /* the sliding rows (native_nhwc_dwr_tmpl.h): rows wide enough for
                   * interior runs, tail vectors, 5 columns mostly, stride 2 half the time,
                   * other kernel heights and row dilation now and then */
    kw = cs % 5 == 0 ? 7 : cs % 7 == 0 ? 3 : 5, k = urand(3) ? kw : 1 + 2 * urand(4);
    d = 1, s = 1 + cs % 2, act = cs % 4;
    W = 8 + urand(56), H = 1 + urand(10), C = 1 + urand(urand(2) ? 40 : 80);
  }
  int64_t pads[4] = {urand((uint32_t)k), urand((uint32_t)kw), urand((uint32_t)k),
                     urand((uint32_t)kw)};
  int64_t dh = cs >= 64 && cs % 6 == 0 ? 2 : d; /* dilated rows, undilated columns */
  int64_t spanh = (k - 1) * dh + 1, spanw = (kw - 1) * d + 1;
  if (H + pads[0] + pads[2] < spanh) H = spanh;
  if (W + pads[1] + pads[3] < spanw) W = spanw;
  tb_model *m = tb_new(17);
  int64_t *dx = dims[(2 * cs) % 64], *dw = dims[(2 * cs + 1) % 64];
  dx[0] = -1, dx[1] = C, dx[2] = H, dx[3] = W;
  const int64_t dy[4] = {-1, -1, -1, -1}, strides[2] = {s, s}, dil[2] = {dh, d};
  tb_input(m, "x", 1, 4, dx);
  tb_output(m, "y", 1, 4, dy);
  dw[0] = C, dw[1] = 1, dw[2] = k, dw[3] = kw;
  int64_t bd[1] = {C};
  init(m, "w", 4, dw, 0.5f);
  init(m, "b", 1, bd, 0.5f);
  int n = tb_node(m, "Conv", "dw", IN("x", "w", "b"), IN("a"));
  tb_attr_ints(m, n, "pads", 4, pads);
  tb_attr_ints(m, n, "strides", 2, strides);
  tb_attr_ints(m, n, "dilations", 2, dil);
  tb_attr_int(m, n, "group", C);
  if (act == 0) {
    tb_node(m, "HardSwish", "hs", IN("a"), IN("y"));
  } else if (act == 1) {
    tb_node(m, "Sigmoid", "sg", IN("a"), IN("g"));
    tb_node(m, "Mul", "mul", IN("a", "g"), IN("y"));
  } else if (act == 2) {
    int h = tb_node(m, "HardSigmoid", "hsg", IN("a"), IN("y"));
    tb_attr_float(m, h, "alpha", 0.3f);
    tb_attr_float(m, h, "beta", 0.4f);
  } else {
    tb_node(m, "Relu", "relu", IN("a"), IN("y")); /* the clamp */
  }
  ait_graph *g = tb_parse_graph(m);
  CHECK(g != NULL);
  if (!g) return;
  const int64_t xd[4] = {N, C, H, W};
  ait_tensor *x = ait_tensor_new(AIT_FLOAT32, 4, xd), *ref = NULL;
  float *xv = x->data;
  for (int64_t i = 0; i < ait_tensor_numel(x); i++)
    xv[i] = frand(3.0f);
  CHECK(ait_eager_run(g, (const ait_tensor *const *)&x, 1, &ref) == AIT_OK);
  char what[160];
  snprintf(what, sizeof what,
           "dw case %d (N %lld C %lld %lldx%lld k %lldx%lld s %lld d %lld act %lld)", cs,
           (long long)N, (long long)C, (long long)H, (long long)W, (long long)k, (long long)kw,
           (long long)s, (long long)d, (long long)act);
  static const char *const isas[] = {"avx512", "avx2", "portable"};
  for (int a = 0; ref && a < 3; a++)
    for (int t = 1; t <= 3; t += 2) {
      char spec[96];
      snprintf(spec, sizeof spec, "native:layout=nhwc,isa=%s,threads=%d", isas[a], t);
      ait_backend_config cfg;
      void *state = build_on(spec, g, &cfg, what);
      if (!state) continue;
      if (a == 1 && t == 1) { /* the activation went into the conv */
        const ait_graph *rg = ((nat_state *)state)->g;
        bool ok = check_count_op(rg, "FusedConvNhwc") == 1 &&
                  check_count_op(rg, "HardSwish") == 0 && check_count_op(rg, "Sigmoid") == 0 &&
                  check_count_op(rg, "HardSigmoid") == 0 && check_count_op(rg, "Relu") == 0;
        if (!ok) fprintf(stderr, "dw case %d: the activation was not fused\n", cs);
        CHECK(ok);
      }
      for (int run = 0; run < 2; run++)
        check_run(&cfg, state, x, ref, what, spec);
      cfg.iface->destroy(state);
    }
  ait_tensor_free(ref);
  ait_tensor_free(x);
  ait_graph_free(g);
}

/* A 3-channel stem on the graph's NCHW input (native_nhwc_stem3.h: 3x3 or
 * 7x7, stride 1 or 2, outputs in whole vectors or not, HardSwish, Relu or
 * nothing after it) through native at every level against eager. */
static void stem_case(int cs) {
  static const int64_t Ms[] = {8, 16, 24, 32, 48, 64, 80, 16};
  int64_t k = cs % 3 == 2 ? 7 : 3, s = cs % 4 == 3 ? 1 : 2, M = Ms[cs % 8], act = cs % 3;
  int64_t H = k + urand(30), W = k + urand(cs % 5 ? 40 : 130), N = 1 + urand(2);
  int64_t pads[4] = {urand((uint32_t)k), urand((uint32_t)k), urand((uint32_t)k),
                     urand((uint32_t)k)};
  static int64_t dx[4], dw[4];
  dx[0] = -1, dx[1] = 3, dx[2] = H, dx[3] = W;
  dw[0] = M, dw[1] = 3, dw[2] = k, dw[3] = k;
  const int64_t dy[4] = {-1, -1, -1, -1}, strides[2] = {s, s}, bd[1] = {M};
  tb_model *m = tb_new(17);
  tb_input(m, "x", 1, 4, dx);
  tb_output(m, "y", 1, 4, dy);
  init(m, "w", 4, dw, 0.4f);
  init(m, "b", 1, bd, 0.5f);
  int n = tb_node(m, "Conv", "stem", IN("x", "w", "b"), IN(act ? "a" : "y"));
  tb_attr_ints(m, n, "pads", 4, pads);
  tb_attr_ints(m, n, "strides", 2, strides);
  if (act == 1) tb_node(m, "HardSwish", "hs", IN("a"), IN("y"));
  if (act == 2) tb_node(m, "Relu", "relu", IN("a"), IN("y"));
  ait_graph *g = tb_parse_graph(m);
  CHECK(g != NULL);
  if (!g) return;
  const int64_t xd[4] = {N, 3, H, W};
  ait_tensor *x = ait_tensor_new(AIT_FLOAT32, 4, xd), *ref = NULL;
  float *xv = x->data;
  for (int64_t i = 0; i < ait_tensor_numel(x); i++)
    xv[i] = frand(2.0f);
  CHECK(ait_eager_run(g, (const ait_tensor *const *)&x, 1, &ref) == AIT_OK);
  char what[128];
  snprintf(what, sizeof what, "stem case %d (N %lld %lldx%lld k %lld s %lld M %lld act %lld)", cs,
           (long long)N, (long long)H, (long long)W, (long long)k, (long long)s, (long long)M,
           (long long)act);
  static const char *const isas[] = {"avx512", "avx2", "portable"};
  for (int a = 0; ref && a < 3; a++) {
    char spec[96];
    snprintf(spec, sizeof spec, "native:layout=nhwc,isa=%s,threads=%d", isas[a], 1 + 2 * (cs % 2));
    ait_backend_config cfg;
    void *state = build_on(spec, g, &cfg, what);
    if (!state) continue;
    check_run(&cfg, state, x, ref, what, spec);
    cfg.iface->destroy(state);
  }
  ait_tensor_free(ref);
  ait_tensor_free(x);
  ait_graph_free(g);
}

/* conv -> ReduceMean(axes 2, 3 as an attribute or, opset 18, an input;
 * keepdims 0 or 1) -> Relu: pooled in NHWC, against eager. */
static void test_mean_hw(void) {
  for (int v = 0; v < 4; v++) {
    bool in18 = v >= 2, keep = v % 2;
    int64_t C = 3 + urand(20), M = 5 + urand(30), H = 2 + urand(9), W = 2 + urand(9), N = 2;
    tb_model *m = tb_new(in18 ? 18 : 17);
    const int64_t dx[4] = {-1, C, H, W}, dy[4] = {-1, M, 1, 1}, wd[4] = {M, C, 3, 3}, bd[1] = {M},
                  pads[4] = {1, 1, 1, 1}, ad[1] = {2};
    tb_input(m, "x", 1, 4, dx);
    tb_output(m, "y", 1, keep ? 4 : 2, dy);
    init(m, "w", 4, wd, 0.4f);
    init(m, "b", 1, bd, 0.2f);
    int c = tb_node(m, "Conv", "conv", IN("x", "w", "b"), IN("a"));
    tb_attr_ints(m, c, "pads", 4, pads);
    const int64_t axes[2] = {v == 1 ? -1 : 2, v == 1 ? -2 : 3};
    int r;
    if (in18) {
      tb_init_i64(m, "axes", 1, ad, axes);
      r = tb_node(m, "ReduceMean", "mean", IN("a", "axes"), IN("p"));
    } else {
      r = tb_node(m, "ReduceMean", "mean", IN("a"), IN("p"));
      tb_attr_ints(m, r, "axes", 2, axes);
    }
    tb_attr_int(m, r, "keepdims", keep);
    tb_node(m, "Relu", "relu", IN("p"), IN("y"));
    ait_graph *g = tb_parse_graph(m);
    CHECK(g != NULL);
    if (!g) continue;
    const int64_t xd[4] = {N, C, H, W};
    ait_tensor *x = ait_tensor_new(AIT_FLOAT32, 4, xd), *ref = NULL;
    float *xv = x->data;
    for (int64_t i = 0; i < ait_tensor_numel(x); i++)
      xv[i] = frand(2.0f);
    CHECK(ait_eager_run(g, (const ait_tensor *const *)&x, 1, &ref) == AIT_OK);
    static const char *const isas[] = {"avx512", "avx2", "portable"};
    for (int a = 0; ref && a < 3; a++) {
      char spec[96];
      snprintf(spec, sizeof spec, "native:layout=nhwc,isa=%s,threads=%d", isas[a],
               1 + 2 * (a == 0));
      char what[32];
      snprintf(what, sizeof what, "mean %d", v);
      ait_backend_config cfg;
      void *state = build_on(spec, g, &cfg, what);
      if (!state) continue;
      const ait_graph *rg = ((nat_state *)state)->g;
      bool ok = check_count_op(rg, "Transpose") == 0 && check_count_op(rg, "ReduceMean") == 0;
      if (!ok) fprintf(stderr, "mean %d on %s: not pooled in NHWC\n", v, spec);
      CHECK(ok);
      for (int run = 0; run < 2; run++)
        check_run(&cfg, state, x, ref, what, spec);
      cfg.iface->destroy(state);
    }
    ait_tensor_free(ref);
    ait_tensor_free(x);
    ait_graph_free(g);
  }
}

/* The 3x3 depthwise row kernels (nat_nhwc512_dw_row, nat_nhwc256_dw_row:
 * native_nhwc_dw3512.c, native_nhwc_dw3256.c) called directly against a
 * double reference on random rows: widths 1-130 (runs of every length,
 * both borders), channel ranges [c0, c1) of up to 200 channels (tail
 * vectors), strides 1-3, left padding 0-2, rows in the padding, with and
 * without bias and residual, a clamp or none. */
typedef void (*dw_row_fn)(const float *const rows[3], int64_t W, int64_t OW, int64_t C, int64_t c0,
                          int64_t c1, int64_t S, int64_t pl, const float *w, const float *b,
                          const float *z, float lo, float hi, float *y);

static void test_dw_rows(void) {
  dw_row_fn fns[2] = {nat_nhwc512_dw_row, nat_nhwc256_dw_row};
  bool have[2] = {nat_nhwc512_available(), nat_nhwc256_available()};
  for (int cs = 0; cs < 300; cs++) {
    int64_t W = 1 + urand(cs % 3 ? 40 : 130), C = 1 + urand(cs % 4 ? 48 : 200), S = 1 + urand(3);
    if (cs % 5 == 4) S = 1 + urand(2);
    int64_t pl = urand(3), OW = (W + pl + urand(3) - 3) / S + 1;
    if (OW < 1) OW = 1;
    int64_t c0 = urand(3) ? 0 : urand((uint32_t)C),
            c1 = urand(3) ? C : c0 + 1 + urand((uint32_t)(C - c0));
    bool has_b = urand(4) != 0, has_z = urand(3) == 0, clamp = urand(2) != 0;
    float lo = clamp ? 0.0f : -INFINITY, hi = clamp ? 1.5f : INFINITY;
    float *x = malloc(sizeof(float) * 3 * W * C), *w = malloc(sizeof(float) * 9 * C);
    float *b = malloc(sizeof(float) * C), *z = malloc(sizeof(float) * OW * C);
    float *y = malloc(sizeof(float) * OW * C);
    for (int64_t i = 0; i < 3 * W * C; i++)
      x[i] = frand(2.0f);
    for (int64_t i = 0; i < 9 * C; i++)
      w[i] = frand(1.0f);
    for (int64_t i = 0; i < C; i++)
      b[i] = frand(1.0f);
    for (int64_t i = 0; i < OW * C; i++)
      z[i] = frand(1.0f);
    const float *rows[3];
    for (int ki = 0; ki < 3; ki++)
      rows[ki] = urand(5) ? x + ki * W * C : NULL;
    for (int l = 0; l < 2; l++) {
      if (!have[l]) continue;
      for (int64_t i = 0; i < OW * C; i++)
        y[i] = 1234.0f;
      fns[l](rows, W, OW, C, c0, c1, S, pl, w, has_b ? b : NULL, has_z ? z : NULL, lo, hi, y);
      double worst = 0;
      bool outside = false;
      for (int64_t ow = 0; ow < OW; ow++)
        for (int64_t m = 0; m < C; m++) {
          float got = y[ow * C + m];
          if (m < c0 || m >= c1) {
            outside |= got != 1234.0f;
            continue;
          }
          double r = has_b ? b[m] : 0.0;
          for (int ki = 0; ki < 3; ki++)
            for (int kj = 0; kj < 3; kj++) {
              int64_t iw = ow * S - pl + kj;
              if (rows[ki] && iw >= 0 && iw < W)
                r += (double)rows[ki][iw * C + m] * w[(3 * ki + kj) * C + m];
            }
          if (has_z) r += z[ow * C + m];
          r = r < lo ? lo : r > hi ? hi : r;
          double e = fabs(got - r) / (1.0 + fabs(r));
          if (!(e <= worst)) worst = e;
        }
      if (!(worst <= 1e-5) || outside)
        fprintf(stderr,
                "dw row case %d (%s W %lld OW %lld C %lld [%lld, %lld) S %lld pl %lld): "
                "difference %g%s\n",
                cs, l ? "avx2" : "avx512", (long long)W, (long long)OW, (long long)C, (long long)c0,
                (long long)c1, (long long)S, (long long)pl, worst,
                outside ? ", wrote outside its channels" : "");
      CHECK(worst <= 1e-5 && !outside);
    }
    free(x), free(w), free(b), free(z), free(y);
  }
}

/* Activation `act` of `x` into `y` as the exporters write it: Relu,
 * HardSwish, x * Sigmoid(x) (SiLU) or HardSigmoid; `tag` names its nodes. */
static void act_nodes(tb_model *m, int act, const char *tag, const char *x, const char *y) {
  char a[32], b[32], t[32];
  snprintf(a, sizeof a, "%s_act", tag);
  snprintf(b, sizeof b, "%s_mul", tag);
  snprintf(t, sizeof t, "%s_sig", tag);
  if (act == 0) {
    tb_node(m, "Relu", a, IN(x), IN(y));
  } else if (act == 1) {
    tb_node(m, "HardSwish", a, IN(x), IN(y));
  } else if (act == 2) {
    tb_node(m, "Sigmoid", a, IN(x), IN(t));
    tb_node(m, "Mul", b, IN(x, t), IN(y));
  } else {
    int h = tb_node(m, "HardSigmoid", a, IN(x), IN(y));
    tb_attr_float(m, h, "alpha", 0.3f);
    tb_attr_float(m, h, "beta", 0.4f);
  }
}

/* Inverted residual blocks of any window (native_nhwc.c's
 * FusedInvertedResidual on K x K depthwise rows: MnasNet's and
 * MobileNetV3's 5x5s; small ones as three stages through scratch):
 * expand 1x1 + act, depthwise K x K (K 3, 5, 7,
 * pads K / 2, stride 1 or 2) + act (Relu, HardSwish, SiLU, HardSigmoid:
 * past the clamp, MobileNetV3's and EfficientNet's), project 1x1 (+ the
 * input when the shapes allow), fused into one node and run at every level on 1 and 3
 * threads, bands in order and last first (each band then takes the rows
 * its neighbour shares), maps tall enough for bands and small enough for
 * channel slices, against eager. */
static void block_case(int cs) {
  int64_t K = cs % 3 == 0 ? 3 : cs % 3 == 1 ? 5 : 7, s = 1 + cs / 3 % 2, N = 1 + urand(2);
  int64_t C = 4 + urand(28), E = C * (2 + urand(4)) + urand(9), M = urand(2) ? C : 4 + urand(40);
  int64_t H = cs % 4 < 2 ? 24 + urand(40) : 2 + urand(14), W = 3 + urand(cs % 2 ? 60 : 20);
  bool res = s == 1 && M == C;
  int ea = cs / 6 % 4, da = (cs / 6 + cs % 2) % 4; /* the stages' activations */
  static int64_t dx[4], dwe[4], dwd[4], dwp[4], be[1], bp[1];
  dx[0] = -1, dx[1] = C, dx[2] = H, dx[3] = W;
  dwe[0] = E, dwe[1] = C, dwe[2] = dwe[3] = 1;
  dwd[0] = E, dwd[1] = 1, dwd[2] = dwd[3] = K;
  dwp[0] = M, dwp[1] = E, dwp[2] = dwp[3] = 1;
  be[0] = E, bp[0] = M;
  const int64_t dy[4] = {-1, -1, -1, -1}, strides[2] = {s, s},
                pads[4] = {K / 2, K / 2, K / 2, K / 2};
  tb_model *m = tb_new(17);
  tb_input(m, "x", 1, 4, dx);
  tb_output(m, "y", 1, 4, dy);
  init(m, "we", 4, dwe, 0.4f);
  init(m, "be", 1, be, 0.3f);
  init(m, "wd", 4, dwd, 0.4f);
  init(m, "bd", 1, be, 0.2f);
  init(m, "wp", 4, dwp, 0.3f);
  init(m, "bp", 1, bp, 0.2f);
  tb_node(m, "Conv", "expand", IN("x", "we", "be"), IN("e0"));
  act_nodes(m, ea, "expand", "e0", "e1");
  int n = tb_node(m, "Conv", "dw", IN("e1", "wd", "bd"), IN("d0"));
  tb_attr_int(m, n, "group", E);
  tb_attr_ints(m, n, "pads", 4, pads);
  tb_attr_ints(m, n, "strides", 2, strides);
  act_nodes(m, da, "dw", "d0", "d1");
  tb_node(m, "Conv", "project", IN("d1", "wp", "bp"), IN(res ? "p0" : "y"));
  if (res) tb_node(m, "Add", "residual", IN("p0", "x"), IN("y"));
  ait_graph *g = tb_parse_graph(m);
  CHECK(g != NULL);
  if (!g) return;
  const int64_t xd[4] = {N, C, H, W};
  ait_tensor *x = ait_tensor_new(AIT_FLOAT32, 4, xd), *ref = NULL;
  float *xv = x->data;
  for (int64_t i = 0; i < ait_tensor_numel(x); i++)
    xv[i] = frand(2.0f);
  CHECK(ait_eager_run(g, (const ait_tensor *const *)&x, 1, &ref) == AIT_OK);
  char what[160];
  snprintf(what, sizeof what,
           "block case %d (N %lld C %lld E %lld M %lld %lldx%lld k %lld s %lld acts %d %d)", cs,
           (long long)N, (long long)C, (long long)E, (long long)M, (long long)H, (long long)W,
           (long long)K, (long long)s, ea, da);
  static const char *const isas[] = {"avx512", "avx2", "portable"};
  nat_set_scratch_poison(true);
  for (int a = 0; ref && a < 3; a++)
    for (int t = 1; t <= 3; t += 2)
      for (int mode = 0; mode < 3; mode++) {
        /* the block's rows, bands last first, its three stages through scratch */
        char spec[96];
        snprintf(spec, sizeof spec, "native:layout=nhwc,isa=%s,threads=%d", isas[a], t);
        nat_nhwc_set_bands_reversed(mode == 1);
        nat_nhwc_set_staged_bytes(mode == 2 ? INT64_MAX : 0);
        ait_backend_config cfg;
        void *state = build_on(spec, g, &cfg, what);
        if (!state) continue;
        const ait_graph *rg = ((nat_state *)state)->g;
        bool ok = check_count_op(rg, "FusedInvertedResidual") == 1;
        if (!ok) fprintf(stderr, "%s on %s: not one block\n", what, spec);
        CHECK(ok);
        for (int run = 0; run < 2; run++)
          check_run(&cfg, state, x, ref, what, spec);
        cfg.iface->destroy(state);
      }
  nat_nhwc_set_bands_reversed(false);
  nat_nhwc_set_staged_bytes(-1);
  nat_set_scratch_poison(false);
  ait_tensor_free(ref);
  ait_tensor_free(x);
  ait_graph_free(g);
}

/* The K x K depthwise rows of a block (nat_nhwc512_dwr_row,
 * nat_nhwc256_dwr_row: native_nhwc_dwr_tmpl.h) called directly against a
 * double reference: K 3, 5, 7, stride 1 or 2, left padding K / 2, widths
 * 1-100, channel ranges starting on a vector (tail vectors), rows in the
 * padding, with and without bias, a clamp or none, then an activation past
 * it or none. */
typedef void (*dwr_row_fn)(const float *const *rows, int K, int S, int64_t W, int64_t OW, int64_t C,
                           int64_t c0, int64_t c1, int64_t pl, const float *w, const float *b,
                           float lo, float hi, const ait_act *post, float *y);

static void test_dwr_rows(void) {
  dwr_row_fn fns[2] = {nat_nhwc512_dwr_row, nat_nhwc256_dwr_row};
  bool have[2] = {nat_nhwc512_available(), nat_nhwc256_available()};
  const int lanes[2] = {16, 8};
  for (int cs = 0; cs < 240; cs++) {
    int K = 3 + 2 * (cs % 3), S = 1 + cs / 3 % 2;
    int64_t W = 1 + urand(cs % 4 ? 40 : 100), C = 1 + urand(cs % 5 ? 48 : 160), pl = K / 2;
    int64_t OW = (W + 2 * pl - K) / S + 1;
    if (OW < 1) OW = 1;
    bool has_b = urand(4) != 0, clamp = urand(2) != 0;
    int pk = urand(2); /* none or HardSwish */
    ait_act post;
    memset(&post, 0, sizeof post);
    post.kind = AIT_ACT_HARD_SWISH;
    float lo = clamp ? 0.0f : -INFINITY, hi = clamp ? 1.5f : INFINITY;
    float *x = malloc(sizeof(float) * K * W * C), *w = malloc(sizeof(float) * K * K * C);
    float *b = malloc(sizeof(float) * C), *y = malloc(sizeof(float) * OW * C);
    for (int64_t i = 0; i < K * W * C; i++)
      x[i] = frand(2.0f);
    for (int64_t i = 0; i < K * K * C; i++)
      w[i] = frand(1.0f);
    for (int64_t i = 0; i < C; i++)
      b[i] = frand(1.0f);
    const float *rows[7];
    for (int ki = 0; ki < K; ki++)
      rows[ki] = urand(5) ? x + ki * W * C : NULL;
    for (int l = 0; l < 2; l++) {
      if (!have[l]) continue;
      int64_t V = (C + lanes[l] - 1) / lanes[l], v0 = urand(3) ? 0 : urand((uint32_t)V);
      int64_t c0 = v0 * lanes[l],
              c1 = urand(3) ? C : (v0 + 1 + urand((uint32_t)(V - v0))) * lanes[l];
      if (c1 > C) c1 = C;
      for (int64_t i = 0; i < OW * C; i++)
        y[i] = 1234.0f;
      fns[l](rows, K, S, W, OW, C, c0, c1, pl, w, has_b ? b : NULL, lo, hi, pk == 1 ? &post : NULL,
             y);
      double worst = 0;
      bool outside = false;
      for (int64_t ow = 0; ow < OW; ow++)
        for (int64_t m = 0; m < C; m++) {
          float got = y[ow * C + m];
          if (m < c0 || m >= c1) {
            outside |= got != 1234.0f;
            continue;
          }
          double r = has_b ? b[m] : 0.0;
          for (int ki = 0; ki < K; ki++)
            for (int kj = 0; kj < K; kj++) {
              int64_t iw = ow * S - pl + kj;
              if (rows[ki] && iw >= 0 && iw < W)
                r += (double)rows[ki][iw * C + m] * w[(K * ki + kj) * C + m];
            }
          r = r < lo ? lo : r > hi ? hi : r;
          if (pk == 1) {
            double t = r / 6.0 + 0.5;
            r *= t < 0 ? 0 : t > 1 ? 1 : t;
          }
          double e = fabs(got - r) / (1.0 + fabs(r));
          if (!(e <= worst)) worst = e;
        }
      if (!(worst <= 1e-5) || outside)
        fprintf(stderr,
                "dwr row case %d (%s K %d S %d W %lld OW %lld C %lld [%lld, %lld)): "
                "difference %g%s\n",
                cs, l ? "avx2" : "avx512", K, S, (long long)W, (long long)OW, (long long)C,
                (long long)c0, (long long)c1, worst, outside ? ", wrote outside its channels" : "");
      CHECK(worst <= 1e-5 && !outside);
    }
    free(x), free(w), free(b), free(y);
  }
}

/* Squeeze-excite gates into the projection (native_layout.c
 * fuse_se_scales, native_nhwc.c run_pw_scaled): depthwise 3x3 + act, its
 * global pool, fc1 + Relu, fc2 + Sigmoid or HardSigmoid, Mul (either
 * order) of the depthwise map by the gate, project 1x1: the Mul goes into
 * the projection, on weights scaled per image (maps with more pixels than
 * output channels) or a scaled copy, at every level on 1 and 3 threads,
 * batch 1 and 3, against eager. */
static void se_case(int cs) {
  int64_t C = 4 + urand(60), R = 2 + urand(12), M = 4 + urand(cs % 2 ? 90 : 30);
  int64_t H = cs % 3 ? 1 + urand(9) : 12 + urand(20), W = cs % 3 ? 1 + urand(9) : 12 + urand(20);
  static int64_t dx[4], dwd[4], dw1[4], dw2[4], dwp[4], bc[1], br[1], bm[1];
  dx[0] = -1, dx[1] = C, dx[2] = H, dx[3] = W;
  dwd[0] = C, dwd[1] = 1, dwd[2] = dwd[3] = 3;
  dw1[0] = R, dw1[1] = C, dw1[2] = dw1[3] = 1;
  dw2[0] = C, dw2[1] = R, dw2[2] = dw2[3] = 1;
  dwp[0] = M, dwp[1] = C, dwp[2] = dwp[3] = 1;
  bc[0] = C, br[0] = R, bm[0] = M;
  const int64_t dy[4] = {-1, -1, -1, -1}, pads[4] = {1, 1, 1, 1};
  tb_model *m = tb_new(17);
  tb_input(m, "x", 1, 4, dx);
  tb_output(m, "y", 1, 4, dy);
  init(m, "wd", 4, dwd, 0.4f);
  init(m, "bd", 1, bc, 0.2f);
  init(m, "w1", 4, dw1, 0.4f);
  init(m, "b1", 1, br, 0.2f);
  init(m, "w2", 4, dw2, 0.4f);
  init(m, "b2", 1, bc, 0.2f);
  init(m, "wp", 4, dwp, 0.3f);
  init(m, "bp", 1, bm, 0.2f);
  int n = tb_node(m, "Conv", "dw", IN("x", "wd", "bd"), IN("d0"));
  tb_attr_int(m, n, "group", C);
  tb_attr_ints(m, n, "pads", 4, pads);
  act_nodes(m, cs % 3 == 1 ? 1 : cs % 3 == 2 ? 2 : 0, "dw", "d0", "d1");
  tb_node(m, "GlobalAveragePool", "gap", IN("d1"), IN("g0"));
  tb_node(m, "Conv", "fc1", IN("g0", "w1", "b1"), IN("f0"));
  tb_node(m, "Relu", "fc1_relu", IN("f0"), IN("f1"));
  tb_node(m, "Conv", "fc2", IN("f1", "w2", "b2"), IN("f2"));
  if (cs % 2)
    tb_node(m, "Sigmoid", "gate", IN("f2"), IN("s"));
  else
    act_nodes(m, 3, "gate", "f2", "s");
  if (cs % 4 < 2)
    tb_node(m, "Mul", "scale", IN("d1", "s"), IN("x1"));
  else
    tb_node(m, "Mul", "scale", IN("s", "d1"), IN("x1"));
  tb_node(m, "Conv", "project", IN("x1", "wp", "bp"), IN("y"));
  ait_graph *g = tb_parse_graph(m);
  CHECK(g != NULL);
  if (!g) return;
  char what[128];
  snprintf(what, sizeof what, "se case %d (C %lld R %lld M %lld %lldx%lld)", cs, (long long)C,
           (long long)R, (long long)M, (long long)H, (long long)W);
  static const char *const isas[] = {"avx512", "avx2", "portable"};
  for (int64_t N = 1; N <= 3; N += 2) {
    const int64_t xd[4] = {N, C, H, W};
    ait_tensor *x = ait_tensor_new(AIT_FLOAT32, 4, xd), *ref = NULL;
    float *xv = x->data;
    for (int64_t i = 0; i < ait_tensor_numel(x); i++)
      xv[i] = frand(2.0f);
    CHECK(ait_eager_run(g, (const ait_tensor *const *)&x, 1, &ref) == AIT_OK);
    for (int a = 0; ref && a < 3; a++)
      for (int t = 1; t <= 3; t += 2) {
        char spec[96];
        snprintf(spec, sizeof spec, "native:layout=nhwc,isa=%s,threads=%d", isas[a], t);
        ait_backend_config cfg;
        void *state = build_on(spec, g, &cfg, what);
        if (!state) continue;
        const ait_graph *rg = ((nat_state *)state)->g;
        const ait_node *q = NULL;
        for (int i = 0; i < rg->n_nodes; i++)
          if (!strcmp(rg->nodes[i].name, "project")) q = &rg->nodes[i];
        bool ok = check_count_op(rg, "Mul") == 0 && q && q->n_in == 5;
        if (!ok) fprintf(stderr, "%s on %s: the gate was not fused\n", what, spec);
        CHECK(ok);
        for (int run = 0; run < 2; run++)
          check_run(&cfg, state, x, ref, what, spec);
        cfg.iface->destroy(state);
      }
    ait_tensor_free(ref);
    ait_tensor_free(x);
  }
  ait_graph_free(g);
}

int main(void) {
  for (int cs = 0; cs < 24; cs++)
    se_case(cs);
  test_dwr_rows();
  for (int cs = 0; cs < 24; cs++)
    block_case(cs);
  test_dw_rows();
  test_mean_hw();
  test_post_passes();
  for (int cs = 0; cs < 96; cs++)
    dw_case(cs);
  for (int cs = 0; cs < 24; cs++)
    stem_case(cs);
  return check_result("test_native_mobile");
}
