/* `aitune report DIR --html FILE`: the tuning report as one self-contained
 * page. Inline CSS and SVG only: no script, nothing fetched (the page's
 * Content-Security-Policy forbids both), so it opens offline and can be
 * mailed or archived as it is. Every string from the report (model, input
 * and backend names, messages) is escaped: a model's names are untrusted. */
#define _POSIX_C_SOURCE 200809L /* strdup, strtok_r */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/fileio.h"
#include "report_html.h"

static double num(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsNumber(v) && isfinite(v->valuedouble) ? v->valuedouble : 0;
}
static const char *str(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsString(v) ? v->valuestring : "";
}
static const cJSON *get(const cJSON *o, const char *k) {
  return cJSON_GetObjectItemCaseSensitive(o, k);
}

/* ---- the report read into rh_page -------------------------------------------- */

static int by_batch(const void *a, const void *b) {
  return ((const rh_point *)a)->batch - ((const rh_point *)b)->batch;
}

/* A time the tuner could have measured: a nanosecond to a day. */
static bool plausible_ms(double ms) { return ms >= 1e-6 && ms <= 864e5; }

/* The profile's rows that make sense (batch 1..1e7, plausible times),
 * sorted by batch; a missing or impossible p90 or minimum (a hand-edited
 * report) reads as the median. */
static void read_points(const cJSON *profile, double budget_ms, rh_cand *c) {
  const cJSON *r;
  cJSON_ArrayForEach(r, profile) {
    double b = num(r, "batch"), med = num(r, "median_ms");
    if (c->n_pts == RH_MAX_POINTS || !(b >= 1 && b <= 1e7) || !plausible_ms(med)) continue;
    rh_point *q = &c->pts[c->n_pts++];
    q->batch = (int)b;
    q->median_ms = med;
    q->p90_ms = plausible_ms(num(r, "p90_ms")) ? num(r, "p90_ms") : med;
    q->min_ms = plausible_ms(num(r, "min_ms")) ? num(r, "min_ms") : med;
    q->in_budget = !(budget_ms > 0) || med <= budget_ms;
  }
  qsort(c->pts, (size_t)c->n_pts, sizeof c->pts[0], by_batch);
}

/* The point the tuner's decision used (src/tune/strategy.c, ait_tune_best_point with
 * decide): each run judged by its fastest time, the budget by the median. */
static void find_best(rh_cand *c, bool min_latency) {
  c->best = -1;
  for (int k = 0; k < c->n_pts; k++) {
    const rh_point *q = &c->pts[k];
    if (!q->in_budget) continue;
    double thr = rh_thr(q->batch, q->min_ms);
    bool better =
        c->best < 0 || (min_latency ? q->min_ms < c->pts[c->best].min_ms : thr > c->best_thr);
    if (better) {
      c->best = k;
      c->best_thr = thr;
    }
  }
}

static const char *const palette[] = {
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22",
    "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#e6550d"};

static bool read_page(const cJSON *r, rh_page *p) {
  const cJSON *strat = get(r, "strategy"), *cands = get(r, "candidates");
  const cJSON *sel = get(r, "selection");
  int n = cJSON_IsArray(cands) ? cJSON_GetArraySize(cands) : 0;
  p->c = calloc((size_t)n + 1, sizeof *p->c);
  if (!p->c) return false;
  p->min_latency = !strcmp(str(strat, "name"), "min-latency");
  double budget =
      !strcmp(str(strat, "name"), "latency-budget") ? num(strat, "latency_budget_ms") : 0;
  rh_cand *b = &p->c[p->n++];
  b->name = "eager (baseline)";
  b->status = "baseline";
  b->baseline = true;
  b->selected = cJSON_IsTrue(get(sel, "is_baseline"));
  b->color = "#555555";
  read_points(get(get(r, "baseline"), "profile"), budget, b);
  find_best(b, p->min_latency);
  const cJSON *c;
  cJSON_ArrayForEach(c, cands) {
    if (p->n > n) break;
    rh_cand *x = &p->c[p->n];
    x->name = str(c, "backend");
    x->status = str(c, "status");
    x->json = c;
    x->selected = !strcmp(x->status, "selected");
    x->color = palette[(p->n - 1) % (sizeof palette / sizeof palette[0])];
    read_points(get(c, "profile"), budget, x);
    find_best(x, p->min_latency);
    p->n++;
  }
  return true;
}

/* ---- pieces of the page -------------------------------------------------------- */

