/* Backend `openvino`: Intel's CPU engine as a tuner candidate, through its C
 * API (ov_lib.h, loaded at run time).
 *
 * build() writes aitune's IR back to ONNX bytes in memory (the ONNX writer:
 * the tuner hands over the graph, never the user's file) and reads them with
 * ov_core_read_model_from_memory_buffer. Each input signature gets its own
 * compiled model: the model reshaped to those static shapes (OpenVINO's CPU
 * plugin is fastest on static shapes; dynamic=on: one compiled model for
 * all), compiled for "CPU" with the options' hint, streams, threads,
 * inference precision and pinning (ov_options.h; what is not set OpenVINO
 * chooses as it does alone), up to MAX_PLANS signatures, the oldest dropped
 * beyond. What OpenVINO computes wrong is refused by supports()
 * (ov_refuse.c). A model OpenVINO cannot read or
 * compile fails the build with OpenVINO's message: never a silent fallback.
 *
 * Inputs are handed to OpenVINO in place (host-pointer tensors). Outputs are
 * OpenVINO's own buffers, borrowed until the next infer, deactivate or
 * destroy (backend.h's contract). save() exports the compiled model of the
 * last signature run (ov_compiled_model_export_model) beside an index,
 * openvino.txt, with OpenVINO's build and the signature; load() imports it
 * (no compile) when the build matches, and reads the graph into a model
 * only when a signature without a compiled model arrives. */
#ifdef AIT_HAVE_OPENVINO

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/openvino/ov_info.h"
#include "backends/openvino/ov_lib.h"
#include "backends/openvino/ov_options.h"
#include "backends/openvino/ov_refuse.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/fileio.h"
#include "hw/hw_impl.h"
#include "onnx/onnx_io.h"

#define MAX_PLANS 4
#define MAX_IO 256

/* aitune dtype <-> OpenVINO element type */
static const struct {
  ait_dtype dt;
  ov_element_type_e ov;
} dtypes[] = {
    {AIT_FLOAT32, F32},
    {AIT_FLOAT16, F16},
    {AIT_BFLOAT16, BF16},
    {AIT_FLOAT64, F64},
    {AIT_INT8, I8},
    {AIT_INT16, I16},
    {AIT_INT32, I32},
    {AIT_INT64, I64},
    {AIT_UINT8, U8},
    {AIT_UINT16, U16},
    {AIT_UINT32, U32},
    {AIT_UINT64, U64},
    {AIT_BOOL, BOOLEAN},
    {AIT_FLOAT8E4M3FN, F8E4M3},
    {AIT_FLOAT8E5M2, F8E5M3}, /* sic: e5m2 */
    {AIT_FLOAT8E8M0, F8E8M0},
    /* the 4-bit types: OpenVINO packs two to a byte, first element in the
     * low bits as ONNX files do; aitune keeps one per byte, so they are
     * packed on the way in and unpacked on the way out (packed()) */
    {AIT_UINT4, U4},
    {AIT_INT4, I4},
    {AIT_FLOAT4E2M1, F4E2M1},
};

/* The dtypes OpenVINO's ONNX frontend has no element type for: a node
 * touching one is refused by name (its message otherwise comes from reading
 * the whole model, and fails the build instead of narrowing the segment). */
static const ait_dtype missing_dtypes[] = {AIT_FLOAT8E4M3FNUZ, AIT_FLOAT8E5M2FNUZ, AIT_UINT2,
                                           AIT_INT2,           AIT_COMPLEX64,      AIT_COMPLEX128};

static bool packed(ait_dtype dt) { return ait_dtype_file_bits(dt) < 8; }

static bool to_ov(ait_dtype dt, ov_element_type_e *out) {
  for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
    if (dtypes[i].dt == dt) return *out = dtypes[i].ov, true;
  return false;
}

static bool from_ov(ov_element_type_e t, ait_dtype *out) {
  for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
    if (dtypes[i].ov == t) return *out = dtypes[i].dt, true;
  return false;
}

typedef struct ov_plan {
  int n_sig;
  int64_t sig[MAX_IO * (AIT_MAX_RANK + 1)]; /* rank, dims... of every input */
  ov_compiled_model_t *compiled;
  ov_infer_request_t *req;
  unsigned last_use;
  /* an imported plan's blob: OpenVINO's CPU plugin keeps pointing into the
   * bytes it was imported from (its weights are not copied), so they live
   * as long as the compiled model. Freeing them after the import was the
   * SIGSEGV of session 11 (a use after free once the allocator returned
   * the pages: always for ResNet-50's 102 MB blob) */
  void *blob;
} ov_plan;

