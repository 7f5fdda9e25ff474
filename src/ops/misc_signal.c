/* Signal operators: DFT and STFT.
 *
 * Complex values travel as a trailing dimension of 2 (real, imaginary); a
 * trailing dimension of 1 is a real signal. Transforms run in double
 * precision over a table of twiddle factors: a radix-2 FFT for power-of-two
 * lengths, a direct O(N^2) sum for any other length. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/shape.h"
#include "ops/misc_impl.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* tw[j] = exp(-2 pi i j / n), j in [0, n). */
static ait_status twiddles(int64_t n, double **re, double **im) {
  *re = malloc((size_t)n * sizeof **re);
  *im = malloc((size_t)n * sizeof **im);
  if (!*re || !*im) {
    free(*re);
    free(*im);
    return ait_err(AIT_E_NOMEM, "out of memory for a DFT of length %lld", (long long)n);
  }
  for (int64_t j = 0; j < n; j++) {
    double a = -2.0 * M_PI * (double)j / (double)n;
    (*re)[j] = cos(a);
    (*im)[j] = sin(a);
  }
  return AIT_OK;
}

/* In-place radix-2 FFT of (re, im), n a power of two, exponent sign -1
 * (forward) or +1 (inverse), twiddles from the table of length n. */
static void fft_pow2(double *re, double *im, int64_t n, int sign, const double *twr,
                     const double *twi) {
  for (int64_t i = 1, j = 0; i < n; i++) { /* bit-reversal permutation */
    int64_t bit = n >> 1;
    for (; j & bit; bit >>= 1)
      j ^= bit;
    j ^= bit;
    if (i < j) {
      double tr = re[i], ti = im[i];
      re[i] = re[j], im[i] = im[j];
      re[j] = tr, im[j] = ti;
    }
  }
  for (int64_t len = 2; len <= n; len <<= 1) {
    int64_t half = len / 2, step = n / len;
    for (int64_t i = 0; i < n; i += len)
      for (int64_t k = 0; k < half; k++) {
        double wr = twr[k * step], wi = sign < 0 ? twi[k * step] : -twi[k * step];
        int64_t a = i + k, b = a + half;
        double vr = re[b] * wr - im[b] * wi, vi = re[b] * wi + im[b] * wr;
        re[b] = re[a] - vr, im[b] = im[a] - vi;
        re[a] += vr, im[a] += vi;
      }
  }
}

/* Y[k] = sum_{t<len} X[t] * exp(sign * 2 pi i k t / n) for k in [0, n_out),
 * with X zero beyond len (len <= n). sign -1 forward, +1 inverse. A power of
 * two n goes through the FFT (then yr/yi need room for n values); other
 * lengths are summed directly. */
static void dft_1d(const double *xr, const double *xi, int64_t len, int64_t n, int64_t n_out,
                   int sign, const double *twr, const double *twi, double *yr, double *yi) {
  if ((n & (n - 1)) == 0) {
    for (int64_t t = 0; t < n; t++) {
      yr[t] = t < len ? xr[t] : 0.0;
      yi[t] = t < len ? xi[t] : 0.0;
    }
    fft_pow2(yr, yi, n, sign, twr, twi);
    return;
  }
  for (int64_t k = 0; k < n_out; k++) {
    double sr = 0, si = 0;
    int64_t j = 0; /* (k * t) mod n */
    for (int64_t t = 0; t < len; t++) {
      double c = twr[j], s = sign < 0 ? twi[j] : -twi[j];
      sr += xr[t] * c - xi[t] * s;
      si += xr[t] * s + xi[t] * c;
      j += k;
      if (j >= n) j -= n;
    }
    yr[k] = sr;
    yi[k] = si;
  }
}

static bool is_float_dtype(ait_dtype dt) {
  const ait_dtype_traits *tr = ait_dtype_traits_of(dt);
  return tr && tr->is_float;
}

/* A scalar int32/int64 input as int64. */
static ait_status scalar_int(const ait_tensor *t, const char *what, int64_t *v) {
  if (t->kind != AIT_KIND_TENSOR || (t->dtype != AIT_INT32 && t->dtype != AIT_INT64) ||
      ait_tensor_numel(t) != 1)
    return ait_err(AIT_E_INVALID_ARG, "%s must be an int32/int64 scalar", what);
  *v = ait_scalar_i64(t);
  return AIT_OK;
}

