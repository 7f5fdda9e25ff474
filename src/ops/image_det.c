/* Det: determinant of each square matrix in the last two dims, by LU
 * decomposition with partial pivoting in double. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/image_impl.h"

/* Determinant of the n x n row-major matrix a (destroyed). */
static double det_lu(double *a, int64_t n) {
  double det = 1.0;
  for (int64_t k = 0; k < n; k++) {
    int64_t p = k;
    for (int64_t i = k + 1; i < n; i++)
      if (fabs(a[i * n + k]) > fabs(a[p * n + k])) p = i;
    if (a[p * n + k] == 0.0) return 0.0;
    if (p != k) {
      for (int64_t j = 0; j < n; j++) {
        double t = a[k * n + j];
        a[k * n + j] = a[p * n + j];
        a[p * n + j] = t;
      }
      det = -det;
    }
    double piv = a[k * n + k];
    det *= piv;
    for (int64_t i = k + 1; i < n; i++) {
      double f = a[i * n + k] / piv;
      for (int64_t j = k + 1; j < n; j++)
        a[i * n + j] -= f * a[k * n + j];
    }
  }
  return det;
}

IMG_KERNEL(img_det) {
  const ait_tensor *x = img_in(in, n_in, 0);
  if (!x) return ait_err(AIT_E_INVALID_ARG, "X is required");
  const ait_dtype_traits *tr = ait_dtype_traits_of(x->dtype);
  if (!tr || !tr->is_float)
    return ait_err(AIT_E_DTYPE, "X must be float, got %s", ait_dtype_name(x->dtype));
  if (x->rank < 2 || x->dims[x->rank - 1] != x->dims[x->rank - 2])
    return ait_err(AIT_E_SHAPE, "X must be [..., M, M]");
  int64_t n = x->dims[x->rank - 1], nb = ait_shape_numel(x->rank - 2, x->dims);
  AIT_TRY(img_new(x->dtype, x->rank - 2, x->dims, &out[0]));
  double *v = NULL;
  AIT_TRY(img_load_f64(x, &v));
  for (int64_t b = 0; b < nb; b++)
    ait_store_f64(tr, out[0]->data, b, det_lu(v + b * n * n, n));
  free(v);
  return AIT_OK;
}

IMG_SHAPE(img_det_shape) {
  const ait_value *x = ait_node_in(g, node, 0);
  ait_dtype dt = x ? x->dtype : AIT_UNDEFINED;
  if (!x || x->rank < 2)
    ait_set_out(g, node, 0, dt, -1, NULL);
  else
    ait_set_out(g, node, 0, dt, x->rank - 2, x->dims);
  return AIT_OK;
}
