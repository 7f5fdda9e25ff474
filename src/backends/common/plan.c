/* The input signature and the liveness arena planner (plan.h). A value
 * lives from the step that writes it to the last step that reads its
 * storage; two values whose lifetimes overlap never share bytes. Offsets
 * come from a greedy interval allocator (largest first, best-fitting gap). */
#include "backends/common/plan.h"

#include <stdlib.h>
#include <string.h>

#define ALIGN 64

uint64_t ait_plan_signature(const ait_tensor *const *in, int n_in, int64_t *sig, int *n_sig) {
  int n = 0;
  for (int i = 0; i < n_in; i++) {
    const ait_tensor *t = in[i];
    sig[n++] = t ? (int64_t)t->kind * 1000 + t->dtype : -1;
    sig[n++] = t ? t->rank : -1;
    for (int k = 0; t && k < t->rank; k++)
      sig[n++] = t->dims[k];
  }
  uint64_t h = 1469598103934665603ull; /* FNV-1a over the entries */
  for (int i = 0; i < n; i++)
    h = (h ^ (uint64_t)sig[i]) * 1099511628211ull;
  *n_sig = n;
  return h;
}

typedef struct item {
  int v;
  int64_t size;
} item;

static int by_size_desc(const void *a, const void *b) {
  const item *x = a, *y = b;
  if (x->size != y->size) return x->size > y->size ? -1 : 1;
  return x->v - y->v;
}

typedef struct range {
  int64_t lo, hi;
} range;

static int by_lo(const void *a, const void *b) {
  const range *x = a, *y = b;
  return x->lo < y->lo ? -1 : x->lo > y->lo;
}

ait_status ait_plan_assign(int n_values, const int64_t *size, const int *first, const int *last,
                           int64_t *offset, int64_t *total) {
  item *items = malloc(sizeof *items * ((size_t)n_values + 1));
  int *placed = malloc(sizeof *placed * ((size_t)n_values + 1));
  range *busy = malloc(sizeof *busy * ((size_t)n_values + 1));
  if (!items || !placed || !busy) {
    free(items);
    free(placed);
    free(busy);
    return ait_err(AIT_E_NOMEM, "out of memory planning the arena");
  }
  int n = 0, n_placed = 0;
  for (int v = 0; v < n_values; v++) {
    offset[v] = -1;
    if (size[v] > 0) items[n++] = (item){v, (size[v] + ALIGN - 1) / ALIGN * ALIGN};
  }
  qsort(items, (size_t)n, sizeof *items, by_size_desc);
  int64_t end = 0;
  for (int i = 0; i < n; i++) {
    int v = items[i].v;
    int64_t sz = items[i].size;
    int nb = 0;
    for (int j = 0; j < n_placed; j++) {
      int w = placed[j];
      if (first[w] <= last[v] && first[v] <= last[w])
        busy[nb++] = (range){offset[w], offset[w] + (size[w] + ALIGN - 1) / ALIGN * ALIGN};
    }
    qsort(busy, (size_t)nb, sizeof *busy, by_lo);
    int64_t best = -1, best_gap = 0, at = 0;
    for (int j = 0; j <= nb; j++) {
      int64_t lo = j < nb ? busy[j].lo : INT64_MAX;
      if (lo - at >= sz && (j == nb ? best < 0 : (best < 0 || lo - at < best_gap))) {
        best = at;
        best_gap = lo - at;
      }
      if (j < nb && busy[j].hi > at) at = busy[j].hi;
    }
    offset[v] = best;
    placed[n_placed++] = v;
    if (best + sz > end) end = best + sz;
  }
  *total = end;
  free(items);
  free(placed);
  free(busy);
  return AIT_OK;
}

/* The block a value belongs to: the end of its share chain (-1 when a
 * chain is longer than n, i.e. a cycle). */
static int block_of(int v, const int *share, const int64_t *size, int n) {
  for (int steps = 0; steps <= n; steps++) {
    int u = share[v];
    if (u < 0 || u >= n || size[u] <= 0) return v;
    v = u;
  }
  return -1;
}

