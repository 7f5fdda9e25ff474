#include "core/dtype.h"

#include <math.h>
#include <string.h>

float ait_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13); /* inf or nan */
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  } else if (man == 0) {
    bits = sign;
  } else { /* subnormal: value is man * 2^-24 */
    float f = (float)man * 5.9604644775390625e-8f;
    return sign ? -f : f;
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

uint16_t ait_f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0));
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to >= 65520: inf */
  if (ax < 0x38800000u) { /* below the smallest normal half: subnormal or zero */
    float a;
    memcpy(&a, &ax, 4);
    /* a * 2^24 rounded to nearest even gives the subnormal mantissa */
    float m = nearbyintf(a * 16777216.0f);
    return (uint16_t)(sign | (uint32_t)m);
  }
  uint32_t e = ((ax >> 23) - 112) << 10, m = (ax >> 13) & 0x3ff;
  uint32_t h = e | m, rest = ax & 0x1fff;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++;
  return (uint16_t)(sign | h);
}

float ait_bf16_to_f32(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

uint16_t ait_f32_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet nan */
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

/* Float to integer conversions saturate and map NaN to 0, so no input can
 * trigger undefined behaviour. */
#define SAT(T, lo, hi)                                                                             \
  static T sat_##T(double v) {                                                                     \
    if (v != v) return 0;                                                                          \
    if (v <= (double)(lo)) return (T)(lo);                                                         \
    if (v >= (double)(hi)) return (T)(hi);                                                         \
    return (T)v;                                                                                   \
  }
SAT(int8_t, INT8_MIN, INT8_MAX)
SAT(int16_t, INT16_MIN, INT16_MAX)
SAT(int32_t, INT32_MIN, INT32_MAX)
SAT(uint8_t, 0, UINT8_MAX)
SAT(uint16_t, 0, UINT16_MAX)
SAT(uint32_t, 0, UINT32_MAX)
static int64_t sat_int64_t(double v) {
  if (v != v) return 0;
  if (v < -9223372036854775808.0) return INT64_MIN;
  if (v >= 9223372036854775808.0) return INT64_MAX;
  return (int64_t)v;
}
static uint64_t sat_uint64_t(double v) {
  if (v != v || v <= 0) return 0;
  if (v >= 18446744073709551616.0) return UINT64_MAX;
  return (uint64_t)v;
}

#define INT_FUNCS(T)                                                                               \
  static double T##_to_f64(const void *p) {                                                        \
    T v;                                                                                           \
    memcpy(&v, p, sizeof v);                                                                       \
    return (double)v;                                                                              \
  }                                                                                                \
  static void T##_from_f64(void *p, double d) {                                                    \
    T v = sat_##T(d);                                                                              \
    memcpy(p, &v, sizeof v);                                                                       \
  }                                                                                                \
  static int64_t T##_to_i64(const void *p) {                                                       \
    T v;                                                                                           \
    memcpy(&v, p, sizeof v);                                                                       \
    return (int64_t)v;                                                                             \
  }                                                                                                \
  static void T##_from_i64(void *p, int64_t d) {                                                   \
    T v = (T)d; /* wraps, as a C cast between integers does */                                     \
    memcpy(p, &v, sizeof v);                                                                       \
  }
INT_FUNCS(int8_t)
INT_FUNCS(int16_t)
INT_FUNCS(int32_t)
INT_FUNCS(int64_t)
INT_FUNCS(uint8_t)
INT_FUNCS(uint16_t)
INT_FUNCS(uint32_t)
INT_FUNCS(uint64_t)

static double bool_to_f64(const void *p) { return *(const uint8_t *)p ? 1.0 : 0.0; }
static void bool_from_f64(void *p, double d) { *(uint8_t *)p = d != 0.0; }
static int64_t bool_to_i64(const void *p) { return *(const uint8_t *)p ? 1 : 0; }
static void bool_from_i64(void *p, int64_t d) { *(uint8_t *)p = d != 0; }

