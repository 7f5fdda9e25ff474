/* aitune profile: where the time goes, per node and per op type. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/model_impl.h"
#include "backends/partition.h"
#include "cli.h"
#include "core/error.h"
#include "core/fileio.h"
#include "runtime/observe.h"
#include "tune/tune.h"

static const char usage[] =
    "usage: aitune profile MODEL [--backend B] [--inputs DIR] [--dim NAME=VALUE]... [--batch N]\n"
    "                      [--iters N] [--top N] [--int-range [INPUT=]LO:HI] [--json]\n"
    "  time every node of MODEL on backend B (default native when available, else eager)\n"
    "  over N runs (default 10, after 2 warm-up runs) and print the time per node and per op\n"
    "  type, sorted. Per-node times come from the eager and native executors (also as\n"
    "  partition segments) and from cuda (device time of each step replayed alone, CUDA\n"
    "  events: op types are the steps' kinds; plus the whole run as one CUDA graph replay);\n"
    "  other backends time only as a whole. Backends that say what they hold (cuda: device\n"
    "  bytes of weights and activation arenas) have it printed too.\n"
    "  --inputs DIR      input_K.pb or input_K.npy files (--samples is the same)\n"
    "  --dim NAME=VALUE  size of a symbolic dim (seq) or an axis (INPUT:AXIS) of the inputs\n"
    "  --json            one JSON object (schemas/profile.schema.json)\n" CLI_LOAD_USAGE;

typedef struct entry {
  char name[200];
  char op[64];
  double seconds;
  long calls;
} entry;

typedef struct tally {
  entry *e;
  int n, cap;
  double whole; /* a backend's whole-run device time (op type "=..."), apart */
  long whole_n;
  char whole_op[64];
} tally;

static entry *find(tally *t, const char *name, const char *op) {
  for (int i = 0; i < t->n; i++)
    if (!strcmp(t->e[i].name, name) && !strcmp(t->e[i].op, op)) return &t->e[i];
  if (t->n == t->cap) {
    int cap = t->cap ? t->cap * 2 : 256;
    entry *m = realloc(t->e, sizeof *m * (size_t)cap);
    if (!m) return NULL;
    t->e = m;
    t->cap = cap;
  }
  entry *x = &t->e[t->n++];
  memset(x, 0, sizeof *x);
  snprintf(x->name, sizeof x->name, "%s", name);
  snprintf(x->op, sizeof x->op, "%s", op);
  return x;
}

static void observe(void *user, const ait_node *n, double s) {
  tally *t = user;
  if (n->op_type[0] == '=') { /* not a node: the backend's time for the whole run */
    t->whole += s;
    t->whole_n++;
    snprintf(t->whole_op, sizeof t->whole_op, "%s", n->op_type + 1);
    return;
  }
  entry *x = find(t, n->name[0] ? n->name : "(unnamed)", n->op_type);
  if (x) {
    x->seconds += s;
    x->calls++;
  }
}

static int by_time(const void *a, const void *b) {
  double x = ((const entry *)a)->seconds, y = ((const entry *)b)->seconds;
  return x < y ? 1 : x > y ? -1 : 0;
}

/* The per-op-type totals of t, sorted by time (new tally, caller frees e). */
static tally by_op(const tally *t) {
  tally ops = {0};
  for (int i = 0; i < t->n; i++) {
    entry *x = find(&ops, t->e[i].op, "");
    if (x) {
      x->seconds += t->e[i].seconds;
      x->calls += 1;
    }
  }
  qsort(ops.e, (size_t)ops.n, sizeof *ops.e, by_time);
  return ops;
}

