/* Time a model on the cuda backend with device-resident inputs and outputs
 * (include/aitune.h, "device memory"), the way a PyTorch user holding CUDA
 * tensors would call it, and host to host for comparison.
 *
 *   gpu_io_bench MODEL.onnx BACKEND BATCH [--dim NAME=V]... [--iters N] [--warmup W]
 *
 * Inputs: the first symbolic dim of each input is the batch, other symbolic
 * dims take --dim values; floats are uniform in [-1, 1), integer inputs
 * small non-negative ids (1 for inputs whose name has "mask"). Prints one
 * JSON line: median wall milliseconds of a synchronous ait_session_run with
 * inputs and outputs on the device ("device_io_ms"), and with host inputs and
 * outputs ("host_io_ms"), both after W warm-up runs, over N runs. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aitune.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int fail(const char *what, ait_status st) {
  fprintf(stderr, "gpu_io_bench: %s: %s (%s)\n", what, ait_last_error(), ait_strerror(st));
  printf("{\"error\": \"%s\"}\n", what);
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr,
            "usage: %s MODEL.onnx BACKEND BATCH [--dim NAME=V]... [--iters N] "
            "[--warmup W]\n",
            argv[0]);
    return 2;
  }
  const char *path = argv[1], *backend = argv[2];
  int batch = atoi(argv[3]), iters = 50, warmup = 10;
  const char *dim_names[16];
  long dim_vals[16];
  int n_dims = 0;
  for (int i = 4; i < argc; i++) {
    if (!strcmp(argv[i], "--iters") && i + 1 < argc)
      iters = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--warmup") && i + 1 < argc)
      warmup = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--dim") && i + 1 < argc && n_dims < 16) {
      char *eq = strchr(argv[++i], '=');
      if (!eq) return 2;
      *eq = '\0';
      dim_names[n_dims] = argv[i];
      dim_vals[n_dims++] = atol(eq + 1);
    } else {
      fprintf(stderr, "gpu_io_bench: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  if (iters < 1 || iters > 100000 || batch < 1) return 2;
  ait_model *m = NULL;
  ait_status st = ait_model_load(path, &m);
  if (st) return fail("loading the model", st);
  ait_session *s = NULL;
  if ((st = ait_session_create(m, backend, &s))) return fail("building", st);
  size_t n_in = ait_model_num_inputs(m);
  ait_tensor_view host[16], dev[16];
  memset(host, 0, sizeof host);
  memset(dev, 0, sizeof dev);
  if (n_in > 16) return fail("more than 16 inputs", AIT_E_UNSUPPORTED);
  unsigned rng = 12345;
  for (size_t i = 0; i < n_in; i++) {
    ait_tensor_info info;
    ait_model_input(m, i, &info);
    host[i].dtype = info.dtype;
    host[i].rank = info.rank;
    int seen_symbolic = 0;
    size_t numel = 1;
    for (int k = 0; k < info.rank; k++) {
      long v = info.dims[k];
      if (v < 0) {
        v = seen_symbolic++ ? 1 : batch;
        for (int d = 0; d < n_dims; d++)
          if (info.dim_names[k] && !strcmp(info.dim_names[k], dim_names[d])) v = dim_vals[d];
        if (seen_symbolic == 1 && k > 0) v = batch;
      }
      host[i].dims[k] = v;
      numel *= (size_t)v;
    }
    size_t es = ait_dtype_size(info.dtype);
    host[i].data = malloc(numel * es + 1);
    int mask = strstr(info.name, "mask") != NULL;
    for (size_t e = 0; e < numel; e++) {
      rng = rng * 1664525u + 1013904223u;
      if (info.dtype == AIT_FLOAT32)
        ((float *)host[i].data)[e] = (float)((rng >> 8) & 0xffff) / 32768.0f - 1.0f;
      else if (info.dtype == AIT_INT64)
        ((int64_t *)host[i].data)[e] = mask ? 1 : (int64_t)((rng >> 8) % 100);
      else if (info.dtype == AIT_INT32)
        ((int32_t *)host[i].data)[e] = mask ? 1 : (int32_t)((rng >> 8) % 100);
      else
        memset((char *)host[i].data + e * es, 0, es);
    }
    dev[i] = host[i];
    dev[i].mem = AIT_MEM_CUDA;
    if (cudaMalloc(&dev[i].data, numel * es + 1) != cudaSuccess)
      return fail("cudaMalloc", AIT_E_NOMEM);
    cudaMemcpy(dev[i].data, host[i].data, numel * es, cudaMemcpyHostToDevice);
  }
  double *t = malloc(sizeof(double) * (size_t)iters);
  double res[2] = {-1, -1};
  char dev_err[200] = "";
  for (int mode = 0; mode < 2; mode++) { /* 0: host to host, 1: device to device */
    const ait_tensor_view *in = mode ? dev : host;
    st = ait_session_set_output_mem(s, mode ? AIT_MEM_CUDA : AIT_MEM_HOST);
    for (int r = 0; !st && r < warmup; r++)
      st = ait_session_run(s, in, n_in);
    for (int r = 0; !st && r < iters; r++) {
      double t0 = now_ms();
      st = ait_session_run(s, in, n_in);
      t[r] = now_ms() - t0;
    }
    if (st && !mode) return fail("running", st);
    if (st) { /* e.g. a partitioned model: host memory only */
      snprintf(dev_err, sizeof dev_err, "%s", ait_last_error());
      for (char *c = dev_err; *c; c++)
        if (*c == '"' || *c == '\\' || (unsigned char)*c < 32) *c = ' ';
      continue;
    }
    res[mode] = median(t, iters);
  }
  printf("{\"model\": \"%s\", \"backend\": \"%s\", \"batch\": %d, \"iters\": %d, "
         "\"host_io_ms\": %.4f, \"device_io_ms\": %.4f, \"device_io_error\": \"%s\"}\n",
         path, backend, batch, iters, res[0], res[1], dev_err);
  ait_session_free(s);
  ait_model_free(m);
  return 0;
}
