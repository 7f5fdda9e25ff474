/* The public API: loading, describing, running, ownership, threads. */
#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "backends/backend.h"
#include "check.h"
#include "model_builder.h"

/* y = MatMul(x, W) + b with x [N,3] (N symbolic), W [3,2], b [2] */
static ait_model *linear_model(void) {
  static const int64_t dx[2] = {-1, 3}, dy[2] = {-1, 2}, dw[2] = {3, 2}, db[1] = {2};
  static const float w[6] = {1, 2, 3, 4, 5, 6}, b[2] = {0.5f, -0.5f};
  tb_model *tb = tb_new(13);
  tb_input(tb, "x", AIT_FLOAT32, 2, dx);
  tb_output(tb, "y", AIT_FLOAT32, 2, dy);
  tb_init_f32(tb, "W", 2, dw, w);
  tb_init_f32(tb, "b", 1, db, b);
  tb_node(tb, "MatMul", "mm", (const char *[]){"x", "W", NULL}, (const char *[]){"xw", NULL});
  tb_node(tb, "Add", "add", (const char *[]){"xw", "b", NULL}, (const char *[]){"y", NULL});
  size_t size;
  uint8_t *buf = tb_pack(tb, &size);
  tb_free(tb);
  ait_model *m = NULL;
  CHECK_ERR(ait_model_load_buffer(buf, size, NULL, &m), AIT_OK, NULL);
  free(buf);
  return m;
}

static void test_describe(ait_model *m) {
  CHECK(ait_model_num_inputs(m) == 1);
  CHECK(ait_model_num_outputs(m) == 1);
  ait_tensor_info info;
  CHECK_ERR(ait_model_input(m, 0, &info), AIT_OK, NULL);
  CHECK(!strcmp(info.name, "x"));
  CHECK(info.dtype == AIT_FLOAT32 && info.rank == 2);
  CHECK(info.dims[0] < 0 && info.dim_names[0] && !strcmp(info.dim_names[0], "N"));
  CHECK(info.dims[1] == 3 && info.dim_names[1] == NULL);
  CHECK_ERR(ait_model_output(m, 0, &info), AIT_OK, NULL);
  CHECK(!strcmp(info.name, "y") && info.rank == 2 && info.dims[1] == 2);
  CHECK_ERR(ait_model_input(m, 1, &info), AIT_E_INVALID_ARG, NULL);
}

static void run_linear(ait_session *s, float scale) {
  float x[2][3] = {{1, 0, 0}, {0, 1, scale}};
  ait_tensor_view in = {AIT_FLOAT32, 2, {2, 3}, x}, out;
  CHECK_ERR(ait_session_run(s, &in, 1), AIT_OK, NULL);
  CHECK_ERR(ait_session_output(s, 0, &out), AIT_OK, NULL);
  CHECK(out.dtype == AIT_FLOAT32 && out.rank == 2 && out.dims[0] == 2 && out.dims[1] == 2);
  const float *y = out.data;
  CHECK(y[0] == 1.5f && y[1] == 1.5f);
  CHECK(y[2] == 3 + 5 * scale + 0.5f && y[3] == 4 + 6 * scale - 0.5f);
  CHECK(x[1][2] == scale); /* inputs are read, never written */
}

static void *thread_main(void *arg) {
  ait_session *s = NULL;
  if (ait_session_create(arg, "eager", &s) != AIT_OK) return (void *)1;
  for (int i = 0; i < 200; i++)
    run_linear(s, (float)i);
  ait_session_free(s);
  return NULL;
}

