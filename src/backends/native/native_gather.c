/* Data movement on native's executor: Gather, Slice, Transpose and Pad as copies
 * of contiguous runs into the arena, no index arithmetic per element.
 *
 * Gather: each index picks a block of `inner` elements (an embedding row,
 * a KV-cache row, a head); one memcpy per index and outer slice. Slice:
 * the trailing axes taken whole (and the last sliced one, at step 1) fold
 * into one contiguous run; an odometer walks the other axes, and a step on
 * the last axis copies element by element in a tight loop. Transpose: axes
 * of size 1 are dropped and axes that stay adjacent are merged (Swin's 6-D
 * window partitions become 3-D or 4-D); a permutation that keeps the last
 * axis is then row copies, any other a batch of 2-D transposes in 8 x 8
 * register tiles (AVX-512 with masked edges, AVX2 + FMA with maskload
 * edges, plain C below). Pad (constant, pads >= 0): the fill, then x's rows
 * copied into place.
 *
 * Every kernel declines (AIT_E_UNSUPPORTED, before nat_output) what it does
 * not handle: strings, out-of-range indices (the reference kernel reports
 * them), shapes it cannot read. Outputs belong to the executor (arena). */
#include <stdint.h>
#include <string.h>

#include "backends/native/native.h"
#include "backends/native/native_isa.h"
#include "ops/op.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define NAT_GATHER_X86 1
#endif

static _Atomic long long declined;

long long nat_move_declined(void) { return declined; }

/* Bytes below which a copy stays on the calling thread. */
#define MOVE_PAR_BYTES (256 * 1024)

/* Whether x is a plain tensor whose elements are bytes we may copy. */
static bool movable(const ait_tensor *x) {
  return x && x->kind == AIT_KIND_TENSOR && x->dtype != AIT_STRING && ait_elem_size(x->dtype) > 0;
}

/* memcpy for the short runs these kernels copy most (a head of 32 or 64
 * floats, a window row): 16-byte moves the compiler inlines, without the
 * call and the size dispatch of the library's memcpy, which long runs get. */
static inline void copy_run_bytes(char *y, const char *x, size_t n) {
  if (n > 512) {
    memcpy(y, x, n);
    return;
  }
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    memcpy(y + i, x + i, 16);
  if (i < n) memcpy(y + i, x + i, n - i);
}

/* ---- Gather ---------------------------------------------------------------- */

typedef struct gather_job {
  const char *x;
  char *y;
  const void *ind; /* int32 or int64, normalised already checked */
  bool i64;
  int64_t n_ind, dim, blk; /* indices, data's axis length, bytes a block */
  int64_t rows, per_task;  /* rows = outer * n_ind */
} gather_job;

static int64_t gather_index(const gather_job *j, int64_t k) {
  int64_t v = j->i64 ? ((const int64_t *)j->ind)[k] : ((const int32_t *)j->ind)[k];
  return v < 0 ? v + j->dim : v;
}

static void gather_task(void *arg, int64_t t, int tid) {
  (void)tid;
  const gather_job *j = arg;
  int64_t r0 = t * j->per_task, r1 = r0 + j->per_task < j->rows ? r0 + j->per_task : j->rows;
  int64_t a = r0 / j->n_ind, k = r0 % j->n_ind;
  size_t blk = (size_t)j->blk;
  const char *base = j->x + (size_t)(a * j->dim) * blk;
  char *y = j->y + (size_t)r0 * blk;
  for (int64_t row = r0; row < r1; row++, y += blk) {
    copy_run_bytes(y, base + (size_t)gather_index(j, k) * blk, blk);
    if (++k == j->n_ind) k = 0, base += (size_t)j->dim * blk;
  }
}

