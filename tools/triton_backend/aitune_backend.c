/* The aitune backend for Triton Inference Server (libtriton_aitune.so, in
 * the server's backends/aitune/). A model published with `aitune publish
 * --triton-backend aitune` has its tuned folder in VERSION/aitune. The
 * model loads that folder once (ait_module_load); each instance is a clone
 * of it (ait_module_clone): the instances, which Triton runs as threads of
 * the server, share the graph and the packed weights and own only their
 * work memory (docs/serving.md).
 *
 * Execute: the requests of one call are stacked along axis 0 when their
 * inputs agree past it (dynamic batching gathered them), run once and the
 * outputs split back; otherwise, or when the stacked run fails, each
 * request runs alone and gets its own error response. Triton has already
 * checked names, dtypes and shapes against config.pbtxt.
 *
 * Ownership: the model state owns the loaded module, each instance state
 * its clone; Triton owns requests, responses and their buffers. No
 * function here exits or aborts: errors go back to Triton. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aitune.h"
#include "triton_api.h"

#define EXPORT __attribute__((visibility("default")))
#define MAX_IO 64

typedef struct model_state {
  ait_module *base; /* the loaded folder: only cloned, never run */
  pthread_mutex_t lock;
  size_t n_in, n_out;
  ait_tensor_info in[MAX_IO], out[MAX_IO]; /* names borrowed from base's model */
} model_state;

typedef struct instance_state {
  model_state *ms;
  ait_module *m; /* a clone of ms->base, owned */
} instance_state;

static TRITONSERVER_Error *err(TRITONSERVER_Error_Code code, const char *fmt, const char *a) {
  char msg[1024];
  snprintf(msg, sizeof msg, fmt, a ? a : "");
  return TRITONSERVER_ErrorNew(code, msg);
}

static TRITONSERVER_Error *ait_error(const char *what) {
  char msg[1024];
  snprintf(msg, sizeof msg, "aitune: %s: %s", what, ait_last_error());
  return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, msg);
}

static void log_line(void *user, int is_warning, const char *msg) {
  TRITONSERVER_Error *e = TRITONSERVER_LogMessage(
      is_warning ? TRITONSERVER_LOG_WARN : TRITONSERVER_LOG_INFO, __FILE__, __LINE__, msg);
  if (e) TRITONSERVER_ErrorDelete(e);
}

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* ---- dtypes ---------------------------------------------------------------- */

static const struct {
  ait_dtype ait;
  TRITONSERVER_DataType tr;
} dtypes[] = {
    {AIT_FLOAT32, TRITONSERVER_TYPE_FP32},  {AIT_FLOAT16, TRITONSERVER_TYPE_FP16},
    {AIT_FLOAT64, TRITONSERVER_TYPE_FP64},  {AIT_BFLOAT16, TRITONSERVER_TYPE_BF16},
    {AIT_INT8, TRITONSERVER_TYPE_INT8},     {AIT_INT16, TRITONSERVER_TYPE_INT16},
    {AIT_INT32, TRITONSERVER_TYPE_INT32},   {AIT_INT64, TRITONSERVER_TYPE_INT64},
    {AIT_UINT8, TRITONSERVER_TYPE_UINT8},   {AIT_UINT16, TRITONSERVER_TYPE_UINT16},
    {AIT_UINT32, TRITONSERVER_TYPE_UINT32}, {AIT_UINT64, TRITONSERVER_TYPE_UINT64},
    {AIT_BOOL, TRITONSERVER_TYPE_BOOL},
};

static TRITONSERVER_DataType to_triton(ait_dtype dt) {
  for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
    if (dtypes[i].ait == dt) return dtypes[i].tr;
  return TRITONSERVER_TYPE_INVALID;
}

/* ---- the model: load once ------------------------------------------------- */

EXPORT TRITONSERVER_Error *TRITONBACKEND_Initialize(TRITONBACKEND_Backend *backend) {
  uint32_t major = 0, minor = 0;
  TRITONSERVER_Error *e = TRITONBACKEND_ApiVersion(&major, &minor);
  if (e) return e;
  if (major != TRITONBACKEND_API_VERSION_MAJOR)
    return err(TRITONSERVER_ERROR_UNSUPPORTED,
               "aitune: the server's TRITONBACKEND API is not version 1.x%s", NULL);
  return NULL;
}