/* --json: schemas/profile.schema.json. */
static int print_json(const ait_runner *run, const char *model, const char *backend, int batch,
                      int iters, double wall, tally *t) {
  double timed = 0;
  for (int i = 0; i < t->n; i++)
    timed += t->e[i].seconds;
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "model", model);
  cJSON_AddStringToObject(j, "backend", backend);
  cJSON_AddNumberToObject(j, "batch", batch);
  cJSON_AddNumberToObject(j, "runs", iters);
  cJSON_AddNumberToObject(j, "ms_per_run", wall / iters * 1e3);
  cJSON_AddNumberToObject(j, "nodes_timed_ms", timed / iters * 1e3);
  if (t->whole_n > 0) {
    cJSON *w = cJSON_AddObjectToObject(j, "device_run");
    cJSON_AddStringToObject(w, "kind", t->whole_op);
    cJSON_AddNumberToObject(w, "ms", t->whole / (double)t->whole_n * 1e3);
    cJSON_AddNumberToObject(w, "runs", (double)t->whole_n);
  }
  if (run->iface->memory) {
    int64_t wb = 0, work = 0;
    run->iface->memory(run->state, &wb, &work);
    cJSON *mj = cJSON_AddObjectToObject(j, "memory");
    cJSON_AddNumberToObject(mj, "weights_bytes", (double)wb);
    cJSON_AddNumberToObject(mj, "work_bytes", (double)work);
  }
  tally ops = by_op(t);
  cJSON *oa = cJSON_AddArrayToObject(j, "op_types");
  for (int i = 0; i < ops.n; i++) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToArray(oa, o);
    cJSON_AddStringToObject(o, "op", ops.e[i].name);
    cJSON_AddNumberToObject(o, "nodes", (double)ops.e[i].calls);
    cJSON_AddNumberToObject(o, "ms_per_run", ops.e[i].seconds / iters * 1e3);
  }
  free(ops.e);
  qsort(t->e, (size_t)t->n, sizeof *t->e, by_time);
  cJSON *na = cJSON_AddArrayToObject(j, "nodes");
  for (int i = 0; i < t->n; i++) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToArray(na, o);
    cJSON_AddStringToObject(o, "name", t->e[i].name);
    cJSON_AddStringToObject(o, "op", t->e[i].op);
    cJSON_AddNumberToObject(o, "ms_per_run", t->e[i].seconds / iters * 1e3);
  }
  return cli_print_json(j);
}