static double f32_to_f64(const void *p) {
  float v;
  memcpy(&v, p, 4);
  return v;
}
static void f32_from_f64(void *p, double d) {
  float v = (float)d;
  memcpy(p, &v, 4);
}
static double f64_to_f64(const void *p) {
  double v;
  memcpy(&v, p, 8);
  return v;
}
static void f64_from_f64(void *p, double d) { memcpy(p, &d, 8); }
static double f16_to_f64(const void *p) {
  uint16_t v;
  memcpy(&v, p, 2);
  return ait_f16_to_f32(v);
}
static void f16_from_f64(void *p, double d) {
  uint16_t v = ait_f32_to_f16((float)d);
  memcpy(p, &v, 2);
}
static double bf16_to_f64(const void *p) {
  uint16_t v;
  memcpy(&v, p, 2);
  return ait_bf16_to_f32(v);
}
static void bf16_from_f64(void *p, double d) {
  uint16_t v = ait_f32_to_bf16((float)d);
  memcpy(p, &v, 2);
}
#define FLOAT_TO_I64(N)                                                                            \
  static int64_t N##_to_i64(const void *p) { return sat_int64_t(N##_to_f64(p)); }                  \
  static void N##_from_i64(void *p, int64_t d) { N##_from_f64(p, (double)d); }
FLOAT_TO_I64(f32)
FLOAT_TO_I64(f64)
FLOAT_TO_I64(f16)
FLOAT_TO_I64(bf16)

/* The small types hold one byte per element. Floats go through the
 * saturating conversion (Cast's default); the sub-byte integers keep their
 * low bits, from integers (wrapping, as integer casts do) and from floats
 * after truncation toward zero (the spec leaves a float outside the range
 * undefined; wrapping is what ml_dtypes 0.5.4, and so onnx's test data made
 * with it, does; NaN gives 0). */
#define SMALL_FLOAT(N, DT)                                                                         \
  static double N##_to_f64(const void *p) { return ait_small_to_f64(DT, *(const uint8_t *)p); }    \
  static void N##_from_f64(void *p, double d) { *(uint8_t *)p = ait_small_from_f64(DT, d, true); } \
  static int64_t N##_to_i64(const void *p) { return sat_int64_t(N##_to_f64(p)); }                  \
  static void N##_from_i64(void *p, int64_t d) { N##_from_f64(p, (double)d); }
SMALL_FLOAT(e4m3fn, AIT_FLOAT8E4M3FN)
SMALL_FLOAT(e4m3fnuz, AIT_FLOAT8E4M3FNUZ)
SMALL_FLOAT(e5m2, AIT_FLOAT8E5M2)
SMALL_FLOAT(e5m2fnuz, AIT_FLOAT8E5M2FNUZ)
SMALL_FLOAT(e2m1, AIT_FLOAT4E2M1)
SMALL_FLOAT(e8m0, AIT_FLOAT8E8M0)

#define SMALL_INT(N, lo, hi)                                                                       \
  static int64_t N##_to_i64(const void *p) {                                                       \
    return (lo) < 0 ? (int64_t) * (const int8_t *)p : (int64_t) * (const uint8_t *)p;              \
  }                                                                                                \
  static double N##_to_f64(const void *p) { return (double)N##_to_i64(p); }                        \
  static void N##_from_i64(void *p, int64_t d) {                                                   \
    /* The span is a power of two, so wrapping is two's complement truncation: done on the         \
       unsigned bits, since d - lo overflows int64 near INT64_MAX (a fuzzer found it). */          \
    const uint64_t span = (uint64_t)((int64_t)(hi) - (int64_t)(lo) + 1);                           \
    uint64_t u = (uint64_t)d & (span - 1);                                                         \
    int64_t v = (lo) < 0 && u >= span / 2 ? (int64_t)u - (int64_t)span : (int64_t)u;               \
    *(uint8_t *)p = (uint8_t)(int8_t)v;                                                            \
  }                                                                                                \
  static void N##_from_f64(void *p, double d) {                                                    \
    double t = trunc(d);                                                                           \
    N##_from_i64(p, t != t ? 0 : t <= -9.2e18 ? INT64_MIN : t >= 9.2e18 ? INT64_MAX : (int64_t)t); \
  }
