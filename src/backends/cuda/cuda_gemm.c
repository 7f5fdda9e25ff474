/* Gemm / MatMul (and the fused FusedGemm / FusedMatMul) through cuBLASLt.
 *
 * Row-major C[M, N] = A[M, K] B[K, N] is cuBLASLt's column-major
 * C^T[N, M] = B^T A^T, so cuBLASLt's A is our B and its B is our A, with no
 * copies. Bias (a constant per output column) and ReLU go into the cuBLASLt
 * epilogue; a residual of the output's shape is its C matrix (beta = 1);
 * other activations (exact GELU among them) and broadcast residuals run as
 * one elementwise pass after. Batches: operands without batch dims fold into
 * M, equal batch dims become a strided batch (stride 0 for a broadcast
 * operand), anything else a loop of calls.
 *
 * The algorithm is chosen when the plan is made: the heuristic's best
 * `candidates` are timed on the plan's own buffers and the fastest is kept
 * in the state's algorithm cache under a key of the problem, which save()
 * writes and load() reads back, so a loaded model does not measure again.
 *
 * dtype=fp8 (Hopper's fp8 Tensor Cores): a GEMM whose weight is a constant
 * 2-D matrix runs as an e4m3 x e4m3 cuBLASLt GEMM with bfloat16 output. The
 * weight is quantized once (per tensor, stored [N, K]: cuBLASLt's fp8 GEMMs
 * take only the "TN" layout, K contiguous in both operands); the activation
 * [M, K] is quantized per tensor at every run by cuk_fp8_quantize just before
 * the GEMM, and the two scales reach cuBLASLt as device pointers, so the
 * step is capturable. A GEMM cuBLASLt has no fp8 algorithm for runs in
 * bfloat16 (the bf16 weight is uploaded too).
 *
 * dtype=fp8wo: a constant weight reaches the GEMM as B dequantized from e4m3
 * by a step of its own (cuda_fp8wo.c); the GEMM is dtype=bf16's. */
#ifdef AIT_HAVE_CUDA

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_impl.h"

typedef struct gemm_prm {
  int a, b, c, bias, y; /* tensors (c: C matrix, bias: per-column vector; -1 = none) */
  const float *bias_f32;
  bool ta, tb;
  int64_t M, N, K;
  int batch;
  int64_t sa, sb, sy;
  int n_loop;   /* > 0: one call per batch, element offsets below */
  int64_t *off; /* n_loop * 3: a, b, y */
  float alpha, beta;
  int act; /* cuk code applied to the output (CUK_COPY = none) */
  float ap[2];
  /* chosen in prep */
  int lt_epi; /* epilogue cuBLASLt applies */
  bool post_bias, post_act;
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t la, lb, lc, ld;
  cublasLtMatmulAlgo_t algo;
  size_t ws;
  char key[CU_KEY_LEN];
  /* dtype=fp8 */
  bool fp8;
  void *w8;              /* weight, e4m3 [N, K] */
  const float *wsc;      /* its scale (device) */
  int xq, xs;            /* tensors: the activation in e4m3, its absmax and scale */
  struct gemm_prm *qsrc; /* an earlier fp8 GEMM that quantizes the same activation */
  int parts;             /* > 0: the activation's producer wrote this many absmax partials */
  /* fp8_amax=on: an fp8 GEMM whose output an fp8 GEMM quantizes next has
   * cuBLASLt write the output's absmax (AMAX_D) into that GEMM's scale
   * buffer (tensor amax_t, at + 8), sparing it the absmax pass; amax_ok
   * when cuBLASLt took it (prep), else the consumer finds it itself */
  int amax_t;
  bool amax_ok;
  struct gemm_prm *amax_src; /* the producer that writes this GEMM's absmax */
} gemm_prm;

static void gemm_release(void *prm) {
  gemm_prm *g = prm;
  if (g->op) cublasLtMatmulDescDestroy(g->op);
  if (g->la) cublasLtMatrixLayoutDestroy(g->la);
  if (g->lb) cublasLtMatrixLayoutDestroy(g->lb);
  if (g->lc) cublasLtMatrixLayoutDestroy(g->lc);
  if (g->ld) cublasLtMatrixLayoutDestroy(g->ld);
  free(g->off);
}

static cudaDataType_t lt_type(ait_dtype dt) {
  return dt == AIT_BFLOAT16 ? CUDA_R_16BF : dt == AIT_FLOAT16 ? CUDA_R_16F : CUDA_R_32F;
}

static ait_status layout(cublasLtMatrixLayout_t *l, cudaDataType_t dt, int64_t rows, int64_t cols,
                         int64_t ld, int batch, int64_t stride) {
  AIT_TRY(cu_check_lt(cublasLtMatrixLayoutCreate(l, dt, (uint64_t)rows, (uint64_t)cols, ld),
                      "matrix layout"));
  if (batch > 1) {
    int32_t b = batch;
    AIT_TRY(cu_check_lt(
        cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &b, sizeof b),
        "batch count"));
    AIT_TRY(
        cu_check_lt(cublasLtMatrixLayoutSetAttribute(
                        *l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride),
                    "batch stride"));
  }
  return AIT_OK;
}

