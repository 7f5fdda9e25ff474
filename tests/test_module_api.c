/* The module API the Python package stands on: modules made from model bytes
 * (ait_module_create_buffer), caller-given ranges of dynamic axes
 * (ait_module_set_axis_range) and the selected batch size
 * (ait_module_batch_size), what its backend holds (ait_module_memory), and
 * ModelProto.metadata_props (ait_model_metadata). The model is y = Relu(x), x [N, 8] float with a
 * symbolic batch N; tuning is one-backend eager or native, briefly. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <ftw.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "model_builder.h"

#define WIDTH 8

static uint8_t *relu_model(size_t *size) {
  static const int64_t d[2] = {-1, WIDTH};
  tb_model *tb = tb_new(13);
  tb_input(tb, "x", AIT_FLOAT32, 2, d);
  tb_output(tb, "y", AIT_FLOAT32, 2, d);
  tb_node(tb, "Relu", "relu", (const char *[]){"x", NULL}, (const char *[]){"y", NULL});
  uint8_t *buf = tb_pack(tb, size);
  tb_free(tb);
  return buf;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  return remove(path);
}

static void fast_opts(ait_tune_options *o, const char *const *backend) {
  static const int batches[2] = {1, 2};
  ait_tune_options_init(o);
  o->strategy = AIT_STRATEGY_ONE_BACKEND;
  o->backends = backend;
  o->n_backends = 1;
  o->batch_sizes = batches;
  o->n_batch_sizes = 2;
  o->warmup = 1;
  o->min_runs = 2;
  o->max_runs = 3;
  o->cv_target = 0;
  o->time_budget_s = 0.1;
  o->runoff_rounds = 0;
  o->cache_dir = "";
}

static cJSON *report_of(const ait_module *m) {
  char *js = NULL;
  CHECK_ERR(ait_module_report_json(m, &js), AIT_OK, NULL);
  cJSON *r = js ? cJSON_Parse(js) : NULL;
  ait_free(js);
  CHECK(r != NULL);
  return r;
}

static void check_relu(ait_module *m, int batch) {
  float x[4 * WIDTH];
  for (int i = 0; i < batch * WIDTH; i++)
    x[i] = (float)(i % 5) - 2.0f;
  ait_tensor_view in = {.dtype = AIT_FLOAT32, .rank = 2, .dims = {batch, WIDTH}, .data = x}, out;
  CHECK_ERR(ait_module_infer(m, &in, 1), AIT_OK, NULL);
  CHECK_ERR(ait_module_output(m, 0, &out), AIT_OK, NULL);
  CHECK(out.rank == 2 && out.dims[0] == batch && out.dims[1] == WIDTH);
  int bad = 0;
  for (int i = 0; out.data && i < batch * WIDTH; i++)
    bad += ((const float *)out.data)[i] != (x[i] > 0 ? x[i] : 0.0f);
  CHECK(bad == 0);
}

static void test_create_buffer(void) {
  size_t size;
  uint8_t *bytes = relu_model(&size);
  ait_module *m = NULL;
  CHECK_ERR(ait_module_create_buffer(NULL, size, NULL, NULL, &m), AIT_E_INVALID_ARG, "data");
  CHECK_ERR(ait_module_create_buffer(bytes, size, NULL, NULL, NULL), AIT_E_INVALID_ARG, "out");
  static const char junk[] = "not an onnx model at all";
  CHECK_ERR(ait_module_create_buffer(junk, sizeof junk, NULL, NULL, &m), AIT_E_PARSE,
            "model bytes");
  CHECK(m == NULL);
  CHECK_ERR(ait_module_create_buffer(bytes, size, NULL, "relu", &m), AIT_OK, NULL);
  /* the module holds its own copy: the caller's bytes may go */
  uint8_t *copy = malloc(size);
  memcpy(copy, bytes, size);
  memset(bytes, 0, size);
  check_relu(m, 2); /* before tuning: the reference, and a recorded sample */
  CHECK(ait_module_batch_size(m) == 0);
  int64_t wb = -1, work = -1;
  CHECK_ERR(ait_module_memory(m, &wb, &work), AIT_E_NOT_FOUND, "not tuned");
  CHECK_ERR(ait_module_memory(NULL, &wb, &work), AIT_E_INVALID_ARG, NULL);
  const char *native[] = {"native"};
  ait_tune_options o;
  fast_opts(&o, native);
  CHECK_ERR(ait_module_tune(m, &o), AIT_OK, NULL);
  check_relu(m, 3);
  /* what the selected backend holds, where it says (cuda); the CPU
   * backends do not, and the error names the backend */
  ait_status mst = ait_module_memory(m, &wb, &work);
  CHECK(mst == AIT_OK || mst == AIT_E_UNSUPPORTED);
  CHECK(mst != AIT_OK || (wb >= 0 && work >= 0));
  CHECK(mst == AIT_OK || strstr(ait_last_error(), ait_module_backend(m)));
  cJSON *r = report_of(m);
  const cJSON *model = cJSON_GetObjectItemCaseSensitive(r, "model");
  const cJSON *path = cJSON_GetObjectItemCaseSensitive(model, "path");
  CHECK(cJSON_IsString(path) && !strcmp(path->valuestring, "(memory)"));
  const cJSON *sel = cJSON_GetObjectItemCaseSensitive(r, "selection");
  const cJSON *batch = cJSON_GetObjectItemCaseSensitive(sel, "batch");
  CHECK(cJSON_IsNumber(batch) && batch->valueint == ait_module_batch_size(m));
  CHECK(ait_module_batch_size(m) >= 1);
  cJSON_Delete(r);

  /* saved and loaded back: the folder's model is the bytes given */
  char dir[64] = "/tmp/ait_test_module_api_XXXXXX", out[128], mp[160];
  CHECK(mkdtemp(dir) != NULL);
  snprintf(out, sizeof out, "%s/tuned", dir);
  CHECK_ERR(ait_module_save(m, out), AIT_OK, NULL);
  snprintf(mp, sizeof mp, "%s/model.onnx", out);
  FILE *f = fopen(mp, "rb");
  uint8_t *back = malloc(size + 1);
  size_t got = f ? fread(back, 1, size + 1, f) : 0;
  if (f) fclose(f);
  CHECK(got == size && !memcmp(back, copy, size));
  ait_module *l = NULL;
  CHECK_ERR(ait_module_load(out, NULL, NULL, &l), AIT_OK, NULL);
  CHECK(l && !strcmp(ait_module_backend(l), ait_module_backend(m)));
  CHECK(l && ait_module_batch_size(l) == ait_module_batch_size(m));
  if (l) check_relu(l, 1);
  ait_module_free(l);
  ait_module_free(m);
  nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  free(back);
  free(copy);
  free(bytes);
}

