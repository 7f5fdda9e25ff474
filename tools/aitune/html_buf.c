#include "html_buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool reserve(hbuf *b, size_t more) {
  if (b->oom) return false;
  if (b->n + more + 1 <= b->cap) return true;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < b->n + more + 1)
    cap *= 2;
  char *p = realloc(b->p, cap);
  if (!p) {
    b->oom = true;
    return false;
  }
  b->p = p;
  b->cap = cap;
  return true;
}

static void put(hbuf *b, const char *s, size_t len) {
  if (!reserve(b, len)) return;
  memcpy(b->p + b->n, s, len);
  b->n += len;
  b->p[b->n] = 0;
}

void hb_printf(hbuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int len = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (len < 0 || !reserve(b, (size_t)len)) return;
  va_start(ap, fmt);
  vsnprintf(b->p + b->n, (size_t)len + 1, fmt, ap);
  va_end(ap);
  b->n += (size_t)len;
}

/* One byte of text, escaped. */
static void put_char(hbuf *b, unsigned char c) {
  switch (c) {
  case '&': put(b, "&amp;", 5); break;
  case '<': put(b, "&lt;", 4); break;
  case '>': put(b, "&gt;", 4); break;
  case '"': put(b, "&quot;", 6); break;
  case '\'': put(b, "&#39;", 5); break;
  default:
    if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f) c = '?';
    put(b, (const char *)&c, 1);
  }
}

void hb_text_max(hbuf *b, const char *s, size_t max_chars) {
  size_t chars = 0;
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    bool starts_char = (*p & 0xC0) != 0x80; /* not a UTF-8 continuation byte */
    if (starts_char && chars++ == max_chars) {
      put(b, "\xE2\x80\xA6", 3); /* U+2026 HORIZONTAL ELLIPSIS */
      return;
    }
    put_char(b, *p);
  }
}

void hb_text(hbuf *b, const char *s) { hb_text_max(b, s, (size_t)-1); }

void hb_free(hbuf *b) {
  free(b->p);
  *b = (hbuf){0};
}
