/* Elementwise ops of two or three inputs with numpy broadcasting: the
 * arithmetic (Add, Sub, Mul, Div, Pow, Max, Min, PRelu on float32; Add,
 * Sub, Mul, Max, Min on int32 / int64), the comparisons (Equal, Less,
 * Greater, LessOrEqual, GreaterOrEqual -> bool), And / Or / Xor and Where.
 *
 * One engine runs them all: the shapes are collapsed so rows are as long as
 * possible (neighbouring dims merged where every operand walks them
 * contiguously or broadcasts them), and each row goes to a row function
 * from a table by op and dtype. Row functions have a case for contiguous
 * operands and one for a broadcast scalar, which the compiler vectorises;
 * an AVX2 copy of each runs where nat_isa() allows. Rows are spread over
 * the pool, or the columns of a single long row. */
#include <math.h>
#include <string.h>

#include "backends/native/native.h"
#include "backends/native/native_elt.h"

/* y[0..n) from operands p[k] of element stride s[k] (0: broadcast). */
typedef void (*elt_row)(const void *const *p, const int64_t *s, void *y, int64_t n);

#define ELT_MAX_IN 3

typedef struct elt_job {
  int n_in, rank; /* collapsed rank; dims[rank-1] is the row */
  int64_t dims[AIT_MAX_RANK];
  int64_t st[ELT_MAX_IN][AIT_MAX_RANK]; /* element strides */
  size_t esz[ELT_MAX_IN], ysz;
  const char *p[ELT_MAX_IN];
  char *y;
  elt_row row;
  int64_t rows, per_task;
} elt_job;

/* ---- row functions ------------------------------------------------------ */

/* Two operands a, b of type TA into y of type TY: y = EXPR(x, w). */
#define ROW2(NAME, TA, TY, EXPR, ATTR)                                                             \
  ATTR static void NAME(const void *const *p, const int64_t *s, void *yv, int64_t n) {             \
    const TA *a = p[0], *b = p[1];                                                                 \
    TY *y = yv;                                                                                    \
    int64_t sa = s[0], sb = s[1];                                                                  \
    if (sa == 1 && sb == 1)                                                                        \
      for (int64_t j = 0; j < n; j++) {                                                            \
        TA x = a[j], w = b[j];                                                                     \
        y[j] = (EXPR);                                                                             \
      }                                                                                            \
    else if (sa == 1 && sb == 0) {                                                                 \
      TA w = b[0];                                                                                 \
      for (int64_t j = 0; j < n; j++) {                                                            \
        TA x = a[j];                                                                               \
        y[j] = (EXPR);                                                                             \
      }                                                                                            \
    } else if (sa == 0 && sb == 1) {                                                               \
      TA x = a[0];                                                                                 \
      for (int64_t j = 0; j < n; j++) {                                                            \
        TA w = b[j];                                                                               \
        y[j] = (EXPR);                                                                             \
      }                                                                                            \
    } else                                                                                         \
      for (int64_t j = 0; j < n; j++) {                                                            \
        TA x = a[j * sa], w = b[j * sb];                                                           \
        y[j] = (EXPR);                                                                             \
      }                                                                                            \
  }

/* Where(c, a, b): c bool, a and b of type T. */
#define ROW_WHERE(NAME, T, ATTR)                                                                   \
  ATTR static void NAME(const void *const *p, const int64_t *s, void *yv, int64_t n) {             \
    const uint8_t *c = p[0];                                                                       \
    const T *a = p[1], *b = p[2];                                                                  \
    T *y = yv;                                                                                     \
    if (s[0] == 1 && s[1] == 1 && s[2] == 1)                                                       \
      for (int64_t j = 0; j < n; j++)                                                              \
        y[j] = c[j] ? a[j] : b[j];                                                                 \
    else if (s[0] == 1 && s[1] == 1 && s[2] == 0) {                                                \
      T w = b[0];                                                                                  \
      for (int64_t j = 0; j < n; j++)                                                              \
        y[j] = c[j] ? a[j] : w;                                                                    \
    } else if (s[0] == 1 && s[1] == 0 && s[2] == 1) {                                              \
      T w = a[0];                                                                                  \
      for (int64_t j = 0; j < n; j++)                                                              \
        y[j] = c[j] ? w : b[j];                                                                    \
    } else                                                                                         \
      for (int64_t j = 0; j < n; j++)                                                              \
        y[j] = c[j * s[0]] ? a[j * s[1]] : b[j * s[2]];                                            \
  }

