/* What profiling has learned: per (fingerprint, model, backend), the
 * throughput and latency measured at each batch size, kept in a small JSON
 * file under the cache folder (history/<key>.json). Later sweeps start from
 * the best known batch size and reuse settled sizes instead of re-measuring
 * them. */
#ifndef AIT_TUNE_HISTORY_H
#define AIT_TUNE_HISTORY_H

#include "tune/profile.h"

#define AIT_HISTORY_MAX 32
#define AIT_HISTORY_MAX_BATCH                                                                      \
  1024 /* the sweep's largest size (measure.c); larger reads are damage                            \
        */

typedef struct ait_batch_point {
  int batch;
  int times; /* how many tunes measured it */
  double throughput, median_ms, p90_ms, p99_ms;
} ait_batch_point;

typedef struct ait_history {
  char path[4300]; /* "" when the history is off */
  int n;
  ait_batch_point pts[AIT_HISTORY_MAX];
} ait_history;

/* Open (and read, when present) the history of this model and backend on
 * this machine. cache_root "" turns it off. A corrupted file reads as empty
 * (it is rewritten on save). */
void ait_history_open(const char *cache_root, const char *model_sha, const char *backend_desc,
                      ait_history *h);
const ait_batch_point *ait_history_get(const ait_history *h, int batch);
/* Record a measurement (replacing an older one at that batch). */
void ait_history_put(ait_history *h, const ait_latency_stats *s);
/* Batch with the best throughput, within a latency budget when > 0; 0 if none. */
int ait_history_best(const ait_history *h, double latency_budget_ms);
/* Write atomically; quiet when the history is off. */
ait_status ait_history_save(const ait_history *h);

#endif
