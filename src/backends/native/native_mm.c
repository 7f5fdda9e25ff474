/* native's blocked GEMM driver (native_mm.h): tile, chunk and panel sizes
 * per level, the loops over panels, chunks and column blocks, and B's
 * packing. The register tiles are in native_mm256.c / native_mm512.c. */
#include <string.h>

#include "backends/native/native.h"
#include "backends/native/native_mm.h"

/* Per level: the register tiles (rows, width in floats), best first, and
 * the kernel. A tile's reduction chunk keeps its B block (kc x nr floats)
 * at about 32 KB, inside a 32 KB (Zen 2/3) or 48 KB (Intel, Zen 4) L1
 * beside A's rows; a row panel keeps ~192 KB of A in L2 (Zen 2/3 have
 * 512 KB). Measured one thread, B cold (bench/mm_kernels.c sweep): AVX2
 * 4 x 24 beat 6 x 16 by 3-12% on transformer shapes, AVX-512 8 x 48 and
 * 6 x 64 beat 12 x 32 by 5-10% (12 x 32 stays for widths it fits better). */
typedef struct mm_tile {
  int mr, nr;
} mm_tile;

typedef struct mm_level {
  int lanes;
  mm_tile tiles[3];
  void (*block)(const nat_mm *, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t);
} mm_level;

static const mm_level levels[] = {
    [NAT_ISA_PORTABLE] = {0, {{0, 0}}, NULL},
    [NAT_ISA_AVX2] = {8, {{4, 24}, {6, 16}, {0, 0}}, nat_mm256_block},
    [NAT_ISA_AVX512] = {16, {{8, 48}, {6, 64}, {12, 32}}, nat_mm512_block},
};

#define MM_L1_BYTES (32 * 1024)
#define MM_PANEL_BYTES (192 * 1024)

bool nat_mm_available(int level) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  return level >= NAT_ISA_AVX2 && level <= NAT_ISA_AVX512 && (int)nat_isa() >= level;
#else
  return false;
#endif
}

bool nat_mm_init_tile(nat_mm *m, int level, int tile, int64_t M, int64_t N, int64_t K) {
  const mm_level *l = &levels[level];
  if (tile < 0 || tile >= 3 || !l->tiles[tile].mr) return false;
  m->level = level;
  m->mr = l->tiles[tile].mr, m->nr = l->tiles[tile].nr;
  m->M = M, m->N = N, m->K = K;
  /* even chunks (K = 768: 3 x 256 at width 24, 5 x 154 at width 48) */
  int64_t kc_max = MM_L1_BYTES / (4 * m->nr);
  int64_t chunks = K > 0 ? (K + kc_max - 1) / kc_max : 1;
  m->kc = K > 0 ? (K + chunks - 1) / chunks : 1;
  int64_t mc = MM_PANEL_BYTES / (4 * m->kc) / m->mr * m->mr;
  if (mc < m->mr) mc = m->mr;
  m->mc = M <= mc + mc / 2 ? (M > 0 ? M : 1) : mc;
  return true;
}

void nat_mm_init(nat_mm *m, int level, int64_t M, int64_t N, int64_t K) {
  /* the tile whose column blocks waste the fewest lanes on N (ties: the
   * first); rows are split evenly, so their count does not decide */
  const mm_level *l = &levels[level];
  int64_t vecs = (N + l->lanes - 1) / l->lanes;
  double best = -1;
  int pick = 0;
  for (int t = 0; t < 3 && l->tiles[t].mr; t++) {
    int64_t nv = l->tiles[t].nr / l->lanes;
    double use = vecs > 0 ? (double)vecs / (double)((vecs + nv - 1) / nv * nv) : 1.0;
    if (use > best + 1e-9) best = use, pick = t;
  }
  nat_mm_init_tile(m, level, pick, M, N, K);
}

void nat_mm_run(const nat_mm *m, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  void (*block)(const nat_mm *, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t) =
      levels[m->level].block;
  int64_t K = m->K > 0 ? m->K : 0;
  nat_mm mm = *m; /* with this call's columns, for the prefetches */
  mm.j0 = j0, mm.j1 = j1;
  m = &mm;
  for (int64_t p0 = i0, p1; p0 < i1; p0 = p1) {
    p1 = p0 + m->mc < i1 ? p0 + m->mc : i1;
    if (i1 - p1 < m->mc / 2) p1 = i1; /* no thin last panel */
    int64_t k0 = 0;
    do {
      int64_t k1 = k0 + m->kc < K ? k0 + m->kc : K;
      for (int64_t j = j0; j < j1; j += m->nr)
        block(m, p0, p1, j, j1 - j < m->nr ? j1 - j : m->nr, k0, k1);
      k0 = k1;
    } while (k0 < K);
  }
}

