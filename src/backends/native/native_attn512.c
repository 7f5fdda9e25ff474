/* Attention on AVX-512, for one block of up to 64 query rows of one
 * (batch, head), head sizes of V that are multiples of 16 up to 64 (BERT's
 * 32 and 64); compiled with per-function target attributes,
 * nat_attn512_available() says whether the CPU can run it.
 *
 * The scores are computed transposed, Sᵀ[key][query row], so the query
 * rows are the vector lanes: the block's Q is transposed once into alpha
 * Qᵀ (16 x 16 in registers), and a tile of 6 keys x 64 rows (24
 * accumulators: 4 loads of Qᵀ and 6 broadcasts of K per step of the head
 * dim, any strides of K) adds the mask and raises a running maximum per
 * row in its epilogue. The softmax then runs down the columns (exp(x -
 * max) and the sum per row as vectors: no horizontal reductions), with the
 * normalisation left to the output rows, and Y = P V reads Pᵀ in a register
 * tile with P broadcast from memory. Measured on the 4-layer BERT's task
 * (64 rows, 128 keys, head 64; Zen 4, one thread, whose FMA peak is ~117
 * GFLOP/s), against SGEMM for Q Kᵀ and a softmax along the rows: Q Kᵀ
 * 12.1 -> 9.9 us (86 -> 106 GFLOP/s; 0.4 us of it packing Qᵀ), softmax
 * 4.9 -> 1.7 us, P V 9.2 us (110 GFLOP/s, either layout of P): the task
 * 26.3 -> 21.0 us. The row-wise softmax (nat_attn512_softmax) remains for
 * masks whose row stride is past the 32-bit gather offsets. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "backends/native/native.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "backends/native/native_avx512.h"

#define T512 __attribute__((target("avx512f")))
#define INL static inline __attribute__((always_inline))

bool nat_attn512_available(void) { return nat_isa() >= NAT_ISA_AVX512; }

/* One step of a register tile of up to 8 rows x nv (<= 4) vectors:
 * acc[r][c] += s[r * ss] * w[16 c .. 16 c + 16) for r < nr. P V broadcasts
 * P and loads V's row; the transposed scores broadcast K and load Qᵀ's. */
INL T512 void tile_step(__m512 acc[8][4], int nr, int nv, const float *w, const float *s,
                        int64_t ss) {
  __m512 w0 = _mm512_loadu_ps(w), w1 = nv > 1 ? _mm512_loadu_ps(w + 16) : w0;
  __m512 w2 = nv > 2 ? _mm512_loadu_ps(w + 32) : w0, w3 = nv > 3 ? _mm512_loadu_ps(w + 48) : w0;
#pragma GCC unroll 8
  for (int r = 0; r < 8; r++)
    if (r < nr) {
      __m512 b = _mm512_set1_ps(s[r * ss]);
      acc[r][0] = _mm512_fmadd_ps(b, w0, acc[r][0]);
      if (nv > 1) acc[r][1] = _mm512_fmadd_ps(b, w1, acc[r][1]);
      if (nv > 2) acc[r][2] = _mm512_fmadd_ps(b, w2, acc[r][2]);
      if (nv > 3) acc[r][3] = _mm512_fmadd_ps(b, w3, acc[r][3]);
    }
}

INL T512 void tile_zero(__m512 acc[8][4]) {
#pragma GCC unroll 8
  for (int r = 0; r < 8; r++)
#pragma GCC unroll 4
    for (int c = 0; c < 4; c++)
      acc[r][c] = _mm512_setzero_ps();
}

/* y[i][0..16nv) = sum_k p(i, k) v[k][0..16nv) for mr rows, with p(i, k) at
 * p[i * pis + k * pks] (rows of P, or of Pᵀ: pis = 1) */
INL T512 void pv_tile(int mr, int nv, int64_t Sk, const float *p, int64_t pis, int64_t pks,
                      const float *v, int64_t ldv, float *y, int64_t ldy, const float *scale) {
  __m512 acc[8][4];
  tile_zero(acc);
  for (int64_t k = 0; k < Sk; k++)
    tile_step(acc, mr, nv, v + k * ldv, p + k * pks, pis);
#pragma GCC unroll 8
  for (int i = 0; i < 8; i++)
    if (i < mr)
#pragma GCC unroll 4
      for (int c = 0; c < 4; c++)
        if (c < nv)
          _mm512_storeu_ps(y + i * ldy + 16 * c,
                           scale ? _mm512_mul_ps(acc[i][c], _mm512_set1_ps(scale[i])) : acc[i][c]);
}

