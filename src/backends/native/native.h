/* Private interface of the `native` backend (src/backends/native/).
 *
 *   backend_native.c  the backend table row: options, build, infer, save/load
 *   native_graph.c    graph copy, node/value editing helpers, compaction
 *   native_passes.c   constant folding, no-op removal, Conv+BatchNorm folding
 *   native_fuse.c     bias / residual / activation fusion into fused ops
 *   native_attn.c     attention (MatMul-Softmax-MatMul) into FusedAttention
 *   native_pool.c     the thread pool
 *   (plans: the input signature and the liveness arena are common/plan.c)
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
#include "backends/native/native_engine.h"
#include "backends/native/native_isa.h"
#include "core/error.h"
#include "ir/passes/passes.h"
#include "ops/fused_impl.h"
#include "ops/op.h"

/* ---- passes (native_passes.c, native_fuse.c) --------------------------- */

ait_status nat_pass_fold_constants(nat_uses *u, nat_pass_stats *s);
ait_status nat_pass_remove_noops(nat_uses *u, nat_pass_stats *s);
ait_status nat_pass_fold_batchnorm(nat_uses *u, nat_pass_stats *s);
ait_status nat_pass_fuse(nat_uses *u, nat_pass_stats *s, const nat_accepts *acc);
ait_status nat_pass_attention(nat_uses *u, nat_pass_stats *s);
/* The shared matchers' view (src/ir/passes/) of u's graph: live readers as u
 * counts them, float32 scalar constants (native_fuse.c). u stays borrowed. */
ait_match_view nat_uses_view(const nat_uses *u);
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

/* ---- per-node dispatch (native_kernels.c) ------------------------------ */

typedef enum nat_node_kind {
  NAT_REF = 0, /* the registry's reference kernel */
  NAT_FAST,    /* a native kernel (may still fall back per run) */
  NAT_VIEW     /* output 0 is input 0's data with another shape */
} nat_node_kind;

typedef struct nat_node {
  nat_node_kind kind;
  nat_kernel fast;
} nat_node;

/* How native runs node n of g. */
nat_node nat_dispatch(const ait_graph *g, const ait_node *n);
/* Output shape of a view node (Reshape, Flatten, Squeeze, Unsqueeze,
 * Identity) for input tensors in[]; AIT_E_UNSUPPORTED when it must fall back. */
ait_status nat_view_shape(const ait_node *n, const ait_tensor *const *in, int n_in, int *rank,
                          int64_t *dims);

/* ---- the executor (native_exec.c) -------------------------------------- */

/* A plan for one input signature (kept in the state's ait_plan_cache, by
 * that signature): arena offsets by value. */
typedef struct nat_plan {
  int n_values;    /* of the graph: the lengths of the tables below */
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
  int in_place; /* outputs planned over their dead residual input's slot */
} nat_plan;

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
  ait_plan_cache plans; /* nat_plan by input signature (common/plan.h) */
  void *arena;
  int64_t arena_cap;
  void *scratch;
  int64_t scratch_cap;
  void **node_data; /* per node and kind: a packed constant (nat_node_pack), or NULL */
  nat_pass_stats stats;
  nat_ext ext; /* zero for native itself */
} nat_state;

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

/* Static analysis of s->g: dispatch, liveness, view roots. */
ait_status nat_exec_prepare(nat_state *s);
void nat_exec_free(nat_state *s); /* all of the above and the analysis */

/* Tests: fill scratch with huge floats on every nat_scratch (a kernel that reads
 * what it did not write this run then fails, whatever a run before left). */
void nat_set_scratch_poison(bool on);
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

/* ---- kernels ------------------------------------------------------------ */

/* Parallel C = alpha * op(A) * op(B) (+ epilogue) with OpenBLAS on the pool.
 * The epilogue runs on each finished block while it is in cache. */
void nat_sgemm(nat_run *r, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
               const float *A, int64_t lda, const float *B, int64_t ldb, float *C, int64_t ldc,
               const nat_epilogue *e);
/* c[0..N) = alpha * a . op(B) + epilogue for one row a, when B is input bk
 * of the running node and a constant: B packed once into one sequential
 * stream (native_gemv.c). False, with nothing done, where that does not
 * apply (the portable level, a small or non-constant B, out of memory). */
bool nat_gemv_const(nat_run *r, int bk, bool tb, int64_t N, int64_t K, float alpha, const float *a,
                    const float *B, int64_t ldb, float *c, const nat_epilogue *e);
/* The same for M (1..NAT_GEMV_ROWS) rows of A at a[i * lda] into c[i * ldc]:
 * B packed once and streamed once a run whatever M. */
#define NAT_GEMV_ROWS 15
bool nat_gemv_const_rows(nat_run *r, int bk, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                         const float *a, int64_t lda, const float *B, int64_t ldb, float *c,
                         int64_t ldc, const nat_epilogue *e);

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
/* Data movement on contiguous runs, any dtype but strings (native_gather.c):
 * Gather, Slice-10+, Pad, and Transpose with its axes coalesced (row copies, or
 * 2-D tiles at the AVX-512 and AVX2 levels). */
ait_status nat_k_gather(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in);
ait_status nat_k_slice(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in);
ait_status nat_k_transpose(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in);
/* Pad-11+ in mode constant with pads >= 0. */
ait_status nat_k_pad(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in);
/* Nodes those four handed to the reference kernel since the process
 * started (tests). */
