/* Private interface of the `onednn` backend (src/backends/onednn/).
 *
 *   backend_onednn.c  the backend table row: options, threads, build, infer
 *   onednn_support.c  supports(): value classes and the per-op checks
 *   onednn_lower.c    graph -> op list: one op per primitive, fused chains
 *   onednn_fuse.c     post-op chains (activations, residuals, GELU, SiLU)
 *   onednn_fold.c     build-time folding: constant nodes, BatchNorm and
 *                     per-channel affine ops into Conv weights and bias
 *   onednn_plan.c     plans per input signature: views, shape glue, arena
 *   onednn_shape.c    output shapes of ops for a signature
 *   onednn_mem.c      memory descriptors, buffers, reorders, weight cache
 *   onednn_prim.c     primitives: conv, matmul, pooling, norms, softmax
 *   onednn_elt.c      eltwise, binary, concat and post-op attributes
 *   onednn_exec.c     running a plan; host steps (reference kernels)
 *   onednn_io.c       save/load: reordered weights in a checked binary file
 *
 * Model: build() lowers the graph once into ops (dn_op) over the graph's
 * value indices. Constants fold at build. A plan per input signature gives
 * every value its shape and oneDNN memory descriptor (blocked layouts chosen
 * by the primitives, format `any`), creates the primitives and the reorders
 * between them, and places activations in one arena by liveness. Weights are
 * reordered once into the layout a primitive asks for and kept in a cache
 * that survives plans and is saved with the state.
 *
 * Ownership: the state borrows the caller's graph (it outlives the state)
 * and owns everything else. */
#ifndef AIT_BACKENDS_ONEDNN_H
#define AIT_BACKENDS_ONEDNN_H

#include "backends/common/plan.h"
#include <oneapi/dnnl/dnnl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "backends/backend.h"
#include "core/error.h"
#include "ops/op.h"

#define DN_MAX_POST 8
#define DN_NEVER 0x3fffffff /* last use of a graph output */

/* ---- value classes and support (onednn_support.c) ---------------------- */

typedef enum dn_vclass {
  DN_V_RUNTIME = 0, /* computed at run time */
  DN_V_CONST = 1,   /* initializer, or computed from constants once at build */
  DN_V_STATIC = 2   /* computed from input shapes and constants once per plan */
} dn_vclass;

/* Deterministic node with a reference kernel and no subgraph: may run at
 * build or plan time. */
bool dn_node_foldable(const ait_node *n);
/* Class of every value of g (cls sized g->n_values), one topological pass. */
void dn_classify(const ait_graph *g, uint8_t *cls);
/* Number of node inputs reading v plus 1 if v is a graph output. */
int dn_value_uses(const ait_graph *g, int v);
bool dn_is_graph_output(const ait_graph *g, int v);
/* The float value of a constant scalar (1-element) input, or false. */
bool dn_const_scalar(const ait_graph *g, int v, float *out);

/* How a node maps onto oneDNN (for supports() and lowering). */
typedef enum dn_opk {
  DN_K_NONE = 0,
  DN_K_CONV,
  DN_K_MATMUL,
  DN_K_GEMM,
  DN_K_POOL,
  DN_K_UNARY,
  DN_K_BINARY,
  DN_K_SOFTMAX,
  DN_K_LNORM,
  DN_K_BNORM,
  DN_K_CONCAT,
  DN_K_VIEW,
  DN_K_TRANSPOSE,
  DN_K_HOST /* glue run with the reference kernel on plain buffers */
} dn_opk;

dn_opk dn_op_kind(const ait_node *n);
bool dn_supports(const ait_backend_config *cfg, const ait_graph *g, const ait_node *node, char *why,
                 size_t n);
/* Whether this CPU computes bf16 natively (avx512_bf16 or amx_bf16 in
 * /proc/cpuinfo and a oneDNN ISA with bf16); why says what is missing. */
bool dn_cpu_has_bf16(char *why, size_t n);

/* Whether a convolution is one oneDNN's Winograd kernels can take (and
 * conv=winograd asks for): fp32 work, one group, a 3x3 window (kernel dims
 * kd[2]), stride 1, no dilation. strides/dilations: 2 values, or NULL for
 * ONNX's default of ones. */
