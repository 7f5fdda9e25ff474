/* FusedConvNhwc's kernels on AVX-512 (driver and portable path in
 * native_nhwc.c). Channels are innermost, so every kernel works on vectors
 * of sixteen output channels, the last one masked when M is not a multiple
 * of 16:
 *   pointwise  a register tile of up to 12 pixels x 64 channels: per input
 *              channel, the weight row's vectors times each pixel's value
 *              broadcast; bias, residual and clamp on the tile before it
 *              is stored
 *   depthwise  3x3: native_nhwc_dw3512.c
 *   stem       a small group-1 window (the first conv): per pixel, taps x
 *              input channels broadcast against weight vectors
 * Compiled with per-function target attributes; nat_nhwc512_available()
 * says whether the CPU can run them. */
#include <stdbool.h>
#include <stdint.h>

#include "backends/native/native.h"
#include "backends/native/native_nhwc_pw.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "backends/native/native_avx512.h"

#define T512 __attribute__((target("avx512f,fma")))
#define INL static inline __attribute__((always_inline))

bool nat_nhwc512_available(void) { return nat_isa() >= NAT_ISA_AVX512; }

/* ---- pointwise ------------------------------------------------------------ */

/* Weight rows read ahead into L1 (rows are ldw apart: each in its own
 * page for wide layers, where the hardware prefetchers stop). */
#define PW_PREFETCH 8

/* The 12 x 2 tile's k loop on packed weights (rows 32 floats apart, no
 * mask), four k steps an iteration in assembly: every load and broadcast at
 * a fixed displacement from one of four pointers (x rows 3t..3t+2 from
 * x3t), the increments and branch once per four steps (as native_nhwc256.c's
 * pw62_asm). Steps [0, 4 nb); the accumulators in zmm0-23 (from and back to
 * buf once a tile), zmm24-31 scratch. */
// clang-format off
#define PW122_ROW(U, A, B, XB, S)                                                                  \
  "vbroadcastss " #U "*4(" XB "), %%zmm" S "\n\t"                                                  \
  "vfmadd231ps %%zmm24, %%zmm" S ", %%zmm" A "\n\t"                                                \
  "vfmadd231ps %%zmm25, %%zmm" S ", %%zmm" B "\n\t"
#define PW122_STEP(U, PF)                                                                          \
  "vmovups " #U "*128(%[w]), %%zmm24\n\t"                                                          \
  "vmovups " #U "*128+64(%[w]), %%zmm25\n\t"                                                       \
  "prefetcht0 " #U "*128+1024(%[w])\n\t"                                                           \
  "prefetcht0 " #U "*128+1088(%[w])\n\t"                                                           \
  PF                                                                                               \
  PW122_ROW(U, "0", "1", "%[x0]", "26")                                                            \
  PW122_ROW(U, "2", "3", "%[x0],%[l],1", "27")                                                     \
  PW122_ROW(U, "4", "5", "%[x0],%[l],2", "28")                                                     \
  PW122_ROW(U, "6", "7", "%[x3]", "29")                                                            \
  PW122_ROW(U, "8", "9", "%[x3],%[l],1", "30")                                                     \
  PW122_ROW(U, "10", "11", "%[x3],%[l],2", "31")                                                   \
  PW122_ROW(U, "12", "13", "%[x6]", "26")                                                          \
  PW122_ROW(U, "14", "15", "%[x6],%[l],1", "27")                                                   \
  PW122_ROW(U, "16", "17", "%[x6],%[l],2", "28")                                                   \
  PW122_ROW(U, "18", "19", "%[x9]", "29")                                                          \
  PW122_ROW(U, "20", "21", "%[x9],%[l],1", "30")                                                   \
  PW122_ROW(U, "22", "23", "%[x9],%[l],2", "31")
#define PW122_MOV(OP)                                                                              \
  OP("0", "0") OP("1", "64") OP("2", "128") OP("3", "192") OP("4", "256") OP("5", "320")           \
  OP("6", "384") OP("7", "448") OP("8", "512") OP("9", "576") OP("10", "640") OP("11", "704")      \
  OP("12", "768") OP("13", "832") OP("14", "896") OP("15", "960") OP("16", "1024")                 \
  OP("17", "1088") OP("18", "1152") OP("19", "1216") OP("20", "1280") OP("21", "1344")             \
  OP("22", "1408") OP("23", "1472")
