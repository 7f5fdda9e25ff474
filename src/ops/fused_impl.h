/* Private interface of the 'fused' operator family (domain "ai.aitune").
 *
 * Graph passes (the native backend's, src/backends/native/) rewrite chains of
 * standard ops into one fused node; every fused op has a reference kernel
 * here so that the reference executor can run a rewritten graph and passes
 * can be tested on their own: eager(original) == eager(rewritten).
 *
 *   FusedConv(X, W, B?, Z?)    Y = act(Conv(X, W, B) + Z)
 *       attributes of Conv, plus activation / activation_params
 *   FusedConvNhwc(X, W, B?, Z?, S?)  FusedConv in channels-last layout: X
 *       [N, H, W, C], W [kh, kw, C/group, M] (HWIO), Z and Y [N, OH, OW, M];
 *       with x_layout="NCHW", X is [N, C, H, W] (the rest stays NHWC).
 *       S [N, 1, 1, C] (NHWC X only): X times S per image and channel
 *       first (a squeeze-excite gate). Attributes of Conv plus the
 *       activation, as FusedConv
 *   FusedInvertedResidual(X, We?, Be?, Wd, Bd?, Wp, Bp?, Z?)  a MobileNet
 *       block in NHWC, three FusedConvNhwc stages: E = expand_act(1x1 conv
 *       of X with We, Be) (absent We: E = X), D = dw_act(depthwise K x K
 *       (K odd) of E with Wd, Bd, pads K / 2, `strides`), Y = act(1x1 conv of D with Wp,
 *       Bp, + Z). Weights HWIO; attributes strides, expand_activation(_params),
 *       dw_activation(_params), activation(_params). With stem_x_layout
 *       (and stem_strides, stem_pads [4]), We is instead a stem: a group-1
 *       window conv [kh, kw, C, E] of X (NCHW when stem_x_layout="NCHW")
 *   FusedGapNhwc(X)            GlobalAveragePool of NHWC X [N, H, W, C]: Y
 *       [N, C, 1, 1] (as the NCHW op would give; the same bytes as
 *       [N, 1, 1, C])
 *   FusedPoolNhwc(X)           MaxPool / AveragePool (attribute pool, with
 *       the op's opset in pool_opset) of NHWC X [N, H, W, C]: Y [N, OH, OW,
 *       C]; the pooling op's attributes (kernel_shape, strides, pads,
 *       dilations, ceil_mode, count_include_pad), no Indices
 *   FusedGemm(A, B, C?)        Y = act(Gemm(A, B, C))
 *       attributes of Gemm, plus activation / activation_params
 *   FusedMatMul(A, B, bias?, Z?)  Y = act(alpha * MatMul(A, B) + bias + Z)
 *       alpha (float, default 1), activation / activation_params
 *   FusedAttention(Q, K, V, mask?)  scaled dot-product attention, as exported:
 *       Q' = Transpose(Q, q_perm), K' = Transpose(K, k_perm), V' likewise
 *       (each only when its perm attribute is present), then
 *       S = alpha * MatMul(Q', K') + mask, P = Softmax(S, axis=-1),
 *       Y = MatMul(P, V'), output Transpose(Y, out_perm) (when present).
 *       K' is the already transposed key ([.., D, Sk]), as the first MatMul
 *       reads it.
 *
 * `+` broadcasts as numpy does (ONNX Add). The activation is applied last:
 * "" or absent (none), "Relu", "Clip" [min, max], "Sigmoid", "Tanh",
 * "LeakyRelu" [alpha], "HardSigmoid" [alpha, beta], "HardSwish", "Gelu"
 * (exact, with erf), "Softplus", "GeluTanh", and "Program": an epilogue
 * program, a short list of steps (ait_act_step) written in the attribute
 * `epilogue` as names joined by ';', each with an optional "*x" (multiply
 * by the program's input), e.g. "Sigmoid*x" (SiLU) or "Softplus;Tanh*x"
 * (Mish); its activation_params hold two floats per step.
 * activation_params holds the bracketed floats.
 *
 *   FusedUnary(X)              Y = act(X): a chain of elementwise ops
 *       without a producer to join (e.g. Sigmoid + Mul), one pass
 *   FusedInstanceNorm(X, S, B) Y = act(InstanceNormalization(X, S, B)) (attribute
 *       epsilon): a GroupNorm with affine and its Gelu, one pass (native) */
#ifndef AIT_OPS_FUSED_IMPL_H
#define AIT_OPS_FUSED_IMPL_H

#include <math.h>
#include <stdbool.h>

#include "ops/op.h"

#define AIT_FUSED_DOMAIN "ai.aitune"

