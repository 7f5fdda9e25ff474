/* 3-D convolutions (Conv / FusedConv over [N, C, D, H, W]: video models
 * such as r3d_18, medical volumes) as an implicit GEMM on native_mm's
 * register tiles, per image and group:
 *   Y[n, g] [Mg][P] = W_g [Mg][Cg k] . col(X[n, g]) [Cg k][P]  (+ bias, + Z, act)
 * P the output positions (od, oh, ow), k the taps (kd, kh, kw). W_g is A,
 * read as stored; the column matrix is B, packed straight from X in the
 * tiles' layout (blocks of nr output positions, K x nr each) one task's
 * range of positions at a time into its thread's scratch, then multiplied
 * while it is in L2: no im2col matrix is built and packed again, and no
 * other GEMM library runs. Packing copies each of the Cg k x P elements
 * once against Mg multiply-adds (64 in r3d_18's first stage). Any kernel,
 * stride, dilation, padding and group count; the output is NCDHW as
 * stored. The portable level and anything else goes to native_conv.c. */
#include <math.h>
#include <string.h>

#include "backends/native/native.h"
#include "backends/native/native_mm.h"
#include "ops/nn_impl.h"

/* Bytes of one task's packed columns: about an L2 share, so the column
 * blocks are still cached when the tiles read them. */
#define C3_TASK_BYTES (1 << 20)

typedef struct c3_job {
  const float *x, *w, *b, *z;
  float *y;
  int64_t N, C, M, G, Cg, Mg, K;
  int64_t in[3], out[3], k[3], s[3], d[3], pb[3];
  int64_t in_n, out_n, k_n;
  int64_t width, ranges; /* output positions a task (a multiple of nr), tasks an image-group */
  nat_mm m;              /* the tiles, the bias, the clamp; per task a copy */
  ait_act post;          /* an activation the tiles do not apply */
  float *scratch;        /* per thread: K x width floats, then the copies */
  int64_t slot;          /* floats of a thread's scratch */
} c3_job;

/* One row piece of the packed columns: len floats at dst offset doff
 * (row of channel 0), read from X[n, g] at soff (channel 0) with stride sw,
 * lanes [lo, hi) inside the input, the others zero. */
typedef struct c3_copy {
  int64_t soff, doff;
  int32_t lo, hi, len, pad;
} c3_copy;

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

/* The copies of channels [0, Cg), channel ci's from src + ci * ls to
 * dst + ci * ld; stride-1 ones through masked AVX2 loads (the padding
 * lanes are never read; the tiles need AVX2, so it is there). Channels
 * outermost: each channel's few input rows stay in L1 and its TLB entries
 * warm while all taps copy from them (taps outermost, the channels' pages
 * missed the TLB: the copies took 21% of r3d_18's time, now ~5%). */
__attribute__((target("avx2"))) static void c3_copies(const c3_copy *cp, int64_t n,
                                                      const float *src, int64_t ls, float *dst,
                                                      int64_t ld, int64_t Cg, int64_t sw) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (int64_t ci = 0; ci < Cg; ci++, src += ls, dst += ld)
    for (int64_t e = 0; e < n; e++) {
      const c3_copy *c = cp + e;
      float *d = dst + c->doff;
      if (sw != 1 || c->len > 64) {
        const float *s0 = src + c->soff;
        for (int32_t q = 0; q < c->lo; q++)
          d[q] = 0.0f;
        for (int32_t q = c->lo; q < c->hi; q++)
          d[q] = s0[q * sw];
        for (int32_t q = c->hi; q < c->len; q++)
          d[q] = 0.0f;
        continue;
      }
      /* stride 1: soff may point before X where lanes [0, lo) are padding;
       * only the in-range lanes are read */
      const float *s0 = src + c->soff;
      const __m256i lo = _mm256_set1_epi32(c->lo - 1), hi = _mm256_set1_epi32(c->hi);
      int32_t v = 0;
      for (; v + 8 <= c->len; v += 8) {
        __m256i q = _mm256_add_epi32(lane, _mm256_set1_epi32(v));
        __m256i mk = _mm256_and_si256(_mm256_cmpgt_epi32(q, lo), _mm256_cmpgt_epi32(hi, q));
        _mm256_storeu_ps(d + v, _mm256_maskload_ps(s0 + v, mk));
      }
      if (v < c->len) {
        __m256i q = _mm256_add_epi32(lane, _mm256_set1_epi32(v));
        __m256i mk = _mm256_and_si256(_mm256_cmpgt_epi32(q, lo), _mm256_cmpgt_epi32(hi, q));
        __m256i st = _mm256_cmpgt_epi32(_mm256_set1_epi32(c->len - v), lane);
        _mm256_maskstore_ps(d + v, st, _mm256_maskload_ps(s0 + v, mk));
      }
    }
}
#else
static void c3_copies(const c3_copy *cp, int64_t n, const float *src, int64_t ls, float *dst,
                      int64_t ld, int64_t Cg, int64_t sw) {
  for (int64_t ci = 0; ci < Cg; ci++, src += ls, dst += ld)
    for (int64_t e = 0; e < n; e++) {
      const c3_copy *c = cp + e;
      float *d = dst + c->doff;
      for (int32_t q = 0; q < c->len; q++)
        d[q] = q >= c->lo && q < c->hi ? src[c->soff + q * sw] : 0.0f;
    }
}
#endif

