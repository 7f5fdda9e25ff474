/* Mutation fuzz: bad bytes get a status and a message, never a crash, and a
 * damaged tuned folder never loads.
 *
 *   models:  one to eight random edits (bit flips, random or extreme bytes,
 *            small bumps of varint-like values, deleted bytes, a cut) of a
 *            bundled model; every mutant that loads gets sessions on the
 *            CPU backends and one run on zero inputs of its declared shapes.
 *            Passing means no crash (the sanitizer build turns every memory
 *            error into one).
 *   folders: one to four changed bytes of one file of a saved tuned folder,
 *            or that file cut short. A mutant must be refused: the manifest
 *            (src/tune/manifest.c) covers every file, and the model copy's
 *            digest is in the decision.
 *
 * Seeded and repeatable: AIT_FUZZ_SEED (default 1), AIT_FUZZ_ITERS (models,
 * default 150 per model; folders get a third of it per folder). argv: the
 * bundled models (bert_tiny, mobilenetv2_035); folders are tuned from the
 * first. */
#define _GNU_SOURCE
#include <ftw.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

static uint64_t rng;
static uint64_t rnd(void) { /* xorshift64: fast, and the same on every machine */
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}
static size_t below(size_t n) { return n ? (size_t)(rnd() % n) : 0; }

static uint8_t *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  uint8_t *b = NULL;
  long s = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
  if (s > 0 && fseek(f, 0, SEEK_SET) == 0 && (b = malloc((size_t)s + 64)) &&
      fread(b, 1, (size_t)s, f) != (size_t)s) {
    free(b);
    b = NULL;
  }
  fclose(f);
  *n = s > 0 ? (size_t)s : 0;
  return b;
}

static int spit(const char *path, const uint8_t *b, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  size_t w = fwrite(b, 1, n, f);
  return fclose(f) == 0 && w == n ? 0 : -1;
}

/* Zero inputs of the declared shapes (unknown dims 1, huge ones capped) and
 * one run; shapes too odd to allocate are not tried. */
static void run_once(const ait_model *m, const char *backend) {
  ait_session *s = NULL;
  if (ait_session_create(m, backend, &s) != AIT_OK) return;
  size_t n = ait_model_num_inputs(m);
  ait_tensor_view v[8] = {{0}};
  void *bufs[8] = {0};
  bool ok = n <= 8;
  for (size_t i = 0; ok && i < n; i++) {
    ait_tensor_info info;
    ok = ait_model_input(m, i, &info) == AIT_OK && info.rank >= 0 && info.rank <= 6 &&
         ait_dtype_size(info.dtype) > 0;
    size_t cnt = 1;
    for (int d = 0; ok && d < info.rank; d++) {
      int64_t x = info.dims[d] < 0 ? 1 : info.dims[d] > 4096 ? 4096 : info.dims[d];
      v[i].dims[d] = x, cnt *= (size_t)x;
      ok = cnt <= (1u << 22);
    }
    if (!ok) break;
    v[i].dtype = info.dtype, v[i].rank = info.rank;
    ok = (bufs[i] = v[i].data = calloc(cnt ? cnt : 1, ait_dtype_size(info.dtype))) != NULL;
  }
  if (ok && ait_session_run(s, v, n) == AIT_OK) {
    ait_tensor_view o;
    for (size_t i = 0; i < ait_model_num_outputs(m); i++)
      CHECK(ait_session_output(s, i, &o) == AIT_OK);
  }
  for (size_t i = 0; i < 8; i++)
    free(bufs[i]);
  ait_session_free(s);
}

