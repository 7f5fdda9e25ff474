/* FusedConvNhwc's depthwise 3x3 rows on AVX-512 (nat_nhwc512_dw_row: the
 * standalone 3x3 convs and the depthwise stage of FusedInvertedResidual).
 * Pixels outer, channels inner: per run of 16 (stride 1) or 8 (stride 2)
 * outputs whose taps all lie inside the row, every vector of 16 channels
 * in turn, so the run's input columns (3 rows x 18 or 17 columns) stay in
 * L1 while all channels use them. Per kernel row, its three weight
 * vectors in registers; each input vector is loaded once and fed to the
 * (up to three) outputs that read it: 16 (8) independent accumulators
 * hide the FMA latency, where 8 a run with the nine weights in registers
 * and the runs channel-outer reached a third of the FMA peak (the 3x3
 * convs at 112x112 and 56x56 ran 1.3-1.4x slower than ONNX Runtime).
 * Outputs with taps in the padding: one at a time, those taps skipped. */
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

typedef struct dw3_args {
  const float *rows[3]; /* input rows (NULL: in the padding) */
  int64_t W, C, S, pl;
  const float *w, *b, *z;
  float *y;
  __m512 lo, hi;
  nat_post post; /* past the clamp, on each tile before its store (NAT_POST_NONE: none) */
  __m512 pa, pb; /* its HardSigmoid alpha and beta */
} dw3_args;

/* n outputs from ow on channels [cb, cb + 16), the vector masked by m
 * when tl; edge: some of their taps fall outside the row (those columns
 * are skipped: their taps add zeros). */
INL T512 void dw3_tile(const int n, const int S, const bool edge, const bool tl, const dw3_args *a,
                       int64_t ow, int64_t cb, __mmask16 m) {
  const int64_t C = a->C;
  __m512 acc[16];
  __m512 bv = a->b ? LD16(a->b + cb, tl, m) : _mm512_setzero_ps();
#pragma GCC unroll 16
  for (int t = 0; t < n; t++)
    acc[t] = bv;
  const int64_t iw0 = ow * S - a->pl;
#pragma GCC unroll 3
  for (int ki = 0; ki < 3; ki++) {
    if (!a->rows[ki]) continue;
    const float *xr = a->rows[ki] + cb, *wk = a->w + 3 * ki * C + cb;
    __m512 w0 = LD16(wk, tl, m), w1 = LD16(wk + C, tl, m), w2 = LD16(wk + 2 * C, tl, m);
#pragma GCC unroll 40
    for (int q = 0; q < S * (n - 1) + 3; q++) {
      if (edge && (iw0 + q < 0 || iw0 + q >= a->W)) continue;
      __m512 xv = LD16(xr + (iw0 + q) * C, tl, m);
      __asm__("" : "+v"(xv)); /* one load for its three FMAs, not a memory operand each */
      /* input column q feeds output (q - kj) / S through weight kj */
      if (q % S == 0 && q / S < n) acc[q / S] = _mm512_fmadd_ps(xv, w0, acc[q / S]);
      if (q >= 1 && (q - 1) % S == 0 && (q - 1) / S < n)
        acc[(q - 1) / S] = _mm512_fmadd_ps(xv, w1, acc[(q - 1) / S]);
      if (q >= 2 && (q - 2) % S == 0 && (q - 2) / S < n)
        acc[(q - 2) / S] = _mm512_fmadd_ps(xv, w2, acc[(q - 2) / S]);
    }
  }
#pragma GCC unroll 16
  for (int t = 0; t < n; t++) {
    __m512 r = acc[t];
    if (a->z) r = _mm512_add_ps(r, LD16(a->z + (ow + t) * C + cb, tl, m));
    r = _mm512_min_ps(_mm512_max_ps(r, a->lo), a->hi);
    if (a->post.kind != NAT_POST_NONE) r = nat_post16(&a->post, a->pa, a->pb, r);
    ST16(a->y + (ow + t) * C + cb, tl, m, r);
  }
}

