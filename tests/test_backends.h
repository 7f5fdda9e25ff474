/* Test-only backends for the tuner tests: each one is correct or wrong,
 * fast or slow, on purpose, so a test can predict what every strategy picks.
 *
 *   t_broken     build() fails: "t_broken: deliberately fails to build"
 *   t_wrong      builds, runs the reference, then adds 0.5 to float outputs
 *   t_slow       the reference plus a 20 ms sleep per infer
 *   t_batchy     the reference plus a (10 + batch / 8) ms sleep per infer:
 *                its latency grows with the batch, and its throughput too
 *   t_fast       computes relu chains (Relu / Identity / Add of zeros, see
 *                tests/test_tune.c) directly as max(x, 0): the same function
 *                as the reference in one pass instead of one kernel per node
 *   t_export     t_fast, whose save() writes a state that loads 0.5 off (an
 *                engine export that does not reproduce); save_rebuild() writes
 *                a good one
 *   t_badsave    the same without save_rebuild(): its saves must fail
 *   t_unavail    available() is false: "t_unavail: no such accelerator here"
 *   t_nosupport  supports() is false for every node
 *   t_norelu     supports() is false for Relu nodes only (a partial backend:
 *                the tuner may run it with a fallback for the Relu)
 *   t_lowp       the reference plus 4 ms per infer, judged as int8 (its
 *                precision hook): a reduced-precision candidate that loses
 *   t_pool       a thread-pool engine (option threads, auto = 2): 10 ms on
 *                1 thread, 9 ms on 2; on the loaded machine (tbk_set_loaded)
 *                2 threads take 20 ms of which one thread queued 11 ms for a
 *                CPU; threads=8 is a quarter of that and wrong (+0.5)
 *   t_tiny       the same for a tiny model: 1 ms on 1 thread, 1.5 ms on 2,
 *                3 ms loaded (1.2 ms queued): threads=1 is better either way
 *
 * Every backend counts its calls (tbk_counts_of) so tests can tell what the
 * tuner built, ran or loaded. save() writes "<name>.state" into the folder and
 * load() insists on finding it, so a saved module must hand the folder back. */
#ifndef AIT_TEST_BACKENDS_H
#define AIT_TEST_BACKENDS_H

#include <stdbool.h>

#include "aitune.h"

typedef struct tbk_counts {
  int available, supports, build, infer, save, load, destroy;
} tbk_counts;

/* Virtual time, so that every timing the tuner sees is the same on an idle
 * and on a loaded machine: with it on, the tuner's clock (ait_now) reads a
 * counter instead of the wall clock; each infer of the backends above
 * advances it by its cost (the sleeps above, which are then not slept, plus
 * TBK_BASE_US), and each node that the eager or native executors run
 * advances it by TBK_NODE_US (through this thread's node observer, which
 * this sets), and contention readings (tune/contention.h) read none. Call
 * it on the thread that tunes, before tuning. */
#define TBK_BASE_US 1.0
#define TBK_NODE_US 2.0
void tbk_virtual_time(bool on);
/* The loaded machine for t_pool/t_tiny (their costs above), and contention
 * readings on the virtual clock (on: one thread, whose waits are those the
 * pool backends add; off: no reading, as virtual time starts). */
void tbk_set_loaded(bool on);
void tbk_pin_sched(bool on);
/* Advance the virtual clock (a test's own timed functions). */
void tbk_advance_us(double us);

/* Register all the backends above (once per process; a second call is a
 * no-op). Returns the registry's status. */
ait_status tbk_register_all(void);
/* Call counters of backend `name`, or NULL for a name not listed above. */
tbk_counts *tbk_counts_of(const char *name);

#endif
