/* Partitioning: a backend that supports only some ops runs its segments,
 * the fallback runs the rest, outputs match the reference, the split
 * survives save/load, and a backend with too small a share is refused. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/model_impl.h"
#include "backends/partition.h"
#include "check.h"
#include "core/error.h"
#include "model_builder.h"
#include "runtime/eager.h"
#include "tune/module_impl.h"

/* "t_relu": the reference underneath, but it claims only Relu and Add, and
 * refuses to build a graph holding anything else (so the partitioner must
 * have cut correctly). It counts the nodes it ran. */
static int nodes_run;

static bool t_supports(const ait_backend_config *cfg, const ait_graph *g, const ait_node *n,
                       char *why, size_t len) {
  if (!strcmp(n->op_type, "Relu") || !strcmp(n->op_type, "Add")) return true;
  snprintf(why, len, "t_relu runs only Relu and Add");
  return false;
}
static bool t_available(char *why, size_t n) { return true; }
static ait_status t_build(const ait_backend_config *cfg, const ait_graph *g,
                          const ait_build_info *info, void **state) {
  for (int k = 0; k < g->n_nodes; k++)
    if (!t_supports(cfg, g, &g->nodes[k], NULL, 0))
      return ait_err(AIT_E_INTERNAL, "t_relu was given a %s node", g->nodes[k].op_type);
  *state = (void *)g;
  return AIT_OK;
}
static ait_status t_infer(void *state, const ait_tensor *const *in, int n, ait_tensor **out) {
  const ait_graph *g = state;
  nodes_run += g->n_nodes;
  return ait_eager_run(g, in, n, out);
}
static ait_status t_nop(void *state) { return AIT_OK; }
static ait_status t_save(void *state, const char *dir) { return AIT_OK; }
static ait_status t_load(const ait_backend_config *cfg, const ait_graph *g, const char *dir,
                         void **state) {
  return t_build(cfg, g, NULL, state);
}
static void t_destroy(void *state) {}

static const ait_backend_iface t_relu = {
    .name = "t_relu",
    .summary = "test: Relu and Add only",
    .available = t_available,
    .supports = t_supports,
    .build = t_build,
    .infer = t_infer,
    .activate = t_nop,
    .deactivate = t_nop,
    .save = t_save,
    .load = t_load,
    .destroy = t_destroy,
};

/* Pack and load a test model (NULL on failure, checked). */
static ait_model *load_tb(tb_model *tb) {
  size_t size;
  uint8_t *buf = tb_pack(tb, &size);
  tb_free(tb);
  ait_model *m = NULL;
  CHECK_ERR(ait_model_load_buffer(buf, size, NULL, &m), AIT_OK, NULL);
  free(buf);
  return m;
}

/* "t_ctx": Relu anywhere, Add only when neither input is an input of the
 * graph it is asked about (as onednn takes a Reshape only when its shape is
 * computed inside): the whole graph says yes, the Add's own segment says
 * no, and the partitioner must move it. */
static bool c_supports(const ait_backend_config *cfg, const ait_graph *g, const ait_node *n,
                       char *why, size_t len) {
  if (!strcmp(n->op_type, "Relu")) return true;
  if (!strcmp(n->op_type, "Add")) {
    for (int k = 0; k < n->n_in; k++)
      for (int i = 0; i < g->n_inputs; i++)
        if (n->in[k] == g->inputs[i]) {
          snprintf(why, len, "t_ctx: Add reads a graph input");
          return false;
        }
    return true;
  }
  snprintf(why, len, "t_ctx runs only Relu and inner Adds");
  return false;
}
static ait_status c_build(const ait_backend_config *cfg, const ait_graph *g,
                          const ait_build_info *info, void **state) {
  char why[128];
  for (int k = 0; k < g->n_nodes; k++)
    if (!c_supports(cfg, g, &g->nodes[k], why, sizeof why))
      return ait_err(AIT_E_INTERNAL, "t_ctx was given a node it refuses: %s", why);
  *state = (void *)g;
  return AIT_OK;
}
static ait_status c_load(const ait_backend_config *cfg, const ait_graph *g, const char *dir,
                         void **state) {
  return c_build(cfg, g, NULL, state);
}
static ait_status c_infer(void *state, const ait_tensor *const *in, int n, ait_tensor **out) {
  return ait_eager_run(state, in, n, out);
}

