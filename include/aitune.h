/* aitune: tune ONNX models for the hardware at hand.
 *
 * The one public header. Everything here is an opaque handle, a plain enum or
 * a plain struct the caller fills; no internal or protobuf type leaks.
 *
 * Ownership: a function that hands out a handle (`*_load`, `*_create`) makes
 * the caller its owner, who releases it with the matching `*_free`. Pointers
 * passed in are borrowed for the duration of the call unless said otherwise.
 *
 * Threading: the library has no global mutable state apart from the per-thread
 * last-error message. A model (`ait_model`) is immutable after loading and may
 * be shared by any number of threads and sessions. A session (`ait_session`)
 * is not thread-safe: use one session per thread, or serialize calls to it.
 *
 * Errors: every fallible function returns an `ait_status`; `AIT_OK` (0) is
 * success, errors are negative. `ait_last_error()` gives a message naming the
 * problem (file, node, op, opset, tensor), valid until the next failing call
 * on the same thread. The library never exits, aborts or prints to stdout.
 */
#ifndef AITUNE_H
#define AITUNE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header; ait_version() is the library's. A program may
 * check at run time that it got a library it was built for: the same major
 * version, and while the major is 0 the same minor (docs/architecture.md,
 * "Install, ABI, plugins"). CMake reads these three lines for the project's
 * version. */
#define AIT_VERSION_MAJOR 0
#define AIT_VERSION_MINOR 1
#define AIT_VERSION_PATCH 0
#define AIT_VERSION_STRING "0.1.0"
/* One number for comparisons: 10000 * major + 100 * minor + patch. */
#define AIT_VERSION_NUMBER (10000 * AIT_VERSION_MAJOR + 100 * AIT_VERSION_MINOR + AIT_VERSION_PATCH)

/* libaitune.so exports the functions declared in this header and nothing
 * else: it is built with -fvisibility=hidden, and everything between this
 * push and its pop is made visible. */
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility push(default)
#endif

/* Largest tensor rank the library handles. */
#define AIT_MAX_RANK 8

typedef enum ait_status {
  AIT_OK = 0,
  AIT_E_INVALID_ARG = -1,   /* a caller passed a bad argument */
  AIT_E_IO = -2,            /* a file could not be read or written */
  AIT_E_PARSE = -3,         /* bytes are not a valid ONNX protobuf */
  AIT_E_INVALID_MODEL = -4, /* the model is malformed (cycle, missing tensor) */
  AIT_E_UNSUPPORTED = -5,   /* an op, opset, dtype or feature is not supported */
  AIT_E_SHAPE = -6,         /* shapes do not agree */
  AIT_E_DTYPE = -7,         /* element types do not agree */
  AIT_E_NOMEM = -8,         /* out of memory */
  AIT_E_RUNTIME = -9,       /* a kernel failed while running */
  AIT_E_NOT_FOUND = -10,    /* a named thing does not exist */
  AIT_E_INTERNAL = -11      /* a bug in aitune */
} ait_status;

/* Element types. The values are ONNX's TensorProto.DataType codes. */
typedef enum ait_dtype {
  AIT_UNDEFINED = 0,
  AIT_FLOAT32 = 1,
  AIT_UINT8 = 2,
  AIT_INT8 = 3,
  AIT_UINT16 = 4,
  AIT_INT16 = 5,
  AIT_INT32 = 6,
  AIT_INT64 = 7,
  AIT_STRING = 8,
  AIT_BOOL = 9,
  AIT_FLOAT16 = 10,
  AIT_FLOAT64 = 11,
  AIT_UINT32 = 12,
  AIT_UINT64 = 13,
  AIT_COMPLEX64 = 14,
  AIT_COMPLEX128 = 15,
  AIT_BFLOAT16 = 16,
  /* 8-bit floats (one byte per element) */
  AIT_FLOAT8E4M3FN = 17,
  AIT_FLOAT8E4M3FNUZ = 18,
  AIT_FLOAT8E5M2 = 19,
  AIT_FLOAT8E5M2FNUZ = 20,
  /* Sub-byte types: ONNX files pack them (two 4-bit or four 2-bit elements
   * per byte, first element in the low bits); in memory, in ait_tensor_view
   * data included, they take one byte per element, holding the value in
   * that byte's low bits (int4/int2 sign-extended to a whole int8). */
  AIT_UINT4 = 21,
  AIT_INT4 = 22,
  AIT_FLOAT4E2M1 = 23,
  AIT_FLOAT8E8M0 = 24, /* a power of two: 2^(bits - 127); 255 is NaN */
  AIT_UINT2 = 25,
  AIT_INT2 = 26,
  AIT_DTYPE_LAST = AIT_INT2 /* the highest code aitune knows */
} ait_dtype;

