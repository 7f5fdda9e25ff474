/* Reference kernels of the fused ops: the standard kernel of the base op
 * (Conv, Gemm, MatMul), then alpha, the broadcast additions (through the
 * reference Add) and the activation, each exactly as the unfused chain
 * computes them. */
#include <stdio.h>
#include <string.h>

#include "ops/fused_impl.h"
#include "ops/nn_impl.h"

/* A standard node to hand to a reference kernel in place of the fused one:
 * same name (errors name the user's node), no attributes. */
static ait_node plain_node(const ait_node *fused, const char *op, int opset) {
  ait_node n;
  memset(&n, 0, sizeof n);
  n.name = fused->name;
  n.op_type = (char *)op;
  n.domain = (char *)"";
  n.opset = opset;
  return n;
}

/* *y = *y + z with numpy broadcasting (the result may be a new tensor). */
static ait_status add_into(const ait_node *node, ait_tensor **y, const ait_tensor *z) {
  const ait_op_def *add = ait_op_lookup("", "Add", 14, NULL);
  if (!add || !add->kernel) return ait_err(AIT_E_INTERNAL, "no reference Add kernel");
  ait_node an = plain_node(node, "Add", 14);
  an.n_in = 2;
  an.n_out = 1;
  int ids[3] = {0, 1, 2};
  an.in = ids;
  an.out = ids + 2;
  const ait_tensor *in[2] = {*y, z};
  ait_tensor *sum = NULL;
  AIT_TRY(add->kernel(NULL, &an, in, 2, &sum, 1));
  ait_tensor_free(*y);
  *y = sum;
  return AIT_OK;
}

/* y = act(alpha * y), in place, for any float dtype. */
static ait_status scale_act(ait_tensor *y, float alpha, const ait_act *act) {
  int64_t n = ait_tensor_numel(y);
  if (y->dtype == AIT_FLOAT32) {
    float *v = y->data;
    if (alpha != 1.0f)
      for (int64_t i = 0; i < n; i++)
        v[i] *= alpha;
    ait_act_apply_f32(act, v, n);
    return AIT_OK;
  }
  const ait_dtype_traits *tr = ait_dtype_traits_of(y->dtype);
  if (!tr || !tr->is_float)
    return ait_err(AIT_E_DTYPE, "fused ops take float tensors, got %s", ait_dtype_name(y->dtype));
  for (int64_t i = 0; i < n; i++) {
    double v = ait_load_f64(tr, y->data, i);
    if (alpha != 1.0f) v *= alpha;
    if (act->kind != AIT_ACT_NONE) v = ait_act_f32(act, (float)v);
    ait_store_f64(tr, y->data, i, v);
  }
  return AIT_OK;
}

/* Run base kernel `k` on in[0..n_base), then alpha, the additions in
 * in[n_base..n_in) (absent ones skipped) and the activation. */
static ait_status run_fused(ait_kctx *ctx, const ait_node *node, ait_kernel_fn k,
                            const ait_node *base, const ait_tensor *const *in, int n_in, int n_base,
                            float alpha, ait_tensor **out) {
  ait_act act;
  AIT_TRY(ait_act_parse(node, &act));
  ait_tensor *y = NULL;
  AIT_TRY(k(ctx, base, in, n_in < n_base ? n_in : n_base, &y, 1));
  ait_status st = AIT_OK;
  if (alpha != 1.0f) st = scale_act(y, alpha, &(ait_act){.kind = AIT_ACT_NONE});
  for (int i = n_base; i < n_in && st == AIT_OK; i++)
    if (in[i]) st = add_into(node, &y, in[i]);
  if (st == AIT_OK) st = scale_act(y, 1.0f, &act);
  if (st != AIT_OK) {
    ait_tensor_free(y);
    return st;
  }
  out[0] = y;
  return AIT_OK;
}

ait_status ait_fused_conv_kernel(ait_kctx *ctx, const ait_node *node, const ait_tensor *const *in,
                                 int n_in, ait_tensor **out, int n_out) {
  /* nn_conv_kernel reads the Conv attributes, which FusedConv keeps */
  return run_fused(ctx, node, nn_conv_kernel, node, in, n_in, 3, 1.0f, out);
}

