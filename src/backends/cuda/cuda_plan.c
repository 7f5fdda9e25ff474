/* Plans of the cuda backend, one per input signature: a copy of the state's
 * graph whose shapes are made concrete for these inputs, values that depend
 * only on shapes and constants computed on the host (Shape -> Gather ->
 * Concat -> Reshape chains), device tensors and steps for every other node,
 * and an arena placed by liveness (a tensor lives from the first step that
 * touches its bytes to the last; views extend their root). */
#ifdef AIT_HAVE_CUDA

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_impl.h"
#include "ir/passes/passes.h"
#include "runtime/eager.h"

#define CU_ALIGN 256

/* Kernels take ait_dtype codes as they are (ONNX's numbering). */
_Static_assert((int)CUK_F32 == (int)AIT_FLOAT32 && (int)CUK_F16 == (int)AIT_FLOAT16 &&
                   (int)CUK_BF16 == (int)AIT_BFLOAT16 && (int)CUK_I64 == (int)AIT_INT64 &&
                   (int)CUK_I32 == (int)AIT_INT32 && (int)CUK_I8 == (int)AIT_INT8 &&
                   (int)CUK_U8 == (int)AIT_UINT8 && (int)CUK_BOOL == (int)AIT_BOOL,
               "cuda_kernels.h type codes must equal ait_dtype");

ait_dtype cu_store_type(const cu_state *s, ait_dtype dt) {
  return dt == AIT_FLOAT32 || dt == AIT_FLOAT16 || dt == AIT_BFLOAT16 ? s->fdt : dt;
}

int cu_signature_cap(const ait_tensor *const *in, int n_in) {
  int cap = 1;
  for (int i = 0; i < n_in; i++)
    cap += 2 + CU_HOST_INPUT_MAX + (in[i] ? in[i]->rank : 0);
  return cap;
}

uint64_t cu_signature(const ait_graph *g, const ait_tensor *const *in, int n_in, int64_t *sig,
                      int *n_sig) {
  int n = 0;
  ait_plan_signature(in, n_in, sig, &n);
  for (int i = 0; i < n_in && i < g->n_inputs; i++) {
    const ait_tensor *t = in[i];
    if (!t || t->kind != AIT_KIND_TENSOR || !cu_host_input(g, g->inputs[i])) continue;
    const ait_dtype_traits *tr = ait_dtype_traits_of(t->dtype);
    int64_t m = ait_tensor_numel(t);
    for (int64_t k = 0; tr && tr->is_int && k < m && k < CU_HOST_INPUT_MAX; k++)
      sig[n++] = ait_load_i64(tr, t->data, k);
  }
  uint64_t h = 1469598103934665603ull;
  for (int k = 0; k < n; k++)
    h = (h ^ (uint64_t)sig[k]) * 1099511628211ull;
  *n_sig = n;
  return h;
}

void cu_strides(const cu_tensor *t, int64_t *st) {
  if (t->layout == CU_NHWC && t->rank == 4) {
    int64_t C = t->dims[1], H = t->dims[2], W = t->dims[3];
    st[0] = H * W * C;
    st[1] = 1;
    st[2] = W * C;
    st[3] = C;
    return;
  }
  ait_shape_strides(t->rank, t->dims, st);
}

/* ---- tensors and steps ----------------------------------------------------- */

static ait_status push_tensor(cu_plan *p, const cu_tensor *t, int *idx) {
  if (p->n_t == p->cap_t) {
    int cap = p->cap_t ? p->cap_t * 2 : 256;
    cu_tensor *more = realloc(p->t, sizeof *more * (size_t)cap);
    if (!more) return ait_err(AIT_E_NOMEM, "cuda: out of memory planning");
    p->t = more;
    p->cap_t = cap;
  }
  *idx = p->n_t;
  p->t[p->n_t] = *t;
  if (t->store != CU_ST_VIEW) p->t[p->n_t].root = p->n_t;
  p->n_t++;
  return AIT_OK;
}

static cu_tensor tensor_of(ait_dtype dt, int rank, const int64_t *dims, cu_layout lay,
                           cu_store store, int value) {
  cu_tensor t;
  memset(&t, 0, sizeof t);
  t.dt = dt;
  t.rank = rank;
  for (int k = 0; k < rank; k++)
    t.dims[k] = dims[k];
  t.layout = rank == 4 ? lay : CU_PLAIN;
  t.store = store;
  t.root = -1;
  t.offset = -1;
  t.bytes = ait_shape_numel(rank, dims) * (int64_t)ait_elem_size(dt);
  t.first = INT_MAX;
  t.last = -1;
  t.value = value;
  return t;
}

