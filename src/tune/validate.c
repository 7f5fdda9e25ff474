/* Numeric validation of a candidate's outputs against the reference. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tune/tune.h"

/* float32 is judged element by element. Reduced precisions are not: a
 * 16-bit or 8-bit result differs from float32 by a fraction of each value's
 * own magnitude, so large outputs (ResNet-50's logits reach ~100) fail any
 * per-element bound that small outputs would pass, while the result is as
 * good (bf16 ResNet-50: 39 of 1000 logits outside 5e-2, cosine 0.99999,
 * top-1 kept). They are judged by cosine similarity, top-1 agreement and a
 * normwise bound (max error over the tensor's largest value); fp16 and bf16
 * tighter than the quantized formats. A user's rtol/atol turns the
 * per-element check back on for fp16/bf16. */
ait_tolerance ait_tolerance_for(ait_dtype compute, const ait_tune_options *o) {
  ait_tolerance t;
  switch (compute) {
  case AIT_FLOAT16: t = (ait_tolerance){1e-2, 1e-2, 0.9995, false, 0.99, 1e-2, 2e-3}; break;
  case AIT_BFLOAT16: t = (ait_tolerance){5e-2, 5e-2, 0.999, false, 0.99, 5e-2, 8e-3}; break;
  case AIT_INT8: /* quantized (int8, fp8, fp4): cosine and top-1, errors reported */
  case AIT_UINT8: t = (ait_tolerance){1e-1, 1e-1, 0.99, false, 0.99, 0, 3e-2}; break;
  default: t = (ait_tolerance){1e-3, 1e-4, 0.9999, true, 0.99, 0, 1e-5}; break;
  }
  if (o && o->min_top1 > 0) t.min_top1 = o->min_top1;
  if (o && o->rtol > 0) t.rtol = o->rtol;
  if (o && o->atol > 0) t.atol = o->atol;
  if (o && o->min_cosine > 0) t.min_cosine = o->min_cosine;
  if (o && (o->rtol > 0 || o->atol > 0) && (compute == AIT_FLOAT16 || compute == AIT_BFLOAT16))
    t.elementwise = true;
  return t;
}

