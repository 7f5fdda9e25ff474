#include "core/struct_size.h"

#include "core/error.h"

ait_status ait_struct_size_check(const char *type, const char *what, const char *init, size_t size,
                                 size_t ours, const void *fields, size_t n_fields, size_t stride) {
  if (size == 0)
    return ait_err(AIT_E_INVALID_ARG, "%s.struct_size is 0: fill the options with %s() first", type,
                   init);
  if (size < sizeof(size_t) || size > AIT_MAX_OPTIONS_SIZE)
    return ait_err(AIT_E_INVALID_ARG,
                   "%s.struct_size %zu is not the size of %s (this library's are %zu bytes): "
                   "fill them with %s()",
                   type, size, what, ours, init);
  for (size_t i = 0; i < n_fields; i++) {
    const ait_field_span *f = (const ait_field_span *)((const char *)fields + i * stride);
    if (size > f->off && size < f->off + f->size)
      return ait_err(AIT_E_INVALID_ARG,
                     "%s.struct_size %zu ends inside field %s (bytes %zu..%zu): fill the "
                     "options with %s()",
                     type, size, f->name, f->off, f->off + f->size - 1, init);
  }
  return AIT_OK;
}
