/* aitune_c._core.Module: one ait_module (include/aitune.h) and the lock that
 * serializes calls to it. Every method that enters the library for long
 * (tune, run, save, load) releases the GIL while it runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ext.h"

typedef struct ext_module {
  PyObject ob_base;        /* PyObject_HEAD, spelled out for clang-format */
  ait_module *m;           /* owned */
  PyThread_type_lock lock; /* one call at a time into m */
  PyObject *run_log;       /* callable(is_warning, line) for run-time warnings, or NULL */
  ext_log run_log_ctx;
  size_t n_inputs, n_outputs;
  ait_mem_kind out_mem; /* where the module leaves its outputs (AIT_MEM_HOST at first) */
} ext_module;

/* Take the module's lock without holding the GIL (another thread may be
 * inside the library with it): only between PyEval_SaveThread and
 * PyEval_RestoreThread. */
#define LOCK(self) PyThread_acquire_lock((self)->lock, WAIT_LOCK)
#define UNLOCK(self) PyThread_release_lock((self)->lock)

#define MAX_INPUTS 64 /* as ait_module_infer */

/* Where the module's run-time warnings go: fn(is_warning, line), or None.
 * Its exceptions are reported as unraisable (no caller to hand them to). */
static int set_run_log(ext_module *self, PyObject *fn) {
  PyObject *f = fn == Py_None ? NULL : fn;
  if (f && !PyCallable_Check(f)) {
    PyErr_SetString(PyExc_TypeError, "log must be callable");
    return -1;
  }
  PyThreadState *ts = PyEval_SaveThread();
  LOCK(self);
  PyEval_RestoreThread(ts);
  Py_XINCREF(f);
  Py_XSETREF(self->run_log, f);
  self->run_log_ctx.fn = f;
  self->run_log_ctx.unraisable = 1;
  ait_module_set_log(self->m, f ? ext_log_trampoline : NULL, f ? &self->run_log_ctx : NULL);
  UNLOCK(self);
  return 0;
}

/* Wrap a new ait_module (owned from here on). */
static PyObject *wrap(PyTypeObject *type, ait_module *m) {
  ext_module *self = (ext_module *)type->tp_alloc(type, 0);
  if (!self) {
    ait_module_free(m);
    return NULL;
  }
  self->m = m;
  if (!(self->lock = PyThread_allocate_lock())) {
    Py_DECREF(self);
    return PyErr_NoMemory();
  }
  self->n_inputs = ait_model_num_inputs(ait_module_model(m));
  self->n_outputs = ait_model_num_outputs(ait_module_model(m));
  return (PyObject *)self;
}

static void module_dealloc(ext_module *self) {
  ait_module_free(self->m);
  if (self->lock) PyThread_free_lock(self->lock);
  Py_CLEAR(self->run_log);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *module_from_file(PyTypeObject *type, PyObject *args, PyObject *kw) {
  static char *kws[] = {"path", "name", NULL};
  PyObject *path = NULL;
  const char *name = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|z", kws, PyUnicode_FSConverter, &path, &name))
    return NULL;
  ait_module *m = NULL;
  ait_status st;
  PyThreadState *ts = PyEval_SaveThread();
  st = ait_module_create(PyBytes_AS_STRING(path), name, &m);
  char why[1024];
  snprintf(why, sizeof why, "%s", st ? ait_last_error() : "");
  PyEval_RestoreThread(ts);
  Py_DECREF(path);
  if (st) return ext_raise_msg(st, why);
  return wrap(type, m);
}

static PyObject *module_from_bytes(PyTypeObject *type, PyObject *args, PyObject *kw) {
  static char *kws[] = {"data", "base_dir", "name", NULL};
  Py_buffer data;
  const char *base = NULL, *name = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "y*|zz", kws, &data, &base, &name)) return NULL;
  ait_module *m = NULL;
  ait_status st;
  PyThreadState *ts = PyEval_SaveThread();
  st = ait_module_create_buffer(data.buf, (size_t)data.len, base, name, &m);
  char why[1024];
  snprintf(why, sizeof why, "%s", st ? ait_last_error() : "");
  PyEval_RestoreThread(ts);
  PyBuffer_Release(&data);
  if (st) return ext_raise_msg(st, why);
  return wrap(type, m);
}

