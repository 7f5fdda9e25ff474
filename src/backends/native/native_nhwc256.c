/* FusedConvNhwc's kernels on AVX2+FMA: native_nhwc512.c's design for
 * vectors of eight channels and sixteen registers (driver and portable path
 * in native_nhwc.c). The last vector of a block is read and written through
 * a lane mask when M (or C) is not a multiple of 8; each kernel exists
 * with and without that tail, so full vectors use plain loads:
 *   pointwise  a register tile of 6 pixels x 16 channels, 4 x 24 or
 *              12 x 8 (at most 12 accumulators, the weight row's vectors
 *              and one broadcast in 16 registers); bias, residual and
 *              clamp on the tile before it is stored
 *   depthwise  3x3: native_nhwc_dw3256.c
 *   stem       a small group-1 window: per pixel, taps x input channels
 *              broadcast against weight vectors, up to 32 channels a tile
 * Compiled with per-function target attributes; nat_nhwc256_available()
 * says whether the run's level (nat_isa) allows them. */
#include <stdbool.h>
#include <stdint.h>

#include "backends/native/native.h"
#include "backends/native/native_nhwc_pw.h"
#include "ops/fused_impl.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "backends/native/native_avx2.h"

#define T256 __attribute__((target("avx2,fma")))
#define INL static inline __attribute__((always_inline))

bool nat_nhwc256_available(void) { return nat_isa() >= NAT_ISA_AVX2; }

/* Vector p of a block: through mask m when it is the block's tail. */
#define LD8(p, tl, m) ((tl) ? _mm256_maskload_ps((p), (m)) : _mm256_loadu_ps(p))
#define ST8(p, tl, m, v)                                                                           \
  do {                                                                                             \
    if (tl)                                                                                        \
      _mm256_maskstore_ps((p), (m), (v));                                                          \
    else                                                                                           \
      _mm256_storeu_ps((p), (v));                                                                  \
  } while (0)

/* ---- pointwise ------------------------------------------------------------ */

#define PW_PREFETCH 8

/* One k step of a tile: the weight row wk's vectors against mr broadcasts
 * of column k of x (rows ldx apart). */
INL T256 void pw_step(const int mr, const int nv, const bool tail, __m256 acc[12][3],
                      const float *x, int64_t ldx, const float *wk, int64_t ldw, __m256i lm,
                      const float *wn) {
  __m256 wv[3];
  _mm_prefetch((const char *)(wk + PW_PREFETCH * ldw), _MM_HINT_T0);
  if (nv == 3) _mm_prefetch((const char *)(wk + PW_PREFETCH * ldw + 16), _MM_HINT_T0);
  if (wn) _mm_prefetch((const char *)wn, _MM_HINT_T1); /* nat_pw_next */
#pragma GCC unroll 3
  for (int j = 0; j < 3; j++)
    if (j < nv) wv[j] = LD8(wk + 8 * j, tail && j == nv - 1, lm);
#pragma GCC unroll 12
  for (int i = 0; i < 12; i++) {
    if (i >= mr) break;
    __m256 xb = _mm256_broadcast_ss(x + i * ldx);
#pragma GCC unroll 3
    for (int j = 0; j < 3; j++)
      if (j < nv) acc[i][j] = _mm256_fmadd_ps(xb, wv[j], acc[i][j]);
  }
}

/* The 6 x 2 (and 5 x 2, 4 x 2) tile's k loop on packed weights (rows 16
 * floats apart), four k steps an iteration in assembly: every load and
 * broadcast at a fixed displacement from one of two pointers (x rows 0-2
 * and 4 from r8, 3 and 5 from r9), the increments and branch once per four
 * steps (the compiled loop issued 28 instructions per 12 multiply-adds;
 * GCC's own unrolling spilled accumulators). The accumulators are the
 * statement's register operands (GCC's choice among ymm0-11; ymm12-15 are
 * the weight vectors and broadcasts): a tile's bias, k loop and epilogue
 * never pass them through memory (the loop's operand limit, 30, is why
 * the pointers are copied into clobbered registers). Steps [0, 4 nb). */
// clang-format off
#define PW62_ROW(U, A, B, XB, S)                                                                   \
  "vbroadcastss " #U "*4(" XB "), %%ymm" S "\n\t"                                                  \
  "vfmadd231ps %%ymm12, %%ymm" S ", %[" A "]\n\t"                                                  \
  "vfmadd231ps %%ymm13, %%ymm" S ", %[" B "]\n\t"
