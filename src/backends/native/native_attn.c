/* Fused attention for the native backend: the pass that takes the shared
 * attention pattern (ait_match_attention, src/ir/passes/attn.c), BERT-style
 * attention as exported by PyTorch,
 *
 *   Q  = Transpose(q, [0,2,1,3])       K' = Transpose(k, [0,2,3,1])
 *   S  = MatMul(Q, K') [* or / scalar] [+ mask]   (by now a FusedMatMul)
 *   P  = Softmax(S, axis=-1)
 *   Y  = Transpose(MatMul(P, Transpose(v, [0,2,1,3])), [0,2,1,3])
 *
 * (swin's windowed mask excepted: the kernel reads one mask through
 * broadcast strides), and makes it one FusedAttention node (src/ops/fused_impl.h), absorbing the
 * Transposes (each only when nothing else reads its output); and the kernel,
 * which works per (batch, head, block of query rows): the block's scores
 * stay in cache through the mask, the softmax and the product with V, so the
 * score matrix is never written to memory, and the transposes become
 * strides of the operands. On AVX-512 (native_attn512.c) and AVX2
 * (native_attn256.c, the same design on 8-float vectors) the scores are
 * computed transposed (query rows in the vector lanes) by a register tile,
 * so the mask, the maximum and the softmax's sums are vector operations;
 * below AVX2 both products go through SGEMM. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backends/native/native.h"
#include "ir/passes/passes.h"

static int in_at(const ait_node *n, int k) { return k < n->n_in ? n->in[k] : -1; }

static int sole_reader(const nat_uses *u, int v) {
  return v >= 0 && u->uses[v] == 1 && !u->is_out[v] ? u->consumer[v] : -1;
}

/* The node producing v when it is a live Transpose with a perm of length
 * `rank` and v is its only use; else -1. */
static int absorbable_transpose(const nat_uses *u, int v, int at, int rank) {
  const ait_graph *g = u->g;
  int p = v >= 0 ? g->values[v].producer : -1;
  if (p < 0 || u->dead[p] || !ait_is_op(&g->nodes[p], "Transpose") || !nat_single_use(u, v, at))
    return -1;
  int cnt = 0;
  return ait_attr_ints(&g->nodes[p], "perm", &cnt) && cnt == rank ? p : -1;
}

static ait_status set_perm(ait_node *n, const char *name, const ait_node *t) {
  int cnt = 0;
  const int64_t *perm = ait_attr_ints(t, "perm", &cnt);
  return nat_attr_set_ints(n, name, perm, cnt);
}

/* Softmax node si: the middle of an attention (ait_match_attention)?
 * Rewrite it if so. A windowed mask (swin's) stays as it is: the kernel
 * reads one mask through broadcast strides. */
static ait_status try_attention(nat_uses *u, int si, int *count) {
  ait_graph *g = u->g;
  ait_match_view view = nat_uses_view(u);
  ait_attn_match mt;
  if (!ait_match_attention(&view, si, &mt) || mt.wmask >= 0) return AIT_OK;
  int rank = g->values[mt.scores_out].rank, m2 = mt.pv, m1 = mt.scores;
  int q = mt.q, k = mt.kt, v = mt.v, mask = mt.mask;
  float alpha = mt.scale;
  int tq = absorbable_transpose(u, q, m1, rank), tk = absorbable_transpose(u, k, m1, rank);
  int tv = absorbable_transpose(u, v, m2, rank);
  int y = g->nodes[m2].out[0], to = sole_reader(u, y);
  if (to >= 0 && (!ait_is_op(&g->nodes[to], "Transpose") || g->nodes[to].n_out != 1)) to = -1;
  if (to >= 0) {
    int cnt = 0;
    if (!ait_attr_ints(&g->nodes[to], "perm", &cnt) || cnt != rank) to = -1;
  }
  /* node m2 becomes the fused node: it keeps the name of the product with V */
  ait_node *n = &g->nodes[m2];
  int *ins = malloc(sizeof(int) * 4);
  if (!ins) return ait_err(AIT_E_NOMEM, "out of memory fusing %s", ait_node_desc(n));
  ait_status st = nat_node_make_fused(n, "FusedAttention");
  if (st) {
    free(ins);
    return st;
  }
  ins[0] = tq >= 0 ? g->nodes[tq].in[0] : q;
  ins[1] = tk >= 0 ? g->nodes[tk].in[0] : k;
  ins[2] = tv >= 0 ? g->nodes[tv].in[0] : v;
  ins[3] = mask;
  free(n->in);
  n->in = ins;
  n->n_in = 4;
  AIT_TRY(nat_attr_set_float(n, "alpha", alpha));
  if (tq >= 0) AIT_TRY(set_perm(n, "q_perm", &g->nodes[tq]));
  if (tk >= 0) AIT_TRY(set_perm(n, "k_perm", &g->nodes[tk]));
  if (tv >= 0) AIT_TRY(set_perm(n, "v_perm", &g->nodes[tv]));
  if (to >= 0) {
    AIT_TRY(set_perm(n, "out_perm", &g->nodes[to]));
    n->out[0] = g->nodes[to].out[0];
    g->values[n->out[0]].producer = m2;
    u->dead[to] = true;
  }
  for (int i = 0; i < mt.n_nodes; i++)
    if (mt.nodes[i] != m2) u->dead[mt.nodes[i]] = true;
  if (tq >= 0) u->dead[tq] = true;
  if (tk >= 0) u->dead[tk] = true;
  if (tv >= 0) u->dead[tv] = true;
  (*count)++;
  return nat_uses_refresh(u);
}

