/* The hardware profile against /proc read independently, memory pressure
 * through injected readings, the policy table, the fingerprint, JSON, and a
 * GPU-less profile (a child with CUDA_VISIBLE_DEVICES="" on GPU machines). */
#include <cjson/cJSON.h>
#include <dlfcn.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "hw/fingerprint.h"
#include "hw/hw_impl.h"

/* ---- /proc read here, independently of src/hw ---- */

/* Value of the first "key : value" line of /proc/cpuinfo, in a static buffer. */
static const char *cpuinfo(const char *key) {
  static char value[16384];
  char line[16384];
  value[0] = '\0';
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return value;
  while (fgets(line, sizeof line, f)) {
    char *colon = strchr(line, ':');
    if (!colon || strncmp(line, key, strlen(key)) || !strchr(" \t:", line[strlen(key)])) continue;
    colon += 1 + strspn(colon + 1, " ");
    colon[strcspn(colon, "\n")] = '\0';
    snprintf(value, sizeof value, "%s", colon);
    break;
  }
  fclose(f);
  return value;
}

static int count_lines(const char *path, const char *prefix) {
  FILE *f = fopen(path, "r");
  char line[16384];
  int n = 0;
  while (f && fgets(line, sizeof line, f))
    n += !strncmp(line, prefix, strlen(prefix));
  if (f) fclose(f);
  return n;
}

static unsigned long long meminfo_kb(const char *key) {
  FILE *f = fopen("/proc/meminfo", "r");
  char line[256];
  unsigned long long v = 0;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, key, strlen(key)) && line[strlen(key)] == ':')
      v = strtoull(line + strlen(key) + 1, NULL, 10);
  if (f) fclose(f);
  return v;
}

static bool has_flag(const char *flags, const char *name) {
  char padded[16400], pat[64];
  snprintf(padded, sizeof padded, " %s ", flags);
  snprintf(pat, sizeof pat, " %s ", name);
  return strstr(padded, pat) != NULL;
}

static bool within(double got, double want, double rel) {
  return fabs(got - want) <= rel * fabs(want);
}

/* ---- the profile ---- */

static void test_cpu(const ait_hw_profile *p) {
  CHECK(!strcmp(p->cpu_model, cpuinfo("model name")[0] ? cpuinfo("model name") : "unknown"));
  const char *flags = cpuinfo("flags");
  for (int i = 0; i < AIT_CPU_FEATURE_COUNT; i++) {
    const char *name = ait_cpu_feature_name(1u << i);
    CHECK(name != NULL);
    if (!name) continue;
    bool want = has_flag(flags, name), got = (p->cpu_features >> i) & 1;
    if (want != got) fprintf(stderr, "feature %s: profile %d, /proc/cpuinfo %d\n", name, got, want);
    CHECK(want == got);
  }
  CHECK(p->cpu_features < (1u << AIT_CPU_FEATURE_COUNT));
  CHECK(p->logical_cores == (int)sysconf(_SC_NPROCESSORS_ONLN));
  CHECK(p->logical_cores == count_lines("/proc/cpuinfo", "processor"));
  CHECK(p->physical_cores >= 1 && p->physical_cores <= p->logical_cores);
  CHECK(p->usable_cores >= 1 && p->usable_cores <= p->logical_cores);
  CHECK(p->sockets >= 1 && p->sockets <= p->physical_cores);
  if (access("/sys/devices/system/cpu/cpu0/cache/index0/size", R_OK) == 0) {
    CHECK(p->n_caches >= 1);
    bool l1d = false;
    for (int i = 0; i < p->n_caches; i++) {
      CHECK(p->caches[i].level >= 1 && p->caches[i].size_bytes >= 1024);
      l1d |= p->caches[i].level == 1 && !strcmp(p->caches[i].type, "data");
    }
    CHECK(l1d);
  }
}

static void test_features_from_flags(void) {
  uint32_t b = ait_hw_cpu_features_from_flags("fpu avx2\tavx512fx avx512f amx_tile sse4_2\n");
  CHECK(b == (AIT_CPU_AVX2 | AIT_CPU_AVX512F | AIT_CPU_AMX_TILE | AIT_CPU_SSE4_2));
  CHECK(ait_hw_cpu_features_from_flags("avx") == AIT_CPU_AVX);
  CHECK(ait_hw_cpu_features_from_flags("") == 0);
  CHECK(!strcmp(ait_cpu_feature_name(AIT_CPU_AVX512_VNNI), "avx512_vnni"));
  CHECK(ait_cpu_feature_name(0) == NULL && ait_cpu_feature_name(3) == NULL);
}

