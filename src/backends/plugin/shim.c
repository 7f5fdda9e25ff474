/* The plugin's side of plugin.h, linked into every plugin (never into
 * libaitune): the library functions the backend's sources call, each a call
 * through the host table the entry point received, and the entry point.
 * Built with AIT_PLUGIN_IFACE naming the plugin's backend row
 * (ait_backend_cuda). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ait_build_id.h"
#include "backends/plugin/plugin.h"

#ifndef AIT_PLUGIN_IFACE
#error "build the shim with -DAIT_PLUGIN_IFACE=<the plugin's ait_backend_iface>"
#endif

extern const ait_backend_iface AIT_PLUGIN_IFACE;

/* Set once by the entry point, before the library calls anything else of
 * the plugin; read-only afterwards. */
static const ait_plugin_host *host;

#define AIT_HOST_FN(ret, name, params, args)                                                       \
  ret name params { return host->name args; }
#define AIT_HOST_VOID(name, params, args)                                                          \
  void name params { host->name args; }
#include "backends/plugin/host_fns.h"
#undef AIT_HOST_FN
#undef AIT_HOST_VOID

ait_status ait_err(ait_status code, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return host->err_msg(code, msg);
}

ait_status ait_err_prefix(ait_status code, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return host->err_prefix_msg(code, msg);
}

__attribute__((visibility("default"))) ait_status
ait_plugin_init(const ait_plugin_host *h, const ait_backend_iface **iface, char *why, size_t n);

ait_status ait_plugin_init(const ait_plugin_host *h, const ait_backend_iface **iface, char *why,
                           size_t n) {
  *iface = NULL;
  if (!h || h->abi != AIT_PLUGIN_ABI || h->size != sizeof(ait_plugin_host)) {
    snprintf(why, n, "plugin interface %u (%zu bytes) expected, the library has %u (%u bytes)",
             AIT_PLUGIN_ABI, sizeof(ait_plugin_host), h ? h->abi : 0, h ? h->size : 0);
    return AIT_E_UNSUPPORTED;
  }
  if (!h->build_id || strcmp(h->build_id, AIT_BUILD_ID) != 0) {
    snprintf(why, n, "built with aitune %s, the library is %s: install both from one build",
             AIT_BUILD_ID, h->build_id ? h->build_id : "unknown");
    return AIT_E_UNSUPPORTED;
  }
  host = h;
  *iface = &AIT_PLUGIN_IFACE;
  return AIT_OK;
}