/* ---- ONNX Attention (opset 23+) as FusedAttention ---------------------------
 * The case the PyTorch dynamo exporter writes for scaled_dot_product_attention
 * at opset 23: 4-D float32 Q, K, V with as many key as query heads, no past
 * cache, no nonpad_kv_seqlen, no softcap, no window, at most a float mask
 * covering every key (or is_causal with static lengths and no mask: a
 * constant causal mask is made), and only output Y read. The node becomes
 * FusedAttention in place (K read through perm [0,1,3,2], alpha = scale),
 * and the Transposes the exporter puts around it are absorbed as in
 * try_attention: a producer's perm composes with the node's own. Other
 * Attention nodes keep the reference kernel. */

/* The perm of Transpose node t composed with `after` (t's output read
 * through `after`): c[i] = t_perm[after[i]]. */
static ait_status compose_perm(ait_node *n, const char *name, const ait_node *t,
                               const int64_t *after) {
  int cnt = 0;
  const int64_t *p = ait_attr_ints(t, "perm", &cnt);
  int64_t c[4];
  for (int i = 0; i < 4; i++)
    c[i] = after ? p[after[i]] : p[i];
  return nat_attr_set_ints(n, name, c, 4);
}

static bool attention_simple(const nat_uses *u, const ait_node *n) {
  const ait_graph *g = u->g;
  if (n->n_in < 3 || in_at(n, 0) < 0 || in_at(n, 1) < 0 || in_at(n, 2) < 0) return false;
  for (int k = 4; k < n->n_in; k++)
    if (n->in[k] >= 0) return false; /* past_key/past_value, nonpad_kv_seqlen */
  for (int k = 1; k < n->n_out; k++)
    if (n->out[k] >= 0 && (u->uses[n->out[k]] || u->is_out[n->out[k]])) return false;
  const ait_value *qv = &g->values[n->in[0]], *kv = &g->values[n->in[1]];
  bool causal = ait_attr_int(n, "is_causal", 0) != 0;
  /* causal: a constant mask, so static lengths and no mask of the model's */
  if (causal && (in_at(n, 3) >= 0 || qv->rank != 4 || kv->rank != 4 || qv->dims[2].v <= 0 ||
                 kv->dims[2].v <= 0 || qv->dims[2].v * kv->dims[2].v > ((int64_t)1 << 24)))
    return false;
  if (ait_attr_float(n, "softcap", 0.0f) != 0 || ait_attr_int(n, "left_window_size", -1) >= 0 ||
      ait_attr_int(n, "right_window_size", -1) >= 0)
    return false;
  const ait_value *q = &g->values[n->in[0]], *k = &g->values[n->in[1]], *v = &g->values[n->in[2]];
  if (q->rank != 4 || k->rank != 4 || v->rank != 4 || q->dtype != AIT_FLOAT32 ||
      k->dtype != AIT_FLOAT32 || v->dtype != AIT_FLOAT32)
    return false;
  if (q->dims[1].v < 0 || q->dims[1].v != k->dims[1].v || k->dims[1].v != v->dims[1].v)
    return false; /* grouped heads: the reference */
  if (!ait_node_attr(n, "scale") && q->dims[3].v <= 0) return false;
  int m = in_at(n, 3);
  if (m >= 0) {
    const ait_value *mv = &g->values[m];
    if (mv->dtype != AIT_FLOAT32 || mv->rank < 1 || mv->rank > 4 || k->dims[2].v < 0 ||
        mv->dims[mv->rank - 1].v != k->dims[2].v)
      return false; /* bool masks, and short masks the spec pads with -inf */
  }
  return true;
}

