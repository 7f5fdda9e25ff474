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
#include "tune/artifact.h"
#include "tune/tune.h"

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
    "  --device-io             the tuned model's inputs and outputs will live in CUDA\n"
    "                          memory (io_mem): only backends that read it (cuda) are\n"
    "                          candidates, timed and picked by device time\n"
    "  --inputs DIR            a folder of input_K.pb or input_K.npy files: one sample;\n"
    "                          repeat for more (--samples is the same)\n"
    "  --shape NAME=MIN:OPT:MAX  tune over a range of an input axis: NAME is a symbolic\n"
    "                          dim (seq) or INPUT:AXIS (input_ids:1); samples are made at\n"
    "                          OPT (profiled), MIN and MAX (validated); NAME=MIN:MAX means\n"
    "                          OPT = MIN. On the batch axis it also sets the batch sizes\n"
    "                          (powers of two from MIN to MAX) unless --batch-sizes is given\n"
    "  --dim NAME=V            the same for one size (MIN = OPT = MAX = V)\n"
    "  --int-range [INPUT=]LO:HI  random integer inputs in [LO, HI] (default 0:1; ids,\n"
    "                          masks and indices)\n"
    "  --seed N                seed of the random inputs (default 1)\n"
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
    "  --json                  print the report as JSON (schemas/report.schema.json)\n"
    "  --force                 replace DIR even when it is not a tuned model folder\n"
    "                          (never when it is or holds MODEL)\n" CLI_LOAD_USAGE
    "                          (`aitune run DIR` needs the same ones)\n"
    "Options take their value as --opt VALUE or --opt=VALUE.\n"
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

/* The row whose flag argv[*i] is (`--flag V` or `--flag=V`), with *val
 * its value; NULL for another argument. */
