/* Backend `cuda` when the library is built without the CUDA toolkit: the
 * same name and options as the real one (backend_cuda.c), so configurations
 * such as "cuda:dtype=bf16" still parse, but it is never available and
 * supports nothing. Compiled only when AIT_HAVE_CUDA is not defined, and
 * only into test_cuda: libaitune's cuda row is plugin/cuda_row.c. */
#ifndef AIT_HAVE_CUDA

#include <stdio.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/cuda/cuda_debug.h"
#include "core/error.h"

static const ait_option_def cuda_stub_options[] = {
    {"dtype", AIT_OPT_ENUM, "fp32", "fp32|tf32|bf16|fp16|fp8|fp8wo", "compute precision"},
    {"fp8_fast_accum", AIT_OPT_BOOL, "off", NULL, "dtype=fp8: cuBLASLt fast accumulation"},
    {"fp8_amax", AIT_OPT_BOOL, "off", NULL, "dtype=fp8: the next GEMM's scale from cuBLASLt"},
    {"fp8_gemms", AIT_OPT_ENUM, "auto", "auto|all", "dtype=fp8: which GEMMs run on e4m3"},
    {"gelu", AIT_OPT_ENUM, "auto", "auto|exact", "GELU after a GEMM: cuBLASLt tanh or exact"},
    {"graphs", AIT_OPT_BOOL, "on", NULL, "capture each input shape into a CUDA graph"},
    {"layout", AIT_OPT_ENUM, "auto", "auto|nchw|nhwc", "activation layout of convolutions"},
    {"conv", AIT_OPT_ENUM, "auto", "auto|cudnn|gemm", "NHWC convolutions: cuDNN or GEMMs"},
    {"algo", AIT_OPT_ENUM, "measure", "measure|heuristic", "GEMM/conv algorithm choice"},
    {"candidates", AIT_OPT_INT, "8", "1..64", "algorithms measured per GEMM/conv"},
    {"attention", AIT_OPT_ENUM, "auto", "auto|on|wmma|gemm|off", "fuse attention patterns"},
    {"qkv", AIT_OPT_BOOL, "on", NULL, "the Q, K and V projections as one GEMM"},
    {"workspace_mb", AIT_OPT_INT, "256", "0..16384", "cuBLASLt/cuDNN workspace (MiB)"},
    {"device", AIT_OPT_INT, "0", "0..63", "CUDA device index"},
};

static const char stub_reason[] = "built without CUDA (configure with the CUDA toolkit installed)";

static bool stub_available(char *why, size_t n) {
  snprintf(why, n, "%s", stub_reason);
  return false;
}

static bool stub_supports(const ait_backend_config *cfg, const ait_graph *g, const ait_node *node,
                          char *why, size_t n) {
  snprintf(why, n, "%s", stub_reason);
  return false;
}

static ait_status stub_build(const ait_backend_config *cfg, const ait_graph *g,
                             const ait_build_info *info, void **state) {
  return ait_err(AIT_E_UNSUPPORTED, "cuda: %s", stub_reason);
}

static ait_status stub_infer(void *state, const ait_tensor *const *in, int n_in, ait_tensor **out) {
  return ait_err(AIT_E_UNSUPPORTED, "cuda: %s", stub_reason);
}

static ait_status stub_nop(void *state) { return AIT_OK; }

static ait_status stub_save(void *state, const char *dir) {
  return ait_err(AIT_E_UNSUPPORTED, "cuda: %s", stub_reason);
}

static ait_status stub_load(const ait_backend_config *cfg, const ait_graph *g, const char *dir,
                            void **state) {
  return ait_err(AIT_E_UNSUPPORTED, "cuda: %s", stub_reason);
}

static void stub_destroy(void *state) {}

ait_status ait_cuda_dry_plan(const char *spec, const ait_graph *g, const ait_tensor *const *in,
                             int n_in, char **text) {
  *text = NULL;
  return ait_err(AIT_E_UNSUPPORTED, "cuda: %s", stub_reason);
}

static const char *stub_precision(const ait_backend_config *cfg) {
  const char *dt = ait_backend_config_get(cfg, "dtype");
  return dt && !strcmp(dt, "fp8wo") ? "fp8" : dt;
}

const ait_backend_iface ait_backend_cuda = {
    .name = "cuda",
    .summary = "NVIDIA GPUs (not built: no CUDA toolkit at configure time)",
    .options = cuda_stub_options,
    .n_options = (int)(sizeof cuda_stub_options / sizeof cuda_stub_options[0]),
    .available = stub_available,
    .supports = stub_supports,
    .build = stub_build,
    .infer = stub_infer,
    .activate = stub_nop,
    .deactivate = stub_nop,
    .save = stub_save,
    .load = stub_load,
    .destroy = stub_destroy,
    .precision = stub_precision,
};

#endif