static ait_status try_attention_op(nat_uses *u, int i, int *count) {
  ait_graph *g = u->g;
  ait_node *n = &g->nodes[i];
  if (!attention_simple(u, n)) return AIT_OK;
  float alpha = ait_node_attr(n, "scale")
                    ? ait_attr_float(n, "scale", 1.0f)
                    : (float)(1.0 / sqrt((double)g->values[n->in[0]].dims[3].v));
  int q = n->in[0], k = n->in[1], v = n->in[2], mask = in_at(n, 3);
  if (ait_attr_int(n, "is_causal", 0)) { /* query i sees keys j <= i (no cache: offset 0) */
    int64_t sq = g->values[q].dims[2].v, sk = g->values[k].dims[2].v, md[2] = {sq, sk};
    ait_tensor *t = ait_tensor_new(AIT_FLOAT32, 2, md);
    if (!t) return AIT_E_NOMEM;
    for (int64_t a = 0; a < sq; a++)
      for (int64_t b = 0; b < sk; b++)
        ((float *)t->data)[a * sk + b] = b <= a ? 0.0f : -INFINITY;
    if ((mask = nat_add_initializer(g, g->values[n->out[0]].name, "_causal_mask", t)) < 0)
      return ait_err(AIT_E_NOMEM, "out of memory fusing %s", ait_node_desc(&g->nodes[i]));
    n = &g->nodes[i];
  }
  int tq = absorbable_transpose(u, q, i, 4), tk = absorbable_transpose(u, k, i, 4);
  int tv = absorbable_transpose(u, v, i, 4);
  int y = n->out[0], to = sole_reader(u, y);
  if (to >= 0 && (!ait_is_op(&g->nodes[to], "Transpose") || g->nodes[to].n_out != 1)) to = -1;
  if (to >= 0) {
    int cnt = 0;
    if (!ait_attr_ints(&g->nodes[to], "perm", &cnt) || cnt != 4) to = -1;
  }
  int *ins = malloc(sizeof(int) * 4);
  if (!ins) return ait_err(AIT_E_NOMEM, "out of memory fusing %s", ait_node_desc(n));
  ins[0] = tq >= 0 ? g->nodes[tq].in[0] : q;
  ins[1] = tk >= 0 ? g->nodes[tk].in[0] : k;
  ins[2] = tv >= 0 ? g->nodes[tv].in[0] : v;
  ins[3] = mask;
  static const int64_t kt[4] = {0, 1, 3, 2}; /* K (B, H, Sk, D) read as (B, H, D, Sk) */
  ait_status st = nat_node_make_fused(n, "FusedAttention");
  if (st) {
    free(ins);
    return st;
  }
  for (int j = 1; j < n->n_out; j++) /* the optional outputs nobody reads */
    n->out[j] = -1;
  n->n_out = 1;
  free(n->in);
  n->in = ins;
  n->n_in = 4;
  AIT_TRY(nat_attr_set_float(n, "alpha", alpha));
  if (tq >= 0) AIT_TRY(set_perm(n, "q_perm", &g->nodes[tq]));
  if (tk >= 0)
    AIT_TRY(compose_perm(n, "k_perm", &g->nodes[tk], kt));
  else
    AIT_TRY(nat_attr_set_ints(n, "k_perm", kt, 4));
  if (tv >= 0) AIT_TRY(set_perm(n, "v_perm", &g->nodes[tv]));
  if (to >= 0) {
    AIT_TRY(set_perm(n, "out_perm", &g->nodes[to]));
    n->out[0] = g->nodes[to].out[0];
    g->values[n->out[0]].producer = i;
    u->dead[to] = true;
  }
  if (tq >= 0) u->dead[tq] = true;
  if (tk >= 0) u->dead[tk] = true;
  if (tv >= 0) u->dead[tv] = true;
  (*count)++;
  return nat_uses_refresh(u);
}

ait_status nat_pass_attention(nat_uses *u, nat_pass_stats *s) {
  ait_graph *g = u->g;
  for (int i = 0; i < g->n_nodes; i++) {
    if (u->dead[i]) continue;
    if (ait_is_op(&g->nodes[i], "Softmax"))
      AIT_TRY(try_attention(u, i, &s->fused));
    else if (ait_is_op(&g->nodes[i], "Attention"))
      AIT_TRY(try_attention_op(u, i, &s->fused));
  }
  return AIT_OK;
}

ait_status nat_attention_bf16(ait_graph *g) {
  for (int i = 0; i < g->n_nodes; i++) {
    ait_node *n = &g->nodes[i];
    if (ait_is_op_in(n, AIT_FUSED_DOMAIN, "FusedAttention"))
      AIT_TRY(nat_attr_set_int(n, "bf16", 1));
  }
  return AIT_OK;
}

/* ---- the kernel ------------------------------------------------------------ */

/* Rows of the query processed together: their scores (rows x Sk floats)
 * stay in L1/L2 between the two products. */
#define ATT_ROWS 64

/* A matrix operand of cblas: rows x cols with element (i, j) at
 * i * rs + j * cs; one of the strides must be 1. */
typedef struct att_mat {
  int64_t rs, cs;
} att_mat;

