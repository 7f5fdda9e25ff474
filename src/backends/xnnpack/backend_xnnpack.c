/* Backend `xnnpack`: placeholder until the engine lands. */
#include <stdio.h>

#include "backends/backend.h"

static bool xnnpack_available(char *why, size_t n) {
  snprintf(why, n, "the xnnpack backend is not built yet");
  return false;
}

const ait_backend_iface ait_backend_xnnpack = {
    .name = "xnnpack",
    .summary = "xnnpack CPU engine (not built yet)",
    .available = xnnpack_available,
};
