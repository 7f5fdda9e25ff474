/* The public module API: argument checks, then the module object's own
 * functions (src/tune/module.c, cache.c, artifact.c through module_impl.h). */
#include <stdlib.h>

#include "core/error.h"
#include "tune/module_impl.h"
#include "tune/options.h"

ait_status ait_tune_options_init_size(ait_tune_options *o, size_t struct_size) {
  if (!o) return ait_err(AIT_E_INVALID_ARG, "ait_tune_options_init: the options are NULL");
  AIT_TRY(ait_tune_options_check_size(struct_size));
  ait_tune_options_fill(o, struct_size);
  return AIT_OK;
}

void(ait_tune_options_init)(ait_tune_options *o) { (void)ait_tune_options_init_size(o, sizeof *o); }

void ait_free(void *p) { free(p); }

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
  return ait_mod_create_buffer(data, size, base_dir, name, opts, out);
}

void ait_module_free(ait_module *m) {
  if (m) ait_mod_free(m);
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

ait_status ait_module_add_sample(ait_module *m, const ait_tensor_view *inputs, size_t n) {
  if (!m) return ait_err(AIT_E_INVALID_ARG, "module is NULL");
  if (n > AIT_MOD_MAX_INPUTS)
    return ait_err(AIT_E_UNSUPPORTED, "at most %d inputs", AIT_MOD_MAX_INPUTS);
  return ait_mod_add_sample(m, inputs, n);
}

ait_status ait_module_infer(ait_module *m, const ait_tensor_view *inputs, size_t n) {
  if (!m) return ait_err(AIT_E_INVALID_ARG, "module is NULL");
  if (n > AIT_MOD_MAX_INPUTS)
    return ait_err(AIT_E_UNSUPPORTED, "at most %d inputs", AIT_MOD_MAX_INPUTS);
  return ait_mod_infer(m, inputs, n);
}

ait_status ait_module_output(const ait_module *m, size_t i, ait_tensor_view *out) {
  if (!m) return ait_err(AIT_E_INVALID_ARG, "module is NULL");
  return ait_mod_output(m, i, out);
}

ait_status ait_module_set_output_mem(ait_module *m, ait_mem_kind mem) {
  if (!m) return ait_err(AIT_E_INVALID_ARG, "module is NULL");
  return ait_mod_set_output_mem(m, mem);
}

ait_status ait_module_set_cuda_stream(ait_module *m, void *stream) {
  if (!m) return ait_err(AIT_E_INVALID_ARG, "module is NULL");
  return ait_mod_set_cuda_stream(m, stream);
}

void ait_module_set_log(ait_module *m, ait_log_fn log, void *user) {
  if (m) ait_mod_set_log(m, log, user);
}

const char *ait_module_backend(const ait_module *m) { return m ? ait_mod_backend(m) : ""; }
int ait_module_batch_size(const ait_module *m) { return m ? ait_mod_batch_size(m) : 0; }
const ait_model *ait_module_model(const ait_module *m) { return m ? ait_mod_model(m) : NULL; }

ait_status ait_module_memory(const ait_module *m, int64_t *weights_bytes, int64_t *work_bytes) {
  if (!m) return ait_err(AIT_E_INVALID_ARG, "module is NULL");
  return ait_mod_memory(m, weights_bytes, work_bytes);
}

ait_status ait_module_set_axis_range(ait_module *m, const char *input, int axis, int64_t min,
                                     int64_t opt, int64_t max) {
  if (!m || !input) return ait_err(AIT_E_INVALID_ARG, "module and input are required");
  return ait_mod_set_axis_range(m, input, axis, min, opt, max);
}

ait_status ait_module_report_json(const ait_module *m, char **json) {
  if (!m || !json) return ait_err(AIT_E_INVALID_ARG, "module and json are required");
  return ait_mod_report_json(m, json);
}

ait_status ait_module_save(ait_module *m, const char *dir) {
  return ait_module_save_flags(m, dir, 0);
}

ait_status ait_module_save_flags(ait_module *m, const char *dir, unsigned flags) {
  if (!m || !dir || !dir[0]) return ait_err(AIT_E_INVALID_ARG, "module and dir are required");
  if (flags & ~AIT_SAVE_FORCE) return ait_err(AIT_E_INVALID_ARG, "unknown save flags 0x%x", flags);
  return ait_artifact_save(m, dir, flags);
}

ait_status ait_module_tune(ait_module *m, const ait_tune_options *o) {
  if (!m) return ait_err(AIT_E_INVALID_ARG, "module is NULL");
  return ait_mod_tune(m, o);
}