ait_status cu_step_add(cu_planner *pl, int node, const char *what, cu_step_fn run, void *prm,
                       cu_step **st) {
  cu_plan *p = pl->p;
  if (p->n_steps == p->cap_steps) {
    int cap = p->cap_steps ? p->cap_steps * 2 : 256;
    cu_step *more = realloc(p->steps, sizeof *more * (size_t)cap);
    if (!more) {
      free(prm);
      return ait_err(AIT_E_NOMEM, "cuda: out of memory planning");
    }
    p->steps = more;
    p->cap_steps = cap;
  }
  cu_step *s = &p->steps[p->n_steps++];
  memset(s, 0, sizeof *s);
  s->what = what;
  s->node = node;
  s->run = run;
  s->prm = prm;
  *st = s;
  return AIT_OK;
}

void cu_step_use(cu_step *st, int t) {
  if (t >= 0 && st->n_use < CU_STEP_USES) st->use[st->n_use++] = t;
}

/* ---- values to tensors ---------------------------------------------------- */

static bool dims_known(const ait_value *v) {
  if (v->rank < 0 || v->type != AIT_VT_TENSOR) return false;
  for (int k = 0; k < v->rank; k++)
    if (v->dims[k].v < 0) return false;
  return true;
}

static void value_dims(const ait_value *v, int64_t *dims) {
  for (int k = 0; k < v->rank; k++)
    dims[k] = v->dims[k].v;
}

ait_status cu_out(cu_planner *pl, int v, cu_layout lay, int *t) {
  const ait_value *val = &pl->g->values[v];
  if (!dims_known(val))
    return ait_err(AIT_E_SHAPE, "cuda: the shape of '%s' is not known for these input shapes",
                   val->name);
  if (!cu_dtype_ok(val->dtype))
    return ait_err(AIT_E_UNSUPPORTED, "cuda: '%s' has type %s, which the device does not store",
                   val->name, ait_dtype_name(val->dtype));
  if (pl->p->vt[CU_PLAIN][v] >= 0 || pl->p->vt[CU_NHWC][v] >= 0)
    return ait_err(AIT_E_INTERNAL, "cuda: value '%s' is produced twice", val->name);
  int64_t dims[AIT_MAX_RANK];
  value_dims(val, dims);
  cu_tensor tt = tensor_of(cu_store_type(pl->s, val->dtype), val->rank, dims, lay, CU_ST_ARENA, v);
  AIT_TRY(push_tensor(pl->p, &tt, t));
  pl->p->vt[pl->p->t[*t].layout][v] = *t;
  return AIT_OK;
}

ait_status cu_temp(cu_planner *pl, ait_dtype dt, int rank, const int64_t *dims, cu_layout lay,
                   int *t) {
  cu_tensor tt = tensor_of(dt, rank, dims, lay, CU_ST_ARENA, -1);
  return push_tensor(pl->p, &tt, t);
}

ait_status cu_weight_tensor(cu_planner *pl, ait_dtype dt, int rank, const int64_t *dims, void *ptr,
                            int *t) {
  cu_tensor tt = tensor_of(dt, rank, dims, CU_PLAIN, CU_ST_WEIGHT, -1);
  tt.ptr = ptr;
  return push_tensor(pl->p, &tt, t);
}

/* Value v as a view of src at byte offset off: all of it (whole) or a part
 * within it. */
static ait_status view_at(cu_planner *pl, int v, int src, int64_t off, bool whole) {
  cu_plan *p = pl->p;
  const ait_value *val = &pl->g->values[v];
  if (!dims_known(val))
    return ait_err(AIT_E_SHAPE, "cuda: the shape of '%s' is not known for these input shapes",
                   val->name);
  if (p->t[src].layout != CU_PLAIN)
    return ait_err(AIT_E_INTERNAL, "cuda: %s a channels-last tensor for '%s'",
                   whole ? "view of" : "part of", val->name);
  int64_t dims[AIT_MAX_RANK];
  value_dims(val, dims);
  cu_tensor tt = tensor_of(p->t[src].dt, val->rank, dims, CU_PLAIN, CU_ST_VIEW, v);
  if (whole && tt.bytes != p->t[src].bytes)
    return ait_err(AIT_E_SHAPE, "cuda: '%s' (%lld bytes) cannot view %lld bytes", val->name,
                   (long long)tt.bytes, (long long)p->t[src].bytes);
  if (off < 0 || off + tt.bytes > p->t[src].bytes)
    return ait_err(AIT_E_SHAPE, "cuda: '%s' (%lld bytes at %lld) is not within %lld bytes",
                   val->name, (long long)tt.bytes, (long long)off, (long long)p->t[src].bytes);
  tt.root = p->t[src].root;
  tt.voff = p->t[src].voff + off;
  int t;
  AIT_TRY(push_tensor(p, &tt, &t));
  p->vt[CU_PLAIN][v] = t;
  return AIT_OK;
}

