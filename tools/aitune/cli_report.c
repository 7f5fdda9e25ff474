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

/* Best throughput row of a profile array, for the summary column. */
static const cJSON *best_row(const cJSON *profile) {
  const cJSON *best = NULL, *r;
  cJSON_ArrayForEach(r, profile) if (!best || num(r, "throughput") > num(best, "throughput")) best =
      r;
  return best;
}

static void row(FILE *f, const char *name, const char *status, const cJSON *c,
                const cJSON *profile) {
  const cJSON *b = best_row(profile);
  fprintf(f, "  %-28s %-21s", name, status);
  if (b)
    fprintf(f, " %6d %10.3f %10.3f %10.3f %12.1f", (int)num(b, "batch"), num(b, "median_ms"),
            num(b, "p90_ms"), num(b, "p99_ms"), num(b, "throughput"));
  else
    fprintf(f, " %6s %10s %10s %10s %12s", "-", "-", "-", "-", "-");
  const cJSON *v = c ? cJSON_GetObjectItemCaseSensitive(c, "validation") : NULL;
  if (v && num(v, "outputs_checked") > 0)
    fprintf(f, "  %9.2e %9.6f", num(v, "max_abs_error"), num(v, "min_cosine"));
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
  const cJSON *model = cJSON_GetObjectItemCaseSensitive(r, "model");
  const cJSON *strat = cJSON_GetObjectItemCaseSensitive(r, "strategy");
  fprintf(f, "model %s (sha256 %.16s...), strategy %s, %d sample(s)%s\n", str(model, "name"),
          str(model, "sha256"), str(strat, "name"), (int)num(r, "samples"),
          cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "from_cache")) ? ", from the cache"
                                                                          : "");
  fprintf(f, "  %-28s %-21s %6s %10s %10s %10s %12s  %9s %9s\n", "backend", "status", "batch",
          "median ms", "p90 ms", "p99 ms", "samples/s", "max err", "cosine");
  const cJSON *base = cJSON_GetObjectItemCaseSensitive(r, "baseline");
  row(f, "eager (baseline)", "baseline", NULL, cJSON_GetObjectItemCaseSensitive(base, "profile"));
  const cJSON *c;
  cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(r, "candidates")) {
    char name[64];
    snprintf(name, sizeof name, "%s", str(c, "backend"));
    row(f, name, str(c, "status"), c, cJSON_GetObjectItemCaseSensitive(c, "profile"));
  }
  /* the runoff's finalists, timed again alternately */
  bool first = true;
  cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(r, "candidates")) {
    const cJSON *ro = cJSON_GetObjectItemCaseSensitive(c, "runoff");
    if (!ro) continue;
    if (first)
      fprintf(f, "runoff (%d interleaved rounds, speed relative to the first):",
              (int)num(ro, "rounds"));
    fprintf(f, "%s %s %.3f", first ? "" : ",", str(c, "backend"), num(ro, "speed_ratio"));
    first = false;
  }
  if (!first) fputc('\n', f);
  const cJSON *sel = cJSON_GetObjectItemCaseSensitive(r, "selection");
  fprintf(f, "selected: %s at batch %d", str(sel, "backend"), (int)num(sel, "batch"));
  if (num(sel, "throughput") > 0)
    fprintf(f, " (%.1f samples/s, %.3f ms)", num(sel, "throughput"), num(sel, "latency_ms"));
  fprintf(f, " after %.1f s of tuning\n", num(r, "tuning_s"));
  const cJSON *w;
  cJSON_ArrayForEach(w, cJSON_GetObjectItemCaseSensitive(r, "warnings")) if (cJSON_IsString(w))
      fprintf(f, "warning: %s\n", w->valuestring);
  cJSON_Delete(r);
  return 0;
}
