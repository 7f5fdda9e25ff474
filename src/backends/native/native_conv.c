/* Conv / FusedConv (and the setup ConvTranspose shares) in float32, over
 * 1, 2 or 3 spatial dims, any kernel, stride, dilation, pads and group:
 *   depthwise (one input channel per group, any channel multiplier): direct
 *     vector loops (native_conv_dw.c)
 *   otherwise per-group GEMMs Y_g = W_g . col_g, cut into blocks of output
 *     pixels (and of output channels when there are few blocks): one task
 *     per (image, group, pixel block, channel block), so all groups and
 *     images share the pool. Each task builds its own im2col block (K x pb,
 *     bounded whatever the input's size) in its thread's scratch and runs a
 *     single-threaded SGEMM on it; a 1x1, stride-1, unpadded conv reads the
 *     input directly. Bias, the residual Z and the activation run on the
 *     block while it is in cache.
 * Other dtypes, more than 3 spatial dims, and a residual that is not of the
 * output's shape go to the reference kernel (counted: nat_conv_declined). */
#include <string.h>

#include "backends/native/native_conv.h"
#include "ops/nn_impl.h"

static _Atomic long long declined;

long long nat_conv_declined(void) { return declined; }

/* AIT_E_UNSUPPORTED, counted. */
static ait_status decline(void) {
  declined++;
  return AIT_E_UNSUPPORTED;
}

/* Geometry of a Conv (transpose false) or ConvTranspose node on inputs X, W,
 * B (and Z for FusedConv) into c. AIT_E_UNSUPPORTED outside what the native
 * kernels run (the reference then runs it, or reports the error). */
static ait_status setup(const ait_node *n, const ait_tensor *const *in, int n_in, bool transpose,
                        nat_cv *c) {
  const ait_tensor *X = in[0], *W = n_in > 1 ? in[1] : NULL, *B = n_in > 2 ? in[2] : NULL;
  const ait_tensor *Z = n_in > 3 && !transpose ? in[3] : NULL;
  if (!X || !W || X->kind != AIT_KIND_TENSOR || W->kind != AIT_KIND_TENSOR ||
      X->dtype != AIT_FLOAT32 || W->dtype != AIT_FLOAT32 || X->rank < 3 || X->rank > 5 ||
      W->rank != X->rank)
    return AIT_E_UNSUPPORTED;
  memset(c, 0, sizeof *c);
  int nsp = X->rank - 2, lead = 3 - nsp;
  c->group = ait_attr_int(n, "group", 1);
  c->N = X->dims[0], c->C = X->dims[1];
  if (c->group < 1 || c->C % c->group) return AIT_E_UNSUPPORTED;
  c->Cg = c->C / c->group;
  nn_win w;
  ait_status st;
  if (!transpose) {
    c->M = W->dims[0];
    if (c->M % c->group || W->dims[1] != c->Cg) return AIT_E_UNSUPPORTED;
    st = nn_win_conv(n, nsp, X->dims + 2, W->dims + 2, false, true, &w);
  } else {
    if (W->dims[0] != c->C) return AIT_E_UNSUPPORTED;
    c->M = W->dims[1] * c->group;
    st = nn_win_convt(n, nsp, X->dims + 2, W->dims + 2, &w);
  }
  if (st != AIT_OK) {
    ait_err_clear();
    return AIT_E_UNSUPPORTED;
  }
  c->Mg = c->M / c->group;
  for (int i = 0; i < 3; i++) {
    int s = i - lead;
    bool real = s >= 0;
    c->in[i] = real ? w.in[s] : 1;
    c->out[i] = real ? w.out[s] : 1;
    c->k[i] = real ? w.k[s] : 1;
    c->s[i] = real ? w.s[s] : 1;
    c->d[i] = real ? w.d[s] : 1;
    c->pb[i] = real ? w.pb[s] : 0;
    if (c->out[i] < 0 || c->k[i] < 1 || c->s[i] < 1 || c->d[i] < 1) return AIT_E_UNSUPPORTED;
  }
  c->in_n = nn_win_in_numel(&w);
  c->out_n = nn_win_out_numel(&w);
  c->k_n = nn_win_k_numel(&w);
  if (B && (B->kind != AIT_KIND_TENSOR || B->dtype != AIT_FLOAT32 || ait_tensor_numel(B) != c->M ||
            B->rank != 1))
    return AIT_E_UNSUPPORTED;
  if (Z) {
    int64_t od[AIT_MAX_RANK] = {c->N, c->M};
    memcpy(od + 2, w.out, sizeof(int64_t) * (size_t)nsp);
    if (Z->dtype != AIT_FLOAT32 || Z->kind != AIT_KIND_TENSOR || Z->rank != X->rank ||
        memcmp(Z->dims, od, sizeof(int64_t) * (size_t)X->rank))
      return AIT_E_UNSUPPORTED;
    c->z = Z->data;
  }
  if (!transpose && ait_act_parse(n, &c->act) != AIT_OK) {
    ait_err_clear();
    return AIT_E_UNSUPPORTED;
  }
  c->x = X->data;
  c->w = W->data;
  c->b = B ? B->data : NULL;
  return AIT_OK;
}

