/* TfIdfVectorizer: count the n-grams of a pool in each row of the input.
 *
 * The pool (pool_int64s or pool_strings) holds all 1-grams, then all 2-grams,
 * ...; ngram_counts[i] is where the (i+1)-grams start. Gram number g (in pool
 * order over all sizes) is counted in output column ngram_indexes[g]. In a row
 * of C tokens, the n-gram at start s with skip distance d is the tokens
 * s, s+d, ..., s+(n-1)d; every n in [min_gram_length, max_gram_length] and
 * d in [1, max_skip_count+1] is tried, except that 1-grams are counted once
 * (d = 1 only). Grams are found by binary search in a sorted index. */
#include <stdlib.h>
#include <string.h>

#include "ir/shape.h"
#include "ops/misc_impl.h"

typedef struct tfidf {
  bool strings;          /* pool_strings (else pool_int64s) */
  const int64_t *pool_i; /* pool_int64s */
  char *const *pool_s;   /* pool_strings */
  int64_t *off;          /* [n_grams] pool offset of gram g */
  int *len;              /* [n_grams] its size n */
  int n_grams;
  int *ids; /* grams of sizes in [min, max], sorted by (n, tokens) */
  int n_ids;
  /* the row being searched */
  const int64_t *row_i;
  char *const *row_s;
} tfidf;

static int cmp_tok_i(int64_t a, int64_t b) { return a < b ? -1 : a > b; }
static const char *nz(const char *s) { return s ? s : ""; }

/* Order of grams a and b: by size, then token by token. */
static int cmp_grams(const tfidf *t, int a, int b) {
  if (t->len[a] != t->len[b]) return t->len[a] < t->len[b] ? -1 : 1;
  for (int k = 0; k < t->len[a]; k++) {
    int64_t pa = t->off[a] + k, pb = t->off[b] + k;
    int c = t->strings ? strcmp(nz(t->pool_s[pa]), nz(t->pool_s[pb]))
                       : cmp_tok_i(t->pool_i[pa], t->pool_i[pb]);
    if (c) return c;
  }
  return 0;
}

/* Order of gram g against the row window (start s, skip d, size n). */
static int cmp_window(const tfidf *t, int g, int64_t s, int64_t d, int n) {
  if (t->len[g] != n) return t->len[g] < n ? -1 : 1;
  for (int k = 0; k < n; k++) {
    int64_t p = t->off[g] + k, x = s + k * d;
    int c = t->strings ? strcmp(nz(t->pool_s[p]), nz(t->row_s[x]))
                       : cmp_tok_i(t->pool_i[p], t->row_i[x]);
    if (c) return c;
  }
  return 0;
}

/* Stable merge sort of ids[0..n) by cmp_grams (equal grams keep pool order,
 * so the last of equal grams is the one a later pool entry defines). */
static void sort_ids(const tfidf *t, int *ids, int *tmp, int n) {
  if (n < 2) return;
  int h = n / 2;
  sort_ids(t, ids, tmp, h);
  sort_ids(t, ids + h, tmp, n - h);
  int i = 0, j = h, k = 0;
  while (i < h && j < n)
    tmp[k++] = cmp_grams(t, ids[j], ids[i]) < 0 ? ids[j++] : ids[i++];
  while (i < h)
    tmp[k++] = ids[i++];
  while (j < n)
    tmp[k++] = ids[j++];
  memcpy(ids, tmp, (size_t)n * sizeof *ids);
}

/* The gram equal to the window, or -1 (the last defined one when the pool
 * repeats a gram, as onnxruntime's trie keeps). */
