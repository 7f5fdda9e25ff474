/* FusedConvNhwc's 3x3 stride-1 convs as Winograd F(m x m, 3x3), m = 2 or
 * 4: each m x m block of outputs (a tile) comes from the (m+2) x (m+2)
 * input patch around it as
 *   Y = At [ (G g Gt) . (Bt d B) ] A
 * so the 9 multiply-adds per output pixel and channel pair of the direct
 * conv become (m+2)^2 / m^2 per tile pixel: 16/4 (2.25x fewer) for
 * F(2x2, 3x3), 36/16 (4x fewer) for F(4x4, 3x3). Per block of tiles: the
 * input transform Bt d B of every patch into (m+2)^2 matrices V[t][c], as
 * many products V_e . U_e (U = G g Gt per input/output channel, made and
 * packed once per node) on the pointwise register tiles of the run's level
 * (native_nhwc512.c / native_nhwc256.c), then the output transform with the
 * bias, residual and clamp, written where the tile lies in the output.
 *
 * F(2x2, 3x3)'s transforms are exact in binary (adds; the weight transform
 * halves): results move by rounding only. F(4x4, 3x3)'s (the points 0,
 * +-1, +-2 of Lavin and Gray) multiply by 2, 4, 5, 8 and, in the weights,
 * by 1/6 and 1/24: a few ulp of each product's inputs, ~1e-6 relative on
 * a layer's outputs (tests/test_native_conv.c bounds it against eager).
 * F(4x4) takes maps where its tiles cost under 0.75x F(2x2)'s
 * (tiles x 36 against tiles x 16: 13x13 and up) and still fill the
 * products' rows; 7x7 maps keep F(2x2) (4 tiles of 4x4 would stream 36
 * weight matrices for 4 rows each).
 *
 * Work split: blocks of tiles, one pool task each (transforms and
 * products in the thread's cache), spread evenly (a block of 48 and one of
 * 1 left a 14x14 map on one thread of two); where there are too few tiles
 * for two blocks a thread, three phases over the pool instead: every
 * tile's input transform, the products split by element and column block
 * (a 7x7 map's 16 tiles: 16 x M/bw tasks), every tile's output transform.
 * The transforms run along the channels, eight a vector (AVX2 at both
 * vector levels: adds and a few multiply-adds), or sixteen at the AVX-512
 * level; the products on the level's own tiles. */
#include <math.h>
#include <string.h>

#include "backends/native/native.h"

/* Tiles a block holds at most: its V and product slabs stay in L2 while
 * the products run (and enough rows for the register tiles). */
#define WINO_BLOCK 48
/* Fewest tiles a block of the fused split holds (below, the phases). */
#define WINO_MIN_BLOCK 12
/* Scratch bytes per thread a block's V and product slabs may take. */
#define WINO_BLOCK_BYTES (1536 * 1024)

/* Channels read per pass (a patch position in the padding reads zeros). */
#define WINO_ZEROS 1024
static const float wino_zeros[WINO_ZEROS];

static int wino_forced; /* tests: 2 or 4 forces F(m x m, 3x3); 0 picks */
void nat_wino_set_tile(int m) { wino_forced = m == 2 || m == 4 ? m : 0; }

/* The input transform of channels [0, n) of one patch (p[i a + j]: the
 * patch's row i, column j, a row of channels), into V[e][c] at v + e vs. */
typedef void (*wino_in_fn)(const float *const *p, int64_t n, float *v, int64_t vs);
/* The output transform of channels [0, M) of one tile: products m[e][k] at
 * m + e ms, plus bias, residual z[q] and clamp into y[q] (q = i m + j;
 * NULL outside the output). */
typedef void (*wino_out_fn)(const float *m, int64_t ms, int64_t M, const float *b,
                            const float *const *z, float *const *y, float lo, float hi);

