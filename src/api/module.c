/* Public module API: samples, tuning (with the decision cache), saving,
 * loading and running a tuned model. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "core/fileio.h"
#include "hw/fingerprint.h"
#include "runtime/eager.h"
#include "tune/module_impl.h"

ait_status ait_tuner_run(ait_module *m, const ait_tune_options *o);

static const char *const strategy_names[] = {"one-backend", "first-wins", "max-throughput",
                                             "min-latency", "latency-budget"};

const char *ait_strategy_name(ait_strategy s) {
  return (unsigned)s < 5 ? strategy_names[s] : "unknown";
}

int ait_strategy_parse(const char *name) {
  for (int i = 0; name && i < 5; i++)
    if (!strcmp(name, strategy_names[i])) return i;
  return -1;
}

void ait_tune_options_init(ait_tune_options *o) {
  memset(o, 0, sizeof *o);
  o->strategy = AIT_STRATEGY_MAX_THROUGHPUT;
  o->min_speedup_ratio = 0.01;
  o->perf_validation = 1;
  o->warmup = 3;
  o->min_runs = 10;
  o->max_runs = 200;
  o->cv_target = 0.05;
  o->time_budget_s = 2.0;
  o->runoff_rounds = 7;
  o->use_decision_cache = 1;
}

void ait_free(void *p) { free(p); }

void ait_module_logf(const ait_module *m, int is_warning, const char *fmt, ...) {
  if (!m->log) return;
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  m->log(m->log_user, is_warning, line);
}

ait_module *ait_module_alloc(const char *path, const char *name, ait_status *st);
ait_module *ait_module_alloc(const char *path, const char *name, ait_status *st) {
  ait_module *m = calloc(1, sizeof *m);
  if (!m) {
    *st = ait_err(AIT_E_NOMEM, "out of memory");
    return NULL;
  }
  if ((*st = ait_model_load(path, &m->model)) != AIT_OK) {
    free(m);
    return NULL;
  }
  if (ait_sha256_file(path, m->model_sha) != 0) {
    *st = ait_err(AIT_E_IO, "cannot read '%s' to hash it", path);
    ait_module_free(m);
    return NULL;
  }
  const char *base = strrchr(path, '/');
  m->name = strdup(name ? name : base ? base + 1 : path);
  m->model_path = strdup(path);
  ait_backend_config_parse("eager", &m->cfg);
  snprintf(m->desc, sizeof m->desc, "eager");
  if (!m->name || !m->model_path) {
    *st = ait_err(AIT_E_NOMEM, "out of memory");
    ait_module_free(m);
    return NULL;
  }
  *st = AIT_OK;
  return m;
}

ait_status ait_module_create(const char *path, const char *name, ait_module **out) {
  if (!path || !out)
    return ait_err(AIT_E_INVALID_ARG, "ait_module_create: path and out are required");
  ait_status st;
  *out = ait_module_alloc(path, name, &st);
  return st;
}

static void clear_outputs(ait_module *m) {
  for (int i = 0; i < m->n_outputs; i++)
    ait_tensor_free(m->outputs[i]);
  free(m->outputs);
  m->outputs = NULL;
  m->n_outputs = 0;
}

static void drop_state(ait_module *m) {
  clear_outputs(m); /* they may borrow the state's memory */
  ait_runner_destroy(&m->run);
  if (m->ref_state) ait_backend_find("eager")->destroy(m->ref_state);
  m->ref_state = NULL;
}

void ait_module_free(ait_module *m) {
  if (!m) return;
  clear_outputs(m);
  drop_state(m);
  for (int i = 0; i < m->n_samples; i++)
    ait_sample_free(&m->samples[i]);
  ait_model_free(m->model);
  free(m->report_json);
  free(m->name);
  free(m->model_path);
  free(m);
}

