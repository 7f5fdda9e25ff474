/* aitune tune / aitune report. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/model_impl.h"
#include "cli.h"
#include "core/error.h"
#include "core/fileio.h"
#include "onnx/onnx_io.h"
#include "tune/module_impl.h"

static const char usage[] =
    "usage: aitune tune MODEL --out DIR [options]\n"
    "  --strategy S            one-backend | first-wins | max-throughput (default) |\n"
    "                          min-latency | latency-budget\n"
    "  --backends A,B,...      candidate backends with options, e.g. native:threads=2\n"
    "                          (default: every backend available here)\n"
    "  --batch-sizes 1,2,4     batch sizes to profile (default: sweep powers of two)\n"
    "  --latency-budget-ms X   latency budget (latency-budget strategy)\n"
    "  --min-speedup R         a candidate must reach (1+R) x baseline throughput (0.01)\n"
    "  --no-perf-validation    do not require candidates to beat the baseline\n"
    "  --samples DIR           a folder of input_K.pb files; repeat for more samples\n"
    "  --rtol X --atol X       float tolerance against the reference\n"
    "  --precision P           fp32 (default): automatic candidates compute in float32;\n"
    "                          auto: add bf16/fp16/int8 variants where the hardware has\n"
    "                          them and the strategy or memory pressure calls for them;\n"
    "                          any: always add them (each must pass the numeric check)\n"
    "  --min-cosine X --min-top1 X   floors for cosine similarity and classifier top-1\n"
    "                          agreement (quantized candidates are judged by these)\n"
    "  --backend-config FILE   JSON config for the named backends that take one, e.g.\n"
    "                          {\"quantization\": \"int8dq\"} with --backends quant\n"
    "  --warmup N --min-runs N --max-runs N --cv X --time-budget S   profiling\n"
    "  --runoff N              re-time the candidates within 15% of the best in N\n"
    "                          interleaved rounds before choosing (default 7; 0: off)\n"
    "  --cache-dir DIR         cache folder (default $AITUNE_CACHE_DIR or ~/.cache/aitune)\n"
    "  --no-cache              tune afresh: do not reuse or store the decision\n"
    "  --no-history            also do not learn batch sizes from earlier tunes\n"
    "  --quiet                 no progress lines\n"
    "  --force                 replace DIR even when it is not a tuned model folder\n"
    "                          (never when it is or holds MODEL)\n"
    "Writes DIR (decision, report, built backend state, model copy) and prints the report.\n";

void cli_log(void *user, int is_warning, const char *line) {
  fprintf(stderr, "%s%s\n", is_warning ? "warning: " : "  ", line);
}

/* A model is a file, so a folder can only be a tuned model: loading it
 * names what is missing ("decision.json is missing"). */
bool cli_is_tuned_dir(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* The numeric options of `tune`, one row each: parsed whole (no "abc", no
 * "5x") and range-checked, so a typo is an error and not a zero. */
typedef struct num_opt {
  const char *flag;
  bool is_int;
  size_t off; /* in ait_tune_options */
  double lo, hi;
  const char *what;
} num_opt;

#define OPT(flag, is_int, field, lo, hi, what)                                                     \
  { flag, is_int, offsetof(ait_tune_options, field), lo, hi, what }
static const num_opt num_opts[] = {
    OPT("--latency-budget-ms", false, latency_budget_ms, 1e-6, 1e9, "a time in ms > 0"),
    OPT("--min-speedup", false, min_speedup_ratio, -0.99, 1e9, "a ratio > -1"),
    OPT("--min-cosine", false, min_cosine, 0, 1, "a number in [0, 1]"),
    OPT("--min-top1", false, min_top1, 0, 1, "a number in [0, 1]"),
    OPT("--rtol", false, rtol, 0, 1e9, "a number >= 0"),
    OPT("--atol", false, atol, 0, 1e9, "a number >= 0"),
    OPT("--warmup", true, warmup, 0, 1000000, "an integer >= 0"),
    OPT("--min-runs", true, min_runs, 1, 1000000, "an integer >= 1"),
    OPT("--max-runs", true, max_runs, 1, 1000000, "an integer >= 1"),
    OPT("--cv", false, cv_target, 0, 1e6, "a number >= 0"),
    OPT("--time-budget", false, time_budget_s, 0, 1e7, "a time in seconds >= 0"),
    OPT("--runoff", true, runoff_rounds, 0, 10000, "an integer >= 0"),
};
#undef OPT

/* The row for flag, or NULL. */
static const num_opt *find_num_opt(const char *flag) {
  for (size_t i = 0; i < sizeof num_opts / sizeof num_opts[0]; i++)
    if (!strcmp(flag, num_opts[i].flag)) return &num_opts[i];
  return NULL;
}

/* Parse text for row r into o; false when it is not a number in range. */
static bool set_num_opt(const num_opt *r, const char *text, ait_tune_options *o) {
  char *end;
  errno = 0;
  double v = strtod(text, &end);
  if (end == text || *end || errno || !(v >= r->lo && v <= r->hi) || (r->is_int && v != floor(v)))
    return false;
  void *f = (char *)o + r->off;
  if (r->is_int)
    *(int *)f = (int)v;
  else
    *(double *)f = v;
  return true;
}

/* "1,2,4" into vals; count or -1 on a bad list. */
static int parse_ints(const char *s, int *vals, int max) {
  int n = 0;
  while (*s) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || errno || v < 1 || v > (1L << 20) || n == max) return -1;
    vals[n++] = (int)v;
    s = *end == ',' ? end + 1 : end;
    if (*end && *end != ',') return -1;
  }
  return n;
}

