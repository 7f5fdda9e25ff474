/* Attention in plan graphs: Softmax(scale * Q Kt + mask) V, as BERT-style
 * exporters write it (after the native passes the scale and the additive
 * mask sit in a FusedMatMul):
 *
 *   Q  = Transpose(X_q)  [B,H,S,D]      Kt = Transpose(X_k)  [B,H,D,Sk]
 *   S  = FusedMatMul(Q, Kt, alpha=scale, Z=mask)   P = Softmax(S, axis=-1)
 *   O  = MatMul(P, V)    [B,H,S,D]      Y  = Transpose(O)    (optional)
 *
 * With bfloat16 / float16 storage and a head size the kernel takes, the
 * whole pattern, head transposes included, is one cuk_attention step (the
 * FlashAttention-2 style kernel for head size 64, else the WMMA one)
 * reading X_q, X_k, X_v and writing Y through strides. Otherwise, when there
 * is a mask, the mask moves from the scores GEMM into the Softmax
 * (cuk_softmax_masked), saving one pass over the scores. The pattern is
 * the shared one (ait_match_attention, src/ir/passes/attn.c), swin's
 * shifted-window mask included: its Reshape, Add, Reshape are absorbed and
 * the kernels read the mask of window b % W for batch b (the relative
 * position bias added into that mask first, attn_mask). */
#ifdef AIT_HAVE_CUDA

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_impl.h"
#include "ir/passes/passes.h"

static bool dims4(const ait_graph *g, int v, int64_t *d) {
  if (v < 0) return false;
  const ait_value *val = &g->values[v];
  if (val->rank != 4 || val->init) return false;
  for (int k = 0; k < 4; k++)
    if ((d[k] = val->dims[k].v) < 0) return false;
  return true;
}

typedef struct uses {
  int *n;      /* readers per value */
  int *reader; /* one reader per value */
  bool *out;   /* graph output */
} uses;

/* What the shared matcher's view reads: the graph and its uses. */
typedef struct attn_view {
  const ait_graph *g;
  const uses *u;
} attn_view;

static bool single(const uses *u, int v) { return v >= 0 && u->n[v] == 1 && !u->out[v]; }

/* v is read once, by nothing but a Transpose of rank 4? Then its input and
 * the axis of that input for each axis of v. */
static int transposed_from(const ait_graph *g, const uses *u, int v, int *ax) {
  int p = v >= 0 ? g->values[v].producer : -1;
  if (p < 0 || !single(u, v) || !ait_is_op_in(&g->nodes[p], "", "Transpose")) return -1;
  const ait_node *t = &g->nodes[p];
  int cnt = 0;
  const int64_t *perm = ait_attr_ints(t, "perm", &cnt);
  for (int k = 0; k < 4; k++) {
    int64_t a = cnt == 4 ? perm[k] : 3 - k;
    if (a < 0 || a > 3) return -1;
    ax[k] = (int)a;
  }
  return p;
}

static ait_status add_match(cu_planner *pl, const cu_attn_match *m) {
  cu_attn_match *more = realloc(pl->m, sizeof *more * (size_t)(pl->n_m + 1));
  if (!more) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
  pl->m = more;
  pl->m[pl->n_m++] = *m;
  return AIT_OK;
}

/* The mask broadcasts to [B, H, S, Sk]? */
static bool mask_fits(const ait_graph *g, int mv, const int64_t *want) {
  const ait_value *v = &g->values[mv];
  if (v->rank < 0 || v->rank > 4) return false;
  for (int k = 0; k < v->rank; k++) {
    int64_t d = v->dims[k].v, w = want[k + 4 - v->rank];
    if (d != 1 && d != w) return false;
  }
  return true;
}

/* The windowed mask (rank <= 5) broadcasts to [B / W, W, H, S, Sk], its
 * leading dim 1 or absent (want: [B, H, S, Sk])? */
static bool window_mask_fits(const ait_graph *g, int mv, int64_t w, const int64_t *want) {
  const ait_value *v = &g->values[mv];
  int64_t d5[5] = {want[0] / w, w, want[1], want[2], want[3]};
  if (v->rank < 0 || v->rank > 5 || (v->rank == 5 && v->dims[0].v != 1)) return false;
  for (int k = 0; k < v->rank; k++) {
    int64_t d = v->dims[k].v, x = d5[k + 5 - v->rank];
    if (d != 1 && d != x) return false;
  }
  return true;
}

