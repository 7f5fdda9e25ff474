/* Attention (opsets 23, 24, 25): scaled dot-product attention as the spec
 * describes it, one query row at a time, in double.
 *
 * Q (B, Hq, Sq, D) or 3-D (B, Sq, Hq*D) with q_num_heads; K, V likewise with
 * kv_num_heads (Hq a multiple of Hkv: query head h reads kv head
 * h / (Hq / Hkv)). past_key/past_value are prepended to K/V (present_*
 * outputs). For each query i and key j < T = P + Skv:
 *   score = scale * q.k, capped = softcap * tanh(score / softcap) (softcap > 0),
 *   bias  = attn_mask (bool: 0 / -inf; float: added; keys past its last dim:
 *           -inf) + causal (-inf unless j <= i + offset) + sliding window
 *           (opset 25: left/right_window_size around i + offset)
 *           + padding (-inf for j >= nonpad_kv_seqlen[b], opset 24),
 *   where offset = P with a past cache, nonpad_kv_seqlen[b] - Sq with an
 *   external one, else 0; Y = softmax(capped + bias) V. A row whose bias is
 *   -inf everywhere is a zero row (spec: not NaN), in Y and in mode 3.
 * qk_matmul_output is the score (mode 0), capped (1), capped + bias (2) or
 * the softmax (3). Computing in double is at least as precise as
 * softmax_precision asks, so that attribute needs no other handling. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/nn_impl.h"

typedef struct attn_geo {
  int64_t B, Hq, Hkv, Sq, Skv, P, T, D, Dv;
  bool three_d;
} attn_geo;

/* Strides (b, h, s) of a (B, H, S, X) view of t: 4-D as it is, 3-D as
 * (B, S, H*X). */
static void view_strides(const ait_tensor *t, int64_t H, int64_t X, bool three_d, int64_t *sb,
                         int64_t *sh, int64_t *ss) {
  int64_t S = t->dims[three_d ? 1 : 2];
  *sb = H * S * X;
  *sh = three_d ? X : S * X;
  *ss = three_d ? H * X : X;
}

static ait_status attn_geometry(const ait_node *node, const ait_tensor *Q, const ait_tensor *K,
                                const ait_tensor *V, const ait_tensor *pk, const ait_tensor *pv,
                                attn_geo *g) {
  if (Q->rank != K->rank || Q->rank != V->rank || (Q->rank != 3 && Q->rank != 4))
    return ait_err(AIT_E_SHAPE, "Q, K and V must all be 3-D or all 4-D, got ranks %d, %d, %d",
                   Q->rank, K->rank, V->rank);
  g->three_d = Q->rank == 3;
  g->B = Q->dims[0];
  if (K->dims[0] != g->B || V->dims[0] != g->B)
    return ait_err(AIT_E_SHAPE, "Q, K and V have different batch sizes");
  if (g->three_d) {
    g->Hq = ait_attr_int(node, "q_num_heads", 0);
    g->Hkv = ait_attr_int(node, "kv_num_heads", 0);
    if (g->Hq <= 0 || g->Hkv <= 0)
      return ait_err(AIT_E_INVALID_ARG, "3-D Q, K, V need q_num_heads and kv_num_heads > 0");
    if (Q->dims[2] % g->Hq || K->dims[2] % g->Hkv || V->dims[2] % g->Hkv)
      return ait_err(AIT_E_SHAPE,
                     "hidden sizes %lld, %lld, %lld do not split into %lld / %lld heads",
                     (long long)Q->dims[2], (long long)K->dims[2], (long long)V->dims[2],
                     (long long)g->Hq, (long long)g->Hkv);
    g->Sq = Q->dims[1], g->Skv = K->dims[1];
    g->D = Q->dims[2] / g->Hq, g->Dv = V->dims[2] / g->Hkv;
    if (K->dims[2] / g->Hkv != g->D) return ait_err(AIT_E_SHAPE, "Q and K head sizes differ");
    if (V->dims[1] != g->Skv) return ait_err(AIT_E_SHAPE, "K and V sequence lengths differ");
  } else {
    g->Hq = Q->dims[1], g->Hkv = K->dims[1];
    g->Sq = Q->dims[2], g->Skv = K->dims[2];
    g->D = Q->dims[3], g->Dv = V->dims[3];
    if (K->dims[3] != g->D) return ait_err(AIT_E_SHAPE, "Q and K head sizes differ");
    if (V->dims[1] != g->Hkv || V->dims[2] != g->Skv)
      return ait_err(AIT_E_SHAPE, "K and V differ in heads or sequence length");
  }
  if (g->Hkv <= 0 || g->Hq % g->Hkv)
    return ait_err(AIT_E_SHAPE, "q_num_heads %lld is not a multiple of kv_num_heads %lld",
                   (long long)g->Hq, (long long)g->Hkv);
  if (!pk != !pv) return ait_err(AIT_E_INVALID_ARG, "past_key and past_value go together");
  g->P = 0;
  if (pk) {
    if (pk->rank != 4 || pv->rank != 4 || pk->dims[0] != g->B || pk->dims[1] != g->Hkv ||
        pk->dims[3] != g->D || pv->dims[0] != g->B || pv->dims[1] != g->Hkv ||
        pv->dims[2] != pk->dims[2] || pv->dims[3] != g->Dv)
      return ait_err(AIT_E_SHAPE, "past_key/past_value must be (B, kv_num_heads, P, head size)");
    g->P = pk->dims[2];
  }
  g->T = g->P + g->Skv;
  return AIT_OK;
}

