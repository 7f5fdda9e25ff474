#include "model_builder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "onnx/onnx.pb-c.h"
#include "onnx/onnx_io.h"

/* Everything is allocated in fixed arrays owned by tb_model; the protobuf
 * structs point into them, so packing needs no ownership juggling. */
#define CAP 32

struct tb_model {
  const char *sym; /* the name of symbolic dims declared next (kept); NULL: "N" */
  Onnx__ModelProto model;
  Onnx__GraphProto graph;
  Onnx__OperatorSetIdProto opset;
  Onnx__OperatorSetIdProto *opsets[1];
  Onnx__NodeProto nodes[CAP], *node_ptrs[CAP];
  Onnx__AttributeProto attrs[CAP], *attr_ptrs[CAP][8]; /* up to 8 attributes a node */
  int n_attrs;
  Onnx__ValueInfoProto vis[CAP], *in_ptrs[CAP], *out_ptrs[CAP];
  Onnx__TypeProto types[CAP];
  Onnx__TypeProto__Tensor ttypes[CAP];
  Onnx__TensorShapeProto shapes[CAP];
  Onnx__TensorShapeProto__Dimension dims[CAP][8], *dim_ptrs[CAP][8];
  int n_vis;
  Onnx__TensorProto inits[CAP], *init_ptrs[CAP];
  Onnx__StringStringEntryProto ext[CAP][3], *ext_ptrs[CAP][3];
  char ext_vals[CAP][2][32];
  int64_t ints[CAP][8];
  char *strs[CAP * 8];
  int n_strs;
  tb_model *subs[8]; /* bodies of graph attributes, freed with the model */
  int n_subs;
};

static char *keep(tb_model *m, const char *s) {
  char *c = strdup(s);
  m->strs[m->n_strs++] = c;
  return c;
}

tb_model *tb_new(int64_t opset) {
  tb_model *m = calloc(1, sizeof *m);
  onnx__model_proto__init(&m->model);
  onnx__graph_proto__init(&m->graph);
  onnx__operator_set_id_proto__init(&m->opset);
  m->opset.domain = keep(m, "");
  m->opset.has_version = 1;
  m->opset.version = opset;
  m->opsets[0] = &m->opset;
  m->model.has_ir_version = 1;
  m->model.ir_version = 8;
  m->model.n_opset_import = 1;
  m->model.opset_import = m->opsets;
  m->model.graph = &m->graph;
  m->graph.name = keep(m, "test");
  m->graph.node = m->node_ptrs;
  m->graph.input = m->in_ptrs;
  m->graph.output = m->out_ptrs;
  m->graph.initializer = m->init_ptrs;
  return m;
}

void tb_free(tb_model *m) {
  for (int i = 0; i < m->n_strs; i++)
    free(m->strs[i]);
  for (size_t i = 0; i < m->graph.n_initializer; i++) {
    free(m->inits[i].float_data);
    free(m->inits[i].int64_data);
  }
  for (int i = 0; i < m->n_subs; i++)
    tb_free(m->subs[i]);
  free(m);
}

static Onnx__ValueInfoProto *value_info(tb_model *m, const char *name, int dtype, int rank,
                                        const int64_t *dims) {
  int i = m->n_vis++;
  Onnx__ValueInfoProto *vi = &m->vis[i];
  onnx__value_info_proto__init(vi);
  onnx__type_proto__init(&m->types[i]);
  onnx__type_proto__tensor__init(&m->ttypes[i]);
  onnx__tensor_shape_proto__init(&m->shapes[i]);
  vi->name = keep(m, name);
  vi->type = &m->types[i];
  m->types[i].value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  m->types[i].tensor_type = &m->ttypes[i];
  m->ttypes[i].has_elem_type = 1;
  m->ttypes[i].elem_type = dtype;
  m->ttypes[i].shape = &m->shapes[i];
  m->shapes[i].n_dim = (size_t)rank;
  m->shapes[i].dim = m->dim_ptrs[i];
  for (int k = 0; k < rank; k++) {
    Onnx__TensorShapeProto__Dimension *d = &m->dims[i][k];
    onnx__tensor_shape_proto__dimension__init(d);
    if (dims[k] >= 0) {
      d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
      d->dim_value = dims[k];
    } else {
      d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
      d->dim_param = keep(m, m->sym ? m->sym : "N");
    }
    m->dim_ptrs[i][k] = d;
  }
  return vi;
}

