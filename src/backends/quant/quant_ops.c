/* The quantized ops: MatMul, Gemm and Conv (and native's fused forms of
 * them) with their weight replaced by a quantized one, as kernels of native's
 * executor: outputs come from its arena, products run on its pool, and a
 * fused node's residual and activation are applied to each finished block
 * while it is in cache. Each reduces to y = x * w^T (qnt_matmul): MatMul and Gemm
 * directly, Conv per image and group on the im2row matrix (one row per
 * output position), whose result is transposed back into NCHW. The
 * geometry (pads, strides, dilations, auto_pad) comes from the reference
 * ops' own helper, so it matches eager exactly. Conv weights are quantized
 * with the reduction axis in (kernel offset, channel) order, so that the
 * im2row rows are built from a channel-last copy of the image with one
 * contiguous copy per kernel offset. */
#include <stdlib.h>
#include <string.h>

#include "backends/quant/quant.h"
#include "core/error.h"
#include "ops/fused_impl.h"
#include "ops/nn_impl.h"

static ait_status need_f32(const ait_tensor *t, const char *what) {
  if (!t || t->kind != AIT_KIND_TENSOR)
    return ait_err(AIT_E_INVALID_ARG, "input %s is required", what);
  if (t->dtype != AIT_FLOAT32)
    return ait_err(AIT_E_DTYPE, "input %s is %s; quantized ops take float32", what,
                   ait_dtype_name(t->dtype));
  return AIT_OK;
}

/* dst[c][r] = src[r][c] for an R x C matrix, in cache-sized blocks. */
static void transpose(const qnt_state *s, const float *src, int64_t R, int64_t C, int64_t lds,
                      float *dst, int64_t ldd) {
  enum { B = 32 };
  if (s->cpu.avx512) {
    qnt_x86_transpose(src, R, C, lds, dst, ldd);
    return;
  }
  for (int64_t r0 = 0; r0 < R; r0 += B)
    for (int64_t c0 = 0; c0 < C; c0 += B) {
      int64_t r1 = r0 + B < R ? r0 + B : R, c1 = c0 + B < C ? c0 + B : C;
      for (int64_t c = c0; c < c1; c++)
        for (int64_t r = r0; r < r1; r++)
          dst[c * ldd + r] = src[r * lds + c];
    }
}

/* y (shape rank/dims) += Z broadcast to it, then the activation: the
 * general path for addends that are not laid out like y. */
static ait_status post_generic(const ait_tensor *Z, const ait_act *act, float *y, int rank,
                               const int64_t *dims) {
  int64_t n = ait_shape_numel(rank, dims);
  if (Z) {
    AIT_TRY(need_f32(Z, "Z"));
    int64_t st[AIT_MAX_RANK], bd[AIT_MAX_RANK], idx[AIT_MAX_RANK] = {0};
    int rk;
    if (Z->rank > rank || ait_shape_broadcast(rank, dims, Z->rank, Z->dims, &rk, bd) != AIT_OK ||
        rk != rank || memcmp(bd, dims, sizeof(int64_t) * (size_t)rank))
      return ait_err(AIT_E_SHAPE, "the residual input does not broadcast to the output");
    ait_broadcast_strides(Z->rank, Z->dims, rank, dims, st);
    const float *z = Z->data;
    for (int64_t e = 0; e < n; e++) {
      int64_t off = 0;
      for (int d = 0; d < rank; d++)
        off += idx[d] * st[d];
      y[e] += z[off];
      for (int d = rank - 1; d >= 0; d--) {
        if (++idx[d] < dims[d]) break;
        idx[d] = 0;
      }
    }
  }
  if (act->kind != AIT_ACT_NONE) nat_act_f32(act, y, n);
  return AIT_OK;
}

/* Whether Z has y's shape exactly (the usual residual: read in place). */
static bool same_shape(const ait_tensor *Z, int rank, const int64_t *dims) {
  return Z->kind == AIT_KIND_TENSOR && Z->dtype == AIT_FLOAT32 && Z->rank == rank &&
         !memcmp(Z->dims, dims, sizeof(int64_t) * (size_t)rank);
}

/* Whether Z is one row of N floats broadcast over the others (shape
 * [1, .., 1, N], rank <= the output's): added per column in the tiles'
 * epilogue. nn.MultiheadAttention's sliced in-projection bias arrives as
 * such a residual; through the general broadcast loop it cost 4% of
 * nn.Transformer's int8dq run. */