/* present (B, Hkv, T, X) in double: past rows, then the new K or V. */
static double *present_of(const attn_geo *g, const ait_tensor *t, const ait_tensor *past,
                          int64_t X) {
  double *v = nn_load_f64(t), *p = past ? nn_load_f64(past) : NULL;
  double *out = malloc((size_t)(g->B * g->Hkv * g->T * X + 1) * sizeof *out);
  if (!v || (past && !p) || !out) {
    free(v), free(p), free(out);
    ait_err(AIT_E_NOMEM, "out of memory in Attention");
    return NULL;
  }
  int64_t sb, sh, ss;
  view_strides(t, g->Hkv, X, g->three_d, &sb, &sh, &ss);
  for (int64_t b = 0; b < g->B; b++)
    for (int64_t h = 0; h < g->Hkv; h++) {
      double *o = out + (b * g->Hkv + h) * g->T * X;
      if (p) memcpy(o, p + (b * g->Hkv + h) * g->P * X, (size_t)(g->P * X) * sizeof *o);
      for (int64_t s = 0; s < g->Skv; s++)
        memcpy(o + (g->P + s) * X, v + b * sb + h * sh + s * ss, (size_t)X * sizeof *o);
    }
  free(v), free(p);
  return out;
}

/* The mask read as (B, Hq, Sq, Tm) with broadcast strides. */
typedef struct attn_mask {
  const ait_tensor *t;
  double *v; /* float masks in double; NULL for bool */
  int64_t st[4], Tm;
} attn_mask;

static ait_status mask_of(const ait_tensor *m, const attn_geo *g, attn_mask *am) {
  memset(am, 0, sizeof *am);
  if (!m) return AIT_OK;
  if (m->rank < 1 || m->rank > 4)
    return ait_err(AIT_E_SHAPE, "attn_mask must have rank 1 to 4, got %d", m->rank);
  int64_t tgt[4] = {g->B, g->Hq, g->Sq, m->dims[m->rank - 1]};
  if (tgt[3] > g->T)
    return ait_err(AIT_E_SHAPE, "attn_mask's last dim %lld exceeds the %lld keys",
                   (long long)tgt[3], (long long)g->T);
  for (int d = 0; d < m->rank; d++) {
    int64_t want = tgt[4 - m->rank + d];
    if (m->dims[d] != want && m->dims[d] != 1) {
      char a[96];
      return ait_err(AIT_E_SHAPE, "attn_mask %s does not broadcast to (%lld, %lld, %lld, %lld)",
                     ait_shape_str(m->rank, m->dims, a, sizeof a), (long long)g->B,
                     (long long)g->Hq, (long long)g->Sq, (long long)g->T);
    }
  }
  ait_broadcast_strides(m->rank, m->dims, 4, tgt, am->st);
  am->t = m;
  am->Tm = tgt[3];
  if (m->dtype != AIT_BOOL) {
    AIT_TRY(nn_check_float(m, "attn_mask"));
    if (!(am->v = nn_load_f64(m))) return AIT_E_NOMEM;
  }
  return AIT_OK;
}

