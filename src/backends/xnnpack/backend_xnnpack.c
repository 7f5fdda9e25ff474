/* Backend `xnnpack`: Debian 12's XNNPACK (2022-02 snapshot) through its
 * subgraph API, on a pthreadpool shared by the states of one thread count.
 *
 * build() lowers the graph to xops (xnn_lower.c): constants folded, weights
 * packed once into XNNPACK's layouts, activations fused into output ranges.
 * This XNNPACK needs static shapes, so infer() plans per input signature
 * (xnn_plan.c: NHWC inside, NCHW at the edges, one runtime per segment) and
 * caches the plans. dtype=fp16 forces XNNPACK's fp16 inference, which this
 * version emulates on x86 and offers for few nodes (xnn_support.c). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/xnnpack/xnn_impl.h"

static const ait_option_def xnn_options[] = {
    {"threads", AIT_OPT_INT, "auto", "1..256",
     "threads of the backend's pthreadpool (auto: the online cores)"},
    {"dtype", AIT_OPT_ENUM, "fp32", "fp32|fp16",
     "fp16 forces XNNPACK's fp16 inference: emulated on x86 by this XNNPACK (2022-02), for "
     "Conv, MaxPool, GlobalAveragePool, Add/Mul, Relu/Clip, Reshape, Pad, Concat only"},
};

const char *xnn_status_str(enum xnn_status st) {
  switch (st) {
  case xnn_status_success: return "success";
  case xnn_status_uninitialized: return "uninitialized";
  case xnn_status_invalid_parameter: return "invalid parameter";
  case xnn_status_invalid_state: return "invalid state";
  case xnn_status_unsupported_parameter: return "unsupported parameter";
  case xnn_status_unsupported_hardware: return "unsupported hardware";
  case xnn_status_out_of_memory: return "out of memory";
  }
  return "unknown status";
}

/* ---- process-wide initialisation ------------------------------------------- */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static enum xnn_status init_status = xnn_status_uninitialized;
static pthread_once_t fp16_once = PTHREAD_ONCE_INIT;
static bool fp16_works;

/* xnn_initialize is called once per process and never undone: runtimes of
 * any state may be alive at any time. */
static void do_init(void) { init_status = xnn_initialize(NULL); }

ait_status xnn_init_once(void) {
  pthread_once(&init_once, do_init);
  if (init_status != xnn_status_success)
    return ait_err(AIT_E_UNSUPPORTED, "xnnpack: xnn_initialize failed (%s)",
                   xnn_status_str(init_status));
  return AIT_OK;
}

/* Whether forced fp16 inference works here at all: one clamp node. */
static void probe_fp16(void) {
  if (xnn_init_once()) return;
  xnn_subgraph_t sg = NULL;
  xnn_runtime_t rt = NULL;
  size_t dims[2] = {1, 8};
  uint32_t x, y;
  if (xnn_create_subgraph(2, 0, &sg) != xnn_status_success) return;
  fp16_works =
      xnn_define_tensor_value(sg, xnn_datatype_fp32, 2, dims, NULL, 0,
                              XNN_VALUE_FLAG_EXTERNAL_INPUT, &x) == xnn_status_success &&
      xnn_define_tensor_value(sg, xnn_datatype_fp32, 2, dims, NULL, 1,
                              XNN_VALUE_FLAG_EXTERNAL_OUTPUT, &y) == xnn_status_success &&
      xnn_define_clamp(sg, 0.0f, 6.0f, x, y, 0) == xnn_status_success &&
      xnn_create_runtime_v2(sg, NULL, XNN_FLAG_FORCE_FP16_INFERENCE, &rt) == xnn_status_success;
  if (rt) xnn_delete_runtime(rt);
  xnn_delete_subgraph(sg);
}

static bool want_fp16(const ait_backend_config *cfg) {
  const char *d = ait_backend_config_get(cfg, "dtype");
  return d && !strcmp(d, "fp16");
}

