/* ModelProto -> IR graph. Everything the protobuf holds that the IR needs is
 * copied, so the protobuf is freed before returning. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/fileio.h"
#include "ir/shape.h"
#include "onnx/onnx_priv.h"
#include "ops/op.h"
#include "runtime/eager.h"

typedef struct load_ctx {
  const char *base_dir;
  ait_limits lim;  /* resolved: every field set */
  int64_t n_nodes; /* nodes built so far, subgraphs' included */
} load_ctx;

static ait_status build_graph(load_ctx *lc, const Onnx__GraphProto *gp, ait_graph *g);
static ait_status build_graph_indexed(load_ctx *lc, const Onnx__GraphProto *gp, ait_graph *g,
                                      ait_name_index *ix);

/* Set v's type from a declaration. A rank above AIT_MAX_RANK is an error
 * (said as such, not as "no declared shape" later). */
static ait_status set_type(ait_value *v, const Onnx__TypeProto *tp) {
  if (!tp) return AIT_OK;
  const Onnx__TypeProto__Tensor *tt = NULL;
  if (tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) {
    v->type = AIT_VT_TENSOR;
    tt = tp->tensor_type;
  } else if (tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE) {
    v->type = AIT_VT_SEQUENCE;
    const Onnx__TypeProto *e = tp->sequence_type ? tp->sequence_type->elem_type : NULL;
    if (e && e->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && e->tensor_type)
      v->dtype = (ait_dtype)e->tensor_type->elem_type;
    return AIT_OK;
  } else if (tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE) {
    v->type = AIT_VT_OPTIONAL;
    const Onnx__TypeProto *e = tp->optional_type ? tp->optional_type->elem_type : NULL;
    if (e && e->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && e->tensor_type)
      v->dtype = (ait_dtype)e->tensor_type->elem_type;
    return AIT_OK;
  }
  if (!tt) return AIT_OK;
  if (tt->has_elem_type) v->dtype = (ait_dtype)tt->elem_type;
  if (!tt->shape) return AIT_OK;
  if (tt->shape->n_dim > AIT_MAX_RANK)
    return ait_err(AIT_E_UNSUPPORTED, "'%s' has rank %zu, above the maximum rank %d (AIT_MAX_RANK)",
                   v->name, tt->shape->n_dim, AIT_MAX_RANK);
  v->rank = (int)tt->shape->n_dim;
  for (int k = 0; k < v->rank; k++) {
    const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[k];
    free((char *)v->dims[k].sym);
    v->dims[k].sym = NULL;
    v->dims[k].v = -1;
    if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
      v->dims[k].v = d->dim_value >= 0 ? d->dim_value : -1; /* a negative size is unknown */
    else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
             d->dim_param && d->dim_param[0])
      v->dims[k].sym = strdup(d->dim_param);
  }
  return AIT_OK;
}

/* The value named `name` in g, added when new; ix is g's name index. */
static ait_status declare(ait_value *v, const Onnx__TypeProto *tp, const char *what) {
  ait_status st = set_type(v, tp);
  return st ? ait_err_prefix(st, "%s", what) : AIT_OK;
}

static int value_for(ait_graph *g, ait_name_index *ix, const char *name) {
  if (ait_name_index_sync(ix, g)) return -1;
  int v = ait_name_index_find(ix, g, name);
  return v >= 0 ? v : ait_graph_add_value(g, name);
}

static char *bin_to_str(ProtobufCBinaryData b) {
  char *s = malloc(b.len + 1);
  if (!s) return NULL;
  if (b.len) memcpy(s, b.data, b.len);
  s[b.len] = '\0';
  return s;
}

