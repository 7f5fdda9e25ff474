/* The CPU: model, sockets and cores from /proc/cpuinfo, the ISA features
 * kernels dispatch on (a table: bit, flag name), caches from sysfs. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "hw/hw_impl.h"

/* One row per feature, in bit order; the name is the /proc/cpuinfo flag. */
static const struct {
  ait_cpu_feature bit;
  const char *flag;
} feature_table[AIT_CPU_FEATURE_COUNT] = {
    {AIT_CPU_SSE4_2, "sse4_2"},
    {AIT_CPU_AVX, "avx"},
    {AIT_CPU_AVX2, "avx2"},
    {AIT_CPU_FMA, "fma"},
    {AIT_CPU_F16C, "f16c"},
    {AIT_CPU_AVX512F, "avx512f"},
    {AIT_CPU_AVX512BW, "avx512bw"},
    {AIT_CPU_AVX512VL, "avx512vl"},
    {AIT_CPU_AVX512_VNNI, "avx512_vnni"},
    {AIT_CPU_AVX_VNNI, "avx_vnni"},
    {AIT_CPU_AVX512_BF16, "avx512_bf16"},
    {AIT_CPU_AVX512_FP16, "avx512_fp16"},
    {AIT_CPU_AMX_TILE, "amx_tile"},
    {AIT_CPU_AMX_BF16, "amx_bf16"},
    {AIT_CPU_AMX_INT8, "amx_int8"},
};

const char *ait_cpu_feature_name(unsigned feature) {
  for (int i = 0; i < AIT_CPU_FEATURE_COUNT; i++)
    if ((unsigned)feature_table[i].bit == feature) return feature_table[i].flag;
  return NULL;
}

uint32_t ait_hw_cpu_features_from_flags(const char *flags) {
  uint32_t bits = 0;
  const char *p = flags;
  while (*p) {
    p += strspn(p, " \t\n");
    size_t len = strcspn(p, " \t\n");
    for (int i = 0; len && i < AIT_CPU_FEATURE_COUNT; i++)
      if (strlen(feature_table[i].flag) == len && !strncmp(p, feature_table[i].flag, len))
        bits |= (uint32_t)feature_table[i].bit;
    p += len;
  }
  return bits;
}

/* Split a /proc/cpuinfo line "key<tabs> : value\n" into key and value (both
 * trimmed, in place). False for lines without a colon. */
static bool split_line(char *line, char **key, char **value) {
  char *colon = strchr(line, ':');
  if (!colon) return false;
  char *end = colon;
  while (end > line && (end[-1] == ' ' || end[-1] == '\t'))
    end--;
  *end = '\0';
  char *v = colon + 1;
  v += strspn(v, " \t");
  v[strcspn(v, "\n")] = '\0';
  *key = line;
  *value = v;
  return true;
}

void ait_hw_cpuinfo_field(const char *key, char *out, size_t n) {
  out[0] = '\0';
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char *line = NULL, *k, *v;
  size_t cap = 0;
  while (getline(&line, &cap, f) > 0)
    if (split_line(line, &k, &v) && !strcmp(k, key)) {
      snprintf(out, n, "%s", v);
      break;
    }
  free(line);
  fclose(f);
}

/* Distinct (physical id, core id) pairs and physical ids, from /proc/cpuinfo
 * blocks. Without those fields (some VMs, non-x86), cores = processors. */
typedef struct core_count {
  int n_pairs, cap_pairs;
  long (*pairs)[2];
  int n_sockets;
  long sockets[256];
  int processors;
} core_count;

static void count_core(core_count *c, long phys, long core) {
  if (phys < 0) phys = 0;
  bool seen = false;
  for (int i = 0; i < c->n_sockets && !seen; i++)
    seen = c->sockets[i] == phys;
  if (!seen && c->n_sockets < 256) c->sockets[c->n_sockets++] = phys;
  if (core < 0) return;
  for (int i = 0; i < c->n_pairs; i++)
    if (c->pairs[i][0] == phys && c->pairs[i][1] == core) return;
  if (c->n_pairs == c->cap_pairs) {
    int cap = c->cap_pairs ? 2 * c->cap_pairs : 64;
    long(*p)[2] = realloc(c->pairs, (size_t)cap * sizeof *p);
    if (!p) return; /* undercount rather than fail */
    c->pairs = p;
    c->cap_pairs = cap;
  }
  c->pairs[c->n_pairs][0] = phys;
  c->pairs[c->n_pairs][1] = core;
  c->n_pairs++;
}

