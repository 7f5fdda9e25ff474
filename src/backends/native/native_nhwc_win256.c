/* FusedConvNhwc's window convolutions (group 1, any kernel, stride,
 * dilation and padding; NHWC input of at least a few channels) on
 * AVX2+FMA: an implicit GEMM. Output pixels are the rows of the product,
 * the reduction runs over taps x input channels, and the weights are
 * packed once per node in column blocks (nat_pack_tiles of the HWIO
 * weights, [kh kw C] x M: the pointwise tiles' layout with K = kh kw C).
 * A register tile of mr pixels x nv vectors of 8 channels (6 x 16 or
 * 4 x 24: at most 12 accumulators, the weight row and one broadcast in
 * 16 registers) takes, per tap, one input pointer per pixel: the pixel's
 * input row at that tap, or a row of zeros where the tap falls in the
 * padding, so no border case reaches the inner loop, which is the
 * pointwise tile's (two weight loads, mr broadcasts, 2 mr multiply-adds a
 * channel). No im2col copy is made. Bias, residual and clamp on the tile
 * before it is stored; the last vector through a lane mask when the block
 * is narrower than the tile. The AVX-512 twin is native_nhwc_win512.c. */
#include <stdbool.h>
#include <stdint.h>

#include "backends/native/native.h"
#include "backends/native/native_nhwc_pw.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "backends/native/native_avx2.h"

#define T256 __attribute__((target("avx2,fma")))
#define INL static inline __attribute__((always_inline))

/* Input channels read per pointer at a time: a tap in the padding reads
 * this many zeros (longer rows of channels take several passes). */
#define WIN_ZEROS 2048
static const float win_zeros[WIN_ZEROS];

#define LD8(p, tl, m) ((tl) ? _mm256_maskload_ps((p), (m)) : _mm256_loadu_ps(p))
#define ST8(p, tl, m, v)                                                                           \
  do {                                                                                             \
    if (tl)                                                                                        \
      _mm256_maskstore_ps((p), (m), (v));                                                          \
    else                                                                                           \
      _mm256_storeu_ps((p), (v));                                                                  \
  } while (0)

/* Where pixels read and write: per pixel of a panel (nat_win_panel) its
 * image's offset, the input row and column of its first tap (before
 * dilation) and its output pixel; a tile reads the entries from its first
 * pixel on. */
typedef struct win_px {
  const int64_t *xo, *ih, *iw, *q;
  int64_t qy; /* output pixel q is at y + (q - qy) ldy (y_r0 OW: a ring row) */
} win_px;

/* mr pixels x nv vectors of outputs (channels m .. m + 8 nv of the packed
 * block w, K x ldw): sum over taps and channels, then bias, residual,
 * clamp and store; the last vector through mask lm when tail. */
