/* Operator family 'fused' (domain "ai.aitune"): ops that graph passes create
 * by fusing standard ones (see fused_impl.h for their semantics); reference
 * kernels live in src/ops/fused_kernels.c, activations in fused_act.c. */
#include <string.h>

#include "ops/fused_impl.h"
#include "ops/nn_impl.h"

ait_status ait_fused_conv_kernel(ait_kctx *ctx, const ait_node *node, const ait_tensor *const *in,
                                 int n_in, ait_tensor **out, int n_out);
ait_status ait_fused_gemm_kernel(ait_kctx *ctx, const ait_node *node, const ait_tensor *const *in,
                                 int n_in, ait_tensor **out, int n_out);
ait_status ait_fused_matmul_kernel(ait_kctx *ctx, const ait_node *node, const ait_tensor *const *in,
                                   int n_in, ait_tensor **out, int n_out);

const ait_op_def ait_ops_fused[] = {
    {AIT_FUSED_DOMAIN, "FusedConv", 1, AIT_DT_FLOATS, nn_conv_shape, ait_fused_conv_kernel},
    {AIT_FUSED_DOMAIN, "FusedGemm", 1, AIT_DT_FLOATS, nn_gemm_shape, ait_fused_gemm_kernel},
    {AIT_FUSED_DOMAIN, "FusedMatMul", 1, AIT_DT_FLOATS, nn_matmul_shape, ait_fused_matmul_kernel},
};
const int ait_ops_fused_n = (int)(sizeof ait_ops_fused / sizeof ait_ops_fused[0]);

const ait_op_def *ait_fused_op(const char *name) {
  for (int i = 0; i < ait_ops_fused_n; i++)
    if (!strcmp(ait_ops_fused[i].name, name)) return &ait_ops_fused[i];
  return NULL;
}
