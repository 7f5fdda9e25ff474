/* TensorProto <-> ait_tensor, including external data side files. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/fileio.h"
#include "onnx/onnx.pb-c.h"
#include "onnx/onnx_io.h"
#include "onnx/onnx_priv.h"

/* A non-negative decimal number, all of `s`; false otherwise. */
static bool parse_count(const char *s, long long *out) {
  if (!s[0] || !isdigit((unsigned char)s[0])) return false;
  errno = 0;
  char *end;
  long long v = strtoll(s, &end, 10);
  if (errno || *end || v < 0) return false;
  *out = v;
  return true;
}

/* `path` with links resolved, if it lies inside folder `root` (also
 * resolved): *resolved is a new string the caller frees, and the one that is
 * read, so a link swapped after the check is not followed either. Both go
 * through realpath, so a symbolic link beside the model cannot point out of
 * its folder. */
static ait_status resolve_under(const char *root, const char *path, const char *tname,
                                const char *loc, char **resolved) {
  char *rroot = realpath(root, NULL), *rpath = realpath(path, NULL);
  ait_status st = AIT_OK;
  if (!rroot || !rpath) {
    st = ait_err(AIT_E_IO, "tensor '%s': cannot open external data '%.200s': %s", tname, loc,
                 strerror(errno));
  } else {
    size_t n = strlen(rroot);
    bool inside = !strncmp(rpath, rroot, n) && (rpath[n] == '/' || (n == 1 && rroot[0] == '/'));
    if (!inside)
      st = ait_err(AIT_E_INVALID_MODEL,
                   "tensor '%s': external data '%.200s' resolves outside the model's folder (a "
                   "symbolic link?), which is refused",
                   tname, loc);
  }
  free(rroot);
  if (st) {
    free(rpath);
    return st;
  }
  *resolved = rpath;
  return AIT_OK;
}

/* External data: the bytes live in a side file named by "location",
 * relative to the model's folder. Absolute paths, ".." and links that
 * resolve outside the folder are refused so a model cannot read arbitrary
 * files; offset and length must be non-negative numbers inside the file. */
static ait_status read_external(const Onnx__TensorProto *tp, const char *base_dir, void **data,
                                size_t *size) {
  const char *loc = NULL, *name = tp->name ? tp->name : "";
  long long offset = 0, length = -1;
  for (size_t i = 0; i < tp->n_external_data; i++) {
    const Onnx__StringStringEntryProto *e = tp->external_data[i];
    if (!e->key || !e->value) continue;
    bool is_off = !strcmp(e->key, "offset"), is_len = !strcmp(e->key, "length");
    if (!strcmp(e->key, "location"))
      loc = e->value;
    else if ((is_off || is_len) && !parse_count(e->value, is_off ? &offset : &length))
      return ait_err(AIT_E_INVALID_MODEL,
                     "tensor '%s': external data %s '%.40s' is not a non-negative number", name,
                     e->key, e->value);
  }
  if (!loc || !loc[0])
    return ait_err(AIT_E_INVALID_MODEL, "tensor '%s' has external data without a location", name);
  if (loc[0] == '/' || strstr(loc, ".."))
    return ait_err(AIT_E_INVALID_MODEL,
                   "tensor '%s': external data location '%.200s' must be relative to the model's "
                   "folder, without '..'",
                   name, loc);
  const char *root = base_dir && base_dir[0] ? base_dir : ".";
  char *path = ait_path_join(root, loc);
  if (!path) return ait_err(AIT_E_NOMEM, "out of memory");
  char *real = NULL;
  ait_status st = resolve_under(root, path, name, loc, &real);
  free(path);
  if (!st) st = ait_read_file_range(real, offset, length, data, size);
  free(real);
  if (st) return ait_err_prefix(st, "external data of tensor '%s'", name);
  return AIT_OK;
}

static ait_status decode_strings(const Onnx__TensorProto *tp, ait_tensor *t) {
  int64_t n = ait_tensor_numel(t);
  if ((int64_t)tp->n_string_data != n)
    return ait_err(AIT_E_INVALID_MODEL, "string tensor '%s' has %zu strings for %lld elements",
                   tp->name ? tp->name : "", tp->n_string_data, (long long)n);
  char **dst = t->data;
  for (int64_t i = 0; i < n; i++) {
    dst[i] = malloc(tp->string_data[i].len + 1);
    if (!dst[i]) return ait_err(AIT_E_NOMEM, "out of memory");
    if (tp->string_data[i].len) memcpy(dst[i], tp->string_data[i].data, tp->string_data[i].len);
    dst[i][tp->string_data[i].len] = '\0';
  }
  return AIT_OK;
}