bool ait_outputs_match(const ait_tensor *got, const ait_tensor *want, const ait_tolerance *tol,
                       ait_error_stats *st, char *why, size_t n) {
  char a[128], b[128];
  st->checked++;
  if (got->kind != want->kind || got->dtype != want->dtype || got->rank != want->rank ||
      memcmp(got->dims, want->dims, sizeof(int64_t) * (size_t)got->rank)) {
    snprintf(why, n, "output is %s %s, the reference gives %s %s", ait_dtype_name(got->dtype),
             ait_shape_str(got->rank, got->dims, a, sizeof a), ait_dtype_name(want->dtype),
             ait_shape_str(want->rank, want->dims, b, sizeof b));
    return false;
  }
  if (got->kind != AIT_KIND_TENSOR) {
    snprintf(why, n, "sequence and optional outputs are compared by the conformance suite only");
    return got->kind == AIT_KIND_NONE;
  }
  const ait_dtype_traits *tr = ait_dtype_traits_of(got->dtype);
  int64_t cnt = ait_tensor_numel(got);
  if (!tr) { /* strings: exact */
    for (int64_t i = 0; i < cnt; i++)
      if (strcmp(((char **)got->data)[i], ((char **)want->data)[i])) {
        snprintf(why, n, "string element %lld differs", (long long)i);
        st->mismatches++;
        return false;
      }
    return true;
  }
  if (!tr->is_float) {
    for (int64_t i = 0; i < cnt; i++)
      if (ait_load_i64(tr, got->data, i) != ait_load_i64(tr, want->data, i)) {
        snprintf(why, n,
                 "element %lld is %lld, the reference gives %lld (integers must match exactly)",
                 (long long)i, (long long)ait_load_i64(tr, got->data, i),
                 (long long)ait_load_i64(tr, want->data, i));
        st->mismatches++;
        return false;
      }
    return true;
  }
  double dot = 0, ng = 0, nw = 0, max_abs = 0, scale = 0;
  long long bad = 0, mism = 0;
  int64_t first_bad = -1;
  for (int64_t i = 0; i < cnt; i++) {
    double x = ait_load_f64(tr, got->data, i), y = ait_load_f64(tr, want->data, i);
    if (!isfinite(y)) {
      if (!(isnan(x) && isnan(y)) && x != y) mism++;
      continue;
    }
    if (!isfinite(x)) {
      bad++;
      continue;
    }
    double d = fabs(x - y);
    max_abs = d > max_abs ? d : max_abs;
    scale = fabs(y) > scale ? fabs(y) : scale;
    dot += x * y;
    ng += x * x;
    nw += y * y;
    if (tol->elementwise && d > tol->atol + tol->rtol * fabs(y)) {
      if (first_bad < 0) first_bad = i;
      mism++;
    }
  }
  /* the norms apart (ng * nw overflows for float64 outputs over ~1e77); a
   * zero tensor has no direction: it matches one within atol, all zeros too */
  double cosine = ng > 0 && nw > 0 ? dot / (sqrt(ng) * sqrt(nw)) : max_abs <= tol->atol ? 1.0 : 0.0;
  cosine = cosine > 1 ? 1 : cosine < -1 ? -1 : cosine;
  double rel = scale > 0 ? max_abs / scale : max_abs;
  if (max_abs > st->max_abs) st->max_abs = max_abs;
  if (rel > st->max_rel) st->max_rel = rel;
  /* the first float output sets it: an integer output before it (a Shape,
   * an argmax, ids) has no cosine, and used to leave it at 0 */
  if (st->cosines++ == 0 || cosine < st->min_cosine) st->min_cosine = cosine;
  st->bad_values += bad;
  st->mismatches += mism;
  if (bad) {
    snprintf(why, n, "%lld NaN/Inf values where the reference is finite", bad);
    return false;
  }
  if (mism) {
    snprintf(why, n,
             "%lld of %lld elements outside rtol %g / atol %g (first at %lld; max abs error %.3g, "
             "cosine %.6f)",
             mism, (long long)cnt, tol->rtol, tol->atol, (long long)first_bad, max_abs, cosine);
    return false;
  }
  /* classifiers: do the rows still pick the same class? Classes the
   * reference itself cannot tell apart at this precision are a tie, not a
   * disagreement: an untrained network's logits (randomly initialised
   * GoogLeNet's spread over 3e-2) differ in the fifth digit, and bf16
   * picked a neighbour with cosine 0.999999. The margin is relative to the
   * row's largest magnitude and fixed per precision, never to the
   * candidate's own error (a flip always lies within twice that). */
  if (got->rank == 2 && got->dims[1] >= 2 && got->dims[0] >= 1) {
    int64_t rows = got->dims[0], cls = got->dims[1], agree = 0;
    for (int64_t r = 0; r < rows; r++) {
      int64_t bg = 0, bw = 0;
      double mag = 0;
      for (int64_t k = 0; k < cls; k++) {
        double wk = ait_load_f64(tr, want->data, r * cls + k);
        mag = fabs(wk) > mag ? fabs(wk) : mag;
        if (k == 0) continue;
        if (ait_load_f64(tr, got->data, r * cls + k) > ait_load_f64(tr, got->data, r * cls + bg))
          bg = k;
        if (wk > ait_load_f64(tr, want->data, r * cls + bw)) bw = k;
      }
      double gap =
          ait_load_f64(tr, want->data, r * cls + bw) - ait_load_f64(tr, want->data, r * cls + bg);
      agree += bg == bw || gap <= tol->tie_rel * mag;
    }
    double frac = (double)agree / (double)rows;
    if (st->top1 < 0 || frac < st->top1) st->top1 = frac;
    if (frac < tol->min_top1) {
      snprintf(why, n,
               "top-1 agreement %.3f is below %g (%lld of %lld rows pick the reference's class)",
               frac, tol->min_top1, (long long)agree, (long long)rows);
      return false;
    }
  }
  if (cosine < tol->min_cosine) {
    snprintf(why, n, "cosine similarity %.6f is below %g", cosine, tol->min_cosine);
    return false;
  }
  if (tol->max_rel > 0 && rel > tol->max_rel) {
    snprintf(why, n,
             "max error %.3g is %.3g of the largest reference value, above %g (cosine %.6f)",
             max_abs, rel, tol->max_rel, cosine);
    return false;
  }
  return true;
}