static void test_memory(const ait_hw_profile *p) {
  double total = 1024.0 * (double)meminfo_kb("MemTotal");
  double avail = 1024.0 * (double)meminfo_kb("MemAvailable");
  CHECK(within((double)p->mem_total, total, 0.05));
  CHECK(within((double)p->mem_available, avail, 0.05));
  CHECK(p->mem_available <= p->mem_total);
  if (p->cgroup_limit) CHECK(p->cgroup_limit < p->mem_total);
  CHECK(p->memory.host_total > 0 && p->memory.host_total <= p->mem_total);
  CHECK(p->memory.n_gpus == p->n_gpus);
  ait_mem_reading r;
  CHECK_ERR(ait_mem_read(&r), AIT_OK, NULL);
  CHECK(r.host_total == p->memory.host_total && r.n_gpus == p->n_gpus);
  CHECK(within((double)r.host_available, (double)p->memory.host_available, 0.05));
}

/* GPUs: none where libcuda.so.1 cannot be loaded; otherwise sane values. */
static void test_gpus(const ait_hw_profile *p) {
  CHECK(p->gpu_note[0] != '\0');
  void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!cuda) {
    CHECK(p->n_gpus == 0 && p->cuda_version == 0);
    CHECK(strstr(ait_hw_fingerprint(), ";gpus=none;cuda=none;") != NULL);
  } else
    dlclose(cuda);
  for (int i = 0; i < p->n_gpus; i++) {
    const ait_hw_gpu *g = &p->gpus[i];
    CHECK(g->name[0] && g->cc_major >= 3 && g->memory_total > 0 && g->multiprocessors > 0);
    if (g->memory_free_known) CHECK(g->memory_free <= g->memory_total);
    CHECK(g->utilization_pct >= -1 && g->utilization_pct <= 100);
  }
}

/* In a child that hides every GPU before its first query: a CPU-only
 * profile, not an error. */
static int child_without_gpus(void) {
  setenv("CUDA_VISIBLE_DEVICES", "", 1);
  ait_hw_profile p;
  CHECK_ERR(ait_hw_query(&p), AIT_OK, NULL);
  CHECK(p.n_gpus == 0 && p.gpu_note[0] && p.memory.n_gpus == 0);
  CHECK(p.logical_cores >= 1 && p.mem_total > 0);
  CHECK(strstr(ait_hw_fingerprint(), ";gpus=none;") != NULL);
  char *json = NULL;
  CHECK_ERR(ait_hw_profile_json(&p, &json), AIT_OK, NULL);
  cJSON *root = json ? cJSON_Parse(json) : NULL;
  cJSON *gpus = cJSON_GetObjectItemCaseSensitive(root, "gpus");
  CHECK(cJSON_IsArray(gpus) && cJSON_GetArraySize(gpus) == 0);
  cJSON_Delete(root);
  ait_free(json);
  return check_failures ? 1 : 0;
}

static void test_no_gpu_child(void) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) _exit(child_without_gpus());
  int status = 0;
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* ---- pressure ---- */

static ait_mem_reading host_only(uint64_t total, uint64_t avail) {
  ait_mem_reading r = {0};
  r.host_total = total;
  r.host_available = avail;
  return r;
}

static void test_levels_at_thresholds(void) {
  static const struct {
    uint64_t avail; /* of 1000 */
    ait_mem_level want;
  } rows[] = {
      {1000, AIT_MEM_LOW},   {1200, AIT_MEM_LOW},   {501, AIT_MEM_LOW},     {500, AIT_MEM_LOW},
      {499, AIT_MEM_MEDIUM}, {251, AIT_MEM_MEDIUM}, {250, AIT_MEM_MEDIUM},  {249, AIT_MEM_HIGH},
      {101, AIT_MEM_HIGH},   {100, AIT_MEM_HIGH},   {99, AIT_MEM_CRITICAL}, {0, AIT_MEM_CRITICAL},
  };
  ait_mem_thresholds t;
  ait_mem_thresholds_init(&t);
  CHECK(t.medium == 0.5 && t.high == 0.25 && t.critical == 0.10);
  CHECK_ERR(ait_mem_thresholds_check(&t), AIT_OK, NULL);
  for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
    ait_mem_reading r = host_only(1000, rows[i].avail);
    ait_mem_level got = ait_mem_pressure(&r, &t);
    if (got != rows[i].want)
      fprintf(stderr, "%llu/1000 free: %s, wanted %s\n", (unsigned long long)rows[i].avail,
              ait_mem_level_name(got), ait_mem_level_name(rows[i].want));
    CHECK(got == rows[i].want);
    CHECK(ait_mem_pressure(&r, NULL) == rows[i].want); /* NULL: the defaults */
  }
  /* the same against a 140 GiB device with the host idle */
  const uint64_t gib = 1ull << 30;
  for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
    ait_mem_reading r = host_only(64 * gib, 60 * gib);
    r.n_gpus = 1;
    r.gpu_total[0] = 1000 * (140 * gib / 1000);
    r.gpu_free[0] = rows[i].avail * (140 * gib / 1000);
    CHECK(ait_mem_pressure(&r, &t) == rows[i].want);
  }
  /* custom thresholds move the boundaries */
  ait_mem_thresholds c = {0.8, 0.6, 0.4};
  ait_mem_reading r = host_only(1000, 700);
  CHECK(ait_mem_pressure(&r, &c) == AIT_MEM_MEDIUM && ait_mem_pressure(&r, &t) == AIT_MEM_LOW);
  r.host_available = 400;
  CHECK(ait_mem_pressure(&r, &c) == AIT_MEM_HIGH);
  r.host_available = 399;
  CHECK(ait_mem_pressure(&r, &c) == AIT_MEM_CRITICAL);
}