/* Every per-node setting that shapes a row's bias. */
typedef struct attn_opts {
  double scale, softcap;
  bool causal;
  int64_t left, right, mode;
  const int64_t *nonpad; /* (B,) or NULL */
} attn_opts;

/* bias[j] for query i of (b, h); returns whether any key is allowed. */
static bool row_bias(const attn_geo *g, const attn_mask *am, const attn_opts *o, int64_t b,
                     int64_t h, int64_t i, double *bias) {
  int64_t offset = g->P;
  if (!g->P && o->nonpad) offset = o->nonpad[b] - g->Sq;
  bool any = false;
  for (int64_t j = 0; j < g->T; j++) {
    double v = 0;
    if (am->t) {
      if (j >= am->Tm) {
        v = -INFINITY;
      } else {
        int64_t at = b * am->st[0] + h * am->st[1] + i * am->st[2] + j * am->st[3];
        v = am->v ? am->v[at] : ((const uint8_t *)am->t->data)[at] ? 0 : -INFINITY;
      }
    }
    int64_t diff = i + offset - j; /* how far key j lies before the query's position */
    if (o->causal && diff < 0) v = -INFINITY;
    if (o->left >= 0 && diff > o->left) v = -INFINITY;
    if (o->right >= 0 && -diff > o->right) v = -INFINITY;
    if (o->nonpad && j >= o->nonpad[b]) v = -INFINITY;
    bias[j] = v;
    any |= v != -INFINITY;
  }
  return any;
}

static ait_status attn_opts_of(const ait_node *node, const ait_tensor *nonpad, const attn_geo *g,
                               attn_opts *o, int64_t **nonpad_v) {
  o->scale =
      ait_node_attr(node, "scale") ? ait_attr_float(node, "scale", 1.0f) : 1.0 / sqrt((double)g->D);
  o->softcap = ait_attr_float(node, "softcap", 0.0f);
  o->causal = ait_attr_int(node, "is_causal", 0) != 0;
  o->left = node->opset >= 25 ? ait_attr_int(node, "left_window_size", -1) : -1;
  o->right = node->opset >= 25 ? ait_attr_int(node, "right_window_size", -1) : -1;
  o->mode = ait_attr_int(node, "qk_matmul_output_mode", 0);
  if (o->mode < 0 || o->mode > 3)
    return ait_err(AIT_E_INVALID_ARG, "qk_matmul_output_mode %lld is not 0..3", (long long)o->mode);
  if (o->left < -1 || o->right < -1)
    return ait_err(AIT_E_INVALID_ARG, "window sizes must be -1 or >= 0");
  o->nonpad = NULL;
  *nonpad_v = NULL;
  if (nonpad) {
    if (g->P) return ait_err(AIT_E_INVALID_ARG, "nonpad_kv_seqlen cannot go with past_key");
    if (ait_tensor_numel(nonpad) != g->B)
      return ait_err(AIT_E_SHAPE, "nonpad_kv_seqlen has %lld values for batch %lld",
                     (long long)ait_tensor_numel(nonpad), (long long)g->B);
    int64_t *v = malloc((size_t)(g->B + 1) * sizeof *v);
    if (!v) return ait_err(AIT_E_NOMEM, "out of memory in Attention");
    const ait_dtype_traits *tr = ait_dtype_traits_of(nonpad->dtype);
    for (int64_t b = 0; b < g->B; b++)
      v[b] = tr ? ait_load_i64(tr, nonpad->data, b) : 0;
    o->nonpad = *nonpad_v = v;
  }
  return AIT_OK;
}

