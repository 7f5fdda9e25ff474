/* Backend `quant`: post-training weight quantization on the CPU.
 *
 * build() runs native's graph passes on a copy of the graph, picks the
 * MatMul/Gemm/Conv nodes (and their fused forms) with constant weights and
 * the embedding Gathers that the filter allows (quant_select.c), quantizes
 * each weight once (per output channel, tensor, group or table row; int8 or
 * fp8 e4m3: quant_weights.c), and rewrites those nodes into ai.aitune.quant
 * ops run by the kernels here (quant_ops.c, quant_gemm.c, quant_avx512.c).
 * The graph runs on native's executor, every other node on native's kernels
 * (quant_exec.c). save() stores the quantized codes and scales plus the full
 * configuration as JSON (quant_io.c), so load() never quantizes again.
 *
 * The quantized weight is kept in one of two forms: the canonical rows
 * [N][K] (N output channels, K the reduction length; what is saved and what
 * the portable kernels read) or a packed layout for the AVX-512 kernels,
 * derived from the rows at build/load time. */
#ifndef AIT_BACKENDS_QUANT_QUANT_H
#define AIT_BACKENDS_QUANT_QUANT_H

#include <stdbool.h>
#include <stdint.h>

#include "backends/backend.h"
#include "backends/native/native_engine.h"
#include "core/codec.h"

#define QNT_DOMAIN "ai.aitune.quant"
#define QNT_MAX_EXCLUDE 8
#define QNT_PANEL 64       /* output channels per packed panel */
#define QNT_MAX_OUTLIERS 8 /* per activation row */
#define QNT_OUTLIERS 4.0f  /* int8dq's threshold, in row rms */

/* ---- configuration (quant_config.c) ------------------------------------ */

typedef enum qnt_wtype { QNT_INT8, QNT_FP8, QNT_MXFP8, QNT_NVFP4 } qnt_wtype;
typedef enum qnt_gran { QNT_TENSOR, QNT_CHANNEL, QNT_GROUP } qnt_gran;
enum { QNT_OP_MATMUL = 1, QNT_OP_GEMM = 2, QNT_OP_CONV = 4, QNT_OP_GATHER = 8, QNT_OP_ALL = 15 };
/* options isa and kernels; AUTO: native's default level (AIT_MAX_ISA) */
typedef enum qnt_isa { QNT_ISA_AUTO, QNT_ISA_AVX512, QNT_ISA_AVX2, QNT_ISA_PORTABLE } qnt_isa;

typedef struct qnt_config {
  char preset[16]; /* the preset it came from; "" for a custom configuration */
  qnt_wtype weights;
  qnt_gran gran;
  int64_t group;   /* group length along the reduction axis (QNT_GROUP) */
  bool symmetric;  /* false: int8 weights with a zero point */
  bool percentile; /* scale from a percentile of |w| instead of max |w| */
  double pct;      /* that percentile, in (50, 100] */
  bool act;        /* dynamic per-row activation quantization */
  /* int8 activations: a row whose max exceeds 2 * outliers * rms(row) gets
   * a scale covering |x| <= outliers * rms, and the few elements above (at
   * most QNT_MAX_OUTLIERS) are added back in float; 0 = absmax per row */
  float outliers;
  /* attention's two products (native's FusedAttention) in bfloat16 with
   * float sums, where the CPU has AVX512-BF16 (else float32) */
  bool attn_bf16;
  unsigned ops; /* QNT_OP_* mask of the op types the filter admits */
  int n_exclude;
  char exclude[QNT_MAX_EXCLUDE][64]; /* fnmatch patterns on node names */
  int64_t min_weight;                /* weights with fewer elements stay float */
  /* run time, not part of the quantization */
  int threads;
  qnt_isa isa;     /* option isa: the level of the state, native's part too */
  qnt_isa kernels; /* option kernels: caps quant's own kernels only */
  /* quantizing only (never saved): symmetric int8 codes in 7 bits (|q| <=
   * 64, scale max|w| / 64), what the vpmaddubsw tiles multiply; set by
   * build for the QUAD7 layout, so no code is rounded twice (8 bits, then
   * halved) */
  bool w7;
} qnt_config;