bool dn_wino_fits(int64_t group, int rank, const int64_t *kd, const int64_t *strides,
                  const int64_t *dilations);

/* ---- eltwise algorithms --------------------------------------------------- */

typedef struct dn_elt {
  dnnl_alg_kind_t alg;
  float alpha, beta;
} dn_elt;

/* The eltwise steps (1 or 2) computing unary node n on input 0; false when
 * n is not a unary op oneDNN computes (or its parameters are not constant). */
bool dn_unary_elts(const ait_graph *g, const ait_node *n, dn_elt *e, int *count);

/* ---- the lowered program (onednn_lower.c, onednn_fuse.c) -------------------- */

typedef enum dn_kind {
  DN_CONV,
  DN_MATMUL,
  DN_POOL,
  DN_ELTWISE,
  DN_BINARY,
  DN_SOFTMAX,
  DN_LNORM,
  DN_BNORM,
  DN_CONCAT,
  DN_VIEW,
  DN_TRANSPOSE,
  DN_HOST,  /* reference kernels at run time */
  DN_STATIC /* reference kernels once per plan (shape glue) */
} dn_kind;

typedef struct dn_post {
  bool binary;         /* binary with `operand`, else eltwise `e` */
  dn_elt e;            /* eltwise */
  dnnl_alg_kind_t alg; /* binary algorithm */
  int operand;         /* binary operand value, -1 when oslot is used */
  int oslot;           /* binary operand as a const slot (folded), -1 */
} dn_post;

typedef struct dn_op {
  dn_kind kind;
  int node;   /* primary node (messages, attributes) */
  int *nodes; /* every node the op covers, topological order */
  int n_nodes;
  int in[2];       /* data inputs of the primary: value indices, -1 absent */
  int *ins, n_ins; /* CONCAT inputs */
  int out;         /* the value the op produces */
  int w, b;        /* CONV/MATMUL weights and bias: const slots, -1 absent */
  bool trans_a, trans_b;
  dn_elt elt;          /* ELTWISE primary step */
  dnnl_alg_kind_t alg; /* BINARY / POOL / SOFTMAX algorithm */
  int axis;
  float eps;
  int scale, shift, mean, var; /* LNORM / BNORM const slots */
  dn_post post[DN_MAX_POST];
  int n_post;
  int *ext, n_ext; /* values read from outside the op (host fallback, liveness) */
} dn_op;

typedef struct dn_slot {
  ait_tensor *t;
  bool owned;
} dn_slot;

/* A weight reordered into the layout a primitive chose, kept across plans. */
typedef struct dn_wentry {
  int slot;
  dnnl_memory_desc_t md;
  void *data; /* 64-byte aligned, md size */
  size_t size;
} dn_wentry;

struct dn_plan;

/* What a state shares with its clones (onednn_clone): the reordered
 * weights, appended under lock as plans ask for layouts, never changed or
 * freed before the block; and, through the same pointers in every state,
 * the lowering (vclass, vslot, slots with their folded constants, ops,
 * last_use), immutable after dn_lower. Freed by the last state. */
typedef struct dn_shared {
  _Atomic int refs;
  void *lock; /* pthread_mutex_t, owned */
  dn_wentry *wc;
  int n_wc, cap_wc;
} dn_shared;

typedef struct dn_state {
  const ait_graph *g;
  bool bf16;
  bool wino; /* conv=winograd: try oneDNN's Winograd for 3x3 stride-1 convolutions */
  int threads;
  dnnl_engine_t eng;
  dnnl_stream_t stream;
  uint8_t *vclass; /* per value */
  int *vslot;      /* per value: const slot, -1 */
  dn_slot *slots;
  int n_slots, cap_slots;
  dn_op *ops;
  int n_ops, cap_ops;
  int *last_use;        /* per value: last op reading it, DN_NEVER for outputs, -1 unused */
  dn_shared *sh;        /* owned with the state's clones */
  ait_plan_cache plans; /* dn_plan by input signature (common/plan.h) */
} dn_state;

