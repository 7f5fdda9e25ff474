/* Python arrays and tensors in and out of the C API.
 *
 * In: an object becomes an ait_tensor_view on its own memory (no copy) when
 * it is contiguous and on the CPU: the buffer protocol (numpy and friends),
 * torch.Tensor.data_ptr(), or __array_interface__. The library reads inputs
 * in place (ait_module_infer), so nothing is copied on the way in.
 *
 * CUDA tensors (torch, or anything with __dlpack__ on a CUDA device) go in
 * through DLPack as views of their device memory (AIT_MEM_CUDA) once the
 * module is tuned: the cuda backend reads them in place and other backends
 * refuse them. Before tuning they are copied to the host, as the reference
 * and the samples live there.
 *
 * Out: the C API lends outputs (valid until the module's next call), so
 * they are copied once into a Buffer that owns its memory and exports it
 * through the buffer protocol; numpy.asarray / torch.from_numpy wrap that
 * memory without another copy. Device outputs go back to torch through a
 * DLPack capsule of our own: cloned on the device, copied into a caller's
 * tensor, or handed out as the alias itself. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ext.h"

/* ---- dtypes ------------------------------------------------------------- */

/* struct-module format characters by dtype (native byte order). */
typedef struct fmt_row {
  ait_dtype dtype;
  const char *fmt;
} fmt_row;

static const fmt_row fmt_rows[] = {
    {AIT_FLOAT32, "f"},  {AIT_FLOAT64, "d"}, {AIT_FLOAT16, "e"}, {AIT_BOOL, "?"},
    {AIT_INT8, "b"},     {AIT_UINT8, "B"},   {AIT_INT16, "h"},   {AIT_UINT16, "H"},
    {AIT_INT32, "i"},    {AIT_UINT32, "I"},  {AIT_INT64, "q"},   {AIT_UINT64, "Q"},
    {AIT_BFLOAT16, "H"}, /* no struct code: its 16 bits */
};

const char *ext_dtype_format(ait_dtype dt) {
  for (size_t i = 0; i < sizeof fmt_rows / sizeof fmt_rows[0]; i++)
    if (fmt_rows[i].dtype == dt) return fmt_rows[i].fmt;
  return NULL;
}

/* A struct format ("<f", "l", "=q") and item size as a dtype; AIT_UNDEFINED
 * when it is not one the library takes. Integers go by kind and size, as 'l'
 * is 8 bytes here and 4 elsewhere. */
static ait_dtype format_dtype(const char *fmt, Py_ssize_t itemsize) {
  if (!fmt) return AIT_UINT8; /* no format requested: bytes */
  if (*fmt == '@' || *fmt == '=' || *fmt == '<')
    fmt++;
  else if ((*fmt == '>' || *fmt == '!') && itemsize > 1)
    return AIT_UNDEFINED; /* big-endian data */
  else if (*fmt == '>' || *fmt == '!')
    fmt++;
  if (!fmt[0] || fmt[1]) return AIT_UNDEFINED;
  static const char sint[] = "bhilq", uint[] = "BHILQ";
  static const ait_dtype by_size_s[9] = {0, AIT_INT8, AIT_INT16, 0, AIT_INT32, 0, 0, 0, AIT_INT64};
  static const ait_dtype by_size_u[9] = {0, AIT_UINT8, AIT_UINT16, 0,         AIT_UINT32,
                                         0, 0,         0,          AIT_UINT64};
  char c = fmt[0];
  if (itemsize < 1 || itemsize > 8) return AIT_UNDEFINED;
  if (strchr(sint, c)) return by_size_s[itemsize];
  if (strchr(uint, c)) return by_size_u[itemsize];
  if (c == 'f' && itemsize == 4) return AIT_FLOAT32;
  if (c == 'd' && itemsize == 8) return AIT_FLOAT64;
  if (c == 'e' && itemsize == 2) return AIT_FLOAT16;
  if (c == '?' && itemsize == 1) return AIT_BOOL;
  return AIT_UNDEFINED;
}

