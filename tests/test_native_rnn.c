/* The native backend's recurrent kernels (native_rnn.c) and its control flow
 * (native_exec.c): RNN, GRU and LSTM on random shapes in every direction,
 * with and without sequence_lens, initial states, peepholes, layout 1,
 * linear_before_reset, clip, input_forget, activations and optional outputs,
 * weights as initializers (packed once) or as graph inputs, each against
 * eager, on every ISA level the CPU has; graphs with If and Loop whose
 * bodies read outer-scope values (two levels up too), native against
 * eager, bodies run on native states of their own. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/native/native.h"
#include "backends/native/native_rnn.h"
#include "check.h"
#include "graph_check.h"
#include "model_builder.h"
#include "runtime/eager.h"

#define IN(...) ((const char *const[]){__VA_ARGS__, NULL})

static uint32_t rng = 777;
static uint32_t urand(void) {
  rng = rng * 1664525u + 1013904223u;
  return rng >> 8;
}
static float frand(void) { return (float)(urand() & 0xffff) / 32768.0f - 1.0f; }
static void fill(float *v, int64_t n, float scale) {
  for (int64_t i = 0; i < n; i++)
    v[i] = frand() * scale;
}

/* Add a STRINGS attribute to node n (the builder has none). */
static void set_strings(ait_node *n, const char *name, const char *const *v, int count) {
  ait_attr *a = realloc(n->attrs, sizeof *a * (size_t)(n->n_attrs + 1));
  if (!a) return;
  n->attrs = a;
  a = &n->attrs[n->n_attrs++];
  memset(a, 0, sizeof *a);
  a->name = strdup(name);
  a->type = AIT_ATTR_STRINGS;
  a->n = count;
  a->strings = calloc((size_t)count, sizeof *a->strings);
  for (int i = 0; i < count; i++)
    a->strings[i] = strdup(v[i]);
}

/* Native (spec) against eager: every output within tol, twice (the second
 * run on the plan and the packed weights of the first). *packs receives
 * how many NAT_DATA_RNN packs the state holds. */
static void check_graph(const ait_graph *g, const char *spec, const ait_tensor *const *in, int n_in,
                        double tol, int *packs, const char *what) {
  ait_tensor *ref[6] = {0}, *out[6] = {0};
  CHECK(g->n_outputs <= 6);
  ait_status st = ait_eager_run(g, in, n_in, ref);
  CHECK(st == AIT_OK);
  if (st) {
    fprintf(stderr, "%s: eager: %s\n", what, ait_last_error());
    return;
  }
  ait_backend_config cfg;
  CHECK(ait_backend_config_parse(spec, &cfg) == AIT_OK);
  void *state = NULL;
  CHECK(cfg.iface->build(&cfg, g, NULL, &state) == AIT_OK);
  for (int run = 0; state && run < 2; run++) {
    st = cfg.iface->infer(state, in, n_in, out);
    CHECK(st == AIT_OK);
    if (st) fprintf(stderr, "%s: native: %s\n", what, ait_last_error());
    for (int k = 0; k < g->n_outputs; k++) {
      double d = check_rel_diff(out[k], ref[k]);
      if (!(d <= tol)) fprintf(stderr, "%s on %s: output %d differs by %g\n", what, spec, k, d);
      CHECK(d <= tol);
      ait_tensor_free(out[k]);
      out[k] = NULL;
    }
  }
  if (packs && state) {
    const nat_state *s = state;
    *packs = 0;
    for (int i = 0; s->node_data && i < s->g->n_nodes; i++)
      *packs += s->node_data[i * NAT_DATA_KINDS + NAT_DATA_RNN] != NULL;
  }
  if (state) cfg.iface->destroy(state);
  for (int k = 0; k < g->n_outputs; k++)
    ait_tensor_free(ref[k]);
}

/* ---- recurrent layers -------------------------------------------------------- */

typedef struct rnn_case {
  const char *op, *dir;
  int64_t S, B, I, H;
  int layout;
  bool lens, h0, c0, peep, lbr, input_forget, clip, acts, consts;
  int outs; /* bit k: output k is a graph output */
} rnn_case;

