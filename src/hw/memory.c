/* Host memory (/proc/meminfo, lowered to a cgroup's limit) and memory
 * pressure: levels from the lowest free fraction of host and device memory,
 * thresholds (defaults, AITUNE_MEM_* overrides) and the policy table that
 * says what the tuner does at each level. See docs/hardware.md. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "hw/hw_impl.h"

/* ---- the tables ---- */

/* What the tuner does at each level, indexed by level. */
static const ait_mem_policy policy_table[] = {
    /* level             batch x  quantized  free losers  refuse builds */
    {AIT_MEM_LOW, 1.0, 0, 0, 0},
    {AIT_MEM_MEDIUM, 0.5, 0, 1, 0},
    {AIT_MEM_HIGH, 0.25, 1, 1, 0},
    {AIT_MEM_CRITICAL, 0.125, 1, 1, 1},
};

/* Level names, and for the three thresholds their default and variable. */
static const struct {
  const char *name;
  double def;      /* default threshold under which this level starts */
  const char *env; /* variable that overrides it */
} level_table[] = {
    {"low", 1.0, NULL},
    {"medium", 0.50, "AITUNE_MEM_MEDIUM"},
    {"high", 0.25, "AITUNE_MEM_HIGH"},
    {"critical", 0.10, "AITUNE_MEM_CRITICAL"},
};

const char *ait_mem_level_name(ait_mem_level level) {
  return (unsigned)level <= AIT_MEM_CRITICAL ? level_table[level].name : "unknown";
}

const ait_mem_policy *ait_mem_policy_for(ait_mem_level level) {
  return &policy_table[(unsigned)level <= AIT_MEM_CRITICAL ? level : AIT_MEM_CRITICAL];
}

/* The thresholds as an array indexed by level (medium, high, critical). */
static double *threshold_at(ait_mem_thresholds *t, int level) {
  return level == AIT_MEM_MEDIUM ? &t->medium : level == AIT_MEM_HIGH ? &t->high : &t->critical;
}

void ait_mem_thresholds_init(ait_mem_thresholds *t) {
  for (int l = AIT_MEM_MEDIUM; l <= AIT_MEM_CRITICAL; l++)
    *threshold_at(t, l) = level_table[l].def;
}

ait_status ait_mem_thresholds_check(const ait_mem_thresholds *t) {
  const double m = t->medium, h = t->high, c = t->critical;
  if (!(m <= 1 && m >= h && h >= c && c >= 0))
    return ait_err(AIT_E_INVALID_ARG,
                   "memory thresholds must satisfy 1 >= medium >= high >= critical >= 0; got "
                   "medium %g, high %g, critical %g",
                   m, h, c);
  return AIT_OK;
}

/* "0.3" or "30%" into a fraction; false when not a number in [0, 1]. */
static bool parse_fraction(const char *s, double *out) {
  char *end;
  double v = strtod(s, &end);
  if (end == s) return false;
  if (*end == '%') {
    v /= 100;
    end++;
  }
  end += strspn(end, " \t");
  if (*end || !isfinite(v) || v < 0 || v > 1) return false;
  *out = v;
  return true;
}

ait_status ait_mem_thresholds_from_env(ait_mem_thresholds *t) {
  ait_mem_thresholds n = *t;
  for (int l = AIT_MEM_MEDIUM; l <= AIT_MEM_CRITICAL; l++) {
    const char *v = getenv(level_table[l].env);
    if (v && !parse_fraction(v, threshold_at(&n, l)))
      return ait_err(AIT_E_INVALID_ARG,
                     "%s='%s' is not a free-memory fraction in [0, 1] (like 0.25 or 25%%)",
                     level_table[l].env, v);
  }
  if (ait_mem_thresholds_check(&n))
    return ait_err_prefix(AIT_E_INVALID_ARG, "AITUNE_MEM_MEDIUM/HIGH/CRITICAL");
  *t = n;
  return AIT_OK;
}

/* ---- pressure from a reading ---- */

static double fraction(uint64_t total, uint64_t avail) {
  return avail >= total ? 1.0 : (double)avail / (double)total;
}

