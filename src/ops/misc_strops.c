/* String ops of opset 20: StringConcat (broadcasting), StringSplit (Python's
 * str.split), RegexFullMatch (RE2 syntax, matched with the C library's
 * POSIX extended regular expressions after translating the RE2 constructs
 * they spell differently; what cannot be translated is refused by name).
 *
 * String tensors hold NUL-terminated UTF-8 `char *` elements owned by the
 * tensor; a NULL element reads as "". */
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "ir/shape.h"
#include "ops/misc_impl.h"

static const char *str_at(const ait_tensor *t, int64_t i) {
  const char *s = ((char *const *)t->data)[i];
  return s ? s : "";
}

static ait_status need_strings(const ait_tensor *t, const char *op, const char *what) {
  if (!t || t->kind != AIT_KIND_TENSOR || t->dtype != AIT_STRING)
    return ait_err(AIT_E_DTYPE, "%s needs a string tensor for %s", op, what);
  return AIT_OK;
}

/* ---- StringConcat ------------------------------------------------------ */

AIT_MISC_KERNEL(ait_k_string_concat) {
  const ait_tensor *x = n_in > 0 ? in[0] : NULL, *y = n_in > 1 ? in[1] : NULL;
  AIT_TRY(need_strings(x, "StringConcat", "X"));
  AIT_TRY(need_strings(y, "StringConcat", "Y"));
  int r;
  int64_t od[AIT_MAX_RANK], xs[AIT_MAX_RANK], ys[AIT_MAX_RANK], os[AIT_MAX_RANK];
  AIT_TRY(ait_shape_broadcast(x->rank, x->dims, y->rank, y->dims, &r, od));
  ait_broadcast_strides(x->rank, x->dims, r, od, xs);
  ait_broadcast_strides(y->rank, y->dims, r, od, ys);
  ait_shape_strides(r, od, os);
  ait_tensor *z = ait_tensor_new(AIT_STRING, r, od);
  if (!z) return AIT_E_NOMEM;
  char **zs = z->data;
  for (int64_t i = 0, n = ait_tensor_numel(z); i < n; i++) {
    int64_t rem = i, xi = 0, yi = 0;
    for (int d = 0; d < r; d++) {
      int64_t c = rem / os[d];
      rem -= c * os[d];
      xi += c * xs[d], yi += c * ys[d];
    }
    const char *a = str_at(x, xi), *b = str_at(y, yi);
    size_t la = strlen(a), lb = strlen(b);
    if (!(zs[i] = malloc(la + lb + 1))) {
      ait_tensor_free(z);
      return ait_err(AIT_E_NOMEM, "out of memory");
    }
    memcpy(zs[i], a, la);
    memcpy(zs[i] + la, b, lb + 1);
  }
  out[0] = z;
  return AIT_OK;
}

AIT_MISC_SHAPE(ait_s_string_concat) { return ait_shape_broadcast_fn(g, node); }

/* ---- StringSplit ------------------------------------------------------- */

