/* save()/load(): the lowered program in one binary file, `xnnpack.bin`, in
 * the saved-state format (backends/common/state_io.h; owner "xnnpack",
 * version XIO_VERSION), with the sections
 *
 *   head     sizeof(xop), dtype, the graph's value/node/input/output
 *            counts, op/value/constant counts
 *   ops      the xops as stored in memory
 *   values   the values as stored in memory
 *   consts   per constant: source value (initializers are re-bound to the
 *            graph, not copied), dtype, rank, dims, byte count and the
 *            bytes of owned constants
 *
 * Everything read back is checked (ranges, sizes, the graph it was made
 * for) before use: a corrupted file is an error, never a crash. XNNPACK's
 * own weight packing happens per runtime and cannot be saved by this
 * version; what is saved is the folding and the layout packing. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "backends/common/state_io.h"
#include "backends/xnnpack/xnn_impl.h"
#include "core/fileio.h"

#define XIO_OWNER "xnnpack"
#define XIO_VERSION 2u /* 2: the saved-state format */
#define XIO_FILE "xnnpack.bin"

/* Fields sized so neither struct has padding bytes. */
typedef struct xio_head {
  uint32_t xop_size, fp16, n_gvalues, n_gnodes, n_ginputs, n_goutputs;
  uint32_t n_ops, n_vals, n_consts, reserved;
} xio_head;

typedef struct xio_const {
  int32_t src, dtype, rank, reserved;
  int64_t dims[AIT_MAX_RANK];
  uint64_t nbytes;
} xio_const;

_Static_assert(sizeof(xop) == 264, "xop has padding: saved files would hold garbage bytes");
_Static_assert(sizeof(xio_head) == 40 && sizeof(xio_const) == 88, "padding in the file format");

static void write_all(const xnn_state *s, ait_state_out *o) {
  const ait_graph *g = s->g;
  xio_head h = {sizeof(xop),           (uint32_t)s->fp16,
                (uint32_t)g->n_values, (uint32_t)g->n_nodes,
                (uint32_t)g->n_inputs, (uint32_t)g->n_outputs,
                (uint32_t)s->n_ops,    (uint32_t)s->n_vals,
                (uint32_t)s->n_consts, 0};
  ait_state_out_section(o, "head");
  ait_state_out_put(o, &h, sizeof h);
  ait_state_out_section(o, "ops");
  ait_state_out_put(o, s->ops, (size_t)s->n_ops * sizeof(xop));
  ait_state_out_section(o, "values");
  ait_state_out_put(o, s->vals, (size_t)s->n_vals * sizeof(xval));
  ait_state_out_section(o, "consts");
  for (int i = 0; i < s->n_consts; i++) {
    const ait_tensor *t = s->consts[i].t;
    xio_const c;
    memset(&c, 0, sizeof c);
    c.src = s->consts[i].src;
    c.dtype = t->dtype;
    c.rank = t->rank;
    memcpy(c.dims, t->dims, sizeof c.dims);
    c.nbytes = ait_tensor_nbytes(t);
    ait_state_out_put(o, &c, sizeof c);
    if (c.src < 0) ait_state_out_put(o, t->data, c.nbytes);
  }
}

ait_status xnn_save(const xnn_state *s, const char *dir) {
  char *path = ait_path_join(dir, XIO_FILE);
  if (!path) return ait_err(AIT_E_NOMEM, "out of memory");
  ait_state_out o;
  ait_state_out_init(&o, XIO_OWNER, XIO_VERSION);
  write_all(s, &o);
  ait_status st = ait_state_out_save(&o, path);
  free(path);
  return st;
}

/* ---- load --------------------------------------------------------------------- */

typedef ait_state_rd rd;

static ait_status corrupt(const rd *r, const char *what) { return ait_state_corrupt(r, what); }

static ait_status take(rd *r, void *out, size_t n, const char *what) {
  return ait_state_get(r, out, n) ? AIT_OK : corrupt(r, what);
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
                     "xnnpack: %s was saved for another model: initializer %d differs", r->in->path,
                     c.src);
    return xnn_add_const(s, (ait_tensor *)t, c.src) < 0 ? AIT_E_NOMEM : AIT_OK;
  }
  if (c.nbytes > ait_state_left(r)) return corrupt(r, "constant data is cut short");
  ait_tensor *t = ait_tensor_new((ait_dtype)c.dtype, c.rank, c.dims);
  if (!t) return AIT_E_NOMEM;
  ait_state_get(r, t->data, c.nbytes);
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