static void fuzz_model(const char *path, int iters) {
  static const char *const backends[] = {"eager", "native", "onednn", "xnnpack"};
  size_t n;
  uint8_t *orig = slurp(path, &n), *b = orig ? malloc(n) : NULL;
  CHECK(orig && b);
  if (!orig || !b) {
    free(orig);
    return;
  }
  int loaded = 0;
  for (int it = 0; it < iters; it++) {
    memcpy(b, orig, n);
    size_t len = n;
    for (int k = 1 + (int)below(8); k > 0 && len > 16; k--) {
      size_t at = below(len);
      switch (below(6)) {
      case 0: b[at] ^= (uint8_t)(1u << below(8)); break;
      case 1: b[at] = (uint8_t)rnd(); break;
      case 2: b[at] = rnd() & 1 ? 0xff : 0x00; break;
      case 3: b[at] = (uint8_t)(b[at] + below(5) - 2); break;
      case 4: memmove(b + at, b + at + 1, len - at - 1), len--; break;
      default: len = at + 1; break;
      }
    }
    ait_model *m = NULL;
    ait_status st = ait_model_load_buffer(b, len, ".", &m);
    if (st != AIT_OK) {
      CHECK(m == NULL && ait_last_error()[0]); /* refused, with a message */
      continue;
    }
    loaded++;
    for (size_t k = 0; k < sizeof backends / sizeof backends[0]; k++)
      run_once(m, backends[k]);
    ait_model_free(m);
  }
  printf("  %s: %d mutants, %d loaded (and ran where they could), none crashed\n", path, iters,
         loaded);
  free(b);
  free(orig);
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  return remove(p);
}
static void rm_tree(const char *dir) { nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

static char files[256][512];
static int n_files;
static size_t root_len;
static int list_file(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  if (flag == FTW_F && n_files < 256)
    snprintf(files[n_files++], sizeof files[0], "%s", p + root_len + 1);
  return 0;
}

static int copy_tree(const char *from, const char *to) {
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -r '%s' '%s'", to, from, to);
  return system(cmd);
}

/* Tune `model` on one backend, save it, then break it `iters` times. */
static void fuzz_folder(const char *model, const char *backend, int iters, const char *tmp) {
  ait_module *m = NULL;
  CHECK_ERR(ait_module_create(model, NULL, &m), AIT_OK, NULL);
  if (!m) return;
  ait_tune_options o;
  ait_tune_options_init(&o);
  o.strategy = AIT_STRATEGY_ONE_BACKEND;
  o.backends = &backend;
  o.n_backends = 1;
  static const int one[] = {1};
  o.batch_sizes = one;
  o.n_batch_sizes = 1;
  o.min_runs = 2, o.max_runs = 3, o.warmup = 1, o.cv_target = 0, o.time_budget_s = 0.1;
  o.cache_dir = "";
  o.perf_validation = 0;
  char good[600], bad[600];
  snprintf(good, sizeof good, "%s/good", tmp);
  snprintf(bad, sizeof bad, "%s/bad", tmp);
  /* no sample given: the tuner makes one from the declared shapes */
  CHECK_ERR(ait_module_tune(m, &o), AIT_OK, NULL);
  CHECK_ERR(ait_module_save(m, good), AIT_OK, NULL);
  ait_module_free(m);
  n_files = 0;
  root_len = strlen(good);
  nftw(good, list_file, 16, FTW_PHYS);
  CHECK(n_files >= 4);
  int refused = 0, unchanged = 0;
  for (int it = 0; it < iters && n_files; it++) {
    if (copy_tree(good, bad) != 0) {
      CHECK(!"cp -r");
      break;
    }
    const char *rel = files[below((size_t)n_files)];
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", bad, rel);
    size_t n;
    uint8_t *b = slurp(p, &n), *was = b ? malloc(n + 1) : NULL;
    if (!b || !was || !n) { /* an empty file: cutting it changes nothing */
      free(b);
      free(was);
      continue;
    }
    memcpy(was, b, n);
    size_t len = n;
    if (below(5) == 0)
      len = below(n);
    else
      for (int k = 1 + (int)below(4); k > 0; k--) {
        size_t at = below(n);
        b[at] = below(3) ? (uint8_t)(b[at] ^ (1u << below(8))) : (uint8_t)rnd();
      }
    CHECK(spit(p, b, len) == 0);
    bool same = len == n && !memcmp(b, was, n);
    free(b);
    free(was);
    if (same) {
      unchanged++;
      continue;
    }
    ait_module *l = NULL;
    ait_status st = ait_module_load(bad, NULL, NULL, &l);
    if (st == AIT_OK) {
      fprintf(stderr, "fuzz: %s with a damaged %s loaded\n", backend, rel);
      check_failures++;
      ait_module_free(l);
    } else {
      CHECK(l == NULL && strstr(ait_last_error(), rel)); /* the message names the file */
      if (!strstr(ait_last_error(), rel)) fprintf(stderr, "  (%s) %s\n", rel, ait_last_error());
      refused++;
    }
  }
  printf("  %s folder (%d files): %d damaged copies, %d refused by name\n", backend, n_files,
         iters - unchanged, refused);
  rm_tree(bad);
}

int main(int argc, char **argv) {
  const char *s = getenv("AIT_FUZZ_SEED"), *it = getenv("AIT_FUZZ_ITERS");
  rng = (uint64_t)(s ? atoll(s) : 1) * 0x9E3779B97F4A7C15ull + 1;
  int iters = it ? atoi(it) : 150;
  for (int i = 1; i < argc; i++)
    fuzz_model(argv[i], iters);
  char tmp[] = "/tmp/ait_fuzz_XXXXXX";
  if (argc > 1 && mkdtemp(tmp)) {
    static const char *const folders[] = {"native", "xnnpack", "quant:preset=int8dq", "onednn"};
    for (size_t k = 0; k < sizeof folders / sizeof folders[0]; k++)
      fuzz_folder(argv[1], folders[k], iters / 3 > 4 ? iters / 3 : 4, tmp);
    rm_tree(tmp);
  }
  return check_result("test_fuzz");
}
