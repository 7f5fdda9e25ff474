/* FusedConvNhwc's window convolutions on AVX-512: native_nhwc_win256.c's
 * implicit GEMM (see there) on vectors of 16 channels and 32 registers:
 * tiles of 6 pixels x 64 channels, 8 x 48 or 7 x 48 (at most 24
 * accumulators), 8 x 32 where the channels are few; the last vector
 * masked when the block is narrower than the tile. */
#include <stdbool.h>
#include <stdint.h>

#include "backends/native/native.h"
#include "backends/native/native_nhwc_pw.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "backends/native/native_avx512.h"

#define T512 __attribute__((target("avx512f,fma")))
#define INL static inline __attribute__((always_inline))

#define WIN_ZEROS 2048
static const float win_zeros[WIN_ZEROS];

/* Where pixels read and write: per pixel of a panel (nat_win_panel) its
 * image's offset, the input row and column of its first tap (before
 * dilation) and its output pixel; a tile reads the entries from its first
 * pixel on. */
typedef struct win_px {
  const int64_t *xo, *ih, *iw, *q;
  int64_t qy; /* output pixel q is at y + (q - qy) ldy (y_r0 OW: a ring row) */
} win_px;

INL T512 void win_tile(const int mr, const int nv, const nat_nhwc *c, const win_px *px,
                       const float *w, int64_t ldw, __mmask16 lm, const float *b, const float *z,
                       int64_t ldz, float *y, int64_t ldy, __m512 lo, __m512 hi, const float *wn) {
  __m512 acc[8][4];
  __mmask16 m[4];
#pragma GCC unroll 4
  for (int j = 0; j < 4; j++)
    m[j] = j == nv - 1 ? lm : (__mmask16)0xFFFF;
#pragma GCC unroll 4
  for (int j = 0; j < 4; j++) {
    if (j >= nv) break;
    __m512 bj = b ? _mm512_maskz_loadu_ps(m[j], b + 16 * j) : _mm512_setzero_ps();
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++)
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
        const float *p[8];
        bool any = false;
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++) {
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
          __m512 wv[4];
#pragma GCC unroll 4
          for (int j = 0; j < 4; j++)
            if (j < nv) wv[j] = _mm512_loadu_ps(wk + 16 * j); /* packed: zero-padded */
#pragma GCC unroll 8
          for (int i = 0; i < 8; i++) {
            if (i >= mr) break;
            __m512 xb = _mm512_set1_ps(p[i][k]);
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++)
              if (j < nv) acc[i][j] = _mm512_fmadd_ps(xb, wv[j], acc[i][j]);
          }
        }
      }
#pragma GCC unroll 8
  for (int i = 0; i < 8; i++) {
    if (i >= mr) break;
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
      if (j >= nv) break;
      __m512 v = acc[i][j];
      if (z) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m[j], z + px->q[i] * ldz + 16 * j));
      v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
      _mm512_mask_storeu_ps(y + (px->q[i] - px->qy) * ldy + 16 * j, m[j], v);
    }
  }
}

#define WIN_ARGS                                                                                   \
  const nat_nhwc *c, const win_px *px, const float *w, int64_t ldw, __mmask16 lm, const float *b,  \
      const float *z, int64_t ldz, float *y, int64_t ldy, __m512 lo, __m512 hi, const float *wn
#define WIN_PASS c, px, w, ldw, lm, b, z, ldz, y, ldy, lo, hi, wn
#define WIN_CASE(R, NV)                                                                            \
  case R:                                                                                          \
    win_tile(R, NV, WIN_PASS);                                                                     \
    break;
#define WIN_NV(NV)                                                                                 \
  static T512 void win_nv##NV(int mr, WIN_ARGS) {                                                  \
    switch (mr) {                                                                                  \
      WIN_CASE(1, NV)                                                                              \
      WIN_CASE(2, NV)                                                                              \
      WIN_CASE(3, NV)                                                                              \
      WIN_CASE(4, NV)                                                                              \
      WIN_CASE(5, NV)                                                                              \
      WIN_CASE(6, NV)                                                                              \
      WIN_CASE(7, NV)                                                                              \
      WIN_CASE(8, NV)                                                                              \
    default: break;                                                                                \
    }                                                                                              \
  }
