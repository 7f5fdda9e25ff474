/* Grouped Conv with few channels per group (ResNeXt, RegNet: 4 to 64 in
 * and out per group), 1-D to 3-D, any kernel, stride, dilation and pads.
 *
 * im2col + SGEMM spends as long copying the column matrix as multiplying
 * when a group has 16 output channels (16 multiply-adds per copied value).
 * Here each group's input channels go once into the zero-padded phase
 * planes of native_conv_dw.c, where every tap is a fixed offset on a
 * virtual output grid, and a register tile of MB output channels x 2
 * vectors of outputs accumulates over all taps of all the group's input
 * channels: one load of inputs feeds MB multiply-adds. Weights are packed
 * once per node (nat_node_pack) as [group][channel block][tap][MB], zero
 * past the group's last channel. Tasks: (image, group, channel block, band
 * of output rows), so a group of 2 still fills the pool. AVX-512 (MB 12, 8
 * or 4), AVX2+FMA (MB 6 or 4) and portable (MB 4), chosen by nat_isa() and
 * the group's channel count. */
#include <string.h>

#include "backends/native/native_conv.h"
#include "backends/native/native_isa.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define GRP_X86 1
#endif

/* Outputs of a step of every kernel (2 vectors of 16, 2 steps of 2 x 8). */
#define GRP_STEP 32

/* acc[mm * lda + f - f0] = bias[mm] + sum_t w[t * MB + mm] * base[toff[t] + f]
 * for f in [f0, f0 + nf), nf a multiple of GRP_STEP. */
typedef void (*grp_fn)(const float *base, const int64_t *toff, const float *w, int64_t T,
                       const float *bias, float *acc, int64_t lda, int64_t f0, int64_t nf);

static void grp_portable(const float *base, const int64_t *toff, const float *w, int64_t T,
                         const float *bias, float *acc, int64_t lda, int64_t f0, int64_t nf) {
  for (int mm = 0; mm < 4; mm++) {
    float *a = acc + mm * lda;
    for (int64_t f = 0; f < nf; f++)
      a[f] = bias[mm];
    for (int64_t t = 0; t < T; t++) {
      const float *s = base + toff[t] + f0;
      float wv = w[t * 4 + mm];
      for (int64_t f = 0; f < nf; f++)
        a[f] += wv * s[f];
    }
  }
}

#ifdef GRP_X86
/* One kernel per (target, vector, MB): MB channels x 2 vectors of VL. */
#define GRP_KERNEL(name, tgt, vt, VL, MB, set1, load, fma, store)                                  \
  __attribute__((target(tgt))) static void name(const float *base, const int64_t *toff,            \
                                                const float *w, int64_t T, const float *bias,      \
                                                float *acc, int64_t lda, int64_t f0, int64_t nf) { \
    for (int64_t f = 0; f < nf; f += 2 * VL) {                                                     \
      vt a0[MB], a1[MB];                                                                           \
      for (int mm = 0; mm < MB; mm++)                                                              \
        a0[mm] = a1[mm] = set1(bias[mm]);                                                          \
      for (int64_t t = 0; t < T; t++) {                                                            \
        const float *s = base + toff[t] + f0 + f;                                                  \
        vt x0 = load(s), x1 = load(s + VL);                                                        \
        for (int mm = 0; mm < MB; mm++) {                                                          \
          vt wv = set1(w[t * MB + mm]);                                                            \
          a0[mm] = fma(wv, x0, a0[mm]);                                                            \
          a1[mm] = fma(wv, x1, a1[mm]);                                                            \
        }                                                                                          \
      }                                                                                            \
      for (int mm = 0; mm < MB; mm++) {                                                            \
        store(acc + mm * lda + f, a0[mm]);                                                         \
        store(acc + mm * lda + f + VL, a1[mm]);                                                    \
      }                                                                                            \
    }                                                                                              \
  }
GRP_KERNEL(grp_avx2_4, "avx2,fma", __m256, 8, 4, _mm256_set1_ps, _mm256_loadu_ps, _mm256_fmadd_ps,
           _mm256_storeu_ps)
GRP_KERNEL(grp_avx2_6, "avx2,fma", __m256, 8, 6, _mm256_set1_ps, _mm256_loadu_ps, _mm256_fmadd_ps,
           _mm256_storeu_ps)
GRP_KERNEL(grp_avx512_4, "avx512f,fma", __m512, 16, 4, _mm512_set1_ps, _mm512_loadu_ps,
           _mm512_fmadd_ps, _mm512_storeu_ps)
GRP_KERNEL(grp_avx512_12, "avx512f,fma", __m512, 16, 12, _mm512_set1_ps, _mm512_loadu_ps,
           _mm512_fmadd_ps, _mm512_storeu_ps)