static const ait_backend_iface t_ctx = {
    .name = "t_ctx",
    .summary = "test: Relu, and Add inside its graph only",
    .available = t_available,
    .supports = c_supports,
    .build = c_build,
    .infer = c_infer,
    .activate = t_nop,
    .deactivate = t_nop,
    .save = t_save,
    .load = c_load,
    .destroy = t_destroy,
};

static const int64_t d[2] = {4, 8}, dw[2] = {8, 8};

/* x -> Relu -> r; r -> Exp -> e; Add(r, e) -> Relu -> y: in the whole
 * graph the Add reads two inner values; cut off from Exp, it reads two
 * segment inputs. */
static ait_model *ctx_model(void) {
  tb_model *tb = tb_new(13);
  tb_input(tb, "x", AIT_FLOAT32, 2, d);
  tb_output(tb, "y", AIT_FLOAT32, 2, d);
  tb_node(tb, "Relu", "relu1", (const char *[]){"x", NULL}, (const char *[]){"r", NULL});
  tb_node(tb, "Exp", "exp", (const char *[]){"r", NULL}, (const char *[]){"e", NULL});
  tb_node(tb, "Add", "add", (const char *[]){"r", "e", NULL}, (const char *[]){"s", NULL});
  tb_node(tb, "Relu", "relu2", (const char *[]){"s", NULL}, (const char *[]){"y", NULL});
  return load_tb(tb);
}

/* x -> Add(x, b) -> Relu -> Exp -> Relu -> Add(., x) -> y: segments
 * [Add, Relu] [Exp] [Relu, Add] with a skip connection across the cut. */
static ait_model *mixed_model(void) {
  float b[8] = {0.5f, -1, 2, -0.25f, 0, 1, -2, 0.125f};
  static const int64_t db[1] = {8};
  tb_model *tb = tb_new(13);
  tb_input(tb, "x", AIT_FLOAT32, 2, d);
  tb_output(tb, "y", AIT_FLOAT32, 2, d);
  tb_init_f32(tb, "b", 1, db, b);
  tb_node(tb, "Add", "add1", (const char *[]){"x", "b", NULL}, (const char *[]){"a", NULL});
  tb_node(tb, "Relu", "relu1", (const char *[]){"a", NULL}, (const char *[]){"r", NULL});
  tb_node(tb, "Exp", "exp", (const char *[]){"r", NULL}, (const char *[]){"e", NULL});
  tb_node(tb, "Relu", "relu2", (const char *[]){"e", NULL}, (const char *[]){"r2", NULL});
  tb_node(tb, "Add", "add2", (const char *[]){"r2", "x", NULL}, (const char *[]){"y", NULL});
  return load_tb(tb);
}

/* x -> MatMul(x, W) -> Relu: the test backend gets only the cheap Relu */
static ait_model *matmul_model(void) {
  float w[64];
  for (int i = 0; i < 64; i++)
    w[i] = (float)(i % 7) - 3;
  tb_model *tb = tb_new(13);
  tb_input(tb, "x", AIT_FLOAT32, 2, d);
  tb_output(tb, "y", AIT_FLOAT32, 2, d);
  tb_init_f32(tb, "W", 2, dw, w);
  tb_node(tb, "MatMul", "mm", (const char *[]){"x", "W", NULL}, (const char *[]){"h", NULL});
  tb_node(tb, "Relu", "relu", (const char *[]){"h", NULL}, (const char *[]){"y", NULL});
  return load_tb(tb);
}

static void run_and_compare(ait_runner *r, const ait_graph *g) {
  float x[32];
  for (int i = 0; i < 32; i++)
    x[i] = (float)(i % 9) * 0.25f - 1;
  ait_tensor *in = ait_tensor_wrap(AIT_FLOAT32, 2, d, x);
  ait_tensor *got[1] = {0}, *want[1] = {0};
  nodes_run = 0;
  CHECK_ERR(r->iface->infer(r->state, (const ait_tensor *const *)&in, 1, got), AIT_OK, NULL);
  CHECK(nodes_run == 4); /* the four Relu/Add nodes ran on t_relu, Exp elsewhere */
  CHECK_ERR(ait_eager_run(g, (const ait_tensor *const *)&in, 1, want), AIT_OK, NULL);
  CHECK(got[0] && want[0] && !memcmp(got[0]->data, want[0]->data, sizeof x));
  ait_tensor_free(got[0]);
  ait_tensor_free(want[0]);
  ait_tensor_free(in);
}

