/* The graph-rewriting layer every backend shares: one definition of each
 * pass and pattern, called by native, onednn, xnnpack, cuda and shape
 * inference. Nothing here runs a kernel itself: a pass that must evaluate a
 * node is handed an evaluator (ait_node_eval_fn; the backends and the
 * loader pass ait_eager_run_node), so src/ir/ stays below the executors.
 *
 *   where do I add a fusion?  A pattern that several backends can use is a
 *   matcher here (match.c, like ait_match_gelu), tested on its own in
 *   tests/test_passes.c; each backend then turns a match into what it runs
 *   (native_fuse.c: an activation or epilogue step; onednn_fuse.c: a
 *   post-op). */
#ifndef AIT_IR_PASSES_H
#define AIT_IR_PASSES_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "ir/graph.h"
#include "ops/op.h"

/* ---- node predicates (inline: the cuda plugin links no libaitune) ------- */

/* Node n is the default-domain op `op`. */
static inline bool ait_is_op(const ait_node *n, const char *op) {
  return !n->domain[0] && !strcmp(n->op_type, op);
}

/* Node n is op `op` of domain `domain` ("" the default one). */
static inline bool ait_is_op_in(const ait_node *n, const char *domain, const char *op) {
  return !strcmp(n->domain, domain) && !strcmp(n->op_type, op);
}

/* Node n computes a function of its inputs alone: it has a reference
 * kernel, is none of the random ops and holds no subgraph. Dropout counts
 * as pure (it is the identity in inference); ait_node_foldable leaves it
 * out for the callers that keep it as a node to remove later. */
static inline bool ait_node_pure(const ait_node *n) {
  static const char *const random_ops[] = {"RandomUniform",    "RandomNormal", "RandomUniformLike",
                                           "RandomNormalLike", "Multinomial",  "Bernoulli"};
  if (!n->op || !n->op->kernel) return false;
  for (size_t i = 0; i < sizeof random_ops / sizeof random_ops[0]; i++)
    if (!strcmp(n->op_type, random_ops[i])) return false;
  for (int k = 0; k < n->n_attrs; k++)
    if (n->attrs[k].g) return false;
  return true;
}

/* Node n may be folded when its inputs are known: pure and not Dropout. */
static inline bool ait_node_foldable(const ait_node *n) {
  return ait_node_pure(n) && strcmp(n->op_type, "Dropout") != 0;
}

/* Value v is a true constant: an initializer (no producer), a tensor. */
static inline bool ait_value_is_const(const ait_graph *g, int v) {
  return v >= 0 && g->values[v].init && g->values[v].producer < 0 &&
         g->values[v].init->kind == AIT_KIND_TENSOR;
}

/* ---- constant folding (fold.c) ------------------------------------------ */

/* Runs node n on in[0..n_in) into out[0..n->n_out) (new tensors the caller
 * owns); the reference executor's ait_eager_run_node has this type. */
typedef ait_status (*ait_node_eval_fn)(const ait_node *n, const ait_tensor *const *in, int n_in,
                                       ait_tensor **out);

/* Constant folding over graph g: every live node (dead[i] false) that is
 * foldable and whose inputs are all true constants runs once through
 * `eval`; its outputs become initializers (producer -1) and the node is
 * marked dead. A node whose evaluation fails stays (running it reports the
 * error), as does one with an output that is not a tensor. One sweep in
 * order: a node folded makes its readers foldable further on. *folded
 * counts the nodes folded. */
ait_status ait_pass_fold_constants(ait_graph *g, bool *dead, ait_node_eval_fn eval, int *folded);

/* The same, folding only the foldable nodes `accept` takes (NULL: all of
 * them); a backend that bounds what it materializes passes its own test. */
ait_status ait_pass_fold_constants_if(ait_graph *g, bool *dead, ait_node_eval_fn eval,
                                      bool (*accept)(const ait_node *n), int *folded);

/* The known part of a shape: a Slice or Gather (its data input) of a Shape
 * node whose picked dims are all known static sizes becomes a constant
 * (the Shape of a tensor is not one, but what is taken from its known
 * dims is), its other inputs being constants. Run ait_pass_fold_constants
 * after it to carry the new constants on (exporters compute weight slices
 * from a Shape: nn.MultiheadAttention's cross-attention K/V projections). */
