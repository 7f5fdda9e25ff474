/* Einsum: general equations (implicit or explicit output, repeated labels
 * within an operand as diagonals, "..." broadcasting). Operands are converted
 * to double (floats) or int64 (integers, wrapping arithmetic) and every output
 * element is a sum over all contracted label combinations: simple and exact,
 * not fast. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "ops/nn_impl.h"

enum { EIN_MAX_OPS = 16, EIN_LETTERS = 52, EIN_LABELS = EIN_LETTERS + AIT_MAX_RANK };

typedef struct ein {
  int n_ops, E; /* operands, ellipsis dims (broadcast) */
  int rank[EIN_MAX_OPS];
  int lab[EIN_MAX_OPS][AIT_MAX_RANK]; /* label of each axis */
  int n_out, out[EIN_LABELS];         /* output labels in order */
} ein;

static int letter_id(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return 26 + c - 'a';
  return -1;
}

/* One term (without spaces) into labels; *ell = position of "..." or -1. */
static ait_status parse_term(const char *s, size_t len, int *ids, int *n, int *ell) {
  *n = 0, *ell = -1;
  for (size_t i = 0; i < len;) {
    if (s[i] == '.') {
      if (len - i < 3 || s[i + 1] != '.' || s[i + 2] != '.' || *ell >= 0)
        return ait_err(AIT_E_INVALID_ARG, "Einsum: bad ellipsis in '%.*s'", (int)len, s);
      *ell = *n;
      i += 3;
      continue;
    }
    int id = letter_id(s[i]);
    if (id < 0) return ait_err(AIT_E_INVALID_ARG, "Einsum: bad label '%c'", s[i]);
    if (*n >= EIN_LABELS) return ait_err(AIT_E_INVALID_ARG, "Einsum: term too long");
    ids[(*n)++] = id;
    i++;
  }
  return AIT_OK;
}

static ait_status ein_parse(const char *equation, int n_ops, const int *ranks, ein *e) {
  char eq[512];
  size_t n = 0;
  for (const char *p = equation; *p; p++)
    if (!isspace((unsigned char)*p)) {
      if (n + 1 >= sizeof eq) return ait_err(AIT_E_INVALID_ARG, "Einsum equation too long");
      eq[n++] = *p;
    }
  eq[n] = 0;
  if (n_ops < 1 || n_ops > EIN_MAX_OPS)
    return ait_err(AIT_E_UNSUPPORTED, "Einsum with %d operands", n_ops);
  memset(e, 0, sizeof *e);
  e->n_ops = n_ops;
  char *arrow = strstr(eq, "->");
  size_t lhs_len = arrow ? (size_t)(arrow - eq) : n;
  int count[EIN_LABELS] = {0}, ells[EIN_MAX_OPS];
  const char *t = eq;
  for (int k = 0; k < n_ops; k++) {
    const char *end = memchr(t, ',', (size_t)(eq + lhs_len - t));
    if (!end) end = eq + lhs_len;
    if (k < n_ops - 1 && end == eq + lhs_len)
      return ait_err(AIT_E_INVALID_ARG, "Einsum equation '%s' has fewer terms than %d inputs",
                     equation, n_ops);
    int ids[EIN_LABELS], nl, ell;
    AIT_TRY(parse_term(t, (size_t)(end - t), ids, &nl, &ell));
    int ed = ranks[k] - nl;
    if (ed < 0 || (ell < 0 && ed != 0))
      return ait_err(AIT_E_SHAPE, "Einsum term %d has %d labels for an input of rank %d", k, nl,
                     ranks[k]);
    ells[k] = ed;
    e->rank[k] = ranks[k];
    if (ed > e->E) e->E = ed;
    /* axis labels; ellipsis labels are placeholders fixed below */
    int ax = 0;
    for (int i = 0; i < nl; i++) {
      if (i == ell)
        for (int j = 0; j < ed; j++)
          e->lab[k][ax++] = -1 - j;
      e->lab[k][ax++] = ids[i];
      count[ids[i]]++;
    }
    if (ell == nl)
      for (int j = 0; j < ed; j++)
        e->lab[k][ax++] = -1 - j;
    t = end + 1;
  }
  if (t <= eq + lhs_len)
    return ait_err(AIT_E_INVALID_ARG, "Einsum equation '%s' has more terms than %d inputs",
                   equation, n_ops);
  /* ellipsis dims align to the right: operand dim j of ed is label 52+E-ed+j */
  for (int k = 0; k < n_ops; k++)
    for (int a = 0; a < e->rank[k]; a++)
      if (e->lab[k][a] < 0) e->lab[k][a] = EIN_LETTERS + e->E - ells[k] + (-1 - e->lab[k][a]);
  if (arrow) {
    int ids[EIN_LABELS], nl, ell;
    AIT_TRY(parse_term(arrow + 2, strlen(arrow + 2), ids, &nl, &ell));
    bool seen[EIN_LABELS] = {false};
    for (int i = 0; i <= nl; i++) {
      if (i == ell)
        for (int j = 0; j < e->E; j++)
          e->out[e->n_out++] = EIN_LETTERS + j;
      if (i == nl) break;
      if (!count[ids[i]] || seen[ids[i]])
        return ait_err(AIT_E_INVALID_ARG, "Einsum output label '%c' is %s", arrow[2 + i],
                       seen[ids[i]] ? "repeated" : "not in any input");
      seen[ids[i]] = true;
      e->out[e->n_out++] = ids[i];
    }
  } else {
    for (int j = 0; j < e->E; j++)
      e->out[e->n_out++] = EIN_LETTERS + j;
    for (int l = 0; l < EIN_LETTERS; l++)
      if (count[l] == 1) e->out[e->n_out++] = l;
  }
  if (e->n_out > AIT_MAX_RANK) return ait_err(AIT_E_UNSUPPORTED, "Einsum output rank %d", e->n_out);
  return AIT_OK;
}

