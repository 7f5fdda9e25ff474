/* The threading contract (include/aitune.h) on every CPU backend: one model
 * shared by several threads, each with its own session, all building and
 * running at once. Every run must give the outputs a lone session gives
 * (each backend is deterministic for a fixed configuration and thread
 * count). Run under ThreadSanitizer too: see docs/architecture.md. argv: the
 * bundled bert_tiny and mobilenetv2_035 models. */
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"

#define THREADS 3
#define RUNS 6

typedef struct {
  const ait_model *m;
  const char *backend;
  ait_tensor_view in[2];
  size_t n_in;
  float *want; /* the lone session's output 0 */
  size_t count;
  int bad; /* runs whose output differed, or failed calls */
} job;

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}

/* Output 0 of one run, copied; NULL when the run fails. */
static float *run_copy(ait_session *s, const job *j, size_t *count) {
  ait_tensor_view out;
  if (ait_session_run(s, j->in, j->n_in) != AIT_OK || ait_session_output(s, 0, &out) != AIT_OK)
    return NULL;
  return check_copy_f32(&out, count);
}

static void *worker(void *arg) {
  job *j = arg;
  ait_session *s = NULL;
  if (ait_session_create(j->m, j->backend, &s) != AIT_OK) {
    __atomic_add_fetch(&j->bad, 1, __ATOMIC_RELAXED);
    return NULL;
  }
  for (int r = 0; r < RUNS; r++) {
    size_t n = 0;
    float *got = run_copy(s, j, &n);
    if (!got || n != j->count || !check_same_f32(got, j->want, n))
      __atomic_add_fetch(&j->bad, 1, __ATOMIC_RELAXED);
    free(got);
  }
  ait_session_free(s);
  return NULL;
}

static void check_backend(job *j) {
  ait_session *s = NULL;
  ait_status st = ait_session_create(j->m, j->backend, &s);
  if (st == AIT_E_UNSUPPORTED || st == AIT_E_NOT_FOUND) { /* not built in, or no such CPU */
    printf("  %-22s skipped: %s\n", j->backend, ait_last_error());
    return;
  }
  CHECK_ERR(st, AIT_OK, NULL);
  if (!s) return;
  j->want = run_copy(s, j, &j->count);
  if (!j->want) fprintf(stderr, "%s: the lone run failed: %s\n", j->backend, ait_last_error());
  ait_session_free(s);
  CHECK(j->want != NULL);
  if (!j->want) return;
  j->bad = 0;
  pthread_t th[THREADS];
  for (int i = 0; i < THREADS; i++)
    CHECK(pthread_create(&th[i], NULL, worker, j) == 0);
  for (int i = 0; i < THREADS; i++)
    pthread_join(th[i], NULL);
  if (j->bad)
    fprintf(stderr, "%s: %d of %d concurrent runs differed or failed\n", j->backend, j->bad,
            THREADS * RUNS);
  check_failures += j->bad;
  printf("  %-22s %d threads x %d runs: %s\n", j->backend, THREADS, RUNS,
         j->bad ? "DIFFER" : "identical");
  free(j->want);
  j->want = NULL;
}

int main(int argc, char **argv) {
#if defined(__SANITIZE_THREAD__)
  /* oneDNN's libgomp and XNNPACK's pthreadpool are not instrumented, so
   * ThreadSanitizer cannot see how their workers synchronise and reports
   * races inside them (on AVX2 CPUs, every run). Under TSan they run on
   * their caller's thread: every access then happens on a thread TSan
   * follows, and races between our sessions are still found. Their
   * multi-threaded forms are checked for identical outputs in the normal
   * build (ctest test_threads). */
  static const char *const backends[] = {"eager",
                                         "native",
                                         "native:threads=1",
                                         "native:isa=avx2",
                                         "onednn:threads=1",
                                         "xnnpack:threads=1",
                                         "quant:preset=int8dq"};
#else
  static const char *const backends[] = {
      "eager",  "native",  "native:threads=1",    "native:isa=avx2",
      "onednn", "xnnpack", "quant:preset=int8dq", "openvino"};
#endif
  if (argc < 3) {
    fprintf(stderr, "usage: test_threads BERT_TINY.onnx MOBILENET.onnx\n");
    return 2;
  }
  /* bert_tiny: input_ids and attention_mask [1, 32] int64 */
  static int64_t ids[32], mask[32];
  for (int i = 0; i < 32; i++)
    ids[i] = (int64_t)(rnd() % 1000), mask[i] = i < 28;
  /* mobilenetv2_035: [1, 3, 160, 160] float32 */
  static float img[3 * 160 * 160];
  for (size_t i = 0; i < sizeof img / sizeof img[0]; i++)
    img[i] = (float)(rnd() % 2001) / 1000.0f - 1.0f;
  for (int k = 0; k < 2; k++) {
    ait_model *m = NULL;
    CHECK_ERR(ait_model_load(argv[1 + k], &m), AIT_OK, NULL);
    if (!m) continue;
    printf("%s\n", argv[1 + k]);
    job j = {.m = m};
    if (k == 0) {
      j.in[0] = (ait_tensor_view){.dtype = AIT_INT64, .rank = 2, .dims = {1, 32}, .data = ids};
      j.in[1] = (ait_tensor_view){.dtype = AIT_INT64, .rank = 2, .dims = {1, 32}, .data = mask};
      j.n_in = 2;
    } else {
      j.in[0] =
          (ait_tensor_view){.dtype = AIT_FLOAT32, .rank = 4, .dims = {1, 3, 160, 160}, .data = img};
      j.n_in = 1;
    }
    for (size_t b = 0; b < sizeof backends / sizeof backends[0]; b++) {
      j.backend = backends[b];
      check_backend(&j);
    }
    ait_model_free(m);
  }
  return check_result("test_threads");
}
