/* NumPy .npy files (format versions 1.0, 2.0 and 3.0): a 10- or 12-byte
 * preamble, then a Python dict literal such as
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * padded to a multiple of 64 bytes, then the array in C order. Files are
 * untrusted: the header is parsed strictly (known keys, a known dtype,
 * C order, at most AIT_MAX_RANK non-negative dims) and the data must fill the
 * rest of the file exactly. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/error.h"
#include "core/fileio.h"

/* The dtypes a .npy file can hold here, by NumPy's descr (little-endian or
 * byte-order-free one-byte types). */
static const struct {
  const char *descr;
  ait_dtype dtype;
} npy_types[] = {
    {"<f4", AIT_FLOAT32},   {"<f8", AIT_FLOAT64},     {"<f2", AIT_FLOAT16}, {"|i1", AIT_INT8},
    {"|u1", AIT_UINT8},     {"<i2", AIT_INT16},       {"<u2", AIT_UINT16},  {"<i4", AIT_INT32},
    {"<u4", AIT_UINT32},    {"<i8", AIT_INT64},       {"<u8", AIT_UINT64},  {"|b1", AIT_BOOL},
    {"<c8", AIT_COMPLEX64}, {"<c16", AIT_COMPLEX128},
};
#define N_TYPES (sizeof npy_types / sizeof npy_types[0])

static const char magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

static ait_status bad(const char *path, const char *what) {
  return ait_err(AIT_E_PARSE, "%s: not a valid .npy file: %s", path, what);
}

static const char *skip_ws(const char *p, const char *end) {
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\n'))
    p++;
  return p;
}

/* A quoted Python string at p (single or double quotes, no escapes) into
 * buf; the position after it, or NULL. */
static const char *quoted(const char *p, const char *end, char *buf, size_t n) {
  if (p >= end || (*p != '\'' && *p != '"')) return NULL;
  char q = *p++;
  size_t k = 0;
  while (p < end && *p != q) {
    if (*p == '\\' || k + 1 >= n) return NULL;
    buf[k++] = *p++;
  }
  if (p >= end) return NULL;
  buf[k] = '\0';
  return p + 1;
}

typedef struct npy_header {
  char descr[16];
  int fortran; /* -1 until seen */
  int rank;    /* -1 until seen */
  int64_t dims[AIT_MAX_RANK];
} npy_header;

/* "(2, 3)", "(5,)" or "()" at p; the position after it, or NULL. */
static const char *shape_tuple(const char *p, const char *end, npy_header *h) {
  if (p >= end || *p != '(') return NULL;
  p = skip_ws(p + 1, end);
  h->rank = 0;
  while (p < end && *p != ')') {
    if (h->rank == AIT_MAX_RANK || *p < '0' || *p > '9') return NULL;
    int64_t v = 0;
    while (p < end && *p >= '0' && *p <= '9') {
      if (v > (INT64_MAX - 9) / 10) return NULL;
      v = v * 10 + (*p++ - '0');
    }
    h->dims[h->rank++] = v;
    p = skip_ws(p, end);
    if (p < end && *p == ',')
      p = skip_ws(p + 1, end);
    else if (p < end && *p != ')')
      return NULL;
  }
  return p < end ? p + 1 : NULL;
}

/* The header dict: exactly the keys descr, fortran_order and shape. */
static ait_status parse_header(const char *path, const char *p, const char *end, npy_header *h) {
  h->descr[0] = '\0';
  h->fortran = h->rank = -1;
  p = skip_ws(p, end);
  if (p >= end || *p++ != '{') return bad(path, "the header is not a dict");
  for (;;) {
    p = skip_ws(p, end);
    if (p < end && *p == '}') break;
    char key[32];
    if (!(p = quoted(p, end, key, sizeof key))) return bad(path, "a header key is not a string");
    p = skip_ws(p, end);
    if (p >= end || *p++ != ':') return bad(path, "a header key has no value");
    p = skip_ws(p, end);
    if (!strcmp(key, "descr")) {
      if (!(p = quoted(p, end, h->descr, sizeof h->descr)))
        return bad(path, "'descr' is not a simple dtype string (structured arrays are not read)");
    } else if (!strcmp(key, "fortran_order")) {
      if (end - p >= 4 && !strncmp(p, "True", 4))
        h->fortran = 1, p += 4;
      else if (end - p >= 5 && !strncmp(p, "False", 5))
        h->fortran = 0, p += 5;
      else
        return bad(path, "'fortran_order' is not True or False");
    } else if (!strcmp(key, "shape")) {
      if (!(p = shape_tuple(p, end, h)))
        return bad(path, "'shape' is not a tuple of at most 8 non-negative integers");
    } else {
      return ait_err(AIT_E_PARSE, "%s: not a valid .npy file: unknown header key '%s'", path, key);
    }
    p = skip_ws(p, end);
    if (p < end && *p == ',')
      p++;
    else if (p >= end || *p != '}')
      return bad(path, "the header dict is malformed");
  }
  if (!h->descr[0] || h->fortran < 0 || h->rank < 0)
    return bad(path, "the header lacks 'descr', 'fortran_order' or 'shape'");
  if (h->fortran)
    return ait_err(AIT_E_UNSUPPORTED,
                   "%s: Fortran-ordered arrays are not read; save it with "
                   "numpy.save(path, numpy.ascontiguousarray(a))",
                   path);
  return AIT_OK;
}

