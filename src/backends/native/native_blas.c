/* GEMM providers of the native backend (option gemm=openblas|blis): one
 * function type, C = alpha * op(A) * op(B) on row-major operands, always
 * single-threaded (the pool splits the work).
 *
 * OpenBLAS is linked. BLIS (Debian's libblis4) is loaded with dlopen when
 * first asked for, with its symbols kept local: it also exports cblas_*,
 * which must not replace OpenBLAS's, and the build must not depend on it.
 * The default, auto, is OpenBLAS unless its kernels are below the CPU's
 * level (nat_gemm_auto), then BLIS where it is installed.
 *
 * Both take their thread count from one process-wide setting; nat_blas_enter
 * and nat_blas_leave (native.h) hold it at 1 only while native runs. Debian
 * 12's OpenBLAS 0.3.21 has no per-thread setting (openblas_set_num_threads_local
 * is 0.3.22's), and BLIS's per-call one (rntm_t) is a struct whose layout
 * changes between its versions. */
#include <cblas.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "backends/native/native.h"

static void openblas_sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                           const float *A, int64_t lda, const float *B, int64_t ldb, float *C,
                           int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              (blasint)M, (blasint)N, (blasint)K, alpha, A, (blasint)lda, B, (blasint)ldb, 0.0f, C,
              (blasint)ldc);
}

/* BLIS's typed API (blis.h, 0.9): trans_t is an enum, dim_t and inc_t are
 * 64-bit on x86-64. Operands are given by row and column strides, so a
 * transposed operand is its stored matrix with the strides swapped. */
typedef void (*bli_sgemm_fn)(int transa, int transb, long m, long n, long k, const float *alpha,
                             const float *a, long rsa, long csa, const float *b, long rsb, long csb,
                             const float *beta, float *c, long rsc, long csc);
typedef void (*bli_threads_fn)(long n);
typedef long (*bli_get_threads_fn)(void);

static struct {
  pthread_once_t once;
  bli_sgemm_fn sgemm;
  bli_threads_fn set_threads;
  bli_get_threads_fn get_threads;
  char why[256];
} blis = {PTHREAD_ONCE_INIT, NULL, NULL, NULL, ""};

static void blis_load(void) {
  static const char *const names[] = {"libblis.so.4", "libblis.so"};
  void *h = NULL;
  for (size_t i = 0; !h && i < sizeof names / sizeof names[0]; i++)
    h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    snprintf(blis.why, sizeof blis.why,
             "cannot load libblis.so.4 (%s); Debian: apt-get install libblis4",
             e ? e : "not found");
    return;
  }
  bli_sgemm_fn f = (bli_sgemm_fn)dlsym(h, "bli_sgemm");
  bli_threads_fn t = (bli_threads_fn)dlsym(h, "bli_thread_set_num_threads");
  bli_get_threads_fn g = (bli_get_threads_fn)dlsym(h, "bli_thread_get_num_threads");
  if (!f || !t || !g) {
    snprintf(blis.why, sizeof blis.why,
             "libblis.so.4 lacks bli_sgemm or bli_thread_{set,get}_num_threads");
    return;
  }
  blis.set_threads = t, blis.get_threads = g;
  /* published last: nat_blas_enter reads it without the once */
  __atomic_store_n(&blis.sgemm, f, __ATOMIC_RELEASE);
}

/* ---- the libraries' thread counts, held at 1 while native runs ----------- */

static struct {
  pthread_mutex_t mu;
  int depth;         /* runs inside the window now */
  int openblas_prev; /* the program's count, 0 when it was 1 already */
  long blis_prev;    /* the same for BLIS, when loaded */
} window = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0};

void nat_blas_enter(void) {
  pthread_mutex_lock(&window.mu);
  if (window.depth++ == 0) {
    int t = openblas_get_num_threads();
    window.openblas_prev = t != 1 ? t : 0;
    if (t != 1) openblas_set_num_threads(1);
    long b = __atomic_load_n(&blis.sgemm, __ATOMIC_ACQUIRE) ? blis.get_threads() : 1;
    window.blis_prev = b > 1 ? b : 0; /* < 1: unset, which BLIS runs on one thread */
    if (b > 1) blis.set_threads(1);
  }
  pthread_mutex_unlock(&window.mu);
}

void nat_blas_leave(void) {
  pthread_mutex_lock(&window.mu);
  if (--window.depth == 0) { /* only where the count is still the 1 we set */
    if (window.openblas_prev && openblas_get_num_threads() == 1)
      openblas_set_num_threads(window.openblas_prev);
    if (window.blis_prev && blis.get_threads() == 1) blis.set_threads(window.blis_prev);
  }
  pthread_mutex_unlock(&window.mu);
}

static void blis_sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                       const float *A, int64_t lda, const float *B, int64_t ldb, float *C,
                       int64_t ldc) {
  float beta = 0.0f;
  blis.sgemm(0, 0, (long)M, (long)N, (long)K, &alpha, A, ta ? 1 : (long)lda, ta ? (long)lda : 1, B,
             tb ? 1 : (long)ldb, tb ? (long)ldb : 1, &beta, C, (long)ldc, 1);
}

/* OpenBLAS picks its kernels by CPU model, and a model newer than its
 * release gets the SSE3 "Prescott" ones: Debian 12's 0.3.21 does so on
 * current Xeons (family 6 model 207), where its SGEMM then runs at a
 * fraction of the machine's speed. These are its cores without AVX2+FMA
 * kernels. */
static bool openblas_below(nat_isa_level cpu) {
  static const char *const pre_avx2[] = {"Prescott",   "Core2",       "Penryn",       "Dunnington",
                                         "Nehalem",    "Sandybridge", "Atom",         "Katmai",
                                         "Coppermine", "Northwood",   "Banias",       "Barcelona",
                                         "Bobcat",     "Bulldozer",   "Piledriver",   "Steamroller",
                                         "Excavator",  "Opteron",     "Opteron_SSE3", "Unknown"};
  if (cpu < NAT_ISA_AVX2) return false;
  const char *core = openblas_get_corename();
  for (size_t i = 0; core && i < sizeof pre_avx2 / sizeof pre_avx2[0]; i++)
    if (!strcmp(core, pre_avx2[i])) return true;
  return false;
}

const char *nat_gemm_auto(char *why, size_t n) {
  if (!openblas_below(nat_isa_cpu())) return "openblas";
  pthread_once(&blis.once, blis_load);
  if (!blis.sgemm) return "openblas";
  if (why)
    snprintf(why, n, "OpenBLAS runs its %s kernels on this %s CPU: BLIS instead",
             openblas_get_corename(), nat_isa_name(nat_isa_cpu()));
  return "blis";
}

ait_status nat_gemm_provider(const char *name, nat_gemm_fn *fn) {
  if (!name || !strcmp(name, "auto")) name = nat_gemm_auto(NULL, 0);
  if (!name || !strcmp(name, "openblas")) {
    *fn = openblas_sgemm;
    return AIT_OK;
  }
  if (!strcmp(name, "blis")) {
    pthread_once(&blis.once, blis_load);
    if (!blis.sgemm)
      return ait_err(AIT_E_UNSUPPORTED, "native: gemm=blis is unavailable: %s", blis.why);
    *fn = blis_sgemm;
    return AIT_OK;
  }
  return ait_err(AIT_E_INVALID_ARG, "native: unknown gemm provider '%s' (auto|openblas|blis)",
                 name);
}