static void test_host_and_device(void) {
  char line[256];
  ait_mem_reading r = host_only(1000, 900); /* host low */
  r.n_gpus = 2;
  r.gpu_total[0] = 100, r.gpu_free[0] = 80; /* low */
  r.gpu_total[1] = 100, r.gpu_free[1] = 5;  /* critical: wins */
  int which = -2;
  CHECK(fabs(ait_mem_free_fraction(&r, &which) - 0.05) < 1e-12 && which == 1);
  CHECK(ait_mem_pressure(&r, NULL) == AIT_MEM_CRITICAL);
  ait_mem_describe(&r, NULL, line, sizeof line);
  CHECK(strstr(line, "critical") && strstr(line, "GPU 1") && strstr(line, "10%"));
  r.host_available = 200; /* host high, GPU 1 now medium: the host wins */
  r.gpu_free[1] = 30;
  CHECK(ait_mem_pressure(&r, NULL) == AIT_MEM_HIGH);
  ait_mem_free_fraction(&r, &which);
  CHECK(which == -1);
  ait_mem_describe(&r, NULL, line, sizeof line);
  CHECK(strstr(line, "high: host memory has 20.0% free") != NULL);
  r.gpu_total[1] = 0; /* unknown GPU memory is left out */
  r.gpu_free[1] = 0;
  r.host_available = 900;
  CHECK(ait_mem_pressure(&r, NULL) == AIT_MEM_LOW);
  ait_mem_reading none = {0}; /* nothing known */
  CHECK(ait_mem_pressure(&none, NULL) == AIT_MEM_LOW);
  ait_mem_describe(&none, NULL, line, sizeof line);
  CHECK(strstr(line, "no memory reading") != NULL);
  ait_mem_reading dev_only = {0}; /* host unknown, device at 20% */
  dev_only.n_gpus = 1;
  dev_only.gpu_total[0] = 10, dev_only.gpu_free[0] = 2;
  CHECK(ait_mem_pressure(&dev_only, NULL) == AIT_MEM_HIGH);
}

static void test_policy(void) {
  double prev = 2;
  for (int l = AIT_MEM_LOW; l <= AIT_MEM_CRITICAL; l++) {
    const ait_mem_policy *p = ait_mem_policy_for((ait_mem_level)l);
    CHECK(p && p->level == (ait_mem_level)l);
    CHECK(p->batch_multiplier > 0 && p->batch_multiplier <= prev);
    CHECK(p->refuse_builds == (l == AIT_MEM_CRITICAL));
    prev = p->batch_multiplier;
  }
  const ait_mem_policy *low = ait_mem_policy_for(AIT_MEM_LOW),
                       *med = ait_mem_policy_for(AIT_MEM_MEDIUM),
                       *high = ait_mem_policy_for(AIT_MEM_HIGH),
                       *crit = ait_mem_policy_for(AIT_MEM_CRITICAL);
  CHECK(low->batch_multiplier == 1 && !low->add_quantized && !low->free_losers);
  CHECK(med->batch_multiplier == 0.5 && !med->add_quantized && med->free_losers);
  CHECK(high->batch_multiplier == 0.25 && high->add_quantized && high->free_losers);
  CHECK(crit->add_quantized && crit->free_losers && crit->refuse_builds);
  CHECK(ait_mem_policy_for((ait_mem_level)7) == crit);
  CHECK(!strcmp(ait_mem_level_name(AIT_MEM_MEDIUM), "medium"));
  CHECK(!strcmp(ait_mem_level_name((ait_mem_level)9), "unknown"));
}

