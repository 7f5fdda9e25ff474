/* The depthwise sliding rows of native_nhwc_dw256.c and native_nhwc_dw512.c
 * (kernel widths 3, 5 and 7, column stride 1 or 2, no column dilation, any
 * kernel height, row stride and row dilation), written once: included by
 * each after it defines DT (the target attribute), DV (the vector type),
 * DMASK (a lane mask's type), DL (floats a vector), DWR_EACH(X) (X of
 * each run width, widest first, 1 last), DLD(p, tl, m) and
 * DST(p, tl, m, v) (loads and stores, through mask m where tl), DTAIL(n)
 * (the mask of n lanes), DSET1, DZERO, DFMA, DADD, DMIN, DMAX, DPOST(p, a,
 * b, v) (native_nhwc_post.h's activation), DNMAX (the widest run: as many
 * accumulators as leave room for 7 weights and the input) and DNAME(x)
 * (the level's prefix). Not a header of its own: no include guard,
 * nothing else includes it.
 *
 * Along a kernel row, input column q feeds output (q - kj) / S through
 * weight kj, so each input vector is loaded once for its K multiply-adds
 * with the row's K weight vectors in registers (a tile that loads an
 * input once per tap is load-bound). Runs of n outputs are compiled for
 * a known n, K, S and for whether they touch the padding at all: the
 * interior runs, most of a row, carry no bounds test (the test on every
 * input column, against a W read from memory, and the offsets of all of
 * them precomputed and spilled, made the earlier kernel twice ONNX
 * Runtime's time on MnasNet's 5x5 stride-2 convs). A row's runs are as
 * even as the widths allow (28 = 14 + 14, not 16 + 8 + 4, whose run of 4
 * waits on four FMA chains).
 *
 * Order: channel blocks outer, then the task's output rows, then a row's
 * runs: a block's kernel rows (K W floats a vector) stay in L1 from one
 * output row to the next, which reads K - S of them again; with the
 * channels inner, each output row streamed every channel of its K input
 * rows from L2 (stride 2 on 56x56 and 28x28 maps: L2-bound). */

#define INL static inline __attribute__((always_inline))

/* One output row: its kernel rows inside the input, as row pointers. */
typedef struct dwr_row {
  const float *x[7]; /* input row of kernel row x_k[i] at column 0, channel 0 */
  const float *w[7]; /* its weights: [K][C] */
  int nk;            /* kernel rows inside the input */
  int64_t W, C, pl;
  const float *b, *z; /* bias, residual row (may be NULL) */
  float *y;           /* output row */
  DV lo, hi;
  nat_post post; /* past the clamp, before the store (NAT_POST_NONE: none) */
  DV pa, pb;     /* its HardSigmoid alpha and beta */
} dwr_row;

/* n outputs from ow on the channel vector at cb (masked by m when tl);
 * edge: some of its input columns lie outside [0, W) (skipped: their taps
 * add zeros). */
INL DT void DNAME(dwr_tile)(const int n, const int K, const int S, const bool edge, const bool tl,
                            const dwr_row *g, int64_t ow, int64_t cb, DMASK m) {
  const int64_t C = g->C, iw0 = ow * S - g->pl;
  DV acc[DNMAX];
  DV bv = g->b ? DLD(g->b + cb, tl, m) : DZERO();
#pragma GCC unroll 16
  for (int t = 0; t < n; t++)
    acc[t] = bv;
  /* input columns q in [qlo, qhi) lie inside the row */
  const int64_t qlo = edge && iw0 < 0 ? -iw0 : 0, qhi = edge ? g->W - iw0 : 64;
  for (int i = 0; i < g->nk; i++) {
    const float *wk = g->w[i] + cb;
    DV wv[7];
#pragma GCC unroll 7
    for (int kj = 0; kj < K; kj++)
      wv[kj] = DLD(wk + kj * C, tl, m);
    /* one pointer stepped by a pixel: offsets of every column held at
     * once spilled */
    const float *xp = g->x[i] + cb + (iw0 + qlo) * C;
#pragma GCC unroll 64
    for (int q = 0; q < S * (n - 1) + K; q++) {
      if (edge && (q < qlo || q >= qhi)) continue;
      DV xv = DLD(xp, tl, m);
      xp += C;
      __asm__("" : "+v"(xv), "+r"(xp)); /* one load for its K FMAs; the pointer stepped */
#pragma GCC unroll 7
      for (int kj = 0; kj < K; kj++) {
        int d = q - kj;
        if (d < 0 || d % S || d / S >= n) continue;
        acc[d / S] = DFMA(xv, wv[kj], acc[d / S]);
      }
    }
  }
#pragma GCC unroll 16
  for (int t = 0; t < n; t++) {
    DV r = acc[t];
    if (g->z) r = DADD(r, DLD(g->z + (ow + t) * C + cb, tl, m));
    r = DMIN(DMAX(r, g->lo), g->hi);
    if (g->post.kind != NAT_POST_NONE) r = DPOST(&g->post, g->pa, g->pb, r);
    DST(g->y + (ow + t) * C + cb, tl, m, r);
  }
}

