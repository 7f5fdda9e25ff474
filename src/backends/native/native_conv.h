/* Shared by native_conv*.c: the geometry of one Conv / FusedConv /
 * ConvTranspose over 1, 2 or 3 spatial dims, always held as 3 (depth,
 * height, width; the missing leading dims are 1 with kernel 1, stride 1,
 * no padding), so every kernel has one shape of loop. */
#ifndef AIT_BACKENDS_NATIVE_CONV_H
#define AIT_BACKENDS_NATIVE_CONV_H

#include "backends/native/native.h"

typedef struct nat_cv {
  int64_t N, C, M, group, Cg, Mg; /* batch, in/out channels, groups, per group */
  int64_t in[3], out[3], k[3], s[3], d[3], pb[3];
  int64_t in_n, out_n, k_n;   /* spatial element counts */
  const float *x, *w, *b, *z; /* z: FusedConv's residual, or NULL */
  float *y;
  ait_act act;
} nat_cv;

/* [lo, hi) of outputs o with 0 <= o*s + off < n. */
static inline void nat_cv_range(int64_t n_out, int64_t s, int64_t off, int64_t n, int64_t *lo,
                                int64_t *hi) {
  int64_t l = off >= 0 ? 0 : (-off + s - 1) / s;
  int64_t h = n - off <= 0 ? 0 : (n - off - 1) / s + 1;
  *lo = l < n_out ? l : n_out;
  *hi = h < n_out ? h : n_out;
  if (*hi < *lo) *hi = *lo;
}

/* The zero-padded phase planes of native_conv_dw.c (see there), for
 * direct loops that read every tap at a fixed offset on a virtual output
 * grid of Lq columns: F outputs (OH * Lq rounded up to `step`) per output
 * depth slice; phase planes of PS floats, `plane` floats per input channel. */
typedef struct nat_cv_grid {
  int64_t Hq, Lq, PS, F, plane;
} nat_cv_grid;
void nat_cv_grid_of(const nat_cv *c, int64_t step, nat_cv_grid *q);
/* Input channel plane x (all depth slices) into buf (q->plane floats). */
void nat_cv_phases(const nat_cv *c, const nat_cv_grid *q, const float *x, float *buf);

/* Depthwise (one input channel per group, any channel multiplier): direct
 * loops, images x channels over the pool (native_conv_dw.c). */
ait_status nat_conv_depthwise(nat_run *r, const nat_cv *c);
/* Grouped, 2 to 64 channels a group in and out: direct register tiles on
 * phase planes, weights packed once per node (native_conv_grp.c). */
bool nat_conv_grouped_fits(const nat_cv *c);
ait_status nat_conv_grouped(nat_run *r, const nat_cv *c);
/* ConvTranspose: W^T X per group and block of input pixels, then col2im
 * (native_conv_t.c). */
ait_status nat_convt_run(nat_run *r, const nat_cv *c);

#endif
