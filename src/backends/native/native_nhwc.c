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
 * each on AVX-512 (native_nhwc512.c) or AVX2 (native_nhwc256.c) by the
 * run's level (nat_isa), else on the portable loops below (a table of
 * kernels per level, nhwc_levels). Other convs go to the reference kernel. */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "backends/native/native.h"
#include "backends/native/native_nhwc_post.h"
#include "backends/native/native_nhwc_stem3.h"
#include "ops/nn_impl.h"

typedef enum { K_PW, K_DW, K_STEM, K_WIN, K_DWK, K_GRP, K_STEM3 } nhwc_kind;

/* Rows split in row_tasks parts of whole units (pointwise: tiles of mr
 * pixels) as even as they come: part t has units [t U / n, (t+1) U / n). */
typedef struct nhwc_kernels nhwc_kernels;
typedef struct nhwc_job {
  const nat_nhwc *c;
  nhwc_kind kind;
  const nhwc_kernels *k;
  int64_t rows, unit, row_tasks, col_chunk, col_tasks;
} nhwc_job;

static NAT_INLINE float clampf(float v, float lo, float hi) {
  return v < lo ? lo : v > hi ? hi : v;
}

static bool force_portable, bands_reversed;
void nat_nhwc_set_portable(bool on) { force_portable = on; }
bool nat_nhwc_portable(void) { return force_portable; }
void nat_nhwc_set_bands_reversed(bool on) { bands_reversed = on; }

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
      float *y = c->y + ((r - c->y_r0) * c->OW + ow) * M;
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
      const float *z = c->z ? c->z + ((r - c->y_r0) * c->OW + ow) * M : NULL;
      for (int64_t m = 0; m < M; m++)
        y[m] = clampf(z ? y[m] + z[m] : y[m], c->lo, c->hi);
    }
  }
}

/* One output row of a depthwise 3x3 (as nat_nhwc512_dw_row). */
NAT_CLONES static void dw_row(const float *const rows[3], int64_t W, int64_t OW, int64_t C,
                              int64_t c0, int64_t c1, int64_t S, int64_t pl, const float *w,
                              const float *b, const float *z, float lo, float hi, float *y) {
  for (int64_t ow = 0; ow < OW; ow++) {
    float *yy = y + ow * C;
    for (int64_t m = c0; m < c1; m++)
      yy[m] = b ? b[m] : 0.0f;
    for (int ki = 0; ki < 3; ki++) {
      if (!rows[ki]) continue;
      for (int kj = 0; kj < 3; kj++) {
        int64_t iw = ow * S - pl + kj;
        if (iw < 0 || iw >= W) continue;
        const float *x = rows[ki] + iw * C, *wk = w + (3 * ki + kj) * C;
        for (int64_t m = c0; m < c1; m++)
          yy[m] += x[m] * wk[m];
      }
    }
    const float *zz = z ? z + ow * C : NULL;
    for (int64_t m = c0; m < c1; m++)
      yy[m] = clampf(zz ? yy[m] + zz[m] : yy[m], lo, hi);
  }
}

/* One output row of a depthwise K x K conv, any stride (as
 * nat_nhwc256_dwr_row: rows[k] NULL in the padding), the activation
 * past the clamp included. */
NAT_CLONES static void dwr_row(const float *const *rows, int K, int S, int64_t W, int64_t OW,
                               int64_t C, int64_t c0, int64_t c1, int64_t pl, const float *w,
                               const float *b, float lo, float hi, const ait_act *post, float *y) {
  for (int64_t ow = 0; ow < OW; ow++) {
    float *yy = y + ow * C;
    for (int64_t m = c0; m < c1; m++)
      yy[m] = b ? b[m] : 0.0f;
    for (int ki = 0; ki < K; ki++) {
      if (!rows[ki]) continue;
      for (int kj = 0; kj < K; kj++) {
        int64_t iw = ow * S - pl + kj;
        if (iw < 0 || iw >= W) continue;
        const float *x = rows[ki] + iw * C, *wk = w + ((int64_t)ki * K + kj) * C;
        for (int64_t m = c0; m < c1; m++)
          yy[m] += x[m] * wk[m];
      }
    }
    for (int64_t m = c0; m < c1; m++)
      yy[m] = clampf(yy[m], lo, hi);
    if (post) nat_act_f32(post, yy + c0, c1 - c0);
  }
}

/* Output pixels [p0, p1) and channels [m0, m1) of a group-1 window conv
 * on the unpacked HWIO weights, dilations included (the portable level of
 * K_WIN, and its fallback where the weights could not be packed). */
NAT_CLONES static void win_px(const nat_nhwc *c, int64_t p0, int64_t p1, int64_t m0, int64_t m1) {
  int64_t C = c->C, M = c->M, OHW = c->OH * c->OW, ldy = c->ldy > 0 ? c->ldy : M;
  int64_t dh = c->dh > 0 ? c->dh : 1, dw = c->dw > 0 ? c->dw : 1;
  for (int64_t p = p0; p < p1; p++) {
    int64_t n = p / OHW, oh = p % OHW / c->OW, ow = p % c->OW;
    float *y = c->y + (p - c->y_r0 * c->OW) * ldy;
    for (int64_t m = m0; m < m1; m++)
      y[m] = c->b ? c->b[m] : 0.0f;
    for (int64_t ki = 0; ki < c->kh; ki++) {
      int64_t ih = oh * c->sh - c->pt + ki * dh;
      if (ih < 0 || ih >= c->H) continue;
      for (int64_t kj = 0; kj < c->kw; kj++) {
        int64_t iw = ow * c->sw - c->pl + kj * dw;
        if (iw < 0 || iw >= c->W) continue;
        const float *x = c->x + n * c->xs_n + ih * c->xs_h + iw * c->xs_w;
        const float *w = c->w + (ki * c->kw + kj) * C * M;
        for (int64_t ci = 0; ci < C; ci++) {
          const float xv = x[ci * c->xs_c], *wc = w + ci * M;
          for (int64_t m = m0; m < m1; m++)
            y[m] += xv * wc[m];
        }
      }
    }
    const float *z = c->z ? c->z + p * M : NULL;
    for (int64_t m = m0; m < m1; m++)
      y[m] = clampf(z ? y[m] + z[m] : y[m], c->lo, c->hi);
  }
}

/* Output rows [r0, r1) of a depthwise conv of any window on the padded
 * input (as nat_nhwc256_dwk: every tap inside c->x). */
NAT_CLONES static void dwk_rows(const nat_nhwc *c, int64_t r0, int64_t r1) {
  int64_t C = c->C, dh = c->dh > 0 ? c->dh : 1, dw = c->dw > 0 ? c->dw : 1;
  for (int64_t r = r0; r < r1; r++) {
    int64_t n = r / c->OH, oh = r % c->OH;
    for (int64_t ow = 0; ow < c->OW; ow++) {
      float *y = c->y + ((r - c->y_r0) * c->OW + ow) * C;
      for (int64_t m = 0; m < C; m++)
        y[m] = c->b ? c->b[m] : 0.0f;
      for (int64_t ki = 0; ki < c->kh; ki++)
        for (int64_t kj = 0; kj < c->kw; kj++) {
          const float *x =
              c->x + ((n * c->H + oh * c->sh + ki * dh) * c->W + ow * c->sw + kj * dw) * C;
          const float *w = c->w + (ki * c->kw + kj) * C;
          for (int64_t m = 0; m < C; m++)
            y[m] += x[m] * w[m];
        }
      const float *z = c->z ? c->z + (r * c->OW + ow) * C : NULL;
      for (int64_t m = 0; m < C; m++)
        y[m] = clampf(z ? y[m] + z[m] : y[m], c->lo, c->hi);
    }
  }
}

static void dw_rows(const nat_nhwc *c, int64_t r0, int64_t r1) { window_rows(c, true, r0, r1); }
static void stem_rows(const nat_nhwc *c, int64_t r0, int64_t r1) { window_rows(c, false, r0, r1); }
static void portable_tile(int64_t P, int64_t M, int *mr, int *nv) {
  nat_nhwc_pw_tile(P, M, mr, nv);
}

/* ---- kernels per level ----------------------------------------------------- */

typedef void (*pw_fn)(const nat_nhwc *c, int64_t p0, int64_t p1, int64_t m0, int64_t m1);
typedef void (*rows_fn)(const nat_nhwc *c, int64_t r0, int64_t r1);
typedef void (*dw_row_fn)(const float *const rows[3], int64_t W, int64_t OW, int64_t C, int64_t c0,
                          int64_t c1, int64_t S, int64_t pl, const float *w, const float *b,
                          const float *z, float lo, float hi, float *y);
typedef void (*tile_fn)(int64_t P, int64_t M, int *mr, int *nv);
typedef void (*dwr_row_fn)(const float *const *rows, int K, int S, int64_t W, int64_t OW, int64_t C,
                           int64_t c0, int64_t c1, int64_t pl, const float *w, const float *b,
                           float lo, float hi, const ait_act *post, float *y);
struct nhwc_kernels {
  pw_fn pw;
  rows_fn dw3, stem; /* dw3: depthwise 3x3 only */
  dw_row_fn dw_row;
  tile_fn tile;
  int lanes;   /* floats per vector of the tile */
  bool packed; /* the pointwise and window kernels read packed weights (wpk) */
  pw_fn win;   /* window convs (K_WIN), on packed weights where `packed` */
  tile_fn win_tile;
  rows_fn dwk; /* depthwise of any window (K_DWK) on a zero-padded input */
  /* SiLU, HardSigmoid, HardSwish past the clamp (native_nhwc_post.h; the
   * dwk kernels apply them themselves); NULL: nat_act_f32 */
  void (*post)(const nat_post *p, float *x, int64_t n);
  rows_fn dw1; /* 1x1 stride-1 unpadded depthwise (K_DWK); NULL: dwk */
  /* 3-channel stems on the NCHW input (native_nhwc_stem3.h); NULL: none */
  bool (*stem3_fits)(const nat_nhwc *c);
  rows_fn stem3;
  /* a depthwise K x K row of a block (K 3, 5, 7; stride 1, 2: the vector
   * levels' sliding rows), its activation past the clamp included */
  dwr_row_fn dwr_row;
};
/* The portable tile is the AVX-512 one's (it only sets the column blocks
 * of tasks and slices, as before there were levels). */
