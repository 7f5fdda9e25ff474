/* FusedConvNhwc's depthwise 3x3 rows on AVX2+FMA: native_nhwc_dw3512.c's
 * design on vectors of 8 channels and 16 registers: runs of up to 8
 * outputs (8 accumulators, a kernel row's 3 weight vectors and the input
 * vector), pixels outer and channels inner; the tail vector through a lane
 * mask. Runs of 4 a channel vector with the nine weights in registers
 * (4 accumulators: FMA latency-bound) reached 40% of the FMA peak. */
#include <stdbool.h>
#include <stdint.h>

#include "backends/native/native.h"
#include "backends/native/native_nhwc_post.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define T256 __attribute__((target("avx2,fma")))
#define MLD(m, p) _mm256_maskload_ps((p), (m))
#define INL static inline __attribute__((always_inline))

#define LD8(p, tl, m) ((tl) ? _mm256_maskload_ps((p), (m)) : _mm256_loadu_ps(p))
#define ST8(p, tl, m, v)                                                                           \
  do {                                                                                             \
    if (tl)                                                                                        \
      _mm256_maskstore_ps((p), (m), (v));                                                          \
    else                                                                                           \
      _mm256_storeu_ps((p), (v));                                                                  \
  } while (0)

typedef struct dw3_args {
  const float *rows[3]; /* input rows (NULL: in the padding) */
  int64_t W, C, S, pl;
  const float *w, *b, *z;
  float *y;
  __m256 lo, hi;
  nat_post post; /* past the clamp, on each tile before its store (NAT_POST_NONE: none) */
  __m256 pa, pb; /* its HardSigmoid alpha and beta */
} dw3_args;

/* n outputs from ow on channels [cb, cb + 8), the vector masked by m
 * when tl; edge: some of their taps fall outside the row (those columns
 * are skipped: their taps add zeros). */
INL T256 void dw3_tile(const int n, const int S, const bool edge, const bool tl, const dw3_args *a,
                       int64_t ow, int64_t cb, __m256i m) {
  const int64_t C = a->C;
  __m256 acc[8];
  __m256 bv = a->b ? LD8(a->b + cb, tl, m) : _mm256_setzero_ps();
#pragma GCC unroll 8
  for (int t = 0; t < n; t++)
    acc[t] = bv;
  const int64_t iw0 = ow * S - a->pl;
#pragma GCC unroll 3
  for (int ki = 0; ki < 3; ki++) {
    if (!a->rows[ki]) continue;
    const float *xr = a->rows[ki] + cb, *wk = a->w + 3 * ki * C + cb;
    __m256 w0 = LD8(wk, tl, m), w1 = LD8(wk + C, tl, m), w2 = LD8(wk + 2 * C, tl, m);
#pragma GCC unroll 40
    for (int q = 0; q < S * (n - 1) + 3; q++) {
      if (edge && (iw0 + q < 0 || iw0 + q >= a->W)) continue;
      __m256 xv = LD8(xr + (iw0 + q) * C, tl, m);
      __asm__("" : "+x"(xv)); /* one load for its three FMAs, not a memory operand each */
      /* input column q feeds output (q - kj) / S through weight kj */
      if (q % S == 0 && q / S < n) acc[q / S] = _mm256_fmadd_ps(xv, w0, acc[q / S]);
      if (q >= 1 && (q - 1) % S == 0 && (q - 1) / S < n)
        acc[(q - 1) / S] = _mm256_fmadd_ps(xv, w1, acc[(q - 1) / S]);
      if (q >= 2 && (q - 2) % S == 0 && (q - 2) / S < n)
        acc[(q - 2) / S] = _mm256_fmadd_ps(xv, w2, acc[(q - 2) / S]);
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < n; t++) {
    __m256 r = acc[t];
    if (a->z) r = _mm256_add_ps(r, LD8(a->z + (ow + t) * C + cb, tl, m));
    r = _mm256_min_ps(_mm256_max_ps(r, a->lo), a->hi);
    if (a->post.kind != NAT_POST_NONE) r = nat_post8(&a->post, a->pa, a->pb, r);
    ST8(a->y + (ow + t) * C + cb, tl, m, r);
  }
}

/* One output with its taps outside [0, W) skipped (strides above 2). */
static T256 void dw3_one(const dw3_args *a, int64_t ow, int64_t cb, __m256i m) {
  const int64_t C = a->C, iw = ow * a->S - a->pl;
  __m256 acc = a->b ? MLD(m, a->b + cb) : _mm256_setzero_ps();
  for (int ki = 0; ki < 3; ki++) {
    if (!a->rows[ki]) continue;
    for (int kj = 0; kj < 3; kj++) {
      if (iw + kj < 0 || iw + kj >= a->W) continue;
      acc = _mm256_fmadd_ps(MLD(m, a->rows[ki] + (iw + kj) * C + cb),
                            MLD(m, a->w + (3 * ki + kj) * C + cb), acc);
    }
  }
  if (a->z) acc = _mm256_add_ps(acc, MLD(m, a->z + ow * C + cb));
  acc = _mm256_min_ps(_mm256_max_ps(acc, a->lo), a->hi);
  if (a->post.kind != NAT_POST_NONE) acc = nat_post8(&a->post, a->pa, a->pb, acc);
  _mm256_maskstore_ps(a->y + ow * C + cb, m, acc);
}

/* A run of N outputs over channels [c0, c1): full vectors, then the tail. */
#define DW3_N(N, S)                                                                                \
  static T256 __attribute__((noinline)) void dw3_s##S##_n##N(const dw3_args *a, bool edge,         \
                                                             int64_t ow, int64_t c0, int64_t c1) { \
    int64_t cb = c0;                                                                               \
    if (edge) {                                                                                    \
      for (; cb + 8 <= c1; cb += 8)                                                                \
        dw3_tile(N, S, true, false, a, ow, cb, _mm256_set1_epi32(-1));                             \
      if (cb < c1) dw3_tile(N, S, true, true, a, ow, cb, nat_tail8(c1 - cb));                      \
    } else {                                                                                       \
      for (; cb + 8 <= c1; cb += 8)                                                                \
        dw3_tile(N, S, false, false, a, ow, cb, _mm256_set1_epi32(-1));                            \
      if (cb < c1) dw3_tile(N, S, false, true, a, ow, cb, nat_tail8(c1 - cb));                     \
    }                                                                                              \
  }