typedef struct ov_state {
  const ov_lib *L;
  const ait_graph *g; /* borrowed (backend.h): read into `model` when a plan needs compiling */
  ov_core_t *core;
  ov_model_t *model; /* NULL until a plan is compiled (a load that imports never reads it) */
  uint8_t *onnx;     /* the bytes the model was read from (kept while it lives) */
  int n_in, n_out;
  /* port[i]: the OpenVINO model input that aitune's input i feeds, -1 when
   * OpenVINO's frontend dropped it (an input read only for its type, as
   * CastLike's `target_type`, or an empty `axes`) */
  int port[MAX_IO];
  char threads[16];
  char precision[8];
  char hint[16];    /* LATENCY, THROUGHPUT */
  char streams[16]; /* "" for the hint's choice */
  char pinning[4];  /* ENABLE_CPU_PINNING: YES, NO, "" for OpenVINO's choice */
  bool dynamic;     /* one compiled model with the model's own (symbolic) shapes */
  ov_plan *plans[MAX_PLANS];
  unsigned uses;
  /* the last run's signature, kept across deactivate: save() exports it */
  int n_last;
  int64_t last[MAX_IO * (AIT_MAX_RANK + 1)];
  ov_tensor_t *outs[MAX_IO]; /* the last run's outputs, lent to the caller */
  /* a 4-bit input packed for OpenVINO (two to a byte); grown, kept */
  uint8_t *pack[MAX_IO];
  size_t pack_cap[MAX_IO];
} ov_state;

static bool ov_available(char *why, size_t n) {
  const ov_lib *L = ov_lib_get(why, n);
  if (!L) return false;
  ov_core_t *core = NULL;
  ov_status_e st = L->core_create(&core);
  if (st != OK) {
    snprintf(why, n, "OpenVINO: ov_core_create failed: %s", ov_lib_error(L, st));
    return false;
  }
  L->core_free(core);
  return true;
}

/* A reduced precision this CPU lacks: OpenVINO would quietly compute in f32
 * (or emulate), so the candidate would not be what it says. NULL when fine. */
static const char *precision_missing(const ait_backend_config *cfg) {
  const char *p = ait_backend_config_get(cfg, "precision");
  if (!p || !strcmp(p, "f32")) return NULL;
  char flags[8192];
  ait_hw_cpuinfo_field("flags", flags, sizeof flags);
  uint32_t f = ait_hw_cpu_features_from_flags(flags);
  if (!strcmp(p, "bf16") && !(f & (AIT_CPU_AVX512_BF16 | AIT_CPU_AMX_BF16)))
    return "precision=bf16 needs AVX512-BF16 or AMX-BF16, which this CPU lacks";
  if (!strcmp(p, "f16") && !(f & AIT_CPU_AVX512_FP16))
    return "precision=f16 needs AVX512-FP16, which this CPU lacks";
  return NULL;
}

/* A graph input or output: what ov_infer hands over or reads back, which
 * must be a tensor (a sequence or optional inside a segment is OpenVINO's). */
static bool crosses_boundary(const ait_graph *g, int v) {
  for (int i = 0; i < g->n_inputs; i++)
    if (g->inputs[i] == v) return true;
  for (int i = 0; i < g->n_outputs; i++)
    if (g->outputs[i] == v) return true;
  return false;
}

static bool ov_supports(const ait_backend_config *cfg, const ait_graph *g, const ait_node *node,
                        char *why, size_t n) {
  const char *missing = precision_missing(cfg);
  if (missing) {
    snprintf(why, n, "openvino: %s", missing);
    return false;
  }
  /* OpenVINO's ONNX frontend reads the standard domains; an op it lacks
   * fails the build with its message, naming the node */
  if (!node->domain[0] || !strcmp(node->domain, "ai.onnx") || !strcmp(node->domain, "ai.onnx.ml")) {
    for (int k = 0; g && k < node->n_in + node->n_out; k++) {
      int v = k < node->n_in ? node->in[k] : node->out[k - node->n_in];
      if (v >= 0 && g->values[v].type != AIT_VT_TENSOR && crosses_boundary(g, v)) {
        snprintf(why, n,
                 "openvino: the wrapper exchanges tensors only, and %s's value '%s' is a %s",
                 ait_node_desc(node), g->values[v].name ? g->values[v].name : "?",
                 g->values[v].type == AIT_VT_SEQUENCE ? "sequence" : "optional");
        return false;
      }
      for (size_t i = 0; v >= 0 && i < sizeof missing_dtypes / sizeof missing_dtypes[0]; i++)
        if (g->values[v].dtype == missing_dtypes[i]) {
          snprintf(why, n, "OpenVINO has no %s element type (%s)",
                   ait_dtype_name(missing_dtypes[i]), ait_node_desc(node));
          return false;
        }
    }
    return !ov_refuses(g, node, why, n); /* what it reads but computes wrong */
  }
  snprintf(why, n, "OpenVINO's ONNX frontend reads the standard domains, not %s (%s)", node->domain,
           ait_node_desc(node));
  return false;
}

