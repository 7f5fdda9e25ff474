/* Tuned artifacts: a folder with the decision, the report, a copy of the
 * model and the backend's built state. Written into a temporary folder and
 * renamed into place, so a reader never sees half an artifact. The decision
 * cache stores entries in the same layout. */
#define _XOPEN_SOURCE 700
#include <cjson/cJSON.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/fileio.h"
#include "hw/fingerprint.h"
#include "tune/manifest.h"
#include "tune/module_impl.h"

/* 2: the artifact carries MANIFEST.sha256 (manifest.c) */
#define AIT_DECISION_VERSION 2

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  return remove(path);
}

void ait_rmtree(const char *path) { nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

static ait_status write_text(const char *dir, const char *name, const char *text) {
  char *p = ait_path_join(dir, name);
  if (!p) return ait_err(AIT_E_NOMEM, "out of memory");
  ait_status st = ait_write_file_atomic(p, text, strlen(text));
  free(p);
  return st;
}

static char *decision_json(const ait_module *m) {
  cJSON *d = cJSON_CreateObject();
  char fp[2048], cfg[4200];
  cJSON_AddStringToObject(d, "format", "aitune-decision");
  cJSON_AddNumberToObject(d, "version", AIT_DECISION_VERSION);
  cJSON_AddStringToObject(d, "aitune", AIT_VERSION_STRING);
  cJSON_AddStringToObject(d, "name", m->name);
  cJSON_AddStringToObject(d, "model_sha256", m->model_sha);
  cJSON_AddStringToObject(d, "model_source", m->model_path);
  cJSON_AddStringToObject(d, "backend", m->desc);
  cJSON_AddItemToObject(d, "backend_config",
                        cJSON_Parse(ait_backend_config_json(&m->cfg, cfg, sizeof cfg)));
  cJSON_AddNumberToObject(d, "batch", m->batch);
  char *spec = ait_spec_json(&m->spec);
  cJSON_AddItemToObject(d, "graph_spec", spec ? cJSON_Parse(spec) : cJSON_CreateNull());
  free(spec);
  cJSON_AddStringToObject(d, "fingerprint", ait_fingerprint_text(fp, sizeof fp));
  char *text = cJSON_Print(d);
  cJSON_Delete(d);
  return text;
}

ait_status ait_artifact_save(const ait_module *m, const char *dir) {
  if (!m->tuned) return ait_err(AIT_E_INVALID_ARG, "the module '%s' is not tuned yet", m->name);
  size_t n = strlen(dir) + 64;
  char *tmp = malloc(n), *old = malloc(n);
  if (!tmp || !old) {
    free(tmp);
    free(old);
    return ait_err(AIT_E_NOMEM, "out of memory");
  }
  snprintf(tmp, n, "%s.tmp.%ld", dir, (long)getpid());
  snprintf(old, n, "%s.old.%ld", dir, (long)getpid());
  ait_rmtree(tmp);
  ait_status st = AIT_OK;
  char *dec = NULL, *model_copy = NULL, *backend_dir = NULL;
  void *bytes = NULL;
  size_t size = 0;
  char *parent = ait_path_dir(dir); /* --out build/tuned/x: build/tuned may not exist yet */
  st = parent ? ait_mkdir_p(parent) : ait_err(AIT_E_NOMEM, "out of memory");
  free(parent);
  if (st) goto out;
  if (mkdir(tmp, 0777) != 0) {
    st = ait_err(AIT_E_IO, "cannot create '%s': %s", tmp, strerror(errno));
    goto out;
  }
  if (!(dec = decision_json(m))) {
    st = ait_err(AIT_E_NOMEM, "out of memory");
    goto out;
  }
  if ((st = write_text(tmp, "decision.json", dec)) ||
      (st = write_text(tmp, "report.json", m->report_json)))
    goto out;
  /* a copy of the model keeps the artifact whole when the original moves */
  model_copy = ait_path_join(tmp, "model.onnx");
  if ((st = ait_read_file(m->model_path, &bytes, &size)) ||
      (st = ait_write_file_atomic(model_copy, bytes, size)))
    goto out;
  backend_dir = ait_path_join(tmp, "backend");
  if (mkdir(backend_dir, 0777) != 0) {
    st = ait_err(AIT_E_IO, "cannot create '%s': %s", backend_dir, strerror(errno));
    goto out;
  }
  if ((st = m->run.iface->save(m->run.state, backend_dir))) {
    ait_err_prefix(st, "saving the %s backend's state", m->desc);
    goto out;
  }
  if ((st = ait_manifest_write(tmp))) goto out; /* last: it covers everything above */
  /* swap into place: the old artifact (if any) is kept until the new one is in */
  struct stat sb;
  bool had = stat(dir, &sb) == 0;
  if (had && rename(dir, old) != 0) {
    st = ait_err(AIT_E_IO, "cannot replace '%s': %s", dir, strerror(errno));
    goto out;
  }
  if (rename(tmp, dir) != 0) {
    st = ait_err(AIT_E_IO, "cannot move the artifact into '%s': %s", dir, strerror(errno));
    if (had) rename(old, dir);
    goto out;
  }
  if (had) ait_rmtree(old);
out:
  if (st) ait_rmtree(tmp);
  free(bytes);
  free(dec);
  free(model_copy);
  free(backend_dir);
  free(tmp);
  free(old);
  return st;
}

static const char *json_str(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void spec_from_json(const cJSON *j, ait_graph_spec *spec) {
  memset(spec, 0, sizeof *spec);
  spec->has_batch = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "has_batch"));
  const cJSON *axes = cJSON_GetObjectItemCaseSensitive(j, "axes"), *a;
  cJSON_ArrayForEach(a, axes) {
    if (spec->n_axes == AIT_MAX_AXES) break;
    ait_axis *x = &spec->axes[spec->n_axes++];
    x->input = cJSON_GetObjectItemCaseSensitive(a, "input")->valueint;
    x->axis = cJSON_GetObjectItemCaseSensitive(a, "axis")->valueint;
    snprintf(x->sym, sizeof x->sym, "%s", json_str(a, "name") ? json_str(a, "name") : "");
    x->min = (int64_t)cJSON_GetObjectItemCaseSensitive(a, "min")->valuedouble;
    x->opt = (int64_t)cJSON_GetObjectItemCaseSensitive(a, "opt")->valuedouble;
    x->max = (int64_t)cJSON_GetObjectItemCaseSensitive(a, "max")->valuedouble;
    x->is_batch = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "batch"));
  }
}