#define PW122_LD(R, O) "vmovups " O "(%[a]), %%zmm" R "\n\t"
#define PW122_ST(R, O) "vmovups %%zmm" R ", " O "(%[a])\n\t"
#define PW122_LOOP(PF0, PF1, PF2, PF3, WNADD)                                                      \
  __asm__ volatile(                                                                                \
      PW122_MOV(PW122_LD)                                                                          \
      "1:\n\t"                                                                                     \
      PW122_STEP(0, PF0) PW122_STEP(1, PF1) PW122_STEP(2, PF2) PW122_STEP(3, PF3)                  \
      "add $16, %[x0]\n\t"                                                                         \
      "add $16, %[x3]\n\t"                                                                         \
      "add $16, %[x6]\n\t"                                                                         \
      "add $16, %[x9]\n\t"                                                                         \
      "add $512, %[w]\n\t"                                                                         \
      WNADD                                                                                        \
      "dec %[n]\n\t"                                                                               \
      "jnz 1b\n\t"                                                                                 \
      PW122_MOV(PW122_ST)                                                                          \
      : [x0] "+r"(x0), [x3] "+r"(x3), [x6] "+r"(x6), [x9] "+r"(x9), [w] "+r"(wp), [n] "+r"(nb),   \
        [wn] "+r"(wq)                                                                              \
      : [l] "r"(lb), [a] "r"(buf)                                                                  \
      : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",   \
        "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20",  \
        "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30",  \
        "xmm31", "cc", "memory")
// clang-format on

INL T512 int64_t pw122_asm(__m512 acc[12][4], int64_t K, const float *x, int64_t ldx,
                           const float *w, const float *wn) {
  int64_t nb = K / 4;
  if (nb <= 0) return 0;
  const float *x0 = x, *x3 = x + 3 * ldx, *x6 = x + 6 * ldx, *x9 = x + 9 * ldx, *wp = w, *wq = wn;
  int64_t lb = ldx * 4;
  float buf[24 * 16];
#pragma GCC unroll 24
  for (int i = 0; i < 24; i++)
    _mm512_storeu_ps(buf + 16 * i, acc[i / 2][i % 2]);
  if (wn)
    PW122_LOOP("prefetcht1 0(%[wn])\n\t", "prefetcht1 64(%[wn])\n\t", "prefetcht1 128(%[wn])\n\t",
               "prefetcht1 192(%[wn])\n\t", "add $256, %[wn]\n\t");
  else
    PW122_LOOP("", "", "", "", "");
#pragma GCC unroll 24
  for (int i = 0; i < 24; i++)
    acc[i / 2][i % 2] = _mm512_loadu_ps(buf + 16 * i);
  return 4 * (K / 4);
}

/* The 6 x 4 tile's k loop on packed weights (rows 64 floats apart, no
 * mask) in assembly, as pw122_asm: four k steps an iteration, x rows 0-2
 * from x0 and 3-5 from x3 at fixed displacements, the weights of step k
 * read into zmm24-27 and their lines 8 steps ahead prefetched; the
 * accumulators in zmm0-23 (acc[i][j] in zmm 4i + j), the broadcasts in
 * zmm28-31. The intrinsics loop it replaces reloaded the last vector's
 * mask, the sixth row's pointer and the weights' stride from the stack
 * every step (ResNet-50's and SqueezeNet's 1x1 convs, M a multiple of 64). */
// clang-format off
#define PW64_ROW(U, A, B, C, D, XB, S)                                                             \
  "vbroadcastss " #U "*4(" XB "), %%zmm" S "\n\t"                                                  \
  "vfmadd231ps %%zmm24, %%zmm" S ", %%zmm" A "\n\t"                                                \
  "vfmadd231ps %%zmm25, %%zmm" S ", %%zmm" B "\n\t"                                                \
  "vfmadd231ps %%zmm26, %%zmm" S ", %%zmm" C "\n\t"                                                \
  "vfmadd231ps %%zmm27, %%zmm" S ", %%zmm" D "\n\t"
#define PW64_STEP(U, PF)                                                                           \
  "vmovups " #U "*256(%[w]), %%zmm24\n\t"                                                          \
  "vmovups " #U "*256+64(%[w]), %%zmm25\n\t"                                                       \
  "vmovups " #U "*256+128(%[w]), %%zmm26\n\t"                                                      \
  "vmovups " #U "*256+192(%[w]), %%zmm27\n\t"                                                      \
  "prefetcht0 " #U "*256+2048(%[w])\n\t"                                                           \
  "prefetcht0 " #U "*256+2112(%[w])\n\t"                                                           \
  "prefetcht0 " #U "*256+2176(%[w])\n\t"                                                           \
  "prefetcht0 " #U "*256+2240(%[w])\n\t"                                                           \
  PF                                                                                               \
  PW64_ROW(U, "0", "1", "2", "3", "%[x0]", "28")                                                   \
  PW64_ROW(U, "4", "5", "6", "7", "%[x0],%[l],1", "29")                                            \
  PW64_ROW(U, "8", "9", "10", "11", "%[x0],%[l],2", "30")                                          \
  PW64_ROW(U, "12", "13", "14", "15", "%[x3]", "31")                                               \
  PW64_ROW(U, "16", "17", "18", "19", "%[x3],%[l],1", "28")                                        \
  PW64_ROW(U, "20", "21", "22", "23", "%[x3],%[l],2", "29")
#define PW64_LOOP(PF0, PF1, PF2, PF3, WNADD)                                                       \
  __asm__ volatile(                                                                                \
      PW122_MOV(PW122_LD)                                                                          \
      "1:\n\t"                                                                                     \
      PW64_STEP(0, PF0) PW64_STEP(1, PF1) PW64_STEP(2, PF2) PW64_STEP(3, PF3)                      \
      "add $16, %[x0]\n\t"                                                                         \
      "add $16, %[x3]\n\t"                                                                         \
      "add $1024, %[w]\n\t"                                                                        \
      WNADD                                                                                        \
      "dec %[n]\n\t"                                                                               \
      "jnz 1b\n\t"                                                                                 \
      PW122_MOV(PW122_ST)                                                                          \
      : [x0] "+r"(x0), [x3] "+r"(x3), [w] "+r"(wp), [n] "+r"(nb), [wn] "+r"(wq)                    \
      : [l] "r"(lb), [a] "r"(buf)                                                                  \
      : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",   \
        "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20",  \
        "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30",  \
        "xmm31", "cc", "memory")
// clang-format on

INL T512 int64_t pw64_asm(__m512 acc[12][4], int64_t K, const float *x, int64_t ldx, const float *w,
                          const float *wn) {
  int64_t nb = K / 4;
  if (nb <= 0) return 0;
  const float *x0 = x, *x3 = x + 3 * ldx, *wp = w, *wq = wn;
  int64_t lb = ldx * 4;
  float buf[24 * 16];
#pragma GCC unroll 24
  for (int i = 0; i < 24; i++)
    _mm512_storeu_ps(buf + 16 * i, acc[i / 4][i % 4]);
  if (wn)
    PW64_LOOP("prefetcht1 0(%[wn])\n\t", "prefetcht1 64(%[wn])\n\t", "prefetcht1 128(%[wn])\n\t",
              "prefetcht1 192(%[wn])\n\t", "add $256, %[wn]\n\t");
  else
    PW64_LOOP("", "", "", "", "");
#pragma GCC unroll 24
  for (int i = 0; i < 24; i++)
    acc[i / 4][i % 4] = _mm512_loadu_ps(buf + 16 * i);
  return 4 * (K / 4);
}

/* The 8 x 3 and 7 x 3 tiles' k loops (rows 48 floats apart, no mask), as
 * pw64_asm: x rows 0-2 from x0, 3-5 from x3, 6-7 from x6; acc[i][j] in
 * zmm 3i + j, the weights in zmm24-26, the broadcasts in zmm27-31 (7 x 3:
 * the 7 x 7 maps' 1x1s at batch 1, ResNet-50's last stage). */
// clang-format off
#define PW3_ROW(U, A, B, C, XB, S)                                                                 \
  "vbroadcastss " #U "*4(" XB "), %%zmm" S "\n\t"                                                  \
  "vfmadd231ps %%zmm24, %%zmm" S ", %%zmm" A "\n\t"                                                \
  "vfmadd231ps %%zmm25, %%zmm" S ", %%zmm" B "\n\t"                                                \
  "vfmadd231ps %%zmm26, %%zmm" S ", %%zmm" C "\n\t"
#define PW3_STEP(U, PF, ROW7)                                                                      \
  "vmovups " #U "*192(%[w]), %%zmm24\n\t"                                                          \
  "vmovups " #U "*192+64(%[w]), %%zmm25\n\t"                                                       \
  "vmovups " #U "*192+128(%[w]), %%zmm26\n\t"                                                      \
  "prefetcht0 " #U "*192+1536(%[w])\n\t"                                                           \
  "prefetcht0 " #U "*192+1600(%[w])\n\t"                                                           \
  "prefetcht0 " #U "*192+1664(%[w])\n\t"                                                           \
  PF                                                                                               \
  PW3_ROW(U, "0", "1", "2", "%[x0]", "27")                                                         \
  PW3_ROW(U, "3", "4", "5", "%[x0],%[l],1", "28")                                                  \
  PW3_ROW(U, "6", "7", "8", "%[x0],%[l],2", "29")                                                  \
  PW3_ROW(U, "9", "10", "11", "%[x3]", "30")                                                       \
  PW3_ROW(U, "12", "13", "14", "%[x3],%[l],1", "31")                                               \
  PW3_ROW(U, "15", "16", "17", "%[x3],%[l],2", "27")                                               \
  PW3_ROW(U, "18", "19", "20", "%[x6]", "28")                                                      \
  ROW7
#define PW3_ROW7(U) PW3_ROW(U, "21", "22", "23", "%[x6],%[l],1", "29")
#define PW3_MOV21(OP)                                                                              \
  OP("0", "0") OP("1", "64") OP("2", "128") OP("3", "192") OP("4", "256") OP("5", "320")           \
  OP("6", "384") OP("7", "448") OP("8", "512") OP("9", "576") OP("10", "640") OP("11", "704")      \
  OP("12", "768") OP("13", "832") OP("14", "896") OP("15", "960") OP("16", "1024")                 \
  OP("17", "1088") OP("18", "1152") OP("19", "1216") OP("20", "1280")
#define PW3_LOOP(MOV, PF0, PF1, PF2, PF3, WNADD, R0, R1, R2, R3)                                   \
  __asm__ volatile(                                                                                \
      MOV(PW122_LD)                                                                                \
      "1:\n\t"                                                                                     \
      PW3_STEP(0, PF0, R0) PW3_STEP(1, PF1, R1) PW3_STEP(2, PF2, R2) PW3_STEP(3, PF3, R3)          \
      "add $16, %[x0]\n\t"                                                                         \
      "add $16, %[x3]\n\t"                                                                         \
      "add $16, %[x6]\n\t"                                                                         \
      "add $768, %[w]\n\t"                                                                         \
      WNADD                                                                                        \
      "dec %[n]\n\t"                                                                               \
      "jnz 1b\n\t"                                                                                 \
      MOV(PW122_ST)                                                                                \
      : [x0] "+r"(x0), [x3] "+r"(x3), [x6] "+r"(x6), [w] "+r"(wp), [n] "+r"(nb), [wn] "+r"(wq)   \
      : [l] "r"(lb), [a] "r"(buf)                                                                  \
      : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",   \
        "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20",  \
        "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30",  \
        "xmm31", "cc", "memory")
#define PW3_PF "prefetcht1 0(%[wn])\n\t", "prefetcht1 64(%[wn])\n\t", "prefetcht1 128(%[wn])\n\t",  \
               "prefetcht1 192(%[wn])\n\t", "add $256, %[wn]\n\t"
#define PW3_LOOPX(...) PW3_LOOP(__VA_ARGS__) /* PW3_PF's five arguments */
// clang-format on

INL T512 int64_t pw3_asm(const int mr, __m512 acc[12][4], int64_t K, const float *x, int64_t ldx,
                         const float *w, const float *wn) {
  int64_t nb = K / 4;
  if (nb <= 0) return 0;
  const float *x0 = x, *x3 = x + 3 * ldx, *x6 = x + 6 * ldx, *wp = w, *wq = wn;
  int64_t lb = ldx * 4;
  float buf[24 * 16];
#pragma GCC unroll 24
  for (int i = 0; i < 3 * mr; i++)
    _mm512_storeu_ps(buf + 16 * i, acc[i / 3][i % 3]);
  if (mr == 8 && wn)
    PW3_LOOPX(PW122_MOV, PW3_PF, PW3_ROW7(0), PW3_ROW7(1), PW3_ROW7(2), PW3_ROW7(3));
  else if (mr == 8)
    PW3_LOOPX(PW122_MOV, "", "", "", "", "", PW3_ROW7(0), PW3_ROW7(1), PW3_ROW7(2), PW3_ROW7(3));
  else if (wn)
    PW3_LOOPX(PW3_MOV21, PW3_PF, "", "", "", "");
  else
    PW3_LOOPX(PW3_MOV21, "", "", "", "", "", "", "", "", "");
#pragma GCC unroll 24
  for (int i = 0; i < 3 * mr; i++)
    acc[i / 3][i % 3] = _mm512_loadu_ps(buf + 16 * i);
  return 4 * (K / 4);
}

/* y[i][0..16nv) = clamp(b + sum_k x[i][k] w[k][..] + z[i][..]) for mr pixels;
 * the last vector masked by lm. */
INL T512 void pw_tile(const int mr, const int nv, const bool fast, int64_t K, const float *x,
                      int64_t ldx, const float *w, int64_t ldw, __mmask16 lm, const float *b,
                      const float *z, float *y, int64_t ldy, __m512 lo, __m512 hi,
                      const float *wn) {
  __m512 acc[12][4];
  __mmask16 m[4];
#pragma GCC unroll 4
  for (int j = 0; j < 4; j++)
    m[j] = j == nv - 1 ? lm : (__mmask16)0xFFFF;
#pragma GCC unroll 4
  for (int j = 0; j < 4; j++) {
    if (j >= nv) break;
    __m512 bj = b ? _mm512_maskz_loadu_ps(m[j], b + 16 * j) : _mm512_setzero_ps();
#pragma GCC unroll 12
    for (int i = 0; i < 12; i++)
      if (i < mr) acc[i][j] = bj;
  }
  int64_t k0 = 0;
  if (fast && mr == 12 && nv == 2) k0 = pw122_asm(acc, K, x, ldx, w, wn);
  if (fast && mr == 6 && nv == 4) k0 = pw64_asm(acc, K, x, ldx, w, wn);
  if (fast && (mr == 8 || mr == 7) && nv == 3) k0 = pw3_asm(mr, acc, K, x, ldx, w, wn);
  for (int64_t k = k0; k < K; k++) {
    const float *wk = w + k * ldw;
    __m512 wv[4];
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++)
      if (j < nv) _mm_prefetch((const char *)(wk + PW_PREFETCH * ldw + 16 * j), _MM_HINT_T0);
    if (wn) _mm_prefetch((const char *)(wn + 16 * k), _MM_HINT_T1); /* nat_pw_next */
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++)
      if (j < nv)
        wv[j] =
            j < nv - 1 ? _mm512_loadu_ps(wk + 16 * j) : _mm512_maskz_loadu_ps(m[j], wk + 16 * j);
#pragma GCC unroll 12
    for (int i = 0; i < 12; i++) {
      if (i >= mr) break;
      __m512 xb = _mm512_set1_ps(x[i * ldx + k]);
#pragma GCC unroll 4
      for (int j = 0; j < 4; j++)
        if (j < nv) acc[i][j] = _mm512_fmadd_ps(xb, wv[j], acc[i][j]);
    }
  }
#pragma GCC unroll 12
  for (int i = 0; i < 12; i++) {
    if (i >= mr) break;
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
      if (j >= nv) break;
      __m512 v = acc[i][j];
      if (z) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m[j], z + i * ldy + 16 * j));
      v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
      _mm512_mask_storeu_ps(y + i * ldy + 16 * j, m[j], v);
    }
  }
}