static bool row_vector(const ait_tensor *Z, int rank, int64_t N) {
  if (Z->kind != AIT_KIND_TENSOR || Z->dtype != AIT_FLOAT32 || Z->rank < 1 || Z->rank > rank ||
      Z->dims[Z->rank - 1] != N)
    return false;
  for (int d = 0; d + 1 < Z->rank; d++)
    if (Z->dims[d] != 1) return false;
  return true;
}

/* MatMul over the rows of A; FusedMatMul(A, -, bias?, Z?) adds the bias in
 * the tiles and Z and the activation per finished block (alpha is in the
 * weight scales). */
static ait_status run_matmul(nat_run *r, qnt_state *s, const qnt_node *qn, const ait_node *node,
                             const ait_tensor *const *in, int n_in) {
  const ait_tensor *X = n_in > 0 ? in[0] : NULL;
  const ait_tensor *bias = qn->site.fused && n_in > 2 ? in[2] : NULL;
  const ait_tensor *Z = qn->site.fused && n_in > 3 ? in[3] : NULL;
  AIT_TRY(need_f32(X, "A"));
  int64_t K = qn->w.K, N = qn->w.N;
  if (X->rank < 1 || X->dims[X->rank - 1] != K)
    return ait_err(AIT_E_SHAPE, "A's last dimension must be %lld", (long long)K);
  if (bias) {
    AIT_TRY(need_f32(bias, "bias"));
    if (ait_tensor_numel(bias) != N)
      return ait_err(AIT_E_SHAPE, "the bias must have %lld elements", (long long)N);
  }
  nat_epilogue e;
  memset(&e, 0, sizeof e);
  if (qn->site.fused) AIT_TRY(ait_act_parse(node, &e.act));
  int64_t dims[AIT_MAX_RANK];
  int rank = X->rank;
  memcpy(dims, X->dims, sizeof(int64_t) * (size_t)rank);
  dims[rank - 1] = N;
  bool in_tiles = !Z || same_shape(Z, rank, dims);
  if (Z && in_tiles) {
    e.z = Z->data;
    e.ldz = N;
  } else if (Z && row_vector(Z, rank, N)) { /* a bias the export added apart */
    e.col_bias = Z->data;
    in_tiles = true;
  }
  ait_tensor *Y;
  AIT_TRY(nat_output(r, 0, AIT_FLOAT32, rank, dims, &Y));
  qnt_mm p = {&qn->w,
              s->cfg.act,
              X->data,
              ait_tensor_numel(X) / K,
              K,
              Y->data,
              N,
              0,
              N,
              bias ? bias->data : NULL,
              s->cfg.outliers,
              in_tiles ? &e : NULL,
              r,
              qn->share >= 0 ? &s->bufs[qn->share] : NULL,
              s->run};
  AIT_TRY(qnt_matmul(&p, nat_run_pool(r)));
  return in_tiles ? AIT_OK : post_generic(Z, &e.act, Y->data, rank, dims);
}

/* y += beta * C broadcast unidirectionally to [M, N]. */
static ait_status add_c(const ait_tensor *C, float beta, float *y, int64_t M, int64_t N) {
  AIT_TRY(need_f32(C, "C"));
  int64_t od[2] = {M, N}, cs[2];
  if (C->rank > 2) return ait_err(AIT_E_SHAPE, "C has rank %d", C->rank);
  for (int i = 0; i < C->rank; i++) {
    int64_t d = C->dims[i], want = od[2 - C->rank + i];
    if (d != 1 && d != want)
      return ait_err(AIT_E_SHAPE, "C does not broadcast to [%lld, %lld]", (long long)M,
                     (long long)N);
  }
  ait_broadcast_strides(C->rank, C->dims, 2, od, cs);
  const float *c = C->data;
  for (int64_t m = 0; m < M; m++)
    for (int64_t n = 0; n < N; n++)
      y[m * N + n] += beta * c[m * cs[0] + n * cs[1]];
  return AIT_OK;
}

/* Gemm (and FusedGemm: then the activation last): alpha is folded into the
 * weight scales when quantizing. */