/* The copies of the task's columns [p0, p1) (runs of output positions of
 * one output row inside one column block, times the taps) into cp; their
 * count. */
static int64_t c3_plan(const c3_job *j, int64_t p0, int64_t p1, c3_copy *cp) {
  const int64_t nr = j->m.nr, OH = j->out[1], OW = j->out[2], K = j->K;
  const int64_t D = j->in[0], H = j->in[1], W = j->in[2];
  const int64_t kd_n = j->k[0], kh_n = j->k[1], kw_n = j->k[2], sw = j->s[2];
  int64_t n = 0;
  for (int64_t p = p0; p < p1;) {
    int64_t ow0 = p % OW, oh = p / OW % OH, od = p / (OW * OH);
    int64_t col = (p - p0) % nr;
    /* the run: to the row's end, the block's end or p1 */
    int64_t len = OW - ow0;
    if (len > nr - col) len = nr - col;
    if (len > p1 - p) len = p1 - p;
    int64_t blk = (p - p0) / nr * nr * K + col;
    p += len;
    for (int64_t kd = 0; kd < kd_n; kd++) {
      int64_t id = od * j->s[0] - j->pb[0] + kd * j->d[0];
      for (int64_t kh = 0; kh < kh_n; kh++) {
        int64_t ih = oh * j->s[1] - j->pb[1] + kh * j->d[1];
        bool in = id >= 0 && id < D && ih >= 0 && ih < H;
        for (int64_t kw = 0; kw < kw_n; kw++) {
          /* position ow reads iw = ow * sw + off */
          int64_t off = kw * j->d[2] - j->pb[2], lo = 0, hi = 0, first = ow0 * sw + off;
          if (in) {
            lo = first >= 0 ? 0 : (-first + sw - 1) / sw;
            hi = W - first <= 0 ? 0 : (W - first - 1) / sw + 1;
            if (lo > len) lo = len;
            if (hi > len) hi = len;
            if (hi < lo) hi = lo;
          }
          c3_copy *c = cp + n++;
          c->soff = hi > lo ? (id * H + ih) * W + first : 0;
          c->doff = blk + ((kd * kh_n + kh) * kw_n + kw) * nr;
          c->lo = (int32_t)lo, c->hi = (int32_t)hi, c->len = (int32_t)len, c->pad = 0;
        }
      }
    }
  }
  return n;
}

/* Copies of a task at most: runs (a row or a block boundary each) x taps. */
static int64_t c3_plan_max(const c3_job *j) {
  int64_t runs = j->width / j->m.nr + j->width / j->out[2] + 2;
  return runs * j->k_n;
}

/* The task's columns [p0, p1) of X[n, g]'s column matrix into dst in
 * blocks of nr (zero past p1). */
static void c3_pack(const c3_job *j, const float *xg, int64_t p0, int64_t p1, float *dst,
                    c3_copy *cp) {
  const int64_t nr = j->m.nr, K = j->K;
  int64_t nb = (p1 - p0 + nr - 1) / nr;
  /* zero the tail of the last block: its columns feed only masked lanes */
  int64_t tail = nb * nr - (p1 - p0);
  if (tail)
    for (int64_t k = 0; k < K; k++)
      memset(dst + (nb - 1) * nr * K + k * nr + nr - tail, 0, sizeof(float) * (size_t)tail);
  int64_t n = c3_plan(j, p0, p1, cp);
  c3_copies(cp, n, xg, j->in_n, dst, j->k_n * nr, j->Cg, j->s[2]);
}

