/* native_nhwc_stem3.h's stem rows on AVX2+FMA: tiles of 6 pixels x 2
 * vectors (MobileNetV3's 16 outputs) or 12 x 1: 12 accumulators, the
 * weights and a broadcast of 16 registers. */
#include "backends/native/native_nhwc_stem3.h"

#include <string.h>

#include "backends/native/native_nhwc_post.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define ST __attribute__((target("avx2,fma")))
#define SV __m256
#define SL 8
#define SLD(p) _mm256_loadu_ps(p)
#define SSTORE(p, v) _mm256_storeu_ps((p), (v))
#define SBC(p) _mm256_broadcast_ss(p)
#define SFMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define SMIN(a, b) _mm256_min_ps((a), (b))
#define SMAX(a, b) _mm256_max_ps((a), (b))
#define SSET1(x) _mm256_set1_ps(x)
#define SZERO() _mm256_setzero_ps()
#define SPOST(p, a, b, v) nat_post8((p), (a), (b), (v))
#define SACC 12
#define SNVMAX 2
#define SNAME(x) s256_##x
#include "backends/native/native_nhwc_stem3_tmpl.h"

bool nat_nhwc256_stem3_fits(const nat_nhwc *c) { return s256_stem3_of(c) != NULL; }
void nat_nhwc256_stem3(const nat_nhwc *c, int64_t r0, int64_t r1) { s256_rows(c, r0, r1); }

#else

bool nat_nhwc256_stem3_fits(const nat_nhwc *c) { return false; }
void nat_nhwc256_stem3(const nat_nhwc *c, int64_t r0, int64_t r1) {}

#endif
