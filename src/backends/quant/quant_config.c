/* Quantization configurations: presets, custom options, and the JSON forms
 * ({"quantization": "int8wo"} from users; the full form that tuned
 * artifacts record). A preset fixes every quantization setting, so a preset
 * together with any custom setting is refused rather than merged. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/quant/quant.h"
#include "core/error.h"
#include "core/fileio.h"

typedef struct preset {
  const char *name;
  qnt_wtype weights;
  qnt_gran gran;
  int64_t group;
  bool act;
  float outliers;
  bool attn_bf16;
} preset;

/* As torchao's configs: per-channel symmetric absmax weights. The
 * microscaling formats have their block size built in. The dynamic presets
 * also run attention's products (activations times activations, which they
 * do not quantize) in bfloat16, as torchao's models do in their bf16
 * attention; the weight-only ones keep every float product float32. */
static const preset presets[] = {
    {"int8wo", QNT_INT8, QNT_CHANNEL, 0, false, 0, false},
    {"int8dq", QNT_INT8, QNT_CHANNEL, 0, true, QNT_OUTLIERS, true},
    {"fp8wo", QNT_FP8, QNT_CHANNEL, 0, false, 0, false},
    {"fp8dq", QNT_FP8, QNT_CHANNEL, 0, true, 0, true},
    {"mxfp8dq", QNT_MXFP8, QNT_GROUP, 32, true, 0, true},
    {"nvfp4dq", QNT_NVFP4, QNT_GROUP, 16, true, 0, true},
};

static const char *const wtype_names[] = {"int8", "fp8", "mxfp8", "nvfp4"};
static const char *const gran_names[] = {"tensor", "channel", "group"};
static const char *const op_names[] = {"MatMul", "Gemm", "Conv", "Gather"};

/* Options that describe the quantization itself (as opposed to the filter
 * and run-time options): any of them makes a custom configuration. */
static const char *const custom_keys[] = {"weights",   "granularity", "group",
                                          "symmetric", "scale",       "percentile",
                                          "act",       "outliers",    "attention"};

const char *qnt_wtype_name(qnt_wtype t) { return wtype_names[t]; }

static int find_name(const char *const *names, int n, const char *s) {
  for (int i = 0; i < n; i++)
    if (s && !strcmp(names[i], s)) return i;
  return -1;
}

static const preset *find_preset(const char *name) {
  for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
    if (!strcmp(presets[i].name, name)) return &presets[i];
  return NULL;
}

static void apply_preset(const preset *p, qnt_config *c) {
  snprintf(c->preset, sizeof c->preset, "%s", p->name);
  c->weights = p->weights;
  c->gran = p->gran;
  c->group = p->group;
  c->symmetric = true;
  c->percentile = false;
  c->pct = 99.99;
  c->act = p->act;
  c->outliers = p->outliers;
  c->attn_bf16 = p->attn_bf16;
}

static void filter_defaults(qnt_config *c) {
  c->ops = QNT_OP_ALL;
  c->n_exclude = 0;
  c->min_weight = 0;
}

/* The block structure microscaling formats impose, and the settings that
 * only make sense together. */
