/* Probe cuBLASLt on this GPU at BERT-base's GEMM shapes: for bf16 and e4m3
 * (per-tensor and per-row "outer vector" scales, fast accumulation on and
 * off) the heuristic's candidates are timed one by one, and the first, the
 * best of the first 8 (what the cuda backend measures by default) and the
 * best of all are printed with their TFLOP/s. A combination cuBLASLt does
 * not offer on this GPU prints "no algorithm". Not part of the build:
 *
 *   gcc -O2 -std=c11 -I/usr/local/cuda/include bench/gemm_fp8_probe.c \
 *       -L/usr/local/cuda/lib64 -lcublasLt -lcudart -o gemm_fp8_probe
 *   ./gemm_fp8_probe [M]      (M = token rows, default 4096 = batch 32 x 128)
 *
 * Operands are random bytes scaled into range (values do not matter for
 * speed); no output is checked. */
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x)                                                                                      \
  do {                                                                                             \
    if ((x) != 0) {                                                                                \
      fprintf(stderr, "%s:%d: %s failed (%d)\n", __FILE__, __LINE__, #x, (int)(x));                \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

typedef struct shape {
  const char *name;
  int N, K, epi; /* epi: 0 bias, 1 GELU + bias, 2 bias + residual (C) */
} shape;

static const shape shapes[] = {{"QKV", 2304, 768, 0},
                               {"attn-out", 768, 768, 2},
                               {"FFN-1", 3072, 768, 1},
                               {"FFN-2", 768, 3072, 2}};

static cublasLtHandle_t lt;
static cudaStream_t stream;
static void *ws;
static const size_t ws_bytes = 256u << 20;

static float time_algo(cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t la,
                       cublasLtMatrixLayout_t lb, cublasLtMatrixLayout_t lc, const void *A,
                       const void *B, const void *C, void *D, float beta,
                       const cublasLtMatmulAlgo_t *algo, size_t need) {
  float alpha = 1.0f, t[20];
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  for (int r = 0; r < 3; r++)
    if (cublasLtMatmul(lt, op, &alpha, A, la, B, lb, &beta, C, lc, D, lc, algo, ws, need, stream))
      return -1.0f;
  for (int r = 0; r < 20; r++) {
    cudaEventRecord(e0, stream);
    cublasLtMatmul(lt, op, &alpha, A, la, B, lb, &beta, C, lc, D, lc, algo, ws, need, stream);
    cudaEventRecord(e1, stream);
    cudaEventSynchronize(e1);
    cudaEventElapsedTime(&t[r], e0, e1);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  for (int i = 1; i < 20; i++)
    for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
      float x = t[j];
      t[j] = t[j - 1];
      t[j - 1] = x;
    }
  return t[10];
}

/* kind 0: bf16; 1: e4m3 per-tensor; 2: e4m3 outer-vector scales. */
static void probe(int M, const shape *s, int kind, int fast, void *bufA, void *bufB, void *bufC,
                  void *bufD, float *sca, float *scb, void *bias) {
  cublasLtMatmulDesc_t op;
  CK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  cublasLtEpilogue_t e = s->epi == 1 ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
  CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e));
  CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
  cudaDataType_t bt = CUDA_R_16BF;
  CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
  cudaDataType_t in = kind ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
  if (kind) {
    CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sca, sizeof sca));
    CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scb, sizeof scb));
    int8_t f = (int8_t)fast;
    CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &f, sizeof f));
  }
  if (kind == 2) {
    int32_t m = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    if (cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &m, sizeof m) ||
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &m, sizeof m)) {
      printf("%-9s %-22s attribute refused\n", s->name, "e4m3 outer-vec");
      cublasLtMatmulDescDestroy(op);
      return;
    }
  }
  /* TN: cuBLASLt A = weight [N, K] (K contiguous), B = activation [M, K] */
  cublasLtMatrixLayout_t la, lb, lc;
  CK(cublasLtMatrixLayoutCreate(&la, in, (uint64_t)s->K, (uint64_t)s->N, s->K));
  CK(cublasLtMatrixLayoutCreate(&lb, in, (uint64_t)s->K, (uint64_t)M, s->K));
  CK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, (uint64_t)s->N, (uint64_t)M, s->N));
  cublasLtMatmulPreference_t pref;
  CK(cublasLtMatmulPreferenceCreate(&pref));
  uint64_t wsb = ws_bytes;
  CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb,
                                          sizeof wsb));
  cublasLtMatmulHeuristicResult_t res[64];
  int n = 0;
  cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 64, res, &n);
  char label[64];
  snprintf(label, sizeof label, "%s%s",
           kind == 0   ? "bf16"
           : kind == 1 ? "e4m3"
                       : "e4m3 outer-vec",
           kind && fast ? " fast" : "");
  float beta = s->epi == 2 ? 1.0f : 0.0f;
  double flop = 2.0 * M * s->N * s->K;
  if (hs || n == 0) {
    printf("%-9s %-22s no algorithm (status %d)\n", s->name, label, (int)hs);
  } else {
    float first = -1, best8 = -1, best = -1;
    int at = -1;
    for (int i = 0; i < n; i++) {
      float ms = time_algo(op, la, lb, lc, bufA, bufB, bufC, bufD, beta, &res[i].algo,
                           res[i].workspaceSize);
      if (ms < 0) continue;
      if (i == 0) first = ms;
      if (i < 8 && (best8 < 0 || ms < best8)) best8 = ms;
      if (best < 0 || ms < best) best = ms, at = i;
    }
    printf("%-9s %-22s %2d algos: first %.1f us, best of 8 %.1f us (%.0f TFLOP/s), best %.1f us "
           "(#%d, %.0f TFLOP/s)\n",
           s->name, label, n, first * 1e3, best8 * 1e3, flop / (best8 * 1e-3) / 1e12, best * 1e3,
           at, flop / (best * 1e-3) / 1e12);
  }
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(lc);
  cublasLtMatmulDescDestroy(op);
}

