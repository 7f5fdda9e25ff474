/* The tuner: build every candidate, check it against the reference on every
 * sample (and at the min and max of each dynamic axis), profile it, and pick
 * one by the strategy. The rules of each strategy are in docs/tuning.md. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/defaults.h"
#include "core/error.h"
#include "hw/hw_impl.h"
#include "runtime/eager.h"
#include "tune/history.h"
#include "tune/module_impl.h"
#include "tune/strategy.h"

const char *ait_cand_status_name(ait_cand_status s) {
  static const char *const names[] = {"pending",
                                      "selected",
                                      "ok",
                                      "unsupported",
                                      "build_failed",
                                      "incorrect",
                                      "slower_than_baseline",
                                      "over_budget",
                                      "same_as_default",
                                      "slower_than_more_precise"};
  return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "unknown";
}

/* Validation inputs with the reference's outputs. */
typedef struct ref_case {
  ait_sample in;
  ait_tensor **want;
  char label[96];
} ref_case;

typedef struct tuner {
  ait_module *m;
  const ait_tune_options *o;
  const ait_strategy_row *s; /* o->strategy's row */
  ait_profile_opts prof;
  ait_mem_thresholds mem_thr;
  ref_case *cases;
  int n_cases;
  int batches[AIT_MAX_BATCHES];
  int n_batches; /* 0: sweep */
  /* fastest run of any candidate so far, per batch size: a candidate whose
   * first runs are GIVE_UP_FACTOR times slower stops being timed */
  int seen_batch[2 * AIT_MAX_BATCHES];
  double seen_min_ms[2 * AIT_MAX_BATCHES];
  int n_seen;
  ait_tune_result res;
} tuner;

/* Clearly slower than the best candidate at that batch size: noise on a
 * busy machine moves single runs by tens of percent, never by 2x. */
#define GIVE_UP_FACTOR 2.0

static double *seen_min(tuner *t, int batch, bool add) {
  for (int i = 0; i < t->n_seen; i++)
    if (t->seen_batch[i] == batch) return &t->seen_min_ms[i];
  if (!add || t->n_seen >= 2 * AIT_MAX_BATCHES) return NULL;
  t->seen_batch[t->n_seen] = batch;
  t->seen_min_ms[t->n_seen] = INFINITY;
  return &t->seen_min_ms[t->n_seen++];
}

static void free_outputs(ait_tensor **out, int n) {
  for (int i = 0; i < n; i++) {
    ait_tensor_free(out[i]);
    out[i] = NULL;
  }
}

