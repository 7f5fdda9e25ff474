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
  ait_tensor_view in = {.dtype = AIT_FLOAT32, .rank = 2, .dims = {2, 3}, .data = x}, out;
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

/* Device memory through the API on backends that take host memory only:
 * every device request is refused by name, bound host buffers work on
 * every backend (the cuda side runs in test_cuda on a GPU). */
static void test_device_memory(ait_model *m) {
  const char *backends[] = {"eager", "native"};
  for (int b = 0; b < 2; b++) {
    ait_session *s = NULL;
    CHECK_ERR(ait_session_create(m, backends[b], &s), AIT_OK, NULL);
    if (!s) continue;
    float x[2][3] = {{1, 0, 0}, {0, 1, 2}};
    ait_tensor_view dev = {
        .dtype = AIT_FLOAT32, .rank = 2, .dims = {2, 3}, .data = x, .mem = AIT_MEM_CUDA};
    CHECK_ERR(ait_session_run(s, &dev, 1), AIT_E_UNSUPPORTED, "host memory only");
    dev.mem = (ait_mem_kind)7;
    CHECK_ERR(ait_session_run(s, &dev, 1), AIT_E_INVALID_ARG, "unknown memory kind 7");
    CHECK_ERR(ait_session_set_output_mem(s, AIT_MEM_CUDA), AIT_E_UNSUPPORTED,
              "outputs on the device");
    CHECK_ERR(ait_session_set_output_mem(s, (ait_mem_kind)3), AIT_E_INVALID_ARG, "memory kind 3");
    CHECK_ERR(ait_session_set_output_mem(s, AIT_MEM_HOST), AIT_OK, NULL);
    int stream_stand_in;
    CHECK_ERR(ait_session_set_cuda_stream(s, &stream_stand_in), AIT_E_UNSUPPORTED, "CUDA stream");
    CHECK_ERR(ait_session_set_cuda_stream(s, NULL), AIT_OK, NULL);
    /* a bound host buffer receives the output, and the output view is it */
    float y[2][2] = {{-1, -1}, {-1, -1}};
    ait_tensor_view buf = {.dtype = AIT_FLOAT32, .rank = 2, .dims = {2, 2}, .data = y};
    CHECK_ERR(ait_session_bind_output(s, 1, &buf), AIT_E_INVALID_ARG, "output 1 does not exist");
    buf.mem = AIT_MEM_CUDA;
    CHECK_ERR(ait_session_bind_output(s, 0, &buf), AIT_E_UNSUPPORTED,
              "output buffer on the device");
    buf.mem = AIT_MEM_HOST;
    CHECK_ERR(ait_session_bind_output(s, 0, &buf), AIT_OK, NULL);
    ait_tensor_view in = {.dtype = AIT_FLOAT32, .rank = 2, .dims = {2, 3}, .data = x}, out;
    CHECK_ERR(ait_session_run(s, &in, 1), AIT_OK, NULL);
    CHECK_ERR(ait_session_output(s, 0, &out), AIT_OK, NULL);
    CHECK(out.data == (void *)y && out.mem == AIT_MEM_HOST);
    /* x row 1 = [0,1,2]: [3+10, 4+12] + b */
    CHECK(y[0][0] == 1.5f && y[0][1] == 1.5f && y[1][0] == 13.5f && y[1][1] == 15.5f);
    /* a run whose output has another shape fails naming the buffer */
    float x3[3][3] = {{0}};
    ait_tensor_view in3 = {.dtype = AIT_FLOAT32, .rank = 2, .dims = {3, 3}, .data = x3};
    CHECK_ERR(ait_session_run(s, &in3, 1), AIT_E_SHAPE, "bound buffer is float32 [2,2]");
    /* unbound: the session's own memory again */
    CHECK_ERR(ait_session_bind_output(s, 0, NULL), AIT_OK, NULL);
    CHECK_ERR(ait_session_run(s, &in3, 1), AIT_OK, NULL);
    CHECK_ERR(ait_session_output(s, 0, &out), AIT_OK, NULL);
    CHECK(out.data != (void *)y && out.dims[0] == 3);
    ait_session_free(s);
  }
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
  ait_tensor_view in = {.dtype = AIT_FLOAT32, .rank = 2, .dims = {5, 3}, .data = x5}, out;
  CHECK_ERR(ait_session_run(s, &in, 1), AIT_OK, NULL);
  CHECK_ERR(ait_session_output(s, 0, &out), AIT_OK, NULL);
  CHECK(out.dims[0] == 5 && ((float *)out.data)[9] == -0.5f);
  ait_session_free(s);
  test_device_memory(m);

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
