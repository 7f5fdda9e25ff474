/* Backend `native`: placeholder until the optimised engine lands. */
#include <stdio.h>

#include "backends/backend.h"
#include "core/error.h"

static bool native_available(char *why, size_t n) {
  snprintf(why, n, "the native engine is not built yet");
  return false;
}

const ait_backend_iface ait_backend_native = {
    .name = "native",
    .summary = "optimised CPU engine (not built yet)",
    .available = native_available,
};
