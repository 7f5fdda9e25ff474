/* The saved-state format (see state_io.h). */
#include "backends/common/state_io.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/error.h"
#include "core/fileio.h"
#include "core/hash.h"

typedef struct file_head {
  char magic[8];
  uint32_t format, version;
  char owner[AIT_STATE_NAME_LEN];
  uint32_t n_sections, zero;
  uint64_t size;
} file_head;

typedef struct sec_head {
  char name[AIT_STATE_NAME_LEN];
  uint64_t length;
} sec_head;

_Static_assert(sizeof(file_head) == 48 && sizeof(sec_head) == 24, "padding in the file format");

/* ---- writing ------------------------------------------------------------ */

static void grow(ait_state_out *o, size_t n) {
  if (o->err || o->n + n <= o->cap) return;
  size_t cap = o->cap ? o->cap : 4096;
  while (cap < o->n + n) {
    if (cap > SIZE_MAX / 2) {
      o->err = ait_err(AIT_E_NOMEM, "saved state larger than memory");
      return;
    }
    cap *= 2;
  }
  uint8_t *p = realloc(o->p, cap);
  if (!p) {
    o->err = ait_err(AIT_E_NOMEM, "out of memory saving %zu bytes of state", o->n + n);
    return;
  }
  o->p = p, o->cap = cap;
}

static void append(ait_state_out *o, const void *data, size_t n) {
  grow(o, n);
  if (o->err || !n) return;
  memcpy(o->p + o->n, data, n);
  o->n += n;
}

static bool name_ok(const char *name) {
  size_t len = name ? strlen(name) : 0;
  return len > 0 && len < AIT_STATE_NAME_LEN;
}

void ait_state_out_init(ait_state_out *o, const char *owner, uint32_t version) {
  memset(o, 0, sizeof *o);
  if (!name_ok(owner)) {
    o->err = ait_err(AIT_E_INVALID_ARG, "saved state: bad owner name");
    return;
  }
  file_head h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, AIT_STATE_MAGIC, sizeof h.magic);
  h.format = AIT_STATE_FORMAT;
  h.version = version;
  memcpy(h.owner, owner, strlen(owner));
  append(o, &h, sizeof h);
}

static void close_section(ait_state_out *o) {
  if (o->err || !o->sec_at) return;
  uint64_t length = o->n - o->sec_at - sizeof(sec_head);
  memcpy(o->p + o->sec_at + offsetof(sec_head, length), &length, sizeof length);
  static const uint8_t pad[8];
  append(o, pad, (8 - o->n % 8) % 8);
  o->sec_at = 0;
}

void ait_state_out_section(ait_state_out *o, const char *name) {
  close_section(o);
  if (o->err) return;
  if (!name_ok(name) || o->n_sections >= AIT_STATE_MAX_SECTIONS) {
    o->err = ait_err(AIT_E_INVALID_ARG, "saved state: bad section name or too many sections");
    return;
  }
  sec_head s;
  memset(&s, 0, sizeof s);
  memcpy(s.name, name, strlen(name));
  size_t at = o->n;
  append(o, &s, sizeof s);
  if (!o->err) o->sec_at = at, o->n_sections++;
}

void ait_state_out_put(ait_state_out *o, const void *data, size_t n) {
  if (!o->err && !o->sec_at)
    o->err = ait_err(AIT_E_INVALID_ARG, "saved state: bytes written outside a section");
  append(o, data, n);
}

void ait_state_out_free(ait_state_out *o) {
  free(o->p);
  memset(o, 0, sizeof *o);
}

ait_status ait_state_out_save(ait_state_out *o, const char *path) {
  close_section(o);
  grow(o, 8);
  ait_status st = o->err;
  if (!st) {
    uint64_t size = o->n + 8;
    memcpy(o->p + offsetof(file_head, n_sections), &o->n_sections, sizeof o->n_sections);
    memcpy(o->p + offsetof(file_head, size), &size, sizeof size);
    uint64_t sum = ait_checksum64(o->p, o->n);
    append(o, &sum, sizeof sum);
    st = ait_write_file_atomic(path, o->p, o->n);
  }
  ait_state_out_free(o);
  return st;
}

/* ---- reading ------------------------------------------------------------ */

static ait_status damaged(const ait_state_in *in, const char *owner, const char *fmt, ...)
    AIT_PRINTF(3, 4);
static ait_status damaged(const ait_state_in *in, const char *owner, const char *fmt, ...) {
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return ait_err(AIT_E_PARSE, "%s: %s %s", owner, in->path, what);
}

/* A name field: NUL-terminated inside its 16 bytes, printable, not empty. */
static bool field_ok(const char *f) {
  if (!memchr(f, 0, AIT_STATE_NAME_LEN) || !f[0]) return false;
  for (const char *c = f; *c; c++)
    if (*c < 0x21 || *c > 0x7e) return false;
  return true;
}