EXPORT TRITONSERVER_Error *TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model *model) {
  const char *loc = NULL, *name = NULL;
  TRITONBACKEND_ArtifactType kind;
  uint64_t version = 0;
  TRITONSERVER_Error *e = TRITONBACKEND_ModelRepository(model, &kind, &loc);
  if (!e) e = TRITONBACKEND_ModelVersion(model, &version);
  if (!e) e = TRITONBACKEND_ModelName(model, &name);
  if (e) return e;
  if (kind != TRITONBACKEND_ARTIFACT_FILESYSTEM)
    return err(TRITONSERVER_ERROR_UNSUPPORTED, "aitune: model '%s' is not on a file system", name);
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/%" PRIu64 "/aitune", loc, version);
  model_state *ms = calloc(1, sizeof *ms);
  if (!ms) return err(TRITONSERVER_ERROR_INTERNAL, "aitune: out of memory%s", NULL);
  if (ait_module_load(dir, log_line, NULL, &ms->base) != AIT_OK) {
    free(ms);
    return ait_error(dir);
  }
  const ait_model *am = ait_module_model(ms->base);
  ms->n_in = ait_model_num_inputs(am);
  ms->n_out = ait_model_num_outputs(am);
  ait_status st = ms->n_in > MAX_IO || ms->n_out > MAX_IO ? AIT_E_UNSUPPORTED : AIT_OK;
  for (size_t i = 0; !st && i < ms->n_in; i++)
    st = ait_model_input(am, i, &ms->in[i]);
  for (size_t i = 0; !st && i < ms->n_out; i++)
    st = ait_model_output(am, i, &ms->out[i]);
  if (st || pthread_mutex_init(&ms->lock, NULL) != 0) {
    ait_module_free(ms->base);
    free(ms);
    return err(TRITONSERVER_ERROR_UNSUPPORTED, "aitune: model '%s': too many inputs or outputs",
               name);
  }
  return TRITONBACKEND_ModelSetState(model, ms);
}

EXPORT TRITONSERVER_Error *TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model *model) {
  void *p = NULL;
  TRITONSERVER_Error *e = TRITONBACKEND_ModelState(model, &p);
  if (e) return e;
  model_state *ms = p;
  if (!ms) return NULL;
  ait_module_free(ms->base); /* clones still alive keep what they share */
  pthread_mutex_destroy(&ms->lock);
  free(ms);
  return NULL;
}

/* ---- instances: clones ------------------------------------------------------ */

EXPORT TRITONSERVER_Error *
TRITONBACKEND_ModelInstanceInitialize(TRITONBACKEND_ModelInstance *inst) {
  TRITONBACKEND_Model *model = NULL;
  void *p = NULL;
  TRITONSERVER_Error *e = TRITONBACKEND_ModelInstanceModel(inst, &model);
  if (!e) e = TRITONBACKEND_ModelState(model, &p);
  if (e) return e;
  instance_state *is = calloc(1, sizeof *is);
  if (!is) return err(TRITONSERVER_ERROR_INTERNAL, "aitune: out of memory%s", NULL);
  is->ms = p;
  /* instances may start on several threads: one clone of the base at a time */
  pthread_mutex_lock(&is->ms->lock);
  ait_status st = ait_module_clone(is->ms->base, &is->m);
  pthread_mutex_unlock(&is->ms->lock);
  if (st) {
    free(is);
    return ait_error("cloning the module for an instance");
  }
  return TRITONBACKEND_ModelInstanceSetState(inst, is);
}

EXPORT TRITONSERVER_Error *TRITONBACKEND_ModelInstanceFinalize(TRITONBACKEND_ModelInstance *inst) {
  void *p = NULL;
  TRITONSERVER_Error *e = TRITONBACKEND_ModelInstanceState(inst, &p);
  if (e) return e;
  instance_state *is = p;
  if (is) ait_module_free(is->m);
  free(is);
  return NULL;
}

