/* The tuner under memory pressure, driven by injected readings: each level's
 * policy shows in what tuning does (batch multiplier, refused builds). */
#include <cjson/cJSON.h>
#include <stdlib.h>

#include "check.h"

static char tune_msg[1024];

static cJSON *tune_at(const char *model, unsigned long long avail, ait_strategy s, ait_status *st) {
  ait_module *m = NULL;
  CHECK_ERR(ait_module_create(model, NULL, &m), AIT_OK, NULL);
  if (!m) return NULL;
  ait_mem_reading r = {0};
  r.host_total = 1000;
  r.host_available = avail;
  ait_tune_options o;
  ait_tune_options_init(&o);
  o.mem_reading = &r;
  o.cache_dir = "";
  o.warmup = 1;
  o.min_runs = 3;
  o.max_runs = 3;
  o.cv_target = 0;
  o.strategy = s;
  const char *b[] = {"eager"};
  o.backends = b;
  o.n_backends = 1;
  int bs[] = {8};
  o.batch_sizes = bs;
  o.n_batch_sizes = 1;
  *st = ait_module_tune(m, &o);
  snprintf(tune_msg, sizeof tune_msg, "%s", ait_last_error());
  char *json = NULL;
  cJSON *rep = NULL;
  if (ait_module_report_json(m, &json) == AIT_OK) rep = cJSON_Parse(json);
  ait_free(json);
  ait_module_free(m);
  return rep;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  /* free fraction -> level -> the batch the profile ran at (8 x multiplier) */
  struct {
    unsigned long long avail;
    const char *level;
    int batch;
  } rows[] = {{900, "low", 8}, {400, "medium", 4}, {200, "high", 2}};
  for (int i = 0; i < 3; i++) {
    ait_status st;
    cJSON *r = tune_at(argv[1], rows[i].avail, AIT_STRATEGY_FIRST_WINS, &st);
    CHECK(st == AIT_OK && r);
    const cJSON *mp = cJSON_GetObjectItemCaseSensitive(r, "memory_pressure");
    const cJSON *lv = cJSON_GetObjectItemCaseSensitive(mp, "level");
    CHECK(cJSON_IsString(lv) && !strcmp(lv->valuestring, rows[i].level));
    const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r, "candidates"), 0);
    const cJSON *p = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(c, "profile"), 0);
    CHECK(p && cJSON_GetObjectItemCaseSensitive(p, "batch")->valueint == rows[i].batch);
    cJSON_Delete(r);
  }
  /* critical: no builds; first-wins falls back to the reference with a
   * warning, one-backend returns the refusal */
  ait_status st;
  cJSON *r = tune_at(argv[1], 50, AIT_STRATEGY_FIRST_WINS, &st);
  CHECK(st == AIT_OK && r);
  const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r, "candidates"), 0);
  const cJSON *status = cJSON_GetObjectItemCaseSensitive(c, "status");
  const cJSON *err = cJSON_GetObjectItemCaseSensitive(c, "error");
  CHECK(cJSON_IsString(status) && !strcmp(status->valuestring, "build_failed"));
  CHECK(cJSON_IsString(err) && strstr(err->valuestring, "memory pressure is critical"));
  CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(r, "warnings")) >= 1);
  cJSON_Delete(r);
  r = tune_at(argv[1], 50, AIT_STRATEGY_ONE_BACKEND, &st);
  CHECK(st == AIT_E_NOMEM && strstr(tune_msg, "critical"));
  cJSON_Delete(r);
  return check_result("test_pressure");
}
