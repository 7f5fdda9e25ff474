/* BatchNormalization folded into the product before it: the arithmetic
 * every backend shares (native folds into Conv weights and rewrites a lone
 * BN as a depthwise 1x1 Conv; onednn folds into its primitive's weights). */
#include <math.h>

#include "ir/passes/passes.h"

bool ait_bn_is_inference(const ait_node *b) {
  if (b->opset >= 14 && ait_attr_int(b, "training_mode", 0) != 0) return false;
  if (b->opset < 9 && ait_attr_int(b, "spatial", 1) == 0) return false;
  if (b->opset < 7 && ait_attr_int(b, "is_test", 0) == 0) return false;
  return true;
}

void ait_bn_fold(const float *w, int64_t M, int64_t per, const float *cb, const float *scale,
                 const float *bias, const float *mean, const float *var, double eps, float *w_out,
                 float *b_out) {
  for (int64_t m = 0; m < M; m++) {
    double k = scale[m] / sqrt((double)var[m] + eps);
    if (!w)
      w_out[m] = (float)k;
    else
      for (int64_t j = 0; j < per; j++)
        w_out[m * per + j] = (float)(w[m * per + j] * k);
    b_out[m] = (float)(((cb ? cb[m] : 0.0) - mean[m]) * k + bias[m]);
  }
}