static void warn(tuner *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(tuner *t, const char *fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (t->res.n_warnings < 8) snprintf(t->res.warnings[t->res.n_warnings++], 512, "%s", line);
  ait_module_logf(t->m, 1, "%s", line);
}

/* The reference outputs for every sample, and for each dynamic axis at its
 * min and max (the sample resized along it). */
static ait_status make_cases(tuner *t) {
  ait_module *m = t->m;
  const ait_graph *g = m->model->graph;
  int cap = m->n_samples + 2 * m->spec.n_axes;
  t->cases = calloc((size_t)cap + 1, sizeof *t->cases);
  if (!t->cases) return ait_err(AIT_E_NOMEM, "out of memory");
  for (int c = 0; c < cap; c++) {
    ref_case *rc = &t->cases[t->n_cases];
    if (c < m->n_samples) {
      AIT_TRY(ait_sample_clone(&m->samples[c], &rc->in));
      snprintf(rc->label, sizeof rc->label, "sample %d", c);
    } else {
      int a = (c - m->n_samples) / 2;
      const ait_axis *ax = &m->spec.axes[a];
      int64_t size = (c - m->n_samples) % 2 ? ax->max : ax->min;
      /* the batch axis is also exercised by profiling; here min and max of
       * every axis that the samples vary, plus batch 1 and the largest batch */
      if (ax->min == ax->max && !ax->is_batch) continue;
      if (ax->is_batch) size = (c - m->n_samples) % 2 ? (ax->max > 2 ? ax->max : 2) : 1;
      AIT_TRY(ait_sample_resize(&m->samples[0], &m->spec, a, size, &rc->in));
      snprintf(rc->label, sizeof rc->label, "%s axis %d of input %d at %s %lld",
               ax->sym[0] ? ax->sym : "dynamic", ax->axis, ax->input,
               (c - m->n_samples) % 2 ? "max" : "min", (long long)size);
    }
    rc->want = calloc((size_t)g->n_outputs + 1, sizeof *rc->want);
    if (!rc->want) return ait_err(AIT_E_NOMEM, "out of memory");
    t->n_cases++;
    ait_status st =
        ait_eager_run(g, (const ait_tensor *const *)rc->in.inputs, rc->in.n_inputs, rc->want);
    if (st) return ait_err_prefix(st, "reference run on %s", rc->label);
  }
  return AIT_OK;
}

static void free_cases(tuner *t) {
  int n_out = t->m->model->graph->n_outputs;
  for (int c = 0; c < t->n_cases; c++) {
    ait_sample_free(&t->cases[c].in);
    if (t->cases[c].want) free_outputs(t->cases[c].want, n_out);
    free(t->cases[c].want);
  }
  free(t->cases);
}

/* Compute precision a configuration runs at, for its tolerance: the
 * backend's own answer, else its `dtype` option, else float32. */
static ait_dtype compute_dtype(const ait_backend_config *cfg) {
  const char *p = cfg->iface->precision ? cfg->iface->precision(cfg) : NULL;
  for (int i = 0; !p && i < cfg->iface->n_options; i++)
    if (!strcmp(cfg->iface->options[i].name, "dtype")) p = ait_backend_config_get(cfg, "dtype");
  if (!p) return AIT_FLOAT32;
  if (!strcmp(p, "bf16")) return AIT_BFLOAT16;
  if (!strcmp(p, "fp16") || !strcmp(p, "tf32")) return AIT_FLOAT16;
  if (!strcmp(p, "int8") || !strcmp(p, "fp8") || !strcmp(p, "fp4")) return AIT_INT8;
  return AIT_FLOAT32;
}

static bool validate(tuner *t, ait_candidate *c) {
  c->err.top1 = -1; /* until a classifier output is compared */
  const ait_graph *g = t->m->model->graph;
  ait_tolerance tol = ait_tolerance_for(compute_dtype(&c->cfg), t->o);
  c->tol = tol; /* for the report: which bound the numbers met or missed */
  c->compute = compute_dtype(&c->cfg);
  c->validated = true;
  ait_tensor **got = calloc((size_t)g->n_outputs + 1, sizeof *got);
  if (!got) {
    snprintf(c->error, sizeof c->error, "out of memory");
    return false;
  }
  bool ok = true;
  for (int k = 0; k < t->n_cases && ok; k++) {
    ref_case *rc = &t->cases[k];
    ait_status st = c->run.iface->infer(c->run.state, (const ait_tensor *const *)rc->in.inputs,
                                        rc->in.n_inputs, got);
    if (st) {
      snprintf(c->error, sizeof c->error, "inference failed on %s: %s", rc->label,
               ait_last_error());
      ok = false;
      break;
    }
    for (int i = 0; i < g->n_outputs && ok; i++) {
      char why[400];
      if (!ait_outputs_match(got[i], rc->want[i], &tol, &c->err, why, sizeof why)) {
        snprintf(c->error, sizeof c->error, "output %d ('%s') on %s: %s", i,
                 g->values[g->outputs[i]].name, rc->label, why);
        ok = false;
      }
    }
    free_outputs(got, g->n_outputs);
  }
  free(got);
  return ok;
}

/* ---- profiling ------------------------------------------------------------ */

typedef struct timed_ctx {
  const ait_candidate *c;
  const ait_sample *in;
  ait_tensor **out;
  int n_out;
} timed_ctx;

/* The device's own time of the run just made, for backends timed by it. */
static double device_clock_s(void *p) {
  const timed_ctx *tc = p;
  const ait_backend_iface *f = tc->c->run.iface;
  double ms = f->last_device_ms ? f->last_device_ms(tc->c->run.state) : -1;
  return ms >= 0 ? ms * 1e-3 : -1;
}

static ait_status timed_infer(void *p) {
  timed_ctx *tc = p;
  ait_status st = tc->c->run.iface->infer(
      tc->c->run.state, (const ait_tensor *const *)tc->in->inputs, tc->in->n_inputs, tc->out);
  free_outputs(tc->out, tc->n_out);
  return st;
}

/* Bytes of one sample resized to `batch`: a guard against sweeping into
 * memory exhaustion (inputs x 64 is a rough bound on activations). The
 * available memory is the options' reading when given (tests pin it), the
 * machine's now otherwise. */
static bool fits_memory(const tuner *t, const ait_sample *s, int64_t cur_batch, int64_t batch) {
  size_t bytes = 0;
  for (int i = 0; i < s->n_inputs; i++)
    bytes += ait_tensor_nbytes(s->inputs[i]);
  double need = (double)bytes / (double)(cur_batch ? cur_batch : 1) * (double)batch * 64.0;
  const ait_mem_reading *r = t->o->mem_reading;
  double avail = 8e9;
  if (r && r->host_total)
    avail = (double)r->host_available;
  else {
    FILE *f = fopen("/proc/meminfo", "r"); /* cheap: this runs before every size */
    char line[256];
    while (f && fgets(line, sizeof line, f))
      if (sscanf(line, "MemAvailable: %lf kB", &avail) == 1) {
        avail *= 1024;
        break;
      }
    if (f) fclose(f);
  }
  return need < avail / 4;
}

static ait_status profile_at(tuner *t, ait_candidate *c, int batch, ait_latency_stats *out) {
  ait_module *m = t->m;
  ait_sample resized = {0};
  const ait_sample *in = &m->samples[0];
  if (m->spec.has_batch && ait_sample_batch(in, &m->spec) != batch) {
    AIT_TRY(ait_sample_resize(in, &m->spec, -1, batch, &resized));
    in = &resized;
  }
  int n_out = m->model->graph->n_outputs;
  ait_tensor **outs = calloc((size_t)n_out + 1, sizeof *outs);
  if (!outs) {
    ait_sample_free(&resized);
    return ait_err(AIT_E_NOMEM, "out of memory");
  }
  timed_ctx tc = {c, in, outs, n_out};
  /* the baseline is timed in full: candidates are judged against it */
  bool base = !strcmp(c->desc, "eager");
  double *seen = base ? NULL : seen_min(t, batch, true);
  ait_profile_opts po = t->prof;
  po.give_up_ms = seen && isfinite(*seen) ? *seen * GIVE_UP_FACTOR : 0;
  if (t->o->io_mem == AIT_MEM_CUDA && !base) po.clock_s = device_clock_s;
  ait_status st = ait_profile(timed_infer, &tc, batch, &po, out);
  if (!st && seen && out->min_ms < *seen) *seen = out->min_ms;
  free(outs);
  ait_sample_free(&resized);
  return st;
}

/* The batch-size sweep. Without history: powers of two from 1 until the
 * throughput gain falls under 5%, memory would run short, or latency passes
 * the budget. With history for this machine, model and backend: start at the
 * best known size and measure only it and its neighbours (and onwards while
 * doubling still gains); other sizes already measured are reused. */

static bool stop_after(tuner *t, const ait_candidate *c, const ait_latency_stats *s,
                       const ait_latency_stats *prev) {
  if (t->s->budget && s->median_ms > t->o->latency_budget_ms) return true;
  /* A run at the next size (twice this one) would take over half the time
   * budget per size: it could not be timed more than once or twice, and a
   * run that long has amortised per-run overheads already. On a noisy
   * machine a few lucky 5% "gains" in a row otherwise double the size to 128
   * (ResNet-50 on onednn: 5 s a run, 50 s of an 88 s tune). */
  if (t->prof.time_budget_s > 0 && s->median_ms * 2 > t->prof.time_budget_s * 1000 / 2) return true;
  return prev && s->throughput < prev->throughput * 1.05;
}

static ait_status measure(tuner *t, ait_candidate *c, const char *desc, ait_history *h, int b) {
  ait_module_logf(t->m, 0, "[%s] profile batch %d", desc, b);
  ait_latency_stats *s = &c->prof[c->n_prof];
  AIT_TRY(profile_at(t, c, b, s));
  c->prof_from_history[c->n_prof++] = false;
  ait_history_put(h, s);
  return AIT_OK;
}

static void reuse(ait_candidate *c, const ait_batch_point *p) {
  ait_latency_stats *s = &c->prof[c->n_prof];
  memset(s, 0, sizeof *s);
  s->batch = p->batch;
  s->throughput = p->throughput;
  s->median_ms = p->median_ms;
  s->p90_ms = p->p90_ms;
  s->p99_ms = p->p99_ms;
  c->prof_from_history[c->n_prof++] = true;
}

static ait_status sweep(tuner *t, ait_candidate *c, const char *desc, int64_t own) {
  ait_module *m = t->m;
  char root[4096];
  ait_history h;
  ait_history_open(ait_cache_root(t->o, root, sizeof root), m->model_sha, desc, &h);
  int best = ait_history_best(&h, t->s->budget ? t->o->latency_budget_ms : 0);
  ait_status st = AIT_OK;
  c->sweep_learned = best > 0 && h.n >= 2;
  c->sweep_start = c->sweep_learned ? best : 1;
  if (!c->sweep_learned) {
    for (int b = 1; !st && c->n_prof < AIT_MAX_BATCHES && b <= 1024; b *= 2) {
      if (!fits_memory(t, &m->samples[0], own, b)) {
        ait_module_logf(m, 0, "[%s] batch %d would not fit in memory; sweep stops", desc, b);
        break;
      }
      if ((st = measure(t, c, desc, &h, b))) break;
      if (stop_after(t, c, &c->prof[c->n_prof - 1], c->n_prof > 1 ? &c->prof[c->n_prof - 2] : NULL))
        break;
    }
  } else {
    ait_module_logf(m, 0, "[%s] history: best known batch %d; starting there", desc, best);
    ait_history learned = h; /* judged on what was known before this tune */
    st = measure(t, c, desc, &h, best);
    /* Upwards only where the history leaves a question: a larger size it
     * knows is settled (had it been better it would be the best), and so is
     * a plateau (best gained under 5% over half its size: the sweep that
     * measured it stopped there on purpose). */
    const ait_batch_point *half = ait_history_get(&learned, best / 2),
                          *top = ait_history_get(&learned, best);
    bool plateau = half && top && top->throughput < half->throughput * 1.05;
    for (int b = best * 2; !st && !plateau && c->n_prof < AIT_MAX_BATCHES && b <= 1024; b *= 2) {
      if (ait_history_get(&learned, b) || !fits_memory(t, &m->samples[0], own, b)) break;
      if ((st = measure(t, c, desc, &h, b))) break;
      if (stop_after(t, c, &c->prof[c->n_prof - 1], &c->prof[c->n_prof - 2])) break;
    }
    /* settled sizes below the measured window come from the history */
    for (int i = 0; !st && i < h.n && c->n_prof < AIT_MAX_BATCHES; i++) {
      bool measured = false;
      for (int k = 0; k < c->n_prof; k++)
        measured |= c->prof[k].batch == h.pts[i].batch;
      if (!measured) reuse(c, &h.pts[i]);
    }
  }
  if (!st && ait_history_save(&h) != AIT_OK) ait_err_clear(); /* learning is best effort */
  return st;
}

/* Profile c over the batch sizes: the given list, or powers of two until the
 * throughput gain falls under 5%, memory would run short, or (with a budget)
 * latency exceeds it. */
static ait_status profile_candidate(tuner *t, ait_candidate *c, bool batch1_only) {
  ait_module *m = t->m;
  char desc[600];
  snprintf(desc, sizeof desc, "%s", c->desc);
  c->n_prof = 0;
  int64_t own = ait_sample_batch(&m->samples[0], &m->spec);
  if (!m->spec.has_batch || batch1_only) {
    int b = m->spec.has_batch ? 1 : (int)own;
    ait_module_logf(m, 0, "[%s] profile batch %d", desc, b);
    AIT_TRY(profile_at(t, c, b, &c->prof[0]));
    c->n_prof = 1;
    return AIT_OK;
  }
  if (t->n_batches) {
    for (int i = 0; i < t->n_batches; i++) {
      ait_module_logf(m, 0, "[%s] profile batch %d", desc, t->batches[i]);
      AIT_TRY(profile_at(t, c, t->batches[i], &c->prof[c->n_prof]));
      c->n_prof++;
    }
    return AIT_OK;
  }
  return sweep(t, c, desc, own);
}

/* Best (throughput, latency, batch) of a candidate under the strategy. With
 * `decide`, runs are judged by their fastest time (as FFTW's planner does:
 * noise on a shared machine only ever adds time, so the minimum is the
 * steadiest basis for a choice); reports use the median. Budgets always
 * apply to the median. */
static bool best_point_as(const tuner *t, const ait_candidate *c, bool decide, double *tp,
                          double *lat, int *batch) {
  bool found = false;
  for (int i = 0; i < c->n_prof; i++) {
    const ait_latency_stats *s = &c->prof[i];
    if (t->s->budget && s->median_ms > t->o->latency_budget_ms) continue;
    double ms = decide && s->min_ms > 0 ? s->min_ms : s->median_ms;
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
      found = true;
    }
  }
  return found;
}

