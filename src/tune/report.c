/* The tuning report as versioned JSON (cJSON). Field names are documented in
 * docs/tuning.md; bump AIT_REPORT_VERSION when they change. */
#include <cjson/cJSON.h>
#include <stdlib.h>

#include "hw/fingerprint.h"
#include "tune/module_impl.h"

#define AIT_REPORT_VERSION 2 /* 2: validation.min_cosine may be null; "decided" */

static cJSON *profile_json(const ait_candidate *c) {
  cJSON *arr = cJSON_CreateArray();
  for (int i = 0; arr && i < c->n_prof; i++) {
    const ait_latency_stats *s = &c->prof[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "batch", s->batch);
    cJSON_AddNumberToObject(o, "runs", s->runs);
    cJSON_AddNumberToObject(o, "median_ms", s->median_ms);
    cJSON_AddNumberToObject(o, "p90_ms", s->p90_ms);
    cJSON_AddNumberToObject(o, "p99_ms", s->p99_ms);
    cJSON_AddNumberToObject(o, "min_ms", s->min_ms);
    cJSON_AddNumberToObject(o, "cv", s->cv);
    cJSON_AddNumberToObject(o, "throughput", s->throughput);
    cJSON_AddStringToObject(o, "source", c->prof_from_history[i] ? "history" : "measured");
    /* share of wall time the timing thread waited for a CPU (contention.h) */
    cJSON_AddNumberToObject(o, "cpu_wait", c->prof_wait[i]);
    cJSON_AddItemToArray(arr, o);
  }
  return arr;
}

/* How the batch sizes were chosen: a fresh sweep, or one that started from
 * what earlier tunes on this machine learned. */
static void add_sweep(cJSON *o, const ait_candidate *c) {
  if (!c->n_prof || c->sweep_start < 1) return; /* given batch sizes: no sweep */
  int measured = 0, reused = 0;
  for (int i = 0; i < c->n_prof; i++)
    c->prof_from_history[i] ? reused++ : measured++;
  cJSON *s = cJSON_AddObjectToObject(o, "batch_sweep");
  cJSON_AddBoolToObject(s, "learned", c->sweep_learned);
  cJSON_AddNumberToObject(s, "start", c->sweep_start);
  cJSON_AddNumberToObject(s, "profiled", measured);
  cJSON_AddNumberToObject(s, "from_history", reused);
}

/* The bound the outputs were judged by and whether they met it (added in
 * 0.1.0 without a version bump: readers treat it as optional). */
static void add_tolerance(cJSON *v, const ait_candidate *c) {
  cJSON_AddBoolToObject(v, "passed", c->status != AIT_CAND_INCORRECT);
  cJSON *t = cJSON_AddObjectToObject(v, "tolerance");
  cJSON_AddStringToObject(t, "precision", ait_dtype_name(c->compute));
  cJSON_AddBoolToObject(t, "elementwise", c->tol.elementwise);
  cJSON_AddNumberToObject(t, "rtol", c->tol.rtol);
  cJSON_AddNumberToObject(t, "atol", c->tol.atol);
  cJSON_AddNumberToObject(t, "min_cosine", c->tol.min_cosine);
  cJSON_AddNumberToObject(t, "min_top1", c->tol.min_top1);
  cJSON_AddNumberToObject(t, "max_rel", c->tol.max_rel);
  cJSON_AddNumberToObject(t, "top1_tie_rel", c->tol.tie_rel);
}

/* The point the decision compared (fastest runs; docs/tuning.md). */
static void add_decided(cJSON *o, const ait_candidate *c) {
  if (!c->has_decided) {
    cJSON_AddNullToObject(o, "decided");
    return;
  }
  cJSON *d = cJSON_AddObjectToObject(o, "decided");
  cJSON_AddStringToObject(d, "basis",
                          c->decided_uncontended ? "mean less CPU wait" : "fastest run");
  cJSON_AddNumberToObject(d, "batch", c->decided_batch);
  cJSON_AddNumberToObject(d, "ms", c->decided_ms);
  cJSON_AddNumberToObject(d, "throughput", c->decided_throughput);
}

