/* Gemm and MatMul. float32 (and float16/bfloat16 through float32) run on
 * nn_sgemm; float64 on a plain loop in double; integer types on a loop in
 * wrapping 64-bit arithmetic (results wrap to the output type as numpy's). */
#include <stdlib.h>
#include <string.h>

#include "ops/nn_impl.h"

/* A matrix operand: element (i, p) at data[i*rs + p*cs] of dtype dt. */
typedef struct mat {
  const void *data;
  int64_t rs, cs;
} mat;

/* c[M x N] (row-major, ldc) = a * b in double. */
static void gemm_f64(int64_t M, int64_t N, int64_t K, const double *a, int64_t rsa, int64_t csa,
                     const double *b, int64_t rsb, int64_t csb, double *c, int64_t ldc) {
  for (int64_t i = 0; i < M; i++) {
    double *ci = c + i * ldc;
    for (int64_t j = 0; j < N; j++)
      ci[j] = 0.0;
    for (int64_t p = 0; p < K; p++) {
      double x = a[i * rsa + p * csa];
      for (int64_t j = 0; j < N; j++)
        ci[j] += x * b[p * rsb + j * csb];
    }
  }
}

/* c = a * b over integers, wrapping modulo 2^64, stored into dtype tr. */
static void gemm_int(const ait_dtype_traits *tr, int64_t M, int64_t N, int64_t K, mat a, mat b,
                     void *c, int64_t c0) {
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      uint64_t s = 0;
      for (int64_t p = 0; p < K; p++)
        s += (uint64_t)ait_load_i64(tr, a.data, i * a.rs + p * a.cs) *
             (uint64_t)ait_load_i64(tr, b.data, p * b.rs + j * b.cs);
      ait_store_i64(tr, c, c0 + i * N + j, (int64_t)s);
    }
}

static bool is_int_dt(ait_dtype dt) {
  return dt == AIT_INT32 || dt == AIT_INT64 || dt == AIT_UINT32 || dt == AIT_UINT64;
}

static ait_status check_dtypes(const ait_tensor *A, const ait_tensor *B) {
  if (!(AIT_DT_FLOATS & AIT_DT_BIT(A->dtype)) && !is_int_dt(A->dtype))
    return ait_err(AIT_E_DTYPE, "unsupported dtype %s", ait_dtype_name(A->dtype));
  return nn_check_same_dtype(A, B, "B");
}

/* ---- MatMul ---------------------------------------------------------- */

typedef struct mm_plan {
  int64_t M, N, K, batch;
  int rb; /* rank of the broadcast batch shape */
  int64_t bdims[AIT_MAX_RANK], sa[AIT_MAX_RANK], sb[AIT_MAX_RANK]; /* strides in matrices */
} mm_plan;

static ait_status mm_setup(const ait_tensor *A, const ait_tensor *B, mm_plan *p, int *orank,
                           int64_t *odims) {
  if (A->rank < 1 || B->rank < 1)
    return ait_err(AIT_E_SHAPE, "MatMul operands must have rank >= 1");
  int ra = A->rank, rb = B->rank;
  p->M = ra == 1 ? 1 : A->dims[ra - 2];
  p->K = A->dims[ra - 1];
  int64_t kb = rb == 1 ? B->dims[0] : B->dims[rb - 2];
  p->N = rb == 1 ? 1 : B->dims[rb - 1];
  if (kb != p->K)
    return ait_err(AIT_E_SHAPE, "MatMul inner dims differ: %lld vs %lld", (long long)p->K,
                   (long long)kb);
  int na = ra > 2 ? ra - 2 : 0, nb = rb > 2 ? rb - 2 : 0;
  AIT_TRY(ait_shape_broadcast(na, A->dims, nb, B->dims, &p->rb, p->bdims));
  ait_broadcast_strides(na, A->dims, p->rb, p->bdims, p->sa);
  ait_broadcast_strides(nb, B->dims, p->rb, p->bdims, p->sb);
  p->batch = ait_shape_numel(p->rb, p->bdims);
  *orank = p->rb;
  memcpy(odims, p->bdims, (size_t)p->rb * sizeof *odims);
  if (ra > 1) odims[(*orank)++] = p->M;
  if (rb > 1) odims[(*orank)++] = p->N;
  return AIT_OK;
}