static const struct {
  const char *status, *label, *words;
} statuses[] = {
    {"selected", "selected", "Chosen: correct, and the best under the strategy."},
    {"ok", "correct, not chosen",
     "Its outputs passed the numeric check, but another candidate did better."},
    {"baseline", "baseline",
     "The reference executor: every candidate is checked against it and "
     "must beat it."},
    {"unsupported", "unsupported", "This backend cannot run this model as configured."},
    {"build_failed", "build failed", "Building it for this model failed."},
    {"incorrect", "incorrect", "Its outputs failed the numeric check against the reference."},
    {"slower_than_baseline", "slower than eager",
     "Correct, but not faster than the eager baseline by the required margin."},
    {"over_budget", "over budget",
     "Correct, but no batch size kept its median within the "
     "latency budget."},
    {"same_as_default", "same as another",
     "It ran the same code as another candidate, so its timing decides nothing."},
    {"slower_than_more_precise", "precision lost for nothing",
     "Reduced precision, yet not faster than a more precise candidate."},
    {"pending", "not judged", "The tuner stopped before judging it."},
};

static int status_row(const char *s) {
  for (size_t i = 0; i < sizeof statuses / sizeof statuses[0]; i++)
    if (!strcmp(statuses[i].status, s)) return (int)i;
  return -1;
}

static void badge(hbuf *b, const char *status) {
  int i = status_row(status);
  hb_printf(b, "<span class=\"badge s-%s\">", i >= 0 ? statuses[i].status : "unknown");
  hb_text(b, i >= 0 ? statuses[i].label : status);
  hb_printf(b, "</span>");
}

static void swatch(hbuf *b, const rh_cand *c) {
  hb_printf(b, "<span class=\"sw\" style=\"background:%s\"></span>", c->color);
}

/* A number in a table cell, "-" when there is none. */
static void cell(hbuf *b, const char *fmt, double v, bool have) {
  hb_printf(b, "<td class=\"n\">");
  if (have)
    hb_printf(b, fmt, v);
  else
    hb_printf(b, "&ndash;");
  hb_printf(b, "</td>");
}

static const char css[] =
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif;"
    "color:#1d2330;margin:0;background:#f6f7f9}"
    "main{max-width:1180px;margin:0 auto;padding:20px 28px 40px;background:#fff}"
    "h1{font-size:22px;margin:4px 0 2px}h2{font-size:17px;margin:28px 0 8px;"
    "border-bottom:1px solid #dde1e6;padding-bottom:4px}"
    ".sub{color:#5b6270;margin:0 0 14px;overflow-wrap:anywhere}"
    ".summary{display:flex;flex-wrap:wrap;gap:10px}"
    ".tile{border:1px solid #dde1e6;border-radius:6px;padding:8px 12px;min-width:150px}"
    ".tile b{display:block;font-size:18px}.tile span{display:block;color:#5b6270;font-size:12px}"
    "table{border-collapse:collapse;width:100%;font-size:13px}"
    "th,td{border-bottom:1px solid #e6e8ec;padding:4px 6px;text-align:left;vertical-align:top}"
    "th{background:#f0f2f5;font-weight:600}#candidates tr.main td{border-bottom:0}"
    "#candidates tr.detail td{padding:0 6px 6px 22px}td.n{text-align:right;font-variant-numeric:"
    "tabular-nums;white-space:nowrap}td.name{overflow-wrap:break-word;min-width:140px;max-width:"
    "260px}"
    ".why{color:#5b6270;font-size:12px;overflow-wrap:anywhere}"
    ".badge{display:inline-block;border-radius:10px;padding:0 8px;font-size:12px;"
    "white-space:nowrap;background:#eceff1}"
    ".s-selected{background:#c8e6c9;color:#1b5e20}.s-ok{background:#bbdefb;color:#0d47a1}"
    ".s-incorrect,.s-build_failed{background:#ffcdd2;color:#b71c1c}"
    ".s-slower_than_baseline{background:#ffe0b2;color:#e65100}"
    ".s-over_budget{background:#e1bee7;color:#4a148c}"
    ".pass{color:#1b5e20;font-weight:600}.fail{color:#b71c1c;font-weight:600}"
    ".sw{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:6px}"
    ".chart{width:100%;height:auto;font-size:12px;background:#fff}"
    ".chart text{fill:#1d2330}.chart .tick{fill:#5b6270;font-size:11px}"
    ".chart .axis{font-size:12px;fill:#3b4250}.chart .grid{stroke:#e6e8ec}"
    ".chart .whisker{stroke:#222;stroke-width:1.5}.chart .value{font-size:11px}"
    ".chart .selected .label{font-weight:700}"
    ".legend{display:flex;flex-wrap:wrap;gap:4px 16px;font-size:12px;margin:4px 0 0}"
    ".legend .dash{display:inline-block;width:18px;border-top:2px dashed #555;"
    "vertical-align:middle;margin-right:6px}"
    ".feat{display:inline-block;background:#eef1f4;border-radius:4px;padding:0 5px;"
    "margin:1px 2px;font-size:12px}"
    "code{font-size:12px;overflow-wrap:anywhere}.none{color:#5b6270}"
    "footer{color:#5b6270;font-size:12px;margin-top:30px}";

