/* FusedConvNhwc's depthwise convolutions of any window, stride and
 * dilation on AVX-512: native_nhwc_dw256.c's design (see there; no padded
 * copy, taps in the padding skipped) on vectors of 16 channels, tiles of
 * n outputs x nv vectors with n nv = 8 or 16 (16 x 1, 8 x 1, 4 x 2, 2 x 4,
 * 1 x 8); the sliding rows are native_nhwc_dwr_tmpl.h's. */
#include <stdbool.h>
#include <stdint.h>

#include "backends/native/native.h"
#include "backends/native/native_nhwc_post.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "backends/native/native_avx512.h"

#define T512 __attribute__((target("avx512f,fma")))
#define INL static inline __attribute__((always_inline))

#define LD16(p, tl, m) ((tl) ? _mm512_maskz_loadu_ps((m), (p)) : _mm512_loadu_ps(p))
#define ST16(p, tl, m, v)                                                                          \
  do {                                                                                             \
    if (tl)                                                                                        \
      _mm512_mask_storeu_ps((p), (m), (v));                                                        \
    else                                                                                           \
      _mm512_storeu_ps((p), (v));                                                                  \
  } while (0)

/* One output row of the conv: where its taps are. */
typedef struct dwk_row {
  int64_t x;      /* offset in c->x of output column 0's first tap (may lie outside) */
  int64_t k0, k1; /* kernel rows inside the input */
  int64_t ts, os; /* floats from one kernel column / output column to the next */
  int64_t rs;     /* floats from one kernel row to the next */
  const float *z; /* residual row or NULL */
  float *y;       /* output row */
  __m512 lo, hi;
  nat_post post; /* c->post in registers before the store (NAT_POST_NONE: none) */
  __m512 pa, pb; /* its HardSigmoid alpha and beta */
} dwk_row;

/* n outputs (from column ow) x nv vectors (from channel cb) over kernel
 * rows [k0, k1) and columns [j0, j1); tl: the last vector is masked by m. */
INL T512 void dwk_tile(const int n, const int nv, const bool tl, const nat_nhwc *c,
                       const dwk_row *g, int64_t ow, int64_t cb, int64_t j0, int64_t j1,
                       __mmask16 m) {
  const int64_t C = c->C, kw = c->kw;
  __m512 acc[16][8];
#pragma GCC unroll 8
  for (int v = 0; v < nv; v++) {
    __m512 bv = c->b ? LD16(c->b + cb + 16 * v, tl && v == nv - 1, m) : _mm512_setzero_ps();
#pragma GCC unroll 16
    for (int t = 0; t < n; t++)
      acc[t][v] = bv;
  }
  for (int64_t ki = g->k0; ki < g->k1; ki++) {
    const float *xk = c->x + (g->x + ow * g->os + cb + ki * g->rs + j0 * g->ts);
    const float *wk = c->w + (ki * kw + j0) * C + cb;
    for (int64_t kj = j0; kj < j1; kj++, xk += g->ts, wk += C) {
      __m512 wv[8];
#pragma GCC unroll 8
      for (int v = 0; v < nv; v++)
        wv[v] = LD16(wk + 16 * v, tl && v == nv - 1, m);
#pragma GCC unroll 16
      for (int t = 0; t < n; t++)
#pragma GCC unroll 8
        for (int v = 0; v < nv; v++)
          acc[t][v] = _mm512_fmadd_ps(LD16(xk + t * g->os + 16 * v, tl && v == nv - 1, m), wv[v],
                                      acc[t][v]);
    }
  }
#pragma GCC unroll 16
  for (int t = 0; t < n; t++)
#pragma GCC unroll 8
    for (int v = 0; v < nv; v++) {
      bool tv = tl && v == nv - 1;
      __m512 r = acc[t][v];
      if (g->z) r = _mm512_add_ps(r, LD16(g->z + (ow + t) * C + cb + 16 * v, tv, m));
      r = _mm512_min_ps(_mm512_max_ps(r, g->lo), g->hi);
      if (g->post.kind != NAT_POST_NONE) r = nat_post16(&g->post, g->pa, g->pb, r);
      ST16(g->y + (ow + t) * C + cb + 16 * v, tv, m, r);
    }
}