ait_status ait_module_load(const char *dir, ait_log_fn log, void *log_user, ait_module **out) {
  if (!dir || !out) return ait_err(AIT_E_INVALID_ARG, "ait_module_load: dir and out are required");
  return ait_artifact_load(dir, log, log_user, false, out);
}

/* Wrap caller views as borrowed tensors, checked against the declarations. */
static ait_status wrap_inputs(const ait_module *m, const ait_tensor_view *in, size_t n,
                              ait_tensor **wrapped) {
  const ait_graph *g = m->model->graph;
  if (n != (size_t)g->n_inputs || (n && !in))
    return ait_err(AIT_E_INVALID_ARG, "the model takes %d inputs, got %zu", g->n_inputs, n);
  for (size_t i = 0; i < n; i++) {
    AIT_TRY(ait_api_check_input(&g->values[g->inputs[i]], &in[i], i));
    if (!(wrapped[i] = ait_tensor_wrap(in[i].dtype, in[i].rank, in[i].dims, in[i].data)))
      return ait_err_prefix(AIT_E_INVALID_ARG, "input %zu", i);
  }
  return AIT_OK;
}

static ait_status record_sample(ait_module *m, ait_tensor *const *in, int n) {
  if (m->n_samples == AIT_MAX_SAMPLES) return AIT_OK; /* enough to tune on */
  ait_sample *s = &m->samples[m->n_samples];
  s->inputs = calloc((size_t)n + 1, sizeof *s->inputs);
  if (!s->inputs) return ait_err(AIT_E_NOMEM, "out of memory");
  s->n_inputs = n;
  for (int i = 0; i < n; i++)
    if (!(s->inputs[i] = ait_tensor_clone(in[i]))) {
      ait_sample_free(s);
      return AIT_E_NOMEM;
    }
  m->n_samples++;
  return AIT_OK;
}

ait_status ait_module_add_sample(ait_module *m, const ait_tensor_view *inputs, size_t n) {
  if (!m) return ait_err(AIT_E_INVALID_ARG, "module is NULL");
  ait_tensor *w[64] = {0};
  if (n > 64) return ait_err(AIT_E_UNSUPPORTED, "at most 64 inputs");
  ait_status st = wrap_inputs(m, inputs, n, w);
  if (!st) st = record_sample(m, w, (int)n);
  for (size_t i = 0; i < n; i++)
    ait_tensor_free(w[i]);
  return st;
}

/* An input outside the tuned range of a dynamic axis? (warn once) */
static void check_range(ait_module *m, ait_tensor *const *in) {
  if (m->warned_range || !m->tuned) return;
  for (int a = 0; a < m->spec.n_axes; a++) {
    const ait_axis *x = &m->spec.axes[a];
    int64_t v = in[x->input]->dims[x->axis];
    if (v >= x->min && v <= x->max) continue;
    ait_module_logf(m, 1,
                    "input %d axis %d is %lld, outside the tuned range [%lld, %lld]; it runs on %s "
                    "without tuning for this size (reported once)",
                    x->input, x->axis, (long long)v, (long long)x->min, (long long)x->max, m->desc);
    m->warned_range = true;
    return;
  }
}

