/* Operator family 'ml' (domain ai.onnx.ml): Binarizer-1,
 * ArrayFeatureExtractor-1, LabelEncoder-2/4 and TreeEnsemble-5, with their
 * rows at the end. Numbers go through double. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/shape.h"
#include "ops/op.h"

#define ML_KERNEL(name)                                                                            \
  static ait_status name(ait_kctx *ctx, const ait_node *node, const ait_tensor *const *in,         \
                         int n_in, ait_tensor **out, int n_out)

static ait_status need(const ait_tensor *const *in, int n_in, int i, const char *what) {
  if (i >= n_in || !in[i] || in[i]->kind != AIT_KIND_TENSOR)
    return ait_err(AIT_E_INVALID_ARG, "input %s is required", what);
  return AIT_OK;
}

static ait_status new_out(ait_dtype dt, int rank, const int64_t *dims, ait_tensor **out) {
  *out = ait_tensor_new(dt, rank, dims);
  return *out ? AIT_OK : AIT_E_NOMEM;
}

/* ---- Binarizer: x > threshold ? 1 : 0, in x's type ------------------------ */

ML_KERNEL(ml_binarizer) {
  AIT_TRY(need(in, n_in, 0, "X"));
  const ait_tensor *x = in[0];
  const ait_dtype_traits *t = ait_dtype_traits_of(x->dtype);
  if (!t || x->dtype == AIT_BOOL)
    return ait_err(AIT_E_DTYPE, "Binarizer of %s", ait_dtype_name(x->dtype));
  double th = ait_attr_float(node, "threshold", 0.0f);
  AIT_TRY(new_out(x->dtype, x->rank, x->dims, &out[0]));
  for (int64_t i = 0, n = ait_tensor_numel(x); i < n; i++)
    ait_store_f64(t, out[0]->data, i, ait_load_f64(t, x->data, i) > th ? 1.0 : 0.0);
  return AIT_OK;
}

/* ---- ArrayFeatureExtractor: X[..., Y] (a 1-D X gives one row) ------------ */

ML_KERNEL(ml_array_feature_extractor) {
  AIT_TRY(need(in, n_in, 0, "X"));
  AIT_TRY(need(in, n_in, 1, "Y"));
  const ait_tensor *x = in[0], *y = in[1];
  if (x->rank < 1) return ait_err(AIT_E_SHAPE, "X must have rank >= 1");
  if (y->dtype != AIT_INT64) return ait_err(AIT_E_DTYPE, "Y must be int64");
  int64_t k = ait_tensor_numel(y), last = x->dims[x->rank - 1], od[AIT_MAX_RANK];
  int rank = x->rank == 1 ? 2 : x->rank;
  if (x->rank == 1)
    od[0] = 1;
  else
    memcpy(od, x->dims, sizeof(int64_t) * (size_t)(x->rank - 1));
  od[rank - 1] = k;
  const int64_t *idx = y->data;
  for (int64_t j = 0; j < k; j++)
    if (idx[j] < 0 || idx[j] >= last)
      return ait_err(AIT_E_INVALID_ARG, "index %lld is outside the last axis of %lld",
                     (long long)idx[j], (long long)last);
  AIT_TRY(new_out(x->dtype, rank, od, &out[0]));
  size_t esz = ait_elem_size(x->dtype);
  int64_t rows = last ? ait_tensor_numel(x) / last : 0;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t j = 0; j < k; j++) {
      const char *src = (const char *)x->data + (size_t)(r * last + idx[j]) * esz;
      char *dst = (char *)out[0]->data + (size_t)(r * k + j) * esz;
      if (x->dtype == AIT_STRING) {
        const char *s = *(char *const *)src;
        if (!(*(char **)dst = strdup(s ? s : ""))) return ait_err(AIT_E_NOMEM, "out of memory");
      } else {
        memcpy(dst, src, esz);
      }
    }
  return AIT_OK;
}

/* ---- LabelEncoder ---------------------------------------------------------- */

/* A 1-D list attribute as a tensor: `<base>_strings`, `<base>_int64s`,
 * `<base>_floats` or (opset 4) `<base>_tensor`; NULL when none is set.
 * *owned receives a tensor the caller frees (NULL when the graph's tensor is
 * returned). */
