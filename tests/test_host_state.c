/* The library leaves the program's process-wide settings as they were: the
 * thread counts of OpenBLAS and BLIS (which numpy and others in the same
 * process use) are 1 only while native runs (its pool is the parallelism),
 * the program's own count before and after, and a count the program sets
 * during a run is kept (native_blas.c, nat_blas_enter). Read during the
 * runs through the per-node observer, on the running thread.
 * argv: the bundled mobilenetv2_035 model (the last argument). */
#include <cblas.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "runtime/observe.h"

typedef long (*blis_get_fn)(void);
typedef void (*blis_set_fn)(long);

typedef struct {
  int nodes;      /* observed */
  int not_one;    /* nodes after which OpenBLAS's count was not 1 */
  int blis_wrong; /* the same for BLIS, when watched */
  blis_get_fn blis_get;
  int set_to; /* > 0: the "program" sets OpenBLAS to this during the run */
} watch;

static void observe(void *user, const ait_node *node, double seconds) {
  watch *w = user;
  w->nodes++;
  if (openblas_get_num_threads() != 1) w->not_one++;
  if (w->blis_get && w->blis_get() != 1) w->blis_wrong++;
  if (w->set_to && w->nodes == 1) openblas_set_num_threads(w->set_to);
}

/* Zeros of the declared input shapes (unknown dims: 1); n_in inputs. */
static ait_tensor_view *zero_inputs(const ait_model *m, size_t *n_in) {
  *n_in = ait_model_num_inputs(m);
  ait_tensor_view *in = calloc(*n_in + 1, sizeof *in);
  for (size_t i = 0; in && i < *n_in; i++) {
    ait_tensor_info t;
    ait_model_input(m, i, &t);
    size_t count = 1;
    in[i].dtype = t.dtype;
    in[i].rank = t.rank;
    for (int d = 0; d < t.rank; d++)
      count *= (size_t)(in[i].dims[d] = t.dims[d] > 0 ? t.dims[d] : 1);
    in[i].data = calloc(count, ait_dtype_size(t.dtype) ? ait_dtype_size(t.dtype) : 1);
  }
  return in;
}

static void free_inputs(ait_tensor_view *in, size_t n) {
  for (size_t i = 0; in && i < n; i++)
    free(in[i].data);
  free(in);
}

/* One session run of `backend` watched by w. */
static void run_watched(const ait_model *m, const char *backend, watch *w) {
  size_t n = 0;
  ait_tensor_view *in = zero_inputs(m, &n);
  ait_session *s = NULL;
  CHECK_ERR(ait_session_create(m, backend, &s), AIT_OK, NULL);
  ait_observe_set(observe, w);
  CHECK_ERR(ait_session_run(s, in, n), AIT_OK, NULL);
  ait_observe_set(NULL, NULL);
  ait_session_free(s);
  free_inputs(in, n);
  CHECK(w->nodes > 0);
}

static void test_session(const ait_model *m) {
  openblas_set_num_threads(3);
  watch w = {0};
  run_watched(m, "native:threads=2", &w);
  CHECK(w.not_one == 0);
  CHECK(openblas_get_num_threads() == 3);
  /* the program's own change during a run is its own: kept */
  watch w4 = {.set_to = 4};
  run_watched(m, "native:threads=2,gemm=openblas", &w4);
  CHECK(openblas_get_num_threads() == 4);
  /* a program that runs OpenBLAS single-threaded: nothing to restore */
  openblas_set_num_threads(1);
  watch w1 = {0};
  run_watched(m, "native", &w1);
  CHECK(w1.not_one == 0 && openblas_get_num_threads() == 1);
}

static void test_tune(const char *path) {
  openblas_set_num_threads(2);
  ait_module *mod = NULL;
  CHECK_ERR(ait_module_create(path, NULL, &mod), AIT_OK, NULL);
  if (!mod) return;
  static const char *const backends[] = {"native", "native:threads=1", "quant:int8wo"};
  ait_tune_options o;
  ait_tune_options_init(&o);
  o.backends = backends;
  o.n_backends = 3;
  o.min_runs = o.max_runs = 2;
  o.warmup = 1;
  o.runoff_rounds = 0;
  o.cache_dir = "";
  static const int batch1[] = {1};
  o.batch_sizes = batch1;
  o.n_batch_sizes = 1;
  CHECK_ERR(ait_module_tune(mod, &o), AIT_OK, NULL);
  CHECK(openblas_get_num_threads() == 2);
  size_t n = 0;
  ait_tensor_view *in = zero_inputs(ait_module_model(mod), &n);
  CHECK_ERR(ait_module_infer(mod, in, n), AIT_OK, NULL);
  CHECK(openblas_get_num_threads() == 2);
  free_inputs(in, n);
  ait_module_free(mod);
}

/* BLIS (gemm=blis), where Debian's libblis4 is installed: its count too. */
static void test_blis(const ait_model *m) {
  void *h = dlopen("libblis.so.4", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    printf("SKIP: BLIS: %s\n", dlerror());
    return;
  }
  blis_get_fn get = (blis_get_fn)dlsym(h, "bli_thread_get_num_threads");
  blis_set_fn set = (blis_set_fn)dlsym(h, "bli_thread_set_num_threads");
  CHECK(get && set);
  if (!get || !set) return;
  set(3);
  watch w = {.blis_get = get};
  run_watched(m, "native:gemm=blis,layout=nchw,tiles=off", &w);
  CHECK(w.blis_wrong == 0 && w.not_one == 0);
  CHECK(get() == 3);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_host_state [...] MOBILENET.onnx\n");
    return 2;
  }
  const char *path = argv[argc - 1];
  ait_model *m = NULL;
  CHECK_ERR(ait_model_load(path, &m), AIT_OK, NULL);
  if (!m) return check_result("test_host_state");
  test_session(m);
  test_blis(m);
  test_tune(path);
  ait_model_free(m);
  return check_result("test_host_state");
}
