/* Einsum fast path: a two-operand float32/float16/bfloat16 contraction with
 * no diagonals, no one-sided sums and no size-1 broadcasting is a batched
 * GEMM. Both operands are permuted to [batch, M, K] and [batch, K, N]
 * (skipped when already laid out so), multiplied with nn_sgemm, and the
 * [batch, M, N] result is permuted into the output's label order. */
#include <stdlib.h>
#include <string.h>

#include "ops/nn_impl.h"

/* dst (contiguous, dims) = src read with per-dim strides st. */
static void permute_copy(const float *src, int rank, const int64_t *dims, const int64_t *st,
                         float *dst) {
  int64_t n = ait_shape_numel(rank, dims);
  if (rank == 0) {
    if (n) dst[0] = src[0];
    return;
  }
  int64_t c[AIT_MAX_RANK * 2] = {0}, off = 0, inner = dims[rank - 1], s = st[rank - 1];
  for (int64_t q = 0; q < n; q += inner) {
    for (int64_t j = 0; j < inner; j++)
      dst[q + j] = src[off + j * s];
    for (int i = rank - 2; i >= 0; i--) {
      off += st[i];
      if (++c[i] < dims[i]) break;
      off -= st[i] * dims[i];
      c[i] = 0;
    }
  }
}

static bool is_contiguous(int rank, const int64_t *dims, const int64_t *st) {
  int64_t want = 1;
  for (int i = rank - 1; i >= 0; i--) {
    if (dims[i] != 1 && st[i] != want) return false;
    want *= dims[i];
  }
  return true;
}

/* Operand (or the GEMM result) laid out in the given label order: a view
 * when it already is, else a permuted copy in *owned. */
static ait_status arrange(const float *src, int nl, const int *labs, const int64_t *size,
                          const int64_t *lab_stride, const float **view, float **owned) {
  int64_t dims[AIT_MAX_RANK * 2], st[AIT_MAX_RANK * 2];
  for (int i = 0; i < nl; i++)
    dims[i] = size[labs[i]], st[i] = lab_stride[labs[i]];
  *owned = NULL;
  if (is_contiguous(nl, dims, st)) {
    *view = src;
    return AIT_OK;
  }
  int64_t n = ait_shape_numel(nl, dims);
  *owned = malloc((size_t)(n ? n : 1) * sizeof **owned);
  if (!*owned) return ait_err(AIT_E_NOMEM, "out of memory permuting an Einsum operand");
  permute_copy(src, nl, dims, st, *owned);
  *view = *owned;
  return AIT_OK;
}

ait_status nn_einsum_gemm(const ait_tensor *A, const ait_tensor *B, const int *lab_a,
                          const int *lab_b, const int *out_labs, int n_out, const int64_t *size,
                          int n_labels, ait_tensor *Y, bool *done) {
  *done = false;
  int na = A->rank, nb = B->rank;
  int cnt_a[64] = {0}, cnt_b[64] = {0}, cnt_o[64] = {0};
  if (n_labels > 64) return AIT_OK;
  int64_t sa[64] = {0}, sb[64] = {0}, str[AIT_MAX_RANK];
  ait_shape_strides(na, A->dims, str);
  for (int i = 0; i < na; i++) {
    if (A->dims[i] != size[lab_a[i]]) return AIT_OK; /* broadcast size-1 dim */
    cnt_a[lab_a[i]]++, sa[lab_a[i]] = str[i];
  }
  ait_shape_strides(nb, B->dims, str);
  for (int i = 0; i < nb; i++) {
    if (B->dims[i] != size[lab_b[i]]) return AIT_OK;
    cnt_b[lab_b[i]]++, sb[lab_b[i]] = str[i];
  }
  for (int i = 0; i < n_out; i++)
    cnt_o[out_labs[i]]++;
  int bl[64], ml[64], nl[64], kl[64], nbt = 0, nm = 0, nn = 0, nk = 0;
  for (int i = 0; i < n_out; i++) {
    int l = out_labs[i];
    if (cnt_a[l] && cnt_b[l])
      bl[nbt++] = l;
    else if (cnt_a[l])
      ml[nm++] = l;
    else
      nl[nn++] = l;
  }
  for (int l = 0; l < n_labels; l++) {
    if (cnt_a[l] > 1 || cnt_b[l] > 1) return AIT_OK; /* a diagonal */
    if (cnt_o[l]) continue;
    if (!cnt_a[l] != !cnt_b[l]) return AIT_OK; /* summed over one operand only */
    if (cnt_a[l]) kl[nk++] = l;
  }
  int64_t Bn = 1, Mn = 1, Nn = 1, Kn = 1;
  for (int i = 0; i < nbt; i++)
    Bn *= size[bl[i]];
  for (int i = 0; i < nm; i++)
    Mn *= size[ml[i]];
  for (int i = 0; i < nn; i++)
    Nn *= size[nl[i]];
  for (int i = 0; i < nk; i++)
    Kn *= size[kl[i]];
  /* label orders of the GEMM operands and result */
  int oa[64], ob[64], oc[64];
  memcpy(oa, bl, sizeof(int) * nbt), memcpy(oa + nbt, ml, sizeof(int) * nm);
  memcpy(oa + nbt + nm, kl, sizeof(int) * nk);
  memcpy(ob, bl, sizeof(int) * nbt), memcpy(ob + nbt, kl, sizeof(int) * nk);
  memcpy(ob + nbt + nk, nl, sizeof(int) * nn);
  memcpy(oc, bl, sizeof(int) * nbt), memcpy(oc + nbt, ml, sizeof(int) * nm);
  memcpy(oc + nbt + nm, nl, sizeof(int) * nn);
  int64_t sc[64] = {0}, acc = 1;
  for (int i = nbt + nm + nn - 1; i >= 0; i--)
    sc[oc[i]] = acc, acc *= size[oc[i]];
  const float *a, *b, *pa, *pb;
  float *ownA = NULL, *ownB = NULL, *tA = NULL, *tB = NULL, *c = NULL, *ownC = NULL, *y, *oy = NULL;
  ait_status st;
  if ((st = nn_f32_in(A, &a, &ownA)) || (st = nn_f32_in(B, &b, &ownB)) ||
      (st = arrange(a, nbt + nm + nk, oa, size, sa, &pa, &tA)) ||
      (st = arrange(b, nbt + nk + nn, ob, size, sb, &pb, &tB)) || (st = nn_f32_out(Y, &y, &oy)))
    goto out;
  /* the result goes straight to y when the output order is [batch, M, N] */
  int64_t so[64] = {0};
  for (int i = 0; i < n_out; i++)
    so[i] = sc[out_labs[i]];
  int64_t odims[AIT_MAX_RANK];
  for (int i = 0; i < n_out; i++)
    odims[i] = size[out_labs[i]];
  bool direct = is_contiguous(n_out, odims, so);
  c = direct ? y : (ownC = malloc((size_t)(Bn * Mn * Nn + 1) * sizeof *c));
  if (!c) {
    st = ait_err(AIT_E_NOMEM, "out of memory for an Einsum product");
    goto out;
  }
  for (int64_t q = 0; q < Bn && !st; q++)
    st = nn_sgemm(Mn, Nn, Kn, pa + q * Mn * Kn, Kn, 1, pb + q * Kn * Nn, Nn, 1, c + q * Mn * Nn, Nn,
                  false);
  if (st) goto out;
  if (!direct) permute_copy(c, n_out, odims, so, y);
  nn_f32_done(Y, oy), oy = NULL;
  *done = true;
out:
  free(ownA), free(ownB), free(tA), free(tB), free(ownC), free(oy);
  return st;
}
