/* fma_peak: one core's float32 multiply-add peak at AVX2+FMA (8 lanes) and
 * AVX-512 (16 lanes), the ceiling that bench/mm_kernels.c's GFLOP/s are read
 * against. Twelve independent FMA chains per level (more than latency x
 * ports), in short bursts (50k steps, ~0.1 ms), best of 400: on a shared
 * machine a long burst is always preempted.
 *   cc -O2 -o /tmp/fma_peak bench/fma_peak.c && taskset -c 1 /tmp/fma_peak
 * Prints one line: "peak avx2 X GFLOP/s, avx512 Y GFLOP/s". */
#define _POSIX_C_SOURCE 200809L
#include <immintrin.h>
#include <stdio.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static volatile float sink;

__attribute__((target("avx2,fma"))) static double avx2(long n) {
  __m256 a[12], x = _mm256_set1_ps(1.0001f), y = _mm256_set1_ps(0.9999f);
  for (int i = 0; i < 12; i++)
    a[i] = _mm256_set1_ps((float)i);
  double t = now();
  for (long k = 0; k < n; k++)
#pragma GCC unroll 12
    for (int i = 0; i < 12; i++)
      a[i] = _mm256_fmadd_ps(a[i], x, y);
  t = now() - t;
  float s = 0;
  for (int i = 0; i < 12; i++)
    s += a[i][0];
  sink = s;
  return (double)n * 12 * 8 * 2 / t * 1e-9;
}

__attribute__((target("avx512f"))) static double avx512(long n) {
  __m512 a[12], x = _mm512_set1_ps(1.0001f), y = _mm512_set1_ps(0.9999f);
  for (int i = 0; i < 12; i++)
    a[i] = _mm512_set1_ps((float)i);
  double t = now();
  for (long k = 0; k < n; k++)
#pragma GCC unroll 12
    for (int i = 0; i < 12; i++)
      a[i] = _mm512_fmadd_ps(a[i], x, y);
  t = now() - t;
  float s = 0;
  for (int i = 0; i < 12; i++)
    s += a[i][0];
  sink = s;
  return (double)n * 12 * 16 * 2 / t * 1e-9;
}

int main(void) {
  __builtin_cpu_init();
  double b2 = 0, b5 = 0;
  int has512 = __builtin_cpu_supports("avx512f");
  for (int r = 0; r < 400; r++) {
    double g = avx2(50000);
    if (g > b2) b2 = g;
    if (has512) {
      g = avx512(50000);
      if (g > b5) b5 = g;
    }
  }
  printf("peak avx2 %.1f GFLOP/s, avx512 %.1f GFLOP/s\n", b2, b5);
  return 0;
}
