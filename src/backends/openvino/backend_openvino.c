/* Backend `openvino`: Intel's CPU engine as a tuner candidate, through its C
 * API (ov_lib.h, loaded at run time).
 *
 * build() writes aitune's IR back to ONNX bytes in memory (the ONNX writer:
 * the tuner hands over the graph, never the user's file) and reads them with
 * ov_core_read_model_from_memory_buffer. Each input signature gets its own
 * compiled model: the model reshaped to those static shapes (OpenVINO's CPU
 * plugin is fastest on static shapes), compiled for "CPU" with the LATENCY
 * hint, `threads` inference threads, f32 (or bf16) inference precision and
 * no thread pinning (other engines share the process), up to MAX_PLANS
 * signatures, the oldest dropped beyond. A model OpenVINO cannot read or
 * compile fails the build with OpenVINO's message: never a silent fallback.
 *
 * Inputs are handed to OpenVINO in place (host-pointer tensors). Outputs are
 * OpenVINO's own buffers, borrowed until the next infer, deactivate or
 * destroy (backend.h's contract). save() keeps nothing but a note: load()
 * rebuilds from the graph, which the tuned folder holds. */
#ifdef AIT_HAVE_OPENVINO

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/openvino/ov_lib.h"
#include "backends/openvino/ov_options.h"
#include "backends/openvino/ov_refuse.h"
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
    {AIT_FLOAT32, F32},       {AIT_FLOAT16, F16},
    {AIT_BFLOAT16, BF16},     {AIT_FLOAT64, F64},
    {AIT_INT8, I8},           {AIT_INT16, I16},
    {AIT_INT32, I32},         {AIT_INT64, I64},
    {AIT_UINT8, U8},          {AIT_UINT16, U16},
    {AIT_UINT32, U32},        {AIT_UINT64, U64},
    {AIT_BOOL, BOOLEAN},      {AIT_FLOAT8E4M3FN, F8E4M3},
    {AIT_FLOAT8E5M2, F8E5M3}, /* sic: e5m2 */
    {AIT_FLOAT8E8M0, F8E8M0},
    /* not the 4-bit types: OpenVINO packs two to a byte, aitune keeps one */
};

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
} ov_plan;

