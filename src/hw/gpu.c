/* NVIDIA GPUs through the CUDA driver library and NVML, both loaded at run
 * time (dlopen), so one binary runs with and without a GPU. The CUDA driver
 * enumerates the devices (it honours CUDA_VISIBLE_DEVICES) and gives their
 * static facts; NVML, matched by PCI bus id, gives free memory, utilisation
 * and the driver version. Without NVML, free memory comes from cuMemGetInfo
 * in the device's primary context. The libraries stay loaded for the
 * process's lifetime (the CUDA driver cannot be unloaded once initialised). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "hw/hw_impl.h"

/* The few types and constants of cuda.h and nvml.h used here. */
typedef int drv_result; /* CUresult; 0 = CUDA_SUCCESS */
typedef int drv_device; /* CUdevice */
typedef void *drv_context;
typedef int nvml_return; /* nvmlReturn_t; 0 = NVML_SUCCESS */
typedef void *nvml_device;
typedef struct nvml_memory {
  unsigned long long total, free, used;
} nvml_memory;
typedef struct nvml_utilization {
  unsigned int gpu, memory;
} nvml_utilization;
enum {
  CU_ATTR_MULTIPROCESSOR_COUNT = 16,
  CU_ATTR_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_ATTR_COMPUTE_CAPABILITY_MINOR = 76
};

typedef struct gpu_api {
  /* CUDA driver */
  drv_result (*cuInit)(unsigned int);
  drv_result (*cuDriverGetVersion)(int *);
  drv_result (*cuDeviceGetCount)(int *);
  drv_result (*cuDeviceGet)(drv_device *, int);
  drv_result (*cuDeviceGetName)(char *, int, drv_device);
  drv_result (*cuDeviceGetAttribute)(int *, int, drv_device);
  drv_result (*cuDeviceTotalMem_v2)(size_t *, drv_device);
  drv_result (*cuDeviceGetPCIBusId)(char *, int, drv_device);
  drv_result (*cuGetErrorName)(drv_result, const char **);
  drv_result (*cuDevicePrimaryCtxRetain)(drv_context *, drv_device);
  drv_result (*cuDevicePrimaryCtxRelease_v2)(drv_device);
  drv_result (*cuCtxPushCurrent_v2)(drv_context);
  drv_result (*cuCtxPopCurrent_v2)(drv_context *);
  drv_result (*cuMemGetInfo_v2)(size_t *, size_t *);
  /* NVML */
  nvml_return (*nvmlInit_v2)(void);
  const char *(*nvmlErrorString)(nvml_return);
  nvml_return (*nvmlSystemGetDriverVersion)(char *, unsigned int);
  nvml_return (*nvmlDeviceGetHandleByPciBusId_v2)(const char *, nvml_device *);
  nvml_return (*nvmlDeviceGetMemoryInfo)(nvml_device, nvml_memory *);
  nvml_return (*nvmlDeviceGetUtilizationRates)(nvml_device, nvml_utilization *);
} gpu_api;

/* Everything read once: the API, the devices' static facts, and a note. */
typedef struct gpu_state {
  gpu_api api;
  bool ctx_ok;  /* primary-context functions resolved (fallback for free memory) */
  bool nvml_ok; /* NVML loaded and initialised */
  int n;
  ait_hw_gpu dev[AIT_HW_MAX_GPUS];
  drv_device cu[AIT_HW_MAX_GPUS];
  nvml_device nv[AIT_HW_MAX_GPUS]; /* NULL when NVML does not know it */
  int cuda_version;
  char driver[32];
  char note[256];
} gpu_state;

static gpu_state G;
static pthread_once_t G_once = PTHREAD_ONCE_INIT;

typedef struct sym_row {
  const char *name;
  void *slot; /* address of a function pointer in G.api */
  bool required;
} sym_row;

