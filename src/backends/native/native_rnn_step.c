/* Batch-1 recurrences in chunks of hidden units (native_rnn.h).
 *
 * At batch 1 a step is a matrix-vector product with R (the gates' G*H
 * columns over H) and the gate math; R is read whole every step and, at
 * GRU 256 (786 KB), from L2 or beyond: the step is bound by how fast one
 * core streams R. Here a step is cut into chunks of 16 or 32 hidden units;
 * a chunk multiplies h by the R panels of its units' gates (z, r, h for
 * GRU; i, o, f, c for LSTM: native_rnn.c packs R as 16-column panels) and
 * finishes their gates while the sums are in registers, so nothing goes
 * through memory between the product and the gates.
 *
 * A unidirectional layer with enough work a step runs on two threads: one
 * pool job of two tasks; the first claims chunks from the front of each
 * step, the second from the back, so each keeps to its half of R (which
 * then stays in its own core's L2) as long as both run. A step's chunks
 * write the next h (two buffers, swapped per step); whoever sees the last
 * chunk of a step done opens the next. Neither task waits for the other to
 * start: a task that finds no chunk left waits only for chunks already
 * claimed (the pool's own rule), and a second task that starts late joins
 * at the current step, or finds the sequence done. */
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include "backends/native/native_rnn.h"

#ifdef RNN_HAVE_AVX2

/* h-chunk products: group g of 16 units, gate q at panel q * P + g (P =
 * H / 16 panels a gate), each panel K x 16. */

/* GRU (linear_before_reset) for nu (1, 2) groups of 16 units from group g0:
 * 6 nu accumulators. */
static inline __attribute__((always_inline)) RNN_AVX2 void
gru_chunk(const int nu, const float *hp, int64_t K, const float *pn, int64_t P, int64_t g0,
          const float *xr, const float *rb, float *hn, int64_t H) {
  __m256 acc[2][3][2];
  const float *w[2][3];
#pragma GCC unroll 2
  for (int g = 0; g < nu; g++)
#pragma GCC unroll 3
    for (int q = 0; q < 3; q++) {
      w[g][q] = pn + (q * P + g0 + g) * K * 16;
      acc[g][q][0] = acc[g][q][1] = _mm256_setzero_ps();
    }
  for (int64_t k = 0; k < K; k++) {
    __m256 x = _mm256_broadcast_ss(hp + k);
#pragma GCC unroll 2
    for (int g = 0; g < nu; g++)
#pragma GCC unroll 3
      for (int q = 0; q < 3; q++) {
        acc[g][q][0] = _mm256_fmadd_ps(x, _mm256_loadu_ps(w[g][q] + k * 16), acc[g][q][0]);
        acc[g][q][1] = _mm256_fmadd_ps(x, _mm256_loadu_ps(w[g][q] + k * 16 + 8), acc[g][q][1]);
      }
  }
#pragma GCC unroll 2
  for (int g = 0; g < nu; g++)
#pragma GCC unroll 2
    for (int v = 0; v < 2; v++) {
      int64_t u = (g0 + g) * 16 + 8 * v;
      __m256 z = sigmoid8(_mm256_add_ps(acc[g][0][v], _mm256_loadu_ps(xr + u)));
      __m256 r = sigmoid8(_mm256_add_ps(acc[g][1][v], _mm256_loadu_ps(xr + H + u)));
      __m256 rh = _mm256_add_ps(acc[g][2][v], _mm256_loadu_ps(rb + u));
      __m256 hh = tanh8(_mm256_fmadd_ps(r, rh, _mm256_loadu_ps(xr + 2 * H + u)));
      /* (1 - z) hh + z h = hh + z (h - hh) */
      _mm256_storeu_ps(hn + u, _mm256_fmadd_ps(z, _mm256_sub_ps(_mm256_loadu_ps(hp + u), hh), hh));
    }
}

/* LSTM (gates i, o, f, c; peepholes p may be NULL) for one group of 16
 * units: 8 accumulators; c updates in place. */