static ait_status k_gather(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  const ait_tensor *x = in[0], *ind = n_in > 1 ? in[1] : NULL;
  if (!movable(x) || x->rank < 1 || !ind || ind->kind != AIT_KIND_TENSOR ||
      (ind->dtype != AIT_INT64 && ind->dtype != AIT_INT32))
    return AIT_E_UNSUPPORTED;
  int64_t ax = ait_attr_int(n, "axis", 0);
  if (ax < 0) ax += x->rank;
  if (ax < 0 || ax >= x->rank) return AIT_E_UNSUPPORTED;
  int axis = (int)ax, ro = x->rank - 1 + ind->rank;
  if (ro > AIT_MAX_RANK) return AIT_E_UNSUPPORTED;
  gather_job j = {.x = x->data, .ind = ind->data, .i64 = ind->dtype == AIT_INT64};
  j.n_ind = ait_tensor_numel(ind);
  j.dim = x->dims[axis];
  for (int64_t k = 0; k < j.n_ind; k++) { /* out of range: the reference says so */
    int64_t v = j.i64 ? ((const int64_t *)ind->data)[k] : ((const int32_t *)ind->data)[k];
    if (v < -j.dim || v >= j.dim) return AIT_E_UNSUPPORTED;
  }
  int64_t dims[AIT_MAX_RANK];
  memcpy(dims, x->dims, sizeof(int64_t) * (size_t)axis);
  memcpy(dims + axis, ind->dims, sizeof(int64_t) * (size_t)ind->rank);
  memcpy(dims + axis + ind->rank, x->dims + axis + 1,
         sizeof(int64_t) * (size_t)(x->rank - axis - 1));
  ait_tensor *y;
  AIT_TRY(nat_output(r, 0, x->dtype, ro, dims, &y));
  int64_t outer = ait_shape_numel(axis, x->dims);
  j.blk =
      ait_shape_numel(x->rank - axis - 1, x->dims + axis + 1) * (int64_t)ait_elem_size(x->dtype);
  j.rows = outer * j.n_ind;
  if (j.rows == 0 || j.blk == 0) return AIT_OK;
  j.y = y->data;
  if (j.rows * j.blk < MOVE_PAR_BYTES) {
    j.per_task = j.rows;
    gather_task(&j, 0, 0);
    return AIT_OK;
  }
  j.per_task = nat_chunk(r, j.rows, 65536 / j.blk + 1);
  nat_pool_run(nat_run_pool(r), (j.rows + j.per_task - 1) / j.per_task, gather_task, &j);
  return AIT_OK;
}

/* ---- strided copies (Slice) -------------------------------------------------- */

/* y = x viewed with dims d[rank] and byte strides s[rank] (the last may be
 * anything), row-major into y; runs of `run` bytes are contiguous in x
 * along the last axis when s[rank-1] == esz. */
typedef struct copy_job {
  const char *x;
  char *y;
  int rank; /* of the outer odometer: axes 0..rank-1 */
  int64_t d[AIT_MAX_RANK], s[AIT_MAX_RANK];
  int64_t n, step, esz; /* the inner axis: n elements, step bytes apart */
  int64_t rows, per_task;
} copy_job;

static void copy_inner(char *y, const char *x, const copy_job *j) {
  if (j->step == j->esz) {
    copy_run_bytes(y, x, (size_t)(j->n * j->esz));
    return;
  }
  switch (j->esz) { /* a step on the last axis: one element at a time */
  case 4:
    for (int64_t q = 0; q < j->n; q++)
      memcpy(y + 4 * q, x + q * j->step, 4);
    break;
  case 8:
    for (int64_t q = 0; q < j->n; q++)
      memcpy(y + 8 * q, x + q * j->step, 8);
    break;
  case 2:
    for (int64_t q = 0; q < j->n; q++)
      memcpy(y + 2 * q, x + q * j->step, 2);
    break;
  default:
    for (int64_t q = 0; q < j->n; q++)
      memcpy(y + j->esz * q, x + q * j->step, (size_t)j->esz);
  }
}