static const nhwc_kernels nhwc_levels[] = {
    [NAT_ISA_PORTABLE] = {pw_rows, dw_rows, stem_rows, dw_row, portable_tile, 16, false, win_px,
                          portable_tile, dwk_rows, NULL, NULL, NULL, NULL, dwr_row},
    [NAT_ISA_AVX2] = {nat_nhwc256_pw, nat_nhwc256_dw, nat_nhwc256_stem, nat_nhwc256_dw_row,
                      nat_nhwc256_pw_tile, 8, true, nat_nhwc256_win, nat_nhwc256_win_tile,
                      nat_nhwc256_dwk, nat_nhwc256_post, nat_nhwc256_dw1, nat_nhwc256_stem3_fits,
                      nat_nhwc256_stem3, nat_nhwc256_dwr_row},
    [NAT_ISA_AVX512] = {nat_nhwc512_pw, nat_nhwc512_dw, nat_nhwc512_stem, nat_nhwc512_dw_row,
                        nat_nhwc_pw_tile, 16, true, nat_nhwc512_win, nat_nhwc512_win_tile,
                        nat_nhwc512_dwk, nat_nhwc512_post, nat_nhwc512_dw1, nat_nhwc512_stem3_fits,
                        nat_nhwc512_stem3, nat_nhwc512_dwr_row},
};

int nat_nhwc_level(void) {
  return nat_nhwc512_available()   ? NAT_ISA_AVX512
         : nat_nhwc256_available() ? NAT_ISA_AVX2
                                   : NAT_ISA_PORTABLE;
}
bool nat_nhwc_available(void) { return nat_nhwc_level() > NAT_ISA_PORTABLE; }

/* The kernels of this run (the portable ones when a test forces them). */
static const nhwc_kernels *run_kernels(void) {
  return &nhwc_levels[force_portable ? NAT_ISA_PORTABLE : nat_nhwc_level()];
}

static const nhwc_kernels *level_kernels(int level) {
  return &nhwc_levels[level >= NAT_ISA_PORTABLE && level <= NAT_ISA_AVX512 ? level
                                                                           : NAT_ISA_PORTABLE];
}

/* c's register tile on kernels k for P pixels. */
static void set_tile(nat_nhwc *c, const nhwc_kernels *k, int64_t P) {
  k->tile(P, c->M, &c->pw_mr, &c->pw_nv);
  c->pw_bw = k->lanes * c->pw_nv;
}

void nat_nhwc_tile(nat_nhwc *c, int level, int64_t P) { set_tile(c, level_kernels(level), P); }

void nat_nhwc_pw(const nat_nhwc *c, int level, int64_t p0, int64_t p1, int64_t m0, int64_t m1) {
  level_kernels(level)->pw(c, p0, p1, m0, m1);
}

/* ---- tasks --------------------------------------------------------------- */

/* Rows [r0, r1) (pixels for K_PW and K_WIN, else output rows) and
 * channels [m0, m1) of job j, then its activation past the clamp. */
static void nhwc_range(const nhwc_job *j, int64_t r0, int64_t r1, int64_t m0, int64_t m1) {
  const nat_nhwc *c = j->c;
  nat_post pp;
  switch (j->kind) {
  case K_PW: j->k->pw(c, r0, r1, m0, m1); break;
  case K_WIN:
    if (c->wpk || !j->k->packed)
      j->k->win(c, r0, r1, m0, m1);
    else
      win_px(c, r0, r1, m0, m1);
    break;
  case K_DW:
    if (c->kh == 3 && c->kw == 3) {
      j->k->dw3(c, r0, r1);
      if (j->k->post && nat_post_of(c->post, &pp)) return; /* applied to each tile */
    } else {
      window_rows(c, true, r0, r1);
    }
    break;
  case K_STEM: j->k->stem(c, r0, r1); break;
  case K_STEM3: j->k->stem3(c, r0, r1); return; /* the activation too */
  case K_DWK:
    if (j->k->dw1 && c->kh == 1 && c->kw == 1 && c->sh == 1 && c->sw == 1 && c->H == c->OH &&
        c->W == c->OW) {
      j->k->dw1(c, r0, r1); /* a per-channel scale: pixels as one run */
    } else {
      j->k->dwk(c, r0, r1);
      if (j->k->post && nat_post_of(c->post, &pp)) return; /* applied to each tile */
    }
    break;
  case K_GRP: break; /* grp_task */
  }
  if (!c->post) return;
  /* the activation past the clamp, on the task's block while it is in cache */
  const ait_act *a = c->post;
  bool fast = j->k->post && nat_post_of(a, &pp);
  float *y;
  int64_t rows, n, ld;
  if (j->kind == K_PW || j->kind == K_WIN) {
    int64_t ldy = c->ldy > 0 ? c->ldy : c->M;
    y = c->y + (r0 - c->y_r0 * c->OW) * ldy + m0;
    if (m0 == 0 && m1 == c->M && ldy == c->M)
      rows = 1, n = (r1 - r0) * ldy, ld = 0;
    else
      rows = r1 - r0, n = m1 - m0, ld = ldy;
  } else {
    y = c->y + (r0 - c->y_r0) * c->OW * c->M, rows = 1, n = (r1 - r0) * c->OW * c->M, ld = 0;
  }
  for (int64_t i = 0; i < rows; i++, y += ld) {
    if (fast)
      j->k->post(&pp, y, n);
    else
      nat_act_f32(a, y, n);
  }
}

/* Outputs of one slice of a task with an activation past the clamp (floats):
 * the slice is activated right after it is written, from L2. A task's block
 * can be the whole conv on one thread (EfficientNet's first expansion: 5.5
 * MB of outputs written, then read back for SiLU from memory). */
#define NHWC_POST_FLOATS (1 << 16)

static void nhwc_task(void *arg, int64_t t, int tid) {
  const nhwc_job *j = arg;
  const nat_nhwc *c = j->c;
  int64_t rt = t / j->col_tasks, ct = t % j->col_tasks, U = (j->rows + j->unit - 1) / j->unit;
  int64_t r0 = rt * U / j->row_tasks * j->unit, r1 = (rt + 1) * U / j->row_tasks * j->unit;
  if (r1 > j->rows) r1 = j->rows;
  int64_t m0 = ct * j->col_chunk, m1 = m0 + j->col_chunk < c->M ? m0 + j->col_chunk : c->M;
  if (r0 >= r1 || m0 >= m1) return;
  if (!c->post) {
    nhwc_range(j, r0, r1, m0, m1);
    return;
  }
  /* slices of whole units (a pixel tile's rows; at least 8 of them), only
   * where the block would not stay in L2 and the weights, which each
   * slice reads again, are small beside it (EfficientNet's 8x8 layers
   * have 2.4 MB of weights for 0.5 MB of outputs: sliced, they ran 3%
   * slower at AVX2) */
  bool px = j->kind == K_PW || j->kind == K_WIN;
  int64_t per_row = px ? m1 - m0 : c->OW * c->M, unit = j->unit > 0 ? j->unit : 1;
  int64_t out = (r1 - r0) * per_row;
  int64_t wts = px ? (j->kind == K_WIN ? c->kh * c->kw : 1) * c->C * (m1 - m0) : 0;
  if (out <= 4 * NHWC_POST_FLOATS || 8 * wts > out) {
    nhwc_range(j, r0, r1, m0, m1);
    return;
  }
  int64_t step = NHWC_POST_FLOATS / (per_row > 0 ? per_row : 1) / unit * unit;
  if (step < (px ? 8 : 1) * unit) step = (px ? 8 : 1) * unit;
  for (int64_t s = r0; s < r1; s += step)
    nhwc_range(j, s, s + step < r1 ? s + step : r1, m0, m1);
}

/* ---- the kernel ------------------------------------------------------------ */

/* Input channels from which a group-1 window conv runs on the implicit
 * GEMM (K_WIN; below, per tap the rows are too short for its pointers to
 * pay, and the stem kernels run it). */
#define WIN_MIN_C 8

