/* Sliding-window geometry of Conv, ConvTranspose and the pools: output
 * sizes and effective pads from strides, dilations, pads, auto_pad,
 * ceil_mode, output_shape and output_padding, as the ONNX spec defines them. */
#include <stdint.h>
#include <string.h>

#include "ops/nn_impl.h"

typedef enum { PAD_NOTSET, PAD_SAME_UPPER, PAD_SAME_LOWER, PAD_VALID } pad_mode;

static ait_status read_auto_pad(const ait_node *node, pad_mode *m) {
  const char *s = ait_attr_str(node, "auto_pad", "NOTSET");
  if (!strcmp(s, "NOTSET") || !*s)
    *m = PAD_NOTSET;
  else if (!strcmp(s, "SAME_UPPER"))
    *m = PAD_SAME_UPPER;
  else if (!strcmp(s, "SAME_LOWER"))
    *m = PAD_SAME_LOWER;
  else if (!strcmp(s, "VALID"))
    *m = PAD_VALID;
  else
    return ait_err(AIT_E_INVALID_ARG, "unknown auto_pad '%s'", s);
  return AIT_OK;
}

/* An INTS attribute of `want` values (or the default `def` each). */
static ait_status read_ints(const ait_node *node, const char *name, int want, int64_t def,
                            int64_t min, int64_t *vals) {
  int n = 0;
  const int64_t *v = ait_attr_ints(node, name, &n);
  if (!v) {
    for (int i = 0; i < want; i++)
      vals[i] = def;
    return AIT_OK;
  }
  if (n != want)
    return ait_err(AIT_E_INVALID_ARG, "attribute %s has %d values, expected %d", name, n, want);
  for (int i = 0; i < want; i++) {
    if (v[i] < min)
      return ait_err(AIT_E_INVALID_ARG, "attribute %s[%d] = %lld must be >= %lld", name, i,
                     (long long)v[i], (long long)min);
    vals[i] = v[i];
  }
  return AIT_OK;
}

/* Common part: kernel, strides, dilations, pads (as given). */
static ait_status read_common(const ait_node *node, int nsp, const int64_t *in,
                              const int64_t *kernel, bool use_dilations, nn_win *w) {
  if (nsp < 1 || nsp > NN_MAX_SP)
    return ait_err(AIT_E_UNSUPPORTED, "%d spatial dims (supported: 1..%d)", nsp, NN_MAX_SP);
  memset(w, 0, sizeof *w);
  w->nsp = nsp;
  int nk = 0;
  const int64_t *ks = ait_attr_ints(node, "kernel_shape", &nk);
  if (ks && nk != nsp)
    return ait_err(AIT_E_INVALID_ARG, "kernel_shape has %d values for %d spatial dims", nk, nsp);
  for (int i = 0; i < nsp; i++) {
    int64_t k = kernel ? kernel[i] : -1;
    if (ks) {
      if (k >= 0 && ks[i] != k)
        return ait_err(AIT_E_SHAPE, "kernel_shape[%d] = %lld but the weights have %lld", i,
                       (long long)ks[i], (long long)k);
      k = ks[i];
    }
    if (!kernel && !ks) return ait_err(AIT_E_INVALID_ARG, "attribute kernel_shape is required");
    if (k == 0 || k < -1) return ait_err(AIT_E_INVALID_ARG, "kernel size %lld", (long long)k);
    w->k[i] = k;
    w->in[i] = in[i];
  }
  AIT_TRY(read_ints(node, "strides", nsp, 1, 1, w->s));
  if (use_dilations)
    AIT_TRY(read_ints(node, "dilations", nsp, 1, 1, w->d));
  else
    for (int i = 0; i < nsp; i++)
      w->d[i] = 1;
  int64_t pads[2 * NN_MAX_SP];
  AIT_TRY(read_ints(node, "pads", 2 * nsp, 0, 0, pads));
  for (int i = 0; i < nsp; i++)
    w->pb[i] = pads[i], w->pe[i] = pads[nsp + i];
  return AIT_OK;
}

ait_status nn_win_conv(const ait_node *node, int nsp, const int64_t *in, const int64_t *kernel,
                       bool ceil_mode, bool use_dilations, nn_win *w) {
  pad_mode mode = PAD_NOTSET;
  AIT_TRY(read_auto_pad(node, &mode));
  AIT_TRY(read_common(node, nsp, in, kernel, use_dilations, w));
  for (int i = 0; i < nsp; i++) {
    /* kernel, strides, dilations and pads are the model's: the window's
     * arithmetic runs in 128 bits and must land well inside 64 */
    const __int128 lim = (__int128)1 << 62;
    __int128 dk = w->k[i] < 0 ? -1 : (__int128)(w->k[i] - 1) * w->d[i] + 1;
    __int128 s = w->s[i], n = w->in[i], pb = w->pb[i], pe = w->pe[i];
    if (dk > lim || pb > lim || pe > lim || pb < -lim || pe < -lim)
      return ait_err(AIT_E_INVALID_ARG,
                     "window in spatial dim %d is out of range (kernel %lld, dilation %lld, pads "
                     "%lld/%lld)",
                     i, (long long)w->k[i], (long long)w->d[i], (long long)w->pb[i],
                     (long long)w->pe[i]);
    w->out[i] = -1;
    if (mode == PAD_SAME_UPPER || mode == PAD_SAME_LOWER) {
      w->pb[i] = w->pe[i] = 0;
      if (n < 0) continue;
      __int128 out = (n + s - 1) / s;
      w->out[i] = (int64_t)out;
      if (dk < 0) continue;
      __int128 total = (out - 1) * s + dk - n;
      if (total < 0) total = 0;
      if (total > lim)
        return ait_err(AIT_E_INVALID_ARG, "SAME padding of %s in spatial dim %d is out of range",
                       node->op_type, i);
      w->pb[i] = (int64_t)(mode == PAD_SAME_UPPER ? total / 2 : total - total / 2);
      w->pe[i] = (int64_t)total - w->pb[i];
      continue;
    }
    if (mode == PAD_VALID) w->pb[i] = w->pe[i] = 0, pb = pe = 0;
    if (n < 0 || dk < 0) continue;
    if (n + pb + pe - dk > lim)
      return ait_err(AIT_E_INVALID_ARG, "padded input of spatial dim %d is out of range", i);
    int64_t span = (int64_t)(n + pb + pe - dk);
    if (span < 0)
      return ait_err(AIT_E_SHAPE,
                     "window of %lld (kernel %lld, dilation %lld) is larger than the padded input "
                     "%lld in spatial dim %d",
                     (long long)dk, (long long)w->k[i], (long long)w->d[i],
                     (long long)(n + w->pb[i] + w->pe[i]), i);
    if (ceil_mode && mode == PAD_NOTSET) {
      w->out[i] = (span + s - 1) / s + 1;
      /* the last window must start inside the input or the begin padding */
      if ((w->out[i] - 1) * s >= n + w->pb[i]) w->out[i]--;
    } else {
      w->out[i] = span / s + 1;
    }
  }
  return AIT_OK;
}

