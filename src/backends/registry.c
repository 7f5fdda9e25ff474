/* The backend table and backend configurations ("native:threads=2"). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/defaults.h"
#include "backends/plugin/plugin.h"

#include "core/error.h"
#include <cjson/cJSON.h>

extern const ait_backend_iface ait_backend_eager;
extern const ait_backend_iface ait_backend_native;
extern const ait_backend_iface ait_backend_onednn;
extern const ait_backend_iface ait_backend_xnnpack;
extern const ait_backend_iface ait_backend_quant;
extern const ait_backend_iface ait_backend_openvino;

/* Built-ins in preference order (first-wins tries them in this order when
 * the user names none: the GPU first); tests may append more at run time.
 * The cuda row is filled on first use: its plugin is loaded then
 * (plugin/cuda_row.c). */
#define CUDA_ROW 1
static const ait_backend_iface *table[32] = {&ait_backend_eager,   NULL,
                                             &ait_backend_native,  &ait_backend_onednn,
                                             &ait_backend_xnnpack, &ait_backend_quant,
                                             &ait_backend_openvino};
static int n_table = 7;
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_fill(void) { table[CUDA_ROW] = ait_cuda_backend(); }
#define TABLE_READY() pthread_once(&table_once, table_fill)

int ait_backend_count(void) {
  TABLE_READY();
  return n_table;
}

const ait_backend_iface *ait_backend_at(int i) {
  TABLE_READY();
  return i >= 0 && i < n_table ? table[i] : NULL;
}

const ait_backend_iface *ait_backend_find(const char *name) {
  TABLE_READY();
  for (int i = 0; i < n_table; i++)
    if (!strcmp(table[i]->name, name)) return table[i];
  return NULL;
}

ait_status ait_backend_replace(const ait_backend_iface *iface) {
  TABLE_READY();
  for (int i = 0; i < n_table; i++)
    if (!strcmp(table[i]->name, iface->name)) {
      table[i] = iface;
      return AIT_OK;
    }
  return ait_err(AIT_E_NOT_FOUND, "no backend named '%s' to replace", iface->name);
}

/* ---- defaults (backends/defaults.h) ----------------------------------------
 * Candidates the tuner adds when the caller names no backends, beyond the
 * backends' own variants (quant has none: it changes numerics on purpose).
 * int8 weights first: a quarter of the weight memory, so the one added
 * under memory pressure; int8 activations too (int8dq) where the CPU has
 * int8 dot products to make them pay. */
static const ait_added_candidate added_candidates[] = {
    {"quant:preset=int8wo", AIT_ADD_UNDER_PRESSURE | AIT_ADD_REDUCED_INT8},
    {"quant:preset=int8dq", AIT_ADD_REDUCED_INT8},
};

const ait_added_candidate *ait_backend_added_candidates(int *n) {
  *n = (int)(sizeof added_candidates / sizeof added_candidates[0]);
  return added_candidates;
}

/* Where a partition runs what its backend refuses: the fastest general
 * backend that runs every op, else the reference. */
static const char *const fallback_order[] = {"native", "eager"};

void ait_backend_fallback(ait_backend_config *out) {
  for (size_t i = 0; i < sizeof fallback_order / sizeof fallback_order[0]; i++) {
    const ait_backend_iface *b = ait_backend_find(fallback_order[i]);
    char why[256];
    if (b && b->available(why, sizeof why) &&
        ait_backend_config_parse(fallback_order[i], out) == AIT_OK)
      return;
  }
  ait_backend_config_parse("eager", out); /* the reference is always there */
}

ait_status ait_backend_register(const ait_backend_iface *iface) {
  if (ait_backend_find(iface->name))
    return ait_err(AIT_E_INVALID_ARG, "a backend named '%s' is already registered", iface->name);
  if (n_table == (int)(sizeof table / sizeof table[0]))
    return ait_err(AIT_E_NOMEM, "the backend table is full");
  table[n_table++] = iface;
  return AIT_OK;
}

static const ait_option_def *find_opt(const ait_backend_iface *b, const char *key) {
  for (int i = 0; i < b->n_options; i++)
    if (!strcmp(b->options[i].name, key)) return &b->options[i];
  return NULL;
}

/* The first enum option that lists `v` among its choices ("a|b|c"). */
static const ait_option_def *enum_with_choice(const ait_backend_iface *b, const char *v) {
  size_t n = strlen(v);
  for (int i = 0; i < b->n_options; i++) {
    const ait_option_def *o = &b->options[i];
    if (o->type != AIT_OPT_ENUM) continue;
    for (const char *c = o->choices; c && *c;) {
      const char *bar = strchr(c, '|');
      size_t len = bar ? (size_t)(bar - c) : strlen(c);
      if (len == n && !strncmp(c, v, n)) return o;
      c = bar ? bar + 1 : c + len;
    }
  }
  return NULL;
}