#define PW_ARGS                                                                                    \
  int64_t K, const float *x, int64_t ldx, const float *w, int64_t ldw, __mmask16 lm,               \
      const float *b, const float *z, float *y, int64_t ldy, __m512 lo, __m512 hi, const float *wn
#define PW_PASS K, x, ldx, w, ldw, lm, b, z, y, ldy, lo, hi, wn
#define PW_CASE(R, NV)                                                                             \
  case R:                                                                                          \
    if ((((R) == 12 && (NV) == 2 && ldw == 32) || ((R) == 6 && (NV) == 4 && ldw == 64) ||          \
         (((R) == 8 || (R) == 7) && (NV) == 3 && ldw == 48)) &&                                    \
        lm == 0xFFFF) /* pw122_asm, pw64_asm, pw3_asm */                                           \
      pw_tile(R, NV, true, PW_PASS);                                                               \
    else                                                                                           \
      pw_tile(R, NV, false, PW_PASS);                                                              \
    break;

/* One function per vector count, a case per row count: each tile fully
 * unrolled with its accumulators in registers. */
#define PW_NV(NV)                                                                                  \
  static T512 void pw_nv##NV(int mr, PW_ARGS) {                                                    \
    switch (mr) {                                                                                  \
      PW_CASE(1, NV)                                                                               \
      PW_CASE(2, NV)                                                                               \
      PW_CASE(3, NV)                                                                               \
      PW_CASE(4, NV)                                                                               \
      PW_CASE(5, NV)                                                                               \
      PW_CASE(6, NV)                                                                               \
      PW_CASE(7, NV)                                                                               \
      PW_CASE(8, NV)                                                                               \
      PW_CASE(9, NV)                                                                               \
      PW_CASE(10, NV)                                                                              \
      PW_CASE(11, NV)                                                                              \
      PW_CASE(12, NV)                                                                              \
    default: break;                                                                                \
    }                                                                                              \
  }
