/* Element types as data: one row of traits per dtype (as ggml's type_traits).
 * Kernels that are not speed-critical convert through double with
 * ait_load_f64/ait_store_f64 (or int64 with the _i64 pair) so that one loop
 * serves every type; hot paths switch on dtype and use the native type. */
#ifndef AIT_CORE_DTYPE_H
#define AIT_CORE_DTYPE_H

#include <stdbool.h>
#include <stdint.h>

#include "aitune.h"

typedef struct ait_dtype_traits {
  const char *name; /* "float32" */
  unsigned size;    /* bytes per element; 0 for string */
  bool is_float;    /* float16/bfloat16/float32/float64, and the 8- and 4-bit floats */
  bool is_int;      /* signed or unsigned integer (not bool) */
  bool is_signed;   /* signed integer or float */
  double (*to_f64)(const void *p);
  void (*from_f64)(void *p, double v);
  int64_t (*to_i64)(const void *p);
  void (*from_i64)(void *p, int64_t v);
} ait_dtype_traits;

/* Traits of dtype, or NULL when the code is not a known numeric/bool type. */
const ait_dtype_traits *ait_dtype_traits_of(ait_dtype dt);

/* Bit for dtype in a dtype mask (ait_op_def.dtypes). */
#define AIT_DT_BIT(dt) (1u << (unsigned)(dt))
#define AIT_DT_FLOATS                                                                              \
  (AIT_DT_BIT(AIT_FLOAT32) | AIT_DT_BIT(AIT_FLOAT64) | AIT_DT_BIT(AIT_FLOAT16) |                   \
   AIT_DT_BIT(AIT_BFLOAT16))
#define AIT_DT_SINTS                                                                               \
  (AIT_DT_BIT(AIT_INT8) | AIT_DT_BIT(AIT_INT16) | AIT_DT_BIT(AIT_INT32) | AIT_DT_BIT(AIT_INT64))
#define AIT_DT_UINTS                                                                               \
  (AIT_DT_BIT(AIT_UINT8) | AIT_DT_BIT(AIT_UINT16) | AIT_DT_BIT(AIT_UINT32) | AIT_DT_BIT(AIT_UINT64))
#define AIT_DT_INTS (AIT_DT_SINTS | AIT_DT_UINTS)
#define AIT_DT_NUMERIC (AIT_DT_FLOATS | AIT_DT_INTS)
#define AIT_DT_ALL (AIT_DT_NUMERIC | AIT_DT_BIT(AIT_BOOL) | AIT_DT_BIT(AIT_STRING) | AIT_DT_SMALL)

/* Element i of a typed buffer as double / int64, and the reverse. */
static inline double ait_load_f64(const ait_dtype_traits *t, const void *base, int64_t i) {
  return t->to_f64((const char *)base + (size_t)i * t->size);
}
static inline void ait_store_f64(const ait_dtype_traits *t, void *base, int64_t i, double v) {
  t->from_f64((char *)base + (size_t)i * t->size, v);
}
static inline int64_t ait_load_i64(const ait_dtype_traits *t, const void *base, int64_t i) {
  return t->to_i64((const char *)base + (size_t)i * t->size);
}
static inline void ait_store_i64(const ait_dtype_traits *t, void *base, int64_t i, int64_t v) {
  t->from_i64((char *)base + (size_t)i * t->size, v);
}

/* Masks of the small types (src/core/dtype_small.c). */
#define AIT_DT_F8                                                                                  \
  (AIT_DT_BIT(AIT_FLOAT8E4M3FN) | AIT_DT_BIT(AIT_FLOAT8E4M3FNUZ) | AIT_DT_BIT(AIT_FLOAT8E5M2) |    \
   AIT_DT_BIT(AIT_FLOAT8E5M2FNUZ))
#define AIT_DT_SMALL                                                                               \
  (AIT_DT_F8 | AIT_DT_BIT(AIT_FLOAT8E8M0) | AIT_DT_BIT(AIT_FLOAT4E2M1) | AIT_DT_BIT(AIT_UINT4) |   \
   AIT_DT_BIT(AIT_INT4) | AIT_DT_BIT(AIT_UINT2) | AIT_DT_BIT(AIT_INT2))

/* The 8- and 4-bit floats: the value of a code, and the code of a value
 * (round to nearest even; `saturate` as Cast's attribute: out of range goes
 * to the largest finite value, else to infinity or NaN as the type has). */
bool ait_dtype_is_small_float(ait_dtype dt);
double ait_small_to_f64(ait_dtype dt, uint8_t code);
uint8_t ait_small_from_f64(ait_dtype dt, double v, bool saturate);
/* FLOAT8E8M0 (a power of two) with Cast's round_mode. */
typedef enum { AIT_E8M0_UP, AIT_E8M0_DOWN, AIT_E8M0_NEAREST } ait_e8m0_round;
uint8_t ait_e8m0_from_f64(double v, bool saturate, ait_e8m0_round mode);

/* Bits one element takes in an ONNX file (4 or 2 for the packed types),
 * the bytes n elements take there, and the conversion between that packing
 * (first element in the low bits) and one byte per element in memory. */
int ait_dtype_file_bits(ait_dtype dt);
size_t ait_dtype_file_bytes(ait_dtype dt, int64_t n);
void ait_dtype_unpack(ait_dtype dt, const uint8_t *src, int64_t n, uint8_t *dst);
void ait_dtype_pack(ait_dtype dt, const uint8_t *src, int64_t n, uint8_t *dst);

/* IEEE half and bfloat16 conversions (round to nearest even). */
float ait_f16_to_f32(uint16_t h);
uint16_t ait_f32_to_f16(float f);
float ait_bf16_to_f32(uint16_t h);
uint16_t ait_f32_to_bf16(float f);

#endif
