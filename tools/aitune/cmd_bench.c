/* aitune bench: time one backend (or a tuned model) in-process, the way the
 * tuner's profiler does; aitune backends: list the backends and options. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/error.h"
#include "core/fileio.h"
#include "tune/module_impl.h"

static const char usage[] =
    "usage: aitune bench MODEL|DIR [--backend B] [--batch N] [--inputs DIR] [--dim NAME=VALUE]...\n"
    "                    [--warmup N] [--iters N] [--json]\n"
    "  MODEL    an .onnx file, run on --backend (default eager)\n"
    "  DIR      a tuned model folder, run on its selected backend\n"
    "  --batch N    batch size (default: the tuned batch, or 1); needs a batch axis\n"
    "  --warmup N   untimed runs first (default 5)\n"
    "  --iters N    timed runs (default 50)\n"
    "  --json       print one JSON object: latency_ms {median,p90,p99,min,mean},\n"
    "               throughput (samples/s), batch, backend, iters, and memory\n"
    "               {weights_bytes,work_bytes} where the backend reports what it\n"
    "               holds (cuda: weights and activation arenas on the device)\n"
    "  --inputs DIR input_K.pb files to time on (default: seeded random values of the\n"
    "               declared shapes, symbolic dims 1)\n"
    "  --dim NAME=VALUE  size a symbolic axis of the inputs, e.g. --dim seq=128\n";

/* input_K.pb files of dir as a sample. */
static ait_status read_sample(const ait_graph *g, const char *dir, ait_sample *out) {
  out->n_inputs = g->n_inputs;
  out->inputs = calloc((size_t)g->n_inputs + 1, sizeof *out->inputs);
  if (!out->inputs) return ait_err(AIT_E_NOMEM, "out of memory");
  for (int i = 0; i < g->n_inputs; i++) {
    char name[64];
    snprintf(name, sizeof name, "input_%d.pb", i);
    char *p = ait_path_join(dir, name);
    ait_status st =
        p ? cli_read_tensor_for(p, &g->values[g->inputs[i]], &out->inputs[i]) : AIT_E_NOMEM;
    free(p);
    if (st) return st;
  }
  return AIT_OK;
}

ait_status cli_make_sample(const ait_graph *g, const char *in_dir, char (*dim_name)[64],
                           const int64_t *dim_value, int n_dims, ait_sample *base,
                           ait_graph_spec *spec) {
  ait_status st = in_dir ? read_sample(g, in_dir, base) : ait_sample_random(g, 1, base);
  if (st) return st;
  ait_spec_detect(g, base, 1, spec);
  /* --dim NAME=VALUE sizes a symbolic axis (e.g. seq=128) */
  for (int d = 0; d < n_dims; d++) {
    int axis = -1;
    for (int a = 0; a < spec->n_axes && axis < 0; a++)
      if (!strcmp(spec->axes[a].sym, dim_name[d])) axis = a;
    if (axis < 0)
      return ait_err(AIT_E_INVALID_ARG, "--dim %s: the model has no dynamic axis named '%s'",
                     dim_name[d], dim_name[d]);
    ait_sample sized = {0};
    AIT_TRY(ait_sample_resize(base, spec, axis, dim_value[d], &sized));
    ait_sample_free(base);
    *base = sized;
  }
  return AIT_OK;
}

typedef struct bench_ctx {
  const ait_backend_iface *b;
  void *state;
  ait_sample *in;
  ait_tensor **out;
  int n_out;
} bench_ctx;

static ait_status bench_once(void *p) {
  bench_ctx *c = p;
  ait_status st =
      c->b->infer(c->state, (const ait_tensor *const *)c->in->inputs, c->in->n_inputs, c->out);
  for (int i = 0; i < c->n_out; i++) {
    ait_tensor_free(c->out[i]);
    c->out[i] = NULL;
  }
  return st;
}

