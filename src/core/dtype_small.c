/* The small element types: 8-bit floats (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ,
 * E8M0), the 4-bit float E2M1 and the 4- and 2-bit integers; their values
 * as doubles and back, and the packing ONNX files use for the sub-byte ones.
 *
 * The rules are the ONNX spec's (Cast, docs/technical/float8.md and
 * float4.md): round to nearest even; with `saturate` values past the largest
 * finite one (infinities included) become it, without they become infinity
 * (E5M2) or NaN (the others); the FNUZ types have no negative zero; E2M1 has
 * neither NaN nor infinity and always saturates, NaN included (to +6). */
#include <math.h>
#include <string.h>

#include "core/dtype.h"

typedef enum { NAN_IEEE, NAN_FN, NAN_FNUZ, NAN_NONE } nan_style;

typedef struct small_fmt {
  ait_dtype dt;
  int ebits, mbits, bias;
  nan_style nan;
  double max; /* largest finite value */
} small_fmt;

static const small_fmt fmts[] = {
    {AIT_FLOAT8E4M3FN, 4, 3, 7, NAN_FN, 448.0},
    {AIT_FLOAT8E4M3FNUZ, 4, 3, 8, NAN_FNUZ, 240.0},
    {AIT_FLOAT8E5M2, 5, 2, 15, NAN_IEEE, 57344.0},
    {AIT_FLOAT8E5M2FNUZ, 5, 2, 16, NAN_FNUZ, 57344.0},
    {AIT_FLOAT4E2M1, 2, 1, 1, NAN_NONE, 6.0},
};

static const small_fmt *fmt_of(ait_dtype dt) {
  for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++)
    if (fmts[i].dt == dt) return &fmts[i];
  return NULL;
}

bool ait_dtype_is_small_float(ait_dtype dt) { return fmt_of(dt) != NULL || dt == AIT_FLOAT8E8M0; }

double ait_small_to_f64(ait_dtype dt, uint8_t code) {
  if (dt == AIT_FLOAT8E8M0) return code == 0xff ? NAN : ldexp(1.0, (int)code - 127);
  const small_fmt *f = fmt_of(dt);
  if (!f) return NAN;
  int width = 1 + f->ebits + f->mbits;
  unsigned sign = (code >> (width - 1)) & 1u, emask = (1u << f->ebits) - 1u;
  unsigned mmask = (1u << f->mbits) - 1u, mag = code & ((1u << (width - 1)) - 1u);
  unsigned e = (mag >> f->mbits) & emask, m = mag & mmask;
  if (f->nan == NAN_FNUZ && sign && mag == 0) return NAN; /* 0x80: the only NaN */
  if (f->nan == NAN_FN && e == emask && m == mmask) return NAN;
  if (f->nan == NAN_IEEE && e == emask) return m ? NAN : sign ? -INFINITY : INFINITY;
  double v = e == 0 ? ldexp((double)m, 1 - f->bias - f->mbits)
                    : ldexp(1.0 + (double)m / (double)(1u << f->mbits), (int)e - f->bias);
  return sign ? -v : v;
}

/* Magnitude code (no sign bit) of |a| rounded to nearest even, and the value
 * it stands for in *r; a is finite and >= 0. */
static unsigned round_mag(const small_fmt *f, double a, double *r) {
  int emin = 1 - f->bias;
  if (a <
      ldexp(1.0, emin)) { /* subnormal: units of 2^(emin - mbits); 2^mbits is the first normal */
    double q = nearbyint(ldexp(a, f->mbits - emin));
    *r = ldexp(q, emin - f->mbits);
    return (unsigned)q;
  }
  int k;
  frexp(a, &k);
  int e = k - 1; /* a = m * 2^e, m in [1, 2) */
  double q = nearbyint(ldexp(a, -e) * (double)(1u << f->mbits)) - (double)(1u << f->mbits);
  if (q >= (double)(1u << f->mbits)) q = 0, e++;
  *r = ldexp(1.0 + q / (double)(1u << f->mbits), e);
  if (e + f->bias > (1 << f->ebits) - 1) return 0xffu; /* past every exponent: caller sees *r */
  return ((unsigned)(e + f->bias) << f->mbits) | (unsigned)q;
}