static void copy_task(void *arg, int64_t t, int tid) {
  (void)tid;
  const copy_job *j = arg;
  int64_t r0 = t * j->per_task, r1 = r0 + j->per_task < j->rows ? r0 + j->per_task : j->rows;
  int64_t idx[AIT_MAX_RANK] = {0}, off = 0, rem = r0;
  for (int i = j->rank - 1; i >= 0; i--) { /* once per task, then the odometer */
    idx[i] = rem % j->d[i];
    rem /= j->d[i];
    off += idx[i] * j->s[i];
  }
  size_t rb = (size_t)(j->n * j->esz);
  char *y = j->y + (size_t)r0 * rb;
  for (int64_t row = r0; row < r1; row++, y += rb) {
    copy_inner(y, j->x + off, j);
    for (int i = j->rank - 1; i >= 0; i--) {
      off += j->s[i];
      if (++idx[i] < j->d[i]) break;
      off -= idx[i] * j->s[i];
      idx[i] = 0;
    }
  }
}

static void copy_run(nat_run *r, copy_job *j) {
  j->rows = ait_shape_numel(j->rank, j->d);
  int64_t rb = j->n * j->esz;
  if (j->rows == 0 || rb == 0) return;
  if (j->rows * rb < MOVE_PAR_BYTES) {
    j->per_task = j->rows;
    copy_task(j, 0, 0);
    return;
  }
  j->per_task = nat_chunk(r, j->rows, 65536 / rb + 1);
  nat_pool_run(nat_run_pool(r), (j->rows + j->per_task - 1) / j->per_task, copy_task, j);
}

/* start, count, step of one axis of length d, ONNX's clamping. */
static void slice_range(int64_t start, int64_t end, int64_t step, int64_t d, int64_t *first,
                        int64_t *count) {
  if (step > d) step = d > 0 ? d : 1; /* at most one element: no overflow below */
  if (step < -d) step = d > 0 ? -d : -1;
  if (start < 0) start += d;
  if (end < 0) end += d;
  if (step > 0) {
    start = start < 0 ? 0 : start > d ? d : start;
    end = end < 0 ? 0 : end > d ? d : end;
    *count = end > start ? (end - start + step - 1) / step : 0;
  } else {
    start = start < 0 ? 0 : start > d - 1 ? d - 1 : start;
    end = end < -1 ? -1 : end > d - 1 ? d - 1 : end;
    *count = start > end ? (start - end + (-step) - 1) / (-step) : 0;
  }
  *first = start;
}

/* Slice-10 and later: starts, ends, axes, steps as inputs. */
static ait_status slice_args(const ait_node *n, const ait_tensor *const *in, int n_in, int rank,
                             int64_t *first, int64_t *count, int64_t *step) {
  if (n->opset < 10 || n_in < 3 || !in[1] || !in[2]) return AIT_E_UNSUPPORTED;
  int64_t st[AIT_MAX_RANK], en[AIT_MAX_RANK], ax[AIT_MAX_RANK], sp[AIT_MAX_RANK];
  int ns = 0, ne = 0, na = 0, np = 0;
  if (ait_read_ints(in[1], st, AIT_MAX_RANK, &ns) != AIT_OK ||
      ait_read_ints(in[2], en, AIT_MAX_RANK, &ne) != AIT_OK || ns != ne)
    return AIT_E_UNSUPPORTED;
  if (n_in > 3 && in[3] && (ait_read_ints(in[3], ax, AIT_MAX_RANK, &na) != AIT_OK || na != ns))
    return AIT_E_UNSUPPORTED;
  if (n_in > 4 && in[4] && (ait_read_ints(in[4], sp, AIT_MAX_RANK, &np) != AIT_OK || np != ns))
    return AIT_E_UNSUPPORTED;
  bool seen[AIT_MAX_RANK] = {false};
  for (int i = 0; i < rank; i++)
    first[i] = 0, step[i] = 1;
  for (int i = 0; i < ns; i++) {
    int64_t a = na ? ax[i] : i, s = np ? sp[i] : 1;
    if (a < 0) a += rank;
    if (a < 0 || a >= rank || seen[a] || s == 0) return AIT_E_UNSUPPORTED;
    seen[a] = true;
    slice_range(st[i], en[i], s, count[a], &first[a], &count[a]);
    step[a] = s;
  }
  return AIT_OK;
}

