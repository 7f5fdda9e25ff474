/* Backend `native`: the optimised CPU engine.
 *
 * build() copies the graph, rewrites the copy (constant folding, no-op
 * removal, Conv+BatchNormalization folding, bias/residual/activation fusion
 * into ai.aitune fused ops) and prepares the executor (native_exec.c): fast
 * float32 kernels on OpenBLAS and a thread pool, views for shape-only ops,
 * an arena planned by liveness per input signature, and the reference
 * kernels for everything else. save() writes the rewritten graph, so load()
 * does no optimisation. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#endif
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/native/native.h"
#include "core/fileio.h"
#include "onnx/onnx_io.h"
#include "runtime/eager.h"

static const ait_option_def native_options[] = {
    {"threads", AIT_OPT_INT, "auto", "1..256",
     "threads of the pool (auto: the cores this process may use); OpenBLAS runs "
     "single-threaded inside it"},
    {"gemm", AIT_OPT_ENUM, "auto", "auto|openblas|blis",
     "SGEMM library: OpenBLAS, or BLIS (Debian's libblis4, loaded at run time; unavailable "
     "when not installed); auto: OpenBLAS, unless its kernels for this CPU are below its ISA "
     "level (an OpenBLAS older than the CPU falls back to SSE3 ones), then BLIS"},
    {"layout", AIT_OPT_ENUM, "auto", "auto|nhwc|nchw",
     "nhwc: chains of convs with a depthwise conv run channels-last (NHWC, fused inverted "
     "residual blocks) with reorders at their edges; nchw: every conv stays NCHW (SGEMM); "
     "auto: nhwc where the run's level has vector kernels (AVX-512 or AVX2), else nchw"},
    {"fuse", AIT_OPT_BOOL, "on", NULL,
     "graph passes (folding, fusion); off runs the graph as given, for debugging"},
    {"attention", AIT_OPT_ENUM, "fp32", "fp32|bf16",
     "fused attention's two products in bfloat16 with float sums (AVX512-BF16 CPUs; judged "
     "as bf16 by the tuner)"},
    {"gemv", AIT_OPT_ENUM, "packed", "packed|plain",
     "one-row products over constant weights: packed reads B as one sequential stream "
     "(a packed copy of B, built on the first batch-1 run: memory as large as B; AVX-512 "
     "and AVX2 levels); plain reads B as stored"},
    {"isa", AIT_OPT_ENUM, "auto", "auto|avx512|avx2|portable",
     "instruction-set level of native's own kernels: auto is the CPU's best; a lower one "
     "forces that level's paths (capped by the CPU), to test and measure them"},
    {"tiles", AIT_OPT_BOOL, "on", NULL,
     "MatMuls of 16 or more rows (transformers) on AVX-512 or AVX2 register tiles that read B as "
     "stored; off: SGEMM (OpenBLAS/BLIS) blocks"},
    {"winograd", AIT_OPT_BOOL, "on", NULL,
     "3x3 stride-1 convs in NHWC with at least 48 output tiles of 2x2 as Winograd F(2x2, 3x3) "
     "(2.25x fewer multiply-adds, exact transforms; AVX-512 and AVX2 levels); off: direct"},
};

static bool attn_bf16(const ait_backend_config *cfg) {
  const char *a = ait_backend_config_get(cfg, "attention");
  return a && !strcmp(a, "bf16");
}

static const char *native_precision(const ait_backend_config *cfg) {
  return attn_bf16(cfg) ? "bf16" : NULL;
}

static bool native_available(char *why, size_t n) { return true; }

static bool native_supports(const ait_backend_config *cfg, const ait_graph *g, const ait_node *node,
                            char *why, size_t n) {
  if (node->op && node->op->kernel) return true;
  if (!strcmp(node->domain, AIT_FUSED_DOMAIN) && ait_fused_op(node->op_type)) return true;
  const char *reason = "unknown op";
  ait_op_lookup(node->domain, node->op_type, node->opset, &reason);
  snprintf(why, n, "%s at opset %d: %s (native runs every op the reference runs, no more)",
           node->op_type, node->opset, reason);
  return false;
}

/* "auto": the cores this process may run on (its affinity mask), else the
 * online cores. */
int nat_auto_threads(void) {
#ifdef CPU_COUNT
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
#endif
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? (int)online : 1;
}

static int resolve_threads(const ait_backend_config *cfg) {
  int64_t t = ait_backend_config_int(cfg, "threads", nat_auto_threads());
  return t < 1 ? 1 : t > 256 ? 256 : (int)t;
}

static bool graph_has_subgraph(const ait_graph *g) {
  for (int i = 0; i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i].n_attrs; k++)
      if (g->nodes[i].attrs[k].g) return true;
  return false;
}

/* ---- the shared block (graph, published packs) ---------------------------- */

static nat_shared *shared_new(ait_graph *g) {
  nat_shared *sh = calloc(1, sizeof *sh);
  pthread_mutex_t *mu = malloc(sizeof *mu);
  if (!sh || !mu || pthread_mutex_init(mu, NULL) != 0) {
    free(sh);
    free(mu);
    return NULL;
  }
  atomic_init(&sh->refs, 1);
  sh->g = g;
  sh->lock = mu;
  return sh;
}

