/* Static shape functions of the nn family. Unknown sizes stay -1; a dim that
 * passes through unchanged (batch, channels, matmul rows) keeps its symbol. */
#include <string.h>

#include "ops/nn_impl.h"

static const ait_dim UNKNOWN = {-1, NULL};

static ait_dim known(int64_t v) {
  ait_dim d = {v, NULL};
  return d;
}

/* Sizes of v's dims (-1 when unknown). */
static void sizes(const ait_value *v, int64_t *s) {
  for (int i = 0; i < v->rank; i++)
    s[i] = v->dims[i].v;
}

/* Output 0 (and out1 when idx) of a windowed op: [N, ch, spatial...]. */
static void set_windowed(ait_graph *g, const ait_node *n, const ait_value *x, ait_dim ch,
                         const nn_win *w, int n_idx_out) {
  ait_dim od[AIT_MAX_RANK];
  od[0] = x->dims[0], od[1] = ch;
  for (int i = 0; i < w->nsp; i++)
    od[2 + i] = w->out[i] >= 0 ? known(w->out[i]) : UNKNOWN;
  ait_set_out(g, n, 0, x->dtype, x->rank, od);
  if (n_idx_out) ait_set_out(g, n, 1, AIT_INT64, x->rank, od);
}

ait_status nn_conv_shape(ait_graph *g, const ait_node *n) {
  const ait_value *x = ait_node_in(g, n, 0), *w = ait_node_in(g, n, 1);
  if (!x) return AIT_OK;
  if (x->rank < 0) {
    ait_set_out(g, n, 0, x->dtype, -1, NULL);
    return AIT_OK;
  }
  if (x->rank < 3) return ait_err(AIT_E_SHAPE, "Conv input has rank %d, needs >= 3", x->rank);
  int nsp = x->rank - 2;
  int64_t in[AIT_MAX_RANK], k[AIT_MAX_RANK];
  sizes(x, in);
  for (int i = 0; i < nsp; i++)
    k[i] = w && w->rank == x->rank ? w->dims[2 + i].v : -1;
  nn_win win;
  AIT_TRY(nn_win_conv(n, nsp, in + 2, k, false, true, &win));
  ait_dim ch = w && w->rank == x->rank ? w->dims[0] : UNKNOWN;
  set_windowed(g, n, x, ch, &win, 0);
  return AIT_OK;
}

ait_status nn_convt_shape(ait_graph *g, const ait_node *n) {
  const ait_value *x = ait_node_in(g, n, 0), *w = ait_node_in(g, n, 1);
  if (!x) return AIT_OK;
  if (x->rank < 0) {
    ait_set_out(g, n, 0, x->dtype, -1, NULL);
    return AIT_OK;
  }
  if (x->rank < 3) return ait_err(AIT_E_SHAPE, "ConvTranspose input rank %d, needs >= 3", x->rank);
  int nsp = x->rank - 2;
  int64_t in[AIT_MAX_RANK], k[AIT_MAX_RANK];
  sizes(x, in);
  bool wk = w && w->rank == x->rank;
  for (int i = 0; i < nsp; i++)
    k[i] = wk ? w->dims[2 + i].v : -1;
  nn_win win;
  AIT_TRY(nn_win_convt(n, nsp, in + 2, k, &win));
  int64_t group = ait_attr_int(n, "group", 1);
  ait_dim ch = wk && w->dims[1].v >= 0 ? known(w->dims[1].v * group) : UNKNOWN;
  if (wk && group == 1) ch = w->dims[1];
  set_windowed(g, n, x, ch, &win, 0);
  return AIT_OK;
}

ait_status nn_pool_shape(ait_graph *g, const ait_node *n) {
  const ait_value *x = ait_node_in(g, n, 0);
  if (!x) return AIT_OK;
  bool idx = n->n_out > 1 && n->out[1] >= 0;
  if (x->rank < 0) {
    ait_set_out(g, n, 0, x->dtype, -1, NULL);
    if (idx) ait_set_out(g, n, 1, AIT_INT64, -1, NULL);
    return AIT_OK;
  }
  if (x->rank < 3) return ait_err(AIT_E_SHAPE, "pool input has rank %d, needs >= 3", x->rank);
  int64_t in[AIT_MAX_RANK];
  sizes(x, in);
  bool ceil_mode = ait_attr_int(n, "ceil_mode", 0) != 0;
  bool dil = nn_pool_has_dilations(n);
  nn_win win;
  AIT_TRY(nn_win_conv(n, x->rank - 2, in + 2, NULL, ceil_mode, dil, &win));
  set_windowed(g, n, x, x->dims[1], &win, idx);
  return AIT_OK;
}

ait_status nn_global_pool_shape(ait_graph *g, const ait_node *n) {
  const ait_value *x = ait_node_in(g, n, 0);
  if (!x) return AIT_OK;
  if (x->rank < 0) {
    ait_set_out(g, n, 0, x->dtype, -1, NULL);
    return AIT_OK;
  }
  if (x->rank < 2) return ait_err(AIT_E_SHAPE, "global pool input has rank %d", x->rank);
  ait_dim od[AIT_MAX_RANK];
  for (int i = 0; i < x->rank; i++)
    od[i] = i < 2 ? x->dims[i] : known(1);
  ait_set_out(g, n, 0, x->dtype, x->rank, od);
  return AIT_OK;
}