#define PW62_HEAD(U, PF)                                                                           \
  "vmovups " #U "*64(%%r10), %%ymm12\n\t"                                                          \
  "vmovups " #U "*64+32(%%r10), %%ymm13\n\t"                                                       \
  "prefetcht0 " #U "*64+512(%%r10)\n\t"                                                            \
  PF
#define PW62_R0(U) PW62_ROW(U, "a0", "a1", "%%r8", "14")
#define PW62_R1(U) PW62_ROW(U, "a2", "a3", "%%r8,%[l],1", "15")
#define PW62_R2(U) PW62_ROW(U, "a4", "a5", "%%r8,%[l],2", "14")
#define PW62_R3(U) PW62_ROW(U, "a6", "a7", "%%r9", "15")
#define PW62_R4(U) PW62_ROW(U, "a8", "a9", "%%r8,%[l],4", "14")
#define PW62_R5(U) PW62_ROW(U, "a10", "a11", "%%r9,%[l],2", "15")
#define PW62_STEP6(U, PF) PW62_HEAD(U, PF) PW62_R0(U) PW62_R1(U) PW62_R2(U) PW62_R3(U) PW62_R4(U) PW62_R5(U)
#define PW62_STEP5(U, PF) PW62_HEAD(U, PF) PW62_R0(U) PW62_R1(U) PW62_R2(U) PW62_R3(U) PW62_R4(U)
#define PW62_STEP4(U, PF) PW62_HEAD(U, PF) PW62_R0(U) PW62_R1(U) PW62_R2(U) PW62_R3(U)
#define PW62_LOOP(STEP, PF0, PF1, PF2, PF3, WNADD)                                                 \
  __asm__ volatile(                                                                                \
      "mov %[x], %%r8\n\t"                                                                         \
      "lea (%[x],%[l],2), %%r9\n\t"                                                                \
      "add %[l], %%r9\n\t"                                                                         \
      "mov %[w], %%r10\n\t"                                                                        \
      "mov %[n], %%r11\n\t"                                                                        \
      "mov %[wn], %%rax\n\t"                                                                       \
      "1:\n\t"                                                                                     \
      STEP(0, PF0) STEP(1, PF1) STEP(2, PF2) STEP(3, PF3)                                          \
      "add $16, %%r8\n\t"                                                                          \
      "add $16, %%r9\n\t"                                                                          \
      "add $256, %%r10\n\t"                                                                        \
      WNADD                                                                                        \
      "dec %%r11\n\t"                                                                              \
      "jnz 1b\n\t"                                                                                 \
      : [a0] "+x"(a[0]), [a1] "+x"(a[1]), [a2] "+x"(a[2]), [a3] "+x"(a[3]), [a4] "+x"(a[4]),      \
        [a5] "+x"(a[5]), [a6] "+x"(a[6]), [a7] "+x"(a[7]), [a8] "+x"(a[8]), [a9] "+x"(a[9]),       \
        [a10] "+x"(a[10]), [a11] "+x"(a[11])                                                       \
      : [x] "r"(x), [w] "r"(w), [n] "r"(nb), [wn] "r"(wn), [l] "r"(lb)                             \
      : "xmm12", "xmm13", "xmm14", "xmm15", "r8", "r9", "r10", "r11", "rax", "cc", "memory")
#define PW62_PF(STEP)                                                                              \
  if (wn)                                                                                          \
    PW62_LOOP(STEP, "prefetcht1 0(%%rax)\n\t", "prefetcht1 64(%%rax)\n\t",                         \
              "prefetcht1 128(%%rax)\n\t", "prefetcht1 192(%%rax)\n\t", "add $256, %%rax\n\t");    \
  else                                                                                             \
    PW62_LOOP(STEP, "", "", "", "", "")
// clang-format on

/* Steps [0, 4 (K / 4)) of an mr x 2 tile (mr 4 to 6) on acc; returns the
 * steps done. */
