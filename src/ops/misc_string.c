/* StringNormalizer (TfIdfVectorizer is in misc_tfidf.c).
 *
 * String tensors hold NUL-terminated UTF-8 `char *` elements owned by the
 * tensor; a NULL element reads as "". */
#include <stdlib.h>
#include <string.h>

#include "ir/shape.h"
#include "ops/misc_impl.h"

/* ---- UTF-8 case mapping ------------------------------------------------------
 * Simple one-to-one case mapping for ASCII, Latin-1, Latin Extended-A, basic
 * Greek and Cyrillic: what the en_US locale's towupper/towlower give for
 * these blocks. Other code points (and invalid UTF-8 bytes) pass unchanged;
 * the 'locale' attribute is not consulted. */

static uint32_t latin_ext_a(uint32_t c, bool upper) {
  /* pairs (upper, lower) at (even, odd) or (odd, even) code points */
  bool even_upper = (c >= 0x100 && c <= 0x137) || (c >= 0x14A && c <= 0x177);
  bool odd_upper = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E);
  if (c == 0x130) return upper ? c : 'i';
  if (c == 0x131) return upper ? 'I' : c;
  if (c == 0x178) return upper ? c : 0xFF;
  if (c == 0x17F) return upper ? 'S' : c;
  if (even_upper || odd_upper) {
    bool is_upper = ((c & 1) == 0) == even_upper;
    if (upper && !is_upper) return c - 1;
    if (!upper && is_upper) return c + 1;
  }
  return c;
}

static uint32_t case_map(uint32_t c, bool upper) {
  if (upper) {
    if (c >= 'a' && c <= 'z') return c - 32;
    if (c >= 0xE0 && c <= 0xFE && c != 0xF7) return c - 32;
    if (c == 0xFF) return 0x178;
    if (c == 0xB5) return 0x39C;
    if (c >= 0x3B1 && c <= 0x3C9) return c == 0x3C2 ? 0x3A3 : c - 32;
    if (c >= 0x430 && c <= 0x44F) return c - 32;
    if (c >= 0x450 && c <= 0x45F) return c - 80;
  } else {
    if (c >= 'A' && c <= 'Z') return c + 32;
    if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
    if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 32;
    if (c >= 0x410 && c <= 0x42F) return c + 32;
    if (c >= 0x400 && c <= 0x40F) return c + 80;
  }
  if (c >= 0x100 && c <= 0x17F) return latin_ext_a(c, upper);
  return c;
}

/* Decode one UTF-8 sequence at s (n bytes left); *len gets its length. An
 * invalid sequence gives 0xFFFFFFFF with length 1: its byte is copied as is. */
static uint32_t utf8_decode(const unsigned char *s, size_t n, int *len) {
  int k = s[0] < 0x80             ? 1
          : (s[0] & 0xE0) == 0xC0 ? 2
          : (s[0] & 0xF0) == 0xE0 ? 3
          : (s[0] & 0xF8) == 0xF0 ? 4
                                  : 0;
  if (k == 0 || (size_t)k > n) goto invalid;
  uint32_t c = k == 1 ? s[0] : (uint32_t)(s[0] & (0x7F >> k));
  for (int i = 1; i < k; i++) {
    if ((s[i] & 0xC0) != 0x80) goto invalid;
    c = (c << 6) | (s[i] & 0x3F);
  }
  *len = k;
  return c;
invalid:
  *len = 1;
  return 0xFFFFFFFFu; /* marker: copy the byte */
}

static size_t utf8_encode(uint32_t c, char *o) {
  if (c < 0x80) {
    o[0] = (char)c;
    return 1;
  }
  if (c < 0x800) {
    o[0] = (char)(0xC0 | (c >> 6));
    o[1] = (char)(0x80 | (c & 0x3F));
    return 2;
  }
  if (c < 0x10000) {
    o[0] = (char)(0xE0 | (c >> 12));
    o[1] = (char)(0x80 | ((c >> 6) & 0x3F));
    o[2] = (char)(0x80 | (c & 0x3F));
    return 3;
  }
  o[0] = (char)(0xF0 | (c >> 18));
  o[1] = (char)(0x80 | ((c >> 12) & 0x3F));
  o[2] = (char)(0x80 | ((c >> 6) & 0x3F));
  o[3] = (char)(0x80 | (c & 0x3F));
  return 4;
}

/* New string: s with its case changed (mode 'U', 'L') or copied ('N').
 * NULL on out-of-memory. Mapped code points stay within their UTF-8 length
 * except U+00FF/U+0178 and U+00B5/U+039C (2 bytes both) and U+0131/U+017F to
 * ASCII (shorter), so 4 bytes per input byte is a safe bound. */
