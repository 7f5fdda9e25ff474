/* native's kernels for encoders, audio front-ends and RNNs (session 10):
 * the blocked GEMM (native_mm*.c) called directly at each vector level
 * against a float64 product, on random shapes that cross its reduction
 * chunks, row panels and column tails, with every epilogue; then through
 * graphs against eager at `isa=avx512`, `avx2` and `portable`: Gemm with
 * transB on the tiles (packed once), a MatMul whose residual is one row (a
 * bias computed in the graph), InstanceNormalization, and a spelled-out
 * GELU after something other than a product (one FusedUnary). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/native/native.h"
#include "backends/native/native_mm.h"
#include "check.h"
#include "model_builder.h"
#include "runtime/eager.h"

#include "native_check.h"

/* ---- the blocked GEMM, called directly ------------------------------------- */

static double gelu_d(double x) { return 0.5 * x * (1.0 + erf(x / sqrt(2.0))); }

/* One random product at `level`: C (with a poisoned border: columns and
 * rows outside the share must stay untouched) against float64. */
static void mm_case(int level, int tile, int64_t M, int64_t N, int64_t K, bool packed, bool bias,
                    bool z, int act) {
  nat_mm m;
  memset(&m, 0, sizeof m);
  if (tile < 0)
    nat_mm_init(&m, level, M, N, K);
  else if (!nat_mm_init_tile(&m, level, tile, M, N, K))
    return;
  int64_t ldb = N + 3, ldc = N + 5;
  float *A = malloc(sizeof(float) * (size_t)(M * K)),
        *B = malloc(sizeof(float) * (size_t)(K * ldb));
  float *bs = malloc(sizeof(float) * (size_t)N), *Z = malloc(sizeof(float) * (size_t)(M * N));
  float *C = malloc(sizeof(float) * (size_t)(M * ldc));
  fill(A, M * K), fill(B, K * ldb), fill(bs, N), fill(Z, M * N);
  for (int64_t i = 0; i < M * ldc; i++)
    C[i] = 1e30f;
  bool rowb = next() % 2;
  float *rb = malloc(sizeof(float) * (size_t)M);
  fill(rb, M);
  m.row_bias = rowb ? rb : NULL;
  float *pk = NULL;
  if (packed) {
    pk = malloc(sizeof(float) * (size_t)nat_mm_packed_floats(K, N, m.nr));
    nat_mm_pack(pk, B, K, N, ldb, 1, m.nr);
    m.b = pk;
  } else {
    m.b = B, m.ldb = ldb;
  }
  m.a = A, m.lda = K, m.c = C, m.ldc = ldc;
  m.bias = bias ? bs : NULL;
  m.z = z ? Z : NULL, m.ldz = N;
  m.lo = act == 1 ? 0.0f : -INFINITY, m.hi = act == 1 ? 0.5f : INFINITY;
  m.gelu = act == 2;
  /* two shares, as two pool tasks would run them */
  int64_t jm = N > m.nr ? (N / m.nr + 1) / 2 * m.nr : N, im = M / 2;
  nat_mm_run(&m, 0, im, 0, jm);
  nat_mm_run(&m, im, M, 0, jm);
  nat_mm_run(&m, 0, M, jm, N);
  double worst = 0;
  for (int64_t i = 0; i < M; i++) {
    for (int64_t j = 0; j < N; j++) {
      double s = (bias ? bs[j] : 0) + (rowb ? rb[i] : 0), mag = fabs(s);
      for (int64_t k = 0; k < K; k++) {
        s += (double)A[i * K + k] * B[k * ldb + j];
        mag += fabs((double)A[i * K + k] * B[k * ldb + j]);
      }
      if (z) s += Z[i * N + j], mag += fabs(Z[i * N + j]);
      if (act == 1) s = s < 0 ? 0 : s > 0.5 ? 0.5 : s;
      if (act == 2) s = gelu_d(s);
      double d = fabs(C[i * ldc + j] - s) / (1.0 + mag);
      if (!(d <= worst)) worst = d;
    }
    for (int64_t j = N; j < ldc; j++)
      CHECK(C[i * ldc + j] == 1e30f);
  }
  if (!(worst <= 1e-6))
    fprintf(stderr,
            "mm level %d tile %d (%dx%d) %lldx%lldx%lld packed %d bias %d z %d act %d: %g\n", level,
            tile, m.mr, m.nr, (long long)M, (long long)N, (long long)K, packed, bias, z, act,
            worst);
  CHECK(worst <= 1e-6);
  free(A), free(B), free(bs), free(Z), free(C), free(pk), free(rb);
}

