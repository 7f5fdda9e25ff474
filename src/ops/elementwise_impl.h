/* Private interface of the elementwise operator family: the broadcasting
 * iterator shared by every multi-input kernel, the shape functions, and the
 * kernels the registry table (src/ops/elementwise.c) points at.
 *
 * Files: elementwise_iter.c (iterator, operand shapes, shape functions),
 * elementwise_unary.c (table-driven unary math and activations),
 * elementwise_binary.c (table-driven binary ops, variadic ops, Where, PRelu),
 * elementwise_cast.c (Cast, CastLike). */
#ifndef AIT_OPS_ELEMENTWISE_IMPL_H
#define AIT_OPS_ELEMENTWISE_IMPL_H

#include "ops/op.h"

/* ---- broadcasting ------------------------------------------------------ */

/* A shape as plain data: an operand may be seen with a shape other than its
 * tensor's (legacy opset < 7 broadcasting pads it with 1s). */
typedef struct ait_ew_shape {
  int rank;
  int64_t dims[AIT_MAX_RANK];
} ait_ew_shape;

/* Most operands one iteration visits (Where has 3 inputs). */
#define AIT_EW_MAX_OPS 4

/* Called once per row of the output. A row is n consecutive output elements
 * starting at element `o`; operand k's first element of the row is at
 * element offset off[k] and advances by step[k] elements (0 when broadcast)
 * along the row. */
typedef void (*ait_ew_row_fn)(void *ctx, int64_t n, int64_t o, const int64_t *off,
                              const int64_t *step);

static inline ait_ew_shape ait_ew_shape_of(const ait_tensor *t) {
  ait_ew_shape s = {t->rank, {0}};
  for (int i = 0; i < t->rank; i++)
    s.dims[i] = t->dims[i];
  return s;
}

/* Numpy broadcast of n shapes into *out; AIT_E_SHAPE naming them on a clash. */
ait_status ait_ew_broadcast_shape(int n, const ait_ew_shape *in, ait_ew_shape *out);

/* Visit every element of a dense output of shape *out, reading operands of
 * shapes in[0..n_in) broadcast to it. Dimensions of size 1 are dropped and
 * dimensions contiguous in every operand are merged, so equal shapes and
 * scalar operands reach fn as one row. Nothing happens for an empty output. */
void ait_ew_foreach(const ait_ew_shape *out, int n_in, const ait_ew_shape *in, ait_ew_row_fn fn,
                    void *ctx);

/* Shapes of the two operands of a binary node as its opset sees them: below
 * opset 7 the `broadcast`/`axis` attributes align B inside A (or require
 * equal shapes); from opset 7 numpy broadcasting applies. Also gives the
 * output shape. */
ait_status ait_ew_binary_shapes(const ait_node *node, const ait_tensor *a, const ait_tensor *b,
                                ait_ew_shape s[2], ait_ew_shape *out);

/* ---- shape functions --------------------------------------------------- */

ait_status ait_ew_shape_binary(ait_graph *g, const ait_node *n);  /* dtype of input 0 */
ait_status ait_ew_shape_compare(ait_graph *g, const ait_node *n); /* dtype bool */
ait_status ait_ew_shape_bool(ait_graph *g, const ait_node *n);    /* shape of in 0, bool */
ait_status ait_ew_shape_where(ait_graph *g, const ait_node *n);
ait_status ait_ew_shape_cast(ait_graph *g, const ait_node *n);
ait_status ait_ew_shape_castlike(ait_graph *g, const ait_node *n);

/* ---- kernels ----------------------------------------------------------- */

/* Table-driven unary ops: one kernel per name, all sharing one loop. */
// clang-format off
#define AIT_EW_UNARY_OPS(X)                                                              \
  X(Abs) X(Acos) X(Acosh) X(Asin) X(Asinh) X(Atan) X(Atanh) X(Cos) X(Cosh) X(Sin)       \
  X(Sinh) X(Tan) X(Tanh) X(Exp) X(Log) X(Sqrt) X(Reciprocal) X(Neg) X(Ceil) X(Floor)    \
  X(Round) X(Sign) X(Erf) X(Sigmoid) X(HardSigmoid) X(HardSwish) X(Relu) X(LeakyRelu)   \
  X(Elu) X(Selu) X(Celu) X(Softplus) X(Softsign) X(ThresholdedRelu) X(Shrink) X(Gelu)    \
  X(Mish) X(Swish) X(BitwiseNot)

/* Table-driven binary ops (two inputs, broadcasting). */
#define AIT_EW_BINARY_OPS(X)                                                             \
  X(Add) X(Sub) X(Mul) X(Div) X(Mod) X(BitShift) X(And) X(Or) X(Xor) X(Equal)           \
  X(Greater) X(GreaterOrEqual) X(Less) X(LessOrEqual) X(PRelu) X(BitwiseAnd)          \
  X(BitwiseOr) X(BitwiseXor) X(SwiGLU)
// clang-format on

/* Variadic ops (one or more inputs, broadcasting). */
#define AIT_EW_VARIADIC_OPS(X) X(Max) X(Min) X(Sum) X(Mean)

/* Kernels written one by one. */
#define AIT_EW_OTHER_OPS(X) X(Clip) X(IsInf) X(IsNaN) X(Not) X(Pow) X(Where) X(Cast) X(CastLike)

#define AIT_EW_DECLARE(name)                                                                       \
  ait_status ait_ew_k_##name(ait_kctx *ctx, const ait_node *node, const ait_tensor *const *in,     \
                             int n_in, ait_tensor **out, int n_out);
AIT_EW_UNARY_OPS(AIT_EW_DECLARE)
AIT_EW_BINARY_OPS(AIT_EW_DECLARE)
AIT_EW_VARIADIC_OPS(AIT_EW_DECLARE)
AIT_EW_OTHER_OPS(AIT_EW_DECLARE)
#undef AIT_EW_DECLARE

/* Kernel helpers. */
/* AIT_E_INVALID_ARG unless input i is present and a dense tensor. */
ait_status ait_ew_need(const ait_tensor *const *in, int n_in, int i, const char *what);
/* Cast's target dtype from attribute `to`: a dtype code (opset >= 6) or a
 * type name such as "FLOAT" (opset 1). AIT_E_INVALID_ARG when absent/bad. */
ait_status ait_ew_cast_target(const ait_node *node, ait_dtype *dt);
/* New output tensor into *out; AIT_E_NOMEM (last error set) on failure. */
ait_status ait_ew_new_out(ait_dtype dt, const ait_ew_shape *s, ait_tensor **out);

#endif