/* Value v (read once) is a Reshape [B, S, H, D] of output idx of a Split
 * on the last axis of x [B, S, 3 * H * D] into three equal parts, each read
 * once (cu_pass_qkv's rewrite)? Then the Reshape node, else -1. */
static int split_part(const ait_graph *g, const uses *u, int v, int *split, int *idx) {
  int r = v >= 0 && single(u, v) ? g->values[v].producer : -1;
  if (r < 0 || !ait_is_op_in(&g->nodes[r], "", "Reshape")) return -1;
  int sv = g->nodes[r].in[0];
  int sp = sv >= 0 && single(u, sv) ? g->values[sv].producer : -1;
  if (sp < 0 || !ait_is_op_in(&g->nodes[sp], "", "Split") || g->nodes[sp].n_out != 3 ||
      g->nodes[sp].n_in < 1)
    return -1;
  const ait_value *x = &g->values[g->nodes[sp].in[0]], *rv = &g->values[v];
  int64_t axis = ait_attr_int(&g->nodes[sp], "axis", 0);
  if (x->rank != 3 || rv->rank != 4 || (axis != -1 && axis != 2)) return -1;
  int64_t n3 = x->dims[2].v, hd = rv->dims[2].v * rv->dims[3].v;
  if (x->dims[0].v != rv->dims[0].v || x->dims[1].v != rv->dims[1].v || x->dims[0].v < 0 ||
      x->dims[1].v < 0 || hd <= 0 || n3 != 3 * hd)
    return -1;
  *idx = -1;
  for (int k = 0; k < 3; k++) {
    int o = g->nodes[sp].out[k];
    if (o < 0 || g->values[o].rank != 3 || g->values[o].dims[2].v != hd) return -1;
    if (o == sv) *idx = k;
  }
  *split = sp;
  return *idx >= 0 ? r : -1;
}

/* Q, K and V of a fused match read in place from one qkv tensor: the
 * Split and the Reshapes join the skipped nodes (skip[4]). */
static void find_qkv(const ait_graph *g, const uses *u, cu_attn_match *m, int *skip) {
  m->qkv = -1;
  int vals[3] = {m->q, m->k, m->v}, sp[3], idx[3];
  for (int k = 0; k < 3; k++)
    if ((skip[k] = split_part(g, u, vals[k], &sp[k], &idx[k])) < 0) return;
  if (sp[0] != sp[1] || sp[0] != sp[2] || idx[0] == idx[1] || idx[0] == idx[2] || idx[1] == idx[2])
    return;
  skip[3] = sp[0];
  m->qkv = g->nodes[sp[0]].in[0];
  int64_t hd = g->values[m->qkv].dims[2].v / 3;
  for (int k = 0; k < 3; k++)
    m->qkv_off[k] = idx[k] * hd;
}

/* The shared matcher (ait_match_attention) sees the plan graph through
 * these: the readers of a value by scanning, counted as uses counts them. */
static int view_readers(const void *ctx, int v, int *nodes, int max) {
  const attn_view *cv = ctx;
  const ait_graph *g = cv->g;
  int filled = 0;
  for (int k = 0; k < max; k++)
    nodes[k] = -1;
  for (int i = 0; i < g->n_nodes && filled < max; i++)
    for (int k = 0; k < g->nodes[i].n_in && filled < max; k++)
      if (g->nodes[i].in[k] == v) nodes[filled++] = i;
  return cv->u->n[v] + (cv->u->out[v] ? 1 : 0);
}

static bool view_scalar(const void *ctx, int v, float *out) {
  const ait_graph *g = ((const attn_view *)ctx)->g;
  const ait_tensor *c = v >= 0 ? g->values[v].init : NULL;
  if (!c || c->kind != AIT_KIND_TENSOR || c->dtype != AIT_FLOAT32 || ait_tensor_numel(c) != 1)
    return false;
  *out = *(const float *)c->data;
  return true;
}

