/* FusedConvNhwc: convolutions in channels-last layout (the layout pass,
 * native_layout.c, makes them). X [N, H, W, C], W [kh, kw, C/group, M]
 * (HWIO), bias [M], residual Z [N, OH, OW, M], activation none, Relu or
 * Clip (a clamp); with x_layout="NCHW" X is [N, C, H, W] (the first conv
 * of a chain reads the graph's input without a reorder). Three shapes of
 * conv have kernels:
 *   pointwise (1x1, stride 1, no padding): Y = X W as a GEMM whose rows are
 *     pixels; tasks over blocks of pixels, or over blocks of 64 channels
 *     when there are few pixels (the last layers at 7x7)
 *   depthwise 3x3 (one channel per group, dilation 1): tasks over output rows
 *   stem (group 1, dilation 1, any window): tasks over output rows
 * each on AVX-512 (native_nhwc512.c) when the CPU has it, else on the
 * portable loops below. Other convs go to the reference kernel. */
#include <math.h>
#include <string.h>

#include "backends/native/native.h"
#include "ops/nn_impl.h"

typedef enum { K_PW, K_DW, K_STEM } nhwc_kind;

typedef struct nhwc_job {
  const nat_nhwc *c;
  nhwc_kind kind;
  bool v512;
  int64_t rows, row_chunk, col_chunk, col_tasks;
} nhwc_job;

static NAT_INLINE float clampf(float v, float lo, float hi) {
  return v < lo ? lo : v > hi ? hi : v;
}

static bool force_portable;
void nat_nhwc_set_portable(bool on) { force_portable = on; }

/* ---- portable kernels ------------------------------------------------- */

NAT_CLONES static void pw_rows(const nat_nhwc *c, int64_t p0, int64_t p1, int64_t m0, int64_t m1) {
  for (int64_t p = p0; p < p1; p++) {
    const float *x = c->x + p * c->C;
    float *y = c->y + p * c->M;
    for (int64_t m = m0; m < m1; m++)
      y[m] = c->b ? c->b[m] : 0.0f;
    for (int64_t k = 0; k < c->C; k++) {
      const float xv = x[k], *w = c->w + k * c->M;
      for (int64_t m = m0; m < m1; m++)
        y[m] += xv * w[m];
    }
    const float *z = c->z ? c->z + p * c->M : NULL;
    for (int64_t m = m0; m < m1; m++)
      y[m] = clampf(z ? y[m] + z[m] : y[m], c->lo, c->hi);
  }
}

/* Output rows [r0, r1) of a window conv (depthwise when dw, else group 1):
 * per pixel, the taps inside the input. */
NAT_CLONES static void window_rows(const nat_nhwc *c, bool dw, int64_t r0, int64_t r1) {
  int64_t C = c->C, M = c->M;
  for (int64_t r = r0; r < r1; r++) {
    int64_t n = r / c->OH, oh = r % c->OH;
    for (int64_t ow = 0; ow < c->OW; ow++) {
      float *y = c->y + (r * c->OW + ow) * M;
      for (int64_t m = 0; m < M; m++)
        y[m] = c->b ? c->b[m] : 0.0f;
      for (int64_t ki = 0; ki < c->kh; ki++) {
        int64_t ih = oh * c->sh - c->pt + ki;
        if (ih < 0 || ih >= c->H) continue;
        for (int64_t kj = 0; kj < c->kw; kj++) {
          int64_t iw = ow * c->sw - c->pl + kj;
          if (iw < 0 || iw >= c->W) continue;
          const float *x = c->x + n * c->xs_n + ih * c->xs_h + iw * c->xs_w;
          const float *w = c->w + (ki * c->kw + kj) * (dw ? 1 : C) * M;
          if (dw) {
            for (int64_t m = 0; m < M; m++)
              y[m] += x[m] * w[m];
          } else {
            for (int64_t ci = 0; ci < C; ci++)
              for (int64_t m = 0; m < M; m++)
                y[m] += x[ci * c->xs_c] * w[ci * M + m];
          }
        }
      }
      const float *z = c->z ? c->z + (r * c->OW + ow) * M : NULL;
      for (int64_t m = 0; m < M; m++)
        y[m] = clampf(z ? y[m] + z[m] : y[m], c->lo, c->hi);
    }
  }
}

/* ---- tasks --------------------------------------------------------------- */

static void nhwc_task(void *arg, int64_t t, int tid) {
  const nhwc_job *j = arg;
  const nat_nhwc *c = j->c;
  int64_t rt = t / j->col_tasks, ct = t % j->col_tasks;
  int64_t r0 = rt * j->row_chunk, r1 = r0 + j->row_chunk < j->rows ? r0 + j->row_chunk : j->rows;
  int64_t m0 = ct * j->col_chunk, m1 = m0 + j->col_chunk < c->M ? m0 + j->col_chunk : c->M;
  if (r0 >= r1 || m0 >= m1) return;
  switch (j->kind) {
  case K_PW:
    if (j->v512)
      nat_nhwc512_pw(c, r0, r1, m0, m1);
    else
      pw_rows(c, r0, r1, m0, m1);
    break;
  case K_DW:
    if (j->v512 && c->kh == 3 && c->kw == 3)
      nat_nhwc512_dw(c, r0, r1);
    else
      window_rows(c, true, r0, r1);
    break;
  case K_STEM:
    if (j->v512)
      nat_nhwc512_stem(c, r0, r1);
    else
      window_rows(c, false, r0, r1);
    break;
  }
}

/* ---- the kernel ------------------------------------------------------------ */

