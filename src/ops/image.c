/* Operator family 'image': the registry rows. Kernels live in src/ops/image_*.c. */
#include "ops/op.h"

const ait_op_def ait_ops_image[] = {
    {"", "__placeholder_image", 1 << 30, 0, NULL, NULL},
};
const int ait_ops_image_n = (int)(sizeof ait_ops_image / sizeof ait_ops_image[0]);