static PyObject *module_load(PyTypeObject *type, PyObject *args, PyObject *kw) {
  static char *kws[] = {"dir", "log", NULL};
  PyObject *dir = NULL, *log = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|O", kws, PyUnicode_FSConverter, &dir, &log))
    return NULL;
  ext_log lg = {log == Py_None ? NULL : log, 0, NULL, NULL, NULL};
  ait_module *m = NULL;
  ait_status st;
  PyThreadState *ts = PyEval_SaveThread();
  st = ait_module_load(PyBytes_AS_STRING(dir), ext_log_trampoline, &lg, &m);
  /* the module keeps the load's log for its runs: not a pointer to this frame */
  if (!st) ait_module_set_log(m, NULL, NULL);
  char why[1024];
  snprintf(why, sizeof why, "%s", st ? ait_last_error() : "");
  PyEval_RestoreThread(ts);
  Py_DECREF(dir);
  if (st) {
    ext_log_finish(&lg); /* the library's error wins over the logger's */
    PyErr_Clear();
    return ext_raise_msg(st, why);
  }
  if (ext_log_finish(&lg) < 0) {
    ait_module_free(m);
    return NULL;
  }
  PyObject *self = wrap(type, m);
  if (self && log != Py_None && set_run_log((ext_module *)self, log) < 0) Py_CLEAR(self);
  return self;
}

/* inputs / outputs: [(name, dtype, dims, dim_names)], dims with None where
 * unknown and dim_names with None where a dim has no symbolic name. */
static PyObject *describe(const ait_model *model, size_t n,
                          ait_status (*get)(const ait_model *, size_t, ait_tensor_info *)) {
  PyObject *list = PyList_New((Py_ssize_t)n);
  for (size_t i = 0; list && i < n; i++) {
    ait_tensor_info info;
    if (get(model, i, &info)) {
      Py_DECREF(list);
      return ext_raise(AIT_E_INTERNAL, NULL);
    }
    int rank = info.rank < 0 ? 0 : info.rank;
    PyObject *dims = info.rank < 0 ? Py_NewRef(Py_None) : PyTuple_New(rank);
    PyObject *names = info.rank < 0 ? Py_NewRef(Py_None) : PyTuple_New(rank);
    for (int k = 0; info.rank >= 0 && dims && names && k < rank; k++) {
      PyTuple_SET_ITEM(dims, k,
                       info.dims[k] < 0 ? Py_NewRef(Py_None) : PyLong_FromLongLong(info.dims[k]));
      PyTuple_SET_ITEM(names, k,
                       info.dim_names[k] ? PyUnicode_FromString(info.dim_names[k])
                                         : Py_NewRef(Py_None));
    }
    PyObject *row =
        dims && names ? Py_BuildValue("(siNN)", info.name, (int)info.dtype, dims, names) : NULL;
    if (!row) {
      Py_XDECREF(dims);
      Py_XDECREF(names);
      Py_DECREF(list);
      return NULL;
    }
    PyList_SET_ITEM(list, (Py_ssize_t)i, row);
  }
  return list;
}

static PyObject *module_inputs(ext_module *self, void *c) {
  return describe(ait_module_model(self->m), self->n_inputs, ait_model_input);
}
static PyObject *module_outputs(ext_module *self, void *c) {
  return describe(ait_module_model(self->m), self->n_outputs, ait_model_output);
}
static PyObject *module_backend(ext_module *self, void *c) {
  return PyUnicode_FromString(ait_module_backend(self->m));
}
static PyObject *module_batch(ext_module *self, void *c) {
  return PyLong_FromLong(ait_module_batch_size(self->m));
}

