#include "runtime/observe.h"

#include <time.h>

static _Thread_local ait_node_observer observer;
static _Thread_local void *observer_user;

void ait_observe_set(ait_node_observer fn, void *user) {
  observer = fn;
  observer_user = user;
}

bool ait_observing(void) { return observer != NULL; }

void ait_observe_node(const ait_node *node, double seconds) {
  if (observer) observer(observer_user, node, seconds);
}

double ait_observe_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
