/* Recurrent layers (RNN, GRU, LSTM) on native's kernels, ONNX semantics as
 * the reference (src/ops/reduce_rnn.c, which documents them): every
 * direction, the activations attributes, clip, input_forget,
 * linear_before_reset, sequence_lens, initial_h/initial_c, peepholes,
 * layout 0/1, and any of Y, Y_h, Y_c.
 *
 * The reference spends its time in two matrix-vector products per step and
 * batch row, in double. Here:
 *   1. the input projections of every step, direction and batch row are one
 *      GEMM on the pool: XW [S*B, D*G*H] = X [S*B, I] . W [D*G*H, I]^T plus
 *      both biases (the W bias and the R bias, except GRU's R_h bias under
 *      linear_before_reset, which stays inside r * (.)); rows keep X's
 *      order, so layout 1 needs no transpose;
 *   2. each direction is one pool task (bidirectional: two cores); per step
 *      it multiplies the states H [B, H] by R^T, packed once per node as
 *      [H][G*H] (nat_node_pack keeps it across runs when R is a constant), so
 *      a step reads R^T's rows contiguously: an AVX2 axpy-form GEMV for few
 *      batch rows, the GEMM provider otherwise;
 *   3. the gate math runs on whole gate vectors (sigmoid and tanh from an
 *      8-lane exp on AVX2, libm on the portable path).
 * Everything is float32; the products sum in float, so results differ from
 * the double reference by ~1e-6. A node outside these cases (another dtype,
 * a shape the reference would refuse) declines before asking for outputs:
 * the reference runs it and reports the error. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/native/native.h"
#include "backends/native/native_mm.h"
#include "backends/native/native_rnn.h"

/* the reference's table: name (lower case), parameters taken, defaults */
static const struct {
  const char *name;
  ra_fn fn;
  int n_params;
  float alpha, beta;
} act_rows[] = {
    {"relu", RA_RELU, 0, 0, 0},
    {"tanh", RA_TANH, 0, 0, 0},
    {"sigmoid", RA_SIGMOID, 0, 0, 0},
    {"affine", RA_AFFINE, 2, 1.0f, 0.0f},
    {"leakyrelu", RA_LEAKY_RELU, 1, 0.01f, 0},
    {"thresholdedrelu", RA_THRESHOLDED_RELU, 1, 1.0f, 0},
    {"scaledtanh", RA_SCALED_TANH, 2, 1.0f, 1.0f},
    {"hardsigmoid", RA_HARD_SIGMOID, 2, 0.2f, 0.5f},
    {"elu", RA_ELU, 1, 1.0f, 0},
    {"softsign", RA_SOFTSIGN, 0, 0, 0},
    {"softplus", RA_SOFTPLUS, 0, 0, 0},
};

