/* The openvino backend (src/backends/openvino/) against the reference on the
 * bundled models: outputs agree, a new batch size gets its own compiled
 * model and the old one still answers, bad inputs and nodes outside the
 * standard domains get errors that name them, and a tuned folder with
 * openvino loads and runs. Skips (and says so) only in a build without
 * OpenVINO's headers; scripts/test.sh builds with them. argv: the bundled
 * bert_tiny and mobilenetv2_035 models. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "check.h"

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}

/* Output 0 of a run of backend b, copied; NULL on failure. */
static float *run_copy(const ait_model *m, const char *b, const ait_tensor_view *in, size_t n_in,
                       size_t *count) {
  ait_session *s = NULL;
  ait_tensor_view out;
  float *c = NULL;
  if (ait_session_create(m, b, &s) == AIT_OK && ait_session_run(s, in, n_in) == AIT_OK &&
      ait_session_output(s, 0, &out) == AIT_OK && out.dtype == AIT_FLOAT32) {
    size_t n = 1;
    for (int d = 0; d < out.rank; d++)
      n *= (size_t)out.dims[d];
    if ((c = malloc(n * sizeof *c))) memcpy(c, out.data, n * sizeof *c);
    *count = n;
  } else {
    fprintf(stderr, "%s: %s\n", b, ait_last_error());
  }
  ait_session_free(s);
  return c;
}

/* max |a - b| / max |b| */
static double rel_err(const float *a, const float *b, size_t n) {
  double d = 0, m = 0;
  for (size_t i = 0; i < n; i++) {
    d = fmax(d, fabs((double)a[i] - b[i]));
    m = fmax(m, fabs((double)b[i]));
  }
  return m > 0 ? d / m : d;
}

static void agree(const ait_model *m, const ait_tensor_view *in, size_t n_in, const char *what) {
  size_t na = 0, nb = 0;
  float *a = run_copy(m, "openvino", in, n_in, &na), *b = run_copy(m, "eager", in, n_in, &nb);
  CHECK(a && b && na == nb);
  if (a && b && na == nb) {
    double e = rel_err(a, b, na);
    printf("  %-34s rel err %.2e\n", what, e);
    CHECK(e < 1e-4);
  }
  free(a);
  free(b);
}

static void test_bert(const char *path) {
  ait_model *m = NULL;
  CHECK_ERR(ait_model_load(path, &m), AIT_OK, NULL);
  if (!m) return;
  static int64_t ids[3 * 32], mask[3 * 32];
  for (int i = 0; i < 3 * 32; i++)
    ids[i] = (int64_t)(rnd() % 1000), mask[i] = i % 32 < 28;
  for (int64_t b = 1; b <= 3; b += 2) {
    ait_tensor_view in[2] = {{.dtype = AIT_INT64, .rank = 2, .dims = {b, 32}, .data = ids},
                             {.dtype = AIT_INT64, .rank = 2, .dims = {b, 32}, .data = mask}};
    agree(m, in, 2, b == 1 ? "bert_tiny batch 1" : "bert_tiny batch 3");
  }
  /* errors that name the problem */
  ait_session *s = NULL;
  CHECK_ERR(ait_session_create(m, "openvino", &s), AIT_OK, NULL);
  if (s) {
    ait_tensor_view one[1] = {{.dtype = AIT_INT64, .rank = 2, .dims = {1, 32}, .data = ids}};
    CHECK(ait_session_run(s, one, 1) != AIT_OK);
    ait_tensor_view f[2] = {{.dtype = AIT_FLOAT32, .rank = 2, .dims = {1, 32}, .data = ids},
                            {.dtype = AIT_INT64, .rank = 2, .dims = {1, 32}, .data = mask}};
    CHECK(ait_session_run(s, f, 2) != AIT_OK);
    CHECK(strlen(ait_last_error()) > 0);
    /* and it still runs afterwards */
    ait_tensor_view ok[2] = {{.dtype = AIT_INT64, .rank = 2, .dims = {1, 32}, .data = ids},
                             {.dtype = AIT_INT64, .rank = 2, .dims = {1, 32}, .data = mask}};
    CHECK_ERR(ait_session_run(s, ok, 2), AIT_OK, NULL);
  }
  ait_session_free(s);
  ait_model_free(m);
}

/* Batch 1, 2, then 1 again on one session: two compiled models, the first
 * still valid. */
static void test_mobilenet(const char *path) {
  ait_model *m = NULL;
  CHECK_ERR(ait_model_load(path, &m), AIT_OK, NULL);
  if (!m) return;
  size_t n1 = (size_t)3 * 160 * 160;
  float *img = malloc(2 * n1 * sizeof *img);
  for (size_t i = 0; img && i < 2 * n1; i++)
    img[i] = (float)(rnd() % 2001) / 1000.0f - 1.0f;
  if (img) {
    ait_tensor_view b1 = {.dtype = AIT_FLOAT32, .rank = 4, .dims = {1, 3, 160, 160}, .data = img};
    ait_tensor_view b2 = {.dtype = AIT_FLOAT32, .rank = 4, .dims = {2, 3, 160, 160}, .data = img};
    agree(m, &b1, 1, "mobilenetv2_035 batch 1");
    agree(m, &b2, 1, "mobilenetv2_035 batch 2");
    ait_session *s = NULL;
    ait_tensor_view out;
    size_t n = 0;
    float *want = run_copy(m, "eager", &b1, 1, &n);
    CHECK_ERR(ait_session_create(m, "openvino", &s), AIT_OK, NULL);
    for (int k = 0; s && want && k < 3; k++) {
      CHECK_ERR(ait_session_run(s, k == 1 ? &b2 : &b1, 1), AIT_OK, NULL);
      CHECK_ERR(ait_session_output(s, 0, &out), AIT_OK, NULL);
      CHECK(out.dims[0] == (k == 1 ? 2 : 1));
      if (k != 1) CHECK(rel_err(out.data, want, n) < 1e-4);
    }
    ait_session_free(s);
    free(want);
  }
  free(img);
  ait_model_free(m);
}

/* Nodes outside the standard domains are refused by name. */
static void test_supports(void) {
  const ait_backend_iface *f = ait_backend_find("openvino");
  CHECK(f != NULL);
  if (!f) return;
  ait_backend_config cfg;
  CHECK_ERR(ait_backend_config_parse("openvino:threads=1", &cfg), AIT_OK, NULL);
  char why[256] = "";
  ait_node n = {.name = "fc0", .op_type = "FusedConv", .domain = "ai.aitune"};
  CHECK(!f->supports(&cfg, NULL, &n, why, sizeof why));
  CHECK(strstr(why, "ai.aitune") != NULL);
  ait_node std_node = {.name = "r", .op_type = "Relu", .domain = ""};
  CHECK(f->supports(&cfg, NULL, &std_node, why, sizeof why));
  CHECK(ait_backend_config_parse("openvino:precision=fp3", &cfg) != AIT_OK);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: test_openvino BERT_TINY.onnx MOBILENET.onnx\n");
    return 2;
  }
  const ait_backend_iface *f = ait_backend_find("openvino");
  char why[512] = "";
  if (f && (strstr(f->summary, "not built in") ||
            (!f->available(why, sizeof why) && strstr(why, "sanitizer")))) {
    printf("test_openvino: skipped: %s\n", (f->available(why, sizeof why), why));
    return 0;
  }
  CHECK(f && f->available(why, sizeof why));
  if (why[0]) fprintf(stderr, "openvino unavailable: %s\n", why);
  test_supports();
  test_bert(argv[1]);
  test_mobilenet(argv[2]);
  return check_result("test_openvino");
}
