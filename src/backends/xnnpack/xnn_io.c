/* save()/load(): the lowered program in one binary file, `xnnpack.bin`:
 *
 *   header   magic "AITXNNP", format version, sizeof(xop), dtype, the graph's
 *            value/node/input/output counts, op/value/constant counts, and an
 *            FNV-1a 64 checksum of the payload
 *   payload  xops and values as stored in memory, then per constant: source
 *            value (initializers are re-bound to the graph, not copied),
 *            dtype, rank, dims, byte count and the bytes of owned constants
 *
 * Everything read back is checked (ranges, sizes, checksum, the graph it
 * was made for) before use: a corrupted file is an error, never a crash.
 * XNNPACK's own weight packing happens per runtime and cannot be saved by
 * this version; what is saved is the folding and the layout packing. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "backends/xnnpack/xnn_impl.h"
#include "core/fileio.h"

#define XIO_MAGIC "AITXNNP"
#define XIO_VERSION 1u
#define XIO_FILE "xnnpack.bin"

/* Fields sized so neither struct has padding bytes. */
typedef struct xio_header {
  char magic[8];
  uint32_t version, xop_size, fp16, n_gvalues, n_gnodes, n_ginputs, n_goutputs;
  uint32_t n_ops, n_vals, n_consts, reserved0, reserved1;
  uint64_t checksum;
} xio_header;

typedef struct xio_const {
  int32_t src, dtype, rank, reserved;
  int64_t dims[AIT_MAX_RANK];
  uint64_t nbytes;
} xio_const;

_Static_assert(sizeof(xop) == 264, "xop has padding: saved files would hold garbage bytes");
_Static_assert(sizeof(xio_header) == 64 && sizeof(xio_const) == 88, "padding in the file format");

static uint64_t fnv1a(const uint8_t *p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

typedef struct wbuf {
  uint8_t *p;
  size_t n, cap;
} wbuf;

static ait_status put(wbuf *b, const void *data, size_t n) {
  if (b->n + n > b->cap) {
    size_t nc = b->cap ? b->cap : 4096;
    while (nc < b->n + n)
      nc *= 2;
    uint8_t *q = realloc(b->p, nc);
    if (!q) return ait_err(AIT_E_NOMEM, "out of memory");
    b->p = q;
    b->cap = nc;
  }
  if (n) memcpy(b->p + b->n, data, n);
  b->n += n;
  return AIT_OK;
}

static ait_status write_all(const xnn_state *s, wbuf *b) {
  const ait_graph *g = s->g;
  xio_header h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, XIO_MAGIC, sizeof XIO_MAGIC);
  h.version = XIO_VERSION;
  h.xop_size = sizeof(xop);
  h.fp16 = s->fp16;
  h.n_gvalues = (uint32_t)g->n_values;
  h.n_gnodes = (uint32_t)g->n_nodes;
  h.n_ginputs = (uint32_t)g->n_inputs;
  h.n_goutputs = (uint32_t)g->n_outputs;
  h.n_ops = (uint32_t)s->n_ops;
  h.n_vals = (uint32_t)s->n_vals;
  h.n_consts = (uint32_t)s->n_consts;
  AIT_TRY(put(b, &h, sizeof h));
  AIT_TRY(put(b, s->ops, (size_t)s->n_ops * sizeof(xop)));
  AIT_TRY(put(b, s->vals, (size_t)s->n_vals * sizeof(xval)));
  for (int i = 0; i < s->n_consts; i++) {
    const ait_tensor *t = s->consts[i].t;
    xio_const c;
    memset(&c, 0, sizeof c);
    c.src = s->consts[i].src;
    c.dtype = t->dtype;
    c.rank = t->rank;
    memcpy(c.dims, t->dims, sizeof c.dims);
    c.nbytes = ait_tensor_nbytes(t);
    AIT_TRY(put(b, &c, sizeof c));
    if (c.src < 0) AIT_TRY(put(b, t->data, c.nbytes));
  }
  uint64_t sum = fnv1a(b->p + sizeof h, b->n - sizeof h);
  memcpy(b->p + offsetof(xio_header, checksum), &sum, sizeof sum);
  return AIT_OK;
}