/* Sizes of every label from the operand dims (-1 = not used / unknown). */
static ait_status ein_sizes(const ein *e, const int64_t *const *dims, int64_t *size) {
  for (int l = 0; l < EIN_LABELS; l++)
    size[l] = -1;
  for (int k = 0; k < e->n_ops; k++)
    for (int a = 0; a < e->rank[k]; a++) {
      int l = e->lab[k][a];
      int64_t d = dims[k][a];
      if (d < 0) continue;
      if (size[l] < 0 || (l >= EIN_LETTERS && size[l] == 1))
        size[l] = d;
      else if (d != size[l] && !(l >= EIN_LETTERS && d == 1))
        return ait_err(AIT_E_SHAPE, "Einsum: dimension mismatch (%lld vs %lld) for a label",
                       (long long)d, (long long)size[l]);
    }
  return AIT_OK;
}

NN_KERNEL(nn_einsum_kernel) {
  NN_NEED_IN0;
  const char *eq = ait_attr_str(node, "equation", NULL);
  if (!eq) return ait_err(AIT_E_INVALID_ARG, "Einsum needs the equation attribute");
  ein e;
  int ranks[EIN_MAX_OPS];
  const int64_t *dims[EIN_MAX_OPS];
  for (int k = 0; k < n_in && k < EIN_MAX_OPS; k++) {
    if (!in[k]) return ait_err(AIT_E_INVALID_ARG, "Einsum input %d is missing", k);
    if (in[k]->dtype != in[0]->dtype) return nn_check_same_dtype(in[0], in[k], "an operand");
    ranks[k] = in[k]->rank, dims[k] = in[k]->dims;
  }
  ait_dtype dt = in[0]->dtype;
  if (!(AIT_DT_NUMERIC & AIT_DT_BIT(dt)))
    return ait_err(AIT_E_DTYPE, "Einsum does not take %s", ait_dtype_name(dt));
  AIT_TRY(ein_parse(eq, n_in, ranks, &e));
  int64_t size[EIN_LABELS], odims[AIT_MAX_RANK], st[EIN_MAX_OPS][EIN_LABELS];
  AIT_TRY(ein_sizes(&e, dims, size));
  for (int i = 0; i < e.n_out; i++)
    odims[i] = size[e.out[i]];
  AIT_TRY(nn_new(&out[0], dt, e.n_out, odims));
  /* per-operand stride of each label (repeated labels add up: diagonals) */
  int red[EIN_LABELS], nr = 0;
  bool is_out[EIN_LABELS] = {false};
  for (int i = 0; i < e.n_out; i++)
    is_out[e.out[i]] = true;
  for (int l = 0; l < EIN_LABELS; l++)
    if (size[l] >= 0 && !is_out[l]) red[nr++] = l;
  int64_t red_n = 1;
  for (int i = 0; i < nr; i++)
    red_n *= size[red[i]];
  memset(st, 0, sizeof st);
  for (int k = 0; k < n_in; k++) {
    int64_t s[AIT_MAX_RANK];
    ait_shape_strides(in[k]->rank, in[k]->dims, s);
    for (int a = 0; a < in[k]->rank; a++)
      if (in[k]->dims[a] != 1 || size[e.lab[k][a]] == 1) st[k][e.lab[k][a]] += s[a];
  }
  if (n_in == 2 && (dt == AIT_FLOAT32 || dt == AIT_FLOAT16 || dt == AIT_BFLOAT16)) {
    bool done = false;
    AIT_TRY(nn_einsum_gemm(in[0], in[1], e.lab[0], e.lab[1], e.out, e.n_out, size, EIN_LABELS,
                           out[0], &done));
    if (done) return AIT_OK;
  }
  bool fl = (AIT_DT_FLOATS & AIT_DT_BIT(dt)) != 0;
  void *v[EIN_MAX_OPS] = {NULL};
  ait_status status = AIT_OK;
  int64_t n_outel = ait_tensor_numel(out[0]);
  void *y = malloc((size_t)(n_outel + 1) * 8);
  for (int k = 0; k < n_in; k++) {
    if (fl) {
      v[k] = nn_load_f64(in[k]);
    } else if ((v[k] = malloc((size_t)(ait_tensor_numel(in[k]) + 1) * 8))) {
      const ait_dtype_traits *tr = ait_dtype_traits_of(dt);
      for (int64_t i = 0; i < ait_tensor_numel(in[k]); i++)
        ((int64_t *)v[k])[i] = ait_load_i64(tr, in[k]->data, i);
    }
    if (!v[k]) status = AIT_E_NOMEM;
  }
  if (!y || status) {
    status = ait_err(AIT_E_NOMEM, "out of memory in Einsum");
    goto done;
  }
  int64_t oc[AIT_MAX_RANK] = {0}, base[EIN_MAX_OPS] = {0};
  for (int64_t q = 0; q < n_outel; q++) {
    double acc = 0;
    uint64_t iacc = 0;
    int64_t rc[EIN_LABELS] = {0}, off[EIN_MAX_OPS];
    memcpy(off, base, sizeof off);
    for (int64_t r = 0; r < red_n; r++) {
      if (fl) {
        double p = 1;
        for (int k = 0; k < n_in; k++)
          p *= ((const double *)v[k])[off[k]];
        acc += p;
      } else {
        uint64_t p = 1;
        for (int k = 0; k < n_in; k++)
          p *= (uint64_t)((const int64_t *)v[k])[off[k]];
        iacc += p;
      }
      for (int i = nr - 1; i >= 0; i--) { /* next contracted combination */
        int l = red[i];
        for (int k = 0; k < n_in; k++)
          off[k] += st[k][l];
        if (++rc[i] < size[l]) break;
        for (int k = 0; k < n_in; k++)
          off[k] -= st[k][l] * size[l];
        rc[i] = 0;
      }
    }
    if (fl)
      ((double *)y)[q] = acc;
    else
      ((int64_t *)y)[q] = (int64_t)iacc;
    for (int i = e.n_out - 1; i >= 0; i--) { /* next output element */
      int l = e.out[i];
      for (int k = 0; k < n_in; k++)
        base[k] += st[k][l];
      if (++oc[i] < size[l]) break;
      for (int k = 0; k < n_in; k++)
        base[k] -= st[k][l] * size[l];
      oc[i] = 0;
    }
  }
  if (fl) {
    nn_store_f64(out[0], y);
  } else {
    const ait_dtype_traits *tr = ait_dtype_traits_of(dt);
    for (int64_t i = 0; i < n_outel; i++)
      ait_store_i64(tr, out[0]->data, i, ((int64_t *)y)[i]);
  }
done:
  for (int k = 0; k < n_in; k++)
    free(v[k]);
  free(y);
  return status;
}

