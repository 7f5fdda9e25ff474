/* Backends as data (as in ggml): a table of function pointers plus an opaque
 * state per built instance. Every backend is one `ait_backend_iface` row in
 * src/backends/registry.c; its options are a table of `ait_option_def`.
 *
 * Life cycle (the tuner drives it):
 *   available() -> supports(node) for every node -> build() -> infer()...
 *   deactivate() frees big memory while other candidates are measured,
 *   activate() brings it back; save()/load() persist the built state so a
 *   tuned model loads without rebuilding; destroy() frees everything.
 *
 * Ownership: build()/load() return a state the caller frees with destroy().
 * The graph passed to build()/load() is borrowed and outlives the state
 * (backends that rewrite it work on their own copy). infer() inputs are
 * borrowed; outputs are new tensors the caller owns.
 * Threading: one state is used by one thread at a time. */
#ifndef AIT_BACKENDS_BACKEND_H
#define AIT_BACKENDS_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/tensor.h"
#include "ir/graph.h"

typedef enum ait_opt_type {
  AIT_OPT_INT,
  AIT_OPT_BOOL,
  AIT_OPT_ENUM,
  AIT_OPT_FLOAT,
  AIT_OPT_STRING /* free text without commas (a path, a pattern) */
} ait_opt_type;

typedef struct ait_option_def {
  const char *name;
  ait_opt_type type;
  const char *def;     /* default value as text; "auto" allowed for ints */
  const char *choices; /* ENUM: "a|b|c"; INT: "min..max" or NULL */
  const char *help;
} ait_option_def;

struct ait_backend_iface;

#define AIT_MAX_OPTS 16

/* A backend plus the options the user set explicitly ("native:threads=2").
 * Values are canonical text; unset options take their defaults. */
typedef struct ait_backend_config {
  const struct ait_backend_iface *iface;
  int n;
  char keys[AIT_MAX_OPTS][32];
  char vals[AIT_MAX_OPTS][256];
} ait_backend_config;

/* What the tuner knows when it asks for a build. */
typedef struct ait_build_info {
  const struct ait_graph_spec *spec;       /* dynamic axes and their ranges, may be NULL */
  const ait_tensor *const *const *samples; /* samples[s][i]: input i of sample s, may be NULL */
  int n_samples;
  const char *cache_dir; /* where a backend may keep build artifacts, may be NULL */
  /* User filter of the nodes a transforming backend (quantization) may
   * touch: return nonzero to allow node `name` of op type `op_type`. NULL =
   * the backend's own default. */
  int (*node_filter)(void *user, const char *op_type, const char *name);
  void *node_filter_user;
} ait_build_info;

/* Where a session wants a state's inputs read from and outputs put (the
 * public "device memory" API, include/aitune.h). Only backends with set_io
 * see it; the others get host tensors and return host tensors. */
typedef struct ait_backend_io {
  ait_mem_kind out_mem; /* where outputs go when not bound */
  /* bound[k] with data != NULL: write output k there (its dtype and dims
   * are what the output must have), borrowed; n_bound entries (may be 0) */
  const ait_tensor_view *bound;
  int n_bound;
  void *stream;     /* the caller's cudaStream_t to order runs after; NULL: none */
  bool time_device; /* record the device time of each run (last_device_ms) */
} ait_backend_io;