/* The vector kernels of one ISA level (native.h: nat_attn512_*, nat_attn256_*). */
typedef struct att_kernels {
  void (*scores_t)(const float *q, int64_t ldq, int64_t rows, int64_t D, float alpha,
                   const float *k, int64_t kjs, int64_t kds, int64_t Sk, const float *m,
                   int64_t mrs, int64_t mcs, float *qt, float *st, float *mx);
  void (*softmax_t)(float *st, int64_t rows, int64_t Sk, const float *mx, float *inv);
  void (*softmax)(float *s, int64_t rows, int64_t Sk, const float *m, int64_t mrs, int64_t mcs,
                  float *inv);
  void (*values)(const float *p, int64_t pis, int64_t pks, int64_t rows, int64_t Sk, const float *v,
                 int64_t ldv, int64_t Dv, float *y, int64_t ldy, const float *scale);
  void (*scores_rows)(const float *q, int64_t ldq, int64_t rows, int64_t D, float alpha,
                      const float *k, int64_t kjs, int64_t Sk, float *s, int64_t lds);
} att_kernels;

static const att_kernels att_avx512 = {nat_attn512_scores_t, nat_attn512_softmax_t,
                                       nat_attn512_softmax, nat_attn512_values,
                                       nat_attn512_scores_rows};
static const att_kernels att_avx2 = {nat_attn256_scores_t, nat_attn256_softmax_t,
                                     nat_attn256_softmax, nat_attn256_values,
                                     nat_attn256_scores_rows};

/* Query rows up to which the scores are dot products along D (a decoder
 * step's one row a sequence): the transposed tile would leave most lanes
 * idle. */
#define ATT_DOT_ROWS 4

typedef struct att_job {
  int64_t B, H, Sq, D, Sk, Dv, blocks;
  float alpha;
  const float *q, *k, *v, *m;
  _Atomic long long *gemm_calls; /* the state's count of provider calls */
  const int64_t *live;           /* per (batch, head): the keys not padded away (NULL: all Sk) */
  float *y;
  int64_t qs[4], ks[4], vs[4], ms[4], ys[4]; /* strides of the logical [B, H, rows, cols] */
  float *scratch;                            /* per thread: `per_thread` floats */
  int64_t per_thread;                        /* ATT_ROWS * Sk (+ the kernels' extras) */
  nat_gemm_fn gemm;
  const att_kernels *vec; /* softmax and P V on these vector kernels (NULL: portable) */
  bool avx512;            /* vec is native_attn512.c's */
  bool scores_t;          /* ... and the scores too, transposed (Sᵀ: keys x query rows) */
  bool scores_dot;        /* ... or as dot products along D (few rows, keys' D contiguous) */
  bool bf16;              /* ... and in bfloat16 (native_attn_bf16.c): a task per (batch, head) */
} att_job;

/* Whether a GEMM operand with logical strides st is stored transposed, and
 * its leading dimension. */
static bool mat_args(const int64_t *st, int64_t *ld) {
  bool row_major = st[3] == 1 && st[2] != 0;
  *ld = row_major ? st[2] : st[3];
  return !row_major;
}

NAT_CLONES static void softmax_rows(float *s, int64_t rows, int64_t n, const float *m, int64_t mrs,
                                    int64_t mcs) {
  for (int64_t i = 0; i < rows; i++) {
    float *row = s + i * n;
    if (m) {
      const float *mr = m + i * mrs;
      if (mcs == 1)
        for (int64_t j = 0; j < n; j++)
          row[j] += mr[j];
      else
        for (int64_t j = 0; j < n; j++)
          row[j] += mr[j * mcs];
    }
    /* max and sum over 8 lanes: one running value would be a dependent
     * chain the compiler cannot vectorise */
    float lm[8], ls[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t n8 = n & ~(int64_t)7;
    for (int l = 0; l < 8; l++)
      lm[l] = -INFINITY;
    for (int64_t j = 0; j < n8; j += 8)
      for (int l = 0; l < 8; l++)
        lm[l] = row[j + l] > lm[l] ? row[j + l] : lm[l];
    float mx = -INFINITY;
    for (int l = 0; l < 8; l++)
      mx = lm[l] > mx ? lm[l] : mx;
    for (int64_t j = n8; j < n; j++)
      mx = row[j] > mx ? row[j] : mx;
    for (int64_t j = 0; j < n; j++)
      row[j] -= mx;
    nat_exp_f32(row, row, n);
    for (int64_t j = 0; j < n8; j += 8)
      for (int l = 0; l < 8; l++)
        ls[l] += row[j + l];
    float sum = ((ls[0] + ls[4]) + (ls[1] + ls[5])) + ((ls[2] + ls[6]) + (ls[3] + ls[7]));
    for (int64_t j = n8; j < n; j++)
      sum += row[j];
    float inv = 1.0f / sum;
    for (int64_t j = 0; j < n; j++)
      row[j] *= inv;
  }
}

/* sum of x[i * st]^2 for i < n, in eight lanes (one running sum would be
 * a dependent chain; eight vectorise) */
NAT_CLONES static float sumsq(const float *x, int64_t n, int64_t st) {
  float a[8] = {0, 0, 0, 0, 0, 0, 0, 0}, r = 0;
  int64_t i = 0;
  if (st == 1)
    for (; i + 8 <= n; i += 8)
      for (int l = 0; l < 8; l++)
        a[l] += x[i + l] * x[i + l];
  for (; i < n; i++)
    r += x[i * st] * x[i * st];
  return ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7])) + r;
}

