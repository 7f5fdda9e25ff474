/* Bad input gets a status and a message naming the problem, never a crash. */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "model_builder.h"

static const int64_t d23[2] = {2, 3};

static ait_status load_built(tb_model *tb, ait_model **m) {
  size_t size;
  uint8_t *buf = tb_pack(tb, &size);
  ait_status st = ait_model_load_buffer(buf, size, ".", m);
  free(buf);
  tb_free(tb);
  return st;
}

/* x -> Relu -> y, a valid model to break in various ways */
static tb_model *relu_model(void) {
  tb_model *tb = tb_new(13);
  tb_input(tb, "x", AIT_FLOAT32, 2, d23);
  tb_output(tb, "y", AIT_FLOAT32, 2, d23);
  tb_node(tb, "Relu", "relu", (const char *[]){"x", NULL}, (const char *[]){"y", NULL});
  return tb;
}

static void test_files(void) {
  ait_model *m = NULL;
  CHECK_ERR(ait_model_load("/nonexistent/model.onnx", &m), AIT_E_IO, "/nonexistent/model.onnx");
  CHECK(m == NULL);
  const char text[] = "this is not a protobuf at all \xff\xff\xff\xff";
  CHECK_ERR(ait_model_load_buffer(text, sizeof text, ".", &m), AIT_E_PARSE,
            "not a valid ONNX model");
  CHECK_ERR(ait_model_load_buffer("", 0, ".", &m), AIT_E_PARSE, "no graph");
  /* every truncation of a valid model is rejected or loads; none crashes */
  size_t size;
  tb_model *tb = relu_model();
  uint8_t *buf = tb_pack(tb, &size);
  tb_free(tb);
  int rejected = 0;
  for (size_t cut = 1; cut < size; cut++) {
    ait_status st = ait_model_load_buffer(buf, cut, ".", &m);
    if (st == AIT_OK)
      ait_model_free(m);
    else
      rejected++;
    m = NULL;
  }
  CHECK(rejected > 0);
  CHECK_ERR(ait_model_load_buffer(buf, size / 2, ".", &m), AIT_E_PARSE, NULL);
  free(buf);
  CHECK_ERR(ait_model_load(NULL, &m), AIT_E_INVALID_ARG, NULL);
}

static void test_graph_errors(void) {
  ait_model *m = NULL;
  /* a node reads a tensor nobody provides (a missing initializer) */
  tb_model *tb = tb_new(13);
  tb_input(tb, "x", AIT_FLOAT32, 2, d23);
  tb_output(tb, "y", AIT_FLOAT32, 2, d23);
  tb_node(tb, "Add", "add", (const char *[]){"x", "bias", NULL}, (const char *[]){"y", NULL});
  CHECK_ERR(load_built(tb, &m), AIT_E_INVALID_MODEL, "'bias'");

  /* a cycle: a -> b -> a */
  tb = tb_new(13);
  tb_input(tb, "x", AIT_FLOAT32, 2, d23);
  tb_output(tb, "b", AIT_FLOAT32, 2, d23);
  tb_node(tb, "Add", "first", (const char *[]){"x", "b", NULL}, (const char *[]){"a", NULL});
  tb_node(tb, "Relu", "second", (const char *[]){"a", NULL}, (const char *[]){"b", NULL});
  CHECK_ERR(load_built(tb, &m), AIT_E_INVALID_MODEL, "cycle");

  /* an output nothing produces */
  tb = relu_model();
  tb_output(tb, "ghost", AIT_FLOAT32, 2, d23);
  CHECK_ERR(load_built(tb, &m), AIT_E_INVALID_MODEL, "'ghost'");

  /* a domain the model does not import */
  tb = relu_model();
  tb_domain(tb, 0, "com.example");
  CHECK_ERR(load_built(tb, &m), AIT_E_INVALID_MODEL, "com.example");

  /* two nodes writing the same tensor */
  tb = relu_model();
  tb_node(tb, "Relu", "again", (const char *[]){"x", NULL}, (const char *[]){"y", NULL});
  CHECK_ERR(load_built(tb, &m), AIT_E_INVALID_MODEL, "produced by two nodes");
}