typedef struct wino_job {
  const nat_nhwc *c;
  void (*pw)(const nat_nhwc *c, int64_t p0, int64_t p1, int64_t m0, int64_t m1);
  wino_in_fn in;
  wino_out_fn out;
  int m, a, E;               /* output tile m x m, patch a x a, E = a a elements */
  const float *u;            /* packed: element e's C x M at e * ustride */
  int64_t ustride;           /* floats per element's packed matrix */
  int64_t TH, TW;            /* tiles down and across an image */
  int64_t tiles, per_thread; /* all tiles; scratch floats per thread */
  int64_t blocks, rows;      /* fused: blocks over the tiles, rows = most tiles a block */
  bool phased;               /* few tiles: transforms and products as separate phases */
  int64_t col_chunk, col_tasks, tile_chunk;
  float *scratch;
  int mr, nv, bw; /* the register tile */
} wino_job;

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "backends/native/native_avx2.h"

#define T256 __attribute__((target("avx2,fma")))
#define T512 __attribute__((target("avx512f,avx512dq,avx512vl,avx2,fma")))
#define WINO_AVX2 1

/* ---- F(2x2, 3x3), eight channels a vector ---- */

static T256 void wino2_input_run(const float *const *p, int64_t n, float *v, int64_t vs) {
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

static T256 void wino2_output_run(const float *m, int64_t ms, int64_t M, const float *b,
                                  const float *const *z, float *const *y, float lo_, float hi_) {
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

/* ---- F(4x4, 3x3) ----
 * Bt (6 x 6) on a column d0..d5:
 *   o0 = 4 d0 - 5 d2 + d4          o3 = 2 (d3 - d1) + (d4 - d2)
 *   o1 = (d3 + d4) - 4 (d1 + d2)   o4 = (d4 - d2) - 2 (d3 - d1)
 *   o2 = (d4 - d3) + 4 (d1 - d2)   o5 = 4 d1 - 5 d3 + d5
 * At (4 x 6) on a column s0..s5, with a = s1 + s2, b = s1 - s2,
 * c = s3 + s4, d = s3 - s4:
 *   o0 = s0 + a + c   o1 = b + 2 d   o2 = a + 4 c   o3 = b + 8 d + s5
 * The same lines serve both vector widths (V: the vector type, P: its
 * intrinsics' prefix). */
#define WINO4_BT(V, P, d, o)                                                                       \
  do {                                                                                             \
    const V c4 = P##_set1_ps(4.0f), c5 = P##_set1_ps(5.0f), c2 = P##_set1_ps(2.0f);                \
    V d31 = P##_sub_ps(d[3], d[1]), d42 = P##_sub_ps(d[4], d[2]);                                  \
    o[0] = P##_fmadd_ps(c4, d[0], P##_fnmadd_ps(c5, d[2], d[4]));                                  \
    o[1] = P##_fnmadd_ps(c4, P##_add_ps(d[1], d[2]), P##_add_ps(d[3], d[4]));                      \
    o[2] = P##_fmadd_ps(c4, P##_sub_ps(d[1], d[2]), P##_sub_ps(d[4], d[3]));                       \
    o[3] = P##_fmadd_ps(c2, d31, d42);                                                             \
    o[4] = P##_fnmadd_ps(c2, d31, d42);                                                            \
    o[5] = P##_fmadd_ps(c4, d[1], P##_fnmadd_ps(c5, d[3], d[5]));                                  \
  } while (0)
#define WINO4_AT(V, P, s, o)                                                                       \
  do {                                                                                             \
    V a_ = P##_add_ps(s[1], s[2]), b_ = P##_sub_ps(s[1], s[2]);                                    \
    V c_ = P##_add_ps(s[3], s[4]), d_ = P##_sub_ps(s[3], s[4]);                                    \
    o[0] = P##_add_ps(P##_add_ps(s[0], a_), c_);                                                   \
    o[1] = P##_fmadd_ps(P##_set1_ps(2.0f), d_, b_);                                                \
    o[2] = P##_fmadd_ps(P##_set1_ps(4.0f), c_, a_);                                                \
    o[3] = P##_add_ps(P##_fmadd_ps(P##_set1_ps(8.0f), d_, b_), s[5]);                              \
  } while (0)

static T256 void wino4_input_run(const float *const *p, int64_t n, float *v, int64_t vs) {
  for (int64_t c = 0; c < n; c += 8) {
    __m256i m = nat_tail8(n - c);
    bool full = n - c >= 8;
    __m256 t[6][6];
    for (int j = 0; j < 6; j++) { /* Bt d, column by column */
      __m256 d[6], o[6];
      for (int i = 0; i < 6; i++)
        d[i] = full ? _mm256_loadu_ps(p[6 * i + j] + c) : _mm256_maskload_ps(p[6 * i + j] + c, m);
      WINO4_BT(__m256, _mm256, d, o);
      for (int i = 0; i < 6; i++)
        t[i][j] = o[i];
    }
    for (int i = 0; i < 6; i++) { /* (Bt d) B, row by row */
      __m256 o[6];
      WINO4_BT(__m256, _mm256, t[i], o);
      for (int q = 0; q < 6; q++) {
        float *dst = v + (6 * i + q) * vs + c;
        if (full)
          _mm256_storeu_ps(dst, o[q]);
        else
          _mm256_maskstore_ps(dst, m, o[q]);
      }
    }
  }
}

static T256 void wino4_output_run(const float *m, int64_t ms, int64_t M, const float *b,
                                  const float *const *z, float *const *y, float lo_, float hi_) {
  __m256 lo = _mm256_set1_ps(lo_), hi = _mm256_set1_ps(hi_);
  for (int64_t k = 0; k < M; k += 8) {
    __m256i mk = nat_tail8(M - k);
    bool full = M - k >= 8;
    __m256 t[4][6];
    for (int j = 0; j < 6; j++) { /* At m, column by column */
      __m256 s[6], o[4];
      for (int i = 0; i < 6; i++)
        s[i] = full ? _mm256_loadu_ps(m + (6 * i + j) * ms + k)
                    : _mm256_maskload_ps(m + (6 * i + j) * ms + k, mk);
      WINO4_AT(__m256, _mm256, s, o);
      for (int i = 0; i < 4; i++)
        t[i][j] = o[i];
    }
    __m256 bias = b ? _mm256_maskload_ps(b + k, mk) : _mm256_setzero_ps();
    for (int i = 0; i < 4; i++) { /* (At m) A, row by row */
      __m256 o[4];
      WINO4_AT(__m256, _mm256, t[i], o);
      for (int q = 0; q < 4; q++) {
        float *dst = y[4 * i + q];
        if (!dst) continue;
        __m256 v = _mm256_add_ps(o[q], bias);
        if (z[4 * i + q]) v = _mm256_add_ps(v, _mm256_maskload_ps(z[4 * i + q] + k, mk));
        v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
        if (full)
          _mm256_storeu_ps(dst + k, v);
        else
          _mm256_maskstore_ps(dst + k, mk, v);
      }
    }
  }
}

/* The AVX-512 twins: sixteen channels a vector, the tail through a mask. */
static T512 void wino4_input_run512(const float *const *p, int64_t n, float *v, int64_t vs) {
  for (int64_t c = 0; c < n; c += 16) {
    __mmask16 m = n - c >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - c)) - 1);
    __m512 t[6][6];
    for (int j = 0; j < 6; j++) {
      __m512 d[6], o[6];
      for (int i = 0; i < 6; i++)
        d[i] = _mm512_maskz_loadu_ps(m, p[6 * i + j] + c);
      WINO4_BT(__m512, _mm512, d, o);
      for (int i = 0; i < 6; i++)
        t[i][j] = o[i];
    }
    for (int i = 0; i < 6; i++) {
      __m512 o[6];
      WINO4_BT(__m512, _mm512, t[i], o);
      for (int q = 0; q < 6; q++)
        _mm512_mask_storeu_ps(v + (6 * i + q) * vs + c, m, o[q]);
    }
  }
}

