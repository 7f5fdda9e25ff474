/* Static shape inference: per-op shape functions from the registry, and
 * folding (running a node at load time through the evaluator the caller
 * hands in, the reference kernel for the loader) where every input is
 * known. Small folded results are kept as the value's `init`, so shape
 * chains such as Shape -> Gather -> Concat -> Reshape resolve; a kept init on
 * a node output is a known value for inference only, the node still runs. */
#include "ir/shape.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "ir/passes/passes.h"
#include "ops/op.h"

/* Folded results up to this many elements are remembered as constants:
 * the model's max_fold_elements (ait_load_options; 4096 by default). */
static int64_t fold_keep_max(const ait_graph *g) {
  return ait_limits_resolve(ait_graph_root(g)->limits).max_fold_elements;
}

ait_value *ait_node_in(ait_graph *g, const ait_node *n, int i) {
  return i < n->n_in && n->in[i] >= 0 ? &g->values[n->in[i]] : NULL;
}

ait_value *ait_node_out(ait_graph *g, const ait_node *n, int i) {
  return i < n->n_out && n->out[i] >= 0 ? &g->values[n->out[i]] : NULL;
}

void ait_set_out(ait_graph *g, const ait_node *n, int i, ait_dtype dt, int rank,
                 const ait_dim *dims) {
  ait_value *v = ait_node_out(g, n, i);
  if (!v) return;
  if (dt != AIT_UNDEFINED) v->dtype = dt;
  if (rank < 0 || rank > AIT_MAX_RANK) return;
  bool same_rank = v->rank == rank;
  for (int k = 0; k < rank; k++) {
    ait_dim d = dims ? dims[k] : (ait_dim){-1, NULL};
    if (d.v < 0 && !d.sym && same_rank) continue; /* keep what value_info declared */
    const char *old = v->dims[k].sym;
    v->dims[k].v = d.v;
    v->dims[k].sym = d.v < 0 && d.sym ? strdup(d.sym) : NULL;
    free((char *)old);
  }
  for (int k = rank; k < AIT_MAX_RANK; k++) {
    free((char *)v->dims[k].sym);
    v->dims[k] = (ait_dim){-1, NULL};
  }
  v->rank = rank;
}

static bool shape_known(const ait_value *v) {
  if (v->rank < 0 || v->type != AIT_VT_TENSOR) return false;
  for (int k = 0; k < v->rank; k++)
    if (v->dims[k].v < 0) return false;
  return true;
}

/* Folding runs a kernel at load time, so its cost must be known before it
 * runs: every output the node has must have a shape the shape function
 * already inferred, of at most fold_keep_max elements (a 215-byte
 * ConstantOfShape can ask for 1.5e9 floats). */
static bool fold_small(ait_graph *g, const ait_node *n) {
  const int64_t keep_max = fold_keep_max(g);
  for (int k = 0; k < n->n_out; k++) {
    const ait_value *v = ait_node_out(g, n, k);
    if (!v) continue;
    if (!shape_known(v)) return false;
    int64_t e = 1;
    for (int d = 0; d < v->rank; d++) {
      if (v->dims[d].v && e > keep_max / v->dims[d].v) return false;
      e *= v->dims[d].v;
    }
  }
  return true;
}

/* Try to compute the node's outputs now. Shape/Size only need the input's
 * shape, so a zero tensor of that shape stands in for unknown data. */
static void try_fold(ait_graph *g, const ait_node *n, ait_node_eval_fn eval) {
  if (!eval || n->domain[0] || !ait_node_foldable(n) || n->n_in > 16 || n->n_out > 8 ||
      !fold_small(g, n))
    return;
  bool shape_only = !strcmp(n->op_type, "Shape") || !strcmp(n->op_type, "Size");
  const ait_tensor *in[16] = {0};
  ait_tensor *tmp[16] = {0};
  ait_tensor *out[8] = {0};
  bool ok = true;
  for (int i = 0; i < n->n_in && ok; i++) {
    ait_value *v = ait_node_in(g, n, i);
    if (!v) continue;
    if (v->init && !v->outer)
      in[i] = v->init;
    else if (shape_only && i == 0 && shape_known(v) && v->dtype != AIT_UNDEFINED &&
             v->dtype != AIT_STRING) {
      int64_t dims[AIT_MAX_RANK];
      for (int k = 0; k < v->rank; k++)
        dims[k] = v->dims[k].v;
      /* no data is read, so a 1-element stand-in with the right dims would
       * do, but kernels may check numel; keep it honest and small instead */
      if (ait_shape_numel(v->rank, dims) > (1 << 20))
        ok = false;
      else
        in[i] = tmp[i] = ait_tensor_new(v->dtype, v->rank, dims);
      ok = ok && in[i];
    } else
      ok = false;
  }
  if (ok && eval(n, in, n->n_in, out) == AIT_OK) {
    for (int k = 0; k < n->n_out; k++) {
      ait_value *v = ait_node_out(g, n, k);
      if (!v || !out[k] || out[k]->kind != AIT_KIND_TENSOR) continue;
      ait_dim dims[AIT_MAX_RANK];
      for (int d = 0; d < out[k]->rank; d++)
        dims[d] = (ait_dim){out[k]->dims[d], NULL};
      ait_set_out(g, n, k, out[k]->dtype, out[k]->rank, dims);
      if (!v->init && ait_tensor_numel(out[k]) <= fold_keep_max(g) && out[k]->dtype != AIT_STRING) {
        v->init = out[k];
        out[k] = NULL;
      }
    }
  }
  ait_err_clear();
  for (int i = 0; i < 16; i++)
    ait_tensor_free(tmp[i]);
  for (int k = 0; k < 8; k++)
    ait_tensor_free(out[k]);
}

