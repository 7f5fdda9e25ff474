/* Private interface of the `xnnpack` backend (src/backends/xnnpack/).
 *
 *   backend_xnnpack.c  the backend row: options, one xnn_initialize per
 *                      process, the thread pool, build/infer/destroy
 *   xnn_support.c      which nodes this XNNPACK version can run, and why not
 *   xnn_lower.c        build: ONNX nodes -> xops; constants folded, weights
 *                      packed into XNNPACK's layouts once, activations fused
 *   xnn_shape.c        per input signature: the shape of every value
 *   xnn_plan.c         per input signature: layouts (NHWC inside, NCHW at the
 *                      edges), conversions, segments, staging buffers
 *   xnn_define.c       per segment: the XNNPACK subgraph and its runtime
 *   xnn_exec.c         infer: plan cache, staging, host transposes, outputs
 *   xnn_io.c           save/load of the lowered program
 *
 * Debian 12's XNNPACK (2022-02) needs static shapes, so the lowered program
 * is planned once per input signature and the plans are cached. It has no
 * transpose node: a value that must change layout in the middle of a graph
 * (an NHWC activation read by Reshape/Gemm) splits the program into several
 * runtimes ("segments") with a host transpose between them.
 *
 * Ownership: the state owns its xops, values, constants (packed weights and
 * folded values; initializers are borrowed from the graph, which outlives the
 * state), the thread pool and the plans. */
#ifndef AIT_BACKENDS_XNN_IMPL_H
#define AIT_BACKENDS_XNN_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include <pthreadpool.h>
#include <xnnpack.h>

#include "backends/backend.h"
#include "backends/common/plan.h"
#include "core/error.h"

#define XNN_MAX_IN 16   /* inputs of one xop (Concat) */
#define XNN_MAX_PLANS 4 /* input signatures kept (each holds packed weights) */

/* ---- the lowered program ------------------------------------------------- */

/* Windowed kinds read channels-last data (rank 4, or rank 3 for 1D windows,
 * whose packed kernels have kh = 1). */
typedef enum xk_kind {
  XK_CONV = 1, /* w [M,kh,kw,C/g], b [M] */
  XK_DWCONV,   /* w [1,kh,kw,M], b [M]; groups = depth multiplier M / C */
  XK_DECONV,   /* w [M,kh,kw,C/g], b [M] */
  XK_FC,       /* in0 [..., K]; w [N, K], b [N] or none */
  XK_MAXPOOL,
  XK_AVGPOOL,
  XK_GAP,     /* global average pool */
  XK_BINARY,  /* sub: xb_op; in0, in1 broadcast */
  XK_CLAMP,   /* [fmin, fmax]; also Relu, Clip, Identity */
  XK_UNARY,   /* sub: xu_op */
  XK_PRELU,   /* in1: slope constant (1 or C values) */
  XK_SOFTMAX, /* axis; sub = 1 for the opset < 13 flattening semantics */
  XK_RESHAPE, /* sub: xr_mode */
  XK_PAD,     /* spec: begin pads then end pads; alpha: the value */
  XK_CONCAT,  /* axis; n_in inputs */
  XK_END
} xk_kind;

typedef enum xb_op { XB_ADD, XB_SUB, XB_MUL, XB_DIV, XB_MAX, XB_MIN, XB_END } xb_op;
typedef enum xu_op {
  XU_HARDSWISH,
  XU_SIGMOID,
  XU_ABS,
  XU_NEG,
  XU_FLOOR,
  XU_CEIL,
  XU_ROUND,
  XU_SQRT,
  XU_SQUARE,
  XU_ELU,
  XU_LEAKY,
  XU_END
} xu_op;
typedef enum xr_mode { XR_RESHAPE, XR_FLATTEN, XR_SQUEEZE, XR_UNSQUEEZE, XR_END } xr_mode;

/* One XNNPACK-level operation. Plain data (saved as is by xnn_io.c). Window
 * attributes (kernel, strides, pads, dilations, auto_pad) are read from the
 * graph node at plan time with the reference's own geometry helpers. */
typedef struct xop {
  int32_t kind, sub;
  int32_t node; /* graph node it came from: messages and window attributes */
  int32_t n_in;
  int32_t in[XNN_MAX_IN]; /* value ids; -1 absent */
  int32_t out;
  int32_t w, b;   /* packed weight / bias constants, -1 none */
  int32_t groups; /* CONV/DECONV groups; DWCONV depth multiplier */
  int32_t ceil_mode, count_include_pad, allowzero;
  int32_t axis;
  int32_t n_spec;
  int32_t reserved0;              /* keeps the struct free of padding (saved as is) */
  int64_t spec[2 * AIT_MAX_RANK]; /* reshape target / axes; pad amounts */
  float fmin, fmax;               /* output clamp (fused activations) */
  float alpha;                    /* Elu/LeakyRelu slope; pad value */
  int32_t reserved1;
} xop;

/* A value of the program: graph values keep their index; values the
 * lowering adds (intermediates, derived constants) follow them. */
typedef struct xval {
  int32_t cst;  /* constant id, -1 when computed at run time */
  int32_t prod; /* xop producing it, -1 for inputs and constants */
} xval;

/* A float32 constant. Initializers are borrowed from the graph. */
typedef struct xconst {
  ait_tensor *t;
  int32_t src; /* graph value whose initializer it borrows; -1: owned */
} xconst;

struct xplan;

typedef struct xnn_state {
  const ait_graph *g; /* borrowed; outlives the state */
  int threads;
  bool fp16;
  pthreadpool_t pool; /* NULL for one thread */
  xop *ops;
  int n_ops, cap_ops;
  xval *vals;
  int n_vals, cap_vals;
  xconst *consts;
  int n_consts, cap_consts;
  ait_plan_cache plans; /* xplan by input signature, XNN_MAX_PLANS (common/plan.h) */
} xnn_state;