static void drop_outputs(ov_state *s) {
  for (int k = 0; k < s->n_out; k++)
    if (s->outs[k]) s->L->tensor_free(s->outs[k]), s->outs[k] = NULL;
}

static void plan_free(const ov_lib *L, ov_plan *p) {
  if (!p) return;
  if (p->req) L->infer_request_free(p->req);
  if (p->compiled) L->compiled_model_free(p->compiled);
  free(p->blob); /* after the compiled model that points into it */
  free(p);
}

static void release_plans(ov_state *s) {
  drop_outputs(s);
  for (int i = 0; i < MAX_PLANS; i++)
    plan_free(s->L, s->plans[i]), s->plans[i] = NULL;
}

static void ov_destroy(void *state) {
  ov_state *s = state;
  if (!s) return;
  release_plans(s);
  for (int i = 0; i < MAX_IO; i++)
    free(s->pack[i]);
  if (s->model) s->L->model_free(s->model);
  if (s->core) s->L->core_free(s->core);
  free(s->onnx);
  free(s);
}

static ait_status ov_fail(const ov_lib *L, ov_status_e st, const char *what) {
  return ait_err(AIT_E_RUNTIME, "OpenVINO: %s: %s", what, ov_lib_error(L, st));
}

/* s->port from the inputs of OpenVINO's model (or of an imported compiled
 * model: the same order): its frontend drops inputs that only lend their
 * type or are empty, and then the others are found by name. */
static ait_status map_inputs(ov_state *s, const ov_compiled_model_t *compiled) {
  const ov_lib *L = s->L;
  const ait_graph *g = s->g;
  size_t n = 0;
  ov_status_e st =
      compiled ? L->compiled_model_inputs_size(compiled, &n) : L->model_inputs_size(s->model, &n);
  if (st != OK) return ov_fail(L, st, "counting the model's inputs");
  /* all there: in order (names can mislead: a Parameter that is also the
   * output of an Identity or Dropout answers with the output's name) */
  for (int i = 0; i < s->n_in; i++)
    s->port[i] = n == (size_t)s->n_in ? i : -1;
  for (size_t k = 0; n != (size_t)s->n_in && k < n; k++) {
    ov_output_const_port_t *port = NULL;
    char *name = NULL;
    st = compiled ? L->compiled_model_input_by_index(compiled, k, &port)
                  : L->model_const_input_by_index(s->model, k, &port);
    if (st == OK) st = L->port_get_any_name(port, &name);
    int found = -1;
    for (int i = 0; st == OK && i < s->n_in && found < 0; i++)
      if (!strcmp(g->values[g->inputs[i]].name, name)) found = i;
    /* dropped inputs and a pass-through: the Parameter of graph input x
     * answers with the name of y = Identity(x) or Dropout(x, ...) */
    for (int j = 0; st == OK && found < 0 && j < g->n_nodes; j++) {
      const ait_node *nd = &g->nodes[j];
      if ((strcmp(nd->op_type, "Identity") && strcmp(nd->op_type, "Dropout")) || nd->n_in < 1 ||
          nd->n_out < 1 || nd->out[0] < 0 || nd->in[0] < 0 || !g->values[nd->out[0]].name ||
          strcmp(g->values[nd->out[0]].name, name))
        continue;
      for (int i = 0; i < s->n_in && found < 0; i++)
        if (g->inputs[i] == nd->in[0]) found = i;
    }
    if (name) L->free_str(name);
    if (port) L->output_const_port_free(port);
    if (st != OK) return ov_fail(L, st, "reading the model's input names");
    if (found < 0)
      return ait_err(AIT_E_RUNTIME,
                     "openvino: OpenVINO's model has an input %zu that aitune's graph lacks", k);
    s->port[found] = (int)k;
  }
  return AIT_OK;
}

