/* 2-D Conv / FusedConv in float32.
 *   depthwise (one input channel per group): a direct loop per output plane,
 *     planes spread over the pool
 *   pointwise (1x1, stride 1, no padding): SGEMM straight on the input
 *   otherwise: im2col (rows spread over the pool) + SGEMM, per image and group
 * Bias, the residual Z and the activation run as the GEMM epilogue. Other
 * ranks and dtypes go to the reference kernel. */
#include <string.h>

#include "backends/native/native.h"
#include "ops/nn_impl.h"

typedef struct conv {
  int64_t N, C, H, W, M, OH, OW, group, Cg, Mg, kh, kw;
  int64_t sh, sw, dh, dw, pt, pl;
  const float *x, *w, *b, *z;
  float *y, *col;
  ait_act act;
} conv;

/* [lo, hi) of outputs o with 0 <= o*s + off < n. */
static void valid_range(int64_t n_out, int64_t s, int64_t off, int64_t n, int64_t *lo,
                        int64_t *hi) {
  int64_t l = off >= 0 ? 0 : (-off + s - 1) / s;
  int64_t h = n - off <= 0 ? 0 : (n - off - 1) / s + 1;
  *lo = l < n_out ? l : n_out;
  *hi = h < n_out ? h : n_out;
  if (*hi < *lo) *hi = *lo;
}

/* ---- depthwise -------------------------------------------------------- */

typedef struct dw_job {
  const conv *c;
  int64_t per_task;
} dw_job;

static NAT_INLINE void dw_plane(const conv *c, int64_t plane) {
  int64_t n = plane / c->M, m = plane % c->M, ci = m / c->Mg;
  const float *x = c->x + (n * c->C + ci) * c->H * c->W;
  const float *wk = c->w + m * c->kh * c->kw;
  float *y = c->y + plane * c->OH * c->OW;
  float bias = c->b ? c->b[m] : 0.0f;
  int64_t lo[16], hi[16];
  bool small = c->kw <= 16;
  for (int64_t kj = 0; small && kj < c->kw; kj++)
    valid_range(c->OW, c->sw, kj * c->dw - c->pl, c->W, &lo[kj], &hi[kj]);
  for (int64_t oh = 0; oh < c->OH; oh++) {
    float *yr = y + oh * c->OW;
    for (int64_t j = 0; j < c->OW; j++)
      yr[j] = bias;
    for (int64_t ki = 0; ki < c->kh; ki++) {
      int64_t ih = oh * c->sh - c->pt + ki * c->dh;
      if (ih < 0 || ih >= c->H) continue;
      const float *xr = x + ih * c->W;
      for (int64_t kj = 0; kj < c->kw; kj++) {
        float wv = wk[ki * c->kw + kj];
        int64_t off = kj * c->dw - c->pl, l, h;
        if (small)
          l = lo[kj], h = hi[kj];
        else
          valid_range(c->OW, c->sw, off, c->W, &l, &h);
        if (c->sw == 1) {
          const float *xs = xr + off;
          for (int64_t j = l; j < h; j++)
            yr[j] += wv * xs[j];
        } else if (c->sw == 2) {
          const float *xs = xr + off;
          for (int64_t j = l; j < h; j++)
            yr[j] += wv * xs[2 * j];
        } else {
          for (int64_t j = l; j < h; j++)
            yr[j] += wv * xr[j * c->sw + off];
        }
      }
    }
    if (c->z) {
      const float *zr = c->z + plane * c->OH * c->OW + oh * c->OW;
      for (int64_t j = 0; j < c->OW; j++)
        yr[j] += zr[j];
    }
    nat_act_f32(&c->act, yr, c->OW);
  }
}

/* 3x3, dilation 1, stride S: each output row in one pass over nine input
 * values, rows above/below the input read as zeros, columns next to the
 * border computed with bounds checks. */
