/* Operator family 'control': constants and control flow (If, Loop, Scan).
 * Control flow runs its bodies through ait_kctx_run_graph, so bodies see the
 * enclosing scope's values. */
#include <stdlib.h>
#include <string.h>

#include "ir/shape.h"
#include "ops/op.h"

/* ---- Constant ---------------------------------------------------------- */

static ait_status constant_value(const ait_node *n, ait_tensor **out) {
  const ait_attr *a;
  if ((a = ait_node_attr(n, "value")) && a->t) {
    *out = ait_tensor_clone(a->t);
  } else if ((a = ait_node_attr(n, "value_float"))) {
    if ((*out = ait_tensor_new(AIT_FLOAT32, 0, NULL))) *(float *)(*out)->data = a->f;
  } else if ((a = ait_node_attr(n, "value_int"))) {
    if ((*out = ait_tensor_new(AIT_INT64, 0, NULL))) *(int64_t *)(*out)->data = a->i;
  } else if ((a = ait_node_attr(n, "value_floats"))) {
    int64_t d = a->n;
    if ((*out = ait_tensor_new(AIT_FLOAT32, 1, &d)) && d)
      memcpy((*out)->data, a->floats, sizeof(float) * (size_t)d);
  } else if ((a = ait_node_attr(n, "value_ints"))) {
    int64_t d = a->n;
    if ((*out = ait_tensor_new(AIT_INT64, 1, &d)) && d)
      memcpy((*out)->data, a->ints, sizeof(int64_t) * (size_t)d);
  } else if ((a = ait_node_attr(n, "value_string"))) {
    if ((*out = ait_tensor_new(AIT_STRING, 0, NULL)) &&
        !(((char **)(*out)->data)[0] = strdup(a->s ? a->s : "")))
      return ait_err(AIT_E_NOMEM, "out of memory");
  } else if ((a = ait_node_attr(n, "value_strings"))) {
    int64_t d = a->n;
    if ((*out = ait_tensor_new(AIT_STRING, 1, &d)))
      for (int i = 0; i < a->n; i++)
        if (!(((char **)(*out)->data)[i] = strdup(a->strings[i])))
          return ait_err(AIT_E_NOMEM, "out of memory");
  } else {
    return ait_err(AIT_E_UNSUPPORTED, "Constant needs one of value, value_float(s), value_int(s), "
                                      "value_string(s) (sparse_value is not supported)");
  }
  return *out ? AIT_OK : AIT_E_NOMEM;
}

static ait_status k_constant(ait_kctx *ctx, const ait_node *n, const ait_tensor *const *in,
                             int n_in, ait_tensor **out, int n_out) {
  return constant_value(n, &out[0]);
}

static ait_status s_constant(ait_graph *g, const ait_node *n) {
  ait_tensor *t = NULL;
  if (constant_value(n, &t) == AIT_OK && t) {
    ait_dim dims[AIT_MAX_RANK];
    for (int k = 0; k < t->rank; k++)
      dims[k] = (ait_dim){t->dims[k], NULL};
    ait_set_out(g, n, 0, t->dtype, t->rank, dims);
  }
  ait_tensor_free(t);
  ait_err_clear();
  return AIT_OK;
}

/* ---- If ---------------------------------------------------------------- */

static ait_status k_if(ait_kctx *ctx, const ait_node *n, const ait_tensor *const *in, int n_in,
                       ait_tensor **out, int n_out) {
  if (!in[0] || in[0]->kind != AIT_KIND_TENSOR || ait_tensor_numel(in[0]) != 1)
    return ait_err(AIT_E_INVALID_ARG, "If: cond must be a single-element tensor");
  bool cond = ait_scalar_f64(in[0]) != 0.0;
  const ait_graph *body = ait_attr_graph(n, cond ? "then_branch" : "else_branch");
  if (!body)
    return ait_err(AIT_E_INVALID_MODEL, "If: missing %s", cond ? "then_branch" : "else_branch");
  if (body->n_outputs != n_out)
    return ait_err(AIT_E_INVALID_MODEL, "If: branch has %d outputs, node has %d", body->n_outputs,
                   n_out);
  return ait_kctx_run_graph(ctx, body, NULL, 0, out);
}

/* ---- helpers for Loop and Scan ---------------------------------------- */

