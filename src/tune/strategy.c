/* The strategies: one row each (see strategy.h; rules in docs/tuning.md). */
#include "tune/strategy.h"

#include <string.h>

static const ait_strategy_row strategies[] = {
    {.id = AIT_STRATEGY_ONE_BACKEND,
     .name = "one-backend",
     .metric = AIT_METRIC_THROUGHPUT,
     .pick = AIT_PICK_FIRST,
     .n_candidates = 1,
     .errors_are_mine = true,
     .fallback = AIT_FALLBACK_BASELINE_NOTE},
    {.id = AIT_STRATEGY_FIRST_WINS,
     .name = "first-wins",
     .metric = AIT_METRIC_THROUGHPUT,
     .pick = AIT_PICK_FIRST,
     .fallback = AIT_FALLBACK_BASELINE_WARN},
    {.id = AIT_STRATEGY_MAX_THROUGHPUT,
     .name = "max-throughput",
     .metric = AIT_METRIC_THROUGHPUT,
     .pick = AIT_PICK_BEST,
     .fallback = AIT_FALLBACK_BASELINE},
    {.id = AIT_STRATEGY_MIN_LATENCY,
     .name = "min-latency",
     .metric = AIT_METRIC_LATENCY,
     .batch1 = true,
     .pick = AIT_PICK_BEST,
     .fallback = AIT_FALLBACK_BASELINE},
    {.id = AIT_STRATEGY_LATENCY_BUDGET,
     .name = "latency-budget",
     .metric = AIT_METRIC_THROUGHPUT,
     .budget = true,
     .pick = AIT_PICK_BEST,
     .fallback = AIT_FALLBACK_WITHIN_BUDGET},
};

#define N_STRATEGIES ((int)(sizeof strategies / sizeof strategies[0]))

const ait_strategy_row *ait_strategy_row_of(ait_strategy s) {
  return (unsigned)s < (unsigned)N_STRATEGIES ? &strategies[s] : NULL;
}

int ait_strategy_count(void) { return N_STRATEGIES; }

const char *ait_strategy_name(ait_strategy s) {
  const ait_strategy_row *r = ait_strategy_row_of(s);
  return r ? r->name : "unknown";
}

int ait_strategy_parse(const char *name) {
  for (int i = 0; name && i < N_STRATEGIES; i++)
    if (!strcmp(name, strategies[i].name)) return i;
  return -1;
}
