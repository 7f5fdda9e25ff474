/* The parts of the public ABI a program relies on across versions: the
 * version macros and ait_version(), and ait_tune_options' and ait_load_options' struct_size (a
 * struct from an older header works, fields past its size take their
 * defaults; a size that cannot be one is refused, naming it), and the
 * cuda plugin's refusal of another build's library.
 * argv: the bundled mobilenetv2_035 model (the last argument). */
#include <dlfcn.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/plugin/plugin.h"
#include "check.h"

static void test_version(void) {
  CHECK(!strcmp(ait_version(), AIT_VERSION_STRING));
  char v[32];
  snprintf(v, sizeof v, "%d.%d.%d", AIT_VERSION_MAJOR, AIT_VERSION_MINOR, AIT_VERSION_PATCH);
  CHECK(!strcmp(v, AIT_VERSION_STRING));
  CHECK(AIT_VERSION_NUMBER ==
        AIT_VERSION_MAJOR * 10000 + AIT_VERSION_MINOR * 100 + AIT_VERSION_PATCH);
}

/* A buffer that can hold options larger than this header's, as a caller
 * built against a newer header has them. */
typedef struct {
  alignas(ait_tune_options) unsigned char b[sizeof(ait_tune_options) + 64];
} opt_buf;

static void test_init(void) {
  ait_tune_options o;
  memset(&o, 0x5a, sizeof o);
  ait_tune_options_init(&o);
  CHECK(o.struct_size == sizeof o);
  CHECK(o.strategy == AIT_STRATEGY_MAX_THROUGHPUT && o.runoff_rounds == 7 && o.warmup == 3);
  ait_tune_options f;
  memset(&f, 0x5a, sizeof f);
  (ait_tune_options_init)(&f); /* the function bindings call */
  CHECK(!memcmp(&o, &f, sizeof o));

  /* an older caller's size: only that much is written */
  size_t old = offsetof(ait_tune_options, runoff_rounds);
  memset(&f, 0x5a, sizeof f);
  CHECK_ERR(ait_tune_options_init_size(&f, old), AIT_OK, NULL);
  CHECK(f.struct_size == old && f.warmup == 3 && f.runoff_rounds == 0x5a5a5a5a);
  /* a newer caller's size: the bytes past this library's fields are zeroed */
  opt_buf nb;
  memset(&nb, 0x5a, sizeof nb);
  CHECK_ERR(ait_tune_options_init_size((ait_tune_options *)nb.b, sizeof nb.b), AIT_OK, NULL);
  CHECK(((ait_tune_options *)nb.b)->struct_size == sizeof nb.b);
  CHECK(nb.b[sizeof(ait_tune_options)] == 0 && nb.b[sizeof nb.b - 1] == 0);

  CHECK_ERR(ait_tune_options_init_size(NULL, sizeof o), AIT_E_INVALID_ARG, "NULL");
  CHECK_ERR(ait_tune_options_init_size(&f, 0), AIT_E_INVALID_ARG, "struct_size is 0");
  CHECK_ERR(ait_tune_options_init_size(&f, 3), AIT_E_INVALID_ARG, "not the size");
  CHECK_ERR(ait_tune_options_init_size(&f, offsetof(ait_tune_options, warmup) + 1),
            AIT_E_INVALID_ARG, "ends inside field warmup");
}

/* Quick one-backend tuning options of size `size` in *o, whose bytes past
 * that size hold garbage that must not be read. */
static void quick(ait_tune_options *o, size_t size) {
  memset(o, 0x5a, sizeof *o);
  CHECK_ERR(ait_tune_options_init_size(o, size), AIT_OK, NULL);
  static const char *const native[] = {"native"};
  static const int batch1[] = {1};
  o->strategy = AIT_STRATEGY_ONE_BACKEND;
  o->backends = native;
  o->n_backends = 1;
  o->batch_sizes = batch1;
  o->n_batch_sizes = 1;
  o->warmup = 0;
  o->min_runs = o->max_runs = 1;
  o->cache_dir = "";
}

static ait_status tune(const char *path, const ait_tune_options *o) {
  ait_module *m = NULL;
  ait_status st = ait_module_create(path, NULL, &m);
  if (!st) st = ait_module_tune(m, o);
  ait_module_free(m);
  return st;
}

static void test_tune_sizes(const char *path) {
  ait_tune_options o;
  quick(&o, sizeof o);
  CHECK_ERR(tune(path, &o), AIT_OK, NULL);

  /* an older header's struct: runoff_rounds is past it, garbage, unread */
  quick(&o, offsetof(ait_tune_options, runoff_rounds));
  CHECK(o.runoff_rounds == 0x5a5a5a5a); /* out of range if it were read */
  CHECK_ERR(tune(path, &o), AIT_OK, NULL);

  quick(&o, sizeof o);
  o.struct_size = 0;
  CHECK_ERR(tune(path, &o), AIT_E_INVALID_ARG, "ait_tune_options_init()");
  o.struct_size = offsetof(ait_tune_options, cache_dir) + 4;
  CHECK_ERR(tune(path, &o), AIT_E_INVALID_ARG, "ends inside field cache_dir");
  o.struct_size = (size_t)0x5a5a5a5a5a5a5a5aull; /* never initialised */
  CHECK_ERR(tune(path, &o), AIT_E_INVALID_ARG, "not the size of tuning options");

  /* a newer header's struct: fine while its new fields are unset */
  opt_buf nb;
  ait_tune_options *n = (ait_tune_options *)nb.b;
  memset(&nb, 0, sizeof nb);
  quick(n, sizeof nb.b);
  CHECK_ERR(tune(path, n), AIT_OK, NULL);
  nb.b[sizeof(ait_tune_options) + 8] = 1;
  CHECK_ERR(tune(path, n), AIT_E_INVALID_ARG, "built against a newer aitune.h");
}