ait_status ait_module_infer(ait_module *m, const ait_tensor_view *inputs, size_t n) {
  if (!m) return ait_err(AIT_E_INVALID_ARG, "module is NULL");
  const ait_graph *g = m->model->graph;
  ait_tensor *w[64] = {0};
  if (n > 64) return ait_err(AIT_E_UNSUPPORTED, "at most 64 inputs");
  ait_status st = wrap_inputs(m, inputs, n, w);
  ait_tensor **outs = calloc((size_t)g->n_outputs + 1, sizeof *outs);
  if (!outs && !st) st = ait_err(AIT_E_NOMEM, "out of memory");
  if (!st && !m->tuned) {
    /* before tuning: the reference runs, and the call becomes a sample */
    st = ait_eager_run(g, (const ait_tensor *const *)w, (int)n, outs);
    if (!st) st = record_sample(m, w, (int)n);
  } else if (!st) {
    check_range(m, w);
    st = m->run.iface->infer(m->run.state, (const ait_tensor *const *)w, (int)n, outs);
    if (st && m->warned_range) {
      /* the selected backend cannot take this shape: the reference can */
      ait_module_logf(m, 1, "%s failed on this input (%s); running it on eager", m->desc,
                      ait_last_error());
      const ait_backend_iface *e = ait_backend_find("eager");
      ait_backend_config ec;
      ait_backend_config_parse("eager", &ec);
      st = m->ref_state ? AIT_OK : e->build(&ec, g, NULL, &m->ref_state);
      if (!st) st = e->infer(m->ref_state, (const ait_tensor *const *)w, (int)n, outs);
    }
  }
  for (size_t i = 0; i < n; i++)
    ait_tensor_free(w[i]);
  if (st) {
    free(outs);
    return st;
  }
  clear_outputs(m);
  m->outputs = outs;
  m->n_outputs = g->n_outputs;
  return AIT_OK;
}

ait_status ait_module_output(const ait_module *m, size_t i, ait_tensor_view *out) {
  if (!m) return ait_err(AIT_E_INVALID_ARG, "module is NULL");
  return ait_api_output_view(m->outputs, m->n_outputs, i, "module", out);
}

void ait_module_set_log(ait_module *m, ait_log_fn log, void *user) {
  if (!m) return;
  m->log = log;
  m->log_user = user;
}

const char *ait_module_backend(const ait_module *m) { return m ? m->desc : ""; }
const ait_model *ait_module_model(const ait_module *m) { return m ? m->model : NULL; }

ait_status ait_module_report_json(const ait_module *m, char **json) {
  if (!m || !json) return ait_err(AIT_E_INVALID_ARG, "module and json are required");
  if (!m->report_json)
    return ait_err(AIT_E_NOT_FOUND, "module '%s' has no report: tune it first", m->name);
  if (!(*json = strdup(m->report_json))) return ait_err(AIT_E_NOMEM, "out of memory");
  return AIT_OK;
}

ait_status ait_module_save(ait_module *m, const char *dir) {
  if (!m || !dir) return ait_err(AIT_E_INVALID_ARG, "module and dir are required");
  return ait_artifact_save(m, dir);
}

/* ---- the decision cache ------------------------------------------------------ */

const char *ait_cache_root(const ait_tune_options *o, char *buf, size_t n) {
  const char *env = getenv("AITUNE_CACHE_DIR"), *home = getenv("HOME");
  if (o->cache_dir)
    snprintf(buf, n, "%s", o->cache_dir);
  else if (env && *env)
    snprintf(buf, n, "%s", env);
  else if (home && *home)
    snprintf(buf, n, "%s/.cache/aitune", home);
  else
    buf[0] = '\0';
  return buf;
}

/* Everything a decision depends on except the fingerprint, which is checked
 * against the entry so a change can be reported. */
static void cache_key(const ait_module *m, const ait_tune_options *o, char *hex65) {
  char *spec = ait_spec_json(&m->spec);
  size_t cap = 8192, at = 0;
  char *k = malloc(cap);
  if (!k) {
    free(spec);
    snprintf(hex65, 65, "%s", m->model_sha);
    return;
  }
  at += (size_t)snprintf(
      k + at, cap - at,
      "aitune %s|model %s|spec %s|strategy %s|perf %d %g|budget %g|tol %g %g %g|batches",
      AIT_VERSION_STRING, m->model_sha, spec ? spec : "", ait_strategy_name(o->strategy),
      o->perf_validation, o->min_speedup_ratio, o->latency_budget_ms, o->rtol, o->atol,
      o->min_cosine);
  for (size_t i = 0; o->batch_sizes && i < o->n_batch_sizes && at < cap; i++)
    at += (size_t)snprintf(k + at, cap - at, " %d", o->batch_sizes[i]);
  at += (size_t)snprintf(k + at, at < cap ? cap - at : 0, "|backends");
  for (size_t i = 0; o->backends && i < o->n_backends && at < cap; i++)
    at += (size_t)snprintf(k + at, cap - at, " %s", o->backends[i]);
  if (!o->backends && at < cap) at += (size_t)snprintf(k + at, cap - at, " (all available)");
  ait_sha256_hex(k, strlen(k), hex65);
  free(k);
  free(spec);
}

