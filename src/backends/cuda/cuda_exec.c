/* Running plans of the cuda backend: the plan for the inputs' signature
 * (made on first sight, least recently used one dropped past CU_MAX_PLANS),
 * input uploads, the steps — or, from the second run of a plan on, one
 * launch of the CUDA graph captured from them — output downloads (into
 * page-locked memory of the plan, reused by every run: the outputs handed
 * out borrow it), and the device error flag (bad Gather indices) checked
 * after the run.
 *
 * Under `aitune profile` (a node observer set on the thread) a plan runs
 * step by step, each step replayed from a CUDA graph of its own (captured on
 * the first profiled run; a step that cannot be captured runs directly),
 * with CUDA events around each step: the observer gets each step's device
 * time under the plan node's name and the step's kind as op type ("fp8
 * GEMM", "MatMul", "convert", ...), so the profile's per-op table is a
 * per-kernel profile without nsys or ncu. Replaying graphs keeps the host's
 * launch work (cuDNN and cuBLASLt calls) out of the times, as in a real run;
 * what is lost is the overlap between neighbouring steps, and each replay
 * adds a launch gap of a few microseconds. So the whole plan is then also
 * replayed as one CUDA graph and timed, reported apart (time_whole). */
#ifdef AIT_HAVE_CUDA

#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_impl.h"
#include "runtime/observe.h"

ait_status cu_time(cu_state *s, ait_status (*fn)(void *arg), void *arg, int reps, float *ms) {
  float t[16];
  reps = reps < 1 ? 1 : reps > 16 ? 16 : reps;
  AIT_TRY(fn(arg)); /* warm-up */
  for (int r = 0; r < reps; r++) {
    AIT_TRY(cu_check(cudaEventRecord(s->ev[0], s->stream), "timing"));
    ait_status st = fn(arg);
    if (st) {
      cudaStreamSynchronize(s->stream);
      return st;
    }
    AIT_TRY(cu_check(cudaEventRecord(s->ev[1], s->stream), "timing"));
    AIT_TRY(cu_check(cudaEventSynchronize(s->ev[1]), "timing"));
    AIT_TRY(cu_check(cudaEventElapsedTime(&t[r], s->ev[0], s->ev[1]), "timing"));
  }
  for (int i = 1; i < reps; i++) /* insertion sort: reps is small */
    for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
      float x = t[j];
      t[j] = t[j - 1];
      t[j - 1] = x;
    }
  *ms = t[reps / 2];
  return AIT_OK;
}

static ait_status run_steps(cu_state *s, cu_plan *p) {
  for (int i = 0; i < p->n_steps; i++) {
    cu_step *st = &p->steps[i];
    if (!st->run) continue;
    ait_status r = st->run(s, p, st);
    if (r)
      return st->node >= 0 ? ait_err_prefix(r, "%s", ait_node_desc(&p->pg->nodes[st->node])) : r;
  }
  return AIT_OK;
}