static ait_status add_samples_from(ait_module *m, const char *dir) {
  const ait_graph *g = m->model->graph;
  ait_tensor *t[64] = {0};
  ait_tensor_view v[64];
  ait_status st = AIT_OK;
  if (g->n_inputs > 64) return ait_err(AIT_E_UNSUPPORTED, "too many inputs");
  for (int i = 0; i < g->n_inputs && !st; i++) {
    char name[64];
    snprintf(name, sizeof name, "input_%d.pb", i);
    char *p = ait_path_join(dir, name);
    st = p ? cli_read_tensor_for(p, &g->values[g->inputs[i]], &t[i]) : AIT_E_NOMEM;
    free(p);
    if (!st) {
      v[i] = (ait_tensor_view){.dtype = t[i]->dtype, .rank = t[i]->rank, .data = t[i]->data};
      memcpy(v[i].dims, t[i]->dims, sizeof v[i].dims);
    }
  }
  if (!st) st = ait_module_add_sample(m, v, (size_t)g->n_inputs);
  for (int i = 0; i < g->n_inputs; i++)
    ait_tensor_free(t[i]);
  return st;
}

int cmd_tune(int argc, char **argv) {
  const char *model = NULL, *out = NULL, *backend_config = NULL;
  bool force = false;
  const char *sample_dirs[16];
  int n_samples = 0;
  char *backends[32];
  int n_backends = 0, batches[16], n_batches = 0;
  char backend_buf[2048] = "";
  ait_tune_options o;
  ait_tune_options_init(&o);
  o.log = cli_log;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool v = i + 1 < argc;
    if (cli_is_help(a)) {
      fputs(usage, stdout);
      return 0;
    }
    if (!strcmp(a, "--strategy") && v) {
      int s = ait_strategy_parse(argv[++i]);
      if (s < 0) return cli_usage(usage, "unknown strategy '%s'", argv[i]);
      o.strategy = (ait_strategy)s;
    } else if (!strcmp(a, "--backends") && v) {
      snprintf(backend_buf, sizeof backend_buf, "%s", argv[++i]);
      /* split on ',' that starts a new backend: "native:threads=2,eager" has
       * option commas too, so a token containing '=' without ':' continues
       * the previous backend's options */
      for (char *tok = strtok(backend_buf, ","); tok && n_backends < 32; tok = strtok(NULL, ",")) {
        if (n_backends && strchr(tok, '=') && !strchr(tok, ':'))
          tok[-1] = ',';
        else
          backends[n_backends++] = tok;
      }
    } else if (!strcmp(a, "--batch-sizes") && v) {
      if ((n_batches = parse_ints(argv[++i], batches, 16)) < 1)
        return cli_usage(usage,
                         "--batch-sizes expects up to 16 integers in [1, 1048576] like 1,2,4");
    } else if (find_num_opt(a) && v) {
      const num_opt *r = find_num_opt(a);
      if (!set_num_opt(r, argv[++i], &o))
        return cli_usage(usage, "%s expects %s, got '%s'", a, r->what, argv[i]);
    } else if (!strcmp(a, "--precision") && v) {
      o.precision = argv[++i];
      if (strcmp(o.precision, "fp32") && strcmp(o.precision, "auto") && strcmp(o.precision, "any"))
        return cli_usage(usage, "--precision expects fp32, auto or any, got '%s'", o.precision);
    } else if (!strcmp(a, "--backend-config") && v)
      backend_config = argv[++i];
    else if (!strcmp(a, "--no-perf-validation"))
      o.perf_validation = 0;
    else if (!strcmp(a, "--samples") && v && n_samples < 16)
      sample_dirs[n_samples++] = argv[++i];
    else if (!strcmp(a, "--cache-dir") && v)
      o.cache_dir = argv[++i];
    else if (!strcmp(a, "--no-cache"))
      o.use_decision_cache = 0;
    else if (!strcmp(a, "--no-history"))
      o.cache_dir = "";
    else if (!strcmp(a, "--quiet"))
      o.log = NULL;
    else if (!strcmp(a, "--force"))
      force = true;
    else if (!strcmp(a, "--out") && v)
      out = argv[++i];
    else if (a[0] == '-')
      return cli_usage(usage, "unknown or incomplete option '%s'", a);
    else if (!model)
      model = a;
    else
      return cli_usage(usage, "unexpected argument '%s'", a);
  }
  if (!model) return cli_usage(usage, "tune needs a MODEL");
  if (!out) return cli_usage(usage, "tune needs --out DIR");
  if (o.max_runs < o.min_runs)
    return cli_usage(usage, "--max-runs (%d) must be >= --min-runs (%d)", o.max_runs, o.min_runs);
  /* before tuning, not after it: --out must be free to replace */
  ait_status tst = ait_artifact_check_target(out, model, force);
  if (tst) return cli_fail(tst, "cannot write --out");
  /* --backend-config FILE: a JSON config for every named backend that takes
   * one ({"quantization": "int8wo"} or the full form, for quant) */
  char with_cfg[32][1200];
  if (backend_config) {
    char abs[1024];
    if (!realpath(backend_config, abs))
      return cli_fail(ait_err(AIT_E_IO, "cannot find --backend-config %s", backend_config), "tune");
    int changed = 0;
    for (int i = 0; i < n_backends; i++) {
      ait_backend_config probe;
      if (ait_backend_config_parse(backends[i], &probe) ||
          !ait_backend_config_get(&probe, "config"))
        continue;
      snprintf(with_cfg[i], sizeof with_cfg[i], "%s%sconfig=%s", backends[i],
               strchr(backends[i], ':') ? "," : ":", abs);
      backends[i] = with_cfg[i];
      changed++;
    }
    if (!changed)
      return cli_usage(
          usage,
          "--backend-config needs a named backend that takes a config (e.g. --backends quant)");
  }
  if (n_backends) {
    o.backends = (const char *const *)backends;
    o.n_backends = (size_t)n_backends;
  }
  if (n_batches) {
    o.batch_sizes = batches;
    o.n_batch_sizes = (size_t)n_batches;
  }
  ait_module *m = NULL;
  ait_status st = ait_module_create(model, NULL, &m);
  if (st) return cli_fail(st, "cannot load model");
  for (int i = 0; i < n_samples && !st; i++)
    if ((st = add_samples_from(m, sample_dirs[i]))) {
      ait_module_free(m);
      return cli_fail(st, "cannot read samples");
    }
  if (o.log) fprintf(stderr, "tuning %s (%s)\n", model, ait_strategy_name(o.strategy));
  if ((st = ait_module_tune(m, &o))) {
    ait_module_free(m);
    return cli_fail(st, "tuning failed");
  }
  if ((st = ait_module_save_flags(m, out, force ? AIT_SAVE_FORCE : 0))) {
    ait_module_free(m);
    return cli_fail(st, "cannot save the tuned model");
  }
  char *json = NULL;
  int rc = 0;
  if (ait_module_report_json(m, &json) == AIT_OK) rc = cli_print_report(stdout, json);
  printf("tuned model written to %s (run it with: aitune run %s)\n", out, out);
  ait_free(json);
  ait_module_free(m);
  return rc;
}