PW_NV(1)
PW_NV(2)
PW_NV(3)
PW_NV(4)

/* A tile of 16 + 8 channels (MobileNet's 24-channel projections): the
 * last 8 in 256-bit registers, whose multiply-adds issue two per cycle
 * where a 512-bit one takes both halves of the FMA units. */
INL T512 void pw_tile24(const int mr, PW_ARGS) {
  __m512 a[12];
  __m256 h[12];
  __m512 b0 = b ? _mm512_loadu_ps(b) : _mm512_setzero_ps();
  __m256 b1 = b ? _mm256_loadu_ps(b + 16) : _mm256_setzero_ps();
#pragma GCC unroll 12
  for (int i = 0; i < mr; i++)
    a[i] = b0, h[i] = b1;
  for (int64_t k = 0; k < K; k++) {
    const float *wk = w + k * ldw;
    _mm_prefetch((const char *)(wk + PW_PREFETCH * ldw), _MM_HINT_T0);
    if (wn) _mm_prefetch((const char *)(wn + 16 * k), _MM_HINT_T1);
    __m512 w0 = _mm512_loadu_ps(wk);
    __m256 w1 = _mm256_loadu_ps(wk + 16);
#pragma GCC unroll 12
    for (int i = 0; i < mr; i++) {
      __m512 xb = _mm512_set1_ps(x[i * ldx + k]);
      a[i] = _mm512_fmadd_ps(xb, w0, a[i]);
      h[i] = _mm256_fmadd_ps(_mm512_castps512_ps256(xb), w1, h[i]);
    }
  }
  __m256 lo8 = _mm512_castps512_ps256(lo), hi8 = _mm512_castps512_ps256(hi);
#pragma GCC unroll 12
  for (int i = 0; i < mr; i++) {
    __m512 v = a[i];
    __m256 u = h[i];
    if (z) {
      v = _mm512_add_ps(v, _mm512_loadu_ps(z + i * ldy));
      u = _mm256_add_ps(u, _mm256_loadu_ps(z + i * ldy + 16));
    }
    _mm512_storeu_ps(y + i * ldy, _mm512_min_ps(_mm512_max_ps(v, lo), hi));
    _mm256_storeu_ps(y + i * ldy + 16, _mm256_min_ps(_mm256_max_ps(u, lo8), hi8));
  }
}

