/* Depthwise Conv (group == C_in, any channel multiplier M / C_in), 1-D to
 * 3-D, any kernel, stride, dilation and pads, in float32.
 *
 * Per (image, input channel) task, the input plane is copied once into
 * zero-padded phase planes: phase (a, b) holds padded rows a, a + sh, ...
 * and columns b, b + sw, ..., each of Lq columns. Then every tap of every
 * output pixel is a read at a fixed offset from the pixel's index on a
 * virtual output grid of width Lq, whatever the stride or dilation, so an
 * output plane is one flat loop of multiply-adds per tap (vectors of
 * outputs, taps accumulated in registers), with no border cases; the Lq -
 * OW virtual columns of each row are dropped when the plane is written out
 * with the residual and the activation. Depth taps outside the input are
 * skipped. The multiply-add loop has AVX-512, AVX2+FMA and portable
 * versions, chosen by nat_isa(). */
#include <string.h>

#include "backends/native/native_conv.h"
#include "backends/native/native_isa.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define DW_X86 1
#endif

/* The vector loops take 64 outputs a step (4 accumulators of 16 lanes),
 * then 16 (one); the virtual plane is rounded up to DW_STEP outputs. */
#define DW_STEP 16

/* y[f] = bias + sum_t tw[t] * base[toff[t] + f] for f in [0, F), F a
 * multiple of DW_STEP. */
typedef void (*dw_sum_fn)(const float *base, const int64_t *toff, const float *tw, int64_t T,
                          float bias, float *y, int64_t F);

static void dw_sum_portable(const float *base, const int64_t *toff, const float *tw, int64_t T,
                            float bias, float *y, int64_t F) {
  for (int64_t f = 0; f < F; f++)
    y[f] = bias;
  for (int64_t t = 0; t < T; t++) {
    const float *s = base + toff[t];
    float w = tw[t];
    for (int64_t f = 0; f < F; f++)
      y[f] += w * s[f];
  }
}

#ifdef DW_X86
__attribute__((target("avx2,fma"))) static void dw_sum_avx2(const float *base, const int64_t *toff,
                                                            const float *tw, int64_t T, float bias,
                                                            float *y, int64_t F) {
  int64_t f = 0;
  for (; f + 32 <= F; f += 32) {
    __m256 a0 = _mm256_set1_ps(bias), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t t = 0; t < T; t++) {
      const float *s = base + toff[t] + f;
      __m256 w = _mm256_set1_ps(tw[t]);
      a0 = _mm256_fmadd_ps(w, _mm256_loadu_ps(s), a0);
      a1 = _mm256_fmadd_ps(w, _mm256_loadu_ps(s + 8), a1);
      a2 = _mm256_fmadd_ps(w, _mm256_loadu_ps(s + 16), a2);
      a3 = _mm256_fmadd_ps(w, _mm256_loadu_ps(s + 24), a3);
    }
    _mm256_storeu_ps(y + f, a0);
    _mm256_storeu_ps(y + f + 8, a1);
    _mm256_storeu_ps(y + f + 16, a2);
    _mm256_storeu_ps(y + f + 24, a3);
  }
  for (; f < F; f += 8) {
    __m256 a0 = _mm256_set1_ps(bias);
    for (int64_t t = 0; t < T; t++)
      a0 = _mm256_fmadd_ps(_mm256_set1_ps(tw[t]), _mm256_loadu_ps(base + toff[t] + f), a0);
    _mm256_storeu_ps(y + f, a0);
  }
}

