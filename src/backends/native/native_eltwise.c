/* Elementwise float32 kernels: Add/Sub/Mul/Div with numpy broadcasting (the
 * shapes are collapsed so rows are as long as possible) and the unary
 * activations and math the models use. Rows are spread over the pool. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "backends/native/native.h"

/* ---- binary ----------------------------------------------------------- */

typedef enum bin_op { OP_ADD, OP_SUB, OP_MUL, OP_DIV } bin_op;

typedef struct bin_job {
  bin_op op;
  int rank; /* collapsed rank; dims[rank-1] is the row */
  int64_t dims[AIT_MAX_RANK];
  int64_t sa[AIT_MAX_RANK], sb[AIT_MAX_RANK];
  const float *a, *b;
  float *y;
  int64_t rows, per_task;
} bin_job;

#define ROW_LOOP(EXPR)                                                                             \
  do {                                                                                             \
    if (sa == 1 && sb == 1)                                                                        \
      for (int64_t j = 0; j < n; j++) {                                                            \
        float x = a[j], w = b[j];                                                                  \
        y[j] = (EXPR);                                                                             \
      }                                                                                            \
    else if (sa == 1 && sb == 0) {                                                                 \
      float w = b[0];                                                                              \
      for (int64_t j = 0; j < n; j++) {                                                            \
        float x = a[j];                                                                            \
        y[j] = (EXPR);                                                                             \
      }                                                                                            \
    } else if (sa == 0 && sb == 1) {                                                               \
      float x = a[0];                                                                              \
      for (int64_t j = 0; j < n; j++) {                                                            \
        float w = b[j];                                                                            \
        y[j] = (EXPR);                                                                             \
      }                                                                                            \
    } else                                                                                         \
      for (int64_t j = 0; j < n; j++) {                                                            \
        float x = a[j * sa], w = b[j * sb];                                                        \
        y[j] = (EXPR);                                                                             \
      }                                                                                            \
  } while (0)

static NAT_INLINE void bin_row(bin_op op, const float *a, int64_t sa, const float *b, int64_t sb,
                               float *y, int64_t n) {
  switch (op) {
  case OP_ADD: ROW_LOOP(x + w); break;
  case OP_SUB: ROW_LOOP(x - w); break;
  case OP_MUL: ROW_LOOP(x * w); break;
  case OP_DIV: ROW_LOOP(x / w); break;
  }
}

NAT_CLONES static void bin_task(void *arg, int64_t t, int tid) {
  const bin_job *j = arg;
  int r = j->rank;
  int64_t n = j->dims[r - 1];
  for (int64_t row = t * j->per_task; row < (t + 1) * j->per_task && row < j->rows; row++) {
    int64_t oa = 0, ob = 0, rem = row;
    for (int i = r - 2; i >= 0; i--) {
      int64_t c = rem % j->dims[i];
      rem /= j->dims[i];
      oa += c * j->sa[i], ob += c * j->sb[i];
    }
    bin_row(j->op, j->a + oa, j->sa[r - 1], j->b + ob, j->sb[r - 1], j->y + row * n, n);
  }
}

/* Columns [t*per_task, ...) of the only row. */
NAT_CLONES static void bin_cols_task(void *arg, int64_t t, int tid) {
  const bin_job *j = arg;
  int64_t n = j->dims[j->rank - 1], lo = t * j->per_task;
  int64_t hi = lo + j->per_task < n ? lo + j->per_task : n;
  int64_t sa = j->sa[j->rank - 1], sb = j->sb[j->rank - 1];
  bin_row(j->op, j->a + lo * sa, sa, j->b + lo * sb, sb, j->y + lo, hi - lo);
}

/* Merge neighbouring dims that both operands walk contiguously (or both
 * broadcast), dropping size-1 dims. */