static const cJSON *axis0_of(const cJSON *r) {
  const cJSON *spec = cJSON_GetObjectItemCaseSensitive(r, "graph_spec");
  return cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(spec, "axes"), 0);
}

static double num(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

static void test_axis_range(void) {
  size_t size;
  uint8_t *bytes = relu_model(&size);
  ait_module *m = NULL;
  CHECK_ERR(ait_module_create_buffer(bytes, size, NULL, NULL, &m), AIT_OK, NULL);
  CHECK_ERR(ait_module_set_axis_range(NULL, "x", 0, 1, 1, 1), AIT_E_INVALID_ARG, NULL);
  CHECK_ERR(ait_module_set_axis_range(m, "nope", 0, 1, 2, 4), AIT_E_NOT_FOUND, "no input 'nope'");
  CHECK_ERR(ait_module_set_axis_range(m, "x", 1, 1, 2, 4), AIT_E_INVALID_ARG, "fixed at 8");
  CHECK_ERR(ait_module_set_axis_range(m, "x", 2, 1, 2, 4), AIT_E_INVALID_ARG, "no axis 2");
  CHECK_ERR(ait_module_set_axis_range(m, "x", -1, 1, 2, 4), AIT_E_INVALID_ARG, "no axis -1");
  CHECK_ERR(ait_module_set_axis_range(m, "x", 0, 0, 2, 4), AIT_E_INVALID_ARG, "1 <= min");
  CHECK_ERR(ait_module_set_axis_range(m, "x", 0, 3, 2, 4), AIT_E_INVALID_ARG, "1 <= min");
  CHECK_ERR(ait_module_set_axis_range(m, "x", 0, 1, 5, 4), AIT_E_INVALID_ARG, "1 <= min");
  CHECK_ERR(ait_module_set_axis_range(m, "x", 0, 1, 1, (int64_t)1 << 40), AIT_E_INVALID_ARG, NULL);
  /* a second call replaces the first */
  CHECK_ERR(ait_module_set_axis_range(m, "x", 0, 1, 2, 3), AIT_OK, NULL);
  CHECK_ERR(ait_module_set_axis_range(m, "x", 0, 2, 3, 4), AIT_OK, NULL);
  float x[4 * WIDTH] = {0};
  ait_tensor_view one = {.dtype = AIT_FLOAT32, .rank = 2, .dims = {1, WIDTH}, .data = x};
  ait_tensor_view three = {.dtype = AIT_FLOAT32, .rank = 2, .dims = {3, WIDTH}, .data = x};
  CHECK_ERR(ait_module_add_sample(m, &three, 1), AIT_OK, NULL);
  const char *eager[] = {"eager"};
  ait_tune_options o;
  fast_opts(&o, eager);
  o.batch_sizes = NULL; /* the batch sweep may widen the range: min <= 2, max >= 4 */
  o.n_batch_sizes = 0;
  CHECK_ERR(ait_module_tune(m, &o), AIT_OK, NULL);
  cJSON *r = report_of(m);
  const cJSON *a = axis0_of(r);
  CHECK(num(a, "input") == 0 && num(a, "axis") == 0);
  CHECK(num(a, "opt") == 3);
  CHECK(num(a, "min") <= 2 && num(a, "max") >= 4);
  CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "batch")));
  cJSON_Delete(r);
  check_relu(m, 4);
  /* a sample outside the range is refused by name when tuning */
  CHECK_ERR(ait_module_add_sample(m, &one, 1), AIT_OK, NULL);
  CHECK_ERR(ait_module_tune(m, &o), AIT_E_SHAPE, "sample 1: input 'x' axis 0 is 1");
  ait_module_free(m);
  free(bytes);
}