/* ---- execute ------------------------------------------------------------------ */

/* One request's input: its shape and contiguous host bytes (borrowed from
 * Triton, or `copy` when it came in several buffers). */
typedef struct req_input {
  int rank;
  int64_t dims[AIT_MAX_RANK];
  const void *data;
  uint64_t bytes;
  void *copy; /* owned, may be NULL */
} req_input;

typedef struct req {
  TRITONBACKEND_Request *r;
  req_input in[MAX_IO];
  TRITONSERVER_Error *error; /* set: answer with it */
  bool done;
  bool failed; /* answered with an error */
} req;

static TRITONSERVER_Error *read_input(TRITONBACKEND_Request *r, const ait_tensor_info *decl,
                                      req_input *ri) {
  TRITONBACKEND_Input *in = NULL;
  TRITONSERVER_DataType dt;
  const int64_t *shape = NULL;
  uint32_t rank = 0, nbuf = 0;
  uint64_t bytes = 0;
  TRITONSERVER_Error *e = TRITONBACKEND_RequestInput(r, decl->name, &in);
  if (!e) e = TRITONBACKEND_InputProperties(in, NULL, &dt, &shape, &rank, &bytes, &nbuf);
  if (e) return e;
  if (dt != to_triton(decl->dtype))
    return err(TRITONSERVER_ERROR_INVALID_ARG, "aitune: input '%s' has another data type",
               decl->name);
  if (rank > AIT_MAX_RANK)
    return err(TRITONSERVER_ERROR_INVALID_ARG, "aitune: input '%s' has too many dims", decl->name);
  ri->rank = (int)rank;
  memcpy(ri->dims, shape, sizeof(int64_t) * rank);
  ri->bytes = bytes;
  uint64_t at = 0;
  for (uint32_t b = 0; b < nbuf; b++) {
    const void *buf = NULL;
    uint64_t n = 0;
    TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
    int64_t mid = 0;
    if ((e = TRITONBACKEND_InputBuffer(in, b, &buf, &n, &mt, &mid))) return e;
    if (mt == TRITONSERVER_MEMORY_GPU)
      return err(TRITONSERVER_ERROR_UNSUPPORTED, "aitune: input '%s' is in GPU memory", decl->name);
    if (nbuf == 1) {
      ri->data = buf;
      break;
    }
    if (!ri->copy && !(ri->copy = malloc(bytes ? bytes : 1)))
      return err(TRITONSERVER_ERROR_INTERNAL, "aitune: out of memory%s", NULL);
    if (at + n > bytes)
      return err(TRITONSERVER_ERROR_INVALID_ARG, "aitune: input '%s' buffers exceed its size",
                 decl->name);
    memcpy((char *)ri->copy + at, buf, n);
    at += n;
  }
  if (ri->copy) ri->data = ri->copy;
  return NULL;
}

static bool is_requested(TRITONBACKEND_Request *r, const char *name) {
  uint32_t n = 0;
  if (TRITONBACKEND_RequestOutputCount(r, &n) || n == 0) return true;
  for (uint32_t i = 0; i < n; i++) {
    const char *o = NULL;
    if (!TRITONBACKEND_RequestOutputName(r, i, &o) && o && !strcmp(o, name)) return true;
  }
  return false;
}

/* Answer request q with rows [row0, row0 + rows) of the module's outputs
 * (rows < 0: all of each output). */