static ait_status convert_attr(load_ctx *lc, ait_graph *g, const ait_node *n,
                               const Onnx__AttributeProto *ap, ait_attr *a) {
  if (!(a->name = strdup(ap->name ? ap->name : ""))) return ait_err(AIT_E_NOMEM, "out of memory");
  if (ap->ref_attr_name && ap->ref_attr_name[0])
    return ait_err(AIT_E_UNSUPPORTED, "%s: attribute '%s' refers to a function attribute",
                   ait_node_desc(n), a->name);
  a->type = (ait_attr_type)ap->type;
  switch (ap->type) {
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT: a->f = ap->f; break;
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: a->i = ap->i; break;
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
    if (!(a->s = bin_to_str(ap->s))) return ait_err(AIT_E_NOMEM, "out of memory");
    break;
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR:
    if (!ap->t)
      return ait_err(AIT_E_INVALID_MODEL, "%s: tensor attribute '%s' is empty", ait_node_desc(n),
                     a->name);
    AIT_TRY(ait_onnx_tensor_decode(ap->t, lc->base_dir, lc->lim.max_tensor_bytes, &a->t));
    break;
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH: {
    if (!ap->g)
      return ait_err(AIT_E_INVALID_MODEL, "%s: graph attribute '%s' is empty", ait_node_desc(n),
                     a->name);
    a->g = ait_graph_new(ap->g->name, g);
    if (!a->g) return AIT_E_NOMEM;
    ait_status st = build_graph(lc, ap->g, a->g);
    if (st) return ait_err_prefix(st, "subgraph '%s' of %s", a->name, ait_node_desc(n));
    break;
  }
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
    a->n = (int)ap->n_floats;
    a->floats = malloc(sizeof(float) * (ap->n_floats + 1));
    if (!a->floats) return ait_err(AIT_E_NOMEM, "out of memory");
    if (a->n) memcpy(a->floats, ap->floats, sizeof(float) * ap->n_floats);
    break;
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
    a->n = (int)ap->n_ints;
    a->ints = malloc(sizeof(int64_t) * (ap->n_ints + 1));
    if (!a->ints) return ait_err(AIT_E_NOMEM, "out of memory");
    if (a->n) memcpy(a->ints, ap->ints, sizeof(int64_t) * ap->n_ints);
    break;
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS:
    a->strings = calloc(ap->n_strings + 1, sizeof(char *));
    if (!a->strings) return ait_err(AIT_E_NOMEM, "out of memory");
    for (size_t i = 0; i < ap->n_strings; i++) {
      if (!(a->strings[i] = bin_to_str(ap->strings[i])))
        return ait_err(AIT_E_NOMEM, "out of memory");
      a->n = (int)i + 1;
    }
    break;
  default:
    /* TENSORS, GRAPHS, SPARSE_TENSOR(S), TYPE_PROTO(S): no supported op needs them yet */
    a->type = AIT_ATTR_UNDEFINED;
    break;
  }
  return AIT_OK;
}

static ait_status add_node(load_ctx *lc, ait_graph *g, ait_name_index *ix,
                           const Onnx__NodeProto *np) {
  ait_node *n = ait_graph_add_node(g, np->name, np->op_type, np->domain);
  if (!n) return AIT_E_NOMEM;
  if (!np->op_type || !np->op_type[0])
    return ait_err(AIT_E_INVALID_MODEL, "node '%s' has no op_type", n->name);
  n->in = malloc(sizeof(int) * (np->n_input + 1));
  n->out = malloc(sizeof(int) * (np->n_output + 1));
  n->attrs = calloc(np->n_attribute + 1, sizeof(ait_attr));
  if (!n->in || !n->out || !n->attrs) return ait_err(AIT_E_NOMEM, "out of memory");
  for (size_t i = 0; i < np->n_output; i++) {
    n->out[i] = -1;
    n->n_out = (int)i + 1;
    if (np->output[i][0] && (n->out[i] = value_for(g, ix, np->output[i])) < 0) return AIT_E_NOMEM;
  }
  for (size_t i = 0; i < np->n_input; i++) {
    n->in[i] = -1;
    n->n_in = (int)i + 1;
  }
  for (size_t i = 0; i < np->n_attribute; i++) {
    n->n_attrs = (int)i + 1;
    /* the node pointer may move when a subgraph adds nodes to... its own
     * graph, never this one, so n stays valid here */
    AIT_TRY(convert_attr(lc, g, n, np->attribute[i], &n->attrs[i]));
  }
  return AIT_OK;
}

