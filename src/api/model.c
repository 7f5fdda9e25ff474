/* Public model API: loading and describing inputs/outputs. */
#include <stdlib.h>
#include <string.h>

#include "api/model_impl.h"
#include "core/error.h"
#include "core/fileio.h"

const char *ait_version(void) { return AIT_VERSION_STRING; }

const ait_graph *ait_model_graph(const ait_model *m) { return m->graph; }

static ait_status load(const void *data, size_t size, const char *base_dir, const char *path,
                       ait_model **out) {
  ait_model *m = calloc(1, sizeof *m);
  if (!m) return ait_err(AIT_E_NOMEM, "out of memory");
  ait_status st = ait_onnx_parse_model(data, size, base_dir, &m->graph, &m->meta);
  if (!st && path && !(m->path = strdup(path))) st = ait_err(AIT_E_NOMEM, "out of memory");
  if (st) {
    ait_model_free(m);
    return st;
  }
  *out = m;
  return AIT_OK;
}

ait_status ait_model_load(const char *path, ait_model **out) {
  if (!path || !out) return ait_err(AIT_E_INVALID_ARG, "ait_model_load: path and out are required");
  *out = NULL;
  void *data;
  size_t size;
  AIT_TRY(ait_read_file(path, &data, &size));
  char *dir = ait_path_dir(path);
  ait_status st = dir ? load(data, size, dir, path, out) : ait_err(AIT_E_NOMEM, "out of memory");
  free(dir);
  free(data);
  if (st) return ait_err_prefix(st, "%s", path);
  return AIT_OK;
}

ait_status ait_model_load_buffer(const void *data, size_t size, const char *base_dir,
                                 ait_model **out) {
  if (!data || !out)
    return ait_err(AIT_E_INVALID_ARG, "ait_model_load_buffer: data and out are required");
  *out = NULL;
  return load(data, size, base_dir ? base_dir : ".", NULL, out);
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