static ait_status run_gemm(nat_run *r, qnt_state *s, const qnt_node *qn, const ait_node *node,
                           const ait_tensor *const *in, int n_in) {
  const ait_tensor *A = n_in > 0 ? in[0] : NULL, *C = n_in > 2 ? in[2] : NULL;
  AIT_TRY(need_f32(A, "A"));
  int64_t K = qn->w.K, N = qn->w.N;
  bool ta = ait_attr_int(node, "transA", 0) != 0;
  float beta = ait_attr_float(node, "beta", 1.0f);
  if (A->rank != 2 || A->dims[ta ? 0 : 1] != K)
    return ait_err(AIT_E_SHAPE, "A must be 2-D with %lld on its %s axis", (long long)K,
                   ta ? "first" : "second");
  nat_epilogue e;
  memset(&e, 0, sizeof e);
  if (qn->site.fused) AIT_TRY(ait_act_parse(node, &e.act));
  int64_t M = A->dims[ta ? 1 : 0], dims[2] = {M, N};
  bool c_bias = C && C->kind == AIT_KIND_TENSOR && C->dtype == AIT_FLOAT32 && C->rank == 1 &&
                C->dims[0] == N && beta == 1.0f;
  bool c_add = C && !c_bias && beta != 0.0f;
  if (c_add) AIT_TRY(need_f32(C, "C"));
  ait_tensor *Y;
  AIT_TRY(nat_output(r, 0, AIT_FLOAT32, 2, dims, &Y));
  float *at = NULL;
  const float *x = A->data;
  if (ta) {
    if (!(at = malloc(sizeof(float) * (size_t)(M > 0 && K > 0 ? M * K : 1))))
      return ait_err(AIT_E_NOMEM, "out of memory");
    transpose(s, A->data, K, M, M, at, K);
    x = at;
  }
  qnt_mm p = {
      &qn->w,          s->cfg.act,        x, M,    K, Y->data, N, 0, N, c_bias ? C->data : NULL,
      s->cfg.outliers, c_add ? NULL : &e, r, NULL, 0};
  ait_status st = qnt_matmul(&p, nat_run_pool(r));
  free(at);
  if (!st && c_add) st = add_c(C, beta, Y->data, M, N);
  if (!st && c_add && e.act.kind != AIT_ACT_NONE) nat_act_f32(&e.act, Y->data, M * N);
  return st;
}

/* rows[pos][kk * Cg + c] = input channel c under kernel offset kk of output
 * position pos (0 in the padding), from the image in channel-last order
 * (xt[spatial][Cg]): each kernel offset is one contiguous copy. */
static void im2row(const float *xt, int64_t Cg, const nn_win *w, int64_t out_n, int64_t kn,
                   const int64_t *koff, float *rows) {
  int nsp = w->nsp;
  int64_t o[NN_MAX_SP] = {0}, K = Cg * kn, istride[NN_MAX_SP];
  istride[nsp - 1] = 1;
  for (int i = nsp - 2; i >= 0; i--)
    istride[i] = istride[i + 1] * w->in[i + 1];
  for (int64_t pos = 0; pos < out_n; pos++) {
    float *row = rows + pos * K;
    int64_t start[NN_MAX_SP], base = 0;
    bool inside = true;
    for (int i = 0; i < nsp; i++) {
      start[i] = o[i] * w->s[i] - w->pb[i];
      base += start[i] * istride[i];
      inside = inside && start[i] >= 0 && start[i] + (w->k[i] - 1) * w->d[i] < w->in[i];
    }
    for (int64_t kk = 0; kk < kn; kk++) {
      const int64_t *ko = koff + kk * (nsp + 1); /* spatial offsets, then linear */
      bool ok = true;
      for (int i = 0; i < nsp && ok && !inside; i++) {
        int64_t at = start[i] + ko[i];
        ok = at >= 0 && at < w->in[i];
      }
      float *dst = row + kk * Cg;
      if (!ok) {
        memset(dst, 0, sizeof(float) * (size_t)Cg);
      } else {
        const float *src = xt + (base + ko[nsp]) * Cg;
        if (Cg >= 16)
          memcpy(dst, src, sizeof(float) * (size_t)Cg);
        else
          for (int64_t c = 0; c < Cg; c++)
            dst[c] = src[c];
      }
    }
    for (int i = nsp - 1; i >= 0; i--) {
      if (++o[i] < w->out[i]) break;
      o[i] = 0;
    }
  }
}

typedef struct conv_geo {
  nn_win w;
  int64_t N, C, M, group, Cg, Mg, in_n, out_n, kn;
  bool pointwise;
} conv_geo;

