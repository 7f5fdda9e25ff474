/* Operator family 'reduce': the registry rows. Kernels live in src/ops/reduce_*.c:
 * reduce_basic.c (Reduce*), reduce_softmax.c (Softmax family, ArgMax/ArgMin),
 * reduce_loss.c (NLL / softmax cross-entropy), reduce_train.c (optimizers of
 * ai.onnx.preview.training), reduce_rnn.c (RNN, GRU, LSTM).
 *
 * Rows with several since-versions share a kernel that reads node->opset
 * where the semantics changed (axes as input for ReduceSum from 13 and the
 * other Reduce* from 18; single-axis softmax from 13); the rows document
 * the versions the support matrix covers. */
#include "ir/shape.h"
#include "ops/reduce_impl.h"

#define FL AIT_DT_FLOATS
#define NUM AIT_DT_NUMERIC
#define NUMB (AIT_DT_NUMERIC | AIT_DT_BIT(AIT_BOOL))
#define TRAIN "ai.onnx.preview.training"

const ait_op_def ait_ops_reduce[] = {
    /* axes attribute up to 12 (ReduceSum) / 17, then input 1 */
    {"", "ReduceSum", 1, NUM, ait_reduce_shape, ait_k_reduce_sum},
    {"", "ReduceSum", 13, NUM, ait_reduce_shape, ait_k_reduce_sum},
    {"", "ReduceMean", 1, NUM, ait_reduce_shape, ait_k_reduce_mean},
    {"", "ReduceMean", 18, NUM, ait_reduce_shape, ait_k_reduce_mean},
    {"", "ReduceMax", 1, NUMB, ait_reduce_shape, ait_k_reduce_max},
    {"", "ReduceMax", 18, NUMB, ait_reduce_shape, ait_k_reduce_max},
    {"", "ReduceMin", 1, NUMB, ait_reduce_shape, ait_k_reduce_min},
    {"", "ReduceMin", 18, NUMB, ait_reduce_shape, ait_k_reduce_min},
    {"", "ReduceProd", 1, NUM, ait_reduce_shape, ait_k_reduce_prod},
    {"", "ReduceProd", 18, NUM, ait_reduce_shape, ait_k_reduce_prod},
    {"", "ReduceL1", 1, NUM, ait_reduce_shape, ait_k_reduce_l1},
    {"", "ReduceL1", 18, NUM, ait_reduce_shape, ait_k_reduce_l1},
    {"", "ReduceL2", 1, NUM, ait_reduce_shape, ait_k_reduce_l2},
    {"", "ReduceL2", 18, NUM, ait_reduce_shape, ait_k_reduce_l2},
    {"", "ReduceLogSum", 1, NUM, ait_reduce_shape, ait_k_reduce_log_sum},
    {"", "ReduceLogSum", 18, NUM, ait_reduce_shape, ait_k_reduce_log_sum},
    {"", "ReduceLogSumExp", 1, NUM, ait_reduce_shape, ait_k_reduce_log_sum_exp},
    {"", "ReduceLogSumExp", 18, NUM, ait_reduce_shape, ait_k_reduce_log_sum_exp},
    {"", "ReduceSumSquare", 1, NUM, ait_reduce_shape, ait_k_reduce_sum_square},
    {"", "ReduceSumSquare", 18, NUM, ait_reduce_shape, ait_k_reduce_sum_square},
    {"", "ArgMax", 1, NUM, ait_argreduce_shape, ait_k_argmax},
    {"", "ArgMin", 1, NUM, ait_argreduce_shape, ait_k_argmin},
    /* coerced to 2-D before 13, one axis from 13 */
    {"", "Softmax", 1, FL, ait_shape_same, ait_k_softmax},
    {"", "Softmax", 13, FL, ait_shape_same, ait_k_softmax},
    {"", "LogSoftmax", 1, FL, ait_shape_same, ait_k_log_softmax},
    {"", "LogSoftmax", 13, FL, ait_shape_same, ait_k_log_softmax},
    {"", "Hardmax", 1, FL, ait_shape_same, ait_k_hardmax},
    {"", "Hardmax", 13, FL, ait_shape_same, ait_k_hardmax},
    {"", "NegativeLogLikelihoodLoss", 12, FL, ait_loss_shape, ait_k_nll_loss},
    {"", "SoftmaxCrossEntropyLoss", 12, FL, ait_loss_shape, ait_k_sce_loss},
    {TRAIN, "Momentum", 1, 0, ait_optimizer_shape, ait_k_momentum},
    {TRAIN, "Adagrad", 1, 0, ait_optimizer_shape, ait_k_adagrad},
    {TRAIN, "Adam", 1, 0, ait_optimizer_shape, ait_k_adam},
    /* layout attribute from 14 */
    {"", "RNN", 1, FL, ait_rnn_shape, ait_k_rnn},
    {"", "RNN", 14, FL, ait_rnn_shape, ait_k_rnn},
    {"", "GRU", 1, FL, ait_rnn_shape, ait_k_gru},
    {"", "GRU", 14, FL, ait_rnn_shape, ait_k_gru},
    {"", "LSTM", 1, FL, ait_rnn_shape, ait_k_lstm},
    {"", "LSTM", 14, FL, ait_rnn_shape, ait_k_lstm},
};
const int ait_ops_reduce_n = (int)(sizeof ait_ops_reduce / sizeof ait_ops_reduce[0]);
