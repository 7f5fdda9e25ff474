/* Print a tuning report (its JSON) as a table on the terminal. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static double num(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsNumber(v) ? v->valuedouble : 0;
}
static const char *str(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsString(v) ? v->valuestring : "";
}
static const cJSON *obj(const cJSON *o, const char *k) {
  return cJSON_GetObjectItemCaseSensitive(o, k);
}

/* Best throughput row of a profile array by its median: what to expect. */
static const cJSON *best_row(const cJSON *profile) {
  const cJSON *best = NULL, *r;
  cJSON_ArrayForEach(r, profile) if (!best || num(r, "throughput") > num(best, "throughput")) best =
      r;
  return best;
}

/* Why a candidate that was not picked lost, in a few words, where its
 * median throughput beat the selection's (the table would otherwise show
 * a loser faster than the winner with no reason). */
static const char *note(const cJSON *c, double sel_median_tp) {
  const char *s = str(c, "status");
  const cJSON *b = best_row(obj(c, "profile"));
  if (!strcmp(s, "selected")) return obj(c, "runoff") ? "picked in the runoff" : "picked";
  if (!b || num(b, "throughput") <= sel_median_tp) return "";
  if (!strcmp(s, "ok"))
    return obj(c, "runoff") ? "faster median; lost the runoff"
                            : "faster median; slower fastest run";
  if (!strcmp(s, "over_budget")) return "faster median; over the budget";
  if (!strcmp(s, "slower_than_more_precise")) return "faster median; reduced precision lost";
  if (!strcmp(s, "same_as_default")) return "faster median; same code as another";
  return "faster median; see below";
}

static void row(FILE *f, const char *name, const char *status, const cJSON *c, const cJSON *holder,
                double sel_median_tp) {
  const cJSON *profile = obj(holder, "profile"), *dec = obj(holder, "decided");
  const cJSON *b = best_row(profile);
  fprintf(f, "  %-28s %-24s", name, status);
  if (b)
    fprintf(f, " %6d %9.3f %9.3f %11.1f", (int)num(b, "batch"), num(b, "median_ms"),
            num(b, "p90_ms"), num(b, "throughput"));
  else
    fprintf(f, " %6s %9s %9s %11s", "-", "-", "-", "-");
  if (cJSON_IsObject(dec))
    fprintf(f, "  %6d %9.3f %11.1f", (int)num(dec, "batch"), num(dec, "ms"),
            num(dec, "throughput"));
  else
    fprintf(f, "  %6s %9s %11s", "-", "-", "-");
  const cJSON *v = c ? obj(c, "validation") : NULL;
  const cJSON *cos = v ? obj(v, "min_cosine") : NULL;
  if (v && num(v, "outputs_checked") > 0) {
    fprintf(f, "  %9.2e", num(v, "max_abs_error"));
    if (cJSON_IsNumber(cos))
      fprintf(f, " %9.7f", cos->valuedouble);
    else
      fprintf(f, " %9s", "-"); /* no float output: integers match exactly */
  } else if (c) {
    fprintf(f, "  %9s %9s", "-", "-");
  } else {
    fprintf(f, "  %9s %9s", "", "");
  }
  if (c) fprintf(f, "  %s", note(c, sel_median_tp));
  fputc('\n', f);
  if (c && str(c, "error")[0]) fprintf(f, "      %s\n", str(c, "error"));
}

int cli_print_report(FILE *f, const char *json) {
  cJSON *r = cJSON_Parse(json);
  if (!r || strcmp(str(r, "format"), "aitune-report")) {
    cJSON_Delete(r);
    fprintf(stderr, "aitune: the report is not valid aitune JSON\n");
    return 1;
  }
  const cJSON *model = obj(r, "model");
  const cJSON *strat = obj(r, "strategy");
  fprintf(f, "model %s (sha256 %.16s...), strategy %s, %d sample(s)%s\n", str(model, "name"),
          str(model, "sha256"), str(strat, "name"), (int)num(r, "samples"),
          cJSON_IsTrue(obj(r, "from_cache")) ? ", from the cache" : "");
  fprintf(f, "  %-28s %-24s %6s %9s %9s %11s  %6s %9s %11s  %9s %9s  %s\n", "backend", "status",
          "batch", "median ms", "p90 ms", "median/s", "batch", "fastest ms", "decided/s", "max err",
          "cosine", "note");
  const cJSON *sel = obj(r, "selection"), *c;
  double sel_tp = 0; /* the selection's median throughput, at its best batch */
  cJSON_ArrayForEach(c, obj(r, "candidates")) if (!strcmp(str(c, "status"), "selected")) {
    const cJSON *b = best_row(obj(c, "profile"));
    sel_tp = b ? num(b, "throughput") : 0;
  }
  if (cJSON_IsTrue(obj(sel, "is_baseline"))) {
    const cJSON *b = best_row(obj(obj(r, "baseline"), "profile"));
    sel_tp = b ? num(b, "throughput") : 0;
  }
  row(f, "eager (baseline)", "baseline", NULL, obj(r, "baseline"), sel_tp);
  cJSON_ArrayForEach(c, obj(r, "candidates")) {
    char name[64];
    snprintf(name, sizeof name, "%s", str(c, "backend"));
    row(f, name, str(c, "status"), c, c, sel_tp);
  }
  fprintf(f, "  (median/s: at the batch with the best median; decided/s: what the choice\n"
             "  compared, each candidate's fastest run at its best batch, since noise only\n"
             "  adds time; latency budgets apply to medians)\n");
  /* the runoff's finalists, timed again alternately */
  bool first = true;
  cJSON_ArrayForEach(c, obj(r, "candidates")) {
    const cJSON *ro = obj(c, "runoff");
    if (!ro) continue;
    if (first)
      fprintf(f, "runoff (%d interleaved rounds, speed relative to the first):",
              (int)num(ro, "rounds"));
    fprintf(f, "%s %s %.3f", first ? "" : ",", str(c, "backend"), num(ro, "speed_ratio"));
    first = false;
  }
  if (!first) fputc('\n', f);
  fprintf(f, "selected: %s at batch %d", str(sel, "backend"), (int)num(sel, "batch"));
  if (num(sel, "throughput") > 0)
    fprintf(f, " (%.1f samples/s, %.3f ms median)", num(sel, "throughput"), num(sel, "latency_ms"));
  fprintf(f, " after %.1f s of tuning\n", num(r, "tuning_s"));
  const cJSON *w;
  cJSON_ArrayForEach(w, obj(r, "warnings")) if (cJSON_IsString(w))
      fprintf(f, "warning: %s\n", w->valuestring);
  cJSON_Delete(r);
  return 0;
}
