/* The cases OpenVINO reads and runs but computes wrong (issue 21), as data:
 * one row per refusal, an op with a condition on its attributes, input
 * dtypes or shapes, and the reason. backend_openvino.c's supports() asks
 * here, so the tuner gives those nodes to another backend instead of
 * building a candidate its numeric check then throws away.
 *
 * The rows come from the onnx 1.23.2 node tests (docs/conformance.md):
 * each names the narrowest condition the failures share, and the passing
 * tests of the same op stay accepted. */
#ifndef AIT_BACKENDS_OV_REFUSE_H
#define AIT_BACKENDS_OV_REFUSE_H

#include <stdbool.h>
#include <stddef.h>

#include "ir/graph.h"

/* True when OpenVINO computes node n of g wrong; the reason, naming the node
 * and the condition, in why. g may be NULL: conditions on the node's inputs
 * then do not apply. */
bool ov_refuses(const ait_graph *g, const ait_node *n, char *why, size_t len);

/* Rows of the table (for tests and `aitune backends`). */
int ov_refusal_count(void);

#endif
