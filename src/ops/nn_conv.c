/* Conv and ConvTranspose.
 *
 * float32 (and float16/bfloat16 through float32): per image and group, Conv
 * is im2col + nn_sgemm (a 1x1, stride-1, unpadded Conv reads the input
 * directly), ConvTranspose is nn_sgemm (W^T X) + col2im. float64 runs a
 * direct loop in double: slow, and obviously correct. */
#include <stdlib.h>
#include <string.h>

#include "ops/nn_impl.h"

typedef struct conv_args {
  int64_t N, C, M, group, Cg, Mg; /* batch, in/out channels, groups, per group */
  nn_win w;
  int64_t in_n, out_n, k_n; /* spatial element counts */
} conv_args;

static void unravel(int64_t idx, int nsp, const int64_t *dims, int64_t *coord) {
  for (int i = nsp - 1; i >= 0; i--) {
    coord[i] = idx % dims[i];
    idx /= dims[i];
  }
}

static ait_status conv_setup(const ait_node *node, const ait_tensor *X, const ait_tensor *W,
                             const ait_tensor *B, bool transpose, conv_args *a) {
  if (!X || !W) return ait_err(AIT_E_INVALID_ARG, "inputs X and W are required");
  AIT_TRY(nn_check_float(X, "X"));
  AIT_TRY(nn_check_same_dtype(X, W, "W"));
  if (B) AIT_TRY(nn_check_same_dtype(X, B, "B"));
  if (X->rank < 3 || W->rank != X->rank)
    return ait_err(AIT_E_SHAPE, "X has rank %d and W rank %d; need equal ranks >= 3", X->rank,
                   W->rank);
  int nsp = X->rank - 2;
  a->group = ait_attr_int(node, "group", 1);
  if (a->group < 1) return ait_err(AIT_E_INVALID_ARG, "group = %lld", (long long)a->group);
  a->N = X->dims[0];
  a->C = X->dims[1];
  if (a->C % a->group)
    return ait_err(AIT_E_SHAPE, "%lld input channels do not split into %lld groups",
                   (long long)a->C, (long long)a->group);
  a->Cg = a->C / a->group;
  if (!transpose) {
    a->M = W->dims[0];
    if (W->dims[1] != a->Cg || a->M % a->group)
      return ait_err(
          AIT_E_SHAPE, "W has %lld x %lld channels; expected M x %lld, M a multiple of %lld",
          (long long)W->dims[0], (long long)W->dims[1], (long long)a->Cg, (long long)a->group);
    AIT_TRY(nn_win_conv(node, nsp, X->dims + 2, W->dims + 2, false, true, &a->w));
  } else {
    if (W->dims[0] != a->C)
      return ait_err(AIT_E_SHAPE, "W has %lld input channels, X has %lld", (long long)W->dims[0],
                     (long long)a->C);
    a->M = W->dims[1] * a->group;
    AIT_TRY(nn_win_convt(node, nsp, X->dims + 2, W->dims + 2, &a->w));
  }
  a->Mg = a->M / a->group;
  if (B && (B->rank != 1 || B->dims[0] != a->M))
    return ait_err(AIT_E_SHAPE, "bias B must have shape [%lld]", (long long)a->M);
  a->in_n = nn_win_in_numel(&a->w);
  a->out_n = nn_win_out_numel(&a->w);
  a->k_n = nn_win_k_numel(&a->w);
  return AIT_OK;
}

static ait_status new_output(const conv_args *a, const ait_tensor *X, ait_tensor **out) {
  int64_t dims[AIT_MAX_RANK] = {a->N, a->M};
  memcpy(dims + 2, a->w.out, (size_t)a->w.nsp * sizeof *dims);
  return nn_new(out, X->dtype, a->w.nsp + 2, dims);
}

/* ---- float32 ---------------------------------------------------------- */

/* Index range [lo, hi) of outputs o with 0 <= o*s + off < n. */
static void valid_range(int64_t n_out, int64_t s, int64_t off, int64_t n, int64_t *lo,
                        int64_t *hi) {
  int64_t l = off >= 0 ? 0 : (-off + s - 1) / s;
  int64_t h = n - off <= 0 ? 0 : (n - off - 1) / s + 1;
  *lo = l < n_out ? l : n_out;
  *hi = h < n_out ? h : n_out;
  if (*hi < *lo) *hi = *lo;
}

