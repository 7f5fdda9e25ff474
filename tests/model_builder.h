/* Test-only: build small ONNX models in memory with the generated protobuf-c
 * code, so tests can make valid and deliberately broken models without
 * binary fixtures. */
#ifndef AIT_TEST_MODEL_BUILDER_H
#define AIT_TEST_MODEL_BUILDER_H

#include <stddef.h>
#include <stdint.h>

typedef struct tb_model tb_model;

/* New model importing the default domain at `opset`. */
tb_model *tb_new(int64_t opset);
void tb_free(tb_model *m);
/* Declare a float32 (or dtype) graph input/output; dims < 0 are symbolic "N". */
void tb_input(tb_model *m, const char *name, int dtype, int rank, const int64_t *dims);
void tb_output(tb_model *m, const char *name, int dtype, int rank, const int64_t *dims);
/* The name of the symbolic dims declared from now on (default "N"; any text:
 * ONNX allows quotes, backslashes and UTF-8 in dim_param). */
void tb_dim_name(tb_model *m, const char *name);
/* Add a float32 initializer with the given data (copied). */
void tb_init_f32(tb_model *m, const char *name, int rank, const int64_t *dims, const float *data);
/* Add an int64 initializer with the given data (copied). */
void tb_init_i64(tb_model *m, const char *name, int rank, const int64_t *dims, const int64_t *data);
/* Add an initializer whose data lives in an external file. */
void tb_init_external(tb_model *m, const char *name, int rank, const int64_t *dims,
                      const char *location, int64_t offset, int64_t length);
/* Add a node; inputs/outputs are NULL-terminated name lists. Returns its index. */
int tb_node(tb_model *m, const char *op, const char *name, const char *const *inputs,
            const char *const *outputs);
/* Set an int attribute on node idx. */
void tb_attr_int(tb_model *m, int node, const char *name, int64_t v);
/* Set a float attribute on node idx. */
void tb_attr_float(tb_model *m, int node, const char *name, float v);
/* Set a string attribute on node idx. */
void tb_attr_str(tb_model *m, int node, const char *name, const char *v);
/* Set an ints attribute (at most 8 values) on node idx. */
void tb_attr_ints(tb_model *m, int node, const char *name, int count, const int64_t *v);
/* Set a graph attribute on node idx: body's graph (a model made with tb_new,
 * whose opset is ignored), taken over by m. */
void tb_attr_graph(tb_model *m, int node, const char *name, tb_model *body);
/* Set the domain of node idx. */
void tb_domain(tb_model *m, int node, const char *domain);
/* Serialize; *size receives the length; caller frees. */
uint8_t *tb_pack(tb_model *m, size_t *size);
/* Serialize m, free it, and parse the bytes into a new graph (the caller
 * frees it with ait_graph_free); NULL with the error printed on failure. */
struct ait_graph *tb_parse_graph(tb_model *m);

#endif