static cJSON *candidate_json(const ait_candidate *c) {
  cJSON *o = cJSON_CreateObject();
  char key[128];
  cJSON_AddStringToObject(o, "backend", c->desc);
  cJSON_AddStringToObject(o, "key", ait_backend_key(&c->cfg, key, sizeof key));
  cJSON_AddItemToObject(o, "config", ait_backend_config_cjson(&c->cfg));
  cJSON_AddStringToObject(o, "status", ait_cand_status_name(c->status));
  cJSON_AddStringToObject(o, "error", c->error);
  cJSON_AddNumberToObject(o, "build_s", c->build_s);
  cJSON_AddNumberToObject(o, "nodes_supported", c->nodes_supported);
  cJSON_AddNumberToObject(o, "nodes_total", c->nodes_total);
  if (c->run.n_segments > 1) { /* partitioned: who ran what */
    cJSON *p = cJSON_AddObjectToObject(o, "partition");
    cJSON_AddNumberToObject(p, "segments", c->run.n_segments);
    cJSON_AddStringToObject(p, "fallback", c->run.fallback);
    cJSON_AddNumberToObject(p, "nodes_on_backend", c->run.nodes_primary);
    cJSON_AddNumberToObject(p, "nodes_on_fallback", c->run.nodes_total - c->run.nodes_primary);
    cJSON_AddNumberToObject(p, "flops_share", c->run.flops_share);
  }
  cJSON *v = cJSON_AddObjectToObject(o, "validation");
  cJSON_AddNumberToObject(v, "outputs_checked", c->err.checked);
  cJSON_AddNumberToObject(v, "max_abs_error", c->err.max_abs);
  cJSON_AddNumberToObject(v, "max_rel_error", c->err.max_rel);
  /* null when no float output was compared (integer outputs match exactly) */
  if (c->err.cosines > 0)
    cJSON_AddNumberToObject(v, "min_cosine", c->err.min_cosine);
  else
    cJSON_AddNullToObject(v, "min_cosine");
  cJSON_AddNumberToObject(v, "mismatches", (double)c->err.mismatches);
  cJSON_AddNumberToObject(v, "nan_inf", (double)c->err.bad_values);
  if (c->err.checked && c->err.top1 >= 0) cJSON_AddNumberToObject(v, "top1_agreement", c->err.top1);
  if (c->validated) add_tolerance(v, c);
  cJSON_AddItemToObject(o, "profile", profile_json(c));
  add_decided(o, c);
  add_sweep(o, c);
  if (c->runoff_rounds > 0) {
    cJSON *ro = cJSON_AddObjectToObject(o, "runoff");
    cJSON_AddNumberToObject(ro, "rounds", c->runoff_rounds);
    cJSON_AddNumberToObject(ro, "speed_ratio", c->runoff_ratio);
    cJSON_AddNumberToObject(ro, "median_ms", c->runoff_ms);
    cJSON_AddNumberToObject(ro, "cpu_wait", c->runoff_wait);
    cJSON_AddStringToObject(ro, "basis",
                            c->runoff_uncontended ? "times less CPU waits" : "wall time");
  }
  return o;
}

