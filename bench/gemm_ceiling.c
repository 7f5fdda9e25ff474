/* gemm_ceiling: the measured single-precision GEMM ceiling of this machine.
 *
 *   gemm_ceiling [--threads T] [--reps R] [N...]      (default: T = 1, R = 5, N = 1024 2048)
 *
 * Times a square row-major SGEMM (C = A*B, N x N) with OpenBLAS (cblas_sgemm)
 * and oneDNN (dnnl_sgemm) at T threads: one untimed call, then R timed calls,
 * keeping the best (the ceiling is what the library can reach, not what a
 * noisy neighbour lets it reach). Prints one JSON object per line:
 *   {"lib":"openblas","n":1024,"threads":2,"best_ms":...,"gflops":...}
 * and last {"ceiling_gflops":..., "lib":..., "n":...} for the best of all.
 * Built and run by bench/run.py:
 *   cc -O2 -fopenmp -I/usr/include/x86_64-linux-gnu/openblas-pthread \
 *      bench/gemm_ceiling.c -lopenblas -ldnnl -o gemm_ceiling
 * Exit status: 0, or 1 when an allocation or a library call fails. */
#define _POSIX_C_SOURCE 200809L
#include <cblas.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int (*gemm_fn)(int n, const float *a, const float *b, float *c);

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int gemm_openblas(int n, const float *a, const float *b, float *c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
  return 0;
}

static int gemm_onednn(int n, const float *a, const float *b, float *c) {
  return dnnl_sgemm('N', 'N', n, n, n, 1.0f, a, n, b, n, 0.0f, c, n) == dnnl_success ? 0 : 1;
}

/* Best time in seconds of `reps` calls of `f` after one warm-up call, or a
 * negative value when the library reports an error. */
static double best_time(gemm_fn f, int n, int reps, const float *a, const float *b, float *c) {
  if (f(n, a, b, c)) return -1;
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    double t0 = now_s();
    if (f(n, a, b, c)) return -1;
    double dt = now_s() - t0;
    if (dt < best) best = dt;
  }
  return best;
}

int main(int argc, char **argv) {
  int threads = 1, reps = 5, sizes[16], n_sizes = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (n_sizes < 16 && atoi(argv[i]) > 0)
      sizes[n_sizes++] = atoi(argv[i]);
    else {
      fprintf(stderr, "usage: gemm_ceiling [--threads T] [--reps R] [N...]\n");
      return 2;
    }
  }
  if (!n_sizes) {
    sizes[0] = 1024;
    sizes[1] = 2048;
    n_sizes = 2;
  }
  if (threads < 1) threads = 1;
  if (reps < 1) reps = 1;
  openblas_set_num_threads(threads);
  omp_set_num_threads(threads); /* oneDNN here uses the OpenMP runtime */

  static const struct {
    const char *name;
    gemm_fn f;
  } libs[] = {{"openblas", gemm_openblas}, {"onednn", gemm_onednn}};
  double ceiling = 0;
  const char *best_lib = "none";
  int best_n = 0, rc = 0;
  for (int s = 0; s < n_sizes; s++) {
    int n = sizes[s];
    size_t cnt = (size_t)n * (size_t)n;
    float *a = malloc(cnt * sizeof *a), *b = malloc(cnt * sizeof *b), *c = malloc(cnt * sizeof *c);
    if (!a || !b || !c) {
      fprintf(stderr, "gemm_ceiling: out of memory at n=%d\n", n);
      free(a), free(b), free(c);
      return 1;
    }
    for (size_t i = 0; i < cnt; i++) {
      a[i] = (float)((i * 7) % 13) / 13.0f - 0.5f;
      b[i] = (float)((i * 5) % 11) / 11.0f - 0.5f;
    }
    for (size_t l = 0; l < sizeof libs / sizeof libs[0]; l++) {
      double t = best_time(libs[l].f, n, reps, a, b, c);
      if (t <= 0) {
        fprintf(stderr, "gemm_ceiling: %s failed at n=%d\n", libs[l].name, n);
        rc = 1;
        continue;
      }
      double gflops = 2.0 * n * (double)n * n / t * 1e-9;
      printf("{\"lib\":\"%s\",\"n\":%d,\"threads\":%d,\"best_ms\":%.3f,\"gflops\":%.2f}\n",
             libs[l].name, n, threads, t * 1e3, gflops);
      if (gflops > ceiling) {
        ceiling = gflops;
        best_lib = libs[l].name;
        best_n = n;
      }
    }
    free(a), free(b), free(c);
  }
  printf("{\"ceiling_gflops\":%.2f,\"lib\":\"%s\",\"n\":%d,\"threads\":%d}\n", ceiling, best_lib,
         best_n, threads);
  return rc;
}
