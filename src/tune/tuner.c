/* The tuner's driver: build every candidate, check it against the reference
 * on every sample (and at the min and max of each dynamic axis), profile it,
 * and pick one by the strategy's row (strategy.c). The rules of each
 * strategy are in docs/tuning.md. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tune/tuner_impl.h"

void ait_tune_warn(ait_tuner *t, const char *fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (t->res.n_warnings < 8) snprintf(t->res.warnings[t->res.n_warnings++], 512, "%s", line);
  ait_module_logf(t->m, 1, "%s", line);
}

static void destroy_state(ait_candidate *c) { ait_runner_destroy(&c->run); }

static void keep_selection(ait_tuner *t, ait_candidate *c, int idx) {
  ait_module *m = t->m;
  double tp = 0, lat = 0;
  int b = 1;
  ait_tune_best_point(t, c, false, &tp, &lat, &b);
  if (!c->n_prof) b = (int)ait_sample_batch(&m->samples[0], &m->spec);
  t->res.selected = idx;
  t->res.sel_batch = b;
  t->res.sel_throughput = tp;
  t->res.sel_latency_ms = lat;
  if (idx >= 0) c->status = AIT_CAND_SELECTED;
  m->cfg = c->cfg;
  snprintf(m->desc, sizeof m->desc, "%s", c->desc);
  m->run = c->run;
  c->run.state = NULL;
  m->batch = b;
}

ait_status ait_tuner_run(ait_module *m, const ait_tune_options *o) {
  ait_tuner t = {.m = m, .o = o, .s = ait_strategy_row_of(o->strategy)};
  if (!t.s) return ait_err(AIT_E_INVALID_ARG, "strategy: %d is not a strategy", (int)o->strategy);
  t.res.opts = o;
  t.res.selected = -1;
  double t_start = ait_now();
  t.prof.warmup = o->warmup;
  t.prof.min_runs = o->min_runs;
  t.prof.max_runs = o->max_runs;
  t.prof.cv_target = o->cv_target;
  t.prof.time_budget_s = o->time_budget_s;
  for (size_t i = 0; o->batch_sizes && i < o->n_batch_sizes && i < AIT_MAX_BATCHES; i++) {
    if (o->batch_sizes[i] < 1)
      return ait_err(AIT_E_INVALID_ARG, "batch size %d must be >= 1", o->batch_sizes[i]);
    t.batches[t.n_batches++] = o->batch_sizes[i];
  }
  if (t.s->budget && !(o->latency_budget_ms > 0))
    return ait_err(AIT_E_INVALID_ARG, "the %s strategy needs a latency budget > 0 ms", t.s->name);
  /* memory pressure sets the batch multiplier, quantized candidates and
   * whether losers are freed at once */
  ait_mem_thresholds_init(&t.mem_thr);
  AIT_TRY(ait_mem_thresholds_from_env(&t.mem_thr));
  ait_mem_reading now;
  const ait_mem_reading *mr = o->mem_reading;
  if (!mr && ait_mem_read(&now) == AIT_OK) mr = &now;
  t.res.mem_policy = ait_mem_policy_for(mr ? ait_mem_pressure(mr, &t.mem_thr) : AIT_MEM_LOW);
  if (mr) ait_mem_describe(mr, &t.mem_thr, t.res.mem_desc, sizeof t.res.mem_desc);
  ait_module_logf(m, t.res.mem_policy->level >= AIT_MEM_HIGH, "memory pressure %s",
                  t.res.mem_desc[0] ? t.res.mem_desc : "unknown");
  for (int i = 0; i < t.n_batches && t.res.mem_policy->batch_multiplier < 1; i++) {
    int b = (int)(t.batches[i] * t.res.mem_policy->batch_multiplier);
    t.batches[i] = b < 1 ? 1 : b;
  }
  /* the profiled batch sizes are part of the tuned range of the batch axis */
  for (int a = 0; a < m->spec.n_axes; a++)
    if (m->spec.axes[a].is_batch && t.n_batches)
      for (int i = 0; i < t.n_batches; i++) {
        if (t.batches[i] > m->spec.axes[a].max) m->spec.axes[a].max = t.batches[i];
        if (t.batches[i] < m->spec.axes[a].min) m->spec.axes[a].min = t.batches[i];
      }

  ait_candidate *cands = NULL, base = {0};
  int n = 0;
  ait_status st = ait_tune_candidates(&t, &cands, &n);
  if (st) return st;
  if (t.s->n_candidates && n != t.s->n_candidates) {
    free(cands);
    if (t.s->n_candidates == 1)
      return ait_err(AIT_E_INVALID_ARG, "the %s strategy takes exactly one backend, got %d",
                     t.s->name, n);
    return ait_err(AIT_E_INVALID_ARG, "the %s strategy takes exactly %d backends, got %d",
                   t.s->name, t.s->n_candidates, n);
  }
  if (n == 0)
    ait_tune_warn(&t, "no candidate backend is available; the model runs on the reference");
  if ((st = ait_tune_make_cases(&t)) != AIT_OK) goto out;

  ait_backend_config_parse("eager", &base.cfg);
  snprintf(base.desc, sizeof base.desc, "eager");
  if ((st = ait_runner_build(&base.cfg, m->model->graph, NULL, &base.run)) != AIT_OK) goto out;
  bool batch1 = t.s->batch1, best = t.s->pick == AIT_PICK_BEST;
  bool profile_base = o->perf_validation && n > 0;
  if (profile_base) {
    ait_module_logf(m, 0, "[eager] baseline");
    if ((st = ait_tune_profile_candidate(&t, &base, batch1)) != AIT_OK) goto out;
  }

  int winner = -1, best_so_far = -1;
  for (int i = 0; i < n; i++) {
    ait_candidate *c = &cands[i];
    ait_module_logf(m, 0, "[%s] candidate %d of %d (%.1f s)", c->desc, i + 1, n,
                    ait_now() - t_start);
    st = ait_tune_build_candidate(&t, c);
    if (st) {
      ait_module_logf(m, 0, "[%s] %s: %s", c->desc, ait_cand_status_name(c->status), c->error);
      destroy_state(c);
      if (t.s->errors_are_mine) {
        ait_err(st, "backend %s %s: %s", c->desc,
                c->status == AIT_CAND_INCORRECT     ? "gave incorrect results"
                : c->status == AIT_CAND_UNSUPPORTED ? "cannot run this model"
                                                    : "failed to build",
                c->error);
        goto out;
      }
      st = AIT_OK;
      continue;
    }
    bool need_profile = o->perf_validation || best;
    if (need_profile && (st = ait_tune_profile_candidate(&t, c, batch1)) != AIT_OK) {
      c->status = AIT_CAND_BUILD_FAILED;
      snprintf(c->error, sizeof c->error, "profiling failed: %s", ait_last_error());
      destroy_state(c);
      if (t.s->errors_are_mine) goto out;
      st = AIT_OK;
      continue;
    }
    double tp = 0, lat = 0;
    int b = 1;
    if (t.s->budget && !ait_tune_best_point(&t, c, false, &tp, &lat, &b)) {
      c->status = AIT_CAND_OVER_BUDGET;
      snprintf(c->error, sizeof c->error,
               "every batch size exceeds the latency budget of %g ms (batch %d: %.3f ms)",
               o->latency_budget_ms, c->prof[0].batch, c->prof[0].median_ms);
    } else if (o->perf_validation && !ait_tune_beats(&t, c, &base)) {
      c->status = AIT_CAND_SLOWER;
      double btp = 0, blat = 0;
      int bb = 1;
      ait_tune_best_point(&t, &base, true, &btp, &blat, &bb);
      ait_tune_best_point(&t, c, true, &tp, &lat, &b);
      snprintf(c->error, sizeof c->error,
               "not faster than the baseline by %.0f%% (fastest runs): %.2f vs %.2f samples/s, "
               "%.3f vs %.3f ms",
               o->min_speedup_ratio * 100, tp, btp, lat, blat);
    } else {
      c->status = AIT_CAND_OK;
    }
    char why[400];
    int same =
        best && c->status == AIT_CAND_OK ? ait_tune_same_as_earlier(cands, i, why, sizeof why) : -1;
    if (same >= 0) {
      c->status = AIT_CAND_SAME;
      snprintf(c->error, sizeof c->error, "the same code as %s: %s", cands[same].desc, why);
    }
    ait_module_logf(m, 0, "[%s] %s%s%s", c->desc, ait_cand_status_name(c->status),
                    c->error[0] ? ": " : "", c->error);
    if (c->status == AIT_CAND_OK && t.s->pick == AIT_PICK_FIRST) {
      winner = i;
      break;
    }
    /* free memory while others run: at once under pressure (losers go
     * entirely), else by deactivating */
    if (t.res.mem_policy->free_losers && best) {
      if (c->status != AIT_CAND_OK)
        destroy_state(c);
      else if (best_so_far < 0)
        best_so_far = i;
      else if (ait_tune_better(&t, c, &cands[best_so_far])) {
        destroy_state(&cands[best_so_far]);
        best_so_far = i;
      } else
        destroy_state(c);
    }
    if (c->run.state && c->run.iface->deactivate) c->run.iface->deactivate(c->run.state);
  }
  if (best) {
    ait_tune_note_contention(&t, cands, n);
    ait_tune_mark_dominated(&t, cands, n);
    for (int i = 0; i < n; i++)
      if (cands[i].status == AIT_CAND_OK && cands[i].run.state &&
          (winner < 0 || ait_tune_better(&t, &cands[i], &cands[winner])))
        winner = i;
    winner = ait_tune_runoff(&t, cands, n, winner);
    /* latency-budget: when no candidate is selectable, the baseline may win
     * only over candidates that met the budget but were slower than it */
    if (t.s->fallback == AIT_FALLBACK_WITHIN_BUDGET && winner < 0) {
      bool some_within = false;
      for (int i = 0; i < n; i++)
        some_within |= cands[i].status == AIT_CAND_SLOWER;
      if (!some_within) {
        st = ait_err(AIT_E_NOT_FOUND, "no candidate meets the latency budget of %g ms",
                     o->latency_budget_ms);
        goto out;
      }
    }
  }
  /* the caller's tensors live on the device: the reference cannot take them */
  if (winner < 0 && o->io_mem == AIT_MEM_CUDA) {
    const char *why = "no candidate";
    for (int i = 0; i < n; i++)
      if (cands[i].error[0]) {
        why = cands[i].error;
        break;
      }
    st = ait_err(AIT_E_UNSUPPORTED,
                 "the inputs live on the device (io_mem), and no candidate that reads device "
                 "memory was selectable (%s)",
                 why);
    goto out;
  }
  if (winner >= 0) {
    ait_tune_explain_losers(&t, cands, n, winner);
    if (cands[winner].run.iface->activate)
      cands[winner].run.iface->activate(cands[winner].run.state);
    keep_selection(&t, &cands[winner], winner);
  } else {
    if (n > 0 && t.s->fallback == AIT_FALLBACK_BASELINE_WARN)
      ait_tune_warn(&t, "every candidate failed; the model runs on the reference backend (eager)");
    else if (n > 0 && t.s->fallback == AIT_FALLBACK_BASELINE_NOTE)
      ait_module_logf(m, 0, "%s is correct but not faster than the baseline; falling back to eager",
                      cands[0].desc);
    if (!profile_base) base.n_prof = 0;
    keep_selection(&t, &base, -1);
  }
  /* the report shows each candidate's decisive point beside its medians */
  for (int i = -1; i < n; i++) {
    ait_candidate *c = i < 0 ? &base : &cands[i];
    c->has_decided = ait_tune_decided_point(&t, c, &c->decided_throughput, &c->decided_ms,
                                            &c->decided_batch, &c->decided_uncontended);
  }
  t.res.baseline = &base;
  t.res.cands = cands;
  t.res.n_cands = n;
  t.res.tuning_s = ait_now() - t_start;
  free(m->report_json);
  m->report_json = ait_report_build(m, &t.res);
  if (!m->report_json)
    st = ait_err(AIT_E_NOMEM, "out of memory building the report");
  else
    m->tuned = true;
  if (m->tuned) ait_mod_keep_check(m);
  ait_module_logf(m, 0, "selected %s (batch %d) in %.1f s", m->desc, m->batch, t.res.tuning_s);
out:
  for (int i = 0; i < n; i++)
    destroy_state(&cands[i]);
  destroy_state(&base);
  free(cands);
  ait_tune_free_cases(&t);
  return st;
}
