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

static _Atomic long long runs;
long long nat_conv3d_runs(void) { return runs; }

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
  nat_mm_init(&j.m, level, j.Mg, j.out_n, j.K);
  const int64_t nr = j.m.nr;
  ait_tensor *Y;
  AIT_TRY(nat_output(r, 0, AIT_FLOAT32, 5, od, &Y));
  j.x = X->data, j.w = W->data, j.b = B ? B->data : NULL, j.z = Z ? Z->data : NULL;
  j.y = Y->data;
  j.m.lda = j.K, j.m.ldb = 0, j.m.ldc = j.out_n, j.m.ldz = j.out_n;
  j.m.lo = -INFINITY, j.m.hi = INFINITY;
  j.post = act;
  if (act.kind == AIT_ACT_RELU) {
    j.m.lo = 0.0f, j.post.kind = AIT_ACT_NONE;
  } else if (act.kind == AIT_ACT_CLIP) {
    j.m.lo = act.p[0], j.m.hi = act.p[1], j.post.kind = AIT_ACT_NONE;
  } else if (act.kind == AIT_ACT_GELU) {
    j.m.gelu = true, j.post.kind = AIT_ACT_NONE;
  }
  /* ranges of output positions: the packed block about C3_TASK_BYTES, at
   * least 4 column blocks, and two tasks a thread where there are few */
  int threads = nat_run_threads(r);
  double macs = (double)j.N * (double)j.M * (double)j.out_n * (double)j.K;
  if (threads < 1 || macs < NAT_PAR_MIN_MACS) threads = 1;
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