ait_status nn_einsum_shape(ait_graph *g, const ait_node *n) {
  const char *eq = ait_attr_str(n, "equation", NULL);
  if (!eq || n->n_in > EIN_MAX_OPS) return AIT_OK;
  int ranks[EIN_MAX_OPS];
  int64_t d[EIN_MAX_OPS][AIT_MAX_RANK];
  const int64_t *dims[EIN_MAX_OPS];
  const ait_value *v0 = ait_node_in(g, n, 0);
  if (!v0) return AIT_OK;
  for (int k = 0; k < n->n_in; k++) {
    const ait_value *v = ait_node_in(g, n, k);
    if (!v || v->rank < 0) {
      ait_set_out(g, n, 0, v0->dtype, -1, NULL);
      return AIT_OK;
    }
    ranks[k] = v->rank;
    for (int a = 0; a < v->rank; a++)
      d[k][a] = v->dims[a].v;
    dims[k] = d[k];
  }
  ein e;
  AIT_TRY(ein_parse(eq, n->n_in, ranks, &e));
  int64_t size[EIN_LABELS];
  AIT_TRY(ein_sizes(&e, dims, size));
  ait_dim od[AIT_MAX_RANK];
  for (int i = 0; i < e.n_out; i++) {
    int l = e.out[i];
    od[i].v = size[l], od[i].sym = NULL;
    for (int k = 0; k < n->n_in && od[i].v < 0 && !od[i].sym; k++) { /* keep a symbol */
      const ait_value *v = ait_node_in(g, n, k);
      for (int a = 0; a < v->rank; a++)
        if (e.lab[k][a] == l && v->dims[a].sym) od[i].sym = v->dims[a].sym;
    }
  }
  ait_set_out(g, n, 0, v0->dtype, e.n_out, od);
  return AIT_OK;
}
