/* native_mm.c's register tiles on AVX2+FMA: rows x vectors of 8 columns
 * with at most 12 accumulators (4 x 24, 6 x 16; the chunk row's B vectors
 * and one broadcast of A fill the 16 ymm registers); per reduction step nv
 * loads of B and one broadcast per row for rows x nv multiply-adds. A
 * column block narrower than the tile takes fewer vectors; the last vector
 * of a block narrower than its vectors goes through a lane mask for C, the
 * bias and the residual (and for B when B is not packed: a packed block is
 * zero-padded). The AVX-512 twin is native_mm512.c, of the same design. */
#include <stdbool.h>
#include <stdint.h>

#include "backends/native/native.h"
#include "backends/native/native_mm.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "backends/native/native_avx2.h"

#define T256 __attribute__((target("avx2,fma")))
#define INL static inline __attribute__((always_inline))
#define MR 6
#define NV_MAX 3

/* Vector v of a row: through mask lm when it is the block's masked tail. */
#define LD8(p, tl, lm) ((tl) ? _mm256_maskload_ps((p), (lm)) : _mm256_loadu_ps(p))

/* One tile: rows i.. i+mr, vectors j.. j+8nv, reduction [k0, k1). */
INL T256 void tile(const int mr, const int nv, const bool tail, const nat_mm *m, int64_t i,
                   int64_t j, int64_t k0, int64_t k1, __m256i lm, const char *pf, int64_t npf,
                   const char *pc, int64_t pcr, int64_t pcl) {
  const int64_t lda = m->lda, ldc = m->ldc, n = k1 - k0;
  const float *a = m->a + i * lda + k0;
  const bool packed = m->ldb == 0;
  const float *w = packed ? m->b + j * m->K + k0 * m->nr : m->b + k0 * m->ldb + j;
  const int64_t ldw = packed ? m->nr : m->ldb;
  float *c = m->c + i * ldc + j;
  __m256 acc[MR][NV_MAX];
#pragma GCC unroll 4
  for (int v = 0; v < NV_MAX; v++) {
    if (v >= nv) break;
    const bool tl = tail && v == nv - 1;
    if (k0 == 0) {
      __m256 b0 = m->bias ? LD8(m->bias + j + 8 * v, tl, lm) : _mm256_setzero_ps();
#pragma GCC unroll 6
      for (int r = 0; r < MR; r++)
        if (r < mr)
          acc[r][v] = m->row_bias ? _mm256_add_ps(b0, _mm256_set1_ps(m->row_bias[i + r])) : b0;
    } else {
#pragma GCC unroll 6
      for (int r = 0; r < MR; r++)
        if (r < mr) acc[r][v] = LD8(c + r * ldc + 8 * v, tl, lm);
    }
  }
  /* unrolled: the loop's scalar uops share ports 0/1 with the FMAs
   * (distilbert_like at AVX2: 5% less CPU time). The first npf steps each
   * prefetch one line of this tile's share of the next block's chunk
   * (nat_mm_next_chunk): issued all at once they filled the line buffers
   * and stalled the small products of transformer_encdec (~10%). */
#pragma GCC unroll 4
  for (int64_t k = 0; k < n; k++) {
    if (k < npf) _mm_prefetch(pf + k * 64, _MM_HINT_T1);
    if (k < pcr) { /* row k of the next tile's C: its first, second and last line */
      const char *q = pc + k * ldc * (int64_t)sizeof(float);
      _mm_prefetch(q, _MM_HINT_T0);
      _mm_prefetch(q + 64, _MM_HINT_T0);
      _mm_prefetch(q + pcl, _MM_HINT_T0);
    }
    const float *wk = w + k * ldw;
    __m256 wv[NV_MAX];
#pragma GCC unroll 4
    for (int v = 0; v < NV_MAX; v++)
      if (v < nv) wv[v] = LD8(wk + 8 * v, !packed && tail && v == nv - 1, lm);
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++) {
      if (r >= mr) break;
      __m256 x = _mm256_broadcast_ss(a + r * lda + k);
#pragma GCC unroll 4
      for (int v = 0; v < NV_MAX; v++)
        if (v < nv) acc[r][v] = _mm256_fmadd_ps(x, wv[v], acc[r][v]);
    }
  }
  for (int64_t l = n; l < npf; l++) /* a chunk shorter than the share */
    _mm_prefetch(pf + l * 64, _MM_HINT_T1);
  const bool last = k1 == m->K;
  const __m256 lo = _mm256_set1_ps(m->lo), hi = _mm256_set1_ps(m->hi);