/* Static string for a status code ("invalid model", ...). Never NULL. */
const char *ait_strerror(ait_status status);
/* Message of the last failing call on this thread; "" when none. The string is
 * owned by the library and valid until the next failing call on this thread. */
const char *ait_last_error(void);
/* Static name of a dtype ("float32", ...); "undefined" for unknown codes. */
const char *ait_dtype_name(ait_dtype dtype);
/* Size in bytes of one element in memory (1 for the sub-byte types); 0 for
 * strings and unknown codes. */
size_t ait_dtype_size(ait_dtype dtype);
/* Library version string, static. */
const char *ait_version(void);

/* ---- models ---------------------------------------------------------- */

typedef struct ait_model ait_model;

/* Description of a graph input or output. Strings are owned by the model and
 * live as long as it. dims[k] < 0 means unknown; dim_names[k] is the symbolic
 * name of that dim or NULL. rank < 0 means the rank is unknown. */
typedef struct ait_tensor_info {
  const char *name;
  ait_dtype dtype;
  int rank;
  int64_t dims[AIT_MAX_RANK];
  const char *dim_names[AIT_MAX_RANK];
} ait_tensor_info;

/* Load an ONNX model from a file. External data files are resolved relative
 * to the model's folder. On success *out is a new model the caller frees. */
ait_status ait_model_load(const char *path, ait_model **out);
/* Load from a caller-owned buffer (copied; the buffer may be freed after the
 * call). base_dir resolves external data; NULL means the current folder. */
ait_status ait_model_load_buffer(const void *data, size_t size, const char *base_dir,
                                 ait_model **out);
/* Limits on what loading a model may take. Every model is untrusted input
 * (docs/conformance.md, "Limits: every file is untrusted"): each limit has a
 * default that real models fit in and that keeps a hostile file from
 * overflowing the stack or taking the memory, and a model that needs more
 * gets it here. A limit past its bound is refused (AIT_E_INVALID_ARG, naming
 * the field). The struct grows like ait_tune_options: fill it with
 * ait_load_options_init(), then set what you need; the same struct_size
 * rules hold. A model keeps the limits it was loaded with, and what the
 * library loads for it later (a tuned folder's saved graphs, cache
 * entries) is held to them. */
#define AIT_DEFAULT_MAX_DEPTH 100      /* at most AIT_MAX_DEPTH_BOUND */
#define AIT_MAX_DEPTH_BOUND 1000       /* the stack's sake: protobuf-c unpacks recursively */
#define AIT_DEFAULT_MAX_NODES 10000000 /* at most AIT_MAX_NODES_BOUND */
#define AIT_MAX_NODES_BOUND 1000000000 /* node and value indices are ints */
#define AIT_DEFAULT_MAX_TENSOR_BYTES (1LL << 40) /* at most AIT_MAX_TENSOR_BYTES_BOUND */
#define AIT_MAX_TENSOR_BYTES_BOUND (1LL << 44)   /* 2^40 elements of 16 bytes */
#define AIT_DEFAULT_MAX_FOLD_ELEMENTS 4096       /* at most AIT_MAX_FOLD_ELEMENTS_BOUND */
#define AIT_MAX_FOLD_ELEMENTS_BOUND (1LL << 24)
typedef struct ait_load_options {
  size_t struct_size; /* set by ait_load_options_init; keep it first */
  /* Deepest nesting of protobuf messages (ModelProto = 1; each subgraph
   * level adds 3: about 32 subgraphs inside each other by default), checked
   * before unpacking. 1..AIT_MAX_DEPTH_BOUND. */
  int max_depth;
  /* Most nodes in the model, its subgraphs' included, checked before they
   * are built. 1..AIT_MAX_NODES_BOUND. */
  int64_t max_nodes;
  /* Largest tensor (initializer, attribute, external data) in bytes as
   * decoded, checked before allocating. 1..AIT_MAX_TENSOR_BYTES_BOUND. */
  int64_t max_tensor_bytes;
  /* Load-time constant folding keeps results of at most this many elements
   * (and runs a node only when its outputs' inferred shapes fit).
   * 1..AIT_MAX_FOLD_ELEMENTS_BOUND. */
  int64_t max_fold_elements;
  /* New fields go here, at the end (as in ait_tune_options). */
} ait_load_options;
/* Fill the first struct_size bytes of *o with the defaults and set
 * o->struct_size (as ait_tune_options_init_size). */