__attribute__((target("avx512f,fma"))) static void dw_sum_avx512(const float *base,
                                                                 const int64_t *toff,
                                                                 const float *tw, int64_t T,
                                                                 float bias, float *y, int64_t F) {
  int64_t f = 0;
  for (; f + 64 <= F; f += 64) {
    __m512 a0 = _mm512_set1_ps(bias), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t t = 0; t < T; t++) {
      const float *s = base + toff[t] + f;
      __m512 w = _mm512_set1_ps(tw[t]);
      a0 = _mm512_fmadd_ps(w, _mm512_loadu_ps(s), a0);
      a1 = _mm512_fmadd_ps(w, _mm512_loadu_ps(s + 16), a1);
      a2 = _mm512_fmadd_ps(w, _mm512_loadu_ps(s + 32), a2);
      a3 = _mm512_fmadd_ps(w, _mm512_loadu_ps(s + 48), a3);
    }
    _mm512_storeu_ps(y + f, a0);
    _mm512_storeu_ps(y + f + 16, a1);
    _mm512_storeu_ps(y + f + 32, a2);
    _mm512_storeu_ps(y + f + 48, a3);
  }
  for (; f < F; f += 16) {
    __m512 a0 = _mm512_set1_ps(bias);
    for (int64_t t = 0; t < T; t++)
      a0 = _mm512_fmadd_ps(_mm512_set1_ps(tw[t]), _mm512_loadu_ps(base + toff[t] + f), a0);
    _mm512_storeu_ps(y + f, a0);
  }
}
#endif

static dw_sum_fn dw_sum_for(int isa) {
#ifdef DW_X86
  if (isa >= NAT_ISA_AVX512) return dw_sum_avx512;
  if (isa >= NAT_ISA_AVX2) return dw_sum_avx2;
#endif
  (void)isa;
  return dw_sum_portable;
}

typedef struct dw_job {
  const nat_cv *c;
  dw_sum_fn sum;
  nat_cv_grid q;
  int64_t slot; /* floats of one thread's scratch */
  int64_t nf;   /* grid outputs computed: up to the last row's OW-th column */
  float *scratch;
} dw_job;

void nat_cv_phases(const nat_cv *c, const nat_cv_grid *q, const float *x, float *buf) {
  const int64_t sh = c->s[1], sw = c->s[2], H = c->in[1], W = c->in[2];
  for (int64_t id = 0; id < c->in[0]; id++)
    for (int64_t a = 0; a < sh; a++)
      for (int64_t b = 0; b < sw; b++) {
        float *p = buf + ((id * sh + a) * sw + b) * q->PS;
        int64_t lo, hi;
        nat_cv_range(q->Lq, sw, b - c->pb[2], W, &lo, &hi);
        for (int64_t i = 0; i < q->Hq; i++, p += q->Lq) {
          int64_t ih = i * sh + a - c->pb[1];
          if (ih < 0 || ih >= H) {
            memset(p, 0, sizeof(float) * (size_t)q->Lq);
            continue;
          }
          const float *src = x + (id * H + ih) * W + b - c->pb[2];
          for (int64_t k = 0; k < lo; k++)
            p[k] = 0.0f;
          if (sw == 1)
            memcpy(p + lo, src + lo, sizeof(float) * (size_t)(hi - lo));
          else
            for (int64_t k = lo; k < hi; k++)
              p[k] = src[k * sw];
          for (int64_t k = hi; k < q->Lq; k++)
            p[k] = 0.0f;
        }
        memset(p, 0, sizeof(float) * (size_t)(q->PS - q->Hq * q->Lq));
      }
}

void nat_cv_grid_of(const nat_cv *c, int64_t step, nat_cv_grid *q) {
  /* the virtual grid: OW columns plus the widest tap offset */
  q->Lq = c->out[2] + (c->k[2] - 1) * c->d[2] / c->s[2];
  q->Hq = c->out[1] + (c->k[1] - 1) * c->d[1] / c->s[1];
  q->F = (c->out[1] * q->Lq + step - 1) / step * step;
  /* reads reach F - 1 + the largest tap offset < Hq * Lq + step */
  q->PS = ((q->Hq + 1) * q->Lq + step + 15) / 16 * 16;
  q->plane = c->in[0] * c->s[1] * c->s[2] * q->PS;
}