char *ait_report_build(const ait_module *m, const ait_tune_result *r) {
  const ait_tune_options *o = r->opts;
  cJSON *root = cJSON_CreateObject();
  if (!root) return NULL;
  cJSON_AddStringToObject(root, "format", "aitune-report");
  cJSON_AddNumberToObject(root, "version", AIT_REPORT_VERSION);
  cJSON_AddStringToObject(root, "aitune", AIT_VERSION_STRING);
  cJSON *model = cJSON_AddObjectToObject(root, "model");
  cJSON_AddStringToObject(model, "name", m->name);
  cJSON_AddStringToObject(model, "path", ait_module_source(m));
  cJSON_AddStringToObject(model, "sha256", m->model_sha);
  char *spec = ait_spec_json(&m->spec);
  cJSON_AddItemToObject(root, "graph_spec", spec ? cJSON_Parse(spec) : cJSON_CreateNull());
  free(spec);
  cJSON_AddNumberToObject(root, "samples", m->n_samples);
  cJSON *s = cJSON_AddObjectToObject(root, "strategy");
  cJSON_AddStringToObject(s, "name", ait_strategy_name(o->strategy));
  cJSON_AddBoolToObject(s, "perf_validation", o->perf_validation != 0);
  cJSON_AddNumberToObject(s, "min_speedup_ratio", o->min_speedup_ratio);
  if (o->strategy == AIT_STRATEGY_LATENCY_BUDGET)
    cJSON_AddNumberToObject(s, "latency_budget_ms", o->latency_budget_ms);
  cJSON *bs = cJSON_AddArrayToObject(s, "batch_sizes");
  for (size_t i = 0; o->batch_sizes && i < o->n_batch_sizes; i++)
    cJSON_AddItemToArray(bs, cJSON_CreateNumber(o->batch_sizes[i]));
  cJSON_AddNumberToObject(s, "rtol", o->rtol);
  cJSON_AddNumberToObject(s, "atol", o->atol);
  cJSON *p = cJSON_AddObjectToObject(s, "profiling");
  cJSON_AddNumberToObject(p, "warmup", o->warmup);
  cJSON_AddNumberToObject(p, "min_runs", o->min_runs);
  cJSON_AddNumberToObject(p, "max_runs", o->max_runs);
  cJSON_AddNumberToObject(p, "cv_target", o->cv_target);
  cJSON_AddNumberToObject(p, "time_budget_s", o->time_budget_s);
  cJSON *b = cJSON_AddObjectToObject(root, "baseline");
  cJSON_AddStringToObject(b, "backend", "eager");
  cJSON_AddItemToObject(b, "profile", profile_json(r->baseline));
  add_decided(b, r->baseline);
  add_sweep(b, r->baseline);
  cJSON *cands = cJSON_AddArrayToObject(root, "candidates");
  for (int i = 0; i < r->n_cands; i++)
    cJSON_AddItemToArray(cands, candidate_json(&r->cands[i]));
  cJSON *sel = cJSON_AddObjectToObject(root, "selection");
  cJSON_AddStringToObject(sel, "backend", m->desc);
  cJSON_AddBoolToObject(sel, "is_baseline", r->selected < 0);
  cJSON_AddNumberToObject(sel, "batch", r->sel_batch);
  cJSON_AddNumberToObject(sel, "throughput", r->sel_throughput);
  cJSON_AddNumberToObject(sel, "latency_ms", r->sel_latency_ms);
  if (r->mem_policy) {
    cJSON *mp = cJSON_AddObjectToObject(root, "memory_pressure");
    cJSON_AddStringToObject(mp, "level", ait_mem_level_name(r->mem_policy->level));
    cJSON_AddStringToObject(mp, "reading", r->mem_desc);
    cJSON_AddNumberToObject(mp, "batch_multiplier", r->mem_policy->batch_multiplier);
    cJSON_AddBoolToObject(mp, "add_quantized", r->mem_policy->add_quantized);
    cJSON_AddBoolToObject(mp, "free_losers", r->mem_policy->free_losers);
    cJSON_AddBoolToObject(mp, "refuse_builds", r->mem_policy->refuse_builds);
  }
  cJSON *w = cJSON_AddArrayToObject(root, "warnings");
  for (int i = 0; i < r->n_warnings; i++)
    cJSON_AddItemToArray(w, cJSON_CreateString(r->warnings[i]));
  char fp[2048];
  cJSON_AddStringToObject(root, "fingerprint", ait_fingerprint_text(fp, sizeof fp));
  cJSON_AddNumberToObject(root, "tuning_s", r->tuning_s);
  cJSON_AddBoolToObject(root, "from_cache", 0);
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  return text;
}