/* Matrix offsets (in matrices) of batch item q. */
static void mm_offsets(const mm_plan *p, int64_t q, int64_t *oa, int64_t *ob) {
  *oa = *ob = 0;
  for (int i = p->rb - 1; i >= 0; i--) {
    int64_t c = q % p->bdims[i];
    q /= p->bdims[i];
    *oa += c * p->sa[i], *ob += c * p->sb[i];
  }
}

static ait_status mm_f32(const mm_plan *p, const float *a, const float *b, float *c,
                         bool b_shared) {
  int64_t M = p->M, N = p->N, K = p->K;
  if (b_shared) /* B has no batch dims: one GEMM over all rows of A */
    return nn_sgemm(p->batch * M, N, K, a, K, 1, b, N, 1, c, N, false);
  for (int64_t q = 0; q < p->batch; q++) {
    int64_t oa, ob;
    mm_offsets(p, q, &oa, &ob);
    AIT_TRY(nn_sgemm(M, N, K, a + oa * M * K, K, 1, b + ob * K * N, N, 1, c + q * M * N, N, false));
  }
  return AIT_OK;
}

NN_KERNEL(nn_matmul_kernel) {
  NN_NEED_IN0;
  const ait_tensor *A = in[0], *B = n_in > 1 ? in[1] : NULL;
  if (!B) return ait_err(AIT_E_INVALID_ARG, "MatMul needs two inputs");
  AIT_TRY(check_dtypes(A, B));
  mm_plan p;
  int orank = 0;
  int64_t odims[AIT_MAX_RANK + 2];
  AIT_TRY(mm_setup(A, B, &p, &orank, odims));
  if (orank > AIT_MAX_RANK) return ait_err(AIT_E_UNSUPPORTED, "MatMul output rank %d", orank);
  AIT_TRY(nn_new(&out[0], A->dtype, orank, odims));
  int64_t M = p.M, N = p.N, K = p.K;
  if (A->dtype == AIT_FLOAT64) {
    for (int64_t q = 0; q < p.batch; q++) {
      int64_t oa, ob;
      mm_offsets(&p, q, &oa, &ob);
      gemm_f64(M, N, K, (const double *)A->data + oa * M * K, K, 1,
               (const double *)B->data + ob * K * N, N, 1, (double *)out[0]->data + q * M * N, N);
    }
    return AIT_OK;
  }
  if (is_int_dt(A->dtype)) {
    const ait_dtype_traits *tr = ait_dtype_traits_of(A->dtype);
    for (int64_t q = 0; q < p.batch; q++) {
      int64_t oa, ob;
      mm_offsets(&p, q, &oa, &ob);
      mat ma = {(const char *)A->data + oa * M * K * tr->size, K, 1};
      mat mb = {(const char *)B->data + ob * K * N * tr->size, N, 1};
      gemm_int(tr, M, N, K, ma, mb, out[0]->data, q * M * N);
    }
    return AIT_OK;
  }
  const float *a, *b;
  float *oa = NULL, *ob = NULL, *c, *oc = NULL;
  ait_status st;
  if (!(st = nn_f32_in(A, &a, &oa)) && !(st = nn_f32_in(B, &b, &ob)) &&
      !(st = nn_f32_out(out[0], &c, &oc)))
    st = mm_f32(&p, a, b, c, B->rank <= 2);
  if (st == AIT_OK) nn_f32_done(out[0], oc), oc = NULL;
  free(oa), free(ob), free(oc);
  return st;
}

/* ---- Gemm ------------------------------------------------------------ */

