/* Profiling: time a callable the way the tuner and `aitune bench` do.
 * Warm-up, then repeated runs on a monotonic clock until a stop rule holds:
 * a fixed number of runs, or the coefficient of variation of the last
 * `min_runs` runs falls below cv_target, capped by max_runs and a time
 * budget. Reports median, p90, p99 latency and throughput. */
#ifndef AIT_TUNE_PROFILE_H
#define AIT_TUNE_PROFILE_H

#include "aitune.h"

typedef struct ait_profile_opts {
  int warmup;           /* runs before timing */
  int min_runs;         /* at least this many timed runs; also the CV window */
  int max_runs;         /* at most this many */
  double cv_target;     /* stop once CV(last min_runs) < cv_target; 0: exactly min_runs */
  double time_budget_s; /* stop after this much timed work, once there are 3 runs
                           (or after 1 run that alone exceeds it); warm-up stops
                           after a quarter of it (at least one run) */
  double give_up_ms;    /* > 0: stop once there are 2 timed runs and a quarter of
                           the budget is spent, when the fastest run is slower
                           than this (a candidate that cannot win needs no
                           precise number) */
  /* Optional: the duration in seconds of the call just made, by the
   * callee's own clock (a GPU's events: device time without the host's
   * share); negative: the host's monotonic clock is used for that run. */
  double (*clock_s)(void *ctx);
} ait_profile_opts;

typedef struct ait_latency_stats {
  int batch;
  int runs;
  double median_ms, p90_ms, p99_ms, min_ms, mean_ms;
  double cv;         /* of the last window */
  double throughput; /* samples per second: batch / median */
} ait_latency_stats;

/* One timed call; returns non-OK to abort profiling with that status. */
typedef ait_status (*ait_timed_fn)(void *ctx);

/* Profile fn at a given batch size (used for throughput only). */
ait_status ait_profile(ait_timed_fn fn, void *ctx, int batch, const ait_profile_opts *o,
                       ait_latency_stats *out);
/* Defaults: warmup 3, min_runs 10, max_runs 200, cv_target 0.05, budget 2 s,
 * no give-up bound. */
void ait_profile_opts_default(ait_profile_opts *o);
/* Monotonic clock in seconds: every time the tuner and the profiler read. */
double ait_now(void);
/* Tests: make ait_now() return now() instead (NULL: the monotonic clock
 * again). A test backend that advances the clock by a fixed cost per run,
 * instead of sleeping, pins every timing the tuner sees, so its decisions
 * do not depend on the machine's load. Process-wide; set it before tuning,
 * not while another thread tunes. */
void ait_now_set_clock(double (*now)(void));

#endif
