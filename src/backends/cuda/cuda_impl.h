/* Private interface of the `cuda` backend (src/backends/cuda/).
 *
 *   backend_cuda.c    the backend table row: options, availability, build,
 *                     infer, activate/deactivate, destroy
 *   cuda_support.c    supports(): which nodes run here, and why not
 *   cuda_ops.c        the op table: per op a support check and a lowering
 *   cuda_plan.c       plans per input signature: shapes, tensors, arena
 *   cuda_lower.c      lowering of shape, data-movement and normalisation ops
 *   cuda_lower_ew.c   lowering of elementwise ops (broadcast iteration)
 *   cuda_lower_reduce.c  reductions, ArgMax/ArgMin, variadic Sum/Mean/Max/Min
 *   cuda_lower23.c    RMSNormalization, RotaryEmbedding, Attention (opset 23)
 *   cuda_lower_pad.c  Pad, Resize, InstanceNormalization (and FusedInstanceNorm)
 *   cuda_copy.h       strided copies' host preparation (wider units, 32-bit
 *                     indices), plain C so that tests check it on the CPU
 *   cuda_gemm.c       Gemm / MatMul through cuBLASLt, measured algorithms
 *   cuda_conv.c       Conv through cuDNN (fused bias/residual/ReLU)
 *   cuda_attn.c       attention patterns: one fused kernel, or a masked softmax
 *   cuda_exec.c       running a plan: uploads, steps or CUDA graph, downloads;
 *                     per-step device times for `aitune profile`
 *   cuda_fp8.c        dtype=fp8 weights: e4m3 with a per-tensor scale (host,
 *                     plain C, in every build); dtype=fp8wo's per-channel
 *                     encoder and its saved file; cuda_fp8.cu quantizes
 *                     activations on the device and dequantizes fp8wo weights
 *   cuda_fp8wo.c      dtype=fp8wo: e4m3 GEMM weights dequantized to bf16 by a
 *                     step before each GEMM; their save and load
 *   cuda_mem.c        device weights (uploaded once), the algorithm cache
 *   cuda_save.c       save/load: the rewritten graph, the algorithms and
 *                     (fp8wo) the e4m3 weights
 *   cuda_debug.h      a dry planner for tests without a GPU
 *   *.cu              kernels (cuda_kernels.h)
 *
 * How it runs: build() copies the graph and rewrites the copy with the
 * native backend's passes (constant folding, BatchNormalization folding,
 * bias / residual / activation fusion into FusedConv, FusedGemm and
 * FusedMatMul), then its own (cu_pass_qkv) and native's GroupNorm fusion (nat_pass_groupnorm),
 * which native runs inside its epilogue pass. An input
 * signature (dtypes and shapes, plus the values of small integer inputs
 * used as shapes) gets a plan at its first infer: a copy of the graph with
 * every shape made concrete and every value computable from shapes and
 * constants folded on the host, then one or more steps per remaining node,
 * an arena placed by liveness, and algorithms chosen by measuring. A plan
 * runs as its steps the first time and as a captured CUDA graph afterwards.
 * Float tensors live on the device in the storage type of the configured
 * precision (float32, bfloat16 or float16); inputs and outputs keep their
 * ONNX types at the edges.
 *
 * Ownership: the state owns its rewritten graph, its device memory and its
 * plans; plans own their graph copy, steps and arena. */
#ifndef AIT_BACKENDS_CUDA_IMPL_H
#define AIT_BACKENDS_CUDA_IMPL_H

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <stdbool.h>
#include <stdint.h>

#include "backends/backend.h"
#include "backends/cuda/cuda_debug.h"
#include "backends/cuda/cuda_kernels.h"
#include "backends/native/native_engine.h"
#include "core/error.h"
#include "ops/fused_impl.h"
#include "ops/op.h"

/* ---- options ------------------------------------------------------------- */

/* CU_FP8WO: bf16 everywhere, GEMM weights kept in e4m3 (cuda_fp8wo.c) */
typedef enum cu_prec { CU_FP32 = 0, CU_TF32, CU_BF16, CU_FP16, CU_FP8, CU_FP8WO } cu_prec;
#define CU_PREC_LAST CU_FP8WO
typedef enum cu_layout { CU_PLAIN = 0, CU_NHWC = 1 } cu_layout;