void tb_dim_name(tb_model *m, const char *name) { m->sym = keep(m, name); }

void tb_input(tb_model *m, const char *name, int dtype, int rank, const int64_t *dims) {
  m->in_ptrs[m->graph.n_input++] = value_info(m, name, dtype, rank, dims);
}

void tb_output(tb_model *m, const char *name, int dtype, int rank, const int64_t *dims) {
  m->out_ptrs[m->graph.n_output++] = value_info(m, name, dtype, rank, dims);
}

static Onnx__TensorProto *new_init(tb_model *m, const char *name, int rank, const int64_t *dims) {
  size_t i = m->graph.n_initializer++;
  Onnx__TensorProto *t = &m->inits[i];
  onnx__tensor_proto__init(t);
  t->name = keep(m, name);
  t->has_data_type = 1;
  t->data_type = 1;
  t->n_dims = (size_t)rank;
  t->dims = (int64_t *)dims; /* caller's array outlives packing in tests */
  m->init_ptrs[i] = t;
  return t;
}

void tb_init_f32(tb_model *m, const char *name, int rank, const int64_t *dims, const float *data) {
  Onnx__TensorProto *t = new_init(m, name, rank, dims);
  size_t n = 1;
  for (int k = 0; k < rank; k++)
    n *= (size_t)dims[k];
  t->n_float_data = n;
  t->float_data = malloc(n * sizeof(float) + 1);
  memcpy(t->float_data, data, n * sizeof(float));
}

void tb_init_i64(tb_model *m, const char *name, int rank, const int64_t *dims,
                 const int64_t *data) {
  Onnx__TensorProto *t = new_init(m, name, rank, dims);
  t->data_type = 7; /* INT64 */
  size_t n = 1;
  for (int k = 0; k < rank; k++)
    n *= (size_t)dims[k];
  t->n_int64_data = n;
  t->int64_data = malloc(n * sizeof(int64_t) + 1);
  memcpy(t->int64_data, data, n * sizeof(int64_t));
}

void tb_init_external(tb_model *m, const char *name, int rank, const int64_t *dims,
                      const char *location, int64_t offset, int64_t length) {
  size_t i = m->graph.n_initializer;
  Onnx__TensorProto *t = new_init(m, name, rank, dims);
  t->has_data_location = 1;
  t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  const char *keys[3] = {"location", "offset", "length"};
  snprintf(m->ext_vals[i][0], 32, "%lld", (long long)offset);
  snprintf(m->ext_vals[i][1], 32, "%lld", (long long)length);
  const char *vals[3] = {location, m->ext_vals[i][0], m->ext_vals[i][1]};
  for (int k = 0; k < 3; k++) {
    onnx__string_string_entry_proto__init(&m->ext[i][k]);
    m->ext[i][k].key = keep(m, keys[k]);
    m->ext[i][k].value = keep(m, vals[k]);
    m->ext_ptrs[i][k] = &m->ext[i][k];
  }
  t->n_external_data = 3;
  t->external_data = m->ext_ptrs[i];
}

static char **name_list(tb_model *m, const char *const *names, size_t *n) {
  size_t c = 0;
  while (names && names[c])
    c++;
  char **out = (char **)malloc(sizeof(char *) * (c + 1));
  m->strs[m->n_strs++] = (char *)out;
  for (size_t i = 0; i < c; i++)
    out[i] = keep(m, names[i]);
  *n = c;
  return out;
}

