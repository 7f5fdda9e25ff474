/* The op x backend matrix, in the style of ggml's test-backend-ops: every
 * op of the table below, on random shapes, as a one-node model; each CPU
 * backend (native, onednn, xnnpack, quant, openvino where it is built) is
 * asked whether it takes the node (supports()), and every node it claims
 * must build, run and match eager within a normalized error set by the
 * backend's precision (NMSE = sum (y - ref)^2 / sum ref^2, as ggml's).
 * A claimed node that fails to build or run is a failure too: a backend
 * refuses what it cannot do in supports(), with a reason. Prints the
 * matrix (claimed and checked / refused) for the record. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "check.h"
#include "model_builder.h"
#include "runtime/eager.h"

static uint32_t rng = 4242;
static uint32_t urand(void) {
  rng = rng * 1664525u + 1013904223u;
  return rng >> 8;
}
static float frand(float lo, float hi) {
  return lo + (hi - lo) * (float)(urand() & 0xffff) / 65535.0f;
}
static int64_t irand(int64_t lo, int64_t hi) {
  return lo + (int64_t)(urand() % (uint32_t)(hi - lo + 1));
}

/* The builder keeps an initializer's dims by pointer until the model is
 * parsed: copies that outlive the make_* functions. */
static const int64_t *keep_dims(const int64_t *d, int rank) {
  static int64_t pool[1024];
  static int at;
  if (at + rank > 1024) at = 0;
  memcpy(pool + at, d, sizeof(int64_t) * (size_t)(rank ? rank : 1));
  at += rank ? rank : 1;
  return pool + at - (rank ? rank : 1);
}

static void init_i64(tb_model *m, const char *name, int rank, const int64_t *dims,
                     const int64_t *data) {
  tb_init_i64(m, name, rank, keep_dims(dims, rank), data);
}

static void rand_init(tb_model *m, const char *name, int rank, const int64_t *dims, float lo,
                      float hi) {
  int64_t n = 1;
  for (int k = 0; k < rank; k++)
    n *= dims[k];
  float *d = malloc(sizeof(float) * (size_t)(n ? n : 1));
  for (int64_t i = 0; i < n; i++)
    d[i] = frand(lo, hi);
  tb_init_f32(m, name, rank, keep_dims(dims, rank), d);
  free(d);
}

/* ---- the ops ---------------------------------------------------------------- */

/* One op as a model: inputs X (and Y), output Z, shapes drawn at random.
 * lo..hi is the range of the run-time inputs. */
typedef struct op_case {
  const char *name;
  void (*make)(tb_model *m, const struct op_case *c);
  float lo, hi;
  int opset;
} op_case;

static void shape4(int64_t *d, int *rank) {
  *rank = (int)irand(2, 4);
  for (int k = 0; k < *rank; k++)
    d[k] = irand(1, 9);
}

static void make_unary(tb_model *m, const op_case *c) {
  int64_t d[4];
  int r;
  shape4(d, &r);
  tb_input(m, "X", 1, r, d);
  tb_output(m, "Z", 1, r, d);
  tb_node(m, c->name, "n", (const char *[]){"X", NULL}, (const char *[]){"Z", NULL});
}

/* Y broadcasts into X: some of X's dims are 1 in Y, or Y has fewer dims. */
static void make_binary(tb_model *m, const op_case *c) {
  int64_t d[4], e[4];
  int r;
  shape4(d, &r);
  int ry = (int)irand(1, r);
  for (int k = 0; k < ry; k++)
    e[k] = urand() % 3 == 0 ? 1 : d[r - ry + k];
  tb_input(m, "X", 1, r, d);
  tb_input(m, "Y", 1, ry, e);
  tb_output(m, "Z", 1, r, d);
  tb_node(m, c->name, "n", (const char *[]){"X", "Y", NULL}, (const char *[]){"Z", NULL});
}

static void make_matmul_const(tb_model *m, const op_case *c) {
  int64_t M = irand(1, 17), K = irand(1, 40), N = irand(1, 40);
  int64_t xd[2] = {M, K}, wd[2] = {K, N}, zd[2] = {M, N};
  tb_input(m, "X", 1, 2, xd);
  tb_output(m, "Z", 1, 2, zd);
  rand_init(m, "W", 2, wd, -1, 1);
  tb_node(m, "MatMul", "n", (const char *[]){"X", "W", NULL}, (const char *[]){"Z", NULL});
}

