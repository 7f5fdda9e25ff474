/* The module object, its one header: what an ait_module holds and its
 * functions, shared by the object itself (module.c), tuning through the
 * decision cache (cache.c), the tuner (tuner.c), the report (report.c),
 * tuned artifacts (artifact.c) and the public API (src/api/module.c), which
 * checks arguments and calls these. */
#ifndef AIT_TUNE_MODULE_IMPL_H
#define AIT_TUNE_MODULE_IMPL_H

#include "api/model_impl.h"
#include "tune/artifact.h"
#include "tune/tune.h"

/* What a module shares with its clones (ait_module_clone): the model and
 * the model's bytes, which the built states borrow from. Refcounted; the
 * last module freed frees them. */
typedef struct ait_mod_share {
  _Atomic int refs;
  ait_model *model;  /* owned */
  void *model_bytes; /* owned, may be NULL */
} ait_mod_share;

struct ait_module {
  char *name;
  char *model_path;  /* the file the model came from; NULL when from memory */
  void *model_bytes; /* the model's bytes when created from memory (owned), else NULL */
  size_t model_size;
  char model_sha[65]; /* SHA-256 of the model file (or bytes) */
  ait_model *model;   /* owned */
  ait_sample samples[AIT_MAX_SAMPLES];
  int n_samples;
  ait_graph_spec spec;
  ait_axis axis_ranges[AIT_MAX_AXES]; /* set with ait_module_set_axis_range */
  int n_axis_ranges;

  /* after tuning or loading */
  bool tuned;
  ait_backend_config cfg; /* the selected backend */
  char desc[600];
  ait_runner run;    /* its built state (whole graph or partitioned), owned */
  int batch;         /* the selected batch size */
  char *report_json; /* owned */
  char tuned_fingerprint[2048];
  /* the selected state's own outputs on check_in (sample 0 at the tuned
   * batch), kept by the tuner: every save is reloaded and compared with
   * them (saved_check.c). Empty (check_out NULL) for a loaded module. */
  ait_sample check_in;
  ait_tensor **check_out; /* owned, n_outputs */

  /* running */
  ait_log_fn log;
  void *log_user;
  bool warned_range;
  void *ref_state; /* eager, built on demand for inputs the selected backend cannot take */
  ait_tensor **outputs;
  int n_outputs;
  ait_api_io io; /* device memory requests (api/devio.h) */
  /* NULL until the module is first cloned; then model and model_bytes are
   * the share's (borrowed) and are freed with its last reference */
  ait_mod_share *share;
  bool state_shared; /* run.state shares the backend's immutable state (clone hook) */
};

/* Tune m under o (checked options, the cache already consulted): the
 * tuner's driver, src/tune/tuner.c. */
ait_status ait_tuner_run(ait_module *m, const ait_tune_options *o);
/* A new module of the model file at path, loaded under lim (NULL: the
 * defaults), named name (NULL: the file's name); NULL and *st on failure. */
ait_module *ait_module_alloc(const char *path, const char *name, const ait_limits *lim,
                             ait_status *st);

/* ---- the module's own functions (module.c, cache.c) -----------------------
 * What the public ait_module_* functions (src/api/module.c) call once they
 * have checked their arguments: m is never NULL here. */
#define AIT_MOD_MAX_INPUTS 64 /* graph inputs a call may pass */
/* opts: the caller's load limits (NULL: the defaults) */
ait_status ait_mod_create_buffer(const void *data, size_t size, const char *base_dir,
                                 const char *name, const ait_load_options *opts, ait_module **out);
void ait_mod_free(ait_module *m);
/* ---- saved states, checked (saved_check.c) ------------------------------ */
/* After tuning: run the selected state once on sample 0 at the tuned batch
 * and keep its outputs (a failure only logs: saves go unchecked). */
void ait_mod_keep_check(ait_module *m);
void ait_mod_free_check(ait_module *m);
/* Save m's backend state into the existing folder dir, reload it and check
 * that it reproduces the kept outputs; else save the backend's rebuild form
 * (backend.h) and check again; else AIT_E_INTERNAL naming the output. The
 * reloaded runner goes to *loaded when not NULL (the caller owns it). */
ait_status ait_mod_save_state(const ait_module *m, const char *dir, ait_runner *loaded);

/* Drop the built state (and the outputs, which may borrow from it). */
void ait_mod_drop_state(ait_module *m);
ait_status ait_mod_add_sample(ait_module *m, const ait_tensor_view *inputs, size_t n);
ait_status ait_mod_infer(ait_module *m, const ait_tensor_view *inputs, size_t n);
ait_status ait_mod_output(const ait_module *m, size_t i, ait_tensor_view *out);
ait_status ait_mod_set_output_mem(ait_module *m, ait_mem_kind mem);
ait_status ait_mod_set_cuda_stream(ait_module *m, void *stream);
void ait_mod_set_log(ait_module *m, ait_log_fn log, void *user);
const char *ait_mod_backend(const ait_module *m);
int ait_mod_batch_size(const ait_module *m);
ait_status ait_mod_memory(const ait_module *m, int64_t *weights, int64_t *work);
const ait_model *ait_mod_model(const ait_module *m);
ait_status ait_mod_set_axis_range(ait_module *m, const char *input, int axis, int64_t min,
                                  int64_t opt, int64_t max);
ait_status ait_mod_report_json(const ait_module *m, char **json);
/* Tune m under the caller's options (cache.c): read and check them, make
 * the samples and the graph spec, answer from the decision cache or run
 * the tuner and store its decision. */
ait_status ait_mod_tune(ait_module *m, const ait_tune_options *opts);

/* Where the model came from, for reports: its path, or "(memory)". */
const char *ait_module_source(const ait_module *m);

/* Log through the module's callback (printf-style). */
void ait_module_logf(const ait_module *m, int is_warning, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Build the JSON report from the tuning results. New string, caller frees. */
typedef struct ait_tune_result {
  const ait_tune_options *opts;
  const ait_candidate *baseline;
  const ait_candidate *cands;
  int n_cands;
  int selected; /* index into cands, or -1 for the baseline */
  int sel_batch;
  double sel_throughput, sel_latency_ms;
  double tuning_s;
  char warnings[8][512];
  int n_warnings;
  const ait_mem_policy *mem_policy; /* memory pressure at the start of tuning */
  char mem_desc[256];
} ait_tune_result;
char *ait_report_build(const ait_module *m, const ait_tune_result *r);

/* The cache folder for these options ("" when off), into buf. */
const char *ait_cache_root(const ait_tune_options *o, char *buf, size_t n);

/* Tuned artifacts: save the module into dir (swapped in atomically; flags
 * AIT_SAVE_FORCE replaces what is not a tuned folder), load one back. */
ait_status ait_artifact_save(const ait_module *m, const char *dir, unsigned flags);
/* The folder's model is loaded under lim (NULL: the defaults). */
ait_status ait_artifact_load(const char *dir, ait_log_fn log, void *log_user,
                             bool strict_fingerprint, const ait_limits *lim, ait_module **out);
/* The decision cache key of (m, o): SHA-256 hex of every option that can
 * change the decision (see the option table, src/tune/options.c). */
void ait_cache_key(const ait_module *m, const ait_tune_options *o, char *hex65);

#endif
