/* ReduceMax, ReduceMin, ReduceSum and ReduceMean on float32 when the
 * reduced axes form one block (size-1 dims aside): the input is then
 * [O, R, I] and the output [O, I]. I = 1 reduces contiguous rows, else
 * whole rows of I are folded into an accumulator row. Eight lanes at a time
 * (vector extensions: the NaN rule of Max/Min, "a NaN once taken is never
 * replaced", as the reference, needs selects GCC will not if-convert).
 * Sums accumulate in float32 lanes (the reference: double; rows flush into
 * a double every 512 values), so they may differ from it in the last bits. Anything else runs on
 * the reference. */
#include <math.h>
#include <string.h>

#include "backends/native/native.h"
#include "backends/native/native_elt.h"

typedef enum red_kind { R_MAX, R_MIN, R_SUM, R_MEAN } red_kind;

static const struct {
  const char *op;
  red_kind kind;
  int axes_input_since; /* opset from which axes are input 1 */
} red_ops[] = {
    {"ReduceMax", R_MAX, 18},
    {"ReduceMin", R_MIN, 18},
    {"ReduceSum", R_SUM, 13},
    {"ReduceMean", R_MEAN, 18},
};

typedef struct red_job {
  red_kind kind;
  const float *x;
  float *y;
  int64_t O, R, I, iblk, per_task;
} red_job;

#if defined(__GNUC__) || defined(__clang__)
typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));
typedef float v8f_u __attribute__((vector_size(32), aligned(4)));
#define SPLAT(x) ((v8f){(x), (x), (x), (x), (x), (x), (x), (x)})
#define VSEL(m, a, b) ((v8f)(((m) & (v8i)(a)) | (~(m) & (v8i)(b))))
#define LOADU(p) ((v8f) * (const v8f_u *)(p))
#define STOREU(p, v) (*(v8f_u *)(p) = (v8f_u)(v))

/* *a = fold(*a, *v), lane by lane (pointers: 32-byte vectors by value
 * would depend on the clone's ABI) */
static NAT_INLINE void fold8(red_kind k, v8f *a, const v8f *v) {
  switch (k) {
  case R_MAX: *a = VSEL((*v > *a) | (*v != *v), *v, *a); return;
  case R_MIN: *a = VSEL((*v < *a) | (*v != *v), *v, *a); return;
  default: *a = *a + *v; return;
  }
}
#define HAVE_V8 1
#endif

static NAT_INLINE float fold1(red_kind k, float a, float v) {
  switch (k) {
  case R_MAX: return v > a || v != v ? v : a;
  case R_MIN: return v < a || v != v ? v : a;
  default: return a + v;
  }
}

static NAT_INLINE float start(red_kind k) {
  return k == R_MAX ? -INFINITY : k == R_MIN ? INFINITY : 0.0f;
}

/* One contiguous row of R floats. Sums flush their float lanes into a
 * double every 512 values, so a long row keeps the reference's accuracy. */
static NAT_INLINE float reduce_row(red_kind k, const float *x, int64_t R) {
  float a = start(k);
  double total = 0;
  bool sum = k == R_SUM || k == R_MEAN;
  int64_t r = 0;
#ifdef HAVE_V8
  while (r + 8 <= R) {
    v8f acc = SPLAT(start(k));
    int64_t end = sum && R - r > 512 ? r + 512 : R;
    for (; r + 8 <= end; r += 8) {
      v8f v = LOADU(x + r);
      fold8(k, &acc, &v);
    }
    for (int l = 0; l < 8; l++)
      a = fold1(k, a, acc[l]);
    if (sum) total += a, a = 0.0f;
  }
#endif
  for (; r < R; r++)
    a = fold1(k, a, x[r]);
  return sum ? (float)(total + a) : a;
}

/* y[0..n) = fold over r of x[r * I + (0..n)]. */
static NAT_INLINE void reduce_cols(red_kind k, const float *x, int64_t R, int64_t I, float *y,
                                   int64_t n) {
  for (int64_t i = 0; i < n; i++)
    y[i] = start(k);
  for (int64_t r = 0; r < R; r++) {
    const float *p = x + r * I;
    int64_t i = 0;
#ifdef HAVE_V8
    for (; i + 8 <= n; i += 8) {
      v8f a = LOADU(y + i), v = LOADU(p + i);
      fold8(k, &a, &v);
      STOREU(y + i, a);
    }
#endif
    for (; i < n; i++)
      y[i] = fold1(k, y[i], p[i]);
  }
}

