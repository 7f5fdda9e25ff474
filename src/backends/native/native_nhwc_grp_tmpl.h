/* The grouped window conv tiles of native_nhwc_grp256.c and
 * native_nhwc_grp512.c, written once: included by each after it defines
 * GT (the target attribute), GV (the vector type), GL (floats a vector),
 * GLOAD, GSET1, GFMA, GMIN, GMAX, GADD, GZERO, GSTORE, the tile limits
 * MR1/NG1 (one vector a merged group), MR2/NG2 (two) and MR4 (four, one
 * group a tile), and
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
 * w, input channels at x + cx, outputs at channel cy) x V (1, 2 or 4;
 * ng V <= 4) vectors of each
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
          GV wv[4];
#pragma GCC unroll 4
          for (int v = 0; v < 4; v++)
            if (v < V) wv[v] = GLOAD(wk + GL * v);
#pragma GCC unroll 8
          for (int i = 0; i < 8; i++) {
            if (i >= mr) break;
            GV xb = GSET1(p[i][off + k]);
#pragma GCC unroll 4
            for (int v = 0; v < 4; v++)
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
#define GRP_R2(NG, V, CM) GRP_C(1, NG, V, CM) GRP_C(2, NG, V, CM)
#define GRP_R3(NG, V, CM) GRP_R2(NG, V, CM) GRP_C(3, NG, V, CM)
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

/* Groups of 4 inputs and 4 outputs (nat_nhwc*_grp4): mr pixels x nb
 * vectors of GL / 4 groups each (the first at input and output channel
 * cx, its weights at w, g->gstride floats a vector), per tap and vector 4
 * weight vectors W_r and per pixel one input load and 3 rotations within
 * each 4 lanes (GPERM): 4 multiply-adds for 4 GL useful products, where
 * the merged block-diagonal weights of grp_tile spend twice as many. */
INL GT void grp4_tile(const int mr, const int nb, const nat_grp *g, const grp_px *px,
                      const float *w, int64_t cx) {
  const nat_nhwc *c = g->c;
  const int64_t gs = g->gstride;
  GV acc[8][3];
#pragma GCC unroll 3
  for (int j = 0; j < 3; j++) {
    if (j >= nb) break;
    GV bj = c->b ? GLOAD(c->b + cx + GL * j) : GZERO();
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
      if (!any) continue;
      const float *wt = w + (ki * c->kw + kj) * 4 * GL;
#pragma GCC unroll 3
      for (int j = 0; j < 3; j++) {
        if (j >= nb) break;
        const float *wj = wt + j * gs;
        const GV w0 = GLOAD(wj), w1 = GLOAD(wj + GL), w2 = GLOAD(wj + 2 * GL),
                 w3 = GLOAD(wj + 3 * GL);
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++) {
          if (i >= mr) break;
          GV x = GLOAD(p[i] + GL * j), a = acc[i][j];
          a = GFMA(x, w0, a);
          a = GFMA(GPERM(x, 0x39), w1, a); /* lanes m + 1 of each 4 */
          a = GFMA(GPERM(x, 0x4E), w2, a); /* m + 2 */
          a = GFMA(GPERM(x, 0x93), w3, a); /* m + 3 */
          acc[i][j] = a;
        }
      }
    }
  const GV lo = GSET1(c->lo), hi = GSET1(c->hi);
  const int64_t ldy = c->M, ldz = c->M;
#pragma GCC unroll 8
  for (int i = 0; i < 8; i++) {
    if (i >= mr) break;
#pragma GCC unroll 3
    for (int j = 0; j < 3; j++) {
      if (j >= nb) break;
      int64_t ch = cx + GL * j;
      GV v = acc[i][j];
      if (c->z) v = GADD(v, GLOAD(c->z + px->q[i] * ldz + ch));
      v = GMIN(GMAX(v, lo), hi);
      GSTORE(c->y + (px->q[i] - px->qy) * ldy + ch, v);
    }
  }
}

/* The driver over panels, merged-group blocks and pixel tiles, for one
 * vector a group's outputs (Mm = GL: tiles of MR1 pixels x NG1 groups),
 * two (Mm = 2 GL: MR2 x NG2) or four (Mm = 4 GL: MR4 x 1, V4), the
 * channels a group a constant where they are GL or 2 GL (V1C, V2C). MR1,
 * NG1, MR2, NG2, MR4 are the level's. */
