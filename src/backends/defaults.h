/* What the library chooses when the caller names no backend, as data (rows
 * in src/backends/registry.c beside the backend table): the configurations
 * the tuner adds as candidates on its own, beyond each backend's variants,
 * and the backends a partition runs unsupported segments on. */
#ifndef AIT_BACKENDS_DEFAULTS_H
#define AIT_BACKENDS_DEFAULTS_H

#include "backends/backend.h"

/* When an added candidate joins a tune that names no backends. */
enum {
  AIT_ADD_UNDER_PRESSURE = 1u << 0, /* the memory policy asks for quantized candidates */
  AIT_ADD_REDUCED_INT8 = 1u << 1    /* reduced precision is allowed (--precision auto for a
                                       strategy after speed, or any) and the CPU has int8
                                       dot products (VNNI, AMX-INT8) */
};

typedef struct ait_added_candidate {
  const char *spec; /* a backend configuration ("quant:preset=int8wo") */
  unsigned when;    /* AIT_ADD_* bits: it joins when any of them holds */
} ait_added_candidate;

/* The added candidates, in the order they are tried (static; *n rows). */
const ait_added_candidate *ait_backend_added_candidates(int *n);

/* The configuration a partition runs the segments its backend refuses on:
 * the first available backend of the fallback order (native, then eager,
 * which is always there). */
void ait_backend_fallback(ait_backend_config *out);

#endif