static bool best_point(const tuner *t, const ait_candidate *c, double *tp, double *lat,
                       int *batch) {
  return best_point_as(t, c, false, tp, lat, batch);
}

/* Is a a better pick than b under the strategy? */
static bool better(const tuner *t, const ait_candidate *a, const ait_candidate *b) {
  double tpa = 0, lata = 0, tpb = 0, latb = 0;
  int ba = 1, bb = 1;
  best_point_as(t, a, true, &tpa, &lata, &ba);
  best_point_as(t, b, true, &tpb, &latb, &bb);
  return t->s->metric == AIT_METRIC_LATENCY ? lata < latb : tpa > tpb;
}

/* Does c beat the baseline by the required margin? */
static bool beats(const tuner *t, const ait_candidate *c, const ait_candidate *base) {
  double tp = 0, lat = 0, btp = 0, blat = 0;
  int b = 1, bb = 1;
  if (!best_point_as(t, c, true, &tp, &lat, &b)) return false;
  if (!best_point_as(t, base, true, &btp, &blat, &bb)) return true; /* baseline over budget */
  double r = 1.0 + t->o->min_speedup_ratio;
  if (t->s->metric == AIT_METRIC_LATENCY) return lat * r <= blat;
  return tp >= btp * r;
}

/* ---- the runoff ------------------------------------------------------------- */

