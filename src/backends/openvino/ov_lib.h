/* OpenVINO's C API (libopenvino_c), loaded at run time with dlopen: libaitune
 * has no link-time dependency on it, and a host without it lists backend
 * `openvino` as unavailable with the reason. The types come from OpenVINO's
 * own headers (the PyPI wheel ships them under openvino/include), found by
 * CMake; only when they are found is this file compiled (AIT_HAVE_OPENVINO).
 *
 * Threading: ov_lib_get() loads the library once per process (under a
 * pthread_once); the function table is read-only afterwards. */
#ifndef AIT_BACKENDS_OV_LIB_H
#define AIT_BACKENDS_OV_LIB_H

#include <openvino/c/openvino.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct ov_lib {
  ov_status_e (*core_create)(ov_core_t **core);
  void (*core_free)(ov_core_t *core);
  ov_status_e (*read_model_from_memory_buffer)(const ov_core_t *core, const char *model_str,
                                               const size_t str_len, const ov_tensor_t *weights,
                                               ov_model_t **model);
  ov_status_e (*compile_model)(const ov_core_t *core, const ov_model_t *model,
                               const char *device_name, const size_t property_args_size,
                               ov_compiled_model_t **compiled_model, ...);
  void (*model_free)(ov_model_t *model);
  ov_status_e (*model_reshape_by_port_indexes)(const ov_model_t *model, const size_t *port_indexes,
                                               const ov_partial_shape_t *partial_shape,
                                               size_t size);
  ov_status_e (*partial_shape_create_static)(const int64_t rank, const int64_t *dims,
                                             ov_partial_shape_t *partial_shape_obj);
  ov_status_e (*partial_shape_create)(const int64_t rank, const ov_dimension_t *dims,
                                      ov_partial_shape_t *partial_shape_obj);
  void (*partial_shape_free)(ov_partial_shape_t *partial_shape);
  ov_status_e (*compiled_model_create_infer_request)(const ov_compiled_model_t *compiled_model,
                                                     ov_infer_request_t **infer_request);
  void (*compiled_model_free)(ov_compiled_model_t *compiled_model);
  ov_status_e (*set_input_tensor_by_index)(ov_infer_request_t *infer_request, const size_t idx,
                                           const ov_tensor_t *tensor);
  ov_status_e (*get_output_tensor_by_index)(const ov_infer_request_t *infer_request,
                                            const size_t idx, ov_tensor_t **tensor);
  ov_status_e (*infer)(ov_infer_request_t *infer_request);
  void (*infer_request_free)(ov_infer_request_t *infer_request);
  ov_status_e (*tensor_create_from_host_ptr)(const ov_element_type_e type, const ov_shape_t shape,
                                             void *host_ptr, ov_tensor_t **tensor);
  ov_status_e (*tensor_get_shape)(const ov_tensor_t *tensor, ov_shape_t *shape);
  ov_status_e (*tensor_get_element_type)(const ov_tensor_t *tensor, ov_element_type_e *type);
  ov_status_e (*tensor_data)(const ov_tensor_t *tensor, void **data);
  ov_status_e (*tensor_get_size)(const ov_tensor_t *tensor, size_t *elements_size);
  void (*tensor_free)(ov_tensor_t *tensor);
  ov_status_e (*shape_free)(ov_shape_t *shape);
  const char *(*get_last_err_msg)(void);
  const char *(*get_error_info)(ov_status_e status);
  ov_status_e (*model_inputs_size)(const ov_model_t *model, size_t *input_size);
  ov_status_e (*model_const_input_by_index)(const ov_model_t *model, const size_t index,
                                            ov_output_const_port_t **input_port);
  ov_status_e (*port_get_any_name)(const ov_output_const_port_t *port, char **tensor_name);
  void (*output_const_port_free)(ov_output_const_port_t *port);
  void (*free_str)(const char *content);
  ov_status_e (*get_openvino_version)(ov_version_t *version);
  void (*version_free)(ov_version_t *version);
  ov_status_e (*core_set_property)(const ov_core_t *core, const char *device_name, ...);
  ov_status_e (*export_model)(const ov_compiled_model_t *compiled_model,
                              const char *export_model_path);
  ov_status_e (*import_model)(const ov_core_t *core, const char *content, const size_t content_size,
                              const char *device_name, ov_compiled_model_t **compiled_model);
  ov_status_e (*compiled_model_inputs_size)(const ov_compiled_model_t *compiled_model,
                                            size_t *size);
  ov_status_e (*compiled_model_input_by_index)(const ov_compiled_model_t *compiled_model,
                                               const size_t index,
                                               ov_output_const_port_t **input_port);
} ov_lib;

/* The loaded library, or NULL with the reason in why (the path tried and
 * dlerror's message, or the missing symbol). */
const ov_lib *ov_lib_get(char *why, size_t n);
/* OpenVINO's message for a failed call: its last error, else the status's
 * description. */
const char *ov_lib_error(const ov_lib *L, ov_status_e st);

#endif
