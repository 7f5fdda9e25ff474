/* fp8 (e4m3) GEMM weights of the cuda backend, on the host: dtype=fp8's
 * per-tensor weights, dtype=fp8wo's per-channel ones and the file that
 * keeps fp8wo's bytes in a saved folder. Plain C with no CUDA headers and
 * compiled in every build, so tests check it on machines without a GPU.
 * The file is the saved-state format every backend writes (state_io.h).
 * The encoder is core's (ait_e4m3_encode, core/codec.h: round to nearest
 * even, saturating at 448), as quant's, so both backends quantize a weight to the same
 * bytes; the device kernel that quantizes activations (cuda_fp8.cu) uses
 * the hardware conversion with the same rounding and saturation. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/common/state_io.h"
#include "backends/cuda/cuda_debug.h"
#include "core/codec.h"
#include "core/error.h"

float ait_cuda_e4m3_weight(const float *w, int64_t rows, int64_t cols, bool transpose, uint8_t *q) {
  int64_t n = rows * cols;
  float amax = 0.0f;
  for (int64_t i = 0; i < n; i++) {
    float a = fabsf(w[i]);
    if (a > amax && isfinite(a)) amax = a;
  }
  /* per tensor: cuBLASLt's fp8 GEMMs on Hopper take one scale per operand */
  float scale = amax > 0.0f ? amax / AIT_E4M3_MAX : 1.0f, inv = 1.0f / scale;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++) {
      uint8_t b = ait_e4m3_encode(w[r * cols + c] * inv);
      q[transpose ? c * rows + r : r * cols + c] = b;
    }
  return scale;
}

/* Per output channel, as quant's fp8wo (qnt_weight_quantize with fp8,
 * channel granularity, absmax): scale = max |w| of the channel / 448 (1 for
 * a channel of zeros), code = encode(w / scale), a non-finite weight coded
 * as 0. */
void ait_cuda_e4m3_channels(const float *w, int64_t rows, int64_t cols, bool nk, uint8_t *q,
                            float *scale) {
  int64_t N = nk ? rows : cols;
  for (int64_t c = 0; c < N; c++)
    scale[c] = 0.0f; /* the channel's absmax first */
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++) {
      float a = fabsf(w[r * cols + c]);
      float *m = &scale[nk ? r : c];
      if (isfinite(a) && a > *m) *m = a;
    }
  for (int64_t c = 0; c < N; c++) {
    float s = scale[c] / AIT_E4M3_MAX;
    scale[c] = s > 0.0f && isfinite(s) ? s : 1.0f;
  }
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++) {
      float v = w[r * cols + c];
      q[r * cols + c] = ait_e4m3_encode(isfinite(v) ? v / scale[nk ? r : c] : 0.0f);
    }
}

/* ---- the saved file ---------------------------------------------------------
 *
 * The saved-state format (backends/common/state_io.h): owner "cuda_fp8w",
 * payload version E4M3W_VERSION, one section "weights": uint32 count, then
 * per weight: uint32 name length, the name (no NUL), uint32 layout (1 =
 * [K, N], scales per column; 2 = [N, K], scales per row), int64 rows,
 * int64 cols, rows * cols e4m3 codes, N float32 scales. The format checks
 * magic, versions, owner, size and checksum; each entry is checked here. */

#define E4M3W_OWNER "cuda_fp8w"
#define E4M3W_VERSION 2u /* 2: the saved-state format */
#define E4M3W_NAME_MAX 4096
#define E4M3W_ENTRY_MIN 30 /* bytes of the smallest entry */

static int64_t channels(const ait_cuda_e4m3w *w) { return w->nk ? w->rows : w->cols; }