/* Each candidate was timed on its own, one after the other; on a shared
 * machine a neighbour that was busy during one candidate's turn and quiet
 * during another's decides the pick (MobileNetV2 tuned on a 2-core VM
 * picked onednn over native in 2 of 3 runs, though native ran 5-10%
 * faster when the two were timed alternately). So the candidates within
 * RUNOFF_MARGIN of the best are timed again, in rounds: each round runs
 * every finalist, in a shuffled order, a few times back to back; a busy
 * spell then hits all of them alike. The pick is the finalist with the
 * best median over rounds of its speed relative to the leader's in the
 * same round. The rounds fit in RUNOFF_BUDGET_S (fewer than 3: no runoff). */
#define RUNOFF_MARGIN 0.15
#define RUNOFF_MAX 4
#define RUNOFF_MAX_ROUNDS 15
#define RUNOFF_BUDGET_S 4.0
#define RUNOFF_SLICE_MS 30.0 /* timed work per finalist and round */
/* Runs per finalist and round, at most: a 50 us model (the MLP) gets 256
 * (~13 ms), not 8: blocks of a few runs timed mostly a thread pool coming
 * back from sleep after the other finalists' turns, and picked onednn
 * (0.06 ms in the harness) over native (0.04 ms). Each block starts with
 * an eighth of its runs untimed. */
#define RUNOFF_MAX_REPS 256

