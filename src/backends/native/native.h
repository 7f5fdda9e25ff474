/* Private interface of the `native` backend (src/backends/native/).
 *
 *   backend_native.c  the backend table row: options, build, infer, save/load
 *   native_graph.c    graph copy, node/value editing helpers, compaction
 *   native_passes.c   constant folding, no-op removal, Conv+BatchNorm folding
 *   native_fuse.c     bias / residual / activation fusion into fused ops
 *   native_attn.c     attention (MatMul-Softmax-MatMul) into FusedAttention
 *   native_pool.c     the thread pool
 *   native_plan.c     plans per input signature: liveness and the arena
 *   native_exec.c     the executor: fast kernels, views, reference fallback
 *   native_kernels.c  which fast kernel runs which node
 *   native_gemm.c     parallel SGEMM (OpenBLAS) with fused epilogues, GEMV
 *   native_blas.c     GEMM providers: OpenBLAS, BLIS (dlopen)
 *   native_conv.c     Conv 1-3-D: blocked im2col/pointwise + SGEMM per group
 *   native_conv_dw.c  depthwise Conv: direct vector loops on phase planes
 *   native_conv_grp.c grouped Conv, 2-64 channels a group: register tiles
 *   native_conv_t.c   ConvTranspose: W^T X + col2im
 *   native_layout.c   the layout pass: CNNs (convs, pools, elementwise,
 *                     Concat) into NHWC
 *   native_nhwc.c     FusedConvNhwc: pointwise, depthwise, stem (AVX-512
 *                     tiles in native_nhwc512.c, AVX2 in native_nhwc256.c),
 *                     window and grouped convs (native_nhwc_win*.c),
 *                     depthwise of any window (native_nhwc_dw*.c),
 *                     Winograd F(2x2, 3x3) (native_nhwc_wino.c)
 *   native_nhwc_pool.c FusedPoolNhwc: MaxPool / AveragePool in NHWC
 *   native_concat.c   Concat, native_resize.c: Resize
 *   native_eltwise.c  elementwise binary and unary float32 kernels
 *   native_nn.c       pooling, Softmax, LayerNormalization, Transpose
 *   native_rnn.c      RNN, GRU, LSTM
 *   native_math.c     vectorisable exp / erf and activations
 *   native_isa.c      the ISA level kernels pick their paths by
 *
 * Ownership: the state owns its rewritten copy of the graph; the caller's
 * graph is never modified. */
#ifndef AIT_BACKENDS_NATIVE_H
#define AIT_BACKENDS_NATIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "backends/backend.h"
#include "backends/native/native_isa.h"
#include "core/error.h"
#include "ops/fused_impl.h"
#include "ops/op.h"

/* ---- graph editing (native_graph.c) ------------------------------------ */

/* Deep copy of g (values, initializers, nodes, attributes, subgraphs, opset
 * imports), parented to `parent`. With `borrow`, initializer tensors of the
 * copy are headers over g's data (g must outlive the copy; passes replace
 * initializers, never write into them). NULL with the last error set on
 * failure. */
ait_graph *nat_graph_clone(const ait_graph *g, ait_graph *parent, bool borrow);
/* Make n the fused op `op` (domain ai.aitune, opset 1; src/ops/fused.c):
 * its type and domain strings replaced, its definition looked up. n is
 * unchanged when memory runs short. */
ait_status nat_node_make_fused(ait_node *n, const char *op);
/* Set (add or replace) an attribute of node n. */
ait_status nat_attr_set_str(ait_node *n, const char *name, const char *v);
ait_status nat_attr_set_int(ait_node *n, const char *name, int64_t v);
ait_status nat_attr_set_float(ait_node *n, const char *name, float v);
ait_status nat_attr_set_floats(ait_node *n, const char *name, const float *v, int count);
ait_status nat_attr_set_ints(ait_node *n, const char *name, const int64_t *v, int count);
/* New initializer value named after `base` plus `suffix` (made unique),
 * taking ownership of t (freed on failure). Returns its index or -1. */
int nat_add_initializer(ait_graph *g, const char *base, const char *suffix, ait_tensor *t);
/* Free the contents of node n (not the node slot itself). */
void nat_node_clear(ait_node *n);
/* Drop the nodes with dead[i] set, then the values nothing refers to, and
 * sort the rest topologically (fills producers). */
ait_status nat_graph_compact(ait_graph *g, const bool *dead);
/* Point fused nodes (domain ai.aitune) without a registry row at theirs,
 * and make sure the graph imports the ai.aitune domain when it has any. */
ait_status nat_resolve_fused(ait_graph *g);
/* The value is a true constant: an initializer, not a folded guess. */
static inline bool nat_is_const(const ait_graph *g, int v) {
  return v >= 0 && g->values[v].init && g->values[v].producer < 0 &&
         g->values[v].init->kind == AIT_KIND_TENSOR;
}

/* Use counts for rewriting passes: consumers per value among live nodes
 * (plus reads from subgraphs, which pin a value), and which values are graph
 * outputs. Arrays are sized to the graph's values when refreshed. */
typedef struct nat_uses {
  ait_graph *g;
  bool *dead;    /* per node */
  int *uses;     /* per value: number of reading node inputs (+1 per subgraph read) */
  int *consumer; /* per value: one reading node (any) */
  bool *is_out;  /* per value: graph output */
  int n_nodes_cap, n_values_cap;
} nat_uses;

