/* native's blocked GEMM for MatMul/Gemm with many rows (native_mm.c, with
 * its register tiles in native_mm256.c for AVX2+FMA and native_mm512.c for
 * AVX-512): C[M][N] = A[M][K] . B[K][N] (+ bias, + z, clamp, GELU).
 *
 * B is read from column blocks of nr floats (the tile's width), each K x nr
 * contiguous (nat_mm_pack: once per constant weight), or as stored (row
 * stride ldb) for a B that changes between runs. The reduction is cut into
 * chunks of kc (a chunk of a B block, kc x nr, stays in L1 while every row
 * tile of a panel passes it), the rows into panels of mc (a panel's A
 * chunk, mc x kc, stays in L2 while every column block passes it), so B is
 * read from memory once per panel and A once per column block from L2 —
 * the pointwise-convolution tiles (native_nhwc*.c), which the MatMuls ran
 * on before, stream all of B once per ~8 rows when K is large. Tiles hold
 * their partial sums in C between chunks; the last chunk adds z, clamps
 * and stores, and GELU runs on the tile while it is in L1. */
#ifndef AIT_BACKENDS_NATIVE_MM_H
#define AIT_BACKENDS_NATIVE_MM_H

#include <stdbool.h>
#include <stdint.h>

#include "backends/native/native.h"

typedef struct nat_mm {
  int level;       /* NAT_ISA_AVX2 or NAT_ISA_AVX512 */
  int mr, nr;      /* register tile: most rows, floats per column block */
  int64_t M, N, K; /* C is M x N, the reduction K */
  int64_t kc, mc;  /* reduction chunk, row panel */
  const float *a;  /* A, row stride lda (borrowed) */
  int64_t lda;
  const float *b; /* B: packed (blocks of K x nr) when ldb == 0, else row stride ldb */
  int64_t ldb;
  const float *bias;     /* [N] or NULL */
  const float *row_bias; /* [M] or NULL (a convolution's bias: one per output channel) */
  const float *z;        /* residual, row stride ldz, or NULL */
  int64_t ldz;
  float *c; /* C, row stride ldc (written) */
  int64_t ldc;
  float lo, hi;   /* clamp (Relu, Clip; +-inf for none) */
  bool gelu;      /* GELU on each tile after its last chunk */
  int64_t j0, j1; /* set by nat_mm_run: the columns of this call (what to prefetch) */
} nat_mm;

/* Whether `level` has tiles (AVX2, AVX-512 where compiled and allowed by
 * nat_isa()). */
bool nat_mm_available(int level);
/* Fill m's tile, chunk and panel sizes for `level` and C's shape; the
 * operands are the caller's to set (every pointer field NULL, lo/hi
 * +-inf, ldb 0 before). */
void nat_mm_init(nat_mm *m, int level, int64_t M, int64_t N, int64_t K);
/* As nat_mm_init with the level's tile number `tile` (0.. in order of
 * preference) instead of the best one for N; false where the level has no
 * such tile (tests, benchmarks). */
bool nat_mm_init_tile(nat_mm *m, int level, int tile, int64_t M, int64_t N, int64_t K);
/* C rows [i0, i1) x columns [j0, j1) (j0 a multiple of m->nr), with all
 * of m's blocking: one pool task's share. */
void nat_mm_run(const nat_mm *m, int64_t i0, int64_t i1, int64_t j0, int64_t j1);
/* All of C on r's pool (r NULL: the calling thread), in about two tasks a
 * thread; post (may be NULL) runs on each task's block after its tiles
 * (an activation the tiles do not apply). */
void nat_mm_pool(nat_run *r, const nat_mm *m, const ait_act *post);
/* B [K][N] (element (k, n) at B[k * rs + n * cs]) in column blocks of nr,
 * zero-padded: dst holds nat_mm_packed_floats(K, N, nr) floats. */
int64_t nat_mm_packed_floats(int64_t K, int64_t N, int nr);
void nat_mm_pack(float *dst, const float *B, int64_t K, int64_t N, int64_t rs, int64_t cs, int nr);

/* Conv / FusedConv: 1-D convolutions of one group on the tiles
 * (native_mm_conv1d.c), every other one on native_conv.c's nat_k_conv.
 * nat_mm_conv1d_runs: runs that took the tiles (tests). */