typedef struct finalist {
  ait_candidate *c;
  int idx, batch, reps;
  double est_ms; /* its decided time per run */
  ait_sample resized;
  const ait_sample *in;
} finalist;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median_of(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Median time of one run of f over its reps (after reps / 8 + 1 untimed). */
static ait_status runoff_time(tuner *t, finalist *f, double *ms) {
  int n_out = t->m->model->graph->n_outputs;
  ait_tensor **outs = calloc((size_t)n_out + 1, sizeof *outs);
  if (!outs) return ait_err(AIT_E_NOMEM, "out of memory");
  timed_ctx tc = {f->c, f->in, outs, n_out};
  double v[RUNOFF_MAX_REPS];
  ait_status st = AIT_OK;
  for (int r = 0; !st && r < f->reps / 8 + 1; r++)
    st = timed_infer(&tc);
  bool dev = t->o->io_mem == AIT_MEM_CUDA;
  for (int r = 0; !st && r < f->reps; r++) {
    double t0 = ait_now();
    st = timed_infer(&tc);
    v[r] = (ait_now() - t0) * 1e3;
    double d = dev ? device_clock_s(&tc) : -1;
    if (d >= 0) v[r] = d * 1e3;
  }
  free(outs);
  if (!st) *ms = median_of(v, f->reps);
  return st;
}

/* The runoff among the candidates near `winner`; returns the new winner. */
static int runoff(tuner *t, ait_candidate *cands, int n, int winner) {
  const ait_tune_options *o = t->o;
  if (winner < 0 || o->runoff_rounds <= 0 || t->s->pick != AIT_PICK_BEST) return winner;
  bool latency = t->s->metric == AIT_METRIC_LATENCY;
  finalist f[RUNOFF_MAX];
  int nf = 0;
  double wtp = 0, wlat = 0;
  int wb = 1;
  best_point_as(t, &cands[winner], true, &wtp, &wlat, &wb);
  /* the winner first, then the others near it (in candidate order) */
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < n && nf < RUNOFF_MAX; i++) {
      ait_candidate *c = &cands[i];
      double tp = 0, lat = 0;
      int b = 1;
      if ((pass == 0) != (i == winner) || c->status != AIT_CAND_OK || !c->run.state ||
          !best_point_as(t, c, true, &tp, &lat, &b))
        continue;
      bool near = latency ? lat <= wlat * (1 + RUNOFF_MARGIN) : tp >= wtp / (1 + RUNOFF_MARGIN);
      if (!near) continue;
      f[nf] = (finalist){c, i, b, 1, lat, {0}, NULL};
      f[nf].reps = lat > 0 ? (int)(RUNOFF_SLICE_MS / lat) : 1;
      f[nf].reps = f[nf].reps < 1 ? 1 : f[nf].reps > RUNOFF_MAX_REPS ? RUNOFF_MAX_REPS : f[nf].reps;
      nf++;
    }
  if (nf < 2) return winner;
  double round_s = 0;
  for (int k = 0; k < nf; k++)
    round_s += (f[k].reps + f[k].reps / 8 + 1) * f[k].est_ms * 1e-3;
  int rounds = o->runoff_rounds < RUNOFF_MAX_ROUNDS ? o->runoff_rounds : RUNOFF_MAX_ROUNDS;
  if (round_s * rounds > RUNOFF_BUDGET_S) rounds = (int)(RUNOFF_BUDGET_S / round_s);
  if (rounds < 3) {
    ait_module_logf(t->m, 0, "[runoff] skipped: %d finalists take %.2f s a round", nf, round_s);
    return winner;
  }
  ait_module *m = t->m;
  ait_status st = AIT_OK;
  for (int k = 0; !st && k < nf; k++) {
    f[k].in = &m->samples[0];
    if (m->spec.has_batch && ait_sample_batch(f[k].in, &m->spec) != f[k].batch) {
      st = ait_sample_resize(f[k].in, &m->spec, -1, f[k].batch, &f[k].resized);
      f[k].in = &f[k].resized;
    }
    if (!st && f[k].c->run.iface->activate) st = f[k].c->run.iface->activate(f[k].c->run.state);
  }
  double ms[RUNOFF_MAX][RUNOFF_MAX_ROUNDS];
  unsigned long long seed = 0x9e3779b97f4a7c15ULL;
  for (int r = 0; !st && r < rounds; r++) {
    int order[RUNOFF_MAX];
    for (int k = 0; k < nf; k++)
      order[k] = k;
    for (int k = nf - 1; k > 0; k--) { /* Fisher-Yates on a xorshift */
      seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
      int j = (int)(seed % (unsigned long long)(k + 1)), x = order[k];
      order[k] = order[j], order[j] = x;
    }
    for (int k = 0; !st && k < nf; k++)
      st = runoff_time(t, &f[order[k]], &ms[order[k]][r]);
  }
  int pick = winner;
  if (st) {
    ait_module_logf(m, 1, "runoff stopped (%s); keeping %s", ait_last_error(), cands[winner].desc);
    ait_err_clear();
  } else {
    char line[1024];
    int at =
        snprintf(line, sizeof line, "[runoff] %d rounds, speed over %s:", rounds, f[0].c->desc);
    double best = 0;
    for (int k = 0; k < nf; k++) {
      double ratio[RUNOFF_MAX_ROUNDS], own[RUNOFF_MAX_ROUNDS];
      for (int r = 0; r < rounds; r++) {
        /* speed: samples per second (throughput strategies), runs per second (latency) */
        double mine = (latency ? 1 : f[k].batch) / ms[k][r],
               lead = (latency ? 1 : f[0].batch) / ms[0][r];
        ratio[r] = mine / lead;
        own[r] = ms[k][r];
      }
      f[k].c->runoff_rounds = rounds;
      f[k].c->runoff_ratio = median_of(ratio, rounds);
      f[k].c->runoff_ms = median_of(own, rounds);
      if (at < (int)sizeof line)
        at += snprintf(line + at, sizeof line - (size_t)at, " %s %.3f (%.3f ms)", f[k].c->desc,
                       f[k].c->runoff_ratio, f[k].c->runoff_ms);
      if (k == 0 || f[k].c->runoff_ratio > best) best = f[k].c->runoff_ratio, pick = f[k].idx;
    }
    ait_module_logf(m, 0, "%s", line);
  }
  for (int k = 0; k < nf; k++) {
    ait_sample_free(&f[k].resized);
    if (f[k].idx != pick && f[k].c->run.iface->deactivate)
      f[k].c->run.iface->deactivate(f[k].c->run.state);
  }
  return pick;
}

/* ---- one candidate --------------------------------------------------------- */

/* Critical memory pressure refuses new builds (policy table in src/hw/). */
static bool memory_refuses(tuner *t, ait_candidate *c) {
  ait_mem_reading now;
  const ait_mem_reading *r = t->o->mem_reading;
  if (!r && ait_mem_read(&now) == AIT_OK) r = &now;
  if (!r || !ait_mem_policy_for(ait_mem_pressure(r, &t->mem_thr))->refuse_builds) return false;
  char desc[256];
  c->status = AIT_CAND_BUILD_FAILED;
  snprintf(c->error, sizeof c->error, "not built: memory pressure is %s",
           ait_mem_describe(r, &t->mem_thr, desc, sizeof desc));
  return true;
}

/* The caller's tensors live on the device (io_mem): only a backend that
 * reads device memory can run them, and it is timed by its device clock
 * (no host transfers, which the caller does not pay). */
