/* Other float32 kernels of the native backend: MaxPool (2-D, no Indices),
 * GlobalAveragePool, Softmax over the last axis, LayerNormalization,
 * InstanceNormalization, BatchNormalization in inference mode (Transpose:
 * native_gather.c). Planes or rows are spread over the pool; statistics are
 * summed in double. */
#include <math.h>
#include <string.h>

#include "backends/native/native.h"
#include "ops/fused_impl.h"
#include "ops/nn_impl.h"

typedef struct rows_job {
  const ait_node *n;
  const float *x, *p0, *p1, *p2, *p3;
  float *y;
  int64_t rows, len, per_task, C;
  double eps;
  nn_win w;
  ait_act act; /* InstanceNormalization: none; FusedInstanceNorm: its activation */
} rows_job;

#define FOR_ROWS(j, t, row)                                                                        \
  for (int64_t row = (t) * (j)->per_task; row < ((t) + 1) * (j)->per_task && row < (j)->rows; row++)

/* ---- MaxPool ----------------------------------------------------------- */

NAT_CLONES static void maxpool_task(void *arg, int64_t t, int tid) {
  const rows_job *j = arg;
  const nn_win *w = &j->w;
  int64_t H = w->in[0], W = w->in[1], OH = w->out[0], OW = w->out[1];
  FOR_ROWS(j, t, plane) {
    const float *x = j->x + plane * H * W;
    float *y = j->y + plane * OH * OW;
    for (int64_t oh = 0; oh < OH; oh++) {
      /* only the taps inside the input: the kernel size is the model's */
      int64_t h0 = oh * w->s[0] - w->pb[0];
      int64_t i0 = nn_win_taps_below(h0, w->d[0], w->k[0], 0);
      int64_t i1 = nn_win_taps_below(h0, w->d[0], w->k[0], H);
      for (int64_t ow = 0; ow < OW; ow++) {
        float m = -INFINITY;
        bool any = false;
        int64_t w0 = ow * w->s[1] - w->pb[1];
        int64_t j0 = nn_win_taps_below(w0, w->d[1], w->k[1], 0);
        int64_t j1 = nn_win_taps_below(w0, w->d[1], w->k[1], W);
        for (int64_t ki = i0; ki < i1; ki++) {
          int64_t ih = h0 + ki * w->d[0];
          for (int64_t kj = j0; kj < j1; kj++) {
            int64_t iw = w0 + kj * w->d[1];
            float v = x[ih * W + iw];
            if (!any || v > m) m = v;
            any = true;
          }
        }
        y[oh * OW + ow] = m;
      }
    }
  }
}

ait_status nat_k_maxpool(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  const ait_tensor *X = in[0];
  if (!X || X->dtype != AIT_FLOAT32 || X->rank != 4) return AIT_E_UNSUPPORTED;
  rows_job j;
  memset(&j, 0, sizeof j);
  bool ceil_mode = ait_attr_int(n, "ceil_mode", 0) != 0;
  if (nn_win_conv(n, 2, X->dims + 2, NULL, ceil_mode, nn_pool_has_dilations(n), &j.w) != AIT_OK) {
    ait_err_clear();
    return AIT_E_UNSUPPORTED;
  }
  int64_t od[4] = {X->dims[0], X->dims[1], j.w.out[0], j.w.out[1]};
  ait_tensor *Y;
  AIT_TRY(nat_output(r, 0, AIT_FLOAT32, 4, od, &Y));
  j.x = X->data;
  j.y = Y->data;
  j.rows = od[0] * od[1];
  j.per_task = nat_chunk(r, j.rows, 1);
  nat_pool_run(nat_run_pool(r), (j.rows + j.per_task - 1) / j.per_task, maxpool_task, &j);
  return AIT_OK;
}

/* ---- GlobalAveragePool ----------------------------------------------------- */

static void gap_task(void *arg, int64_t t, int tid) {
  const rows_job *j = arg;
  FOR_ROWS(j, t, row) {
    const float *x = j->x + row * j->len;
    double s = 0.0;
    for (int64_t i = 0; i < j->len; i++)
      s += x[i];
    j->y[row] = (float)(s / (double)j->len);
  }
}