static int find_gram(const tfidf *t, int64_t s, int64_t d, int n) {
  int lo = 0, hi = t->n_ids;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (cmp_window(t, t->ids[mid], s, d, n) <= 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo > 0 && cmp_window(t, t->ids[lo - 1], s, d, n) == 0 ? t->ids[lo - 1] : -1;
}

static void tfidf_free(tfidf *t) {
  free(t->off);
  free(t->len);
  free(t->ids);
}

/* Build the gram table from the attributes. */
static ait_status tfidf_init(tfidf *t, const ait_node *node, int min_n, int max_n, int n_idx) {
  memset(t, 0, sizeof *t);
  const ait_attr *pi = ait_node_attr(node, "pool_int64s"),
                 *ps = ait_node_attr(node, "pool_strings");
  int64_t pool_len = 0;
  if (ps && ps->type == AIT_ATTR_STRINGS && ps->n > 0) {
    t->strings = true;
    t->pool_s = ps->strings;
    pool_len = ps->n;
  } else if (pi && pi->type == AIT_ATTR_INTS) {
    t->pool_i = pi->ints;
    pool_len = pi->n;
  }
  int n_counts;
  const int64_t *counts = ait_attr_ints(node, "ngram_counts", &n_counts);
  int64_t total = 0;
  for (int i = 0; i < n_counts; i++) {
    int64_t start = counts[i], end = i + 1 < n_counts ? counts[i + 1] : pool_len;
    if (start < 0 || end < start || end > pool_len)
      return ait_err(AIT_E_INVALID_ARG,
                     "ngram_counts: the %d-grams [%lld, %lld) are out of order or outside the "
                     "pool of %lld",
                     i + 1, (long long)start, (long long)end, (long long)pool_len);
    if ((end - start) % (i + 1))
      return ait_err(AIT_E_INVALID_ARG, "%lld pool items do not make whole %d-grams",
                     (long long)(end - start), i + 1);
    total += (end - start) / (i + 1);
  }
  if (total > n_idx)
    return ait_err(AIT_E_INVALID_ARG, "the pool has %lld n-grams but ngram_indexes only %d",
                   (long long)total, n_idx);
  size_t cap = (size_t)(total ? total : 1);
  t->off = malloc(cap * sizeof *t->off);
  t->len = malloc(cap * sizeof *t->len);
  t->ids = malloc(cap * sizeof *t->ids);
  int *tmp = malloc(cap * sizeof *tmp);
  if (!t->off || !t->len || !t->ids || !tmp) {
    free(tmp);
    tfidf_free(t);
    return ait_err(AIT_E_NOMEM, "out of memory");
  }
  for (int i = 0; i < n_counts; i++) {
    int64_t end = i + 1 < n_counts ? counts[i + 1] : pool_len;
    for (int64_t p = counts[i]; p < end; p += i + 1) {
      t->off[t->n_grams] = p;
      t->len[t->n_grams] = i + 1;
      if (i + 1 >= min_n && i + 1 <= max_n) t->ids[t->n_ids++] = t->n_grams;
      t->n_grams++;
    }
  }
  sort_ids(t, t->ids, tmp, t->n_ids);
  free(tmp);
  return AIT_OK;
}

/* Count the grams of one row of c tokens into freq[out_size]. */
static void count_row(const tfidf *t, int64_t c, int min_n, int max_n, int max_skip,
                      const int64_t *indexes, int64_t *freq) {
  for (int n = min_n; n <= max_n; n++) {
    int64_t skips = n == 1 ? 1 : (int64_t)max_skip + 1;
    for (int64_t d = 1; d <= skips; d++)
      for (int64_t s = 0; s + (n - 1) * d < c; s++) {
        int g = find_gram(t, s, d, n);
        if (g >= 0) freq[indexes[g]]++;
      }
  }
}

AIT_MISC_KERNEL(ait_k_tfidf_vectorizer) {
  const ait_tensor *x = in[0];
  if (!x || x->kind != AIT_KIND_TENSOR) return ait_err(AIT_E_INVALID_ARG, "X must be a tensor");
  if (x->dtype != AIT_STRING && x->dtype != AIT_INT32 && x->dtype != AIT_INT64)
    return ait_err(AIT_E_DTYPE, "X must be string, int32 or int64, got %s",
                   ait_dtype_name(x->dtype));
  if (x->rank > 2) return ait_err(AIT_E_SHAPE, "X must be [C] or [N, C], got rank %d", x->rank);
  int64_t min_n = ait_attr_int(node, "min_gram_length", 0);
  int64_t max_n = ait_attr_int(node, "max_gram_length", 0);
  int64_t max_skip = ait_attr_int(node, "max_skip_count", 0);
  if (min_n < 1 || max_n < min_n || max_n > 1024 || max_skip < 0 || max_skip > (1 << 20))
    return ait_err(AIT_E_INVALID_ARG, "bad n-gram lengths [%lld, %lld] or max_skip_count %lld",
                   (long long)min_n, (long long)max_n, (long long)max_skip);
  const char *mode = ait_attr_str(node, "mode", "");
  int m = !strcmp(mode, "TF") ? 1 : !strcmp(mode, "IDF") ? 2 : !strcmp(mode, "TFIDF") ? 3 : 0;
  if (!m) return ait_err(AIT_E_INVALID_ARG, "unknown mode '%s' (TF, IDF or TFIDF)", mode);
  int n_idx, n_w;
  const int64_t *indexes = ait_attr_ints(node, "ngram_indexes", &n_idx);
  const float *w = ait_attr_floats(node, "weights", &n_w);
  int64_t out_size = 0;
  for (int i = 0; i < n_idx; i++) {
    if (indexes[i] < 0) return ait_err(AIT_E_INVALID_ARG, "ngram_indexes[%d] is negative", i);
    if (indexes[i] + 1 > out_size) out_size = indexes[i] + 1;
  }
  if (n_w > 0 && n_w < out_size)
    return ait_err(AIT_E_INVALID_ARG, "%d weights for %lld output columns", n_w,
                   (long long)out_size);
  bool pool_strings = ait_node_attr(node, "pool_strings") != NULL;
  if (pool_strings != (x->dtype == AIT_STRING))
    return ait_err(AIT_E_DTYPE, "X is %s but the pool holds %s", ait_dtype_name(x->dtype),
                   pool_strings ? "strings" : "integers");

  int64_t rows = x->rank == 2 ? x->dims[0] : 1, c = x->rank == 0 ? 1 : x->dims[x->rank - 1];
  int64_t dims[2] = {rows, out_size};
  ait_tensor *y = x->rank == 2 ? ait_tensor_new(AIT_FLOAT32, 2, dims)
                               : ait_tensor_new(AIT_FLOAT32, 1, &out_size);
  if (!y) return AIT_E_NOMEM;
  out[0] = y; /* freed by the executor on failure */

  tfidf t;
  AIT_TRY(tfidf_init(&t, node, (int)min_n, (int)max_n, n_idx));
  int64_t *freq = calloc((size_t)(out_size ? out_size : 1), sizeof *freq);
  int64_t *xi = NULL;
  if (x->dtype != AIT_STRING) { /* integer tokens as int64 */
    xi = malloc((size_t)(rows * c > 0 ? rows * c : 1) * sizeof *xi);
    const ait_dtype_traits *tr = ait_dtype_traits_of(x->dtype);
    for (int64_t i = 0; xi && i < rows * c; i++)
      xi[i] = ait_load_i64(tr, x->data, i);
  }
  if (!freq || (x->dtype != AIT_STRING && !xi)) {
    free(freq);
    free(xi);
    tfidf_free(&t);
    return ait_err(AIT_E_NOMEM, "out of memory");
  }
  float *yd = y->data;
  for (int64_t r = 0; r < rows; r++) {
    memset(freq, 0, (size_t)out_size * sizeof *freq);
    t.row_i = xi ? xi + r * c : NULL;
    t.row_s = xi ? NULL : (char *const *)x->data + r * c;
    count_row(&t, c, (int)min_n, (int)max_n, (int)max_skip, indexes, freq);
    for (int64_t i = 0; i < out_size; i++) {
      float f = (float)freq[i], wi = n_w ? w[i] : 1.0f;
      yd[r * out_size + i] = m == 1 ? f : m == 2 ? (freq[i] > 0 ? wi : 0.0f) : wi * f;
    }
  }
  free(freq);
  free(xi);
  tfidf_free(&t);
  return AIT_OK;
}

AIT_MISC_SHAPE(ait_s_tfidf_vectorizer) {
  ait_value *x = ait_node_in(g, node, 0);
  int n_idx;
  const int64_t *indexes = ait_attr_ints(node, "ngram_indexes", &n_idx);
  int64_t out_size = 0;
  for (int i = 0; i < n_idx; i++)
    if (indexes[i] + 1 > out_size) out_size = indexes[i] + 1;
  if (!x || x->rank < 0 || x->rank > 2) {
    ait_set_out(g, node, 0, AIT_FLOAT32, -1, NULL);
    return AIT_OK;
  }
  ait_dim d[2] = {x->rank == 2 ? x->dims[0] : (ait_dim){1, NULL}, {out_size, NULL}};
  ait_set_out(g, node, 0, AIT_FLOAT32, x->rank == 2 ? 2 : 1, x->rank == 2 ? d : d + 1);
  return AIT_OK;
}
