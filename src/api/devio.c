/* See devio.h. */
#include "api/devio.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/tensor.h"

void ait_api_io_free(ait_api_io *io) {
  free(io->bound);
  memset(io, 0, sizeof *io);
}

static const char *mem_name(ait_mem_kind m) {
  return m == AIT_MEM_HOST ? "host" : m == AIT_MEM_CUDA ? "CUDA device" : "unknown";
}

static ait_status no_device(const char *desc, const char *what) {
  return ait_err(AIT_E_UNSUPPORTED,
                 "%s takes host memory only: %s needs a backend that runs on the device (cuda)",
                 desc, what);
}

ait_status ait_api_io_set_out_mem(ait_api_io *io, const ait_backend_iface *iface, const char *desc,
                                  ait_mem_kind mem) {
  if (mem != AIT_MEM_HOST && mem != AIT_MEM_CUDA)
    return ait_err(AIT_E_INVALID_ARG, "unknown memory kind %d (AIT_MEM_HOST or AIT_MEM_CUDA)",
                   (int)mem);
  if (mem == AIT_MEM_CUDA && !iface->set_io) return no_device(desc, "outputs on the device");
  io->out_mem = mem;
  return AIT_OK;
}

ait_status ait_api_io_bind(ait_api_io *io, const ait_backend_iface *iface, const char *desc,
                           int n_outputs, size_t i, const ait_tensor_view *buf) {
  if (i >= (size_t)n_outputs)
    return ait_err(AIT_E_INVALID_ARG, "output %zu does not exist (the model has %d)", i, n_outputs);
  if (buf) {
    if (buf->rank < 0 || buf->rank > AIT_MAX_RANK)
      return ait_err(AIT_E_INVALID_ARG, "bound output %zu: rank %d is outside 0..%d", i, buf->rank,
                     AIT_MAX_RANK);
    for (int k = 0; k < buf->rank; k++)
      if (buf->dims[k] < 0)
        return ait_err(AIT_E_INVALID_ARG, "bound output %zu: dim %d is negative", i, k);
    if (!buf->data)
      return ait_err(AIT_E_INVALID_ARG, "bound output %zu: data is NULL (unbind with NULL)", i);
    if (buf->mem != AIT_MEM_HOST && buf->mem != AIT_MEM_CUDA)
      return ait_err(AIT_E_INVALID_ARG, "bound output %zu: unknown memory kind %d", i,
                     (int)buf->mem);
    if (buf->mem == AIT_MEM_CUDA && !iface->set_io)
      return no_device(desc, "an output buffer on the device");
    if (ait_elem_size(buf->dtype) == 0 || buf->dtype == AIT_STRING)
      return ait_err(AIT_E_DTYPE, "bound output %zu: dtype %s cannot be bound", i,
                     ait_dtype_name(buf->dtype));
  }
  if (!io->bound) {
    if (!buf) return AIT_OK;
    io->bound = calloc((size_t)n_outputs, sizeof *io->bound);
    if (!io->bound) return ait_err(AIT_E_NOMEM, "out of memory");
    io->n_bound = n_outputs;
  }
  if (buf)
    io->bound[i] = *buf;
  else
    memset(&io->bound[i], 0, sizeof io->bound[i]);
  return AIT_OK;
}

ait_status ait_api_io_set_stream(ait_api_io *io, const ait_backend_iface *iface, const char *desc,
                                 void *stream) {
  if (stream && !iface->set_io) return no_device(desc, "a CUDA stream");
  io->stream = stream;
  return AIT_OK;
}

ait_status ait_api_io_begin(const ait_api_io *io, const ait_backend_iface *iface, void *state,
                            const char *desc, const ait_tensor_view *in, size_t n_in) {
  for (size_t i = 0; i < n_in; i++) {
    if (in[i].mem == AIT_MEM_HOST) continue;
    if (in[i].mem != AIT_MEM_CUDA)
      return ait_err(AIT_E_INVALID_ARG, "input %zu: unknown memory kind %d", i, (int)in[i].mem);
    if (!iface->set_io) {
      char what[64];
      snprintf(what, sizeof what, "input %zu in %s memory", i, mem_name(in[i].mem));
      return no_device(desc, what);
    }
  }
  if (!iface->set_io) return AIT_OK;
  ait_backend_io b = {io->out_mem, io->bound, io->n_bound, io->stream, io->time_device};
  return iface->set_io(state, &b);
}

ait_status ait_api_io_finish(const ait_api_io *io, const ait_backend_iface *iface,
                             ait_tensor **outs, int n_outputs) {
  if (iface->set_io || !io->bound) return AIT_OK; /* the backend wrote them itself */
  for (int k = 0; k < n_outputs && k < io->n_bound; k++) {
    const ait_tensor_view *b = &io->bound[k];
    if (!b->data) continue; /* not bound */
    ait_tensor *t = outs[k];
    if (!t || t->kind != AIT_KIND_TENSOR)
      return ait_err(AIT_E_UNSUPPORTED, "output %d is not a tensor: it cannot be bound", k);
    bool same = t->dtype == b->dtype && t->rank == b->rank &&
                !memcmp(t->dims, b->dims, sizeof(int64_t) * (size_t)t->rank);
    if (!same) {
      char want[128], got[128];
      return ait_err(AIT_E_SHAPE, "output %d is %s %s, but its bound buffer is %s %s", k,
                     ait_dtype_name(t->dtype), ait_shape_str(t->rank, t->dims, got, sizeof got),
                     ait_dtype_name(b->dtype), ait_shape_str(b->rank, b->dims, want, sizeof want));
    }
    ait_tensor *w = ait_tensor_wrap(b->dtype, b->rank, b->dims, b->data);
    if (!w) return ait_err(AIT_E_NOMEM, "out of memory");
    if (ait_tensor_nbytes(t)) memcpy(b->data, t->data, ait_tensor_nbytes(t));
    ait_tensor_free(t);
    outs[k] = w;
  }
  return AIT_OK;
}

ait_tensor *ait_api_wrap_view(const ait_tensor_view *v) {
  ait_tensor *t = ait_tensor_wrap(v->dtype, v->rank, v->dims, v->data);
  if (t) {
    t->mem = v->mem;
    t->device = v->device;
  }
  return t;
}
