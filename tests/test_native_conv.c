/* Native's convolutions (native_conv*.c) against the eager reference on
 * random shapes: 1-D, 2-D and 3-D; groups 1, 2, 4 and depthwise, channel
 * multipliers; kernels 1 to 7, strides 1 to 3, dilations 1 and 2, uneven
 * pads and every auto_pad; batch 1 and 3; FusedConv's bias, residual and
 * activation (Conv + Add + activation, fused by native); ConvTranspose with groups, strides, pads,
 * output_padding and dilations. Each case runs at every ISA level (avx512, avx2, portable) on 1 and
 * 4 threads, in NCHW and through the layout pass in NHWC (2-D convs with explicit pads, on
 * native_nhwc*.c's kernels), and none may fall back to the reference kernel. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/native/native.h"
#include "backends/native/native_mm.h"
#include "check.h"
#include "graph_check.h"
#include "model_builder.h"
#include "runtime/eager.h"

static uint32_t rng = 777;
static uint32_t urand(uint32_t n) {
  rng = rng * 1664525u + 1013904223u;
  return (rng >> 8) % n;
}
static float frand(void) { return (float)urand(65536) / 32768.0f - 1.0f; }
static void fill(float *v, int64_t n, float scale) {
  for (int64_t i = 0; i < n; i++)
    v[i] = frand() * scale;
}

typedef struct conv_case {
  bool transpose;
  int nsp;
  int64_t N, C, M, group;
  int64_t in[3], k[3], s[3], d[3], pb[3], pe[3], op[3]; /* op: output_padding */
  const char *auto_pad;                                 /* NULL: explicit pads */
  bool bias, residual;
  const char *act; /* FusedConv's activation, NULL: a plain Conv */
  bool nhwc_in;    /* 2-D: x given as [N, H, W, C] and transposed to NCHW, so that the
                    * layout pass hands the conv a channels-last input */
  bool w_in;       /* W a graph input (after x and z), not a constant: nothing packed
                    * once per node, the kernels' scratch holds it */
} conv_case;

static int64_t out_size(const conv_case *c, int i) {
  int64_t dk = (c->k[i] - 1) * c->d[i] + 1, n = c->in[i], s = c->s[i];
  if (c->transpose) {
    if (c->auto_pad && strcmp(c->auto_pad, "VALID")) return n * s;
    int64_t pb = c->auto_pad ? 0 : c->pb[i], pe = c->auto_pad ? 0 : c->pe[i];
    return s * (n - 1) + c->op[i] + dk - pb - pe;
  }
  if (c->auto_pad && strcmp(c->auto_pad, "VALID")) return (n + s - 1) / s;
  if (c->auto_pad) return (n - dk) / s + 1;
  return (n + c->pb[i] + c->pe[i] - dk) / s + 1;
}

static void describe(const conv_case *c, char *buf, size_t size) {
  snprintf(
      buf, size,
      "%s %dD N%lld C%lld M%lld g%lld in %lldx%lldx%lld k %lldx%lldx%lld s %lldx%lldx%lld d "
      "%lldx%lldx%lld pads %lld,%lld,%lld/%lld,%lld,%lld op %lld,%lld,%lld auto_pad %s bias %d "
      "res %d act %s",
      c->transpose ? "ConvTranspose" : "Conv", c->nsp, (long long)c->N, (long long)c->C,
      (long long)c->M, (long long)c->group, (long long)c->in[0], (long long)c->in[1],
      (long long)c->in[2], (long long)c->k[0], (long long)c->k[1], (long long)c->k[2],
      (long long)c->s[0], (long long)c->s[1], (long long)c->s[2], (long long)c->d[0],
      (long long)c->d[1], (long long)c->d[2], (long long)c->pb[0], (long long)c->pb[1],
      (long long)c->pb[2], (long long)c->pe[0], (long long)c->pe[1], (long long)c->pe[2],
      (long long)c->op[0], (long long)c->op[1], (long long)c->op[2],
      c->auto_pad ? c->auto_pad : "-", c->bias, c->residual, c->act ? c->act : "-");
}

