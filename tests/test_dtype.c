/* dtype traits: half/bfloat16 conversions and saturating casts; the 8- and
 * 4-bit floats, sub-byte integers and their packing; a file round trip. */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "core/codec.h"
#include "core/dtype.h"
#include "core/tensor.h"
#include "onnx/onnx_io.h"

/* Every code of a small float reads back to itself (NaNs to some NaN). */
static void small_float_round_trips(void) {
  static const ait_dtype dts[] = {AIT_FLOAT8E4M3FN, AIT_FLOAT8E4M3FNUZ, AIT_FLOAT8E5M2,
                                  AIT_FLOAT8E5M2FNUZ, AIT_FLOAT4E2M1};
  for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
    int bad = 0, n = dts[k] == AIT_FLOAT4E2M1 ? 16 : 256;
    for (int c = 0; c < n; c++) {
      double v = ait_small_to_f64(dts[k], (uint8_t)c);
      uint8_t back = ait_small_from_f64(dts[k], v, false);
      if (isnan(v) ? !isnan(ait_small_to_f64(dts[k], back))
                   : back != c && !(v == 0 && c != 0 && ait_small_to_f64(dts[k], back) == 0))
        bad++;
    }
    CHECK(bad == 0);
  }
  /* the spec's tables (Cast, float8.md, float4.md) */
  CHECK(ait_small_to_f64(AIT_FLOAT8E4M3FN, 0x7e) == 448.0);
  CHECK(ait_small_to_f64(AIT_FLOAT8E4M3FNUZ, 0x7f) == 240.0);
  CHECK(ait_small_to_f64(AIT_FLOAT8E5M2, 0x7b) == 57344.0);
  CHECK(isinf(ait_small_to_f64(AIT_FLOAT8E5M2, 0x7c)));
  CHECK(isnan(ait_small_to_f64(AIT_FLOAT8E4M3FNUZ, 0x80)));
  CHECK(ait_small_from_f64(AIT_FLOAT8E4M3FN, INFINITY, true) == 0x7e);
  CHECK(ait_small_from_f64(AIT_FLOAT8E4M3FN, -INFINITY, false) == 0xff); /* -NaN */
  CHECK(ait_small_from_f64(AIT_FLOAT8E4M3FN, 460.0, false) == 0x7e);     /* rounds to 448 */
  CHECK(ait_small_from_f64(AIT_FLOAT8E4M3FN, 470.0, false) == 0x7f);     /* rounds to 480: NaN */
  CHECK(ait_small_from_f64(AIT_FLOAT8E4M3FN, 1e6, false) == 0x7f);
  CHECK(ait_small_from_f64(AIT_FLOAT8E5M2, 1e6, false) == 0x7c);
  CHECK(ait_small_from_f64(AIT_FLOAT8E5M2, -1e6, true) == 0xfb);
  CHECK(ait_small_from_f64(AIT_FLOAT8E4M3FNUZ, -0.0, true) == 0x00); /* no negative zero */
  CHECK(ait_small_from_f64(AIT_FLOAT8E5M2FNUZ, INFINITY, false) == 0x80);
  CHECK(ait_small_from_f64(AIT_FLOAT8E4M3FN, 1.0 + 1.0 / 16, true) == 0x38); /* tie to even */
  CHECK(ait_small_from_f64(AIT_FLOAT8E4M3FN, 1.0 + 3.0 / 16, true) == 0x3a);
  CHECK(ait_small_from_f64(AIT_FLOAT8E4M3FN, ldexp(1.0, -9), true) ==
        0x01);                                                   /* smallest subnormal */
  CHECK(ait_small_from_f64(AIT_FLOAT4E2M1, 5.0, true) == 0x6);   /* tie 4|6: even mantissa */
  CHECK(ait_small_from_f64(AIT_FLOAT4E2M1, -9.0, false) == 0xf); /* always saturates */
  CHECK(ait_small_from_f64(AIT_FLOAT4E2M1, NAN, true) == 0x7);   /* float4.md: NaN -> 6 */
  CHECK(ait_small_from_f64(AIT_FLOAT4E2M1, 0.25, true) == 0x0);  /* tie 0|0.5 */
  /* E8M0: powers of two, rounded as round_mode says */
  CHECK(ait_small_to_f64(AIT_FLOAT8E8M0, 127) == 1.0 &&
        isnan(ait_small_to_f64(AIT_FLOAT8E8M0, 255)));
  CHECK(ait_e8m0_from_f64(3.0, true, AIT_E8M0_UP) == 129);
  CHECK(ait_e8m0_from_f64(3.0, true, AIT_E8M0_DOWN) == 128);
  CHECK(ait_e8m0_from_f64(3.1, true, AIT_E8M0_NEAREST) == 129);
  CHECK(ait_e8m0_from_f64(2.5, true, AIT_E8M0_NEAREST) == 128);
  CHECK(ait_e8m0_from_f64(4.0, true, AIT_E8M0_UP) == 129);
  CHECK(ait_e8m0_from_f64(1e300, true, AIT_E8M0_UP) == 254 &&
        ait_e8m0_from_f64(1e300, false, AIT_E8M0_UP) == 255);
  CHECK(ait_e8m0_from_f64(0.0, true, AIT_E8M0_UP) == 0 &&
        ait_e8m0_from_f64(NAN, true, AIT_E8M0_UP) == 255);
}

