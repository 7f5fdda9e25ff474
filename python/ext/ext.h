/* aitune_c._core: the CPython extension over aitune's public C API
 * (include/aitune.h). Three pieces: core.c (the module, aitune_c.Error,
 * small functions), tensors.c (Python arrays and tensors as
 * ait_tensor_view without copying; the Buffer type that hands outputs
 * back), module.c (the Module type: samples, tuning, running, saving).
 *
 * Threading: every call into the library that can take time (tune, run,
 * save, load) runs with the GIL released; a Module serializes its calls with
 * its own lock, as the C API asks (one thread at a time per ait_module).
 * Log lines from the library reach Python through log_trampoline, which
 * takes the GIL for the call. */
#ifndef AIT_PY_EXT_H
#define AIT_PY_EXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "aitune.h"

/* aitune_c.Error (a RuntimeError): .status (the ait_status, negative),
 * .status_name (ait_strerror) and the library's message. */
extern PyObject *ext_error;

/* Raise aitune_c.Error for st with ait_last_error(), prefixed by `what`
 * when not NULL. Call on the thread that made the failing call, before any
 * other library call. Returns NULL (for `return ext_raise(...)`). */
PyObject *ext_raise(ait_status st, const char *what);
/* The same with a message already read (ait_last_error() copied while the
 * GIL was released). */
PyObject *ext_raise_msg(ait_status st, const char *msg);

/* ---- inputs -------------------------------------------------------------- */

/* One Python input seen as a tensor view. The view borrows memory that the
 * object (kept referenced here) or `copy` owns until ext_input_release. */
typedef struct ext_input {
  ait_tensor_view view;
  Py_buffer buf; /* when has_buf: the exporter's buffer, released after the call */
  int has_buf;
  PyObject *keep; /* a reference to what owns the memory (torch tensor, ...) */
  void *copy;     /* malloc'd contiguous copy of a strided buffer, or NULL */
  int copied;     /* 1 when the data was copied (not contiguous, not on the CPU) */
  int is_torch;   /* it was a torch.Tensor: outputs go back as torch tensors */
  int on_device;  /* read in place from CUDA memory (a DLPack capsule in keep) */
} ext_input;

/* Fill *in from obj: anything with the buffer protocol (numpy arrays,
 * memoryview, array.array), a torch.Tensor (its data_ptr) or an object with
 * __array_interface__. Contiguous CPU data is read in place; a strided
 * buffer is copied once into C order, a non-contiguous or non-CPU torch
 * tensor made contiguous on the CPU (in->copied says so). Returns 0, or -1
 * with a Python exception naming `index`. Needs the GIL. */
int ext_input_from(PyObject *obj, Py_ssize_t index, ext_input *in);
/* The same, but with allow_device a CUDA tensor (torch, or anything with
 * __dlpack__ on a CUDA device) becomes a view of its device memory
 * (AIT_MEM_CUDA, in->on_device) instead of a host copy. */
int ext_input_from_dev(PyObject *obj, Py_ssize_t index, ext_input *in, int allow_device);
void ext_input_release(ext_input *in);

/* Convert a sequence of inputs; on failure everything converted so far is
 * released. `ins` has room for n entries. */
int ext_inputs_from(PyObject *seq, Py_ssize_t n, ext_input *ins);
int ext_inputs_from_dev(PyObject *seq, Py_ssize_t n, ext_input *ins, int allow_device);
void ext_inputs_release(ext_input *ins, Py_ssize_t n);

/* ---- outputs ------------------------------------------------------------- */

/* aitune_c._core.Buffer: a dense C-order array that owns its memory, exported
 * through the buffer protocol (numpy.asarray and torch.from_numpy take it
 * without copying). */
extern PyTypeObject ext_buffer_type;

/* A raw output copied out of the library while the GIL is released: data
 * is malloc'd and handed to ext_buffer_wrap, which takes ownership. */
typedef struct ext_raw {
  ait_dtype dtype;
  int rank;
  int64_t dims[AIT_MAX_RANK];
  void *data;
  size_t nbytes;
} ext_raw;

/* Copy a library-owned view into *raw (no Python calls: safe without the
 * GIL); with widen_bf16, bfloat16 becomes float32 (exact: numpy has no
 * bfloat16). AIT_E_UNSUPPORTED for string tensors, AIT_E_NOMEM. */
ait_status ext_raw_copy(const ait_tensor_view *v, int widen_bf16, ext_raw *raw);
/* A new Buffer owning raw->data (freed with it; also on failure). */
PyObject *ext_buffer_wrap(ext_raw *raw);
/* The output as the caller wants it: a numpy array, or with as_torch a
 * torch tensor, on the Buffer's memory (no copy). Takes raw->data. */
PyObject *ext_output_object(ext_raw *raw, int as_torch);

/* A device output view (AIT_MEM_CUDA, valid until the module's next run) as
 * a torch CUDA tensor through DLPack: with `into` (a torch tensor of the
 * output's shape and dtype) copied into it on the device and `into`
 * returned; else with `alias` the tensor aliasing the view itself; else a
 * clone that owns its memory. Needs the GIL and torch imported. */
PyObject *ext_device_output(const ait_tensor_view *v, PyObject *into, int alias);
/* torch.cuda.current_stream(device).cuda_stream as a pointer (NULL when
 * torch is not imported); -1 with an exception set on failure. */
int ext_torch_stream(int device, void **stream);

/* struct-module format of a dtype ("f", "q", ...); NULL when none
 * (bfloat16 is exported as "H", its bits). */
const char *ext_dtype_format(ait_dtype dt);

/* ---- logging ------------------------------------------------------------- */

/* User data for log_trampoline: the Python callable(is_warning, line) and
 * the first exception it raised (re-raised when the C call returns). */
typedef struct ext_log {
  PyObject *fn;   /* borrowed; may be NULL (lines dropped) */
  int unraisable; /* 1: report the callable's exceptions as unraisable instead */
  PyObject *exc_type, *exc_value, *exc_tb;
} ext_log;

/* An ait_log_fn: takes the GIL, calls fn; a raised exception is kept in
 * the ext_log (the first one) so the caller can re-raise it. */
void ext_log_trampoline(void *user, int is_warning, const char *line);
/* After the C call: re-raise what the callable raised (returns -1), else 0. */
int ext_log_finish(ext_log *lg);

/* ---- the Module type (module.c) ----------------------------------------- */

extern PyTypeObject ext_module_type;

/* For tune.c: the wrapped ait_module, and its lock (take it without the
 * GIL, as the GIL is not held while the library runs). */
ait_module *ext_module_ptr(PyObject *self);
void ext_module_lock(PyObject *self);
void ext_module_unlock(PyObject *self);
/* Module.tune(**options) (tune.c). */
PyObject *ext_module_tune(PyObject *self, PyObject *args, PyObject *kw);

#endif