/* Inputs in double and the buffers every row shares; freed together. */
typedef struct attn_bufs {
  double *q, *k, *v, *row, *bias, *y, *qk;
} attn_bufs;

static void bufs_free(attn_bufs *a) {
  free(a->q), free(a->k), free(a->v), free(a->row), free(a->bias), free(a->y), free(a->qk);
}

/* One query row: scores, bias, softmax, Y row, qk row. */
static void attn_row(const attn_geo *g, const attn_mask *am, const attn_opts *o, attn_bufs *a,
                     int64_t b, int64_t h, int64_t i, const double *q, double *y, double *qk) {
  int64_t kvh = h / (g->Hq / g->Hkv);
  const double *kb = a->k + (b * g->Hkv + kvh) * g->T * g->D;
  const double *vb = a->v + (b * g->Hkv + kvh) * g->T * g->Dv;
  bool any = row_bias(g, am, o, b, h, i, a->bias);
  double mx = -INFINITY;
  for (int64_t j = 0; j < g->T; j++) {
    double s = 0;
    for (int64_t d = 0; d < g->D; d++)
      s += q[d] * kb[j * g->D + d];
    s *= o->scale;
    if (qk && o->mode == 0) qk[j] = s;
    if (o->softcap > 0) s = o->softcap * tanh(s / o->softcap);
    if (qk && o->mode == 1) qk[j] = s;
    s += a->bias[j];
    if (qk && o->mode == 2) qk[j] = s;
    a->row[j] = s;
    if (s > mx) mx = s;
  }
  double sum = 0;
  for (int64_t j = 0; j < g->T; j++) {
    a->row[j] = any && mx != -INFINITY ? exp(a->row[j] - mx) : 0;
    sum += a->row[j];
  }
  for (int64_t j = 0; j < g->T; j++) {
    a->row[j] = sum > 0 ? a->row[j] / sum : 0;
    if (qk && o->mode == 3) qk[j] = a->row[j];
  }
  for (int64_t d = 0; d < g->Dv; d++)
    y[d] = 0;
  for (int64_t j = 0; j < g->T; j++)
    if (a->row[j] != 0)
      for (int64_t d = 0; d < g->Dv; d++)
        y[d] += a->row[j] * vb[j * g->Dv + d];
}

static ait_status attn_outputs(const attn_geo *g, const ait_tensor *Q, const ait_node *node,
                               int n_out, ait_tensor **out) {
  int64_t yd[4] = {g->B, g->Hq, g->Sq, g->Dv}, y3[3] = {g->B, g->Sq, g->Hq * g->Dv};
  AIT_TRY(nn_new(&out[0], Q->dtype, g->three_d ? 3 : 4, g->three_d ? y3 : yd));
  int64_t pk[4] = {g->B, g->Hkv, g->T, g->D}, pv[4] = {g->B, g->Hkv, g->T, g->Dv};
  int64_t qk[4] = {g->B, g->Hq, g->Sq, g->T};
  if (n_out > 1 && node->out[1] >= 0) AIT_TRY(nn_new(&out[1], Q->dtype, 4, pk));
  if (n_out > 2 && node->out[2] >= 0) AIT_TRY(nn_new(&out[2], Q->dtype, 4, pv));
  if (n_out > 3 && node->out[3] >= 0) AIT_TRY(nn_new(&out[3], Q->dtype, 4, qk));
  return AIT_OK;
}

