/* The ISA level of native's kernels (native_isa.h). */
#include "backends/native/native_isa.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[] = {"portable", "avx2", "avx512"};

static int level_of(const char *name) {
  for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
    if (!strcmp(name, names[i])) return i;
  return -1;
}

static int detect(void) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("fma"))
    return NAT_ISA_AVX512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return NAT_ISA_AVX2;
#endif
  return NAT_ISA_PORTABLE;
}

nat_isa_level nat_isa_cpu(void) {
  static atomic_int cached = -1;
  int v = atomic_load_explicit(&cached, memory_order_relaxed);
  if (v >= 0) return (nat_isa_level)v;
  v = detect();
  /* read-only use of the environment: a cap for tests and benchmarks */
  const char *cap = getenv("AIT_MAX_ISA");
  int c = cap ? level_of(cap) : -1;
  if (c >= 0 && c < v) v = c;
  atomic_store_explicit(&cached, v, memory_order_relaxed);
  return (nat_isa_level)v;
}

static _Thread_local int cur = -1;

nat_isa_level nat_isa(void) { return cur >= 0 ? (nat_isa_level)cur : nat_isa_cpu(); }

int nat_isa_enter(int level) {
  int prev = cur;
  int top = nat_isa_cpu();
  cur = level < 0 ? -1 : level > top ? top : level;
  return prev;
}

int nat_isa_parse(const char *name) {
  if (!name || !strcmp(name, "auto")) return nat_isa_cpu();
  int l = level_of(name);
  if (l < 0) return -1;
  int top = nat_isa_cpu();
  return l > top ? top : l;
}

const char *nat_isa_name(int level) {
  return level >= 0 && level < (int)(sizeof names / sizeof names[0]) ? names[level] : "?";
}
