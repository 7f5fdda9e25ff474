/* dtype traits: half/bfloat16 conversions and saturating casts. */
#include <math.h>

#include "check.h"
#include "core/dtype.h"

int main(void) {
  /* every finite half survives half -> float -> half */
  int bad = 0;
  for (uint32_t h = 0; h < 0x10000; h++) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue; /* NaN payloads */
    if (ait_f32_to_f16(ait_f16_to_f32((uint16_t)h)) != h) bad++;
  }
  CHECK(bad == 0);
  CHECK(ait_f16_to_f32(0x3c00) == 1.0f);
  CHECK(ait_f16_to_f32(0x0001) == 5.9604644775390625e-8f);
  CHECK(ait_f32_to_f16(65520.0f) == 0x7c00);           /* rounds to infinity */
  CHECK(ait_f32_to_f16(1.0f + 1.0f / 2048) == 0x3c00); /* ties to even */
  CHECK(isnan(ait_f16_to_f32(ait_f32_to_f16(NAN))));
  CHECK(ait_bf16_to_f32(ait_f32_to_bf16(1.0f)) == 1.0f);
  CHECK(ait_f32_to_bf16(1.00390625f) == 0x3f80); /* tie, even stays */
  CHECK(ait_f32_to_bf16(1.01171875f) == 0x3f82); /* tie, odd rounds up */
  CHECK(isnan(ait_bf16_to_f32(ait_f32_to_bf16(NAN))));

  const ait_dtype_traits *i8 = ait_dtype_traits_of(AIT_INT8);
  int8_t v;
  i8->from_f64(&v, 1e9);
  CHECK(v == 127);
  i8->from_f64(&v, NAN);
  CHECK(v == 0);
  const ait_dtype_traits *u64 = ait_dtype_traits_of(AIT_UINT64);
  uint64_t u;
  u64->from_f64(&u, -5.0);
  CHECK(u == 0);
  CHECK(ait_dtype_traits_of(AIT_STRING) == NULL && ait_dtype_traits_of((ait_dtype)99) == NULL);
  CHECK(ait_dtype_traits_of(AIT_BOOL)->size == 1);
  return check_result("test_dtype");
}