#define TILE_ARGS                                                                                  \
  const nat_nhwc *c, const dwk_row *g, int64_t ow, int64_t cb, int64_t j0, int64_t j1, __mmask16 m
#define TILE_PASS c, g, ow, cb, j0, j1, m
#define TILE_NV(N, NV)                                                                             \
  case NV * 2: dwk_tile(N, NV, false, TILE_PASS); break;                                           \
  case NV * 2 + 1: dwk_tile(N, NV, true, TILE_PASS); break;

static T512 void tile16(int nv, bool tl, TILE_ARGS) {
  switch (nv * 2 + tl) { TILE_NV(16, 1) }
}
static T512 void tile8(int nv, bool tl, TILE_ARGS) {
  switch (nv * 2 + tl) { TILE_NV(8, 1) }
}
static T512 void tile4(int nv, bool tl, TILE_ARGS) {
  switch (nv * 2 + tl) { TILE_NV(4, 1) TILE_NV(4, 2) }
}
static T512 void tile2(int nv, bool tl, TILE_ARGS) {
  switch (nv * 2 + tl) { TILE_NV(2, 1) TILE_NV(2, 2) TILE_NV(2, 3) TILE_NV(2, 4) }
}
static T512 void tile1(int nv, bool tl, TILE_ARGS) {
  switch (nv * 2 + tl) {
    TILE_NV(1, 1)
    TILE_NV(1, 2)
    TILE_NV(1, 3) TILE_NV(1, 4) TILE_NV(1, 5) TILE_NV(1, 6) TILE_NV(1, 7) TILE_NV(1, 8)
  }
}

/* Outputs [ow, ow + n) (n 16, 8, 4, 2 or 1) over every channel, nv = 8 / n
 * vectors a tile (1 for 16). */
static T512 void dwk_run(int n, const nat_nhwc *c, const dwk_row *g, int64_t ow, int64_t j0,
                         int64_t j1) {
  const int64_t C = c->C, step = n >= 8 ? 16 : 128 / n;
  for (int64_t cb = 0; cb < C; cb += step) {
    int64_t left = C - cb < step ? C - cb : step;
    int nv = (int)((left + 15) / 16);
    bool tl = left % 16 != 0;
    __mmask16 m = nat_tail16(left - 16 * (nv - 1));
    switch (n) {
    case 16: tile16(nv, tl, c, g, ow, cb, j0, j1, m); break;
    case 8: tile8(nv, tl, c, g, ow, cb, j0, j1, m); break;
    case 4: tile4(nv, tl, c, g, ow, cb, j0, j1, m); break;
    case 2: tile2(nv, tl, c, g, ow, cb, j0, j1, m); break;
    default: tile1(nv, tl, c, g, ow, cb, j0, j1, m); break;
    }
  }
}

/* ---- sliding rows: stride 1 or 2, no dilation, 3, 5 or 7 columns --------- */

/* native_nhwc_dwr_tmpl.h on vectors of 16 channels: runs of up to 16
 * outputs (16 accumulators, 7 weights and the input of 32 registers). */
#define DT T512
#define DV __m512
#define DMASK __mmask16
#define DL 16
#define DLD(p, tl, m) LD16(p, tl, m)
#define DST(p, tl, m, v) ST16(p, tl, m, v)
#define DTAIL(n) nat_tail16(n)
#define DSET1(x) _mm512_set1_ps(x)
#define DZERO() _mm512_setzero_ps()
#define DFMA(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define DADD(a, b) _mm512_add_ps((a), (b))
#define DMIN(a, b) _mm512_min_ps((a), (b))
#define DMAX(a, b) _mm512_max_ps((a), (b))
#define DPOST(p, a, b, v) nat_post16((p), (a), (b), (v))
#define DNMAX 16
#define DNAME(x) dw512_##x
#define DWR_EACH(X) X(16) X(14) X(8) X(7) X(4) X(2) X(1)
#include "backends/native/native_nhwc_dwr_tmpl.h"

/* The kernel columns [j0, j1) of output column ow inside the input. */
static inline void dwk_cols(const nat_nhwc *c, int64_t ow, int64_t *j0, int64_t *j1) {
  int64_t dw = c->dw > 0 ? c->dw : 1, iw0 = ow * c->sw - c->pl;
  *j0 = iw0 < 0 ? (-iw0 + dw - 1) / dw : 0;
  *j1 = iw0 + (c->kw - 1) * dw < c->W ? c->kw : iw0 < c->W ? (c->W - 1 - iw0) / dw + 1 : 0;
  if (*j1 < *j0) *j1 = *j0;
}

