/* Lowering of the opset-23 transformer ops PyTorch's dynamo exporter writes:
 * RMSNormalization and RotaryEmbedding (kernels in cuda_nn23.cu), and
 * Attention, which runs on the fused kernels of cuda_attn.cu / cuda_flash.cu
 * (bfloat16 / float16, a head size they take, no softcap, window or
 * grouped heads; causal becomes a constant mask) and on cuda_nn23.cu's
 * general kernel otherwise. Shapes come from the plan graph, concrete. */
#ifdef AIT_HAVE_CUDA

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_impl.h"

static int node_index(cu_planner *pl, const ait_node *n) { return (int)(n - pl->g->nodes); }

static bool has_in(const ait_node *n, int k) { return k < n->n_in && n->in[k] >= 0; }

static int64_t prod(const int64_t *d, int from, int to) {
  int64_t p = 1;
  for (int k = from; k < to; k++)
    p *= d[k];
  return p;
}

/* ---- RMSNormalization ------------------------------------------------------- */

typedef struct rms_prm {
  int x, y, gamma_t; /* gamma_t: a plan constant (a broadcast scalar scale), or -1 */
  const float *gamma;
  int64_t rows, cols;
  float eps;
} rms_prm;

static ait_status rms_run(cu_state *s, cu_plan *p, cu_step *st) {
  rms_prm *r = st->prm;
  const float *g = r->gamma_t >= 0 ? cu_ptr(p, r->gamma_t) : r->gamma;
  return cu_check(cuk_rmsnorm(s->stream, p->t[r->x].dt, cu_ptr(p, r->x), cu_ptr(p, r->y), r->rows,
                              r->cols, g, r->eps),
                  "RMSNormalization");
}

ait_status cu_lower_rmsnorm(cu_planner *pl, const ait_node *n) {
  int x, y;
  AIT_TRY(cu_in(pl, n->in[0], CU_PLAIN, &x));
  AIT_TRY(cu_out(pl, n->out[0], CU_PLAIN, &y));
  const cu_tensor *X = &pl->p->t[x];
  int axis;
  AIT_TRY(ait_norm_axis(ait_attr_int(n, "axis", -1), X->rank, &axis));
  int64_t rows = prod(X->dims, 0, axis), cols = prod(X->dims, axis, X->rank);
  const ait_tensor *w = cu_host_value(pl, n, 1);
  int64_t nw = w ? ait_tensor_numel(w) : -1;
  if (!w || (nw != cols && nw != 1))
    return ait_err(AIT_E_UNSUPPORTED,
                   "cuda: RMSNormalization scale must be a constant of %lld values (or one)",
                   (long long)cols);
  rms_prm *r = calloc(1, sizeof *r);
  if (!r) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
  r->x = x;
  r->y = y;
  r->gamma_t = -1;
  r->rows = rows;
  r->cols = cols;
  r->eps = ait_attr_float(n, "epsilon", 1e-5f);
  ait_status st = AIT_OK;
  if (nw == cols) {
    void *ptr = NULL;
    st = cu_const_weight(pl, n->in[1], CU_W_F32, &ptr);
    r->gamma = ptr;
  } else { /* one scale for every column: expanded here */
    float *g = malloc(sizeof(float) * (size_t)cols);
    const ait_dtype_traits *tr = ait_dtype_traits_of(w->dtype);
    if (!g || !tr) {
      st = ait_err(AIT_E_NOMEM, "cuda: out of memory");
    } else {
      float v = (float)ait_load_f64(tr, w->data, 0);
      for (int64_t j = 0; j < cols; j++)
        g[j] = v;
      st = cu_const_raw(pl, AIT_FLOAT32, 1, &cols, g, &r->gamma_t);
    }
    free(g);
  }
  if (st) {
    free(r);
    return st;
  }
  int gt = r->gamma_t;
  cu_step *s;
  AIT_TRY(cu_step_add(pl, node_index(pl, n), "RMSNormalization", rms_run, r, &s));
  cu_step_use(s, x);
  cu_step_use(s, y);
  if (gt >= 0) cu_step_use(s, gt);
  return AIT_OK;
}

/* ---- RotaryEmbedding -------------------------------------------------------- */

typedef struct rope_prm {
  cuk_rope k;
  int x, c, sn, pos, y;
} rope_prm;

static ait_status rope_run(cu_state *s, cu_plan *p, cu_step *st) {
  rope_prm *r = st->prm;
  r->k.x = cu_ptr(p, r->x);
  r->k.cos = cu_ptr(p, r->c);
  r->k.sin = cu_ptr(p, r->sn);
  r->k.pos = r->pos >= 0 ? cu_ptr(p, r->pos) : NULL;
  r->k.y = cu_ptr(p, r->y);
  return cu_check(cuk_rotary(s->stream, &r->k, s->d_err), "RotaryEmbedding");
}