static ait_status read_cpuinfo(ait_hw_profile *p) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return ait_err(AIT_E_IO, "cannot open /proc/cpuinfo");
  core_count c = {0};
  long phys = -1, core = -1;
  bool in_block = false, have_flags = false;
  char *line = NULL, *k, *v;
  size_t cap = 0;
  ssize_t len;
  while ((len = getline(&line, &cap, f)) >= 0) {
    if (len <= 1) { /* blank line: end of one processor's block */
      if (in_block) count_core(&c, phys, core);
      in_block = false;
      phys = core = -1;
      continue;
    }
    if (!split_line(line, &k, &v)) continue;
    in_block = true;
    if (!strcmp(k, "processor"))
      c.processors++;
    else if (!strcmp(k, "physical id"))
      phys = strtol(v, NULL, 10);
    else if (!strcmp(k, "core id"))
      core = strtol(v, NULL, 10);
    else if (!strcmp(k, "model name") && !p->cpu_model[0])
      snprintf(p->cpu_model, sizeof p->cpu_model, "%s", v);
    else if (!strcmp(k, "flags") && !have_flags) {
      p->cpu_features = ait_hw_cpu_features_from_flags(v);
      have_flags = true;
    }
  }
  if (in_block) count_core(&c, phys, core);
  free(line);
  fclose(f);
  if (!p->cpu_model[0]) snprintf(p->cpu_model, sizeof p->cpu_model, "unknown");
  p->sockets = c.n_sockets ? c.n_sockets : 1;
  p->physical_cores = c.n_pairs ? c.n_pairs : c.processors;
  free(c.pairs);
  return AIT_OK;
}

/* A small sysfs file's first line into buf; false when it cannot be read. */
static bool read_line(const char *path, char *buf, size_t n) {
  FILE *f = fopen(path, "r");
  if (!f) return false;
  bool ok = fgets(buf, (int)n, f) != NULL;
  fclose(f);
  if (ok) buf[strcspn(buf, "\n")] = '\0';
  return ok;
}

/* "32K", "1024K", "32M", "512" into bytes. */
static uint64_t parse_size(const char *s) {
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  switch (*end) {
  case 'K':
  case 'k': return (uint64_t)v << 10;
  case 'M':
  case 'm': return (uint64_t)v << 20;
  case 'G':
  case 'g': return (uint64_t)v << 30;
  default: return (uint64_t)v;
  }
}

static void read_caches(ait_hw_profile *p) {
  p->n_caches = 0;
  for (int i = 0; i < 32 && p->n_caches < AIT_HW_MAX_CACHES; i++) {
    char path[128], level[32], type[32], size[32];
    const char *base = "/sys/devices/system/cpu/cpu0/cache/index";
    snprintf(path, sizeof path, "%s%d/level", base, i);
    if (!read_line(path, level, sizeof level)) break;
    snprintf(path, sizeof path, "%s%d/type", base, i);
    if (!read_line(path, type, sizeof type)) continue;
    snprintf(path, sizeof path, "%s%d/size", base, i);
    if (!read_line(path, size, sizeof size)) continue;
    ait_hw_cache *c = &p->caches[p->n_caches++];
    c->level = atoi(level);
    for (char *t = type; *t; t++)
      *t = (char)(*t >= 'A' && *t <= 'Z' ? *t - 'A' + 'a' : *t);
    snprintf(c->type, sizeof c->type, "%s", type);
    c->size_bytes = parse_size(size);
  }
}

int ait_hw_usable_cores(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  return (int)sysconf(_SC_NPROCESSORS_ONLN);
}

ait_status ait_hw_cpu_query(ait_hw_profile *p) {
  AIT_TRY(read_cpuinfo(p));
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  p->logical_cores = online > 0 ? (int)online : 1;
  if (p->physical_cores <= 0 || p->physical_cores > p->logical_cores)
    p->physical_cores = p->logical_cores;
  p->usable_cores = ait_hw_usable_cores();
  read_caches(p);
  return AIT_OK;
}
