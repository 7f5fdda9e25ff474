/* Inputs of every command that runs a model: input_K.pb or input_K.npy files
 * of a folder, or seeded random values of the declared shapes; axes sized
 * by --dim NAME=V and --shape NAME=MIN:OPT:MAX, where NAME is a symbolic dim
 * of the model (`seq`) or INPUT:AXIS (`input_ids:1`). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "core/error.h"
#include "core/fileio.h"
#include "ir/graph.h"
#include "onnx/onnx_io.h"
#include "tune/tune.h"

/* A whole non-negative integer within [lo, hi]; false otherwise. */
static bool whole(const char *s, const char *end, long long lo, long long hi, int64_t *out) {
  if (s == end) return false;
  long long v = 0;
  for (const char *p = s; p < end; p++) {
    if (*p < '0' || *p > '9' || v > (hi - (*p - '0')) / 10) return false;
    v = v * 10 + (*p - '0');
  }
  if (v < lo) return false;
  *out = v;
  return true;
}

int cli_parse_dim(const char *use, const char *flag, const char *text, bool range, cli_inputs *ci) {
  const char *eq = strrchr(text, '=');
  const char *form = range ? "NAME=MIN:OPT:MAX (or NAME=MIN:MAX)" : "NAME=VALUE";
  if (!eq || eq == text || (size_t)(eq - text) >= sizeof ci->dims[0].name)
    return cli_usage(use, "%s expects %s, got '%s'", flag, form, text);
  if (ci->n_dims == CLI_MAX_DIMS)
    return cli_usage(use, "%s: at most %d --dim and --shape options", flag, CLI_MAX_DIMS);
  cli_dim *d = &ci->dims[ci->n_dims];
  memset(d, 0, sizeof *d);
  memcpy(d->name, text, (size_t)(eq - text));
  for (int k = 0; k < ci->n_dims; k++)
    if (!strcmp(ci->dims[k].name, d->name))
      return cli_usage(use, "%s %s: '%s' is sized twice", flag, text, d->name);
  int64_t v[3];
  int n = 0;
  const char *p = eq + 1;
  for (;;) {
    const char *c = strchr(p, ':');
    const char *end = c ? c : p + strlen(p);
    if (n == 3 || !whole(p, end, range ? 1 : 0, 1LL << 40, &v[n]))
      return cli_usage(use, "%s expects %s with integers >= %d, got '%s'", flag, form,
                       range ? 1 : 0, text);
    n++;
    if (!c) break;
    p = c + 1;
  }
  if (!range && n != 1) return cli_usage(use, "%s expects %s, got '%s'", flag, form, text);
  if (range && n == 1) v[1] = v[2] = v[0];
  if (range && n == 2) v[2] = v[1], v[1] = v[0]; /* MIN:MAX: the first sample at MIN */
  d->min = v[0], d->opt = range ? v[1] : v[0], d->max = range ? v[2] : v[0];
  if (!(d->min <= d->opt && d->opt <= d->max))
    return cli_usage(use, "%s %s: wants MIN <= OPT <= MAX", flag, text);
  ci->n_dims++;
  return 0;
}

int cli_parse_int_range(const char *use, const char *text, cli_inputs *ci) {
  const char *eq = strrchr(text, '='), *r = eq ? eq + 1 : text, *colon = strchr(r, ':');
  if (ci->n_ints == CLI_MAX_DIMS) return cli_usage(use, "--int-range: at most %d", CLI_MAX_DIMS);
  cli_int_range *ir = &ci->ints[ci->n_ints];
  memset(ir, 0, sizeof *ir);
  if (eq && (eq == text || (size_t)(eq - text) >= sizeof ir->input))
    return cli_usage(use, "--int-range expects [INPUT=]LO:HI, got '%s'", text);
  if (eq) memcpy(ir->input, text, (size_t)(eq - text));
  char *end;
  errno = 0;
  ir->lo = colon ? strtoll(r, &end, 10) : 0;
  bool ok = colon && end == colon && !errno;
  ir->hi = ok ? strtoll(colon + 1, &end, 10) : 0;
  if (!ok || end == colon + 1 || *end || errno || ir->lo > ir->hi)
    return cli_usage(use, "--int-range expects [INPUT=]LO:HI with LO <= HI, got '%s'", text);
  ci->n_ints++;
  return 0;
}

/* Does d name axis `axis` of input `input` directly: its symbolic name, or
 * INPUT:AXIS? */
static bool names_directly(const ait_graph *g, int input, int axis, const cli_dim *d) {
  const ait_value *v = &g->values[g->inputs[input]];
  if (axis < v->rank && v->dims[axis].sym && !strcmp(v->dims[axis].sym, d->name)) return true;
  const char *colon = strrchr(d->name, ':');
  size_t n = strlen(v->name);
  int64_t k;
  return colon && (size_t)(colon - d->name) == n && !strncmp(d->name, v->name, n) &&
         whole(colon + 1, colon + strlen(colon), 0, AIT_MAX_RANK - 1, &k) && k == axis;
}

