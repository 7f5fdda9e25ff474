/* Helpers of the tests that run graphs on native against eager
 * (test_native_seq.c, test_native_dec.c): seeded random tensors, the
 * normalized difference, the rewrite native's passes make, every ISA level
 * as a spec, and the packs a state holds after a run. One copy per test
 * program (static: each has its own seed). */
#ifndef AIT_TEST_NATIVE_CHECK_H
#define AIT_TEST_NATIVE_CHECK_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/native/native.h"
#include "check.h"
#include "graph_check.h"
#include "runtime/eager.h"

#define IN(...) ((const char *const[]){__VA_ARGS__, NULL})

static uint32_t rng = 777;
static inline uint32_t next(void) {
  rng = rng * 1664525u + 1013904223u;
  return rng >> 8;
}
static inline int64_t irand(int64_t lo, int64_t hi) {
  return lo + (int64_t)(next() % (uint32_t)(hi - lo + 1));
}
static inline float frand(void) { return (float)(next() & 0xffff) / 32768.0f - 1.0f; }
static inline void fill(float *v, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    v[i] = frand();
}
static inline ait_tensor *rand_tensor(int rank, const int64_t *dims) {
  ait_tensor *t = ait_tensor_new(AIT_FLOAT32, rank, dims);
  fill(t->data, ait_tensor_numel(t));
  return t;
}

static inline ait_graph *rewrite(const ait_graph *g) {
  ait_graph *c = nat_graph_clone(g, NULL, true);
  nat_pass_stats st;
  if (!c || nat_run_passes_ex(c, &st, true) != AIT_OK) {
    fprintf(stderr, "rewrite: %s\n", ait_last_error());
    ait_graph_free(c);
    return NULL;
  }
  return c;
}

static const char *const specs[] = {"native:isa=avx512", "native:isa=avx2", "native:isa=portable",
                                    "native:isa=avx2,threads=1", "native:isa=avx512,threads=3"};

/* g on every spec against eager, each state run twice (packs reused). */
static inline void check_specs(const ait_graph *g, const ait_tensor *const *in, int n_in,
                               double tol, const char *what) {
  ait_tensor *ref[4] = {0}; /* one per graph output (the decoders have three) */
  CHECK(g->n_outputs <= 4 && ait_eager_run(g, in, n_in, ref) == AIT_OK);
  for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++) {
    ait_backend_config cfg;
    CHECK(ait_backend_config_parse(specs[s], &cfg) == AIT_OK);
    void *state = NULL;
    CHECK(cfg.iface->build(&cfg, g, NULL, &state) == AIT_OK);
    for (int k = 0; state && k < 2; k++) {
      ait_tensor *out[4] = {0};
      CHECK(cfg.iface->infer(state, in, n_in, out) == AIT_OK);
      double d = 0;
      for (int q = 0; q < g->n_outputs; q++) {
        double dq = check_rel_diff(out[q], ref[q]);
        d = dq > d || dq != dq ? dq : d;
      }
      if (!(d <= tol)) fprintf(stderr, "%s on %s (run %d): %g from eager\n", what, specs[s], k, d);
      CHECK(d <= tol);
      for (int q = 0; q < g->n_outputs; q++)
        ait_tensor_free(out[q]);
    }
    if (state) cfg.iface->destroy(state);
  }
  for (int q = 0; q < 4; q++)
    ait_tensor_free(ref[q]);
}

/* Packs of `kind` a state of g on spec holds after one run. */
static inline int packs_after_run(const ait_graph *g, const char *spec, const ait_tensor *const *in,
                                  int n_in, int kind) {
  ait_backend_config cfg;
  if (ait_backend_config_parse(spec, &cfg) != AIT_OK) return -1;
  void *state = NULL;
  if (cfg.iface->build(&cfg, g, NULL, &state) != AIT_OK) return -1;
  ait_tensor *out[4] = {0};
  int n = -1;
  if (cfg.iface->infer(state, in, n_in, out) == AIT_OK) {
    const nat_state *s = state;
    n = 0;
    for (int i = 0; s->node_data && i < s->g->n_nodes; i++)
      n += s->node_data[i * NAT_DATA_KINDS + kind] != NULL;
  }
  for (int q = 0; q < g->n_outputs; q++)
    ait_tensor_free(out[q]);
  cfg.iface->destroy(state);
  return n;
}

#endif