static void test_mm_kernel(void) {
  static const int64_t fixed[][3] = {{128, 768, 3072}, {49, 384, 1536}, {24, 256, 1024},
                                     {400, 40, 1100},  {1, 17, 5},      {13, 100, 800},
                                     {300, 524, 700}}; /* the last: a panel's C past 512 KB */
  for (int level = NAT_ISA_AVX2; level <= NAT_ISA_AVX512; level++) {
    if (!nat_mm_available(level)) {
      fprintf(stderr, "mm: level %s not on this CPU, skipped\n", nat_isa_name(level));
      continue;
    }
    for (size_t f = 0; f < sizeof fixed / sizeof fixed[0]; f++)
      mm_case(level, -1, fixed[f][0], fixed[f][1] / (f < 3 ? 8 : 1), fixed[f][2] / (f < 3 ? 4 : 1),
              f % 2 == 0, true, f % 3 == 0, (int)(f % 3));
    /* every tile of the level, widths off its vectors */
    for (int c = 0; c < 60; c++)
      mm_case(level, c % 3, irand(1, 300), irand(1, 150), irand(1, 900), next() % 2, next() % 2,
              next() % 2, (int)(next() % 3));
  }
}

/* ---- graphs -------------------------------------------------------------- */

/* x[R, K] -> Gemm(W [N, K], transB) + c -> y: the tiles read W transposed
 * (packed once); c a bias row [N] or a full [R, N] input. */
static ait_graph *gemm_tb_model(int64_t R, int64_t K, int64_t N, bool full_c) {
  float *w = malloc(sizeof(float) * (size_t)(N * K)), *c = malloc(sizeof(float) * (size_t)N);
  fill(w, N * K), fill(c, N);
  const int64_t dx[2] = {R, K}, dw[2] = {N, K}, dc[1] = {N}, dcf[2] = {R, N}, dy[2] = {R, N};
  tb_model *m = tb_new(13);
  tb_input(m, "x", 1, 2, dx);
  if (full_c)
    tb_input(m, "c", 1, 2, dcf);
  else
    tb_init_f32(m, "c", 1, dc, c);
  tb_output(m, "y", 1, 2, dy);
  tb_init_f32(m, "w", 2, dw, w);
  tb_attr_int(m, tb_node(m, "Gemm", "g", IN("x", "w", "c"), IN("y")), "transB", 1);
  free(w), free(c);
  return tb_parse_graph(m);
}

static void test_gemm_tiles(void) {
  for (int c = 0; c < 6; c++) {
    int64_t R = irand(16, 140), K = irand(1, 500), N = irand(16, 90);
    bool full = c % 2;
    ait_graph *g = gemm_tb_model(R, K, N, full);
    CHECK(g != NULL);
    if (!g) continue;
    const int64_t dx[2] = {R, K}, dc[2] = {R, N};
    ait_tensor *in[2] = {rand_tensor(2, dx), rand_tensor(2, dc)};
    check_specs(g, (const ait_tensor *const *)in, full ? 2 : 1, 1e-5, "Gemm transB");
    /* the tiles ran on the vector levels: W packed once for them */
    int want = nat_mm_available(NAT_ISA_AVX2) ? 1 : 0;
    CHECK(packs_after_run(g, "native:isa=avx2", (const ait_tensor *const *)in, full ? 2 : 1,
                          NAT_DATA_TILES) == want);
    CHECK(packs_after_run(g, "native:isa=portable", (const ait_tensor *const *)in, full ? 2 : 1,
                          NAT_DATA_TILES) == 0);
    ait_tensor_free(in[0]), ait_tensor_free(in[1]);
    ait_graph_free(g);
  }
}

