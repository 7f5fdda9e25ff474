/* The tuned artifact's manifest: MANIFEST.sha256 lists the SHA-256 of every
 * file of the artifact but the model copy (decision.json carries that one's
 * digest, and the manifest covers decision.json), in `sha256sum` format, so
 * `sha256sum -c MANIFEST.sha256` checks a copied artifact by hand too.
 *
 * Why: the backends' saved states are mostly weights. A flipped bit there
 * loads fine and computes wrong answers; the mutation fuzz of session 5 had
 * 11 of 15 corrupted native states load silently. With the manifest every
 * corruption of a listed file is refused, naming the file, before any of it
 * is used. */
#define _XOPEN_SOURCE 700
#include "tune/manifest.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "core/fileio.h"
#include "hw/fingerprint.h"

#define MANIFEST_MAX_FILES 4096 /* an artifact of xnnpack segments has ~100 */

typedef struct {
  char **paths; /* relative to the artifact's root */
  int n;
} file_list;

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void list_free(file_list *l) {
  for (int i = 0; i < l->n; i++)
    free(l->paths[i]);
  free(l->paths);
  l->paths = NULL, l->n = 0;
}

/* Every regular file under root/rel (rel "" = root), depth first. */
static ait_status walk(const char *root, const char *rel, file_list *l) {
  char *dir = rel[0] ? ait_path_join(root, rel) : strdup(root);
  if (!dir) return ait_err(AIT_E_NOMEM, "out of memory");
  DIR *d = opendir(dir);
  if (!d) {
    ait_status st = ait_err(AIT_E_IO, "cannot list '%s': %s", dir, strerror(errno));
    free(dir);
    return st;
  }
  ait_status st = AIT_OK;
  struct dirent *e;
  while (!st && (e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    char *r = rel[0] ? ait_path_join(rel, e->d_name) : strdup(e->d_name);
    char *full = r ? ait_path_join(root, r) : NULL;
    struct stat sb;
    if (!r || !full)
      st = ait_err(AIT_E_NOMEM, "out of memory");
    else if (lstat(full, &sb) != 0)
      st = ait_err(AIT_E_IO, "cannot read '%s': %s", full, strerror(errno));
    else if (S_ISDIR(sb.st_mode))
      st = walk(root, r, l);
    else if (S_ISREG(sb.st_mode) && strcmp(r, "model.onnx") && strcmp(r, AIT_MANIFEST_NAME) &&
             strcmp(r, AIT_MARK_PARTIAL) && strcmp(r, AIT_MARK_PARKED)) {
      if (l->n == MANIFEST_MAX_FILES) {
        st = ait_err(AIT_E_UNSUPPORTED, "'%s' has more than %d files", root, MANIFEST_MAX_FILES);
      } else {
        if (l->n % 64 == 0) {
          char **p = realloc(l->paths, sizeof *p * (size_t)(l->n + 64));
          if (!p) st = ait_err(AIT_E_NOMEM, "out of memory");
          if (p) l->paths = p;
        }
        if (!st) l->paths[l->n++] = r, r = NULL;
      }
    }
    free(r);
    free(full);
  }
  closedir(d);
  free(dir);
  return st;
}

static ait_status digest(const char *root, const char *rel, char *hex65) {
  char *p = ait_path_join(root, rel);
  if (!p) return ait_err(AIT_E_NOMEM, "out of memory");
  ait_status st = AIT_OK;
  if (ait_sha256_file(p, hex65) != 0) st = AIT_E_IO; /* its message names p and why */
  free(p);
  return st;
}

ait_status ait_manifest_write(const char *dir) {
  file_list l = {0};
  ait_status st = walk(dir, "", &l);
  if (!st && l.n) qsort(l.paths, (size_t)l.n, sizeof *l.paths, cmp_str);
  size_t cap = 0, len = 0;
  char *text = NULL;
  for (int i = 0; !st && i < l.n; i++) {
    char hex[65];
    if ((st = digest(dir, l.paths[i], hex))) break;
    size_t need = 64 + 2 + strlen(l.paths[i]) + 1;
    if (len + need + 1 > cap) {
      cap = (len + need + 1) * 2;
      char *t = realloc(text, cap);
      if (!t) {
        st = ait_err(AIT_E_NOMEM, "out of memory");
        break;
      }
      text = t;
    }
    len += (size_t)snprintf(text + len, cap - len, "%s  %s\n", hex, l.paths[i]);
  }
  list_free(&l);
  if (!st) {
    char *p = ait_path_join(dir, AIT_MANIFEST_NAME);
    st =
        p ? ait_write_file_atomic(p, text ? text : "", len) : ait_err(AIT_E_NOMEM, "out of memory");
    free(p);
  }
  free(text);
  return st;
}

/* A manifest path must stay inside the artifact. */
static bool path_ok(const char *p) {
  if (!p[0] || p[0] == '/') return false;
  for (const char *s = p; *s; s++)
    if ((unsigned char)*s < 0x20) return false;
  return strncmp(p, "../", 3) && !strstr(p, "/../") && strcmp(p, "..");
}

ait_status ait_manifest_check(const char *dir) {
  char *mp = ait_path_join(dir, AIT_MANIFEST_NAME);
  if (!mp) return ait_err(AIT_E_NOMEM, "out of memory");
  void *data = NULL;
  size_t size = 0;
  struct stat sb;
  ait_status st = AIT_OK;
  if (stat(mp, &sb) != 0)
    st = ait_err(AIT_E_UNSUPPORTED,
                 "%s has no %s (saved by an older aitune, or not completely): "
                 "re-tune to make a checked artifact",
                 dir, AIT_MANIFEST_NAME);
  else
    st = ait_read_file_max(mp, AIT_MAX_META_BYTES, &data, &size);
  free(mp);
  if (st) return st;
  char *text = data, *line = text, *end = text + size;
  bool has_decision = false;
  int lineno = 0;
  while (!st && line < end) {
    char *nl = memchr(line, '\n', (size_t)(end - line));
    if (!nl) { /* every line ends in a newline: a missing one means a cut */
      st = ait_err(AIT_E_PARSE, "%s/%s is corrupted (line %d has no end)", dir, AIT_MANIFEST_NAME,
                   lineno + 1);
      break;
    }
    *nl = '\0';
    lineno++;
    bool hex_ok = nl - line > 66 && line[64] == ' ' && line[65] == ' ';
    for (int i = 0; hex_ok && i < 64; i++)
      hex_ok = (line[i] >= '0' && line[i] <= '9') || (line[i] >= 'a' && line[i] <= 'f');
    const char *rel = line + 66;
    if (!hex_ok || !path_ok(rel)) {
      st = ait_err(AIT_E_PARSE, "%s/%s is corrupted (line %d)", dir, AIT_MANIFEST_NAME, lineno);
      break;
    }
    char hex[65];
    if ((st = digest(dir, rel, hex))) {
      ait_err_prefix(st, "%s/%s lists '%s'", dir, AIT_MANIFEST_NAME, rel);
      break;
    }
    if (memcmp(hex, line, 64)) {
      st = ait_err(AIT_E_INVALID_MODEL,
                   "%s/%s is corrupted: its SHA-256 does not match %s (re-tune or restore it)", dir,
                   rel, AIT_MANIFEST_NAME);
      break;
    }
    if (!strcmp(rel, "decision.json")) has_decision = true;
    line = nl + 1;
  }
  if (!st && !has_decision)
    st = ait_err(AIT_E_PARSE, "%s/%s is corrupted (decision.json is not listed)", dir,
                 AIT_MANIFEST_NAME);
  free(data);
  return st;
}