/* Check value text against the option's type and choices. */
static ait_status check_value(const ait_backend_iface *b, const ait_option_def *o, const char *v) {
  char *end = NULL;
  switch (o->type) {
  case AIT_OPT_INT: {
    if (!strcmp(v, "auto") && o->def && !strcmp(o->def, "auto")) return AIT_OK;
    long long x = strtoll(v, &end, 10);
    long long lo, hi;
    if (!*v || *end) break;
    if (o->choices && sscanf(o->choices, "%lld..%lld", &lo, &hi) == 2 && (x < lo || x > hi))
      return ait_err(AIT_E_INVALID_ARG, "%s: option %s=%s is outside %s", b->name, o->name, v,
                     o->choices);
    return AIT_OK;
  }
  case AIT_OPT_FLOAT:
    strtod(v, &end);
    if (*v && !*end) return AIT_OK;
    break;
  case AIT_OPT_BOOL:
    if (!strcmp(v, "on") || !strcmp(v, "off")) return AIT_OK;
    break;
  case AIT_OPT_STRING: return AIT_OK; /* commas end the value; anything else goes */
  case AIT_OPT_ENUM: {
    size_t n = strlen(v);
    for (const char *c = o->choices; c && *c;) {
      const char *bar = strchr(c, '|');
      size_t len = bar ? (size_t)(bar - c) : strlen(c);
      if (len == n && !strncmp(c, v, n)) return AIT_OK;
      c = bar ? bar + 1 : c + len;
    }
    return ait_err(AIT_E_INVALID_ARG, "%s: option %s=%s is not one of %s", b->name, o->name, v,
                   o->choices);
  }
  }
  return ait_err(AIT_E_INVALID_ARG, "%s: option %s=%s is not a valid %s", b->name, o->name, v,
                 o->type == AIT_OPT_INT     ? "integer"
                 : o->type == AIT_OPT_FLOAT ? "number"
                                            : "on/off value");
}

ait_status ait_backend_config_parse(const char *spec, ait_backend_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  if (!spec || !*spec) return ait_err(AIT_E_INVALID_ARG, "empty backend name");
  const char *colon = strchr(spec, ':');
  char name[64];
  size_t nl = colon ? (size_t)(colon - spec) : strlen(spec);
  if (nl >= sizeof name) return ait_err(AIT_E_INVALID_ARG, "backend name too long in '%s'", spec);
  memcpy(name, spec, nl);
  name[nl] = '\0';
  const ait_backend_iface *b = ait_backend_find(name);
  if (!b) {
    char avail[256] = "";
    for (int i = 0; i < n_table; i++)
      snprintf(avail + strlen(avail), sizeof avail - strlen(avail), "%s%s", i ? ", " : "",
               table[i]->name);
    return ait_err(AIT_E_NOT_FOUND, "no backend named '%s' (known: %s)", name, avail);
  }
  cfg->iface = b;
  for (const char *p = colon ? colon + 1 : NULL; p && *p;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    const char *eq = memchr(p, '=', len);
    if (eq == p)
      return ait_err(AIT_E_INVALID_ARG, "%s: expected key=value in '%.*s'", name, (int)len, p);
    char key[32], val[sizeof cfg->vals[0]];
    if (!eq) { /* a bare value names an enum choice: "quant:int8dq", "onednn:bf16" */
      if (len >= sizeof val)
        return ait_err(AIT_E_INVALID_ARG, "%s: option '%.*s' is too long", name, (int)len, p);
      memcpy(val, p, len);
      val[len] = '\0';
      const ait_option_def *o = enum_with_choice(b, val);
      if (!o)
        return ait_err(AIT_E_INVALID_ARG, "%s: '%s' is not key=value nor a choice of any option",
                       name, val);
      snprintf(key, sizeof key, "%s", o->name);
    } else {
      size_t kl = (size_t)(eq - p), vl = len - kl - 1;
      if (kl >= sizeof cfg->keys[0] || vl >= sizeof cfg->vals[0] || cfg->n == AIT_MAX_OPTS)
        return ait_err(AIT_E_INVALID_ARG, "%s: option '%.*s' is too long", name, (int)len, p);
      memcpy(key, p, kl);
      key[kl] = '\0';
      memcpy(val, eq + 1, vl);
      val[vl] = '\0';
    }
    if (cfg->n == AIT_MAX_OPTS) return ait_err(AIT_E_INVALID_ARG, "%s: too many options", name);
    const ait_option_def *o = find_opt(b, key);
    if (!o) return ait_err(AIT_E_INVALID_ARG, "backend %s has no option '%s'", name, key);
    AIT_TRY(check_value(b, o, val));
    int at = cfg->n;
    for (int i = 0; i < cfg->n; i++)
      if (!strcmp(cfg->keys[i], key)) at = i; /* a repeated key: the last one wins */
    strcpy(cfg->keys[at], key);
    strcpy(cfg->vals[at], val);
    if (at == cfg->n) cfg->n++;
    p = comma ? comma + 1 : NULL;
  }
  return AIT_OK;
}