/* Does d size axis `axis` of input `input`? Directly, or because d names
 * (as INPUT:AXIS) an axis of the same symbolic dim: the axes of one symbol
 * move together (the ids and the mask of a sequence). */
static bool names_axis(const ait_graph *g, int input, int axis, const cli_dim *d) {
  if (names_directly(g, input, axis, d)) return true;
  const char *sym = g->values[g->inputs[input]].dims[axis].sym;
  for (int i = 0; sym && i < g->n_inputs; i++) {
    const ait_value *v = &g->values[g->inputs[i]];
    for (int a = 0; a < v->rank; a++)
      if (v->dims[a].sym && !strcmp(v->dims[a].sym, sym) && names_directly(g, i, a, d)) return true;
  }
  return false;
}

ait_status cli_check_dims(const ait_graph *g, const cli_inputs *ci) {
  for (int k = 0; k < ci->n_dims; k++) {
    const cli_dim *d = &ci->dims[k];
    int hits = 0;
    for (int i = 0; i < g->n_inputs; i++) {
      const ait_value *v = &g->values[g->inputs[i]];
      for (int a = 0; a < v->rank; a++) {
        if (!names_axis(g, i, a, d)) continue;
        hits++;
        for (int j = 0; j < k; j++)
          if (names_axis(g, i, a, &ci->dims[j]))
            return ait_err(AIT_E_INVALID_ARG, "'%s' and '%s' both size axis %d of input '%s'",
                           ci->dims[j].name, d->name, a, v->name);
        if (v->dims[a].v >= 0 && (d->min != v->dims[a].v || d->max != v->dims[a].v))
          return ait_err(AIT_E_INVALID_ARG,
                         "%s: axis %d of input '%s' is declared as %lld; it cannot be sized",
                         d->name, a, v->name, (long long)v->dims[a].v);
      }
    }
    if (!hits) {
      char list[512] = "";
      size_t at = 0;
      for (int i = 0; i < g->n_inputs; i++) {
        const ait_value *v = &g->values[g->inputs[i]];
        for (int a = 0; a < v->rank && at < sizeof list; a++)
          if (v->dims[a].v < 0)
            at += (size_t)snprintf(list + at, sizeof list - at, "%s%s (%s:%d)", at ? ", " : "",
                                   v->dims[a].sym ? v->dims[a].sym : "?", v->name, a);
      }
      return ait_err(AIT_E_INVALID_ARG,
                     "'%s' names no axis of the model's inputs; its dynamic "
                     "axes are: %s",
                     d->name, at ? list : "none");
    }
  }
  return AIT_OK;
}

/* Size of input i, axis a at point `at` under the dims; -1 when none names it. */
static int64_t dim_at(const ait_graph *g, int i, int a, const cli_inputs *ci, cli_point at) {
  for (int k = 0; k < ci->n_dims; k++)
    if (names_axis(g, i, a, &ci->dims[k]))
      return at == CLI_AT_MIN   ? ci->dims[k].min
             : at == CLI_AT_MAX ? ci->dims[k].max
                                : ci->dims[k].opt;
  return -1;
}