ait_status xnn_save(const xnn_state *s, const char *dir) {
  wbuf b = {0};
  char *path = ait_path_join(dir, XIO_FILE);
  ait_status st = path ? write_all(s, &b) : ait_err(AIT_E_NOMEM, "out of memory");
  if (!st) st = ait_write_file_atomic(path, b.p, b.n);
  free(b.p);
  free(path);
  return st;
}

/* ---- load --------------------------------------------------------------------- */

typedef struct rd {
  const uint8_t *p;
  size_t n, at;
  const char *path;
} rd;

static ait_status corrupt(const rd *r, const char *what) {
  return ait_err(AIT_E_PARSE, "xnnpack: %s is corrupted: %s", r->path, what);
}

static ait_status take(rd *r, void *out, size_t n, const char *what) {
  if (n > r->n - r->at) return corrupt(r, what);
  memcpy(out, r->p + r->at, n);
  r->at += n;
  return AIT_OK;
}

static ait_status read_const(xnn_state *s, rd *r) {
  const ait_graph *g = s->g;
  xio_const c;
  AIT_TRY(take(r, &c, sizeof c, "a constant header is cut short"));
  const ait_dtype_traits *tr = ait_dtype_traits_of((ait_dtype)c.dtype);
  if (!tr || !tr->size || c.rank < 0 || c.rank > AIT_MAX_RANK)
    return corrupt(r, "a constant has a bad dtype or rank");
  uint64_t numel = 1;
  for (int i = 0; i < c.rank; i++) {
    if (c.dims[i] < 0 || c.dims[i] > (1ll << 40)) return corrupt(r, "a constant has a bad dim");
    numel *= (uint64_t)c.dims[i];
    if (numel > (1ull << 40)) return corrupt(r, "a constant is too large");
  }
  if (c.nbytes != numel * tr->size) return corrupt(r, "a constant's size does not match");
  if (c.src >= 0) {
    const ait_value *v = c.src < g->n_values ? &g->values[c.src] : NULL;
    const ait_tensor *t = v && v->producer < 0 ? v->init : NULL;
    if (!t || t->kind != AIT_KIND_TENSOR || t->dtype != (ait_dtype)c.dtype || t->rank != c.rank ||
        memcmp(t->dims, c.dims, (size_t)c.rank * sizeof *c.dims))
      return ait_err(AIT_E_INVALID_MODEL,
                     "xnnpack: %s was saved for another model: initializer %d differs", r->path,
                     c.src);
    return xnn_add_const(s, (ait_tensor *)t, c.src) < 0 ? AIT_E_NOMEM : AIT_OK;
  }
  if (c.nbytes > r->n - r->at) return corrupt(r, "constant data is cut short");
  ait_tensor *t = ait_tensor_new((ait_dtype)c.dtype, c.rank, c.dims);
  if (!t) return AIT_E_NOMEM;
  memcpy(t->data, r->p + r->at, c.nbytes);
  r->at += c.nbytes;
  return xnn_add_const(s, t, -1) < 0 ? AIT_E_NOMEM : AIT_OK;
}

static bool f32_const(const xnn_state *s, int c, int rank) {
  return c >= 0 && c < s->n_consts && s->consts[c].t->dtype == AIT_FLOAT32 &&
         (rank < 0 || s->consts[c].t->rank == rank);
}

/* Every index an xop holds points where the planner expects it to. */
static bool op_valid(const xnn_state *s, int i) {
  const xop *op = &s->ops[i];
  if (op->kind < XK_CONV || op->kind >= XK_END || op->node < 0 || op->node >= s->g->n_nodes ||
      op->n_in < 1 || op->n_in > XNN_MAX_IN || op->out < 0 || op->out >= s->n_vals ||
      op->n_spec < 0 || op->n_spec > 2 * AIT_MAX_RANK || s->vals[op->out].prod != i ||
      s->vals[op->out].cst >= 0)
    return false;
  for (int j = 0; j < XNN_MAX_IN; j++) {
    int v = op->in[j];
    if (j < op->n_in ? (v < 0 || v >= s->n_vals) : v != -1) return false;
    if (j < op->n_in && s->vals[v].prod >= i) return false; /* topological order */
    if (j < op->n_in && s->vals[v].cst >= 0 && s->consts[s->vals[v].cst].t->dtype != AIT_FLOAT32)
      return false;
  }
  switch (op->kind) {
  case XK_CONV:
  case XK_DWCONV:
  case XK_DECONV:
    /* CONV/DECONV: groups divide the filters; DWCONV: the multiplier divides them */
    return op->groups >= 1 && f32_const(s, op->w, 4) && f32_const(s, op->b, 1) &&
           s->consts[op->w].t->dims[op->kind == XK_DWCONV ? 3 : 0] % op->groups == 0;
  case XK_FC: return f32_const(s, op->w, 2) && (op->b == -1 || f32_const(s, op->b, 1));
  case XK_BINARY: return op->n_in == 2 && op->sub >= 0 && op->sub < XB_END;
  case XK_UNARY: return op->sub >= 0 && op->sub < XU_END;
  case XK_PRELU: return op->n_in == 2 && s->vals[op->in[1]].cst >= 0;
  case XK_RESHAPE: return op->sub >= 0 && op->sub < XR_END;
  default: return true;
  }
}