/* ait_load_options follows ait_tune_options' struct_size rules: an older
 * header's struct gets the defaults past its size, a newer one's is fine
 * while its new bytes are zero, and the function form fills what the macro
 * does. */
typedef struct {
  alignas(ait_load_options) unsigned char b[sizeof(ait_load_options) + 64];
} load_buf;

static void test_load_options(const char *path) {
  ait_load_options o, f;
  memset(&o, 0x5a, sizeof o);
  memset(&f, 0x5a, sizeof f);
  ait_load_options_init(&o);
  (ait_load_options_init)(&f);
  CHECK(!memcmp(&o, &f, sizeof o) && o.struct_size == sizeof o);
  CHECK(o.max_depth == AIT_DEFAULT_MAX_DEPTH &&
        o.max_fold_elements == AIT_DEFAULT_MAX_FOLD_ELEMENTS);
  ait_model *m = NULL;
  CHECK_ERR(ait_model_load_opts(path, &o, &m), AIT_OK, NULL);
  ait_model_free(m);
  m = NULL;
  /* an older header's struct, ending before max_fold_elements: garbage there is unread */
  memset(&f, 0x5a, sizeof f);
  CHECK_ERR(ait_load_options_init_size(&f, offsetof(ait_load_options, max_fold_elements)), AIT_OK,
            NULL);
  CHECK_ERR(ait_model_load_opts(path, &f, &m), AIT_OK, NULL);
  ait_model_free(m);
  m = NULL;
  load_buf nb;
  memset(&nb, 0x5a, sizeof nb);
  ait_load_options *n = (ait_load_options *)nb.b;
  CHECK_ERR(ait_load_options_init_size(n, sizeof nb.b), AIT_OK, NULL);
  CHECK(nb.b[sizeof(ait_load_options)] == 0 && nb.b[sizeof nb.b - 1] == 0);
  CHECK_ERR(ait_model_load_opts(path, n, &m), AIT_OK, NULL);
  ait_model_free(m);
  m = NULL;
  nb.b[sizeof(ait_load_options) + 8] = 1;
  CHECK_ERR(ait_model_load_opts(path, n, &m), AIT_E_INVALID_ARG, "built against a newer aitune.h");
  o.struct_size = (size_t)0x5a5a5a5a5a5a5a5aull;
  CHECK_ERR(ait_model_load_opts(path, &o, &m), AIT_E_INVALID_ARG, "not the size of load options");
  CHECK_ERR(ait_load_options_init_size(NULL, sizeof o), AIT_E_INVALID_ARG, "NULL");
  CHECK(m == NULL);
}

/* The cuda plugin of this build (beside the build's libaitune, one folder
 * up from this test) refuses a host table of another interface or build,
 * saying which; SKIP where it was not built. */
static void test_plugin_refusals(void) {
  char path[4096];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 64);
  if (n <= 0) return;
  path[n] = '\0';
  char *slash = strrchr(path, '/');
  if (!slash) return;
  strcpy(slash, "/../libaitune_cuda.so");
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    printf("SKIP: plugin refusals: %s\n", dlerror());
    return;
  }
  ait_plugin_init_fn init = (ait_plugin_init_fn)(uintptr_t)dlsym(h, AIT_PLUGIN_INIT_SYMBOL);
  CHECK(init != NULL);
  if (!init) return;
  ait_plugin_host host;
  memset(&host, 0, sizeof host);
  host.abi = AIT_PLUGIN_ABI + 1;
  host.size = sizeof host;
  host.build_id = "0.0.0+another";
  const ait_backend_iface *iface = (const ait_backend_iface *)&host;
  char why[512] = "";
  CHECK(init(NULL, &iface, why, sizeof why) == AIT_E_UNSUPPORTED && !iface);
  CHECK(init(&host, &iface, why, sizeof why) == AIT_E_UNSUPPORTED && !iface);
  CHECK(strstr(why, "plugin interface") != NULL);
  host.abi = AIT_PLUGIN_ABI;
  CHECK(init(&host, &iface, why, sizeof why) == AIT_E_UNSUPPORTED && !iface);
  CHECK(strstr(why, "the library is 0.0.0+another: install both from one build") != NULL);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_abi [...] MOBILENET.onnx\n");
    return 2;
  }
  test_version();
  test_init();
  test_tune_sizes(argv[argc - 1]);
  test_load_options(argv[argc - 1]);
  test_plugin_refusals();
  return check_result("test_abi");
}