ait_status nat_uses_refresh(nat_uses *u);
void nat_uses_free(nat_uses *u);
/* Value v has exactly one reader, which is node `at`, and is not a graph
 * output: the producer may absorb that reader. */
static inline bool nat_single_use(const nat_uses *u, int v, int at) {
  return v >= 0 && u->uses[v] == 1 && u->consumer[v] == at && !u->is_out[v];
}

/* ---- passes (native_passes.c, native_fuse.c) --------------------------- */

typedef struct nat_pass_stats {
  int folded, removed, bn_folded, fused;
  int relayout; /* convs moved to NHWC by nat_pass_layout */
  int blocks;   /* of those, inverted residual blocks fused */
} nat_pass_stats;

/* All passes in order, on graph g (a copy the backend owns). The attention
 * rewrite (FusedAttention) is native's own: other users of these passes
 * (cuda) lower attention themselves, so nat_run_passes leaves it out. */
ait_status nat_run_passes(ait_graph *g, nat_pass_stats *stats);
ait_status nat_run_passes_ex(ait_graph *g, nat_pass_stats *stats, bool attention);
ait_status nat_pass_fold_constants(nat_uses *u, nat_pass_stats *s);
ait_status nat_pass_remove_noops(nat_uses *u, nat_pass_stats *s);
ait_status nat_pass_fold_batchnorm(nat_uses *u, nat_pass_stats *s);
ait_status nat_pass_fuse(nat_uses *u, nat_pass_stats *s);
ait_status nat_pass_attention(nat_uses *u, nat_pass_stats *s);
/* Epilogue programs and FusedUnary (native_fuse.c); native only. */
ait_status nat_pass_epilogue(nat_uses *u, nat_pass_stats *s);
/* Chains of convs holding a depthwise conv into FusedConvNhwc nodes, with
 * Transposes at their edges (native_layout.c). Runs on a compacted graph
 * after the other passes, and compacts it again. */
ait_status nat_pass_layout(ait_graph *g, nat_pass_stats *s);
/* The size of a block's expanded activations (bytes per image) from which
 * the layout pass fuses it into FusedInvertedResidual (default 0: every
 * block); for tests. */
void nat_layout_set_block_bytes(int64_t bytes);
/* Whether a block's stem conv (dw right after it) joins the block (default
 * on); for tests. */
void nat_layout_set_fuse_stems(bool on);

/* ---- thread pool (native_pool.c) --------------------------------------- */

typedef struct nat_pool nat_pool;
/* fn(arg, task, tid): task in [0, n_tasks), tid in [0, threads). */
typedef void (*nat_task_fn)(void *arg, int64_t task, int tid);

/* A pool running tasks on `threads` threads (the caller is one of them).
 * NULL with the last error set on failure. */
nat_pool *nat_pool_new(int threads);
void nat_pool_free(nat_pool *p);
int nat_pool_threads(const nat_pool *p);
/* Run fn for every task and return when all are done. p may be NULL (runs
 * on the caller). Tasks must not fail; they get their memory up front. */
void nat_pool_run(nat_pool *p, int64_t n_tasks, nat_task_fn fn, void *arg);
/* Idle workers go to sleep now instead of spinning (~100k polls) for the
 * next job: the caller is about to run something else (another backend's
 * threads) on these cores. The next nat_pool_run wakes them. p may be NULL. */
void nat_pool_park(nat_pool *p);

/* ---- per-node dispatch (native_kernels.c) ------------------------------ */

typedef struct nat_run nat_run;

/* A fast kernel: reads in[], asks the executor for its outputs with
 * nat_output(), fills them. Returns AIT_E_UNSUPPORTED *before* asking for an
 * output when the inputs are outside what it handles: the executor then
 * falls back to the reference kernel. */
typedef ait_status (*nat_kernel)(nat_run *r, const ait_node *n, const ait_tensor *const *in,
                                 int n_in);

typedef enum nat_node_kind {
  NAT_REF = 0, /* the registry's reference kernel */
  NAT_FAST,    /* a native kernel (may still fall back per run) */
  NAT_VIEW     /* output 0 is input 0's data with another shape */
} nat_node_kind;

typedef struct nat_node {
  nat_node_kind kind;
  nat_kernel fast;
} nat_node;

/* Another backend running its rewritten graph on this executor (quant: its
 * ai.aitune.quant ops beside native's kernels for everything else). kernel()
 * claims a node by returning the kernel that runs it (NULL: not claimed);
 * claimed nodes need no registry row, and their kernels must not decline
 * (there is no reference to fall back to). Kernels reach `user` through
 * nat_run_user(). */
typedef struct nat_ext {
  nat_kernel (*kernel)(void *user, const ait_graph *g, const ait_node *n);
  void *user;
} nat_ext;

/* How native runs node n of g. */
nat_node nat_dispatch(const ait_graph *g, const ait_node *n);
/* Output shape of a view node (Reshape, Flatten, Squeeze, Unsqueeze,
 * Identity) for input tensors in[]; AIT_E_UNSUPPORTED when it must fall back. */