static const char *const default_acts[3][3] = {
    {"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}};

static float act_scalar(const ract *a, float xf) {
  double x = xf;
  switch (a->fn) {
  case RA_RELU: return x > 0 ? xf : 0.0f;
  case RA_TANH: return tanhf(xf);
  case RA_SIGMOID: return (float)(1.0 / (1.0 + exp(-x)));
  case RA_AFFINE: return (float)(a->alpha * x + a->beta);
  case RA_LEAKY_RELU: return x >= 0 ? xf : (float)(a->alpha * x);
  case RA_THRESHOLDED_RELU: return x > a->alpha ? xf : 0.0f;
  case RA_SCALED_TANH: return (float)(a->alpha * tanh(a->beta * x));
  case RA_HARD_SIGMOID: return (float)fmin(fmax(a->alpha * x + a->beta, 0.0), 1.0);
  case RA_ELU: return x >= 0 ? xf : (float)(a->alpha * (exp(x) - 1.0));
  case RA_SOFTSIGN: return (float)(x / (1.0 + fabs(x)));
  case RA_SOFTPLUS: return x > 30 ? xf : (float)log1p(exp(x));
  }
  return xf;
}

#ifdef RNN_HAVE_AVX2
/* Sigmoid or tanh (scale a, inner scale b: a tanh(b x)) over x[0..n). The
 * tail goes through a padded block so every lane takes the same path. */
RNN_AVX2 static void act_avx2(bool sigmoid, float a, float b, float *x, int64_t n) {
  __m256 va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    v = sigmoid ? sigmoid8(v) : _mm256_mul_ps(va, tanh8(_mm256_mul_ps(vb, v)));
    _mm256_storeu_ps(x + i, v);
  }
  if (i < n) {
    float pad[8] = {0};
    memcpy(pad, x + i, sizeof(float) * (size_t)(n - i));
    __m256 v = _mm256_loadu_ps(pad);
    v = sigmoid ? sigmoid8(v) : _mm256_mul_ps(va, tanh8(_mm256_mul_ps(vb, v)));
    _mm256_storeu_ps(pad, v);
    memcpy(x + i, pad, sizeof(float) * (size_t)(n - i));
  }
}

/* One LSTM row in one pass (the default activations, no clip, H % 8 == 0):
 * a holds h R^T, xr the projections with both biases; c and h update in
 * place; p (peepholes i, o, f) may be NULL. */
RNN_AVX2 static void lstm_row_avx2(const float *xr, const float *a, const float *p, float *c,
                                   float *h, int64_t H) {
  for (int64_t i = 0; i < H; i += 8) {
    __m256 ci = _mm256_loadu_ps(c + i);
    __m256 gi = _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(xr + i));
    __m256 go = _mm256_add_ps(_mm256_loadu_ps(a + H + i), _mm256_loadu_ps(xr + H + i));
    __m256 gf = _mm256_add_ps(_mm256_loadu_ps(a + 2 * H + i), _mm256_loadu_ps(xr + 2 * H + i));
    __m256 gc = _mm256_add_ps(_mm256_loadu_ps(a + 3 * H + i), _mm256_loadu_ps(xr + 3 * H + i));
    if (p) {
      gi = _mm256_fmadd_ps(_mm256_loadu_ps(p + i), ci, gi);
      gf = _mm256_fmadd_ps(_mm256_loadu_ps(p + 2 * H + i), ci, gf);
    }
    __m256 cn = _mm256_fmadd_ps(sigmoid8(gf), ci, _mm256_mul_ps(sigmoid8(gi), tanh8(gc)));
    if (p) go = _mm256_fmadd_ps(_mm256_loadu_ps(p + H + i), cn, go);
    _mm256_storeu_ps(c + i, cn);
    _mm256_storeu_ps(h + i, _mm256_mul_ps(sigmoid8(go), tanh8(cn)));
  }
}

/* One GRU row with linear_before_reset in one pass (default activations,
 * no clip, H % 8 == 0); rb: R_h's bias. */
RNN_AVX2 static void gru_lbr_row_avx2(const float *xr, const float *a, const float *rb, float *h,
                                      int64_t H) {
  for (int64_t i = 0; i < H; i += 8) {
    __m256 z = sigmoid8(_mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(xr + i)));
    __m256 r = sigmoid8(_mm256_add_ps(_mm256_loadu_ps(a + H + i), _mm256_loadu_ps(xr + H + i)));
    __m256 rh = _mm256_add_ps(_mm256_loadu_ps(a + 2 * H + i), _mm256_loadu_ps(rb + i));
    __m256 hh = tanh8(_mm256_fmadd_ps(r, rh, _mm256_loadu_ps(xr + 2 * H + i)));
    __m256 hp = _mm256_loadu_ps(h + i);
    /* (1 - z) hh + z h = hh + z (h - hh) */
    _mm256_storeu_ps(h + i, _mm256_fmadd_ps(z, _mm256_sub_ps(hp, hh), hh));
  }
}

/* Products against panels (pack_panels): native_rnn512.c. */
#endif

static void gemv_portable(const float *h, int64_t K, const float *rt, int64_t ld, int64_t N,
                          float *out) {
  memset(out, 0, sizeof(float) * (size_t)N);
  for (int64_t k = 0; k < K; k++) {
    float hk = h[k];
    const float *row = rt + k * ld;
    for (int64_t j = 0; j < N; j++)
      out[j] += hk * row[j];
  }
}

