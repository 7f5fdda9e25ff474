/* Tensor helpers of the CLI: comparison, random fill, summaries. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "core/error.h"
#include "ir/graph.h"
#include "onnx/onnx_io.h"

ait_status cli_read_tensor_for(const char *path, const ait_value *decl, ait_tensor **out) {
  AIT_TRY(ait_value_file_read(path, decl->type, decl->dtype, out));
  if ((*out)->kind == AIT_KIND_TENSOR && (*out)->dtype == AIT_UINT16 && decl->dtype == AIT_BFLOAT16)
    (*out)->dtype = AIT_BFLOAT16;
  return AIT_OK;
}

cli_tol cli_tolerance(ait_dtype dt) {
  switch (dt) {
  case AIT_FLOAT16: return (cli_tol){1e-2, 1e-3};
  case AIT_BFLOAT16: return (cli_tol){2e-2, 1e-2};
  case AIT_FLOAT32:
  case AIT_COMPLEX64: return (cli_tol){1e-3, 1e-5};
  case AIT_FLOAT64:
  case AIT_COMPLEX128: return (cli_tol){1e-6, 1e-7};
  default: return (cli_tol){0, 0};
  }
}

bool cli_compare(const ait_tensor *got, const ait_tensor *want, char *why, size_t n) {
  char a[160], b[160];
  if (got->kind != want->kind) {
    snprintf(why, n, "got a %s, expected a %s",
             got->kind == AIT_KIND_TENSOR ? "tensor" : "sequence",
             want->kind == AIT_KIND_TENSOR ? "tensor" : "sequence");
    return false;
  }
  if (got->kind == AIT_KIND_SEQUENCE) {
    if (got->n_items != want->n_items) {
      snprintf(why, n, "sequence has %d items, expected %d", got->n_items, want->n_items);
      return false;
    }
    for (int i = 0; i < got->n_items; i++)
      if (!cli_compare(got->items[i], want->items[i], why, n)) return false;
    return true;
  }
  if (got->kind == AIT_KIND_NONE) return true;
  if (got->dtype != want->dtype) {
    snprintf(why, n, "dtype %s, expected %s", ait_dtype_name(got->dtype),
             ait_dtype_name(want->dtype));
    return false;
  }
  if (got->rank != want->rank ||
      memcmp(got->dims, want->dims, sizeof(int64_t) * (size_t)got->rank)) {
    snprintf(why, n, "shape %s, expected %s", ait_shape_str(got->rank, got->dims, a, sizeof a),
             ait_shape_str(want->rank, want->dims, b, sizeof b));
    return false;
  }
  int64_t cnt = ait_tensor_numel(got);
  if (got->dtype == AIT_STRING) {
    for (int64_t i = 0; i < cnt; i++) {
      const char *x = ((char **)got->data)[i], *y = ((char **)want->data)[i];
      if (strcmp(x ? x : "", y ? y : "")) {
        snprintf(why, n, "element %lld is \"%.40s\", expected \"%.40s\"", (long long)i, x ? x : "",
                 y ? y : "");
        return false;
      }
    }
    return true;
  }
  if (got->dtype == AIT_COMPLEX64 || got->dtype == AIT_COMPLEX128) {
    /* compare as twice as many reals */
    ait_tensor g2 = *got, w2 = *want;
    g2.dtype = w2.dtype = got->dtype == AIT_COMPLEX64 ? AIT_FLOAT32 : AIT_FLOAT64;
    g2.rank = w2.rank = 1;
    g2.dims[0] = w2.dims[0] = cnt * 2;
    return cli_compare(&g2, &w2, why, n);
  }
  const ait_dtype_traits *tr = ait_dtype_traits_of(got->dtype);
  if (!tr) {
    snprintf(why, n, "cannot compare dtype %s", ait_dtype_name(got->dtype));
    return false;
  }
  if (!tr->is_float) {
    for (int64_t i = 0; i < cnt; i++) {
      int64_t x = ait_load_i64(tr, got->data, i), y = ait_load_i64(tr, want->data, i);
      if (x != y) {
        snprintf(why, n, "element %lld is %lld, expected %lld (exact match required for %s)",
                 (long long)i, (long long)x, (long long)y, ait_dtype_name(got->dtype));
        return false;
      }
    }
    return true;
  }
  cli_tol tol = cli_tolerance(got->dtype);
  for (int64_t i = 0; i < cnt; i++) {
    double x = ait_load_f64(tr, got->data, i), y = ait_load_f64(tr, want->data, i);
    if (isnan(x) && isnan(y)) continue;
    if (isinf(y) && x == y) continue;
    if (!(fabs(x - y) <= tol.atol + tol.rtol * fabs(y))) {
      snprintf(why, n, "element %lld is %.9g, expected %.9g (rtol %g, atol %g)", (long long)i, x, y,
               tol.rtol, tol.atol);
      return false;
    }
  }
  return true;
}