ait_status nat_view_shape(const ait_node *n, const ait_tensor *const *in, int n_in, int *rank,
                          int64_t *dims);

/* ---- the executor (native_exec.c) -------------------------------------- */

/* A plan for one input signature: arena offsets by value. */
typedef struct nat_plan {
  uint64_t hash;
  int n_sig;
  int64_t *sig;    /* dtype, rank, dims... of every input */
  int64_t *offset; /* per value: arena offset, -1 = not in the arena */
  int64_t *size;   /* per value: bytes the plan holds */
  int64_t arena_bytes;
  int runs, misses;
  /* shape computations (Shape -> Gather -> Concat -> Reshape ...) depend on
   * the signature only: their results are kept and the nodes skipped, as
   * long as every Shape/Size node still sees the input shape it saw */
  ait_tensor **cache; /* per value, NULL when not cached; owned */
  int64_t *seen;      /* per node: rank and dims of a Shape/Size input */
  bool cached;
} nat_plan;

#define NAT_MAX_PLANS 8

/* C = alpha * op(A) * op(B), row-major, single-threaded (native_blas.c). */
typedef void (*nat_gemm_fn)(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                            const float *A, int64_t lda, const float *B, int64_t ldb, float *C,
                            int64_t ldc);
/* The provider named by option gemm ("openblas", "blis"); AIT_E_UNSUPPORTED
 * with the reason when its library cannot be loaded. */
ait_status nat_gemm_provider(const char *name, nat_gemm_fn *fn);
/* What gemm=auto (the default) resolves to here: "openblas", or "blis" when
 * OpenBLAS would run kernels below the CPU's ISA level and BLIS is
 * installed (with the reason in why, which may be NULL). */
const char *nat_gemm_auto(char *why, size_t n);
/* The providers are called from the pool's threads, so each must run
 * single-threaded; but OpenBLAS's (and BLIS's) thread count is one setting
 * for the whole process, which the program that loaded us (numpy...) owns.
 * A native run sets it to 1 between nat_blas_enter and nat_blas_leave
 * (counted: nested and concurrent runs share one window) and gives the
 * program back its own count when the last run ends; a count the program
 * changed meanwhile is left as it set it. */
void nat_blas_enter(void);
void nat_blas_leave(void);

/* What a state shares with its clones (native_clone): the rewritten graph
 * and the packed constants published by their runs. Immutable once
 * published; refcounted, freed by the last state that drops it. packs[]
 * (per node and kind, as nat_state.node_data) is read and written under
 * lock; an entry once set is never changed or freed before the block. */
typedef struct nat_shared {
  _Atomic int refs;
  ait_graph *g; /* owned */
  void *lock;   /* pthread_mutex_t, owned */
  void **packs; /* published node packs (owned), NULL until the first */
} nat_shared;

typedef struct nat_state {
  ait_graph *g;                 /* rewritten copy: shared->g, owned through shared */
  nat_shared *shared;           /* refcounted with the state's clones */
  nat_gemm_fn gemm;             /* the SGEMM provider */
  char gemm_name[32];           /* its option value when not the default, else "" */
  _Atomic long long gemm_calls; /* provider calls over all runs (native:gemm's unused_option) */
  int threads;                  /* resolved thread count */
  int isa;                      /* nat_isa_level of its runs (option isa) */
  bool fuse;                    /* passes enabled */
  bool gemv_pack;               /* one-row products over constants read a packed B (gemv=packed) */
  bool tiles;                   /* MatMuls of >= 16 rows on vector register tiles (tiles=on) */
  bool winograd;                /* 3x3 stride-1 NHWC convs as Winograd F(2x2, 3x3) (winograd=on) */
  bool has_subgraph;            /* control flow: bodies run on states of their own */
  nat_node *nodes;              /* per node of g */
  bool *shape_only;             /* per node: depends on input shapes and constants only */
  int *last;                    /* per value: last node reading its storage (views extend it) */
  int *root;                    /* per value: the value whose storage it views (itself if none) */
  int *free_at; /* values whose storage dies after node i: free_list[free_at[i]..] */
  int *free_list;
  struct nat_run *run; /* per-value run tables, reused between runs */
  /* built lazily, freed by deactivate */
  nat_pool *pool;
  nat_plan *plans[NAT_MAX_PLANS];
  int n_plans;
  void *arena;
  int64_t arena_cap;
  void *scratch;
  int64_t scratch_cap;
  void **node_data; /* per node and kind: a packed constant (nat_node_pack), or NULL */
  nat_pass_stats stats;
  nat_ext ext; /* zero for native itself */
} nat_state;

/* Flags of nat_state_new's `passes`. */
#define NAT_PASSES 1        /* the graph passes, attention included */
#define NAT_PASSES_LAYOUT 2 /* and the NHWC layout pass */

/* A state over graph g (taken over; freed on failure): with `passes`
 * (NAT_PASSES, optionally | NAT_PASSES_LAYOUT), the graph passes run first.
 * gemm names the SGEMM provider (NULL: OpenBLAS); ext may be NULL. */
ait_status nat_state_new(ait_graph *g, int threads, const char *gemm, int passes,
                         const nat_ext *ext, nat_state **out);