static int64_t n_panels(int64_t N) { return (N + 15) / 16; }

/* B [K][N] = rows^T as panels of K x 16 floats (native_rnn512.c reads
 * them): rows is [N][K] (W or R). */
static void pack_panels(const float *rows, int64_t N, int64_t K, float *dst) {
  for (int64_t p = 0; p < n_panels(N); p++)
    for (int64_t k = 0; k < K; k++)
      for (int64_t c = 0; c < 16; c++) {
        int64_t col = p * 16 + c;
        dst[(p * K + k) * 16 + c] = col < N ? rows[col * K + k] : 0.0f;
      }
}

/* ---- configuration -------------------------------------------------------- */

/* Rows at or below which the recurrent product runs as per-row GEMVs; above,
 * as one call into the GEMM provider. */
#define RNN_GEMV_ROWS 4

static ait_status parse_acts(const ait_node *n, rnn_job *j, int n_act) {
  const ait_attr *names = ait_node_attr(n, "activations");
  int n_names = names && names->type == AIT_ATTR_STRINGS ? names->n : 0;
  if (n_names && n_names != n_act && n_names != n_act * j->D) return AIT_E_UNSUPPORTED;
  int n_alpha, n_beta, ai = 0, bi = 0;
  const float *alphas = ait_attr_floats(n, "activation_alpha", &n_alpha);
  const float *betas = ait_attr_floats(n, "activation_beta", &n_beta);
  for (int d = 0; d < j->D; d++)
    for (int k = 0; k < n_act; k++) {
      const char *nm = default_acts[j->kind][k];
      if (n_names) nm = names->strings[n_names == n_act ? k : d * n_act + k];
      char low[32];
      size_t len = strlen(nm);
      if (len >= sizeof low) return AIT_E_UNSUPPORTED;
      for (size_t i = 0; i <= len; i++)
        low[i] = (char)tolower((unsigned char)nm[i]);
      int row = -1;
      for (int i = 0; i < (int)(sizeof act_rows / sizeof act_rows[0]); i++)
        if (!strcmp(act_rows[i].name, low)) row = i;
      if (row < 0) return AIT_E_UNSUPPORTED;
      ract *a = &j->acts[d][k];
      a->fn = act_rows[row].fn;
      a->alpha = act_rows[row].alpha;
      a->beta = act_rows[row].beta;
      /* only listed activations consume alpha/beta, in order (as the reference) */
      if (n_names && act_rows[row].n_params >= 1 && ai < n_alpha) a->alpha = alphas[ai++];
      if (n_names && act_rows[row].n_params >= 2 && bi < n_beta) a->beta = betas[bi++];
    }
  return AIT_OK;
}

static bool dims_are(const ait_tensor *t, int rank, int64_t a, int64_t b, int64_t c) {
  int64_t want[3] = {a, b, c};
  if (t->kind != AIT_KIND_TENSOR || t->rank != rank) return false;
  for (int i = 0; i < rank; i++)
    if (t->dims[i] != want[i]) return false;
  return true;
}

static bool is_f32(const ait_tensor *t) {
  return t && t->kind == AIT_KIND_TENSOR && t->dtype == AIT_FLOAT32;
}

/* ---- the recurrence --------------------------------------------------------- */

static NAT_INLINE void act_vec(const rnn_job *j, const ract *a, float *x, int64_t n) {
#ifdef RNN_HAVE_AVX2
  if (j->avx2 && (a->fn == RA_SIGMOID || a->fn == RA_TANH || a->fn == RA_SCALED_TANH)) {
    bool sg = a->fn == RA_SIGMOID;
    act_avx2(sg, a->fn == RA_SCALED_TANH ? a->alpha : 1.0f,
             a->fn == RA_SCALED_TANH ? a->beta : 1.0f, x, n);
    return;
  }
#endif
  if (a->fn == RA_RELU) {
    for (int64_t i = 0; i < n; i++)
      x[i] = x[i] > 0 ? x[i] : 0.0f;
    return;
  }
  for (int64_t i = 0; i < n; i++)
    x[i] = act_scalar(a, x[i]);
}

