/* Tuned artifacts: a folder with the decision, the report, a copy of the
 * model and the backend's built state. Written into a temporary folder and
 * renamed into place, so a reader never sees half an artifact. The decision
 * cache stores entries in the same layout. */
#define _GNU_SOURCE /* renameat2 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
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

/* 2: the artifact carries MANIFEST.sha256 (manifest.c)
 * 3: backend/ carries the model's SHA-256 (STATE_BINDING) */
#define AIT_DECISION_VERSION 3

/* The backend state's binding to the model: the model's SHA-256 and a
 * newline, written beside the state by the shared save code (so every
 * backend's state is bound the same way). A state copied from another
 * model's folder brings that model's digest along and is refused. */
#define STATE_BINDING "backend/model.sha256"

/* The marks of a save's folders (see clean_stale), never in the manifest. */
#define MARK_PARTIAL AIT_MARK_PARTIAL
#define MARK_PARKED AIT_MARK_PARKED

/* An empty file, created in place (not through a temporary file: a kill
 * must leave the mark or nothing, never a stray temporary beside it). */
static ait_status mark(const char *dir, const char *name) {
  char *p = ait_path_join(dir, name);
  if (!p) return ait_err(AIT_E_NOMEM, "out of memory");
  int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  ait_status st =
      fd >= 0 ? AIT_OK : ait_err(AIT_E_IO, "cannot create '%s': %s", p, strerror(errno));
  if (fd >= 0) close(fd);
  free(p);
  return st;
}

static void unmark(const char *dir, const char *name) {
  char *p = ait_path_join(dir, name);
  if (p) unlink(p);
  free(p);
}

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
  char fp[2048];
  cJSON_AddStringToObject(d, "format", "aitune-decision");
  cJSON_AddNumberToObject(d, "version", AIT_DECISION_VERSION);
  cJSON_AddStringToObject(d, "aitune", AIT_VERSION_STRING);
  cJSON_AddStringToObject(d, "name", m->name);
  cJSON_AddStringToObject(d, "model_sha256", m->model_sha);
  cJSON_AddStringToObject(d, "model_source", ait_module_source(m));
  cJSON_AddStringToObject(d, "backend", m->desc);
  cJSON_AddItemToObject(d, "backend_config", ait_backend_config_cjson(&m->cfg));
  cJSON_AddNumberToObject(d, "batch", m->batch);
  char *spec = ait_spec_json(&m->spec);
  cJSON_AddItemToObject(d, "graph_spec", spec ? cJSON_Parse(spec) : cJSON_CreateNull());
  free(spec);
  cJSON_AddStringToObject(d, "fingerprint", ait_fingerprint_text(fp, sizeof fp));
  char *text = cJSON_Print(d);
  cJSON_Delete(d);
  return text;
}

/* ---- replacing a folder ---------------------------------------------------
 * The new artifact is written whole into `P.tmp.PID`, then swapped with P in
 * one step (renameat2 RENAME_EXCHANGE), so P holds the old or the new folder
 * at every instant; the old one, now at P.tmp.PID, is removed after. Where
 * the file system cannot exchange, the old folder moves to P.old.PID first
 * (a window where P is absent: a kill there leaves P missing, and the next
 * save or load of P, seeing the saver gone, puts the old folder back). */

static int kill_at_step, steps; /* tests: SIGKILL at the Nth step of a save's swap */
static bool no_exchange;        /* tests: take the fallback swap */

void ait_artifact_test_kill_at(int step, bool fallback) {
  kill_at_step = step;
  steps = 0;
  no_exchange = fallback;
}

static void step(void) {
  if (kill_at_step && ++steps == kill_at_step) raise(SIGKILL);
}

/* A folder that aitune wrote: a directory (not a link) with a manifest and a decision. */
static bool is_tuned_folder(const char *dir) {
  struct stat sb;
  if (lstat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) return false;
  static const char *const marks[] = {AIT_MANIFEST_NAME, "decision.json"};
  bool ok = true;
  for (int i = 0; ok && i < 2; i++) {
    char *p = ait_path_join(dir, marks[i]);
    ok = p && lstat(p, &sb) == 0 && S_ISREG(sb.st_mode);
    free(p);
  }
  return ok;
}

