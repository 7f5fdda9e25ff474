/* Quantizing weights once, at build time: int8 (symmetric, or with a zero
 * point) and fp8 e4m3, per tensor, per output channel or per group along
 * the reduction axis, with scales from max |w| or a percentile of |w|. Then
 * repacking the canonical rows into the layouts the AVX-512 kernels read. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/quant/quant.h"
#include "core/error.h"

/* ---- ranges ------------------------------------------------------------ */

static void swapf(float *a, float *b) {
  float t = *a;
  *a = *b;
  *b = t;
}

/* The k-th smallest of v[0..n) (v is reordered): Hoare's selection. */
static float select_kth(float *v, int64_t n, int64_t k) {
  int64_t lo = 0, hi = n - 1;
  while (lo < hi) {
    float pivot = v[lo + (hi - lo) / 2];
    int64_t i = lo, j = hi;
    while (i <= j) {
      while (v[i] < pivot)
        i++;
      while (v[j] > pivot)
        j--;
      if (i <= j) swapf(&v[i++], &v[j--]);
    }
    if (k <= j)
      hi = j;
    else if (k >= i)
      lo = i;
    else
      return v[k];
  }
  return v[k];
}

/* Range of a block of `cnt` weights: [lo, hi] for asymmetric, [-a, a] for
 * symmetric. tmp holds cnt floats (percentile only). */
typedef struct block_src {
  const float *w;
  int64_t rs_n, rs_k;
} block_src;

static void block_range(const qnt_config *c, block_src src, int64_t n0, int64_t n1, int64_t k0,
                        int64_t k1, float *tmp, float *lo, float *hi) {
  float mn = 0, mx = 0, amax = 0;
  int64_t cnt = 0;
  for (int64_t n = n0; n < n1; n++)
    for (int64_t k = k0; k < k1; k++) {
      float v = src.w[n * src.rs_n + k * src.rs_k];
      if (!isfinite(v)) continue;
      mn = v < mn ? v : mn;
      mx = v > mx ? v : mx;
      amax = fabsf(v) > amax ? fabsf(v) : amax;
      if (c->percentile) tmp[cnt++] = c->symmetric ? fabsf(v) : v;
    }
  if (c->percentile && cnt > 0) {
    double q = c->pct / 100.0;
    if (c->symmetric) {
      amax = select_kth(tmp, cnt, (int64_t)ceil(q * (double)cnt) - 1);
    } else {
      mx = select_kth(tmp, cnt, (int64_t)ceil(q * (double)cnt) - 1);
      mn = select_kth(tmp, cnt, (int64_t)floor((1 - q) * (double)cnt));
      mn = mn < 0 ? mn : 0;
      mx = mx > 0 ? mx : 0;
    }
  }
  *lo = c->symmetric ? -amax : mn;
  *hi = c->symmetric ? amax : mx;
}

/* Scale (and zero point) for a range, and the code of one value. */
static void params_for(const qnt_config *c, float lo, float hi, float *s, int8_t *z) {
  *z = 0;
  if (c->weights == QNT_FP8) {
    *s = hi / AIT_E4M3_MAX;
  } else if (c->symmetric) {
    *s = hi / (c->w7 ? 64.0f : 127.0f);
  } else {
    *s = (hi - lo) / 255.0f;
    if (*s > 0) {
      float zf = nearbyintf(-128.0f - lo / *s);
      *z = (int8_t)(zf < -128 ? -128 : zf > 127 ? 127 : zf);
    }
  }
  if (!(*s > 0) || !isfinite(*s)) *s = 1.0f; /* an all-zero block */
}

static uint8_t code_for(const qnt_config *c, float v, float s, int8_t z) {
  if (!isfinite(v)) v = 0;
  if (c->weights == QNT_FP8) return ait_e4m3_encode(v / s);
  float hi = c->symmetric && c->w7 ? 64.0f : 127.0f, lo = c->symmetric ? -hi : -128.0f;
  return (uint8_t)ait_int8_encode(v, s, z, lo, hi);
}

