/* native_mm.c's register tiles on AVX-512: native_mm256.c's design on
 * 16-float vectors and 32 registers: at most 24 accumulators (8 x 48,
 * 6 x 64, 12 x 32), per reduction step nv loads of B and one broadcast per
 * row for rows x nv multiply-adds. A column block narrower than the tile
 * takes fewer vectors; the last vector of a block narrower than its vectors
 * is masked for C, the bias and the residual (and for B when B is not
 * packed). */
#include <stdbool.h>
#include <stdint.h>

#include "backends/native/native.h"
#include "backends/native/native_mm.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "backends/native/native_avx512.h"

#define T512 __attribute__((target("avx512f,fma")))
#define INL static inline __attribute__((always_inline))
#define MR 12
#define NV_MAX 4

#define LD16(p, tl, lm) ((tl) ? _mm512_maskz_loadu_ps((lm), (p)) : _mm512_loadu_ps(p))

/* One tile: rows i.. i+mr, vectors j.. j+16nv, reduction [k0, k1). */
INL T512 void tile(const int mr, const int nv, const bool tail, const nat_mm *m, int64_t i,
                   int64_t j, int64_t k0, int64_t k1, __mmask16 lm, const char *pf, int64_t npf) {
  const int64_t lda = m->lda, ldc = m->ldc, n = k1 - k0;
  const float *a = m->a + i * lda + k0;
  const bool packed = m->ldb == 0;
  const float *w = packed ? m->b + j * m->K + k0 * m->nr : m->b + k0 * m->ldb + j;
  const int64_t ldw = packed ? m->nr : m->ldb;
  float *c = m->c + i * ldc + j;
  __m512 acc[MR][NV_MAX];
#pragma GCC unroll 4
  for (int v = 0; v < NV_MAX; v++) {
    if (v >= nv) break;
    const bool tl = tail && v == nv - 1;
    if (k0 == 0) {
      __m512 b0 = m->bias ? LD16(m->bias + j + 16 * v, tl, lm) : _mm512_setzero_ps();
#pragma GCC unroll 12
      for (int r = 0; r < MR; r++)
        if (r < mr)
          acc[r][v] = m->row_bias ? _mm512_add_ps(b0, _mm512_set1_ps(m->row_bias[i + r])) : b0;
    } else {
#pragma GCC unroll 12
      for (int r = 0; r < MR; r++)
        if (r < mr) acc[r][v] = LD16(c + r * ldc + 16 * v, tl, lm);
    }
  }
  /* the first npf steps each prefetch a line of the next block's chunk
   * (native_mm256.c: a burst of them stalls small products) */
  for (int64_t k = 0; k < n; k++) {
    if (k < npf) _mm_prefetch(pf + k * 64, _MM_HINT_T1);
    const float *wk = w + k * ldw;
    __m512 wv[NV_MAX];
#pragma GCC unroll 4
    for (int v = 0; v < NV_MAX; v++)
      if (v < nv) wv[v] = LD16(wk + 16 * v, !packed && tail && v == nv - 1, lm);
#pragma GCC unroll 12
    for (int r = 0; r < MR; r++) {
      if (r >= mr) break;
      __m512 x = _mm512_set1_ps(a[r * lda + k]);
#pragma GCC unroll 4
      for (int v = 0; v < NV_MAX; v++)
        if (v < nv) acc[r][v] = _mm512_fmadd_ps(x, wv[v], acc[r][v]);
    }
  }
  for (int64_t l = n; l < npf; l++) /* a chunk shorter than the share */
    _mm_prefetch(pf + l * 64, _MM_HINT_T1);
  const bool last = k1 == m->K;
  const __m512 lo = _mm512_set1_ps(m->lo), hi = _mm512_set1_ps(m->hi);
#pragma GCC unroll 12
  for (int r = 0; r < MR; r++) {
    if (r >= mr) break;
#pragma GCC unroll 4
    for (int v = 0; v < NV_MAX; v++) {
      if (v >= nv) break;
      const bool tl = tail && v == nv - 1;
      __m512 x = acc[r][v];
      if (last) {
        if (m->z) x = _mm512_add_ps(x, LD16(m->z + (i + r) * m->ldz + j + 16 * v, tl, lm));
        x = _mm512_min_ps(_mm512_max_ps(x, lo), hi);
      }
      if (tl)
        _mm512_mask_storeu_ps(c + r * ldc + 16 * v, lm, x);
      else
        _mm512_storeu_ps(c + r * ldc + 16 * v, x);
    }
  }
}

/* Most rows a tile of NV vectors takes (accumulators, B vectors and one
 * broadcast in the register file); nat_mm_init keeps m->mr within it. */
#define ROWS_1 12
#define ROWS_2 12
#define ROWS_3 8
#define ROWS_4 6
#define TILE_ARGS                                                                                  \
  const nat_mm *m, int64_t i, int64_t j, int64_t k0, int64_t k1, __mmask16 lm, const char *pf,     \
      int64_t npf
#define TILE_CASE(R, NV)                                                                           \
  case R:                                                                                          \
    if (R > ROWS_##NV) break; /* no such tile */                                                   \
    if (tail)                                                                                      \
      tile(R, NV, true, m, i, j, k0, k1, lm, pf, npf);                                             \
    else                                                                                           \
      tile(R, NV, false, m, i, j, k0, k1, lm, pf, npf);                                            \
    break;
/* One function per vector count, a case per row count up to that count's
 * most rows (ROWS_NV): each tile fully unrolled with its accumulators in
 * registers. */
#define TILE_NV(NV)                                                                                \
  static T512 void tile_nv##NV(int mr, bool tail, TILE_ARGS) {                                     \
    switch (mr) {                                                                                  \
      TILE_CASE(1, NV)                                                                             \
      TILE_CASE(2, NV)                                                                             \
      TILE_CASE(3, NV)                                                                             \
      TILE_CASE(4, NV)                                                                             \
      TILE_CASE(5, NV)                                                                             \
      TILE_CASE(6, NV)                                                                             \
      TILE_CASE(7, NV)                                                                             \
      TILE_CASE(8, NV)                                                                             \
      TILE_CASE(9, NV)                                                                             \
      TILE_CASE(10, NV)                                                                            \
      TILE_CASE(11, NV)                                                                            \
      TILE_CASE(12, NV)                                                                            \
    default: break;                                                                                \
    }                                                                                              \
  }
TILE_NV(1)
TILE_NV(2)
TILE_NV(3)
TILE_NV(4)

T512 void nat_mm512_block(const nat_mm *m, int64_t i0, int64_t i1, int64_t j, int64_t nc,
                          int64_t k0, int64_t k1) {
  int nv = (int)((nc + 15) / 16);
  bool tail = nc % 16 != 0;
  __mmask16 lm = nat_tail16(nc - 16 * (nv - 1));
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
    switch (nv) {
    case 1: tile_nv1(mr, tail, m, i, j, k0, k1, lm, tp, nl); break;
    case 2: tile_nv2(mr, tail, m, i, j, k0, k1, lm, tp, nl); break;
    case 3: tile_nv3(mr, tail, m, i, j, k0, k1, lm, tp, nl); break;
    default: tile_nv4(mr, tail, m, i, j, k0, k1, lm, tp, nl); break;
    }
    if (gelu) nat_gelu512_tile(m->c + i * m->ldc + j, m->ldc, mr, nc);
    i += mr;
  }
}

#else
void nat_mm512_block(const nat_mm *m, int64_t i0, int64_t i1, int64_t j, int64_t nc, int64_t k0,
                     int64_t k1) {}
#endif