static ait_tensor *tensor_of(int rank, const int64_t *dims, float scale) {
  ait_tensor *t = ait_tensor_new(AIT_FLOAT32, rank, dims);
  if (t) fill(t->data, ait_tensor_numel(t), scale);
  return t;
}

static void run_case(const rnn_case *c, const char *const *specs, int n_specs) {
  bool lstm = !strcmp(c->op, "LSTM"), gru = !strcmp(c->op, "GRU");
  int64_t G = lstm ? 4 : gru ? 3 : 1, D = !strcmp(c->dir, "bidirectional") ? 2 : 1;
  int64_t S = c->S, B = c->B, I = c->I, H = c->H;
  int64_t xd[3] = {c->layout ? B : S, c->layout ? S : B, I};
  int64_t wd[3] = {D, G * H, I}, rd[3] = {D, G * H, H}, bd[2] = {D, 2 * G * H};
  int64_t hd[3] = {c->layout ? B : D, c->layout ? D : B, H}, pd[2] = {D, 3 * H}, ld[1] = {B};
  int64_t yd[4] = {S, D, B, H}, y1[4] = {B, S, D, H};
  /* inputs: X, then the weights when they are not initializers, then the
   * optional ones */
  ait_tensor *t[8] = {0};
  const char *names[8] = {"X", "W", "R", "B", "lens", "h0", "c0", "P"};
  t[0] = tensor_of(3, xd, 1.0f);
  /* weights scaled by fan-in, so the gates do not saturate: an error in
   * either product must reach the outputs (at 0.5 a 1e-3 relative error in
   * the recurrent product passed the 1e-5 bound) */
  t[1] = tensor_of(3, wd, 1.5f / sqrtf((float)I));
  t[2] = tensor_of(3, rd, 1.5f / sqrtf((float)H));
  t[3] = tensor_of(2, bd, 0.3f);
  if (c->lens) {
    t[4] = ait_tensor_new(AIT_INT32, 1, ld);
    for (int64_t b = 0; b < B; b++)
      ((int32_t *)t[4]->data)[b] = (int32_t)(urand() % (uint32_t)(S + 1));
    ((int32_t *)t[4]->data)[0] = (int32_t)S; /* one full row */
  }
  if (c->h0) t[5] = tensor_of(3, hd, 0.8f);
  if (lstm && c->c0) t[6] = tensor_of(3, hd, 0.8f);
  if (lstm && c->peep) t[7] = tensor_of(2, pd, 0.5f);
  tb_model *m = tb_new(c->layout ? 14 : 13);
  const ait_tensor *in[8];
  int n_in = 0;
  for (int k = 0; k < 8; k++) {
    if (!t[k]) continue;
    bool weight = (k >= 1 && k <= 3) || k == 7;
    if (weight && c->consts) {
      tb_init_f32(m, names[k], t[k]->rank, t[k]->dims, t[k]->data);
      continue;
    }
    tb_input(m, names[k], k == 4 ? 6 : 1, t[k]->rank, t[k]->dims);
    in[n_in++] = t[k];
  }
  const char *ins[9];
  int last = 0;
  for (int k = 0; k < (lstm ? 8 : 6); k++) {
    ins[k] = t[k] ? names[k] : "";
    if (t[k]) last = k;
  }
  ins[last + 1] = NULL;
  const char *outs[4] = {c->outs & 1 ? "Y" : "", c->outs & 2 ? "Y_h" : "",
                         lstm ? (c->outs & 4 ? "Y_c" : "") : NULL, NULL};
  int node = tb_node(m, c->op, "rnn", ins, outs);
  tb_attr_str(m, node, "direction", c->dir);
  tb_attr_int(m, node, "hidden_size", H);
  if (c->layout) tb_attr_int(m, node, "layout", 1);
  if (gru && c->lbr) tb_attr_int(m, node, "linear_before_reset", 1);
  if (lstm && c->input_forget) tb_attr_int(m, node, "input_forget", 1);
  if (c->outs & 1) tb_output(m, "Y", 1, 4, c->layout ? y1 : yd);
  if (c->outs & 2) tb_output(m, "Y_h", 1, 3, hd);
  if (lstm && (c->outs & 4)) tb_output(m, "Y_c", 1, 3, hd);
  ait_graph *g = tb_parse_graph(m);
  CHECK(g != NULL);
  if (!g) goto out;
  ait_node *n = &g->nodes[0];
  if (c->clip) nat_attr_set_float(n, "clip", 0.7f);
  if (c->acts) { /* per direction, with parameters: exercise the lists */
    static const char *const a_lstm[] = {"HardSigmoid", "ScaledTanh", "Tanh",
                                         "Sigmoid",     "Tanh",       "Softsign"};
    static const char *const a_gru[] = {"Sigmoid", "LeakyRelu", "HardSigmoid", "Tanh"};
    static const char *const a_rnn[] = {"Relu", "Affine"};
    set_strings(n, "activations",
                lstm  ? a_lstm
                : gru ? a_gru
                      : a_rnn,
                (int)(D * (lstm  ? 3
                           : gru ? 2
                                 : 1)));
    float alpha[3] = {0.3f, 0.9f, 0.2f}, beta[3] = {0.4f, 1.1f, 0.1f};
    nat_attr_set_floats(n, "activation_alpha", alpha, 3);
    nat_attr_set_floats(n, "activation_beta", beta, 3);
  }
  char what[256];
  snprintf(what, sizeof what,
           "%s %s S=%lld B=%lld I=%lld H=%lld layout=%d lens=%d h0=%d c0=%d P=%d lbr=%d if=%d "
           "clip=%d acts=%d consts=%d outs=%d",
           c->op, c->dir, (long long)S, (long long)B, (long long)I, (long long)H, c->layout,
           c->lens, c->h0, c->c0, c->peep, c->lbr, c->input_forget, c->clip, c->acts, c->consts,
           c->outs);
  for (int k = 0; k < n_specs; k++) {
    int packs = -1;
    check_graph(g, specs[k], in, n_in, 1e-5, &packs, what);
    /* the native kernel ran (not the reference) and packed a constant R once */
    if (c->consts) CHECK(packs == 1);
  }
  ait_graph_free(g);
out:
  for (int k = 0; k < 8; k++)
    ait_tensor_free(t[k]);
}