/* Descriptors for epilogue epi (bias pointer from the plan). */
static ait_status set_attr(gemm_prm *g, cublasLtMatmulDescAttributes_t a, const void *v, size_t n,
                           const char *what) {
  return cu_check_lt(cublasLtMatmulDescSetAttribute(g->op, a, v, n), what);
}

static ait_status make_desc(cu_state *s, cu_plan *p, gemm_prm *g, int epi) {
  if (g->op) cublasLtMatmulDescDestroy(g->op);
  g->op = NULL;
  cublasComputeType_t ct = s->o.prec == CU_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  AIT_TRY(cu_check_lt(cublasLtMatmulDescCreate(&g->op, ct, CUDA_R_32F), "matmul descriptor"));
  cublasOperation_t opa = g->tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                    opb = g->ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (g->fp8) { /* TN: cuBLASLt's A = the weight [N, K] seen transposed */
    opa = CUBLAS_OP_T;
    opb = CUBLAS_OP_N;
    const void *as = g->wsc, *bs = (const float *)cu_ptr(p, g->xs) + 4;
    int8_t fast = s->o.fp8_fast ? 1 : 0;
    AIT_TRY(set_attr(g, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &as, sizeof as, "A scale"));
    AIT_TRY(set_attr(g, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &bs, sizeof bs, "B scale"));
    AIT_TRY(set_attr(g, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof fast, "fast accumulation"));
    if (g->amax_ok) {
      void *am = (float *)cu_ptr(p, g->amax_t) + 8;
      AIT_TRY(set_attr(g, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, &am, sizeof am, "amax D"));
    }
  }
  AIT_TRY(cu_check_lt(
      cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa),
      "transa"));
  AIT_TRY(cu_check_lt(
      cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb),
      "transb"));
  cublasLtEpilogue_t e = (cublasLtEpilogue_t)epi;
  AIT_TRY(cu_check_lt(
      cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e),
      "epilogue"));
  if (epi == CUBLASLT_EPILOGUE_BIAS || epi == CUBLASLT_EPILOGUE_RELU_BIAS ||
      epi == CUBLASLT_EPILOGUE_GELU_BIAS) {
    void *bp = cu_ptr(p, g->bias);
    AIT_TRY(cu_check_lt(
        cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp, sizeof bp),
        "bias pointer"));
    cudaDataType_t bt = lt_type(p->t[g->bias].dt);
    AIT_TRY(set_attr(g, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt, "bias type"));
  }
  return AIT_OK;
}

static void free_layouts(gemm_prm *g) {
  cublasLtMatrixLayout_t *l[4] = {&g->la, &g->lb, &g->lc, &g->ld};
  for (int i = 0; i < 4; i++) {
    if (*l[i]) cublasLtMatrixLayoutDestroy(*l[i]);
    *l[i] = NULL;
  }
}

static ait_status make_layouts(cu_plan *p, gemm_prm *g) {
  free_layouts(g);
  cudaDataType_t dt = lt_type(p->t[g->y].dt);
  if (g->fp8) { /* both e4m3 operands K-contiguous, no batch (folded into M) */
    AIT_TRY(layout(&g->la, CUDA_R_8F_E4M3, g->K, g->N, g->K, 1, 0));
    AIT_TRY(layout(&g->lb, CUDA_R_8F_E4M3, g->K, g->M, g->K, 1, 0));
    AIT_TRY(layout(&g->lc, dt, g->N, g->M, g->N, 1, 0));
    return layout(&g->ld, dt, g->N, g->M, g->N, 1, 0);
  }
  int b = g->n_loop ? 1 : g->batch;
  /* cuBLASLt A = our B: stored [K, N] (ld N) or, transposed, [N, K] (ld K) */
  AIT_TRY(
      layout(&g->la, dt, g->tb ? g->K : g->N, g->tb ? g->N : g->K, g->tb ? g->K : g->N, b, g->sb));
  /* cuBLASLt B = our A: stored [M, K] (ld K) or [K, M] (ld M) */
  AIT_TRY(
      layout(&g->lb, dt, g->ta ? g->M : g->K, g->ta ? g->K : g->M, g->ta ? g->M : g->K, b, g->sa));
  AIT_TRY(layout(&g->lc, dt, g->N, g->M, g->N, b, g->sy));
  AIT_TRY(layout(&g->ld, dt, g->N, g->M, g->N, b, g->sy));
  return AIT_OK;
}

/* One cuBLASLt call per batch (or one in all). */
static ait_status gemm_call(cu_state *s, cu_plan *p, gemm_prm *g, const cublasLtMatmulAlgo_t *algo,
                            size_t ws) {
  size_t es = ait_elem_size(p->t[g->y].dt);
  char *A = cu_ptr(p, g->a), *B = cu_ptr(p, g->b), *Y = cu_ptr(p, g->y);
  if (g->fp8) A = cu_ptr(p, g->xq), B = g->w8;
  char *C = g->c >= 0 ? cu_ptr(p, g->c) : Y;
  float beta = g->c >= 0 ? g->beta : 0.0f;
  int calls = g->n_loop ? g->n_loop : 1;
  for (int i = 0; i < calls; i++) {
    size_t oa = 0, ob = 0, oy = 0;
    if (g->n_loop) {
      oa = (size_t)g->off[3 * i] * es;
      ob = (size_t)g->off[3 * i + 1] * es;
      oy = (size_t)g->off[3 * i + 2] * es;
    }
    AIT_TRY(cu_check_lt(cublasLtMatmul(s->lt, g->op, &g->alpha, B + ob, g->la, A + oa, g->lb, &beta,
                                       C + oy, g->lc, Y + oy, g->ld, algo, s->ws, ws, s->stream),
                        "cublasLtMatmul"));
  }
  return AIT_OK;
}