static ait_status check_custom(qnt_config *c, const char *what) {
  if (c->weights == QNT_MXFP8 || c->weights == QNT_NVFP4) {
    int64_t block = c->weights == QNT_MXFP8 ? 32 : 16;
    if (c->gran != QNT_GROUP || (c->group && c->group != block))
      return ait_err(AIT_E_INVALID_ARG,
                     "%s: %s weights are scaled per block of %lld along the reduction axis; "
                     "use granularity group with group %lld (or leave both out)",
                     what, wtype_names[c->weights], (long long)block, (long long)block);
    c->group = block;
  }
  if (!c->symmetric && c->weights != QNT_INT8)
    return ait_err(AIT_E_INVALID_ARG,
                   "%s: asymmetric quantization (a zero point) needs int8 weights, not %s", what,
                   wtype_names[c->weights]);
  if (c->gran == QNT_GROUP && (c->group < 16 || c->group % 16 || c->group > 65536))
    return ait_err(AIT_E_INVALID_ARG, "%s: group size %lld must be a multiple of 16 in 16..65536",
                   what, (long long)c->group);
  if (c->gran != QNT_GROUP) c->group = 0;
  if (c->percentile && !(c->pct > 50 && c->pct <= 100))
    return ait_err(AIT_E_INVALID_ARG, "%s: percentile %g must lie in (50, 100]", what, c->pct);
  if (c->outliers != 0 && (!c->act || c->weights != QNT_INT8))
    return ait_err(AIT_E_INVALID_ARG,
                   "%s: activation outliers apply to dynamically quantized int8 activations "
                   "(act=on with int8 weights)",
                   what);
  if (c->outliers != 0 && !(c->outliers >= 1 && c->outliers <= 1000))
    return ait_err(AIT_E_INVALID_ARG, "%s: outliers %g must lie in [1, 1000] (0: off)", what,
                   (double)c->outliers);
  return AIT_OK;
}

static bool is_explicit(const ait_backend_config *cfg, const char *key) {
  for (int i = 0; i < cfg->n; i++)
    if (!strcmp(cfg->keys[i], key)) return true;
  return false;
}

/* "MatMul+Gemm" into a QNT_OP_* mask. */
static ait_status parse_ops(const char *s, unsigned *mask) {
  *mask = 0;
  char buf[64];
  snprintf(buf, sizeof buf, "%s", s);
  for (char *save = NULL, *t = strtok_r(buf, "+", &save); t; t = strtok_r(NULL, "+", &save)) {
    int k = find_name(op_names, 4, t);
    if (k < 0)
      return ait_err(AIT_E_INVALID_ARG, "quant: ops: '%s' is not one of MatMul, Gemm, Conv, Gather",
                     t);
    *mask |= 1u << k;
  }
  if (!*mask) return ait_err(AIT_E_INVALID_ARG, "quant: ops names no op type");
  return AIT_OK;
}

/* "pat1+pat2" into the exclude list. */
static ait_status parse_exclude(const char *s, qnt_config *c) {
  char buf[64];
  snprintf(buf, sizeof buf, "%s", s);
  c->n_exclude = 0;
  for (char *save = NULL, *t = strtok_r(buf, "+", &save); t; t = strtok_r(NULL, "+", &save)) {
    if (c->n_exclude == QNT_MAX_EXCLUDE)
      return ait_err(AIT_E_INVALID_ARG, "quant: more than %d exclude patterns", QNT_MAX_EXCLUDE);
    snprintf(c->exclude[c->n_exclude++], sizeof c->exclude[0], "%s", t);
  }
  return AIT_OK;
}

static ait_status custom_from_options(const ait_backend_config *cfg, qnt_config *c) {
  c->preset[0] = '\0';
  const char *w = ait_backend_config_get(cfg, "weights");
  const char *gr = ait_backend_config_get(cfg, "granularity");
  const char *sc = ait_backend_config_get(cfg, "scale");
  const char *sym = ait_backend_config_get(cfg, "symmetric");
  const char *act = ait_backend_config_get(cfg, "act");
  const char *pct = ait_backend_config_get(cfg, "percentile");
  const char *outl = ait_backend_config_get(cfg, "outliers");
  const char *attn = ait_backend_config_get(cfg, "attention");
  int wi = find_name(wtype_names, 4, w), gi = find_name(gran_names, 3, gr);
  if (wi < 0 || gi < 0)
    return ait_err(AIT_E_INVALID_ARG, "quant: weights=%s / granularity=%s not understood",
                   w ? w : "?", gr ? gr : "?");
  c->weights = (qnt_wtype)wi;
  c->gran = (qnt_gran)gi;
  c->group = c->gran == QNT_GROUP ? ait_backend_config_int(cfg, "group", 128) : 0;
  c->symmetric = !sym || strcmp(sym, "off") != 0;
  c->percentile = sc && !strcmp(sc, "percentile");
  c->pct = pct ? strtod(pct, NULL) : 99.99;
  c->act = act && !strcmp(act, "on");
  c->outliers = outl ? strtof(outl, NULL) : 0.0f;
  c->attn_bf16 = attn && !strcmp(attn, "bf16");
  if (is_explicit(cfg, "group") && c->gran != QNT_GROUP)
    return ait_err(AIT_E_INVALID_ARG, "quant: group=%s needs granularity=group (it is %s)",
                   ait_backend_config_get(cfg, "group"), gran_names[c->gran]);
  if (is_explicit(cfg, "percentile") && !c->percentile)
    return ait_err(AIT_E_INVALID_ARG, "quant: percentile=%s needs scale=percentile", pct);
  return check_custom(c, "quant");
}