void nat_state_free(nat_state *s);
/* A new state over s's shared block (graph and published packed constants,
 * refcounted) with its own executor tables, plans, arena, scratch and pool:
 * the two (and further clones) may run concurrently on different threads
 * and be freed in any order. Only states without an extension (ext) clone. */
ait_status nat_state_clone(const nat_state *s, nat_state **out);
/* Move the packed constants this state made into the shared block where it
 * has none for that node yet (after a successful run: they are filled),
 * when the block has clones; a lone state keeps its own. */
void nat_exec_publish_packs(nat_state *s);
/* Bytes of packed constants s can read: its own and the shared block's. */
int64_t nat_exec_pack_bytes(const nat_state *s);
/* "auto" threads: the cores this process may run on. */
int nat_auto_threads(void);

/* Static analysis of s->g: dispatch, liveness, view roots. */
ait_status nat_exec_prepare(nat_state *s);
void nat_exec_release(nat_state *s); /* plans, arena, scratch, pool */
void nat_exec_free(nat_state *s);    /* all of the above and the analysis */
ait_status nat_exec_run(nat_state *s, const ait_tensor *const *in, int n_in, ait_tensor **out);

/* For kernels: output k of the running node, dtype/shape given; its data is
 * uninitialised arena or heap memory the kernel must fill. */
ait_status nat_output(nat_run *r, int k, ait_dtype dt, int rank, const int64_t *dims,
                      ait_tensor **t);
/* Scratch memory valid until the kernel returns (64-byte aligned). NULL with
 * the last error set on failure. */
void *nat_scratch(nat_run *r, int64_t bytes);
/* Tests: fill scratch with huge floats on every nat_scratch (a kernel that reads
 * what it did not write this run then fails, whatever a run before left). */
void nat_set_scratch_poison(bool on);
nat_pool *nat_run_pool(nat_run *r);
void *nat_run_user(nat_run *r); /* the running state's ext.user */
/* The running node's packed copy of a constant input (weights laid out for
 * a kernel), one per kind, kept across runs: 64-byte aligned memory of
 * `bytes`, made for `key` (the shape, layout and source it was packed
 * from). *fresh: new memory the caller must fill (a copy made for another
 * key was dropped). The state frees it when its plans are released. NULL
 * when out of memory. */
enum {
  NAT_DATA_GEMV,
  NAT_DATA_TILES,
  NAT_DATA_TILES_B,
  NAT_DATA_RNN,
  NAT_DATA_CONV,
  NAT_DATA_KINDS
};
void *nat_node_pack(nat_run *r, int kind, const int64_t key[4], size_t bytes, bool *fresh);
/* Input `input` of the running node, B [K, N], packed in slot `slot` for
 * the pointwise tiles (native_nhwc512.c): column blocks of bw, each K x bw
 * contiguous (nat_nhwc.wpk). NULL when B is not a constant or memory runs
 * short. */
const float *nat_pack_tiles(nat_run *r, int slot, int input, const float *B, int64_t K, int64_t N,
                            int64_t bw);
/* Whether input k of the running node is an initializer (its bytes never
 * change between runs). */
bool nat_input_is_const(nat_run *r, int k);
bool nat_run_gemv_pack(nat_run *r); /* option gemv=packed */
bool nat_run_tiles(nat_run *r);     /* option tiles=on */
bool nat_run_winograd(nat_run *r);  /* option winograd=on */
nat_gemm_fn nat_run_gemm(nat_run *r);
/* The state's count of calls into the provider: a kernel adds to it where
 * it calls nat_run_gemm's function (so native:gemm=X knows whether X ever
 * ran: unused_option). */
_Atomic long long *nat_run_gemm_calls(nat_run *r);
int nat_run_threads(nat_run *r);

/* ---- plans (native_plan.c) ------------------------------------------- */

uint64_t nat_signature(const ait_tensor *const *in, int n_in, int64_t *sig, int *n_sig);
/* Arena offsets for values with sizes size[v] (0 = not in the arena) live
 * from node first[v] to node last[v]: greedy by size, best fit. */
ait_status nat_plan_assign(int n_values, const int64_t *size, const int *first, const int *last,
                           int64_t *offset, int64_t *total);

/* ---- kernels ------------------------------------------------------------ */

/* Parallel C = alpha * op(A) * op(B) (+ epilogue) with OpenBLAS on the pool.
 * The epilogue runs on each finished block while it is in cache. */
typedef struct nat_epilogue {
  const float *row_bias; /* per row of C (Conv bias), or NULL */
  const float *col_bias; /* per column of C (MatMul bias), or NULL */
  const float *z;        /* added element-wise, same layout as C, or NULL */
  int64_t ldz;
  /* general broadcast addend: element (i, j) at zb[i*zb_rs + j*zb_cs] */
  const float *zb;
  int64_t zb_rs, zb_cs;
  ait_act act;
} nat_epilogue;

void nat_epilogue_apply(const nat_epilogue *e, float *c, int64_t ldc, int64_t i0, int64_t i1,
                        int64_t j0, int64_t j1);
void nat_sgemm(nat_run *r, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
               const float *A, int64_t lda, const float *B, int64_t ldb, float *C, int64_t ldc,
               const nat_epilogue *e);