static ait_status list_attr(const ait_node *node, const char *base, const ait_tensor **t,
                            ait_tensor **owned) {
  char name[40];
  *t = NULL, *owned = NULL;
  snprintf(name, sizeof name, "%s_tensor", base);
  if ((*t = ait_attr_tensor(node, name))) return AIT_OK;
  snprintf(name, sizeof name, "%s_strings", base);
  const ait_attr *a = ait_node_attr(node, name);
  int64_t n;
  if (a && a->type == AIT_ATTR_STRINGS) {
    n = a->n;
    if (!(*owned = ait_tensor_new(AIT_STRING, 1, &n))) return AIT_E_NOMEM;
    for (int64_t i = 0; i < n; i++)
      if (!(((char **)(*owned)->data)[i] = strdup(a->strings[i] ? a->strings[i] : "")))
        return ait_err(AIT_E_NOMEM, "out of memory");
  } else if (snprintf(name, sizeof name, "%s_int64s", base), (a = ait_node_attr(node, name))) {
    int c = 0;
    const int64_t *v = ait_attr_ints(node, name, &c);
    n = c;
    if (!(*owned = ait_tensor_new(AIT_INT64, 1, &n))) return AIT_E_NOMEM;
    if (n) memcpy((*owned)->data, v, (size_t)n * sizeof *v);
  } else if (snprintf(name, sizeof name, "%s_floats", base), (a = ait_node_attr(node, name))) {
    int c = 0;
    const float *v = ait_attr_floats(node, name, &c);
    n = c;
    if (!(*owned = ait_tensor_new(AIT_FLOAT32, 1, &n))) return AIT_E_NOMEM;
    if (n) memcpy((*owned)->data, v, (size_t)n * sizeof *v);
  }
  *t = *owned;
  return AIT_OK;
}

/* Three-way compare of element i of a and element j of b (same dtype);
 * NaN equals NaN and sorts last. */
static int cmp_elem(const ait_tensor *a, int64_t i, const ait_tensor *b, int64_t j) {
  if (a->dtype == AIT_STRING) {
    const char *x = ((char *const *)a->data)[i], *y = ((char *const *)b->data)[j];
    return strcmp(x ? x : "", y ? y : "");
  }
  const ait_dtype_traits *t = ait_dtype_traits_of(a->dtype);
  if (!t->is_float) {
    int64_t x = ait_load_i64(t, a->data, i), y = ait_load_i64(t, b->data, j);
    return (x > y) - (x < y);
  }
  double x = ait_load_f64(t, a->data, i), y = ait_load_f64(t, b->data, j);
  if (x != x || y != y) return (x != x) - (y != y);
  return (x > y) - (x < y);
}

/* qsort has no context argument: the keys being sorted, per thread */
static _Thread_local const ait_tensor *le_keys;
/* by key, then by position: among equal keys the last is the one to use */
static int le_cmp(const void *a, const void *b) {
  int64_t i = *(const int64_t *)a, j = *(const int64_t *)b;
  int c = cmp_elem(le_keys, i, le_keys, j);
  return c ? c : (i > j) - (i < j);
}

/* The default value as a 1-element tensor of values' dtype. */
static ait_status le_default(const ait_node *node, ait_dtype dt, ait_tensor **def) {
  int64_t one = 1;
  const ait_tensor *dtn = ait_attr_tensor(node, "default_tensor");
  if (dtn && dtn->dtype == dt && ait_tensor_numel(dtn) >= 1) {
    *def = ait_tensor_clone(dtn);
    return *def ? AIT_OK : AIT_E_NOMEM;
  }
  if (!(*def = ait_tensor_new(dt, 1, &one))) return AIT_E_NOMEM;
  if (dt == AIT_STRING) {
    char **s = (*def)->data;
    s[0] = strdup(ait_attr_str(node, "default_string", "_Unused"));
    return s[0] ? AIT_OK : AIT_E_NOMEM;
  }
  const ait_dtype_traits *t = ait_dtype_traits_of(dt);
  if (!t) return ait_err(AIT_E_DTYPE, "LabelEncoder values of %s", ait_dtype_name(dt));
  if (t->is_float)
    ait_store_f64(t, (*def)->data, 0, ait_attr_float(node, "default_float", -0.0f));
  else
    ait_store_i64(t, (*def)->data, 0, ait_attr_int(node, "default_int64", -1));
  return AIT_OK;
}