static ait_status check_fp16(void) {
  pthread_once(&fp16_once, probe_fp16);
  if (!fp16_works)
    return ait_err(AIT_E_UNSUPPORTED,
                   "xnnpack: dtype=fp16 is unavailable: this XNNPACK/CPU has no fp16 inference");
  return AIT_OK;
}

/* ---- the interface ----------------------------------------------------------- */

static bool xnn_available(char *why, size_t n) {
  if (xnn_init_once() == AIT_OK) return true;
  snprintf(why, n, "%s", ait_last_error());
  return false;
}

static bool xnn_supports(const ait_backend_config *cfg, const ait_graph *g, const ait_node *node,
                         char *why, size_t n) {
  bool fp16 = want_fp16(cfg);
  if (fp16 && check_fp16()) {
    snprintf(why, n, "%s", ait_last_error());
    return false;
  }
  uint8_t *cm = xnn_const_mask(g);
  if (!cm) {
    snprintf(why, n, "out of memory");
    return false;
  }
  bool ok = xnn_node_ok(g, node, fp16, cm, why, n);
  free(cm);
  return ok;
}

/* One pthreadpool per thread count, shared by every state of the process
 * and counted. A partition makes one xnnpack state per segment; with a pool
 * each, every pool's workers spun after their segment while the others ran
 * (a 4-layer BERT, 2 cores: 396 ms a run against 15 ms on one thread).
 * pthreadpool runs one parallel call at a time, so states on different
 * threads take turns on it. */
typedef struct shared_pool {
  int threads, refs;
  pthreadpool_t pool;
} shared_pool;

static pthread_mutex_t pools_mu = PTHREAD_MUTEX_INITIALIZER;
static shared_pool pools[8];

static pthreadpool_t pool_get(int threads) {
  pthread_mutex_lock(&pools_mu);
  pthreadpool_t got = NULL;
  int free_slot = -1;
  for (int i = 0; i < 8 && !got; i++) {
    if (pools[i].refs > 0 && pools[i].threads == threads) {
      pools[i].refs++;
      got = pools[i].pool;
    } else if (pools[i].refs == 0 && free_slot < 0) {
      free_slot = i;
    }
  }
  if (!got && (got = pthreadpool_create((size_t)threads)) && free_slot >= 0)
    pools[free_slot] = (shared_pool){threads, 1, got};
  pthread_mutex_unlock(&pools_mu);
  return got; /* all slots taken: a pool of its own (pool_put destroys it) */
}

static void pool_put(pthreadpool_t pool) {
  pthread_mutex_lock(&pools_mu);
  bool shared = false;
  for (int i = 0; i < 8 && !shared; i++)
    if (pools[i].refs > 0 && pools[i].pool == pool) {
      shared = true;
      if (--pools[i].refs == 0)
        pools[i].pool = NULL;
      else
        pool = NULL; /* others still use it */
    }
  pthread_mutex_unlock(&pools_mu);
  if (pool) pthreadpool_destroy(pool);
}

static void xnn_destroy(void *state) {
  xnn_state *s = state;
  if (!s) return;
  xnn_plans_free(s);
  xnn_program_free(s);
  if (s->pool) pool_put(s->pool);
  free(s);
}

static void plan_free(void *plan) { xnn_plan_free(plan); }

/* A state without a program: options resolved, the pool made. */
static ait_status new_state(const ait_backend_config *cfg, const ait_graph *g, xnn_state **out) {
  AIT_TRY(xnn_init_once());
  bool fp16 = want_fp16(cfg);
  if (fp16) AIT_TRY(check_fp16());
  xnn_state *s = calloc(1, sizeof *s);
  if (!s) return ait_err(AIT_E_NOMEM, "out of memory");
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  int64_t t = ait_backend_config_int(cfg, "threads", online > 0 ? online : 1);
  s->g = g;
  s->plans.free_plan = plan_free;
  s->plans.max = XNN_MAX_PLANS;
  s->threads = t < 1 ? 1 : t > 256 ? 256 : (int)t;
  s->fp16 = fp16;
  if (s->threads > 1 && !(s->pool = pool_get(s->threads))) {
    int threads = s->threads;
    free(s);
    return ait_err(AIT_E_NOMEM, "xnnpack: cannot create a pool of %d threads", threads);
  }
  *out = s;
  return AIT_OK;
}