/* x[S, 1, E] -> MatMul W[E, N] + Add(b), b an input [N] (not a constant:
 * as nn.MultiheadAttention's Slice of its packed in_proj_bias): a residual
 * of one row, run as the tiles' bias instead of S products of one row. */
static ait_graph *row_residual_model(int64_t S, int64_t E, int64_t N) {
  float *w = malloc(sizeof(float) * (size_t)(E * N));
  fill(w, E * N);
  const int64_t dx[3] = {S, 1, E}, dw[2] = {E, N}, db[1] = {N}, dy[3] = {S, 1, N};
  tb_model *m = tb_new(13);
  tb_input(m, "x", 1, 3, dx);
  tb_input(m, "b", 1, 1, db);
  tb_output(m, "y", 1, 3, dy);
  tb_init_f32(m, "w", 2, dw, w);
  tb_node(m, "MatMul", "mm", IN("x", "w"), IN("h"));
  tb_node(m, "Add", "add", IN("b", "h"), IN("y"));
  free(w);
  return tb_parse_graph(m);
}

static void test_row_residual(void) {
  ait_graph *g = row_residual_model(24, 40, 56);
  CHECK(g != NULL);
  if (!g) return;
  const int64_t dx[3] = {24, 1, 40}, db[1] = {56};
  ait_tensor *in[2] = {rand_tensor(3, dx), rand_tensor(1, db)};
  check_specs(g, (const ait_tensor *const *)in, 2, 1e-5, "MatMul + row residual");
  ait_tensor_free(in[0]), ait_tensor_free(in[1]);
  ait_graph_free(g);
}

/* InstanceNormalization (+ the GroupNorm export's affine and GELU spelled
 * out after it): planes of odd lengths, 1-D and 2-D. */
static ait_graph *instnorm_gelu_model(int rank, const int64_t *dx, bool gelu) {
  int64_t C = dx[1];
  float *s = malloc(sizeof(float) * (size_t)C), *b = malloc(sizeof(float) * (size_t)C);
  fill(s, C), fill(b, C);
  static const float sqrt2 = 1.41421356f, one = 1.0f, half = 0.5f;
  const int64_t dc[1] = {C}, d0[1] = {0};
  tb_model *m = tb_new(13);
  tb_input(m, "x", 1, rank, dx);
  tb_output(m, "y", 1, rank, dx);
  tb_init_f32(m, "s", 1, dc, s);
  tb_init_f32(m, "b", 1, dc, b);
  tb_init_f32(m, "sqrt2", 0, d0, &sqrt2);
  tb_init_f32(m, "one", 0, d0, &one);
  tb_init_f32(m, "half", 0, d0, &half);
  tb_node(m, "InstanceNormalization", "in", IN("x", "s", "b"), IN(gelu ? "n" : "y"));
  if (gelu) {
    tb_node(m, "Div", "div", IN("n", "sqrt2"), IN("d"));
    tb_node(m, "Erf", "erf", IN("d"), IN("e"));
    tb_node(m, "Add", "add", IN("e", "one"), IN("a"));
    tb_node(m, "Mul", "mul", IN("n", "a"), IN("p"));
    tb_node(m, "Mul", "mul2", IN("p", "half"), IN("y"));
  }
  free(s), free(b);
  return tb_parse_graph(m);
}

static void test_instnorm_gelu(void) {
  static const int64_t shapes[][4] = {{1, 7, 3199, 0}, {2, 5, 33, 0}, {1, 3, 9, 13}, {2, 16, 1, 0}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    int rank = shapes[i][3] ? 4 : 3;
    for (int gelu = 0; gelu < 2; gelu++) {
      ait_graph *g = instnorm_gelu_model(rank, shapes[i], gelu);
      CHECK(g != NULL);
      if (!g) continue;
      if (gelu) { /* five nodes of GELU became one FusedUnary */
        ait_graph *rw = rewrite(g);
        CHECK(rw && check_count_op(rw, "FusedUnary") == 1 && check_count_op(rw, "Erf") == 0 &&
              check_count_op(rw, "Mul") == 0);
        ait_graph_free(rw);
      }
      ait_tensor *x = rand_tensor(rank, shapes[i]);
      check_specs(g, (const ait_tensor *const *)&x, 1, 1e-5, "InstanceNormalization");
      ait_tensor_free(x);
      ait_graph_free(g);
    }
  }
}

