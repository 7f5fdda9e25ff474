/* Error reporting: a status code plus a per-thread message.
 * Every internal function that fails calls ait_err() once, at the place that
 * knows what went wrong, and returns its status upwards unchanged. Callers
 * higher up may add context with ait_err_prefix(). */
#ifndef AIT_CORE_ERROR_H
#define AIT_CORE_ERROR_H

#include "aitune.h"

#if defined(__GNUC__)
#define AIT_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define AIT_PRINTF(a, b)
#endif

/* Set this thread's last-error message and return `code`. */
ait_status ait_err(ait_status code, const char *fmt, ...) AIT_PRINTF(2, 3);
/* Prepend "<prefix>: " to this thread's last-error message. Returns `code`. */
ait_status ait_err_prefix(ait_status code, const char *fmt, ...) AIT_PRINTF(2, 3);
/* Clear this thread's last-error message. */
void ait_err_clear(void);

#define AIT_TRY(expr)                                                                              \
  do {                                                                                             \
    ait_status ait_try_s_ = (expr);                                                                \
    if (ait_try_s_ != AIT_OK) return ait_try_s_;                                                   \
  } while (0)

#endif
