/* The recurrent-state ops of opset 27, run as their recurrences are
 * written (one token after the other), in double:
 *
 * LinearAttention: per batch and kv head a d_k x d_v state S (past_state or
 * zeros); for each token t, with e = exp(decay) (per key dimension or per
 * head) and beta the update rate,
 *   linear:      S = S + k v^T
 *   gated:       S = e * S + k v^T
 *   delta:       S = S + beta k (v - S^T k)^T
 *   gated_delta: S = e * S;  S = S + beta k (v - S^T k)^T
 * and each query head of the group reads o = scale q^T S (scale 0 means
 * 1/sqrt(d_k)). present_state is the final S.
 *
 * CausalConvWithState: a depthwise causal 1-D convolution over past_state
 * (zeros without it) followed by the input; present_state is the last k - 1
 * positions of that sequence; activation silu/swish is x sigmoid(x). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/nn_impl.h"

typedef enum { LA_LINEAR, LA_GATED, LA_DELTA, LA_GATED_DELTA } la_rule;

typedef struct la_geo {
  int64_t B, T, Hq, Hkv, dk, dv;
  bool decay_per_dim; /* decay (B, T, Hkv * dk), else (B, T, Hkv) */
  bool beta_per_head; /* beta (B, T, Hkv), else (B, T, 1) */
} la_geo;

static ait_status la_rule_of(const ait_node *node, la_rule *r) {
  static const char *const names[] = {"linear", "gated", "delta", "gated_delta"};
  const char *s = ait_attr_str(node, "update_rule", "gated_delta");
  for (int i = 0; i < 4; i++)
    if (!strcmp(s, names[i])) return *r = (la_rule)i, AIT_OK;
  return ait_err(AIT_E_INVALID_ARG,
                 "update_rule '%.40s' is not linear, gated, delta or gated_delta", s);
}

static ait_status la_geometry(const ait_node *node, const ait_tensor *const *t, la_rule rule,
                              la_geo *g) {
  const ait_tensor *q = t[0], *k = t[1], *v = t[2], *past = t[3], *decay = t[4], *beta = t[5];
  g->Hq = ait_attr_int(node, "q_num_heads", 0);
  g->Hkv = ait_attr_int(node, "kv_num_heads", 0);
  if (g->Hq <= 0 || g->Hkv <= 0 || g->Hq % g->Hkv)
    return ait_err(AIT_E_INVALID_ARG,
                   "q_num_heads %lld must be a positive multiple of kv_num_heads %lld",
                   (long long)g->Hq, (long long)g->Hkv);
  if (q->rank != 3 || k->rank != 3 || v->rank != 3)
    return ait_err(AIT_E_SHAPE, "query, key and value must be 3-D (B, T, heads * size)");
  g->B = q->dims[0], g->T = q->dims[1];
  if (k->dims[0] != g->B || v->dims[0] != g->B || k->dims[1] != g->T || v->dims[1] != g->T)
    return ait_err(AIT_E_SHAPE, "query, key and value differ in batch or length");
  if (q->dims[2] % g->Hq || k->dims[2] % g->Hkv || v->dims[2] % g->Hkv)
    return ait_err(AIT_E_SHAPE, "hidden sizes do not split into the heads");
  g->dk = q->dims[2] / g->Hq, g->dv = v->dims[2] / g->Hkv;
  if (k->dims[2] / g->Hkv != g->dk) return ait_err(AIT_E_SHAPE, "query and key head sizes differ");
  if (past && (past->rank != 4 || past->dims[0] != g->B || past->dims[1] != g->Hkv ||
               past->dims[2] != g->dk || past->dims[3] != g->dv))
    return ait_err(AIT_E_SHAPE, "past_state must be (B, kv_num_heads, d_k, d_v)");
  bool gated = rule == LA_GATED || rule == LA_GATED_DELTA, delta = rule >= LA_DELTA;
  if (gated && !decay) return ait_err(AIT_E_INVALID_ARG, "update_rule needs the decay input");
  if (delta && !beta) return ait_err(AIT_E_INVALID_ARG, "update_rule needs the beta input");
  if (decay) {
    if (decay->rank != 3 || decay->dims[0] != g->B || decay->dims[1] != g->T ||
        (decay->dims[2] != g->Hkv * g->dk && decay->dims[2] != g->Hkv))
      return ait_err(AIT_E_SHAPE, "decay must be (B, T, kv_num_heads [* d_k])");
    g->decay_per_dim = decay->dims[2] == g->Hkv * g->dk && g->dk != 1;
  }
  if (beta) {
    if (beta->rank != 3 || beta->dims[0] != g->B || beta->dims[1] != g->T ||
        (beta->dims[2] != g->Hkv && beta->dims[2] != 1))
      return ait_err(AIT_E_SHAPE, "beta must be (B, T, kv_num_heads) or (B, T, 1)");
    g->beta_per_head = beta->dims[2] == g->Hkv;
  }
  return AIT_OK;
}