/* torch's GroupNorm with groups == channels and affine (wav2vec2's front
 * end): Reshape(x, [0, C, -1]) -> InstanceNormalization -> Reshape back
 * (to Shape(x), or the constant; the dynamo exporter has none) ->
 * Mul(gamma [C, 1]) -> Add(beta [C, 1]), then the spelled-out GELU (dynamo:
 * x * ((1 + erf) * 0.5)) or not: one FusedInstanceNorm. */
static ait_graph *groupnorm_model(const int64_t *dx, bool gelu, bool by_shape, bool dynamo) {
  int64_t C = dx[1];
  float *p = malloc(sizeof(float) * (size_t)(4 * C));
  fill(p, 4 * C);
  static const float sqrt2 = 1.41421356f, one = 1.0f, half = 0.5f;
  const int64_t dc[1] = {C}, dc1[2] = {C, 1}, d0[1] = {0}, d3[1] = {3}, sh[3] = {0, C, -1};
  tb_model *m = tb_new(13);
  tb_input(m, "x", 1, 3, dx);
  tb_output(m, "y", 1, 3, dx);
  tb_init_f32(m, "s", 1, dc, p);
  tb_init_f32(m, "b", 1, dc, p + C);
  tb_init_f32(m, "gamma", 2, dc1, p + 2 * C);
  tb_init_f32(m, "beta", 2, dc1, p + 3 * C);
  tb_init_i64(m, "sh", 1, d3, sh);
  tb_init_f32(m, "sqrt2", 0, d0, &sqrt2);
  tb_init_f32(m, "one", 0, d0, &one);
  tb_init_f32(m, "half", 0, d0, &half);
  tb_node(m, "Reshape", "r0", IN("x", "sh"), IN("xr"));
  tb_node(m, "InstanceNormalization", "in", IN("xr", "s", "b"), IN("n0"));
  if (by_shape && !dynamo) tb_node(m, "Shape", "shape", IN("x"), IN("xs"));
  if (!dynamo) tb_node(m, "Reshape", "r1", IN("n0", by_shape ? "xs" : "sh"), IN("n1"));
  tb_node(m, "Mul", "g", IN(dynamo ? "n0" : "n1", "gamma"), IN("n2"));
  tb_node(m, "Add", "bt", IN("n2", "beta"), IN(gelu ? "n" : "y"));
  if (gelu) {
    tb_node(m, "Div", "div", IN("n", "sqrt2"), IN("d"));
    tb_node(m, "Erf", "erf", IN("d"), IN("e"));
    tb_node(m, "Add", "add", IN("e", "one"), IN("a"));
    if (dynamo) {
      tb_node(m, "Mul", "mul", IN("a", "half"), IN("ah"));
      tb_node(m, "Mul", "mul2", IN("n", "ah"), IN("y"));
    } else {
      tb_node(m, "Mul", "mul", IN("n", "a"), IN("p"));
      tb_node(m, "Mul", "mul2", IN("p", "half"), IN("y"));
    }
  }
  free(p);
  return tb_parse_graph(m);
}