static ait_status k_slice(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  const ait_tensor *x = in[0];
  if (!movable(x) || x->rank < 1) return AIT_E_UNSUPPORTED;
  int rank = x->rank;
  int64_t first[AIT_MAX_RANK], count[AIT_MAX_RANK], step[AIT_MAX_RANK], st[AIT_MAX_RANK];
  memcpy(count, x->dims, sizeof(int64_t) * (size_t)rank);
  if (slice_args(n, in, n_in, rank, first, count, step) != AIT_OK) {
    ait_err_clear();
    return AIT_E_UNSUPPORTED;
  }
  ait_tensor *y;
  AIT_TRY(nat_output(r, 0, x->dtype, rank, count, &y));
  int64_t esz = (int64_t)ait_elem_size(x->dtype), off = 0;
  ait_shape_strides(rank, x->dims, st);
  for (int i = 0; i < rank; i++)
    if (count[i] > 0) off += first[i] * st[i] * esz;
  /* the trailing axes taken whole fold into one contiguous run of `run`
   * elements; axis `last` before them is where the slicing starts */
  int last = rank - 1;
  int64_t run = 1;
  while (last > 0 && count[last] == x->dims[last] && step[last] == 1)
    run *= count[last--];
  copy_job j = {.x = (const char *)x->data + off, .y = y->data, .esz = esz, .step = esz};
  if (step[last] == 1 || count[last] <= 1) { /* rows of count[last] * run */
    j.n = count[last] * run;
    j.rank = last;
  } else if (run > 1) { /* axis `last` stepped: count[last] runs of `run` */
    j.n = run;
    j.rank = last + 1;
  } else { /* a step on the very last axis: element by element */
    j.n = count[last];
    j.step = step[last] * esz;
    j.rank = last;
  }
  for (int i = 0; i < j.rank; i++)
    j.d[i] = count[i], j.s[i] = step[i] * st[i] * esz;
  copy_run(r, &j);
  return AIT_OK;
}

/* ---- Transpose ---------------------------------------------------------------- */

/* perm[] over dims[] with size-1 axes dropped and axes adjacent in both the
 * input and the output merged: *rank, dims (input order) and perm rewritten
 * in place. */
static void coalesce(int *rank, int64_t *dims, int64_t *perm) {
  int r = *rank, map[AIT_MAX_RANK], k = 0;
  int64_t d[AIT_MAX_RANK] = {0}, p[AIT_MAX_RANK] = {0};
  for (int i = 0; i < r; i++)
    map[i] = dims[i] == 1 ? -1 : k++;
  int m = 0;
  for (int i = 0; i < r; i++)
    if (map[perm[i]] >= 0) p[m++] = map[perm[i]];
  for (int i = 0, q = 0; i < r; i++)
    if (map[i] >= 0) d[q++] = dims[i];
  /* groups of output axes whose input axes follow each other */
  int64_t gd[AIT_MAX_RANK];
  int first_in[AIT_MAX_RANK], ng = 0;
  for (int i = 0; i < m; i++) {
    if (i > 0 && p[i] == p[i - 1] + 1) {
      gd[ng - 1] *= d[p[i]];
    } else {
      gd[ng] = d[p[i]];
      first_in[ng++] = (int)p[i];
    }
  }
  /* the groups in input order are the new input axes */
  int order[AIT_MAX_RANK], rank_of[AIT_MAX_RANK], no = 0;
  for (int i = 0; i < m; i++)
    for (int g = 0; g < ng; g++)
      if (first_in[g] == i) order[no++] = g;
  for (int q = 0; q < ng; q++)
    rank_of[order[q]] = q;
  for (int q = 0; q < ng; q++)
    dims[q] = gd[order[q]];
  for (int g = 0; g < ng; g++) /* output axis g is group g */
    perm[g] = rank_of[g];
  *rank = ng;
}

/* y[a * ldy + b] = x[b * ldx + a] for a < na, b < nb: 4-byte elements. */
static void tile_c(const uint32_t *x, int64_t ldx, uint32_t *y, int64_t ldy, int64_t na,
                   int64_t nb) {
  for (int64_t a = 0; a < na; a++)
    for (int64_t b = 0; b < nb; b++)
      y[a * ldy + b] = x[b * ldx + a];
}