/* Plan the signature the tuner will use first (its first sample, or the
 * declared shapes when they are all fixed), so XNNPACK's own refusals show
 * up at build time rather than at the first infer. */
static ait_status plan_early(xnn_state *s, const ait_build_info *info) {
  const ait_graph *g = s->g;
  if (g->n_inputs > 64) return AIT_OK;
  ait_tensor heads[64];
  const ait_tensor *in[64];
  if (info && info->samples && info->n_samples > 0) {
    for (int i = 0; i < g->n_inputs; i++)
      if (!(in[i] = info->samples[0][i])) return AIT_OK;
  } else {
    for (int i = 0; i < g->n_inputs; i++) {
      const ait_value *v = &g->values[g->inputs[i]];
      if (v->rank < 0) return AIT_OK;
      memset(&heads[i], 0, sizeof heads[i]);
      heads[i].dtype = v->dtype;
      heads[i].rank = v->rank;
      for (int d = 0; d < v->rank; d++) {
        if (v->dims[d].v < 0) return AIT_OK;
        heads[i].dims[d] = v->dims[d].v;
      }
      in[i] = &heads[i];
    }
  }
  return xnn_prepare(s, in, g->n_inputs);
}

static ait_status xnn_build(const ait_backend_config *cfg, const ait_graph *g,
                            const ait_build_info *info, void **state) {
  xnn_state *s;
  AIT_TRY(new_state(cfg, g, &s));
  ait_status st = xnn_lower(s);
  if (!st) st = plan_early(s, info);
  if (st) {
    xnn_destroy(s);
    return st;
  }
  *state = s;
  return AIT_OK;
}

static ait_status xnn_infer(void *state, const ait_tensor *const *in, int n_in, ait_tensor **out) {
  return xnn_exec(state, in, n_in, out);
}

static ait_status xnn_activate(void *state) { return AIT_OK; /* plans come back lazily */ }

static ait_status xnn_deactivate(void *state) {
  xnn_plans_free(state);
  return AIT_OK;
}

static ait_status xnn_save_state(void *state, const char *dir) { return xnn_save(state, dir); }

static ait_status xnn_load_state(const ait_backend_config *cfg, const ait_graph *g, const char *dir,
                                 void **state) {
  xnn_state *s;
  AIT_TRY(new_state(cfg, g, &s));
  ait_status st = xnn_load(s, dir);
  if (st) {
    xnn_destroy(s);
    return st;
  }
  *state = s;
  return AIT_OK;
}

/* Knobs the tuner searches: XNNPACK's pool on all cores, or one thread
 * (on a shared machine its pool can wait on descheduled workers). */
static const char *const xnn_variants[] = {"xnnpack", "xnnpack:threads=1", NULL};

const ait_backend_iface ait_backend_xnnpack = {
    .name = "xnnpack",
    .summary = "XNNPACK (Debian 2022-02) subgraph runtimes: NHWC convolutions, depthwise, "
               "fully connected, pools, elementwise; plans per input shape",
    .options = xnn_options,
    .n_options = (int)(sizeof xnn_options / sizeof xnn_options[0]),
    .available = xnn_available,
    .supports = xnn_supports,
    .build = xnn_build,
    .infer = xnn_infer,
    .activate = xnn_activate,
    .deactivate = xnn_deactivate,
    .save = xnn_save_state,
    .load = xnn_load_state,
    .destroy = xnn_destroy,
    .variants = xnn_variants,
};