typedef enum ait_act_kind {
  AIT_ACT_NONE = 0,
  AIT_ACT_RELU,
  AIT_ACT_CLIP,
  AIT_ACT_SIGMOID,
  AIT_ACT_TANH,
  AIT_ACT_LEAKY_RELU,
  AIT_ACT_HARD_SIGMOID,
  AIT_ACT_HARD_SWISH,
  AIT_ACT_GELU,
  AIT_ACT_SOFTPLUS,  /* log(1 + e^x) */
  AIT_ACT_GELU_TANH, /* Gelu with approximate = "tanh" */
  AIT_ACT_PROGRAM,   /* the steps below, in order */
  AIT_ACT_COUNT
} ait_act_kind;

/* One step of an epilogue program: v = kind(v) (with p), then, with mul_x,
 * v = v * x, x being the value the program started from. SiLU is
 * [Sigmoid*x], HardSwish [HardSigmoid(1/6, 1/2)*x], Mish [Softplus,
 * Tanh*x]. A step's kind is never AIT_ACT_PROGRAM. */
typedef struct ait_act_step {
  ait_act_kind kind;
  float p[2];
  bool mul_x;
} ait_act_step;

#define AIT_ACT_MAX_STEPS 4

typedef struct ait_act {
  ait_act_kind kind;
  float p[2];  /* Clip: min, max; LeakyRelu: alpha; HardSigmoid: alpha, beta */
  int n_steps; /* AIT_ACT_PROGRAM only */
  ait_act_step steps[AIT_ACT_MAX_STEPS];
} ait_act;

/* Name of an activation as written in the `activation` attribute ("" for
 * none), and the number of activation_params it takes. */
const char *ait_act_name(ait_act_kind k);
int ait_act_n_params(ait_act_kind k);
/* Kind of an activation name; AIT_ACT_COUNT when unknown. */
ait_act_kind ait_act_from_name(const char *name);

/* The activation of a fused node from its attributes; AIT_E_INVALID_ARG for
 * an unknown name or a wrong number of parameters. */
ait_status ait_act_parse(const ait_node *n, ait_act *a);

/* The `epilogue` text of program a in buf (cap bytes) and its 2 floats per
 * step in params (2 * AIT_ACT_MAX_STEPS); returns the number of params, -1
 * when buf is too small. */
int ait_act_program_text(const ait_act *a, char *buf, size_t cap, float *params);
/* The steps of an AIT_ACT_PROGRAM on one value. */
float ait_act_program_f32(const ait_act *a, float x);

/* y = act(x), one value. */
static inline float ait_act_f32(const ait_act *a, float x) {
  switch (a->kind) {
  case AIT_ACT_NONE: return x;
  case AIT_ACT_RELU: return x < 0.0f ? 0.0f : x;
  case AIT_ACT_CLIP: return x < a->p[0] ? a->p[0] : x > a->p[1] ? a->p[1] : x;
  case AIT_ACT_SIGMOID: return 1.0f / (1.0f + expf(-x));
  case AIT_ACT_TANH: return tanhf(x);
  case AIT_ACT_LEAKY_RELU: return x < 0.0f ? a->p[0] * x : x;
  case AIT_ACT_HARD_SIGMOID: {
    float v = a->p[0] * x + a->p[1];
    return v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
  }
  case AIT_ACT_HARD_SWISH: {
    float v = x / 6.0f + 0.5f;
    return x * (v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v);
  }
  case AIT_ACT_GELU: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
  case AIT_ACT_SOFTPLUS: return x > 20.0f ? x : log1pf(expf(x));
  case AIT_ACT_GELU_TANH:
    return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
  case AIT_ACT_PROGRAM: return ait_act_program_f32(a, x);
  default: return x;
  }
}

/* x[i] = act(x[i]) for n floats, in place. */
void ait_act_apply_f32(const ait_act *a, float *x, int64_t n);

/* Registry row of fused op `name` (domain "ai.aitune"), or NULL. Lets code
 * resolve fused nodes even where the registry lookup does not list them. */
const ait_op_def *ait_fused_op(const char *name);

/* The stem stage of a FusedInvertedResidual (its stem_* attributes): for X
 * of spatial size in (H, W, in X's layout) and a window k (kh, kw), the
 * strides st, the leading pads pb and the stage's output size out. False
 * when an attribute is missing or out of range (padding wider than the
 * window, sizes past 2^31, a window larger than the padded input). Shape
 * inference and native's kernel both use it, so they cannot disagree. */
bool ait_inv_res_stem(const ait_node *n, const int64_t in[2], const int64_t k[2], int64_t st[2],
                      int64_t pb[2], int64_t out[2]);

/* The standard pooling node a FusedPoolNhwc stands for, in *pool: node's
 * attributes (borrowed), op_type and opset from its pool / pool_opset
 * attributes, one output. False when those are missing or unknown. Shape
 * inference, the reference and native's kernel all read it. */
bool ait_fused_pool_node(const ait_node *node, ait_node *pool);

#endif