/* A sequence of exactly n_inputs inputs, as a fast sequence (new ref). */
static PyObject *input_seq(ext_module *self, PyObject *inputs) {
  PyObject *seq = PySequence_Fast(inputs, "inputs must be a tuple or list");
  char msg[128] = "";
  if (seq && (size_t)PySequence_Fast_GET_SIZE(seq) != self->n_inputs)
    snprintf(msg, sizeof msg, "the model takes %zu inputs, got %zd", self->n_inputs,
             PySequence_Fast_GET_SIZE(seq));
  else if (seq && self->n_inputs > MAX_INPUTS)
    snprintf(msg, sizeof msg, "at most %d inputs", MAX_INPUTS);
  if (msg[0]) {
    ext_raise_msg(AIT_E_INVALID_ARG, msg);
    Py_CLEAR(seq);
  }
  return seq;
}

static PyObject *module_add_sample(ext_module *self, PyObject *inputs) {
  PyObject *seq = input_seq(self, inputs);
  ext_input ins[MAX_INPUTS];
  if (!seq || ext_inputs_from(seq, (Py_ssize_t)self->n_inputs, ins) < 0) {
    Py_XDECREF(seq);
    return NULL;
  }
  ait_tensor_view views[MAX_INPUTS];
  for (size_t i = 0; i < self->n_inputs; i++)
    views[i] = ins[i].view;
  PyThreadState *ts = PyEval_SaveThread();
  LOCK(self);
  ait_status st = ait_module_add_sample(self->m, views, self->n_inputs);
  char why[1024];
  snprintf(why, sizeof why, "sample: %s", st ? ait_last_error() : "");
  UNLOCK(self);
  PyEval_RestoreThread(ts);
  ext_inputs_release(ins, (Py_ssize_t)self->n_inputs);
  Py_DECREF(seq);
  if (st) return ext_raise_msg(st, why);
  Py_RETURN_NONE;
}

/* Make the module's output memory `mem` (tracked: the library call only on
 * a change). */
static ait_status set_out_mem(ext_module *self, ait_mem_kind mem) {
  if (self->out_mem == mem) return AIT_OK;
  ait_status st = ait_module_set_output_mem(self->m, mem);
  if (!st) self->out_mem = mem;
  return st;
}

/* The failure of a run with CUDA inputs, said as what to do about it. */
static PyObject *device_refused(ext_module *self, ait_status st, const char *why) {
  char msg[1400];
  snprintf(msg, sizeof msg,
           "the inputs are CUDA tensors, but the module runs on '%s', which reads host memory "
           "only: tune it with io_mem='cuda' (the cuda backend) or pass CPU tensors (%s)",
           ait_module_backend(self->m), why);
  return ext_raise_msg(st, msg);
}

/* run(inputs, out=None, views=False) -> tuple of outputs: inputs read in
 * place, with the GIL released for the run.
 *  - host inputs: outputs copied out of the library once and handed back as
 *    numpy arrays, or torch tensors when the first input is one (wrapping
 *    the copy: no second one);
 *  - CUDA inputs (a tuned module; torch tensors or DLPack producers): read
 *    on the device, outputs left there and handed back as torch CUDA
 *    tensors: cloned on the device (default), copied into the tensors of
 *    `out` (one per output), or with views=True the library's own device
 *    memory, valid until the module's next run. */
