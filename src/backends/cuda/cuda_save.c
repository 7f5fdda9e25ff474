/* save()/load() of the cuda backend. The folder holds
 *   cuda.onnx        the rewritten graph (folded, fused; weights included),
 *                    so load() runs no graph passes;
 *   cuda_fp8w.bin    dtype=fp8wo only: the e4m3 codes and per-channel scales
 *                    of every MatMul/Gemm weight (ait_cuda_e4m3w_write: the
 *                    saved-state format, owner "cuda_fp8w", section
 *                    "weights"), so load() does not quantize again;
 *   cuda_algos.bin   the algorithms chosen by measuring (cuBLASLt algorithm
 *                    structs, cuDNN algorithm and math type) by problem key,
 *                    with the precision, device and library versions they
 *                    were measured on: the saved-state format
 *                    (backends/common/state_io.h; owner "cuda", version
 *                    ALGO_VERSION), sections "head" (file_head) and "algos"
 *                    (file_algo each).
 * load() checks the file whole (state_io, sizes, terminated keys) and
 * refuses a precision other than the configuration's; algorithms measured on
 * another device or library version are dropped (they get measured again),
 * and each kept one is re-validated by cuBLASLt / cuDNN when a plan uses it.
 * cuda_fp8w.bin is checked whole too (ait_cuda_e4m3w_read) and against the
 * graph (cu_fp8wo_adopt): a missing, truncated or corrupted file, or one
 * for another graph, fails the load naming it. */
#ifdef AIT_HAVE_CUDA

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/common/state_io.h"
#include "backends/cuda/cuda_impl.h"
#include "core/fileio.h"
#include "onnx/onnx_io.h"

#define ALGO_OWNER "cuda"
#define ALGO_VERSION 2u /* 2: the saved-state format */

typedef struct file_head {
  uint32_t prec, nhwc, n_algos, reserved0;
  char device[128];
  int32_t sm;
  int32_t cudnn, cublaslt, reserved;
} file_head;

typedef struct file_algo {
  char key[CU_KEY_LEN];
  int32_t kind, conv_algo, conv_fused, conv_math;
  uint64_t lt[8];
  int64_t ws;
  float ms;
  uint32_t pad;
} file_algo;

static void head_of(const cu_state *s, file_head *h) {
  memset(h, 0, sizeof *h);
  h->prec = (uint32_t)s->o.prec;
  h->nhwc = s->o.nhwc;
  h->n_algos = (uint32_t)s->n_algos;
  snprintf(h->device, sizeof h->device, "%s", s->device_name);
  h->sm = s->sm;
  h->cudnn = (int32_t)cudnnGetVersion();
  h->cublaslt = (int32_t)cublasLtGetVersion();
}

#define FP8W_FILE "cuda_fp8w.bin"

static ait_status save_fp8wo(const cu_state *s, const char *dir) {
  char *path = ait_path_join(dir, FP8W_FILE);
  ait_cuda_e4m3w *w = NULL;
  int n = 0;
  ait_status st = path ? cu_fp8wo_collect(s, &w, &n) : ait_err(AIT_E_NOMEM, "cuda: out of memory");
  if (!st) st = ait_cuda_e4m3w_write(path, w, n);
  ait_cuda_e4m3w_free(w, n);
  free(path);
  return st;
}

ait_status cu_load_fp8wo(cu_state *s, const char *dir) {
  if (s->o.prec != CU_FP8WO) return AIT_OK;
  char *path = ait_path_join(dir, FP8W_FILE);
  if (!path) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
  ait_cuda_e4m3w *w = NULL;
  int n = 0;
  ait_status st = ait_cuda_e4m3w_read(path, &w, &n);
  if (!st) st = cu_fp8wo_adopt(s, w, n, path); /* takes w over */
  free(path);
  return st;
}