static ait_status gemm_post(cu_state *s, cu_plan *p, gemm_prm *g) {
  if (!g->post_bias && !g->post_act) return AIT_OK;
  const cu_tensor *Y = &p->t[g->y];
  cuk_epi e = {.dt = Y->dt, .n = cu_numel(Y), .C = g->N, .inner = 1, .x = Y->ptr, .y = Y->ptr};
  e.shift = g->post_bias ? g->bias_f32 : NULL;
  e.act = g->post_act ? g->act : CUK_COPY;
  e.ap[0] = g->ap[0];
  e.ap[1] = g->ap[1];
  return cu_check(cuk_epilogue(s->stream, &e), "GEMM epilogue");
}

static ait_status gemm_run(cu_state *s, cu_plan *p, cu_step *st) {
  gemm_prm *g = st->prm;
  if (g->fp8 && (!g->qsrc || !g->qsrc->fp8)) { /* else quantized already by qsrc */
    const void *x = cu_ptr(p, g->a);
    int dt = p->t[g->a].dt;
    int parts = g->amax_src && g->amax_src->amax_ok ? 1 : g->parts;
    AIT_TRY(cu_check(parts > 0 ? cuk_fp8_quantize_parts(s->stream, dt, x, g->M * g->K,
                                                        cu_ptr(p, g->xs), parts, cu_ptr(p, g->xq))
                               : cuk_fp8_quantize(s->stream, dt, x, g->M * g->K, cu_ptr(p, g->xs),
                                                  cu_ptr(p, g->xq)),
                     "fp8 activation quantization"));
  }
  AIT_TRY(gemm_call(s, p, g, &g->algo, g->ws));
  return gemm_post(s, p, g);
}

typedef struct trial {
  cu_state *s;
  cu_plan *p;
  gemm_prm *g;
  const cublasLtMatmulAlgo_t *algo;
  size_t ws;
  cu_step *st; /* fp8_pick: the whole step */
} trial;

static ait_status trial_fn(void *arg) {
  trial *t = arg;
  return gemm_call(t->s, t->p, t->g, t->algo, t->ws);
}

/* Choose the epilogue cuBLASLt can do and the fastest algorithm; *ms its
 * measured time (0 when not measured). */
