/* fp8 (e4m3) GEMM weights of the cuda backend, on the host: dtype=fp8's
 * per-tensor weights, dtype=fp8wo's per-channel ones and the file that
 * keeps fp8wo's bytes in a saved folder. Plain C with no CUDA headers and
 * compiled in every build, so tests check it on machines without a GPU.
 * The encoder is core's (ait_e4m3_encode, core/codec.h: round to nearest
 * even, saturating at 448), as quant's, so both backends quantize a weight to the same
 * bytes; the device kernel that quantizes activations (cuda_fp8.cu) uses
 * the hardware conversion with the same rounding and saturation. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_debug.h"
#include "core/codec.h"
#include "core/error.h"
#include "core/fileio.h"

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
 * header (32 bytes): magic "AITFP8W\0", uint32 version, uint32 count,
 *   uint64 checksum (FNV-1a, 64 bits) of every byte after the header,
 *   uint64 bytes after the header;
 * per weight: uint32 name length, the name (no NUL), uint32 layout (1 =
 *   [K, N], scales per column; 2 = [N, K], scales per row), int64 rows,
 *   int64 cols, rows * cols e4m3 codes, N float32 scales.
 * Little-endian, as the machines that run the backend. */

#define E4M3W_MAGIC "AITFP8W"
#define E4M3W_VERSION 1u
#define E4M3W_HEAD 32
#define E4M3W_NAME_MAX 4096