ait_status cu_save(cu_state *s, const char *dir) {
  char *gpath = ait_path_join(dir, "cuda.onnx"), *apath = ait_path_join(dir, "cuda_algos.bin");
  ait_status st = gpath && apath ? AIT_OK : ait_err(AIT_E_NOMEM, "cuda: out of memory");
  if (!st) st = ait_onnx_write_model(s->g, gpath);
  if (!st) {
    ait_state_out o;
    ait_state_out_init(&o, ALGO_OWNER, ALGO_VERSION);
    file_head h;
    head_of(s, &h);
    ait_state_out_section(&o, "head");
    ait_state_out_put(&o, &h, sizeof h);
    ait_state_out_section(&o, "algos");
    for (int i = 0; i < s->n_algos; i++) {
      const cu_algo *a = &s->algos[i];
      file_algo f;
      memset(&f, 0, sizeof f);
      snprintf(f.key, sizeof f.key, "%s", a->key);
      f.kind = a->kind;
      f.conv_algo = a->conv_algo;
      f.conv_fused = a->conv_fused;
      f.conv_math = a->conv_math;
      memcpy(f.lt, a->lt, sizeof f.lt);
      f.ws = a->ws;
      f.ms = a->ms;
      ait_state_out_put(&o, &f, sizeof f);
    }
    st = ait_state_out_save(&o, apath);
  }
  if (!st && s->o.prec == CU_FP8WO) st = save_fp8wo(s, dir);
  free(gpath);
  free(apath);
  return st ? ait_err_prefix(st, "cuda: save") : AIT_OK;
}

/* The head section: sizes, then the precision and layout of the
 * configuration; *same_machine when the device and libraries match. */
static ait_status read_head(const cu_state *s, ait_state_in *in, file_head *h, bool *same_machine) {
  ait_state_rd r;
  file_head mine;
  AIT_TRY(ait_state_section(in, "head", &r));
  if (!ait_state_get(&r, h, sizeof *h)) return ait_state_corrupt(&r, "cut short");
  AIT_TRY(ait_state_end(&r));
  head_of(s, &mine);
  if (!memchr(h->device, 0, sizeof h->device) || h->reserved0 || h->reserved)
    return ait_state_corrupt(&r, "bad device name or reserved field");
  if (h->prec != mine.prec || h->nhwc != mine.nhwc)
    return ait_err(AIT_E_INVALID_ARG,
                   "cuda: %s was measured for dtype=%s layout=%s, the configuration is dtype=%s "
                   "layout=%s",
                   in->path, cu_prec_name((cu_prec)(h->prec <= CU_PREC_LAST ? h->prec : 0)),
                   h->nhwc ? "nhwc" : "nchw", cu_prec_name(s->o.prec), s->o.nhwc ? "nhwc" : "nchw");
  *same_machine = h->sm == mine.sm && h->cudnn == mine.cudnn && h->cublaslt == mine.cublaslt &&
                  !strncmp(h->device, mine.device, sizeof h->device);
  return AIT_OK;
}

static ait_status read_algos(cu_state *s, ait_state_in *in) {
  file_head h;
  bool same_machine = false;
  ait_state_rd r;
  AIT_TRY(read_head(s, in, &h, &same_machine));
  AIT_TRY(ait_state_section(in, "algos", &r));
  if (ait_state_left(&r) != sizeof(file_algo) * (size_t)h.n_algos) {
    char what[96];
    snprintf(what, sizeof what, "%zu bytes, %u algorithms need %zu", ait_state_left(&r), h.n_algos,
             sizeof(file_algo) * (size_t)h.n_algos);
    return ait_state_corrupt(&r, what);
  }
  for (uint32_t i = 0; i < h.n_algos; i++) {
    file_algo f;
    ait_state_get(&r, &f, sizeof f);
    if (!memchr(f.key, 0, sizeof f.key) ||
        (f.kind != CU_ALGO_LT && f.kind != CU_ALGO_CONV && f.kind != CU_ALGO_PICK) || f.ws < 0) {
      char what[64];
      snprintf(what, sizeof what, "algorithm %u is corrupted", i);
      return ait_state_corrupt(&r, what);
    }
    if (!same_machine) continue; /* measured elsewhere: measure again */
    cu_algo a;
    memset(&a, 0, sizeof a);
    memcpy(a.key, f.key, sizeof a.key);
    a.kind = f.kind;
    a.conv_algo = f.conv_algo;
    a.conv_fused = f.conv_fused;
    a.conv_math = f.conv_math;
    memcpy(a.lt, f.lt, sizeof a.lt);
    a.ws = f.ws;
    a.ms = f.ms;
    AIT_TRY(cu_algo_put(s, &a));
  }
  return AIT_OK;
}

ait_status cu_load_algos(cu_state *s, const char *dir) {
  char *path = ait_path_join(dir, "cuda_algos.bin");
  if (!path) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
  ait_state_in in;
  ait_status st = ait_state_open(&in, path, ALGO_OWNER, ALGO_VERSION);
  free(path);
  if (st) return st;
  return ait_state_close(&in, read_algos(s, &in));
}

#endif