static void c3_task(void *arg, int64_t t, int tid) {
  const c3_job *j = arg;
  int64_t ri = t % j->ranges, ng = t / j->ranges, n = ng / j->G, g = ng % j->G;
  int64_t p0 = ri * j->width, p1 = p0 + j->width < j->out_n ? p0 + j->width : j->out_n;
  if (p0 >= p1) return;
  float *pk = j->scratch + (int64_t)tid * j->slot;
  c3_pack(j, j->x + (n * j->C + g * j->Cg) * j->in_n, p0, p1, pk,
          (c3_copy *)(pk + j->K * j->width));
  nat_mm m = j->m;
  int64_t y0 = (n * j->M + g * j->Mg) * j->out_n + p0;
  m.a = j->w + g * j->Mg * j->K;
  m.b = pk;
  m.row_bias = j->b ? j->b + g * j->Mg : NULL;
  m.c = j->y + y0;
  m.z = j->z ? j->z + y0 : NULL;
  m.N = p1 - p0;
  nat_mm_run(&m, 0, j->Mg, 0, p1 - p0);
  if (j->post.kind != AIT_ACT_NONE)
    for (int64_t i = 0; i < j->Mg; i++)
      nat_act_f32(&j->post, m.c + i * j->out_n, p1 - p0);
}

/* ---- stride 1 in H and W, wide rows: no packing ----------------------------
 *
 * Each output row (n, od, oh) of a group is a sum over taps (and chunks of
 * input channels) of products W_t [Mg][Cg] . X_t [Cg][OW] whose B rows are
 * read as stored from a padded copy of X[n, g] laid out [D][Hp][Cg][Lq]:
 * tap (kd, kh, kw) of row oh starts at ((id * Hp + oh + kh dh) Cg) Lq + kw dw
 * and its channels follow at stride Lq, so one copy of X (zero borders) is
 * the whole column matrix. The tiles write Y's row; a later product adds
 * the earlier ones as its residual z = C (the tiles load each vector of z
 * before they store the same vector of C), the first one adds the bias and
 * FusedConv's Z, the last one clamps. A product's reduction stays within
 * one of the tiles' chunks (kc), so no partial sums pass through C. The
 * packing took 16-21% of r3d_18's time; this path runs where a row fills
 * at least two vectors at 80% of its lanes (r3d_18's first two stages). */
typedef struct c3d_job {
  const c3_job *j;
  float *xp;       /* [N G][D][Hp][Cg][Lq] */
  const float *wt; /* [G][tap][Mg][Cg] */
  int64_t Hp, Lq, kc, bands, rows;
} c3d_job;

/* Input depth slice t % D of image-group t / D into the padded copy. */
static void c3d_pad_task(void *arg, int64_t t, int tid) {
  const c3d_job *d = arg;
  const c3_job *j = d->j;
  (void)tid;
  int64_t D = j->in[0], H = j->in[1], W = j->in[2], id = t % D, ng = t / D;
  int64_t n = ng / j->G, g = ng % j->G, pt = j->pb[1], pl = j->pb[2];
  const float *x = j->x + (n * j->C + g * j->Cg) * j->in_n + id * H * W;
  float *dst = d->xp + (ng * D + id) * d->Hp * j->Cg * d->Lq;
  for (int64_t h = 0; h < d->Hp; h++)
    for (int64_t ci = 0; ci < j->Cg; ci++) {
      float *row = dst + (h * j->Cg + ci) * d->Lq;
      int64_t ih = h - pt;
      if (ih < 0 || ih >= H) {
        memset(row, 0, sizeof(float) * (size_t)d->Lq);
        continue;
      }
      memset(row, 0, sizeof(float) * (size_t)pl);
      memcpy(row + pl, x + ci * j->in_n + ih * W, sizeof(float) * (size_t)W);
      memset(row + pl + W, 0, sizeof(float) * (size_t)(d->Lq - pl - W));
    }
}