/* The graph as an OpenVINO model, once per state. */
static ait_status ensure_model(ov_state *s) {
  if (s->model) return AIT_OK;
  const ov_lib *L = s->L;
  size_t len = 0;
  free(s->onnx);
  s->onnx = NULL;
  AIT_TRY(ait_onnx_write_model_buffer(s->g, &s->onnx, &len));
  ov_status_e os =
      L->read_model_from_memory_buffer(s->core, (const char *)s->onnx, len, NULL, &s->model);
  if (os != OK) return ov_fail(L, os, "reading the model (its ONNX frontend)");
  return map_inputs(s, NULL);
}

/* The CPU plugin's properties, set on this state's own core: compile_plan
 * compiles with them, and an imported model takes them from the core, not
 * from its blob (without this it came back in bf16 on AMX CPUs). */
static ait_status core_properties(ov_state *s) {
  const char *const props[][2] = {{"PERFORMANCE_HINT", s->hint},
                                  {"INFERENCE_NUM_THREADS", s->threads},
                                  {"INFERENCE_PRECISION_HINT", s->precision},
                                  {"ENABLE_CPU_PINNING", s->pinning},
                                  {"NUM_STREAMS", s->streams}};
  ov_status_e os = OK;
  for (size_t i = 0; i < sizeof props / sizeof props[0] && os == OK; i++)
    if (props[i][1][0]) os = s->L->core_set_property(s->core, "CPU", props[i][0], props[i][1]);
  return os == OK ? AIT_OK : ov_fail(s->L, os, "setting the CPU plugin's properties");
}

/* The model reshaped to signature p->sig (rank, dims... of every input),
 * compiled, with its request. */
static ait_status compile_plan(ov_state *s, ov_plan *p) {
  const ov_lib *L = s->L;
  AIT_TRY(ensure_model(s));
  ov_partial_shape_t shapes[MAX_IO];
  size_t ports[MAX_IO];
  int made = 0;
  ov_status_e st = OK;
  /* scalars stay as declared: a rank-0 partial shape does not read back as
   * rank 0 (Range refuses it) */
  for (int i = 0, at = 0; i < s->n_in && at < p->n_sig && st == OK; i++) {
    int rank = (int)p->sig[at];
    const int64_t *d = &p->sig[at + 1];
    at += 1 + rank;
    if (rank == 0 || s->port[i] < 0) continue;
    ports[made] = (size_t)s->port[i];
    /* ov_partial_shape_create_static refuses a zero dimension (an empty
     * tensor); min = max = d says the same and takes 0 */
    ov_dimension_t dims[AIT_MAX_RANK];
    for (int k = 0; k < rank; k++)
      dims[k] = (ov_dimension_t){d[k], d[k]};
    st = L->partial_shape_create(rank, dims, &shapes[made]);
    made += st == OK;
  }
  if (st == OK && made && !s->dynamic)
    st = L->model_reshape_by_port_indexes(s->model, ports, shapes, (size_t)made);
  for (int i = 0; i < made; i++)
    L->partial_shape_free(&shapes[i]);
  if (st != OK) return ov_fail(L, st, "reshaping the model to the input shapes");
  /* the properties on the core (core_properties: NUM_STREAMS and
   * ENABLE_CPU_PINNING only when set, so OpenVINO chooses them as it does
   * alone), then compiled with none of its own */
  AIT_TRY(core_properties(s));
  st = L->compile_model(s->core, s->model, "CPU", 0, &p->compiled);
  ov_info_count_compile();
  if (st != OK) return ov_fail(L, st, "compiling the model for CPU");
  st = L->compiled_model_create_infer_request(p->compiled, &p->req);
  if (st != OK) return ov_fail(L, st, "creating an infer request");
  return AIT_OK;
}

static int signature(const ait_tensor *const *in, int n_in, int64_t *sig) {
  int k = 0;
  for (int i = 0; i < n_in; i++) {
    sig[k++] = in[i]->rank;
    for (int d = 0; d < in[i]->rank; d++)
      sig[k++] = in[i]->dims[d];
  }
  return k;
}

/* p into the least recently used slot. */
static void add_plan(ov_state *s, ov_plan *p) {
  int oldest = 0;
  for (int i = 0; i < MAX_PLANS; i++)
    if (!s->plans[i] || (s->plans[oldest] && s->plans[i]->last_use < s->plans[oldest]->last_use))
      oldest = i;
  drop_outputs(s); /* they may belong to the plan being replaced */
  plan_free(s->L, s->plans[oldest]);
  s->plans[oldest] = p;
  p->last_use = ++s->uses;
}