static void test_rnn_random(const char *const *specs, int n_specs) {
  static const char *const ops[] = {"RNN", "GRU", "LSTM"};
  static const char *const dirs[] = {"forward", "reverse", "bidirectional"};
  static const int64_t hs[] = {1, 5, 16, 37, 64, 70};
  int cases = 0;
  for (int o = 0; o < 3; o++)
    for (int d = 0; d < 3; d++)
      for (int rep = 0; rep < 8; rep++) {
        rnn_case c = {.op = ops[o], .dir = dirs[d]};
        c.S = 1 + urand() % 7;
        /* above 4: the GEMM path; 8 and more: AVX-512's 8-row tiles and their tails */
        c.B = rep == 0 ? 1 : rep == 1 ? 8 + urand() % 6 : 1 + urand() % 7;
        c.I = 1 + urand() % 20;
        c.H = hs[urand() % 6];
        c.layout = urand() % 2;
        c.lens = urand() % 2;
        c.h0 = urand() % 2;
        c.c0 = urand() % 2;
        c.peep = urand() % 2;
        c.lbr = urand() % 2;
        c.input_forget = urand() % 4 == 0;
        c.clip = urand() % 4 == 0;
        c.acts = urand() % 4 == 0;
        c.consts = urand() % 3 != 0;
        c.outs = 1 + (int)(urand() % 7);
        if (strcmp(c.op, "LSTM") && c.outs == 4) c.outs = 1; /* Y_c alone: no output */
        run_case(&c, specs, n_specs);
        cases++;
      }
  printf("recurrent: %d random cases on %d option sets\n", cases, n_specs);
}

