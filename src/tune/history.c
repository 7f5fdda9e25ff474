#include "tune/history.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "core/fileio.h"
#include "hw/fingerprint.h"

/* A measured time or rate: finite, >= 0, below a day's worth of anything. */
static bool in_range(double v) { return v >= 0 && v <= 1e12; }

void ait_history_open(const char *cache_root, const char *model_sha, const char *backend_desc,
                      ait_history *h) {
  memset(h, 0, sizeof *h);
  if (!cache_root || !cache_root[0]) return;
  char fp[65], key_text[512], key[65];
  ait_fingerprint_digest(fp);
  snprintf(key_text, sizeof key_text, "%s|%s|%s", fp, model_sha, backend_desc);
  ait_sha256_hex(key_text, strlen(key_text), key);
  snprintf(h->path, sizeof h->path, "%s/history/%.32s.json", cache_root, key);
  void *text = NULL;
  size_t size;
  if (ait_read_file_max(h->path, AIT_MAX_META_BYTES, &text, &size) != AIT_OK) {
    ait_err_clear();
    return;
  }
  cJSON *root = cJSON_Parse(text);
  free(text);
  const cJSON *pts = cJSON_GetObjectItemCaseSensitive(root, "points"), *p;
  cJSON_ArrayForEach(p, pts) {
    if (h->n == AIT_HISTORY_MAX) break;
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(p, "batch"),
                *tp = cJSON_GetObjectItemCaseSensitive(p, "throughput"),
                *md = cJSON_GetObjectItemCaseSensitive(p, "median_ms");
    /* the file is untrusted: a batch of 1e12 would overflow the sweep's
     * doubling, a NaN or negative time would win every comparison */
    if (!cJSON_IsNumber(b) || !cJSON_IsNumber(tp) || !cJSON_IsNumber(md) ||
        !(b->valuedouble >= 1 && b->valuedouble <= AIT_HISTORY_MAX_BATCH) ||
        b->valuedouble != (double)(int)b->valuedouble || !in_range(tp->valuedouble) ||
        !in_range(md->valuedouble) || !(md->valuedouble > 0))
      continue; /* a damaged entry is skipped, the rest still teaches */
    if (ait_history_get(h, (int)b->valuedouble)) continue; /* one point per batch */
    ait_batch_point *q = &h->pts[h->n++];
    q->batch = (int)b->valuedouble;
    q->throughput = tp->valuedouble;
    q->median_ms = md->valuedouble;
    const cJSON *x;
    x = cJSON_GetObjectItemCaseSensitive(p, "times");
    q->times =
        cJSON_IsNumber(x) && x->valuedouble >= 1 && x->valuedouble <= 1e6 ? (int)x->valuedouble : 1;
    x = cJSON_GetObjectItemCaseSensitive(p, "p90_ms");
    q->p90_ms = cJSON_IsNumber(x) && in_range(x->valuedouble) ? x->valuedouble : q->median_ms;
    x = cJSON_GetObjectItemCaseSensitive(p, "p99_ms");
    q->p99_ms = cJSON_IsNumber(x) && in_range(x->valuedouble) ? x->valuedouble : q->median_ms;
  }
  cJSON_Delete(root);
}

const ait_batch_point *ait_history_get(const ait_history *h, int batch) {
  for (int i = 0; i < h->n; i++)
    if (h->pts[i].batch == batch) return &h->pts[i];
  return NULL;
}

void ait_history_put(ait_history *h, const ait_latency_stats *s) {
  ait_batch_point *q = (ait_batch_point *)ait_history_get(h, s->batch);
  if (!q) {
    if (h->n == AIT_HISTORY_MAX) return;
    q = &h->pts[h->n++];
    memset(q, 0, sizeof *q);
    q->batch = s->batch;
  }
  q->times++;
  q->throughput = s->throughput;
  q->median_ms = s->median_ms;
  q->p90_ms = s->p90_ms;
  q->p99_ms = s->p99_ms;
}

int ait_history_best(const ait_history *h, double budget_ms) {
  int best = 0;
  double tp = 0;
  for (int i = 0; i < h->n; i++) {
    if (budget_ms > 0 && h->pts[i].median_ms > budget_ms) continue;
    if (h->pts[i].throughput > tp) {
      tp = h->pts[i].throughput;
      best = h->pts[i].batch;
    }
  }
  return best;
}

ait_status ait_history_save(const ait_history *h) {
  if (!h->path[0]) return AIT_OK;
  char dir[4300];
  snprintf(dir, sizeof dir, "%s", h->path);
  char *slash = strrchr(dir, '/');
  if (slash) *slash = '\0';
  AIT_TRY(ait_mkdir_p(dir));
  cJSON *root = cJSON_CreateObject(), *pts = cJSON_AddArrayToObject(root, "points");
  cJSON_AddStringToObject(root, "format", "aitune-batch-history");
  for (int i = 0; i < h->n; i++) {
    cJSON *p = cJSON_CreateObject();
    cJSON_AddNumberToObject(p, "batch", h->pts[i].batch);
    cJSON_AddNumberToObject(p, "times", h->pts[i].times);
    cJSON_AddNumberToObject(p, "throughput", h->pts[i].throughput);
    cJSON_AddNumberToObject(p, "median_ms", h->pts[i].median_ms);
    cJSON_AddNumberToObject(p, "p90_ms", h->pts[i].p90_ms);
    cJSON_AddNumberToObject(p, "p99_ms", h->pts[i].p99_ms);
    cJSON_AddItemToArray(pts, p);
  }
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  ait_status st = text ? ait_write_file_atomic(h->path, text, strlen(text))
                       : ait_err(AIT_E_NOMEM, "out of memory");
  free(text);
  return st;
}
