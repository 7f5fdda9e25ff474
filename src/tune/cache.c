/* The decision cache: where it is, the key (one value per row of the option
 * table, src/tune/options.c), and tuning through it: an entry for the key is
 * loaded and adopted, else the tuner runs and its decision is stored. Entries
 * are tuned folders (artifact.c). */
#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "core/fileio.h"
#include "hw/fingerprint.h"
#include "tune/module_impl.h"
#include "tune/options.h"

const char *ait_cache_root(const ait_tune_options *o, char *buf, size_t n) {
  const char *env = getenv("AITUNE_CACHE_DIR"), *home = getenv("HOME");
  if (o->cache_dir)
    snprintf(buf, n, "%s", o->cache_dir);
  else if (env && *env)
    snprintf(buf, n, "%s", env);
  else if (home && *home)
    snprintf(buf, n, "%s/.cache/aitune", home);
  else
    buf[0] = '\0';
  return buf;
}

/* ---- the cache key ----------------------------------------------------------
 * The SHA-256 of "aitune VERSION|model SHA|spec JSON|row=value|...": one
 * value per row of the option table (src/tune/options.c) that is in the key,
 * then the environment variables of key_env. The fingerprint is not in the
 * key: it is checked against the entry, so a change can be reported. */

static int key_put(char *k, size_t cap, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int key_put(char *k, size_t cap, size_t at, const char *fmt, ...) {
  if (at >= cap) return 0;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(k + at, cap - at, fmt, ap);
  va_end(ap);
  return n < 0 ? 0 : n;
}

static ait_mem_level memory_level(const ait_tune_options *o) {
  ait_mem_thresholds thr;
  ait_mem_thresholds_init(&thr);
  if (ait_mem_thresholds_from_env(&thr)) ait_err_clear(); /* the tune itself reports it */
  ait_mem_reading now;
  const ait_mem_reading *r = o->mem_reading;
  if (!r && ait_mem_read(&now) == AIT_OK) r = &now;
  return r ? ait_mem_pressure(r, &thr) : AIT_MEM_LOW;
}

/* The SHA-256 of the file named by a `config=` option of backend spec b
 * ("quant:config=/x.json,threads=2"); false when there is none (or it cannot
 * be read: then the build will say so). */
static bool config_digest(const char *b, char *hex65) {
  const char *c = strchr(b, ':');
  while (c) {
    c++;
    if (!strncmp(c, "config=", 7)) {
      char path[4096];
      size_t n = strcspn(c + 7, ",");
      if (n >= sizeof path) return false;
      memcpy(path, c + 7, n);
      path[n] = '\0';
      return ait_sha256_file(path, hex65) == 0;
    }
    c = strchr(c, ',');
  }
  return false;
}

/* Environment variables that change what a candidate computes or how fast
 * (the memory thresholds, AITUNE_MEM_*, enter through the memory level). */
static const char *const key_env[] = {"AIT_MAX_ISA"};

/* One row's value, appended to k at `at`; returns the length written. */
static size_t key_value(const ait_option_row *r, const ait_tune_options *o, char *k, size_t cap,
                        size_t at) {
  const char *f = (const char *)o + r->off;
  size_t start = at;
  switch (r->key) {
  case AIT_KEY_NONE:
  case AIT_KEY_PART: break; /* not in the key, or read with its row */
  case AIT_KEY_INT: at += (size_t)key_put(k, cap, at, "%d", *(const int *)(const void *)f); break;
  case AIT_KEY_ENUM:
    at += (size_t)key_put(k, cap, at, "%d", (int)*(const ait_strategy *)(const void *)f);
    break;
  case AIT_KEY_DBL:
    at += (size_t)key_put(k, cap, at, "%.17g", *(const double *)(const void *)f);
    break;
  case AIT_KEY_PRECISION: /* NULL and "fp32" are one policy */
    at += (size_t)key_put(k, cap, at, "%s", o->precision ? o->precision : "fp32");
    break;
  case AIT_KEY_BACKENDS:
    if (!o->backends) at += (size_t)key_put(k, cap, at, "(all available)");
    for (size_t i = 0; o->backends && i < o->n_backends; i++) {
      const char *b = o->backends[i] ? o->backends[i] : "";
      char digest[65];
      at += (size_t)key_put(k, cap, at, "%s", b);
      /* a config=FILE option names a file whose contents decide (quant's presets) */
      if (config_digest(b, digest)) at += (size_t)key_put(k, cap, at, "@%s", digest);
      at += (size_t)key_put(k, cap, at, "\x1f");
    }
    break;
  case AIT_KEY_BATCHES:
    for (size_t i = 0; o->batch_sizes && i < o->n_batch_sizes; i++)
      at += (size_t)key_put(k, cap, at, "%d,", o->batch_sizes[i]);
    break;
  case AIT_KEY_FILTER: /* a caller's function: only the same one (and user) may share a decision */
    if (o->node_filter)
      at += (size_t)key_put(k, cap, at, "%p/%p", (void *)(uintptr_t)o->node_filter,
                            o->node_filter_user);
    break;
  case AIT_KEY_MEMORY: at += (size_t)key_put(k, cap, at, "%d", (int)memory_level(o)); break;
  }
  return at - start;
}

void ait_cache_key(const ait_module *m, const ait_tune_options *o, char *hex65) {
  char *spec = ait_spec_json(&m->spec);
  size_t cap = 16384, at = 0;
  char *k = malloc(cap);
  if (!k || !spec) { /* no key: an impossible one, so nothing is served */
    free(k);
    free(spec);
    snprintf(hex65, 65, "%064d", 0);
    return;
  }
  at += (size_t)key_put(k, cap, at, "aitune %s|model %s|spec %s", AIT_VERSION_STRING, m->model_sha,
                        spec);
  size_t n_rows;
  const ait_option_row *rows = ait_option_rows(&n_rows);
  for (size_t i = 0; i < n_rows; i++) {
    if (rows[i].key == AIT_KEY_NONE || rows[i].key == AIT_KEY_PART) continue;
    at += (size_t)key_put(k, cap, at, "|%s=", rows[i].name);
    at += key_value(&rows[i], o, k, cap, at);
  }
  for (size_t i = 0; i < sizeof key_env / sizeof key_env[0]; i++) {
    const char *v = getenv(key_env[i]);
    at += (size_t)key_put(k, cap, at, "|$%s=%s", key_env[i], v ? v : "");
  }
  ait_sha256_hex(k, at < cap ? at : cap - 1, hex65);
  free(k);
  free(spec);
}

/* Adopt a loaded cache entry's decision into m. */
static void adopt(ait_module *m, ait_module *e) {
  ait_mod_drop_state(m);
  m->cfg = e->cfg;
  snprintf(m->desc, sizeof m->desc, "%s", e->desc);
  m->run = e->run;
  e->run.state = NULL;
  m->batch = e->batch;
  m->spec = e->spec;
  free(m->report_json);
  m->report_json = NULL;
  cJSON *r = e->report_json ? cJSON_Parse(e->report_json) : NULL;
  if (r) {
    cJSON_ReplaceItemInObjectCaseSensitive(r, "from_cache", cJSON_CreateBool(1));
    m->report_json = cJSON_Print(r);
    cJSON_Delete(r);
  }
  m->tuned = true;
}

ait_status ait_mod_tune(ait_module *m, const ait_tune_options *opts) {
  ait_tune_options o;
  AIT_TRY(ait_tune_options_take(opts, &o));
  AIT_TRY(ait_tune_options_check(&o));
  ait_log_fn saved_log = m->log;
  void *saved_user = m->log_user;
  if (o.log) {
    m->log = o.log;
    m->log_user = o.log_user;
  }
  ait_status st = AIT_OK;
  if (m->n_samples == 0) {
    ait_module_logf(m, 0, "no samples given: generating one from the declared input shapes");
    if ((st = ait_sample_random(m->model->graph, 1, &m->samples[0])) != AIT_OK) goto out;
    m->n_samples = 1;
  }
  ait_spec_detect(m->model->graph, m->samples, m->n_samples, &m->spec);
  if ((st = ait_spec_apply_ranges(m->model->graph, m->samples, m->n_samples, m->axis_ranges,
                                  m->n_axis_ranges, &m->spec)) != AIT_OK)
    goto out;
  char root[4096], key[65], entry[4200];
  ait_cache_root(&o, root, sizeof root);
  bool use_cache = root[0] && o.use_decision_cache;
  if (use_cache) {
    ait_cache_key(m, &o, key);
    snprintf(entry, sizeof entry, "%s/%.32s", root, key);
    struct stat sb;
    if (stat(entry, &sb) == 0) {
      ait_module *e = NULL;
      /* the entry's model is this model: held to the limits it was loaded under */
      ait_status cst =
          ait_artifact_load(entry, NULL, NULL, true, &ait_graph_root(m->model->graph)->limits, &e);
      if (cst == AIT_OK) {
        adopt(m, e);
        ait_mod_free(e);
        ait_module_logf(m, 0, "answered from the cache (%s): %s", entry, m->desc);
        goto out;
      }
      /* another machine, an older format, a backend missing here: not damage */
      if (cst == AIT_E_NOT_FOUND || cst == AIT_E_UNSUPPORTED)
        ait_module_logf(m, 0, "re-tuning: %s", ait_last_error());
      else
        ait_module_logf(m, 1, "discarding a corrupted cache entry %s: %s", entry, ait_last_error());
      ait_rmtree(entry);
    }
  }
  ait_mod_drop_state(m);
  ait_backend_config_parse("eager", &m->cfg);
  snprintf(m->desc, sizeof m->desc, "eager");
  m->tuned = false;
  m->warned_range = false;
  if ((st = ait_tuner_run(m, &o)) != AIT_OK) goto out;
  if (use_cache) {
    ait_status cst = ait_mkdir_p(root);
    if (!cst) cst = ait_artifact_save(m, entry, AIT_SAVE_FORCE); /* the cache is ours */
    if (cst)
      ait_module_logf(m, 1, "could not store the decision in the cache: %s", ait_last_error());
  }
out:
  m->log = saved_log;
  m->log_user = saved_user;
  return st;
}
