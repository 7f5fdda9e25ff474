/* Backend `cuda`: NVIDIA GPUs through cuBLASLt, cuDNN and kernels of its own
 * (see cuda_impl.h for how the pieces fit). Variants: dtype=fp32 (strict
 * float32: no TF32 anywhere), tf32 (float32 storage, TF32 Tensor Cores),
 * bf16 and fp16 (weights converted once at build, activations stored in the
 * reduced type, float32 accumulation; inputs and outputs keep their ONNX
 * types), fp8 (bf16 storage; MatMul/Gemm with constant weights run as
 * cuBLASLt e4m3 GEMMs: weights quantized once per tensor, activations per
 * tensor on the fly — the quant backend's fp8dq on the GPU; compute
 * capability 8.9 or newer), fp8wo (bf16 with MatMul/Gemm weights kept as
 * e4m3 with one scale per output channel and dequantized into bf16 before
 * each GEMM: quant's fp8wo on the GPU, for memory); graphs=on|off (replay
 * each input shape's plan as a CUDA graph).
 *
 * available() asks the CUDA runtime for a device; without a driver or a GPU
 * it says why and the backend is skipped, so the same binary runs on
 * machines with and without one. */
#ifdef AIT_HAVE_CUDA

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_debug.h"
#include "backends/cuda/cuda_impl.h"
#include "core/fileio.h"
#include "onnx/onnx_io.h"

static const ait_option_def cuda_options[] = {
    {"dtype", AIT_OPT_ENUM, "fp32", "fp32|tf32|bf16|fp16|fp8|fp8wo",
     "compute precision: fp32 strict, tf32 Tensor Cores on float32, bf16/fp16 storage with "
     "float32 accumulation, fp8 (bf16 storage, e4m3 GEMMs with dynamic per-tensor activation "
     "scales: quant's fp8dq; needs compute capability >= 8.9), or fp8wo (bf16, MatMul/Gemm "
     "weights stored as e4m3 with a scale per output channel, dequantized to bf16 before each "
     "GEMM: quant's fp8wo; half of bf16's weight memory, a little slower)"},
    {"fp8_fast_accum", AIT_OPT_BOOL, "off", NULL,
     "dtype=fp8: cuBLASLt's fast accumulation (faster, fewer accumulator bits)"},
    {"fp8_amax", AIT_OPT_BOOL, "off", NULL,
     "dtype=fp8: an fp8 GEMM feeding another has cuBLASLt compute its output's absmax "
     "(AMAX_D) for the next one's quantization, one pass less (kept only where it runs)"},
    {"fp8_gemms", AIT_OPT_ENUM, "auto", "auto|all",
     "dtype=fp8: all = every GEMM with a constant weight whose shape suits runs on e4m3; auto "
     "= per GEMM the faster of e4m3 (its activation's quantization included) and bfloat16, "
     "timed when the plan is made and kept with the algorithms (algo=heuristic: all)"},
    {"gelu", AIT_OPT_ENUM, "auto", "auto|exact",
     "GELU after a GEMM: auto = cuBLASLt's tanh-approximated epilogue for bf16/fp16/fp8 "
     "(differs by < 1e-3), exact = erf in a separate pass"},
    {"graphs", AIT_OPT_BOOL, "on", NULL,
     "capture each input shape's plan into a CUDA graph replayed per call"},
    {"layout", AIT_OPT_ENUM, "auto", "auto|nchw|nhwc",
     "activation layout of convolutions (auto: nhwc except for fp32)"},
    {"conv", AIT_OPT_ENUM, "auto", "auto|cudnn|gemm",
     "NHWC convolutions of one group: cudnn, gemm = cuBLASLt GEMMs (1x1 stride 1 read the "
     "activation as it is, others through an im2col pass), auto = per convolution the faster "
     "of the two, timed when the plan is made (cudnn under algo=heuristic)"},
    {"algo", AIT_OPT_ENUM, "measure", "measure|heuristic",
     "GEMM/conv algorithms: time the heuristic's best candidates, or take its first"},
    {"candidates", AIT_OPT_INT, "8", "1..64", "algorithms timed per GEMM/convolution"},
    {"attention", AIT_OPT_ENUM, "auto", "auto|on|wmma|gemm|off",
     "Softmax(Q.K^T*scale+mask).V: on = one fused kernel for bf16/fp16 (FlashAttention-2 "
     "style for head size 64, WMMA otherwise; a masked softmax for other types), wmma = the "
     "WMMA kernel for every head size, gemm = batched cuBLASLt GEMMs around a masked softmax, "
     "auto = on where the FlashAttention-2 kernel applies, else the WMMA kernel when it fills "
     "the GPU (>= 2 blocks per SM), else gemm; off = as written"},
    {"qkv", AIT_OPT_BOOL, "on", NULL,
     "bf16/fp16/fp8 with fused attention: the Q, K and V projections of one input as one GEMM "
     "(concatenated weights), read in place by the attention kernel"},
    {"workspace_mb", AIT_OPT_INT, "256", "0..16384", "cuBLASLt/cuDNN workspace (MiB)"},
    {"device", AIT_OPT_INT, "0", "0..63", "CUDA device index"},
};