/* c[0..N) = alpha * a . op(B) + epilogue for one row a, when B is input bk
 * of the running node and a constant: B packed once into one sequential
 * stream (native_gemv.c). False, with nothing done, where that does not
 * apply (the portable level, a small or non-constant B, out of memory). */
bool nat_gemv_const(nat_run *r, int bk, bool tb, int64_t N, int64_t K, float alpha, const float *a,
                    const float *B, int64_t ldb, float *c, const nat_epilogue *e);

ait_status nat_k_conv(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in);
ait_status nat_k_convt(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in);
/* Tests: Conv / FusedConv / ConvTranspose nodes native_conv.c has handed
 * to the reference kernel since the process started. */
long long nat_conv_declined(void);
ait_status nat_k_gemm(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in);
ait_status nat_k_matmul(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in);
ait_status nat_k_binary(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in);
ait_status nat_k_unary(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in);
ait_status nat_k_maxpool(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in);
ait_status nat_k_gap(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in);
ait_status nat_k_softmax(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in);
ait_status nat_k_layernorm(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in);
ait_status nat_k_rmsnorm(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in);
ait_status nat_k_rope(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in);
ait_status nat_k_transpose(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in);
ait_status nat_k_batchnorm(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in);
/* InstanceNormalization on float32 (GroupNorm's export: one plane per row). */
ait_status nat_k_instancenorm(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in);
ait_status nat_k_conv_nhwc(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in);
ait_status nat_k_inv_res(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in);
ait_status nat_k_gap_nhwc(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in);
/* FusedConvNhwc nodes run on native's kernels, and declined to the
 * reference (tests assert the second stays 0 on the shapes they cover). */
long long nat_conv_nhwc_runs(void);
long long nat_conv_nhwc_declined(void);
ait_status nat_k_pool_nhwc(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in);
ait_status nat_k_concat(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in);
ait_status nat_k_resize(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in);
long long nat_resize_runs(void); /* Resizes run on nat_k_resize (tests) */
/* RNN, GRU, LSTM (native_rnn.c): all their outputs (Y, Y_h, Y_c). */
ait_status nat_k_rnn(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in);
ait_status nat_k_gru(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in);
ait_status nat_k_lstm(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in);
/* Mark g's FusedAttention nodes (attribute bf16 = 1) for products in
 * bfloat16 with float sums (native_attn_bf16.c) where the CPU has
 * AVX512-BF16; elsewhere they stay float32. */
ait_status nat_attention_bf16(ait_graph *g);
ait_status nat_k_attention(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in);
/* How many leading keys attention needs for `rows` query rows when the
 * mask (m, stride mks, the same for every row) may pad a tail of them:
 * Sk, less the tail whose mask keeps every weight under e^-110 whatever
 * the scores alpha q.k can be (bounded by |alpha| max|q| max|k|). q(i, d)
 * at q[i * qrs + d * qcs]; k(d, t) at k[d * kds + t * kks]. */
int64_t nat_attn_live_keys(const float *m, int64_t mks, int64_t Sk, const float *q, int64_t qrs,
                           int64_t qcs, int64_t rows, const float *k, int64_t kds, int64_t kks,
                           int64_t D, float alpha);
/* Attention on AVX-512 (native_attn512.c), for one block of query rows;
 * only when nat_attn512_available(). values: y[rows][Dv] = (p v) *
 * scale[row] with p(i, k) at p[i * pis + k * pks] (P's rows: pks = 1; Pᵀ:
 * pis = 1), Dv a multiple of 16 up to 64 and v's rows of stride ldv. */
bool nat_attn512_available(void);
void nat_attn512_values(const float *p, int64_t pis, int64_t pks, int64_t rows, int64_t Sk,
                        const float *v, int64_t ldv, int64_t Dv, float *y, int64_t ldy,
                        const float *scale);
/* Rows of s plus the mask (rows of stride mrs, columns of stride mcs; m may
 * be NULL) turned into exp(x - max) in place, with 1 / sum per row in inv:
 * the normalisation goes to the output rows (scale of nat_attn512_values),
 * Dv multiplies instead of Sk. */
void nat_attn512_softmax(float *s, int64_t rows, int64_t Sk, const float *m, int64_t mrs,
                         int64_t mcs, float *inv);
/* The scores transposed: st[j][i] = alpha * sum_d q[i][d] k(j, d) + m(i, j)
 * for rows <= 64 query rows (q's rows of stride ldq) and Sk keys, k(j, d)
 * at k[j * kjs + d * kds], m(i, j) at m[i * mrs + j * mcs] (m may be NULL;
 * mrs <= INT32_MAX / 16). st's rows have stride 64 (Sk x 64 floats); qt
 * (D x 64 floats) receives alpha Qᵀ; mx (64 floats) the maximum per query
 * row. softmax_t: exp(st - mx) in place down the columns, 1 / sum per query
 * row in inv (64 floats); then nat_attn512_values(st, 1, 64, ...). Lanes past
 * `rows` hold values nobody reads. */
void nat_attn512_scores_t(const float *q, int64_t ldq, int64_t rows, int64_t D, float alpha,
                          const float *k, int64_t kjs, int64_t kds, int64_t Sk, const float *m,
                          int64_t mrs, int64_t mcs, float *qt, float *st, float *mx);
