/* Helpers shared by the 'tensor' family: strided byte movement, string
 * ownership, index validation, element comparison and a stable sort. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/tensor_impl.h"

ait_status tn_new(ait_dtype dt, int rank, const int64_t *dims, ait_tensor **out) {
  *out = ait_tensor_new(dt, rank, dims);
  if (!*out)
    return ait_err(AIT_E_NOMEM, "cannot allocate a %s output of rank %d", ait_dtype_name(dt), rank);
  return AIT_OK;
}

ait_status tn_finish(ait_tensor *t, ait_status st) {
  if (!t || t->kind != AIT_KIND_TENSOR || t->dtype != AIT_STRING || !t->data) return st;
  char **p = t->data;
  int64_t n = ait_tensor_numel(t);
  if (st != AIT_OK) {
    memset(p, 0, (size_t)n * sizeof *p);
    return st;
  }
  for (int64_t i = 0; i < n; i++) {
    const char *s = p[i];
    p[i] = strdup(s ? s : "");
    if (!p[i]) {
      memset(p + i, 0, (size_t)(n - i) * sizeof *p);
      return ait_err(AIT_E_NOMEM, "out of memory copying %lld strings", (long long)n);
    }
  }
  return AIT_OK;
}

/* One row: n elements read with stride st (elements) from src. */
static void copy_row(char *dst, const char *src, size_t esz, int64_t n, int64_t st) {
  if (st == 1) {
    memcpy(dst, src, (size_t)n * esz);
    return;
  }
#define ROW(T)                                                                                     \
  do {                                                                                             \
    T *d = (T *)(void *)dst;                                                                       \
    const T *s = (const T *)(const void *)src;                                                     \
    for (int64_t i = 0; i < n; i++)                                                                \
      d[i] = s[i * st];                                                                            \
  } while (0)
  switch (esz) {
  case 1: ROW(uint8_t); break;
  case 2: ROW(uint16_t); break;
  case 4: ROW(uint32_t); break;
  case 8: ROW(uint64_t); break;
  default:
    for (int64_t i = 0; i < n; i++)
      memcpy(dst + (size_t)i * esz, src + i * st * (int64_t)esz, esz);
  }
#undef ROW
}

/* Transposing copy in square tiles, so that both the reads along input axis
 * p (stride 1) and the writes along the last output axis stay in cache. */
#define TILE 32
#define TILED(T)                                                                                   \
  static void tile_##T(T *o, const T *in, int64_t ni, int64_t nj, int64_t ostr, int64_t istr) {    \
    for (int64_t i0 = 0; i0 < ni; i0 += TILE)                                                      \
      for (int64_t j0 = 0; j0 < nj; j0 += TILE) {                                                  \
        int64_t i1 = i0 + TILE < ni ? i0 + TILE : ni, j1 = j0 + TILE < nj ? j0 + TILE : nj;        \
        for (int64_t i = i0; i < i1; i++)                                                          \
          for (int64_t j = j0; j < j1; j++)                                                        \
            o[i * ostr + j] = in[i + j * istr];                                                    \
      }                                                                                            \
  }
TILED(uint8_t)
TILED(uint16_t)
TILED(uint32_t)
TILED(uint64_t)

static void tiled_copy(void *dst, const void *src, size_t esz, int r, const int64_t *d,
                       const int64_t *s, int p) {
  int64_t ost[TN_MAX_VIEW], idx[TN_MAX_VIEW] = {0}, outer = 1, ioff = 0, ooff = 0;
  ait_shape_strides(r, d, ost);
  for (int k = 0; k < r - 1; k++)
    if (k != p) outer *= d[k];
  for (int64_t it = 0; it < outer; it++) {
    char *o = (char *)dst + (size_t)ooff * esz;
    const char *in = (const char *)src + ioff * (int64_t)esz;
    switch (esz) {
    case 1: tile_uint8_t((void *)o, (const void *)in, d[p], d[r - 1], ost[p], s[r - 1]); break;
    case 2: tile_uint16_t((void *)o, (const void *)in, d[p], d[r - 1], ost[p], s[r - 1]); break;
    case 4: tile_uint32_t((void *)o, (const void *)in, d[p], d[r - 1], ost[p], s[r - 1]); break;
    default: tile_uint64_t((void *)o, (const void *)in, d[p], d[r - 1], ost[p], s[r - 1]); break;
    }
    for (int k = r - 2; k >= 0; k--) {
      if (k == p) continue;
      ioff += s[k];
      ooff += ost[k];
      if (++idx[k] < d[k]) break;
      ioff -= s[k] * d[k];
      ooff -= ost[k] * d[k];
      idx[k] = 0;
    }
  }
}

