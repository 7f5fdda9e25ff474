/* CPU contention readings (contention.h): the timing thread's run-queue
 * wait, from the kernel's schedstat, behind a hook tests pin. */
#define _GNU_SOURCE
#include "tune/contention.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static ait_sched_reader reader_hook; /* tests: a reading they pin */

void ait_sched_set_reader(ait_sched_reader r) { reader_hook = r; }

bool ait_sched_read_none(ait_sched_snap *out) {
  (void)out;
  return false;
}

static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* /proc/thread-self/schedstat: "run_ns wait_ns timeslices". */
static bool read_proc(ait_sched_snap *out) {
  FILE *f = fopen("/proc/thread-self/schedstat", "r");
  if (!f) return false;
  char line[128];
  unsigned long long run = 0, wait = 0;
  bool ok = fgets(line, sizeof line, f) && sscanf(line, "%llu %llu", &run, &wait) == 2;
  fclose(f);
  out->wait_s = (double)wait * 1e-9;
  out->wall_s = clock_s(CLOCK_MONOTONIC);
  out->cpu_s = clock_s(CLOCK_PROCESS_CPUTIME_ID);
  return ok;
}

bool ait_sched_read(ait_sched_snap *out) {
  memset(out, 0, sizeof *out);
  return reader_hook ? reader_hook(out) : read_proc(out);
}

void ait_contention_between(const ait_sched_snap *a, const ait_sched_snap *b, ait_contention *out) {
  memset(out, 0, sizeof *out);
  if (!a || !b || b->wall_s <= a->wall_s) return;
  out->known = true;
  out->wall_s = b->wall_s - a->wall_s;
  out->cpu_s = b->cpu_s - a->cpu_s;
  out->wait_s = b->wait_s > a->wait_s ? b->wait_s - a->wait_s : 0;
  if (out->wait_s > out->wall_s * AIT_WAIT_MAX) out->wait_s = out->wall_s * AIT_WAIT_MAX;
  out->frac = out->wait_s / out->wall_s;
}

double ait_uncontended_mean_ms(const ait_contention *c, int runs) {
  if (!c->known || !(c->frac >= AIT_CONTENDED) || runs < 1) return 0;
  return (c->wall_s - c->wait_s) / runs * 1e3;
}