int main(void) {
  CHECK_ERR(ait_backend_register(&t_relu), AIT_OK, NULL);
  ait_backend_config cfg;
  CHECK_ERR(ait_backend_config_parse("t_relu", &cfg), AIT_OK, NULL);

  ait_model *m = mixed_model();
  ait_runner r;
  CHECK_ERR(ait_runner_build(&cfg, m->graph, NULL, &r), AIT_OK, NULL);
  CHECK(r.n_segments == 3 && r.nodes_primary == 4 && r.nodes_total == 5);
  CHECK(r.fallback[0] != '\0');
  run_and_compare(&r, m->graph);

  /* the split survives save/load */
  char dir[] = "/tmp/ait_part_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  CHECK_ERR(r.iface->save(r.state, dir), AIT_OK, NULL);
  ait_runner r2;
  CHECK_ERR(ait_runner_load(&cfg, m->graph, dir, &r2), AIT_OK, NULL);
  CHECK(r2.n_segments == 3 && r2.nodes_primary == 4);
  if (r2.state) run_and_compare(&r2, m->graph);
  ait_runner_destroy(&r2);
  /* a corrupted partition file is an error, not a crash */
  char path[256];
  snprintf(path, sizeof path, "%s/partition.json", dir);
  FILE *f = fopen(path, "w");
  fputs("{\"segments\": [{\"backend\": \"t_relu\", \"nodes\": [99]}]}", f);
  fclose(f);
  CHECK_ERR(ait_runner_load(&cfg, m->graph, dir, &r2), AIT_E_PARSE, "corrupted");
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0);
  ait_runner_destroy(&r);
  ait_model_free(m);

  /* a node the backend refuses in its segment's own graph moves to the
   * fallback, and the build succeeds with the segments recomputed */
  CHECK_ERR(ait_backend_register(&t_ctx), AIT_OK, NULL);
  ait_backend_config ccfg;
  CHECK_ERR(ait_backend_config_parse("t_ctx", &ccfg), AIT_OK, NULL);
  m = ctx_model();
  CHECK_ERR(ait_runner_build(&ccfg, m->graph, NULL, &r), AIT_OK, NULL);
  CHECK(r.nodes_primary == 2 && r.nodes_total == 4);
  if (r.state) {
    float x[32];
    for (int i = 0; i < 32; i++)
      x[i] = (float)(i % 9) * 0.25f - 1;
    ait_tensor *in = ait_tensor_wrap(AIT_FLOAT32, 2, d, x);
    ait_tensor *got[1] = {0}, *want[1] = {0};
    CHECK_ERR(r.iface->infer(r.state, (const ait_tensor *const *)&in, 1, got), AIT_OK, NULL);
    CHECK_ERR(ait_eager_run(m->graph, (const ait_tensor *const *)&in, 1, want), AIT_OK, NULL);
    CHECK(got[0] && want[0] && !memcmp(got[0]->data, want[0]->data, sizeof x));
    ait_tensor_free(got[0]), ait_tensor_free(want[0]), ait_tensor_free(in);
  }
  ait_runner_destroy(&r);
  ait_model_free(m);

  /* a backend that would run only a sliver of the FLOPs is refused */
  m = matmul_model();
  CHECK_ERR(ait_runner_build(&cfg, m->graph, NULL, &r), AIT_E_UNSUPPORTED, "too little to pay off");
  ait_model_free(m);

  /* native with native as its fallback, and a node neither runs: the build
   * says which node (it used to build no segment at all, and every run then
   * failed with "graph output 'y' has no value") */
  tb_model *tb = tb_new(13);
  tb_input(tb, "x", AIT_FLOAT32, 2, d);
  tb_output(tb, "y", AIT_FLOAT32, 2, d);
  tb_node(tb, "Relu", "relu", (const char *[]){"x", NULL}, (const char *[]){"r", NULL});
  tb_node(tb, "FrobnicateTensor", "frob", (const char *[]){"r", NULL}, (const char *[]){"y", NULL});
  m = load_tb(tb);
  ait_backend_config ncfg;
  CHECK_ERR(ait_backend_config_parse("native", &ncfg), AIT_OK, NULL);
  if (m) {
    CHECK_ERR(ait_runner_build(&ncfg, m->graph, NULL, &r), AIT_E_UNSUPPORTED, "FrobnicateTensor");
    ait_session *sess = NULL;
    CHECK_ERR(ait_session_create(m, "native", &sess), AIT_E_UNSUPPORTED, "'frob'");
    CHECK(sess == NULL);
  }
  ait_model_free(m);
  return check_result("test_partition");
}