/* col[(c, kernel offset), output position] = padded input value. */
static void im2col(const float *x, int64_t Cg, const conv_args *a, float *col) {
  const nn_win *w = &a->w;
  int nsp = w->nsp, last = nsp - 1;
  int64_t ow_n = w->out[last], outer_n = a->out_n / (ow_n ? ow_n : 1);
  for (int64_t c = 0; c < Cg; c++) {
    const float *xc = x + c * a->in_n;
    for (int64_t kk = 0; kk < a->k_n; kk++) {
      int64_t ko[NN_MAX_SP], o[NN_MAX_SP] = {0};
      unravel(kk, nsp, w->k, ko);
      float *dst = col + (c * a->k_n + kk) * a->out_n;
      int64_t off = ko[last] * w->d[last] - w->pb[last], lo, hi;
      valid_range(ow_n, w->s[last], off, w->in[last], &lo, &hi);
      for (int64_t q = 0; q < outer_n; q++, dst += ow_n) {
        bool ok = true;
        int64_t base = 0;
        for (int i = 0; i < last; i++) {
          int64_t ii = o[i] * w->s[i] - w->pb[i] + ko[i] * w->d[i];
          ok = ok && ii >= 0 && ii < w->in[i];
          base = base * w->in[i] + ii;
        }
        if (!ok) {
          memset(dst, 0, (size_t)ow_n * sizeof *dst);
        } else {
          const float *src = xc + base * w->in[last] + off;
          int64_t s = w->s[last], j = 0;
          for (; j < lo; j++)
            dst[j] = 0.0f;
          if (s == 1)
            memcpy(dst + lo, src + lo, (size_t)(hi - lo) * sizeof *dst);
          else
            for (j = lo; j < hi; j++)
              dst[j] = src[j * s];
          for (j = hi; j < ow_n; j++)
            dst[j] = 0.0f;
        }
        for (int i = last - 1; i >= 0; i--) { /* next outer output position */
          if (++o[i] < w->out[i]) break;
          o[i] = 0;
        }
      }
    }
  }
}

/* y[m, output position] += col[(m, kernel offset), input position]. */
static void col2im(const float *col, int64_t Mg, const conv_args *a, float *y) {
  const nn_win *w = &a->w;
  int nsp = w->nsp;
  for (int64_t m = 0; m < Mg; m++) {
    float *ym = y + m * a->out_n;
    for (int64_t kk = 0; kk < a->k_n; kk++) {
      int64_t ko[NN_MAX_SP], ii[NN_MAX_SP] = {0};
      unravel(kk, nsp, w->k, ko);
      const float *src = col + (m * a->k_n + kk) * a->in_n;
      for (int64_t q = 0; q < a->in_n; q++) {
        bool ok = true;
        int64_t idx = 0;
        for (int i = 0; i < nsp; i++) {
          int64_t oo = ii[i] * w->s[i] - w->pb[i] + ko[i] * w->d[i];
          ok = ok && oo >= 0 && oo < w->out[i];
          idx = idx * w->out[i] + oo;
        }
        if (ok) ym[idx] += src[q];
        for (int i = nsp - 1; i >= 0; i--) {
          if (++ii[i] < w->in[i]) break;
          ii[i] = 0;
        }
      }
    }
  }
}

static void add_bias(float *y, const float *b, int64_t M, int64_t n) {
  for (int64_t m = 0; m < M; m++)
    for (int64_t j = 0; j < n; j++)
      y[m * n + j] += b[m];
}

static ait_status conv_f32(const conv_args *a, const float *x, const float *wt, const float *b,
                           float *y) {
  const nn_win *w = &a->w;
  bool pointwise = true;
  for (int i = 0; i < w->nsp; i++)
    pointwise = pointwise && w->k[i] == 1 && w->s[i] == 1 && w->pb[i] == 0 && w->pe[i] == 0;
  int64_t kdim = a->Cg * a->k_n;
  float *col = NULL;
  if (!pointwise && a->N && a->out_n && kdim) {
    col = malloc((size_t)kdim * (size_t)a->out_n * sizeof *col);
    if (!col)
      return ait_err(AIT_E_NOMEM, "out of memory for an im2col buffer of %lld x %lld",
                     (long long)kdim, (long long)a->out_n);
  }
  ait_status st = AIT_OK;
  for (int64_t n = 0; n < a->N && st == AIT_OK; n++) {
    for (int64_t g = 0; g < a->group && st == AIT_OK; g++) {
      const float *xg = x + (n * a->C + g * a->Cg) * a->in_n;
      float *yg = y + (n * a->M + g * a->Mg) * a->out_n;
      const float *bm = xg;
      if (!pointwise) {
        im2col(xg, a->Cg, a, col);
        bm = col;
      }
      st = nn_sgemm(a->Mg, a->out_n, kdim, wt + g * a->Mg * kdim, kdim, 1, bm, a->out_n, 1, yg,
                    a->out_n, false);
      if (b) add_bias(yg, b + g * a->Mg, a->Mg, a->out_n);
    }
  }
  free(col);
  return st;
}

