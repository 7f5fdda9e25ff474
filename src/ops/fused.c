/* Operator family 'fused' (domain "ai.aitune"): ops that graph passes create
 * by fusing standard ones (see fused_impl.h for their semantics); reference
 * kernels live in src/ops/fused_kernels.c, activations in fused_act.c. */
#include <string.h>

#include "ir/shape.h"
#include "ops/fused_impl.h"
#include "ops/nn_impl.h"

ait_status ait_fused_conv_kernel(ait_kctx *ctx, const ait_node *node, const ait_tensor *const *in,
                                 int n_in, ait_tensor **out, int n_out);
ait_status ait_fused_gemm_kernel(ait_kctx *ctx, const ait_node *node, const ait_tensor *const *in,
                                 int n_in, ait_tensor **out, int n_out);
ait_status ait_fused_matmul_kernel(ait_kctx *ctx, const ait_node *node, const ait_tensor *const *in,
                                   int n_in, ait_tensor **out, int n_out);
ait_status ait_fused_conv_nhwc_kernel(ait_kctx *ctx, const ait_node *node,
                                      const ait_tensor *const *in, int n_in, ait_tensor **out,
                                      int n_out);
ait_status ait_fused_inv_res_kernel(ait_kctx *ctx, const ait_node *node,
                                    const ait_tensor *const *in, int n_in, ait_tensor **out,
                                    int n_out);
ait_status ait_fused_attention_kernel(ait_kctx *ctx, const ait_node *node,
                                      const ait_tensor *const *in, int n_in, ait_tensor **out,
                                      int n_out);
ait_status ait_fused_unary_kernel(ait_kctx *ctx, const ait_node *node, const ait_tensor *const *in,
                                  int n_in, ait_tensor **out, int n_out);
ait_status ait_fused_instancenorm_kernel(ait_kctx *ctx, const ait_node *node,
                                         const ait_tensor *const *in, int n_in, ait_tensor **out,
                                         int n_out);
ait_status ait_fused_gap_nhwc_kernel(ait_kctx *ctx, const ait_node *node,
                                     const ait_tensor *const *in, int n_in, ait_tensor **out,
                                     int n_out);
ait_status ait_fused_pool_nhwc_kernel(ait_kctx *ctx, const ait_node *node,
                                      const ait_tensor *const *in, int n_in, ait_tensor **out,
                                      int n_out);

/* X [N, H, W, C] gives Y [N, OH, OW, C]: the window of the pooling op the
 * node stands for (ait_fused_pool_node). */
static ait_status pool_nhwc_shape(ait_graph *g, const ait_node *n) {
  const ait_value *x = ait_node_in(g, n, 0);
  if (!x) return AIT_OK;
  ait_node pn;
  if (x->rank != 4 || !ait_fused_pool_node(n, &pn)) {
    ait_set_out(g, n, 0, x->dtype, -1, NULL);
    return AIT_OK;
  }
  int64_t sp[2] = {x->dims[1].v, x->dims[2].v};
  nn_win win;
  AIT_TRY(nn_win_conv(&pn, 2, sp, NULL, ait_attr_int(n, "ceil_mode", 0) != 0,
                      nn_pool_has_dilations(&pn), &win));
  ait_dim o[4];
  memset(o, 0, sizeof o);
  o[0] = x->dims[0];
  o[1].v = win.out[0];
  o[2].v = win.out[1];
  o[3] = x->dims[3];
  ait_set_out(g, n, 0, x->dtype, 4, o);
  return AIT_OK;
}

/* X [N, H, W, C] gives Y [N, C, 1, 1]. */
static ait_status gap_nhwc_shape(ait_graph *g, const ait_node *n) {
  const ait_value *x = ait_node_in(g, n, 0);
  if (!x) return AIT_OK;
  if (x->rank != 4) {
    ait_set_out(g, n, 0, x->dtype, -1, NULL);
    return AIT_OK;
  }
  ait_dim o[4];
  memset(o, 0, sizeof o);
  o[0] = x->dims[0];
  o[1] = x->dims[3];
  o[2].v = o[3].v = 1;
  ait_set_out(g, n, 0, x->dtype, 4, o);
  return AIT_OK;
}