ait_status nat_k_gap(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  const ait_tensor *X = in[0];
  if (!X || X->dtype != AIT_FLOAT32 || X->rank < 3) return AIT_E_UNSUPPORTED;
  int64_t od[AIT_MAX_RANK];
  od[0] = X->dims[0];
  od[1] = X->dims[1];
  for (int i = 2; i < X->rank; i++)
    od[i] = 1;
  rows_job j;
  memset(&j, 0, sizeof j);
  j.rows = od[0] * od[1];
  j.len = j.rows ? ait_tensor_numel(X) / j.rows : 0;
  if (j.len == 0) return AIT_E_UNSUPPORTED;
  ait_tensor *Y;
  AIT_TRY(nat_output(r, 0, AIT_FLOAT32, X->rank, od, &Y));
  j.x = X->data;
  j.y = Y->data;
  j.per_task = nat_chunk(r, j.rows, 16384 / j.len + 1);
  nat_pool_run(nat_run_pool(r), (j.rows + j.per_task - 1) / j.per_task, gap_task, &j);
  return AIT_OK;
}

/* GlobalAveragePool of NHWC X (the layout pass's FusedGapNhwc): per image,
 * the pixels summed into a row of C doubles (channels innermost, so the
 * adds vectorise), then scaled. It replaces a Transpose back to NCHW plus
 * the NCHW pooling: MobileNetV2's 7x7x1280 tail, 0.02 + 0.02 ms. */
typedef struct gapn_job {
  const float *x;
  float *y;
  int64_t HW, C, chunk; /* channels per task */
  int64_t per_image;    /* tasks per image */
} gapn_job;

/* Channels of one block: per pixel GAPN_BLOCK adds of a fixed count, so
 * the double sums stay in vector registers (a row of 256 sums in memory
 * was loaded and stored back for every pixel: 1.2-1.8x slower on data in
 * cache, the same sums). */
#define GAPN_BLOCK 32

NAT_CLONES static void gapn_task(void *arg, int64_t t, int tid) {
  const gapn_job *j = arg;
  int64_t n = t / j->per_image, c0 = t % j->per_image * j->chunk;
  int64_t c1 = c0 + j->chunk < j->C ? c0 + j->chunk : j->C;
  float *y = j->y + n * j->C;
  int64_t cb = c0;
  for (; cb + GAPN_BLOCK <= c1; cb += GAPN_BLOCK) {
    double acc[GAPN_BLOCK] = {0};
    const float *x = j->x + n * j->HW * j->C + cb;
    for (int64_t p = 0; p < j->HW; p++, x += j->C)
      for (int c = 0; c < GAPN_BLOCK; c++)
        acc[c] += x[c];
    for (int c = 0; c < GAPN_BLOCK; c++)
      y[cb + c] = (float)(acc[c] / (double)j->HW);
  }
  if (cb < c1) {
    double acc[GAPN_BLOCK] = {0};
    int64_t w = c1 - cb;
    const float *x = j->x + n * j->HW * j->C + cb;
    for (int64_t p = 0; p < j->HW; p++, x += j->C)
      for (int64_t c = 0; c < w; c++)
        acc[c] += x[c];
    for (int64_t c = 0; c < w; c++)
      y[cb + c] = (float)(acc[c] / (double)j->HW);
  }
}

