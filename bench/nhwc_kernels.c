/* Per-kernel timing of FusedConvNhwc's kernels (native_nhwc512.c,
 * native_nhwc256.c) at the AVX-512 and AVX2 levels on MobileNet-like and
 * transformer-like shapes: one thread, best of 200 calls (the best survives
 * a loaded machine), GFLOP/s and the AVX2 / AVX-512 time ratio as a
 * Markdown table. Needs a CPU with AVX-512. Build and run after the
 * Release build:
 *   L=$(sed 's/.*libaitune.a//' build/CMakeFiles/aitune.dir/link.txt)
 *   cc -O2 -Isrc -Iinclude -Ibuild -o /tmp/nhwc_kernels bench/nhwc_kernels.c \
 *      build/libaitune.a $L -lpthread && taskset -c 1 /tmp/nhwc_kernels */
#include "backends/native/native.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}
static float *rnd(int64_t n) {
  float *p = aligned_alloc(64, (size_t)((n * 4 + 63) / 64 * 64));
  for (int64_t i = 0; i < n; i++)
    p[i] = (float)rand() / RAND_MAX - 0.5f;
  return p;
}
static float *pack(const float *B, int64_t K, int64_t N, int64_t bw) {
  int64_t nb = (N + bw - 1) / bw;
  float *p = aligned_alloc(64, (size_t)(nb * bw * K * 4));
  for (int64_t b = 0; b < nb; b++) {
    int64_t m0 = b * bw, mc = N - m0 < bw ? N - m0 : bw;
    for (int64_t k = 0; k < K; k++) {
      memcpy(p + b * bw * K + k * bw, B + k * N + m0, mc * 4);
      memset(p + b * bw * K + k * bw + mc, 0, (bw - mc) * 4);
    }
  }
  return p;
}
typedef void (*pwf)(const nat_nhwc *, int64_t, int64_t, int64_t, int64_t);
typedef void (*rf)(const nat_nhwc *, int64_t, int64_t);
static double best(void (*f)(void *), void *a, int reps) {
  double b = 1e9;
  for (int r = 0; r < reps; r++) {
    double t = now();
    f(a);
    t = now() - t;
    if (t < b) b = t;
  }
  return b;
}
typedef struct {
  nat_nhwc c;
  pwf pw;
  rf rows;
  int64_t P, R;
} job;
static void run_pw(void *a) {
  job *j = a;
  j->pw(&j->c, 0, j->P, 0, j->c.M);
}
static void run_rows(void *a) {
  job *j = a;
  j->rows(&j->c, 0, j->R);
}

static void pw(int64_t P, int64_t K, int64_t M) {
  float *x = rnd(P * K), *w = rnd(K * M), *b = rnd(M), *y = rnd(P * M);
  double t[2];
  for (int l = 0; l < 2; l++) {
    job j;
    memset(&j, 0, sizeof j);
    j.c.C = K, j.c.M = M, j.c.x = x, j.c.w = w, j.c.b = b, j.c.y = y, j.c.lo = 0, j.c.hi = 6;
    nat_nhwc_tile(&j.c, l == 0 ? NAT_ISA_AVX512 : NAT_ISA_AVX2, P);
    j.c.wpk = pack(w, K, M, j.c.pw_bw);
    j.pw = l == 0 ? nat_nhwc512_pw : nat_nhwc256_pw;
    j.P = P;
    t[l] = best(run_pw, &j, 200);
    free((void *)j.c.wpk);
  }
  double gf = 2.0 * P * K * M * 1e-9;
  printf("| pointwise %lld px, %lld -> %lld | %.1f | %.1f | %.2f |\n", (long long)P, (long long)K,
         (long long)M, gf / t[0], gf / t[1], t[1] / t[0]);
  free(x), free(w), free(b), free(y);
}

