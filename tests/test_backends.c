/* Test-only backends (see test_backends.h): one behaviour row each, one set
 * of interface functions shared by all of them, the reference executor doing
 * the arithmetic except for t_fast. */
#include "test_backends.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/backend.h"
#include "core/error.h"
#include "core/tensor.h"
#include "runtime/eager.h"
#include "runtime/observe.h"
#include "tune/contention.h"
#include "tune/profile.h"

typedef struct behaviour {
  const char *name;
  bool fail_build;              /* build() fails */
  bool refuse_all;              /* supports() refuses every node */
  bool no_relu;                 /* supports() refuses Relu nodes */
  bool fast;                    /* computes relu chains directly (t_fast) */
  bool spoil_save;              /* save() writes a state that loads wrong (+0.5) */
  float perturb;                /* added to every float output */
  int sleep_us;                 /* per infer */
  int sleep_us_per_batch;       /* per infer, times the leading dim of input 0 */
  int late_runs, late_sleep_us; /* after late_runs infers of a state, sleep late_sleep_us */
  /* a thread-pool engine (option threads, auto = 2): threads=1 costs st_us;
   * more threads cost mt_us, or mt_load_us on the loaded machine
   * (tbk_set_loaded) of which one thread waited mt_wait_us for a CPU; at
   * wrong_threads it costs a quarter of that and adds 0.5 to its outputs */
  bool pool;
  int st_us, mt_us, mt_load_us, mt_wait_us, wrong_threads;
  tbk_counts counts;
} behaviour;

static behaviour rows[] = {
    {.name = "t_broken", .fail_build = true},
    {.name = "t_wrong", .perturb = 0.5f},
    {.name = "t_slow", .sleep_us = 20000},
    {.name = "t_batchy", .sleep_us = 10000, .sleep_us_per_batch = 125},
    {.name = "t_fast", .fast = true},
    /* t_fast whose save() is an export that does not reproduce: t_export
     * has a rebuild form (save_rebuild), t_badsave none */
    {.name = "t_export", .fast = true, .spoil_save = true},
    {.name = "t_badsave", .fast = true, .spoil_save = true},
    {.name = "t_unavail"},
    {.name = "t_nosupport", .refuse_all = true},
    {.name = "t_norelu", .no_relu = true},
    /* the runoff's pair: t_late looks 10% slower than t_steady while it is
     * profiled (validation 3 runs, 2 batch sizes x (1 + 3) runs), then
     * runs twice as fast: only timing them again, alternately, finds it */
    {.name = "t_steady", .sleep_us = 2000},
    {.name = "t_late", .sleep_us = 2200, .late_runs = 12, .late_sleep_us = 1000},
    /* computes "in int8" (its precision hook), and slower than t_steady */
    {.name = "t_lowp", .sleep_us = 4000},
    /* loaded: 2 threads take 20 ms, 11 of them queued: 9 ms uncontended,
     * under threads=1's 10 ms (and near enough for the runoff) */
    {.name = "t_pool",
     .pool = true,
     .st_us = 10000,
     .mt_us = 9000,
     .mt_load_us = 20000,
     .mt_wait_us = 11000,
     .wrong_threads = 8},
    /* a tiny model: a second thread costs more than it brings, loaded or not */
    {.name = "t_tiny",
     .pool = true,
     .st_us = 1000,
     .mt_us = 1500,
     .mt_load_us = 3000,
     .mt_wait_us = 1200},
};
#define N_ROWS ((int)(sizeof rows / sizeof rows[0]))

static behaviour *row_of(const char *name) {
  for (int i = 0; i < N_ROWS; i++)
    if (!strcmp(rows[i].name, name)) return &rows[i];
  return NULL;
}

tbk_counts *tbk_counts_of(const char *name) {
  behaviour *b = row_of(name);
  return b ? &b->counts : NULL;
}

typedef struct tbk_state {
  const ait_graph *g;
  behaviour *b;
  int runs;     /* infers of this state */
  int threads;  /* pool backends */
  bool spoiled; /* loaded from a spoiled save: outputs + 0.5 */
} tbk_state;

static bool virtual_time, loaded;
static double virtual_us, virtual_wait_us; /* the clock; one thread's run-queue wait */

void tbk_set_loaded(bool on) { loaded = on; }

/* The timing thread's wait, which the pool backends advance, on the virtual clock. */
static bool virtual_sched(ait_sched_snap *out) {
  out->wall_s = virtual_us * 1e-6;
  out->cpu_s = (virtual_us - virtual_wait_us) * 1e-6;
  out->wait_s = virtual_wait_us * 1e-6;
  return true;
}