/* The page for `report --html`: the report and the decision beside it
 * (the manifest covered both when the report was read). */
static int report_html(const char *dir, const char *report, const char *path) {
  char *dp = ait_path_join(dir, "decision.json"), *src = ait_path_join(dir, "report.json");
  void *decision = NULL;
  size_t size = 0;
  if (dp && ait_read_file(dp, &decision, &size) != AIT_OK) decision = NULL; /* drawn as absent */
  int rc = dp && src ? cli_report_html(report, decision, src, path) : 1;
  free(decision);
  free(dp);
  free(src);
  return rc;
}

int cmd_report(int argc, char **argv) {
  static const char use[] = "usage: aitune report DIR [--json] [--html FILE]\n"
                            "  print the tuning report of a tuned model folder;\n"
                            "  --html FILE also writes it as one self-contained page (charts of\n"
                            "  throughput and latency per candidate, the numeric checks, the\n"
                            "  hardware; no script, nothing fetched)\n";
  const char *dir = NULL, *html = NULL;
  bool json = false;
  for (int i = 1; i < argc; i++) {
    if (cli_is_help(argv[i])) {
      fputs(use, stdout);
      return 0;
    }
    if (!strcmp(argv[i], "--json"))
      json = true;
    else if (!strcmp(argv[i], "--html") && i + 1 < argc)
      html = argv[++i];
    else if (argv[i][0] == '-')
      return cli_usage(use, "unknown option '%s'", argv[i]);
    else
      dir = argv[i];
  }
  if (!dir) return cli_usage(use, "report needs a DIR");
  char *text = NULL; /* checked against the folder's manifest first */
  ait_status st = ait_artifact_read_report(dir, &text);
  if (st) return cli_fail(st, "cannot read the report");
  int rc = html ? report_html(dir, text, html) : 0;
  if (!rc && json)
    fputs(text, stdout), fputc('\n', stdout);
  else if (!rc && html)
    printf("HTML report written to %s\n", html);
  else if (!rc)
    rc = cli_print_report(stdout, text);
  free(text);
  return rc;
}

