/* The runoff: the finalists timed again alternately, in rounds. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tune/contention.h"
#include "tune/tuner_impl.h"

/* Each candidate was timed on its own, one after the other; on a shared
 * machine a neighbour that was busy during one candidate's turn and quiet
 * during another's decides the pick (MobileNetV2 tuned on a 2-core VM
 * picked onednn over native in 2 of 3 runs, though native ran 5-10%
 * faster when the two were timed alternately). So the candidates within
 * RUNOFF_MARGIN of the best are timed again, in rounds: each round runs
 * every finalist, in a shuffled order, a few times back to back; a busy
 * spell then hits all of them alike. The pick is the finalist with the
 * best median over rounds of its speed relative to the leader's in the
 * same round. The rounds fit in RUNOFF_BUDGET_S (fewer than 3: no runoff).
 *
 * Interleaving spreads a busy spell over all finalists, but not a neighbour
 * that is busy the whole time: on 2 cores with one taken, a 2-thread
 * finalist queues for a CPU in every round while a 1-thread one runs on
 * the free core, and wins every round by wall time alone. So each block is
 * bracketed by contention readings (contention.h), and when some
 * finalist's timing thread queued in most rounds (median share >=
 * AIT_CONTENDED) every finalist is judged, round by round, by its mean
 * time less that thread's wait ((wall - wait) / reps): the speed each
 * would have on the quiet machine that serves the pick. */
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

/* Median time of one run of f over its reps (after reps / 8 + 1 untimed);
 * *wait: the share of their wall time that the timing thread spent waiting
 * for a CPU; *unc: their mean less that wait (the median when unknown). */
static ait_status runoff_time(ait_tuner *t, finalist *f, double *ms, double *unc, double *wait) {
  int n_out = t->m->model->graph->n_outputs;
  ait_tensor **outs = calloc((size_t)n_out + 1, sizeof *outs);
  if (!outs) return ait_err(AIT_E_NOMEM, "out of memory");
  ait_timed_ctx tc = {f->c, f->in, outs, n_out, 0};
  double v[RUNOFF_MAX_REPS];
  ait_status st = AIT_OK;
  for (int r = 0; !st && r < f->reps / 8 + 1; r++)
    st = ait_tune_timed_infer(&tc);
  bool dev = t->o->io_mem == AIT_MEM_CUDA;
  ait_sched_snap a, b;
  bool have_a = !st && !dev && ait_sched_read(&a);
  for (int r = 0; !st && r < f->reps; r++) {
    double t0 = ait_now();
    st = ait_tune_timed_infer(&tc);
    v[r] = (ait_now() - t0) * 1e3;
    double d = dev ? ait_tune_device_clock_s(&tc) : -1;
    if (d >= 0) v[r] = d * 1e3;
  }
  ait_contention ct = {0};
  if (have_a && !st && ait_sched_read(&b)) ait_contention_between(&a, &b, &ct);
  *wait = ct.frac;
  free(outs);
  if (st) return st;
  *ms = median_of(v, f->reps);
  *unc = ct.known ? (ct.wall_s - ct.wait_s) / f->reps * 1e3 : *ms;
  return st;
}

/* The runoff among the candidates near `winner`; returns the new winner. */
int ait_tune_runoff(ait_tuner *t, ait_candidate *cands, int n, int winner) {
  const ait_tune_options *o = t->o;
  if (winner < 0 || o->runoff_rounds <= 0 || t->s->pick != AIT_PICK_BEST) return winner;
  bool latency = t->s->metric == AIT_METRIC_LATENCY;
  finalist f[RUNOFF_MAX];
  int nf = 0;
  double wtp = 0, wlat = 0;
  int wb = 1;
  ait_tune_best_point(t, &cands[winner], true, &wtp, &wlat, &wb);
  /* the winner first, then the others near it (in candidate order) */
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < n && nf < RUNOFF_MAX; i++) {
      ait_candidate *c = &cands[i];
      double tp = 0, lat = 0;
      int b = 1;
      if ((pass == 0) != (i == winner) || c->status != AIT_CAND_OK || !c->run.state ||
          !ait_tune_best_point(t, c, true, &tp, &lat, &b))
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
  double ms[RUNOFF_MAX][RUNOFF_MAX_ROUNDS], unc[RUNOFF_MAX][RUNOFF_MAX_ROUNDS],
      wait[RUNOFF_MAX][RUNOFF_MAX_ROUNDS];
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
      st = runoff_time(t, &f[order[k]], &ms[order[k]][r], &unc[order[k]][r], &wait[order[k]][r]);
  }
  int pick = winner;
  if (st) {
    ait_module_logf(m, 1, "runoff stopped (%s); keeping %s", ait_last_error(), cands[winner].desc);
    ait_err_clear();
  } else {
    /* contended when some finalist queued for a CPU in most rounds */
    bool contended = false;
    for (int k = 0; k < nf; k++) {
      double w[RUNOFF_MAX_ROUNDS];
      memcpy(w, wait[k], sizeof(double) * (size_t)rounds);
      f[k].c->runoff_wait = median_of(w, rounds);
      contended |= f[k].c->runoff_wait >= AIT_CONTENDED;
    }
    char line[1024];
    int at = snprintf(line, sizeof line, "[runoff] %d rounds%s, speed over %s:", rounds,
                      contended ? ", contended: times less CPU waits" : "", f[0].c->desc);
    double best = 0;
    for (int k = 0; k < nf; k++) {
      double ratio[RUNOFF_MAX_ROUNDS], own[RUNOFF_MAX_ROUNDS];
      for (int r = 0; r < rounds; r++) {
        /* contended: each round's (wall - wait) / reps */
        double mk = contended ? unc[k][r] : ms[k][r], m0 = contended ? unc[0][r] : ms[0][r];
        /* speed: samples per second (throughput strategies), runs per second (latency) */
        double mine = (latency ? 1 : f[k].batch) / mk, lead = (latency ? 1 : f[0].batch) / m0;
        ratio[r] = mine / lead;
        own[r] = ms[k][r];
      }
      f[k].c->runoff_rounds = rounds;
      f[k].c->runoff_uncontended = contended;
      f[k].c->runoff_ratio = median_of(ratio, rounds);
      f[k].c->runoff_ms = median_of(own, rounds);
      if (at < (int)sizeof line)
        at += snprintf(line + at, sizeof line - (size_t)at, " %s %.3f (%.3f ms, waits %.0f%%)",
                       f[k].c->desc, f[k].c->runoff_ratio, f[k].c->runoff_ms,
                       f[k].c->runoff_wait * 100);
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