void nat_attn512_softmax_t(float *st, int64_t rows, int64_t Sk, const float *mx, float *inv);
/* The same four kernels on AVX2 + FMA (native_attn256.c), only when
 * nat_attn256_available() (the run's level is AVX2 or above), with the
 * same layouts (st and qt of row stride 64, mrs <= INT32_MAX / 16);
 * values takes any Dv. */
bool nat_attn256_available(void);
void nat_attn256_values(const float *p, int64_t pis, int64_t pks, int64_t rows, int64_t Sk,
                        const float *v, int64_t ldv, int64_t Dv, float *y, int64_t ldy,
                        const float *scale);
void nat_attn256_softmax(float *s, int64_t rows, int64_t Sk, const float *m, int64_t mrs,
                         int64_t mcs, float *inv);
void nat_attn256_scores_t(const float *q, int64_t ldq, int64_t rows, int64_t D, float alpha,
                          const float *k, int64_t kjs, int64_t kds, int64_t Sk, const float *m,
                          int64_t mrs, int64_t mcs, float *qt, float *st, float *mx);
void nat_attn256_softmax_t(float *st, int64_t rows, int64_t Sk, const float *mx, float *inv);
/* Attention's products in bfloat16 (native_attn_bf16.c), only when
 * nat_attn_bf16_available(). Operands are 32-bit words holding a pair of
 * bfloat16 along the reduction. pack_rows: out[r][w] = (x(r, 2w),
 * x(r, 2w+1)) for w < ceil(C/2); pack_pairs: out[p][c] = (x(2p, c),
 * x(2p+1, c)) for p < ceil(R/2), c < ldo (zeros past C or R); x(r, c) is
 * at x[r * rs + c * cs]. gemm: c[i][j] = alpha * scale[i] (scale may be
 * NULL) * sum over k2 words of a[i] . b[.][j], for j < ncols, b's rows
 * padded to a multiple of 16 words. */
bool nat_attn_bf16_available(void);
void nat_attn_bf16_pack_rows(const float *x, int64_t rs, int64_t cs, int64_t R, int64_t C,
                             uint32_t *out, int64_t ldo);
void nat_attn_bf16_pack_pairs(const float *x, int64_t rs, int64_t cs, int64_t R, int64_t C,
                              uint32_t *out, int64_t ldo);
void nat_attn_bf16_gemm(const uint32_t *a, int64_t lda, const uint32_t *b, int64_t ldb, int64_t k2,
                        int64_t rows, int64_t ncols, float alpha, const float *scale, float *c,
                        int64_t ldc);
/* The masked softmax of rows of s (as nat_attn512_softmax), written as
 * unnormalised exp values in bfloat16 pairs pb[i][w] (row stride ldp words,
 * the odd column's partner 0) with 1 / sum per row in inv. */
void nat_attn_bf16_softmax(const float *s, int64_t rows, int64_t Sk, const float *m, int64_t mrs,
                           int64_t mcs, float *inv, uint32_t *pb, int64_t ldp);

/* One FusedConvNhwc (native_nhwc.c): X [N, H, W, C], W [kh, kw, C/g, M],
 * Y [N, OH, OW, M], activation as the clamp [lo, hi]. X's element (n, h,
 * w, c) lies at n*xs_n + h*xs_h + w*xs_w + c*xs_c (the stem may read NCHW;
 * the other kernels need NHWC). */
typedef struct nat_nhwc {
  int64_t N, H, W, C, M, OH, OW, kh, kw, sh, sw, pt, pl;
  int64_t xs_n, xs_h, xs_w, xs_c;
  int pw_mr, pw_nv, pw_bw;    /* pointwise register tile (nat_nhwc_tile): rows, vectors, floats */
  const float *x, *w, *b, *z; /* b, z may be NULL */
  const float *wpk;           /* pointwise only, may be NULL: w packed in blocks of K x pw_bw */
  float *y;
  int64_t y_r0; /* stem and window rows: output row r is at y + (r - y_r0) OW M (a ring row) */
  float lo, hi;
  bool gelu;      /* pointwise on a vector level only: GELU on each tile right after its store */
  int64_t dh, dw; /* window convs: dilations (0 reads as 1) */
  /* window convs on a padded copy of X (every tap inside it) without
   * dilation along the row: each kernel row read as one run of kw C floats */
  bool win_rows;
  int64_t ldy;   /* pointwise and window convs: floats from one output pixel to the next (0: M) */
  int64_t ldz;   /* window convs: the same for the residual z (0: M) */
  int64_t group; /* grouped window convs (K_GRP in native_nhwc.c): the groups; else 0 or 1 */
  /* an activation past the clamp (SiLU, HardSwish, programs ...), applied by
   * the driver to each task's block while it is in cache; NULL for none */
  const ait_act *post;
  /* window convs (not win_rows): order each panel's pixels by the set of
   * taps inside the input (nat_win_panel), so that a tile's pixels share
   * it and a tap in the padding of one is skipped for the whole tile
   * (dilated convs on small maps; set by the driver where it pays) */
  bool win_class;
} nat_nhwc;

