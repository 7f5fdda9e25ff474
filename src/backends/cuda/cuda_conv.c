/* Conv and FusedConv through cuDNN's convolution API.
 *
 * Y = act(conv(X, W) + bias + Z) runs as one cudnnConvolutionBiasActivation-
 * Forward when the activation is ReLU or none (cuDNN fuses only those; the
 * identity only with the implicit-precomputed-GEMM algorithm), or as
 * cudnnConvolutionForward followed by one per-channel epilogue pass (bias,
 * residual, any activation). Reduced precisions use NHWC activations and
 * KRSC filters (what Tensor Cores want); float32 keeps NCHW by default and
 * strict FMA math (no TF32) unless dtype=tf32. The algorithm and the form
 * (fused or split) are chosen by timing cuDNN's heuristic candidates of both
 * on the plan's buffers; with algo=heuristic the first that runs, fused
 * first.
 *
 * The GEMM form (NHWC, one group, conv=auto|gemm): a 1x1 stride-1
 * convolution is Y[N*H*W, K] = X[N*H*W, C] W[K, C]^T as it is stored; any
 * other first writes its columns (cuk_im2col_nhwc, the KRSC filter's order)
 * into a temporary. Bias, ReLU and a residual of the output's shape go into
 * the cuBLASLt epilogue (the residual as its C matrix), so one GEMM does all
 * a fused cuDNN call does. conv=auto times both forms per convolution and
 * keeps the faster; the choice is cached with the convolution's algorithm
 * (conv_fused = 2). */
#ifdef AIT_HAVE_CUDA

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_impl.h"
#include "ir/passes/passes.h"

typedef struct conv_prm {
  int x, y, z, zero; /* tensors; z = residual (-1), zero = zeros bias (-1) */
  void *w, *bias;    /* filter and bias in the storage type */
  const float *bias_f32;
  int act;
  float ap[2];
  int64_t N, C, H, W, K, R, S, OH, OW;
  int group, pad_h, pad_w, str_h, str_w, dil_h, dil_w;
  /* 3-D convolutions (NCDHW, cuDNN's Nd descriptors): depth D, filter depth
   * T, output depth OD; vol3 false for 1-D and 2-D (D = T = OD = 1) */
  bool vol3;
  int64_t D, T, OD;
  int pad_d, str_d, dil_d;
  bool nhwc;
  bool can_fuse; /* cudnnConvolutionBiasActivationForward applies (ReLU or identity) */
  /* chosen in prep */
  cudnnTensorDescriptor_t xd, yd, bd;
  cudnnFilterDescriptor_t wd;
  cudnnConvolutionDescriptor_t cd;
  cudnnActivationDescriptor_t ad;
  int algo, math;
  bool fused;
  size_t ws;
  char key[CU_KEY_LEN];
  /* the GEMM form (NULL: not offered) */
  cu_gemm *gm;
  int col; /* im2col temporary, -1 for 1x1 stride 1 */
  cuk_im2col ic;
  bool use_gemm;
} conv_prm;

static void conv_release(void *prm) {
  conv_prm *c = prm;
  if (c->xd) cudnnDestroyTensorDescriptor(c->xd);
  if (c->yd) cudnnDestroyTensorDescriptor(c->yd);
  if (c->bd) cudnnDestroyTensorDescriptor(c->bd);
  if (c->wd) cudnnDestroyFilterDescriptor(c->wd);
  if (c->cd) cudnnDestroyConvolutionDescriptor(c->cd);
  if (c->ad) cudnnDestroyActivationDescriptor(c->ad);
  cu_gemm_free(c->gm);
}

static cudnnDataType_t dnn_type(ait_dtype dt) {
  return dt == AIT_BFLOAT16  ? CUDNN_DATA_BFLOAT16
         : dt == AIT_FLOAT16 ? CUDNN_DATA_HALF
                             : CUDNN_DATA_FLOAT;
}

