/* CPU contention while timing: how long the thread that runs a candidate
 * waited, runnable, for a CPU that something else held. On a shared 2-core
 * machine a busy neighbour makes every multi-threaded candidate wait (its pool's
 * threads queue behind the neighbour) while a one-thread candidate runs on
 * the free core: timed by wall clock alone, threads=1 wins a tune and then
 * serves a quiet machine at half the speed it could have. The kernel counts
 * each thread's run-queue wait (/proc/thread-self/schedstat, field 2);
 * the tuner reads the timing thread's before and after each measurement,
 * through a hook that tests replace so that a "loaded machine" is pinned
 * like the clock. */
#ifndef AIT_TUNE_CONTENTION_H
#define AIT_TUNE_CONTENTION_H

#include <stdbool.h>

/* One reading, taken on the thread that runs and times the candidate. */
typedef struct ait_sched_snap {
  double wall_s; /* the reader's clock (monotonic; a test's virtual one) */
  double cpu_s;  /* CPU time of the process, all threads */
  double wait_s; /* this thread's run-queue wait since it started */
} ait_sched_snap;

/* Fills *out; false when there is no reading (no schedstat: no
 * CONFIG_SCHED_INFO), and then nothing is corrected. */
typedef bool (*ait_sched_reader)(ait_sched_snap *out);

/* Tests: read through r instead (NULL: /proc again). Process-wide; set it
 * before tuning, not while another thread tunes. */
void ait_sched_set_reader(ait_sched_reader r);
/* A reader with no reading: what virtual time pins (waits in real
 * seconds mean nothing beside a virtual clock). */
bool ait_sched_read_none(ait_sched_snap *out);
bool ait_sched_read(ait_sched_snap *out);

/* What happened between two readings. */
typedef struct ait_contention {
  bool known;    /* both readings exist */
  double wall_s; /* between them */
  double cpu_s;  /* CPU time the process used */
  double wait_s; /* the timing thread's run-queue wait */
  double frac;   /* wait_s / wall_s, in [0, AIT_WAIT_MAX] (0 when unknown); wait_s is
                    capped likewise */
} ait_contention;

/* A measurement whose timing thread waited this share of its wall
 * time for a CPU was contended: below it (the scheduler's own wake-up
 * latency is a percent or two) the decision is the plain one. */
#define AIT_CONTENDED 0.05
/* A correction never takes more than this share off a time: a reading
 * past it says the measurement is mostly someone else's. */
#define AIT_WAIT_MAX 0.9

/* Between a (taken first) and b. Why the thread that calls infer, and not
 * the longest wait of any thread: that thread runs the model's serial parts
 * and its share of every parallel one, so its queueing is on the critical
 * path; a pool's idle workers spin and then sched_yield between jobs, and a
 * yielding thread counts as waiting while the neighbour runs (on
 * deeplabv3_mobilenet_v3_large with a busy core, a worker "waited" 86% of
 * the wall time, which made native's 2 threads look 2x faster than their
 * work allows). A backend whose caller sleeps while its own threads work
 * shows no wait: nothing is corrected, the safe side. */
void ait_contention_between(const ait_sched_snap *a, const ait_sched_snap *b, ait_contention *out);

/* The mean time of one of the `runs` calls made between the readings, less
 * the wait: (wall - wait) / runs, in ms; 0 when c is not contended (frac <
 * AIT_CONTENDED) or runs < 1. The mean, not a median scaled by the share:
 * it is exact however the wait falls on the runs, and on whatever else the
 * window holds (warm-up runs, a preemption between runs). A median does
 * not move when one preemption lands in one run of a sub-millisecond
 * model, and a window is not only timed runs: on bert_tiny with a busy core,
 * 36 ms of a 40 ms window waited while 13 runs of 0.17 ms ran, and the
 * timed runs' mean scaled by that share came to 0.017 ms. */
double ait_uncontended_mean_ms(const ait_contention *c, int runs);

#endif