ait_status ait_fused_gemm_kernel(ait_kctx *ctx, const ait_node *node, const ait_tensor *const *in,
                                 int n_in, ait_tensor **out, int n_out) {
  return run_fused(ctx, node, nn_gemm_kernel, node, in, n_in, 3, 1.0f, out);
}

ait_status ait_fused_matmul_kernel(ait_kctx *ctx, const ait_node *node, const ait_tensor *const *in,
                                   int n_in, ait_tensor **out, int n_out) {
  ait_node mm = plain_node(node, "MatMul", 13);
  return run_fused(ctx, node, nn_matmul_kernel, &mm, in, n_in, 2,
                   ait_attr_float(node, "alpha", 1.0f), out);
}

ait_status ait_fused_unary_kernel(ait_kctx *ctx, const ait_node *node, const ait_tensor *const *in,
                                  int n_in, ait_tensor **out, int n_out) {
  ait_act act;
  AIT_TRY(ait_act_parse(node, &act));
  if (n_in < 1 || !in[0]) return ait_err(AIT_E_INVALID_ARG, "FusedUnary: missing input");
  ait_tensor *y = ait_tensor_clone(in[0]);
  if (!y) return ait_err(AIT_E_NOMEM, "FusedUnary: out of memory");
  ait_status st = scale_act(y, 1.0f, &act);
  if (st != AIT_OK) {
    ait_tensor_free(y);
    return st;
  }
  out[0] = y;
  return AIT_OK;
}

ait_status ait_fused_instancenorm_kernel(ait_kctx *ctx, const ait_node *node,
                                         const ait_tensor *const *in, int n_in, ait_tensor **out,
                                         int n_out) {
  /* nn_instancenorm_kernel reads epsilon, which FusedInstanceNorm keeps */
  return run_fused(ctx, node, nn_instancenorm_kernel, node, in, n_in, 3, 1.0f, out);
}

/* The standard op `op` (reference kernel at `opset`) on in[0..n_in), with
 * at most one attribute. */
static ait_status run_std(const ait_node *fused, const char *op, int opset, const ait_attr *attr,
                          const ait_tensor *const *in, int n_in, ait_tensor **out) {
  const ait_op_def *def = ait_op_lookup("", op, opset, NULL);
  if (!def || !def->kernel) return ait_err(AIT_E_INTERNAL, "no reference %s kernel", op);
  ait_node n = plain_node(fused, op, opset);
  int ids[4] = {0, 1, 2, 3};
  n.n_in = n_in;
  n.n_out = 1;
  n.in = ids;
  n.out = ids + 3;
  n.n_attrs = attr ? 1 : 0;
  n.attrs = (ait_attr *)attr;
  return def->kernel(NULL, &n, in, n_in, out, 1);
}

/* *y = Transpose(x, perm attribute `name` of node) when the node has it,
 * else *y stays NULL. */
static ait_status transpose_by(const ait_node *node, const char *name, const ait_tensor *x,
                               ait_tensor **y) {
  int cnt = 0;
  const int64_t *perm = ait_attr_ints(node, name, &cnt);
  if (!perm) return AIT_OK;
  ait_attr a;
  memset(&a, 0, sizeof a);
  a.name = (char *)"perm";
  a.type = AIT_ATTR_INTS;
  a.n = cnt;
  a.ints = (int64_t *)perm;
  const ait_tensor *in[1] = {x};
  return run_std(node, "Transpose", 13, &a, in, 1, y);
}

