/* The report's two charts as inline SVG (no script, no external file):
 * throughput per candidate with whiskers, and latency against batch size. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_html.h"

double rh_thr(int batch, double ms) { return ms > 0 ? batch / (ms * 1e-3) : 0; }

/* ---- axes ------------------------------------------------------------------ */

typedef struct axis {
  double lo, hi; /* data range shown */
  bool log;
  double p0, p1; /* pixel positions of lo and hi */
} axis;

static double pos(const axis *a, double v) {
  if (a->log) {
    v = v > a->lo ? v : a->lo;
    return a->p0 + (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo)) * (a->p1 - a->p0);
  }
  return a->p0 + (v - a->lo) / (a->hi - a->lo) * (a->p1 - a->p0);
}

/* 1, 2 or 5 times a power of ten, >= v */
static double nice_ceil(double v) {
  double e = pow(10, floor(log10(v)));
  return v <= e ? e : v <= 2 * e ? 2 * e : v <= 5 * e ? 5 * e : 10 * e;
}

/* A value axis over [lo, hi] (both > 0): logarithmic, at whole decades,
 * when the values span more than `log_over` times; else linear from 0. */
static axis value_axis(double lo, double hi, double p0, double p1, double log_over) {
  axis a = {0, 1, false, p0, p1};
  if (!(hi > 0)) return a;
  if (lo > 0 && hi / lo > log_over) {
    a.log = true;
    a.lo = pow(10, floor(log10(lo)));
    a.hi = pow(10, ceil(log10(hi)));
    if (a.hi <= a.lo) a.hi = a.lo * 10;
  } else {
    a.hi = nice_ceil(hi * 1.05);
  }
  return a;
}

/* Tick values of a: decades (with 2x and 5x where they are few) or five
 * linear steps. Returns the count written to t (at most cap). */
static int ticks(const axis *a, double *t, int cap) {
  int n = 0;
  if (!a->log) {
    for (int i = 0; i <= 5 && n < cap; i++)
      t[n++] = a->lo + (a->hi - a->lo) * i / 5;
    return n;
  }
  bool fine = a->hi / a->lo <= 100;
  double decades = log10(a->hi / a->lo), step = pow(10, ceil(decades / 10)); /* <= ~10 ticks */
  for (double d = a->lo; d <= a->hi * 1.0001 && n < cap; d *= step) {
    t[n++] = d;
    if (fine && d * 2 < a->hi && n < cap) t[n++] = d * 2;
    if (fine && d * 5 < a->hi && n < cap) t[n++] = d * 5;
  }
  return n;
}

static void tick_label(char *s, size_t n, double v) {
  if (v >= 1e6)
    snprintf(s, n, "%gM", v / 1e6);
  else if (v >= 1e4)
    snprintf(s, n, "%gk", v / 1e3);
  else
    snprintf(s, n, "%g", v);
}

/* ---- throughput bars -------------------------------------------------------- */