/* Resolve a backend configuration (a preset, custom options or config=FILE,
 * plus the filter options) into *out. AIT_E_INVALID_ARG with a message
 * naming the clash for a preset together with custom settings. */
ait_status qnt_config_resolve(const ait_backend_config *cfg, qnt_config *out);
/* Only the run-time options (threads, kernels) of cfg into c. */
void qnt_config_runtime(const ait_backend_config *cfg, qnt_config *c);
/* Whether a and b quantize the same way (format, granularity, scales,
 * activations; not the filter). */
bool qnt_config_same_quant(const qnt_config *a, const qnt_config *b);
/* Parse JSON text in the user form {"quantization": "int8wo"} or the full
 * form (see docs/quantization.md) into *out (run-time fields untouched).
 * `what` names the source in messages. *has_filter tells whether the text
 * gave a "filter" object. */
ait_status qnt_config_parse_json(const char *text, const char *what, qnt_config *out,
                                 bool *has_filter);
/* The full form as JSON: a new string the caller frees, NULL on no memory. */
char *qnt_config_to_json(const qnt_config *c);
/* "int8", "fp8" or "fp4": the precision the tuner's check should assume. */
const char *qnt_config_precision(const qnt_config *c);
/* "int8dq" or "custom int8 per-group(128)" for messages, into buf. */
const char *qnt_config_label(const qnt_config *c, char *buf, size_t n);
const char *qnt_wtype_name(qnt_wtype t);

/* ---- node selection and pre-flight checks (quant_select.c) -------------- */

/* GATHER: an embedding table (constant [rows, width]) looked up by index,
 * quantized per row; the others are products */
typedef enum qnt_kind { QNT_K_MATMUL, QNT_K_GEMM, QNT_K_CONV, QNT_K_GATHER } qnt_kind;

/* What a selected node needs to run quantized. */
typedef struct qnt_site {
  int node; /* index in the graph */
  qnt_kind kind;
  bool fused; /* native's FusedMatMul/FusedGemm/FusedConv: an epilogue follows */
  int wval;   /* value index of the constant weight */
  int64_t N;  /* output channels (rows of the canonical weight) */
  int64_t K;  /* reduction length (per conv group) */
  int wrank;
  int64_t wdims[AIT_MAX_RANK]; /* the float weight's shape, checked on load */
} qnt_site;

/* Nodes of g that c's filter and info->node_filter (may be NULL) select,
 * in graph order, after the pre-flight checks for c's format. *sites is a
 * new array the caller frees. A failed check, or no node selected, is
 * AIT_E_UNSUPPORTED naming the requirement and the node. */
ait_status qnt_select(const qnt_config *c, const ait_graph *g, const ait_build_info *info,
                      qnt_site **sites, int *n);
/* Fill a site for node k of g if it has the structure quant can rewrite
 * (op type, constant float weight of a usable rank); false otherwise. */
bool qnt_site_of(const ait_graph *g, int k, qnt_site *s);
/* "MatMul" for MatMul and native's FusedMatMul (likewise Gemm, Conv): what
 * filters, callbacks and messages call a site's node. */
const char *qnt_site_op(const qnt_site *s);

/* ---- quantized weights (quant_weights.c) -------------------------------- */

typedef enum qnt_layout {
  QNT_L_ROWS,  /* [N][K] codes */
  QNT_L_PANEL, /* per panel of 64 channels: [K][64] (weight-only kernels) */
  QNT_L_PAIR,  /* per panel: [ceil(K/2)][64][2] (fp8 x fp8 on AVX512-BF16) */
  QNT_L_QUAD,  /* per panel: [ceil(K/4)][64][4] (int8 x int8 on VNNI, AVX-VNNI) */
  /* QUAD with 7-bit codes (|q| <= 64, scales doubled): int8 x int8 on AVX2
   * without VNNI, where vpmaddubsw would saturate on 8-bit weights;
   * symmetric weights only */
  QNT_L_QUAD7
} qnt_layout;

