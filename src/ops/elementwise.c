/* Operator family 'elementwise': the registry rows. Kernels live in src/ops/elementwise_*.c. */
#include "ops/op.h"

const ait_op_def ait_ops_elementwise[] = {
    {"", "__placeholder_elementwise", 1 << 30, 0, NULL, NULL},
};
const int ait_ops_elementwise_n = (int)(sizeof ait_ops_elementwise / sizeof ait_ops_elementwise[0]);