/* Slice `index` of t along `axis` (the axis is dropped). */
static ait_tensor *slice_axis(const ait_tensor *t, int axis, int64_t index) {
  int64_t dims[AIT_MAX_RANK];
  int r = 0;
  for (int k = 0; k < t->rank; k++)
    if (k != axis) dims[r++] = t->dims[k];
  ait_tensor *s = ait_tensor_new(t->dtype, r, dims);
  if (!s) return NULL;
  size_t es = ait_elem_size(t->dtype);
  int64_t outer = ait_shape_numel(axis, t->dims);
  int64_t inner = ait_shape_numel(t->rank - axis - 1, t->dims + axis + 1);
  for (int64_t o = 0; o < outer; o++) {
    const char *src = (const char *)t->data + ((o * t->dims[axis] + index) * inner) * (int64_t)es;
    char *dst = (char *)s->data + o * inner * (int64_t)es;
    if (t->dtype == AIT_STRING) {
      for (int64_t i = 0; i < inner; i++)
        ((char **)dst)[i] = strdup(((char *const *)src)[i] ? ((char *const *)src)[i] : "");
    } else {
      memcpy(dst, src, (size_t)inner * es);
    }
  }
  return s;
}

/* Stack `count` equally shaped tensors along a new `axis`. */
static ait_status stack_axis(ait_tensor *const *parts, int64_t count, int axis, ait_dtype dt,
                             const ait_tensor *shape_of, ait_tensor **out) {
  int64_t dims[AIT_MAX_RANK];
  int r = shape_of ? shape_of->rank : 0;
  if (r + 1 > AIT_MAX_RANK) return ait_err(AIT_E_UNSUPPORTED, "scan output rank too large");
  for (int k = 0, j = 0; k <= r; k++)
    dims[k] = k == axis ? count : shape_of->dims[j++];
  for (int64_t i = 0; i < count; i++)
    if (parts[i]->rank != r ||
        memcmp(parts[i]->dims, shape_of->dims, sizeof(int64_t) * (size_t)r) ||
        parts[i]->dtype != dt)
      return ait_err(AIT_E_SHAPE, "scan outputs of different iterations differ in shape or dtype");
  ait_tensor *t = ait_tensor_new(dt, r + 1, dims);
  if (!t) return AIT_E_NOMEM;
  size_t es = ait_elem_size(dt);
  int64_t outer = ait_shape_numel(axis, dims), inner = ait_shape_numel(r - axis, dims + axis + 1);
  for (int64_t i = 0; i < count; i++)
    for (int64_t o = 0; o < outer; o++) {
      const char *src = (const char *)parts[i]->data + o * inner * (int64_t)es;
      char *dst = (char *)t->data + ((o * count + i) * inner) * (int64_t)es;
      if (dt == AIT_STRING)
        for (int64_t e = 0; e < inner; e++)
          ((char **)dst)[e] = strdup(((char *const *)src)[e]);
      else
        memcpy(dst, src, (size_t)inner * es);
    }
  *out = t;
  return AIT_OK;
}

/* ---- Loop -------------------------------------------------------------- */

typedef struct scan_acc { /* per scan output: the slices collected so far */
  ait_tensor **parts;
  int64_t n, cap;
} scan_acc;

static ait_status acc_push(scan_acc *a, ait_tensor *t) {
  if (a->n == a->cap) {
    int64_t cap = a->cap ? a->cap * 2 : 16;
    ait_tensor **p = realloc(a->parts, sizeof(void *) * (size_t)cap);
    if (!p) {
      ait_tensor_free(t);
      return ait_err(AIT_E_NOMEM, "out of memory");
    }
    a->parts = p;
    a->cap = cap;
  }
  a->parts[a->n++] = t;
  return AIT_OK;
}

static void acc_free(scan_acc *a, int n) {
  for (int i = 0; i < n; i++) {
    for (int64_t j = 0; j < a[i].n; j++)
      ait_tensor_free(a[i].parts[j]);
    free(a[i].parts);
  }
  free(a);
}