ML_KERNEL(ml_label_encoder) {
  AIT_TRY(need(in, n_in, 0, "X"));
  const ait_tensor *x = in[0], *keys = NULL, *vals = NULL;
  ait_tensor *okeys = NULL, *ovals = NULL, *def = NULL;
  int64_t *order = NULL;
  ait_status st = list_attr(node, "keys", &keys, &okeys);
  if (!st) st = list_attr(node, "values", &vals, &ovals);
  if (!st && (!keys || !vals))
    st = ait_err(AIT_E_INVALID_ARG, "LabelEncoder needs keys_* and values_*");
  if (!st && ait_tensor_numel(keys) != ait_tensor_numel(vals))
    st = ait_err(AIT_E_INVALID_ARG, "LabelEncoder has %lld keys and %lld values",
                 (long long)ait_tensor_numel(keys), (long long)ait_tensor_numel(vals));
  if (!st && keys->dtype != x->dtype)
    st = ait_err(AIT_E_DTYPE, "X is %s but the keys are %s", ait_dtype_name(x->dtype),
                 ait_dtype_name(keys->dtype));
  if (!st && keys->dtype != AIT_STRING && !ait_dtype_traits_of(keys->dtype))
    st = ait_err(AIT_E_DTYPE, "keys of %s", ait_dtype_name(keys->dtype));
  if (!st) st = le_default(node, vals->dtype, &def);
  int64_t nk = st ? 0 : ait_tensor_numel(keys);
  if (!st && !(order = malloc((size_t)(nk + 1) * sizeof *order)))
    st = ait_err(AIT_E_NOMEM, "out of memory");
  if (!st) {
    for (int64_t i = 0; i < nk; i++)
      order[i] = i;
    le_keys = keys;
    qsort(order, (size_t)nk, sizeof *order, le_cmp);
    st = new_out(vals->dtype, x->rank, x->dims, &out[0]);
  }
  size_t esz = vals ? ait_elem_size(vals->dtype) : 0;
  for (int64_t i = 0, n = st ? 0 : ait_tensor_numel(x); i < n; i++) {
    int64_t lo = 0, hi = nk, hit = -1; /* the last of the keys equal to x[i] */
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      int c = cmp_elem(keys, order[mid], x, i);
      if (c <= 0) {
        if (c == 0) hit = order[mid];
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    const ait_tensor *src = hit >= 0 ? vals : def;
    const char *from = (const char *)src->data + (size_t)(hit >= 0 ? hit : 0) * esz;
    char *to = (char *)out[0]->data + (size_t)i * esz;
    if (vals->dtype == AIT_STRING) {
      const char *s = *(char *const *)from;
      if (!(*(char **)to = strdup(s ? s : ""))) st = ait_err(AIT_E_NOMEM, "out of memory");
    } else {
      memcpy(to, from, esz);
    }
  }
  free(order);
  ait_tensor_free(okeys), ait_tensor_free(ovals), ait_tensor_free(def);
  return st;
}

static ait_status ml_label_encoder_shape(ait_graph *g, const ait_node *node) {
  const ait_value *x = ait_node_in(g, node, 0);
  const ait_tensor *vt = NULL;
  ait_tensor *owned = NULL;
  ait_dtype dt = AIT_UNDEFINED;
  if (list_attr(node, "values", &vt, &owned) == AIT_OK && vt) dt = vt->dtype;
  ait_tensor_free(owned);
  ait_set_out(g, node, 0, dt, x ? x->rank : -1, x && x->rank >= 0 ? x->dims : NULL);
  return AIT_OK;
}

/* ---- TreeEnsemble-5 ------------------------------------------------------ */

enum { TE_LEQ, TE_LT, TE_GTE, TE_GT, TE_EQ, TE_NEQ, TE_MEMBER };

typedef struct te_model {
  int n_nodes, n_leaves, n_trees, n_targets;
  const int64_t *feat, *tnode, *fnode, *tleaf, *fleaf, *roots, *targets, *missing;
  double *splits, *weights; /* n_nodes / n_leaves, owned */
  uint8_t *modes;           /* owned */
  int64_t *set_at;          /* per node: start of its members in `members`, -1 */
  double *members;          /* owned, NaN-separated */
  int64_t n_members;
} te_model;

static void te_free(te_model *m) {
  free(m->splits), free(m->weights), free(m->modes), free(m->set_at), free(m->members);
}

/* A tensor attribute's values as doubles (n of them expected, or any when
 * n < 0: *got receives the count). */
static ait_status te_doubles(const ait_node *node, const char *name, int64_t n, double **v,
                             int64_t *got) {
  const ait_tensor *t = ait_attr_tensor(node, name);
  *v = NULL;
  if (!t) return n > 0 ? ait_err(AIT_E_INVALID_ARG, "TreeEnsemble needs %s", name) : AIT_OK;
  const ait_dtype_traits *tr = ait_dtype_traits_of(t->dtype);
  int64_t c = ait_tensor_numel(t);
  if (!tr || (n >= 0 && c != n))
    return ait_err(AIT_E_INVALID_ARG, "%s has %lld values, expected %lld", name, (long long)c,
                   (long long)n);
  if (!(*v = malloc((size_t)(c + 1) * sizeof **v))) return AIT_E_NOMEM;
  for (int64_t i = 0; i < c; i++)
    (*v)[i] = ait_load_f64(tr, t->data, i);
  if (got) *got = c;
  return AIT_OK;
}

static ait_status te_ints(const ait_node *node, const char *name, int n, const int64_t **v,
                          bool required) {
  int c = 0;
  *v = ait_attr_ints(node, name, &c);
  if (!*v && !required) return AIT_OK;
  if (!*v || c != n)
    return ait_err(AIT_E_INVALID_ARG, "TreeEnsemble %s has %d values, expected %d", name, c, n);
  return AIT_OK;
}

static ait_status te_load(const ait_node *node, te_model *m) {
  memset(m, 0, sizeof *m);
  int c = 0;
  if (!ait_attr_ints(node, "nodes_featureids", &c))
    return ait_err(AIT_E_INVALID_ARG, "TreeEnsemble needs nodes_featureids");
  m->n_nodes = c;
  AIT_TRY(te_ints(node, "nodes_featureids", c, &m->feat, true));
  AIT_TRY(te_ints(node, "nodes_truenodeids", c, &m->tnode, true));
  AIT_TRY(te_ints(node, "nodes_falsenodeids", c, &m->fnode, true));
  AIT_TRY(te_ints(node, "nodes_trueleafs", c, &m->tleaf, true));
  AIT_TRY(te_ints(node, "nodes_falseleafs", c, &m->fleaf, true));
  AIT_TRY(te_ints(node, "nodes_missing_value_tracks_true", c, &m->missing, false));
  int nl = 0, nr = 0;
  if (!ait_attr_ints(node, "leaf_targetids", &nl) || !ait_attr_ints(node, "tree_roots", &nr))
    return ait_err(AIT_E_INVALID_ARG, "TreeEnsemble needs leaf_targetids and tree_roots");
  m->n_leaves = nl, m->n_trees = nr;
  AIT_TRY(te_ints(node, "leaf_targetids", nl, &m->targets, true));
  AIT_TRY(te_ints(node, "tree_roots", nr, &m->roots, true));
  m->n_targets = (int)ait_attr_int(node, "n_targets", 0);
  if (m->n_targets <= 0) return ait_err(AIT_E_INVALID_ARG, "TreeEnsemble needs n_targets > 0");
  AIT_TRY(te_doubles(node, "nodes_splits", c, &m->splits, NULL));
  AIT_TRY(te_doubles(node, "leaf_weights", nl, &m->weights, NULL));
  const ait_tensor *mt = ait_attr_tensor(node, "nodes_modes");
  if (!mt || ait_tensor_numel(mt) != c || !ait_dtype_traits_of(mt->dtype))
    return ait_err(AIT_E_INVALID_ARG, "TreeEnsemble nodes_modes must hold %d modes", c);
  m->modes = malloc((size_t)c + 1);
  m->set_at = malloc(((size_t)c + 1) * sizeof *m->set_at);
  if (!m->modes || !m->set_at) return AIT_E_NOMEM;
  AIT_TRY(te_doubles(node, "membership_values", -1, &m->members, &m->n_members));
  int64_t at = 0;
  for (int i = 0; i < c; i++) { /* sets in node order, NaN-delimited */
    int64_t md = ait_load_i64(ait_dtype_traits_of(mt->dtype), mt->data, i);
    if (md < TE_LEQ || md > TE_MEMBER)
      return ait_err(AIT_E_INVALID_ARG, "node %d mode %lld", i, (long long)md);
    m->modes[i] = (uint8_t)md;
    m->set_at[i] = -1;
    if (md != TE_MEMBER) continue;
    if (!m->members || at >= m->n_members)
      return ait_err(AIT_E_INVALID_ARG, "membership_values lack the set of node %d", i);
    m->set_at[i] = at;
    while (at < m->n_members && m->members[at] == m->members[at])
      at++;
    at++; /* the NaN */
  }
  for (int i = 0; i < c; i++) {
    if ((!m->tleaf[i] && (m->tnode[i] < 0 || m->tnode[i] >= c)) ||
        (m->tleaf[i] && (m->tnode[i] < 0 || m->tnode[i] >= nl)) ||
        (!m->fleaf[i] && (m->fnode[i] < 0 || m->fnode[i] >= c)) ||
        (m->fleaf[i] && (m->fnode[i] < 0 || m->fnode[i] >= nl)))
      return ait_err(AIT_E_INVALID_ARG, "TreeEnsemble node %d branches out of range", i);
  }
  for (int i = 0; i < nl; i++)
    if (m->targets[i] < 0 || m->targets[i] >= m->n_targets)
      return ait_err(AIT_E_INVALID_ARG, "leaf %d targets %lld of %d", i, (long long)m->targets[i],
                     m->n_targets);
  for (int i = 0; i < nr; i++)
    if (m->roots[i] < 0 || m->roots[i] >= c)
      return ait_err(AIT_E_INVALID_ARG, "tree root %d out of range", i);
  return AIT_OK;
}

static bool te_branch(const te_model *m, int i, double x) {
  if (x != x && m->missing && m->missing[i]) return true;
  double s = m->splits[i];
  switch (m->modes[i]) {
  case TE_LEQ: return x <= s;
  case TE_LT: return x < s;
  case TE_GTE: return x >= s;
  case TE_GT: return x > s;
  case TE_EQ: return x == s;
  case TE_NEQ: return x != s;
  default:
    for (int64_t k = m->set_at[i]; k < m->n_members && m->members[k] == m->members[k]; k++)
      if (m->members[k] == x) return true;
    return false;
  }
}

/* The leaf that row x reaches from node `root`; -1 on a cycle. */
static int64_t te_walk(const te_model *m, const double *x, int64_t nf, int64_t i) {
  for (int steps = 0; steps <= m->n_nodes; steps++) {
    int64_t f = m->feat[i];
    double v = f >= 0 && f < nf ? x[f] : NAN;
    bool t = te_branch(m, (int)i, v);
    int64_t next = t ? m->tnode[i] : m->fnode[i];
    if (t ? m->tleaf[i] : m->fleaf[i]) return next;
    i = next;
  }
  return -1;
}

static void te_post(int mode, double *s, int n) {
  if (mode == 1 || mode == 3) { /* SOFTMAX / SOFTMAX_ZERO (zeros stay zero) */
    double mx = -INFINITY, sum = 0;
    for (int i = 0; i < n; i++)
      if (!(mode == 3 && s[i] == 0) && s[i] > mx) mx = s[i];
    for (int i = 0; i < n; i++) {
      s[i] = mode == 3 && s[i] == 0 ? 0 : exp(s[i] - mx);
      sum += s[i];
    }
    for (int i = 0; sum > 0 && i < n; i++)
      s[i] /= sum;
  } else if (mode == 2) { /* LOGISTIC */
    for (int i = 0; i < n; i++)
      s[i] = 1 / (1 + exp(-s[i]));
  } else if (mode == 4) { /* PROBIT: sqrt(2) erfinv(2p - 1) by Newton on erf */
    for (int i = 0; i < n; i++) {
      double y = 2 * s[i] - 1, z = 0;
      if (!(y > -1 && y < 1)) {
        s[i] = y <= -1 ? -INFINITY : y >= 1 ? INFINITY : NAN;
        continue;
      }
      for (int it = 0; it < 60; it++)
        z -= (erf(z) - y) / (2 / sqrt(M_PI) * exp(-z * z));
      s[i] = sqrt(2.0) * z;
    }
  }
}

ML_KERNEL(ml_tree_ensemble) {
  AIT_TRY(need(in, n_in, 0, "X"));
  const ait_tensor *x = in[0];
  const ait_dtype_traits *t = ait_dtype_traits_of(x->dtype);
  if (!t || !t->is_float || x->rank != 2)
    return ait_err(AIT_E_DTYPE, "TreeEnsemble takes a float [N, F] input");
  int agg = (int)ait_attr_int(node, "aggregate_function", 1);
  int post = (int)ait_attr_int(node, "post_transform", 0);
  if (agg < 0 || agg > 3 || post < 0 || post > 4)
    return ait_err(AIT_E_INVALID_ARG, "aggregate_function %d / post_transform %d unknown", agg,
                   post);
  te_model m;
  ait_status st = te_load(node, &m);
  int64_t N = x->dims[0], F = x->dims[1], od[2] = {N, st ? 0 : m.n_targets};
  if (!st) st = new_out(x->dtype, 2, od, &out[0]);
  double *row = st ? NULL : malloc((size_t)(F + 1) * sizeof *row);
  double *acc = st ? NULL : malloc((size_t)(m.n_targets + 1) * sizeof *acc);
  if (!st && (!row || !acc)) st = ait_err(AIT_E_NOMEM, "out of memory");
  for (int64_t n = 0; !st && n < N; n++) {
    for (int64_t f = 0; f < F; f++)
      row[f] = ait_load_f64(t, x->data, n * F + f);
    for (int k = 0; k < m.n_targets; k++)
      acc[k] = agg == 2 ? DBL_MAX : agg == 3 ? -DBL_MAX : 0;
    for (int tr = 0; tr < m.n_trees && !st; tr++) {
      int64_t leaf = te_walk(&m, row, F, m.roots[tr]);
      if (leaf < 0) {
        st = ait_err(AIT_E_INVALID_ARG, "tree %d has a cycle", tr);
        break;
      }
      double w = m.weights[leaf];
      double *a = &acc[m.targets[leaf]];
      *a = agg == 0 || agg == 1 ? *a + w : agg == 2 ? fmin(*a, w) : fmax(*a, w);
    }
    if (agg == 0)
      for (int k = 0; k < m.n_targets; k++)
        acc[k] /= m.n_trees ? m.n_trees : 1;
    te_post(post, acc, m.n_targets);
    for (int k = 0; !st && k < m.n_targets; k++)
      ait_store_f64(t, out[0]->data, n * m.n_targets + k, acc[k]);
  }
  free(row), free(acc);
  te_free(&m);
  return st;
}

static ait_status ml_tree_ensemble_shape(ait_graph *g, const ait_node *node) {
  const ait_value *x = ait_node_in(g, node, 0);
  ait_dim d[2] = {x && x->rank == 2 ? x->dims[0] : (ait_dim){-1, NULL},
                  {ait_attr_int(node, "n_targets", -1), NULL}};
  ait_set_out(g, node, 0, x ? x->dtype : AIT_UNDEFINED, 2, d);
  return AIT_OK;
}

static ait_status ml_afe_shape(ait_graph *g, const ait_node *node) {
  const ait_value *x = ait_node_in(g, node, 0);
  ait_set_out(g, node, 0, x ? x->dtype : AIT_UNDEFINED,
              x && x->rank >= 0 ? (x->rank == 1 ? 2 : x->rank) : -1, NULL);
  return AIT_OK;
}

#define ML "ai.onnx.ml"
const ait_op_def ait_ops_ml[] = {
    {ML, "Binarizer", 1, AIT_DT_NUMERIC, ait_shape_same, ml_binarizer},
    {ML, "ArrayFeatureExtractor", 1, 0, ml_afe_shape, ml_array_feature_extractor},
    {ML, "LabelEncoder", 2, 0, ml_label_encoder_shape, ml_label_encoder},
    {ML, "LabelEncoder", 4, 0, ml_label_encoder_shape, ml_label_encoder}, /* *_tensor */
    {ML, "TreeEnsemble", 5, AIT_DT_FLOATS, ml_tree_ensemble_shape, ml_tree_ensemble},
};
const int ait_ops_ml_n = (int)(sizeof ait_ops_ml / sizeof ait_ops_ml[0]);