/* The scaling node x of Q or K^T (ait_match_attention's q_scale/k_scale):
 * its operand, of the scaled value's static dims, in *x; else -1. */
static int scaled_from(const ait_graph *g, int node, int v, int *x) {
  if (node < 0) return -1;
  const ait_node *n = &g->nodes[node];
  for (int k = 0; k < 2; k++) {
    int xi = n->in[k];
    const ait_value *xv = &g->values[xi], *vv = &g->values[v];
    if (xv->init || xv->rank != vv->rank) continue;
    bool same = true;
    for (int d = 0; d < vv->rank; d++)
      same = same && xv->dims[d].v == vv->dims[d].v && xv->dims[d].v >= 0;
    if (!same) continue;
    *x = xi;
    return node;
  }
  return -1;
}

/* Try the pattern around Softmax node i (ait_match_attention); *m is
 * filled when it fits. tr[0..3]: the head transposes absorbed; tr[4..5]:
 * the scalings of Q and Kt absorbed; -1 where none. am: the match. */
static bool match_at(cu_planner *pl, const uses *u, int i, cu_attn_match *m, int *tr,
                     ait_attn_match *am) {
  const ait_graph *g = pl->g;
  attn_view cv = {g, u};
  ait_match_view view = {.g = g, .readers = view_readers, .scalar = view_scalar, .ctx = &cv};
  if (!ait_is_op(&g->nodes[i], "Softmax") || !ait_match_attention(&view, i, am)) return false;
  const ait_node *pv = &g->nodes[am->pv];
  if (g->values[pv->out[0]].init || g->values[am->scores_out].rank != 4) return false;
  memset(m, 0, sizeof *m);
  m->pv = am->pv;
  m->sm = i;
  m->sc = am->scores;
  m->qkv = -1;
  m->sm_in = am->scores_out;
  m->z_mask = am->mask >= 0 && am->mask_add < 0;
  const ait_node *sc = &g->nodes[m->sc];
  float base_scale = am->scale;
  m->scale = base_scale;
  m->mask = am->wmask >= 0 ? am->wmask : am->mask;
  m->mask2 = am->wmask >= 0 ? am->mask : -1;
  m->mw = am->wmask >= 0 ? am->windows : 0;
  /* Q and Kt as the scores read them, or before a scaling by a constant,
   * whose factor joins the scale (only where the kernel is fused: else the
   * scalings run as they are) */
  int qin = sc->in[0], kin = sc->in[1], qx = -1, kx = -1;
  tr[4] = scaled_from(g, am->q_scale, qin, &qx);
  tr[5] = scaled_from(g, am->k_scale, kin, &kx);
  float fq = tr[4] >= 0 ? am->q_factor : 1.0f, fk = tr[5] >= 0 ? am->k_factor : 1.0f;
  if (tr[4] >= 0) qin = qx;
  if (tr[5] >= 0) kin = kx;
  int64_t q[4], kt[4], v[4], o[4];
  if (!dims4(g, qin, q) || !dims4(g, kin, kt) || !dims4(g, pv->in[1], v) ||
      !dims4(g, pv->out[0], o))
    return false;
  for (int k = 0; k < 2; k++)
    if (kt[k] != q[k] || v[k] != q[k] || o[k] != q[k]) return false;
  if (kt[2] != q[3] || v[2] != kt[3] || v[3] != q[3] || o[2] != q[2] || o[3] != q[3]) return false;
  int64_t sshape[4] = {q[0], q[1], q[2], kt[3]};
  if (m->mask >= 0 && !m->mw && !mask_fits(g, m->mask, sshape)) return false;
  if (m->mw && (q[0] % m->mw || !window_mask_fits(g, m->mask, m->mw, sshape))) return false;
  /* with a windowed mask, the plain one (the relative position bias) the
   * same for every window: the two are added into one per plan run */
  if (m->mask2 >= 0 && (!mask_fits(g, m->mask2, sshape) ||
                        (g->values[m->mask2].rank == 4 && g->values[m->mask2].dims[0].v != 1)))
    return false;
  /* the fused kernel, with the head transposes absorbed */
  ait_dtype dt = pl->s->fdt;
  m->fused = cuk_attention_ok(dt, (int)q[3]) != 0 && !pl->s->o.attn_gemm;
  /* attention=auto: the FlashAttention-2 kernel (head size 64) was measured
   * faster than the GEMMs at every size tried, BERT-base batch 1 (24 blocks
   * on 132 SMs) included (docs/benchmarks-gpu.md, third round). The WMMA
   * kernel, for other head sizes, is not: under 2 blocks per SM most of the
   * GPU idles and the batched GEMMs around a masked softmax win. */
  int64_t blocks = q[0] * q[1] * ((q[2] + 63) / 64);
  bool flash = !pl->s->o.attn_wmma && cuk_flash_fits(dt, (int)q[3]);
  if (m->fused && pl->s->o.attn_auto && !flash && pl->s->n_sm > 0 &&
      blocks < 2 * (int64_t)pl->s->n_sm)
    m->fused = false;
  int qax[4], kax[4], vax[4];
  tr[0] = transposed_from(g, u, qin, qax);
  tr[1] = transposed_from(g, u, kin, kax);
  tr[2] = transposed_from(g, u, pv->in[1], vax);
  tr[3] = -1;
  m->q = tr[0] >= 0 ? g->nodes[tr[0]].in[0] : qin;
  m->k = tr[1] >= 0 ? g->nodes[tr[1]].in[0] : kin;
  m->scale = base_scale * fq * fk;
  m->v = tr[2] >= 0 ? g->nodes[tr[2]].in[0] : pv->in[1];
  for (int k = 0; k < 4; k++) {
    m->qax[k] = tr[0] >= 0 ? qax[k] : k;
    m->vax[k] = tr[2] >= 0 ? vax[k] : k;
    m->oax[k] = k;
  }
  /* Kt is [b, h, d, s]; the kernel reads K as [b, h, s, d] */
  int kt_ax[4] = {0, 1, 2, 3};
  if (tr[1] >= 0) memcpy(kt_ax, kax, sizeof kt_ax);
  m->kax[0] = kt_ax[0], m->kax[1] = kt_ax[1], m->kax[2] = kt_ax[3], m->kax[3] = kt_ax[2];
  m->out = pv->out[0];
  int ov = pv->out[0];
  if (single(u, ov) && ait_is_op_in(&g->nodes[u->reader[ov]], "", "Transpose")) {
    int oax[4];
    int t = u->reader[ov];
    int cnt = 0;
    const int64_t *perm = ait_attr_ints(&g->nodes[t], "perm", &cnt);
    bool ok = true;
    for (int k = 0; k < 4; k++) {
      int64_t a = cnt == 4 ? perm[k] : 3 - k;
      if (a < 0 || a > 3)
        ok = false;
      else
        oax[a] = k; /* O's axis a is the transpose output's axis k */
    }
    if (ok && oax[3] == 3 && g->nodes[t].out[0] >= 0) {
      tr[3] = t;
      m->out = g->nodes[t].out[0];
      memcpy(m->oax, oax, sizeof oax);
    }
  }
  if (m->qax[3] != 3 || m->kax[3] != 3 || m->vax[3] != 3) m->fused = false;
  if (!m->fused) {
    m->scale = base_scale;
    tr[4] = tr[5] = -1;
    m->q = sc->in[0];
    m->k = sc->in[1];
    m->v = pv->in[1];
    m->out = pv->out[0];
    /* a masked softmax is still worth it; it reads the scores as the
     * product writes them, so no scaling may lie between */
    return m->mask >= 0 && am->n_scale == 0 && ait_attr_float(sc, "alpha", 1.0f) == am->scale;
  }
  return true;
}

