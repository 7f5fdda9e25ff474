/* Public model API: loading and describing inputs/outputs. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "api/model_impl.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/struct_size.h"

const char *ait_version(void) { return AIT_VERSION_STRING; }

const ait_graph *ait_model_graph(const ait_model *m) { return m->graph; }

/* ---- load options (ait_load_options) ------------------------------------
 * The struct_size rules of ait_tune_options (src/api/module.c): every
 * field, in order, so that a struct_size never ends inside one. */
#define LOAD_FIELD(f)                                                                              \
  { #f, offsetof(ait_load_options, f), sizeof(((ait_load_options *)0)->f) }
static const ait_field_span load_fields[] = {
    LOAD_FIELD(struct_size),      LOAD_FIELD(max_depth),         LOAD_FIELD(max_nodes),
    LOAD_FIELD(max_tensor_bytes), LOAD_FIELD(max_fold_elements),
};
#undef LOAD_FIELD

static ait_status check_load_size(size_t size) {
  return ait_struct_size_check("ait_load_options", "load options", "ait_load_options_init", size,
                               sizeof(ait_load_options), load_fields,
                               sizeof load_fields / sizeof load_fields[0], sizeof load_fields[0]);
}

static void load_defaults(ait_load_options *o) {
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  ait_limits l = ait_limits_default();
  o->max_depth = l.max_depth;
  o->max_nodes = l.max_nodes;
  o->max_tensor_bytes = l.max_tensor_bytes;
  o->max_fold_elements = l.max_fold_elements;
}

ait_status ait_load_options_init_size(ait_load_options *o, size_t struct_size) {
  if (!o) return ait_err(AIT_E_INVALID_ARG, "ait_load_options_init: the options are NULL");
  AIT_TRY(check_load_size(struct_size));
  ait_load_options d;
  load_defaults(&d);
  d.struct_size = struct_size;
  memcpy(o, &d, struct_size < sizeof d ? struct_size : sizeof d);
  if (struct_size > sizeof d) memset((char *)o + sizeof d, 0, struct_size - sizeof d);
  return AIT_OK;
}

void(ait_load_options_init)(ait_load_options *o) { (void)ait_load_options_init_size(o, sizeof *o); }

static ait_status check_range(const char *field, long long v, long long lo, long long hi) {
  if (v < lo || v > hi)
    return ait_err(AIT_E_INVALID_ARG, "ait_load_options.%s is %lld, outside [%lld, %lld]", field, v,
                   lo, hi);
  return AIT_OK;
}

ait_status ait_limits_from_options(const ait_load_options *in, ait_limits *out) {
  ait_load_options o;
  load_defaults(&o);
  if (in) {
    size_t size = in->struct_size;
    AIT_TRY(check_load_size(size));
    for (size_t i = sizeof o; i < size; i++) /* fields of a newer header than ours */
      if (((const unsigned char *)in)[i])
        return ait_err(AIT_E_INVALID_ARG,
                       "ait_load_options: struct_size is %zu, this library's options are %zu "
                       "bytes, and byte %zu is set: the caller was built against a newer "
                       "aitune.h than this library (%s) knows",
                       size, sizeof o, i, AIT_VERSION_STRING);
    memcpy(&o, in, size < sizeof o ? size : sizeof o);
  }
  AIT_TRY(check_range("max_depth", o.max_depth, 1, AIT_MAX_DEPTH_BOUND));
  AIT_TRY(check_range("max_nodes", o.max_nodes, 1, AIT_MAX_NODES_BOUND));
  AIT_TRY(check_range("max_tensor_bytes", o.max_tensor_bytes, 1, AIT_MAX_TENSOR_BYTES_BOUND));
  AIT_TRY(check_range("max_fold_elements", o.max_fold_elements, 1, AIT_MAX_FOLD_ELEMENTS_BOUND));
  *out = (ait_limits){o.max_depth, o.max_nodes, o.max_tensor_bytes, o.max_fold_elements};
  return AIT_OK;
}

static ait_status load(const void *data, size_t size, const char *base_dir, const char *path,
                       const ait_limits *lim, ait_model **out) {
  ait_model *m = calloc(1, sizeof *m);
  if (!m) return ait_err(AIT_E_NOMEM, "out of memory");
  ait_status st = ait_onnx_parse_model_limits(data, size, base_dir, lim, &m->graph, &m->meta);
  if (!st && path && !(m->path = strdup(path))) st = ait_err(AIT_E_NOMEM, "out of memory");
  if (st) {
    ait_model_free(m);
    return st;
  }
  *out = m;
  return AIT_OK;
}

ait_status ait_model_load_opts(const char *path, const ait_load_options *opts, ait_model **out) {
  if (!path || !out) return ait_err(AIT_E_INVALID_ARG, "ait_model_load: path and out are required");
  *out = NULL;
  ait_limits lim;
  AIT_TRY(ait_limits_from_options(opts, &lim));
  return ait_model_load_limits(path, &lim, out);
}

ait_status ait_model_load_limits(const char *path, const ait_limits *lim, ait_model **out) {
  *out = NULL;
  void *data;
  size_t size;
  AIT_TRY(ait_read_file(path, &data, &size));
  char *dir = ait_path_dir(path);
  ait_status st =
      dir ? load(data, size, dir, path, lim, out) : ait_err(AIT_E_NOMEM, "out of memory");
  free(dir);
  free(data);
  if (st) return ait_err_prefix(st, "%s", path);
  return AIT_OK;
}

ait_status ait_model_load(const char *path, ait_model **out) {
  return ait_model_load_opts(path, NULL, out);
}

ait_status ait_model_load_buffer_opts(const void *data, size_t size, const char *base_dir,
                                      const ait_load_options *opts, ait_model **out) {
  if (!data || !out)
    return ait_err(AIT_E_INVALID_ARG, "ait_model_load_buffer: data and out are required");
  *out = NULL;
  ait_limits lim;
  AIT_TRY(ait_limits_from_options(opts, &lim));
  return load(data, size, base_dir ? base_dir : ".", NULL, &lim, out);
}

ait_status ait_model_load_buffer(const void *data, size_t size, const char *base_dir,
                                 ait_model **out) {
  return ait_model_load_buffer_opts(data, size, base_dir, NULL, out);
}

void ait_model_free(ait_model *m) {
  if (!m) return;
  ait_graph_free(m->graph);
  ait_onnx_meta_clear(&m->meta);
  free(m->path);
  free(m);
}

const char *ait_model_metadata(const ait_model *m, const char *key) {
  if (!m || !key) return NULL;
  for (int i = m->meta.n_props - 1; i >= 0; i--)
    if (!strcmp(m->meta.prop_keys[i], key)) return m->meta.prop_values[i];
  return NULL;
}

size_t ait_model_num_inputs(const ait_model *m) { return m ? (size_t)m->graph->n_inputs : 0; }
size_t ait_model_num_outputs(const ait_model *m) { return m ? (size_t)m->graph->n_outputs : 0; }

static void fill_info(const ait_value *v, ait_tensor_info *info) {
  memset(info, 0, sizeof *info);
  info->name = v->name;
  info->dtype = v->dtype;
  info->rank = v->rank;
  for (int k = 0; k < v->rank && k < AIT_MAX_RANK; k++) {
    info->dims[k] = v->dims[k].v;
    info->dim_names[k] = v->dims[k].sym;
  }
}

ait_status ait_model_input(const ait_model *m, size_t i, ait_tensor_info *info) {
  if (!m || !info || i >= (size_t)m->graph->n_inputs)
    return ait_err(AIT_E_INVALID_ARG, "model input %zu does not exist", i);
  fill_info(&m->graph->values[m->graph->inputs[i]], info);
  return AIT_OK;
}

ait_status ait_model_output(const ait_model *m, size_t i, ait_tensor_info *info) {
  if (!m || !info || i >= (size_t)m->graph->n_outputs)
    return ait_err(AIT_E_INVALID_ARG, "model output %zu does not exist", i);
  fill_info(&m->graph->values[m->graph->outputs[i]], info);
  return AIT_OK;
}