static void test_unsupported(void) {
  ait_model *m = NULL;
  ait_session *s = NULL;
  /* an op nobody knows: loads (info can show it), but no session runs it */
  tb_model *tb = tb_new(13);
  tb_input(tb, "x", AIT_FLOAT32, 2, d23);
  tb_output(tb, "y", AIT_FLOAT32, 2, d23);
  tb_node(tb, "FrobnicateTensor", "frob", (const char *[]){"x", NULL}, (const char *[]){"y", NULL});
  CHECK_ERR(load_built(tb, &m), AIT_OK, NULL);
  CHECK_ERR(ait_session_create(m, "eager", &s), AIT_E_UNSUPPORTED, "FrobnicateTensor");
  CHECK_ERR(ait_session_create(m, "eager", &s), AIT_E_UNSUPPORTED, "'frob'");
  /* every backend names the op, its domain and the opset (it used to read
   * "takes 0 of 1 nodes ..., too little to pay off") */
  static const char *const names[] = {"eager", "native", "onednn", "xnnpack", "quant"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    CHECK_ERR(ait_session_create(m, names[i], &s), AIT_E_UNSUPPORTED,
              "op FrobnicateTensor of domain ai.onnx at opset 13 is not implemented");
  CHECK(s == NULL);
  ait_model_free(m);

  /* an op that exists, at an opset older than its first version */
  tb = tb_new(7);
  tb_input(tb, "x", AIT_FLOAT32, 2, d23);
  tb_output(tb, "y", AIT_FLOAT32, 2, d23);
  tb_node(tb, "Shrink", "shrink", (const char *[]){"x", NULL}, (const char *[]){"y", NULL});
  CHECK_ERR(load_built(tb, &m), AIT_OK, NULL);
  CHECK_ERR(ait_session_create(m, "eager", &s), AIT_E_UNSUPPORTED, "needs opset >= 9");
  ait_model_free(m);

  CHECK_ERR(load_built(relu_model(), &m), AIT_OK, NULL);
  CHECK_ERR(ait_session_create(m, "no-such-backend", &s), AIT_E_NOT_FOUND, "no-such-backend");
  ait_model_free(m);
}

static void test_run_errors(void) {
  ait_model *m = NULL;
  ait_session *s = NULL;
  CHECK_ERR(load_built(relu_model(), &m), AIT_OK, NULL);
  CHECK_ERR(ait_session_create(m, NULL, &s), AIT_OK, NULL);
  float data[6] = {0};
  double ddata[6] = {0};
  ait_tensor_view in = {.dtype = AIT_FLOAT32, .rank = 2, .dims = {2, 3}, .data = data};
  CHECK_ERR(ait_session_run(s, &in, 1), AIT_OK, NULL);
  ait_tensor_view bad = {.dtype = AIT_FLOAT64, .rank = 2, .dims = {2, 3}, .data = ddata};
  CHECK_ERR(ait_session_run(s, &bad, 1), AIT_E_DTYPE, "'x'");
  bad = (ait_tensor_view){.dtype = AIT_FLOAT32, .rank = 2, .dims = {3, 2}, .data = data};
  CHECK_ERR(ait_session_run(s, &bad, 1), AIT_E_SHAPE, "dim 0 must be 2");
  bad = (ait_tensor_view){.dtype = AIT_FLOAT32, .rank = 1, .dims = {6}, .data = data};
  CHECK_ERR(ait_session_run(s, &bad, 1), AIT_E_SHAPE, "rank");
  bad = (ait_tensor_view){.dtype = AIT_FLOAT32, .rank = 2, .dims = {2, 3}, .data = NULL};
  CHECK_ERR(ait_session_run(s, &bad, 1), AIT_E_INVALID_ARG, "NULL");
  CHECK_ERR(ait_session_run(s, &in, 2), AIT_E_INVALID_ARG, "takes 1 inputs");
  ait_tensor_view out;
  CHECK_ERR(ait_session_output(s, 5, &out), AIT_E_INVALID_ARG, NULL);
  ait_session_free(s);
  ait_model_free(m);

  /* a kernel that meets bad data at run time names the node */
  static const int64_t d1[1] = {1};
  tb_model *tb = tb_new(13);
  tb_input(tb, "x", AIT_FLOAT32, 2, d23);
  tb_input(tb, "idx", AIT_INT64, 1, d1);
  tb_output(tb, "y", AIT_FLOAT32, 2, (const int64_t[]){1, 3});
  tb_node(tb, "Gather", "gather", (const char *[]){"x", "idx", NULL}, (const char *[]){"y", NULL});
  CHECK_ERR(load_built(tb, &m), AIT_OK, NULL);
  CHECK_ERR(ait_session_create(m, "eager", &s), AIT_OK, NULL);
  int64_t idx = 7;
  ait_tensor_view ins[2] = {{.dtype = AIT_FLOAT32, .rank = 2, .dims = {2, 3}, .data = data},
                            {.dtype = AIT_INT64, .rank = 1, .dims = {1}, .data = &idx}};
  CHECK_ERR(ait_session_run(s, ins, 2), AIT_E_INVALID_ARG, "'gather'");
  ait_session_free(s);
  ait_model_free(m);
}

/* RE2 constructs POSIX cannot spell are refused by name, and a bad
 * pattern names itself; a translated one matches in full. */
static void test_regex(void) {
  static const struct {
    const char *pattern, *text;
    ait_status st;
    const char *needle;
    int match;
  } cases[] = {
      {"a[\\w.-]+\\.com", "ab.c-d.com", AIT_OK, NULL, 1},
      {"a[\\w.-]+\\.com", "ab.c-d.com.", AIT_OK, NULL, 0},
      {"(?:ab)+?c", "ababc", AIT_OK, NULL, 1},
      {"\\d{2,3}\\s\\S", "123 x", AIT_OK, NULL, 1},
      {"(?P<name>a)", "a", AIT_E_UNSUPPORTED, "(?P...)", 0},
      {"a\\1", "aa", AIT_E_UNSUPPORTED, "\\1 is not supported", 0},
      {"[\\W]", "a", AIT_E_UNSUPPORTED, "inside brackets", 0},
      {"(a", "a", AIT_E_INVALID_ARG, "pattern '(a'", 0},
  };
  static const int64_t d1[1] = {1};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tb_model *tb = tb_new(20);
    tb_input(tb, "x", AIT_STRING, 1, d1);
    tb_output(tb, "y", AIT_BOOL, 1, d1);
    int n = tb_node(tb, "RegexFullMatch", "re", (const char *[]){"x", NULL},
                    (const char *[]){"y", NULL});
    tb_attr_str(tb, n, "pattern", cases[i].pattern);
    ait_model *m = NULL;
    ait_session *s = NULL;
    CHECK_ERR(load_built(tb, &m), AIT_OK, NULL);
    CHECK_ERR(ait_session_create(m, "eager", &s), AIT_OK, NULL);
    const char *text = cases[i].text;
    ait_tensor_view in = {AIT_STRING, 1, {1}, &text, AIT_MEM_HOST, 0}, out;
    CHECK_ERR(ait_session_run(s, &in, 1), cases[i].st, cases[i].needle);
    if (cases[i].st == AIT_OK && ait_session_output(s, 0, &out) == AIT_OK)
      CHECK(*(const uint8_t *)out.data == cases[i].match);
    ait_session_free(s);
    ait_model_free(m);
  }
}

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Window sizes are the model's: a LRN of 2^31-1 channels, pools with a
 * 2^40-tap kernel under SAME padding (valid ONNX: the window covers the
 * whole input) must cost the input's size, not the window's. Found by an
 * attribute fuzz of the ONNX node tests (session 5): each ran for hours. */