static ait_status gemm_choose1(cu_state *s, cu_plan *p, gemm_prm *g, float *ms_out) {
  *ms_out = 0.0f;
  AIT_TRY(cu_need_lt(s));
  AIT_TRY(make_layouts(p, g));
  bool want_bias = g->bias >= 0, want_relu = g->act == CUK_RELU;
  /* exact (erf) GELU as cuBLASLt's tanh-approximated GELU epilogue: only
   * where storage is 16-bit (the two differ by < 1e-3, under bfloat16's
   * resolution) and the option allows it; saves a pass over the output */
  bool want_gelu = (g->act == CUK_GELU || g->act == CUK_GELU_TANH) && s->o.gelu_lt &&
                   p->t[g->y].dt != AIT_FLOAT32;
  int tries[4], n_tries = 0;
  if (want_bias && want_relu) tries[n_tries++] = CUBLASLT_EPILOGUE_RELU_BIAS;
  if (want_bias && want_gelu) tries[n_tries++] = CUBLASLT_EPILOGUE_GELU_BIAS;
  if (want_bias) tries[n_tries++] = CUBLASLT_EPILOGUE_BIAS;
  if (!want_bias && want_relu) tries[n_tries++] = CUBLASLT_EPILOGUE_RELU;
  if (!want_bias && want_gelu) tries[n_tries++] = CUBLASLT_EPILOGUE_GELU;
  tries[n_tries++] = CUBLASLT_EPILOGUE_DEFAULT;
  cublasLtMatmulPreference_t pref = NULL;
  AIT_TRY(cu_check_lt(cublasLtMatmulPreferenceCreate(&pref), "matmul preference"));
  uint64_t wsb = (uint64_t)s->o.ws_bytes;
  ait_status rc = cu_check_lt(cublasLtMatmulPreferenceSetAttribute(
                                  pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb),
                              "workspace preference");
  cublasLtMatmulHeuristicResult_t res[64];
  int n_res = 0, epi = CUBLASLT_EPILOGUE_DEFAULT;
  for (int pass = 0; pass < 2 && n_res == 0; pass++) {
    if (pass == 1) { /* no fp8 algorithm for this problem: run it in the storage type */
      if (!g->fp8) break;
      g->fp8 = false;
      rc = make_layouts(p, g);
    }
    for (int t = 0; !rc && t < n_tries && n_res == 0; t++) {
      epi = tries[t];
      rc = make_desc(s, p, g, epi);
      if (rc) break;
      int want = s->o.candidates < 1 ? 1 : s->o.candidates > 64 ? 64 : s->o.candidates;
      cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(s->lt, g->op, g->la, g->lb, g->lc, g->ld,
                                                         pref, want, res, &n_res);
      if (hs != CUBLAS_STATUS_SUCCESS) n_res = 0;
    }
    if (rc) break;
  }
  cublasLtMatmulPreferenceDestroy(pref);
  AIT_TRY(rc);
  if (n_res == 0)
    return ait_err(AIT_E_UNSUPPORTED, "cuda: cuBLASLt has no algorithm for %s", g->key);
  g->lt_epi = epi;
  g->post_bias = want_bias && epi != CUBLASLT_EPILOGUE_BIAS && epi != CUBLASLT_EPILOGUE_RELU_BIAS &&
                 epi != CUBLASLT_EPILOGUE_GELU_BIAS;
  g->post_act =
      g->act != CUK_COPY &&
      !(want_relu && (epi == CUBLASLT_EPILOGUE_RELU_BIAS || epi == CUBLASLT_EPILOGUE_RELU)) &&
      !(want_gelu && (epi == CUBLASLT_EPILOGUE_GELU_BIAS || epi == CUBLASLT_EPILOGUE_GELU));
  if (g->post_bias && !g->bias_f32)
    return ait_err(AIT_E_UNSUPPORTED, "cuda: no bias epilogue for %s", g->key);
  char key[CU_KEY_LEN];
  snprintf(key, sizeof key, "%s|e%d%s%s", g->key, epi,
           !g->fp8         ? ""
           : s->o.fp8_fast ? "|fp8fast"
                           : "|fp8",
           g->amax_ok ? "|amax" : "");
  const cu_algo *known = cu_algo_find(s, key);
  if (known) {
    cublasLtMatmulHeuristicResult_t chk;
    memcpy(&g->algo, known->lt, sizeof g->algo);
    if (cublasLtMatmulAlgoCheck(s->lt, g->op, g->la, g->lb, g->lc, g->ld, &g->algo, &chk) ==
            CUBLAS_STATUS_SUCCESS &&
        chk.workspaceSize <= (size_t)s->o.ws_bytes) {
      g->ws = chk.workspaceSize;
      *ms_out = known->ms;
      return AIT_OK;
    }
  }
  int best = 0;
  float best_ms = 0.0f;
  if (s->o.measure && n_res > 1) {
    best = -1;
    for (int i = 0; i < n_res; i++) {
      if (res[i].state != CUBLAS_STATUS_SUCCESS) continue;
      trial t = {s, p, g, &res[i].algo, res[i].workspaceSize, NULL};
      float ms;
      if (cu_time(s, trial_fn, &t, 3, &ms) != AIT_OK) {
        ait_err_clear();
        continue;
      }
      if (best < 0 || ms < best_ms) best = i, best_ms = ms;
    }
    if (best < 0) return ait_err(AIT_E_RUNTIME, "cuda: no cuBLASLt algorithm ran for %s", g->key);
    s->n_measured++;
  }
  g->algo = res[best].algo;
  g->ws = res[best].workspaceSize;
  cu_algo a;
  memset(&a, 0, sizeof a);
  snprintf(a.key, sizeof a.key, "%s", key);
  a.kind = CU_ALGO_LT;
  memcpy(a.lt, &g->algo, sizeof a.lt);
  a.ws = (int64_t)g->ws;
  a.ms = best_ms;
  *ms_out = best_ms;
  return cu_algo_put(s, &a);
}

/* gemm_choose1, first with cuBLASLt's AMAX_D where asked: kept only when
 * the epilogue does all (no pass after the GEMM changes the output) and one
 * call runs; else chosen again without. */
static ait_status gemm_choose(cu_state *s, cu_plan *p, gemm_prm *g, float *ms_out) {
  g->amax_ok = g->amax_t >= 0 && g->fp8;
  if (g->amax_ok) {
    ait_status r = gemm_choose1(s, p, g, ms_out);
    if (!r && (!g->fp8 || g->post_bias || g->post_act)) r = AIT_E_UNSUPPORTED;
    /* a call must write the absmax: a NaN there before must be gone after */
    float *am = (float *)cu_ptr(p, g->amax_t) + 8, got = 0.0f;
    if (!r) r = cu_check(cudaMemsetAsync(am, 0xff, sizeof(float), s->stream), "GEMM with amax");
    if (!r) r = gemm_call(s, p, g, &g->algo, g->ws);
    if (!r)
      r = cu_check(cudaMemcpyAsync(&got, am, sizeof got, cudaMemcpyDeviceToHost, s->stream),
                   "GEMM with amax");
    if (!r) r = cu_check(cudaStreamSynchronize(s->stream), "GEMM with amax");
    if (!r && (got != got || got < 0.0f)) r = AIT_E_UNSUPPORTED; /* not written */
    if (!r) return AIT_OK;
    ait_err_clear();
    g->amax_ok = false;
  }
  return gemm_choose1(s, p, g, ms_out);
}

