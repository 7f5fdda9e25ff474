/* Backend `onednn`: the graph on oneDNN primitives (Debian's libdnnl 2.x,
 * C API). build() lowers the graph to one op per primitive with fused
 * post-ops (onednn_lower.c), folds constants and BatchNorm into weights,
 * and plans the first sample's signature, which chooses the blocked
 * layouts and reorders the weights once. infer() finds or makes the plan
 * for the input signature and runs it. save() writes the reordered
 * weights; load() lowers again (cheap) and takes the weights from the file.
 *
 * Threads: Debian builds oneDNN with the OpenMP runtime (GNU libgomp).
 * oneDNN reads the OpenMP thread count of the calling thread when it
 * creates and runs primitives, so `threads` sets it around those calls
 * (omp_set_num_threads, found at run time through libdnnl's own libgomp)
 * and restores it after. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/onednn/onednn.h"

static const ait_option_def onednn_options[] = {
    {"dtype", AIT_OPT_ENUM, "fp32", "fp32|bf16",
     "compute type of convolutions and matmuls; bf16 needs avx512_bf16 or amx_bf16"},
    {"conv", AIT_OPT_ENUM, "direct", "direct|winograd",
     "3x3 stride-1 fp32 convolutions: direct, or Winograd F(4x4,3x3) where oneDNN has it"},
    {"threads", AIT_OPT_INT, "auto", "1..256", "OpenMP threads for oneDNN (auto: online cores)"},
};

static bool onednn_available(char *why, size_t n) {
  dnnl_engine_t e = NULL;
  if (dnnl_engine_create(&e, dnnl_cpu, 0) != dnnl_success) {
    snprintf(why, n, "oneDNN cannot create a CPU engine");
    return false;
  }
  dnnl_engine_destroy(e);
  return true;
}

/* ---- threads ----------------------------------------------------------- */

typedef void (*omp_set_fn)(int);
typedef int (*omp_get_fn)(void);

static omp_set_fn omp_set;
static omp_get_fn omp_get;

static void omp_lookup(void) {
  if (dnnl_version()->cpu_runtime != DNNL_RUNTIME_OMP) return;
  *(void **)&omp_set = dlsym(RTLD_DEFAULT, "omp_set_num_threads");
  *(void **)&omp_get = dlsym(RTLD_DEFAULT, "omp_get_max_threads");
}

/* The OpenMP entry points of the libgomp oneDNN loaded (NULL when oneDNN
 * uses another runtime). Looked up once; every thread finds the same. */
static void omp_fns(omp_set_fn *set, omp_get_fn *get) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, omp_lookup);
  *set = omp_set, *get = omp_get;
}

int dn_threads_enter(int threads) {
  omp_set_fn set;
  omp_get_fn get;
  omp_fns(&set, &get);
  if (!set || !get) return 0;
  int prev = get();
  if (prev != threads) set(threads);
  return prev;
}

void dn_threads_leave(int prev) {
  omp_set_fn set;
  omp_get_fn get;
  omp_fns(&set, &get);
  if (set && get && prev > 0 && get() != prev) set(prev);
}

static int resolve_threads(const ait_backend_config *cfg) {
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  int64_t t = ait_backend_config_int(cfg, "threads", online > 0 ? online : 1);
  return t < 1 ? 1 : t > 256 ? 256 : (int)t;
}

/* ---- life cycle ---------------------------------------------------------- */

static dn_shared *shared_new(void) {
  dn_shared *sh = calloc(1, sizeof *sh);
  pthread_mutex_t *mu = malloc(sizeof *mu);
  if (!sh || !mu || pthread_mutex_init(mu, NULL) != 0) {
    free(sh);
    free(mu);
    return NULL;
  }
  atomic_init(&sh->refs, 1);
  sh->lock = mu;
  return sh;
}

/* Plans, stream and engine are the state's own; the lowering and the
 * weight cache go with the last state holding the shared block. */
static void onednn_destroy(void *state) {
  dn_state *s = state;
  if (!s) return;
  dn_plans_clear(s);
  bool last = !s->sh || atomic_fetch_sub_explicit(&s->sh->refs, 1, memory_order_acq_rel) == 1;
  if (last) {
    dn_ops_free(s);
    for (int i = 0; i < s->n_slots; i++)
      if (s->slots[i].owned) ait_tensor_free(s->slots[i].t);
    free(s->slots);
    free(s->vclass), free(s->vslot), free(s->last_use);
  }
  if (last && s->sh) {
    for (int i = 0; i < s->sh->n_wc; i++)
      free(s->sh->wc[i].data);
    free(s->sh->wc);
    pthread_mutex_destroy(s->sh->lock);
    free(s->sh->lock);
    free(s->sh);
  }
  if (s->stream) dnnl_stream_destroy(s->stream);
  if (s->eng) dnnl_engine_destroy(s->eng);
  free(s);
}