static void test_huge_windows(void) {
  static const int64_t dx[4] = {1, 3, 8, 8};
  float x[192];
  for (int i = 0; i < 192; i++)
    x[i] = (float)(i % 13) - 6.0f;
  const char *ops[] = {"LRN", "AveragePool", "MaxPool", "AveragePool"};
  for (int k = 0; k < 4; k++) {
    tb_model *tb = tb_new(13);
    tb_input(tb, "x", AIT_FLOAT32, 4, dx);
    tb_output(tb, "y", AIT_FLOAT32, 4, dx);
    int n = tb_node(tb, ops[k], "op", (const char *[]){"x", NULL}, (const char *[]){"y", NULL});
    if (k == 0) {
      tb_attr_int(tb, n, "size", 2147483647);
    } else if (k < 3) {
      tb_attr_ints(tb, n, "kernel_shape", 2, (const int64_t[]){3, (int64_t)1 << 40});
      tb_attr_str(tb, n, "auto_pad", "SAME_UPPER");
    } else { /* a stride of 2^63-1: ceil(8 / s) overflowed on the way */
      tb_attr_ints(tb, n, "kernel_shape", 2, (const int64_t[]){3, 3});
      tb_attr_ints(tb, n, "strides", 2, (const int64_t[]){1, INT64_MAX});
      tb_attr_str(tb, n, "auto_pad", "SAME_UPPER");
    }
    ait_model *m = NULL;
    CHECK_ERR(load_built(tb, &m), AIT_OK, NULL);
    for (int b = 0; m && b < 2; b++) {
      ait_session *s = NULL;
      CHECK_ERR(ait_session_create(m, b ? "native" : "eager", &s), AIT_OK, NULL);
      ait_tensor_view in = {.dtype = AIT_FLOAT32, .rank = 4, .dims = {1, 3, 8, 8}, .data = x}, out;
      double t0 = seconds();
      CHECK_ERR(ait_session_run(s, &in, 1), AIT_OK, NULL);
      double took = seconds() - t0;
      if (took > 10.0)
        fprintf(stderr, "%s on %s took %.1f s\n", ops[k], b ? "native" : "eager", took);
      CHECK(took < 10.0); /* a hang guard, not a speed test: loaded sanitizer runs */
      /* the window covers every input: a row's pool sees its whole plane's
       * rows within reach, so the maximum is the plane's maximum (6) */
      if (k == 2 && ait_session_output(s, 0, &out) == AIT_OK) CHECK(((float *)out.data)[0] == 6.0f);
      ait_session_free(s);
    }
    ait_model_free(m);
  }
}

