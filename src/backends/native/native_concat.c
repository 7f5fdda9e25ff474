/* Concat of any dtype but strings, along any axis: per row of the dims
 * before the axis, each input's block copied in turn, rows over the pool
 * (NHWC channel concats: one row per pixel). The output is the arena's,
 * where the reference kernel allocated one per run. Anything it does not
 * take (strings, mismatched inputs: the reference reports those) declines. */
#include <string.h>

#include "backends/native/native.h"

typedef struct concat_job {
  const ait_tensor *const *in;
  int n_in;
  char *y;
  int64_t outer, inner, per_task, row_bytes;
  size_t esz;
} concat_job;

static void concat_task(void *arg, int64_t t, int tid) {
  const concat_job *j = arg;
  int64_t r1 = (t + 1) * j->per_task < j->outer ? (t + 1) * j->per_task : j->outer;
  for (int64_t r = t * j->per_task; r < r1; r++) {
    char *o = j->y + r * j->row_bytes;
    for (int i = 0; i < j->n_in; i++) {
      const ait_tensor *x = j->in[i];
      size_t blk = (size_t)(ait_tensor_numel(x) / (j->outer ? j->outer : 1)) * j->esz;
      memcpy(o, (const char *)x->data + (size_t)r * blk, blk);
      o += blk;
    }
  }
}

ait_status nat_k_concat(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  if (n_in < 1 || !in[0] || in[0]->kind != AIT_KIND_TENSOR || in[0]->rank < 1 ||
      in[0]->dtype == AIT_STRING)
    return AIT_E_UNSUPPORTED;
  const ait_tensor *x = in[0];
  int64_t axis = ait_attr_int(n, "axis", n->opset < 4 ? 1 : 0);
  if (axis < 0) axis += x->rank;
  if (axis < 0 || axis >= x->rank) return AIT_E_UNSUPPORTED;
  size_t esz = ait_elem_size(x->dtype);
  if (!esz) return AIT_E_UNSUPPORTED;
  int64_t dims[AIT_MAX_RANK];
  memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
  dims[axis] = 0;
  for (int i = 0; i < n_in; i++) {
    const ait_tensor *t = in[i];
    if (!t || t->kind != AIT_KIND_TENSOR || t->dtype != x->dtype || t->rank != x->rank)
      return AIT_E_UNSUPPORTED;
    for (int k = 0; k < x->rank; k++)
      if (k != axis && t->dims[k] != x->dims[k]) return AIT_E_UNSUPPORTED;
    dims[axis] += t->dims[axis];
  }
  ait_tensor *Y;
  AIT_TRY(nat_output(r, 0, x->dtype, x->rank, dims, &Y));
  concat_job j = {in, n_in, Y->data, 1, 1, 0, 0, esz};
  for (int k = 0; k < axis; k++)
    j.outer *= dims[k];
  for (int k = (int)axis + 1; k < x->rank; k++)
    j.inner *= dims[k];
  j.row_bytes = dims[axis] * j.inner * (int64_t)esz;
  if (j.outer * j.row_bytes == 0) return AIT_OK;
  /* rows of at least ~64 KB a task */
  j.per_task = nat_chunk(r, j.outer, (65536 + j.row_bytes - 1) / j.row_bytes);
  nat_pool_run(nat_run_pool(r), (j.outer + j.per_task - 1) / j.per_task, concat_task, &j);
  return AIT_OK;
}
