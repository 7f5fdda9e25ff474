/* Operator family 'tensor': the registry rows. Kernels live in src/ops/tensor_*.c. */
#include "ops/op.h"

const ait_op_def ait_ops_tensor[] = {
    {"", "__placeholder_tensor", 1 << 30, 0, NULL, NULL},
};
const int ait_ops_tensor_n = (int)(sizeof ait_ops_tensor / sizeof ait_ops_tensor[0]);
