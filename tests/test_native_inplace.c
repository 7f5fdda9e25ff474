/* In place (native_exec.c, plan.c's ait_plan_assign_shared): a pointwise
 * FusedConvNhwc whose residual input dies at it writes its output over that
 * input's arena slot. Random residual blocks against eager at every ISA
 * level, on 1 and 2 threads, three runs each (the plan and so the sharing
 * come from the second): the residual dead at the conv (shared), and alive
 * past it in each way that must keep it apart: a graph output, read by a
 * later node, read through a view, the conv's own input (X = Z). Then the
 * planner itself: shared values get one block, no two live blocks overlap. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/common/plan.h"
#include "backends/native/native.h"
#include "check.h"
#include "graph_check.h"
#include "model_builder.h"
#include "runtime/eager.h"

#define IN(...) ((const char *const[]){__VA_ARGS__, NULL})

static uint32_t rng = 4242;
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

/* conv `name` from x (C channels) to y (M): k x k, pads k / 2. */
static void conv(tb_model *m, const char *name, const char *x, const char *y, int64_t C, int64_t M,
                 int64_t k) {
  char w[64], b[64];
  snprintf(w, sizeof w, "%s_w", name);
  snprintf(b, sizeof b, "%s_b", name);
  const int64_t wd[4] = {M, C, k, k}, bd[1] = {M}, p = k / 2, pads[4] = {p, p, p, p};
  init(m, w, 4, wd, 1.5f / sqrtf((float)(C * k * k)));
  init(m, b, 1, bd, 0.2f);
  int n = tb_node(m, "Conv", name, IN(x, w, b), IN(y));
  tb_attr_ints(m, n, "pads", 4, pads);
}

typedef enum { DEAD, CHAIN, AS_OUTPUT, READ_LATER, VIEW_LATER, SELF } kind;
static const char *const kind_name[] = {"dead",       "chain",      "graph output",
                                        "read later", "view later", "X = Z"};

/* x -> conv k (C -> K) -> Relu -> h;  x -> 1x1 (C -> M) -> r (the residual);
 * y = Relu(1x1(h, K -> M) + r), r then dead or alive past it as `kd` says
 * (CHAIN: a second block y2 = Relu(1x1(Relu(1x1(y))) + y): y dies there too). */
static void check_case(kind kd, int64_t C, int64_t K, int64_t M, int64_t H, int64_t k) {
  tb_model *m = tb_new(17);
  const int64_t dx[4] = {-1, C, H, H}, dy[4] = {-1, -1, -1, -1};
  tb_input(m, "x", 1, 4, dx);
  conv(m, "c1", "x", "a", C, K, k);
  tb_node(m, "Relu", "r1", IN("a"), IN("h"));
  conv(m, "c3", "x", "r", C, M, 1);
  const char *xin = kd == SELF ? "r" : "h";
  conv(m, "c2", xin, "b", kd == SELF ? M : K, M, 1);
  tb_node(m, "Add", "add", IN("b", "r"), IN("s"));
  tb_node(m, "Relu", "r2", IN("s"), IN("y"));
  int expect = 1; /* outputs planned in place at a vector level */
  if (kd == CHAIN) {
    conv(m, "c4", "y", "e0", M, K, 1);
    tb_node(m, "Relu", "r4", IN("e0"), IN("e1"));
    conv(m, "c5", "e1", "e", K, M, 1);
    tb_node(m, "Add", "add2", IN("e", "y"), IN("s2"));
    tb_node(m, "Relu", "r3", IN("s2"), IN("y2"));
    tb_output(m, "y2", 1, 4, dy);
    expect = 2;
  } else if (kd == AS_OUTPUT) {
    tb_output(m, "y", 1, 4, dy);
    tb_output(m, "r", 1, 4, dy);
    expect = 0;
  } else if (kd == READ_LATER || kd == VIEW_LATER) {
    const char *rr = "r";
    if (kd == VIEW_LATER) {
      tb_node(m, "Identity", "view", IN("r"), IN("rv"));
      rr = "rv";
    }
    conv(m, "c4", "y", "e", M, M, 1);
    tb_node(m, "Mul", "mul", IN("e", rr), IN("y2"));
    tb_output(m, "y2", 1, 4, dy);
    expect = 0;
  } else {
    /* DEAD; SELF: the conv reads r as X and Z: r dies there, but its input
     * is read across pixels' channels, never in place */
    conv(m, "c4", "y", "y2", M, M, 1);
    tb_output(m, "y2", 1, 4, dy);
    expect = kd == SELF ? 0 : 1;
  }
  ait_graph *g = tb_parse_graph(m);
  CHECK(g != NULL);
  if (!g) return;
  char what[160];
  snprintf(what, sizeof what, "%s C %lld K %lld M %lld H %lld k %lld", kind_name[kd], (long long)C,
           (long long)K, (long long)M, (long long)H, (long long)k);
  int n_out = kd == AS_OUTPUT ? 2 : 1;
  for (int64_t batch = 1; batch <= 2; batch++) {
    const int64_t xd[4] = {batch, C, H, H};
    ait_tensor *x = ait_tensor_new(AIT_FLOAT32, 4, xd), *ref[2] = {NULL, NULL};
    fill(x->data, ait_tensor_numel(x), 1.0f);
    CHECK(ait_eager_run(g, (const ait_tensor *const *)&x, 1, ref) == AIT_OK);
    static const char *const isas[] = {"avx512", "avx2", "portable"};
    for (int a = 0; ref[0] && a < 3; a++)
      for (int t = 1; t <= 2; t++) {
        char spec[96];
        snprintf(spec, sizeof spec, "native:layout=nhwc,isa=%s,threads=%d", isas[a], t);
        ait_backend_config cfg;
        void *state = NULL;
        CHECK(ait_backend_config_parse(spec, &cfg) == AIT_OK);
        ait_status st = cfg.iface->build(&cfg, g, NULL, &state);
        if (st) fprintf(stderr, "%s on %s: %s\n", what, spec, ait_last_error());
        CHECK(st == AIT_OK);
        if (!state) continue;
        int level = ((nat_state *)state)->isa;
        long long before = nat_exec_in_place_planned();
        for (int run = 0; run < 3; run++) {
          ait_tensor *y[2] = {NULL, NULL};
          st = cfg.iface->infer(state, (const ait_tensor *const *)&x, 1, y);
          for (int q = 0; q < n_out; q++) {
            double d = st == AIT_OK ? check_rel_diff(y[q], ref[q]) : INFINITY;
            if (!(d <= 1e-4))
              fprintf(stderr, "%s on %s batch %lld run %d output %d: difference %g (%s)\n", what,
                      spec, (long long)batch, run, q, d, st == AIT_OK ? "ok" : ait_last_error());
            CHECK(d <= 1e-4);
            ait_tensor_free(y[q]);
          }
        }
        long long planned = nat_exec_in_place_planned() - before;
        long long want = level >= NAT_ISA_AVX2 ? expect : 0;
        if (planned != want)
          fprintf(stderr, "%s on %s batch %lld: %lld outputs in place, expected %lld\n", what, spec,
                  (long long)batch, planned, want);
        CHECK(planned == want);
        cfg.iface->destroy(state);
      }
    for (int q = 0; q < 2; q++)
      ait_tensor_free(ref[q]);
    ait_tensor_free(x);
  }
  ait_graph_free(g);
}

