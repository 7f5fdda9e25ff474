/* The tuning options as data: their defaults, one row per field (where it
 * lies, how it enters the decision cache key or why not), reading a
 * caller's struct of any struct_size, and range checks. */
#include "tune/options.h"

#include <stdint.h>
#include <string.h>

#include "core/error.h"
#include "core/struct_size.h"
#include "tune/strategy.h"
#include "tune/tune.h"

void ait_tune_defaults(ait_tune_options *o) {
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->strategy = AIT_STRATEGY_MAX_THROUGHPUT;
  o->min_speedup_ratio = 0.01;
  o->perf_validation = 1;
  o->warmup = 3;
  o->min_runs = 10;
  o->max_runs = 200;
  o->cv_target = 0.05;
  o->time_budget_s = 2.0;
  o->runoff_rounds = 7;
  o->use_decision_cache = 1;
}

/* ---- one row per field ------------------------------------------------------
 * Every option that can change the candidates or the verdicts enters the
 * decision cache key; those that cannot (where the cache is, logging) say
 * why not. A new field of ait_tune_options needs a row here: the static
 * assertion below counts the bytes, and test_tune's option_table checks that
 * the rows tile the struct and that every key row has a test changing it. */
#define OPT(f, kind, part, why)                                                                    \
  { #f, offsetof(ait_tune_options, f), sizeof(((ait_tune_options *)0)->f), kind, part, why }
#define KEY(f, kind) OPT(f, kind, NULL, NULL)
#define PART(f, of) OPT(f, AIT_KEY_PART, of, NULL)
#define OUT(f, why) OPT(f, AIT_KEY_NONE, NULL, why)
static const ait_option_row option_rows[] = {
    OUT(struct_size, "the caller's header version: the library reads its own struct"),
    KEY(strategy, AIT_KEY_ENUM),
    KEY(backends, AIT_KEY_BACKENDS),
    PART(n_backends, "backends"),
    KEY(batch_sizes, AIT_KEY_BATCHES),
    PART(n_batch_sizes, "batch_sizes"),
    KEY(latency_budget_ms, AIT_KEY_DBL),
    KEY(min_speedup_ratio, AIT_KEY_DBL),
    KEY(perf_validation, AIT_KEY_INT),
    KEY(rtol, AIT_KEY_DBL),
    KEY(atol, AIT_KEY_DBL),
    KEY(min_cosine, AIT_KEY_DBL),
    KEY(min_top1, AIT_KEY_DBL),
    KEY(precision, AIT_KEY_PRECISION),
    KEY(warmup, AIT_KEY_INT),
    KEY(min_runs, AIT_KEY_INT),
    KEY(max_runs, AIT_KEY_INT),
    KEY(cv_target, AIT_KEY_DBL),
    KEY(time_budget_s, AIT_KEY_DBL),
    OUT(cache_dir, "where the cache is, not what it decides"),
    OUT(use_decision_cache, "whether the cache is read at all"),
    OUT(log, "progress messages only"),
    OUT(log_user, "progress messages only"),
    KEY(node_filter, AIT_KEY_FILTER),
    PART(node_filter_user, "node_filter"),
    KEY(mem_reading, AIT_KEY_MEMORY),
    KEY(runoff_rounds, AIT_KEY_INT),
    KEY(io_mem, AIT_KEY_ENUM),
};
#undef OPT
#undef KEY
#undef PART
#undef OUT

/* ait_tune_options grew or shrank: give the new field its row above (and
 * its default in ait_tune_defaults), then update the size */
#if UINTPTR_MAX == UINT64_MAX /* the size below is that of LP64 */
_Static_assert(sizeof(ait_tune_options) == 208,
               "a new tuning option: add its row to option_rows (src/tune/options.c)");
#endif

const ait_option_row *ait_option_rows(size_t *n) {
  *n = sizeof option_rows / sizeof option_rows[0];
  return option_rows;
}

/* ---- struct_size -------------------------------------------------------------- */

/* option rows begin with an ait_field_span's members, so the shared check
 * reads them in place */
_Static_assert(offsetof(ait_option_row, name) == offsetof(ait_field_span, name) &&
                   offsetof(ait_option_row, off) == offsetof(ait_field_span, off) &&
                   offsetof(ait_option_row, size) == offsetof(ait_field_span, size),
               "ait_option_row must begin like ait_field_span");

ait_status ait_tune_options_check_size(size_t size) {
  return ait_struct_size_check("ait_tune_options", "tuning options", "ait_tune_options_init", size,
                               sizeof(ait_tune_options), option_rows,
                               sizeof option_rows / sizeof option_rows[0], sizeof option_rows[0]);
}

void ait_tune_options_fill(ait_tune_options *o, size_t struct_size) {
  ait_tune_options d;
  ait_tune_defaults(&d);
  d.struct_size = struct_size;
  memcpy(o, &d, struct_size < sizeof d ? struct_size : sizeof d);
  if (struct_size > sizeof d) memset((char *)o + sizeof d, 0, struct_size - sizeof d);
}

ait_status ait_tune_options_take(const ait_tune_options *in, ait_tune_options *o) {
  ait_tune_defaults(o);
  if (!in) return AIT_OK;
  size_t size = in->struct_size;
  AIT_TRY(ait_tune_options_check_size(size));
  for (size_t i = sizeof *o; i < size; i++) /* fields of a newer header than ours */
    if (((const unsigned char *)in)[i])
      return ait_err(AIT_E_INVALID_ARG,
                     "ait_tune_options: struct_size is %zu, this library's options are %zu "
                     "bytes, and byte %zu is set: the caller was built against a newer aitune.h "
                     "than this library (%s) knows",
                     size, sizeof *o, i, AIT_VERSION_STRING);
  memcpy(o, in, size < sizeof *o ? size : sizeof *o);
  o->struct_size = sizeof *o;
  return AIT_OK;
}

/* ---- ranges ------------------------------------------------------------------- */

typedef struct opt_range {
  const char *name;
  bool is_int;
  size_t off;
  double lo, hi; /* inclusive; NaN fails every comparison */
} opt_range;

#define RANGE(is_int, field, lo, hi)                                                               \
  { #field, is_int, offsetof(ait_tune_options, field), lo, hi }
static const opt_range opt_ranges[] = {
    RANGE(false, latency_budget_ms, 0, 1e9),
    RANGE(false, min_speedup_ratio, -0.99, 1e9),
    RANGE(true, perf_validation, 0, 1),
    RANGE(false, rtol, 0, 1e9),
    RANGE(false, atol, 0, 1e9),
    RANGE(false, min_cosine, 0, 1),
    RANGE(false, min_top1, 0, 1),
    RANGE(true, warmup, 0, 1000000),
    RANGE(true, min_runs, 1, 1000000),
    RANGE(true, max_runs, 1, 1000000),
    RANGE(false, cv_target, 0, 1e6),
    RANGE(false, time_budget_s, 0, 1e7),
    RANGE(true, use_decision_cache, 0, 1),
    RANGE(true, runoff_rounds, 0, 10000),
};
#undef RANGE

ait_status ait_tune_options_check(const ait_tune_options *o) {
  if (!ait_strategy_row_of(o->strategy))
    return ait_err(AIT_E_INVALID_ARG, "strategy: %d is not a strategy (0..%d)", (int)o->strategy,
                   ait_strategy_count() - 1);
  for (size_t i = 0; i < sizeof opt_ranges / sizeof opt_ranges[0]; i++) {
    const opt_range *r = &opt_ranges[i];
    const void *f = (const char *)o + r->off;
    double v = r->is_int ? *(const int *)f : *(const double *)f;
    if (!(v >= r->lo && v <= r->hi))
      return ait_err(AIT_E_INVALID_ARG, "%s: %g is out of range [%g, %g]", r->name, v, r->lo,
                     r->hi);
  }
  if (o->io_mem != AIT_MEM_HOST && o->io_mem != AIT_MEM_CUDA)
    return ait_err(AIT_E_INVALID_ARG,
                   "io_mem: %d is not a memory kind (AIT_MEM_HOST, AIT_MEM_CUDA)", (int)o->io_mem);
  if (o->max_runs < o->min_runs)
    return ait_err(AIT_E_INVALID_ARG, "max_runs (%d) must be >= min_runs (%d)", o->max_runs,
                   o->min_runs);
  if (o->precision && strcmp(o->precision, "fp32") && strcmp(o->precision, "auto") &&
      strcmp(o->precision, "any"))
    return ait_err(AIT_E_INVALID_ARG, "precision: '%s' is not fp32, auto or any", o->precision);
  if (o->n_backends && !o->backends)
    return ait_err(AIT_E_INVALID_ARG, "backends: NULL with n_backends %zu", o->n_backends);
  for (size_t i = 0; o->backends && i < o->n_backends; i++)
    if (!o->backends[i]) return ait_err(AIT_E_INVALID_ARG, "backends[%zu] is NULL", i);
  if (o->n_batch_sizes && !o->batch_sizes)
    return ait_err(AIT_E_INVALID_ARG, "batch_sizes: NULL with n_batch_sizes %zu", o->n_batch_sizes);
  if (o->batch_sizes && o->n_batch_sizes > AIT_MAX_BATCHES)
    return ait_err(AIT_E_INVALID_ARG, "batch_sizes: %zu sizes, at most %d", o->n_batch_sizes,
                   AIT_MAX_BATCHES);
  for (size_t i = 0; o->batch_sizes && i < o->n_batch_sizes; i++)
    if (o->batch_sizes[i] < 1 || o->batch_sizes[i] > AIT_MAX_TUNE_BATCH)
      return ait_err(AIT_E_INVALID_ARG, "batch_sizes[%zu]: batch size %d must be in [1, %d]", i,
                     o->batch_sizes[i], AIT_MAX_TUNE_BATCH);
  return AIT_OK;
}
