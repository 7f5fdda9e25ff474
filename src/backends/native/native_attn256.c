/* Attention on AVX2 + FMA: native_attn512.c's design on eight-float
 * vectors, for one block of up to 64 query rows of one (batch, head), any
 * head size of V (a partial last vector through maskload/maskstore);
 * compiled with per-function target attributes, nat_attn256_available()
 * says whether the run's level allows it.
 *
 * The scores are computed transposed, Sᵀ[key][query row], so the query
 * rows are the vector lanes: the block's Q is transposed once into alpha
 * Qᵀ (8 x 8 blocks in registers), and a tile of 6 keys x 16 rows (12
 * accumulators, 2 loads of Qᵀ and a broadcast of K per step of the head
 * dim: 15 of the 16 registers) adds the mask and raises a running maximum
 * per row in its epilogue; the 64 rows take four passes over the keys. The
 * softmax runs down the columns, four vectors of rows at a time, with the
 * normalisation left to the output rows, and Y = P V reads Pᵀ in a tile of
 * 6 rows x 16 columns with P broadcast from memory. The row-wise softmax
 * (nat_attn256_softmax) serves masks whose row stride is past the 32-bit
 * gather offsets, after SGEMM's scores. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "backends/native/native.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "backends/native/native_avx2_math.h"

#define INL static inline __attribute__((always_inline))

bool nat_attn256_available(void) { return nat_isa() >= NAT_ISA_AVX2; }

/* Row stride of the transposed scores and of Qᵀ (native_attn512.c's) */
#define ATT_T 64

INL NAT_T256 void tile_zero(__m256 acc[6][2]) {
#pragma GCC unroll 6
  for (int r = 0; r < 6; r++) {
    acc[r][0] = _mm256_setzero_ps();
    acc[r][1] = _mm256_setzero_ps();
  }
}

/* acc[r][c] += s[r * ss] * w[8 c .. 8 c + 8) for r < nr, c < nv (<= 2);
 * with `tail` the last vector is loaded under tm. */
INL NAT_T256 void tile_step(__m256 acc[6][2], int nr, int nv, bool tail, __m256i tm, const float *w,
                            const float *s, int64_t ss) {
  __m256 w0, w1;
  if (nv == 1) {
    w0 = tail ? _mm256_maskload_ps(w, tm) : _mm256_loadu_ps(w);
    w1 = w0;
  } else {
    w0 = _mm256_loadu_ps(w);
    w1 = tail ? _mm256_maskload_ps(w + 8, tm) : _mm256_loadu_ps(w + 8);
  }
#pragma GCC unroll 6
  for (int r = 0; r < 6; r++)
    if (r < nr) {
      __m256 b = _mm256_broadcast_ss(s + r * ss);
      acc[r][0] = _mm256_fmadd_ps(b, w0, acc[r][0]);
      if (nv > 1) acc[r][1] = _mm256_fmadd_ps(b, w1, acc[r][1]);
    }
}

/* y[i][0..Dv) = scale[i] sum_k p(i, k) v[k][0..Dv) for mr rows, in
 * blocks of 16 columns */
INL NAT_T256 void pv_tile(int mr, int64_t Sk, const float *p, int64_t pis, int64_t pks,
                          const float *v, int64_t ldv, int64_t Dv, float *y, int64_t ldy,
                          const float *scale) {
  for (int64_t c0 = 0; c0 < Dv; c0 += 16) {
    int64_t w = Dv - c0 < 16 ? Dv - c0 : 16;
    int nv = w > 8 ? 2 : 1;
    bool tail = w % 8 != 0;
    __m256i tm = nat_tail8(w - 8 * (nv - 1));
    __m256 acc[6][2];
    tile_zero(acc);
    const float *vc = v + c0;
    if (nv == 2 && !tail)
      for (int64_t k = 0; k < Sk; k++)
        tile_step(acc, mr, 2, false, tm, vc + k * ldv, p + k * pks, pis);
    else if (nv == 2)
      for (int64_t k = 0; k < Sk; k++)
        tile_step(acc, mr, 2, true, tm, vc + k * ldv, p + k * pks, pis);
    else if (!tail)
      for (int64_t k = 0; k < Sk; k++)
        tile_step(acc, mr, 1, false, tm, vc + k * ldv, p + k * pks, pis);
    else
      for (int64_t k = 0; k < Sk; k++)
        tile_step(acc, mr, 1, true, tm, vc + k * ldv, p + k * pks, pis);
#pragma GCC unroll 6
    for (int i = 0; i < 6; i++)
      if (i < mr) {
        __m256 sc = _mm256_set1_ps(scale ? scale[i] : 1.0f);
        float *yi = y + i * ldy + c0;
        __m256 a0 = _mm256_mul_ps(acc[i][0], sc), a1 = _mm256_mul_ps(acc[i][1], sc);
        if (nv == 1) {
          if (tail)
            _mm256_maskstore_ps(yi, tm, a0);
          else
            _mm256_storeu_ps(yi, a0);
        } else {
          _mm256_storeu_ps(yi, a0);
          if (tail)
            _mm256_maskstore_ps(yi + 8, tm, a1);
          else
            _mm256_storeu_ps(yi + 8, a1);
        }
      }
  }
}

