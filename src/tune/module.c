/* The module object: a model with its samples, the axis ranges to tune
 * over, and after tuning (or loading) the selected backend's built state and
 * the report; running it, with the reference before tuning. Tuning and the
 * decision cache are cache.c, saving and loading artifact.c. The public
 * functions (src/api/module.c) check their arguments and call these. */
#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "hw/fingerprint.h"
#include "runtime/eager.h"
#include "tune/artifact.h"
#include "tune/module_impl.h"

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
    ait_mod_free(m);
    return NULL;
  }
  const char *base = strrchr(path, '/');
  m->name = strdup(name ? name : base ? base + 1 : path);
  m->model_path = strdup(path);
  ait_backend_config_parse("eager", &m->cfg);
  snprintf(m->desc, sizeof m->desc, "eager");
  if (!m->name || !m->model_path) {
    *st = ait_err(AIT_E_NOMEM, "out of memory");
    ait_mod_free(m);
    return NULL;
  }
  *st = AIT_OK;
  return m;
}

ait_status ait_mod_create_buffer(const void *data, size_t size, const char *base_dir,
                                 const char *name, const ait_load_options *opts, ait_module **out) {
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
    ait_mod_free(m);
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

void ait_mod_drop_state(ait_module *m) {
  clear_outputs(m); /* they may borrow the state's memory */
  ait_mod_free_check(m);
  ait_runner_destroy(&m->run);
  if (m->ref_state) ait_backend_find("eager")->destroy(m->ref_state);
  m->ref_state = NULL;
}

void ait_mod_free(ait_module *m) {
  clear_outputs(m);
  ait_mod_drop_state(m); /* before the model: the state may borrow its graph */
  for (int i = 0; i < m->n_samples; i++)
    ait_sample_free(&m->samples[i]);
  if (m->share) {
    if (atomic_fetch_sub_explicit(&m->share->refs, 1, memory_order_acq_rel) == 1) {
      ait_model_free(m->share->model);
      free(m->share->model_bytes);
      free(m->share);
    }
    m->model = NULL;
    m->model_bytes = NULL;
  }
  ait_model_free(m->model);
  free(m->report_json);
  free(m->name);
  free(m->model_path);
  ait_api_io_free(&m->io);
  free(m->model_bytes);
  free(m);
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

ait_status ait_mod_add_sample(ait_module *m, const ait_tensor_view *inputs, size_t n) {
  ait_tensor *w[AIT_MOD_MAX_INPUTS] = {0};
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

ait_status ait_mod_infer(ait_module *m, const ait_tensor_view *inputs, size_t n) {
  const ait_graph *g = m->model->graph;
  ait_tensor *w[AIT_MOD_MAX_INPUTS] = {0};
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

ait_status ait_mod_output(const ait_module *m, size_t i, ait_tensor_view *out) {
  return ait_api_output_view(m->outputs, m->n_outputs, i, "module", out);
}

ait_status ait_mod_set_output_mem(ait_module *m, ait_mem_kind mem) {
  return ait_api_io_set_out_mem(&m->io, m->run.iface ? m->run.iface : ait_backend_find("eager"),
                                m->desc, mem);
}

ait_status ait_mod_set_cuda_stream(ait_module *m, void *stream) {
  return ait_api_io_set_stream(&m->io, m->run.iface ? m->run.iface : ait_backend_find("eager"),
                               m->desc, stream);
}

void ait_mod_set_log(ait_module *m, ait_log_fn log, void *user) {
  m->log = log;
  m->log_user = user;
}

const char *ait_mod_backend(const ait_module *m) { return m->desc; }
int ait_mod_batch_size(const ait_module *m) { return m->tuned ? m->batch : 0; }
const ait_model *ait_mod_model(const ait_module *m) { return m->model; }

ait_status ait_mod_memory(const ait_module *m, int64_t *weights, int64_t *work) {
  if (!m->tuned || !m->run.iface)
    return ait_err(AIT_E_NOT_FOUND, "module '%s' is not tuned: no backend holds it yet", m->name);
  if (!m->run.iface->memory)
    return ait_err(AIT_E_UNSUPPORTED, "%s does not say what memory it holds", m->desc);
  int64_t w = 0, k = 0;
  m->run.iface->memory(m->run.state, &w, &k);
  if (weights) *weights = w;
  if (work) *work = k;
  return AIT_OK;
}

ait_status ait_mod_set_axis_range(ait_module *m, const char *input, int axis, int64_t min,
                                  int64_t opt, int64_t max) {
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

ait_status ait_mod_report_json(const ait_module *m, char **json) {
  if (!m->report_json)
    return ait_err(AIT_E_NOT_FOUND, "module '%s' has no report: tune it first", m->name);
  if (!(*json = strdup(m->report_json))) return ait_err(AIT_E_NOMEM, "out of memory");
  return AIT_OK;
}

/* ---- clones ------------------------------------------------------------- */

/* The backend state of a clone: the backend's clone hook (shared immutable
 * state), else a reload of what save() writes (a copy), through a private
 * temporary folder removed afterwards. */
static ait_status clone_state(const ait_module *m, ait_runner *out, bool *shared) {
  *out = m->run;
  out->state = NULL;
  *shared = false;
  if (m->run.iface->clone) {
    ait_status st = m->run.iface->clone(m->run.state, &out->state);
    if (st != AIT_E_UNSUPPORTED) {
      *shared = !st;
      return st;
    }
    out->state = NULL; /* a partition with a segment that cannot share: reload */
  }
  if (!m->run.iface->save)
    return ait_err(AIT_E_UNSUPPORTED, "%s can neither share nor save its state", m->desc);
  const char *base = getenv("TMPDIR");
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s/aitune-clone-XXXXXX", base && base[0] ? base : "/tmp");
  if (!mkdtemp(tmp)) return ait_err(AIT_E_IO, "cannot create a temporary folder in %s", tmp);
  ait_status st = ait_mod_save_state(m, tmp, out);
  ait_rmtree(tmp);
  if (st) out->state = NULL;
  return st ? ait_err_prefix(st, "cloning %s by reloading its saved state", m->desc) : AIT_OK;
}

ait_status ait_module_clone(const ait_module *m, ait_module **out) {
  if (!m || !out) return ait_err(AIT_E_INVALID_ARG, "ait_module_clone: m and out are required");
  *out = NULL;
  if (!m->tuned || !m->run.iface)
    return ait_err(AIT_E_INVALID_ARG, "module '%s' is not tuned: only a tuned module clones",
                   m->name);
  ait_module *mm = (ait_module *)m; /* the share block is set up on first clone (documented) */
  if (!mm->share) {
    ait_mod_share *sh = calloc(1, sizeof *sh);
    if (!sh) return ait_err(AIT_E_NOMEM, "out of memory");
    atomic_init(&sh->refs, 1);
    sh->model = mm->model;
    sh->model_bytes = mm->model_bytes;
    mm->share = sh;
  }
  ait_module *c = calloc(1, sizeof *c);
  if (!c) return ait_err(AIT_E_NOMEM, "out of memory");
  atomic_fetch_add_explicit(&mm->share->refs, 1, memory_order_relaxed);
  c->share = mm->share;
  c->model = m->model;
  c->model_bytes = m->model_bytes;
  c->model_size = m->model_size;
  memcpy(c->model_sha, m->model_sha, sizeof c->model_sha);
  c->spec = m->spec;
  memcpy(c->axis_ranges, m->axis_ranges, sizeof c->axis_ranges);
  c->n_axis_ranges = m->n_axis_ranges;
  c->tuned = true;
  c->cfg = m->cfg;
  memcpy(c->desc, m->desc, sizeof c->desc);
  c->batch = m->batch;
  memcpy(c->tuned_fingerprint, m->tuned_fingerprint, sizeof c->tuned_fingerprint);
  c->log = m->log;
  c->log_user = m->log_user;
  c->name = strdup(m->name);
  c->model_path = m->model_path ? strdup(m->model_path) : NULL;
  c->report_json = m->report_json ? strdup(m->report_json) : NULL;
  ait_status st = AIT_OK;
  if (!c->name || (m->model_path && !c->model_path) || (m->report_json && !c->report_json))
    st = ait_err(AIT_E_NOMEM, "out of memory");
  if (!st) st = clone_state(m, &c->run, &c->state_shared);
  if (st) {
    c->run.iface = NULL;
    c->tuned = false;
    ait_mod_free(c);
    return st;
  }
  *out = c;
  return AIT_OK;
}