static ait_status device_io(ait_candidate *c) {
  const ait_backend_iface *f = c->run.iface;
  if (!f->set_io || !f->last_device_ms) {
    c->status = AIT_CAND_UNSUPPORTED;
    snprintf(c->error, sizeof c->error,
             "%s takes host memory only%s, and the inputs live on the device (io_mem)",
             c->cfg.iface->name, c->run.n_segments > 1 ? " when partitioned" : "");
    return AIT_E_UNSUPPORTED;
  }
  ait_backend_io io = {.out_mem = AIT_MEM_HOST, .time_device = true};
  ait_status st = f->set_io(c->run.state, &io);
  if (st) {
    c->status = AIT_CAND_BUILD_FAILED;
    snprintf(c->error, sizeof c->error, "%s", ait_last_error());
  }
  return st;
}

static ait_status build_candidate(tuner *t, ait_candidate *c) {
  ait_module *m = t->m;
  const ait_graph *g = m->model->graph;
  char why[512];
  if (memory_refuses(t, c)) return ait_err(AIT_E_NOMEM, "%s", c->error);
  if (!c->cfg.iface->available(why, sizeof why)) {
    c->status = AIT_CAND_UNSUPPORTED;
    snprintf(c->error, sizeof c->error, "not available on this machine: %s", why);
    return AIT_E_UNSUPPORTED;
  }
  ait_module_logf(m, 0, "[%s] build", c->desc);
  const ait_tensor *const *samples[AIT_MAX_SAMPLES];
  for (int s = 0; s < m->n_samples; s++)
    samples[s] = (const ait_tensor *const *)m->samples[s].inputs;
  ait_build_info info = {&m->spec, samples,           m->n_samples,
                         NULL,     t->o->node_filter, t->o->node_filter_user};
  double t0 = ait_now();
  ait_status st = ait_runner_build(&c->cfg, g, &info, &c->run);
  c->build_s = ait_now() - t0;
  c->nodes_supported = c->run.nodes_primary;
  c->nodes_total = c->run.nodes_total;
  if (st) {
    c->status = st == AIT_E_UNSUPPORTED ? AIT_CAND_UNSUPPORTED : AIT_CAND_BUILD_FAILED;
    snprintf(c->error, sizeof c->error, "%s", ait_last_error());
    c->run.state = NULL;
    return st;
  }
  if (c->run.n_segments > 1)
    ait_module_logf(m, 0, "[%s] runs %d of %d nodes in %d segments; the rest on %s", c->desc,
                    c->run.nodes_primary, c->run.nodes_total, c->run.n_segments, c->run.fallback);
  if (t->o->io_mem == AIT_MEM_CUDA && (st = device_io(c))) return st;
  ait_module_logf(m, 0, "[%s] validate on %d inputs", c->desc, t->n_cases);
  if (!validate(t, c)) {
    c->status = AIT_CAND_INCORRECT;
    return ait_err(AIT_E_RUNTIME, "%s", c->error);
  }
  return AIT_OK;
}

static void destroy_state(ait_candidate *c) { ait_runner_destroy(&c->run); }

/* A measured candidate whose runs never exercised one of its options (the
 * backend says which: unused_option) runs the same code as an earlier one
 * with that option at its default; timing both only lets noise pick
 * between them. Returns that candidate's index, or -1. Configurations
 * compare by their canonical descriptions (ait_backend_describe: the
 * non-default options, sorted), as each candidate's desc holds. */
static int same_as_earlier(const ait_candidate *cands, int i, char *why, size_t n) {
  const ait_candidate *c = &cands[i];
  const ait_backend_iface *f = c->cfg.iface;
  if (!f->unused_option || c->run.iface != f || !c->run.state) return -1; /* partitioned: no */
  const char *opt = f->unused_option(c->run.state, why, n);
  if (!opt) return -1;
  ait_backend_config d = c->cfg; /* c's configuration with opt back at its default */
  d.n = 0;
  for (int k = 0; k < c->cfg.n; k++)
    if (strcmp(c->cfg.keys[k], opt)) {
      memcpy(d.keys[d.n], c->cfg.keys[k], sizeof d.keys[0]);
      memcpy(d.vals[d.n++], c->cfg.vals[k], sizeof d.vals[0]);
    }
  char desc[sizeof c->desc];
  ait_backend_describe(&d, desc, sizeof desc);
  for (int j = 0; j < i; j++) {
    const ait_candidate *o = &cands[j];
    bool judged = o->status == AIT_CAND_OK || o->status == AIT_CAND_SLOWER ||
                  o->status == AIT_CAND_OVER_BUDGET;
    if (judged && o->cfg.iface == f && !strcmp(o->desc, desc)) return j;
  }
  return -1;
}

/* How much a candidate's precision keeps: float32 above the 16-bit floats
 * above int8/fp8. */
static int precision_rank(const ait_candidate *c) {
  switch (compute_dtype(&c->cfg)) {
  case AIT_FLOAT32: return 3;
  case AIT_FLOAT16:
  case AIT_BFLOAT16: return 2;
  default: return 1;
  }
}

/* A reduced-precision candidate that is not faster than a more precise one
 * (quant slower than native fp32) gives up accuracy for nothing: it is
 * never picked, whatever noise the runoff sees, and the report says which
 * candidate it lost to. */