/* Every field a decision must have, with the right type. */
static bool decision_valid(const cJSON *d) {
  static const char *const strs[] = {"format",  "name",        "model_sha256",
                                     "backend", "fingerprint", NULL};
  for (int i = 0; strs[i]; i++)
    if (!json_str(d, strs[i])) return false;
  const cJSON *spec = cJSON_GetObjectItemCaseSensitive(d, "graph_spec");
  if (!cJSON_IsObject(spec) || !cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(d, "batch")))
    return false;
  const cJSON *a;
  cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(spec, "axes")) {
    static const char *const nums[] = {"input", "axis", "min", "opt", "max", NULL};
    for (int i = 0; nums[i]; i++)
      if (!cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(a, nums[i]))) return false;
  }
  return !strcmp(json_str(d, "format"), "aitune-decision");
}

ait_module *ait_module_alloc(const char *path, const char *name, ait_status *st);

ait_status ait_artifact_load(const char *dir, ait_log_fn log, void *log_user,
                             bool strict_fingerprint, ait_module **out) {
  *out = NULL;
  char *dpath = ait_path_join(dir, "decision.json");
  void *text = NULL;
  size_t size = 0;
  struct stat sb;
  ait_status st = dpath ? AIT_OK : ait_err(AIT_E_NOMEM, "out of memory");
  if (!st && stat(dpath, &sb) != 0)
    st = ait_err(AIT_E_IO, "'%s' is not a tuned model: %s: %s", dir, dpath, strerror(errno));
  /* nothing of the artifact is used before every file of it checks out */
  if (!st) st = ait_manifest_check(dir);
  if (!st) st = ait_read_file(dpath, &text, &size);
  free(dpath);
  if (st) return st;
  cJSON *d = cJSON_Parse(text);
  free(text);
  if (!d || !decision_valid(d)) {
    cJSON_Delete(d);
    return ait_err(AIT_E_PARSE, "%s/decision.json is corrupted or not an aitune decision", dir);
  }
  const cJSON *ver = cJSON_GetObjectItemCaseSensitive(d, "version");
  if (!cJSON_IsNumber(ver) || ver->valueint != AIT_DECISION_VERSION) {
    cJSON_Delete(d);
    return ait_err(AIT_E_UNSUPPORTED,
                   "%s/decision.json has version %d; this aitune reads version %d", dir,
                   cJSON_IsNumber(ver) ? ver->valueint : -1, AIT_DECISION_VERSION);
  }
  char fp[2048], diff[1024];
  ait_fingerprint_text(fp, sizeof fp);
  const char *tuned_fp = json_str(d, "fingerprint");
  bool fp_differs = strcmp(fp, tuned_fp) != 0;
  if (fp_differs && strict_fingerprint) {
    st = ait_err(AIT_E_NOT_FOUND, "tuned on another machine or library (%s)",
                 ait_fingerprint_diff(tuned_fp, fp, diff, sizeof diff));
    cJSON_Delete(d);
    return st;
  }
  char *mpath = ait_path_join(dir, "model.onnx");
  ait_module *m = mpath ? ait_module_alloc(mpath, json_str(d, "name"), &st) : NULL;
  if (!mpath) st = ait_err(AIT_E_NOMEM, "out of memory");
  free(mpath);
  if (!m) {
    cJSON_Delete(d);
    return ait_err_prefix(st, "loading the tuned model in '%s'", dir);
  }
  m->log = log;
  m->log_user = log_user;
  if (strcmp(m->model_sha, json_str(d, "model_sha256"))) {
    st = ait_err(AIT_E_INVALID_MODEL, "%s/model.onnx does not match the SHA-256 in decision.json",
                 dir);
    goto fail;
  }
  if ((st = ait_backend_config_parse(json_str(d, "backend"), &m->cfg))) goto fail;
  snprintf(m->desc, sizeof m->desc, "%s", json_str(d, "backend"));
  snprintf(m->tuned_fingerprint, sizeof m->tuned_fingerprint, "%s", tuned_fp);
  m->batch = cJSON_GetObjectItemCaseSensitive(d, "batch")->valueint;
  spec_from_json(cJSON_GetObjectItemCaseSensitive(d, "graph_spec"), &m->spec);
  char why[256];
  if (!m->cfg.iface->available(why, sizeof why)) {
    st = ait_err(AIT_E_UNSUPPORTED, "backend %s is not available here: %s", m->desc, why);
    goto fail;
  }
  char *bdir = ait_path_join(dir, "backend");
  st = bdir ? ait_runner_load(&m->cfg, m->model->graph, bdir, &m->run) : AIT_E_NOMEM;
  free(bdir);
  if (st) {
    ait_err_prefix(st, "loading the %s backend's state from %s/backend", m->desc, dir);
    m->run.state = NULL;
    goto fail;
  }
  char *rpath = ait_path_join(dir, "report.json");
  if (rpath && ait_read_file(rpath, &text, &size) == AIT_OK) m->report_json = text;
  free(rpath);
  m->tuned = true;
  if (fp_differs)
    ait_module_logf(m, 1,
                    "'%s' was tuned on a different machine or library (%s); it runs, but "
                    "re-tuning may pick better",
                    dir, ait_fingerprint_diff(tuned_fp, fp, diff, sizeof diff));
  cJSON_Delete(d);
  *out = m;
  return AIT_OK;
fail:
  cJSON_Delete(d);
  ait_module_free(m);
  return st;
}