typedef struct cu_opts {
  cu_prec prec;
  bool graphs;    /* capture plans into CUDA graphs */
  bool nhwc;      /* convolutions in NHWC (resolved from layout=auto) */
  bool measure;   /* time candidate algorithms (else the heuristic's first) */
  int candidates; /* algorithms measured per GEMM / convolution */
  bool attention; /* fuse attention patterns */
  bool attn_gemm; /* ... as GEMMs around a masked softmax, never the fused kernel */
  bool attn_auto; /* the fused kernel only when its grid fills the GPU */
  bool attn_wmma; /* the WMMA kernel even where the FlashAttention-2 one applies */
  int64_t ws_bytes;
  int device;
  bool fp8_fast; /* dtype=fp8: CUBLASLT_MATMUL_DESC_FAST_ACCUM */
  bool fp8_amax; /* dtype=fp8: fp8 GEMM -> fp8 GEMM absmax by cuBLASLt (AMAX_D) */
  bool fp8_all;  /* dtype=fp8: every GEMM that can be fp8 is (else the faster of fp8, bf16) */
  bool gelu_lt;  /* GELU after a 16-bit GEMM as cuBLASLt's (tanh) epilogue */
  int conv;      /* CU_CONV_*: how NHWC convolutions of one group run */
  bool qkv;      /* merge Q/K/V projections (cu_pass_qkv) */
} cu_opts;

/* conv=auto: cuDNN's best and the GEMM form timed, the faster kept; cudnn:
 * cuDNN only; gemm: the GEMM form wherever it applies. */
enum { CU_CONV_AUTO = 0, CU_CONV_CUDNN, CU_CONV_GEMM };

ait_status cu_opts_parse(const ait_backend_config *cfg, cu_opts *o);
const char *cu_prec_name(cu_prec p);

/* ---- errors ------------------------------------------------------------- */

/* AIT_E_RUNTIME naming `what` and the CUDA / cuBLAS / cuDNN error, or AIT_OK. */
ait_status cu_check(cudaError_t e, const char *what);
ait_status cu_check_lt(cublasStatus_t e, const char *what);
ait_status cu_check_dnn(cudnnStatus_t e, const char *what);

/* ---- device weights and the algorithm cache (cuda_mem.c) ------------------ */

typedef enum cu_wfmt {
  CU_W_STORE = 0,  /* the storage type of the value (floats in the precision's type) */
  CU_W_F32,        /* float32 (per-channel parameters of epilogues, norms) */
  CU_W_KRSC,       /* a conv filter [K, C, R, S] as [K, R, S, C] in the storage type
                      (1-D [K, C, S] as [K, S, C], 3-D [K, C, T, R, S] as [K, T, R, S, C]) */
  CU_W_E4M3_KN,    /* a GEMM weight [K, N] as e4m3 [N, K], then its float32 scale */
  CU_W_E4M3_NK,    /* a GEMM weight [N, K] (transB) as e4m3 [N, K], then its scale */
  CU_W_E4M3_CH_KN, /* dtype=fp8wo: a weight [K, N] as e4m3 [K, N], then N float32 scales */
  CU_W_E4M3_CH_NK  /* dtype=fp8wo: a weight [N, K] as e4m3 [N, K], then N float32 scales */
} cu_wfmt;

/* Bytes of an e4m3 weight image of n elements before its scale (16-aligned,
 * as cuBLASLt wants its scale pointers). */
static inline int64_t cu_e4m3_scale_offset(int64_t n) { return (n + 15) / 16 * 16; }

typedef struct cu_weight {
  int value; /* index in the state's graph */
  cu_wfmt fmt;
  void *ptr;
  int64_t bytes;
} cu_weight;

/* CU_ALGO_PICK: a choice between two forms of a step, timed once (dtype=fp8
 * GEMMs: conv_algo 1 = e4m3 kept, 0 = bfloat16) */
typedef enum cu_algo_kind { CU_ALGO_LT = 1, CU_ALGO_CONV = 2, CU_ALGO_PICK = 3 } cu_algo_kind;

#define CU_KEY_LEN 200

