/* IR graph -> ModelProto file. Every protobuf struct is allocated from a
 * list that is freed in one go after packing, so no path leaks. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/fileio.h"
#include "onnx/onnx_priv.h"

typedef struct wr {
  void **ptrs;
  size_t n, cap;
  bool oom;
} wr;

static void *wr_alloc(wr *w, size_t size) {
  if (w->n == w->cap) {
    size_t cap = w->cap ? w->cap * 2 : 256;
    void **p = realloc(w->ptrs, cap * sizeof *p);
    if (!p) {
      w->oom = true;
      return NULL;
    }
    w->ptrs = p;
    w->cap = cap;
  }
  void *m = calloc(1, size ? size : 1);
  if (!m)
    w->oom = true;
  else
    w->ptrs[w->n++] = m;
  return m;
}

static void wr_free(wr *w) {
  for (size_t i = 0; i < w->n; i++)
    free(w->ptrs[i]);
  free(w->ptrs);
}

static Onnx__TensorProto *tensor_proto(wr *w, const ait_tensor *t, const char *name) {
  Onnx__TensorProto *tp = wr_alloc(w, sizeof *tp);
  if (!tp) return NULL;
  onnx__tensor_proto__init(tp);
  tp->name = (char *)(name ? name : "");
  tp->has_data_type = 1;
  tp->data_type = (int32_t)t->dtype;
  tp->n_dims = (size_t)t->rank;
  tp->dims = wr_alloc(w, sizeof(int64_t) * (size_t)(t->rank + 1));
  if (!tp->dims) return NULL;
  memcpy(tp->dims, t->dims, sizeof(int64_t) * (size_t)t->rank);
  int64_t n = ait_tensor_numel(t);
  if (t->dtype == AIT_STRING) {
    tp->string_data = wr_alloc(w, sizeof(ProtobufCBinaryData) * (size_t)(n + 1));
    if (!tp->string_data) return NULL;
    for (int64_t i = 0; i < n; i++) {
      char *s = ((char **)t->data)[i];
      tp->string_data[i].data = (uint8_t *)(s ? s : "");
      tp->string_data[i].len = strlen((char *)tp->string_data[i].data);
    }
    tp->n_string_data = (size_t)n;
  } else {
    tp->has_raw_data = 1;
    tp->raw_data.data = t->data;
    tp->raw_data.len = ait_tensor_nbytes(t);
    if (ait_dtype_file_bits(t->dtype) < 8) { /* int4, float4e2m1, int2...: packed in files */
      tp->raw_data.len = ait_dtype_file_bytes(t->dtype, n);
      tp->raw_data.data = wr_alloc(w, tp->raw_data.len);
      if (!tp->raw_data.data) return NULL;
      ait_dtype_pack(t->dtype, t->data, n, tp->raw_data.data);
    }
  }
  return tp;
}

static Onnx__ValueInfoProto *value_info(wr *w, const ait_value *v) {
  Onnx__ValueInfoProto *vi = wr_alloc(w, sizeof *vi);
  Onnx__TypeProto *tp = wr_alloc(w, sizeof *tp);
  Onnx__TypeProto__Tensor *tt = wr_alloc(w, sizeof *tt);
  if (!vi || !tp || !tt) return NULL;
  onnx__value_info_proto__init(vi);
  onnx__type_proto__init(tp);
  onnx__type_proto__tensor__init(tt);
  vi->name = v->name;
  vi->type = tp;
  tt->has_elem_type = v->dtype != AIT_UNDEFINED;
  tt->elem_type = (int32_t)v->dtype;
  Onnx__TypeProto *outer = tp;
  if (v->type != AIT_VT_TENSOR) { /* sequence/optional of a tensor type */
    Onnx__TypeProto *inner = wr_alloc(w, sizeof *inner);
    if (!inner) return NULL;
    onnx__type_proto__init(inner);
    inner->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    inner->tensor_type = tt;
    if (v->type == AIT_VT_SEQUENCE) {
      Onnx__TypeProto__Sequence *sq = wr_alloc(w, sizeof *sq);
      if (!sq) return NULL;
      onnx__type_proto__sequence__init(sq);
      sq->elem_type = inner;
      outer->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
      outer->sequence_type = sq;
    } else {
      Onnx__TypeProto__Optional *op = wr_alloc(w, sizeof *op);
      if (!op) return NULL;
      onnx__type_proto__optional__init(op);
      op->elem_type = inner;
      outer->value_case = ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE;
      outer->optional_type = op;
    }
    return vi;
  }
  tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  tp->tensor_type = tt;
  if (v->rank < 0) return vi;
  Onnx__TensorShapeProto *sh = wr_alloc(w, sizeof *sh);
  if (!sh) return NULL;
  onnx__tensor_shape_proto__init(sh);
  sh->n_dim = (size_t)v->rank;
  sh->dim = wr_alloc(w, sizeof(void *) * (size_t)(v->rank + 1));
  if (!sh->dim) return NULL;
  for (int k = 0; k < v->rank; k++) {
    Onnx__TensorShapeProto__Dimension *d = wr_alloc(w, sizeof *d);
    if (!d) return NULL;
    onnx__tensor_shape_proto__dimension__init(d);
    if (v->dims[k].v >= 0) {
      d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
      d->dim_value = v->dims[k].v;
    } else if (v->dims[k].sym) {
      d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
      d->dim_param = (char *)v->dims[k].sym;
    }
    sh->dim[k] = d;
  }
  tt->shape = sh;
  return vi;
}