static T512 void pw_24(int mr, PW_ARGS) {
  switch (mr) {
  case 1: pw_tile24(1, PW_PASS); break;
  case 2: pw_tile24(2, PW_PASS); break;
  case 3: pw_tile24(3, PW_PASS); break;
  case 4: pw_tile24(4, PW_PASS); break;
  case 5: pw_tile24(5, PW_PASS); break;
  case 6: pw_tile24(6, PW_PASS); break;
  case 7: pw_tile24(7, PW_PASS); break;
  case 8: pw_tile24(8, PW_PASS); break;
  case 9: pw_tile24(9, PW_PASS); break;
  case 10: pw_tile24(10, PW_PASS); break;
  case 11: pw_tile24(11, PW_PASS); break;
  case 12: pw_tile24(12, PW_PASS); break;
  default: break;
  }
}

/* The register tile for P pixels by M channels: mr rows by nv vectors (at
 * most 24 accumulators), the one that leaves the fewest unused slots in
 * the last row and column blocks (MobileNet's 7x7 layers: 49 = 7 x 7). */
void nat_nhwc_pw_tile(int64_t P, int64_t M, int *mr, int *nv) {
  static const int cand[][2] = {{6, 4}, {8, 3}, {7, 3}, {12, 2}};
  int64_t m16 = (M + 15) / 16;
  double best = -1;
  for (size_t i = 0; i < sizeof cand / sizeof cand[0]; i++) {
    int64_t r = cand[i][0], v = cand[i][1];
    double use =
        (double)P / (double)((P + r - 1) / r * r) * ((double)m16 / (double)((m16 + v - 1) / v * v));
    if (use > best + 1e-9) best = use, *mr = (int)r, *nv = (int)v;
  }
}

/* Pixel rows per panel: a panel of X (rows x K) stays in L2 while every
 * channel block's weights stream past it once; within a panel, each block
 * of weights (K x 16 nv) stays in L1/L2 while the panel's tiles use it.
 * 512 KB (was 384): ResNet-50's 7x7 layers of 2048 input channels (8 KB a
 * pixel) were 2 panels of 28 and 21 pixels, their 4 MB of weights streamed
 * twice, now one of 49 (0.95-0.96x CPU time alone at batch 1 and 8). */
#define PW_PANEL_BYTES (512 * 1024)

