/* Time one call of a tuned module through the C API: ait_module_infer and
 * ait_module_output, and the same plus a copy of the output into fresh
 * memory (what the Python package does to hand an output over). The
 * baseline of bench/python_overhead.py, which builds and runs this.
 *
 *   c_call_overhead DIR CALLS ROUNDS   (DIR: a tuned folder whose one input is float)
 *
 * Prints one line per round and mode: "MODE us_per_call". */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aitune.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int call(ait_module *m, const ait_tensor_view *in, int copy, double *sink) {
  ait_tensor_view out;
  if (ait_module_infer(m, in, 1) || ait_module_output(m, 0, &out)) return -1;
  size_t n = 4;
  for (int k = 0; k < out.rank; k++)
    n *= (size_t)out.dims[k];
  if (copy) {
    float *c = malloc(n);
    if (!c) return -1;
    memcpy(c, out.data, n);
    *sink += c[0];
    free(c);
  } else {
    *sink += ((const float *)out.data)[0];
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: c_call_overhead DIR CALLS ROUNDS\n");
    return 2;
  }
  int calls = atoi(argv[2]), rounds = atoi(argv[3]);
  ait_module *m = NULL;
  if (ait_module_load(argv[1], NULL, NULL, &m)) {
    fprintf(stderr, "%s\n", ait_last_error());
    return 1;
  }
  ait_tensor_info info;
  ait_model_input(ait_module_model(m), 0, &info);
  ait_tensor_view in = {.dtype = AIT_FLOAT32, .rank = info.rank};
  size_t n = 1;
  for (int k = 0; k < info.rank; k++) {
    in.dims[k] = info.dims[k] > 0 ? info.dims[k] : 1;
    n *= (size_t)in.dims[k];
  }
  float *x = malloc(n * sizeof *x);
  for (size_t i = 0; i < n; i++)
    x[i] = (float)(i % 7) - 3.0f;
  in.data = x;
  double sink = 0;
  for (int i = 0; i < calls / 4 + 100; i++) /* warm-up */
    if (call(m, &in, 1, &sink)) {
      fprintf(stderr, "%s\n", ait_last_error());
      return 1;
    }
  for (int r = 0; r < rounds; r++)
    for (int copy = 0; copy < 2; copy++) {
      double t0 = now_s();
      for (int i = 0; i < calls; i++)
        call(m, &in, copy, &sink);
      printf("%s %.4f\n", copy ? "c_copy" : "c", (now_s() - t0) / calls * 1e6);
    }
  fprintf(stderr, "(%g)\n", sink);
  free(x);
  ait_module_free(m);
  return 0;
}