ait_status ait_load_options_init_size(ait_load_options *o, size_t struct_size);
#define ait_load_options_init(o) ((void)ait_load_options_init_size((o), sizeof *(o)))
/* The same as a function, for bindings. */
void(ait_load_options_init)(ait_load_options *o);
/* ait_model_load and ait_model_load_buffer under the caller's limits (NULL:
 * the defaults, which the plain functions use). */
ait_status ait_model_load_opts(const char *path, const ait_load_options *opts, ait_model **out);
ait_status ait_model_load_buffer_opts(const void *data, size_t size, const char *base_dir,
                                      const ait_load_options *opts, ait_model **out);
/* Release a model. NULL is fine. Sessions created from it must be freed first. */
void ait_model_free(ait_model *model);

size_t ait_model_num_inputs(const ait_model *model);
size_t ait_model_num_outputs(const ait_model *model);
/* Value of the model's metadata_props entry `key` (ONNX
 * ModelProto.metadata_props; the last one when a key repeats), owned by the
 * model and valid as long as it; NULL when there is none. */
const char *ait_model_metadata(const ait_model *model, const char *key);
/* Fill *info for input/output i. Returns AIT_E_INVALID_ARG when i is out of range. */
ait_status ait_model_input(const ait_model *model, size_t i, ait_tensor_info *info);
ait_status ait_model_output(const ait_model *model, size_t i, ait_tensor_info *info);

/* ---- sessions -------------------------------------------------------- */

typedef struct ait_session ait_session;

/* Where a tensor's bytes live. */
typedef enum ait_mem_kind {
  AIT_MEM_HOST = 0, /* ordinary CPU memory (the default) */
  AIT_MEM_CUDA = 1  /* CUDA device memory (cudaMalloc, a torch CUDA tensor's data_ptr) */
} ait_mem_kind;

/* A tensor passed across the API: a view of memory owned by someone else.
 * Data is dense, row-major, of dtype's element size. Zero-initialise views
 * ({0} or memset) so that fields added later take their defaults: mem and
 * device of a zeroed view say "host memory". */
typedef struct ait_tensor_view {
  ait_dtype dtype;
  int rank;
  int64_t dims[AIT_MAX_RANK];
  void *data;
  ait_mem_kind mem; /* where data lives; device memory is taken only by backends that
                       say so (cuda), the others refuse it with AIT_E_UNSUPPORTED */
  int device;       /* CUDA device ordinal when mem is AIT_MEM_CUDA */
} ait_tensor_view;

/* Names of the backends compiled into this library, NULL-terminated, static. */
const char *const *ait_backend_names(void);

/* Create a session that runs `model` on a backend given as "name" or
 * "name:key=value,..." (e.g. "eager", "native:threads=2"; NULL means
 * "eager"); the backend is built here. The model is borrowed and must outlive
 * the session. On success *out is a new session the caller frees. */
ait_status ait_session_create(const ait_model *model, const char *backend, ait_session **out);
void ait_session_free(ait_session *session);

/* Run the model. inputs[i] is graph input i (declaration order, initializers
 * excluded); n_inputs must equal ait_model_num_inputs(). Input memory stays
 * owned by the caller and is read in place, without copying, during the call.
 * Shapes and dtypes are checked against the model's declarations. */
ait_status ait_session_run(ait_session *session, const ait_tensor_view *inputs, size_t n_inputs);

/* View of output i of the last successful run. The memory is owned by the
 * session and stays valid until the next ait_session_run or ait_session_free. */
ait_status ait_session_output(const ait_session *session, size_t i, ait_tensor_view *out);

/* ---- device memory (CUDA) ----------------------------------------------
 * A session on the cuda backend reads inputs whose view says AIT_MEM_CUDA
 * from the device (no PCIe copy) and can leave its outputs there. Other
 * backends refuse device views and device outputs with AIT_E_UNSUPPORTED;
 * host views work everywhere. Runs stay synchronous: ait_session_run
 * returns when the outputs are complete.
 *
 * Where outputs go: AIT_MEM_HOST (default; host memory of the session) or
 * AIT_MEM_CUDA (ait_session_output then gives device views of the session's
 * own device memory, valid until the next run or free). */