static PyObject *module_run(ext_module *self, PyObject *args, PyObject *kw) {
  static char *kws[] = {"inputs", "out", "views", NULL};
  PyObject *inputs, *outs = Py_None;
  int views = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|Op", kws, &inputs, &outs, &views)) return NULL;
  PyObject *seq = input_seq(self, inputs);
  ext_input ins[MAX_INPUTS];
  /* before tuning the reference runs on the host: CUDA tensors are copied
   * (a tuned module has a batch size; its backend may be eager itself) */
  int tuned = ait_module_batch_size(self->m) > 0;
  if (!seq || ext_inputs_from_dev(seq, (Py_ssize_t)self->n_inputs, ins, tuned) < 0) {
    Py_XDECREF(seq);
    return NULL;
  }
  ait_tensor_view views_in[MAX_INPUTS];
  int device = 0, dev_id = 0, torch_device = 0;
  for (size_t i = 0; i < self->n_inputs; i++) {
    views_in[i] = ins[i].view;
    if (ins[i].on_device && !device) device = 1, dev_id = ins[i].view.device;
    if (ins[i].on_device && ins[i].is_torch) torch_device = 1;
  }
  int as_torch = self->n_inputs && ins[0].is_torch;
  size_t n_out = self->n_outputs;
  PyObject *outs_seq = NULL;
  if (outs != Py_None) {
    outs_seq = PySequence_Fast(outs, "out must be a list or tuple of tensors");
    if (outs_seq && (!device || (size_t)PySequence_Fast_GET_SIZE(outs_seq) != n_out)) {
      PyErr_Format(PyExc_ValueError, "out: %s",
                   device ? "one tensor per output" : "only with CUDA inputs (device outputs)");
      Py_CLEAR(outs_seq);
    }
    if (!outs_seq) {
      ext_inputs_release(ins, (Py_ssize_t)self->n_inputs);
      Py_DECREF(seq);
      return NULL;
    }
  }
  /* torch's current stream only when torch made the device inputs: asking
   * it otherwise initialises CUDA in torch (and fails where torch has none,
   * before the module could say it runs on the host) */
  void *stream = NULL;
  if (torch_device && ext_torch_stream(dev_id, &stream) < 0) {
    Py_XDECREF(outs_seq);
    ext_inputs_release(ins, (Py_ssize_t)self->n_inputs);
    Py_DECREF(seq);
    return NULL;
  }
  ext_raw small[8], *raws = n_out <= 8 ? small : calloc(n_out, sizeof *raws);
  if (!raws) {
    Py_XDECREF(outs_seq);
    ext_inputs_release(ins, (Py_ssize_t)self->n_inputs);
    Py_DECREF(seq);
    return PyErr_NoMemory();
  }
  memset(raws, 0, n_out * sizeof *raws);
  ait_status st;
  size_t done = 0;
  char why[1024] = "";
  PyThreadState *ts = PyEval_SaveThread();
  LOCK(self);
  st = set_out_mem(self, device ? AIT_MEM_CUDA : AIT_MEM_HOST);
  /* ordered after the work torch queued on its current stream */
  if (!st && device) st = ait_module_set_cuda_stream(self->m, stream);
  if (!st) st = ait_module_infer(self->m, views_in, self->n_inputs);
  for (; !st && !device && done < n_out; done++) {
    ait_tensor_view v;
    if ((st = ait_module_output(self->m, done, &v)) == AIT_OK &&
        (st = ext_raw_copy(&v, !as_torch, &raws[done])))
      snprintf(why, sizeof why, "output %zu: %s", done,
               st == AIT_E_NOMEM ? "out of memory" : "string tensors are not supported here");
  }
  if (st && !why[0]) snprintf(why, sizeof why, "%s", ait_last_error());
  if (st || !device) UNLOCK(self);
  PyEval_RestoreThread(ts);
  PyObject *out = st ? NULL : PyTuple_New((Py_ssize_t)n_out);
  if (device && !st) { /* still locked: the views live until the next run */
    for (size_t i = 0; out && i < n_out; i++) {
      ait_tensor_view v;
      PyObject *b = NULL;
      if (ait_module_output(self->m, i, &v))
        ext_raise(AIT_E_INTERNAL, "device output");
      else
        b = ext_device_output(&v, outs_seq ? PySequence_Fast_GET_ITEM(outs_seq, i) : NULL, views);
      if (!b) Py_CLEAR(out);
      if (out) PyTuple_SET_ITEM(out, (Py_ssize_t)i, b);
    }
    ts = PyEval_SaveThread(); /* unlocking never blocks, but keep the rule */
    UNLOCK(self);
    PyEval_RestoreThread(ts);
  }
  Py_XDECREF(outs_seq);
  ext_inputs_release(ins, (Py_ssize_t)self->n_inputs);
  Py_DECREF(seq);
  for (size_t i = 0; !device && i < n_out; i++) {
    PyObject *b = out ? ext_output_object(&raws[i], as_torch) : NULL;
    free(raws[i].data); /* taken by the Buffer, or dropped on failure */
    if (out && !b) Py_CLEAR(out);
    if (out) PyTuple_SET_ITEM(out, (Py_ssize_t)i, b);
  }
  if (raws != small) free(raws);
  if (st && device && (st == AIT_E_UNSUPPORTED || st == AIT_E_INVALID_ARG))
    return device_refused(self, st, why);
  if (st) return ext_raise_msg(st, why);
  return out;
}