NN_KERNEL(nn_attention_kernel) {
  const ait_tensor *Q = n_in > 0 ? in[0] : NULL, *K = n_in > 1 ? in[1] : NULL;
  const ait_tensor *V = n_in > 2 ? in[2] : NULL, *M = n_in > 3 ? in[3] : NULL;
  const ait_tensor *PK = n_in > 4 ? in[4] : NULL, *PV = n_in > 5 ? in[5] : NULL;
  const ait_tensor *NP = n_in > 6 && node->opset >= 24 ? in[6] : NULL;
  if (!Q || !K || !V) return ait_err(AIT_E_INVALID_ARG, "Q, K and V are required");
  AIT_TRY(nn_check_float(Q, "Q"));
  AIT_TRY(nn_check_same_dtype(Q, K, "K"));
  AIT_TRY(nn_check_same_dtype(Q, V, "V"));
  attn_geo g = {0};
  AIT_TRY(attn_geometry(node, Q, K, V, PK, PV, &g));
  attn_opts o;
  int64_t *nonpad = NULL;
  AIT_TRY(attn_opts_of(node, NP, &g, &o, &nonpad));
  attn_mask am;
  ait_status st = mask_of(M, &g, &am);
  attn_bufs a = {0};
  if (!st) st = attn_outputs(&g, Q, node, n_out, out);
  ait_tensor *qko = !st && n_out > 3 ? out[3] : NULL;
  if (!st) {
    a.q = nn_load_f64(Q);
    a.k = present_of(&g, K, PK, g.D);
    a.v = present_of(&g, V, PV, g.Dv);
    a.row = malloc((size_t)(g.T + 1) * sizeof(double));
    a.bias = malloc((size_t)(g.T + 1) * sizeof(double));
    a.y = malloc((size_t)(ait_tensor_numel(out[0]) + 1) * sizeof(double));
    a.qk = qko ? malloc((size_t)(ait_tensor_numel(qko) + 1) * sizeof(double)) : NULL;
    if (!a.q || !a.k || !a.v || !a.row || !a.bias || !a.y || (qko && !a.qk))
      st = ait_err(AIT_E_NOMEM, "out of memory in Attention");
  }
  if (!st) {
    int64_t sb, sh, ss;
    view_strides(Q, g.Hq, g.D, g.three_d, &sb, &sh, &ss);
    int64_t yb, yh, ys;
    view_strides(out[0], g.Hq, g.Dv, g.three_d, &yb, &yh, &ys);
    for (int64_t b = 0; b < g.B; b++)
      for (int64_t h = 0; h < g.Hq; h++)
        for (int64_t i = 0; i < g.Sq; i++)
          attn_row(&g, &am, &o, &a, b, h, i, a.q + b * sb + h * sh + i * ss,
                   a.y + b * yb + h * yh + i * ys,
                   a.qk ? a.qk + ((b * g.Hq + h) * g.Sq + i) * g.T : NULL);
    nn_store_f64(out[0], a.y);
    if (n_out > 1 && out[1]) nn_store_f64(out[1], a.k);
    if (n_out > 2 && out[2]) nn_store_f64(out[2], a.v);
    if (qko) nn_store_f64(qko, a.qk);
  }
  bufs_free(&a);
  free(am.v);
  free(nonpad);
  return st;
}

/* ---- shape ---------------------------------------------------------------- */

static ait_dim dim_of(const ait_value *v, int d) {
  return v && v->rank > d ? v->dims[d] : (ait_dim){-1, NULL};
}
static ait_dim dim_div(ait_dim a, int64_t k) {
  return (ait_dim){a.v >= 0 && k > 0 ? a.v / k : -1, NULL};
}
static ait_dim dim_mul(ait_dim a, int64_t k) {
  return (ait_dim){a.v >= 0 && k > 0 ? a.v * k : -1, NULL};
}
static ait_dim dim_add(ait_dim a, ait_dim b) {
  return (ait_dim){a.v >= 0 && b.v >= 0 ? a.v + b.v : -1, NULL};
}

