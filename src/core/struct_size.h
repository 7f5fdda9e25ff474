/* The struct_size rules of the public option structs (ait_tune_options,
 * ait_load_options), written once: a caller's struct_size must be set, not
 * absurd, and never end inside one of the library's fields. */
#ifndef AIT_CORE_STRUCT_SIZE_H
#define AIT_CORE_STRUCT_SIZE_H

#include <stddef.h>

#include "aitune.h"

/* Where one field of an option struct lies. A table of these (or of rows
 * that begin with these three members, at `stride` bytes apart) lists every
 * field in order. */
typedef struct ait_field_span {
  const char *name;
  size_t off, size;
} ait_field_span;

/* A struct_size larger than this is not a size (a struct never initialised). */
#define AIT_MAX_OPTIONS_SIZE 4096

/* AIT_OK when size can be the struct_size of `type` (`what` in words, its
 * init function `init`, this library's size `ours`); else AIT_E_INVALID_ARG
 * saying why. */
ait_status ait_struct_size_check(const char *type, const char *what, const char *init, size_t size,
                                 size_t ours, const void *fields, size_t n_fields, size_t stride);

#endif
