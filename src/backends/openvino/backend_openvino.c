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
 * destroy (backend.h's contract). save() exports every compiled model
 * (ov_compiled_model_export_model) beside an index, openvino.txt, naming
 * OpenVINO's version and each blob's input signature; load() imports them
 * (no recompilation) when the version matches, and reads the graph into a
 * model only when a signature it has no blob for arrives. */
#ifdef AIT_HAVE_OPENVINO

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/openvino/ov_lib.h"
#include "core/error.h"
#include "core/fileio.h"
#include "hw/hw_impl.h"
#include "onnx/onnx_io.h"

#define MAX_PLANS 4
#define MAX_IO 256

static const ait_option_def ov_options[] = {
    {"threads", AIT_OPT_INT, "auto", "1..256",
     "OpenVINO's inference threads (auto: the cores this process may use)"},
    {"precision", AIT_OPT_ENUM, "f32", "f32|bf16",
     "inference precision hint: bf16 where the CPU has AVX512-BF16 or AMX (judged as bf16)"},
};

/* aitune dtype <-> OpenVINO element type */
static const struct {
  ait_dtype dt;
  ov_element_type_e ov;
} dtypes[] = {
    {AIT_FLOAT32, F32},  {AIT_FLOAT16, F16}, {AIT_BFLOAT16, BF16}, {AIT_FLOAT64, F64},
    {AIT_INT8, I8},      {AIT_INT16, I16},   {AIT_INT32, I32},     {AIT_INT64, I64},
    {AIT_UINT8, U8},     {AIT_UINT16, U16},  {AIT_UINT32, U32},    {AIT_UINT64, U64},
    {AIT_BOOL, BOOLEAN},
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
  const ait_graph *g; /* borrowed: read into `model` when a signature needs compiling */
  ov_core_t *core;
  ov_model_t *model;
  uint8_t *onnx; /* the bytes the model was read from (kept while it lives) */
  int n_in, n_out;
  char threads[16];
  char precision[8];
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

static bool ov_supports(const ait_backend_config *cfg, const ait_graph *g, const ait_node *node,
                        char *why, size_t n) {
  /* OpenVINO's ONNX frontend reads the standard domains; an op it lacks
   * fails the build with its message, naming the node */
  if (!node->domain[0] || !strcmp(node->domain, "ai.onnx") || !strcmp(node->domain, "ai.onnx.ml"))
    return true;
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

/* The graph as an OpenVINO model (once per state). */
static ait_status ensure_model(ov_state *s) {
  if (s->model) return AIT_OK;
  const ov_lib *L = s->L;
  size_t len = 0;
  free(s->onnx);
  s->onnx = NULL;
  AIT_TRY(ait_onnx_write_model_buffer(s->g, &s->onnx, &len));
  ov_status_e os =
      L->read_model_from_memory_buffer(s->core, (const char *)s->onnx, len, NULL, &s->model);
  return os == OK ? AIT_OK : ov_fail(L, os, "reading the model (its ONNX frontend)");
}

/* The model reshaped to the inputs' shapes, compiled, with its request. */
static ait_status compile_plan(ov_state *s, const ait_tensor *const *in, ov_plan *p) {
  const ov_lib *L = s->L;
  AIT_TRY(ensure_model(s));
  ov_partial_shape_t shapes[MAX_IO];
  size_t ports[MAX_IO];
  int made = 0;
  ov_status_e st = OK;
  /* scalars stay as declared: a rank-0 partial shape does not read back as
   * rank 0 (Range refuses it) */
  for (int i = 0; i < s->n_in && st == OK; i++) {
    if (in[i]->rank == 0) continue;
    ports[made] = (size_t)i;
    st = L->partial_shape_create_static(in[i]->rank, in[i]->dims, &shapes[made]);
    made += st == OK;
  }
  if (st == OK && made)
    st = L->model_reshape_by_port_indexes(s->model, ports, shapes, (size_t)made);
  for (int i = 0; i < made; i++)
    L->partial_shape_free(&shapes[i]);
  if (st != OK) return ov_fail(L, st, "reshaping the model to the input shapes");
  st = L->compile_model(s->core, s->model, "CPU", 8, &p->compiled, "PERFORMANCE_HINT", "LATENCY",
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

static ait_status plan_for(ov_state *s, const ait_tensor *const *in, ov_plan **out) {
  int64_t sig[MAX_IO * (AIT_MAX_RANK + 1)];
  int n_sig = signature(in, s->n_in, sig);
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
  ait_status st = compile_plan(s, in, p);
  if (st) {
    plan_free(s->L, p);
    return st;
  }
  add_plan(s, p);
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
    if (!to_ov(in[i]->dtype, &et))
      return ait_err(AIT_E_DTYPE, "openvino: input %d has dtype %s, which OpenVINO does not take",
                     i, ait_dtype_name(in[i]->dtype));
    /* a shape over our dims, not ov_shape_create's copy: that refuses rank 0 */
    ov_shape_t shape = {in[i]->rank, (int64_t *)in[i]->dims};
    ov_tensor_t *t = NULL;
    st = L->tensor_create_from_host_ptr(et, shape, in[i]->data, &t);
    if (st == OK) st = L->set_input_tensor_by_index(p->req, (size_t)i, t);
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

/* A state without compiled models: the library, a core, the options. */
static ait_status new_state(const ait_backend_config *cfg, const ait_graph *g, ov_state **out) {
  char why[512] = "";
  const ov_lib *L = ov_lib_get(why, sizeof why);
  if (!L) return ait_err(AIT_E_UNSUPPORTED, "openvino: %s", why);
  if (g->n_inputs > MAX_IO || g->n_outputs > MAX_IO)
    return ait_err(AIT_E_UNSUPPORTED, "openvino: more than %d inputs or outputs", MAX_IO);
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
  ov_status_e os = L->core_create(&s->core);
  if (os != OK) {
    ov_destroy(s);
    return ov_fail(L, os, "ov_core_create");
  }
  /* the core's CPU properties too: an imported model takes them from the
   * core, not from its blob (without this, bf16 on AMX CPUs) */
  const char *const props[][2] = {{"PERFORMANCE_HINT", "LATENCY"},
                                  {"INFERENCE_NUM_THREADS", s->threads},
                                  {"INFERENCE_PRECISION_HINT", s->precision},
                                  {"ENABLE_CPU_PINNING", "NO"}};
  for (size_t i = 0; i < sizeof props / sizeof props[0] && os == OK; i++)
    os = L->core_set_property(s->core, "CPU", props[i][0], props[i][1]);
  if (os != OK) {
    ov_destroy(s);
    return ov_fail(L, os, "setting the CPU plugin's properties");
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

/* ---- saved state: openvino.txt and one exported blob per signature ------ */

#define INDEX_MAGIC "aitune-openvino 1"

static void ov_version(const ov_lib *L, char *buf, size_t n) {
  ov_version_t v = {0};
  snprintf(buf, n, "unknown");
  if (L->get_openvino_version(&v) == OK) {
    snprintf(buf, n, "%s", v.buildNumber ? v.buildNumber : "unknown");
    L->version_free(&v);
  }
  for (char *c = buf; *c; c++) /* one word on the index's line */
    if (*c == ' ' || *c == '\n') *c = '_';
}

static ait_status ov_save(void *state, const char *dir) {
  ov_state *s = state;
  const ov_lib *L = s->L;
  char ver[128], name[32];
  ov_version(L, ver, sizeof ver);
  size_t cap = 256 + (size_t)MAX_PLANS * (32 + 21 * (size_t)MAX_IO * (AIT_MAX_RANK + 1));
  char *idx = malloc(cap);
  if (!idx) return ait_err(AIT_E_NOMEM, "out of memory");
  size_t len = (size_t)snprintf(idx, cap, "%s %s\n", INDEX_MAGIC, ver);
  ait_status st = AIT_OK;
  /* the most recently used signature only: a blob holds the weights again
   * (ResNet-50: 102 MB a blob), and importing one took as long here as
   * compiling (docs/openvino.md); other signatures compile on first use */
  int last = -1;
  for (int k = 0; k < MAX_PLANS; k++)
    if (s->plans[k] && (last < 0 || s->plans[k]->last_use > s->plans[last]->last_use)) last = k;
  for (int k = 0, blob = 0; k < MAX_PLANS && !st; k++) {
    const ov_plan *p = s->plans[k];
    if (!p || k != last) continue;
    snprintf(name, sizeof name, "openvino_%d.blob", blob);
    char *path = ait_path_join(dir, name);
    if (!path) st = ait_err(AIT_E_NOMEM, "out of memory");
    ov_status_e os = path ? L->export_model(p->compiled, path) : OK;
    free(path);
    if (!st && os != OK) st = ov_fail(L, os, "exporting a compiled model");
    len += (size_t)snprintf(idx + len, cap - len, "%s %d", name, p->n_sig);
    for (int i = 0; i < p->n_sig; i++)
      len += (size_t)snprintf(idx + len, cap - len, " %lld", (long long)p->sig[i]);
    len += (size_t)snprintf(idx + len, cap - len, "\n");
    blob++;
  }
  char *path = st ? NULL : ait_path_join(dir, "openvino.txt");
  if (!st && !path) st = ait_err(AIT_E_NOMEM, "out of memory");
  if (!st) st = ait_write_file_atomic(path, idx, len);
  free(path);
  free(idx);
  return st;
}

/* One line of the index: "openvino_K.blob N d1 ... dN", untrusted. */
static ait_status import_line(ov_state *s, const char *dir, char *line) {
  const ov_lib *L = s->L;
  char *save = NULL, *name = strtok_r(line, " ", &save), *tok = strtok_r(NULL, " ", &save);
  int k = -1;
  if (!name || sscanf(name, "openvino_%d.blob", &k) != 1 || k < 0 || k >= MAX_PLANS || !tok)
    return ait_err(AIT_E_PARSE, "openvino.txt: a malformed line");
  char *end = NULL;
  long n = strtol(tok, &end, 10);
  if (*end || n < 1 || n > MAX_IO * (AIT_MAX_RANK + 1))
    return ait_err(AIT_E_PARSE, "openvino.txt: %s: a bad signature length", name);
  ov_plan *p = calloc(1, sizeof *p);
  if (!p) return ait_err(AIT_E_NOMEM, "out of memory");
  p->n_sig = (int)n;
  for (int i = 0; i < p->n_sig; i++) {
    tok = strtok_r(NULL, " ", &save);
    long long v = tok ? strtoll(tok, &end, 10) : -1;
    if (!tok || *end || v < 0) {
      free(p);
      return ait_err(AIT_E_PARSE, "openvino.txt: %s: a bad signature", name);
    }
    p->sig[i] = v;
  }
  char *path = ait_path_join(dir, name);
  void *blob = NULL;
  size_t size = 0;
  ait_status st = path ? ait_read_file(path, &blob, &size) : ait_err(AIT_E_NOMEM, "out of memory");
  free(path);
  ov_status_e os = OK;
  if (!st && (os = L->import_model(s->core, blob, size, "CPU", &p->compiled)) != OK)
    st = ait_err(AIT_E_PARSE, "openvino: cannot import %s (damaged, or another build's): %s", name,
                 ov_lib_error(L, os));
  if (!st && (os = L->compiled_model_create_infer_request(p->compiled, &p->req)) != OK)
    st = ov_fail(L, os, "creating an infer request");
  free(blob);
  if (st) {
    plan_free(L, p);
    return st;
  }
  add_plan(s, p);
  return AIT_OK;
}

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
    ov_version(s->L, ver, sizeof ver);
    snprintf(head, sizeof head, "%s %s", INDEX_MAGIC, ver);
    char *save = NULL, *line = strtok_r(text, "\n", &save);
    if (!line || strncmp(line, INDEX_MAGIC, strlen(INDEX_MAGIC)))
      st = ait_err(AIT_E_PARSE, "openvino: openvino.txt is not an aitune openvino index");
    /* another OpenVINO's blobs are not imported: the graph is compiled
     * again on first use instead */
    else if (!strcmp(line, head))
      while (!st && (line = strtok_r(NULL, "\n", &save)))
        st = import_line(s, dir, line);
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
  return p && !strcmp(p, "bf16") ? "bf16" : NULL;
}

static const char *const ov_variants[] = {"openvino", NULL};

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