/* Adopt a loaded cache entry's decision into m. */
static void adopt(ait_module *m, ait_module *e) {
  drop_state(m);
  m->cfg = e->cfg;
  snprintf(m->desc, sizeof m->desc, "%s", e->desc);
  m->run = e->run;
  e->run.state = NULL;
  m->batch = e->batch;
  m->spec = e->spec;
  free(m->report_json);
  m->report_json = NULL;
  cJSON *r = e->report_json ? cJSON_Parse(e->report_json) : NULL;
  if (r) {
    cJSON_ReplaceItemInObjectCaseSensitive(r, "from_cache", cJSON_CreateBool(1));
    m->report_json = cJSON_Print(r);
    cJSON_Delete(r);
  }
  m->tuned = true;
}

ait_status ait_module_tune(ait_module *m, const ait_tune_options *opts) {
  if (!m) return ait_err(AIT_E_INVALID_ARG, "module is NULL");
  ait_tune_options o;
  if (opts)
    o = *opts;
  else
    ait_tune_options_init(&o);
  ait_log_fn saved_log = m->log;
  void *saved_user = m->log_user;
  if (o.log) {
    m->log = o.log;
    m->log_user = o.log_user;
  }
  ait_status st = AIT_OK;
  if (m->n_samples == 0) {
    ait_module_logf(m, 0, "no samples given: generating one from the declared input shapes");
    if ((st = ait_sample_random(m->model->graph, 1, &m->samples[0])) != AIT_OK) goto out;
    m->n_samples = 1;
  }
  ait_spec_detect(m->model->graph, m->samples, m->n_samples, &m->spec);
  char root[4096], key[65], entry[4200];
  ait_cache_root(&o, root, sizeof root);
  bool use_cache = root[0] && o.use_decision_cache;
  if (use_cache) {
    cache_key(m, &o, key);
    snprintf(entry, sizeof entry, "%s/%.32s", root, key);
    struct stat sb;
    if (stat(entry, &sb) == 0) {
      ait_module *e = NULL;
      ait_status cst = ait_artifact_load(entry, NULL, NULL, true, &e);
      if (cst == AIT_OK) {
        adopt(m, e);
        ait_module_free(e);
        ait_module_logf(m, 0, "answered from the cache (%s): %s", entry, m->desc);
        goto out;
      }
      /* another machine, an older format, a backend missing here: not damage */
      if (cst == AIT_E_NOT_FOUND || cst == AIT_E_UNSUPPORTED)
        ait_module_logf(m, 0, "re-tuning: %s", ait_last_error());
      else
        ait_module_logf(m, 1, "discarding a corrupted cache entry %s: %s", entry, ait_last_error());
      ait_rmtree(entry);
    }
  }
  drop_state(m);
  ait_backend_config_parse("eager", &m->cfg);
  snprintf(m->desc, sizeof m->desc, "eager");
  m->tuned = false;
  m->warned_range = false;
  if ((st = ait_tuner_run(m, &o)) != AIT_OK) goto out;
  if (use_cache) {
    ait_status cst = ait_mkdir_p(root);
    if (!cst) cst = ait_artifact_save(m, entry);
    if (cst)
      ait_module_logf(m, 1, "could not store the decision in the cache: %s", ait_last_error());
  }
out:
  m->log = saved_log;
  m->log_user = saved_user;
  return st;
}
