/* aitune bench: time one backend (or a tuned model) in-process, the way the
 * tuner's profiler does; aitune backends: list the backends and options. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/model_impl.h"
#include "backends/partition.h"
#include "cli.h"
#include "core/error.h"
#include "core/fileio.h"
#include "tune/tune.h"

static const char usage[] =
    "usage: aitune bench MODEL|DIR [--backend B] [--batch N] [--inputs DIR] [--dim NAME=VALUE]...\n"
    "                    [--int-range [INPUT=]LO:HI] [--warmup N] [--iters N] [--json]\n"
    "  MODEL    an .onnx file, run on --backend (default eager)\n"
    "  DIR      a tuned model folder, run on its selected backend\n"
    "  --batch N    batch size (default: the tuned batch, or 1); needs a batch axis\n"
    "  --warmup N   untimed runs first (default 5)\n"
    "  --iters N    timed runs (default 50)\n"
    "  --json       print one JSON object (schemas/bench.schema.json): latency_ms\n"
    "               {median,p90,p99,min,mean}, throughput (samples/s), batch, backend,\n"
    "               iters, and memory {weights_bytes,work_bytes} where the backend\n"
    "               reports what it holds (cuda: weights and activation arenas)\n"
    "  --inputs DIR input_K.pb or input_K.npy files to time on (--samples is the same;\n"
    "               default: seeded random values of the declared shapes, symbolic dims 1)\n"
    "  --dim NAME=VALUE  size a symbolic dim (--dim seq=128) or an axis (input_ids:1=128)\n"
    "  --int-range [INPUT=]LO:HI  random integers in [LO, HI] (default 0:1)\n" CLI_LOAD_USAGE
    "Options take their value as --opt VALUE or --opt=VALUE.\n";

/* One timed run: a tuned folder's module through the public API (views of
 * the inputs), or a model's runner on --backend. */
typedef struct bench_ctx {
  ait_module *mod;
  const ait_tensor_view *views;
  const ait_runner *run;
  ait_sample *in;
  ait_tensor **out;
  int n_out;
} bench_ctx;

static ait_status bench_once(void *p) {
  bench_ctx *c = p;
  if (c->mod) return ait_module_infer(c->mod, c->views, (size_t)c->in->n_inputs);
  ait_status st = c->run->iface->infer(c->run->state, (const ait_tensor *const *)c->in->inputs,
                                       c->in->n_inputs, c->out);
  for (int i = 0; i < c->n_out; i++) {
    ait_tensor_free(c->out[i]);
    c->out[i] = NULL;
  }
  return st;
}

