/* What native_engine.h publishes beyond native's own files: accessors that
 * keep nat_state's fields private to native. */
#include "backends/native/native.h"

void nat_state_park(nat_state *s) { nat_pool_park(s ? s->pool : NULL); }

ait_graph *nat_state_graph(const nat_state *s) { return s->g; }

int nat_state_isa(const nat_state *s) { return s->isa; }