static void head(hbuf *b, const cJSON *r) {
  hb_printf(b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
               "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
               "style-src 'unsafe-inline'\">\n"
               "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
               "<title>aitune report: ");
  hb_text(b, str(get(r, "model"), "name"));
  hb_printf(b, "</title>\n<style>%s</style>\n</head>\n<body><main>\n", css);
}

static void tile(hbuf *b, const char *label, const char *fmt, double v) {
  hb_printf(b, "<div class=\"tile\"><span>%s</span><b>", label);
  hb_printf(b, fmt, v);
  hb_printf(b, "</b></div>");
}

static void summary(hbuf *b, const cJSON *r, const rh_page *p) {
  const cJSON *model = get(r, "model"), *strat = get(r, "strategy"), *sel = get(r, "selection");
  hb_printf(b, "<h1>aitune tuning report: ");
  hb_text(b, str(model, "name"));
  hb_printf(b, "</h1>\n<p class=\"sub\">");
  hb_text(b, str(model, "path"));
  hb_printf(b, " &middot; sha256 <code>");
  hb_text(b, str(model, "sha256"));
  hb_printf(b, "</code> &middot; strategy <b>");
  hb_text(b, str(strat, "name"));
  hb_printf(b, "</b> &middot; %d sample set(s) &middot; aitune ", (int)num(r, "samples"));
  hb_text(b, str(r, "aitune"));
  hb_printf(b, "%s</p>\n", cJSON_IsTrue(get(r, "from_cache")) ? " &middot; from the cache" : "");
  const rh_cand *s = NULL;
  for (int i = 0; i < p->n; i++)
    if (p->c[i].selected) s = &p->c[i];
  const rh_cand *base = &p->c[0];
  hb_printf(b, "<div class=\"summary\"><div class=\"tile\"><span>selected</span><b>");
  hb_text(b, str(sel, "backend"));
  hb_printf(b, "</b></div>");
  /* what was saved: the batch with the best median (selection), and what the
   * choice between candidates compared: fastest runs */
  tile(b, "saved batch", "%.0f", num(sel, "batch"));
  if (num(sel, "throughput") > 0)
    tile(b, "samples/s at it (median run)", "%.1f", num(sel, "throughput"));
  if (s && s->best >= 0) {
    hb_printf(b,
              "<div class=\"tile\"><span>decided by: fastest run</span><b>%.1f/s</b>"
              "<span>at batch %d</span></div>",
              s->best_thr, s->pts[s->best].batch);
    double base_med = 0; /* the baseline's best median throughput over its batches */
    for (int k = 0; k < base->n_pts; k++)
      if (base->pts[k].in_budget && rh_thr(base->pts[k].batch, base->pts[k].median_ms) > base_med)
        base_med = rh_thr(base->pts[k].batch, base->pts[k].median_ms);
    if (!s->baseline && base->best >= 0 && !p->min_latency) {
      hb_printf(b,
                "<div class=\"tile\"><span>throughput vs eager</span><b>%.2f&times;</b>"
                "<span>by fastest runs",
                s->best_thr / base->best_thr);
      if (base_med > 0 && num(sel, "throughput") > 0)
        hb_printf(b, "; %.2f&times; by medians", num(sel, "throughput") / base_med);
      hb_printf(b, "</span></div>");
    } else if (!s->baseline && base->best >= 0) {
      hb_printf(b,
                "<div class=\"tile\"><span>latency vs eager (fastest runs)</span>"
                "<b>%.2f&times; faster</b></div>",
                base->pts[base->best].min_ms / s->pts[s->best].min_ms);
    }
  }
  tile(b, "tuning time", "%.1f s", num(r, "tuning_s"));
  hb_printf(b, "</div>\n");
}

