/* Per-kernel timing of native's MatMul products on transformer shapes
 * (rows x K x N of DistilBERT, MiniLM, wav2vec2, nn.Transformer, Swin):
 * the pointwise-convolution tiles (native_nhwc512.c / native_nhwc256.c,
 * B packed), OpenBLAS and native's blocked GEMM (native_mm.c) at each
 * level, one thread, best of R calls (the best survives a loaded machine),
 * in GFLOP/s; with `cold`, B comes from memory on every call. Build after the Release build and run
 * pinned to one core:
 *   cc -O2 -Isrc -Iinclude -Ibuild -I/usr/include/x86_64-linux-gnu/openblas-pthread \
 *      -o /tmp/mm_kernels bench/mm_kernels.c -Lbuild -laitune -lopenblas \
 *      -Wl,-rpath,$PWD/build && taskset -c 1 /tmp/mm_kernels [R [cold]]
 * (OPENBLAS_CORETYPE=Haswell gives OpenBLAS's AVX2 kernels, what an AVX2
 * CPU runs.) `R avx2`: native's AVX2 GEMM, OpenBLAS and oneDNN's sgemm
 * (run with OPENBLAS_CORETYPE=Haswell ONEDNN_MAX_CPU_ISA=AVX2). */
#include "backends/native/native.h"
#include "backends/native/native_mm.h"
#include <cblas.h>
#include <math.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* This thread's CPU time, not the wall clock: on a shared machine a call of
 * a few ms is almost always preempted, and the wall-clock best of such
 * calls is the neighbours' load, not the kernel. */
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
static float *rnd(int64_t n) {
  float *p = aligned_alloc(64, (size_t)((n * 4 + 63) / 64 * 64));
  for (int64_t i = 0; i < n; i++)
    p[i] = (float)rand() / (float)RAND_MAX - 0.5f;
  return p;
}
static float *pack(const float *B, int64_t K, int64_t N, int64_t bw) {
  int64_t nb = (N + bw - 1) / bw;
  float *p = aligned_alloc(64, (size_t)(nb * bw * K * 4));
  for (int64_t b = 0; b < nb; b++) {
    int64_t m0 = b * bw, mc = N - m0 < bw ? N - m0 : bw;
    for (int64_t k = 0; k < K; k++) {
      memcpy(p + b * bw * K + k * bw, B + k * N + m0, (size_t)mc * 4);
      memset(p + b * bw * K + k * bw + mc, 0, (size_t)(bw - mc) * 4);
    }
  }
  return p;
}

typedef struct {
  int what; /* 0 tiles, 1 openblas, 2 native_mm, 3 oneDNN's sgemm */
  int level;
  nat_nhwc c;
  nat_mm mm;
  const float *a, *b;
  float *y;
  int64_t P, K, N;
} job;

static void call(job *j) {
  if (j->what == 0)
    (j->level == NAT_ISA_AVX512 ? nat_nhwc512_pw : nat_nhwc256_pw)(&j->c, 0, j->P, 0, j->c.M);
  else if (j->what == 1)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)j->P, (int)j->N, (int)j->K, 1.0f,
                j->a, (int)j->K, j->b, (int)j->N, 0.0f, j->y, (int)j->N);
  else if (j->what == 3)
    dnnl_sgemm('N', 'N', j->P, j->N, j->K, 1.0f, j->a, j->K, j->b, j->N, 0.0f, j->y, j->N);
  else
    nat_mm_run(&j->mm, 0, j->P, 0, j->N);
}

/* `avx2` mode: native's AVX2 GEMM against OpenBLAS and oneDNN's sgemm at
 * whatever level their environment caps them to (OPENBLAS_CORETYPE=Haswell,
 * ONEDNN_MAX_CPU_ISA=AVX2), B packed for native, warm. */
static double best(job *j, float *const *bs);
static void avx2_row(const char *name, int64_t P, int64_t K, int64_t N) {
  float *a = rnd(P * K), *b = rnd(K * N), *y = rnd(P * N);
  double gf = 2.0 * (double)P * (double)K * (double)N * 1e-9;
  printf("| %s %lld x %lld x %lld |", name, (long long)P, (long long)K, (long long)N);
  const int order[3] = {2, 1, 3};
  for (int q = 0; q < 3; q++) {
    job j;
    memset(&j, 0, sizeof j);
    j.what = order[q], j.level = NAT_ISA_AVX2, j.a = a, j.b = b, j.y = y, j.P = P, j.K = K, j.N = N;
    float *pk = NULL;
    if (j.what == 2) {
      nat_mm_init(&j.mm, NAT_ISA_AVX2, P, N, K);
      j.mm.a = a, j.mm.lda = K, j.mm.b = pk = pack(b, K, N, j.mm.nr);
      j.mm.c = y, j.mm.ldc = N, j.mm.lo = -INFINITY, j.mm.hi = INFINITY;
    }
    printf(" %.1f |", gf / best(&j, NULL));
    fflush(stdout);
    free(pk);
  }
  printf("\n");
  free(a), free(b), free(y);
}