ait_status cu_view(cu_planner *pl, int v, int src) { return view_at(pl, v, src, 0, true); }

ait_status cu_view_dims(cu_planner *pl, int src, int rank, const int64_t *dims, int *t) {
  cu_plan *p = pl->p;
  if (p->t[src].layout != CU_PLAIN)
    return ait_err(AIT_E_INTERNAL, "cuda: view of a channels-last tensor");
  cu_tensor tt = tensor_of(p->t[src].dt, rank, dims, CU_PLAIN, CU_ST_VIEW, p->t[src].value);
  if (tt.bytes != p->t[src].bytes)
    return ait_err(AIT_E_SHAPE, "cuda: a view of %lld bytes over %lld", (long long)tt.bytes,
                   (long long)p->t[src].bytes);
  tt.root = p->t[src].root;
  tt.voff = p->t[src].voff;
  return push_tensor(p, &tt, t);
}

ait_status cu_view_part(cu_planner *pl, int v, int src, int64_t off) {
  return view_at(pl, v, src, off, false);
}

ait_status cu_view_as(cu_planner *pl, int src, int rank, const int64_t *dims, cu_layout lay, int v,
                      int *t) {
  cu_plan *p = pl->p;
  cu_tensor tt = tensor_of(p->t[src].dt, rank, dims, lay, CU_ST_VIEW, v);
  if (tt.bytes != p->t[src].bytes)
    return ait_err(AIT_E_SHAPE, "cuda: a view of %lld bytes over %lld", (long long)tt.bytes,
                   (long long)p->t[src].bytes);
  tt.root = p->t[src].root;
  tt.voff = p->t[src].voff;
  AIT_TRY(push_tensor(p, &tt, t));
  if (v >= 0) p->vt[p->t[*t].layout][v] = *t;
  return AIT_OK;
}

/* Append bytes to the plan's constant image; *off receives their offset. */
static ait_status const_append(cu_plan *p, const void *data, int64_t bytes, int64_t *off) {
  int64_t at = (p->cbuf_bytes + CU_ALIGN - 1) / CU_ALIGN * CU_ALIGN;
  uint8_t *more = realloc(p->chost, (size_t)(at + bytes + 1));
  if (!more) return ait_err(AIT_E_NOMEM, "cuda: out of memory planning constants");
  p->chost = more;
  memset(more + p->cbuf_bytes, 0, (size_t)(at - p->cbuf_bytes));
  if (bytes > 0) memcpy(more + at, data, (size_t)bytes);
  p->cbuf_bytes = at + bytes;
  *off = at;
  return AIT_OK;
}

ait_status cu_const_raw(cu_planner *pl, ait_dtype dt, int rank, const int64_t *dims,
                        const void *data, int *t) {
  cu_tensor tt = tensor_of(dt, rank, dims, CU_PLAIN, CU_ST_CONST, -1);
  AIT_TRY(const_append(pl->p, data, tt.bytes, &tt.offset));
  return push_tensor(pl->p, &tt, t);
}

/* A constant value of the plan graph on the device: the state's weights for
 * initializers of the state's graph, else the plan's constant buffer. */
static ait_status const_tensor(cu_planner *pl, int v, int *t) {
  const ait_value *val = &pl->g->values[v];
  const ait_tensor *init = val->init;
  if (init->kind != AIT_KIND_TENSOR || !cu_dtype_ok(init->dtype))
    return ait_err(AIT_E_UNSUPPORTED, "cuda: constant '%s' of type %s cannot go to the device",
                   val->name, ait_dtype_name(init->dtype));
  ait_dtype dt = cu_store_type(pl->s, init->dtype);
  cu_tensor tt;
  if (nat_is_const(pl->s->g, v)) {
    tt = tensor_of(dt, init->rank, init->dims, CU_PLAIN, CU_ST_WEIGHT, v);
    AIT_TRY(cu_weight_get(pl->s, v, CU_W_STORE, &tt.ptr));
    return push_tensor(pl->p, &tt, t);
  }
  tt = tensor_of(dt, init->rank, init->dims, CU_PLAIN, CU_ST_CONST, v);
  void *tmp = malloc((size_t)tt.bytes + 1);
  if (!tmp) return ait_err(AIT_E_NOMEM, "cuda: out of memory planning constants");
  ait_status st = cu_host_convert(init->dtype, init->data, dt, tmp, ait_tensor_numel(init));
  if (!st) st = const_append(pl->p, tmp, tt.bytes, &tt.offset);
  free(tmp);
  AIT_TRY(st);
  return push_tensor(pl->p, &tt, t);
}