static ait_dtype dtype_of(const char *descr) {
  char d[16];
  snprintf(d, sizeof d, "%s", descr);
  /* one-byte types may say '<', '>', '|' or '=': byte order means nothing there */
  if ((d[0] == '<' || d[0] == '>' || d[0] == '=') && (d[2] == '1' && !d[3])) d[0] = '|';
  if (d[0] == '=') d[0] = '<'; /* native order: this is a little-endian build */
  for (size_t i = 0; i < N_TYPES; i++)
    if (!strcmp(npy_types[i].descr, d)) return npy_types[i].dtype;
  return AIT_UNDEFINED;
}

ait_status cli_npy_read(const char *path, ait_tensor **out) {
  void *buf = NULL;
  size_t size = 0;
  AIT_TRY(ait_read_file(path, &buf, &size));
  const unsigned char *b = buf;
  ait_status st = AIT_OK;
  size_t hlen = 0, pre = 0;
  if (size < 10 || memcmp(b, magic, 6)) {
    st = bad(path, "it does not start with \\x93NUMPY");
  } else if (b[6] == 1 && b[7] == 0) {
    pre = 10, hlen = (size_t)b[8] | (size_t)b[9] << 8;
  } else if ((b[6] == 2 || b[6] == 3) && b[7] == 0 && size >= 12) {
    pre = 12, hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
  } else {
    st = ait_err(AIT_E_UNSUPPORTED, "%s: .npy format version %d.%d is not read (1.0 to 3.0 are)",
                 path, b[6], b[7]);
  }
  if (!st && hlen > size - pre) st = bad(path, "the header runs past the end of the file");
  npy_header h;
  if (!st) st = parse_header(path, (const char *)b + pre, (const char *)b + pre + hlen, &h);
  ait_dtype dt = st ? AIT_UNDEFINED : dtype_of(h.descr);
  if (!st && dt == AIT_UNDEFINED)
    st = ait_err(AIT_E_UNSUPPORTED,
                 "%s: .npy dtype '%s' is not read (little-endian bool, int, uint, float16/32/64 "
                 "and complex are)",
                 path, h.descr);
  if (!st) {
    size_t es = ait_elem_size(dt), have = size - pre - hlen;
    double want = (double)es;
    for (int k = 0; k < h.rank; k++)
      want *= (double)h.dims[k];
    if (want != (double)have) {
      char s[160];
      st = ait_err(
          AIT_E_PARSE, "%s: the .npy header says %s %s (%.0f bytes of data) but the file holds %zu",
          path, ait_dtype_name(dt), ait_shape_str(h.rank, h.dims, s, sizeof s), want, have);
    }
  }
  ait_tensor *t = NULL;
  if (!st && !(t = ait_tensor_new(dt, h.rank, h.dims)))
    st = ait_err(AIT_E_NOMEM, "%s: out of memory", path);
  if (!st) {
    memcpy(t->data, b + pre + hlen, ait_tensor_nbytes(t));
    if (dt == AIT_BOOL) /* NumPy writes 0 or 1; anything else is not a bool */
      for (size_t i = 0; i < ait_tensor_nbytes(t); i++)
        if (((unsigned char *)t->data)[i] > 1) {
          st = bad(path, "a bool element is neither 0 nor 1");
          break;
        }
  }
  free(buf);
  if (st) {
    ait_tensor_free(t);
    return st;
  }
  *out = t;
  return AIT_OK;
}

ait_status cli_npy_write(const char *path, const ait_tensor *t) {
  const char *descr = NULL;
  for (size_t i = 0; t->kind == AIT_KIND_TENSOR && i < N_TYPES; i++)
    if (npy_types[i].dtype == t->dtype) descr = npy_types[i].descr;
  if (!descr)
    return ait_err(AIT_E_UNSUPPORTED, "%s: a %s %s cannot be written as .npy", path,
                   t->kind == AIT_KIND_TENSOR ? ait_dtype_name(t->dtype) : "non-tensor",
                   t->kind == AIT_KIND_TENSOR ? "tensor" : "value");
  char dict[512], shape[300] = "";
  size_t at = 0;
  for (int k = 0; k < t->rank; k++)
    at += (size_t)snprintf(shape + at, sizeof shape - at, "%lld,%s", (long long)t->dims[k],
                           k + 1 < t->rank ? " " : "");
  if (t->rank > 1) shape[at - 1] = '\0'; /* "(2, 3)"; one dim keeps its comma: "(5,)" */
  int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }",
                   descr, shape);
  /* pad with spaces so that the data starts at a multiple of 64, then '\n' */
  size_t hlen = ((size_t)n + 10 + 1 + 63) / 64 * 64 - 10;
  size_t data = ait_tensor_nbytes(t), total = 10 + hlen + data;
  unsigned char *buf = malloc(total);
  if (!buf) return ait_err(AIT_E_NOMEM, "out of memory");
  memcpy(buf, magic, 6);
  buf[6] = 1, buf[7] = 0, buf[8] = (unsigned char)(hlen & 0xff),
  buf[9] = (unsigned char)(hlen >> 8);
  memset(buf + 10, ' ', hlen);
  memcpy(buf + 10, dict, (size_t)n);
  buf[10 + hlen - 1] = '\n';
  if (data) memcpy(buf + 10 + hlen, t->data, data);
  ait_status st = ait_write_file_atomic(path, buf, total);
  free(buf);
  return st;
}