static ait_status config_from_file(const char *path, qnt_config *c, bool *has_filter) {
  void *text = NULL;
  size_t size = 0;
  ait_status st = ait_read_file(path, &text, &size);
  if (st) return ait_err_prefix(st, "quant: config=%s", path);
  char what[128];
  snprintf(what, sizeof what, "quant config %s", path);
  st = qnt_config_parse_json(text, what, c, has_filter);
  free(text);
  return st;
}

ait_status qnt_config_resolve(const ait_backend_config *cfg, qnt_config *out) {
  qnt_config c;
  memset(&c, 0, sizeof c);
  filter_defaults(&c);
  const char *custom = NULL;
  for (size_t i = 0; i < sizeof custom_keys / sizeof custom_keys[0] && !custom; i++)
    if (is_explicit(cfg, custom_keys[i])) custom = custom_keys[i];
  bool file_filter = false;
  if (is_explicit(cfg, "config")) {
    if (is_explicit(cfg, "preset") || custom)
      return ait_err(AIT_E_INVALID_ARG,
                     "quant: config=%s gives the quantization; do not also set %s=%s (the file "
                     "holds either a preset or a custom configuration)",
                     ait_backend_config_get(cfg, "config"), custom ? custom : "preset",
                     ait_backend_config_get(cfg, custom ? custom : "preset"));
    AIT_TRY(config_from_file(ait_backend_config_get(cfg, "config"), &c, &file_filter));
  } else if (custom && is_explicit(cfg, "preset")) {
    return ait_err(AIT_E_INVALID_ARG,
                   "quant: preset=%s and the custom option %s=%s together: a preset fixes every "
                   "quantization setting; drop preset= for a custom configuration or drop %s= "
                   "to use the preset",
                   ait_backend_config_get(cfg, "preset"), custom,
                   ait_backend_config_get(cfg, custom), custom);
  } else if (custom) {
    AIT_TRY(custom_from_options(cfg, &c));
  } else {
    const char *name = ait_backend_config_get(cfg, "preset");
    const preset *p = find_preset(name ? name : "fp8wo");
    if (!p) return ait_err(AIT_E_INVALID_ARG, "quant: unknown preset '%s'", name ? name : "");
    apply_preset(p, &c);
  }
  /* filter options on the backend string add to (override) the file's */
  const char *ops = ait_backend_config_get(cfg, "ops");
  if (is_explicit(cfg, "ops") || (!file_filter && ops)) AIT_TRY(parse_ops(ops, &c.ops));
  const char *ex = ait_backend_config_get(cfg, "exclude");
  if (is_explicit(cfg, "exclude") && ex) AIT_TRY(parse_exclude(ex, &c));
  if (is_explicit(cfg, "min_weight") || !file_filter)
    c.min_weight = ait_backend_config_int(cfg, "min_weight", 0);
  qnt_config_runtime(cfg, &c);
  *out = c;
  return AIT_OK;
}

static qnt_isa isa_of(const char *name) {
  static const char *const names[] = {[QNT_ISA_AUTO] = "auto",
                                      [QNT_ISA_AVX512] = "avx512",
                                      [QNT_ISA_AVX2] = "avx2",
                                      [QNT_ISA_PORTABLE] = "portable"};
  for (int i = 0; name && i < (int)(sizeof names / sizeof names[0]); i++)
    if (!strcmp(name, names[i])) return (qnt_isa)i;
  return QNT_ISA_AUTO;
}