/* The plan for signature sig (n_sig entries; 0 for a dynamic state, whose
 * one plan answers every signature), compiled when there is none. */
static ait_status plan_for_sig(ov_state *s, const int64_t *sig, int n_sig, ov_plan **out) {
  for (int i = 0; i < MAX_PLANS; i++) {
    ov_plan *p = s->plans[i];
    if (p && p->n_sig == n_sig && !memcmp(p->sig, sig, sizeof(int64_t) * (size_t)n_sig)) {
      p->last_use = ++s->uses;
      *out = p;
      return AIT_OK;
    }
  }
  ov_plan *p = calloc(1, sizeof *p);
  if (!p) return ait_err(AIT_E_NOMEM, "out of memory");
  p->n_sig = n_sig;
  memcpy(p->sig, sig, sizeof(int64_t) * (size_t)n_sig);
  ait_status st = compile_plan(s, p);
  if (st) {
    plan_free(s->L, p);
    return st;
  }
  add_plan(s, p);
  *out = p;
  return AIT_OK;
}

static ait_status plan_for(ov_state *s, const ait_tensor *const *in, ov_plan **out) {
  int64_t sig[MAX_IO * (AIT_MAX_RANK + 1)];
  int n_sig = s->dynamic ? 0 : signature(in, s->n_in, sig);
  AIT_TRY(plan_for_sig(s, sig, n_sig, out));
  s->n_last = n_sig;
  memcpy(s->last, sig, sizeof(int64_t) * (size_t)n_sig);
  return AIT_OK;
}

static ait_status ov_infer(void *state, const ait_tensor *const *in, int n_in, ait_tensor **out) {
  ov_state *s = state;
  const ov_lib *L = s->L;
  for (int k = 0; k < s->n_out; k++)
    out[k] = NULL;
  if (n_in != s->n_in)
    return ait_err(AIT_E_INVALID_ARG, "openvino: the model takes %d inputs, got %d", s->n_in, n_in);
  for (int i = 0; i < n_in; i++)
    if (!in[i] || in[i]->kind != AIT_KIND_TENSOR)
      return ait_err(AIT_E_INVALID_ARG, "openvino: input %d is not a tensor", i);
  drop_outputs(s);
  ov_plan *p = NULL;
  AIT_TRY(plan_for(s, in, &p));
  ov_status_e st = OK;
  for (int i = 0; i < n_in && st == OK; i++) {
    ov_element_type_e et;
    if (s->port[i] < 0) continue; /* OpenVINO's model does not read it */
    if (!to_ov(in[i]->dtype, &et))
      return ait_err(AIT_E_DTYPE, "openvino: input %d has dtype %s, which OpenVINO does not take",
                     i, ait_dtype_name(in[i]->dtype));
    /* a shape over our dims, not ov_shape_create's copy: that refuses rank 0 */
    ov_shape_t shape = {in[i]->rank, (int64_t *)in[i]->dims};
    void *data = in[i]->data;
    if (packed(in[i]->dtype)) {
      int64_t count = ait_tensor_numel(in[i]);
      size_t bytes = ait_dtype_file_bytes(in[i]->dtype, count) + 1; /* never 0 */
      if (bytes > s->pack_cap[i]) {
        uint8_t *b = realloc(s->pack[i], bytes);
        if (!b) return ait_err(AIT_E_NOMEM, "out of memory");
        s->pack[i] = b;
        s->pack_cap[i] = bytes;
      }
      ait_dtype_pack(in[i]->dtype, in[i]->data, count, s->pack[i]);
      data = s->pack[i];
    }
    ov_tensor_t *t = NULL;
    st = L->tensor_create_from_host_ptr(et, shape, data, &t);
    if (st == OK) st = L->set_input_tensor_by_index(p->req, (size_t)s->port[i], t);
    if (t) L->tensor_free(t); /* the request keeps its own reference */
  }
  if (st != OK) return ov_fail(L, st, "setting the inputs");
  if ((st = L->infer(p->req)) != OK) return ov_fail(L, st, "inference");
  ait_status res = AIT_OK;
  for (int k = 0; k < s->n_out && !res; k++) {
    ov_tensor_t *t = NULL;
    ov_shape_t shape = {0, NULL};
    ov_element_type_e et;
    ait_dtype dt;
    void *data = NULL;
    size_t count = 0;
    if ((st = L->get_output_tensor_by_index(p->req, (size_t)k, &t)) == OK &&
        L->tensor_get_shape(t, &shape) != OK) {
      /* ov_tensor_get_shape refuses rank 0: a one-element tensor whose
       * shape cannot be read is a scalar */
      shape = (ov_shape_t){0, NULL};
      if ((st = L->tensor_get_size(t, &count)) == OK && count != 1) st = INVALID_C_PARAM;
    }
    if (st != OK || (st = L->tensor_get_element_type(t, &et)) != OK ||
        (st = L->tensor_data(t, &data)) != OK) {
      res = ov_fail(L, st, "reading the outputs");
    } else if (!from_ov(et, &dt)) {
      res = ait_err(AIT_E_DTYPE, "openvino: output %d has element type %d, unknown to aitune", k,
                    (int)et);
    } else if (shape.rank > AIT_MAX_RANK) {
      res =
          ait_err(AIT_E_UNSUPPORTED, "openvino: output %d has rank %lld", k, (long long)shape.rank);
    } else if (packed(dt)) { /* unpacked into a tensor of our own */
      if (!(out[k] = ait_tensor_new(dt, (int)shape.rank, shape.dims)))
        res = ait_err(AIT_E_NOMEM, "out of memory");
      else
        ait_dtype_unpack(dt, data, ait_tensor_numel(out[k]), out[k]->data);
    } else if (!(out[k] = ait_tensor_wrap(dt, (int)shape.rank, shape.dims, data))) {
      res = ait_err(AIT_E_NOMEM, "out of memory");
    }
    if (shape.dims) L->shape_free(&shape);
    s->outs[k] = t;
  }
  if (res) {
    for (int k = 0; k < s->n_out; k++)
      ait_tensor_free(out[k]), out[k] = NULL;
    drop_outputs(s);
  }
  return res;
}