static PyObject *module_set_axis_range(ext_module *self, PyObject *args) {
  const char *input;
  int axis;
  long long mn, opt, mx;
  if (!PyArg_ParseTuple(args, "siLLL", &input, &axis, &mn, &opt, &mx)) return NULL;
  PyThreadState *ts = PyEval_SaveThread();
  LOCK(self);
  ait_status st = ait_module_set_axis_range(self->m, input, axis, mn, opt, mx);
  char why[1024];
  snprintf(why, sizeof why, "%s", st ? ait_last_error() : "");
  UNLOCK(self);
  PyEval_RestoreThread(ts);
  if (st) return ext_raise_msg(st, why);
  Py_RETURN_NONE;
}

static PyObject *module_save(ext_module *self, PyObject *args, PyObject *kw) {
  static char *kws[] = {"dir", "force", NULL};
  PyObject *dir = NULL;
  int force = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|p", kws, PyUnicode_FSConverter, &dir, &force))
    return NULL;
  PyThreadState *ts = PyEval_SaveThread();
  LOCK(self);
  ait_status st =
      ait_module_save_flags(self->m, PyBytes_AS_STRING(dir), force ? AIT_SAVE_FORCE : 0);
  char why[1024];
  snprintf(why, sizeof why, "%s", st ? ait_last_error() : "");
  UNLOCK(self);
  PyEval_RestoreThread(ts);
  Py_DECREF(dir);
  if (st) return ext_raise_msg(st, why);
  Py_RETURN_NONE;
}

/* ait_module_clone: a second module sharing this one's weights, with its
 * own lock, for another thread. The clone's run log starts silent: the
 * C-side copy of this object's log would point into this object. */
static PyObject *module_clone(ext_module *self, PyObject *unused) {
  ait_module *c = NULL;
  char why[1024] = "";
  PyThreadState *ts = PyEval_SaveThread();
  LOCK(self);
  ait_status st = ait_module_clone(self->m, &c);
  if (st)
    snprintf(why, sizeof why, "%s", ait_last_error());
  else
    ait_module_set_log(c, NULL, NULL);
  UNLOCK(self);
  PyEval_RestoreThread(ts);
  if (st) return ext_raise_msg(st, why);
  return wrap(Py_TYPE(self), c); /* outputs on the host, as any new module */
}

static PyObject *module_report_json(ext_module *self, PyObject *unused) {
  char *js = NULL;
  PyThreadState *ts = PyEval_SaveThread();
  LOCK(self);
  ait_status st = ait_module_report_json(self->m, &js);
  char why[1024];
  snprintf(why, sizeof why, "%s", st ? ait_last_error() : "");
  UNLOCK(self);
  PyEval_RestoreThread(ts);
  if (st) return ext_raise_msg(st, why);
  PyObject *r = PyUnicode_FromString(js);
  ait_free(js);
  return r;
}

