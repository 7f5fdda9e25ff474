/* Running a backend on the parts of a model it supports.
 *
 * ait_runner_build() builds a configuration on a whole graph when it
 * supports every node; otherwise it cuts the graph into segments — maximal
 * runs of supported nodes in a topological order that keeps each class
 * together — builds the backend on each supported segment and the fallback
 * (native, or eager where native is missing) on the rest, and runs them in
 * order, handing tensors from segment to segment without copies. A backend
 * whose share of the model's FLOPs is too small to pay off is refused with
 * a message saying so. The result is a (iface, state) pair used like any
 * backend's: infer, (de)activate, save, destroy. */
#ifndef AIT_BACKENDS_PARTITION_H
#define AIT_BACKENDS_PARTITION_H

#include "backends/backend.h"

typedef struct ait_runner {
  const ait_backend_iface *iface; /* the backend itself, or the partition runner */
  void *state;
  int nodes_primary, nodes_total; /* nodes the configured backend runs */
  int n_segments;                 /* 1 when not partitioned */
  double flops_share;             /* of the primary backend */
  char fallback[32];              /* "" when not partitioned */
} ait_runner;

/* Minimum share of estimated FLOPs a partitioned backend must take. */
#define AIT_PARTITION_MIN_SHARE 0.5

ait_status ait_runner_build(const ait_backend_config *cfg, const ait_graph *g,
                            const ait_build_info *info, ait_runner *out);
/* Load a runner saved by out.iface->save into dir (partitioned or not). */
ait_status ait_runner_load(const ait_backend_config *cfg, const ait_graph *g, const char *dir,
                           ait_runner *out);
void ait_runner_destroy(ait_runner *r);

#endif