/* aitune batch: the batch-size optimizer for one backend, and what it knows. */
int cmd_batch(int argc, char **argv) {
  static const char use[] =
      "usage: aitune batch MODEL [--backend B] [--latency-budget-ms X] [--samples DIR]\n"
      "                    [--cache-dir DIR]\n"
      "  find the best batch size for MODEL on backend B (default: native when available,\n"
      "  else eager): powers of two until throughput gains fall under 5%, memory would run\n"
      "  short or latency passes the budget; it starts from what earlier runs on this\n"
      "  machine learned (the history under the cache folder) and shows that history.\n";
  const char *model = NULL, *backend = NULL, *samples = NULL;
  ait_tune_options o;
  ait_tune_options_init(&o);
  o.perf_validation = 0;
  o.use_decision_cache = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool v = i + 1 < argc;
    if (cli_is_help(a)) {
      fputs(use, stdout);
      return 0;
    }
    if (!strcmp(a, "--backend") && v)
      backend = argv[++i];
    else if (!strcmp(a, "--latency-budget-ms") && v) {
      const num_opt *r = find_num_opt(a);
      if (!set_num_opt(r, argv[++i], &o))
        return cli_usage(use, "%s expects %s, got '%s'", a, r->what, argv[i]);
    } else if (!strcmp(a, "--samples") && v)
      samples = argv[++i];
    else if (!strcmp(a, "--cache-dir") && v)
      o.cache_dir = argv[++i];
    else if (a[0] == '-')
      return cli_usage(use, "unknown or incomplete option '%s'", a);
    else if (!model)
      model = a;
    else
      return cli_usage(use, "unexpected argument '%s'", a);
  }
  if (!model) return cli_usage(use, "batch needs a MODEL");
  if (!backend) {
    char why[128];
    const ait_backend_iface *n = ait_backend_find("native");
    backend = n && n->available(why, sizeof why) ? "native" : "eager";
  }
  o.strategy = o.latency_budget_ms > 0 ? AIT_STRATEGY_LATENCY_BUDGET : AIT_STRATEGY_MAX_THROUGHPUT;
  o.backends = &backend;
  o.n_backends = 1;
  o.log = cli_log;
  ait_module *m = NULL;
  ait_status st = ait_module_create(model, NULL, &m);
  if (!st && samples) st = add_samples_from(m, samples);
  if (!st) st = ait_module_tune(m, &o);
  char *json = NULL;
  if (!st) st = ait_module_report_json(m, &json);
  if (st) {
    ait_module_free(m);
    return cli_fail(st, "batch search failed");
  }
  cJSON *r = cJSON_Parse(json);
  const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r, "candidates"), 0);
  const cJSON *sel = cJSON_GetObjectItemCaseSensitive(r, "selection");
  const cJSON *sw = cJSON_GetObjectItemCaseSensitive(c, "batch_sweep"), *p;
  printf("%s on %s: best batch %d (%.1f samples/s, %.3f ms)\n", model, backend,
         cJSON_GetObjectItemCaseSensitive(sel, "batch")->valueint,
         cJSON_GetObjectItemCaseSensitive(sel, "throughput")->valuedouble,
         cJSON_GetObjectItemCaseSensitive(sel, "latency_ms")->valuedouble);
  if (sw)
    printf("sweep %s at batch %d: %d size(s) measured now, %d from the history\n",
           cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sw, "learned")) ? "learned, started"
                                                                         : "fresh, started",
           cJSON_GetObjectItemCaseSensitive(sw, "start")->valueint,
           cJSON_GetObjectItemCaseSensitive(sw, "profiled")->valueint,
           cJSON_GetObjectItemCaseSensitive(sw, "from_history")->valueint);
  printf("  %6s %10s %12s  %s\n", "batch", "median ms", "samples/s", "source");
  cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(c, "profile"))
      printf("  %6d %10.3f %12.1f  %s\n", cJSON_GetObjectItemCaseSensitive(p, "batch")->valueint,
             cJSON_GetObjectItemCaseSensitive(p, "median_ms")->valuedouble,
             cJSON_GetObjectItemCaseSensitive(p, "throughput")->valuedouble,
             cJSON_GetObjectItemCaseSensitive(p, "source")->valuestring);
  cJSON_Delete(r);
  ait_free(json);
  ait_module_free(m);
  return 0;
}
