/* FusedInstanceNorm: InstanceNormalization with the channel's scale and
 * shift folded in by native_fuse.c (wav2vec2's GroupNorm with affine: the
 * Mul and Add after it) and its activation (the Gelu after that). Per
 * (image, channel) plane: the mean (the one read from memory), the squared
 * deviations (no cancellation; a plane of a few thousand floats is still in
 * L1), then normalise + shift in one write and the activation on the plane
 * while it is in L1: one read and one write of the tensor where the
 * unfused chain made four of each. */
#include <math.h>
#include <string.h>

#include "backends/native/native.h"
#include "ops/fused_impl.h"

typedef struct gn_job {
  const float *x, *s, *b;
  float *y;
  int64_t C, planes, len, per_task;
  double eps;
  ait_act act;
} gn_job;

/* sum of (x - m)^p, p 1 or 2, in 8 float lanes then double */
static NAT_INLINE double lanes_sum(const float *x, int64_t n, float m, int p) {
  float a[8] = {0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; k++) {
      float d = x[i + k] - m;
      a[k] += p == 1 ? d : d * d;
    }
  double s = 0;
  for (int k = 0; k < 8; k++)
    s += a[k];
  for (; i < n; i++) {
    double d = (double)x[i] - m;
    s += p == 1 ? d : d * d;
  }
  return s;
}

NAT_CLONES static void gn_task(void *arg, int64_t t, int tid) {
  (void)tid;
  const gn_job *j = arg;
  int64_t p1 = (t + 1) * j->per_task < j->planes ? (t + 1) * j->per_task : j->planes;
  for (int64_t plane = t * j->per_task; plane < p1; plane++) {
    int64_t c = plane % j->C, len = j->len;
    const float *x = j->x + plane * len;
    float *y = j->y + plane * len;
    float mean = (float)(lanes_sum(x, len, 0.0f, 1) / (double)len);
    float var = (float)(lanes_sum(x, len, mean, 2) / (double)len);
    float a = (float)((double)j->s[c] / sqrt((double)var + j->eps)), b = j->b[c];
    for (int64_t i = 0; i < len; i++)
      y[i] = (x[i] - mean) * a + b;
    if (j->act.kind != AIT_ACT_NONE) nat_act_f32(&j->act, y, len);
  }
}

ait_status nat_k_fused_instancenorm(nat_run *r, const ait_node *n, const ait_tensor *const *in,
                                    int n_in) {
  const ait_tensor *X = in[0], *S = n_in > 1 ? in[1] : NULL, *B = n_in > 2 ? in[2] : NULL;
  if (!X || !S || !B || X->dtype != AIT_FLOAT32 || S->dtype != AIT_FLOAT32 ||
      B->dtype != AIT_FLOAT32 || X->rank < 3 || ait_tensor_numel(S) != X->dims[1] ||
      ait_tensor_numel(B) != X->dims[1])
    return AIT_E_UNSUPPORTED;
  gn_job j;
  memset(&j, 0, sizeof j);
  if (ait_act_parse(n, &j.act) != AIT_OK) return AIT_E_UNSUPPORTED;
  j.C = X->dims[1];
  j.planes = X->dims[0] * j.C;
  j.len = j.planes ? ait_tensor_numel(X) / j.planes : 0;
  if (j.len == 0) return AIT_E_UNSUPPORTED;
  j.eps = ait_attr_float(n, "epsilon", 1e-5f);
  ait_tensor *Y;
  AIT_TRY(nat_output(r, 0, AIT_FLOAT32, X->rank, X->dims, &Y));
  j.x = X->data, j.y = Y->data, j.s = S->data, j.b = B->data;
  j.per_task = nat_chunk(r, j.planes, 4096 / j.len + 1);
  nat_pool_run(nat_run_pool(r), (j.planes + j.per_task - 1) / j.per_task, gn_task, &j);
  return AIT_OK;
}