/* A run of N outputs, width K, stride S, on the vectors [v0, v1) (the
 * last, when tl, masked by m). */
#define DWR_FN(N, K, S)                                                                            \
  static DT __attribute__((noinline)) void DNAME(dwr_##N##_##K##_##S)(                             \
      const dwr_row *g, bool edge, int64_t ow, int64_t v0, int64_t v1, bool tl, DMASK m) {         \
    int64_t full = tl ? v1 - 1 : v1;                                                               \
    if (edge) {                                                                                    \
      for (int64_t v = v0; v < full; v++)                                                          \
        DNAME(dwr_tile)(N, K, S, true, false, g, ow, v * DL, m);                                   \
      if (full < v1) DNAME(dwr_tile)(N, K, S, true, true, g, ow, full * DL, m);                    \
    } else {                                                                                       \
      for (int64_t v = v0; v < full; v++)                                                          \
        DNAME(dwr_tile)(N, K, S, false, false, g, ow, v * DL, m);                                  \
      if (full < v1) DNAME(dwr_tile)(N, K, S, false, true, g, ow, full * DL, m);                   \
    }                                                                                              \
  }
#define DWR_KS(N)                                                                                  \
  DWR_FN(N, 3, 1) DWR_FN(N, 3, 2) DWR_FN(N, 5, 1) DWR_FN(N, 5, 2) DWR_FN(N, 7, 1) DWR_FN(N, 7, 2)
DWR_EACH(DWR_KS)

typedef void (*DNAME(dwr_fn))(const dwr_row *, bool, int64_t, int64_t, int64_t, bool, DMASK);

