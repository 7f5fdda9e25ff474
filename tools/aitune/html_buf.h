/* A growing text buffer for writing HTML and SVG, with escaping for text
 * that came from outside (model, input and backend names, error messages:
 * a model's names are untrusted and may hold markup). */
#ifndef AIT_CLI_HTML_BUF_H
#define AIT_CLI_HTML_BUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct hbuf {
  char *p; /* owned; NUL-terminated while !oom */
  size_t n, cap;
  bool oom; /* an allocation failed: the contents are incomplete */
} hbuf;

/* Markup written as given: the format and its arguments must be our own
 * text (tags, numbers), never a string from a file. */
void hb_printf(hbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Text escaped for element content and quoted attribute values alike
 * (& < > " '), control characters but tab and newline replaced by '?'. */
void hb_text(hbuf *b, const char *s);
/* The same, cut after max_chars characters (at a UTF-8 boundary) with an
 * ellipsis: for labels in a chart, whose full text goes in a <title>. */
void hb_text_max(hbuf *b, const char *s, size_t max_chars);
void hb_free(hbuf *b);

#endif