T512 void nat_attn512_softmax(float *s, int64_t rows, int64_t Sk, const float *m, int64_t mrs,
                              int64_t mcs, float *inv) {
  for (int64_t i = 0; i < rows; i++) {
    float *row = s + i * Sk;
    const float *mr = m ? m + i * mrs : NULL;
    __m512 mx = _mm512_set1_ps(-INFINITY);
    for (int64_t j = 0; j < Sk; j += 16) { /* mask added, max taken: one pass */
      __mmask16 k = nat_tail16(Sk - j);
      __m512 x = _mm512_maskz_loadu_ps(k, row + j);
      if (mr && mcs == 1)
        x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(k, mr + j));
      else if (mr)
        for (int64_t c = j; c < j + 16 && c < Sk; c++)
          row[c] += mr[c * mcs];
      if (mr && mcs != 1) x = _mm512_maskz_loadu_ps(k, row + j);
      _mm512_mask_storeu_ps(row + j, k, x);
      mx = _mm512_mask_max_ps(mx, k, mx, x);
    }
    __m512 top = _mm512_set1_ps(_mm512_reduce_max_ps(mx)), sum = _mm512_setzero_ps();
    for (int64_t j = 0; j < Sk; j += 16) { /* exp and sum: a second pass */
      __mmask16 k = nat_tail16(Sk - j);
      __m512 e = nat_exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, row + j), top));
      _mm512_mask_storeu_ps(row + j, k, e);
      sum = _mm512_mask_add_ps(sum, k, sum, e);
    }
    inv[i] = 1.0f / _mm512_reduce_add_ps(sum); /* applied to the output rows */
  }
}

/* P V over the rows in tiles; inlined with constant strides of P */
INL T512 void values_rows(const float *p, int64_t pis, int64_t pks, int64_t rows, int64_t Sk,
                          const float *v, int64_t ldv, int64_t Dv, float *y, int64_t ldy,
                          const float *scale) {
  int nv = (int)(Dv / 16);
  /* rows per tile: 8 x 4 accumulators would take all 32 vector registers
   * and spill the loaded V rows and the broadcast (Dv = 64: P V ran slower
   * than SGEMM's Q K^T); 6 x 4 leaves room */
  int step = nv == 4 ? 6 : 8;
  for (int64_t i = 0; i < rows; i += step) {
    int mr = (int)(rows - i < step ? rows - i : step);
    const float *pi = p + i * pis, *sc = scale ? scale + i : NULL;
    float *yi = y + i * ldy;
    switch (mr) {
    case 1: pv_tile(1, nv, Sk, pi, pis, pks, v, ldv, yi, ldy, sc); break;
    case 2: pv_tile(2, nv, Sk, pi, pis, pks, v, ldv, yi, ldy, sc); break;
    case 3: pv_tile(3, nv, Sk, pi, pis, pks, v, ldv, yi, ldy, sc); break;
    case 4: pv_tile(4, nv, Sk, pi, pis, pks, v, ldv, yi, ldy, sc); break;
    case 5: pv_tile(5, nv, Sk, pi, pis, pks, v, ldv, yi, ldy, sc); break;
    case 6: pv_tile(6, nv, Sk, pi, pis, pks, v, ldv, yi, ldy, sc); break;
    case 7: pv_tile(7, nv, Sk, pi, pis, pks, v, ldv, yi, ldy, sc); break;
    default: pv_tile(8, nv, Sk, pi, pis, pks, v, ldv, yi, ldy, sc); break;
    }
  }
}

T512 void nat_attn512_values(const float *p, int64_t pis, int64_t pks, int64_t rows, int64_t Sk,
                             const float *v, int64_t ldv, int64_t Dv, float *y, int64_t ldy,
                             const float *scale) {
  if (pis == 1) /* Pᵀ: a tile's broadcasts from one row of it */
    values_rows(p, 1, pks, rows, Sk, v, ldv, Dv, y, ldy, scale);
  else if (pks == 1)
    values_rows(p, pis, 1, rows, Sk, v, ldv, Dv, y, ldy, scale);
  else
    values_rows(p, pis, pks, rows, Sk, v, ldv, Dv, y, ldy, scale);
}