/* P V over the rows in tiles of 6; inlined with constant strides of P */
INL NAT_T256 void values_rows(const float *p, int64_t pis, int64_t pks, int64_t rows, int64_t Sk,
                              const float *v, int64_t ldv, int64_t Dv, float *y, int64_t ldy,
                              const float *scale) {
  for (int64_t i = 0; i < rows; i += 6) {
    int mr = (int)(rows - i < 6 ? rows - i : 6);
    const float *pi = p + i * pis, *sc = scale ? scale + i : NULL;
    float *yi = y + i * ldy;
    switch (mr) {
    case 1: pv_tile(1, Sk, pi, pis, pks, v, ldv, Dv, yi, ldy, sc); break;
    case 2: pv_tile(2, Sk, pi, pis, pks, v, ldv, Dv, yi, ldy, sc); break;
    case 3: pv_tile(3, Sk, pi, pis, pks, v, ldv, Dv, yi, ldy, sc); break;
    case 4: pv_tile(4, Sk, pi, pis, pks, v, ldv, Dv, yi, ldy, sc); break;
    case 5: pv_tile(5, Sk, pi, pis, pks, v, ldv, Dv, yi, ldy, sc); break;
    default: pv_tile(6, Sk, pi, pis, pks, v, ldv, Dv, yi, ldy, sc); break;
    }
  }
}

NAT_T256 void nat_attn256_values(const float *p, int64_t pis, int64_t pks, int64_t rows, int64_t Sk,
                                 const float *v, int64_t ldv, int64_t Dv, float *y, int64_t ldy,
                                 const float *scale) {
  if (pis == 1) /* Pᵀ: a tile's broadcasts from one row of it */
    values_rows(p, 1, pks, rows, Sk, v, ldv, Dv, y, ldy, scale);
  else if (pks == 1)
    values_rows(p, pis, 1, rows, Sk, v, ldv, Dv, y, ldy, scale);
  else
    values_rows(p, pis, pks, rows, Sk, v, ldv, Dv, y, ldy, scale);
}

NAT_T256 void nat_attn256_softmax(float *s, int64_t rows, int64_t Sk, const float *m, int64_t mrs,
                                  int64_t mcs, float *inv) {
  for (int64_t i = 0; i < rows; i++) {
    float *row = s + i * Sk;
    const float *mr = m ? m + i * mrs : NULL;
    if (mr && mcs != 1)
      for (int64_t c = 0; c < Sk; c++)
        row[c] += mr[c * mcs];
    __m256 mx = _mm256_set1_ps(-INFINITY);
    for (int64_t j = 0; j < Sk; j += 8) { /* mask added, max taken: one pass */
      __m256i k = nat_tail8(Sk - j);
      __m256 x = _mm256_maskload_ps(row + j, k);
      if (mr && mcs == 1) x = _mm256_add_ps(x, _mm256_maskload_ps(mr + j, k));
      _mm256_maskstore_ps(row + j, k, x);
      mx = _mm256_blendv_ps(mx, _mm256_max_ps(mx, x), _mm256_castsi256_ps(k));
    }
    __m256 top = _mm256_set1_ps(nat_hmax8(mx)), sum = _mm256_setzero_ps();
    for (int64_t j = 0; j < Sk; j += 8) { /* exp and sum: a second pass */
      __m256i k = nat_tail8(Sk - j);
      __m256 e = nat_exp8(_mm256_sub_ps(_mm256_maskload_ps(row + j, k), top));
      e = _mm256_and_ps(e, _mm256_castsi256_ps(k));
      _mm256_maskstore_ps(row + j, k, e);
      sum = _mm256_add_ps(sum, e);
    }
    inv[i] = 1.0f / nat_hsum8(sum); /* applied to the output rows */
  }
}

