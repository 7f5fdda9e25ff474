/* Module.tune(**options): keyword arguments into ait_tune_options, then
 * ait_module_tune with the GIL released.
 *
 * The options start from ait_tune_options_init (whatever it sets, a
 * struct_size included) and only the keywords given are written: None
 * leaves a field at its default. The numeric keywords are rows of a table,
 * named as the struct's fields. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ext.h"

typedef struct num_opt {
  const char *name;
  int is_int;
  size_t off;
} num_opt;

#define NUM(is_int, field)                                                                         \
  { #field, is_int, offsetof(ait_tune_options, field) }
static const num_opt num_opts[] = {
    NUM(1, strategy), /* an ait_strategy, an int-sized enum */
    NUM(0, latency_budget_ms),
    NUM(0, min_speedup_ratio),
    NUM(1, perf_validation),
    NUM(0, rtol),
    NUM(0, atol),
    NUM(0, min_cosine),
    NUM(0, min_top1),
    NUM(1, warmup),
    NUM(1, min_runs),
    NUM(1, max_runs),
    NUM(0, cv_target),
    NUM(0, time_budget_s),
    NUM(1, use_decision_cache),
    NUM(1, runoff_rounds),
};
#undef NUM
_Static_assert(sizeof(ait_strategy) == sizeof(int), "strategy is written as an int");

/* What tune() holds on to while the library runs. */
typedef struct tune_args {
  ait_tune_options o;
  PyObject *backends;  /* fast sequence of str, owned */
  const char **names;  /* UTF-8 of each, borrowed from the str objects */
  int *batches;        /* owned */
  PyObject *precision; /* str, owned */
  PyObject *cache_dir; /* bytes (file system encoding), owned */
  ext_log log;
} tune_args;

static void tune_args_free(tune_args *t) {
  Py_XDECREF(t->backends);
  free(t->names);
  free(t->batches);
  Py_XDECREF(t->precision);
  Py_XDECREF(t->cache_dir);
}

static int set_number(tune_args *t, const num_opt *r, PyObject *v) {
  void *f = (char *)&t->o + r->off;
  if (r->is_int) {
    long x = PyLong_AsLong(v);
    if (x == -1 && PyErr_Occurred()) return -1;
    if (x < -2147483647L || x > 2147483647L) {
      PyErr_Format(PyExc_OverflowError, "%s: %ld does not fit an int", r->name, x);
      return -1;
    }
    *(int *)f = (int)x;
  } else {
    double x = PyFloat_AsDouble(v);
    if (x == -1.0 && PyErr_Occurred()) return -1;
    *(double *)f = x;
  }
  return 0;
}

static int set_backends(tune_args *t, PyObject *v) {
  if (PyUnicode_Check(v)) {
    PyErr_SetString(PyExc_TypeError, "backends: a list of strings, not one string");
    return -1;
  }
  if (!(t->backends = PySequence_Fast(v, "backends: a list of strings"))) return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(t->backends);
  if (!(t->names = calloc((size_t)n + 1, sizeof *t->names))) {
    PyErr_NoMemory();
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *s = PySequence_Fast_GET_ITEM(t->backends, i);
    if (!PyUnicode_Check(s)) {
      PyErr_Format(PyExc_TypeError, "backends[%zd]: a string, not %s", i, Py_TYPE(s)->tp_name);
      return -1;
    }
    if (!(t->names[i] = PyUnicode_AsUTF8(s))) return -1;
  }
  t->o.backends = t->names;
  t->o.n_backends = (size_t)n;
  return 0;
}

static int set_batches(tune_args *t, PyObject *v) {
  PyObject *seq = PySequence_Fast(v, "batch_sizes: a list of ints");
  if (!seq) return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  if (!(t->batches = calloc((size_t)n + 1, sizeof *t->batches))) {
    Py_DECREF(seq);
    PyErr_NoMemory();
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    long b = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
    if (b == -1 && PyErr_Occurred()) {
      Py_DECREF(seq);
      return -1;
    }
    t->batches[i] = b < 0 || b > 2147483647L ? -1 : (int)b; /* the library names bad ones */
  }
  Py_DECREF(seq);
  t->o.batch_sizes = t->batches;
  t->o.n_batch_sizes = (size_t)n;
  return 0;
}

static int set_option(tune_args *t, const char *key, PyObject *v) {
  if (v == Py_None) return 0; /* the default */
  for (size_t i = 0; i < sizeof num_opts / sizeof num_opts[0]; i++)
    if (!strcmp(key, num_opts[i].name)) return set_number(t, &num_opts[i], v);
  if (!strcmp(key, "backends")) return set_backends(t, v);
  if (!strcmp(key, "batch_sizes")) return set_batches(t, v);
  if (!strcmp(key, "precision")) {
    if (!PyUnicode_Check(v)) return PyErr_SetString(PyExc_TypeError, "precision: a string"), -1;
    t->precision = Py_NewRef(v);
    return (t->o.precision = PyUnicode_AsUTF8(v)) ? 0 : -1;
  }
  if (!strcmp(key, "io_mem")) { /* where the tuned module's inputs will live */
    const char *m = PyUnicode_Check(v) ? PyUnicode_AsUTF8(v) : NULL;
    if (!m || (strcmp(m, "host") && strcmp(m, "cuda"))) {
      PyErr_SetString(PyExc_ValueError, "io_mem: 'host' or 'cuda'");
      return -1;
    }
    t->o.io_mem = !strcmp(m, "cuda") ? AIT_MEM_CUDA : AIT_MEM_HOST;
    return 0;
  }
  if (!strcmp(key, "cache_dir")) {
    if (!PyUnicode_FSConverter(v, &t->cache_dir)) return -1;
    t->o.cache_dir = PyBytes_AS_STRING(t->cache_dir);
    return 0;
  }
  if (!strcmp(key, "log")) {
    if (!PyCallable_Check(v)) return PyErr_SetString(PyExc_TypeError, "log must be callable"), -1;
    t->log.fn = v; /* borrowed from kw, which outlives the call */
    t->o.log = ext_log_trampoline;
    t->o.log_user = &t->log;
    return 0;
  }
  PyErr_Format(PyExc_TypeError, "tune() got an unexpected keyword argument '%s'", key);
  return -1;
}

PyObject *ext_module_tune(PyObject *self, PyObject *args, PyObject *kw) {
  if (PyTuple_GET_SIZE(args)) {
    PyErr_SetString(PyExc_TypeError, "tune() takes keyword arguments only");
    return NULL;
  }
  tune_args t;
  memset(&t, 0, sizeof t);
  ait_tune_options_init(&t.o);
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (kw && PyDict_Next(kw, &pos, &key, &value)) {
    const char *k = PyUnicode_AsUTF8(key);
    if (!k || set_option(&t, k, value) < 0) {
      tune_args_free(&t);
      return NULL;
    }
  }
  char why[1024] = "";
  PyThreadState *ts = PyEval_SaveThread();
  ext_module_lock(self);
  ait_status st = ait_module_tune(ext_module_ptr(self), &t.o);
  if (st) snprintf(why, sizeof why, "%s", ait_last_error());
  ext_module_unlock(self);
  PyEval_RestoreThread(ts);
  int log_failed = ext_log_finish(&t.log) < 0;
  tune_args_free(&t);
  if (st) {
    PyErr_Clear(); /* the library's error wins over the logger's */
    return ext_raise_msg(st, why);
  }
  if (log_failed) return NULL; /* e.g. KeyboardInterrupt during a log line */
  Py_RETURN_NONE;
}