ait_status ait_pass_fold_known_shapes(ait_graph *g, bool *dead, ait_node_eval_fn eval, int *folded);

/* Give value v the constant t (owned) as an initializer: no producer, the
 * tensor's dtype and dims, symbolic dims dropped. */
void ait_value_set_const(ait_graph *g, int v, ait_tensor *t);

/* ---- simplification (simplify.c) ----------------------------------------- */

/* No-op elimination over the live nodes (dead[i] false) of g: Identity,
 * Dropout in inference (its mask unread) and a Transpose of the identity
 * perm are marked dead, their
 * readers reading the input instead; when the no-op's output is a graph
 * output, the input's producer writes it (the name stays), else the node
 * stays. Subgraph reads count (by name). *removed counts the nodes. */
ait_status ait_pass_remove_noops(ait_graph *g, bool *dead, int *removed);

/* Pair elimination: a Transpose of a Transpose becomes one Transpose of the
 * composed perm (none when that is the identity), and a Reshape of a
 * Reshape reads the inner one's input (when its shape is a constant with
 * no 0 to copy, or allowzero; none when the shape is the input's own),
 * where the inner output has no other reader. *removed counts the nodes. */
ait_status ait_pass_remove_pairs(ait_graph *g, bool *dead, int *removed);

/* ---- BatchNormalization into the product before it (bn.c) -------------- */

/* BatchNormalization node b computes the inference form: no training
 * mode, spatial, is_test where the opset asks for it. */
bool ait_bn_is_inference(const ait_node *b);

/* y = (x - mean) * scale / sqrt(var + eps) + bias, folded into M output
 * channels of a product with weights w[M][per] and bias cb[M] (NULL: 0):
 * w_out = w * k, b_out = (cb - mean) * k + bias with k = scale /
 * sqrt(var + eps), in double like eager. w may be NULL (per ignored): then
 * w_out[m] = k, the affine itself. w_out may alias w. */
void ait_bn_fold(const float *w, int64_t M, int64_t per, const float *cb, const float *scale,
                 const float *bias, const float *mean, const float *var, double eps, float *w_out,
                 float *b_out);

/* ---- patterns (match.c) -------------------------------------------------- */

/* How a matcher sees the graph: the readers of a value and its scalar
 * constants, each backend answering from its own bookkeeping. */
typedef struct ait_match_view {
  const ait_graph *g;
  /* Fills up to max node indices reading v (a node reading it twice
   * twice) and returns how many readers v has in all: a graph output, a
   * subgraph's read counts too, so the count can exceed the nodes filled;
   * slots not filled are set to -1. */
  int (*readers)(const void *ctx, int v, int *nodes, int max);
  /* v is a constant scalar; its value in *out. */
  bool (*scalar)(const void *ctx, int v, float *out);
  const void *ctx;
} ait_match_view;

/* Relative tolerance for the constants of a spelled-out pattern (√2, 1/√2):
 * a few float32 ulps (2^-23 is 1.2e-7), so the fused op, which uses the
 * exact constant, equals the spelled-out graph to rounding. One tolerance
 * for every backend. */
#define AIT_MATCH_RTOL 1e-6f

/* A matched GELU: its nodes, the first one reading x first (erf form: the
 * Div by √2 or Mul by 1/√2, Erf, Add 1, the Mul reading x, the last Mul;
 * tanh form: the cube (Pow, or Mul(x, x) then the Mul by x), Mul 0.044715,
 * Add x, Mul √(2/π), Tanh, Add 1, the Mul reading x, the last Mul), the
 * last one computing y; tanh: which form. */
typedef struct ait_gelu_match {
  int nodes[10];
  int n_nodes;
  int y;
  bool tanh;
} ait_gelu_match;

/* GELU spelled out on float32 x: x * 0.5 * (1 + erf(x / √2)), or its tanh
 * form x * 0.5 * (1 + tanh(√(2/π) * (x + 0.044715 * x³))) with x³ as
 * Pow(x, 3) or x * x * x; any association of the halving ((x * (1 +
 * .)) * 0.5, (x * 0.5) * (1 + .), or x * ((1 + .) * 0.5) as dynamo exports it), every intermediate
 * read once and x read by the nodes of the pattern alone. */
bool ait_match_gelu(const ait_match_view *v, int x, ait_gelu_match *m);