static RNN_AVX2 void lstm_chunk(const float *hp, int64_t K, const float *pn, int64_t P, int64_t g0,
                                const float *xr, const float *p, float *c, float *hn, int64_t H) {
  __m256 acc[4][2];
  const float *w[4];
  for (int q = 0; q < 4; q++) {
    w[q] = pn + (q * P + g0) * K * 16;
    acc[q][0] = acc[q][1] = _mm256_setzero_ps();
  }
  for (int64_t k = 0; k < K; k++) {
    __m256 x = _mm256_broadcast_ss(hp + k);
#pragma GCC unroll 4
    for (int q = 0; q < 4; q++) {
      acc[q][0] = _mm256_fmadd_ps(x, _mm256_loadu_ps(w[q] + k * 16), acc[q][0]);
      acc[q][1] = _mm256_fmadd_ps(x, _mm256_loadu_ps(w[q] + k * 16 + 8), acc[q][1]);
    }
  }
#pragma GCC unroll 2
  for (int v = 0; v < 2; v++) {
    int64_t u = g0 * 16 + 8 * v;
    __m256 ci = _mm256_loadu_ps(c + u);
    __m256 gi = _mm256_add_ps(acc[0][v], _mm256_loadu_ps(xr + u));
    __m256 go = _mm256_add_ps(acc[1][v], _mm256_loadu_ps(xr + H + u));
    __m256 gf = _mm256_add_ps(acc[2][v], _mm256_loadu_ps(xr + 2 * H + u));
    __m256 gc = _mm256_add_ps(acc[3][v], _mm256_loadu_ps(xr + 3 * H + u));
    if (p) {
      gi = _mm256_fmadd_ps(_mm256_loadu_ps(p + u), ci, gi);
      gf = _mm256_fmadd_ps(_mm256_loadu_ps(p + 2 * H + u), ci, gf);
    }
    __m256 cn = _mm256_fmadd_ps(sigmoid8(gf), ci, _mm256_mul_ps(sigmoid8(gi), tanh8(gc)));
    if (p) go = _mm256_fmadd_ps(_mm256_loadu_ps(p + H + u), cn, go);
    _mm256_storeu_ps(c + u, cn);
    _mm256_storeu_ps(hn + u, _mm256_mul_ps(sigmoid8(go), tanh8(cn)));
  }
}

/* One direction's shared state. word: step << 40 | front << 20 | back
 * (chunks [front, back) of the step are unclaimed). */
typedef struct coop {
  const rnn_job *j;
  int64_t d, steps, n_chunks, groups; /* groups of 16 units a chunk */
  float *hb[2], *c;                   /* h of even / odd steps; LSTM's cell state */
  _Atomic uint64_t word;
  _Atomic int64_t done; /* chunks finished, over all steps */
} coop;

#define FRONT_ONE ((uint64_t)1 << 20)
#define FIELD(w, s) ((int64_t)(((w) >> (s)) & 0xFFFFF))

static RNN_AVX2 void chunk_work(const coop *c, int64_t s, int64_t ch) {
  const rnn_job *j = c->j;
  int64_t d = c->d, H = j->H, P = H / 16, g0 = ch * c->groups;
  bool back = j->reverse || d == 1;
  int64_t t = back ? c->steps - 1 - s : s;
  const float *xr = j->xw + x_row(j, t, 0) * j->D * j->GH + d * j->GH;
  const float *hp = c->hb[s & 1], *pn = j->rt + d * j->rp_dir;
  float *hn = c->hb[(s + 1) & 1];
  if (j->kind == K_LSTM)
    lstm_chunk(hp, H, pn, P, g0, xr, j->p ? j->p + d * 3 * H : NULL, c->c, hn, H);
  else if (c->groups == 2)
    gru_chunk(2, hp, H, pn, P, g0, xr, j->rbh + d * H, hn, H);
  else
    gru_chunk(1, hp, H, pn, P, g0, xr, j->rbh + d * H, hn, H);
  if (j->y)
    memcpy(j->y + y_at(j, t, d, 0) + g0 * 16, hn + g0 * 16, sizeof(float) * (size_t)c->groups * 16);
}

/* Spins before a waiting task yields its core (a claimed chunk is a few
 * microseconds of work unless its thread lost the core). */
#define WAIT_SPINS 20000