ait_status cu_lower_rope(cu_planner *pl, const ait_node *n) {
  int x, c, sn, pos = -1, y;
  AIT_TRY(cu_in(pl, n->in[0], CU_PLAIN, &x));
  AIT_TRY(cu_in(pl, n->in[1], CU_PLAIN, &c));
  AIT_TRY(cu_in(pl, n->in[2], CU_PLAIN, &sn));
  if (has_in(n, 3)) AIT_TRY(cu_in(pl, n->in[3], CU_PLAIN, &pos));
  AIT_TRY(cu_out(pl, n->out[0], CU_PLAIN, &y));
  const cu_plan *p = pl->p;
  const cu_tensor *X = &p->t[x], *C = &p->t[c], *Sn = &p->t[sn];
  cuk_rope k = {0};
  k.dt = X->dt;
  if (X->rank == 4) {
    k.B = X->dims[0], k.H = X->dims[1], k.S = X->dims[2], k.D = X->dims[3];
  } else if (X->rank == 3) {
    k.three_d = 1;
    k.H = ait_attr_int(n, "num_heads", 0);
    if (k.H <= 0 || X->dims[2] % k.H)
      return ait_err(AIT_E_INVALID_ARG,
                     "cuda: RotaryEmbedding of 3-D X needs num_heads dividing its %lld values",
                     (long long)X->dims[2]);
    k.B = X->dims[0], k.S = X->dims[1], k.D = X->dims[2] / k.H;
  } else {
    return ait_err(AIT_E_SHAPE, "cuda: RotaryEmbedding X must be 3-D or 4-D");
  }
  k.rd = ait_attr_int(n, "rotary_embedding_dim", 0);
  if (k.rd == 0) k.rd = k.D;
  if (k.rd < 0 || k.rd > k.D || k.rd % 2)
    return ait_err(AIT_E_INVALID_ARG, "cuda: rotary_embedding_dim %lld must be even and <= %lld",
                   (long long)k.rd, (long long)k.D);
  k.interleaved = ait_attr_int(n, "interleaved", 0) != 0;
  int64_t half = k.rd / 2;
  bool ok = C->dt == X->dt && Sn->dt == X->dt && C->rank == Sn->rank &&
            !memcmp(C->dims, Sn->dims, sizeof(int64_t) * (size_t)C->rank);
  if (ok && pos >= 0) {
    const cu_tensor *P = &p->t[pos];
    ok = C->rank == 2 && C->dims[1] == half && cu_numel(P) == k.B * k.S &&
         (P->dt == AIT_INT64 || P->dt == AIT_INT32);
    k.pos_dt = P->dt;
    k.rows = C->dims[0];
  } else if (ok) {
    ok = C->rank == 3 && C->dims[0] == k.B && C->dims[1] == k.S && C->dims[2] == half;
    k.rows = k.B * k.S;
  }
  if (!ok)
    return ait_err(AIT_E_SHAPE,
                   "cuda: RotaryEmbedding caches must be %s with last dim %lld, of X's type%s",
                   pos >= 0 ? "(max_position + 1, rd/2)" : "(B, S, rd/2)", (long long)half,
                   pos >= 0 ? ", and position_ids (B, S) integers" : "");
  rope_prm *r = calloc(1, sizeof *r);
  if (!r) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
  r->k = k;
  r->x = x, r->c = c, r->sn = sn, r->pos = pos, r->y = y;
  cu_step *s;
  AIT_TRY(cu_step_add(pl, node_index(pl, n), "RotaryEmbedding", rope_run, r, &s));
  cu_step_use(s, x);
  cu_step_use(s, c);
  cu_step_use(s, sn);
  if (pos >= 0) cu_step_use(s, pos);
  cu_step_use(s, y);
  return AIT_OK;
}

/* ---- Attention ----------------------------------------------------------------- */

typedef struct geo {
  int64_t B, Hq, Hkv, Sq, T, D, Dv;
  bool three_d;
} geo;

/* Strides (b, h, s) of a (B, H, S, X) view of a contiguous tensor: 4-D as
 * it is, 3-D as (B, S, H*X). */
static void bhs_strides(int64_t H, int64_t S, int64_t X, bool three_d, long long *st) {
  st[0] = H * S * X;
  st[1] = three_d ? X : S * X;
  st[2] = three_d ? H * X : X;
}