static ait_status k_loop(ait_kctx *ctx, const ait_node *n, const ait_tensor *const *in, int n_in,
                         ait_tensor **out, int n_out) {
  const ait_graph *body = ait_attr_graph(n, "body");
  if (!body) return ait_err(AIT_E_INVALID_MODEL, "Loop: missing body");
  int n_state = n_in - 2, n_scan = body->n_outputs - 1 - n_state;
  if (n_state < 0 || n_scan < 0 || body->n_inputs != n_state + 2 || n_out != n_state + n_scan)
    return ait_err(AIT_E_INVALID_MODEL, "Loop: body inputs/outputs do not match the node");
  int64_t max_trip = in[0] ? ait_scalar_i64(in[0]) : INT64_MAX;
  bool cond = in[1] ? ait_scalar_f64(in[1]) != 0.0 : true;
  ait_tensor **state = calloc((size_t)n_state + 1, sizeof *state);
  ait_tensor **bout = calloc((size_t)body->n_outputs + 1, sizeof *bout);
  const ait_tensor **bin = calloc((size_t)n_state + 3, sizeof *bin);
  scan_acc *acc = calloc((size_t)n_scan + 1, sizeof *acc);
  ait_tensor *iter_t = ait_tensor_new(AIT_INT64, 0, NULL);
  ait_tensor *cond_t = ait_tensor_new(AIT_BOOL, 0, NULL);
  ait_status st = AIT_OK;
  if (!state || !bout || !bin || !acc || !iter_t || !cond_t)
    st = ait_err(AIT_E_NOMEM, "out of memory");
  for (int i = 0; !st && i < n_state; i++)
    if (!(state[i] = ait_tensor_clone(in[2 + i]))) st = AIT_E_NOMEM;
  for (int64_t it = 0; !st && it < max_trip && cond; it++) {
    *(int64_t *)iter_t->data = it;
    *(uint8_t *)cond_t->data = cond;
    bin[0] = iter_t;
    bin[1] = cond_t;
    for (int i = 0; i < n_state; i++)
      bin[2 + i] = state[i];
    if ((st = ait_kctx_run_graph(ctx, body, bin, n_state + 2, bout)) != AIT_OK) break;
    cond = ait_scalar_f64(bout[0]) != 0.0;
    ait_tensor_free(bout[0]);
    for (int i = 0; i < n_state; i++) {
      ait_tensor_free(state[i]);
      state[i] = bout[1 + i];
    }
    for (int i = 0; i < n_scan; i++)
      if (!st)
        st = acc_push(&acc[i], bout[1 + n_state + i]);
      else
        ait_tensor_free(bout[1 + n_state + i]);
  }
  for (int i = 0; !st && i < n_state; i++) {
    out[i] = state[i];
    state[i] = NULL;
  }
  for (int i = 0; !st && i < n_scan; i++) {
    const ait_value *decl = &body->values[body->outputs[1 + n_state + i]];
    if (acc[i].n == 0) { /* no iterations: an empty tensor with a leading 0 dim */
      int64_t dims[AIT_MAX_RANK] = {0};
      int r = decl->rank > 0 && decl->rank < AIT_MAX_RANK ? decl->rank + 1 : 1;
      for (int k = 1; k < r; k++)
        dims[k] = decl->dims[k - 1].v > 0 ? decl->dims[k - 1].v : 0;
      out[n_state + i] = ait_tensor_new(decl->dtype ? decl->dtype : AIT_FLOAT32, r, dims);
      if (!out[n_state + i]) st = AIT_E_NOMEM;
    } else {
      st = stack_axis(acc[i].parts, acc[i].n, 0, acc[i].parts[0]->dtype, acc[i].parts[0],
                      &out[n_state + i]);
    }
  }
  for (int i = 0; state && i < n_state; i++)
    ait_tensor_free(state[i]);
  free(state);
  free(bout);
  free(bin);
  if (acc) acc_free(acc, n_scan);
  ait_tensor_free(iter_t);
  ait_tensor_free(cond_t);
  return st;
}

/* ---- Scan (opset 9+) ---------------------------------------------------- */

/* Axes and directions of a Scan, from attributes (absent lists mean 0). */
typedef struct scan_attrs {
  const int64_t *in_axes, *in_dirs, *out_axes, *out_dirs;
  int c_axes, c_dirs, c_oaxes, c_odirs;
} scan_attrs;