ait_status ait_session_set_output_mem(ait_session *session, ait_mem_kind mem);
/* Write output i into caller memory from the next run on: buf describes it
 * (dtype, dims: the exact shape the output will have; data; mem, device).
 * The buffer is borrowed until unbound (buf NULL) or the session is freed.
 * A run whose output i has another shape or dtype fails naming it. */
ait_status ait_session_bind_output(ait_session *session, size_t i, const ait_tensor_view *buf);
/* Order runs after the work queued on a CUDA stream (a cudaStream_t,
 * borrowed; NULL: none): the run waits for what the caller queued before it,
 * and work the caller queues on it after the call sees the outputs. */
ait_status ait_session_set_cuda_stream(ait_session *session, void *stream);

/* ---- tuning ------------------------------------------------------------ */

/* A module wraps a model with a name and, once tuned, the chosen backend.
 * It owns its model. Not thread-safe: one thread at a time per module. */
typedef struct ait_module ait_module;

typedef enum ait_strategy {
  AIT_STRATEGY_ONE_BACKEND = 0,    /* exactly one candidate; its errors are returned */
  AIT_STRATEGY_FIRST_WINS = 1,     /* candidates in order; the first correct and fast one wins */
  AIT_STRATEGY_MAX_THROUGHPUT = 2, /* profile all; highest throughput wins */
  AIT_STRATEGY_MIN_LATENCY = 3,    /* profile all at batch 1; lowest latency wins */
  AIT_STRATEGY_LATENCY_BUDGET = 4  /* highest throughput whose latency fits the budget */
} ait_strategy;

/* Static name ("max-throughput", ...) and the reverse; -1 when unknown. */
const char *ait_strategy_name(ait_strategy s);
int ait_strategy_parse(const char *name);

/* A line of progress or a warning while tuning or running. `line` is valid
 * only during the call. Called on the tuning thread. */
typedef void (*ait_log_fn)(void *user, int is_warning, const char *line);

/* Tuning options. The struct grows from version to version, so a caller
 * fills it with ait_tune_options_init() (the defaults, and struct_size: the
 * size of the struct the caller was compiled with), then sets what it wants.
 * The library reads only the fields that fit in struct_size; a field added
 * after the caller's header takes its default. A struct_size of 0, one that
 * ends inside a field, or one larger than the library's with any byte past
 * the library's fields set is refused (AIT_E_INVALID_ARG, naming it). */
typedef struct ait_tune_options {
  size_t struct_size; /* set by ait_tune_options_init; keep it first */
  ait_strategy strategy;
  const char *const
      *backends; /* candidate backend specs ("native:threads=2"); NULL: all available */
  size_t n_backends;
  const int *batch_sizes; /* NULL: sweep powers of two (see docs/tuning.md) */
  size_t n_batch_sizes;
  double latency_budget_ms; /* latency-budget strategy */
  double min_speedup_ratio; /* a candidate must reach (1 + r) x baseline throughput; default 0.01 */
  int perf_validation;      /* 1 (default): candidates must beat the baseline */
  double rtol, atol;        /* float tolerance vs the reference; 0 = per-precision default */
  double min_cosine;      /* cosine similarity floor; 0 = per-precision default (docs/tuning.md) */
  double min_top1;        /* classifier outputs: row top-1 agreement floor; 0 = 0.99 */
  const char *precision;  /* automatic candidates: "fp32" (NULL, default) float32 only;
                             "auto" adds bf16/fp16/int8 variants when the strategy is after
                             speed or memory is under pressure; "any" always adds them */
  int warmup;             /* profiling: warm-up runs (default 3) */
  int min_runs, max_runs; /* profiling: runs per measurement (default 10..200) */
  double cv_target;       /* stop when the coefficient of variation of the last
                             min_runs runs is below this (default 0.05); 0 = fixed min_runs */
  double time_budget_s;   /* profiling time per candidate and batch size (default 2 s) */
  const char *cache_dir;  /* cache folder (decisions, batch history); NULL: $AITUNE_CACHE_DIR
                             or ~/.cache/aitune; "" = off */
  int use_decision_cache; /* 1 (default): reuse and store decisions; 0: tune afresh (the batch
                             history under cache_dir still learns) */
  ait_log_fn log;         /* progress and warnings; NULL = silent */
  void *log_user;
  /* Which nodes a quantizing backend may quantize: nonzero allows node
   * `name` of type `op_type`. NULL: the backend's default filter. */
  int (*node_filter)(void *user, const char *op_type, const char *name);
  void *node_filter_user;
  /* A memory reading to tune under instead of reading the machine (tests
   * drive the pressure levels with it); NULL: read now. Borrowed. */
  const struct ait_mem_reading *mem_reading;
  /* The runoff: candidates within 15% of the best are timed again in this
   * many interleaved rounds, and the pick goes by the median of their
   * per-round speed ratios (docs/tuning.md). Default 7; 0 = off. */
  int runoff_rounds;
  /* Where the caller's tensors will live when the tuned module runs:
   * AIT_MEM_HOST (default) or AIT_MEM_CUDA. With AIT_MEM_CUDA only
   * backends that read device memory (cuda) are candidates, and they are
   * timed and picked by their device time (CUDA events, no host copies). */
  ait_mem_kind io_mem;
  /* New fields go here, at the end, each at an offset at or past the
   * previous version's sizeof (never in its tail padding), so that an older
   * caller's struct_size never covers part of one. */
} ait_tune_options;

