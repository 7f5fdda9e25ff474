/* Activations past the clamp of FusedConvNhwc's kernels, at the AVX2 and
 * AVX-512 levels (native_nhwc_post.h: which, and HardSigmoid / HardSwish
 * in one pass in registers, where nat_act_f32 ran them at AVX2 width
 * even at AVX-512: 4% of MobileNetV3-Large's samples): SiLU x / (1 + e^-x) (EfficientNet,
 * MnasNet-like nets put it after every expansion and depthwise conv) in one pass in registers,
 * where the general path (nat_act_f32: native_elt_act.c) makes three over
 * a block and divides. nat_silu8/nat_silu16 (native_avx2_math.h,
 * native_avx512.h): e^-x by a degree-5 polynomial with the argument split
 * by a shifter and no range fix-ups, the reciprocal by rcp (rcp14) and one
 * Newton step; about 3 ulp. Cephes' exp with its range blends made SiLU
 * cost as much as EfficientNet's expansion convs (23% of its samples at
 * AVX2). Far below zero the result is -0, NaN stays NaN. The driver
 * (native_nhwc.c) calls these on each slice while it is in cache. */
#include <stdint.h>

#include "backends/native/native.h"
#include "backends/native/native_nhwc_post.h"

bool nat_post_of(const ait_act *a, nat_post *p) {
  p->kind = NAT_POST_NONE, p->a = p->b = 0.0f, p->mul_x = false;
  if (!a) return false;
  if (a->kind == AIT_ACT_HARD_SWISH) {
    p->kind = NAT_POST_HSIG, p->a = 1.0f / 6.0f, p->b = 0.5f, p->mul_x = true;
  } else if (a->kind == AIT_ACT_HARD_SIGMOID) {
    p->kind = NAT_POST_HSIG, p->a = a->p[0], p->b = a->p[1];
  } else if (a->kind == AIT_ACT_PROGRAM && a->n_steps == 1 && a->steps[0].mul_x &&
             a->steps[0].kind == AIT_ACT_SIGMOID) {
    p->kind = NAT_POST_SILU;
  } else if (a->kind == AIT_ACT_PROGRAM && a->n_steps == 1 &&
             a->steps[0].kind == AIT_ACT_HARD_SIGMOID) {
    p->kind = NAT_POST_HSIG, p->a = a->steps[0].p[0], p->b = a->steps[0].p[1];
    p->mul_x = a->steps[0].mul_x;
  }
  return p->kind != NAT_POST_NONE;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "backends/native/native_avx2_math.h"
#include "backends/native/native_avx512.h"

NAT_T256 void nat_nhwc256_silu(float *x, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256 a = nat_silu8(_mm256_loadu_ps(x + i)), b = nat_silu8(_mm256_loadu_ps(x + i + 8));
    _mm256_storeu_ps(x + i, a);
    _mm256_storeu_ps(x + i + 8, b);
  }
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(x + i, nat_silu8(_mm256_loadu_ps(x + i)));
  if (i < n) {
    __m256i m = nat_tail8(n - i);
    _mm256_maskstore_ps(x + i, m, nat_silu8(_mm256_maskload_ps(x + i, m)));
  }
}

__attribute__((target("avx512f,fma"))) void nat_nhwc512_silu(float *x, int64_t n) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m512 a = nat_silu16(_mm512_loadu_ps(x + i)), b = nat_silu16(_mm512_loadu_ps(x + i + 16));
    _mm512_storeu_ps(x + i, a);
    _mm512_storeu_ps(x + i + 16, b);
  }
  for (; i < n; i += 16) {
    __mmask16 m = nat_tail16(n - i);
    _mm512_mask_storeu_ps(x + i, m, nat_silu16(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

NAT_T256 void nat_nhwc256_post(const nat_post *p, float *x, int64_t n) {
  if (p->kind == NAT_POST_SILU) {
    nat_nhwc256_silu(x, n);
    return;
  }
  const __m256 a = _mm256_set1_ps(p->a), b = _mm256_set1_ps(p->b);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256 u = nat_post8(p, a, b, _mm256_loadu_ps(x + i));
    __m256 v = nat_post8(p, a, b, _mm256_loadu_ps(x + i + 8));
    _mm256_storeu_ps(x + i, u);
    _mm256_storeu_ps(x + i + 8, v);
  }
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(x + i, nat_post8(p, a, b, _mm256_loadu_ps(x + i)));
  if (i < n) {
    __m256i m = nat_tail8(n - i);
    _mm256_maskstore_ps(x + i, m, nat_post8(p, a, b, _mm256_maskload_ps(x + i, m)));
  }
}

__attribute__((target("avx512f,fma"))) void nat_nhwc512_post(const nat_post *p, float *x,
                                                             int64_t n) {
  if (p->kind == NAT_POST_SILU) {
    nat_nhwc512_silu(x, n);
    return;
  }
  const __m512 a = _mm512_set1_ps(p->a), b = _mm512_set1_ps(p->b);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m512 u = nat_post16(p, a, b, _mm512_loadu_ps(x + i));
    __m512 v = nat_post16(p, a, b, _mm512_loadu_ps(x + i + 16));
    _mm512_storeu_ps(x + i, u);
    _mm512_storeu_ps(x + i + 16, v);
  }
  for (; i < n; i += 16) {
    __mmask16 m = nat_tail16(n - i);
    _mm512_mask_storeu_ps(x + i, m, nat_post16(p, a, b, _mm512_maskz_loadu_ps(m, x + i)));
  }
}

#else

void nat_nhwc256_silu(float *x, int64_t n) {}
void nat_nhwc512_silu(float *x, int64_t n) {}
void nat_nhwc256_post(const nat_post *p, float *x, int64_t n) {}
void nat_nhwc512_post(const nat_post *p, float *x, int64_t n) {}

#endif