/* The output tensor [N, M, out...] of rank `rank`. */
static ait_status make_output(nat_run *r, nat_cv *c, int rank) {
  int64_t od[AIT_MAX_RANK] = {c->N, c->M};
  memcpy(od + 2, c->out + (5 - rank), sizeof(int64_t) * (size_t)(rank - 2));
  ait_tensor *Y;
  AIT_TRY(nat_output(r, 0, AIT_FLOAT32, rank, od, &Y));
  c->y = Y->data;
  return AIT_OK;
}

/* ---- the GEMM path ----------------------------------------------------------- */

typedef struct gemm_job {
  const nat_cv *c;
  nat_gemm_fn fn;
  _Atomic long long *calls;
  float *col; /* per thread: kdim x pb floats; NULL when pointwise */
  int64_t kdim, pb, npb, mb, nmb;
} gemm_job;

/* Columns [p0, p1) of the column matrix of image-and-group input x into
 * col (row stride p1 - p0): row (ch, kd, kh, kw), column p = output pixel. */
static void im2col_block(const nat_cv *c, const float *x, int64_t p0, int64_t p1, float *col) {
  const int64_t OH = c->out[1], OW = c->out[2], H = c->in[1], W = c->in[2], np = p1 - p0;
  float *dst = col;
  for (int64_t ch = 0; ch < c->Cg; ch++) {
    const float *xc = x + ch * c->in_n;
    for (int64_t kd = 0; kd < c->k[0]; kd++)
      for (int64_t kh = 0; kh < c->k[1]; kh++)
        for (int64_t kw = 0; kw < c->k[2]; kw++, dst += np) {
          int64_t off = kw * c->d[2] - c->pb[2], lo, hi;
          nat_cv_range(OW, c->s[2], off, W, &lo, &hi);
          for (int64_t p = p0; p < p1;) {
            int64_t ow = p % OW, oh = (p / OW) % OH, od = p / (OW * OH);
            int64_t len = OW - ow < p1 - p ? OW - ow : p1 - p, e = ow + len;
            float *o = dst + (p - p0) - ow; /* indexed by ow */
            int64_t id = od * c->s[0] - c->pb[0] + kd * c->d[0];
            int64_t ih = oh * c->s[1] - c->pb[1] + kh * c->d[1];
            p += len;
            if (id < 0 || id >= c->in[0] || ih < 0 || ih >= H) {
              memset(o + ow, 0, sizeof(float) * (size_t)len);
              continue;
            }
            const float *src = xc + (id * H + ih) * W + off;
            int64_t a = lo > ow ? lo : ow, b = hi < e ? hi : e;
            if (b < a) b = a;
            for (int64_t q = ow; q < a; q++)
              o[q] = 0.0f;
            if (c->s[2] == 1)
              memcpy(o + a, src + a, sizeof(float) * (size_t)(b - a));
            else
              for (int64_t q = a; q < b; q++)
                o[q] = src[q * c->s[2]];
            for (int64_t q = b; q < e; q++)
              o[q] = 0.0f;
          }
        }
  }
}

