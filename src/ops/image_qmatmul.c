/* MatMulInteger and QLinearMatMul: numpy-style batched matmul of 8-bit
 * integer operands shifted by their zero points, accumulated in int64.
 * Zero points and scales are per tensor (one value), per row of A / per
 * column of B (a vector), or a tensor shaped like the operand with the
 * contracted dim set to 1 ([..., M, 1] for A, [..., 1, N] for B). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/image_impl.h"

/* One operand viewed as [batch..., rows, cols]. */
typedef struct mm_side {
  int brank;
  int64_t bdims[AIT_MAX_RANK];
  int64_t nbatch, rows, cols;
  bool per_col; /* B: parameters go along columns; A: along rows */
  int32_t *v;   /* nbatch * rows * cols values minus the zero point */
} mm_side;

static void side_init(mm_side *s, const ait_tensor *x, bool is_b) {
  memset(s, 0, sizeof *s);
  s->per_col = is_b;
  if (x->rank == 1) {
    s->rows = is_b ? x->dims[0] : 1;
    s->cols = is_b ? 1 : x->dims[0];
  } else {
    s->brank = x->rank - 2;
    memcpy(s->bdims, x->dims, (size_t)s->brank * sizeof *s->bdims);
    s->rows = x->dims[x->rank - 2];
    s->cols = x->dims[x->rank - 1];
  }
  s->nbatch = ait_shape_numel(s->brank, s->bdims);
}

/* Number of parameters per matrix: rows of A or columns of B. */
static int64_t side_plen(const mm_side *s) { return s->per_col ? s->cols : s->rows; }

/* Expands parameter tensor p (zero point or scale) of operand x into
 * vals[nbatch * plen]; NULL p gives `def` everywhere. */
static ait_status expand_param(const ait_tensor *p, const ait_tensor *x, const mm_side *s,
                               const char *what, double def, double **vals) {
  int64_t plen = side_plen(s), total = s->nbatch * plen;
  double *v = malloc((size_t)(total > 0 ? total : 1) * sizeof *v);
  if (!v) return ait_err(AIT_E_NOMEM, "cannot allocate %s values", what);
  *vals = v;
  if (!p) {
    for (int64_t i = 0; i < total; i++)
      v[i] = def;
    return AIT_OK;
  }
  const ait_dtype_traits *tr = ait_dtype_traits_of(p->dtype);
  if (!tr) return ait_err(AIT_E_DTYPE, "%s has dtype %s", what, ait_dtype_name(p->dtype));
  int64_t n = ait_tensor_numel(p);
  if (n == 1) {
    double c = ait_load_f64(tr, p->data, 0);
    for (int64_t i = 0; i < total; i++)
      v[i] = c;
    return AIT_OK;
  }
  if (p->rank == 1 && n == plen) {
    for (int64_t i = 0; i < total; i++)
      v[i] = ait_load_f64(tr, p->data, i % plen);
    return AIT_OK;
  }
  if (x->rank >= 2 && p->rank == x->rank) {
    int64_t target[AIT_MAX_RANK], strides[AIT_MAX_RANK];
    memcpy(target, x->dims, (size_t)x->rank * sizeof *target);
    target[s->per_col ? x->rank - 2 : x->rank - 1] = 1; /* the contracted dim */
    bool ok = true;
    for (int i = 0; i < x->rank; i++)
      ok = ok && (p->dims[i] == 1 || p->dims[i] == target[i]);
    if (ok) {
      ait_broadcast_strides(p->rank, p->dims, x->rank, target, strides);
      for (int64_t i = 0; i < total; i++) {
        int64_t rem = i, off = 0;
        for (int d = x->rank - 1; d >= 0; d--)
          off += (rem % target[d]) * strides[d], rem /= target[d];
        v[i] = ait_load_f64(tr, p->data, off);
      }
      return AIT_OK;
    }
  }
  char b1[64], b2[64];
  return ait_err(AIT_E_SHAPE, "%s of shape %s does not fit operand of shape %s", what,
                 ait_shape_str(p->rank, p->dims, b1, sizeof b1),
                 ait_shape_str(x->rank, x->dims, b2, sizeof b2));
}