/* Lower s->g into s->ops: classify values, fold constants, build the ops
 * with their fused chains, order them, and compute last uses. Loading does
 * the same (it is cheap); only the reordered weights come from the file. */
ait_status dn_lower(dn_state *s);
void dn_ops_free(dn_state *s);
/* Add slot for tensor t (owned or borrowed). Returns its index or -1. */
int dn_slot_add(dn_state *s, ait_tensor *t, bool owned);
/* Extend op's chain from its current output along single-use consumers:
 * eltwise activations, binary ops with constants or other tensors, GELU and
 * SiLU patterns. `taken` marks nodes already owned by an op. */
ait_status dn_fuse_chain(dn_state *s, dn_op *op, bool *taken, int *pos);
/* Append node index to op->nodes. */
ait_status dn_op_add_node(dn_op *op, int node);
/* The binary algorithm of Add/Sub/Mul/Div/Max/Min (undef otherwise). */
dnnl_alg_kind_t dn_binary_alg(const char *op);
/* GELU (erf form) or SiLU starting at value x, all its nodes untaken:
 * the eltwise step, the nodes (n of them) and the result value y. */
bool dn_match_pattern(const dn_state *s, int x, const bool *taken, dn_elt *e, int *nodes, int *n,
                      int *y);

/* ---- folding (onednn_fold.c) ------------------------------------------ */

/* Run every foldable node whose inputs are all constant; outputs become
 * owned slots. */
ait_status dn_fold_constants(dn_state *s);
/* Fold BatchNormalization / per-channel Mul/Add/Sub/Div constants that
 * follow a Conv into its weights and bias (new owned slots). Returns
 * whether `n` was folded. */
ait_status dn_fold_into_conv(dn_state *s, dn_op *op, const ait_node *n, bool *folded);
/* Fold a constant bias Add after MatMul/Gemm into op->b. */
ait_status dn_fold_into_matmul(dn_state *s, dn_op *op, const ait_node *n, bool *folded);

/* ---- plans (onednn_plan.c, onednn_mem.c) ------------------------------------ */

typedef enum dn_buf_kind {
  DN_BUF_ARENA = 0, /* placed in the plan's arena by liveness */
  DN_BUF_INPUT,     /* graph input io: the caller's tensor */
  DN_BUF_OUTPUT,    /* graph output io: the new output tensor */
  DN_BUF_FIXED      /* constant data: ptr (owned when owns) */
} dn_buf_kind;

typedef struct dn_buf {
  dn_buf_kind kind;
  int io;
  int64_t size, offset;
  int first, last; /* steps touching it */
  int last_reader; /* last op reading any value stored in it */
  void *ptr;
  bool owns;
} dn_buf;

typedef struct dn_mem {
  dnnl_memory_desc_t md; /* ndims == 0 for host-only dtypes (int64, bool, ...) */
  dnnl_memory_t m;       /* NULL for host-only */
  ait_dtype dt;
  int rank;
  int64_t dims[AIT_MAX_RANK];
  int buf;
} dn_mem;

typedef struct dn_pval {
  int rank;
  int64_t dims[AIT_MAX_RANK];
  ait_dtype dt;
  int mem;          /* canonical memory of a runtime value, -1 */
  ait_tensor *host; /* CONST / STATIC data */
  bool host_owned;
} dn_pval;

typedef enum dn_step_kind { DN_STEP_PRIM, DN_STEP_HOST, DN_STEP_COPY } dn_step_kind;

typedef struct dn_step {
  dn_step_kind kind;
  dnnl_primitive_t prim;
  int n_args;
  int *arg_ids, *arg_mems;
  dnnl_exec_arg_t *xargs;
  int op;       /* HOST: the op whose nodes run */
  int *in_mems; /* HOST: per op->ext, the memory (or -1: pval host tensor) */
  int out_mem;  /* HOST / COPY destination */
  int src_mem;  /* COPY source */
} dn_step;

typedef struct dn_reo {
  int value, mem;
} dn_reo;