/* Python's str.isspace for ASCII and the C0 separators it counts. */
static bool py_space(unsigned char c) {
  return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

/* Pieces of s as (start, length) pairs into p (room for cap; *n counts them
 * all even past cap): Python's s.split(delim, maxsplit) (maxsplit < 0: no
 * limit), or s.split(None, maxsplit) for an empty delim. */
static void split_one(const char *s, const char *delim, int64_t maxsplit, int64_t *p, int64_t cap,
                      int64_t *n) {
  size_t len = strlen(s), dl = strlen(delim);
  *n = 0;
#define PIECE(a, b)                                                                                \
  do {                                                                                             \
    if (*n < cap) p[2 * *n] = (int64_t)(a), p[2 * *n + 1] = (int64_t)((b) - (a));                  \
    (*n)++;                                                                                        \
  } while (0)
  if (dl) {
    size_t start = 0;
    for (size_t i = 0; i + dl <= len && (maxsplit < 0 || *n < maxsplit);) {
      if (!memcmp(s + i, delim, dl)) {
        PIECE(start, i);
        i += dl;
        start = i;
      } else {
        i++;
      }
    }
    PIECE(start, len);
    return;
  }
  size_t i = 0;
  while (i < len) {
    while (i < len && py_space((unsigned char)s[i]))
      i++;
    if (i == len) break;
    if (maxsplit >= 0 && *n == maxsplit) { /* the rest, trailing white space and all */
      PIECE(i, len);
      break;
    }
    size_t j = i;
    while (j < len && !py_space((unsigned char)s[j]))
      j++;
    PIECE(i, j);
    i = j;
  }
#undef PIECE
}

AIT_MISC_KERNEL(ait_k_string_split) {
  const ait_tensor *x = n_in > 0 ? in[0] : NULL;
  AIT_TRY(need_strings(x, "StringSplit", "X"));
  if (x->rank >= AIT_MAX_RANK) return ait_err(AIT_E_SHAPE, "StringSplit output rank too large");
  const char *delim = ait_attr_str(node, "delimiter", "");
  int64_t maxsplit = ait_attr_int(node, "maxsplit", -1), n = ait_tensor_numel(x), width = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t k;
    split_one(str_at(x, i), delim, maxsplit, NULL, 0, &k);
    if (k > width) width = k;
  }
  int64_t yd[AIT_MAX_RANK];
  memcpy(yd, x->dims, sizeof(int64_t) * (size_t)x->rank);
  yd[x->rank] = width;
  ait_tensor *y = ait_tensor_new(AIT_STRING, x->rank + 1, yd), *z = NULL;
  int64_t *p = malloc((size_t)(2 * width + 2) * sizeof *p);
  ait_status st = y && p ? AIT_OK : ait_err(AIT_E_NOMEM, "out of memory");
  if (!st && !(z = ait_tensor_new(AIT_INT64, x->rank, x->dims))) st = AIT_E_NOMEM;
  char **ys = y ? y->data : NULL;
  for (int64_t i = 0; !st && i < n; i++) {
    const char *s = str_at(x, i);
    int64_t k;
    split_one(s, delim, maxsplit, p, width, &k);
    ((int64_t *)z->data)[i] = k;
    for (int64_t j = 0; j < width && !st; j++) {
      int64_t at = j < k ? p[2 * j] : 0, l = j < k ? p[2 * j + 1] : 0;
      char *e = malloc((size_t)l + 1);
      if (!e)
        st = ait_err(AIT_E_NOMEM, "out of memory");
      else
        memcpy(e, s + at, (size_t)l), e[l] = '\0';
      ys[i * width + j] = e; /* empty strings pad short rows */
    }
  }
  free(p);
  if (st) {
    ait_tensor_free(y);
    ait_tensor_free(z);
    return st;
  }
  out[0] = y;
  if (n_out > 1)
    out[1] = z;
  else
    ait_tensor_free(z);
  return AIT_OK;
}

AIT_MISC_SHAPE(ait_s_string_split) {
  ait_value *x = ait_node_in(g, node, 0);
  if (!x || x->rank < 0 || x->rank >= AIT_MAX_RANK) {
    ait_set_out(g, node, 0, AIT_STRING, -1, NULL);
    if (node->n_out > 1) ait_set_out(g, node, 1, AIT_INT64, -1, NULL);
    return AIT_OK;
  }
  ait_dim d[AIT_MAX_RANK];
  memcpy(d, x->dims, sizeof(ait_dim) * (size_t)x->rank);
  d[x->rank] = (ait_dim){-1, NULL};
  ait_set_out(g, node, 0, AIT_STRING, x->rank + 1, d);
  if (node->n_out > 1) ait_set_out(g, node, 1, AIT_INT64, x->rank, x->dims);
  return AIT_OK;
}