/* A chosen algorithm for one problem, by a key describing the problem. */
typedef struct cu_algo {
  char key[CU_KEY_LEN];
  int kind;
  uint64_t lt[8]; /* cublasLtMatmulAlgo_t */
  int conv_algo;  /* cudnnConvolutionFwdAlgo_t */
  int conv_fused; /* 1: cudnnConvolutionBiasActivationForward */
  int conv_math;  /* cudnnMathType_t it runs with */
  int64_t ws;     /* workspace bytes it needs */
  float ms;       /* measured time, 0 when not measured */
} cu_algo;

#define CU_MAX_PLANS 8

typedef struct cu_plan cu_plan;

typedef struct cu_state {
  cu_opts o;
  bool dry;     /* plan without a device (tests): no device calls, fake addresses */
  ait_graph *g; /* rewritten copy, owned */
  nat_pass_stats stats;
  ait_dtype fdt; /* storage type of float tensors */
  /* device objects (made by cu_state_open, freed by deactivate) */
  bool open;
  cudaStream_t stream;
  cublasLtHandle_t lt;
  cudnnHandle_t dnn;
  void *ws;   /* workspace shared by cuBLASLt and cuDNN (steps run in order) */
  int *d_err; /* set by kernels on bad data (gather indices) */
  cudaEvent_t ev[2];
  cudaEvent_t run_ev[3]; /* device time of a run (0, 1); the caller's stream (2) */
  cu_weight *w;
  int n_w, cap_w;
  cu_plan *plans[CU_MAX_PLANS];
  int n_plans;
  uint64_t tick;
  /* kept across deactivate */
  cu_algo *algos;
  int n_algos, cap_algos;
  int n_measured; /* algorithms measured by this state (for tests and logs) */
  char device_name[128];
  int sm;   /* compute capability, major * 10 + minor */
  int n_sm; /* streaming multiprocessors (0 in a dry state) */
  /* dtype=fp8wo: e4m3 weights read from a saved folder (cuda_fp8w.bin),
   * used instead of quantizing the graph's weights again */
  ait_cuda_e4m3w *wo;
  int n_wo;
  /* device-memory I/O asked by the session (set_io): bound[] is an owned
   * copy of the caller's views, their memory borrowed */
  ait_backend_io io;
  ait_tensor_view *bound;
  float last_ms; /* device time of the last run; < 0 when not measured */
} cu_state;

/* set_io / last_device_ms of the backend (cuda_exec.c). */
ait_status cu_set_io(cu_state *s, const ait_backend_io *io);
double cu_last_device_ms(const cu_state *s);

/* Device handles, workspace and stream (idempotent). */
ait_status cu_state_open(cu_state *s);
/* cuBLASLt / cuDNN handles, made on first use. */
ait_status cu_need_lt(cu_state *s);
ait_status cu_need_dnn(cu_state *s);
/* Free plans, weights and device objects; algorithms stay. */
void cu_state_close(cu_state *s);

/* Device copy of value v of s->g (a constant) in format fmt, uploaded once. */
ait_status cu_weight_get(cu_state *s, int v, cu_wfmt fmt, void **ptr);
void cu_weights_free(cu_state *s);

/* Host float conversions to the storage type, saturating to its finite range. */
void cu_f32_to_store(ait_dtype dt, const float *src, void *dst, int64_t n);
/* Convert n elements of src (type from) to dst (type to) on the host; both
 * must be among the device types (floats, int64/32/8, uint8, bool). */
ait_status cu_host_convert(ait_dtype from, const void *src, ait_dtype to, void *dst, int64_t n);

const cu_algo *cu_algo_find(const cu_state *s, const char *key);
ait_status cu_algo_put(cu_state *s, const cu_algo *a);

/* ---- plans --------------------------------------------------------------- */

typedef enum cu_store {
  CU_ST_ARENA = 0, /* placed in the plan's arena by liveness */
  CU_ST_WEIGHT,    /* the state's weight memory */
  CU_ST_CONST,     /* the plan's constant buffer (values folded at planning) */
  CU_ST_VIEW       /* the storage of another tensor (root), another shape */
} cu_store;