static const char *status_color(const rh_cand *c) {
  static const struct {
    const char *status, *color;
  } rows[] = {
      {"selected", "#2e7d32"},        {"ok", "#1e88e5"},
      {"baseline", "#757575"},        {"slower_than_baseline", "#fb8c00"},
      {"over_budget", "#8e24aa"},     {"slower_than_more_precise", "#90a4ae"},
      {"same_as_default", "#b0bec5"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    if (!strcmp(rows[i].status, c->status)) return rows[i].color;
  return "#9e9e9e";
}

static int by_best_thr(const void *a, const void *b) {
  const rh_cand *x = *(const rh_cand *const *)a, *y = *(const rh_cand *const *)b;
  return x->best_thr < y->best_thr ? 1 : x->best_thr > y->best_thr ? -1 : 0;
}

enum { TW = 980, LABEL_X = 300, BAR_X0 = 310, BAR_X1 = 830, ROW_H = 26, TOP = 46 };

void rh_svg_throughput(hbuf *b, const rh_page *p) {
  const rh_cand **rows = calloc((size_t)p->n + 1, sizeof *rows);
  if (!rows) {
    b->oom = true;
    return;
  }
  int n = 0;
  double lo = INFINITY, hi = 0;
  for (int i = 0; i < p->n; i++) {
    const rh_cand *c = &p->c[i];
    if (c->best < 0) continue;
    const rh_point *q = &c->pts[c->best];
    rows[n++] = c;
    double slow = rh_thr(q->batch, q->p90_ms), fast = rh_thr(q->batch, q->min_ms);
    lo = slow < lo ? slow : lo;
    hi = fast > hi ? fast : hi;
  }
  if (!n) {
    hb_printf(b, "<p class=\"none\">No candidate was timed.</p>\n");
    free(rows);
    return;
  }
  qsort(rows, (size_t)n, sizeof *rows, by_best_thr);
  axis x = value_axis(lo, hi, BAR_X0, BAR_X1, 20);
  int h = TOP + n * ROW_H + 40;
  hb_printf(b,
            "<svg id=\"throughput-chart\" class=\"chart\" viewBox=\"0 0 %d %d\" "
            "xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" "
            "aria-label=\"throughput per candidate\">\n",
            TW, h);
  /* key */
  hb_printf(b,
            "<g class=\"key\"><rect x=\"%d\" y=\"8\" width=\"28\" height=\"12\" fill=\"#1e88e5\"/>"
            "<text x=\"%d\" y=\"19\">median run</text>"
            "<line x1=\"%d\" y1=\"14\" x2=\"%d\" y2=\"14\" stroke=\"#222\"/>"
            "<circle cx=\"%d\" cy=\"14\" r=\"3.5\" fill=\"#222\"/>"
            "<text x=\"%d\" y=\"19\">whisker: from the p90 run to the fastest run (the figure "
            "the decision used)</text></g>\n",
            BAR_X0, BAR_X0 + 34, BAR_X0 + 130, BAR_X0 + 160, BAR_X0 + 160, BAR_X0 + 168);
  double tv[40];
  int nt = ticks(&x, tv, 40);
  int y_end = TOP + n * ROW_H;
  for (int i = 0; i < nt; i++) {
    char s[32];
    tick_label(s, sizeof s, tv[i]);
    double px = pos(&x, tv[i]);
    hb_printf(b,
              "<line class=\"grid\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>"
              "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
              px, TOP - 6, px, y_end, px, y_end + 16, s);
  }
  hb_printf(b, "<text class=\"axis\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">samples/s%s</text>\n",
            (BAR_X0 + BAR_X1) / 2, y_end + 34, x.log ? " (log scale)" : "");
  for (int r = 0; r < n; r++) {
    const rh_cand *c = rows[r];
    const rh_point *q = &c->pts[c->best];
    double y = TOP + r * ROW_H, mid = y + ROW_H / 2.0;
    double med = rh_thr(q->batch, q->median_ms), slow = rh_thr(q->batch, q->p90_ms),
           fast = rh_thr(q->batch, q->min_ms);
    hb_printf(b, "<g class=\"bar%s\"><title>", c->selected ? " selected" : "");
    hb_text(b, c->name);
    hb_printf(b, " (");
    hb_text(b, c->status);
    hb_printf(b,
              "), batch %d: median %.1f samples/s (%.3f ms), p90 run %.1f samples/s, fastest "
              "run %.1f samples/s</title>\n",
              q->batch, med, q->median_ms, slow, fast);
    hb_printf(b, "<text class=\"label\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">", LABEL_X,
              mid + 4);
    hb_text_max(b, c->name, 40);
    hb_printf(b, "</text>\n");
    double x0 = pos(&x, x.lo), xm = pos(&x, med);
    hb_printf(b,
              "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>\n"
              "<line class=\"whisker\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
              "<line class=\"whisker\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
              "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"#222\"/>\n",
              x0, y + 5, xm - x0 > 1 ? xm - x0 : 1, ROW_H - 10, status_color(c), pos(&x, slow), mid,
              pos(&x, fast), mid, pos(&x, slow), mid - 5, pos(&x, slow), mid + 5, pos(&x, fast),
              mid);
    hb_printf(b, "<text class=\"value\" x=\"%d\" y=\"%.1f\">%.1f/s \xC2\xB7 batch %d</text></g>\n",
              BAR_X1 + 8, mid + 4, med, q->batch);
  }
  hb_printf(b, "</svg>\n");
  free(rows);
}

/* ---- latency against batch size --------------------------------------------- */

enum { LW = 980, LH = 440, LX0 = 80, LX1 = 960, LY0 = 400, LY1 = 20 };

void rh_svg_latency(hbuf *b, const rh_page *p) {
  double lo = INFINITY, hi = 0;
  int bmin = 0, bmax = 0, drawn = 0;
  int batches[RH_MAX_POINTS * 2], nb = 0;
  for (int i = 0; i < p->n; i++)
    for (int k = 0; k < p->c[i].n_pts; k++) {
      const rh_point *q = &p->c[i].pts[k];
      lo = q->min_ms < lo ? q->min_ms : lo;
      hi = q->p90_ms > hi ? q->p90_ms : hi;
      bmin = !bmin || q->batch < bmin ? q->batch : bmin;
      bmax = q->batch > bmax ? q->batch : bmax;
      bool seen = false;
      for (int j = 0; j < nb; j++)
        seen |= batches[j] == q->batch;
      if (!seen && nb < (int)(sizeof batches / sizeof batches[0])) batches[nb++] = q->batch;
      drawn++;
    }
  if (!drawn) {
    hb_printf(b, "<p class=\"none\">No candidate was timed.</p>\n");
    return;
  }
  axis x = {bmin, bmax, true, LX0 + 20, LX1 - 20};
  if (bmin == bmax) x.lo = bmin / 2.0, x.hi = bmax * 2.0;
  axis y = value_axis(lo, hi, LY0, LY1, 0); /* latency: always logarithmic */
  hb_printf(b,
            "<svg id=\"latency-chart\" class=\"chart\" viewBox=\"0 0 %d %d\" "
            "xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" "
            "aria-label=\"latency against batch size\">\n",
            LW, LH + 30);
  double tv[40];
  int nt = ticks(&y, tv, 40);
  for (int i = 0; i < nt; i++) {
    char s[32];
    tick_label(s, sizeof s, tv[i]);
    hb_printf(b,
              "<line class=\"grid\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>"
              "<text class=\"tick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
              LX0, pos(&y, tv[i]), LX1, pos(&y, tv[i]), LX0 - 6, pos(&y, tv[i]) + 4, s);
  }
  for (int j = 0; j < nb; j++)
    hb_printf(b,
              "<line class=\"grid\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>"
              "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%d</text>\n",
              pos(&x, batches[j]), LY1, pos(&x, batches[j]), LY0, pos(&x, batches[j]), LY0 + 16,
              batches[j]);
  hb_printf(b,
            "<text class=\"axis\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">batch size</text>"
            "<text class=\"axis\" transform=\"translate(18 %d) rotate(-90)\" "
            "text-anchor=\"middle\">ms per run (median; whiskers: fastest to p90; log "
            "scale)</text>\n",
            (LX0 + LX1) / 2, LY0 + 36, (LY0 + LY1) / 2);
  for (int i = 0; i < p->n; i++) {
    const rh_cand *c = &p->c[i];
    if (!c->n_pts) continue;
    hb_printf(b, "<g class=\"series%s\"><title>", c->selected ? " selected" : "");
    hb_text(b, c->name);
    hb_printf(b, "</title>\n<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%s\"%s points=\"",
              c->color, c->selected ? "3.5" : "1.6",
              c->baseline ? " stroke-dasharray=\"6 4\"" : "");
    for (int k = 0; k < c->n_pts; k++)
      hb_printf(b, "%s%.1f,%.1f", k ? " " : "", pos(&x, c->pts[k].batch),
                pos(&y, c->pts[k].median_ms));
    hb_printf(b, "\"/>\n");
    for (int k = 0; k < c->n_pts; k++) {
      const rh_point *q = &c->pts[k];
      double px = pos(&x, q->batch);
      hb_printf(b,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                "stroke-opacity=\"0.45\"/><circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\">"
                "<title>",
                px, pos(&y, q->min_ms), px, pos(&y, q->p90_ms), c->color, px, pos(&y, q->median_ms),
                c->color);
      hb_text(b, c->name);
      hb_printf(b,
                ", batch %d: median %.3f ms (fastest %.3f, p90 %.3f), %.1f samples/s"
                "</title></circle>\n",
                q->batch, q->median_ms, q->min_ms, q->p90_ms, rh_thr(q->batch, q->median_ms));
    }
    hb_printf(b, "</g>\n");
  }
  hb_printf(b, "</svg>\n");
}