/* One (batch, kv head) recurrence over all tokens; S is its d_k x d_v
 * state, u scratch of d_v. */
static void la_run(const la_geo *g, la_rule rule, double scale, double *const *v, int64_t b,
                   int64_t h, double *S, double *u, double *out) {
  const double *q = v[0], *k = v[1], *val = v[2], *decay = v[4], *beta = v[5];
  int64_t dk = g->dk, dv = g->dv, rep = g->Hq / g->Hkv;
  for (int64_t t = 0; t < g->T; t++) {
    int64_t bt = b * g->T + t;
    const double *kt = k + (bt * g->Hkv + h) * dk, *vt = val + (bt * g->Hkv + h) * dv;
    if (rule == LA_GATED || rule == LA_GATED_DELTA)
      for (int64_t i = 0; i < dk; i++) {
        double e =
            exp(g->decay_per_dim ? decay[(bt * g->Hkv + h) * dk + i] : decay[bt * g->Hkv + h]);
        for (int64_t j = 0; j < dv; j++)
          S[i * dv + j] *= e;
      }
    if (rule == LA_DELTA || rule == LA_GATED_DELTA) {
      double bb = beta[g->beta_per_head ? bt * g->Hkv + h : bt];
      for (int64_t j = 0; j < dv; j++) {
        double s = 0;
        for (int64_t i = 0; i < dk; i++)
          s += S[i * dv + j] * kt[i];
        u[j] = bb * (vt[j] - s);
      }
    } else {
      memcpy(u, vt, (size_t)dv * sizeof *u);
    }
    for (int64_t i = 0; i < dk; i++)
      for (int64_t j = 0; j < dv; j++)
        S[i * dv + j] += kt[i] * u[j];
    for (int64_t r = 0; r < rep; r++) {
      int64_t hq = h * rep + r;
      const double *qt = q + (bt * g->Hq + hq) * dk;
      double *o = out + (bt * g->Hq + hq) * dv;
      for (int64_t j = 0; j < dv; j++) {
        double s = 0;
        for (int64_t i = 0; i < dk; i++)
          s += qt[i] * S[i * dv + j];
        o[j] = scale * s;
      }
    }
  }
}

