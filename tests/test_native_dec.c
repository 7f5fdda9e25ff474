/* native's decoder-step kernels (session 16): a few rows of A over a
 * constant B on the packed GEMV (native_gemv.c), attention of a few query
 * rows as dot products over a KV cache (native_attn_dec.c), and graph
 * outputs handed over without a copy (native_exec.c), through graphs
 * against eager at `isa=avx512`, `avx2` and `portable` on random shapes. */
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

/* ---- a few rows over a constant B: the packed GEMV ------------------------- */

/* x[M, K] -> MatMul W[K, N] (+ b[N]) or Gemm transB W'[N, K] (+ c[N]). */
static ait_graph *rows_model(int64_t M, int64_t K, int64_t N, bool gemm) {
  float *w = malloc(sizeof(float) * (size_t)(K * N)), *b = malloc(sizeof(float) * (size_t)N);
  fill(w, K * N), fill(b, N);
  const int64_t dx[2] = {M, K}, dw[2] = {K, N}, dwt[2] = {N, K}, db[1] = {N}, dy[2] = {M, N};
  tb_model *m = tb_new(13);
  tb_input(m, "x", 1, 2, dx);
  tb_output(m, "y", 1, 2, dy);
  tb_init_f32(m, "w", 2, gemm ? dwt : dw, w);
  tb_init_f32(m, "b", 1, db, b);
  if (gemm) {
    int k = tb_node(m, "Gemm", "gemm", IN("x", "w", "b"), IN("y"));
    tb_attr_int(m, k, "transB", 1);
  } else {
    tb_node(m, "MatMul", "mm", IN("x", "w"), IN("h"));
    tb_node(m, "Add", "add", IN("h", "b"), IN("y"));
  }
  free(w), free(b);
  return tb_parse_graph(m);
}

static void test_gemv_rows(void) {
  for (int c = 0; c < 14; c++) {
    int64_t M = c < 12 ? c % 15 + 1 : irand(2, 15), K = irand(100, 700), N = irand(100, 400);
    if (c == 3) M = 8, K = 512, N = 1536; /* gpt2_step_kv's qkv at batch 8 */
    if (K * N < 65536) N = 65536 / K + 1;
    bool gemm = c % 2;
    ait_graph *g = rows_model(M, K, N, gemm);
    CHECK(g != NULL);
    if (!g) continue;
    const int64_t dx[2] = {M, K};
    ait_tensor *in[1] = {rand_tensor(2, dx)};
    /* float sums in another order than eager's: rounding grows with K */
    check_specs(g, (const ait_tensor *const *)in, 1, 1e-5 + 3e-8 * (double)K,
                gemm ? "Gemm rows" : "MatMul rows");
    /* B packed once for the GEMV on the vector levels, not at the portable one */
    CHECK(packs_after_run(g, "native:isa=avx2", (const ait_tensor *const *)in, 1, NAT_DATA_GEMV) ==
          (nat_mm_available(NAT_ISA_AVX2) ? 1 : 0));
    CHECK(packs_after_run(g, "native:isa=portable", (const ait_tensor *const *)in, 1,
                          NAT_DATA_GEMV) == 0);
    ait_tensor_free(in[0]);
    ait_graph_free(g);
  }
}

/* ---- attention of a few query rows over a KV cache -------------------------- */

/* q[B, H, Sq, D], past k/v [B, H, P, D] and new k/v [B, H, Sq, D]:
 * K = Concat(past, new) along 2, Softmax(q K^T * alpha (+ mask)) V. */
static ait_graph *dec_model(int64_t B, int64_t H, int64_t Sq, int64_t P, int64_t D, bool mask) {
  int64_t S = P + Sq;
  const int64_t dq[4] = {B, H, Sq, D}, dp[4] = {B, H, P, D}, dk[4] = {B, H, S, D},
                dm[4] = {B, 1, Sq, S}, dy[4] = {B, H, Sq, D}, d0[1] = {0};
  float alpha = 1.0f / sqrtf((float)D);
  tb_model *m = tb_new(13);
  tb_input(m, "q", 1, 4, dq);
  tb_input(m, "pk", 1, 4, dp);
  tb_input(m, "pv", 1, 4, dp);
  tb_input(m, "nk", 1, 4, dq);
  tb_input(m, "nv", 1, 4, dq);
  if (mask) tb_input(m, "m", 1, 4, dm);
  tb_output(m, "y", 1, 4, dy);
  tb_output(m, "k", 1, 4, dk);
  tb_output(m, "v", 1, 4, dk);
  tb_init_f32(m, "alpha", 0, d0, &alpha);
  int k = tb_node(m, "Concat", "ck", IN("pk", "nk"), IN("k"));
  tb_attr_int(m, k, "axis", 2);
  k = tb_node(m, "Concat", "cv", IN("pv", "nv"), IN("v"));
  tb_attr_int(m, k, "axis", 2);
  static const int64_t perm[4] = {0, 1, 3, 2};
  k = tb_node(m, "Transpose", "kt", IN("k"), IN("kt"));
  tb_attr_ints(m, k, "perm", 4, perm);
  tb_node(m, "MatMul", "qk", IN("q", "kt"), IN("s0"));
  tb_node(m, "Mul", "scale", IN("s0", "alpha"), IN(mask ? "s1" : "s"));
  if (mask) tb_node(m, "Add", "mask", IN("s1", "m"), IN("s"));
  tb_node(m, "Softmax", "sm", IN("s"), IN("p"));
  tb_node(m, "MatMul", "pv_mm", IN("p", "v"), IN("y"));
  return tb_parse_graph(m);
}

