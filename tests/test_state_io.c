/* The saved-state format (src/backends/common/state_io.h) on its own: a
 * round trip, then every way a file goes bad (each byte flipped, each
 * length cut, the formats before it, another owner or version, a missing,
 * unread, repeated or overlong section) gives AIT_E_PARSE and a message
 * naming the owner, the path and the problem; never a crash. */
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/common/state_io.h"
#include "check.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/hash.h"

static char dir[] = "/tmp/test_state_io_XXXXXX";
static char path[256];

/* A file of three sections: "head" (5 bytes), "empty", "blob" (n bytes). */
static ait_status write_sample(const char *owner, uint32_t version, const uint8_t *blob, size_t n) {
  ait_state_out o;
  ait_state_out_init(&o, owner, version);
  ait_state_out_section(&o, "head");
  ait_state_out_put(&o, "hello", 5);
  ait_state_out_section(&o, "empty");
  ait_state_out_section(&o, "blob");
  ait_state_out_put(&o, blob, n);
  return ait_state_out_save(&o, path);
}

/* Open and read the sample whole; AIT_OK only when every byte is back. */
static ait_status read_sample(const uint8_t *blob, size_t n) {
  ait_state_in in;
  ait_state_rd r;
  AIT_TRY(ait_state_open(&in, path, "owner", 7));
  char head[5];
  ait_status st = ait_state_section(&in, "head", &r);
  if (!st && (!ait_state_get(&r, head, 5) || memcmp(head, "hello", 5)))
    st = ait_state_corrupt(&r, "head differs");
  if (!st) st = ait_state_end(&r);
  if (!st) st = ait_state_section(&in, "empty", &r);
  if (!st && ait_state_left(&r) != 0) st = ait_state_corrupt(&r, "empty is not");
  if (!st) st = ait_state_section(&in, "blob", &r);
  const void *p = st ? NULL : ait_state_view(&r, n);
  if (!st && (!p || (n && memcmp(p, blob, n)))) st = ait_state_corrupt(&r, "blob differs");
  if (!st) st = ait_state_end(&r);
  return ait_state_close(&in, st);
}

static void test_round_trip(const uint8_t *blob, size_t n) {
  CHECK_ERR(write_sample("owner", 7, blob, n), AIT_OK, NULL);
  CHECK_ERR(read_sample(blob, n), AIT_OK, NULL);
  /* reading past a section's end fails without copying; unread bytes are named */
  ait_state_in in;
  ait_state_rd r;
  CHECK_ERR(ait_state_open(&in, path, "owner", 7), AIT_OK, NULL);
  CHECK_ERR(ait_state_section(&in, "head", &r), AIT_OK, NULL);
  char buf[8] = "xxxxxxx";
  CHECK(!ait_state_get(&r, buf, 6) && buf[0] == 'x' && ait_state_left(&r) == 5);
  CHECK(ait_state_view(&r, 6) == NULL);
  CHECK(ait_state_get(&r, buf, 2) && !memcmp(buf, "he", 2));
  CHECK_ERR(ait_state_end(&r), AIT_E_PARSE, "section 'head': trailing bytes");
  /* a section the reader never asks for */
  CHECK_ERR(ait_state_section(&in, "empty", &r), AIT_OK, NULL);
  CHECK_ERR(ait_state_close(&in, AIT_OK), AIT_E_PARSE, "section 'blob' this build does not read");
  /* a section the file does not have */
  CHECK_ERR(ait_state_open(&in, path, "owner", 7), AIT_OK, NULL);
  CHECK_ERR(ait_state_section(&in, "weights", &r), AIT_E_PARSE, "no section 'weights'");
  CHECK_ERR(ait_state_close(&in, AIT_E_PARSE), AIT_E_PARSE, NULL);
}

/* Every byte flipped and every length cut: an error naming owner and path. */
static void test_damage(const uint8_t *blob, size_t n) {
  CHECK_ERR(write_sample("owner", 7, blob, n), AIT_OK, NULL);
  void *data = NULL;
  size_t size = 0;
  CHECK_ERR(ait_read_file(path, &data, &size), AIT_OK, NULL);
  if (!data) return;
  uint8_t *b = data;
  int missed = 0;
  for (size_t at = 0; at < size; at++) {
    b[at] ^= 0x41;
    CHECK_ERR(ait_write_file_atomic(path, b, size), AIT_OK, NULL);
    ait_status st = read_sample(blob, n);
    const char *msg = ait_last_error();
    if (st != AIT_E_PARSE || !strstr(msg, "owner: ") || !strstr(msg, path)) {
      if (!missed++) fprintf(stderr, "byte %zu flipped: %d \"%s\"\n", at, st, msg);
    }
    b[at] ^= 0x41;
  }
  CHECK(missed == 0);
  missed = 0;
  for (size_t len = 0; len < size; len++) {
    CHECK_ERR(ait_write_file_atomic(path, b, len), AIT_OK, NULL);
    ait_status st = read_sample(blob, n);
    const char *msg = ait_last_error();
    if (st != AIT_E_PARSE || !strstr(msg, path) ||
        !(strstr(msg, "truncated") || strstr(msg, "not an aitune saved-state file")))
      if (!missed++) fprintf(stderr, "cut to %zu bytes: %d \"%s\"\n", len, st, msg);
  }
  CHECK(missed == 0);
  /* bytes appended */
  uint8_t *more = malloc(size + 8);
  if (more) {
    memcpy(more, b, size);
    memset(more + size, 0, 8);
    CHECK_ERR(ait_write_file_atomic(path, more, size + 8), AIT_OK, NULL);
    CHECK_ERR(read_sample(blob, n), AIT_E_PARSE, "bytes appended");
    free(more);
  }
  /* the header's checksum made right again: the checks behind it still hold */
  uint64_t len = 1u << 30;
  memcpy(b + 48 + 16, &len, 8); /* the first section's length */
  uint64_t sum = ait_checksum64(b, size - 8);
  memcpy(b + size - 8, &sum, 8);
  CHECK_ERR(ait_write_file_atomic(path, b, size), AIT_OK, NULL);
  CHECK_ERR(read_sample(blob, n), AIT_E_PARSE, "section 'head' runs past the end");
  free(data);
}

