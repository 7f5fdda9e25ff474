/* Activations of fused ops: names, parameters, epilogue programs, and the
 * float32 loop. */
#include <stdio.h>
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
    [AIT_ACT_SOFTPLUS] = {"Softplus", 0},
    [AIT_ACT_GELU_TANH] = {"GeluTanh", 0},
    [AIT_ACT_PROGRAM] = {"Program", 0}, /* two per step, counted by the parser */
};

const char *ait_act_name(ait_act_kind k) { return k < AIT_ACT_COUNT ? acts[k].name : "?"; }

int ait_act_n_params(ait_act_kind k) { return k < AIT_ACT_COUNT ? acts[k].n_params : 0; }

ait_act_kind ait_act_from_name(const char *name) {
  for (int k = 0; k < AIT_ACT_COUNT; k++)
    if (!strcmp(acts[k].name, name ? name : "")) return (ait_act_kind)k;
  return AIT_ACT_COUNT;
}

/* The steps of `epilogue` ("Sigmoid*x", "Softplus;Tanh*x") into a. */
static ait_status parse_program(const ait_node *n, const char *text, ait_act *a) {
  const char *s = text;
  a->n_steps = 0;
  while (*s) {
    const char *end = strchr(s, ';');
    size_t len = end ? (size_t)(end - s) : strlen(s);
    bool mul_x = len >= 2 && !strncmp(s + len - 2, "*x", 2);
    char name[32];
    size_t nl = len - (mul_x ? 2 : 0);
    if (nl >= sizeof name || a->n_steps == AIT_ACT_MAX_STEPS)
      return ait_err(AIT_E_INVALID_ARG, "epilogue '%s' of %s: too long", text, n->op_type);
    memcpy(name, s, nl);
    name[nl] = '\0';
    ait_act_kind k = ait_act_from_name(name);
    if (k == AIT_ACT_COUNT || k == AIT_ACT_PROGRAM || k == AIT_ACT_NONE)
      return ait_err(AIT_E_INVALID_ARG, "epilogue '%s' of %s: unknown step '%s'", text, n->op_type,
                     name);
    a->steps[a->n_steps].kind = k;
    a->steps[a->n_steps].mul_x = mul_x;
    a->n_steps++;
    s += len + (end ? 1 : 0);
  }
  if (a->n_steps == 0) return ait_err(AIT_E_INVALID_ARG, "empty epilogue in %s", n->op_type);
  return AIT_OK;
}

ait_status ait_act_parse(const ait_node *n, ait_act *a) {
  memset(a, 0, sizeof *a);
  const char *name = ait_attr_str(n, "activation", "");
  ait_act_kind k = ait_act_from_name(name);
  if (k == AIT_ACT_COUNT)
    return ait_err(AIT_E_INVALID_ARG, "unknown activation '%s' in %s", name, n->op_type);
  if (k == AIT_ACT_PROGRAM) AIT_TRY(parse_program(n, ait_attr_str(n, "epilogue", ""), a));
  int want = k == AIT_ACT_PROGRAM ? 2 * a->n_steps : acts[k].n_params;
  int cnt = 0;
  const float *p = ait_attr_floats(n, "activation_params", &cnt);
  if (cnt != want)
    return ait_err(AIT_E_INVALID_ARG, "activation %s takes %d activation_params, got %d",
                   acts[k].name, want, cnt);
  a->kind = k;
  if (k == AIT_ACT_PROGRAM) {
    for (int i = 0; i < a->n_steps; i++)
      a->steps[i].p[0] = p[2 * i], a->steps[i].p[1] = p[2 * i + 1];
    return AIT_OK;
  }
  for (int i = 0; i < cnt; i++)
    a->p[i] = p[i];
  return AIT_OK;
}

int ait_act_program_text(const ait_act *a, char *buf, size_t cap, float *params) {
  size_t at = 0;
  buf[0] = '\0';
  for (int i = 0; i < a->n_steps; i++) {
    const ait_act_step *st = &a->steps[i];
    int w = snprintf(buf + at, cap - at, "%s%s%s", i ? ";" : "", acts[st->kind].name,
                     st->mul_x ? "*x" : "");
    if (w < 0 || (size_t)w >= cap - at) return -1;
    at += (size_t)w;
    params[2 * i] = st->p[0];
    params[2 * i + 1] = st->p[1];
  }
  return 2 * a->n_steps;
}

float ait_act_program_f32(const ait_act *a, float x) {
  float v = x;
  for (int i = 0; i < a->n_steps; i++) {
    const ait_act_step *st = &a->steps[i];
    ait_act one = {st->kind, {st->p[0], st->p[1]}, 0, {{0}}};
    v = ait_act_f32(&one, v);
    if (st->mul_x) v *= x;
  }
  return v;
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