static ait_status read_all(xnn_state *s, ait_state_in *in) {
  const ait_graph *g = s->g;
  xio_head h;
  rd r0, *r = &r0;
  AIT_TRY(ait_state_section(in, "head", r));
  AIT_TRY(take(r, &h, sizeof h, "cut short"));
  AIT_TRY(ait_state_end(r));
  if (h.xop_size != sizeof(xop))
    return ait_err(AIT_E_INVALID_MODEL, "xnnpack: %s holds ops of %u bytes, this build's are %zu",
                   in->path, h.xop_size, sizeof(xop));
  if (h.fp16 != (uint32_t)s->fp16)
    return ait_err(AIT_E_INVALID_ARG, "xnnpack: %s was built with dtype=%s, loading dtype=%s",
                   in->path, h.fp16 ? "fp16" : "fp32", s->fp16 ? "fp16" : "fp32");
  if (h.n_gvalues != (uint32_t)g->n_values || h.n_gnodes != (uint32_t)g->n_nodes ||
      h.n_ginputs != (uint32_t)g->n_inputs || h.n_goutputs != (uint32_t)g->n_outputs)
    return ait_err(AIT_E_INVALID_MODEL, "xnnpack: %s was saved for another graph", in->path);
  if (h.n_vals < h.n_gvalues || h.n_ops > (1u << 24) || h.n_vals > (1u << 26) ||
      h.n_consts > (1u << 26) || h.reserved)
    return corrupt(r, "bad counts");
  s->ops = malloc(((size_t)h.n_ops + 1) * sizeof *s->ops);
  s->vals = malloc(((size_t)h.n_vals + 1) * sizeof *s->vals);
  if (!s->ops || !s->vals) return ait_err(AIT_E_NOMEM, "out of memory");
  s->cap_ops = (int)h.n_ops + 1;
  s->cap_vals = (int)h.n_vals + 1;
  AIT_TRY(ait_state_section(in, "ops", r));
  AIT_TRY(take(r, s->ops, (size_t)h.n_ops * sizeof(xop), "the ops are cut short"));
  AIT_TRY(ait_state_end(r));
  s->n_ops = (int)h.n_ops;
  AIT_TRY(ait_state_section(in, "values", r));
  AIT_TRY(take(r, s->vals, (size_t)h.n_vals * sizeof(xval), "the values are cut short"));
  AIT_TRY(ait_state_end(r));
  s->n_vals = (int)h.n_vals;
  AIT_TRY(ait_state_section(in, "consts", r));
  for (uint32_t i = 0; i < h.n_consts; i++)
    AIT_TRY(read_const(s, r));
  AIT_TRY(ait_state_end(r));
  AIT_TRY(ait_state_section(in, "values", r)); /* for the messages */
  for (int v = 0; v < s->n_vals; v++)
    if (s->vals[v].cst < -1 || s->vals[v].cst >= s->n_consts || s->vals[v].prod < -1 ||
        s->vals[v].prod >= s->n_ops)
      return corrupt(r, "a value points outside the program");
  for (int k = 0; k < g->n_outputs; k++)
    if (g->outputs[k] < 0 || g->outputs[k] >= s->n_vals) return corrupt(r, "bad outputs");
  AIT_TRY(ait_state_section(in, "ops", r));
  for (int i = 0; i < s->n_ops; i++)
    if (!op_valid(s, i)) return corrupt(r, "an op points outside the program");
  return AIT_OK;
}

ait_status xnn_load(xnn_state *s, const char *dir) {
  char *path = ait_path_join(dir, XIO_FILE);
  if (!path) return ait_err(AIT_E_NOMEM, "out of memory");
  ait_state_in in;
  ait_status st = ait_state_open(&in, path, XIO_OWNER, XIO_VERSION);
  free(path);
  if (st) return st;
  return ait_state_close(&in, read_all(s, &in));
}
