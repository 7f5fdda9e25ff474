/* What an ait_module holds, shared by the tuner (tuner.c), the report
 * (report.c), tuned artifacts and the cache (artifact.c) and the public API
 * (src/api/module.c). */
#ifndef AIT_TUNE_MODULE_IMPL_H
#define AIT_TUNE_MODULE_IMPL_H

#include "api/model_impl.h"
#include "tune/tune.h"

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

  /* running */
  ait_log_fn log;
  void *log_user;
  bool warned_range;
  void *ref_state; /* eager, built on demand for inputs the selected backend cannot take */
  ait_tensor **outputs;
  int n_outputs;
  ait_api_io io; /* device memory requests (api/devio.h) */
};

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
/* A new module of the model file at path, loaded under lim (NULL: the
 * defaults), named name (NULL: the file's name); NULL and *st on failure. */
ait_module *ait_module_alloc(const char *path, const char *name, const ait_limits *lim,
                             ait_status *st);
/* May a save replace dir? AIT_OK when it is absent or a tuned folder (or,
 * with force, anything), never when it is or holds model_path. */
ait_status ait_artifact_check_target(const char *dir, const char *model_path, bool force);
/* dir/report.json after checking dir's manifest: new string, caller frees. */
ait_status ait_artifact_read_report(const char *dir, char **json);
/* Tests: raise SIGKILL at the Nth step (rename or removal) of the next
 * saves' swap into place (0 = off); with fallback, swap as on a file system
 * without RENAME_EXCHANGE. */
void ait_artifact_test_kill_at(int step, bool fallback);
/* The decision cache key of (m, o): SHA-256 hex of every option that can
 * change the decision (see key_rows in src/api/module.c). */
void ait_cache_key(const ait_module *m, const ait_tune_options *o, char *hex65);
/* Remove a folder tree; quiet about missing paths. */
void ait_rmtree(const char *path);

#endif