/* The graph of one case: x (and z for a residual) in, y out. */
static ait_graph *case_graph(const conv_case *c, int64_t *ydims) {
  int rank = c->nsp + 2;
  int64_t xd[5] = {c->N, c->C}, wd[5], bd[1] = {c->M};
  ydims[0] = c->N, ydims[1] = c->M;
  if (c->transpose)
    wd[0] = c->C, wd[1] = c->M / c->group;
  else
    wd[0] = c->M, wd[1] = c->C / c->group;
  int64_t wn = wd[0] * wd[1];
  for (int i = 0; i < c->nsp; i++) {
    xd[2 + i] = c->in[i];
    wd[2 + i] = c->k[i];
    wn *= c->k[i];
    ydims[2 + i] = out_size(c, i);
  }
  float *w = malloc(sizeof(float) * (size_t)wn), *b = malloc(sizeof(float) * (size_t)c->M);
  fill(w, wn, 0.5f);
  fill(b, c->M, 0.5f);
  tb_model *m = tb_new(17);
  if (c->nhwc_in) {
    int64_t td[4] = {xd[0], xd[2], xd[3], xd[1]}, perm[4] = {0, 3, 1, 2};
    tb_input(m, "xt", 1, rank, td);
    int t = tb_node(m, "Transpose", "to_nchw", (const char *const[]){"xt", NULL},
                    (const char *const[]){"x", NULL});
    tb_attr_ints(m, t, "perm", 4, perm);
  } else {
    tb_input(m, "x", 1, rank, xd);
  }
  if (c->residual) tb_input(m, "z", 1, rank, ydims);
  if (c->w_in)
    tb_input(m, "w", 1, rank, wd);
  else
    tb_init_f32(m, "w", rank, wd, w);
  tb_output(m, "y", 1, rank, ydims);
  tb_init_f32(m, "b", 1, bd, b);
  free(w);
  free(b);
  const char *const in_plain[] = {"x", "w", NULL}, *const in_bias[] = {"x", "w", "b", NULL};
  const char *const *ins = c->bias ? in_bias : in_plain;
  /* the residual Add and the activation after it: native's fusion makes
   * them one FusedConv */
  bool res = c->residual && !c->transpose, act = c->act && c->act[0] && !c->transpose;
  int node = tb_node(m, c->transpose ? "ConvTranspose" : "Conv", "conv", ins,
                     (const char *const[]){res || act ? "c" : "y", NULL});
  if (res)
    tb_node(m, "Add", "res", (const char *const[]){"c", "z", NULL},
            (const char *const[]){act ? "r" : "y", NULL});
  if (act && !strcmp(c->act, "SiLU")) { /* x * Sigmoid(x): native's epilogue program */
    const char *a = res ? "r" : "c";
    tb_node(m, "Sigmoid", "sig", (const char *const[]){a, NULL}, (const char *const[]){"s", NULL});
    tb_node(m, "Mul", "silu", (const char *const[]){a, "s", NULL},
            (const char *const[]){"y", NULL});
  } else if (act) {
    tb_node(m, c->act, "act", (const char *const[]){res ? "r" : "c", NULL},
            (const char *const[]){"y", NULL});
  }
  int64_t pads[6];
  for (int i = 0; i < c->nsp; i++)
    pads[i] = c->pb[i], pads[c->nsp + i] = c->pe[i];
  /* kernel_shape comes from W; at most 8 attributes (model_builder) */
  tb_attr_ints(m, node, "strides", c->nsp, c->s);
  tb_attr_ints(m, node, "dilations", c->nsp, c->d);
  if (c->auto_pad)
    tb_attr_str(m, node, "auto_pad", c->auto_pad);
  else
    tb_attr_ints(m, node, "pads", 2 * c->nsp, pads);
  if (c->group > 1) tb_attr_int(m, node, "group", c->group);
  if (c->transpose) tb_attr_ints(m, node, "output_padding", c->nsp, c->op);
  return tb_parse_graph(m);
}

static ait_status run_on(const char *spec, const ait_graph *g, const ait_tensor *const *in,
                         int n_in, ait_tensor **out) {
  ait_backend_config cfg;
  AIT_TRY(ait_backend_config_parse(spec, &cfg));
  void *state = NULL;
  AIT_TRY(cfg.iface->build(&cfg, g, NULL, &state));
  /* twice: the second run reads what the first packed (nat_node_pack) */
  ait_tensor *first = NULL;
  *out = NULL;
  ait_status st = cfg.iface->infer(state, in, n_in, &first);
  if (st == AIT_OK) st = cfg.iface->infer(state, in, n_in, out);
  cfg.iface->destroy(state);
  if (st == AIT_OK && check_rel_diff(first, *out) != 0.0) {
    fprintf(stderr, "%s: the second run differs from the first\n", spec);
    st = AIT_E_INTERNAL;
  }
  ait_tensor_free(first);
  return st;
}

static int cases_run;

static void check_case(const conv_case *c) {
  char what[512];
  describe(c, what, sizeof what);
  int64_t yd[5];
  ait_graph *g = case_graph(c, yd);
  CHECK(g != NULL);
  if (!g) return;
  int rank = c->nsp + 2;
  int64_t xd[5] = {c->N, c->C};
  for (int i = 0; i < c->nsp; i++)
    xd[2 + i] = c->in[i];
  if (c->nhwc_in) xd[1] = c->in[0], xd[2] = c->in[1], xd[3] = c->C;
  ait_tensor *in[3] = {ait_tensor_new(AIT_FLOAT32, rank, xd), NULL, NULL};
  fill(in[0]->data, ait_tensor_numel(in[0]), 1.0f);
  int n_in = 1;
  if (c->residual) {
    in[1] = ait_tensor_new(AIT_FLOAT32, rank, yd);
    fill(in[1]->data, ait_tensor_numel(in[1]), 1.0f);
    n_in = 2;
  }
  if (c->w_in) { /* W [M, C/group, k...] (no ConvTranspose here) */
    int64_t wd[5] = {c->M, c->C / c->group};
    for (int i = 0; i < c->nsp; i++)
      wd[2 + i] = c->k[i];
    in[n_in] = ait_tensor_new(AIT_FLOAT32, rank, wd);
    fill(in[n_in]->data, ait_tensor_numel(in[n_in]), 0.5f);
    n_in++;
  }
  ait_tensor *ref = NULL;
  ait_status st = ait_eager_run(g, (const ait_tensor *const *)in, n_in, &ref);
  if (st != AIT_OK) fprintf(stderr, "%s: eager: %s\n", what, ait_last_error());
  CHECK(st == AIT_OK);
  static const char *const isas[] = {"avx512", "avx2", "portable"};
  static const int threads[] = {1, 4};
  /* NCHW (native_conv*.c), then NHWC (the layout pass; native_nhwc*.c),
   * which moves 2-D convs with explicit pads */
  bool nhwc_conv = c->nsp == 2 && !c->transpose && !c->auto_pad;
  for (int lay = 0; ref && lay < 2; lay++)
    for (int a = 0; a < 3; a++)
      for (int t = 0; t < 2; t++) {
        char spec[96];
        snprintf(spec, sizeof spec, "native:layout=%s,isa=%s,threads=%d", lay ? "nhwc" : "nchw",
                 isas[a], threads[t]);
        long long before = nat_conv_declined(), nb = nat_conv_nhwc_declined();
        long long ran = nat_conv_nhwc_runs();
        ait_tensor *y = NULL;
        st = run_on(spec, g, (const ait_tensor *const *)in, n_in, &y);
        double d = st == AIT_OK ? check_rel_diff(y, ref) : INFINITY;
        long long fell = nat_conv_declined() - before + nat_conv_nhwc_declined() - nb;
        bool moved = nat_conv_nhwc_runs() > ran;
        if (!(d <= 1e-4) || fell || (lay && nhwc_conv && !moved))
          fprintf(stderr, "%s on %s: difference %g, %lld fallback(s), nhwc %d (%s)\n", what, spec,
                  d, fell, moved, st == AIT_OK ? "ok" : ait_last_error());
        CHECK(d <= 1e-4);
        CHECK(fell == 0);
        CHECK(!lay || moved == nhwc_conv);
        ait_tensor_free(y);
      }
  cases_run++;
  ait_tensor_free(ref);
  ait_tensor_free(in[0]);
  ait_tensor_free(in[1]);
  ait_tensor_free(in[2]);
  ait_graph_free(g);
}