/* Sizes that overflow 64 bits (found by fuzzing the node tests' integer
 * inputs; undefined behaviour the sanitizer build stops on): refused with
 * a status on the reference and on native. */
static void test_overflowing_sizes(void) {
  static const int64_t d24[2] = {2, 4}, d2[1] = {2};
  float x[8] = {0};
  const char *ops[] = {"Reshape", "Split"};
  for (int k = 0; k < 2; k++) {
    tb_model *tb = tb_new(13);
    tb_input(tb, "x", AIT_FLOAT32, 2, d24);
    tb_input(tb, "s", AIT_INT64, 1, d2);
    if (k == 0) {
      tb_output(tb, "y", AIT_FLOAT32, 2, d24);
      tb_node(tb, "Reshape", "op", (const char *[]){"x", "s", NULL}, (const char *[]){"y", NULL});
    } else {
      tb_output(tb, "y", AIT_FLOAT32, 2, d24);
      tb_output(tb, "z", AIT_FLOAT32, 2, d24);
      int n = tb_node(tb, "Split", "op", (const char *[]){"x", "s", NULL},
                      (const char *[]){"y", "z", NULL});
      tb_attr_int(tb, n, "axis", 1);
    }
    ait_model *m = NULL;
    CHECK_ERR(load_built(tb, &m), AIT_OK, NULL);
    static const int64_t bad[3][2] = {{INT64_MAX, 4}, {(int64_t)1 << 62, 12}, {6, INT64_MAX}};
    for (int b = 0; m && b < 2; b++) {
      ait_session *s = NULL;
      CHECK_ERR(ait_session_create(m, b ? "native" : "eager", &s), AIT_OK, NULL);
      for (int v = 0; s && v < 3; v++) {
        int64_t sh[2] = {bad[v][0], bad[v][1]};
        ait_tensor_view in[2] = {{.dtype = AIT_FLOAT32, .rank = 2, .dims = {2, 4}, .data = x},
                                 {.dtype = AIT_INT64, .rank = 1, .dims = {2}, .data = sh}};
        ait_status st = ait_session_run(s, in, 2);
        if (st == AIT_OK)
          fprintf(stderr, "%s %lld x %lld ran on %s\n", ops[k], (long long)sh[0], (long long)sh[1],
                  b ? "native" : "eager");
        CHECK(st != AIT_OK && ait_last_error()[0]);
      }
      ait_session_free(s);
    }
    ait_model_free(m);
  }
  /* DepthToSpace with a blocksize whose square overflows */
  {
    static const int64_t d4[4] = {1, 8, 2, 2};
    tb_model *t2 = tb_new(13);
    tb_input(t2, "x", AIT_FLOAT32, 4, d4);
    tb_output(t2, "y", AIT_FLOAT32, 4, d4);
    int n2 = tb_node(t2, "DepthToSpace", "d2s", (const char *[]){"x", NULL},
                     (const char *[]){"y", NULL});
    tb_attr_int(t2, n2, "blocksize", (int64_t)1 << 40);
    ait_model *m2 = NULL;
    CHECK_ERR(load_built(t2, &m2), AIT_E_INVALID_ARG, "blocksize");
    ait_model_free(m2);
  }
  /* ConvTranspose with a stride and an output_shape of 2^63-1 */
  for (int v = 0; v < 2; v++) {
    static const int64_t dx[4] = {1, 1, 3, 3}, dw[4] = {1, 1, 3, 3};
    float w9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    tb_model *t3 = tb_new(13);
    tb_input(t3, "x", AIT_FLOAT32, 4, dx);
    tb_output(t3, "y", AIT_FLOAT32, 4, dx);
    tb_init_f32(t3, "w", 4, dw, w9);
    int n3 = tb_node(t3, "ConvTranspose", "ct", (const char *[]){"x", "w", NULL},
                     (const char *[]){"y", NULL});
    if (v == 0)
      tb_attr_ints(t3, n3, "strides", 2, (const int64_t[]){INT64_MAX, 1});
    else
      tb_attr_ints(t3, n3, "output_shape", 2, (const int64_t[]){INT64_MAX, 5});
    ait_model *m3 = NULL;
    ait_status st3 = load_built(t3, &m3);
    CHECK(st3 != AIT_OK && strstr(ait_last_error(), "ConvTranspose") &&
          strstr(ait_last_error(), "out of range"));
    ait_model_free(m3);
  }
  /* an RNN whose hidden_size (2^63-1) makes the inferred output dims
   * multiply past 64 bits: the FLOP estimate a session makes must not */
  {
    static const int64_t dx[3] = {2, 1, 3}, dw[3] = {1, 4, 3}, dr[3] = {1, 4, 4};
    float w12[12] = {0}, r16[16] = {0};
    tb_model *t4 = tb_new(14);
    tb_input(t4, "x", AIT_FLOAT32, 3, dx);
    tb_output(t4, "y", AIT_FLOAT32, 4, (const int64_t[]){2, 1, 1, 4});
    tb_init_f32(t4, "W", 3, dw, w12);
    tb_init_f32(t4, "R", 3, dr, r16);
    int n4 = tb_node(t4, "RNN", "rnn", (const char *[]){"x", "W", "R", NULL},
                     (const char *[]){"y", NULL});
    tb_attr_int(t4, n4, "hidden_size", INT64_MAX);
    ait_model *m4 = NULL;
    ait_status st4 = load_built(t4, &m4);
    for (int b = 0; st4 == AIT_OK && b < 2; b++) {
      ait_session *s4 = NULL;
      st4 = ait_session_create(m4, b ? "native" : "eager", &s4);
      if (st4 == AIT_OK) {
        float xv[6] = {0};
        ait_tensor_view in4 = {.dtype = AIT_FLOAT32, .rank = 3, .dims = {2, 1, 3}, .data = xv};
        CHECK(ait_session_run(s4, &in4, 1) != AIT_OK && strstr(ait_last_error(), "hidden_size"));
        ait_session_free(s4);
        st4 = AIT_OK;
      }
    }
    ait_model_free(m4);
  }
  /* GatherND's batch_dims, an attribute, far out of range */
  static const int64_t d222[3] = {2, 2, 2}, d21[2] = {2, 1};
  tb_model *tb = tb_new(13);
  tb_input(tb, "x", AIT_FLOAT32, 3, d222);
  tb_input(tb, "i", AIT_INT64, 2, d21);
  tb_output(tb, "y", AIT_FLOAT32, 2, (const int64_t[]){2, 2});
  int n =
      tb_node(tb, "GatherND", "g", (const char *[]){"x", "i", NULL}, (const char *[]){"y", NULL});
  tb_attr_int(tb, n, "batch_dims", -2147483647);
  ait_model *m = NULL;
  ait_status st = load_built(tb, &m);
  if (st == AIT_OK) {
    ait_session *s = NULL;
    st = ait_session_create(m, "eager", &s);
    if (st == AIT_OK) {
      int64_t idx[2] = {0, 1};
      ait_tensor_view in[2] = {{.dtype = AIT_FLOAT32, .rank = 3, .dims = {2, 2, 2}, .data = x},
                               {.dtype = AIT_INT64, .rank = 2, .dims = {2, 1}, .data = idx}};
      st = ait_session_run(s, in, 2);
      ait_session_free(s);
    }
  }
  CHECK(st != AIT_OK && strstr(ait_last_error(), "GatherND"));
  ait_model_free(m);
}

