/* What the public handles hold. Private to src/api/ and the CLI. */
#ifndef AIT_API_MODEL_IMPL_H
#define AIT_API_MODEL_IMPL_H

#include "aitune.h"
#include "api/devio.h"
#include "backends/backend.h"
#include "backends/partition.h"
#include "ir/graph.h"
#include "onnx/onnx_io.h"

struct ait_model {
  ait_graph *graph; /* owned */
  ait_onnx_meta meta;
  char *path; /* file it came from, or NULL */
};

struct ait_session {
  const ait_model *model; /* borrowed */
  ait_backend_config cfg; /* backend and its options */
  ait_runner run;         /* the built backend (whole graph or partitioned), owned */
  ait_tensor **outputs;   /* last run's outputs, owned */
  int n_outputs;
  ait_api_io io; /* device memory and bound outputs (devio.h) */
};

/* Check caller input i against its declaration: dtype, rank, every dim the
 * model fixes, and data present. Shared by sessions and modules. */
ait_status ait_api_check_input(const ait_value *decl, const ait_tensor_view *in, size_t i);

/* View of output i of a run's outputs (n of them); `what` names the owner
 * ("session", "module") in the error. Shared by sessions and modules. */
ait_status ait_api_output_view(ait_tensor *const *outs, int n, size_t i, const char *what,
                               ait_tensor_view *out);

/* Run with inputs that may be sequences or optionals (the conformance
 * harness: test data holds them; the public ait_session_run takes dense
 * tensors only). Inputs are borrowed and checked against the declarations
 * as ait_session_run checks tensors; outputs land in s->outputs. */
ait_status ait_session_run_values(ait_session *s, const ait_tensor *const *inputs, size_t n);

/* ait_model_load_opts with limits already checked (a module loading the
 * model of a tuned folder or cache entry under its caller's limits). */
ait_status ait_model_load_limits(const char *path, const ait_limits *lim, ait_model **out);

/* The graph of a model (for the CLI's info and conformance commands). */
const ait_graph *ait_model_graph(const ait_model *m);

#endif