static void shared_release(nat_shared *sh) {
  if (!sh || atomic_fetch_sub_explicit(&sh->refs, 1, memory_order_acq_rel) != 1) return;
  for (int i = 0; sh->packs && i < sh->g->n_nodes * NAT_DATA_KINDS; i++)
    free(sh->packs[i]);
  free(sh->packs);
  ait_graph_free(sh->g);
  pthread_mutex_destroy(sh->lock);
  free(sh->lock);
  free(sh);
}

void nat_state_free(nat_state *s) {
  if (!s) return;
  nat_exec_free(s);
  if (s->shared)
    shared_release(s->shared);
  else
    ait_graph_free(s->g);
  free(s);
}

static void native_destroy(void *state) { nat_state_free(state); }

/* Every node has a kernel: the registry's, or the extension's. */
static ait_status check_kernels(const ait_graph *g, const nat_ext *ext) {
  if (!ext || !ext->kernel) return ait_eager_check(g);
  for (int i = 0; i < g->n_nodes; i++) {
    const ait_node *n = &g->nodes[i];
    if (ext->kernel(ext->user, g, n)) continue;
    if (!n->op || !n->op->kernel)
      return ait_err(AIT_E_UNSUPPORTED, "%s has no kernel", ait_node_desc(n));
  }
  return AIT_OK;
}

ait_status nat_state_new(ait_graph *g, int threads, const char *gemm, int passes,
                         const nat_ext *ext, nat_state **out) {
  *out = NULL;
  nat_state *s = calloc(1, sizeof *s);
  if (!s) {
    ait_graph_free(g);
    return ait_err(AIT_E_NOMEM, "out of memory");
  }
  s->g = g;
  if (!(s->shared = shared_new(g))) {
    ait_graph_free(g);
    free(s);
    return ait_err(AIT_E_NOMEM, "out of memory");
  }
  s->threads = threads < 1 ? 1 : threads > 256 ? 256 : threads;
  s->fuse = passes;
  s->isa = nat_isa();
  s->gemv_pack = true;
  s->tiles = true;
  s->winograd = true;
  if (ext) s->ext = *ext;
  ait_status st = nat_gemm_provider(gemm, &s->gemm);
  if (gemm && strcmp(gemm, "auto") != 0) snprintf(s->gemm_name, sizeof s->gemm_name, "%s", gemm);
  if (!st && passes) st = nat_run_passes_ex(g, &s->stats, true);
  if (!st && (passes & NAT_PASSES_LAYOUT)) st = nat_pass_layout(g, &s->stats);
  if (!st) st = nat_resolve_fused(g);
  if (!st) st = check_kernels(g, ext);
  s->has_subgraph = graph_has_subgraph(g);
  if (!st) st = nat_exec_prepare(s);
  if (st) {
    nat_state_free(s);
    return st;
  }
  *out = s;
  return AIT_OK;
}

ait_status nat_state_clone(const nat_state *s, nat_state **out) {
  *out = NULL;
  if (s->ext.kernel)
    return ait_err(AIT_E_UNSUPPORTED, "native: a state with an extension does not clone");
  nat_state *c = calloc(1, sizeof *c);
  if (!c) return ait_err(AIT_E_NOMEM, "out of memory");
  atomic_fetch_add_explicit(&s->shared->refs, 1, memory_order_relaxed);
  /* what s packed so far becomes the family's (cloning is a use of s, on
   * its thread: its own table may be changed) */
  nat_exec_publish_packs((nat_state *)s);
  c->shared = s->shared;
  c->g = s->g;
  c->gemm = s->gemm;
  memcpy(c->gemm_name, s->gemm_name, sizeof c->gemm_name);
  c->threads = s->threads;
  c->isa = s->isa;
  c->fuse = s->fuse;
  c->gemv_pack = s->gemv_pack;
  c->tiles = s->tiles;
  c->winograd = s->winograd;
  c->has_subgraph = s->has_subgraph;
  c->stats = s->stats;
  ait_status st = nat_exec_prepare(c); /* the analysis of the same graph: small tables */
  if (st) {
    nat_state_free(c);
    return st;
  }
  *out = c;
  return AIT_OK;
}

static ait_status native_clone(void *state, void **out) {
  nat_state *c = NULL;
  AIT_TRY(nat_state_clone(state, &c));
  *out = c;
  return AIT_OK;
}

/* Weights: the graph's initializers and the packed constants (the shared
 * block's and this state's own); work: arena and scratch. */
static void native_memory(void *state, int64_t *weights, int64_t *work) {
  nat_state *s = state;
  int64_t w = 0;
  for (int v = 0; v < s->g->n_values; v++)
    if (nat_is_const(s->g, v)) w += ait_tensor_nbytes(s->g->values[v].init);
  w += nat_exec_pack_bytes(s);
  *weights = w;
  *work = s->arena_cap + s->scratch_cap;
}

