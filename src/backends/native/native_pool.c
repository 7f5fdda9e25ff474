/* A small thread pool: `threads - 1` workers plus the calling thread claim
 * task indices of the current job from one atomic word.
 *
 * The caller never waits for a worker to show up: it claims tasks itself
 * and then waits only for tasks a worker has actually started. On a shared
 * machine a worker that is not scheduled simply takes no part (waiting for
 * every worker to acknowledge each job made small jobs pay a whole
 * scheduler time slice whenever another process held the core).
 *
 * The word holds (job id << 32 | next task index); a worker claims a task by
 * compare-and-swap on it, so a worker still looking at a finished job can
 * never claim a task of the next one: the job id in the word has changed.
 * Workers spin after a job (kernels come back to back; ~100k polls, tens
 * of microseconds: a worker that yields or sleeps between the layers of a
 * small model loses its core to a neighbour and misses the next job), then
 * sleep on a condition variable, so an idle pool costs nothing. OpenBLAS is kept
 * single-threaded by the backend: this pool is the only parallelism.
 *
 * On an oversubscribed machine a worker may be descheduled in the middle of
 * a task, and the caller then waits a scheduler time slice for it. The pool
 * notices: when the caller waits longer than its own share of a job took,
 * twice in a row, the next BACKOFF_JOBS jobs run on the caller alone, after
 * which parallel runs are tried again.
 *
 * Workers also keep off the caller's CPU (Linux). A woken thread is placed
 * beside its waker, and a worker that shares the caller's CPU gets no time
 * while the caller drains the job alone (measured: a 2-core machine with a
 * neighbour on the other core ran the MLP at one thread's speed for whole
 * seconds). When a worker last ran on the caller's CPU, the caller lets it
 * run anywhere but there; that is redone whenever the caller moves. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getcpu, pthread_setaffinity_np */
#endif
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "backends/native/native.h"

enum { SPIN_ROUNDS = 100000, YIELD_ROUNDS = 200, BACKOFF_JOBS = 64 };

struct nat_pool {
  int threads;
  pthread_t *tids;
  int n_started;
  pthread_mutex_t mu;
  pthread_cond_t wake;
  int sleepers; /* under mu */
  bool stop;    /* under mu */
  /* the current job */
  _Atomic(nat_task_fn) fn;
  _Atomic(void *) arg;
  atomic_int_fast64_t n_tasks;
  atomic_int isa;            /* the caller's nat_isa(): workers run the job at its level */
  atomic_uint_fast64_t word; /* job id << 32 | next task */
  atomic_int_fast64_t done;  /* tasks finished */
  atomic_uint job;           /* id of the latest job (never 0) */
  atomic_bool parked;        /* nat_pool_park: idle workers sleep now, not after spinning */
  /* the caller's view of contention */
  int strikes; /* consecutive jobs where the caller waited long */
  int backoff; /* jobs left to run on the caller alone */
  /* keeping workers off the caller's CPU */
  atomic_int *cpu; /* per thread: CPU it last started a job on, -1 unknown */
  int *kept_off;   /* per thread: CPU its affinity excludes, -1 none */
#ifdef __linux__
  cpu_set_t allowed; /* the process's CPUs when the pool was made */
#endif
};

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

typedef struct worker_arg {
  nat_pool *p;
  int tid;
} worker_arg;

/* Claim and run tasks of job `id` until none is left. */
static void drain(nat_pool *p, uint32_t id, int tid) {
  for (;;) {
    uint_fast64_t w = atomic_load(&p->word);
    if ((uint32_t)(w >> 32) != id) return; /* a newer job (or none) */
    nat_task_fn fn = atomic_load(&p->fn);
    void *arg = atomic_load(&p->arg);
    int64_t n = atomic_load(&p->n_tasks);
    uint32_t t = (uint32_t)w;
    if ((int64_t)t >= n) return;
    if (!atomic_compare_exchange_weak(&p->word, &w, w + 1)) continue;
    fn(arg, t, tid);
    atomic_fetch_add(&p->done, 1);
  }
}

static void *worker(void *a) {
  nat_pool *p = ((worker_arg *)a)->p;
  int tid = ((worker_arg *)a)->tid;
  free(a);
  uint32_t seen = 0;
  for (;;) {
    uint32_t id = atomic_load(&p->job);
    for (int i = 0; id == seen && i < SPIN_ROUNDS + YIELD_ROUNDS && !atomic_load(&p->parked); i++) {
      if (i >= SPIN_ROUNDS) sched_yield();
      id = atomic_load(&p->job);
    }
    if (id == seen) {
      pthread_mutex_lock(&p->mu);
      p->sleepers++;
      while (!p->stop && (id = atomic_load(&p->job)) == seen)
        pthread_cond_wait(&p->wake, &p->mu);
      p->sleepers--;
      bool stop = p->stop;
      pthread_mutex_unlock(&p->mu);
      if (stop) return NULL;
    }
    seen = id;
    nat_isa_enter(atomic_load(&p->isa));
#ifdef __linux__
    atomic_store_explicit(&p->cpu[tid], sched_getcpu(), memory_order_relaxed);
#endif
    drain(p, id, tid);
  }
}

