/* fp8 (e4m3) GEMM weights of the cuda backend's dtype=fp8, on the host.
 * Plain C with no CUDA headers and compiled in every build, so tests check
 * it on machines without a GPU. The encoder is the quant backend's
 * (qnt_e4m3_encode: round to nearest even, saturating at 448), so both
 * backends quantize a weight to the same bytes; the device kernel that
 * quantizes activations (cuda_fp8.cu) uses the hardware conversion with the
 * same rounding and saturation. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "backends/cuda/cuda_debug.h"
#include "backends/quant/quant.h"

float ait_cuda_e4m3_weight(const float *w, int64_t rows, int64_t cols, bool transpose, uint8_t *q) {
  int64_t n = rows * cols;
  float amax = 0.0f;
  for (int64_t i = 0; i < n; i++) {
    float a = fabsf(w[i]);
    if (a > amax && isfinite(a)) amax = a;
  }
  /* per tensor: cuBLASLt's fp8 GEMMs on Hopper take one scale per operand */
  float scale = amax > 0.0f ? amax / QNT_E4M3_MAX : 1.0f, inv = 1.0f / scale;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++) {
      uint8_t b = qnt_e4m3_encode(w[r * cols + c] * inv);
      q[transpose ? c * rows + r : r * cols + c] = b;
    }
  return scale;
}