static int graph_input_index(const ait_graph *g, int v) {
  for (int i = 0; i < g->n_inputs; i++)
    if (g->inputs[i] == v) return i;
  return -1;
}

ait_status cu_convert(cu_planner *pl, int src, ait_dtype dt, cu_layout lay, int *t) {
  cu_tensor *s = &pl->p->t[src];
  int64_t dims[AIT_MAX_RANK];
  memcpy(dims, s->dims, sizeof dims);
  int value = s->value;
  AIT_TRY(cu_temp(pl, dt, s->rank, dims, lay, t));
  pl->p->t[*t].value = value;
  int in[1] = {src};
  return cu_emit_eltwise(pl, -1, "convert", CUK_COPY, NULL, in, 1, *t, CUK_COPY, NULL, 1.0f);
}

ait_status cu_in(cu_planner *pl, int v, cu_layout want, int *t) {
  cu_plan *p = pl->p;
  const ait_value *val = &pl->g->values[v];
  if (want == CU_NHWC && val->rank != 4) want = CU_PLAIN;
  if (p->vt[want][v] >= 0) {
    *t = p->vt[want][v];
    return AIT_OK;
  }
  int other = p->vt[1 - want][v], base = -1;
  if (other >= 0) {
    base = other;
  } else if (val->init) {
    AIT_TRY(const_tensor(pl, v, &base));
    p->vt[CU_PLAIN][v] = base;
  } else {
    int i = graph_input_index(pl->g, v);
    if (i < 0)
      return ait_err(AIT_E_INTERNAL, "cuda: value '%s' is read before anything computes it",
                     val->name);
    if (!dims_known(val) || !cu_dtype_ok(val->dtype))
      return ait_err(AIT_E_UNSUPPORTED, "cuda: input '%s' cannot go to the device", val->name);
    int64_t dims[AIT_MAX_RANK];
    value_dims(val, dims);
    cu_tensor tt = tensor_of(val->dtype, val->rank, dims, CU_PLAIN, CU_ST_ARENA, v);
    AIT_TRY(push_tensor(p, &tt, &p->in_t[i]));
    base = p->in_t[i];
    ait_dtype sdt = cu_store_type(pl->s, val->dtype);
    if (sdt != val->dtype || want != CU_PLAIN) { /* type and layout in one pass */
      AIT_TRY(cu_convert(pl, base, sdt, want, t));
      p->vt[want][v] = *t;
      return AIT_OK;
    }
    p->vt[CU_PLAIN][v] = base;
  }
  if (p->t[base].layout == want) {
    *t = base;
    return AIT_OK;
  }
  const cu_tensor *B = &p->t[base];
  if (!val->init && B->rank == 4 && (B->dims[2] * B->dims[3] == 1 || B->dims[1] == 1))
    /* [N, C, 1, 1] (a global pool's output read by SE's Conv) or one
     * channel: both orders of the elements agree, no copy */
    return cu_view_as(pl, base, 4, B->dims, want, v, t);
  AIT_TRY(cu_convert(pl, base, p->t[base].dt, want, t));
  p->vt[want][v] = *t;
  return AIT_OK;
}

ait_status cu_in_any(cu_planner *pl, int v, int *t) {
  cu_plan *p = pl->p;
  if (p->vt[CU_NHWC][v] >= 0 && p->vt[CU_PLAIN][v] < 0) {
    *t = p->vt[CU_NHWC][v];
    return AIT_OK;
  }
  return cu_in(pl, v, CU_PLAIN, t);
}

const ait_tensor *cu_host_value(cu_planner *pl, const ait_node *n, int k) {
  if (k >= n->n_in || n->in[k] < 0) return NULL;
  const ait_value *v = &pl->g->values[n->in[k]];
  return v->init && v->init->kind == AIT_KIND_TENSOR ? v->init : NULL;
}

/* ---- shapes for these inputs ---------------------------------------------- */

static void set_init(ait_graph *g, int v, ait_tensor *t) {
  ait_value *val = &g->values[v];
  ait_tensor_free(val->init);
  val->init = t;
  val->dtype = t->dtype;
  val->rank = t->rank;
  for (int k = 0; k < AIT_MAX_RANK; k++) {
    free((char *)val->dims[k].sym);
    val->dims[k].sym = NULL;
    val->dims[k].v = k < t->rank ? t->dims[k] : -1;
  }
}