static NAT_INLINE void clip_vec(const rnn_job *j, float *x, int64_t n) {
  if (!j->has_clip) return;
  float c = j->clip;
  for (int64_t i = 0; i < n; i++)
    x[i] = x[i] < -c ? -c : x[i] > c ? c : x[i];
}

/* out rows [B][ld] (columns [0, N)) = hs [B][K] . R^T's segment seg (a
 * column offset into R^T, or panels), for the rows still running at step k
 * (all of them where rows go four at a time or to the provider). */
static NAT_INLINE void rec_product(const rnn_job *j, const float *hs, int64_t K, const float *seg,
                                   int64_t N, float *out, int64_t ld, int64_t k) {
#ifdef RNN_HAVE_AVX2
  if (j->panels) { /* every row, also those past their length (their results go unused) */
    (j->avx512 ? nat_rnn_product512 : nat_rnn_product256)(hs, K, j->B, K, seg, N, out, ld);
    return;
  }
#endif
  if (j->B > RNN_GEMV_ROWS) {
    j->gemm(false, false, j->B, N, K, 1.0f, hs, K, seg, j->GH, out, ld);
    (*j->gemm_calls)++;
    return;
  }
  for (int64_t b = 0; b < j->B; b++)
    if (k < j->lens[b]) gemv_portable(hs + b * K, K, seg, j->GH, N, out + b * ld);
}

/* Direction d over the whole sequence. Work: hs [B][H], cs [B][H], rh
 * [B][GH], tmp [B][H], g [GH]. */