T512 void nat_nhwc512_pw(const nat_nhwc *c, int64_t p0, int64_t p1, int64_t m0, int64_t m1) {
  __m512 lo = _mm512_set1_ps(c->lo), hi = _mm512_set1_ps(c->hi);
  int64_t K = c->C, M = c->M, bw = 16 * c->pw_nv;
  int rows = c->pw_mr;
  int64_t panel = nat_pw_panel(p1 - p0, K, m1 - m0, rows, PW_PANEL_BYTES);
  for (int64_t q0 = p0; q0 < p1; q0 += panel) {
    int64_t q1 = q0 + panel < p1 ? q0 + panel : p1;
    for (int64_t m = m0; m < m1; m += bw) {
      int64_t mc = m1 - m < bw ? m1 - m : bw;
      int nv = (int)((mc + 15) / 16);
      __mmask16 lm = nat_tail16(mc - 16 * (nv - 1));
      /* packed weights (wpk): blocks of K x bw, block m / bw at m * K */
      const float *w = c->wpk ? c->wpk + m * K : c->w + m, *b = c->b ? c->b + m : NULL;
      int64_t ldw = c->wpk ? bw : M;
      const float *next = c->wpk && m + bw < m1 ? w + bw * K : NULL;
      for (int64_t p = q0, t = 0; p < q1; p += rows, t++) {
        int mr = q1 - p < rows ? (int)(q1 - p) : rows;
        if (p + rows < q1)
          nat_pw_prefetch_out(c->y + (p + rows) * M + m, c->z ? c->z + (p + rows) * M + m : NULL, M,
                              q1 - p - rows < rows ? q1 - p - rows : rows, mc);
        const float *x = c->x + p * K, *z = c->z ? c->z + p * M + m : NULL;
        float *y = c->y + p * M + m;
        const float *wn = nat_pw_next(next, K, bw, t);
        if (mc == 24) {
          pw_24(mr, K, x, K, w, ldw, lm, b, z, y, M, lo, hi, wn);
        } else {
          switch (nv) {
          case 1: pw_nv1(mr, K, x, K, w, ldw, lm, b, z, y, M, lo, hi, wn); break;
          case 2: pw_nv2(mr, K, x, K, w, ldw, lm, b, z, y, M, lo, hi, wn); break;
          case 3: pw_nv3(mr, K, x, K, w, ldw, lm, b, z, y, M, lo, hi, wn); break;
          default: pw_nv4(mr, K, x, K, w, ldw, lm, b, z, y, M, lo, hi, wn); break;
          }
        }
        /* GELU while the tile is in L1 (a pass over a task's block after
         * its product read it back from L2: the 4-layer BERT 1.03x faster
         * in one process against that build, two threads) */
        if (c->gelu) nat_gelu512_tile(y, M, mr, mc);
      }
    }
  }
}

/* ---- stem: small group-1 windows ---------------------------------------- */

/* Pixels [ow, ow + np) of output row (n, oh), all taps inside the row
 * horizontally, channels [m0, m0 + 16 nv) (the last vector masked by lm). */
INL T512 void stem_tile(const int np, const int nv, const nat_nhwc *c, int64_t n, int64_t oh,
                        int64_t ow, int64_t m0, __mmask16 lm, __m512 lo, __m512 hi) {
  int64_t M = c->M;
  __m512 acc[12][4];
  __mmask16 mk[4];
#pragma GCC unroll 4
  for (int j = 0; j < 4; j++) {
    mk[j] = j == nv - 1 ? lm : j < nv ? (__mmask16)0xFFFF : (__mmask16)0;
    __m512 b = c->b ? _mm512_maskz_loadu_ps(mk[j], c->b + m0 + 16 * j) : _mm512_setzero_ps();
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
        __m512 wv[4];
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
          wv[j] = j < nv ? _mm512_maskz_loadu_ps(mk[j], w + ci * M + 16 * j) : _mm512_setzero_ps();
        const float *xc = x + ci * c->xs_c;
#pragma GCC unroll 12
        for (int i = 0; i < np; i++) {
          __m512 xb = _mm512_set1_ps(xc[i * c->sw * c->xs_w]);
#pragma GCC unroll 4
          for (int j = 0; j < 4; j++)
            if (j < nv) acc[i][j] = _mm512_fmadd_ps(xb, wv[j], acc[i][j]);
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
      __m512 v = acc[i][j];
      if (c->z) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mk[j], c->z + p * M + m0 + 16 * j));
      v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
      _mm512_mask_storeu_ps(c->y + p * M + m0 + 16 * j, mk[j], v);
    }
  }
}

/* One output pixel with bounds checks on every tap. */
static T512 void stem_pixel(const nat_nhwc *c, int64_t n, int64_t oh, int64_t ow, __m512 lo,
                            __m512 hi) {
  int64_t M = c->M, p = (n * c->OH + oh - c->y_r0) * c->OW + ow;
  for (int64_t m0 = 0; m0 < M; m0 += 16) {
    __mmask16 mk = nat_tail16(M - m0);
    __m512 acc = c->b ? _mm512_maskz_loadu_ps(mk, c->b + m0) : _mm512_setzero_ps();
    for (int64_t ki = 0; ki < c->kh; ki++) {
      int64_t ih = oh * c->sh - c->pt + ki;
      if (ih < 0 || ih >= c->H) continue;
      for (int64_t kj = 0; kj < c->kw; kj++) {
        int64_t iw = ow * c->sw - c->pl + kj;
        if (iw < 0 || iw >= c->W) continue;
        const float *x = c->x + n * c->xs_n + ih * c->xs_h + iw * c->xs_w;
        const float *w = c->w + (ki * c->kw + kj) * c->C * M + m0;
        for (int64_t ci = 0; ci < c->C; ci++)
          acc = _mm512_fmadd_ps(_mm512_set1_ps(x[ci * c->xs_c]),
                                _mm512_maskz_loadu_ps(mk, w + ci * M), acc);
      }
    }
    if (c->z) acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(mk, c->z + p * M + m0));
    acc = _mm512_min_ps(_mm512_max_ps(acc, lo), hi);
    _mm512_mask_storeu_ps(c->y + p * M + m0, mk, acc);
  }
}