void tn_strided_copy(void *dst, const void *src, size_t esz, int rank, const int64_t *dims,
                     const int64_t *strides) {
  /* Coalesce: drop size-1 dims, merge neighbours that are contiguous. */
  int64_t d[TN_MAX_VIEW], s[TN_MAX_VIEW];
  int r = 0;
  for (int k = 0; k < rank; k++) {
    if (dims[k] == 0) return;
    if (dims[k] == 1) continue;
    if (r > 0 && s[r - 1] == strides[k] * dims[k]) {
      d[r - 1] *= dims[k];
      s[r - 1] = strides[k];
      continue;
    }
    d[r] = dims[k];
    s[r] = strides[k];
    r++;
  }
  if (r == 0) {
    memcpy(dst, src, esz);
    return;
  }
  if (r >= 2 && s[r - 1] != 1 && (esz == 1 || esz == 2 || esz == 4 || esz == 8)) {
    for (int p = 0; p < r - 1; p++)
      if (s[p] == 1) { /* a transpose: the input's contiguous axis is output axis p */
        tiled_copy(dst, src, esz, r, d, s, p);
        return;
      }
  }
  int64_t n = d[r - 1], st = s[r - 1], outer = 1, idx[TN_MAX_VIEW] = {0}, off = 0;
  for (int k = 0; k < r - 1; k++)
    outer *= d[k];
  char *o = dst;
  const char *base = src;
  for (int64_t it = 0; it < outer; it++) {
    copy_row(o, base + off * (int64_t)esz, esz, n, st);
    o += (size_t)n * esz;
    for (int k = r - 2; k >= 0; k--) {
      off += s[k];
      if (++idx[k] < d[k]) break;
      off -= s[k] * d[k];
      idx[k] = 0;
    }
  }
}

void tn_transpose_raw(void *dst, const void *src, size_t esz, int rank, const int64_t *dims,
                      const int *perm) {
  int64_t in_strides[AIT_MAX_RANK], od[AIT_MAX_RANK], os[AIT_MAX_RANK];
  ait_shape_strides(rank, dims, in_strides);
  for (int k = 0; k < rank; k++) {
    od[k] = dims[perm[k]];
    os[k] = in_strides[perm[k]];
  }
  tn_strided_copy(dst, src, esz, rank, od, os);
}

ait_status tn_check_index_dtype(const ait_tensor *t, const char *what) {
  if (t->dtype != AIT_INT32 && t->dtype != AIT_INT64)
    return ait_err(AIT_E_DTYPE, "%s must be int32 or int64, got %s", what,
                   ait_dtype_name(t->dtype));
  return AIT_OK;
}

ait_status tn_read_ints(const ait_tensor *t, const char *what, int64_t *vals, int max, int *n) {
  AIT_TRY(tn_check_index_dtype(t, what));
  int64_t cnt = ait_tensor_numel(t);
  if (cnt > max)
    return ait_err(AIT_E_INVALID_ARG, "%s has %lld values, at most %d allowed", what,
                   (long long)cnt, max);
  for (int64_t i = 0; i < cnt; i++)
    vals[i] = tn_index_at(t, i);
  *n = (int)cnt;
  return AIT_OK;
}

ait_status tn_norm_index(int64_t v, int64_t dim, const char *what, int64_t *out) {
  int64_t a = v < 0 ? v + dim : v;
  if (a < 0 || a >= dim)
    return ait_err(AIT_E_INVALID_ARG, "%s %lld is out of range for a dimension of size %lld", what,
                   (long long)v, (long long)dim);
  *out = a;
  return AIT_OK;
}

#define CMP3(a, b) ((a) < (b) ? -1 : (a) > (b) ? 1 : 0)

static int cmp_float(double a, double b) {
  bool na = isnan(a), nb = isnan(b);
  if (na || nb) return na == nb ? 0 : na ? 1 : -1;
  return CMP3(a, b);
}