int cmd_bench(int argc, char **argv) {
  const char *path = NULL, *backend = NULL, *in_dir = NULL;
  char dim_name[8][64];
  int64_t dim_value[8];
  int n_dims = 0;
  int batch = 0, warmup = 5, iters = 50;
  bool json = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool v = i + 1 < argc;
    if (cli_is_help(a)) {
      fputs(usage, stdout);
      return 0;
    }
    if (!strcmp(a, "--backend") && v)
      backend = argv[++i];
    else if (!strcmp(a, "--batch") && v)
      batch = atoi(argv[++i]);
    else if (!strcmp(a, "--warmup") && v)
      warmup = atoi(argv[++i]);
    else if (!strcmp(a, "--iters") && v)
      iters = atoi(argv[++i]);
    else if (!strcmp(a, "--inputs") && v)
      in_dir = argv[++i];
    else if (!strcmp(a, "--dim") && v) {
      const char *spec = argv[++i], *eq = strchr(spec, '=');
      if (!eq || eq == spec || eq - spec >= 64 || n_dims == 8 || atoll(eq + 1) < 1)
        return cli_usage(usage, "--dim expects NAME=VALUE with VALUE >= 1, got '%s'", spec);
      snprintf(dim_name[n_dims], 64, "%.*s", (int)(eq - spec), spec);
      dim_value[n_dims++] = atoll(eq + 1);
    } else if (!strcmp(a, "--json"))
      json = true;
    else if (a[0] == '-')
      return cli_usage(usage, "unknown or incomplete option '%s'", a);
    else if (!path)
      path = a;
    else
      return cli_usage(usage, "unexpected argument '%s'", a);
  }
  if (!path) return cli_usage(usage, "bench needs a MODEL or DIR");
  if (iters < 1 || warmup < 0 || batch < 0)
    return cli_usage(usage, "--iters must be >= 1, --warmup and --batch >= 0");
  ait_module *m = NULL;
  ait_status st;
  bool tuned = cli_is_tuned_dir(path);
  if (tuned) {
    if (backend) return cli_usage(usage, "--backend does not apply to a tuned model folder");
    st = ait_module_load(path, cli_log, NULL, &m);
  } else {
    st = ait_module_create(path, NULL, &m);
    if (!st) {
      ait_backend_config cfg;
      st = ait_backend_config_parse(backend ? backend : "eager", &cfg);
      char why[256];
      if (!st && !cfg.iface->available(why, sizeof why))
        st = ait_err(AIT_E_UNSUPPORTED, "backend %s is not available here: %s", cfg.iface->name,
                     why);
      if (!st) st = ait_runner_build(&cfg, m->model->graph, NULL, &m->run);
      if (!st) {
        m->cfg = cfg;
        ait_backend_describe(&cfg, m->desc, sizeof m->desc);
      } else
        m->run.state = NULL;
    }
  }
  if (st) {
    ait_module_free(m);
    return cli_fail(st, "cannot prepare the benchmark");
  }
  const ait_graph *g = m->model->graph;
  ait_sample base = {0}, in = {0};
  ait_graph_spec spec;
  st = cli_make_sample(g, in_dir, dim_name, dim_value, n_dims, &base, &spec);
  if (st) {
    ait_sample_free(&base);
    ait_module_free(m);
    return cli_fail(st, "cannot make inputs");
  }
  if (!batch) batch = tuned && m->batch > 0 ? m->batch : 1;
  if (batch != 1 && !spec.has_batch) {
    ait_sample_free(&base);
    ait_module_free(m);
    return cli_fail(ait_err(AIT_E_INVALID_ARG, "--batch %d: the model has no batch axis", batch),
                    "bench");
  }
  st = ait_sample_resize(&base, &spec, -1, batch, &in);
  ait_tensor **outs = calloc((size_t)g->n_outputs + 1, sizeof *outs);
  bench_ctx ctx = {m->run.iface, m->run.state, &in, outs, g->n_outputs};
  ait_profile_opts po = {.warmup = warmup, .min_runs = iters, .max_runs = iters};
  ait_latency_stats s;
  if (!st) st = outs ? ait_profile(bench_once, &ctx, batch, &po, &s) : AIT_E_NOMEM;
  int rc = 0;
  /* what the backend holds, where it says (cuda: device bytes) */
  int64_t wbytes = -1, work = -1;
  if (!st && m->run.iface->memory) m->run.iface->memory(m->run.state, &wbytes, &work);
  char mem[128] = "";
  if (st)
    rc = cli_fail(st, "benchmark failed");
  else if (json) {
    if (wbytes >= 0)
      snprintf(mem, sizeof mem, ",\"memory\":{\"weights_bytes\":%lld,\"work_bytes\":%lld}",
               (long long)wbytes, (long long)work);
    printf("{\"backend\":\"%s\",\"batch\":%d,\"iters\":%d,\"latency_ms\":{\"median\":%.6f,\"p90\":%"
           ".6f,"
           "\"p99\":%.6f,\"min\":%.6f,\"mean\":%.6f},\"throughput\":%.3f%s}\n",
           m->desc, batch, s.runs, s.median_ms, s.p90_ms, s.p99_ms, s.min_ms, s.mean_ms,
           s.throughput, mem);
  } else {
    if (wbytes >= 0)
      snprintf(mem, sizeof mem, "; weights %.1f MiB, working memory %.1f MiB",
               (double)wbytes / 1048576.0, (double)work / 1048576.0);
    printf("%s on %s, batch %d, %d runs: median %.3f ms, p90 %.3f ms, p99 %.3f ms, %.1f "
           "samples/s%s\n",
           path, m->desc, batch, s.runs, s.median_ms, s.p90_ms, s.p99_ms, s.throughput, mem);
  }
  free(outs);
  ait_sample_free(&in);
  ait_sample_free(&base);
  ait_module_free(m);
  return rc;
}

int cmd_backends(int argc, char **argv) {
  if (argc > 1 && cli_is_help(argv[1])) {
    printf(
        "usage: aitune backends\n  list the backends, whether they run here, and their options\n");
    return 0;
  }
  for (int i = 0; i < ait_backend_count(); i++) {
    const ait_backend_iface *b = ait_backend_at(i);
    char why[256] = "";
    bool ok = b->available(why, sizeof why);
    printf("%-10s %s\n           %s\n", b->name, ok ? "available" : "not available here",
           b->summary);
    if (!ok) printf("           reason: %s\n", why);
    for (int k = 0; k < b->n_options; k++) {
      const ait_option_def *o = &b->options[k];
      printf("           %s=%s%s%s%s  %s\n", o->name, o->def ? o->def : "", o->choices ? " (" : "",
             o->choices ? o->choices : "", o->choices ? ")" : "", o->help ? o->help : "");
    }
  }
  return 0;
}