static char *change_case(const char *s, char mode) {
  size_t n = strlen(s);
  char *o = malloc(4 * n + 1);
  if (!o) return NULL;
  size_t at = 0;
  for (size_t i = 0; i < n;) {
    int len;
    uint32_t c = utf8_decode((const unsigned char *)s + i, n - i, &len);
    if (c == 0xFFFFFFFFu || mode == 'N') {
      memcpy(o + at, s + i, (size_t)len);
      at += (size_t)len;
    } else {
      at += utf8_encode(case_map(c, mode == 'U'), o + at);
    }
    i += (size_t)len;
  }
  o[at] = 0;
  return o;
}

/* ---- StringNormalizer ------------------------------------------------------ */

static const char *str_at(const ait_tensor *t, int64_t i) {
  const char *s = ((char *const *)t->data)[i];
  return s ? s : "";
}

/* Is s one of the stopwords? Case-insensitive compares lowercased forms. */
static ait_status is_stopword(const char *s, char *const *stops, int n_stops, bool sensitive,
                              bool *hit) {
  *hit = false;
  if (n_stops == 0) return AIT_OK;
  char *ls = sensitive ? NULL : change_case(s, 'L');
  if (!sensitive && !ls) return ait_err(AIT_E_NOMEM, "out of memory");
  for (int k = 0; k < n_stops && !*hit; k++) {
    if (sensitive) {
      *hit = strcmp(s, stops[k]) == 0;
      continue;
    }
    char *lw = change_case(stops[k], 'L');
    if (!lw) {
      free(ls);
      return ait_err(AIT_E_NOMEM, "out of memory");
    }
    *hit = strcmp(ls, lw) == 0;
    free(lw);
  }
  free(ls);
  return AIT_OK;
}

AIT_MISC_KERNEL(ait_k_string_normalizer) {
  const ait_tensor *x = in[0];
  if (!x || x->kind != AIT_KIND_TENSOR || x->dtype != AIT_STRING)
    return ait_err(AIT_E_DTYPE, "StringNormalizer needs a string tensor");
  if (!(x->rank == 1 || (x->rank == 2 && x->dims[0] == 1))) {
    char b[128];
    return ait_err(AIT_E_SHAPE, "StringNormalizer accepts [C] or [1, C] inputs, got %s",
                   ait_shape_str(x->rank, x->dims, b, sizeof b));
  }
  const char *action = ait_attr_str(node, "case_change_action", "NONE");
  char mode = !strcmp(action, "UPPER") ? 'U' : !strcmp(action, "LOWER") ? 'L' : 'N';
  if (mode == 'N' && strcmp(action, "NONE"))
    return ait_err(AIT_E_INVALID_ARG, "unknown case_change_action '%s'", action);
  bool sensitive = ait_attr_int(node, "is_case_sensitive", 0) != 0;
  const ait_attr *sw = ait_node_attr(node, "stopwords");
  char *const *stops = sw && sw->type == AIT_ATTR_STRINGS ? sw->strings : NULL;
  int n_stops = stops ? sw->n : 0;

  int64_t c = ait_tensor_numel(x), kept = 0;
  char **res = calloc((size_t)(c ? c : 1), sizeof *res);
  if (!res) return ait_err(AIT_E_NOMEM, "out of memory");
  ait_status st = AIT_OK;
  for (int64_t i = 0; st == AIT_OK && i < c; i++) {
    bool hit;
    st = is_stopword(str_at(x, i), stops, n_stops, sensitive, &hit);
    if (st != AIT_OK || hit) continue;
    res[kept] = change_case(str_at(x, i), mode);
    if (!res[kept++]) st = ait_err(AIT_E_NOMEM, "out of memory");
  }
  if (st == AIT_OK && kept == 0) { /* everything dropped: one empty string */
    res[0] = strdup("");
    kept = 1;
    if (!res[0]) st = ait_err(AIT_E_NOMEM, "out of memory");
  }
  int64_t dims[2] = {1, kept};
  ait_tensor *y = NULL;
  if (st == AIT_OK) {
    y = x->rank == 1 ? ait_tensor_new(AIT_STRING, 1, &kept) : ait_tensor_new(AIT_STRING, 2, dims);
    if (!y) st = AIT_E_NOMEM;
  }
  if (st != AIT_OK) {
    for (int64_t i = 0; i < kept; i++)
      free(res[i]);
    free(res);
    return st;
  }
  memcpy(y->data, res, (size_t)kept * sizeof *res);
  free(res);
  out[0] = y;
  return AIT_OK;
}

AIT_MISC_SHAPE(ait_s_string_normalizer) {
  ait_value *x = ait_node_in(g, node, 0);
  if (!x || x->rank < 1) {
    ait_set_out(g, node, 0, AIT_STRING, -1, NULL);
    return AIT_OK;
  }
  ait_dim d[2] = {{1, NULL}, {-1, NULL}};
  ait_set_out(g, node, 0, AIT_STRING, x->rank == 2 ? 2 : 1, x->rank == 2 ? d : d + 1);
  return AIT_OK;
}
