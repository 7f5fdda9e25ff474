/* Operator family 'tensor' (data movement and shape ops): the registry rows.
 * Kernels live in src/ops/tensor_*.c; one kernel serves all versions of an
 * op and reads node->opset where the signature changed, but every version
 * whose semantics differ has its own row so the table documents them. */
#include "ops/tensor_impl.h"

#define ALL 0u
#define NUM AIT_DT_NUMERIC
#define FLT AIT_DT_FLOATS

const ait_op_def ait_ops_tensor[] = {
    /* shapes and copies */
    {"", "Reshape", 1, ALL, tn_reshape_shape, tn_reshape},  /* shape attribute */
    {"", "Reshape", 5, ALL, tn_reshape_shape, tn_reshape},  /* shape input */
    {"", "Reshape", 14, ALL, tn_reshape_shape, tn_reshape}, /* allowzero */
    {"", "Shape", 1, ALL, tn_shape_shape, tn_shape},
    {"", "Shape", 15, ALL, tn_shape_shape, tn_shape}, /* start, end */
    {"", "Size", 1, ALL, tn_size_shape, tn_size},
    {"", "Flatten", 1, ALL, tn_flatten_shape, tn_flatten},
    {"", "Squeeze", 1, ALL, tn_squeeze_shape, tn_squeeze},  /* axes attribute */
    {"", "Squeeze", 13, ALL, tn_squeeze_shape, tn_squeeze}, /* axes input */
    {"", "Unsqueeze", 1, ALL, tn_unsqueeze_shape, tn_unsqueeze},
    {"", "Unsqueeze", 13, ALL, tn_unsqueeze_shape, tn_unsqueeze},
    {"", "Identity", 1, ALL, tn_identity_shape, tn_identity},
    {"", "BitCast", 26, ALL, tn_bitcast_shape, tn_bitcast},
    {"", "Dropout", 1, FLT, tn_dropout_shape, tn_dropout},  /* mask of T */
    {"", "Dropout", 10, FLT, tn_dropout_shape, tn_dropout}, /* bool mask */
    {"", "Dropout", 12, FLT, tn_dropout_shape, tn_dropout}, /* ratio, training_mode inputs */
    /* generators */
    {"", "ConstantOfShape", 9, ALL, tn_constant_of_shape_shape, tn_constant_of_shape},
    {"", "EyeLike", 9, ALL, tn_eye_like_shape, tn_eye_like},
    {"", "Range", 11, NUM, tn_range_shape, tn_range},
    /* layout */
    {"", "Transpose", 1, ALL, tn_transpose_shape, tn_transpose},
    {"", "Concat", 1, ALL, tn_concat_shape, tn_concat},
    {"", "Concat", 4, ALL, tn_concat_shape, tn_concat}, /* axis required */
    {"", "Split", 2, ALL, tn_split_shape, tn_split},    /* split attribute */
    {"", "Split", 13, ALL, tn_split_shape, tn_split},   /* split input */
    {"", "Split", 18, ALL, tn_split_shape, tn_split},   /* num_outputs */
    {"", "Slice", 1, ALL, tn_slice_shape, tn_slice},    /* attributes */
    {"", "Slice", 10, ALL, tn_slice_shape, tn_slice},   /* inputs, steps */
    {"", "Expand", 8, ALL, tn_expand_shape, tn_expand},
    {"", "Tile", 6, ALL, tn_tile_shape, tn_tile},
    {"", "Pad", 1, ALL, tn_pad_shape, tn_pad},  /* paddings attribute */
    {"", "Pad", 2, ALL, tn_pad_shape, tn_pad},  /* pads, value attributes */
    {"", "Pad", 11, ALL, tn_pad_shape, tn_pad}, /* pads, constant_value inputs */
    {"", "Pad", 18, ALL, tn_pad_shape, tn_pad}, /* axes input */
    {"", "CenterCropPad", 18, ALL, tn_center_crop_pad_shape, tn_center_crop_pad},
    {"", "TensorScatter", 24, ALL, tn_identity_shape, tn_tensor_scatter},
    {"", "DepthToSpace", 1, ALL, tn_depth_to_space_shape, tn_depth_to_space},
    {"", "DepthToSpace", 11, ALL, tn_depth_to_space_shape, tn_depth_to_space}, /* mode */
    {"", "SpaceToDepth", 1, ALL, tn_space_to_depth_shape, tn_space_to_depth},
    {"", "SpaceToDepth", 28, ALL, tn_space_to_depth_shape, tn_space_to_depth}, /* mode */
    {"", "Trilu", 14, ALL, tn_identity_shape, tn_trilu},
    {"", "ReverseSequence", 10, ALL, tn_identity_shape, tn_reverse_sequence},
    /* indexing */
    {"", "Gather", 1, ALL, tn_gather_shape, tn_gather},
    {"", "GatherElements", 11, ALL, tn_gather_elements_shape, tn_gather_elements},
    {"", "GatherND", 11, ALL, tn_gather_nd_shape, tn_gather_nd},
    {"", "GatherND", 12, ALL, tn_gather_nd_shape, tn_gather_nd}, /* batch_dims */
    {"", "Scatter", 9, ALL, tn_identity_shape, tn_scatter_elements},
    {"", "ScatterElements", 11, ALL, tn_identity_shape, tn_scatter_elements},
    {"", "ScatterElements", 16, ALL, tn_identity_shape, tn_scatter_elements}, /* add, mul */
    {"", "ScatterElements", 18, ALL, tn_identity_shape, tn_scatter_elements}, /* max, min */
    {"", "ScatterND", 11, ALL, tn_identity_shape, tn_scatter_nd},
    {"", "ScatterND", 16, ALL, tn_identity_shape, tn_scatter_nd},
    {"", "ScatterND", 18, ALL, tn_identity_shape, tn_scatter_nd},
    {"", "OneHot", 9, NUM, tn_onehot_shape, tn_onehot},
    {"", "Compress", 9, ALL, tn_compress_shape, tn_compress},
    {"", "NonZero", 9, ALL, tn_nonzero_shape, tn_nonzero},
    /* ordering */
    {"", "Unique", 11, ALL, tn_unique_shape, tn_unique},
    {"", "TopK", 1, NUM, tn_topk_shape, tn_topk},  /* k attribute */
    {"", "TopK", 10, NUM, tn_topk_shape, tn_topk}, /* K input */
    {"", "TopK", 11, NUM, tn_topk_shape, tn_topk}, /* largest, sorted */
    {"", "CumSum", 11, NUM, tn_identity_shape, tn_cumsum},
    {"", "CumProd", 26, NUM, tn_identity_shape, tn_cumprod},
};
const int ait_ops_tensor_n = (int)(sizeof ait_ops_tensor / sizeof ait_ops_tensor[0]);