typedef struct dn_plan {
  dn_pval *pv; /* per value */
  dn_buf *bufs;
  int n_bufs, cap_bufs;
  dn_mem *mems;
  int n_mems, cap_mems;
  dn_step *steps;
  int n_steps, cap_steps;
  dn_reo *reo; /* reorder cache: value -> memory in another layout */
  int n_reo, cap_reo;
  int *out_mem; /* per graph output */
  void *arena;
  int64_t arena_bytes;
  void *scratch;
  int64_t scratch_bytes;
  dnnl_memory_t scratch_mem;
  int64_t runs;
} dn_plan;

/* Build context while planning: the op being planned. */
typedef struct dn_ctx {
  dn_state *s;
  dn_plan *p;
  int op; /* index of the op being planned */
} dn_ctx;

ait_status dn_plan_make(dn_state *s, const ait_tensor *const *in, int n_in, dn_plan **out);
void dn_plan_free(dn_plan *p);
void dn_plans_clear(dn_state *s);

/* Memory descriptors. */
dnnl_data_type_t dn_dt(ait_dtype dt); /* dnnl_data_type_undef when none */
ait_status dn_md_plain(dnnl_memory_desc_t *md, int rank, const int64_t *dims, dnnl_data_type_t dt);
bool dn_md_is_plain(const dnnl_memory_desc_t *md);       /* no inner blocks, any strides */
bool dn_md_is_plain_dense(const dnnl_memory_desc_t *md); /* row-major, no gaps */
bool dn_md_is_dense(const dnnl_memory_desc_t *md);       /* plain dense or blocked */
dnnl_memory_desc_t dn_md_with_dt(const dnnl_memory_desc_t *md, dnnl_data_type_t dt);
/* Plain md of rank r (>= md's) with leading dims of size 1. */
ait_status dn_md_expand(const dnnl_memory_desc_t *md, int r, dnnl_memory_desc_t *out);
ait_status dn_check(dnnl_status_t st, const char *what);

/* Buffers and memories of a plan. */
int dn_buf_new(dn_plan *p, dn_buf_kind kind, int64_t size);
int dn_mem_new(dn_ctx *c, const dnnl_memory_desc_t *md, int buf);
int dn_mem_host(dn_ctx *c, ait_dtype dt, int rank, const int64_t *dims, int buf);
/* A new arena buffer and memory for md (output of the op being planned). */
int dn_mem_alloc(dn_ctx *c, const dnnl_memory_desc_t *md);
/* Make mem the canonical memory of value v (and record its last reader). */
void dn_set_value(dn_ctx *c, int v, int mem);
/* Memory holding value v in layout want (reorders once, cached); for
 * constants the reorder runs now into a fixed buffer. */
ait_status dn_value_in(dn_ctx *c, int v, const dnnl_memory_desc_t *want, int *mem);
/* Memory of value v in whatever layout it has (constants: plain). */
ait_status dn_value_any(dn_ctx *c, int v, int *mem);
/* Memory of v in a dense layout (plain dense when plain is true). */
ait_status dn_value_dense(dn_ctx *c, int v, bool plain, dnnl_data_type_t dt, int *mem);
/* Whether the op being planned may overwrite v's storage: v dies here, its
 * buffer is an arena buffer holding nothing read later. */
bool dn_can_overwrite(dn_ctx *c, int v);
/* Reordered weight slot in layout md (cache, else reorder now). */
ait_status dn_weights(dn_ctx *c, int slot, const dnnl_memory_desc_t *plain,
                      const dnnl_memory_desc_t *md, int *mem);
/* Add a primitive step from pd with arguments (ids[i], mems[i]). */
ait_status dn_step_prim(dn_ctx *c, dnnl_primitive_desc_t pd, int n, const int *ids,
                        const int *mems);
ait_status dn_step_add(dn_plan *p, dn_step **out);
/* Execute a reorder now (constant data): src -> dst pointers. */
ait_status dn_reorder_now(dn_state *s, const dnnl_memory_desc_t *smd, void *src,
                          const dnnl_memory_desc_t *dmd, void *dst);
/* A new attribute with user scratchpad mode; NULL on failure. */
dnnl_primitive_attr_t dn_attr_new(void);
/* Implementation name of pd ("jit:avx512_core", ...). */
const char *dn_impl(const_dnnl_primitive_desc_t pd);

/* ---- primitives (onednn_prim.c, onednn_elt.c) -------------------------------- */