/* Whether g has a convolution oneDNN's Winograd kernels could take (over
 * constant weights). Without one, conv=winograd would build the same plan as
 * direct, a duplicate for the tuner. */
static bool has_wino_conv(const ait_graph *g) {
  for (int i = 0; i < g->n_nodes; i++) {
    const ait_node *n = &g->nodes[i];
    if (n->domain[0] || strcmp(n->op_type, "Conv") || n->n_in < 2 || n->in[1] < 0) continue;
    const ait_tensor *w = g->values[n->in[1]].init;
    int ns = 0, nd = 0;
    const int64_t *st = ait_attr_ints(n, "strides", &ns), *dl = ait_attr_ints(n, "dilations", &nd);
    if (w && (!st || ns == 2) && (!dl || nd == 2) &&
        dn_wino_fits(ait_attr_int(n, "group", 1), w->rank, w->dims + 2, st, dl))
      return true;
  }
  return false;
}

static void plan_free(void *p) { dn_plan_free(p); }

static ait_status make_state(const ait_backend_config *cfg, const ait_graph *g, dn_state **out) {
  *out = NULL;
  const char *dt = ait_backend_config_get(cfg, "dtype");
  bool bf16 = dt && !strcmp(dt, "bf16");
  char why[256];
  if (bf16 && !dn_cpu_has_bf16(why, sizeof why))
    return ait_err(AIT_E_UNSUPPORTED, "onednn: %s", why);
  const char *conv = ait_backend_config_get(cfg, "conv");
  bool wino = conv && !strcmp(conv, "winograd");
  if (wino && !has_wino_conv(g))
    return ait_err(AIT_E_UNSUPPORTED,
                   "onednn: conv=winograd: no 3x3 stride-1 convolution in this model (the plan "
                   "would equal conv=direct's)");
  dn_state *s = calloc(1, sizeof *s);
  if (!s) return ait_err(AIT_E_NOMEM, "out of memory");
  s->plans.free_plan = plan_free;
  s->g = g;
  s->wino = wino;
  s->bf16 = bf16;
  s->threads = resolve_threads(cfg);
  if (!(s->sh = shared_new())) {
    free(s);
    return ait_err(AIT_E_NOMEM, "out of memory");
  }
  ait_status st = dn_check(dnnl_engine_create(&s->eng, dnnl_cpu, 0), "engine");
  if (!st)
    st = dn_check(dnnl_stream_create(&s->stream, s->eng, dnnl_stream_default_flags), "stream");
  if (!st) st = dn_lower(s);
  if (st) {
    onednn_destroy(s);
    return st;
  }
  *out = s;
  return AIT_OK;
}

/* The inputs must be the graph's: count, dtype, rank and fixed dims. */
static ait_status check_inputs(const ait_graph *g, const ait_tensor *const *in, int n_in) {
  if (n_in != g->n_inputs)
    return ait_err(AIT_E_INVALID_ARG, "onednn: %d inputs given, the graph takes %d", n_in,
                   g->n_inputs);
  for (int i = 0; i < n_in; i++) {
    const ait_value *v = &g->values[g->inputs[i]];
    const ait_tensor *t = in[i];
    if (!t || t->kind != AIT_KIND_TENSOR)
      return ait_err(AIT_E_INVALID_ARG, "onednn: input '%s' is not a tensor", v->name);
    if (v->dtype != AIT_UNDEFINED && t->dtype != v->dtype)
      return ait_err(AIT_E_DTYPE, "onednn: input '%s' is %s, the graph takes %s", v->name,
                     ait_dtype_name(t->dtype), ait_dtype_name(v->dtype));
    if (v->rank >= 0 && t->rank != v->rank)
      return ait_err(AIT_E_SHAPE, "onednn: input '%s' has rank %d, the graph takes %d", v->name,
                     t->rank, v->rank);
    for (int k = 0; v->rank >= 0 && k < v->rank; k++)
      if (v->dims[k].v >= 0 && t->dims[k] != v->dims[k].v)
        return ait_err(AIT_E_SHAPE, "onednn: input '%s' dim %d is %lld, the graph takes %lld",
                       v->name, k, (long long)t->dims[k], (long long)v->dims[k].v);
    if (ait_tensor_numel(t) > 0 && !t->data)
      return ait_err(AIT_E_INVALID_ARG, "onednn: input '%s' has no data", v->name);
  }
  return AIT_OK;
}

/* The plan for these inputs: found by signature, else made and kept (the
 * shared plan cache, common/plan.h: the least recently used of
 * AIT_PLAN_CACHE_MAX goes). */