/* ---- scores transposed: keys down, query rows across the lanes ---------- */

/* The mask of key j for the query rows 16c.. of the block, as 16 lanes
 * (lanes past `rows` 0): one broadcast when it does not vary along the
 * rows, a load when they are contiguous, else a gather. */
INL T512 __m512 mask_lanes(const float *m, int64_t mrs, int64_t mcs, int64_t j, int c,
                           __mmask16 lanes, __m512i gidx) {
  const float *mj = m + j * mcs + 16 * c * mrs;
  if (mrs == 0) return _mm512_set1_ps(*mj);
  if (mrs == 1) return _mm512_maskz_loadu_ps(lanes, mj);
  return _mm512_mask_i32gather_ps(_mm512_setzero_ps(), lanes, gidx, mj, 4);
}

/* st[j][16c..] (row stride ATT_T) for nk keys from j0 and nv vectors of
 * query rows: sum over d of qt[d][..] * k(j, d), then the mask added and the
 * running maximum per query row (mx) raised. */
#define ATT_T 64
INL T512 void qk_tile(int nk, int nv, int64_t D, const float *qt, const float *k, int64_t kjs,
                      int64_t kds, int64_t j0, const float *m, int64_t mrs, int64_t mcs,
                      const __mmask16 *lanes, __m512i gidx, float *st, float *mx) {
  __m512 acc[8][4];
  tile_zero(acc);
  const float *kj = k + j0 * kjs;
  for (int64_t d = 0; d < D; d++)
    tile_step(acc, nk, nv, qt + d * ATT_T, kj + d * kds, kjs);
#pragma GCC unroll 4
  for (int c = 0; c < 4; c++)
    if (c < nv) {
      __m512 top = _mm512_loadu_ps(mx + 16 * c);
#pragma GCC unroll 6
      for (int r = 0; r < 6; r++)
        if (r < nk) {
          __m512 x = acc[r][c];
          if (m) x = _mm512_add_ps(x, mask_lanes(m, mrs, mcs, j0 + r, c, lanes[c], gidx));
          _mm512_storeu_ps(st + (j0 + r) * ATT_T + 16 * c, x);
          top = _mm512_max_ps(top, x);
        }
      _mm512_storeu_ps(mx + 16 * c, top);
    }
}

INL T512 void qk_keys(int nv, int64_t D, const float *qt, const float *k, int64_t kjs, int64_t kds,
                      int64_t Sk, const float *m, int64_t mrs, int64_t mcs, const __mmask16 *lanes,
                      __m512i gidx, float *st, float *mx) {
  int64_t j = 0;
  for (; j + 6 <= Sk; j += 6)
    qk_tile(6, nv, D, qt, k, kjs, kds, j, m, mrs, mcs, lanes, gidx, st, mx);
  switch (Sk - j) {
  case 1: qk_tile(1, nv, D, qt, k, kjs, kds, j, m, mrs, mcs, lanes, gidx, st, mx); break;
  case 2: qk_tile(2, nv, D, qt, k, kjs, kds, j, m, mrs, mcs, lanes, gidx, st, mx); break;
  case 3: qk_tile(3, nv, D, qt, k, kjs, kds, j, m, mrs, mcs, lanes, gidx, st, mx); break;
  case 4: qk_tile(4, nv, D, qt, k, kjs, kds, j, m, mrs, mcs, lanes, gidx, st, mx); break;
  case 5: qk_tile(5, nv, D, qt, k, kjs, kds, j, m, mrs, mcs, lanes, gidx, st, mx); break;
  default: break;
  }
}