static ait_status convt_f32(const conv_args *a, const float *x, const float *wt, const float *b,
                            float *y) {
  int64_t rows = a->Mg * a->k_n;
  float *col = malloc((size_t)(rows ? rows : 1) * (size_t)(a->in_n ? a->in_n : 1) * sizeof *col);
  if (!col)
    return ait_err(AIT_E_NOMEM, "out of memory for a col2im buffer of %lld x %lld", (long long)rows,
                   (long long)a->in_n);
  ait_status st = AIT_OK;
  for (int64_t n = 0; n < a->N && st == AIT_OK; n++) {
    for (int64_t g = 0; g < a->group && st == AIT_OK; g++) {
      const float *xg = x + (n * a->C + g * a->Cg) * a->in_n;
      const float *wg = wt + g * a->Cg * rows; /* Cg x rows, used transposed */
      float *yg = y + (n * a->M + g * a->Mg) * a->out_n;
      st = nn_sgemm(rows, a->in_n, a->Cg, wg, 1, rows, xg, a->in_n, 1, col, a->in_n, false);
      if (st != AIT_OK) break;
      col2im(col, a->Mg, a, yg);
      if (b) add_bias(yg, b + g * a->Mg, a->Mg, a->out_n);
    }
  }
  free(col);
  return st;
}

/* ---- float64: direct loops ------------------------------------------- */

static void conv_f64(const conv_args *a, const double *x, const double *wt, const double *b,
                     double *y, bool transpose) {
  const nn_win *w = &a->w;
  int nsp = w->nsp;
  /* Conv: y[o] += x[i] * w; ConvTranspose: y[i'] += x[o'] * w with the roles
   * of input and output positions swapped in the index relation. */
  const int64_t *wide = transpose ? w->out : w->in, *narrow = transpose ? w->in : w->out;
  for (int64_t n = 0; n < a->N; n++)
    for (int64_t g = 0; g < a->group; g++)
      for (int64_t c = 0; c < a->Cg; c++)
        for (int64_t m = 0; m < a->Mg; m++) {
          int64_t cc = g * a->Cg + c, mm = g * a->Mg + m;
          const double *wk =
              transpose ? wt + (cc * a->Mg + m) * a->k_n : wt + (mm * a->Cg + c) * a->k_n;
          const double *xc = x + (n * a->C + cc) * a->in_n;
          double *ym = y + (n * a->M + mm) * a->out_n;
          for (int64_t q = 0; q < (transpose ? a->in_n : a->out_n); q++) {
            int64_t pos[NN_MAX_SP], ko[NN_MAX_SP];
            unravel(q, nsp, narrow, pos);
            for (int64_t kk = 0; kk < a->k_n; kk++) {
              unravel(kk, nsp, w->k, ko);
              bool ok = true;
              int64_t idx = 0;
              for (int i = 0; i < nsp; i++) {
                int64_t p = pos[i] * w->s[i] - w->pb[i] + ko[i] * w->d[i];
                ok = ok && p >= 0 && p < wide[i];
                idx = idx * wide[i] + p;
              }
              if (!ok) continue;
              if (transpose)
                ym[idx] += xc[q] * wk[kk];
              else
                ym[q] += xc[idx] * wk[kk];
            }
          }
        }
  if (b)
    for (int64_t n = 0; n < a->N; n++)
      for (int64_t m = 0; m < a->M; m++)
        for (int64_t j = 0; j < a->out_n; j++)
          y[(n * a->M + m) * a->out_n + j] += b[m];
}

/* ---- kernels ------------------------------------------------------------ */

static ait_status run(const ait_node *node, const ait_tensor *const *in, int n_in, ait_tensor **out,
                      bool transpose) {
  const ait_tensor *X = n_in > 0 ? in[0] : NULL, *W = n_in > 1 ? in[1] : NULL,
                   *B = n_in > 2 ? in[2] : NULL;
  conv_args a;
  AIT_TRY(conv_setup(node, X, W, B, transpose, &a));
  AIT_TRY(new_output(&a, X, &out[0]));
  ait_status st = AIT_OK;
  if (X->dtype == AIT_FLOAT64) {
    conv_f64(&a, X->data, W->data, B ? B->data : NULL, out[0]->data, transpose);
    return AIT_OK;
  }
  const float *x = NULL, *wt = NULL, *b = NULL;
  float *ox = NULL, *ow = NULL, *ob = NULL, *oy = NULL, *y = NULL;
  if ((st = nn_f32_in(X, &x, &ox)) || (st = nn_f32_in(W, &wt, &ow)) ||
      (B && (st = nn_f32_in(B, &b, &ob))) || (st = nn_f32_out(out[0], &y, &oy)))
    goto done;
  st = transpose ? convt_f32(&a, x, wt, b, y) : conv_f32(&a, x, wt, b, y);
  if (st == AIT_OK) nn_f32_done(out[0], oy), oy = NULL;
done:
  free(ox), free(ow), free(ob), free(oy);
  return st;
}

NN_KERNEL(nn_conv_kernel) { return run(node, in, n_in, out, false); }
NN_KERNEL(nn_convt_kernel) { return run(node, in, n_in, out, true); }
