/* Operator family 'image': the registry rows. Kernels live in src/ops/image_*.c
 * (quantization, resampling, detection, Det); see image_impl.h. */
#include "ops/image_impl.h"

#define Q8 (AIT_DT_BIT(AIT_UINT8) | AIT_DT_BIT(AIT_INT8))
#define QX                                                                                         \
  (Q8 | AIT_DT_BIT(AIT_UINT16) | AIT_DT_BIT(AIT_INT16) | AIT_DT_BIT(AIT_INT32) | AIT_DT_F8 |       \
   AIT_DT_BIT(AIT_UINT4) | AIT_DT_BIT(AIT_INT4) | AIT_DT_BIT(AIT_FLOAT4E2M1) |                     \
   AIT_DT_BIT(AIT_UINT2) | AIT_DT_BIT(AIT_INT2))
#define F AIT_DT_FLOATS

const ait_op_def ait_ops_image[] = {
    {"", "QuantizeLinear", 10, F | AIT_DT_BIT(AIT_INT32), img_quantize_linear_shape,
     img_quantize_linear},
    {"", "QuantizeLinear", 13, F | AIT_DT_BIT(AIT_INT32), img_quantize_linear_shape,
     img_quantize_linear},
    {"", "DequantizeLinear", 10, QX, img_dequantize_linear_shape, img_dequantize_linear},
    {"", "DequantizeLinear", 13, QX, img_dequantize_linear_shape, img_dequantize_linear},
    {"", "DynamicQuantizeLinear", 11, AIT_DT_BIT(AIT_FLOAT32), img_dynamic_quantize_linear_shape,
     img_dynamic_quantize_linear},
    {"", "MatMulInteger", 10, Q8, img_matmul_integer_shape, img_matmul_integer},
    {"", "QLinearMatMul", 10, Q8, img_qlinear_matmul_shape, img_qlinear_matmul},
    {"", "ConvInteger", 10, Q8, img_conv_integer_shape, img_conv_integer},
    {"", "QLinearConv", 10, Q8, img_qlinear_conv_shape, img_qlinear_conv},
    {"", "Resize", 10, AIT_DT_NUMERIC | AIT_DT_BIT(AIT_BOOL), img_resize_shape, img_resize},
    {"", "Resize", 11, AIT_DT_NUMERIC | AIT_DT_BIT(AIT_BOOL), img_resize_shape, img_resize},
    {"", "Resize", 13, AIT_DT_NUMERIC | AIT_DT_BIT(AIT_BOOL), img_resize_shape, img_resize},
    {"", "Resize", 18, AIT_DT_NUMERIC | AIT_DT_BIT(AIT_BOOL), img_resize_shape, img_resize},
    {"", "Resize", 19, AIT_DT_NUMERIC | AIT_DT_BIT(AIT_BOOL), img_resize_shape, img_resize},
    {"", "Upsample", 7, AIT_DT_NUMERIC | AIT_DT_BIT(AIT_BOOL), img_upsample_shape, img_upsample},
    {"", "Upsample", 9, AIT_DT_NUMERIC | AIT_DT_BIT(AIT_BOOL), img_upsample_shape, img_upsample},
    {"", "MaxUnpool", 9, F, img_max_unpool_shape, img_max_unpool},
    {"", "MaxUnpool", 11, F, img_max_unpool_shape, img_max_unpool},
    {"", "GridSample", 16, F, img_grid_sample_shape, img_grid_sample},
    {"", "GridSample", 20, F, img_grid_sample_shape, img_grid_sample}, /* 5-D, linear/cubic */
    {"", "AffineGrid", 20, F, img_affine_grid_shape, img_affine_grid},
    {"", "RoiAlign", 10, F, img_roi_align_shape, img_roi_align},
    {"", "RoiAlign", 16, F, img_roi_align_shape, img_roi_align},
    {"", "NonMaxSuppression", 10, F, img_non_max_suppression_shape, img_non_max_suppression},
    {"", "NonMaxSuppression", 11, F, img_non_max_suppression_shape, img_non_max_suppression},
    {"", "Det", 11, F, img_det_shape, img_det},
};
const int ait_ops_image_n = (int)(sizeof ait_ops_image / sizeof ait_ops_image[0]);
