/* Window functions (HannWindow, HammingWindow, BlackmanWindow) and
 * MelWeightMatrix.
 *
 * A window of `size` points is a cosine sum a0 - a1 cos(2 pi n / N) +
 * a2 cos(4 pi n / N), n in [0, size), with N = size when periodic (the
 * default) and size - 1 when symmetric. Values are computed in double and
 * stored in output_datatype (default float32). */
#include <math.h>
#include <string.h>

#include "ir/shape.h"
#include "ops/misc_impl.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static bool numeric_dtype(ait_dtype dt) {
  const ait_dtype_traits *tr = ait_dtype_traits_of(dt);
  return tr && (tr->is_float || tr->is_int);
}

static ait_status cosine_window(const ait_node *node, const ait_tensor *size_t_, double a0,
                                double a1, double a2, ait_tensor **out) {
  if (!size_t_ || size_t_->kind != AIT_KIND_TENSOR ||
      (size_t_->dtype != AIT_INT32 && size_t_->dtype != AIT_INT64) ||
      ait_tensor_numel(size_t_) != 1)
    return ait_err(AIT_E_INVALID_ARG, "window size must be an int32/int64 scalar");
  int64_t size = ait_scalar_i64(size_t_);
  if (size < 0) return ait_err(AIT_E_INVALID_ARG, "window size %lld is negative", (long long)size);
  ait_dtype dt = (ait_dtype)ait_attr_int(node, "output_datatype", AIT_FLOAT32);
  if (!numeric_dtype(dt))
    return ait_err(AIT_E_DTYPE, "window output_datatype %d is not numeric", (int)dt);
  bool periodic = ait_attr_int(node, "periodic", 1) != 0;
  ait_tensor *y = ait_tensor_new(dt, 1, &size);
  if (!y) return AIT_E_NOMEM;
  const ait_dtype_traits *tr = ait_dtype_traits_of(dt);
  double n_den = (double)(periodic ? size : size - 1);
  for (int64_t n = 0; n < size; n++) {
    /* a symmetric window of one point is 1 (N = 0 would divide by zero) */
    double a = n_den > 0 ? 2.0 * M_PI * (double)n / n_den : 0.0;
    double v = n_den > 0 ? a0 - a1 * cos(a) + a2 * cos(2.0 * a) : 1.0;
    ait_store_f64(tr, y->data, n, v);
  }
  *out = y;
  return AIT_OK;
}

AIT_MISC_KERNEL(ait_k_hann_window) { return cosine_window(node, in[0], 0.5, 0.5, 0.0, &out[0]); }

AIT_MISC_KERNEL(ait_k_hamming_window) {
  return cosine_window(node, in[0], 25.0 / 46.0, 21.0 / 46.0, 0.0, &out[0]);
}

AIT_MISC_KERNEL(ait_k_blackman_window) {
  return cosine_window(node, in[0], 0.42, 0.5, 0.08, &out[0]);
}

/* Constant scalar value of v as double, if known. */
static bool const_num(const ait_value *v, double *out) {
  if (!v || !v->init || v->init->kind != AIT_KIND_TENSOR || ait_tensor_numel(v->init) != 1 ||
      !ait_dtype_traits_of(v->init->dtype))
    return false;
  *out = ait_scalar_f64(v->init);
  return true;
}

AIT_MISC_SHAPE(ait_s_window) {
  double size;
  ait_dim d = {-1, NULL};
  if (const_num(ait_node_in(g, node, 0), &size) && size >= 0) d.v = (int64_t)size;
  ait_set_out(g, node, 0, (ait_dtype)ait_attr_int(node, "output_datatype", AIT_FLOAT32), 1, &d);
  return AIT_OK;
}

/* ---- MelWeightMatrix ---------------------------------------------------------
 * [dft_length/2 + 1, num_mel_bins] triangular filters, as the ONNX reference:
 * num_mel_bins + 2 points equally spaced on the mel scale
 * (mel = 2595 log10(1 + f/700)) from lower_edge_hertz, step (high - low) /
 * (num_mel_bins + 2), mapped to spectrogram bins floor((dft_length + 1) f /
 * sample_rate); filter i rises from point i to i+1 and falls to i+2. */

/* written as the reference computes them, so that bins round alike */
static double hz_to_mel(double f) { return 2595.0 * log1p(f / 700.0) / log(10.0); }
static double mel_to_hz(double m) { return 700.0 * expm1(m / 2595.0 * log(10.0)); }

