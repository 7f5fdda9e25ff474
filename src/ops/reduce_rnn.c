/* Recurrent layers: RNN, GRU, LSTM (one layer each).
 *
 * Inputs: X, W, R, B, sequence_lens, initial_h (and for LSTM initial_c, P).
 * With layout 0 (the default) X is [seq, batch, input], initial_h/c are
 * [dirs, batch, hidden], Y is [seq, dirs, batch, hidden] and Y_h/Y_c are
 * [dirs, batch, hidden]; layout 1 (opset 14) puts batch first in all of
 * them. W is [dirs, G*hidden, input], R [dirs, G*hidden, hidden], B
 * [dirs, 2*G*hidden] (W biases then R biases), P [dirs, 3*hidden]; gates are
 * ordered i,o,f,c (LSTM), z,r,h (GRU), and P is i,o,f.
 *
 * Each (direction, batch row) runs its own recurrence over its
 * sequence_lens[b] steps (reverse: from step len-1 down to 0). Y is 0 past a
 * row's length; Y_h/Y_c are the state after its last step (0 when the length
 * is 0, as onnxruntime does). `clip` bounds the gate pre-activations; like
 * onnxruntime, the LSTM cell state given to h() is not clipped.
 * activation_alpha/beta are consumed in order by the activations that take
 * them (as onnxruntime); missing ones take the defaults of the ONNX ops.
 * All math is in double. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/shape.h"
#include "ops/reduce_impl.h"

typedef enum rnn_kind { KIND_RNN, KIND_GRU, KIND_LSTM } rnn_kind;

/* ---- activations -------------------------------------------------------- */

typedef enum act_fn {
  ACT_RELU,
  ACT_TANH,
  ACT_SIGMOID,
  ACT_AFFINE,
  ACT_LEAKY_RELU,
  ACT_THRESHOLDED_RELU,
  ACT_SCALED_TANH,
  ACT_HARD_SIGMOID,
  ACT_ELU,
  ACT_SOFTSIGN,
  ACT_SOFTPLUS
} act_fn;

typedef struct act {
  act_fn fn;
  double alpha, beta;
} act;

static const struct {
  const char *name; /* lower case */
  act_fn fn;
  int n_params; /* 0: none, 1: alpha, 2: alpha and beta */
  double alpha, beta;
} act_table[] = {
    {"relu", ACT_RELU, 0, 0, 0},
    {"tanh", ACT_TANH, 0, 0, 0},
    {"sigmoid", ACT_SIGMOID, 0, 0, 0},
    {"affine", ACT_AFFINE, 2, 1.0, 0.0},
    {"leakyrelu", ACT_LEAKY_RELU, 1, 0.01, 0},
    {"thresholdedrelu", ACT_THRESHOLDED_RELU, 1, 1.0, 0},
    {"scaledtanh", ACT_SCALED_TANH, 2, 1.0, 1.0},
    {"hardsigmoid", ACT_HARD_SIGMOID, 2, 0.2, 0.5},
    {"elu", ACT_ELU, 1, 1.0, 0},
    {"softsign", ACT_SOFTSIGN, 0, 0, 0},
    {"softplus", ACT_SOFTPLUS, 0, 0, 0},
};

static double act_apply(const act *a, double x) {
  switch (a->fn) {
  case ACT_RELU: return x > 0 ? x : 0;
  case ACT_TANH: return tanh(x);
  case ACT_SIGMOID: return 1.0 / (1.0 + exp(-x));
  case ACT_AFFINE: return a->alpha * x + a->beta;
  case ACT_LEAKY_RELU: return x >= 0 ? x : a->alpha * x;
  case ACT_THRESHOLDED_RELU: return x > a->alpha ? x : 0;
  case ACT_SCALED_TANH: return a->alpha * tanh(a->beta * x);
  case ACT_HARD_SIGMOID: return fmin(fmax(a->alpha * x + a->beta, 0.0), 1.0);
  case ACT_ELU: return x >= 0 ? x : a->alpha * (exp(x) - 1.0);
  case ACT_SOFTSIGN: return x / (1.0 + fabs(x));
  case ACT_SOFTPLUS: return x > 30 ? x : log1p(exp(x));
  }
  return x;
}