/* A state over rewritten graph g (taken over, freed on failure). */
static ait_status make_state(const ait_backend_config *cfg, ait_graph *g, bool run_passes,
                             void **state) {
  const char *fuse = ait_backend_config_get(cfg, "fuse");
  bool on = !fuse || strcmp(fuse, "off") != 0;
  const char *layout = ait_backend_config_get(cfg, "layout");
  int passes = run_passes && on ? NAT_PASSES : 0;
  int isa = nat_isa_parse(ait_backend_config_get(cfg, "isa"));
  if (isa < 0) isa = nat_isa_cpu(); /* the option table refused other names already */
  /* the passes and the layout choice see the state's level, as its runs do */
  int prev_isa = nat_isa_enter(isa);
  /* NHWC has AVX-512 and AVX2 kernels; its portable loops lose to SGEMM
   * (MobileNetV2 0.35 at isa=avx2: nhwc 3.6x nchw, docs/native.md) */
  bool nhwc = layout && !strcmp(layout, "nhwc");
  if (!layout || !strcmp(layout, "auto")) nhwc = nat_nhwc_available();
  if (passes && nhwc) passes |= NAT_PASSES_LAYOUT;
  nat_state *s = NULL;
  ait_status made =
      nat_state_new(g, resolve_threads(cfg), ait_backend_config_get(cfg, "gemm"), passes, NULL, &s);
  nat_isa_enter(prev_isa);
  AIT_TRY(made);
  s->fuse = on;
  const char *gemv = ait_backend_config_get(cfg, "gemv");
  s->gemv_pack = !gemv || strcmp(gemv, "plain") != 0;
  const char *tiles = ait_backend_config_get(cfg, "tiles");
  s->tiles = !tiles || strcmp(tiles, "off") != 0;
  const char *wino = ait_backend_config_get(cfg, "winograd");
  s->winograd = !wino || strcmp(wino, "off") != 0;
  ait_status st = run_passes && attn_bf16(cfg) ? nat_attention_bf16(s->g) : AIT_OK;
  if (st) {
    nat_state_free(s);
    return st;
  }
  *state = s;
  return AIT_OK;
}

static ait_status native_build(const ait_backend_config *cfg, const ait_graph *g,
                               const ait_build_info *info, void **state) {
  AIT_TRY(ait_eager_check(g));
  ait_graph *copy = nat_graph_clone(g, NULL, true);
  if (!copy) return AIT_E_NOMEM;
  return make_state(cfg, copy, true, state);
}

static ait_status native_infer(void *state, const ait_tensor *const *in, int n_in,
                               ait_tensor **out) {
  return nat_exec_run(state, in, n_in, out);
}

static ait_status native_activate(void *state) { return AIT_OK; /* rebuilt lazily by infer */ }

static ait_status native_deactivate(void *state) {
  nat_exec_release(state);
  return AIT_OK;
}

static void native_idle(void *state) { nat_pool_park(((nat_state *)state)->pool); }

static ait_status native_save(void *state, const char *dir) {
  nat_state *s = state;
  char *path = ait_path_join(dir, "native.onnx");
  if (!path) return ait_err(AIT_E_NOMEM, "out of memory");
  ait_status st = ait_onnx_write_model(s->g, path);
  free(path);
  return st;
}

static ait_status native_load(const ait_backend_config *cfg, const ait_graph *g, const char *dir,
                              void **state) {
  ait_graph *loaded = NULL;
  ait_status st = ait_onnx_load_saved_graph(dir, "native.onnx", g, &loaded);
  if (st) return ait_err_prefix(st, "native");
  return make_state(cfg, loaded, false, state);
}

/* native:gemm=X where no run has reached the GEMM library (every product
 * on native's own tiles and GEMV, convolutions in NHWC): the same code as
 * the default provider's configuration. */
static const char *native_unused_option(void *state, char *why, size_t n) {
  nat_state *s = state;
  if (!s->gemm_name[0] || atomic_load_explicit(&s->gemm_calls, memory_order_relaxed) > 0)
    return NULL;
  snprintf(why, n,
           "gemm=%s: no run reached the GEMM library (every product ran on native's own "
           "kernels), so this is native's default configuration under another name",
           s->gemm_name);
  return "gemm";
}

/* Knobs the tuner searches: all cores, or one (on a busy machine a second
 * thread can cost more than it brings), and the GEMM library. */
static const char *const native_variants[] = {"native", "native:threads=1", "native:gemm=blis",
                                              NULL};

const ait_backend_iface ait_backend_native = {
    .name = "native",
    .summary = "optimised CPU engine: graph passes and fusion, OpenBLAS GEMM/Conv, thread pool, "
               "liveness-planned arena",
    .options = native_options,
    .n_options = (int)(sizeof native_options / sizeof native_options[0]),
    .available = native_available,
    .supports = native_supports,
    .build = native_build,
    .infer = native_infer,
    .activate = native_activate,
    .deactivate = native_deactivate,
    .idle = native_idle,
    .save = native_save,
    .load = native_load,
    .destroy = native_destroy,
    .precision = native_precision,
    .variants = native_variants,
    .unused_option = native_unused_option,
    .clone = native_clone,
    .memory = native_memory,
};