/* numpy __array_interface__ typestr ("<f4", "|b1") as a dtype. */
static ait_dtype typestr_dtype(const char *ts) {
  if (!ts || strlen(ts) < 3) return AIT_UNDEFINED;
  int size = atoi(ts + 2);
  if (ts[0] == '>' && size > 1) return AIT_UNDEFINED;
  static const struct {
    char kind;
    int size;
    ait_dtype dt;
  } rows[] = {{'f', 4, AIT_FLOAT32}, {'f', 8, AIT_FLOAT64}, {'f', 2, AIT_FLOAT16},
              {'b', 1, AIT_BOOL},    {'i', 1, AIT_INT8},    {'i', 2, AIT_INT16},
              {'i', 4, AIT_INT32},   {'i', 8, AIT_INT64},   {'u', 1, AIT_UINT8},
              {'u', 2, AIT_UINT16},  {'u', 4, AIT_UINT32},  {'u', 8, AIT_UINT64}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    if (rows[i].kind == ts[1] && rows[i].size == size) return rows[i].dt;
  return AIT_UNDEFINED;
}

/* ---- torch, looked up only once the program has imported it -------------- */

static PyObject *torch_tensor_type; /* torch.Tensor, owned */
static PyObject *torch_dtypes;      /* {torch.float32: AIT_FLOAT32, ...}, owned */
static PyObject *torch_from_numpy;  /* torch.from_numpy, owned */
static PyObject *torch_bfloat16;    /* torch.bfloat16, owned */

static const struct {
  const char *name;
  ait_dtype dt;
} torch_rows[] = {{"float32", AIT_FLOAT32},   {"float64", AIT_FLOAT64}, {"float16", AIT_FLOAT16},
                  {"bfloat16", AIT_BFLOAT16}, {"int8", AIT_INT8},       {"uint8", AIT_UINT8},
                  {"int16", AIT_INT16},       {"int32", AIT_INT32},     {"int64", AIT_INT64},
                  {"bool", AIT_BOOL},         {"uint16", AIT_UINT16},   {"uint32", AIT_UINT32},
                  {"uint64", AIT_UINT64}};

/* 1 when obj is a torch.Tensor, 0 when not (or torch is not imported). */
static int is_torch_tensor(PyObject *obj) {
  if (!torch_tensor_type) {
    PyObject *name = PyUnicode_FromString("torch");
    PyObject *torch = name ? PyImport_GetModule(name) : NULL; /* never imports */
    Py_XDECREF(name);
    if (!torch) {
      PyErr_Clear();
      return 0;
    }
    PyObject *t = PyObject_GetAttrString(torch, "Tensor"), *map = PyDict_New();
    for (size_t i = 0; t && map && i < sizeof torch_rows / sizeof torch_rows[0]; i++) {
      PyObject *d = PyObject_GetAttrString(torch, torch_rows[i].name);
      PyObject *code = d ? PyLong_FromLong(torch_rows[i].dt) : NULL;
      if (d && code) PyDict_SetItem(map, d, code);
      Py_XDECREF(d);
      Py_XDECREF(code);
      PyErr_Clear(); /* an older torch without uint16: skipped */
    }
    PyObject *from_numpy = PyObject_GetAttrString(torch, "from_numpy");
    PyObject *bf16 = PyObject_GetAttrString(torch, "bfloat16");
    Py_DECREF(torch);
    if (!t || !map || !PyType_Check(t) || !from_numpy || !bf16) {
      Py_XDECREF(t);
      Py_XDECREF(map);
      Py_XDECREF(from_numpy);
      Py_XDECREF(bf16);
      PyErr_Clear();
      return 0;
    }
    torch_tensor_type = t;
    torch_dtypes = map;
    torch_from_numpy = from_numpy;
    torch_bfloat16 = bf16;
  }
  return PyObject_TypeCheck(obj, (PyTypeObject *)torch_tensor_type);
}

/* aitune_c.Error with status st (or TypeError when st is AIT_OK) naming the input. */
static int input_error(Py_ssize_t index, ait_status st, const char *what, const char *detail) {
  char msg[512];
  snprintf(msg, sizeof msg, "input %zd: %s%s", index, what, detail ? detail : "");
  if (st == AIT_OK)
    PyErr_SetString(PyExc_TypeError, msg);
  else
    ext_raise_msg(st, msg);
  return -1;
}

/* Read a shape sequence (tuple, torch.Size) into view dims. */
static int read_shape(PyObject *shape, Py_ssize_t index, ait_tensor_view *v) {
  PyObject *fast = PySequence_Fast(shape, "shape is not a sequence");
  if (!fast) return -1;
  Py_ssize_t rank = PySequence_Fast_GET_SIZE(fast);
  if (rank > AIT_MAX_RANK) {
    Py_DECREF(fast);
    return input_error(index, AIT_E_UNSUPPORTED, "rank over the library's maximum of 8", NULL);
  }
  v->rank = (int)rank;
  for (Py_ssize_t k = 0; k < rank; k++) {
    v->dims[k] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, k));
    if (v->dims[k] == -1 && PyErr_Occurred()) {
      Py_DECREF(fast);
      return -1;
    }
  }
  Py_DECREF(fast);
  return 0;
}

