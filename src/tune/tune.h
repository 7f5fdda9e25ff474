/* The tuner's internal types: samples, the graph spec (dynamic axes with
 * min/opt/max), numeric validation against the reference, candidates and
 * the report. The public face is the ait_module API in aitune.h. */
#ifndef AIT_TUNE_TUNE_H
#define AIT_TUNE_TUNE_H

#include <stdbool.h>

#include "aitune.h"
#include "backends/backend.h"
#include "backends/partition.h"
#include "core/tensor.h"
#include "ir/graph.h"
#include "tune/profile.h"

/* ---- samples and the graph spec --------------------------------------- */

#define AIT_MAX_SAMPLES 16
#define AIT_MAX_AXES 16
#define AIT_MAX_BATCHES 16

typedef struct ait_sample {
  ait_tensor **inputs; /* owned, one per graph input */
  int n_inputs;
} ait_sample;

/* One dynamic axis of one graph input. */
typedef struct ait_axis {
  int input, axis;
  char sym[64];          /* symbolic name, "" when none */
  int64_t min, opt, max; /* from the samples (and the profiled batch sizes) */
  bool is_batch;
} ait_axis;

typedef struct ait_graph_spec {
  int n_axes;
  ait_axis axes[AIT_MAX_AXES];
  bool has_batch; /* every input with rank >= 1 has a dynamic axis 0 that is the batch */
} ait_graph_spec;

void ait_sample_free(ait_sample *s);
/* Deep copy. */
ait_status ait_sample_clone(const ait_sample *s, ait_sample *out);
/* Random sample of the graph's declared shapes (symbolic dims = 1), seeded. */
ait_status ait_sample_random(const ait_graph *g, unsigned long long seed, ait_sample *out);
/* Detect dynamic axes from the declared shapes and the samples. */
void ait_spec_detect(const ait_graph *g, const ait_sample *samples, int n, ait_graph_spec *spec);
/* The largest size ait_module_set_axis_range takes for an axis. */
#define AIT_MAX_AXIS_SIZE (1LL << 30)
/* Put ranges given by the caller (ait_module_set_axis_range) into spec: each
 * replaces the detected range of its axis or adds the axis; axis 0 becomes
 * the batch axis when it is then dynamic in every input with a rank.
 * AIT_E_SHAPE, naming it, when a sample lies outside a given range. */
ait_status ait_spec_apply_ranges(const ait_graph *g, const ait_sample *samples, int n_samples,
                                 const ait_axis *ranges, int n_ranges, ait_graph_spec *spec);
/* Copy of s with every axis matching (is_batch, or input/axis when
 * which >= 0) resized to `size`: rows repeat cyclically or are cut. */
ait_status ait_sample_resize(const ait_sample *s, const ait_graph_spec *spec, int which_axis,
                             int64_t size, ait_sample *out);
/* A new tensor: t with `axis` resized to `size`, index j reading source row
 * j % old (rows repeat cyclically, or are cut); NULL when out of memory. */
ait_tensor *ait_tensor_resized(const ait_tensor *t, int axis, int64_t size);
/* The batch of a sample (dim 0 of the first batched input), or 1. */
int64_t ait_sample_batch(const ait_sample *s, const ait_graph_spec *spec);
/* Spec as JSON text (new string, caller frees) and a digest for cache keys. */
char *ait_spec_json(const ait_graph_spec *spec);

/* ---- numeric validation ------------------------------------------------ */

typedef struct ait_tolerance {
  double rtol, atol, min_cosine;
  bool elementwise; /* judge each element by rtol/atol (off for reduced precisions,
                       judged by cosine, top-1 agreement and max_rel, errors reported) */
  double min_top1;  /* classifier outputs (float, rank 2, >= 2 classes): row argmax agreement */
  double max_rel;   /* max |got - want| / max |want| per tensor (normwise); 0: not checked */
  double tie_rel;   /* top-1: the reference's classes within tie_rel of the row's largest |value|
                       of its best one are tied, and picking any of them agrees */
} ait_tolerance;

typedef struct ait_error_stats {
  int checked;             /* output tensors compared */
  double max_abs, max_rel; /* max |got-want|, and that over max|want| per tensor */
  double min_cosine;       /* lowest cosine similarity over float outputs */
  int cosines;             /* float outputs that min_cosine is over (0: none, e.g. all int64) */
  long long mismatches;    /* elements outside tolerance */
  long long bad_values;    /* NaN/Inf where the reference has finite values */
  double top1;             /* lowest row-argmax agreement over classifier outputs; -1 when none */
} ait_error_stats;

/* Default tolerance for a backend whose compute precision is `dt`. */
ait_tolerance ait_tolerance_for(ait_dtype compute, const ait_tune_options *o);
/* Compare got with want, accumulating into st; on a failure writes why and
 * returns false (shape/dtype mismatch, NaN/Inf, out of tolerance). */
bool ait_outputs_match(const ait_tensor *got, const ait_tensor *want, const ait_tolerance *tol,
                       ait_error_stats *st, char *why, size_t n);

/* ---- candidates and the report ---------------------------------------- */

typedef enum ait_cand_status {
  AIT_CAND_PENDING = 0,
  AIT_CAND_SELECTED,
  AIT_CAND_OK,
  AIT_CAND_UNSUPPORTED,
  AIT_CAND_BUILD_FAILED,
  AIT_CAND_INCORRECT,
  AIT_CAND_SLOWER,
  AIT_CAND_OVER_BUDGET,
  AIT_CAND_SAME,     /* ran the same code as an earlier candidate (iface->unused_option) */
  AIT_CAND_DOMINATED /* reduced precision, and not faster than a more precise candidate */
} ait_cand_status;

const char *ait_cand_status_name(ait_cand_status s);

typedef struct ait_candidate {
  ait_backend_config cfg;
  char desc[600];
  ait_cand_status status;
  char error[768];
  double build_s;
  int nodes_supported, nodes_total;
  ait_error_stats err;
  ait_tolerance tol; /* the bound its outputs were judged by (set by validation) */
  ait_dtype compute; /* the precision that bound is for */
  bool validated;    /* its outputs were compared with the reference */
  int n_prof;
  ait_latency_stats prof[AIT_MAX_BATCHES];
  bool prof_from_history[AIT_MAX_BATCHES]; /* reused from an earlier tune */
  /* share of each entry's wall time the thread that timed it spent waiting
   * for a CPU (tune/contention.h; 0: quiet, unknown or from the history) */
  double prof_wait[AIT_MAX_BATCHES];
  double prof_unc_ms[AIT_MAX_BATCHES]; /* contended: its mean run less the wait; else 0 */
  int sweep_start;                     /* batch the sweep started from (learned) */
  bool sweep_learned;                  /* started from the history */
  ait_runner run;          /* built state while tuning (whole graph or partitioned), owned */
  int runoff_rounds;       /* > 0: timed again in the runoff, in this many rounds */
  double runoff_ratio;     /* its speed there over the leader's (median of per-round ratios) */
  double runoff_ms;        /* its median time per run there */
  double runoff_wait;      /* median over rounds of its timing thread's wait share */
  bool runoff_uncontended; /* the runoff judged times less CPU waits (contention seen) */
  /* the point the decision judged it by (its fastest runs, within the
   * budget): what `better` and `beats` compare; has_decided false when no
   * profile entry qualifies */
  bool has_decided;
  bool decided_uncontended; /* decided_ms is the mean less CPU waits, not the fastest run */
  int decided_batch;
  double decided_ms, decided_throughput;
} ait_candidate;

#endif