static void make_matmul_batched(tb_model *m, const op_case *c) {
  int64_t B = irand(1, 4), M = irand(1, 12), K = irand(1, 24), N = irand(1, 24);
  int64_t xd[3] = {B, M, K}, yd[3] = {B, K, N}, zd[3] = {B, M, N};
  tb_input(m, "X", 1, 3, xd);
  tb_input(m, "Y", 1, 3, yd);
  tb_output(m, "Z", 1, 3, zd);
  tb_node(m, "MatMul", "n", (const char *[]){"X", "Y", NULL}, (const char *[]){"Z", NULL});
}

static void make_gemm(tb_model *m, const op_case *c) {
  int64_t M = irand(1, 17), K = irand(1, 40), N = irand(1, 40);
  int64_t xd[2] = {M, K}, wd[2] = {N, K}, bd[1] = {N}, zd[2] = {M, N};
  tb_input(m, "X", 1, 2, xd);
  tb_output(m, "Z", 1, 2, zd);
  rand_init(m, "W", 2, wd, -1, 1);
  rand_init(m, "B", 1, bd, -1, 1);
  int n =
      tb_node(m, "Gemm", "n", (const char *[]){"X", "W", "B", NULL}, (const char *[]){"Z", NULL});
  tb_attr_int(m, n, "transB", 1);
}

static void make_conv(tb_model *m, const op_case *c) {
  int64_t C = irand(1, 8), M = irand(1, 12), H = irand(3, 12), W = irand(3, 12);
  int64_t k = urand() % 2 ? 3 : 1, s = urand() % 2 ? 2 : 1, p = k / 2;
  int64_t oh = (H + 2 * p - k) / s + 1, ow = (W + 2 * p - k) / s + 1;
  int64_t xd[4] = {1, C, H, W}, wd[4] = {M, C, k, k}, bd[1] = {M}, zd[4] = {1, M, oh, ow};
  tb_input(m, "X", 1, 4, xd);
  tb_output(m, "Z", 1, 4, zd);
  rand_init(m, "W", 4, wd, -1, 1);
  rand_init(m, "B", 1, bd, -1, 1);
  int n =
      tb_node(m, "Conv", "n", (const char *[]){"X", "W", "B", NULL}, (const char *[]){"Z", NULL});
  int64_t ks[2] = {k, k}, st[2] = {s, s}, pads[4] = {p, p, p, p};
  tb_attr_ints(m, n, "kernel_shape", 2, ks);
  tb_attr_ints(m, n, "strides", 2, st);
  tb_attr_ints(m, n, "pads", 4, pads);
}

static void make_pool(tb_model *m, const op_case *c) {
  int64_t C = irand(1, 8), H = irand(2, 12), W = irand(2, 12);
  int64_t xd[4] = {1, C, H, W}, zd[4] = {1, C, H / 2, W / 2};
  tb_input(m, "X", 1, 4, xd);
  tb_output(m, "Z", 1, 4, zd);
  int n = tb_node(m, c->name, "n", (const char *[]){"X", NULL}, (const char *[]){"Z", NULL});
  int64_t ks[2] = {2, 2}, st[2] = {2, 2};
  tb_attr_ints(m, n, "kernel_shape", 2, ks);
  tb_attr_ints(m, n, "strides", 2, st);
}

static void make_gap(tb_model *m, const op_case *c) {
  int64_t C = irand(1, 16), H = irand(1, 9), W = irand(1, 9);
  int64_t xd[4] = {1, C, H, W}, zd[4] = {1, C, 1, 1};
  tb_input(m, "X", 1, 4, xd);
  tb_output(m, "Z", 1, 4, zd);
  tb_node(m, "GlobalAveragePool", "n", (const char *[]){"X", NULL}, (const char *[]){"Z", NULL});
}

static void make_softmax(tb_model *m, const op_case *c) {
  int64_t d[4];
  int r;
  shape4(d, &r);
  tb_input(m, "X", 1, r, d);
  tb_output(m, "Z", 1, r, d);
  int n = tb_node(m, "Softmax", "n", (const char *[]){"X", NULL}, (const char *[]){"Z", NULL});
  tb_attr_int(m, n, "axis", -1);
}

