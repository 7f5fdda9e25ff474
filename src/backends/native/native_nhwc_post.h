/* Activations past the clamp that FusedConvNhwc's vector kernels apply in
 * registers: SiLU x / (1 + e^-x) (EfficientNet, MnasNet-like nets) and
 * HardSigmoid max(0, min(1, a x + b)), times x or not (HardSwish: a = 1/6,
 * b = 1/2; MobileNetV3 after most expansions and depthwise convs). The
 * driver (native_nhwc.c) runs nat_nhwc256_post / nat_nhwc512_post on each
 * task's block while it is in cache; the depthwise kernels of any window
 * (native_nhwc_dw256.c, native_nhwc_dw512.c) apply them to each tile
 * before its store, so their output is written once. HardSigmoid as the
 * loops of native_elt_act.c compute it (NaN stays NaN); SiLU by nat_silu8 /
 * nat_silu16. */
#ifndef AIT_NATIVE_NHWC_POST_H
#define AIT_NATIVE_NHWC_POST_H

#include <stdbool.h>
#include <stdint.h>

#include "ops/fused_impl.h"

enum { NAT_POST_NONE = 0, NAT_POST_SILU, NAT_POST_HSIG };

typedef struct nat_post {
  int kind;   /* NAT_POST_* */
  float a, b; /* HardSigmoid's alpha and beta */
  bool mul_x; /* HardSigmoid times x (HardSwish) */
} nat_post;

/* Whether activation a is one the kernels apply in registers (p: how);
 * false (p->kind NAT_POST_NONE) otherwise, and for none or a clamp. */
bool nat_post_of(const ait_act *a, nat_post *p);

/* p on x[0, n) in place, at AVX2+FMA and AVX-512 (only where available). */
void nat_nhwc256_post(const nat_post *p, float *x, int64_t n);
void nat_nhwc512_post(const nat_post *p, float *x, int64_t n);

/* One output row of a depthwise K x K conv (K 3, 5 or 7; stride S 1 or 2;
 * no dilation; pl columns of left padding) on the sliding rows of
 * native_nhwc_dwr_tmpl.h, the middle stage of a FusedInvertedResidual of
 * any window: rows[k] (k < K) is kernel row k's input row ([W][C] floats,
 * NULL where it lies in the padding), weights w [K][K][C] (HWIO), bias b
 * (may be NULL), the clamp [lo, hi] and then post (may be NULL; the
 * activations of nat_post_of), for channels [c0, c1) of C (c0 a multiple
 * of the level's vector; c1 too, or C), into y ([OW][C]). All borrowed. */
void nat_nhwc256_dwr_row(const float *const *rows, int K, int S, int64_t W, int64_t OW, int64_t C,
                         int64_t c0, int64_t c1, int64_t pl, const float *w, const float *b,
                         float lo, float hi, const ait_act *post, float *y);
void nat_nhwc512_dwr_row(const float *const *rows, int K, int S, int64_t W, int64_t OW, int64_t C,
                         int64_t c0, int64_t c1, int64_t pl, const float *w, const float *b,
                         float lo, float hi, const ait_act *post, float *y);
/* Tests: K x K blocks (K > 3) whose expanded and depthwise maps take at
 * most this many bytes run as three stages through scratch (native_nhwc.c
 * ir_by_stages); 0: none, negative: the default. */
void nat_nhwc_set_staged_bytes(int64_t bytes);
/* Tests: whether the layout pass puts squeeze-excite gates into the
 * projection they feed (FusedConvNhwc's fifth input; default on). */
void nat_layout_set_se_scales(bool on);

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "backends/native/native_avx2_math.h"
#include "backends/native/native_avx512.h"

/* HardSigmoid (times x with mul_x) of eight lanes: the gate a x + b
 * clamped to [0, 1]; a NaN x gives NaN. */
NAT_INL256 __m256 nat_hsig8(__m256 x, __m256 a, __m256 b, bool mul_x) {
  __m256 t = _mm256_add_ps(_mm256_mul_ps(x, a), b);
  t = _mm256_min_ps(_mm256_max_ps(t, _mm256_setzero_ps()), _mm256_set1_ps(1.0f));
  if (mul_x) t = _mm256_mul_ps(t, x);
  return _mm256_blendv_ps(x, t, _mm256_cmp_ps(x, x, _CMP_ORD_Q));
}

/* p on eight lanes (p->kind SILU or HSIG; a, b: its splats). */
NAT_INL256 __m256 nat_post8(const nat_post *p, __m256 a, __m256 b, __m256 x) {
  return p->kind == NAT_POST_SILU ? nat_silu8(x) : nat_hsig8(x, a, b, p->mul_x);
}

static inline __attribute__((always_inline, target("avx512f"))) __m512
nat_hsig16(__m512 x, __m512 a, __m512 b, bool mul_x) {
  __m512 t = _mm512_add_ps(_mm512_mul_ps(x, a), b);
  t = _mm512_min_ps(_mm512_max_ps(t, _mm512_setzero_ps()), _mm512_set1_ps(1.0f));
  if (mul_x) t = _mm512_mul_ps(t, x);
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_ORD_Q), x, t);
}

static inline __attribute__((always_inline, target("avx512f"))) __m512
nat_post16(const nat_post *p, __m512 a, __m512 b, __m512 x) {
  return p->kind == NAT_POST_SILU ? nat_silu16(x) : nat_hsig16(x, a, b, p->mul_x);
}
#endif

#endif
