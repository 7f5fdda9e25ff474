/* 1-D convolutions of one group (Conv / FusedConv over [N, C, L]: audio
 * front-ends such as wav2vec2's, byte and text CNNs) as products on
 * native_mm's register tiles:
 *   Y[n] [M][T] = W [M][C k] . col(X[n]) [C k][T]  (+ bias per row, + Z, act)
 * W is A, read as stored; the column matrix is B, packed straight from X in
 * the tiles' layout (column blocks of nr output positions, K x nr each), a
 * segment of output positions at a time, so no im2col matrix is built and
 * then packed again. Packing costs one copy per C k x T element against
 * M multiply-adds each. The output is NCW as stored. Anything else (other
 * groups, ranks, dtypes, the portable level, ConvTranspose) goes to
 * native_conv.c's kernels. */
#include <math.h>
#include <string.h>

#include "backends/native/native.h"
#include "backends/native/native_mm.h"
#include "ops/nn_impl.h"

/* Output positions packed and multiplied at a time: the packed block is
 * K x SEG floats (1.5 MB at K = 768), read from L2/L3 by every row tile. */
#define SEG 512

typedef struct c1_job {
  const float *x; /* X[n]: [C][L] */
  int64_t C, L, k, s, d, pb, K, T;
  int64_t t0, nr; /* the segment's first output position; tile width */
  float *pk;      /* packed columns of the segment */
} c1_job;

/* dst[c] = src[2 c] for c < n (the stride-2 layers' columns): pairs of
 * 8-float loads, their even lanes shuffled together. The conv runs only at
 * AVX2 and above (nat_mm_available), so AVX2 is there. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
__attribute__((target("avx2"))) static void gather2(float *dst, const float *src, int64_t n) {
  int64_t c = 0;
  for (; c + 8 < n; c += 8) { /* reads src[2c .. 2c + 15]: within 2 (n - 1) */
    __m256 a = _mm256_loadu_ps(src + 2 * c), b = _mm256_loadu_ps(src + 2 * c + 8);
    __m256 e = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)); /* a0 a2 b0 b2 | a4 a6 b4 b6 */
    _mm256_storeu_ps(dst + c, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), 0xd8)));
  }
  for (; c < n; c++)
    dst[c] = src[2 * c];
}
#define HAVE_GATHER2 1
#endif

/* Column block b of the segment: K x nr, row ci * k + kk, column t. */
static void pack_task(void *arg, int64_t b, int tid) {
  const c1_job *j = arg;
  (void)tid;
  float *dst = j->pk + b * j->nr * j->K;
  int64_t t0 = j->t0 + b * j->nr, nc = j->T - t0 < j->nr ? j->T - t0 : j->nr;
  for (int64_t ci = 0; ci < j->C; ci++) {
    const float *xc = j->x + ci * j->L;
    for (int64_t kk = 0; kk < j->k; kk++) {
      float *row = dst + (ci * j->k + kk) * j->nr;
      int64_t off = kk * j->d - j->pb; /* position t reads xc[t * s + off] */
      int64_t lo, hi;                  /* columns c whose position lies inside X */
      int64_t first = t0 * j->s + off;
      lo = first >= 0 ? 0 : (-first + j->s - 1) / j->s;
      hi = j->L - first <= 0 ? 0 : (j->L - first - 1) / j->s + 1;
      if (lo > nc) lo = nc;
      if (hi > nc) hi = nc;
      if (hi < lo) hi = lo;
      for (int64_t c = 0; c < lo; c++)
        row[c] = 0.0f;
      if (j->s == 1) memcpy(row + lo, xc + first + lo, sizeof(float) * (size_t)(hi - lo));
#ifdef HAVE_GATHER2
      else if (j->s == 2)
        gather2(row + lo, xc + first + 2 * lo, hi - lo);
#endif
      else
        for (int64_t c = lo; c < hi; c++)
          row[c] = xc[first + c * j->s];
      for (int64_t c = hi; c < j->nr; c++)
        row[c] = 0.0f;
    }
  }
}

static _Atomic long long runs;
long long nat_mm_conv1d_runs(void) { return runs; }

/* The node on the tiles; AIT_E_UNSUPPORTED (nothing done) where it does
 * not apply. */