/* Output rows of band t % bands of (image-group, od) t / bands. */
static void c3d_task(void *arg, int64_t t, int tid) {
  const c3d_job *d = arg;
  const c3_job *j = d->j;
  (void)tid;
  int64_t OD = j->out[0], OH = j->out[1], OW = j->out[2], Cg = j->Cg, Mg = j->Mg;
  int64_t band = t % d->bands, od = t / d->bands % OD, ng = t / (d->bands * OD);
  int64_t n = ng / j->G, g = ng % j->G;
  int64_t oh0 = band * d->rows, oh1 = oh0 + d->rows < OH ? oh0 + d->rows : OH;
  const float *xp = d->xp + ng * j->in[0] * d->Hp * Cg * d->Lq;
  const float *wt = d->wt + g * j->k_n * Mg * Cg;
  int64_t yo = (n * j->M + g * Mg) * j->out_n;
  for (int64_t oh = oh0; oh < oh1; oh++) {
    nat_mm m = j->m;
    m.lda = Cg, m.ldb = d->Lq, m.ldc = j->out_n, m.ldz = j->out_n, m.N = OW;
    float *c = j->y + yo + (od * OH + oh) * OW;
    bool first = true;
    /* the last product: the last valid depth tap's last channel chunk */
    int64_t kd_last = -1;
    for (int64_t kd = 0; kd < j->k[0]; kd++) {
      int64_t id = od * j->s[0] - j->pb[0] + kd * j->d[0];
      if (id >= 0 && id < j->in[0]) kd_last = kd;
    }
    for (int64_t kd = 0; kd <= kd_last; kd++) {
      int64_t id = od * j->s[0] - j->pb[0] + kd * j->d[0];
      if (id < 0 || id >= j->in[0]) continue;
      for (int64_t kh = 0; kh < j->k[1]; kh++)
        for (int64_t kw = 0; kw < j->k[2]; kw++) {
          int64_t tap = (kd * j->k[1] + kh) * j->k[2] + kw;
          const float *b = xp + ((id * d->Hp + oh + kh * j->d[1]) * Cg) * d->Lq + kw * j->d[2];
          for (int64_t c0 = 0; c0 < Cg; c0 += d->kc) {
            bool last = kd == kd_last && kh == j->k[1] - 1 && kw == j->k[2] - 1 && c0 + d->kc >= Cg;
            m.K = m.kc = Cg - c0 < d->kc ? Cg - c0 : d->kc;
            m.a = wt + tap * Mg * Cg + c0;
            m.b = b + c0 * d->Lq;
            m.c = c;
            m.row_bias = first && j->b ? j->b + g * Mg : NULL;
            m.z = first ? (j->z ? j->z + yo + (od * OH + oh) * OW : NULL) : c;
            m.lo = last ? j->m.lo : -INFINITY;
            m.hi = last ? j->m.hi : INFINITY;
            m.gelu = last && j->m.gelu;
            nat_mm_run(&m, 0, Mg, 0, OW);
            first = false;
          }
        }
    }
    if (j->post.kind != AIT_ACT_NONE)
      for (int64_t i = 0; i < Mg; i++)
        nat_act_f32(&j->post, c + i * j->out_n, OW);
  }
}

/* Whether the direct path runs j: stride 1 in H and W, rows of at least
 * two vectors that use 80% of their lanes, every output slice with a
 * depth tap inside the input. */
static bool c3d_fits(const c3_job *j, int lanes) {
  int64_t OW = j->out[2], vecs = (OW + lanes - 1) / lanes;
  if (j->s[1] != 1 || j->s[2] != 1 || vecs < 2 || 5 * OW < 4 * vecs * lanes) return false;
  for (int64_t od = 0; od < j->out[0]; od++) {
    bool any = false;
    for (int64_t kd = 0; kd < j->k[0]; kd++) {
      int64_t id = od * j->s[0] - j->pb[0] + kd * j->d[0];
      any |= id >= 0 && id < j->in[0];
    }
    if (!any) return false;
  }
  return true;
}