/* A case with the given shape essentials, everything else plain. */
static conv_case base(int nsp, int64_t N, int64_t C, int64_t M, int64_t group, int64_t n, int64_t k,
                      int64_t s, int64_t d) {
  conv_case c;
  memset(&c, 0, sizeof c);
  c.nsp = nsp, c.N = N, c.C = C, c.M = M, c.group = group;
  for (int i = 0; i < 3; i++)
    c.in[i] = n, c.k[i] = k, c.s[i] = s, c.d[i] = d;
  return c;
}

static void test_fixed(void) {
  /* depthwise 3x3 stride 1 and 2, 5x5, 7x7 dilated, with multiplier */
  conv_case c = base(2, 1, 8, 8, 8, 13, 3, 1, 1);
  c.pb[0] = c.pb[1] = c.pe[0] = c.pe[1] = 1;
  check_case(&c);
  c.s[0] = c.s[1] = 2, c.act = "Relu", c.bias = true;
  check_case(&c);
  c = base(2, 3, 6, 12, 6, 11, 5, 1, 2);
  c.pb[0] = 4, c.pb[1] = 1, c.pe[0] = 0, c.pe[1] = 3, c.residual = true, c.act = "HardSwish";
  check_case(&c);
  c = base(2, 1, 4, 4, 4, 20, 7, 3, 1);
  c.auto_pad = "SAME_UPPER";
  check_case(&c);
  c.auto_pad = "SAME_LOWER";
  check_case(&c);
  c.auto_pad = "VALID";
  check_case(&c);
  /* grouped, pointwise, strided pointwise, 1-D, 3-D */
  c = base(2, 3, 8, 12, 4, 9, 3, 1, 1);
  c.pb[0] = c.pb[1] = c.pe[0] = c.pe[1] = 1, c.residual = true, c.act = "Sigmoid";
  check_case(&c);
  c = base(2, 2, 16, 24, 1, 10, 1, 1, 1);
  c.bias = true, c.act = "Relu";
  check_case(&c);
  c = base(2, 1, 16, 24, 2, 10, 1, 2, 1);
  check_case(&c);
  c = base(1, 3, 5, 7, 1, 40, 5, 2, 1);
  c.pb[0] = 3, c.pe[0] = 1, c.bias = true;
  check_case(&c);
  c = base(1, 1, 6, 6, 6, 33, 7, 1, 2);
  c.auto_pad = "SAME_UPPER", c.act = "Tanh";
  check_case(&c);
  c = base(3, 1, 4, 6, 2, 6, 3, 1, 1);
  c.pb[0] = c.pb[1] = c.pb[2] = 1, c.pe[2] = 2, c.bias = true, c.residual = true, c.act = "Relu";
  check_case(&c);
  c = base(3, 2, 4, 8, 4, 7, 3, 2, 1);
  c.pb[1] = 1;
  check_case(&c);
  /* a large input: several pixel blocks of im2col, channel blocks */
  c = base(2, 1, 32, 128, 1, 40, 3, 1, 1);
  c.pb[0] = c.pb[1] = c.pe[0] = c.pe[1] = 1, c.bias = true, c.residual = true, c.act = "Relu";
  check_case(&c);
  c = base(2, 1, 64, 64, 8, 30, 3, 1, 1);
  c.pb[0] = c.pb[1] = c.pe[0] = c.pe[1] = 1;
  check_case(&c);
  /* grouped with more than 64 channels a group (SGEMM), and with 2, 5 and
   * 13 (register tiles of 8 and 4 with a remainder) */
  c = base(2, 2, 4, 136, 2, 9, 3, 1, 1);
  c.bias = true, c.act = "Relu";
  check_case(&c);
  c = base(2, 1, 4, 26, 2, 12, 3, 2, 1);
  c.pb[0] = c.pb[1] = 1, c.bias = true, c.residual = true;
  check_case(&c);
  c = base(2, 3, 10, 10, 2, 8, 3, 1, 2);
  c.pe[0] = c.pe[1] = 2;
  check_case(&c);
  /* wav2vec2's positional conv in small: 1-D, k = 31, pads 15 (the grid's
   * reach past the last output is not computed), and a 2-D one in bands */
  c = base(1, 1, 4 * 24, 4 * 24, 4, 49, 31, 1, 1);
  c.pb[0] = c.pe[0] = 15, c.bias = true, c.act = "Relu";
  check_case(&c);
  c = base(1, 2, 12, 24, 12, 49, 31, 1, 1); /* depthwise, multiplier 2 */
  c.pb[0] = c.pe[0] = 15, c.bias = true, c.residual = true, c.act = "Relu";
  check_case(&c);
  c = base(1, 1, 2 * 32, 2 * 32, 2, 37, 7, 2, 1); /* blocks of 12, 12, 8 / 5 x 6, 2 */
  c.pb[0] = 3, c.pe[0] = 2, c.bias = true;
  check_case(&c);
  c = base(1, 2, 3 * 6, 3 * 5, 3, 21, 9, 1, 1);
  c.pb[0] = 4, c.pe[0] = 3, c.residual = true;
  check_case(&c);
  c = base(2, 1, 2 * 8, 2 * 8, 2, 9, 5, 1, 1);
  c.pb[0] = c.pb[1] = c.pe[0] = c.pe[1] = 2, c.bias = true;
  check_case(&c);
  /* Winograd F(2x2, 3x3) in NHWC: full and partial tiles (odd sizes, uneven
   * pads), channel tails of 8 and 16, residual and activation, batch 2 */
  long long wino = nat_wino_runs();
  c = base(2, 2, 24, 40, 1, 20, 3, 1, 1);
  c.pb[0] = c.pb[1] = c.pe[0] = c.pe[1] = 1, c.bias = true, c.residual = true, c.act = "Relu";
  check_case(&c);
  c = base(2, 1, 17, 33, 1, 19, 3, 1, 1);
  c.pb[0] = 2, c.pb[1] = 0, c.pe[0] = 0, c.pe[1] = 2, c.act = "HardSwish";
  check_case(&c);
  c = base(2, 1, 64, 16, 1, 31, 3, 1, 1);
  c.pb[0] = c.pb[1] = 1, c.bias = true;
  check_case(&c);
  /* a 7x7 map (16 tiles, ResNet's layer 4), fed channels-last */
  c = base(2, 1, 96, 40, 1, 7, 3, 1, 1);
  c.pb[0] = c.pb[1] = c.pe[0] = c.pe[1] = 1, c.bias = true, c.residual = true, c.act = "Relu";
  c.nhwc_in = true;
  long long wino7 = nat_wino_runs();
  check_case(&c);
  CHECK(nat_wino_runs() >= wino7 + 2 * 2);
  CHECK(nat_wino_runs() >= wino + 4 * 2 * 2); /* each, at avx512 and avx2 on 1 and 4 threads */
  /* ConvTranspose: grouped, strided with output_padding, dilated, 1-D, 3-D */
  c = base(2, 1, 8, 6, 2, 7, 3, 2, 1);
  c.transpose = true, c.pb[0] = c.pb[1] = 1, c.pe[0] = c.pe[1] = 1, c.op[0] = c.op[1] = 1;
  c.bias = true;
  check_case(&c);
  c = base(2, 3, 4, 4, 4, 9, 4, 2, 1);
  c.transpose = true, c.pb[0] = 1, c.pe[1] = 2;
  check_case(&c);
  c = base(1, 2, 6, 9, 3, 17, 5, 3, 2);
  c.transpose = true, c.op[0] = 2, c.bias = true;
  check_case(&c);
  c = base(3, 1, 4, 4, 1, 5, 3, 2, 1);
  c.transpose = true, c.auto_pad = "SAME_UPPER";
  check_case(&c);
  c = base(2, 1, 64, 32, 1, 24, 4, 2, 1);
  c.transpose = true, c.pb[0] = c.pb[1] = c.pe[0] = c.pe[1] = 1, c.bias = true;
  check_case(&c);
}