/* Inputs are resolved after every node's outputs exist, so file order does
 * not matter. A name found nowhere in a subgraph is read from an enclosing
 * scope; in the top graph it stays an undefined value that toposort reports. */
static ait_status resolve_inputs(ait_graph *g, ait_name_index *ix, const Onnx__GraphProto *gp) {
  for (size_t i = 0; i < gp->n_node; i++) {
    const Onnx__NodeProto *np = gp->node[i];
    for (size_t k = 0; k < np->n_input; k++) {
      if (!np->input[k][0]) continue;
      AIT_TRY(ait_name_index_sync(ix, g));
      int v = ait_name_index_find(ix, g, np->input[k]);
      if (v < 0) {
        if ((v = ait_graph_add_value(g, np->input[k])) < 0) return AIT_E_NOMEM;
        g->values[v].outer = g->parent != NULL;
      }
      g->nodes[i].in[k] = v;
    }
  }
  return AIT_OK;
}

static ait_status build_graph(load_ctx *lc, const Onnx__GraphProto *gp, ait_graph *g) {
  ait_name_index ix = {0};
  ait_status st = build_graph_indexed(lc, gp, g, &ix);
  ait_name_index_free(&ix);
  return st;
}

static ait_status build_graph_indexed(load_ctx *lc, const Onnx__GraphProto *gp, ait_graph *g,
                                      ait_name_index *ix) {
  /* counted before any of them is built: the IR of a node costs several
   * times its few bytes on the wire */
  lc->n_nodes += (int64_t)gp->n_node;
  if (lc->n_nodes > lc->lim.max_nodes)
    return ait_err(AIT_E_UNSUPPORTED,
                   "the model has more than %lld nodes (max_nodes, subgraphs included); raise "
                   "it in ait_load_options or with --max-nodes",
                   (long long)lc->lim.max_nodes);
  for (size_t i = 0; i < gp->n_initializer; i++) {
    const Onnx__TensorProto *tp = gp->initializer[i];
    if (!tp->name || !tp->name[0])
      return ait_err(AIT_E_INVALID_MODEL, "initializer %zu has no name", i);
    int v = value_for(g, ix, tp->name);
    if (v < 0) return AIT_E_NOMEM;
    if (g->values[v].init)
      return ait_err(AIT_E_INVALID_MODEL, "initializer '%s' is defined twice", tp->name);
    ait_status st =
        ait_onnx_tensor_decode(tp, lc->base_dir, lc->lim.max_tensor_bytes, &g->values[v].init);
    if (st) return ait_err_prefix(st, "initializer '%s'", tp->name);
    ait_tensor *t = g->values[v].init;
    g->values[v].dtype = t->dtype;
    g->values[v].rank = t->rank;
    for (int k = 0; k < t->rank; k++)
      g->values[v].dims[k].v = t->dims[k];
  }
  if (gp->n_sparse_initializer)
    return ait_err(AIT_E_UNSUPPORTED, "sparse initializers are not supported");
  g->inputs = malloc(sizeof(int) * (gp->n_input + 1));
  g->outputs = malloc(sizeof(int) * (gp->n_output + 1));
  if (!g->inputs || !g->outputs) return ait_err(AIT_E_NOMEM, "out of memory");
  for (size_t i = 0; i < gp->n_input; i++) {
    const Onnx__ValueInfoProto *vi = gp->input[i];
    if (!vi->name || !vi->name[0])
      return ait_err(AIT_E_INVALID_MODEL, "graph input %zu has no name", i);
    int v = value_for(g, ix, vi->name);
    if (v < 0) return AIT_E_NOMEM;
    if (g->values[v].init) continue; /* an initializer listed as input: a constant default */
    for (int j = 0; j < g->n_inputs; j++)
      if (g->inputs[j] == v)
        return ait_err(AIT_E_INVALID_MODEL, "graph input '%s' is listed twice", vi->name);
    AIT_TRY(declare(&g->values[v], vi->type, "graph input"));
    g->inputs[g->n_inputs++] = v;
  }
  for (size_t i = 0; i < gp->n_node; i++)
    AIT_TRY(add_node(lc, g, ix, gp->node[i]));
  AIT_TRY(resolve_inputs(g, ix, gp));
  AIT_TRY(ait_name_index_sync(ix, g));
  for (size_t i = 0; i < gp->n_value_info; i++) {
    const Onnx__ValueInfoProto *vi = gp->value_info[i];
    int v = vi->name ? ait_name_index_find(ix, g, vi->name) : -1;
    if (v >= 0 && !g->values[v].init) AIT_TRY(declare(&g->values[v], vi->type, "value_info"));
  }
  for (size_t i = 0; i < gp->n_output; i++) {
    const Onnx__ValueInfoProto *vi = gp->output[i];
    AIT_TRY(ait_name_index_sync(ix, g));
    int v = vi->name ? ait_name_index_find(ix, g, vi->name) : -1;
    if (v < 0) {
      /* a subgraph may pass an outer-scope value straight through */
      if (!g->parent || !vi->name)
        return ait_err(AIT_E_INVALID_MODEL, "graph output '%s' is not produced by any node",
                       vi->name ? vi->name : "");
      if ((v = ait_graph_add_value(g, vi->name)) < 0) return AIT_E_NOMEM;
      g->values[v].outer = true;
    }
    ait_value *val = &g->values[v];
    if (val->dtype == AIT_UNDEFINED || val->rank < 0)
      AIT_TRY(declare(val, vi->type, "graph output"));
    g->outputs[g->n_outputs++] = v;
  }
  return ait_graph_toposort(g);
}