/* The opset-9 Scan loop over in[0..n_in): states first, then scan inputs. */
static ait_status scan_core(ait_kctx *ctx, const ait_graph *body, int n_scan_in,
                            const scan_attrs *sa, const ait_tensor *const *in, int n_in,
                            ait_tensor **out, int n_out) {
  if (!body || n_scan_in <= 0 || n_scan_in > n_in || body->n_inputs != n_in ||
      body->n_outputs != n_out || n_out < n_in - n_scan_in)
    return ait_err(AIT_E_INVALID_MODEL, "Scan: body and node inputs/outputs do not match");
  int n_state = n_in - n_scan_in, n_scan_out = n_out - n_state;
  const int64_t *in_axes = sa->in_axes, *in_dirs = sa->in_dirs, *out_axes = sa->out_axes,
                *out_dirs = sa->out_dirs;
  int c_axes = sa->c_axes, c_dirs = sa->c_dirs, c_oaxes = sa->c_oaxes, c_odirs = sa->c_odirs;
  int axis_of[64], oaxis_of[64];
  if (n_in > 64 || n_out > 64) return ait_err(AIT_E_UNSUPPORTED, "Scan: too many inputs/outputs");
  int64_t len = -1;
  for (int i = 0; i < n_scan_in; i++) {
    const ait_tensor *t = in[n_state + i];
    if (!t) return ait_err(AIT_E_INVALID_ARG, "Scan: scan input %d is missing", i);
    AIT_TRY(ait_norm_axis(i < c_axes ? in_axes[i] : 0, t->rank, &axis_of[i]));
    int64_t l = t->dims[axis_of[i]];
    if (len >= 0 && l != len)
      return ait_err(AIT_E_SHAPE, "Scan: scan inputs have different lengths (%lld, %lld)",
                     (long long)len, (long long)l);
    len = l;
  }
  ait_tensor **state = calloc((size_t)n_state + 1, sizeof *state);
  ait_tensor **bout = calloc((size_t)n_out + 1, sizeof *bout);
  const ait_tensor **bin = calloc((size_t)n_in + 1, sizeof *bin);
  ait_tensor **slices = calloc((size_t)n_scan_in + 1, sizeof *slices);
  scan_acc *acc = calloc((size_t)n_scan_out + 1, sizeof *acc);
  ait_status st = AIT_OK;
  if (!state || !bout || !bin || !slices || !acc) st = ait_err(AIT_E_NOMEM, "out of memory");
  for (int i = 0; !st && i < n_state; i++)
    if (!(state[i] = ait_tensor_clone(in[i]))) st = AIT_E_NOMEM;
  for (int64_t it = 0; !st && it < len; it++) {
    for (int i = 0; !st && i < n_scan_in; i++) {
      bool rev = i < c_dirs && in_dirs[i] == 1;
      slices[i] = slice_axis(in[n_state + i], axis_of[i], rev ? len - 1 - it : it);
      if (!slices[i]) st = AIT_E_NOMEM;
    }
    for (int i = 0; i < n_state; i++)
      bin[i] = state[i];
    for (int i = 0; i < n_scan_in; i++)
      bin[n_state + i] = slices[i];
    if (!st) st = ait_kctx_run_graph(ctx, body, bin, n_in, bout);
    for (int i = 0; i < n_scan_in; i++) {
      ait_tensor_free(slices[i]);
      slices[i] = NULL;
    }
    if (st) break;
    for (int i = 0; i < n_state; i++) {
      ait_tensor_free(state[i]);
      state[i] = bout[i];
    }
    for (int i = 0; i < n_scan_out; i++)
      if (!st)
        st = acc_push(&acc[i], bout[n_state + i]);
      else
        ait_tensor_free(bout[n_state + i]);
  }
  for (int i = 0; !st && i < n_state; i++) {
    out[i] = state[i];
    state[i] = NULL;
  }
  for (int i = 0; !st && i < n_scan_out; i++) {
    if (acc[i].n == 0) {
      st = ait_err(AIT_E_UNSUPPORTED, "Scan over zero iterations is not supported");
      break;
    }
    const ait_tensor *p0 = acc[i].parts[0];
    if ((st = ait_norm_axis(i < c_oaxes ? out_axes[i] : 0, p0->rank + 1, &oaxis_of[i]))) break;
    if (i < c_odirs && out_dirs[i] == 1) /* reverse: last iteration first */
      for (int64_t a = 0, b = acc[i].n - 1; a < b; a++, b--) {
        ait_tensor *tmp = acc[i].parts[a];
        acc[i].parts[a] = acc[i].parts[b];
        acc[i].parts[b] = tmp;
      }
    st = stack_axis(acc[i].parts, acc[i].n, oaxis_of[i], p0->dtype, p0, &out[n_state + i]);
  }
  for (int i = 0; state && i < n_state; i++)
    ait_tensor_free(state[i]);
  free(state);
  free(bout);
  free(bin);
  free(slices);
  if (acc) acc_free(acc, n_scan_out);
  return st;
}