typedef struct qnt_weight {
  qnt_wtype type; /* QNT_INT8 or QNT_FP8 */
  int64_t N, K;
  int64_t gsize, G; /* group length along K and groups per row (gsize = K: one) */
  bool asym;        /* int8 with zero points */
  float *scale;     /* [N][G]: w ~ scale * (q - zero) */
  int8_t *zero;     /* [N][G], asym only, else NULL */
  qnt_layout layout;
  bool ymm;       /* packed layouts: run by the AVX2 tiles (else AVX-512; QUAD7: AVX2) */
  uint8_t *codes; /* in `layout` */
  size_t n_codes;
  /* packed layouts only: per (panel, group) rows of 64, padded with zeros */
  float *pscale, *pbias; /* scale and -scale*zero */
  int32_t *pwsum;        /* QUAD: sum of the codes over the group */
  int8_t *pzero;         /* QUAD, asym */
} qnt_weight;

/* Quantize the N x K float matrix w (element (n, k) at w[n*rs_n + k*rs_k])
 * with c's format, granularity and scale method into canonical rows. */
ait_status qnt_weight_quantize(const qnt_config *c, const float *w, int64_t N, int64_t K,
                               int64_t rs_n, int64_t rs_k, qnt_weight *out);
/* Repack canonical rows into `to` (frees the rows). */
ait_status qnt_weight_pack(qnt_weight *w, qnt_layout to);
/* Code of element (n, k) in any layout. */
uint8_t qnt_weight_code(const qnt_weight *w, int64_t n, int64_t k);
/* Dequantized value of element (n, k). */
float qnt_weight_value(const qnt_weight *w, int64_t n, int64_t k);
void qnt_weight_free(qnt_weight *w);
/* Bytes of codes and scales (what the quantized weight costs in memory). */
size_t qnt_weight_bytes(const qnt_weight *w);

/* ---- kernels (quant_gemm.c, quant_avx512.c) ----------------------------- */

/* y[m][j] = sum_k x[m][k] * w[n0 + j][k] (+ bias[j]) for rows m < M and
 * j < nn (packed weights run whole: n0 = 0, nn = N), K = w->K. With `act`,
 * each row of x is quantized on the fly (int8: symmetric per row; fp8: e4m3
 * per row) and the products are summed in int32 (int8) or float. */
typedef struct qnt_mm {
  const qnt_weight *w;
  bool act;
  const float *x;
  int64_t M, ldx;
  float *y;
  int64_t ldy;
  int64_t n0, nn;
  const float *bias;
  float outliers; /* int8 activations: see qnt_config.outliers */
  /* applied to each finished block of y (residual, activation), or NULL;
   * packed weights only (n0 = 0) */
  const nat_epilogue *e;
  nat_run *r; /* the running executor (its scratch memory), or NULL */
  /* int8 activations shared with the other products of the same input
   * (Q, K and V read one LayerNorm output), or NULL: quantized by the first
   * of them to run in run `run`, reused by the others */
  struct qnt_actbuf *share;
  uint64_t run;
} qnt_mm;

/* Quantized activation rows kept between the products that read them: the
 * row scales, codes and outliers (the per-weight outlier slots stay in each
 * product's scratch). Owned by the state; one run at a time (a session is
 * not thread-safe). */
typedef struct qnt_actbuf {
  char *mem;
  size_t cap;
  uint64_t run; /* the run whose activations mem holds (0: none) */
  const float *x;
  int64_t M;
  bool a7; /* the rows are 7-bit codes (qnt_avx2_quant_rows_a7) (QUAD7 products only) */
} qnt_actbuf;

/* Runs on native's pool (may be NULL: the calling thread). */
ait_status qnt_matmul(const qnt_mm *p, nat_pool *pool);

/* CPU features the AVX-512 kernels need (checked at run time). */
typedef struct qnt_cpu {
  bool avx512;  /* avx512f + avx512bw + avx512vl: weight-only kernels */
  bool vnni;    /* avx512vnni: int8 x int8 */
  bool bf16;    /* avx512bf16: fp8 x fp8 */
  bool avx2;    /* avx2 + fma + f16c: the AVX2 tiles (quant_avx2.c) */
  bool avxvnni; /* AVX-VNNI (vpdpbusd on ymm), at the AVX2 level */
} qnt_cpu;
/* What the CPU has, capped by the calling thread's level (nat_isa()). The
 * environment variable AIT_QUANT_NO_AVXVNNI=1 hides AVX-VNNI (the test
 * suite's and the benchmarks' way to run the Zen 2/3 path here). */
