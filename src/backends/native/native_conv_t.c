/* ConvTranspose in float32, 1-D to 3-D, any group, stride, dilation, pads
 * and output_padding (output_shape and auto_pad through nn_win_convt).
 *
 * Per image and group, blocks of input pixels: col = W_g^T . X_g[:, block]
 * ([Mg * k, pb], bounded), then col2im adds every column into the output
 * pixels it reaches. With at least as many (image, group) pairs as threads
 * each pair is one task (its own output channels, so no two tasks write
 * the same pixel); with fewer, the pairs go one after the other, each
 * block's product on the whole pool and its col2im split by output
 * channel. The bias goes on last. */
#include <string.h>

#include "backends/native/native_conv.h"

typedef struct ct_job {
  const nat_cv *c;
  nat_gemm_fn fn;
  _Atomic long long *calls;
  float *col; /* per thread (per pair) or shared (per block), Mg k x pb */
  int64_t pb, npb, rows;
  /* the shared-block pass */
  int64_t n, g, p0, p1;
} ct_job;

/* Output channels [m0, m1) of image n, group g: add col (row stride p1 - p0,
 * rows (m, kd, kh, kw)) for input pixels [p0, p1). */
static void col2im_block(const nat_cv *c, const float *col, int64_t n, int64_t g, int64_t p0,
                         int64_t p1, int64_t m0, int64_t m1) {
  const int64_t H = c->in[1], W = c->in[2], OH = c->out[1], OW = c->out[2], np = p1 - p0;
  for (int64_t m = m0; m < m1; m++) {
    float *ym = c->y + (n * c->M + g * c->Mg + m) * c->out_n;
    const float *src = col + m * c->k_n * np;
    for (int64_t kd = 0; kd < c->k[0]; kd++)
      for (int64_t kh = 0; kh < c->k[1]; kh++)
        for (int64_t kw = 0; kw < c->k[2]; kw++, src += np) {
          int64_t off = kw * c->d[2] - c->pb[2], lo, hi;
          nat_cv_range(W, c->s[2], off, OW, &lo, &hi);
          for (int64_t p = p0; p < p1;) {
            int64_t iw = p % W, ih = (p / W) % H, id = p / (W * H);
            int64_t len = W - iw < p1 - p ? W - iw : p1 - p, e = iw + len;
            const float *s = src + (p - p0) - iw; /* indexed by iw */
            int64_t od = id * c->s[0] - c->pb[0] + kd * c->d[0];
            int64_t oh = ih * c->s[1] - c->pb[1] + kh * c->d[1];
            p += len;
            if (od < 0 || od >= c->out[0] || oh < 0 || oh >= OH) continue;
            float *yr = ym + (od * OH + oh) * OW + off;
            int64_t a = lo > iw ? lo : iw, b = hi < e ? hi : e;
            if (c->s[2] == 1)
              for (int64_t q = a; q < b; q++)
                yr[q] += s[q];
            else
              for (int64_t q = a; q < b; q++)
                yr[q * c->s[2]] += s[q];
          }
        }
  }
}

/* col = W_g^T . X_g[:, p0:p1] on the calling thread. */
static void product(const ct_job *j, float *col, int64_t n, int64_t g, int64_t p0, int64_t p1) {
  const nat_cv *c = j->c;
  j->fn(true, false, j->rows, p1 - p0, c->Cg, 1.0f, c->w + g * c->Cg * j->rows, j->rows,
        c->x + (n * c->C + g * c->Cg) * c->in_n + p0, c->in_n, col, p1 - p0);
  if (j->calls) (*j->calls)++;
}

static void pair_task(void *arg, int64_t t, int tid) {
  const ct_job *j = arg;
  const nat_cv *c = j->c;
  int64_t n = t / c->group, g = t % c->group;
  float *col = j->col + (int64_t)tid * j->rows * j->pb;
  for (int64_t p0 = 0; p0 < c->in_n; p0 += j->pb) {
    int64_t p1 = p0 + j->pb < c->in_n ? p0 + j->pb : c->in_n;
    product(j, col, n, g, p0, p1);
    col2im_block(c, col, n, g, p0, p1, 0, c->Mg);
  }
}

static void channel_task(void *arg, int64_t m, int tid) {
  const ct_job *j = arg;
  col2im_block(j->c, j->col, j->n, j->g, j->p0, j->p1, m, m + 1);
}

static void bias_task(void *arg, int64_t t, int tid) {
  const nat_cv *c = ((const ct_job *)arg)->c;
  float b = c->b[t % c->M], *y = c->y + t * c->out_n;
  for (int64_t q = 0; q < c->out_n; q++)
    y[q] += b;
}

/* Floats of one im2col-sized block of col. */
#define CT_BLOCK_FLOATS 65536

ait_status nat_convt_run(nat_run *r, const nat_cv *c) {
  ct_job j;
  memset(&j, 0, sizeof j);
  j.c = c;
  j.fn = nat_run_gemm(r);
  if (!j.fn) nat_gemm_provider("openblas", &j.fn);
  j.calls = nat_run_gemm_calls(r);
  j.rows = c->Mg * c->k_n;
  int64_t pb = CT_BLOCK_FLOATS / (j.rows > 0 ? j.rows : 1);
  pb = pb < 64 ? 64 : (pb + 15) / 16 * 16;
  j.pb = pb < c->in_n ? pb : c->in_n;
  memset(c->y, 0, sizeof(float) * (size_t)(c->N * c->M * c->out_n));
  if (c->in_n > 0 && c->Cg > 0) {
    nat_pool *pool = nat_run_pool(r);
    int threads = nat_pool_threads(pool);
    double macs = (double)c->N * (double)c->C * (double)j.rows * (double)c->in_n;
    int64_t pairs = c->N * c->group;
    if (threads <= 1 || macs < NAT_PAR_MIN_MACS || pairs >= threads) {
      if (threads <= 1 || macs < NAT_PAR_MIN_MACS) pool = NULL, threads = 1;
      j.col = nat_scratch(r, (int64_t)sizeof(float) * threads * j.rows * j.pb);
      if (!j.col) return AIT_E_NOMEM;
      nat_pool_run(pool, pairs, pair_task, &j);
    } else {
      /* one block for the whole pool: wider, so its product splits */
      int64_t wide = (int64_t)threads * CT_BLOCK_FLOATS / (j.rows > 0 ? j.rows : 1);
      if (wide > j.pb) j.pb = wide < c->in_n ? (wide + 15) / 16 * 16 : c->in_n;
      if (j.pb > c->in_n) j.pb = c->in_n;
      j.col = nat_scratch(r, (int64_t)sizeof(float) * j.rows * j.pb);
      if (!j.col) return AIT_E_NOMEM;
      for (j.n = 0; j.n < c->N; j.n++)
        for (j.g = 0; j.g < c->group; j.g++)
          for (j.p0 = 0; j.p0 < c->in_n; j.p0 += j.pb) {
            j.p1 = j.p0 + j.pb < c->in_n ? j.p0 + j.pb : c->in_n;
            nat_sgemm(r, true, false, j.rows, j.p1 - j.p0, c->Cg, 1.0f, c->w + j.g * c->Cg * j.rows,
                      j.rows, c->x + (j.n * c->C + j.g * c->Cg) * c->in_n + j.p0, c->in_n, j.col,
                      j.p1 - j.p0, NULL);
            nat_pool_run(pool, c->Mg, channel_task, &j);
          }
    }
  }
  if (c->b)
    nat_pool_run(c->N * c->M * c->out_n < 65536 ? NULL : nat_run_pool(r), c->N * c->M, bias_task,
                 &j);
  return AIT_OK;
}