static void test_decode_attention(void) {
  for (int c = 0; c < 12; c++) {
    int64_t B = irand(1, 3), H = irand(1, 4), Sq = c % 4 + 1, P = irand(0, 140), D = irand(1, 80);
    if (c == 0) B = 2, H = 8, Sq = 1, P = 127, D = 64; /* gpt2_step_kv's */
    bool mask = c % 3 == 1;
    if (P == 0) P = 1;
    ait_graph *g = dec_model(B, H, Sq, P, D, mask);
    CHECK(g != NULL);
    if (!g) continue;
    ait_graph *rw = rewrite(g);
    CHECK(rw && check_count_op(rw, "FusedAttention") == 1);
    ait_graph_free(rw);
    const int64_t dq[4] = {B, H, Sq, D}, dp[4] = {B, H, P, D}, dm[4] = {B, 1, Sq, P + Sq};
    ait_tensor *in[6] = {rand_tensor(4, dq), rand_tensor(4, dp), rand_tensor(4, dp),
                         rand_tensor(4, dq), rand_tensor(4, dq), rand_tensor(4, dm)};
    long long before = nat_attn_dot_runs();
    check_specs(g, (const ait_tensor *const *)in, mask ? 6 : 5, 1e-5, "decode attention");
    /* the dot-product scores ran twice on each vector spec, not at the portable one */
    if (nat_mm_available(NAT_ISA_AVX2)) CHECK(nat_attn_dot_runs() - before == 8);
    for (int i = 0; i < 6; i++)
      ait_tensor_free(in[i]);
    ait_graph_free(g);
  }
}

/* The graph outputs a fast kernel writes (the Concats above) are handed
 * over, not copied: every output of every run is its own tensor, equal to
 * eager's, and stays valid after the state runs again. */
static void test_outputs_handed_over(void) {
  ait_graph *g = dec_model(1, 2, 1, 9, 16, false);
  CHECK(g != NULL);
  if (!g) return;
  const int64_t dq[4] = {1, 2, 1, 16}, dp[4] = {1, 2, 9, 16};
  ait_tensor *in[5] = {rand_tensor(4, dq), rand_tensor(4, dp), rand_tensor(4, dp),
                       rand_tensor(4, dq), rand_tensor(4, dq)};
  ait_tensor *ref[3] = {0};
  CHECK(ait_eager_run(g, (const ait_tensor *const *)in, 5, ref) == AIT_OK);
  ait_backend_config cfg;
  CHECK(ait_backend_config_parse("native", &cfg) == AIT_OK);
  void *state = NULL;
  CHECK(cfg.iface->build(&cfg, g, NULL, &state) == AIT_OK);
  ait_tensor *out[3][3] = {{0}};
  for (int k = 0; state && k < 3; k++)
    CHECK(cfg.iface->infer(state, (const ait_tensor *const *)in, 5, out[k]) == AIT_OK);
  for (int k = 0; k < 3; k++)
    for (int q = 0; q < 3; q++) {
      CHECK(check_rel_diff(out[k][q], ref[q]) <= 1e-5);
      for (int k2 = 0; k2 < k; k2++)
        CHECK(!out[k][q] || !out[k2][q] || out[k][q]->data != out[k2][q]->data);
    }
  for (int k = 0; k < 3; k++)
    for (int q = 0; q < 3; q++)
      ait_tensor_free(out[k][q]);
  for (int q = 0; q < 3; q++)
    ait_tensor_free(ref[q]);
  if (state) cfg.iface->destroy(state);
  for (int i = 0; i < 5; i++)
    ait_tensor_free(in[i]);
  ait_graph_free(g);
}

int main(void) {
  test_gemv_rows();
  test_decode_attention();
  test_outputs_handed_over();
  return check_result("test_native_dec");
}