qnt_cpu qnt_cpu_detect(void);

/* The layout a weight should use for (type, act) on cpu; ROWS when no
 * AVX-512 kernel applies. */
qnt_layout qnt_layout_for(qnt_wtype t, bool act, qnt_cpu cpu);

/* AVX-512 pieces (quant_avx512.c), called by quant_gemm.c only when the CPU
 * has the features. Panel p covers channels [64p, 64p + 64). */
#define QNT_MR 6
void qnt_x86_dequant_panel(const qnt_weight *w, int64_t p, int64_t k0, int64_t kc, float *buf);
void qnt_x86_tile_f32(int mr, int64_t kc, const float *a, int64_t lda, const float *b, float *c,
                      int64_t ldc, int ncols, bool acc, const float *bias);
/* Rows quantized to u8 (code + 128) with their scale in sa; with outliers > 0
 * the elements above the row's threshold go to oidx/ores (their index and
 * what the clipped code misses), ocnt per row (QNT_MAX_OUTLIERS a row). */
void qnt_x86_quant_rows_u8(const float *x, int64_t M, int64_t K, int64_t ldx, uint8_t *q,
                           int64_t ldq, float *sa, const qnt_weight *w, int32_t *asum,
                           float outliers, int32_t *oidx, float *ores, int32_t *ocnt);
/* The clip threshold of a row from its max |x| and sum of squares: outliers
 * * rms when amax is more than twice that, else amax (callers fall back to
 * amax when more than QNT_MAX_OUTLIERS elements lie above it). */
float qnt_row_threshold(float amax, double sumsq, int64_t K, float outliers);
/* What a VNNI tile does with its int32 sums, rows counted from the tile's
 * first: c = sa[i] * sw[c] * (sum - 128 * wsum[c] - zw[c] * asum[i]) (+ c
 * when accumulating over groups), plus the row's outliers, bias and the
 * residual z. */
typedef struct qnt_vnni_post {
  const float *sa, *sw;
  const int32_t *wsum;
  const int8_t *zw;    /* NULL: symmetric weights */
  const int32_t *asum; /* with zw: sums of activation codes, row stride asum_ld */
  int64_t asum_ld;
  const float *bias; /* NULL: none */
  const float *z;    /* residual added last, row stride ldz, or NULL */
  int64_t ldz;
  /* outliers (ocnt NULL: none): per row a count, QNT_MAX_OUTLIERS slots and
   * residuals; res[o] * wdq[slot[o] * ldw + c] is added for slot[o] >= 0 */
  const int32_t *ocnt, *oslot;
  const float *ores, *wdq;
  int64_t ldw;
  /* 7-bit rows (qnt_avx2_quant_rows_a7, QUAD7 only): codes without the + 128 (no 128 * wsum to
   * take off), and, with lo (the last group), lo[i] * wtot[c] added: the
   * rows' offsets times the channels' dequantized weight sums */
  bool a7;
  const float *lo, *wtot;
} qnt_vnni_post;
void qnt_x86_tile_vnni(int mr, int64_t k4, const uint8_t *a, int64_t lda, const uint8_t *b,
                       float *c, int64_t ldc, int ncols, bool acc, const qnt_vnni_post *post);
/* y[c] += r * w[c] for the ncols channels of a QUAD panel at one reduction
 * index: b points at its 4-byte group (+ 4c per channel), k4 = index % 4;
 * w = sw * (code - zw). */
void qnt_x86_outlier_fix(const uint8_t *b, int k4, float r, const float *sw, const int8_t *zw,
                         float *y, int ncols);
#define QNT_MAX_SLOTS 64 /* distinct outlier channels per product with a float row */
void qnt_x86_quant_rows_bf16(const float *x, int64_t M, int64_t K, int64_t ldx, uint16_t *q,
                             int64_t ldq, float *sa);