ait_status qnt_weight_quantize(const qnt_config *c, const float *w, int64_t N, int64_t K,
                               int64_t rs_n, int64_t rs_k, qnt_weight *out) {
  memset(out, 0, sizeof *out);
  if (c->weights != QNT_INT8 && c->weights != QNT_FP8)
    return ait_err(AIT_E_UNSUPPORTED, "quant: %s weights have no CPU kernels",
                   qnt_wtype_name(c->weights));
  out->type = c->weights;
  out->N = N;
  out->K = K;
  out->gsize = c->gran == QNT_GROUP && c->group < K ? c->group : K;
  out->G = (K + out->gsize - 1) / out->gsize;
  out->asym = !c->symmetric;
  out->layout = QNT_L_ROWS;
  out->n_codes = (size_t)N * (size_t)K;
  out->codes = malloc(out->n_codes);
  out->scale = malloc(sizeof(float) * (size_t)(N * out->G));
  out->zero = out->asym ? calloc((size_t)(N * out->G), 1) : NULL;
  int64_t tmp_n = c->percentile ? (c->gran == QNT_TENSOR ? N * K : out->gsize) : 1;
  float *tmp = malloc(sizeof(float) * (size_t)tmp_n);
  if (!out->codes || !out->scale || (out->asym && !out->zero) || !tmp) {
    free(tmp);
    qnt_weight_free(out);
    return ait_err(AIT_E_NOMEM, "out of memory quantizing a %lld x %lld weight", (long long)N,
                   (long long)K);
  }
  block_src src = {w, rs_n, rs_k};
  float lo, hi, s = 1;
  int8_t z = 0;
  if (c->gran == QNT_TENSOR) {
    block_range(c, src, 0, N, 0, K, tmp, &lo, &hi);
    params_for(c, lo, hi, &s, &z);
  }
  for (int64_t n = 0; n < N; n++)
    for (int64_t g = 0; g < out->G; g++) {
      int64_t k0 = g * out->gsize, k1 = k0 + out->gsize < K ? k0 + out->gsize : K;
      if (c->gran != QNT_TENSOR) {
        block_range(c, src, n, n + 1, k0, k1, tmp, &lo, &hi);
        params_for(c, lo, hi, &s, &z);
      }
      out->scale[n * out->G + g] = s;
      if (out->zero) out->zero[n * out->G + g] = z;
      for (int64_t k = k0; k < k1; k++)
        out->codes[n * K + k] = code_for(c, w[n * rs_n + k * rs_k], s, z);
    }
  free(tmp);
  return AIT_OK;
}

/* ---- layouts ------------------------------------------------------------ */

static int64_t panels(const qnt_weight *w) { return (w->N + QNT_PANEL - 1) / QNT_PANEL; }

/* Steps of the reduction axis one packed row holds (1, 2 or 4 codes). */
static int64_t kstep(qnt_layout l) {
  return l == QNT_L_PAIR ? 2 : l == QNT_L_QUAD || l == QNT_L_QUAD7 ? 4 : 1;
}

/* QUAD7: the codes of each (channel, group) block with some |q| > 64
 * halved (ties to even) and its scale doubled, in place, so the weight's
 * values (and what save() writes) are the ones the vpmaddubsw tile
 * multiplies. Blocks within 64 keep their codes: packing again (a loaded
 * QUAD7 weight) changes nothing. */
static ait_status halve_codes(qnt_weight *w) {
  if (w->type != QNT_INT8 || w->asym)
    return ait_err(AIT_E_INTERNAL, "quant: 7-bit codes are for symmetric int8 weights");
  for (int64_t n = 0; n < w->N; n++)
    for (int64_t g = 0; g < w->G; g++) {
      uint8_t *q = w->codes + n * w->K;
      int64_t k0 = g * w->gsize, k1 = k0 + w->gsize < w->K ? k0 + w->gsize : w->K;
      bool big = false;
      for (int64_t k = k0; k < k1 && !big; k++)
        big = abs((int8_t)q[k]) > 64;
      if (!big) continue;
      for (int64_t k = k0; k < k1; k++)
        q[k] = (uint8_t)(int8_t)nearbyintf((float)(int8_t)q[k] * 0.5f);
      w->scale[n * w->G + g] *= 2.0f;
    }
  return AIT_OK;
}

static size_t code_index(const qnt_weight *w, qnt_layout l, int64_t n, int64_t k) {
  if (l == QNT_L_ROWS) return (size_t)(n * w->K + k);
  int64_t st = kstep(l), ks = (w->K + st - 1) / st, p = n / QNT_PANEL, j = n % QNT_PANEL;
  return (size_t)(((p * ks + k / st) * QNT_PANEL + j) * st + k % st);
}

