/* dtype=fp8wo: fp8 weight-only GEMMs, as torchao's float8 weight-only on
 * Hopper. cuBLASLt has no bf16 x e4m3 GEMM, so each MatMul/Gemm weight that
 * is a constant matrix stays on the device as e4m3 codes (the weight's own
 * layout) with one float32 scale per output channel, and a step before the
 * GEMM dequantizes it (cuk_fp8wo_dequant: e4m3 * scale -> bf16) into an
 * arena temporary that the unchanged bf16 GEMM, with its fused epilogues,
 * reads as its B. The temporaries of successive GEMMs do not live at the
 * same time, so the arena places them over one another: it grows by about
 * the largest such weight. The point is memory (weights at rest take half
 * of bf16's bytes); every GEMM pays one extra pass over its weight.
 *
 * The codes are the quant backend's fp8wo bytes (ait_cuda_e4m3_channels);
 * a saved folder keeps them (cuda_fp8w.bin, cuda_save.c), so a loaded
 * model does not quantize again. */
#ifdef AIT_HAVE_CUDA

#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_impl.h"

bool cu_fp8wo_site(const ait_graph *g, const ait_node *n, bool *nk) {
  bool fused = !strcmp(n->domain, AIT_FUSED_DOMAIN), onnx = !n->domain[0];
  if (!fused && !onnx) return false;
  bool gemm = !strcmp(n->op_type, fused ? "FusedGemm" : "Gemm"),
       matmul = !strcmp(n->op_type, fused ? "FusedMatMul" : "MatMul");
  if ((!gemm && !matmul) || n->n_in < 2 || !nat_is_const(g, n->in[1])) return false;
  const ait_tensor *w = g->values[n->in[1]].init;
  if (w->rank != 2 || w->dims[0] < 1 || w->dims[1] < 1 ||
      (w->dtype != AIT_FLOAT32 && w->dtype != AIT_FLOAT16 && w->dtype != AIT_BFLOAT16))
    return false;
  *nk = gemm && ait_attr_int(n, "transB", 0) != 0;
  return true;
}

/* ---- images ------------------------------------------------------------- */

static int64_t out_channels(const ait_tensor *w, bool nk) { return nk ? w->dims[0] : w->dims[1]; }

static const ait_cuda_e4m3w *loaded(const cu_state *s, const char *name, bool nk) {
  for (int i = 0; i < s->n_wo; i++)
    if (s->wo[i].nk == nk && !strcmp(s->wo[i].name, name)) return &s->wo[i];
  return NULL;
}

ait_status cu_fp8wo_image(const cu_state *s, int v, bool nk, void **out, int64_t *bytes) {
  const ait_tensor *t = s->g->values[v].init;
  if (!t || t->rank != 2) return ait_err(AIT_E_SHAPE, "cuda: an fp8wo GEMM weight needs rank 2");
  int64_t n = ait_tensor_numel(t), off = cu_e4m3_scale_offset(n), N = out_channels(t, nk);
  *bytes = off + (int64_t)sizeof(float) * N;
  uint8_t *img = calloc(1, (size_t)*bytes);
  if (!img) return ait_err(AIT_E_NOMEM, "cuda: out of memory preparing weights");
  float *scale = (float *)(img + off);
  const ait_cuda_e4m3w *w = loaded(s, s->g->values[v].name, nk);
  if (w) { /* checked against the graph when it was read (cu_fp8wo_adopt) */
    memcpy(img, w->codes, (size_t)n);
    memcpy(scale, w->scale, sizeof(float) * (size_t)N);
    *out = img;
    return AIT_OK;
  }
  float *f = malloc(sizeof(float) * (size_t)n);
  ait_status st = f ? cu_host_convert(t->dtype, t->data, AIT_FLOAT32, f, n)
                    : ait_err(AIT_E_NOMEM, "cuda: out of memory preparing weights");
  if (!st) ait_cuda_e4m3_channels(f, t->dims[0], t->dims[1], nk, img, scale);
  free(f);
  if (st) {
    free(img);
    return st;
  }
  *out = img;
  return AIT_OK;
}

/* ---- the dequantization step ---------------------------------------------- */

typedef struct wo_prm {
  const unsigned char *q; /* e4m3 codes, the weight's layout (state memory) */
  const float *scale;     /* one per output channel, after the codes */
  int64_t rows, cols;
  bool nk; /* channels are rows */
  int t;   /* the bf16 temporary the GEMM reads */
} wo_prm;

static ait_status wo_run(cu_state *s, cu_plan *p, cu_step *st) {
  wo_prm *w = st->prm;
  return cu_check(
      cuk_fp8wo_dequant(s->stream, w->q, w->scale, w->rows, w->cols, w->nk, cu_ptr(p, w->t)),
      "fp8wo weight dequantization");
}

ait_status cu_fp8wo_operand(cu_planner *pl, const ait_node *n, int v, bool nk, int *t) {
  const ait_tensor *init = pl->s->g->values[v].init;
  void *dev;
  AIT_TRY(cu_weight_get(pl->s, v, nk ? CU_W_E4M3_CH_NK : CU_W_E4M3_CH_KN, &dev));
  AIT_TRY(cu_temp(pl, AIT_BFLOAT16, 2, init->dims, CU_PLAIN, t));
  pl->p->t[*t].value = v; /* named after the weight in plan descriptions */
  wo_prm *w = calloc(1, sizeof *w);
  if (!w) return ait_err(AIT_E_NOMEM, "cuda: out of memory planning");
  w->q = dev;
  w->scale = (const float *)((const char *)dev + cu_e4m3_scale_offset(ait_tensor_numel(init)));
  w->rows = init->dims[0];
  w->cols = init->dims[1];
  w->nk = nk;
  w->t = *t;
  cu_step *st;
  AIT_TRY(cu_step_add(pl, (int)(n - pl->g->nodes), "fp8wo dequant", wo_run, w, &st));
  cu_step_use(st, *t);
  return AIT_OK;
}

