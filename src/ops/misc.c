/* Operator family 'misc': the registry rows. Kernels live in src/ops/misc_*.c. */
#include "ops/op.h"

const ait_op_def ait_ops_misc[] = {
    {"", "__placeholder_misc", 1 << 30, 0, NULL, NULL},
};
const int ait_ops_misc_n = (int)(sizeof ait_ops_misc / sizeof ait_ops_misc[0]);
