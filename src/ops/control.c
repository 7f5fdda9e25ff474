/* Operator family 'control': the registry rows. Kernels live in src/ops/control_*.c. */
#include "ops/op.h"

const ait_op_def ait_ops_control[] = {
    {"", "__placeholder_control", 1 << 30, 0, NULL, NULL},
};
const int ait_ops_control_n = (int)(sizeof ait_ops_control / sizeof ait_ops_control[0]);