#define SYM(f, req)                                                                                \
  { #f, &G.api.f, req }
static const sym_row cuda_syms[] = {
    SYM(cuInit, true),
    SYM(cuDriverGetVersion, true),
    SYM(cuDeviceGetCount, true),
    SYM(cuDeviceGet, true),
    SYM(cuDeviceGetName, true),
    SYM(cuDeviceGetAttribute, true),
    SYM(cuDeviceTotalMem_v2, true),
    SYM(cuDeviceGetPCIBusId, false),
    SYM(cuGetErrorName, false),
    SYM(cuDevicePrimaryCtxRetain, false),
    SYM(cuDevicePrimaryCtxRelease_v2, false),
    SYM(cuCtxPushCurrent_v2, false),
    SYM(cuCtxPopCurrent_v2, false),
    SYM(cuMemGetInfo_v2, false),
};
static const sym_row nvml_syms[] = {
    SYM(nvmlInit_v2, true),
    SYM(nvmlErrorString, true),
    SYM(nvmlSystemGetDriverVersion, false),
    SYM(nvmlDeviceGetHandleByPciBusId_v2, false),
    SYM(nvmlDeviceGetMemoryInfo, false),
    SYM(nvmlDeviceGetUtilizationRates, false),
};
#undef SYM

/* dlopen the first of two names; on failure, dlerror's text into why. */
static void *open_lib(const char *a, const char *b, char *why, size_t n) {
  void *h = dlopen(a, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    snprintf(why, n, "%s", e ? e : a);
    h = dlopen(b, RTLD_NOW | RTLD_LOCAL);
  }
  return h;
}

/* Resolve a table; false (naming the missing symbol in why) when a required
 * one is absent. Optional ones stay NULL. */
static bool resolve(void *lib, const sym_row *rows, size_t n_rows, char *why, size_t n) {
  for (size_t i = 0; i < n_rows; i++) {
    void *p = dlsym(lib, rows[i].name);
    memcpy(rows[i].slot, &p, sizeof p);
    if (!p && rows[i].required) {
      snprintf(why, n, "no symbol %s", rows[i].name);
      return false;
    }
  }
  return true;
}

/* Name of a CUDA error ("CUDA_ERROR_NO_DEVICE"); called only from gpu_init. */
static const char *drv_error(drv_result r) {
  const char *s = NULL;
  if (G.api.cuGetErrorName && G.api.cuGetErrorName(r, &s) == 0 && s) return s;
  static char code[32];
  snprintf(code, sizeof code, "CUDA error %d", r);
  return code;
}

static void init_nvml(void) {
  char why[256] = "";
  void *lib = open_lib("libnvidia-ml.so.1", "libnvidia-ml.so", why, sizeof why);
  if (!lib) return;
  if (!resolve(lib, nvml_syms, sizeof nvml_syms / sizeof *nvml_syms, why, sizeof why) ||
      G.api.nvmlInit_v2() != 0) {
    dlclose(lib);
    memset(&G.api.nvmlInit_v2, 0, sizeof G.api - offsetof(gpu_api, nvmlInit_v2));
    return;
  }
  G.nvml_ok = true;
  char v[96] = "";
  if (G.api.nvmlSystemGetDriverVersion && G.api.nvmlSystemGetDriverVersion(v, sizeof v) == 0)
    snprintf(G.driver, sizeof G.driver, "%s", v);
}

/* Static facts of CUDA device i. */
static void init_device(int i) {
  ait_hw_gpu *d = &G.dev[G.n];
  drv_device dev;
  if (G.api.cuDeviceGet(&dev, i) != 0) return;
  memset(d, 0, sizeof *d);
  d->index = i;
  if (G.api.cuDeviceGetName(d->name, (int)sizeof d->name, dev) != 0)
    snprintf(d->name, sizeof d->name, "unknown");
  G.api.cuDeviceGetAttribute(&d->cc_major, CU_ATTR_COMPUTE_CAPABILITY_MAJOR, dev);
  G.api.cuDeviceGetAttribute(&d->cc_minor, CU_ATTR_COMPUTE_CAPABILITY_MINOR, dev);
  G.api.cuDeviceGetAttribute(&d->multiprocessors, CU_ATTR_MULTIPROCESSOR_COUNT, dev);
  size_t total = 0;
  if (G.api.cuDeviceTotalMem_v2(&total, dev) == 0) d->memory_total = total;
  if (G.api.cuDeviceGetPCIBusId)
    G.api.cuDeviceGetPCIBusId(d->pci_bus_id, (int)sizeof d->pci_bus_id, dev);
  d->utilization_pct = d->memory_utilization_pct = -1;
  G.cu[G.n] = dev;
  G.nv[G.n] = NULL;
  if (G.nvml_ok && G.api.nvmlDeviceGetHandleByPciBusId_v2 && d->pci_bus_id[0] &&
      G.api.nvmlDeviceGetHandleByPciBusId_v2(d->pci_bus_id, &G.nv[G.n]) != 0)
    G.nv[G.n] = NULL;
  G.n++;
}

static void gpu_init(void) {
  char why[256] = "";
  void *lib = open_lib("libcuda.so.1", "libcuda.so", why, sizeof why);
  if (!lib) {
    snprintf(G.note, sizeof G.note, "the CUDA driver library is not loadable (%s)", why);
    return;
  }
  if (!resolve(lib, cuda_syms, sizeof cuda_syms / sizeof *cuda_syms, why, sizeof why)) {
    snprintf(G.note, sizeof G.note, "libcuda.so.1 is unusable (%s)", why);
    return;
  }
  G.ctx_ok = G.api.cuDevicePrimaryCtxRetain && G.api.cuDevicePrimaryCtxRelease_v2 &&
             G.api.cuCtxPushCurrent_v2 && G.api.cuCtxPopCurrent_v2 && G.api.cuMemGetInfo_v2;
  if (G.api.cuDriverGetVersion(&G.cuda_version) != 0) G.cuda_version = 0;
  drv_result r = G.api.cuInit(0);
  int count = 0;
  if (r == 0) r = G.api.cuDeviceGetCount(&count);
  if (r != 0 || count == 0) {
    snprintf(G.note, sizeof G.note, "the CUDA driver (%d.%d) reports %s", G.cuda_version / 1000,
             G.cuda_version % 1000 / 10, r ? drv_error(r) : "no device");
    return;
  }
  init_nvml();
  for (int i = 0; i < count && G.n < AIT_HW_MAX_GPUS; i++)
    init_device(i);
  int via_nvml = 0;
  for (int i = 0; i < G.n; i++)
    via_nvml += G.nv[i] != NULL;
  snprintf(G.note, sizeof G.note, "%d GPU%s through the CUDA driver%s%s", G.n, G.n == 1 ? "" : "s",
           via_nvml == G.n ? " and NVML"
           : G.nvml_ok     ? "; NVML does not know some (free memory from a CUDA context)"
                           : "; no NVML (free memory from a CUDA context, utilisation unknown)",
           count > G.n ? "; more devices than aitune lists" : "");
}

/* Free memory through the device's primary context (creates it when no one
 * holds it: slow, and only when NVML cannot answer). */
static bool ctx_free_memory(drv_device dev, uint64_t *free_bytes) {
  if (!G.ctx_ok) return false;
  drv_context ctx = NULL, popped = NULL;
  if (G.api.cuDevicePrimaryCtxRetain(&ctx, dev) != 0) return false;
  size_t fr = 0, total = 0;
  bool ok = G.api.cuCtxPushCurrent_v2(ctx) == 0;
  if (ok) {
    ok = G.api.cuMemGetInfo_v2(&fr, &total) == 0;
    G.api.cuCtxPopCurrent_v2(&popped);
  }
  G.api.cuDevicePrimaryCtxRelease_v2(dev);
  if (ok) *free_bytes = fr;
  return ok;
}

void ait_hw_gpu_query(ait_hw_profile *p) {
  pthread_once(&G_once, gpu_init);
  p->n_gpus = G.n;
  p->cuda_version = G.cuda_version;
  snprintf(p->gpu_driver, sizeof p->gpu_driver, "%s", G.driver);
  snprintf(p->gpu_note, sizeof p->gpu_note, "%s", G.note);
  for (int i = 0; i < G.n; i++) {
    ait_hw_gpu *d = &p->gpus[i];
    *d = G.dev[i];
    nvml_memory m;
    nvml_utilization u;
    if (G.nv[i] && G.api.nvmlDeviceGetMemoryInfo && !G.api.nvmlDeviceGetMemoryInfo(G.nv[i], &m)) {
      d->memory_free = m.free;
      d->memory_free_known = 1;
    } else if (ctx_free_memory(G.cu[i], &d->memory_free))
      d->memory_free_known = 1;
    if (G.nv[i] && G.api.nvmlDeviceGetUtilizationRates &&
        !G.api.nvmlDeviceGetUtilizationRates(G.nv[i], &u)) {
      d->utilization_pct = (int)u.gpu;
      d->memory_utilization_pct = (int)u.memory;
    }
  }
}

const char *ait_hw_gpu_fingerprint(char *buf, size_t n) {
  pthread_once(&G_once, gpu_init);
  /* without a GPU the driver's versions cannot change a decision */
  if (!G.n) {
    snprintf(buf, n, "gpus=none;cuda=none;nvidia_driver=none");
    return buf;
  }
  /* "gpus=8x NVIDIA H200 sm_90": consecutive identical devices counted once */
  size_t at = (size_t)snprintf(buf, n, "gpus=");
  for (int i = 0; i < G.n && at < n;) {
    int j = i;
    while (j < G.n && !strcmp(G.dev[j].name, G.dev[i].name) &&
           G.dev[j].cc_major == G.dev[i].cc_major && G.dev[j].cc_minor == G.dev[i].cc_minor)
      j++;
    at += (size_t)snprintf(buf + at, n - at, "%s%dx %s sm_%d%d", i ? "," : "", j - i, G.dev[i].name,
                           G.dev[i].cc_major, G.dev[i].cc_minor);
    i = j;
  }
  if (at < n)
    snprintf(buf + at, n - at, ";cuda=%d.%d;nvidia_driver=%s", G.cuda_version / 1000,
             G.cuda_version % 1000 / 10, G.driver[0] ? G.driver : "unknown");
  return buf;
}