/* Output rows [r0, r1) (of N*OH). c->x is NHWC (xs_c == 1) with c->pt,
 * c->pl rows and columns of zero padding before it (any after), or a
 * copy already padded (pt = pl = 0). */
T512 void nat_nhwc512_dwk(const nat_nhwc *c, int64_t r0, int64_t r1) {
  if (dw512_dwr_fits(c)) {
    dw512_dwr_rows(c, r0, r1);
    return;
  }
  const int64_t C = c->C, OW = c->OW, dh = c->dh > 0 ? c->dh : 1, dw = c->dw > 0 ? c->dw : 1;
  dwk_row g;
  g.lo = _mm512_set1_ps(c->lo), g.hi = _mm512_set1_ps(c->hi);
  nat_post_of(c->post, &g.post); /* the driver leaves these to the tiles */
  g.pa = _mm512_set1_ps(g.post.a), g.pb = _mm512_set1_ps(g.post.b);
  g.ts = dw * c->xs_w, g.os = c->sw * c->xs_w, g.rs = dh * c->xs_h;
  /* columns: a = ceil(pl / sw); b - 1 the last with its last tap inside */
  int64_t span = (c->kw - 1) * dw, a = (c->pl + c->sw - 1) / c->sw, b = 0;
  if (c->W - 1 + c->pl - span >= 0) b = (c->W - 1 + c->pl - span) / c->sw + 1;
  if (a > OW) a = OW;
  if (b > OW) b = OW;
  if (b < a) b = a;
  for (int64_t r = r0; r < r1; r++) {
    int64_t n = r / c->OH, ih0 = r % c->OH * c->sh - c->pt;
    g.k0 = ih0 < 0 ? (-ih0 + dh - 1) / dh : 0;
    g.k1 = ih0 + (c->kh - 1) * dh < c->H ? c->kh : ih0 < c->H ? (c->H - 1 - ih0) / dh + 1 : 0;
    if (g.k1 < g.k0) g.k1 = g.k0;
    g.x = n * c->xs_n + ih0 * c->xs_h - c->pl * c->xs_w;
    g.y = c->y + (r - c->y_r0) * OW * C;
    g.z = c->z ? c->z + r * OW * C : NULL;
    for (int64_t ow = 0; ow < OW;) {
      if (ow < a || ow >= b) {
        /* columns in the padding: their own kernel columns, in runs of
         * those that share them (dilated convs: d neighbours do) */
        int64_t j0, j1, j0n, j1n, same = 1, end = ow < a ? a : OW;
        dwk_cols(c, ow, &j0, &j1);
        while (ow + same < end && same < 16 &&
               (dwk_cols(c, ow + same, &j0n, &j1n), j0n == j0 && j1n == j1))
          same++;
        int run = same >= 16 ? 16 : same >= 8 ? 8 : same >= 4 ? 4 : same >= 2 ? 2 : 1;
        dwk_run(run, c, &g, ow, j0, j1);
        ow += run;
        continue;
      }
      int64_t left = b - ow;
      int run = left >= 16 ? 16 : left >= 8 ? 8 : left >= 4 ? 4 : left >= 2 ? 2 : 1;
      dwk_run(run, c, &g, ow, 0, c->kw);
      ow += run;
    }
  }
}

T512 void nat_nhwc512_dwr_row(const float *const *rows, int K, int S, int64_t W, int64_t OW,
                              int64_t C, int64_t c0, int64_t c1, int64_t pl, const float *w,
                              const float *b, float lo, float hi, const ait_act *post, float *y) {
  dw512_dwr_row(rows, K, S, W, OW, C, c0, c1, pl, w, b, lo, hi, post, y);
}

#else

void nat_nhwc512_dwk(const nat_nhwc *c, int64_t r0, int64_t r1) {}
void nat_nhwc512_dwr_row(const float *const *rows, int K, int S, int64_t W, int64_t OW, int64_t C,
                         int64_t c0, int64_t c1, int64_t pl, const float *w, const float *b,
                         float lo, float hi, const ait_act *post, float *y) {}

#endif