WIN_NV(1)
WIN_NV(2)
WIN_NV(3)
WIN_NV(4)

/* Rows a tile of nv vectors takes at most (24 accumulators; 8 pointers). */
static const int win_rows_of[5] = {0, 8, 8, 8, 6};

void nat_nhwc512_win_tile(int64_t P, int64_t M, int *mr, int *nv) {
  static const int cand[][2] = {{6, 4}, {8, 3}, {7, 3}, {8, 2}};
  int64_t m16 = (M + 15) / 16;
  double best = -1;
  for (size_t i = 0; i < sizeof cand / sizeof cand[0]; i++) {
    int64_t r = cand[i][0], v = cand[i][1];
    double use =
        (double)P / (double)((P + r - 1) / r * r) * ((double)m16 / (double)((m16 + v - 1) / v * v));
    if (use > best + 1e-9) best = use, *mr = (int)r, *nv = (int)v;
  }
}

T512 void nat_nhwc512_win(const nat_nhwc *c, int64_t p0, int64_t p1, int64_t m0, int64_t m1) {
  __m512 lo = _mm512_set1_ps(c->lo), hi = _mm512_set1_ps(c->hi);
  int64_t K = c->kh * c->kw * c->C, M = c->M, bw = 16 * c->pw_nv;
  int64_t ldy = c->ldy > 0 ? c->ldy : M, ldz = c->ldz > 0 ? c->ldz : M;
  int rows = c->pw_mr;
  nat_win_panel pn;
  for (int64_t q0 = p0; q0 < p1; q0 += NAT_WIN_PANEL) {
    int64_t q1 = q0 + NAT_WIN_PANEL < p1 ? q0 + NAT_WIN_PANEL : p1;
    nat_win_panel_fill(c, q0, q1, &pn); /* once per panel */
    for (int64_t m = m0; m < m1; m += bw) {
      int64_t mc = m1 - m < bw ? m1 - m : bw;
      int nv = (int)((mc + 15) / 16), most = win_rows_of[nv];
      __mmask16 lm = nat_tail16(mc - 16 * (nv - 1));
      const float *w = c->wpk + m * K, *b = c->b ? c->b + m : NULL;
      float *y = c->y + m;
      const float *z = c->z ? c->z + m : NULL;
      /* the next block's weights into L2 over this block's first tiles:
       * read once a run where the pixels are few (ResNet-50's last 3x3
       * and 1x1 stride-2 convs at batch 1: 8-9 MB from DRAM, 7 x 7
       * outputs) */
      const float *next = m + bw < m1 ? w + bw * K : NULL;
      int64_t t = 0;
      for (int s = 0; s < pn.nseg; s++)
        for (int p = pn.seg[s]; p < pn.seg[s + 1]; p += rows) {
          int mr = pn.seg[s + 1] - p < rows ? pn.seg[s + 1] - p : rows;
          for (int i0 = 0; i0 < mr; i0 += most) {
            int r = mr - i0 < most ? mr - i0 : most;
            int u = p + i0;
            win_px px = {pn.xo + u, pn.ih + u, pn.iw + u, pn.q + u, c->y_r0 * c->OW};
            const float *wn = nat_pw_next(next, K, bw, t++);
            switch (nv) {
            case 1: win_nv1(r, c, &px, w, bw, lm, b, z, ldz, y, ldy, lo, hi, wn); break;
            case 2: win_nv2(r, c, &px, w, bw, lm, b, z, ldz, y, ldy, lo, hi, wn); break;
            case 3: win_nv3(r, c, &px, w, bw, lm, b, z, ldz, y, ldy, lo, hi, wn); break;
            default: win_nv4(r, c, &px, w, bw, lm, b, z, ldz, y, ldy, lo, hi, wn); break;
            }
          }
        }
    }
  }
}

#else

void nat_nhwc512_win_tile(int64_t P, int64_t M, int *mr, int *nv) { *mr = 6, *nv = 4; }
void nat_nhwc512_win(const nat_nhwc *c, int64_t p0, int64_t p1, int64_t m0, int64_t m1) {}

#endif
