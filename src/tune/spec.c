/* Samples and the graph spec: which input axes are dynamic, their ranges,
 * and resizing a sample along them (for batch-size profiling and the
 * min/max validation runs). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tune/tune.h"

void ait_sample_free(ait_sample *s) {
  for (int i = 0; s->inputs && i < s->n_inputs; i++)
    ait_tensor_free(s->inputs[i]);
  free(s->inputs);
  s->inputs = NULL;
  s->n_inputs = 0;
}

ait_status ait_sample_clone(const ait_sample *s, ait_sample *out) {
  out->n_inputs = s->n_inputs;
  out->inputs = calloc((size_t)s->n_inputs + 1, sizeof *out->inputs);
  if (!out->inputs) return ait_err(AIT_E_NOMEM, "out of memory");
  for (int i = 0; i < s->n_inputs; i++)
    if (!(out->inputs[i] = ait_tensor_clone(s->inputs[i]))) {
      ait_sample_free(out);
      return AIT_E_NOMEM;
    }
  return AIT_OK;
}

static unsigned long long mix(unsigned long long *s) {
  unsigned long long z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

ait_status ait_sample_random(const ait_graph *g, unsigned long long seed, ait_sample *out) {
  out->n_inputs = g->n_inputs;
  out->inputs = calloc((size_t)g->n_inputs + 1, sizeof *out->inputs);
  if (!out->inputs) return ait_err(AIT_E_NOMEM, "out of memory");
  for (int i = 0; i < g->n_inputs; i++) {
    const ait_value *v = &g->values[g->inputs[i]];
    const ait_dtype_traits *tr = ait_dtype_traits_of(v->dtype);
    if (v->rank < 0 || !tr || v->type != AIT_VT_TENSOR) {
      ait_sample_free(out);
      return ait_err(AIT_E_UNSUPPORTED,
                     "cannot generate a sample for input '%s' (%s, rank %d): give samples", v->name,
                     ait_dtype_name(v->dtype), v->rank);
    }
    int64_t dims[AIT_MAX_RANK];
    for (int k = 0; k < v->rank; k++)
      dims[k] = v->dims[k].v >= 0 ? v->dims[k].v : 1;
    ait_tensor *t = ait_tensor_new(v->dtype, v->rank, dims);
    if (!t) {
      ait_sample_free(out);
      return AIT_E_NOMEM;
    }
    /* integers stay small and non-negative: they are usually indices or ids */
    for (int64_t e = 0; e < ait_tensor_numel(t); e++) {
      unsigned long long r = mix(&seed);
      if (tr->is_float)
        ait_store_f64(tr, t->data, e, (double)(r >> 11) / 9007199254740992.0 * 2 - 1);
      else
        ait_store_i64(tr, t->data, e, v->dtype == AIT_BOOL ? (int64_t)(r & 1) : (int64_t)(r % 2));
    }
    out->inputs[i] = t;
  }
  return AIT_OK;
}

void ait_spec_detect(const ait_graph *g, const ait_sample *samples, int n, ait_graph_spec *spec) {
  memset(spec, 0, sizeof *spec);
  int batched = 0, with_rank = 0;
  for (int i = 0; i < g->n_inputs; i++) {
    const ait_value *v = &g->values[g->inputs[i]];
    if (v->rank < 1) continue;
    with_rank++;
    for (int k = 0; k < v->rank; k++) {
      bool declared_dynamic = v->dims[k].v < 0;
      int64_t mn = INT64_MAX, mx = 0;
      for (int s = 0; s < n; s++) {
        const ait_tensor *t = samples[s].inputs[i];
        if (t->rank != v->rank) continue;
        mn = t->dims[k] < mn ? t->dims[k] : mn;
        mx = t->dims[k] > mx ? t->dims[k] : mx;
      }
      if (!declared_dynamic && mn == mx) continue;
      if (spec->n_axes == AIT_MAX_AXES) return;
      ait_axis *a = &spec->axes[spec->n_axes++];
      a->input = i;
      a->axis = k;
      snprintf(a->sym, sizeof a->sym, "%s", v->dims[k].sym ? v->dims[k].sym : "");
      a->min = n ? mn : 1;
      a->max = n ? mx : 1;
      a->opt = n ? samples[0].inputs[i]->dims[k] : 1;
      if (k == 0) {
        a->is_batch = true;
        batched++;
      }
    }
  }
  /* a batch axis: axis 0 dynamic in every input that has a rank; when the
   * inputs disagree, axis 0 is just another dynamic axis */
  spec->has_batch = batched > 0 && batched == with_rank;
  if (!spec->has_batch)
    for (int a = 0; a < spec->n_axes; a++)
      spec->axes[a].is_batch = false;
}

/* axis 0 is the batch when it is dynamic in every input that has a rank */
static void mark_batch(const ait_graph *g, ait_graph_spec *spec) {
  int with_rank = 0, batched = 0;
  for (int i = 0; i < g->n_inputs; i++)
    with_rank += g->values[g->inputs[i]].rank >= 1;
  for (int a = 0; a < spec->n_axes; a++)
    batched += spec->axes[a].axis == 0;
  spec->has_batch = batched > 0 && batched == with_rank;
  for (int a = 0; a < spec->n_axes; a++)
    spec->axes[a].is_batch = spec->has_batch && spec->axes[a].axis == 0;
}