static ait_status step_fn(void *arg) {
  trial *t = arg;
  return gemm_run(t->s, t->p, t->st);
}

/* How the activation of fp8 GEMM g gets its e4m3 copy: the cost that comes
 * with the GEMM, part of the pick's key. */
static int quant_kind(const gemm_prm *g) {
  if (g->qsrc && g->qsrc->fp8) return 0;             /* an earlier GEMM quantizes it */
  if (g->amax_src && g->amax_src->amax_ok) return 1; /* cuBLASLt wrote the absmax */
  return g->parts > 0 ? 2 : 3;                       /* LayerNorm partials / a full pass */
}

/* fp8_gemms=auto: keep g on e4m3 only when the step (quantization of its
 * activation included) is faster than the bfloat16 GEMM; both timed on the
 * plan's buffers once, the pick cached with the algorithms. At BERT-base
 * batch 32 on an H200 the e4m3 GEMMs are 1.1-1.5x faster than bf16, and a
 * full absmax pass plus conversion of a 4096 x 3072 activation takes more
 * than that gains. */
static ait_status fp8_pick(cu_state *s, cu_plan *p, cu_step *st) {
  gemm_prm *g = st->prm;
  char key[CU_KEY_LEN];
  snprintf(key, sizeof key, "pick|%s|q%d%s", g->key, quant_kind(g), s->o.fp8_fast ? "|fast" : "");
  const cu_algo *known = cu_algo_find(s, key);
  float ms = 0.0f, t8 = 0.0f, t16 = 0.0f;
  bool keep8;
  if (known) {
    keep8 = known->conv_algo == 1;
  } else {
    trial t = {s, p, g, NULL, 0, st};
    AIT_TRY(cu_time(s, step_fn, &t, 9, &t8));
    g->fp8 = false;
    AIT_TRY(gemm_choose(s, p, g, &ms));
    AIT_TRY(cu_time(s, step_fn, &t, 9, &t16));
    keep8 = t8 <= t16;
    cu_algo a;
    memset(&a, 0, sizeof a);
    snprintf(a.key, sizeof a.key, "%s", key);
    a.kind = CU_ALGO_PICK;
    a.conv_algo = keep8 ? 1 : 0;
    a.ms = keep8 ? t8 : t16;
    AIT_TRY(cu_algo_put(s, &a));
    s->n_measured++;
  }
  if (keep8 != g->fp8) {
    g->fp8 = keep8;
    AIT_TRY(gemm_choose(s, p, g, &ms)); /* the algorithm is cached: no timing */
  }
  st->what = g->fp8 ? "fp8 GEMM" : "GEMM (bf16: fp8 slower)";
  return AIT_OK;
}

static ait_status gemm_prep(cu_state *s, cu_plan *p, cu_step *st) {
  gemm_prm *g = st->prm;
  float ms;
  AIT_TRY(gemm_choose(s, p, g, &ms));
  if (!g->fp8 || s->o.fp8_all || !s->o.measure) return AIT_OK;
  return fp8_pick(s, p, st);
}

/* ---- lowering ------------------------------------------------------------ */

static void set_key(cu_planner *pl, gemm_prm *g) {
  cu_plan *p = pl->p;
  snprintf(g->key, sizeof g->key,
           "lt|%s|%s|%c%c|m%lld n%lld k%lld|b%d sa%lld sb%lld sy%lld|loop%d|c%d|bias%d",
           cu_prec_name(pl->s->o.prec), ait_dtype_name(p->t[g->y].dt), g->ta ? 'T' : 'N',
           g->tb ? 'T' : 'N', (long long)g->M, (long long)g->N, (long long)g->K, g->batch,
           (long long)g->sa, (long long)g->sb, (long long)g->sy, g->n_loop, g->c >= 0,
           g->bias >= 0);
}

static ait_status emit(cu_planner *pl, const ait_node *n, gemm_prm *g) {
  set_key(pl, g);
  cu_step *s;
  int64_t *off = g->off; /* cu_step_add frees g, not what it points to */
  ait_status st =
      cu_step_add(pl, (int)(n - pl->g->nodes), g->fp8 ? "fp8 GEMM" : n->op_type, gemm_run, g, &s);
  if (st) {
    free(off);
    return st;
  }
  s->prep = gemm_prep;
  s->release = gemm_release;
  cu_step_use(s, g->a);
  cu_step_use(s, g->b);
  cu_step_use(s, g->c);
  cu_step_use(s, g->bias);
  cu_step_use(s, g->y);
  cu_step_use(s, g->xq);
  cu_step_use(s, g->xs);
  return AIT_OK;
}

static gemm_prm *new_prm(void) {
  gemm_prm *g = calloc(1, sizeof *g);
  if (!g) {
    ait_err(AIT_E_NOMEM, "cuda: out of memory");
    return NULL;
  }
  g->c = g->bias = g->xq = g->xs = g->amax_t = -1;
  g->alpha = 1.0f;
  g->beta = 1.0f;
  g->batch = 1;
  g->act = CUK_COPY;
  return g;
}

