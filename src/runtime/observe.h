/* Per-node timing for `aitune profile`: an observer, set per thread, that
 * executors call after each node with its wall time. Executors that time
 * nodes: eager and native (also as partition segments). Costs one branch per
 * node when no observer is set. */
#ifndef AIT_RUNTIME_OBSERVE_H
#define AIT_RUNTIME_OBSERVE_H

#include <stdbool.h>

#include "ir/graph.h"

typedef void (*ait_node_observer)(void *user, const ait_node *node, double seconds);

/* Set (or clear, with NULL) this thread's observer. */
void ait_observe_set(ait_node_observer fn, void *user);
/* Is an observer set on this thread? */
bool ait_observing(void);
/* Report a node's time to this thread's observer, if any. */
void ait_observe_node(const ait_node *node, double seconds);
/* Monotonic clock in seconds. */
double ait_observe_now(void);

#endif