ait_status nat_k_gap_nhwc(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  const ait_tensor *X = n_in > 0 ? in[0] : NULL;
  if (!X || X->dtype != AIT_FLOAT32 || X->rank != 4 || X->dims[1] * X->dims[2] == 0)
    return AIT_E_UNSUPPORTED; /* the reference's mean of nothing */
  gapn_job j = {X->data, NULL, X->dims[1] * X->dims[2], X->dims[3], 0, 1};
  int64_t od[4] = {X->dims[0], X->dims[3], 1, 1};
  ait_tensor *Y;
  AIT_TRY(nat_output(r, 0, AIT_FLOAT32, 4, od, &Y));
  j.y = Y->data;
  if (j.C == 0 || od[0] == 0) return AIT_OK;
  /* channel chunks of whole cache lines, two per thread across the images */
  int threads = nat_run_threads(r);
  bool par = (double)X->dims[0] * j.HW * j.C >= 1 << 16 && threads > 1;
  int64_t parts = par ? (2 * threads + od[0] - 1) / od[0] : 1;
  j.chunk = ((j.C + parts - 1) / parts + 15) / 16 * 16;
  j.per_image = (j.C + j.chunk - 1) / j.chunk;
  nat_pool_run(par ? nat_run_pool(r) : NULL, od[0] * j.per_image, gapn_task, &j);
  return AIT_OK;
}

/* ---- Softmax --------------------------------------------------------------- */

/* Sums and maxima in 16 independent lanes: a single accumulator is a chain
 * of dependent adds (4 cycles each) that no vector unit can shorten, and
 * without -ffast-math the compiler keeps the order it was written in. */
enum { LANES = 16 };

static NAT_INLINE float lanes_max(const float *x, int64_t n) {
  float m[LANES];
  for (int l = 0; l < LANES; l++)
    m[l] = -INFINITY;
  int64_t i = 0;
  for (; i + LANES <= n; i += LANES)
    for (int l = 0; l < LANES; l++)
      m[l] = x[i + l] > m[l] ? x[i + l] : m[l];
  for (; i < n; i++)
    m[0] = x[i] > m[0] ? x[i] : m[0];
  float r = m[0];
  for (int l = 1; l < LANES; l++)
    r = m[l] > r ? m[l] : r;
  return r;
}

/* sum of (x[i] - c)^p for p = 1 or 2 */
static NAT_INLINE float lanes_sum(const float *x, int64_t n, float c, int p) {
  float s[LANES] = {0};
  int64_t i = 0;
  for (; i + LANES <= n; i += LANES)
    for (int l = 0; l < LANES; l++) {
      float d = x[i + l] - c;
      s[l] += p == 2 ? d * d : d;
    }
  for (; i < n; i++) {
    float d = x[i] - c;
    s[0] += p == 2 ? d * d : d;
  }
  for (int w = LANES / 2; w > 0; w /= 2) /* pairwise: error grows with log n */
    for (int l = 0; l < w; l++)
      s[l] += s[l + w];
  return s[0];
}

NAT_CLONES static void softmax_task(void *arg, int64_t t, int tid) {
  const rows_job *j = arg;
  FOR_ROWS(j, t, row) {
    const float *x = j->x + row * j->len;
    float *y = j->y + row * j->len;
    if (nat_softmax_row(x, y, j->len)) continue; /* AVX-512 or AVX2 */
    float m = lanes_max(x, j->len);
    for (int64_t i = 0; i < j->len; i++)
      y[i] = x[i] - m;
    nat_exp_f32(y, y, j->len);
    float inv = 1.0f / lanes_sum(y, j->len, 0.0f, 1);
    for (int64_t i = 0; i < j->len; i++)
      y[i] *= inv;
  }
}

ait_status nat_k_softmax(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  const ait_tensor *X = in[0];
  if (!X || X->dtype != AIT_FLOAT32 || X->rank < 1) return AIT_E_UNSUPPORTED;
  int64_t axis = ait_attr_int(n, "axis", n->opset >= 13 ? -1 : 1);
  if (axis < 0) axis += X->rank;
  if (axis < 0 || axis >= X->rank || (n->opset >= 13 && axis != X->rank - 1))
    return AIT_E_UNSUPPORTED;
  rows_job j;
  memset(&j, 0, sizeof j);
  j.len = ait_shape_numel(X->rank - (int)axis, X->dims + axis);
  if (j.len == 0) return AIT_E_UNSUPPORTED;
  j.rows = ait_tensor_numel(X) / j.len;
  ait_tensor *Y;
  AIT_TRY(nat_output(r, 0, AIT_FLOAT32, X->rank, X->dims, &Y));
  j.x = X->data;
  j.y = Y->data;
  j.per_task = nat_chunk(r, j.rows, 4096 / j.len + 1);
  nat_pool_run(nat_run_pool(r), (j.rows + j.per_task - 1) / j.per_task, softmax_task, &j);
  return AIT_OK;
}