void cli_print_summary(FILE *f, const char *name, const ait_tensor *t) {
  char s[160];
  if (t->kind == AIT_KIND_SEQUENCE) {
    fprintf(f, "%s: sequence of %d %s tensors\n", name, t->n_items, ait_dtype_name(t->dtype));
    return;
  }
  if (t->kind == AIT_KIND_NONE) {
    fprintf(f, "%s: optional without a value\n", name);
    return;
  }
  fprintf(f, "%s: %s %s", name, ait_dtype_name(t->dtype),
          ait_shape_str(t->rank, t->dims, s, sizeof s));
  const ait_dtype_traits *tr = ait_dtype_traits_of(t->dtype);
  int64_t cnt = ait_tensor_numel(t);
  if (tr && cnt > 0) {
    double mn = INFINITY, mx = -INFINITY, sum = 0;
    for (int64_t i = 0; i < cnt; i++) {
      double v = ait_load_f64(tr, t->data, i);
      mn = v < mn ? v : mn;
      mx = v > mx ? v : mx;
      sum += v;
    }
    fprintf(f, " min %.6g max %.6g mean %.6g first [", mn, mx, sum / (double)cnt);
    for (int64_t i = 0; i < cnt && i < 5; i++)
      fprintf(f, i ? ", %.6g" : "%.6g", ait_load_f64(tr, t->data, i));
    fprintf(f, "%s]", cnt > 5 ? ", ..." : "");
  }
  fputc('\n', f);
}

cJSON *cli_summary_json(const char *name, const ait_tensor *t) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "name", name);
  if (t->kind != AIT_KIND_TENSOR) {
    cJSON_AddStringToObject(o, "kind", t->kind == AIT_KIND_SEQUENCE ? "sequence" : "none");
    if (t->kind == AIT_KIND_SEQUENCE) cJSON_AddNumberToObject(o, "items", t->n_items);
    return o;
  }
  cJSON_AddStringToObject(o, "kind", "tensor");
  cJSON_AddStringToObject(o, "dtype", ait_dtype_name(t->dtype));
  cJSON *shape = cJSON_AddArrayToObject(o, "shape");
  for (int k = 0; k < t->rank; k++)
    cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t->dims[k]));
  const ait_dtype_traits *tr = ait_dtype_traits_of(t->dtype);
  int64_t cnt = ait_tensor_numel(t);
  if (!tr || cnt <= 0) return o;
  double mn = INFINITY, mx = -INFINITY, sum = 0;
  for (int64_t i = 0; i < cnt; i++) {
    double v = ait_load_f64(tr, t->data, i);
    mn = v < mn ? v : mn;
    mx = v > mx ? v : mx;
    sum += v;
  }
  /* JSON has no NaN or Inf: such a statistic is null */
  cJSON_AddItemToObject(o, "min", isfinite(mn) ? cJSON_CreateNumber(mn) : cJSON_CreateNull());
  cJSON_AddItemToObject(o, "max", isfinite(mx) ? cJSON_CreateNumber(mx) : cJSON_CreateNull());
  double mean = sum / (double)cnt;
  cJSON_AddItemToObject(o, "mean", isfinite(mean) ? cJSON_CreateNumber(mean) : cJSON_CreateNull());
  cJSON *first = cJSON_AddArrayToObject(o, "first");
  for (int64_t i = 0; i < cnt && i < 5; i++) {
    double v = ait_load_f64(tr, t->data, i);
    cJSON_AddItemToArray(first, isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull());
  }
  return o;
}
