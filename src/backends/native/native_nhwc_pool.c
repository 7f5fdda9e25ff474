/* FusedPoolNhwc (the layout pass's MaxPool / AveragePool in channels-last
 * layout): per output pixel, the window's taps inside the input, each a
 * row of C contiguous floats, so the max or the sum runs along the
 * channels. At the vector levels up to four vectors of channels (32 at
 * AVX2, 64 at AVX-512) stay in registers over all the window's taps and
 * are stored once (the loops below, the portable level's, read and wrote
 * the output row once per tap: SqueezeNet's 3x3 pools were 5% of its run
 * at AVX2). Tasks over output rows. Max as the reference takes it: the first tap, then each
 * tap greater than the running value (NaN kept only when first); averages
 * sum in float and divide by the count (count_include_pad: the taps inside
 * the explicitly padded input), as the reference's double sum up to
 * rounding. */
#include <math.h>
#include <string.h>

#include "backends/native/native.h"
#include "ops/fused_impl.h"
#include "ops/nn_impl.h"

typedef struct pooln_job {
  const float *x;
  float *y;
  nn_win w;
  int64_t C, per_task, rows;
  bool max, include_pad;
  int level; /* NAT_ISA_*: the vector kernels below, or the loops */
} pooln_job;

/* One output pixel's window: taps rows i0..i1 from input row h0 (step d0),
 * columns j0..j1 from w0 (step d1) of image xn (row stride rs, pixel
 * stride C); inv: 1 / count for averages. */
typedef struct pool_win {
  const float *xn;
  int64_t rs, C, h0, d0, i0, i1, w0, d1, j0, j1;
  float inv;
  bool max;
} pool_win;

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "backends/native/native_avx2.h"
#include "backends/native/native_avx512.h"

#define T256 __attribute__((target("avx2,fma")))
#define T512 __attribute__((target("avx512f,avx2,fma")))
#define INL static inline __attribute__((always_inline))

/* nv vectors of channels from c (the last through mask m when tail): the
 * first tap, then the max (x > acc ? x : acc, as the loops: a NaN is kept
 * only where it comes first) or the sum, in tap order, then the store. */
INL T256 void pool_vecs256(const int nv, const bool tail, const pool_win *p, int64_t c, __m256i m,
                           float *y) {
  __m256 acc[4];
  const float *x0 = p->xn + (p->h0 + p->i0 * p->d0) * p->rs + (p->w0 + p->j0 * p->d1) * p->C + c;
#pragma GCC unroll 4
  for (int v = 0; v < 4; v++) /* the first tap */
    acc[v] = v >= nv               ? _mm256_setzero_ps()
             : tail && v == nv - 1 ? _mm256_maskload_ps(x0 + 8 * v, m)
                                   : _mm256_loadu_ps(x0 + 8 * v);
  for (int64_t ki = p->i0; ki < p->i1; ki++) {
    const float *xr = p->xn + (p->h0 + ki * p->d0) * p->rs + c;
    for (int64_t kj = ki == p->i0 ? p->j0 + 1 : p->j0; kj < p->j1; kj++) {
      const float *xp = xr + (p->w0 + kj * p->d1) * p->C;
#pragma GCC unroll 4
      for (int v = 0; v < 4; v++) {
        if (v >= nv) break;
        __m256 x =
            tail && v == nv - 1 ? _mm256_maskload_ps(xp + 8 * v, m) : _mm256_loadu_ps(xp + 8 * v);
        acc[v] = p->max ? _mm256_max_ps(x, acc[v]) : _mm256_add_ps(acc[v], x);
      }
    }
  }
  __m256 inv = _mm256_set1_ps(p->inv);
#pragma GCC unroll 4
  for (int v = 0; v < 4; v++) {
    if (v >= nv) break;
    __m256 o = p->max ? acc[v] : _mm256_mul_ps(acc[v], inv);
    if (tail && v == nv - 1)
      _mm256_maskstore_ps(y + c + 8 * v, m, o);
    else
      _mm256_storeu_ps(y + c + 8 * v, o);
  }
}

