/* Internal pieces of the hardware profile: one file per source of facts.
 * cpu.c reads /proc/cpuinfo and /sys; memory.c reads /proc/meminfo and the
 * cgroup, and holds the pressure table; gpu.c loads the CUDA driver and NVML
 * at run time; profile.c puts them together and writes JSON. */
#ifndef AIT_HW_IMPL_H
#define AIT_HW_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "aitune.h"

/* ---- cpu.c ---- */

/* CPU model, cores, features and caches into p. AIT_E_IO when /proc/cpuinfo
 * cannot be read. */
ait_status ait_hw_cpu_query(ait_hw_profile *p);
/* The cores this process may run on (its affinity mask), else the online ones. */
int ait_hw_usable_cores(void);
/* The ait_cpu_feature bits named in a /proc/cpuinfo "flags" value
 * (space-separated flag names). */
uint32_t ait_hw_cpu_features_from_flags(const char *flags);
/* The value of the first "key : value" line of /proc/cpuinfo into out ("" when
 * absent). */
void ait_hw_cpuinfo_field(const char *key, char *out, size_t n);

/* ---- memory.c ---- */

/* Host memory into p (mem_*, cgroup_*). AIT_E_IO when /proc/meminfo cannot be
 * read. */
ait_status ait_hw_host_memory(ait_hw_profile *p);
/* The host part of a pressure reading from a profile's host memory: the
 * cgroup's limit when it is lower than the machine's RAM. */
void ait_hw_host_reading(const ait_hw_profile *p, ait_mem_reading *r);

/* ---- gpu.c ---- */

/* The GPUs into p (n_gpus, gpus, gpu_driver, cuda_version, gpu_note). Static
 * facts are read once per process; free memory and utilisation now. Never
 * fails: no driver or no device gives n_gpus = 0 and the reason in gpu_note. */
void ait_hw_gpu_query(ait_hw_profile *p);
/* The fingerprint's GPU fields ("gpus=...;cuda=...;nvidia_driver=...") into
 * buf; returns buf. */
const char *ait_hw_gpu_fingerprint(char *buf, size_t n);

#endif
