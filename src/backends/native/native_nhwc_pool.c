/* FusedPoolNhwc (the layout pass's MaxPool / AveragePool in channels-last
 * layout): per output pixel, the window's taps inside the input, each a
 * row of C contiguous floats, so the max or the sum runs along the
 * channels (the AVX2 clone of the loops: eight a vector). Tasks over
 * output rows. Max as the reference takes it: the first tap, then each
 * tap greater than the running value (NaN kept only when first); averages
 * sum in float and divide by the count (count_include_pad: the taps inside
 * the explicitly padded input), as the reference's double sum up to
 * rounding. */
#include <math.h>
#include <string.h>

#include "backends/native/native.h"
#include "ops/fused_impl.h"
#include "ops/nn_impl.h"

typedef struct pooln_job {
  const float *x;
  float *y;
  nn_win w;
  int64_t C, per_task, rows;
  bool max, include_pad;
} pooln_job;

NAT_CLONES static void pooln_task(void *arg, int64_t t, int tid) {
  const pooln_job *j = arg;
  const nn_win *w = &j->w;
  int64_t H = w->in[0], W = w->in[1], OH = w->out[0], OW = w->out[1], C = j->C;
  for (int64_t r = t * j->per_task; r < (t + 1) * j->per_task && r < j->rows; r++) {
    int64_t n = r / OH, oh = r % OH, h0 = oh * w->s[0] - w->pb[0];
    int64_t i0 = nn_win_taps_below(h0, w->d[0], w->k[0], 0);
    int64_t i1 = nn_win_taps_below(h0, w->d[0], w->k[0], H);
    int64_t ph = nn_win_taps_below(h0, w->d[0], w->k[0], H + w->pe[0]) -
                 nn_win_taps_below(h0, w->d[0], w->k[0], -w->pb[0]);
    const float *xn = j->x + n * H * W * C;
    for (int64_t ow = 0; ow < OW; ow++) {
      float *y = j->y + (r * OW + ow) * C;
      int64_t w0 = ow * w->s[1] - w->pb[1];
      int64_t j0 = nn_win_taps_below(w0, w->d[1], w->k[1], 0);
      int64_t j1 = nn_win_taps_below(w0, w->d[1], w->k[1], W);
      int64_t pw = nn_win_taps_below(w0, w->d[1], w->k[1], W + w->pe[1]) -
                   nn_win_taps_below(w0, w->d[1], w->k[1], -w->pb[1]);
      int64_t count = (i1 > i0 ? i1 - i0 : 0) * (j1 > j0 ? j1 - j0 : 0);
      if (count == 0) { /* a window wholly in the padding: the reference's values */
        float v =
            j->max ? -INFINITY
                   : (float)(0.0 /
                             (double)(j->include_pad ? (ph > 0 ? ph : 0) * (pw > 0 ? pw : 0) : 0));
        for (int64_t c = 0; c < C; c++)
          y[c] = v;
        continue;
      }
      bool first = true;
      for (int64_t ki = i0; ki < i1; ki++) {
        const float *xr = xn + (h0 + ki * w->d[0]) * W * C;
        for (int64_t kj = j0; kj < j1; kj++) {
          const float *xp = xr + (w0 + kj * w->d[1]) * C;
          if (first) {
            memcpy(y, xp, sizeof(float) * (size_t)C);
            first = false;
          } else if (j->max) {
            for (int64_t c = 0; c < C; c++)
              y[c] = xp[c] > y[c] ? xp[c] : y[c];
          } else {
            for (int64_t c = 0; c < C; c++)
              y[c] += xp[c];
          }
        }
      }
      if (!j->max) {
        float inv = (float)(1.0 / (double)(j->include_pad ? ph * pw : count));
        for (int64_t c = 0; c < C; c++)
          y[c] *= inv;
      }
    }
  }
}

ait_status nat_k_pool_nhwc(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  const ait_tensor *X = n_in > 0 ? in[0] : NULL;
  ait_node pn;
  if (!X || X->dtype != AIT_FLOAT32 || X->rank != 4 || !ait_fused_pool_node(n, &pn))
    return AIT_E_UNSUPPORTED;
  pooln_job j;
  memset(&j, 0, sizeof j);
  j.max = !strcmp(pn.op_type, "MaxPool");
  j.include_pad = !j.max && ait_attr_int(n, "count_include_pad", 0) != 0;
  int64_t sp[2] = {X->dims[1], X->dims[2]};
  if (nn_win_conv(&pn, 2, sp, NULL, ait_attr_int(n, "ceil_mode", 0) != 0,
                  nn_pool_has_dilations(&pn), &j.w) != AIT_OK) {
    ait_err_clear();
    return AIT_E_UNSUPPORTED;
  }
  int64_t od[4] = {X->dims[0], j.w.out[0], j.w.out[1], X->dims[3]};
  ait_tensor *Y;
  AIT_TRY(nat_output(r, 0, AIT_FLOAT32, 4, od, &Y));
  j.x = X->data;
  j.y = Y->data;
  j.C = od[3];
  j.rows = od[0] * od[1];
  if (j.rows * od[2] * j.C == 0) return AIT_OK;
  /* rows of at least ~16k floats of output a task */
  j.per_task = nat_chunk(r, j.rows, 16384 / (od[2] * j.C) + 1);
  nat_pool_run(nat_run_pool(r), (j.rows + j.per_task - 1) / j.per_task, pooln_task, &j);
  return AIT_OK;
}
