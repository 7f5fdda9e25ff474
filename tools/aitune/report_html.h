/* The HTML report's view of a tuning report: what the page and its charts
 * draw, read from report.json (untrusted: every number is checked, every
 * string is escaped where it is written). */
#ifndef AIT_CLI_REPORT_HTML_H
#define AIT_CLI_REPORT_HTML_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "html_buf.h"

#define RH_MAX_POINTS 64 /* batch sizes per candidate drawn (the tuner profiles <= 16) */

/* One profiled batch size. Latencies in ms, > 0. */
typedef struct rh_point {
  int batch;
  double median_ms, p90_ms, min_ms;
  bool in_budget; /* the latency-budget strategy could pick it (median within the budget) */
} rh_point;

typedef struct rh_cand {
  const char *name;   /* the backend as described; borrowed from the parsed report */
  const char *status; /* "baseline" for eager */
  const cJSON *json;  /* the candidate's object; NULL for the baseline */
  bool baseline, selected;
  int n_pts;
  rh_point pts[RH_MAX_POINTS];
  int best;          /* index in pts of the point the decision used; -1: none */
  double best_thr;   /* that point's samples/s by its fastest run (the decision's figure) */
  const char *color; /* its line in the latency chart and its swatch in the tables */
} rh_cand;

typedef struct rh_page {
  rh_cand *c; /* owned: baseline first, then the candidates in the report's order */
  int n;
  bool min_latency; /* the strategy compares latency, not throughput */
} rh_page;

/* samples/s of batch at ms per run */
double rh_thr(int batch, double ms);

/* Horizontal bars: each timed candidate's throughput at the point the
 * decision used, the median as the bar, a whisker from the p90 run to the
 * fastest run. */
void rh_svg_throughput(hbuf *b, const rh_page *p);
/* Median latency against batch size, one line per candidate, log-log,
 * with min..p90 whiskers at each point. */
void rh_svg_latency(hbuf *b, const rh_page *p);

#endif