/* s->v = x - zero point (zero point already expanded into zp[]). */
static ait_status side_load(mm_side *s, const ait_tensor *x, const double *zp) {
  int64_t n = s->nbatch * s->rows * s->cols, plen = side_plen(s);
  s->v = malloc((size_t)(n > 0 ? n : 1) * sizeof *s->v);
  if (!s->v) return ait_err(AIT_E_NOMEM, "cannot allocate a matmul operand");
  const ait_dtype_traits *tr = ait_dtype_traits_of(x->dtype);
  for (int64_t i = 0; i < n; i++) {
    int64_t b = i / (s->rows * s->cols), r = (i / s->cols) % s->rows, c = i % s->cols;
    int64_t z = (int64_t)zp[b * plen + (s->per_col ? c : r)];
    s->v[i] = (int32_t)(ait_load_i64(tr, x->data, i) - z);
  }
  return AIT_OK;
}

/* The product's shape, and for each output batch the batch index of A and B. */
typedef struct mm_plan {
  int orank;
  int64_t odims[AIT_MAX_RANK];
  int obrank;
  int64_t obdims[AIT_MAX_RANK], sa[AIT_MAX_RANK], sb[AIT_MAX_RANK];
  int64_t nob, m, k, n;
} mm_plan;

static ait_status mm_plan_make(const mm_side *a, const mm_side *b, const ait_tensor *at,
                               const ait_tensor *bt, mm_plan *p) {
  memset(p, 0, sizeof *p);
  if (a->cols != b->rows)
    return ait_err(AIT_E_SHAPE, "inner dims differ: A has %lld columns, B has %lld rows",
                   (long long)a->cols, (long long)b->rows);
  AIT_TRY(ait_shape_broadcast(a->brank, a->bdims, b->brank, b->bdims, &p->obrank, p->obdims));
  ait_broadcast_strides(a->brank, a->bdims, p->obrank, p->obdims, p->sa);
  ait_broadcast_strides(b->brank, b->bdims, p->obrank, p->obdims, p->sb);
  p->nob = ait_shape_numel(p->obrank, p->obdims);
  p->m = a->rows, p->k = a->cols, p->n = b->cols;
  p->orank = p->obrank;
  memcpy(p->odims, p->obdims, (size_t)p->obrank * sizeof *p->odims);
  if (at->rank > 1) p->odims[p->orank++] = p->m;
  if (bt->rank > 1) p->odims[p->orank++] = p->n;
  return AIT_OK;
}

/* Batch index of A (*ia) and B (*ib) for output batch ob. */
static void mm_batch(const mm_plan *p, int64_t ob, int64_t *ia, int64_t *ib) {
  int64_t rem = ob;
  *ia = *ib = 0;
  for (int d = p->obrank - 1; d >= 0; d--) {
    int64_t i = rem % p->obdims[d];
    rem /= p->obdims[d];
    *ia += i * p->sa[d];
    *ib += i * p->sb[d];
  }
}

/* acc[0..n) = row m of A (batch ia) times B (batch ib). */
static void mm_row(const mm_plan *p, const mm_side *a, const mm_side *b, int64_t ia, int64_t ib,
                   int64_t m, int64_t *acc) {
  const int32_t *ar = a->v + (ia * p->m + m) * p->k, *bm = b->v + ib * p->k * p->n;
  for (int64_t n = 0; n < p->n; n++)
    acc[n] = 0;
  for (int64_t k = 0; k < p->k; k++) {
    int64_t av = ar[k];
    const int32_t *br = bm + k * p->n;
    if (av)
      for (int64_t n = 0; n < p->n; n++)
        acc[n] += av * br[n];
  }
}

static ait_status acc_new(const mm_plan *p, int64_t **acc) {
  *acc = malloc((size_t)(p->n + 1) * sizeof **acc);
  return *acc ? AIT_OK : ait_err(AIT_E_NOMEM, "cannot allocate matmul accumulators");
}

