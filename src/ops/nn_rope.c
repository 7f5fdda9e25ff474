/* RotaryEmbedding (opset 23): rotates the first rotary_embedding_dim values
 * of each head (all of them by default) by the angles of the token's
 * position, in double.
 *
 * X is (B, H, S, D), or (B, S, H*D) with num_heads. cos_cache/sin_cache are
 * (max_position + 1, rd / 2) read at position_ids[b][s], or (B, S, rd / 2)
 * without position_ids. Pairs are (x[k], x[k + rd/2]) for the half split, or
 * (x[2k], x[2k+1]) when interleaved; each becomes
 * (cos x1 - sin x2, sin x1 + cos x2). */
#include <stdlib.h>
#include <string.h>

#include "ops/nn_impl.h"

typedef struct rope_geo {
  int64_t B, H, S, D, rd, half;
  int64_t sb, sh, ss; /* element strides of (b, h, s) in X */
} rope_geo;

static ait_status rope_geometry(const ait_node *node, const ait_tensor *X, rope_geo *g) {
  if (X->rank == 4) {
    g->B = X->dims[0], g->H = X->dims[1], g->S = X->dims[2], g->D = X->dims[3];
    g->sb = g->H * g->S * g->D, g->sh = g->S * g->D, g->ss = g->D;
  } else if (X->rank == 3) {
    g->H = ait_attr_int(node, "num_heads", 0);
    if (g->H <= 0 || X->dims[2] % g->H)
      return ait_err(AIT_E_INVALID_ARG, "3-D X needs num_heads > 0 dividing its %lld values",
                     (long long)X->dims[2]);
    g->B = X->dims[0], g->S = X->dims[1], g->D = X->dims[2] / g->H;
    g->sb = g->S * g->H * g->D, g->sh = g->D, g->ss = g->H * g->D;
  } else {
    return ait_err(AIT_E_SHAPE, "X must be 3-D or 4-D, got rank %d", X->rank);
  }
  g->rd = ait_attr_int(node, "rotary_embedding_dim", 0);
  if (g->rd == 0) g->rd = g->D;
  if (g->rd < 0 || g->rd > g->D || g->rd % 2)
    return ait_err(AIT_E_INVALID_ARG,
                   "rotary_embedding_dim %lld must be even and <= head size %lld", (long long)g->rd,
                   (long long)g->D);
  g->half = g->rd / 2;
  return AIT_OK;
}

/* Row index into the caches for token (b, s); -1 when out of range. */
static int64_t cache_row(const rope_geo *g, const ait_tensor *pos, const ait_tensor *cache,
                         int64_t b, int64_t s) {
  if (!pos) return b * g->S + s;
  int64_t p = ait_load_i64(ait_dtype_traits_of(pos->dtype), pos->data, b * g->S + s);
  return p >= 0 && p < cache->dims[0] ? p : -1;
}

static ait_status check_cache(const rope_geo *g, const ait_tensor *c, const ait_tensor *pos,
                              const char *what) {
  AIT_TRY(nn_check_float(c, what));
  bool ok = pos ? c->rank == 2 && c->dims[1] == g->half
                : c->rank == 3 && c->dims[0] == g->B && c->dims[1] == g->S && c->dims[2] == g->half;
  if (!ok)
    return ait_err(AIT_E_SHAPE, "%s must be %s with last dim %lld", what,
                   pos ? "(max_position + 1, rd/2)" : "(B, S, rd/2)", (long long)g->half);
  return AIT_OK;
}

NN_KERNEL(nn_rope_kernel) {
  const ait_tensor *X = n_in > 0 ? in[0] : NULL, *C = n_in > 1 ? in[1] : NULL;
  const ait_tensor *Sn = n_in > 2 ? in[2] : NULL, *pos = n_in > 3 ? in[3] : NULL;
  if (!X || !C || !Sn) return ait_err(AIT_E_INVALID_ARG, "X, cos_cache and sin_cache are required");
  AIT_TRY(nn_check_float(X, "X"));
  rope_geo g = {0};
  AIT_TRY(rope_geometry(node, X, &g));
  AIT_TRY(check_cache(&g, C, pos, "cos_cache"));
  AIT_TRY(check_cache(&g, Sn, pos, "sin_cache"));
  if (pos && (ait_tensor_numel(pos) != g.B * g.S || !ait_dtype_traits_of(pos->dtype) ||
              !ait_dtype_traits_of(pos->dtype)->is_int))
    return ait_err(AIT_E_SHAPE, "position_ids must be (B, S) integers");
  bool inter = ait_attr_int(node, "interleaved", 0) != 0;
  AIT_TRY(nn_new(&out[0], X->dtype, X->rank, X->dims));
  double *x = nn_load_f64(X), *c = nn_load_f64(C), *sn = nn_load_f64(Sn);
  ait_status st = x && c && sn ? AIT_OK : ait_err(AIT_E_NOMEM, "out of memory in RotaryEmbedding");
  for (int64_t b = 0; !st && b < g.B; b++)
    for (int64_t s = 0; !st && s < g.S; s++) {
      int64_t row = cache_row(&g, pos, C, b, s);
      if (row < 0) {
        st = ait_err(AIT_E_INVALID_ARG, "position id out of the caches' %lld rows",
                     (long long)C->dims[0]);
        break;
      }
      const double *cr = c + row * g.half, *sr = sn + row * g.half;
      for (int64_t h = 0; h < g.H; h++) {
        double *v = x + b * g.sb + h * g.sh + s * g.ss;
        for (int64_t k = 0; k < g.half; k++) {
          int64_t i1 = inter ? 2 * k : k, i2 = inter ? 2 * k + 1 : k + g.half;
          double x1 = v[i1], x2 = v[i2];
          v[i1] = cr[k] * x1 - sr[k] * x2;
          v[i2] = sr[k] * x1 + cr[k] * x2;
        }
      }
    }
  if (!st) nn_store_f64(out[0], x);
  free(x), free(c), free(sn);
  return st;
}