typedef struct cu_tensor {
  ait_dtype dt; /* device storage type */
  int rank;
  int64_t dims[AIT_MAX_RANK]; /* logical (ONNX) dims */
  cu_layout layout;           /* CU_NHWC: rank 4, stored as N, H, W, C */
  cu_store store;
  int root;       /* tensor owning the bytes (itself unless a view) */
  int64_t voff;   /* a view: where its bytes start in the root's (a Gather's part) */
  int64_t offset; /* arena / constant buffer offset */
  int64_t bytes;
  void *ptr;       /* resolved device pointer */
  int first, last; /* steps that write it first / read it last (roots) */
  int value;       /* value of the plan graph, -1 for temporaries */
} cu_tensor;

typedef struct cu_step cu_step;
typedef ait_status (*cu_step_fn)(cu_state *s, cu_plan *p, cu_step *st);

#define CU_STEP_USES 72 /* Concat: 64 inputs and its output */

struct cu_step {
  const char *what; /* op for messages */
  int node;         /* node of the plan graph, -1 for glue steps */
  cu_step_fn run;
  cu_step_fn prep;            /* after the arena exists (algorithms), may be NULL */
  void (*release)(void *prm); /* frees prm's own resources, may be NULL */
  void *prm;                  /* owned, freed with free() after release */
  int use[CU_STEP_USES];      /* tensors read or written */
  int n_use;
};

struct cu_plan {
  uint64_t hash;
  int64_t *sig;
  int n_sig;
  uint64_t used; /* state tick of the last use (least recently used goes) */
  ait_graph *pg; /* the state's graph with concrete shapes and folded values */
  cu_tensor *t;
  int n_t, cap_t;
  cu_step *steps;
  int n_steps, cap_steps;
  int *vt[2]; /* per value of pg: tensor in plain / NHWC layout, -1 */
  int *in_t;  /* per graph input: tensor receiving the upload, -1 */
  int *out_t; /* per graph output: tensor to download, -1 = host value */
  void *arena;
  int64_t arena_bytes;
  void *cbuf; /* plan constants */
  int64_t cbuf_bytes;
  uint8_t *chost; /* their host image before upload */
  void **extra;   /* device copies of constants folded while planning */
  int n_extra, cap_extra;
  cudaGraph_t graph;
  cudaGraphExec_t gexec;
  bool graph_failed;
  cudaGraphExec_t *step_exec; /* per step, for profiling (NULL: not made) */
  bool dry;                   /* made by a dry state: nothing on the device */
  int runs;
  /* page-locked host memory the outputs are downloaded into, reused by every
   * run (infer() hands the outputs out as tensors borrowing it); NULL until
   * the first download, or when it could not be had (then each output is a
   * new pageable tensor) */
  void *hout;
  int64_t hout_bytes;
  bool hout_failed;
};

/* Page-locked output memory of all plans of a state stays under this; past
 * it outputs are downloaded into new pageable tensors. */
#define CU_PINNED_MAX ((int64_t)512 << 20)

/* A plan for inputs in[] (new, not yet in the state's list). */
ait_status cu_plan_create(cu_state *s, const ait_tensor *const *in, int n_in, cu_plan **out);
void cu_plan_free(cu_plan *p);
/* Steps and tensors of p as text (new string, NULL on out-of-memory). */
char *cu_plan_describe(const cu_plan *p);
/* Signature of inputs for g: types and shapes, plus the values of host
 * inputs. sig must hold cu_signature_cap() entries. */
uint64_t cu_signature(const ait_graph *g, const ait_tensor *const *in, int n_in, int64_t *sig,
                      int *n_sig);
int cu_signature_cap(const ait_tensor *const *in, int n_in);
/* Value v is a graph input small and integer enough to be a shape operand
 * (declared int32/int64 with at most CU_HOST_INPUT_MAX elements): its
 * values are known while planning and belong to the plan's signature. */
bool cu_host_input(const ait_graph *g, int v);
#define CU_HOST_INPUT_MAX 8

/* Attention found in a plan graph (cuda_attn.c): Softmax(scale * Q Kt +
 * mask) V, run as one kernel (fused) or as GEMM, masked softmax, GEMM. */
