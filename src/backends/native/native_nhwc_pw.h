/* The pointwise kernels' panels of pixels (native_nhwc256.c,
 * native_nhwc512.c): a panel of X (rows x K floats) stays in L2 while every
 * channel block's weights stream past it once. */
#ifndef AIT_NATIVE_NHWC_PW_H
#define AIT_NATIVE_NHWC_PW_H

#include <stdint.h>

/* Pixel rows per panel for P pixels of K channels in tiles of `rows`: at
 * most `bytes` of X a panel (at least one tile), the panels as even as
 * whole tiles make them. A remnant panel streams every weight again for
 * its few pixels: ResNeXt's 7x7 layers of 2048 channels made a panel of 48
 * pixels and one of 1. */
static inline int64_t nat_pw_panel(int64_t P, int64_t K, int rows, int64_t bytes) {
  int64_t panel = bytes / (4 * (K > 0 ? K : 1)) / rows * rows;
  if (panel < rows) panel = rows;
  if (P <= panel) return P > 0 ? P : 1;
  int64_t n = (P + panel - 1) / panel, per = (P + n - 1) / n;
  return (per + rows - 1) / rows * rows;
}

/* Where a tile's k loop prefetches into L2 (one line per k, wn + k * *wns):
 * the next block of packed weights (`next`, K x bw floats; NULL: none),
 * its lines split over the block's first tiles (tile t takes lines
 * [t K, (t + 1) K)), so that a block of weights read once a run (the 7x7
 * layers' 4-8 MB, from DRAM) arrives while the current one is in use; the
 * other tiles prefetch the current block `ahead` rows on (w, row stride
 * ldw), which is in cache by then. */
static inline const float *nat_pw_next(const float *next, const float *w, int64_t K, int64_t bw,
                                       int64_t ldw, int64_t t, int ahead, int64_t *wns) {
  if (next && t * 16 < bw) {
    *wns = 16;
    return next + t * K * 16;
  }
  *wns = ldw;
  return w + ahead * ldw;
}

#endif