/* Fill the first struct_size bytes of *o with the defaults above (strategy
 * max-throughput) and set o->struct_size. AIT_E_INVALID_ARG for a NULL o or
 * a size that ends inside a field (bytes past this library's fields are
 * zeroed). Call it through the macro below, which passes the size of the
 * caller's own struct. */
ait_status ait_tune_options_init_size(ait_tune_options *o, size_t struct_size);
#define ait_tune_options_init(o) ((void)ait_tune_options_init_size((o), sizeof *(o)))
/* The same as a function, filling a struct of this library's size: for
 * bindings (ctypes...) that mirror this header's layout. */
void(ait_tune_options_init)(ait_tune_options *o);

/* New module for the model at `path` (loaded and owned by the module).
 * name may be NULL (the file name is used). */
ait_status ait_module_create(const char *path, const char *name, ait_module **out);
/* New module for an ONNX model held in memory: the bytes are copied (the
 * caller may free them after the call) and the module keeps that copy, which
 * ait_module_save writes as the folder's model.onnx. base_dir resolves
 * external data (NULL: the current folder). name may be NULL ("model"). */
ait_status ait_module_create_buffer(const void *data, size_t size, const char *base_dir,
                                    const char *name, ait_module **out);
/* Load a tuned module from a folder written by ait_module_save (or `aitune
 * tune --out`): no re-tuning and no rebuild. Warns (through log, may be NULL)
 * when this machine's fingerprint differs from the one it was tuned on. */
ait_status ait_module_load(const char *dir, ait_log_fn log, void *log_user, ait_module **out);
/* ait_module_create, ait_module_create_buffer and ait_module_load under the
 * caller's load limits (NULL: the defaults). A folder tuned from a model
 * that needed raised limits needs them again to load. */
ait_status ait_module_create_opts(const char *path, const char *name, const ait_load_options *opts,
                                  ait_module **out);
ait_status ait_module_create_buffer_opts(const void *data, size_t size, const char *base_dir,
                                         const char *name, const ait_load_options *opts,
                                         ait_module **out);
ait_status ait_module_load_opts(const char *dir, ait_log_fn log, void *log_user,
                                const ait_load_options *opts, ait_module **out);
void ait_module_free(ait_module *m);
/* A second instance of the tuned module m, for serving from several
 * threads (*out, freed with ait_module_free). The clone shares m's model
 * and the backend's immutable state (graph, constants, packed weights,
 * compiled plans) by reference counting, where the backend can (native,
 * onednn, eager, and a partition whose segments all can); it owns only its
 * work memory (arena, scratch, thread pool) and its outputs. Other backends
 * reload their saved state instead, a copy
 * (docs/architecture.md lists which). m and its clones may be freed in any
 * order. Threading: each module, original or clone, is used by one thread
 * at a time (cloning counts as a use of m: the first clone sets up the
 * shared block inside m); different modules of one family may run
 * ait_module_infer at the same time on different threads. AIT_E_INVALID_ARG
 * when m is not tuned. */
ait_status ait_module_clone(const ait_module *m, ait_module **out);

/* Where warnings go while the module runs (inputs outside the tuned range);
 * tuning uses ait_tune_options.log when set. NULL = silent. */
