/* libFuzzer target: model bytes -> ait_model_load_buffer -> what `aitune
 * info` reads (inputs, outputs, per-node FLOPs, subgraphs included) -> an
 * eager session run on zero inputs of the declared shapes (unknown dims = 1;
 * models with inputs of more than 2^16 elements, or with Loop/Scan nodes,
 * are not run). Any crash, leak or
 * sanitizer report fails; error statuses are the expected outcome. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aitune.h"
#include "api/model_impl.h"
#include "ir/flops.h"

/* Big allocations fail with NULL (the library reports "out of memory")
 * instead of being reported by the fuzzer: a model may legally ask for more
 * memory than the fuzzing machine has, and filling a tensor of more than
 * 64 MB (as the model asks) is slow under the sanitizers. */
const char *__asan_default_options(void) {
  return "allocator_may_return_null=1:max_allocation_size_mb=64:detect_leaks=1";
}

/* FLOPs as `aitune info` sums them; *loops counts Loop and Scan nodes. */
static double walk(const ait_graph *g, int *loops) {
  double flops = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    flops += ait_node_flops(g, &g->nodes[i]);
    *loops += !strcmp(g->nodes[i].op_type, "Loop") || !strcmp(g->nodes[i].op_type, "Scan");
    for (int k = 0; k < g->nodes[i].n_attrs; k++)
      if (g->nodes[i].attrs[k].g) flops += walk(g->nodes[i].attrs[k].g, loops);
  }
  return flops;
}

static void run_zeros(const ait_model *m) {
  size_t n = ait_model_num_inputs(m);
  if (n > 16) return;
  ait_tensor_view views[16] = {{0}};
  void *bufs[16] = {0};
  bool ok = true;
  for (size_t i = 0; i < n && ok; i++) {
    ait_tensor_info info;
    if (ait_model_input(m, i, &info) || info.rank < 0 || ait_dtype_size(info.dtype) == 0) {
      ok = false;
      break;
    }
    views[i].dtype = info.dtype;
    views[i].rank = info.rank;
    int64_t numel = 1;
    for (int k = 0; k < info.rank && ok; k++) {
      views[i].dims[k] = info.dims[k] < 0 ? 1 : info.dims[k];
      if (views[i].dims[k] > (1 << 16) ||
          (numel *= views[i].dims[k] ? views[i].dims[k] : 1) > (1 << 16))
        ok = false;
    }
    if (ok) ok = (bufs[i] = views[i].data = calloc((size_t)numel, ait_dtype_size(info.dtype)));
  }
  ait_session *s = NULL;
  if (ok && ait_session_create(m, "eager", &s) == AIT_OK) {
    if (ait_session_run(s, views, n) == AIT_OK)
      for (size_t i = 0; i < ait_model_num_outputs(m); i++) {
        ait_tensor_view out;
        if (ait_session_output(s, i, &out) == AIT_OK && out.data && out.rank > 0)
          (void)*(volatile char *)out.data;
      }
    ait_session_free(s);
  }
  for (size_t i = 0; i < n; i++)
    free(bufs[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ait_model *m = NULL;
  /* base_dir is a folder holding nothing, so external data always fails
   * cleanly rather than reading whatever the fuzzer's folder holds */
  if (ait_model_load_buffer(data, size, "/nonexistent-fuzz-dir", &m) != AIT_OK) return 0;
  for (size_t i = 0; i < ait_model_num_inputs(m) + ait_model_num_outputs(m); i++) {
    ait_tensor_info info;
    bool in = i < ait_model_num_inputs(m);
    if ((in ? ait_model_input(m, i, &info)
            : ait_model_output(m, i - ait_model_num_inputs(m), &info)) == AIT_OK)
      (void)strlen(info.name);
  }
  int loops = 0;
  volatile double f = walk(ait_model_graph(m), &loops);
  (void)f;
  /* a Loop runs as many times as the model says (2^63 is legal), so models
   * with loops are loaded and described but not run */
  if (!loops) run_zeros(m);
  ait_model_free(m);
  return 0;
}