long long nat_move_declined(void);
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
/* Scores of a few query rows as dot products along D (native_attn_dec.c):
 * s[i * lds + j] = alpha * sum_d q[i * ldq + d] * k[j * kjs + d], the keys'
 * D floats contiguous. 512: only when nat_attn512_available(); 256: when
 * nat_attn256_available(). */
void nat_attn512_scores_rows(const float *q, int64_t ldq, int64_t rows, int64_t D, float alpha,
                             const float *k, int64_t kjs, int64_t Sk, float *s, int64_t lds);
void nat_attn256_scores_rows(const float *q, int64_t ldq, int64_t rows, int64_t D, float alpha,
                             const float *k, int64_t kjs, int64_t Sk, float *s, int64_t lds);
/* Tests: FusedAttention runs that took the dot-product scores since the
 * process started. */
long long nat_attn_dot_runs(void);
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
/* Whether nat_nhwc256_stem runs c on its fixed-shape tiles (a 3-channel 3x3
 * or 7x7 stride-2 window on the padded NHWC copy). */
bool nat_nhwc256_stem_fast(const nat_nhwc *c);
/* Window convs (group 1, any kernel, stride, dilation, padding; NHWC X):
 * output pixels [p0, p1) (of N*OH*OW) and channels [m0, m1) (m0 a multiple
 * of c->pw_bw) on the packed weights c->wpk (K = kh kw C rows), with the
 * tile of nat_nhwc*_win_tile in c->pw_mr / c->pw_nv (native_nhwc_win256.c,
 * native_nhwc_win512.c). */
void nat_nhwc256_win_tile(int64_t P, int64_t M, int *mr, int *nv);
void nat_nhwc256_win(const nat_nhwc *c, int64_t p0, int64_t p1, int64_t m0, int64_t m1);
void nat_nhwc512_win_tile(int64_t P, int64_t M, int *mr, int *nv);
void nat_nhwc512_win(const nat_nhwc *c, int64_t p0, int64_t p1, int64_t m0, int64_t m1);
/* Grouped window convs of few channels a group, several groups a register
 * tile (native_nhwc_grp256.c, native_nhwc_grp512.c): c the whole conv
 * (NHWC X of c->C channels, Y of c->M, no ldy), its groups merged into
 * groups of Cm inputs and Mm outputs (Mm one or two vectors) whose packed
 * weights ([kh kw Cm] x Mm, block-diagonal) are at wpk + g gstride. All
 * borrowed. */
typedef struct nat_grp {
  const nat_nhwc *c;
  const float *wpk;
  int64_t gstride, Cm, Mm;
} nat_grp;
/* Whether the level's tiles take merged groups of Cm inputs, Mm outputs. */
bool nat_nhwc256_grp_fits(int64_t Cm, int64_t Mm);
bool nat_nhwc512_grp_fits(int64_t Cm, int64_t Mm);
/* Pixels a tile takes (the unit of a task's pixel range). */
int nat_nhwc256_grp_rows(int64_t Mm);
int nat_nhwc512_grp_rows(int64_t Mm);
/* Output pixels [p0, p1) of merged groups [g0, g1). */
void nat_nhwc256_grp(const nat_grp *g, int64_t p0, int64_t p1, int64_t g0, int64_t g1);
void nat_nhwc512_grp(const nat_grp *g, int64_t p0, int64_t p1, int64_t g0, int64_t g1);
/* Groups of 4 inputs and 4 outputs, L / 4 groups a vector of L lanes (L
 * 8 or 16; g->Cm = g->Mm = L): output pixels [p0, p1) of vectors [b0, b1),
 * on weights packed per vector and tap as 4 vectors of rotated lanes
 * (native_nhwc.c grp_pack_rot4); the pixels a tile takes. */
void nat_nhwc256_grp4(const nat_grp *g, int64_t p0, int64_t p1, int64_t b0, int64_t b1);
void nat_nhwc512_grp4(const nat_grp *g, int64_t p0, int64_t p1, int64_t b0, int64_t b1);
int nat_nhwc256_grp4_rows(void);
int nat_nhwc512_grp4_rows(void);
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
long long nat_grp_tile_runs(void);  /* grouped convs run on nat_nhwc*_grp's tiles (tests) */
long long nat_grp4_runs(void);      /* of those, on nat_nhwc*_grp4's (tests) */
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
/* Whether nat_nhwc512_stem runs c on its fixed-shape tiles (a 3-channel 3x3
 * or 7x7 stride-2 window on the padded NHWC copy). */
bool nat_nhwc512_stem_fast(const nat_nhwc *c);

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

/* Split n items into chunks for the pool: about `per_thread` chunks per
 * thread, each at least min_chunk items. Returns the chunk size. */
int64_t nat_chunk(nat_run *r, int64_t n, int64_t min_chunk);

/* In place (native_exec.c): a pointwise FusedConvNhwc on the vector tiles
 * writes its output over its residual input when that dies there (the plan
 * gives both one arena slot). Off / on for tests (on by default); the count
 * of outputs planned so; whether a test forces the portable NHWC loops. */
void nat_exec_set_in_place(bool on);
long long nat_exec_in_place_planned(void);
bool nat_nhwc_portable(void);

#endif