void ait_module_set_log(ait_module *m, ait_log_fn log, void *user);

/* Add one sample (inputs in graph-input order), copied. Several samples may
 * be added; without any, tuning generates random ones from declared shapes. */
ait_status ait_module_add_sample(ait_module *m, const ait_tensor_view *inputs, size_t n_inputs);
/* Tune axis `axis` of the graph input named `input` over [min, max], with
 * opt the size to favour, whatever the samples span (by default a dynamic
 * axis ranges over the samples' sizes). The axis must be symbolic or unknown
 * in the model, 1 <= min <= opt <= max <= 2^30; every sample must lie inside
 * the range when tuning starts (AIT_E_SHAPE otherwise). AIT_E_NOT_FOUND for
 * an unknown input name, AIT_E_INVALID_ARG for a fixed axis or a bad range.
 * Setting the same axis again replaces its range. Used by the next tune. */
ait_status ait_module_set_axis_range(ait_module *m, const char *input, int axis, int64_t min,
                                     int64_t opt, int64_t max);
/* Tune: build, validate against the reference, profile, select, and cache.
 * The module then runs on the selected backend. */
ait_status ait_module_tune(ait_module *m, const ait_tune_options *o);
/* Save the tuned module (decision, report, built backend state, model copy,
 * fingerprint) into dir, created if needed. Written to a temporary folder
 * first, then swapped into place. An existing dir that is not a tuned folder
 * is refused (AIT_E_INVALID_ARG): see ait_module_save_flags. */
ait_status ait_module_save(ait_module *m, const char *dir);
/* ait_module_save with flags. An existing dir is replaced only when it is a
 * tuned folder (MANIFEST.sha256 and decision.json) holding only what a save
 * writes (not a file the user put in it) unless AIT_SAVE_FORCE is given; a
 * dir that is or holds the module's model is never replaced. The swap is
 * atomic: dir holds the old or the new folder at every instant. */
#define AIT_SAVE_FORCE 1u
ait_status ait_module_save_flags(ait_module *m, const char *dir, unsigned flags);
/* The last tuning report as JSON (see docs/tuning.md); a new string the
 * caller frees with ait_free. AIT_E_NOT_FOUND before tuning. */
ait_status ait_module_report_json(const ait_module *m, char **json);
/* Description of the backend the module runs on ("native:threads=2"); static
 * to the module. "eager" before tuning. */
const char *ait_module_backend(const ait_module *m);
/* The batch size the module was selected at (its decision); 0 before
 * tuning. */
int ait_module_batch_size(const ait_module *m);
/* Bytes the module's backend holds now: *weights_bytes for the model's
 * constants in the form(s) it keeps them (cuda: on the device), *work_bytes
 * for its working memory (either pointer may be NULL). AIT_E_NOT_FOUND
 * before tuning, AIT_E_UNSUPPORTED when the backend does not say (eager). */
ait_status ait_module_memory(const ait_module *m, int64_t *weights_bytes, int64_t *work_bytes);
/* The underlying model, owned by the module. */
const ait_model *ait_module_model(const ait_module *m);

/* Run the module. Before tuning, it runs the reference and records the
 * inputs as a sample (at most 16). Inputs outside the tuned range of a
 * dynamic axis run on a backend that takes them, with one warning. Outputs
 * as for ait_session_output, valid until the next call. */
ait_status ait_module_infer(ait_module *m, const ait_tensor_view *inputs, size_t n_inputs);
ait_status ait_module_output(const ait_module *m, size_t i, ait_tensor_view *out);
/* Device memory for a tuned module, as for sessions (see "device memory"
 * above): inputs whose view says AIT_MEM_CUDA are read on the device when
 * the module runs on a backend that takes device memory (cuda), outputs can
 * stay there, and runs can be ordered after a CUDA stream. Refused with
 * AIT_E_UNSUPPORTED on other backends and before tuning. */
ait_status ait_module_set_output_mem(ait_module *m, ait_mem_kind mem);
ait_status ait_module_set_cuda_stream(ait_module *m, void *stream);

/* Free memory the library handed out (report strings). NULL is fine. */
void ait_free(void *p);