T512 void nat_attn512_scores_t(const float *q, int64_t ldq, int64_t rows, int64_t D, float alpha,
                               const float *k, int64_t kjs, int64_t kds, int64_t Sk, const float *m,
                               int64_t mrs, int64_t mcs, float *qt, float *st, float *mx) {
  int nv = (int)((rows + 15) / 16);
  /* qt[d][i] = alpha q[i][d], by 16 x 16 blocks transposed in registers;
   * rows past `rows` zero */
  __m512 sa = _mm512_set1_ps(alpha);
  for (int64_t i0 = 0; i0 < rows; i0 += 16)
    for (int64_t d0 = 0; d0 < D; d0 += 16) {
      __m512 r[16];
      __mmask16 cols = nat_tail16(D - d0);
      for (int t = 0; t < 16; t++)
        r[t] = i0 + t < rows
                   ? _mm512_mul_ps(sa, _mm512_maskz_loadu_ps(cols, q + (i0 + t) * ldq + d0))
                   : _mm512_setzero_ps();
      ait_transpose16(r);
      for (int t = 0; t < 16 && d0 + t < D; t++)
        _mm512_storeu_ps(qt + (d0 + t) * ATT_T + i0, r[t]);
    }
  __mmask16 lanes[4];
  for (int c = 0; c < 4; c++) {
    lanes[c] = nat_tail16(rows - 16 * c);
    _mm512_storeu_ps(mx + 16 * c, _mm512_set1_ps(-INFINITY));
  }
  __m512i gidx =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32((int32_t)(mrs > 1 ? mrs : 0)));
  switch (nv) {
  case 1: qk_keys(1, D, qt, k, kjs, kds, Sk, m, mrs, mcs, lanes, gidx, st, mx); break;
  case 2: qk_keys(2, D, qt, k, kjs, kds, Sk, m, mrs, mcs, lanes, gidx, st, mx); break;
  case 3: qk_keys(3, D, qt, k, kjs, kds, Sk, m, mrs, mcs, lanes, gidx, st, mx); break;
  default: qk_keys(4, D, qt, k, kjs, kds, Sk, m, mrs, mcs, lanes, gidx, st, mx); break;
  }
}

/* exp(st[j][..] - mx) in place down the columns, 1 / sum per query row */
INL T512 void softmax_cols(int nv, float *st, int64_t Sk, const float *mx, float *inv) {
  __m512 top[4], sum[4];
#pragma GCC unroll 4
  for (int c = 0; c < 4; c++) {
    top[c] = c < nv ? _mm512_loadu_ps(mx + 16 * c) : _mm512_setzero_ps();
    sum[c] = _mm512_setzero_ps();
  }
  for (int64_t j = 0; j < Sk; j++)
#pragma GCC unroll 4
    for (int c = 0; c < 4; c++)
      if (c < nv) {
        float *x = st + j * ATT_T + 16 * c;
        __m512 z = _mm512_sub_ps(_mm512_loadu_ps(x), top[c]);
        /* z <= 0 or NaN: max(-87, z) keeps a NaN (the second operand) */
        __m512 e = nat_exp16_poly(_mm512_max_ps(_mm512_set1_ps(-87.0f), z));
        _mm512_storeu_ps(x, e);
        sum[c] = _mm512_add_ps(sum[c], e);
      }
#pragma GCC unroll 4
  for (int c = 0; c < 4; c++)
    if (c < nv) _mm512_storeu_ps(inv + 16 * c, _mm512_div_ps(_mm512_set1_ps(1.0f), sum[c]));
}

T512 void nat_attn512_softmax_t(float *st, int64_t rows, int64_t Sk, const float *mx, float *inv) {
  switch ((rows + 15) / 16) {
  case 1: softmax_cols(1, st, Sk, mx, inv); break;
  case 2: softmax_cols(2, st, Sk, mx, inv); break;
  case 3: softmax_cols(3, st, Sk, mx, inv); break;
  default: softmax_cols(4, st, Sk, mx, inv); break;
  }
}

#else /* not x86-64 with GCC/Clang: never taken */

bool nat_attn512_available(void) { return false; }
void nat_attn512_values(const float *p, int64_t pis, int64_t pks, int64_t rows, int64_t Sk,
                        const float *v, int64_t ldv, int64_t Dv, float *y, int64_t ldy,
                        const float *scale) {}
void nat_attn512_scores_t(const float *q, int64_t ldq, int64_t rows, int64_t D, float alpha,
                          const float *k, int64_t kjs, int64_t kds, int64_t Sk, const float *m,
                          int64_t mrs, int64_t mcs, float *qt, float *st, float *mx) {}
void nat_attn512_softmax_t(float *st, int64_t rows, int64_t Sk, const float *mx, float *inv) {}
void nat_attn512_softmax(float *s, int64_t rows, int64_t Sk, const float *m, int64_t mrs,
                         int64_t mcs, float *inv) {}

#endif
