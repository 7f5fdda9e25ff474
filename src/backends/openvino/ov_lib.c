/* Loading libopenvino_c at run time (ov_lib.h). The symbols are a table of
 * names and offsets into struct ov_lib, so adding a call is one row. */
#include "backends/openvino/ov_info.h"

#include <stdatomic.h>
#include <stdio.h>

static atomic_ulong compiles;

unsigned long ov_info_compiles(void) { return atomic_load(&compiles); }
void ov_info_count_compile(void) { atomic_fetch_add(&compiles, 1); }

#ifndef AIT_HAVE_OPENVINO
const char *ov_info_version(char *buf, size_t n) {
  snprintf(buf, n, "none");
  return buf;
}
#else

#include "backends/openvino/ov_lib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#ifndef AIT_OPENVINO_LIB
#define AIT_OPENVINO_LIB "libopenvino_c.so"
#endif

#define ROW(field, sym)                                                                            \
  { offsetof(ov_lib, field), sym }
static const struct {
  size_t off;
  const char *sym;
} symbols[] = {
    ROW(core_create, "ov_core_create"),
    ROW(core_free, "ov_core_free"),
    ROW(read_model_from_memory_buffer, "ov_core_read_model_from_memory_buffer"),
    ROW(compile_model, "ov_core_compile_model"),
    ROW(model_free, "ov_model_free"),
    ROW(model_reshape_by_port_indexes, "ov_model_reshape_by_port_indexes"),
    ROW(partial_shape_create_static, "ov_partial_shape_create_static"),
    ROW(partial_shape_create, "ov_partial_shape_create"),
    ROW(partial_shape_free, "ov_partial_shape_free"),
    ROW(compiled_model_create_infer_request, "ov_compiled_model_create_infer_request"),
    ROW(compiled_model_free, "ov_compiled_model_free"),
    ROW(set_input_tensor_by_index, "ov_infer_request_set_input_tensor_by_index"),
    ROW(get_output_tensor_by_index, "ov_infer_request_get_output_tensor_by_index"),
    ROW(infer, "ov_infer_request_infer"),
    ROW(infer_request_free, "ov_infer_request_free"),
    ROW(tensor_create_from_host_ptr, "ov_tensor_create_from_host_ptr"),
    ROW(tensor_get_shape, "ov_tensor_get_shape"),
    ROW(tensor_get_element_type, "ov_tensor_get_element_type"),
    ROW(tensor_data, "ov_tensor_data"),
    ROW(tensor_free, "ov_tensor_free"),
    ROW(tensor_get_size, "ov_tensor_get_size"),
    ROW(shape_free, "ov_shape_free"),
    ROW(get_last_err_msg, "ov_get_last_err_msg"),
    ROW(get_error_info, "ov_get_error_info"),
    ROW(model_inputs_size, "ov_model_inputs_size"),
    ROW(model_const_input_by_index, "ov_model_const_input_by_index"),
    ROW(port_get_any_name, "ov_port_get_any_name"),
    ROW(output_const_port_free, "ov_output_const_port_free"),
    ROW(free_str, "ov_free"),
    ROW(get_openvino_version, "ov_get_openvino_version"),
    ROW(core_set_property, "ov_core_set_property"),
    ROW(export_model, "ov_compiled_model_export_model"),
    ROW(import_model, "ov_core_import_model"),
    ROW(compiled_model_inputs_size, "ov_compiled_model_inputs_size"),
    ROW(compiled_model_input_by_index, "ov_compiled_model_input_by_index"),
    ROW(version_free, "ov_version_free"),
};

static ov_lib lib;
static bool loaded;
static char load_error[512];
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* OpenVINO's TBB dlopens libtbbbind with RTLD_DEEPBIND, which
 * AddressSanitizer's runtime refuses (the process dies), and TBB is not
 * instrumented for ThreadSanitizer: in sanitizer builds the backend says
 * so instead of loading. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define AIT_OV_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define AIT_OV_SANITIZED 1
#endif
#endif

static void load(void) {
#ifdef AIT_OV_SANITIZED
  snprintf(load_error, sizeof load_error,
           "not in a sanitizer build (OpenVINO's TBB dlopens with RTLD_DEEPBIND, which "
           "AddressSanitizer refuses; TBB is not instrumented for ThreadSanitizer)");
  return;
#endif
  /* the path CMake found first, then the loader's search path */
  const char *const paths[] = {AIT_OPENVINO_LIB, "libopenvino_c.so"};
  void *h = NULL;
  for (size_t i = 0; !h && i < sizeof paths / sizeof paths[0]; i++) {
    h = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
    if (!h && i == 0)
      snprintf(load_error, sizeof load_error, "cannot load %s: %s", paths[0], dlerror());
  }
  if (!h) return;
  for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; i++) {
    void *f = dlsym(h, symbols[i].sym);
    if (!f) {
      snprintf(load_error, sizeof load_error, "libopenvino_c has no %s (too old?)", symbols[i].sym);
      dlclose(h);
      return;
    }
    memcpy((char *)&lib + symbols[i].off, &f, sizeof f);
  }
  loaded = true;
}

const ov_lib *ov_lib_get(char *why, size_t n) {
  pthread_once(&once, load);
  if (!loaded && why) snprintf(why, n, "%s", load_error);
  return loaded ? &lib : NULL;
}

const char *ov_lib_error(const ov_lib *L, ov_status_e st) {
  const char *m = L->get_last_err_msg ? L->get_last_err_msg() : NULL;
  if (m && *m) return m;
  m = L->get_error_info ? L->get_error_info(st) : NULL;
  return m ? m : "unknown error";
}

const char *ov_info_version(char *buf, size_t n) {
  const ov_lib *L = ov_lib_get(NULL, 0);
  ov_version_t v = {0};
  snprintf(buf, n, "none");
  if (L && L->get_openvino_version(&v) == OK) {
    snprintf(buf, n, "%s", v.buildNumber ? v.buildNumber : "unknown");
    L->version_free(&v);
  }
  for (char *c = buf; *c; c++) /* one word without the fingerprint's separators */
    if (*c == ' ' || *c == ';' || *c == '\n') *c = '_';
  return buf;
}

#endif
