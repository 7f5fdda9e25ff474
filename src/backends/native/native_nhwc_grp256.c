/* FusedConvNhwc's grouped window convolutions of few channels a group on
 * AVX2+FMA, register-blocked over groups. Groups are merged as
 * native_nhwc.c's run_grouped merges them (f groups of Cg inputs and Mg
 * outputs into one of Cm = f Cg and Mm = f Mg with block-diagonal packed
 * weights) until Mm is one or two vectors; this kernel then takes several
 * merged groups in one register tile: mr pixels x ng groups x V vectors
 * (4 x 3 x 1, 3 x 2 x 2 (12 accumulators) or 2 x 1 x 4 (8)). Per tap, the pixels' input
 * pointers are computed once for all ng groups (the per-group window
 * kernel recomputed them for each group, and refilled each panel per
 * group: with ResNeXt's 4 or 8 channels a group that bookkeeping was most
 * of the work), then each group runs its Cm channels: one weight row of V
 * vectors and one broadcast per pixel and channel. Pixels come in
 * nat_win_panel panels (classes of in-bounds taps where the driver asks);
 * within a panel the tiles pass group block by group block, so each
 * block's weights stay in L1 while the panel's rows stream. Weights:
 * merged group G at g->wpk + G g->gstride, [kh kw Cm] x Mm. The AVX-512
 * twin is native_nhwc_grp512.c; both from native_nhwc_grp_tmpl.h. */
#include <stdbool.h>
#include <stdint.h>

#include "backends/native/native.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define GT __attribute__((target("avx2,fma")))
#define GV __m256
#define GL 8
#define GLOAD(p) _mm256_loadu_ps(p)
#define GSTORE(p, v) _mm256_storeu_ps((p), (v))
#define GSET1(x) _mm256_set1_ps(x)
#define GFMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define GMIN(a, b) _mm256_min_ps((a), (b))
#define GMAX(a, b) _mm256_max_ps((a), (b))
#define GADD(a, b) _mm256_add_ps((a), (b))
#define GPERM(x, imm) _mm256_permute_ps((x), (imm))
#define GZERO() _mm256_setzero_ps()

#include "backends/native/native_nhwc_grp_tmpl.h"

/* tiles: one vector a group, 4 pixels x 3 groups; two, 3 x 2; four
 * (ResNeXt's last stage, 32 a group), 2 x 1: 3 would spill */
#define MR1 4
#define NG1 3
#define MR2 3
#define NG2 2
#define MR4 2
GRP_NG3(grp_v1, 1, 0, GRP_R4)
GRP_NG3(grp_v1c8, 1, 8, GRP_R4) /* 8 channels: ResNeXt's 4 a group in pairs, or 8 */
GRP_NG2(grp_v2, 2, 0, GRP_R3)
GRP_NG2(grp_v2c16, 2, 16, GRP_R3) /* RegNet's 16 */
GRP_FN(grp_v4, 1, 4, 0, GRP_R2)

bool nat_nhwc256_grp_fits(int64_t Cm, int64_t Mm) {
  return (Mm == 8 || Mm == 16 || Mm == 32) && Cm >= 1 &&
         Cm * (Mm == 8    ? NG1
               : Mm == 16 ? NG2
                          : 1) <=
             GRP_ZEROS;
}

int nat_nhwc256_grp_rows(int64_t Mm) { return Mm == 8 ? MR1 : Mm == 16 ? MR2 : MR4; }

GRP_DRIVER(nat_nhwc256_grp, grp_v1, grp_v1c8, grp_v2, grp_v2c16, grp_v4)

/* Groups of 4 in and 4 out: 4 pixels x 2 vectors of 2 groups. */
GRP4_FN(grp4_nb, 2, 4)
GRP4_FN(grp4_1, 1, 4)
GRP4_DRIVER(nat_nhwc256_grp4, 4, 2, grp4_nb, grp4_1)
int nat_nhwc256_grp4_rows(void) { return 4; }

#else

bool nat_nhwc256_grp_fits(int64_t Cm, int64_t Mm) { return false; }
int nat_nhwc256_grp_rows(int64_t Mm) { return 1; }
void nat_nhwc256_grp(const nat_grp *g, int64_t p0, int64_t p1, int64_t g0, int64_t g1) {}
void nat_nhwc256_grp4(const nat_grp *g, int64_t p0, int64_t p1, int64_t b0, int64_t b1) {}
int nat_nhwc256_grp4_rows(void) { return 1; }

#endif