INL T256 int64_t pw62_asm(const int mr, __m256 acc[12][3], int64_t K, const float *x, int64_t ldx,
                          const float *w, const float *wn) {
  int64_t nb = K / 4;
  if (nb <= 0) return 0;
  int64_t lb = ldx * 4;
  __m256 a[12];
#pragma GCC unroll 12
  for (int i = 0; i < 12; i++)
    a[i] = i / 2 < mr ? acc[i / 2][i % 2] : _mm256_setzero_ps();
  if (mr == 6)
    PW62_PF(PW62_STEP6);
  else if (mr == 5)
    PW62_PF(PW62_STEP5);
  else
    PW62_PF(PW62_STEP4);
#pragma GCC unroll 12
  for (int i = 0; i < 12; i++)
    if (i / 2 < mr) acc[i / 2][i % 2] = a[i];
  return 4 * (K / 4);
}

INL T256 void pw_kloop(const int mr, const int nv, const bool tail, const bool pf,
                       __m256 acc[12][3], int64_t k, int64_t K, const float *x, int64_t ldx,
                       const float *w, int64_t ldw, __m256i lm, const float *wn) {
  for (; k < K; k++)
    pw_step(mr, nv, tail, acc, x + k, ldx, w + k * ldw, ldw, lm, pf ? wn + 16 * k : NULL);
}

/* y[i][0..8nv) = clamp(b + sum_k x[i][k] w[k][..] + z[i][..]) for mr pixels;
 * the last vector through mask lm when tail; the weight rows cw floats
 * apart when cw > 0 (packed blocks: their offsets then constants), else
 * ldw. */
INL T256 void pw_tile(const int mr, const int nv, const bool tail, const int cw, int64_t K,
                      const float *x, int64_t ldx, const float *w, int64_t ldw_, __m256i lm,
                      const float *b, const float *z, float *y, int64_t ldy, __m256 lo, __m256 hi,
                      const float *wn) {
  const int64_t ldw = cw > 0 ? cw : ldw_;
  __m256 acc[12][3];
#pragma GCC unroll 3
  for (int j = 0; j < 3; j++) {
    if (j >= nv) break;
    const bool tl = tail && j == nv - 1;
    __m256 bj = b ? LD8(b + 8 * j, tl, lm) : _mm256_setzero_ps();
#pragma GCC unroll 12
    for (int i = 0; i < 12; i++)
      if (i < mr) acc[i][j] = bj;
  }
  int64_t k0 = 0;
  if (mr >= 4 && nv == 2 && !tail && cw == 16) k0 = pw62_asm(mr, acc, K, x, ldx, w, wn);
  if (wn) /* the test hoisted out of the loop */
    pw_kloop(mr, nv, tail, true, acc, k0, K, x, ldx, w, ldw, lm, wn);
  else
    pw_kloop(mr, nv, tail, false, acc, k0, K, x, ldx, w, ldw, lm, NULL);
#pragma GCC unroll 12
  for (int i = 0; i < 12; i++) {
    if (i >= mr) break;
#pragma GCC unroll 3
    for (int j = 0; j < 3; j++) {
      if (j >= nv) break;
      const bool tl = tail && j == nv - 1;
      __m256 v = acc[i][j];
      if (z) v = _mm256_add_ps(v, LD8(z + i * ldy + 8 * j, tl, lm));
      v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
      ST8(y + i * ldy + 8 * j, tl, lm, v);
    }
  }
}

#define PW_ARGS                                                                                    \
  int64_t K, const float *x, int64_t ldx, const float *w, int64_t ldw, __m256i lm, const float *b, \
      const float *z, float *y, int64_t ldy, __m256 lo, __m256 hi, const float *wn
#define PW_PASS K, x, ldx, w, ldw, lm, b, z, y, ldy, lo, hi, wn
#define PW_CASE(R, NV)                                                                             \
  case R:                                                                                          \
    if (tail)                                                                                      \
      pw_tile(R, NV, true, 0, PW_PASS);                                                            \
    else if ((R) >= 4 && (R) <= 6 && (NV) == 2 && ldw == 16) /* pw62_asm */                        \
      pw_tile(R, NV, false, 16, PW_PASS);                                                          \
    else                                                                                           \
      pw_tile(R, NV, false, 0, PW_PASS);                                                           \
    break;

/* One function per vector count, a case per row count up to that count's
 * tile (12, 6, 4 rows): each tile fully unrolled with its accumulators in
 * registers. */