nat_pool *nat_pool_new(int threads) {
  nat_pool *p = calloc(1, sizeof *p);
  if (!p) return ait_err(AIT_E_NOMEM, "out of memory creating a thread pool"), NULL;
  p->threads = threads < 1 ? 1 : threads;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->wake, NULL);
  atomic_init(&p->fn, NULL);
  atomic_init(&p->arg, NULL);
  atomic_init(&p->n_tasks, 0);
  atomic_init(&p->isa, (int)nat_isa());
  atomic_init(&p->word, 0);
  atomic_init(&p->done, 0);
  atomic_init(&p->job, 0);
  atomic_init(&p->parked, false);
  if (p->threads > 1 && (!(p->tids = calloc((size_t)p->threads, sizeof *p->tids)) ||
                         !(p->cpu = calloc((size_t)p->threads, sizeof *p->cpu)) ||
                         !(p->kept_off = calloc((size_t)p->threads, sizeof *p->kept_off)))) {
    nat_pool_free(p);
    return ait_err(AIT_E_NOMEM, "out of memory creating a thread pool"), NULL;
  }
  for (int i = 0; p->cpu && i < p->threads; i++) {
    atomic_init(&p->cpu[i], -1);
    p->kept_off[i] = -1;
  }
#ifdef __linux__
  if (sched_getaffinity(0, sizeof p->allowed, &p->allowed) != 0) CPU_ZERO(&p->allowed);
#endif
  for (int i = 1; i < p->threads; i++) {
    worker_arg *a = malloc(sizeof *a);
    if (a) *a = (worker_arg){p, i};
    if (!a || pthread_create(&p->tids[i - 1], NULL, worker, a) != 0) {
      free(a);
      nat_pool_free(p);
      return ait_err(AIT_E_RUNTIME, "cannot start thread %d of the pool", i), NULL;
    }
    p->n_started++;
  }
  return p;
}

void nat_pool_free(nat_pool *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  p->stop = true;
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < p->n_started; i++)
    pthread_join(p->tids[i], NULL);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->wake);
  free(p->tids);
  free(p->cpu);
  free(p->kept_off);
  free(p);
}

/* Workers that last ran on the caller's CPU may run anywhere else. */
static void keep_off_caller(nat_pool *p) {
#ifdef __linux__
  int me = sched_getcpu();
  if (me < 0 || me >= CPU_SETSIZE || !CPU_ISSET(me, &p->allowed) || CPU_COUNT(&p->allowed) < 2)
    return;
  for (int i = 1; i <= p->n_started; i++) {
    if (atomic_load_explicit(&p->cpu[i], memory_order_relaxed) != me || p->kept_off[i] == me)
      continue;
    cpu_set_t set = p->allowed;
    CPU_CLR(me, &set);
    if (pthread_setaffinity_np(p->tids[i - 1], sizeof set, &set) == 0) p->kept_off[i] = me;
  }
#else
  (void)p;
#endif
}

int nat_pool_threads(const nat_pool *p) { return p ? p->threads : 1; }

void nat_pool_park(nat_pool *p) {
  if (p) atomic_store(&p->parked, true);
}

void nat_pool_run(nat_pool *p, int64_t n_tasks, nat_task_fn fn, void *arg) {
  if (n_tasks <= 0) return;
  if (!p || p->n_started == 0 || n_tasks == 1 || n_tasks > UINT32_MAX || p->backoff > 0) {
    if (p && p->backoff > 0) p->backoff--;
    for (int64_t t = 0; t < n_tasks; t++)
      fn(arg, t, 0);
    return;
  }
  atomic_store(&p->parked, false);
  keep_off_caller(p);
  int64_t t0 = now_ns();
  uint32_t id = atomic_load(&p->job) + 1;
  if (id == 0) id = 1;
  /* close the old job before its fields change, then publish the new one */
  atomic_store(&p->word, 0);
  atomic_store(&p->fn, fn);
  atomic_store(&p->arg, arg);
  atomic_store(&p->n_tasks, n_tasks);
  atomic_store(&p->isa, (int)nat_isa());
  atomic_store(&p->done, 0);
  atomic_store(&p->word, (uint_fast64_t)id << 32);
  atomic_store(&p->job, id);
  pthread_mutex_lock(&p->mu);
  if (p->sleepers) pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  drain(p, id, 0);
  int64_t t1 = now_ns();
  /* only tasks a worker has started remain */
  for (int i = 0; atomic_load(&p->done) < n_tasks; i++)
    if (i >= SPIN_ROUNDS) sched_yield();
  int64_t waited = now_ns() - t1;
  if (waited > (t1 - t0) + 50000) { /* 50 us more than the caller's own share */
    if (++p->strikes >= 2) {
      p->backoff = BACKOFF_JOBS;
      p->strikes = 0;
    }
  } else {
    p->strikes = 0;
  }
}
