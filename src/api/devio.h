/* Device-memory I/O shared by sessions and modules (include/aitune.h,
 * "device memory"): what the caller asked for (output placement, bound
 * output buffers, a CUDA stream), checked against what the running backend
 * can do, handed to it through set_io, and the host-side fallbacks
 * (bound host buffers on backends that only return their own memory). */
#ifndef AIT_API_DEVIO_H
#define AIT_API_DEVIO_H

#include "aitune.h"
#include "backends/backend.h"

typedef struct ait_api_io {
  ait_mem_kind out_mem;
  ait_tensor_view *bound; /* n_bound views (data NULL: not bound), owned array */
  int n_bound;
  void *stream; /* borrowed cudaStream_t */
  bool time_device;
} ait_api_io;

void ait_api_io_free(ait_api_io *io);
/* Validate and record a request; `iface` is the backend that runs (its
 * set_io says whether it takes device memory), `n_outputs` the model's. */
ait_status ait_api_io_set_out_mem(ait_api_io *io, const ait_backend_iface *iface, const char *desc,
                                  ait_mem_kind mem);
ait_status ait_api_io_bind(ait_api_io *io, const ait_backend_iface *iface, const char *desc,
                           int n_outputs, size_t i, const ait_tensor_view *buf);
ait_status ait_api_io_set_stream(ait_api_io *io, const ait_backend_iface *iface, const char *desc,
                                 void *stream);
/* Before a run: refuse device inputs a host-only backend cannot read, and
 * hand the request to a backend that takes device memory. */
ait_status ait_api_io_begin(const ait_api_io *io, const ait_backend_iface *iface, void *state,
                            const char *desc, const ait_tensor_view *in, size_t n_in);
/* After a run of a host-only backend: bound outputs are copied into the
 * caller's buffers and outs[k] then views them. */
ait_status ait_api_io_finish(const ait_api_io *io, const ait_backend_iface *iface,
                             ait_tensor **outs, int n_outputs);
/* Wrap caller view i as a borrowed tensor, keeping where it lives. */
ait_tensor *ait_api_wrap_view(const ait_tensor_view *v);

#endif