/* A state without a model or plans: the library, a core, the options. */
static ait_status new_state(const ait_backend_config *cfg, const ait_graph *g, ov_state **out) {
  char why[512] = "";
  const ov_lib *L = ov_lib_get(why, sizeof why);
  if (!L) return ait_err(AIT_E_UNSUPPORTED, "openvino: %s", why);
  if (g->n_inputs > MAX_IO || g->n_outputs > MAX_IO)
    return ait_err(AIT_E_UNSUPPORTED, "openvino: more than %d inputs or outputs", MAX_IO);
  const char *missing = precision_missing(cfg);
  if (missing) return ait_err(AIT_E_UNSUPPORTED, "openvino: %s", missing);
  ov_state *s = calloc(1, sizeof *s);
  if (!s) return ait_err(AIT_E_NOMEM, "out of memory");
  s->L = L;
  s->g = g;
  s->n_in = g->n_inputs;
  s->n_out = g->n_outputs;
  snprintf(s->threads, sizeof s->threads, "%lld",
           (long long)ait_backend_config_int(cfg, "threads", ait_hw_usable_cores()));
  const char *prec = ait_backend_config_get(cfg, "precision");
  snprintf(s->precision, sizeof s->precision, "%s", prec ? prec : "f32");
  const char *hint = ait_backend_config_get(cfg, "hint");
  snprintf(s->hint, sizeof s->hint, "%s",
           hint && !strcmp(hint, "throughput") ? "THROUGHPUT" : "LATENCY");
  const char *streams = ait_backend_config_get(cfg, "streams");
  snprintf(s->streams, sizeof s->streams, "%s", streams && strcmp(streams, "auto") ? streams : "");
  const char *pin = ait_backend_config_get(cfg, "pinning");
  snprintf(s->pinning, sizeof s->pinning, "%s",
           !pin || !strcmp(pin, "auto") ? ""
           : !strcmp(pin, "on")         ? "YES"
                                        : "NO");
  const char *dyn = ait_backend_config_get(cfg, "dynamic");
  s->dynamic = dyn && !strcmp(dyn, "on");
  ov_status_e os = L->core_create(&s->core);
  if (os != OK) {
    ov_destroy(s);
    return ov_fail(L, os, "ov_core_create");
  }
  *out = s;
  return AIT_OK;
}

static ait_status ov_build(const ait_backend_config *cfg, const ait_graph *g,
                           const ait_build_info *info, void **state) {
  ov_state *s = NULL;
  AIT_TRY(new_state(cfg, g, &s));
  ait_status st = ensure_model(s);
  /* compile now for the first sample's shapes, so an op OpenVINO cannot
   * compile fails the build rather than the first run */
  if (!st && info && info->n_samples > 0 && info->samples && info->samples[0]) {
    ov_plan *p = NULL;
    st = plan_for(s, info->samples[0], &p);
  }
  if (st) {
    ov_destroy(s);
    return st;
  }
  *state = s;
  return AIT_OK;
}

