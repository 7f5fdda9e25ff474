/* aitune: tune ONNX models for the hardware at hand.
 *
 * The one public header. Everything here is an opaque handle, a plain enum or
 * a plain struct the caller fills; no internal or protobuf type leaks.
 *
 * Ownership: a function that hands out a handle (`*_load`, `*_create`) makes
 * the caller its owner, who releases it with the matching `*_free`. Pointers
 * passed in are borrowed for the duration of the call unless said otherwise.
 *
 * Threading: the library has no global mutable state apart from the per-thread
 * last-error message. A model (`ait_model`) is immutable after loading and may
 * be shared by any number of threads and sessions. A session (`ait_session`)
 * is not thread-safe: use one session per thread, or serialize calls to it.
 *
 * Errors: every fallible function returns an `ait_status`; `AIT_OK` (0) is
 * success, errors are negative. `ait_last_error()` gives a message naming the
 * problem (file, node, op, opset, tensor), valid until the next failing call
 * on the same thread. The library never exits, aborts or prints to stdout.
 */
#ifndef AITUNE_H
#define AITUNE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AIT_VERSION_MAJOR 0
#define AIT_VERSION_MINOR 1
#define AIT_VERSION_PATCH 0
#define AIT_VERSION_STRING "0.1.0"

/* Largest tensor rank the library handles. */
#define AIT_MAX_RANK 8

typedef enum ait_status {
  AIT_OK = 0,
  AIT_E_INVALID_ARG = -1,   /* a caller passed a bad argument */
  AIT_E_IO = -2,            /* a file could not be read or written */
  AIT_E_PARSE = -3,         /* bytes are not a valid ONNX protobuf */
  AIT_E_INVALID_MODEL = -4, /* the model is malformed (cycle, missing tensor) */
  AIT_E_UNSUPPORTED = -5,   /* an op, opset, dtype or feature is not supported */
  AIT_E_SHAPE = -6,         /* shapes do not agree */
  AIT_E_DTYPE = -7,         /* element types do not agree */
  AIT_E_NOMEM = -8,         /* out of memory */
  AIT_E_RUNTIME = -9,       /* a kernel failed while running */
  AIT_E_NOT_FOUND = -10,    /* a named thing does not exist */
  AIT_E_INTERNAL = -11      /* a bug in aitune */
} ait_status;

/* Element types. The values are ONNX's TensorProto.DataType codes. */
typedef enum ait_dtype {
  AIT_UNDEFINED = 0,
  AIT_FLOAT32 = 1,
  AIT_UINT8 = 2,
  AIT_INT8 = 3,
  AIT_UINT16 = 4,
  AIT_INT16 = 5,
  AIT_INT32 = 6,
  AIT_INT64 = 7,
  AIT_STRING = 8,
  AIT_BOOL = 9,
  AIT_FLOAT16 = 10,
  AIT_FLOAT64 = 11,
  AIT_UINT32 = 12,
  AIT_UINT64 = 13,
  AIT_COMPLEX64 = 14,
  AIT_COMPLEX128 = 15,
  AIT_BFLOAT16 = 16
} ait_dtype;

/* Static string for a status code ("invalid model", ...). Never NULL. */
const char *ait_strerror(ait_status status);
/* Message of the last failing call on this thread; "" when none. The string is
 * owned by the library and valid until the next failing call on this thread. */
const char *ait_last_error(void);
/* Static name of a dtype ("float32", ...); "undefined" for unknown codes. */
const char *ait_dtype_name(ait_dtype dtype);
/* Size in bytes of one element; 0 for strings and unknown codes. */
size_t ait_dtype_size(ait_dtype dtype);
/* Library version string, static. */
const char *ait_version(void);

/* ---- models ---------------------------------------------------------- */

typedef struct ait_model ait_model;

/* Description of a graph input or output. Strings are owned by the model and
 * live as long as it. dims[k] < 0 means unknown; dim_names[k] is the symbolic
 * name of that dim or NULL. rank < 0 means the rank is unknown. */
typedef struct ait_tensor_info {
  const char *name;
  ait_dtype dtype;
  int rank;
  int64_t dims[AIT_MAX_RANK];
  const char *dim_names[AIT_MAX_RANK];
} ait_tensor_info;

/* Load an ONNX model from a file. External data files are resolved relative
 * to the model's folder. On success *out is a new model the caller frees. */
ait_status ait_model_load(const char *path, ait_model **out);
/* Load from a caller-owned buffer (copied; the buffer may be freed after the
 * call). base_dir resolves external data; NULL means the current folder. */
ait_status ait_model_load_buffer(const void *data, size_t size, const char *base_dir,
                                 ait_model **out);
/* Release a model. NULL is fine. Sessions created from it must be freed first. */
void ait_model_free(ait_model *model);

size_t ait_model_num_inputs(const ait_model *model);
size_t ait_model_num_outputs(const ait_model *model);
/* Fill *info for input/output i. Returns AIT_E_INVALID_ARG when i is out of range. */
ait_status ait_model_input(const ait_model *model, size_t i, ait_tensor_info *info);
ait_status ait_model_output(const ait_model *model, size_t i, ait_tensor_info *info);

/* ---- sessions -------------------------------------------------------- */

typedef struct ait_session ait_session;

/* A tensor passed across the API: a view of memory owned by someone else.
 * Data is dense, row-major, of dtype's element size. */
typedef struct ait_tensor_view {
  ait_dtype dtype;
  int rank;
  int64_t dims[AIT_MAX_RANK];
  void *data;
} ait_tensor_view;

/* Names of the backends compiled into this library, NULL-terminated, static. */
const char *const *ait_backend_names(void);

/* Create a session that runs `model` on a backend given as "name" or
 * "name:key=value,..." (e.g. "eager", "native:threads=2"; NULL means
 * "eager"); the backend is built here. The model is borrowed and must outlive
 * the session. On success *out is a new session the caller frees. */
ait_status ait_session_create(const ait_model *model, const char *backend, ait_session **out);
void ait_session_free(ait_session *session);

/* Run the model. inputs[i] is graph input i (declaration order, initializers
 * excluded); n_inputs must equal ait_model_num_inputs(). Input memory stays
 * owned by the caller and is read in place, without copying, during the call.
 * Shapes and dtypes are checked against the model's declarations. */
ait_status ait_session_run(ait_session *session, const ait_tensor_view *inputs, size_t n_inputs);

/* View of output i of the last successful run. The memory is owned by the
 * session and stays valid until the next ait_session_run or ait_session_free. */
ait_status ait_session_output(const ait_session *session, size_t i, ait_tensor_view *out);

#ifdef __cplusplus
}
#endif
#endif /* AITUNE_H */
