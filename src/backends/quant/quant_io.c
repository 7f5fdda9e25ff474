/* Saving and loading the quantized state: quant_config.json (the full
 * configuration) and quant_weights.bin, in the saved-state format
 * (backends/common/state_io.h; owner "quant", version QNT_VERSION), with
 * the little-endian sections
 *
 *   head     u32 node count, u32 graph node count
 *   nodes    per node: u32 node index, kind, weight type, flags (1 = zero
 *            points), i64 N, K, group length, u32 weight rank, u32 name
 *            length, i64 weight dims[rank], name bytes, N*K codes
 *            (canonical rows; a Conv's reduction axis in (kernel offset,
 *            channel) order), N*G f32 scales (Gemm's alpha folded in), N*G
 *            i8 zero points when flagged
 *
 * Everything read is checked against the graph (node index, op, weight
 * shape, name) and the section's own size before memory is allocated, so a
 * corrupted file is an error with a message, never a crash. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/common/state_io.h"
#include "backends/quant/quant.h"
#include "core/error.h"
#include "core/fileio.h"

#define QNT_OWNER "quant"
#define QNT_VERSION 3u /* 2: node indices of the graph after native's passes; 3: state_io */
#define QNT_MAX_NAME 4096u

static ait_status write_weights(const qnt_state *s, const char *path) {
  ait_state_out o;
  ait_state_out_init(&o, QNT_OWNER, QNT_VERSION);
  ait_state_out_section(&o, "head");
  ait_state_out_u32(&o, (uint32_t)s->n_q);
  ait_state_out_u32(&o, (uint32_t)s->g->n_nodes);
  ait_state_out_section(&o, "nodes");
  uint8_t *row = NULL;
  for (int i = 0; i < s->n_q; i++) {
    const qnt_node *q = &s->q[i];
    const qnt_weight *w = &q->w;
    const char *name = s->g->nodes[q->site.node].name ? s->g->nodes[q->site.node].name : "";
    ait_state_out_u32(&o, (uint32_t)q->site.node);
    ait_state_out_u32(&o, (uint32_t)q->site.kind);
    ait_state_out_u32(&o, (uint32_t)w->type);
    ait_state_out_u32(&o, w->asym ? 1u : 0u);
    ait_state_out_i64(&o, w->N);
    ait_state_out_i64(&o, w->K);
    ait_state_out_i64(&o, w->gsize);
    ait_state_out_u32(&o, (uint32_t)q->site.wrank);
    ait_state_out_u32(&o, (uint32_t)strlen(name));
    for (int k = 0; k < q->site.wrank; k++)
      ait_state_out_i64(&o, q->site.wdims[k]);
    ait_state_out_put(&o, name, strlen(name));
    free(row);
    if (!(row = malloc((size_t)w->K))) {
      ait_state_out_free(&o);
      return ait_err(AIT_E_NOMEM, "out of memory");
    }
    for (int64_t n = 0; n < w->N; n++) { /* canonical rows, whatever the layout in memory */
      for (int64_t k = 0; k < w->K; k++)
        row[k] = qnt_weight_code(w, n, k);
      ait_state_out_put(&o, row, (size_t)w->K);
    }
    ait_state_out_put(&o, w->scale, sizeof(float) * (size_t)(w->N * w->G));
    if (w->asym) ait_state_out_put(&o, w->zero, (size_t)(w->N * w->G));
  }
  free(row);
  ait_status st = ait_state_out_save(&o, path);
  return st ? ait_err_prefix(st, "quant: writing %s", path) : AIT_OK;
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

static bool get(ait_state_rd *b, void *p, size_t n) { return ait_state_get(b, p, n); }

static ait_status bad(const ait_state_rd *b, const char *what) {
  return ait_err(AIT_E_INVALID_MODEL, "quant: %s is corrupted or not for this model: %s",
                 b->in->path, what);
}

static ait_status read_node(ait_state_rd *b, const ait_graph *g, const qnt_config *c, qnt_node *q) {
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
  long long left = (long long)ait_state_left(b),
            need = N * K + w->N * w->G * (4 + (w->asym ? 1 : 0));
  if (N > left || K > left || need > left) return bad(b, "truncated weight data");
  w->n_codes = (size_t)(N * K);
  w->codes = malloc(w->n_codes);
  w->scale = malloc(sizeof(float) * (size_t)(N * w->G));
  w->zero = w->asym ? malloc((size_t)(N * w->G)) : NULL;
  if (!w->codes || !w->scale || (w->asym && !w->zero))
    return ait_err(AIT_E_NOMEM, "out of memory loading %s", b->in->path);
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

static ait_status read_nodes(ait_state_in *in, const ait_graph *g, const qnt_config *c,
                             qnt_node **out, int *n_out) {
  ait_state_rd r;
  uint32_t n = 0, graph_nodes = 0;
  AIT_TRY(ait_state_section(in, "head", &r));
  if (!get(&r, &n, 4) || !get(&r, &graph_nodes, 4)) return ait_state_corrupt(&r, "cut short");
  AIT_TRY(ait_state_end(&r));
  if (graph_nodes != (uint32_t)g->n_nodes || n == 0 || n > graph_nodes)
    return bad(&r, "node counts differ from the model's");
  qnt_node *q = calloc(n, sizeof *q);
  if (!q) return ait_err(AIT_E_NOMEM, "out of memory");
  int done = 0;
  ait_status st = ait_state_section(in, "nodes", &r);
  for (; !st && done < (int)n; done++)
    st = read_node(&r, g, c, &q[done]);
  if (!st) st = ait_state_end(&r);
  if (st) {
    for (int i = 0; i < done && i < (int)n; i++)
      qnt_weight_free(&q[i].w);
    free(q);
    return st;
  }
  *out = q;
  *n_out = (int)n;
  return AIT_OK;
}

/* A regular file only (ait_read_file: a FIFO in a tuned folder would block
 * forever), its size from fstat. */
static ait_status read_weights(const char *path, const ait_graph *g, const qnt_config *c,
                               qnt_node **out, int *n_out) {
  ait_state_in in;
  qnt_node *q = NULL;
  int n = 0;
  AIT_TRY(ait_state_open(&in, path, QNT_OWNER, QNT_VERSION));
  ait_status st = ait_state_close(&in, read_nodes(&in, g, c, &q, &n));
  if (st) { /* a section left unread after the nodes were */
    for (int i = 0; q && i < n; i++)
      qnt_weight_free(&q[i].w);
    free(q);
    return st;
  }
  *out = q;
  *n_out = n;
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