static void win(bool dw, int64_t H, int64_t C, int64_t M, int64_t k, int64_t S, bool nchw) {
  int64_t OH = (H + 2 * (k / 2) - k) / S + 1;
  float *x = rnd(H * H * C), *w = rnd(k * k * (dw ? 1 : C) * M), *b = rnd(M), *y = rnd(OH * OH * M);
  double t[2];
  for (int l = 0; l < 2; l++) {
    job j;
    memset(&j, 0, sizeof j);
    nat_nhwc *c = &j.c;
    c->N = 1, c->H = c->W = H, c->C = C, c->M = M, c->OH = c->OW = OH, c->kh = c->kw = k,
    c->sh = c->sw = S, c->pt = c->pl = k / 2;
    if (nchw)
      c->xs_c = H * H, c->xs_h = H, c->xs_w = 1;
    else
      c->xs_c = 1, c->xs_w = C, c->xs_h = H * C;
    c->xs_n = H * H * C;
    c->x = x, c->w = w, c->b = b, c->y = y, c->lo = 0, c->hi = 6;
    j.rows = dw ? (l == 0 ? nat_nhwc512_dw : nat_nhwc256_dw)
                : (l == 0 ? nat_nhwc512_stem : nat_nhwc256_stem);
    j.R = OH;
    t[l] = best(run_rows, &j, 200);
  }
  double gf = 2.0 * OH * OH * M * k * k * (dw ? 1 : C) * 1e-9;
  printf("| %s %lldx%lld x %lld%s, stride %lld | %.1f | %.1f | %.2f |\n",
         dw ? "depthwise 3x3" : "stem 3x3", (long long)H, (long long)H, (long long)(dw ? C : M),
         dw ? "" : (nchw ? " (NCHW 3-ch input)" : ""), (long long)S, gf / t[0], gf / t[1],
         t[1] / t[0]);
  free(x), free(w), free(b), free(y);
}

/* A group-1 window conv (native_nhwc_win*.c) on an H x H x C NHWC input:
 * k x k, stride S, padding k / 2, dilation d (ResNet / Inception shapes). */
static void wconv(int64_t H, int64_t C, int64_t M, int64_t k, int64_t S, int64_t d) {
  int64_t pad = d * (k / 2), OH = (H + 2 * pad - d * (k - 1) - 1) / S + 1;
  float *x = rnd(H * H * C), *w = rnd(k * k * C * M), *b = rnd(M), *y = rnd(OH * OH * M);
  double t[2];
  for (int l = 0; l < 2; l++) {
    job j;
    memset(&j, 0, sizeof j);
    nat_nhwc *c = &j.c;
    c->N = 1, c->H = c->W = H, c->C = C, c->M = M, c->OH = c->OW = OH, c->kh = c->kw = k,
    c->sh = c->sw = S, c->pt = c->pl = pad, c->dh = c->dw = d;
    c->xs_c = 1, c->xs_w = C, c->xs_h = H * C, c->xs_n = H * H * C;
    c->x = x, c->w = w, c->b = b, c->y = y, c->lo = 0, c->hi = INFINITY;
    (l == 0 ? nat_nhwc512_win_tile : nat_nhwc256_win_tile)(OH * OH, M, &c->pw_mr, &c->pw_nv);
    c->pw_bw = c->pw_nv * (l == 0 ? 16 : 8);
    c->wpk = pack(w, k * k * C, M, c->pw_bw);
    j.pw = l == 0 ? nat_nhwc512_win : nat_nhwc256_win;
    j.P = OH * OH;
    t[l] = best(run_pw, &j, 40);
    free((void *)c->wpk);
  }
  double gf = 2.0 * OH * OH * M * k * k * C * 1e-9;
  printf("| window %lldx%lld %lldx%lld x %lld -> %lld, stride %lld%s | %.1f | %.1f | %.2f |\n",
         (long long)k, (long long)k, (long long)H, (long long)H, (long long)C, (long long)M,
         (long long)S, d > 1 ? ", dilated" : "", gf / t[0], gf / t[1], t[1] / t[0]);
  free(x), free(w), free(b), free(y);
}