typedef struct cu_attn_match {
  int pv, sm, sc;             /* nodes: P.V MatMul, Softmax, scores MatMul */
  int q, k, v, out;           /* values read / written (transposes absorbed) */
  int qax[4], kax[4], vax[4]; /* axis of q/k/v for batch, head, row, d */
  int oax[4];                 /* axis of out for batch, head, row, d */
  int mask;                   /* value, or -1 */
  int mask2;                  /* with a windowed mask: the plain one added to it, or -1 */
  int64_t mw;                 /* windowed mask: batch b reads window b % mw (0: plain) */
  int sm_in;                  /* value the masked softmax reads: the scores product's */
  bool z_mask;                /* the mask is the scores FusedMatMul's Z */
  float scale;
  bool fused;
  /* Q, K and V are Reshapes of one Split of qkv [B, S, 3N] (cu_pass_qkv):
   * read in place at these element offsets (-1: not so) */
  int qkv;
  int64_t qkv_off[3];
} cu_attn_match;

enum {
  CU_ROLE_NONE = 0,
  CU_ROLE_SKIP,
  CU_ROLE_ATTN,
  CU_ROLE_NO_Z,
  CU_ROLE_MASKED_SOFTMAX,
  CU_ROLE_SILU,       /* a Sigmoid, the first node of x * Sigmoid(x) (cu_find_gates) */
  CU_ROLE_HARD_SWISH, /* the Add of a spelled-out HardSwish */
  CU_ROLE_CONV_GATE   /* a 2-D Conv whose output only a SiLU / HardSwish reads: its activation */
};

/* Planner helpers for lowering functions (cuda_plan.c). */
typedef struct cu_planner {
  cu_state *s;
  cu_plan *p;
  ait_graph *g;      /* == p->pg */
  signed char *role; /* per node: CU_ROLE_* */
  int *match;        /* per node: index into m, or -1 */
  cu_attn_match *m;
  int n_m;
} cu_planner;

/* Merge the Q, K and V projections of attention into one GEMM and a Split
 * (cuda_qkv.c); *merged counts the merges. */
ait_status cu_pass_qkv(ait_graph *g, const cu_opts *o, int *merged);

/* Find attention patterns in pl->g and set roles (cuda_attn.c). */
/* dtype=fp8: when tensor y is written by a LayerNormalization step that can
 * also write y's absmax partials (cuk_layernorm's part), make it write them
 * into the scale buffer sc (at sc + 8) and return their count; else 0. */
int cu_layernorm_amax(cu_planner *pl, int y, int sc);
ait_status cu_find_attention(cu_planner *pl);
ait_status cu_lower_attention(cu_planner *pl, const ait_node *n);
ait_status cu_lower_masked_softmax(cu_planner *pl, const ait_node *n);

/* Tensor of value v in layout want (a conversion step is added when the
 * value lives in the other layout; constants are uploaded on first use). */
ait_status cu_in(cu_planner *pl, int v, cu_layout want, int *t);
/* Like cu_in with want = the layout the value already has. */
ait_status cu_in_any(cu_planner *pl, int v, int *t);
/* New arena tensor for value v (dims from the plan graph, which must be
 * concrete), registered as the value's tensor in layout lay. */
ait_status cu_out(cu_planner *pl, int v, cu_layout lay, int *t);
/* New arena tensor not tied to a value. */
ait_status cu_temp(cu_planner *pl, ait_dtype dt, int rank, const int64_t *dims, cu_layout lay,
                   int *t);
/* Value v as a view of tensor src (plain layout) with v's dims. */
ait_status cu_view(cu_planner *pl, int v, int src);
/* Device copy in format fmt of value v, a constant of the plan graph: the
 * state's weight when v is one, else a copy the plan owns. */
ait_status cu_const_weight(cu_planner *pl, int v, cu_wfmt fmt, void **ptr);
/* Tensor src (plain layout) seen with other dims of the same size. */
ait_status cu_view_dims(cu_planner *pl, int src, int rank, const int64_t *dims, int *t);
/* Value v (dims from the plan graph) as the bytes of tensor src (plain)
 * from byte off on: a contiguous part of src, no copy. */
ait_status cu_view_part(cu_planner *pl, int v, int src, int64_t off);
/* Tensor src's bytes, in any layout, seen as dims in layout lay: where the
 * caller knows both orders of the elements agree (a 1-D convolution's
 * channels-last image and the [N, L, C] transpose of its result); the
 * tensor of value v in that layout when v >= 0. */
ait_status cu_view_as(cu_planner *pl, int src, int rank, const int64_t *dims, cu_layout lay, int v,
                      int *t);