typedef struct ait_backend_iface {
  const char *name;
  const char *summary;
  const ait_option_def *options;
  int n_options;
  /* Usable on this machine? When not, a reason in why. */
  bool (*available)(char *why, size_t n);
  /* Can this configuration run node `node` of g? When not, a reason in why. */
  bool (*supports)(const ait_backend_config *cfg, const ait_graph *g, const ait_node *node,
                   char *why, size_t n);
  ait_status (*build)(const ait_backend_config *cfg, const ait_graph *g, const ait_build_info *info,
                      void **state);
  /* in[i] is graph input i; out[0..g->n_outputs) receive new tensors the
   * caller frees. A tensor's data may be borrowed from the state (owns is
   * false: cuda downloads into page-locked memory it reuses): it stays
   * valid until the next infer, deactivate or destroy of that state, so a
   * caller that keeps outputs past that copies them. On failure every out[i]
   * is left NULL. */
  ait_status (*infer)(void *state, const ait_tensor *const *in, int n_in, ait_tensor **out);
  ait_status (*activate)(void *state);
  ait_status (*deactivate)(void *state);
  /* Optional: the caller will now run other backends for a while (a
   * partition's next segment): threads the state keeps spinning for its
   * next run would take their cores, so let them sleep. Called on the
   * caller's thread between infers; the next infer wakes them. */
  void (*idle)(void *state);
  /* Persist / restore the built state in folder dir (created by the caller). */
  ait_status (*save)(void *state, const char *dir);
  /* Optional: persist only what load() rebuilds the state from (the graph
   * and aitune's own data), none of an engine's compiled artifact. A saved
   * state is reloaded and run once before it is kept (ait_mod_save_state);
   * when the reload does not reproduce the outputs (OpenVINO 2026.4's
   * export of a GRU does not) this form is saved instead. NULL: save()
   * writes no such artifact. */
  ait_status (*save_rebuild)(void *state, const char *dir);
  ait_status (*load)(const ait_backend_config *cfg, const ait_graph *g, const char *dir,
                     void **state);
  void (*destroy)(void *state);
  /* The precision this configuration computes in, which sets the numeric
   * check's tolerance: "fp32" (also when NULL), "tf32", "bf16", "fp16",
   * "int8", "fp8", "fp4". Reduced precisions are also judged by cosine
   * similarity and, for classifiers, top-1 agreement. */
  const char *(*precision)(const ait_backend_config *cfg);
  /* Configurations the tuner tries as separate candidates when the user names
   * no backends (tuning knobs: threads, GEMM provider, layout...), e.g.
   * {"native", "native:threads=1", NULL}. NULL: just the defaults; an empty
   * list ({NULL}): never by default, only when named (backends that change
   * numerics on purpose, such as quantization). */
  const char *const *variants;
  /* Optional: bytes the state holds now, *weights for the model's constants
   * in the form(s) the backend keeps them (cuda: on the device), *work for
   * its working memory (cuda: the activation arenas of its plans). NULL:
   * the backend does not say. */
  void (*memory)(void *state, int64_t *weights, int64_t *work);
  /* Optional: after runs, an option of the state's configuration that none
   * of its runs so far exercised (native: gemm, when every product ran on
   * native's own kernels and never reached the GEMM library), with the
   * reason in why; NULL when every option may have mattered. The tuner then
   * drops the candidate in favour of the same configuration with that
   * option at its default: the same code, whose timings differ only by
   * noise. */
  const char *(*unused_option)(void *state, char *why, size_t n);
  /* Optional (backends that take device memory): how the next infers read
   * inputs (in[i]->mem says where each lives) and place outputs; io is
   * copied. NULL: host memory only, and the session refuses device views. */
  ait_status (*set_io)(void *state, const ait_backend_io *io);
  /* Optional: milliseconds the device spent on the last infer (from the
   * first input read to the last output write, without host transfers),
   * after set_io with time_device; negative when not measured. */
  double (*last_device_ms)(void *state);
  /* Optional: a new state (*out, freed with destroy) that shares state's
   * immutable parts (its graph, constants, packed weights, compiled plan) by
   * reference counting, with its own work memory (arena, scratch, outputs,
   * thread pool). Either may be destroyed first; the two may run infer at
   * the same time on different threads (each one thread at a time). NULL:
   * the backend cannot share, and ait_module_clone reloads the saved state
   * instead (a copy); so it does when clone returns AIT_E_UNSUPPORTED (a
   * partition with a segment on a backend that cannot share). */
  ait_status (*clone)(void *state, void **out);
} ait_backend_iface;

/* ---- the registry ------------------------------------------------------- */

/* Built-in backends, in preference order. */
int ait_backend_count(void);
const ait_backend_iface *ait_backend_at(int i);
const ait_backend_iface *ait_backend_find(const char *name);
/* Add a backend at run time (tests register deliberately broken ones).
 * The iface must outlive the process. Not thread-safe: call before tuning. */
ait_status ait_backend_register(const ait_backend_iface *iface);
/* Put iface in the place of the backend of the same name (test_cuda: the
 * cuda backend linked into the test instead of its plugin). The iface must
 * outlive the process. Not thread-safe: call before tuning. AIT_E_NOT_FOUND
 * when no backend has that name. */
ait_status ait_backend_replace(const ait_backend_iface *iface);

/* ---- configurations ------------------------------------------------------- */

/* Parse "name" or "name:k=v,k=v" against the backend's option table.
 * AIT_E_NOT_FOUND for an unknown backend, AIT_E_INVALID_ARG naming a bad
 * option or value. */
ait_status ait_backend_config_parse(const char *spec, ait_backend_config *cfg);
/* Value of option key (explicit or default); NULL for an unknown key. */
const char *ait_backend_config_get(const ait_backend_config *cfg, const char *key);
int64_t ait_backend_config_int(const ait_backend_config *cfg, const char *key, int64_t def);
/* "native:threads=2": the name plus non-default options, sorted by key. */
const char *ait_backend_describe(const ait_backend_config *cfg, char *buf, size_t n);
/* "native-1a2b3c4d": the name plus a hash of the full configuration. */
const char *ait_backend_key(const ait_backend_config *cfg, char *buf, size_t n);
/* {"backend":"native","options":{"threads":"2"}} (non-default options only)
 * as a new cJSON object the caller deletes; NULL when out of memory. */
struct cJSON;
struct cJSON *ait_backend_config_cjson(const ait_backend_config *cfg);
/* The reverse: a configuration from that JSON text (options validated as by
 * ait_backend_config_parse). AIT_E_PARSE naming the problem otherwise. */
ait_status ait_backend_config_from_json(const char *json, ait_backend_config *cfg);

#endif
