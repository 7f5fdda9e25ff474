/* native's data-movement kernels (native_gather.c) against the reference:
 * Gather on every axis with negative, repeated and scalar indices (int64
 * and int32, float and int64 data), Slice with negative starts, clamped
 * ends, steps of either sign and axes in any order, Transpose on random
 * permutations of ranks 1 to 6 with axes of size 1 among them (Swin's
 * window partitions, attention's head moves), Pad with a constant (zero
 * or given) on every axis, each at every ISA level and
 * on one thread, bit for bit; the kernels decline nothing valid, and an
 * index out of range still fails with the reference's message. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/native/native.h"
#include "check.h"
#include "model_builder.h"
#include "runtime/eager.h"

#define IN(...) ((const char *const[]){__VA_ARGS__, NULL})

static uint32_t rng = 1717;
static uint32_t next(void) {
  rng = rng * 1664525u + 1013904223u;
  return rng >> 8;
}
static int64_t irand(int64_t lo, int64_t hi) { /* [lo, hi] */
  return lo + (int64_t)(next() % (uint32_t)(hi - lo + 1));
}

static ait_tensor *rand_of(ait_dtype dt, int rank, const int64_t *dims) {
  ait_tensor *t = ait_tensor_new(dt, rank, dims);
  int64_t n = ait_tensor_numel(t);
  for (int64_t i = 0; i < n; i++) {
    if (dt == AIT_FLOAT32)
      ((float *)t->data)[i] = (float)(next() & 0xffff) / 256.0f - 128.0f;
    else if (dt == AIT_INT64)
      ((int64_t *)t->data)[i] = (int64_t)next() - (1 << 23);
    else if (dt == AIT_UINT8)
      ((uint8_t *)t->data)[i] = (uint8_t)next();
  }
  return t;
}

static bool same(const ait_tensor *a, const ait_tensor *b) {
  return a && b && a->dtype == b->dtype && a->rank == b->rank &&
         !memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->rank) &&
         !memcmp(a->data, b->data, ait_tensor_nbytes(a));
}

static ait_status run_on(const char *spec, const ait_graph *g, const ait_tensor *const *in,
                         int n_in, ait_tensor **out) {
  ait_backend_config cfg;
  AIT_TRY(ait_backend_config_parse(spec, &cfg));
  void *state = NULL;
  AIT_TRY(cfg.iface->build(&cfg, g, NULL, &state));
  ait_tensor *outs[4] = {0};
  ait_status st = cfg.iface->infer(state, in, n_in, outs);
  cfg.iface->destroy(state);
  *out = outs[0];
  return st;
}

static const char *const specs[] = {"native:isa=avx512", "native:isa=avx2", "native:isa=portable",
                                    "native:threads=1,isa=avx2", "native:threads=1"};

/* Every spec equals eager on g, and no node went back to the reference. */
static void check_specs(const ait_graph *g, const ait_tensor *const *in, int n_in,
                        const char *what) {
  CHECK(g->n_nodes == 1 && nat_dispatch(g, &g->nodes[0]).kind == NAT_FAST);
  ait_tensor *ref = NULL;
  CHECK(ait_eager_run(g, in, n_in, &ref) == AIT_OK);
  for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++) {
    long long before = nat_move_declined();
    ait_tensor *got = NULL;
    ait_status st = run_on(specs[s], g, in, n_in, &got);
    bool ok = st == AIT_OK && same(got, ref) && nat_move_declined() == before;
    if (!ok)
      fprintf(stderr, "%s on %s: differs from eager or declined (%s)\n", what, specs[s],
              ait_last_error());
    CHECK(ok);
    ait_tensor_free(got);
  }
  ait_tensor_free(ref);
}

static void rand_dims(int rank, int64_t *d, int64_t max) {
  for (int i = 0; i < rank; i++)
    d[i] = next() % 5 == 0 ? 1 : irand(1, max);
}

/* ---- Gather ---------------------------------------------------------------- */