static TRITONSERVER_Error *respond(ait_module *m, const model_state *ms, req *q, int64_t row0,
                                   int64_t rows) {
  TRITONBACKEND_Response *resp = NULL;
  TRITONSERVER_Error *e = TRITONBACKEND_ResponseNew(&resp, q->r);
  if (e) return e;
  TRITONSERVER_Error *fail = NULL;
  for (size_t k = 0; !fail && k < ms->n_out; k++) {
    if (!is_requested(q->r, ms->out[k].name)) continue;
    ait_tensor_view v;
    if (ait_module_output(m, k, &v) != AIT_OK) {
      fail = ait_error("reading an output");
      break;
    }
    int64_t dims[AIT_MAX_RANK];
    memcpy(dims, v.dims, sizeof(int64_t) * (size_t)v.rank);
    size_t row = ait_dtype_size(v.dtype);
    for (int d = 1; d < v.rank; d++)
      row *= (size_t)v.dims[d];
    const char *src = v.data;
    if (rows >= 0 && v.rank > 0) {
      dims[0] = rows;
      src += row * (size_t)row0;
    }
    size_t bytes = v.rank > 0 ? row * (size_t)dims[0] : ait_dtype_size(v.dtype);
    TRITONBACKEND_Output *out = NULL;
    void *buf = NULL;
    TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
    int64_t mid = 0;
    fail = TRITONBACKEND_ResponseOutput(resp, &out, ms->out[k].name, to_triton(v.dtype), dims,
                                        (uint32_t)v.rank);
    if (!fail) fail = TRITONBACKEND_OutputBuffer(out, &buf, bytes, &mt, &mid);
    if (!fail && mt == TRITONSERVER_MEMORY_GPU)
      fail = err(TRITONSERVER_ERROR_UNSUPPORTED, "aitune: output '%s' offered in GPU memory",
                 ms->out[k].name);
    if (!fail) memcpy(buf, src, bytes);
  }
  q->failed = fail != NULL;
  e = TRITONBACKEND_ResponseSend(resp, TRITONSERVER_RESPONSE_COMPLETE_FINAL, fail);
  q->done = true;
  return e;
}

static void respond_error(req *q, TRITONSERVER_Error *error) {
  q->failed = true;
  TRITONBACKEND_Response *resp = NULL;
  TRITONSERVER_Error *e = TRITONBACKEND_ResponseNew(&resp, q->r);
  if (!e)
    e = TRITONBACKEND_ResponseSend(resp, TRITONSERVER_RESPONSE_COMPLETE_FINAL, error);
  else
    TRITONSERVER_ErrorDelete(error);
  if (e) TRITONSERVER_ErrorDelete(e);
  q->done = true;
}

static bool run(ait_module *m, const model_state *ms, const req_input *in) {
  ait_tensor_view v[MAX_IO];
  for (size_t i = 0; i < ms->n_in; i++) {
    memset(&v[i], 0, sizeof v[i]);
    v[i].dtype = ms->in[i].dtype;
    v[i].rank = in[i].rank;
    memcpy(v[i].dims, in[i].dims, sizeof(int64_t) * (size_t)in[i].rank);
    v[i].data = (void *)in[i].data;
    v[i].mem = AIT_MEM_HOST;
  }
  return ait_module_infer(m, v, ms->n_in) == AIT_OK;
}

/* The requests' inputs stacked along axis 0 into st[] (owned copies) when
 * every input agrees past axis 0 across them; false otherwise. */
static bool stack(const model_state *ms, req *qs, uint32_t n, req_input *st) {
  memset(st, 0, sizeof(req_input) * ms->n_in);
  for (uint32_t j = 0; j < n; j++)
    if (qs[j].error) return false;
  for (size_t i = 0; i < ms->n_in; i++) {
    const req_input *a = &qs[0].in[i];
    if (a->rank < 1) return false;
    uint64_t total = 0;
    int64_t rows = 0;
    for (uint32_t j = 0; j < n; j++) {
      const req_input *b = &qs[j].in[i];
      if (b->rank != a->rank || memcmp(b->dims + 1, a->dims + 1, sizeof(int64_t) * (a->rank - 1)))
        return false;
      total += b->bytes;
      rows += b->dims[0];
    }
    st[i].rank = a->rank;
    memcpy(st[i].dims, a->dims, sizeof(int64_t) * (size_t)a->rank);
    st[i].dims[0] = rows;
    if (!(st[i].copy = malloc(total ? total : 1))) return false;
    uint64_t at = 0;
    for (uint32_t j = 0; j < n; j++) {
      memcpy((char *)st[i].copy + at, qs[j].in[i].data, qs[j].in[i].bytes);
      at += qs[j].in[i].bytes;
    }
    st[i].data = st[i].copy;
    st[i].bytes = total;
  }
  return true;
}

