/* The hardware profile: CPU, host memory, GPUs and memory pressure put
 * together (ait_hw_query), and written as one JSON object. */
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "hw/hw_impl.h"

ait_status ait_hw_query(ait_hw_profile *out) {
  if (!out) return ait_err(AIT_E_INVALID_ARG, "ait_hw_query: out is NULL");
  ait_hw_profile *p = calloc(1, sizeof *p);
  if (!p) return ait_err(AIT_E_NOMEM, "out of memory");
  ait_mem_thresholds_init(&p->thresholds);
  ait_status st = ait_mem_thresholds_from_env(&p->thresholds);
  if (!st) st = ait_hw_cpu_query(p);
  if (!st) st = ait_hw_host_memory(p);
  if (!st) {
    ait_hw_gpu_query(p);
    ait_hw_host_reading(p, &p->memory);
    p->memory.n_gpus = p->n_gpus;
    for (int i = 0; i < p->n_gpus; i++) {
      p->memory.gpu_total[i] = p->gpus[i].memory_free_known ? p->gpus[i].memory_total : 0;
      p->memory.gpu_free[i] = p->gpus[i].memory_free;
    }
    p->pressure = ait_mem_pressure(&p->memory, &p->thresholds);
    *out = *p;
  }
  free(p);
  return st;
}

/* ---- JSON ---- */

static cJSON *cpu_json(const ait_hw_profile *p) {
  cJSON *c = cJSON_CreateObject();
  cJSON_AddStringToObject(c, "model", p->cpu_model);
  cJSON_AddNumberToObject(c, "sockets", p->sockets);
  cJSON_AddNumberToObject(c, "physical_cores", p->physical_cores);
  cJSON_AddNumberToObject(c, "logical_cores", p->logical_cores);
  cJSON_AddNumberToObject(c, "usable_cores", p->usable_cores);
  cJSON *f = cJSON_AddObjectToObject(c, "features");
  for (int i = 0; i < AIT_CPU_FEATURE_COUNT; i++)
    cJSON_AddBoolToObject(f, ait_cpu_feature_name(1u << i), (p->cpu_features >> i) & 1);
  cJSON *caches = cJSON_AddArrayToObject(c, "caches");
  for (int i = 0; i < p->n_caches && i < AIT_HW_MAX_CACHES; i++) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "level", p->caches[i].level);
    cJSON_AddStringToObject(o, "type", p->caches[i].type);
    cJSON_AddNumberToObject(o, "size_bytes", (double)p->caches[i].size_bytes);
    cJSON_AddItemToArray(caches, o);
  }
  return c;
}

static cJSON *memory_json(const ait_hw_profile *p) {
  cJSON *m = cJSON_CreateObject();
  cJSON_AddNumberToObject(m, "total_bytes", (double)p->mem_total);
  cJSON_AddNumberToObject(m, "available_bytes", (double)p->mem_available);
  if (p->cgroup_limit) {
    cJSON_AddNumberToObject(m, "cgroup_limit_bytes", (double)p->cgroup_limit);
    cJSON_AddNumberToObject(m, "cgroup_available_bytes", (double)p->cgroup_available);
  } else {
    cJSON_AddNullToObject(m, "cgroup_limit_bytes");
    cJSON_AddNullToObject(m, "cgroup_available_bytes");
  }
  return m;
}

/* A number, or null when unknown. */
static void add_opt(cJSON *o, const char *key, bool known, double v) {
  if (known)
    cJSON_AddNumberToObject(o, key, v);
  else
    cJSON_AddNullToObject(o, key);
}