/* ait_plan_assign_shared on random lifetimes: a value sharing with another
 * gets its offset; blocks live at the same time never overlap. */
static void check_planner(void) {
  enum { NV = 40 };
  for (int iter = 0; iter < 200; iter++) {
    int64_t size[NV], off[NV], total = 0;
    int first[NV], last[NV], share[NV], block[NV];
    for (int v = 0; v < NV; v++) {
      first[v] = (int)irand(0, 30);
      last[v] = first[v] + (int)irand(0, 8);
      size[v] = urand(8) ? irand(1, 5000) : 0;
      share[v] = -1;
      block[v] = v;
    }
    for (int v = 1; v < NV; v++) /* v over u when u dies where v is born */
      if (urand(3) == 0) {
        int u = (int)irand(0, v - 1);
        if (!size[u]) continue;
        bool taken = false;
        for (int w = 0; w < NV; w++)
          taken |= share[w] == u;
        if (taken) continue;
        share[v] = u;
        first[v] = last[u];
        if (last[v] < first[v]) last[v] = first[v];
      }
    for (int v = 0; v < NV; v++) /* the block root of v (share chains point to lower indices) */
      for (int u = v; u >= 0; u = share[u] >= 0 && size[share[u]] ? share[u] : -1)
        block[v] = u;
    CHECK(ait_plan_assign_shared(NV, size, first, last, share, off, &total) == AIT_OK);
    for (int v = 0; v < NV; v++) {
      if (!size[v]) {
        CHECK(off[v] == -1);
        continue;
      }
      CHECK(off[v] >= 0 && off[v] % 64 == 0 && off[v] + size[v] <= total);
      if (block[v] != v) CHECK(off[v] == off[block[v]]);
    }
    /* blocks: their members' union of lifetimes; other blocks stay apart */
    for (int v = 0; v < NV; v++)
      for (int w = 0; w < NV; w++) {
        if (!size[v] || !size[w] || block[v] == block[w]) continue;
        bool live = first[v] <= last[w] && first[w] <= last[v];
        bool apart = off[v] + size[v] <= off[w] || off[w] + size[w] <= off[v];
        if (live) CHECK(apart);
      }
  }
}

int main(void) {
  check_planner();
  /* fixed: ResNet-like bottleneck shapes and vector tails */
  static const int64_t fixed[][5] = {
      {16, 8, 64, 7, 3}, {32, 16, 24, 9, 1}, {8, 5, 131, 6, 3}, {24, 24, 17, 5, 1}};
  for (int kd = DEAD; kd <= SELF; kd++)
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
      check_case((kind)kd, fixed[i][0], fixed[i][1], fixed[i][2], fixed[i][3], fixed[i][4]);
  for (int i = 0; i < 6; i++) /* random shapes */
    check_case((kind)(i % (SELF + 1)), irand(1, 40), irand(1, 70), irand(1, 150), irand(2, 12),
               urand(2) ? 3 : 1);
  return check_result("test_native_inplace");
}