static T512 void wino4_output_run512(const float *m, int64_t ms, int64_t M, const float *b,
                                     const float *const *z, float *const *y, float lo_, float hi_) {
  __m512 lo = _mm512_set1_ps(lo_), hi = _mm512_set1_ps(hi_);
  for (int64_t k = 0; k < M; k += 16) {
    __mmask16 mk = M - k >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (M - k)) - 1);
    __m512 t[4][6];
    for (int j = 0; j < 6; j++) {
      __m512 s[6], o[4];
      for (int i = 0; i < 6; i++)
        s[i] = _mm512_maskz_loadu_ps(mk, m + (6 * i + j) * ms + k);
      WINO4_AT(__m512, _mm512, s, o);
      for (int i = 0; i < 4; i++)
        t[i][j] = o[i];
    }
    __m512 bias = b ? _mm512_maskz_loadu_ps(mk, b + k) : _mm512_setzero_ps();
    for (int i = 0; i < 4; i++) {
      __m512 o[4];
      WINO4_AT(__m512, _mm512, t[i], o);
      for (int q = 0; q < 4; q++) {
        float *dst = y[4 * i + q];
        if (!dst) continue;
        __m512 v = _mm512_add_ps(o[q], bias);
        if (z[4 * i + q]) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mk, z[4 * i + q] + k));
        _mm512_mask_storeu_ps(dst + k, mk, _mm512_min_ps(_mm512_max_ps(v, lo), hi));
      }
    }
  }
}

