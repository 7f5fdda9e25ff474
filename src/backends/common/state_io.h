/* One saved-state format for every backend's binary files (onednn.bin,
 * xnnpack.bin, quant_weights.bin, cuda_algos.bin), little-endian:
 *
 *   header   "AITSTATE", u32 format version (AIT_STATE_FORMAT), u32 the
 *            owner's own version of its payload, char owner[16] (the
 *            backend's name, NUL-terminated), u32 section count, u32 0,
 *            u64 the file's size in bytes
 *   sections per section: char name[16] (NUL-terminated), u64 payload
 *            length, the payload, zero bytes up to a multiple of 8
 *   checksum u64 ait_checksum64 (core/hash.h) of every byte before it
 *
 * Writing builds the file in memory and saves it with
 * ait_write_file_atomic (temp file, fsync, rename): a reader never sees a
 * half-written file. Reading checks, in order, the magic (a file of the
 * formats before this one is named as such), the format version, the owner
 * and its version, the size, the checksum and the section table before any
 * payload is handed out; the owner then reads each section it knows by name
 * through bounded getters, and a section it did not ask for is an error.
 * Every damage is AIT_E_PARSE with a message naming the owner, the path and
 * the problem; nothing is trusted, nothing crashes. A checksum is not a
 * signature: owners still validate every field they read. */
#ifndef AIT_BACKENDS_COMMON_STATE_IO_H
#define AIT_BACKENDS_COMMON_STATE_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "aitune.h"

#define AIT_STATE_MAGIC "AITSTATE"
#define AIT_STATE_FORMAT 1u
#define AIT_STATE_NAME_LEN 16 /* owner and section names, NUL included */
#define AIT_STATE_MAX_SECTIONS 32

/* ---- writing ------------------------------------------------------------ */

/* A file being built in memory. Zero it with ait_state_out_init; the buffer
 * is owned by the writer until ait_state_out_save or ait_state_out_free. */
typedef struct ait_state_out {
  uint8_t *p;
  size_t n, cap;
  size_t sec_at; /* offset of the open section's header, 0: none */
  uint32_t n_sections;
  ait_status err; /* the first failure, sticky: later calls do nothing */
} ait_state_out;

/* Start a file for `owner` (the backend's name, < 16 bytes) whose payload
 * layout has version `version`. */
void ait_state_out_init(ait_state_out *o, const char *owner, uint32_t version);
/* Close the open section (if any) and open one named `name` (< 16 bytes,
 * unique in the file). */
void ait_state_out_section(ait_state_out *o, const char *name);
/* Append n bytes to the open section. */
void ait_state_out_put(ait_state_out *o, const void *data, size_t n);
/* Close the file, checksum it and write it to `path` atomically; frees the
 * buffer whatever happens. Returns the first failure of any call before. */
ait_status ait_state_out_save(ait_state_out *o, const char *path);
/* Drop a file without writing it. */
void ait_state_out_free(ait_state_out *o);

static inline void ait_state_out_u32(ait_state_out *o, uint32_t v) {
  ait_state_out_put(o, &v, sizeof v);
}
static inline void ait_state_out_u64(ait_state_out *o, uint64_t v) {
  ait_state_out_put(o, &v, sizeof v);
}
static inline void ait_state_out_i64(ait_state_out *o, int64_t v) {
  ait_state_out_put(o, &v, sizeof v);
}

/* ---- reading ------------------------------------------------------------ */

typedef struct ait_state_sec {
  char name[AIT_STATE_NAME_LEN];
  const uint8_t *p;
  size_t n;
  bool used;
} ait_state_sec;

/* A file read and checked whole. Owns its bytes until ait_state_close. */
typedef struct ait_state_in {
  void *data;
  size_t size;
  char *path; /* owned copy, for messages */
  char owner[AIT_STATE_NAME_LEN];
  uint32_t n_sections;
  ait_state_sec sec[AIT_STATE_MAX_SECTIONS];
} ait_state_in;

/* A cursor over one section's payload (borrowed from its ait_state_in). */
typedef struct ait_state_rd {
  const uint8_t *p;
  size_t n, at;
  const ait_state_in *in;
  const char *name;
} ait_state_rd;

/* Read `path` and check it is `owner`'s state of payload version `version`
 * (see the top of this file). On failure *in holds nothing to free; the
 * message names the owner, the path and what is wrong (AIT_E_IO when the
 * file cannot be read, AIT_E_PARSE for anything about its bytes). */
ait_status ait_state_open(ait_state_in *in, const char *path, const char *owner, uint32_t version);
/* A cursor over section `name`; AIT_E_PARSE naming it when the file has
 * none. */
ait_status ait_state_section(ait_state_in *in, const char *name, ait_state_rd *r);
/* Free the file. With st == AIT_OK, a section no ait_state_section asked
 * for is an error (AIT_E_PARSE naming it); otherwise st is returned. */
ait_status ait_state_close(ait_state_in *in, ait_status st);
/* AIT_E_PARSE: "<owner>: <path> is corrupted: section '<name>': <what>". */
ait_status ait_state_corrupt(const ait_state_rd *r, const char *what);

/* Copy the next n bytes of the section to out; false (nothing copied) when
 * fewer are left. */
static inline bool ait_state_get(ait_state_rd *r, void *out, size_t n) {
  if (n > r->n - r->at) return false;
  if (n) memcpy(out, r->p + r->at, n);
  r->at += n;
  return true;
}
/* The next n bytes of the section in place (valid until ait_state_close),
 * or NULL when fewer are left. Not aligned beyond 8 bytes from the start of
 * the section. */
static inline const void *ait_state_view(ait_state_rd *r, size_t n) {
  if (n > r->n - r->at) return NULL;
  const void *p = r->p + r->at;
  r->at += n;
  return p;
}
static inline size_t ait_state_left(const ait_state_rd *r) { return r->n - r->at; }
/* AIT_OK when the whole section was read, an error naming it otherwise. */
static inline ait_status ait_state_end(const ait_state_rd *r) {
  return r->at == r->n ? AIT_OK : ait_state_corrupt(r, "trailing bytes");
}

#endif
