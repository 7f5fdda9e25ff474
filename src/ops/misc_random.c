/* Random generators: RandomUniform, RandomNormal, RandomUniformLike,
 * RandomNormalLike, Bernoulli.
 *
 * The generator is MT19937 driven exactly as numpy's legacy
 * numpy.random.RandomState(seed), which the ONNX reference implementation
 * uses, so that a node with a `seed` gives the same values as
 * onnx.reference:
 *  - seeding: init_genrand(seed), seed = the float attribute truncated to an
 *    integer, taken modulo 2^32;
 *  - uniform [0, 1): (a >> 5, b >> 6) of two 32-bit outputs as a 53-bit double
 *    (random_sample);
 *  - normal: the polar Box-Muller method keeping the second value for the
 *    next call (legacy_gauss);
 *  - Bernoulli(p): numpy's legacy binomial(1, p) by inversion (one uniform
 *    per element, compared with exp(log(1 - p)), mirrored for p > 0.5).
 * The state is created for each run of the node, so a seeded node repeats
 * its values on every run. Without a seed the state is seeded from the
 * real-time clock and the node's address (values differ between runs).
 * Values are scaled in the output dtype's precision, as numpy does. */
#include <math.h>
#include <stdint.h>
#include <time.h>

#include "ir/shape.h"
#include "ops/misc_impl.h"

#define MT_N 624
#define MT_M 397

typedef struct mt_state {
  uint32_t key[MT_N];
  int pos;
  bool has_gauss;
  double gauss;
} mt_state;

static void mt_seed(mt_state *s, uint32_t seed) {
  for (int i = 0; i < MT_N; i++) {
    s->key[i] = seed;
    seed = 1812433253u * (seed ^ (seed >> 30)) + (uint32_t)(i + 1);
  }
  s->pos = MT_N;
  s->has_gauss = false;
  s->gauss = 0.0;
}

