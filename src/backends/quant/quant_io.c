/* Saving and loading the quantized state: quant_config.json (the full
 * configuration) and quant_weights.bin, a little-endian binary file:
 *
 *   "AITQNTW\0", u32 version = 2, u32 node count, u32 graph node count, u32 0
 *   per node: u32 node index, kind, weight type, flags (1 = zero points),
 *             i64 N, K, group length, u32 weight rank, u32 name length,
 *             i64 weight dims[rank], name bytes,
 *             N*K codes (canonical rows; a Conv's reduction axis in (kernel
 *             offset, channel) order), N*G f32 scales (Gemm's alpha folded
 *             in), N*G i8 zero points when flagged
 *   u64 FNV-1a hash of every byte before it
 *
 * Everything read is checked against the graph (node index, op, weight
 * shape, name) and the file's own size before memory is allocated, so a
 * corrupted file is an error with a message, never a crash. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/quant/quant.h"
#include "core/error.h"
#include "core/fileio.h"

#define QNT_MAGIC "AITQNTW"
#define QNT_VERSION 2u /* 2: node indices of the graph after native's passes */
#define QNT_MAX_NAME 4096u

typedef struct bfile {
  FILE *f;
  uint64_t hash;
  long long left; /* bytes not yet read (reading) */
  bool fail;
  const char *path;
} bfile;

static void hash_bytes(bfile *b, const void *p, size_t n) {
  const uint8_t *c = p;
  for (size_t i = 0; i < n; i++)
    b->hash = (b->hash ^ c[i]) * 1099511628211ull;
}

static void put(bfile *b, const void *p, size_t n) {
  if (b->fail || n == 0) return;
  hash_bytes(b, p, n);
  if (fwrite(p, 1, n, b->f) != n) b->fail = true;
}
static void put_u32(bfile *b, uint32_t v) { put(b, &v, sizeof v); }
static void put_i64(bfile *b, int64_t v) { put(b, &v, sizeof v); }

static ait_status write_weights(const qnt_state *s, const char *path) {
  bfile b = {fopen(path, "wb"), 14695981039346656037ull, 0, false, path};
  if (!b.f) return ait_err(AIT_E_IO, "quant: cannot write %s", path);
  uint8_t *row = NULL;
  put(&b, QNT_MAGIC, 8);
  put_u32(&b, QNT_VERSION);
  put_u32(&b, (uint32_t)s->n_q);
  put_u32(&b, (uint32_t)s->g->n_nodes);
  put_u32(&b, 0);
  for (int i = 0; i < s->n_q && !b.fail; i++) {
    const qnt_node *q = &s->q[i];
    const qnt_weight *w = &q->w;
    const char *name = s->g->nodes[q->site.node].name ? s->g->nodes[q->site.node].name : "";
    put_u32(&b, (uint32_t)q->site.node);
    put_u32(&b, (uint32_t)q->site.kind);
    put_u32(&b, (uint32_t)w->type);
    put_u32(&b, w->asym ? 1u : 0u);
    put_i64(&b, w->N);
    put_i64(&b, w->K);
    put_i64(&b, w->gsize);
    put_u32(&b, (uint32_t)q->site.wrank);
    put_u32(&b, (uint32_t)strlen(name));
    for (int k = 0; k < q->site.wrank; k++)
      put_i64(&b, q->site.wdims[k]);
    put(&b, name, strlen(name));
    free(row);
    if (!(row = malloc((size_t)w->K))) {
      fclose(b.f);
      return ait_err(AIT_E_NOMEM, "out of memory");
    }
    for (int64_t n = 0; n < w->N; n++) { /* canonical rows, whatever the layout in memory */
      for (int64_t k = 0; k < w->K; k++)
        row[k] = qnt_weight_code(w, n, k);
      put(&b, row, (size_t)w->K);
    }
    put(&b, w->scale, sizeof(float) * (size_t)(w->N * w->G));
    if (w->asym) put(&b, w->zero, (size_t)(w->N * w->G));
  }
  free(row);
  uint64_t h = b.hash;
  if (!b.fail && fwrite(&h, sizeof h, 1, b.f) != 1) b.fail = true;
  if (fclose(b.f) != 0) b.fail = true;
  if (b.fail) return ait_err(AIT_E_IO, "quant: writing %s failed", path);
  return AIT_OK;
}