/* Constant bytes for this plan (e.g. per-channel float32 parameters). */
ait_status cu_const_raw(cu_planner *pl, ait_dtype dt, int rank, const int64_t *dims,
                        const void *data, int *t);
/* Append a step; *st points at it until the next append. prm is taken over
 * (freed on failure too). */
ait_status cu_step_add(cu_planner *pl, int node, const char *what, cu_step_fn run, void *prm,
                       cu_step **st);
void cu_step_use(cu_step *st, int t);
/* Host value of input k of node n when known while planning, else NULL. */
const ait_tensor *cu_host_value(cu_planner *pl, const ait_node *n, int k);
/* Storage type on the device of a value of ONNX type dt. */
ait_dtype cu_store_type(const cu_state *s, ait_dtype dt);
/* Logical element strides of tensor t (layout aware). */
void cu_strides(const cu_tensor *t, int64_t *st);
static inline void *cu_ptr(cu_plan *p, int t) { return p->t[t].ptr; }
static inline int64_t cu_numel(const cu_tensor *t) { return ait_shape_numel(t->rank, t->dims); }

/* Copy src to a new tensor in layout lay (or a dtype change); *t receives it. */
ait_status cu_convert(cu_planner *pl, int src, ait_dtype dt, cu_layout lay, int *t);

/* ---- the op table (cuda_ops.c) ------------------------------------------- */

/* Extra conditions of an op on node n of g; memo as for cu_value_static. */
typedef bool (*cu_check_fn)(const ait_graph *g, const ait_node *n, signed char *memo, char *why,
                            size_t len);
typedef ait_status (*cu_lower_fn)(cu_planner *pl, const ait_node *n);

typedef struct cu_op_row {
  const char *domain, *op;
  cu_check_fn check; /* NULL: no extra condition */
  cu_lower_fn lower;
} cu_op_row;

const cu_op_row *cu_op_find(const char *domain, const char *op);
bool cu_dtype_ok(ait_dtype dt);
/* supports() for node n of g (cuda_support.c). */
bool cu_supports_node(const ait_graph *g, const ait_node *n, char *why, size_t len);
/* Value v of g is known while planning: a constant, or computed on the host
 * from shapes and constants only (Shape -> Gather -> Concat chains); memo
 * holds one byte per value of g (0 = not yet known). */
bool cu_value_static(const ait_graph *g, int v, signed char *memo);
/* Node n can be computed on the host while planning. */
bool cu_node_static(const ait_graph *g, const ait_node *n, signed char *memo);
/* Results up to this many elements computed on the host while planning are
 * kept as constants of the plan; bigger ones run on the device. */
#define CU_FOLD_MAX 65536
/* ... and results of ops without a CUDA kernel (ScatterND building swin_t's
 * attention masks from shapes) up to this many, whose dims supports() may
 * not know yet: past it the plan fails, naming the node. */
#define CU_FOLD_HOST_MAX ((int64_t)1 << 24)

/* Lowerings (cuda_lower.c, cuda_lower_ew.c, cuda_gemm.c, cuda_conv.c). */
ait_status cu_lower_view(cu_planner *pl, const ait_node *n);
ait_status cu_lower_transpose(cu_planner *pl, const ait_node *n);
ait_status cu_lower_slice(cu_planner *pl, const ait_node *n);
ait_status cu_lower_expand(cu_planner *pl, const ait_node *n);
ait_status cu_lower_concat(cu_planner *pl, const ait_node *n);
ait_status cu_lower_split(cu_planner *pl, const ait_node *n);
ait_status cu_lower_gather(cu_planner *pl, const ait_node *n);
ait_status cu_lower_cast(cu_planner *pl, const ait_node *n);
ait_status cu_lower_fill(cu_planner *pl, const ait_node *n);
ait_status cu_lower_softmax(cu_planner *pl, const ait_node *n);
ait_status cu_lower_layernorm(cu_planner *pl, const ait_node *n);
ait_status cu_lower_batchnorm(cu_planner *pl, const ait_node *n);
ait_status cu_lower_pool(cu_planner *pl, const ait_node *n);
ait_status cu_lower_global_pool(cu_planner *pl, const ait_node *n);
ait_status cu_lower_unary(cu_planner *pl, const ait_node *n);
ait_status cu_lower_binary(cu_planner *pl, const ait_node *n);
ait_status cu_lower_where(cu_planner *pl, const ait_node *n);
ait_status cu_lower_gemm(cu_planner *pl, const ait_node *n);
ait_status cu_lower_matmul(cu_planner *pl, const ait_node *n);
ait_status cu_lower_conv(cu_planner *pl, const ait_node *n);
ait_status cu_lower_reduce(cu_planner *pl, const ait_node *n);
ait_status cu_lower_variadic(cu_planner *pl, const ait_node *n);
/* cuda_lower23.c: the opset-23 transformer ops */
ait_status cu_lower_rmsnorm(cu_planner *pl, const ait_node *n);
ait_status cu_lower_rope(cu_planner *pl, const ait_node *n);
ait_status cu_lower_onnx_attention(cu_planner *pl, const ait_node *n);
bool cu_is_reduce(const char *op);
/* cuda_lower_pad.c: Pad, Resize, InstanceNormalization (kernels in cuda_pad.cu) */
ait_status cu_lower_pad(cu_planner *pl, const ait_node *n);
ait_status cu_lower_resize(cu_planner *pl, const ait_node *n);
ait_status cu_lower_instnorm(cu_planner *pl, const ait_node *n);
/* The activation of an InstanceNormalization or FusedInstanceNorm node as a
 * cuk unary code and its parameters; false when it has no kernel. */