static ait_status geometry(const ait_node *n, const cu_tensor *Q, const cu_tensor *K,
                           const cu_tensor *V, geo *g) {
  if (Q->rank != K->rank || Q->rank != V->rank || (Q->rank != 3 && Q->rank != 4))
    return ait_err(AIT_E_SHAPE, "cuda: Attention Q, K, V must all be 3-D or all 4-D");
  g->three_d = Q->rank == 3;
  g->B = Q->dims[0];
  if (g->three_d) {
    g->Hq = ait_attr_int(n, "q_num_heads", 0);
    g->Hkv = ait_attr_int(n, "kv_num_heads", 0);
    if (g->Hq <= 0 || g->Hkv <= 0 || Q->dims[2] % g->Hq || K->dims[2] % g->Hkv ||
        V->dims[2] % g->Hkv)
      return ait_err(AIT_E_SHAPE, "cuda: Attention hidden sizes do not split into the heads");
    g->Sq = Q->dims[1], g->T = K->dims[1];
    g->D = Q->dims[2] / g->Hq, g->Dv = V->dims[2] / g->Hkv;
    if (K->dims[2] / g->Hkv != g->D || V->dims[1] != g->T)
      return ait_err(AIT_E_SHAPE, "cuda: Attention K does not match Q or V");
  } else {
    g->Hq = Q->dims[1], g->Hkv = K->dims[1];
    g->Sq = Q->dims[2], g->T = K->dims[2];
    g->D = Q->dims[3], g->Dv = V->dims[3];
    if (K->dims[3] != g->D || V->dims[1] != g->Hkv || V->dims[2] != g->T)
      return ait_err(AIT_E_SHAPE, "cuda: Attention K does not match Q or V");
  }
  if (K->dims[0] != g->B || V->dims[0] != g->B || g->Hkv <= 0 || g->Hq % g->Hkv)
    return ait_err(AIT_E_SHAPE, "cuda: Attention batch or head counts do not agree");
  if (g->B > 65535 || g->Hq > 65535 || g->Sq > 2147483647 || g->D > 2147483647)
    return ait_err(AIT_E_UNSUPPORTED, "cuda: Attention too large");
  return AIT_OK;
}

/* Strides of mask tensor M broadcast to (B, Hq, Sq, Tm). */
static ait_status mask_geometry(const cu_tensor *M, const geo *g, long long *ms, int64_t *Tm) {
  if (M->rank < 1 || M->rank > 4)
    return ait_err(AIT_E_SHAPE, "cuda: attn_mask of rank %d", M->rank);
  int64_t tgt[4] = {g->B, g->Hq, g->Sq, M->dims[M->rank - 1]}, L[AIT_MAX_RANK];
  if (tgt[3] > g->T)
    return ait_err(AIT_E_SHAPE, "cuda: attn_mask's last dim %lld exceeds the %lld keys",
                   (long long)tgt[3], (long long)g->T);
  cu_strides(M, L);
  for (int k = 0; k < 4; k++) {
    int km = k - (4 - M->rank);
    if (km >= 0 && M->dims[km] != 1 && M->dims[km] != tgt[k])
      return ait_err(AIT_E_SHAPE, "cuda: attn_mask does not broadcast to the scores");
    ms[k] = km < 0 || M->dims[km] == 1 ? 0 : L[km];
  }
  *Tm = tgt[3];
  return AIT_OK;
}

typedef struct sdpa_prm {
  cuk_sdpa k;
  int q, kk, v, mask, out;
} sdpa_prm;

static ait_status sdpa_prep(cu_state *s, cu_plan *p, cu_step *st) {
  sdpa_prm *a = st->prm;
  return cu_check(cuk_sdpa_prepare(a->k.D, a->k.Dv), "preparing the attention kernel");
}

static ait_status sdpa_run(cu_state *s, cu_plan *p, cu_step *st) {
  sdpa_prm *a = st->prm;
  a->k.q = cu_ptr(p, a->q);
  a->k.k = cu_ptr(p, a->kk);
  a->k.v = cu_ptr(p, a->v);
  a->k.mask = a->mask >= 0 ? cu_ptr(p, a->mask) : NULL;
  a->k.o = cu_ptr(p, a->out);
  return cu_check(cuk_sdpa_run(s->stream, &a->k), "Attention");
}

typedef struct fattn_prm {
  cuk_attn k;
  int q, kk, v, mask, out;
} fattn_prm;

static ait_status fattn_prep(cu_state *s, cu_plan *p, cu_step *st) {
  fattn_prm *a = st->prm;
  return cu_check(cuk_attention_prepare(a->k.dt, a->k.D), "preparing the attention kernel");
}