static ait_status c3d_run(nat_run *r, c3_job *j, bool w_const, int threads) {
  c3d_job d;
  memset(&d, 0, sizeof d);
  d.j = j;
  /* the padded rows: every tap of every output row inside (stride 1) */
  d.Hp = j->out[1] + (j->k[1] - 1) * j->d[1];
  d.Lq = j->out[2] + (j->k[2] - 1) * j->d[2];
  if (d.Hp < j->pb[1] + j->in[1]) d.Hp = j->pb[1] + j->in[1];
  if (d.Lq < j->pb[2] + j->in[2]) d.Lq = j->pb[2] + j->in[2];
  d.kc = j->m.kc < j->Cg ? j->m.kc : j->Cg;
  int64_t taps = j->k_n, wn = j->G * taps * j->Mg * j->Cg;
  int64_t key[4] = {j->M, j->K, 3 << 8 | j->m.level, j->G};
  /* one nat_scratch: each call hands out the same memory */
  int64_t per = j->N * j->G, D = j->in[0], xn = per * D * d.Hp * j->Cg * d.Lq;
  float *scratch = nat_scratch(r, (int64_t)sizeof(float) * (xn + (w_const ? 0 : wn)));
  if (!scratch) return AIT_E_NOMEM;
  d.xp = scratch;
  bool fresh = true;
  float *wt = w_const ? nat_node_pack(r, NAT_DATA_CONV, key, sizeof(float) * (size_t)wn, &fresh)
                      : scratch + xn;
  if (!wt) return AIT_E_NOMEM;
  if (fresh)
    for (int64_t g = 0; g < j->G; g++)
      for (int64_t t = 0; t < taps; t++)
        for (int64_t mm = 0; mm < j->Mg; mm++)
          for (int64_t ci = 0; ci < j->Cg; ci++)
            wt[((g * taps + t) * j->Mg + mm) * j->Cg + ci] =
                j->w[((g * j->Mg + mm) * j->Cg + ci) * taps + t];
  d.wt = wt;
  nat_pool *pool = threads > 1 ? nat_run_pool(r) : NULL;
  nat_pool_run(pool, per * D, c3d_pad_task, &d);
  /* bands of output rows where slices leave threads idle */
  int64_t slices = per * j->out[0];
  d.bands = slices >= 2 * threads ? 1 : (2 * threads + slices - 1) / slices;
  if (d.bands > j->out[1]) d.bands = j->out[1];
  d.rows = (j->out[1] + d.bands - 1) / d.bands;
  d.bands = (j->out[1] + d.rows - 1) / d.rows;
  nat_pool_run(pool, slices * d.bands, c3d_task, &d);
  return AIT_OK;
}

static _Atomic long long runs, direct_runs;
long long nat_conv3d_runs(void) { return runs; }
long long nat_conv3d_direct_runs(void) { return direct_runs; }