double ait_mem_free_fraction(const ait_mem_reading *r, int *which) {
  double lowest = 1.0;
  int at = -1;
  if (r->host_total) lowest = fraction(r->host_total, r->host_available);
  for (int i = 0; i < r->n_gpus && i < AIT_HW_MAX_GPUS; i++) {
    double f = r->gpu_total[i] ? fraction(r->gpu_total[i], r->gpu_free[i]) : 1.0;
    if (f < lowest) {
      lowest = f;
      at = i;
    }
  }
  if (which) *which = at;
  return lowest;
}

ait_mem_level ait_mem_pressure(const ait_mem_reading *r, const ait_mem_thresholds *t) {
  ait_mem_thresholds def;
  if (!t) {
    ait_mem_thresholds_init(&def);
    t = &def;
  }
  double f = ait_mem_free_fraction(r, NULL);
  if (f < t->critical) return AIT_MEM_CRITICAL;
  if (f < t->high) return AIT_MEM_HIGH;
  if (f < t->medium) return AIT_MEM_MEDIUM;
  return AIT_MEM_LOW;
}

const char *ait_mem_describe(const ait_mem_reading *r, const ait_mem_thresholds *t, char *buf,
                             size_t n) {
  ait_mem_thresholds def;
  if (!t) {
    ait_mem_thresholds_init(&def);
    t = &def;
  }
  int which;
  double f = ait_mem_free_fraction(r, &which);
  ait_mem_level level = ait_mem_pressure(r, t);
  uint64_t total = which < 0 ? r->host_total : r->gpu_total[which];
  uint64_t avail = which < 0 ? r->host_available : r->gpu_free[which];
  if (!total) {
    snprintf(buf, n, "%s: no memory reading", ait_mem_level_name(level));
    return buf;
  }
  char who[32], bound[64];
  if (which < 0)
    snprintf(who, sizeof who, "host memory");
  else
    snprintf(who, sizeof who, "GPU %d", which);
  if (level == AIT_MEM_LOW)
    snprintf(bound, sizeof bound, "at or above the medium threshold %g%%", 100 * t->medium);
  else
    snprintf(bound, sizeof bound, "below the %s threshold %g%%", ait_mem_level_name(level),
             100 * (level == AIT_MEM_MEDIUM ? t->medium
                    : level == AIT_MEM_HIGH ? t->high
                                            : t->critical));
  const double gib = 1024.0 * 1024.0 * 1024.0;
  snprintf(buf, n, "%s: %s has %.1f%% free (%.1f of %.1f GiB), %s", ait_mem_level_name(level), who,
           100 * f, (double)avail / gib, (double)total / gib, bound);
  return buf;
}

/* ---- host memory ---- */

/* "MemTotal:  24684096 kB" style fields of /proc/meminfo, in bytes. */
static ait_status read_meminfo(uint64_t *total, uint64_t *avail) {
  FILE *f = fopen("/proc/meminfo", "r");
  if (!f) return ait_err(AIT_E_IO, "cannot open /proc/meminfo");
  char line[256];
  unsigned long long kb;
  bool got_total = false, got_avail = false;
  while (fgets(line, sizeof line, f)) {
    if (sscanf(line, "MemTotal: %llu kB", &kb) == 1) {
      *total = (uint64_t)kb * 1024;
      got_total = true;
    } else if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
      *avail = (uint64_t)kb * 1024;
      got_avail = true;
    }
  }
  fclose(f);
  if (!got_total) return ait_err(AIT_E_IO, "/proc/meminfo has no MemTotal");
  if (!got_avail) *avail = 0; /* kernels before 3.14; callers see 0 available */
  return AIT_OK;
}

/* A number from a cgroup file; "max" (v2, no limit) and unreadable give 0. */
static uint64_t cgroup_number(const char *dir, const char *file) {
  char path[512], buf[64];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  bool ok = fgets(buf, sizeof buf, f) != NULL;
  fclose(f);
  return ok ? strtoull(buf, NULL, 10) : 0;
}

