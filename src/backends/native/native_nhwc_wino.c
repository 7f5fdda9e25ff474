/* FusedConvNhwc's 3x3 stride-1 convs as Winograd F(2x2, 3x3): each 2x2
 * block of outputs (a tile) comes from the 4x4 input patch around it as
 *   Y = At [ (G g Gt) . (Bt d B) ] A
 * so the 36 multiply-adds per output pixel and channel pair of the direct
 * conv become 16 per tile, 2.25x fewer. Per block of tiles: the input
 * transform Bt d B (adds only) of every patch into 16 matrices V[t][c], then
 * 16 products V_e . U_e (U = G g Gt per input/output channel, made and
 * packed once per node) on the pointwise register tiles of the run's level
 * (native_nhwc512.c / native_nhwc256.c), then the output transform (adds
 * only) with the bias, residual and clamp, written where the tile lies in
 * the output. F(2x2, 3x3)'s transforms are exact in binary (the weight
 * transform halves): results move by rounding only, as a different order
 * of the direct sum would. The transforms run along the channels, eight a
 * vector (AVX2 at both vector levels: adds only, a small share of the
 * time), the products on the level's own tiles. */
#include <math.h>
#include <string.h>

#include "backends/native/native.h"

/* Tiles a block: its 16 V and 16 product slabs stay in L2 while the
 * products run (and enough rows for the register tiles). */
#define WINO_BLOCK 48

typedef struct wino_job {
  const nat_nhwc *c;
  void (*pw)(const nat_nhwc *c, int64_t p0, int64_t p1, int64_t m0, int64_t m1);
  const float *u;            /* packed: element e's C x M at e * ustride */
  int64_t ustride;           /* floats per element's packed matrix */
  int64_t TH, TW;            /* tiles down and across an image */
  int64_t tiles, per_thread; /* all tiles; scratch floats per thread */
  float *scratch;
  int mr, nv, bw; /* the register tile */
} wino_job;

/* Channels read per pass (a patch position in the padding reads zeros). */
#define WINO_ZEROS 1024
static const float wino_zeros[WINO_ZEROS];

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "backends/native/native_avx2.h"

#define T256 __attribute__((target("avx2,fma")))
#define WINO_AVX2 1

/* Bt d B for channels [0, n) of a 4x4 patch whose 16 inputs are p[i][j]
 * (rows of channels): V[e][c] at v + e * vs. Eight channels a vector (the
 * transforms are adds: AVX2 at both vector levels). */
static T256 void wino_input_run(const float *const p[16], int64_t n, float *v, int64_t vs) {
  for (int64_t c = 0; c < n; c += 8) {
    __m256i m = nat_tail8(n - c);
    bool full = n - c >= 8;
    __m256 t[4][4];
    for (int j = 0; j < 4; j++) { /* Bt d */
      __m256 d0 = full ? _mm256_loadu_ps(p[j] + c) : _mm256_maskload_ps(p[j] + c, m);
      __m256 d1 = full ? _mm256_loadu_ps(p[4 + j] + c) : _mm256_maskload_ps(p[4 + j] + c, m);
      __m256 d2 = full ? _mm256_loadu_ps(p[8 + j] + c) : _mm256_maskload_ps(p[8 + j] + c, m);
      __m256 d3 = full ? _mm256_loadu_ps(p[12 + j] + c) : _mm256_maskload_ps(p[12 + j] + c, m);
      t[0][j] = _mm256_sub_ps(d0, d2);
      t[1][j] = _mm256_add_ps(d1, d2);
      t[2][j] = _mm256_sub_ps(d2, d1);
      t[3][j] = _mm256_sub_ps(d1, d3);
    }
    for (int i = 0; i < 4; i++) { /* (Bt d) B */
      __m256 o[4] = {_mm256_sub_ps(t[i][0], t[i][2]), _mm256_add_ps(t[i][1], t[i][2]),
                     _mm256_sub_ps(t[i][2], t[i][1]), _mm256_sub_ps(t[i][1], t[i][3])};
      for (int q = 0; q < 4; q++) {
        float *dst = v + (4 * i + q) * vs + c;
        if (full)
          _mm256_storeu_ps(dst, o[q]);
        else
          _mm256_maskstore_ps(dst, m, o[q]);
      }
    }
  }
}