/* The formats before this one, other files, another owner or version. */
static void test_not_mine(void) {
  static const char *const old[] = {"AITDNNL", "AITXNNP", "AITQNTW", "AITCUDA"};
  uint8_t buf[128];
  for (int i = 0; i < 4; i++) {
    memset(buf, 0x11, sizeof buf);
    memcpy(buf, old[i], 8);
    CHECK_ERR(ait_write_file_atomic(path, buf, sizeof buf), AIT_OK, NULL);
    char want[64];
    snprintf(want, sizeof want, "older aitune format ('%s')", old[i]);
    CHECK_ERR(read_sample(NULL, 0), AIT_E_PARSE, want);
  }
  CHECK_ERR(ait_write_file_atomic(path, "{\"json\": true}", 14), AIT_OK, NULL);
  CHECK_ERR(read_sample(NULL, 0), AIT_E_PARSE, "not an aitune saved-state file (14 bytes)");
  CHECK_ERR(ait_write_file_atomic(path, "", 0), AIT_OK, NULL);
  CHECK_ERR(read_sample(NULL, 0), AIT_E_PARSE, "not an aitune saved-state file (0 bytes)");
  CHECK_ERR(write_sample("other", 7, NULL, 0), AIT_OK, NULL);
  CHECK_ERR(read_sample(NULL, 0), AIT_E_PARSE, "holds the state of 'other', not of 'owner'");
  CHECK_ERR(write_sample("owner", 6, NULL, 0), AIT_OK, NULL);
  CHECK_ERR(read_sample(NULL, 0), AIT_E_PARSE, "owner format version 6; this build reads 7");
  /* the format's own version, read before the checksum */
  void *data = NULL;
  size_t size = 0;
  CHECK_ERR(ait_read_file(path, &data, &size), AIT_OK, NULL);
  if (data) {
    memset((uint8_t *)data + 8, 0x7f, 4);
    CHECK_ERR(ait_write_file_atomic(path, data, size), AIT_OK, NULL);
    CHECK_ERR(read_sample(NULL, 0), AIT_E_PARSE, "saved-state format version 2139062143");
  }
  free(data);
  /* a section written twice */
  ait_state_out o;
  ait_state_out_init(&o, "owner", 7);
  ait_state_out_section(&o, "head");
  ait_state_out_section(&o, "head");
  CHECK_ERR(ait_state_out_save(&o, path), AIT_OK, NULL);
  CHECK_ERR(read_sample(NULL, 0), AIT_E_PARSE, "section 'head' appears twice");
  /* no file, a folder */
  char *none = ait_path_join(dir, "missing.bin");
  ait_state_in in;
  CHECK_ERR(ait_state_open(&in, none, "owner", 7), AIT_E_IO, "owner: cannot load the saved state");
  free(none);
  CHECK_ERR(ait_state_open(&in, dir, "owner", 7), AIT_E_IO, "is a directory");
}

/* The writer refuses what would make a bad file, and writes nothing. */
static void test_writer_misuse(void) {
  unlink(path);
  ait_state_out o;
  ait_state_out_init(&o, "owner", 7);
  ait_state_out_put(&o, "x", 1);
  CHECK_ERR(ait_state_out_save(&o, path), AIT_E_INVALID_ARG, "outside a section");
  ait_state_out_init(&o, "a name far too long", 7);
  ait_state_out_section(&o, "head");
  CHECK_ERR(ait_state_out_save(&o, path), AIT_E_INVALID_ARG, "owner name");
  ait_state_out_init(&o, "owner", 7);
  ait_state_out_section(&o, "");
  CHECK_ERR(ait_state_out_save(&o, path), AIT_E_INVALID_ARG, "section name");
  ait_state_out_init(&o, "owner", 7);
  for (int i = 0; i <= AIT_STATE_MAX_SECTIONS; i++)
    ait_state_out_section(&o, "s");
  CHECK_ERR(ait_state_out_save(&o, path), AIT_E_INVALID_ARG, "too many sections");
  struct stat st;
  CHECK(stat(path, &st) != 0);
  ait_state_out_init(&o, "owner", 7);
  ait_state_out_section(&o, "head");
  ait_state_out_free(&o);
  CHECK(stat(path, &st) != 0);
}

int main(void) {
  CHECK(mkdtemp(dir) != NULL);
  snprintf(path, sizeof path, "%s/state.bin", dir);
  uint8_t *blob = malloc(100003);
  for (size_t i = 0; blob && i < 100003; i++)
    blob[i] = (uint8_t)(i * 2654435761u >> 13);
  test_round_trip(blob, 100003);
  test_round_trip(blob, 0);
  test_damage(blob, 37);
  test_not_mine();
  test_writer_misuse();
  free(blob);
  unlink(path);
  rmdir(dir);
  return check_result("test_state_io");
}