static ait_status conv_geometry(const qnt_node *qn, const ait_node *node, const ait_tensor *X,
                                conv_geo *c) {
  const qnt_site *site = &qn->site;
  if (X->rank != site->wrank)
    return ait_err(AIT_E_SHAPE, "X has rank %d, the weight %d", X->rank, site->wrank);
  int nsp = X->rank - 2;
  c->group = ait_attr_int(node, "group", 1);
  c->N = X->dims[0];
  c->C = X->dims[1];
  c->M = site->wdims[0];
  c->Cg = site->wdims[1];
  if (c->group < 1 || c->C != c->Cg * c->group || c->M % c->group)
    return ait_err(AIT_E_SHAPE, "X has %lld channels; the weight expects %lld x %lld groups",
                   (long long)c->C, (long long)c->Cg, (long long)c->group);
  c->Mg = c->M / c->group;
  AIT_TRY(nn_win_conv(node, nsp, X->dims + 2, site->wdims + 2, false, true, &c->w));
  c->in_n = nn_win_in_numel(&c->w);
  c->out_n = nn_win_out_numel(&c->w);
  c->kn = nn_win_k_numel(&c->w);
  c->pointwise = c->group == 1;
  for (int i = 0; i < nsp; i++)
    c->pointwise =
        c->pointwise && c->w.k[i] == 1 && c->w.s[i] == 1 && c->w.pb[i] == 0 && c->w.pe[i] == 0;
  return AIT_OK;
}

/* Per kernel offset: its spatial offsets and its linear offset. */
static int64_t *kernel_offsets(const conv_geo *c) {
  int nsp = c->w.nsp;
  int64_t *t = malloc(sizeof(int64_t) * (size_t)(c->kn * (nsp + 1)));
  if (!t) return NULL;
  for (int64_t kk = 0; kk < c->kn; kk++) {
    int64_t rem = kk, lin = 0, stride = 1, *ko = t + kk * (nsp + 1);
    for (int i = nsp - 1; i >= 0; i--) {
      ko[i] = (rem % c->w.k[i]) * c->w.d[i];
      rem /= c->w.k[i];
    }
    for (int i = nsp - 1; i >= 0; i--) {
      lin += ko[i] * stride;
      stride *= c->w.in[i];
    }
    ko[nsp] = lin;
  }
  return t;
}

/* Conv per image and group on the im2row matrix; FusedConv(X, -, B?, Z?)
 * adds Z and applies the activation to each image's channels once they are
 * back in NCHW. */
static ait_status run_conv(nat_run *r, qnt_state *s, const qnt_node *qn, const ait_node *node,
                           const ait_tensor *const *in, int n_in) {
  const ait_tensor *X = n_in > 0 ? in[0] : NULL, *B = n_in > 2 ? in[2] : NULL;
  const ait_tensor *Z = qn->site.fused && n_in > 3 ? in[3] : NULL;
  AIT_TRY(need_f32(X, "X"));
  if (B) AIT_TRY(need_f32(B, "B"));
  conv_geo c;
  AIT_TRY(conv_geometry(qn, node, X, &c));
  if (B && (B->rank != 1 || B->dims[0] != c.M))
    return ait_err(AIT_E_SHAPE, "bias B must have shape [%lld]", (long long)c.M);
  nat_epilogue e;
  memset(&e, 0, sizeof e);
  if (qn->site.fused) AIT_TRY(ait_act_parse(node, &e.act));
  int64_t dims[AIT_MAX_RANK] = {c.N, c.M}, K = qn->w.K;
  int rank = c.w.nsp + 2;
  memcpy(dims + 2, c.w.out, sizeof(int64_t) * (size_t)c.w.nsp);
  bool in_place = !Z || same_shape(Z, rank, dims);
  ait_tensor *Y;
  AIT_TRY(nat_output(r, 0, AIT_FLOAT32, rank, dims, &Y));
  size_t xt_n = (size_t)(c.in_n * c.Cg), tmp_n = (size_t)(c.out_n * c.Mg);
  size_t rows_n = c.pointwise ? 1 : (size_t)(c.out_n * K);
  float *xt = malloc(sizeof(float) * (xt_n ? xt_n : 1));
  float *rows = malloc(sizeof(float) * (rows_n ? rows_n : 1));
  float *tmp = malloc(sizeof(float) * (tmp_n ? tmp_n : 1));
  int64_t *koff = kernel_offsets(&c);
  ait_status st = xt && rows && tmp && koff ? AIT_OK : ait_err(AIT_E_NOMEM, "out of memory");
  const float *x = X->data, *bias = B ? B->data : NULL;
  float *y = Y->data;
  for (int64_t n = 0; n < c.N && !st; n++)
    for (int64_t g = 0; g < c.group && !st; g++) {
      transpose(s, x + (n * c.C + g * c.Cg) * c.in_n, c.Cg, c.in_n, c.in_n, xt, c.Cg);
      if (!c.pointwise) im2row(xt, c.Cg, &c.w, c.out_n, c.kn, koff, rows);
      bool whole = qn->w.layout != QNT_L_ROWS;
      qnt_mm p = {&qn->w,
                  s->cfg.act,
                  c.pointwise ? xt : rows,
                  c.out_n,
                  K,
                  tmp,
                  c.Mg,
                  whole ? 0 : g * c.Mg,
                  c.Mg,
                  bias ? bias + g * c.Mg : NULL,
                  s->cfg.outliers,
                  NULL,
                  r,
                  NULL,
                  0};
      st = qnt_matmul(&p, nat_run_pool(r));
      if (st) break;
      int64_t off = (n * c.M + g * c.Mg) * c.out_n;
      transpose(s, tmp, c.out_n, c.Mg, c.Mg, y + off, c.out_n);
      if (in_place && (Z || e.act.kind != AIT_ACT_NONE)) {
        nat_epilogue eb = e;
        eb.z = Z ? (const float *)Z->data + off : NULL;
        eb.ldz = c.out_n;
        nat_epilogue_apply(&eb, y + off, c.out_n, 0, c.Mg, 0, c.out_n);
      }
    }
  free(xt);
  free(rows);
  free(tmp);
  free(koff);
  if (!st && !in_place) st = post_generic(Z, &e.act, y, rank, dims);
  return st;
}

