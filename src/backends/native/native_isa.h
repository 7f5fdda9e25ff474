/* Instruction-set levels of native's kernels (and quant's, which run on
 * native's executor).
 *
 * Every kernel with a vector path has one per level it supports and picks
 * it with nat_isa() at run time. The level of a run is the state's
 * (option native:isa, capped by what the CPU has); the executor sets it
 * for the calling thread for the length of the run, and the pool hands it
 * to its workers with each job, so a kernel or a task reads the same level
 * wherever it runs. Outside a run (tests calling kernels directly) the
 * level is the CPU's, capped by the environment variable AIT_MAX_ISA
 * (portable|avx2|avx512): that is how the test suite runs every test at a
 * lower level on an AVX-512 machine. */
#ifndef AIT_BACKENDS_NATIVE_ISA_H
#define AIT_BACKENDS_NATIVE_ISA_H

#include <stdbool.h>

typedef enum nat_isa_level {
  NAT_ISA_PORTABLE = 0, /* plain C (the compiler's baseline) */
  NAT_ISA_AVX2 = 1,     /* AVX2 + FMA */
  NAT_ISA_AVX512 = 2,   /* AVX-512 F/BW/VL/DQ + FMA */
} nat_isa_level;

/* The highest level this CPU runs, capped by AIT_MAX_ISA (read once). */
nat_isa_level nat_isa_cpu(void);
/* The level of the running thread: its run's, else nat_isa_cpu(). */
nat_isa_level nat_isa(void);
/* Set the calling thread's level (capped by nat_isa_cpu()); returns the
 * previous one, -1 when none was set. Pass -1 to unset. */
int nat_isa_enter(int level);
/* "auto" (or NULL) -> nat_isa_cpu(), else the named level capped by it;
 * -1 for a name that is none of auto|avx512|avx2|portable. */
int nat_isa_parse(const char *name);
const char *nat_isa_name(int level);

#endif