/* int4/uint4/int2/uint2: wrapping from integers and truncated floats;
 * packing low bits first; a .pb file round trip of an odd count. */
static void sub_byte(void) {
  const ait_dtype_traits *i4 = ait_dtype_traits_of(AIT_INT4), *u2 = ait_dtype_traits_of(AIT_UINT2);
  uint8_t b;
  i4->from_i64(&b, 9);
  CHECK((int8_t)b == -7 && i4->to_i64(&b) == -7);
  i4->from_f64(&b, -7.9);
  CHECK(i4->to_i64(&b) == -7);
  i4->from_f64(&b, 8.0); /* out of range: wraps, as ml_dtypes does (the spec: undefined) */
  CHECK(i4->to_i64(&b) == -8);
  i4->from_f64(&b, -9.5);
  CHECK(i4->to_i64(&b) == 7);
  i4->from_f64(&b, NAN);
  CHECK(i4->to_i64(&b) == 0);
  u2->from_i64(&b, 6);
  CHECK(b == 2);
  /* The ends of int64 wrap without signed overflow (UBSan caught d - lo at INT64_MAX). */
  const ait_dtype_traits *i2 = ait_dtype_traits_of(AIT_INT2);
  i2->from_i64(&b, INT64_MAX);
  CHECK(i2->to_i64(&b) == -1);
  i2->from_i64(&b, INT64_MIN);
  CHECK(i2->to_i64(&b) == 0);
  i4->from_f64(&b, 1e30);
  CHECK(i4->to_i64(&b) == -1);
  uint8_t vals[5] = {1, 0xf8 /* -8 */, 7, 0xff /* -1 */, 3}, packed[3], back[5];
  CHECK(ait_dtype_file_bytes(AIT_INT4, 5) == 3 && ait_dtype_file_bytes(AIT_INT2, 5) == 2);
  ait_dtype_pack(AIT_INT4, vals, 5, packed);
  CHECK(packed[0] == 0x81 && packed[1] == 0xf7 && packed[2] == 0x03);
  ait_dtype_unpack(AIT_INT4, packed, 5, back);
  CHECK(!memcmp(vals, back, 5));
  uint8_t two[5] = {1, 2, 3, 0, 1}, p2[2];
  ait_dtype_pack(AIT_UINT2, two, 5, p2);
  CHECK(p2[0] == (1 | 2 << 2 | 3 << 4) && p2[1] == 1);

  int64_t dims[1] = {5};
  ait_tensor *t = ait_tensor_new(AIT_INT4, 1, dims), *r = NULL;
  CHECK(t && ait_tensor_nbytes(t) == 5);
  if (!t) return;
  memcpy(t->data, vals, 5);
  char path[] = "/tmp/ait_test_dtype_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  if (fd >= 0) close(fd);
  CHECK(ait_tensor_file_write(path, t, "x") == AIT_OK);
  CHECK(ait_tensor_file_read(path, &r, NULL) == AIT_OK);
  CHECK(r && r->dtype == AIT_INT4 && r->dims[0] == 5 && !memcmp(r->data, vals, 5));
  unlink(path);
  ait_tensor_free(t);
  ait_tensor_free(r);
}

