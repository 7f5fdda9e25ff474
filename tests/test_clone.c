/* ait_module_clone (include/aitune.h): a tuned module's clones share its
 * immutable backend state and give the original's outputs, bit for bit, on
 * random inputs; the original and the clones are freed in either order;
 * K clones run at once from K threads (also under ThreadSanitizer:
 * scripts/test.sh). Backends with a clone hook (native, onednn) share; one
 * without (xnnpack) reloads its saved state; so does a partition with a
 * segment on it, while one whose segments all share (onednn + native)
 * shares. argv: the bundled bert_tiny and mobilenetv2_035 models (the
 * second is used, and models/decoder_op18 found beside the first). */
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "backends/native/native.h"
#include "check.h"
#include "tune/module_impl.h"

#define K 4
#define RUNS 4

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float rndf(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (float)((rng >> 40) & 0xffff) / 32768.0f - 1.0f;
}

typedef struct input {
  ait_tensor_view v;
  float *data;
} input;

/* A random float input of the model's first input at batch 1. */
static bool make_input(const ait_model *m, input *in) {
  ait_tensor_info info;
  if (ait_model_input(m, 0, &info) != AIT_OK || info.dtype != AIT_FLOAT32) return false;
  memset(in, 0, sizeof *in);
  in->v.dtype = AIT_FLOAT32;
  in->v.rank = info.rank;
  size_t n = 1;
  for (int d = 0; d < info.rank; d++) {
    in->v.dims[d] = info.dims[d] > 0 ? info.dims[d] : 1;
    n *= (size_t)in->v.dims[d];
  }
  if (!(in->data = malloc(n * sizeof *in->data))) return false;
  for (size_t i = 0; i < n; i++)
    in->data[i] = rndf();
  in->v.data = in->data;
  in->v.mem = AIT_MEM_HOST;
  return true;
}

/* Output 0 of one run, copied (NULL when the run fails). */
static float *run_copy(ait_module *m, const input *in, size_t *count) {
  ait_tensor_view out;
  if (ait_module_infer(m, &in->v, 1) != AIT_OK || ait_module_output(m, 0, &out) != AIT_OK)
    return NULL;
  return check_copy_f32(&out, count);
}

static bool run_equals(ait_module *m, const input *in, const float *want, size_t count) {
  size_t n = 0;
  float *got = run_copy(m, in, &n);
  bool ok = got && n == count && check_same_f32(got, want, n);
  free(got);
  return ok;
}

typedef struct job {
  ait_module *m;
  const input *in; /* K inputs: each thread runs them all, starting at its own */
  float *const *want;
  size_t count;
  int first;
  int bad;
} job;

static void *worker(void *arg) {
  job *j = arg;
  for (int r = 0; r < RUNS * K; r++) {
    int k = (j->first + r) % K;
    if (!run_equals(j->m, &j->in[k], j->want[k], j->count)) j->bad++;
  }
  return NULL;
}

/* native: the clone's state runs over the original's graph, and after both
 * ran, every packed constant is in the shared block (none private). */
static void check_native_shared(const ait_module *m, const ait_module *c) {
  if (m->run.iface != c->run.iface || strcmp(m->run.iface->name, "native")) return;
  const nat_state *a = m->run.state, *b = c->run.state;
  CHECK(a->shared && a->shared == b->shared && a->g == b->g);
  CHECK(c->model == m->model && c->state_shared);
  int shared = 0, own = 0;
  for (int i = 0; i < a->g->n_nodes * NAT_DATA_KINDS; i++) {
    shared += a->shared->packs && a->shared->packs[i];
    own += (a->node_data && a->node_data[i]) + (b->node_data && b->node_data[i]);
  }
  CHECK(shared > 0 && own == 0);
  printf("  %-18s graph shared, %d packed constants shared, %d private\n", ait_module_backend(m),
         shared, own);
}

static void tune_fast(ait_module *m, const char *backend, ait_status *st) {
  static const int batches[1] = {1};
  const char *const backends[1] = {backend};
  ait_tune_options o;
  ait_tune_options_init(&o);
  o.strategy = AIT_STRATEGY_ONE_BACKEND;
  o.backends = backends;
  o.n_backends = 1;
  o.batch_sizes = batches;
  o.n_batch_sizes = 1;
  o.warmup = 1;
  o.min_runs = 2;
  o.max_runs = 3;
  o.cv_target = 0;
  o.time_budget_s = 0.1;
  o.runoff_rounds = 0;
  o.cache_dir = "";
  o.perf_validation = 0;
  *st = ait_module_tune(m, &o);
}

/* A partition (a backend on the nodes it takes, native on the rest) shares
 * when every segment's backend does, and reloads (a copy) otherwise. */
static void check_partition_shared(const ait_module *m, const ait_module *c, int expect) {
  if (expect < 0) return;
  CHECK(m->run.iface && !strcmp(m->run.iface->name, "partition"));
  CHECK(c->state_shared == (expect == 1));
  printf("  %-18s partitioned: state %s\n", ait_module_backend(m),
         c->state_shared ? "shared" : "reloaded (a segment cannot share)");
}

