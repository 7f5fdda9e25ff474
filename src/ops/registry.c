/* The operator registry: the list of families and the versioned lookup. */
#include <stdio.h>
#include <string.h>

#include "ops/op.h"

#define FAMILY(f)                                                                                  \
  extern const ait_op_def ait_ops_##f[];                                                           \
  extern const int ait_ops_##f##_n;
FAMILY(elementwise)
FAMILY(tensor)
FAMILY(nn)
FAMILY(reduce)
FAMILY(image)
FAMILY(misc)
FAMILY(control)
FAMILY(fused)
FAMILY(ml)
#undef FAMILY

/* Row counts are not constant expressions across files, so they are read
 * through family_size() instead of being stored in the table. */
const ait_op_family ait_op_families[] = {{"elementwise", ait_ops_elementwise},
                                         {"tensor", ait_ops_tensor},
                                         {"nn", ait_ops_nn},
                                         {"reduce", ait_ops_reduce},
                                         {"image", ait_ops_image},
                                         {"misc", ait_ops_misc},
                                         {"control", ait_ops_control},
                                         {"fused", ait_ops_fused},
                                         {"ml", ait_ops_ml},
                                         {NULL, NULL}};

static int family_size(int f) {
  static const int *const sizes[] = {&ait_ops_elementwise_n, &ait_ops_tensor_n, &ait_ops_nn_n,
                                     &ait_ops_reduce_n,      &ait_ops_image_n,  &ait_ops_misc_n,
                                     &ait_ops_control_n,     &ait_ops_fused_n,  &ait_ops_ml_n};
  return *sizes[f];
}

int ait_op_family_size(int family) { return family_size(family); }

static bool same_domain(const char *a, const char *b) {
  /* "" and "ai.onnx" name the same default domain */
  if (!a || !strcmp(a, "ai.onnx")) a = "";
  if (!b || !strcmp(b, "ai.onnx")) b = "";
  return strcmp(a, b) == 0;
}

const ait_op_def *ait_op_lookup(const char *domain, const char *name, int64_t opset,
                                const char **why) {
  const ait_op_def *best = NULL;
  int oldest = 0;
  bool known = false;
  for (int f = 0; ait_op_families[f].name; f++) {
    const ait_op_def *rows = ait_op_families[f].rows;
    for (int i = 0; i < family_size(f); i++) {
      const ait_op_def *r = &rows[i];
      if (strcmp(r->name, name) || !same_domain(r->domain, domain)) continue;
      if (!known || r->since < oldest) oldest = r->since;
      known = true;
      if (r->since <= opset && (!best || r->since > best->since)) best = r;
    }
  }
  if (!best && why) {
    static _Thread_local char msg[96];
    if (known) {
      snprintf(msg, sizeof msg, "needs opset >= %d", oldest);
      *why = msg;
    } else {
      *why = "unknown op";
    }
  }
  return best;
}