static T256 void pw_nv1(int mr, bool tail, PW_ARGS) {
  switch (mr) {
    PW_CASE(1, 1)
    PW_CASE(2, 1)
    PW_CASE(3, 1)
    PW_CASE(4, 1)
    PW_CASE(5, 1)
    PW_CASE(6, 1)
    PW_CASE(7, 1)
    PW_CASE(8, 1)
    PW_CASE(9, 1)
    PW_CASE(10, 1)
    PW_CASE(11, 1)
    PW_CASE(12, 1)
  default: break;
  }
}
static T256 void pw_nv2(int mr, bool tail, PW_ARGS) {
  switch (mr) {
    PW_CASE(1, 2)
    PW_CASE(2, 2)
    PW_CASE(3, 2)
    PW_CASE(4, 2)
    PW_CASE(5, 2)
    PW_CASE(6, 2)
  default: break;
  }
}
static T256 void pw_nv3(int mr, bool tail, PW_ARGS) {
  switch (mr) {
    PW_CASE(1, 3)
    PW_CASE(2, 3)
    PW_CASE(3, 3)
    PW_CASE(4, 3)
  default: break;
  }
}

/* Rows a tile of nv vectors takes at most (12 accumulators). */
static const int pw_rows_of[4] = {0, 12, 6, 4};

/* The register tile for P pixels by M channels: mr rows by nv vectors of
 * 8, the one that leaves the fewest unused slots in the last row and
 * column blocks (ties: the first, 6 x 2, whose 8 loads per 12 multiply-adds
 * leave the load ports room). 4 x 3 counts 5% less: its packed weight rows
 * of 96 bytes straddle cache lines every other row (1024 x 1024 on 14x14
 * ran at 87-88 GFLOP/s on it, 93-96 on 6 x 2, AVX2 on this AVX-512 Xeon). */
void nat_nhwc256_pw_tile(int64_t P, int64_t M, int *mr, int *nv) {
  static const int cand[][2] = {{6, 2}, {4, 3}, {12, 1}};
  static const double weight[] = {1.0, 0.95, 1.0};
  int64_t m8 = (M + 7) / 8;
  double best = -1;
  for (size_t i = 0; i < sizeof cand / sizeof cand[0]; i++) {
    int64_t r = cand[i][0], v = cand[i][1];
    double use = weight[i] * (double)P / (double)((P + r - 1) / r * r) *
                 ((double)m8 / (double)((m8 + v - 1) / v * v));
    if (use > best + 1e-9) best = use, *mr = (int)r, *nv = (int)v;
  }
}

/* GELU on a tile while it is in L1 (native_math.c's AVX2 table form). */
static void gelu_tile(float *y, int64_t ldy, int64_t rows, int64_t n) {
  nat_gelu256_tile(y, ldy, rows, n);
}

/* As native_nhwc512.c's: a panel of X stays in L2 while every channel
 * block's weights stream past it once. */
#define PW_PANEL_BYTES (384 * 1024)

/* Pixel rows a panel for P pixels of K channels in tiles of `rows`: where
 * PW_L1_TILES tiles of X fit in PW_L1_BYTES, a panel that stays in L1
 * while each column block's weights (K x 16 floats, at most 16 KB) stream
 * past it, the panels as even as whole tiles make them; else
 * nat_pw_panel's. ResNeXt's 56x56 layers (K 64-256, outputs and residual
 * of 3 MB, past L2) ran tile by tile over every column block at 94-106
 * GFLOP/s (AVX2, one core), on 24 KB panels at 100-117. */
#define PW_L1_BYTES (24 * 1024)
#define PW_L1_TILES 4
static int64_t pw_panel(int64_t P, int64_t K, int64_t cols, int rows) {
  if (K * 4 * rows * PW_L1_TILES > PW_L1_BYTES || P <= rows)
    return nat_pw_panel(P, K, cols, rows, PW_PANEL_BYTES);
  int64_t panel = PW_L1_BYTES / (4 * K) / rows * rows;
  if (P <= panel) return P;
  int64_t n = (P + panel - 1) / panel, per = (P + n - 1) / n;
  return (per + rows - 1) / rows * rows;
}