static void gemm_task(void *arg, int64_t t, int tid) {
  const gemm_job *j = arg;
  const nat_cv *c = j->c;
  int64_t mbi = t % j->nmb, pbi = (t / j->nmb) % j->npb, ng = t / (j->nmb * j->npb);
  int64_t n = ng / c->group, g = ng % c->group;
  int64_t p0 = pbi * j->pb, p1 = p0 + j->pb < c->out_n ? p0 + j->pb : c->out_n;
  int64_t m0 = mbi * j->mb, m1 = m0 + j->mb < c->Mg ? m0 + j->mb : c->Mg;
  if (m0 >= m1 || p0 >= p1) return;
  const float *xg = c->x + (n * c->C + g * c->Cg) * c->in_n, *bm;
  int64_t ldb;
  if (j->col) {
    float *col = j->col + (int64_t)tid * j->kdim * j->pb;
    im2col_block(c, xg, p0, p1, col);
    bm = col, ldb = p1 - p0;
  } else {
    bm = xg + p0, ldb = c->in_n;
  }
  int64_t y0 = (n * c->M + g * c->Mg + m0) * c->out_n + p0;
  float *y = c->y + y0;
  j->fn(false, false, m1 - m0, p1 - p0, j->kdim, 1.0f, c->w + (g * c->Mg + m0) * j->kdim, j->kdim,
        bm, ldb, y, c->out_n);
  if (j->calls) (*j->calls)++;
  nat_epilogue e;
  memset(&e, 0, sizeof e);
  e.row_bias = c->b ? c->b + g * c->Mg + m0 : NULL;
  e.z = c->z ? c->z + y0 : NULL;
  e.ldz = c->out_n;
  e.act = c->act;
  nat_epilogue_apply(&e, y, c->out_n, 0, m1 - m0, 0, p1 - p0);
}

/* Floats of one task's im2col block: 1 MB, about an L2 (smaller blocks
 * make OpenBLAS pack W_g again for every few columns). */
#define COL_BLOCK_FLOATS (1 << 18)

static ait_status conv_gemm(nat_run *r, const nat_cv *c) {
  gemm_job j;
  memset(&j, 0, sizeof j);
  j.c = c;
  j.fn = nat_run_gemm(r);
  if (!j.fn) nat_gemm_provider("openblas", &j.fn);
  j.calls = nat_run_gemm_calls(r);
  j.kdim = c->Cg * c->k_n;
  bool pointwise = c->k_n == 1 && c->s[0] * c->s[1] * c->s[2] == 1 && !c->pb[0] && !c->pb[1] &&
                   !c->pb[2] && c->out_n == c->in_n;
  int threads = nat_run_threads(r);
  if (threads < 1) threads = 1;
  double macs = (double)c->N * (double)c->M * (double)c->out_n * (double)j.kdim;
  bool serial = threads == 1 || macs < NAT_PAR_MIN_MACS;
  /* pixel blocks: the im2col block bounded, at least 64 columns for the
   * SGEMM; no split of a small output */
  int64_t pb = COL_BLOCK_FLOATS / (j.kdim > 0 ? j.kdim : 1);
  pb = pb < 128 ? 128 : (pb + 15) / 16 * 16;
  if (pb >= c->out_n) pb = c->out_n;
  j.pb = pb;
  j.npb = (c->out_n + pb - 1) / pb;
  /* channel blocks where images x groups x pixel blocks leave threads idle */
  int64_t tasks = c->N * c->group * j.npb, nmb = 1;
  if (!serial && tasks < 2 * threads && c->Mg >= 64) {
    nmb = (2 * threads + tasks - 1) / tasks;
    if (nmb > c->Mg / 32) nmb = c->Mg / 32;
  }
  j.mb = (c->Mg + nmb - 1) / nmb;
  if (j.mb < c->Mg) j.mb = (j.mb + 7) / 8 * 8;
  j.nmb = (c->Mg + j.mb - 1) / j.mb;
  if (!pointwise) {
    int slots = serial ? 1 : nat_pool_threads(nat_run_pool(r));
    j.col = nat_scratch(r, (int64_t)sizeof(float) * slots * j.kdim * j.pb);
    if (!j.col) return AIT_E_NOMEM;
  }
  nat_pool_run(serial ? NULL : nat_run_pool(r), tasks * j.nmb, gemm_task, &j);
  return AIT_OK;
}

ait_status nat_k_conv(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  nat_cv c;
  if (setup(n, in, n_in, false, &c) != AIT_OK) return decline();
  AIT_TRY(make_output(r, &c, in[0]->rank));
  if (c.N * c.M * c.out_n == 0) return AIT_OK;
  if (c.Cg == 1 && c.group > 1) return nat_conv_depthwise(r, &c);
  if (nat_conv_grouped_fits(&c)) return nat_conv_grouped(r, &c);
  return conv_gemm(r, &c);
}

ait_status nat_k_convt(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  nat_cv c;
  if (setup(n, in, n_in, true, &c) != AIT_OK) return decline();
  AIT_TRY(make_output(r, &c, in[0]->rank));
  if (c.N * c.M * c.out_n == 0) return AIT_OK;
  return nat_convt_run(r, &c);
}
