/* An LD_PRELOAD shim that makes a process see an AVX2+FMA CPU without
 * AVX-512, AMX or AVX-VNNI, so that peers which cannot be capped by an
 * environment variable (ONNX Runtime's MLAS) run the kernels they would
 * run on a Zen 2/3 or a client Intel CPU. Benchmark tool, not library code.
 *
 * How: ARCH_SET_CPUID(0) makes the kernel fault every CPUID instruction of
 * this thread and the threads it creates afterwards (CPUID faulting, the
 * `cpuid_fault` flag in /proc/cpuinfo). The SIGSEGV handler turns faulting
 * off for a moment, runs the real CPUID, clears the masked feature bits,
 * turns faulting on again and steps over the instruction. XGETBV is not
 * trapped; programs check the CPUID bits before the XCR0 state, so the
 * cleared bits are enough. glibc's own string functions picked their
 * variants before this constructor ran and stay as they were.
 *
 * Build: cc -O2 -shared -fPIC -o build/cpuid_avx2.so bench/cpuid_avx2.c
 * Use:   LD_PRELOAD=build/cpuid_avx2.so CMD...   (bench/suite.py --isa avx2
 * --cap-cpuid does this for every engine). Set AIT_CPUID_CAP_VERBOSE=1 to
 * print one line to stderr when the cap is on. */
#define _GNU_SOURCE
#include <asm/prctl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

static struct sigaction prev_segv;

static long set_cpuid(int on) { return syscall(SYS_arch_prctl, ARCH_SET_CPUID, on); }

static void mask(uint32_t leaf, uint32_t sub, uint32_t r[4]) {
  if (leaf == 7 && sub == 0) {
    /* EBX: AVX512F 16, DQ 17, IFMA 21, PF 26, ER 27, CD 28, BW 30, VL 31 */
    r[1] &= ~((1u << 16) | (1u << 17) | (1u << 21) | (1u << 26) | (1u << 27) | (1u << 28) |
              (1u << 30) | (1u << 31));
    /* ECX: VBMI 1, VBMI2 6, VNNI 11, BITALG 12, VPOPCNTDQ 14 */
    r[2] &= ~((1u << 1) | (1u << 6) | (1u << 11) | (1u << 12) | (1u << 14));
    /* EDX: 4VNNIW 2, 4FMAPS 3, VP2INTERSECT 8, AMX-BF16 22, FP16 23, AMX-TILE 24, AMX-INT8 25 */
    r[3] &=
        ~((1u << 2) | (1u << 3) | (1u << 8) | (1u << 22) | (1u << 23) | (1u << 24) | (1u << 25));
  } else if (leaf == 7 && sub == 1) {
    /* EAX: AVX-VNNI 4, AVX512_BF16 5, AMX-FP16 21; EDX: AVX-VNNI-INT8 4, AVX10 19 */
    r[0] &= ~((1u << 4) | (1u << 5) | (1u << 21));
    r[3] &= ~((1u << 4) | (1u << 19));
  } else if (leaf == 0xd && sub == 0) {
    /* XSAVE components offered: drop opmask/ZMM (5-7) and AMX tiles (17-18) */
    r[0] &= ~((1u << 5) | (1u << 6) | (1u << 7) | (1u << 17) | (1u << 18));
  } else if (leaf == 0x1d || leaf == 0x1e || leaf == 0x24) {
    r[0] = r[1] = r[2] = r[3] = 0; /* AMX palettes, AVX10 */
  }
}

static void on_segv(int sig, siginfo_t *si, void *ctx_) {
  ucontext_t *ctx = ctx_;
  const unsigned char *ip = (const unsigned char *)ctx->uc_mcontext.gregs[REG_RIP];
  if (ip[0] == 0x0f && ip[1] == 0xa2) {
    uint32_t leaf = (uint32_t)ctx->uc_mcontext.gregs[REG_RAX];
    uint32_t sub = (uint32_t)ctx->uc_mcontext.gregs[REG_RCX];
    uint32_t r[4];
    set_cpuid(1);
    __asm__ volatile("cpuid"
                     : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3])
                     : "a"(leaf), "c"(sub));
    set_cpuid(0);
    mask(leaf, sub, r);
    ctx->uc_mcontext.gregs[REG_RAX] = r[0];
    ctx->uc_mcontext.gregs[REG_RBX] = r[1];
    ctx->uc_mcontext.gregs[REG_RCX] = r[2];
    ctx->uc_mcontext.gregs[REG_RDX] = r[3];
    ctx->uc_mcontext.gregs[REG_RIP] += 2;
    return;
  }
  /* a real crash: hand it to whoever had SIGSEGV before, or die as usual */
  if (prev_segv.sa_flags & SA_SIGINFO && prev_segv.sa_sigaction) {
    prev_segv.sa_sigaction(sig, si, ctx_);
    return;
  }
  if (prev_segv.sa_handler != SIG_DFL && prev_segv.sa_handler != SIG_IGN) {
    prev_segv.sa_handler(sig);
    return;
  }
  signal(SIGSEGV, SIG_DFL);
}

__attribute__((constructor)) static void cpuid_cap_init(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGSEGV, &sa, &prev_segv) != 0) return;
  if (set_cpuid(0) != 0) {
    fprintf(stderr, "cpuid_avx2: CPUID faulting unavailable here (no cpuid_fault); not capped\n");
    sigaction(SIGSEGV, &prev_segv, NULL);
    return;
  }
  if (getenv("AIT_CPUID_CAP_VERBOSE"))
    fprintf(stderr, "cpuid_avx2: CPUID capped at AVX2+FMA in pid %d\n", (int)getpid());
}