static void test_thresholds_env(void) {
  ait_mem_thresholds t;
  ait_mem_thresholds_init(&t);
  setenv("AITUNE_MEM_MEDIUM", "0.6", 1);
  setenv("AITUNE_MEM_HIGH", "30%", 1);
  CHECK_ERR(ait_mem_thresholds_from_env(&t), AIT_OK, NULL);
  CHECK(t.medium == 0.6 && fabs(t.high - 0.3) < 1e-12 && t.critical == 0.10);
  ait_hw_profile p;
  CHECK_ERR(ait_hw_query(&p), AIT_OK, NULL);
  CHECK(p.thresholds.medium == 0.6 && fabs(p.thresholds.high - 0.3) < 1e-12);
  ait_mem_thresholds before = t;
  setenv("AITUNE_MEM_HIGH", "lots", 1);
  CHECK_ERR(ait_mem_thresholds_from_env(&t), AIT_E_INVALID_ARG, "AITUNE_MEM_HIGH='lots'");
  CHECK(!memcmp(&t, &before, sizeof t)); /* unchanged */
  CHECK_ERR(ait_hw_query(&p), AIT_E_INVALID_ARG, "AITUNE_MEM_HIGH");
  setenv("AITUNE_MEM_HIGH", "1.5", 1);
  CHECK_ERR(ait_mem_thresholds_from_env(&t), AIT_E_INVALID_ARG, "AITUNE_MEM_HIGH");
  setenv("AITUNE_MEM_HIGH", "0.05", 1); /* below critical 0.10: not ordered */
  CHECK_ERR(ait_mem_thresholds_from_env(&t), AIT_E_INVALID_ARG, "medium >= high >= critical");
  unsetenv("AITUNE_MEM_MEDIUM");
  unsetenv("AITUNE_MEM_HIGH");
  ait_mem_thresholds bad = {0.2, 0.3, 0.1};
  CHECK_ERR(ait_mem_thresholds_check(&bad), AIT_E_INVALID_ARG, NULL);
}

/* ---- fingerprint and JSON ---- */

static void test_fingerprint(void) {
  const char *fp = ait_hw_fingerprint();
  static const char *const keys[] = {
      "cpu=",    "features=",   "cores=",    "gpus=",   "cuda=",     "nvidia_driver=",
      "aitune=", "protobuf-c=", "openblas=", "onednn=", "openvino=", NULL};
  for (int i = 0; keys[i]; i++) {
    const char *at = strstr(fp, keys[i]);
    CHECK(at && (at == fp || at[-1] == ';'));
  }
  char buf[2048], hex[65];
  CHECK(!strcmp(ait_fingerprint_text(buf, sizeof buf), fp));
  CHECK(ait_hw_fingerprint() == fp); /* computed once */
  ait_sha256_hex(fp, strlen(fp), hex);
  CHECK(!strcmp(hex, ait_hw_fingerprint_digest()) && strlen(hex) == 64);
  CHECK(!strcmp(ait_fingerprint_digest(hex), ait_hw_fingerprint_digest()));
  char want_cores[32];
  snprintf(want_cores, sizeof want_cores, ";cores=%ld;", sysconf(_SC_NPROCESSORS_ONLN));
  CHECK(strstr(fp, want_cores) != NULL);

  char d[512];
  CHECK(!strcmp(ait_fingerprint_diff(fp, fp, d, sizeof d), "no difference"));
  CHECK(!strcmp(ait_fingerprint_diff("a=1;b=2;c=3", "a=1;b=5;c=3", d, sizeof d), "b=2 -> b=5"));
  CHECK(!strcmp(ait_fingerprint_diff("a=1;c=3", "c=3;a=1", d, sizeof d), "no difference"));
  CHECK(!strcmp(ait_fingerprint_diff("a=1;c=3", "a=1;gpus=1x H sm_90;c=3", d, sizeof d),
                "(absent) -> gpus=1x H sm_90"));
  CHECK(
      !strcmp(ait_fingerprint_diff("a=1;b=2", "a=2", d, sizeof d), "a=1 -> a=2; b=2 -> (absent)"));
}

static const cJSON *jget(const cJSON *o, const char *path) {
  char key[64];
  while (o && *path) {
    size_t l = strcspn(path, ".");
    snprintf(key, sizeof key, "%.*s", (int)l, path);
    o = cJSON_GetObjectItemCaseSensitive(o, key);
    path += l + (path[l] == '.');
  }
  return o;
}