static ait_status set_act(const ait_node *n, gemm_prm *g) {
  if (strcmp(n->domain, AIT_FUSED_DOMAIN)) return AIT_OK;
  ait_act a;
  AIT_TRY(ait_act_parse(n, &a));
  cu_act_code(&a, &g->act, g->ap);
  return AIT_OK;
}

/* A constant per-column bias of N values for the cuBLASLt epilogue. */
static ait_status use_bias(cu_planner *pl, int v, int64_t N, gemm_prm *g, bool *used) {
  *used = false;
  const ait_value *val = &pl->g->values[v];
  if (!val->init || ait_tensor_numel(val->init) != N) return AIT_OK;
  for (int k = 0; k + 1 < val->init->rank; k++)
    if (val->init->dims[k] != 1) return AIT_OK;
  AIT_TRY(cu_in(pl, v, CU_PLAIN, &g->bias));
  void *f;
  AIT_TRY(cu_const_weight(pl, v, CU_W_F32, &f));
  g->bias_f32 = f;
  *used = true;
  return AIT_OK;
}

/* Broadcast residual / addend z added after the GEMM, with the activation. */
static ait_status add_after(cu_planner *pl, const ait_node *n, gemm_prm *g, int z, float beta) {
  int in[2] = {g->y, z};
  int act = g->act;
  float ap[2] = {g->ap[0], g->ap[1]};
  g->act = CUK_COPY;
  return cu_emit_eltwise(pl, (int)(n - pl->g->nodes), "GEMM addend", CUK_ADD, NULL, in, 2, g->y,
                         act, ap, beta);
}

/* dtype=fp8: run g on e4m3 operands when its weight (value wv, stored [N, K]
 * when nk, else [K, N]) is a constant matrix and the shapes suit cuBLASLt's
 * fp8 GEMMs (K and N multiples of 16: 16-byte aligned rows); else g stays
 * in the storage type. */
static ait_status try_fp8(cu_planner *pl, gemm_prm *g, int wv, bool nk) {
  cu_plan *p = pl->p;
  const ait_value *w = &pl->g->values[wv];
  if (pl->s->o.prec != CU_FP8 || g->ta || g->batch != 1 || g->n_loop || g->K % 16 || g->N % 16 ||
      !w->init || w->init->kind != AIT_KIND_TENSOR || w->init->rank != 2 ||
      p->t[g->y].dt != AIT_BFLOAT16 || p->t[g->a].dt != AIT_BFLOAT16 ||
      cu_numel(&p->t[g->a]) != g->M * g->K)
    return AIT_OK;
  void *dev;
  AIT_TRY(cu_const_weight(pl, wv, nk ? CU_W_E4M3_NK : CU_W_E4M3_KN, &dev));
  /* Q, K and V projections read one activation: quantize it once */
  for (int i = p->n_steps - 1; i >= 0 && !g->qsrc; i--) {
    gemm_prm *o = p->steps[i].run == gemm_run ? p->steps[i].prm : NULL;
    if (o && o->fp8 && !o->qsrc && o->a == g->a && o->M == g->M && o->K == g->K) g->qsrc = o;
  }
  if (g->qsrc) {
    g->xq = g->qsrc->xq;
    g->xs = g->qsrc->xs;
  } else {
    int64_t dq[2] = {g->M, g->K}, ds = 8 + CUK_FP8_PARTS;
    AIT_TRY(cu_temp(pl, AIT_UINT8, 2, dq, CU_PLAIN, &g->xq));
    AIT_TRY(cu_temp(pl, AIT_FLOAT32, 1, &ds, CU_PLAIN, &g->xs));
    /* after a LayerNorm, its kernel finds the absmax: one pass less */
    g->parts = cu_layernorm_amax(pl, g->a, g->xs);
    /* after an fp8 GEMM, cuBLASLt may (fp8_amax=on) */
    for (int i = p->n_steps - 1; i >= 0 && !g->parts && pl->s->o.fp8_amax && !g->amax_src; i--) {
      gemm_prm *o = p->steps[i].run == gemm_run ? p->steps[i].prm : NULL;
      if (o && o->fp8 && o->y == g->a && o->amax_t < 0 && !o->n_loop) {
        o->amax_t = g->xs;
        g->amax_src = o;
        cu_step_use(&p->steps[i], g->xs); /* the scale buffer lives from there */
      }
    }
  }
  g->w8 = dev;
  g->wsc = (const float *)((char *)dev + cu_e4m3_scale_offset(g->K * g->N));
  g->fp8 = true;
  return AIT_OK;
}

/* Operand B of GEMM node n: under dtype=fp8wo a constant weight comes
 * dequantized from its e4m3 copy (cu_fp8wo_operand), else it is the
 * value's tensor. */
static ait_status gemm_b(cu_planner *pl, const ait_node *n, int *t) {
  bool nk;
  if (pl->s->o.prec == CU_FP8WO && cu_fp8wo_site(pl->s->g, n, &nk))
    return cu_fp8wo_operand(pl, n, n->in[1], nk, t);
  return cu_in(pl, n->in[1], CU_PLAIN, t);
}

static bool same_dims(const cu_tensor *a, const cu_tensor *b) {
  if (a->rank != b->rank) return false;
  for (int k = 0; k < a->rank; k++)
    if (a->dims[k] != b->dims[k]) return false;
  return true;
}