ait_status nn_attention_shape(ait_graph *g, const ait_node *n) {
  const ait_value *q = ait_node_in(g, n, 0), *k = ait_node_in(g, n, 1), *v = ait_node_in(g, n, 2);
  const ait_value *pk = ait_node_in(g, n, 4);
  if (!q || !k || !v || q->rank < 0) {
    for (int i = 0; i < n->n_out && i < 4; i++)
      ait_set_out(g, n, i, q ? q->dtype : AIT_UNDEFINED, -1, NULL);
    return AIT_OK;
  }
  bool three = q->rank == 3;
  int64_t hq = ait_attr_int(n, "q_num_heads", 0), hkv = ait_attr_int(n, "kv_num_heads", 0);
  ait_dim B = dim_of(q, 0), Hq = three ? (ait_dim){hq, NULL} : dim_of(q, 1);
  ait_dim Hkv = three ? (ait_dim){hkv, NULL} : dim_of(k, 1);
  ait_dim Sq = dim_of(q, three ? 1 : 2), Skv = dim_of(k, three ? 1 : 2);
  ait_dim D = three ? dim_div(dim_of(q, 2), hq) : dim_of(q, 3);
  ait_dim Dv = three ? dim_div(dim_of(v, 2), hkv) : dim_of(v, 3);
  ait_dim T = pk ? dim_add(dim_of(pk, 2), Skv) : Skv;
  ait_dim y4[4] = {B, Hq, Sq, Dv}, y3[3] = {B, Sq, dim_mul(Dv, hq)};
  ait_set_out(g, n, 0, q->dtype, three ? 3 : 4, three ? y3 : y4);
  ait_dim pkd[4] = {B, Hkv, T, D}, pvd[4] = {B, Hkv, T, Dv}, qkd[4] = {B, Hq, Sq, T};
  if (n->n_out > 1) ait_set_out(g, n, 1, q->dtype, 4, pkd);
  if (n->n_out > 2) ait_set_out(g, n, 2, q->dtype, 4, pvd);
  if (n->n_out > 3) ait_set_out(g, n, 3, q->dtype, 4, qkd);
  return AIT_OK;
}

/* ---- FlexAttention (ai.onnx.preview, opset 1) ------------------------------ */

/* Scores = scale Q K^T (B, Hq, L, S) in softmax_precision (float32, or
 * double for double inputs), then the score_mod subgraph, a softmax over S,
 * the prob_mod subgraph, and Y = P V in Q's type. Query head h reads kv
 * head h / (Hq / Hkv). */

/* Runs modifier `name` of node (when present) on *t, replacing it. */
static ait_status flex_mod(ait_kctx *ctx, const ait_node *node, const char *name, ait_tensor **t) {
  const ait_graph *body = ait_attr_graph(node, name);
  if (!body) return AIT_OK;
  if (body->n_inputs != 1 || body->n_outputs != 1)
    return ait_err(AIT_E_INVALID_MODEL, "FlexAttention %s must take and give one tensor", name);
  ait_tensor *res = NULL;
  ait_status st = ait_kctx_run_graph(ctx, body, (const ait_tensor *const *)t, 1, &res);
  if (st) return ait_err_prefix(st, "FlexAttention %s", name);
  if (!res || res->kind != AIT_KIND_TENSOR || res->dtype != (*t)->dtype || res->rank != 4 ||
      memcmp(res->dims, (*t)->dims, 4 * sizeof(int64_t))) {
    ait_tensor_free(res);
    return ait_err(AIT_E_SHAPE, "FlexAttention %s must keep its input's shape and type", name);
  }
  ait_tensor_free(*t);
  *t = res;
  return AIT_OK;
}

