/* Whole-file reads and atomic writes (temp file + rename, so a reader never
 * sees a half-written file). */
#ifndef AIT_CORE_FILEIO_H
#define AIT_CORE_FILEIO_H

#include <stdbool.h>
#include <stddef.h>

#include "aitune.h"

/* Every read goes through ait_open_regular: files are untrusted, so only
 * regular files are opened (a FIFO would block forever, a folder has no
 * size), and sizes are checked against fstat before allocating. */

/* Open `path` read-only if it is a regular file: *fd (caller closes) and its
 * size. AIT_E_IO naming the path and what it is otherwise ("is a directory",
 * "is a FIFO"). */
ait_status ait_open_regular(const char *path, int *fd, long long *size);
/* Read all of `path` into a new buffer (*data, caller frees; NUL-terminated
 * one byte past *size for convenience). AIT_E_IO naming the path on failure. */
ait_status ait_read_file(const char *path, void **data, size_t *size);
/* The most bytes a tuned folder's or cache's small file may have (its JSON,
 * the manifest, a backend's saved text, the batch history): a sparse file
 * of 60 GB as decision.json would otherwise be read whole into memory. */
#define AIT_MAX_META_BYTES (64LL << 20)
/* ait_read_file of a file that may have at most max bytes: a larger one is
 * refused (AIT_E_IO, naming it and both sizes) before anything is read. */
ait_status ait_read_file_max(const char *path, long long max, void **data, size_t *size);
/* Read `length` bytes at `offset` of `path` (length < 0: to the end); a
 * range outside the file is an AIT_E_IO error. */
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