/* Values a subgraph reads from an enclosing scope take that scope's type. */
static void import_outer(ait_graph *g) {
  for (int i = 0; i < g->n_values; i++) {
    ait_value *v = &g->values[i];
    if (!v->outer) continue;
    for (const ait_graph *p = g->parent; p; p = p->parent) {
      int j = ait_graph_find_value(p, v->name);
      if (j < 0) continue;
      const ait_value *src = &p->values[j];
      v->type = src->type;
      v->dtype = src->dtype;
      v->rank = src->rank;
      for (int k = 0; k < src->rank && k < AIT_MAX_RANK; k++) {
        v->dims[k].v = src->dims[k].v;
        v->dims[k].sym = src->dims[k].sym ? strdup(src->dims[k].sym) : NULL;
      }
      break;
    }
  }
}

ait_status ait_graph_infer_shapes(ait_graph *g, ait_node_eval_fn fold) {
  import_outer(g);
  for (int i = 0; i < g->n_nodes; i++) {
    ait_node *n = &g->nodes[i];
    if (n->op && n->op->shape) {
      ait_status st = n->op->shape(g, n);
      if (st) return ait_err_prefix(st, "shape inference of %s", ait_node_desc(n));
    }
    try_fold(g, n, fold);
    for (int k = 0; k < n->n_attrs; k++)
      if (n->attrs[k].g) AIT_TRY(ait_graph_infer_shapes(n->attrs[k].g, fold));
  }
  return AIT_OK;
}

/* ---- shared shape functions ------------------------------------------- */

ait_status ait_shape_same(ait_graph *g, const ait_node *n) {
  ait_value *a = ait_node_in(g, n, 0);
  if (a) ait_set_out(g, n, 0, a->dtype, a->rank, a->dims);
  return AIT_OK;
}

static ait_status broadcast_all(ait_graph *g, const ait_node *n, ait_dtype dt) {
  int rank = 0;
  ait_dim out[AIT_MAX_RANK];
  for (int i = 0; i < n->n_in; i++) {
    ait_value *v = ait_node_in(g, n, i);
    if (!v) continue;
    if (v->rank < 0) {
      ait_set_out(g, n, 0, dt, -1, NULL);
      return AIT_OK;
    }
    int r = v->rank > rank ? v->rank : rank;
    ait_dim merged[AIT_MAX_RANK];
    for (int k = 0; k < r; k++) {
      int ka = k - (r - rank), kb = k - (r - v->rank);
      ait_dim da = ka < 0 ? (ait_dim){1, NULL} : out[ka];
      ait_dim db = kb < 0 ? (ait_dim){1, NULL} : v->dims[kb];
      if (da.v == 1)
        merged[k] = db;
      else if (db.v == 1)
        merged[k] = da;
      else if (da.v >= 0 && db.v >= 0 && da.v != db.v)
        return ait_err(AIT_E_SHAPE, "input %d dim %d is %lld, which does not broadcast with %lld",
                       i, kb, (long long)db.v, (long long)da.v);
      else if (da.v >= 0)
        merged[k] = da;
      else if (db.v >= 0)
        merged[k] = db;
      else
        merged[k] = da.sym ? da : db;
    }
    memcpy(out, merged, sizeof(ait_dim) * (size_t)r);
    rank = r;
  }
  ait_set_out(g, n, 0, dt, rank, out);
  return AIT_OK;
}

ait_status ait_shape_broadcast_fn(ait_graph *g, const ait_node *n) {
  ait_value *a = ait_node_in(g, n, 0);
  return broadcast_all(g, n, a ? a->dtype : AIT_UNDEFINED);
}

ait_status ait_shape_compare_fn(ait_graph *g, const ait_node *n) {
  return broadcast_all(g, n, AIT_BOOL);
}