void qnt_config_runtime(const ait_backend_config *cfg, qnt_config *c) {
  c->threads = (int)ait_backend_config_int(cfg, "threads", 0);
  if (c->threads <= 0) {
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    c->threads = online > 0 ? (int)online : 1;
  }
  c->isa = isa_of(ait_backend_config_get(cfg, "isa"));
  c->kernels = isa_of(ait_backend_config_get(cfg, "kernels"));
}

bool qnt_config_same_quant(const qnt_config *a, const qnt_config *b) {
  return a->weights == b->weights && a->gran == b->gran && a->group == b->group &&
         a->symmetric == b->symmetric && a->percentile == b->percentile &&
         (!a->percentile || a->pct == b->pct) && a->act == b->act && a->outliers == b->outliers &&
         a->attn_bf16 == b->attn_bf16;
}

/* ---- JSON ---------------------------------------------------------------- */

static ait_status json_err(const char *what, const char *msg, const char *key) {
  return ait_err(AIT_E_INVALID_ARG, "%s: %s%s%s", what, msg, key ? " " : "", key ? key : "");
}

static ait_status parse_filter(const cJSON *f, const char *what, qnt_config *c) {
  if (!cJSON_IsObject(f)) return json_err(what, "\"filter\" must be an object", NULL);
  for (const cJSON *it = f->child; it; it = it->next) {
    if (!strcmp(it->string, "ops")) {
      if (!cJSON_IsArray(it)) return json_err(what, "filter.ops must be an array of", "op names");
      c->ops = 0;
      for (const cJSON *o = it->child; o; o = o->next) {
        int k = cJSON_IsString(o) ? find_name(op_names, 4, o->valuestring) : -1;
        if (k < 0)
          return json_err(what,
                          "filter.ops: not one of MatMul, Gemm, Conv, Gather:", o->valuestring);
        c->ops |= 1u << k;
      }
      if (!c->ops) return json_err(what, "filter.ops is empty", NULL);
    } else if (!strcmp(it->string, "exclude")) {
      if (!cJSON_IsArray(it))
        return json_err(what, "filter.exclude must be an array of", "patterns");
      c->n_exclude = 0;
      for (const cJSON *o = it->child; o; o = o->next) {
        if (!cJSON_IsString(o) || strlen(o->valuestring) >= sizeof c->exclude[0])
          return json_err(what, "filter.exclude: patterns are strings of at most 63 bytes", NULL);
        if (c->n_exclude == QNT_MAX_EXCLUDE)
          return json_err(what, "filter.exclude: more than 8 patterns", NULL);
        snprintf(c->exclude[c->n_exclude++], sizeof c->exclude[0], "%s", o->valuestring);
      }
    } else if (!strcmp(it->string, "min_weight")) {
      if (!cJSON_IsNumber(it) || it->valuedouble < 0)
        return json_err(what, "filter.min_weight must be a number >= 0", NULL);
      c->min_weight = (int64_t)it->valuedouble;
    } else {
      return json_err(what, "unknown key in \"filter\":", it->string);
    }
  }
  return AIT_OK;
}

