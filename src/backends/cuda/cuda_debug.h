/* Test hook of the cuda backend that needs no GPU: plan a graph for given
 * inputs with every device call skipped (no uploads, no algorithms, fake
 * addresses), and describe the plan: its steps with their tensors, the
 * arena size. It runs the whole planner: the graph passes, shapes made
 * concrete, values folded on the host, lowering, layouts and liveness.
 * Plain C (no CUDA headers), so tests include it in any build. */
#ifndef AIT_BACKENDS_CUDA_DEBUG_H
#define AIT_BACKENDS_CUDA_DEBUG_H

#include <stdbool.h>
#include <stdint.h>

#include "backends/backend.h"

/* *text receives a new string (caller frees). AIT_E_UNSUPPORTED in a build
 * without CUDA. */
ait_status ait_cuda_dry_plan(const char *spec, const ait_graph *g, const ait_tensor *const *in,
                             int n_in, char **text);

/* dtype=fp8 weights (cuda_fp8.c, in every build): w [rows, cols] float32
 * quantized to e4m3 with one scale per tensor (absmax / 448), written to q
 * (rows * cols bytes) as [rows, cols], or as [cols, rows] when transpose;
 * returns the scale (w ~= scale * e4m3(q)). */
float ait_cuda_e4m3_weight(const float *w, int64_t rows, int64_t cols, bool transpose, uint8_t *q);

#endif