#ifdef NAT_GATHER_X86
#define TR8_BODY(LOAD, STORE)                                                                      \
  do {                                                                                             \
    __m256 r0 = LOAD(0), r1 = LOAD(1), r2 = LOAD(2), r3 = LOAD(3);                                 \
    __m256 r4 = LOAD(4), r5 = LOAD(5), r6 = LOAD(6), r7 = LOAD(7);                                 \
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);                       \
    __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);                       \
    __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);                       \
    __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);                       \
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);             \
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);             \
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);             \
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);             \
    STORE(0, _mm256_permute2f128_ps(u0, u4, 0x20));                                                \
    STORE(1, _mm256_permute2f128_ps(u1, u5, 0x20));                                                \
    STORE(2, _mm256_permute2f128_ps(u2, u6, 0x20));                                                \
    STORE(3, _mm256_permute2f128_ps(u3, u7, 0x20));                                                \
    STORE(4, _mm256_permute2f128_ps(u0, u4, 0x31));                                                \
    STORE(5, _mm256_permute2f128_ps(u1, u5, 0x31));                                                \
    STORE(6, _mm256_permute2f128_ps(u2, u6, 0x31));                                                \
    STORE(7, _mm256_permute2f128_ps(u3, u7, 0x31));                                                \
  } while (0)

/* A [nb][na] block of x (rows ldx apart) into [na][nb] of y, in 8 x 8
 * register tiles; edges through masks (AVX-512VL) with the rows past the
 * block zero and never stored. */
__attribute__((target("avx512f,avx512vl"))) static void
tile512(const float *x, int64_t ldx, float *y, int64_t ldy, int64_t na, int64_t nb) {
  for (int64_t b = 0; b < nb; b += 8)
    for (int64_t a = 0; a < na; a += 8) {
      const float *xs = x + b * ldx + a;
      float *ys = y + a * ldy + b;
      if (a + 8 <= na && b + 8 <= nb) {
#define L512(k) _mm256_loadu_ps(xs + (k)*ldx)
#define S512(k, v) _mm256_storeu_ps(ys + (k)*ldy, v)
        TR8_BODY(L512, S512);
#undef L512
#undef S512
      } else {
        int64_t ea = na - a < 8 ? na - a : 8, eb = nb - b < 8 ? nb - b : 8;
        __mmask8 ma = (__mmask8)((1u << ea) - 1), mb = (__mmask8)((1u << eb) - 1);
#define LM512(k) ((k) < eb ? _mm256_maskz_loadu_ps(ma, xs + (k)*ldx) : _mm256_setzero_ps())
#define SM512(k, v)                                                                                \
  do {                                                                                             \
    if ((k) < ea) _mm256_mask_storeu_ps(ys + (k)*ldy, mb, v);                                      \
  } while (0)
        TR8_BODY(LM512, SM512);
#undef LM512
#undef SM512
      }
    }
}