static ait_status parse_custom(const cJSON *q, const char *what, qnt_config *c) {
  c->preset[0] = '\0';
  c->weights = QNT_INT8;
  c->gran = QNT_CHANNEL;
  c->group = 0;
  c->symmetric = true;
  c->percentile = false;
  c->pct = 99.99;
  c->act = false;
  c->outliers = 0;
  c->attn_bf16 = false;
  bool gran_set = false;
  for (const cJSON *it = q->child; it; it = it->next) {
    const char *k = it->string, *s = cJSON_IsString(it) ? it->valuestring : NULL;
    if (!strcmp(k, "weights")) {
      int i = find_name(wtype_names, 4, s);
      if (i < 0)
        return json_err(what, "weights must be int8, fp8, mxfp8 or nvfp4, not", s ? s : "?");
      c->weights = (qnt_wtype)i;
    } else if (!strcmp(k, "granularity")) {
      int i = find_name(gran_names, 3, s);
      if (i < 0)
        return json_err(what, "granularity must be tensor, channel or group, not", s ? s : "?");
      c->gran = (qnt_gran)i;
      gran_set = true;
    } else if (!strcmp(k, "group_size")) {
      if (!cJSON_IsNumber(it)) return json_err(what, "group_size must be a number", NULL);
      c->group = (int64_t)it->valuedouble;
    } else if (!strcmp(k, "symmetric")) {
      if (!cJSON_IsBool(it)) return json_err(what, "symmetric must be true or false", NULL);
      c->symmetric = cJSON_IsTrue(it);
    } else if (!strcmp(k, "scale")) {
      if (!s || (strcmp(s, "absmax") && strcmp(s, "percentile")))
        return json_err(what, "scale must be absmax or percentile, not", s ? s : "?");
      c->percentile = !strcmp(s, "percentile");
    } else if (!strcmp(k, "percentile")) {
      if (!cJSON_IsNumber(it)) return json_err(what, "percentile must be a number", NULL);
      c->pct = it->valuedouble;
    } else if (!strcmp(k, "activations")) {
      if (!s || (strcmp(s, "dynamic") && strcmp(s, "none")))
        return json_err(what, "activations must be dynamic or none, not", s ? s : "?");
      c->act = !strcmp(s, "dynamic");
    } else if (!strcmp(k, "activation_outliers")) {
      if (!cJSON_IsNumber(it))
        return json_err(what, "activation_outliers must be a number (0: off)", NULL);
      c->outliers = (float)it->valuedouble;
    } else if (!strcmp(k, "attention")) {
      if (!s || (strcmp(s, "fp32") && strcmp(s, "bf16")))
        return json_err(what, "attention must be fp32 or bf16, not", s ? s : "?");
      c->attn_bf16 = !strcmp(s, "bf16");
    } else {
      return json_err(what, "unknown key in \"quantization\":", k);
    }
  }
  if ((c->weights == QNT_MXFP8 || c->weights == QNT_NVFP4) && !gran_set) c->gran = QNT_GROUP;
  if (c->gran == QNT_GROUP && !c->group && c->weights < QNT_MXFP8) c->group = 128;
  return check_custom(c, what);
}

ait_status qnt_config_parse_json(const char *text, const char *what, qnt_config *out,
                                 bool *has_filter) {
  cJSON *root = cJSON_Parse(text);
  if (!root) return json_err(what, "is not valid JSON", NULL);
  qnt_config c = *out;
  filter_defaults(&c);
  *has_filter = false;
  ait_status st = AIT_OK;
  const cJSON *q = NULL;
  const char *from_preset = NULL;
  if (!cJSON_IsObject(root)) st = json_err(what, "must be a JSON object", NULL);
  for (const cJSON *it = root->child; !st && it; it = it->next) {
    if (!strcmp(it->string, "quantization"))
      q = it;
    else if (!strcmp(it->string, "filter")) {
      st = parse_filter(it, what, &c);
      *has_filter = true;
    } else if (!strcmp(it->string, "preset"))
      st =
          json_err(what, "write a preset as {\"quantization\": \"NAME\"}; a \"preset\" key next to",
                   "\"quantization\" would mix a preset with a custom configuration");
    else if (!strcmp(it->string, "from_preset"))
      from_preset = cJSON_IsString(it) ? it->valuestring : NULL;
    else if (strcmp(it->string, "format") && strcmp(it->string, "version"))
      st = json_err(what, "unknown key", it->string);
  }
  if (!st && !q)
    st = json_err(what, "needs a \"quantization\" key (a preset name or an object)", NULL);
  if (!st && cJSON_IsString(q)) {
    const preset *p = find_preset(q->valuestring);
    if (!p)
      st = json_err(
          what, "unknown preset (int8wo, int8dq, fp8wo, fp8dq, mxfp8dq, nvfp4dq):", q->valuestring);
    else
      apply_preset(p, &c);
  } else if (!st && cJSON_IsObject(q)) {
    st = parse_custom(q, what, &c);
    /* an artifact's record of a preset keeps its name for messages */
    if (!st && from_preset && find_preset(from_preset))
      snprintf(c.preset, sizeof c.preset, "%s", from_preset);
  } else if (!st) {
    st = json_err(what, "\"quantization\" must be a preset name or an object", NULL);
  }
  cJSON_Delete(root);
  if (!st) *out = c;
  return st;
}