/* A stem tile with the pixel and vector counts as constants, so that its
 * accumulators stay in registers. */
#define STEM_CASE(NP, NV)                                                                          \
  case NV:                                                                                         \
    stem_tile(NP, NV, c, n, oh, ow, m0, lm, lo, hi);                                               \
    break;
#define STEM_NP(NP)                                                                                \
  static T512 void stem_np##NP(const nat_nhwc *c, int nv, int64_t n, int64_t oh, int64_t ow,       \
                               int64_t m0, __mmask16 lm, __m512 lo, __m512 hi) {                   \
    switch (nv) {                                                                                  \
      STEM_CASE(NP, 1)                                                                             \
      STEM_CASE(NP, 2)                                                                             \
      STEM_CASE(NP, 3)                                                                             \
      STEM_CASE(NP, 4)                                                                             \
    default: break;                                                                                \
    }                                                                                              \
  }
STEM_NP(12)
STEM_NP(8)
STEM_NP(6)

/* Pixels per stem tile by vector count: at most 24 accumulators. */
static T512 void stem_tiles(const nat_nhwc *c, int nv, int np, int64_t n, int64_t oh, int64_t ow,
                            int64_t m0, __mmask16 lm, __m512 lo, __m512 hi) {
  if (np == 12)
    stem_np12(c, nv, n, oh, ow, m0, lm, lo, hi);
  else if (np == 8)
    stem_np8(c, nv, n, oh, ow, m0, lm, lo, hi);
  else
    stem_np6(c, nv, n, oh, ow, m0, lm, lo, hi);
}

/* ---- stem on a padded NHWC copy: the window's shape as constants ---------- */

/* Output pixels [ow, ow + NP) of row (n, oh) and channels [m0, m0 + 16 NV)
 * of a KH x KW stride-S conv of C channels on an unpadded NHWC input (the
 * padded copy native_nhwc.c makes of a stem's input): per kernel row one
 * input pointer, every tap's broadcast and weight row at a constant
 * displacement from it, the row's KW C steps unrolled (the implicit GEMM
 * set 8 pixel pointers up per kernel row over runs of 9 or 21 floats). */
INL T512 void stemf_tile(const int KW, const int C, const int S, const int NP, const int NV,
                         const nat_nhwc *c, int64_t n, int64_t oh, int64_t ow, int64_t m0,
                         __m512 lo, __m512 hi) {
  const int64_t M = c->M;
  __m512 acc[12][4];
#pragma GCC unroll 4
  for (int j = 0; j < NV; j++) {
    __m512 b = c->b ? _mm512_loadu_ps(c->b + m0 + 16 * j) : _mm512_setzero_ps();
#pragma GCC unroll 12
    for (int i = 0; i < NP; i++)
      acc[i][j] = b;
  }
  const float *xr = c->x + n * c->xs_n + oh * c->sh * c->xs_h + ow * S * C;
  for (int64_t ki = 0; ki < c->kh; ki++, xr += c->xs_h) {
    const float *wk = c->w + ki * KW * C * M + m0;
#pragma GCC unroll 21
    for (int t = 0; t < KW * C; t++) {
      __m512 wv[4];
#pragma GCC unroll 4
      for (int j = 0; j < NV; j++)
        wv[j] = _mm512_loadu_ps(wk + t * M + 16 * j);
#pragma GCC unroll 12
      for (int i = 0; i < NP; i++) {
        __m512 xb = _mm512_set1_ps(xr[i * S * C + t]);
#pragma GCC unroll 4
        for (int j = 0; j < NV; j++)
          acc[i][j] = _mm512_fmadd_ps(xb, wv[j], acc[i][j]);
      }
    }
  }
  float *y = c->y + ((n * c->OH + oh - c->y_r0) * c->OW + ow) * M + m0;
#pragma GCC unroll 12
  for (int i = 0; i < NP; i++)
#pragma GCC unroll 4
    for (int j = 0; j < NV; j++)
      _mm512_storeu_ps(y + i * M + 16 * j, _mm512_min_ps(_mm512_max_ps(acc[i][j], lo), hi));
}

/* Rows [r0, r1): tiles of NP pixels, the last one moved back to end at
 * the row's end (its first pixels computed twice, the same values). */
INL T512 void stemf_rows(const int KW, const int C, const int S, const int NP, const int NV,
                         const nat_nhwc *c, int64_t r0, int64_t r1) {
  __m512 lo = _mm512_set1_ps(c->lo), hi = _mm512_set1_ps(c->hi);
  for (int64_t r = r0; r < r1; r++) {
    int64_t n = r / c->OH, oh = r % c->OH;
    for (int64_t m0 = 0; m0 < c->M; m0 += 16 * NV)
      for (int64_t ow = 0; ow < c->OW; ow += NP)
        stemf_tile(KW, C, S, NP, NV, c, n, oh, ow + NP <= c->OW ? ow : c->OW - NP, m0, lo, hi);
  }
}

