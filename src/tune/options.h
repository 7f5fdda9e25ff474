/* The tuning options (ait_tune_options) as data: one row per field, saying
 * where it lies in the struct (struct_size checks) and how it enters the
 * decision cache key, or why it does not. The table is the one place a new
 * option is declared to the library; tests/test_tune.c walks it. */
#ifndef AIT_TUNE_OPTIONS_H
#define AIT_TUNE_OPTIONS_H

#include <stddef.h>

#include "aitune.h"

/* How a field's value is written into the cache key. */
typedef enum ait_key_kind {
  AIT_KEY_NONE = 0,  /* not in the key: the row's not_in_key says why */
  AIT_KEY_PART,      /* read with another row (n_backends with backends): part_of names it */
  AIT_KEY_INT,       /* an int */
  AIT_KEY_ENUM,      /* an enum (int-sized) */
  AIT_KEY_DBL,       /* a double, all 17 digits */
  AIT_KEY_PRECISION, /* the precision policy: NULL and "fp32" are one */
  AIT_KEY_BACKENDS,  /* the list (with n_backends); a config=FILE by its contents */
  AIT_KEY_BATCHES,   /* the list (with n_batch_sizes) */
  AIT_KEY_FILTER,    /* a caller's function (with node_filter_user): by address */
  AIT_KEY_MEMORY     /* the pressure level the reading gives (or the machine's now) */
} ait_key_kind;

typedef struct ait_option_row {
  const char *name;       /* the field's name in ait_tune_options */
  size_t off, size;       /* where it lies */
  ait_key_kind key;       /* how it enters the decision cache key */
  const char *part_of;    /* AIT_KEY_PART: the row that reads it */
  const char *not_in_key; /* AIT_KEY_NONE: why it cannot change a decision */
} ait_option_row;

/* Every field of ait_tune_options, in order (static table; *n its length). */
const ait_option_row *ait_option_rows(size_t *n);

/* This library's defaults, in a struct of its own size. */
void ait_tune_defaults(ait_tune_options *o);

/* AIT_OK when size can be an ait_tune_options' struct_size (not 0, not
 * absurd, not ending inside a field); else AIT_E_INVALID_ARG saying why. */
ait_status ait_tune_options_check_size(size_t size);

/* The defaults into the first struct_size bytes of *o (a checked size;
 * bytes past this library's fields zeroed), struct_size set. */
void ait_tune_options_fill(ait_tune_options *o, size_t struct_size);

/* The caller's options in this library's struct: the fields within their
 * struct_size, the defaults past it (in may be NULL: all defaults). Refuses
 * a struct_size that cannot be one, and bytes set past this library's
 * fields (a newer header's options). */
ait_status ait_tune_options_take(const ait_tune_options *in, ait_tune_options *o);

/* AIT_OK when every option is in range (strategy, numbers, lists), else
 * AIT_E_INVALID_ARG naming the first that is not. */
ait_status ait_tune_options_check(const ait_tune_options *o);

/* The largest batch size a tune may ask for (what a decision.json may hold). */
#define AIT_MAX_TUNE_BATCH (1 << 20)

#endif
