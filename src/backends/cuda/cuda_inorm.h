/* Host-side choice of the channels-last instance norm's split
 * (cuk_instnorm_nhwc, cuda_pad.cu), plain C without CUDA headers so that
 * tests check it on the CPU. */
#ifndef AIT_BACKENDS_CUDA_INORM_H
#define AIT_BACKENDS_CUDA_INORM_H

#include <stdint.h>

/* Rows of threads of a block (its 32 lanes are 32 channels). */
#define CUK_IN_ROWS 16

/* Slabs L is split into (1: one kernel): only where the grid of
 * N x ceil(C / 32) blocks is under two per multiprocessor, about four
 * blocks a multiprocessor then, each slab at least 4 rows a thread, at
 * most 64, and the partials (3 floats per n, slab and channel) fitting the
 * workspace. n_sm 0 (a dry state): 1. */
static inline int cuk_instnorm_nhwc_slabs(int64_t N, int64_t L, int64_t C, int n_sm,
                                          int64_t ws_bytes) {
  int64_t blocks = N * ((C + 31) / 32);
  if (n_sm <= 0 || blocks <= 0 || blocks >= 2 * (int64_t)n_sm) return 1;
  int64_t want = (4 * (int64_t)n_sm + blocks - 1) / blocks, most = L / (4 * CUK_IN_ROWS);
  if (want > 64) want = 64;
  if (want > most) want = most;
  if (want < 2) return 1;
  if (N * want * C * 3 * (int64_t)sizeof(float) > ws_bytes) return 1;
  return (int)want;
}

#endif