ait_status ait_fused_attention_kernel(ait_kctx *ctx, const ait_node *node,
                                      const ait_tensor *const *in, int n_in, ait_tensor **out,
                                      int n_out) {
  if (n_in < 3 || !in[0] || !in[1] || !in[2])
    return ait_err(AIT_E_INVALID_ARG, "FusedAttention takes Q, K and V");
  static const char *const perms[3] = {"q_perm", "k_perm", "v_perm"};
  ait_tensor *qkv[3] = {NULL, NULL, NULL}, *s = NULL, *p = NULL, *y = NULL, *yt = NULL;
  const ait_tensor *x[3];
  ait_status st = AIT_OK;
  for (int i = 0; i < 3 && st == AIT_OK; i++) {
    st = transpose_by(node, perms[i], in[i], &qkv[i]);
    x[i] = qkv[i] ? qkv[i] : in[i];
  }
  /* alpha and the mask exactly as FusedMatMul applies them */
  if (st == AIT_OK) {
    const ait_tensor *mm[4] = {x[0], x[1], NULL, n_in > 3 ? in[3] : NULL};
    st = ait_fused_matmul_kernel(ctx, node, mm, 4, &s, 1);
  }
  if (st == AIT_OK) {
    ait_attr a;
    memset(&a, 0, sizeof a);
    a.name = (char *)"axis";
    a.type = AIT_ATTR_INT;
    a.i = -1;
    const ait_tensor *sin[1] = {s};
    st = run_std(node, "Softmax", 13, &a, sin, 1, &p);
  }
  if (st == AIT_OK) {
    const ait_tensor *pin[2] = {p, x[2]};
    st = run_std(node, "MatMul", 13, NULL, pin, 2, &y);
  }
  if (st == AIT_OK) st = transpose_by(node, "out_perm", y, &yt);
  if (yt) {
    ait_tensor_free(y);
    y = yt;
  }
  for (int i = 0; i < 3; i++)
    ait_tensor_free(qkv[i]);
  ait_tensor_free(s);
  ait_tensor_free(p);
  if (st != AIT_OK) {
    ait_tensor_free(y);
    return st;
  }
  out[0] = y;
  return AIT_OK;
}

/* *y = Transpose(x, perm) (rank 4). */
static ait_status transpose4(const ait_node *node, const ait_tensor *x, const int64_t *perm,
                             ait_tensor **y) {
  ait_attr a;
  memset(&a, 0, sizeof a);
  a.name = (char *)"perm";
  a.type = AIT_ATTR_INTS;
  a.n = 4;
  a.ints = (int64_t *)perm;
  const ait_tensor *in[1] = {x};
  return run_std(node, "Transpose", 13, &a, in, 1, y);
}

ait_status ait_fused_conv_nhwc_kernel(ait_kctx *ctx, const ait_node *node,
                                      const ait_tensor *const *in, int n_in, ait_tensor **out,
                                      int n_out) {
  static const int64_t to_nchw[4] = {0, 3, 1, 2}, to_oihw[4] = {3, 2, 0, 1};
  static const int64_t to_nhwc[4] = {0, 2, 3, 1};
  if (n_in < 2 || !in[0] || !in[1] || in[0]->rank != 4 || in[1]->rank != 4)
    return ait_err(AIT_E_INVALID_ARG, "FusedConvNhwc takes 4-D X and W");
  if (n_in > 3 && in[3] && in[3]->rank != 4)
    return ait_err(AIT_E_INVALID_ARG, "FusedConvNhwc: Z must be 4-D");
  bool nchw = !strcmp(ait_attr_str(node, "x_layout", "NHWC"), "NCHW");
  ait_tensor *x = NULL, *w = NULL, *z = NULL, *y = NULL, *xs = NULL;
  if (n_in > 4 && in[4]) { /* X scaled per image and channel first (a squeeze-excite gate) */
    const ait_tensor *X = in[0], *S = in[4];
    int64_t C = X->dims[3], P = X->dims[1] * X->dims[2];
    if (nchw || X->dtype != AIT_FLOAT32 || S->dtype != AIT_FLOAT32 ||
        ait_tensor_numel(S) != X->dims[0] * C)
      return ait_err(AIT_E_INVALID_ARG, "FusedConvNhwc: the scale must be float [N, 1, 1, C]");
    xs = ait_tensor_clone(X);
    if (!xs) return ait_err(AIT_E_NOMEM, "out of memory in FusedConvNhwc");
    float *d = xs->data;
    const float *s = S->data;
    for (int64_t n = 0; n < X->dims[0]; n++)
      for (int64_t p = 0; p < P; p++)
        for (int64_t c = 0; c < C; c++)
          d[(n * P + p) * C + c] *= s[n * C + c];
  }
  ait_status st = nchw ? AIT_OK : transpose4(node, xs ? xs : in[0], to_nchw, &x);
  ait_tensor_free(xs);
  if (st == AIT_OK) st = transpose4(node, in[1], to_oihw, &w);
  if (st == AIT_OK && n_in > 3 && in[3]) st = transpose4(node, in[3], to_nchw, &z);
  if (st == AIT_OK) {
    const ait_tensor *cin[4] = {nchw ? in[0] : x, w, n_in > 2 ? in[2] : NULL, z};
    st = ait_fused_conv_kernel(ctx, node, cin, n_in < 4 ? n_in : 4, &y, 1);
  }
  ait_tensor_free(x);
  ait_tensor_free(w);
  ait_tensor_free(z);
  if (st == AIT_OK) st = transpose4(node, y, to_nhwc, &out[0]);
  ait_tensor_free(y);
  return st;
}