#pragma GCC unroll 6
  for (int r = 0; r < MR; r++) {
    if (r >= mr) break;
#pragma GCC unroll 4
    for (int v = 0; v < NV_MAX; v++) {
      if (v >= nv) break;
      const bool tl = tail && v == nv - 1;
      __m256 x = acc[r][v];
      if (last) {
        if (m->z) x = _mm256_add_ps(x, LD8(m->z + (i + r) * m->ldz + j + 8 * v, tl, lm));
        x = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
      }
      if (tl)
        _mm256_maskstore_ps(c + r * ldc + 8 * v, lm, x);
      else
        _mm256_storeu_ps(c + r * ldc + 8 * v, x);
    }
  }
}

/* Most rows a tile of NV vectors takes (accumulators, B vectors and one
 * broadcast in the register file); nat_mm_init keeps m->mr within it. */
#define ROWS_1 6
#define ROWS_2 6
#define ROWS_3 4
#define TILE_ARGS                                                                                  \
  const nat_mm *m, int64_t i, int64_t j, int64_t k0, int64_t k1, __m256i lm, const char *pf,       \
      int64_t npf, const char *pc, int64_t pcr, int64_t pcl
#define TILE_CASE(R, NV)                                                                           \
  case R:                                                                                          \
    if (R > ROWS_##NV) break; /* no such tile */                                                   \
    if (tail)                                                                                      \
      tile(R, NV, true, m, i, j, k0, k1, lm, pf, npf, pc, pcr, pcl);                               \
    else                                                                                           \
      tile(R, NV, false, m, i, j, k0, k1, lm, pf, npf, pc, pcr, pcl);                              \
    break;
/* One function per vector count, a case per row count up to that count's
 * most rows (ROWS_NV): each tile fully unrolled with its accumulators in
 * registers. */
#define TILE_NV(NV)                                                                                \
  static T256 void tile_nv##NV(int mr, bool tail, TILE_ARGS) {                                     \
    switch (mr) {                                                                                  \
      TILE_CASE(1, NV)                                                                             \
      TILE_CASE(2, NV)                                                                             \
      TILE_CASE(3, NV)                                                                             \
      TILE_CASE(4, NV)                                                                             \
      TILE_CASE(5, NV)                                                                             \
      TILE_CASE(6, NV)                                                                             \
    default: break;                                                                                \
    }                                                                                              \
  }
TILE_NV(1)
TILE_NV(2)
TILE_NV(3)

T256 void nat_mm256_block(const nat_mm *m, int64_t i0, int64_t i1, int64_t j, int64_t nc,
                          int64_t k0, int64_t k1) {
  int nv = (int)((nc + 7) / 8);
  bool tail = nc % 8 != 0;
  __m256i lm = nat_tail8(nc - 8 * (nv - 1));
  /* rows split evenly into tiles of at most m->mr: no latency-bound remainder */
  int64_t rows = i1 - i0, tiles = (rows + m->mr - 1) / m->mr;
  if (tiles < 1) return;
  int64_t base = rows / tiles, extra = rows % tiles;
  bool gelu = m->gelu && k1 == m->K;
  int64_t pf_lines;
  const char *pf = nat_mm_next_chunk(m, j, k0, k1, &pf_lines);
  for (int64_t t = 0, i = i0; t < tiles; t++) {
    int mr = (int)(base + (t < extra));
    int64_t l = t * pf_lines / tiles, nl = (t + 1) * pf_lines / tiles - l;
    const char *tp = pf ? pf + l * 64 : NULL;
    int64_t nr, pcl; /* the next tile's C (nat_mm_next_tile_c) */
    const char *pc = nat_mm_next_tile_c(m, i0, t, tiles, base, extra, i, mr, j, k0, &nr, &pcl);
    switch (nv) {
    case 1: tile_nv1(mr, tail, m, i, j, k0, k1, lm, tp, nl, pc, nr, pcl); break;
    case 2: tile_nv2(mr, tail, m, i, j, k0, k1, lm, tp, nl, pc, nr, pcl); break;
    default: tile_nv3(mr, tail, m, i, j, k0, k1, lm, tp, nl, pc, nr, pcl); break;
    }
    if (gelu) nat_gelu256_tile(m->c + i * m->ldc + j, m->ldc, mr, nc);
    i += mr;
  }
}

#else
void nat_mm256_block(const nat_mm *m, int64_t i0, int64_t i1, int64_t j, int64_t nc, int64_t k0,
                     int64_t k1) {}
#endif