/* ---- hardware ---------------------------------------------------------- */
/* What this machine has (CPU, caches, RAM, NVIDIA GPUs), how much memory is
 * free (memory pressure) and what the tuner does about it. See
 * docs/hardware.md. GPUs are read through libcuda.so.1 and libnvidia-ml.so.1
 * loaded at run time: without them (or without a GPU) the profile is CPU-only,
 * not an error. Facts that cannot change (devices, versions, the fingerprint)
 * are read once per process, thread-safely; free memory and utilisation at
 * every query. The first query initialises the CUDA driver in this process
 * (cuInit): fork before it, not after, if a child is to use CUDA. */

#define AIT_HW_MAX_CACHES 8
#define AIT_HW_MAX_GPUS 16

/* Memory pressure levels, from the lowest free fraction of host and device
 * memory (see ait_mem_thresholds). */
typedef enum ait_mem_level {
  AIT_MEM_LOW = 0,
  AIT_MEM_MEDIUM = 1,
  AIT_MEM_HIGH = 2,
  AIT_MEM_CRITICAL = 3
} ait_mem_level;

/* One reading of host and device memory, in bytes. A total of 0 means
 * "unknown" and that memory is left out of the pressure. Tests and callers
 * may fill one by hand. */
typedef struct ait_mem_reading {
  uint64_t host_total, host_available;
  int n_gpus;
  uint64_t gpu_total[AIT_HW_MAX_GPUS], gpu_free[AIT_HW_MAX_GPUS];
} ait_mem_reading;

/* Free fractions (0..1) under which the level is at least Medium, High and
 * Critical; defaults 0.50, 0.25, 0.10. Valid when
 * 1 >= medium >= high >= critical >= 0. */
typedef struct ait_mem_thresholds {
  double medium, high, critical;
} ait_mem_thresholds;

/* What the tuner does at a level: one row of a static table. */
typedef struct ait_mem_policy {
  ait_mem_level level;
  double batch_multiplier; /* scales the batch sizes tried (1 = as asked) */
  int add_quantized;       /* add quantized candidates automatically (int8wo first) */
  int free_losers;         /* free a built candidate as soon as it loses */
  int refuse_builds;       /* start no more builds; say why */
} ait_mem_policy;

/* Static name of a level ("low", "medium", "high", "critical"); "unknown"
 * for other values. */
const char *ait_mem_level_name(ait_mem_level level);
/* The default thresholds (0.50, 0.25, 0.10). */
void ait_mem_thresholds_init(ait_mem_thresholds *t);
/* Override *t with AITUNE_MEM_MEDIUM, AITUNE_MEM_HIGH and AITUNE_MEM_CRITICAL
 * where set (fractions, "0.3", or percentages, "30%"). AIT_E_INVALID_ARG,
 * naming the variable, when one is not a number in [0, 1] or the result is
 * not ordered; *t is then left unchanged. */
ait_status ait_mem_thresholds_from_env(ait_mem_thresholds *t);
/* AIT_OK when t is valid, else AIT_E_INVALID_ARG with the reason. */
ait_status ait_mem_thresholds_check(const ait_mem_thresholds *t);
/* Read host memory now (/proc/meminfo, lowered to the cgroup's limit when one
 * is set) and the free memory of each GPU. */
ait_status ait_mem_read(ait_mem_reading *out);
/* The level of a reading: the lowest free fraction among the host and the
 * GPUs against t (NULL: the defaults). A reading with nothing known is Low. */
ait_mem_level ait_mem_pressure(const ait_mem_reading *r, const ait_mem_thresholds *t);
/* The lowest free fraction of a reading (1 when nothing is known); *which,
 * when not NULL, gets -1 for the host or the GPU index. */
double ait_mem_free_fraction(const ait_mem_reading *r, int *which);
/* One line explaining a reading's level ("critical: GPU 0 has 4.0% free
 * (5.6 of 140.0 GiB), below the critical threshold 10%") into buf; returns buf. */
const char *ait_mem_describe(const ait_mem_reading *r, const ait_mem_thresholds *t, char *buf,
                             size_t n);
/* The policy row of a level, static. Values outside the enum get Critical's. */
const ait_mem_policy *ait_mem_policy_for(ait_mem_level level);