/* Random shapes over everything the kernels take. */
static void test_random(int count) {
  static const int64_t ks[] = {1, 3, 5, 7}, gs[] = {1, 2, 4, 0}; /* 0: depthwise */
  static const char *const acts[] = {NULL, "", "Relu", "Sigmoid", "HardSwish", "Tanh"};
  static const char *const pads[] = {NULL, NULL, NULL, "SAME_UPPER", "SAME_LOWER", "VALID"};
  for (int it = 0; it < count; it++) {
    conv_case c;
    memset(&c, 0, sizeof c);
    c.transpose = urand(5) == 0;
    c.nsp = 1 + (int)urand(3);
    c.N = urand(3) ? 1 : 3;
    int64_t g = gs[urand(4)], cg = 1 + urand(4), mult = 1 + urand(3);
    if (g == 0) {
      c.C = 2 + urand(7);
      c.group = c.C, c.M = c.C * (urand(3) ? 1 : mult);
    } else {
      c.group = g, c.C = g * cg, c.M = g * (1 + urand(5));
    }
    c.auto_pad = pads[urand(6)];
    for (int i = 0; i < c.nsp; i++) {
      int64_t lim = c.nsp == 3 ? 7 : c.nsp == 2 ? 15 : 40;
      c.k[i] = ks[urand(c.nsp == 3 ? 2 : 4)];
      c.s[i] = 1 + urand(3);
      c.d[i] = 1 + urand(2);
      int64_t dk = (c.k[i] - 1) * c.d[i] + 1;
      c.in[i] = dk + urand((uint32_t)lim);
      c.pb[i] = urand((uint32_t)c.k[i]);
      c.pe[i] = urand((uint32_t)c.k[i]);
      if (c.transpose) {
        c.op[i] = urand((uint32_t)(c.s[i] > c.d[i] ? c.s[i] : c.d[i]));
        if (c.op[i] >= c.s[i] && c.op[i] >= c.d[i]) c.op[i] = 0;
      }
    }
    if (c.transpose) {
      c.bias = urand(2);
      if (c.auto_pad && strcmp(c.auto_pad, "VALID")) c.auto_pad = NULL;
    } else {
      c.act = acts[urand(6)];
      c.bias = urand(2);
      c.residual = c.act && urand(2);
      /* W as an input where no layout pass is expected to move the conv */
      c.w_in = c.nsp != 2 && urand(4) == 0;
    }
    check_case(&c);
  }
}