/* ---- DFT ------------------------------------------------------------------- */

typedef struct dft_plan {
  int axis;
  int64_t n_in;                /* input length along axis */
  int64_t n;                   /* transform length (dft_length) */
  int64_t n_out;               /* output length along axis */
  bool inverse, onesided, c2r; /* c2r: inverse of a one-sided spectrum (real output) */
} dft_plan;

/* Axis, lengths and modes of a DFT node for an input of rank r and dims d;
 * dft_length < 0 when absent. */
static ait_status dft_setup(const ait_node *node, int64_t axis_arg, int r, const int64_t *d,
                            int64_t dft_length, dft_plan *p) {
  if (r < 2) return ait_err(AIT_E_SHAPE, "DFT input needs rank >= 2, got %d", r);
  AIT_TRY(ait_norm_axis(axis_arg, r, &p->axis));
  if (p->axis == r - 1)
    return ait_err(AIT_E_INVALID_ARG, "DFT axis %lld is the real/imaginary dimension",
                   (long long)axis_arg);
  p->inverse = ait_attr_int(node, "inverse", 0) != 0;
  p->onesided = ait_attr_int(node, "onesided", 0) != 0;
  p->c2r = p->inverse && p->onesided;
  p->n_in = d[p->axis];
  p->n = dft_length >= 0 ? dft_length : p->c2r ? 2 * (p->n_in - 1) : p->n_in;
  if (p->n < 1)
    return ait_err(AIT_E_INVALID_ARG, "DFT length %lld must be positive", (long long)p->n);
  p->n_out = p->c2r ? p->n : p->onesided ? p->n / 2 + 1 : p->n;
  return AIT_OK;
}

AIT_MISC_KERNEL(ait_k_dft) {
  const ait_tensor *x = in[0];
  if (!x || x->kind != AIT_KIND_TENSOR || !is_float_dtype(x->dtype))
    return ait_err(AIT_E_DTYPE, "DFT input must be a float tensor");
  int64_t c = x->rank ? x->dims[x->rank - 1] : 0;
  if (x->rank < 2 || (c != 1 && c != 2))
    return ait_err(AIT_E_SHAPE, "DFT input must end in a dimension of 1 (real) or 2 (complex)");
  int64_t dft_length = -1, axis = node->opset >= 20 ? -2 : ait_attr_int(node, "axis", 1);
  if (n_in > 1 && in[1]) AIT_TRY(scalar_int(in[1], "dft_length", &dft_length));
  if (node->opset >= 20 && n_in > 2 && in[2]) AIT_TRY(scalar_int(in[2], "axis", &axis));
  dft_plan p;
  AIT_TRY(dft_setup(node, axis, x->rank, x->dims, dft_length, &p));

  int64_t outer = 1, inner = 1, oc = p.c2r ? 1 : 2, dims[AIT_MAX_RANK];
  for (int i = 0; i < p.axis; i++)
    outer *= x->dims[i];
  for (int i = p.axis + 1; i < x->rank - 1; i++)
    inner *= x->dims[i];
  memcpy(dims, x->dims, sizeof dims);
  dims[p.axis] = p.n_out;
  dims[x->rank - 1] = oc;
  ait_tensor *y = ait_tensor_new(x->dtype, x->rank, dims);
  if (!y) return AIT_E_NOMEM;
  out[0] = y;

  double *twr, *twi;
  AIT_TRY(twiddles(p.n, &twr, &twi));
  int64_t nb = p.n > p.n_in ? p.n : p.n_in; /* buffer length */
  double *buf = malloc((size_t)(4 * nb) * sizeof *buf);
  if (!buf) {
    free(twr);
    free(twi);
    return ait_err(AIT_E_NOMEM, "out of memory");
  }
  double *xr = buf, *xi = buf + nb, *yr = buf + 2 * nb, *yi = buf + 3 * nb;
  const ait_dtype_traits *tr = ait_dtype_traits_of(x->dtype);
  double scale = p.inverse ? 1.0 / (double)p.n : 1.0;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      int64_t len = p.n_in < p.n ? p.n_in : p.n;
      for (int64_t t = 0; t < len; t++) {
        int64_t at = ((o * p.n_in + t) * inner + i) * c;
        xr[t] = ait_load_f64(tr, x->data, at);
        xi[t] = c == 2 ? ait_load_f64(tr, x->data, at + 1) : 0.0;
      }
      if (p.c2r) { /* rebuild the full Hermitian spectrum from its first half */
        for (int64_t t = len; t <= p.n / 2; t++)
          xr[t] = xi[t] = 0.0;
        for (int64_t t = p.n / 2 + 1; t < p.n; t++) {
          xr[t] = xr[p.n - t];
          xi[t] = -xi[p.n - t];
        }
        len = p.n;
      }
      dft_1d(xr, xi, len, p.n, p.n_out, p.inverse ? 1 : -1, twr, twi, yr, yi);
      for (int64_t k = 0; k < p.n_out; k++) {
        int64_t at = ((o * p.n_out + k) * inner + i) * oc;
        ait_store_f64(tr, y->data, at, yr[k] * scale);
        if (oc == 2) ait_store_f64(tr, y->data, at + 1, yi[k] * scale);
      }
    }
  free(buf);
  free(twr);
  free(twi);
  return AIT_OK;
}

