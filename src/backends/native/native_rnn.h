/* Private to the recurrent kernels (native_rnn.c: configuration, the
 * projections and the per-step loop; native_rnn_step.c: batch-1 directions
 * in chunks of hidden units, on up to two threads). */
#ifndef AIT_BACKENDS_NATIVE_RNN_H
#define AIT_BACKENDS_NATIVE_RNN_H

#include <stdbool.h>
#include <stdint.h>

#include "backends/native/native.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define RNN_HAVE_AVX2 1
#define RNN_AVX2 __attribute__((target("avx2,fma")))
#endif

typedef enum rnn_kind { K_RNN, K_GRU, K_LSTM } rnn_kind;

/* ---- activations ---------------------------------------------------------- */

typedef enum ra_fn {
  RA_RELU,
  RA_TANH,
  RA_SIGMOID,
  RA_AFFINE,
  RA_LEAKY_RELU,
  RA_THRESHOLDED_RELU,
  RA_SCALED_TANH,
  RA_HARD_SIGMOID,
  RA_ELU,
  RA_SOFTSIGN,
  RA_SOFTPLUS
} ra_fn;

typedef struct ract {
  ra_fn fn;
  float alpha, beta;
} ract;

typedef struct rnn_job {
  rnn_kind kind;
  int64_t S, B, I, H, D, GH;
  int layout;
  bool reverse, has_clip, lbr, input_forget, avx2;
  float clip;
  ract acts[2][3];
  const int64_t *lens; /* [B] */
  int64_t max_len;
  const float *xw; /* [S*B rows in X's order][D*GH], biases included */
  const float *rt; /* portable: [D][H][GH], R^T per direction; panels: per
                    * direction rp_dir floats, R's gates as panels (GRU
                    * without linear_before_reset: z,r then h at rp_b) */
  bool panels;
  bool fused;  /* AVX2 one-pass gates (lstm_row_avx2, gru_lbr_row_avx2) */
  bool avx512; /* the recurrent product on AVX-512 (native_rnn512.c) */
  int64_t rp_dir, rp_b;
  const float *rbh; /* [D][H]: GRU's R_h bias under linear_before_reset */
  const float *p;   /* [D][3H] or NULL */
  const float *h0, *c0;
  float *y, *yh, *yc; /* NULL when not wanted */
  float *work;        /* per direction: work_dir floats */
  int64_t work_dir;
  nat_gemm_fn gemm;
  _Atomic long long *gemm_calls;
} rnn_job;

/* row of X for step t, batch row b; offsets of (d, b) in initial_h/c and
 * Y_h/Y_c, and of (t, d, b) in Y */
static NAT_INLINE int64_t x_row(const rnn_job *j, int64_t t, int64_t b) {
  return j->layout ? b * j->S + t : t * j->B + b;
}
/* offset of (d, b) in initial_h/c and Y_h/Y_c */
static NAT_INLINE int64_t state_at(const rnn_job *j, int64_t d, int64_t b) {
  return (j->layout ? b * j->D + d : d * j->B + b) * j->H;
}
static NAT_INLINE int64_t y_at(const rnn_job *j, int64_t t, int64_t d, int64_t b) {
  return (j->layout ? (b * j->S + t) * j->D + d : (t * j->D + d) * j->B + b) * j->H;
}

#ifdef RNN_HAVE_AVX2
/* c [B][ldc] (columns [0, N)) = a [B][lda] . the panels pn (K rows each):
 * the recurrent product of every batch row at once, on AVX-512 or AVX2
 * (native_rnn512.c). */
void nat_rnn_product512(const float *a, int64_t lda, int64_t B, int64_t K, const float *pn,
                        int64_t N, float *c, int64_t ldc);
void nat_rnn_product256(const float *a, int64_t lda, int64_t B, int64_t K, const float *pn,
                        int64_t N, float *c, int64_t ldc);

/* exp on 8 lanes: Cephes' polynomial (as native_math.c), inputs clamped to
 * [-87, 88], which sigmoid and tanh never leave in a way that matters. */
RNN_AVX2 static inline __m256 exp8(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
  __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  __m256 y = _mm256_add_ps(_mm256_fmadd_ps(_mm256_mul_ps(p, r), r, r), _mm256_set1_ps(1.0f));
  __m256i e =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}

RNN_AVX2 static inline __m256 sigmoid8(__m256 x) {
  __m256 one = _mm256_set1_ps(1.0f);
  return _mm256_div_ps(one, _mm256_add_ps(one, exp8(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}

/* tanh |x| = (1 - e) / (1 + e) with e = exp(-2|x|), the sign put back */
RNN_AVX2 static inline __m256 tanh8(__m256 x) {
  __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 ax = _mm256_andnot_ps(sign, x);
  __m256 e = exp8(_mm256_mul_ps(ax, _mm256_set1_ps(-2.0f)));
  __m256 one = _mm256_set1_ps(1.0f);
  __m256 t = _mm256_div_ps(_mm256_sub_ps(one, e), _mm256_add_ps(one, e));
  return _mm256_or_ps(t, _mm256_and_ps(x, sign));
}

#endif

/* Run every direction of j (batch 1, the one-pass gates: j->fused, H a
 * multiple of 16) in chunks of hidden units, each chunk's product with R
 * and its gates in one pass, a unidirectional layer on up to two of r's
 * threads; false, doing nothing, where that does not apply. */
bool nat_rnn_chunked(nat_run *r, const rnn_job *j);
/* Tests: directions run in chunks so far, and of them those handed to two
 * threads (whether or not the second joined). */
long long nat_rnn_chunked_dirs(void);
long long nat_rnn_coop_dirs(void);

#endif