static int reps = 50, cold = 0;

/* Best of reps calls; cold: each call on another of NCOLD copies of B
 * (more than the last-level cache holds), as a model's layers meet their
 * weights in a run. */
#define NCOLD 16
static double best(job *j, float *const *bs) {
  double b = 1e9, t0 = now();
  for (int r = 0; r < reps || now() - t0 < 0.2; r++) {
    if (cold) j->b = j->mm.b = j->c.wpk = bs[r % NCOLD];
    double t = now();
    call(j);
    t = now() - t;
    if (t < b) b = t;
  }
  return b;
}

static void shape(const char *name, int64_t P, int64_t K, int64_t N) {
  float *a = rnd(P * K), *b = rnd(K * N), *bias = rnd(N), *y = rnd(P * N);
  double gf = 2.0 * (double)P * (double)K * (double)N * 1e-9;
  printf("| %s %lld x %lld x %lld |", name, (long long)P, (long long)K, (long long)N);
  for (int level = NAT_ISA_AVX512; level >= NAT_ISA_AVX2; level--) {
    for (int what = 0; what < 3; what++) {
      if (what == 1 && level == NAT_ISA_AVX2) continue; /* OpenBLAS: one column */
      job j;
      memset(&j, 0, sizeof j);
      j.what = what, j.level = level, j.a = a, j.b = b, j.y = y, j.P = P, j.K = K, j.N = N;
      float *pk = NULL, *bs[NCOLD] = {0};
      if (what == 0) {
        j.c.N = j.c.H = j.c.OH = 1, j.c.W = j.c.OW = P, j.c.C = K, j.c.M = N;
        j.c.x = a, j.c.w = b, j.c.b = bias, j.c.y = y, j.c.lo = -INFINITY, j.c.hi = INFINITY;
        nat_nhwc_tile(&j.c, level, P);
        j.c.wpk = pk = pack(b, K, N, j.c.pw_bw);
      } else if (what == 2) {
        nat_mm_init(&j.mm, level, P, N, K);
        j.mm.a = a, j.mm.lda = K, j.mm.b = pk = pack(b, K, N, j.mm.nr), j.mm.bias = bias;
        j.mm.c = y, j.mm.ldc = N, j.mm.lo = -INFINITY, j.mm.hi = INFINITY;
      }
      for (int q = 0; cold && q < NCOLD; q++) {
        int64_t nf =
            what == 1 ? K * N : nat_mm_packed_floats(K, N, what == 0 ? j.c.pw_bw : j.mm.nr);
        bs[q] = aligned_alloc(64, (size_t)nf * 4);
        memcpy(bs[q], what == 1 ? b : pk, (size_t)nf * 4);
      }
      printf(" %.1f |", gf / best(&j, bs));
      fflush(stdout);
      free(pk);
      for (int q = 0; q < NCOLD; q++)
        free(bs[q]);
    }
  }
  printf("\n");
  free(a), free(b), free(bias), free(y);
}

/* Tile variants of native_mm (rows, width, reduction chunk) per level,
 * B cold or not: `sweep` mode. */
static const int variants[][4] = {{NAT_ISA_AVX512, 12, 32, 256}, {NAT_ISA_AVX512, 6, 64, 128},
                                  {NAT_ISA_AVX512, 8, 48, 170},  {NAT_ISA_AVX512, 12, 32, 512},
                                  {NAT_ISA_AVX2, 6, 16, 384},    {NAT_ISA_AVX2, 4, 24, 256},
                                  {NAT_ISA_AVX2, 6, 16, 192}};
#define N_VARIANTS ((int)(sizeof variants / sizeof variants[0]))