void tbk_pin_sched(bool on) { ait_sched_set_reader(on ? virtual_sched : ait_sched_read_none); }

static double virtual_now(void) { return virtual_us * 1e-6; }

void tbk_advance_us(double us) { virtual_us += us; }

static void charge_node(void *user, const ait_node *node, double seconds) {
  tbk_advance_us(TBK_NODE_US);
}

void tbk_virtual_time(bool on) {
  virtual_time = on;
  ait_now_set_clock(on ? virtual_now : NULL);
  /* real run-queue waits beside a virtual clock would correct virtual
   * times by the machine's load: a pinned clock pins "no contention" */
  ait_sched_set_reader(on ? ait_sched_read_none : NULL);
  ait_observe_set(on ? charge_node : NULL, NULL);
}

/* Spend a run's cost: on the virtual clock, or asleep. */
static void sleep_us(long long us) {
  if (virtual_time) {
    tbk_advance_us(TBK_BASE_US + (double)us);
    return;
  }
  struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static bool avail_yes(char *why, size_t n) { return true; }

static bool avail_no(char *why, size_t n) {
  snprintf(why, n, "t_unavail: no such accelerator here");
  return false;
}

static bool tbk_supports(const ait_backend_config *cfg, const ait_graph *g, const ait_node *node,
                         char *why, size_t n) {
  behaviour *b = row_of(cfg->iface->name);
  b->counts.supports++;
  if (b->refuse_all || (b->no_relu && !strcmp(node->op_type, "Relu"))) {
    snprintf(why, n, "%s: refuses %s node '%s'", b->name, node->op_type, node->name);
    return false;
  }
  if (b->fast && strcmp(node->op_type, "Relu") && strcmp(node->op_type, "Identity") &&
      strcmp(node->op_type, "Add")) {
    snprintf(why, n, "t_fast: runs only Relu, Identity and Add, not %s", node->op_type);
    return false;
  }
  return true;
}

/* An initializer of zeros that broadcasts onto [N, width] without growing it. */
static bool is_zero_bias(const ait_graph *g, int v, int64_t width) {
  const ait_tensor *t = v >= 0 ? g->values[v].init : NULL;
  if (!t || t->dtype != AIT_FLOAT32 || t->rank > 1) return false;
  int64_t n = ait_tensor_numel(t);
  if (n != 1 && n != width) return false;
  for (int64_t i = 0; i < n; i++)
    if (((const float *)t->data)[i] != 0.0f) return false;
  return true;
}

/* t_fast is honest only for y = Relu(x) behind any number of Identity and
 * Add-zero nodes, in one chain from the single input to the single output. */
static ait_status check_relu_chain(const ait_graph *g) {
  if (g->n_inputs != 1 || g->n_outputs != 1)
    return ait_err(AIT_E_UNSUPPORTED, "t_fast: wants one input and one output");
  const ait_value *x = &g->values[g->inputs[0]];
  if (x->dtype != AIT_FLOAT32 || x->rank != 2 || x->dims[1].v < 1)
    return ait_err(AIT_E_UNSUPPORTED, "t_fast: wants a float [N, width] input");
  int cur = g->inputs[0], relus = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    const ait_node *n = &g->nodes[i];
    int data = n->n_in > 0 ? n->in[0] : -1;
    bool ok = n->n_out == 1 && data == cur;
    if (!strcmp(n->op_type, "Relu") || !strcmp(n->op_type, "Identity"))
      ok = ok && n->n_in == 1;
    else if (!strcmp(n->op_type, "Add"))
      ok = ok && n->n_in == 2 && is_zero_bias(g, n->in[1], x->dims[1].v);
    else
      ok = false;
    if (!ok) return ait_err(AIT_E_UNSUPPORTED, "t_fast: node '%s' is not a relu chain", n->name);
    relus += !strcmp(n->op_type, "Relu");
    cur = n->out[0];
  }
  if (!relus || cur != g->outputs[0])
    return ait_err(AIT_E_UNSUPPORTED, "t_fast: the graph is not a relu chain");
  return AIT_OK;
}

static ait_status tbk_build(const ait_backend_config *cfg, const ait_graph *g,
                            const ait_build_info *info, void **state) {
  behaviour *b = row_of(cfg->iface->name);
  b->counts.build++;
  if (b->fail_build) return ait_err(AIT_E_RUNTIME, "t_broken: deliberately fails to build");
  AIT_TRY(b->fast ? check_relu_chain(g) : ait_eager_check(g));
  tbk_state *s = calloc(1, sizeof *s);
  if (!s) return ait_err(AIT_E_NOMEM, "out of memory");
  s->g = g;
  s->b = b;
  s->threads = (int)ait_backend_config_int(cfg, "threads", 2);
  *state = s;
  return AIT_OK;
}