/* Output pixels a window conv's kernels take at a time (a panel). */
#define NAT_WIN_PANEL 192
/* One panel of a window conv: per pixel its image's offset in X, the input
 * row and column of its first tap (before dilation) and its output pixel
 * (index into N*OH*OW). Pixels seg[s] .. seg[s + 1] - 1 form segment s: a
 * tile never spans two. With c->win_class the pixels are ordered by their
 * in-bounds taps and a segment holds the pixels of one set; else they keep
 * their order and there is one segment. */
typedef struct nat_win_panel {
  int64_t xo[NAT_WIN_PANEL], ih[NAT_WIN_PANEL], iw[NAT_WIN_PANEL], q[NAT_WIN_PANEL];
  int seg[NAT_WIN_PANEL + 1];
  int nseg;
} nat_win_panel;
/* Fill p with output pixels [q0, q1) (at most NAT_WIN_PANEL) of c. */
void nat_win_panel_fill(const nat_nhwc *c, int64_t q0, int64_t q1, nat_win_panel *p);
/* The vector level of FusedConvNhwc's kernels and the MatMul tiles in this
 * run: NAT_ISA_AVX512 (native_nhwc512.c), NAT_ISA_AVX2 (native_nhwc256.c)
 * or NAT_ISA_PORTABLE (the loops of native_nhwc.c). */
int nat_nhwc_level(void);
/* Whether some vector level exists (the layout pass pays off there). */
bool nat_nhwc_available(void);
/* c's pointwise register tile at `level` for P pixels (of c->M channels). */
void nat_nhwc_tile(nat_nhwc *c, int level, int64_t P);
/* Pointwise on pixels [p0, p1) and channels [m0, m1) at `level` (m0 a
 * multiple of c->pw_bw where c->wpk is set). */
void nat_nhwc_pw(const nat_nhwc *c, int level, int64_t p0, int64_t p1, int64_t m0, int64_t m1);
/* AVX2 kernels (native_nhwc256.c), as the AVX-512 ones below, only when
 * nat_nhwc256_available(); nat_nhwc256_pw_tile's nv counts 8-float vectors. */
bool nat_nhwc256_available(void);
void nat_nhwc256_pw_tile(int64_t P, int64_t M, int *mr, int *nv);
void nat_nhwc256_pw(const nat_nhwc *c, int64_t p0, int64_t p1, int64_t m0, int64_t m1);
void nat_nhwc256_dw(const nat_nhwc *c, int64_t r0, int64_t r1);
void nat_nhwc256_dw_row(const float *const rows[3], int64_t W, int64_t OW, int64_t C, int64_t c0,
                        int64_t c1, int64_t S, int64_t pl, const float *w, const float *b,
                        const float *z, float lo, float hi, float *y);
void nat_nhwc256_stem(const nat_nhwc *c, int64_t r0, int64_t r1);
/* Window convs (group 1, any kernel, stride, dilation, padding; NHWC X):
 * output pixels [p0, p1) (of N*OH*OW) and channels [m0, m1) (m0 a multiple
 * of c->pw_bw) on the packed weights c->wpk (K = kh kw C rows), with the
 * tile of nat_nhwc*_win_tile in c->pw_mr / c->pw_nv (native_nhwc_win256.c,
 * native_nhwc_win512.c). */
void nat_nhwc256_win_tile(int64_t P, int64_t M, int *mr, int *nv);
void nat_nhwc256_win(const nat_nhwc *c, int64_t p0, int64_t p1, int64_t m0, int64_t m1);
void nat_nhwc512_win_tile(int64_t P, int64_t M, int *mr, int *nv);
void nat_nhwc512_win(const nat_nhwc *c, int64_t p0, int64_t p1, int64_t m0, int64_t m1);
/* Depthwise convs of any window, stride and dilation: output rows [r0, r1)
 * (of N*OH) from the zero-padded input c->x (c->H, c->W its padded sizes:
 * every tap of every output inside it; native_nhwc_dw256.c,
 * native_nhwc_dw512.c). */
void nat_nhwc256_dwk(const nat_nhwc *c, int64_t r0, int64_t r1);
/* 1x1 stride-1 unpadded depthwise convs (a per-channel scale): output rows
 * [r0, r1) of N*OH (native_nhwc256.c, native_nhwc512.c). */
void nat_nhwc256_dw1(const nat_nhwc *c, int64_t r0, int64_t r1);
void nat_nhwc512_dw1(const nat_nhwc *c, int64_t r0, int64_t r1);
long long nat_conv_dw1_runs(void); /* convs run on them (tests) */
/* SiLU in place on x[0..n) (native_nhwc_act.c; the level's target). */
void nat_nhwc256_silu(float *x, int64_t n);
void nat_nhwc512_silu(float *x, int64_t n);
/* 3x3 stride-1 window convs as Winograd F(2x2, 3x3) or F(4x4, 3x3) on the pointwise
 * tiles of `level` (native_nhwc_wino.c): whether c is one it takes (an NHWC
 * X: the caller reorders an NCHW one first), and
 * the conv (AIT_E_UNSUPPORTED, nothing written, when its weights are not
 * constant). */
bool nat_wino_fits(const nat_nhwc *c);
ait_status nat_wino_run(nat_run *r, const nat_nhwc *c, int level, float *scratch);
/* Floats of scratch nat_wino_run uses: its `scratch` (NULL: it takes the
 * run's scratch itself). */