static ait_status ov_activate(void *state) { return AIT_OK; /* compiled again on demand */ }

static ait_status ov_deactivate(void *state) {
  release_plans(state);
  return AIT_OK;
}

/* ---- saved state: openvino.txt and the exported compiled model ----------
 * openvino.txt: "aitune-openvino 1 BUILD" (OpenVINO's build number), then
 * "openvino_0.blob N s1 ... sN" for the blob and its input signature (none
 * when nothing ran). A blob holds OpenVINO's compiled graph and the weights
 * again; it is covered by the folder's manifest like every file. */

#define INDEX_MAGIC "aitune-openvino 1"
#define BLOB_NAME "openvino_0.blob"

/* Only the most recently used signature is exported (the one the tuner
 * measured; other shapes compile on first use): one blob, never one per
 * plan. Export reads the compiled model only, on the caller's thread, while
 * no request of this state runs (one thread per state: backend.h). */
static ait_status ov_save_as(ov_state *s, const char *dir, bool blob) {
  const ov_lib *L = s->L;
  char ver[128];
  ov_info_version(ver, sizeof ver);
  size_t cap = 256 + 21 * (size_t)MAX_IO * (AIT_MAX_RANK + 1);
  char *idx = malloc(cap);
  if (!idx) return ait_err(AIT_E_NOMEM, "out of memory");
  size_t len = (size_t)snprintf(idx, cap, "%s %s\n", INDEX_MAGIC, ver);
  ait_status st = AIT_OK;
  ov_plan *p = NULL;
  /* after deactivate the plan is gone: compiled again for the export */
  if (blob && (s->n_last > 0 || s->dynamic)) st = plan_for_sig(s, s->last, s->n_last, &p);
  char *path = NULL;
  if (!st && p) {
    if (!(path = ait_path_join(dir, BLOB_NAME))) st = ait_err(AIT_E_NOMEM, "out of memory");
    ov_status_e os = st ? OK : L->export_model(p->compiled, path);
    if (!st && os != OK) st = ov_fail(L, os, "exporting the compiled model");
    free(path);
    len += (size_t)snprintf(idx + len, cap - len, "%s %d", BLOB_NAME, p->n_sig);
    for (int i = 0; i < p->n_sig; i++)
      len += (size_t)snprintf(idx + len, cap - len, " %lld", (long long)p->sig[i]);
    len += (size_t)snprintf(idx + len, cap - len, "\n");
  }
  path = st ? NULL : ait_path_join(dir, "openvino.txt");
  if (!st && !path) st = ait_err(AIT_E_NOMEM, "out of memory");
  if (!st) st = ait_write_file_atomic(path, idx, len);
  free(path);
  free(idx);
  return st;
}

static ait_status ov_save(void *state, const char *dir) { return ov_save_as(state, dir, true); }
/* the index alone: load compiles the graph on first use */
static ait_status ov_save_rebuild(void *state, const char *dir) {
  return ov_save_as(state, dir, false);
}

/* The blob line "openvino_0.blob N s1 ... sN" (untrusted), imported. */
static ait_status import_blob(ov_state *s, const char *dir, char *line) {
  const ov_lib *L = s->L;
  char *save = NULL, *name = strtok_r(line, " ", &save), *tok = strtok_r(NULL, " ", &save);
  if (!name || strcmp(name, BLOB_NAME) || !tok)
    return ait_err(AIT_E_PARSE, "openvino.txt: a malformed blob line");
  char *end = NULL;
  long n = strtol(tok, &end, 10);
  if (*end || n < 0 || n > MAX_IO * (AIT_MAX_RANK + 1) || (n == 0) != s->dynamic)
    return ait_err(AIT_E_PARSE, "openvino.txt: a bad signature length");
  ov_plan *p = calloc(1, sizeof *p);
  if (!p) return ait_err(AIT_E_NOMEM, "out of memory");
  p->n_sig = (int)n;
  /* the signature must parse as this graph's inputs: rank, then as many
   * dims, for each input */
  ait_status st = AIT_OK;
  int at = 0;
  for (int i = 0; !st && i < s->n_in && !s->dynamic; i++) {
    for (int k = 0; !st && (k == 0 || k <= p->sig[at]); k++) {
      tok = at + k < p->n_sig ? strtok_r(NULL, " ", &save) : NULL;
      long long v = tok ? strtoll(tok, &end, 10) : -1;
      if (!tok || *end || v < 0 || (k == 0 && v > AIT_MAX_RANK))
        st = ait_err(AIT_E_PARSE, "openvino.txt: a bad signature");
      else
        p->sig[at + k] = v;
    }
    if (!st) at += 1 + (int)p->sig[at];
  }
  if (!st && at != p->n_sig) st = ait_err(AIT_E_PARSE, "openvino.txt: a bad signature");
  char *path = st ? NULL : ait_path_join(dir, name);
  if (!st && !path) st = ait_err(AIT_E_NOMEM, "out of memory");
  size_t size = 0;
  if (!st) st = ait_read_file(path, &p->blob, &size);
  free(path);
  ov_status_e os = OK;
  if (!st && (os = L->import_model(s->core, p->blob, size, "CPU", &p->compiled)) != OK)
    st = ait_err(AIT_E_PARSE, "cannot import %s (damaged?): %s", name, ov_lib_error(L, os));
  if (!st && (os = L->compiled_model_create_infer_request(p->compiled, &p->req)) != OK)
    st = ov_fail(L, os, "creating an infer request");
  if (!st) st = map_inputs(s, p->compiled);
  if (st) {
    plan_free(L, p);
    return st;
  }
  add_plan(s, p);
  s->n_last = p->n_sig;
  memcpy(s->last, p->sig, sizeof(int64_t) * (size_t)p->n_sig);
  return AIT_OK;
}

