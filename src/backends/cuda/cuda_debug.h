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

/* dtype=fp8wo weights (cuda_fp8.c): w [rows, cols] float32 whose output
 * channels are its rows when nk (a Gemm weight under transB, [N, K]), else
 * its columns ([K, N]), quantized to e4m3 with one scale per output channel
 * (absmax / 448; a non-finite weight codes as 0): the bytes quant's fp8wo
 * makes. q receives rows * cols codes in w's own layout, scale the N scales
 * (w ~= scale[channel] * e4m3(q)). */
void ait_cuda_e4m3_channels(const float *w, int64_t rows, int64_t cols, bool nk, uint8_t *q,
                            float *scale);

/* One fp8wo weight as a saved folder keeps it (cuda_fp8w.bin). */
typedef struct ait_cuda_e4m3w {
  char *name;         /* the weight's value name in the saved graph */
  bool nk;            /* [N, K], scales per row; else [K, N], scales per column */
  int64_t rows, cols; /* the weight's dims */
  uint8_t *codes;     /* rows * cols e4m3 codes, the weight's own layout */
  float *scale;       /* one per output channel */
} ait_cuda_e4m3w;

/* Write n weights to path (atomically) in the saved-state format
 * (backends/common/state_io.h, owner "cuda_fp8w"). */
ait_status ait_cuda_e4m3w_write(const char *path, const ait_cuda_e4m3w *w, int n);
/* Read path whole into *w (new array of *n, free with ait_cuda_e4m3w_free):
 * AIT_E_PARSE naming the file for anything state_io refuses (magic,
 * versions, owner, size, checksum, sections) or an entry out of bounds. */
ait_status ait_cuda_e4m3w_read(const char *path, ait_cuda_e4m3w **w, int *n);
void ait_cuda_e4m3w_free(ait_cuda_e4m3w *w, int n);

#endif