/* At m A of one tile (m[e][k] at m + e * ms, channels [0, M)) plus the
 * bias, the residual z[q] and the clamp into y[q] (the tile's 2x2 outputs,
 * q = 2 i + j; NULL outside the output). */
static T256 void wino_output_run(const float *m, int64_t ms, int64_t M, const float *b,
                                 const float *const z[4], float *const y[4], float lo_, float hi_) {
  __m256 lo = _mm256_set1_ps(lo_), hi = _mm256_set1_ps(hi_);
  for (int64_t k = 0; k < M; k += 8) {
    __m256i mk = nat_tail8(M - k);
    __m256 t[2][4];
    for (int j = 0; j < 4; j++) {
      __m256 s0 = _mm256_maskload_ps(m + j * ms + k, mk);
      __m256 s1 = _mm256_maskload_ps(m + (4 + j) * ms + k, mk);
      __m256 s2 = _mm256_maskload_ps(m + (8 + j) * ms + k, mk);
      __m256 s3 = _mm256_maskload_ps(m + (12 + j) * ms + k, mk);
      t[0][j] = _mm256_add_ps(_mm256_add_ps(s0, s1), s2);
      t[1][j] = _mm256_sub_ps(_mm256_sub_ps(s1, s2), s3);
    }
    __m256 bias = b ? _mm256_maskload_ps(b + k, mk) : _mm256_setzero_ps();
    __m256 o[4];
    for (int i = 0; i < 2; i++) {
      o[2 * i] = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(t[i][0], t[i][1]), t[i][2]), bias);
      o[2 * i + 1] = _mm256_add_ps(_mm256_sub_ps(_mm256_sub_ps(t[i][1], t[i][2]), t[i][3]), bias);
    }
    for (int q = 0; q < 4; q++) {
      if (!y[q]) continue;
      __m256 v = o[q];
      if (z[q]) v = _mm256_add_ps(v, _mm256_maskload_ps(z[q] + k, mk));
      _mm256_maskstore_ps(y[q] + k, mk, _mm256_min_ps(_mm256_max_ps(v, lo), hi));
    }
  }
}

#else
#define WINO_AVX2 0
static void wino_input_run(const float *const p[16], int64_t n, float *v, int64_t vs) {}
static void wino_output_run(const float *m, int64_t ms, int64_t M, const float *b,
                            const float *const z[4], float *const y[4], float lo, float hi) {}
#endif

/* Channels read per pass (a patch position in the padding reads zeros). */
#define WINO_ZEROS 1024
static const float wino_zeros[WINO_ZEROS];

/* The patch whose rows r[0..4) (NULL: padding) start at input column iw0. */
static void wino_input(const float *const r[4], int64_t iw0, int64_t W, int64_t C, float *v,
                       int64_t vs) {
  for (int64_t c0 = 0; c0 < C; c0 += WINO_ZEROS) {
    int64_t n = C - c0 < WINO_ZEROS ? C - c0 : WINO_ZEROS;
    const float *p[16];
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 4; j++)
        p[4 * i + j] = r[i] && iw0 + j >= 0 && iw0 + j < W ? r[i] + (iw0 + j) * C + c0 : wino_zeros;
    wino_input_run(p, n, v + c0, vs);
  }
}

/* One tile's outputs into y (pixel stride M, row stride yr; rows, cols of
 * the 2x2 inside the output), with residual z (same strides) and clamp. */