static void test_gather(void) {
  static const ait_dtype dts[] = {AIT_FLOAT32, AIT_INT64, AIT_UINT8};
  for (int c = 0; c < 60; c++) {
    int rank = (int)irand(1, 4), ir = (int)irand(0, 2);
    int64_t d[4], idims[2];
    rand_dims(rank, d, 9);
    if (c % 10 == 0) d[0] = 1000; /* an embedding table: rows of the last axes */
    int axis = (int)irand(0, rank - 1);
    if (c % 10 == 0) axis = 0;
    rand_dims(ir, idims, 5);
    if (c % 20 == 0) { /* an embedding lookup of 300 ids: rows of 256 over the pool */
      rank = 2, d[1] = 256, ir = 1, idims[0] = 300;
    }
    ait_dtype dt = dts[c % 3], it = c % 4 == 3 ? AIT_INT32 : AIT_INT64;
    tb_model *m = tb_new(13);
    tb_input(m, "x", (int)dt, rank, d);
    tb_input(m, "i", (int)it, ir, idims);
    int nd = tb_node(m, "Gather", "g", IN("x", "i"), IN("y"));
    tb_attr_int(m, nd, "axis", c % 2 ? axis - rank : axis); /* negative axes too */
    int64_t od[AIT_MAX_RANK];
    int ro = 0;
    for (int k = 0; k < axis; k++)
      od[ro++] = d[k];
    for (int k = 0; k < ir; k++)
      od[ro++] = idims[k];
    for (int k = axis + 1; k < rank; k++)
      od[ro++] = d[k];
    tb_output(m, "y", (int)dt, ro, od);
    ait_graph *g = tb_parse_graph(m);
    CHECK(g != NULL);
    if (!g) continue;
    ait_tensor *x = rand_of(dt, rank, d), *ind = ait_tensor_new(it, ir, idims);
    for (int64_t k = 0; k < ait_tensor_numel(ind); k++) {
      int64_t v = irand(-d[axis], d[axis] - 1); /* negative ones count from the end */
      if (it == AIT_INT64)
        ((int64_t *)ind->data)[k] = v;
      else
        ((int32_t *)ind->data)[k] = (int32_t)v;
    }
    char what[96];
    snprintf(what, sizeof what, "Gather case %d (rank %d, axis %d, indices rank %d)", c, rank, axis,
             ir);
    const ait_tensor *in[2] = {x, ind};
    check_specs(g, in, 2, what);
    if (c == 7 && ait_tensor_numel(ind) > 0) { /* out of range: the reference's error */
      if (it == AIT_INT64)
        ((int64_t *)ind->data)[0] = d[axis];
      else
        ((int32_t *)ind->data)[0] = (int32_t)d[axis];
      ait_tensor *got = NULL;
      CHECK(run_on("native", g, in, 2, &got) != AIT_OK);
      CHECK(strstr(ait_last_error(), "Gather") != NULL);
      ait_tensor_free(got);
    }
    ait_tensor_free(x);
    ait_tensor_free(ind);
    ait_graph_free(g);
  }
}

/* ---- Slice ------------------------------------------------------------------- */

static void test_slice(void) {
  static const ait_dtype dts[] = {AIT_FLOAT32, AIT_INT64, AIT_UINT8};
  for (int c = 0; c < 80; c++) {
    int rank = (int)irand(1, 5);
    int64_t d[5];
    rand_dims(rank, d, 11);
    if (c % 8 == 0) d[rank - 1] = 300; /* long rows: the pool and the run copies */
    int na = (int)irand(1, rank);
    int64_t st[5], en[5], ax[5], sp[5];
    bool used[5] = {false};
    for (int k = 0; k < na; k++) {
      int a;
      do
        a = (int)irand(0, rank - 1);
      while (used[a]);
      used[a] = true;
      ax[k] = c % 3 == 0 ? a - rank : a; /* negative axes, any order */
      int64_t n = d[a];
      st[k] = irand(-n - 2, n + 2);
      en[k] = next() % 6 == 0 ? (next() % 2 ? INT64_MAX : INT64_MIN) : irand(-n - 2, n + 2);
      sp[k] = next() % 3 == 0 ? 1 : irand(-3, 3);
      if (sp[k] == 0) sp[k] = 2;
      if (c % 5 == 1) sp[k] = 1, st[k] = 0, en[k] = INT64_MAX; /* whole axes */
    }
    if (c % 5 == 1) { /* every axis named, the others whole, the last one cut */
      na = rank;
      for (int k = 0; k < rank; k++)
        ax[k] = k, st[k] = 0, en[k] = INT64_MAX, sp[k] = 1;
      st[rank - 1] = 1, en[rank - 1] = d[rank - 1] - 1, sp[rank - 1] = c % 2 ? 1 : 2;
    }
    ait_dtype dt = dts[c % 3];
    tb_model *m = tb_new(13);
    tb_input(m, "x", (int)dt, rank, d);
    int64_t len = na;
    tb_init_i64(m, "s", 1, &len, st);
    tb_init_i64(m, "e", 1, &len, en);
    tb_init_i64(m, "a", 1, &len, ax);
    tb_init_i64(m, "p", 1, &len, sp);
    tb_node(m, "Slice", "sl", c % 7 == 0 ? IN("x", "s", "e", "a") : IN("x", "s", "e", "a", "p"),
            IN("y"));
    if (c % 7 == 0)
      for (int k = 0; k < na; k++)
        sp[k] = 1;
    int64_t od[5];
    memcpy(od, d, sizeof od);
    for (int k = 0; k < na; k++)
      od[ax[k] < 0 ? ax[k] + rank : ax[k]] = -1; /* symbolic: the reference says */
    tb_output(m, "y", (int)dt, rank, od);
    ait_graph *g = tb_parse_graph(m);
    CHECK(g != NULL);
    if (!g) continue;
    ait_tensor *x = rand_of(dt, rank, d);
    char what[64];
    snprintf(what, sizeof what, "Slice case %d (rank %d, %d axes)", c, rank, na);
    const ait_tensor *in[1] = {x};
    check_specs(g, in, 1, what);
    ait_tensor_free(x);
    ait_graph_free(g);
  }
}

/* ---- Transpose --------------------------------------------------------------- */

typedef struct perm_case {
  int rank;
  int64_t d[6], p[6];
} perm_case;

