/* Whole-file reads and atomic writes (temp file + rename, so a reader never
 * sees a half-written file). */
#ifndef AIT_CORE_FILEIO_H
#define AIT_CORE_FILEIO_H

#include <stdbool.h>
#include <stddef.h>

#include "aitune.h"

/* Read all of `path` into a new buffer (*data, caller frees; NUL-terminated
 * one byte past *size for convenience). AIT_E_IO naming the path on failure. */
ait_status ait_read_file(const char *path, void **data, size_t *size);
/* Read `length` bytes at `offset` of `path` (length < 0: to the end). */
ait_status ait_read_file_range(const char *path, long long offset, long long length, void **data,
                               size_t *size);
/* Write `size` bytes to `path` atomically: a temp file in the same folder,
 * fsync, then rename over `path`. */
ait_status ait_write_file_atomic(const char *path, const void *data, size_t size);
/* Create a folder and its missing parents (as mkdir -p). */
ait_status ait_mkdir_p(const char *path);
/* Folder part of a path ("." when none), into a new string the caller frees. */
char *ait_path_dir(const char *path);
/* dir + "/" + name, new string the caller frees. */
char *ait_path_join(const char *dir, const char *name);

#endif