/* Float Max / Min as the reference: NaN in either operand gives NaN. */
#define FMAX(x, w) ((x) > (w) || (x) != (x) ? (x) : (w))
#define FMIN(x, w) ((x) < (w) || (x) != (x) ? (x) : (w))
/* Integer + - * wrap as the reference's (two's complement, through unsigned). */
#define WRAP(T, U, OP, x, w) ((T)((U)(x)OP(U)(w)))

/* Every row function, for one ISA: ROWS(SUFFIX, ATTR) defines them all with
 * SUFFIX appended. */
#define ROWS(S, ATTR)                                                                              \
  ROW2(add_f32_##S, float, float, x + w, ATTR)                                                     \
  ROW2(sub_f32_##S, float, float, x - w, ATTR)                                                     \
  ROW2(mul_f32_##S, float, float, x *w, ATTR)                                                      \
  ROW2(div_f32_##S, float, float, x / w, ATTR)                                                     \
  ROW2(max_f32_##S, float, float, FMAX(x, w), ATTR)                                                \
  ROW2(min_f32_##S, float, float, FMIN(x, w), ATTR)                                                \
  ROW2(prelu_f32_##S, float, float, x < 0.0f ? x * w : x, ATTR)                                    \
  ROW2(pow_f32_##S, float, float, powf(x, w), ATTR)                                                \
  ROW2(add_i32_##S, int32_t, int32_t, WRAP(int32_t, uint32_t, +, x, w), ATTR)                      \
  ROW2(sub_i32_##S, int32_t, int32_t, WRAP(int32_t, uint32_t, -, x, w), ATTR)                      \
  ROW2(mul_i32_##S, int32_t, int32_t, WRAP(int32_t, uint32_t, *, x, w), ATTR)                      \
  ROW2(max_i32_##S, int32_t, int32_t, x > w ? x : w, ATTR)                                         \
  ROW2(min_i32_##S, int32_t, int32_t, x < w ? x : w, ATTR)                                         \
  ROW2(add_i64_##S, int64_t, int64_t, WRAP(int64_t, uint64_t, +, x, w), ATTR)                      \
  ROW2(sub_i64_##S, int64_t, int64_t, WRAP(int64_t, uint64_t, -, x, w), ATTR)                      \
  ROW2(mul_i64_##S, int64_t, int64_t, WRAP(int64_t, uint64_t, *, x, w), ATTR)                      \
  ROW2(max_i64_##S, int64_t, int64_t, x > w ? x : w, ATTR)                                         \
  ROW2(min_i64_##S, int64_t, int64_t, x < w ? x : w, ATTR)                                         \
  ROW2(eq_f32_##S, float, uint8_t, x == w, ATTR)                                                   \
  ROW2(lt_f32_##S, float, uint8_t, x < w, ATTR)                                                    \
  ROW2(gt_f32_##S, float, uint8_t, x > w, ATTR)                                                    \
  ROW2(le_f32_##S, float, uint8_t, x <= w, ATTR)                                                   \
  ROW2(ge_f32_##S, float, uint8_t, x >= w, ATTR)                                                   \
  ROW2(eq_i32_##S, int32_t, uint8_t, x == w, ATTR)                                                 \
  ROW2(lt_i32_##S, int32_t, uint8_t, x < w, ATTR)                                                  \
  ROW2(gt_i32_##S, int32_t, uint8_t, x > w, ATTR)                                                  \
  ROW2(le_i32_##S, int32_t, uint8_t, x <= w, ATTR)                                                 \
  ROW2(ge_i32_##S, int32_t, uint8_t, x >= w, ATTR)                                                 \
  ROW2(eq_i64_##S, int64_t, uint8_t, x == w, ATTR)                                                 \
  ROW2(lt_i64_##S, int64_t, uint8_t, x < w, ATTR)                                                  \
  ROW2(gt_i64_##S, int64_t, uint8_t, x > w, ATTR)                                                  \
  ROW2(le_i64_##S, int64_t, uint8_t, x <= w, ATTR)                                                 \
  ROW2(ge_i64_##S, int64_t, uint8_t, x >= w, ATTR)                                                 \
  ROW2(eq_u8_##S, uint8_t, uint8_t, x == w, ATTR)                                                  \
  ROW2(and_u8_##S, uint8_t, uint8_t, (x != 0) & (w != 0), ATTR)                                    \
  ROW2(or_u8_##S, uint8_t, uint8_t, (x != 0) | (w != 0), ATTR)                                     \
  ROW2(xor_u8_##S, uint8_t, uint8_t, (x != 0) ^ (w != 0), ATTR)                                    \
  ROW_WHERE(where_1_##S, uint8_t, ATTR)                                                            \
  ROW_WHERE(where_4_##S, uint32_t, ATTR)                                                           \
  ROW_WHERE(where_8_##S, uint64_t, ATTR)

ROWS(base, )
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
ROWS(avx2, __attribute__((target("avx2,fma"))))
#define PAIR(f)                                                                                    \
  { f##_base, f##_avx2 }
#else
#define PAIR(f)                                                                                    \
  { f##_base, f##_base }
#endif

/* ---- the op table -------------------------------------------------------- */

typedef struct elt_row_def {
  const char *op;
  ait_dtype in, out; /* dtype of the (value) inputs and of the output */
  elt_row fn[2];     /* baseline, AVX2 */
} elt_row_def;

static const elt_row_def rows[] = {
    {"Add", AIT_FLOAT32, AIT_FLOAT32, PAIR(add_f32)},
    {"Sub", AIT_FLOAT32, AIT_FLOAT32, PAIR(sub_f32)},
    {"Mul", AIT_FLOAT32, AIT_FLOAT32, PAIR(mul_f32)},
    {"Div", AIT_FLOAT32, AIT_FLOAT32, PAIR(div_f32)},
    {"Max", AIT_FLOAT32, AIT_FLOAT32, PAIR(max_f32)},
    {"Min", AIT_FLOAT32, AIT_FLOAT32, PAIR(min_f32)},
    {"PRelu", AIT_FLOAT32, AIT_FLOAT32, PAIR(prelu_f32)},
    {"Pow", AIT_FLOAT32, AIT_FLOAT32, PAIR(pow_f32)},
    {"Add", AIT_INT32, AIT_INT32, PAIR(add_i32)},
    {"Sub", AIT_INT32, AIT_INT32, PAIR(sub_i32)},
    {"Mul", AIT_INT32, AIT_INT32, PAIR(mul_i32)},
    {"Max", AIT_INT32, AIT_INT32, PAIR(max_i32)},
    {"Min", AIT_INT32, AIT_INT32, PAIR(min_i32)},
    {"Add", AIT_INT64, AIT_INT64, PAIR(add_i64)},
    {"Sub", AIT_INT64, AIT_INT64, PAIR(sub_i64)},
    {"Mul", AIT_INT64, AIT_INT64, PAIR(mul_i64)},
    {"Max", AIT_INT64, AIT_INT64, PAIR(max_i64)},
    {"Min", AIT_INT64, AIT_INT64, PAIR(min_i64)},
    {"Equal", AIT_FLOAT32, AIT_BOOL, PAIR(eq_f32)},
    {"Less", AIT_FLOAT32, AIT_BOOL, PAIR(lt_f32)},
    {"Greater", AIT_FLOAT32, AIT_BOOL, PAIR(gt_f32)},
    {"LessOrEqual", AIT_FLOAT32, AIT_BOOL, PAIR(le_f32)},
    {"GreaterOrEqual", AIT_FLOAT32, AIT_BOOL, PAIR(ge_f32)},
    {"Equal", AIT_INT32, AIT_BOOL, PAIR(eq_i32)},
    {"Less", AIT_INT32, AIT_BOOL, PAIR(lt_i32)},
    {"Greater", AIT_INT32, AIT_BOOL, PAIR(gt_i32)},
    {"LessOrEqual", AIT_INT32, AIT_BOOL, PAIR(le_i32)},
    {"GreaterOrEqual", AIT_INT32, AIT_BOOL, PAIR(ge_i32)},
    {"Equal", AIT_INT64, AIT_BOOL, PAIR(eq_i64)},
    {"Less", AIT_INT64, AIT_BOOL, PAIR(lt_i64)},
    {"Greater", AIT_INT64, AIT_BOOL, PAIR(gt_i64)},
    {"LessOrEqual", AIT_INT64, AIT_BOOL, PAIR(le_i64)},
    {"GreaterOrEqual", AIT_INT64, AIT_BOOL, PAIR(ge_i64)},
    {"Equal", AIT_BOOL, AIT_BOOL, PAIR(eq_u8)},
    {"And", AIT_BOOL, AIT_BOOL, PAIR(and_u8)},
    {"Or", AIT_BOOL, AIT_BOOL, PAIR(or_u8)},
    {"Xor", AIT_BOOL, AIT_BOOL, PAIR(xor_u8)},
};

static elt_row find_row(const char *op, ait_dtype in, ait_dtype *out) {
  int isa = nat_isa() >= NAT_ISA_AVX2;
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    if (rows[i].in == in && rows[i].op[0] == op[0] && !strcmp(rows[i].op, op)) {
      *out = rows[i].out;
      return rows[i].fn[isa];
    }
  return NULL;
}

/* ---- the engine ---------------------------------------------------------- */

static void elt_rows_task(void *arg, int64_t t, int tid) {
  const elt_job *j = arg;
  int r = j->rank;
  int64_t n = j->dims[r - 1], s[ELT_MAX_IN];
  for (int k = 0; k < j->n_in; k++)
    s[k] = j->st[k][r - 1];
  for (int64_t row = t * j->per_task; row < (t + 1) * j->per_task && row < j->rows; row++) {
    int64_t off[ELT_MAX_IN] = {0, 0, 0}, rem = row;
    for (int i = r - 2; i >= 0; i--) {
      int64_t c = rem % j->dims[i];
      rem /= j->dims[i];
      for (int k = 0; k < j->n_in; k++)
        off[k] += c * j->st[k][i];
    }
    const void *p[ELT_MAX_IN];
    for (int k = 0; k < j->n_in; k++)
      p[k] = j->p[k] + (size_t)off[k] * j->esz[k];
    j->row(p, s, j->y + (size_t)(row * n) * j->ysz, n);
  }
}

/* Columns [t*per_task, ...) of the only row. */
static void elt_cols_task(void *arg, int64_t t, int tid) {
  const elt_job *j = arg;
  int64_t n = j->dims[j->rank - 1], lo = t * j->per_task;
  int64_t hi = lo + j->per_task < n ? lo + j->per_task : n, s[ELT_MAX_IN];
  const void *p[ELT_MAX_IN];
  for (int k = 0; k < j->n_in; k++) {
    s[k] = j->st[k][j->rank - 1];
    p[k] = j->p[k] + (size_t)(lo * s[k]) * j->esz[k];
  }
  j->row(p, s, j->y + (size_t)lo * j->ysz, hi - lo);
}

/* Merge neighbouring dims that every operand walks contiguously (or
 * broadcasts), dropping size-1 dims. */
static void collapse(elt_job *j, int rank, const int64_t *dims, int64_t st[][AIT_MAX_RANK]) {
  int r = 0;
  for (int i = 0; i < rank; i++) {
    if (dims[i] == 1) continue;
    bool merge = r > 0;
    for (int k = 0; k < j->n_in && merge; k++)
      merge = st[k][i] * dims[i] == j->st[k][r - 1];
    if (merge) {
      j->dims[r - 1] *= dims[i];
      for (int k = 0; k < j->n_in; k++)
        j->st[k][r - 1] = st[k][i];
      continue;
    }
    j->dims[r] = dims[i];
    for (int k = 0; k < j->n_in; k++)
      j->st[k][r] = st[k][i];
    r++;
  }
  if (r == 0) {
    j->dims[0] = 1;
    for (int k = 0; k < j->n_in; k++)
      j->st[k][0] = 0;
    r = 1;
  }
  j->rank = r;
}

/* Run `row` over the broadcast of in[0..n_in) into a new output of dtype
 * yt. AIT_E_UNSUPPORTED (before asking for the output) when the shapes do
 * not broadcast. */
static ait_status elt_run(nat_run *r, const ait_tensor *const *in, int n_in, elt_row row,
                          ait_dtype yt) {
  int ro = 0;
  int64_t od[AIT_MAX_RANK], st[ELT_MAX_IN][AIT_MAX_RANK];
  for (int k = 0; k < n_in; k++) {
    const ait_tensor *t = in[k];
    if (!t || t->kind != AIT_KIND_TENSOR || (t->rank > 0 && !t->data && ait_tensor_numel(t)))
      return AIT_E_UNSUPPORTED;
  }
  ro = in[0]->rank;
  memcpy(od, in[0]->dims, sizeof(int64_t) * (size_t)ro);
  for (int k = 1; k < n_in; k++)
    if (ait_shape_broadcast(ro, od, in[k]->rank, in[k]->dims, &ro, od) != AIT_OK) {
      ait_err_clear();
      return AIT_E_UNSUPPORTED;
    }
  elt_job j;
  memset(&j, 0, sizeof j);
  j.n_in = n_in;
  for (int k = 0; k < n_in; k++) {
    ait_broadcast_strides(in[k]->rank, in[k]->dims, ro, od, st[k]);
    j.p[k] = in[k]->data;
    j.esz[k] = ait_dtype_size(in[k]->dtype);
  }
  ait_tensor *Y;
  AIT_TRY(nat_output(r, 0, yt, ro, od, &Y));
  int64_t total = ait_shape_numel(ro, od);
  if (total == 0) return AIT_OK;
  collapse(&j, ro, od, st);
  j.y = Y->data;
  j.ysz = ait_dtype_size(yt);
  j.row = row;
  int64_t len = j.dims[j.rank - 1];
  j.rows = total / len;
  if (j.rows == 1) { /* one long row: split its columns */
    j.per_task = nat_chunk(r, len, 16384);
    nat_pool_run(nat_run_pool(r), (len + j.per_task - 1) / j.per_task, elt_cols_task, &j);
    return AIT_OK;
  }
  j.per_task = nat_chunk(r, j.rows, len >= 16384 ? 1 : 16384 / len);
  nat_pool_run(nat_run_pool(r), (j.rows + j.per_task - 1) / j.per_task, elt_rows_task, &j);
  return AIT_OK;
}

/* Add, Sub, Mul, Div, Pow, Max, Min, PRelu, the comparisons, And/Or/Xor:
 * two inputs of one dtype the table has a row for. */
static ait_status binary(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  if (n_in != 2 || !in[0] || !in[1] || in[0]->dtype != in[1]->dtype) return AIT_E_UNSUPPORTED;
  ait_dtype yt;
  elt_row row = find_row(n->op_type, in[0]->dtype, &yt);
  if (!row) return AIT_E_UNSUPPORTED;
  if (!strcmp(n->op_type, "PRelu")) { /* slope broadcasts to X, never X to more */
    int ro;
    int64_t od[AIT_MAX_RANK];
    if (n->opset < 7 || in[1]->rank > in[0]->rank ||
        ait_shape_broadcast(in[0]->rank, in[0]->dims, in[1]->rank, in[1]->dims, &ro, od) ||
        ro != in[0]->rank || memcmp(od, in[0]->dims, sizeof(int64_t) * (size_t)ro)) {
      ait_err_clear();
      return AIT_E_UNSUPPORTED;
    }
  }
  return elt_run(r, in, 2, row, yt);
}

ait_status nat_k_binary(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  if (n->opset < 7) return AIT_E_UNSUPPORTED; /* no numpy broadcasting before 7 */
  return binary(r, n, in, n_in);
}

ait_status nat_k_compare(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  return binary(r, n, in, n_in);
}

ait_status nat_k_logic(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  return binary(r, n, in, n_in);
}

ait_status nat_k_where(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  if (n_in != 3 || !in[0] || !in[1] || !in[2] || in[0]->dtype != AIT_BOOL ||
      in[1]->dtype != in[2]->dtype || in[1]->kind != AIT_KIND_TENSOR || in[1]->dtype == AIT_STRING)
    return AIT_E_UNSUPPORTED;
  size_t sz = ait_dtype_size(in[1]->dtype);
  bool isa = nat_isa() >= NAT_ISA_AVX2;
  static const elt_row by_size[2][3] = {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    {where_1_base, where_4_base, where_8_base},
    {where_1_avx2, where_4_avx2, where_8_avx2}
#else
    {where_1_base, where_4_base, where_8_base},
    {where_1_base, where_4_base, where_8_base}
#endif
  };
  int which = sz == 1 ? 0 : sz == 4 ? 1 : sz == 8 ? 2 : -1;
  if (which < 0) return AIT_E_UNSUPPORTED;
  return elt_run(r, in, 3, by_size[isa][which], in[1]->dtype);
}
