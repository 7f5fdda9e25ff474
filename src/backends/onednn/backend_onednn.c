/* Backend `onednn`: placeholder until the engine lands. */
#include <stdio.h>

#include "backends/backend.h"

static bool onednn_available(char *why, size_t n) {
  snprintf(why, n, "the onednn backend is not built yet");
  return false;
}

const ait_backend_iface ait_backend_onednn = {
    .name = "onednn",
    .summary = "onednn CPU engine (not built yet)",
    .available = onednn_available,
};