void qnt_x86_pair_panel(const qnt_weight *w, int64_t p, int64_t k0, int64_t kc, uint16_t *buf);
/* b: a panel buffer from qnt_x86_pair_panel, or with `codes` the packed
 * pairs themselves (converted in registers; few rows). */
void qnt_x86_tile_bf16(int mr, bool codes, int64_t k2, const uint16_t *a, int64_t lda,
                       const void *b, float *c, int64_t ldc, int ncols, bool acc, const float *sa,
                       const float *sw, const float *bias);
/* dst[c][r] = src[r][c] for an R x C matrix. */
void qnt_x86_transpose(const float *src, int64_t R, int64_t C, int64_t lds, float *dst,
                       int64_t ldd);
/* Weight-only tile over the whole reduction axis, dequantizing in registers. */
void qnt_x86_tile_wo(int mr, const qnt_weight *w, int64_t p, const float *a, int64_t lda, float *c,
                     int64_t ldc, int ncols, const float *bias);

/* AVX2 (+FMA, F16C) pieces (quant_avx2.c), same contracts as the AVX-512
 * ones above; tiles walk the panel 16 channels at a time. */
void qnt_avx2_dequant_panel(const qnt_weight *w, int64_t p, int64_t k0, int64_t kc, float *buf);
void qnt_avx2_tile_f32(int mr, int64_t kc, const float *a, int64_t lda, const float *b, float *c,
                       int64_t ldc, int ncols, bool acc, const float *bias);
void qnt_avx2_tile_wo(int mr, const qnt_weight *w, int64_t p, const float *a, int64_t lda, float *c,
                      int64_t ldc, int ncols, const float *bias);
void qnt_avx2_quant_rows_u8(const float *x, int64_t M, int64_t K, int64_t ldx, uint8_t *q,
                            int64_t ldq, float *sa, const qnt_weight *w, int32_t *asum,
                            float outliers, int32_t *oidx, float *ores, int32_t *ocnt);
/* Activation rows for the vpmaddubsw tiles (QUAD7), in 7 bits: x ~ lo +
 * sa * u with codes u in [0, 127] over the row's clipped range [lo, hi]
 * (lo = max(min, -t), hi = min(max, t), t the threshold of
 * qnt_row_threshold; the elements outside go to the outliers as in
 * qnt_avx2_quant_rows_u8, their residual against lo or hi). Four products
 * of such codes and 7-bit weights fit in int16 (4 * 127 * 64 <= 32767), so
 * the tile sums two vpmaddubsw results before each vpmaddwd: 5 instructions
 * for 64 multiply-adds instead of 6. One-sided rows (GELU, ReLU outputs)
 * keep the 8-bit codes' step; two-sided ones have twice it (see
 * docs/quantization.md, AVX2). false (rows left unfinished) on a row with
 * a value that is not finite: the 8-bit codes' rules then. */
bool qnt_avx2_quant_rows_a7(const float *x, int64_t M, int64_t K, int64_t ldx, uint8_t *q,
                            int64_t ldq, float *sa, float *lo, float outliers, int32_t *oidx,
                            float *ores, int32_t *ocnt);
/* fp8 activations without AVX512-BF16: each row rounded to e4m3 at its own
 * scale (max |x| / 448), stored back in float (value * scale), for the
 * float tiles. */
void qnt_avx2_quant_rows_f8(const float *x, int64_t M, int64_t K, int64_t ldx, float *q,
                            int64_t ldq);
void qnt_avx2_outlier_fix(const uint8_t *b, int k4, float r, const float *sw, const int8_t *zw,
                          float *y, int ncols);
/* vnni: AVX-VNNI on QUAD (mr <= QNT_MR); else vpmaddubsw on QUAD7 (mr <=
 * QNT_MR7, as tiles of 4). Same post as VNNI. With vnni and *pf (pf may be
 * NULL), a line from *pf up to pf_end is prefetched into L2 each step,
 * *pf advanced (the next panel's codes, for few rows: there a panel is
 * read once or twice and its first read waited on memory). */
