/* Resize (opset 11+) of a 4-D float32 input over H and W, nearest or
 * linear, every coordinate transformation but tf_crop_and_resize: the taps
 * come from the reference's own planning (img_resize2d_plan), then per
 * plane and output row the (one or two) input rows are blended into a row
 * of W (vectorised along the row), and each output column takes its one or
 * two taps from it. Where H grows (OH > H: segmentation heads, FPN
 * upsampling) the columns go first instead: each input row's OW columns
 * are gathered once into a plane of H x OW, and every output row is then a
 * copy or a blend of two of its rows, which vectorises (DeepLabV3's last
 * Resize, 14x14 -> 224x224: the taps were gathered for 16x fewer rows). Planes over the pool. The
 * reference resizes axis after axis in double on a copy of the whole tensor, a new output each run;
 * this computes in float into the arena (results differ by rounding). */
#include <stdlib.h>
#include <string.h>

#include "backends/native/native.h"
#include "ops/image_impl.h"

typedef struct rs_job {
  const img_resize2d *p;
  const float *x;
  float *y, *scratch; /* per thread: one row of W floats, or H x OW (cols_first) */
  int64_t H, W, planes, per_task, row;
  bool cols_first;
} rs_job;

/* Output columns of one row x (W floats) into h (OW floats). */
static inline void rs_cols(const img_resize2d *p, const float *x, float *h) {
  int64_t OW = p->out[3];
  if (p->ntap == 1) {
    for (int64_t ow = 0; ow < OW; ow++)
      h[ow] = x[p->iw[ow]];
  } else {
    for (int64_t ow = 0; ow < OW; ow++)
      h[ow] = p->ww[2 * ow] * x[p->iw[2 * ow]] + p->ww[2 * ow + 1] * x[p->iw[2 * ow + 1]];
  }
}

NAT_CLONES static void rs_task(void *arg, int64_t t, int tid) {
  const rs_job *j = arg;
  const img_resize2d *p = j->p;
  int64_t OH = p->out[2], OW = p->out[3], W = j->W, nt = p->ntap;
  float *tmp = j->scratch + tid * j->row;
  for (int64_t pl = t * j->per_task; pl < (t + 1) * j->per_task && pl < j->planes; pl++) {
    const float *x = j->x + pl * j->H * W;
    float *y = j->y + pl * OH * OW;
    if (j->cols_first) {
      for (int64_t ih = 0; ih < j->H; ih++)
        rs_cols(p, x + ih * W, tmp + ih * OW);
      for (int64_t oh = 0; oh < OH; oh++, y += OW) {
        const float *h0 = tmp + p->ih[oh * nt] * OW;
        if (nt == 1) {
          memcpy(y, h0, sizeof(float) * (size_t)OW);
        } else {
          const float *h1 = tmp + p->ih[oh * nt + 1] * OW;
          float a = p->wh[oh * nt], b = p->wh[oh * nt + 1];
          for (int64_t ow = 0; ow < OW; ow++)
            y[ow] = a * h0[ow] + b * h1[ow];
        }
      }
      continue;
    }
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
              (X->dims[3] + 15) / 16 * 16,
              false};
  /* columns first where rows grow, while the H x OW plane stays small */
  if (p.out[2] > X->dims[2] && X->dims[2] * p.out[3] <= (1 << 18)) {
    j.cols_first = true;
    j.row = (X->dims[2] * p.out[3] + 15) / 16 * 16;
  }
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