static PyObject *s_is_cpu, *s_is_cuda, *s_dlpack_device, *s_is_contiguous, *s_data_ptr, *s_dtype,
    *s_shape, *s_contiguous, *s_cpu, *s_array_interface;

static int intern_names(void) {
  if (s_is_cpu) return 0;
  s_is_cpu = PyUnicode_InternFromString("is_cpu");
  s_is_cuda = PyUnicode_InternFromString("is_cuda");
  s_dlpack_device = PyUnicode_InternFromString("__dlpack_device__");
  s_is_contiguous = PyUnicode_InternFromString("is_contiguous");
  s_data_ptr = PyUnicode_InternFromString("data_ptr");
  s_dtype = PyUnicode_InternFromString("dtype");
  s_shape = PyUnicode_InternFromString("shape");
  s_contiguous = PyUnicode_InternFromString("contiguous");
  s_cpu = PyUnicode_InternFromString("cpu");
  s_array_interface = PyUnicode_InternFromString("__array_interface__");
  return s_array_interface ? 0 : -1;
}

/* ---- DLPack ---------------------------------------------------------------
 * The ABI of dlpack.h (v0.8, the unversioned "dltensor" capsule every
 * framework exports), declared here: the header is not a build dependency. */

typedef struct dl_device {
  int32_t device_type, device_id;
} dl_device;
typedef struct dl_dtype {
  uint8_t code, bits;
  uint16_t lanes;
} dl_dtype;
typedef struct dl_tensor {
  void *data;
  dl_device device;
  int32_t ndim;
  dl_dtype dtype;
  int64_t *shape, *strides; /* strides in elements; NULL: compact row-major */
  uint64_t byte_offset;
} dl_tensor;
typedef struct dl_managed {
  dl_tensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(struct dl_managed *self);
} dl_managed;

enum { DL_CPU = 1, DL_CUDA = 2 };
enum { DL_INT = 0, DL_UINT = 1, DL_FLOAT = 2, DL_BFLOAT = 4, DL_BOOL = 6 };