/* ---- configuration ------------------------------------------------------ */

typedef struct rnn_cfg {
  rnn_kind kind;
  int G;     /* gates: 1 (RNN), 3 (GRU), 4 (LSTM) */
  int n_act; /* activations per direction: 1, 2, 3 */
  int dirs;
  bool reverse; /* single direction, run backwards */
  int layout;
  int64_t S, B, I, H;
  bool has_clip;
  double clip;
  bool lbr;          /* GRU linear_before_reset */
  bool input_forget; /* LSTM: f = 1 - i */
  act acts[2][3];
} rnn_cfg;

static const char *const default_acts[3][3] = {
    {"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}};

static ait_status parse_acts(const ait_node *node, rnn_cfg *c) {
  const ait_attr *names = ait_node_attr(node, "activations");
  int n_names = names && names->type == AIT_ATTR_STRINGS ? names->n : 0;
  if (n_names && n_names != c->n_act && n_names != c->n_act * c->dirs)
    return ait_err(AIT_E_INVALID_ARG, "%d activations given, %s takes %d per direction", n_names,
                   node->op_type, c->n_act);
  int n_alpha, n_beta, ai = 0, bi = 0;
  const float *alphas = ait_attr_floats(node, "activation_alpha", &n_alpha);
  const float *betas = ait_attr_floats(node, "activation_beta", &n_beta);
  for (int d = 0; d < c->dirs; d++) {
    for (int k = 0; k < c->n_act; k++) {
      const char *nm = default_acts[c->kind][k];
      if (n_names) nm = names->strings[n_names == c->n_act ? k : d * c->n_act + k];
      char low[32];
      size_t len = strlen(nm);
      if (len >= sizeof low) len = sizeof low - 1;
      for (size_t i = 0; i < len; i++)
        low[i] = (char)tolower((unsigned char)nm[i]);
      low[len] = 0;
      int row = -1;
      for (int i = 0; i < (int)(sizeof act_table / sizeof act_table[0]); i++)
        if (!strcmp(act_table[i].name, low)) row = i;
      if (row < 0) return ait_err(AIT_E_UNSUPPORTED, "unknown activation '%s'", nm);
      act *a = &c->acts[d][k];
      a->fn = act_table[row].fn;
      a->alpha = act_table[row].alpha;
      a->beta = act_table[row].beta;
      /* only explicitly listed activations consume alpha/beta values */
      if (n_names && act_table[row].n_params >= 1 && ai < n_alpha) a->alpha = alphas[ai++];
      if (n_names && act_table[row].n_params >= 2 && bi < n_beta) a->beta = betas[bi++];
    }
  }
  return AIT_OK;
}

static bool shape_is(const ait_tensor *t, int rank, const int64_t *dims) {
  if (t->rank != rank) return false;
  for (int d = 0; d < rank; d++)
    if (t->dims[d] != dims[d]) return false;
  return true;
}

static ait_status bad_shape(const char *what, const ait_tensor *t, int rank, const int64_t *dims) {
  char b1[96], b2[96];
  return ait_err(AIT_E_SHAPE, "%s is %s, expected %s", what,
                 ait_shape_str(t->rank, t->dims, b1, sizeof b1),
                 ait_shape_str(rank, dims, b2, sizeof b2));
}

static ait_status parse_cfg(rnn_kind kind, const ait_node *node, const ait_tensor *const *in,
                            int n_in, rnn_cfg *c) {
  memset(c, 0, sizeof *c);
  c->kind = kind;
  c->G = kind == KIND_RNN ? 1 : kind == KIND_GRU ? 3 : 4;
  c->n_act = kind == KIND_RNN ? 1 : kind == KIND_GRU ? 2 : 3;
  if (n_in < 3 || !in[0] || !in[1] || !in[2])
    return ait_err(AIT_E_INVALID_ARG, "%s needs inputs X, W and R", node->op_type);
  const ait_tensor *X = in[0], *W = in[1], *R = in[2];
  const ait_dtype_traits *tr = ait_dtype_traits_of(X->dtype);
  if (!tr || !tr->is_float)
    return ait_err(AIT_E_DTYPE, "X must be float, got %s", ait_dtype_name(X->dtype));
  for (int i = 1; i < n_in && i < 8; i++) {
    const ait_dtype_traits *t = in[i] ? ait_dtype_traits_of(in[i]->dtype) : NULL;
    if (in[i] && (!t || (i == 4 ? !t->is_int : !t->is_float)))
      return ait_err(AIT_E_DTYPE, "input %d has dtype %s", i, ait_dtype_name(in[i]->dtype));
  }
  const char *dir = ait_attr_str(node, "direction", "forward");
  if (!strcmp(dir, "bidirectional"))
    c->dirs = 2;
  else if (!strcmp(dir, "forward") || !strcmp(dir, "reverse"))
    c->dirs = 1;
  else
    return ait_err(AIT_E_INVALID_ARG, "direction '%s' is not forward, reverse or bidirectional",
                   dir);
  c->reverse = !strcmp(dir, "reverse");
  c->layout = (int)ait_attr_int(node, "layout", 0);
  if (c->layout != 0 && c->layout != 1)
    return ait_err(AIT_E_INVALID_ARG, "layout %d is not 0 or 1", c->layout);
  if (X->rank != 3) return ait_err(AIT_E_SHAPE, "X must have rank 3, got %d", X->rank);
  c->S = X->dims[c->layout ? 1 : 0];
  c->B = X->dims[c->layout ? 0 : 1];
  c->I = X->dims[2];
  if (R->rank != 3) return ait_err(AIT_E_SHAPE, "R must have rank 3, got %d", R->rank);
  c->H = R->dims[2];
  int64_t hs = ait_attr_int(node, "hidden_size", c->H);
  if (hs != c->H)
    return ait_err(AIT_E_SHAPE, "hidden_size %lld does not match R's %lld", (long long)hs,
                   (long long)c->H);
  int64_t GH = c->G * c->H;
  int64_t wd[3] = {c->dirs, GH, c->I}, rd[3] = {c->dirs, GH, c->H}, bd[2] = {c->dirs, 2 * GH};
  int64_t sd[1] = {c->B}, pd[2] = {c->dirs, 3 * c->H};
  int64_t hd[3] = {c->dirs, c->B, c->H};
  if (c->layout) {
    hd[0] = c->B;
    hd[1] = c->dirs;
  }
  if (!shape_is(W, 3, wd)) return bad_shape("W", W, 3, wd);
  if (!shape_is(R, 3, rd)) return bad_shape("R", R, 3, rd);
  if (n_in > 3 && in[3] && !shape_is(in[3], 2, bd)) return bad_shape("B", in[3], 2, bd);
  if (n_in > 4 && in[4] && !shape_is(in[4], 1, sd)) return bad_shape("sequence_lens", in[4], 1, sd);
  if (n_in > 5 && in[5] && !shape_is(in[5], 3, hd)) return bad_shape("initial_h", in[5], 3, hd);
  if (kind == KIND_LSTM && n_in > 6 && in[6] && !shape_is(in[6], 3, hd))
    return bad_shape("initial_c", in[6], 3, hd);
  if (kind == KIND_LSTM && n_in > 7 && in[7] && !shape_is(in[7], 2, pd))
    return bad_shape("P", in[7], 2, pd);
  const ait_attr *clip = ait_node_attr(node, "clip");
  if (clip) {
    c->has_clip = true;
    c->clip = clip->f;
  }
  c->lbr = ait_attr_int(node, "linear_before_reset", 0) != 0;
  c->input_forget = ait_attr_int(node, "input_forget", 0) != 0;
  return parse_acts(node, c);
}

/* ---- the recurrence ----------------------------------------------------- */

/* Per-direction weights and scratch, all double. */
typedef struct rnn_dir {
  const double *w, *r, *wb, *rb, *p; /* [GH, I], [GH, H], [GH], [GH], [3H] */
  double *gx, *gh, *tmp;             /* scratch: [GH], [GH], [GH] */
} rnn_dir;

static inline double clipv(const rnn_cfg *c, double v) {
  if (!c->has_clip) return v;
  return v < -c->clip ? -c->clip : v > c->clip ? c->clip : v;
}

/* out[j] = bias[j] + sum_k m[j][k] * v[k] for j < rows. */
static void matvec(const double *m, const double *v, const double *bias, int64_t rows, int64_t cols,
                   double *out) {
  for (int64_t j = 0; j < rows; j++) {
    double s = bias[j];
    const double *row = m + j * cols;
    for (int64_t k = 0; k < cols; k++)
      s += row[k] * v[k];
    out[j] = s;
  }
}

/* One step: h (and c for LSTM) are updated in place from input x. */
static void rnn_step(const rnn_cfg *c, const rnn_dir *dd, const act *acts, const double *x,
                     double *h, double *cell) {
  int64_t H = c->H, GH = c->G * H;
  double *gx = dd->gx, *gh = dd->gh;
  matvec(dd->w, x, dd->wb, GH, c->I, gx);
  matvec(dd->r, h, dd->rb, GH, H, gh);
  if (c->kind == KIND_RNN) {
    for (int64_t j = 0; j < H; j++)
      h[j] = act_apply(&acts[0], clipv(c, gx[j] + gh[j]));
    return;
  }
  if (c->kind == KIND_GRU) {
    double *z = dd->tmp, *rg = dd->tmp + H, *rh = dd->tmp + 2 * H;
    for (int64_t j = 0; j < H; j++) {
      z[j] = act_apply(&acts[0], clipv(c, gx[j] + gh[j]));
      rg[j] = act_apply(&acts[0], clipv(c, gx[H + j] + gh[H + j]));
    }
    if (!c->lbr) { /* (r . h) R_h^T + Rb_h */
      for (int64_t k = 0; k < H; k++)
        rh[k] = rg[k] * h[k];
      matvec(dd->r + 2 * H * H, rh, dd->rb + 2 * H, H, H, gh + 2 * H);
    } else { /* r . (h R_h^T + Rb_h): gh already holds the bracket */
      for (int64_t j = 0; j < H; j++)
        gh[2 * H + j] *= rg[j];
    }
    for (int64_t j = 0; j < H; j++) {
      double hh = act_apply(&acts[1], clipv(c, gx[2 * H + j] + gh[2 * H + j]));
      h[j] = (1.0 - z[j]) * hh + z[j] * h[j];
    }
    return;
  }
  /* LSTM: gates i, o, f, c; peepholes i, o, f */
  const double *p = dd->p;
  for (int64_t j = 0; j < H; j++) {
    double gi = act_apply(&acts[0], clipv(c, gx[j] + gh[j] + p[j] * cell[j]));
    double gf =
        c->input_forget
            ? 1.0 - gi
            : act_apply(&acts[0], clipv(c, gx[2 * H + j] + gh[2 * H + j] + p[2 * H + j] * cell[j]));
    double gc = act_apply(&acts[1], clipv(c, gx[3 * H + j] + gh[3 * H + j]));
    double cn = gf * cell[j] + gi * gc;
    double go = act_apply(&acts[0], clipv(c, gx[H + j] + gh[H + j] + p[H + j] * cn));
    cell[j] = cn;
    h[j] = go * act_apply(&acts[2], cn); /* h(C) unclipped, as onnxruntime */
  }
}

/* ---- the kernel --------------------------------------------------------- */

/* A tensor as a new double array (zeros when t is NULL). NULL on OOM. */
static double *to_f64(const ait_tensor *t, int64_t n) {
  double *v = calloc((size_t)(n > 0 ? n : 1), sizeof *v);
  if (!v || !t) return v;
  const ait_dtype_traits *tr = ait_dtype_traits_of(t->dtype);
  for (int64_t i = 0; i < n; i++)
    v[i] = ait_load_f64(tr, t->data, i);
  return v;
}

/* [a, b, inner] -> [b, a, inner] in a new array that replaces *v. */
static ait_status swap_outer(double **v, int64_t a, int64_t b, int64_t inner) {
  double *t = to_f64(NULL, a * b * inner);
  if (!t) return ait_err(AIT_E_NOMEM, "out of memory for %lld values", (long long)(a * b * inner));
  for (int64_t i = 0; i < a; i++)
    for (int64_t j = 0; j < b; j++)
      memcpy(t + (j * a + i) * inner, *v + (i * b + j) * inner, (size_t)inner * sizeof *t);
  free(*v);
  *v = t;
  return AIT_OK;
}

/* Working arrays, all double, layout 0. */
enum { B_X, B_W, B_R, B_B, B_H0, B_C0, B_P, B_Y, B_YH, B_YC, B_SCRATCH, B_N };

/* Run every direction and batch row over its sequence into Y, Y_h, Y_c. */
static void rnn_recur(const rnn_cfg *c, const int64_t *lens, double *const *buf) {
  int64_t Bn = c->B, I = c->I, H = c->H, D = c->dirs, GH = c->G * H;
  for (int64_t d = 0; d < D; d++) {
    double *sc = buf[B_SCRATCH];
    rnn_dir dd = {buf[B_W] + d * GH * I,
                  buf[B_R] + d * GH * H,
                  buf[B_B] + d * 2 * GH,
                  buf[B_B] + d * 2 * GH + GH,
                  buf[B_P] + d * 3 * H,
                  sc,
                  sc + GH,
                  sc + 2 * GH};
    double *hcur = sc + 3 * GH, *ccur = sc + 3 * GH + H;
    bool backwards = c->reverse || d == 1;
    for (int64_t b = 0; b < Bn; b++) {
      memcpy(hcur, buf[B_H0] + (d * Bn + b) * H, (size_t)H * sizeof *hcur);
      memcpy(ccur, buf[B_C0] + (d * Bn + b) * H, (size_t)H * sizeof *ccur);
      for (int64_t k = 0; k < lens[b]; k++) {
        int64_t t = backwards ? lens[b] - 1 - k : k;
        rnn_step(c, &dd, c->acts[d], buf[B_X] + (t * Bn + b) * I, hcur, ccur);
        memcpy(buf[B_Y] + ((t * D + d) * Bn + b) * H, hcur, (size_t)H * sizeof *hcur);
      }
      if (lens[b] > 0) {
        memcpy(buf[B_YH] + (d * Bn + b) * H, hcur, (size_t)H * sizeof *hcur);
        memcpy(buf[B_YC] + (d * Bn + b) * H, ccur, (size_t)H * sizeof *ccur);
      }
    }
  }
}

/* The outputs the node uses, in its layout and dtype dt. */
static ait_status rnn_outputs(const rnn_cfg *c, const ait_node *node, ait_dtype dt,
                              double *const *buf, ait_tensor **out, int n_out) {
  int64_t S = c->S, Bn = c->B, H = c->H, D = c->dirs;
  const ait_dtype_traits *tr = ait_dtype_traits_of(dt);
  int64_t y0[4] = {S, D, Bn, H}, y1[4] = {Bn, S, D, H}, h0[3] = {D, Bn, H}, h1[3] = {Bn, D, H};
  int n_outs = c->kind == KIND_LSTM ? 3 : 2;
  for (int o = 0; o < n_outs && o < n_out; o++) {
    if (node->out[o] < 0) continue;
    out[o] = o == 0 ? ait_tensor_new(dt, 4, c->layout ? y1 : y0)
                    : ait_tensor_new(dt, 3, c->layout ? h1 : h0);
    if (!out[o]) return AIT_E_NOMEM;
    const double *v = buf[o == 0 ? B_Y : o == 1 ? B_YH : B_YC];
    int64_t T = o == 0 ? S : 1; /* Y_h / Y_c: one "step" */
    for (int64_t t = 0; t < T; t++)
      for (int64_t d = 0; d < D; d++)
        for (int64_t b = 0; b < Bn; b++)
          for (int64_t j = 0; j < H; j++) {
            int64_t at = c->layout ? ((b * T + t) * D + d) * H + j : ((t * D + d) * Bn + b) * H + j;
            ait_store_f64(tr, out[o]->data, at, v[((t * D + d) * Bn + b) * H + j]);
          }
  }
  return AIT_OK;
}

static ait_status rnn_run(rnn_kind kind, const ait_node *node, const ait_tensor *const *in,
                          int n_in, ait_tensor **out, int n_out) {
  rnn_cfg c;
  AIT_TRY(parse_cfg(kind, node, in, n_in, &c));
  int64_t S = c.S, Bn = c.B, I = c.I, H = c.H, D = c.dirs, GH = c.G * H;
  const ait_tensor *opt[8] = {0};
  for (int i = 0; i < n_in && i < 8; i++)
    opt[i] = in[i];
  int64_t *lens = malloc((size_t)(Bn > 0 ? Bn : 1) * sizeof *lens);
  if (!lens) return ait_err(AIT_E_NOMEM, "out of memory");
  for (int64_t b = 0; b < Bn; b++) {
    lens[b] = opt[4] ? ait_load_i64(ait_dtype_traits_of(opt[4]->dtype), opt[4]->data, b) : S;
    if (lens[b] < 0 || lens[b] > S) {
      int64_t bad = lens[b];
      free(lens);
      return ait_err(AIT_E_INVALID_ARG, "sequence_lens[%lld] = %lld is outside [0, %lld]",
                     (long long)b, (long long)bad, (long long)S);
    }
  }
  double *buf[B_N] = {0};
  int64_t sizes[B_N] = {S * Bn * I, D * GH * I, D * GH * H,    D * 2 * GH,
                        D * Bn * H, D * Bn * H, D * 3 * H,     S * D * Bn * H,
                        D * Bn * H, D * Bn * H, 3 * GH + 2 * H};
  const ait_tensor *src[B_N] = {opt[0],
                                opt[1],
                                opt[2],
                                opt[3],
                                opt[5],
                                kind == KIND_LSTM ? opt[6] : NULL,
                                kind == KIND_LSTM ? opt[7] : NULL};
  ait_status s = AIT_OK;
  for (int i = 0; i < B_N && s == AIT_OK; i++) {
    buf[i] = to_f64(src[i], sizes[i]);
    if (!buf[i]) s = ait_err(AIT_E_NOMEM, "out of memory for %lld values", (long long)sizes[i]);
  }
  if (s == AIT_OK && c.layout) { /* batch-first inputs to layout 0 */
    s = swap_outer(&buf[B_X], Bn, S, I);
    if (s == AIT_OK) s = swap_outer(&buf[B_H0], Bn, D, H);
    if (s == AIT_OK) s = swap_outer(&buf[B_C0], Bn, D, H);
  }
  if (s == AIT_OK) {
    rnn_recur(&c, lens, buf);
    s = rnn_outputs(&c, node, in[0]->dtype, buf, out, n_out);
  }
  for (int i = 0; i < B_N; i++)
    free(buf[i]);
  free(lens);
  return s;
}

AIT_REDUCE_KERNEL(ait_k_rnn) { return rnn_run(KIND_RNN, node, in, n_in, out, n_out); }
AIT_REDUCE_KERNEL(ait_k_gru) { return rnn_run(KIND_GRU, node, in, n_in, out, n_out); }
AIT_REDUCE_KERNEL(ait_k_lstm) { return rnn_run(KIND_LSTM, node, in, n_in, out, n_out); }

ait_status ait_rnn_shape(ait_graph *g, const ait_node *n) {
  ait_value *x = ait_node_in(g, n, 0), *r = ait_node_in(g, n, 2);
  if (!x) return AIT_OK;
  int layout = (int)ait_attr_int(n, "layout", 0);
  const char *dir = ait_attr_str(n, "direction", "forward");
  ait_dim D = {!strcmp(dir, "bidirectional") ? 2 : 1, NULL};
  ait_dim H = {ait_attr_int(n, "hidden_size", -1), NULL};
  if (H.v < 0 && r && r->rank == 3) H = r->dims[2];
  ait_dim unk = {-1, NULL}, S = unk, B = unk;
  if (x->rank == 3) {
    S = x->dims[layout ? 1 : 0];
    B = x->dims[layout ? 0 : 1];
  }
  ait_dim y0[4] = {S, D, B, H}, y1[4] = {B, S, D, H};
  ait_dim h0[3] = {D, B, H}, h1[3] = {B, D, H};
  int n_outs = !strcmp(n->op_type, "LSTM") ? 3 : 2;
  for (int o = 0; o < n->n_out && o < n_outs; o++) {
    if (n->out[o] < 0) continue;
    if (o == 0)
      ait_set_out(g, n, 0, x->dtype, 4, layout ? y1 : y0);
    else
      ait_set_out(g, n, o, x->dtype, 3, layout ? h1 : h0);
  }
  return AIT_OK;
}