ait_status cu_find_attention(cu_planner *pl) {
  const ait_graph *g = pl->g;
  pl->role = calloc((size_t)g->n_nodes + 1, 1);
  pl->match = malloc(sizeof(int) * (size_t)(g->n_nodes + 1));
  uses u = {calloc((size_t)g->n_values + 1, sizeof(int)),
            calloc((size_t)g->n_values + 1, sizeof(int)),
            calloc((size_t)g->n_values + 1, sizeof(bool))};
  ait_status st = pl->role && pl->match && u.n && u.reader && u.out
                      ? AIT_OK
                      : ait_err(AIT_E_NOMEM, "cuda: out of memory");
  for (int i = 0; !st && i < g->n_nodes; i++) {
    pl->match[i] = -1;
    for (int k = 0; k < g->nodes[i].n_in; k++) {
      int v = g->nodes[i].in[k];
      if (v < 0) continue;
      u.n[v]++;
      u.reader[v] = i;
    }
  }
  for (int k = 0; !st && k < g->n_outputs; k++)
    u.out[g->outputs[k]] = true;
  for (int i = 0; !st && pl->s->o.attention && i < g->n_nodes; i++) {
    cu_attn_match m;
    ait_attn_match am;
    int tr[6], skip[4];
    if (!match_at(pl, &u, i, &m, tr, &am)) continue;
    int pv = m.pv;
    pl->match[pv] = pl->match[m.sm] = pl->n_m;
    if (m.fused) find_qkv(g, &u, &m, skip);
    for (int k = 0; m.qkv >= 0 && k < 4; k++)
      pl->role[skip[k]] = CU_ROLE_SKIP;
    /* the masks' Adds and swin's Reshapes around the windowed one */
    int between[4] = {am.mask_add, am.wmask_add, am.wreshape[0], am.wreshape[1]};
    for (int k = 0; k < 4; k++)
      if (between[k] >= 0) pl->role[between[k]] = CU_ROLE_SKIP;
    if (m.fused) {
      pl->role[pv] = CU_ROLE_ATTN;
      for (int k = 0; k < am.n_nodes; k++)
        if (am.nodes[k] != pv) pl->role[am.nodes[k]] = CU_ROLE_SKIP;
      for (int k = 0; k < 6; k++)
        if (tr[k] >= 0) pl->role[tr[k]] = CU_ROLE_SKIP;
    } else {
      if (m.z_mask) pl->role[m.sc] = CU_ROLE_NO_Z;
      pl->role[m.sm] = CU_ROLE_MASKED_SOFTMAX;
    }
    st = add_match(pl, &m);
  }
  free(u.n);
  free(u.reader);
  free(u.out);
  return st;
}