int64_t nat_wino_scratch(nat_run *r, const nat_nhwc *c);
long long nat_wino_runs(void);  /* convs run as Winograd (tests) */
long long nat_wino4_runs(void); /* of those, as F(4x4, 3x3) (tests) */
/* Tests: 2 or 4 forces Winograd F(m x m, 3x3) where it fits; 0 picks by the shape. */
void nat_wino_set_tile(int m);
long long nat_win_class_runs(void); /* window convs run in tap classes (tests) */
void nat_nhwc512_dwk(const nat_nhwc *c, int64_t r0, int64_t r1);
/* AVX-512 kernels (native_nhwc512.c), only when nat_nhwc512_available():
 * pointwise on pixels [p0, p1) (of N*OH*OW) and channels [m0, m1);
 * depthwise 3x3 and stem on output rows [r0, r1) (of N*OH). */
bool nat_nhwc512_available(void);
void nat_nhwc_pw_tile(int64_t P, int64_t M, int *mr, int *nv);
/* Tests: run FusedConvNhwc on the portable loops even where a vector level is. */
void nat_nhwc_set_portable(bool on);
/* Tests: run an image's bands of rows last first (on one thread, every
 * band then finds its neighbour's boundary rows made). */
void nat_nhwc_set_bands_reversed(bool on);
void nat_nhwc512_pw(const nat_nhwc *c, int64_t p0, int64_t p1, int64_t m0, int64_t m1);
void nat_nhwc512_dw(const nat_nhwc *c, int64_t r0, int64_t r1);
/* One output row of a depthwise 3x3, channels [c0, c1) of C: rows[] are
 * the three input rows ([W][C], NULL above or below the input), stride S,
 * left pad pl, weights [9][C]; z (may be NULL) is added before the clamp. */
void nat_nhwc512_dw_row(const float *const rows[3], int64_t W, int64_t OW, int64_t C, int64_t c0,
                        int64_t c1, int64_t S, int64_t pl, const float *w, const float *b,
                        const float *z, float lo, float hi, float *y);
void nat_nhwc512_stem(const nat_nhwc *c, int64_t r0, int64_t r1);

/* Hot loops get an AVX2+FMA clone beside the baseline (SSE2) one, picked
 * at load time by the CPU (GCC's target_clones, x86-64 Linux only; not under
 * ThreadSanitizer, whose instrumented ifunc resolvers run before it is set
 * up). */
#if defined(__GNUC__) && __GNUC__ >= 12 && !defined(__clang__) && defined(__x86_64__) &&           \
    defined(__linux__) && !defined(__SANITIZE_THREAD__)
#define NAT_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define NAT_CLONES
#endif
/* Helpers of a NAT_CLONES function must be inlined to run in its clone. */
#if defined(__GNUC__) || defined(__clang__)
#define NAT_INLINE inline __attribute__((always_inline))
#else
#define NAT_INLINE inline
#endif

/* Vectorisable float32 math (native_math.c): exp, erf, and activations
 * with fast Sigmoid, Tanh and Gelu (others as ait_act_apply_f32), each on
 * the run's level (nat_isa(): AVX-512, AVX2 + FMA, else eight-lane vector
 * extensions). y may be x. */
void nat_exp_f32(const float *x, float *y, int64_t n);
void nat_erf_f32(const float *x, float *y, int64_t n);
/* GELU with approximate = "tanh" (ONNX Gelu-20). */
void nat_gelu_tanh_f32(const float *x, float *y, int64_t n);
void nat_act_f32(const ait_act *a, float *x, int64_t n);
/* The kinds nat_act_f32 has no path of its own for, and epilogue programs
 * (native_elt_act.c), vectorised where nat_isa() allows. */
void nat_elt_act_f32(const ait_act *a, float *x, int64_t n);
/* GELU (as nat_act_f32) on rows [0, rows) x columns [0, n) of y (row
 * stride ldy): a product's tile while it is in L1. 512: on AVX-512, only
 * where nat_nhwc512_available(); 256: on AVX2 + FMA, only where nat_isa()
 * >= NAT_ISA_AVX2 (the same values as the AVX-512 table, bit for bit). */
void nat_gelu512_tile(float *y, int64_t ldy, int64_t rows, int64_t n);
void nat_gelu256_tile(float *y, int64_t ldy, int64_t rows, int64_t n);
/* One LayerNormalization row of n floats (bias may be NULL) on the run's
 * vector level, AVX-512 or AVX2 (x and y may be the same); false, writing
 * nothing, below AVX2 or without compiler support. */
bool nat_layernorm_row(const float *x, float *y, int64_t n, const float *scale, const float *bias,
                       double eps);
/* One Softmax row, y = exp(x - max) / sum (x and y may be the same), as
 * nat_layernorm_row: false, writing nothing, below AVX2. */
bool nat_softmax_row(const float *x, float *y, int64_t n);

/* Multiply-adds below which a GEMM runs on one thread: a hand-off to the
 * pool costs a few microseconds, more when the machine is busy. */
#define NAT_PAR_MIN_MACS 1048576.0

/* Split n items into chunks for the pool: about `per_thread` chunks per
 * thread, each at least min_chunk items. Returns the chunk size. */
int64_t nat_chunk(nat_run *r, int64_t n, int64_t min_chunk);

#endif