static ait_status fast_relu(const ait_tensor *x, ait_tensor **out) {
  if (x->dtype != AIT_FLOAT32 || x->rank != 2)
    return ait_err(AIT_E_DTYPE, "t_fast: wants a float [N, width] input");
  ait_tensor *y = ait_tensor_new(AIT_FLOAT32, x->rank, x->dims);
  if (!y) return AIT_E_NOMEM;
  const float *xs = x->data;
  float *ys = y->data;
  for (int64_t i = 0, n = ait_tensor_numel(x); i < n; i++)
    ys[i] = xs[i] > 0.0f ? xs[i] : 0.0f;
  *out = y;
  return AIT_OK;
}

static ait_status tbk_infer(void *state, const ait_tensor *const *in, int n_in, ait_tensor **out) {
  tbk_state *s = state;
  behaviour *b = s->b;
  b->counts.infer++;
  int64_t batch = n_in > 0 && in[0]->rank > 0 ? in[0]->dims[0] : 1;
  bool wrong = b->pool && b->wrong_threads && s->threads == b->wrong_threads;
  if (b->pool) {
    bool mt = s->threads > 1;
    double us = !mt ? b->st_us : loaded ? b->mt_load_us : b->mt_us;
    double wait = mt && loaded ? b->mt_wait_us : 0;
    if (wrong) us /= 4, wait /= 4;
    virtual_wait_us += wait;
    sleep_us((long long)us);
  } else if (b->late_runs && ++s->runs > b->late_runs)
    sleep_us(b->late_sleep_us);
  else if (b->sleep_us || b->sleep_us_per_batch || virtual_time)
    sleep_us(b->sleep_us + (long long)b->sleep_us_per_batch * batch);
  if (b->fast)
    AIT_TRY(n_in == 1 ? fast_relu(in[0], out) : ait_err(AIT_E_INVALID_ARG, "t_fast: one input"));
  else
    AIT_TRY(ait_eager_run(s->g, in, n_in, out));
  float perturb = wrong || s->spoiled ? 0.5f : b->perturb;
  for (int o = 0; perturb != 0.0f && o < s->g->n_outputs; o++) {
    if (!out[o] || out[o]->kind != AIT_KIND_TENSOR || out[o]->dtype != AIT_FLOAT32) continue;
    float *d = out[o]->data;
    for (int64_t i = 0, n = ait_tensor_numel(out[o]); i < n; i++)
      d[i] += perturb;
  }
  return AIT_OK;
}

static ait_status tbk_nop(void *state) { return AIT_OK; }

static void state_path(const char *dir, const char *name, char *buf, size_t n) {
  snprintf(buf, n, "%s/%s.state", dir, name);
}

static ait_status save_as(tbk_state *s, const char *dir, bool spoil) {
  s->b->counts.save++;
  char path[4096];
  state_path(dir, s->b->name, path, sizeof path);
  FILE *f = fopen(path, "w");
  if (!f) return ait_err(AIT_E_IO, "%s: cannot write %s", s->b->name, path);
  fprintf(f, "%s%s\n", s->b->name, spoil ? " spoiled" : "");
  return fclose(f) == 0 ? AIT_OK : ait_err(AIT_E_IO, "%s: cannot write %s", s->b->name, path);
}

static ait_status tbk_save(void *state, const char *dir) {
  tbk_state *s = state;
  return save_as(s, dir, s->b->spoil_save);
}
static ait_status tbk_save_rebuild(void *state, const char *dir) {
  return save_as(state, dir, false);
}

static ait_status tbk_load(const ait_backend_config *cfg, const ait_graph *g, const char *dir,
                           void **state) {
  behaviour *b = row_of(cfg->iface->name);
  b->counts.load++;
  char path[4096], line[64] = "";
  state_path(dir, b->name, path, sizeof path);
  FILE *f = fopen(path, "r");
  if (!f) return ait_err(AIT_E_IO, "%s: no saved state at %s", b->name, path);
  bool ok = fgets(line, sizeof line, f) && !strncmp(line, b->name, strlen(b->name));
  fclose(f);
  if (!ok) return ait_err(AIT_E_PARSE, "%s: %s is not my saved state", b->name, path);
  int builds = b->counts.build;
  ait_status st = tbk_build(cfg, g, NULL, state);
  b->counts.build = builds; /* a load is not a build */
  if (!st) ((tbk_state *)*state)->spoiled = strstr(line, " spoiled") != NULL;
  return st;
}