/* splitmix64: small, seedable, the same sequence everywhere */
static unsigned long long next_u64(unsigned long long *s) {
  unsigned long long z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* Random values for input `name`: floats in [-1, 1), bools 0/1, integers in
 * the --int-range for this input (else the one without a name, else
 * [0, 1]: integer inputs are mostly ids, masks and indices, and small
 * non-negative values are valid for all of them). */
static void fill_random(ait_tensor *t, const char *name, const cli_inputs *ci,
                        unsigned long long *seed) {
  const ait_dtype_traits *tr = ait_dtype_traits_of(t->dtype);
  long long lo = 0, hi = 1;
  for (int k = 0; k < ci->n_ints; k++)
    if (!ci->ints[k].input[0] || !strcmp(ci->ints[k].input, name)) {
      lo = ci->ints[k].lo, hi = ci->ints[k].hi;
      if (ci->ints[k].input[0]) break; /* a named range beats the general one */
    }
  unsigned long long span = (unsigned long long)hi - (unsigned long long)lo + 1;
  for (int64_t i = 0, n = ait_tensor_numel(t); i < n; i++) {
    unsigned long long r = next_u64(seed);
    if (tr->is_float)
      ait_store_f64(tr, t->data, i, (double)(r >> 11) / 9007199254740992.0 * 2 - 1);
    else if (t->dtype == AIT_BOOL)
      ait_store_i64(tr, t->data, i, (int64_t)(r & 1));
    else
      ait_store_i64(tr, t->data, i, lo + (int64_t)(span ? r % span : r));
  }
}

static ait_status random_input(const ait_graph *g, int i, const cli_inputs *ci, cli_point at,
                               unsigned long long *seed, ait_tensor **out) {
  const ait_value *v = &g->values[g->inputs[i]];
  if (v->type != AIT_VT_TENSOR || v->rank < 0 || v->dtype == AIT_STRING ||
      !ait_dtype_traits_of(v->dtype))
    return ait_err(AIT_E_UNSUPPORTED,
                   "cannot make random values for input '%s' (%s%s); pass --inputs", v->name,
                   ait_dtype_name(v->dtype), v->rank < 0 ? ", no declared shape" : "");
  int64_t dims[AIT_MAX_RANK];
  for (int a = 0; a < v->rank; a++) {
    int64_t s = dim_at(g, i, a, ci, at);
    dims[a] = s >= 0 ? s : v->dims[a].v >= 0 ? v->dims[a].v : 1;
  }
  ait_tensor *t = ait_tensor_new(v->dtype, v->rank, dims);
  if (!t) return ait_err(AIT_E_NOMEM, "out of memory for input '%s'", v->name);
  fill_random(t, v->name, ci, seed);
  *out = t;
  return AIT_OK;
}

static bool is_file(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0;
}

ait_status cli_read_input(const char *dir, int k, const ait_value *decl, ait_tensor **out) {
  char pb[64], npy[64];
  snprintf(pb, sizeof pb, "input_%d.pb", k);
  snprintf(npy, sizeof npy, "input_%d.npy", k);
  char *p = ait_path_join(dir, pb), *q = ait_path_join(dir, npy);
  ait_status st = p && q ? AIT_OK : ait_err(AIT_E_NOMEM, "out of memory");
  bool has_pb = !st && is_file(p), has_npy = !st && is_file(q);
  if (!st && has_pb && has_npy)
    st = ait_err(AIT_E_INVALID_ARG, "%s holds both %s and %s: keep one", dir, pb, npy);
  else if (!st && has_npy)
    st = decl->type == AIT_VT_TENSOR
             ? cli_npy_read(q, out)
             : ait_err(AIT_E_UNSUPPORTED, "%s: '%s' is not a tensor", q, decl->name);
  else if (!st && has_pb)
    st = cli_read_tensor_for(p, decl, out);
  else if (!st)
    st = ait_err(AIT_E_IO, "%s: no %s or %s for input '%s'", dir, pb, npy, decl->name);
  if (!st && has_npy && (*out)->dtype != decl->dtype && decl->dtype != AIT_UNDEFINED) {
    st = ait_err(AIT_E_DTYPE, "%s: input '%s' expected dtype %s, got %s", q, decl->name,
                 ait_dtype_name(decl->dtype), ait_dtype_name((*out)->dtype));
    ait_tensor_free(*out);
    *out = NULL;
  }
  free(p);
  free(q);
  return st;
}

ait_status cli_build_sample(const ait_graph *g, const char *dir, const cli_inputs *ci, cli_point at,
                            ait_sample *out) {
  AIT_TRY(cli_check_dims(g, ci));
  out->n_inputs = g->n_inputs;
  out->inputs = calloc((size_t)g->n_inputs + 1, sizeof *out->inputs);
  if (!out->inputs) return ait_err(AIT_E_NOMEM, "out of memory");
  unsigned long long seed = ci->seed ? ci->seed : 1;
  ait_status st = AIT_OK;
  for (int i = 0; i < g->n_inputs && !st; i++) {
    const ait_value *v = &g->values[g->inputs[i]];
    if (!dir) {
      st = random_input(g, i, ci, at, &seed, &out->inputs[i]);
      continue;
    }
    st = cli_read_input(dir, i, v, &out->inputs[i]);
    /* a file's axes resized as --dim/--shape say: rows repeat or are cut */
    for (int a = 0; !st && a < out->inputs[i]->rank && out->inputs[i]->kind == AIT_KIND_TENSOR;
         a++) {
      int64_t s = dim_at(g, i, a, ci, at);
      if (s < 0 || s == out->inputs[i]->dims[a]) continue;
      ait_tensor *r = ait_tensor_resized(out->inputs[i], a, s);
      if (!r) {
        st = ait_err(AIT_E_NOMEM, "out of memory");
        break;
      }
      ait_tensor_free(out->inputs[i]);
      out->inputs[i] = r;
    }
  }
  if (st) ait_sample_free(out);
  return st;
}

ait_status cli_make_sample(const ait_graph *g, const char *in_dir, const cli_inputs *ci,
                           ait_sample *base, ait_graph_spec *spec) {
  AIT_TRY(cli_build_sample(g, in_dir, ci, CLI_AT_OPT, base));
  ait_spec_detect(g, base, 1, spec);
  return AIT_OK;
}
