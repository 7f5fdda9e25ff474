/* Operator family 'fused' (domain "ai.aitune"): ops that graph passes create
 * by fusing standard ones; reference kernels live in src/ops/fused_*.c. */
#include "ops/op.h"

const ait_op_def ait_ops_fused[] = {
    {"ai.aitune", "__placeholder_fused", 1 << 30, 0, NULL, NULL},
};
const int ait_ops_fused_n = (int)(sizeof ait_ops_fused / sizeof ait_ops_fused[0]);