/* Shape / Size of a value whose dims are known. */
static ait_status fold_shape(ait_graph *g, const ait_node *n) {
  const ait_value *x = &g->values[n->in[0]];
  int r = x->rank;
  bool size = !strcmp(n->op_type, "Size");
  int64_t start = size ? 0 : ait_attr_int(n, "start", 0),
          end = size ? r : ait_attr_int(n, "end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = start < 0 ? 0 : start > r ? r : start;
  end = end < 0 ? 0 : end > r ? r : end;
  int64_t len = end > start ? end - start : 0;
  ait_tensor *t = size ? ait_tensor_new(AIT_INT64, 0, NULL) : ait_tensor_new(AIT_INT64, 1, &len);
  if (!t) return AIT_E_NOMEM;
  int64_t *d = t->data;
  if (size) {
    int64_t dims[AIT_MAX_RANK];
    value_dims(x, dims);
    d[0] = ait_shape_numel(r, dims);
  } else {
    for (int64_t k = 0; k < len; k++)
      d[k] = x->dims[start + k].v;
  }
  set_init(g, n->out[0], t);
  return AIT_OK;
}

/* Run node n on the host when all its inputs are constants of the plan. */
static void try_fold(ait_graph *g, const ait_node *n) {
  if (!ait_node_foldable(n) || n->n_in > 16 || n->n_out > 8) return;
  const ait_tensor *in[16] = {0};
  for (int k = 0; k < n->n_in; k++) {
    if (n->in[k] < 0) continue;
    const ait_value *v = &g->values[n->in[k]];
    if (!v->init || v->init->kind != AIT_KIND_TENSOR) return;
    in[k] = v->init;
  }
  ait_tensor *out[8] = {0};
  if (ait_eager_run_node(n, in, n->n_in, out) == AIT_OK) {
    for (int k = 0; k < n->n_out; k++) {
      if (n->out[k] < 0 || !out[k] || out[k]->kind != AIT_KIND_TENSOR) continue;
      ait_value *v = &g->values[n->out[k]];
      /* an op without a CUDA kernel keeps its result up to CU_FOLD_HOST_MAX
       * (supports() took it as computable while planning) */
      int64_t cap = cu_op_find(n->domain, n->op_type) ? CU_FOLD_MAX : CU_FOLD_HOST_MAX;
      if (v->init || ait_tensor_numel(out[k]) > cap) {
        /* too big to keep: the device computes it, with these dims */
        v->dtype = out[k]->dtype;
        v->rank = out[k]->rank;
        for (int d = 0; d < out[k]->rank; d++)
          v->dims[d].v = out[k]->dims[d];
        continue;
      }
      set_init(g, n->out[k], out[k]);
      out[k] = NULL;
    }
  }
  ait_err_clear(); /* a node that fails here fails again, with context, on the device */
  for (int k = 0; k < 8; k++)
    ait_tensor_free(out[k]);
}

static ait_status set_inputs(ait_graph *g, const ait_tensor *const *in, int n_in) {
  if (n_in != g->n_inputs)
    return ait_err(AIT_E_INVALID_ARG, "cuda: the model takes %d inputs, got %d", g->n_inputs, n_in);
  for (int i = 0; i < n_in; i++) {
    ait_value *v = &g->values[g->inputs[i]];
    const ait_tensor *t = in[i];
    if (!t || t->kind != AIT_KIND_TENSOR)
      return ait_err(AIT_E_INVALID_ARG, "cuda: input %d ('%s') is not a tensor", i, v->name);
    if (v->dtype != AIT_UNDEFINED && v->dtype != t->dtype)
      return ait_err(AIT_E_DTYPE, "cuda: input %d ('%s') is %s, the model declares %s", i, v->name,
                     ait_dtype_name(t->dtype), ait_dtype_name(v->dtype));
    if (v->rank >= 0 && v->rank != t->rank)
      return ait_err(AIT_E_SHAPE, "cuda: input %d ('%s') has rank %d, the model declares %d", i,
                     v->name, t->rank, v->rank);
    for (int k = 0; v->rank >= 0 && k < t->rank; k++)
      if (v->dims[k].v >= 0 && v->dims[k].v != t->dims[k])
        return ait_err(AIT_E_SHAPE, "cuda: input %d ('%s') dim %d is %lld, the model declares %lld",
                       i, v->name, k, (long long)t->dims[k], (long long)v->dims[k].v);
    bool host = cu_host_input(g, g->inputs[i]);
    v->dtype = t->dtype;
    v->rank = t->rank;
    for (int k = 0; k < AIT_MAX_RANK; k++) {
      free((char *)v->dims[k].sym);
      v->dims[k].sym = NULL;
      v->dims[k].v = k < t->rank ? t->dims[k] : -1;
    }
    if (host && ait_tensor_numel(t) <= CU_HOST_INPUT_MAX) { /* known while planning */
      if (!(v->init = ait_tensor_clone(t))) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
    }
  }
  return AIT_OK;
}

/* Forget what the state's graph says about node outputs (symbolic shapes),
 * then infer them again from the concrete inputs, folding on the way. */
static ait_status infer_plan_shapes(ait_graph *g) {
  for (int i = 0; i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i].n_out; k++) {
      int o = g->nodes[i].out[k];
      if (o < 0 || g->values[o].init) continue;
      ait_value *v = &g->values[o];
      for (int d = 0; d < AIT_MAX_RANK; d++) {
        free((char *)v->dims[d].sym);
        v->dims[d] = (ait_dim){-1, NULL};
      }
      v->rank = -1;
    }
  for (int i = 0; i < g->n_nodes; i++) {
    const ait_node *n = &g->nodes[i];
    bool all_known = true;
    for (int k = 0; k < n->n_out; k++)
      all_known = all_known && (n->out[k] < 0 || g->values[n->out[k]].init);
    if (all_known) continue;
    if ((!strcmp(n->op_type, "Shape") || !strcmp(n->op_type, "Size")) && !n->domain[0] &&
        n->n_in >= 1 && n->in[0] >= 0 && dims_known(&g->values[n->in[0]]) && n->n_out >= 1 &&
        n->out[0] >= 0) {
      AIT_TRY(fold_shape(g, n));
      continue;
    }
    if (n->op && n->op->shape) {
      ait_status st = n->op->shape(g, n);
      if (st) return ait_err_prefix(st, "cuda: shapes of %s", ait_node_desc(n));
    }
    try_fold(g, n);
  }
  return AIT_OK;
}