/* ---- RegexFullMatch ---------------------------------------------------- */

/* Grows *o (cap *cap) by text; false when out of memory. */
static bool put(char **o, size_t *len, size_t *cap, const char *text, size_t n) {
  if (*len + n + 1 > *cap) {
    size_t c = (*len + n + 1) * 2;
    char *p = realloc(*o, c);
    if (!p) return false;
    *o = p, *cap = c;
  }
  memcpy(*o + *len, text, n);
  *len += n;
  (*o)[*len] = '\0';
  return true;
}

/* A bracket expression of RE2 from p (after '['): POSIX needs ']' first and
 * '-' last, and has no escapes inside brackets; \d \s \w become classes. */
static ait_status translate_class(const char **pp, char **o, size_t *len, size_t *cap) {
  const char *p = *pp;
  bool neg = *p == '^', close = false, dash = false;
  if (neg) p++;
  char body[512];
  size_t n = 0;
#define ADD(str)                                                                                   \
  do {                                                                                             \
    size_t l_ = strlen(str);                                                                       \
    if (n + l_ >= sizeof body) return ait_err(AIT_E_UNSUPPORTED, "regex class too long");          \
    memcpy(body + n, str, l_), n += l_;                                                            \
  } while (0)
  for (bool first = true; *p && (*p != ']' || first); first = false) {
    char c = *p++, one[2] = {0, 0};
    if (c == '\\') {
      char e = *p++;
      if (!e) break;
      if (e == 'd')
        ADD("[:digit:]");
      else if (e == 's')
        ADD("[:space:]");
      else if (e == 'w')
        ADD("[:alnum:]_");
      else if (e == 'D' || e == 'S' || e == 'W')
        return ait_err(AIT_E_UNSUPPORTED, "regex: \\%c inside brackets is not supported", e);
      else if (e == ']')
        close = true;
      else if (e == '-')
        dash = true;
      else {
        one[0] = e == 'n' ? '\n' : e == 't' ? '\t' : e;
        ADD(one);
      }
    } else if (c == ']') {
      close = true; /* first: literal */
    } else if (c == '-' && (p[0] == ']' || first)) {
      dash = true;
    } else if (c == '[' && p[0] == ':') { /* a POSIX class as is */
      const char *end = strstr(p, ":]");
      if (!end) return ait_err(AIT_E_UNSUPPORTED, "regex: unterminated [: class");
      char cls[64];
      size_t l = (size_t)(end + 2 - (p - 1));
      if (l >= sizeof cls) return ait_err(AIT_E_UNSUPPORTED, "regex class name too long");
      memcpy(cls, p - 1, l), cls[l] = '\0';
      ADD(cls);
      p = end + 2;
    } else {
      one[0] = c;
      ADD(one);
    }
  }
#undef ADD
  if (*p != ']') return ait_err(AIT_E_INVALID_ARG, "regex: unterminated [");
  *pp = p + 1;
  if (!n && !close && !dash) return ait_err(AIT_E_INVALID_ARG, "regex: empty []");
  bool ok = put(o, len, cap, neg ? "[^" : "[", neg ? 2 : 1) &&
            (!close || put(o, len, cap, "]", 1)) && put(o, len, cap, body, n) &&
            (!dash || put(o, len, cap, "-", 1)) && put(o, len, cap, "]", 1);
  return ok ? AIT_OK : ait_err(AIT_E_NOMEM, "out of memory");
}

/* RE2 pattern -> POSIX ERE anchored at both ends (a full match). Lazy
 * quantifiers become greedy (a full match does not depend on laziness);
 * (?:...) becomes (...); \d \s and their negations become brackets; \w \W
 * \b \B \< \> are glibc's. Flags groups, named groups, \A \z, \p{..} and
 * back references are refused. */