/* Registry lookups are a scan of every row; a model of 100,000 nodes uses a
 * few dozen distinct (domain, op, opset) triples, so they are remembered. */
typedef struct op_memo {
  const char *domain, *op_type; /* borrowed from the graph's nodes */
  int64_t opset;
  const ait_op_def *row;
} op_memo;

static const ait_op_def *lookup_memo(op_memo *memo, const ait_node *n, int64_t opset) {
  uint64_t h = (uint64_t)opset * 31;
  for (const char *c = n->op_type; *c; c++)
    h = h * 131 + (unsigned char)*c;
  op_memo *e = &memo[h % 256];
  if (e->op_type && e->opset == opset && !strcmp(e->op_type, n->op_type) &&
      !strcmp(e->domain, n->domain))
    return e->row;
  *e = (op_memo){n->domain, n->op_type, opset, ait_op_lookup(n->domain, n->op_type, opset, NULL)};
  return e->row;
}

/* Resolve every node's registry row, recursively. Unknown ops are kept
 * (aitune info can still describe the model); a session reports them. */
static ait_status resolve_ops(ait_graph *g, op_memo *memo) {
  for (int i = 0; i < g->n_nodes; i++) {
    ait_node *n = &g->nodes[i];
    int64_t opset = ait_graph_opset(g, n->domain);
    if (opset < 0)
      return ait_err(AIT_E_INVALID_MODEL, "%s uses domain '%s', which the model does not import",
                     ait_node_desc(n), n->domain[0] ? n->domain : "ai.onnx");
    n->opset = (int)opset;
    n->op = lookup_memo(memo, n, opset);
    for (int k = 0; k < n->n_attrs; k++)
      if (n->attrs[k].g) AIT_TRY(resolve_ops(n->attrs[k].g, memo));
  }
  return AIT_OK;
}

void ait_onnx_meta_clear(ait_onnx_meta *meta) {
  free(meta->producer);
  free(meta->producer_version);
  for (int i = 0; i < meta->n_props; i++) {
    free(meta->prop_keys[i]);
    free(meta->prop_values[i]);
  }
  free(meta->prop_keys);
  free(meta->prop_values);
  memset(meta, 0, sizeof *meta);
}

