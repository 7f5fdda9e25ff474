/* FLOP estimates per node from the inferred static shapes: multiply-adds
 * count 2; unknown and symbolic dims count as 1. Used by `aitune info` and
 * by the partitioner to judge whether a backend's share pays off. */
#ifndef AIT_IR_FLOPS_H
#define AIT_IR_FLOPS_H

#include "ir/graph.h"

double ait_node_flops(const ait_graph *g, const ait_node *n);

#endif