ait_status nn_batchnorm_shape(ait_graph *g, const ait_node *n) {
  const ait_value *x = ait_node_in(g, n, 0);
  if (!x) return AIT_OK;
  ait_set_out(g, n, 0, x->dtype, x->rank, x->rank >= 0 ? x->dims : NULL);
  for (int i = 1; i < n->n_out; i++) {
    const ait_value *m = ait_node_in(g, n, i < 3 ? i + 2 : 3); /* running mean / var */
    if (!m || n->out[i] < 0) continue;
    ait_set_out(g, n, i, m->dtype, m->rank, m->rank >= 0 ? m->dims : NULL);
  }
  return AIT_OK;
}

ait_status nn_layernorm_shape(ait_graph *g, const ait_node *n) {
  const ait_value *x = ait_node_in(g, n, 0);
  if (!x) return AIT_OK;
  int64_t stash = ait_attr_int(n, "stash_type", 1);
  ait_dtype sdt = (stash == AIT_FLOAT32 || stash == AIT_FLOAT64 || stash == AIT_FLOAT16 ||
                   stash == AIT_BFLOAT16)
                      ? (ait_dtype)stash
                      : AIT_FLOAT32;
  ait_set_out(g, n, 0, x->dtype, x->rank, x->rank >= 0 ? x->dims : NULL);
  if (x->rank < 0) {
    for (int i = 1; i < n->n_out && i < 3; i++)
      ait_set_out(g, n, i, sdt, -1, NULL);
    return AIT_OK;
  }
  int axis;
  AIT_TRY(ait_norm_axis(ait_attr_int(n, "axis", -1), x->rank, &axis));
  ait_dim od[AIT_MAX_RANK];
  for (int i = 0; i < x->rank; i++)
    od[i] = i < axis ? x->dims[i] : known(1);
  for (int i = 1; i < n->n_out && i < 3; i++)
    ait_set_out(g, n, i, sdt, x->rank, od);
  return AIT_OK;
}

ait_status nn_gemm_shape(ait_graph *g, const ait_node *n) {
  const ait_value *a = ait_node_in(g, n, 0), *b = ait_node_in(g, n, 1);
  if (!a) return AIT_OK;
  ait_dim od[2] = {UNKNOWN, UNKNOWN};
  bool ta = ait_attr_int(n, "transA", 0) != 0, tb = ait_attr_int(n, "transB", 0) != 0;
  if (a->rank >= 0 && a->rank != 2) return ait_err(AIT_E_SHAPE, "Gemm A has rank %d", a->rank);
  if (b && b->rank >= 0 && b->rank != 2) return ait_err(AIT_E_SHAPE, "Gemm B has rank %d", b->rank);
  if (a->rank == 2) od[0] = a->dims[ta ? 1 : 0];
  if (b && b->rank == 2) od[1] = b->dims[tb ? 0 : 1];
  if (a->rank == 2 && b && b->rank == 2) {
    int64_t ka = a->dims[ta ? 0 : 1].v, kb = b->dims[tb ? 1 : 0].v;
    if (ka >= 0 && kb >= 0 && ka != kb)
      return ait_err(AIT_E_SHAPE, "Gemm inner dims differ: %lld vs %lld", (long long)ka,
                     (long long)kb);
  }
  ait_set_out(g, n, 0, a->dtype, 2, od);
  return AIT_OK;
}

/* Broadcast of two dims, keeping what is known. */
static ait_dim bdim(ait_dim a, ait_dim b) {
  if (a.v == 1) return b;
  if (b.v == 1) return a;
  if (a.v >= 0) return a;
  if (b.v >= 0) return b;
  if (a.sym && b.sym && !strcmp(a.sym, b.sym)) return a;
  return UNKNOWN;
}

ait_status nn_matmul_shape(ait_graph *g, const ait_node *n) {
  const ait_value *a = ait_node_in(g, n, 0), *b = ait_node_in(g, n, 1);
  if (!a || !b) return AIT_OK;
  if (a->rank < 0 || b->rank < 0) {
    ait_set_out(g, n, 0, a->dtype, -1, NULL);
    return AIT_OK;
  }
  if (a->rank < 1 || b->rank < 1) return ait_err(AIT_E_SHAPE, "MatMul operand of rank 0");
  int64_t ka = a->dims[a->rank - 1].v, kb = b->dims[b->rank == 1 ? 0 : b->rank - 2].v;
  if (ka >= 0 && kb >= 0 && ka != kb)
    return ait_err(AIT_E_SHAPE, "MatMul inner dims differ: %lld vs %lld", (long long)ka,
                   (long long)kb);
  int na = a->rank > 2 ? a->rank - 2 : 0, nb = b->rank > 2 ? b->rank - 2 : 0;
  int nbatch = na > nb ? na : nb, r = 0;
  ait_dim od[AIT_MAX_RANK + 2];
  for (int i = 0; i < nbatch; i++) {
    int ia = i - (nbatch - na), ib = i - (nbatch - nb);
    ait_dim da = ia >= 0 ? a->dims[ia] : known(1), db = ib >= 0 ? b->dims[ib] : known(1);
    if (da.v >= 0 && db.v >= 0 && da.v != db.v && da.v != 1 && db.v != 1)
      return ait_err(AIT_E_SHAPE, "MatMul batch dims %lld and %lld do not broadcast",
                     (long long)da.v, (long long)db.v);
    od[r++] = bdim(da, db);
  }
  if (a->rank > 1) od[r++] = a->dims[a->rank - 2];
  if (b->rank > 1) od[r++] = b->dims[b->rank - 1];
  if (r > AIT_MAX_RANK) return ait_err(AIT_E_UNSUPPORTED, "MatMul output rank %d", r);
  ait_set_out(g, n, 0, a->dtype, r, od);
  return AIT_OK;
}