static ait_status setup(const ait_node *n, const ait_tensor *const *in, int n_in, nat_nhwc *c,
                        nhwc_kind *kind, ait_act *act) {
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
  bool dilated = w.d[0] != 1 || w.d[1] != 1;
  c->OH = w.out[0], c->OW = w.out[1], c->sh = w.s[0], c->sw = w.s[1];
  c->pt = w.pb[0], c->pl = w.pb[1];
  c->dh = w.d[0], c->dw = w.d[1];
  if (group == 1 && Wt->dims[2] == c->C) {
    bool pw = c->kh == 1 && c->kw == 1 && c->sh == 1 && c->sw == 1 && !c->pt && !c->pl &&
              c->OH == c->H && c->OW == c->W;
    *kind = pw && !nchw ? K_PW : K_WIN; /* few channels or NCHW: on a padded copy */
  } else if (group == c->C && c->M == c->C && Wt->dims[2] == 1 && !nchw) {
    *kind = c->kh == 3 && c->kw == 3 && !dilated ? K_DW : K_DWK;
  } else if (group > 1 && c->C % group == 0 && c->M % group == 0 && Wt->dims[2] == c->C / group) {
    *kind = K_GRP;
    c->group = group;
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
  if (ait_act_parse(n, act) != AIT_OK) {
    ait_err_clear();
    return AIT_E_UNSUPPORTED;
  }
  c->lo = -INFINITY, c->hi = INFINITY;
  if (act->kind == AIT_ACT_RELU)
    c->lo = 0.0f;
  else if (act->kind == AIT_ACT_CLIP)
    c->lo = act->p[0], c->hi = act->p[1];
  else if (act->kind != AIT_ACT_NONE)
    c->post = act; /* applied by the tasks after the clamp-free kernels */
  c->x = X->data;
  c->w = Wt->data;
  c->b = B ? B->data : NULL;
  return AIT_OK;
}

/* c's weights (input `input` of the running node, [C, M]) packed in slot
 * `slot` for its register tile: a constant is read by every tile as one
 * sequential stream instead of C rows M floats apart. Within a run the two
 * read alike from cache; the difference is the first read of each run,
 * which comes from DRAM on MobileNetV2, whose 14 MB of weights and
 * activations do not stay in this machine's share of L3 between runs
 * (the 7x7 blocks ran 1.03 ms in the model against 0.81 alone, 0.85
 * packed; the model 1.03-1.04x faster, paired in one process). Only the
 * vector tiles read packed weights. */
static void pack_pw(nat_run *r, nat_nhwc *c, int slot, int input, const nhwc_kernels *k) {
  if (k->packed) c->wpk = nat_pack_tiles(r, slot, input, c->w, c->C, c->M, c->pw_bw);
}

/* ---- window panels ---------------------------------------------------------- */

/* Bits k (k < taps) of the taps of a window axis whose input index
 * i0 + k d lies in [0, n). */
static uint64_t tap_mask(int64_t i0, int64_t d, int64_t taps, int64_t n) {
  uint64_t m = 0;
  for (int64_t k = 0; k < taps; k++)
    if ((uint64_t)(i0 + k * d) < (uint64_t)n) m |= (uint64_t)1 << k;
  return m;
}

void nat_win_panel_fill(const nat_nhwc *c, int64_t q0, int64_t q1, nat_win_panel *p) {
  int64_t OHW = c->OH * c->OW, n = q0 / OHW, o = q0 % OHW;
  int cnt = (int)(q1 - q0);
  int64_t dh = c->dh > 0 ? c->dh : 1, dw = c->dw > 0 ? c->dw : 1;
  bool cls = c->win_class && !c->win_rows && c->kh <= 32 && c->kw <= 32;
  int64_t xo[NAT_WIN_PANEL], ih[NAT_WIN_PANEL], iw[NAT_WIN_PANEL];
  int64_t *pxo = cls ? xo : p->xo, *pih = cls ? ih : p->ih, *piw = cls ? iw : p->iw;
  uint64_t key[NAT_WIN_PANEL];
  for (int i = 0; i < cnt; i++) {
    pxo[i] = n * c->xs_n;
    pih[i] = o / c->OW * c->sh - c->pt;
    piw[i] = o % c->OW * c->sw - c->pl;
    if (cls)
      key[i] = tap_mask(pih[i], dh, c->kh, c->H) | tap_mask(piw[i], dw, c->kw, c->W) << 32;
    else
      p->q[i] = q0 + i;
    if (++o == OHW) o = 0, n++;
  }
  p->seg[0] = 0;
  if (!cls) {
    p->seg[1] = cnt, p->nseg = 1;
    return;
  }
  /* a stable counting sort on the keys, in the order they first appear
   * (few: the map's edges in each direction and its interior) */
  uint64_t keys[NAT_WIN_PANEL];
  int nk = 0, of[NAT_WIN_PANEL], count[NAT_WIN_PANEL], last = 0;
  for (int i = 0; i < cnt; i++) {
    int k = last < nk && keys[last] == key[i] ? last : -1;
    for (int j = 0; k < 0 && j < nk; j++)
      if (keys[j] == key[i]) k = j;
    if (k < 0) keys[nk] = key[i], count[nk] = 0, k = nk++;
    of[i] = last = k;
    count[k]++;
  }
  int at[NAT_WIN_PANEL];
  for (int k = 0; k < nk; k++)
    at[k] = p->seg[k], p->seg[k + 1] = p->seg[k] + count[k];
  for (int i = 0; i < cnt; i++) {
    int j = at[of[i]]++;
    p->xo[j] = xo[i], p->ih[j] = ih[i], p->iw[j] = iw[i], p->q[j] = q0 + i;
  }
  p->nseg = nk;
}

/* Of the taps x output positions of one window axis, the share inside the
 * input. */
static double axis_inside(int64_t out, int64_t s, int64_t pad, int64_t d, int64_t taps, int64_t n) {
  int64_t in = 0;
  for (int64_t o = 0; o < out; o++)
    for (int64_t k = 0; k < taps; k++)
      in += (uint64_t)(o * s - pad + k * d) < (uint64_t)n;
  return out * taps > 0 ? (double)in / (double)(out * taps) : 1.0;
}

/* What c's window kernels cost over one image's pixels in panels of tiles
 * of `rows` pixels, in units of a tap of one pixel's reduction: per tile,
 * its taps where some pixel lies inside the input (the others are
 * skipped), each at rows + 1 (the multiply-adds and broadcasts grow with
 * the rows; the weight loads and the tap's pointers do not). */
static double win_cost(const nat_nhwc *c, int rows) {
  nat_win_panel p;
  int64_t OHW = c->OH * c->OW, dh = c->dh > 0 ? c->dh : 1, dw = c->dw > 0 ? c->dw : 1;
  double cost = 0;
  for (int64_t q0 = 0; q0 < OHW; q0 += NAT_WIN_PANEL) {
    nat_win_panel_fill(c, q0, q0 + NAT_WIN_PANEL < OHW ? q0 + NAT_WIN_PANEL : OHW, &p);
    for (int s = 0; s < p.nseg; s++)
      for (int t0 = p.seg[s]; t0 < p.seg[s + 1]; t0 += rows) {
        int t1 = t0 + rows < p.seg[s + 1] ? t0 + rows : p.seg[s + 1];
        for (int64_t ki = 0; ki < c->kh; ki++)
          for (int64_t kj = 0; kj < c->kw; kj++) {
            bool any = false;
            for (int t = t0; t < t1 && !any; t++)
              any = (uint64_t)(p.ih[t] + ki * dh) < (uint64_t)c->H &&
                    (uint64_t)(p.iw[t] + kj * dw) < (uint64_t)c->W;
            if (any) cost += t1 - t0 + 1;
          }
      }
  }
  return cost;
}

static _Atomic long long win_class_runs;
long long nat_win_class_runs(void) { return win_class_runs; }

/* Whether c's window conv (tiles of c->pw_mr pixels) runs its panels in
 * classes of in-bounds taps (nat_nhwc.win_class): where much of the
 * window lies in the padding (DeepLab's ASPP: dilation 12 on 14x14, 82%
 * of the taps) and the classes' partial tiles cost less than the taps
 * they skip (a 3x3 with padding 1 on 7x7 does not gain). */
static bool win_classes_pay(nat_nhwc *c) {
  if (c->win_rows || c->kh * c->kw < 2 || c->kh > 32 || c->kw > 32) return false;
  int64_t dh = c->dh > 0 ? c->dh : 1, dw = c->dw > 0 ? c->dw : 1;
  double inside = axis_inside(c->OH, c->sh, c->pt, dh, c->kh, c->H) *
                  axis_inside(c->OW, c->sw, c->pl, dw, c->kw, c->W);
  if (inside > 0.8) return false;
  c->win_class = false;
  double plain = win_cost(c, c->pw_mr);
  c->win_class = true;
  double classed = win_cost(c, c->pw_mr);
  c->win_class = false;
  if (!(classed < 0.9 * plain)) return false;
  win_class_runs++;
  return true;
}

/* Run a pointwise conv (c->x, c->y, c->z set; P = N*OH*OW pixels) on the
 * pool: blocks of pixels, or column blocks when there are few pixels. Its
 * weights are input `input` of the running node, packed in slot `slot`. */
static void gemm_like_launch(nat_run *r, const nat_nhwc *c, int64_t P, const nhwc_kernels *k,
                             nhwc_kind kind, int64_t K);

static void run_gemm_like(nat_run *r, nat_nhwc *c, int64_t P, const nhwc_kernels *k, nhwc_kind kind,
                          int slot, int input) {
  int64_t K = c->C;
  if (kind == K_WIN) {
    k->win_tile(P, c->M, &c->pw_mr, &c->pw_nv);
    c->pw_bw = k->lanes * c->pw_nv;
    K = c->kh * c->kw * c->C;
    if (k->packed) c->wpk = nat_pack_tiles(r, slot, input, c->w, K, c->M, c->pw_bw);
    if (k->packed) c->win_class = win_classes_pay(c);
  } else {
    set_tile(c, k, P);
    pack_pw(r, c, slot, input, k);
  }
  gemm_like_launch(r, c, P, k, kind, K);
}

/* c's P pixels (tile set, weights packed) over the pool; K: its reduction. */
static void gemm_like_launch(nat_run *r, const nat_nhwc *c, int64_t P, const nhwc_kernels *k,
                             nhwc_kind kind, int64_t K) {
  nhwc_job j = {c, kind, k, P, c->pw_mr, 1, c->M, 1};
  int64_t threads = nat_run_threads(r), tiles = (P + c->pw_mr - 1) / c->pw_mr;
  double macs = (double)P * c->M * K;
  int64_t bw = c->pw_bw;
  if (macs < NAT_PAR_MIN_MACS / 4 || threads < 2) {
    j.row_tasks = 1;
  } else if (tiles >= 8 * threads) {
    j.row_tasks = 4 * threads;
  } else { /* few pixels: column blocks, and the pixels in halves (a
            * handful of column blocks alone split unevenly over threads) */
    int64_t parts = tiles >= 2 ? 2 : 1;
    int64_t blocks = (c->M + bw - 1) / bw, per = blocks * parts / (4 * threads);
    if (per < 1) per = 1;
    j.row_tasks = parts;
    j.col_chunk = per * bw;
    j.col_tasks = (c->M + j.col_chunk - 1) / j.col_chunk;
  }
  nat_pool_run(nat_run_pool(r), j.row_tasks * j.col_tasks, nhwc_task, &j);
}

static void run_pw(nat_run *r, nat_nhwc *c, int64_t P, const nhwc_kernels *k, int slot, int input) {
  run_gemm_like(r, c, P, k, K_PW, slot, input);
}

/* y[i] = x[i] * s[i % C] over n = rows C floats. */
NAT_CLONES static void scale_rows(const float *x, const float *s, int64_t rows, int64_t C,
                                  float *y) {
  for (int64_t p = 0; p < rows; p++, x += C, y += C)
    for (int64_t i = 0; i < C; i++)
      y[i] = x[i] * s[i];
}

/* A pointwise conv of X scaled per image and channel by s [N][C] (a
 * squeeze-excite gate, the layout pass's fifth input): where an image has
 * more pixels than the weights' padded columns, on its own weights, the
 * packed ones with row k scaled by s[n][k] (C x M multiplies per image,
 * not H x W x C, and X read once, as stored: MobileNetV3's and
 * EfficientNet's projections on 28x28 and larger maps); else on a scaled
 * copy of X in scratch (what the Mul wrote, into memory the run reuses). */
static ait_status run_pw_scaled(nat_run *r, nat_nhwc *c, const float *s, const nhwc_kernels *k) {
  int64_t P = c->H * c->W, N = c->N, C = c->C, M = c->M;
  if (k->packed) {
    set_tile(c, k, P);
    int64_t bw = c->pw_bw, nb = (M + bw - 1) / bw;
    if (nb * bw <= P) pack_pw(r, c, NAT_DATA_TILES, 1, k);
    if (nb * bw <= P && c->wpk) {
      float *ws = nat_scratch(r, (int64_t)sizeof(float) * nb * bw * C);
      if (!ws) return AIT_E_NOMEM;
      for (int64_t n = 0; n < N; n++) {
        for (int64_t b = 0; b < nb; b++)
          for (int64_t kk = 0; kk < C; kk++) {
            const float *src = c->wpk + (b * C + kk) * bw;
            float *dst = ws + (b * C + kk) * bw, sk = s[n * C + kk];
            for (int64_t i = 0; i < bw; i++)
              dst[i] = src[i] * sk;
          }
        nat_nhwc v = *c;
        v.N = 1, v.wpk = ws;
        v.x = c->x + n * P * C, v.y = c->y + n * P * M, v.z = c->z ? c->z + n * P * M : NULL;
        gemm_like_launch(r, &v, P, k, K_PW, C);
      }
      return AIT_OK;
    }
  }
  float *xs = nat_scratch(r, (int64_t)sizeof(float) * N * P * C);
  if (!xs) return AIT_E_NOMEM;
  for (int64_t n = 0; n < N; n++)
    scale_rows(c->x + n * P * C, s + n * C, P, C, xs + n * P * C);
  c->x = xs;
  c->wpk = NULL;
  run_gemm_like(r, c, N * P, k, K_PW, NAT_DATA_TILES, 1);
  return AIT_OK;
}

/* Rows of the zero-padded copy of a depthwise conv's input (pad_job). */
typedef struct pad_job {
  const nat_nhwc *c;
  float *xp;
  int64_t Hp, Wp, rows, per_task;
} pad_job;

static void pad_task(void *arg, int64_t t, int tid) {
  const pad_job *j = arg;
  const nat_nhwc *c = j->c;
  int64_t C = c->C;
  for (int64_t r = t * j->per_task; r < (t + 1) * j->per_task && r < j->rows; r++) {
    int64_t n = r / j->Hp, ih = r % j->Hp - c->pt;
    float *d = j->xp + r * j->Wp * C;
    if (ih < 0 || ih >= c->H) {
      memset(d, 0, sizeof(float) * (size_t)(j->Wp * C));
      continue;
    }
    int64_t right = j->Wp - c->pl - c->W;
    memset(d, 0, sizeof(float) * (size_t)(c->pl * C));
    const float *x = c->x + n * c->xs_n + ih * c->xs_h;
    if (c->xs_c == 1 && c->xs_w == C) {
      memcpy(d + c->pl * C, x, sizeof(float) * (size_t)(c->W * C));
    } else { /* an NCHW input: reordered on the way, each plane's row read in turn */
      float *o = d + c->pl * C;
      for (int64_t ci = 0; ci < C; ci++) {
        const float *xc = x + ci * c->xs_c;
        for (int64_t iw = 0; iw < c->W; iw++)
          o[iw * C + ci] = xc[iw * c->xs_w];
      }
    }
    if (right > 0) memset(d + (c->pl + c->W) * C, 0, sizeof(float) * (size_t)(right * C));
  }
}

/* c's input copied into scratch with its zero padding (every window of
 * every output inside it); c then reads the copy, unpadded. `extra` floats
 * of the same scratch after the copy are the caller's (*extra_at; a later
 * nat_scratch would reuse the copy's memory). */
static ait_status pad_input_ex(nat_run *r, nat_nhwc *c, int64_t extra, float **extra_at) {
  int64_t dh = c->dh > 0 ? c->dh : 1, dw = c->dw > 0 ? c->dw : 1;
  int64_t Hp = (c->OH - 1) * c->sh + (c->kh - 1) * dh + 1,
          Wp = (c->OW - 1) * c->sw + (c->kw - 1) * dw + 1;
  if (Hp < c->H + c->pt) Hp = c->H + c->pt;
  if (Wp < c->W + c->pl) Wp = c->W + c->pl;
  if (Hp == c->H && Wp == c->W && !c->pt && !c->pl && c->xs_c == 1 && !extra)
    return AIT_OK; /* no padding: read as it is */
  pad_job j = {c, NULL, Hp, Wp, c->N * Hp, 0};
  int64_t copy = (c->N * Hp * Wp * c->C + 15) / 16 * 16;
  j.xp = nat_scratch(r, (int64_t)sizeof(float) * (copy + extra));
  if (!j.xp) return AIT_E_NOMEM;
  if (extra_at) *extra_at = j.xp + copy;
  j.per_task = nat_chunk(r, j.rows, 16384 / (Wp * c->C) + 1);
  nat_pool_run(nat_run_pool(r), (j.rows + j.per_task - 1) / j.per_task, pad_task, &j);
  c->x = j.xp;
  c->H = Hp, c->W = Wp, c->pt = c->pl = 0;
  c->xs_n = Hp * Wp * c->C, c->xs_h = Wp * c->C, c->xs_w = c->C, c->xs_c = 1;
  return AIT_OK;
}

static ait_status pad_input(nat_run *r, nat_nhwc *c) { return pad_input_ex(r, c, 0, NULL); }

/* A stride-s 1x1 conv without padding (ResNet's and ResNeXt's stride-2
 * downsamples) as a pointwise one: its input pixels at the stride gathered
 * into an N OH OW x C copy (a quarter of the input: row copies of C floats),
 * on which the pointwise tiles run where the window kernel's panels
 * gathered the same pixels tile by tile. */
typedef struct gather_job {
  const nat_nhwc *c;
  float *xg;
  int64_t rows, per_task;
} gather_job;

static void gather_task(void *arg, int64_t t, int tid) {
  const gather_job *j = arg;
  const nat_nhwc *c = j->c;
  (void)tid;
  for (int64_t r = t * j->per_task; r < (t + 1) * j->per_task && r < j->rows; r++) {
    int64_t n = r / c->OH, oh = r % c->OH;
    const float *x = c->x + n * c->xs_n + oh * c->sh * c->xs_h;
    float *d = j->xg + r * c->OW * c->C;
    for (int64_t ow = 0; ow < c->OW; ow++)
      memcpy(d + ow * c->C, x + ow * c->sw * c->xs_w, sizeof(float) * (size_t)c->C);
  }
}

/* Whether c is a stride-s 1x1 conv, unpadded and undilated, on an NHWC
 * input of whole pixels: gather_strided makes it a pointwise one. */
static bool strided_pw(const nat_nhwc *c) {
  int64_t dh = c->dh > 0 ? c->dh : 1, dw = c->dw > 0 ? c->dw : 1;
  return c->kh == 1 && c->kw == 1 && (c->sh > 1 || c->sw > 1) && !c->pt && !c->pl && dh == 1 &&
         dw == 1 && c->xs_c == 1 && c->xs_w == c->C && c->C >= WIN_MIN_C &&
         c->OH == (c->H - 1) / c->sh + 1 && c->OW == (c->W - 1) / c->sw + 1;
}

static ait_status gather_strided(nat_run *r, nat_nhwc *c) {
  gather_job j = {c, NULL, c->N * c->OH, 0};
  j.xg = nat_scratch(r, (int64_t)sizeof(float) * ((j.rows * c->OW * c->C + 15) / 16 * 16));
  if (!j.xg) return AIT_E_NOMEM;
  j.per_task = nat_chunk(r, j.rows, 16384 / (c->OW * c->C) + 1);
  nat_pool_run(nat_run_pool(r), (j.rows + j.per_task - 1) / j.per_task, gather_task, &j);
  c->x = j.xg;
  c->H = c->OH, c->W = c->OW, c->sh = c->sw = 1;
  c->xs_n = c->OH * c->OW * c->C, c->xs_h = c->OW * c->C, c->xs_w = c->C, c->xs_c = 1;
  return AIT_OK;
}

/* ---- grouped convs ---------------------------------------------------------

 * Each group is a window conv of its Cg input channels into its Mg output
 * channels: the implicit GEMM of native_nhwc_win*.c on a view of X (channel
 * offset, pixel stride C) and Y (offset, pixel stride M). Groups narrower
 * than a vector are merged f at a time into one of f Cg inputs and f Mg
 * outputs whose weights are block-diagonal (zeros between groups: f times
 * the multiply-adds, at the vector units' full width): ResNeXt's first
 * stage, 4 channels a group, runs on the AVX2 tiles as pairs. At the
 * AVX-512 level groups under 16 channels take the AVX2 tiles, which waste
 * less on them. Weights packed once per node, per merged group in column
 * blocks of the tile's width. */
typedef struct grp_job {
  nat_nhwc c;            /* the whole conv; per merged group a view of it */
  const nhwc_kernels *k; /* the tiles' level */
  const float *wpk;      /* packed: merged group g at g * gstride */
  int64_t f, G, Cg, Mg, gstride, rows, row_tasks, grp_chunk, grp_tasks;
  int tiles; /* 0, or the level of nat_nhwc*_grp's tiles over several groups */
  bool rot4; /* 4 channels a group in and out: nat_nhwc*_grp4, rotated lanes */
} grp_job;

/* Merged group g of j as a conv of its own. */
static nat_nhwc grp_view(const grp_job *j, int64_t g) {
  nat_nhwc v = j->c;
  int64_t Cm = j->f * j->Cg, Mm = j->f * j->Mg;
  v.x += g * Cm;
  v.C = Cm;
  v.M = Mm;
  v.ldy = j->c.M;
  v.ldz = j->c.M;
  v.y += g * Mm;
  v.b = j->c.b ? j->c.b + g * Mm : NULL;
  v.z = j->c.z ? j->c.z + g * Mm : NULL;
  v.wpk = j->wpk ? j->wpk + g * j->gstride : NULL;
  v.w = j->c.w + g * Mm; /* unpacked HWIO columns of the group (row stride M) */
  return v;
}

/* Pixels [p0, p1), output channels [m0, m1) of group view v on the portable
 * level: HWIO weights with row stride ldw (the whole conv's M). */
NAT_CLONES static void grp_px(const nat_nhwc *v, int64_t ldw, int64_t p0, int64_t p1) {
  int64_t C = v->C, M = v->M, OHW = v->OH * v->OW;
  int64_t dh = v->dh > 0 ? v->dh : 1, dw = v->dw > 0 ? v->dw : 1;
  for (int64_t p = p0; p < p1; p++) {
    int64_t n = p / OHW, oh = p % OHW / v->OW, ow = p % v->OW;
    float *y = v->y + p * v->ldy;
    for (int64_t m = 0; m < M; m++)
      y[m] = v->b ? v->b[m] : 0.0f;
    for (int64_t ki = 0; ki < v->kh; ki++) {
      int64_t ih = oh * v->sh - v->pt + ki * dh;
      if (ih < 0 || ih >= v->H) continue;
      for (int64_t kj = 0; kj < v->kw; kj++) {
        int64_t iw = ow * v->sw - v->pl + kj * dw;
        if (iw < 0 || iw >= v->W) continue;
        const float *x = v->x + n * v->xs_n + ih * v->xs_h + iw * v->xs_w;
        const float *w = v->w + (ki * v->kw + kj) * C * ldw;
        for (int64_t ci = 0; ci < C; ci++)
          for (int64_t m = 0; m < M; m++)
            y[m] += x[ci] * w[ci * ldw + m];
      }
    }
    const float *z = v->z ? v->z + p * v->ldz : NULL;
    for (int64_t m = 0; m < M; m++)
      y[m] = clampf(z ? y[m] + z[m] : y[m], v->lo, v->hi);
  }
}

static void grp_task(void *arg, int64_t t, int tid) {
  const grp_job *j = arg;
  int64_t rt = t / j->grp_tasks, gt = t % j->grp_tasks, U = (j->rows + j->c.pw_mr - 1) / j->c.pw_mr;
  int64_t p0 = rt * U / j->row_tasks * j->c.pw_mr, p1 = (rt + 1) * U / j->row_tasks * j->c.pw_mr;
  if (p1 > j->rows) p1 = j->rows;
  int64_t g0 = gt * j->grp_chunk,
          g1 = g0 + j->grp_chunk < j->G / j->f ? g0 + j->grp_chunk : j->G / j->f;
  if (p0 >= p1 || g0 >= g1) return;
  if (j->tiles) {
    nat_grp gw = {&j->c, j->wpk, j->gstride, j->f * j->Cg, j->f * j->Mg};
    if (j->rot4 && j->tiles == NAT_ISA_AVX512)
      nat_nhwc512_grp4(&gw, p0, p1, g0, g1);
    else if (j->rot4)
      nat_nhwc256_grp4(&gw, p0, p1, g0, g1);
    else if (j->tiles == NAT_ISA_AVX512)
      nat_nhwc512_grp(&gw, p0, p1, g0, g1);
    else
      nat_nhwc256_grp(&gw, p0, p1, g0, g1);
  }
  for (int64_t g = g0; !j->tiles && g < g1; g++) {
    nat_nhwc v = grp_view(j, g);
    if (v.wpk)
      j->k->win(&v, p0, p1, 0, v.M);
    else
      grp_px(&v, j->c.M, p0, p1);
  }
  if (!j->c.post) return;
  int64_t Mm = j->f * j->Mg;
  for (int64_t p = p0; p < p1; p++)
    nat_act_f32(j->c.post, j->c.y + p * j->c.M + g0 * Mm, (g1 - g0) * Mm);
}

/* The block-diagonal packed weights of every merged group (grp_job). */
static const float *grp_pack(nat_run *r, const grp_job *j, int64_t bw) {
  if (!nat_input_is_const(r, 1)) return NULL;
  const nat_nhwc *c = &j->c;
  int64_t taps = c->kh * c->kw, Cm = j->f * j->Cg, Mm = j->f * j->Mg, K = taps * Cm;
  int64_t nb = (Mm + bw - 1) / bw, Gm = j->G / j->f;
  int64_t key[4] = {K, c->M, bw * 1024 + j->f, (int64_t)(intptr_t)c->w};
  bool fresh;
  float *p =
      nat_node_pack(r, NAT_DATA_CONV, key, sizeof(float) * (size_t)(Gm * nb * bw * K), &fresh);
  for (int64_t g = 0; p && fresh && g < Gm; g++)
    for (int64_t b = 0; b < nb; b++)
      for (int64_t k = 0; k < K; k++) {
        int64_t t = k / Cm, ci = k % Cm, jin = ci / j->Cg;
        float *d = p + g * j->gstride + (b * K + k) * bw;
        for (int64_t m = 0; m < bw; m++) {
          int64_t mm = b * bw + m, jout = mm / j->Mg;
          d[m] =
              mm < Mm && jin == jout
                  ? c->w[(t * j->Cg + ci % j->Cg) * c->M + (g * j->f + jout) * j->Mg + mm % j->Mg]
                  : 0.0f;
        }
      }
  return p;
}

/* The weights of groups of 4 inputs and 4 outputs for nat_nhwc*_grp4:
 * per block of L / 4 groups (L the lanes) and tap, 4 vectors W_r (r = 0..3)
 * with W_r[4 g + m] = w_g[(m + r) % 4][m], so that
 * y[4 g + m] = sum_r x[4 g + (m + r) % 4] W_r[4 g + m]: the input vector
 * rotated by r within each 4 lanes. */
static const float *grp_pack_rot4(nat_run *r, const nat_nhwc *c, int64_t L) {
  if (!nat_input_is_const(r, 1)) return NULL;
  int64_t taps = c->kh * c->kw, blocks = c->group / (L / 4);
  int64_t key[4] = {taps, c->M, -L, (int64_t)(intptr_t)c->w};
  bool fresh;
  float *p =
      nat_node_pack(r, NAT_DATA_CONV, key, sizeof(float) * (size_t)(blocks * taps * 4 * L), &fresh);
  for (int64_t b = 0; p && fresh && b < blocks; b++)
    for (int64_t t = 0; t < taps; t++)
      for (int64_t q = 0; q < 4; q++)
        for (int64_t l = 0; l < L; l++) {
          int64_t g = b * (L / 4) + l / 4, m = l % 4, ci = (m + q) % 4;
          p[((b * taps + t) * 4 + q) * L + l] = c->w[(t * 4 + ci) * c->M + g * 4 + m];
        }
  return p;
}

static _Atomic long long grp_tile_runs, grp4_runs;
long long nat_grp_tile_runs(void) { return grp_tile_runs; }
long long nat_grp4_runs(void) { return grp4_runs; }

static ait_status run_grouped(nat_run *r, nat_nhwc *c, int level) {
  grp_job j;
  memset(&j, 0, sizeof j);
  j.G = c->group, j.Cg = c->C / c->group, j.Mg = c->M / c->group;
  /* the tiles: AVX-512 for groups of 16+ output channels, else AVX2 */
  int lv = level == NAT_ISA_AVX512 && j.Mg < 16 ? NAT_ISA_AVX2 : level;
  j.k = level_kernels(lv);
  int64_t lanes = lv == NAT_ISA_PORTABLE ? 1 : j.k->lanes;
  j.f = 1;
  while (j.f * j.Mg < lanes && j.f < j.G) {
    j.f++;
    while (j.G % j.f)
      j.f++;
  }
  /* 4 channels a group in and out (ResNeXt's first stage): the tiles of
   * rotated lanes at the run's level, L / 4 groups a vector, no zeros */
  int64_t rl = level == NAT_ISA_AVX512 ? 16 : 8;
  if (level > NAT_ISA_PORTABLE && j.Cg == 4 && j.Mg == 4 && j.G % (rl / 4) == 0) {
    lv = level, j.k = level_kernels(lv), j.f = rl / 4, j.rot4 = true;
    j.tiles = lv;
  }
  int64_t Mm = j.f * j.Mg, P = c->N * c->OH * c->OW, Cm = j.f * j.Cg;
  /* merged groups of one or two vectors: tiles over several groups */
  if (j.rot4)
    c->pw_mr = lv == NAT_ISA_AVX512 ? nat_nhwc512_grp4_rows() : nat_nhwc256_grp4_rows(),
    c->pw_bw = (int)Mm;
  else if (lv == NAT_ISA_AVX512 && nat_nhwc512_grp_fits(Cm, Mm))
    j.tiles = NAT_ISA_AVX512, c->pw_mr = nat_nhwc512_grp_rows(Mm), c->pw_bw = (int)Mm;
  else if (lv == NAT_ISA_AVX2 && nat_nhwc256_grp_fits(Cm, Mm))
    j.tiles = NAT_ISA_AVX2, c->pw_mr = nat_nhwc256_grp_rows(Mm), c->pw_bw = (int)Mm;
  else
    j.k->win_tile(P, Mm, &c->pw_mr, &c->pw_nv), c->pw_bw = (int)(j.k->lanes * c->pw_nv);
  int64_t bw = c->pw_bw, K = c->kh * c->kw * j.f * j.Cg;
  j.gstride = (Mm + bw - 1) / bw * bw * K;
  if (lv != NAT_ISA_PORTABLE) c->win_class = win_classes_pay(c); /* each group's tiles alike */
  j.c = *c;
  if (j.rot4) j.gstride = c->kh * c->kw * 4 * rl;
  if (lv != NAT_ISA_PORTABLE) j.wpk = j.rot4 ? grp_pack_rot4(r, c, rl) : grp_pack(r, &j, bw);
  if (!j.wpk) j.rot4 = false;
  if (!j.wpk) j.f = 1, j.gstride = 0, j.tiles = 0; /* the portable loops, group by group */
  if (j.tiles) grp_tile_runs++;
  if (j.rot4) grp4_runs++;
  j.rows = P;
  int64_t Gm = j.G / j.f, threads = nat_run_threads(r), tiles = (P + c->pw_mr - 1) / c->pw_mr;
  double macs = (double)P * c->M * c->kh * c->kw * j.Cg * j.f;
  j.row_tasks = 1, j.grp_chunk = Gm, j.grp_tasks = 1;
  if (macs >= NAT_PAR_MIN_MACS / 4 && threads > 1) {
    int64_t want = 4 * threads;
    j.row_tasks = tiles < want ? (tiles > 0 ? tiles : 1) : want;
    int64_t gt = (want + j.row_tasks - 1) / j.row_tasks;
    if (gt > Gm) gt = Gm;
    j.grp_chunk = (Gm + gt - 1) / gt;
    j.grp_tasks = (Gm + j.grp_chunk - 1) / j.grp_chunk;
  }
  nat_pool_run(nat_run_pool(r), j.row_tasks * j.grp_tasks, grp_task, &j);
  return AIT_OK;
}

static _Atomic long long nhwc_runs, nhwc_declined, dw1_runs;
long long nat_conv_nhwc_runs(void) { return nhwc_runs; }
long long nat_conv_dw1_runs(void) { return dw1_runs; }
long long nat_conv_nhwc_declined(void) { return nhwc_declined; }

ait_status nat_k_conv_nhwc(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  nat_nhwc c;
  nhwc_kind kind;
  ait_act act;
  ait_status st = setup(n, in, n_in, &c, &kind, &act);
  const ait_tensor *Sx = n_in > 4 ? in[4] : NULL; /* X's scale per image and channel */
  if (!st && Sx && (kind != K_PW || Sx->dtype != AIT_FLOAT32 || ait_tensor_numel(Sx) != c.N * c.C))
    st = AIT_E_UNSUPPORTED;
  if (st) {
    nhwc_declined++;
    return st;
  }
  nhwc_runs++;
  int64_t od[4] = {c.N, c.OH, c.OW, c.M};
  ait_tensor *Y;
  AIT_TRY(nat_output(r, 0, AIT_FLOAT32, 4, od, &Y));
  c.y = Y->data;
  if (c.N * c.OH * c.OW * c.M == 0) return AIT_OK;
  const nhwc_kernels *k = run_kernels();
  if (Sx) return run_pw_scaled(r, &c, Sx->data, k);
  if (kind == K_GRP) {
    if (c.xs_c != 1) AIT_TRY(pad_input(r, &c)); /* an NCHW input: reordered */
    return run_grouped(r, &c, force_portable ? NAT_ISA_PORTABLE : nat_nhwc_level());
  }
  int level = force_portable ? NAT_ISA_PORTABLE : nat_nhwc_level();
  if (kind == K_WIN && level > NAT_ISA_PORTABLE && nat_run_winograd(r) && nat_wino_fits(&c)) {
    float *ws_at = NULL; /* Winograd's scratch, after the reordered copy of an NCHW input */
    if (c.xs_c != 1) AIT_TRY(pad_input_ex(r, &c, nat_wino_scratch(r, &c), &ws_at));
    ait_status ws = nat_wino_run(r, &c, level, ws_at);
    if (ws != AIT_E_UNSUPPORTED) return ws; /* else direct, on the copy if one was made */
  }
  if (kind == K_WIN && level > NAT_ISA_PORTABLE && strided_pw(&c)) {
    AIT_TRY(gather_strided(r, &c));
    kind = K_PW; /* stride-s 1x1: the pointwise tiles on the gathered pixels */
  }
  if (kind == K_WIN && k->stem3 && level > NAT_ISA_PORTABLE && k->stem3_fits(&c))
    kind = K_STEM3; /* a 3-channel stem on the NCHW input, its rows copied per output row */
  if (kind == K_WIN && (c.C < WIN_MIN_C || c.xs_c != 1)) {
    /* few input channels (a stem) or NCHW: a padded NHWC copy, whose
     * kernel rows are runs of kw C floats (stride-1 taps) */
    AIT_TRY(pad_input(r, &c));
    c.win_rows = c.dw <= 1;
    /* a 3-channel 3x3 or 7x7 stride-2 stem: the stem kernels' fixed-shape tiles */
    if (level == NAT_ISA_AVX512 ? nat_nhwc512_stem_fast(&c)
                                : level == NAT_ISA_AVX2 && nat_nhwc256_stem_fast(&c))
      kind = K_STEM;
  }
  if (kind == K_PW || kind == K_WIN) {
    run_gemm_like(r, &c, c.N * c.OH * c.OW, k, kind, NAT_DATA_TILES, 1);
    return AIT_OK;
  }
  /* the vector kernels skip the taps in the padding; the portable loops read a padded copy */
  if (kind == K_DWK && level == NAT_ISA_PORTABLE) AIT_TRY(pad_input(r, &c));
  if (kind == K_DWK && k->dw1 && c.kh == 1 && c.kw == 1 && c.sh == 1 && c.sw == 1 && c.H == c.OH &&
      c.W == c.OW)
    dw1_runs++;
  nhwc_job j = {&c, kind, k, c.N * c.OH, 1, 1, c.M, 1};
  double macs =
      (double)c.N * c.OH * c.OW * c.M * c.kh * c.kw * (kind == K_STEM || kind == K_STEM3 ? c.C : 1);
  int64_t chunk = macs < NAT_PAR_MIN_MACS / 4 ? j.rows : nat_chunk(r, j.rows, 1);
  j.row_tasks = (j.rows + chunk - 1) / chunk;
  nat_pool_run(nat_run_pool(r), j.row_tasks, nhwc_task, &j);
  return AIT_OK;
}

/* ---- FusedInvertedResidual ------------------------------------------------ */

/* Per task: one image's band of output rows. The expanded input rows live
 * in a ring of three rows (each computed once per band), the depthwise
 * output in one row; both are the thread's, so the block's wide
 * intermediates never leave the core's cache.
 *
 * Neighbouring bands need the same one or two expanded rows (3 - stride)
 * at their boundary. Each is made once, by the band whose output rows it
 * centres (stride 1: one each; stride 2: the lower band's, made before
 * its other rows), into shared rows, and published; the other band takes
 * it if published by the time it needs it, else makes it itself (never
 * waits: a descheduled neighbour must not stall it). With two bands of a
 * 14x14 block that saves 2 of 16 expanded rows (~7% of the block's work)
 * and keeps the bands even (7 rows each; when the upper band made both,
 * it made 8 and the lower 6, and the block waited on it as before). */
typedef struct ir_job {
  nat_nhwc e, d, p; /* the stages; x, y, z are set per row */
  bool has_e;
  const nhwc_kernels *k; /* the run's kernels */
  bool stem;       /* e is a stem conv (a window over the block's input, maybe NCHW), not a 1x1 */
  bool stem3;      /* ... on the stem3 rows (native_nhwc_stem3.h) */
  int K;           /* the depthwise window (K x K, pads K / 2: 3, 5 or 7) */
  ait_act acts[3]; /* the stages' activations past the clamp (e, d, p .post) */
  int64_t n_chunks, per_thread; /* bands per image; floats of scratch per thread */
  const float *x, *z;
  float *y, *scratch;
  float *shared;     /* per image and band boundary: K - 1 expanded rows (ir_edge) */
  atomic_int *ready; /* per image and band boundary: 2 ready words (ir_edge) */
} ir_job;

static void ir_pw(const ir_job *j, nat_nhwc *c, int64_t P) { j->k->pw(c, 0, P, 0, c->M); }

/* Activation a past the clamp on x[0, n) of a block's stage: in registers
 * at the vector levels (native_nhwc_post.h), else nat_act_f32. */
static void ir_post(const ir_job *j, const ait_act *a, float *x, int64_t n) {
  nat_post pp;
  if (j->k->post && nat_post_of(a, &pp))
    j->k->post(&pp, x, n);
  else
    nat_act_f32(a, x, n);
}

/* One output row of the depthwise stage, channels [c0, c1), from its K
 * input rows (NULL in the padding): the 3x3 row kernels, else the
 * sliding rows of any window. */
static void ir_dw_row(const ir_job *j, const float *const *rows, int64_t c0, int64_t c1, float *y) {
  const nat_nhwc *d = &j->d;
  if (j->K == 3 && (!d->post || d->sh > 2)) {
    j->k->dw_row(rows, d->W, d->OW, d->C, c0, c1, d->sh, 1, d->w, d->b, NULL, d->lo, d->hi, y);
    for (int64_t ow = 0; d->post && ow < d->OW; ow++)
      ir_post(j, d->post, y + ow * d->C + c0, c1 - c0);
  } else { /* the activation in registers, before the store */
    j->k->dwr_row(rows, j->K, (int)d->sh, d->W, d->OW, d->C, c0, c1, j->K / 2, d->w, d->b, d->lo,
                  d->hi, d->post, y);
  }
}

/* Expanded row ih of image n into y: one output row of the stem stage. */
static void ir_stem_row(const ir_job *j, int64_t n, int64_t ih, float *y) {
  nat_nhwc e = j->e;
  int64_t r = n * e.OH + ih;
  e.y = y, e.y_r0 = r;
  if (j->stem3) {
    j->k->stem3(&e, r, r + 1); /* the activation too */
    return;
  }
  j->k->stem(&e, r, r + 1);
  if (e.post) ir_post(j, e.post, y, e.OW * e.M);
}

/* Expanded row ih of image n into dst: the expand 1x1 or the stem. */
static void ir_expand_row(const ir_job *j, int64_t n, int64_t ih, float *dst) {
  if (j->stem) {
    ir_stem_row(j, n, ih, dst);
    return;
  }
  nat_nhwc e = j->e;
  e.x = j->x + (n * j->d.H + ih) * j->d.W * j->e.C;
  e.y = dst;
  ir_pw(j, &e, j->d.W);
  if (e.post) ir_post(j, e.post, dst, j->d.W * e.M);
}

/* The boundary between band k - 1 and band k (0 < k < n_chunks) of image
 * n: expanded rows [r0, r1] both read (none when r1 < r0); rows below
 * split are the lower band's to make, the others the upper band's. */
typedef struct ir_edge {
  int64_t r0, r1, split;
  float *rows;                     /* row ih at rows + (ih - r0) * W * E */
  atomic_int *lo_ready, *hi_ready; /* the lower's / the upper's rows are made */
} ir_edge;

static ir_edge ir_boundary(const ir_job *j, int64_t n, int64_t k) {
  const nat_nhwc *d = &j->d;
  ir_edge g = {0, -1, 0, NULL, NULL, NULL};
  if (!j->shared || k <= 0 || k >= j->n_chunks) return g;
  int64_t o = k * d->OH / j->n_chunks, i = n * j->n_chunks + k, p = j->K / 2;
  /* the upper band's first output row reads from o S - p, the lower
   * band's last up to (o - 1) S + K - 1 - p */
  g.r0 = o * d->sh - p > 0 ? o * d->sh - p : 0;
  g.r1 = (o - 1) * d->sh + j->K - 1 - p < d->H - 1 ? (o - 1) * d->sh + j->K - 1 - p : d->H - 1;
  g.split = o * d->sh;
  g.rows = j->shared + i * (j->K - 1) * d->W * d->C;
  g.lo_ready = &j->ready[2 * i], g.hi_ready = &j->ready[2 * i + 1];
  return g;
}

static bool in_rows(int64_t ih, int64_t lo, int64_t hi) { return ih >= lo && ih <= hi; }

static void ir_task(void *arg, int64_t t, int tid) {
  const ir_job *j = arg;
  const nat_nhwc *d = &j->d;
  int64_t n = t / j->n_chunks, b = t % j->n_chunks;
  if (bands_reversed) b = j->n_chunks - 1 - b;
  int64_t oh0 = b * d->OH / j->n_chunks, oh1 = (b + 1) * d->OH / j->n_chunks;
  int64_t H = d->H, W = d->W, E = d->C, S = d->sh, row = W * E, K = j->K, pad = K / 2;
  float *ring = j->scratch + tid * j->per_thread, *drow = ring + K * row;
  int64_t have = oh0 * S - pad - 1; /* last expanded row made */
  /* A: the boundary below (this band is its upper), B: above (its lower);
   * this band makes A's rows from A.split and B's rows below B.split */
  ir_edge A = ir_boundary(j, n, b), B = ir_boundary(j, n, b + 1);
  int64_t a_own = A.split > A.r0 ? A.split : A.r0, b_own = B.split - 1 < B.r1 ? B.split - 1 : B.r1;
  bool a_took = false, b_took = false, a_asked = false, b_asked = false;
  const float *at[7] = {NULL};               /* where expanded row ih is, by ih % K */
  for (int64_t ih = B.r0; ih <= b_own; ih++) /* first: the upper band needs them first */
    ir_expand_row(j, n, ih, B.rows + (ih - B.r0) * row);
  if (B.rows) atomic_store_explicit(B.lo_ready, 1, memory_order_release);
  for (int64_t oh = oh0; oh < oh1; oh++) {
    int64_t lo = oh * S - pad;
    const float *rows[7];
    for (int64_t ih = have + 1 > lo ? have + 1 : lo; j->has_e && ih <= lo + K - 1 && ih < H; ih++) {
      if (ih < 0) continue;
      have = ih;
      float *dst = ring + (ih % K) * row;
      const float **where = &at[ih % K];
      if (in_rows(ih, a_own, A.r1)) {
        dst = A.rows + (ih - A.r0) * row;
      } else if (in_rows(ih, A.r0, a_own - 1)) {
        if (!a_asked)
          a_asked = true, a_took = atomic_load_explicit(A.lo_ready, memory_order_acquire);
        if (a_took) {
          *where = A.rows + (ih - A.r0) * row;
          continue;
        }
      } else if (in_rows(ih, B.r0, b_own)) {
        *where = B.rows + (ih - B.r0) * row; /* made first */
        continue;
      } else if (in_rows(ih, b_own + 1, B.r1)) {
        if (!b_asked)
          b_asked = true, b_took = atomic_load_explicit(B.hi_ready, memory_order_acquire);
        if (b_took) {
          *where = B.rows + (ih - B.r0) * row;
          continue;
        }
      }
      ir_expand_row(j, n, ih, dst);
      *where = dst;
      if (ih == A.r1 && a_own <= A.r1) /* the last of this band's rows at A, made */
        atomic_store_explicit(A.hi_ready, 1, memory_order_release);
    }
    for (int ki = 0; ki < K; ki++) {
      int64_t ih = lo + ki;
      rows[ki] = ih < 0 || ih >= H ? NULL : j->has_e ? at[ih % K] : j->x + (n * H + ih) * row;
    }
    ir_dw_row(j, rows, 0, E, drow);
    nat_nhwc p = j->p;
    int64_t r = (n * d->OH + oh) * d->OW * p.M;
    p.x = drow;
    p.y = j->y + r;
    p.z = j->z ? j->z + r : NULL;
    ir_pw(j, &p, d->OW);
    if (p.post) ir_post(j, p.post, p.y, d->OW * p.M);
  }
}

/* The activation of a stage, <prefix>activation(_params) and
 * <prefix>epilogue, into c: a clamp (c->lo, c->hi), or any other past it
 * (c->post = act, which the caller keeps for the stage's life). */
static ait_status ir_act(const ait_node *n, const char *prefix, nat_nhwc *c, ait_act *act) {
  static const char *const names[3] = {"activation", "activation_params", "epilogue"};
  ait_attr attrs[3];
  ait_node v;
  memset(&v, 0, sizeof v);
  v.name = n->name, v.op_type = n->op_type, v.domain = n->domain, v.attrs = attrs;
  for (int i = 0; i < 3; i++) {
    char key[64];
    snprintf(key, sizeof key, "%s%s", prefix, names[i]);
    const ait_attr *a = ait_node_attr(n, key);
    if (!a) continue;
    attrs[v.n_attrs] = *a;
    attrs[v.n_attrs++].name = (char *)names[i];
  }
  c->lo = -INFINITY, c->hi = INFINITY, c->post = NULL;
  if (ait_act_parse(&v, act) != AIT_OK) {
    ait_err_clear();
    return AIT_E_UNSUPPORTED;
  }
  if (act->kind == AIT_ACT_RELU)
    c->lo = 0.0f;
  else if (act->kind == AIT_ACT_CLIP)
    c->lo = act->p[0], c->hi = act->p[1];
  else if (act->kind != AIT_ACT_NONE)
    c->post = act;
  return AIT_OK;
}

/* Small images (few rows for bands): per task a slice of the expanded
 * channels through expand and depthwise over the whole image (no rows
 * computed twice), into buffers the project stage then reads. */
typedef struct irc_job {
  const ir_job *j;
  float *ebuf, *dbuf;           /* [N][H][W][E] expanded, [N][OH][OW][E] depthwise */
  int64_t bw, blocks, n_slices; /* slice t: blocks [t B / n, (t+1) B / n) of bw channels */
} irc_job;

static void irc_task(void *arg, int64_t t, int tid) {
  const irc_job *c = arg;
  const ir_job *j = c->j;
  const nat_nhwc *d = &j->d;
  int64_t n = t / c->n_slices, q = t % c->n_slices, E = d->C, HW = d->H * d->W;
  int64_t e0 = q * c->blocks / c->n_slices * c->bw, e1 = (q + 1) * c->blocks / c->n_slices * c->bw;
  if (e1 > E) e1 = E;
  const float *src = j->x + n * HW * E;
  if (j->stem) {
    src = c->ebuf + n * HW * E; /* made before, by stem_task */
  } else if (j->has_e) {
    nat_nhwc e = j->e;
    e.x = j->x + n * HW * e.C;
    e.y = c->ebuf + n * HW * E;
    j->k->pw(&e, 0, HW, e0, e1);
    for (int64_t px = 0; e.post && px < HW; px++)
      ir_post(j, e.post, e.y + px * E + e0, e1 - e0);
    src = e.y;
  }
  for (int64_t oh = 0; oh < d->OH; oh++) {
    const float *rows[7];
    for (int ki = 0; ki < j->K; ki++) {
      int64_t ih = oh * d->sh - j->K / 2 + ki;
      rows[ki] = ih < 0 || ih >= d->H ? NULL : src + ih * d->W * E;
    }
    ir_dw_row(j, rows, e0, e1, c->dbuf + (n * d->OH + oh) * d->OW * E);
  }
}

/* Output rows from which a block runs in bands of rows; below (7x7), in
 * channel slices (14x14 blocks measured 2-4% faster in bands than in
 * slices, 7x7 ones slower). */
#define IR_BAND_MIN_ROWS 12

/* The stem stage of a small image, before the slices: rows of every image. */
static void stem_task(void *arg, int64_t t, int tid) {
  const irc_job *c = arg;
  const nat_nhwc *e = &c->j->e;
  int64_t rows = e->N * e->OH, r0 = t * rows / c->n_slices, r1 = (t + 1) * rows / c->n_slices;
  for (int64_t r = r0; r < r1; r++)
    ir_stem_row(c->j, r / e->OH, r % e->OH, c->ebuf + r * e->OW * e->M);
}

static ait_status ir_by_channels(nat_run *r, ir_job *j, int64_t N) {
  const nat_nhwc *d = &j->d;
  int64_t E = d->C, HW = d->H * d->W, OHW = d->OH * d->OW, threads = nat_run_threads(r);
  irc_job c = {j, NULL, NULL, 0, 0, 0};
  float *buf = nat_scratch(r, (int64_t)sizeof(float) * N * E * ((j->has_e ? HW : 0) + OHW));
  if (!buf) return AIT_E_NOMEM;
  c.ebuf = buf;
  c.dbuf = buf + (j->has_e ? N * HW * E : 0);
  c.bw = j->has_e && !j->stem ? j->e.pw_bw : j->k->lanes;
  c.blocks = (E + c.bw - 1) / c.bw;
  int64_t want = 4 * threads / N > 1 ? 4 * threads / N : 1;
  c.n_slices = c.blocks < want ? c.blocks : want;
  if (j->stem) {
    irc_job sc = c;
    sc.n_slices = N * j->e.OH < 2 * threads ? N * j->e.OH : 2 * threads;
    nat_pool_run(nat_run_pool(r), sc.n_slices, stem_task, &sc);
  }
  nat_pool_run(nat_run_pool(r), N * c.n_slices, irc_task, &c);
  nat_nhwc p = j->p;
  p.x = c.dbuf;
  p.y = j->y;
  p.z = j->z;
  run_pw(r, &p, N * OHW, j->k, NAT_DATA_TILES_B, 5);
  return AIT_OK;
}

/* Expanded and depthwise maps of a K x K block (K > 3) up to this many
 * bytes run as three stages through scratch (ir_by_stages): they stay in
 * L2, and the separate kernels block better than the block's rows (at
 * batch 1, MnasNet's 5x5 blocks ran 5-9% slower fused; at batch 8, whose
 * maps spill from L2, 7-16% faster). */
#define IR_STAGED_BYTES (1200 * 1024)
static int64_t staged_bytes = IR_STAGED_BYTES;
void nat_nhwc_set_staged_bytes(int64_t bytes) {
  staged_bytes = bytes < 0 ? IR_STAGED_BYTES : bytes;
}

static bool ir_staged(const ir_job *j, int64_t N) {
  const nat_nhwc *d = &j->d;
  double bytes = 4.0 * N * d->C * ((double)d->H * d->W + (double)d->OH * d->OW);
  return j->K > 3 && j->has_e && !j->stem && j->k->packed && bytes <= (double)staged_bytes;
}

/* The block as its three stages, each over every image: expand into
 * scratch, depthwise into scratch (the sliding rows, native_nhwc_dw*.c),
 * project into Y. */
static ait_status ir_by_stages(nat_run *r, ir_job *j, int64_t N) {
  nat_nhwc *d = &j->d;
  int64_t E = d->C, HW = d->H * d->W, OHW = d->OH * d->OW;
  float *buf = nat_scratch(r, (int64_t)sizeof(float) * N * E * (HW + OHW));
  if (!buf) return AIT_E_NOMEM;
  nat_nhwc e = j->e;
  e.x = j->x, e.y = buf;
  run_pw(r, &e, N * HW, j->k, NAT_DATA_TILES, 1);
  d->x = buf, d->y = buf + N * HW * E, d->N = N;
  d->kh = d->kw = j->K, d->pt = d->pl = j->K / 2, d->dh = d->dw = 1;
  d->xs_c = 1, d->xs_w = E, d->xs_h = d->W * E, d->xs_n = HW * E;
  nhwc_job dj = {d, K_DWK, j->k, N * d->OH, 1, 1, E, 1};
  double macs = (double)N * OHW * E * j->K * j->K;
  int64_t chunk = macs < NAT_PAR_MIN_MACS / 4 ? dj.rows : nat_chunk(r, dj.rows, 1);
  dj.row_tasks = (dj.rows + chunk - 1) / chunk;
  nat_pool_run(nat_run_pool(r), dj.row_tasks, nhwc_task, &dj);
  nat_nhwc p = j->p;
  p.x = d->y, p.y = j->y, p.z = j->z;
  run_pw(r, &p, N * OHW, j->k, NAT_DATA_TILES_B, 5);
  return AIT_OK;
}

/* A 1x1 stage from weights [1, 1, K, M], bias (may be absent) and the
 * activation under `prefix`. */
static ait_status ir_stage(const ait_node *n, const char *prefix, const ait_tensor *Wt,
                           const ait_tensor *B, nat_nhwc *c, ait_act *act) {
  if (!Wt || Wt->dtype != AIT_FLOAT32 || Wt->rank != 4 || Wt->dims[0] != 1 || Wt->dims[1] != 1)
    return AIT_E_UNSUPPORTED;
  if (B && (B->dtype != AIT_FLOAT32 || ait_tensor_numel(B) != Wt->dims[3]))
    return AIT_E_UNSUPPORTED;
  c->C = Wt->dims[2], c->M = Wt->dims[3];
  c->w = Wt->data;
  c->b = B ? B->data : NULL;
  return ir_act(n, prefix, c, act);
}

/* The stem stage (the layout pass's stem_* attributes): a group-1 window
 * conv from X (NCHW or NHWC) with weights [kh, kw, C, M], bias and the
 * expand_ activation; its output [N, OH, OW, M] is the block's input. */
static ait_status ir_stem_stage(const ait_node *n, const ait_tensor *X, const ait_tensor *Wt,
                                const ait_tensor *B, nat_nhwc *c, ait_act *act) {
  if (!Wt || Wt->dtype != AIT_FLOAT32 || Wt->rank != 4) return AIT_E_UNSUPPORTED;
  bool nchw = !strcmp(ait_attr_str(n, "stem_x_layout", "NHWC"), "NCHW");
  c->N = X->dims[0];
  c->C = nchw ? X->dims[1] : X->dims[3];
  c->H = nchw ? X->dims[2] : X->dims[1];
  c->W = nchw ? X->dims[3] : X->dims[2];
  c->xs_c = nchw ? c->H * c->W : 1;
  c->xs_w = nchw ? 1 : c->C;
  c->xs_h = nchw ? c->W : c->W * c->C;
  c->xs_n = c->H * c->W * c->C;
  c->kh = Wt->dims[0], c->kw = Wt->dims[1], c->M = Wt->dims[3];
  /* what the layout pass wrote (a small window), checked again: a graph
   * may come from a saved file */
  int64_t in[2] = {c->H, c->W}, k[2] = {c->kh, c->kw}, st[2], pb[2], out[2];
  if (Wt->dims[2] != c->C || c->kh * c->kw * c->C > 64 || !ait_inv_res_stem(n, in, k, st, pb, out))
    return AIT_E_UNSUPPORTED;
  c->sh = st[0], c->sw = st[1], c->pt = pb[0], c->pl = pb[1];
  c->OH = out[0], c->OW = out[1];
  if (B && (B->dtype != AIT_FLOAT32 || ait_tensor_numel(B) != c->M)) return AIT_E_UNSUPPORTED;
  c->x = X->data;
  c->w = Wt->data;
  c->b = B ? B->data : NULL;
  return ir_act(n, "expand_", c, act);
}

ait_status nat_k_inv_res(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in) {
  const ait_tensor *X = in[0], *Z = n_in > 7 ? in[7] : NULL;
  if (n_in < 6 || !X || X->dtype != AIT_FLOAT32 || X->rank != 4 || !in[3] || in[3]->rank != 4)
    return AIT_E_UNSUPPORTED;
  ir_job j;
  memset(&j, 0, sizeof j);
  j.has_e = in[1] != NULL;
  j.stem = j.has_e && ait_attr_str(n, "stem_x_layout", NULL) != NULL;
  int64_t N = X->dims[0], H = X->dims[1], W = X->dims[2], C = X->dims[3];
  if (j.stem) {
    if (ir_stem_stage(n, X, in[1], in[2], &j.e, &j.acts[0])) return AIT_E_UNSUPPORTED;
    H = j.e.OH, W = j.e.OW, C = j.e.M;
  } else if (j.has_e && (ir_stage(n, "expand_", in[1], in[2], &j.e, &j.acts[0]) || j.e.C != C)) {
    return AIT_E_UNSUPPORTED;
  }
  int64_t E = j.has_e ? j.e.M : C;
  if (ir_stage(n, "", in[5], n_in > 6 ? in[6] : NULL, &j.p, &j.acts[2]) || j.p.C != E)
    return AIT_E_UNSUPPORTED;
  /* the depthwise stage: weights [K, K, 1, E] (K 3, 5 or 7; pads K / 2;
   * beyond 3x3, strides 1 or 2: the sliding rows), its activation under dw_ */
  const ait_tensor *Wd = in[3], *Bd = in[4];
  int cnt = 0;
  const int64_t *st = ait_attr_ints(n, "strides", &cnt);
  int64_t S = st && cnt == 2 ? st[0] : 1, K = Wd->dims[0];
  if (Wd->dtype != AIT_FLOAT32 || (K != 3 && K != 5 && K != 7) || Wd->dims[1] != K ||
      Wd->dims[2] != 1 || Wd->dims[3] != E || (st && cnt != 2) || S < 1 || (st && st[1] != S) ||
      (K > 3 && S > 2))
    return AIT_E_UNSUPPORTED;
  j.K = (int)K;
  if (Bd && (Bd->dtype != AIT_FLOAT32 || ait_tensor_numel(Bd) != E)) return AIT_E_UNSUPPORTED;
  if (ir_act(n, "dw_", &j.d, &j.acts[1])) return AIT_E_UNSUPPORTED;
  j.d.b = Bd ? Bd->data : NULL;
  j.d.w = Wd->data;
  j.d.C = j.d.M = E;
  j.d.H = H, j.d.W = W, j.d.sh = j.d.sw = S;
  j.d.OH = (H - 1) / S + 1, j.d.OW = (W - 1) / S + 1;
  int64_t M = j.p.M, od[4] = {N, j.d.OH, j.d.OW, M};
  if (Z) {
    if (Z->dtype != AIT_FLOAT32 || Z->kind != AIT_KIND_TENSOR || Z->rank != 4 ||
        memcmp(Z->dims, od, sizeof od))
      return AIT_E_UNSUPPORTED;
    j.z = Z->data;
  }
  ait_tensor *Y;
  AIT_TRY(nat_output(r, 0, AIT_FLOAT32, 4, od, &Y));
  j.y = Y->data;
  j.x = X->data;
  if (N * j.d.OH * j.d.OW * M == 0) return AIT_OK;
  j.k = run_kernels();
  j.stem3 = j.stem && j.k->stem3 && j.k->stem3_fits(&j.e);
  if (ir_staged(&j, N)) return ir_by_stages(r, &j, N);
  if (j.has_e && !j.stem) {
    set_tile(&j.e, j.k, j.d.OH < IR_BAND_MIN_ROWS ? H * W : W);
    pack_pw(r, &j.e, NAT_DATA_TILES, 1, j.k);
  }
  if (j.d.OH < IR_BAND_MIN_ROWS) return ir_by_channels(r, &j, N); /* packs p for its tile */
  set_tile(&j.p, j.k, j.d.OW);
  pack_pw(r, &j.p, NAT_DATA_TILES_B, 5, j.k);
  int threads = nat_run_threads(r);
  /* bands of at least 8 rows, two per thread where there are enough, a
   * multiple of the threads (a band recomputes one or two expanded rows of
   * its neighbour: finer bands measured slower; 3 bands on 2 threads ran
   * at 1.5x one thread) */
  int64_t most = j.d.OH / 8 < 2 * threads ? j.d.OH / 8 : 2 * threads;
  j.n_chunks = (most / threads > 1 ? most / threads : 1) * threads;
  if (j.n_chunks > j.d.OH) j.n_chunks = j.d.OH;
  j.per_thread = (K * W * E + j.d.OW * E + 15) / 16 * 16;
  /* per band boundary: K - 1 shared rows and two ready words; bands of
   * K+ rows, so that a band's two boundaries never share a row */
  int64_t bands = N * j.n_chunks;
  bool share = j.n_chunks > 1 && j.has_e && S < 3 && j.d.OH / j.n_chunks >= K;
  int64_t shared = share ? bands * (K - 1) * W * E : 0;
  int64_t floats = j.per_thread * threads + (shared + 15) / 16 * 16;
  j.scratch =
      nat_scratch(r, (int64_t)sizeof(float) * floats + (int64_t)sizeof(atomic_int) * 2 * bands);
  if (!j.scratch) return AIT_E_NOMEM;
  if (share) {
    j.shared = j.scratch + j.per_thread * threads;
    j.ready = (atomic_int *)(j.scratch + floats);
    for (int64_t k = 0; k < 2 * bands; k++)
      atomic_init(&j.ready[k], 0);
  }
  nat_pool_run(nat_run_pool(r), N * j.n_chunks, ir_task, &j);
  return AIT_OK;
}
