/* Public session API: run a model on a backend with caller-owned inputs. */
#include <stdlib.h>
#include <string.h>

#include "api/model_impl.h"
#include "backends/backend.h"
#include "core/error.h"

const char *const *ait_backend_names(void) {
  static const char *names[33];
  int n = ait_backend_count() < 32 ? ait_backend_count() : 32;
  for (int i = 0; i < n; i++)
    names[i] = ait_backend_at(i)->name;
  names[n] = NULL;
  return names;
}

ait_status ait_session_create(const ait_model *model, const char *backend, ait_session **out) {
  if (!model || !out)
    return ait_err(AIT_E_INVALID_ARG, "ait_session_create: model and out are required");
  *out = NULL;
  ait_backend_config cfg;
  AIT_TRY(ait_backend_config_parse(backend ? backend : "eager", &cfg));
  char why[256] = "";
  if (!cfg.iface->available(why, sizeof why))
    return ait_err(AIT_E_UNSUPPORTED, "backend %s is not available here: %s", cfg.iface->name, why);
  ait_session *s = calloc(1, sizeof *s);
  if (!s) return ait_err(AIT_E_NOMEM, "out of memory");
  s->model = model;
  s->cfg = cfg;
  ait_status st = ait_runner_build(&s->cfg, model->graph, NULL, &s->run);
  if (st) {
    free(s);
    return ait_err_prefix(st, "backend %s", cfg.iface->name);
  }
  *out = s;
  return AIT_OK;
}

static void clear_outputs(ait_session *s) {
  for (int i = 0; i < s->n_outputs; i++)
    ait_tensor_free(s->outputs[i]);
  free(s->outputs);
  s->outputs = NULL;
  s->n_outputs = 0;
}

void ait_session_free(ait_session *s) {
  if (!s) return;
  clear_outputs(s);
  ait_runner_destroy(&s->run);
  ait_api_io_free(&s->io);
  free(s);
}

/* An input must match its declaration: dtype exactly, rank, and every dim
 * that the model fixes (symbolic and unknown dims take any size). */
ait_status ait_api_check_input(const ait_value *decl, const ait_tensor_view *in, size_t i) {
  if (in->rank < 0 || in->rank > AIT_MAX_RANK)
    return ait_err(AIT_E_INVALID_ARG, "input %zu ('%s'): rank %d is outside 0..%d", i, decl->name,
                   in->rank, AIT_MAX_RANK);
  if (decl->dtype != AIT_UNDEFINED && in->dtype != decl->dtype)
    return ait_err(AIT_E_DTYPE, "input %zu ('%s'): expected dtype %s, got %s", i, decl->name,
                   ait_dtype_name(decl->dtype), ait_dtype_name(in->dtype));
  if (decl->rank >= 0 && in->rank != decl->rank)
    return ait_err(AIT_E_SHAPE, "input %zu ('%s'): expected rank %d, got %d", i, decl->name,
                   decl->rank, in->rank);
  for (int k = 0; k < in->rank; k++) {
    if (in->dims[k] < 0)
      return ait_err(AIT_E_SHAPE, "input %zu ('%s'): dim %d is negative", i, decl->name, k);
    if (decl->rank >= 0 && decl->dims[k].v >= 0 && decl->dims[k].v != in->dims[k])
      return ait_err(AIT_E_SHAPE, "input %zu ('%s'): dim %d must be %lld, got %lld", i, decl->name,
                     k, (long long)decl->dims[k].v, (long long)in->dims[k]);
  }
  if (!in->data && ait_shape_numel(in->rank, in->dims) > 0)
    return ait_err(AIT_E_INVALID_ARG, "input %zu ('%s'): data is NULL", i, decl->name);
  return AIT_OK;
}

ait_status ait_session_run(ait_session *s, const ait_tensor_view *inputs, size_t n_inputs) {
  if (!s) return ait_err(AIT_E_INVALID_ARG, "ait_session_run: session is NULL");
  const ait_graph *g = s->model->graph;
  if (n_inputs != (size_t)g->n_inputs)
    return ait_err(AIT_E_INVALID_ARG, "the model takes %d inputs, got %zu", g->n_inputs, n_inputs);
  if (n_inputs && !inputs)
    return ait_err(AIT_E_INVALID_ARG,
                   "ait_session_run: inputs is NULL, but the model takes %d (the "
                   "first is '%s')",
                   g->n_inputs, g->values[g->inputs[0]].name);
  clear_outputs(s);
  ait_tensor **wrapped = calloc(n_inputs + 1, sizeof *wrapped);
  ait_tensor **outs = calloc((size_t)g->n_outputs + 1, sizeof *outs);
  ait_status st = AIT_OK;
  if (!wrapped || !outs) st = ait_err(AIT_E_NOMEM, "out of memory");
  for (size_t i = 0; !st && i < n_inputs; i++) {
    st = ait_api_check_input(&g->values[g->inputs[i]], &inputs[i], i);
    if (!st && !(wrapped[i] = ait_api_wrap_view(&inputs[i])))
      st = ait_err_prefix(AIT_E_INVALID_ARG, "input %zu", i);
  }
  if (!st)
    st = ait_api_io_begin(&s->io, s->run.iface, s->run.state, s->cfg.iface->name, inputs, n_inputs);
  if (!st)
    st = s->run.iface->infer(s->run.state, (const ait_tensor *const *)wrapped, (int)n_inputs, outs);
  if (!st && (st = ait_api_io_finish(&s->io, s->run.iface, outs, g->n_outputs)))
    for (int k = 0; k < g->n_outputs; k++)
      ait_tensor_free(outs[k]);
  for (size_t i = 0; wrapped && i < n_inputs; i++)
    ait_tensor_free(wrapped[i]);
  free(wrapped);
  if (st) {
    free(outs);
    return st;
  }
  s->outputs = outs;
  s->n_outputs = g->n_outputs;
  return AIT_OK;
}