/* ---- LayerNormalization ------------------------------------------------------ */

NAT_CLONES static void layernorm_task(void *arg, int64_t t, int tid) {
  const rows_job *j = arg;
  const float *scale = j->p0, *bias = j->p1;
  FOR_ROWS(j, t, row) {
    const float *x = j->x + row * j->len;
    float *y = j->y + row * j->len;
    if (nat_layernorm_row(x, y, j->len, scale, bias, j->eps)) continue; /* AVX-512 or AVX2 */
    /* two passes (mean, then squared deviations): no cancellation */
    float mean = lanes_sum(x, j->len, 0.0f, 1) / (float)j->len;
    float var = lanes_sum(x, j->len, mean, 2) / (float)j->len;
    float inv = (float)(1.0 / sqrt((double)var + j->eps));
    if (bias)
      for (int64_t i = 0; i < j->len; i++)
        y[i] = (x[i] - mean) * inv * scale[i] + bias[i];
    else
      for (int64_t i = 0; i < j->len; i++)
        y[i] = (x[i] - mean) * inv * scale[i];
  }
}

ait_status nat_k_layernorm(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  const ait_tensor *X = in[0], *S = n_in > 1 ? in[1] : NULL, *B = n_in > 2 ? in[2] : NULL;
  if (!X || !S || X->dtype != AIT_FLOAT32 || S->dtype != AIT_FLOAT32 || X->rank < 1 ||
      (B && B->dtype != AIT_FLOAT32))
    return AIT_E_UNSUPPORTED;
  int64_t axis = ait_attr_int(n, "axis", -1);
  if (axis < 0) axis += X->rank;
  if (axis < 0 || axis >= X->rank) return AIT_E_UNSUPPORTED;
  rows_job j;
  memset(&j, 0, sizeof j);
  j.len = ait_shape_numel(X->rank - (int)axis, X->dims + axis);
  if (j.len == 0 || ait_tensor_numel(S) != j.len || (B && ait_tensor_numel(B) != j.len))
    return AIT_E_UNSUPPORTED;
  j.rows = ait_tensor_numel(X) / j.len;
  j.eps = ait_attr_float(n, "epsilon", 1e-5f);
  ait_tensor *Y;
  AIT_TRY(nat_output(r, 0, AIT_FLOAT32, X->rank, X->dims, &Y));
  j.x = X->data;
  j.y = Y->data;
  j.p0 = S->data;
  j.p1 = B ? B->data : NULL;
  j.per_task = nat_chunk(r, j.rows, 4096 / j.len + 1);
  nat_pool_run(nat_run_pool(r), (j.rows + j.per_task - 1) / j.per_task, layernorm_task, &j);
  return AIT_OK;
}

/* ---- InstanceNormalization ------------------------------------------------------ */

/* Each (image, channel) plane normalised over its own values, then scaled
 * and shifted by the channel's two numbers: two passes for the statistics
 * (mean, then squared deviations: no cancellation), one for the output,
 * then the activation on the plane while it is in L1. FusedInstanceNorm
 * (native_fuse.c: wav2vec2's GroupNorm with affine, the Mul and Add after
 * it folded into scale and shift, and the Gelu after that) runs here too:
 * one read and one write of the tensor where the chain made four each. */