DW3_N(8, 1)
DW3_N(7, 1)
DW3_N(4, 1)
DW3_N(2, 1)
DW3_N(1, 1)
DW3_N(8, 2)
DW3_N(7, 2)
DW3_N(4, 2)
DW3_N(2, 2)
DW3_N(1, 2)

/* Outputs [0, OW) in runs of 8 / 7 / 4 / 2 / 1, those with taps outside
 * the row checked. */
static T256 void dw3_runs(const dw3_args *a, int64_t OW, int64_t c0, int64_t c1) {
  const int64_t S = a->S;
  for (int64_t ow = 0, n; ow < OW; ow += n) {
    int64_t left = OW - ow;
    n = left >= 8 ? 8 : left >= 7 ? 7 : left >= 4 ? 4 : left >= 2 ? 2 : 1;
    int64_t iw = ow * S - a->pl;
    bool edge = iw < 0 || iw + S * (n - 1) + 2 >= a->W;
    switch (n * 2 + S - 1) {
    case 16: dw3_s1_n8(a, edge, ow, c0, c1); break;
    case 14: dw3_s1_n7(a, edge, ow, c0, c1); break;
    case 8: dw3_s1_n4(a, edge, ow, c0, c1); break;
    case 4: dw3_s1_n2(a, edge, ow, c0, c1); break;
    case 2: dw3_s1_n1(a, edge, ow, c0, c1); break;
    case 17: dw3_s2_n8(a, edge, ow, c0, c1); break;
    case 15: dw3_s2_n7(a, edge, ow, c0, c1); break;
    case 9: dw3_s2_n4(a, edge, ow, c0, c1); break;
    case 5: dw3_s2_n2(a, edge, ow, c0, c1); break;
    default: dw3_s2_n1(a, edge, ow, c0, c1); break;
    }
  }
}

static T256 void dw3_row(const float *const rows[3], int64_t W, int64_t OW, int64_t C, int64_t c0,
                         int64_t c1, int64_t S, int64_t pl, const float *w, const float *b,
                         const float *z, float lo, float hi, const ait_act *post, float *y) {
  dw3_args a = {.rows = {rows[0], rows[1], rows[2]},
                .W = W,
                .C = C,
                .S = S,
                .pl = pl,
                .w = w,
                .b = b,
                .z = z,
                .y = y,
                .lo = _mm256_set1_ps(lo),
                .hi = _mm256_set1_ps(hi)};
  nat_post_of(post, &a.post);
  a.pa = _mm256_set1_ps(a.post.a), a.pb = _mm256_set1_ps(a.post.b);
  if (S != 1 && S != 2) {
    for (int64_t ow = 0; ow < OW; ow++)
      for (int64_t cb = c0; cb < c1; cb += 8)
        dw3_one(&a, ow, cb, nat_tail8(c1 - cb));
    return;
  }
  dw3_runs(&a, OW, c0, c1);
}

T256 void nat_nhwc256_dw_row(const float *const rows[3], int64_t W, int64_t OW, int64_t C,
                             int64_t c0, int64_t c1, int64_t S, int64_t pl, const float *w,
                             const float *b, const float *z, float lo, float hi, float *y) {
  dw3_row(rows, W, OW, C, c0, c1, S, pl, w, b, z, lo, hi, NULL, y);
}

/* Output rows [r0, r1) of N*OH, c->post (SiLU, HardSigmoid, HardSwish)
 * applied to each tile before its store (the driver leaves it to them). */
T256 void nat_nhwc256_dw(const nat_nhwc *c, int64_t r0, int64_t r1) {
  int64_t C = c->C, W = c->W, OW = c->OW;
  for (int64_t r = r0; r < r1; r++) {
    int64_t n = r / c->OH, oh = r % c->OH;
    const float *row[3];
    for (int ki = 0; ki < 3; ki++) {
      int64_t ih = oh * c->sh - c->pt + ki;
      row[ki] = ih >= 0 && ih < c->H ? c->x + ((n * c->H + ih) * W) * C : NULL;
    }
    dw3_row(row, W, OW, C, 0, C, c->sw, c->pl, c->w, c->b, c->z ? c->z + r * OW * C : NULL, c->lo,
            c->hi, c->post, c->y + r * OW * C);
  }
}

#else

void nat_nhwc256_dw(const nat_nhwc *c, int64_t r0, int64_t r1) {}
void nat_nhwc256_dw_row(const float *const rows[3], int64_t W, int64_t OW, int64_t C, int64_t c0,
                        int64_t c1, int64_t S, int64_t pl, const float *w, const float *b,
                        const float *z, float lo, float hi, float *y) {}

#endif