ait_status ait_session_run_values(ait_session *s, const ait_tensor *const *inputs, size_t n) {
  if (!s) return ait_err(AIT_E_INVALID_ARG, "session is NULL");
  const ait_graph *g = s->model->graph;
  if (n != (size_t)g->n_inputs)
    return ait_err(AIT_E_INVALID_ARG, "the model takes %d inputs, got %zu", g->n_inputs, n);
  for (size_t i = 0; i < n; i++) {
    const ait_value *decl = &g->values[g->inputs[i]];
    const ait_tensor *t = inputs[i];
    bool fits =
        decl->type == AIT_VT_OPTIONAL ||
        (decl->type == AIT_VT_SEQUENCE ? t->kind == AIT_KIND_SEQUENCE : t->kind == AIT_KIND_TENSOR);
    if (!fits)
      return ait_err(AIT_E_INVALID_ARG, "input %zu ('%s'): expected a %s", i, decl->name,
                     decl->type == AIT_VT_SEQUENCE ? "sequence" : "tensor");
    if (t->kind == AIT_KIND_TENSOR && decl->type == AIT_VT_TENSOR) {
      ait_tensor_view v;
      memset(&v, 0, sizeof v); /* host memory */
      v.dtype = t->dtype, v.rank = t->rank, v.data = t->data;
      memcpy(v.dims, t->dims, sizeof v.dims);
      AIT_TRY(ait_api_check_input(decl, &v, i));
    }
  }
  clear_outputs(s);
  ait_tensor **outs = calloc((size_t)g->n_outputs + 1, sizeof *outs);
  if (!outs) return ait_err(AIT_E_NOMEM, "out of memory");
  ait_status st = s->run.iface->infer(s->run.state, inputs, (int)n, outs);
  if (st) {
    free(outs);
    return st;
  }
  s->outputs = outs;
  s->n_outputs = g->n_outputs;
  return AIT_OK;
}

ait_status ait_api_output_view(ait_tensor *const *outs, int n, size_t i, const char *what,
                               ait_tensor_view *out) {
  if (!out || i >= (size_t)n)
    return ait_err(AIT_E_INVALID_ARG, "output %zu does not exist (run the %s first)", i, what);
  const ait_tensor *t = outs[i];
  if (t->kind != AIT_KIND_TENSOR)
    return ait_err(AIT_E_UNSUPPORTED, "output %zu is a sequence or optional, not a tensor", i);
  memset(out, 0, sizeof *out);
  out->dtype = t->dtype;
  out->rank = t->rank;
  memcpy(out->dims, t->dims, sizeof out->dims);
  out->data = t->data;
  out->mem = t->mem;
  out->device = t->device;
  return AIT_OK;
}

ait_status ait_session_output(const ait_session *s, size_t i, ait_tensor_view *out) {
  if (!s) return ait_err(AIT_E_INVALID_ARG, "session is NULL");
  return ait_api_output_view(s->outputs, s->n_outputs, i, "session", out);
}

ait_status ait_session_set_output_mem(ait_session *s, ait_mem_kind mem) {
  if (!s) return ait_err(AIT_E_INVALID_ARG, "session is NULL");
  return ait_api_io_set_out_mem(&s->io, s->run.iface, s->cfg.iface->name, mem);
}

ait_status ait_session_bind_output(ait_session *s, size_t i, const ait_tensor_view *buf) {
  if (!s) return ait_err(AIT_E_INVALID_ARG, "session is NULL");
  return ait_api_io_bind(&s->io, s->run.iface, s->cfg.iface->name, s->model->graph->n_outputs, i,
                         buf);
}

ait_status ait_session_set_cuda_stream(ait_session *s, void *stream) {
  if (!s) return ait_err(AIT_E_INVALID_ARG, "session is NULL");
  return ait_api_io_set_stream(&s->io, s->run.iface, s->cfg.iface->name, stream);
}
