/* Public module API: samples, tuning (with the decision cache), saving,
 * loading and running a tuned model. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
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

/* This library's defaults, in a struct of its own size. */
static void tune_defaults(ait_tune_options *o) {
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
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

/* ---- the options' size (ait_tune_options.struct_size) ----------------------
 * Every field, in order: a struct_size must not end inside one. */
#define FIELD(f)                                                                                   \
  { #f, offsetof(ait_tune_options, f), sizeof(((ait_tune_options *)0)->f) }
static const struct {
  const char *name;
  size_t off, size;
} option_fields[] = {
    FIELD(struct_size),
    FIELD(strategy),
    FIELD(backends),
    FIELD(n_backends),
    FIELD(batch_sizes),
    FIELD(n_batch_sizes),
    FIELD(latency_budget_ms),
    FIELD(min_speedup_ratio),
    FIELD(perf_validation),
    FIELD(rtol),
    FIELD(atol),
    FIELD(min_cosine),
    FIELD(min_top1),
    FIELD(precision),
    FIELD(warmup),
    FIELD(min_runs),
    FIELD(max_runs),
    FIELD(cv_target),
    FIELD(time_budget_s),
    FIELD(cache_dir),
    FIELD(use_decision_cache),
    FIELD(log),
    FIELD(log_user),
    FIELD(node_filter),
    FIELD(node_filter_user),
    FIELD(mem_reading),
    FIELD(runoff_rounds),
    FIELD(io_mem),
};
#undef FIELD

/* A struct_size larger than this is not a size (a struct that was never
 * initialised): refused before reading past the library's fields. */
#define MAX_OPTIONS_SIZE 4096

/* AIT_OK when size can be an ait_tune_options' struct_size; else why not. */
static ait_status check_options_size(size_t size) {
  if (size == 0)
    return ait_err(AIT_E_INVALID_ARG, "ait_tune_options.struct_size is 0: fill the options with "
                                      "ait_tune_options_init() first");
  if (size < sizeof(size_t) || size > MAX_OPTIONS_SIZE)
    return ait_err(AIT_E_INVALID_ARG,
                   "ait_tune_options.struct_size %zu is not the size of tuning options (this "
                   "library's are %zu bytes): fill them with ait_tune_options_init()",
                   size, sizeof(ait_tune_options));
  for (size_t i = 0; i < sizeof option_fields / sizeof option_fields[0]; i++)
    if (size > option_fields[i].off && size < option_fields[i].off + option_fields[i].size)
      return ait_err(AIT_E_INVALID_ARG,
                     "ait_tune_options.struct_size %zu ends inside field %s (bytes %zu..%zu): "
                     "fill the options with ait_tune_options_init()",
                     size, option_fields[i].name, option_fields[i].off,
                     option_fields[i].off + option_fields[i].size - 1);
  return AIT_OK;
}

ait_status ait_tune_options_init_size(ait_tune_options *o, size_t struct_size) {
  if (!o) return ait_err(AIT_E_INVALID_ARG, "ait_tune_options_init: the options are NULL");
  AIT_TRY(check_options_size(struct_size));
  ait_tune_options d;
  tune_defaults(&d);
  d.struct_size = struct_size;
  memcpy(o, &d, struct_size < sizeof d ? struct_size : sizeof d);
  if (struct_size > sizeof d) memset((char *)o + sizeof d, 0, struct_size - sizeof d);
  return AIT_OK;
}

void(ait_tune_options_init)(ait_tune_options *o) { (void)ait_tune_options_init_size(o, sizeof *o); }

/* The caller's options in this library's struct: the fields within their
 * struct_size, the defaults past it. */
static ait_status take_options(const ait_tune_options *in, ait_tune_options *o) {
  tune_defaults(o);
  if (!in) return AIT_OK;
  size_t size = in->struct_size;
  AIT_TRY(check_options_size(size));
  for (size_t i = sizeof *o; i < size; i++) /* fields of a newer header than ours */
    if (((const unsigned char *)in)[i])
      return ait_err(AIT_E_INVALID_ARG,
                     "ait_tune_options: struct_size is %zu, this library's options are %zu "
                     "bytes, and byte %zu is set: the caller was built against a newer aitune.h "
                     "than this library (%s) knows",
                     size, sizeof *o, i, AIT_VERSION_STRING);
  memcpy(o, in, size < sizeof *o ? size : sizeof *o);
  o->struct_size = sizeof *o;
  return AIT_OK;
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

ait_module *ait_module_alloc(const char *path, const char *name, const ait_limits *lim,
                             ait_status *st) {
  ait_module *m = calloc(1, sizeof *m);
  if (!m) {
    *st = ait_err(AIT_E_NOMEM, "out of memory");
    return NULL;
  }
  ait_limits dflt = ait_limits_default();
  if ((*st = ait_model_load_limits(path, lim ? lim : &dflt, &m->model)) != AIT_OK) {
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

ait_status ait_module_create_opts(const char *path, const char *name, const ait_load_options *opts,
                                  ait_module **out) {
  if (!path || !out)
    return ait_err(AIT_E_INVALID_ARG, "ait_module_create: path and out are required");
  *out = NULL;
  ait_limits lim;
  AIT_TRY(ait_limits_from_options(opts, &lim));
  ait_status st;
  *out = ait_module_alloc(path, name, &lim, &st);
  return st;
}

ait_status ait_module_create(const char *path, const char *name, ait_module **out) {
  return ait_module_create_opts(path, name, NULL, out);
}

ait_status ait_module_create_buffer(const void *data, size_t size, const char *base_dir,
                                    const char *name, ait_module **out) {
  return ait_module_create_buffer_opts(data, size, base_dir, name, NULL, out);
}

ait_status ait_module_create_buffer_opts(const void *data, size_t size, const char *base_dir,
                                         const char *name, const ait_load_options *opts,
                                         ait_module **out) {
  if (!data || !out)
    return ait_err(AIT_E_INVALID_ARG, "ait_module_create_buffer: data and out are required");
  *out = NULL;
  ait_module *m = calloc(1, sizeof *m);
  if (!m) return ait_err(AIT_E_NOMEM, "out of memory");
  ait_status st = ait_model_load_buffer_opts(data, size, base_dir, opts, &m->model);
  if (st) {
    free(m);
    return ait_err_prefix(st, "model bytes");
  }
  /* the module keeps the bytes: saving writes them as the folder's model */
  m->model_bytes = malloc(size ? size : 1);
  m->name = strdup(name ? name : "model");
  if (!m->model_bytes || !m->name) {
    ait_module_free(m);
    return ait_err(AIT_E_NOMEM, "out of memory");
  }
  memcpy(m->model_bytes, data, size);
  m->model_size = size;
  ait_sha256_hex(data, size, m->model_sha);
  ait_backend_config_parse("eager", &m->cfg);
  snprintf(m->desc, sizeof m->desc, "eager");
  *out = m;
  return AIT_OK;
}

const char *ait_module_source(const ait_module *m) {
  return m->model_path ? m->model_path : "(memory)";
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
  ait_api_io_free(&m->io);
  free(m->model_bytes);
  free(m);
}

ait_status ait_module_load(const char *dir, ait_log_fn log, void *log_user, ait_module **out) {
  return ait_module_load_opts(dir, log, log_user, NULL, out);
}

ait_status ait_module_load_opts(const char *dir, ait_log_fn log, void *log_user,
                                const ait_load_options *opts, ait_module **out) {
  if (!dir || !out) return ait_err(AIT_E_INVALID_ARG, "ait_module_load: dir and out are required");
  *out = NULL;
  ait_limits lim;
  AIT_TRY(ait_limits_from_options(opts, &lim));
  return ait_artifact_load(dir, log, log_user, false, &lim, out);
}

/* Wrap caller views as borrowed tensors, checked against the declarations. */
static ait_status wrap_inputs(const ait_module *m, const ait_tensor_view *in, size_t n,
                              ait_tensor **wrapped) {
  const ait_graph *g = m->model->graph;
  if (n != (size_t)g->n_inputs || (n && !in))
    return ait_err(AIT_E_INVALID_ARG, "the model takes %d inputs, got %zu", g->n_inputs, n);
  for (size_t i = 0; i < n; i++) {
    AIT_TRY(ait_api_check_input(&g->values[g->inputs[i]], &in[i], i));
    if (!(wrapped[i] = ait_api_wrap_view(&in[i])))
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
  for (size_t i = 0; !st && i < n; i++)
    if (inputs[i].mem != AIT_MEM_HOST)
      st = ait_err(AIT_E_UNSUPPORTED,
                   "sample input %zu is in device memory: samples are host "
                   "tensors (copy it to the host first)",
                   i);
  if (!st) st = record_sample(m, w, (int)n);
  for (size_t i = 0; i < n; i++)
    ait_tensor_free(w[i]);
  return st;
}

/* An input outside the tuned range of a dynamic axis? (warn once) */
static void check_range(ait_module *m, ait_tensor *const *in) {
  if (m->warned_range || !m->tuned) return;
  const ait_graph *g = m->model->graph;
  for (int a = 0; a < m->spec.n_axes; a++) {
    const ait_axis *x = &m->spec.axes[a];
    /* the spec may come from a file: artifact.c checks it, and so does this */
    if (x->input < 0 || x->input >= g->n_inputs || x->axis < 0 || x->axis >= in[x->input]->rank)
      continue;
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
  bool on_host = true;
  for (size_t i = 0; i < n; i++)
    on_host = on_host && inputs[i].mem == AIT_MEM_HOST;
  if (!st && !m->tuned) {
    /* before tuning: the reference runs, and the call becomes a sample */
    if (!on_host || m->io.out_mem != AIT_MEM_HOST || m->io.stream)
      st = ait_err(AIT_E_UNSUPPORTED,
                   "module '%s' is not tuned: before tuning it runs the "
                   "reference, which takes host memory only",
                   m->name);
    if (!st) st = ait_eager_run(g, (const ait_tensor *const *)w, (int)n, outs);
    if (!st) st = record_sample(m, w, (int)n);
  } else if (!st) {
    check_range(m, w);
    st = ait_api_io_begin(&m->io, m->run.iface, m->run.state, m->desc, inputs, n);
    if (!st) st = m->run.iface->infer(m->run.state, (const ait_tensor *const *)w, (int)n, outs);
    if (!st && (st = ait_api_io_finish(&m->io, m->run.iface, outs, g->n_outputs)))
      for (int k = 0; k < g->n_outputs; k++) {
        ait_tensor_free(outs[k]);
        outs[k] = NULL;
      }
    if (st && m->warned_range && on_host && m->io.out_mem == AIT_MEM_HOST && !m->io.bound) {
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

ait_status ait_module_set_output_mem(ait_module *m, ait_mem_kind mem) {
  if (!m) return ait_err(AIT_E_INVALID_ARG, "module is NULL");
  return ait_api_io_set_out_mem(&m->io, m->run.iface ? m->run.iface : ait_backend_find("eager"),
                                m->desc, mem);
}

ait_status ait_module_set_cuda_stream(ait_module *m, void *stream) {
  if (!m) return ait_err(AIT_E_INVALID_ARG, "module is NULL");
  return ait_api_io_set_stream(&m->io, m->run.iface ? m->run.iface : ait_backend_find("eager"),
                               m->desc, stream);
}

void ait_module_set_log(ait_module *m, ait_log_fn log, void *user) {
  if (!m) return;
  m->log = log;
  m->log_user = user;
}

const char *ait_module_backend(const ait_module *m) { return m ? m->desc : ""; }
int ait_module_batch_size(const ait_module *m) { return m && m->tuned ? m->batch : 0; }

ait_status ait_module_set_axis_range(ait_module *m, const char *input, int axis, int64_t min,
                                     int64_t opt, int64_t max) {
  if (!m || !input) return ait_err(AIT_E_INVALID_ARG, "module and input are required");
  const ait_graph *g = m->model->graph;
  int i = 0;
  while (i < g->n_inputs && strcmp(g->values[g->inputs[i]].name, input))
    i++;
  if (i == g->n_inputs) return ait_err(AIT_E_NOT_FOUND, "the model has no input '%s'", input);
  const ait_value *v = &g->values[g->inputs[i]];
  if (axis < 0 || axis >= v->rank)
    return ait_err(AIT_E_INVALID_ARG, "input '%s' has rank %d: no axis %d", input, v->rank, axis);
  if (v->dims[axis].v >= 0)
    return ait_err(AIT_E_INVALID_ARG,
                   "input '%s' axis %d is fixed at %lld in the model: only a symbolic or unknown "
                   "axis can be given a range",
                   input, axis, (long long)v->dims[axis].v);
  if (!(min >= 1 && min <= opt && opt <= max && max <= AIT_MAX_AXIS_SIZE))
    return ait_err(AIT_E_INVALID_ARG,
                   "input '%s' axis %d: range min %lld, opt %lld, max %lld is not 1 <= min <= opt "
                   "<= max <= %lld",
                   input, axis, (long long)min, (long long)opt, (long long)max,
                   (long long)AIT_MAX_AXIS_SIZE);
  int k = 0;
  while (k < m->n_axis_ranges && !(m->axis_ranges[k].input == i && m->axis_ranges[k].axis == axis))
    k++;
  if (k == AIT_MAX_AXES)
    return ait_err(AIT_E_UNSUPPORTED, "at most %d axis ranges per module", AIT_MAX_AXES);
  ait_axis *a = &m->axis_ranges[k];
  memset(a, 0, sizeof *a);
  a->input = i;
  a->axis = axis;
  snprintf(a->sym, sizeof a->sym, "%s", v->dims[axis].sym ? v->dims[axis].sym : "");
  a->min = min;
  a->opt = opt;
  a->max = max;
  if (k == m->n_axis_ranges) m->n_axis_ranges++;
  return AIT_OK;
}
const ait_model *ait_module_model(const ait_module *m) { return m ? m->model : NULL; }

ait_status ait_module_report_json(const ait_module *m, char **json) {
  if (!m || !json) return ait_err(AIT_E_INVALID_ARG, "module and json are required");
  if (!m->report_json)
    return ait_err(AIT_E_NOT_FOUND, "module '%s' has no report: tune it first", m->name);
  if (!(*json = strdup(m->report_json))) return ait_err(AIT_E_NOMEM, "out of memory");
  return AIT_OK;
}

ait_status ait_module_save(ait_module *m, const char *dir) {
  return ait_module_save_flags(m, dir, 0);
}

ait_status ait_module_save_flags(ait_module *m, const char *dir, unsigned flags) {
  if (!m || !dir || !dir[0]) return ait_err(AIT_E_INVALID_ARG, "module and dir are required");
  if (flags & ~AIT_SAVE_FORCE) return ait_err(AIT_E_INVALID_ARG, "unknown save flags 0x%x", flags);
  return ait_artifact_save(m, dir, flags);
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

/* ---- the cache key: one row per option ------------------------------------
 * Every option that can change the candidates or the verdicts is a row; the
 * key is the SHA-256 of "aitune VERSION|model SHA|spec JSON|row=value|...".
 * Options that cannot change the decision (where the cache is, logging) are
 * listed in not_in_key, so a new option must be put in one or the other
 * (the static assertion below counts them). The fingerprint is not in the
 * key: it is checked against the entry, so a change can be reported. */

typedef enum {
  K_INT,
  K_ENUM,
  K_DBL,
  K_PRECISION,
  K_BACKENDS,
  K_BATCHES,
  K_FILTER,
  K_MEMORY
} key_kind;

typedef struct key_row {
  const char *name;
  key_kind kind;
  size_t off; /* of the field in ait_tune_options (lists: of the pointer) */
} key_row;

#define ROW(kind, field)                                                                           \
  { #field, kind, offsetof(ait_tune_options, field) }
static const key_row key_rows[] = {
    ROW(K_ENUM, strategy),
    ROW(K_BACKENDS, backends),   /* with n_backends */
    ROW(K_BATCHES, batch_sizes), /* with n_batch_sizes */
    ROW(K_DBL, latency_budget_ms),
    ROW(K_DBL, min_speedup_ratio),
    ROW(K_INT, perf_validation),
    ROW(K_DBL, rtol),
    ROW(K_DBL, atol),
    ROW(K_DBL, min_cosine),
    ROW(K_DBL, min_top1),
    ROW(K_PRECISION, precision),
    ROW(K_INT, warmup),
    ROW(K_INT, min_runs),
    ROW(K_INT, max_runs),
    ROW(K_DBL, cv_target),
    ROW(K_DBL, time_budget_s),
    ROW(K_FILTER, node_filter), /* with node_filter_user */
    ROW(K_MEMORY, mem_reading), /* the pressure level it gives (or the machine's now) */
    ROW(K_INT, runoff_rounds),
    ROW(K_ENUM, io_mem),
};
#undef ROW

/* Not in the key, as they cannot change a decision: struct_size,
 * n_backends and n_batch_sizes (read with their lists), node_filter_user
 * (with node_filter), cache_dir, use_decision_cache, log, log_user. */
/* ait_tune_options grew or shrank: put the new option in key_rows (or, if it
 * cannot change a decision, in the list above) and in option_fields, and
 * update the size */
#if UINTPTR_MAX == UINT64_MAX /* the size below is that of LP64 */
_Static_assert(sizeof(ait_tune_options) == 208,
               "a new tuning option: add it to key_rows and option_fields");
#endif

static int key_put(char *k, size_t cap, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int key_put(char *k, size_t cap, size_t at, const char *fmt, ...) {
  if (at >= cap) return 0;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(k + at, cap - at, fmt, ap);
  va_end(ap);
  return n < 0 ? 0 : n;
}

static ait_mem_level memory_level(const ait_tune_options *o) {
  ait_mem_thresholds thr;
  ait_mem_thresholds_init(&thr);
  if (ait_mem_thresholds_from_env(&thr)) ait_err_clear(); /* the tune itself reports it */
  ait_mem_reading now;
  const ait_mem_reading *r = o->mem_reading;
  if (!r && ait_mem_read(&now) == AIT_OK) r = &now;
  return r ? ait_mem_pressure(r, &thr) : AIT_MEM_LOW;
}

/* The SHA-256 of the file named by a `config=` option of backend spec b
 * ("quant:config=/x.json,threads=2"); false when there is none (or it cannot
 * be read: then the build will say so). */
static bool config_digest(const char *b, char *hex65) {
  const char *c = strchr(b, ':');
  while (c) {
    c++;
    if (!strncmp(c, "config=", 7)) {
      char path[4096];
      size_t n = strcspn(c + 7, ",");
      if (n >= sizeof path) return false;
      memcpy(path, c + 7, n);
      path[n] = '\0';
      return ait_sha256_file(path, hex65) == 0;
    }
    c = strchr(c, ',');
  }
  return false;
}

/* Environment variables that change what a candidate computes or how fast
 * (the memory thresholds, AITUNE_MEM_*, enter through the memory level). */
static const char *const key_env[] = {"AIT_MAX_ISA"};

/* One row's value, appended to k at `at`; returns the length written. */
static size_t key_value(const key_row *r, const ait_tune_options *o, char *k, size_t cap,
                        size_t at) {
  const char *f = (const char *)o + r->off;
  size_t start = at;
  switch (r->kind) {
  case K_INT: at += (size_t)key_put(k, cap, at, "%d", *(const int *)(const void *)f); break;
  case K_ENUM:
    at += (size_t)key_put(k, cap, at, "%d", (int)*(const ait_strategy *)(const void *)f);
    break;
  case K_DBL: at += (size_t)key_put(k, cap, at, "%.17g", *(const double *)(const void *)f); break;
  case K_PRECISION: /* NULL and "fp32" are one policy */
    at += (size_t)key_put(k, cap, at, "%s", o->precision ? o->precision : "fp32");
    break;
  case K_BACKENDS:
    if (!o->backends) at += (size_t)key_put(k, cap, at, "(all available)");
    for (size_t i = 0; o->backends && i < o->n_backends; i++) {
      const char *b = o->backends[i] ? o->backends[i] : "";
      char digest[65];
      at += (size_t)key_put(k, cap, at, "%s", b);
      /* a config=FILE option names a file whose contents decide (quant's presets) */
      if (config_digest(b, digest)) at += (size_t)key_put(k, cap, at, "@%s", digest);
      at += (size_t)key_put(k, cap, at, "\x1f");
    }
    break;
  case K_BATCHES:
    for (size_t i = 0; o->batch_sizes && i < o->n_batch_sizes; i++)
      at += (size_t)key_put(k, cap, at, "%d,", o->batch_sizes[i]);
    break;
  case K_FILTER: /* a caller's function: only the same one (and user) may share a decision */
    if (o->node_filter)
      at += (size_t)key_put(k, cap, at, "%p/%p", (void *)(uintptr_t)o->node_filter,
                            o->node_filter_user);
    break;
  case K_MEMORY: at += (size_t)key_put(k, cap, at, "%d", (int)memory_level(o)); break;
  }
  return at - start;
}

void ait_cache_key(const ait_module *m, const ait_tune_options *o, char *hex65) {
  char *spec = ait_spec_json(&m->spec);
  size_t cap = 16384, at = 0;
  char *k = malloc(cap);
  if (!k || !spec) { /* no key: an impossible one, so nothing is served */
    free(k);
    free(spec);
    snprintf(hex65, 65, "%064d", 0);
    return;
  }
  at += (size_t)key_put(k, cap, at, "aitune %s|model %s|spec %s", AIT_VERSION_STRING, m->model_sha,
                        spec);
  for (size_t i = 0; i < sizeof key_rows / sizeof key_rows[0]; i++) {
    at += (size_t)key_put(k, cap, at, "|%s=", key_rows[i].name);
    at += key_value(&key_rows[i], o, k, cap, at);
  }
  for (size_t i = 0; i < sizeof key_env / sizeof key_env[0]; i++) {
    const char *v = getenv(key_env[i]);
    at += (size_t)key_put(k, cap, at, "|$%s=%s", key_env[i], v ? v : "");
  }
  ait_sha256_hex(k, at < cap ? at : cap - 1, hex65);
  free(k);
  free(spec);
}

/* ---- checking the options -------------------------------------------------- */

typedef struct opt_range {
  const char *name;
  bool is_int;
  size_t off;
  double lo, hi; /* inclusive; NaN fails every comparison */
} opt_range;

#define RANGE(is_int, field, lo, hi)                                                               \
  { #field, is_int, offsetof(ait_tune_options, field), lo, hi }
static const opt_range opt_ranges[] = {
    RANGE(false, latency_budget_ms, 0, 1e9),
    RANGE(false, min_speedup_ratio, -0.99, 1e9),
    RANGE(true, perf_validation, 0, 1),
    RANGE(false, rtol, 0, 1e9),
    RANGE(false, atol, 0, 1e9),
    RANGE(false, min_cosine, 0, 1),
    RANGE(false, min_top1, 0, 1),
    RANGE(true, warmup, 0, 1000000),
    RANGE(true, min_runs, 1, 1000000),
    RANGE(true, max_runs, 1, 1000000),
    RANGE(false, cv_target, 0, 1e6),
    RANGE(false, time_budget_s, 0, 1e7),
    RANGE(true, use_decision_cache, 0, 1),
    RANGE(true, runoff_rounds, 0, 10000),
};
#undef RANGE

#define MAX_TUNE_BATCH (1 << 20) /* what a decision.json may hold (artifact.c) */

static ait_status check_options(const ait_tune_options *o) {
  if ((unsigned)o->strategy >= sizeof strategy_names / sizeof strategy_names[0])
    return ait_err(AIT_E_INVALID_ARG, "strategy: %d is not a strategy (0..%zu)", (int)o->strategy,
                   sizeof strategy_names / sizeof strategy_names[0] - 1);
  for (size_t i = 0; i < sizeof opt_ranges / sizeof opt_ranges[0]; i++) {
    const opt_range *r = &opt_ranges[i];
    const void *f = (const char *)o + r->off;
    double v = r->is_int ? *(const int *)f : *(const double *)f;
    if (!(v >= r->lo && v <= r->hi))
      return ait_err(AIT_E_INVALID_ARG, "%s: %g is out of range [%g, %g]", r->name, v, r->lo,
                     r->hi);
  }
  if (o->io_mem != AIT_MEM_HOST && o->io_mem != AIT_MEM_CUDA)
    return ait_err(AIT_E_INVALID_ARG,
                   "io_mem: %d is not a memory kind (AIT_MEM_HOST, AIT_MEM_CUDA)", (int)o->io_mem);
  if (o->max_runs < o->min_runs)
    return ait_err(AIT_E_INVALID_ARG, "max_runs (%d) must be >= min_runs (%d)", o->max_runs,
                   o->min_runs);
  if (o->precision && strcmp(o->precision, "fp32") && strcmp(o->precision, "auto") &&
      strcmp(o->precision, "any"))
    return ait_err(AIT_E_INVALID_ARG, "precision: '%s' is not fp32, auto or any", o->precision);
  if (o->n_backends && !o->backends)
    return ait_err(AIT_E_INVALID_ARG, "backends: NULL with n_backends %zu", o->n_backends);
  for (size_t i = 0; o->backends && i < o->n_backends; i++)
    if (!o->backends[i]) return ait_err(AIT_E_INVALID_ARG, "backends[%zu] is NULL", i);
  if (o->n_batch_sizes && !o->batch_sizes)
    return ait_err(AIT_E_INVALID_ARG, "batch_sizes: NULL with n_batch_sizes %zu", o->n_batch_sizes);
  if (o->batch_sizes && o->n_batch_sizes > AIT_MAX_BATCHES)
    return ait_err(AIT_E_INVALID_ARG, "batch_sizes: %zu sizes, at most %d", o->n_batch_sizes,
                   AIT_MAX_BATCHES);
  for (size_t i = 0; o->batch_sizes && i < o->n_batch_sizes; i++)
    if (o->batch_sizes[i] < 1 || o->batch_sizes[i] > MAX_TUNE_BATCH)
      return ait_err(AIT_E_INVALID_ARG, "batch_sizes[%zu]: batch size %d must be in [1, %d]", i,
                     o->batch_sizes[i], MAX_TUNE_BATCH);
  return AIT_OK;
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
  AIT_TRY(take_options(opts, &o));
  AIT_TRY(check_options(&o));
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
  if ((st = ait_spec_apply_ranges(m->model->graph, m->samples, m->n_samples, m->axis_ranges,
                                  m->n_axis_ranges, &m->spec)) != AIT_OK)
    goto out;
  char root[4096], key[65], entry[4200];
  ait_cache_root(&o, root, sizeof root);
  bool use_cache = root[0] && o.use_decision_cache;
  if (use_cache) {
    ait_cache_key(m, &o, key);
    snprintf(entry, sizeof entry, "%s/%.32s", root, key);
    struct stat sb;
    if (stat(entry, &sb) == 0) {
      ait_module *e = NULL;
      /* the entry's model is this model: held to the limits it was loaded under */
      ait_status cst =
          ait_artifact_load(entry, NULL, NULL, true, &ait_graph_root(m->model->graph)->limits, &e);
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
    if (!cst) cst = ait_artifact_save(m, entry, AIT_SAVE_FORCE); /* the cache is ours */
    if (cst)
      ait_module_logf(m, 1, "could not store the decision in the cache: %s", ait_last_error());
  }
out:
  m->log = saved_log;
  m->log_user = saved_user;
  return st;
}