/* Constant scalar integer value of v, if known. */
static bool const_int(const ait_value *v, int64_t *out) {
  if (!v || !v->init || v->init->kind != AIT_KIND_TENSOR || ait_tensor_numel(v->init) != 1 ||
      !ait_dtype_traits_of(v->init->dtype))
    return false;
  *out = ait_scalar_i64(v->init);
  return true;
}

AIT_MISC_SHAPE(ait_s_dft) {
  ait_value *x = ait_node_in(g, node, 0), *len = ait_node_in(g, node, 1);
  ait_value *ax = node->opset >= 20 ? ait_node_in(g, node, 2) : NULL;
  if (!x) return AIT_OK;
  int64_t axis = node->opset >= 20 ? -2 : ait_attr_int(node, "axis", 1), dft_length = -1;
  bool known_len = !len || const_int(len, &dft_length);
  if ((ax && !const_int(ax, &axis)) || x->rank < 2) {
    ait_set_out(g, node, 0, x->dtype, x->rank, NULL);
    return AIT_OK;
  }
  ait_dim dims[AIT_MAX_RANK];
  int64_t d[AIT_MAX_RANK];
  memcpy(dims, x->dims, sizeof dims);
  for (int i = 0; i < x->rank; i++)
    d[i] = x->dims[i].v;
  int a;
  if (ait_norm_axis(axis, x->rank, &a) != AIT_OK || a == x->rank - 1)
    return ait_err(AIT_E_SHAPE, "DFT axis %lld does not fit an input of rank %d", (long long)axis,
                   x->rank);
  bool c2r = ait_attr_int(node, "inverse", 0) && ait_attr_int(node, "onesided", 0);
  dims[x->rank - 1] = (ait_dim){c2r ? 1 : 2, NULL};
  dims[a] = (ait_dim){-1, NULL};
  dft_plan p;
  if (known_len && (d[a] >= 0 || dft_length >= 0) &&
      dft_setup(node, axis, x->rank, d, dft_length, &p) == AIT_OK)
    dims[a].v = p.n_out;
  ait_set_out(g, node, 0, x->dtype, x->rank, dims);
  return AIT_OK;
}

/* ---- STFT ------------------------------------------------------------------ */