/* 2-D convs of the channel counts networks have (the NHWC kernels' tiles:
 * 8- and 16-channel vectors with tails, several column blocks, groups
 * merged below a vector's width, the implicit GEMM's pointer and
 * padded-row paths), any window, stride, dilation and padding. */
static void test_random_nhwc(int count) {
  static const int64_t ks[] = {1, 3, 5, 7};
  static const char *const acts[] = {NULL, "Relu", "Sigmoid", "HardSwish", "Tanh", "SiLU"};
  for (int it = 0; it < count; it++) {
    conv_case c;
    memset(&c, 0, sizeof c);
    c.nsp = 2;
    c.N = urand(3) ? 1 : 2;
    switch (urand(4)) {
    case 0: /* group 1 */ c.group = 1, c.C = 1 + urand(40), c.M = 1 + urand(70); break;
    case 1: /* depthwise, maybe a multiplier */
      c.C = c.group = 1 + urand(40), c.M = c.C * (urand(3) ? 1 : 2);
      break;
    default: { /* grouped: 2 to 8 groups of 1 to 20 channels */
      int64_t g = 2 + urand(7);
      c.group = g, c.C = g * (1 + urand(20)), c.M = g * (1 + urand(20));
    }
    }
    for (int i = 0; i < 2; i++) {
      c.k[i] = ks[urand(4)];
      c.s[i] = 1 + urand(3);
      c.d[i] = urand(3) ? 1 : 1 + urand(3);
      int64_t dk = (c.k[i] - 1) * c.d[i] + 1;
      c.in[i] = dk + urand(14);
      c.pb[i] = urand((uint32_t)c.k[i] + 1);
      c.pe[i] = urand((uint32_t)c.k[i] + 1);
    }
    c.act = acts[urand(6)];
    c.bias = urand(2);
    c.residual = c.act && urand(2);
    check_case(&c);
  }
  /* SiLU after convs whose outputs exceed the driver's activation slices
   * (native_nhwc.c NHWC_POST_FLOATS): pointwise, depthwise and window,
   * channel tails */
  static const int64_t big[][4] = {{16, 96, 1, 1}, {19, 67, 1, 1}, {96, 96, 96, 3}, {8, 70, 1, 3}};
  for (int i = 0; i < 4; i++) {
    conv_case b = base(2, 1, big[i][0], big[i][1], big[i][2], 64, big[i][3], 1, 1);
    for (int k = 0; k < 2; k++)
      b.pb[k] = b.pe[k] = big[i][3] / 2;
    b.act = "SiLU", b.bias = true, b.nhwc_in = true;
    check_case(&b);
  }
}

/* Group-1 and grouped window convs whose windows lie mostly in the padding (DeepLab's
 * ASPP: dilations 12-36 on a 14x14 map), which the vector levels run in
 * classes of in-bounds taps (nat_win_class_runs): dilations 2-14 on maps
 * of 3-20, kernels 2-5, the padding around all or part of the window,
 * channel tails, residuals and activations. */
static void test_dilated_nhwc(int count) {
  static const char *const acts[] = {NULL, "Relu", "Sigmoid"};
  long long classed = nat_win_class_runs();
  for (int it = 0; it < count; it++) {
    conv_case c;
    memset(&c, 0, sizeof c);
    c.nsp = 2;
    c.N = urand(4) ? 1 : 2;
    if (urand(3)) {
      c.group = 1, c.C = 8 + urand(40), c.M = 1 + urand(70);
    } else { /* grouped (merged below a vector's width, or not) */
      int64_t g = 2 + urand(3);
      c.group = g, c.C = g * (2 + urand(16)), c.M = g * (1 + urand(20));
    }
    for (int i = 0; i < 2; i++) {
      c.k[i] = 2 + urand(4);
      c.s[i] = urand(4) ? 1 : 2;
      c.d[i] = 2 + urand(13);
      c.in[i] = 3 + urand(18);
      int64_t half = (c.k[i] - 1) * c.d[i] / 2; /* "same" padding, or less */
      c.pb[i] = urand(3) ? half : urand((uint32_t)half + 1);
      c.pe[i] = urand(3) ? half : urand((uint32_t)half + 1);
      while (c.in[i] + c.pb[i] + c.pe[i] < (c.k[i] - 1) * c.d[i] + 1)
        c.pb[i]++, c.pe[i]++;
    }
    c.act = acts[urand(3)];
    c.bias = urand(2);
    c.residual = urand(2);
    c.nhwc_in = urand(4) != 0;
    check_case(&c);
  }
  /* the 14x14 ASPP branch itself, at 40 channels */
  conv_case a = base(2, 1, 40, 24, 1, 14, 3, 1, 12);
  a.pb[0] = a.pb[1] = a.pe[0] = a.pe[1] = 12;
  a.bias = true, a.act = "Relu", a.nhwc_in = true;
  check_case(&a);
  printf("test_native_conv: %lld window runs in tap classes\n", nat_win_class_runs() - classed);
  CHECK(nat_win_class_runs() > classed);
}