/* CPU ISA features kernels dispatch on: bits of ait_hw_profile.cpu_features. */
typedef enum ait_cpu_feature {
  AIT_CPU_SSE4_2 = 1 << 0,
  AIT_CPU_AVX = 1 << 1,
  AIT_CPU_AVX2 = 1 << 2,
  AIT_CPU_FMA = 1 << 3,
  AIT_CPU_F16C = 1 << 4,
  AIT_CPU_AVX512F = 1 << 5,
  AIT_CPU_AVX512BW = 1 << 6,
  AIT_CPU_AVX512VL = 1 << 7,
  AIT_CPU_AVX512_VNNI = 1 << 8,
  AIT_CPU_AVX_VNNI = 1 << 9,
  AIT_CPU_AVX512_BF16 = 1 << 10,
  AIT_CPU_AVX512_FP16 = 1 << 11,
  AIT_CPU_AMX_TILE = 1 << 12,
  AIT_CPU_AMX_BF16 = 1 << 13,
  AIT_CPU_AMX_INT8 = 1 << 14
} ait_cpu_feature;
#define AIT_CPU_FEATURE_COUNT 15

/* Static name of one feature bit, as Linux spells the flag in /proc/cpuinfo
 * ("sse4_2", "avx512_vnni"); NULL when `feature` is not one known bit. */
const char *ait_cpu_feature_name(unsigned feature);

typedef struct ait_hw_cache {
  int level;           /* 1, 2, 3, ... */
  char type[16];       /* "data", "instruction" or "unified" */
  uint64_t size_bytes; /* as seen by CPU 0 (a shared cache is counted once) */
} ait_hw_cache;

typedef struct ait_hw_gpu {
  int index;                  /* CUDA device ordinal (after CUDA_VISIBLE_DEVICES) */
  char name[128];             /* "NVIDIA H200" */
  char pci_bus_id[32];        /* "0000:19:00.0" */
  int cc_major, cc_minor;     /* compute capability */
  int multiprocessors;        /* streaming multiprocessors */
  uint64_t memory_total;      /* bytes */
  uint64_t memory_free;       /* bytes; meaningful when memory_free_known */
  int memory_free_known;      /* 1 when read through NVML or a CUDA context */
  int utilization_pct;        /* GPU busy over the last sample period; -1 unknown */
  int memory_utilization_pct; /* memory controller busy; -1 unknown */
} ait_hw_gpu;

/* A snapshot of the machine; a plain struct the caller allocates. */
typedef struct ait_hw_profile {
  char cpu_model[128];   /* /proc/cpuinfo "model name"; "unknown" when absent */
  int sockets;           /* distinct physical ids */
  int physical_cores;    /* distinct (physical id, core id) pairs */
  int logical_cores;     /* online CPUs */
  int usable_cores;      /* CPUs this process may run on (affinity) */
  uint32_t cpu_features; /* ait_cpu_feature bits */
  int n_caches;
  ait_hw_cache caches[AIT_HW_MAX_CACHES];
  uint64_t mem_total, mem_available; /* bytes, /proc/meminfo MemTotal and MemAvailable */
  uint64_t cgroup_limit;             /* bytes; 0 when no cgroup memory limit below mem_total */
  uint64_t cgroup_available;         /* bytes left under that limit (0 when no limit) */
  int n_gpus;                        /* 0: a CPU-only profile */
  ait_hw_gpu gpus[AIT_HW_MAX_GPUS];
  char gpu_driver[32];           /* NVIDIA driver version ("550.54.15"); "" when unknown */
  int cuda_version;              /* CUDA version of the driver (12040 = 12.4); 0 when none */
  char gpu_note[256];            /* how the GPUs were read, or why there are none */
  ait_mem_reading memory;        /* the reading the pressure was computed from */
  ait_mem_thresholds thresholds; /* defaults overridden by AITUNE_MEM_* */
  ait_mem_level pressure;
} ait_hw_profile;

/* Fill *out with this machine's profile. No GPU, no CUDA driver or no NVML is
 * not an error (see gpu_note). AIT_E_INVALID_ARG when an AITUNE_MEM_*
 * variable is malformed; AIT_E_IO when /proc cannot be read. */
ait_status ait_hw_query(ait_hw_profile *out);
/* The profile as one JSON object (see docs/hardware.md), with this process's
 * fingerprint; a new string the caller frees with ait_free. */
ait_status ait_hw_profile_json(const ait_hw_profile *p, char **json);
/* The fingerprint of this machine and libraries ("cpu=...;features=...;..."),
 * and its SHA-256 in hex: what tuned artifacts and the decision cache store.
 * Static strings, computed once per process. */
const char *ait_hw_fingerprint(void);
const char *ait_hw_fingerprint_digest(void);

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif /* AITUNE_H */