#else
#define WINO_AVX2 0
static void wino2_input_run(const float *const *p, int64_t n, float *v, int64_t vs) {}
static void wino2_output_run(const float *m, int64_t ms, int64_t M, const float *b,
                             const float *const *z, float *const *y, float lo, float hi) {}
static void wino4_input_run(const float *const *p, int64_t n, float *v, int64_t vs) {}
static void wino4_output_run(const float *m, int64_t ms, int64_t M, const float *b,
                             const float *const *z, float *const *y, float lo, float hi) {}
#define wino4_input_run512 wino4_input_run
#define wino4_output_run512 wino4_output_run
#endif

/* The patch of tile (n, th, tw): a x a pointers into X (zeros in the
 * padding), channels [c0, c0 + WINO_ZEROS) at a time, into V. */
static void wino_input(const wino_job *j, int64_t n, int64_t th, int64_t tw, float *v, int64_t vs) {
  const nat_nhwc *c = j->c;
  int a = j->a;
  int64_t C = c->C, ih0 = j->m * th - c->pt, iw0 = j->m * tw - c->pl;
  for (int64_t c0 = 0; c0 < C; c0 += WINO_ZEROS) {
    int64_t cn = C - c0 < WINO_ZEROS ? C - c0 : WINO_ZEROS;
    const float *p[36];
    for (int i = 0; i < a; i++) {
      int64_t ih = ih0 + i;
      const float *row = ih >= 0 && ih < c->H ? c->x + n * c->xs_n + ih * c->xs_h : NULL;
      for (int q = 0; q < a; q++) {
        int64_t iw = iw0 + q;
        p[a * i + q] = row && iw >= 0 && iw < c->W ? row + iw * c->xs_w + c0 : wino_zeros;
      }
    }
    j->in(p, cn, v + c0, vs);
  }
}

/* Tile (n, th, tw)'s outputs from its products at m (element stride ms),
 * with the bias, residual, clamp and any activation past the clamp. */
static void wino_output(const wino_job *j, int64_t n, int64_t th, int64_t tw, const float *m,
                        int64_t ms) {
  const nat_nhwc *c = j->c;
  int t = j->m;
  int64_t M = c->M, oh = t * th, ow = t * tw;
  int rows = c->OH - oh < t ? (int)(c->OH - oh) : t, cols = c->OW - ow < t ? (int)(c->OW - ow) : t;
  float *ys[16] = {NULL};
  const float *zs[16] = {NULL};
  for (int i = 0; i < rows; i++)
    for (int q = 0; q < cols; q++) {
      int64_t at = ((n * c->OH + oh + i) * c->OW + ow + q) * M;
      ys[t * i + q] = c->y + at;
      zs[t * i + q] = c->z ? c->z + at : NULL;
    }
  j->out(m, ms, M, c->b, zs, ys, c->lo, c->hi);
  if (c->post)
    for (int i = 0; i < rows; i++)
      nat_act_f32(c->post, c->y + ((n * c->OH + oh + i) * c->OW + ow) * M, cols * M);
}

