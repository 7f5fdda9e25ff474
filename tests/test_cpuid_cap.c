/* bench/cpuid_avx2.c, preloaded by ctest: this process must see AVX2 and FMA
 * but no AVX-512F, AVX-VNNI or AMX, both through CPUID and through GCC's
 * __builtin_cpu_supports (how native_isa.c dispatches). Skipped (77) where
 * the kernel offers no CPUID faulting. */
#include <cpuid.h>
#include <stdio.h>
#include <string.h>

static int has_cpuid_fault(void) {
  char line[8192];
  FILE *f = fopen("/proc/cpuinfo", "r");
  int found = 0;
  if (!f) return 0;
  while (!found && fgets(line, sizeof line, f))
    if (strncmp(line, "flags", 5) == 0) found = strstr(line, " cpuid_fault") != NULL;
  fclose(f);
  return found;
}

int main(void) {
  unsigned a, b, c, d, a1, b1, c1, d1;
  if (!has_cpuid_fault()) {
    printf("skipped: no cpuid_fault on this CPU\n");
    return 77;
  }
  __cpuid_count(1, 0, a1, b1, c1, d1);
  __cpuid_count(7, 0, a, b, c, d);
  int avx2 = (b >> 5) & 1, fma = (c1 >> 12) & 1, avx512f = (b >> 16) & 1, amx = (d >> 24) & 1;
  __cpuid_count(7, 1, a1, b1, c1, d1);
  int avxvnni = (a1 >> 4) & 1;
  __builtin_cpu_init();
  int gcc512 = __builtin_cpu_supports("avx512f") != 0;
  printf("avx2 %d fma %d avx512f %d amx %d avx_vnni %d builtin avx512f %d\n", avx2, fma, avx512f,
         amx, avxvnni, gcc512);
  return avx2 && fma && !avx512f && !amx && !avxvnni && !gcc512 ? 0 : 1;
}