static ait_status fattn_run(cu_state *s, cu_plan *p, cu_step *st) {
  fattn_prm *a = st->prm;
  a->k.q = cu_ptr(p, a->q);
  a->k.k = cu_ptr(p, a->kk);
  a->k.v = cu_ptr(p, a->v);
  a->k.mask = a->mask >= 0 ? cu_ptr(p, a->mask) : NULL;
  a->k.o = cu_ptr(p, a->out);
  return cu_check(cuk_attention(s->stream, &a->k), "attention");
}

/* Largest causal mask (Sq x T values) made a plan constant for the fused
 * kernels; past it the general kernel computes causality itself. */
#define CAUSAL_MASK_MAX ((int64_t)1 << 22)

/* The fused kernel for this node, when it applies: q/k/v/mask/out tensors,
 * st[12] their (b, h, s) strides; *mask may become a constant causal mask. */
static ait_status try_fused(cu_planner *pl, const ait_node *n, const geo *g, const int *t, int mask,
                            const long long *ms, int64_t Tm, float scale, const long long *st,
                            bool *done) {
  *done = false;
  cu_state *s = pl->s;
  const cu_tensor *O = &pl->p->t[t[3]];
  bool causal = ait_attr_int(n, "is_causal", 0) != 0;
  bool window = n->opset >= 25 && (ait_attr_int(n, "left_window_size", -1) >= 0 ||
                                   ait_attr_int(n, "right_window_size", -1) >= 0);
  if (!s->o.attention || s->o.attn_gemm || !cuk_attention_ok(O->dt, (int)g->D) || g->D != g->Dv ||
      g->Hq != g->Hkv || ait_attr_float(n, "softcap", 0.0f) > 0.0f || window ||
      (causal && mask >= 0) || (mask >= 0 && (pl->p->t[mask].dt != O->dt || Tm != g->T)) ||
      (causal && g->Sq * g->T > CAUSAL_MASK_MAX))
    return AIT_OK;
  for (int k = 0; k < 3; k++)
    if (pl->p->t[t[k]].dt != O->dt) return AIT_OK;
  fattn_prm *a = calloc(1, sizeof *a);
  if (!a) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
  cuk_attn *k = &a->k;
  k->dt = O->dt;
  k->B = (int)g->B, k->H = (int)g->Hq, k->S = (int)g->Sq, k->Sk = (int)g->T, k->D = (int)g->D;
  k->scale = scale;
  k->qb = st[0], k->qh = st[1], k->qs = st[2];
  k->kb = st[3], k->kh = st[4], k->ks = st[5];
  k->vb = st[6], k->vh = st[7], k->vs = st[8];
  k->ob = st[9], k->oh = st[10], k->os = st[11];
  k->mb = ms[0], k->mh = ms[1], k->mi = ms[2], k->mj = ms[3];
  k->vec = 1;
  for (int i = 0; i < 12; i++)
    k->vec = k->vec && st[i] % 8 == 0;
  k->flash = !s->o.attn_wmma && cuk_flash_ok(k);
  /* the WMMA kernel under 2 blocks per SM loses to the general one's spread */
  int64_t blocks = g->B * g->Hq * ((g->Sq + 63) / 64);
  if (!k->flash && s->o.attn_auto && s->n_sm > 0 && blocks < 2 * (int64_t)s->n_sm) {
    free(a);
    return AIT_OK;
  }
  if (causal) { /* 0 on and below the diagonal, a large negative above */
    int64_t dims[2] = {g->Sq, g->T}, cnt = g->Sq * g->T;
    float *f = malloc(sizeof(float) * (size_t)cnt);
    void *img = malloc(ait_elem_size(O->dt) * (size_t)cnt);
    ait_status e = f && img ? AIT_OK : ait_err(AIT_E_NOMEM, "cuda: out of memory");
    for (int64_t i = 0; !e && i < g->Sq; i++)
      for (int64_t j = 0; j < g->T; j++)
        f[i * g->T + j] = j > i ? -1e30f : 0.0f;
    if (!e) cu_f32_to_store(O->dt, f, img, cnt);
    if (!e) e = cu_const_raw(pl, O->dt, 2, dims, img, &mask);
    free(f);
    free(img);
    if (e) {
      free(a);
      return e;
    }
    k->mb = k->mh = 0, k->mi = g->T, k->mj = 1;
  }
  a->q = t[0], a->kk = t[1], a->v = t[2], a->mask = mask, a->out = t[3];
  cu_step *sp;
  AIT_TRY(cu_step_add(pl, node_index(pl, n), k->flash ? "FlashAttention" : "Attention", fattn_run,
                      a, &sp));
  sp->prep = fattn_prep;
  for (int i = 0; i < 4; i++)
    cu_step_use(sp, t[i]);
  if (mask >= 0) cu_step_use(sp, mask);
  *done = true;
  return AIT_OK;
}