/* ModelProto.metadata_props into meta (entries without a key are skipped). */
static ait_status read_props(const Onnx__ModelProto *mp, ait_onnx_meta *meta) {
  size_t n = mp->n_metadata_props;
  if (n > AIT_MAX_METADATA_PROPS)
    return ait_err(AIT_E_UNSUPPORTED, "model has %zu metadata_props entries, at most %d read", n,
                   AIT_MAX_METADATA_PROPS);
  meta->prop_keys = calloc(n + 1, sizeof *meta->prop_keys);
  meta->prop_values = calloc(n + 1, sizeof *meta->prop_values);
  if (!meta->prop_keys || !meta->prop_values) return ait_err(AIT_E_NOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) {
    const Onnx__StringStringEntryProto *e = mp->metadata_props[i];
    if (!e || !e->key) continue;
    int k = meta->n_props;
    meta->prop_keys[k] = strdup(e->key);
    meta->prop_values[k] = strdup(e->value ? e->value : "");
    meta->n_props++; /* counted before the check: clear() frees a half-made entry */
    if (!meta->prop_keys[k] || !meta->prop_values[k]) return ait_err(AIT_E_NOMEM, "out of memory");
  }
  return AIT_OK;
}

/* ---- nesting bound ------------------------------------------------------
 * protobuf-c unpacks nested messages recursively, and so do build_graph and
 * shape inference: a 360 KB model of Ifs nested 3,000 deep overflows the
 * stack. The wire format is scanned first, guided by protobuf-c's own
 * descriptors, and the model is refused when messages nest deeper than
 * max_depth (ait_load_options). The scan recurses at most that deep itself and
 * skips non-message fields (raw data) without reading them. */