static void test_groupnorm(void) {
  static const int64_t shapes[][3] = {{1, 7, 3199}, {2, 5, 33}, {3, 16, 1}, {2, 4, 100}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    for (int v = 0; v < 6; v++) {
      bool gelu = v & 1, by_shape = v & 2, dynamo = v & 4;
      ait_graph *g = groupnorm_model(shapes[i], gelu, by_shape, dynamo);
      CHECK(g != NULL);
      if (!g) continue;
      ait_graph *rw = rewrite(g);
      CHECK(rw && check_count_op(rw, "FusedInstanceNorm") == 1 && check_count_op(rw, "Erf") == 0 &&
            check_count_op(rw, "Mul") == 0 && check_count_op(rw, "Add") == 0 &&
            check_count_op(rw, "Reshape") == 0);
      ait_graph_free(rw);
      ait_tensor *x = rand_tensor(3, shapes[i]);
      check_specs(g, (const ait_tensor *const *)&x, 1, 1e-5, "GroupNorm");
      ait_tensor_free(x);
      ait_graph_free(g);
    }
}

/* x[N, C, L] -> Conv(W [M, C, k], bias?) [-> Add(z) -> Relu]: a 1-D
 * convolution of one group, on native_mm's tiles at the vector levels. */
static ait_graph *conv1d_model(int64_t N, int64_t C, int64_t L, int64_t M, int64_t k, int64_t s,
                               int64_t d, int64_t p0, int64_t p1, bool bias, bool res, int64_t *T) {
  *T = (L + p0 + p1 - d * (k - 1) - 1) / s + 1;
  float *w = malloc(sizeof(float) * (size_t)(M * C * k)), *b = malloc(sizeof(float) * (size_t)M);
  fill(w, M * C * k), fill(b, M);
  const int64_t dx[3] = {N, C, L}, dw[3] = {M, C, k}, db[1] = {M}, dy[3] = {N, M, *T};
  const int64_t st[1] = {s}, dl[1] = {d}, pd[2] = {p0, p1}, ks[1] = {k};
  tb_model *m = tb_new(13);
  tb_input(m, "x", 1, 3, dx);
  if (res) tb_input(m, "z", 1, 3, dy);
  tb_output(m, "y", 1, 3, dy);
  tb_init_f32(m, "w", 3, dw, w);
  tb_init_f32(m, "b", 1, db, b);
  int c = tb_node(m, "Conv", "conv", bias ? IN("x", "w", "b") : IN("x", "w"), IN(res ? "c" : "y"));
  tb_attr_ints(m, c, "strides", 1, st);
  tb_attr_ints(m, c, "dilations", 1, dl);
  tb_attr_ints(m, c, "pads", 2, pd);
  tb_attr_ints(m, c, "kernel_shape", 1, ks);
  if (res) {
    tb_node(m, "Add", "add", IN("c", "z"), IN("a"));
    tb_node(m, "Relu", "relu", IN("a"), IN("y"));
  }
  free(w), free(b);
  return tb_parse_graph(m);
}

static void test_conv1d(void) {
  for (int c = 0; c < 24; c++) {
    int64_t N = irand(1, 2), C = irand(1, 40), L = irand(8, 700), M = irand(8, 70);
    int64_t k = irand(1, 7), s = irand(1, 3), d = irand(1, 2), p0 = irand(0, 3), p1 = irand(0, 3);
    if (c == 0)
      N = 1, C = 1, L = 1600, M = 64, k = 10, s = 5, d = 1, p0 = p1 = 0; /* wav2vec2's first */
    if (c == 1) /* its stride-2 layers, with a padded start and an odd length */
      N = 2, C = 48, L = 333, M = 40, k = 3, s = 2, d = 1, p0 = 1, p1 = 0;
    if ((L + p0 + p1 - d * (k - 1) - 1) < 0) continue;
    bool bias = c % 2, res = c % 3 == 0;
    int64_t T;
    ait_graph *g = conv1d_model(N, C, L, M, k, s, d, p0, p1, bias, res, &T);
    CHECK(g != NULL);
    if (!g) continue;
    const int64_t dx[3] = {N, C, L}, dz[3] = {N, M, T};
    ait_tensor *in[2] = {rand_tensor(3, dx), rand_tensor(3, dz)};
    long long before = nat_mm_conv1d_runs();
    check_specs(g, (const ait_tensor *const *)in, res ? 2 : 1, 1e-5, "Conv 1-D");
    /* the tiles ran where the product is big enough: twice on each vector spec */
    if (M * C * k >= 4096 && nat_mm_available(NAT_ISA_AVX2))
      CHECK(nat_mm_conv1d_runs() - before == 8);
    ait_tensor_free(in[0]), ait_tensor_free(in[1]);
    ait_graph_free(g);
  }
}

int main(void) {
  test_mm_kernel();
  test_gemm_tiles();
  test_row_residual();
  test_instnorm_gelu();
  test_groupnorm();
  test_conv1d();
  return check_result("test_native_seq");
}