static Onnx__GraphProto *graph_proto(wr *w, const ait_graph *g);

static Onnx__AttributeProto *attr_proto(wr *w, const ait_attr *a) {
  Onnx__AttributeProto *ap = wr_alloc(w, sizeof *ap);
  if (!ap) return NULL;
  onnx__attribute_proto__init(ap);
  ap->name = a->name;
  ap->has_type = 1;
  ap->type = (Onnx__AttributeProto__AttributeType)a->type;
  switch (a->type) {
  case AIT_ATTR_FLOAT:
    ap->has_f = 1;
    ap->f = a->f;
    break;
  case AIT_ATTR_INT:
    ap->has_i = 1;
    ap->i = a->i;
    break;
  case AIT_ATTR_STRING:
    ap->has_s = 1;
    ap->s.data = (uint8_t *)(a->s ? a->s : "");
    ap->s.len = strlen((char *)ap->s.data);
    break;
  case AIT_ATTR_TENSOR:
    if (!(ap->t = tensor_proto(w, a->t, ""))) return NULL;
    break;
  case AIT_ATTR_GRAPH:
    if (!(ap->g = graph_proto(w, a->g))) return NULL;
    break;
  case AIT_ATTR_FLOATS:
    ap->n_floats = (size_t)a->n;
    ap->floats = a->floats;
    break;
  case AIT_ATTR_INTS:
    ap->n_ints = (size_t)a->n;
    ap->ints = a->ints;
    break;
  case AIT_ATTR_STRINGS:
    ap->n_strings = (size_t)a->n;
    ap->strings = wr_alloc(w, sizeof(ProtobufCBinaryData) * (size_t)(a->n + 1));
    if (!ap->strings) return NULL;
    for (int i = 0; i < a->n; i++) {
      ap->strings[i].data = (uint8_t *)a->strings[i];
      ap->strings[i].len = strlen(a->strings[i]);
    }
    break;
  default: return NULL; /* attributes the loader dropped are not in the IR */
  }
  return ap;
}

static char **name_list(wr *w, const ait_graph *g, const int *ids, int n) {
  char **names = wr_alloc(w, sizeof(char *) * (size_t)(n + 1));
  if (!names) return NULL;
  for (int i = 0; i < n; i++)
    names[i] = ids[i] >= 0 ? g->values[ids[i]].name : (char *)"";
  return names;
}