/* ---- support and lowering (xnn_support.c, xnn_lower.c) ------------------ */

/* Per value of g: 1 when its data is known at build time (initializers and
 * outputs of nodes whose inputs are all known and that may be folded).
 * New array the caller frees; NULL on out-of-memory. */
uint8_t *xnn_const_mask(const ait_graph *g);
/* Whether node n of g can be folded at build time given the mask. */
bool xnn_foldable(const ait_graph *g, const ait_node *n, const uint8_t *cmask);
/* Can this XNNPACK run node n (dtype fp16 when fp16)? Else a reason in why. */
bool xnn_node_ok(const ait_graph *g, const ait_node *n, bool fp16, const uint8_t *cmask, char *why,
                 size_t nwhy);

/* Lower every node of s->g into s->ops (folding, packing, fusion). */
ait_status xnn_lower(xnn_state *s);
/* Free the program (xops, values, constants) but not the plans. */
void xnn_program_free(xnn_state *s);
/* Append a value / constant / xop; -1 (last error set) on out-of-memory. */
int xnn_add_value(xnn_state *s, int cst);
int xnn_add_const(xnn_state *s, ait_tensor *t, int src);
int xnn_add_op(xnn_state *s, const xop *op);
/* Human description of an xop for messages: "Conv node 'c1'". */
const char *xnn_op_desc(const xnn_state *s, const xop *op);

/* ---- plans (xnn_shape.c, xnn_plan.c, xnn_define.c) ----------------------- */

typedef enum xlayout { XL_PLAIN = 0, XL_NHWC = 1 } xlayout;

/* A value of one plan: the program's values, then the layout conversions
 * the plan adds. Dims are always the ONNX (semantic) dims; XL_NHWC means
 * channels last, for ranks 3 and 4: stored [N, H, W, C] or [N, L, C]. */
typedef struct xpv {
  int rank;
  int64_t dims[AIT_MAX_RANK];
  xlayout layout;
  const ait_tensor *cst; /* constant data in stored order, else NULL */
  int32_t src;           /* conversion: the value it converts, else -1 */
  bool host;             /* conversion by a host transpose (else an XNNPACK reshape) */
  int32_t seg;           /* producing segment; -1: the host (inputs, host conversions) */
  int32_t avail;         /* first segment that may read it */
  bool ext;              /* lives in a staging buffer between segments / the host */
  float *buf;            /* staging buffer (XNN_EXTRA_BYTES of slack), owned */
} xpv;

typedef struct xplan {
  xpv *pv;
  int n_pv, cap_pv;
  int32_t *res;    /* res[op * XNN_MAX_IN + j]: plan value read by input j of op */
  int32_t *op_seg; /* segment of each xop */
  int n_segs;
  xnn_runtime_t *rt;
  ait_tensor **owned; /* constants re-laid out for this plan */
  int n_owned, cap_owned;
} xplan;

/* A 1D or 2D window seen as 2D (1D: a height of 1), from the node's
 * attributes through the reference's geometry helpers. Pools' end pads are
 * grown so that XNNPACK's rounding down gives ceil_mode's sizes. */
typedef struct xwin {
  int64_t ih, iw, oh, ow, kh, kw, sh, sw, dh, dw;
  int64_t pt, pl, pb, pr; /* pads: top, left, bottom, right */
  int64_t ah, aw;         /* ConvTranspose output_padding */
} xwin;
ait_status xnn_window(const xnn_state *s, const xop *op, const xpv *in, xwin *w);

/* Semantic dims of every value for the inputs in[] (dims only are read). */
ait_status xnn_plan_shapes(const xnn_state *s, xplan *p, const ait_tensor *const *in);
/* Build a whole plan for inputs in[]: shapes, layouts, segments, runtimes. */
ait_status xnn_plan_new(xnn_state *s, const ait_tensor *const *in, xplan **out);
void xnn_plan_free(xplan *p);
/* Append a plan value; -1 on out-of-memory. */
int xnn_pv_add(xplan *p, const xpv *v);
/* Keep tensor t (owned by the plan from now on, freed on failure too). */
ait_status xnn_plan_own(xplan *p, ait_tensor *t);
/* Stored dims of plan value v (NHWC order when so laid out); returns rank. */
int xnn_pv_dims(const xpv *v, size_t *dims);
/* Create the runtime of segment k (subgraph, runtime, external setup). */
ait_status xnn_define_segment(xnn_state *s, xplan *p, int k);

/* ---- execution (xnn_exec.c) ---------------------------------------------- */

ait_status xnn_exec(xnn_state *s, const ait_tensor *const *in, int n_in, ait_tensor **out);
/* Check inputs in[] and make sure their signature has a plan (dims only are
 * read, so tensor headers without data will do). */
ait_status xnn_prepare(xnn_state *s, const ait_tensor *const *in, int n_in);
/* Free all plans (deactivate, destroy). */
void xnn_plans_free(xnn_state *s);
/* Channels-last transpose of a rank-3/4 buffer of ONNX dims [a, b, ...]:
 * [a][b][rest] -> [a][rest][b] (to_nhwc) or the inverse. */
void xnn_transpose_cl(const float *src, float *dst, int rank, const int64_t *dims, bool to_nhwc);

/* ---- persistence (xnn_io.c) ---------------------------------------------- */

ait_status xnn_save(const xnn_state *s, const char *dir);
/* Restore the program saved in dir for graph s->g (validated). */
ait_status xnn_load(xnn_state *s, const char *dir);

/* Make sure xnn_initialize ran once in this process. */
ait_status xnn_init_once(void);
/* Text for an xnn_status. */
const char *xnn_status_str(enum xnn_status st);

#endif