/* Whether rel (a path under a tuned folder) is listed in its manifest's
 * text: a line "<64 hex>  rel". */
static bool listed(const char *manifest, const char *rel) {
  size_t n = strlen(rel);
  for (const char *p = manifest; (p = strstr(p, rel)) != NULL; p++) {
    size_t at = (size_t)(p - manifest);
    bool starts = at >= 66 && p[-1] == ' ' && p[-2] == ' ' && (at == 66 || p[-67] == '\n');
    if (starts && (p[n] == '\n' || p[n] == '\0')) return true;
  }
  return false;
}

/* Whether a manifest path lies under the folder rel. */
static bool listed_under(const char *manifest, const char *rel) {
  char needle[PATH_MAX + 2];
  snprintf(needle, sizeof needle, "%s/", rel);
  for (const char *p = manifest; (p = strstr(p, needle)) != NULL; p++) {
    size_t at = (size_t)(p - manifest);
    if (at >= 66 && p[-1] == ' ' && p[-2] == ' ' && (at == 66 || p[-67] == '\n')) return true;
  }
  return false;
}

/* Whether everything in root/rel (rel "" = root) is what a save wrote: the
 * files it always writes (decision.json, report.json, model.onnx, the
 * manifest) and the backend's folder, whole, even when the manifest is
 * damaged; else the files the manifest lists and folders holding them.
 * Anything else (a user's notes, a folder of theirs, a link beside the
 * decision) is not ours to delete: its path goes to what. */
static bool only_ours(const char *root, const char *rel, const char *manifest, char *what,
                      size_t n) {
  char *dir = rel[0] ? ait_path_join(root, rel) : strdup(root);
  DIR *d = dir ? opendir(dir) : NULL;
  bool ok = d != NULL;
  if (!ok) snprintf(what, n, "%s", rel[0] ? rel : ".");
  struct dirent *e;
  while (ok && (e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    char r[PATH_MAX];
    snprintf(r, sizeof r, "%s%s%s", rel, rel[0] ? "/" : "", e->d_name);
    char *full = ait_path_join(root, r);
    struct stat sb;
    if (!full || lstat(full, &sb) != 0)
      ok = false;
    else if (S_ISDIR(sb.st_mode))
      ok = (!rel[0] && !strcmp(r, "backend")) ||
           (listed_under(manifest, r) && only_ours(root, r, manifest, what, n));
    else
      ok = S_ISREG(sb.st_mode) &&
           (listed(manifest, r) ||
            (!rel[0] && (!strcmp(r, "model.onnx") || !strcmp(r, "decision.json") ||
                         !strcmp(r, "report.json") || !strcmp(r, AIT_MANIFEST_NAME) ||
                         !strcmp(r, MARK_PARTIAL) || !strcmp(r, MARK_PARKED))));
    if (!ok && !what[0]) snprintf(what, n, "%s", r);
    free(full);
  }
  if (d) closedir(d);
  free(dir);
  return ok;
}

ait_status ait_artifact_check_target(const char *dir, const char *model_path, bool force) {
  struct stat sb;
  if (lstat(dir, &sb) != 0) return AIT_OK; /* nothing there to lose */
  char rd[PATH_MAX], rmod[PATH_MAX];
  bool tuned = is_tuned_folder(dir);
  if (model_path && realpath(model_path, rmod) && realpath(dir, rd)) {
    size_t n = strlen(rd);
    bool inside = !strncmp(rmod, rd, n) && (rmod[n] == '/' || (n == 1 && rd[0] == '/'));
    /* a tuned folder's own model copy is copied before the swap: nothing is lost */
    char own[PATH_MAX + 16];
    snprintf(own, sizeof own, "%s/model.onnx", rd);
    if (!strcmp(rmod, rd) || (inside && !(tuned && !strcmp(rmod, own))))
      return ait_err(AIT_E_INVALID_ARG,
                     "'%s' %s the input model %s: refusing to replace it (choose another folder)",
                     dir, !strcmp(rmod, rd) ? "is" : "holds", model_path);
  }
  if (force) return AIT_OK;
  if (tuned) {
    /* a tuned folder is replaced whole: refused while it holds anything a
     * save did not write (issue 18, item 7: a user's file inside it) */
    char *mp = ait_path_join(dir, AIT_MANIFEST_NAME);
    void *text = NULL;
    size_t size = 0;
    ait_status st = mp ? ait_read_file_max(mp, AIT_MAX_META_BYTES, &text, &size)
                       : ait_err(AIT_E_NOMEM, "out of memory");
    free(mp);
    char what[PATH_MAX] = "";
    bool ours = !st && only_ours(dir, "", memchr(text, '\0', size) ? "" : text, what, sizeof what);
    free(text);
    if (ours) return AIT_OK;
    if (st) return st; /* an unreadable manifest: said why */
    return ait_err(AIT_E_INVALID_ARG,
                   "'%s' is a tuned folder that also holds '%s', which aitune did not write: "
                   "refusing to replace it (--force, or AIT_SAVE_FORCE, replaces it)",
                   dir, what);
  }
  return ait_err(AIT_E_INVALID_ARG,
                 "'%s' exists and is not an aitune tuned folder (no %s and decision.json): "
                 "refusing to replace it (--force, or AIT_SAVE_FORCE, replaces it)",
                 dir, AIT_MANIFEST_NAME);
}

/* Whether folder p is a save's: it holds MARK_PARTIAL (a save's folder in
 * the making) or MARK_PARKED (an old folder a save moved aside), or nothing.
 * A user's folder that only happens to be named `<base>.old.2024` has
 * neither, and is left alone. */
static bool save_made(const char *p) {
  DIR *d = opendir(p);
  if (!d) return false;
  bool marked = false, empty = true;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    empty = false;
    marked = marked || !strcmp(e->d_name, MARK_PARTIAL) || !strcmp(e->d_name, MARK_PARKED);
  }
  closedir(d);
  return marked || empty;
}