/* ---- save and load -------------------------------------------------------- */

/* The sites of s->g, one per (weight, layout), in graph order: value in
 * v[k], layout in nk[k] (arrays of s->g->n_nodes); their count. */
static int sites(const cu_state *s, int *v, bool *nk) {
  int n = 0;
  for (int i = 0; i < s->g->n_nodes; i++) {
    const ait_node *node = &s->g->nodes[i];
    bool lay, dup = false;
    if (!cu_fp8wo_site(s->g, node, &lay)) continue;
    for (int k = 0; k < n && !dup; k++)
      dup = v[k] == node->in[1] && nk[k] == lay;
    if (!dup) {
      v[n] = node->in[1];
      nk[n++] = lay;
    }
  }
  return n;
}

ait_status cu_fp8wo_collect(const cu_state *s, ait_cuda_e4m3w **out, int *n_out) {
  *out = NULL;
  *n_out = 0;
  int *sv = malloc(sizeof(int) * (size_t)(s->g->n_nodes + 1));
  bool *snk = malloc(sizeof(bool) * (size_t)(s->g->n_nodes + 1));
  int n = sv && snk ? sites(s, sv, snk) : -1;
  ait_cuda_e4m3w *w = n > 0 ? calloc((size_t)n, sizeof *w) : NULL;
  ait_status st = n < 0 || (n > 0 && !w) ? ait_err(AIT_E_NOMEM, "cuda: out of memory") : AIT_OK;
  for (int k = 0; !st && k < n; k++) {
    int v = sv[k];
    bool nk = snk[k];
    const ait_tensor *t = s->g->values[v].init;
    int64_t numel = ait_tensor_numel(t), N = out_channels(t, nk), bytes = 0;
    void *img = NULL;
    st = cu_fp8wo_image(s, v, nk, &img, &bytes);
    if (st) break;
    w[k].name = strdup(s->g->values[v].name);
    w[k].nk = nk;
    w[k].rows = t->dims[0];
    w[k].cols = t->dims[1];
    w[k].codes = malloc((size_t)numel);
    w[k].scale = malloc(sizeof(float) * (size_t)N);
    if (w[k].name && w[k].codes && w[k].scale) {
      memcpy(w[k].codes, img, (size_t)numel);
      memcpy(w[k].scale, (char *)img + cu_e4m3_scale_offset(numel), sizeof(float) * (size_t)N);
    } else {
      st = ait_err(AIT_E_NOMEM, "cuda: out of memory");
    }
    free(img);
  }
  free(sv);
  free(snk);
  if (st) {
    ait_cuda_e4m3w_free(w, n > 0 ? n : 0);
    return st;
  }
  *out = w;
  *n_out = n;
  return AIT_OK;
}

ait_status cu_fp8wo_adopt(cu_state *s, ait_cuda_e4m3w *w, int n, const char *path) {
  ait_status st = AIT_OK;
  for (int i = 0; !st && i < n; i++) {
    int v = -1;
    for (int k = 0; k < s->g->n_values && v < 0; k++)
      if (s->g->values[k].name && !strcmp(s->g->values[k].name, w[i].name)) v = k;
    const ait_tensor *t = v >= 0 && nat_is_const(s->g, v) ? s->g->values[v].init : NULL;
    if (!t)
      st = ait_err(AIT_E_INVALID_ARG, "cuda: %s holds weight '%s', which the saved graph lacks",
                   path, w[i].name);
    else if (t->rank != 2 || t->dims[0] != w[i].rows || t->dims[1] != w[i].cols)
      st = ait_err(AIT_E_INVALID_ARG, "cuda: %s: weight '%s' is %lld x %lld, the graph's is %s",
                   path, w[i].name, (long long)w[i].rows, (long long)w[i].cols,
                   t->rank == 2 ? "another shape" : "not a matrix");
    for (int j = 0; !st && j < i; j++)
      if (w[j].nk == w[i].nk && !strcmp(w[j].name, w[i].name))
        st = ait_err(AIT_E_PARSE, "cuda: %s holds weight '%s' twice", path, w[i].name);
  }
  int *sv = malloc(sizeof(int) * (size_t)(s->g->n_nodes + 1));
  bool *snk = malloc(sizeof(bool) * (size_t)(s->g->n_nodes + 1));
  int n_sites = sv && snk ? sites(s, sv, snk) : 0;
  if (!st && (!sv || !snk)) st = ait_err(AIT_E_NOMEM, "cuda: out of memory");
  for (int k = 0; !st && k < n_sites; k++) {
    bool found = false;
    for (int i = 0; i < n && !found; i++)
      found = w[i].nk == snk[k] && !strcmp(w[i].name, s->g->values[sv[k]].name);
    if (!found)
      st = ait_err(AIT_E_INVALID_ARG, "cuda: %s has no e4m3 copy of weight '%s'", path,
                   s->g->values[sv[k]].name);
  }
  free(sv);
  free(snk);
  if (st) {
    ait_cuda_e4m3w_free(w, n);
    return st;
  }
  ait_cuda_e4m3w_free(s->wo, s->n_wo);
  s->wo = w;
  s->n_wo = n;
  return AIT_OK;
}

#endif