const char *ait_backend_config_get(const ait_backend_config *cfg, const char *key) {
  for (int i = 0; i < cfg->n; i++)
    if (!strcmp(cfg->keys[i], key)) return cfg->vals[i];
  const ait_option_def *o = find_opt(cfg->iface, key);
  return o ? o->def : NULL;
}

int64_t ait_backend_config_int(const ait_backend_config *cfg, const char *key, int64_t def) {
  const char *v = ait_backend_config_get(cfg, key);
  if (!v || !strcmp(v, "auto")) return def;
  return strtoll(v, NULL, 10);
}

/* Indices of the options that differ from their default, sorted by key. */
static int non_default(const ait_backend_config *cfg, int *idx) {
  int n = 0;
  for (int i = 0; i < cfg->n; i++) {
    const ait_option_def *o = find_opt(cfg->iface, cfg->keys[i]);
    if (o && o->def && !strcmp(o->def, cfg->vals[i])) continue;
    int j = n++;
    while (j > 0 && strcmp(cfg->keys[idx[j - 1]], cfg->keys[i]) > 0) {
      idx[j] = idx[j - 1];
      j--;
    }
    idx[j] = i;
  }
  return n;
}

const char *ait_backend_describe(const ait_backend_config *cfg, char *buf, size_t n) {
  int idx[AIT_MAX_OPTS];
  int k = non_default(cfg, idx);
  size_t at = (size_t)snprintf(buf, n, "%s", cfg->iface->name);
  for (int i = 0; i < k && at < n; i++)
    at += (size_t)snprintf(buf + at, n - at, "%s%s=%s", i ? "," : ":", cfg->keys[idx[i]],
                           cfg->vals[idx[i]]);
  return buf;
}

const char *ait_backend_key(const ait_backend_config *cfg, char *buf, size_t n) {
  char desc[4200];
  ait_backend_describe(cfg, desc, sizeof desc);
  uint32_t h = 2166136261u; /* FNV-1a of the canonical description */
  for (const char *p = desc; *p; p++)
    h = (h ^ (uint8_t)*p) * 16777619u;
  snprintf(buf, n, "%s-%08x", cfg->iface->name, h);
  return buf;
}

cJSON *ait_backend_config_cjson(const ait_backend_config *cfg) {
  int idx[AIT_MAX_OPTS];
  int k = non_default(cfg, idx);
  cJSON *j = cJSON_CreateObject();
  cJSON *opts = j && cJSON_AddStringToObject(j, "backend", cfg->iface->name)
                    ? cJSON_AddObjectToObject(j, "options")
                    : NULL;
  bool ok = opts != NULL;
  /* through cJSON: a value is the user's text (a config path may hold quotes) */
  for (int i = 0; ok && i < k; i++)
    ok = cJSON_AddStringToObject(opts, cfg->keys[idx[i]], cfg->vals[idx[i]]) != NULL;
  if (!ok) {
    cJSON_Delete(j);
    return NULL;
  }
  return j;
}

ait_status ait_backend_config_from_json(const char *json, ait_backend_config *cfg) {
  cJSON *root = cJSON_Parse(json);
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(root, "backend");
  const cJSON *opts = cJSON_GetObjectItemCaseSensitive(root, "options"), *o;
  if (!cJSON_IsString(name) || (opts && !cJSON_IsObject(opts))) {
    cJSON_Delete(root);
    return ait_err(AIT_E_PARSE,
                   "a backend configuration must be {\"backend\": NAME, \"options\": {...}}");
  }
  char spec[1200];
  size_t at = (size_t)snprintf(spec, sizeof spec, "%s", name->valuestring);
  int k = 0;
  cJSON_ArrayForEach(o, opts) {
    char val[256];
    if (cJSON_IsString(o))
      snprintf(val, sizeof val, "%s", o->valuestring);
    else if (cJSON_IsNumber(o))
      snprintf(val, sizeof val, "%g", o->valuedouble);
    else if (cJSON_IsBool(o))
      snprintf(val, sizeof val, "%s", cJSON_IsTrue(o) ? "on" : "off");
    else {
      cJSON_Delete(root);
      return ait_err(AIT_E_PARSE, "backend option '%s' must be a string, number or boolean",
                     o->string);
    }
    if (at < sizeof spec)
      at +=
          (size_t)snprintf(spec + at, sizeof spec - at, "%s%s=%s", k++ ? "," : ":", o->string, val);
  }
  cJSON_Delete(root);
  if (at >= sizeof spec) return ait_err(AIT_E_INVALID_ARG, "backend configuration too long");
  return ait_backend_config_parse(spec, cfg);
}