static PyObject *module_metadata(ext_module *self, PyObject *key) {
  const char *k = PyUnicode_AsUTF8(key);
  if (!k) return NULL;
  const char *v = ait_model_metadata(ait_module_model(self->m), k); /* immutable: no lock */
  if (!v) Py_RETURN_NONE;
  return PyUnicode_FromString(v);
}

static PyObject *module_set_log(ext_module *self, PyObject *fn) {
  if (set_run_log(self, fn) < 0) return NULL;
  Py_RETURN_NONE;
}

ait_module *ext_module_ptr(PyObject *self) { return ((ext_module *)self)->m; }
void ext_module_lock(PyObject *self) { LOCK((ext_module *)self); }
void ext_module_unlock(PyObject *self) { UNLOCK((ext_module *)self); }

static PyMethodDef module_methods[] = {
    {"from_file", (PyCFunction)(void (*)(void))module_from_file,
     METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "from_file(path, name=None): a module for the ONNX file at path"},
    {"from_bytes", (PyCFunction)(void (*)(void))module_from_bytes,
     METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "from_bytes(data, base_dir=None, name=None): a module for ONNX bytes (copied)"},
    {"load", (PyCFunction)(void (*)(void))module_load, METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "load(dir, log=None): a tuned folder, without re-tuning"},
    {"add_sample", (PyCFunction)module_add_sample, METH_O,
     "add_sample(inputs): one sample, inputs in graph-input order (copied)"},
    {"set_axis_range", (PyCFunction)module_set_axis_range, METH_VARARGS,
     "set_axis_range(input, axis, min, opt, max): the range to tune a dynamic axis over"},
    {"tune", (PyCFunction)(void (*)(void))ext_module_tune, METH_VARARGS | METH_KEYWORDS,
     "tune(**options): build, validate, profile, select (GIL released)"},
    {"run", (PyCFunction)(void (*)(void))module_run, METH_VARARGS | METH_KEYWORDS,
     "run(inputs, out=None, views=False) -> tuple of numpy arrays (torch tensors for torch "
     "inputs): inputs in graph-input order, read in place; CUDA tensors of a tuned module on "
     "the device, outputs then torch CUDA tensors (cloned, copied into out, or with views=True "
     "the library's memory, valid until the next run)"},
    {"save", (PyCFunction)(void (*)(void))module_save, METH_VARARGS | METH_KEYWORDS,
     "save(dir, force=False): write the tuned folder"},
    {"clone", (PyCFunction)module_clone, METH_NOARGS,
     "a second module sharing this tuned one's weights (ait_module_clone), for another thread"},
    {"report_json", (PyCFunction)module_report_json, METH_NOARGS, "the tuning report, JSON text"},
    {"metadata", (PyCFunction)module_metadata, METH_O,
     "metadata(key) -> str or None: the model's metadata_props entry"},
    {"set_log", (PyCFunction)module_set_log, METH_O,
     "set_log(fn or None): fn(is_warning, line) gets run-time warnings"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef module_getset[] = {
    {"inputs", (getter)module_inputs, NULL, "[(name, dtype, dims, dim_names)] of the graph inputs",
     NULL},
    {"outputs", (getter)module_outputs, NULL, "the same for the graph outputs", NULL},
    {"backend", (getter)module_backend, NULL, "the backend it runs on (\"eager\" before tuning)",
     NULL},
    {"batch_size", (getter)module_batch, NULL, "the batch size selected (0 before tuning)", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject ext_module_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "aitune_c._core.Module",
    .tp_basicsize = sizeof(ext_module),
    .tp_dealloc = (destructor)module_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An ait_module: a model, its samples and, once tuned, the backend it runs on. "
              "Calls are serialized by a lock of its own.",
    .tp_methods = module_methods,
    .tp_getset = module_getset,
};