/* ait_shape_broadcast may write over its first operand: a lower-rank a
 * aliased with out came out [2,1,2,8] for [1,8] x [2,1,1,8] (native's
 * elementwise ops accumulate the shape in place). */
static void broadcast_in_place(void) {
  int64_t a[AIT_MAX_RANK] = {1, 8}, b[4] = {2, 1, 1, 8};
  int r = 2;
  CHECK(ait_shape_broadcast(r, a, 4, b, &r, a) == AIT_OK);
  CHECK(r == 4 && a[0] == 2 && a[1] == 1 && a[2] == 1 && a[3] == 8);
}

/* core/codec.h's fast float codecs agree with the general conversion of
 * dtype_small.c (Cast with saturate=1): every e4m3 code decodes to the same
 * value, and floats on, between and beyond the codes (ties included)
 * encode to the same code; int8 rounds ties to even and clamps. */
static void codecs(void) {
  int bad = 0;
  for (int b = 0; b < 256; b++) {
    float f = ait_e4m3_decode((uint8_t)b);
    double d = ait_small_to_f64(AIT_FLOAT8E4M3FN, (uint8_t)b);
    if (isnan(d) ? !isnan(f) : (double)f != d) bad++;
  }
  CHECK(bad == 0);
  bad = 0;
  srand(7);
  for (int i = 0; i < 200000; i++) {
    float x;
    if (i < 512) {          /* each code and the midpoint above it */
      int b = i / 2 % 0x7f; /* 0x7f is NaN */
      float lo = ait_e4m3_decode((uint8_t)b),
            hi = b < 0x7e ? ait_e4m3_decode((uint8_t)(b + 1)) : 500;
      x = i % 2 ? (lo + hi) / 2 : lo;
    } else {
      x = ldexpf((float)rand() / (float)RAND_MAX, rand() % 24 - 14);
    }
    x = rand() % 2 ? -x : x;
    if (ait_e4m3_encode(x) != ait_small_from_f64(AIT_FLOAT8E4M3FN, x, true)) {
      if (!bad++)
        fprintf(stderr, "e4m3 of %g: %#x, Cast gives %#x\n", x, ait_e4m3_encode(x),
                ait_small_from_f64(AIT_FLOAT8E4M3FN, x, true));
    }
    if (ait_e4m3_round(x) != ait_e4m3_decode(ait_e4m3_encode(x))) bad++;
  }
  CHECK(bad == 0);
  CHECK(ait_e4m3_encode(1e9f) == 0x7e && ait_e4m3_encode(-1e9f) == 0xfe);
  CHECK((ait_e4m3_encode(NAN) & 0x7f) == 0x7f);
  CHECK(ait_int8_encode(2.5f, 1.0f, 0, -127, 127) == 2 &&
        ait_int8_encode(3.5f, 1.0f, 0, -127, 127) == 4);
  CHECK(ait_int8_encode(-1e9f, 0.5f, 0, -127, 127) == -127 &&
        ait_int8_encode(1e9f, 1, 3, -128, 127) == 127);
  CHECK(ait_int8_encode(0.9f, 0.25f, -10, -128, 127) == -6 &&
        ait_int8_decode(-6, 0.25f, -10) == 1.0f);
  CHECK(ait_int8_encode(200.0f, 1.0f, 0, -64, 64) == 64);
}

int main(void) {
  broadcast_in_place();
  small_float_round_trips();
  sub_byte();
  codecs();
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