/* ---- lowering ------------------------------------------------------------ */

/* Strides of a [b, h, row, d] view of tensor t whose axes are ax[]. */
static void view_strides(const cu_tensor *t, const int *ax, long long *st) {
  int64_t L[AIT_MAX_RANK];
  cu_strides(t, L);
  for (int k = 0; k < 3; k++)
    st[k] = L[ax[k]];
}

/* Mask strides broadcast to [B, H, S, Sk]; with mw windows, to [B / mw,
 * mw, H, S, Sk] (st[0]: the window's stride; batch b reads window b % mw). */
static void mask_strides(const cu_tensor *t, int64_t mw, long long *st) {
  int64_t L[AIT_MAX_RANK];
  cu_strides(t, L);
  int r = mw > 0 ? 5 : 4, first = mw > 0 ? 1 : 0;
  for (int k = first; k < r; k++) {
    int km = k - (r - t->rank);
    st[k - first] = km < 0 || t->dims[km] == 1 ? 0 : L[km];
  }
}

/* The mask tensor of match m in *t: its one mask, or, with swin's two
 * (m->mask2: the bias, the same for every window), their sum [1, W, H, S,
 * Sk] by a broadcasting Add step before the attention (small next to the
 * scores: one per window and head, not per image). */
static ait_status attn_mask(cu_planner *pl, const cu_attn_match *m, int node, int *t) {
  AIT_TRY(cu_in(pl, m->mask, CU_PLAIN, t));
  if (m->mask2 < 0) return AIT_OK;
  int in[2] = {*t, -1};
  AIT_TRY(cu_in(pl, m->mask2, CU_PLAIN, &in[1]));
  const ait_value *sv = &pl->g->values[m->sm_in];
  int64_t d[5] = {1, m->mw, sv->dims[1].v, sv->dims[2].v, sv->dims[3].v};
  AIT_TRY(cu_temp(pl, pl->p->t[in[0]].dt, 5, d, CU_PLAIN, t));
  return cu_emit_eltwise(pl, node, "window mask", CUK_ADD, NULL, in, 2, *t, CUK_COPY, NULL, 1.0f);
}