static T256 void pool_px256(const pool_win *p, float *y) {
  for (int64_t c = 0; c < p->C; c += 32) {
    int64_t left = p->C - c;
    int nv = left >= 32 ? 4 : (int)((left + 7) / 8);
    bool tail = left < 32 && left % 8;
    __m256i m = nat_tail8(left - 8 * (nv - 1));
    switch (nv * 2 + tail) {
    case 8: pool_vecs256(4, false, p, c, m, y); break;
    case 9: pool_vecs256(4, true, p, c, m, y); break;
    case 6: pool_vecs256(3, false, p, c, m, y); break;
    case 7: pool_vecs256(3, true, p, c, m, y); break;
    case 4: pool_vecs256(2, false, p, c, m, y); break;
    case 5: pool_vecs256(2, true, p, c, m, y); break;
    case 2: pool_vecs256(1, false, p, c, m, y); break;
    default: pool_vecs256(1, true, p, c, m, y); break;
    }
  }
}

/* The AVX-512 twin: sixteen channels a vector, the tail through a mask. */
INL T512 void pool_vecs512(const int nv, const pool_win *p, int64_t c, __mmask16 m, float *y) {
  __m512 acc[4];
  const float *x0 = p->xn + (p->h0 + p->i0 * p->d0) * p->rs + (p->w0 + p->j0 * p->d1) * p->C + c;
#pragma GCC unroll 4
  for (int v = 0; v < 4; v++) /* the first tap */
    acc[v] = v < nv ? _mm512_maskz_loadu_ps(v == nv - 1 ? m : (__mmask16)0xffff, x0 + 16 * v)
                    : _mm512_setzero_ps();
  for (int64_t ki = p->i0; ki < p->i1; ki++) {
    const float *xr = p->xn + (p->h0 + ki * p->d0) * p->rs + c;
    for (int64_t kj = ki == p->i0 ? p->j0 + 1 : p->j0; kj < p->j1; kj++) {
      const float *xp = xr + (p->w0 + kj * p->d1) * p->C;
#pragma GCC unroll 4
      for (int v = 0; v < 4; v++) {
        if (v >= nv) break;
        __m512 x = _mm512_maskz_loadu_ps(v == nv - 1 ? m : (__mmask16)0xffff, xp + 16 * v);
        acc[v] = p->max ? _mm512_max_ps(x, acc[v]) : _mm512_add_ps(acc[v], x);
      }
    }
  }
  __m512 inv = _mm512_set1_ps(p->inv);
#pragma GCC unroll 4
  for (int v = 0; v < 4; v++) {
    if (v >= nv) break;
    __m512 o = p->max ? acc[v] : _mm512_mul_ps(acc[v], inv);
    _mm512_mask_storeu_ps(y + c + 16 * v, v == nv - 1 ? m : (__mmask16)0xffff, o);
  }
}

static T512 void pool_px512(const pool_win *p, float *y) {
  for (int64_t c = 0; c < p->C; c += 64) {
    int64_t left = p->C - c;
    int nv = left >= 64 ? 4 : (int)((left + 15) / 16);
    __mmask16 m = nat_tail16(left - 16 * (nv - 1));
    switch (nv) {
    case 4: pool_vecs512(4, p, c, m, y); break;
    case 3: pool_vecs512(3, p, c, m, y); break;
    case 2: pool_vecs512(2, p, c, m, y); break;
    default: pool_vecs512(1, p, c, m, y); break;
    }
  }
}

#define POOL_VECTORS 1
#else
#define POOL_VECTORS 0
static void pool_px256(const pool_win *p, float *y) {}
static void pool_px512(const pool_win *p, float *y) {}
#endif