T256 void nat_nhwc256_pw(const nat_nhwc *c, int64_t p0, int64_t p1, int64_t m0, int64_t m1) {
  __m256 lo = _mm256_set1_ps(c->lo), hi = _mm256_set1_ps(c->hi);
  int64_t K = c->C, M = c->M, bw = 8 * c->pw_nv;
  int rows = c->pw_mr;
  int64_t panel = pw_panel(p1 - p0, K, m1 - m0, rows);
  for (int64_t q0 = p0; q0 < p1; q0 += panel) {
    int64_t q1 = q0 + panel < p1 ? q0 + panel : p1;
    for (int64_t m = m0; m < m1; m += bw) {
      int64_t mc = m1 - m < bw ? m1 - m : bw;
      int nv = (int)((mc + 7) / 8), most = pw_rows_of[nv];
      bool tail = mc % 8 != 0;
      __m256i lm = nat_tail8(mc - 8 * (nv - 1));
      /* packed weights (wpk): blocks of K x bw, block m / bw at m * K */
      const float *w = c->wpk ? c->wpk + m * K : c->w + m, *b = c->b ? c->b + m : NULL;
      int64_t ldw = c->wpk ? bw : M;
      const float *next = c->wpk && m + bw < m1 ? w + bw * K : NULL;
      /* tiles of `rows` pixels; where that leaves a last one of fewer than
       * rows - 2 (latency-bound: ResNeXt's 49-pixel layers ended in a tile
       * of 1), all of them as even as they come (49: 5 and 6) */
      int64_t len = q1 - q0, nt = (len + rows - 1) / rows, rem = len % rows;
      bool even = rem && rem < rows - 2 && nt > 1;
      int64_t t = 0; /* tiles of this block so far */
      for (int64_t i = 0; i < nt; i++) {
        int64_t p = q0 + (even ? i * len / nt : i * rows);
        int64_t pe = i + 1 == nt ? q1 : q0 + (even ? (i + 1) * len / nt : (i + 1) * rows);
        int mr = (int)(pe - p);
        /* the next tile's output rows: in this panel, or (a panel of one
         * tile) the next panel's, a column block at a time */
        int64_t pn = pe < q1 ? pe : nt == 1 ? q1 : p1;
        if (pn < p1)
          nat_pw_prefetch_out(c->y + pn * M + m, c->z ? c->z + pn * M + m : NULL, M,
                              p1 - pn < rows ? p1 - pn : rows, mc);
        for (int j = 0; j < mr; j += most, t++) { /* a tile never wider than its registers */
          int r = mr - j < most ? mr - j : most;
          const float *x = c->x + (p + j) * K, *z = c->z ? c->z + (p + j) * M + m : NULL;
          float *y = c->y + (p + j) * M + m;
          const float *wn = nat_pw_next(next, K, bw, t);
          switch (nv) {
          case 1: pw_nv1(r, tail, K, x, K, w, ldw, lm, b, z, y, M, lo, hi, wn); break;
          case 2: pw_nv2(r, tail, K, x, K, w, ldw, lm, b, z, y, M, lo, hi, wn); break;
          default: pw_nv3(r, tail, K, x, K, w, ldw, lm, b, z, y, M, lo, hi, wn); break;
          }
        }
        if (c->gelu) gelu_tile(c->y + p * M + m, M, mr, mc);
      }
    }
  }
}

/* ---- stem: small group-1 windows ---------------------------------------- */

/* Pixels [ow, ow + np) of output row (n, oh), all taps inside the row
 * horizontally, channels [m0, m0 + 8 nv) (the last vector through lm). */