/* A matched SiLU (Swish): nodes[0] the Sigmoid, nodes[1] the Mul writing y. */
typedef struct ait_silu_match {
  int nodes[2];
  int y;
} ait_silu_match;

/* x * Sigmoid(x) on float32 x, either order of the Mul's inputs; x read
 * by the two nodes alone, the Sigmoid's output by the Mul alone. */
bool ait_match_silu(const ait_match_view *v, int x, ait_silu_match *m);

/* A matched spelled-out HardSwish: the nodes, the input x, the offset c
 * and the bound d; mul_first: x * clip, then / d (else clip / d, then x *). */
typedef struct ait_hard_swish_match {
  int add, clip, mul, div;
  int x;
  float c, d;
  bool mul_first;
} ait_hard_swish_match;

/* HardSwish as exporters without the op spell it (Paddle's x * relu6(x +
 * 3) / 6), from the Add node `add`: Add(x, c) -> Clip(0, d) -> Mul(x, .)
 * -> Div(., d) (or Mul by 1/d), either order of the Mul and the Div, any
 * offset c and finite bound d > 0, each intermediate read once. It is x *
 * HardSigmoid(x; alpha 1/d, beta c/d). */
bool ait_match_hard_swish(const ait_match_view *v, int add, ait_hard_swish_match *m);

/* ---- attention (attn.c) -------------------------------------------------- */

#define AIT_ATTN_MAX_NODES 12

/* A matched attention, y = Softmax(scale * Q K^T [+ mask] [+ window mask])
 * V on float32 operands of rank 3 or 4 (the last two axes rows and
 * columns): nodes[0..n_nodes) are the nodes it replaces, from the product
 * with V (pv) back to the scores product; the optional scalings of Q and
 * K^T before the product (q_scale, k_scale) and K's Transpose (k_tr) are
 * reported, not counted there: a backend absorbs them or not. */
typedef struct ait_attn_match {
  int scores, softmax, pv; /* nodes: Q K^T (MatMul or FusedMatMul), Softmax, P V */
  int scores_out;          /* value written by the scores node */
  int q, kt, v, y;         /* values: the scores' inputs Q and K^T, V, the output */
  int k_tr; /* Transpose node making K^T from K [.., Sk, D] (last two axes swapped), -1 */
  int q_scale, k_scale;        /* Mul/Div nodes scaling Q / K^T by a constant, -1 */
  float q_factor, k_factor;    /* their factors (1: none) */
  float alpha;                 /* FusedMatMul's alpha (1 for MatMul) */
  float scale;                 /* alpha times the scalings of the scores (not q/k_factor) */
  int scale_nodes[2], n_scale; /* Mul/Div nodes scaling the scores */
  int mask;                    /* additive float32 mask broadcast onto the scores, -1: none */
  int mask_add;                /* its Add node, -1 when it is the FusedMatMul's Z */
  /* swin's shifted windows: the scores [G * W, H, Sq, Sk] viewed as [G, W,
   * H, Sq, Sk] (Reshape wreshape[0]), the mask wmask added (wmask_add,
   * broadcast over G: rank <= 5, a G dim of 1), viewed back (wreshape[1]):
   * batch b takes window b % W of the mask, W = windows. -1/0: none. */
  int wmask, wmask_add, wreshape[2];
  int64_t windows;
  int nodes[AIT_ATTN_MAX_NODES];
  int n_nodes;
} ait_attn_match;

/* The attention whose Softmax is node `softmax`: P = Softmax(S, last
 * axis) read by a MatMul(P, V) alone, S reached back from the Softmax
 * through, in this order, an optional windowed mask (Reshape, Add,
 * Reshape; static dims), an optional additive mask (Add, either input; any
 * float32 value of rank at most the scores' broadcasting onto them
 * without growing them: padding [B, 1, 1, S], causal [Sq, Sk], biases
 * [1, H, S, S]), optional scalings by float32 scalar constants (Mul either
 * side, Div), and the product Q K^T: MatMul, or a FusedMatMul with alpha
 * and at most Z (then Z is the mask); every intermediate read once. K^T
 * may be a value or a Transpose of K. Shapes are checked where known: the
 * backend checks the rest when it has the sizes. */
bool ait_match_attention(const ait_match_view *v, int softmax, ait_attn_match *m);

#endif