#define DW3_MAX_W 2048
static NAT_INLINE void dw3_plane(const conv *c, int64_t plane, int64_t S) {
  static const float zeros[DW3_MAX_W];
  int64_t n = plane / c->M, m = plane % c->M, ci = m / c->Mg;
  const float *x = c->x + (n * c->C + ci) * c->H * c->W;
  const float *k = c->w + m * 9;
  float *y = c->y + plane * c->OH * c->OW;
  const float bias = c->b ? c->b[m] : 0.0f;
  const float k0 = k[0], k1 = k[1], k2 = k[2], k3 = k[3], k4 = k[4], k5 = k[5], k6 = k[6],
              k7 = k[7], k8 = k[8];
  int64_t W = c->W, OW = c->OW, pl = c->pl;
  /* interior: 0 <= j*S - pl and j*S - pl + 2 < W */
  int64_t jl = (pl + S - 1) / S, jh = W - 3 + pl >= 0 ? (W - 3 + pl) / S + 1 : 0;
  if (jh > OW) jh = OW;
  if (jl > jh) jl = jh;
  for (int64_t oh = 0; oh < c->OH; oh++) {
    const float *r[3];
    for (int ki = 0; ki < 3; ki++) {
      int64_t ih = oh * c->sh - c->pt + ki;
      r[ki] = ih >= 0 && ih < c->H ? x + ih * W : zeros;
    }
    const float *r0 = r[0] - pl, *r1 = r[1] - pl, *r2 = r[2] - pl;
    float *yr = y + oh * OW;
    for (int64_t j = 0; j < OW; j++) {
      if (j == jl && jl < jh) { /* the interior, vectorisable */
        if (S == 1) {
          for (; j < jh; j++)
            yr[j] = bias + k0 * r0[j] + k1 * r0[j + 1] + k2 * r0[j + 2] + k3 * r1[j] +
                    k4 * r1[j + 1] + k5 * r1[j + 2] + k6 * r2[j] + k7 * r2[j + 1] + k8 * r2[j + 2];
        } else {
          for (; j < jh; j++) {
            int64_t q = 2 * j;
            yr[j] = bias + k0 * r0[q] + k1 * r0[q + 1] + k2 * r0[q + 2] + k3 * r1[q] +
                    k4 * r1[q + 1] + k5 * r1[q + 2] + k6 * r2[q] + k7 * r2[q + 1] + k8 * r2[q + 2];
          }
        }
        if (j >= OW) break;
      }
      float s = bias;
      for (int kj = 0; kj < 3; kj++) {
        int64_t iw = j * S - pl + kj;
        if (iw < 0 || iw >= W) continue;
        s += k[kj] * r[0][iw] + k[3 + kj] * r[1][iw] + k[6 + kj] * r[2][iw];
      }
      yr[j] = s;
    }
    if (c->z) {
      const float *zr = c->z + plane * c->OH * OW + oh * OW;
      for (int64_t j = 0; j < OW; j++)
        yr[j] += zr[j];
    }
    nat_act_f32(&c->act, yr, OW);
  }
}

NAT_CLONES static void dw_task(void *arg, int64_t t, int tid) {
  const dw_job *j = arg;
  const conv *c = j->c;
  int64_t total = c->N * c->M;
  bool k3 = c->kh == 3 && c->kw == 3 && c->dh == 1 && c->dw == 1 && c->W <= DW3_MAX_W &&
            (c->sw == 1 || c->sw == 2) && c->pl <= 2;
  for (int64_t p = t * j->per_task; p < (t + 1) * j->per_task && p < total; p++) {
    if (k3)
      dw3_plane(c, p, c->sw);
    else
      dw_plane(c, p);
  }
}

/* ---- im2col ----------------------------------------------------------------- */

typedef struct col_job {
  const conv *c;
  const float *x; /* first channel of the group in this image */
} col_job;

/* Row (channel, ki, kj) of the column matrix. */
static void col_task(void *arg, int64_t row, int tid) {
  const col_job *j = arg;
  const conv *c = j->c;
  int64_t k2 = c->kh * c->kw, ch = row / k2, ki = (row % k2) / c->kw, kj = row % c->kw;
  const float *xc = j->x + ch * c->H * c->W;
  float *dst = c->col + row * c->OH * c->OW;
  int64_t off = kj * c->dw - c->pl, lo, hi;
  valid_range(c->OW, c->sw, off, c->W, &lo, &hi);
  for (int64_t oh = 0; oh < c->OH; oh++, dst += c->OW) {
    int64_t ih = oh * c->sh - c->pt + ki * c->dh;
    if (ih < 0 || ih >= c->H) {
      memset(dst, 0, sizeof(float) * (size_t)c->OW);
      continue;
    }
    const float *src = xc + ih * c->W + off;
    for (int64_t q = 0; q < lo; q++)
      dst[q] = 0.0f;
    if (c->sw == 1)
      memcpy(dst + lo, src + lo, sizeof(float) * (size_t)(hi - lo));
    else
      for (int64_t q = lo; q < hi; q++)
        dst[q] = src[q * c->sw];
    for (int64_t q = hi; q < c->OW; q++)
      dst[q] = 0.0f;
  }
}

/* ---- the kernel ----------------------------------------------------------- */