const char *cu_prec_name(cu_prec p) {
  static const char *const names[] = {"fp32", "tf32", "bf16", "fp16", "fp8", "fp8wo"};
  return p >= CU_FP32 && p <= CU_PREC_LAST ? names[p] : "fp32";
}

ait_status cu_opts_parse(const ait_backend_config *cfg, cu_opts *o) {
  memset(o, 0, sizeof *o);
  const char *dt = ait_backend_config_get(cfg, "dtype");
  o->prec = CU_FP32;
  for (int p = CU_FP32; p <= CU_PREC_LAST; p++)
    if (dt && !strcmp(dt, cu_prec_name((cu_prec)p))) o->prec = (cu_prec)p;
  const char *g = ait_backend_config_get(cfg, "graphs");
  o->graphs = !g || strcmp(g, "off") != 0;
  const char *lay = ait_backend_config_get(cfg, "layout");
  o->nhwc = lay && !strcmp(lay, "nhwc")   ? true
            : lay && !strcmp(lay, "nchw") ? false
                                          : o->prec != CU_FP32;
  const char *al = ait_backend_config_get(cfg, "algo");
  o->measure = !al || strcmp(al, "heuristic") != 0;
  o->candidates = (int)ait_backend_config_int(cfg, "candidates", 8);
  const char *fa8 = ait_backend_config_get(cfg, "fp8_amax");
  o->fp8_amax = fa8 && !strcmp(fa8, "on");
  const char *f8g = ait_backend_config_get(cfg, "fp8_gemms");
  o->fp8_all = f8g && !strcmp(f8g, "all");
  const char *qk = ait_backend_config_get(cfg, "qkv");
  o->qkv = !qk || strcmp(qk, "off") != 0;
  const char *cv = ait_backend_config_get(cfg, "conv");
  o->conv = cv && !strcmp(cv, "cudnn")  ? CU_CONV_CUDNN
            : cv && !strcmp(cv, "gemm") ? CU_CONV_GEMM
                                        : CU_CONV_AUTO;
  const char *at = ait_backend_config_get(cfg, "attention");
  o->attention = !at || strcmp(at, "off") != 0;
  o->attn_gemm = at && !strcmp(at, "gemm");
  o->attn_wmma = at && !strcmp(at, "wmma");
  o->attn_auto = !at || !strcmp(at, "auto");
  o->ws_bytes = ait_backend_config_int(cfg, "workspace_mb", 256) << 20;
  o->device = (int)ait_backend_config_int(cfg, "device", 0);
  const char *fa = ait_backend_config_get(cfg, "fp8_fast_accum");
  o->fp8_fast = fa && !strcmp(fa, "on");
  const char *ge = ait_backend_config_get(cfg, "gelu");
  o->gelu_lt = !ge || strcmp(ge, "exact") != 0;
  return AIT_OK;
}

static bool cuda_available(char *why, size_t n) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    snprintf(why, n, "not available: %s", cudaGetErrorString(e));
    cudaGetLastError();
    return false;
  }
  if (count < 1) {
    snprintf(why, n, "not available: no CUDA device");
    return false;
  }
  int major = 0, minor = 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);
  if (major < 9) {
    snprintf(why, n,
             "not available: device 0 has compute capability %d.%d; this build has code for "
             "sm_90 (Hopper) and newer only",
             major, minor);
    return false;
  }
  return true;
}