/* ---- liveness and memory ------------------------------------------------- */

static ait_status place(cu_state *s, cu_plan *p) {
  for (int i = 0; i < p->n_steps; i++)
    for (int k = 0; k < p->steps[i].n_use; k++) {
      cu_tensor *r = &p->t[p->t[p->steps[i].use[k]].root];
      if (i < r->first) r->first = i;
      if (i > r->last) r->last = i;
    }
  for (int i = 0; i < p->pg->n_inputs; i++)
    if (p->in_t[i] >= 0) {
      cu_tensor *r = &p->t[p->t[p->in_t[i]].root];
      r->first = 0;
      if (r->last < 0) r->last = 0;
    }
  for (int i = 0; i < p->pg->n_outputs; i++)
    if (p->out_t[i] >= 0) {
      cu_tensor *r = &p->t[p->t[p->out_t[i]].root];
      if (r->first == INT_MAX) r->first = p->n_steps;
      r->last = p->n_steps;
    }
  int64_t *size = calloc((size_t)p->n_t + 1, sizeof *size);
  int64_t *off = calloc((size_t)p->n_t + 1, sizeof *off);
  int *first = calloc((size_t)p->n_t + 1, sizeof *first);
  int *last = calloc((size_t)p->n_t + 1, sizeof *last);
  ait_status st =
      size && off && first && last ? AIT_OK : ait_err(AIT_E_NOMEM, "cuda: out of memory");
  for (int t = 0; !st && t < p->n_t; t++) {
    cu_tensor *x = &p->t[t];
    first[t] = x->first == INT_MAX ? 0 : x->first;
    last[t] = x->last;
    if (x->store == CU_ST_ARENA && x->root == t && x->last >= 0 && x->bytes > 0)
      size[t] = (x->bytes + CU_ALIGN - 1) / CU_ALIGN * CU_ALIGN;
  }
  if (!st) st = ait_plan_assign(p->n_t, size, first, last, off, &p->arena_bytes);
  for (int t = 0; !st && t < p->n_t; t++)
    if (size[t] > 0) p->t[t].offset = off[t];
  free(size);
  free(off);
  free(first);
  free(last);
  AIT_TRY(st);
  if (s->dry) {
    p->arena = (void *)(uintptr_t)0x100000000000ull;
    p->cbuf = (void *)(uintptr_t)0x200000000000ull;
  } else {
    AIT_TRY(
        cu_check(cudaMalloc(&p->arena, (size_t)(p->arena_bytes > 0 ? p->arena_bytes : CU_ALIGN)),
                 "allocating the activation arena"));
  }
  if (p->cbuf_bytes > 0 && !s->dry) {
    AIT_TRY(cu_check(cudaMalloc(&p->cbuf, (size_t)p->cbuf_bytes), "allocating plan constants"));
    AIT_TRY(cu_check(cudaMemcpyAsync(p->cbuf, p->chost, (size_t)p->cbuf_bytes,
                                     cudaMemcpyHostToDevice, s->stream),
                     "uploading plan constants"));
  }
  free(p->chost);
  p->chost = NULL;
  for (int t = 0; t < p->n_t; t++) {
    cu_tensor *x = &p->t[t];
    if (x->store == CU_ST_ARENA)
      x->ptr = x->offset >= 0 ? (char *)p->arena + x->offset : NULL;
    else if (x->store == CU_ST_CONST)
      x->ptr = (char *)p->cbuf + x->offset;
  }
  for (int t = 0; t < p->n_t; t++)
    if (p->t[t].store == CU_ST_VIEW) {
      char *r = p->t[p->t[t].root].ptr;
      p->t[t].ptr = r ? r + p->t[t].voff : NULL;
    }
  return AIT_OK;
}

