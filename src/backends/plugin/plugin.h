/* Backends built as plugins: shared objects libaitune loads with dlopen when
 * they are present (the cuda backend, libaitune_cuda.so), so that libaitune
 * itself links no engine that a machine may lack (CUDA) and loads anywhere.
 *
 * A plugin links nothing of libaitune. Its code is the backend's sources
 * as they are, calling the library's internal functions (ait_tensor_new,
 * nat_run_passes, ...); shim.c, linked into the plugin, defines each of
 * them as a call through the table below, which the library hands to the
 * plugin's entry point. So the plugin shares the library's state (the
 * per-thread error message, the profiler's observer, the backend table)
 * instead of carrying copies of it, works the same under libaitune.so,
 * libaitune.a or a program linked statically, and exports one symbol.
 *
 * A plugin reads the library's internal structs (graphs, tensors, backend
 * configurations), so it must come from the same build: the table carries
 * a build id (a digest of the internal headers, gen/ait_build_id.h) that
 * the plugin compares with its own and refuses on a mismatch, with the
 * reason. Where a plugin is looked for: loader.c. */
#ifndef AIT_BACKENDS_PLUGIN_PLUGIN_H
#define AIT_BACKENDS_PLUGIN_PLUGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/backend.h"
#include "backends/common/state_io.h"
#include "backends/native/native_engine.h"
#include "core/codec.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/tensor.h"
#include "ir/graph.h"
#include "ir/passes/passes.h"
#include "onnx/onnx_io.h"
#include "ops/fused_impl.h"
#include "ops/op.h"
#include "runtime/eager.h"
#include "runtime/observe.h"

/* Raised when the table's layout or meaning changes. */
#define AIT_PLUGIN_ABI 1

/* The one symbol a plugin exports: its entry point (ait_plugin_init_fn). */
#define AIT_PLUGIN_INIT_SYMBOL "ait_plugin_init"

typedef struct ait_plugin_host {
  uint32_t abi;         /* AIT_PLUGIN_ABI */
  uint32_t size;        /* sizeof(ait_plugin_host) */
  const char *build_id; /* AIT_BUILD_ID of the library */
  /* ait_err / ait_err_prefix with the message already formatted */
  ait_status (*err_msg)(ait_status code, const char *msg);
  ait_status (*err_prefix_msg)(ait_status code, const char *msg);
#define AIT_HOST_FN(ret, name, params, args) ret(*name) params;
#define AIT_HOST_VOID(name, params, args) void(*name) params;
#include "backends/plugin/host_fns.h"
#undef AIT_HOST_FN
#undef AIT_HOST_VOID
} ait_plugin_host;

/* The entry point: check host (ABI, size, build id) and keep it for the
 * shim, then point *iface at the plugin's backend (static, lives as long as
 * the plugin, which is never unloaded). On failure a reason in why. host is
 * borrowed and must outlive the plugin (the library's is static). */
typedef ait_status (*ait_plugin_init_fn)(const ait_plugin_host *host,
                                         const ait_backend_iface **iface, char *why, size_t n);

/* ---- the library's side (loader.c) ---------------------------------------- */

/* Load plugin `name` ("cuda": libaitune_cuda.so) and return its backend, or
 * NULL with the reason in why (not found where it was looked for, a CUDA
 * library it needs is missing, another build...). Looked for, in order: the
 * path in $AITUNE_<NAME>_PLUGIN when set ("" or "off": not at all), the
 * folder of the file holding this code (libaitune.so, or the program that
 * linked libaitune.a), then the dynamic loader's search path (the program's
 * RUNPATH, LD_LIBRARY_PATH, the system). The result is the caller's to keep;
 * call once per process (the cuda row does, registry.c). */
const ait_backend_iface *ait_plugin_load(const char *name, char *why, size_t n);

/* The cuda row of the backend table (cuda_row.c): the plugin's backend when
 * it loads, else a stand-in of the same name and options that is never
 * available and says why. Loads the plugin on the first call; thread-safe. */
const ait_backend_iface *ait_cuda_backend(void);
/* The stand-in itself (tests compare its options with the real backend's). */
const ait_backend_iface *ait_cuda_standin(void);

#endif