ait_status ait_cuda_e4m3w_write(const char *path, const ait_cuda_e4m3w *w, int n) {
  for (int i = 0; i < n; i++)
    if (w[i].rows < 1 || w[i].cols < 1 || strlen(w[i].name) > E4M3W_NAME_MAX)
      return ait_err(AIT_E_INVALID_ARG, "cuda: e4m3 weight %d cannot be saved", i);
  ait_state_out o;
  ait_state_out_init(&o, E4M3W_OWNER, E4M3W_VERSION);
  ait_state_out_section(&o, "weights");
  ait_state_out_u32(&o, (uint32_t)n);
  for (int i = 0; i < n; i++) {
    uint32_t len = (uint32_t)strlen(w[i].name), lay = w[i].nk ? 2u : 1u;
    ait_state_out_u32(&o, len);
    ait_state_out_put(&o, w[i].name, len);
    ait_state_out_u32(&o, lay);
    ait_state_out_i64(&o, w[i].rows);
    ait_state_out_i64(&o, w[i].cols);
    ait_state_out_put(&o, w[i].codes, (size_t)(w[i].rows * w[i].cols));
    ait_state_out_put(&o, w[i].scale, sizeof(float) * (size_t)channels(&w[i]));
  }
  return ait_state_out_save(&o, path);
}

void ait_cuda_e4m3w_free(ait_cuda_e4m3w *w, int n) {
  for (int i = 0; w && i < n; i++) {
    free(w[i].name);
    free(w[i].codes);
    free(w[i].scale);
  }
  free(w);
}

/* Entry i of the section at r, checked against the bytes left. */
static ait_status read_entry(ait_state_rd *r, int i, ait_cuda_e4m3w *w) {
  uint32_t len = 0, lay = 0;
  char what[96];
  if (!ait_state_get(r, &len, 4) || len == 0 || len > E4M3W_NAME_MAX ||
      ait_state_left(r) < (size_t)len + 20)
    goto truncated;
  if (!(w->name = malloc((size_t)len + 1))) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
  ait_state_get(r, w->name, len);
  w->name[len] = '\0';
  ait_state_get(r, &lay, 4);
  ait_state_get(r, &w->rows, 8);
  ait_state_get(r, &w->cols, 8);
  if ((lay != 1 && lay != 2) || w->rows < 1 || w->cols < 1 || w->rows > (int64_t)1 << 31 ||
      w->cols > (int64_t)1 << 31 || strlen(w->name) != len) {
    snprintf(what, sizeof what, "weight %d (layout %u, %lld x %lld)", i, lay, (long long)w->rows,
             (long long)w->cols);
    return ait_state_corrupt(r, what);
  }
  w->nk = lay == 2;
  size_t nq = (size_t)(w->rows * w->cols), ns = (size_t)channels(w);
  if (ait_state_left(r) < nq + sizeof(float) * ns) goto truncated;
  w->codes = malloc(nq);
  w->scale = malloc(sizeof(float) * ns);
  if (!w->codes || !w->scale) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
  ait_state_get(r, w->codes, nq);
  ait_state_get(r, w->scale, sizeof(float) * ns);
  for (size_t c = 0; c < ns; c++)
    if (!(w->scale[c] > 0.0f) || !isfinite(w->scale[c])) {
      snprintf(what, sizeof what, "weight %d has a bad scale %g (channel %zu)", i,
               (double)w->scale[c], c);
      return ait_state_corrupt(r, what);
    }
  return AIT_OK;
truncated:
  snprintf(what, sizeof what, "weight %d is truncated", i);
  return ait_state_corrupt(r, what);
}

ait_status ait_cuda_e4m3w_read(const char *path, ait_cuda_e4m3w **out, int *n_out) {
  *out = NULL;
  *n_out = 0;
  ait_state_in in;
  AIT_TRY(ait_state_open(&in, path, E4M3W_OWNER, E4M3W_VERSION));
  ait_state_rd r;
  uint32_t count = 0;
  ait_status st = ait_state_section(&in, "weights", &r);
  if (!st && (!ait_state_get(&r, &count, 4) || count > ait_state_left(&r) / E4M3W_ENTRY_MIN))
    st = ait_state_corrupt(&r, "a bad weight count");
  ait_cuda_e4m3w *w = NULL;
  if (!st && count && !(w = calloc(count, sizeof *w)))
    st = ait_err(AIT_E_NOMEM, "cuda: out of memory");
  for (uint32_t i = 0; !st && i < count; i++)
    st = read_entry(&r, (int)i, &w[i]);
  if (!st) st = ait_state_end(&r);
  st = ait_state_close(&in, st);
  if (st) {
    ait_cuda_e4m3w_free(w, (int)count);
    return st;
  }
  *out = w;
  *n_out = (int)count;
  return AIT_OK;
}
