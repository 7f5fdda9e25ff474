/* The stem rows of native_nhwc_stem3.h, written once: included by
 * native_nhwc_stem3256.c and native_nhwc_stem3512.c after each defines ST
 * (the target attribute), SV (the vector type), SL (floats a vector),
 * SLD/SSTORE (whole vectors), SBC (a broadcast of a float in memory),
 * SFMA, SMIN, SMAX, SSET1, SZERO, SPOST (native_nhwc_post.h's
 * activation), SACC (accumulators a tile may hold), SNVMAX (the most
 * output vectors a tile) and SNAME(x). Not a
 * header of its own: no include guard, nothing else includes it. */

#define INL static inline __attribute__((always_inline))

/* Widest input row (floats, padding included) the row buffer holds. */
#define STEM3_WP 520

/* The kernel rows' input rows of one output row: [kh][3][Wp], zero where
 * they lie in the padding (44 KB on the stack at most). */
typedef struct stem3_row {
  float x[7 * 3 * STEM3_WP];
  int64_t Wp;
} stem3_row;

/* NP pixels from ow x NV vectors of outputs from m0: per tap (ki, kj, ci)
 * NV weight vectors and, per pixel, one broadcast. */
INL ST void SNAME(stem3_tile)(const int NP, const int NV, const int KW, const int C, const int S,
                              const nat_nhwc *c, const stem3_row *b, float *y, int64_t ow,
                              int64_t m0, const nat_post *post, SV pa, SV pb) {
  const int64_t M = c->M;
  SV acc[SACC];
#pragma GCC unroll 4
  for (int j = 0; j < NV; j++) {
    SV bj = c->b ? SLD(c->b + m0 + SL * j) : SZERO();
#pragma GCC unroll 24
    for (int i = 0; i < NP; i++)
      acc[i * NV + j] = bj;
  }
  for (int64_t ki = 0; ki < c->kh; ki++) {
    const float *xr = b->x + ki * C * b->Wp + ow * S;
    const float *wr = c->w + ki * KW * C * M + m0;
#pragma GCC unroll 7
    for (int kj = 0; kj < KW; kj++)
#pragma GCC unroll 4
      for (int ci = 0; ci < C; ci++) {
        SV wv[4];
#pragma GCC unroll 4
        for (int j = 0; j < NV; j++)
          wv[j] = SLD(wr + (kj * C + ci) * M + SL * j);
        /* the tap's pixels through a pointer of its own: a pixel's
         * broadcast is another pixel's at the next tap, and held across
         * taps they spilled the accumulators */
        const float *xp = xr + ci * b->Wp + kj;
        __asm__("" : "+r"(xp));
#pragma GCC unroll 24
        for (int i = 0; i < NP; i++) {
          SV xb = SBC(xp + i * S);
#pragma GCC unroll 4
          for (int j = 0; j < NV; j++)
            acc[i * NV + j] = SFMA(xb, wv[j], acc[i * NV + j]);
        }
      }
  }
  const SV lo = SSET1(c->lo), hi = SSET1(c->hi);
#pragma GCC unroll 24
  for (int i = 0; i < NP; i++)
#pragma GCC unroll 4
    for (int j = 0; j < NV; j++) {
      SV r = SMIN(SMAX(acc[i * NV + j], lo), hi);
      if (post->kind != NAT_POST_NONE) r = SPOST(post, pa, pb, r);
      SSTORE(y + (ow + i) * M + m0 + SL * j, r);
    }
}

/* A row of OW outputs: tiles of NP, the last moved back to end at the
 * row's end (its first pixels computed twice, the same values). */
#define STEM3_FN(KW, C, S, NV)                                                                     \
  static ST void SNAME(stem3_##KW##_##C##_##S##_##NV)(                                             \
      const nat_nhwc *c, const stem3_row *b, float *y, const nat_post *post, SV pa, SV pb) {       \
    enum { NP = SACC / NV };                                                                       \
    const int64_t OW = c->OW;                                                                      \
    for (int64_t m0 = 0; m0 < c->M; m0 += SL * NV) {                                               \
      int64_t ow = 0;                                                                              \
      for (; ow < OW && OW >= NP; ow += NP)                                                        \
        SNAME(stem3_tile)                                                                          \
      (NP, NV, KW, C, S, c, b, y, ow + NP <= OW ? ow : OW - NP, m0, post, pa, pb);                 \
      for (; ow < OW; ow++) /* rows narrower than a tile */                                        \
        SNAME(stem3_tile)(1, NV, KW, C, S, c, b, y, ow, m0, post, pa, pb);                         \
    }                                                                                              \
  }