/* The descriptors of a 3-D convolution in NCDHW (make_descs made them). */
static ait_status make_descs3(cu_state *s, cu_plan *p, conv_prm *c, cudnnDataType_t dt) {
  (void)s, (void)p;
  int xd[5] = {(int)c->N, (int)c->C, (int)c->D, (int)c->H, (int)c->W};
  int yd[5] = {(int)c->N, (int)c->K, (int)c->OD, (int)c->OH, (int)c->OW};
  int bd[5] = {1, (int)c->K, 1, 1, 1};
  int wd[5] = {(int)c->K, (int)(c->C / c->group), (int)c->T, (int)c->R, (int)c->S};
  int xs[5], ys[5], bs[5];
  xs[4] = ys[4] = bs[4] = 1;
  for (int k = 3; k >= 0; k--) {
    xs[k] = xs[k + 1] * xd[k + 1];
    ys[k] = ys[k + 1] * yd[k + 1];
    bs[k] = bs[k + 1] * bd[k + 1];
  }
  if (c->nhwc) { /* NDHWC: channels innermost */
    const int *dims[3] = {xd, yd, bd};
    int *str[3] = {xs, ys, bs};
    for (int i = 0; i < 3; i++) {
      const int *d = dims[i];
      int *t = str[i];
      t[1] = 1, t[4] = d[1], t[3] = d[4] * d[1], t[2] = d[3] * d[4] * d[1];
      t[0] = d[2] * t[2];
    }
  }
  AIT_TRY(cu_check_dnn(cudnnSetTensorNdDescriptor(c->xd, dt, 5, xd, xs), "input descriptor"));
  AIT_TRY(cu_check_dnn(cudnnSetTensorNdDescriptor(c->yd, dt, 5, yd, ys), "output descriptor"));
  AIT_TRY(cu_check_dnn(cudnnSetTensorNdDescriptor(c->bd, dt, 5, bd, bs), "bias descriptor"));
  AIT_TRY(cu_check_dnn(
      cudnnSetFilterNdDescriptor(c->wd, dt, c->nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, 5, wd),
      "filter descriptor"));
  int pad[3] = {c->pad_d, c->pad_h, c->pad_w}, str[3] = {c->str_d, c->str_h, c->str_w},
      dil[3] = {c->dil_d, c->dil_h, c->dil_w};
  AIT_TRY(cu_check_dnn(cudnnSetConvolutionNdDescriptor(c->cd, 3, pad, str, dil,
                                                       CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                       "convolution descriptor"));
  AIT_TRY(cu_check_dnn(cudnnSetConvolutionGroupCount(c->cd, c->group), "group count"));
  AIT_TRY(cu_check_dnn(cudnnSetActivationDescriptor(c->ad,
                                                    c->act == CUK_RELU ? CUDNN_ACTIVATION_RELU
                                                                       : CUDNN_ACTIVATION_IDENTITY,
                                                    CUDNN_PROPAGATE_NAN, 0.0),
                       "activation descriptor"));
  int od[5];
  AIT_TRY(cu_check_dnn(cudnnGetConvolutionNdForwardOutputDim(c->cd, c->xd, c->wd, 5, od),
                       "output dims"));
  for (int k = 0; k < 5; k++)
    if (od[k] != yd[k])
      return ait_err(AIT_E_SHAPE, "cuda: cuDNN computes output dim %d as %d, the graph %d", k,
                     od[k], yd[k]);
  return AIT_OK;
}

static ait_status make_descs(cu_state *s, cu_plan *p, conv_prm *c) {
  cudnnDataType_t dt = dnn_type(p->t[c->y].dt);
  cudnnTensorFormat_t fmt = c->nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  AIT_TRY(cu_check_dnn(cudnnCreateTensorDescriptor(&c->xd), "tensor descriptor"));
  AIT_TRY(cu_check_dnn(cudnnCreateTensorDescriptor(&c->yd), "tensor descriptor"));
  AIT_TRY(cu_check_dnn(cudnnCreateTensorDescriptor(&c->bd), "tensor descriptor"));
  AIT_TRY(cu_check_dnn(cudnnCreateFilterDescriptor(&c->wd), "filter descriptor"));
  AIT_TRY(cu_check_dnn(cudnnCreateConvolutionDescriptor(&c->cd), "convolution descriptor"));
  AIT_TRY(cu_check_dnn(cudnnCreateActivationDescriptor(&c->ad), "activation descriptor"));
  if (c->vol3) return make_descs3(s, p, c, dt);
  AIT_TRY(cu_check_dnn(
      cudnnSetTensor4dDescriptor(c->xd, fmt, dt, (int)c->N, (int)c->C, (int)c->H, (int)c->W),
      "input descriptor"));
  AIT_TRY(cu_check_dnn(
      cudnnSetTensor4dDescriptor(c->yd, fmt, dt, (int)c->N, (int)c->K, (int)c->OH, (int)c->OW),
      "output descriptor"));
  AIT_TRY(cu_check_dnn(cudnnSetTensor4dDescriptor(c->bd, fmt, dt, 1, (int)c->K, 1, 1),
                       "bias descriptor"));
  AIT_TRY(cu_check_dnn(cudnnSetFilter4dDescriptor(c->wd, dt, fmt, (int)c->K, (int)(c->C / c->group),
                                                  (int)c->R, (int)c->S),
                       "filter descriptor"));
  AIT_TRY(cu_check_dnn(cudnnSetConvolution2dDescriptor(c->cd, c->pad_h, c->pad_w, c->str_h,
                                                       c->str_w, c->dil_h, c->dil_w,
                                                       CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                       "convolution descriptor"));
  AIT_TRY(cu_check_dnn(cudnnSetConvolutionGroupCount(c->cd, c->group), "group count"));
  AIT_TRY(cu_check_dnn(cudnnSetActivationDescriptor(c->ad,
                                                    c->act == CUK_RELU ? CUDNN_ACTIVATION_RELU
                                                                       : CUDNN_ACTIVATION_IDENTITY,
                                                    CUDNN_PROPAGATE_NAN, 0.0),
                       "activation descriptor"));
  int n, k, h, w;
  AIT_TRY(cu_check_dnn(cudnnGetConvolution2dForwardOutputDim(c->cd, c->xd, c->wd, &n, &k, &h, &w),
                       "output dims"));
  if (n != c->N || k != c->K || h != c->OH || w != c->OW)
    return ait_err(AIT_E_SHAPE,
                   "cuda: cuDNN computes a %dx%dx%dx%d output, the graph %lldx%lldx%lldx%lld", n, k,
                   h, w, (long long)c->N, (long long)c->K, (long long)c->OH, (long long)c->OW);
  return AIT_OK;
}

static ait_status conv_call(cu_state *s, cu_plan *p, conv_prm *c, bool fused, int algo, size_t ws) {
  const float one = 1.0f, zero = 0.0f;
  void *x = cu_ptr(p, c->x), *y = cu_ptr(p, c->y);
  if (fused) {
    void *z = c->z >= 0 ? cu_ptr(p, c->z) : y;
    void *b = c->bias ? c->bias : cu_ptr(p, c->zero);
    return cu_check_dnn(cudnnConvolutionBiasActivationForward(
                            s->dnn, &one, c->xd, x, c->wd, c->w, c->cd,
                            (cudnnConvolutionFwdAlgo_t)algo, s->ws, ws, c->z >= 0 ? &one : &zero,
                            c->yd, z, c->bd, b, c->ad, c->yd, y),
                        "cudnnConvolutionBiasActivationForward");
  }
  AIT_TRY(cu_check_dnn(cudnnConvolutionForward(s->dnn, &one, c->xd, x, c->wd, c->w, c->cd,
                                               (cudnnConvolutionFwdAlgo_t)algo, s->ws, ws, &zero,
                                               c->yd, y),
                       "cudnnConvolutionForward"));
  if (!c->bias_f32 && c->z < 0 && c->act == CUK_COPY) return AIT_OK;
  const cu_tensor *Y = &p->t[c->y];
  cuk_epi e = {.dt = Y->dt, .n = cu_numel(Y), .C = c->K, .x = y, .y = y};
  e.inner = c->nhwc ? 1 : c->OD * c->OH * c->OW;
  e.shift = c->bias_f32;
  e.z = c->z >= 0 ? cu_ptr(p, c->z) : NULL;
  e.act = c->act;
  e.ap[0] = c->ap[0];
  e.ap[1] = c->ap[1];
  return cu_check(cuk_epilogue(s->stream, &e), "convolution epilogue");
}

typedef struct trial_ctx {
  cu_state *s;
  cu_plan *p;
  conv_prm *c;
} trial_ctx;

static ait_status gemm_form(cu_state *s, cu_plan *p, conv_prm *c) {
  if (c->col >= 0) {
    c->ic.x = cu_ptr(p, c->x);
    c->ic.y = cu_ptr(p, c->col);
    AIT_TRY(cu_check(cuk_im2col_nhwc(s->stream, &c->ic), "im2col"));
  }
  return cu_gemm_exec(s, p, c->gm);
}

static ait_status conv_run(cu_state *s, cu_plan *p, cu_step *st) {
  conv_prm *c = st->prm;
  if (c->use_gemm) return gemm_form(s, p, c);
  return conv_call(s, p, c, c->fused, c->algo, c->ws);
}

static ait_status gemm_trial(void *arg) {
  trial_ctx *t = arg;
  return gemm_form(t->s, t->p, t->c);
}

typedef struct trial {
  cu_state *s;
  cu_plan *p;
  conv_prm *c;
  bool fused;
  int algo;
  size_t ws;
} trial;

static ait_status trial_fn(void *arg) {
  trial *t = arg;
  return conv_call(t->s, t->p, t->c, t->fused, t->algo, t->ws);
}

/* The math type a candidate runs with: strict float32 always FMA (cuDNN's
 * default math would allow TF32), else what the heuristic proposes. */
static cudnnMathType_t math_for(const cu_state *s, cudnnMathType_t proposed) {
  return s->o.prec == CU_FP32 ? CUDNN_FMA_MATH : proposed;
}

/* cuDNN's algorithm for c: the cached one, else the fastest candidate
 * (*found false when none runs; *best_ms its time, 0 when not measured). */
static ait_status dnn_choose(cu_state *s, cu_plan *p, conv_prm *c, bool *found_out,
                             float *best_out) {
  *found_out = false;
  *best_out = 0.0f;
  AIT_TRY(cu_need_dnn(s));
  AIT_TRY(make_descs(s, p, c));
  cudnnMathType_t want = s->o.prec == CU_FP32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
  AIT_TRY(cu_check_dnn(cudnnSetConvolutionMathType(c->cd, want), "math type"));
  const cu_algo *known = cu_algo_find(s, c->key);
  if (known && known->conv_fused != 2 && (known->conv_fused == 0 || c->can_fuse)) {
    size_t need = 0;
    if (cudnnSetConvolutionMathType(c->cd, (cudnnMathType_t)known->conv_math) ==
            CUDNN_STATUS_SUCCESS &&
        cudnnGetConvolutionForwardWorkspaceSize(s->dnn, c->xd, c->wd, c->cd, c->yd,
                                                (cudnnConvolutionFwdAlgo_t)known->conv_algo,
                                                &need) == CUDNN_STATUS_SUCCESS &&
        need <= (size_t)s->o.ws_bytes) {
      c->algo = known->conv_algo;
      c->math = known->conv_math;
      c->fused = known->conv_fused != 0;
      c->ws = need;
      *found_out = true;
      *best_out = known->ms;
      return AIT_OK;
    }
    cudnnSetConvolutionMathType(c->cd, want);
  }
  cudnnConvolutionFwdAlgoPerf_t perf[32];
  int n_perf = 0;
  AIT_TRY(cu_check_dnn(
      cudnnGetConvolutionForwardAlgorithm_v7(s->dnn, c->xd, c->wd, c->cd, c->yd, 32, &n_perf, perf),
      "convolution heuristics"));
  int limit = s->o.measure ? (s->o.candidates < 1 ? 1 : s->o.candidates) : 1;
  bool found = false;
  float best_ms = 0.0f;
  /* measuring: the best of fused and split; else the first that runs, fused first */
  for (int pass = c->can_fuse ? 0 : 1; pass < 2 && !(found && limit == 1); pass++) {
    bool fused = pass == 0;
    int tried = 0;
    unsigned seen = 0; /* (algorithm, math) pairs already timed: the list repeats algorithms */
    for (int i = 0; i < n_perf && tried < limit; i++) {
      if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
      /* cuDNN fuses the identity activation with this algorithm only */
      if (fused && c->act != CUK_RELU &&
          perf[i].algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM)
        continue;
      cudnnMathType_t math = math_for(s, perf[i].mathType);
      unsigned bit = 1u << (((unsigned)perf[i].algo % 8u) * 4u + ((unsigned)math % 4u));
      if (seen & bit) continue;
      seen |= bit;
      size_t need = 0;
      if (cudnnSetConvolutionMathType(c->cd, math) != CUDNN_STATUS_SUCCESS ||
          cudnnGetConvolutionForwardWorkspaceSize(s->dnn, c->xd, c->wd, c->cd, c->yd, perf[i].algo,
                                                  &need) != CUDNN_STATUS_SUCCESS ||
          need > (size_t)s->o.ws_bytes)
        continue;
      tried++;
      trial t = {s, p, c, fused, perf[i].algo, need};
      float ms = 0.0f;
      ait_status r = limit > 1 ? cu_time(s, trial_fn, &t, 3, &ms) : trial_fn(&t);
      if (r == AIT_OK && limit == 1) r = cu_check(cudaStreamSynchronize(s->stream), "convolution");
      if (r != AIT_OK) {
        ait_err_clear();
        continue;
      }
      if (!found || ms < best_ms) {
        found = true;
        best_ms = ms;
        c->algo = perf[i].algo;
        c->math = math;
        c->fused = fused;
        c->ws = need;
      }
    }
  }
  if (!found) return AIT_OK;
  AIT_TRY(cu_check_dnn(cudnnSetConvolutionMathType(c->cd, (cudnnMathType_t)c->math), "math type"));
  if (limit > 1) s->n_measured++;
  *found_out = true;
  *best_out = best_ms;
  return AIT_OK;
}

static ait_status put_choice(cu_state *s, conv_prm *c, float ms) {
  cu_algo a;
  memset(&a, 0, sizeof a);
  snprintf(a.key, sizeof a.key, "%s", c->key);
  a.kind = CU_ALGO_CONV;
  a.conv_algo = c->use_gemm ? 0 : c->algo;
  a.conv_math = c->use_gemm ? 0 : c->math;
  a.conv_fused = c->use_gemm ? 2 : c->fused;
  a.ws = c->use_gemm ? 0 : (int64_t)c->ws;
  a.ms = ms;
  return cu_algo_put(s, &a);
}

/* The GEMM form's algorithm, and its time with the im2col pass when
 * measuring (*ms, else 0). */
static ait_status gemm_choose_form(cu_state *s, cu_plan *p, conv_prm *c, float *ms) {
  AIT_TRY(cu_gemm_choose(s, p, c->gm, ms));
  if (!s->o.measure) return AIT_OK;
  trial_ctx t = {s, p, c};
  return cu_time(s, gemm_trial, &t, 3, ms);
}

static ait_status conv_prep(cu_state *s, cu_plan *p, cu_step *st) {
  conv_prm *c = st->prm;
  const cu_algo *known = cu_algo_find(s, c->key);
  bool cached = known != NULL; /* (the pointer moves when algorithms are added) */
  bool gemm_only = c->gm && (s->o.conv == CU_CONV_GEMM || (known && known->conv_fused == 2));
  if (gemm_only) {
    float ms = 0.0f;
    AIT_TRY(cu_gemm_choose(s, p, c->gm, &ms));
    c->use_gemm = true;
    st->what = c->col >= 0 ? "Conv im2col GEMM" : "Conv 1x1 GEMM";
    return put_choice(s, c, ms);
  }
  bool found = false;
  float dnn_ms = 0.0f, gemm_ms = 0.0f;
  AIT_TRY(dnn_choose(s, p, c, &found, &dnn_ms));
  /* conv=auto: the GEMM form when it measures faster (or cuDNN has nothing) */
  if (c->gm && (!found || (s->o.measure && !cached))) {
    ait_status r = gemm_choose_form(s, p, c, &gemm_ms);
    if (r == AIT_OK && (!found || gemm_ms < dnn_ms)) {
      c->use_gemm = true;
      st->what = c->col >= 0 ? "Conv im2col GEMM" : "Conv 1x1 GEMM";
      return put_choice(s, c, gemm_ms);
    }
    if (r != AIT_OK && found) ait_err_clear();
    if (r != AIT_OK && !found) return r;
  }
  if (!found) return ait_err(AIT_E_UNSUPPORTED, "cuda: no cuDNN algorithm runs %s", c->key);
  return put_choice(s, c, dnn_ms);
}

/* ---- lowering ------------------------------------------------------------ */

static int64_t attr_at(const ait_node *n, const char *name, int k, int64_t def) {
  int cnt = 0;
  const int64_t *v = ait_attr_ints(n, name, &cnt);
  return v && k < cnt ? v[k] : def;
}

/* Symmetric padding of one spatial axis; AIT_E_UNSUPPORTED when it is not. */
static ait_status pad_of(const ait_node *n, int axis, int nsp, int64_t in, int64_t out, int64_t k,
                         int64_t s, int64_t d, int *pad) {
  const char *ap = ait_attr_str(n, "auto_pad", "NOTSET");
  int64_t b = 0, e = 0;
  if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
    int64_t total = (out - 1) * s + (k - 1) * d + 1 - in;
    total = total < 0 ? 0 : total;
    b = !strcmp(ap, "SAME_UPPER") ? total / 2 : total - total / 2;
    e = total - b;
  } else if (strcmp(ap, "VALID")) {
    b = attr_at(n, "pads", axis, 0);
    e = attr_at(n, "pads", axis + nsp, 0);
  }
  if (b != e)
    return ait_err(AIT_E_UNSUPPORTED, "cuda: asymmetric padding (%lld, %lld) on axis %d",
                   (long long)b, (long long)e, axis);
  *pad = (int)b;
  return AIT_OK;
}

/* The filter as a [K, kp] GEMM operand: the KRSC upload itself when kp is
 * R * S * C, else a zero-padded copy in the plan's constants. */
static ait_status gemm_filter(cu_planner *pl, const ait_tensor *W, conv_prm *c, ait_dtype dt,
                              int64_t kp, int *w) {
  int64_t wd[2] = {c->K, kp}, rsc = c->R * c->S * c->C;
  if (kp == rsc) return cu_weight_tensor(pl, dt, 2, wd, c->w, w);
  float *f = calloc((size_t)(c->K * kp), sizeof *f);
  void *img = malloc((size_t)(c->K * kp) * ait_elem_size(dt));
  ait_status st = f && img ? AIT_OK : ait_err(AIT_E_NOMEM, "cuda: out of memory");
  const float *src = W->data;
  for (int64_t k = 0; !st && k < c->K; k++)
    for (int64_t ch = 0; ch < c->C; ch++)
      for (int64_t r = 0; r < c->R; r++)
        for (int64_t q = 0; q < c->S; q++)
          f[k * kp + (r * c->S + q) * c->C + ch] = src[((k * c->C + ch) * c->R + r) * c->S + q];
  if (!st) cu_f32_to_store(dt, f, img, c->K * kp);
  if (!st) st = cu_const_raw(pl, dt, 2, wd, img, w);
  free(f);
  free(img);
  return st;
}

/* Offer the GEMM form (c->gm) where it applies: NHWC, one group, 16-byte
 * aligned rows; conv=cudnn offers nothing. */
static ait_status gemm_offer(cu_planner *pl, const ait_node *n, const ait_tensor *W, conv_prm *c) {
  c->col = -1;
  ait_dtype dt = pl->p->t[c->y].dt;
  int64_t es = (int64_t)ait_elem_size(dt);
  if (!c->nhwc || c->group != 1 || pl->s->o.conv == CU_CONV_CUDNN || (c->K * es) % 16 ||
      W->dtype != AIT_FLOAT32 || W->kind != AIT_KIND_TENSOR)
    return AIT_OK;
  bool direct = c->R == 1 && c->S == 1 && c->str_h == 1 && c->str_w == 1 && c->pad_h == 0 &&
                c->pad_w == 0 && (c->C * es) % 16 == 0;
  int64_t M = c->N * c->OH * c->OW, rsc = c->R * c->S * c->C;
  int64_t kp = direct ? c->C : (rsc + 7) / 8 * 8;
  int w, x = c->x;
  AIT_TRY(gemm_filter(pl, W, c, dt, kp, &w));
  if (!direct) {
    int64_t cd[2] = {M, kp};
    AIT_TRY(cu_temp(pl, dt, 2, cd, CU_PLAIN, &c->col));
    cuk_im2col *ic = &c->ic;
    ic->es = (int)es;
    ic->N = c->N, ic->H = c->H, ic->W = c->W, ic->C = c->C;
    ic->OH = c->OH, ic->OW = c->OW, ic->R = c->R, ic->S = c->S, ic->kp = kp;
    ic->pad_h = c->pad_h, ic->pad_w = c->pad_w, ic->str_h = c->str_h, ic->str_w = c->str_w;
    ic->dil_h = c->dil_h, ic->dil_w = c->dil_w;
    x = c->col;
  }
  int bias_v = n->n_in > 2 && n->in[2] >= 0 ? n->in[2] : -1;
  return cu_gemm_nt(pl, x, w, bias_v, c->z, c->y, M, c->K, kp, c->act, c->ap, &c->gm);
}

/* ---- depthwise convolutions in NHWC: our own kernel (cuda_dwconv.cu) ---- */

typedef struct dw_prm {
  cuk_dwconv k;
  int x, y, wt;
} dw_prm;

static ait_status dw_run(cu_state *s, cu_plan *p, cu_step *st) {
  dw_prm *d = st->prm;
  d->k.x = cu_ptr(p, d->x);
  d->k.y = cu_ptr(p, d->y);
  d->k.w = cu_ptr(p, d->wt);
  return cu_check(cuk_dwconv_nhwc(s->stream, &d->k), "depthwise Conv");
}

/* A depthwise convolution (group = C = K) in NHWC without a residual runs on
 * cuda_dwconv.cu's kernel, bias and activation fused, unless conv=cudnn:
 * cuDNN took 0.15-0.45 ms per such layer at batch 32 in bf16 on an H200
 * (docs/benchmarks-gpu.md, Round 8). *done: the step is made (c is then
 * the caller's to free). */
static ait_status dw_offer(cu_planner *pl, const ait_node *n, const ait_tensor *W, conv_prm *c,
                           bool *done) {
  *done = false;
  if (!c->nhwc || c->group != c->C || c->K != c->C || W->dims[1] != 1 || c->z >= 0 ||
      pl->s->o.conv == CU_CONV_CUDNN || W->dtype != AIT_FLOAT32 || W->kind != AIT_KIND_TENSOR ||
      c->R > 64 || c->S > 64)
    return AIT_OK;
  int64_t taps = c->R * c->S, wd[2] = {taps, c->C};
  float *f = malloc(sizeof(float) * (size_t)(taps * c->C));
  if (!f) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
  const float *src = W->data; /* [C, 1, R, S] */
  for (int64_t ch = 0; ch < c->C; ch++)
    for (int64_t t = 0; t < taps; t++)
      f[t * c->C + ch] = src[ch * taps + t];
  int wt;
  ait_status st = cu_const_raw(pl, AIT_FLOAT32, 2, wd, f, &wt);
  free(f);
  AIT_TRY(st);
  dw_prm *d = calloc(1, sizeof *d);
  if (!d) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
  cuk_dwconv *k = &d->k;
  k->dt = pl->p->t[c->y].dt;
  k->act = c->act;
  k->ap[0] = c->ap[0], k->ap[1] = c->ap[1];
  k->N = c->N, k->H = c->H, k->W = c->W, k->C = c->C, k->OH = c->OH, k->OW = c->OW;
  k->R = (int)c->R, k->S = (int)c->S;
  k->pad_h = c->pad_h, k->pad_w = c->pad_w, k->str_h = c->str_h, k->str_w = c->str_w;
  k->dil_h = c->dil_h, k->dil_w = c->dil_w;
  k->bias = c->bias_f32; /* device weight memory, NULL without a bias */
  d->x = c->x, d->y = c->y, d->wt = wt;
  cu_step *stp;
  AIT_TRY(cu_step_add(pl, (int)(n - pl->g->nodes), "Conv depthwise", dw_run, d, &stp));
  cu_step_use(stp, d->x);
  cu_step_use(stp, d->y);
  cu_step_use(stp, d->wt);
  *done = true;
  return AIT_OK;
}

/* A 3-D convolution: cuDNN with Nd descriptors, bias, residual of the
 * output's shape and activation fused as for 2-D; no GEMM form. Under
 * layout=nhwc (16-bit storage by default) it runs channels-last (NDHWC,
 * a KTRSC filter) between two layout steps, the graph's tensors staying
 * NCDHW: cuDNN's NCDHW bfloat16 algorithms took 110 ms for r3d_18 at batch
 * 32 on an H200 (torch 15 ms; docs/benchmarks-gpu.md, Round 9). A residual
 * is then added after the layout step. */
static ait_status lower_conv3d(cu_planner *pl, const ait_node *n) {
  cu_state *s = pl->s;
  const ait_tensor *W = pl->g->values[n->in[1]].init;
  conv_prm *c = calloc(1, sizeof *c);
  if (!c) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
  c->z = c->zero = c->col = -1;
  c->act = CUK_COPY;
  c->vol3 = true;
  c->nhwc = s->o.nhwc;
  int xg = -1, yg = -1; /* channels-last: the graph's NCDHW tensors */
  ait_status st = cu_in(pl, n->in[0], CU_PLAIN, &c->x);
  if (!st) st = cu_out(pl, n->out[0], CU_PLAIN, &c->y);
  if (!st && (pl->p->t[c->x].rank != 5 || pl->p->t[c->y].rank != 5))
    st = ait_err(AIT_E_UNSUPPORTED, "cuda: a 3-D convolution of rank-%d data", pl->p->t[c->x].rank);
  if (!st && c->nhwc) {
    const cu_tensor *X = &pl->p->t[c->x], *Y = &pl->p->t[c->y];
    ait_dtype dt = X->dt;
    const int64_t *a = X->dims, *b = Y->dims;
    int64_t xt[5] = {a[0], a[2], a[3], a[4], a[1]}, yt[5] = {b[0], b[2], b[3], b[4], b[1]};
    int64_t xs[5] = {a[1] * a[2] * a[3] * a[4], a[3] * a[4], a[4], 1, a[2] * a[3] * a[4]};
    xg = c->x, yg = c->y;
    st = cu_temp(pl, dt, 5, xt, CU_PLAIN, &c->x);
    if (!st) st = cu_emit_copy(pl, (int)(n - pl->g->nodes), "Conv 3-D layout", xg, c->x, 0, xs);
    if (!st) st = cu_temp(pl, dt, 5, yt, CU_PLAIN, &c->y);
  }
  if (!st) { /* dims from the graph's NCDHW tensors */
    const cu_tensor *X = &pl->p->t[xg >= 0 ? xg : c->x], *Y = &pl->p->t[yg >= 0 ? yg : c->y];
    c->N = X->dims[0], c->C = X->dims[1], c->D = X->dims[2], c->H = X->dims[3], c->W = X->dims[4];
    c->K = W->dims[0], c->T = W->dims[2], c->R = W->dims[3], c->S = W->dims[4];
    c->OD = Y->dims[2], c->OH = Y->dims[3], c->OW = Y->dims[4];
    c->group = (int)ait_attr_int(n, "group", 1);
    c->str_d = (int)attr_at(n, "strides", 0, 1);
    c->str_h = (int)attr_at(n, "strides", 1, 1);
    c->str_w = (int)attr_at(n, "strides", 2, 1);
    c->dil_d = (int)attr_at(n, "dilations", 0, 1);
    c->dil_h = (int)attr_at(n, "dilations", 1, 1);
    c->dil_w = (int)attr_at(n, "dilations", 2, 1);
    if (c->group < 1 || c->C % c->group || W->dims[1] * c->group != c->C || Y->dims[1] != c->K)
      st = ait_err(AIT_E_SHAPE, "cuda: Conv channels do not match the filter and groups");
  }
  if (!st) st = pad_of(n, 0, 3, c->D, c->OD, c->T, c->str_d, c->dil_d, &c->pad_d);
  if (!st) st = pad_of(n, 1, 3, c->H, c->OH, c->R, c->str_h, c->dil_h, &c->pad_h);
  if (!st) st = pad_of(n, 2, 3, c->W, c->OW, c->S, c->str_w, c->dil_w, &c->pad_w);
  if (!st) st = cu_const_weight(pl, n->in[1], c->nhwc ? CU_W_KRSC : CU_W_STORE, &c->w);
  if (!st && n->n_in > 2 && n->in[2] >= 0) {
    const ait_tensor *b = pl->g->values[n->in[2]].init;
    if (!b || ait_tensor_numel(b) != c->K)
      st = ait_err(AIT_E_UNSUPPORTED, "cuda: Conv bias must be a constant of %lld values",
                   (long long)c->K);
    if (!st) st = cu_const_weight(pl, n->in[2], CU_W_STORE, &c->bias);
    void *f = NULL;
    if (!st) st = cu_const_weight(pl, n->in[2], CU_W_F32, &f);
    c->bias_f32 = f;
  }
  bool fused_node = !strcmp(n->domain, AIT_FUSED_DOMAIN);
  if (!st && fused_node) {
    ait_act a;
    st = ait_act_parse(n, &a);
    if (!st) cu_act_code(&a, &c->act, c->ap);
  }
  int zb = -1;
  if (!st && fused_node && n->n_in > 3 && n->in[3] >= 0) {
    int z;
    st = cu_in(pl, n->in[3], CU_PLAIN, &z);
    const cu_tensor *Z = &pl->p->t[z], *Y = &pl->p->t[c->y];
    bool same = !st && Z->rank == 5 && !c->nhwc;
    for (int k = 0; same && k < 5; k++)
      same = Z->dims[k] == Y->dims[k];
    if (same)
      c->z = z;
    else
      zb = z;
  }
  int act = c->act;
  float ap[2] = {c->ap[0], c->ap[1]};
  if (zb >= 0) c->act = CUK_COPY;
  c->can_fuse = c->act == CUK_RELU || (c->act == CUK_COPY && (c->bias || c->z >= 0));
  if (!st && c->can_fuse && !c->bias) {
    int64_t K = c->K;
    size_t es = ait_elem_size(pl->p->t[c->y].dt);
    void *zeros = calloc((size_t)K, es);
    st = zeros ? cu_const_raw(pl, pl->p->t[c->y].dt, 1, &K, zeros, &c->zero)
               : ait_err(AIT_E_NOMEM, "cuda: out of memory");
    free(zeros);
  }
  if (st) {
    free(c);
    return st;
  }
  snprintf(c->key, sizeof c->key,
           "conv3|%s|%s|%s|x%lldx%lldx%lldx%lldx%lld|w%lldx%lldx%lldx%lld|g%d|p%d,%d,%d|s%d,%d,%d|"
           "d%d,%d,%d|%s",
           cu_prec_name(s->o.prec), ait_dtype_name(pl->p->t[c->y].dt), c->nhwc ? "ndhwc" : "ncdhw",
           (long long)c->N, (long long)c->C, (long long)c->D, (long long)c->H, (long long)c->W,
           (long long)c->K, (long long)c->T, (long long)c->R, (long long)c->S, c->group, c->pad_d,
           c->pad_h, c->pad_w, c->str_d, c->str_h, c->str_w, c->dil_d, c->dil_h, c->dil_w,
           c->act == CUK_RELU ? "relu"
           : c->can_fuse      ? "id"
                              : "split");
  int x = c->x, y = c->y, z = c->z, zero = c->zero;
  cu_step *stp;
  AIT_TRY(cu_step_add(pl, (int)(n - pl->g->nodes), n->op_type, conv_run, c, &stp));
  stp->prep = conv_prep;
  stp->release = conv_release;
  cu_step_use(stp, x);
  cu_step_use(stp, y);
  cu_step_use(stp, z);
  cu_step_use(stp, zero);
  if (yg >= 0) { /* NDHWC [N, OD, OH, OW, K] into the graph's NCDHW */
    int64_t OD = c->OD, OH = c->OH, OW = c->OW, K = c->K;
    int64_t ys[5] = {OD * OH * OW * K, 1, OH * OW * K, OW * K, K};
    AIT_TRY(cu_emit_copy(pl, (int)(n - pl->g->nodes), "Conv 3-D layout", y, yg, 0, ys));
    y = yg;
  }
  if (zb < 0) return AIT_OK;
  int in[2] = {y, zb};
  return cu_emit_eltwise(pl, (int)(n - pl->g->nodes), "Conv residual", CUK_ADD, NULL, in, 2, y, act,
                         ap, 1.0f);
}

/* Node n is a 1-D convolution (a constant rank-3 filter). */
static bool is_conv1d(const ait_graph *g, const ait_node *n) {
  if (!ait_is_op_in(n, "", "Conv") && !ait_is_op_in(n, AIT_FUSED_DOMAIN, "FusedConv")) return false;
  if (n->n_in < 2 || n->in[1] < 0) return false;
  const ait_tensor *w = g->values[n->in[1]].init;
  return w && w->rank == 3;
}

/* The image of a rank-3 value (cuda_impl.h). wav2vec2's feature extractor
 * is seven 1-D convolutions in a row and a GroupNorm: at batch 32, Round 9
 * spent 1 ms of 3.6 on the layout round trips between them. */
int cu_conv1d_image(cu_planner *pl, int v) {
  int t = pl->p->vt[CU_NHWC][v];
  if (t < 0 || pl->g->values[v].rank != 3) return -1;
  const cu_tensor *T = &pl->p->t[t];
  return T->rank == 4 && T->layout == CU_NHWC && T->dims[2] == 1 ? t : -1;
}

bool cu_transpose_021(const ait_graph *g, const ait_node *n) {
  if (!ait_is_op_in(n, "", "Transpose") || n->n_in < 1 || n->in[0] < 0 || n->n_out < 1 ||
      n->out[0] < 0 || g->values[n->in[0]].rank != 3 || g->values[n->out[0]].rank != 3)
    return false;
  int cnt = 0;
  const int64_t *perm = ait_attr_ints(n, "perm", &cnt);
  return cnt == 3 && perm[0] == 0 && perm[1] == 2 && perm[2] == 1;
}

/* Node n reads the image of its data when there is one: a 1-D convolution,
 * an InstanceNormalization of rank-3 data (cu_lower_instnorm), or a
 * Transpose to [N, L, C], whose result is the image's bytes
 * (cu_lower_transpose). */
static bool image_reader(const ait_graph *g, const ait_node *n) {
  if (ait_is_op_in(n, "", "InstanceNormalization") ||
      ait_is_op_in(n, AIT_FUSED_DOMAIN, "FusedInstanceNorm"))
    return n->n_in > 0 && n->in[0] >= 0 && g->values[n->in[0]].rank == 3;
  return is_conv1d(g, n) || cu_transpose_021(g, n);
}

bool cu_conv1d_readers_only(const cu_planner *pl, int v) {
  const ait_graph *g = pl->g;
  for (int k = 0; k < g->n_outputs; k++)
    if (g->outputs[k] == v) return false;
  int readers = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    const ait_node *n = &g->nodes[i];
    for (int a = 0; a < n->n_attrs; a++)
      if (n->attrs[a].type == AIT_ATTR_GRAPH) return false; /* a body may read v */
    for (int k = 0; k < n->n_in; k++) {
      if (n->in[k] != v) continue;
      if (k != 0 || !image_reader(g, n) || (pl->role && pl->role[i] != CU_ROLE_NONE)) return false;
      readers++;
    }
  }
  return readers > 0;
}