NN_KERNEL(nn_gemm_kernel) {
  NN_NEED_IN0;
  const ait_tensor *A = in[0], *B = n_in > 1 ? in[1] : NULL, *C = n_in > 2 ? in[2] : NULL;
  if (!B) return ait_err(AIT_E_INVALID_ARG, "Gemm needs inputs A and B");
  AIT_TRY(check_dtypes(A, B));
  if (C) AIT_TRY(nn_check_same_dtype(A, C, "C"));
  if (A->rank != 2 || B->rank != 2)
    return ait_err(AIT_E_SHAPE, "Gemm needs 2-D A and B, got ranks %d and %d", A->rank, B->rank);
  bool ta = ait_attr_int(node, "transA", 0) != 0, tb = ait_attr_int(node, "transB", 0) != 0;
  float alpha = ait_attr_float(node, "alpha", 1.0f), beta = ait_attr_float(node, "beta", 1.0f);
  int64_t M = A->dims[ta ? 1 : 0], K = A->dims[ta ? 0 : 1];
  int64_t kb = B->dims[tb ? 1 : 0], N = B->dims[tb ? 0 : 1];
  if (K != kb)
    return ait_err(AIT_E_SHAPE, "Gemm inner dims differ: %lld vs %lld", (long long)K,
                   (long long)kb);
  int64_t odims[2] = {M, N}, cs[2] = {0, 0}, bd[AIT_MAX_RANK];
  if (C) {
    int r;
    AIT_TRY(ait_shape_broadcast(2, odims, C->rank, C->dims, &r, bd));
    if (r != 2 || bd[0] != M || bd[1] != N)
      return ait_err(AIT_E_SHAPE, "C does not broadcast to [%lld, %lld]", (long long)M,
                     (long long)N);
    ait_broadcast_strides(C->rank, C->dims, 2, odims, cs);
  }
  AIT_TRY(nn_new(&out[0], A->dtype, 2, odims));
  int64_t rsa = ta ? 1 : K, csa = ta ? M : 1, rsb = tb ? 1 : N, csb = tb ? K : 1;
  if (is_int_dt(A->dtype)) {
    const ait_dtype_traits *tr = ait_dtype_traits_of(A->dtype);
    mat ma = {A->data, rsa, csa}, mb = {B->data, rsb, csb};
    gemm_int(tr, M, N, K, ma, mb, out[0]->data, 0);
    for (int64_t i = 0; i < M * N && (C || alpha != 1.0f); i++) {
      int64_t y = ait_load_i64(tr, out[0]->data, i);
      int64_t c = C ? ait_load_i64(tr, C->data, (i / N) * cs[0] + (i % N) * cs[1]) : 0;
      if (alpha == 1.0f && beta == 1.0f)
        ait_store_i64(tr, out[0]->data, i, (int64_t)((uint64_t)y + (uint64_t)c));
      else
        ait_store_f64(tr, out[0]->data, i, alpha * (double)y + beta * (double)c);
    }
    return AIT_OK;
  }
  if (A->dtype == AIT_FLOAT64) {
    double *y = out[0]->data;
    const double *c = C ? C->data : NULL;
    gemm_f64(M, N, K, A->data, rsa, csa, B->data, rsb, csb, y, N);
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++)
        y[i * N + j] = (double)alpha * y[i * N + j] +
                       (c && beta != 0.0f ? (double)beta * c[i * cs[0] + j * cs[1]] : 0.0);
    return AIT_OK;
  }
  const float *a, *b, *c = NULL;
  float *oa = NULL, *ob = NULL, *oc = NULL, *y, *oy = NULL;
  ait_status st;
  if ((st = nn_f32_in(A, &a, &oa)) || (st = nn_f32_in(B, &b, &ob)) ||
      (C && (st = nn_f32_in(C, &c, &oc))) || (st = nn_f32_out(out[0], &y, &oy)))
    goto done;
  if ((st = nn_sgemm(M, N, K, a, rsa, csa, b, rsb, csb, y, N, false))) goto done;
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      float v = y[i * N + j];
      if (alpha != 1.0f) v = alpha * v;
      if (c && beta != 0.0f)
        v += beta == 1.0f ? c[i * cs[0] + j * cs[1]] : beta * c[i * cs[0] + j * cs[1]];
      y[i * N + j] = v;
    }
  nn_f32_done(out[0], oy), oy = NULL;
done:
  free(oa), free(ob), free(oc), free(oy);
  return st;
}