/* One output with its taps outside [0, W) skipped (strides above 2). */
static T512 void dw3_one(const dw3_args *a, int64_t ow, int64_t cb, __mmask16 m) {
  const int64_t C = a->C, iw = ow * a->S - a->pl;
  __m512 acc = a->b ? _mm512_maskz_loadu_ps(m, a->b + cb) : _mm512_setzero_ps();
  for (int ki = 0; ki < 3; ki++) {
    if (!a->rows[ki]) continue;
    for (int kj = 0; kj < 3; kj++) {
      if (iw + kj < 0 || iw + kj >= a->W) continue;
      acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a->rows[ki] + (iw + kj) * C + cb),
                            _mm512_maskz_loadu_ps(m, a->w + (3 * ki + kj) * C + cb), acc);
    }
  }
  if (a->z) acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(m, a->z + ow * C + cb));
  acc = _mm512_min_ps(_mm512_max_ps(acc, a->lo), a->hi);
  if (a->post.kind != NAT_POST_NONE) acc = nat_post16(&a->post, a->pa, a->pb, acc);
  _mm512_mask_storeu_ps(a->y + ow * C + cb, m, acc);
}

/* A run of N outputs over channels [c0, c1): full vectors, then the tail. */
#define DW3_N(N, S)                                                                                \
  static T512 __attribute__((noinline)) void dw3_s##S##_n##N(const dw3_args *a, bool edge,         \
                                                             int64_t ow, int64_t c0, int64_t c1) { \
    int64_t cb = c0;                                                                               \
    if (edge) {                                                                                    \
      for (; cb + 16 <= c1; cb += 16)                                                              \
        dw3_tile(N, S, true, false, a, ow, cb, (__mmask16)0xFFFF);                                 \
      if (cb < c1) dw3_tile(N, S, true, true, a, ow, cb, nat_tail16(c1 - cb));                     \
    } else {                                                                                       \
      for (; cb + 16 <= c1; cb += 16)                                                              \
        dw3_tile(N, S, false, false, a, ow, cb, (__mmask16)0xFFFF);                                \
      if (cb < c1) dw3_tile(N, S, false, true, a, ow, cb, nat_tail16(c1 - cb));                    \
    }                                                                                              \
  }
DW3_N(16, 1)
DW3_N(14, 1)
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

/* Outputs [0, OW) in runs of 16 / 14 / 8 / 7 / 4 / 2 / 1 (stride 1) or
 * 8 / 7 / 4 / 2 / 1 (stride 2), those with taps outside the row checked. */
static T512 void dw3_runs(const dw3_args *a, int64_t OW, int64_t c0, int64_t c1) {
  const int64_t S = a->S;
  for (int64_t ow = 0, n; ow < OW; ow += n) {
    int64_t left = OW - ow;
    n = left >= 16 && S == 1   ? 16
        : left >= 14 && S == 1 ? 14
        : left >= 8            ? 8
        : left >= 7            ? 7
        : left >= 4            ? 4
        : left >= 2            ? 2
                               : 1;
    int64_t iw = ow * S - a->pl;
    bool edge = iw < 0 || iw + S * (n - 1) + 2 >= a->W;
    switch (n * 2 + S - 1) {
    case 32: dw3_s1_n16(a, edge, ow, c0, c1); break;
    case 28: dw3_s1_n14(a, edge, ow, c0, c1); break;
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

static T512 void dw3_row(const float *const rows[3], int64_t W, int64_t OW, int64_t C, int64_t c0,
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
                .lo = _mm512_set1_ps(lo),
                .hi = _mm512_set1_ps(hi)};
  nat_post_of(post, &a.post);
  a.pa = _mm512_set1_ps(a.post.a), a.pb = _mm512_set1_ps(a.post.b);
  if (S != 1 && S != 2) {
    for (int64_t ow = 0; ow < OW; ow++)
      for (int64_t cb = c0; cb < c1; cb += 16)
        dw3_one(&a, ow, cb, nat_tail16(c1 - cb));
    return;
  }
  dw3_runs(&a, OW, c0, c1);
}

T512 void nat_nhwc512_dw_row(const float *const rows[3], int64_t W, int64_t OW, int64_t C,
                             int64_t c0, int64_t c1, int64_t S, int64_t pl, const float *w,
                             const float *b, const float *z, float lo, float hi, float *y) {
  dw3_row(rows, W, OW, C, c0, c1, S, pl, w, b, z, lo, hi, NULL, y);
}

/* Output rows [r0, r1) of N*OH, c->post (SiLU, HardSigmoid, HardSwish)
 * applied to each tile before its store (the driver leaves it to them). */
T512 void nat_nhwc512_dw(const nat_nhwc *c, int64_t r0, int64_t r1) {
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

void nat_nhwc512_dw(const nat_nhwc *c, int64_t r0, int64_t r1) {}
void nat_nhwc512_dw_row(const float *const rows[3], int64_t W, int64_t OW, int64_t C, int64_t c0,
                        int64_t c1, int64_t S, int64_t pl, const float *w, const float *b,
                        const float *z, float lo, float hi, float *y) {}

#endif