int cmd_bench(int argc, char **argv) {
  const char *path = NULL, *backend = NULL, *in_dir = NULL, *val;
  static const char *const inputs_flag[] = {"--inputs", "--samples", NULL};
  cli_inputs ci = {0};
  int batch = 0, warmup = 5, iters = 50, rc;
  bool json = false;
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
    else if (cli_opt(argc, argv, &i, "--batch", &val)) {
      if ((rc = cli_int32(usage, "--batch", val, 1, 1 << 20, &batch))) return rc;
    } else if (cli_opt(argc, argv, &i, "--warmup", &val)) {
      if ((rc = cli_int32(usage, "--warmup", val, 0, 1000000, &warmup))) return rc;
    } else if (cli_opt(argc, argv, &i, "--iters", &val)) {
      if ((rc = cli_int32(usage, "--iters", val, 1, 1000000, &iters))) return rc;
    } else if (cli_opt_any(argc, argv, &i, inputs_flag, &val))
      in_dir = val;
    else if (cli_opt(argc, argv, &i, "--dim", &val)) {
      if ((rc = cli_parse_dim(usage, "--dim", val, false, &ci))) return rc;
    } else if (cli_opt(argc, argv, &i, "--int-range", &val)) {
      if ((rc = cli_parse_int_range(usage, val, &ci))) return rc;
    } else if (!strcmp(a, "--json"))
      json = true;
    else if (a[0] == '-' || path)
      return cli_bad_arg(usage, a);
    else
      path = a;
  }
  if (!path) return cli_usage(usage, "bench needs a MODEL or DIR");
  ait_module *m = NULL;  /* a tuned folder */
  ait_model *mdl = NULL; /* or a model on --backend, */
  ait_runner run = {0};  /* built here as the tuner builds a candidate */
  char desc[600] = "";
  ait_status st;
  bool tuned = cli_is_tuned_dir(path);
  if (tuned) {
    if (backend) return cli_usage(usage, "--backend does not apply to a tuned model folder");
    st = ait_module_load_opts(path, cli_log, NULL, &lo, &m);
    if (!st) snprintf(desc, sizeof desc, "%s", ait_module_backend(m));
  } else {
    st = ait_model_load_opts(path, &lo, &mdl);
    if (!st) {
      ait_backend_config cfg;
      st = ait_backend_config_parse(backend ? backend : "eager", &cfg);
      char why[256];
      if (!st && !cfg.iface->available(why, sizeof why))
        st = ait_err(AIT_E_UNSUPPORTED, "backend %s is not available here: %s", cfg.iface->name,
                     why);
      if (!st) st = ait_runner_build(&cfg, ait_model_graph(mdl), NULL, &run);
      if (!st)
        ait_backend_describe(&cfg, desc, sizeof desc);
      else
        run.state = NULL;
    }
  }
  if (st) {
    ait_module_free(m);
    ait_model_free(mdl);
    return cli_fail(st, "cannot prepare the benchmark");
  }
  const ait_graph *g = ait_model_graph(tuned ? ait_module_model(m) : mdl);
  ait_sample base = {0}, in = {0};
  ait_graph_spec spec;
  st = cli_make_sample(g, in_dir, &ci, &base, &spec);
  if (st) {
    ait_sample_free(&base);
    ait_runner_destroy(&run);
    ait_model_free(mdl);
    ait_module_free(m);
    return cli_fail(st, "cannot make inputs");
  }
  if (!batch) batch = tuned && ait_module_batch_size(m) > 0 ? ait_module_batch_size(m) : 1;
  if (batch != 1 && !spec.has_batch) {
    ait_sample_free(&base);
    ait_runner_destroy(&run);
    ait_model_free(mdl);
    ait_module_free(m);
    return cli_fail(ait_err(AIT_E_INVALID_ARG, "--batch %d: the model has no batch axis", batch),
                    "bench");
  }
  st = ait_sample_resize(&base, &spec, -1, batch, &in);
  ait_tensor **outs = calloc((size_t)g->n_outputs + 1, sizeof *outs);
  ait_tensor_view *views = calloc((size_t)in.n_inputs + 1, sizeof *views);
  if (!st && !views) st = AIT_E_NOMEM;
  for (int i = 0; !st && tuned && i < in.n_inputs; i++) { /* a module takes dense tensors */
    const ait_tensor *t = in.inputs[i];
    if (t->kind != AIT_KIND_TENSOR) {
      st = ait_err(AIT_E_UNSUPPORTED, "input %d is not a tensor", i);
      break;
    }
    views[i].dtype = t->dtype;
    views[i].rank = t->rank;
    memcpy(views[i].dims, t->dims, sizeof views[i].dims);
    views[i].data = t->data;
  }
  bench_ctx ctx = {tuned ? m : NULL, views, &run, &in, outs, g->n_outputs};
  ait_profile_opts po = {.warmup = warmup, .min_runs = iters, .max_runs = iters};
  ait_latency_stats s;
  if (!st) st = outs ? ait_profile(bench_once, &ctx, batch, &po, &s) : AIT_E_NOMEM;
  rc = 0;
  /* what the backend holds, where it says (cuda: device bytes) */
  int64_t wbytes = -1, work = -1;
  if (!st && tuned && ait_module_memory(m, &wbytes, &work) != AIT_OK) {
    wbytes = work = -1; /* the backend does not say */
    ait_err_clear();
  } else if (!st && !tuned && run.iface->memory)
    run.iface->memory(run.state, &wbytes, &work);
  if (st)
    rc = cli_fail(st, "benchmark failed");
  else if (json) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "model", path);
    cJSON_AddStringToObject(j, "backend", desc);
    cJSON_AddNumberToObject(j, "batch", batch);
    cJSON_AddNumberToObject(j, "iters", s.runs);
    cJSON *l = cJSON_AddObjectToObject(j, "latency_ms");
    cJSON_AddNumberToObject(l, "median", s.median_ms);
    cJSON_AddNumberToObject(l, "p90", s.p90_ms);
    cJSON_AddNumberToObject(l, "p99", s.p99_ms);
    cJSON_AddNumberToObject(l, "min", s.min_ms);
    cJSON_AddNumberToObject(l, "mean", s.mean_ms);
    cJSON_AddNumberToObject(j, "throughput", s.throughput);
    if (wbytes >= 0) {
      cJSON *mj = cJSON_AddObjectToObject(j, "memory");
      cJSON_AddNumberToObject(mj, "weights_bytes", (double)wbytes);
      cJSON_AddNumberToObject(mj, "work_bytes", (double)work);
    }
    rc = cli_print_json(j);
  } else {
    char mem[128] = "";
    if (wbytes >= 0)
      snprintf(mem, sizeof mem, "; weights %.1f MiB, working memory %.1f MiB",
               (double)wbytes / 1048576.0, (double)work / 1048576.0);
    printf("%s on %s, batch %d, %d runs: median %.3f ms, p90 %.3f ms, p99 %.3f ms, %.1f "
           "samples/s%s\n",
           path, desc, batch, s.runs, s.median_ms, s.p90_ms, s.p99_ms, s.throughput, mem);
  }
  free(outs);
  free(views);
  ait_sample_free(&in);
  ait_sample_free(&base);
  ait_runner_destroy(&run);
  ait_model_free(mdl);
  ait_module_free(m);
  return rc;
}