bool cu_instnorm_act(const ait_node *n, int *code, float *ap);
/* Pad's mode (cuk_pad's code), Resize's coordinate transformation and
 * nearest rounding (CUK_RS_*) by their ONNX names; -1 for others. */
int cu_pad_mode(const char *mode);
int cu_resize_coord(const char *ct);
int cu_resize_nearest(const char *nm);

/* An elementwise step out = act(op(in...)) with numpy broadcasting of the
 * inputs (tensor indices) to out's logical shape, any layouts. */
ait_status cu_emit_eltwise(cu_planner *pl, int node, const char *what, int op, const float *p,
                           const int *in, int n_in, int out, int act, const float *ap, float beta);
/* Per-channel epilogue step on tensor y (in place): channel axis `axis` of
 * y's logical shape; scale/shift are float32 tensors or -1; z a tensor of
 * y's shape and layout or -1. */
ait_status cu_emit_epilogue(cu_planner *pl, int node, const char *what, int x, int y, int axis,
                            int scale, int shift, int z, const ait_act *act);
/* Under NHWC a 1-D convolution (and an InstanceNormalization of rank-3
 * data) registers its channels-last result [N, C, 1, L] as the NHWC tensor
 * of its rank-3 output value: its image, which the next such node reads
 * instead of a layout round trip (cu_in never hands it out, it takes rank-3
 * values in the plain layout only). The image of value v, or -1. */
int cu_conv1d_image(cu_planner *pl, int v);
/* Every reader of value v reads its image (1-D convolutions, rank-3
 * InstanceNormalizations and Transposes [N, C, L] -> [N, L, C], as their
 * data only) and v is no graph output: v's plain tensor is not needed. */
bool cu_conv1d_readers_only(const cu_planner *pl, int v);
/* Node n is a Transpose of rank-3 data by perm (0, 2, 1). */
bool cu_transpose_021(const ait_graph *g, const ait_node *n);
/* cuk op code of a binary ONNX op ("Add" -> CUK_ADD), or -1. */
int cu_binary_code(const char *op_type);
/* A strided-copy step: dst (contiguous, its dims) from src read at
 * base + sum(coord_k * st[k]) elements. */
ait_status cu_emit_copy(cu_planner *pl, int node, const char *what, int src, int dst, int64_t base,
                        const int64_t *st);
/* A GEMM another step runs (cuda_gemm.c; convolutions in NHWC):
 * Y[M, N] = act(X[M, K] W[N, K]^T + bias + Z) on tensors x, w, y, z (row
 * major; an NHWC tensor is [N * H * W, C]); bias_v a constant value of N
 * numbers or -1, z a tensor of Y's size or -1. The owner chooses its
 * algorithm in its prep (*ms: the measured time, 0 when not measured), runs
 * it, declares its tensors and frees it. */
typedef struct gemm_prm cu_gemm;
ait_status cu_gemm_nt(cu_planner *pl, int x, int w, int bias_v, int z, int y, int64_t M, int64_t N,
                      int64_t K, int act, const float *ap, cu_gemm **out);