static inline __attribute__((always_inline, target("avx2"))) __m256i tail8(int64_t n) {
  int32_t k = n >= 8 ? 8 : n <= 0 ? 0 : (int32_t)n;
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* tile512's tiles on AVX2 (maskload/maskstore at the edges). */
__attribute__((target("avx2,fma"))) static void tile256(const float *x, int64_t ldx, float *y,
                                                        int64_t ldy, int64_t na, int64_t nb) {
  for (int64_t b = 0; b < nb; b += 8)
    for (int64_t a = 0; a < na; a += 8) {
      const float *xs = x + b * ldx + a;
      float *ys = y + a * ldy + b;
      if (a + 8 <= na && b + 8 <= nb) {
#define L256(k) _mm256_loadu_ps(xs + (k)*ldx)
#define S256(k, v) _mm256_storeu_ps(ys + (k)*ldy, v)
        TR8_BODY(L256, S256);
#undef L256
#undef S256
      } else {
        int64_t ea = na - a < 8 ? na - a : 8, eb = nb - b < 8 ? nb - b : 8;
        __m256i ma = tail8(ea), mb = tail8(eb);
#define LM256(k) ((k) < eb ? _mm256_maskload_ps(xs + (k)*ldx, ma) : _mm256_setzero_ps())
#define SM256(k, v)                                                                                \
  do {                                                                                             \
    if ((k) < ea) _mm256_maskstore_ps(ys + (k)*ldy, mb, v);                                        \
  } while (0)
        TR8_BODY(LM256, SM256);
#undef LM256
#undef SM256
      }
    }
}
#endif

/* Batches of 2-D transposes: for every index of the outer axes (d, s: byte
 * strides in x, o: in y), y[a * ldy + b] = x[b * ldx + a], a < A, b < B;
 * task t is one batch and a band of TR_BAND values of a. */
#define TR_BAND 64

typedef struct tr_job {
  const char *x;
  char *y;
  int rank;
  int64_t d[AIT_MAX_RANK], s[AIT_MAX_RANK], o[AIT_MAX_RANK];
  int64_t A, B, ldx, ldy, nband, esz;
  int isa;
} tr_job;

static void tr_task(void *arg, int64_t t, int tid) {
  (void)tid;
  const tr_job *j = arg;
  int64_t batch = t / j->nband, a0 = (t % j->nband) * TR_BAND;
  int64_t na = j->A - a0 < TR_BAND ? j->A - a0 : TR_BAND;
  int64_t xo = 0, yo = 0, rem = batch;
  for (int i = j->rank - 1; i >= 0; i--) {
    int64_t q = rem % j->d[i];
    rem /= j->d[i];
    xo += q * j->s[i];
    yo += q * j->o[i];
  }
  const char *x = j->x + xo + a0 * j->esz;
  char *y = j->y + yo + a0 * j->ldy * j->esz;
  if (j->esz == 4) {
#ifdef NAT_GATHER_X86
    if (j->isa >= NAT_ISA_AVX512) {
      tile512((const float *)x, j->ldx, (float *)y, j->ldy, na, j->B);
      return;
    }
    if (j->isa >= NAT_ISA_AVX2) {
      tile256((const float *)x, j->ldx, (float *)y, j->ldy, na, j->B);
      return;
    }
#endif
    for (int64_t b = 0; b < j->B; b += 32) /* blocks that stay in L1 */
      for (int64_t a = 0; a < na; a += 32)
        tile_c((const uint32_t *)x + b * j->ldx + a, j->ldx, (uint32_t *)y + a * j->ldy + b, j->ldy,
               na - a < 32 ? na - a : 32, j->B - b < 32 ? j->B - b : 32);
    return;
  }
  size_t e = (size_t)j->esz;
  for (int64_t a = 0; a < na; a++)
    for (int64_t b = 0; b < j->B; b++)
      memcpy(y + (size_t)(a * j->ldy + b) * e, x + (size_t)(b * j->ldx + a) * e, e);
}

static ait_status k_transpose(nat_run *r, const ait_node *n, const ait_tensor *const *in,
                              int n_in) {
  const ait_tensor *x = in[0];
  if (!movable(x) || x->rank < 1) return AIT_E_UNSUPPORTED;
  int rank = x->rank, np = 0;
  const int64_t *pa = ait_attr_ints(n, "perm", &np);
  if (pa && np != rank) return AIT_E_UNSUPPORTED;
  int64_t perm[AIT_MAX_RANK], dims[AIT_MAX_RANK], od[AIT_MAX_RANK];
  bool seen[AIT_MAX_RANK] = {false};
  for (int i = 0; i < rank; i++) {
    int64_t p = pa ? pa[i] : rank - 1 - i;
    if (p < 0 || p >= rank || seen[p]) return AIT_E_UNSUPPORTED;
    seen[p] = true;
    perm[i] = p;
    od[i] = x->dims[p];
  }
  ait_tensor *y;
  AIT_TRY(nat_output(r, 0, x->dtype, rank, od, &y));
  int64_t total = ait_tensor_numel(x), esz = (int64_t)ait_elem_size(x->dtype);
  if (total == 0) return AIT_OK;
  memcpy(dims, x->dims, sizeof(int64_t) * (size_t)rank);
  coalesce(&rank, dims, perm);
  if (rank <= 1) { /* the same order of elements */
    memcpy(y->data, x->data, (size_t)(total * esz));
    return AIT_OK;
  }
  int64_t st[AIT_MAX_RANK];
  ait_shape_strides(rank, dims, st);
  if (perm[rank - 1] == rank - 1) { /* the last axis stays: row copies */
    copy_job j = {.x = x->data, .y = y->data, .esz = esz, .rank = rank - 1};
    j.n = dims[rank - 1], j.step = esz;
    for (int i = 0; i < rank - 1; i++)
      j.d[i] = dims[perm[i]], j.s[i] = st[perm[i]] * esz;
    copy_run(r, &j);
    return AIT_OK;
  }
  /* output axis L = rank-1 reads input axis perm[L] (stride ldx); the
   * input's last axis is output axis q (stride ldy in y) */
  int64_t ost[AIT_MAX_RANK], odc[AIT_MAX_RANK];
  for (int i = 0; i < rank; i++)
    odc[i] = dims[perm[i]];
  ait_shape_strides(rank, odc, ost);
  int q = 0;
  while (perm[q] != rank - 1)
    q++;
  tr_job j = {.x = x->data, .y = y->data, .esz = esz, .isa = (int)nat_isa()};
  j.A = dims[rank - 1], j.B = odc[rank - 1];
  j.ldx = st[perm[rank - 1]], j.ldy = ost[q];
  for (int i = 0; i < rank - 1; i++) {
    if (i == q) continue;
    j.d[j.rank] = odc[i];
    j.s[j.rank] = st[perm[i]] * esz;
    j.o[j.rank++] = ost[i] * esz;
  }
  j.nband = (j.A + TR_BAND - 1) / TR_BAND;
  int64_t tasks = ait_shape_numel(j.rank, j.d) * j.nband;
  if (total * esz < MOVE_PAR_BYTES) {
    for (int64_t t = 0; t < tasks; t++)
      tr_task(&j, t, 0);
    return AIT_OK;
  }
  nat_pool_run(nat_run_pool(r), tasks, tr_task, &j);
  return AIT_OK;
}

/* ---- Pad (constant) ------------------------------------------------------------ */

/* Pad-11+ in mode constant with pads >= 0: y filled with the constant (one
 * memset where its bytes are all zero), then x's rows of d[last] elements
 * copied to their places, an odometer over x's other axes. */
typedef struct pad_job {
  const char *x;
  char *y;
  int rank;                                 /* x's outer axes */
  int64_t d[AIT_MAX_RANK], o[AIT_MAX_RANK]; /* their sizes, their byte strides in y */
  int64_t rb, rows, per_task;               /* bytes a row */
} pad_job;

static void pad_task(void *arg, int64_t t, int tid) {
  (void)tid;
  const pad_job *j = arg;
  int64_t r0 = t * j->per_task, r1 = r0 + j->per_task < j->rows ? r0 + j->per_task : j->rows;
  int64_t idx[AIT_MAX_RANK] = {0}, off = 0, rem = r0;
  for (int i = j->rank - 1; i >= 0; i--) {
    idx[i] = rem % j->d[i];
    rem /= j->d[i];
    off += idx[i] * j->o[i];
  }
  const char *x = j->x + (size_t)(r0 * j->rb);
  for (int64_t row = r0; row < r1; row++, x += j->rb) {
    copy_run_bytes(j->y + off, x, (size_t)j->rb);
    for (int i = j->rank - 1; i >= 0; i--) {
      off += j->o[i];
      if (++idx[i] < j->d[i]) break;
      off -= idx[i] * j->o[i];
      idx[i] = 0;
    }
  }
}

static ait_status k_pad(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  const ait_tensor *x = in[0];
  if (!movable(x) || x->rank < 1 || n->opset < 11 || n_in < 2 || !in[1] ||
      strcmp(ait_attr_str(n, "mode", "constant"), "constant"))
    return AIT_E_UNSUPPORTED;
  const ait_tensor *cv = n_in > 2 ? in[2] : NULL, *axt = n_in > 3 ? in[3] : NULL;
  int rank = x->rank, np = 0, na = rank;
  int64_t pads[2 * AIT_MAX_RANK], axes[AIT_MAX_RANK], b[AIT_MAX_RANK] = {0}, e[AIT_MAX_RANK] = {0};
  if (ait_read_ints(in[1], pads, 2 * AIT_MAX_RANK, &np) != AIT_OK ||
      (axt && ait_read_ints(axt, axes, AIT_MAX_RANK, &na) != AIT_OK) || np != 2 * na ||
      (cv && ait_tensor_numel(cv) > 0 && cv->dtype != x->dtype)) {
    ait_err_clear();
    return AIT_E_UNSUPPORTED;
  }
  bool seen[AIT_MAX_RANK] = {false};
  for (int i = 0; i < na; i++) {
    int64_t a = axt ? axes[i] : i;
    if (a < 0) a += rank;
    if (a < 0 || a >= rank || seen[a] || pads[i] < 0 || pads[na + i] < 0 ||
        pads[i] > ((int64_t)1 << 40) || pads[na + i] > ((int64_t)1 << 40))
      return AIT_E_UNSUPPORTED; /* crops and odd pads: the reference */
    seen[a] = true;
    b[a] = pads[i], e[a] = pads[na + i];
  }
  int64_t od[AIT_MAX_RANK], ost[AIT_MAX_RANK];
  int64_t numel = 1;
  for (int i = 0; i < rank; i++) {
    od[i] = x->dims[i] + b[i] + e[i];
    if (__builtin_mul_overflow(numel, od[i], &numel)) return AIT_E_UNSUPPORTED;
  }
  ait_tensor *y;
  AIT_TRY(nat_output(r, 0, x->dtype, rank, od, &y));
  int64_t esz = (int64_t)ait_elem_size(x->dtype), total = ait_tensor_numel(y);
  if (total == 0) return AIT_OK;
  unsigned char c[16] = {0};
  if (cv && ait_tensor_numel(cv) > 0) memcpy(c, cv->data, (size_t)esz);
  bool zero = true;
  for (int64_t k = 0; k < esz; k++)
    zero = zero && c[k] == 0;
  bool padded = false;
  for (int i = 0; i < rank; i++)
    padded = padded || b[i] || e[i];
  if (zero && padded)
    memset(y->data, 0, (size_t)(total * esz));
  else if (padded)
    for (int64_t k = 0; k < total; k++)
      memcpy((char *)y->data + k * esz, c, (size_t)esz);
  if (ait_tensor_numel(x) == 0) return AIT_OK;
  ait_shape_strides(rank, od, ost);
  pad_job j = {.x = x->data, .rank = rank - 1, .rb = x->dims[rank - 1] * esz};
  int64_t off = 0;
  for (int i = 0; i < rank; i++)
    off += b[i] * ost[i] * esz;
  j.y = (char *)y->data + off;
  for (int i = 0; i < rank - 1; i++)
    j.d[i] = x->dims[i], j.o[i] = ost[i] * esz;
  j.rows = ait_shape_numel(rank - 1, x->dims);
  if (j.rows * j.rb < MOVE_PAR_BYTES) {
    j.per_task = j.rows;
    pad_task(&j, 0, 0);
    return AIT_OK;
  }
  j.per_task = nat_chunk(r, j.rows, 65536 / j.rb + 1);
  nat_pool_run(nat_run_pool(r), (j.rows + j.per_task - 1) / j.per_task, pad_task, &j);
  return AIT_OK;
}

/* ---- entries: what a kernel hands back to the reference is counted ---------- */

#define MOVE_ENTRY(NAME)                                                                           \
  ait_status nat_k_##NAME(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {  \
    ait_status st = k_##NAME(r, n, in, n_in);                                                      \
    if (st == AIT_E_UNSUPPORTED) declined++;                                                       \
    return st;                                                                                     \
  }

MOVE_ENTRY(gather)
MOVE_ENTRY(slice)
MOVE_ENTRY(transpose)
MOVE_ENTRY(pad)