ait_status nat_conv3d(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  const ait_tensor *X = in[0], *W = n_in > 1 ? in[1] : NULL, *B = n_in > 2 ? in[2] : NULL;
  const ait_tensor *Z = n_in > 3 ? in[3] : NULL;
  int level = nat_isa();
  if (!X || !W || X->kind != AIT_KIND_TENSOR || W->kind != AIT_KIND_TENSOR ||
      X->dtype != AIT_FLOAT32 || W->dtype != AIT_FLOAT32 || X->rank != 5 || W->rank != 5 ||
      !nat_mm_available(level))
    return AIT_E_UNSUPPORTED;
  c3_job j;
  memset(&j, 0, sizeof j);
  j.G = ait_attr_int(n, "group", 1);
  j.N = X->dims[0], j.C = X->dims[1], j.M = W->dims[0];
  if (j.G < 1 || j.C % j.G || j.M % j.G || W->dims[1] != j.C / j.G) return AIT_E_UNSUPPORTED;
  j.Cg = j.C / j.G, j.Mg = j.M / j.G;
  nn_win w;
  if (nn_win_conv(n, 3, X->dims + 2, W->dims + 2, false, true, &w) != AIT_OK) {
    ait_err_clear();
    return AIT_E_UNSUPPORTED;
  }
  for (int i = 0; i < 3; i++) {
    j.in[i] = w.in[i], j.out[i] = w.out[i], j.k[i] = w.k[i];
    j.s[i] = w.s[i], j.d[i] = w.d[i], j.pb[i] = w.pb[i];
    if (j.out[i] < 1 || j.k[i] < 1 || j.s[i] < 1 || j.d[i] < 1) return AIT_E_UNSUPPORTED;
  }
  j.in_n = nn_win_in_numel(&w), j.out_n = nn_win_out_numel(&w);
  j.k_n = j.k[0] * j.k[1] * j.k[2];
  j.K = j.Cg * j.k_n;
  /* depthwise and tiny products stay on native_conv.c's direct loops */
  if (j.Cg < 2 || (double)j.Mg * (double)j.K < 4096) return AIT_E_UNSUPPORTED;
  if (B && (B->kind != AIT_KIND_TENSOR || B->dtype != AIT_FLOAT32 || ait_tensor_numel(B) != j.M))
    return AIT_E_UNSUPPORTED;
  int64_t od[5] = {j.N, j.M, j.out[0], j.out[1], j.out[2]};
  if (Z && (Z->kind != AIT_KIND_TENSOR || Z->dtype != AIT_FLOAT32 || Z->rank != 5 ||
            memcmp(Z->dims, od, sizeof od)))
    return AIT_E_UNSUPPORTED;
  ait_act act;
  if (ait_act_parse(n, &act) != AIT_OK) {
    ait_err_clear();
    return AIT_E_UNSUPPORTED;
  }
  ait_tensor *Y;
  AIT_TRY(nat_output(r, 0, AIT_FLOAT32, 5, od, &Y));
  j.x = X->data, j.w = W->data, j.b = B ? B->data : NULL, j.z = Z ? Z->data : NULL;
  j.y = Y->data;
  float lo = -INFINITY, hi = INFINITY;
  bool gelu = false;
  j.post = act;
  if (act.kind == AIT_ACT_RELU) {
    lo = 0.0f, j.post.kind = AIT_ACT_NONE;
  } else if (act.kind == AIT_ACT_CLIP) {
    lo = act.p[0], hi = act.p[1], j.post.kind = AIT_ACT_NONE;
  } else if (act.kind == AIT_ACT_GELU) {
    gelu = true, j.post.kind = AIT_ACT_NONE;
  }
  int threads = nat_run_threads(r);
  double macs = (double)j.N * (double)j.M * (double)j.out_n * (double)j.K;
  if (threads < 1 || macs < NAT_PAR_MIN_MACS) threads = 1;
  /* the direct path: the tiles sized for one output row, a reduction of
   * Cg (its chunk kc caps each product's) */
  nat_mm_init(&j.m, level, j.Mg, j.out[2], j.Cg);
  j.m.lo = lo, j.m.hi = hi, j.m.gelu = gelu;
  if (c3d_fits(&j, level == NAT_ISA_AVX512 ? 16 : 8)) {
    AIT_TRY(c3d_run(r, &j, nat_input_is_const(r, 1), threads));
    runs++;
    direct_runs++;
    return AIT_OK;
  }
  /* ranges of output positions: the packed block about C3_TASK_BYTES, at
   * least 4 column blocks, and two tasks a thread where there are few */
  memset(&j.m, 0, sizeof j.m);
  nat_mm_init(&j.m, level, j.Mg, j.out_n, j.K);
  const int64_t nr = j.m.nr;
  j.m.lda = j.K, j.m.ldb = 0, j.m.ldc = j.out_n, j.m.ldz = j.out_n;
  j.m.lo = lo, j.m.hi = hi, j.m.gelu = gelu;
  int64_t width = C3_TASK_BYTES / (4 * j.K) / nr * nr;
  if (width < 4 * nr) width = 4 * nr;
  int64_t want = 2 * threads, per = j.N * j.G;
  if (per < want) {
    int64_t cap =
        ((j.out_n + (want + per - 1) / per - 1) / ((want + per - 1) / per) + nr - 1) / nr * nr;
    if (cap < width) width = cap;
  }
  int64_t full = (j.out_n + nr - 1) / nr * nr;
  if (width > full) width = full;
  j.width = width;
  j.ranges = (j.out_n + width - 1) / width;
  int slots = threads > 1 ? nat_pool_threads(nat_run_pool(r)) : 1;
  j.slot =
      (j.K * width + c3_plan_max(&j) * (int64_t)(sizeof(c3_copy) / sizeof(float)) + 15) / 16 * 16;
  j.scratch = nat_scratch(r, (int64_t)sizeof(float) * slots * j.slot);
  if (!j.scratch) return AIT_E_NOMEM;
  nat_pool_run(threads > 1 ? nat_run_pool(r) : NULL, per * j.ranges, c3_task, &j);
  runs++;
  return AIT_OK;
}