static bool wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  *v = 0;
  for (int shift = 0; shift < 64 && *p < end; shift += 7) {
    uint8_t b = *(*p)++;
    *v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

/* false when the nesting is too deep; malformed bytes are left to unpack. */
bool ait_onnx_depth_ok(const uint8_t *p, const uint8_t *end, const ProtobufCMessageDescriptor *d,
                       int depth, int max_depth) {
  if (depth > max_depth) return false;
  while (p < end) {
    uint64_t key, len;
    if (!wire_varint(&p, end, &key)) return true;
    switch (key & 7) {
    case 0:
      if (!wire_varint(&p, end, &len)) return true;
      break;
    case 1:
      if (end - p < 8) return true;
      p += 8;
      break;
    case 5:
      if (end - p < 4) return true;
      p += 4;
      break;
    case 2: {
      if (!wire_varint(&p, end, &len) || len > (uint64_t)(end - p)) return true;
      const ProtobufCFieldDescriptor *f =
          key >> 3 <= UINT32_MAX ? protobuf_c_message_descriptor_get_field(d, (unsigned)(key >> 3))
                                 : NULL;
      if (f && f->type == PROTOBUF_C_TYPE_MESSAGE &&
          !ait_onnx_depth_ok(p, p + len, (const ProtobufCMessageDescriptor *)f->descriptor,
                             depth + 1, max_depth))
        return false;
      p += len;
      break;
    }
    default: return true; /* groups or garbage: unpack refuses them */
    }
  }
  return true;
}

ait_status ait_onnx_parse_model(const void *data, size_t size, const char *base_dir,
                                ait_graph **out, ait_onnx_meta *meta) {
  return ait_onnx_parse_model_limits(data, size, base_dir, NULL, out, meta);
}

ait_status ait_onnx_parse_model_limits(const void *data, size_t size, const char *base_dir,
                                       const ait_limits *limits, ait_graph **out,
                                       ait_onnx_meta *meta) {
  load_ctx lc = {base_dir, ait_limits_resolve(limits ? *limits : (ait_limits){0}), 0};
  if (!ait_onnx_depth_ok(data, (const uint8_t *)data + size, &onnx__model_proto__descriptor, 1,
                         lc.lim.max_depth))
    return ait_err(AIT_E_INVALID_MODEL,
                   "the model nests messages more than %d deep (subgraphs inside subgraphs); "
                   "refused to protect the stack (max_depth; raise it in ait_load_options or "
                   "with --max-depth)",
                   lc.lim.max_depth);
  Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, size, data);
  if (!mp)
    return ait_err(AIT_E_PARSE, "not a valid ONNX model: the protobuf could not be decoded "
                                "(truncated or not an ONNX file)");
  ait_status st = AIT_OK;
  ait_graph *g = NULL;
  if (!mp->graph || (mp->graph->n_node == 0 && mp->graph->n_output == 0)) {
    st = ait_err(AIT_E_PARSE, "not a valid ONNX model: it has no graph");
    goto out;
  }
  if (!(g = ait_graph_new(mp->graph->name, NULL))) {
    st = AIT_E_NOMEM;
    goto out;
  }
  g->ir_version = (int)mp->ir_version;
  g->opsets = calloc(mp->n_opset_import + 1, sizeof *g->opsets);
  if (!g->opsets) {
    st = ait_err(AIT_E_NOMEM, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < mp->n_opset_import; i++) {
    const Onnx__OperatorSetIdProto *o = mp->opset_import[i];
    const char *d = o->domain && strcmp(o->domain, "ai.onnx") ? o->domain : "";
    g->opsets[i].domain = strdup(d);
    g->opsets[i].version = o->version;
    g->n_opsets = (int)i + 1;
  }
  if (mp->n_opset_import == 0) { /* IR < 3 models: opset 1 implied */
    g->opsets[0].domain = strdup("");
    g->opsets[0].version = 1;
    g->n_opsets = 1;
  }
  g->limits = lc.lim; /* before building: shape inference folds under it */
  if ((st = build_graph(&lc, mp->graph, g)) != AIT_OK) goto out;
  op_memo *memo = calloc(256, sizeof *memo);
  if (!memo) {
    st = ait_err(AIT_E_NOMEM, "out of memory");
    goto out;
  }
  st = resolve_ops(g, memo);
  free(memo);
  if (st) goto out;
  if ((st = ait_graph_infer_shapes(g, ait_eager_run_node)) != AIT_OK) goto out;
  if (meta) {
    meta->ir_version = mp->ir_version;
    meta->producer = strdup(mp->producer_name ? mp->producer_name : "");
    meta->producer_version = strdup(mp->producer_version ? mp->producer_version : "");
    if ((st = read_props(mp, meta)) != AIT_OK) goto out;
  }
out:
  onnx__model_proto__free_unpacked(mp, NULL);
  if (st) {
    ait_graph_free(g);
    return st;
  }
  *out = g;
  return AIT_OK;
}

ait_status ait_onnx_load_saved_graph(const char *dir, const char *file, const ait_graph *model,
                                     ait_graph **out) {
  *out = NULL;
  char *path = ait_path_join(dir, file);
  if (!path) return ait_err(AIT_E_NOMEM, "out of memory");
  void *data = NULL;
  size_t size = 0;
  ait_graph *g = NULL;
  ait_status st = ait_read_file(path, &data, &size);
  /* the backend saved it from `model`: held to the limits `model` was loaded under */
  if (!st)
    st = ait_onnx_parse_model_limits(data, size, dir, &ait_graph_root(model)->limits, &g, NULL);
  free(data);
  if (!st && (g->n_inputs != model->n_inputs || g->n_outputs != model->n_outputs))
    st = ait_err(AIT_E_INVALID_MODEL, "it has %d inputs and %d outputs, the model %d and %d",
                 g->n_inputs, g->n_outputs, model->n_inputs, model->n_outputs);
  for (int i = 0; !st && i < model->n_inputs + model->n_outputs; i++) {
    bool in = i < model->n_inputs;
    const ait_value *a = &g->values[in ? g->inputs[i] : g->outputs[i - model->n_inputs]];
    const ait_value *b =
        &model->values[in ? model->inputs[i] : model->outputs[i - model->n_inputs]];
    if (strcmp(a->name, b->name) || (a->dtype != b->dtype && b->dtype != AIT_UNDEFINED))
      st = ait_err(AIT_E_INVALID_MODEL, "its %s '%s' (%s) is the model's '%s' (%s)",
                   in ? "input" : "output", a->name, ait_dtype_name(a->dtype), b->name,
                   ait_dtype_name(b->dtype));
  }
  if (st) {
    ait_graph_free(g);
    ait_err_prefix(st, "saved graph %s", path);
  } else {
    *out = g;
  }
  free(path);
  return st;
}