INL T256 void stem_tile(const int np, const int nv, const nat_nhwc *c, int64_t n, int64_t oh,
                        int64_t ow, int64_t m0, __m256i lm, __m256 lo, __m256 hi) {
  int64_t M = c->M;
  __m256 acc[12][4];
  __m256i mk[4];
#pragma GCC unroll 4
  for (int j = 0; j < 4; j++) {
    if (j >= nv) break;
    mk[j] = j == nv - 1 ? lm : _mm256_set1_epi32(-1);
    __m256 b = c->b ? _mm256_maskload_ps(c->b + m0 + 8 * j, mk[j]) : _mm256_setzero_ps();
#pragma GCC unroll 12
    for (int i = 0; i < np; i++)
      acc[i][j] = b;
  }
  for (int64_t ki = 0; ki < c->kh; ki++) {
    int64_t ih = oh * c->sh - c->pt + ki;
    if (ih < 0 || ih >= c->H) continue;
    for (int64_t kj = 0; kj < c->kw; kj++) {
      const float *x = c->x + n * c->xs_n + ih * c->xs_h + (ow * c->sw - c->pl + kj) * c->xs_w;
      const float *w = c->w + (ki * c->kw + kj) * c->C * M + m0;
      for (int64_t ci = 0; ci < c->C; ci++) {
        __m256 wv[4];
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
          if (j < nv) wv[j] = _mm256_maskload_ps(w + ci * M + 8 * j, mk[j]);
        const float *xc = x + ci * c->xs_c;
#pragma GCC unroll 12
        for (int i = 0; i < np; i++) {
          __m256 xb = _mm256_broadcast_ss(xc + i * c->sw * c->xs_w);
#pragma GCC unroll 4
          for (int j = 0; j < 4; j++)
            if (j < nv) acc[i][j] = _mm256_fmadd_ps(xb, wv[j], acc[i][j]);
        }
      }
    }
  }
#pragma GCC unroll 12
  for (int i = 0; i < np; i++) {
    int64_t p = (n * c->OH + oh - c->y_r0) * c->OW + ow + i;
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
      if (j >= nv) break;
      __m256 v = acc[i][j];
      if (c->z) v = _mm256_add_ps(v, _mm256_maskload_ps(c->z + p * M + m0 + 8 * j, mk[j]));
      v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
      _mm256_maskstore_ps(c->y + p * M + m0 + 8 * j, mk[j], v);
    }
  }
}

/* One output pixel with bounds checks on every tap. */
static T256 void stem_pixel(const nat_nhwc *c, int64_t n, int64_t oh, int64_t ow, __m256 lo,
                            __m256 hi) {
  int64_t M = c->M, p = (n * c->OH + oh - c->y_r0) * c->OW + ow;
  for (int64_t m0 = 0; m0 < M; m0 += 8) {
    __m256i mk = nat_tail8(M - m0);
    __m256 acc = c->b ? _mm256_maskload_ps(c->b + m0, mk) : _mm256_setzero_ps();
    for (int64_t ki = 0; ki < c->kh; ki++) {
      int64_t ih = oh * c->sh - c->pt + ki;
      if (ih < 0 || ih >= c->H) continue;
      for (int64_t kj = 0; kj < c->kw; kj++) {
        int64_t iw = ow * c->sw - c->pl + kj;
        if (iw < 0 || iw >= c->W) continue;
        const float *x = c->x + n * c->xs_n + ih * c->xs_h + iw * c->xs_w;
        const float *w = c->w + (ki * c->kw + kj) * c->C * M + m0;
        for (int64_t ci = 0; ci < c->C; ci++)
          acc = _mm256_fmadd_ps(_mm256_set1_ps(x[ci * c->xs_c]), _mm256_maskload_ps(w + ci * M, mk),
                                acc);
      }
    }
    if (c->z) acc = _mm256_add_ps(acc, _mm256_maskload_ps(c->z + p * M + m0, mk));
    acc = _mm256_min_ps(_mm256_max_ps(acc, lo), hi);
    _mm256_maskstore_ps(c->y + p * M + m0, mk, acc);
  }
}

/* A stem tile with the pixel and vector counts as constants (np x nv at
 * most 12 accumulators: 12 x 1, 6 x 2, 4 x 3, 3 x 4). */
#define STEM_ARGS                                                                                  \
  const nat_nhwc *c, int nv, int64_t n, int64_t oh, int64_t ow, int64_t m0, __m256i lm, __m256 lo, \
      __m256 hi
#define STEM_PASS c, n, oh, ow, m0, lm, lo, hi
static T256 void stem_tiles(int np, STEM_ARGS) {
  switch (np * 8 + nv) {
  case 12 * 8 + 1: stem_tile(12, 1, STEM_PASS); break;
  case 6 * 8 + 1: stem_tile(6, 1, STEM_PASS); break;
  case 6 * 8 + 2: stem_tile(6, 2, STEM_PASS); break;
  case 4 * 8 + 1: stem_tile(4, 1, STEM_PASS); break;
  case 4 * 8 + 2: stem_tile(4, 2, STEM_PASS); break;
  case 4 * 8 + 3: stem_tile(4, 3, STEM_PASS); break;
  case 3 * 8 + 1: stem_tile(3, 1, STEM_PASS); break;
  case 3 * 8 + 2: stem_tile(3, 2, STEM_PASS); break;
  case 3 * 8 + 3: stem_tile(3, 3, STEM_PASS); break;
  case 3 * 8 + 4: stem_tile(3, 4, STEM_PASS); break;
  default: break;
  }
}