ait_status nn_win_convt(const ait_node *node, int nsp, const int64_t *in, const int64_t *kernel,
                        nn_win *w) {
  pad_mode mode = PAD_NOTSET;
  AIT_TRY(read_auto_pad(node, &mode));
  AIT_TRY(read_common(node, nsp, in, kernel, true, w));
  AIT_TRY(read_ints(node, "output_padding", nsp, 0, 0, w->out_pad));
  int nos = 0;
  const int64_t *os = ait_attr_ints(node, "output_shape", &nos);
  if (os && nos != nsp && nos != nsp + 2)
    return ait_err(AIT_E_INVALID_ARG, "output_shape has %d values for %d spatial dims", nos, nsp);
  if (os) os += nos - nsp; /* a full N, C, ... shape: keep the spatial part */
  for (int i = 0; i < nsp; i++) {
    /* as in nn_win_conv: the model's numbers, 128-bit arithmetic, results
     * well inside 64 bits */
    const __int128 lim = (__int128)1 << 62;
    __int128 dk = w->k[i] < 0 ? -1 : (__int128)(w->k[i] - 1) * w->d[i] + 1;
    __int128 s = w->s[i], n = w->in[i], op = w->out_pad[i], out;
    if (dk > lim || op > lim || op < -lim || w->pb[i] > lim || w->pe[i] > lim || w->pb[i] < -lim ||
        w->pe[i] < -lim)
      return ait_err(AIT_E_INVALID_ARG, "ConvTranspose window in spatial dim %d is out of range",
                     i);
    w->out[i] = -1;
    if (mode == PAD_VALID) w->pb[i] = w->pe[i] = 0;
    if (os || mode == PAD_SAME_UPPER || mode == PAD_SAME_LOWER) {
      /* pads follow from the requested output size */
      if (os && os[i] < 0)
        return ait_err(AIT_E_INVALID_ARG, "output_shape[%d] = %lld", i, (long long)os[i]);
      w->pb[i] = w->pe[i] = 0;
      if (n < 0) {
        if (os) w->out[i] = os[i];
        continue;
      }
      out = os ? os[i] : n * s;
      if (out > lim)
        return ait_err(AIT_E_INVALID_ARG,
                       "ConvTranspose output size in spatial dim %d is out of "
                       "range",
                       i);
      w->out[i] = (int64_t)out;
      if (dk < 0) continue;
      __int128 total = s * (n - 1) + op + dk - out;
      if (total < 0) total = 0; /* a larger output is zero-extended at the end */
      if (total > lim)
        return ait_err(AIT_E_INVALID_ARG,
                       "ConvTranspose padding in spatial dim %d is out of "
                       "range",
                       i);
      w->pb[i] = (int64_t)(mode == PAD_SAME_UPPER ? total / 2 : total - total / 2);
      w->pe[i] = (int64_t)total - w->pb[i];
      continue;
    }
    if (n < 0 || dk < 0) continue;
    out = s * (n - 1) + op + dk - w->pb[i] - w->pe[i];
    if (out < 0 || out > lim)
      return ait_err(AIT_E_SHAPE, "ConvTranspose output size %s in spatial dim %d",
                     out < 0 ? "negative" : "out of range", i);
    w->out[i] = (int64_t)out;
  }
  return AIT_OK;
}

/* The product, INT64_MAX when it overflows (an allocation of it then fails
 * instead of being sized by a wrapped number). */
static int64_t prod(int n, const int64_t *v) {
  int64_t p = 1;
  for (int i = 0; i < n; i++)
    if (__builtin_mul_overflow(p, v[i], &p)) return INT64_MAX;
  return p;
}
int64_t nn_win_out_numel(const nn_win *w) { return prod(w->nsp, w->out); }
int64_t nn_win_in_numel(const nn_win *w) { return prod(w->nsp, w->in); }
int64_t nn_win_k_numel(const nn_win *w) { return prod(w->nsp, w->k); }

bool nn_pool_has_dilations(const ait_node *node) {
  if (!strcmp(node->op_type, "MaxPool")) return node->opset >= 10;
  if (!strcmp(node->op_type, "LpPool")) return node->opset >= 18;
  return node->opset >= 19; /* AveragePool */
}