/* Whether the AVX2 level runs groups of cg inputs and mg outputs (g of
 * them) on native_nhwc_grp256.c's tiles: run_grouped (native_nhwc.c)
 * merges f groups (f the least divisor of g with f mg >= 8) and the tiles
 * take merged groups of 8, 16 or 32 outputs (ng of them a tile: 3, 2, 1). */
static bool grp_tiles_at_avx2(int64_t g, int64_t cg, int64_t mg) {
  int64_t f = 1;
  while (f * mg < 8 && f < g) {
    f++;
    while (g % f)
      f++;
  }
  int64_t mm = f * mg, ng = mm == 8 ? 3 : mm == 16 ? 2 : 1;
  return (mm == 8 || mm == 16 || mm == 32) && f * cg * ng <= 2048;
}

/* Grouped convs of the widths CNNs have (ResNeXt: 32 groups of 4, 8, 16,
 * 32 channels; RegNet: 16 a group, 2 to 25 groups) and odd ones (1 to 6,
 * unequal inputs and outputs a group), on the tiles over several groups
 * (native_nhwc_grp256.c/grp512.c: merged groups of one or two vectors, the
 * last tile of groups and of pixels partial) and where those do not apply:
 * strides 1-2, dilation, pads, kernels 1-5, residuals and activations;
 * 4 channels a group in and out on the rotated-lane tiles (grp4). */
static void test_grp_tiles(int count) {
  static const int64_t widths[][2] = {
      {4, 4},  {8, 8},  {16, 16}, {32, 32}, {2, 4},   {4, 8},   {3, 8},  {16, 8},  {1, 8},  {6, 16},
      {5, 16}, {8, 16}, {1, 2},   {3, 3},   {12, 12}, {24, 24}, {7, 24}, {64, 64}, {10, 48}};
  static const char *const acts[] = {NULL, "Relu", "Sigmoid", "SiLU"};
  long long tiled = nat_grp_tile_runs(), rot4 = nat_grp4_runs();
  for (int it = 0; it < count; it++) {
    conv_case c;
    memset(&c, 0, sizeof c);
    c.nsp = 2;
    c.N = urand(4) ? 1 : 2;
    const int64_t *wd = widths[urand(sizeof widths / sizeof widths[0])];
    int64_t g = urand(3) ? 2 + urand(39) : 32;
    c.group = g, c.C = g * wd[0], c.M = g * wd[1];
    for (int i = 0; i < 2; i++) {
      c.k[i] = urand(4) ? 3 : 1 + 2 * urand(3);
      c.s[i] = urand(3) ? 1 : 2;
      c.d[i] = urand(5) ? 1 : 2;
      int64_t dk = (c.k[i] - 1) * c.d[i] + 1;
      c.in[i] = dk + urand(12);
      c.pb[i] = urand(4) ? (dk - 1) / 2 : urand((uint32_t)c.k[i] + 1);
      c.pe[i] = urand(4) ? (dk - 1) / 2 : urand((uint32_t)c.k[i] + 1);
    }
    c.act = acts[urand(4)];
    c.bias = urand(4) != 0;
    c.residual = c.act && urand(3) == 0;
    c.nhwc_in = urand(4) != 0;
    long long before = nat_grp_tile_runs(), rot = nat_grp4_runs();
    check_case(&c);
    if (wd[0] == 4 && wd[1] == 4 && g % 2 == 0 && nat_nhwc256_available()) {
      if (nat_grp4_runs() == rot) fprintf(stderr, "grouped case %d: no rotated-lane run\n", it);
      CHECK(nat_grp4_runs() > rot); /* 4 a group: the rotated lanes at each vector level */
    }
    if (grp_tiles_at_avx2(g, wd[0], wd[1]) && nat_nhwc256_available()) {
      if (nat_grp_tile_runs() == before) fprintf(stderr, "grouped case %d: no tile run\n", it);
      CHECK(nat_grp_tile_runs() > before);
    }
  }
  /* ResNeXt's first stage (32 groups of 4, strides 1 and 2) and 4 a group
   * in 2, 6 and 12 groups (at AVX-512 6 is not a whole number of vectors:
   * the merged tiles), odd maps, a residual */
  static const int64_t four[][4] = {
      {32, 14, 1, 0}, {32, 15, 2, 0}, {2, 9, 1, 1}, {6, 11, 1, 0}, {12, 7, 2, 1}};
  for (int i = 0; i < 5; i++) {
    conv_case f =
        base(2, 1, 4 * four[i][0], 4 * four[i][0], four[i][0], four[i][1], 3, four[i][2], 1);
    for (int k = 0; k < 2; k++)
      f.pb[k] = f.pe[k] = 1;
    f.bias = true, f.act = "Relu", f.nhwc_in = true, f.residual = four[i][3] != 0;
    long long rot = nat_grp4_runs();
    check_case(&f);
    CHECK(!nat_nhwc256_available() || nat_grp4_runs() > rot);
  }
  printf("test_native_conv: %lld grouped runs on tiles over groups, %lld of 4 a group\n",
         nat_grp_tile_runs() - tiled, nat_grp4_runs() - rot4);
  CHECK(nat_grp_tile_runs() > tiled);
}

