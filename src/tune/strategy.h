/* The strategies as data: one row each (ggml's and FFTW's habit: the
 * planner iterates over rows, not over if-chains). A row says what the
 * strategy measures, at which batch sizes, what it filters out, how it
 * picks and what happens when nothing is picked. The driver
 * (src/tune/tuner.c) and the judging (strategy.c, below the table) read only rows;
 * the rules in words are in docs/tuning.md. */
#ifndef AIT_TUNE_STRATEGY_H
#define AIT_TUNE_STRATEGY_H

#include <stdbool.h>

#include "aitune.h"

/* What a measurement is judged by. */
typedef enum ait_metric {
  AIT_METRIC_THROUGHPUT, /* samples per second at the best batch size */
  AIT_METRIC_LATENCY     /* time per run */
} ait_metric;

/* How the winner is found. */
typedef enum ait_pick {
  AIT_PICK_FIRST, /* candidates in order; the first correct (and fast) one wins, the rest
                     are not tried */
  AIT_PICK_BEST   /* every candidate measured; the best by the metric, after
                     same_as_default, slower_than_more_precise and the runoff */
} ait_pick;

/* What happens when no candidate wins. */
typedef enum ait_fallback {
  AIT_FALLBACK_BASELINE,      /* the model runs on the baseline (eager) */
  AIT_FALLBACK_BASELINE_NOTE, /* the same, logged: the one candidate was correct but slower */
  AIT_FALLBACK_BASELINE_WARN, /* the same, with a warning in the report: every candidate failed */
  AIT_FALLBACK_WITHIN_BUDGET  /* the baseline only when some candidate met the budget and was
                                 slower than it; else the tune fails (AIT_E_NOT_FOUND) */
} ait_fallback;

typedef struct ait_strategy_row {
  ait_strategy id;
  const char *name; /* as --strategy and the report spell it */
  ait_metric metric;
  bool batch1;          /* batch policy: batch 1 only (else the given sizes or the sweep) */
  bool budget;          /* filter: only measurements whose median fits latency_budget_ms, which
                           must be > 0; the sweep stops past it */
  ait_pick pick;        /* also "after speed": --precision auto adds reduced precisions for
                           AIT_PICK_BEST */
  int n_candidates;     /* exactly this many candidates; 0: any number */
  bool errors_are_mine; /* a candidate's build, correctness or profiling error is the tune's */
  ait_fallback fallback;
} ait_strategy_row;

/* The row of strategy s, or NULL when s is not a strategy. */
const ait_strategy_row *ait_strategy_row_of(ait_strategy s);
/* The number of strategies (rows 0 .. n-1, in the enum's order). */
int ait_strategy_count(void);

#endif