/* True for the types ONNX packs several to a byte (int4, uint4, float4e2m1,
 * int2, uint2): in files, raw data and int32_data hold packed bytes. */
static bool is_packed(ait_dtype dt) { return ait_dtype_file_bits(dt) < 8; }

/* Values the typed repeated field must hold for n elements of dt. */
static int64_t typed_need(ait_dtype dt, int64_t n) {
  return is_packed(dt) ? (int64_t)ait_dtype_file_bytes(dt, n) : n;
}

/* Values held by the typed repeated field of this dtype. */
static size_t typed_count(const Onnx__TensorProto *tp, ait_dtype dt) {
  size_t have = 0;
  switch (dt) {
  case AIT_FLOAT32: have = tp->n_float_data; break;
  case AIT_COMPLEX64: have = tp->n_float_data / 2; break;
  case AIT_FLOAT64: have = tp->n_double_data; break;
  case AIT_COMPLEX128: have = tp->n_double_data / 2; break;
  case AIT_INT64: have = tp->n_int64_data; break;
  case AIT_UINT32:
  case AIT_UINT64: have = tp->n_uint64_data; break;
  default: have = tp->n_int32_data; break;
  }
  return have;
}

/* Copy the typed repeated field that holds this dtype's values (its count
 * was checked against the shape before t was allocated). */
static ait_status decode_typed(const Onnx__TensorProto *tp, ait_tensor *t) {
  int64_t n = ait_tensor_numel(t);
  ait_dtype dt = t->dtype;
  if (is_packed(dt)) { /* one packed byte per int32 */
    size_t nb = ait_dtype_file_bytes(dt, n);
    uint8_t *bytes = malloc(nb ? nb : 1);
    if (!bytes) return ait_err(AIT_E_NOMEM, "out of memory");
    for (size_t i = 0; i < nb; i++)
      bytes[i] = (uint8_t)tp->int32_data[i];
    ait_dtype_unpack(dt, bytes, n, t->data);
    free(bytes);
    return AIT_OK;
  }
  if (ait_dtype_size(dt) == 1 && dt != AIT_BOOL) { /* the 8-bit floats, int8, uint8: the code */
    for (int64_t i = 0; i < n; i++)
      ((uint8_t *)t->data)[i] = (uint8_t)tp->int32_data[i];
    return AIT_OK;
  }
  for (int64_t i = 0; i < n; i++) {
    switch (dt) {
    case AIT_FLOAT32: ((float *)t->data)[i] = tp->float_data[i]; break;
    case AIT_COMPLEX64:
      ((float *)t->data)[2 * i] = tp->float_data[2 * i];
      ((float *)t->data)[2 * i + 1] = tp->float_data[2 * i + 1];
      break;
    case AIT_FLOAT64: ((double *)t->data)[i] = tp->double_data[i]; break;
    case AIT_COMPLEX128:
      ((double *)t->data)[2 * i] = tp->double_data[2 * i];
      ((double *)t->data)[2 * i + 1] = tp->double_data[2 * i + 1];
      break;
    case AIT_INT64: ((int64_t *)t->data)[i] = tp->int64_data[i]; break;
    case AIT_UINT32: ((uint32_t *)t->data)[i] = (uint32_t)tp->uint64_data[i]; break;
    case AIT_UINT64: ((uint64_t *)t->data)[i] = tp->uint64_data[i]; break;
    case AIT_INT32: ((int32_t *)t->data)[i] = tp->int32_data[i]; break;
    case AIT_INT16: ((int16_t *)t->data)[i] = (int16_t)tp->int32_data[i]; break;
    case AIT_UINT16:
    case AIT_FLOAT16:
    case AIT_BFLOAT16: ((uint16_t *)t->data)[i] = (uint16_t)tp->int32_data[i]; break;
    case AIT_INT8: ((int8_t *)t->data)[i] = (int8_t)tp->int32_data[i]; break;
    case AIT_UINT8: ((uint8_t *)t->data)[i] = (uint8_t)tp->int32_data[i]; break;
    case AIT_BOOL: ((uint8_t *)t->data)[i] = tp->int32_data[i] != 0; break;
    default: return ait_err(AIT_E_UNSUPPORTED, "cannot decode dtype %d", dt);
    }
  }
  return AIT_OK;
}