ait_status cu_lower_gemm(cu_planner *pl, const ait_node *n) {
  gemm_prm *g = new_prm();
  if (!g) return AIT_E_NOMEM;
  ait_status st = cu_in(pl, n->in[0], CU_PLAIN, &g->a);
  if (!st) st = gemm_b(pl, n, &g->b);
  if (!st) st = cu_out(pl, n->out[0], CU_PLAIN, &g->y);
  if (!st) st = set_act(n, g);
  const cu_tensor *A = &pl->p->t[g->a], *B = &pl->p->t[g->b];
  if (!st && (A->rank != 2 || B->rank != 2))
    st = ait_err(AIT_E_SHAPE, "cuda: Gemm takes 2-D operands");
  int z = -1;
  float zbeta = 1.0f;
  if (!st) {
    g->ta = ait_attr_int(n, "transA", 0) != 0;
    g->tb = ait_attr_int(n, "transB", 0) != 0;
    g->alpha = ait_attr_float(n, "alpha", 1.0f);
    g->beta = ait_attr_float(n, "beta", 1.0f);
    g->M = g->ta ? A->dims[1] : A->dims[0];
    g->K = g->ta ? A->dims[0] : A->dims[1];
    g->N = g->tb ? B->dims[0] : B->dims[1];
    if ((g->tb ? B->dims[1] : B->dims[0]) != g->K)
      st = ait_err(AIT_E_SHAPE, "cuda: Gemm inner dims differ");
  }
  if (!st && n->n_in > 2 && n->in[2] >= 0) {
    bool used = false;
    if (g->beta == 1.0f) st = use_bias(pl, n->in[2], g->N, g, &used);
    if (!st && !used) {
      int c;
      st = cu_in(pl, n->in[2], CU_PLAIN, &c);
      if (!st && same_dims(&pl->p->t[c], &pl->p->t[g->y]))
        g->c = c;
      else
        z = c, zbeta = g->beta;
    }
  }
  if (!st) st = try_fp8(pl, g, n->in[1], g->tb);
  if (st) {
    free(g);
    return st;
  }
  AIT_TRY(emit(pl, n, g));
  gemm_prm *gp = pl->p->steps[pl->p->n_steps - 1].prm;
  return z >= 0 ? add_after(pl, n, gp, z, zbeta) : AIT_OK;
}

/* Offsets of a batch loop: for every output batch index, the element
 * offsets of A, B and Y under broadcasting. */
static ait_status loop_offsets(gemm_prm *g, int r, const int64_t *ob, const int64_t *ab,
                               const int64_t *bb) {
  int64_t nb = 1;
  for (int k = 0; k < r; k++)
    nb *= ob[k];
  if (nb > 65536)
    return ait_err(AIT_E_UNSUPPORTED, "cuda: MatMul broadcast over %lld batches", (long long)nb);
  g->off = malloc(sizeof(int64_t) * 3 * (size_t)(nb + 1));
  if (!g->off) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
  for (int64_t i = 0; i < nb; i++) {
    int64_t rem = i, oa = 0, obb = 0, sa = g->M * g->K, sb = g->K * g->N;
    for (int k = r - 1; k >= 0; k--) {
      int64_t c = rem % ob[k];
      rem /= ob[k];
      oa += (ab[k] == 1 ? 0 : c) * sa;
      obb += (bb[k] == 1 ? 0 : c) * sb;
      sa *= ab[k];
      sb *= bb[k];
    }
    g->off[3 * i] = oa;
    g->off[3 * i + 1] = obb;
    g->off[3 * i + 2] = i * g->M * g->N;
  }
  g->n_loop = (int)nb;
  return AIT_OK;
}

static ait_status matmul_shape(cu_planner *pl, gemm_prm *g) {
  const cu_tensor *A = &pl->p->t[g->a], *B = &pl->p->t[g->b];
  int ra = A->rank, rb = B->rank;
  if (ra < 1 || rb < 1) return ait_err(AIT_E_SHAPE, "cuda: MatMul of a scalar");
  g->K = A->dims[ra - 1];
  g->M = ra >= 2 ? A->dims[ra - 2] : 1;
  g->N = rb >= 2 ? B->dims[rb - 1] : 1;
  if ((rb >= 2 ? B->dims[rb - 2] : B->dims[0]) != g->K)
    return ait_err(AIT_E_SHAPE, "cuda: MatMul inner dims %lld and %lld differ", (long long)g->K,
                   (long long)(rb >= 2 ? B->dims[rb - 2] : B->dims[0]));
  int na = ra > 2 ? ra - 2 : 0, nb = rb > 2 ? rb - 2 : 0, r = na > nb ? na : nb;
  int64_t ab[AIT_MAX_RANK], bb[AIT_MAX_RANK], ob[AIT_MAX_RANK], pa = 1, pb = 1, po = 1;
  for (int k = 0; k < r; k++) {
    int ka = k - (r - na), kb = k - (r - nb);
    ab[k] = ka >= 0 ? A->dims[ka] : 1;
    bb[k] = kb >= 0 ? B->dims[kb] : 1;
    if (ab[k] != bb[k] && ab[k] != 1 && bb[k] != 1)
      return ait_err(AIT_E_SHAPE, "cuda: MatMul batch dims do not broadcast");
    ob[k] = ab[k] > bb[k] ? ab[k] : bb[k];
    pa *= ab[k];
    pb *= bb[k];
    po *= ob[k];
  }
  g->sy = g->M * g->N;
  if (pb == 1) { /* B has no batch: A's batches are rows */
    g->M *= pa;
    g->sy = g->M * g->N;
    return AIT_OK;
  }
  if (po > 2147483647) return ait_err(AIT_E_UNSUPPORTED, "cuda: MatMul batch too large");
  if (pb == po && (pa == po || pa == 1)) {
    bool same = true;
    for (int k = 0; k < r; k++)
      same = same && bb[k] == ob[k] && (pa == 1 || ab[k] == ob[k]);
    if (same) {
      g->batch = (int)po;
      g->sa = pa == 1 ? 0 : g->M * g->K;
      g->sb = g->K * g->N;
      return AIT_OK;
    }
  }
  return loop_offsets(g, r, ob, ab, bb);
}

