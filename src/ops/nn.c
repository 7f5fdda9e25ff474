/* Operator family 'nn': the registry rows. Kernels live in src/ops/nn_*.c.
 * One row per op from its first opset; kernels read node->opset where later
 * versions changed semantics (BatchNormalization training_mode, LpPool p). */
#include "ops/nn_impl.h"

#define F AIT_DT_FLOATS
#define MM_TYPES                                                                                   \
  (AIT_DT_FLOATS | AIT_DT_BIT(AIT_INT32) | AIT_DT_BIT(AIT_INT64) | AIT_DT_BIT(AIT_UINT32) |        \
   AIT_DT_BIT(AIT_UINT64))
#define MAXPOOL_TYPES (AIT_DT_FLOATS | AIT_DT_BIT(AIT_INT8) | AIT_DT_BIT(AIT_UINT8))

const ait_op_def ait_ops_nn[] = {
    {"", "Conv", 1, F, nn_conv_shape, nn_conv_kernel},
    {"", "ConvTranspose", 1, F, nn_convt_shape, nn_convt_kernel},
    {"", "DeformConv", 19, F, nn_deform_conv_shape, nn_deform_conv_kernel},
    {"", "DeformConv", 22, F, nn_deform_conv_shape, nn_deform_conv_kernel}, /* bf16 */
    {"", "Col2Im", 18, F, nn_col2im_shape, nn_col2im_kernel},
    {"", "MaxPool", 1, MAXPOOL_TYPES, nn_pool_shape, nn_maxpool_kernel},
    {"", "AveragePool", 1, F, nn_pool_shape, nn_avgpool_kernel},
    {"", "LpPool", 1, F, nn_pool_shape, nn_lppool_kernel},
    {"", "GlobalAveragePool", 1, F, nn_global_pool_shape, nn_global_avgpool_kernel},
    {"", "GlobalMaxPool", 1, F, nn_global_pool_shape, nn_global_maxpool_kernel},
    {"", "GlobalLpPool", 1, F, nn_global_pool_shape, nn_global_lppool_kernel},
    {"", "BatchNormalization", 1, F, nn_batchnorm_shape, nn_batchnorm_kernel},
    {"", "InstanceNormalization", 1, F, ait_shape_same, nn_instancenorm_kernel},
    {"", "LayerNormalization", 17, F, nn_layernorm_shape, nn_layernorm_kernel},
    {"", "RMSNormalization", 23, F, ait_shape_same, nn_rmsnorm_kernel},
    {"", "GroupNormalization", 18, F, ait_shape_same, nn_groupnorm_kernel},
    {"", "GroupNormalization", 21, F, ait_shape_same, nn_groupnorm_kernel},
    {"", "LpNormalization", 1, F, ait_shape_same, nn_lpnorm_kernel},
    {"", "LpNormalization", 22, F, ait_shape_same, nn_lpnorm_kernel},
    {"", "LRN", 1, F, ait_shape_same, nn_lrn_kernel},
    {"", "MeanVarianceNormalization", 9, F, ait_shape_same, nn_mvn_kernel},
    {"", "Gemm", 1, MM_TYPES, nn_gemm_shape, nn_gemm_kernel},
    {"", "MatMul", 1, MM_TYPES, nn_matmul_shape, nn_matmul_kernel},
    {"", "Einsum", 12, AIT_DT_NUMERIC, nn_einsum_shape, nn_einsum_kernel},
    /* one kernel for every version: it reads node->opset for what later
     * versions added (nonpad_kv_seqlen at 24, the sliding window at 25) */
    {"", "Attention", 23, F, nn_attention_shape, nn_attention_kernel},
    {"", "Attention", 24, F, nn_attention_shape, nn_attention_kernel},
    {"", "Attention", 25, F, nn_attention_shape, nn_attention_kernel},
    {"", "RotaryEmbedding", 23, F, ait_shape_same, nn_rope_kernel},
    {"ai.onnx.preview", "FlexAttention", 1, F, nn_flex_attention_shape, nn_flex_attention_kernel},
    {"", "LinearAttention", 27, F, nn_linear_attention_shape, nn_linear_attention_kernel},
    {"", "CausalConvWithState", 27, F, nn_causal_conv_shape, nn_causal_conv_kernel},
};
const int ait_ops_nn_n = (int)(sizeof ait_ops_nn / sizeof ait_ops_nn[0]);
