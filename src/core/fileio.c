#include "core/fileio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"

ait_status ait_read_file_range(const char *path, long long offset, long long length, void **data,
                               size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return ait_err(AIT_E_IO, "cannot open '%s': %s", path, strerror(errno));
  if (fseeko(f, 0, SEEK_END) != 0) {
    fclose(f);
    return ait_err(AIT_E_IO, "cannot seek in '%s': %s", path, strerror(errno));
  }
  long long total = (long long)ftello(f);
  if (offset < 0 || offset > total || (length >= 0 && offset + length > total)) {
    fclose(f);
    return ait_err(AIT_E_IO, "'%s' has %lld bytes; cannot read %lld bytes at offset %lld", path,
                   total, length, offset);
  }
  long long n = length < 0 ? total - offset : length;
  char *buf = malloc((size_t)n + 1);
  if (!buf) {
    fclose(f);
    return ait_err(AIT_E_NOMEM, "out of memory reading %lld bytes of '%s'", n, path);
  }
  if (fseeko(f, (off_t)offset, SEEK_SET) != 0 || fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    fclose(f);
    return ait_err(AIT_E_IO, "cannot read '%s'", path);
  }
  fclose(f);
  buf[n] = '\0';
  *data = buf;
  *size = (size_t)n;
  return AIT_OK;
}

ait_status ait_read_file(const char *path, void **data, size_t *size) {
  return ait_read_file_range(path, 0, -1, data, size);
}

ait_status ait_write_file_atomic(const char *path, const void *data, size_t size) {
  size_t n = strlen(path) + 32;
  char *tmp = malloc(n);
  if (!tmp) return ait_err(AIT_E_NOMEM, "out of memory");
  snprintf(tmp, n, "%s.tmp.%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "wb");
  if (!f) {
    ait_status st = ait_err(AIT_E_IO, "cannot create '%s': %s", tmp, strerror(errno));
    free(tmp);
    return st;
  }
  bool ok = fwrite(data, 1, size, f) == size && fflush(f) == 0 && fsync(fileno(f)) == 0;
  ok = (fclose(f) == 0) && ok;
  if (!ok || rename(tmp, path) != 0) {
    ait_status st = ait_err(AIT_E_IO, "cannot write '%s': %s", path, strerror(errno));
    unlink(tmp);
    free(tmp);
    return st;
  }
  free(tmp);
  return AIT_OK;
}

ait_status ait_mkdir_p(const char *path) {
  char buf[4096];
  if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
    return ait_err(AIT_E_INVALID_ARG, "path too long: '%s'", path);
  for (char *p = buf + 1; *p; p++)
    if (*p == '/') {
      *p = '\0';
      mkdir(buf, 0777); /* an existing parent is fine; a real failure shows below */
      *p = '/';
    }
  if (mkdir(buf, 0777) != 0 && errno != EEXIST)
    return ait_err(AIT_E_IO, "cannot create '%s': %s", path, strerror(errno));
  return AIT_OK;
}

char *ait_path_dir(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return strdup(".");
  if (slash == path) return strdup("/");
  return strndup(path, (size_t)(slash - path));
}

char *ait_path_join(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s/%s", dir, name);
  return p;
}