static ait_dtype dl_to_dtype(dl_dtype t) {
  if (t.lanes != 1) return AIT_UNDEFINED;
  static const struct {
    uint8_t code, bits;
    ait_dtype dt;
  } rows[] = {
      {DL_FLOAT, 32, AIT_FLOAT32},   {DL_FLOAT, 64, AIT_FLOAT64}, {DL_FLOAT, 16, AIT_FLOAT16},
      {DL_BFLOAT, 16, AIT_BFLOAT16}, {DL_INT, 8, AIT_INT8},       {DL_INT, 16, AIT_INT16},
      {DL_INT, 32, AIT_INT32},       {DL_INT, 64, AIT_INT64},     {DL_UINT, 8, AIT_UINT8},
      {DL_UINT, 16, AIT_UINT16},     {DL_UINT, 32, AIT_UINT32},   {DL_UINT, 64, AIT_UINT64},
      {DL_BOOL, 8, AIT_BOOL}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    if (rows[i].code == t.code && rows[i].bits == t.bits) return rows[i].dt;
  return AIT_UNDEFINED;
}

static int dtype_to_dl(ait_dtype dt, dl_dtype *t) {
  static const struct {
    ait_dtype dt;
    uint8_t code, bits;
  } rows[] = {
      {AIT_FLOAT32, DL_FLOAT, 32},   {AIT_FLOAT64, DL_FLOAT, 64}, {AIT_FLOAT16, DL_FLOAT, 16},
      {AIT_BFLOAT16, DL_BFLOAT, 16}, {AIT_INT8, DL_INT, 8},       {AIT_INT16, DL_INT, 16},
      {AIT_INT32, DL_INT, 32},       {AIT_INT64, DL_INT, 64},     {AIT_UINT8, DL_UINT, 8},
      {AIT_UINT16, DL_UINT, 16},     {AIT_UINT32, DL_UINT, 32},   {AIT_UINT64, DL_UINT, 64},
      {AIT_BOOL, DL_BOOL, 8}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    if (rows[i].dt == dt) {
      t->code = rows[i].code, t->bits = rows[i].bits, t->lanes = 1;
      return 0;
    }
  return -1;
}

/* obj.__dlpack__() on a CUDA device as a device view. The capsule stays in
 * in->keep, unconsumed: its destructor calls the producer's deleter when it
 * goes (DLPack's rule for a capsule still named "dltensor"). */
static int from_dlpack(PyObject *obj, Py_ssize_t index, ext_input *in) {
  PyObject *cap = PyObject_CallMethod(obj, "__dlpack__", NULL);
  if (!cap) return -1;
  dl_managed *mt =
      PyCapsule_IsValid(cap, "dltensor") ? PyCapsule_GetPointer(cap, "dltensor") : NULL;
  if (!mt) {
    Py_DECREF(cap);
    return input_error(index, AIT_OK, "__dlpack__ did not return a \"dltensor\" capsule", NULL);
  }
  in->keep = cap;
  const dl_tensor *t = &mt->dl_tensor;
  if (t->device.device_type != DL_CUDA)
    return input_error(index, AIT_E_UNSUPPORTED, "a DLPack tensor not in CUDA memory", NULL);
  in->view.dtype = dl_to_dtype(t->dtype);
  if (in->view.dtype == AIT_UNDEFINED)
    return input_error(index, AIT_E_DTYPE, "a DLPack element type aitune does not take", NULL);
  if (t->ndim < 0 || t->ndim > AIT_MAX_RANK)
    return input_error(index, AIT_E_UNSUPPORTED, "rank over the library's maximum of 8", NULL);
  in->view.rank = t->ndim;
  int64_t want = 1;
  for (int k = t->ndim - 1; k >= 0; k--) { /* compact row-major (size-1 dims: any stride) */
    in->view.dims[k] = t->shape[k];
    if (t->strides && t->shape[k] != 1 && t->strides[k] != want)
      return input_error(index, AIT_E_INVALID_ARG,
                         "a strided CUDA tensor: pass a contiguous one (.contiguous())", NULL);
    want *= t->shape[k];
  }
  in->view.data = (char *)t->data + t->byte_offset;
  in->view.mem = AIT_MEM_CUDA;
  in->view.device = t->device.device_id;
  in->on_device = 1;
  return 0;
}

/* Our own capsule for a device output: shape copied, memory borrowed. */
static void dl_out_deleter(dl_managed *mt) {
  if (mt) free(mt->dl_tensor.shape);
  free(mt);
}

static void dl_capsule_free(PyObject *cap) {
  if (!PyCapsule_IsValid(cap, "dltensor")) return; /* consumed: the consumer deletes it */
  dl_managed *mt = PyCapsule_GetPointer(cap, "dltensor");
  if (mt && mt->deleter) mt->deleter(mt);
}

static PyObject *torch_from_dlpack; /* torch.from_dlpack, owned */

PyObject *ext_device_output(const ait_tensor_view *v, PyObject *into, int alias) {
  if (!torch_from_dlpack) {
    PyObject *torch = PyImport_ImportModule("torch");
    torch_from_dlpack = torch ? PyObject_GetAttrString(torch, "from_dlpack") : NULL;
    Py_XDECREF(torch);
    if (!torch_from_dlpack) return NULL;
  }
  dl_managed *mt = calloc(1, sizeof *mt);
  int64_t *shape = malloc(sizeof(int64_t) * (size_t)(v->rank > 0 ? v->rank : 1));
  if (!mt || !shape || dtype_to_dl(v->dtype, &mt->dl_tensor.dtype) < 0) {
    free(mt);
    free(shape);
    if (!PyErr_Occurred()) ext_raise_msg(AIT_E_DTYPE, "a device output of a type DLPack lacks");
    return NULL;
  }
  memcpy(shape, v->dims, sizeof(int64_t) * (size_t)v->rank);
  mt->dl_tensor.data = v->data;
  mt->dl_tensor.device.device_type = DL_CUDA;
  mt->dl_tensor.device.device_id = v->device;
  mt->dl_tensor.ndim = v->rank;
  mt->dl_tensor.shape = shape;
  mt->deleter = dl_out_deleter;
  PyObject *cap = PyCapsule_New(mt, "dltensor", dl_capsule_free);
  if (!cap) {
    dl_out_deleter(mt);
    return NULL;
  }
  PyObject *t = PyObject_CallOneArg(torch_from_dlpack, cap);
  Py_DECREF(cap);
  if (!t || alias) return t;
  PyObject *r =
      into ? PyObject_CallMethod(into, "copy_", "O", t) : PyObject_CallMethod(t, "clone", NULL);
  Py_DECREF(t);
  return r;
}

int ext_torch_stream(int device, void **stream) {
  *stream = NULL;
  PyObject *name = PyUnicode_FromString("torch");
  PyObject *torch = name ? PyImport_GetModule(name) : NULL;
  Py_XDECREF(name);
  if (!torch) {
    PyErr_Clear();
    return 0;
  }
  PyObject *cuda = PyObject_GetAttrString(torch, "cuda");
  Py_DECREF(torch);
  PyObject *s = cuda ? PyObject_CallMethod(cuda, "current_stream", "i", device) : NULL;
  Py_XDECREF(cuda);
  PyObject *h = s ? PyObject_GetAttrString(s, "cuda_stream") : NULL;
  Py_XDECREF(s);
  if (!h) return -1;
  *stream = PyLong_AsVoidPtr(h);
  Py_DECREF(h);
  return PyErr_Occurred() ? -1 : 0;
}

/* A torch tensor: its data_ptr when contiguous on the CPU, else a
 * contiguous CPU copy made by torch (in->copied). With allow_device a CUDA
 * tensor is read in place through DLPack (made contiguous on the device
 * first when it is not). */
static int from_torch(PyObject *t, Py_ssize_t index, ext_input *in, int allow_device) {
  Py_INCREF(t);
  if (allow_device) {
    PyObject *cu = PyObject_GetAttr(t, s_is_cuda);
    int on_cuda = cu ? PyObject_IsTrue(cu) : -1;
    Py_XDECREF(cu);
    if (on_cuda < 0) goto fail;
    if (on_cuda) {
      PyObject *c = PyObject_CallMethodNoArgs(t, s_is_contiguous);
      int contiguous = c ? PyObject_IsTrue(c) : -1;
      Py_XDECREF(c);
      if (contiguous < 0) goto fail;
      if (!contiguous) {
        PyObject *moved = PyObject_CallMethodNoArgs(t, s_contiguous);
        if (!moved) goto fail;
        Py_SETREF(t, moved);
        in->copied = 1;
      }
      int rc = from_dlpack(t, index, in);
      in->is_torch = 1;
      Py_DECREF(t); /* the capsule keeps the tensor alive */
      return rc;
    }
  }
  for (int pass = 0; pass < 3; pass++) {
    PyObject *cpu = PyObject_GetAttr(t, s_is_cpu);
    int on_cpu = cpu ? PyObject_IsTrue(cpu) : -1;
    Py_XDECREF(cpu);
    PyObject *c = on_cpu == 1 ? PyObject_CallMethodNoArgs(t, s_is_contiguous) : NULL;
    int contiguous = c ? PyObject_IsTrue(c) : -1;
    Py_XDECREF(c);
    if (on_cpu < 0 || (on_cpu == 1 && contiguous < 0)) goto fail;
    if (on_cpu == 1 && contiguous == 1) break;
    PyObject *moved = PyObject_CallMethodNoArgs(t, on_cpu ? s_contiguous : s_cpu);
    if (!moved) goto fail;
    Py_DECREF(t);
    t = moved;
    in->copied = 1;
  }
  PyObject *dt = PyObject_GetAttr(t, s_dtype);
  PyObject *code = dt ? PyDict_GetItemWithError(torch_dtypes, dt) : NULL; /* borrowed */
  if (!code) {
    if (!PyErr_Occurred()) {
      PyObject *r = dt ? PyObject_Str(dt) : NULL;
      const char *name = r ? PyUnicode_AsUTF8(r) : NULL;
      input_error(index, AIT_E_DTYPE, "an element type aitune does not take: ", name ? name : "?");
      Py_XDECREF(r);
    }
    Py_XDECREF(dt);
    goto fail;
  }
  in->view.dtype = (ait_dtype)PyLong_AsLong(code);
  Py_DECREF(dt);
  PyObject *shape = PyObject_GetAttr(t, s_shape);
  int bad = !shape || read_shape(shape, index, &in->view);
  Py_XDECREF(shape);
  if (bad) goto fail;
  PyObject *ptr = PyObject_CallMethodNoArgs(t, s_data_ptr);
  in->view.data = ptr ? PyLong_AsVoidPtr(ptr) : NULL;
  Py_XDECREF(ptr);
  if (!ptr || PyErr_Occurred()) goto fail;
  in->keep = t;
  in->is_torch = 1;
  return 0;
fail:
  Py_DECREF(t);
  return -1;
}

/* The buffer protocol: in place when C-contiguous, else one copy. */
static int from_buffer(PyObject *obj, Py_ssize_t index, ext_input *in) {
  if (PyObject_GetBuffer(obj, &in->buf, PyBUF_RECORDS_RO) < 0) return -1;
  in->has_buf = 1;
  Py_buffer *b = &in->buf;
  in->view.dtype = format_dtype(b->format, b->itemsize);
  if (in->view.dtype == AIT_UNDEFINED)
    return input_error(index, AIT_E_DTYPE, "an element type aitune does not take: format ",
                       b->format ? b->format : "?");
  if (b->ndim > AIT_MAX_RANK)
    return input_error(index, AIT_E_UNSUPPORTED, "rank over the library's maximum of 8", NULL);
  in->view.rank = b->ndim;
  for (int k = 0; k < b->ndim; k++)
    in->view.dims[k] = b->shape ? b->shape[k] : b->len / b->itemsize;
  if (PyBuffer_IsContiguous(b, 'C')) {
    in->view.data = b->buf;
    return 0;
  }
  if (!(in->copy = malloc(b->len ? (size_t)b->len : 1))) {
    PyErr_NoMemory();
    return -1;
  }
  if (PyBuffer_ToContiguous(in->copy, b, b->len, 'C') < 0) return -1;
  in->view.data = in->copy;
  in->copied = 1;
  return 0;
}

/* __array_interface__ (version 3): a data pointer with shape and typestr;
 * only C-contiguous data is taken (strides None). */
static int from_array_interface(PyObject *obj, PyObject *ai, Py_ssize_t index, ext_input *in) {
  if (!PyDict_Check(ai)) return input_error(index, AIT_OK, "bad __array_interface__", NULL);
  PyObject *data = PyDict_GetItemString(ai, "data"), *shape = PyDict_GetItemString(ai, "shape");
  PyObject *ts = PyDict_GetItemString(ai, "typestr"),
           *strides = PyDict_GetItemString(ai, "strides");
  if (!data || !PyTuple_Check(data) || PyTuple_GET_SIZE(data) < 1 || !shape || !ts ||
      !PyUnicode_Check(ts))
    return input_error(index, AIT_OK,
                       "__array_interface__ needs data (a pointer tuple), shape and typestr", NULL);
  if (strides && strides != Py_None)
    return input_error(index, AIT_E_INVALID_ARG,
                       "not contiguous (__array_interface__ with strides): pass a contiguous array",
                       NULL);
  in->view.dtype = typestr_dtype(PyUnicode_AsUTF8(ts));
  if (in->view.dtype == AIT_UNDEFINED)
    return input_error(index, AIT_E_DTYPE, "an element type aitune does not take: typestr ",
                       PyUnicode_AsUTF8(ts));
  if (read_shape(shape, index, &in->view) < 0) return -1;
  in->view.data = PyLong_AsVoidPtr(PyTuple_GET_ITEM(data, 0));
  if (PyErr_Occurred()) return -1;
  Py_INCREF(obj);
  in->keep = obj;
  return 0;
}

/* 1 when obj says (through __dlpack_device__) that it lives in CUDA memory. */
static int dlpack_on_cuda(PyObject *obj) {
  PyObject *d = PyObject_CallMethodNoArgs(obj, s_dlpack_device);
  if (!d) {
    PyErr_Clear();
    return 0;
  }
  long type =
      PyTuple_Check(d) && PyTuple_GET_SIZE(d) >= 1 ? PyLong_AsLong(PyTuple_GET_ITEM(d, 0)) : -1;
  Py_DECREF(d);
  PyErr_Clear();
  return type == DL_CUDA;
}

int ext_input_from(PyObject *obj, Py_ssize_t index, ext_input *in) {
  return ext_input_from_dev(obj, index, in, 0);
}

int ext_input_from_dev(PyObject *obj, Py_ssize_t index, ext_input *in, int allow_device) {
  memset(in, 0, sizeof *in);
  if (intern_names() < 0) return -1;
  int rc;
  if (PyObject_CheckBuffer(obj) && !PyUnicode_Check(obj))
    rc = from_buffer(obj, index, in);
  else if (is_torch_tensor(obj))
    rc = from_torch(obj, index, in, allow_device);
  else if (PyObject_HasAttr(obj, s_dlpack_device) && dlpack_on_cuda(obj)) {
    rc = allow_device ? from_dlpack(obj, index, in)
                      : input_error(index, AIT_E_UNSUPPORTED,
                                    "a CUDA array is taken once the module is tuned (before, "
                                    "pass it on the host)",
                                    NULL);
  } else {
    PyObject *ai = PyObject_GetAttr(obj, s_array_interface);
    if (ai) {
      rc = from_array_interface(obj, ai, index, in);
      Py_DECREF(ai);
    } else {
      PyErr_Clear();
      PyErr_Format(PyExc_TypeError,
                   "input %zd: expected a numpy array, a torch tensor or an object with the "
                   "buffer protocol, got %s",
                   index, Py_TYPE(obj)->tp_name);
      rc = -1;
    }
  }
  if (rc < 0) ext_input_release(in);
  return rc;
}

void ext_input_release(ext_input *in) {
  if (in->has_buf) PyBuffer_Release(&in->buf);
  in->has_buf = 0;
  Py_CLEAR(in->keep);
  free(in->copy);
  in->copy = NULL;
}

int ext_inputs_from(PyObject *seq, Py_ssize_t n, ext_input *ins) {
  return ext_inputs_from_dev(seq, n, ins, 0);
}

int ext_inputs_from_dev(PyObject *seq, Py_ssize_t n, ext_input *ins, int allow_device) {
  for (Py_ssize_t i = 0; i < n; i++)
    if (ext_input_from_dev(PySequence_Fast_GET_ITEM(seq, i), i, &ins[i], allow_device) < 0) {
      ext_inputs_release(ins, i);
      return -1;
    }
  return 0;
}

void ext_inputs_release(ext_input *ins, Py_ssize_t n) {
  for (Py_ssize_t i = 0; i < n; i++)
    ext_input_release(&ins[i]);
}

/* ---- outputs: Buffer ----------------------------------------------------- */

typedef struct ext_buffer {
  PyObject ob_base; /* PyObject_HEAD */
  void *data;       /* owned */
  Py_ssize_t nbytes, itemsize;
  int ndim;
  ait_dtype dtype;
  Py_ssize_t shape[AIT_MAX_RANK], strides[AIT_MAX_RANK];
} ext_buffer;

ait_status ext_raw_copy(const ait_tensor_view *v, int widen_bf16, ext_raw *raw) {
  size_t es = ait_dtype_size(v->dtype);
  if (!es || v->dtype == AIT_STRING || v->rank < 0 || v->rank > AIT_MAX_RANK)
    return AIT_E_UNSUPPORTED;
  size_t n = 1;
  for (int k = 0; k < v->rank; k++)
    n *= (size_t)v->dims[k];
  int widen = widen_bf16 && v->dtype == AIT_BFLOAT16;
  raw->dtype = widen ? AIT_FLOAT32 : v->dtype;
  raw->rank = v->rank;
  memcpy(raw->dims, v->dims, sizeof raw->dims);
  raw->nbytes = n * (widen ? 4 : es);
  if (!(raw->data = malloc(raw->nbytes ? raw->nbytes : 1))) return AIT_E_NOMEM;
  if (widen) /* a bfloat16 is the high half of a float32 */
    for (size_t i = 0; i < n; i++)
      ((uint32_t *)raw->data)[i] = (uint32_t)((const uint16_t *)v->data)[i] << 16;
  else if (raw->nbytes)
    memcpy(raw->data, v->data, raw->nbytes);
  return AIT_OK;
}

static PyObject *np_asarray; /* numpy.asarray, owned */

PyObject *ext_output_object(ext_raw *raw, int as_torch) {
  ait_dtype dt = raw->dtype;
  PyObject *buf = ext_buffer_wrap(raw);
  if (!buf) return NULL;
  if (!np_asarray) {
    PyObject *np = PyImport_ImportModule("numpy");
    np_asarray = np ? PyObject_GetAttrString(np, "asarray") : NULL;
    Py_XDECREF(np);
    if (!np_asarray) {
      Py_DECREF(buf);
      return NULL;
    }
  }
  PyObject *arr = PyObject_CallOneArg(np_asarray, buf);
  Py_DECREF(buf); /* the array keeps it alive */
  if (!arr || !as_torch || !torch_from_numpy) return arr;
  PyObject *t = PyObject_CallOneArg(torch_from_numpy, arr);
  Py_DECREF(arr);
  if (t && dt == AIT_BFLOAT16) {
    PyObject *v = PyObject_CallMethod(t, "view", "O", torch_bfloat16);
    Py_DECREF(t);
    t = v;
  }
  return t;
}

PyObject *ext_buffer_wrap(ext_raw *raw) {
  ext_buffer *b = PyObject_New(ext_buffer, &ext_buffer_type);
  if (!b) {
    free(raw->data);
    raw->data = NULL;
    return NULL;
  }
  b->data = raw->data;
  raw->data = NULL;
  b->nbytes = (Py_ssize_t)raw->nbytes;
  b->itemsize = (Py_ssize_t)ait_dtype_size(raw->dtype);
  b->ndim = raw->rank;
  b->dtype = raw->dtype;
  Py_ssize_t stride = b->itemsize;
  for (int k = raw->rank - 1; k >= 0; k--) {
    b->shape[k] = (Py_ssize_t)raw->dims[k];
    b->strides[k] = stride;
    stride *= b->shape[k];
  }
  return (PyObject *)b;
}

static void buffer_dealloc(ext_buffer *b) {
  free(b->data);
  PyObject_Free(b);
}

static int buffer_get(ext_buffer *b, Py_buffer *view, int flags) {
  view->buf = b->data;
  view->obj = (PyObject *)b;
  Py_INCREF(b);
  view->len = b->nbytes;
  view->readonly = 0;
  view->itemsize = b->itemsize;
  view->format = (flags & PyBUF_FORMAT) ? (char *)ext_dtype_format(b->dtype) : NULL;
  view->ndim = b->ndim;
  view->shape = (flags & PyBUF_ND) == PyBUF_ND ? b->shape : NULL;
  view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? b->strides : NULL;
  view->suboffsets = NULL;
  view->internal = NULL;
  return 0;
}

static PyBufferProcs buffer_procs = {(getbufferproc)buffer_get, NULL};

static PyObject *buffer_dtype(ext_buffer *b, void *closure) { return PyLong_FromLong(b->dtype); }

static PyObject *buffer_shape(ext_buffer *b, void *closure) {
  PyObject *t = PyTuple_New(b->ndim);
  for (int k = 0; t && k < b->ndim; k++)
    PyTuple_SET_ITEM(t, k, PyLong_FromSsize_t(b->shape[k]));
  return t;
}

static PyGetSetDef buffer_getset[] = {
    {"dtype", (getter)buffer_dtype, NULL, "element type: an ait_dtype code (ONNX's numbering)",
     NULL},
    {"shape", (getter)buffer_shape, NULL, "the dims, a tuple", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject ext_buffer_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "aitune_c._core.Buffer",
    .tp_basicsize = sizeof(ext_buffer),
    .tp_dealloc = (destructor)buffer_dealloc,
    .tp_as_buffer = &buffer_procs,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A model output: dense C-order memory owned by this object, exported through the "
              "buffer protocol (numpy.asarray(b) wraps it without copying).",
    .tp_getset = buffer_getset,
};