NAT_CLONES static void instancenorm_task(void *arg, int64_t t, int tid) {
  const rows_job *j = arg;
  FOR_ROWS(j, t, plane) {
    int64_t c = plane % j->C;
    const float *x = j->x + plane * j->len;
    float *y = j->y + plane * j->len;
    float mean = lanes_sum(x, j->len, 0.0f, 1) / (float)j->len;
    float var = lanes_sum(x, j->len, mean, 2) / (float)j->len;
    float a = (float)((double)j->p0[c] / sqrt((double)var + j->eps)), b = j->p1[c];
    for (int64_t i = 0; i < j->len; i++)
      y[i] = (x[i] - mean) * a + b;
    if (j->act.kind != AIT_ACT_NONE) nat_act_f32(&j->act, y, j->len);
  }
}

/* InstanceNormalization and FusedInstanceNorm (an `activation` attribute). */
ait_status nat_k_instancenorm(nat_run *r, const ait_node *n, const ait_tensor *const *in,
                              int n_in) {
  const ait_tensor *X = in[0], *S = n_in > 1 ? in[1] : NULL, *B = n_in > 2 ? in[2] : NULL;
  if (!X || !S || !B || X->dtype != AIT_FLOAT32 || S->dtype != AIT_FLOAT32 ||
      B->dtype != AIT_FLOAT32 || X->rank < 3 || ait_tensor_numel(S) != X->dims[1] ||
      ait_tensor_numel(B) != X->dims[1])
    return AIT_E_UNSUPPORTED;
  rows_job j;
  memset(&j, 0, sizeof j);
  if (ait_act_parse(n, &j.act) != AIT_OK) return AIT_E_UNSUPPORTED;
  j.C = X->dims[1];
  j.rows = X->dims[0] * j.C;
  j.len = j.rows ? ait_tensor_numel(X) / j.rows : 0;
  if (j.len == 0) return AIT_E_UNSUPPORTED;
  j.eps = ait_attr_float(n, "epsilon", 1e-5f);
  ait_tensor *Y;
  AIT_TRY(nat_output(r, 0, AIT_FLOAT32, X->rank, X->dims, &Y));
  j.x = X->data;
  j.y = Y->data;
  j.p0 = S->data;
  j.p1 = B->data;
  j.per_task = nat_chunk(r, j.rows, 4096 / j.len + 1);
  nat_pool_run(nat_run_pool(r), (j.rows + j.per_task - 1) / j.per_task, instancenorm_task, &j);
  return AIT_OK;
}

/* ---- RMSNormalization (opset 23) ---------------------------------------------- */

/* y = x / sqrt(mean(x^2) + eps) * scale over the trailing `len` values,
 * with four float accumulators per row (vectorised in the x86-64-v3 clone;
 * RMSNorm rows are a few hundred to a few thousand floats). */
NAT_CLONES static void rmsnorm_task(void *arg, int64_t t, int tid) {
  const rows_job *j = arg;
  const float *scale = j->p0;
  FOR_ROWS(j, t, row) {
    const float *x = j->x + row * j->len;
    float *y = j->y + row * j->len;
    float a[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= j->len; i += 8)
      for (int k = 0; k < 8; k++)
        a[k] += x[i + k] * x[i + k];
    double sq = 0;
    for (int k = 0; k < 8; k++)
      sq += a[k];
    for (; i < j->len; i++)
      sq += (double)x[i] * x[i];
    float inv = (float)(1.0 / sqrt(sq / (double)j->len + j->eps));
    for (i = 0; i < j->len; i++)
      y[i] = x[i] * inv * scale[i];
  }
}

ait_status nat_k_rmsnorm(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  const ait_tensor *X = in[0], *S = n_in > 1 ? in[1] : NULL;
  if (!X || !S || X->dtype != AIT_FLOAT32 || S->dtype != AIT_FLOAT32 || X->rank < 1)
    return AIT_E_UNSUPPORTED;
  int64_t axis = ait_attr_int(n, "axis", -1);
  if (axis < 0) axis += X->rank;
  if (axis < 0 || axis >= X->rank) return AIT_E_UNSUPPORTED;
  rows_job j;
  memset(&j, 0, sizeof j);
  j.len = ait_shape_numel(X->rank - (int)axis, X->dims + axis);
  /* scale of the normalized shape itself (other broadcasts: the reference) */
  if (j.len == 0 || ait_tensor_numel(S) != j.len || S->rank > X->rank - axis)
    return AIT_E_UNSUPPORTED;
  j.rows = ait_tensor_numel(X) / j.len;
  j.eps = ait_attr_float(n, "epsilon", 1e-5f);
  ait_tensor *Y;
  AIT_TRY(nat_output(r, 0, AIT_FLOAT32, X->rank, X->dims, &Y));
  j.x = X->data;
  j.y = Y->data;
  j.p0 = S->data;
  j.per_task = nat_chunk(r, j.rows, 4096 / j.len + 1);
  nat_pool_run(nat_run_pool(r), (j.rows + j.per_task - 1) / j.per_task, rmsnorm_task, &j);
  return AIT_OK;
}

