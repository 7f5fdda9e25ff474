/* The strategies: one row each (see strategy.h; rules in docs/tuning.md),
 * and the judging their rows drive: a candidate's best point, which of two
 * is better, whether one beats the baseline, slower_than_more_precise, and
 * why each loser lost. */
#include "tune/strategy.h"

#include <stdio.h>
#include <string.h>

#include "tune/contention.h"
#include "tune/tuner_impl.h"

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

/* ---- judging by the row ------------------------------------------------------ */

/* The time a decision compares for one profile entry: its fastest run (as
 * FFTW's planner does: noise on a shared machine only ever adds time, so
 * the minimum is the steadiest basis for a choice), or, when the thread
 * that ran it queued for a CPU (contention.h), its mean run less that
 * thread's wait (ait_uncontended_mean_ms), whichever is lower. A neighbour
 * busy for the whole profile leaves no quiet run for the minimum to find:
 * on 2 cores with one of them taken, native:threads=2 ran twice its quiet
 * time in every run while threads=1 ran on the free core at full speed, so
 * the minimum picked threads=1, which then served a quiet machine at 0.65x
 * ONNX Runtime. *uncontended says which basis it was. */
static double decision_ms(const ait_latency_stats *s, double unc_ms, bool *uncontended) {
  double ms = s->min_ms > 0 ? s->min_ms : s->median_ms;
  double u = unc_ms > 0 ? unc_ms : ms;
  *uncontended = u < ms;
  return u < ms ? u : ms;
}

/* The best point of c under the strategy: decision_ms (decide) or medians. */
static bool point(const ait_tuner *t, const ait_candidate *c, bool decide, double *tp, double *lat,
                  int *batch, bool *uncontended) {
  bool found = false;
  for (int i = 0; i < c->n_prof; i++) {
    const ait_latency_stats *s = &c->prof[i];
    if (t->s->budget && s->median_ms > t->o->latency_budget_ms) continue;
    bool u = false;
    double ms = decide ? decision_ms(s, c->prof_unc_ms[i], &u) : s->median_ms;
    double thr = ms > 0 ? s->batch / (ms * 1e-3) : 0;
    bool better = !found;
    if (found && t->s->metric == AIT_METRIC_LATENCY)
      better = ms < *lat;
    else if (found)
      better = thr > *tp;
    if (better) {
      *tp = thr;
      *lat = ms;
      *batch = s->batch;
      if (uncontended) *uncontended = u;
      found = true;
    }
  }
  return found;
}

bool ait_tune_decided_point(const ait_tuner *t, const ait_candidate *c, double *tp, double *lat,
                            int *batch, bool *uncontended) {
  return point(t, c, true, tp, lat, batch, uncontended);
}

/* Best (throughput, latency, batch) of a candidate under the strategy. With
 * `decide`, by decision_ms (above); reports use the median. Budgets always
 * apply to the median. */
bool ait_tune_best_point(const ait_tuner *t, const ait_candidate *c, bool decide, double *tp,
                         double *lat, int *batch) {
  return point(t, c, decide, tp, lat, batch, NULL);
}

/* Is a a better pick than b under the strategy? */
bool ait_tune_better(const ait_tuner *t, const ait_candidate *a, const ait_candidate *b) {
  double tpa = 0, lata = 0, tpb = 0, latb = 0;
  int ba = 1, bb = 1;
  ait_tune_best_point(t, a, true, &tpa, &lata, &ba);
  ait_tune_best_point(t, b, true, &tpb, &latb, &bb);
  return t->s->metric == AIT_METRIC_LATENCY ? lata < latb : tpa > tpb;
}

/* Does c beat the baseline by the required margin? */
bool ait_tune_beats(const ait_tuner *t, const ait_candidate *c, const ait_candidate *base) {
  double tp = 0, lat = 0, btp = 0, blat = 0;
  int b = 1, bb = 1;
  if (!ait_tune_best_point(t, c, true, &tp, &lat, &b)) return false;
  if (!ait_tune_best_point(t, base, true, &btp, &blat, &bb)) return true; /* baseline over budget */
  double r = 1.0 + t->o->min_speedup_ratio;
  if (t->s->metric == AIT_METRIC_LATENCY) return lat * r <= blat;
  return tp >= btp * r;
}