static ait_status scalar_in(const ait_tensor *t, const char *what, bool want_int, double *v) {
  const ait_dtype_traits *tr =
      t && t->kind == AIT_KIND_TENSOR ? ait_dtype_traits_of(t->dtype) : NULL;
  if (!tr || ait_tensor_numel(t) != 1 || (want_int ? !tr->is_int : !tr->is_float))
    return ait_err(AIT_E_INVALID_ARG, "%s must be a%s scalar", what,
                   want_int ? "n integer" : " float");
  *v = ait_scalar_f64(t);
  return AIT_OK;
}

AIT_MISC_KERNEL(ait_k_mel_weight_matrix) {
  if (n_in < 5) return ait_err(AIT_E_INVALID_ARG, "MelWeightMatrix takes 5 inputs");
  double nmel = 0, dftl = 0, rate = 0, lo = 0, hi = 0;
  AIT_TRY(scalar_in(in[0], "num_mel_bins", true, &nmel));
  AIT_TRY(scalar_in(in[1], "dft_length", true, &dftl));
  AIT_TRY(scalar_in(in[2], "sample_rate", true, &rate));
  AIT_TRY(scalar_in(in[3], "lower_edge_hertz", false, &lo));
  AIT_TRY(scalar_in(in[4], "upper_edge_hertz", false, &hi));
  if (nmel < 1 || dftl < 1 || rate < 1 || nmel > (1 << 20) || dftl > (1 << 30))
    return ait_err(AIT_E_INVALID_ARG, "bad num_mel_bins %g / dft_length %g / sample_rate %g", nmel,
                   dftl, rate);
  if (lo < 0 || hi < lo) return ait_err(AIT_E_INVALID_ARG, "bad edges [%g, %g] Hz", lo, hi);
  ait_dtype dt = (ait_dtype)ait_attr_int(node, "output_datatype", AIT_FLOAT32);
  if (!numeric_dtype(dt))
    return ait_err(AIT_E_DTYPE, "MelWeightMatrix output_datatype %d is not numeric", (int)dt);
  int64_t n_mel = (int64_t)nmel, n_spec = (int64_t)dftl / 2 + 1, dims[2] = {n_spec, n_mel};
  ait_tensor *y = ait_tensor_new(dt, 2, dims);
  if (!y) return AIT_E_NOMEM;
  out[0] = y;
  const ait_dtype_traits *tr = ait_dtype_traits_of(dt);

  double mel_lo = hz_to_mel(lo), step = (hz_to_mel(hi) - mel_lo) / (double)(n_mel + 2);
  int64_t bin[3]; /* left, center, right points of filter i */
  for (int64_t i = 0; i < n_mel; i++) {
    for (int k = 0; k < 3; k++) {
      double b = floor((dftl + 1.0) * mel_to_hz((double)(i + k) * step + mel_lo) / rate);
      bin[k] = (int64_t)fmax(fmin(b, 0x1p62), -0x1p62);
    }
    /* rows outside [0, n_spec) (an upper edge above Nyquist) are skipped */
    int64_t up = bin[1] - bin[0], down = bin[2] - bin[1];
    if (up == 0 && bin[1] >= 0 && bin[1] < n_spec)
      ait_store_f64(tr, y->data, bin[1] * n_mel + i, 1);
    for (int64_t j = bin[0] > 0 ? bin[0] : 0; up > 0 && j <= bin[1] && j < n_spec; j++)
      ait_store_f64(tr, y->data, j * n_mel + i, (double)(j - bin[0]) / (double)up);
    for (int64_t j = bin[1] > 0 ? bin[1] : 0; down > 0 && j < bin[2] && j < n_spec; j++)
      ait_store_f64(tr, y->data, j * n_mel + i, (double)(bin[2] - j) / (double)down);
  }
  return AIT_OK;
}

AIT_MISC_SHAPE(ait_s_mel_weight_matrix) {
  double nmel, dftl;
  ait_dim d[2] = {{-1, NULL}, {-1, NULL}};
  if (const_num(ait_node_in(g, node, 1), &dftl) && dftl >= 1) d[0].v = (int64_t)dftl / 2 + 1;
  if (const_num(ait_node_in(g, node, 0), &nmel) && nmel >= 1) d[1].v = (int64_t)nmel;
  ait_set_out(g, node, 0, (ait_dtype)ait_attr_int(node, "output_datatype", AIT_FLOAT32), 2, d);
  return AIT_OK;
}