/* Depthwise convs of mobile nets' widths on the vector kernels of any
 * window (native_nhwc_dw256.c/dw512.c): 1-300 channels (tiles of up to 8
 * vectors, 64 channels at AVX2 and 128 at AVX-512, with lane tails), 5x5,
 * 7x7, 3x5, dilated 3x3 (3x3 without dilation runs the register kernel),
 * strides 1-3, maps of 1-24 with padding on none, some or all sides (the
 * columns in the padding, rows whose taps all lie in it), channels-last
 * inputs, residuals and activations. */
static void test_depthwise_nhwc(int count) {
  static const int64_t ks[][2] = {{5, 5}, {7, 7}, {3, 5}, {3, 3}, {5, 3}};
  static const char *const acts[] = {NULL, "Relu", "SiLU", "HardSwish"};
  for (int it = 0; it < count; it++) {
    conv_case c;
    memset(&c, 0, sizeof c);
    c.nsp = 2;
    c.N = urand(4) ? 1 : 2;
    c.C = c.group = c.M = urand(3) ? 1 + urand(300) : 8 * (1 + urand(40));
    int kc = (int)urand(5);
    for (int i = 0; i < 2; i++) {
      c.k[i] = ks[kc][i];
      c.d[i] = kc == 3 ? 2 : urand(4) ? 1 : 2;
      c.s[i] = urand(3) ? 1 : 1 + urand(3);
      int64_t dk = (c.k[i] - 1) * c.d[i] + 1;
      c.pb[i] = urand(4) ? dk / 2 : urand((uint32_t)dk);
      c.pe[i] = urand(4) ? dk / 2 : urand((uint32_t)dk);
      c.in[i] = 1 + urand(24);
      while (c.in[i] + c.pb[i] + c.pe[i] < dk)
        c.in[i]++;
    }
    c.act = acts[urand(4)];
    c.bias = urand(2);
    c.residual = c.act && urand(2);
    c.nhwc_in = urand(2);
    check_case(&c);
  }
}

/* Winograd F(2x2, 3x3) and F(4x4, 3x3) on random 3x3 stride-1 convs in
 * NHWC: maps of 4 to 40 (partial tiles at every edge), uneven pads of 0 to
 * 2, channel counts off the vector widths, batch 1 to 3, bias, residual
 * and activations; each with the tile forced to 2, forced to 4 and picked
 * by the shape, at every level on 1 thread (blocks of tiles) and 4 (the
 * phased split where tiles are few). */
static void test_wino(int count) {
  static const char *const acts[] = {NULL, "Relu", "HardSwish", "SiLU"};
  long long w0 = nat_wino_runs(), w4 = nat_wino4_runs(), fit = 0;
  for (int i = 0; i < count; i++) {
    conv_case c = base(2, 1 + urand(3), 16 + urand(80), 16 + urand(90), 1, 4 + urand(37), 3, 1, 1);
    c.in[1] = 4 + urand(37);
    for (int a = 0; a < 2; a++)
      c.pb[a] = urand(3), c.pe[a] = urand(3);
    c.bias = urand(2), c.residual = urand(3) == 0, c.act = acts[urand(4)];
    c.nhwc_in = urand(2);
    int64_t tiles = c.N * ((out_size(&c, 0) + 1) / 2) * ((out_size(&c, 1) + 1) / 2);
    fit += tiles >= 16; /* nat_wino_fits: else the direct kernel */
    for (int m = 0; m < 3; m++) {
      nat_wino_set_tile(m == 0 ? 2 : m == 1 ? 4 : 0);
      check_case(&c);
    }
  }
  nat_wino_set_tile(0);
  /* per fitting case and tile choice: avx512 and avx2, 1 and 4 threads,
   * each state run twice; the forced F(4x4) a third of them at least */
  printf("test_native_conv: %lld Winograd runs, %lld of them F(4x4), %lld cases fit\n",
         nat_wino_runs() - w0, nat_wino4_runs() - w4, fit);
  CHECK(fit >= count / 2);
  CHECK(nat_wino_runs() - w0 == fit * 3 * 8);
  CHECK(nat_wino4_runs() - w4 >= fit * 8);
}

/* 1x1 stride-1 depthwise convs (per-channel scales: DenseNet's
 * BatchNormalization before its 1x1 convs) in NHWC on their own kernels:
 * channels 1 to 100 (tails of 8 and 16), maps of 1 to 30, batch 1 to 3,
 * bias, residual, activations, fed channels-last or not. */
static void test_dw1(int count) {
  static const char *const acts[] = {NULL, "Relu", "HardSwish", "SiLU"};
  long long before = nat_conv_dw1_runs();
  for (int i = 0; i < count; i++) {
    int64_t C = 1 + urand(100);
    conv_case c = base(2, 1 + urand(3), C, C, C, 1 + urand(30), 1, 1, 1);
    c.in[1] = 1 + urand(30);
    c.bias = urand(2), c.residual = urand(3) == 0, c.act = acts[urand(4)];
    c.nhwc_in = urand(2);
    check_case(&c);
  }
  /* avx512 and avx2, 1 and 4 threads, each state run twice */
  CHECK(nat_conv_dw1_runs() - before == (long long)count * 8);
}