/* The "key N" value of a cgroup's memory.stat. */
static uint64_t cgroup_stat(const char *dir, const char *key) {
  char path[512], line[256];
  snprintf(path, sizeof path, "%s/memory.stat", dir);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t kl = strlen(key);
  uint64_t v = 0;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, key, kl) && line[kl] == ' ') {
      v = strtoull(line + kl + 1, NULL, 10);
      break;
    }
  fclose(f);
  return v;
}

/* This process's cgroup path for the memory controller, from
 * /proc/self/cgroup: v2's "0::/path" or v1's "N:...memory...:/path". */
static bool cgroup_path(bool v2, char *out, size_t n) {
  FILE *f = fopen("/proc/self/cgroup", "r");
  if (!f) return false;
  char line[1024];
  bool found = false;
  while (!found && fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2) continue;
    *c2 = '\0';
    const char *ctl = c1 + 1;
    found = v2 ? !strcmp(line, "0") && !*ctl : strstr(ctl, "memory") != NULL;
    if (found) snprintf(out, n, "%s", c2 + 1);
  }
  fclose(f);
  return found;
}

/* The lowest memory limit on the way from this process's cgroup up to the
 * mount's root, and what is left under it (usage less inactive page cache,
 * as container runtimes count it). False when there is no limit. */
static bool cgroup_limit(bool v2, uint64_t *limit, uint64_t *avail) {
  const char *mount = v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory";
  const char *limit_file = v2 ? "memory.max" : "memory.limit_in_bytes";
  const char *usage_file = v2 ? "memory.current" : "memory.usage_in_bytes";
  const char *inactive = v2 ? "inactive_file" : "total_inactive_file";
  char rel[512] = "", dir[1024];
  cgroup_path(v2, rel, sizeof rel);
  uint64_t best = 0;
  char best_dir[1024] = "";
  for (;;) { /* rel, its parents, then the mount itself */
    snprintf(dir, sizeof dir, "%s%s", mount, rel);
    uint64_t l = cgroup_number(dir, limit_file);
    if (l && (!best || l < best)) {
      best = l;
      snprintf(best_dir, sizeof best_dir, "%s", dir);
    }
    char *slash = strrchr(rel, '/');
    if (!slash) break;
    *slash = '\0';
  }
  if (!best) return false;
  uint64_t used = cgroup_number(best_dir, usage_file), cache = cgroup_stat(best_dir, inactive);
  used = cache < used ? used - cache : 0;
  *limit = best;
  *avail = used < best ? best - used : 0;
  return true;
}

ait_status ait_hw_host_memory(ait_hw_profile *p) {
  AIT_TRY(read_meminfo(&p->mem_total, &p->mem_available));
  uint64_t limit = 0, avail = 0;
  p->cgroup_limit = p->cgroup_available = 0;
  if ((cgroup_limit(true, &limit, &avail) || cgroup_limit(false, &limit, &avail)) &&
      limit < p->mem_total) {
    p->cgroup_limit = limit;
    p->cgroup_available = avail;
  }
  return AIT_OK;
}

void ait_hw_host_reading(const ait_hw_profile *p, ait_mem_reading *r) {
  r->host_total = p->mem_total;
  r->host_available = p->mem_available;
  if (p->cgroup_limit) {
    r->host_total = p->cgroup_limit;
    if (p->cgroup_available < r->host_available) r->host_available = p->cgroup_available;
  }
}

ait_status ait_mem_read(ait_mem_reading *out) {
  ait_hw_profile *p = calloc(1, sizeof *p);
  if (!p) return ait_err(AIT_E_NOMEM, "out of memory");
  ait_status st = ait_hw_host_memory(p);
  if (!st) {
    memset(out, 0, sizeof *out);
    ait_hw_host_reading(p, out);
    ait_hw_gpu_query(p);
    out->n_gpus = p->n_gpus;
    for (int i = 0; i < p->n_gpus; i++) {
      /* a GPU whose free memory is unknown is left out (total 0) */
      out->gpu_total[i] = p->gpus[i].memory_free_known ? p->gpus[i].memory_total : 0;
      out->gpu_free[i] = p->gpus[i].memory_free;
    }
  }
  free(p);
  return st;
}
