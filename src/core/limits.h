/* What loading a model may take: the internal form of the public
 * ait_load_options (docs/conformance.md, "Limits: every file is untrusted").
 * A model's root graph keeps the limits it was loaded with, so what the
 * library loads on its behalf later (a backend's saved graph in a tuned
 * folder, a cache entry) is held to the same ones. */
#ifndef AIT_CORE_LIMITS_H
#define AIT_CORE_LIMITS_H

#include <stdint.h>

#include "aitune.h"

typedef struct ait_limits {
  int max_depth;             /* protobuf message nesting (ModelProto = 1) */
  int64_t max_nodes;         /* nodes of the model, its subgraphs' included */
  int64_t max_tensor_bytes;  /* one tensor's bytes in memory, as decoded */
  int64_t max_fold_elements; /* load-time folding keeps constants this small */
} ait_limits;

/* A zero field means its default: graphs built in memory (tests, copies)
 * hold zeros and get the defaults. */
static inline ait_limits ait_limits_resolve(ait_limits l) {
  if (l.max_depth <= 0) l.max_depth = AIT_DEFAULT_MAX_DEPTH;
  if (l.max_nodes <= 0) l.max_nodes = AIT_DEFAULT_MAX_NODES;
  if (l.max_tensor_bytes <= 0) l.max_tensor_bytes = AIT_DEFAULT_MAX_TENSOR_BYTES;
  if (l.max_fold_elements <= 0) l.max_fold_elements = AIT_DEFAULT_MAX_FOLD_ELEMENTS;
  return l;
}

/* The defaults, every field set. */
static inline ait_limits ait_limits_default(void) { return ait_limits_resolve((ait_limits){0}); }

/* Check a caller's ait_load_options (NULL: the defaults) and turn them into
 * limits; AIT_E_INVALID_ARG naming the field and its range otherwise
 * (src/api/model.c). */
ait_status ait_limits_from_options(const ait_load_options *o, ait_limits *out);

#endif