ait_status cu_gemm_choose(cu_state *s, cu_plan *p, cu_gemm *g, float *ms);
ait_status cu_gemm_exec(cu_state *s, cu_plan *p, cu_gemm *g);
void cu_gemm_uses(cu_step *st, const cu_gemm *g);
void cu_gemm_free(cu_gemm *g);
/* A tensor over device memory the state owns (a weight in another format). */
ait_status cu_weight_tensor(cu_planner *pl, ait_dtype dt, int rank, const int64_t *dims, void *ptr,
                            int *t);

/* cuk activation code of a fused activation; false when there is none. */
bool cu_act_code(const ait_act *a, int *code, float *p);
/* The activations cu_act_code lowers, as native's fusion pass reads them. */
extern const nat_accepts cu_accepts;

/* ---- execution (cuda_exec.c) -------------------------------------------- */

ait_status cu_plan_run(cu_state *s, cu_plan *p);
ait_status cu_infer(cu_state *s, const ait_tensor *const *in, int n_in, ait_tensor **out);
/* Time fn over reps runs on the state's stream (after one warm-up); the
 * median in *ms. fn returns AIT_OK or a failure that ends the measurement. */
ait_status cu_time(cu_state *s, ait_status (*fn)(void *arg), void *arg, int reps, float *ms);

/* ---- dtype=fp8wo (cuda_fp8wo.c) ------------------------------------------ */

/* Input 1 of node n of g (MatMul, Gemm or their fused forms) is a weight
 * dtype=fp8wo keeps in e4m3: a constant 2-D float matrix of g; *nk: it is
 * stored [N, K] (Gemm with transB), else [K, N]. */
bool cu_fp8wo_site(const ait_graph *g, const ait_node *n, bool *nk);
/* The bfloat16 B operand of GEMM node n whose weight, value v of the plan
 * graph, is an fp8wo site of the state's graph: an arena temporary of v's
 * dims (*t) and a step before the GEMM that dequantizes the state's e4m3
 * weight into it. Weights at rest take half of bf16's bytes (plus a float
 * per channel); the arena holds one bf16 weight at a time. */
ait_status cu_fp8wo_operand(cu_planner *pl, const ait_node *n, int v, bool nk, int *t);
/* The e4m3 image of value v of s->g (codes, padding to 16 bytes, the
 * scales): from s->wo when loaded, else quantized now (new buffer). */
ait_status cu_fp8wo_image(const cu_state *s, int v, bool nk, void **img, int64_t *bytes);
/* Every fp8wo weight of s->g as the saved file keeps it (*w: new array of
 * *n, ait_cuda_e4m3w_free). */
ait_status cu_fp8wo_collect(const cu_state *s, ait_cuda_e4m3w **w, int *n);
/* Check weights read from a saved folder against s->g (every fp8wo site has
 * one, names and dims agree) and keep them in s->wo (taken over). */
ait_status cu_fp8wo_adopt(cu_state *s, ait_cuda_e4m3w *w, int n, const char *path);

/* ---- save / load (cuda_save.c) ------------------------------------------- */

ait_status cu_save(cu_state *s, const char *dir);
ait_status cu_load_algos(cu_state *s, const char *dir);
/* dtype=fp8wo: read cuda_fp8w.bin (the e4m3 weights save() wrote) into
 * s->wo, checked against s->g; nothing for other precisions. */
ait_status cu_load_fp8wo(cu_state *s, const char *dir);

/* SiLU (ait_match_silu) and the spelled-out HardSwish (ait_match_hard_swish)
 * in pl->g: each gate's first node gets CU_ROLE_SILU / CU_ROLE_HARD_SWISH,
 * the rest CU_ROLE_SKIP (cuda_lower_ew.c); run after cu_find_attention. */
ait_status cu_find_gates(cu_planner *pl);
/* A gate marked so, from its first node, as one elementwise step. */
ait_status cu_lower_gate(cu_planner *pl, const ait_node *n);
/* The output value of the SiLU or HardSwish on x (a CU_ROLE_CONV_GATE
 * Conv's output) and the activation that computes it (*op, parameters p[2]),
 * or -1. */
int cu_gate_after_conv(cu_planner *pl, int x, int *op, float *p);

#endif