static void collapse(bin_job *j, int rank, const int64_t *dims, const int64_t *sa,
                     const int64_t *sb) {
  int r = 0;
  for (int i = 0; i < rank; i++) {
    if (dims[i] == 1) continue;
    if (r > 0 && sa[i] * dims[i] == j->sa[r - 1] && sb[i] * dims[i] == j->sb[r - 1]) {
      j->dims[r - 1] *= dims[i];
      j->sa[r - 1] = sa[i];
      j->sb[r - 1] = sb[i];
      continue;
    }
    j->dims[r] = dims[i];
    j->sa[r] = sa[i];
    j->sb[r] = sb[i];
    r++;
  }
  if (r == 0) {
    j->dims[0] = 1;
    j->sa[0] = j->sb[0] = 0;
    r = 1;
  }
  j->rank = r;
}

ait_status nat_k_binary(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  const ait_tensor *A = in[0], *B = n_in > 1 ? in[1] : NULL;
  if (!A || !B || n->opset < 7 || A->kind != AIT_KIND_TENSOR || B->kind != AIT_KIND_TENSOR ||
      A->dtype != AIT_FLOAT32 || B->dtype != AIT_FLOAT32)
    return AIT_E_UNSUPPORTED;
  bin_job j;
  memset(&j, 0, sizeof j);
  const char *op = n->op_type;
  j.op = !strcmp(op, "Add")   ? OP_ADD
         : !strcmp(op, "Sub") ? OP_SUB
         : !strcmp(op, "Mul") ? OP_MUL
                              : OP_DIV;
  int ro;
  int64_t od[AIT_MAX_RANK], sa[AIT_MAX_RANK], sb[AIT_MAX_RANK];
  if (ait_shape_broadcast(A->rank, A->dims, B->rank, B->dims, &ro, od) != AIT_OK) {
    ait_err_clear();
    return AIT_E_UNSUPPORTED;
  }
  ait_broadcast_strides(A->rank, A->dims, ro, od, sa);
  ait_broadcast_strides(B->rank, B->dims, ro, od, sb);
  ait_tensor *Y;
  AIT_TRY(nat_output(r, 0, AIT_FLOAT32, ro, od, &Y));
  int64_t total = ait_shape_numel(ro, od);
  if (total == 0) return AIT_OK;
  collapse(&j, ro, od, sa, sb);
  j.a = A->data;
  j.b = B->data;
  j.y = Y->data;
  int64_t row = j.dims[j.rank - 1];
  j.rows = total / row;
  if (j.rows == 1) { /* one long row: split its columns */
    j.per_task = nat_chunk(r, row, 16384);
    nat_pool_run(nat_run_pool(r), (row + j.per_task - 1) / j.per_task, bin_cols_task, &j);
    return AIT_OK;
  }
  j.per_task = nat_chunk(r, j.rows, row >= 16384 ? 1 : 16384 / row);
  nat_pool_run(nat_run_pool(r), (j.rows + j.per_task - 1) / j.per_task, bin_task, &j);
  return AIT_OK;
}

/* ---- unary ----------------------------------------------------------------- */

typedef enum un_op { U_ACT, U_ERF, U_EXP, U_SQRT, U_NEG, U_GELU_TANH } un_op;

typedef struct un_job {
  un_op op;
  ait_act act;
  const float *x;
  float *y;
  int64_t n, per_task;
} un_job;

static void un_task(void *arg, int64_t t, int tid) {
  const un_job *j = arg;
  int64_t lo = t * j->per_task, hi = lo + j->per_task < j->n ? lo + j->per_task : j->n;
  const float *x = j->x + lo;
  float *y = j->y + lo;
  int64_t n = hi - lo;
  switch (j->op) {
  case U_ACT:
    if (y != x) memcpy(y, x, sizeof(float) * (size_t)n);
    nat_act_f32(&j->act, y, n);
    break;
  /* the Exp and Erf ops match the reference bit for bit (libm); the fast
   * approximations serve inside Softmax, Sigmoid and Gelu */
  case U_ERF:
    for (int64_t i = 0; i < n; i++)
      y[i] = erff(x[i]);
    break;
  case U_EXP:
    for (int64_t i = 0; i < n; i++)
      y[i] = expf(x[i]);
    break;
  case U_SQRT:
    for (int64_t i = 0; i < n; i++)
      y[i] = sqrtf(x[i]);
    break;
  case U_NEG:
    for (int64_t i = 0; i < n; i++)
      y[i] = -x[i];
    break;
  case U_GELU_TANH: nat_gelu_tanh_f32(x, y, n); break;
  }
}