static void make_layernorm(tb_model *m, const op_case *c) {
  int64_t d[4];
  int r;
  shape4(d, &r);
  d[r - 1] = irand(2, 40);
  tb_input(m, "X", 1, r, d);
  tb_output(m, "Z", 1, r, d);
  rand_init(m, "S", 1, &d[r - 1], 0.5f, 1.5f);
  rand_init(m, "B", 1, &d[r - 1], -1, 1);
  int n = tb_node(m, "LayerNormalization", "n", (const char *[]){"X", "S", "B", NULL},
                  (const char *[]){"Z", NULL});
  tb_attr_int(m, n, "axis", -1);
}

static void make_batchnorm(tb_model *m, const op_case *c) {
  int64_t C = irand(1, 12), H = irand(1, 9), W = irand(1, 9);
  int64_t xd[4] = {1, C, H, W};
  tb_input(m, "X", 1, 4, xd);
  tb_output(m, "Z", 1, 4, xd);
  rand_init(m, "s", 1, &C, 0.5f, 1.5f);
  rand_init(m, "b", 1, &C, -1, 1);
  rand_init(m, "mu", 1, &C, -1, 1);
  rand_init(m, "v", 1, &C, 0.2f, 2.0f);
  tb_node(m, "BatchNormalization", "n", (const char *[]){"X", "s", "b", "mu", "v", NULL},
          (const char *[]){"Z", NULL});
}

static void make_transpose(tb_model *m, const op_case *c) {
  int64_t d[4], e[4], perm[4];
  int r;
  shape4(d, &r);
  for (int k = 0; k < r; k++)
    perm[k] = r - 1 - k, e[k] = d[r - 1 - k];
  tb_input(m, "X", 1, r, d);
  tb_output(m, "Z", 1, r, e);
  int n = tb_node(m, "Transpose", "n", (const char *[]){"X", NULL}, (const char *[]){"Z", NULL});
  tb_attr_ints(m, n, "perm", r, perm);
}

static void make_reshape(tb_model *m, const op_case *c) {
  int64_t d[4], two[1] = {2};
  int r;
  shape4(d, &r);
  int64_t shape[2] = {d[0], -1}, total = 1;
  for (int k = 0; k < r; k++)
    total *= d[k];
  int64_t zd[2] = {d[0], total / d[0]};
  tb_input(m, "X", 1, r, d);
  tb_output(m, "Z", 1, 2, zd);
  init_i64(m, "S", 1, two, shape);
  tb_node(m, "Reshape", "n", (const char *[]){"X", "S", NULL}, (const char *[]){"Z", NULL});
}

static void make_concat(tb_model *m, const op_case *c) {
  int64_t d[4], e[4], z[4];
  int r;
  shape4(d, &r);
  memcpy(e, d, sizeof d);
  memcpy(z, d, sizeof d);
  e[1 % r] = irand(1, 9);
  z[1 % r] = d[1 % r] + e[1 % r];
  tb_input(m, "X", 1, r, d);
  tb_input(m, "Y", 1, r, e);
  tb_output(m, "Z", 1, r, z);
  int n = tb_node(m, "Concat", "n", (const char *[]){"X", "Y", NULL}, (const char *[]){"Z", NULL});
  tb_attr_int(m, n, "axis", 1 % r);
}

static void make_reduce(tb_model *m, const op_case *c) {
  int64_t d[4], z[4], one[1] = {1};
  int r;
  shape4(d, &r);
  memcpy(z, d, sizeof d);
  z[r - 1] = 1;
  int64_t axis = r - 1;
  tb_input(m, "X", 1, r, d);
  tb_output(m, "Z", 1, r, z);
  init_i64(m, "A", 1, one, &axis);
  tb_node(m, c->name, "n", (const char *[]){"X", "A", NULL}, (const char *[]){"Z", NULL});
}