/* Imports the saved blob when OpenVINO's build is the one that wrote it.
 * Another build's blob is not imported (OpenVINO does not promise to read
 * it): the graph, which the tuned folder holds, is compiled on first use
 * instead; the folder's fingerprint names the version change. */
static ait_status ov_load(const ait_backend_config *cfg, const ait_graph *g, const char *dir,
                          void **state) {
  ov_state *s = NULL;
  AIT_TRY(new_state(cfg, g, &s));
  char *path = ait_path_join(dir, "openvino.txt"), ver[128], head[256];
  void *data = NULL;
  size_t size = 0;
  ait_status st = path ? ait_read_file(path, &data, &size) : ait_err(AIT_E_NOMEM, "out of memory");
  free(path);
  char *text = st ? NULL : realloc(data, size + 1);
  if (!st && !text) st = ait_err(AIT_E_NOMEM, "out of memory");
  if (!st) {
    data = text;
    text[size] = 0;
    snprintf(head, sizeof head, "%s %s", INDEX_MAGIC, ov_info_version(ver, sizeof ver));
    char *save = NULL, *line = strtok_r(text, "\n", &save);
    if (!line || strncmp(line, INDEX_MAGIC " ", strlen(INDEX_MAGIC) + 1))
      st = ait_err(AIT_E_PARSE, "openvino: openvino.txt is not an aitune openvino index");
    else if (!strcmp(line, head) && (line = strtok_r(NULL, "\n", &save))) {
      st = core_properties(s);
      if (!st) st = import_blob(s, dir, line);
    }
  }
  free(data);
  if (st) {
    ov_destroy(s);
    return ait_err_prefix(st, "openvino");
  }
  *state = s;
  return AIT_OK;
}

static const char *ov_precision(const ait_backend_config *cfg) {
  const char *p = ait_backend_config_get(cfg, "precision");
  if (p && !strcmp(p, "bf16")) return "bf16";
  if (p && !strcmp(p, "f16")) return "fp16";
  return NULL;
}

/* The reduced precisions join only under --precision auto or any (the
 * tuner's rule for every backend); hint, streams and dynamic only when
 * named: the tuner and sessions run one request at a time, which the
 * latency hint's single stream serves best (docs/openvino.md). */
static const char *const ov_variants[] = {"openvino", "openvino:precision=bf16",
                                          "openvino:precision=f16", NULL};

const ait_backend_iface ait_backend_openvino = {
    .name = "openvino",
    .summary = "Intel OpenVINO's CPU plugin through its C API (libopenvino_c, loaded at run time): "
               "the graph as ONNX from memory, compiled per input shape",
    .options = ov_options,
    .n_options = (int)(sizeof ov_options / sizeof ov_options[0]),
    .available = ov_available,
    .supports = ov_supports,
    .build = ov_build,
    .infer = ov_infer,
    .activate = ov_activate,
    .deactivate = ov_deactivate,
    .save = ov_save,
    .save_rebuild = ov_save_rebuild,
    .load = ov_load,
    .destroy = ov_destroy,
    .precision = ov_precision,
    .variants = ov_variants,
};

#endif
