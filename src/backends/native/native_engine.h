/* The engine native publishes to the other backends: the one header of
 * src/backends/native/ that files outside it include (quant builds on
 * native's executor; cuda, through the plugin's host table
 * (plugin/host_fns.h), on its graph passes and planner). native.h, the
 * private interface, includes it; everything else of native stays private.
 *
 *   graph editing  copies, attributes, initializers, compaction, use counts
 *   passes         native's rewrites as one call (nat_run_passes)
 *   thread pool    the pool a run's kernels share
 *   executor       a state over a rewritten graph, with another backend's
 *                  kernels claiming its own nodes (nat_ext); what a kernel
 *                  asks of the running executor (outputs, scratch, pool)
 *   plans          the liveness arena planner (the plan cache by input
 *                  signature is common/plan.h's)
 *   products       the epilogue applied to finished blocks, activations
 *
 * ISA levels (native_isa.h, included here) are part of it: quant's kernels
 * pick their paths by the same level as native's.
 *
 * Ownership: a state owns the graph it is given and everything it builds;
 * the caller's graph is never modified by passes run on a clone. */
#ifndef AIT_BACKENDS_NATIVE_ENGINE_H
#define AIT_BACKENDS_NATIVE_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "backends/common/plan.h"
#include "backends/native/native_isa.h"
#include "core/error.h"
#include "core/tensor.h"
#include "ir/graph.h"
#include "ops/fused_impl.h"

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

/* ---- passes (native_passes.c, native_fuse.c, native_attn_bf16.c) ------- */

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

/* What a user of these passes lowers, as data: the fusion pass hands a
 * producer (Conv, Gemm, MatMul) only the activations in `acts` (bit k =
 * ait_act_kind k), and chains that need an epilogue program (gates, channel
 * scales, several activations) only with `programs`. Native's own epilogue
 * pass takes everything; nat_accepts_named is what every backend that
 * lowers activations by name runs (Relu .. Gelu). */
typedef struct nat_accepts {
  unsigned acts;
  bool programs;
} nat_accepts;
#define NAT_ACT_BIT(k) (1u << (unsigned)(k))
extern const nat_accepts nat_accepts_named;
/* nat_run_passes_ex with the fusion pass limited to what acc accepts
 * (NULL: nat_accepts_named). */
ait_status nat_run_passes_for(ait_graph *g, nat_pass_stats *stats, bool attention,
                              const nat_accepts *acc);
/* torch's GroupNorm(C, C) on x [N, C, T] as exported (Reshape,
 * InstanceNormalization, Reshape, Mul, Add) and a spelled-out GELU after
 * it into one FusedInstanceNorm, over the whole graph: the one definition,
 * which nat_run_passes runs inside its epilogue pass and cuda, which runs
 * no epilogue pass of native's (it makes ops cuda has no kernel for), on
 * its own. *fused counts the rewrites. */
ait_status nat_pass_groupnorm(ait_graph *g, int *fused);
/* Mark g's FusedAttention nodes (attribute bf16 = 1) for products in
 * bfloat16 with float sums (native_attn_bf16.c) where the CPU has
 * AVX512-BF16; elsewhere they stay float32. */
ait_status nat_attention_bf16(ait_graph *g);

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

/* Multiply-adds below which a GEMM runs on one thread: a hand-off to the
 * pool costs a few microseconds, more when the machine is busy. */
#define NAT_PAR_MIN_MACS 1048576.0

/* ---- the executor (native_exec.c) -------------------------------------- */

typedef struct nat_state nat_state; /* native.h */
typedef struct nat_run nat_run;

/* A fast kernel: reads in[], asks the executor for its outputs with
 * nat_output(), fills them. Returns AIT_E_UNSUPPORTED *before* asking for an
 * output when the inputs are outside what it handles: the executor then
 * falls back to the reference kernel. */
typedef ait_status (*nat_kernel)(nat_run *r, const ait_node *n, const ait_tensor *const *in,
                                 int n_in);

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

/* Flags of nat_state_new's `passes`. */
#define NAT_PASSES 1        /* the graph passes, attention included */
#define NAT_PASSES_LAYOUT 2 /* and the NHWC layout pass */

/* A state over graph g (taken over; freed on failure): with `passes`
 * (NAT_PASSES, optionally | NAT_PASSES_LAYOUT), the graph passes run first.
 * gemm names the SGEMM provider (NULL: OpenBLAS); ext may be NULL. */
ait_status nat_state_new(ait_graph *g, int threads, const char *gemm, int passes,
                         const nat_ext *ext, nat_state **out);
void nat_state_free(nat_state *s);
/* "auto" threads: the cores this process may run on. */
int nat_auto_threads(void);
void nat_exec_release(nat_state *s); /* plans, arena, scratch, pool */
ait_status nat_exec_run(nat_state *s, const ait_tensor *const *in, int n_in, ait_tensor **out);
/* The graph s runs (its rewritten copy, owned by s; native_engine.c). */
ait_graph *nat_state_graph(const nat_state *s);
/* The nat_isa_level s's runs take (option isa, capped by the CPU). */
int nat_state_isa(const nat_state *s);
/* Park the idle workers of s's pool (nat_pool_park; native_engine.c). */
void nat_state_park(nat_state *s);

/* For kernels: output k of the running node, dtype/shape given; its data is
 * uninitialised arena or heap memory the kernel must fill. */
ait_status nat_output(nat_run *r, int k, ait_dtype dt, int rank, const int64_t *dims,
                      ait_tensor **t);
/* Scratch memory valid until the kernel returns (64-byte aligned). NULL with
 * the last error set on failure. */
void *nat_scratch(nat_run *r, int64_t bytes);
nat_pool *nat_run_pool(nat_run *r);
void *nat_run_user(nat_run *r); /* the running state's ext.user */

/* ---- plans: the shared ones (src/backends/common/plan.h) ----------------- */

/* Arena offsets for values with sizes size[v] (0 = not in the arena) live
 * from node first[v] to node last[v] (ait_plan_assign). */
static inline ait_status nat_plan_assign(int n_values, const int64_t *size, const int *first,
                                         const int *last, int64_t *offset, int64_t *total) {
  return ait_plan_assign(n_values, size, first, last, offset, total);
}

/* ---- products (native_gemm.c, native_math.c) ------------------------------ */

/* The epilogue of a product C = alpha * op(A) * op(B), applied to each
 * finished block while it is in cache. */
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
/* An activation in place on x[0..n), vectorised on the run's level. */
void nat_act_f32(const ait_act *a, float *x, int64_t n);

#endif