static ait_status find_plan(dn_state *s, const ait_tensor *const *in, int n_in, dn_plan **out) {
  if ((*out = ait_plan_cache_find(&s->plans, in, n_in))) return AIT_OK;
  dn_plan *p = NULL;
  AIT_TRY(dn_plan_make(s, in, n_in, &p));
  AIT_TRY(ait_plan_cache_add(&s->plans, in, n_in, p)); /* frees p on failure */
  return *out = p, AIT_OK;
}

static ait_status onednn_infer(void *state, const ait_tensor *const *in, int n_in,
                               ait_tensor **out) {
  dn_state *s = state;
  const ait_graph *g = s->g;
  for (int k = 0; k < g->n_outputs; k++)
    out[k] = NULL;
  AIT_TRY(check_inputs(g, in, n_in));
  int prev = dn_threads_enter(s->threads);
  dn_plan *p = NULL;
  ait_status st = find_plan(s, in, n_in, &p);
  if (!st) st = dn_plan_run(s, p, in, n_in, out);
  dn_threads_leave(prev);
  if (st)
    for (int k = 0; k < g->n_outputs; k++) {
      ait_tensor_free(out[k]);
      out[k] = NULL;
    }
  return st;
}

static ait_status onednn_build(const ait_backend_config *cfg, const ait_graph *g,
                               const ait_build_info *info, void **state) {
  dn_state *s = NULL;
  AIT_TRY(make_state(cfg, g, &s));
  /* plan the first sample now: layouts, JIT kernels and weight reorders */
  if (info && info->samples && info->n_samples > 0 && info->samples[0]) {
    const ait_tensor *const *in = info->samples[0];
    ait_status st = check_inputs(g, in, g->n_inputs);
    if (!st) {
      int prev = dn_threads_enter(s->threads);
      dn_plan *p = NULL;
      st = find_plan(s, in, g->n_inputs, &p);
      dn_threads_leave(prev);
    }
    if (st) {
      onednn_destroy(s);
      return ait_err_prefix(st, "onednn build");
    }
  }
  *state = s;
  return AIT_OK;
}

static ait_status onednn_activate(void *state) { return AIT_OK; /* plans come back lazily */ }

static ait_status onednn_deactivate(void *state) {
  dn_plans_clear(state);
  return AIT_OK;
}

static ait_status onednn_save(void *state, const char *dir) { return dn_save(state, dir); }

static ait_status onednn_load(const ait_backend_config *cfg, const ait_graph *g, const char *dir,
                              void **state) {
  dn_state *s = NULL;
  AIT_TRY(make_state(cfg, g, &s));
  ait_status st = dn_load_weights(s, dir);
  if (st) {
    onednn_destroy(s);
    return st;
  }
  *state = s;
  return AIT_OK;
}

/* A state over the same lowering and weight cache (shared, refcounted)
 * with its own engine, stream and plans: primitives are made again on the
 * clone's first run of a signature (oneDNN caches their JIT code), the
 * weights are not reordered again. */
static ait_status onednn_clone(void *state, void **out) {
  const dn_state *s = state;
  dn_state *c = calloc(1, sizeof *c);
  if (!c) return ait_err(AIT_E_NOMEM, "out of memory");
  *c = *s;
  c->eng = NULL;
  c->stream = NULL;
  memset(c->plans.e, 0, sizeof c->plans.e);
  c->plans.n = 0;
  atomic_fetch_add_explicit(&s->sh->refs, 1, memory_order_relaxed);
  ait_status st = dn_check(dnnl_engine_create(&c->eng, dnnl_cpu, 0), "engine");
  if (!st)
    st = dn_check(dnnl_stream_create(&c->stream, c->eng, dnnl_stream_default_flags), "stream");
  if (st) {
    onednn_destroy(c);
    return st;
  }
  *out = c;
  return AIT_OK;
}

/* Knobs the tuner searches: OpenMP on all cores or one thread (on a busy
 * machine a descheduled thread stalls every primitive), and bf16 compute
 * where the CPU has it (kept only if the numeric check passes), and Winograd
 * for 3x3 convolutions (fewer multiplies, fp32 with a slightly larger error). */
static const char *const onednn_variants[] = {"onednn",
                                              "onednn:threads=1",
                                              "onednn:dtype=bf16",
                                              "onednn:dtype=bf16,threads=1",
                                              "onednn:conv=winograd",
                                              NULL};

const ait_backend_iface ait_backend_onednn = {
    .name = "onednn",
    .summary = "oneDNN primitives: blocked layouts, fused post-ops, fp32 or bf16",
    .options = onednn_options,
    .n_options = (int)(sizeof onednn_options / sizeof onednn_options[0]),
    .available = onednn_available,
    .supports = dn_supports,
    .build = onednn_build,
    .infer = onednn_infer,
    .activate = onednn_activate,
    .deactivate = onednn_deactivate,
    .save = onednn_save,
    .load = onednn_load,
    .destroy = onednn_destroy,
    .variants = onednn_variants,
    .clone = onednn_clone,
};