/* Output shape of op (runtime ops) from its inputs' plan values. */
ait_status dn_op_shape(dn_ctx *c, const dn_op *op, int *rank, int64_t *dims, ait_dtype *dt);
ait_status dn_plan_conv(dn_ctx *c, const dn_op *op);
ait_status dn_plan_matmul(dn_ctx *c, const dn_op *op);
ait_status dn_plan_pool(dn_ctx *c, const dn_op *op);
ait_status dn_plan_softmax(dn_ctx *c, const dn_op *op);
ait_status dn_plan_lnorm(dn_ctx *c, const dn_op *op);
ait_status dn_plan_bnorm(dn_ctx *c, const dn_op *op);
ait_status dn_plan_eltwise(dn_ctx *c, const dn_op *op);
ait_status dn_plan_binary(dn_ctx *c, const dn_op *op);
ait_status dn_plan_concat(dn_ctx *c, const dn_op *op);

/* Dims d of rank r as rank out_rank: leading 1s added, or leading dims
 * merged (a [b, s, n] operand of a matmul flattened to [b*s, n]). */
void dn_fit_rank(int r, const int64_t *d, int out_rank, int64_t *e);

/* Post-ops of op from index `from` as an attribute: binary operands are
 * resolved to memories (ids/mems appended at *n). Post-ops that oneDNN
 * refuses for pd are planned as standalone in-place steps by
 * dn_plan_posts_after(). dst_md: the primitive's destination. */
typedef struct dn_postset {
  dnnl_primitive_attr_t attr;
  int n_fused;          /* post-ops in attr */
  int ids[DN_MAX_POST]; /* execution args of binary operands */
  int mems[DN_MAX_POST];
  int n_args;
  int sum_value; /* value the sum post-op reads (-1 none) */
  int sum_index; /* its index among the post-ops */
} dn_postset;

/* Attribute holding op's post-ops [0, count) for a destination of rank
 * out_rank/dims out_dims; sum_ok lets a same-shape Add become a sum. */
ait_status dn_posts_attr(dn_ctx *c, const dn_op *op, int count, int out_rank,
                         const int64_t *out_dims, bool sum_ok, dn_postset *ps);
void dn_posts_free(dn_postset *ps);
/* Create pd with as many post-ops as oneDNN accepts (all, then fewer);
 * make(desc-specific) is called with each attribute. */
typedef ait_status (*dn_pd_fn)(dn_ctx *c, const dn_op *op, dnnl_primitive_attr_t attr, void *arg,
                               dnnl_primitive_desc_t *pd);
ait_status dn_pd_with_posts(dn_ctx *c, const dn_op *op, int out_rank, const int64_t *out_dims,
                            bool sum_ok, dn_pd_fn make, void *arg, dnnl_primitive_desc_t *pd,
                            dn_postset *ps);
/* Standalone in-place steps for op's post-ops [from, n_post) on memory dst. */
ait_status dn_plan_posts_after(dn_ctx *c, const dn_op *op, int from, int dst);
/* Destination of a primitive whose post-ops include a sum with value r:
 * r's storage when it may be overwritten (and is not one of the avoid
 * buffers the primitive reads), else a copy of r; else a new buffer. */
ait_status dn_dst_for(dn_ctx *c, const dnnl_memory_desc_t *md, int sum_value, int avoid_a,
                      int avoid_b, int *mem);

/* ---- execution (onednn_exec.c) ------------------------------------------ */

ait_status dn_plan_host(dn_ctx *c, int op_index);
ait_status dn_plan_run(dn_state *s, dn_plan *p, const ait_tensor *const *in, int n_in,
                       ait_tensor **out);

/* ---- threads (backend_onednn.c) ---------------------------------------- */

/* Set the OpenMP thread count for oneDNN calls on this thread; returns the
 * previous count for dn_threads_leave (0 when OpenMP is not reachable). */
int dn_threads_enter(int threads);
void dn_threads_leave(int prev);

/* ---- save / load (onednn_io.c) ----------------------------------------- */

ait_status dn_save(const dn_state *s, const char *dir);
ait_status dn_load_weights(dn_state *s, const char *dir);

#endif