void ait_tune_note_contention(ait_tuner *t, const ait_candidate *cands, int n) {
  int worst = -1, contended = 0;
  double frac = 0;
  for (int i = 0; i < n; i++) {
    bool hit = false;
    for (int k = 0; cands[i].status == AIT_CAND_OK && k < cands[i].n_prof; k++) {
      hit |= cands[i].prof_wait[k] >= AIT_CONTENDED;
      if (cands[i].prof_wait[k] > frac) frac = cands[i].prof_wait[k], worst = i;
    }
    contended += hit;
  }
  if (worst < 0 || frac < AIT_CONTENDED) return;
  ait_tune_warn(t,
                "CPU contention while timing: %d candidate(s) waited for a CPU "
                "(up to %.0f%% of the wall time, %s); they are judged on their mean less that "
                "wait where it is below their fastest run",
                contended, frac * 100, cands[worst].desc);
}

/* A reduced-precision candidate that is not faster than a more precise one
 * (quant slower than native fp32) gives up accuracy for nothing: it is
 * never picked, whatever noise the runoff sees, and the report says which
 * candidate it lost to. */
void ait_tune_mark_dominated(ait_tuner *t, ait_candidate *cands, int n) {
  for (int i = 0; i < n; i++) {
    ait_candidate *c = &cands[i];
    if (c->status != AIT_CAND_OK) continue;
    for (int j = 0; j < n; j++) {
      const ait_candidate *d = &cands[j];
      if (j == i || d->status != AIT_CAND_OK ||
          ait_tune_precision_rank(d) <= ait_tune_precision_rank(c) || ait_tune_better(t, c, d))
        continue;
      double tc = 0, lc = 0, td = 0, ld = 0;
      int bc = 1, bd = 1;
      ait_tune_best_point(t, c, true, &tc, &lc, &bc);
      ait_tune_best_point(t, d, true, &td, &ld, &bd);
      c->status = AIT_CAND_DOMINATED;
      snprintf(c->error, sizeof c->error,
               "reduced precision and not faster than %s (more precise): %.2f vs %.2f samples/s, "
               "%.3f vs %.3f ms (fastest runs)",
               d->desc, tc, td, lc, ld);
      ait_module_logf(t->m, 0, "[%s] %s: %s", c->desc, ait_cand_status_name(c->status), c->error);
      break;
    }
  }
}

/* Why each correct candidate that was not picked lost: to the selected
 * one, with both measurements. */
void ait_tune_explain_losers(ait_tuner *t, ait_candidate *cands, int n, int winner) {
  if (winner < 0) return;
  const ait_candidate *w = &cands[winner];
  double tw = 0, lw = 0;
  int bw = 1;
  ait_tune_best_point(t, w, true, &tw, &lw, &bw);
  bool lat = t->s->metric == AIT_METRIC_LATENCY;
  for (int i = 0; i < n; i++) {
    ait_candidate *c = &cands[i];
    if (i == winner || c->status != AIT_CAND_OK || c->error[0]) continue;
    double tc = 0, lc = 0;
    int bc = 1;
    ait_tune_best_point(t, c, true, &tc, &lc, &bc);
    if (c->runoff_rounds > 0)
      snprintf(c->error, sizeof c->error,
               "correct, but slower than %s in the runoff (the finalists timed alternately, %d "
               "rounds%s): %.2fx its speed",
               w->desc, c->runoff_rounds,
               c->runoff_uncontended ? ", contended: times less CPU waits" : "", c->runoff_ratio);
    else
      snprintf(c->error, sizeof c->error,
               "correct, but %s than %s: %.2f vs %.2f samples/s (batch %d vs %d), %.3f vs %.3f "
               "ms (fastest runs)",
               lat ? "slower to answer" : "less throughput", w->desc, tc, tw, bc, bw, lc, lw);
  }
}