#define GRP_DRIVER(NAME, V1, V1C, V2, V2C, V4)                                                     \
  GT void NAME(const nat_grp *g, int64_t p0, int64_t p1, int64_t g0, int64_t g1) {                 \
    const nat_nhwc *c = g->c;                                                                      \
    const int V = g->Mm == GL ? 1 : g->Mm == 2 * GL ? 2 : 4;                                       \
    const int MR = V == 1 ? MR1 : V == 2 ? MR2 : MR4, NG = V == 1 ? NG1 : V == 2 ? NG2 : 1;        \
    nat_win_panel pn;                                                                              \
    for (int64_t q0 = p0; q0 < p1; q0 += NAT_WIN_PANEL) {                                          \
      int64_t q1 = q0 + NAT_WIN_PANEL < p1 ? q0 + NAT_WIN_PANEL : p1;                              \
      nat_win_panel_fill(c, q0, q1, &pn);                                                          \
      for (int64_t gb = g0; gb < g1; gb += NG) {                                                   \
        int ng = (int)(g1 - gb < NG ? g1 - gb : NG);                                               \
        const float *w = g->wpk + gb * g->gstride;                                                 \
        int64_t cx = gb * g->Cm, cy = gb * g->Mm;                                                  \
        for (int s = 0; s < pn.nseg; s++)                                                          \
          for (int p = pn.seg[s]; p < pn.seg[s + 1]; p += MR) {                                    \
            int mr = pn.seg[s + 1] - p < MR ? pn.seg[s + 1] - p : MR;                              \
            grp_px px = {pn.xo + p, pn.ih + p, pn.iw + p, pn.q + p, c->y_r0 * c->OW};              \
            if (V == 1 && g->Cm == GL)                                                             \
              V1C(ng, mr, g, &px, w, cx, cy);                                                      \
            else if (V == 1)                                                                       \
              V1(ng, mr, g, &px, w, cx, cy);                                                       \
            else if (V == 4)                                                                       \
              V4(mr, g, &px, w, cx, cy);                                                           \
            else if (g->Cm == 2 * GL)                                                              \
              V2C(ng, mr, g, &px, w, cx, cy);                                                      \
            else                                                                                   \
              V2(ng, mr, g, &px, w, cx, cy);                                                       \
          }                                                                                        \
      }                                                                                            \
    }                                                                                              \
  }

#define GRP4_C(R, NB)                                                                              \
  case R:                                                                                          \
    grp4_tile(R, NB, g, px, w, cx);                                                                \
    break;
#define GRP4_FN(NAME, NB, MR)                                                                      \
  static GT void NAME(int mr, const nat_grp *g, const grp_px *px, const float *w, int64_t cx) {    \
    switch (mr) {                                                                                  \
      GRP4_C(1, NB)                                                                                \
      GRP4_C(2, NB)                                                                                \
      GRP4_C(3, NB)                                                                                \
      GRP4_C(4, NB)                                                                                \
      GRP4_C(5, MR > 4 ? NB : 0)                                                                   \
      GRP4_C(6, MR > 4 ? NB : 0)                                                                   \
      GRP4_C(7, MR > 4 ? NB : 0)                                                                   \
      GRP4_C(8, MR > 4 ? NB : 0)                                                                   \
    default: break;                                                                                \
    }                                                                                              \
  }

/* The driver of grp4_tile: output pixels [p0, p1) of vectors [b0, b1) of
 * GL / 4 groups, in panels as nat_nhwc*_grp; tiles of MR pixels, NB
 * vectors. Within a panel each tile runs a chunk of vector blocks whose
 * weights fit in GRP4_L1 bytes (of ResNeXt's 128 channels 96 at AVX-512,
 * 112 at AVX2) before the next tile: a pixel's channels are read as one
 * run, where block by block over the panel read 64 bytes of each pixel a
 * pass and the passes missed in the cache (the 56 x 56 x 128 maps of
 * ResNeXt's first stage do not fit in L2 at batch 8). */
#define GRP4_L1 16384
#define GRP4_DRIVER(NAME, MR, NB, FN_NB, FN_1)                                                     \
  GT void NAME(const nat_grp *g, int64_t p0, int64_t p1, int64_t b0, int64_t b1) {                 \
    const nat_nhwc *c = g->c;                                                                      \
    int64_t bc = GRP4_L1 / (4 * g->gstride) / NB * NB;                                             \
    if (bc < NB) bc = NB;                                                                          \
    nat_win_panel pn;                                                                              \
    for (int64_t q0 = p0; q0 < p1; q0 += NAT_WIN_PANEL) {                                          \
      int64_t q1 = q0 + NAT_WIN_PANEL < p1 ? q0 + NAT_WIN_PANEL : p1;                              \
      nat_win_panel_fill(c, q0, q1, &pn);                                                          \
      for (int64_t c0 = b0; c0 < b1; c0 += bc) {                                                   \
        int64_t c1 = c0 + bc < b1 ? c0 + bc : b1;                                                  \
        for (int s = 0; s < pn.nseg; s++)                                                          \
          for (int p = pn.seg[s]; p < pn.seg[s + 1]; p += MR) {                                    \
            int mr = pn.seg[s + 1] - p < MR ? pn.seg[s + 1] - p : MR;                              \
            grp_px px = {pn.xo + p, pn.ih + p, pn.iw + p, pn.q + p, c->y_r0 * c->OW};              \
            int64_t b = c0;                                                                        \
            for (; b + NB <= c1; b += NB)                                                          \
              FN_NB(mr, g, &px, g->wpk + b * g->gstride, b * GL);                                  \
            for (; b < c1; b++)                                                                    \
              FN_1(mr, g, &px, g->wpk + b * g->gstride, b * GL);                                   \
          }                                                                                        \
      }                                                                                            \
    }                                                                                              \
  }