static NAT_INLINE void run_dir(const rnn_job *j, int64_t d) {
  int64_t B = j->B, H = j->H, GH = j->GH, D = j->D;
  float *hs = j->work + d * j->work_dir, *cs = hs + B * H, *rh = cs + B * H, *tmp = rh + B * GH;
  float *g = tmp + B * H;
  const float *rt = j->panels ? j->rt + d * j->rp_dir : j->rt + d * H * GH;
  const float *rt_h = j->panels ? rt + j->rp_b : rt + 2 * H; /* GRU's h gate, split */
  const float *p = j->p ? j->p + d * 3 * H : NULL;
  const ract *acts = j->acts[d];
  bool back = j->reverse || d == 1;
  for (int64_t b = 0; b < B; b++) {
    if (j->h0)
      memcpy(hs + b * H, j->h0 + state_at(j, d, b), sizeof(float) * (size_t)H);
    else
      memset(hs + b * H, 0, sizeof(float) * (size_t)H);
    if (j->c0)
      memcpy(cs + b * H, j->c0 + state_at(j, d, b), sizeof(float) * (size_t)H);
    else
      memset(cs + b * H, 0, sizeof(float) * (size_t)H);
    if (j->y) /* Y is 0 past a row's length */
      for (int64_t t = j->lens[b]; t < j->S; t++)
        memset(j->y + y_at(j, t, d, b), 0, sizeof(float) * (size_t)H);
  }
  /* GRU without linear_before_reset needs r before its third product */
  bool split = j->kind == K_GRU && !j->lbr;
  for (int64_t k = 0; k < j->max_len; k++) {
    rec_product(j, hs, H, rt, split ? 2 * H : GH, rh, GH, k);
    if (split) {
      for (int64_t b = 0; b < B; b++) {
        if (k >= j->lens[b]) {
          memset(tmp + b * H, 0, sizeof(float) * (size_t)H);
          continue;
        }
        int64_t t = back ? j->lens[b] - 1 - k : k;
        const float *xr = j->xw + x_row(j, t, b) * D * GH + d * GH;
        float *zr = rh + b * GH, *h = hs + b * H;
        for (int64_t i = 0; i < 2 * H; i++)
          zr[i] += xr[i];
        clip_vec(j, zr, 2 * H);
        act_vec(j, &acts[0], zr, 2 * H);
        for (int64_t i = 0; i < H; i++)
          tmp[b * H + i] = zr[H + i] * h[i];
      }
      rec_product(j, tmp, H, rt_h, H, rh + 2 * H, GH, k);
    }
    for (int64_t b = 0; b < B; b++) {
      if (k >= j->lens[b]) continue;
      int64_t t = back ? j->lens[b] - 1 - k : k;
      const float *xr = j->xw + x_row(j, t, b) * D * GH + d * GH;
      float *a = rh + b * GH, *h = hs + b * H, *c = cs + b * H;
#ifdef RNN_HAVE_AVX2
      if (j->fused) {
        if (j->kind == K_LSTM)
          lstm_row_avx2(xr, a, p, c, h, H);
        else
          gru_lbr_row_avx2(xr, a, j->rbh + d * H, h, H);
        if (j->y) memcpy(j->y + y_at(j, t, d, b), h, sizeof(float) * (size_t)H);
        continue;
      }
#endif
      if (j->kind == K_RNN) {
        for (int64_t i = 0; i < H; i++)
          h[i] = a[i] + xr[i];
        clip_vec(j, h, H);
        act_vec(j, &acts[0], h, H);
      } else if (j->kind == K_GRU) {
        float *z = a, *r = a + H, *hh = a + 2 * H;
        if (!split) {
          for (int64_t i = 0; i < 2 * H; i++)
            a[i] += xr[i];
          clip_vec(j, a, 2 * H);
          act_vec(j, &acts[0], a, 2 * H);
          const float *rb = j->rbh + d * H;
          for (int64_t i = 0; i < H; i++)
            hh[i] = xr[2 * H + i] + r[i] * (hh[i] + rb[i]);
        } else {
          for (int64_t i = 0; i < H; i++)
            hh[i] += xr[2 * H + i];
        }
        clip_vec(j, hh, H);
        act_vec(j, &acts[1], hh, H);
        for (int64_t i = 0; i < H; i++)
          h[i] = (1.0f - z[i]) * hh[i] + z[i] * h[i];
      } else { /* LSTM: gates i, o, f, c; peepholes i, o, f */
        float *gi = a, *go = a + H, *gf = a + 2 * H, *gc = a + 3 * H;
        for (int64_t i = 0; i < GH; i++)
          a[i] += xr[i];
        if (p)
          for (int64_t i = 0; i < H; i++) {
            gi[i] += p[i] * c[i];
            gf[i] += p[2 * H + i] * c[i];
          }
        clip_vec(j, gi, H);
        clip_vec(j, gf, 2 * H); /* f and c */
        act_vec(j, &acts[0], gi, H);
        if (j->input_forget)
          for (int64_t i = 0; i < H; i++)
            gf[i] = 1.0f - gi[i];
        else
          act_vec(j, &acts[0], gf, H);
        act_vec(j, &acts[1], gc, H);
        for (int64_t i = 0; i < H; i++)
          c[i] = gf[i] * c[i] + gi[i] * gc[i];
        if (p)
          for (int64_t i = 0; i < H; i++)
            go[i] += p[H + i] * c[i];
        clip_vec(j, go, H);
        act_vec(j, &acts[0], go, H);
        memcpy(g, c, sizeof(float) * (size_t)H);
        act_vec(j, &acts[2], g, H); /* h(C) unclipped, as the reference */
        for (int64_t i = 0; i < H; i++)
          h[i] = go[i] * g[i];
      }
      if (j->y) memcpy(j->y + y_at(j, t, d, b), h, sizeof(float) * (size_t)H);
    }
  }
  for (int64_t b = 0; b < B; b++) {
    bool ran = j->lens[b] > 0; /* 0 for an empty sequence, as the reference */
    if (j->yh) {
      if (ran)
        memcpy(j->yh + state_at(j, d, b), hs + b * H, sizeof(float) * (size_t)H);
      else
        memset(j->yh + state_at(j, d, b), 0, sizeof(float) * (size_t)H);
    }
    if (j->yc) {
      if (ran)
        memcpy(j->yc + state_at(j, d, b), cs + b * H, sizeof(float) * (size_t)H);
      else
        memset(j->yc + state_at(j, d, b), 0, sizeof(float) * (size_t)H);
    }
  }
}