static bool is_q8(ait_dtype dt) { return dt == AIT_UINT8 || dt == AIT_INT8; }

/* Loads A and B with their zero points (inputs ia, iza, ib, izb). */
static ait_status mm_load(const ait_tensor *const *in, int n_in, int ia, int iza, int ib, int izb,
                          mm_side *a, mm_side *b) {
  const ait_tensor *at = img_in(in, n_in, ia), *bt = img_in(in, n_in, ib);
  const ait_tensor *za = img_in(in, n_in, iza), *zb = img_in(in, n_in, izb);
  if (!at || !bt) return ait_err(AIT_E_INVALID_ARG, "A and B are required");
  if (!is_q8(at->dtype) || !is_q8(bt->dtype))
    return ait_err(AIT_E_DTYPE, "A and B must be int8/uint8, got %s and %s",
                   ait_dtype_name(at->dtype), ait_dtype_name(bt->dtype));
  if ((za && za->dtype != at->dtype) || (zb && zb->dtype != bt->dtype))
    return ait_err(AIT_E_DTYPE, "zero points must have the dtype of their operand");
  if (at->rank < 1 || bt->rank < 1) return ait_err(AIT_E_SHAPE, "A and B must have rank >= 1");
  side_init(a, at, false);
  side_init(b, bt, true);
  double *zpa = NULL, *zpb = NULL;
  ait_status st = expand_param(za, at, a, "a_zero_point", 0, &zpa);
  if (st == AIT_OK) st = expand_param(zb, bt, b, "b_zero_point", 0, &zpb);
  if (st == AIT_OK) st = side_load(a, at, zpa);
  if (st == AIT_OK) st = side_load(b, bt, zpb);
  free(zpa);
  free(zpb);
  return st;
}

IMG_KERNEL(img_matmul_integer) {
  mm_side a = {0}, b = {0};
  mm_plan p;
  int64_t *acc = NULL;
  ait_status st = mm_load(in, n_in, 0, 2, 1, 3, &a, &b);
  if (st == AIT_OK) st = mm_plan_make(&a, &b, in[0], in[1], &p);
  if (st == AIT_OK) st = acc_new(&p, &acc);
  if (st == AIT_OK) st = img_new(AIT_INT32, p.orank, p.odims, &out[0]);
  if (st == AIT_OK) {
    int32_t *y = out[0]->data;
    for (int64_t ob = 0; ob < p.nob; ob++) {
      int64_t ia, ib;
      mm_batch(&p, ob, &ia, &ib);
      for (int64_t m = 0; m < p.m; m++) {
        mm_row(&p, &a, &b, ia, ib, m, acc);
        for (int64_t n = 0; n < p.n; n++)
          y[(ob * p.m + m) * p.n + n] = (int32_t)acc[n];
      }
    }
  }
  free(acc);
  free(a.v);
  free(b.v);
  return st;
}