/* A key whose weight exp(score + mask - row max) is below this many
 * e-folds rounds to zero in float (the smallest denormal is e^-103.3). */
#define ATT_UNDERFLOW 110.0

/* Keys [e, Sk) with a mask so far below the others that none of them can
 * weigh anything in any of the rows (each weight under e^-110: zero in
 * float), so that attention over keys [0, e) gives the same rows: BERT's
 * padded tail (mask -10000). A score alpha q.k lies within +-A, A = |alpha|
 * max|q| max|k| (Cauchy-Schwarz), so a key j cannot weigh anything when
 * mask[j] + A <= max(mask) - A - 110: the row's maximum is at least the
 * best-masked key's score. Returns Sk when nothing can go (no such tail,
 * a NaN anywhere, scores too large for the margin). O((rows + Sk) D): a
 * fraction 1 / Sk of the attention's work. */
int64_t nat_attn_live_keys(const float *m, int64_t mks, int64_t Sk, const float *q, int64_t qrs,
                           int64_t qcs, int64_t rows, const float *k, int64_t kds, int64_t kks,
                           int64_t D, float alpha) {
  float mmax = -INFINITY;
  for (int64_t t = 0; t < Sk; t++) {
    float x = m[t * mks];
    if (isnan(x)) return Sk;
    mmax = x > mmax ? x : mmax;
  }
  if (!((double)m[(Sk - 1) * mks] < (double)mmax - ATT_UNDERFLOW)) return Sk; /* the usual case */
  float qn = 0, kn = 0;
  for (int64_t i = 0; i < rows; i++) {
    float a = sumsq(q + i * qrs, D, qcs);
    if (isnan(a)) return Sk; /* a NaN score must reach the output */
    qn = a > qn ? a : qn;
  }
  for (int64_t t = 0; t < Sk; t++) {
    float a = sumsq(k + t * kks, D, kds);
    if (isnan(a)) return Sk;
    kn = a > kn ? a : kn;
  }
  /* 1.001: room for the float sums' rounding */
  double A = 1.001 * fabs((double)alpha) * sqrt((double)qn) * sqrt((double)kn),
         lim = (double)mmax - 2 * A - ATT_UNDERFLOW;
  if (!(lim > -INFINITY)) return Sk; /* NaN or infinite scores: keep every key */
  int64_t e = Sk;
  while (e > 1 && (double)m[(e - 1) * mks] < lim)
    e--;
  return e;
}

static void att_task(void *arg, int64_t t, int tid) {
  const att_job *j = arg;
  int64_t blk = t % j->blocks, bh = t / j->blocks, b = bh / j->H, h = bh % j->H;
  int64_t r0 = blk * ATT_ROWS, rows = j->Sq - r0 < ATT_ROWS ? j->Sq - r0 : ATT_ROWS;
  const float *q = j->q + b * j->qs[0] + h * j->qs[1] + r0 * j->qs[2];
  const float *k = j->k + b * j->ks[0] + h * j->ks[1];
  const float *v = j->v + b * j->vs[0] + h * j->vs[1];
  float *y = j->y + b * j->ys[0] + h * j->ys[1] + r0 * j->ys[2];
  float *s = j->scratch + (int64_t)tid * j->per_thread;
  const float *m = j->m ? j->m + b * j->ms[0] + h * j->ms[1] + r0 * j->ms[2] : NULL;
  int64_t sk = j->live ? j->live[bh] : j->Sk; /* the keys that can weigh anything */
  if (j->scores_t) {
    /* keys down, query rows across the lanes: Sᵀ [Sk][ATT_ROWS], then the
     * block's Qᵀ, the max and 1 / sum per query row */
    float *qt = s + ATT_ROWS * j->Sk, *mx = qt + ATT_ROWS * j->D, *inv = mx + ATT_ROWS;
    j->vec->scores_t(q, j->qs[2], rows, j->D, j->alpha, k, j->ks[3], j->ks[2], sk, m, j->ms[2],
                     j->ms[3], qt, s, mx);
    j->vec->softmax_t(s, rows, sk, mx, inv);
    j->vec->values(s, 1, ATT_ROWS, rows, sk, v, j->vs[2], j->Dv, y, j->ys[2], inv);
    return;
  }
  if (j->scores_dot) {
    float *inv = s + ATT_ROWS * j->Sk;
    j->vec->scores_rows(q, j->qs[2], rows, j->D, j->alpha, k, j->ks[3], sk, s, sk);
    j->vec->softmax(s, rows, sk, m, j->ms[2], j->ms[3], inv);
    j->vec->values(s, sk, 1, rows, sk, v, j->vs[2], j->Dv, y, j->ys[2], inv);
    return;
  }
  int64_t lda, ldb;
  bool ta = mat_args(j->qs, &lda), tb = mat_args(j->ks, &ldb);
  atomic_fetch_add_explicit(j->gemm_calls, 1, memory_order_relaxed);
  /* the scores through SGEMM; softmax and P V on the vector kernels when
   * they apply */
  j->gemm(ta, tb, rows, sk, j->D, j->alpha, q, lda, k, ldb, s, sk);
  if (j->vec) {
    float *inv = s + ATT_ROWS * j->Sk;
    j->vec->softmax(s, rows, sk, m, j->ms[2], j->ms[3], inv);
    j->vec->values(s, sk, 1, rows, sk, v, j->vs[2], j->Dv, y, j->ys[2], inv);
    return;
  }
  softmax_rows(s, rows, sk, m, j->ms[2], j->ms[3]);
  tb = mat_args(j->vs, &ldb);
  j->gemm(false, tb, rows, j->Dv, sk, 1.0f, s, sk, v, ldb, y, j->ys[2]);
}