typedef void (*SNAME(stem3_fn))(const nat_nhwc *, const stem3_row *, float *, const nat_post *, SV,
                                SV);

/* 3x3 and 7x7 stride 2 and 3x3 stride 1 on 3 channels, by output vectors
 * (3: outputs of 3 x 2^k vectors, SqueezeNet's 96, in fewer passes over
 * the row than 2 a tile made) */
#define STEM3_FNS(KW, C, S)                                                                        \
  STEM3_FN(KW, C, S, 1)                                                                            \
  STEM3_FN(KW, C, S, 2)                                                                            \
  STEM3_FN(KW, C, S, 3)                                                                            \
  STEM3_FN(KW, C, S, 4)
STEM3_FNS(3, 3, 2)
STEM3_FNS(7, 3, 2)
STEM3_FNS(3, 3, 1)

/* The kernel for c (NULL: none): vectors a tile SNVMAX where they divide
 * the outputs, else 3, 2 or 1 (at most SNVMAX), whichever divides them. */
static SNAME(stem3_fn) SNAME(stem3_of)(const nat_nhwc *c) {
  int64_t dh = c->dh > 0 ? c->dh : 1, dw = c->dw > 0 ? c->dw : 1;
  if (c->C != 3 || c->xs_w != 1 || c->xs_c != c->H * c->W || c->xs_h != c->W || dh != 1 ||
      dw != 1 || c->kh != c->kw || c->sh != c->sw || c->z || (c->ldy > 0 && c->ldy != c->M) ||
      c->M % SL || c->M > 8 * SL || (c->OW - 1) * c->sw + c->kw > STEM3_WP || c->pl >= c->kw ||
      c->pt >= c->kh)
    return NULL;
  nat_post p;
  if (c->post && !nat_post_of(c->post, &p)) return NULL; /* a program: the driver's pass */
  int64_t V = c->M / SL;
  int nv = V % SNVMAX == 0 ? SNVMAX : SNVMAX >= 3 && V % 3 == 0 ? 3 : V % 2 == 0 ? 2 : 1;
  switch ((c->kh * 10 + c->sh) * 10 + nv) {
  case 321: return SNAME(stem3_3_3_2_1);
  case 322: return SNAME(stem3_3_3_2_2);
  case 323: return SNAME(stem3_3_3_2_3);
  case 324: return SNAME(stem3_3_3_2_4);
  case 721: return SNAME(stem3_7_3_2_1);
  case 722: return SNAME(stem3_7_3_2_2);
  case 723: return SNAME(stem3_7_3_2_3);
  case 724: return SNAME(stem3_7_3_2_4);
  case 311: return SNAME(stem3_3_3_1_1);
  case 312: return SNAME(stem3_3_3_1_2);
  case 313: return SNAME(stem3_3_3_1_3);
  case 314: return SNAME(stem3_3_3_1_4);
  default: return NULL;
  }
}

/* The padded input rows of output row r into b. */
static void SNAME(stem3_fill)(const nat_nhwc *c, int64_t r, stem3_row *b) {
  int64_t n = r / c->OH, ih0 = r % c->OH * c->sh - c->pt, W = c->W;
  int64_t Wp = (c->OW - 1) * c->sw + c->kw, right = Wp - c->pl - W;
  b->Wp = Wp;
  for (int64_t ki = 0; ki < c->kh; ki++)
    for (int64_t ci = 0; ci < c->C; ci++) {
      float *d = b->x + (ki * c->C + ci) * Wp;
      int64_t ih = ih0 + ki;
      if (ih < 0 || ih >= c->H) {
        memset(d, 0, sizeof(float) * (size_t)Wp);
        continue;
      }
      const float *x = c->x + n * c->xs_n + ci * c->xs_c + ih * c->xs_h;
      int64_t l = c->pl < Wp ? c->pl : Wp, w = W < Wp - l ? W : Wp - l;
      memset(d, 0, sizeof(float) * (size_t)l);
      memcpy(d + l, x, sizeof(float) * (size_t)w);
      if (right > 0) memset(d + l + w, 0, sizeof(float) * (size_t)right);
    }
}

static ST void SNAME(rows)(const nat_nhwc *c, int64_t r0, int64_t r1) {
  SNAME(stem3_fn) f = SNAME(stem3_of)(c);
  nat_post post = {NAT_POST_NONE, 0, 0, false};
  if (c->post) nat_post_of(c->post, &post);
  SV pa = SSET1(post.a), pb = SSET1(post.b);
  stem3_row b;
  for (int64_t r = r0; r < r1; r++) {
    SNAME(stem3_fill)(c, r, &b);
    f(c, &b, c->y + (r - c->y_r0) * c->OW * c->M, &post, pa, pb);
  }
}
