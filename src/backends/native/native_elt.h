/* Elementwise kernels of the native backend (native_eltwise.c: binary ops,
 * comparisons, Where; native_elt_unary.c: unary ops and Cast;
 * native_elt_act.c: activations and epilogue programs; native_elt_reduce.c:
 * ReduceMax/Min/Sum/Mean). */
#ifndef AIT_BACKENDS_NATIVE_ELT_H
#define AIT_BACKENDS_NATIVE_ELT_H

#include "backends/native/native.h"

ait_status nat_k_compare(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in);
ait_status nat_k_where(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in);
ait_status nat_k_cast(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in);
ait_status nat_k_reduce(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in);
ait_status nat_k_not(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in);
ait_status nat_k_logic(nat_run *r, const ait_node *n, const ait_tensor *const *in, int n_in);

#endif
