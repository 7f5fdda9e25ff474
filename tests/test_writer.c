/* IR -> ONNX -> IR round trip: the written model loads back and computes the
 * same outputs bit for bit (the native backend saves its graphs this way). */
#include <stdlib.h>
#include <unistd.h>

#include "api/model_impl.h"
#include "check.h"
#include "onnx/onnx_io.h"

static void roundtrip(const char *path) {
  ait_model *a = NULL, *b = NULL;
  CHECK_ERR(ait_model_load(path, &a), AIT_OK, NULL);
  if (!a) return;
  char out[] = "/tmp/ait_writer_XXXXXX";
  int fd = mkstemp(out);
  close(fd);
  CHECK_ERR(ait_onnx_write_model(a->graph, out), AIT_OK, NULL);
  CHECK_ERR(ait_model_load(out, &b), AIT_OK, NULL);
  unlink(out);
  if (!b) {
    ait_model_free(a);
    return;
  }
  CHECK(ait_model_num_inputs(a) == ait_model_num_inputs(b));
  CHECK(a->graph->n_nodes == b->graph->n_nodes);
  /* same outputs on the committed test inputs */
  char dir[512], file[600];
  snprintf(dir, sizeof dir, "%s", path);
  *strrchr(dir, '/') = '\0';
  size_t n_in = ait_model_num_inputs(a);
  ait_tensor *ins[8] = {0};
  ait_tensor_view views[8];
  for (size_t i = 0; i < n_in && i < 8; i++) {
    snprintf(file, sizeof file, "%s/test_data_set_0/input_%zu.pb", dir, i);
    CHECK_ERR(ait_tensor_file_read(file, &ins[i], NULL), AIT_OK, NULL);
    if (!ins[i]) return;
    views[i] =
        (ait_tensor_view){.dtype = ins[i]->dtype, .rank = ins[i]->rank, .data = ins[i]->data};
    memcpy(views[i].dims, ins[i]->dims, sizeof views[i].dims);
  }
  ait_session *sa = NULL, *sb = NULL;
  CHECK_ERR(ait_session_create(a, "eager", &sa), AIT_OK, NULL);
  CHECK_ERR(ait_session_create(b, "eager", &sb), AIT_OK, NULL);
  CHECK_ERR(ait_session_run(sa, views, n_in), AIT_OK, NULL);
  CHECK_ERR(ait_session_run(sb, views, n_in), AIT_OK, NULL);
  ait_tensor_view oa, ob;
  CHECK_ERR(ait_session_output(sa, 0, &oa), AIT_OK, NULL);
  CHECK_ERR(ait_session_output(sb, 0, &ob), AIT_OK, NULL);
  size_t bytes = ait_dtype_size(oa.dtype);
  for (int k = 0; k < oa.rank; k++)
    bytes *= (size_t)oa.dims[k];
  CHECK(oa.rank == ob.rank && !memcmp(oa.dims, ob.dims, sizeof oa.dims));
  CHECK(!memcmp(oa.data, ob.data, bytes));
  for (size_t i = 0; i < n_in && i < 8; i++)
    ait_tensor_free(ins[i]);
  ait_session_free(sa);
  ait_session_free(sb);
  ait_model_free(a);
  ait_model_free(b);
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    roundtrip(argv[i]);
  return check_result("test_writer");
}