static void legend(hbuf *b, const rh_page *p) {
  hb_printf(b, "<div class=\"legend\">");
  for (int i = 0; i < p->n; i++) {
    const rh_cand *c = &p->c[i];
    if (!c->n_pts) continue;
    hb_printf(b, "<span>");
    if (c->baseline)
      hb_printf(b, "<span class=\"dash\"></span>");
    else
      swatch(b, c);
    hb_text(b, c->name);
    hb_printf(b, "%s</span>", c->selected ? " <b>(selected)</b>" : "");
  }
  hb_printf(b, "</div>\n");
}

/* One row of numbers per candidate, and under it what happened in words. */
static void candidates_table(hbuf *b, const rh_page *p) {
  hb_printf(b, "<table id=\"candidates\"><tr><th>backend</th><th>status</th><th>batch</th>"
               "<th>median ms</th><th>p90 ms</th><th>fastest ms</th><th>samples/s median</th>"
               "<th>samples/s fastest (decided by)</th><th>build s</th><th>nodes</th></tr>\n");
  for (int i = 0; i < p->n; i++) {
    const rh_cand *c = &p->c[i];
    int row = status_row(c->status);
    hb_printf(b, "<tr class=\"main\"><td class=\"name\">");
    swatch(b, c);
    hb_text(b, c->name);
    hb_printf(b, "</td><td>");
    badge(b, c->status);
    hb_printf(b, "</td>");
    const rh_point *q = c->best >= 0 ? &c->pts[c->best] : NULL;
    cell(b, "%.0f", q ? q->batch : 0, q);
    cell(b, "%.3f", q ? q->median_ms : 0, q);
    cell(b, "%.3f", q ? q->p90_ms : 0, q);
    cell(b, "%.3f", q ? q->min_ms : 0, q);
    cell(b, "%.1f", q ? rh_thr(q->batch, q->median_ms) : 0, q);
    cell(b, "%.1f", c->best_thr, q);
    cell(b, "%.3f", num(c->json, "build_s"), c->json != NULL);
    hb_printf(b, "<td class=\"n\">");
    if (c->json && num(c->json, "nodes_total") > 0)
      hb_printf(b, "%.0f/%.0f", num(c->json, "nodes_supported"), num(c->json, "nodes_total"));
    hb_printf(b, "</td></tr>\n<tr class=\"detail\"><td colspan=\"10\">");
    hb_text(b, row >= 0 ? statuses[row].words : "Status unknown to this version of aitune.");
    const char *detail = str(c->json, "error");
    if (detail[0]) {
      hb_printf(b, " <span class=\"why\">");
      hb_text(b, detail);
      hb_printf(b, "</span>");
    }
    const cJSON *ro = get(c->json, "runoff");
    if (ro)
      hb_printf(b,
                " <span class=\"why\">Runoff: %d interleaved rounds, %.3f&times; the leader's "
                "speed.</span>",
                (int)num(ro, "rounds"), num(ro, "speed_ratio"));
    hb_printf(b, "</td></tr>\n");
  }
  hb_printf(b, "</table>\n");
}

/* The bound a candidate was judged by, in words; older reports have none. */
static void tolerance_text(hbuf *b, const cJSON *v, const cJSON *strat) {
  const cJSON *t = get(v, "tolerance");
  if (!t) {
    if (num(strat, "rtol") > 0 || num(strat, "atol") > 0)
      hb_printf(b, "rtol %g, atol %g (given)", num(strat, "rtol"), num(strat, "atol"));
    else
      hb_printf(b, "<span class=\"none\">by precision (not recorded in this report)</span>");
    return;
  }
  hb_text(b, str(t, "precision"));
  hb_printf(b, ": ");
  if (cJSON_IsTrue(get(t, "elementwise")))
    hb_printf(b, "|&Delta;| &le; %g + %g&middot;|ref| per element, ", num(t, "atol"),
              num(t, "rtol"));
  hb_printf(b, "cosine &ge; %g", num(t, "min_cosine"));
  if (num(t, "max_rel") > 0) hb_printf(b, ", max error &le; %g of max |ref|", num(t, "max_rel"));
  if (num(t, "min_top1") > 0 && get(v, "top1_agreement")) /* only classifier outputs have one */
    hb_printf(b, ", top-1 &ge; %g", num(t, "min_top1"));
}