static void tbk_destroy(void *state) {
  tbk_state *s = state;
  if (s) s->b->counts.destroy++;
  free(state);
}

#define TBK_IFACE(var, nm, summ, avail)                                                            \
  static const ait_backend_iface var = {                                                           \
      .name = nm,                                                                                  \
      .summary = summ,                                                                             \
      .available = avail,                                                                          \
      .supports = tbk_supports,                                                                    \
      .build = tbk_build,                                                                          \
      .infer = tbk_infer,                                                                          \
      .activate = tbk_nop,                                                                         \
      .deactivate = tbk_nop,                                                                       \
      .save = tbk_save,                                                                            \
      .load = tbk_load,                                                                            \
      .destroy = tbk_destroy,                                                                      \
  }

TBK_IFACE(if_broken, "t_broken", "test: build always fails", avail_yes);
TBK_IFACE(if_wrong, "t_wrong", "test: outputs off by 0.5", avail_yes);
TBK_IFACE(if_slow, "t_slow", "test: reference plus 20 ms per run", avail_yes);
TBK_IFACE(if_batchy, "t_batchy", "test: reference plus (10 + batch / 8) ms per run", avail_yes);
TBK_IFACE(if_fast, "t_fast", "test: relu chains in one pass", avail_yes);
TBK_IFACE(if_badsave, "t_badsave", "test: t_fast, whose saved state loads wrong", avail_yes);
static const ait_backend_iface if_export = {
    .name = "t_export",
    .summary = "test: t_fast, whose saved state loads wrong unless saved for a rebuild",
    .available = avail_yes,
    .supports = tbk_supports,
    .build = tbk_build,
    .infer = tbk_infer,
    .activate = tbk_nop,
    .deactivate = tbk_nop,
    .save = tbk_save,
    .save_rebuild = tbk_save_rebuild,
    .load = tbk_load,
    .destroy = tbk_destroy,
};
TBK_IFACE(if_unavail, "t_unavail", "test: never available", avail_no);
TBK_IFACE(if_nosupport, "t_nosupport", "test: refuses every node", avail_yes);
TBK_IFACE(if_norelu, "t_norelu", "test: refuses Relu nodes", avail_yes);
TBK_IFACE(if_steady, "t_steady", "test: reference plus 2 ms per run", avail_yes);
TBK_IFACE(if_late, "t_late", "test: reference plus 2.2 ms per run, 1 ms after 12 runs", avail_yes);

static const ait_option_def pool_options[] = {
    {"threads", AIT_OPT_INT, "auto", "1..64", "test: threads of its pool (auto: 2)"},
};

#define TBK_POOL_IFACE(var, nm, summ)                                                              \
  static const ait_backend_iface var = {                                                           \
      .name = nm,                                                                                  \
      .summary = summ,                                                                             \
      .options = pool_options,                                                                     \
      .n_options = 1,                                                                              \
      .available = avail_yes,                                                                      \
      .supports = tbk_supports,                                                                    \
      .build = tbk_build,                                                                          \
      .infer = tbk_infer,                                                                          \
      .activate = tbk_nop,                                                                         \
      .deactivate = tbk_nop,                                                                       \
      .save = tbk_save,                                                                            \
      .load = tbk_load,                                                                            \
      .destroy = tbk_destroy,                                                                      \
  }

TBK_POOL_IFACE(if_pool, "t_pool", "test: 10 ms on 1 thread, 9 ms on 2 (20 ms loaded, 11 queued)");
TBK_POOL_IFACE(if_tiny, "t_tiny", "test: 1 ms on 1 thread, 1.5 ms on 2 (3 ms loaded, 1.2 queued)");

static const char *prec_int8(const ait_backend_config *cfg) { return "int8"; }

static const ait_backend_iface if_lowp = {
    .name = "t_lowp",
    .summary = "test: reference plus 4 ms per run, judged as int8",
    .available = avail_yes,
    .supports = tbk_supports,
    .build = tbk_build,
    .infer = tbk_infer,
    .activate = tbk_nop,
    .deactivate = tbk_nop,
    .save = tbk_save,
    .load = tbk_load,
    .destroy = tbk_destroy,
    .precision = prec_int8,
};

ait_status tbk_register_all(void) {
  static const ait_backend_iface *all[] = {
      &if_broken, &if_wrong, &if_slow, &if_batchy, &if_fast, &if_unavail, &if_nosupport, &if_norelu,
      &if_steady, &if_late,  &if_lowp, &if_pool,   &if_tiny, &if_export,  &if_badsave};
  static bool done;
  if (done) return AIT_OK;
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    AIT_TRY(ait_backend_register(all[i]));
  done = true;
  return AIT_OK;
}