/* Every output has axis 0 of `rows`: the stacked run's outputs split back. */
static bool outputs_split(ait_module *m, const model_state *ms, int64_t rows) {
  for (size_t k = 0; k < ms->n_out; k++) {
    ait_tensor_view v;
    if (ait_module_output(m, k, &v) != AIT_OK || v.rank < 1 || v.dims[0] != rows) return false;
  }
  return true;
}

EXPORT TRITONSERVER_Error *TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance *inst,
                                                              TRITONBACKEND_Request **requests,
                                                              const uint32_t n) {
  uint64_t t_exec = now_ns();
  void *p = NULL;
  TRITONSERVER_Error *e = TRITONBACKEND_ModelInstanceState(inst, &p);
  if (e) return e; /* Triton still owns the requests */
  instance_state *is = p;
  const model_state *ms = is->ms;
  req *qs = calloc(n ? n : 1, sizeof *qs);
  if (!qs) return err(TRITONSERVER_ERROR_INTERNAL, "aitune: out of memory%s", NULL);
  for (uint32_t j = 0; j < n; j++) {
    qs[j].r = requests[j];
    for (size_t i = 0; !qs[j].error && i < ms->n_in; i++)
      qs[j].error = read_input(requests[j], &ms->in[i], &qs[j].in[i]);
  }
  uint64_t t_comp0 = now_ns(), t_comp1 = t_comp0;
  int64_t batch = 0;
  req_input st[MAX_IO];
  memset(st, 0, sizeof st);
  bool stacked = n > 1 && stack(ms, qs, n, st);
  if (stacked) {
    int64_t rows = st[0].dims[0];
    if (run(is->m, ms, st) && outputs_split(is->m, ms, rows)) {
      t_comp1 = now_ns();
      batch = rows;
      int64_t at = 0;
      for (uint32_t j = 0; j < n; j++) {
        int64_t rj = qs[j].in[0].dims[0];
        TRITONSERVER_Error *se = respond(is->m, ms, &qs[j], at, rj);
        if (se) TRITONSERVER_ErrorDelete(se);
        at += rj;
      }
    }
  }
  for (size_t i = 0; i < ms->n_in; i++) /* also what a refused stack() had copied */
    free(st[i].copy);
  for (uint32_t j = 0; j < n; j++) { /* alone: not stacked, or the stacked run failed */
    req *q = &qs[j];
    if (q->done) continue;
    if (q->error) {
      respond_error(q, q->error);
      q->error = NULL;
      continue;
    }
    if (!run(is->m, ms, q->in)) {
      respond_error(q, ait_error("inference"));
      continue;
    }
    batch += ms->n_in && qs[j].in[0].rank > 0 ? qs[j].in[0].dims[0] : 1;
    TRITONSERVER_Error *se = respond(is->m, ms, q, 0, -1);
    if (se) TRITONSERVER_ErrorDelete(se);
    t_comp1 = now_ns();
  }
  uint64_t t_end = now_ns();
  for (uint32_t j = 0; j < n; j++) {
    e = TRITONBACKEND_ModelInstanceReportStatistics(inst, requests[j], !qs[j].failed, t_exec,
                                                    t_comp0, t_comp1, t_end);
    if (e) TRITONSERVER_ErrorDelete(e);
    for (size_t i = 0; i < ms->n_in; i++)
      free(qs[j].in[i].copy);
    e = TRITONBACKEND_RequestRelease(requests[j], TRITONSERVER_REQUEST_RELEASE_ALL);
    if (e) TRITONSERVER_ErrorDelete(e);
  }
  if (batch > 0) {
    e = TRITONBACKEND_ModelInstanceReportBatchStatistics(inst, (uint64_t)batch, t_exec, t_comp0,
                                                         t_comp1, t_end);
    if (e) TRITONSERVER_ErrorDelete(e);
  }
  free(qs);
  return NULL;
}
