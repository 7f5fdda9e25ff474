#include "core/tensor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

size_t ait_elem_size(ait_dtype dt) {
  if (dt == AIT_STRING) return sizeof(char *);
  return ait_dtype_size(dt);
}

int64_t ait_shape_numel(int rank, const int64_t *dims) {
  /* saturates: shapes from a model are untrusted, and a product past 2^63
   * must read as "too large", not wrap (signed overflow is undefined) */
  int64_t n = 1;
  for (int i = 0; i < rank; i++)
    if (__builtin_mul_overflow(n, dims[i], &n)) n = INT64_MAX;
  return n;
}

static ait_tensor *alloc_header(void) {
  ait_tensor *t = calloc(1, sizeof *t);
  if (!t) ait_err(AIT_E_NOMEM, "out of memory allocating a tensor");
  return t;
}

static bool check_shape(ait_dtype dt, int rank, const int64_t *dims) {
  if (rank < 0 || rank > AIT_MAX_RANK) {
    ait_err(AIT_E_UNSUPPORTED, "tensor rank %d is outside 0..%d", rank, AIT_MAX_RANK);
    return false;
  }
  if (ait_elem_size(dt) == 0) {
    ait_err(AIT_E_UNSUPPORTED, "tensor dtype %s (%d) is not supported", ait_dtype_name(dt), dt);
    return false;
  }
  int64_t n = 1;
  for (int i = 0; i < rank; i++) {
    if (dims[i] < 0) {
      ait_err(AIT_E_SHAPE, "negative dimension %lld in a tensor shape", (long long)dims[i]);
      return false;
    }
    if (dims[i] && n > ((int64_t)1 << 40) / dims[i]) {
      ait_err(AIT_E_NOMEM, "tensor of %d dims is too large", rank);
      return false;
    }
    n *= dims[i];
  }
  return true;
}

ait_tensor *ait_tensor_new(ait_dtype dt, int rank, const int64_t *dims) {
  if (!check_shape(dt, rank, dims)) return NULL;
  ait_tensor *t = alloc_header();
  if (!t) return NULL;
  t->dtype = dt;
  t->rank = rank;
  if (rank) memcpy(t->dims, dims, (size_t)rank * sizeof *dims);
  size_t nb = ait_tensor_nbytes(t);
  t->data = calloc(nb ? nb : 1, 1);
  if (!t->data) {
    free(t);
    ait_err(AIT_E_NOMEM, "out of memory allocating %zu bytes", nb);
    return NULL;
  }
  t->owns = true;
  return t;
}

ait_tensor *ait_tensor_wrap(ait_dtype dt, int rank, const int64_t *dims, void *data) {
  if (!check_shape(dt, rank, dims)) return NULL;
  ait_tensor *t = alloc_header();
  if (!t) return NULL;
  t->dtype = dt;
  t->rank = rank;
  if (rank) memcpy(t->dims, dims, (size_t)rank * sizeof *dims);
  t->data = data;
  t->owns = false;
  return t;
}

ait_tensor *ait_sequence_new(ait_dtype dt) {
  ait_tensor *t = alloc_header();
  if (!t) return NULL;
  t->kind = AIT_KIND_SEQUENCE;
  t->dtype = dt;
  return t;
}

ait_tensor *ait_none_new(void) {
  ait_tensor *t = alloc_header();
  if (t) t->kind = AIT_KIND_NONE;
  return t;
}

ait_status ait_sequence_push(ait_tensor *seq, ait_tensor *t) {
  ait_tensor **items = realloc(seq->items, (size_t)(seq->n_items + 1) * sizeof *items);
  if (!items) {
    ait_tensor_free(t);
    return ait_err(AIT_E_NOMEM, "out of memory growing a sequence");
  }
  seq->items = items;
  seq->items[seq->n_items++] = t;
  return AIT_OK;
}