/* `<base>.tmp.<pid>` and `<base>.old.<pid>` beside dir, left by saves
 * that were killed: removed when their process is gone and they are a
 * save's (save_made); an old folder is put back when dir itself is missing
 * (a kill inside the fallback swap). restore_only (a load): only that
 * putting back, nothing is removed. */
static void clean_stale(const char *dir, bool restore_only) {
  char *parent = ait_path_dir(dir);
  const char *slash = strrchr(dir, '/');
  const char *base = slash ? slash + 1 : dir;
  size_t blen = strlen(base);
  DIR *d = parent && blen ? opendir(parent) : NULL;
  struct dirent *e;
  while (d && (e = readdir(d))) {
    const char *name = e->d_name;
    if (strncmp(name, base, blen) || name[blen] != '.') continue;
    const char *kind = name + blen + 1;
    bool old = !strncmp(kind, "old.", 4);
    if (!old && strncmp(kind, "tmp.", 4)) continue;
    char *end;
    errno = 0;
    long pid = strtol(kind + 4, &end, 10);
    if (errno || *end || end == kind + 4 || pid <= 0 || pid > INT_MAX || pid == (long)getpid())
      continue;
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; /* alive (or not ours to judge) */
    char *full = ait_path_join(parent, name);
    struct stat sb;
    if (full && lstat(full, &sb) == 0 && S_ISDIR(sb.st_mode) && save_made(full)) {
      if (old && lstat(dir, &sb) != 0 && is_tuned_folder(full)) {
        if (rename(full, dir) == 0) unmark(dir, MARK_PARKED);
      } else if (!restore_only) {
        ait_rmtree(full);
      }
    }
    free(full);
  }
  if (d) closedir(d);
  free(parent);
}

/* Put the finished folder tmp at dir (see above); `old` names the fallback's parking place. */
static ait_status swap_in(const char *tmp, const char *dir, const char *old) {
  struct stat sb;
  if (lstat(dir, &sb) != 0) {
    step();
    if (rename(tmp, dir) != 0)
      return ait_err(AIT_E_IO, "cannot move the artifact into '%s': %s", dir, strerror(errno));
    return AIT_OK;
  }
  step();
  /* the old folder is marked before it moves, so that a kill leaving it at
   * tmp or old lets the next save know it for a save's (save_made) */
  AIT_TRY(mark(dir, MARK_PARKED));
  step();
  errno = EINVAL;
  if (!no_exchange && renameat2(AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_EXCHANGE) == 0) {
    step();
    ait_rmtree(tmp); /* the old folder, now at tmp */
    return AIT_OK;
  }
  if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
    return ait_err(AIT_E_IO, "cannot replace '%s': %s", dir, strerror(errno));
  step();
  if (rename(dir, old) != 0)
    return ait_err(AIT_E_IO, "cannot replace '%s': %s", dir, strerror(errno));
  step();
  if (rename(tmp, dir) != 0) {
    ait_status st =
        ait_err(AIT_E_IO, "cannot move the artifact into '%s': %s", dir, strerror(errno));
    if (rename(old, dir) == 0) unmark(dir, MARK_PARKED);
    return st;
  }
  step();
  ait_rmtree(old);
  return AIT_OK;
}

