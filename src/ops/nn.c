/* Operator family 'nn': the registry rows. Kernels live in src/ops/nn_*.c. */
#include "ops/op.h"

const ait_op_def ait_ops_nn[] = {
    {"", "__placeholder_nn", 1 << 30, 0, NULL, NULL},
};
const int ait_ops_nn_n = (int)(sizeof ait_ops_nn / sizeof ait_ops_nn[0]);
