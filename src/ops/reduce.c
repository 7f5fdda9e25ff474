/* Operator family 'reduce': the registry rows. Kernels live in src/ops/reduce_*.c. */
#include "ops/op.h"

const ait_op_def ait_ops_reduce[] = {
    {"", "__placeholder_reduce", 1 << 30, 0, NULL, NULL},
};
const int ait_ops_reduce_n = (int)(sizeof ait_ops_reduce / sizeof ait_ops_reduce[0]);