NAT_CLONES static void pooln_task(void *arg, int64_t t, int tid) {
  const pooln_job *j = arg;
  const nn_win *w = &j->w;
  int64_t H = w->in[0], W = w->in[1], OH = w->out[0], OW = w->out[1], C = j->C;
  for (int64_t r = t * j->per_task; r < (t + 1) * j->per_task && r < j->rows; r++) {
    int64_t n = r / OH, oh = r % OH, h0 = oh * w->s[0] - w->pb[0];
    int64_t i0 = nn_win_taps_below(h0, w->d[0], w->k[0], 0);
    int64_t i1 = nn_win_taps_below(h0, w->d[0], w->k[0], H);
    int64_t ph = nn_win_taps_below(h0, w->d[0], w->k[0], H + w->pe[0]) -
                 nn_win_taps_below(h0, w->d[0], w->k[0], -w->pb[0]);
    const float *xn = j->x + n * H * W * C;
    for (int64_t ow = 0; ow < OW; ow++) {
      float *y = j->y + (r * OW + ow) * C;
      int64_t w0 = ow * w->s[1] - w->pb[1];
      int64_t j0 = nn_win_taps_below(w0, w->d[1], w->k[1], 0);
      int64_t j1 = nn_win_taps_below(w0, w->d[1], w->k[1], W);
      int64_t pw = nn_win_taps_below(w0, w->d[1], w->k[1], W + w->pe[1]) -
                   nn_win_taps_below(w0, w->d[1], w->k[1], -w->pb[1]);
      int64_t count = (i1 > i0 ? i1 - i0 : 0) * (j1 > j0 ? j1 - j0 : 0);
      if (count == 0) { /* a window wholly in the padding: the reference's values */
        float v =
            j->max ? -INFINITY
                   : (float)(0.0 /
                             (double)(j->include_pad ? (ph > 0 ? ph : 0) * (pw > 0 ? pw : 0) : 0));
        for (int64_t c = 0; c < C; c++)
          y[c] = v;
        continue;
      }
      if (j->level > NAT_ISA_PORTABLE) {
        pool_win p = {
            xn,      W * C,
            C,       h0,
            w->d[0], i0,
            i1,      w0,
            w->d[1], j0,
            j1,      j->max ? 1.0f : (float)(1.0 / (double)(j->include_pad ? ph * pw : count)),
            j->max};
        if (j->level == NAT_ISA_AVX512)
          pool_px512(&p, y);
        else
          pool_px256(&p, y);
        continue;
      }
      bool first = true;
      for (int64_t ki = i0; ki < i1; ki++) {
        const float *xr = xn + (h0 + ki * w->d[0]) * W * C;
        for (int64_t kj = j0; kj < j1; kj++) {
          const float *xp = xr + (w0 + kj * w->d[1]) * C;
          if (first) {
            memcpy(y, xp, sizeof(float) * (size_t)C);
            first = false;
          } else if (j->max) {
            for (int64_t c = 0; c < C; c++)
              y[c] = xp[c] > y[c] ? xp[c] : y[c];
          } else {
            for (int64_t c = 0; c < C; c++)
              y[c] += xp[c];
          }
        }
      }
      if (!j->max) {
        float inv = (float)(1.0 / (double)(j->include_pad ? ph * pw : count));
        for (int64_t c = 0; c < C; c++)
          y[c] *= inv;
      }
    }
  }
}

ait_status nat_k_pool_nhwc(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  const ait_tensor *X = n_in > 0 ? in[0] : NULL;
  ait_node pn;
  if (!X || X->dtype != AIT_FLOAT32 || X->rank != 4 || !ait_fused_pool_node(n, &pn))
    return AIT_E_UNSUPPORTED;
  pooln_job j;
  memset(&j, 0, sizeof j);
  j.max = !strcmp(pn.op_type, "MaxPool");
  j.include_pad = !j.max && ait_attr_int(n, "count_include_pad", 0) != 0;
  j.level = POOL_VECTORS ? nat_nhwc_level() : NAT_ISA_PORTABLE;
  int64_t sp[2] = {X->dims[1], X->dims[2]};
  if (nn_win_conv(&pn, 2, sp, NULL, ait_attr_int(n, "ceil_mode", 0) != 0,
                  nn_pool_has_dilations(&pn), &j.w) != AIT_OK) {
    ait_err_clear();
    return AIT_E_UNSUPPORTED;
  }
  int64_t od[4] = {X->dims[0], j.w.out[0], j.w.out[1], X->dims[3]};
  ait_tensor *Y;
  AIT_TRY(nat_output(r, 0, AIT_FLOAT32, 4, od, &Y));
  j.x = X->data;
  j.y = Y->data;
  j.C = od[3];
  j.rows = od[0] * od[1];
  if (j.rows * od[2] * j.C == 0) return AIT_OK;
  /* rows of at least ~16k floats of output a task */
  j.per_task = nat_chunk(r, j.rows, 16384 / (od[2] * j.C) + 1);
  nat_pool_run(nat_run_pool(r), (j.rows + j.per_task - 1) / j.per_task, pooln_task, &j);
  return AIT_OK;
}