char *qnt_config_to_json(const qnt_config *c) {
  cJSON *root = cJSON_CreateObject(), *q = cJSON_CreateObject(), *f = cJSON_CreateObject();
  cJSON *ops = cJSON_CreateArray(), *ex = cJSON_CreateArray();
  char *text = NULL;
  if (!root || !q || !f || !ops || !ex) goto out;
  cJSON_AddStringToObject(root, "format", "aitune-quant-config");
  cJSON_AddNumberToObject(root, "version", 1);
  if (c->preset[0]) cJSON_AddStringToObject(root, "from_preset", c->preset);
  cJSON_AddStringToObject(q, "weights", wtype_names[c->weights]);
  cJSON_AddStringToObject(q, "granularity", gran_names[c->gran]);
  if (c->gran == QNT_GROUP) cJSON_AddNumberToObject(q, "group_size", (double)c->group);
  cJSON_AddBoolToObject(q, "symmetric", c->symmetric);
  cJSON_AddStringToObject(q, "scale", c->percentile ? "percentile" : "absmax");
  if (c->percentile) cJSON_AddNumberToObject(q, "percentile", c->pct);
  cJSON_AddStringToObject(q, "activations", c->act ? "dynamic" : "none");
  if (c->outliers > 0) cJSON_AddNumberToObject(q, "activation_outliers", c->outliers);
  cJSON_AddStringToObject(q, "attention", c->attn_bf16 ? "bf16" : "fp32");
  cJSON_AddItemToObject(root, "quantization", q);
  q = NULL;
  for (int k = 0; k < 4; k++)
    if (c->ops & (1u << k)) cJSON_AddItemToArray(ops, cJSON_CreateString(op_names[k]));
  cJSON_AddItemToObject(f, "ops", ops);
  ops = NULL;
  for (int k = 0; k < c->n_exclude; k++)
    cJSON_AddItemToArray(ex, cJSON_CreateString(c->exclude[k]));
  cJSON_AddItemToObject(f, "exclude", ex);
  ex = NULL;
  cJSON_AddNumberToObject(f, "min_weight", (double)c->min_weight);
  cJSON_AddItemToObject(root, "filter", f);
  f = NULL;
  text = cJSON_Print(root);
out:
  cJSON_Delete(root);
  cJSON_Delete(q);
  cJSON_Delete(f);
  cJSON_Delete(ops);
  cJSON_Delete(ex);
  return text;
}

const char *qnt_config_precision(const qnt_config *c) {
  switch (c->weights) {
  case QNT_INT8: return "int8";
  case QNT_FP8:
  case QNT_MXFP8: return "fp8";
  case QNT_NVFP4: return "fp4";
  }
  return "int8";
}

const char *qnt_config_label(const qnt_config *c, char *buf, size_t n) {
  if (c->preset[0]) {
    snprintf(buf, n, "%s", c->preset);
    return buf;
  }
  char g[32] = "";
  if (c->gran == QNT_GROUP) snprintf(g, sizeof g, "(%lld)", (long long)c->group);
  char o[32] = "";
  if (c->outliers > 0) snprintf(o, sizeof o, " outliers(%g)", (double)c->outliers);
  snprintf(buf, n, "custom %s per-%s%s%s%s%s%s%s", wtype_names[c->weights], gran_names[c->gran], g,
           c->symmetric ? "" : " asymmetric", c->percentile ? " percentile" : "",
           c->act ? " dynamic-activations" : "", o, c->attn_bf16 ? " bf16-attention" : "");
  return buf;
}