static ait_status read_all(xnn_state *s, rd *r) {
  const ait_graph *g = s->g;
  xio_header h;
  AIT_TRY(take(r, &h, sizeof h, "the header is cut short"));
  if (memcmp(h.magic, XIO_MAGIC, sizeof h.magic)) return corrupt(r, "not an xnnpack state file");
  if (h.version != XIO_VERSION || h.xop_size != sizeof(xop))
    return ait_err(AIT_E_INVALID_MODEL, "xnnpack: %s has format %u, this build reads %u", r->path,
                   h.version, XIO_VERSION);
  if (h.fp16 != (uint32_t)s->fp16)
    return ait_err(AIT_E_INVALID_ARG, "xnnpack: %s was built with dtype=%s, loading dtype=%s",
                   r->path, h.fp16 ? "fp16" : "fp32", s->fp16 ? "fp16" : "fp32");
  if (h.n_gvalues != (uint32_t)g->n_values || h.n_gnodes != (uint32_t)g->n_nodes ||
      h.n_ginputs != (uint32_t)g->n_inputs || h.n_goutputs != (uint32_t)g->n_outputs)
    return ait_err(AIT_E_INVALID_MODEL, "xnnpack: %s was saved for another graph", r->path);
  if (fnv1a(r->p + sizeof h, r->n - sizeof h) != h.checksum) return corrupt(r, "checksum mismatch");
  if (h.n_vals < h.n_gvalues || h.n_ops > (1u << 24) || h.n_vals > (1u << 26) ||
      h.n_consts > (1u << 26))
    return corrupt(r, "bad counts");
  s->ops = malloc(((size_t)h.n_ops + 1) * sizeof *s->ops);
  s->vals = malloc(((size_t)h.n_vals + 1) * sizeof *s->vals);
  if (!s->ops || !s->vals) return ait_err(AIT_E_NOMEM, "out of memory");
  s->cap_ops = (int)h.n_ops + 1;
  s->cap_vals = (int)h.n_vals + 1;
  AIT_TRY(take(r, s->ops, (size_t)h.n_ops * sizeof(xop), "the ops are cut short"));
  s->n_ops = (int)h.n_ops;
  AIT_TRY(take(r, s->vals, (size_t)h.n_vals * sizeof(xval), "the values are cut short"));
  s->n_vals = (int)h.n_vals;
  for (uint32_t i = 0; i < h.n_consts; i++)
    AIT_TRY(read_const(s, r));
  if (r->at != r->n) return corrupt(r, "trailing bytes");
  for (int v = 0; v < s->n_vals; v++)
    if (s->vals[v].cst < -1 || s->vals[v].cst >= s->n_consts || s->vals[v].prod < -1 ||
        s->vals[v].prod >= s->n_ops)
      return corrupt(r, "a value points outside the program");
  for (int i = 0; i < s->n_ops; i++)
    if (!op_valid(s, i)) return corrupt(r, "an op points outside the program");
  for (int k = 0; k < g->n_outputs; k++)
    if (g->outputs[k] < 0 || g->outputs[k] >= s->n_vals) return corrupt(r, "bad outputs");
  return AIT_OK;
}

ait_status xnn_load(xnn_state *s, const char *dir) {
  char *path = ait_path_join(dir, XIO_FILE);
  if (!path) return ait_err(AIT_E_NOMEM, "out of memory");
  void *data = NULL;
  size_t size = 0;
  ait_status st = ait_read_file(path, &data, &size);
  if (!st) {
    rd r = {data, size, 0, path};
    st = read_all(s, &r);
  }
  free(data);
  free(path);
  return st;
}
