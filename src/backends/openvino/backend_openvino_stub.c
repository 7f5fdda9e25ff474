/* Backend `openvino` when the library is built without OpenVINO's headers:
 * the same name and options as the real one (backend_openvino.c), so
 * configurations such as "openvino:threads=2" still parse, but it is never
 * available and supports nothing. Compiled only without AIT_HAVE_OPENVINO. */
#ifndef AIT_HAVE_OPENVINO

#include <stdio.h>

#include "backends/backend.h"
#include "backends/openvino/ov_options.h"
#include "core/error.h"

static const char stub_reason[] =
    "built without OpenVINO (install the PyPI wheel `openvino` into .venv, or set "
    "-DOpenVINO_ROOT=..., and configure again)";

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
  return ait_err(AIT_E_UNSUPPORTED, "openvino: %s", stub_reason);
}

static ait_status stub_infer(void *state, const ait_tensor *const *in, int n_in, ait_tensor **out) {
  return ait_err(AIT_E_UNSUPPORTED, "openvino: %s", stub_reason);
}

static ait_status stub_nop(void *state) { return AIT_OK; }

static ait_status stub_save(void *state, const char *dir) {
  return ait_err(AIT_E_UNSUPPORTED, "openvino: %s", stub_reason);
}

static ait_status stub_load(const ait_backend_config *cfg, const ait_graph *g, const char *dir,
                            void **state) {
  return ait_err(AIT_E_UNSUPPORTED, "openvino: %s", stub_reason);
}

static void stub_destroy(void *state) {}

static const char *const stub_variants[] = {"openvino", NULL};

const ait_backend_iface ait_backend_openvino = {
    .name = "openvino",
    .summary = "Intel OpenVINO's CPU plugin through its C API (not built in)",
    .options = ov_options,
    .n_options = (int)(sizeof ov_options / sizeof ov_options[0]),
    .available = stub_available,
    .supports = stub_supports,
    .build = stub_build,
    .infer = stub_infer,
    .activate = stub_nop,
    .deactivate = stub_nop,
    .save = stub_save,
    .load = stub_load,
    .destroy = stub_destroy,
    .variants = stub_variants,
};

#endif