static void sweep(const char *name, int64_t P, int64_t K, int64_t N) {
  float *a = rnd(P * K), *b = rnd(K * N), *bias = rnd(N), *y = rnd(P * N);
  double gf = 2.0 * (double)P * (double)K * (double)N * 1e-9;
  printf("| %s %lld x %lld x %lld |", name, (long long)P, (long long)K, (long long)N);
  for (int v = 0; v < N_VARIANTS; v++) {
    job j;
    memset(&j, 0, sizeof j);
    j.what = 2, j.level = variants[v][0], j.P = P, j.K = K, j.N = N;
    nat_mm_init(&j.mm, j.level, P, N, K);
    j.mm.mr = variants[v][1], j.mm.nr = variants[v][2];
    int64_t chunks = (K + variants[v][3] - 1) / variants[v][3];
    j.mm.kc = (K + chunks - 1) / chunks;
    int64_t mc = 192 * 1024 / (4 * j.mm.kc) / j.mm.mr * j.mm.mr;
    j.mm.mc = P <= mc + mc / 2 ? P : mc;
    float *pk = rnd(nat_mm_packed_floats(K, N, j.mm.nr)), *bs[NCOLD] = {0};
    nat_mm_pack(pk, b, K, N, N, 1, j.mm.nr);
    j.mm.a = a, j.mm.lda = K, j.mm.b = pk, j.mm.bias = bias, j.mm.c = y, j.mm.ldc = N;
    j.mm.lo = -INFINITY, j.mm.hi = INFINITY;
    for (int q = 0; cold && q < NCOLD; q++) {
      int64_t nf = nat_mm_packed_floats(K, N, j.mm.nr);
      bs[q] = aligned_alloc(64, (size_t)nf * 4);
      memcpy(bs[q], pk, (size_t)nf * 4);
    }
    printf(" %.1f |", gf / best(&j, bs));
    fflush(stdout);
    free(pk);
    for (int q = 0; q < NCOLD; q++)
      free(bs[q]);
  }
  printf("\n");
  free(a), free(b), free(bias), free(y);
}

int main(int argc, char **argv) {
  if (argc > 1) reps = atoi(argv[1]);
  if (argc > 2) cold = !strcmp(argv[2], "cold") || (argc > 3 && !strcmp(argv[3], "cold"));
  if (argc > 2 && !strcmp(argv[2], "avx2")) {
    printf("| shape (rows x K x N), one thread | native AVX2 mm | OpenBLAS | oneDNN "
           "|\n|---|---|---|---|\n");
    avx2_row("distilbert qkv", 128, 768, 2304);
    avx2_row("distilbert out", 128, 768, 768);
    avx2_row("distilbert ffn1", 128, 768, 3072);
    avx2_row("distilbert ffn2", 128, 3072, 768);
    avx2_row("minilm qkv", 128, 384, 1152);
    avx2_row("minilm ffn1", 128, 384, 1536);
    avx2_row("minilm ffn2", 128, 1536, 384);
    avx2_row("wav2vec2 ffn1", 49, 384, 1536);
    avx2_row("wav2vec2 conv fe.3 seg", 256, 768, 512);
    avx2_row("encdec ffn1", 32, 256, 1024);
    avx2_row("swin qkv", 3136, 96, 288);
    return 0;
  }
  if (argc > 2 && !strcmp(argv[2], "sweep")) {
    printf("| shape, one thread |");
    for (int v = 0; v < N_VARIANTS; v++)
      printf(" %s %dx%d kc %d |", variants[v][0] == NAT_ISA_AVX512 ? "512" : "256", variants[v][1],
             variants[v][2], variants[v][3]);
    printf("\n|---|");
    for (int v = 0; v < N_VARIANTS; v++)
      printf("---|");
    printf("\n");
    sweep("distilbert qkv", 128, 768, 2304);
    sweep("distilbert ffn2", 128, 3072, 768);
    sweep("minilm ffn1", 128, 384, 1536);
    sweep("wav2vec2 ffn1", 49, 384, 1536);
    sweep("encdec ffn2", 24, 1024, 256);
    sweep("swin qkv", 3136, 96, 288);
    sweep("swin s3 ffn1", 196, 384, 1536);
    sweep("conv1d fe.3", 256, 768, 512);
    return 0;
  }
  printf(
      "| shape (rows x K x N), one thread | AVX-512 tiles | OpenBLAS | AVX-512 mm | AVX2 tiles | "
      "AVX2 mm |\n|---|---|---|---|---|---|\n");
  shape("distilbert qkv", 128, 768, 2304);
  shape("distilbert out", 128, 768, 768);
  shape("distilbert ffn1", 128, 768, 3072);
  shape("distilbert ffn2", 128, 3072, 768);
  shape("minilm qkv", 128, 384, 384);
  shape("minilm ffn1", 128, 384, 1536);
  shape("minilm ffn2", 128, 1536, 384);
  shape("wav2vec2 ffn1", 49, 384, 1536);
  shape("wav2vec2 ffn2", 49, 1536, 384);
  shape("encdec ffn1", 32, 256, 1024);
  shape("encdec ffn2", 24, 1024, 256);
  shape("swin qkv", 3136, 96, 288);
  shape("swin ffn2", 3136, 384, 96);
  shape("swin s3 ffn1", 196, 384, 1536);
  return 0;
}