#define DWR_ROW(N)                                                                                 \
  {DNAME(dwr_##N##_3_1), DNAME(dwr_##N##_3_2), DNAME(dwr_##N##_5_1),                               \
   DNAME(dwr_##N##_5_2), DNAME(dwr_##N##_7_1), DNAME(dwr_##N##_7_2)},
#define DWR_W(N) N,
/* by width (DWR_EACH's order: widest first, 1 last), then kernel width and stride */
static const DNAME(dwr_fn) DNAME(dwr_fns)[][6] = {DWR_EACH(DWR_ROW)};
static const int DNAME(dwr_widths)[] = {DWR_EACH(DWR_W)};

/* Whether c runs on the sliding rows. */
static bool DNAME(dwr_fits)(const nat_nhwc *c) {
  int64_t dw = c->dw > 0 ? c->dw : 1;
  return dw == 1 && (c->kw == 3 || c->kw == 5 || c->kw == 7) && (c->sw == 1 || c->sw == 2) &&
         c->kh >= 1 && c->kh <= 7 && c->xs_w == c->C && c->xs_c == 1;
}

/* The width of the next run with `left` outputs of the row to go: of the
 * fewest runs of at most DNMAX, as even as the compiled widths make them. */
static inline int DNAME(dwr_width)(int64_t left) {
  const int *widths = DNAME(dwr_widths);
  int64_t parts = (left + DNMAX - 1) / DNMAX, want = (left + parts - 1) / parts;
  int i = 0;
  while (widths[i] > want)
    i++;
  return i;
}

#ifndef DWR_L1_BYTES
/* A channel block's input rows of one output row at most this (a third of
 * L1: the rows of the next output row, the weights and the outputs beside) */
#define DWR_L1_BYTES (16 * 1024)
#endif

/* Output rows [r0, r1) of N*OH (c->x NHWC, padding c->pt, c->pl not in
 * it), c->post applied to each tile before its store. */
static DT void DNAME(dwr_rows)(const nat_nhwc *c, int64_t r0, int64_t r1) {
  const int *widths = DNAME(dwr_widths);
  const int64_t C = c->C, OW = c->OW, dh = c->dh > 0 ? c->dh : 1, S = c->sw, kw = c->kw;
  const int ks = ((int)kw - 3) + (int)S - 1; /* the column of fns: 3/1, 3/2, 5/1, ... */
  dwr_row g;
  g.W = c->W, g.C = C, g.pl = c->pl, g.b = c->b;
  g.lo = DSET1(c->lo), g.hi = DSET1(c->hi);
  nat_post_of(c->post, &g.post);
  g.pa = DSET1(g.post.a), g.pb = DSET1(g.post.b);
  const int64_t V = (C + DL - 1) / DL;
  const bool tl = C % DL != 0;
  const DMASK m = DTAIL(C - (V - 1) * DL);
  int64_t per_v = c->kh * c->W * DL * (int64_t)sizeof(float);
  int64_t bv = per_v > 0 ? DWR_L1_BYTES / per_v : V;
  if (bv < 1) bv = 1;
  for (int64_t v0 = 0; v0 < V; v0 += bv) {
    int64_t v1 = v0 + bv < V ? v0 + bv : V;
    bool tlv = tl && v1 == V;
    for (int64_t r = r0; r < r1; r++) {
      int64_t n = r / c->OH, ih0 = r % c->OH * c->sh - c->pt;
      g.nk = 0;
      for (int64_t k = 0; k < c->kh; k++) {
        int64_t ih = ih0 + k * dh;
        if (ih < 0 || ih >= c->H) continue;
        g.x[g.nk] = c->x + n * c->xs_n + ih * c->xs_h;
        g.w[g.nk++] = c->w + k * kw * C;
      }
      g.y = c->y + (r - c->y_r0) * OW * C;
      g.z = c->z ? c->z + r * OW * C : NULL;
      for (int64_t ow = 0; ow < OW;) {
        int i = DNAME(dwr_width)(OW - ow), w = widths[i];
        int64_t iw = ow * S - c->pl;
        bool edge = iw < 0 || iw + S * (w - 1) + kw > c->W;
        DNAME(dwr_fns)[i][ks](&g, edge, ow, v0, v1, tlv, m);
        ow += w;
      }
    }
  }
}

/* One output row of a depthwise K x K conv (K 3, 5 or 7, stride S 1 or 2,
 * pl columns of left padding) from the input rows of its kernel rows, the
 * block form of native_nhwc_post.h's nat_nhwc*_dwr_row: rows[k] (k < K)
 * is kernel row k's input row ([W][C], NULL in the padding), channels
 * [c0, c1) (c0 a multiple of DL; c1 too, or C). */
static DT void DNAME(dwr_row)(const float *const *rows, int K, int S, int64_t W, int64_t OW,
                              int64_t C, int64_t c0, int64_t c1, int64_t pl, const float *w,
                              const float *b, float lo, float hi, const ait_act *post, float *y) {
  const int *widths = DNAME(dwr_widths);
  const int ks = (K - 3) + S - 1;
  dwr_row g;
  g.W = W, g.C = C, g.pl = pl, g.b = b, g.z = NULL, g.y = y;
  g.lo = DSET1(lo), g.hi = DSET1(hi);
  nat_post_of(post, &g.post);
  g.pa = DSET1(g.post.a), g.pb = DSET1(g.post.b);
  g.nk = 0;
  for (int k = 0; k < K; k++)
    if (rows[k]) g.x[g.nk] = rows[k], g.w[g.nk++] = w + (int64_t)k * K * C;
  const int64_t v0 = c0 / DL, v1 = (c1 + DL - 1) / DL;
  const bool tl = c1 % DL != 0;
  const DMASK m = DTAIL(c1 - (v1 - 1) * DL);
  for (int64_t ow = 0; ow < OW;) {
    int i = DNAME(dwr_width)(OW - ow), n = widths[i];
    int64_t iw = ow * S - pl;
    bool edge = iw < 0 || iw + S * (n - 1) + K > W;
    DNAME(dwr_fns)[i][ks](&g, edge, ow, v0, v1, tl, m);
    ow += n;
  }
}