/* 3-D convs on native_mm's tiles (native_conv3d.c): r3d_18's shapes (3x3x3
 * and 3x7x7 stems, stride 1 and 2, 1x1x1 stride-2 downsamples) and random
 * ones (kernels 1 to 7 a dim, strides, dilations, pads, groups, images,
 * residuals, activations), against eager at each ISA level; where the
 * product is big enough the tiles must have run. */
static void test_conv3d(int count) {
  static const char *const acts[] = {NULL, "Relu", "Sigmoid", "Clip"};
  for (int it = 0; it < count; it++) {
    conv_case c;
    if (it == 0) {
      c = base(3, 1, 3, 16, 1, 9, 7, 2, 1); /* the stem: 3x7x7, stride 1x2x2, pads 1x3x3 */
      c.k[0] = 3, c.s[0] = 1, c.in[0] = 5, c.pb[0] = c.pe[0] = 1;
      c.pb[1] = c.pe[1] = c.pb[2] = c.pe[2] = 3;
      c.act = "Relu", c.bias = true;
    } else if (it == 1) {
      c = base(3, 1, 24, 24, 1, 7, 3, 1, 1); /* a block's 3x3x3 with the residual */
      for (int i = 0; i < 3; i++)
        c.pb[i] = c.pe[i] = 1;
      c.act = "Relu", c.bias = true, c.residual = true;
    } else if (it == 2) {
      c = base(3, 2, 32, 48, 1, 7, 1, 2, 1); /* the downsample */
    } else if (it < 9) {
      /* rows wide enough for the direct path at both levels (two vectors
       * of 16): stride 1 in H and W, any depth stride, dilation, pads,
       * channel counts past a reduction chunk, groups */
      c = base(3, it == 8 ? 2 : 1, 2 + urand(40), 1 + urand(40), 1, 3, 3, 1, 1);
      if (it == 3) c.C = 300, c.M = 8; /* Cg over the tiles' chunk */
      if (it == 4) c.group = 2, c.C = 2 * (2 + urand(20)), c.M = 2 * (1 + urand(30));
      c.in[0] = 2 + urand(4), c.in[1] = 3 + urand(4), c.in[2] = 28 + urand(30);
      c.k[0] = 1 + urand(3), c.k[1] = 1 + urand(3), c.k[2] = 1 + urand(5);
      c.s[0] = 1 + urand(2), c.d[0] = 1 + urand(2), c.d[2] = 1 + urand(2);
      for (int i = 0; i < 3; i++)
        c.pb[i] = urand((uint32_t)c.k[i]), c.pe[i] = urand((uint32_t)c.k[i]);
      if (c.in[0] + c.pb[0] + c.pe[0] < (c.k[0] - 1) * c.d[0] + 1) c.d[0] = 1;
      c.act = acts[urand(4)];
      c.bias = urand(2);
      c.residual = c.act && urand(2);
      c.w_in = it == 5;
    } else {
      memset(&c, 0, sizeof c);
      c.nsp = 3;
      c.N = urand(3) ? 1 : 2;
      c.group = urand(3) ? 1 : 2 + urand(3);
      c.C = c.group * (2 + urand(20));
      c.M = c.group * (1 + urand(40));
      for (int i = 0; i < 3; i++) {
        c.k[i] = 1 + urand(i == 0 ? 3 : 7);
        c.s[i] = 1 + urand(2);
        c.d[i] = 1 + urand(2);
        int64_t dk = (c.k[i] - 1) * c.d[i] + 1;
        c.in[i] = dk + urand(i == 0 ? 4 : 12);
        c.pb[i] = urand((uint32_t)c.k[i]);
        c.pe[i] = urand((uint32_t)c.k[i]);
      }
      c.act = acts[urand(4)];
      c.bias = urand(2);
      c.residual = c.act && urand(2);
      c.w_in = urand(4) == 0;
    }
    int64_t K = c.C / c.group * c.k[0] * c.k[1] * c.k[2];
    bool tiles =
        c.C / c.group >= 2 && (c.M / c.group) * K >= 4096 && nat_mm_available(NAT_ISA_AVX2);
    long long before = nat_conv3d_runs(), direct = nat_conv3d_direct_runs();
    check_case(&c);
    /* two runs on each of the vector levels' 4 specs at least; the wide
     * cases without packing on both levels */
    if (tiles) CHECK(nat_conv3d_runs() - before >= 8);
    if (tiles && it >= 3 && it < 9) {
      int64_t ow = out_size(&c, 2), v16 = (ow + 15) / 16, v8 = (ow + 7) / 8;
      bool d16 = v16 >= 2 && 5 * ow >= 64 * v16 && nat_mm_available(NAT_ISA_AVX512);
      bool d8 = v8 >= 2 && 5 * ow >= 32 * v8;
      CHECK(nat_conv3d_direct_runs() - direct >= 8 * (d16 + d8));
    }
  }
}

int main(void) {
  test_fixed();
  test_random(60);
  test_random_nhwc(60);
  test_dilated_nhwc(30);
  test_depthwise_nhwc(40);
  test_wino(16);
  test_dw1(16);
  test_conv3d(24);
  test_grp_tiles(40); /* last: the cases above keep their random draws */
  printf("test_native_conv: %d cases\n", cases_run);
  return check_result("test_native_conv");
}