static const num_opt *take_num_opt(int argc, char **argv, int *i, const char **val) {
  for (size_t k = 0; k < sizeof num_opts / sizeof num_opts[0]; k++)
    if (cli_opt(argc, argv, i, num_opts[k].flag, val)) return &num_opts[k];
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

static ait_status add_sample(ait_module *m, const ait_sample *s) {
  ait_tensor_view v[64];
  if (s->n_inputs > 64) return ait_err(AIT_E_UNSUPPORTED, "too many inputs");
  for (int i = 0; i < s->n_inputs; i++) {
    const ait_tensor *t = s->inputs[i];
    v[i] = (ait_tensor_view){.dtype = t->dtype, .rank = t->rank, .data = t->data};
    memcpy(v[i].dims, t->dims, sizeof v[i].dims);
  }
  return ait_module_add_sample(m, v, (size_t)s->n_inputs);
}

/* The samples of a tune: each --inputs folder (or, with --dim, --shape,
 * --int-range or --seed and no folder, random values) at OPT, then at MIN
 * and MAX where a --shape range has them. Without any of these, none: the
 * library makes its own random one. */
static ait_status add_samples(ait_module *m, const char *const *dirs, int n_dirs,
                              const cli_inputs *ci) {
  const ait_graph *g = ait_model_graph(ait_module_model(m));
  bool lo = false, hi = false;
  for (int k = 0; k < ci->n_dims; k++) {
    lo |= ci->dims[k].min != ci->dims[k].opt;
    hi |= ci->dims[k].max != ci->dims[k].opt;
  }
  const cli_point points[3] = {CLI_AT_OPT, CLI_AT_MIN, CLI_AT_MAX};
  bool want[3] = {true, lo, hi};
  /* --int-range or --seed alone also make the random sample here */
  int n = n_dirs ? n_dirs : ci->n_dims || ci->n_ints || ci->seed ? 1 : 0;
  if (n * (1 + lo + hi) > 16)
    return ait_err(AIT_E_INVALID_ARG, "%d --inputs folders at %d sizes each are over 16 samples", n,
                   1 + lo + hi);
  for (int d = 0; d < n; d++)
    for (int p = 0; p < 3; p++) {
      if (!want[p]) continue;
      cli_inputs c = *ci;
      c.seed = (ci->seed ? ci->seed : 1) + (unsigned long long)(d * 3 + p);
      ait_sample s = {0};
      ait_status st = cli_build_sample(g, n_dirs ? dirs[d] : NULL, &c, points[p], &s);
      if (!st) st = add_sample(m, &s);
      ait_sample_free(&s);
      if (st) return st;
    }
  return AIT_OK;
}

/* A --shape range on the batch axis (axis 0 of every input with a rank,
 * all dynamic): the batch sizes to profile are the powers of two from MIN
 * to MAX (and MAX). Count of sizes written, 0 when no range names it. */
static int shape_batches(const ait_graph *g, const cli_inputs *ci, int *out, int max) {
  for (int k = 0; k < ci->n_dims; k++) {
    const cli_dim *d = &ci->dims[k];
    if (d->min == d->max) continue;
    bool all = true;
    int ranked = 0;
    for (int i = 0; i < g->n_inputs; i++) {
      const ait_value *v = &g->values[g->inputs[i]];
      if (v->rank < 1) continue;
      ranked++;
      char axis0[160];
      snprintf(axis0, sizeof axis0, "%s:0", v->name);
      bool named = (v->dims[0].sym && !strcmp(v->dims[0].sym, d->name)) || !strcmp(axis0, d->name);
      all &= named && v->dims[0].v < 0;
    }
    if (!all || !ranked) continue;
    int n = 0;
    for (int64_t b = d->min; b <= d->max && n < max - 1; b *= 2)
      out[n++] = (int)b;
    if (out[n - 1] != d->max) out[n++] = (int)d->max;
    return n;
  }
  return 0;
}

int cmd_tune(int argc, char **argv) {
  const char *model = NULL, *out = NULL, *backend_config = NULL, *val;
  static const char *const inputs_flag[] = {"--inputs", "--samples", NULL};
  bool force = false, json = false;
  const char *sample_dirs[16];
  int n_samples = 0, rc;
  char *backends[32];
  int n_backends = 0, batches[16], n_batches = 0;
  char backend_buf[2048] = "";
  cli_inputs ci = {0};
  ait_tune_options o;
  ait_tune_options_init(&o);
  o.log = cli_log;
  ait_load_options lo;
  ait_load_options_init(&lo);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const num_opt *r;
    if (cli_is_help(a)) {
      fputs(usage, stdout);
      return 0;
    }
    if (cli_load_limit(usage, argc, argv, &i, &lo, &rc)) {
      if (rc) return rc;
    } else if (cli_opt(argc, argv, &i, "--strategy", &val)) {
      int s = ait_strategy_parse(val);
      if (s < 0) return cli_usage(usage, "unknown strategy '%s'", val);
      o.strategy = (ait_strategy)s;
    } else if (cli_opt(argc, argv, &i, "--backends", &val)) {
      snprintf(backend_buf, sizeof backend_buf, "%s", val);
      n_backends = 0;
      /* split on ',' that starts a new backend: "native:threads=2,eager" has
       * option commas too, so a token containing '=' without ':' continues
       * the previous backend's options */
      for (char *tok = strtok(backend_buf, ","); tok && n_backends < 32; tok = strtok(NULL, ",")) {
        if (n_backends && strchr(tok, '=') && !strchr(tok, ':'))
          tok[-1] = ',';
        else
          backends[n_backends++] = tok;
      }
    } else if (cli_opt(argc, argv, &i, "--batch-sizes", &val)) {
      if ((n_batches = parse_ints(val, batches, 16)) < 1)
        return cli_usage(usage,
                         "--batch-sizes expects up to 16 integers in [1, 1048576] like "
                         "1,2,4, got '%s'",
                         val);
    } else if ((r = take_num_opt(argc, argv, &i, &val))) {
      if (!set_num_opt(r, val, &o))
        return cli_usage(usage, "%s expects %s, got '%s'", r->flag, r->what, val);
    } else if (cli_opt(argc, argv, &i, "--precision", &val)) {
      o.precision = val;
      if (strcmp(val, "fp32") && strcmp(val, "auto") && strcmp(val, "any"))
        return cli_usage(usage, "--precision expects fp32, auto or any, got '%s'", val);
    } else if (cli_opt(argc, argv, &i, "--backend-config", &val))
      backend_config = val;
    else if (cli_opt_any(argc, argv, &i, inputs_flag, &val)) {
      if (n_samples == 16) return cli_usage(usage, "at most 16 --inputs folders");
      sample_dirs[n_samples++] = val;
    } else if (cli_opt(argc, argv, &i, "--shape", &val)) {
      if ((rc = cli_parse_dim(usage, "--shape", val, true, &ci))) return rc;
    } else if (cli_opt(argc, argv, &i, "--dim", &val)) {
      if ((rc = cli_parse_dim(usage, "--dim", val, false, &ci))) return rc;
    } else if (cli_opt(argc, argv, &i, "--int-range", &val)) {
      if ((rc = cli_parse_int_range(usage, val, &ci))) return rc;
    } else if (cli_opt(argc, argv, &i, "--seed", &val)) {
      long long seed;
      if ((rc = cli_int(usage, "--seed", val, 0, CLI_NO_MAX, &seed))) return rc;
      ci.seed = (unsigned long long)seed;
    } else if (cli_opt(argc, argv, &i, "--cache-dir", &val))
      o.cache_dir = val;
    else if (!strcmp(a, "--no-perf-validation"))
      o.perf_validation = 0;
    else if (!strcmp(a, "--device-io"))
      o.io_mem = AIT_MEM_CUDA;
    else if (!strcmp(a, "--no-cache"))
      o.use_decision_cache = 0;
    else if (!strcmp(a, "--no-history"))
      o.cache_dir = "";
    else if (!strcmp(a, "--quiet"))
      o.log = NULL;
    else if (!strcmp(a, "--json"))
      json = true;
    else if (!strcmp(a, "--force"))
      force = true;
    else if (cli_opt(argc, argv, &i, "--out", &val))
      out = val;
    else if (a[0] == '-' || model)
      return cli_bad_arg(usage, a);
    else
      model = a;
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
  ait_status st = ait_module_create_opts(model, NULL, &lo, &m);
  if (st) return cli_fail(st, "cannot load model");
  if ((st = add_samples(m, sample_dirs, n_samples, &ci))) {
    ait_module_free(m);
    return cli_fail(st, "cannot make the samples");
  }
  if (!n_batches &&
      (n_batches = shape_batches(ait_model_graph(ait_module_model(m)), &ci, batches, 16))) {
    o.batch_sizes = batches;
    o.n_batch_sizes = (size_t)n_batches;
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
  char *json_text = NULL;
  rc = 0;
  if ((st = ait_module_report_json(m, &json_text)))
    rc = cli_fail(st, "no report");
  else if (json)
    printf("%s\n", json_text);
  else
    rc = cli_print_report(stdout, json_text);
  /* with --json, stdout holds the JSON alone */
  fprintf(json ? stderr : stdout, "tuned model written to %s (run it with: aitune run %s)\n", out,
          out);
  ait_free(json_text);
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
                            "  print the tuning report of a tuned model folder\n"
                            "  --json       the report as JSON (schemas/report.schema.json)\n"
                            "  --html FILE  also write it as one self-contained page (charts of\n"
                            "               throughput and latency per candidate, the numeric\n"
                            "               checks, the hardware; no script, nothing fetched)\n";
  const char *dir = NULL, *html = NULL;
  bool json = false;
  for (int i = 1; i < argc; i++) {
    if (cli_is_help(argv[i])) {
      fputs(use, stdout);
      return 0;
    }
    if (!strcmp(argv[i], "--json"))
      json = true;
    else if (cli_opt(argc, argv, &i, "--html", &html))
      ;
    else if (argv[i][0] == '-' || dir)
      return cli_bad_arg(use, argv[i]);
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

static double jnum(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsNumber(v) ? v->valuedouble : 0;
}
static const char *jstr(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsString(v) ? v->valuestring : "";
}

/* What `aitune batch` found, from the tuning report r (schemas/batch.schema.json). */
static cJSON *batch_json(const char *model, const char *backend, const cJSON *r) {
  const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r, "candidates"), 0);
  const cJSON *sel = cJSON_GetObjectItemCaseSensitive(r, "selection"), *p;
  const cJSON *sw = cJSON_GetObjectItemCaseSensitive(c, "batch_sweep");
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "model", model);
  cJSON_AddStringToObject(j, "backend", backend);
  cJSON_AddStringToObject(j, "status", jstr(c, "status"));
  cJSON_AddNumberToObject(j, "batch", jnum(sel, "batch"));
  cJSON_AddNumberToObject(j, "throughput", jnum(sel, "throughput"));
  cJSON_AddNumberToObject(j, "latency_ms", jnum(sel, "latency_ms"));
  if (sw)
    cJSON_AddItemToObject(j, "sweep", cJSON_Duplicate(sw, 1));
  else
    cJSON_AddNullToObject(j, "sweep");
  cJSON *prof = cJSON_AddArrayToObject(j, "profile");
  cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(c, "profile")) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToArray(prof, o);
    cJSON_AddNumberToObject(o, "batch", jnum(p, "batch"));
    cJSON_AddNumberToObject(o, "median_ms", jnum(p, "median_ms"));
    cJSON_AddNumberToObject(o, "min_ms", jnum(p, "min_ms"));
    cJSON_AddNumberToObject(o, "throughput", jnum(p, "throughput"));
    cJSON_AddStringToObject(o, "source", jstr(p, "source"));
  }
  return j;
}