static ait_status conv1d(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  const ait_tensor *X = in[0], *W = n_in > 1 ? in[1] : NULL, *B = n_in > 2 ? in[2] : NULL;
  const ait_tensor *Z = n_in > 3 ? in[3] : NULL;
  int level = nat_isa();
  if (!X || !W || X->kind != AIT_KIND_TENSOR || W->kind != AIT_KIND_TENSOR ||
      X->dtype != AIT_FLOAT32 || W->dtype != AIT_FLOAT32 || X->rank != 3 || W->rank != 3 ||
      ait_attr_int(n, "group", 1) != 1 || W->dims[1] != X->dims[1] || !nat_mm_available(level))
    return AIT_E_UNSUPPORTED;
  int64_t N = X->dims[0], C = X->dims[1], L = X->dims[2], M = W->dims[0], k = W->dims[2];
  nn_win w;
  if (nn_win_conv(n, 1, X->dims + 2, W->dims + 2, false, true, &w) != AIT_OK) {
    ait_err_clear();
    return AIT_E_UNSUPPORTED;
  }
  int64_t T = w.out[0], K = C * k;
  if (T < 1 || M < 1 || K < 1 || (double)M * (double)K < 4096) return AIT_E_UNSUPPORTED;
  if (B && (B->kind != AIT_KIND_TENSOR || B->dtype != AIT_FLOAT32 || ait_tensor_numel(B) != M))
    return AIT_E_UNSUPPORTED;
  if (Z && (Z->kind != AIT_KIND_TENSOR || Z->dtype != AIT_FLOAT32 || Z->rank != 3 ||
            Z->dims[0] != N || Z->dims[1] != M || Z->dims[2] != T))
    return AIT_E_UNSUPPORTED;
  ait_act act;
  if (ait_act_parse(n, &act) != AIT_OK) {
    ait_err_clear();
    return AIT_E_UNSUPPORTED;
  }
  nat_mm m;
  memset(&m, 0, sizeof m);
  int64_t seg = T < SEG ? T : SEG;
  nat_mm_init(&m, level, M, seg, K);
  seg = (seg + m.nr - 1) / m.nr * m.nr;
  float *pk = nat_scratch(r, (int64_t)sizeof(float) * K * seg);
  if (!pk) return AIT_E_NOMEM;
  const int64_t od[3] = {N, M, T};
  ait_tensor *Y;
  AIT_TRY(nat_output(r, 0, AIT_FLOAT32, 3, od, &Y));
  m.a = W->data, m.lda = K, m.b = pk, m.row_bias = B ? B->data : NULL;
  m.lo = -INFINITY, m.hi = INFINITY, m.ldc = T, m.ldz = T;
  ait_act post = act;
  if (act.kind == AIT_ACT_RELU) {
    m.lo = 0.0f, post.kind = AIT_ACT_NONE;
  } else if (act.kind == AIT_ACT_CLIP) {
    m.lo = act.p[0], m.hi = act.p[1], post.kind = AIT_ACT_NONE;
  } else if (act.kind == AIT_ACT_GELU) {
    m.gelu = true, post.kind = AIT_ACT_NONE;
  }
  c1_job j = {NULL, C, L, k, w.s[0], w.d[0], w.pb[0], K, T, 0, m.nr, pk};
  for (int64_t b = 0; b < N; b++) {
    j.x = (const float *)X->data + b * C * L;
    for (int64_t t0 = 0; t0 < T; t0 += seg) {
      int64_t nc = T - t0 < seg ? T - t0 : seg;
      j.t0 = t0;
      int64_t blocks = (nc + m.nr - 1) / m.nr;
      bool par = nat_run_threads(r) > 1 && (double)K * (double)nc >= 65536;
      nat_pool_run(par ? nat_run_pool(r) : NULL, blocks, pack_task, &j);
      m.N = nc;
      m.c = (float *)Y->data + b * M * T + t0;
      m.z = Z ? (const float *)Z->data + b * M * T + t0 : NULL;
      nat_mm_pool(r, &m, &post);
    }
  }
  runs++;
  return AIT_OK;
}

ait_status nat_k_conv_seq(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  ait_status st = conv1d(r, n, in, n_in);
  if (st == AIT_E_UNSUPPORTED) st = nat_conv3d(r, n, in, n_in);
  return st == AIT_E_UNSUPPORTED ? nat_k_conv(r, n, in, n_in) : st;
}
