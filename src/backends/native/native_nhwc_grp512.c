/* FusedConvNhwc's grouped window convolutions of few channels a group on
 * AVX-512: native_nhwc_grp256.c's tiles (see there) on vectors of 16
 * channels and 32 registers: 6 pixels x 4 merged groups of one vector,
 * 6 x 2 of two or 6 x 1 of four (24 accumulators). Regnet's 16 channels a group and
 * ResNeXt's 16 and 32 take these; groups under 16 outputs the AVX2 tiles. */
#include <stdbool.h>
#include <stdint.h>

#include "backends/native/native.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define GT __attribute__((target("avx512f,fma")))
#define GV __m512
#define GL 16
#define GLOAD(p) _mm512_loadu_ps(p)
#define GSTORE(p, v) _mm512_storeu_ps((p), (v))
#define GSET1(x) _mm512_set1_ps(x)
#define GFMA(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define GMIN(a, b) _mm512_min_ps((a), (b))
#define GMAX(a, b) _mm512_max_ps((a), (b))
#define GADD(a, b) _mm512_add_ps((a), (b))
#define GPERM(x, imm) _mm512_permute_ps((x), (imm))
#define GZERO() _mm512_setzero_ps()

#include "backends/native/native_nhwc_grp_tmpl.h"

#define MR1 6
#define NG1 4
#define MR2 6
#define NG2 2
#define MR4 6
GRP_NG4(grp_v1, 1, 0, GRP_R6)
GRP_NG4(grp_v1c16, 1, 16, GRP_R6) /* 16 channels: RegNet's and ResNeXt's third stage */
GRP_NG2(grp_v2, 2, 0, GRP_R6)
GRP_NG2(grp_v2c32, 2, 32, GRP_R6) /* ResNeXt's last stage */
GRP_FN(grp_v4, 1, 4, 0, GRP_R6)   /* 64 a group */

bool nat_nhwc512_grp_fits(int64_t Cm, int64_t Mm) {
  return (Mm == 16 || Mm == 32 || Mm == 64) && Cm >= 1 &&
         Cm * (Mm == 16   ? NG1
               : Mm == 32 ? NG2
                          : 1) <=
             GRP_ZEROS;
}

int nat_nhwc512_grp_rows(int64_t Mm) { return Mm == 16 ? MR1 : Mm == 32 ? MR2 : MR4; }

GRP_DRIVER(nat_nhwc512_grp, grp_v1, grp_v1c16, grp_v2, grp_v2c32, grp_v4)

/* Groups of 4 in and 4 out: 8 pixels x 2 vectors of 4 groups. */
GRP4_FN(grp4_nb, 2, 8)
GRP4_FN(grp4_1, 1, 8)
GRP4_DRIVER(nat_nhwc512_grp4, 8, 2, grp4_nb, grp4_1)
int nat_nhwc512_grp4_rows(void) { return 8; }

#else

bool nat_nhwc512_grp_fits(int64_t Cm, int64_t Mm) { return false; }
int nat_nhwc512_grp_rows(int64_t Mm) { return 1; }
void nat_nhwc512_grp(const nat_grp *g, int64_t p0, int64_t p1, int64_t g0, int64_t g1) {}
void nat_nhwc512_grp4(const nat_grp *g, int64_t p0, int64_t p1, int64_t b0, int64_t b1) {}
int nat_nhwc512_grp4_rows(void) { return 1; }

#endif