static ait_status translate(const char *re, char **out, int *flags) {
  size_t len = 0, cap = 0;
  char *o = NULL;
  *flags = REG_EXTENDED | REG_NOSUB;
  const char *p = re;
  if (!strncmp(p, "(?i)", 4)) *flags |= REG_ICASE, p += 4;
  if (!put(&o, &len, &cap, "^(", 2)) return ait_err(AIT_E_NOMEM, "out of memory");
  ait_status st = AIT_OK;
  while (*p && !st) {
    char c = *p++;
    bool ok = true;
    if (c == '\\') {
      char e = *p++;
      const char *rep = e == 'd'   ? "[0-9]"
                        : e == 'D' ? "[^0-9]"
                        : e == 's' ? "[[:space:]]"
                        : e == 'S' ? "[^[:space:]]"
                                   : NULL;
      if (rep) {
        ok = put(&o, &len, &cap, rep, strlen(rep));
      } else if (!e || strchr("AzpPQEC0123456789", e)) {
        st = ait_err(AIT_E_UNSUPPORTED, "regex: \\%c is not supported", e ? e : ' ');
      } else {
        char two[2] = {'\\', e};
        ok = put(&o, &len, &cap, two, 2);
      }
    } else if (c == '[') {
      st = translate_class(&p, &o, &len, &cap);
    } else if (c == '(' && p[0] == '?') {
      if (p[1] != ':') {
        st = ait_err(AIT_E_UNSUPPORTED, "regex: (?%c...) is not supported", p[1] ? p[1] : ' ');
      } else {
        ok = put(&o, &len, &cap, "(", 1);
        p += 2;
      }
    } else if ((c == '*' || c == '+' || c == '?' || c == '}') && *p == '?') {
      char one[1] = {c};
      ok = put(&o, &len, &cap, one, 1);
      p++; /* the lazy mark */
    } else {
      char one[1] = {c};
      ok = put(&o, &len, &cap, one, 1);
    }
    if (!ok) st = ait_err(AIT_E_NOMEM, "out of memory");
  }
  if (!st && !put(&o, &len, &cap, ")$", 2)) st = ait_err(AIT_E_NOMEM, "out of memory");
  if (st) {
    free(o);
    return st;
  }
  *out = o;
  return AIT_OK;
}

AIT_MISC_KERNEL(ait_k_regex_full_match) {
  const ait_tensor *x = n_in > 0 ? in[0] : NULL;
  AIT_TRY(need_strings(x, "RegexFullMatch", "X"));
  const char *pattern = ait_attr_str(node, "pattern", NULL);
  if (!pattern) return ait_err(AIT_E_INVALID_ARG, "RegexFullMatch needs the pattern attribute");
  char *ere = NULL;
  int flags;
  ait_status st = translate(pattern, &ere, &flags);
  if (st) return ait_err_prefix(st, "pattern '%.80s'", pattern);
  regex_t rx;
  int rc = regcomp(&rx, ere, flags);
  free(ere);
  if (rc) {
    char msg[160];
    regerror(rc, &rx, msg, sizeof msg);
    return ait_err(AIT_E_INVALID_ARG, "RegexFullMatch pattern '%.80s': %s", pattern, msg);
  }
  ait_tensor *y = ait_tensor_new(AIT_BOOL, x->rank, x->dims);
  if (!y) {
    regfree(&rx);
    return AIT_E_NOMEM;
  }
  for (int64_t i = 0, n = ait_tensor_numel(x); i < n; i++)
    ((uint8_t *)y->data)[i] = regexec(&rx, str_at(x, i), 0, NULL, 0) == 0;
  regfree(&rx);
  out[0] = y;
  return AIT_OK;
}

AIT_MISC_SHAPE(ait_s_regex_full_match) {
  ait_value *x = ait_node_in(g, node, 0);
  ait_set_out(g, node, 0, AIT_BOOL, x ? x->rank : -1, x && x->rank >= 0 ? x->dims : NULL);
  return AIT_OK;
}