ait_status qnt_save(const qnt_state *s, const char *dir) {
  char *cpath = ait_path_join(dir, "quant_config.json");
  char *wpath = ait_path_join(dir, "quant_weights.bin");
  char *json = qnt_config_to_json(&s->cfg);
  ait_status st = cpath && wpath && json ? AIT_OK : ait_err(AIT_E_NOMEM, "out of memory");
  if (!st) st = ait_write_file_atomic(cpath, json, strlen(json));
  if (!st) st = write_weights(s, wpath);
  free(cpath);
  free(wpath);
  free(json);
  return st;
}

/* ---- loading --------------------------------------------------------------- */

static bool get(bfile *b, void *p, size_t n) {
  if (b->fail || (long long)n > b->left || fread(p, 1, n, b->f) != n) {
    b->fail = true;
    return false;
  }
  b->left -= (long long)n;
  hash_bytes(b, p, n);
  return true;
}

static ait_status bad(bfile *b, const char *what) {
  return ait_err(AIT_E_INVALID_MODEL, "quant: %s is corrupted or not for this model: %s", b->path,
                 what);
}

static ait_status read_node(bfile *b, const ait_graph *g, const qnt_config *c, qnt_node *q) {
  uint32_t idx, kind, type, flags, wrank, name_len;
  int64_t N, K, gsize;
  if (!get(b, &idx, 4) || !get(b, &kind, 4) || !get(b, &type, 4) || !get(b, &flags, 4) ||
      !get(b, &N, 8) || !get(b, &K, 8) || !get(b, &gsize, 8) || !get(b, &wrank, 4) ||
      !get(b, &name_len, 4))
    return bad(b, "truncated node header");
  if (idx >= (uint32_t)g->n_nodes || wrank > AIT_MAX_RANK || name_len > QNT_MAX_NAME)
    return bad(b, "node index, weight rank or name length out of range");
  if (!qnt_site_of(g, (int)idx, &q->site) || (uint32_t)q->site.kind != kind)
    return bad(b, "a saved node is not a MatMul/Gemm/Conv with a constant weight in this model");
  int64_t dims[AIT_MAX_RANK];
  char name[QNT_MAX_NAME + 1];
  for (uint32_t k = 0; k < wrank; k++)
    if (!get(b, &dims[k], 8)) return bad(b, "truncated weight shape");
  if (!get(b, name, name_len)) return bad(b, "truncated node name");
  name[name_len] = '\0';
  const ait_node *n = &g->nodes[idx];
  if ((int)wrank != q->site.wrank || memcmp(dims, q->site.wdims, sizeof(int64_t) * wrank) ||
      strcmp(name, n->name ? n->name : "") || N != q->site.N || K != q->site.K)
    return bad(b, "a saved weight's node name or shape differs from the model's");
  if (type != (uint32_t)c->weights || (type != QNT_INT8 && type != QNT_FP8) || flags > 1 ||
      (flags && type != QNT_INT8) || gsize < 1 || gsize > K)
    return bad(b, "weight format does not match the saved configuration");
  qnt_weight *w = &q->w;
  w->type = (qnt_wtype)type;
  w->N = N;
  w->K = K;
  w->gsize = gsize;
  w->G = (K + gsize - 1) / gsize;
  w->asym = flags != 0;
  w->layout = QNT_L_ROWS;
  long long need = N * K + w->N * w->G * (4 + (w->asym ? 1 : 0));
  if (N > b->left || K > b->left || need > b->left) return bad(b, "truncated weight data");
  w->n_codes = (size_t)(N * K);
  w->codes = malloc(w->n_codes);
  w->scale = malloc(sizeof(float) * (size_t)(N * w->G));
  w->zero = w->asym ? malloc((size_t)(N * w->G)) : NULL;
  if (!w->codes || !w->scale || (w->asym && !w->zero))
    return ait_err(AIT_E_NOMEM, "out of memory loading %s", b->path);
  if (!get(b, w->codes, w->n_codes) || !get(b, w->scale, sizeof(float) * (size_t)(N * w->G)) ||
      (w->asym && !get(b, w->zero, (size_t)(N * w->G))))
    return bad(b, "truncated weight data");
  for (int64_t i = 0; i < N * w->G; i++)
    if (!isfinite(w->scale[i]) || w->scale[i] == 0) return bad(b, "a scale is not finite");
  if (w->type == QNT_FP8)
    for (size_t i = 0; i < w->n_codes; i++)
      if ((w->codes[i] & 0x7F) == 0x7F) return bad(b, "an fp8 code is NaN");
  return AIT_OK;
}