static void numeric_table(hbuf *b, const cJSON *r, const rh_page *p) {
  hb_printf(b, "<table id=\"numeric\"><tr><th>backend</th><th>outputs checked</th>"
               "<th>max abs error</th><th>max rel error</th><th>min cosine</th><th>top-1</th>"
               "<th>mismatches</th><th>NaN/Inf</th><th>tolerance</th><th>result</th></tr>\n");
  for (int i = 1; i < p->n; i++) {
    const rh_cand *c = &p->c[i];
    const cJSON *v = get(c->json, "validation");
    bool checked = num(v, "outputs_checked") > 0;
    hb_printf(b, "<tr><td class=\"name\">");
    swatch(b, c);
    hb_text(b, c->name);
    hb_printf(b, "</td>");
    cell(b, "%.0f", num(v, "outputs_checked"), v != NULL);
    cell(b, "%.3g", num(v, "max_abs_error"), checked);
    cell(b, "%.3g", num(v, "max_rel_error"), checked);
    cell(b, "%.6f", num(v, "min_cosine"), checked);
    cell(b, "%.3f", num(v, "top1_agreement"), checked && get(v, "top1_agreement"));
    cell(b, "%.0f", num(v, "mismatches"), checked);
    cell(b, "%.0f", num(v, "nan_inf"), checked);
    hb_printf(b, "<td>");
    if (checked || get(v, "tolerance")) tolerance_text(b, v, get(r, "strategy"));
    hb_printf(b, "</td><td>");
    const cJSON *passed = get(v, "passed");
    bool fail = cJSON_IsFalse(passed) || !strcmp(c->status, "incorrect");
    if (fail)
      hb_printf(b, "<span class=\"fail\">fail</span>");
    else if (checked)
      hb_printf(b, "<span class=\"pass\">pass</span>");
    else
      hb_printf(b, "<span class=\"none\">not checked</span>");
    hb_printf(b, "</td></tr>\n");
  }
  hb_printf(b, "</table>\n");
}

static void shapes(hbuf *b, const cJSON *r) {
  const cJSON *axes = get(get(r, "graph_spec"), "axes"), *a;
  if (!cJSON_GetArraySize(axes)) {
    hb_printf(b, "<p class=\"none\">Every input has a fixed shape.</p>\n");
    return;
  }
  hb_printf(b, "<table id=\"shapes\"><tr><th>input</th><th>axis</th><th>name</th><th>min</th>"
               "<th>opt (timed)</th><th>max</th><th>batch axis</th></tr>\n");
  cJSON_ArrayForEach(a, axes) {
    hb_printf(b, "<tr><td class=\"n\">%.0f</td><td class=\"n\">%.0f</td><td class=\"name\">",
              num(a, "input"), num(a, "axis"));
    hb_text(b, str(a, "name"));
    hb_printf(b,
              "</td><td class=\"n\">%.0f</td><td class=\"n\">%.0f</td><td class=\"n\">%.0f</td>"
              "<td>%s</td></tr>\n",
              num(a, "min"), num(a, "opt"), num(a, "max"),
              cJSON_IsTrue(get(a, "batch")) ? "yes" : "");
  }
  hb_printf(b, "</table>\n");
}

/* The fingerprint is key=value;key=value (src/hw/fingerprint.c); features
 * are a comma list. */
static void hardware(hbuf *b, const cJSON *r) {
  const char *fp = str(r, "fingerprint");
  hb_printf(b, "<table id=\"hardware\">\n");
  char *copy = strdup(fp);
  for (char *save = NULL, *kv = copy ? strtok_r(copy, ";", &save) : NULL; kv;
       kv = strtok_r(NULL, ";", &save)) {
    char *eq = strchr(kv, '=');
    if (eq) *eq = 0;
    hb_printf(b, "<tr><th>");
    hb_text(b, kv);
    hb_printf(b, "</th><td>");
    const char *val = eq ? eq + 1 : "";
    if (!strcmp(kv, "features")) {
      char *f = strdup(val);
      for (char *s2 = NULL, *t = f ? strtok_r(f, ",", &s2) : NULL; t;
           t = strtok_r(NULL, ",", &s2)) {
        hb_printf(b, "<span class=\"feat\">");
        hb_text(b, t);
        hb_printf(b, "</span>");
      }
      free(f);
    } else {
      hb_text(b, val);
    }
    hb_printf(b, "</td></tr>\n");
  }
  free(copy);
  const cJSON *mp = get(r, "memory_pressure");
  if (mp) {
    hb_printf(b, "<tr><th>memory pressure</th><td>");
    hb_text(b, str(mp, "level"));
    hb_printf(b, ": ");
    hb_text(b, str(mp, "reading"));
    hb_printf(b, "</td></tr>\n");
  }
  hb_printf(b, "</table>\n<p class=\"why\">fingerprint <code>");
  hb_text(b, fp);
  hb_printf(b, "</code></p>\n");
}