static void test_external_data(void) {
  char dir[] = "/tmp/ait_ext_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char path[256];
  snprintf(path, sizeof path, "%s/weights.bin", dir);
  float w[6] = {1, 2, 3, 4, 5, 6};
  FILE *f = fopen(path, "wb");
  fwrite("PAD!", 1, 4, f); /* data at offset 4 */
  fwrite(w, sizeof w, 1, f);
  fclose(f);
  const char *cases[][2] = {{"weights.bin", NULL},
                            {"missing.bin", "missing.bin"},
                            {"../weights.bin", "relative"},
                            {"/etc/passwd", "relative"}};
  for (int c = 0; c < 4; c++) {
    tb_model *tb = tb_new(13);
    tb_input(tb, "x", AIT_FLOAT32, 2, d23);
    tb_output(tb, "y", AIT_FLOAT32, 2, d23);
    tb_init_external(tb, "w", 2, d23, cases[c][0], 4, (int64_t)sizeof w);
    tb_node(tb, "Add", "add", (const char *[]){"x", "w", NULL}, (const char *[]){"y", NULL});
    size_t size;
    uint8_t *buf = tb_pack(tb, &size);
    tb_free(tb);
    ait_model *m = NULL;
    ait_status st = ait_model_load_buffer(buf, size, dir, &m);
    free(buf);
    if (!cases[c][1]) {
      CHECK_ERR(st, AIT_OK, NULL);
      ait_session *s = NULL;
      CHECK_ERR(ait_session_create(m, "eager", &s), AIT_OK, NULL);
      float x[6] = {10, 10, 10, 10, 10, 10};
      ait_tensor_view in = {.dtype = AIT_FLOAT32, .rank = 2, .dims = {2, 3}, .data = x}, out;
      CHECK_ERR(ait_session_run(s, &in, 1), AIT_OK, NULL);
      CHECK_ERR(ait_session_output(s, 0, &out), AIT_OK, NULL);
      CHECK(((float *)out.data)[5] == 16.0f);
      ait_session_free(s);
      ait_model_free(m);
    } else {
      CHECK(st != AIT_OK);
      CHECK(strstr(ait_last_error(), cases[c][1]) != NULL);
    }
  }
  /* a length that does not match the tensor */
  tb_model *tb = tb_new(13);
  tb_input(tb, "x", AIT_FLOAT32, 2, d23);
  tb_output(tb, "y", AIT_FLOAT32, 2, d23);
  tb_init_external(tb, "w", 2, d23, "weights.bin", 0, 8);
  tb_node(tb, "Add", "add", (const char *[]){"x", "w", NULL}, (const char *[]){"y", NULL});
  size_t size;
  uint8_t *buf = tb_pack(tb, &size);
  tb_free(tb);
  ait_model *m = NULL;
  CHECK_ERR(ait_model_load_buffer(buf, size, dir, &m), AIT_E_INVALID_MODEL, "'w'");
  free(buf);
  unlink(path);
  rmdir(dir);
}

int main(void) {
  test_files();
  test_graph_errors();
  test_unsupported();
  test_run_errors();
  test_regex();
  test_huge_windows();
  test_overflowing_sizes();
  test_external_data();
  return check_result("test_errors");
}
