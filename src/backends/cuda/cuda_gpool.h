/* Host-side choice of the global pooling kernels' split (cuk_global_pool,
 * cuda_nn.cu), plain C without CUDA headers so that tests check it on the
 * CPU. */
#ifndef AIT_BACKENDS_CUDA_GPOOL_H
#define AIT_BACKENDS_CUDA_GPOOL_H

#include <stdint.h>

/* Threads of a block of either kernel. */
#define CUK_GP_THREADS 256

/* Channels-last: the lanes of a block's row, over `units` channel vectors
 * (C / 8 for 16-bit storage with C % 8 == 0, C / 4 for float32 with
 * C % 4 == 0, else C): the smallest power of two >= units, at most 32; the
 * block's CUK_GP_THREADS / tile rows split the positions. */
static inline int cuk_gpool_tile(int64_t units) {
  int t = 32;
  while (t > 1 && t / 2 >= units)
    t /= 2;
  return t;
}

/* Parts HW is split into (1: one kernel, no partials). The workers without
 * a split are blocks of one tile of channels of one image (nhwc) or warps
 * of one plane (NCHW); where there are fewer than a quarter of what the
 * GPU holds at 4 blocks (32 warps) a multiprocessor, split so there are
 * about that many, each part at least 4 passes of the worker, at most 256
 * parts, the partials (a float per image, channel and part) fitting the
 * workspace. EfficientNet-B1's 16 x 120 x 120 map at batch 1 was one block
 * of 8 warps walking 14,400 positions: 0.43 ms. n_sm 0 (a dry state): 1. */
static inline int cuk_gpool_splits(int nhwc, int64_t N, int64_t C, int64_t HW, int64_t units,
                                   int n_sm, int64_t ws_bytes) {
  if (n_sm <= 0 || N <= 0 || C <= 0 || HW <= 0) return 1;
  int64_t workers, per_pass, target;
  if (nhwc) {
    int tile = cuk_gpool_tile(units);
    workers = N * ((units + tile - 1) / tile);
    per_pass = CUK_GP_THREADS / tile;
    target = 4 * (int64_t)n_sm;
  } else {
    workers = N * C;
    per_pass = 32;
    target = 32 * (int64_t)n_sm;
  }
  if (4 * workers >= target) return 1;
  int64_t want = (target + workers - 1) / workers, most = HW / (4 * per_pass);
  if (want > 256) want = 256;
  if (want > most) want = most;
  if (want < 2) return 1;
  if (N * C * want * (int64_t)sizeof(float) > ws_bytes) return 1;
  return (int)want;
}

#endif