typedef struct attn_prm {
  cuk_attn k;
  int q, kk, v, mask, out;
  int64_t off[3]; /* element offsets of Q, K, V in their tensors */
} attn_prm;

static ait_status attn_prep(cu_state *s, cu_plan *p, cu_step *st) {
  attn_prm *a = st->prm;
  return cu_check(cuk_attention_prepare(a->k.dt, a->k.D), "preparing the attention kernel");
}

static ait_status attn_run(cu_state *s, cu_plan *p, cu_step *st) {
  attn_prm *a = st->prm;
  size_t es = ait_elem_size(p->t[a->q].dt);
  a->k.q = (char *)cu_ptr(p, a->q) + a->off[0] * (int64_t)es;
  a->k.k = (char *)cu_ptr(p, a->kk) + a->off[1] * (int64_t)es;
  a->k.v = (char *)cu_ptr(p, a->v) + a->off[2] * (int64_t)es;
  a->k.mask = a->mask >= 0 ? cu_ptr(p, a->mask) : NULL;
  a->k.o = cu_ptr(p, a->out);
  return cu_check(cuk_attention(s->stream, &a->k), "attention");
}

ait_status cu_lower_attention(cu_planner *pl, const ait_node *n) {
  const cu_attn_match *m = &pl->m[pl->match[n - pl->g->nodes]];
  attn_prm *a = calloc(1, sizeof *a);
  if (!a) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
  a->mask = -1;
  ait_status st = AIT_OK;
  if (m->qkv >= 0) { /* one tensor, three offsets */
    st = cu_in(pl, m->qkv, CU_PLAIN, &a->q);
    a->kk = a->v = a->q;
    memcpy(a->off, m->qkv_off, sizeof a->off);
  } else {
    st = cu_in(pl, m->q, CU_PLAIN, &a->q);
    if (!st) st = cu_in(pl, m->k, CU_PLAIN, &a->kk);
    if (!st) st = cu_in(pl, m->v, CU_PLAIN, &a->v);
  }
  if (!st && m->mask >= 0) st = attn_mask(pl, m, (int)(n - pl->g->nodes), &a->mask);
  if (!st) st = cu_out(pl, m->out, CU_PLAIN, &a->out);
  if (st) {
    free(a);
    return st;
  }
  const cu_plan *p = pl->p;
  const cu_tensor *Q = &p->t[a->q], *K = &p->t[a->kk], *V = &p->t[a->v], *O = &p->t[a->out];
  /* logical dims and strides of Q, K, V as the pattern sees them */
  int64_t qd[4], kd[4], L[3][AIT_MAX_RANK];
  if (m->qkv >= 0) { /* [B, S, H, D] views of rows of 3 * H * D */
    const ait_value *vals[3] = {&pl->g->values[m->q], &pl->g->values[m->k], &pl->g->values[m->v]};
    for (int j = 0; j < 3; j++) {
      const ait_value *r = vals[j];
      L[j][3] = 1;
      L[j][2] = r->dims[3].v;
      L[j][1] = Q->dims[2];
      L[j][0] = Q->dims[1] * Q->dims[2];
    }
    for (int j = 0; j < 4; j++)
      qd[j] = vals[0]->dims[j].v, kd[j] = vals[1]->dims[j].v;
  } else {
    cu_strides(Q, L[0]);
    cu_strides(K, L[1]);
    cu_strides(V, L[2]);
    memcpy(qd, Q->dims, sizeof qd);
    memcpy(kd, K->dims, sizeof kd);
  }
  cuk_attn *k = &a->k;
  k->dt = O->dt;
  k->B = (int)qd[m->qax[0]];
  k->H = (int)qd[m->qax[1]];
  k->S = (int)qd[m->qax[2]];
  k->D = (int)qd[m->qax[3]];
  k->Sk = (int)kd[m->kax[2]];
  k->scale = m->scale;
  k->qb = L[0][m->qax[0]], k->qh = L[0][m->qax[1]], k->qs = L[0][m->qax[2]];
  k->kb = L[1][m->kax[0]], k->kh = L[1][m->kax[1]], k->ks = L[1][m->kax[2]];
  k->vb = L[2][m->vax[0]], k->vh = L[2][m->vax[1]], k->vs = L[2][m->vax[2]];
  long long st3[3];
  view_strides(O, m->oax, st3);
  k->ob = st3[0], k->oh = st3[1], k->os = st3[2];
  if (a->mask >= 0) {
    long long ms[4];
    mask_strides(&p->t[a->mask], m->mw, ms);
    k->mb = ms[0], k->mh = ms[1], k->mi = ms[2], k->mj = ms[3];
    k->mw = m->mw;
  }
  long long all[12] = {k->qb, k->qh, k->qs, k->kb, k->kh, k->ks,
                       k->vb, k->vh, k->vs, k->ob, k->oh, k->os};
  k->vec = 1;
  for (int i = 0; i < 12; i++)
    k->vec = k->vec && all[i] % 8 == 0;
  k->flash = !pl->s->o.attn_wmma && cuk_flash_ok(k);
  if (Q->dt != O->dt || K->dt != O->dt || V->dt != O->dt ||
      (a->mask >= 0 && p->t[a->mask].dt != O->dt)) {
    free(a);
    return ait_err(AIT_E_INTERNAL, "cuda: attention operands of different types");
  }
  int q = a->q, kk = a->kk, v = a->v, mask = a->mask, out = a->out;
  cu_step *s;
  /* the kernel names the step: profiles tell them apart */
  AIT_TRY(cu_step_add(pl, (int)(n - pl->g->nodes), k->flash ? "FlashAttention" : "Attention",
                      attn_run, a, &s));
  s->prep = attn_prep;
  cu_step_use(s, q);
  cu_step_use(s, kk);
  cu_step_use(s, v);
  cu_step_use(s, mask);
  cu_step_use(s, out);
  return AIT_OK;
}

