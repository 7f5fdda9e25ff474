/* aitune_c._core: the extension module, aitune_c.Error, the log bridge and
 * the library's small lookups (version, backends, strategies, dtypes). */
#include <string.h>

#include "ext.h"

PyObject *ext_error;

PyObject *ext_raise_msg(ait_status st, const char *msg) {
  PyObject *inst = PyObject_CallFunction(ext_error, "s", msg && *msg ? msg : ait_strerror(st));
  if (!inst) return NULL;
  PyObject *code = PyLong_FromLong(st), *name = PyUnicode_FromString(ait_strerror(st));
  if (code && name && !PyObject_SetAttrString(inst, "status", code) &&
      !PyObject_SetAttrString(inst, "status_name", name))
    PyErr_SetObject(ext_error, inst);
  Py_XDECREF(code);
  Py_XDECREF(name);
  Py_DECREF(inst);
  return NULL;
}

PyObject *ext_raise(ait_status st, const char *what) {
  char msg[1200];
  if (what)
    snprintf(msg, sizeof msg, "%s: %s", what, ait_last_error());
  else
    snprintf(msg, sizeof msg, "%s", ait_last_error());
  return ext_raise_msg(st, msg);
}

void ext_log_trampoline(void *user, int is_warning, const char *line) {
  ext_log *lg = user;
  if (!lg || !lg->fn) return;
  PyGILState_STATE g = PyGILState_Ensure();
  PyObject *r = PyObject_CallFunction(lg->fn, "Os", is_warning ? Py_True : Py_False, line);
  if (r)
    Py_DECREF(r);
  else if (lg->unraisable)
    PyErr_WriteUnraisable(lg->fn);
  else if (!lg->exc_type) /* keep the first; the tune goes on to its end */
    PyErr_Fetch(&lg->exc_type, &lg->exc_value, &lg->exc_tb);
  else
    PyErr_Clear();
  PyGILState_Release(g);
}

int ext_log_finish(ext_log *lg) {
  if (!lg->exc_type) return 0;
  PyErr_Restore(lg->exc_type, lg->exc_value, lg->exc_tb);
  lg->exc_type = lg->exc_value = lg->exc_tb = NULL;
  return -1;
}

static PyObject *f_version(PyObject *m, PyObject *unused) {
  return PyUnicode_FromString(ait_version());
}

static PyObject *f_backend_names(PyObject *m, PyObject *unused) {
  PyObject *list = PyList_New(0);
  for (const char *const *n = ait_backend_names(); list && n && *n; n++) {
    PyObject *s = PyUnicode_FromString(*n);
    if (!s || PyList_Append(list, s) < 0) Py_CLEAR(list);
    Py_XDECREF(s);
  }
  return list;
}

static PyObject *f_strategy_parse(PyObject *m, PyObject *name) {
  const char *s = PyUnicode_AsUTF8(name);
  return s ? PyLong_FromLong(ait_strategy_parse(s)) : NULL;
}

static PyObject *f_dtype_name(PyObject *m, PyObject *code) {
  long c = PyLong_AsLong(code);
  if (c == -1 && PyErr_Occurred()) return NULL;
  return PyUnicode_FromString(ait_dtype_name((ait_dtype)c));
}

static PyObject *f_status_name(PyObject *m, PyObject *code) {
  long c = PyLong_AsLong(code);
  if (c == -1 && PyErr_Occurred()) return NULL;
  return PyUnicode_FromString(ait_strerror((ait_status)c));
}

static PyObject *f_hw_fingerprint(PyObject *m, PyObject *unused) {
  return PyUnicode_FromString(ait_hw_fingerprint());
}

/* How run() sees one input: (data pointer, copied, dtype, dims). For the
 * tests that check inputs are read in place. */
static PyObject *f_input_view(PyObject *m, PyObject *obj) {
  ext_input in;
  if (ext_input_from(obj, 0, &in) < 0) return NULL;
  PyObject *dims = PyTuple_New(in.view.rank);
  for (int k = 0; dims && k < in.view.rank; k++)
    PyTuple_SET_ITEM(dims, k, PyLong_FromLongLong(in.view.dims[k]));
  PyObject *r = dims ? Py_BuildValue("(NOiN)", PyLong_FromVoidPtr(in.view.data),
                                     in.copied ? Py_True : Py_False, (int)in.view.dtype, dims)
                     : NULL;
  ext_input_release(&in);
  return r;
}

static PyMethodDef core_functions[] = {
    {"input_view", f_input_view, METH_O,
     "input_view(x) -> (data pointer, copied, dtype, dims): how run() reads x"},
    {"version", f_version, METH_NOARGS, "the library's version string"},
    {"backend_names", f_backend_names, METH_NOARGS, "names of the backends compiled in"},
    {"strategy_parse", f_strategy_parse, METH_O, "strategy name -> ait_strategy code (-1 unknown)"},
    {"dtype_name", f_dtype_name, METH_O, "ait_dtype code -> name (\"float32\")"},
    {"status_name", f_status_name, METH_O, "ait_status code -> ait_strerror text"},
    {"hw_fingerprint", f_hw_fingerprint, METH_NOARGS, "this machine's fingerprint text"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef core_def = {
    PyModuleDef_HEAD_INIT,
    "aitune_c._core",
    "aitune's C API for Python (include/aitune.h). Use the aitune_c package.",
    -1,
    core_functions,
};

PyMODINIT_FUNC PyInit__core(void) {
  if (PyType_Ready(&ext_buffer_type) < 0 || PyType_Ready(&ext_module_type) < 0) return NULL;
  PyObject *mod = PyModule_Create(&core_def);
  if (!mod) return NULL;
  ext_error = PyErr_NewExceptionWithDoc(
      "aitune_c.Error",
      "An aitune C API call failed: str(e) is the library's message, e.status the ait_status "
      "(negative) and e.status_name its name.",
      PyExc_RuntimeError, NULL);
  if (!ext_error || PyModule_AddObjectRef(mod, "Error", ext_error) < 0 ||
      PyModule_AddObjectRef(mod, "Module", (PyObject *)&ext_module_type) < 0 ||
      PyModule_AddObjectRef(mod, "Buffer", (PyObject *)&ext_buffer_type) < 0) {
    Py_DECREF(mod);
    return NULL;
  }
  /* status codes, as the header names them */
  static const struct {
    const char *name;
    ait_status st;
  } codes[] = {{"E_INVALID_ARG", AIT_E_INVALID_ARG},
               {"E_IO", AIT_E_IO},
               {"E_PARSE", AIT_E_PARSE},
               {"E_INVALID_MODEL", AIT_E_INVALID_MODEL},
               {"E_UNSUPPORTED", AIT_E_UNSUPPORTED},
               {"E_SHAPE", AIT_E_SHAPE},
               {"E_DTYPE", AIT_E_DTYPE},
               {"E_NOMEM", AIT_E_NOMEM},
               {"E_RUNTIME", AIT_E_RUNTIME},
               {"E_NOT_FOUND", AIT_E_NOT_FOUND},
               {"E_INTERNAL", AIT_E_INTERNAL}};
  for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
    if (PyModule_AddIntConstant(mod, codes[i].name, codes[i].st) < 0) {
      Py_DECREF(mod);
      return NULL;
    }
  return mod;
}