#ifdef RNN_HAVE_AVX2
RNN_AVX2 static void run_dir_avx2(const rnn_job *j, int64_t d) { run_dir(j, d); }
#endif
static void run_dir_portable(const rnn_job *j, int64_t d) { run_dir(j, d); }

static void dir_task(void *arg, int64_t d, int tid) {
  const rnn_job *j = arg;
  (void)tid;
#ifdef RNN_HAVE_AVX2
  if (j->avx2) {
    run_dir_avx2(j, d);
    return;
  }
#endif
  run_dir_portable(j, d);
}

/* ---- the kernel -------------------------------------------------------------- */

static int64_t round16(int64_t n) { return (n + 15) / 16 * 16; }

static ait_status rnn_kernel(rnn_kind kind, nat_run *r, const ait_node *n,
                             const ait_tensor *const *in, int n_in) {
  const ait_tensor *opt[8] = {0};
  for (int i = 0; i < n_in && i < 8; i++)
    opt[i] = in[i];
  const ait_tensor *X = opt[0], *W = opt[1], *R = opt[2], *Bias = opt[3], *L = opt[4];
  const ait_tensor *H0 = opt[5], *C0 = kind == K_LSTM ? opt[6] : NULL;
  const ait_tensor *P = kind == K_LSTM ? opt[7] : NULL;
  if (!is_f32(X) || !is_f32(W) || !is_f32(R) || X->rank != 3 || R->rank != 3)
    return AIT_E_UNSUPPORTED;
  rnn_job j;
  memset(&j, 0, sizeof j);
  j.kind = kind;
  int G = kind == K_RNN ? 1 : kind == K_GRU ? 3 : 4;
  const char *dir = ait_attr_str(n, "direction", "forward");
  if (!strcmp(dir, "bidirectional"))
    j.D = 2;
  else if (!strcmp(dir, "forward") || !strcmp(dir, "reverse"))
    j.D = 1;
  else
    return AIT_E_UNSUPPORTED;
  j.reverse = !strcmp(dir, "reverse");
  j.layout = (int)ait_attr_int(n, "layout", 0);
  if (j.layout != 0 && j.layout != 1) return AIT_E_UNSUPPORTED;
  j.S = X->dims[j.layout ? 1 : 0];
  j.B = X->dims[j.layout ? 0 : 1];
  j.I = X->dims[2];
  j.H = R->dims[2];
  j.GH = G * j.H;
  int64_t S = j.S, Bn = j.B, I = j.I, H = j.H, D = j.D, GH = j.GH;
  if (ait_attr_int(n, "hidden_size", H) != H || S < 1 || Bn < 1 || I < 1 || H < 1)
    return AIT_E_UNSUPPORTED;
  int64_t sa = j.layout ? Bn : D, sb = j.layout ? D : Bn;
  if (!dims_are(W, 3, D, GH, I) || !dims_are(R, 3, D, GH, H) ||
      (Bias && (!is_f32(Bias) || !dims_are(Bias, 2, D, 2 * GH, 0))) ||
      (H0 && (!is_f32(H0) || !dims_are(H0, 3, sa, sb, H))) ||
      (C0 && (!is_f32(C0) || !dims_are(C0, 3, sa, sb, H))) ||
      (P && (!is_f32(P) || !dims_are(P, 2, D, 3 * H, 0))))
    return AIT_E_UNSUPPORTED;
  if (L && (L->kind != AIT_KIND_TENSOR || L->rank != 1 || L->dims[0] != Bn ||
            (L->dtype != AIT_INT32 && L->dtype != AIT_INT64)))
    return AIT_E_UNSUPPORTED;
  const ait_attr *clip = ait_node_attr(n, "clip");
  if (clip) {
    j.has_clip = true;
    j.clip = clip->f;
  }
  j.lbr = kind == K_GRU && ait_attr_int(n, "linear_before_reset", 0) != 0;
  j.input_forget = kind == K_LSTM && ait_attr_int(n, "input_forget", 0) != 0;
  int n_act = kind == K_RNN ? 1 : kind == K_GRU ? 2 : 3;
  if (parse_acts(n, &j, n_act)) return AIT_E_UNSUPPORTED;
  /* the default activations: gates in one pass where the CPU allows */
  bool defaults =
      !j.has_clip && !j.input_forget && H % 8 == 0 && (kind == K_LSTM || (kind == K_GRU && j.lbr));
  for (int d = 0; d < j.D && defaults; d++)
    for (int k = 0; k < n_act; k++)
      defaults &= j.acts[d][k].fn == (k == 0 ? RA_SIGMOID : RA_TANH);

      /* The weights as the products read them: on AVX2, W and R as panels;
       * portable, R^T (W goes to the provider as stored). Kept across runs in the
       * node's pack when W and R are constants, else rebuilt in scratch. */
#ifdef RNN_HAVE_AVX2
  j.panels = nat_isa() >= NAT_ISA_AVX2;
  j.avx2 = j.panels;
  j.fused = j.avx2 && defaults;
  j.avx512 = j.panels && nat_isa() >= NAT_ISA_AVX512;
#else
  (void)defaults;
#endif
  bool split = kind == K_GRU && !j.lbr;
  j.rp_b = n_panels(split ? 2 * H : GH) * 16 * H;
  j.rp_dir = j.rp_b + (split ? n_panels(H) * 16 * H : 0);
  /* W as native_mm.c's tiles read it (the projections), R as panels */
  int level = j.panels ? (int)nat_isa() : NAT_ISA_PORTABLE;
  nat_mm pm;
  memset(&pm, 0, sizeof pm);
  if (j.panels) nat_mm_init(&pm, level, S * Bn, D * GH, I);
  int64_t f_wp = j.panels ? round16(nat_mm_packed_floats(I, D * GH, pm.nr)) : 0;
  int64_t f_pack = j.panels ? f_wp + D * j.rp_dir : D * H * GH;
  bool consts = nat_input_is_const(r, 1) && nat_input_is_const(r, 2);
  /* scratch: lens, XW, bias, the weights (unless packed), R_h bias, work */
  int64_t M = S * Bn;
  j.work_dir = round16(3 * Bn * H + Bn * GH + GH);
  int64_t f_lens = round16(Bn * 2), f_xw = round16(M * D * GH), f_bias = round16(D * GH);
  int64_t f_w = consts ? 0 : round16(f_pack), f_rbh = round16(D * H);
  int64_t total = f_lens + f_xw + f_bias + f_w + f_rbh + D * j.work_dir;
  float *sc = nat_scratch(r, total * (int64_t)sizeof(float));
  if (!sc) return AIT_E_NOMEM;
  int64_t *lens = (int64_t *)sc;
  j.max_len = 0;
  for (int64_t b = 0; b < Bn; b++) {
    lens[b] = !L                      ? S
              : L->dtype == AIT_INT32 ? ((const int32_t *)L->data)[b]
                                      : ((const int64_t *)L->data)[b];
    if (lens[b] < 0 || lens[b] > S) return AIT_E_UNSUPPORTED; /* the reference says why */
    if (lens[b] > j.max_len) j.max_len = lens[b];
  }
  j.lens = lens;
  float *xw = sc + f_lens, *bias = xw + f_xw, *wbuf = bias + f_bias, *rbh = wbuf + f_w;
  j.work = rbh + f_rbh;
  bool fill = true;
  if (consts) {
    int64_t key[4] = {j.panels ? pm.nr : 0, (int64_t)(intptr_t)W->data, (int64_t)(intptr_t)R->data,
                      (D * GH * 65536 + H) * 65536 + I};
    wbuf = nat_node_pack(r, NAT_DATA_RNN, key, sizeof(float) * (size_t)f_pack, &fill);
    if (!wbuf) return AIT_E_NOMEM;
  }
  const float *rs = R->data;
  if (fill && j.panels) {
    nat_mm_pack(wbuf, W->data, I, D * GH, 1, I, pm.nr);
    for (int64_t d = 0; d < D; d++) {
      float *dst = wbuf + f_wp + d * j.rp_dir;
      pack_panels(rs + d * GH * H, split ? 2 * H : GH, H, dst);
      if (split) pack_panels(rs + (d * GH + 2 * H) * H, H, H, dst + j.rp_b);
    }
  } else if (fill) {
    for (int64_t d = 0; d < D; d++)
      for (int64_t g = 0; g < GH; g++)
        for (int64_t k = 0; k < H; k++)
          wbuf[(d * H + k) * GH + g] = rs[(d * GH + g) * H + k];
  }
  const float *rt = j.panels ? wbuf + f_wp : wbuf;
  const float *bs = Bias ? Bias->data : NULL;
  for (int64_t d = 0; d < D; d++)
    for (int64_t g = 0; g < GH; g++) {
      float v = bs ? bs[d * 2 * GH + g] : 0.0f;
      float rb = bs ? bs[d * 2 * GH + GH + g] : 0.0f;
      if (j.lbr && g >= 2 * H)
        rbh[d * H + g - 2 * H] = rb; /* stays inside r * (h R_h^T + Rb_h) */
      else
        v += rb;
      bias[d * GH + g] = v;
    }
  j.xw = xw;
  j.rt = rt;
  j.rbh = rbh;
  j.p = P ? P->data : NULL;
  j.h0 = H0 ? H0->data : NULL;
  j.c0 = C0 ? C0->data : NULL;
  j.gemm = nat_run_gemm(r);
  j.gemm_calls = nat_run_gemm_calls(r);
  if (!j.gemm && nat_gemm_provider("openblas", &j.gemm)) return AIT_E_UNSUPPORTED;

  /* outputs: only those the node uses */
  int n_outs = kind == K_LSTM ? 3 : 2;
  float **dst[3] = {&j.y, &j.yh, &j.yc};
  for (int o = 0; o < n_outs && o < n->n_out; o++) {
    if (n->out[o] < 0) continue;
    int64_t y0[4] = {S, D, Bn, H}, y1[4] = {Bn, S, D, H}, h0[3] = {D, Bn, H}, h1[3] = {Bn, D, H};
    const int64_t *dims = o == 0 ? (j.layout ? y1 : y0) : (j.layout ? h1 : h0);
    ait_tensor *t;
    AIT_TRY(nat_output(r, o, AIT_FLOAT32, o == 0 ? 4 : 3, dims, &t));
    *dst[o] = t->data;
  }

  /* every step's input projections at once */
  if (j.panels) {
    pm.a = X->data, pm.lda = I, pm.b = wbuf, pm.bias = bias;
    pm.c = xw, pm.ldc = D * GH, pm.lo = -INFINITY, pm.hi = INFINITY;
    nat_mm_pool(r, &pm, NULL);
  } else {
    nat_epilogue e;
    memset(&e, 0, sizeof e);
    e.col_bias = bias;
    nat_sgemm(r, false, true, M, D * GH, I, 1.0f, X->data, I, W->data, I, xw, D * GH, &e);
  }
  if (nat_rnn_chunked(r, &j)) return AIT_OK;
  nat_pool_run(D > 1 ? nat_run_pool(r) : NULL, D, dir_task, &j);
  return AIT_OK;
}

ait_status nat_k_rnn(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  return rnn_kernel(K_RNN, r, n, in, n_in);
}
ait_status nat_k_gru(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  return rnn_kernel(K_GRU, r, n, in, n_in);
}
ait_status nat_k_lstm(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  return rnn_kernel(K_LSTM, r, n, in, n_in);
}
