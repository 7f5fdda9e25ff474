/* Operator family 'elementwise': the registry rows. Kernels live in
 * src/ops/elementwise_*.c (see elementwise_impl.h).
 *
 * One row per op covers every opset from its `since`: the versions differ in
 * accepted dtypes or in attributes the kernels read by node->opset (legacy
 * `broadcast`/`axis` below opset 7, Clip's attribute bounds below 11). */
#include "ir/shape.h"
#include "ops/elementwise_impl.h"

#define FL AIT_DT_FLOATS
#define NUM AIT_DT_NUMERIC
#define BOOL_ AIT_DT_BIT(AIT_BOOL)
#define SNUM (AIT_DT_FLOATS | AIT_DT_SINTS)
#define ROW(name, since, dtypes, shape)                                                            \
  { "", #name, since, dtypes, shape, ait_ew_k_##name }

const ait_op_def ait_ops_elementwise[] = {
    /* unary math */
    ROW(Abs, 1, NUM, ait_shape_same),
    ROW(Acos, 7, FL, ait_shape_same),
    ROW(Acosh, 9, FL, ait_shape_same),
    ROW(Asin, 7, FL, ait_shape_same),
    ROW(Asinh, 9, FL, ait_shape_same),
    ROW(Atan, 7, FL, ait_shape_same),
    ROW(Atanh, 9, FL, ait_shape_same),
    ROW(Cos, 7, FL, ait_shape_same),
    ROW(Cosh, 9, FL, ait_shape_same),
    ROW(Sin, 7, FL, ait_shape_same),
    ROW(Sinh, 9, FL, ait_shape_same),
    ROW(Tan, 7, FL, ait_shape_same),
    ROW(Tanh, 1, FL, ait_shape_same),
    ROW(Exp, 1, FL, ait_shape_same),
    ROW(Log, 1, FL, ait_shape_same),
    ROW(Sqrt, 1, FL, ait_shape_same),
    ROW(Reciprocal, 1, FL, ait_shape_same),
    ROW(Neg, 1, SNUM, ait_shape_same),
    ROW(Ceil, 1, FL, ait_shape_same),
    ROW(Floor, 1, FL, ait_shape_same),
    ROW(Round, 11, FL, ait_shape_same),
    ROW(Sign, 9, NUM, ait_shape_same),
    ROW(Erf, 9, FL, ait_shape_same),
    /* activations */
    ROW(Sigmoid, 1, FL, ait_shape_same),
    ROW(HardSigmoid, 1, FL, ait_shape_same),
    ROW(HardSwish, 14, FL, ait_shape_same),
    ROW(Gelu, 20, FL, ait_shape_same),
    ROW(Mish, 18, FL, ait_shape_same),
    ROW(Swish, 24, FL, ait_shape_same),
    ROW(Relu, 1, SNUM, ait_shape_same),
    ROW(LeakyRelu, 1, FL, ait_shape_same),
    ROW(Elu, 1, FL, ait_shape_same),
    ROW(Selu, 1, FL, ait_shape_same),
    ROW(Celu, 12, FL, ait_shape_same),
    ROW(Softplus, 1, FL, ait_shape_same),
    ROW(Softsign, 1, FL, ait_shape_same),
    ROW(ThresholdedRelu, 10, FL, ait_shape_same),
    ROW(Shrink, 9, NUM, ait_shape_same),
    ROW(Clip, 1, NUM, ait_shape_same),
    ROW(PRelu, 1, NUM, ait_shape_same),
    /* predicates */
    ROW(IsInf, 10, FL, ait_ew_shape_bool),
    ROW(IsNaN, 9, FL, ait_ew_shape_bool),
    ROW(Not, 1, BOOL_, ait_shape_same),
    /* binary, broadcasting */
    ROW(Add, 1, NUM, ait_ew_shape_binary),
    ROW(Sub, 1, NUM, ait_ew_shape_binary),
    ROW(Mul, 1, NUM, ait_ew_shape_binary),
    ROW(Div, 1, NUM, ait_ew_shape_binary),
    ROW(Pow, 1, NUM, ait_ew_shape_binary),
    ROW(Mod, 10, NUM, ait_ew_shape_binary),
    ROW(BitShift, 11, AIT_DT_INTS, ait_ew_shape_binary), /* signed types from opset 28 */
    ROW(BitwiseAnd, 18, AIT_DT_INTS, ait_ew_shape_binary),
    ROW(BitwiseOr, 18, AIT_DT_INTS, ait_ew_shape_binary),
    ROW(BitwiseXor, 18, AIT_DT_INTS, ait_ew_shape_binary),
    ROW(BitwiseNot, 18, AIT_DT_INTS, ait_shape_same),
    ROW(SwiGLU, 28, FL, ait_shape_same),
    ROW(And, 1, BOOL_, ait_ew_shape_compare),
    ROW(Or, 1, BOOL_, ait_ew_shape_compare),
    ROW(Xor, 1, BOOL_, ait_ew_shape_compare),
    ROW(Equal, 1, NUM | BOOL_ | AIT_DT_BIT(AIT_STRING), ait_ew_shape_compare), /* strings: 19 */
    ROW(Greater, 1, NUM, ait_ew_shape_compare),
    ROW(GreaterOrEqual, 12, NUM, ait_ew_shape_compare),
    ROW(Less, 1, NUM, ait_ew_shape_compare),
    ROW(LessOrEqual, 12, NUM, ait_ew_shape_compare),
    /* variadic, broadcasting */
    ROW(Max, 1, NUM, ait_shape_broadcast_fn),
    ROW(Min, 1, NUM, ait_shape_broadcast_fn),
    ROW(Sum, 1, NUM, ait_shape_broadcast_fn),
    ROW(Mean, 1, FL, ait_shape_broadcast_fn),
    ROW(Where, 9, BOOL_, ait_ew_shape_where),
    /* conversions */
    ROW(Cast, 1, AIT_DT_ALL, ait_ew_shape_cast),
    ROW(CastLike, 15, AIT_DT_ALL, ait_ew_shape_castlike),
};
const int ait_ops_elementwise_n = (int)(sizeof ait_ops_elementwise / sizeof ait_ops_elementwise[0]);