ait_status ait_plan_assign_shared(int n_values, const int64_t *size, const int *first,
                                  const int *last, const int *share, int64_t *offset,
                                  int64_t *total) {
  if (!share) return ait_plan_assign(n_values, size, first, last, offset, total);
  size_t n = (size_t)n_values + 1;
  int64_t *bsize = calloc(n, sizeof *bsize);
  int *bfirst = calloc(n, sizeof *bfirst), *blast = calloc(n, sizeof *blast);
  int *block = malloc(sizeof *block * n);
  if (!bsize || !bfirst || !blast || !block) {
    free(bsize);
    free(bfirst);
    free(blast);
    free(block);
    return ait_err(AIT_E_NOMEM, "out of memory planning the arena");
  }
  for (int v = 0; v < n_values; v++) {
    bsize[v] = size[v];
    bfirst[v] = first[v];
    blast[v] = last[v];
  }
  for (int v = 0; v < n_values; v++) {
    block[v] = size[v] > 0 ? block_of(v, share, size, n_values) : v;
    if (block[v] < 0) block[v] = v; /* a cycle: on its own */
  }
  for (int v = 0; v < n_values; v++) {
    int b = block[v];
    if (b == v) continue;
    if (size[v] > bsize[b]) bsize[b] = size[v];
    if (first[v] < bfirst[b]) bfirst[b] = first[v];
    if (last[v] > blast[b]) blast[b] = last[v];
    bsize[v] = 0;
  }
  ait_status st = ait_plan_assign(n_values, bsize, bfirst, blast, offset, total);
  for (int v = 0; !st && v < n_values; v++)
    if (block[v] != v) offset[v] = offset[block[v]];
  free(bsize);
  free(bfirst);
  free(blast);
  free(block);
  return st;
}

/* ---- the plan cache ------------------------------------------------------ */

/* in's signature in a new array (*n_sig entries), its hash in *hash. */
static int64_t *signature_of(const ait_tensor *const *in, int n_in, int *n_sig, uint64_t *hash) {
  int64_t *sig = malloc(((size_t)n_in * (2 + AIT_MAX_RANK) + 1) * sizeof *sig);
  if (sig) *hash = ait_plan_signature(in, n_in, sig, n_sig);
  return sig;
}

/* Signatures of up to this many inputs are computed on the stack (a find
 * per run allocates nothing). */
#define LOCAL_INPUTS 64

void *ait_plan_cache_find(ait_plan_cache *c, const ait_tensor *const *in, int n_in) {
  int64_t local[LOCAL_INPUTS * (2 + AIT_MAX_RANK)], *sig = local;
  int n_sig = 0;
  uint64_t h;
  if (n_in <= LOCAL_INPUTS)
    h = ait_plan_signature(in, n_in, sig, &n_sig);
  else if (!(sig = signature_of(in, n_in, &n_sig, &h)))
    return NULL;
  int hit = -1;
  for (int i = c->n - 1; i >= 0 && hit < 0; i--) /* the most recent first */
    if (c->e[i].hash == h && c->e[i].n_sig == n_sig &&
        !memcmp(c->e[i].sig, sig, (size_t)n_sig * sizeof *sig))
      hit = i;
  if (sig != local) free(sig);
  if (hit < 0) return NULL;
  ait_plan_entry e = c->e[hit];
  memmove(c->e + hit, c->e + hit + 1, (size_t)(c->n - 1 - hit) * sizeof *c->e);
  c->e[c->n - 1] = e;
  return e.plan;
}

ait_status ait_plan_cache_add(ait_plan_cache *c, const ait_tensor *const *in, int n_in,
                              void *plan) {
  ait_plan_entry e = {.plan = plan};
  if (!(e.sig = signature_of(in, n_in, &e.n_sig, &e.hash))) {
    c->free_plan(plan);
    return ait_err(AIT_E_NOMEM, "out of memory keeping a plan");
  }
  int max = c->max > 0 && c->max < AIT_PLAN_CACHE_MAX ? c->max : AIT_PLAN_CACHE_MAX;
  while (c->n >= max) {
    c->free_plan(c->e[0].plan);
    free(c->e[0].sig);
    memmove(c->e, c->e + 1, (size_t)(c->n - 1) * sizeof *c->e);
    c->n--;
  }
  c->e[c->n++] = e;
  return AIT_OK;
}

void ait_plan_cache_clear(ait_plan_cache *c) {
  for (int i = 0; i < c->n; i++) {
    c->free_plan(c->e[i].plan);
    free(c->e[i].sig);
  }
  c->n = 0;
}
