/* The cuda row of the backend table. The cuda backend lives in a plugin,
 * libaitune_cuda.so (src/backends/cuda/, built when the CUDA toolkit is
 * found at configure time), so that libaitune links no CUDA library and
 * loads on machines without one. Where the plugin does not load, the row is
 * a stand-in with the same name and options, so that configurations such
 * as "cuda:dtype=bf16" still parse (a tuned folder names one), which is
 * never available and gives the reason the plugin did not load. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "backends/plugin/plugin.h"

/* The real backend's options (backend_cuda.c), names, defaults and choices;
 * test_cuda checks that the two lists agree. */
static const ait_option_def standin_options[] = {
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

static struct {
  pthread_once_t once;
  const ait_backend_iface *plugin;
  char why[2048];
} row = {PTHREAD_ONCE_INIT, NULL, ""};

static void load(void) {
#ifdef AIT_CUDA_PLUGIN_BUILT
  char why[sizeof row.why - 64];
  row.plugin = ait_plugin_load("cuda", why, sizeof why);
  if (!row.plugin) snprintf(row.why, sizeof row.why, "the cuda plugin did not load: %s", why);
#else
  snprintf(row.why, sizeof row.why,
           "built without CUDA (configure with the CUDA toolkit installed to build "
           "libaitune_cuda.so)");
#endif
}

static bool standin_available(char *why, size_t n) {
  pthread_once(&row.once, load);
  snprintf(why, n, "%s", row.why);
  return false;
}

static bool standin_supports(const ait_backend_config *cfg, const ait_graph *g,
                             const ait_node *node, char *why, size_t n) {
  return standin_available(why, n);
}

static ait_status unavailable(void) {
  pthread_once(&row.once, load);
  return ait_err(AIT_E_UNSUPPORTED, "cuda: %s", row.why);
}

static ait_status standin_build(const ait_backend_config *cfg, const ait_graph *g,
                                const ait_build_info *info, void **state) {
  *state = NULL;
  return unavailable();
}

static ait_status standin_infer(void *state, const ait_tensor *const *in, int n_in,
                                ait_tensor **out) {
  return unavailable();
}

static ait_status standin_nop(void *state) { return AIT_OK; }

static ait_status standin_save(void *state, const char *dir) { return unavailable(); }

static ait_status standin_load(const ait_backend_config *cfg, const ait_graph *g, const char *dir,
                               void **state) {
  *state = NULL;
  return unavailable();
}

static void standin_destroy(void *state) {}

static const char *standin_precision(const ait_backend_config *cfg) {
  const char *dt = ait_backend_config_get(cfg, "dtype");
  return dt && !strcmp(dt, "fp8wo") ? "fp8" : dt;
}

static const ait_backend_iface standin = {
    .name = "cuda",
    .summary = "NVIDIA GPUs (the plugin libaitune_cuda.so is not loaded)",
    .options = standin_options,
    .n_options = (int)(sizeof standin_options / sizeof standin_options[0]),
    .available = standin_available,
    .supports = standin_supports,
    .build = standin_build,
    .infer = standin_infer,
    .activate = standin_nop,
    .deactivate = standin_nop,
    .save = standin_save,
    .load = standin_load,
    .destroy = standin_destroy,
    .precision = standin_precision,
};

const ait_backend_iface *ait_cuda_backend(void) {
  pthread_once(&row.once, load);
  return row.plugin ? row.plugin : &standin;
}

const ait_backend_iface *ait_cuda_standin(void) { return &standin; }