NN_KERNEL(nn_linear_attention_kernel) {
  const ait_tensor *t[6];
  for (int i = 0; i < 6; i++)
    t[i] = i < n_in ? in[i] : NULL;
  if (!t[0] || !t[1] || !t[2])
    return ait_err(AIT_E_INVALID_ARG, "query, key and value are required");
  for (int i = 0; i < 6; i++)
    if (t[i]) AIT_TRY(nn_check_float(t[i], "LinearAttention input"));
  la_rule rule = LA_GATED_DELTA;
  AIT_TRY(la_rule_of(node, &rule));
  la_geo g = {0};
  AIT_TRY(la_geometry(node, t, rule, &g));
  double scale = ait_attr_float(node, "scale", 0.0f);
  if (scale == 0) scale = 1.0 / sqrt((double)g.dk);
  int64_t od[3] = {g.B, g.T, g.Hq * g.dv}, sd[4] = {g.B, g.Hkv, g.dk, g.dv};
  AIT_TRY(nn_new(&out[0], t[0]->dtype, 3, od));
  if (n_out > 1 && node->out[1] >= 0) AIT_TRY(nn_new(&out[1], t[0]->dtype, 4, sd));
  double *v[6] = {0}, *state = malloc((size_t)(g.B * g.Hkv * g.dk * g.dv + 1) * sizeof(double));
  double *u = malloc((size_t)(g.dv + 1) * sizeof(double));
  double *o = malloc((size_t)(ait_tensor_numel(out[0]) + 1) * sizeof(double));
  ait_status st = state && u && o ? AIT_OK : ait_err(AIT_E_NOMEM, "out of memory");
  for (int i = 0; i < 6 && !st; i++)
    if (t[i] && !(v[i] = nn_load_f64(t[i]))) st = AIT_E_NOMEM;
  if (!st) {
    int64_t per = g.dk * g.dv;
    for (int64_t b = 0; b < g.B; b++)
      for (int64_t h = 0; h < g.Hkv; h++) {
        double *S = state + (b * g.Hkv + h) * per;
        if (v[3])
          memcpy(S, v[3] + (b * g.Hkv + h) * per, (size_t)per * sizeof *S);
        else
          memset(S, 0, (size_t)per * sizeof *S);
        la_run(&g, rule, scale, v, b, h, S, u, o);
      }
    nn_store_f64(out[0], o);
    if (n_out > 1 && out[1]) nn_store_f64(out[1], state);
  }
  for (int i = 0; i < 6; i++)
    free(v[i]);
  free(state), free(u), free(o);
  return st;
}

ait_status nn_linear_attention_shape(ait_graph *g, const ait_node *n) {
  const ait_value *q = ait_node_in(g, n, 0), *v = ait_node_in(g, n, 2);
  int64_t hq = ait_attr_int(n, "q_num_heads", 0), hkv = ait_attr_int(n, "kv_num_heads", 0);
  ait_dtype dt = q ? q->dtype : AIT_UNDEFINED;
  if (!q || !v || q->rank != 3 || v->rank != 3 || hq <= 0 || hkv <= 0) {
    ait_set_out(g, n, 0, dt, -1, NULL);
    if (n->n_out > 1) ait_set_out(g, n, 1, dt, -1, NULL);
    return AIT_OK;
  }
  int64_t dv = v->dims[2].v >= 0 ? v->dims[2].v / hkv : -1;
  int64_t dk = q->dims[2].v >= 0 ? q->dims[2].v / hq : -1;
  ait_dim od[3] = {q->dims[0], q->dims[1], {dv >= 0 ? dv * hq : -1, NULL}};
  ait_dim sd[4] = {q->dims[0], {hkv, NULL}, {dk, NULL}, {dv, NULL}};
  ait_set_out(g, n, 0, dt, 3, od);
  if (n->n_out > 1) ait_set_out(g, n, 1, dt, 4, sd);
  return AIT_OK;
}

/* ---- CausalConvWithState ------------------------------------------------- */