static int64_t up16(int64_t n) { return (n + 15) / 16 * 16; }

/* Per-thread scratch of the bf16 path, in 4-byte units: scores, 1 / sum
 * per row, then the packed Q block, keys, P block and values. */
static int64_t bf16_scratch(const att_job *j) {
  int64_t D2 = (j->D + 1) / 2, S2 = (j->Sk + 1) / 2;
  return up16(ATT_ROWS * j->Sk) + ATT_ROWS + up16(ATT_ROWS * D2) + D2 * up16(j->Sk) +
         up16(ATT_ROWS * S2) + S2 * j->Dv;
}

/* One (batch, head) with both products in bfloat16: the keys and values
 * packed once, then block by block of query rows as att_task. */
static void att_task_bf16(void *arg, int64_t t, int tid) {
  const att_job *j = arg;
  int64_t b = t / j->H, h = t % j->H, D2 = (j->D + 1) / 2, S2 = (j->Sk + 1) / 2;
  float *s = j->scratch + (int64_t)tid * j->per_thread, *inv = s + up16(ATT_ROWS * j->Sk);
  uint32_t *qb = (uint32_t *)(inv + ATT_ROWS), *kp = qb + up16(ATT_ROWS * D2);
  uint32_t *pb = kp + D2 * up16(j->Sk), *vp = pb + up16(ATT_ROWS * S2);
  const float *k = j->k + b * j->ks[0] + h * j->ks[1], *v = j->v + b * j->vs[0] + h * j->vs[1];
  /* the keys that can weigh anything in any row (the layout keeps Sk's) */
  int64_t sk = j->live ? j->live[t] : j->Sk, s2 = (sk + 1) / 2;
  /* K' is [D, Sk]: pairs of its rows; V is [Sk, Dv]: pairs of its rows */
  nat_attn_bf16_pack_pairs(k, j->ks[2], j->ks[3], j->D, sk, kp, up16(j->Sk));
  nat_attn_bf16_pack_pairs(v, j->vs[2], j->vs[3], sk, j->Dv, vp, j->Dv);
  for (int64_t r0 = 0; r0 < j->Sq; r0 += ATT_ROWS) {
    int64_t rows = j->Sq - r0 < ATT_ROWS ? j->Sq - r0 : ATT_ROWS;
    const float *q = j->q + b * j->qs[0] + h * j->qs[1] + r0 * j->qs[2];
    const float *m = j->m ? j->m + b * j->ms[0] + h * j->ms[1] + r0 * j->ms[2] : NULL;
    float *y = j->y + b * j->ys[0] + h * j->ys[1] + r0 * j->ys[2];
    nat_attn_bf16_pack_rows(q, j->qs[2], j->qs[3], rows, j->D, qb, D2);
    nat_attn_bf16_gemm(qb, D2, kp, up16(j->Sk), D2, rows, sk, j->alpha, NULL, s, sk);
    nat_attn_bf16_softmax(s, rows, sk, m, j->ms[2], j->ms[3], inv, pb, s2);
    nat_attn_bf16_gemm(pb, s2, vp, j->Dv, s2, rows, j->Dv, 1.0f, inv, y, j->ys[2]);
  }
}

