/* Pieces of `aitune publish` (cmd_publish.c): the Triton config, the
 * python-backend model.py, and folder copies. */
#ifndef AIT_CLI_PUBLISH_H
#define AIT_CLI_PUBLISH_H

#include <stdbool.h>
#include <stdio.h>

#include "aitune.h"

#define PUB_MAX_BATCHES 32

/* What config.pbtxt says about one model (all borrowed). */
typedef struct pub_config {
  const char *name;
  const char *source; /* the tuned folder, for the header comment */
  const ait_model *model;
  int max_batch_size; /* 0: no batching (inputs keep their first axis) */
  int preferred[PUB_MAX_BATCHES];
  int n_preferred; /* 0: no dynamic_batching block */
  long long queue_delay_us;
  int instances;
  const char *backend; /* "python" (model.py) or "aitune" (libtriton_aitune.so) */
} pub_config;

/* The TYPE_* name of a dtype, or NULL when Triton has none (complex). */
const char *pub_triton_type(ait_dtype dt);
/* Write config.pbtxt text for c to f. AIT_E_UNSUPPORTED (message set) for a
 * value Triton cannot declare: unknown rank, a complex dtype. */
ait_status pub_write_config(FILE *f, const pub_config *c);
/* The model.py text (NUL-terminated, static). */
extern const char pub_model_py[];

/* Copy the regular files and folders under src into dst (created; must not
 * exist). Links and other entries are refused: a tuned folder has none. */
ait_status pub_copy_tree(const char *src, const char *dst);
/* Remove path and everything under it; missing is fine. */
ait_status pub_remove_tree(const char *path);

#endif
