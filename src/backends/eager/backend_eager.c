/* Backend `eager`: the reference executor behind the backend interface. It
 * is the baseline every candidate is compared and timed against. Its built
 * state is just the graph, so save/load write nothing. */
#include <stdio.h>
#include <stdlib.h>

#include "backends/backend.h"
#include "core/error.h"
#include "ops/op.h"
#include "runtime/eager.h"

typedef struct eager_state {
  const ait_graph *g;
} eager_state;

static bool eager_available(char *why, size_t n) { return true; }

static bool eager_supports(const ait_backend_config *cfg, const ait_graph *g, const ait_node *node,
                           char *why, size_t n) {
  if (node->op && node->op->kernel) return true;
  const char *reason = "unknown op";
  ait_op_lookup(node->domain, node->op_type, node->opset, &reason);
  snprintf(why, n, "%s at opset %d: %s", node->op_type, node->opset, reason);
  return false;
}

static ait_status eager_build(const ait_backend_config *cfg, const ait_graph *g,
                              const ait_build_info *info, void **state) {
  AIT_TRY(ait_eager_check(g));
  eager_state *s = calloc(1, sizeof *s);
  if (!s) return ait_err(AIT_E_NOMEM, "out of memory");
  s->g = g;
  *state = s;
  return AIT_OK;
}

static ait_status eager_infer(void *state, const ait_tensor *const *in, int n_in,
                              ait_tensor **out) {
  eager_state *s = state;
  return ait_eager_run(s->g, in, n_in, out);
}

static ait_status eager_nop(void *state) { return AIT_OK; }
static ait_status eager_save(void *state, const char *dir) { return AIT_OK; }

static ait_status eager_load(const ait_backend_config *cfg, const ait_graph *g, const char *dir,
                             void **state) {
  return eager_build(cfg, g, NULL, state);
}

static void eager_destroy(void *state) { free(state); }

/* The graph is the only thing held, and it is borrowed: from the module (which
 * its clones share) or from a partition's segment (shared by its clones). */
static ait_status eager_clone(void *state, void **out) {
  eager_state *c = malloc(sizeof *c);
  if (!c) return ait_err(AIT_E_NOMEM, "out of memory");
  *c = *(const eager_state *)state;
  *out = c;
  return AIT_OK;
}

const ait_backend_iface ait_backend_eager = {
    .name = "eager",
    .summary = "reference executor: plain kernels, the numeric oracle and the baseline",
    .options = NULL,
    .n_options = 0,
    .available = eager_available,
    .supports = eager_supports,
    .build = eager_build,
    .infer = eager_infer,
    .activate = eager_nop,
    .deactivate = eager_nop,
    .save = eager_save,
    .load = eager_load,
    .clone = eager_clone,
    .destroy = eager_destroy,
};