static void decision(hbuf *b, const cJSON *d) {
  if (!d) {
    hb_printf(b, "<p class=\"none\">No decision.json was read.</p>\n");
    return;
  }
  hb_printf(b, "<table id=\"decision\"><tr><th>backend</th><td>");
  hb_text(b, str(d, "backend"));
  hb_printf(b, "</td></tr><tr><th>options</th><td>");
  const cJSON *o;
  cJSON_ArrayForEach(o, get(get(d, "backend_config"), "options")) {
    hb_printf(b, "<span class=\"feat\">");
    hb_text(b, o->string);
    hb_printf(b, "=");
    hb_text(b, cJSON_IsString(o) ? o->valuestring : "?");
    hb_printf(b, "</span>");
  }
  hb_printf(b, "</td></tr><tr><th>batch</th><td>%.0f</td></tr><tr><th>model</th><td>",
            num(d, "batch"));
  hb_text(b, str(d, "model_source"));
  hb_printf(b, " <code>");
  hb_text(b, str(d, "model_sha256"));
  hb_printf(b, "</code></td></tr></table>\n");
}

static void warnings(hbuf *b, const cJSON *r) {
  const cJSON *w, *ws = get(r, "warnings");
  if (!cJSON_GetArraySize(ws)) return;
  hb_printf(b, "<h2>Warnings</h2>\n<ul id=\"warnings\">");
  cJSON_ArrayForEach(w, ws) {
    hb_printf(b, "<li>");
    hb_text(b, cJSON_IsString(w) ? w->valuestring : "");
    hb_printf(b, "</li>");
  }
  hb_printf(b, "</ul>\n");
}

static void page(hbuf *b, const cJSON *r, const cJSON *d, const rh_page *p, const char *src) {
  head(b, r);
  summary(b, r, p);
  hb_printf(b, "<h2>Throughput</h2>\n<p class=\"why\">Each candidate at the batch size its "
               "decision used. The tuner compares fastest runs (noise on a shared machine only "
               "adds time); the bar is the median.</p>\n");
  rh_svg_throughput(b, p);
  hb_printf(b, "<h2>Latency against batch size</h2>\n");
  rh_svg_latency(b, p);
  legend(b, p);
  hb_printf(b, "<h2>Candidates</h2>\n");
  candidates_table(b, p);
  hb_printf(b, "<h2>Numeric check against the reference</h2>\n");
  numeric_table(b, r, p);
  hb_printf(b, "<h2>Shapes</h2>\n");
  shapes(b, r);
  warnings(b, r);
  hb_printf(b, "<h2>Decision (decision.json)</h2>\n");
  decision(b, d);
  hb_printf(b, "<h2>Hardware</h2>\n");
  hardware(b, r);
  hb_printf(b, "<footer>Written by aitune %s from ", ait_version());
  hb_text(b, src);
  hb_printf(b, ".</footer>\n</main></body>\n</html>\n");
}

int cli_report_html(const char *report_json, const char *decision_json, const char *src,
                    const char *path) {
  cJSON *r = cJSON_Parse(report_json);
  cJSON *d = decision_json ? cJSON_Parse(decision_json) : NULL;
  if (!r || strcmp(str(r, "format"), "aitune-report")) {
    cJSON_Delete(r);
    cJSON_Delete(d);
    fprintf(stderr, "aitune: the report is not valid aitune JSON\n");
    return 1;
  }
  rh_page p = {0};
  hbuf b = {0};
  int rc = 0;
  if (read_page(r, &p)) page(&b, r, d, &p, src);
  if (!p.c || b.oom) {
    fprintf(stderr, "aitune: out of memory writing the HTML report\n");
    rc = 1;
  } else {
    ait_status st = ait_write_file_atomic(path, b.p, b.n); /* temp file, then rename */
    if (st) rc = cli_fail(st, "cannot write the HTML report");
  }
  hb_free(&b);
  free(p.c);
  cJSON_Delete(r);
  cJSON_Delete(d);
  return rc;
}