/* ---- RotaryEmbedding (opset 23) ----------------------------------------------- */

/* float32 rotation of each (batch, position, head) row; the geometry is the
 * reference kernel's (src/ops/nn_rope.c), which also takes every case this
 * one refuses (other dtypes, bad shapes, position ids out of range). */
typedef struct rope_job {
  const float *x, *c, *s;
  const int64_t *pos; /* (B, S) or NULL */
  float *y;
  int64_t B, H, S, D, half, sb, sh, ss, rows_c, per_task;
  bool inter;
} rope_job;

NAT_CLONES static void rope_task(void *arg, int64_t t, int tid) {
  const rope_job *j = arg;
  for (int64_t bs = t * j->per_task; bs < (t + 1) * j->per_task && bs < j->B * j->S; bs++) {
    int64_t b = bs / j->S, p = bs % j->S, row = j->pos ? j->pos[bs] : bs;
    const float *c = j->c + row * j->half, *s = j->s + row * j->half;
    for (int64_t h = 0; h < j->H; h++) {
      const float *x = j->x + b * j->sb + h * j->sh + p * j->ss;
      float *y = j->y + b * j->sb + h * j->sh + p * j->ss;
      memcpy(y, x, (size_t)j->D * sizeof *y); /* the unrotated tail included */
      if (j->inter)
        for (int64_t k = 0; k < j->half; k++) {
          float x1 = x[2 * k], x2 = x[2 * k + 1];
          y[2 * k] = c[k] * x1 - s[k] * x2;
          y[2 * k + 1] = s[k] * x1 + c[k] * x2;
        }
      else
        for (int64_t k = 0; k < j->half; k++) {
          float x1 = x[k], x2 = x[k + j->half];
          y[k] = c[k] * x1 - s[k] * x2;
          y[k + j->half] = s[k] * x1 + c[k] * x2;
        }
    }
  }
}