typedef struct ov_state {
  const ov_lib *L;
  ov_core_t *core;
  ov_model_t *model;
  uint8_t *onnx; /* the bytes the model was read from (kept while it lives) */
  int n_in, n_out;
  /* port[i]: the OpenVINO model input that aitune's input i feeds, -1 when
   * OpenVINO's frontend dropped it (an input read only for its type, as
   * CastLike's `target_type`, or an empty `axes`) */
  int port[MAX_IO];
  char threads[16];
  char precision[8];
  char hint[16];    /* LATENCY, THROUGHPUT */
  char streams[16]; /* "" for the hint's choice */
  bool dynamic;     /* one compiled model with the model's own (symbolic) shapes */
  ov_plan *plans[MAX_PLANS];
  unsigned uses;
  ov_tensor_t *outs[MAX_IO]; /* the last run's outputs, lent to the caller */
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

static bool ov_supports(const ait_backend_config *cfg, const ait_graph *g, const ait_node *node,
                        char *why, size_t n) {
  const char *missing = precision_missing(cfg);
  if (missing) {
    snprintf(why, n, "openvino: %s", missing);
    return false;
  }
  /* OpenVINO's ONNX frontend reads the standard domains; an op it lacks
   * fails the build with its message, naming the node */
  if (!node->domain[0] || !strcmp(node->domain, "ai.onnx") || !strcmp(node->domain, "ai.onnx.ml"))
    return !ov_refuses(g, node, why, n); /* what it reads but computes wrong */
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
  if (s->model) s->L->model_free(s->model);
  if (s->core) s->L->core_free(s->core);
  free(s->onnx);
  free(s);
}

static ait_status ov_fail(const ov_lib *L, ov_status_e st, const char *what) {
  return ait_err(AIT_E_RUNTIME, "OpenVINO: %s: %s", what, ov_lib_error(L, st));
}

/* The model reshaped to the inputs' shapes, compiled, with its request. */
static ait_status compile_plan(ov_state *s, const ait_tensor *const *in, ov_plan *p) {
  const ov_lib *L = s->L;
  ov_partial_shape_t shapes[MAX_IO];
  size_t ports[MAX_IO];
  int made = 0;
  ov_status_e st = OK;
  /* scalars stay as declared: a rank-0 partial shape does not read back as
   * rank 0 (Range refuses it) */
  for (int i = 0; i < s->n_in && st == OK; i++) {
    if (in[i]->rank == 0 || s->port[i] < 0) continue;
    ports[made] = (size_t)s->port[i];
    /* ov_partial_shape_create_static refuses a zero dimension (an empty
     * tensor); min = max = d says the same and takes 0 */
    ov_dimension_t dims[AIT_MAX_RANK];
    for (int d = 0; d < in[i]->rank; d++)
      dims[d] = (ov_dimension_t){in[i]->dims[d], in[i]->dims[d]};
    st = L->partial_shape_create(in[i]->rank, dims, &shapes[made]);
    made += st == OK;
  }
  if (st == OK && made && !s->dynamic)
    st = L->model_reshape_by_port_indexes(s->model, ports, shapes, (size_t)made);
  for (int i = 0; i < made; i++)
    L->partial_shape_free(&shapes[i]);
  if (st != OK) return ov_fail(L, st, "reshaping the model to the input shapes");
  /* NUM_STREAMS only when set: given, it overrides the hint's choice */
  if (s->streams[0])
    st = L->compile_model(s->core, s->model, "CPU", 10, &p->compiled, "PERFORMANCE_HINT", s->hint,
                          "INFERENCE_NUM_THREADS", s->threads, "INFERENCE_PRECISION_HINT",
                          s->precision, "ENABLE_CPU_PINNING", "NO", "NUM_STREAMS", s->streams);
  else
    st = L->compile_model(s->core, s->model, "CPU", 8, &p->compiled, "PERFORMANCE_HINT", s->hint,
                          "INFERENCE_NUM_THREADS", s->threads, "INFERENCE_PRECISION_HINT",
                          s->precision, "ENABLE_CPU_PINNING", "NO");
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

static ait_status plan_for(ov_state *s, const ait_tensor *const *in, ov_plan **out) {
  int64_t sig[MAX_IO * (AIT_MAX_RANK + 1)];
  /* dynamic: one plan answers every signature */
  int n_sig = s->dynamic ? 0 : signature(in, s->n_in, sig);
  int oldest = 0;
  for (int i = 0; i < MAX_PLANS; i++) {
    ov_plan *p = s->plans[i];
    if (p && p->n_sig == n_sig && !memcmp(p->sig, sig, sizeof(int64_t) * (size_t)n_sig)) {
      p->last_use = ++s->uses;
      *out = p;
      return AIT_OK;
    }
    if (!p || (s->plans[oldest] && p->last_use < s->plans[oldest]->last_use)) oldest = i;
  }
  ov_plan *p = calloc(1, sizeof *p);
  if (!p) return ait_err(AIT_E_NOMEM, "out of memory");
  p->n_sig = n_sig;
  memcpy(p->sig, sig, sizeof(int64_t) * (size_t)n_sig);
  ait_status st = compile_plan(s, in, p);
  if (st) {
    plan_free(s->L, p);
    return st;
  }
  drop_outputs(s); /* they may belong to the plan being replaced */
  plan_free(s->L, s->plans[oldest]);
  s->plans[oldest] = p;
  p->last_use = ++s->uses;
  *out = p;
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
    ov_tensor_t *t = NULL;
    st = L->tensor_create_from_host_ptr(et, shape, in[i]->data, &t);
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

/* s->port from the names of OpenVINO's model inputs: its frontend drops
 * inputs that only lend their type or are empty, so its indices are not
 * aitune's. */
static ait_status map_inputs(ov_state *s, const ait_graph *g) {
  const ov_lib *L = s->L;
  size_t n = 0;
  ov_status_e st = L->model_inputs_size(s->model, &n);
  if (st != OK) return ov_fail(L, st, "counting the model's inputs");
  for (int i = 0; i < s->n_in; i++)
    s->port[i] = -1;
  for (size_t k = 0; k < n; k++) {
    ov_output_const_port_t *port = NULL;
    char *name = NULL;
    st = L->model_const_input_by_index(s->model, k, &port);
    if (st == OK) st = L->port_get_any_name(port, &name);
    int found = -1;
    for (int i = 0; st == OK && i < s->n_in && found < 0; i++)
      if (!strcmp(g->values[g->inputs[i]].name, name)) found = i;
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

static ait_status ov_build(const ait_backend_config *cfg, const ait_graph *g,
                           const ait_build_info *info, void **state) {
  char why[512] = "";
  const ov_lib *L = ov_lib_get(why, sizeof why);
  if (!L) return ait_err(AIT_E_UNSUPPORTED, "openvino: %s", why);
  if (g->n_inputs > MAX_IO || g->n_outputs > MAX_IO)
    return ait_err(AIT_E_UNSUPPORTED, "openvino: more than %d inputs or outputs", MAX_IO);
  ov_state *s = calloc(1, sizeof *s);
  if (!s) return ait_err(AIT_E_NOMEM, "out of memory");
  s->L = L;
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
  const char *dyn = ait_backend_config_get(cfg, "dynamic");
  s->dynamic = dyn && !strcmp(dyn, "on");
  const char *missing = precision_missing(cfg);
  if (missing) {
    ov_destroy(s);
    return ait_err(AIT_E_UNSUPPORTED, "openvino: %s", missing);
  }
  size_t len = 0;
  ait_status st = ait_onnx_write_model_buffer(g, &s->onnx, &len);
  ov_status_e os = OK;
  if (!st && (os = L->core_create(&s->core)) != OK) st = ov_fail(L, os, "ov_core_create");
  if (!st && (os = L->read_model_from_memory_buffer(s->core, (const char *)s->onnx, len, NULL,
                                                    &s->model)) != OK)
    st = ov_fail(L, os, "reading the model (its ONNX frontend)");
  if (!st) st = map_inputs(s, g);
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

static ait_status ov_save(void *state, const char *dir) {
  static const char note[] = "openvino: rebuilt from the tuned folder's graph on load\n";
  char *path = ait_path_join(dir, "openvino.txt");
  if (!path) return ait_err(AIT_E_NOMEM, "out of memory");
  ait_status st = ait_write_file_atomic(path, note, sizeof note - 1);
  free(path);
  return st;
}

static ait_status ov_load(const ait_backend_config *cfg, const ait_graph *g, const char *dir,
                          void **state) {
  return ov_build(cfg, g, NULL, state);
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
    .load = ov_load,
    .destroy = ov_destroy,
    .precision = ov_precision,
    .variants = ov_variants,
};

#endif