static ait_status read_weights(const char *path, const ait_graph *g, const qnt_config *c,
                               qnt_node **out, int *n_out) {
  /* a regular file only (a FIFO in a tuned folder would block fopen and
   * fseek forever), its size from fstat */
  int fd;
  long long fsize;
  ait_status ost = ait_open_regular(path, &fd, &fsize);
  if (ost) return ait_err_prefix(ost, "quant");
  bfile b = {fdopen(fd, "rb"), 14695981039346656037ull, fsize - (long long)sizeof(uint64_t), false,
             path};
  if (!b.f) {
    close(fd);
    return ait_err(AIT_E_IO, "quant: cannot open %s", path);
  }
  char magic[8];
  uint32_t version = 0, n = 0, graph_nodes = 0, zero = 1;
  qnt_node *q = NULL;
  int done = 0;
  ait_status st = AIT_OK;
  if (!get(&b, magic, 8) || memcmp(magic, QNT_MAGIC, 8) || !get(&b, &version, 4) ||
      !get(&b, &n, 4) || !get(&b, &graph_nodes, 4) || !get(&b, &zero, 4))
    st = bad(&b, "not a quant weights file");
  else if (version != QNT_VERSION)
    st = ait_err(AIT_E_INVALID_MODEL, "quant: %s has format version %u; this build reads %u", path,
                 version, QNT_VERSION);
  else if (graph_nodes != (uint32_t)g->n_nodes || n == 0 || n > graph_nodes || zero)
    st = bad(&b, "node counts differ from the model's");
  else if (!(q = calloc(n, sizeof *q)))
    st = ait_err(AIT_E_NOMEM, "out of memory");
  for (; !st && done < (int)n; done++)
    st = read_node(&b, g, c, &q[done]);
  if (!st) {
    done = (int)n;
    uint64_t want = b.hash, h = 0;
    if (fread(&h, sizeof h, 1, b.f) != 1 || h != want || fgetc(b.f) != EOF)
      st = bad(&b, "checksum mismatch");
  }
  fclose(b.f);
  if (st) {
    for (int i = 0; q && i <= done && i < (int)n; i++)
      qnt_weight_free(&q[i].w);
    free(q);
    return st;
  }
  *out = q;
  *n_out = (int)n;
  return AIT_OK;
}

ait_status qnt_load(const ait_graph *g, const char *dir, qnt_config *c, qnt_node **q, int *n) {
  char *cpath = ait_path_join(dir, "quant_config.json");
  char *wpath = ait_path_join(dir, "quant_weights.bin");
  void *text = NULL;
  size_t size = 0;
  bool has_filter;
  ait_status st = cpath && wpath ? AIT_OK : ait_err(AIT_E_NOMEM, "out of memory");
  if (!st && (st = ait_read_file_max(cpath, AIT_MAX_META_BYTES, &text, &size)))
    ait_err_prefix(st, "quant");
  if (!st) st = qnt_config_parse_json(text, cpath, c, &has_filter);
  if (!st) st = read_weights(wpath, g, c, q, n);
  free(text);
  free(cpath);
  free(wpath);
  return st;
}
