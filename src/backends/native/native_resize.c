/* Resize (opset 11+) of a 4-D float32 input over H and W, nearest or
 * linear, every coordinate transformation but tf_crop_and_resize: the taps
 * come from the reference's own planning (img_resize2d_plan), then per
 * plane and output row the (one or two) input rows are blended into a row
 * of W (vectorised along the row), and each output column takes its one or
 * two taps from it. Planes over the pool. The reference resizes axis after
 * axis in double on a copy of the whole tensor, a new output each run;
 * this computes in float into the arena (results differ by rounding). */
#include <stdlib.h>
#include <string.h>

#include "backends/native/native.h"
#include "ops/image_impl.h"

typedef struct rs_job {
  const img_resize2d *p;
  const float *x;
  float *y, *scratch; /* per thread: one row of W floats */
  int64_t H, W, planes, per_task, row;
} rs_job;

NAT_CLONES static void rs_task(void *arg, int64_t t, int tid) {
  const rs_job *j = arg;
  const img_resize2d *p = j->p;
  int64_t OH = p->out[2], OW = p->out[3], W = j->W, nt = p->ntap;
  float *tmp = j->scratch + tid * j->row;
  for (int64_t pl = t * j->per_task; pl < (t + 1) * j->per_task && pl < j->planes; pl++) {
    const float *x = j->x + pl * j->H * W;
    float *y = j->y + pl * OH * OW;
    for (int64_t oh = 0; oh < OH; oh++, y += OW) {
      const float *r0 = x + p->ih[oh * nt] * W, *src = r0;
      if (nt == 2) {
        const float *r1 = x + p->ih[oh * nt + 1] * W;
        float a = p->wh[oh * nt], b = p->wh[oh * nt + 1];
        for (int64_t i = 0; i < W; i++)
          tmp[i] = a * r0[i] + b * r1[i];
        src = tmp;
      }
      if (nt == 1) {
        for (int64_t ow = 0; ow < OW; ow++)
          y[ow] = src[p->iw[ow]];
      } else {
        for (int64_t ow = 0; ow < OW; ow++)
          y[ow] = p->ww[2 * ow] * src[p->iw[2 * ow]] + p->ww[2 * ow + 1] * src[p->iw[2 * ow + 1]];
      }
    }
  }
}

static _Atomic long long resize_runs;
long long nat_resize_runs(void) { return resize_runs; }

ait_status nat_k_resize(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  const ait_tensor *X = n_in > 0 ? in[0] : NULL;
  if (!X || X->dtype != AIT_FLOAT32 || X->rank != 4) return AIT_E_UNSUPPORTED;
  img_resize2d p;
  ait_status st = img_resize2d_plan(n, in, n_in, &p);
  if (st == AIT_E_UNSUPPORTED) return st;
  AIT_TRY(st);
  ait_tensor *Y = NULL;
  st = nat_output(r, 0, AIT_FLOAT32, 4, p.out, &Y);
  rs_job j = {&p,
              X->data,
              Y ? Y->data : NULL,
              NULL,
              X->dims[2],
              X->dims[3],
              X->dims[0] * X->dims[1],
              0,
              (X->dims[3] + 15) / 16 * 16};
  if (st == AIT_OK && j.planes * p.out[2] * p.out[3] > 0 && X->dims[2] * X->dims[3] > 0) {
    nat_pool *pool = nat_run_pool(r);
    int slots = pool ? nat_pool_threads(pool) : 1;
    j.scratch = nat_scratch(r, (int64_t)sizeof(float) * (slots < 1 ? 1 : slots) * j.row);
    if (!j.scratch) st = AIT_E_NOMEM;
    if (st == AIT_OK) {
      j.per_task = nat_chunk(r, j.planes, 16384 / (p.out[2] * p.out[3]) + 1);
      nat_pool_run(pool, (j.planes + j.per_task - 1) / j.per_task, rs_task, &j);
    }
  }
  img_resize2d_free(&p);
  if (st == AIT_OK) resize_runs++;
  return st;
}