static void wino_output(const float *m, int64_t ms, int64_t M, const float *b, const float *z,
                        float *y, int64_t yr, int rows, int cols, float lo, float hi) {
  float *ys[4] = {NULL, NULL, NULL, NULL};
  const float *zs[4] = {NULL, NULL, NULL, NULL};
  for (int i = 0; i < rows; i++)
    for (int j = 0; j < cols; j++) {
      ys[2 * i + j] = y + i * yr + j * M;
      zs[2 * i + j] = z ? z + i * yr + j * M : NULL;
    }
  wino_output_run(m, ms, M, b, zs, ys, lo, hi);
}

static void wino_task(void *arg, int64_t t, int tid) {
  const wino_job *j = arg;
  const nat_nhwc *c = j->c;
  int64_t C = c->C, M = c->M, t0 = t * WINO_BLOCK;
  int64_t nt = j->tiles - t0 < WINO_BLOCK ? j->tiles - t0 : WINO_BLOCK;
  float *v = j->scratch + tid * j->per_thread, *m = v + 16 * WINO_BLOCK * C;
  int64_t vs = WINO_BLOCK * C, ms = WINO_BLOCK * M, per_image = j->TH * j->TW;
  for (int64_t q = 0; q < nt; q++) { /* input transforms */
    int64_t tile = t0 + q, n = tile / per_image, th = tile % per_image / j->TW, tw = tile % j->TW;
    const float *r[4];
    for (int i = 0; i < 4; i++) {
      int64_t ih = 2 * th - c->pt + i;
      r[i] = ih >= 0 && ih < c->H ? c->x + n * c->xs_n + ih * c->xs_h : NULL;
    }
    wino_input(r, 2 * tw - c->pl, c->W, C, v + q * C, vs);
  }
  for (int e = 0; e < 16; e++) { /* the 16 products, [nt x C] . [C x M] */
    nat_nhwc g;
    memset(&g, 0, sizeof g);
    g.C = C, g.M = M, g.x = v + e * vs, g.y = m + e * ms, g.wpk = j->u + e * j->ustride;
    g.w = g.wpk, g.lo = -INFINITY, g.hi = INFINITY;
    g.pw_mr = j->mr, g.pw_nv = j->nv, g.pw_bw = j->bw;
    j->pw(&g, 0, nt, 0, M);
  }
  for (int64_t q = 0; q < nt; q++) { /* output transforms */
    int64_t tile = t0 + q, n = tile / per_image, th = tile % per_image / j->TW, tw = tile % j->TW;
    int64_t oh = 2 * th, ow = 2 * tw, at = ((n * c->OH + oh) * c->OW + ow) * M;
    int rows = c->OH - oh < 2 ? 1 : 2, cols = c->OW - ow < 2 ? 1 : 2;
    wino_output(m + q * M, ms, M, c->b, c->z ? c->z + at : NULL, c->y + at, c->OW * M, rows, cols,
                c->lo, c->hi);
    if (c->post)
      for (int i = 0; i < rows; i++)
        nat_act_f32(c->post, c->y + at + i * c->OW * M, cols * M);
  }
}

/* U = G g Gt of HWIO weights w [3][3][C][M], packed for the register tiles:
 * element e's C x M matrix in column blocks of bw at p + e * stride. */