ait_status ait_spec_apply_ranges(const ait_graph *g, const ait_sample *samples, int n_samples,
                                 const ait_axis *ranges, int n_ranges, ait_graph_spec *spec) {
  for (int r = 0; r < n_ranges; r++) {
    const ait_axis *q = &ranges[r];
    const char *name = g->values[g->inputs[q->input]].name;
    for (int s = 0; s < n_samples; s++) {
      const ait_tensor *t = samples[s].inputs[q->input];
      int64_t v = q->axis < t->rank ? t->dims[q->axis] : -1;
      if (v < q->min || v > q->max)
        return ait_err(AIT_E_SHAPE,
                       "sample %d: input '%s' axis %d is %lld, outside the range [%lld, %lld] "
                       "given for it",
                       s, name, q->axis, (long long)v, (long long)q->min, (long long)q->max);
    }
    int a = 0;
    while (a < spec->n_axes && !(spec->axes[a].input == q->input && spec->axes[a].axis == q->axis))
      a++;
    if (a == AIT_MAX_AXES)
      return ait_err(AIT_E_UNSUPPORTED, "at most %d dynamic axes", AIT_MAX_AXES);
    spec->axes[a] = *q;
    if (a == spec->n_axes) spec->n_axes++;
  }
  if (n_ranges) mark_batch(g, spec);
  return AIT_OK;
}

int64_t ait_sample_batch(const ait_sample *s, const ait_graph_spec *spec) {
  for (int a = 0; a < spec->n_axes; a++)
    if (spec->axes[a].is_batch) return s->inputs[spec->axes[a].input]->dims[0];
  return 1;
}

ait_tensor *ait_tensor_resized(const ait_tensor *t, int axis, int64_t size) {
  int64_t dims[AIT_MAX_RANK];
  memcpy(dims, t->dims, sizeof dims);
  int64_t old = dims[axis];
  dims[axis] = size;
  ait_tensor *r = ait_tensor_new(t->dtype, t->rank, dims);
  if (!r || old == 0) return r;
  size_t es = ait_elem_size(t->dtype);
  int64_t outer = ait_shape_numel(axis, t->dims),
          inner = ait_shape_numel(t->rank - axis - 1, t->dims + axis + 1);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t j = 0; j < size; j++) {
      const char *src = (const char *)t->data + ((o * old + j % old) * inner) * (int64_t)es;
      char *dst = (char *)r->data + ((o * size + j) * inner) * (int64_t)es;
      if (t->dtype == AIT_STRING)
        for (int64_t e = 0; e < inner; e++)
          ((char **)dst)[e] = strdup(((char *const *)src)[e]);
      else
        memcpy(dst, src, (size_t)inner * es);
    }
  return r;
}

ait_status ait_sample_resize(const ait_sample *s, const ait_graph_spec *spec, int which_axis,
                             int64_t size, ait_sample *out) {
  AIT_TRY(ait_sample_clone(s, out));
  for (int a = 0; a < spec->n_axes; a++) {
    const ait_axis *ax = &spec->axes[a];
    bool hit = which_axis < 0 ? ax->is_batch : a == which_axis;
    /* the same symbol on another input moves together (seq of ids and mask) */
    if (!hit && which_axis >= 0 && ax->sym[0] && !strcmp(ax->sym, spec->axes[which_axis].sym))
      hit = true;
    if (!hit) continue;
    ait_tensor *t = out->inputs[ax->input];
    if (ax->axis >= t->rank || t->dims[ax->axis] == size) continue;
    ait_tensor *r = ait_tensor_resized(t, ax->axis, size);
    if (!r) {
      ait_sample_free(out);
      return AIT_E_NOMEM;
    }
    ait_tensor_free(t);
    out->inputs[ax->input] = r;
  }
  return AIT_OK;
}

/* Built with cJSON: a symbolic name is the model's text and may hold quotes. */
char *ait_spec_json(const ait_graph_spec *spec) {
  cJSON *j = cJSON_CreateObject();
  cJSON *axes = j && cJSON_AddBoolToObject(j, "has_batch", spec->has_batch)
                    ? cJSON_AddArrayToObject(j, "axes")
                    : NULL;
  bool ok = axes != NULL;
  for (int a = 0; ok && a < spec->n_axes; a++) {
    const ait_axis *x = &spec->axes[a];
    cJSON *o = cJSON_CreateObject();
    ok = o && cJSON_AddItemToArray(axes, o) && cJSON_AddNumberToObject(o, "input", x->input) &&
         cJSON_AddNumberToObject(o, "axis", x->axis) &&
         cJSON_AddStringToObject(o, "name", x->sym) &&
         cJSON_AddNumberToObject(o, "min", (double)x->min) &&
         cJSON_AddNumberToObject(o, "opt", (double)x->opt) &&
         cJSON_AddNumberToObject(o, "max", (double)x->max) &&
         cJSON_AddBoolToObject(o, "batch", x->is_batch);
  }
  char *s = ok ? cJSON_PrintUnformatted(j) : NULL;
  cJSON_Delete(j);
  return s;
}