typedef struct msm_prm {
  int x, y, mask;
  int64_t rows, len, H, S, mw;
  long long ms[4];
} msm_prm;

static ait_status msm_run(cu_state *s, cu_plan *p, cu_step *st) {
  msm_prm *q = st->prm;
  return cu_check(cuk_softmax_masked(s->stream, p->t[q->x].dt, cu_ptr(p, q->x), cu_ptr(p, q->y),
                                     q->rows, q->len, cu_ptr(p, q->mask), q->H, q->S, q->ms[0],
                                     q->ms[1], q->ms[2], q->ms[3], q->mw),
                  "masked Softmax");
}

ait_status cu_lower_masked_softmax(cu_planner *pl, const ait_node *n) {
  const cu_attn_match *m = &pl->m[pl->match[n - pl->g->nodes]];
  msm_prm *q = calloc(1, sizeof *q);
  if (!q) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
  /* the scores as their product writes them (swin's Reshapes skipped) */
  ait_status st = cu_in(pl, m->sm_in, CU_PLAIN, &q->x);
  if (!st) st = attn_mask(pl, m, (int)(n - pl->g->nodes), &q->mask);
  if (!st) st = cu_out(pl, n->out[0], CU_PLAIN, &q->y);
  if (!st && (pl->p->t[q->x].rank != 4 || pl->p->t[q->mask].dt != pl->p->t[q->x].dt))
    st = ait_err(AIT_E_INTERNAL, "cuda: masked softmax operands do not match");
  if (st) {
    free(q);
    return st;
  }
  const cu_tensor *X = &pl->p->t[q->x];
  q->H = X->dims[1];
  q->S = X->dims[2];
  q->len = X->dims[3];
  q->rows = X->dims[0] * X->dims[1] * X->dims[2];
  mask_strides(&pl->p->t[q->mask], m->mw, q->ms);
  q->mw = m->mw;
  int x = q->x, y = q->y, mask = q->mask;
  cu_step *s;
  AIT_TRY(cu_step_add(pl, (int)(n - pl->g->nodes), "Softmax+mask", msm_run, q, &s));
  cu_step_use(s, x);
  cu_step_use(s, mask);
  cu_step_use(s, y);
  return AIT_OK;
}

#endif