/* One stage of a FusedInvertedResidual as a FusedConvNhwc: the block's
 * <prefix>activation(_params), and for the depthwise stage its group, pads
 * of half its window (K x K: K / 2) and the block's strides; for a stem stage (stem) the
 * stem_strides, stem_pads and stem_x_layout the layout pass wrote. */
static ait_status inv_res_stage(ait_kctx *ctx, const ait_node *node, const char *prefix,
                                int64_t group, bool stem, const ait_tensor *const *in4,
                                ait_tensor **y) {
  /* the depthwise window's half on each side (K x K, K odd: 1 for 3x3) */
  int64_t ph = in4[1] && in4[1]->rank == 4 ? in4[1]->dims[0] / 2 : 1;
  int64_t pads[4] = {ph, ph, ph, ph};
  char key[64], keyp[64];
  snprintf(key, sizeof key, "%sactivation", prefix);
  snprintf(keyp, sizeof keyp, "%sactivation_params", prefix);
  ait_attr a[7];
  memset(a, 0, sizeof a);
  int na = 0, cnt = 0, scnt = 0;
  const char *act = ait_attr_str(node, key, NULL);
  snprintf(keyp, sizeof keyp, "%sepilogue", prefix); /* an epilogue program's steps */
  const char *prog = ait_attr_str(node, keyp, NULL);
  if (prog) a[na].name = (char *)"epilogue", a[na].type = AIT_ATTR_STRING, a[na++].s = (char *)prog;
  snprintf(keyp, sizeof keyp, "%sactivation_params", prefix);
  const float *params = ait_attr_floats(node, keyp, &cnt);
  const int64_t *strides = ait_attr_ints(node, "strides", &scnt);
  if (act) a[na].name = (char *)"activation", a[na].type = AIT_ATTR_STRING, a[na++].s = (char *)act;
  if (params)
    a[na].name = (char *)"activation_params", a[na].type = AIT_ATTR_FLOATS, a[na].n = cnt,
    a[na++].floats = (float *)params;
  if (stem) {
    int pcnt = 0;
    const int64_t *st = ait_attr_ints(node, "stem_strides", &scnt);
    const int64_t *pd = ait_attr_ints(node, "stem_pads", &pcnt);
    if (!st || scnt != 2 || !pd || pcnt != 4)
      return ait_err(AIT_E_INVALID_ARG, "FusedInvertedResidual: a stem needs stem_strides (2) and "
                                        "stem_pads (4)");
    a[na].name = (char *)"strides", a[na].type = AIT_ATTR_INTS, a[na].n = 2,
    a[na++].ints = (int64_t *)st;
    a[na].name = (char *)"pads", a[na].type = AIT_ATTR_INTS, a[na].n = 4,
    a[na++].ints = (int64_t *)pd;
    a[na].name = (char *)"x_layout", a[na].type = AIT_ATTR_STRING,
    a[na++].s = (char *)ait_attr_str(node, "stem_x_layout", "NHWC");
  }
  if (group > 1) {
    a[na].name = (char *)"group", a[na].type = AIT_ATTR_INT, a[na++].i = group;
    a[na].name = (char *)"pads", a[na].type = AIT_ATTR_INTS, a[na].n = 4, a[na++].ints = pads;
    if (strides)
      a[na].name = (char *)"strides", a[na].type = AIT_ATTR_INTS, a[na].n = scnt,
      a[na++].ints = (int64_t *)strides;
  }
  ait_node n = plain_node(node, "FusedConvNhwc", 1);
  int ids[5] = {0, 1, 2, 3, 4};
  n.n_in = 4;
  n.n_out = 1;
  n.in = ids;
  n.out = ids + 4;
  n.n_attrs = na;
  n.attrs = a;
  return ait_fused_conv_nhwc_kernel(ctx, &n, in4, 4, y, 1);
}

