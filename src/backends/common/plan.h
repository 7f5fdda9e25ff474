/* Plans every backend shares: the input signature a plan cache is keyed by,
 * and the liveness arena planner. Pure functions of their arguments, no
 * backend state (native, onednn and cuda use them). */
#ifndef AIT_BACKENDS_COMMON_PLAN_H
#define AIT_BACKENDS_COMMON_PLAN_H

#include <stdint.h>

#include "core/error.h"
#include "core/tensor.h"

/* The signature of inputs in[0..n_in): per input its kind and dtype, rank
 * and dims (-1, -1 for an absent one) in sig (room for n_in * (2 +
 * AIT_MAX_RANK) entries), their count in *n_sig, and its FNV-1a hash. Two
 * input sets share a plan exactly when their signatures are equal. */
uint64_t ait_plan_signature(const ait_tensor *const *in, int n_in, int64_t *sig, int *n_sig);

/* Arena offsets for values with sizes size[v] (0 = not in the arena) live
 * from step first[v] to step last[v]: two values whose lifetimes overlap
 * never share bytes. Greedy by size (largest first), best-fitting gap, 64-byte
 * aligned, as in ggml-alloc and onnx2c's tensor unionizing. offset[v] is -1
 * for a value not in the arena; *total the arena's bytes. */
ait_status ait_plan_assign(int n_values, const int64_t *size, const int *first, const int *last,
                           int64_t *offset, int64_t *total);

/* ait_plan_assign where value v with share[v] = u >= 0 takes u's bytes (an
 * output written over an input that dies at v's first step, in place): v,
 * u and whatever u shares form one block, of the largest size, live from
 * the first step of any to the last. share may be NULL; share[v] = -1 for
 * a value of its own. A share whose u is not in the arena (size 0) or
 * would form a cycle is ignored. */
ait_status ait_plan_assign_shared(int n_values, const int64_t *size, const int *first,
                                  const int *last, const int *share, int64_t *offset,
                                  int64_t *total);

/* ---- the plan cache ------------------------------------------------------ */

#define AIT_PLAN_CACHE_MAX 8

typedef struct ait_plan_entry {
  uint64_t hash;
  int n_sig;
  int64_t *sig; /* owned */
  void *plan;   /* the backend's, freed through the cache's free_plan */
} ait_plan_entry;

/* Up to `max` plans (0: AIT_PLAN_CACHE_MAX) keyed by input signature, the
 * least recently used dropped first (native's, onednn's and xnnpack's;
 * xnnpack keeps 4, each holding packed weights). Zero it and set free_plan
 * (and max); a copy of a cache (a clone's state) must be zeroed again, it
 * owns nothing. */
typedef struct ait_plan_cache {
  ait_plan_entry e[AIT_PLAN_CACHE_MAX]; /* least recently used first */
  int n;
  int max;
  void (*free_plan)(void *plan);
} ait_plan_cache;

/* The plan kept for inputs of in's signature, now the most recently used,
 * or NULL (also when memory runs out computing it: the caller then makes a
 * plan, as for a miss). */
void *ait_plan_cache_find(ait_plan_cache *c, const ait_tensor *const *in, int n_in);
/* Keep plan under in's signature; when the cache is full the least
 * recently used plan goes first. On failure (out of memory) the plan is
 * freed. */
ait_status ait_plan_cache_add(ait_plan_cache *c, const ait_tensor *const *in, int n_in, void *plan);
/* Free every plan. */
void ait_plan_cache_clear(ait_plan_cache *c);

#endif