GRP_KERNEL(grp_avx512_8, "avx512f,fma", __m512, 16, 8, _mm512_set1_ps, _mm512_loadu_ps,
           _mm512_fmadd_ps, _mm512_storeu_ps)
#endif

typedef struct grp_job {
  const nat_cv *c;
  grp_fn fn;
  int MB;
  nat_cv_grid q;
  int64_t nb, bands, rows; /* channel blocks a group, bands, output rows a band */
  int64_t T;               /* taps: Cg x kernel */
  const float *wp;         /* packed weights */
  int64_t slot;            /* floats of one thread's scratch */
  float *scratch;
} grp_job;

static void grp_task(void *arg, int64_t t, int tid) {
  const grp_job *j = arg;
  const nat_cv *c = j->c;
  const nat_cv_grid *q = &j->q;
  int64_t band = t % j->bands, blk = (t / j->bands) % j->nb, ng = t / (j->bands * j->nb);
  int64_t n = ng / c->group, g = ng % c->group;
  int64_t oh0 = band * j->rows, oh1 = oh0 + j->rows < c->out[1] ? oh0 + j->rows : c->out[1];
  if (oh0 >= oh1) return;
  const int MB = j->MB;
  const int64_t sh = c->s[1], sw = c->s[2], OH = c->out[1], OW = c->out[2];
  /* the grid's last row ends at its OW-th column: the tap reach past it
   * (Lq - OW columns, 30 of wav2vec2's 79 for its k = 31 positional conv
   * on 49 frames) would be computed and dropped */
  const int64_t f0 = oh0 * q->Lq,
                nf = ((oh1 - oh0 - 1) * q->Lq + OW + GRP_STEP - 1) / GRP_STEP * GRP_STEP;
  float *buf = j->scratch + (int64_t)tid * j->slot;
  float *zero = buf + c->Cg * q->plane; /* PS zeros: depth taps outside the input */
  float *acc = zero + q->PS;            /* MB x nf */
  int64_t *toff = (int64_t *)(acc + MB * nf);
  for (int64_t ci = 0; ci < c->Cg; ci++)
    nat_cv_phases(c, q, c->x + (n * c->C + g * c->Cg + ci) * c->in_n, buf + ci * q->plane);
  memset(zero, 0, sizeof(float) * (size_t)q->PS);
  int64_t m0 = blk * MB, mn = c->Mg - m0 < MB ? c->Mg - m0 : MB;
  float bias[16] = {0};
  for (int64_t mm = 0; mm < mn; mm++)
    bias[mm] = c->b ? c->b[g * c->Mg + m0 + mm] : 0.0f;
  const float *w = j->wp + (g * j->nb + blk) * j->T * MB;
  for (int64_t od = 0; od < c->out[0]; od++) {
    int64_t T = 0;
    for (int64_t ci = 0; ci < c->Cg; ci++)
      for (int64_t kd = 0; kd < c->k[0]; kd++) {
        int64_t id = od * c->s[0] - c->pb[0] + kd * c->d[0];
        bool in = id >= 0 && id < c->in[0];
        for (int64_t kh = 0; kh < c->k[1]; kh++) {
          int64_t dh = kh * c->d[1], a = dh % sh, qh = dh / sh;
          for (int64_t kw = 0; kw < c->k[2]; kw++, T++) {
            int64_t dw = kw * c->d[2], b = dw % sw, qw = dw / sw;
            toff[T] = in ? ci * q->plane + ((id * sh + a) * sw + b) * q->PS + qh * q->Lq + qw
                         : (int64_t)(zero - buf) - f0;
          }
        }
      }
    j->fn(buf, toff, w, T, bias, acc, nf, f0, nf);
    for (int64_t mm = 0; mm < mn; mm++) {
      int64_t y0 = ((n * c->M + g * c->Mg + m0 + mm) * c->out[0] + od) * OH * OW;
      float *y = c->y + y0 + oh0 * OW;
      const float *z = c->z ? c->z + y0 + oh0 * OW : NULL;
      for (int64_t oh = 0; oh < oh1 - oh0; oh++) {
        const float *src = acc + mm * nf + oh * q->Lq;
        float *yr = y + oh * OW;
        if (z)
          for (int64_t k = 0; k < OW; k++)
            yr[k] = src[k] + z[oh * OW + k];
        else
          memcpy(yr, src, sizeof(float) * (size_t)OW);
      }
      nat_act_f32(&c->act, y, (oh1 - oh0) * OW);
    }
  }
}

bool nat_conv_grouped_fits(const nat_cv *c) {
  return c->group > 1 && c->Cg > 1 && c->Cg <= 64 && c->Mg <= 64;
}