/* Step i of p as a CUDA graph of its own, or NULL when it cannot be. */
static cudaGraphExec_t step_graph(cu_state *s, cu_plan *p, int i) {
  if (!p->step_exec && !(p->step_exec = calloc((size_t)p->n_steps, sizeof *p->step_exec)))
    return NULL;
  if (p->step_exec[i]) return p->step_exec[i];
  cudaGraph_t g = NULL;
  if (cudaStreamBeginCapture(s->stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
    cudaGetLastError();
    return NULL;
  }
  ait_status st = p->steps[i].run(s, p, &p->steps[i]);
  cudaError_t e = cudaStreamEndCapture(s->stream, &g);
  if (st || e != cudaSuccess || !g || cudaGraphInstantiate(&p->step_exec[i], g, 0) != cudaSuccess) {
    p->step_exec[i] = NULL;
    cudaGetLastError();
    ait_err_clear();
  }
  if (g) cudaGraphDestroy(g);
  if (p->step_exec[i] && cudaGraphUpload(p->step_exec[i], s->stream) != cudaSuccess)
    cudaGetLastError();
  return p->step_exec[i];
}

static ait_status run_steps_timed(cu_state *s, cu_plan *p) {
  for (int i = 0; i < p->n_steps; i++) {
    cu_step *st = &p->steps[i];
    if (!st->run) continue;
    cudaGraphExec_t ge = step_graph(s, p, i);
    AIT_TRY(cu_check(cudaEventRecord(s->ev[0], s->stream), "profiling"));
    ait_status r =
        ge ? cu_check(cudaGraphLaunch(ge, s->stream), "profiling a step") : st->run(s, p, st);
    if (r)
      return st->node >= 0 ? ait_err_prefix(r, "%s", ait_node_desc(&p->pg->nodes[st->node])) : r;
    float ms = 0;
    AIT_TRY(cu_check(cudaEventRecord(s->ev[1], s->stream), "profiling"));
    AIT_TRY(cu_check(cudaEventSynchronize(s->ev[1]), "profiling"));
    AIT_TRY(cu_check(cudaEventElapsedTime(&ms, s->ev[0], s->ev[1]), "profiling"));
    ait_node shown;
    memset(&shown, 0, sizeof shown);
    shown.name = st->node >= 0 ? p->pg->nodes[st->node].name : (char *)"(layout and type glue)";
    shown.op_type = (char *)st->what;
    shown.domain = (char *)"";
    ait_observe_node(&shown, ms * 1e-3);
  }
  return AIT_OK;
}

static bool capture(cu_state *s, cu_plan *p);
static ait_status upload(cu_state *s, cu_plan *p, const ait_tensor *const *in, int n_in);

/* The whole plan replayed as one CUDA graph, timed with events and reported
 * under the op type "=graph replay" (a leading '=': not a step, kept out of
 * the profile's per-step sum): the device time of a real run, with the
 * overlap and launch gaps the per-step replays leave out. Called after the
 * run's outputs are downloaded, with the inputs uploaded again (the arena
 * reuses their bytes once read). */
static ait_status time_whole(cu_state *s, cu_plan *p, const ait_tensor *const *in, int n_in) {
  if (!s->o.graphs || p->graph_failed || p->n_steps == 0) return AIT_OK;
  if (!p->gexec) p->graph_failed = !capture(s, p);
  if (!p->gexec) return AIT_OK;
  AIT_TRY(upload(s, p, in, n_in));
  float ms = 0;
  AIT_TRY(cu_check(cudaEventRecord(s->ev[0], s->stream), "profiling"));
  AIT_TRY(cu_check(cudaGraphLaunch(p->gexec, s->stream), "launching the CUDA graph"));
  AIT_TRY(cu_check(cudaEventRecord(s->ev[1], s->stream), "profiling"));
  AIT_TRY(cu_check(cudaEventSynchronize(s->ev[1]), "profiling"));
  AIT_TRY(cu_check(cudaEventElapsedTime(&ms, s->ev[0], s->ev[1]), "profiling"));
  ait_node shown;
  memset(&shown, 0, sizeof shown);
  shown.name = (char *)"(the whole plan)";
  shown.op_type = (char *)"=graph replay";
  shown.domain = (char *)"";
  ait_observe_node(&shown, ms * 1e-3);
  return AIT_OK;
}

/* Capture the steps into a CUDA graph; false (and nothing kept) when any
 * step refuses to be captured, so the plan keeps running step by step. */
static bool capture(cu_state *s, cu_plan *p) {
  if (cudaStreamBeginCapture(s->stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  ait_status st = run_steps(s, p);
  cudaGraph_t g = NULL;
  cudaError_t e = cudaStreamEndCapture(s->stream, &g);
  if (st || e != cudaSuccess || !g) {
    if (g) cudaGraphDestroy(g);
    cudaGetLastError();
    ait_err_clear();
    return false;
  }
  if (cudaGraphInstantiate(&p->gexec, g, 0) != cudaSuccess) {
    cudaGraphDestroy(g);
    cudaGetLastError();
    p->gexec = NULL;
    return false;
  }
  p->graph = g;
  return true;
}

ait_status cu_plan_run(cu_state *s, cu_plan *p) {
  if (ait_observing() && !s->dry) return run_steps_timed(s, p);
  if (!p->gexec && s->o.graphs && p->runs >= 1 && !p->graph_failed && p->n_steps > 0)
    p->graph_failed = !capture(s, p);
  if (p->gexec) return cu_check(cudaGraphLaunch(p->gexec, s->stream), "launching the CUDA graph");
  return run_steps(s, p);
}

static cu_plan *find_plan(cu_state *s, uint64_t h, const int64_t *sig, int n_sig) {
  for (int i = 0; i < s->n_plans; i++) {
    cu_plan *p = s->plans[i];
    if (p->hash == h && p->n_sig == n_sig && !memcmp(p->sig, sig, sizeof(int64_t) * (size_t)n_sig))
      return p;
  }
  return NULL;
}

/* The plan for these inputs, made and added when new. */
static ait_status get_plan(cu_state *s, const ait_tensor *const *in, int n_in, cu_plan **out) {
  int64_t *sig = malloc(sizeof(int64_t) * (size_t)cu_signature_cap(in, n_in));
  if (!sig) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
  int n_sig = 0;
  uint64_t h = cu_signature(s->g, in, n_in, sig, &n_sig);
  cu_plan *p = find_plan(s, h, sig, n_sig);
  free(sig);
  if (!p) {
    AIT_TRY(cu_plan_create(s, in, n_in, &p));
    if (s->n_plans == CU_MAX_PLANS) {
      int lru = 0;
      for (int i = 1; i < s->n_plans; i++)
        if (s->plans[i]->used < s->plans[lru]->used) lru = i;
      cu_plan_free(s->plans[lru]);
      s->plans[lru] = s->plans[--s->n_plans];
    }
    s->plans[s->n_plans++] = p;
  }
  p->used = ++s->tick;
  *out = p;
  return AIT_OK;
}

/* Bytes one output takes in the plan's page-locked block. */
static int64_t out_slot(int64_t bytes) { return (bytes + 255) / 256 * 256; }

/* The plan's page-locked output block, allocated on first use; NULL (and
 * not asked again) when the outputs are empty, would take the state past
 * CU_PINNED_MAX, or the allocation fails. Downloads into page-locked memory
 * run at the bus's speed and need no staging copy: 12.6 MB of BERT-base
 * batch 32 output took ~1 ms host to host into a new pageable tensor. */
static uint8_t *pinned_outputs(cu_state *s, cu_plan *p) {
  if (p->hout || p->hout_failed) return p->hout;
  p->hout_failed = true;
  int64_t need = 0, held = 0;
  for (int k = 0; k < p->pg->n_outputs; k++)
    if (p->out_t[k] >= 0) need += out_slot(p->t[p->out_t[k]].bytes);
  for (int i = 0; i < s->n_plans; i++)
    held += s->plans[i]->hout_bytes;
  if (need == 0 || held + need > CU_PINNED_MAX) return NULL;
  if (cudaHostAlloc(&p->hout, (size_t)need, cudaHostAllocDefault) != cudaSuccess) {
    cudaGetLastError();
    p->hout = NULL;
    return NULL;
  }
  p->hout_bytes = need;
  p->hout_failed = false;
  return p->hout;
}

/* ---- device-memory I/O (include/aitune.h, "device memory") --------------- */

ait_status cu_set_io(cu_state *s, const ait_backend_io *io) {
  ait_tensor_view *b = NULL;
  if (io->bound && io->n_bound > 0) {
    if (io->n_bound < s->g->n_outputs)
      return ait_err(AIT_E_INVALID_ARG, "cuda: %d bound outputs for %d outputs", io->n_bound,
                     s->g->n_outputs);
    b = malloc(sizeof *b * (size_t)io->n_bound);
    if (!b) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
    memcpy(b, io->bound, sizeof *b * (size_t)io->n_bound);
  }
  free(s->bound);
  s->bound = b;
  s->io = *io;
  s->io.bound = b;
  if (!io->time_device) s->last_ms = -1;
  return AIT_OK;
}

double cu_last_device_ms(const cu_state *s) { return s->io.time_device ? s->last_ms : -1; }

/* A device pointer of the caller: on this state's device? (host memory and
 * another GPU's are refused; a pointer the driver does not know is taken
 * for the caller's word, as cudaMemcpy will then fail and say so) */
static ait_status check_device_ptr(const cu_state *s, const void *ptr, int device, const char *what,
                                   int i) {
  if (device != s->o.device)
    return ait_err(AIT_E_INVALID_ARG, "cuda: %s %d is on CUDA device %d, this model runs on %d",
                   what, i, device, s->o.device);
  struct cudaPointerAttributes a;
  if (cudaPointerGetAttributes(&a, ptr) != cudaSuccess) {
    cudaGetLastError();
    return AIT_OK;
  }
  if (a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged) {
    if (a.device != s->o.device)
      return ait_err(AIT_E_INVALID_ARG,
                     "cuda: %s %d says device %d, but its memory is on device %d", what, i,
                     s->o.device, a.device);
    return AIT_OK;
  }
  return ait_err(AIT_E_INVALID_ARG, "cuda: %s %d says CUDA device memory, but %p is host memory",
                 what, i, ptr);
}

/* Output k into the caller's bound buffer (host or device: the driver
 * knows which from the address). */
static ait_status download_bound(cu_state *s, const cu_tensor *t, int k, ait_tensor **out) {
  const ait_tensor_view *b = &s->bound[k];
  bool same = b->dtype == t->dt && b->rank == t->rank &&
              !memcmp(b->dims, t->dims, sizeof(int64_t) * (size_t)t->rank);
  if (!same) {
    char a[128], c[128];
    return ait_err(AIT_E_SHAPE, "cuda: output %d is %s %s, but its bound buffer is %s %s", k,
                   ait_dtype_name(t->dt), ait_shape_str(t->rank, t->dims, a, sizeof a),
                   ait_dtype_name(b->dtype), ait_shape_str(b->rank, b->dims, c, sizeof c));
  }
  if (b->mem == AIT_MEM_CUDA) AIT_TRY(check_device_ptr(s, b->data, b->device, "bound output", k));
  if (!(out[k] = ait_tensor_wrap(b->dtype, b->rank, b->dims, b->data)))
    return ait_err_prefix(AIT_E_NOMEM, "cuda: output %d", k);
  out[k]->mem = b->mem;
  out[k]->device = b->device;
  if (t->bytes > 0)
    AIT_TRY(
        cu_check(cudaMemcpyAsync(b->data, t->ptr, (size_t)t->bytes, cudaMemcpyDefault, s->stream),
                 "writing an output into its bound buffer"));
  return AIT_OK;
}

/* Outputs as tensors over the plan's page-locked block (borrowed: valid
 * until the next infer, deactivate or destroy of the state), or as new
 * tensors where there is no block; into the caller's buffers where bound;
 * as views of the plan's device arena (valid as long) when the session asks
 * for outputs on the device. */
static ait_status download(cu_state *s, cu_plan *p, ait_tensor **out) {
  const ait_graph *g = p->pg;
  bool on_device = s->io.out_mem == AIT_MEM_CUDA;
  uint8_t *host = on_device ? NULL : pinned_outputs(s, p);
  int64_t off = 0;
  for (int k = 0; k < g->n_outputs; k++) {
    if (p->out_t[k] < 0) {
      const ait_tensor *init = g->values[g->outputs[k]].init;
      if (!init || !(out[k] = ait_tensor_clone(init)))
        return ait_err(AIT_E_NOMEM, "cuda: out of memory copying output %d", k);
      /* a constant output: the bound buffer or the device still get it */
      if (s->bound && s->bound[k].data) {
        cu_tensor c = {.dt = init->dtype,
                       .rank = init->rank,
                       .bytes = (int64_t)ait_tensor_nbytes(init),
                       .ptr = out[k]->data};
        memcpy(c.dims, init->dims, sizeof(int64_t) * (size_t)init->rank);
        ait_tensor *keep = out[k];
        ait_status st = download_bound(s, &c, k, out);
        if (!st) st = cu_check(cudaStreamSynchronize(s->stream), "writing a constant output");
        ait_tensor_free(keep);
        if (st) out[k] = NULL;
        AIT_TRY(st);
      }
      continue;
    }
    const cu_tensor *t = &p->t[p->out_t[k]];
    if (s->bound && s->bound[k].data) {
      AIT_TRY(download_bound(s, t, k, out));
      continue;
    }
    if (on_device) {
      if (!(out[k] = ait_tensor_wrap(t->dt, t->rank, t->dims, t->ptr)))
        return ait_err_prefix(AIT_E_NOMEM, "cuda: output %d", k);
      out[k]->mem = AIT_MEM_CUDA;
      out[k]->device = s->o.device;
      continue;
    }
    out[k] = host ? ait_tensor_wrap(t->dt, t->rank, t->dims, host + off)
                  : ait_tensor_new(t->dt, t->rank, t->dims);
    if (!out[k]) return ait_err_prefix(AIT_E_NOMEM, "cuda: output %d", k);
    off += out_slot(t->bytes);
    if (t->bytes > 0)
      AIT_TRY(cu_check(cudaMemcpyAsync(out[k]->data, t->ptr, (size_t)t->bytes,
                                       cudaMemcpyDeviceToHost, s->stream),
                       "downloading an output"));
  }
  return AIT_OK;
}

static ait_status upload(cu_state *s, cu_plan *p, const ait_tensor *const *in, int n_in) {
  for (int i = 0; i < n_in; i++) {
    if (p->in_t[i] < 0) continue;
    const cu_tensor *t = &p->t[p->in_t[i]];
    if ((int64_t)ait_tensor_nbytes(in[i]) != t->bytes)
      return ait_err(AIT_E_INTERNAL, "cuda: input %d has %zu bytes, the plan expects %lld", i,
                     ait_tensor_nbytes(in[i]), (long long)t->bytes);
    bool dev = in[i]->mem == AIT_MEM_CUDA;
    if (dev) AIT_TRY(check_device_ptr(s, in[i]->data, in[i]->device, "input", i));
    /* a device input costs one copy on the device into the slot the
     * captured CUDA graph reads (its addresses are fixed at capture) */
    if (t->bytes > 0)
      AIT_TRY(cu_check(cudaMemcpyAsync(t->ptr, in[i]->data, (size_t)t->bytes,
                                       dev ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice,
                                       s->stream),
                       dev ? "copying a device input" : "uploading an input"));
  }
  return AIT_OK;
}

static ait_status run_once(cu_state *s, const ait_tensor *const *in, int n_in, ait_tensor **out) {
  AIT_TRY(cu_state_open(s));
  cu_plan *p = NULL;
  AIT_TRY(get_plan(s, in, n_in, &p));
  if (s->io.stream) { /* after what the caller queued on its stream */
    AIT_TRY(cu_check(cudaEventRecord(s->run_ev[2], (cudaStream_t)s->io.stream),
                     "recording the caller's stream"));
    AIT_TRY(cu_check(cudaStreamWaitEvent(s->stream, s->run_ev[2], 0),
                     "waiting for the caller's stream"));
  }
  AIT_TRY(upload(s, p, in, n_in));
  AIT_TRY(
      cu_check(cudaMemsetAsync(s->d_err, 0, sizeof(int), s->stream), "clearing the error flag"));
  bool timed = s->io.time_device && !ait_observing();
  if (timed) AIT_TRY(cu_check(cudaEventRecord(s->run_ev[0], s->stream), "timing the run"));
  AIT_TRY(cu_plan_run(s, p));
  if (timed) AIT_TRY(cu_check(cudaEventRecord(s->run_ev[1], s->stream), "timing the run"));
  AIT_TRY(download(s, p, out));
  int err = 0;
  AIT_TRY(cu_check(cudaMemcpyAsync(&err, s->d_err, sizeof err, cudaMemcpyDeviceToHost, s->stream),
                   "reading the error flag"));
  AIT_TRY(cu_check(cudaStreamSynchronize(s->stream), "running the model"));
  p->runs++;
  s->last_ms = -1;
  if (timed)
    AIT_TRY(
        cu_check(cudaEventElapsedTime(&s->last_ms, s->run_ev[0], s->run_ev[1]), "timing the run"));
  if (err == 2)
    return ait_err(AIT_E_RUNTIME, "cuda: a RotaryEmbedding position id is out of the caches' rows");
  if (err) return ait_err(AIT_E_RUNTIME, "cuda: a Gather index is out of range");
  if (ait_observing() && !s->dry) return time_whole(s, p, in, n_in);
  return AIT_OK;
}

ait_status cu_infer(cu_state *s, const ait_tensor *const *in, int n_in, ait_tensor **out) {
  for (int k = 0; k < s->g->n_outputs; k++)
    out[k] = NULL;
  if (n_in != s->g->n_inputs)
    return ait_err(AIT_E_INVALID_ARG, "cuda: the model takes %d inputs, got %d", s->g->n_inputs,
                   n_in);
  for (int i = 0; i < n_in; i++)
    if (!in[i] || in[i]->kind != AIT_KIND_TENSOR)
      return ait_err(AIT_E_INVALID_ARG, "cuda: input %d is not a tensor", i);
  ait_status st = run_once(s, in, n_in, out);
  if (st) {
    if (s->stream) cudaStreamSynchronize(s->stream);
    for (int k = 0; k < s->g->n_outputs; k++) {
      ait_tensor_free(out[k]);
      out[k] = NULL;
    }
  }
  return st;
}

#endif