static void tile_at(const wino_job *j, int64_t tile, int64_t *n, int64_t *th, int64_t *tw) {
  int64_t per_image = j->TH * j->TW;
  *n = tile / per_image, *th = tile % per_image / j->TW, *tw = tile % j->TW;
}

/* Products e of tiles [0, nt): V_e [nt x C] . U_e [C x M], channels [m0, m1). */
static void wino_product(const wino_job *j, int e, const float *v, float *m, int64_t nt, int64_t m0,
                         int64_t m1) {
  nat_nhwc g;
  memset(&g, 0, sizeof g);
  g.C = j->c->C, g.M = j->c->M, g.x = v, g.y = m, g.wpk = j->u + e * j->ustride;
  g.w = g.wpk, g.lo = -INFINITY, g.hi = INFINITY;
  g.pw_mr = j->mr, g.pw_nv = j->nv, g.pw_bw = j->bw;
  j->pw(&g, 0, nt, m0, m1);
}

/* Fused: block t of the tiles, transforms and products in the thread's scratch. */
static void wino_task(void *arg, int64_t t, int tid) {
  const wino_job *j = arg;
  const nat_nhwc *c = j->c;
  int64_t C = c->C, M = c->M, t0 = t * j->tiles / j->blocks, t1 = (t + 1) * j->tiles / j->blocks;
  int64_t nt = t1 - t0, n, th, tw;
  float *v = j->scratch + tid * j->per_thread, *m = v + j->E * j->rows * C;
  int64_t vs = j->rows * C, ms = j->rows * M;
  for (int64_t q = 0; q < nt; q++) { /* input transforms */
    tile_at(j, t0 + q, &n, &th, &tw);
    wino_input(j, n, th, tw, v + q * C, vs);
  }
  for (int e = 0; e < j->E; e++) /* the products, [nt x C] . [C x M] */
    wino_product(j, e, v + e * vs, m + e * ms, nt, 0, M);
  for (int64_t q = 0; q < nt; q++) { /* output transforms */
    tile_at(j, t0 + q, &n, &th, &tw);
    wino_output(j, n, th, tw, m + q * M, ms);
  }
}

/* Phased: V [E][tiles][C] and the products [E][tiles][M] in one scratch. */
static void wino_in_task(void *arg, int64_t t, int tid) {
  const wino_job *j = arg;
  int64_t C = j->c->C, n, th, tw;
  for (int64_t q = t * j->tile_chunk; q < (t + 1) * j->tile_chunk && q < j->tiles; q++) {
    tile_at(j, q, &n, &th, &tw);
    wino_input(j, n, th, tw, j->scratch + q * C, j->tiles * C);
  }
}

static void wino_mul_task(void *arg, int64_t t, int tid) {
  const wino_job *j = arg;
  int64_t C = j->c->C, M = j->c->M, e = t / j->col_tasks, m0 = t % j->col_tasks * j->col_chunk;
  int64_t m1 = m0 + j->col_chunk < M ? m0 + j->col_chunk : M;
  float *v = j->scratch, *m = v + j->E * j->tiles * C;
  wino_product(j, (int)e, v + e * j->tiles * C, m + e * j->tiles * M, j->tiles, m0, m1);
}

static void wino_out_task(void *arg, int64_t t, int tid) {
  const wino_job *j = arg;
  int64_t C = j->c->C, M = j->c->M, n, th, tw;
  const float *m = j->scratch + j->E * j->tiles * C;
  for (int64_t q = t * j->tile_chunk; q < (t + 1) * j->tile_chunk && q < j->tiles; q++) {
    tile_at(j, q, &n, &th, &tw);
    wino_output(j, n, th, tw, m + q * M, j->tiles * M);
  }
}

/* U = G g Gt of HWIO weights w [3][3][C][M], packed for the register tiles:
 * element e's C x M matrix in column blocks of bw at p + e * stride. */