static const float *wino_pack(nat_run *r, const nat_nhwc *c, int64_t bw, int64_t stride) {
  if (!nat_input_is_const(r, 1)) return NULL;
  int64_t C = c->C, M = c->M;
  int64_t key[4] = {C, M, bw + 1000000, (int64_t)(intptr_t)c->w};
  bool fresh;
  float *p = nat_node_pack(r, NAT_DATA_CONV, key, sizeof(float) * (size_t)(16 * stride), &fresh);
  if (!p || !fresh) return p;
  memset(p, 0, sizeof(float) * (size_t)(16 * stride));
  for (int64_t ci = 0; ci < C; ci++)
    for (int64_t k = 0; k < M; k++) {
      float g[3][3], t[4][3], u[4][4];
      for (int i = 0; i < 9; i++)
        g[i / 3][i % 3] = c->w[(i * C + ci) * M + k];
      for (int j = 0; j < 3; j++) { /* G g */
        t[0][j] = g[0][j];
        t[1][j] = 0.5f * (g[0][j] + g[1][j] + g[2][j]);
        t[2][j] = 0.5f * (g[0][j] - g[1][j] + g[2][j]);
        t[3][j] = g[2][j];
      }
      for (int i = 0; i < 4; i++) { /* (G g) Gt */
        u[i][0] = t[i][0];
        u[i][1] = 0.5f * (t[i][0] + t[i][1] + t[i][2]);
        u[i][2] = 0.5f * (t[i][0] - t[i][1] + t[i][2]);
        u[i][3] = t[i][2];
      }
      for (int e = 0; e < 16; e++)
        p[e * stride + (k / bw * C + ci) * bw + k % bw] = u[e / 4][e % 4];
    }
  return p;
}

bool nat_wino_fits(const nat_nhwc *c) {
  int64_t tiles = c->N * ((c->OH + 1) / 2) * ((c->OW + 1) / 2);
  /* 3x3, stride 1, no dilation, outputs of the padded size; enough tiles
   * for the products' rows to amortise the 16 weight matrices and channels
   * for the transforms to be a small part. 7x7 maps (16 tiles) take it
   * too: ResNet18's layer 4 (512 channels) ran direct at two thirds of
   * layer 3's rate, and the model 1.04-1.06x faster with it at both
   * levels (ResNet50, DenseNet121, GoogLeNet 1.00-1.03x) */
  return WINO_AVX2 && nat_isa() >= NAT_ISA_AVX2 && c->kh == 3 && c->kw == 3 && c->sh == 1 &&
         c->sw == 1 && c->dh <= 1 && c->dw <= 1 && c->group <= 1 && c->C >= 16 && c->M >= 16 &&
         tiles >= 16;
}

static _Atomic long long wino_runs;
long long nat_wino_runs(void) { return wino_runs; }

int64_t nat_wino_scratch(nat_run *r, const nat_nhwc *c) {
  nat_pool *pool = nat_run_pool(r);
  int slots = pool ? nat_pool_threads(pool) : 1;
  return (slots < 1 ? 1 : slots) * ((16 * WINO_BLOCK * (c->C + c->M) + 15) / 16 * 16);
}

ait_status nat_wino_run(nat_run *r, const nat_nhwc *c, int level, float *scratch) {
  wino_job j;
  memset(&j, 0, sizeof j);
  j.c = c;
  j.TH = (c->OH + 1) / 2, j.TW = (c->OW + 1) / 2;
  j.tiles = c->N * j.TH * j.TW;
  nat_nhwc t;
  memset(&t, 0, sizeof t);
  t.M = c->M;
  nat_nhwc_tile(&t, level, WINO_BLOCK);
  j.mr = t.pw_mr, j.nv = t.pw_nv, j.bw = t.pw_bw;
  j.pw = level == NAT_ISA_AVX512 ? nat_nhwc512_pw : nat_nhwc256_pw;
  int64_t bw = j.bw;
  j.ustride = (c->M + bw - 1) / bw * bw * c->C;
  j.u = wino_pack(r, c, bw, j.ustride);
  if (!j.u) return AIT_E_UNSUPPORTED;
  j.per_thread = (16 * WINO_BLOCK * (c->C + c->M) + 15) / 16 * 16;
  j.scratch = scratch ? scratch : nat_scratch(r, (int64_t)sizeof(float) * nat_wino_scratch(r, c));
  if (!j.scratch) return AIT_E_NOMEM;
  nat_pool_run(nat_run_pool(r), (j.tiles + WINO_BLOCK - 1) / WINO_BLOCK, wino_task, &j);
  wino_runs++;
  return AIT_OK;
}