static ait_status k_scan(ait_kctx *ctx, const ait_node *n, const ait_tensor *const *in, int n_in,
                         ait_tensor **out, int n_out) {
  scan_attrs sa;
  sa.in_axes = ait_attr_ints(n, "scan_input_axes", &sa.c_axes);
  sa.in_dirs = ait_attr_ints(n, "scan_input_directions", &sa.c_dirs);
  sa.out_axes = ait_attr_ints(n, "scan_output_axes", &sa.c_oaxes);
  sa.out_dirs = ait_attr_ints(n, "scan_output_directions", &sa.c_odirs);
  return scan_core(ctx, ait_attr_graph(n, "body"), (int)ait_attr_int(n, "num_scan_inputs", 0), &sa,
                   in, n_in, out, n_out);
}

/* Scan-8: every input carries a leading batch axis and the scan axis is 1.
 * Each batch row runs the opset-9 loop; results are stacked back. */
static ait_status k_scan8(ait_kctx *ctx, const ait_node *n, const ait_tensor *const *in, int n_in,
                          ait_tensor **out, int n_out) {
  if (n_in < 1 || n_in > 64 || n_out > 64)
    return ait_err(AIT_E_INVALID_MODEL, "Scan-8: bad input/output count");
  if (in[0]) return ait_err(AIT_E_UNSUPPORTED, "Scan-8: sequence_lens is not supported");
  scan_attrs sa = {0};
  sa.in_dirs = ait_attr_ints(n, "directions", &sa.c_dirs);
  int n_rest = n_in - 1;
  if (n_rest < 1 || !in[1] || in[1]->rank < 1)
    return ait_err(AIT_E_INVALID_ARG, "Scan-8: inputs need a batch axis");
  int64_t batch = in[1]->dims[0];
  ait_tensor *row_in[64] = {0}, *row_out[64] = {0};
  ait_tensor **parts = calloc((size_t)(batch * n_out + 1), sizeof *parts);
  ait_status st = parts ? AIT_OK : ait_err(AIT_E_NOMEM, "out of memory");
  for (int64_t b = 0; !st && b < batch; b++) {
    for (int i = 0; !st && i < n_rest; i++) {
      const ait_tensor *t = in[1 + i];
      if (!t || t->rank < 1 || t->dims[0] != batch)
        st = ait_err(AIT_E_SHAPE, "Scan-8: input %d lacks the batch axis", i + 1);
      else if (!(row_in[i] = slice_axis(t, 0, b)))
        st = AIT_E_NOMEM;
    }
    for (int k = 0; k < n_out; k++)
      row_out[k] = NULL;
    if (!st)
      st = scan_core(ctx, ait_attr_graph(n, "body"), (int)ait_attr_int(n, "num_scan_inputs", 0),
                     &sa, (const ait_tensor *const *)row_in, n_rest, row_out, n_out);
    for (int i = 0; i < n_rest; i++) {
      ait_tensor_free(row_in[i]);
      row_in[i] = NULL;
    }
    for (int k = 0; k < n_out; k++)
      parts[k * batch + b] = row_out[k];
  }
  for (int k = 0; !st && k < n_out; k++)
    st =
        stack_axis(&parts[k * batch], batch, 0, parts[k * batch]->dtype, parts[k * batch], &out[k]);
  for (int64_t i = 0; parts && i < batch * n_out; i++)
    ait_tensor_free(parts[i]);
  free(parts);
  return st;
}

const ait_op_def ait_ops_control[] = {
    {"", "Constant", 1, 0, s_constant, k_constant},
    {"", "If", 1, AIT_DT_BIT(AIT_BOOL), NULL, k_if},
    {"", "Loop", 1, 0, NULL, k_loop},
    {"", "Scan", 8, 0, NULL, k_scan8},
    {"", "Scan", 9, 0, NULL, k_scan},
};
const int ait_ops_control_n = (int)(sizeof ait_ops_control / sizeof ait_ops_control[0]);