static uint64_t fnv1a(const uint8_t *p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

static int64_t channels(const ait_cuda_e4m3w *w) { return w->nk ? w->rows : w->cols; }

static size_t entry_bytes(const ait_cuda_e4m3w *w) {
  return 4 + strlen(w->name) + 4 + 16 + (size_t)(w->rows * w->cols) +
         sizeof(float) * (size_t)channels(w);
}

static uint8_t *put(uint8_t *at, const void *v, size_t n) {
  if (n) memcpy(at, v, n);
  return at + n;
}

ait_status ait_cuda_e4m3w_write(const char *path, const ait_cuda_e4m3w *w, int n) {
  size_t body = 0;
  for (int i = 0; i < n; i++) {
    if (w[i].rows < 1 || w[i].cols < 1 || strlen(w[i].name) > E4M3W_NAME_MAX)
      return ait_err(AIT_E_INVALID_ARG, "cuda: e4m3 weight %d cannot be saved", i);
    body += entry_bytes(&w[i]);
  }
  uint8_t *buf = malloc(E4M3W_HEAD + body + 1);
  if (!buf) return ait_err(AIT_E_NOMEM, "cuda: out of memory saving e4m3 weights");
  uint8_t *at = buf + E4M3W_HEAD;
  for (int i = 0; i < n; i++) {
    uint32_t len = (uint32_t)strlen(w[i].name), lay = w[i].nk ? 2u : 1u;
    at = put(at, &len, 4);
    at = put(at, w[i].name, len);
    at = put(at, &lay, 4);
    at = put(at, &w[i].rows, 8);
    at = put(at, &w[i].cols, 8);
    at = put(at, w[i].codes, (size_t)(w[i].rows * w[i].cols));
    at = put(at, w[i].scale, sizeof(float) * (size_t)channels(&w[i]));
  }
  uint32_t version = E4M3W_VERSION, count = (uint32_t)n;
  uint64_t sum = fnv1a(buf + E4M3W_HEAD, body), bytes = body;
  at = put(buf, E4M3W_MAGIC, 8);
  at = put(at, &version, 4);
  at = put(at, &count, 4);
  at = put(at, &sum, 8);
  put(at, &bytes, 8);
  ait_status st = ait_write_file_atomic(path, buf, E4M3W_HEAD + body);
  free(buf);
  return st;
}

void ait_cuda_e4m3w_free(ait_cuda_e4m3w *w, int n) {
  for (int i = 0; w && i < n; i++) {
    free(w[i].name);
    free(w[i].codes);
    free(w[i].scale);
  }
  free(w);
}

/* Entry i of the body at *at (advanced), checked against the bytes left. */
static ait_status read_entry(const char *path, int i, const uint8_t **at, const uint8_t *end,
                             ait_cuda_e4m3w *w) {
  uint32_t len = 0, lay = 0;
  const uint8_t *p = *at;
  if (end - p < 4) goto truncated;
  memcpy(&len, p, 4);
  p += 4;
  if (len == 0 || len > E4M3W_NAME_MAX || (size_t)(end - p) < (size_t)len + 20) goto truncated;
  if (!(w->name = malloc((size_t)len + 1))) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
  memcpy(w->name, p, len);
  w->name[len] = '\0';
  p += len;
  memcpy(&lay, p, 4);
  memcpy(&w->rows, p + 4, 8);
  memcpy(&w->cols, p + 12, 8);
  p += 20;
  if ((lay != 1 && lay != 2) || w->rows < 1 || w->cols < 1 || w->rows > (int64_t)1 << 31 ||
      w->cols > (int64_t)1 << 31 || strlen(w->name) != len)
    return ait_err(AIT_E_PARSE, "cuda: %s: weight %d is corrupted (layout %u, %lld x %lld)", path,
                   i, lay, (long long)w->rows, (long long)w->cols);
  w->nk = lay == 2;
  size_t nq = (size_t)(w->rows * w->cols), ns = (size_t)channels(w);
  if ((size_t)(end - p) < nq + sizeof(float) * ns) goto truncated;
  w->codes = malloc(nq);
  w->scale = malloc(sizeof(float) * ns);
  if (!w->codes || !w->scale) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
  memcpy(w->codes, p, nq);
  memcpy(w->scale, p + nq, sizeof(float) * ns);
  p += nq + sizeof(float) * ns;
  for (size_t c = 0; c < ns; c++)
    if (!(w->scale[c] > 0.0f) || !isfinite(w->scale[c]))
      return ait_err(AIT_E_PARSE, "cuda: %s: weight '%s' has a bad scale %g (channel %zu)", path,
                     w->name, (double)w->scale[c], c);
  *at = p;
  return AIT_OK;
truncated:
  return ait_err(AIT_E_PARSE, "cuda: %s is truncated (weight %d)", path, i);
}

ait_status ait_cuda_e4m3w_read(const char *path, ait_cuda_e4m3w **out, int *n_out) {
  *out = NULL;
  *n_out = 0;
  void *data = NULL;
  size_t size = 0;
  AIT_TRY(ait_read_file(path, &data, &size));
  const uint8_t *b = data;
  uint32_t version = 0, count = 0;
  uint64_t sum = 0, bytes = 0;
  ait_status st = AIT_OK;
  if (size < E4M3W_HEAD) {
    st = ait_err(AIT_E_PARSE, "cuda: %s is truncated (%zu bytes)", path, size);
  } else {
    memcpy(&version, b + 8, 4);
    memcpy(&count, b + 12, 4);
    memcpy(&sum, b + 16, 8);
    memcpy(&bytes, b + 24, 8);
    if (memcmp(b, E4M3W_MAGIC, 8))
      st = ait_err(AIT_E_PARSE, "cuda: %s is not an e4m3 weight file", path);
    else if (version != E4M3W_VERSION)
      st = ait_err(AIT_E_PARSE, "cuda: %s has version %u, this build reads %u", path, version,
                   E4M3W_VERSION);
    else if (bytes != size - E4M3W_HEAD)
      st = ait_err(AIT_E_PARSE, "cuda: %s is truncated or padded: %zu bytes, its header says %llu",
                   path, size, (unsigned long long)(bytes + E4M3W_HEAD));
    else if (fnv1a(b + E4M3W_HEAD, size - E4M3W_HEAD) != sum)
      st = ait_err(AIT_E_PARSE, "cuda: %s is corrupted (checksum mismatch)", path);
    else if (count > (size - E4M3W_HEAD) / 30)
      st = ait_err(AIT_E_PARSE, "cuda: %s is corrupted (%u weights)", path, count);
  }
  ait_cuda_e4m3w *w = NULL;
  if (!st && count && !(w = calloc(count, sizeof *w)))
    st = ait_err(AIT_E_NOMEM, "cuda: out of memory");
  const uint8_t *at = b + E4M3W_HEAD, *end = b + size;
  for (uint32_t i = 0; !st && i < count; i++)
    st = read_entry(path, (int)i, &at, end, &w[i]);
  if (!st && at != end)
    st = ait_err(AIT_E_PARSE, "cuda: %s is corrupted (%zu bytes after the last weight)", path,
                 (size_t)(end - at));
  free(data);
  if (st) {
    ait_cuda_e4m3w_free(w, (int)count);
    return st;
  }
  *out = w;
  *n_out = (int)count;
  return AIT_OK;
}