INL T256 void win_tile(const int mr, const int nv, const bool tail, const nat_nhwc *c,
                       const win_px *px, const float *w, int64_t ldw, __m256i lm, const float *b,
                       const float *z, int64_t ldz, float *y, int64_t ldy, __m256 lo, __m256 hi,
                       const float *wn) {
  __m256 acc[6][3];
#pragma GCC unroll 3
  for (int j = 0; j < 3; j++) {
    if (j >= nv) break;
    __m256 bj = b ? LD8(b + 8 * j, tail && j == nv - 1, lm) : _mm256_setzero_ps();
#pragma GCC unroll 6
    for (int i = 0; i < 6; i++)
      if (i < mr) acc[i][j] = bj;
  }
  const int64_t C = c->C, H = c->H, W = c->W, xs_h = c->xs_h, xs_w = c->xs_w;
  const int64_t dh = c->dh > 0 ? c->dh : 1, dw = c->dw > 0 ? c->dw : 1;
  /* row runs (a padded input, no dilation across the row): a kernel row's
   * kw taps are one run of kw C floats, one pointer per pixel */
  const int64_t taps = c->win_rows ? 1 : c->kw, run = c->win_rows ? c->kw * C : C;
  for (int64_t ki = 0; ki < c->kh; ki++)
    for (int64_t kj = 0; kj < taps; kj++)
      for (int64_t c0 = 0; c0 < run; c0 += WIN_ZEROS) {
        int64_t cn = run - c0 < WIN_ZEROS ? run - c0 : WIN_ZEROS;
        const float *p[6];
        bool any = false;
#pragma GCC unroll 6
        for (int i = 0; i < 6; i++) {
          if (i >= mr) break;
          int64_t ih = px->ih[i] + ki * dh, iw = px->iw[i] + kj * dw;
          bool in = (uint64_t)ih < (uint64_t)H && (uint64_t)iw < (uint64_t)W;
          p[i] = in ? c->x + px->xo[i] + ih * xs_h + iw * xs_w + c0 : win_zeros;
          any |= in;
        }
        if (!any) continue; /* the tap is padding for the whole tile (dilated convs) */
        const float *wk = w + ((ki * c->kw + kj) * C + c0) * ldw;
        const float *wq = wn ? wn + ((ki * c->kw + kj) * C + c0) * 16 : NULL;
        for (int64_t k = 0; k < cn; k++, wk += ldw) {
          if (wq) _mm_prefetch((const char *)(wq + 16 * k), _MM_HINT_T1); /* nat_pw_next */
          __m256 wv[3];
#pragma GCC unroll 3
          for (int j = 0; j < 3; j++)
            if (j < nv) wv[j] = _mm256_loadu_ps(wk + 8 * j); /* packed: zero-padded */
#pragma GCC unroll 6
          for (int i = 0; i < 6; i++) {
            if (i >= mr) break;
            __m256 xb = _mm256_broadcast_ss(p[i] + k);
#pragma GCC unroll 3
            for (int j = 0; j < 3; j++)
              if (j < nv) acc[i][j] = _mm256_fmadd_ps(xb, wv[j], acc[i][j]);
          }
        }
      }
#pragma GCC unroll 6
  for (int i = 0; i < 6; i++) {
    if (i >= mr) break;
#pragma GCC unroll 3
    for (int j = 0; j < 3; j++) {
      if (j >= nv) break;
      const bool tl = tail && j == nv - 1;
      __m256 v = acc[i][j];
      if (z) v = _mm256_add_ps(v, LD8(z + px->q[i] * ldz + 8 * j, tl, lm));
      v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
      ST8(y + (px->q[i] - px->qy) * ldy + 8 * j, tl, lm, v);
    }
  }
}

#define WIN_ARGS                                                                                   \
  const nat_nhwc *c, const win_px *px, const float *w, int64_t ldw, __m256i lm, const float *b,    \
      const float *z, int64_t ldz, float *y, int64_t ldy, __m256 lo, __m256 hi, const float *wn
#define WIN_PASS c, px, w, ldw, lm, b, z, ldz, y, ldy, lo, hi, wn
#define WIN_CASE(R, NV)                                                                            \
  case R:                                                                                          \
    if (tail)                                                                                      \
      win_tile(R, NV, true, WIN_PASS);                                                             \
    else                                                                                           \
      win_tile(R, NV, false, WIN_PASS);                                                            \
    break;

static T256 void win_nv1(int mr, bool tail, WIN_ARGS) {
  switch (mr) {
    WIN_CASE(1, 1)
    WIN_CASE(2, 1)
    WIN_CASE(3, 1)
    WIN_CASE(4, 1)
    WIN_CASE(5, 1)
    WIN_CASE(6, 1)
  default: break;
  }
}
static T256 void win_nv2(int mr, bool tail, WIN_ARGS) {
  switch (mr) {
    WIN_CASE(1, 2)
    WIN_CASE(2, 2)
    WIN_CASE(3, 2)
    WIN_CASE(4, 2)
    WIN_CASE(5, 2)
    WIN_CASE(6, 2)
  default: break;
  }
}
static T256 void win_nv3(int mr, bool tail, WIN_ARGS) {
  switch (mr) {
    WIN_CASE(1, 3)
    WIN_CASE(2, 3)
    WIN_CASE(3, 3)
    WIN_CASE(4, 3)
  default: break;
  }
}

/* Rows a tile of nv vectors takes at most. */
static const int win_rows_of[4] = {0, 6, 6, 4};