ait_tensor *ait_tensor_clone(const ait_tensor *t) {
  if (t->kind == AIT_KIND_NONE) return ait_none_new();
  if (t->kind == AIT_KIND_SEQUENCE) {
    ait_tensor *s = ait_sequence_new(t->dtype);
    for (int i = 0; s && i < t->n_items; i++) {
      ait_tensor *c = ait_tensor_clone(t->items[i]);
      if (!c || ait_sequence_push(s, c) != AIT_OK) {
        ait_tensor_free(s);
        return NULL;
      }
    }
    return s;
  }
  ait_tensor *c = ait_tensor_new(t->dtype, t->rank, t->dims);
  if (!c) return NULL;
  if (t->dtype == AIT_STRING) {
    int64_t n = ait_tensor_numel(t);
    char **src = t->data, **dst = c->data;
    for (int64_t i = 0; i < n; i++) {
      dst[i] = strdup(src[i] ? src[i] : "");
      if (!dst[i]) {
        ait_tensor_free(c);
        ait_err(AIT_E_NOMEM, "out of memory copying strings");
        return NULL;
      }
    }
  } else if (ait_tensor_nbytes(t)) {
    memcpy(c->data, t->data, ait_tensor_nbytes(t));
  }
  return c;
}

void ait_tensor_free(ait_tensor *t) {
  if (!t) return;
  for (int i = 0; i < t->n_items; i++)
    ait_tensor_free(t->items[i]);
  free(t->items);
  if (t->owns) {
    if (t->dtype == AIT_STRING && t->kind == AIT_KIND_TENSOR && t->data) {
      int64_t n = ait_tensor_numel(t);
      for (int64_t i = 0; i < n; i++)
        free(((char **)t->data)[i]);
    }
    free(t->data);
  }
  free(t);
}

void ait_shape_strides(int rank, const int64_t *dims, int64_t *strides) {
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; i--) {
    strides[i] = s;
    s *= dims[i];
  }
}

ait_status ait_shape_broadcast(int ra, const int64_t *a, int rb, const int64_t *b, int *rout,
                               int64_t *out) {
  int r = ra > rb ? ra : rb;
  int64_t res[AIT_MAX_RANK]; /* out may alias a or b (callers accumulate in place) */
  if (r > AIT_MAX_RANK)
    return ait_err(AIT_E_SHAPE, "broadcast rank %d exceeds %d", r, AIT_MAX_RANK);
  for (int i = 0; i < r; i++) {
    int64_t da = i < r - ra ? 1 : a[i - (r - ra)];
    int64_t db = i < r - rb ? 1 : b[i - (r - rb)];
    if (da != db && da != 1 && db != 1) {
      char sa[128], sb[128];
      return ait_err(AIT_E_SHAPE, "shapes %s and %s do not broadcast",
                     ait_shape_str(ra, a, sa, sizeof sa), ait_shape_str(rb, b, sb, sizeof sb));
    }
    res[i] = da == 1 ? db : da;
  }
  memcpy(out, res, sizeof(int64_t) * (size_t)r);
  *rout = r;
  return AIT_OK;
}

void ait_broadcast_strides(int r, const int64_t *d, int ro, const int64_t *o, int64_t *strides) {
  int64_t s[AIT_MAX_RANK];
  ait_shape_strides(r, d, s);
  for (int i = 0; i < ro; i++) {
    int j = i - (ro - r);
    strides[i] = (j < 0 || d[j] == 1 || o[i] == 1) ? 0 : s[j];
  }
}

const char *ait_shape_str(int rank, const int64_t *dims, char *buf, size_t n) {
  size_t at = 0;
  at += (size_t)snprintf(buf + at, n - at, "[");
  for (int i = 0; i < rank && at < n; i++)
    at += (size_t)snprintf(buf + at, n - at, i ? ",%lld" : "%lld", (long long)dims[i]);
  if (at < n) snprintf(buf + at, n - at, "]");
  return buf;
}