static ait_status setup(const ait_node *n, const ait_tensor *const *in, int n_in, nat_nhwc *c,
                        nhwc_kind *kind) {
  const ait_tensor *X = in[0], *Wt = n_in > 1 ? in[1] : NULL, *B = n_in > 2 ? in[2] : NULL;
  const ait_tensor *Z = n_in > 3 ? in[3] : NULL;
  if (!X || !Wt || X->dtype != AIT_FLOAT32 || Wt->dtype != AIT_FLOAT32 || X->rank != 4 ||
      Wt->rank != 4)
    return AIT_E_UNSUPPORTED;
  memset(c, 0, sizeof *c);
  int64_t group = ait_attr_int(n, "group", 1);
  bool nchw = !strcmp(ait_attr_str(n, "x_layout", "NHWC"), "NCHW");
  if (nchw) {
    c->N = X->dims[0], c->C = X->dims[1], c->H = X->dims[2], c->W = X->dims[3];
    c->xs_c = c->H * c->W, c->xs_h = c->W, c->xs_w = 1;
  } else {
    c->N = X->dims[0], c->H = X->dims[1], c->W = X->dims[2], c->C = X->dims[3];
    c->xs_c = 1, c->xs_w = c->C, c->xs_h = c->W * c->C;
  }
  c->xs_n = c->H * c->W * c->C;
  c->kh = Wt->dims[0], c->kw = Wt->dims[1], c->M = Wt->dims[3];
  int64_t sp[2] = {c->H, c->W}, k[2] = {c->kh, c->kw};
  nn_win w;
  if (nn_win_conv(n, 2, sp, k, false, true, &w) != AIT_OK) {
    ait_err_clear();
    return AIT_E_UNSUPPORTED;
  }
  if (w.d[0] != 1 || w.d[1] != 1) return AIT_E_UNSUPPORTED;
  c->OH = w.out[0], c->OW = w.out[1], c->sh = w.s[0], c->sw = w.s[1];
  c->pt = w.pb[0], c->pl = w.pb[1];
  if (group == 1 && Wt->dims[2] == c->C) {
    bool pw = c->kh == 1 && c->kw == 1 && c->sh == 1 && c->sw == 1 && !c->pt && !c->pl &&
              c->OH == c->H && c->OW == c->W;
    *kind = pw && !nchw ? K_PW : K_STEM;
  } else if (group == c->C && c->M == c->C && Wt->dims[2] == 1 && !nchw) {
    *kind = K_DW;
  } else {
    return AIT_E_UNSUPPORTED;
  }
  if (B && (B->dtype != AIT_FLOAT32 || ait_tensor_numel(B) != c->M)) return AIT_E_UNSUPPORTED;
  if (Z) {
    int64_t od[4] = {c->N, c->OH, c->OW, c->M};
    if (Z->dtype != AIT_FLOAT32 || Z->kind != AIT_KIND_TENSOR || Z->rank != 4 ||
        memcmp(Z->dims, od, sizeof od))
      return AIT_E_UNSUPPORTED;
    c->z = Z->data;
  }
  ait_act act;
  if (ait_act_parse(n, &act) != AIT_OK) {
    ait_err_clear();
    return AIT_E_UNSUPPORTED;
  }
  c->lo = -INFINITY, c->hi = INFINITY;
  if (act.kind == AIT_ACT_RELU)
    c->lo = 0.0f;
  else if (act.kind == AIT_ACT_CLIP)
    c->lo = act.p[0], c->hi = act.p[1];
  else if (act.kind != AIT_ACT_NONE)
    return AIT_E_UNSUPPORTED;
  c->x = X->data;
  c->w = Wt->data;
  c->b = B ? B->data : NULL;
  return AIT_OK;
}

ait_status nat_k_conv_nhwc(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  nat_nhwc c;
  nhwc_kind kind;
  ait_status st = setup(n, in, n_in, &c, &kind);
  if (st) return st;
  int64_t od[4] = {c.N, c.OH, c.OW, c.M};
  ait_tensor *Y;
  AIT_TRY(nat_output(r, 0, AIT_FLOAT32, 4, od, &Y));
  c.y = Y->data;
  if (c.N * c.OH * c.OW * c.M == 0) return AIT_OK;
  nhwc_job j = {&c, kind, !force_portable && nat_nhwc512_available(), 0, 0, c.M, 1};
  int64_t threads = nat_run_threads(r);
  double macs = (double)c.N * c.OH * c.OW * c.M * c.kh * c.kw * (kind == K_DW ? 1 : c.C);
  if (kind == K_PW) {
    j.rows = c.N * c.OH * c.OW;
    nat_nhwc_pw_tile(j.rows, c.M, &c.pw_mr, &c.pw_nv);
    int64_t bw = 16 * c.pw_nv;
    if (macs < NAT_PAR_MIN_MACS / 4 || threads < 2) {
      j.row_chunk = j.rows;
    } else if (j.rows >= 8 * c.pw_mr * threads) {
      j.row_chunk = (nat_chunk(r, j.rows, c.pw_mr) + c.pw_mr - 1) / c.pw_mr * c.pw_mr;
    } else { /* few pixels: split the channels in column blocks */
      int64_t blocks = (c.M + bw - 1) / bw, per = (blocks + 2 * threads - 1) / (2 * threads);
      j.row_chunk = j.rows;
      j.col_chunk = per * bw;
      j.col_tasks = (c.M + j.col_chunk - 1) / j.col_chunk;
    }
  } else {
    j.rows = c.N * c.OH;
    j.row_chunk = macs < NAT_PAR_MIN_MACS / 4 ? j.rows : nat_chunk(r, j.rows, 1);
  }
  int64_t tasks = (j.rows + j.row_chunk - 1) / j.row_chunk * j.col_tasks;
  nat_pool_run(nat_run_pool(r), tasks, nhwc_task, &j);
  return AIT_OK;
}