/* ---- stem on a padded NHWC copy: the window's shape as constants ---------- */

/* As native_nhwc512.c's stemf_tile: output pixels [ow, ow + NP) of row
 * (n, oh), channels [m0, m0 + 8 NV), one input pointer per kernel row and
 * every tap at a constant displacement from it. */
INL T256 void stemf_tile(const int KW, const int C, const int S, const int NP, const int NV,
                         const nat_nhwc *c, int64_t n, int64_t oh, int64_t ow, int64_t m0,
                         __m256 lo, __m256 hi) {
  const int64_t M = c->M;
  __m256 acc[12][4];
#pragma GCC unroll 4
  for (int j = 0; j < NV; j++) {
    __m256 b = c->b ? _mm256_loadu_ps(c->b + m0 + 8 * j) : _mm256_setzero_ps();
#pragma GCC unroll 12
    for (int i = 0; i < NP; i++)
      acc[i][j] = b;
  }
  const float *xr = c->x + n * c->xs_n + oh * c->sh * c->xs_h + ow * S * C;
  for (int64_t ki = 0; ki < c->kh; ki++, xr += c->xs_h) {
    const float *wk = c->w + ki * KW * C * M + m0;
#pragma GCC unroll 21
    for (int t = 0; t < KW * C; t++) {
      __m256 wv[4];
#pragma GCC unroll 4
      for (int j = 0; j < NV; j++)
        wv[j] = _mm256_loadu_ps(wk + t * M + 8 * j);
#pragma GCC unroll 12
      for (int i = 0; i < NP; i++) {
        __m256 xb = _mm256_broadcast_ss(xr + i * S * C + t);
#pragma GCC unroll 4
        for (int j = 0; j < NV; j++)
          acc[i][j] = _mm256_fmadd_ps(xb, wv[j], acc[i][j]);
      }
    }
  }
  float *y = c->y + ((n * c->OH + oh - c->y_r0) * c->OW + ow) * M + m0;
#pragma GCC unroll 12
  for (int i = 0; i < NP; i++)
#pragma GCC unroll 4
    for (int j = 0; j < NV; j++)
      _mm256_storeu_ps(y + i * M + 8 * j, _mm256_min_ps(_mm256_max_ps(acc[i][j], lo), hi));
}

/* Rows [r0, r1): tiles of NP pixels, the last one moved back to end at
 * the row's end (its first pixels computed twice, the same values). */
INL T256 void stemf_rows(const int KW, const int C, const int S, const int NP, const int NV,
                         const nat_nhwc *c, int64_t r0, int64_t r1) {
  __m256 lo = _mm256_set1_ps(c->lo), hi = _mm256_set1_ps(c->hi);
  for (int64_t r = r0; r < r1; r++) {
    int64_t n = r / c->OH, oh = r % c->OH;
    for (int64_t m0 = 0; m0 < c->M; m0 += 8 * NV)
      for (int64_t ow = 0; ow < c->OW; ow += NP)
        stemf_tile(KW, C, S, NP, NV, c, n, oh, ow + NP <= c->OW ? ow : c->OW - NP, m0, lo, hi);
  }
}

static T256 void stemf_3x3s2c3(const nat_nhwc *c, int64_t r0, int64_t r1) {
  stemf_rows(3, 3, 2, 6, 2, c, r0, r1);
}
static T256 void stemf_7x7s2c3(const nat_nhwc *c, int64_t r0, int64_t r1) {
  stemf_rows(7, 3, 2, 6, 2, c, r0, r1);
}

typedef void (*stemf_fn)(const nat_nhwc *c, int64_t r0, int64_t r1);

/* The kernel for c, or NULL: 3 channels, a 3x3 or 7x7 stride-2 window on
 * an unpadded NHWC input (the padded copy), M a multiple of 16, rows of M
 * floats, no residual, at least a tile's pixels a row. */