uint8_t qnt_weight_code(const qnt_weight *w, int64_t n, int64_t k) {
  return w->codes[code_index(w, w->layout, n, k)];
}

float qnt_weight_value(const qnt_weight *w, int64_t n, int64_t k) {
  int64_t g = k / w->gsize;
  float s = w->scale[n * w->G + g];
  uint8_t q = qnt_weight_code(w, n, k);
  if (w->type == QNT_FP8) return s * ait_e4m3_decode(q);
  return ait_int8_decode((int8_t)q, s, w->zero ? w->zero[n * w->G + g] : 0);
}

/* n zeroed bytes at a multiple of 64 (free() releases them), NULL on no
 * memory. */
static void *zalloc64(size_t n) {
  size_t r = (n + 63) / 64 * 64;
  void *p = aligned_alloc(64, r ? r : 64);
  if (p) memset(p, 0, r ? r : 64);
  return p;
}

ait_status qnt_weight_pack(qnt_weight *w, qnt_layout to) {
  if (w->layout != QNT_L_ROWS)
    return ait_err(AIT_E_INTERNAL, "quant: packing a weight that is already packed");
  if (to == QNT_L_ROWS) return AIT_OK;
  if (to == QNT_L_QUAD7) AIT_TRY(halve_codes(w));
  bool quad = to == QNT_L_QUAD || to == QNT_L_QUAD7;
  int64_t P = panels(w), st = kstep(to), ks = (w->K + st - 1) / st;
  size_t n_codes = (size_t)(P * ks * QNT_PANEL * st), n_par = (size_t)(P * w->G * QNT_PANEL);
  /* on cache lines: a panel step (64 channels) is whole lines, so no load
   * of the tiles splits across two (calloc's large blocks start 16 bytes
   * into a page; a split on every other ymm load of the weights cost the
   * vpmaddubsw tile a fifth of its rate) */
  uint8_t *codes = zalloc64(n_codes);
  float *ps = zalloc64(n_par * sizeof *ps), *pb = zalloc64(n_par * sizeof *pb);
  int32_t *pw = quad ? zalloc64(n_par * sizeof *pw) : NULL;
  int8_t *pz = quad && w->asym ? calloc(n_par, 1) : NULL;
  if (!codes || !ps || !pb || (quad && !pw) || (quad && w->asym && !pz)) {
    free(codes), free(ps), free(pb), free(pw), free(pz);
    return ait_err(AIT_E_NOMEM, "out of memory packing a %lld x %lld weight", (long long)w->N,
                   (long long)w->K);
  }
  for (int64_t n = 0; n < w->N; n++) {
    const uint8_t *row = w->codes + n * w->K;
    for (int64_t k = 0; k < w->K; k++)
      codes[code_index(w, to, n, k)] = row[k];
    for (int64_t g = 0; g < w->G; g++) {
      size_t at = (size_t)(((n / QNT_PANEL) * w->G + g) * QNT_PANEL + n % QNT_PANEL);
      float s = w->scale[n * w->G + g];
      int z = w->zero ? w->zero[n * w->G + g] : 0;
      ps[at] = s;
      pb[at] = -s * (float)z;
      if (pz) pz[at] = (int8_t)z;
      if (pw) {
        int32_t sum = 0;
        int64_t k1 = (g + 1) * w->gsize < w->K ? (g + 1) * w->gsize : w->K;
        for (int64_t k = g * w->gsize; k < k1; k++)
          sum += (int8_t)row[k];
        pw[at] = sum;
      }
    }
  }
  free(w->codes);
  w->codes = codes;
  w->n_codes = n_codes;
  w->layout = to;
  w->pscale = ps;
  w->pbias = pb;
  w->pwsum = pw;
  w->pzero = pz;
  return AIT_OK;
}

void qnt_weight_free(qnt_weight *w) {
  free(w->scale);
  free(w->zero);
  free(w->codes);
  free(w->pscale);
  free(w->pbias);
  free(w->pwsum);
  free(w->pzero);
  memset(w, 0, sizeof *w);
}

size_t qnt_weight_bytes(const qnt_weight *w) {
  size_t par = (size_t)(w->N * w->G);
  return w->n_codes + par * sizeof(float) + (w->zero ? par : 0);
}
