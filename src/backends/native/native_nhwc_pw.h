/* The pointwise kernels' panels of pixels (native_nhwc256.c,
 * native_nhwc512.c): a panel of X (rows x K floats) stays in L2 while every
 * channel block's weights stream past it once. */
#ifndef AIT_NATIVE_NHWC_PW_H
#define AIT_NATIVE_NHWC_PW_H

#include <stdint.h>

/* Weights (K x cols floats) up to which they stay in L2 while each tile of
 * pixels runs every column block (a panel of one tile): its output rows
 * are then written whole, one after the other, and the residual read so,
 * where a panel's column block after column block wrote and read them M
 * floats apart. */
#define NAT_PW_W_BYTES (512 * 1024)

/* Pixel rows per panel for P pixels of K channels in tiles of `rows`: at
 * most `bytes` of X a panel (at least one tile), the panels as even as
 * whole tiles make them. A remnant panel streams every weight again for
 * its few pixels: ResNeXt's 7x7 layers of 2048 channels made a panel of 48
 * pixels and one of 1. */
static inline int64_t nat_pw_panel(int64_t P, int64_t K, int64_t cols, int rows, int64_t bytes) {
  if (K * cols * 4 <= NAT_PW_W_BYTES) return rows;
  int64_t panel = bytes / (4 * (K > 0 ? K : 1)) / rows * rows;
  if (panel < rows) panel = rows;
  if (P <= panel) return P > 0 ? P : 1;
  int64_t n = (P + panel - 1) / panel, per = (P + n - 1) / n;
  return (per + rows - 1) / rows * rows;
}

/* What a tile's k loop prefetches into L2, one line per k (wn + 16 k; NULL:
 * nothing): the next block of packed weights (`next`, K x bw floats; NULL:
 * none), its lines split over the block's first tiles (tile t takes lines
 * [t K, (t + 1) K)), so that a block of weights read once a run (the 7x7
 * layers' 4-8 MB, from DRAM) arrives while the current one is in use. The
 * other tiles' loops carry no prefetch (the test is hoisted out of them). */
static inline const float *nat_pw_next(const float *next, int64_t K, int64_t bw, int64_t t) {
  return next && t * 16 < bw ? next + t * K * 16 : NULL;
}

/* The output rows (y, and the residual z when not NULL; rows `ld` floats
 * apart, n floats each) of the next tile, prefetched while the current one
 * runs: a column block's tiles step down its rows M floats apart, a stride
 * the hardware prefetchers do not follow, so that each row's store and
 * residual load missed to L3 or DRAM (the 56x56 and 28x28 layers' outputs
 * of 3-25 MB: ResNeXt's expanding 1x1 convs with a residual). */
static inline void nat_pw_prefetch_out(float *y, const float *z, int64_t ld, int64_t rows,
                                       int64_t n) {
  for (int64_t r = 0; r < rows; r++) {
    for (int64_t f = 0; f < n; f += 16) {
      __builtin_prefetch(y + r * ld + f, 1, 3);
      if (z) __builtin_prefetch(z + r * ld + f, 0, 3);
    }
    __builtin_prefetch(y + r * ld + n - 1, 1, 3); /* a row that ends in one more line */
    if (z) __builtin_prefetch(z + r * ld + n - 1, 0, 3);
  }
}

#endif
