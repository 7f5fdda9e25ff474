#include "core/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"

ait_status ait_open_regular(const char *path, int *fd_out, long long *size_out) {
  /* O_NONBLOCK so opening a FIFO (which would wait for a writer) returns at
   * once; fstat then refuses anything that is not a regular file. */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return ait_err(AIT_E_IO, "cannot open '%s': %s", path, strerror(errno));
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    ait_status st = ait_err(AIT_E_IO, "cannot stat '%s': %s", path, strerror(errno));
    close(fd);
    return st;
  }
  if (!S_ISREG(sb.st_mode)) {
    close(fd);
    return ait_err(AIT_E_IO, "'%s' is %s, not a regular file", path,
                   S_ISDIR(sb.st_mode)    ? "a directory"
                   : S_ISFIFO(sb.st_mode) ? "a FIFO"
                   : S_ISSOCK(sb.st_mode) ? "a socket"
                                          : "a device or special file");
  }
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    ait_status st = ait_err(AIT_E_IO, "cannot read '%s': %s", path, strerror(errno));
    close(fd);
    return st;
  }
  *fd_out = fd;
  *size_out = (long long)sb.st_size;
  return AIT_OK;
}

ait_status ait_read_file_range(const char *path, long long offset, long long length, void **data,
                               size_t *size) {
  int fd;
  long long total;
  AIT_TRY(ait_open_regular(path, &fd, &total));
  /* sizes are checked against the file before anything is allocated */
  if (offset < 0 || offset > total || (length >= 0 && length > total - offset)) {
    close(fd);
    return ait_err(AIT_E_IO, "'%s' has %lld bytes; cannot read %lld bytes at offset %lld", path,
                   total, length, offset);
  }
  long long n = length < 0 ? total - offset : length;
  if ((unsigned long long)n >= (unsigned long long)SIZE_MAX) {
    close(fd);
    return ait_err(AIT_E_NOMEM, "'%s' is too large to read (%lld bytes)", path, n);
  }
  char *buf = malloc((size_t)n + 1);
  if (!buf) {
    close(fd);
    return ait_err(AIT_E_NOMEM, "out of memory reading %lld bytes of '%s'", n, path);
  }
  long long got = 0;
  while (got < n) {
    ssize_t r = pread(fd, buf + got, (size_t)(n - got), (off_t)(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) { /* an error, or the file shrank under us */
      ait_status st = ait_err(AIT_E_IO, "cannot read '%s': %s", path,
                              r < 0 ? strerror(errno) : "it ended early");
      free(buf);
      close(fd);
      return st;
    }
    got += r;
  }
  close(fd);
  buf[n] = '\0';
  *data = buf;
  *size = (size_t)n;
  return AIT_OK;
}

ait_status ait_read_file(const char *path, void **data, size_t *size) {
  return ait_read_file_range(path, 0, -1, data, size);
}

ait_status ait_read_file_max(const char *path, long long max, void **data, size_t *size) {
  int fd = -1;
  long long total = 0;
  AIT_TRY(ait_open_regular(path, &fd, &total));
  close(fd);
  if (total > max)
    return ait_err(AIT_E_IO, "'%s' has %lld bytes, more than the %lld it may have", path, total,
                   max);
  /* opened again: a file that grew in between is still read whole only up to its new size */
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