/* A 1-D convolution's NHWC result y into y4, the [N, K, 1, L] view of the
 * graph's [N, K, L] (-1: not needed, or 2-D), by a layout step. */
static ait_status conv1d_back(cu_planner *pl, const ait_node *n, int y, int y4) {
  if (y4 < 0 || y == y4) return AIT_OK;
  int64_t ys[4];
  cu_strides(&pl->p->t[y], ys);
  return cu_emit_copy(pl, (int)(n - pl->g->nodes), "Conv 1-D layout", y, y4, 0, ys);
}

/* A 1-D convolution (a rank-3 filter) runs as a 2-D one of height 1, in
 * NCHW: its [N, C, L] input and output are viewed as [N, C, 1, L], the
 * [K, C / group, k] filter as [K, C / group, 1, k] (the same bytes). */
ait_status cu_lower_conv(cu_planner *pl, const ait_node *n) {
  cu_state *s = pl->s;
  const ait_value *wv = &pl->g->values[n->in[1]];
  if (!wv->init || wv->init->rank < 3 || wv->init->rank > 5)
    return ait_err(AIT_E_UNSUPPORTED, "cuda: Conv needs a constant 3-D, 4-D or 5-D filter");
  if (wv->init->rank == 5) return lower_conv3d(pl, n);
  bool one_d = wv->init->rank == 3;
  conv_prm *c = calloc(1, sizeof *c);
  if (!c) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
  c->z = c->zero = -1;
  c->act = CUK_COPY;
  c->D = c->T = c->OD = 1;
  c->nhwc = s->o.nhwc;
  cu_layout lay = c->nhwc ? CU_NHWC : CU_PLAIN;
  /* 1-D: the output as the graph sees it ([N, K, L]) and its [N, K, 1, L]
   * view, which a layout step fills from the NHWC result. Under NHWC the
   * data may be the channels-last image of the previous 1-D convolution,
   * and the graph's form of the output is made only when something other
   * than 1-D convolutions (or a residual of this one) reads it. */
  int y3 = -1, y4 = -1;
  bool chain = one_d && c->nhwc;
  /* a SiLU or HardSwish after it as its activation (cu_find_gates),
   * writing the gate's value */
  int gate_op = CUK_COPY;
  float gate_p[2] = {0, 0};
  int gate_y = !one_d && pl->role && pl->role[n - pl->g->nodes] == CU_ROLE_CONV_GATE
                   ? cu_gate_after_conv(pl, n->out[0], &gate_op, gate_p)
                   : -1;
  int out_v = gate_y >= 0 ? gate_y : n->out[0];
  int img = chain ? cu_conv1d_image(pl, n->in[0]) : -1;
  bool residual = n->n_in > 3 && n->in[3] >= 0;
  bool plain_out = !chain || residual || !cu_conv1d_readers_only(pl, n->out[0]);
  ait_status st = AIT_OK;
  if (img >= 0)
    c->x = img;
  else
    st = cu_in(pl, n->in[0], one_d ? CU_PLAIN : lay, &c->x);
  if (!st && plain_out) st = cu_out(pl, out_v, one_d ? CU_PLAIN : lay, one_d ? &y3 : &c->y);
  if (!st && one_d) {
    const cu_tensor *X = &pl->p->t[c->x];
    const ait_value *ov = &pl->g->values[n->out[0]];
    if ((img < 0 && X->rank != 3) || ov->rank != 3) {
      st = ait_err(AIT_E_UNSUPPORTED, "cuda: a 1-D convolution of rank-%d data", X->rank);
    } else if (ov->dims[0].v < 0 || ov->dims[1].v < 0 || ov->dims[2].v < 0) {
      st = ait_err(AIT_E_SHAPE, "cuda: the shape of '%s' is not known for these input shapes",
                   ov->name);
    } else {
      ait_dtype dt = X->dt;
      int64_t yd[4] = {ov->dims[0].v, ov->dims[1].v, 1, ov->dims[2].v};
      if (img < 0) {
        int64_t xd[4] = {X->dims[0], X->dims[1], 1, X->dims[2]};
        st = cu_view_dims(pl, c->x, 4, xd, &c->x);
        /* one channel (wav2vec2's waveform): NCHW and NHWC are the same bytes */
        if (!st && c->nhwc)
          st = xd[1] == 1 ? cu_view_as(pl, c->x, 4, xd, CU_NHWC, -1, &c->x)
                          : cu_convert(pl, c->x, dt, CU_NHWC, &c->x);
      }
      if (!st && plain_out) st = cu_view_dims(pl, y3, 4, yd, &y4);
      if (!st) st = c->nhwc ? cu_temp(pl, dt, 4, yd, CU_NHWC, &c->y) : AIT_OK;
      if (!st && !c->nhwc) c->y = y4;
      if (!st && chain) pl->p->vt[CU_NHWC][n->out[0]] = c->y;
    }
  }
  if (!st && (pl->p->t[c->x].rank != 4 || pl->p->t[c->y].rank != 4))
    st = ait_err(AIT_E_UNSUPPORTED, "cuda: only 1-D and 2-D convolutions");
  if (!st) {
    const cu_tensor *X = &pl->p->t[c->x], *Y = &pl->p->t[c->y];
    const ait_tensor *W = wv->init;
    c->N = X->dims[0];
    c->C = X->dims[1];
    c->H = X->dims[2];
    c->W = X->dims[3];
    c->K = W->dims[0];
    c->R = one_d ? 1 : W->dims[2];
    c->S = one_d ? W->dims[2] : W->dims[3];
    c->OH = Y->dims[2];
    c->OW = Y->dims[3];
    c->group = (int)ait_attr_int(n, "group", 1);
    c->str_h = one_d ? 1 : (int)attr_at(n, "strides", 0, 1);
    c->str_w = (int)attr_at(n, "strides", one_d ? 0 : 1, 1);
    c->dil_h = one_d ? 1 : (int)attr_at(n, "dilations", 0, 1);
    c->dil_w = (int)attr_at(n, "dilations", one_d ? 0 : 1, 1);
    if (c->group < 1 || c->C % c->group || W->dims[1] * c->group != c->C || Y->dims[1] != c->K)
      st = ait_err(AIT_E_SHAPE, "cuda: Conv channels do not match the filter and groups");
  }
  if (one_d) {
    if (!st) st = pad_of(n, 0, 1, c->W, c->OW, c->S, c->str_w, c->dil_w, &c->pad_w);
  } else {
    if (!st) st = pad_of(n, 0, 2, c->H, c->OH, c->R, c->str_h, c->dil_h, &c->pad_h);
    if (!st) st = pad_of(n, 1, 2, c->W, c->OW, c->S, c->str_w, c->dil_w, &c->pad_w);
  }
  if (!st) st = cu_const_weight(pl, n->in[1], c->nhwc ? CU_W_KRSC : CU_W_STORE, &c->w);
  if (!st && n->n_in > 2 && n->in[2] >= 0) {
    const ait_tensor *b = pl->g->values[n->in[2]].init;
    if (!b || ait_tensor_numel(b) != c->K)
      st = ait_err(AIT_E_UNSUPPORTED, "cuda: Conv bias must be a constant of %lld values",
                   (long long)c->K);
    if (!st) st = cu_const_weight(pl, n->in[2], CU_W_STORE, &c->bias);
    void *f = NULL;
    if (!st) st = cu_const_weight(pl, n->in[2], CU_W_F32, &f);
    c->bias_f32 = f;
  }
  bool fused_node = !strcmp(n->domain, AIT_FUSED_DOMAIN);
  if (!st && fused_node) {
    ait_act a;
    st = ait_act_parse(n, &a);
    if (!st) cu_act_code(&a, &c->act, c->ap);
  }
  if (!st && gate_y >= 0) c->act = gate_op, c->ap[0] = gate_p[0], c->ap[1] = gate_p[1];
  int zb = -1; /* a residual that broadcasts: added after, with the activation */
  if (!st && fused_node && n->n_in > 3 && n->in[3] >= 0) {
    int z;
    st = cu_in(pl, n->in[3], lay, &z);
    const cu_tensor *Z = &pl->p->t[z], *Y = &pl->p->t[one_d ? y3 : c->y];
    bool same = !st && Z->rank == Y->rank && Z->layout == Y->layout;
    for (int k = 0; same && k < Y->rank; k++)
      same = Z->dims[k] == Y->dims[k];
    if (same && one_d) {
      int64_t zd[4] = {Z->dims[0], Z->dims[1], 1, Z->dims[2]};
      ait_dtype dt = Z->dt;
      st = cu_view_dims(pl, z, 4, zd, &z);
      if (!st && c->nhwc) st = cu_convert(pl, z, dt, CU_NHWC, &z);
    }
    if (same)
      c->z = z;
    else
      zb = z;
  }
  if (!st && zb < 0) {
    bool done = false;
    st = dw_offer(pl, n, wv->init, c, &done);
    if (!st && done) {
      int y = c->y;
      free(c);
      return conv1d_back(pl, n, y, y4);
    }
  }
  int act = c->act;
  float ap[2] = {c->ap[0], c->ap[1]};
  if (zb >= 0) c->act = CUK_COPY; /* the residual step applies it */
  c->can_fuse = c->act == CUK_RELU || (c->act == CUK_COPY && (c->bias || c->z >= 0));
  if (!st && c->can_fuse && !c->bias) {
    int64_t K = c->K;
    size_t es = ait_elem_size(pl->p->t[c->y].dt);
    void *zeros = calloc((size_t)K, es);
    st = zeros ? cu_const_raw(pl, pl->p->t[c->y].dt, 1, &K, zeros, &c->zero)
               : ait_err(AIT_E_NOMEM, "cuda: out of memory");
    free(zeros);
  }
  if (!st) st = gemm_offer(pl, n, wv->init, c);
  if (st) {
    cu_gemm_free(c->gm);
    free(c);
    return st;
  }
  snprintf(c->key, sizeof c->key,
           "conv|%s|%s|%s|x%lldx%lldx%lldx%lld|w%lldx%lldx%lld|g%d|p%d,%d|s%d,%d|d%d,%d|%s",
           cu_prec_name(s->o.prec), ait_dtype_name(pl->p->t[c->y].dt), c->nhwc ? "nhwc" : "nchw",
           (long long)c->N, (long long)c->C, (long long)c->H, (long long)c->W, (long long)c->K,
           (long long)c->R, (long long)c->S, c->group, c->pad_h, c->pad_w, c->str_h, c->str_w,
           c->dil_h, c->dil_w,
           c->act == CUK_RELU ? "relu"
           : c->can_fuse      ? "id"
                              : "split");
  int x = c->x, y = c->y, z = c->z, zero = c->zero;
  cu_step *stp;
  AIT_TRY(cu_step_add(pl, (int)(n - pl->g->nodes), n->op_type, conv_run, c, &stp));
  stp->prep = conv_prep;
  stp->release = conv_release;
  cu_step_use(stp, x);
  cu_step_use(stp, y);
  cu_step_use(stp, z);
  cu_step_use(stp, zero);
  cu_step_use(stp, c->col);
  if (c->gm) cu_gemm_uses(stp, c->gm);
  AIT_TRY(conv1d_back(pl, n, y, y4));
  if (zb < 0) return AIT_OK;
  if (one_d) y = y3; /* the residual broadcasts against the graph's [N, K, L] */
  int in[2] = {y, zb};
  return cu_emit_eltwise(pl, (int)(n - pl->g->nodes), "Conv residual", CUK_ADD, NULL, in, 2, y, act,
                         ap, 1.0f);
}

#endif