/* Gather from a quantized table: output = indices' shape + [width], each
 * row dequantized (scale * (code - zero) per group). */
static ait_status run_gather(nat_run *r, const qnt_node *qn, const ait_tensor *const *in,
                             int n_in) {
  const ait_tensor *I = n_in > 0 ? in[0] : NULL;
  const qnt_weight *w = &qn->w;
  if (!I || I->kind != AIT_KIND_TENSOR || (I->dtype != AIT_INT64 && I->dtype != AIT_INT32))
    return ait_err(AIT_E_DTYPE, "the indices must be int64 or int32");
  if (I->rank + 1 > AIT_MAX_RANK) return ait_err(AIT_E_SHAPE, "the indices have rank %d", I->rank);
  int64_t dims[AIT_MAX_RANK], n = ait_tensor_numel(I), K = w->K;
  memcpy(dims, I->dims, sizeof(int64_t) * (size_t)I->rank);
  dims[I->rank] = K;
  for (int64_t i = 0; i < n; i++) { /* every index first: no output on error */
    int64_t v =
        I->dtype == AIT_INT64 ? ((const int64_t *)I->data)[i] : ((const int32_t *)I->data)[i];
    if (v < -w->N || v >= w->N)
      return ait_err(AIT_E_INVALID_ARG, "index %lld is out of range for %lld rows", (long long)v,
                     (long long)w->N);
  }
  ait_tensor *Y;
  AIT_TRY(nat_output(r, 0, AIT_FLOAT32, I->rank + 1, dims, &Y));
  float lut[256];
  for (int c = 0; c < 256; c++)
    lut[c] = w->type == QNT_FP8 ? ait_e4m3_decode((uint8_t)c) : (float)(int8_t)c;
  float *y = Y->data;
  for (int64_t i = 0; i < n; i++) {
    int64_t v =
        I->dtype == AIT_INT64 ? ((const int64_t *)I->data)[i] : ((const int32_t *)I->data)[i];
    if (v < 0) v += w->N;
    const uint8_t *c = w->codes + v * K;
    const float *sc = w->scale + v * w->G;
    const int8_t *zp = w->zero ? w->zero + v * w->G : NULL;
    for (int64_t g = 0; g < w->G; g++) {
      int64_t k0 = g * w->gsize, k1 = k0 + w->gsize < K ? k0 + w->gsize : K;
      float s = sc[g], z = zp ? (float)zp[g] : 0.0f;
      for (int64_t k = k0; k < k1; k++)
        y[i * K + k] = s * (lut[c[k]] - z);
    }
  }
  return AIT_OK;
}

ait_status qnt_k_op(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  qnt_state *s = nat_run_user(r);
  int64_t k = ait_attr_int(n, "qidx", -1);
  if (!s || k < 0 || k >= s->n_q)
    return ait_err(AIT_E_INTERNAL, "quant: %s has no quantized weight", ait_node_desc(n));
  const qnt_node *qn = &s->q[k];
  switch (qn->site.kind) {
  case QNT_K_MATMUL: return run_matmul(r, s, qn, n, in, n_in);
  case QNT_K_GEMM: return run_gemm(r, s, qn, n, in, n_in);
  case QNT_K_CONV: return run_conv(r, s, qn, n, in, n_in);
  case QNT_K_GATHER: return run_gather(r, qn, in, n_in);
  }
  return ait_err(AIT_E_INTERNAL, "quant: unknown quantized op");
}