static Onnx__GraphProto *graph_proto(wr *w, const ait_graph *g) {
  Onnx__GraphProto *gp = wr_alloc(w, sizeof *gp);
  if (!gp) return NULL;
  onnx__graph_proto__init(gp);
  gp->name = g->name;
  size_t nv = (size_t)g->n_values + 1;
  gp->node = wr_alloc(w, sizeof(void *) * ((size_t)g->n_nodes + 1));
  gp->initializer = wr_alloc(w, sizeof(void *) * nv);
  gp->input = wr_alloc(w, sizeof(void *) * nv);
  gp->output = wr_alloc(w, sizeof(void *) * ((size_t)g->n_outputs + 1));
  gp->value_info = wr_alloc(w, sizeof(void *) * nv);
  if (!gp->node || !gp->initializer || !gp->input || !gp->output || !gp->value_info) return NULL;
  for (int i = 0; i < g->n_nodes; i++) {
    const ait_node *n = &g->nodes[i];
    Onnx__NodeProto *np = wr_alloc(w, sizeof *np);
    if (!np) return NULL;
    onnx__node_proto__init(np);
    np->name = n->name;
    np->op_type = n->op_type;
    np->domain = n->domain;
    np->n_input = (size_t)n->n_in;
    np->n_output = (size_t)n->n_out;
    np->input = name_list(w, g, n->in, n->n_in);
    np->output = name_list(w, g, n->out, n->n_out);
    np->attribute = wr_alloc(w, sizeof(void *) * (size_t)(n->n_attrs + 1));
    if (!np->input || !np->output || !np->attribute) return NULL;
    for (int k = 0; k < n->n_attrs; k++) {
      if (n->attrs[k].type == AIT_ATTR_UNDEFINED) continue;
      Onnx__AttributeProto *ap = attr_proto(w, &n->attrs[k]);
      if (!ap) return NULL;
      np->attribute[np->n_attribute++] = ap;
    }
    gp->node[gp->n_node++] = np;
  }
  for (int i = 0; i < g->n_inputs; i++) {
    Onnx__ValueInfoProto *vi = value_info(w, &g->values[g->inputs[i]]);
    if (!vi) return NULL;
    gp->input[gp->n_input++] = vi;
  }
  for (int i = 0; i < g->n_outputs; i++) {
    Onnx__ValueInfoProto *vi = value_info(w, &g->values[g->outputs[i]]);
    if (!vi) return NULL;
    gp->output[gp->n_output++] = vi;
  }
  for (int v = 0; v < g->n_values; v++) {
    const ait_value *val = &g->values[v];
    if (val->outer) continue;
    if (val->init && val->producer < 0) {
      Onnx__TensorProto *tp = tensor_proto(w, val->init, val->name);
      if (!tp) return NULL;
      gp->initializer[gp->n_initializer++] = tp;
    } else if (val->producer >= 0 && val->dtype != AIT_UNDEFINED) {
      bool is_out = false;
      for (int k = 0; k < g->n_outputs; k++)
        is_out |= g->outputs[k] == v;
      if (is_out) continue;
      Onnx__ValueInfoProto *vi = value_info(w, val);
      if (!vi) return NULL;
      gp->value_info[gp->n_value_info++] = vi;
    }
  }
  return gp;
}

ait_status ait_onnx_write_model(const ait_graph *g, const char *path) {
  uint8_t *buf = NULL;
  size_t len = 0;
  ait_status st = ait_onnx_write_model_buffer(g, &buf, &len);
  if (st) return ait_err_prefix(st, "writing '%s'", path);
  st = ait_write_file_atomic(path, buf, len);
  free(buf);
  return st;
}

ait_status ait_onnx_write_model_buffer(const ait_graph *g, uint8_t **out, size_t *out_len) {
  *out = NULL;
  *out_len = 0;
  if (g->parent) return ait_err(AIT_E_INVALID_ARG, "only a top-level graph can be written");
  wr w = {0};
  Onnx__ModelProto *mp = wr_alloc(&w, sizeof *mp);
  ait_status st = AIT_OK;
  if (mp) {
    onnx__model_proto__init(mp);
    mp->has_ir_version = 1;
    mp->ir_version = g->ir_version > 0 ? g->ir_version : 8;
    mp->producer_name = "aitune";
    mp->producer_version = AIT_VERSION_STRING;
    mp->opset_import = wr_alloc(&w, sizeof(void *) * (size_t)(g->n_opsets + 1));
    for (int i = 0; mp->opset_import && i < g->n_opsets; i++) {
      Onnx__OperatorSetIdProto *o = wr_alloc(&w, sizeof *o);
      if (!o) break;
      onnx__operator_set_id_proto__init(o);
      o->domain = g->opsets[i].domain;
      o->has_version = 1;
      o->version = g->opsets[i].version;
      mp->opset_import[mp->n_opset_import++] = o;
    }
    mp->graph = graph_proto(&w, g);
  }
  if (w.oom || !mp || !mp->graph) {
    wr_free(&w);
    return ait_err(AIT_E_NOMEM, "out of memory building the ModelProto");
  }
  size_t len = onnx__model_proto__get_packed_size(mp);
  uint8_t *buf = malloc(len ? len : 1);
  if (!buf) {
    st = ait_err(AIT_E_NOMEM, "out of memory serializing the model (%zu bytes)", len);
  } else {
    onnx__model_proto__pack(mp, buf);
    *out = buf;
    *out_len = len;
  }
  wr_free(&w);
  return st;
}