static T512 void stemf_3x3s2c3_n2(const nat_nhwc *c, int64_t r0, int64_t r1) {
  stemf_rows(3, 3, 2, 12, 2, c, r0, r1);
}
static T512 void stemf_7x7s2c3_n4(const nat_nhwc *c, int64_t r0, int64_t r1) {
  stemf_rows(7, 3, 2, 6, 4, c, r0, r1);
}
static T512 void stemf_7x7s2c3_n2(const nat_nhwc *c, int64_t r0, int64_t r1) {
  stemf_rows(7, 3, 2, 12, 2, c, r0, r1);
}
static T512 void stemf_3x3s2c3_n4(const nat_nhwc *c, int64_t r0, int64_t r1) {
  stemf_rows(3, 3, 2, 6, 4, c, r0, r1);
}

typedef void (*stemf_fn)(const nat_nhwc *c, int64_t r0, int64_t r1);

/* The kernel for c, or NULL: 3 channels, a 3x3 or 7x7 stride-2 window on
 * an unpadded NHWC input (the padded copy), M a multiple of 32, rows of M
 * floats, no residual, at least a tile's pixels a row. */
static stemf_fn stemf_of(const nat_nhwc *c) {
  if (c->C != 3 || c->xs_c != 1 || c->xs_w != 3 || c->pt || c->pl || c->kh != c->kw ||
      (c->kh != 3 && c->kh != 7) || c->sh != 2 || c->sw != 2 || (c->dh > 1 || c->dw > 1) ||
      c->M % 32 || c->z || (c->ldy > 0 && c->ldy != c->M))
    return NULL;
  bool n4 = c->M % 64 == 0;
  if (c->OW < (n4 ? 6 : 12)) return NULL;
  if (c->kh == 3) return n4 ? stemf_3x3s2c3_n4 : stemf_3x3s2c3_n2;
  return n4 ? stemf_7x7s2c3_n4 : stemf_7x7s2c3_n2;
}

bool nat_nhwc512_stem_fast(const nat_nhwc *c) { return stemf_of(c) != NULL; }

T512 void nat_nhwc512_stem(const nat_nhwc *c, int64_t r0, int64_t r1) {
  stemf_fn f = stemf_of(c);
  if (f) {
    f(c, r0, r1);
    return;
  }
  __m512 lo = _mm512_set1_ps(c->lo), hi = _mm512_set1_ps(c->hi);
  /* outputs whose taps all lie inside the row: [jl, jh) */
  int64_t S = c->sw, jl = (c->pl + S - 1) / S;
  int64_t jh = c->W - c->kw + c->pl >= 0 ? (c->W - c->kw + c->pl) / S + 1 : 0;
  if (jh > c->OW) jh = c->OW;
  if (jl > jh) jl = jh;
  int64_t width = c->M < 64 ? c->M : 64;
  int np = width <= 32 ? 12 : width <= 48 ? 8 : 6;
  for (int64_t r = r0; r < r1; r++) {
    int64_t n = r / c->OH, oh = r % c->OH;
    for (int64_t ow = 0; ow < c->OW;) {
      if (ow >= jl && ow + np <= jh) {
        for (int64_t m0 = 0; m0 < c->M; m0 += 64) {
          int64_t mc = c->M - m0 < 64 ? c->M - m0 : 64;
          int nv = (int)((mc + 15) / 16);
          stem_tiles(c, nv, np, n, oh, ow, m0, nat_tail16(mc - 16 * (nv - 1)), lo, hi);
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

/* As nat_nhwc256_dw1, sixteen channels a vector, the tail through a mask. */
T512 void nat_nhwc512_dw1(const nat_nhwc *c, int64_t r0, int64_t r1) {
  __m512 lo = _mm512_set1_ps(c->lo), hi = _mm512_set1_ps(c->hi);
  const int64_t C = c->C, P = (r1 - r0) * c->OW;
  const float *x = c->x + r0 * c->OW * C, *z = c->z ? c->z + r0 * c->OW * C : NULL;
  float *y = c->y + (r0 - c->y_r0) * c->OW * C;
  for (int64_t p = 0; p < P; p++, x += C, y += C, z = z ? z + C : NULL)
    for (int64_t k = 0; k < C; k += 16) {
      __mmask16 m = C - k >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (C - k)) - 1);
      __m512 b = c->b ? _mm512_maskz_loadu_ps(m, c->b + k) : _mm512_setzero_ps();
      __m512 v =
          _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x + k), _mm512_maskz_loadu_ps(m, c->w + k), b);
      if (z) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, z + k));
      _mm512_mask_storeu_ps(y + k, m, _mm512_min_ps(_mm512_max_ps(v, lo), hi));
    }
}

#else

bool nat_nhwc512_available(void) { return false; }
void nat_nhwc_pw_tile(int64_t P, int64_t M, int *mr, int *nv) { *mr = 6, *nv = 4; }
void nat_nhwc512_pw(const nat_nhwc *c, int64_t p0, int64_t p1, int64_t m0, int64_t m1) {}
void nat_nhwc512_stem(const nat_nhwc *c, int64_t r0, int64_t r1) {}
bool nat_nhwc512_stem_fast(const nat_nhwc *c) { return false; }

void nat_nhwc512_dw1(const nat_nhwc *c, int64_t r0, int64_t r1) {}
#endif