int64_t nat_mm_packed_floats(int64_t K, int64_t N, int nr) { return (N + nr - 1) / nr * nr * K; }

void nat_mm_pack(float *dst, const float *B, int64_t K, int64_t N, int64_t rs, int64_t cs, int nr) {
  for (int64_t j0 = 0; j0 < N; j0 += nr) {
    int64_t nc = N - j0 < nr ? N - j0 : nr;
    float *d = dst + j0 * K;
    if (cs == 1) {
      for (int64_t k = 0; k < K; k++) {
        memcpy(d + k * nr, B + k * rs + j0, (size_t)nc * sizeof(float));
        memset(d + k * nr + nc, 0, (size_t)(nr - nc) * sizeof(float));
      }
    } else { /* transposed B: read each stored row once */
      memset(d, 0, (size_t)(K * nr) * sizeof(float));
      for (int64_t n = 0; n < nc; n++)
        for (int64_t k = 0; k < K; k++)
          d[k * nr + n] = B[k * rs + (j0 + n) * cs];
    }
  }
}

/* ---- on the pool ---------------------------------------------------------- */

typedef struct mm_job {
  const nat_mm *m;
  const ait_act *post;
  int64_t rows_per, cols_per, n_cols; /* task t: row part t / n_cols, column part t % n_cols */
} mm_job;

static void mm_task(void *arg, int64_t t, int tid) {
  const mm_job *j = arg;
  const nat_mm *m = j->m;
  int64_t i0 = t / j->n_cols * j->rows_per, c0 = t % j->n_cols * j->cols_per;
  int64_t i1 = i0 + j->rows_per < m->M ? i0 + j->rows_per : m->M;
  int64_t c1 = c0 + j->cols_per < m->N ? c0 + j->cols_per : m->N;
  if (i0 >= i1 || c0 >= c1) return;
  nat_mm_run(m, i0, i1, c0, c1);
  if (j->post && j->post->kind != AIT_ACT_NONE)
    for (int64_t i = i0; i < i1; i++)
      nat_act_f32(j->post, m->c + i * m->ldc + c0, c1 - c0);
}

/* About two tasks a thread: by columns when B (K x N) is the larger
 * operand (each thread then reads its share of the weights once), by rows
 * when A is (Swin's 3136-row products), both when one side has too few
 * blocks. */
static void mm_split(mm_job *j, int threads) {
  const nat_mm *m = j->m;
  int64_t want = threads > 1 ? threads * 2 : 1;
  int64_t cblocks = (m->N + m->nr - 1) / m->nr, rtiles = (m->M + m->mr - 1) / m->mr;
  int64_t ncol, nrow;
  if (m->N >= m->M) {
    ncol = cblocks < want ? cblocks : want;
    nrow = (want + ncol - 1) / ncol;
  } else {
    nrow = rtiles < want ? rtiles : want;
    ncol = (want + nrow - 1) / nrow;
  }
  if (nrow > rtiles) nrow = rtiles;
  if (ncol > cblocks) ncol = cblocks;
  if (nrow < 1) nrow = 1;
  if (ncol < 1) ncol = 1;
  j->cols_per = (cblocks + ncol - 1) / ncol * m->nr;
  j->n_cols = (m->N + j->cols_per - 1) / j->cols_per;
  j->rows_per = (m->M + nrow - 1) / nrow;
}

void nat_mm_pool(nat_run *r, const nat_mm *m, const ait_act *post) {
  mm_job j = {m, post, 0, 0, 0};
  int threads = r ? nat_run_threads(r) : 1;
  if ((double)m->M * (double)m->N * (double)m->K < NAT_PAR_MIN_MACS) threads = 1;
  mm_split(&j, threads);
  int64_t tasks = (m->M + j.rows_per - 1) / j.rows_per * j.n_cols;
  nat_pool_run(threads > 1 ? nat_run_pool(r) : NULL, tasks, mm_task, &j);
}