/* Write tmp/STATE_BINDING (see its definition). */
static ait_status bind_state(const ait_module *m, const char *tmp) {
  char line[66];
  snprintf(line, sizeof line, "%s\n", m->model_sha);
  return write_text(tmp, STATE_BINDING, line);
}

ait_status ait_artifact_save(const ait_module *m, const char *dir_in, unsigned flags) {
  if (!m->tuned) return ait_err(AIT_E_INVALID_ARG, "the module '%s' is not tuned yet", m->name);
  if (!m->report_json) return ait_err(AIT_E_INVALID_ARG, "the module '%s' has no report", m->name);
  /* "out/" and "out" are one folder: its siblings out.tmp.PID are found by name */
  char *dir = strdup(dir_in);
  for (size_t l = dir ? strlen(dir) : 0; l > 1 && dir[l - 1] == '/'; l--)
    dir[l - 1] = '\0';
  size_t n = dir ? strlen(dir) + 64 : 0;
  char *tmp = dir ? malloc(n) : NULL, *old = dir ? malloc(n) : NULL;
  if (!dir || !tmp || !old) {
    free(dir);
    free(tmp);
    free(old);
    return ait_err(AIT_E_NOMEM, "out of memory");
  }
  snprintf(tmp, n, "%s.tmp.%ld", dir, (long)getpid());
  snprintf(old, n, "%s.old.%ld", dir, (long)getpid());
  ait_status st = ait_artifact_check_target(dir, m->model_path, flags & AIT_SAVE_FORCE);
  char *dec = NULL, *model_copy = NULL, *backend_dir = NULL;
  void *bytes = NULL;
  size_t size = 0;
  if (st) goto out;
  char *parent = ait_path_dir(dir); /* --out build/tuned/x: build/tuned may not exist yet */
  st = parent ? ait_mkdir_p(parent) : ait_err(AIT_E_NOMEM, "out of memory");
  free(parent);
  if (st) goto out;
  clean_stale(dir, false);
  ait_rmtree(tmp);
  if (mkdir(tmp, 0777) != 0 || (st = mark(tmp, MARK_PARTIAL))) {
    if (!st) st = ait_err(AIT_E_IO, "cannot create '%s': %s", tmp, strerror(errno));
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
  if (m->model_bytes)
    st = ait_write_file_atomic(model_copy, m->model_bytes, m->model_size);
  else if (!(st = ait_read_file(m->model_path, &bytes, &size)))
    st = ait_write_file_atomic(model_copy, bytes, size);
  if (st) goto out;
  backend_dir = ait_path_join(tmp, "backend");
  if (mkdir(backend_dir, 0777) != 0) {
    st = ait_err(AIT_E_IO, "cannot create '%s': %s", backend_dir, strerror(errno));
    goto out;
  }
  if ((st = ait_mod_save_state(m, backend_dir, NULL))) {
    ait_err_prefix(st, "saving the %s backend's state", m->desc);
    goto out;
  }
  if ((st = bind_state(m, tmp))) goto out;
  if ((st = ait_manifest_write(tmp))) goto out; /* last: it covers everything above */
  st = swap_in(tmp, dir, old);
  if (!st) unmark(dir, MARK_PARTIAL); /* a kill before this leaves it: harmless */
out:
  if (st) ait_rmtree(tmp);
  free(bytes);
  free(dec);
  free(model_copy);
  free(backend_dir);
  free(tmp);
  free(old);
  free(dir);
  return st;
}

static const char *json_str(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* ---- reading: every field is untrusted ------------------------------------
 * The manifest is a checksum, not a signature: anyone can edit a file and
 * rebuild it with sha256sum. So each field of decision.json is checked for
 * its type and range here, as one row of a table, before it is used. */

#define DEC_MAX_BATCH (1 << 20) /* far above any batch the tuner profiles */
#define DEC_MAX_DIM (1LL << 40) /* a dynamic axis' min/opt/max */

typedef enum { F_STR, F_INT, F_OBJ, F_ARR, F_BOOL } field_type;

typedef struct field_rule {
  const char *key;
  field_type type;
  bool optional;
  long long lo, hi; /* F_INT: the range; F_STR: the length range */
} field_rule;

static const field_rule decision_rules[] = {
    {"format", F_STR, false, 1, 64},        {"version", F_INT, false, 0, 1 << 30},
    {"name", F_STR, false, 0, 4096},        {"model_sha256", F_STR, false, 64, 64},
    {"backend", F_STR, false, 1, 599}, /* ait_module.desc */
    {"fingerprint", F_STR, false, 0, 2047}, {"batch", F_INT, false, 1, DEC_MAX_BATCH},
    {"graph_spec", F_OBJ, false, 0, 0},
};

static const field_rule spec_rules[] = {
    {"has_batch", F_BOOL, true, 0, 0},
    {"axes", F_ARR, false, 0, AIT_MAX_AXES},
};

static const field_rule axis_rules[] = {
    {"input", F_INT, false, 0, 1 << 20}, /* against the graph in axes_fit_graph */
    {"axis", F_INT, false, 0, 64},         {"name", F_STR, true, 0, 63},
    {"min", F_INT, false, 0, DEC_MAX_DIM}, {"opt", F_INT, false, 0, DEC_MAX_DIM},
    {"max", F_INT, false, 0, DEC_MAX_DIM}, {"batch", F_BOOL, true, 0, 0},
};

/* The first field of o that breaks its rule, or NULL. */
static const char *check_fields(const cJSON *o, const field_rule *rules, size_t n) {
  if (!cJSON_IsObject(o)) return "(not an object)";
  for (size_t i = 0; i < n; i++) {
    const field_rule *r = &rules[i];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, r->key);
    if (!v) {
      if (r->optional) continue;
      return r->key;
    }
    bool ok = false;
    switch (r->type) {
    case F_STR: {
      size_t len = cJSON_IsString(v) ? strlen(v->valuestring) : 0;
      ok = cJSON_IsString(v) && len >= (size_t)r->lo && len <= (size_t)r->hi;
      break;
    }
    case F_INT: /* integral, in range (the comparison is false for NaN) */
      ok = cJSON_IsNumber(v) && v->valuedouble >= (double)r->lo &&
           v->valuedouble <= (double)r->hi && v->valuedouble == (double)(long long)v->valuedouble;
      break;
    case F_OBJ: ok = cJSON_IsObject(v); break;
    case F_ARR: ok = cJSON_IsArray(v) && cJSON_GetArraySize(v) <= r->hi; break;
    case F_BOOL: ok = cJSON_IsBool(v); break;
    }
    if (!ok) return r->key;
  }
  return NULL;
}

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static bool is_hex64(const char *s) {
  for (int i = 0; i < 64; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
  return s[64] == '\0';
}

/* Every field a decision must have, with its type and range; on a failure
 * the offending field's name goes to `bad`. */
static bool decision_valid(const cJSON *d, char *bad, size_t n) {
  const char *f = check_fields(d, decision_rules, N_OF(decision_rules));
  if (f) return snprintf(bad, n, "%s", f), false;
  if (!is_hex64(json_str(d, "model_sha256"))) return snprintf(bad, n, "model_sha256"), false;
  const cJSON *spec = cJSON_GetObjectItemCaseSensitive(d, "graph_spec");
  if ((f = check_fields(spec, spec_rules, N_OF(spec_rules))))
    return snprintf(bad, n, "graph_spec.%s", f), false;
  const cJSON *a;
  int i = 0;
  cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(spec, "axes")) {
    if ((f = check_fields(a, axis_rules, N_OF(axis_rules))))
      return snprintf(bad, n, "graph_spec.axes[%d].%s", i, f), false;
    double lo = cJSON_GetObjectItemCaseSensitive(a, "min")->valuedouble,
           opt = cJSON_GetObjectItemCaseSensitive(a, "opt")->valuedouble,
           hi = cJSON_GetObjectItemCaseSensitive(a, "max")->valuedouble;
    if (!(lo <= opt && opt <= hi))
      return snprintf(bad, n, "graph_spec.axes[%d].min/opt/max", i), false;
    i++;
  }
  return true;
}

static long long int_of(const cJSON *o, const char *key) {
  return (long long)cJSON_GetObjectItemCaseSensitive(o, key)->valuedouble;
}

/* From a graph_spec that decision_valid accepted. */
static void spec_from_json(const cJSON *j, ait_graph_spec *spec) {
  memset(spec, 0, sizeof *spec);
  spec->has_batch = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "has_batch"));
  const cJSON *axes = cJSON_GetObjectItemCaseSensitive(j, "axes"), *a;
  cJSON_ArrayForEach(a, axes) {
    if (spec->n_axes == AIT_MAX_AXES) break;
    ait_axis *x = &spec->axes[spec->n_axes++];
    x->input = (int)int_of(a, "input");
    x->axis = (int)int_of(a, "axis");
    snprintf(x->sym, sizeof x->sym, "%s", json_str(a, "name") ? json_str(a, "name") : "");
    x->min = int_of(a, "min");
    x->opt = int_of(a, "opt");
    x->max = int_of(a, "max");
    x->is_batch = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "batch"));
  }
}