/* Logical dims and strides (rank 4, a missing leading batch dim as 1) of
 * input t seen through perm (NULL: none). */
static bool logical(const ait_tensor *t, const int64_t *perm, int cnt, int64_t *dims, int64_t *st) {
  int r = t->rank;
  if (r < 3 || r > 4 || (perm && cnt != r)) return false;
  int64_t phys[4];
  phys[r - 1] = 1;
  for (int i = r - 2; i >= 0; i--)
    phys[i] = phys[i + 1] * t->dims[i + 1];
  int off = 4 - r;
  dims[0] = 1, st[0] = 0;
  bool seen[4] = {false};
  for (int i = 0; i < r; i++) {
    int64_t a = perm ? perm[i] : i;
    if (a < 0 || a >= r || seen[a]) return false;
    seen[a] = true;
    dims[off + i] = t->dims[a];
    st[off + i] = t->dims[a] == 1 ? 0 : phys[a];
  }
  return true;
}

/* A GEMM operand's inner strides: one of them 1 (a dim of 1 may take any
 * stride) and the other a valid leading dimension. */
static bool gemm_ok(int64_t *st, int64_t rows, int64_t cols) {
  if (cols == 1) st[3] = 1;
  if (st[3] == 1 && (rows == 1 || st[2] >= cols)) {
    if (rows == 1) st[2] = cols > 1 ? cols : 1;
    return true;
  }
  if (rows == 1) st[2] = 1;
  if (st[2] == 1 && st[3] >= rows && st[3] > 0) return true;
  return false;
}

static _Atomic long long dot_runs;
long long nat_attn_dot_runs(void) { return atomic_load_explicit(&dot_runs, memory_order_relaxed); }

