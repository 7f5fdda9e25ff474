/* Tensors: a dense, row-major buffer with a dtype and a shape.
 *
 * A tensor either owns its data (allocated by ait_tensor_new, freed with the
 * tensor) or borrows it (ait_tensor_wrap: caller memory, e.g. a session
 * input, never freed here). String tensors hold `char *` elements, each owned
 * by the tensor. Sequences are a tensor of kind AIT_KIND_SEQUENCE whose
 * `items` it owns; an optional with no value has kind AIT_KIND_NONE. */
#ifndef AIT_CORE_TENSOR_H
#define AIT_CORE_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aitune.h"
#include "core/dtype.h"

typedef enum ait_kind {
  AIT_KIND_TENSOR = 0,
  AIT_KIND_SEQUENCE = 1, /* items[0..n_items) are tensors of dtype `dtype` */
  AIT_KIND_NONE = 2      /* an optional without a value */
} ait_kind;

typedef struct ait_tensor {
  ait_kind kind;
  ait_dtype dtype;
  int rank;
  int64_t dims[AIT_MAX_RANK];
  void *data;                /* numel * elem size bytes; NULL when numel == 0 is fine */
  bool owns;                 /* data is freed with the tensor */
  ait_mem_kind mem;          /* where data lives: host, or a CUDA device (session
                                inputs and outputs of backends that take device
                                memory; never owned then) */
  int device;                /* CUDA device ordinal when mem is AIT_MEM_CUDA */
  struct ait_tensor **items; /* sequences only; owned */
  int n_items;
} ait_tensor;

/* Element size of dtype inside a tensor (sizeof(char *) for strings). */
size_t ait_elem_size(ait_dtype dt);
/* Product of dims; 1 for rank 0. */
/* Product of dims, saturating at INT64_MAX (never overflows). */
int64_t ait_shape_numel(int rank, const int64_t *dims);
static inline int64_t ait_tensor_numel(const ait_tensor *t) {
  return ait_shape_numel(t->rank, t->dims);
}
static inline size_t ait_tensor_nbytes(const ait_tensor *t) {
  return (size_t)ait_tensor_numel(t) * ait_elem_size(t->dtype);
}

/* New zero-filled tensor owning its data. On failure returns NULL and sets the
 * last error (AIT_E_NOMEM, or AIT_E_INVALID_ARG for a bad rank/dim/dtype). */
ait_tensor *ait_tensor_new(ait_dtype dt, int rank, const int64_t *dims);
/* Tensor header over borrowed memory `data` (not copied, not freed). */
ait_tensor *ait_tensor_wrap(ait_dtype dt, int rank, const int64_t *dims, void *data);
/* Deep copy (strings and sequence items included). NULL on failure. */
ait_tensor *ait_tensor_clone(const ait_tensor *t);
/* New empty sequence of element dtype dt. */
ait_tensor *ait_sequence_new(ait_dtype dt);
/* Append t to a sequence, taking ownership of t. */
ait_status ait_sequence_push(ait_tensor *seq, ait_tensor *t);
/* New "optional without value". */
ait_tensor *ait_none_new(void);
/* Free a tensor, its owned data, strings and items. NULL is fine. */
void ait_tensor_free(ait_tensor *t);

/* Row-major strides (in elements) of a shape. */
void ait_shape_strides(int rank, const int64_t *dims, int64_t *strides);
/* Numpy-style broadcast of two shapes into out (which may be a or b);
 * AIT_E_SHAPE when they clash. */
ait_status ait_shape_broadcast(int ra, const int64_t *a, int rb, const int64_t *b, int *rout,
                               int64_t *out);
/* Strides to read a tensor of shape (rank r, dims d) as if broadcast to the
 * output shape (rank ro, dims o): 0 along broadcast axes. */
void ait_broadcast_strides(int r, const int64_t *d, int ro, const int64_t *o, int64_t *strides);
/* "[1,3,224,224]" into buf. Returns buf. */
const char *ait_shape_str(int rank, const int64_t *dims, char *buf, size_t n);

#endif
