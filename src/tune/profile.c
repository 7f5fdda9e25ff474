#include "tune/profile.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"

static double (*clock_hook)(void); /* tests: a clock they drive (ait_now_set_clock) */

void ait_now_set_clock(double (*now)(void)) { clock_hook = now; }

double ait_now(void) {
  if (clock_hook) return clock_hook();
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void ait_profile_opts_default(ait_profile_opts *o) {
  o->warmup = 3;
  o->min_runs = 10;
  o->max_runs = 200;
  o->cv_target = 0.05;
  o->time_budget_s = 2.0;
  o->give_up_ms = 0;
  o->clock_s = NULL;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted values. */
static double percentile(const double *sorted, int n, double p) {
  int k = (int)ceil(p / 100.0 * n) - 1;
  return sorted[k < 0 ? 0 : k >= n ? n - 1 : k];
}

static double window_cv(const double *t, int n, int w) {
  if (n < w || w < 2) return INFINITY;
  double mean = 0, var = 0;
  for (int i = n - w; i < n; i++)
    mean += t[i];
  mean /= w;
  for (int i = n - w; i < n; i++)
    var += (t[i] - mean) * (t[i] - mean);
  var /= (w - 1);
  return mean > 0 ? sqrt(var) / mean : INFINITY;
}

ait_status ait_profile(ait_timed_fn fn, void *ctx, int batch, const ait_profile_opts *o,
                       ait_latency_stats *out) {
  ait_profile_opts d;
  if (!o) {
    ait_profile_opts_default(&d);
    o = &d;
  }
  int min_runs = o->min_runs > 0 ? o->min_runs : 1;
  int max_runs = o->max_runs >= min_runs ? o->max_runs : min_runs;
  if (o->cv_target <= 0) max_runs = min_runs;
  double *t = malloc(sizeof(double) * (size_t)max_runs);
  if (!t) return ait_err(AIT_E_NOMEM, "out of memory profiling");
  ait_status st = AIT_OK;
  /* a slow model (eager at batch 8: seconds per run) must not spend its
   * whole budget warming up */
  double w0 = ait_now();
  for (int i = 0; i < o->warmup && !st; i++) {
    st = fn(ctx);
    if (o->time_budget_s > 0 && ait_now() - w0 >= o->time_budget_s / 4) break;
  }
  int n = 0;
  double spent = 0, fastest = INFINITY;
  while (!st && n < max_runs) {
    double t0 = ait_now();
    st = fn(ctx);
    double dt = ait_now() - t0;
    if (st) break;
    double own = o->clock_s ? o->clock_s(ctx) : -1;
    if (own >= 0) dt = own;
    t[n++] = dt;
    spent += dt;
    fastest = dt < fastest ? dt : fastest;
    /* a quarter of the budget first: a burst of load on a shared machine
     * can make a few runs look hopeless */
    if (o->give_up_ms > 0 && n >= 2 && spent >= o->time_budget_s / 4 &&
        fastest * 1e3 > o->give_up_ms)
      break;
    /* over budget: stop once there are a few runs, or one run alone is over */
    if (o->time_budget_s > 0 && spent >= o->time_budget_s && (n >= 3 || dt >= o->time_budget_s))
      break;
    if (n >= min_runs && (o->cv_target <= 0 || window_cv(t, n, min_runs) < o->cv_target)) break;
  }
  if (st) {
    free(t);
    return st;
  }
  memset(out, 0, sizeof *out);
  out->batch = batch;
  out->runs = n;
  out->cv = window_cv(t, n, n < min_runs ? n : min_runs);
  if (!isfinite(out->cv)) out->cv = 0;
  double sum = 0;
  for (int i = 0; i < n; i++)
    sum += t[i];
  qsort(t, (size_t)n, sizeof *t, cmp_double);
  out->median_ms = (n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2])) * 1e3;
  out->p90_ms = percentile(t, n, 90) * 1e3;
  out->p99_ms = percentile(t, n, 99) * 1e3;
  out->min_ms = t[0] * 1e3;
  out->mean_ms = sum / n * 1e3;
  out->throughput = out->median_ms > 0 ? batch / (out->median_ms * 1e-3) : 0;
  free(t);
  return AIT_OK;
}