/* A dilated group-1 window conv (padding d (k - 1) / 2: DeepLab's ASPP)
 * with its panels in plain order and in classes of in-bounds taps
 * (nat_nhwc.win_class): microseconds per call at each level. */
static void aspp(int64_t H, int64_t C, int64_t M, int64_t k, int64_t d) {
  int64_t pad = d * (k / 2), OH = H;
  float *x = rnd(H * H * C), *w = rnd(k * k * C * M), *b = rnd(M), *y = rnd(OH * OH * M);
  double t[2][2];
  for (int l = 0; l < 2; l++)
    for (int cls = 0; cls < 2; cls++) {
      job j;
      memset(&j, 0, sizeof j);
      nat_nhwc *c = &j.c;
      c->N = 1, c->H = c->W = H, c->C = C, c->M = M, c->OH = c->OW = OH, c->kh = c->kw = k,
      c->sh = c->sw = 1, c->pt = c->pl = pad, c->dh = c->dw = d, c->win_class = cls;
      c->xs_c = 1, c->xs_w = C, c->xs_h = H * C, c->xs_n = H * H * C;
      c->x = x, c->w = w, c->b = b, c->y = y, c->lo = 0, c->hi = INFINITY;
      (l == 0 ? nat_nhwc512_win_tile : nat_nhwc256_win_tile)(OH * OH, M, &c->pw_mr, &c->pw_nv);
      c->pw_bw = c->pw_nv * (l == 0 ? 16 : 8);
      c->wpk = pack(w, k * k * C, M, c->pw_bw);
      j.pw = l == 0 ? nat_nhwc512_win : nat_nhwc256_win;
      j.P = OH * OH;
      t[l][cls] = best(run_pw, &j, 40);
      free((void *)c->wpk);
    }
  printf("| %lldx%lld dilation %lld, %lldx%lld x %lld -> %lld | %.0f | %.0f | %.0f | %.0f |\n",
         (long long)k, (long long)k, (long long)d, (long long)H, (long long)H, (long long)C,
         (long long)M, 1e6 * t[0][0], 1e6 * t[0][1], 1e6 * t[1][0], 1e6 * t[1][1]);
  free(x), free(w), free(b), free(y);
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "aspp")) {
    printf("| conv (one thread, best of 40, us) | AVX-512 plain | AVX-512 classes | AVX2 plain | "
           "AVX2 classes |\n|---|---|---|---|---|\n");
    aspp(14, 960, 256, 1, 1); /* the 1x1 branch: the floor */
    aspp(14, 960, 256, 3, 12);
    aspp(14, 960, 256, 3, 24);
    aspp(28, 960, 256, 3, 12);
    aspp(28, 256, 256, 3, 6);
    aspp(14, 256, 256, 3, 2);
    return 0;
  }
  if (argc > 1 && !strcmp(argv[1], "window")) {
    printf("| kernel (one thread, best of 40) | AVX-512 GFLOP/s | AVX2 GFLOP/s | AVX2 time / "
           "AVX-512 time |\n|---|---|---|---|\n");
    wconv(56, 64, 64, 3, 1, 1);   /* ResNet layer 1 */
    wconv(28, 128, 128, 3, 1, 1); /* layer 2 */
    wconv(14, 256, 256, 3, 1, 1); /* layer 3 */
    wconv(7, 512, 512, 3, 1, 1);  /* layer 4 */
    wconv(56, 128, 128, 3, 2, 1); /* a stride-2 3x3 */
    wconv(56, 64, 256, 1, 2, 1);  /* a stride-2 1x1 (downsample) */
    wconv(28, 96, 128, 3, 1, 1);  /* Inception 3x3 */
    wconv(28, 16, 32, 5, 1, 1);   /* Inception 5x5 */
    wconv(28, 64, 64, 3, 1, 2);   /* dilated */
    return 0;
  }
  if (argc > 1 && !strcmp(argv[1], "stem")) { /* stems: NCHW stem kernel vs padded rows */
    static const int64_t sh[][5] = {
        {224, 3, 32, 3, 2}, {224, 3, 64, 7, 2}, {224, 3, 96, 7, 2}, {224, 3, 16, 3, 2}};
    for (size_t i = 0; i < sizeof sh / sizeof sh[0]; i++) {
      int64_t H = sh[i][0], C = sh[i][1], M = sh[i][2], k = sh[i][3], S = sh[i][4];
      win(false, H, C, M, k, S, true);
      int64_t pad = k / 2, OH = (H + 2 * pad - k) / S + 1, Hp = (OH - 1) * S + k;
      float *x = rnd(Hp * Hp * C), *w = rnd(k * k * C * M), *b = rnd(M), *y = rnd(OH * OH * M);
      for (int l = 0; l < 2; l++) {
        job j;
        memset(&j, 0, sizeof j);
        nat_nhwc *c = &j.c;
        c->N = 1, c->H = c->W = Hp, c->C = C, c->M = M, c->OH = c->OW = OH, c->kh = c->kw = k;
        c->sh = c->sw = S, c->dh = c->dw = 1, c->win_rows = true;
        c->xs_c = 1, c->xs_w = C, c->xs_h = Hp * C, c->xs_n = Hp * Hp * C;
        c->x = x, c->w = w, c->b = b, c->y = y, c->lo = 0, c->hi = 6;
        (l == 0 ? nat_nhwc512_win_tile : nat_nhwc256_win_tile)(OH * OH, M, &c->pw_mr, &c->pw_nv);
        c->pw_bw = c->pw_nv * (l == 0 ? 16 : 8);
        c->wpk = pack(w, k * k * C, M, c->pw_bw);
        j.pw = l == 0 ? nat_nhwc512_win : nat_nhwc256_win;
        j.P = OH * OH;
        double t = best(run_pw, &j, 40);
        printf("  padded rows %s: %.1f GFLOP/s\n", l ? "AVX2" : "AVX-512",
               2.0 * OH * OH * M * k * k * C * 1e-9 / t);
        free((void *)c->wpk);
      }
      free(x), free(w), free(b), free(y);
    }
    return 0;
  }
  if (argc > 1 && !strcmp(argv[1], "cold")) { /* window convs, weights cold: 24 copies rotated */
    static const int64_t sh[][4] = {{56, 64, 64, 3},  {28, 128, 128, 3},  {14, 256, 256, 3},
                                    {7, 512, 512, 3}, {14, 256, 1024, 1}, {7, 2048, 512, 1}};
    for (size_t i = 0; i < sizeof sh / sizeof sh[0]; i++) {
      int64_t H = sh[i][0], C = sh[i][1], M = sh[i][2], k = sh[i][3], pad = k / 2, OH = H;
      float *x = rnd(H * H * C), *w = rnd(k * k * C * M), *b = rnd(M), *y = rnd(OH * OH * M);
      for (int l = 0; l < 2; l++) {
        job j;
        memset(&j, 0, sizeof j);
        nat_nhwc *c = &j.c;
        c->N = 1, c->H = c->W = H, c->C = C, c->M = M, c->OH = c->OW = OH, c->kh = c->kw = k;
        c->sh = c->sw = 1, c->pt = c->pl = pad, c->dh = c->dw = 1;
        c->xs_c = 1, c->xs_w = C, c->xs_h = H * C, c->xs_n = H * H * C;
        c->x = x, c->w = w, c->b = b, c->y = y, c->lo = 0, c->hi = INFINITY;
        (l == 0 ? nat_nhwc512_win_tile : nat_nhwc256_win_tile)(OH * OH, M, &c->pw_mr, &c->pw_nv);
        c->pw_bw = c->pw_nv * (l == 0 ? 16 : 8);
        const float *copies[24];
        for (int r = 0; r < 24; r++)
          copies[r] = pack(w, k * k * C, M, c->pw_bw);
        pwf f = l == 0 ? nat_nhwc512_win : nat_nhwc256_win;
        double hot = 1e9, cold = 1e9;
        for (int r = 0; r < 48; r++) {
          c->wpk = copies[r % 24];
          double t = now();
          f(c, 0, OH * OH, 0, M);
          t = now() - t;
          if (t < cold) cold = t;
          t = now();
          f(c, 0, OH * OH, 0, M);
          t = now() - t;
          if (t < hot) hot = t;
        }
        double gf = 2.0 * OH * OH * M * k * k * C * 1e-9;
        printf("%s %lldx%lld %lld->%lld k%lld: hot %.1f cold %.1f GFLOP/s\n",
               l ? "AVX2   " : "AVX-512", (long long)H, (long long)H, (long long)C, (long long)M,
               (long long)k, gf / hot, gf / cold);
        for (int r = 0; r < 24; r++)
          free((void *)copies[r]);
      }
      free(x), free(w), free(b), free(y);
    }
    return 0;
  }
  if (argc > 4 && !strcmp(argv[1], "tiles")) { /* AVX2 pointwise P K M: each tile forced */
    int64_t P = atoll(argv[2]), K = atoll(argv[3]), M = atoll(argv[4]);
    static const int cand[][2] = {{6, 2}, {4, 3}, {12, 1}};
    float *x = rnd(P * K), *w = rnd(K * M), *b = rnd(M), *y = rnd(P * M);
    for (int i = 0; i < 3; i++) {
      job j;
      memset(&j, 0, sizeof j);
      j.c.C = K, j.c.M = M, j.c.x = x, j.c.w = w, j.c.b = b, j.c.y = y, j.c.lo = 0, j.c.hi = 6;
      j.c.pw_mr = cand[i][0], j.c.pw_nv = cand[i][1], j.c.pw_bw = 8 * cand[i][1];
      j.c.wpk = pack(w, K, M, j.c.pw_bw);
      j.pw = nat_nhwc256_pw;
      j.P = P;
      double t = best(run_pw, &j, 200);
      printf("%dx%d: %.1f GFLOP/s\n", cand[i][0], 8 * cand[i][1], 2.0 * P * K * M * 1e-9 / t);
      free((void *)j.c.wpk);
    }
    return 0;
  }
  if (argc > 1 && !strcmp(argv[1], "pointwise")) { /* ResNet-50's 1x1 convs */
    printf("| kernel (one thread, best of 200) | AVX-512 GFLOP/s | AVX2 GFLOP/s | AVX2 time / "
           "AVX-512 time |\n|---|---|---|---|\n");
    static const int64_t s[][3] = {{3136, 64, 64},  {3136, 64, 256},  {3136, 256, 64},
                                   {784, 256, 128}, {784, 128, 512},  {784, 512, 128},
                                   {196, 512, 256}, {196, 256, 1024}, {196, 1024, 256},
                                   {49, 1024, 512}, {49, 512, 2048},  {49, 2048, 512}};
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++)
      pw(s[i][0], s[i][1], s[i][2]);
    return 0;
  }
  printf("| kernel (one thread, best of 200) | AVX-512 GFLOP/s | AVX2 GFLOP/s | AVX2 time / "
         "AVX-512 time |\n|---|---|---|---|\n");
  pw(56 * 56, 24, 144);
  pw(56 * 56, 144, 24);
  pw(28 * 28, 32, 192);
  pw(14 * 14, 384, 64);
  pw(49, 320, 1280);
  pw(128, 256, 1024);
  pw(128, 1024, 256);
  win(true, 56, 144, 144, 3, 1, false);
  win(true, 56, 144, 144, 3, 2, false);
  win(true, 14, 576, 576, 3, 1, false);
  win(false, 224, 3, 32, 3, 2, true);
  return 0;
}
