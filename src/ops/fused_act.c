/* Activations of fused ops: names, parameters, and the float32 loop. */
#include <string.h>

#include "ops/fused_impl.h"

static const struct {
  const char *name;
  int n_params;
} acts[AIT_ACT_COUNT] = {
    [AIT_ACT_NONE] = {"", 0},
    [AIT_ACT_RELU] = {"Relu", 0},
    [AIT_ACT_CLIP] = {"Clip", 2},
    [AIT_ACT_SIGMOID] = {"Sigmoid", 0},
    [AIT_ACT_TANH] = {"Tanh", 0},
    [AIT_ACT_LEAKY_RELU] = {"LeakyRelu", 1},
    [AIT_ACT_HARD_SIGMOID] = {"HardSigmoid", 2},
    [AIT_ACT_HARD_SWISH] = {"HardSwish", 0},
    [AIT_ACT_GELU] = {"Gelu", 0},
};

const char *ait_act_name(ait_act_kind k) { return k < AIT_ACT_COUNT ? acts[k].name : "?"; }

int ait_act_n_params(ait_act_kind k) { return k < AIT_ACT_COUNT ? acts[k].n_params : 0; }

ait_act_kind ait_act_from_name(const char *name) {
  for (int k = 0; k < AIT_ACT_COUNT; k++)
    if (!strcmp(acts[k].name, name ? name : "")) return (ait_act_kind)k;
  return AIT_ACT_COUNT;
}

ait_status ait_act_parse(const ait_node *n, ait_act *a) {
  memset(a, 0, sizeof *a);
  const char *name = ait_attr_str(n, "activation", "");
  ait_act_kind k = ait_act_from_name(name);
  if (k == AIT_ACT_COUNT)
    return ait_err(AIT_E_INVALID_ARG, "unknown activation '%s' in %s", name, n->op_type);
  int cnt = 0;
  const float *p = ait_attr_floats(n, "activation_params", &cnt);
  if (cnt != acts[k].n_params)
    return ait_err(AIT_E_INVALID_ARG, "activation %s takes %d activation_params, got %d",
                   acts[k].name, acts[k].n_params, cnt);
  a->kind = k;
  for (int i = 0; i < cnt; i++)
    a->p[i] = p[i];
  return AIT_OK;
}

void ait_act_apply_f32(const ait_act *a, float *x, int64_t n) {
  switch (a->kind) {
  case AIT_ACT_NONE: return;
  case AIT_ACT_RELU:
    for (int64_t i = 0; i < n; i++)
      x[i] = x[i] < 0.0f ? 0.0f : x[i];
    return;
  case AIT_ACT_CLIP: {
    float lo = a->p[0], hi = a->p[1];
    for (int64_t i = 0; i < n; i++) {
      float v = x[i] < lo ? lo : x[i];
      x[i] = v > hi ? hi : v;
    }
    return;
  }
  default:
    for (int64_t i = 0; i < n; i++)
      x[i] = ait_act_f32(a, x[i]);
    return;
  }
}
