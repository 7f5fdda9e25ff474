/* Folder copies for `aitune publish`: the tuned folder goes into the
 * version folder file by file (regular files and folders only). */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/fileio.h"
#include "publish.h"

static ait_status copy_file(const char *src, const char *dst) {
  int in;
  long long size;
  AIT_TRY(ait_open_regular(src, &in, &size)); /* a FIFO would block the copy */
  int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (out < 0) {
    int e = errno;
    close(in);
    return ait_err(AIT_E_IO, "cannot create %s: %s", dst, strerror(e));
  }
  char buf[1 << 16];
  ait_status st = AIT_OK;
  for (;;) {
    ssize_t n = read(in, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      st = ait_err(AIT_E_IO, "cannot read %s: %s", src, strerror(errno));
      break;
    }
    for (ssize_t at = 0; at < n;) {
      ssize_t w = write(out, buf + at, (size_t)(n - at));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) {
        st = ait_err(AIT_E_IO, "cannot write %s: %s", dst, strerror(errno));
        break;
      }
      at += w;
    }
    if (st) break;
  }
  close(in);
  if (close(out) && !st) st = ait_err(AIT_E_IO, "cannot write %s: %s", dst, strerror(errno));
  return st;
}

ait_status pub_copy_tree(const char *src, const char *dst) {
  if (mkdir(dst, 0755))
    return ait_err(AIT_E_IO, "cannot create folder %s: %s", dst, strerror(errno));
  DIR *d = opendir(src);
  if (!d) return ait_err(AIT_E_IO, "cannot read folder %s: %s", src, strerror(errno));
  ait_status st = AIT_OK;
  struct dirent *e;
  while (!st && (e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    char *s = ait_path_join(src, e->d_name), *t = ait_path_join(dst, e->d_name);
    struct stat sb;
    if (!s || !t)
      st = ait_err(AIT_E_NOMEM, "out of memory");
    else if (lstat(s, &sb))
      st = ait_err(AIT_E_IO, "cannot stat %s: %s", s, strerror(errno));
    else if (S_ISDIR(sb.st_mode))
      st = pub_copy_tree(s, t);
    else if (S_ISREG(sb.st_mode))
      st = copy_file(s, t);
    else
      st = ait_err(AIT_E_IO, "%s is neither a file nor a folder; a tuned folder holds only those",
                   s);
    free(s);
    free(t);
  }
  closedir(d);
  return st;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)ftw;
  return flag == FTW_DP ? rmdir(path) : unlink(path);
}

ait_status pub_remove_tree(const char *path) {
  struct stat sb;
  if (lstat(path, &sb)) return AIT_OK;
  if (nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS))
    return ait_err(AIT_E_IO, "cannot remove %s: %s", path, strerror(errno));
  return AIT_OK;
}
