/* CPU contention readings (contention.h): the run-queue wait of every thread
 * of this process, from the kernel's schedstat, behind a hook tests pin. */
#define _GNU_SOURCE
#include "tune/contention.h"

#include <dirent.h>
#include <stddef.h>
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

/* /proc/self/task/TID/schedstat: "run_ns wait_ns timeslices". */
static bool read_proc(ait_sched_snap *out) {
  DIR *d = opendir("/proc/self/task");
  if (!d) return false;
  out->n = 0;
  struct dirent *e;
  while ((e = readdir(d)) && out->n < AIT_SCHED_MAX_THREADS) {
    char *end;
    long tid = strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end) continue; /* "." and ".." */
    char path[64], line[128];
    snprintf(path, sizeof path, "/proc/self/task/%ld/schedstat", tid);
    FILE *f = fopen(path, "r");
    if (!f) continue; /* the thread ended meanwhile */
    unsigned long long run = 0, wait = 0;
    bool ok = fgets(line, sizeof line, f) && sscanf(line, "%llu %llu", &run, &wait) == 2;
    fclose(f);
    if (!ok) continue;
    out->th[out->n++] = (ait_sched_thread){tid, (double)wait * 1e-9};
  }
  closedir(d);
  out->wall_s = clock_s(CLOCK_MONOTONIC);
  out->cpu_s = clock_s(CLOCK_PROCESS_CPUTIME_ID);
  return out->n > 0;
}

bool ait_sched_read(ait_sched_snap *out) {
  memset(out, 0, offsetof(ait_sched_snap, th));
  return reader_hook ? reader_hook(out) : read_proc(out);
}

void ait_contention_between(const ait_sched_snap *a, const ait_sched_snap *b, ait_contention *out) {
  memset(out, 0, sizeof *out);
  if (!a || !b || b->wall_s <= a->wall_s) return;
  out->known = true;
  out->wall_s = b->wall_s - a->wall_s;
  out->cpu_s = b->cpu_s - a->cpu_s;
  for (int i = 0; i < b->n; i++) {
    double before = 0;
    for (int j = 0; j < a->n; j++)
      if (a->th[j].tid == b->th[i].tid) {
        before = a->th[j].wait_s;
        break;
      }
    double w = b->th[i].wait_s - before;
    if (w > out->wait_s) out->wait_s = w;
  }
  out->frac = out->wait_s / out->wall_s;
  if (out->frac > AIT_WAIT_MAX) out->frac = AIT_WAIT_MAX;
}

double ait_uncontended_ms(double t_ms, double frac) {
  if (!(frac >= AIT_CONTENDED)) return t_ms;
  return t_ms * (1 - (frac > AIT_WAIT_MAX ? AIT_WAIT_MAX : frac));
}