ait_status ait_onnx_tensor_decode(const Onnx__TensorProto *tp, const char *base_dir,
                                  int64_t max_bytes, ait_tensor **out) {
  if (max_bytes <= 0) max_bytes = AIT_DEFAULT_MAX_TENSOR_BYTES;
  const char *name = tp->name ? tp->name : "";
  ait_dtype dt = (ait_dtype)tp->data_type;
  if (ait_elem_size(dt) == 0)
    return ait_err(AIT_E_UNSUPPORTED, "tensor '%s' has unsupported data type %d", name,
                   tp->data_type);
  if (tp->n_dims > AIT_MAX_RANK)
    return ait_err(AIT_E_UNSUPPORTED, "tensor '%s' has rank %zu (at most %d supported)", name,
                   tp->n_dims, AIT_MAX_RANK);
  if (tp->segment)
    return ait_err(AIT_E_UNSUPPORTED, "tensor '%s' is segmented, which is not supported", name);
  /* The element count is checked against max_bytes and the data the file
   * holds before anything is allocated: a 20-byte TensorProto can claim
   * 10^12 elements. Bytes in memory: one per element for sub-byte types. */
  int64_t n = 1;
  const int64_t esize = (int64_t)ait_elem_size(dt);
  for (size_t k = 0; k < tp->n_dims; k++) {
    if (tp->dims[k] < 0)
      return ait_err(AIT_E_INVALID_MODEL, "tensor '%s' has a negative dimension %lld", name,
                     (long long)tp->dims[k]);
    /* whatever max_bytes allows: element counts stay far from overflowing
     * the packed-size arithmetic (n * bits) */
    if (tp->dims[k] && n > ((int64_t)1 << 40) / tp->dims[k])
      return ait_err(AIT_E_INVALID_MODEL, "tensor '%s' has more than 2^40 elements", name);
    if (tp->dims[k] && n > max_bytes / esize / tp->dims[k]) {
      long double need = (long double)esize; /* for the message only: may not fit int64 */
      for (size_t j = 0; j < tp->n_dims; j++)
        need *= (long double)tp->dims[j];
      return ait_err(AIT_E_INVALID_MODEL,
                     "tensor '%s' needs %.0Lf bytes, more than max_tensor_bytes %lld (raise it "
                     "in ait_load_options or with --max-tensor-bytes)",
                     name, need, (long long)max_bytes);
    }
    n *= tp->dims[k];
  }
  size_t nbytes = ait_dtype_file_bytes(dt, n); /* in the file: packed for sub-byte types */
  bool external =
      tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  void *buf = NULL;
  size_t size = 0;
  if (dt == AIT_STRING) {
    if ((int64_t)tp->n_string_data != n)
      return ait_err(AIT_E_INVALID_MODEL, "string tensor '%s' has %zu strings for %lld elements",
                     name, tp->n_string_data, (long long)n);
  } else if (external || tp->has_raw_data) {
    if (external) {
      AIT_TRY(read_external(tp, base_dir, &buf, &size));
    } else {
      buf = tp->raw_data.data;
      size = tp->raw_data.len;
    }
    if (size != nbytes) {
      if (external) free(buf);
      return ait_err(AIT_E_INVALID_MODEL, "tensor '%s' needs %zu bytes of data but has %zu", name,
                     nbytes, size);
    }
  } else if ((int64_t)typed_count(tp, dt) != typed_need(dt, n)) {
    return ait_err(AIT_E_INVALID_MODEL, "tensor '%s' of shape with %lld elements holds %zu values",
                   name, (long long)n, typed_count(tp, dt));
  }
  ait_tensor *t = ait_tensor_new(dt, (int)tp->n_dims, tp->dims);
  if (!t) {
    if (external) free(buf);
    return ait_err_prefix(AIT_E_INVALID_MODEL, "tensor '%s'", name);
  }
  ait_status st = AIT_OK;
  if (dt == AIT_STRING) {
    st = decode_strings(tp, t);
  } else if (external || tp->has_raw_data) {
    if (is_packed(dt))
      ait_dtype_unpack(dt, buf, n, t->data);
    else if (nbytes)
      memcpy(t->data, buf, nbytes); /* ONNX raw data is little-endian, as is x86 */
    if (external) free(buf);
  } else {
    st = decode_typed(tp, t);
  }
  if (st) {
    ait_tensor_free(t);
    return st;
  }
  *out = t;
  return AIT_OK;
}