static ait_status setup(const ait_node *n, const ait_tensor *const *in, int n_in, conv *c) {
  const ait_tensor *X = in[0], *W = n_in > 1 ? in[1] : NULL, *B = n_in > 2 ? in[2] : NULL;
  const ait_tensor *Z = n_in > 3 ? in[3] : NULL;
  if (!X || !W || X->dtype != AIT_FLOAT32 || W->dtype != AIT_FLOAT32 || X->rank != 4 ||
      W->rank != 4)
    return AIT_E_UNSUPPORTED;
  memset(c, 0, sizeof *c);
  c->group = ait_attr_int(n, "group", 1);
  c->N = X->dims[0], c->C = X->dims[1], c->H = X->dims[2], c->W = X->dims[3];
  c->M = W->dims[0];
  if (c->group < 1 || c->C % c->group || c->M % c->group || W->dims[1] != c->C / c->group)
    return AIT_E_UNSUPPORTED;
  c->Cg = c->C / c->group;
  c->Mg = c->M / c->group;
  nn_win w;
  if (nn_win_conv(n, 2, X->dims + 2, W->dims + 2, false, true, &w) != AIT_OK) {
    ait_err_clear();
    return AIT_E_UNSUPPORTED;
  }
  c->OH = w.out[0], c->OW = w.out[1], c->kh = w.k[0], c->kw = w.k[1];
  c->sh = w.s[0], c->sw = w.s[1], c->dh = w.d[0], c->dw = w.d[1];
  c->pt = w.pb[0], c->pl = w.pb[1];
  if (B && (B->dtype != AIT_FLOAT32 || ait_tensor_numel(B) != c->M || B->rank != 1))
    return AIT_E_UNSUPPORTED;
  if (Z) {
    int64_t od[4] = {c->N, c->M, c->OH, c->OW};
    if (Z->dtype != AIT_FLOAT32 || Z->kind != AIT_KIND_TENSOR || Z->rank != 4 ||
        memcmp(Z->dims, od, sizeof od))
      return AIT_E_UNSUPPORTED;
    c->z = Z->data;
  }
  if (ait_act_parse(n, &c->act) != AIT_OK) return AIT_E_UNSUPPORTED;
  c->x = X->data;
  c->w = W->data;
  c->b = B ? B->data : NULL;
  return AIT_OK;
}

ait_status nat_k_conv(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  conv c;
  ait_status st = setup(n, in, n_in, &c);
  if (st) return st;
  int64_t od[4] = {c.N, c.M, c.OH, c.OW};
  ait_tensor *Y;
  AIT_TRY(nat_output(r, 0, AIT_FLOAT32, 4, od, &Y));
  c.y = Y->data;
  int64_t ohw = c.OH * c.OW, kdim = c.Cg * c.kh * c.kw;
  if (c.N * c.M * ohw == 0) return AIT_OK;
  if (c.Cg == 1 && c.group > 1) {
    dw_job j = {&c, nat_chunk(r, c.N * c.M, 1)};
    int64_t tasks = (c.N * c.M + j.per_task - 1) / j.per_task;
    nat_pool_run(nat_run_pool(r), tasks, dw_task, &j);
    return AIT_OK;
  }
  bool pointwise = c.kh == 1 && c.kw == 1 && c.sh == 1 && c.sw == 1 && c.pt == 0 && c.pl == 0 &&
                   c.OH == c.H && c.OW == c.W;
  if (!pointwise) {
    c.col = nat_scratch(r, (int64_t)sizeof(float) * kdim * ohw);
    if (!c.col) return AIT_E_NOMEM;
  }
  for (int64_t b = 0; b < c.N; b++)
    for (int64_t g = 0; g < c.group; g++) {
      const float *xg = c.x + (b * c.C + g * c.Cg) * c.H * c.W;
      const float *bm = xg;
      if (!pointwise) {
        col_job cj = {&c, xg};
        nat_pool_run(nat_run_pool(r), kdim, col_task, &cj);
        bm = c.col;
      }
      int64_t y0 = (b * c.M + g * c.Mg) * ohw;
      nat_epilogue e;
      memset(&e, 0, sizeof e);
      e.row_bias = c.b ? c.b + g * c.Mg : NULL;
      e.z = c.z ? c.z + y0 : NULL;
      e.ldz = ohw;
      e.act = c.act;
      nat_sgemm(r, false, false, c.Mg, ohw, kdim, 1.0f, c.w + g * c.Mg * kdim, kdim, bm, ohw,
                c.y + y0, ohw, &e);
    }
  return AIT_OK;
}