NN_KERNEL(nn_flex_attention_kernel) {
  const ait_tensor *Q = n_in > 0 ? in[0] : NULL, *K = n_in > 1 ? in[1] : NULL;
  const ait_tensor *V = n_in > 2 ? in[2] : NULL;
  if (!Q || !K || !V) return ait_err(AIT_E_INVALID_ARG, "Q, K and V are required");
  AIT_TRY(nn_check_float(Q, "Q"));
  if (Q->rank != 4 || K->rank != 4 || V->rank != 4)
    return ait_err(AIT_E_SHAPE, "FlexAttention takes rank-4 Q, K and V");
  int64_t B = Q->dims[0], Hq = Q->dims[1], L = Q->dims[2], D = Q->dims[3];
  int64_t Hkv = K->dims[1], S = K->dims[2], Dv = V->dims[3];
  if (K->dims[0] != B || V->dims[0] != B || K->dims[3] != D || V->dims[1] != Hkv ||
      V->dims[2] != S || Hkv <= 0 || Hq % Hkv)
    return ait_err(AIT_E_SHAPE, "FlexAttention Q, K, V shapes do not agree");
  int64_t prec =
      ait_attr_int(node, "softmax_precision", Q->dtype == AIT_FLOAT64 ? AIT_FLOAT64 : AIT_FLOAT32);
  if (prec != AIT_FLOAT32 && prec != AIT_FLOAT64 && prec != AIT_FLOAT16 && prec != AIT_BFLOAT16)
    return ait_err(AIT_E_INVALID_ARG, "softmax_precision %lld is not a float type",
                   (long long)prec);
  double scale =
      ait_node_attr(node, "scale") ? ait_attr_float(node, "scale", 1.0f) : 1.0 / sqrt((double)D);
  int64_t sd[4] = {B, Hq, L, S}, yd[4] = {B, Hq, L, Dv}, rep = Hq / Hkv;
  const ait_dtype_traits *pt = ait_dtype_traits_of((ait_dtype)prec);
  ait_tensor *sc = ait_tensor_new((ait_dtype)prec, 4, sd);
  double *q = nn_load_f64(Q), *k = nn_load_f64(K), *v = nn_load_f64(V);
  double *y = malloc((size_t)(B * Hq * L * Dv + 1) * sizeof *y);
  ait_status st = sc && q && k && v && y ? AIT_OK : ait_err(AIT_E_NOMEM, "out of memory");
  for (int64_t bh = 0; !st && bh < B * Hq; bh++) {
    const double *kb = k + (bh / Hq * Hkv + bh % Hq / rep) * S * D;
    for (int64_t i = 0; i < L; i++)
      for (int64_t j = 0; j < S; j++) {
        double s = 0;
        for (int64_t d = 0; d < D; d++)
          s += q[(bh * L + i) * D + d] * kb[j * D + d];
        ait_store_f64(pt, sc->data, (bh * L + i) * S + j, s * scale);
      }
  }
  if (!st) st = flex_mod(ctx, node, "score_mod", &sc);
  for (int64_t r = 0; !st && r < B * Hq * L; r++) { /* softmax over each row, in place */
    double mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j < S; j++)
      mx = fmax(mx, ait_load_f64(pt, sc->data, r * S + j));
    for (int64_t j = 0; j < S; j++)
      sum += exp(ait_load_f64(pt, sc->data, r * S + j) - mx);
    for (int64_t j = 0; j < S; j++)
      ait_store_f64(pt, sc->data, r * S + j, exp(ait_load_f64(pt, sc->data, r * S + j) - mx) / sum);
  }
  if (!st) st = flex_mod(ctx, node, "prob_mod", &sc);
  for (int64_t bh = 0; !st && bh < B * Hq; bh++) {
    const double *vb = v + (bh / Hq * Hkv + bh % Hq / rep) * S * Dv;
    for (int64_t i = 0; i < L; i++)
      for (int64_t d = 0; d < Dv; d++) {
        double s = 0;
        for (int64_t j = 0; j < S; j++)
          s += ait_load_f64(pt, sc->data, (bh * L + i) * S + j) * vb[j * Dv + d];
        y[(bh * L + i) * Dv + d] = s;
      }
  }
  if (!st) st = nn_new(&out[0], Q->dtype, 4, yd);
  if (!st) nn_store_f64(out[0], y);
  ait_tensor_free(sc);
  free(q), free(k), free(v), free(y);
  return st;
}

ait_status nn_flex_attention_shape(ait_graph *g, const ait_node *n) {
  const ait_value *q = ait_node_in(g, n, 0), *v = ait_node_in(g, n, 2);
  if (!q || !v || q->rank != 4 || v->rank != 4) {
    ait_set_out(g, n, 0, q ? q->dtype : AIT_UNDEFINED, -1, NULL);
    return AIT_OK;
  }
  ait_dim d[4] = {q->dims[0], q->dims[1], q->dims[2], v->dims[3]};
  ait_set_out(g, n, 0, q->dtype, 4, d);
  return AIT_OK;
}
