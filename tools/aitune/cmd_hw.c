/* aitune hw: this machine's hardware profile, memory pressure and
 * fingerprint, as a table or one JSON object (docs/hardware.md). */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
    "usage: aitune hw [--json]\n"
    "  CPU (model, cores, ISA features, caches), RAM, NVIDIA GPUs (read through\n"
    "  libcuda.so.1 and libnvidia-ml.so.1 when present), memory pressure and the\n"
    "  policy it implies, and the fingerprint tuned artifacts are checked against.\n"
    "  --json   print one JSON object instead of a table\n"
    "Pressure thresholds: AITUNE_MEM_MEDIUM, AITUNE_MEM_HIGH, AITUNE_MEM_CRITICAL\n"
    "(free fractions, defaults 0.50, 0.25, 0.10).\n";

/* Bytes as "23.5 GiB", "32 KiB". */
static const char *human(uint64_t b, char *buf, size_t n) {
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)b;
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    u++;
  }
  snprintf(buf, n, v == (double)(uint64_t)v ? "%.0f %s" : "%.1f %s", v, unit[u]);
  return buf;
}

static void print_cpu(const ait_hw_profile *p) {
  printf("CPU          %s\n", p->cpu_model);
  printf("             %d socket%s, %d physical cores, %d logical (%d usable by this process)\n",
         p->sockets, p->sockets == 1 ? "" : "s", p->physical_cores, p->logical_cores,
         p->usable_cores);
  for (int have = 1; have >= 0; have--) {
    printf("             %s", have ? "features:" : "absent:  ");
    int shown = 0;
    for (int i = 0; i < AIT_CPU_FEATURE_COUNT; i++)
      if ((int)(p->cpu_features >> i & 1) == have) {
        printf(" %s", ait_cpu_feature_name(1u << i));
        shown++;
      }
    printf("%s\n", shown ? "" : " none");
  }
  printf("             caches:");
  for (int i = 0; i < p->n_caches; i++) {
    const ait_hw_cache *c = &p->caches[i];
    char sz[32];
    const char *t = !strcmp(c->type, "data") ? "d" : !strcmp(c->type, "instruction") ? "i" : "";
    printf("%s L%d%s %s", i ? "," : "", c->level, t, human(c->size_bytes, sz, sizeof sz));
  }
  printf("%s\n", p->n_caches ? "" : " unknown");
}

static void print_memory_and_gpus(const ait_hw_profile *p) {
  char a[32], b[32];
  printf("Memory       %s total, %s available", human(p->mem_total, a, sizeof a),
         human(p->mem_available, b, sizeof b));
  if (p->cgroup_limit)
    printf("; cgroup limit %s, %s left under it", human(p->cgroup_limit, a, sizeof a),
           human(p->cgroup_available, b, sizeof b));
  printf("\n");
  if (!p->n_gpus) printf("GPUs         none: %s\n", p->gpu_note);
  for (int i = 0; i < p->n_gpus; i++) {
    const ait_hw_gpu *g = &p->gpus[i];
    printf("GPU %-8d %s, compute capability %d.%d, %d SMs, %s", g->index, g->name, g->cc_major,
           g->cc_minor, g->multiprocessors, human(g->memory_total, a, sizeof a));
    if (g->memory_free_known) printf(" (%s free)", human(g->memory_free, b, sizeof b));
    if (g->utilization_pct >= 0) printf(", %d%% busy", g->utilization_pct);
    printf(", %s\n", g->pci_bus_id);
  }
  if (p->n_gpus)
    printf("             driver %s, CUDA %d.%d; %s\n", p->gpu_driver[0] ? p->gpu_driver : "unknown",
           p->cuda_version / 1000, p->cuda_version % 1000 / 10, p->gpu_note);
}

static void print_pressure(const ait_hw_profile *p) {
  char line[256];
  const ait_mem_thresholds *t = &p->thresholds;
  const ait_mem_policy *pol = ait_mem_policy_for(p->pressure);
  printf("Pressure     %s\n", ait_mem_describe(&p->memory, t, line, sizeof line));
  printf("             levels by free memory: low >= %g%% > medium >= %g%% > high >= %g%% > "
         "critical\n",
         100 * t->medium, 100 * t->high, 100 * t->critical);
  printf("             policy: batch sizes x%g, quantized candidates %s, free losers %s, "
         "new builds %s\n",
         pol->batch_multiplier, pol->add_quantized ? "added" : "not added",
         pol->free_losers ? "at once" : "at the end", pol->refuse_builds ? "refused" : "allowed");
}

int cmd_hw(int argc, char **argv) {
  bool json = false;
  for (int i = 1; i < argc; i++) {
    if (cli_is_help(argv[i])) {
      fputs(usage, stdout);
      return 0;
    }
    if (!strcmp(argv[i], "--json"))
      json = true;
    else
      return cli_bad_arg(usage, argv[i]);
  }
  ait_hw_profile p;
  ait_status st = ait_hw_query(&p);
  if (st) return cli_fail(st, "cannot read the hardware profile");
  if (json) {
    char *text = NULL;
    if ((st = ait_hw_profile_json(&p, &text))) return cli_fail(st, "hw");
    printf("%s\n", text);
    ait_free(text);
    return 0;
  }
  print_cpu(&p);
  print_memory_and_gpus(&p);
  print_pressure(&p);
  printf("Fingerprint  %.16s  %s\n", ait_hw_fingerprint_digest(), ait_hw_fingerprint());
  return 0;
}