int cmd_profile(int argc, char **argv) {
  const char *model = NULL, *backend = NULL, *in_dir = NULL, *val;
  static const char *const inputs_flag[] = {"--inputs", "--samples", NULL};
  int iters = 10, top = 25, batch = 1, rc;
  bool json = false;
  cli_inputs ci = {0};
  ait_load_options lo;
  ait_load_options_init(&lo);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (cli_is_help(a)) {
      fputs(usage, stdout);
      return 0;
    }
    if (cli_load_limit(usage, argc, argv, &i, &lo, &rc)) {
      if (rc) return rc;
    } else if (cli_opt(argc, argv, &i, "--backend", &val))
      backend = val;
    else if (cli_opt_any(argc, argv, &i, inputs_flag, &val))
      in_dir = val;
    else if (cli_opt(argc, argv, &i, "--iters", &val)) {
      if ((rc = cli_int32(usage, "--iters", val, 1, 1000000, &iters))) return rc;
    } else if (cli_opt(argc, argv, &i, "--top", &val)) {
      if ((rc = cli_int32(usage, "--top", val, 0, 1000000, &top))) return rc;
    } else if (cli_opt(argc, argv, &i, "--batch", &val)) {
      if ((rc = cli_int32(usage, "--batch", val, 1, 1 << 20, &batch))) return rc;
    } else if (cli_opt(argc, argv, &i, "--dim", &val)) {
      if ((rc = cli_parse_dim(usage, "--dim", val, false, &ci))) return rc;
    } else if (cli_opt(argc, argv, &i, "--int-range", &val)) {
      if ((rc = cli_parse_int_range(usage, val, &ci))) return rc;
    } else if (!strcmp(a, "--json"))
      json = true;
    else if (a[0] == '-' || model)
      return cli_bad_arg(usage, a);
    else
      model = a;
  }
  if (!model) return cli_usage(usage, "profile needs a MODEL");
  if (!backend) {
    char why[128];
    const ait_backend_iface *nb = ait_backend_find("native");
    backend = nb && nb->available(why, sizeof why) ? "native" : "eager";
  }
  /* the backend on the whole model, as the tuner builds a candidate (no module: nothing is tuned)
   */
  ait_model *mdl = NULL;
  ait_backend_config cfg;
  ait_runner run = {0};
  ait_status st = ait_model_load_opts(model, &lo, &mdl);
  if (!st) st = ait_backend_config_parse(backend, &cfg);
  if (!st) st = ait_runner_build(&cfg, ait_model_graph(mdl), NULL, &run);
  if (st) run.state = NULL; /* nothing to destroy */
  const ait_graph *g = mdl ? ait_model_graph(mdl) : NULL;
  ait_sample base = {0}, in = {0};
  ait_graph_spec spec;
  if (!st) st = cli_make_sample(g, in_dir, &ci, &base, &spec);
  if (!st && batch != 1)
    st = spec.has_batch ? ait_sample_resize(&base, &spec, -1, batch, &in)
                        : ait_err(AIT_E_INVALID_ARG, "the model has no batch axis");
  else if (!st)
    st = ait_sample_clone(&base, &in);
  ait_tensor **outs = g ? calloc((size_t)g->n_outputs + 1, sizeof *outs) : NULL;
  tally t = {0};
  double wall = 0;
  for (int r = 0; !st && r < iters + 2; r++) {
    if (r == 2) ait_observe_set(observe, &t); /* after two warm-up runs */
    double t0 = ait_observe_now();
    st = run.iface->infer(run.state, (const ait_tensor *const *)in.inputs, in.n_inputs, outs);
    if (r >= 2) wall += ait_observe_now() - t0;
    for (int k = 0; outs && k < g->n_outputs; k++) {
      ait_tensor_free(outs[k]);
      outs[k] = NULL;
    }
  }
  ait_observe_set(NULL, NULL);
  rc = 0;
  if (st)
    rc = cli_fail(st, "profile failed");
  else if (json)
    rc = print_json(&run, model, backend, batch, iters, wall, &t);
  else {
    double timed = 0;
    for (int i = 0; i < t.n; i++)
      timed += t.e[i].seconds;
    printf("%s on %s, batch %d: %.3f ms per run (%d runs); nodes timed: %.3f ms (%.0f%%)\n", model,
           backend, batch, wall / iters * 1e3, iters, timed / iters * 1e3,
           wall > 0 ? 100 * timed / wall : 0);
    if (t.n == 0) printf("(this backend reports no per-node times; try --backend native)\n");
    if (t.whole_n > 0)
      printf("whole run on the device (%s): %.3f ms (mean of %ld)\n", t.whole_op,
             t.whole / (double)t.whole_n * 1e3, t.whole_n);
    if (run.iface->memory) { /* what the backend holds (cuda: on the device) */
      int64_t wb = 0, work = 0;
      run.iface->memory(run.state, &wb, &work);
      printf("memory: weights %lld bytes (%.1f MiB), working memory %lld bytes (%.1f MiB)\n",
             (long long)wb, (double)wb / 1048576.0, (long long)work, (double)work / 1048576.0);
    }
    tally ops = by_op(&t);
    printf("\nper op type:\n  %-28s %6s %10s %6s\n", "op", "nodes", "ms/run", "%");
    for (int i = 0; i < ops.n; i++)
      printf("  %-28s %6ld %10.3f %5.1f%%\n", ops.e[i].name, ops.e[i].calls,
             ops.e[i].seconds / iters * 1e3, timed > 0 ? 100 * ops.e[i].seconds / timed : 0);
    qsort(t.e, (size_t)t.n, sizeof *t.e, by_time);
    printf("\nslowest nodes:\n  %-40s %-20s %10s %6s\n", "node", "op", "ms/run", "%");
    for (int i = 0; i < t.n && i < top; i++)
      printf("  %-40.40s %-20.20s %10.3f %5.1f%%\n", t.e[i].name, t.e[i].op,
             t.e[i].seconds / iters * 1e3, timed > 0 ? 100 * t.e[i].seconds / timed : 0);
    free(ops.e);
  }
  free(t.e);
  free(outs);
  ait_sample_free(&in);
  ait_sample_free(&base);
  ait_runner_destroy(&run);
  ait_model_free(mdl);
  return rc;
}