int main(int argc, char **argv) {
  int M = argc > 1 ? atoi(argv[1]) : 4096;
  if (M <= 0 || M > 65536) {
    fprintf(stderr, "usage: %s [M in 1..65536]\n", argv[0]);
    return 2;
  }
  CK(cublasLtCreate(&lt));
  CK(cudaStreamCreate(&stream));
  CK(cudaMalloc(&ws, ws_bytes));
  size_t big = (size_t)M * 3072 * 2 + (size_t)3072 * 3072 * 2;
  void *A, *B, *C, *D, *bias;
  float *sc;
  CK(cudaMalloc(&A, big));
  CK(cudaMalloc(&B, big));
  CK(cudaMalloc(&C, big));
  CK(cudaMalloc(&D, big));
  CK(cudaMalloc(&bias, 3072 * 2));
  CK(cudaMalloc((void **)&sc, 2 * 65536 * sizeof(float)));
  /* small values in every buffer: 0x3c bytes are 1.0 in e4m3's neighbourhood, 0x3c3c a
   * small bf16 */
  CK(cudaMemset(A, 0x3c, big));
  CK(cudaMemset(B, 0x3c, big));
  CK(cudaMemset(C, 0, big));
  CK(cudaMemset(bias, 0, 3072 * 2));
  float *h = malloc(2 * 65536 * sizeof(float));
  for (int i = 0; i < 2 * 65536; i++)
    h[i] = 1.0f / 64;
  CK(cudaMemcpy(sc, h, 2 * 65536 * sizeof(float), cudaMemcpyHostToDevice));
  free(h);
  int dev = 0;
  struct cudaDeviceProp prop;
  cudaGetDevice(&dev);
  cudaGetDeviceProperties(&prop, dev);
  printf("%s, sm_%d%d, cuBLASLt %zu, M = %d\n", prop.name, prop.major, prop.minor,
         cublasLtGetVersion(), M);
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    const shape *s = &shapes[i];
    /* the weight is cuBLASLt's A, the activation B (see probe) */
    probe(M, s, 0, 0, B, A, C, D, sc, sc + 65536, bias);
    probe(M, s, 1, 0, B, A, C, D, sc, sc + 65536, bias);
    probe(M, s, 1, 1, B, A, C, D, sc, sc + 65536, bias);
    probe(M, s, 2, 1, B, A, C, D, sc, sc + 65536, bias);
  }
  return 0;
}