static bool cuda_supports(const ait_backend_config *cfg, const ait_graph *g, const ait_node *node,
                          char *why, size_t n) {
  return cu_supports_node(g, node, why, n);
}

static void cuda_destroy(void *state) {
  cu_state *s = state;
  if (!s) return;
  cu_state_close(s);
  free(s->algos);
  ait_cuda_e4m3w_free(s->wo, s->n_wo);
  ait_graph_free(s->g);
  free(s->bound);
  free(s);
}

/* A state over rewritten graph g (taken over; freed on failure). */
static ait_status make_state(const ait_backend_config *cfg, ait_graph *g, bool dry,
                             cu_state **out) {
  cu_state *s = calloc(1, sizeof *s);
  if (!s) {
    ait_graph_free(g);
    return ait_err(AIT_E_NOMEM, "cuda: out of memory");
  }
  s->last_ms = -1;
  s->g = g;
  s->dry = dry;
  cu_opts_parse(cfg, &s->o);
  s->fdt = s->o.prec == CU_BF16 || s->o.prec == CU_FP8 || s->o.prec == CU_FP8WO ? AIT_BFLOAT16
           : s->o.prec == CU_FP16                                               ? AIT_FLOAT16
                                                                                : AIT_FLOAT32;
  ait_status st = cu_state_open(s);
  if (!st && !dry && s->o.prec == CU_FP8 && s->sm < 89)
    st = ait_err(AIT_E_UNSUPPORTED,
                 "cuda: dtype=fp8 needs fp8 Tensor Cores (compute capability >= 8.9); %s has "
                 "%d.%d",
                 s->device_name, s->sm / 10, s->sm % 10);
  if (st) {
    cuda_destroy(s);
    return st;
  }
  *out = s;
  return AIT_OK;
}

/* Check every node, copy g and rewrite the copy; a state over it. */
static ait_status rewrite_state(const ait_backend_config *cfg, const ait_graph *g, bool dry,
                                cu_state **out) {
  char why[256];
  for (int i = 0; i < g->n_nodes; i++)
    if (!cu_supports_node(g, &g->nodes[i], why, sizeof why))
      return ait_err(AIT_E_UNSUPPORTED, "cuda: %s: %s", ait_node_desc(&g->nodes[i]), why);
  ait_graph *copy = nat_graph_clone(g, NULL, true);
  if (!copy) return AIT_E_NOMEM;
  nat_pass_stats stats;
  ait_status st = nat_run_passes_for(copy, &stats, false, &cu_accepts);
  cu_opts o;
  int merged = 0;
  if (!st) st = cu_opts_parse(cfg, &o);
  if (!st) st = cu_pass_qkv(copy, &o, &merged);
  int gn = 0;
  if (!st) st = nat_pass_groupnorm(copy, &gn); /* native's, which cuda's passes skip */
  if (st) {
    ait_graph_free(copy);
    return ait_err_prefix(st, "cuda: graph passes");
  }
  AIT_TRY(make_state(cfg, copy, dry, out));
  (*out)->stats = stats;
  return AIT_OK;
}

static ait_status cuda_build(const ait_backend_config *cfg, const ait_graph *g,
                             const ait_build_info *info, void **state) {
  char why[256];
  if (!cuda_available(why, sizeof why)) return ait_err(AIT_E_UNSUPPORTED, "cuda: %s", why);
  /* Plans (shapes, uploads, measured algorithms) are made by the first infer()
   * of each input signature: the tuner's numeric check does that before any
   * timing. info's samples are not used: a partition runner hands the whole
   * model's samples to each segment, whose inputs differ. */
  cu_state *s;
  AIT_TRY(rewrite_state(cfg, g, false, &s));
  *state = s;
  return AIT_OK;
}

static ait_status cuda_infer(void *state, const ait_tensor *const *in, int n_in, ait_tensor **out) {
  return cu_infer(state, in, n_in, out);
}

static ait_status cuda_activate(void *state) { return cu_state_open(state); }

static ait_status cuda_set_io(void *state, const ait_backend_io *io) {
  return cu_set_io(state, io);
}

static double cuda_last_device_ms(void *state) { return cu_last_device_ms(state); }