/* ---- description ------------------------------------------------------------ */

static void tensor_text(const cu_plan *p, int t, char *buf, size_t n) {
  static const char *const store[] = {"arena", "weight", "const", "view"};
  const cu_tensor *x = &p->t[t];
  char shape[160];
  ait_shape_str(x->rank, x->dims, shape, sizeof shape);
  const char *name = x->value >= 0 ? p->pg->values[x->value].name : "tmp";
  snprintf(buf, n, "#%d %s %s%s %s %s", t, name, ait_dtype_name(x->dt), shape,
           x->layout == CU_NHWC ? "nhwc" : "", store[x->store]);
}

char *cu_plan_describe(const cu_plan *p) {
  size_t cap = 4096, len = 0;
  char *out = malloc(cap);
  if (!out) return NULL;
  out[0] = '\0';
  char line[2048];
  for (int i = -1; i <= p->n_steps; i++) {
    if (i < 0)
      snprintf(line, sizeof line, "plan: %d steps, %d tensors, arena %lld bytes, constants %lld\n",
               p->n_steps, p->n_t, (long long)p->arena_bytes, (long long)p->cbuf_bytes);
    else if (i == p->n_steps) {
      int at = snprintf(line, sizeof line, "outputs:");
      for (int k = 0; k < p->pg->n_outputs && at < (int)sizeof line - 200; k++) {
        char tt[512] = "host";
        if (p->out_t[k] >= 0) tensor_text(p, p->out_t[k], tt, sizeof tt);
        at += snprintf(line + at, sizeof line - (size_t)at, " [%s]", tt);
      }
      snprintf(line + at, sizeof line - (size_t)at, "\n");
    } else {
      const cu_step *st = &p->steps[i];
      int at = snprintf(line, sizeof line, "%4d %-18s %s:", i, st->what,
                        st->node >= 0 ? p->pg->nodes[st->node].name : "-");
      for (int k = 0; k < st->n_use && at < (int)sizeof line - 200; k++) {
        char tt[512];
        tensor_text(p, st->use[k], tt, sizeof tt);
        at += snprintf(line + at, sizeof line - (size_t)at, " [%s]", tt);
      }
      snprintf(line + at, sizeof line - (size_t)at, "\n");
    }
    size_t l = strlen(line);
    if (len + l + 1 > cap) {
      while (len + l + 1 > cap)
        cap *= 2;
      char *more = realloc(out, cap);
      if (!more) {
        free(out);
        return NULL;
      }
      out = more;
    }
    memcpy(out + len, line, l + 1);
    len += l;
  }
  return out;
}

/* ---- the plan ------------------------------------------------------------- */

void cu_plan_free(cu_plan *p) {
  if (!p) return;
  if (p->gexec) cudaGraphExecDestroy(p->gexec);
  if (p->graph) cudaGraphDestroy(p->graph);
  for (int i = 0; p->step_exec && i < p->n_steps; i++)
    if (p->step_exec[i]) cudaGraphExecDestroy(p->step_exec[i]);
  free(p->step_exec);
  for (int i = 0; i < p->n_steps; i++) {
    if (p->steps[i].release) p->steps[i].release(p->steps[i].prm);
    free(p->steps[i].prm);
  }
  free(p->steps);
  if (p->hout) cudaFreeHost(p->hout);
  if (p->arena && !p->dry) cudaFree(p->arena);
  if (p->cbuf && !p->dry) cudaFree(p->cbuf);
  for (int i = 0; i < p->n_extra && !p->dry; i++)
    cudaFree(p->extra[i]);
  free(p->extra);
  free(p->chost);
  free(p->t);
  free(p->vt[0]);
  free(p->vt[1]);
  free(p->in_t);
  free(p->out_t);
  free(p->sig);
  ait_graph_free(p->pg);
  free(p);
}

static bool device_node(const ait_graph *g, const ait_node *n) {
  for (int k = 0; k < n->n_out; k++)
    if (n->out[k] >= 0 && !g->values[n->out[k]].init) return true;
  return false;
}