/* ---- scores transposed: keys down, query rows across the lanes ---------- */

/* The mask of key j for the 8 query rows from r0, as lanes (those past
 * `rows` 0): a broadcast when it does not vary along the rows, a load when
 * they are contiguous, else a gather. */
INL NAT_T256 __m256 mask_lanes(const float *m, int64_t mrs, int64_t mcs, int64_t j, int64_t r0,
                               __m256i lanes, __m256i gidx) {
  const float *mj = m + j * mcs + r0 * mrs;
  if (mrs == 0) return _mm256_broadcast_ss(mj);
  if (mrs == 1) return _mm256_maskload_ps(mj, lanes);
  return _mm256_mask_i32gather_ps(_mm256_setzero_ps(), mj, gidx, _mm256_castsi256_ps(lanes), 4);
}

/* st[j][r0..r0 + 8 nv) for nk keys from j0: sum over d of qt[d][..] *
 * k(j, d), then the mask added and the running maximum per row raised. */
INL NAT_T256 void qk_tile(int nk, int nv, int64_t D, const float *qt, const float *k, int64_t kjs,
                          int64_t kds, int64_t j0, int64_t r0, const float *m, int64_t mrs,
                          int64_t mcs, const __m256i *lanes, __m256i gidx, float *st, float *mx) {
  __m256 acc[6][2];
  tile_zero(acc);
  const float *kj = k + j0 * kjs;
  const __m256i none = _mm256_setzero_si256();
  for (int64_t d = 0; d < D; d++)
    tile_step(acc, nk, nv, false, none, qt + d * ATT_T + r0, kj + d * kds, kjs);
#pragma GCC unroll 2
  for (int c = 0; c < 2; c++)
    if (c < nv) {
      int64_t rc = r0 + 8 * c;
      __m256 top = _mm256_loadu_ps(mx + rc);
#pragma GCC unroll 6
      for (int r = 0; r < 6; r++)
        if (r < nk) {
          __m256 x = acc[r][c];
          if (m) x = _mm256_add_ps(x, mask_lanes(m, mrs, mcs, j0 + r, rc, lanes[rc / 8], gidx));
          _mm256_storeu_ps(st + (j0 + r) * ATT_T + rc, x);
          top = _mm256_max_ps(top, x);
        }
      _mm256_storeu_ps(mx + rc, top);
    }
}

INL NAT_T256 void qk_keys(int nv, int64_t D, const float *qt, const float *k, int64_t kjs,
                          int64_t kds, int64_t Sk, int64_t r0, const float *m, int64_t mrs,
                          int64_t mcs, const __m256i *lanes, __m256i gidx, float *st, float *mx) {
  int64_t j = 0;
  for (; j + 6 <= Sk; j += 6)
    qk_tile(6, nv, D, qt, k, kjs, kds, j, r0, m, mrs, mcs, lanes, gidx, st, mx);
  switch (Sk - j) {
  case 1: qk_tile(1, nv, D, qt, k, kjs, kds, j, r0, m, mrs, mcs, lanes, gidx, st, mx); break;
  case 2: qk_tile(2, nv, D, qt, k, kjs, kds, j, r0, m, mrs, mcs, lanes, gidx, st, mx); break;
  case 3: qk_tile(3, nv, D, qt, k, kjs, kds, j, r0, m, mrs, mcs, lanes, gidx, st, mx); break;
  case 4: qk_tile(4, nv, D, qt, k, kjs, kds, j, r0, m, mrs, mcs, lanes, gidx, st, mx); break;
  case 5: qk_tile(5, nv, D, qt, k, kjs, kds, j, r0, m, mrs, mcs, lanes, gidx, st, mx); break;
  default: break;
  }
}