static stemf_fn stemf_of(const nat_nhwc *c) {
  if (c->C != 3 || c->xs_c != 1 || c->xs_w != 3 || c->pt || c->pl || c->kh != c->kw ||
      (c->kh != 3 && c->kh != 7) || c->sh != 2 || c->sw != 2 || (c->dh > 1 || c->dw > 1) ||
      c->M % 16 || c->z || (c->ldy > 0 && c->ldy != c->M) || c->OW < 6)
    return NULL;
  return c->kh == 3 ? stemf_3x3s2c3 : stemf_7x7s2c3;
}

bool nat_nhwc256_stem_fast(const nat_nhwc *c) { return stemf_of(c) != NULL; }

T256 void nat_nhwc256_stem(const nat_nhwc *c, int64_t r0, int64_t r1) {
  stemf_fn f = stemf_of(c);
  if (f) {
    f(c, r0, r1);
    return;
  }
  __m256 lo = _mm256_set1_ps(c->lo), hi = _mm256_set1_ps(c->hi);
  /* outputs whose taps all lie inside the row: [jl, jh) */
  int64_t S = c->sw, jl = (c->pl + S - 1) / S;
  int64_t jh = c->W - c->kw + c->pl >= 0 ? (c->W - c->kw + c->pl) / S + 1 : 0;
  if (jh > c->OW) jh = c->OW;
  if (jl > jh) jl = jh;
  static const int np_of[5] = {0, 12, 6, 4, 3};
  int64_t width = c->M < 32 ? c->M : 32;
  int np = np_of[(width + 7) / 8];
  for (int64_t r = r0; r < r1; r++) {
    int64_t n = r / c->OH, oh = r % c->OH;
    for (int64_t ow = 0; ow < c->OW;) {
      if (ow >= jl && ow + np <= jh) {
        for (int64_t m0 = 0; m0 < c->M; m0 += 32) {
          int64_t mc = c->M - m0 < 32 ? c->M - m0 : 32;
          int nv = (int)((mc + 7) / 8);
          stem_tiles(np, c, nv, n, oh, ow, m0, nat_tail8(mc - 8 * (nv - 1)), lo, hi);
        }
        ow += np;
      } else {
        stem_pixel(c, n, oh, ow, lo, hi);
        ow++;
      }
    }
  }
}

/* ---- 1x1 depthwise (a per-channel scale and shift) ------------------------ */

/* Output rows [r0, r1) of a 1x1 stride-1 unpadded depthwise conv (DenseNet's
 * BatchNormalization + Relu before each 1x1 conv): input and output pixels
 * are the same, so the rows are one run of pixels x C, each vector
 * y = clamp(x w + b + z) (the general kernel strode 8 pixels apart per
 * channel vector: 8% of DenseNet-121 at AVX2). */
T256 void nat_nhwc256_dw1(const nat_nhwc *c, int64_t r0, int64_t r1) {
  __m256 lo = _mm256_set1_ps(c->lo), hi = _mm256_set1_ps(c->hi);
  const int64_t C = c->C, P = (r1 - r0) * c->OW;
  const float *x = c->x + r0 * c->OW * C, *z = c->z ? c->z + r0 * c->OW * C : NULL;
  float *y = c->y + (r0 - c->y_r0) * c->OW * C;
  for (int64_t p = 0; p < P; p++, x += C, y += C, z = z ? z + C : NULL)
    for (int64_t k = 0; k < C; k += 8) {
      bool tl = C - k < 8;
      __m256i m = nat_tail8(C - k);
      __m256 b = c->b ? LD8(c->b + k, tl, m) : _mm256_setzero_ps();
      __m256 v = _mm256_fmadd_ps(LD8(x + k, tl, m), LD8(c->w + k, tl, m), b);
      if (z) v = _mm256_add_ps(v, LD8(z + k, tl, m));
      ST8(y + k, tl, m, _mm256_min_ps(_mm256_max_ps(v, lo), hi));
    }
}

#else

bool nat_nhwc256_available(void) { return false; }
void nat_nhwc256_pw_tile(int64_t P, int64_t M, int *mr, int *nv) { *mr = 6, *nv = 2; }
void nat_nhwc256_pw(const nat_nhwc *c, int64_t p0, int64_t p1, int64_t m0, int64_t m1) {}
void nat_nhwc256_stem(const nat_nhwc *c, int64_t r0, int64_t r1) {}
bool nat_nhwc256_stem_fast(const nat_nhwc *c) { return false; }

void nat_nhwc256_dw1(const nat_nhwc *c, int64_t r0, int64_t r1) {}
#endif