/* A node the kernel leaves to the reference (float64 here) still runs. */
static void test_rnn_fallback(void) {
  int64_t xd[3] = {3, 2, 4}, wd[3] = {1, 8, 4}, rd[3] = {1, 8, 2}, hd[3] = {1, 2, 2};
  tb_model *m = tb_new(13);
  tb_input(m, "X", 11, 3, xd);
  tb_input(m, "W", 11, 3, wd);
  tb_input(m, "R", 11, 3, rd);
  tb_node(m, "LSTM", "l", IN("X", "W", "R"), IN("", "Y_h"));
  tb_attr_int(m, 0, "hidden_size", 2);
  tb_output(m, "Y_h", 11, 3, hd);
  ait_graph *g = tb_parse_graph(m);
  CHECK(g != NULL);
  if (!g) return;
  ait_tensor *t[3] = {ait_tensor_new(AIT_FLOAT64, 3, xd), ait_tensor_new(AIT_FLOAT64, 3, wd),
                      ait_tensor_new(AIT_FLOAT64, 3, rd)};
  for (int k = 0; k < 3; k++)
    for (int64_t i = 0; i < ait_tensor_numel(t[k]); i++)
      ((double *)t[k]->data)[i] = frand();
  check_graph(g, "native", (const ait_tensor *const *)t, 3, 0.0, NULL, "LSTM float64");
  for (int k = 0; k < 3; k++)
    ait_tensor_free(t[k]);
  ait_graph_free(g);
}

/* ---- control flow ------------------------------------------------------------ */

/* x [4], c (bool), M (int64) ->
 *   a = x * x                     (main graph, a native kernel)
 *   y = If(c): then a + w (w an initializer of the main graph), else a - x
 *   z, zs = Loop(M, true, x): s' = s + a; cond' = cond; an If inside the
 *   body on cond reads a (two scopes up) and s: zs stacks (s' * a) or s'
 *   per iteration.
 *   q, qs = Scan(x; xs [3, 4]): s' = s + x_t * a (a read from the main graph). */
static ait_graph *control_model(void) {
  static const int64_t v4[1] = {4}, scal[1] = {1};
  static const float w[4] = {0.5f, -1.0f, 2.0f, 3.0f};
  tb_model *m = tb_new(17);
  tb_input(m, "x", 1, 1, v4);
  tb_input(m, "c", 9, 0, scal);
  tb_input(m, "M", 7, 0, scal);
  tb_init_f32(m, "w", 1, v4, w);
  tb_node(m, "Mul", "sq", IN("x", "x"), IN("a"));
  int nif = tb_node(m, "If", "if", IN("c"), IN("y"));
  tb_model *th = tb_new(17), *el = tb_new(17);
  tb_node(th, "Add", "t_add", IN("a", "w"), IN("t"));
  tb_output(th, "t", 1, 1, v4);
  tb_node(el, "Sub", "e_sub", IN("a", "x"), IN("e"));
  tb_output(el, "e", 1, 1, v4);
  tb_attr_graph(m, nif, "then_branch", th);
  tb_attr_graph(m, nif, "else_branch", el);
  tb_init_f32(m, "one", 0, scal, (const float[]){1.0f});
  int ncast = tb_node(m, "Cast", "tru", IN("one"), IN("true"));
  tb_attr_int(m, ncast, "to", 9);
  int nl = tb_node(m, "Loop", "loop", IN("M", "true", "x"), IN("z", "zs"));
  tb_model *body = tb_new(17);
  tb_input(body, "i", 7, 0, scal);
  tb_input(body, "cond", 9, 0, scal);
  tb_input(body, "s", 1, 1, v4);
  tb_node(body, "Add", "b_add", IN("s", "a"), IN("s2"));
  tb_node(body, "Identity", "b_id", IN("cond"), IN("cond2"));
  int bif = tb_node(body, "If", "b_if", IN("cond"), IN("o"));
  tb_model *bth = tb_new(17), *bel = tb_new(17);
  tb_node(bth, "Mul", "bt_mul", IN("s2", "a"), IN("bt"));
  tb_output(bth, "bt", 1, 1, v4);
  tb_node(bel, "Identity", "be_id", IN("s2"), IN("be"));
  tb_output(bel, "be", 1, 1, v4);
  tb_attr_graph(body, bif, "then_branch", bth);
  tb_attr_graph(body, bif, "else_branch", bel);
  tb_output(body, "cond2", 9, 0, scal);
  tb_output(body, "s2", 1, 1, v4);
  tb_output(body, "o", 1, 1, v4);
  tb_attr_graph(m, nl, "body", body);
  /* Scan over xs [3, 4]: state s' = s + x_t * a, scan output s' */
  static const int64_t v34[2] = {3, 4};
  tb_input(m, "xs", 1, 2, v34);
  int nsc = tb_node(m, "Scan", "scan", IN("x", "xs"), IN("q", "qs"));
  tb_attr_int(m, nsc, "num_scan_inputs", 1);
  tb_model *sb = tb_new(17);
  tb_input(sb, "st", 1, 1, v4);
  tb_input(sb, "xt", 1, 1, v4);
  tb_node(sb, "Mul", "s_mul", IN("xt", "a"), IN("xa"));
  tb_node(sb, "Add", "s_add", IN("st", "xa"), IN("st2"));
  tb_node(sb, "Identity", "s_id", IN("st2"), IN("yt"));
  tb_output(sb, "st2", 1, 1, v4);
  tb_output(sb, "yt", 1, 1, v4);
  tb_attr_graph(m, nsc, "body", sb);
  int64_t zs[2] = {-1, 4};
  tb_output(m, "y", 1, 1, v4);
  tb_output(m, "z", 1, 1, v4);
  tb_output(m, "zs", 1, 2, zs);
  tb_output(m, "q", 1, 1, v4);
  tb_output(m, "qs", 1, 2, v34);
  return tb_parse_graph(m);
}