/* expect_partition: -1 not a partition; 1 partitioned, every segment shares;
 * 0 partitioned, a segment cannot share. */
static void check_backend(const char *path, const char *backend, int expect_partition) {
  ait_module *m = NULL;
  CHECK_ERR(ait_module_create(path, NULL, &m), AIT_OK, NULL);
  if (!m) return;
  ait_module *c = NULL;
  CHECK_ERR(ait_module_clone(m, &c), AIT_E_INVALID_ARG, "not tuned");
  CHECK(c == NULL);
  ait_status st;
  tune_fast(m, backend, &st);
  if (st == AIT_E_UNSUPPORTED || st == AIT_E_NOT_FOUND) {
    printf("  %-18s skipped: %s\n", backend, ait_last_error());
    ait_module_free(m);
    return;
  }
  CHECK_ERR(st, AIT_OK, NULL);
  if (st) {
    ait_module_free(m);
    return;
  }
  input in[K];
  float *want[K] = {0};
  size_t count = 0;
  for (int k = 0; k < K; k++) {
    CHECK(make_input(ait_module_model(m), &in[k]));
    want[k] = run_copy(m, &in[k], &count);
    CHECK(want[k] != NULL);
  }
  /* one clone: the same outputs; the original freed first, the clone runs on */
  ait_module *one = NULL;
  CHECK_ERR(ait_module_clone(m, &one), AIT_OK, NULL);
  CHECK(one && !strcmp(ait_module_backend(one), ait_module_backend(m)));
  CHECK(one && ait_module_batch_size(one) == ait_module_batch_size(m));
  for (int k = 0; one && k < K; k++)
    CHECK(run_equals(one, &in[k], want[k], count));
  if (one) check_native_shared(m, one);
  if (one) check_partition_shared(m, one, expect_partition);
  /* K clones (one of a clone) from K threads at once, the original too */
  ait_module *cl[K] = {0};
  for (int k = 0; k < K; k++)
    CHECK_ERR(ait_module_clone(k == 1 && one ? one : m, &cl[k]), AIT_OK, NULL);
  pthread_t th[K + 1];
  job jobs[K + 1];
  for (int k = 0; k <= K; k++) {
    jobs[k] = (job){k < K ? cl[k] : m, in, want, count, k % K, 0};
    if (!jobs[k].m || pthread_create(&th[k], NULL, worker, &jobs[k]) != 0) jobs[k].m = NULL;
  }
  int bad = 0;
  for (int k = 0; k <= K; k++) {
    if (jobs[k].m) pthread_join(th[k], NULL);
    bad += jobs[k].bad + !jobs[k].m;
  }
  CHECK(bad == 0);
  if (bad) fprintf(stderr, "  %s: %d concurrent runs differed or failed\n", backend, bad);
  /* free in either order: the original first, then half the clones, and
   * the rest still run */
  ait_module_free(m);
  for (int k = 0; k < K; k += 2)
    ait_module_free(cl[k]);
  for (int k = 1; k < K; k += 2)
    CHECK(cl[k] && run_equals(cl[k], &in[k], want[k], count));
  if (one) CHECK(run_equals(one, &in[0], want[0], count));
  int64_t w = 0, work = 0;
  if (one && ait_module_memory(one, &w, &work) == AIT_OK) CHECK(w > 0);
  ait_module_free(one);
  for (int k = 1; k < K; k += 2)
    ait_module_free(cl[k]);
  for (int k = 0; k < K; k++) {
    free(want[k]);
    free(in[k].data);
  }
  printf("  %-18s ok\n", backend);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: test_clone bert_tiny.onnx mobilenetv2_035.onnx\n");
    return 2;
  }
  CHECK_ERR(ait_module_clone(NULL, NULL), AIT_E_INVALID_ARG, NULL);
#if defined(__SANITIZE_THREAD__)
  /* oneDNN's libgomp and XNNPACK's pthreadpool are not instrumented: under
   * TSan they run on their caller's thread (as in test_threads.c) */
  static const char *const backends[] = {"native", "native:threads=1", "onednn:threads=1",
                                         "xnnpack:threads=1"};
#else
  static const char *const backends[] = {"native", "native:threads=1", "onednn", "xnnpack"};
#endif
  for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
    check_backend(argv[2], backends[i], -1);
  /* partitions: the decoder (beside bert_tiny in models/) has nodes that
   * oneDNN and XNNPACK leave to native; XNNPACK's segments cannot share */
  char dec[4096];
  const char *slash = strrchr(argv[1], '/');
  int dir = slash ? (int)(slash - argv[1]) : 0;
  snprintf(dec, sizeof dec, "%.*s/../decoder_op18/model.onnx", dir, argv[1]);
  check_backend(dec, backends[2], 1);
  check_backend(dec, backends[3], 0);
  return check_result("test_clone");
}
