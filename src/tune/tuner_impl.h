/* The tuner's pieces, shared by its files and by no one else: the driver
 * (tuner.c), the candidates and their validation (candidates.c), measurement
 * (measure.c), the judging by the strategy's row (strategy.c) and the runoff
 * (runoff.c). The module calls ait_tuner_run (module_impl.h). */
#ifndef AIT_TUNE_TUNER_IMPL_H
#define AIT_TUNE_TUNER_IMPL_H

#include "tune/module_impl.h"
#include "tune/strategy.h"

/* Validation inputs with the reference's outputs. */
typedef struct ait_ref_case {
  ait_sample in;
  ait_tensor **want;
  char label[96];
} ait_ref_case;

typedef struct ait_tuner {
  ait_module *m;
  const ait_tune_options *o;
  const ait_strategy_row *s; /* o->strategy's row */
  ait_profile_opts prof;
  ait_mem_thresholds mem_thr;
  ait_ref_case *cases;
  int n_cases;
  int batches[AIT_MAX_BATCHES];
  int n_batches; /* 0: sweep */
  /* fastest run of any candidate so far, per batch size: a candidate whose
   * first runs are GIVE_UP_FACTOR times slower stops being timed */
  int seen_batch[2 * AIT_MAX_BATCHES];
  double seen_min_ms[2 * AIT_MAX_BATCHES];
  int n_seen;
  ait_tune_result res;
} ait_tuner;

/* Clearly slower than the best candidate at that batch size: noise on a
 * busy machine moves single runs by tens of percent, never by 2x. */
#define GIVE_UP_FACTOR 2.0

/* Log a warning that the report keeps too (the first 8). */
void ait_tune_warn(ait_tuner *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- candidates.c ---- */

/* Free out[0..n) and set them to NULL. */
void ait_tune_free_outputs(ait_tensor **out, int n);
/* The reference outputs for every sample, and for each dynamic axis at its
 * min and max (the sample resized along it), into t->cases. */
ait_status ait_tune_make_cases(ait_tuner *t);
void ait_tune_free_cases(ait_tuner *t);
/* The precision a configuration computes in, for its tolerance. */
ait_dtype ait_tune_compute_dtype(const ait_backend_config *cfg);
/* How much a candidate's precision keeps: 3 float32, 2 16-bit floats, 1 int8/fp8. */
int ait_tune_precision_rank(const ait_candidate *c);
/* The candidates of a tune: the named backends, or every available
 * backend's variants and the registry's added candidates. *out: calloc'd
 * array of *n, the caller frees. */
ait_status ait_tune_candidates(ait_tuner *t, ait_candidate **out, int *n);
/* Build c and check it on every reference case; on failure c->status and
 * c->error say why (and the status is returned). */
ait_status ait_tune_build_candidate(ait_tuner *t, ait_candidate *c);
/* The earlier candidate that runs the same code as cands[i] (its backend's
 * unused_option), or -1; why says which option and why. */
int ait_tune_same_as_earlier(const ait_candidate *cands, int i, char *why, size_t n);

/* ---- measure.c ---- */

/* One timed run of a candidate on a sample (ait_profile's callback). */
typedef struct ait_timed_ctx {
  const ait_candidate *c;
  const ait_sample *in;
  ait_tensor **out;
  int n_out;
  int calls; /* infers made through it (warm-up runs included) */
} ait_timed_ctx;
ait_status ait_tune_timed_infer(void *ctx);
/* The device's own time of the run just made, in seconds; -1 when none. */
double ait_tune_device_clock_s(void *ctx);
/* Profile c over the batch sizes: the given list, batch 1 (batch1_only), or
 * the sweep. */
ait_status ait_tune_profile_candidate(ait_tuner *t, ait_candidate *c, bool batch1_only);

/* ---- strategy.c: judging by the strategy's row ---- */

/* Best (throughput, latency, batch) of a candidate under the strategy; with
 * decide, by fastest runs (else medians). false when no point qualifies. */
bool ait_tune_best_point(const ait_tuner *t, const ait_candidate *c, bool decide, double *tp,
                         double *lat, int *batch);
/* The decision's point (best_point with decide); *uncontended (may be
 * NULL): its time is the mean less CPU waits, not the fastest run. */
bool ait_tune_decided_point(const ait_tuner *t, const ait_candidate *c, double *tp, double *lat,
                            int *batch, bool *uncontended);
/* Is a a better pick than b under the strategy? */
bool ait_tune_better(const ait_tuner *t, const ait_candidate *a, const ait_candidate *b);
/* Does c beat the baseline by min_speedup_ratio? */
bool ait_tune_beats(const ait_tuner *t, const ait_candidate *c, const ait_candidate *base);
/* Warn (into the report) when some candidate's threads queued for a CPU
 * while it was profiled: the decision then compares times less those waits. */
void ait_tune_note_contention(ait_tuner *t, const ait_candidate *cands, int n);
/* Mark reduced-precision candidates not faster than a more precise one. */
void ait_tune_mark_dominated(ait_tuner *t, ait_candidate *cands, int n);
/* Say why each correct candidate that was not picked lost. */
void ait_tune_explain_losers(ait_tuner *t, ait_candidate *cands, int n, int winner);

/* ---- runoff.c ---- */

/* The runoff among the candidates near `winner`; returns the new winner. */
int ait_tune_runoff(ait_tuner *t, ait_candidate *cands, int n, int winner);

#endif