/* Each axis names an input of the graph and an axis within its rank. */
static ait_status axes_fit_graph(const ait_graph_spec *spec, const ait_graph *g, const char *dir) {
  for (int a = 0; a < spec->n_axes; a++) {
    const ait_axis *x = &spec->axes[a];
    if (x->input >= g->n_inputs || x->axis >= g->values[g->inputs[x->input]].rank)
      return ait_err(AIT_E_INVALID_MODEL,
                     "%s/decision.json is corrupted: graph_spec.axes[%d] names input %d axis %d, "
                     "which the model does not have",
                     dir, a, x->input, x->axis);
  }
  return AIT_OK;
}

/* report.json: present, JSON, an aitune report. New string into *out. */
static ait_status read_report(const char *dir, char **out) {
  *out = NULL;
  char *rpath = ait_path_join(dir, "report.json");
  if (!rpath) return ait_err(AIT_E_NOMEM, "out of memory");
  struct stat sb;
  void *text = NULL;
  size_t size = 0;
  ait_status st = AIT_OK;
  if (stat(rpath, &sb) != 0)
    st = ait_err(AIT_E_INVALID_MODEL, "%s/report.json is missing", dir);
  else
    st = ait_read_file_max(rpath, AIT_MAX_META_BYTES, &text, &size);
  free(rpath);
  if (st) return st;
  cJSON *r = size && !memchr(text, '\0', size) ? cJSON_ParseWithLength(text, size) : NULL;
  const char *fmt = json_str(r, "format");
  bool ok = cJSON_IsObject(r) && fmt && !strcmp(fmt, "aitune-report");
  cJSON_Delete(r);
  if (!ok) {
    free(text);
    return ait_err(AIT_E_INVALID_MODEL, "%s/report.json is corrupted or not an aitune report", dir);
  }
  *out = text;
  return AIT_OK;
}