/* Backend configurations: text, canonical description, key, JSON both ways. */
static void test_backend_configs(void) {
  ait_backend_config c, d;
  char buf[512], key1[64], key2[64];
  CHECK_ERR(ait_backend_config_parse("native:threads=2,fuse=on", &c), AIT_OK, NULL);
  CHECK(
      !strcmp(ait_backend_describe(&c, buf, sizeof buf), "native:threads=2")); /* defaults hidden */
  cJSON *cj = ait_backend_config_cjson(&c);
  char *cjs = cj ? cJSON_PrintUnformatted(cj) : NULL;
  CHECK(cjs != NULL);
  CHECK_ERR(ait_backend_config_from_json(cjs ? cjs : "", &d), AIT_OK, NULL);
  free(cjs);
  cJSON_Delete(cj);
  CHECK(!strcmp(ait_backend_key(&c, key1, sizeof key1), ait_backend_key(&d, key2, sizeof key2)));
  CHECK_ERR(ait_backend_config_parse("native:threads=3", &d), AIT_OK, NULL);
  CHECK(strcmp(ait_backend_key(&c, key1, sizeof key1), ait_backend_key(&d, key2, sizeof key2)));
  CHECK_ERR(
      ait_backend_config_from_json("{\"backend\":\"native\",\"options\":{\"threads\":4}}", &d),
      AIT_OK, NULL);
  CHECK(ait_backend_config_int(&d, "threads", 0) == 4);
  CHECK_ERR(ait_backend_config_parse("native:threads=zero", &d), AIT_E_INVALID_ARG, "threads");
  CHECK_ERR(ait_backend_config_parse("native:colour=red", &d), AIT_E_INVALID_ARG, "colour");
  CHECK_ERR(ait_backend_config_parse("warp-drive", &d), AIT_E_NOT_FOUND, "warp-drive");
  /* a bare value picks the enum option that offers it: quant:int8dq */
  CHECK_ERR(ait_backend_config_parse("quant:int8dq", &d), AIT_OK, NULL);
  CHECK(!strcmp(ait_backend_config_get(&d, "preset"), "int8dq"));
  CHECK_ERR(ait_backend_config_parse("onednn:bf16,threads=1", &d), AIT_OK, NULL);
  CHECK(!strcmp(ait_backend_config_get(&d, "dtype"), "bf16"));
  CHECK_ERR(ait_backend_config_parse("native:turbo", &d), AIT_E_INVALID_ARG, "turbo");
  CHECK_ERR(ait_backend_config_from_json("[1,2]", &d), AIT_E_PARSE, NULL);
}

int main(void) {
  CHECK(!strcmp(ait_version(), AIT_VERSION_STRING));
  CHECK(!strcmp(ait_dtype_name(AIT_BFLOAT16), "bfloat16"));
  CHECK(ait_dtype_size(AIT_FLOAT16) == 2 && ait_dtype_size(AIT_STRING) == 0);
  CHECK(!strcmp(ait_strerror(AIT_E_SHAPE), "shape mismatch"));
  CHECK(!strcmp(ait_backend_names()[0], "eager"));

  test_backend_configs();
  ait_model *m = linear_model();
  if (!m) return check_result("test_api");
  test_describe(m);
  ait_session *s = NULL;
  CHECK_ERR(ait_session_create(m, "eager", &s), AIT_OK, NULL);
  run_linear(s, 2.0f);
  run_linear(s, -1.0f); /* second run replaces the outputs */
  /* a batch of 5 rows through the symbolic dim */
  float x5[5][3] = {{0}};
  ait_tensor_view in = {AIT_FLOAT32, 2, {5, 3}, x5}, out;
  CHECK_ERR(ait_session_run(s, &in, 1), AIT_OK, NULL);
  CHECK_ERR(ait_session_output(s, 0, &out), AIT_OK, NULL);
  CHECK(out.dims[0] == 5 && ((float *)out.data)[9] == -0.5f);
  ait_session_free(s);

  /* the threading contract: one model, a session per thread */
  pthread_t th[4];
  for (int i = 0; i < 4; i++)
    pthread_create(&th[i], NULL, thread_main, m);
  for (int i = 0; i < 4; i++) {
    void *ret;
    pthread_join(th[i], &ret);
    CHECK(ret == NULL);
  }
  ait_model_free(m);
  ait_model_free(NULL);
  ait_session_free(NULL);
  return check_result("test_api");
}
