#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* One message per thread, so concurrent sessions never see each other's errors. */
static _Thread_local char last_msg[1024];

ait_status ait_err(ait_status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_msg, sizeof last_msg, fmt, ap);
  va_end(ap);
  return code;
}

ait_status ait_err_prefix(ait_status code, const char *fmt, ...) {
  char prefix[512];
  char old[sizeof last_msg];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  memcpy(old, last_msg, sizeof old);
  snprintf(last_msg, sizeof last_msg, "%s: %s", prefix, old);
  return code;
}

void ait_err_clear(void) { last_msg[0] = '\0'; }

const char *ait_last_error(void) { return last_msg; }

const char *ait_strerror(ait_status status) {
  switch (status) {
  case AIT_OK: return "success";
  case AIT_E_INVALID_ARG: return "invalid argument";
  case AIT_E_IO: return "I/O error";
  case AIT_E_PARSE: return "parse error";
  case AIT_E_INVALID_MODEL: return "invalid model";
  case AIT_E_UNSUPPORTED: return "unsupported";
  case AIT_E_SHAPE: return "shape mismatch";
  case AIT_E_DTYPE: return "dtype mismatch";
  case AIT_E_NOMEM: return "out of memory";
  case AIT_E_RUNTIME: return "runtime error";
  case AIT_E_NOT_FOUND: return "not found";
  case AIT_E_INTERNAL: return "internal error";
  }
  return "unknown status";
}