static const op_case cases[] = {
    {"Relu", make_unary, -4, 4, 17},
    {"Sigmoid", make_unary, -6, 6, 17},
    {"Tanh", make_unary, -4, 4, 17},
    {"Exp", make_unary, -4, 4, 17},
    {"Log", make_unary, 0.1f, 4, 17},
    {"Sqrt", make_unary, 0.0f, 4, 17},
    {"Abs", make_unary, -4, 4, 17},
    {"Neg", make_unary, -4, 4, 17},
    {"Erf", make_unary, -3, 3, 17},
    {"Softplus", make_unary, -4, 4, 17},
    {"Elu", make_unary, -4, 4, 17},
    {"LeakyRelu", make_unary, -4, 4, 17},
    {"HardSigmoid", make_unary, -4, 4, 17},
    {"HardSwish", make_unary, -4, 4, 17},
    {"Floor", make_unary, -4, 4, 17},
    {"Ceil", make_unary, -4, 4, 17},
    {"Gelu", make_unary, -4, 4, 20},
    {"Add", make_binary, -4, 4, 17},
    {"Sub", make_binary, -4, 4, 17},
    {"Mul", make_binary, -4, 4, 17},
    {"Div", make_binary, 0.5f, 4, 17},
    {"Max", make_binary, -4, 4, 17},
    {"Min", make_binary, -4, 4, 17},
    {"MatMul", make_matmul_const, -1, 1, 17},
    {"MatMul (batched)", make_matmul_batched, -1, 1, 17},
    {"Gemm", make_gemm, -1, 1, 17},
    {"Conv", make_conv, -1, 1, 17},
    {"MaxPool", make_pool, -4, 4, 17},
    {"AveragePool", make_pool, -4, 4, 17},
    {"GlobalAveragePool", make_gap, -4, 4, 17},
    {"Softmax", make_softmax, -4, 4, 17},
    {"LayerNormalization", make_layernorm, -4, 4, 17},
    {"BatchNormalization", make_batchnorm, -4, 4, 17},
    {"Transpose", make_transpose, -4, 4, 17},
    {"Reshape", make_reshape, -4, 4, 17},
    {"Concat", make_concat, -4, 4, 17},
    {"ReduceMean", make_reduce, -4, 4, 18},
    {"ReduceSum", make_reduce, -4, 4, 18},
    {"ReduceMax", make_reduce, -4, 4, 18},
};

/* ---- the matrix --------------------------------------------------------------- */

static double nmse(const ait_tensor *a, const ait_tensor *ref) {
  if (!a || !ref || a->dtype != AIT_FLOAT32 || ref->dtype != AIT_FLOAT32 || a->rank != ref->rank ||
      memcmp(a->dims, ref->dims, sizeof(int64_t) * (size_t)a->rank))
    return INFINITY;
  const float *x = a->data, *y = ref->data;
  double num = 0, den = 0;
  for (int64_t i = 0; i < ait_tensor_numel(a); i++) {
    double d = (double)x[i] - y[i];
    if (isnan(d)) return INFINITY;
    num += d * d;
    den += (double)y[i] * y[i];
  }
  return den > 0 ? num / den : num;
}

/* The error a backend computing in `prec` may make. */
static double tolerance(const char *prec) {
  if (!prec || !strcmp(prec, "fp32")) return 1e-8;
  if (!strcmp(prec, "tf32") || !strcmp(prec, "bf16") || !strcmp(prec, "fp16")) return 1e-4;
  return 1e-3; /* int8, fp8 */
}

static const char *const backends[] = {"native",  "native:isa=avx2",     "onednn",
                                       "xnnpack", "quant:preset=int8wo", "quant:preset=int8dq",
                                       "openvino"};

typedef struct cell {
  int claimed, checked, refused;
} cell;