/* aitune batch: the batch-size optimizer for one backend, and what it knows. */
int cmd_batch(int argc, char **argv) {
  static const char use[] =
      "usage: aitune batch MODEL [--backend B] [--latency-budget-ms X] [--inputs DIR]\n"
      "                    [--dim NAME=V]... [--cache-dir DIR] [--json]\n"
      "  find the best batch size for MODEL on backend B (default: native when available,\n"
      "  else eager): powers of two until throughput gains fall under 5%, memory would run\n"
      "  short or latency passes the budget; it starts from what earlier runs on this\n"
      "  machine learned (the history under the cache folder) and shows that history.\n"
      "  --inputs DIR   input_K.pb or input_K.npy files (--samples is the same)\n"
      "  --dim NAME=V   size a symbolic dim or INPUT:AXIS of the inputs\n"
      "  --json         one JSON object (schemas/batch.schema.json)\n";
  const char *model = NULL, *backend = NULL, *samples = NULL, *val;
  static const char *const inputs_flag[] = {"--inputs", "--samples", NULL};
  bool json = false;
  int rc;
  cli_inputs ci = {0};
  ait_tune_options o;
  ait_tune_options_init(&o);
  o.perf_validation = 0;
  o.use_decision_cache = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const num_opt *r;
    if (cli_is_help(a)) {
      fputs(use, stdout);
      return 0;
    }
    if (cli_opt(argc, argv, &i, "--backend", &val))
      backend = val;
    else if (cli_opt(argc, argv, &i, "--latency-budget-ms", &val)) {
      r = &num_opts[0]; /* the table's first row */
      if (!set_num_opt(r, val, &o))
        return cli_usage(use, "%s expects %s, got '%s'", r->flag, r->what, val);
    } else if (cli_opt_any(argc, argv, &i, inputs_flag, &val))
      samples = val;
    else if (cli_opt(argc, argv, &i, "--dim", &val)) {
      if ((rc = cli_parse_dim(use, "--dim", val, false, &ci))) return rc;
    } else if (cli_opt(argc, argv, &i, "--cache-dir", &val))
      o.cache_dir = val;
    else if (!strcmp(a, "--json"))
      json = true;
    else if (a[0] == '-' || model)
      return cli_bad_arg(use, a);
    else
      model = a;
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
  if (!st && (samples || ci.n_dims)) st = add_samples(m, samples ? &samples : NULL, !!samples, &ci);
  if (!st) st = ait_module_tune(m, &o);
  char *text = NULL;
  if (!st) st = ait_module_report_json(m, &text);
  if (st) {
    ait_module_free(m);
    return cli_fail(st, "batch search failed");
  }
  cJSON *r = cJSON_Parse(text);
  cJSON *j = r ? batch_json(model, backend, r) : NULL;
  cJSON_Delete(r);
  ait_free(text);
  ait_module_free(m);
  if (!j) return cli_fail(ait_err(AIT_E_NOMEM, "out of memory"), "batch");
  if (json) return cli_print_json(j);
  const cJSON *sw = cJSON_GetObjectItemCaseSensitive(j, "sweep"), *p;
  printf("%s on %s: best batch %d (%.1f samples/s, %.3f ms)\n", model, backend,
         (int)jnum(j, "batch"), jnum(j, "throughput"), jnum(j, "latency_ms"));
  if (cJSON_IsObject(sw))
    printf("sweep %s at batch %d: %d size(s) measured now, %d from the history\n",
           cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sw, "learned")) ? "learned, started"
                                                                         : "fresh, started",
           (int)jnum(sw, "start"), (int)jnum(sw, "profiled"), (int)jnum(sw, "from_history"));
  printf("  %6s %10s %12s  %s\n", "batch", "median ms", "samples/s", "source");
  cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(j, "profile"))
      printf("  %6d %10.3f %12.1f  %s\n", (int)jnum(p, "batch"), jnum(p, "median_ms"),
             jnum(p, "throughput"), jstr(p, "source"));
  cJSON_Delete(j);
  return 0;
}