static uint32_t mt_next(mt_state *s) {
  if (s->pos == MT_N) {
    for (int i = 0; i < MT_N; i++) {
      uint32_t y = (s->key[i] & 0x80000000u) | (s->key[(i + 1) % MT_N] & 0x7fffffffu);
      s->key[i] = s->key[(i + MT_M) % MT_N] ^ (y >> 1) ^ ((0u - (y & 1u)) & 0x9908b0dfu);
    }
    s->pos = 0;
  }
  uint32_t y = s->key[s->pos++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= y >> 18;
  return y;
}

static double mt_double(mt_state *s) {
  uint32_t a = mt_next(s) >> 5, b = mt_next(s) >> 6;
  return (a * 67108864.0 + b) / 9007199254740992.0;
}

static double mt_gauss(mt_state *s) {
  if (s->has_gauss) {
    s->has_gauss = false;
    return s->gauss;
  }
  double x1, x2, r2;
  do {
    x1 = 2.0 * mt_double(s) - 1.0;
    x2 = 2.0 * mt_double(s) - 1.0;
    r2 = x1 * x1 + x2 * x2;
  } while (r2 >= 1.0 || r2 == 0.0);
  double f = sqrt(-2.0 * log(r2) / r2);
  s->gauss = f * x1;
  s->has_gauss = true;
  return f * x2;
}

/* numpy's legacy binomial(1, p) (random_binomial_inversion with n = 1). */
static int mt_bernoulli(mt_state *s, double p) {
  bool flip = p > 0.5;
  double pp = flip ? 1.0 - p : p, q = 1.0 - pp, qn = exp(log(q));
  int64_t bound = (int64_t)fmin(1.0, pp + 10.0 * sqrt(pp * q + 1.0));
  int64_t x = 0;
  double px = qn, u = mt_double(s);
  while (u > px) {
    x++;
    if (x > bound) {
      x = 0;
      px = qn;
      u = mt_double(s);
    } else {
      u -= px;
      px = ((double)(1 - x + 1) * pp * px) / ((double)x * q);
    }
  }
  return (int)(flip ? 1 - x : x);
}

/* Seed from the node's 'seed' attribute, or from the clock. */
static void seed_state(mt_state *s, const ait_node *node, const void *salt) {
  const ait_attr *a = ait_node_attr(node, "seed");
  if (a && isfinite(a->f)) {
    double t = trunc((double)a->f);
    mt_seed(s, (uint32_t)(uint64_t)(int64_t)fmax(fmin(t, 0x1p62), -0x1p62));
    return;
  }
  struct timespec ts;
  timespec_get(&ts, TIME_UTC);
  uint64_t z = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
  z ^= (uint64_t)(uintptr_t)salt * 0x9e3779b97f4a7c15u;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u; /* splitmix64 finalizer */
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  mt_seed(s, (uint32_t)(z ^ (z >> 31)));
}

/* v rounded to dtype (store and reload through the dtype's traits). */
static double in_dtype(const ait_dtype_traits *tr, double v) {
  unsigned char b[16];
  tr->from_f64(b, v);
  return tr->to_f64(b);
}

static ait_status float_dtype(ait_dtype dt, const char *op) {
  const ait_dtype_traits *tr = ait_dtype_traits_of(dt);
  if (!tr || !tr->is_float)
    return ait_err(AIT_E_DTYPE, "%s output dtype must be a float type, got %s", op,
                   ait_dtype_name(dt));
  return AIT_OK;
}

/* Fill y with uniform (normal == false) or normal samples: u * (high - low) +
 * low, or g * scale + mean, each step rounded to y's dtype. */
static void fill_random(ait_tensor *y, const ait_node *node, bool normal) {
  const ait_dtype_traits *tr = ait_dtype_traits_of(y->dtype);
  mt_state s;
  seed_state(&s, node, y);
  double mul, add;
  if (normal) {
    mul = in_dtype(tr, ait_attr_float(node, "scale", 1.0f));
    add = in_dtype(tr, ait_attr_float(node, "mean", 0.0f));
  } else {
    double hi = ait_attr_float(node, "high", 1.0f), lo = ait_attr_float(node, "low", 0.0f);
    mul = in_dtype(tr, hi - lo);
    add = in_dtype(tr, lo);
  }
  int64_t n = ait_tensor_numel(y);
  for (int64_t i = 0; i < n; i++) {
    double v = in_dtype(tr, normal ? mt_gauss(&s) : mt_double(&s));
    v = in_dtype(tr, v * mul);
    ait_store_f64(tr, y->data, i, v + add);
  }
}

/* RandomUniform / RandomNormal: shape and dtype from attributes. */
static ait_status random_from_attrs(const ait_node *node, bool normal, ait_tensor **out) {
  ait_dtype dt = (ait_dtype)ait_attr_int(node, "dtype", AIT_FLOAT32);
  AIT_TRY(float_dtype(dt, node->op_type));
  int rank;
  const int64_t *shape = ait_attr_ints(node, "shape", &rank);
  if (!shape) return ait_err(AIT_E_INVALID_ARG, "%s needs the 'shape' attribute", node->op_type);
  ait_tensor *y = ait_tensor_new(dt, rank, shape);
  if (!y) return AIT_E_NOMEM;
  fill_random(y, node, normal);
  *out = y;
  return AIT_OK;
}

/* Random*Like: shape of input 0, dtype from the attribute or input 0. */
static ait_status random_like(const ait_node *node, const ait_tensor *x, bool normal,
                              ait_tensor **out) {
  if (!x || x->kind != AIT_KIND_TENSOR)
    return ait_err(AIT_E_INVALID_ARG, "%s needs a tensor input", node->op_type);
  ait_dtype dt = (ait_dtype)ait_attr_int(node, "dtype", x->dtype);
  AIT_TRY(float_dtype(dt, node->op_type));
  ait_tensor *y = ait_tensor_new(dt, x->rank, x->dims);
  if (!y) return AIT_E_NOMEM;
  fill_random(y, node, normal);
  *out = y;
  return AIT_OK;
}

AIT_MISC_KERNEL(ait_k_random_uniform) { return random_from_attrs(node, false, &out[0]); }
AIT_MISC_KERNEL(ait_k_random_normal) { return random_from_attrs(node, true, &out[0]); }
AIT_MISC_KERNEL(ait_k_random_uniform_like) { return random_like(node, in[0], false, &out[0]); }
AIT_MISC_KERNEL(ait_k_random_normal_like) { return random_like(node, in[0], true, &out[0]); }

AIT_MISC_KERNEL(ait_k_bernoulli) {
  const ait_tensor *x = in[0];
  const ait_dtype_traits *tx =
      x && x->kind == AIT_KIND_TENSOR ? ait_dtype_traits_of(x->dtype) : NULL;
  if (!tx || !tx->is_float) return ait_err(AIT_E_DTYPE, "Bernoulli input must be a float tensor");
  ait_dtype dt = (ait_dtype)ait_attr_int(node, "dtype", x->dtype);
  const ait_dtype_traits *ty = ait_dtype_traits_of(dt);
  if (!ty) return ait_err(AIT_E_DTYPE, "Bernoulli dtype %d is not supported", (int)dt);
  ait_tensor *y = ait_tensor_new(dt, x->rank, x->dims);
  if (!y) return AIT_E_NOMEM;
  out[0] = y;
  mt_state s;
  seed_state(&s, node, y);
  int64_t n = ait_tensor_numel(x);
  for (int64_t i = 0; i < n; i++) {
    double p = ait_load_f64(tx, x->data, i);
    if (!(p >= 0.0 && p <= 1.0))
      return ait_err(AIT_E_INVALID_ARG, "Bernoulli probability %g at %lld is outside [0, 1]", p,
                     (long long)i);
    ait_store_i64(ty, y->data, i, mt_bernoulli(&s, p));
  }
  return AIT_OK;
}

/* ---- shape functions ------------------------------------------------------- */

AIT_MISC_SHAPE(ait_s_random) {
  int rank;
  const int64_t *shape = ait_attr_ints(node, "shape", &rank);
  ait_dim d[AIT_MAX_RANK];
  if (rank > AIT_MAX_RANK) rank = -1;
  for (int i = 0; i < rank; i++)
    d[i] = (ait_dim){shape[i], NULL};
  ait_set_out(g, node, 0, (ait_dtype)ait_attr_int(node, "dtype", AIT_FLOAT32), shape ? rank : -1,
              d);
  return AIT_OK;
}

/* Random*Like and Bernoulli: shape of input 0, dtype attribute or input 0's. */
AIT_MISC_SHAPE(ait_s_random_like) {
  ait_value *x = ait_node_in(g, node, 0);
  if (!x) return AIT_OK;
  ait_set_out(g, node, 0, (ait_dtype)ait_attr_int(node, "dtype", x->dtype), x->rank,
              x->rank > 0 ? x->dims : NULL);
  return AIT_OK;
}
