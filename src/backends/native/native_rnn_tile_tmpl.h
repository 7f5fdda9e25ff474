/* The recurrent product's register tiles, written once for both vector
 * widths (native_rnn512.c includes it for AVX-512 and AVX2): rows of the
 * states H [B][K] against R^T as native_rnn.c's panels (K x 16 floats each,
 * columns past N zero), RT_VPP vectors a panel. Each tile keeps at least 8
 * independent FMA chains: RT_MR rows x RT_NPB panels, RT_NPS panels for
 * fewer than RT_MR / 2 rows, RT_NP1 for one (a row alone would wait on its
 * FMA latency).
 *
 * Parameters: RT_FN (the function's name), RT_TARGET, RT_V (vector type),
 * RT_VW (floats a vector), RT_VPP, RT_MR, RT_NPB, RT_NPS, RT_NP1, RT_LOAD(p),
 * RT_SET1(x), RT_ZERO(), RT_FMA(a, b, c), RT_STORE(p, v, n) (n floats, n <=
 * RT_VW). */
#define RT_NP_MAX                                                                                  \
  (RT_NP1 > RT_NPS ? (RT_NP1 > RT_NPB ? RT_NP1 : RT_NPB) : RT_NPS > RT_NPB ? RT_NPS : RT_NPB)
#define RT_NV (RT_NP_MAX * RT_VPP)
#define RT_CAT2(a, b) a##b
#define RT_CAT(a, b) RT_CAT2(a, b)
#define RT_TILE RT_CAT(RT_FN, _tile)
#define RT_ROWS RT_CAT(RT_FN, _rows)

/* rows [mr] x panels [p, p + np) into c (ldc), N real columns */
static inline __attribute__((always_inline)) RT_TARGET void
RT_TILE(const int mr, const int np, const float *a, int64_t lda, int64_t K, const float *pn,
        int64_t p, int64_t N, float *c, int64_t ldc) {
  RT_V acc[RT_MR][RT_NV];
  const int nv = np * RT_VPP;
#pragma GCC unroll 8
  for (int r = 0; r < RT_MR; r++)
#pragma GCC unroll 8
    for (int v = 0; v < RT_NV; v++)
      if (r < mr && v < nv) acc[r][v] = RT_ZERO();
  const float *w = pn + p * K * 16;
  for (int64_t k = 0; k < K; k++) {
    RT_V wv[RT_NV];
#pragma GCC unroll 8
    for (int v = 0; v < RT_NV; v++)
      if (v < nv) wv[v] = RT_LOAD(w + (v / RT_VPP) * K * 16 + k * 16 + (v % RT_VPP) * RT_VW);
#pragma GCC unroll 8
    for (int r = 0; r < RT_MR; r++) {
      if (r >= mr) break;
      RT_V x = RT_SET1(a[r * lda + k]);
#pragma GCC unroll 8
      for (int v = 0; v < RT_NV; v++)
        if (v < nv) acc[r][v] = RT_FMA(x, wv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 8
  for (int v = 0; v < RT_NV; v++) {
    if (v >= nv) break;
    int64_t j0 = p * 16 + v * RT_VW, n = N - j0;
    if (n <= 0) continue;
#pragma GCC unroll 8
    for (int r = 0; r < RT_MR; r++)
      if (r < mr) RT_STORE(c + r * ldc + j0, acc[r][v], n);
  }
}

static inline __attribute__((always_inline)) RT_TARGET void
RT_ROWS(const int mr, const float *a, int64_t lda, int64_t K, const float *pn, int64_t n_pan,
        int64_t N, float *c, int64_t ldc) {
  const int np = mr == 1 ? RT_NP1 : 2 * mr >= RT_MR ? RT_NPB : RT_NPS;
  int64_t p = 0;
  for (; p + np <= n_pan; p += np)
    RT_TILE(mr, np, a, lda, K, pn, p, N, c, ldc);
  for (; p < n_pan; p++)
    RT_TILE(mr, 1, a, lda, K, pn, p, N, c, ldc);
}

RT_TARGET void RT_FN(const float *a, int64_t lda, int64_t B, int64_t K, const float *pn, int64_t N,
                     float *c, int64_t ldc) {
  int64_t n_pan = (N + 15) / 16, b = 0;
  for (; b + RT_MR <= B; b += RT_MR)
    RT_ROWS(RT_MR, a + b * lda, lda, K, pn, n_pan, N, c + b * ldc, ldc);
  const float *ab = a + b * lda;
  float *cb = c + b * ldc;
  switch (B - b) { /* constant row counts: the tiles unroll */
  case 7: RT_ROWS(7 < RT_MR ? 7 : 1, ab, lda, K, pn, n_pan, N, cb, ldc); break;
  case 6: RT_ROWS(6 < RT_MR ? 6 : 1, ab, lda, K, pn, n_pan, N, cb, ldc); break;
  case 5: RT_ROWS(5 < RT_MR ? 5 : 1, ab, lda, K, pn, n_pan, N, cb, ldc); break;
  case 4: RT_ROWS(4 < RT_MR ? 4 : 1, ab, lda, K, pn, n_pan, N, cb, ldc); break;
  case 3: RT_ROWS(3, ab, lda, K, pn, n_pan, N, cb, ldc); break;
  case 2: RT_ROWS(2, ab, lda, K, pn, n_pan, N, cb, ldc); break;
  case 1: RT_ROWS(1, ab, lda, K, pn, n_pan, N, cb, ldc); break;
  default: break;
  }
}

#undef RT_NV
#undef RT_NP_MAX
#undef RT_TILE
#undef RT_ROWS
#undef RT_CAT
#undef RT_CAT2
