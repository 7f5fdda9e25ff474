/* Every file the library reads is untrusted (issue 18): models, external
 * data and .pb tensors are attacked here as an attacker or an unlucky user
 * would, and each case must end in a clear error (or a correct load), never
 * a crash, a hang, a read outside the model's folder or a blow-up.
 *
 * Models too large or too deep for the test builder are written straight
 * in the protobuf wire format (pb_* below). */
#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api/model_impl.h"
#include "backends/backend.h"
#include "backends/quant/quant.h"
#include "check.h"
#include "core/fileio.h"
#include "model_builder.h"
#include "onnx/onnx_io.h"

/* ---- a minimal protobuf writer ---------------------------------------- */

typedef struct pb {
  uint8_t *p;
  size_t n, cap;
} pb;

static void pb_raw(pb *b, const void *d, size_t n) {
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2 + 64;
    b->p = realloc(b->p, b->cap);
  }
  if (n) memcpy(b->p + b->n, d, n);
  b->n += n;
}

static void pb_uv(pb *b, uint64_t v) {
  uint8_t t[10];
  int n = 0;
  do {
    t[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    v >>= 7;
  } while (v);
  pb_raw(b, t, (size_t)n);
}

static void pb_int(pb *b, int field, int64_t v) {
  pb_uv(b, (uint64_t)field << 3);
  pb_uv(b, (uint64_t)v);
}

static void pb_bytes(pb *b, int field, const void *d, size_t n) {
  pb_uv(b, (uint64_t)field << 3 | 2);
  pb_uv(b, n);
  pb_raw(b, d, n);
}

static void pb_str(pb *b, int field, const char *s) { pb_bytes(b, field, s, strlen(s)); }
/* append sub as a message field and free it */
static void pb_msg(pb *b, int field, pb *sub) {
  pb_bytes(b, field, sub->p ? sub->p : (uint8_t *)"", sub->n);
  free(sub->p);
  *sub = (pb){0};
}

/* ValueInfoProto of a float tensor; rank < 0: no shape */
static void pb_value_info(pb *g, int field, const char *name, int rank, const int64_t *dims) {
  pb vi = {0}, tp = {0}, tt = {0}, sh = {0};
  pb_str(&vi, 1, name);
  pb_int(&tt, 1, AIT_FLOAT32);
  for (int k = 0; k < rank; k++) {
    pb d = {0};
    pb_int(&d, 1, dims[k]);
    pb_msg(&sh, 1, &d);
  }
  if (rank >= 0) pb_msg(&tt, 2, &sh);
  pb_msg(&tp, 1, &tt);
  pb_msg(&vi, 2, &tp);
  pb_msg(g, field, &vi);
}

/* NodeProto with one input (NULL: none) and one output */
static void pb_node(pb *g, const char *op, const char *in, const char *out) {
  pb n = {0};
  if (in) pb_str(&n, 1, in);
  pb_str(&n, 2, out);
  pb_str(&n, 4, op);
  pb_msg(g, 1, &n);
}

/* INT64 initializer (int64_data) */
static void pb_init_i64(pb *g, const char *name, int n, const int64_t *v) {
  pb t = {0};
  pb_int(&t, 1, n); /* dims = [n] */
  pb_int(&t, 2, AIT_INT64);
  for (int i = 0; i < n; i++)
    pb_int(&t, 7, v[i]);
  pb_str(&t, 8, name);
  pb_msg(g, 5, &t);
}

/* ModelProto around graph g (consumed), default domain at `opset` */
static pb pb_model(pb *g, int opset) {
  pb m = {0}, o = {0};
  pb_int(&m, 1, 8);
  pb_int(&o, 2, opset);
  pb_msg(&m, 8, &o);
  pb_msg(&m, 7, g);
  return m;
}

static ait_status load_pb(pb *m, ait_model **out) {
  ait_status st = ait_model_load_buffer(m->p, m->n, ".", out);
  free(m->p);
  *m = (pb){0};
  return st;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const int64_t d23[2] = {2, 3};

/* ---- 1. a required input that is "" or missing ----------------------- */

/* Load-time folding used to call the kernel with NULL for the missing input
 * (SIGSEGV): the output's declared shape makes the node look foldable. The
 * eager executor now refuses the node by name, at load and at run time. */
static void test_missing_required_input(void) {
  static const char *const ops[] = {"Identity",        "Size",    "Split",   "Shape",
                                    "Transpose",       "Flatten", "Squeeze", "ArgMax",
                                    "ConstantOfShape", "Tile",    "Reshape", "ReduceLogSum"};
  for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
    for (int empty = 0; empty < 2; empty++) {
      tb_model *tb = tb_new(13);
      tb_input(tb, "x", AIT_FLOAT32, 2, d23);
      tb_output(tb, "y", AIT_FLOAT32, 2, d23);
      const char *none[] = {NULL}, *blank[] = {"", NULL};
      tb_node(tb, ops[o], "n", empty ? blank : none, (const char *[]){"y", NULL});
      size_t size;
      uint8_t *buf = tb_pack(tb, &size);
      tb_free(tb);
      ait_model *m = NULL;
      ait_status st = ait_model_load_buffer(buf, size, ".", &m);
      free(buf);
      if (st != AIT_OK) continue; /* refused at load with a message: fine */
      ait_session *s = NULL;
      st = ait_session_create(m, "eager", &s);
      if (st == AIT_OK) {
        float x[6] = {0};
        ait_tensor_view in = {.dtype = AIT_FLOAT32, .rank = 2, .dims = {2, 3}, .data = x};
        CHECK_ERR(ait_session_run(s, &in, 1), AIT_E_INVALID_MODEL, "required input 0");
        if (!strstr(ait_last_error(), ops[o])) {
          fprintf(stderr, "op %s: message does not name the node: %s\n", ops[o], ait_last_error());
          check_failures++;
        }
        ait_session_free(s);
      }
      ait_model_free(m);
    }
}

/* ---- 2. subgraphs nested too deep ------------------------------------ */

/* If nodes nested `depth` deep: then_branch holds the next level, else an
 * Identity. Built inside out, so no recursion here either. */
static pb nested_if_model(int depth) {
  pb inner = {0};
  pb_node(&inner, "Identity", "x", "y");
  pb_value_info(&inner, 12, "y", -1, NULL);
  for (int d = 0; d < depth; d++) {
    pb g = {0}, node = {0}, then_a = {0}, else_a = {0}, else_g = {0};
    pb_str(&node, 1, "c");
    pb_str(&node, 2, "y");
    pb_str(&node, 4, "If");
    pb_str(&then_a, 1, "then_branch");
    pb_int(&then_a, 20, 5);
    pb_msg(&then_a, 6, &inner);
    pb_node(&else_g, "Identity", "x", "y");
    pb_value_info(&else_g, 12, "y", -1, NULL);
    pb_str(&else_a, 1, "else_branch");
    pb_int(&else_a, 20, 5);
    pb_msg(&else_a, 6, &else_g);
    pb_msg(&node, 5, &then_a);
    pb_msg(&node, 5, &else_a);
    pb_msg(&g, 1, &node);
    pb_value_info(&g, 12, "y", -1, NULL);
    inner = g;
  }
  /* the top graph declares c and x */
  pb top = {0};
  pb_raw(&top, inner.p, inner.n);
  free(inner.p);
  pb vi = {0}, tp = {0}, tt = {0};
  pb_str(&vi, 1, "c");
  pb_int(&tt, 1, AIT_BOOL);
  pb sh = {0};
  pb_msg(&tt, 2, &sh);
  pb_msg(&tp, 1, &tt);
  pb_msg(&vi, 2, &tp);
  pb_msg(&top, 11, &vi);
  pb_value_info(&top, 11, "x", 1, (const int64_t[]){2});
  return pb_model(&top, 17);
}

static void test_deep_nesting(void) {
  ait_model *m = NULL;
  pb ok = nested_if_model(10);
  CHECK_ERR(load_pb(&ok, &m), AIT_OK, NULL);
  ait_model_free(m);
  m = NULL;
  pb deep = nested_if_model(3000); /* ~0.3 MB: overflowed protobuf-c's recursive unpack */
  CHECK(deep.n > 100000);
  CHECK_ERR(load_pb(&deep, &m), AIT_E_INVALID_MODEL, "nests messages more than");
  CHECK(m == NULL);
}

/* ---- 6, 11, 15: files --------------------------------------------------- */

static ait_status load_external(const char *dir, const char *location, int64_t offset,
                                int64_t length, ait_model **m) {
  tb_model *tb = tb_new(13);
  tb_input(tb, "x", AIT_FLOAT32, 2, d23);
  tb_output(tb, "y", AIT_FLOAT32, 2, d23);
  tb_init_external(tb, "w", 2, d23, location, offset, length);
  tb_node(tb, "Add", "add", (const char *[]){"x", "w", NULL}, (const char *[]){"y", NULL});
  size_t size;
  uint8_t *buf = tb_pack(tb, &size);
  tb_free(tb);
  ait_status st = ait_model_load_buffer(buf, size, dir, m);
  free(buf);
  return st;
}

static void write_bytes(const char *path, const void *d, size_t n) {
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  if (!f) return;
  fwrite(d, 1, n, f);
  fclose(f);
}

/* A .pb TensorProto of float [2,3] whose data lives in external file `loc` */
static void write_external_pb(const char *path, const char *loc) {
  pb t = {0}, e = {0};
  pb_int(&t, 1, 2);
  pb_int(&t, 1, 3);
  pb_int(&t, 2, AIT_FLOAT32);
  pb_str(&t, 8, "x");
  pb_str(&e, 1, "location");
  pb_str(&e, 2, loc);
  pb_msg(&t, 13, &e);
  pb_int(&t, 14, 1); /* data_location = EXTERNAL */
  write_bytes(path, t.p, t.n);
  free(t.p);
}

static void test_files(void) {
  char dir[] = "/tmp/ait_untrusted_XXXXXX", out[] = "/tmp/ait_outside_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  CHECK(mkdtemp(out) != NULL);
  char p[512], q[512];
  float w[6] = {1, 2, 3, 4, 5, 6};
  /* a secret outside the model's folder, and a link to it beside the model */
  snprintf(p, sizeof p, "%s/secret.bin", out);
  write_bytes(p, "SECRET:SECRET:SECRET:SECRET!", 24);
  snprintf(q, sizeof q, "%s/p", dir);
  CHECK(symlink(p, q) == 0);
  snprintf(p, sizeof p, "%s/weights.bin", dir);
  write_bytes(p, w, sizeof w);
  snprintf(q, sizeof q, "%s/inside", dir); /* a link that stays inside is fine */
  CHECK(symlink("weights.bin", q) == 0);
  ait_model *m = NULL;
  CHECK_ERR(load_external(dir, "p", 0, 24, &m), AIT_E_INVALID_MODEL, "outside the model's folder");
  CHECK(strstr(ait_last_error(), "SECRET") == NULL);
  CHECK_ERR(load_external(dir, "inside", 0, 24, &m), AIT_OK, NULL);
  ait_model_free(m);
  m = NULL;
  /* offset and length: negative, overflowing or not numbers are refused */
  CHECK_ERR(load_external(dir, "weights.bin", 0, -5, &m), AIT_E_INVALID_MODEL, "non-negative");
  CHECK_ERR(load_external(dir, "weights.bin", -1, 24, &m), AIT_E_INVALID_MODEL, "non-negative");
  CHECK_ERR(load_external(dir, "weights.bin", INT64_MAX, INT64_MAX, &m), AIT_E_IO, "cannot read");
  /* an input .pb whose external data is the link */
  snprintf(p, sizeof p, "%s/input_0.pb", dir);
  write_external_pb(p, "p");
  ait_tensor *t = NULL;
  CHECK_ERR(ait_tensor_file_read(p, &t, NULL), AIT_E_INVALID_MODEL, "outside the model's folder");
  CHECK(strstr(ait_last_error(), "SECRET") == NULL);
  write_external_pb(p, "weights.bin");
  CHECK_ERR(ait_tensor_file_read(p, &t, NULL), AIT_OK, NULL);
  if (t) CHECK(((float *)t->data)[5] == 6.0f);
  ait_tensor_free(t);
  t = NULL;
  /* a .pb claiming 10^12 elements with 4 bytes of data: no allocation first */
  pb big = {0};
  pb_int(&big, 1, 1000000);
  pb_int(&big, 1, 1000000);
  pb_int(&big, 2, AIT_FLOAT32);
  pb_bytes(&big, 9, "\0\0\0\0", 4);
  write_bytes(p, big.p, big.n);
  free(big.p);
  CHECK_ERR(ait_tensor_file_read(p, &t, NULL), AIT_E_INVALID_MODEL, "needs 4000000000000 bytes");
  /* a FIFO as external data, or as the model: refused at once, no hang */
  snprintf(p, sizeof p, "%s/fifo", dir);
  CHECK(mkfifo(p, 0600) == 0);
  double t0 = now_s();
  CHECK_ERR(load_external(dir, "fifo", 0, 24, &m), AIT_E_IO, "a FIFO");
  CHECK_ERR(ait_model_load(p, &m), AIT_E_IO, "not a regular file");
  CHECK(now_s() - t0 < 5);
  /* a folder as the model */
  CHECK_ERR(ait_model_load(dir, &m), AIT_E_IO, "is a directory");
  CHECK(strstr(ait_last_error(), "9223372036854775807") == NULL);
  const char *names[] = {"p", "weights.bin", "inside", "input_0.pb", "fifo"};
  for (int i = 0; i < 5; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, names[i]);
    unlink(p);
  }
  snprintf(p, sizeof p, "%s/secret.bin", out);
  unlink(p);
  rmdir(dir);
  rmdir(out);
}

/* ---- 15: messages --------------------------------------------------------- */

static void test_messages(void) {
  /* rank 9 input */
  pb g = {0};
  int64_t d9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  pb_node(&g, "Relu", "x", "y");
  pb_value_info(&g, 11, "x", 9, d9);
  pb_value_info(&g, 12, "y", -1, NULL);
  pb m9 = pb_model(&g, 13);
  ait_model *m = NULL;
  CHECK_ERR(load_pb(&m9, &m), AIT_E_UNSUPPORTED, "rank 9, above the maximum rank 8");
  /* NULL inputs through the C API */
  tb_model *tb = tb_new(13);
  tb_input(tb, "a", AIT_FLOAT32, 2, d23);
  tb_input(tb, "b", AIT_FLOAT32, 2, d23);
  tb_output(tb, "y", AIT_FLOAT32, 2, d23);
  tb_node(tb, "Add", "add", (const char *[]){"a", "b", NULL}, (const char *[]){"y", NULL});
  size_t size;
  uint8_t *buf = tb_pack(tb, &size);
  tb_free(tb);
  CHECK_ERR(ait_model_load_buffer(buf, size, ".", &m), AIT_OK, NULL);
  free(buf);
  ait_session *s = NULL;
  CHECK_ERR(ait_session_create(m, "eager", &s), AIT_OK, NULL);
  CHECK_ERR(ait_session_run(s, NULL, 2), AIT_E_INVALID_ARG, "inputs is NULL");
  float x[6] = {0};
  ait_tensor_view in[2] = {{.dtype = AIT_FLOAT32, .rank = 2, .dims = {2, 3}, .data = x},
                           {.dtype = AIT_FLOAT32, .rank = 2, .dims = {2, 3}, .data = NULL}};
  CHECK_ERR(ait_session_run(s, in, 2), AIT_E_INVALID_ARG, "input 1 ('b'): data is NULL");
  ait_session_free(s);
  ait_model_free(m);
}

/* ---- 12. a 100,000-node chain loads in linear time ---------------------- */

static void test_long_chain(void) {
  enum { N = 100000 };
  pb g = {0};
  char a[32], b[32];
  for (int i = N - 1; i >= 0; i--) { /* listed backwards, so the sort has work to do */
    snprintf(a, sizeof a, i ? "t%d" : "x", i);
    snprintf(b, sizeof b, i < N - 1 ? "t%d" : "y", i + 1);
    pb_node(&g, "Relu", a, b);
  }
  pb_value_info(&g, 11, "x", 2, d23);
  pb_value_info(&g, 12, "y", 2, d23);
  pb mp = pb_model(&g, 13);
  ait_model *m = NULL;
  double t0 = now_s();
  CHECK_ERR(load_pb(&mp, &m), AIT_OK, NULL);
  double dt = now_s() - t0;
  printf("100,000-node Relu chain loaded in %.2f s\n", dt);
  CHECK(dt < 20); /* was 359 s (quadratic); ~0.3 s in Release, a few s under ASan */
  ait_tensor_info info;
  CHECK_ERR(ait_model_output(m, 0, &info), AIT_OK, NULL);
  CHECK(info.rank == 2 && info.dims[1] == 3);
  ait_model_free(m);
}

/* ---- 13. folding only under the size cap, decided before running ------- */

static long max_rss_mb(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024;
}

static void test_fold_cap(void) {
  /* y = Expand(one, [N]) with N = 2.5e8: folding it wrote 1 GB at load */
  static const char *const ops[] = {"Expand", "ConstantOfShape"};
  for (int o = 0; o < 2; o++) {
    pb g = {0};
    pb n = {0};
    if (o == 0) {
      pb_str(&n, 1, "one");
      pb t = {0};
      pb_int(&t, 1, 1);
      pb_int(&t, 2, AIT_FLOAT32);
      pb_bytes(&t, 9, "\0\0\x80\x3f", 4);
      pb_str(&t, 8, "one");
      pb_msg(&g, 5, &t);
    }
    pb_str(&n, 1, "s");
    pb_str(&n, 2, "y");
    pb_str(&n, 4, ops[o]);
    pb_msg(&g, 1, &n);
    pb_init_i64(&g, "s", o == 0 ? 1 : 3,
                o == 0 ? (const int64_t[]){250000000} : (const int64_t[]){1500, 1000, 1000});
    pb_value_info(&g, 12, "y", -1, NULL);
    pb mp = pb_model(&g, 13);
    long rss0 = max_rss_mb();
    double t0 = now_s();
    ait_model *m = NULL;
    CHECK_ERR(load_pb(&mp, &m), AIT_OK, NULL);
    double dt = now_s() - t0;
    long grew = max_rss_mb() - rss0;
    printf("%s of 1e9+ elements: loaded in %.3f s, peak RSS +%ld MB\n", ops[o], dt, grew);
    CHECK(dt < 2 && grew < 200);
    ait_tensor_info info;
    CHECK_ERR(ait_model_output(m, 0, &info), AIT_OK, NULL);
    CHECK(info.rank == (o == 0 ? 1 : 3)); /* the shape is still inferred */
    ait_model_free(m);
  }
}

/* ---- limits: documented defaults, overrides in ait_load_options ---------- */

static ait_status load_pb_opts(pb *m, const ait_load_options *lo, ait_model **out) {
  ait_status st = ait_model_load_buffer_opts(m->p, m->n, ".", lo, out);
  free(m->p);
  *m = (pb){0};
  return st;
}

/* a chain of n Relus, x -> y */
static pb relu_chain(int n) {
  pb g = {0};
  char a[32], b[32];
  for (int i = 0; i < n; i++) {
    snprintf(a, sizeof a, i ? "t%d" : "x", i);
    snprintf(b, sizeof b, i < n - 1 ? "t%d" : "y", i + 1);
    pb_node(&g, "Relu", a, b);
  }
  pb_value_info(&g, 11, "x", 2, d23);
  pb_value_info(&g, 12, "y", 2, d23);
  return pb_model(&g, 13);
}

/* y = x + w, w an initializer of float `dims` holding `n_data` bytes */
static pb add_init(int rank, const int64_t *dims, size_t n_data) {
  pb g = {0}, t = {0}, n = {0};
  for (int k = 0; k < rank; k++)
    pb_int(&t, 1, dims[k]);
  pb_int(&t, 2, AIT_FLOAT32);
  pb_str(&t, 8, "w");
  uint8_t *zeros = calloc(1, n_data + 1);
  pb_bytes(&t, 9, zeros, n_data);
  free(zeros);
  pb_msg(&g, 5, &t);
  pb_str(&n, 1, "x");
  pb_str(&n, 1, "w");
  pb_str(&n, 2, "y");
  pb_str(&n, 4, "Add");
  pb_msg(&g, 1, &n);
  pb_value_info(&g, 11, "x", rank, dims);
  pb_value_info(&g, 12, "y", -1, NULL);
  return pb_model(&g, 13);
}

/* y = ConstantOfShape([n]): folded at load when n <= max_fold_elements */
static bool folds(int64_t n, const ait_load_options *lo) {
  pb g = {0}, nd = {0};
  pb_init_i64(&g, "s", 1, (const int64_t[]){n});
  pb_str(&nd, 1, "s");
  pb_str(&nd, 2, "y");
  pb_str(&nd, 4, "ConstantOfShape");
  pb_msg(&g, 1, &nd);
  pb_value_info(&g, 12, "y", -1, NULL);
  pb mp = pb_model(&g, 13);
  ait_model *m = NULL;
  CHECK_ERR(load_pb_opts(&mp, lo, &m), AIT_OK, NULL);
  if (!m) return false;
  const ait_graph *gr = ait_model_graph(m);
  int y = ait_graph_find_value(gr, "y");
  bool folded = y >= 0 && gr->values[y].init != NULL;
  ait_model_free(m);
  return folded;
}

static void test_limits(void) {
  ait_load_options lo;
  ait_load_options_init(&lo);
  CHECK(lo.struct_size == sizeof lo && lo.max_depth == AIT_DEFAULT_MAX_DEPTH &&
        lo.max_nodes == AIT_DEFAULT_MAX_NODES &&
        lo.max_tensor_bytes == AIT_DEFAULT_MAX_TENSOR_BYTES &&
        lo.max_fold_elements == AIT_DEFAULT_MAX_FOLD_ELEMENTS);
  ait_model *m = NULL;

  /* max_depth: 40 nested Ifs (about 125 levels) are refused by default and
   * load with 200; 330 (about 995 levels) load at the bound, 1000, without
   * hurting the stack */
  pb mp = nested_if_model(40);
  CHECK_ERR(load_pb_opts(&mp, NULL, &m), AIT_E_INVALID_MODEL, "more than 100 deep");
  CHECK(strstr(ait_last_error(), "--max-depth") != NULL);
  lo.max_depth = 200;
  mp = nested_if_model(40);
  CHECK_ERR(load_pb_opts(&mp, &lo, &m), AIT_OK, NULL);
  ait_model_free(m);
  m = NULL;
  lo.max_depth = AIT_MAX_DEPTH_BOUND;
  mp = nested_if_model(330);
  CHECK_ERR(load_pb_opts(&mp, &lo, &m), AIT_OK, NULL);
  ait_model_free(m);
  m = NULL;
  mp = nested_if_model(340);
  CHECK_ERR(load_pb_opts(&mp, &lo, &m), AIT_E_INVALID_MODEL, "more than 1000 deep");

  /* max_nodes: subgraphs' nodes count */
  ait_load_options_init(&lo);
  lo.max_nodes = 999;
  mp = relu_chain(1000);
  CHECK_ERR(load_pb_opts(&mp, &lo, &m), AIT_E_UNSUPPORTED, "more than 999 nodes (max_nodes");
  lo.max_nodes = 1000;
  mp = relu_chain(1000);
  CHECK_ERR(load_pb_opts(&mp, &lo, &m), AIT_OK, NULL);
  ait_model_free(m);
  m = NULL;
  lo.max_nodes = 20; /* 10 Ifs of 2 branches: 10 + 10 * 2 + the innermost */
  mp = nested_if_model(10);
  CHECK_ERR(load_pb_opts(&mp, &lo, &m), AIT_E_UNSUPPORTED, "more than 20 nodes");

  /* max_tensor_bytes: 2^41 claimed bytes (an 8-byte model may claim them)
   * are refused by default before any allocation; raised, the claim meets
   * the next check, the data the file holds */
  ait_load_options_init(&lo);
  const int64_t huge[3] = {1 << 20, 1 << 19, 2}; /* 2^40 floats: 2^42 bytes */
  mp = add_init(3, huge, 4);
  CHECK_ERR(load_pb_opts(&mp, NULL, &m), AIT_E_INVALID_MODEL,
            "needs 4398046511104 bytes, more than max_tensor_bytes 1099511627776");
  lo.max_tensor_bytes = AIT_MAX_TENSOR_BYTES_BOUND;
  mp = add_init(3, huge, 4);
  CHECK_ERR(load_pb_opts(&mp, &lo, &m), AIT_E_INVALID_MODEL, "but has 4");
  const int64_t over[3] = {1 << 20, 1 << 20, 2}; /* 2^41 elements: never, whatever the bytes */
  mp = add_init(3, over, 4);
  CHECK_ERR(load_pb_opts(&mp, &lo, &m), AIT_E_INVALID_MODEL, "has more than 2^40 elements");
  lo.max_tensor_bytes = 23; /* a [2,3] float initializer is 24 bytes */
  mp = add_init(2, d23, 24);
  CHECK_ERR(load_pb_opts(&mp, &lo, &m), AIT_E_INVALID_MODEL,
            "'w' needs 24 bytes, more than max_tensor_bytes 23");
  lo.max_tensor_bytes = 24;
  mp = add_init(2, d23, 24);
  CHECK_ERR(load_pb_opts(&mp, &lo, &m), AIT_OK, NULL);
  ait_model_free(m);
  m = NULL;

  /* max_fold_elements: 5000 elements are not folded by default, are with
   * 8192; 4096 are, and not under a lowered 100 */
  ait_load_options_init(&lo);
  CHECK(!folds(5000, NULL));
  CHECK(folds(4096, NULL));
  lo.max_fold_elements = 8192;
  CHECK(folds(5000, &lo));
  lo.max_fold_elements = 100;
  CHECK(!folds(4096, &lo));

  /* a bad value is refused by name, before the model is read */
  static const struct {
    int field;
    int64_t v;
    const char *msg;
  } bad[] = {
      {0, 0, "ait_load_options.max_depth is 0, outside [1, 1000]"},
      {0, 1001, "max_depth is 1001"},
      {1, 0, "ait_load_options.max_nodes is 0"},
      {1, AIT_MAX_NODES_BOUND + 1, "max_nodes is 1000000001"},
      {2, -1, "ait_load_options.max_tensor_bytes is -1"},
      {2, AIT_MAX_TENSOR_BYTES_BOUND + 1, "max_tensor_bytes is 17592186044417"},
      {3, 0, "ait_load_options.max_fold_elements is 0"},
      {3, AIT_MAX_FOLD_ELEMENTS_BOUND + 1, "max_fold_elements is 16777217"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ait_load_options_init(&lo);
    if (bad[i].field == 0) lo.max_depth = (int)bad[i].v;
    if (bad[i].field == 1) lo.max_nodes = bad[i].v;
    if (bad[i].field == 2) lo.max_tensor_bytes = bad[i].v;
    if (bad[i].field == 3) lo.max_fold_elements = bad[i].v;
    mp = relu_chain(2);
    CHECK_ERR(load_pb_opts(&mp, &lo, &m), AIT_E_INVALID_ARG, bad[i].msg);
    CHECK(m == NULL);
    CHECK_ERR(ait_model_load_opts("/nonexistent.onnx", &lo, &m), AIT_E_INVALID_ARG, bad[i].msg);
    ait_module *mod = NULL;
    CHECK_ERR(ait_module_create_opts("/nonexistent.onnx", NULL, &lo, &mod), AIT_E_INVALID_ARG,
              bad[i].msg);
    CHECK_ERR(ait_module_load_opts("/nonexistent", NULL, NULL, &lo, &mod), AIT_E_INVALID_ARG,
              bad[i].msg);
    CHECK(mod == NULL);
  }
  /* the struct_size rules of ait_tune_options */
  ait_load_options_init(&lo);
  lo.struct_size = 0;
  mp = relu_chain(2);
  CHECK_ERR(load_pb_opts(&mp, &lo, &m), AIT_E_INVALID_ARG, "ait_load_options_init()");
  lo.struct_size = offsetof(ait_load_options, max_nodes) + 3;
  mp = relu_chain(2);
  CHECK_ERR(load_pb_opts(&mp, &lo, &m), AIT_E_INVALID_ARG, "ends inside field max_nodes");
  /* an older caller's struct: fields past its size take their defaults */
  memset(&lo, 0x5a, sizeof lo);
  CHECK_ERR(ait_load_options_init_size(&lo, offsetof(ait_load_options, max_nodes)), AIT_OK, NULL);
  CHECK(lo.max_depth == AIT_DEFAULT_MAX_DEPTH && lo.max_nodes == 0x5a5a5a5a5a5a5a5a);
  mp = relu_chain(2);
  CHECK_ERR(load_pb_opts(&mp, &lo, &m), AIT_OK, NULL);
  ait_model_free(m);
}

/* A tuned folder keeps needing the limits its model needed: the folder's
 * model.onnx and the backend's saved graph load under the caller's. */
static void test_limits_tuned_folder(void) {
  char dir[] = "/tmp/ait_limits_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char model[600], out[600];
  snprintf(model, sizeof model, "%s/deep.onnx", dir);
  snprintf(out, sizeof out, "%s/tuned", dir);
  pb mp = nested_if_model(40);
  write_bytes(model, mp.p, mp.n);
  free(mp.p);
  ait_load_options lo;
  ait_load_options_init(&lo);
  lo.max_depth = 200;
  ait_module *m = NULL;
  CHECK_ERR(ait_module_create(model, NULL, &m), AIT_E_INVALID_MODEL, "more than 100 deep");
  CHECK_ERR(ait_module_create_opts(model, NULL, &lo, &m), AIT_OK, NULL);
  ait_tune_options o;
  ait_tune_options_init(&o);
  static const char *const native[] = {"native"};
  static const int batch1[] = {1};
  o.strategy = AIT_STRATEGY_ONE_BACKEND;
  o.backends = native;
  o.n_backends = 1;
  o.batch_sizes = batch1;
  o.n_batch_sizes = 1;
  o.warmup = 0;
  o.min_runs = o.max_runs = 1;
  o.runoff_rounds = 0;
  o.cache_dir = "";
  if (m) {
    CHECK_ERR(ait_module_tune(m, &o), AIT_OK, NULL);
    CHECK_ERR(ait_module_save(m, out), AIT_OK, NULL);
  }
  ait_module_free(m);
  m = NULL;
  CHECK_ERR(ait_module_load(out, NULL, NULL, &m), AIT_E_INVALID_MODEL, "more than 100 deep");
  CHECK_ERR(ait_module_load_opts(out, NULL, NULL, &lo, &m), AIT_OK, NULL);
  ait_module_free(m);
  char cmd[1300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CHECK(system(cmd) == 0);
}

/* ---- 11: a FIFO in a tuned folder ---------------------------------------
 * Every file the library reads goes through ait_open_regular. Two did not:
 * the SHA-256 of the manifest check (fopen: a FIFO as decision.json or a
 * backend's file blocked `aitune run DIR` before anything was parsed) and
 * quant's quant_weights.bin (fopen + fseek). */
static void test_fifo_tuned_files(void) {
  char dir[] = "/tmp/ait_fifo_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char model[600], p[700];
  snprintf(model, sizeof model, "%s/relu.onnx", dir);
  pb mp = relu_chain(2);
  write_bytes(model, mp.p, mp.n);
  free(mp.p);
  ait_module *m = NULL;
  CHECK_ERR(ait_module_create(model, NULL, &m), AIT_OK, NULL);
  ait_tune_options o;
  ait_tune_options_init(&o);
  static const char *const native[] = {"native"};
  static const int batch1[] = {1};
  o.strategy = AIT_STRATEGY_ONE_BACKEND;
  o.backends = native;
  o.n_backends = 1;
  o.batch_sizes = batch1;
  o.n_batch_sizes = 1;
  o.warmup = 0;
  o.min_runs = o.max_runs = 1;
  o.runoff_rounds = 0;
  o.cache_dir = "";
  if (m) CHECK_ERR(ait_module_tune(m, &o), AIT_OK, NULL);
  static const char *const files[] = {"decision.json", "report.json"};
  for (int i = 0; m && i < 2; i++) {
    char out[650];
    snprintf(out, sizeof out, "%s/t%d", dir, i);
    CHECK_ERR(ait_module_save(m, out), AIT_OK, NULL);
    snprintf(p, sizeof p, "%s/%s", out, files[i]);
    CHECK(unlink(p) == 0 && mkfifo(p, 0600) == 0);
    double t0 = now_s();
    ait_module *l = NULL;
    CHECK_ERR(ait_module_load(out, NULL, NULL, &l), AIT_E_IO, "is a FIFO, not a regular file");
    CHECK(strstr(ait_last_error(), files[i]) != NULL);
    CHECK(now_s() - t0 < 5 && l == NULL);
  }
  /* a sparse 1 GB manifest: refused by its size, before it is read whole */
  if (m) {
    char out[650];
    snprintf(out, sizeof out, "%s/t2", dir);
    CHECK_ERR(ait_module_save(m, out), AIT_OK, NULL);
    snprintf(p, sizeof p, "%s/MANIFEST.sha256", out);
    CHECK(truncate(p, 1LL << 30) == 0);
    long rss0 = max_rss_mb();
    ait_module *l = NULL;
    CHECK_ERR(ait_module_load(out, NULL, NULL, &l), AIT_E_IO,
              "MANIFEST.sha256' has 1073741824 bytes, more than the 67108864 it may have");
    CHECK(max_rss_mb() - rss0 < 100 && l == NULL);
  }
  ait_module_free(m);
  /* quant's weights file, read past the manifest (which a rebuilt one passes) */
  snprintf(p, sizeof p, "%s/quant_config.json", dir);
  write_bytes(p, "{\"quantization\": \"int8wo\"}", 26);
  snprintf(p, sizeof p, "%s/quant_weights.bin", dir);
  CHECK(mkfifo(p, 0600) == 0);
  ait_model *mm = NULL;
  mp = relu_chain(2);
  CHECK_ERR(load_pb(&mp, &mm), AIT_OK, NULL);
  qnt_config c;
  qnt_node *q = NULL;
  int n = 0;
  double t0 = now_s();
  if (mm)
    CHECK_ERR(qnt_load(ait_model_graph(mm), dir, &c, &q, &n), AIT_E_IO,
              "quant_weights.bin' is a FIFO, not a regular file");
  CHECK(now_s() - t0 < 5 && q == NULL);
  ait_model_free(mm);
  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CHECK(system(cmd) == 0);
}

/* ---- 12: a damaged quant_weights.bin ------------------------------------
 * quant's loader (the backend's load(), as a tuned folder reaches it) on a
 * weights file that a real save wrote and something then damaged: a bit
 * flipped at bytes across the file, the file cut short at many lengths, an
 * empty file and one of another owner. Each is AIT_E_PARSE naming the
 * file (the saved-state format checks it whole before a weight is read),
 * never a crash or a load that succeeds on wrong bytes. */
static void test_quant_weights_damaged(void) {
  char dir[] = "/tmp/ait_qnt_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  tb_model *tm = tb_new(17);
  int64_t xd[2] = {2, 64}, wd[2] = {64, 48}, yd[2] = {2, 48};
  tb_input(tm, "X", AIT_FLOAT32, 2, xd);
  tb_output(tm, "Y", AIT_FLOAT32, 2, yd);
  float *w = malloc(sizeof(float) * 64 * 48);
  for (int i = 0; i < 64 * 48; i++)
    w[i] = (float)((i * 37) % 101 - 50) / 64.0f;
  tb_init_f32(tm, "W", 2, wd, w);
  free(w);
  tb_node(tm, "MatMul", "mm", (const char *[]){"X", "W", NULL}, (const char *[]){"Y", NULL});
  ait_graph *g = tb_parse_graph(tm);
  CHECK(g != NULL);
  ait_backend_config cfg;
  CHECK_ERR(ait_backend_config_parse("quant:preset=int8wo", &cfg), AIT_OK, NULL);
  void *state = NULL;
  if (g && !cfg.iface->build(&cfg, g, NULL, &state)) {
    CHECK_ERR(cfg.iface->save(state, dir), AIT_OK, NULL);
    cfg.iface->destroy(state);
  } else {
    CHECK(false);
  }
  char p[600];
  snprintf(p, sizeof p, "%s/quant_weights.bin", dir);
  void *data = NULL;
  size_t size = 0;
  CHECK_ERR(ait_read_file(p, &data, &size), AIT_OK, NULL);
  state = NULL;
  if (g) CHECK_ERR(cfg.iface->load(&cfg, g, dir, &state), AIT_OK, NULL); /* intact: loads */
  if (state) cfg.iface->destroy(state);
  uint8_t *b = data;
  int flips = 0, cuts = 0;
  for (size_t at = 0; g && b && at < size; at += at < 160 ? 1 : 61) {
    b[at] ^= (uint8_t)(1u << (at % 8));
    write_bytes(p, b, size);
    state = NULL;
    ait_status st = cfg.iface->load(&cfg, g, dir, &state);
    flips += st == AIT_E_PARSE && strstr(ait_last_error(), "quant_weights.bin") != NULL;
    if (st != AIT_E_PARSE) fprintf(stderr, "flip at %zu: status %d\n", at, st);
    if (state) cfg.iface->destroy(state);
    b[at] ^= (uint8_t)(1u << (at % 8));
  }
  int n_flips = 0;
  for (size_t at = 0; at < size; at += at < 160 ? 1 : 61)
    n_flips++;
  CHECK(flips == n_flips);
  int n_cuts = 0;
  for (size_t len = 0; g && b && len < size; len += len < 100 ? 7 : 397, n_cuts++) {
    write_bytes(p, b, len);
    state = NULL;
    ait_status st = cfg.iface->load(&cfg, g, dir, &state);
    cuts += st == AIT_E_PARSE && strstr(ait_last_error(), "quant_weights.bin") != NULL;
    if (st != AIT_E_PARSE) fprintf(stderr, "cut to %zu: status %d\n", len, st);
    if (state) cfg.iface->destroy(state);
  }
  CHECK(cuts == n_cuts);
  /* another owner's file of the same format in its place */
  if (g && b && size > 32) {
    memcpy(b + 16, "xnnpack\0", 8);
    write_bytes(p, b, size);
    state = NULL;
    CHECK_ERR(cfg.iface->load(&cfg, g, dir, &state), AIT_E_PARSE, "quant_weights.bin");
    if (state) cfg.iface->destroy(state);
  }
  free(data);
  ait_graph_free(g);
  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CHECK(system(cmd) == 0);
}

/* ---- the fuzzers' seeds and minimized crashers --------------------------- */

/* Every file of tests/fuzz/seeds/{model,tensor} (crashers the fuzzers found
 * are kept there) loads or fails with a status; a model that loads is run
 * on eager when its inputs are small and fully declared. */
static void test_fuzz_seeds(const char *model_arg) {
  char root[1024];
  snprintf(root, sizeof root, "%s", model_arg);
  for (int up = 0; up < 3; up++) { /* .../models/bert_tiny/model.onnx -> ... */
    char *slash = strrchr(root, '/');
    if (!slash) return;
    *slash = '\0';
  }
  static const char *const kinds[] = {"model", "tensor"};
  int files = 0;
  for (int k = 0; k < 2; k++) {
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/tests/fuzz/seeds/%s", root, kinds[k]);
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    if (!d) continue;
    for (struct dirent *e; (e = readdir(d));) {
      if (e->d_name[0] == '.') continue;
      char path[1400];
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      files++;
      if (k == 1) {
        ait_tensor *t = NULL;
        if (ait_tensor_file_read(path, &t, NULL) == AIT_OK) ait_tensor_free(t);
        continue;
      }
      ait_model *m = NULL;
      if (ait_model_load(path, &m) != AIT_OK) continue;
      ait_session *s = NULL;
      if (ait_session_create(m, "eager", &s) == AIT_OK) {
        size_t n = ait_model_num_inputs(m);
        ait_tensor_view in[8];
        static float zeros[4096];
        bool ok = n <= 8;
        for (size_t i = 0; ok && i < n; i++) {
          ait_tensor_info info;
          ok = ait_model_input(m, i, &info) == AIT_OK && info.rank >= 0;
          int64_t numel = 1;
          in[i] = (ait_tensor_view){.dtype = info.dtype, .rank = info.rank, .data = zeros};
          for (int r = 0; ok && r < info.rank; r++) {
            in[i].dims[r] = info.dims[r] < 0 ? 1 : info.dims[r];
            numel *= in[i].dims[r];
            ok = numel * 8 <= (int64_t)sizeof zeros;
          }
        }
        if (ok) (void)ait_session_run(s, in, n);
        ait_session_free(s);
      }
      ait_model_free(m);
    }
    closedir(d);
  }
  CHECK(files >= 10);
}

/* Sequence and optional value files (SequenceProto / OptionalProto): a
 * written sequence reads back, an empty optional is kind none, and bad
 * files (too deep, a sequence of sequences, garbage) are refused by name. */
static void test_value_files(void) {
  char path[] = "/tmp/ait_untrusted_value_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  if (fd < 0) return;
  close(fd);
  int64_t d2[1] = {2}, d3[2] = {1, 3};
  ait_tensor *seq = ait_sequence_new(AIT_INT4), *a = ait_tensor_new(AIT_INT4, 1, d2);
  ait_tensor *b = ait_tensor_new(AIT_INT4, 2, d3), *r = NULL;
  ((int8_t *)a->data)[0] = -8, ((int8_t *)a->data)[1] = 7, ((int8_t *)b->data)[2] = -1;
  CHECK(ait_sequence_push(seq, a) == AIT_OK && ait_sequence_push(seq, b) == AIT_OK);
  CHECK_ERR(ait_value_file_write(path, seq, AIT_VT_SEQUENCE, "s"), AIT_OK, NULL);
  CHECK_ERR(ait_value_file_read(path, AIT_VT_SEQUENCE, AIT_INT4, &r), AIT_OK, NULL);
  CHECK(r && r->kind == AIT_KIND_SEQUENCE && r->n_items == 2 && r->items[1]->rank == 2 &&
        ((int8_t *)r->items[0]->data)[0] == -8 && ((int8_t *)r->items[1]->data)[2] == -1);
  ait_tensor_free(r);
  r = NULL;
  CHECK_ERR(ait_value_file_write(path, seq, AIT_VT_OPTIONAL, "o"), AIT_OK, NULL);
  CHECK_ERR(ait_value_file_read(path, AIT_VT_OPTIONAL, AIT_UNDEFINED, &r), AIT_OK, NULL);
  CHECK(r && r->kind == AIT_KIND_SEQUENCE && r->n_items == 2);
  ait_tensor_free(r);
  r = NULL;
  ait_tensor *none = ait_none_new();
  CHECK_ERR(ait_value_file_write(path, none, AIT_VT_OPTIONAL, "o"), AIT_OK, NULL);
  CHECK_ERR(ait_value_file_read(path, AIT_VT_OPTIONAL, AIT_FLOAT32, &r), AIT_OK, NULL);
  CHECK(r && r->kind == AIT_KIND_NONE);
  ait_tensor_free(r);
  r = NULL;
  CHECK_ERR(ait_value_file_write(path, none, AIT_VT_SEQUENCE, "s"), AIT_E_INVALID_ARG, "sequence");
  /* a sequence of sequences, 200 deep: refused before unpacking */
  pb deep = {0};
  for (int i = 0; i < 200; i++) {
    pb outer = {0};
    pb_int(&outer, 2, 3); /* elem_type = SEQUENCE */
    pb_msg(&outer, 5, &deep);
    deep = outer;
  }
  write_bytes(path, deep.p, deep.n);
  free(deep.p);
  CHECK_ERR(ait_value_file_read(path, AIT_VT_SEQUENCE, AIT_FLOAT32, &r), AIT_E_INVALID_MODEL,
            "nest more than");
  pb two = {0}, inner = {0};
  pb_int(&inner, 2, 1);
  pb_int(&two, 2, 3);
  pb_msg(&two, 5, &inner);
  write_bytes(path, two.p, two.n);
  free(two.p);
  CHECK_ERR(ait_value_file_read(path, AIT_VT_SEQUENCE, AIT_FLOAT32, &r), AIT_E_UNSUPPORTED,
            "a sequence of sequence");
  write_bytes(path, "\xff\xff\xff", 3);
  CHECK_ERR(ait_value_file_read(path, AIT_VT_OPTIONAL, AIT_FLOAT32, &r), AIT_E_PARSE,
            "OptionalProto");
  CHECK(r == NULL);
  unlink(path);
  ait_tensor_free(seq);
  ait_tensor_free(none);
}

int main(int argc, char **argv) {
  /* test_info_chain.sh's model: test_untrusted --write-chain PATH N */
  if (argc == 4 && !strcmp(argv[1], "--write-chain")) {
    pb mp = relu_chain(atoi(argv[3]));
    write_bytes(argv[2], mp.p, mp.n);
    free(mp.p);
    return check_result("test_untrusted --write-chain");
  }
  if (argc > 1) test_fuzz_seeds(argv[1]);
  test_value_files();
  test_missing_required_input();
  test_deep_nesting();
  test_files();
  test_messages();
  test_long_chain();
  test_fold_cap();
  test_limits();
  test_limits_tuned_folder();
  test_fifo_tuned_files();
  test_quant_weights_damaged();
  return check_result("test_untrusted");
}