/* ModelProto field 14 (metadata_props) entry {key, value} appended to
 * serialized model bytes: protobuf merges it into the message (this is how
 * the Python package tags its exports). Short strings only (one-byte sizes). */
static uint8_t *with_prop(const uint8_t *model, size_t size, const char *key, const char *value,
                          size_t *out_size) {
  size_t kl = strlen(key), vl = strlen(value), inner = 2 + kl + 2 + vl;
  uint8_t *b = malloc(size + 2 + inner);
  memcpy(b, model, size);
  uint8_t *p = b + size;
  *p++ = 14 << 3 | 2;
  *p++ = (uint8_t)inner;
  *p++ = 1 << 3 | 2;
  *p++ = (uint8_t)kl;
  memcpy(p, key, kl);
  p += kl;
  *p++ = 2 << 3 | 2;
  *p++ = (uint8_t)vl;
  memcpy(p, value, vl);
  *out_size = size + 2 + inner;
  return b;
}

static void test_metadata(void) {
  size_t size, s1, s2;
  uint8_t *bytes = relu_model(&size);
  uint8_t *one = with_prop(bytes, size, "aitune_c.python", "{\"v\":1}", &s1);
  uint8_t *two = with_prop(one, s1, "aitune_c.python", "{\"v\":2}", &s2);
  ait_model *m = NULL;
  CHECK_ERR(ait_model_load_buffer(bytes, size, NULL, &m), AIT_OK, NULL);
  CHECK(ait_model_metadata(m, "aitune_c.python") == NULL);
  CHECK(ait_model_metadata(m, NULL) == NULL && ait_model_metadata(NULL, "k") == NULL);
  ait_model_free(m);
  CHECK_ERR(ait_model_load_buffer(two, s2, NULL, &m), AIT_OK, NULL);
  const char *v = m ? ait_model_metadata(m, "aitune_c.python") : NULL;
  CHECK(v && !strcmp(v, "{\"v\":2}")); /* the last of a repeated key */
  CHECK(m && ait_model_metadata(m, "other") == NULL);
  ait_model_free(m);
  /* and through a module, and its saved folder */
  ait_module *mod = NULL;
  CHECK_ERR(ait_module_create_buffer(one, s1, NULL, NULL, &mod), AIT_OK, NULL);
  v = mod ? ait_model_metadata(ait_module_model(mod), "aitune_c.python") : NULL;
  CHECK(v && !strcmp(v, "{\"v\":1}"));
  ait_module_free(mod);
  free(two);
  free(one);
  free(bytes);
}

int main(void) {
  test_metadata();
  test_create_buffer();
  test_axis_range();
  return check_result("test_module_api");
}