/* The models' own: Swin's window partition and its reverse, attention's
 * head split and Kᵀ, NCHW <-> NHWC. */
static const perm_case fixed[] = {
    {6, {1, 8, 7, 8, 7, 96}, {0, 1, 3, 2, 4, 5}},
    {6, {1, 8, 8, 7, 7, 96}, {0, 1, 3, 2, 4, 5}},
    {5, {64, 49, 3, 3, 32}, {2, 0, 3, 1, 4}},
    {4, {1, 128, 12, 64}, {0, 2, 1, 3}},
    {4, {1, 128, 12, 64}, {0, 2, 3, 1}},
    {4, {3, 49, 33, 20}, {0, 2, 3, 1}},
    {4, {2, 37, 5, 19}, {0, 3, 1, 2}},
    {2, {129, 77}, {1, 0}},
    {3, {1, 1, 1}, {2, 0, 1}},
};

static void run_perm(const perm_case *pc, ait_dtype dt, const char *what) {
  tb_model *m = tb_new(13);
  tb_input(m, "x", (int)dt, pc->rank, pc->d);
  int nd = tb_node(m, "Transpose", "t", IN("x"), IN("y"));
  tb_attr_ints(m, nd, "perm", pc->rank, pc->p);
  int64_t od[6];
  for (int i = 0; i < pc->rank; i++)
    od[i] = pc->d[pc->p[i]];
  tb_output(m, "y", (int)dt, pc->rank, od);
  ait_graph *g = tb_parse_graph(m);
  CHECK(g != NULL);
  if (!g) return;
  ait_tensor *x = rand_of(dt, pc->rank, pc->d);
  const ait_tensor *in[1] = {x};
  check_specs(g, in, 1, what);
  ait_tensor_free(x);
  ait_graph_free(g);
}

static void test_transpose(void) {
  char what[64];
  for (size_t f = 0; f < sizeof fixed / sizeof fixed[0]; f++) {
    snprintf(what, sizeof what, "Transpose fixed case %zu", f);
    run_perm(&fixed[f], AIT_FLOAT32, what);
  }
  static const ait_dtype dts[] = {AIT_FLOAT32, AIT_FLOAT32, AIT_INT64, AIT_UINT8};
  for (int c = 0; c < 120; c++) {
    perm_case pc;
    pc.rank = (int)irand(1, 6);
    rand_dims(pc.rank, pc.d, pc.rank > 4 ? 7 : 23);
    for (int i = 0; i < pc.rank; i++)
      pc.p[i] = i;
    for (int i = pc.rank - 1; i > 0; i--) { /* Fisher-Yates */
      int k = (int)irand(0, i);
      int64_t t = pc.p[i];
      pc.p[i] = pc.p[k], pc.p[k] = t;
    }
    snprintf(what, sizeof what, "Transpose case %d (rank %d)", c, pc.rank);
    run_perm(&pc, dts[c % 4], what);
  }
}

/* ---- Pad ----------------------------------------------------------------------- */

static void test_pad(void) {
  static const ait_dtype dts[] = {AIT_FLOAT32, AIT_INT64, AIT_UINT8};
  for (int c = 0; c < 40; c++) {
    int rank = (int)irand(1, 5);
    int64_t d[5], pads[10], od[5];
    rand_dims(rank, d, 9);
    if (c % 6 == 0) { /* Swin's: [1, 56, 56, 96] with pads of 0; the pool's share */
      rank = 4;
      d[0] = 1, d[1] = irand(20, 60), d[2] = irand(20, 60), d[3] = 96;
    }
    bool zero = c % 4 == 0;
    for (int k = 0; k < 2 * rank; k++)
      pads[k] = zero ? 0 : irand(0, 3);
    for (int k = 0; k < rank; k++)
      od[k] = d[k] + pads[k] + pads[rank + k];
    ait_dtype dt = dts[c % 3];
    tb_model *m = tb_new(13);
    tb_input(m, "x", (int)dt, rank, d);
    int64_t np = 2 * rank;
    tb_init_i64(m, "p", 1, &np, pads);
    bool value = c % 2 == 1;
    if (value) tb_input(m, "v", (int)dt, 0, NULL); /* the constant as an input */
    tb_node(m, "Pad", "pd", value ? IN("x", "p", "v") : IN("x", "p"), IN("y"));
    tb_output(m, "y", (int)dt, rank, od);
    ait_graph *g = tb_parse_graph(m);
    CHECK(g != NULL);
    if (!g) continue;
    ait_tensor *x = rand_of(dt, rank, d), *v = rand_of(dt, 0, NULL);
    char what[64];
    snprintf(what, sizeof what, "Pad case %d (rank %d)", c, rank);
    const ait_tensor *in[2] = {x, v};
    check_specs(g, in, value ? 2 : 1, what);
    ait_tensor_free(x);
    ait_tensor_free(v);
    ait_graph_free(g);
  }
}

int main(int argc, char **argv) {
  (void)argc, (void)argv;
  test_gather();
  test_slice();
  test_transpose();
  test_pad();
  return check_result("test_native_gather");
}