static void test_control_flow(const char *const *specs, int n_specs) {
  ait_graph *g = control_model();
  CHECK(g != NULL);
  if (!g) return;
  int64_t v4[1] = {4};
  ait_tensor *x = ait_tensor_new(AIT_FLOAT32, 1, v4);
  fill(x->data, 4, 1.0f);
  ait_tensor *c = ait_tensor_new(AIT_BOOL, 0, v4), *M = ait_tensor_new(AIT_INT64, 0, v4);
  int64_t v34[2] = {3, 4};
  ait_tensor *xs = ait_tensor_new(AIT_FLOAT32, 2, v34);
  fill(xs->data, 12, 1.0f);
  for (int cond = 0; cond < 2; cond++)
    for (int64_t trips = 0; trips < 4; trips += 3) {
      *(uint8_t *)c->data = (uint8_t)cond;
      *(int64_t *)M->data = trips;
      const ait_tensor *in[4] = {x, c, M, xs};
      char what[64];
      snprintf(what, sizeof what, "If/Loop cond=%d trips=%lld", cond, (long long)trips);
      for (int k = 0; k < n_specs; k++)
        check_graph(g, specs[k], in, 4, 1e-6, NULL, what);
    }
  ait_tensor_free(x);
  ait_tensor_free(c);
  ait_tensor_free(M);
  ait_tensor_free(xs);
  ait_graph_free(g);
}

/* Batch 1 with the default activations and H a multiple of 16: the
 * directions run in chunks of hidden units (native_rnn_step.c), a forward
 * or reverse layer with enough work on two threads. Against eager on every
 * spec; outputs bit for bit the same on one and two threads (a chunk is
 * computed alike whichever thread takes it); the chunked path ran where
 * the level has vectors, and two threads were asked for where it should. */