ait_status cu_lower_onnx_attention(cu_planner *pl, const ait_node *n) {
  if (has_in(n, 4) || has_in(n, 5) || (n->opset >= 24 && has_in(n, 6)))
    return ait_err(AIT_E_UNSUPPORTED, "cuda: Attention with a KV cache or nonpad_kv_seqlen");
  int t[4], mask = -1;
  AIT_TRY(cu_in(pl, n->in[0], CU_PLAIN, &t[0]));
  AIT_TRY(cu_in(pl, n->in[1], CU_PLAIN, &t[1]));
  AIT_TRY(cu_in(pl, n->in[2], CU_PLAIN, &t[2]));
  if (has_in(n, 3)) AIT_TRY(cu_in(pl, n->in[3], CU_PLAIN, &mask));
  AIT_TRY(cu_out(pl, n->out[0], CU_PLAIN, &t[3]));
  const cu_plan *p = pl->p;
  geo g = {0};
  AIT_TRY(geometry(n, &p->t[t[0]], &p->t[t[1]], &p->t[t[2]], &g));
  long long ms[4] = {0, 0, 0, 0};
  int64_t Tm = g.T;
  if (mask >= 0) AIT_TRY(mask_geometry(&p->t[mask], &g, ms, &Tm));
  float scale = ait_attr_float(n, "scale", NAN); /* absent: 1 / sqrt(head size) */
  if (isnan(scale)) scale = (float)(1.0 / sqrt((double)g.D));
  long long st[12];
  bhs_strides(g.Hq, g.Sq, g.D, g.three_d, st);
  bhs_strides(g.Hkv, g.T, g.D, g.three_d, st + 3);
  bhs_strides(g.Hkv, g.T, g.Dv, g.three_d, st + 6);
  bhs_strides(g.Hq, g.Sq, g.Dv, g.three_d, st + 9);
  bool done = false;
  AIT_TRY(try_fused(pl, n, &g, t, mask, ms, Tm, scale, st, &done));
  if (done) return AIT_OK;
  const cu_tensor *O = &p->t[t[3]];
  for (int k = 0; k < 3; k++)
    if (p->t[t[k]].dt != O->dt)
      return ait_err(AIT_E_INTERNAL, "cuda: Attention operands of different types");
  sdpa_prm *a = calloc(1, sizeof *a);
  if (!a) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
  cuk_sdpa *k = &a->k;
  k->dt = O->dt;
  k->mask_dt = mask >= 0 ? p->t[mask].dt : 0;
  k->causal = ait_attr_int(n, "is_causal", 0) != 0;
  k->B = (int)g.B, k->Hq = (int)g.Hq, k->Hkv = (int)g.Hkv, k->Sq = (int)g.Sq;
  k->D = (int)g.D, k->Dv = (int)g.Dv;
  k->T = g.T, k->Tm = Tm;
  k->left = n->opset >= 25 ? ait_attr_int(n, "left_window_size", -1) : -1;
  k->right = n->opset >= 25 ? ait_attr_int(n, "right_window_size", -1) : -1;
  k->scale = scale;
  k->softcap = ait_attr_float(n, "softcap", 0.0f);
  k->qb = st[0], k->qh = st[1], k->qs = st[2];
  k->kb = st[3], k->kh = st[4], k->ks = st[5];
  k->vb = st[6], k->vh = st[7], k->vs = st[8];
  k->ob = st[9], k->oh = st[10], k->os = st[11];
  k->mb = ms[0], k->mh = ms[1], k->mi = ms[2], k->mj = ms[3];
  if (cuk_sdpa_smem(k->D, k->Dv) > 200 * 1024) {
    int d = k->D, dv = k->Dv;
    free(a);
    return ait_err(AIT_E_UNSUPPORTED, "cuda: Attention head sizes %d / %d are too large", d, dv);
  }
  a->q = t[0], a->kk = t[1], a->v = t[2], a->mask = mask, a->out = t[3];
  cu_step *sp;
  AIT_TRY(cu_step_add(pl, node_index(pl, n), "Attention (general)", sdpa_run, a, &sp));
  sp->prep = sdpa_prep;
  for (int i = 0; i < 4; i++)
    cu_step_use(sp, t[i]);
  if (mask >= 0) cu_step_use(sp, mask);
  return AIT_OK;
}

#endif