static void dw_task(void *arg, int64_t t, int tid) {
  const dw_job *j = arg;
  const nat_cv *c = j->c;
  int64_t n = t / c->C, ci = t % c->C;
  const int64_t sh = c->s[1], sw = c->s[2], OH = c->out[1], OW = c->out[2];
  const int64_t kd_n = c->k[0], kh_n = c->k[1], kw_n = c->k[2];
  float *buf = j->scratch + (int64_t)tid * j->slot;
  float *acc = buf + j->q.plane;
  float *tw = acc + j->q.F;
  int64_t *toff = (int64_t *)(tw + c->k_n + (c->k_n & 1));
  nat_cv_phases(c, &j->q, c->x + (n * c->C + ci) * c->in_n, buf);
  for (int64_t mm = 0; mm < c->Mg; mm++) {
    int64_t m = ci * c->Mg + mm;
    const float *wm = c->w + m * c->k_n;
    float bias = c->b ? c->b[m] : 0.0f;
    for (int64_t od = 0; od < c->out[0]; od++) {
      int64_t T = 0;
      for (int64_t kd = 0; kd < kd_n; kd++) {
        int64_t id = od * c->s[0] - c->pb[0] + kd * c->d[0];
        if (id < 0 || id >= c->in[0]) continue;
        for (int64_t kh = 0; kh < kh_n; kh++) {
          int64_t dh = kh * c->d[1], a = dh % sh, qh = dh / sh;
          for (int64_t kw = 0; kw < kw_n; kw++) {
            int64_t dw = kw * c->d[2], b = dw % sw, qw = dw / sw;
            toff[T] = ((id * sh + a) * sw + b) * j->q.PS + qh * j->q.Lq + qw;
            tw[T++] = wm[(kd * kh_n + kh) * kw_n + kw];
          }
        }
      }
      j->sum(buf, toff, tw, T, bias, acc, j->nf);
      int64_t y0 = ((n * c->M + m) * c->out[0] + od) * OH * OW;
      float *y = c->y + y0;
      const float *z = c->z ? c->z + y0 : NULL;
      for (int64_t oh = 0; oh < OH; oh++) {
        const float *src = acc + oh * j->q.Lq;
        float *yr = y + oh * OW;
        if (z)
          for (int64_t q = 0; q < OW; q++)
            yr[q] = src[q] + z[oh * OW + q];
        else
          memcpy(yr, src, sizeof(float) * (size_t)OW);
      }
      nat_act_f32(&c->act, y, OH * OW);
    }
  }
}

ait_status nat_conv_depthwise(nat_run *r, const nat_cv *c) {
  dw_job j;
  memset(&j, 0, sizeof j);
  j.c = c;
  j.sum = dw_sum_for(nat_isa());
  nat_cv_grid_of(c, DW_STEP, &j.q);
  /* the last row's reach past its OW outputs is never written out (a 1-D
   * conv of k = 31 and pads 15 on 49 frames: 79 columns for 49) */
  j.nf = ((c->out[1] - 1) * j.q.Lq + c->out[2] + DW_STEP - 1) / DW_STEP * DW_STEP;
  j.slot = j.q.plane + j.q.F + c->k_n + 1 + 2 * c->k_n + 16;
  j.slot = (j.slot + 15) / 16 * 16;
  int64_t tasks = c->N * c->C;
  double work = (double)tasks * (double)c->Mg * (double)c->out_n * (double)c->k_n;
  nat_pool *pool = work < NAT_PAR_MIN_MACS / 4 ? NULL : nat_run_pool(r);
  int slots = nat_pool_threads(pool);
  j.scratch = nat_scratch(r, (int64_t)sizeof(float) * slots * j.slot);
  if (!j.scratch) return AIT_E_NOMEM;
  nat_pool_run(pool, tasks, dw_task, &j);
  return AIT_OK;
}