static void mark_dominated(tuner *t, ait_candidate *cands, int n) {
  for (int i = 0; i < n; i++) {
    ait_candidate *c = &cands[i];
    if (c->status != AIT_CAND_OK) continue;
    for (int j = 0; j < n; j++) {
      const ait_candidate *d = &cands[j];
      if (j == i || d->status != AIT_CAND_OK || precision_rank(d) <= precision_rank(c) ||
          better(t, c, d))
        continue;
      double tc = 0, lc = 0, td = 0, ld = 0;
      int bc = 1, bd = 1;
      best_point_as(t, c, true, &tc, &lc, &bc);
      best_point_as(t, d, true, &td, &ld, &bd);
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
static void explain_losers(tuner *t, ait_candidate *cands, int n, int winner) {
  if (winner < 0) return;
  const ait_candidate *w = &cands[winner];
  double tw = 0, lw = 0;
  int bw = 1;
  best_point_as(t, w, true, &tw, &lw, &bw);
  bool lat = t->s->metric == AIT_METRIC_LATENCY;
  for (int i = 0; i < n; i++) {
    ait_candidate *c = &cands[i];
    if (i == winner || c->status != AIT_CAND_OK || c->error[0]) continue;
    double tc = 0, lc = 0;
    int bc = 1;
    best_point_as(t, c, true, &tc, &lc, &bc);
    if (c->runoff_rounds > 0)
      snprintf(c->error, sizeof c->error,
               "correct, but slower than %s in the runoff (the finalists timed alternately, %d "
               "rounds): %.2fx its speed",
               w->desc, c->runoff_rounds, c->runoff_ratio);
    else
      snprintf(c->error, sizeof c->error,
               "correct, but %s than %s: %.2f vs %.2f samples/s (batch %d vs %d), %.3f vs %.3f "
               "ms (fastest runs)",
               lat ? "slower to answer" : "less throughput", w->desc, tc, tw, bc, bw, lc, lw);
  }
}

/* ---- the strategies ---------------------------------------------------------- */

/* The CPU has int8 dot products (VNNI or AMX-INT8), which int8 candidates need
 * to pay off. */
static bool cpu_has_int8_dot(void) {
  char flags[8192];
  ait_hw_cpuinfo_field("flags", flags, sizeof flags);
  uint32_t f = ait_hw_cpu_features_from_flags(flags);
  return f & (AIT_CPU_AVX512_VNNI | AIT_CPU_AVX_VNNI | AIT_CPU_AMX_INT8);
}

/* --precision: fp32 (default) keeps automatic candidates in float32; auto
 * adds reduced-precision variants when the strategy is after speed or memory
 * is under pressure (hardware support is each backend's supports() to say);
 * any always adds them. Backends the user names are always tried. */
static bool reduced_ok(const tuner *t) {
  const char *p = t->o->precision ? t->o->precision : "fp32";
  if (!strcmp(p, "any")) return true;
  if (strcmp(p, "auto")) return false;
  bool pressure = t->res.mem_policy && t->res.mem_policy->level >= AIT_MEM_MEDIUM;
  return pressure || t->s->pick == AIT_PICK_BEST; /* the strategy is after speed */
}

static ait_status parse_candidates(tuner *t, ait_candidate **out, int *n) {
  const ait_tune_options *o = t->o;
  int cap = (o->backends ? (int)o->n_backends : 4 * ait_backend_count()) + 1;
  ait_candidate *c = calloc((size_t)cap + 1, sizeof *c);
  if (!c) return ait_err(AIT_E_NOMEM, "out of memory");
  int k = 0;
  if (o->backends) {
    for (size_t i = 0; i < o->n_backends; i++) {
      ait_status st = ait_backend_config_parse(o->backends[i], &c[k].cfg);
      if (st) {
        free(c);
        return st;
      }
      ait_backend_describe(&c[k].cfg, c[k].desc, sizeof c[k].desc);
      k++;
    }
  } else { /* every available backend but the baseline itself */
    for (int i = 0; i < ait_backend_count(); i++) {
      const ait_backend_iface *b = ait_backend_at(i);
      char why[256];
      if (!strcmp(b->name, "eager") || !b->available(why, sizeof why)) continue;
      if (b->variants && !b->variants[0]) continue; /* only when named */
      for (int v = 0; k < cap - 1 && (v == 0 || (b->variants && b->variants[v])); v++) {
        if (ait_backend_config_parse(b->variants ? b->variants[v] : b->name, &c[k].cfg) != AIT_OK)
          continue;
        if (compute_dtype(&c[k].cfg) != AIT_FLOAT32 && !reduced_ok(t)) continue;
        ait_backend_describe(&c[k].cfg, c[k].desc, sizeof c[k].desc);
        k++;
      }
    }
  }
  /* candidates the registry adds on its own (backends/defaults.h): under
   * memory pressure, or with reduced precision where the CPU has int8 dot
   * products */
  int n_add;
  const ait_added_candidate *add = ait_backend_added_candidates(&n_add);
  bool pressure = t->res.mem_policy && t->res.mem_policy->add_quantized;
  bool int8 = !o->backends && n_add && reduced_ok(t) && cpu_has_int8_dot();
  for (int i = 0; !o->backends && i < n_add && k < cap; i++) {
    bool want = (pressure && (add[i].when & AIT_ADD_UNDER_PRESSURE)) ||
                (int8 && (add[i].when & AIT_ADD_REDUCED_INT8));
    char why[128];
    if (!want || ait_backend_config_parse(add[i].spec, &c[k].cfg) != AIT_OK ||
        !c[k].cfg.iface->available(why, sizeof why))
      continue;
    ait_backend_describe(&c[k].cfg, c[k].desc, sizeof c[k].desc);
    ait_module_logf(t->m, 0, "%s: adding %s", pressure ? "memory pressure" : "precision auto",
                    c[k].desc);
    k++;
  }
  *out = c;
  *n = k;
  return AIT_OK;
}

static void keep_selection(tuner *t, ait_candidate *c, int idx) {
  ait_module *m = t->m;
  double tp = 0, lat = 0;
  int b = 1;
  best_point(t, c, &tp, &lat, &b);
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

ait_status ait_tuner_run(ait_module *m, const ait_tune_options *o);
ait_status ait_tuner_run(ait_module *m, const ait_tune_options *o) {
  tuner t = {.m = m, .o = o, .s = ait_strategy_row_of(o->strategy)};
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
  ait_status st = parse_candidates(&t, &cands, &n);
  if (st) return st;
  if (t.s->n_candidates && n != t.s->n_candidates) {
    free(cands);
    if (t.s->n_candidates == 1)
      return ait_err(AIT_E_INVALID_ARG, "the %s strategy takes exactly one backend, got %d",
                     t.s->name, n);
    return ait_err(AIT_E_INVALID_ARG, "the %s strategy takes exactly %d backends, got %d",
                   t.s->name, t.s->n_candidates, n);
  }
  if (n == 0) warn(&t, "no candidate backend is available; the model runs on the reference");
  if ((st = make_cases(&t)) != AIT_OK) goto out;

  ait_backend_config_parse("eager", &base.cfg);
  snprintf(base.desc, sizeof base.desc, "eager");
  if ((st = ait_runner_build(&base.cfg, m->model->graph, NULL, &base.run)) != AIT_OK) goto out;
  bool batch1 = t.s->batch1, best = t.s->pick == AIT_PICK_BEST;
  bool profile_base = o->perf_validation && n > 0;
  if (profile_base) {
    ait_module_logf(m, 0, "[eager] baseline");
    if ((st = profile_candidate(&t, &base, batch1)) != AIT_OK) goto out;
  }

  int winner = -1, best_so_far = -1;
  for (int i = 0; i < n; i++) {
    ait_candidate *c = &cands[i];
    ait_module_logf(m, 0, "[%s] candidate %d of %d (%.1f s)", c->desc, i + 1, n,
                    ait_now() - t_start);
    st = build_candidate(&t, c);
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
    if (need_profile && (st = profile_candidate(&t, c, batch1)) != AIT_OK) {
      c->status = AIT_CAND_BUILD_FAILED;
      snprintf(c->error, sizeof c->error, "profiling failed: %s", ait_last_error());
      destroy_state(c);
      if (t.s->errors_are_mine) goto out;
      st = AIT_OK;
      continue;
    }
    double tp = 0, lat = 0;
    int b = 1;
    if (t.s->budget && !best_point(&t, c, &tp, &lat, &b)) {
      c->status = AIT_CAND_OVER_BUDGET;
      snprintf(c->error, sizeof c->error,
               "every batch size exceeds the latency budget of %g ms (batch %d: %.3f ms)",
               o->latency_budget_ms, c->prof[0].batch, c->prof[0].median_ms);
    } else if (o->perf_validation && !beats(&t, c, &base)) {
      c->status = AIT_CAND_SLOWER;
      double btp = 0, blat = 0;
      int bb = 1;
      best_point_as(&t, &base, true, &btp, &blat, &bb);
      best_point_as(&t, c, true, &tp, &lat, &b);
      snprintf(c->error, sizeof c->error,
               "not faster than the baseline by %.0f%% (fastest runs): %.2f vs %.2f samples/s, "
               "%.3f vs %.3f ms",
               o->min_speedup_ratio * 100, tp, btp, lat, blat);
    } else {
      c->status = AIT_CAND_OK;
    }
    char why[400];
    int same = best && c->status == AIT_CAND_OK ? same_as_earlier(cands, i, why, sizeof why) : -1;
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
      else if (better(&t, c, &cands[best_so_far])) {
        destroy_state(&cands[best_so_far]);
        best_so_far = i;
      } else
        destroy_state(c);
    }
    if (c->run.state && c->run.iface->deactivate) c->run.iface->deactivate(c->run.state);
  }
  if (best) {
    mark_dominated(&t, cands, n);
    for (int i = 0; i < n; i++)
      if (cands[i].status == AIT_CAND_OK && cands[i].run.state &&
          (winner < 0 || better(&t, &cands[i], &cands[winner])))
        winner = i;
    winner = runoff(&t, cands, n, winner);
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
    explain_losers(&t, cands, n, winner);
    if (cands[winner].run.iface->activate)
      cands[winner].run.iface->activate(cands[winner].run.state);
    keep_selection(&t, &cands[winner], winner);
  } else {
    if (n > 0 && t.s->fallback == AIT_FALLBACK_BASELINE_WARN)
      warn(&t, "every candidate failed; the model runs on the reference backend (eager)");
    else if (n > 0 && t.s->fallback == AIT_FALLBACK_BASELINE_NOTE)
      ait_module_logf(m, 0, "%s is correct but not faster than the baseline; falling back to eager",
                      cands[0].desc);
    if (!profile_base) base.n_prof = 0;
    keep_selection(&t, &base, -1);
  }
  /* the report shows each candidate's decisive point beside its medians */
  for (int i = -1; i < n; i++) {
    ait_candidate *c = i < 0 ? &base : &cands[i];
    c->has_decided =
        best_point_as(&t, c, true, &c->decided_throughput, &c->decided_ms, &c->decided_batch);
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
  ait_module_logf(m, 0, "selected %s (batch %d) in %.1f s", m->desc, m->batch, t.res.tuning_s);
out:
  for (int i = 0; i < n; i++)
    destroy_state(&cands[i]);
  destroy_state(&base);
  free(cands);
  free_cases(&t);
  return st;
}