ait_status ait_fused_inv_res_kernel(ait_kctx *ctx, const ait_node *node,
                                    const ait_tensor *const *in, int n_in, ait_tensor **out,
                                    int n_out) {
  if (n_in < 6 || !in[0] || !in[3] || !in[5] || in[3]->rank != 4)
    return ait_err(AIT_E_INVALID_ARG, "FusedInvertedResidual takes X, Wd and Wp");
  ait_tensor *e = NULL, *d = NULL;
  ait_status st = AIT_OK;
  if (in[1]) {
    const ait_tensor *ein[4] = {in[0], in[1], in[2], NULL};
    bool stem = ait_attr_str(node, "stem_x_layout", NULL) != NULL;
    st = inv_res_stage(ctx, node, "expand_", 1, stem, ein, &e);
  }
  if (st == AIT_OK) {
    const ait_tensor *din[4] = {e ? e : in[0], in[3], in[4], NULL};
    st = inv_res_stage(ctx, node, "dw_", in[3]->dims[3], false, din, &d);
  }
  if (st == AIT_OK) {
    const ait_tensor *pin[4] = {d, in[5], n_in > 6 ? in[6] : NULL, n_in > 7 ? in[7] : NULL};
    st = inv_res_stage(ctx, node, "", 1, false, pin, &out[0]);
  }
  ait_tensor_free(e);
  ait_tensor_free(d);
  return st;
}

ait_status ait_fused_gap_nhwc_kernel(ait_kctx *ctx, const ait_node *node,
                                     const ait_tensor *const *in, int n_in, ait_tensor **out,
                                     int n_out) {
  static const int64_t to_nchw[4] = {0, 3, 1, 2};
  if (n_in < 1 || !in[0] || in[0]->rank != 4)
    return ait_err(AIT_E_INVALID_ARG, "FusedGapNhwc takes a 4-D X");
  ait_tensor *x = NULL;
  AIT_TRY(transpose4(node, in[0], to_nchw, &x));
  const ait_tensor *gin[1] = {x};
  ait_status st = run_std(node, "GlobalAveragePool", 1, NULL, gin, 1, &out[0]);
  ait_tensor_free(x);
  return st;
}

/* The standard pooling node a FusedPoolNhwc stands for: its attributes, the
 * op and opset of its `pool` and `pool_opset` attributes (false when they
 * are missing or name another op). */
bool ait_fused_pool_node(const ait_node *node, ait_node *pool) {
  const char *op = ait_attr_str(node, "pool", "");
  if (strcmp(op, "MaxPool") && strcmp(op, "AveragePool")) return false;
  int64_t opset = ait_attr_int(node, "pool_opset", 0);
  if (opset < 1 || opset > 1000) return false;
  *pool = *node;
  pool->op_type = (char *)(strcmp(op, "MaxPool") ? "AveragePool" : "MaxPool");
  pool->domain = (char *)"";
  pool->opset = (int)opset;
  pool->n_out = 1;
  return true;
}

ait_status ait_fused_pool_nhwc_kernel(ait_kctx *ctx, const ait_node *node,
                                      const ait_tensor *const *in, int n_in, ait_tensor **out,
                                      int n_out) {
  static const int64_t to_nchw[4] = {0, 3, 1, 2}, to_nhwc[4] = {0, 2, 3, 1};
  ait_node pn;
  if (n_in < 1 || !in[0] || in[0]->rank != 4)
    return ait_err(AIT_E_INVALID_ARG, "FusedPoolNhwc takes a 4-D X");
  if (!ait_fused_pool_node(node, &pn))
    return ait_err(AIT_E_INVALID_ARG, "FusedPoolNhwc: pool must be MaxPool or AveragePool, with "
                                      "pool_opset");
  ait_tensor *x = NULL, *y = NULL;
  AIT_TRY(transpose4(node, in[0], to_nchw, &x));
  const ait_tensor *pin[1] = {x};
  ait_status st = (strcmp(pn.op_type, "MaxPool") ? nn_avgpool_kernel
                                                 : nn_maxpool_kernel)(ctx, &pn, pin, 1, &y, 1);
  ait_tensor_free(x);
  if (st == AIT_OK) st = transpose4(node, y, to_nhwc, &out[0]);
  ait_tensor_free(y);
  return st;
}
