/* The ONNX boundary: protobuf bytes in, IR and tensors out (and tensors back
 * to TensorProto files). The generated protobuf-c types stay inside
 * src/onnx/; nothing else includes onnx.pb-c.h. */
#ifndef AIT_ONNX_IO_H
#define AIT_ONNX_IO_H

#include <stddef.h>

#include "aitune.h"
#include "core/tensor.h"
#include "ir/graph.h"

/* Deepest nesting of protobuf messages a file may have by default
 * (ModelProto = 1; each subgraph level adds 3: GraphProto > NodeProto >
 * AttributeProto), so about 32 subgraphs inside each other. Deeper files
 * are refused before unpacking (docs/conformance.md, "Limits"); a model's
 * own bound is its max_depth (ait_load_options), .pb value files keep
 * this one. */
#define AIT_MAX_MESSAGE_DEPTH AIT_DEFAULT_MAX_DEPTH
/* Most ModelProto.metadata_props entries kept (ait_model_metadata). */
#define AIT_MAX_METADATA_PROPS 4096

/* Model-level facts kept beside the graph. Strings owned by the struct. */
typedef struct ait_onnx_meta {
  int64_t ir_version;
  char *producer;
  char *producer_version;
  int n_props; /* ModelProto.metadata_props, in file order */
  char **prop_keys, **prop_values;
} ait_onnx_meta;

/* Parse a serialized ModelProto into a new graph (caller frees with
 * ait_graph_free). External data resolves relative to base_dir. Nodes are
 * sorted and resolved against the op registry; shapes are inferred. meta may
 * be NULL; its strings are new and the caller frees them. */
ait_status ait_onnx_parse_model(const void *data, size_t size, const char *base_dir,
                                ait_graph **out, ait_onnx_meta *meta);
/* The same under the caller's limits (NULL: the defaults); the graph keeps
 * them (g->limits). */
ait_status ait_onnx_parse_model_limits(const void *data, size_t size, const char *base_dir,
                                       const ait_limits *limits, ait_graph **out,
                                       ait_onnx_meta *meta);
void ait_onnx_meta_clear(ait_onnx_meta *meta);

/* Write graph g (nodes, initializers and known values as value_info,
 * attributes, subgraphs, opset imports) as an ONNX model file, atomically.
 * Values with `init` and no producer become initializers. Loading the file
 * back with ait_onnx_parse_model gives an equivalent graph. */
ait_status ait_onnx_write_model(const ait_graph *g, const char *path);
/* The same ModelProto bytes in memory: *out is malloc'ed, the caller frees
 * it. */
ait_status ait_onnx_write_model_buffer(const ait_graph *g, uint8_t **out, size_t *out_len);

/* Load a graph a backend saved (with ait_onnx_write_model) as dir/file and
 * check it still fits `model`: the same inputs and outputs, by name and
 * dtype, in order. Errors name the file and the mismatch. It is held to
 * the limits `model` was loaded under. */
ait_status ait_onnx_load_saved_graph(const char *dir, const char *file, const ait_graph *model,
                                     ait_graph **out);

/* Read a serialized TensorProto file (the test layout's input_K.pb) into a
 * new tensor; *name (may be NULL) receives a new copy of its name. */
ait_status ait_tensor_file_read(const char *path, ait_tensor **out, char **name);
/* Write a tensor as a serialized TensorProto (raw_data), atomically. */
ait_status ait_tensor_file_write(const char *path, const ait_tensor *t, const char *name);

/* Read a value file of the declared type: a TensorProto for a tensor, a
 * SequenceProto (of tensors) for a sequence, an OptionalProto for an
 * optional (empty: kind AIT_KIND_NONE; else the tensor or sequence itself).
 * elem is the declared element dtype (for an empty sequence; may be
 * AIT_UNDEFINED). *out is new; the caller frees it. */
ait_status ait_value_file_read(const char *path, ait_value_type type, ait_dtype elem,
                               ait_tensor **out);
/* Write t as the file ait_value_file_read reads for `type`, atomically. */
ait_status ait_value_file_write(const char *path, const ait_tensor *t, ait_value_type type,
                                const char *name);

#endif
