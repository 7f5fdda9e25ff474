/* Quantization codecs shared by the backends that store low-precision
 * codes (quant on the CPU, cuda's fp8 weights), beside the dtype traits
 * (dtype.h; dtype_small.c is the general, double-precision conversion of
 * every small type with Cast's rules; these are the fast float ones the
 * kernels and weight packers call, and agree with it: test_dtype.c). */
#ifndef AIT_CORE_CODEC_H
#define AIT_CORE_CODEC_H

#include <math.h>
#include <stdint.h>

/* fp8 e4m3 (OCP "e4m3fn": no infinities, max 448): encode with round to
 * nearest even and saturation (NaN keeps its sign, code 0x7F), decode, and
 * round a float to the nearest e4m3 value. */
#define AIT_E4M3_MAX 448.0f
uint8_t ait_e4m3_encode(float x);
float ait_e4m3_decode(uint8_t b);
float ait_e4m3_round(float x);

/* int8 with a scale and a zero point: the code of v is round-to-nearest-
 * even(v / scale) + zero, clamped to [lo, hi] (symmetric codes use
 * [-127, 127], 7-bit ones [-64, 64], asymmetric [-128, 127]); the value of
 * a code is scale * (code - zero). */
static inline int8_t ait_int8_encode(float v, float scale, int32_t zero, float lo, float hi) {
  float q = nearbyintf(v / scale) + (float)zero;
  return (int8_t)(q < lo ? lo : q > hi ? hi : q);
}
static inline float ait_int8_decode(int8_t code, float scale, int32_t zero) {
  return scale * (float)((int32_t)code - zero);
}

#endif