/* Scalar float32 bound of Clip-11+, or the default when absent. */
static bool clip_bound(const ait_tensor *t, float def, float *v) {
  if (!t) {
    *v = def;
    return true;
  }
  if (t->dtype != AIT_FLOAT32 || t->kind != AIT_KIND_TENSOR || ait_tensor_numel(t) != 1)
    return false;
  *v = *(const float *)t->data;
  return true;
}

ait_status nat_k_unary(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  const ait_tensor *X = in[0];
  if (!X || X->kind != AIT_KIND_TENSOR || X->dtype != AIT_FLOAT32) return AIT_E_UNSUPPORTED;
  un_job j;
  memset(&j, 0, sizeof j);
  const char *op = n->op_type;
  j.op = U_ACT;
  if (!strcmp(op, "Relu")) {
    j.act.kind = AIT_ACT_RELU;
  } else if (!strcmp(op, "Sigmoid")) {
    j.act.kind = AIT_ACT_SIGMOID;
  } else if (!strcmp(op, "Tanh")) {
    j.act.kind = AIT_ACT_TANH;
  } else if (!strcmp(op, "HardSwish")) {
    j.act.kind = AIT_ACT_HARD_SWISH;
  } else if (!strcmp(op, "LeakyRelu")) {
    j.act.kind = AIT_ACT_LEAKY_RELU;
    j.act.p[0] = ait_attr_float(n, "alpha", 0.01f);
  } else if (!strcmp(op, "HardSigmoid")) {
    j.act.kind = AIT_ACT_HARD_SIGMOID;
    j.act.p[0] = ait_attr_float(n, "alpha", 0.2f);
    j.act.p[1] = ait_attr_float(n, "beta", 0.5f);
  } else if (!strcmp(op, "Clip")) {
    j.act.kind = AIT_ACT_CLIP;
    if (n->opset < 11) {
      j.act.p[0] = ait_attr_float(n, "min", -FLT_MAX);
      j.act.p[1] = ait_attr_float(n, "max", FLT_MAX);
    } else if (!clip_bound(n_in > 1 ? in[1] : NULL, -INFINITY, &j.act.p[0]) ||
               !clip_bound(n_in > 2 ? in[2] : NULL, INFINITY, &j.act.p[1])) {
      return AIT_E_UNSUPPORTED;
    }
  } else if (!strcmp(op, "Gelu")) { /* opset 20; after a product it is fused instead */
    const char *a = ait_attr_str(n, "approximate", "none");
    if (!strcmp(a, "none"))
      j.act.kind = AIT_ACT_GELU;
    else if (!strcmp(a, "tanh"))
      j.op = U_GELU_TANH;
    else
      return AIT_E_UNSUPPORTED;
  } else if (!strcmp(op, "Erf")) {
    j.op = U_ERF;
  } else if (!strcmp(op, "Exp")) {
    j.op = U_EXP;
  } else if (!strcmp(op, "Sqrt")) {
    j.op = U_SQRT;
  } else if (!strcmp(op, "Neg")) {
    j.op = U_NEG;
  } else {
    return AIT_E_UNSUPPORTED;
  }
  ait_tensor *Y;
  AIT_TRY(nat_output(r, 0, AIT_FLOAT32, X->rank, X->dims, &Y));
  j.x = X->data;
  j.y = Y->data;
  j.n = ait_tensor_numel(X);
  j.per_task = nat_chunk(r, j.n, 16384);
  nat_pool_run(nat_run_pool(r), (j.n + j.per_task - 1) / j.per_task, un_task, &j);
  return AIT_OK;
}
