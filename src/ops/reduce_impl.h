/* Private declarations shared by the 'reduce' family files (reductions,
 * softmax family, arg-reductions, losses, optimizers, recurrent ops).
 * The registry rows are in src/ops/reduce.c. */
#ifndef AIT_OPS_REDUCE_IMPL_H
#define AIT_OPS_REDUCE_IMPL_H

#include "ops/op.h"

#define AIT_REDUCE_KERNEL(fn)                                                                      \
  ait_status fn(ait_kctx *ctx, const ait_node *node, const ait_tensor *const *in, int n_in,        \
                ait_tensor **out, int n_out)

/* reduce_basic.c: Reduce* (axes from the attribute up to the opset where
 * they become an input: 13 for ReduceSum, 18 for the others). */
AIT_REDUCE_KERNEL(ait_k_reduce_sum);
AIT_REDUCE_KERNEL(ait_k_reduce_mean);
AIT_REDUCE_KERNEL(ait_k_reduce_max);
AIT_REDUCE_KERNEL(ait_k_reduce_min);
AIT_REDUCE_KERNEL(ait_k_reduce_prod);
AIT_REDUCE_KERNEL(ait_k_reduce_l1);
AIT_REDUCE_KERNEL(ait_k_reduce_l2);
AIT_REDUCE_KERNEL(ait_k_reduce_log_sum);
AIT_REDUCE_KERNEL(ait_k_reduce_log_sum_exp);
AIT_REDUCE_KERNEL(ait_k_reduce_sum_square);
ait_status ait_reduce_shape(ait_graph *g, const ait_node *n);

/* reduce_softmax.c: Softmax, LogSoftmax, Hardmax (opset < 13: the input is
 * coerced to 2-D at `axis`; from 13: one axis), ArgMax, ArgMin. */
AIT_REDUCE_KERNEL(ait_k_softmax);
AIT_REDUCE_KERNEL(ait_k_log_softmax);
AIT_REDUCE_KERNEL(ait_k_hardmax);
AIT_REDUCE_KERNEL(ait_k_argmax);
AIT_REDUCE_KERNEL(ait_k_argmin);
ait_status ait_argreduce_shape(ait_graph *g, const ait_node *n);

/* reduce_loss.c */
AIT_REDUCE_KERNEL(ait_k_nll_loss);
AIT_REDUCE_KERNEL(ait_k_sce_loss);
ait_status ait_loss_shape(ait_graph *g, const ait_node *n);

/* reduce_train.c: domain ai.onnx.preview.training */
AIT_REDUCE_KERNEL(ait_k_momentum);
AIT_REDUCE_KERNEL(ait_k_adagrad);
AIT_REDUCE_KERNEL(ait_k_adam);
ait_status ait_optimizer_shape(ait_graph *g, const ait_node *n);

/* reduce_rnn.c */
AIT_REDUCE_KERNEL(ait_k_rnn);
AIT_REDUCE_KERNEL(ait_k_gru);
AIT_REDUCE_KERNEL(ait_k_lstm);
ait_status ait_rnn_shape(ait_graph *g, const ait_node *n);

#endif