/* The magic, then what an older file or another program's is. */
static ait_status check_magic(const ait_state_in *in, const char *owner) {
  const char *m = in->data;
  if (in->size >= 8 && !memcmp(m, AIT_STATE_MAGIC, 8)) return AIT_OK;
  if (in->size >= 8 && !memcmp(m, "AIT", 3) && !m[7] && field_ok(m))
    return damaged(in, owner,
                   "is in an older aitune format ('%s'), which this build no longer reads: tune "
                   "the model again",
                   m);
  return damaged(in, owner, "is not an aitune saved-state file (%zu bytes)", in->size);
}

static ait_status check_head(ait_state_in *in, const char *owner, uint32_t version) {
  file_head h;
  AIT_TRY(check_magic(in, owner));
  if (in->size < sizeof h + 8)
    return damaged(in, owner, "is corrupted: truncated to %zu bytes", in->size);
  memcpy(&h, in->data, sizeof h);
  if (h.format != AIT_STATE_FORMAT)
    return damaged(in, owner, "has saved-state format version %u; this build reads %u", h.format,
                   AIT_STATE_FORMAT);
  if (!field_ok(h.owner)) return damaged(in, owner, "is corrupted: bad owner name");
  if (strcmp(h.owner, owner))
    return damaged(in, owner, "holds the state of '%s', not of '%s'", h.owner, owner);
  if (h.version != version)
    return damaged(in, owner, "has %s format version %u; this build reads %u", owner, h.version,
                   version);
  if (h.size != in->size)
    return damaged(in, owner, "is corrupted: %zu bytes, its header says %llu (%s)", in->size,
                   (unsigned long long)h.size, h.size > in->size ? "truncated" : "bytes appended");
  uint64_t sum;
  memcpy(&sum, (const uint8_t *)in->data + in->size - 8, 8);
  if (sum != ait_checksum64(in->data, in->size - 8))
    return damaged(in, owner, "is corrupted (checksum mismatch)");
  if (h.zero || h.n_sections > AIT_STATE_MAX_SECTIONS)
    return damaged(in, owner, "is corrupted: bad section count %u", h.n_sections);
  in->n_sections = h.n_sections;
  memcpy(in->owner, h.owner, sizeof in->owner);
  return AIT_OK;
}

/* Walk the section table: each inside the file, names unique, the last
 * ending at the checksum. */
static ait_status check_sections(ait_state_in *in, const char *owner) {
  const uint8_t *b = in->data;
  size_t at = sizeof(file_head), end = in->size - 8;
  for (uint32_t i = 0; i < in->n_sections; i++) {
    sec_head s;
    if (end - at < sizeof s) return damaged(in, owner, "is corrupted: section %u is cut short", i);
    memcpy(&s, b + at, sizeof s);
    at += sizeof s;
    if (!field_ok(s.name)) return damaged(in, owner, "is corrupted: section %u has a bad name", i);
    size_t padded = (size_t)s.length + (8 - s.length % 8) % 8;
    if (s.length > end - at || padded > end - at)
      return damaged(in, owner, "is corrupted: section '%s' runs past the end", s.name);
    for (uint32_t j = 0; j < i; j++)
      if (!strcmp(in->sec[j].name, s.name))
        return damaged(in, owner, "is corrupted: section '%s' appears twice", s.name);
    ait_state_sec *sec = &in->sec[i];
    memcpy(sec->name, s.name, sizeof sec->name);
    sec->p = b + at, sec->n = (size_t)s.length, sec->used = false;
    at += padded;
  }
  if (at != end) return damaged(in, owner, "is corrupted: bytes between the sections and the end");
  return AIT_OK;
}

ait_status ait_state_open(ait_state_in *in, const char *path, const char *owner, uint32_t version) {
  memset(in, 0, sizeof *in);
  in->path = strdup(path);
  if (!in->path) return ait_err(AIT_E_NOMEM, "out of memory");
  ait_status st = ait_read_file(path, &in->data, &in->size);
  if (st) st = ait_err_prefix(st, "%s: cannot load the saved state", owner);
  if (!st) st = check_head(in, owner, version);
  if (!st) st = check_sections(in, owner);
  if (st) ait_state_close(in, st);
  return st;
}

ait_status ait_state_section(ait_state_in *in, const char *name, ait_state_rd *r) {
  memset(r, 0, sizeof *r);
  for (uint32_t i = 0; i < in->n_sections; i++)
    if (!strcmp(in->sec[i].name, name)) {
      in->sec[i].used = true;
      *r = (ait_state_rd){in->sec[i].p, in->sec[i].n, 0, in, in->sec[i].name};
      return AIT_OK;
    }
  return damaged(in, in->owner, "is corrupted: it has no section '%s'", name);
}

ait_status ait_state_corrupt(const ait_state_rd *r, const char *what) {
  return damaged(r->in, r->in->owner, "is corrupted: section '%s': %s", r->name, what);
}

ait_status ait_state_close(ait_state_in *in, ait_status st) {
  for (uint32_t i = 0; !st && i < in->n_sections; i++)
    if (!in->sec[i].used)
      st = damaged(in, in->owner, "is corrupted: it has a section '%s' this build does not read",
                   in->sec[i].name);
  free(in->data);
  free(in->path);
  memset(in, 0, sizeof *in);
  return st;
}