static void test_json(const ait_hw_profile *p) {
  char *json = NULL;
  CHECK_ERR(ait_hw_profile_json(p, &json), AIT_OK, NULL);
  cJSON *root = json ? cJSON_Parse(json) : NULL;
  CHECK(root != NULL);
  CHECK(cJSON_IsTrue(jget(root, "cpu.features.sse4_2")) == !!(p->cpu_features & AIT_CPU_SSE4_2));
  CHECK(cJSON_IsBool(jget(root, "cpu.features.amx_int8")));
  CHECK(cJSON_GetNumberValue(jget(root, "cpu.logical_cores")) == p->logical_cores);
  CHECK(cJSON_GetArraySize(jget(root, "cpu.caches")) == p->n_caches);
  CHECK(cJSON_GetNumberValue(jget(root, "memory.total_bytes")) == (double)p->mem_total);
  CHECK(cJSON_GetArraySize(jget(root, "gpus")) == p->n_gpus);
  const char *level = cJSON_GetStringValue(jget(root, "pressure.level"));
  CHECK(level && !strcmp(level, ait_mem_level_name(p->pressure)));
  CHECK(cJSON_GetNumberValue(jget(root, "pressure.thresholds.critical")) == p->thresholds.critical);
  CHECK(cJSON_IsBool(jget(root, "pressure.policy.refuse_builds")));
  const char *fp = cJSON_GetStringValue(jget(root, "fingerprint.text"));
  CHECK(fp && !strcmp(fp, ait_hw_fingerprint()));
  cJSON_Delete(root);
  ait_free(json);

  /* GPUs written from a profile filled by hand */
  ait_hw_profile f = *p;
  f.n_gpus = 2;
  f.cuda_version = 12040;
  snprintf(f.gpu_driver, sizeof f.gpu_driver, "550.54.15");
  memset(f.gpus, 0, sizeof f.gpus);
  for (int i = 0; i < 2; i++) {
    f.gpus[i].index = i;
    snprintf(f.gpus[i].name, sizeof f.gpus[i].name, "NVIDIA H200");
    f.gpus[i].cc_major = 9;
    f.gpus[i].memory_total = 150ull << 30;
    f.gpus[i].utilization_pct = f.gpus[i].memory_utilization_pct = -1;
  }
  f.gpus[0].memory_free = 100ull << 30;
  f.gpus[0].memory_free_known = 1;
  f.gpus[0].utilization_pct = 37;
  CHECK_ERR(ait_hw_profile_json(&f, &json), AIT_OK, NULL);
  root = json ? cJSON_Parse(json) : NULL;
  const cJSON *g = cJSON_GetArrayItem(jget(root, "gpus"), 0),
              *g1 = cJSON_GetArrayItem(jget(root, "gpus"), 1);
  CHECK(cJSON_GetArraySize(jget(root, "gpus")) == 2);
  CHECK(!strcmp(cJSON_GetStringValue(jget(g, "name")), "NVIDIA H200"));
  CHECK(!strcmp(cJSON_GetStringValue(jget(g, "compute_capability")), "9.0"));
  CHECK(!strcmp(cJSON_GetStringValue(jget(g, "cuda_version")), "12.4"));
  CHECK(!strcmp(cJSON_GetStringValue(jget(g, "driver_version")), "550.54.15"));
  CHECK(cJSON_GetNumberValue(jget(g, "memory_free_bytes")) == (double)(100ull << 30));
  CHECK(cJSON_GetNumberValue(jget(g, "utilization_pct")) == 37);
  CHECK(cJSON_IsNull(jget(g1, "memory_free_bytes")) && cJSON_IsNull(jget(g1, "utilization_pct")));
  cJSON_Delete(root);
  ait_free(json);
  CHECK_ERR(ait_hw_profile_json(NULL, &json), AIT_E_INVALID_ARG, NULL);
  CHECK_ERR(ait_hw_query(NULL), AIT_E_INVALID_ARG, NULL);
}

int main(void) {
  test_no_gpu_child(); /* first: the child must not inherit an initialised CUDA driver */
  test_features_from_flags();
  test_levels_at_thresholds();
  test_host_and_device();
  test_policy();
  test_thresholds_env();
  ait_hw_profile p;
  CHECK_ERR(ait_hw_query(&p), AIT_OK, NULL);
  test_cpu(&p);
  test_memory(&p);
  test_gpus(&p);
  test_fingerprint();
  test_json(&p);
  return check_result("test_hw");
}
