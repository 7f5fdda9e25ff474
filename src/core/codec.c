/* The fp8 e4m3 codec (see codec.h). */
#include "core/codec.h"

#include <string.h>

uint8_t ait_e4m3_encode(float x) {
  uint32_t bits;
  memcpy(&bits, &x, sizeof bits);
  uint8_t sign = (uint8_t)((bits >> 24) & 0x80);
  float a = fabsf(x);
  if (isnan(x)) return sign | 0x7F;
  if (a > AIT_E4M3_MAX) return sign | 0x7E; /* saturate: e4m3fn has no infinity */
  if (a < 0.015625f) /* below 2^-6: subnormal steps of 2^-9 (8 steps = the smallest normal) */
    return sign | (uint8_t)nearbyintf(a * 512.0f);
  uint32_t ab;
  memcpy(&ab, &a, sizeof ab);
  ab += 0x7FFFFu + ((ab >> 20) & 1u); /* round to 3 mantissa bits, ties to even */
  int e = (int)(ab >> 23) - 127 + 7;
  unsigned code = ((unsigned)e << 3) | ((ab >> 20) & 7u);
  return sign | (uint8_t)(code > 0x7E ? 0x7E : code);
}

float ait_e4m3_decode(uint8_t b) {
  if ((b & 0x7F) == 0x7F) return NAN;
  int e = (b >> 3) & 15, m = b & 7;
  float v = e ? ldexpf(1.0f + (float)m / 8.0f, e - 7) : ldexpf((float)m / 8.0f, -6);
  return (b & 0x80) ? -v : v;
}

float ait_e4m3_round(float x) { return ait_e4m3_decode(ait_e4m3_encode(x)); }
