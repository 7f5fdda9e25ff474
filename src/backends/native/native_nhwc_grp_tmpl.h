/* The grouped window conv tiles of native_nhwc_grp256.c and
 * native_nhwc_grp512.c, written once: included by each after it defines
 * GT (the target attribute), GV (the vector type), GL (floats a vector),
 * GLOAD, GSET1, GFMA, GMIN, GMAX, GADD, GZERO, GSTORE, the tile limits
 * GMR_1/GNG_1 (one vector a merged group) and GMR_2/GNG_2 (two), and
 * GNAME(x) (the level's prefix). See native_nhwc_grp256.c for the design.
 * Not a header of its own: no include guard, nothing else includes it. */

#define INL static inline __attribute__((always_inline))

/* Input channels of ng merged groups a tap in the padding reads as zeros. */
#define GRP_ZEROS 2048
static const float grp_zeros[GRP_ZEROS];

/* Where the pixels of a tile read and write (nat_win_panel's entries from
 * the tile's first pixel on). */
typedef struct grp_px {
  const int64_t *xo, *ih, *iw, *q;
  int64_t qy; /* output pixel q is at y + (q - qy) ldy */
} grp_px;

/* mr pixels x ng merged groups (from the one whose packed weights are at
 * w, input channels at x + cx, outputs at channel cy) x V vectors of each
 * group's Mm = V GL outputs: per tap the mr input pointers once, then per
 * group its Cm channels (one broadcast of a pixel's input feeds V
 * multiply-adds); bias, residual and clamp, then stored. */
INL GT void grp_tile(const int mr, const int ng, const int V, const int CM, const nat_grp *g,
                     const grp_px *px, const float *w, int64_t cx, int64_t cy) {
  const nat_nhwc *c = g->c;
  /* CM: the channels a merged group as a constant (0: g->Cm), so that the
   * channel loop unrolls and the weight rows sit at constant offsets */
  const int64_t Cm = CM ? CM : g->Cm, Mm = V * GL, gs = g->gstride;
  GV acc[8][4];
#pragma GCC unroll 4
  for (int j = 0; j < 4; j++) {
    if (j >= ng * V) break;
    GV bj = c->b ? GLOAD(c->b + cy + j / V * Mm + GL * (j % V)) : GZERO();
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++)
      if (i < mr) acc[i][j] = bj;
  }
  const int64_t H = c->H, W = c->W, xs_h = c->xs_h, xs_w = c->xs_w;
  const int64_t dh = c->dh > 0 ? c->dh : 1, dw = c->dw > 0 ? c->dw : 1;
  for (int64_t ki = 0; ki < c->kh; ki++)
    for (int64_t kj = 0; kj < c->kw; kj++) {
      const float *p[8];
      bool any = false;
#pragma GCC unroll 8
      for (int i = 0; i < 8; i++) {
        if (i >= mr) break;
        int64_t ih = px->ih[i] + ki * dh, iw = px->iw[i] + kj * dw;
        bool in = (uint64_t)ih < (uint64_t)H && (uint64_t)iw < (uint64_t)W;
        p[i] = in ? c->x + px->xo[i] + ih * xs_h + iw * xs_w + cx : grp_zeros;
        any |= in;
      }
      if (!any) continue; /* padding for the whole tile */
      const float *wt = w + (ki * c->kw + kj) * Cm * Mm;
#pragma GCC unroll 4
      for (int jg = 0; jg < 4; jg++) {
        if (jg >= ng) break;
        const float *wk = wt + jg * gs;
        const int64_t off = jg * Cm;
#pragma GCC unroll 2
        for (int64_t k = 0; k < Cm; k++, wk += Mm) {
          GV wv[2];
#pragma GCC unroll 2
          for (int v = 0; v < 2; v++)
            if (v < V) wv[v] = GLOAD(wk + GL * v);
#pragma GCC unroll 8
          for (int i = 0; i < 8; i++) {
            if (i >= mr) break;
            GV xb = GSET1(p[i][off + k]);
#pragma GCC unroll 2
            for (int v = 0; v < 2; v++)
              if (v < V) acc[i][jg * V + v] = GFMA(xb, wv[v], acc[i][jg * V + v]);
          }
        }
      }
    }
  const GV lo = GSET1(c->lo), hi = GSET1(c->hi);
  const int64_t ldy = c->M, ldz = c->M;
#pragma GCC unroll 8
  for (int i = 0; i < 8; i++) {
    if (i >= mr) break;
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
      if (j >= ng * V) break;
      int64_t ch = cy + j / V * Mm + GL * (j % V);
      GV v = acc[i][j];
      if (c->z) v = GADD(v, GLOAD(c->z + px->q[i] * ldz + ch));
      v = GMIN(GMAX(v, lo), hi);
      GSTORE(c->y + (px->q[i] - px->qy) * ldy + ch, v);
    }
  }
}

#define GRP_ARGS const nat_grp *g, const grp_px *px, const float *w, int64_t cx, int64_t cy
#define GRP_PASS g, px, w, cx, cy
#define GRP_C(R, NG, V, CM)                                                                        \
  case R: grp_tile(R, NG, V, CM, GRP_PASS); break;

/* One function per (groups, vectors, constant channels) of a tile,
 * switching on its pixels. */
#define GRP_FN(NAME, NG, V, CM, CASES)                                                             \
  static GT void NAME(int mr, GRP_ARGS) {                                                          \
    switch (mr) { CASES(NG, V, CM) default : break; }                                              \
  }
#define GRP_R3(NG, V, CM) GRP_C(1, NG, V, CM) GRP_C(2, NG, V, CM) GRP_C(3, NG, V, CM)
#define GRP_R4(NG, V, CM) GRP_R3(NG, V, CM) GRP_C(4, NG, V, CM)
#define GRP_R6(NG, V, CM) GRP_R4(NG, V, CM) GRP_C(5, NG, V, CM) GRP_C(6, NG, V, CM)

/* Tiles of 1 to 2, 3 or 4 groups (ng) with V vectors each and CM
 * channels (0: any), switching on ng then on the pixels. */
#define GRP_NG2(NAME, V, CM, CASES)                                                                \
  GRP_FN(NAME##_1, 1, V, CM, CASES)                                                                \
  GRP_FN(NAME##_2, 2, V, CM, CASES)                                                                \
  static GT void NAME(int ng, int mr, GRP_ARGS) {                                                  \
    if (ng == 2)                                                                                   \
      NAME##_2(mr, GRP_PASS);                                                                      \
    else                                                                                           \
      NAME##_1(mr, GRP_PASS);                                                                      \
  }
#define GRP_NG3(NAME, V, CM, CASES)                                                                \
  GRP_NG2(NAME##_lo, V, CM, CASES)                                                                 \
  GRP_FN(NAME##_3, 3, V, CM, CASES)                                                                \
  static GT void NAME(int ng, int mr, GRP_ARGS) {                                                  \
    if (ng == 3)                                                                                   \
      NAME##_3(mr, GRP_PASS);                                                                      \
    else                                                                                           \
      NAME##_lo(ng, mr, GRP_PASS);                                                                 \
  }
#define GRP_NG4(NAME, V, CM, CASES)                                                                \
  GRP_NG3(NAME##_lo, V, CM, CASES)                                                                 \
  GRP_FN(NAME##_4, 4, V, CM, CASES)                                                                \
  static GT void NAME(int ng, int mr, GRP_ARGS) {                                                  \
    if (ng == 4)                                                                                   \
      NAME##_4(mr, GRP_PASS);                                                                      \
    else                                                                                           \
      NAME##_lo(ng, mr, GRP_PASS);                                                                 \
  }