static ait_status lower_all(cu_planner *pl) {
  ait_graph *g = pl->g;
  AIT_TRY(cu_find_attention(pl));
  AIT_TRY(cu_find_gates(pl));
  for (int i = 0; i < g->n_nodes; i++) {
    const ait_node *n = &g->nodes[i];
    if (!device_node(g, n) || pl->role[i] == CU_ROLE_SKIP) continue;
    const cu_op_row *row = cu_op_find(n->domain, n->op_type);
    if (!row)
      return ait_err(AIT_E_UNSUPPORTED,
                     "cuda: %s has no CUDA kernel and its result is not known while planning",
                     ait_node_desc(n));
    bool gate = pl->role[i] == CU_ROLE_SILU || pl->role[i] == CU_ROLE_HARD_SWISH;
    ait_status st = pl->role[i] == CU_ROLE_ATTN             ? cu_lower_attention(pl, n)
                    : pl->role[i] == CU_ROLE_MASKED_SOFTMAX ? cu_lower_masked_softmax(pl, n)
                    : gate                                  ? cu_lower_gate(pl, n)
                                                            : row->lower(pl, n);
    if (st) return ait_err_prefix(st, "%s", ait_node_desc(n));
  }
  cu_plan *p = pl->p;
  for (int k = 0; k < g->n_outputs; k++) {
    int v = g->outputs[k];
    const ait_value *val = &g->values[v];
    p->out_t[k] = -1;
    if (val->init && p->vt[0][v] < 0 && p->vt[1][v] < 0) continue; /* known on the host */
    int t, img = p->vt[CU_NHWC][v];
    if (p->vt[CU_PLAIN][v] < 0 && img >= 0 && p->t[img].dt != val->dtype &&
        !(p->t[img].dims[2] * p->t[img].dims[3] == 1 || p->t[img].dims[1] == 1))
      AIT_TRY(cu_convert(pl, img, val->dtype, CU_PLAIN, &t)); /* type and layout in one pass */
    else
      AIT_TRY(cu_in(pl, v, CU_PLAIN, &t));
    if (p->t[t].dt != val->dtype) AIT_TRY(cu_convert(pl, t, val->dtype, CU_PLAIN, &t));
    p->out_t[k] = t;
  }
  return AIT_OK;
}

ait_status cu_plan_create(cu_state *s, const ait_tensor *const *in, int n_in, cu_plan **out) {
  *out = NULL;
  cu_plan *p = calloc(1, sizeof *p);
  if (!p) return ait_err(AIT_E_NOMEM, "cuda: out of memory");
  p->dry = s->dry;
  p->sig = malloc(sizeof(int64_t) * (size_t)cu_signature_cap(in, n_in));
  p->pg = nat_graph_clone(s->g, NULL, true);
  ait_status st = p->sig && p->pg ? AIT_OK : ait_err(AIT_E_NOMEM, "cuda: out of memory");
  if (!st) {
    p->hash = cu_signature(s->g, in, n_in, p->sig, &p->n_sig);
    int nv = p->pg->n_values + 1;
    p->vt[0] = malloc(sizeof(int) * (size_t)nv);
    p->vt[1] = malloc(sizeof(int) * (size_t)nv);
    p->in_t = malloc(sizeof(int) * (size_t)(p->pg->n_inputs + 1));
    p->out_t = malloc(sizeof(int) * (size_t)(p->pg->n_outputs + 1));
    if (!p->vt[0] || !p->vt[1] || !p->in_t || !p->out_t)
      st = ait_err(AIT_E_NOMEM, "cuda: out of memory");
    for (int v = 0; !st && v < nv; v++)
      p->vt[0][v] = p->vt[1][v] = -1;
    for (int i = 0; !st && i <= p->pg->n_inputs; i++)
      p->in_t[i] = -1;
  }
  if (!st) st = set_inputs(p->pg, in, n_in);
  if (!st) st = infer_plan_shapes(p->pg);
  cu_planner pl = {s, p, p->pg, NULL, NULL, NULL, 0};
  if (!st) st = lower_all(&pl);
  free(pl.role);
  free(pl.match);
  free(pl.m);
  if (!st) st = place(s, p);
  for (int i = 0; !st && !s->dry && i < p->n_steps; i++)
    if (p->steps[i].prep) {
      st = p->steps[i].prep(s, p, &p->steps[i]);
      if (st && p->steps[i].node >= 0)
        st = ait_err_prefix(st, "%s", ait_node_desc(&p->pg->nodes[p->steps[i].node]));
    }
  if (st) {
    cu_plan_free(p);
    return st;
  }
  *out = p;
  return AIT_OK;
}

#endif