/* y = saturate(round(acc * a_scale * b_scale / y_scale) + y_zero_point). */
IMG_KERNEL(img_qlinear_matmul) {
  const ait_tensor *sa = img_in(in, n_in, 1), *sb = img_in(in, n_in, 4);
  const ait_tensor *sy = img_in(in, n_in, 6), *zy = img_in(in, n_in, 7);
  if (!sa || !sb || !sy)
    return ait_err(AIT_E_INVALID_ARG, "a_scale, b_scale and y_scale are required");
  if (ait_tensor_numel(sy) != 1 || (zy && ait_tensor_numel(zy) != 1))
    return ait_err(AIT_E_SHAPE, "y_scale and y_zero_point must be scalars");
  mm_side a = {0}, b = {0};
  mm_plan p;
  double *sav = NULL, *sbv = NULL;
  int64_t *acc = NULL;
  ait_status st = mm_load(in, n_in, 0, 2, 3, 5, &a, &b);
  const ait_tensor *at = img_in(in, n_in, 0);
  ait_dtype ydt = zy ? zy->dtype : at ? at->dtype : AIT_UINT8;
  int64_t lo = 0, hi = 0;
  if (st == AIT_OK && !img_qrange(ydt, &lo, &hi))
    st = ait_err(AIT_E_DTYPE, "y_zero_point must be int8/uint8, got %s", ait_dtype_name(ydt));
  if (st == AIT_OK) st = mm_plan_make(&a, &b, in[0], in[3], &p);
  if (st == AIT_OK) st = expand_param(sa, in[0], &a, "a_scale", 1, &sav);
  if (st == AIT_OK) st = expand_param(sb, in[3], &b, "b_scale", 1, &sbv);
  if (st == AIT_OK) st = acc_new(&p, &acc);
  if (st == AIT_OK) st = img_new(ydt, p.orank, p.odims, &out[0]);
  if (st == AIT_OK) {
    float ys = (float)ait_scalar_f64(sy);
    int64_t yz = zy ? ait_scalar_i64(zy) : 0;
    const ait_dtype_traits *yt = ait_dtype_traits_of(ydt);
    for (int64_t ob = 0; ob < p.nob; ob++) {
      int64_t ia, ib;
      mm_batch(&p, ob, &ia, &ib);
      for (int64_t m = 0; m < p.m; m++) {
        mm_row(&p, &a, &b, ia, ib, m, acc);
        for (int64_t n = 0; n < p.n; n++) {
          float mult = (float)sav[ia * p.m + m] * (float)sbv[ib * p.n + n] / ys;
          double r = (double)acc[n] * mult;
          ait_store_i64(yt, out[0]->data, (ob * p.m + m) * p.n + n,
                        img_round_sat(r + (double)yz, lo, hi));
        }
      }
    }
  }
  free(acc);
  free(sav);
  free(sbv);
  free(a.v);
  free(b.v);
  return st;
}

/* ---- shapes -------------------------------------------------------------- */

/* numpy matmul shape of inputs ia and ib into output 0, dtype dt. */
static ait_status matmul_shape(ait_graph *g, const ait_node *node, int ia, int ib, ait_dtype dt) {
  const ait_value *a = ait_node_in(g, node, ia), *b = ait_node_in(g, node, ib);
  if (!a || !b || a->rank < 1 || b->rank < 1) {
    ait_set_out(g, node, 0, dt, -1, NULL);
    return AIT_OK;
  }
  int ab = a->rank > 2 ? a->rank - 2 : 0, bb = b->rank > 2 ? b->rank - 2 : 0;
  int ob = ab > bb ? ab : bb, r = 0;
  ait_dim dims[AIT_MAX_RANK];
  for (int i = 0; i < ob; i++) {
    const ait_dim *da = i - (ob - ab) >= 0 ? &a->dims[i - (ob - ab)] : NULL;
    const ait_dim *db = i - (ob - bb) >= 0 ? &b->dims[i - (ob - bb)] : NULL;
    ait_dim d = {-1, NULL};
    if (!da)
      d = *db;
    else if (!db)
      d = *da;
    else if (da->v == 1)
      d = *db;
    else if (db->v == 1)
      d = *da;
    else if (da->v >= 0 && db->v >= 0 && da->v != db->v)
      return ait_err(AIT_E_SHAPE, "batch dims %lld and %lld do not broadcast", (long long)da->v,
                     (long long)db->v);
    else if (da->v >= 0)
      d = *da;
    else if (db->v >= 0)
      d = *db;
    else if (da->sym && db->sym && !strcmp(da->sym, db->sym))
      d = *da;
    dims[r++] = d;
  }
  if (a->rank > 1) dims[r++] = a->dims[a->rank - 2];
  if (b->rank > 1) dims[r++] = b->dims[b->rank - 1];
  ait_set_out(g, node, 0, dt, r, dims);
  return AIT_OK;
}

IMG_SHAPE(img_matmul_integer_shape) { return matmul_shape(g, node, 0, 1, AIT_INT32); }

IMG_SHAPE(img_qlinear_matmul_shape) {
  const ait_value *zy = ait_node_in(g, node, 7), *a = ait_node_in(g, node, 0);
  return matmul_shape(g, node, 0, 3, zy ? zy->dtype : a ? a->dtype : AIT_UINT8);
}