ait_status ait_artifact_read_report(const char *dir, char **json) {
  *json = NULL;
  AIT_TRY(ait_manifest_check(dir));
  return read_report(dir, json);
}

/* The binding of the backend state to the model (see bind_state). */
static ait_status check_binding(const char *dir, const char *model_sha) {
  char *p = ait_path_join(dir, STATE_BINDING);
  void *text = NULL;
  size_t size = 0;
  struct stat sb;
  ait_status st = p ? AIT_OK : ait_err(AIT_E_NOMEM, "out of memory");
  if (!st && stat(p, &sb) != 0)
    st = ait_err(AIT_E_INVALID_MODEL, "%s/%s is missing: the backend state is not bound to a model",
                 dir, STATE_BINDING);
  if (!st) st = ait_read_file_max(p, AIT_MAX_META_BYTES, &text, &size);
  free(p);
  if (st) return st;
  bool ok = size == 65 && !memcmp(text, model_sha, 64) && ((char *)text)[64] == '\n';
  free(text);
  if (!ok)
    return ait_err(AIT_E_INVALID_MODEL,
                   "%s/backend holds the state of another model (its %s does not name this "
                   "model's SHA-256)",
                   dir, STATE_BINDING);
  return AIT_OK;
}

ait_status ait_artifact_load(const char *dir, ait_log_fn log, void *log_user,
                             bool strict_fingerprint, const ait_limits *lim, ait_module **out) {
  *out = NULL;
  char *dpath = ait_path_join(dir, "decision.json");
  void *text = NULL;
  size_t size = 0;
  struct stat sb;
  ait_status st = dpath ? AIT_OK : ait_err(AIT_E_NOMEM, "out of memory");
  /* a save killed inside the fallback swap left the old folder parked beside */
  if (!st && lstat(dir, &sb) != 0) clean_stale(dir, true);
  if (!st && stat(dir, &sb) != 0)
    st = ait_err(AIT_E_IO, "cannot open the tuned model '%s': %s", dir, strerror(errno));
  else if (!st && stat(dpath, &sb) != 0)
    st = ait_err(AIT_E_IO, "'%s' is not a tuned model: decision.json is missing (%s)", dir,
                 strerror(errno));
  /* nothing of the artifact is used before every file of it checks out */
  if (!st) st = ait_manifest_check(dir);
  if (!st) st = ait_read_file_max(dpath, AIT_MAX_META_BYTES, &text, &size);
  free(dpath);
  if (st) return st;
  cJSON *d = memchr(text, '\0', size) ? NULL : cJSON_ParseWithLength(text, size);
  free(text);
  const char *fmt = json_str(d, "format");
  if (!cJSON_IsObject(d) || !fmt || strcmp(fmt, "aitune-decision")) {
    cJSON_Delete(d);
    return ait_err(AIT_E_PARSE, "%s/decision.json is corrupted or not an aitune decision", dir);
  }
  /* the version first: another version's fields may differ, and that is not damage */
  const cJSON *ver = cJSON_GetObjectItemCaseSensitive(d, "version");
  double version = cJSON_IsNumber(ver) ? ver->valuedouble : -1;
  if (version != AIT_DECISION_VERSION) {
    cJSON_Delete(d);
    return ait_err(AIT_E_UNSUPPORTED,
                   "%s/decision.json has version %.0f; this aitune reads version %d (re-tune)", dir,
                   version >= -1 && version < 1e9 ? version : -1, AIT_DECISION_VERSION);
  }
  char bad[96];
  if (!decision_valid(d, bad, sizeof bad)) {
    cJSON_Delete(d);
    return ait_err(AIT_E_PARSE, "%s/decision.json is corrupted: field '%s' is missing or invalid",
                   dir, bad);
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
  char *report = NULL;
  if ((st = read_report(dir, &report))) {
    cJSON_Delete(d);
    return st;
  }
  char *mpath = ait_path_join(dir, "model.onnx");
  ait_module *m = mpath ? ait_module_alloc(mpath, json_str(d, "name"), lim, &st) : NULL;
  if (!mpath) st = ait_err(AIT_E_NOMEM, "out of memory");
  free(mpath);
  if (!m) {
    free(report);
    cJSON_Delete(d);
    return ait_err_prefix(st, "loading the tuned model in '%s'", dir);
  }
  m->report_json = report;
  m->log = log;
  m->log_user = log_user;
  if (strcmp(m->model_sha, json_str(d, "model_sha256"))) {
    st = ait_err(AIT_E_INVALID_MODEL, "%s/model.onnx does not match the SHA-256 in decision.json",
                 dir);
    goto fail;
  }
  if ((st = check_binding(dir, m->model_sha))) goto fail;
  if ((st = ait_backend_config_parse(json_str(d, "backend"), &m->cfg))) goto fail;
  snprintf(m->desc, sizeof m->desc, "%s", json_str(d, "backend"));
  snprintf(m->tuned_fingerprint, sizeof m->tuned_fingerprint, "%s", tuned_fp);
  m->batch = (int)int_of(d, "batch");
  spec_from_json(cJSON_GetObjectItemCaseSensitive(d, "graph_spec"), &m->spec);
  if ((st = axes_fit_graph(&m->spec, m->model->graph, dir))) goto fail;
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
  ait_mod_free(m);
  return st;
}