/* Q'[.., Sq, D] and V'[.., Sk, Dv] give Y[.., Sq, Dv] (batch dims of Q'),
 * then out_perm; unknown when a rank is. */
static ait_status attention_shape(ait_graph *g, const ait_node *n) {
  const ait_value *q = ait_node_in(g, n, 0), *v = ait_node_in(g, n, 2);
  if (!q || !v) return AIT_OK;
  int r = q->rank, cq = 0, cv = 0, co = 0;
  const int64_t *qp = ait_attr_ints(n, "q_perm", &cq), *vp = ait_attr_ints(n, "v_perm", &cv);
  const int64_t *op = ait_attr_ints(n, "out_perm", &co);
  if (r < 2 || v->rank != r || (qp && cq != r) || (vp && cv != r) || (op && co != r)) {
    ait_set_out(g, n, 0, q->dtype, -1, NULL);
    return AIT_OK;
  }
  ait_dim y[AIT_MAX_RANK], o[AIT_MAX_RANK];
  for (int i = 0; i < r; i++) {
    int64_t a = qp ? qp[i] : i;
    if (a < 0 || a >= r) return ait_err(AIT_E_SHAPE, "FusedAttention: q_perm out of range");
    y[i] = q->dims[a];
  }
  int64_t last = vp ? vp[r - 1] : r - 1;
  if (last < 0 || last >= r) return ait_err(AIT_E_SHAPE, "FusedAttention: v_perm out of range");
  y[r - 1] = v->dims[last];
  for (int i = 0; i < r; i++) {
    int64_t a = op ? op[i] : i;
    if (a < 0 || a >= r) return ait_err(AIT_E_SHAPE, "FusedAttention: out_perm out of range");
    o[i] = y[a];
  }
  ait_set_out(g, n, 0, q->dtype, r, o);
  return AIT_OK;
}

/* X [N, H, W, C] ([N, C, H, W] with x_layout="NCHW") and W [kh, kw, C/group,
 * M] give Y [N, OH, OW, M]; unknown when a rank is. */
static ait_status conv_nhwc_shape(ait_graph *g, const ait_node *n) {
  const ait_value *x = ait_node_in(g, n, 0), *w = ait_node_in(g, n, 1);
  if (!x) return AIT_OK;
  if (x->rank != 4 || !w || w->rank != 4) {
    ait_set_out(g, n, 0, x->dtype, -1, NULL);
    return AIT_OK;
  }
  int a = strcmp(ait_attr_str(n, "x_layout", "NHWC"), "NCHW") ? 1 : 2;
  int64_t sp[2] = {x->dims[a].v, x->dims[a + 1].v}, k[2] = {w->dims[0].v, w->dims[1].v};
  nn_win win;
  AIT_TRY(nn_win_conv(n, 2, sp, k, false, true, &win));
  ait_dim o[4];
  memset(o, 0, sizeof o);
  o[0] = x->dims[0];
  o[1].v = win.out[0];
  o[2].v = win.out[1];
  o[3] = w->dims[3];
  ait_set_out(g, n, 0, x->dtype, 4, o);
  return AIT_OK;
}

bool ait_inv_res_stem(const ait_node *n, const int64_t in[2], const int64_t k[2], int64_t st[2],
                      int64_t pb[2], int64_t out[2]) {
  int ns = 0, np = 0;
  const int64_t *s = ait_attr_ints(n, "stem_strides", &ns),
                *pd = ait_attr_ints(n, "stem_pads", &np);
  if (!s || ns != 2 || !pd || np != 4) return false;
  for (int i = 0; i < 2; i++) {
    if (in[i] < 0 || in[i] > INT32_MAX || k[i] < 1 || s[i] < 1 || pd[i] < 0 || pd[2 + i] < 0 ||
        pd[i] > k[i] || pd[2 + i] > k[i] || in[i] + pd[i] + pd[2 + i] < k[i])
      return false;
    st[i] = s[i], pb[i] = pd[i];
    out[i] = (in[i] + pd[i] + pd[2 + i] - k[i]) / s[i] + 1;
  }
  return true;
}

