/* native_nhwc_stem3.h's stem rows on AVX-512: tiles of 24 pixels x 1
 * vector (MobileNetV3's 16 outputs), 12 x 2, 8 x 3 (SqueezeNet's 96: two
 * passes over the row, not three) or 6 x 4, every broadcast a
 * multiply-add's memory operand. */
#include "backends/native/native_nhwc_stem3.h"

#include <string.h>

#include "backends/native/native_nhwc_post.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define ST __attribute__((target("avx512f,fma")))
#define SV __m512
#define SL 16
#define SLD(p) _mm512_loadu_ps(p)
#define SSTORE(p, v) _mm512_storeu_ps((p), (v))
#define SBC(p) _mm512_set1_ps(*(p))
#define SFMA(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define SMIN(a, b) _mm512_min_ps((a), (b))
#define SMAX(a, b) _mm512_max_ps((a), (b))
#define SSET1(x) _mm512_set1_ps(x)
#define SZERO() _mm512_setzero_ps()
#define SPOST(p, a, b, v) nat_post16((p), (a), (b), (v))
#define SACC 24
#define SNVMAX 4
#define SNAME(x) s512_##x
#include "backends/native/native_nhwc_stem3_tmpl.h"

bool nat_nhwc512_stem3_fits(const nat_nhwc *c) { return s512_stem3_of(c) != NULL; }
void nat_nhwc512_stem3(const nat_nhwc *c, int64_t r0, int64_t r1) { s512_rows(c, r0, r1); }

#else

bool nat_nhwc512_stem3_fits(const nat_nhwc *c) { return false; }
void nat_nhwc512_stem3(const nat_nhwc *c, int64_t r0, int64_t r1) {}

#endif