ait_status cu_lower_matmul(cu_planner *pl, const ait_node *n) {
  gemm_prm *g = new_prm();
  if (!g) return AIT_E_NOMEM;
  ait_status st = cu_in(pl, n->in[0], CU_PLAIN, &g->a);
  if (!st) st = gemm_b(pl, n, &g->b);
  if (!st) st = cu_out(pl, n->out[0], CU_PLAIN, &g->y);
  if (!st) st = set_act(n, g);
  if (!st) st = matmul_shape(pl, g);
  if (!st && cu_numel(&pl->p->t[g->y]) != (int64_t)(g->n_loop ? g->n_loop : g->batch) * g->M * g->N)
    st = ait_err(AIT_E_SHAPE, "cuda: MatMul output size does not match");
  bool fused = !strcmp(n->domain, AIT_FUSED_DOMAIN);
  if (!st && fused) g->alpha = ait_attr_float(n, "alpha", 1.0f);
  if (!st && fused && n->n_in > 2 && n->in[2] >= 0) {
    bool used = false;
    st = use_bias(pl, n->in[2], g->N, g, &used);
    if (!st && !used)
      st = ait_err(AIT_E_UNSUPPORTED, "cuda: FusedMatMul bias must be a constant of N values");
  }
  int z = -1;
  bool no_z = pl->role && pl->role[n - pl->g->nodes] == CU_ROLE_NO_Z; /* masked softmax adds it */
  if (!st && fused && n->n_in > 3 && n->in[3] >= 0 && !no_z) {
    st = cu_in(pl, n->in[3], CU_PLAIN, &z);
    if (!st && same_dims(&pl->p->t[z], &pl->p->t[g->y])) {
      g->c = z;
      g->beta = 1.0f;
      z = -1;
    }
  }
  if (!st) st = try_fp8(pl, g, n->in[1], false);
  if (st) {
    free(g->off);
    free(g);
    return st;
  }
  AIT_TRY(emit(pl, n, g));
  gemm_prm *gp = pl->p->steps[pl->p->n_steps - 1].prm;
  return z >= 0 ? add_after(pl, n, gp, z, 1.0f) : AIT_OK;
}

/* ---- GEMMs owned by other steps (convolutions) ---------------------------- */

ait_status cu_gemm_nt(cu_planner *pl, int x, int w, int bias_v, int z, int y, int64_t M, int64_t N,
                      int64_t K, int act, const float *ap, cu_gemm **out) {
  *out = NULL;
  gemm_prm *g = new_prm();
  if (!g) return AIT_E_NOMEM;
  g->a = x;
  g->b = w;
  g->y = y;
  g->tb = true;
  g->M = M;
  g->N = N;
  g->K = K;
  g->act = act;
  g->ap[0] = ap ? ap[0] : 0.0f;
  g->ap[1] = ap ? ap[1] : 0.0f;
  g->c = z;
  bool used = true;
  ait_status st = bias_v >= 0 ? use_bias(pl, bias_v, N, g, &used) : AIT_OK;
  if (!st && !used)
    st = ait_err(AIT_E_UNSUPPORTED, "cuda: GEMM bias must be a constant of N values");
  if (st) {
    free(g);
    return st;
  }
  set_key(pl, g);
  *out = g;
  return AIT_OK;
}

ait_status cu_gemm_choose(cu_state *s, cu_plan *p, cu_gemm *g, float *ms) {
  return gemm_choose(s, p, g, ms);
}

ait_status cu_gemm_exec(cu_state *s, cu_plan *p, cu_gemm *g) {
  AIT_TRY(gemm_call(s, p, g, &g->algo, g->ws));
  return gemm_post(s, p, g);
}

void cu_gemm_uses(cu_step *st, const cu_gemm *g) {
  cu_step_use(st, g->a);
  cu_step_use(st, g->b);
  cu_step_use(st, g->c);
  cu_step_use(st, g->bias);
  cu_step_use(st, g->y);
}

void cu_gemm_free(cu_gemm *g) {
  if (!g) return;
  gemm_release(g);
  free(g);
}

#endif