static ait_status cuda_deactivate(void *state) {
  cu_state_close(state);
  return AIT_OK;
}

static ait_status cuda_save(void *state, const char *dir) { return cu_save(state, dir); }

/* Weights on the device (every format made), and the plans' arenas. */
static void cuda_memory(void *state, int64_t *weights, int64_t *work) {
  const cu_state *s = state;
  *weights = *work = 0;
  for (int i = 0; i < s->n_w; i++)
    *weights += s->w[i].bytes;
  for (int i = 0; i < s->n_plans; i++)
    *work += s->plans[i]->arena_bytes;
}

static ait_status cuda_load(const ait_backend_config *cfg, const ait_graph *g, const char *dir,
                            void **state) {
  char why[256];
  if (!cuda_available(why, sizeof why)) return ait_err(AIT_E_UNSUPPORTED, "cuda: %s", why);
  ait_graph *loaded = NULL;
  ait_status st = ait_onnx_load_saved_graph(dir, "cuda.onnx", g, &loaded);
  if (st) return ait_err_prefix(st, "cuda");
  if ((st = nat_resolve_fused(loaded))) {
    ait_graph_free(loaded);
    return st;
  }
  cu_state *s;
  AIT_TRY(make_state(cfg, loaded, false, &s));
  st = cu_load_algos(s, dir);
  if (!st) st = cu_load_fp8wo(s, dir);
  if (st) {
    cuda_destroy(s);
    return st;
  }
  *state = s;
  return AIT_OK;
}

ait_status ait_cuda_dry_plan(const char *spec, const ait_graph *g, const ait_tensor *const *in,
                             int n_in, char **text) {
  *text = NULL;
  ait_backend_config cfg;
  AIT_TRY(ait_backend_config_parse(spec, &cfg));
  cu_state *s;
  AIT_TRY(rewrite_state(&cfg, g, true, &s));
  cu_plan *p = NULL;
  ait_status st = cu_plan_create(s, in, n_in, &p);
  if (!st && !(*text = cu_plan_describe(p))) st = ait_err(AIT_E_NOMEM, "cuda: out of memory");
  if (!st) { /* what the weights would take on the device */
    int64_t wb = 0, work = 0;
    cuda_memory(s, &wb, &work);
    size_t len = strlen(*text);
    char *more = realloc(*text, len + 96);
    if (more) {
      snprintf(more + len, 96, "weights: %lld bytes in %d buffers\n", (long long)wb, s->n_w);
      *text = more;
    } else {
      st = ait_err(AIT_E_NOMEM, "cuda: out of memory");
    }
  }
  cu_plan_free(p);
  cuda_destroy(s);
  return st;
}

/* fp8wo is judged like fp8 (quantized: cosine and top-1). */
static const char *cuda_precision(const ait_backend_config *cfg) {
  const char *dt = ait_backend_config_get(cfg, "dtype");
  return dt && !strcmp(dt, "fp8wo") ? "fp8" : dt;
}

/* What the tuner tries when the user names no backends: every float
 * precision; reduced ones win only if they pass the numeric check at their
 * tolerance. fp8 is quantization: tried only when named (as `quant` is). */
static const char *const cuda_variants[] = {"cuda", "cuda:dtype=tf32", "cuda:dtype=bf16",
                                            "cuda:dtype=fp16", NULL};

const ait_backend_iface ait_backend_cuda = {
    .name = "cuda",
    .summary = "NVIDIA GPUs: cuBLASLt GEMMs with fused epilogues, cuDNN convolutions, own kernels, "
               "liveness-planned arena, CUDA graphs per input shape",
    .options = cuda_options,
    .n_options = (int)(sizeof cuda_options / sizeof cuda_options[0]),
    .available = cuda_available,
    .supports = cuda_supports,
    .build = cuda_build,
    .infer = cuda_infer,
    .activate = cuda_activate,
    .deactivate = cuda_deactivate,
    .save = cuda_save,
    .load = cuda_load,
    .destroy = cuda_destroy,
    .precision = cuda_precision,
    .variants = cuda_variants,
    .memory = cuda_memory,
    .set_io = cuda_set_io,
    .last_device_ms = cuda_last_device_ms,
};

#endif