ait_status ait_tensor_file_read(const char *path, ait_tensor **out, char **name) {
  void *data;
  size_t size;
  AIT_TRY(ait_read_file(path, &data, &size));
  Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, size, data);
  free(data);
  if (!tp) return ait_err(AIT_E_PARSE, "'%s' is not a serialized ONNX TensorProto", path);
  char *dir = ait_path_dir(path);
  ait_status st = ait_onnx_tensor_decode(tp, dir, 0, out);
  free(dir);
  if (!st && name) *name = strdup(tp->name ? tp->name : "");
  onnx__tensor_proto__free_unpacked(tp, NULL);
  if (st) return ait_err_prefix(st, "%s", path);
  return AIT_OK;
}

ait_status ait_onnx_raw_data(const ait_tensor *t, uint8_t **data, size_t *len, uint8_t **owned) {
  *owned = NULL;
  if (!is_packed(t->dtype)) {
    *data = t->data;
    *len = ait_tensor_nbytes(t);
    return AIT_OK;
  }
  int64_t n = ait_tensor_numel(t);
  *len = ait_dtype_file_bytes(t->dtype, n);
  *owned = malloc(*len ? *len : 1);
  if (!*owned) return ait_err(AIT_E_NOMEM, "out of memory");
  ait_dtype_pack(t->dtype, t->data, n, *owned);
  *data = *owned;
  return AIT_OK;
}

ait_status ait_onnx_tensor_proto(const ait_tensor *t, const char *name, Onnx__TensorProto *tp,
                                 ait_tp_scratch *sc) {
  memset(sc, 0, sizeof *sc);
  onnx__tensor_proto__init(tp);
  if (t->kind != AIT_KIND_TENSOR)
    return ait_err(AIT_E_UNSUPPORTED, "a sequence or optional is not a TensorProto");
  tp->n_dims = (size_t)t->rank;
  memcpy(sc->dims, t->dims, sizeof sc->dims);
  tp->dims = sc->dims;
  tp->has_data_type = 1;
  tp->data_type = (int32_t)t->dtype;
  tp->name = (char *)(name ? name : "");
  int64_t n = ait_tensor_numel(t);
  if (t->dtype == AIT_STRING) {
    sc->strs = calloc((size_t)(n ? n : 1), sizeof *sc->strs);
    if (!sc->strs) return ait_err(AIT_E_NOMEM, "out of memory");
    for (int64_t i = 0; i < n; i++) {
      char *str = ((char **)t->data)[i];
      sc->strs[i].data = (uint8_t *)(str ? str : "");
      sc->strs[i].len = strlen((char *)sc->strs[i].data);
    }
    tp->n_string_data = (size_t)n;
    tp->string_data = sc->strs;
    return AIT_OK;
  }
  tp->has_raw_data = 1;
  return ait_onnx_raw_data(t, &tp->raw_data.data, &tp->raw_data.len, &sc->packed);
}

void ait_tp_scratch_free(ait_tp_scratch *sc) {
  free(sc->strs);
  free(sc->packed);
  sc->strs = NULL;
  sc->packed = NULL;
}

ait_status ait_tensor_file_write(const char *path, const ait_tensor *t, const char *name) {
  if (t->kind != AIT_KIND_TENSOR)
    return ait_err(AIT_E_UNSUPPORTED, "cannot write a sequence or optional value to '%s'", path);
  Onnx__TensorProto tp;
  ait_tp_scratch sc;
  ait_status st = ait_onnx_tensor_proto(t, name, &tp, &sc);
  size_t len = st ? 0 : onnx__tensor_proto__get_packed_size(&tp);
  uint8_t *buf = st ? NULL : malloc(len ? len : 1);
  if (!st && !buf) st = ait_err(AIT_E_NOMEM, "out of memory");
  if (!st) {
    onnx__tensor_proto__pack(&tp, buf);
    st = ait_write_file_atomic(path, buf, len);
  }
  free(buf);
  ait_tp_scratch_free(&sc);
  return st;
}