int cmd_backends(int argc, char **argv) {
  static const char use[] =
      "usage: aitune backends [--json]\n"
      "  list the backends, whether they run here, and their options\n"
      "  --json   print one JSON object instead (schemas/backends.schema.json)\n";
  bool json = false;
  for (int i = 1; i < argc; i++) {
    if (cli_is_help(argv[i])) {
      fputs(use, stdout);
      return 0;
    }
    if (!strcmp(argv[i], "--json"))
      json = true;
    else
      return cli_bad_arg(use, argv[i]);
  }
  cJSON *root = json ? cJSON_CreateObject() : NULL;
  cJSON *arr = root ? cJSON_AddArrayToObject(root, "backends") : NULL;
  for (int i = 0; i < ait_backend_count(); i++) {
    const ait_backend_iface *b = ait_backend_at(i);
    char why[256] = "";
    bool ok = b->available(why, sizeof why);
    if (arr) {
      cJSON *o = cJSON_CreateObject();
      cJSON_AddItemToArray(arr, o);
      cJSON_AddStringToObject(o, "name", b->name);
      cJSON_AddBoolToObject(o, "available", ok);
      cJSON_AddStringToObject(o, "summary", b->summary ? b->summary : "");
      if (!ok) cJSON_AddStringToObject(o, "reason", why);
      cJSON *opts = cJSON_AddArrayToObject(o, "options");
      for (int k = 0; k < b->n_options; k++) {
        const ait_option_def *d = &b->options[k];
        cJSON *x = cJSON_CreateObject();
        cJSON_AddItemToArray(opts, x);
        cJSON_AddStringToObject(x, "name", d->name);
        cJSON_AddStringToObject(x, "default", d->def ? d->def : "");
        if (d->choices) cJSON_AddStringToObject(x, "choices", d->choices);
        cJSON_AddStringToObject(x, "help", d->help ? d->help : "");
      }
      continue;
    }
    printf("%-10s %s\n           %s\n", b->name, ok ? "available" : "not available here",
           b->summary);
    if (!ok) printf("           reason: %s\n", why);
    for (int k = 0; k < b->n_options; k++) {
      const ait_option_def *o = &b->options[k];
      printf("           %s=%s%s%s%s  %s\n", o->name, o->def ? o->def : "", o->choices ? " (" : "",
             o->choices ? o->choices : "", o->choices ? ")" : "", o->help ? o->help : "");
    }
  }
  return json ? cli_print_json(root) : 0;
}