AIT_MISC_KERNEL(ait_k_stft) {
  const ait_tensor *x = in[0], *win = n_in > 2 ? in[2] : NULL;
  if (!x || x->kind != AIT_KIND_TENSOR || !is_float_dtype(x->dtype))
    return ait_err(AIT_E_DTYPE, "STFT signal must be a float tensor");
  if (x->rank != 3 || (x->dims[2] != 1 && x->dims[2] != 2))
    return ait_err(AIT_E_SHAPE, "STFT signal must be [batch, length, 1 or 2]");
  if (n_in < 2 || !in[1]) return ait_err(AIT_E_INVALID_ARG, "STFT needs frame_step");
  int64_t step = 0, fl = -1, c = x->dims[2], sig = x->dims[1];
  AIT_TRY(scalar_int(in[1], "frame_step", &step));
  if (n_in > 3 && in[3]) AIT_TRY(scalar_int(in[3], "frame_length", &fl));
  if (win && (win->kind != AIT_KIND_TENSOR || win->rank != 1 || !is_float_dtype(win->dtype)))
    return ait_err(AIT_E_SHAPE, "STFT window must be a 1-D float tensor");
  if (win && fl >= 0 && win->dims[0] != fl)
    return ait_err(AIT_E_SHAPE, "window length %lld differs from frame_length %lld",
                   (long long)win->dims[0], (long long)fl);
  if (fl < 0) fl = win ? win->dims[0] : sig;
  if (step < 1 || fl < 1 || fl > sig)
    return ait_err(AIT_E_INVALID_ARG,
                   "frame_step %lld / frame_length %lld do not fit a signal of %lld",
                   (long long)step, (long long)fl, (long long)sig);
  bool onesided = ait_attr_int(node, "onesided", 1) != 0;
  int64_t frames = 1 + (sig - fl) / step, bins = onesided ? fl / 2 + 1 : fl;
  int64_t dims[4] = {x->dims[0], frames, bins, 2};
  ait_tensor *y = ait_tensor_new(x->dtype, 4, dims);
  if (!y) return AIT_E_NOMEM;
  out[0] = y;

  double *twr, *twi;
  AIT_TRY(twiddles(fl, &twr, &twi));
  double *buf = malloc((size_t)(5 * fl) * sizeof *buf);
  if (!buf) {
    free(twr);
    free(twi);
    return ait_err(AIT_E_NOMEM, "out of memory");
  }
  double *w = buf, *xr = buf + fl, *xi = buf + 2 * fl, *yr = buf + 3 * fl, *yi = buf + 4 * fl;
  const ait_dtype_traits *tr = ait_dtype_traits_of(x->dtype);
  for (int64_t t = 0; t < fl; t++)
    w[t] = win ? ait_load_f64(ait_dtype_traits_of(win->dtype), win->data, t) : 1.0;
  for (int64_t b = 0; b < x->dims[0]; b++)
    for (int64_t f = 0; f < frames; f++) {
      for (int64_t t = 0; t < fl; t++) {
        int64_t at = (b * sig + f * step + t) * c;
        xr[t] = w[t] * ait_load_f64(tr, x->data, at);
        xi[t] = c == 2 ? w[t] * ait_load_f64(tr, x->data, at + 1) : 0.0;
      }
      dft_1d(xr, xi, fl, fl, bins, -1, twr, twi, yr, yi);
      for (int64_t k = 0; k < bins; k++) {
        int64_t at = ((b * frames + f) * bins + k) * 2;
        ait_store_f64(tr, y->data, at, yr[k]);
        ait_store_f64(tr, y->data, at + 1, yi[k]);
      }
    }
  free(buf);
  free(twr);
  free(twi);
  return AIT_OK;
}

AIT_MISC_SHAPE(ait_s_stft) {
  ait_value *x = ait_node_in(g, node, 0), *st = ait_node_in(g, node, 1);
  ait_value *win = ait_node_in(g, node, 2), *len = ait_node_in(g, node, 3);
  if (!x) return AIT_OK;
  ait_dim dims[4] = {{-1, NULL}, {-1, NULL}, {-1, NULL}, {2, NULL}};
  if (x->rank == 3) dims[0] = x->dims[0];
  int64_t fl = -1, step = -1, sig = x->rank == 3 ? x->dims[1].v : -1;
  if (!len || !const_int(len, &fl)) fl = -1;
  if (fl < 0 && win && win->rank == 1) fl = win->dims[0].v;
  if (fl < 0 && !win && !len) fl = sig;
  bool onesided = ait_attr_int(node, "onesided", 1) != 0;
  if (fl > 0) dims[2].v = onesided ? fl / 2 + 1 : fl;
  if (fl > 0 && sig >= fl && const_int(st, &step) && step > 0) dims[1].v = 1 + (sig - fl) / step;
  ait_set_out(g, node, 0, x->dtype, 4, dims);
  return AIT_OK;
}