/* The tile for P pixels by M channels: 6 x 2 or 4 x 3 vectors (6 x 1
 * where M fits one vector), the one wasting the fewest slots (ties: 6 x 2,
 * whose 8 loads per 12 multiply-adds leave the load ports room). */
void nat_nhwc256_win_tile(int64_t P, int64_t M, int *mr, int *nv) {
  static const int cand[][2] = {{6, 2}, {4, 3}};
  int64_t m8 = (M + 7) / 8;
  if (m8 <= 1) {
    *mr = 6, *nv = 1;
    return;
  }
  double best = -1;
  for (size_t i = 0; i < sizeof cand / sizeof cand[0]; i++) {
    int64_t r = cand[i][0], v = cand[i][1];
    double use =
        (double)P / (double)((P + r - 1) / r * r) * ((double)m8 / (double)((m8 + v - 1) / v * v));
    if (use > best + 1e-9) best = use, *mr = (int)r, *nv = (int)v;
  }
}

/* Panels of NAT_WIN_PANEL pixels: the panel's tiles pass over one block
 * of weights (K x bw) after another while its input rows stay in L2. */

T256 void nat_nhwc256_win(const nat_nhwc *c, int64_t p0, int64_t p1, int64_t m0, int64_t m1) {
  __m256 lo = _mm256_set1_ps(c->lo), hi = _mm256_set1_ps(c->hi);
  int64_t K = c->kh * c->kw * c->C, M = c->M, bw = 8 * c->pw_nv;
  int64_t ldy = c->ldy > 0 ? c->ldy : M, ldz = c->ldz > 0 ? c->ldz : M;
  int rows = c->pw_mr;
  nat_win_panel pn;
  for (int64_t q0 = p0; q0 < p1; q0 += NAT_WIN_PANEL) {
    int64_t q1 = q0 + NAT_WIN_PANEL < p1 ? q0 + NAT_WIN_PANEL : p1;
    nat_win_panel_fill(c, q0, q1, &pn); /* once per panel */
    for (int64_t m = m0; m < m1; m += bw) {
      int64_t mc = m1 - m < bw ? m1 - m : bw;
      int nv = (int)((mc + 7) / 8), most = win_rows_of[nv];
      bool tail = mc % 8 != 0;
      __m256i lm = nat_tail8(mc - 8 * (nv - 1));
      const float *w = c->wpk + m * K, *b = c->b ? c->b + m : NULL;
      float *y = c->y + m;
      const float *z = c->z ? c->z + m : NULL;
      /* the next block's weights into L2 over this block's first tiles
       * (as native_nhwc_win512.c) */
      const float *next = m + bw < m1 ? w + bw * K : NULL;
      int64_t t = 0;
      for (int s = 0; s < pn.nseg; s++)
        for (int p = pn.seg[s]; p < pn.seg[s + 1]; p += rows) {
          int mr = pn.seg[s + 1] - p < rows ? pn.seg[s + 1] - p : rows;
          for (int i0 = 0; i0 < mr; i0 += most) {
            int r = mr - i0 < most ? mr - i0 : most, u = p + i0;
            win_px px = {pn.xo + u, pn.ih + u, pn.iw + u, pn.q + u, c->y_r0 * c->OW};
            const float *wn = nat_pw_next(next, K, bw, t++);
            switch (nv) {
            case 1: win_nv1(r, tail, c, &px, w, bw, lm, b, z, ldz, y, ldy, lo, hi, wn); break;
            case 2: win_nv2(r, tail, c, &px, w, bw, lm, b, z, ldz, y, ldy, lo, hi, wn); break;
            default: win_nv3(r, tail, c, &px, w, bw, lm, b, z, ldz, y, ldy, lo, hi, wn); break;
            }
          }
        }
    }
  }
}

#else

void nat_nhwc256_win_tile(int64_t P, int64_t M, int *mr, int *nv) { *mr = 6, *nv = 2; }
void nat_nhwc256_win(const nat_nhwc *c, int64_t p0, int64_t p1, int64_t m0, int64_t m1) {}

#endif
