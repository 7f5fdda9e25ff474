/* Minimal test helpers: CHECK records a failure and goes on, so one run shows
 * every broken expectation; main returns check_result(). */
#ifndef AIT_TEST_CHECK_H
#define AIT_TEST_CHECK_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aitune.h"

static int check_failures;

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                     \
      check_failures++;                                                                            \
    }                                                                                              \
  } while (0)

/* Expect status `want` and, when `needle` is non-NULL, that the last error
 * message contains it. */
#define CHECK_ERR(expr, want, needle)                                                              \
  do {                                                                                             \
    ait_status got_ = (expr);                                                                      \
    const char *msg_ = ait_last_error(), *needle_ = (needle);                                      \
    if (got_ != (want) || (needle_ && !strstr(msg_, needle_))) {                                   \
      fprintf(stderr, "%s:%d: %s returned %d (%s) \"%s\"; wanted %d with \"%s\"\n", __FILE__,      \
              __LINE__, #expr, got_, ait_strerror(got_), msg_, (want), needle_ ? needle_ : "");    \
      check_failures++;                                                                            \
    }                                                                                              \
  } while (0)

/* A float32 output view's values, copied (the caller frees them); NULL when
 * it is not float32 or memory runs out. */
static inline float *check_copy_f32(const ait_tensor_view *v, size_t *count) {
  if (v->dtype != AIT_FLOAT32) return NULL;
  size_t n = 1;
  for (int d = 0; d < v->rank; d++)
    n *= (size_t)v->dims[d];
  float *c = malloc(n * sizeof *c);
  if (c) memcpy(c, v->data, n * sizeof *c);
  *count = n;
  return c;
}

/* Bit-for-bit the same floats, a NaN matching a NaN. */
static inline bool check_same_f32(const float *a, const float *b, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (a[i] != b[i] && !(isnan(a[i]) && isnan(b[i]))) return false;
  return true;
}

static inline int check_result(const char *name) {
  if (check_failures)
    fprintf(stderr, "%s: %d check(s) failed\n", name, check_failures);
  else
    printf("%s: all checks passed\n", name);
  return check_failures ? 1 : 0;
}

#endif