static const float *wino_pack(nat_run *r, const nat_nhwc *c, int tm, int64_t bw, int64_t stride) {
  if (!nat_input_is_const(r, 1)) return NULL;
  static const double G2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  static const double G4[6][3] = {{0.25, 0, 0},
                                  {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                  {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                  {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                  {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                  {0, 0, 1}};
  int a = tm + 2, E = a * a;
  int64_t C = c->C, M = c->M;
  int64_t key[4] = {C, M, bw + 1000000 * tm, (int64_t)(intptr_t)c->w};
  bool fresh;
  float *p = nat_node_pack(r, NAT_DATA_CONV, key, sizeof(float) * (size_t)(E * stride), &fresh);
  if (!p || !fresh) return p;
  memset(p, 0, sizeof(float) * (size_t)(E * stride));
  for (int64_t ci = 0; ci < C; ci++)
    for (int64_t k = 0; k < M; k++) {
      double g[3][3], t[6][3];
      for (int i = 0; i < 9; i++)
        g[i / 3][i % 3] = c->w[(i * C + ci) * M + k];
      for (int i = 0; i < a; i++) /* G g */
        for (int q = 0; q < 3; q++) {
          const double *gr = tm == 4 ? G4[i] : G2[i];
          t[i][q] = gr[0] * g[0][q] + gr[1] * g[1][q] + gr[2] * g[2][q];
        }
      for (int i = 0; i < a; i++) /* (G g) Gt */
        for (int q = 0; q < a; q++) {
          const double *gr = tm == 4 ? G4[q] : G2[q];
          double u = gr[0] * t[i][0] + gr[1] * t[i][1] + gr[2] * t[i][2];
          p[(a * i + q) * stride + (k / bw * C + ci) * bw + k % bw] = (float)u;
        }
    }
  return p;
}

bool nat_wino_fits(const nat_nhwc *c) {
  int64_t tiles = c->N * ((c->OH + 1) / 2) * ((c->OW + 1) / 2);
  /* 3x3, stride 1, no dilation, outputs of the padded size; enough tiles
   * for the products' rows to amortise the weight matrices and channels
   * for the transforms to be a small part. 7x7 maps (16 tiles) take it
   * too: ResNet18's layer 4 (512 channels) ran direct at two thirds of
   * layer 3's rate, and the model 1.04-1.06x faster with it at both
   * levels (ResNet50, DenseNet121, GoogLeNet 1.00-1.03x) */
  return WINO_AVX2 && nat_isa() >= NAT_ISA_AVX2 && c->kh == 3 && c->kw == 3 && c->sh == 1 &&
         c->sw == 1 && c->dh <= 1 && c->dw <= 1 && c->group <= 1 && c->C >= 16 && c->M >= 16 &&
         tiles >= 16;
}

/* The output tile of c: 4 where F(4x4)'s multiply-adds are under 0.75x
 * F(2x2)'s and it has 16 tiles or more, else 2. */
static int wino_tile_of(const nat_nhwc *c) {
  if (wino_forced) return wino_forced;
  int64_t t2 = c->N * ((c->OH + 1) / 2) * ((c->OW + 1) / 2);
  int64_t t4 = c->N * ((c->OH + 3) / 4) * ((c->OW + 3) / 4);
  return t4 >= 16 && 36 * t4 <= 0.75 * 16 * t2 ? 4 : 2;
}

/* j's geometry and work split (no scratch, weights or kernels yet). */
static void wino_plan(nat_run *r, const nat_nhwc *c, wino_job *j) {
  memset(j, 0, sizeof *j);
  j->c = c;
  j->m = wino_tile_of(c);
  j->a = j->m + 2;
  j->E = j->a * j->a;
  j->TH = (c->OH + j->m - 1) / j->m, j->TW = (c->OW + j->m - 1) / j->m;
  j->tiles = c->N * j->TH * j->TW;
  nat_pool *pool = nat_run_pool(r);
  int64_t threads = nat_run_threads(r), slots = pool ? nat_pool_threads(pool) : 1;
  if (slots < 1) slots = 1;
  /* a block's slabs within WINO_BLOCK_BYTES, at least WINO_MIN_BLOCK tiles */
  int64_t most = WINO_BLOCK_BYTES / (4 * j->E * (c->C + c->M));
  if (most > WINO_BLOCK) most = WINO_BLOCK;
  if (most < WINO_MIN_BLOCK) most = WINO_MIN_BLOCK;
  int64_t blocks = (j->tiles + most - 1) / most;
  j->phased = threads > 1 && j->tiles < 2 * threads * WINO_MIN_BLOCK;
  if (!j->phased && threads > 1 && blocks < 4 * threads) { /* whole rounds of the threads */
    int64_t want = (blocks + threads - 1) / threads * threads;
    int64_t fit = j->tiles / WINO_MIN_BLOCK; /* no block under the minimum */
    blocks = want < fit ? want : fit > blocks ? fit : blocks;
  }
  j->blocks = blocks;
  j->rows = (j->tiles + blocks - 1) / blocks;
  j->per_thread = (j->E * j->rows * (c->C + c->M) + 15) / 16 * 16;
  if (j->phased) {
    j->per_thread = 0;
    j->rows = j->tiles;
  }
  (void)slots;
}

static int64_t wino_scratch_of(nat_run *r, const wino_job *j) {
  nat_pool *pool = nat_run_pool(r);
  int slots = pool ? nat_pool_threads(pool) : 1;
  if (j->phased) return (j->E * j->tiles * (j->c->C + j->c->M) + 15) / 16 * 16;
  return (slots < 1 ? 1 : slots) * j->per_thread;
}

static _Atomic long long wino_runs, wino4_runs;
long long nat_wino_runs(void) { return wino_runs; }
long long nat_wino4_runs(void) { return wino4_runs; }

int64_t nat_wino_scratch(nat_run *r, const nat_nhwc *c) {
  wino_job j;
  wino_plan(r, c, &j);
  return wino_scratch_of(r, &j);
}

ait_status nat_wino_run(nat_run *r, const nat_nhwc *c, int level, float *scratch) {
  wino_job j;
  wino_plan(r, c, &j);
  nat_nhwc t;
  memset(&t, 0, sizeof t);
  t.M = c->M;
  nat_nhwc_tile(&t, level, j.rows);
  j.mr = t.pw_mr, j.nv = t.pw_nv, j.bw = t.pw_bw;
  j.pw = level == NAT_ISA_AVX512 ? nat_nhwc512_pw : nat_nhwc256_pw;
  if (j.m == 4) {
    j.in = level == NAT_ISA_AVX512 ? wino4_input_run512 : wino4_input_run;
    j.out = level == NAT_ISA_AVX512 ? wino4_output_run512 : wino4_output_run;
  } else {
    j.in = wino2_input_run, j.out = wino2_output_run;
  }
  int64_t bw = j.bw;
  j.ustride = (c->M + bw - 1) / bw * bw * c->C;
  j.u = wino_pack(r, c, j.m, bw, j.ustride);
  if (!j.u) return AIT_E_UNSUPPORTED;
  j.scratch = scratch ? scratch : nat_scratch(r, (int64_t)sizeof(float) * wino_scratch_of(r, &j));
  if (!j.scratch) return AIT_E_NOMEM;
  nat_pool *pool = nat_run_pool(r);
  if (j.phased) {
    int64_t threads = nat_run_threads(r);
    j.tile_chunk = (j.tiles + 2 * threads - 1) / (2 * threads);
    int64_t tt = (j.tiles + j.tile_chunk - 1) / j.tile_chunk;
    /* products: per element, column chunks of whole blocks (4 threads'
     * worth of tasks over all elements at least) */
    int64_t nb = (c->M + bw - 1) / bw, per = nb * j.E / (4 * threads);
    if (per < 1) per = 1;
    if (per > nb) per = nb;
    j.col_chunk = per * bw;
    j.col_tasks = (c->M + j.col_chunk - 1) / j.col_chunk;
    nat_pool_run(pool, tt, wino_in_task, &j);
    nat_pool_run(pool, j.E * j.col_tasks, wino_mul_task, &j);
    nat_pool_run(pool, tt, wino_out_task, &j);
  } else {
    nat_pool_run(pool, j.blocks, wino_task, &j);
  }
  wino_runs++;
  if (j.m == 4) wino4_runs++;
  return AIT_OK;
}
