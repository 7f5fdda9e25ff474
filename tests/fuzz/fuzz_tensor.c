/* libFuzzer target: TensorProto bytes -> ait_tensor_file_read (the reader of
 * test-layout input_K.pb files and, through ait_onnx_tensor_decode, of every
 * initializer): unpack, size checks, typed/raw/string decoding, external
 * data resolution. The bytes are written to a file in a private temporary
 * folder, which holds one small regular file "data.bin" and a symbolic link
 * "link" to /etc/hostname, so external data paths meet a real file, a link
 * out of the folder and missing files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aitune.h"
#include "core/tensor.h"
#include "onnx/onnx_io.h"

const char *__asan_default_options(void) {
  return "allocator_may_return_null=1:max_allocation_size_mb=1024:detect_leaks=1";
}

static char dir[64], path[96];

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/ait-fuzz-tensor.%ld", (long)getpid());
  mkdir(dir, 0700);
  char p[128];
  snprintf(p, sizeof p, "%s/data.bin", dir);
  FILE *f = fopen(p, "wb");
  if (f) {
    for (int i = 0; i < 64; i++)
      fputc(i, f);
    fclose(f);
  }
  snprintf(p, sizeof p, "%s/link", dir);
  if (symlink("/etc/hostname", p) != 0) { /* already there from an earlier run */
  }
  snprintf(path, sizeof path, "%s/input_0.pb", dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!path[0]) setup();
  FILE *f = fopen(path, "wb");
  if (!f) return 0;
  fwrite(data, 1, size, f);
  fclose(f);
  ait_tensor *t = NULL;
  char *name = NULL;
  if (ait_tensor_file_read(path, &t, &name) == AIT_OK) {
    size_t nb = t->kind == AIT_KIND_TENSOR ? ait_tensor_nbytes(t) : 0;
    if (nb && t->dtype != AIT_STRING) (void)((volatile char *)t->data)[nb - 1];
    ait_tensor_free(t);
    free(name);
  }
  return 0;
}