ait_status nat_k_conv_seq(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in);
long long nat_mm_conv1d_runs(void);
/* 3-D Conv / FusedConv on the tiles, any group (native_conv3d.c);
 * AIT_E_UNSUPPORTED, nothing done, where it does not apply. */
ait_status nat_conv3d(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in);
long long nat_conv3d_runs(void);
long long nat_conv3d_direct_runs(void); /* those without packing (stride 1 in H, W) */

/* The chunk of B that this call of nat_mm_run multiplies after the block
 * at column j, chunk [k0, k1): the next column block's, or after the last
 * of the call's columns [j0, j1) the first one's next chunk. The level
 * kernels prefetch it into L2 while they run block j, split between its
 * row tiles and one line a reduction step, so that its first tile need not
 * wait on memory (a transformer's weights are read once a layer, from L3 or
 * DRAM; distilbert_like: 10-13% less CPU time at both levels). Never past
 * the call's columns: at two threads the next block is often the other
 * task's. Its address and *lines (64-byte lines), or NULL and 0 where B is
 * not packed (not contiguous) or nothing follows. */
static inline const char *nat_mm_next_chunk(const nat_mm *m, int64_t j, int64_t k0, int64_t k1,
                                            int64_t *lines) {
  *lines = 0;
  if (m->ldb != 0) return NULL;
  int64_t nj = j + m->nr, nk0 = k0, nk1 = k1;
  if (nj >= m->j1) { /* the first block's next chunk */
    if (k1 >= m->K) return NULL;
    nj = m->j0, nk0 = k1, nk1 = k1 + m->kc < m->K ? k1 + m->kc : m->K;
  }
  *lines = ((nk1 - nk0) * m->nr * (int64_t)sizeof(float) + 63) / 64;
  return (const char *)(m->b + nj * m->K + nk0 * m->nr);
}

/* The C rows of the tile after tile t (rows i.. i+mr of tiles rows split
 * as base + (t < extra) from i0) at column block j: the block's next tile,
 * after its last the next block's first (none past the call's columns).
 * native_mm256.c prefetches them into L1 one row a reduction step while
 * tile t runs: at batch 8 a panel's C (mc x N) is past L2 and each tile
 * began with its C rows' misses (distilbert's 1024 x 768 x 3072 at AVX2:
 * 80 -> 100 GFLOP/s). Only for chunks after the first (k0 > 0: C is read)
 * and a panel's C past 512 KB. (AVX-512 does without: the checks in its
 * k loop cost its batch-1 products 3-10%, more than batch 8 gained.) Its
 * first row's address, *rows (0: none) and *last, the offset in bytes of
 * a row's last float. */
static inline const char *nat_mm_next_tile_c(const nat_mm *m, int64_t i0, int64_t t, int64_t tiles,
                                             int64_t base, int64_t extra, int64_t i, int mr,
                                             int64_t j, int64_t k0, int64_t *rows, int64_t *last) {
  int64_t ni = i + mr, nj = j;
  *rows = 0, *last = 0;
  if (k0 == 0 || (base * tiles + extra) * m->N * (int64_t)sizeof(float) <= 512 * 1024) return NULL;
  if (t + 1 < tiles) {
    *rows = base + (t + 1 < extra);
  } else if (j + m->nr < m->j1) {
    ni = i0, nj = j + m->nr, *rows = base + (extra > 0);
  } else {
    return NULL;
  }
  int64_t nc = m->j1 - nj < m->nr ? m->j1 - nj : m->nr;
  *last = (nc - 1) * (int64_t)sizeof(float);
  return (const char *)(m->c + ni * m->ldc + nj);
}

/* The level kernels (native_mm256.c, native_mm512.c): rows [i0, i1) of C in
 * tiles of at most m->mr rows (rows split evenly), for the column block at
 * column j (nc <= nr columns) and reduction chunk [k0, k1): partial sums
 * kept in C unless k0 == 0 (start from the bias) and finished when
 * k1 == K. */
void nat_mm256_block(const nat_mm *m, int64_t i0, int64_t i1, int64_t j, int64_t nc, int64_t k0,
                     int64_t k1);
void nat_mm512_block(const nat_mm *m, int64_t i0, int64_t i1, int64_t j, int64_t nc, int64_t k0,
                     int64_t k1);

#endif