int tb_node(tb_model *m, const char *op, const char *name, const char *const *inputs,
            const char *const *outputs) {
  int i = (int)m->graph.n_node++;
  Onnx__NodeProto *n = &m->nodes[i];
  onnx__node_proto__init(n);
  n->op_type = keep(m, op);
  n->name = keep(m, name);
  n->domain = keep(m, "");
  n->input = name_list(m, inputs, &n->n_input);
  n->output = name_list(m, outputs, &n->n_output);
  n->attribute = m->attr_ptrs[i];
  m->node_ptrs[i] = n;
  return i;
}

void tb_attr_int(tb_model *m, int node, const char *name, int64_t v) {
  Onnx__AttributeProto *a = &m->attrs[m->n_attrs++];
  onnx__attribute_proto__init(a);
  a->name = keep(m, name);
  a->has_type = 1;
  a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
  a->has_i = 1;
  a->i = v;
  Onnx__NodeProto *n = &m->nodes[node];
  m->attr_ptrs[node][n->n_attribute++] = a;
}

void tb_attr_float(tb_model *m, int node, const char *name, float v) {
  Onnx__AttributeProto *a = &m->attrs[m->n_attrs++];
  onnx__attribute_proto__init(a);
  a->name = keep(m, name);
  a->has_type = 1;
  a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
  a->has_f = 1;
  a->f = v;
  Onnx__NodeProto *n = &m->nodes[node];
  m->attr_ptrs[node][n->n_attribute++] = a;
}

void tb_attr_str(tb_model *m, int node, const char *name, const char *v) {
  Onnx__AttributeProto *a = &m->attrs[m->n_attrs++];
  onnx__attribute_proto__init(a);
  a->name = keep(m, name);
  a->has_type = 1;
  a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
  a->has_s = 1;
  a->s.data = (uint8_t *)keep(m, v);
  a->s.len = strlen(v);
  Onnx__NodeProto *n = &m->nodes[node];
  m->attr_ptrs[node][n->n_attribute++] = a;
}

void tb_attr_ints(tb_model *m, int node, const char *name, int count, const int64_t *v) {
  int k = m->n_attrs;
  Onnx__AttributeProto *a = &m->attrs[m->n_attrs++];
  onnx__attribute_proto__init(a);
  a->name = keep(m, name);
  a->has_type = 1;
  a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
  memcpy(m->ints[k], v, sizeof(int64_t) * (size_t)count);
  a->n_ints = (size_t)count;
  a->ints = m->ints[k];
  Onnx__NodeProto *n = &m->nodes[node];
  m->attr_ptrs[node][n->n_attribute++] = a;
}

void tb_attr_graph(tb_model *m, int node, const char *name, tb_model *body) {
  Onnx__AttributeProto *a = &m->attrs[m->n_attrs++];
  onnx__attribute_proto__init(a);
  a->name = keep(m, name);
  a->has_type = 1;
  a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
  a->g = &body->graph;
  m->subs[m->n_subs++] = body;
  Onnx__NodeProto *n = &m->nodes[node];
  m->attr_ptrs[node][n->n_attribute++] = a;
}

void tb_domain(tb_model *m, int node, const char *domain) {
  m->nodes[node].domain = keep(m, domain);
}

uint8_t *tb_pack(tb_model *m, size_t *size) {
  *size = onnx__model_proto__get_packed_size(&m->model);
  uint8_t *buf = malloc(*size + 1);
  onnx__model_proto__pack(&m->model, buf);
  return buf;
}

struct ait_graph *tb_parse_graph(tb_model *m) {
  size_t size = 0;
  uint8_t *buf = tb_pack(m, &size);
  ait_graph *g = NULL;
  ait_status st = ait_onnx_parse_model(buf, size, ".", &g, NULL);
  free(buf);
  tb_free(m);
  if (st) fprintf(stderr, "parse: %s\n", ait_last_error());
  return g;
}