ait_status nat_k_attention(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  if (n_in < 3 || !in[0] || !in[1] || !in[2]) return AIT_E_UNSUPPORTED;
  const ait_tensor *Q = in[0], *K = in[1], *V = in[2], *M = n_in > 3 ? in[3] : NULL;
  if (Q->dtype != AIT_FLOAT32 || K->dtype != AIT_FLOAT32 || V->dtype != AIT_FLOAT32 ||
      (M && (M->dtype != AIT_FLOAT32 || M->kind != AIT_KIND_TENSOR)))
    return AIT_E_UNSUPPORTED;
  int cq = 0, ck = 0, cv = 0, co = 0;
  const int64_t *pq = ait_attr_ints(n, "q_perm", &cq), *pk = ait_attr_ints(n, "k_perm", &ck);
  const int64_t *pv = ait_attr_ints(n, "v_perm", &cv), *po = ait_attr_ints(n, "out_perm", &co);
  att_job j;
  memset(&j, 0, sizeof j);
  int64_t qd[4], kd[4], vd[4];
  if (!logical(Q, pq, cq, qd, j.qs) || !logical(K, pk, ck, kd, j.ks) ||
      !logical(V, pv, cv, vd, j.vs) || Q->rank != K->rank || Q->rank != V->rank)
    return AIT_E_UNSUPPORTED;
  /* no batch broadcasting here: the exported graphs never need it */
  if (qd[0] != kd[0] || qd[0] != vd[0] || qd[1] != kd[1] || qd[1] != vd[1] || qd[3] != kd[2] ||
      kd[3] != vd[2])
    return AIT_E_UNSUPPORTED;
  j.B = qd[0], j.H = qd[1], j.Sq = qd[2], j.D = qd[3], j.Sk = kd[3], j.Dv = vd[3];
  if (j.Sq < 1 || j.Sk < 1 || j.D < 1 || j.Dv < 1 || !gemm_ok(j.qs, j.Sq, j.D) ||
      !gemm_ok(j.ks, j.D, j.Sk) || !gemm_ok(j.vs, j.Sk, j.Dv))
    return AIT_E_UNSUPPORTED;
  int rank = Q->rank, off = 4 - rank;
  if (M) { /* the mask broadcasts to [B, H, Sq, Sk] without growing it */
    int64_t sd[4] = {j.B, j.H, j.Sq, j.Sk}, bd[AIT_MAX_RANK];
    int rk;
    if (M->rank > rank ||
        ait_shape_broadcast(rank, sd + off, M->rank, M->dims, &rk, bd) != AIT_OK || rk != rank ||
        memcmp(bd, sd + off, sizeof(int64_t) * (size_t)rank)) {
      ait_err_clear();
      return AIT_E_UNSUPPORTED;
    }
    ait_broadcast_strides(M->rank, M->dims, rank, sd + off, j.ms + off);
    j.m = M->data;
  }
  /* output: Y [B, H, Sq, Dv] seen through out_perm */
  int64_t yd[4] = {j.B, j.H, j.Sq, j.Dv}, od[4], ost[4];
  if (po && co != rank) return AIT_E_UNSUPPORTED;
  for (int i = 0; i < rank; i++) {
    int64_t a = po ? po[i] : i;
    if (a < 0 || a >= rank) return AIT_E_UNSUPPORTED;
    od[i] = yd[off + a];
  }
  ost[rank - 1] = 1;
  for (int i = rank - 2; i >= 0; i--)
    ost[i] = ost[i + 1] * od[i + 1];
  for (int i = 0; i < rank; i++)
    j.ys[off + (po ? po[i] : i)] = ost[i];
  if (j.ys[3] != 1 && j.Dv > 1) return AIT_E_UNSUPPORTED;
  if (j.Sq == 1) j.ys[2] = j.Dv;
  if (j.ys[2] < j.Dv) return AIT_E_UNSUPPORTED;
  j.alpha = ait_attr_float(n, "alpha", 1.0f);
  j.gemm = nat_run_gemm(r);
  j.gemm_calls = nat_run_gemm_calls(r);
  j.blocks = (j.Sq + ATT_ROWS - 1) / ATT_ROWS;
  /* the AVX-512 kernels read Q's, V's and Y's rows with unit stride; the
   * keys are broadcast one element at a time, so their layout does not
   * matter */
  bool rows_ok = j.qs[3] == 1 && j.vs[3] == 1 && j.ys[3] == 1 && j.D <= 4096;
  /* the level of the run picks: AVX-512 (heads of V a multiple of 16 up
   * to 64), else AVX2 (any head size; also on AVX-512 CPUs for the heads
   * the 16-lane kernels do not take), else SGEMM and the portable loops */
  j.avx512 = nat_attn512_available() && rows_ok && j.Dv % 16 == 0 && j.Dv <= 64;
  j.vec = j.avx512 ? &att_avx512 : nat_attn256_available() && rows_ok ? &att_avx2 : NULL;
  /* the transposed scores read the keys with any strides; a mask varying
   * along the query rows is gathered with 32-bit offsets */
  j.scores_t = j.vec && (!j.m || j.ms[2] <= INT32_MAX / 16);
  /* a few query rows over keys stored row by row: dot products */
  j.scores_dot = j.vec && j.Sq <= ATT_DOT_ROWS && (j.ks[2] == 1 || j.D == 1);
  if (j.scores_dot) j.scores_t = false;
  /* bfloat16 products when the pass or the caller asked for them */
  j.bf16 = j.avx512 && ait_attr_int(n, "bf16", 0) && nat_attn_bf16_available() && !j.scores_dot;
  int threads = nat_run_threads(r);
  int64_t tasks = j.B * j.H * (j.bf16 ? 1 : j.blocks);
  double work = (double)j.B * j.H * j.Sq * j.Sk * (j.D + j.Dv);
  bool par = threads > 1 && tasks > 1 && work >= NAT_PAR_MIN_MACS;
  j.per_thread = j.bf16       ? bf16_scratch(&j)
                 : j.scores_t ? ATT_ROWS * (j.Sk + j.D + 2)
                              : ATT_ROWS * j.Sk + (j.vec ? ATT_ROWS : 0);
  j.per_thread = (j.per_thread + 15) / 16 * 16; /* threads' blocks on separate lines */
  j.scratch = nat_scratch(r, (int64_t)(par ? threads : 1) * j.per_thread * (int64_t)sizeof(float));
  if (!j.scratch) return AIT_E_NOMEM;
  ait_tensor *Y;
  AIT_TRY(nat_output(r, 0, AIT_FLOAT32, rank, od, &Y));
  j.q = Q->data, j.k = K->data, j.v = V->data, j.y = Y->data;
  /* a padding mask (the same for every query row): per (batch, head), the
   * keys past the last one that can weigh anything are left out */
  int64_t live_small[64], *live = NULL;
  if (j.m && j.ms[2] == 0 && j.Sk > 1) {
    live = j.B * j.H <= 64 ? live_small : malloc(sizeof(int64_t) * (size_t)(j.B * j.H));
    for (int64_t bh = 0; live && bh < j.B * j.H; bh++) {
      int64_t b = bh / j.H, h = bh % j.H;
      live[bh] = nat_attn_live_keys(
          j.m + b * j.ms[0] + h * j.ms[1], j.ms[3], j.Sk, j.q + b * j.qs[0] + h * j.qs[1], j.qs[2],
          j.qs[3], j.Sq, j.k + b * j.ks[0] + h * j.ks[1], j.ks[2], j.ks[3], j.D, j.alpha);
    }
  }
  j.live = live;
  if (j.scores_dot) atomic_fetch_add_explicit(&dot_runs, 1, memory_order_relaxed);
  nat_pool_run(par ? nat_run_pool(r) : NULL, tasks, j.bf16 ? att_task_bf16 : att_task, &j);
  if (live != live_small) free(live);
  return AIT_OK;
}