/* X [N, H, W, C], the depthwise stage's strides (pads 1, 3x3) and Wp [1, 1,
 * E, M] give Y [N, OH, OW, M]. */
static ait_status inv_res_shape(ait_graph *g, const ait_node *n) {
  const ait_value *x = ait_node_in(g, n, 0), *wp = ait_node_in(g, n, 5);
  if (!x) return AIT_OK;
  if (x->rank != 4 || !wp || wp->rank != 4) {
    ait_set_out(g, n, 0, x->dtype, -1, NULL);
    return AIT_OK;
  }
  int cnt = 0;
  const int64_t *st = ait_attr_ints(n, "strides", &cnt);
  ait_dim o[4];
  memset(o, 0, sizeof o);
  o[0] = x->dims[0];
  /* a stem stage first (stem_* attributes): the block's input is its
   * output, from X in its layout and the stem's window (W is HWIO) */
  int64_t sp[2] = {x->dims[1].v, x->dims[2].v};
  const ait_value *we = ait_node_in(g, n, 1);
  const char *lay = ait_attr_str(n, "stem_x_layout", NULL);
  if (lay) {
    int a = strcmp(lay, "NCHW") ? 1 : 2;
    int64_t in[2] = {x->dims[a].v, x->dims[a + 1].v}, ss[2], pb[2];
    int64_t k[2] = {we && we->rank == 4 ? we->dims[0].v : -1,
                    we && we->rank == 4 ? we->dims[1].v : -1};
    if (!ait_inv_res_stem(n, in, k, ss, pb, sp)) sp[0] = sp[1] = -1;
  }
  for (int i = 0; i < 2; i++) {
    int64_t s = st && cnt == 2 ? st[i] : 1, in = sp[i];
    o[1 + i].v = in >= 0 && s > 0 ? (in - 1) / s + 1 : -1;
  }
  o[3] = wp->dims[3];
  ait_set_out(g, n, 0, x->dtype, 4, o);
  return AIT_OK;
}

const ait_op_def ait_ops_fused[] = {
    {AIT_FUSED_DOMAIN, "FusedConv", 1, AIT_DT_FLOATS, nn_conv_shape, ait_fused_conv_kernel},
    {AIT_FUSED_DOMAIN, "FusedConvNhwc", 1, AIT_DT_FLOATS, conv_nhwc_shape,
     ait_fused_conv_nhwc_kernel},
    {AIT_FUSED_DOMAIN, "FusedInvertedResidual", 1, AIT_DT_FLOATS, inv_res_shape,
     ait_fused_inv_res_kernel},
    {AIT_FUSED_DOMAIN, "FusedGapNhwc", 1, AIT_DT_FLOATS, gap_nhwc_shape, ait_fused_gap_nhwc_kernel},
    {AIT_FUSED_DOMAIN, "FusedPoolNhwc", 1, AIT_DT_FLOATS, pool_nhwc_shape,
     ait_fused_pool_nhwc_kernel},
    {AIT_FUSED_DOMAIN, "FusedGemm", 1, AIT_DT_FLOATS, nn_gemm_shape, ait_fused_gemm_kernel},
    {AIT_FUSED_DOMAIN, "FusedUnary", 1, AIT_DT_FLOATS, ait_shape_same, ait_fused_unary_kernel},
    {AIT_FUSED_DOMAIN, "FusedInstanceNorm", 1, AIT_DT_FLOATS, ait_shape_same,
     ait_fused_instancenorm_kernel},
    {AIT_FUSED_DOMAIN, "FusedMatMul", 1, AIT_DT_FLOATS, nn_matmul_shape, ait_fused_matmul_kernel},
    {AIT_FUSED_DOMAIN, "FusedAttention", 1, AIT_DT_FLOATS, attention_shape,
     ait_fused_attention_kernel},
};
const int ait_ops_fused_n = (int)(sizeof ait_ops_fused / sizeof ait_ops_fused[0]);

const ait_op_def *ait_fused_op(const char *name) {
  for (int i = 0; i < ait_ops_fused_n; i++)
    if (!strcmp(ait_ops_fused[i].name, name)) return &ait_ops_fused[i];
  return NULL;
}