#define QNT_MR7 8
void qnt_avx2_tile_u8(int mr, bool vnni, int64_t k4, const uint8_t *a, int64_t lda,
                      const uint8_t *b, float *c, int64_t ldc, int ncols, bool acc,
                      const qnt_vnni_post *post, const uint8_t **pf, const uint8_t *pf_end);

/* vpmaddubsw on QUAD7, `tiles` tiles of 6 rows (a: row 0, rows lda apart)
 * of panel P over all its groups: post as for group 0 with the last
 * group's bias, residual and outliers (group g's scales and sums are 64 g
 * further on). The tiles run 16 channels at a time, so that one strip of
 * the panel's weights serves them all while it is in L1. pf (or NULL):
 * pf_lines 64-byte lines to prefetch into L2 meanwhile, one a step pair of
 * the k-loop (the next panel's codes: at batch 1 a panel serves ~3 strips
 * and its first one waited on memory). */
#define QNT_T7 8
void qnt_avx2_tile_madd6(const qnt_weight *w, int64_t P, int tiles, const uint8_t *a, int64_t lda,
                         float *c, int64_t ldc, int ncols, const qnt_vnni_post *post,
                         const uint8_t *pf, int64_t pf_lines);

/* ---- the rewritten graph on native's executor (quant_exec.c) ---------- */

typedef struct qnt_node {
  qnt_site site;
  qnt_weight w;
  int share; /* its qnt_actbuf in the state, or -1 */
} qnt_node;

typedef struct qnt_state {
  qnt_config cfg;
  nat_state *ns; /* native's executor over the rewritten graph, owned */
  ait_graph *g;  /* ns's graph (not owned here) */
  qnt_node *q;   /* the quantized nodes */
  int n_q;
  qnt_cpu cpu;        /* features the kernels may use (none with kernels=portable) */
  int n_quantized;    /* weights this state quantized itself (0 after load) */
  size_t qbytes;      /* memory of the quantized weights */
  size_t float_bytes; /* what they took as float32 */
  qnt_actbuf *bufs;   /* shared activations of products with one input */
  int n_bufs;
  uint64_t run; /* runs so far (qnt_state_run) */
} qnt_state;

/* The graph quant selects nodes from and runs: a copy of g (borrowing its
 * constant data) after native's passes (folding, Conv+BatchNormalization,
 * bias/activation/residual fusion, attention), its FusedAttention nodes
 * marked for bfloat16 products with attn_bf16. A new graph in *out. */
ait_status qnt_graph_prepare(const ait_graph *g, bool attn_bf16, ait_graph **out);
/* Rewrite the nodes q[0..n) of prepared graph g (taken over) into quantized
 * ops and put g on native's executor. Takes ownership of g and q on success
 * and failure. */
ait_status qnt_state_make(const qnt_config *c, ait_graph *g, qnt_node *q, int n, qnt_state **out);
void qnt_state_free(qnt_state *s);
/* The layout a state made with c would give a weight of type t (the CPU at
 * c's level, capped by its kernels option). */
qnt_layout qnt_state_layout(const qnt_config *c, qnt_wtype t);
/* QUAD7's group length: the weights of the vpmaddubsw tiles get a scale per
 * QNT_GROUP7 reduction steps (see docs/quantization.md, AVX2). */
#define QNT_GROUP7 128
ait_status qnt_state_run(qnt_state *s, const ait_tensor *const *in, int n_in, ait_tensor **out);

/* The native kernel of the quantized ops (quant_ops.c). The node carries
 * attribute `qidx`, its index in the state's q[]. */
ait_status qnt_k_op(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in);

/* ---- persistence (quant_io.c) ------------------------------------------- */

ait_status qnt_save(const qnt_state *s, const char *dir);
/* Read the configuration and weights saved in dir for prepared graph g
 * (qnt_graph_prepare of the model); *c receives
 * the saved configuration, *q / *n the nodes (caller owns). */
ait_status qnt_load(const ait_graph *g, const char *dir, qnt_config *c, qnt_node **q, int *n);

#endif