NAT_T256 void nat_attn256_scores_t(const float *q, int64_t ldq, int64_t rows, int64_t D,
                                   float alpha, const float *k, int64_t kjs, int64_t kds,
                                   int64_t Sk, const float *m, int64_t mrs, int64_t mcs, float *qt,
                                   float *st, float *mx) {
  int nvec = (int)((rows + 7) / 8);
  /* qt[d][i] = alpha q[i][d], by 8 x 8 blocks transposed in registers;
   * rows past `rows` (to a multiple of 8) zero */
  __m256 sa = _mm256_set1_ps(alpha);
  for (int64_t i0 = 0; i0 < rows; i0 += 8)
    for (int64_t d0 = 0; d0 < D; d0 += 8) {
      __m256 r[8];
      __m256i cols = nat_tail8(D - d0);
      for (int t = 0; t < 8; t++)
        r[t] = i0 + t < rows ? _mm256_mul_ps(sa, _mm256_maskload_ps(q + (i0 + t) * ldq + d0, cols))
                             : _mm256_setzero_ps();
      nat_transpose8(r);
      for (int t = 0; t < 8 && d0 + t < D; t++)
        _mm256_storeu_ps(qt + (d0 + t) * ATT_T + i0, r[t]);
    }
  __m256i lanes[8];
  for (int c = 0; c < 8; c++) {
    lanes[c] = nat_tail8(rows - 8 * c);
    _mm256_storeu_ps(mx + 8 * c, _mm256_set1_ps(-INFINITY));
  }
  __m256i gidx = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                    _mm256_set1_epi32((int32_t)(mrs > 1 ? mrs : 0)));
  /* the rows in groups of two vectors, each a pass over the keys */
  for (int g = 0; g < nvec; g += 2) {
    if (nvec - g >= 2)
      qk_keys(2, D, qt, k, kjs, kds, Sk, 8 * g, m, mrs, mcs, lanes, gidx, st, mx);
    else
      qk_keys(1, D, qt, k, kjs, kds, Sk, 8 * g, m, mrs, mcs, lanes, gidx, st, mx);
  }
}

/* exp(st[j][8c..] - mx) in place down the columns for nv vectors of rows
 * from vector c0, 1 / sum per query row */
INL NAT_T256 void softmax_cols(int nv, int c0, float *st, int64_t Sk, const float *mx, float *inv) {
  __m256 top[4], sum[4];
#pragma GCC unroll 4
  for (int c = 0; c < 4; c++) {
    top[c] = c < nv ? _mm256_loadu_ps(mx + 8 * (c0 + c)) : _mm256_setzero_ps();
    sum[c] = _mm256_setzero_ps();
  }
  for (int64_t j = 0; j < Sk; j++)
#pragma GCC unroll 4
    for (int c = 0; c < 4; c++)
      if (c < nv) {
        float *x = st + j * ATT_T + 8 * (c0 + c);
        __m256 z = _mm256_sub_ps(_mm256_loadu_ps(x), top[c]);
        /* z <= 0 or NaN: max(-87, z) keeps a NaN (the second operand) */
        __m256 e = nat_exp8_poly(_mm256_max_ps(_mm256_set1_ps(-87.0f), z));
        _mm256_storeu_ps(x, e);
        sum[c] = _mm256_add_ps(sum[c], e);
      }
#pragma GCC unroll 4
  for (int c = 0; c < 4; c++)
    if (c < nv) _mm256_storeu_ps(inv + 8 * (c0 + c), _mm256_div_ps(_mm256_set1_ps(1.0f), sum[c]));
}

NAT_T256 void nat_attn256_softmax_t(float *st, int64_t rows, int64_t Sk, const float *mx,
                                    float *inv) {
  int nvec = (int)((rows + 7) / 8);
  for (int c0 = 0; c0 < nvec; c0 += 4) {
    switch (nvec - c0 < 4 ? nvec - c0 : 4) {
    case 1: softmax_cols(1, c0, st, Sk, mx, inv); break;
    case 2: softmax_cols(2, c0, st, Sk, mx, inv); break;
    case 3: softmax_cols(3, c0, st, Sk, mx, inv); break;
    default: softmax_cols(4, c0, st, Sk, mx, inv); break;
    }
  }
}

#else /* not x86-64 with GCC/Clang: never taken */

bool nat_attn256_available(void) { return false; }
void nat_attn256_values(const float *p, int64_t pis, int64_t pks, int64_t rows, int64_t Sk,
                        const float *v, int64_t ldv, int64_t Dv, float *y, int64_t ldy,
                        const float *scale) {}
void nat_attn256_scores_t(const float *q, int64_t ldq, int64_t rows, int64_t D, float alpha,
                          const float *k, int64_t kjs, int64_t kds, int64_t Sk, const float *m,
                          int64_t mrs, int64_t mcs, float *qt, float *st, float *mx) {}
void nat_attn256_softmax_t(float *st, int64_t rows, int64_t Sk, const float *mx, float *inv) {}
void nat_attn256_softmax(float *s, int64_t rows, int64_t Sk, const float *m, int64_t mrs,
                         int64_t mcs, float *inv) {}

#endif