uint8_t ait_small_from_f64(ait_dtype dt, double v, bool saturate) {
  if (dt == AIT_FLOAT8E8M0) return ait_e8m0_from_f64(v, saturate, AIT_E8M0_UP);
  const small_fmt *f = fmt_of(dt);
  if (!f) return 0;
  int width = 1 + f->ebits + f->mbits;
  unsigned sign = signbit(v) ? 1u << (width - 1) : 0u;
  unsigned nan_code = f->nan == NAN_FNUZ ? 0x80u : f->nan == NAN_FN ? sign | 0x7fu : sign | 0x7eu;
  if (isnan(v)) return (uint8_t)(f->nan == NAN_NONE ? 0x7u : nan_code);
  double tmp;
  unsigned max_code = round_mag(f, f->max, &tmp);
  bool sat = saturate || f->nan == NAN_NONE;
  double a = fabs(v), r;
  unsigned mag = isinf(a) ? 0xffu : round_mag(f, a, &r);
  if (isinf(a) || r > f->max) {
    if (sat) return (uint8_t)(sign | max_code);
    return (uint8_t)(f->nan == NAN_IEEE ? sign | 0x7cu : nan_code);
  }
  if (mag == 0 && f->nan == NAN_FNUZ) return 0; /* no negative zero */
  return (uint8_t)(sign | mag);
}

uint8_t ait_e8m0_from_f64(double v, bool saturate, ait_e8m0_round mode) {
  if (isnan(v)) return 0xff;
  if (isinf(v)) return saturate && v > 0 ? 0xfe : 0xff;
  /* negative values are undefined in the spec; their magnitude is used */
  double a = fabs(v);
  if (a == 0) return saturate ? 0x00 : 0xff;
  int k;
  double m = frexp(a, &k); /* a = 2m * 2^(k-1), 2m in [1, 2) */
  int e = k - 1;
  bool exact = m == 0.5;
  if (!exact && (mode == AIT_E8M0_UP || (mode == AIT_E8M0_NEAREST && 2 * m >= 1.5))) e++;
  int code = e + 127;
  if (code > 254) return saturate ? 0xfe : 0xff;
  if (code < 0) return saturate ? 0x00 : 0xff;
  return (uint8_t)code;
}

/* ---- packing of the sub-byte types ------------------------------------ */

int ait_dtype_file_bits(ait_dtype dt) {
  switch (dt) {
  case AIT_UINT4:
  case AIT_INT4:
  case AIT_FLOAT4E2M1: return 4;
  case AIT_UINT2:
  case AIT_INT2: return 2;
  default: return (int)(8 * ait_dtype_size(dt));
  }
}

size_t ait_dtype_file_bytes(ait_dtype dt, int64_t n) {
  int bits = ait_dtype_file_bits(dt);
  return bits >= 8 ? (size_t)n * (size_t)(bits / 8) : ((size_t)n * (size_t)bits + 7) / 8;
}

void ait_dtype_unpack(ait_dtype dt, const uint8_t *src, int64_t n, uint8_t *dst) {
  int bits = ait_dtype_file_bits(dt), per = 8 / bits;
  unsigned mask = (1u << bits) - 1u, top = 1u << (bits - 1);
  bool sign_extend = dt == AIT_INT4 || dt == AIT_INT2;
  for (int64_t i = 0; i < n; i++) {
    unsigned v = (src[i / per] >> (bits * (int)(i % per))) & mask;
    if (sign_extend && (v & top)) v |= ~mask; /* the whole byte holds the int8 value */
    dst[i] = (uint8_t)v;
  }
}

void ait_dtype_pack(ait_dtype dt, const uint8_t *src, int64_t n, uint8_t *dst) {
  int bits = ait_dtype_file_bits(dt), per = 8 / bits;
  unsigned mask = (1u << bits) - 1u;
  memset(dst, 0, ait_dtype_file_bytes(dt, n)); /* the last byte's spare bits are zero */
  for (int64_t i = 0; i < n; i++)
    dst[i / per] |= (uint8_t)((src[i] & mask) << (bits * (int)(i % per)));
}
