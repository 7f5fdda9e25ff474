/* Measurement: timing a candidate at a batch size, the batch-size sweep
 * (with the batch history) and the early give-up against the fastest run
 * seen so far. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tune/contention.h"
#include "tune/history.h"
#include "tune/tuner_impl.h"

static double *seen_min(ait_tuner *t, int batch, bool add) {
  for (int i = 0; i < t->n_seen; i++)
    if (t->seen_batch[i] == batch) return &t->seen_min_ms[i];
  if (!add || t->n_seen >= 2 * AIT_MAX_BATCHES) return NULL;
  t->seen_batch[t->n_seen] = batch;
  t->seen_min_ms[t->n_seen] = INFINITY;
  return &t->seen_min_ms[t->n_seen++];
}

/* The device's own time of the run just made, for backends timed by it. */
double ait_tune_device_clock_s(void *p) {
  const ait_timed_ctx *tc = p;
  const ait_backend_iface *f = tc->c->run.iface;
  double ms = f->last_device_ms ? f->last_device_ms(tc->c->run.state) : -1;
  return ms >= 0 ? ms * 1e-3 : -1;
}

ait_status ait_tune_timed_infer(void *p) {
  ait_timed_ctx *tc = p;
  tc->calls++;
  ait_status st = tc->c->run.iface->infer(
      tc->c->run.state, (const ait_tensor *const *)tc->in->inputs, tc->in->n_inputs, tc->out);
  ait_tune_free_outputs(tc->out, tc->n_out);
  return st;
}

/* Bytes of one sample resized to `batch`: a guard against sweeping into
 * memory exhaustion (inputs x 64 is a rough bound on activations). The
 * available memory is the options' reading when given (tests pin it), the
 * machine's now otherwise. */
static bool fits_memory(const ait_tuner *t, const ait_sample *s, int64_t cur_batch, int64_t batch) {
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

/* Profile c at `batch` into entry i of its profile: prof[i], and
 * prof_wait[i] / prof_unc_ms[i], the share of the profiling's wall time
 * that the timing thread spent waiting for a CPU and the mean run less
 * that wait (0: not contended or unknown). */
static ait_status profile_at(ait_tuner *t, ait_candidate *c, int batch, int i) {
  ait_latency_stats *out = &c->prof[i];
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
  ait_timed_ctx tc = {c, in, outs, n_out, 0};
  /* the baseline is timed in full: candidates are judged against it */
  bool base = !strcmp(c->desc, "eager");
  double *seen = base ? NULL : seen_min(t, batch, true);
  ait_profile_opts po = t->prof;
  po.give_up_ms = seen && isfinite(*seen) ? *seen * GIVE_UP_FACTOR : 0;
  if (t->o->io_mem == AIT_MEM_CUDA && !base) po.clock_s = ait_tune_device_clock_s;
  /* the readings bracket the whole profile: a neighbour that is busy the
   * whole time leaves no quiet run for the minimum to find, but it shows as
   * the candidate's threads queueing for a CPU */
  ait_sched_snap a, b;
  bool have_a = ait_sched_read(&a);
  ait_status st = ait_profile(ait_tune_timed_infer, &tc, batch, &po, out);
  ait_contention ct = {0};
  if (have_a && ait_sched_read(&b)) ait_contention_between(&a, &b, &ct);
  if (po.clock_s) ct.known = false; /* a device's own clock does not queue for the host's CPUs */
  c->prof_wait[i] = ct.known ? ct.frac : 0;
  c->prof_unc_ms[i] = ait_uncontended_mean_ms(&ct, tc.calls);
  if (!st && c->prof_unc_ms[i] > 0)
    ait_module_logf(t->m, 0,
                    "[%s] contended: the timing thread waited %.0f%% of %.2f s for a CPU (process "
                    "CPU %.2f s); %d runs, %.3f ms each less the wait",
                    c->desc, ct.frac * 100, ct.wall_s, ct.cpu_s, tc.calls, c->prof_unc_ms[i]);
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

static bool stop_after(ait_tuner *t, const ait_candidate *c, const ait_latency_stats *s,
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

static ait_status measure(ait_tuner *t, ait_candidate *c, const char *desc, ait_history *h, int b) {
  ait_module_logf(t->m, 0, "[%s] profile batch %d", desc, b);
  ait_latency_stats *s = &c->prof[c->n_prof];
  AIT_TRY(profile_at(t, c, b, c->n_prof));
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
  c->prof_wait[c->n_prof] = c->prof_unc_ms[c->n_prof] = 0;
  c->prof_from_history[c->n_prof++] = true;
}

static ait_status sweep(ait_tuner *t, ait_candidate *c, const char *desc, int64_t own) {
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
ait_status ait_tune_profile_candidate(ait_tuner *t, ait_candidate *c, bool batch1_only) {
  ait_module *m = t->m;
  char desc[600];
  snprintf(desc, sizeof desc, "%s", c->desc);
  c->n_prof = 0;
  int64_t own = ait_sample_batch(&m->samples[0], &m->spec);
  if (!m->spec.has_batch || batch1_only) {
    int b = m->spec.has_batch ? 1 : (int)own;
    ait_module_logf(m, 0, "[%s] profile batch %d", desc, b);
    AIT_TRY(profile_at(t, c, b, 0));
    c->n_prof = 1;
    return AIT_OK;
  }
  if (t->n_batches) {
    for (int i = 0; i < t->n_batches; i++) {
      ait_module_logf(m, 0, "[%s] profile batch %d", desc, t->batches[i]);
      AIT_TRY(profile_at(t, c, t->batches[i], c->n_prof));
      c->n_prof++;
    }
    return AIT_OK;
  }
  return sweep(t, c, desc, own);
}