static void test_rnn_chunked(void) {
  static const char *const ops[] = {"GRU", "LSTM"};
  static const char *const dirs[] = {"forward", "reverse", "bidirectional"};
  static const int64_t hs[] = {16, 32, 48, 64, 128, 256};
  const char *specs[] = {"native:threads=2", "native:threads=1", "native:threads=2,isa=avx2",
                         "native:threads=1,isa=portable"};
  int cases = 0;
  for (int o = 0; o < 2; o++)
    for (int d = 0; d < 3; d++)
      for (size_t h = 0; h < sizeof hs / sizeof hs[0]; h++) {
        rnn_case c = {.op = ops[o], .dir = dirs[d], .B = 1, .lbr = true};
        c.S = 1 + urand() % 9;
        c.I = 1 + urand() % 40;
        c.H = hs[h];
        c.layout = urand() % 2;
        c.lens = urand() % 2;
        c.h0 = urand() % 2;
        c.c0 = urand() % 2;
        c.peep = urand() % 2;
        c.consts = urand() % 4 != 0;
        c.outs = 1 + (int)(urand() % (o ? 7 : 3));
        long long ch = nat_rnn_chunked_dirs(), co = nat_rnn_coop_dirs();
        run_case(&c, specs, 4);
        int64_t D = d == 2 ? 2 : 1, GH = (o ? 4 : 3) * c.H;
        if (nat_isa_cpu() >= NAT_ISA_AVX2) {
          /* two runs on each of the three vector specs (unless the sequence is empty) */
          CHECK(nat_rnn_chunked_dirs() - ch == 6 * D);
          bool two =
              D == 1 && GH * c.H >= 32768 && c.H / 16 / (o == 0 && c.H % 32 == 0 ? 2 : 1) > 1;
          CHECK(nat_rnn_coop_dirs() - co == (two ? 4 : 0));
        }
        cases++;
      }
  /* one thread against two, bit for bit, on a long sequence */
  for (int o = 0; o < 2; o++) {
    bool lstm = o == 1;
    int64_t S = 40, I = 24, H = 128, G = lstm ? 4 : 3;
    int64_t xd[3] = {S, 1, I}, wd[3] = {1, G * H, I}, rd[3] = {1, G * H, H}, bd[2] = {1, 2 * G * H};
    int64_t yd[4] = {S, 1, 1, H};
    ait_tensor *x = tensor_of(3, xd, 1.0f), *w = tensor_of(3, wd, 0.5f);
    ait_tensor *rr = tensor_of(3, rd, 0.3f), *b = tensor_of(2, bd, 0.3f);
    tb_model *m = tb_new(13);
    tb_input(m, "X", 1, 3, xd);
    tb_init_f32(m, "W", 3, wd, w->data);
    tb_init_f32(m, "R", 3, rd, rr->data);
    tb_init_f32(m, "B", 2, bd, b->data);
    tb_output(m, "Y", 1, 4, yd);
    int node = tb_node(m, ops[o], "rnn", (const char *const[]){"X", "W", "R", "B", NULL},
                       (const char *const[]){"Y", NULL});
    tb_attr_int(m, node, "hidden_size", H);
    if (!lstm) tb_attr_int(m, node, "linear_before_reset", 1);
    ait_graph *g = tb_parse_graph(m);
    CHECK(g != NULL);
    ait_tensor *y[2] = {0};
    for (int t = 0; g && t < 2; t++) {
      ait_backend_config cfg;
      CHECK(ait_backend_config_parse(t ? "native:threads=2" : "native:threads=1", &cfg) == AIT_OK);
      void *state = NULL;
      CHECK(cfg.iface->build(&cfg, g, NULL, &state) == AIT_OK);
      const ait_tensor *in[1] = {x};
      for (int run = 0; state && run < 3; run++) { /* the second thread joins some runs late */
        ait_tensor *out[1] = {0};
        CHECK(cfg.iface->infer(state, in, 1, out) == AIT_OK);
        if (!y[t])
          y[t] = out[0];
        else {
          CHECK(out[0] && !memcmp(out[0]->data, y[t]->data, ait_tensor_nbytes(y[t])));
          ait_tensor_free(out[0]);
        }
      }
      if (state) cfg.iface->destroy(state);
    }
    CHECK(y[0] && y[1] && !memcmp(y[0]->data, y[1]->data, ait_tensor_nbytes(y[0])));
    ait_tensor_free(y[0]), ait_tensor_free(y[1]);
    ait_tensor_free(x), ait_tensor_free(w), ait_tensor_free(rr), ait_tensor_free(b);
    ait_graph_free(g);
  }
  printf("recurrent, chunked: %d cases\n", cases);
}

int main(void) {
  /* every level this CPU runs (AIT_MAX_ISA caps auto, as in the _avx2 test) */
  const char *specs[4] = {"native", "native:threads=1,isa=portable"};
  int n = 2;
  if (nat_isa_cpu() >= NAT_ISA_AVX512) specs[n++] = "native:isa=avx2";
  test_rnn_random(specs, n);
  test_rnn_chunked();
  test_rnn_fallback();
  test_control_flow(specs, n);
  return check_result("test_native_rnn");
}
