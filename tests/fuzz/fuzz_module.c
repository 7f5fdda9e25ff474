/* libFuzzer target: a tuned folder's JSON files -> ait_module_load (what
 * `aitune run DIR` and a cache hit during `tune` read). The input is
 * decision.json, then optionally a NUL byte and report.json. "@SHA@" in the
 * decision is replaced by the SHA-256 of the folder's model (a fixed
 * 2x3 Relu, opset 13), so inputs get past the model check. The manifest is
 * rebuilt for every input, because the manifest is a checksum, not a
 * signature: every field must be validated as untrusted. When the load
 * succeeds, the module runs once on zeros and its report is read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aitune.h"
#include "tune/manifest.h"

const char *__asan_default_options(void) {
  return "allocator_may_return_null=1:max_allocation_size_mb=1024:detect_leaks=1";
}

static const unsigned char relu_onnx[] = {
    0x08, 0x0e, 0x3a, 0x3b, 0x0a, 0x0c, 0x0a, 0x01, 0x78, 0x12, 0x01, 0x79, 0x22, 0x04,
    0x52, 0x65, 0x6c, 0x75, 0x12, 0x01, 0x67, 0x5a, 0x13, 0x0a, 0x01, 0x78, 0x12, 0x0e,
    0x0a, 0x0c, 0x08, 0x01, 0x12, 0x08, 0x0a, 0x02, 0x08, 0x02, 0x0a, 0x02, 0x08, 0x03,
    0x62, 0x13, 0x0a, 0x01, 0x79, 0x12, 0x0e, 0x0a, 0x0c, 0x08, 0x01, 0x12, 0x08, 0x0a,
    0x02, 0x08, 0x02, 0x0a, 0x02, 0x08, 0x03, 0x42, 0x04, 0x0a, 0x00, 0x10, 0x0d};
static const unsigned int relu_onnx_len = 69;
static const char relu_sha[] = "a4d7b82b6ab559799468caf60e4672c200b442fa7b18dd824167ac2efd5a9a94";

static char dir[64];

static void put(const char *name, const void *data, size_t size) {
  char p[128];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  FILE *f = fopen(p, "wb");
  if (!f) return;
  fwrite(data, 1, size, f);
  fclose(f);
}

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/ait-fuzz-module.%ld", (long)getpid());
  mkdir(dir, 0700);
  char p[128];
  snprintf(p, sizeof p, "%s/backend", dir);
  mkdir(p, 0700);
  put("model.onnx", relu_onnx, relu_onnx_len);
  /* the backend state's binding to the model: without it every load stops
   * at "the backend state is not bound to a model" */
  char bind[80];
  snprintf(bind, sizeof bind, "%s\n", relu_sha);
  put("backend/model.sha256", bind, strlen(bind));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!dir[0]) setup();
  const uint8_t *nul = memchr(data, 0, size);
  size_t dlen = nul ? (size_t)(nul - data) : size;
  /* decision.json with @SHA@ replaced */
  char *dec = malloc(dlen * 13 + 1), *o = dec;
  if (!dec) return 0;
  for (size_t i = 0; i < dlen; i++) {
    if (i + 5 <= dlen && !memcmp(data + i, "@SHA@", 5)) {
      memcpy(o, relu_sha, 64);
      o += 64;
      i += 4;
    } else {
      *o++ = (char)data[i];
    }
  }
  put("decision.json", dec, (size_t)(o - dec));
  free(dec);
  char p[128];
  snprintf(p, sizeof p, "%s/report.json", dir);
  if (nul)
    put("report.json", nul + 1, size - dlen - 1);
  else
    unlink(p);
  if (ait_manifest_write(dir) != AIT_OK) return 0;
  ait_module *m = NULL;
  if (ait_module_load(dir, NULL, NULL, &m) == AIT_OK) {
    float x[6] = {0};
    ait_tensor_view in = {.dtype = AIT_FLOAT32, .rank = 2, .dims = {2, 3}, .data = x};
    (void)ait_module_infer(m, &in, 1);
    char *json = NULL;
    if (ait_module_report_json(m, &json) == AIT_OK) ait_free(json);
    ait_module_free(m);
  }
  return 0;
}