/* One case on one backend, on a fresh model of random shapes. */
static void run_case(const char *spec, const op_case *c, int trial, cell *cl) {
  tb_model *m = tb_new(c->opset);
  c->make(m, c);
  ait_graph *g = tb_parse_graph(m);
  CHECK(g != NULL);
  if (!g) return;
  ait_backend_config cfg;
  if (ait_backend_config_parse(spec, &cfg) != AIT_OK) {
    CHECK(false);
    ait_graph_free(g);
    return;
  }
  char why[512];
  bool claims = true;
  for (int i = 0; i < g->n_nodes && claims; i++)
    claims = cfg.iface->supports(&cfg, g, &g->nodes[i], why, sizeof why);
  if (!claims) {
    cl->refused++;
    ait_graph_free(g);
    return;
  }
  cl->claimed++;
  ait_tensor *in[2] = {0};
  for (int i = 0; i < g->n_inputs; i++) {
    const ait_value *v = &g->values[g->inputs[i]];
    int64_t d[AIT_MAX_RANK];
    for (int k = 0; k < v->rank; k++)
      d[k] = v->dims[k].v;
    in[i] = ait_tensor_new(AIT_FLOAT32, v->rank, d);
    float *p = in[i]->data;
    for (int64_t j = 0; j < ait_tensor_numel(in[i]); j++)
      p[j] = frand(c->lo, c->hi);
  }
  ait_tensor *ref = NULL, *out[2] = {0};
  void *state = NULL;
  ait_status st = ait_eager_run(g, (const ait_tensor *const *)in, g->n_inputs, &ref);
  CHECK(st == AIT_OK);
  ait_status bs = cfg.iface->build(&cfg, g, NULL, &state);
  if (bs == AIT_E_UNSUPPORTED && !strncmp(spec, "quant", 5)) {
    /* quant takes a model with something to quantize: a node alone that
     * is not a product is refused when built, with that reason */
    cl->claimed--;
    cl->refused++;
    bs = AIT_OK;
    state = NULL;
    goto done;
  }
  if (bs)
    fprintf(stderr, "%s claims %s (trial %d) but build fails: %s\n", spec, c->name, trial,
            ait_last_error());
  CHECK(bs == AIT_OK);
  if (!bs) {
    ait_status is = cfg.iface->infer(state, (const ait_tensor *const *)in, g->n_inputs, out);
    if (is)
      fprintf(stderr, "%s claims %s (trial %d) but infer fails: %s\n", spec, c->name, trial,
              ait_last_error());
    CHECK(is == AIT_OK);
    double e = nmse(out[0], ref),
           tol = tolerance(cfg.iface->precision ? cfg.iface->precision(&cfg) : NULL);
    if (!(e <= tol))
      fprintf(stderr, "%s: %s (trial %d): NMSE %g > %g\n", spec, c->name, trial, e, tol);
    CHECK(e <= tol);
    if (!is && e <= tol) cl->checked++;
    cfg.iface->destroy(state);
  }
done:
  ait_tensor_free(out[0]);
  ait_tensor_free(out[1]);
  ait_tensor_free(ref);
  ait_tensor_free(in[0]);
  ait_tensor_free(in[1]);
  ait_graph_free(g);
}

int main(void) {
  enum {
    N_CASES = sizeof cases / sizeof cases[0],
    N_BACKENDS = sizeof backends / sizeof backends[0]
  };
  static cell cells[N_CASES][N_BACKENDS];
  bool avail[N_BACKENDS];
  for (int b = 0; b < N_BACKENDS; b++) {
    ait_backend_config cfg;
    char why[512] = "";
    avail[b] = ait_backend_config_parse(backends[b], &cfg) == AIT_OK &&
               cfg.iface->available(why, sizeof why);
    if (!avail[b]) printf("%s: not available here (%s)\n", backends[b], why);
  }
  for (int c = 0; c < N_CASES; c++)
    for (int b = 0; b < N_BACKENDS; b++)
      for (int trial = 0; avail[b] && trial < 3; trial++) {
        rng = 1000u * (uint32_t)c + (uint32_t)trial + 1u; /* same shapes on every backend */
        run_case(backends[b], &cases[c], trial, &cells[c][b]);
      }
  printf("%-20s", "op");
  for (int b = 0; b < N_BACKENDS; b++)
    printf(" %-10.10s", backends[b]);
  printf("\n");
  for (int c = 0; c < N_CASES; c++) {
    printf("%-20s", cases[c].name);
    for (int b = 0; b < N_BACKENDS; b++) {
      const cell *cl = &cells[c][b];
      if (!avail[b])
        printf(" %-10s", "-");
      else if (!cl->claimed)
        printf(" %-10s", "refused");
      else
        printf(" %d/%d%-7s", cl->checked, cl->claimed, cl->refused ? "+r" : "");
    }
    printf("\n");
  }
  return check_result("test_op_matrix");
}