static cJSON *gpus_json(const ait_hw_profile *p) {
  cJSON *arr = cJSON_CreateArray();
  char cc[16], cuda[16];
  snprintf(cuda, sizeof cuda, "%d.%d", p->cuda_version / 1000, p->cuda_version % 1000 / 10);
  for (int i = 0; i < p->n_gpus && i < AIT_HW_MAX_GPUS; i++) {
    const ait_hw_gpu *g = &p->gpus[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "index", g->index);
    cJSON_AddStringToObject(o, "name", g->name);
    cJSON_AddStringToObject(o, "pci_bus_id", g->pci_bus_id);
    snprintf(cc, sizeof cc, "%d.%d", g->cc_major, g->cc_minor);
    cJSON_AddStringToObject(o, "compute_capability", cc);
    cJSON_AddNumberToObject(o, "multiprocessors", g->multiprocessors);
    cJSON_AddNumberToObject(o, "memory_total_bytes", (double)g->memory_total);
    add_opt(o, "memory_free_bytes", g->memory_free_known, (double)g->memory_free);
    add_opt(o, "utilization_pct", g->utilization_pct >= 0, g->utilization_pct);
    add_opt(o, "memory_utilization_pct", g->memory_utilization_pct >= 0, g->memory_utilization_pct);
    if (p->gpu_driver[0])
      cJSON_AddStringToObject(o, "driver_version", p->gpu_driver);
    else
      cJSON_AddNullToObject(o, "driver_version");
    if (p->cuda_version)
      cJSON_AddStringToObject(o, "cuda_version", cuda);
    else
      cJSON_AddNullToObject(o, "cuda_version");
    cJSON_AddItemToArray(arr, o);
  }
  return arr;
}

static cJSON *pressure_json(const ait_hw_profile *p) {
  cJSON *o = cJSON_CreateObject();
  int which;
  double f = ait_mem_free_fraction(&p->memory, &which);
  char buf[256];
  cJSON_AddStringToObject(o, "level", ait_mem_level_name(p->pressure));
  cJSON_AddNumberToObject(o, "free_fraction", f);
  if (which < 0)
    snprintf(buf, sizeof buf, "host");
  else
    snprintf(buf, sizeof buf, "gpu%d", which);
  cJSON_AddStringToObject(o, "limited_by", buf);
  cJSON_AddStringToObject(o, "detail",
                          ait_mem_describe(&p->memory, &p->thresholds, buf, sizeof buf));
  cJSON *t = cJSON_AddObjectToObject(o, "thresholds");
  cJSON_AddNumberToObject(t, "medium", p->thresholds.medium);
  cJSON_AddNumberToObject(t, "high", p->thresholds.high);
  cJSON_AddNumberToObject(t, "critical", p->thresholds.critical);
  const ait_mem_policy *pol = ait_mem_policy_for(p->pressure);
  cJSON *po = cJSON_AddObjectToObject(o, "policy");
  cJSON_AddNumberToObject(po, "batch_multiplier", pol->batch_multiplier);
  cJSON_AddBoolToObject(po, "add_quantized", pol->add_quantized);
  cJSON_AddBoolToObject(po, "free_losers", pol->free_losers);
  cJSON_AddBoolToObject(po, "refuse_builds", pol->refuse_builds);
  return o;
}

ait_status ait_hw_profile_json(const ait_hw_profile *p, char **json) {
  if (!p || !json) return ait_err(AIT_E_INVALID_ARG, "ait_hw_profile_json: NULL argument");
  *json = NULL;
  cJSON *root = cJSON_CreateObject();
  if (!root) return ait_err(AIT_E_NOMEM, "out of memory");
  cJSON_AddItemToObject(root, "cpu", cpu_json(p));
  cJSON_AddItemToObject(root, "memory", memory_json(p));
  cJSON_AddItemToObject(root, "gpus", gpus_json(p));
  cJSON_AddStringToObject(root, "gpu_note", p->gpu_note);
  cJSON_AddItemToObject(root, "pressure", pressure_json(p));
  cJSON *fp = cJSON_AddObjectToObject(root, "fingerprint");
  cJSON_AddStringToObject(fp, "text", ait_hw_fingerprint());
  cJSON_AddStringToObject(fp, "sha256", ait_hw_fingerprint_digest());
  *json = cJSON_Print(root);
  cJSON_Delete(root);
  return *json ? AIT_OK : ait_err(AIT_E_NOMEM, "out of memory writing the hardware profile");
}