ait_status nat_k_rope(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  const ait_tensor *X = in[0], *C = n_in > 1 ? in[1] : NULL, *S = n_in > 2 ? in[2] : NULL;
  const ait_tensor *P = n_in > 3 ? in[3] : NULL;
  if (!X || !C || !S || X->dtype != AIT_FLOAT32 || C->dtype != AIT_FLOAT32 ||
      S->dtype != AIT_FLOAT32 || (P && P->dtype != AIT_INT64))
    return AIT_E_UNSUPPORTED;
  rope_job j;
  memset(&j, 0, sizeof j);
  if (X->rank == 4) {
    j.B = X->dims[0], j.H = X->dims[1], j.S = X->dims[2], j.D = X->dims[3];
    j.sb = j.H * j.S * j.D, j.sh = j.S * j.D, j.ss = j.D;
  } else if (X->rank == 3) {
    j.H = ait_attr_int(n, "num_heads", 0);
    if (j.H <= 0 || X->dims[2] % j.H) return AIT_E_UNSUPPORTED;
    j.B = X->dims[0], j.S = X->dims[1], j.D = X->dims[2] / j.H;
    j.sb = j.S * j.H * j.D, j.sh = j.D, j.ss = j.H * j.D;
  } else {
    return AIT_E_UNSUPPORTED;
  }
  int64_t rd = ait_attr_int(n, "rotary_embedding_dim", 0);
  if (rd == 0) rd = j.D;
  if (rd < 0 || rd > j.D || rd % 2) return AIT_E_UNSUPPORTED;
  j.half = rd / 2;
  bool shapes = P ? C->rank == 2 && C->dims[1] == j.half && ait_tensor_numel(P) == j.B * j.S
                  : C->rank == 3 && C->dims[0] == j.B && C->dims[1] == j.S && C->dims[2] == j.half;
  if (!shapes || S->rank != C->rank || memcmp(S->dims, C->dims, sizeof(int64_t) * (size_t)C->rank))
    return AIT_E_UNSUPPORTED;
  if (P)
    for (int64_t i = 0; i < j.B * j.S; i++)
      if (((const int64_t *)P->data)[i] < 0 || ((const int64_t *)P->data)[i] >= C->dims[0])
        return AIT_E_UNSUPPORTED; /* the reference names the bad id */
  ait_tensor *Y;
  AIT_TRY(nat_output(r, 0, AIT_FLOAT32, X->rank, X->dims, &Y));
  j.x = X->data, j.c = C->data, j.s = S->data, j.pos = P ? P->data : NULL, j.y = Y->data;
  j.inter = ait_attr_int(n, "interleaved", 0) != 0;
  j.per_task = nat_chunk(r, j.B * j.S, 4096 / (j.H * j.D + 1) + 1);
  nat_pool_run(nat_run_pool(r), (j.B * j.S + j.per_task - 1) / j.per_task, rope_task, &j);
  return AIT_OK;
}

/* ---- BatchNormalization (inference) ------------------------------------------- */

NAT_CLONES static void batchnorm_task(void *arg, int64_t t, int tid) {
  const rows_job *j = arg;
  FOR_ROWS(j, t, plane) {
    int64_t c = plane % j->C;
    double sc = j->p0[c] / sqrt((double)j->p3[c] + j->eps);
    float a = (float)sc, b = (float)(j->p1[c] - j->p2[c] * sc);
    const float *x = j->x + plane * j->len;
    float *y = j->y + plane * j->len;
    for (int64_t i = 0; i < j->len; i++)
      y[i] = x[i] * a + b;
  }
}

ait_status nat_k_batchnorm(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  const ait_tensor *X = in[0];
  if (!X || X->dtype != AIT_FLOAT32 || X->rank < 2 || n_in < 5) return AIT_E_UNSUPPORTED;
  if (n->opset >= 14 && ait_attr_int(n, "training_mode", 0) != 0) return AIT_E_UNSUPPORTED;
  if (n->opset < 9 && ait_attr_int(n, "spatial", 1) == 0) return AIT_E_UNSUPPORTED;
  if (n->opset < 7 && ait_attr_int(n, "is_test", 0) == 0) return AIT_E_UNSUPPORTED;
  int64_t C = X->dims[1];
  for (int k = 1; k < 5; k++)
    if (!in[k] || in[k]->dtype != AIT_FLOAT32 || ait_tensor_numel(in[k]) != C)
      return AIT_E_UNSUPPORTED;
  rows_job j;
  memset(&j, 0, sizeof j);
  j.C = C;
  j.rows = X->dims[0] * C;
  j.len = j.rows ? ait_tensor_numel(X) / j.rows : 0;
  j.eps = ait_attr_float(n, "epsilon", 1e-5f);
  ait_tensor *Y;
  AIT_TRY(nat_output(r, 0, AIT_FLOAT32, X->rank, X->dims, &Y));
  if (j.rows == 0 || j.len == 0) return AIT_OK;
  j.x = X->data;
  j.y = Y->data;
  j.p0 = in[1]->data, j.p1 = in[2]->data, j.p2 = in[3]->data, j.p3 = in[4]->data;
  j.per_task = nat_chunk(r, j.rows, 16384 / j.len + 1);
  nat_pool_run(nat_run_pool(r), (j.rows + j.per_task - 1) / j.per_task, batchnorm_task, &j);
  return AIT_OK;
}