SMALL_INT(u4, 0, 15)
SMALL_INT(i4, -8, 7)
SMALL_INT(u2, 0, 3)
SMALL_INT(i2, -2, 1)

#define ROW(code, nm, T, fl, in, sg, pre)                                                          \
  [code] = {nm, sizeof(T), fl, in, sg, pre##_to_f64, pre##_from_f64, pre##_to_i64, pre##_from_i64}

static const ait_dtype_traits traits[] = {
    ROW(AIT_FLOAT32, "float32", float, true, false, true, f32),
    ROW(AIT_UINT8, "uint8", uint8_t, false, true, false, uint8_t),
    ROW(AIT_INT8, "int8", int8_t, false, true, true, int8_t),
    ROW(AIT_UINT16, "uint16", uint16_t, false, true, false, uint16_t),
    ROW(AIT_INT16, "int16", int16_t, false, true, true, int16_t),
    ROW(AIT_INT32, "int32", int32_t, false, true, true, int32_t),
    ROW(AIT_INT64, "int64", int64_t, false, true, true, int64_t),
    [AIT_STRING] = {"string", 0, false, false, false, NULL, NULL, NULL, NULL},
    ROW(AIT_BOOL, "bool", uint8_t, false, false, false, bool),
    ROW(AIT_FLOAT16, "float16", uint16_t, true, false, true, f16),
    ROW(AIT_FLOAT64, "float64", double, true, false, true, f64),
    ROW(AIT_UINT32, "uint32", uint32_t, false, true, false, uint32_t),
    ROW(AIT_UINT64, "uint64", uint64_t, false, true, false, uint64_t),
    [AIT_COMPLEX64] = {"complex64", 8, false, false, true, NULL, NULL, NULL, NULL},
    [AIT_COMPLEX128] = {"complex128", 16, false, false, true, NULL, NULL, NULL, NULL},
    ROW(AIT_BFLOAT16, "bfloat16", uint16_t, true, false, true, bf16),
    ROW(AIT_FLOAT8E4M3FN, "float8e4m3fn", uint8_t, true, false, true, e4m3fn),
    ROW(AIT_FLOAT8E4M3FNUZ, "float8e4m3fnuz", uint8_t, true, false, true, e4m3fnuz),
    ROW(AIT_FLOAT8E5M2, "float8e5m2", uint8_t, true, false, true, e5m2),
    ROW(AIT_FLOAT8E5M2FNUZ, "float8e5m2fnuz", uint8_t, true, false, true, e5m2fnuz),
    ROW(AIT_UINT4, "uint4", uint8_t, false, true, false, u4),
    ROW(AIT_INT4, "int4", uint8_t, false, true, true, i4),
    ROW(AIT_FLOAT4E2M1, "float4e2m1", uint8_t, true, false, true, e2m1),
    ROW(AIT_FLOAT8E8M0, "float8e8m0", uint8_t, true, false, false, e8m0),
    ROW(AIT_UINT2, "uint2", uint8_t, false, true, false, u2),
    ROW(AIT_INT2, "int2", uint8_t, false, true, true, i2),
};

const ait_dtype_traits *ait_dtype_traits_of(ait_dtype dt) {
  if ((int)dt <= 0 || (size_t)dt >= sizeof traits / sizeof traits[0]) return NULL;
  if (traits[dt].to_f64 == NULL) return NULL;
  return &traits[dt];
}

const char *ait_dtype_name(ait_dtype dt) {
  if ((int)dt <= 0 || (size_t)dt >= sizeof traits / sizeof traits[0] || !traits[dt].name)
    return "undefined";
  return traits[dt].name;
}

size_t ait_dtype_size(ait_dtype dt) {
  if ((int)dt <= 0 || (size_t)dt >= sizeof traits / sizeof traits[0]) return 0;
  return traits[dt].size;
}