int tn_cmp_elem(ait_dtype dt, const void *a, const void *b) {
#define LOAD(T)                                                                                    \
  T x, y;                                                                                          \
  memcpy(&x, a, sizeof x);                                                                         \
  memcpy(&y, b, sizeof y)
  switch (dt) {
  case AIT_FLOAT32: {
    LOAD(float);
    return cmp_float(x, y);
  }
  case AIT_FLOAT64: {
    LOAD(double);
    return cmp_float(x, y);
  }
  case AIT_FLOAT16: {
    LOAD(uint16_t);
    return cmp_float(ait_f16_to_f32(x), ait_f16_to_f32(y));
  }
  case AIT_BFLOAT16: {
    LOAD(uint16_t);
    return cmp_float(ait_bf16_to_f32(x), ait_bf16_to_f32(y));
  }
  case AIT_INT8: {
    LOAD(int8_t);
    return CMP3(x, y);
  }
  case AIT_INT16: {
    LOAD(int16_t);
    return CMP3(x, y);
  }
  case AIT_INT32: {
    LOAD(int32_t);
    return CMP3(x, y);
  }
  case AIT_INT64: {
    LOAD(int64_t);
    return CMP3(x, y);
  }
  case AIT_UINT8:
  case AIT_BOOL: {
    LOAD(uint8_t);
    return CMP3(x, y);
  }
  case AIT_UINT16: {
    LOAD(uint16_t);
    return CMP3(x, y);
  }
  case AIT_UINT32: {
    LOAD(uint32_t);
    return CMP3(x, y);
  }
  case AIT_UINT64: {
    LOAD(uint64_t);
    return CMP3(x, y);
  }
  case AIT_STRING: {
    const char *x, *y;
    memcpy(&x, a, sizeof x);
    memcpy(&y, b, sizeof y);
    int c = strcmp(x ? x : "", y ? y : "");
    return CMP3(c, 0);
  }
  default: return memcmp(a, b, ait_elem_size(dt));
  }
#undef LOAD
}

static void merge_sort(int64_t *a, int64_t *tmp, int64_t n, tn_cmp_fn cmp, const void *ctx) {
  if (n < 2) return;
  if (n <= 16) { /* insertion sort: stable */
    for (int64_t i = 1; i < n; i++) {
      int64_t v = a[i], j = i;
      while (j > 0 && cmp(ctx, a[j - 1], v) > 0) {
        a[j] = a[j - 1];
        j--;
      }
      a[j] = v;
    }
    return;
  }
  int64_t h = n / 2;
  merge_sort(a, tmp, h, cmp, ctx);
  merge_sort(a + h, tmp, n - h, cmp, ctx);
  if (cmp(ctx, a[h - 1], a[h]) <= 0) return;
  memcpy(tmp, a, (size_t)h * sizeof *a);
  int64_t i = 0, j = h, k = 0;
  while (i < h && j < n)
    a[k++] = cmp(ctx, a[j], tmp[i]) < 0 ? a[j++] : tmp[i++];
  while (i < h)
    a[k++] = tmp[i++];
}

ait_status tn_sort_idx(int64_t *idx, int64_t n, tn_cmp_fn cmp, const void *ctx) {
  if (n < 2) return AIT_OK;
  int64_t *tmp = malloc((size_t)(n / 2 + 1) * sizeof *tmp);
  if (!tmp) return ait_err(AIT_E_NOMEM, "out of memory sorting %lld elements", (long long)n);
  merge_sort(idx, tmp, n, cmp, ctx);
  free(tmp);
  return AIT_OK;
}

/* ---- shape-function helpers ------------------------------------------- */

bool tn_const_ints(ait_graph *g, const ait_node *node, int i, int64_t *vals, int max, int *n) {
  if (i >= node->n_in) return false;
  ait_value *v = ait_node_in(g, node, i);
  if (!v || !v->init || v->init->kind != AIT_KIND_TENSOR) return false;
  const ait_tensor *t = v->init;
  if (t->dtype != AIT_INT32 && t->dtype != AIT_INT64) return false;
  int64_t cnt = ait_tensor_numel(t);
  if (cnt > max) return false;
  for (int64_t k = 0; k < cnt; k++)
    vals[k] = tn_index_at(t, k);
  *n = (int)cnt;
  return true;
}

bool tn_value_dims(const ait_value *v, int64_t *dims) {
  if (!v || v->rank < 0) return false;
  for (int k = 0; k < v->rank; k++)
    dims[k] = v->dims[k].v >= 0 ? v->dims[k].v : -1;
  return true;
}

void tn_set_out_dims(ait_graph *g, const ait_node *node, int i, ait_dtype dt, int rank,
                     const int64_t *dims) {
  ait_dim d[AIT_MAX_RANK];
  if (rank > AIT_MAX_RANK) rank = -1;
  for (int k = 0; k < rank; k++) {
    d[k].v = dims && dims[k] >= 0 ? dims[k] : -1;
    d[k].sym = NULL;
  }
  ait_set_out(g, node, i, dt, rank, rank >= 0 ? d : NULL);
}