/* Whether blocks of wide channels beat blocks of narrow ones for Mg: the
 * wider tiles took 0.84x the time per channel slot (wav2vec2's positional
 * conv, 24 a group: MB 6 against 4 at AVX2, 12 against 8 at AVX-512), but
 * the last block's slots past Mg cost as much as full ones. */
static bool grp_wider(int64_t Mg, int narrow, int wide) {
  int64_t sn = (Mg + narrow - 1) / narrow * narrow, sw = (Mg + wide - 1) / wide * wide;
  return Mg >= wide && 0.84 * (double)sw <= (double)sn;
}

ait_status nat_conv_grouped(nat_run *r, const nat_cv *c) {
  grp_job j;
  memset(&j, 0, sizeof j);
  j.c = c;
  int isa = nat_isa();
  j.fn = grp_portable, j.MB = 4;
#ifdef GRP_X86
  if (isa >= NAT_ISA_AVX512) {
    j.fn = c->Mg >= 8 ? grp_avx512_8 : grp_avx512_4;
    j.MB = c->Mg >= 8 ? 8 : 4;
    /* 24 accumulators (of 32 registers) where the padding of the last
     * block does not eat the larger tile's gain */
    if (grp_wider(c->Mg, j.MB, 12)) j.fn = grp_avx512_12, j.MB = 12;
  } else if (isa >= NAT_ISA_AVX2) {
    /* 12 accumulators (of 16 registers) where a group has 6 channels or
     * more: two FMA ports of latency 4 need 8 in flight, and each tap's
     * two input loads feed 12 multiply-adds instead of 8 */
    j.fn = grp_avx2_4;
    if (grp_wider(c->Mg, 4, 6)) j.fn = grp_avx2_6, j.MB = 6;
  }
#endif
  nat_cv_grid_of(c, GRP_STEP, &j.q);
  j.nb = (c->Mg + j.MB - 1) / j.MB;
  j.T = c->Cg * c->k_n;
  /* the packed weights: [group][block][tap][MB], kept across runs when W
   * is a constant */
  int64_t wn = c->group * j.nb * j.T * j.MB;
  int64_t key[4] = {c->M, j.T, j.MB | (int64_t)isa << 8, c->group};
  bool fresh = true, w_const = nat_input_is_const(r, 1);
  float *wp =
      w_const ? nat_node_pack(r, NAT_DATA_CONV, key, sizeof(float) * (size_t)wn, &fresh) : NULL;
  if (w_const && !wp) return AIT_E_NOMEM;
  /* the threads' scratch (and the packed weights of a W that is not a
   * constant, after it): one nat_scratch, as each call hands out the same
   * memory */
  nat_pool *pool = nat_run_pool(r);
  int threads = nat_pool_threads(pool);
  double macs = (double)c->N * (double)c->M * (double)c->out_n * (double)j.T;
  if (macs < NAT_PAR_MIN_MACS) pool = NULL, threads = 1;
  int64_t tasks = c->N * c->group * j.nb;
  j.bands = tasks >= 2 * threads ? 1 : (2 * threads + tasks - 1) / tasks;
  if (j.bands > c->out[1]) j.bands = c->out[1];
  if (j.bands > 8) j.bands = 8;
  j.rows = (c->out[1] + j.bands - 1) / j.bands;
  j.bands = (c->out[1] + j.rows - 1) / j.rows;
  int64_t nf = (j.rows * j.q.Lq + GRP_STEP - 1) / GRP_STEP * GRP_STEP;
  j.slot = c->Cg * j.q.plane + j.q.PS + j.MB * nf + 2 * j.T + 16;
  j.slot = (j.slot + 15) / 16 * 16;
  int64_t sn = (int64_t)threads * j.slot;
  j.scratch = nat_scratch(r, (int64_t)sizeof(float) * (sn + (w_const ? 0 : wn)));
  if (!j.scratch) return AIT_E_NOMEM;
  if (!w_const) wp = j.scratch + sn;
  if (fresh)
    for (int64_t g = 0; g < c->group; g++)
      for (int64_t blk = 0; blk < j.nb; blk++) {
        float *d = wp + (g * j.nb + blk) * j.T * j.MB;
        for (int64_t t = 0; t < j.T; t++)
          for (int mm = 0; mm < j.MB; mm++) {
            int64_t m = blk * j.MB + mm;
            d[t * j.MB + mm] = m < c->Mg ? c->w[(g * c->Mg + m) * j.T + t] : 0.0f;
          }
      }
  j.wp = wp;
  nat_pool_run(pool, tasks * j.bands, grp_task, &j);
  return AIT_OK;
}