NN_KERNEL(nn_causal_conv_kernel) {
  const ait_tensor *x = n_in > 0 ? in[0] : NULL, *w = n_in > 1 ? in[1] : NULL;
  const ait_tensor *bias = n_in > 2 ? in[2] : NULL, *past = n_in > 3 ? in[3] : NULL;
  if (!x || !w) return ait_err(AIT_E_INVALID_ARG, "input and weight are required");
  AIT_TRY(nn_check_float(x, "input"));
  const char *act = ait_attr_str(node, "activation", "none");
  bool silu = !strcmp(act, "silu") || !strcmp(act, "swish");
  if (!silu && strcmp(act, "none"))
    return ait_err(AIT_E_INVALID_ARG, "activation '%.40s' is not silu, swish or none", act);
  if (x->rank != 3) return ait_err(AIT_E_SHAPE, "input must be (B, C, L), got rank %d", x->rank);
  int64_t B = x->dims[0], C = x->dims[1], L = x->dims[2];
  if (w->rank != 3 || w->dims[0] != C || w->dims[1] != 1 || w->dims[2] < 1)
    return ait_err(AIT_E_SHAPE, "weight must be (channels=%lld, 1, k >= 1)", (long long)C);
  int64_t K = w->dims[2], P = K - 1;
  if (bias && ait_tensor_numel(bias) != C) return ait_err(AIT_E_SHAPE, "bias must have C values");
  if (past && (past->rank != 3 || past->dims[0] != B || past->dims[1] != C || past->dims[2] != P))
    return ait_err(AIT_E_SHAPE, "past_state must be (B, C, k - 1 = %lld)", (long long)P);
  int64_t sd[3] = {B, C, P};
  AIT_TRY(nn_new(&out[0], x->dtype, 3, x->dims));
  if (n_out > 1 && node->out[1] >= 0) AIT_TRY(nn_new(&out[1], x->dtype, 3, sd));
  double *xv = nn_load_f64(x), *wv = nn_load_f64(w), *bv = bias ? nn_load_f64(bias) : NULL;
  double *pv = past ? nn_load_f64(past) : NULL, *seq = malloc((size_t)(P + L + 1) * sizeof(double));
  double *y = malloc((size_t)(B * C * L + 1) * sizeof(double));
  double *ps = malloc((size_t)(B * C * P + 1) * sizeof(double));
  ait_status st = xv && wv && (!bias || bv) && (!past || pv) && seq && y && ps
                      ? AIT_OK
                      : ait_err(AIT_E_NOMEM, "out of memory in CausalConvWithState");
  for (int64_t bc = 0; !st && bc < B * C; bc++) {
    int64_t c = bc % C;
    for (int64_t i = 0; i < P; i++)
      seq[i] = pv ? pv[bc * P + i] : 0;
    memcpy(seq + P, xv + bc * L, (size_t)L * sizeof *seq);
    for (int64_t t = 0; t < L; t++) {
      double s = bv ? bv[c] : 0;
      for (int64_t k = 0; k < K; k++)
        s += wv[c * K + k] * seq[t + k];
      y[bc * L + t] = silu ? s / (1 + exp(-s)) : s;
    }
    memcpy(ps + bc * P, seq + L, (size_t)P * sizeof *ps); /* the last k - 1 of P + L */
  }
  if (!st) {
    nn_store_f64(out[0], y);
    if (n_out > 1 && out[1]) nn_store_f64(out[1], ps);
  }
  free(xv), free(wv), free(bv), free(pv), free(seq), free(y), free(ps);
  return st;
}

ait_status nn_causal_conv_shape(ait_graph *g, const ait_node *n) {
  const ait_value *x = ait_node_in(g, n, 0), *w = ait_node_in(g, n, 1);
  ait_dtype dt = x ? x->dtype : AIT_UNDEFINED;
  ait_set_out(g, n, 0, dt, x ? x->rank : -1, x && x->rank >= 0 ? x->dims : NULL);
  if (n->n_out < 2) return AIT_OK;
  if (!x || x->rank != 3 || !w || w->rank != 3) {
    ait_set_out(g, n, 1, dt, -1, NULL);
    return AIT_OK;
  }
  ait_dim sd[3] = {x->dims[0], x->dims[1], {w->dims[2].v >= 1 ? w->dims[2].v - 1 : -1, NULL}};
  ait_set_out(g, n, 1, dt, 3, sd);
  return AIT_OK;
}