NAT_CLONES static void red_task(void *arg, int64_t t, int tid) {
  const red_job *j = arg;
  int64_t nb = (j->I + j->iblk - 1) / j->iblk;
  for (int64_t w = t * j->per_task; w < (t + 1) * j->per_task && w < j->O * nb; w++) {
    int64_t o = w / nb, i0 = (w % nb) * j->iblk;
    int64_t n = j->I - i0 < j->iblk ? j->I - i0 : j->iblk;
    const float *x = j->x + o * j->R * j->I + i0;
    float *y = j->y + o * j->I + i0;
    if (j->I == 1)
      y[0] = reduce_row(j->kind, x, j->R);
    else
      reduce_cols(j->kind, x, j->R, j->I, y, n);
    if (j->kind == R_MEAN)
      for (int64_t i = 0; i < n; i++)
        y[i] /= (float)j->R;
  }
}

ait_status nat_k_reduce(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  const ait_tensor *X = in[0];
  if (!X || X->kind != AIT_KIND_TENSOR || X->dtype != AIT_FLOAT32 || X->rank < 1)
    return AIT_E_UNSUPPORTED;
  int op = -1;
  for (size_t i = 0; i < sizeof red_ops / sizeof red_ops[0]; i++)
    if (!strcmp(n->op_type, red_ops[i].op)) op = (int)i;
  if (op < 0) return AIT_E_UNSUPPORTED;
  int64_t axes[AIT_MAX_RANK];
  int na = 0;
  if (n->opset >= red_ops[op].axes_input_since) {
    if (n_in > 1 && in[1] && ait_read_ints(in[1], axes, AIT_MAX_RANK, &na) != AIT_OK) {
      ait_err_clear();
      return AIT_E_UNSUPPORTED;
    }
    if (na == 0 && ait_attr_int(n, "noop_with_empty_axes", 0)) return AIT_E_UNSUPPORTED;
  } else {
    const int64_t *a = ait_attr_ints(n, "axes", &na);
    if (na > AIT_MAX_RANK) return AIT_E_UNSUPPORTED;
    if (na) memcpy(axes, a, sizeof(int64_t) * (size_t)na);
  }
  int rank = X->rank;
  bool red[AIT_MAX_RANK] = {false};
  for (int i = 0; i < na; i++) {
    int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (a < 0 || a >= rank || red[a]) return AIT_E_UNSUPPORTED; /* the reference says why */
    red[a] = true;
  }
  if (na == 0)
    for (int i = 0; i < rank; i++)
      red[i] = true;
  /* [O, R, I]: the reduced dims (other than 1s) must be one block */
  int first = -1, last = -1;
  for (int i = 0; i < rank; i++)
    if (red[i] && X->dims[i] != 1) {
      if (first < 0) first = i;
      last = i;
    }
  int64_t O = 1, R = 1, I = 1;
  for (int i = 0; i < rank; i++) {
    if (first >= 0 && i >= first && i <= last) {
      if (!red[i] && X->dims[i] != 1) return AIT_E_UNSUPPORTED;
      R *= X->dims[i];
    } else if (first < 0 || i < first) {
      O *= X->dims[i];
    } else {
      I *= X->dims[i];
    }
  }
  if (ait_tensor_numel(X) == 0) return AIT_E_UNSUPPORTED; /* empty: the reference's rules */
  bool keep = ait_attr_int(n, "keepdims", 1) != 0;
  int64_t od[AIT_MAX_RANK];
  int orank = 0;
  for (int i = 0; i < rank; i++)
    if (!red[i])
      od[orank++] = X->dims[i];
    else if (keep)
      od[orank++] = 1;
  ait_tensor *Y;
  AIT_TRY(nat_output(r, 0, AIT_FLOAT32, orank, od, &Y));
  red_job j = {(red_kind)red_ops[op].kind, X->data, Y->data, O, R, I, I == 1 ? 1 : 1024, 0};
  int64_t nb = (I + j.iblk - 1) / j.iblk, work = O * nb;
  j.per_task = nat_chunk(r, work, I == 1 ? (16384 + R - 1) / R : 1);
  nat_pool_run(nat_run_pool(r), (work + j.per_task - 1) / j.per_task, red_task, &j);
  return AIT_OK;
}
