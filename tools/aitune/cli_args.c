/* Command-line parsing shared by every command: `--opt VALUE` and
 * `--opt=VALUE` alike, numbers parsed whole and range-checked, and the
 * errors that name the flag (exit code 2). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

bool cli_opt(int argc, char **argv, int *i, const char *name, const char **val) {
  const char *a = argv[*i];
  size_t n = strlen(name);
  if (strncmp(a, name, n)) return false;
  if (a[n] == '=') { /* --opt=VALUE */
    *val = a + n + 1;
    return true;
  }
  if (a[n] || *i + 1 >= argc) return false; /* a longer name, or no value left */
  *val = argv[++*i];
  return true;
}

bool cli_opt_any(int argc, char **argv, int *i, const char *const *names, const char **val) {
  for (; *names; names++)
    if (cli_opt(argc, argv, i, *names, val)) return true;
  return false;
}

int cli_bad_arg(const char *use, const char *arg) {
  if (arg[0] != '-') return cli_usage(use, "unexpected argument '%s'", arg);
  const char *eq = strchr(arg, '=');
  if (eq)
    return cli_usage(use, "unknown option '%.*s', or one that takes no value", (int)(eq - arg),
                     arg);
  return cli_usage(use, "unknown option '%s', or its value is missing", arg);
}

int cli_int(const char *use, const char *flag, const char *text, long long lo, long long hi,
            long long *out) {
  char *end;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (end == text || *end || errno || v < lo || v > hi) {
    if (hi == CLI_NO_MAX)
      return cli_usage(use, "%s expects an integer >= %lld, got '%s'", flag, lo, text);
    return cli_usage(use, "%s expects an integer in [%lld, %lld], got '%s'", flag, lo, hi, text);
  }
  *out = v;
  return 0;
}

int cli_int32(const char *use, const char *flag, const char *text, int lo, int hi, int *out) {
  long long v = 0;
  int rc = cli_int(use, flag, text, lo, hi, &v);
  if (!rc) *out = (int)v;
  return rc;
}

bool cli_load_limit(const char *use, int argc, char **argv, int *i, ait_load_options *lo, int *rc) {
  const char *val;
  long long v = 0;
  *rc = 0;
  if (cli_opt(argc, argv, i, "--max-depth", &val)) {
    if (!(*rc = cli_int(use, "--max-depth", val, 1, AIT_MAX_DEPTH_BOUND, &v)))
      lo->max_depth = (int)v;
  } else if (cli_opt(argc, argv, i, "--max-nodes", &val)) {
    if (!(*rc = cli_int(use, "--max-nodes", val, 1, AIT_MAX_NODES_BOUND, &v))) lo->max_nodes = v;
  } else if (cli_opt(argc, argv, i, "--max-tensor-bytes", &val)) {
    if (!(*rc = cli_int(use, "--max-tensor-bytes", val, 1, AIT_MAX_TENSOR_BYTES_BOUND, &v)))
      lo->max_tensor_bytes = v;
  } else if (cli_opt(argc, argv, i, "--max-fold-elements", &val)) {
    if (!(*rc = cli_int(use, "--max-fold-elements", val, 1, AIT_MAX_FOLD_ELEMENTS_BOUND, &v)))
      lo->max_fold_elements = v;
  } else
    return false;
  return true;
}

int cli_double(const char *use, const char *flag, const char *text, double lo, double hi,
               double *out) {
  char *end;
  errno = 0;
  double v = strtod(text, &end);
  if (end == text || *end || errno || !isfinite(v) || !(v >= lo && v <= hi))
    return cli_usage(use, "%s expects a number in [%g, %g], got '%s'", flag, lo, hi, text);
  *out = v;
  return 0;
}