/* Task `side` (0 from the front, 1 from the back) until every step is done. */
static void coop_task(void *arg, int64_t side, int tid) {
  coop *c = arg;
  (void)tid;
  for (;;) {
    uint64_t w = atomic_load(&c->word);
    int64_t s = (int64_t)(w >> 40), f = FIELD(w, 20), b = FIELD(w, 0);
    if (s >= c->steps) return;
    if (f < b) {
      if (!atomic_compare_exchange_weak(&c->word, &w, side == 0 ? w + FRONT_ONE : w - 1)) continue;
      chunk_work(c, s, side == 0 ? f : b - 1);
      atomic_fetch_add(&c->done, 1);
      continue;
    }
    /* every chunk of step s is claimed: wait for them, then open step s + 1 */
    int64_t want = (s + 1) * c->n_chunks;
    for (int i = 0; atomic_load(&c->done) < want; i++)
      if (i >= WAIT_SPINS) sched_yield();
    uint64_t next = (uint64_t)(s + 1) << 40 | (uint64_t)c->n_chunks;
    atomic_compare_exchange_strong(&c->word, &w, next); /* or the other task did */
  }
}

static _Atomic long long chunked_dirs, coop_dirs;
long long nat_rnn_chunked_dirs(void) { return atomic_load(&chunked_dirs); }
long long nat_rnn_coop_dirs(void) { return atomic_load(&coop_dirs); }

/* Both directions of a bidirectional layer, one task each. */
static void dir_chunks_task(void *arg, int64_t d, int tid) { coop_task((coop *)arg + d, 0, tid); }

/* Multiply-adds a step above which a unidirectional layer takes two
 * threads (below, the hand-offs cost more than the halved product). */
#define COOP_MIN_MACS 32768

bool nat_rnn_chunked(nat_run *r, const rnn_job *j) {
  if (!j->fused || !j->panels || j->B != 1 || j->H % 16 || j->max_len < 1) return false;
  int64_t H = j->H;
  coop cs[2];
  for (int64_t d = 0; d < j->D; d++) {
    coop *c = &cs[d];
    memset(c, 0, sizeof *c);
    c->j = j, c->d = d, c->steps = j->lens[0];
    c->groups = j->kind == K_GRU && H % 32 == 0 ? 2 : 1;
    c->n_chunks = H / 16 / c->groups;
    /* the direction's work area (native_rnn.c: at least 3 H floats at batch 1) */
    c->hb[0] = j->work + d * j->work_dir, c->hb[1] = c->hb[0] + H, c->c = c->hb[1] + H;
    if (j->h0)
      memcpy(c->hb[0], j->h0 + state_at(j, d, 0), sizeof(float) * (size_t)H);
    else
      memset(c->hb[0], 0, sizeof(float) * (size_t)H);
    if (j->c0)
      memcpy(c->c, j->c0 + state_at(j, d, 0), sizeof(float) * (size_t)H);
    else
      memset(c->c, 0, sizeof(float) * (size_t)H);
    if (j->y) /* Y is 0 past the sequence's length */
      for (int64_t t = c->steps; t < j->S; t++)
        memset(j->y + y_at(j, t, d, 0), 0, sizeof(float) * (size_t)H);
    atomic_store(&c->word, (uint64_t)c->n_chunks);
    atomic_store(&c->done, 0);
  }
  atomic_fetch_add(&chunked_dirs, j->D);
  if (j->D == 1 && nat_run_threads(r) > 1 && j->GH * H >= COOP_MIN_MACS && cs[0].n_chunks > 1) {
    atomic_fetch_add(&coop_dirs, 1);
    nat_pool_run(nat_run_pool(r), 2, coop_task, &cs[0]);
  } else if (j->D == 1)
    coop_task(&cs[0], 0, 0);
  else
    nat_pool_run(nat_run_pool(r), 2, dir_chunks_task, cs);
  for (int64_t d = 0; d < j->D; d++) {
    const coop *c = &cs[d];
    const float *h = c->hb[c->steps & 1];
    if (j->yh) memcpy(j->yh + state_at(j, d, 0), h, sizeof(float) * (size_t)H);
    if (j->yc) memcpy(j->yc + state_at(j, d, 0), c->c, sizeof(float) * (size_t)H);
  }
  return true;
}

#else
bool nat_rnn_chunked(nat_run *r, const rnn_job *j) { return false; }
long long nat_rnn_chunked_dirs(void) { return 0; }
long long nat_rnn_coop_dirs(void) { return 0; }
#endif
