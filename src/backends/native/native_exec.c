/* The native executor. Nodes run in topological order:
 *   NAT_FAST  a native kernel; its outputs live in the arena when the plan
 *             has room for them, on the heap otherwise
 *   NAT_VIEW  Reshape/Flatten/Squeeze/Unsqueeze/Identity: a new header over
 *             the input's bytes, no copy
 *   NAT_REF   the registry's reference kernel; it allocates its outputs on
 *             the heap, which are freed after their last reader
 * The first run of an input signature records how many bytes each fast
 * output needs; the plan then gives each such value an arena offset by
 * liveness. A later run that needs more than planned falls back to the heap
 * for that value and re-plans afterwards. The second run keeps the results
 * of shape-only nodes (Shape -> Gather -> Concat ...) in the plan; later runs
 * skip those nodes while every Shape/Size node sees the shape it saw.
 *
 * Control flow (If, Loop, Scan): the node runs its reference kernel, which
 * keeps the ops' semantics in one place (src/ops/control.c), but every body
 * run it asks for comes back here (ait_eager_run_node_bodies): a body runs on
 * a native state of its own over a copy of the body graph, passes included,
 * built on the first run and kept in the parent's run (nat_body), so a Loop
 * body's plan, arena and packed weights serve every iteration. A body's
 * outer-scope values are read straight from the enclosing run's value table
 * (outer_run / outer_src, resolved when the body state is built); the
 * enclosing graph keeps those values alive up to the control-flow node
 * (mark_outer_uses). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/native/native.h"
#include "runtime/eager.h"
#include "runtime/observe.h"

/* A subgraph of one of the graph's nodes and the native state running it. */
typedef struct nat_body {
  const ait_graph *src; /* the attribute's graph in s->g */
  nat_state *st;        /* over a copy of src; NULL until its first run */
} nat_body;

struct nat_run {
  nat_state *s;
  const ait_graph *g;
  nat_plan *plan;         /* NULL on a signature's first run */
  ait_tensor *hdr;        /* per value: header of arena / view tensors */
  const ait_tensor **val; /* per value: its tensor in this run */
  ait_tensor **heap;      /* per value: heap tensor this run owns */
  int64_t *need;          /* per value: bytes a fast kernel asked for */
  bool *direct;           /* per value: a graph output a fast kernel writes on the heap, handed
                           * over as it is (an arena slot would be copied out at the end) */
  int *share;       /* per value: the residual input whose slot it may take (in_place), or -1 */
  int node;         /* running node */
  bool requested;   /* the running kernel asked for an output */
  bool recording;   /* keeping shape-only results in the plan */
  bool drop_cache;  /* the plan's shape-only results went stale */
  bool miss;        /* some value did not fit its planned slot */
  nat_body *bodies; /* every subgraph attribute of g's nodes */
  int n_bodies;
  /* in a body's state: where each outer-scope value lives (the run of an
   * enclosing state, and the value there), NULL / -1 for other values */
  const nat_run **outer_run;
  int *outer_src;
  const nat_run *outer_up; /* in a body's state: the enclosing state's run */
};

/* ---- static analysis ------------------------------------------------- */

static bool is_shape_op(const ait_node *n) {
  return !n->domain[0] && (!strcmp(n->op_type, "Shape") || !strcmp(n->op_type, "Size"));
}

/* Nodes whose outputs follow from the input shapes and constants alone:
 * Shape/Size, and deterministic nodes that read only such values (views of
 * such values count as such values, though views themselves are not cached:
 * they cost nothing). */
static ait_status mark_shape_only(nat_state *s) {
  const ait_graph *g = s->g;
  static const char *const random_ops[] = {
      "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
      "Multinomial",  "Bernoulli",     "Dropout"};
  bool *sv = calloc((size_t)g->n_values + 1, sizeof *sv); /* per value */
  if (!sv) return ait_err(AIT_E_NOMEM, "out of memory preparing the native executor");
  for (int v = 0; v < g->n_values; v++)
    sv[v] = nat_is_const(g, v);
  for (int i = 0; i < g->n_nodes; i++) {
    const ait_node *n = &g->nodes[i];
    bool ok = n->op && n->op->kernel;
    for (size_t k = 0; ok && k < sizeof random_ops / sizeof random_ops[0]; k++)
      ok = strcmp(n->op_type, random_ops[k]) != 0;
    for (int k = 0; ok && k < n->n_attrs; k++)
      ok = !n->attrs[k].g;
    if (!is_shape_op(n))
      for (int k = 0; ok && k < n->n_in; k++)
        ok = n->in[k] < 0 || sv[n->in[k]];
    for (int k = 0; ok && k < n->n_out; k++)
      if (n->out[k] >= 0) sv[n->out[k]] = true;
    s->shape_only[i] = ok && s->nodes[i].kind != NAT_VIEW;
  }
  free(sv);
  return AIT_OK;
}

/* Mark in last[] the values of graph `top` that subgraph `sub` (and the
 * subgraphs in it) read from an enclosing scope, as read by node `at`. */
static void mark_outer_uses(const ait_graph *top, const ait_graph *sub, int at, int *last) {
  for (int i = 0; i < sub->n_values; i++) {
    if (!sub->values[i].outer) continue;
    int v = ait_graph_find_value(top, sub->values[i].name);
    if (v >= 0 && last[v] < at) last[v] = at;
  }
  for (int i = 0; i < sub->n_nodes; i++)
    for (int k = 0; k < sub->nodes[i].n_attrs; k++)
      if (sub->nodes[i].attrs[k].g) mark_outer_uses(top, sub->nodes[i].attrs[k].g, at, last);
}

/* The table of subgraphs (their states come on first use) and the liveness
 * of the values they read. */
static ait_status prepare_bodies(nat_state *s) {
  const ait_graph *g = s->g;
  nat_run *r = s->run;
  int count = 0;
  for (int i = 0; i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i].n_attrs; k++)
      count += g->nodes[i].attrs[k].g != NULL;
  if (!count) return AIT_OK;
  if (!(r->bodies = calloc((size_t)count, sizeof *r->bodies)))
    return ait_err(AIT_E_NOMEM, "out of memory preparing the native executor");
  for (int i = 0; i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i].n_attrs; k++) {
      const ait_graph *sub = g->nodes[i].attrs[k].g;
      if (!sub) continue;
      r->bodies[r->n_bodies++].src = sub;
      mark_outer_uses(g, sub, i, s->last);
    }
  return AIT_OK;
}

/* Whether node n's kernel reads residual element j only for output element
 * j, in registers, before storing it (so its output may lie over the
 * residual): FusedConvNhwc pointwise (1x1, stride 1, no pads, NHWC input,
 * one group, no scale input) on the vector tiles. The portable loops write
 * the product first and add the residual after: never in place. */
static bool in_place_kernel(const nat_state *s, const ait_node *n) {
  const ait_graph *g = s->g;
  if (strcmp(n->domain, AIT_FUSED_DOMAIN) || strcmp(n->op_type, "FusedConvNhwc") || n->n_in != 4 ||
      n->n_out != 1 || n->in[1] < 0 || n->in[3] < 0 || n->out[0] < 0)
    return false;
  if (ait_attr_int(n, "group", 1) != 1 || strcmp(ait_attr_str(n, "x_layout", "NHWC"), "NHWC"))
    return false;
  const ait_tensor *w = g->values[n->in[1]].init;
  if (!w || w->rank != 4 || w->dims[0] != 1 || w->dims[1] != 1) return false;
  const ait_attr *a = ait_node_attr(n, "strides");
  for (int k = 0; a && k < a->n; k++)
    if (a->ints[k] != 1) return false;
  if ((a = ait_node_attr(n, "pads")))
    for (int k = 0; k < a->n; k++)
      if (a->ints[k] != 0) return false;
  const char *pad = ait_attr_str(n, "auto_pad", "NOTSET");
  return !strcmp(pad, "NOTSET") || !strcmp(pad, "VALID");
}

/* Outputs that may take their residual input's slot (r->share): the
 * residual is the fast kernel's output of its own storage (no view, no
 * graph input or output, no initializer), dies at this node (its views
 * too: last[] covers them), and no other input of the node reads it. The
 * plan shares the slot only when both sizes match (plan_update). */
static void mark_in_place(nat_state *s) {
  const ait_graph *g = s->g;
  nat_run *r = s->run;
  for (int v = 0; v < g->n_values; v++)
    r->share[v] = -1;
  for (int i = 0; i < g->n_nodes; i++) {
    const ait_node *n = &g->nodes[i];
    if (s->nodes[i].kind != NAT_FAST || !in_place_kernel(s, n)) continue;
    int z = n->in[3], o = n->out[0], pz = g->values[z].producer;
    if (pz < 0 || s->nodes[pz].kind != NAT_FAST || g->values[z].init || s->root[z] != z ||
        s->last[z] != i || r->direct[o] || s->last[o] >= g->n_nodes || r->direct[z] ||
        g->values[z].dtype != AIT_FLOAT32 || g->values[o].dtype != AIT_FLOAT32)
      continue;
    bool alone = true;
    for (int k = 0; alone && k < n->n_in; k++)
      alone = k == 3 || n->in[k] < 0 || s->root[n->in[k]] != z;
    if (alone) r->share[o] = z;
  }
}

static bool in_place_off;
static _Atomic long long in_place_planned;
void nat_exec_set_in_place(bool on) { in_place_off = !on; }
long long nat_exec_in_place_planned(void) { return atomic_load(&in_place_planned); }

/* In place at this run's level: the vector tiles (in_place_kernel). */
static bool in_place_now(void) {
  return !in_place_off && !nat_nhwc_portable() && nat_nhwc_level() >= NAT_ISA_AVX2;
}

static void plan_free(void *plan);

ait_status nat_exec_prepare(nat_state *s) {
  const ait_graph *g = s->g;
  int nv = g->n_values, nn = g->n_nodes;
  s->nodes = calloc((size_t)nn + 1, sizeof *s->nodes);
  s->last = malloc(sizeof(int) * ((size_t)nv + 1));
  s->root = malloc(sizeof(int) * ((size_t)nv + 1));
  s->free_at = calloc((size_t)nn + 2, sizeof(int));
  s->free_list = malloc(sizeof(int) * ((size_t)nv + 1));
  s->run = calloc(1, sizeof *s->run);
  s->plans.free_plan = plan_free;
  if (!s->nodes || !s->last || !s->root || !s->free_at || !s->free_list || !s->run)
    return ait_err(AIT_E_NOMEM, "out of memory preparing the native executor");
  nat_run *r = s->run;
  r->hdr = calloc((size_t)nv + 1, sizeof *r->hdr);
  r->val = calloc((size_t)nv + 1, sizeof *r->val);
  r->heap = calloc((size_t)nv + 1, sizeof *r->heap);
  r->need = calloc((size_t)nv + 1, sizeof *r->need);
  r->direct = calloc((size_t)nv + 1, sizeof *r->direct);
  r->share = malloc(sizeof(int) * ((size_t)nv + 1));
  if (!r->hdr || !r->val || !r->heap || !r->need || !r->direct || !r->share)
    return ait_err(AIT_E_NOMEM, "out of memory preparing the native executor");
  for (int i = 0; i < nn; i++) {
    nat_kernel k = s->ext.kernel ? s->ext.kernel(s->ext.user, g, &g->nodes[i]) : NULL;
    s->nodes[i] = k ? (nat_node){NAT_FAST, k} : nat_dispatch(g, &g->nodes[i]);
  }
  if (!(s->shape_only = calloc((size_t)nn + 1, sizeof *s->shape_only)))
    return ait_err(AIT_E_NOMEM, "out of memory preparing the native executor");
  AIT_TRY(mark_shape_only(s));
  for (int v = 0; v < nv; v++) {
    s->last[v] = -1;
    s->root[v] = v;
  }
  for (int i = 0; i < nn; i++) {
    const ait_node *n = &g->nodes[i];
    for (int k = 0; k < n->n_in; k++)
      if (n->in[k] >= 0) s->last[n->in[k]] = i;
    if (s->nodes[i].kind == NAT_VIEW) s->root[n->out[0]] = s->root[n->in[0]];
  }
  AIT_TRY(prepare_bodies(s));
  for (int k = 0; k < g->n_outputs; k++)
    s->last[g->outputs[k]] = nn;
  /* graph outputs that are their own storage, shared with no other output
   * (take_outputs hands such a heap tensor over without a copy) */
  for (int k = 0; k < g->n_outputs; k++) {
    int v = g->outputs[k];
    bool alone = g->values[v].producer >= 0 && s->root[v] == v;
    for (int j = 0; alone && j < g->n_outputs; j++)
      alone = j == k || s->root[g->outputs[j]] != v;
    r->direct[v] = alone;
  }
  /* a view keeps its input's storage alive: extend backwards */
  for (int i = nn - 1; i >= 0; i--) {
    const ait_node *n = &g->nodes[i];
    if (s->nodes[i].kind == NAT_VIEW && s->last[n->out[0]] > s->last[n->in[0]])
      s->last[n->in[0]] = s->last[n->out[0]];
  }
  /* unread outputs die right after their node */
  for (int i = 0; i < nn; i++) {
    const ait_node *n = &g->nodes[i];
    for (int k = 0; k < n->n_out; k++)
      if (n->out[k] >= 0 && s->last[n->out[k]] < i) s->last[n->out[k]] = i;
  }
  /* free lists by node: counting sort of produced values by last use */
  for (int v = 0; v < nv; v++)
    if (g->values[v].producer >= 0 && s->last[v] < nn) s->free_at[s->last[v] + 1]++;
  for (int i = 0; i < nn; i++)
    s->free_at[i + 1] += s->free_at[i];
  int *fill = calloc((size_t)nn + 1, sizeof(int));
  if (!fill) return ait_err(AIT_E_NOMEM, "out of memory preparing the native executor");
  for (int v = 0; v < nv; v++)
    if (g->values[v].producer >= 0 && s->last[v] < nn) {
      int i = s->last[v];
      s->free_list[s->free_at[i] + fill[i]++] = v;
    }
  free(fill);
  mark_in_place(s);
  return AIT_OK;
}

static void plan_drop_cache(nat_plan *p, int n_values) {
  for (int v = 0; p->cache && v < n_values; v++) {
    ait_tensor_free(p->cache[v]);
    p->cache[v] = NULL;
  }
  p->cached = false;
}

static void plan_free(void *plan) {
  nat_plan *p = plan;
  if (!p) return;
  plan_drop_cache(p, p->n_values);
  free(p->cache);
  free(p->seen);
  free(p->offset);
  free(p->size);
  free(p);
}

/* The published packs go with the state's other big memory when no clone
 * shares them (deactivate while tuning); with clones they stay, read-only. */
static void release_shared_packs(nat_state *s) {
  nat_shared *sh = s->shared;
  if (!sh || atomic_load_explicit(&sh->refs, memory_order_acquire) != 1) return;
  pthread_mutex_lock(sh->lock);
  for (int i = 0; sh->packs && i < s->g->n_nodes * NAT_DATA_KINDS; i++)
    free(sh->packs[i]);
  free(sh->packs);
  sh->packs = NULL;
  pthread_mutex_unlock(sh->lock);
}

void nat_exec_release(nat_state *s) {
  ait_plan_cache_clear(&s->plans);
  free(s->arena);
  s->arena = NULL;
  s->arena_cap = 0;
  free(s->scratch);
  s->scratch = NULL;
  s->scratch_cap = 0;
  nat_pool_free(s->pool);
  s->pool = NULL;
  for (int i = 0; s->node_data && i < s->g->n_nodes * NAT_DATA_KINDS; i++)
    free(s->node_data[i]);
  free(s->node_data);
  s->node_data = NULL;
  release_shared_packs(s);
  for (int i = 0; s->run && i < s->run->n_bodies; i++) { /* rebuilt on their next run */
    nat_state_free(s->run->bodies[i].st);
    s->run->bodies[i].st = NULL;
  }
}

void nat_exec_free(nat_state *s) {
  nat_exec_release(s);
  if (s->run) {
    free(s->run->hdr);
    free(s->run->val);
    free(s->run->heap);
    free(s->run->need);
    free(s->run->direct);
    free(s->run->share);
    free(s->run->bodies);
    free(s->run->outer_run);
    free(s->run->outer_src);
    free(s->run);
    s->run = NULL;
  }
  free(s->nodes);
  free(s->shape_only);
  free(s->last);
  free(s->root);
  free(s->free_at);
  free(s->free_list);
  s->nodes = NULL;
  s->shape_only = NULL;
  s->last = s->root = s->free_at = s->free_list = NULL;
}

/* ---- services for kernels --------------------------------------------- */

ait_status nat_output(nat_run *r, int k, ait_dtype dt, int rank, const int64_t *dims,
                      ait_tensor **t) {
  const ait_node *n = &r->g->nodes[r->node];
  int v = k < n->n_out ? n->out[k] : -1;
  r->requested = true;
  if (v < 0) return ait_err(AIT_E_INTERNAL, "fast kernel output %d is not used", k);
  int64_t bytes = ait_shape_numel(rank, dims) * (int64_t)ait_elem_size(dt);
  nat_plan *p = r->plan;
  if (r->direct[v] || (p && p->in_place && r->share[v] >= 0 && !in_place_now()))
    p = NULL; /* on the heap by design (or its slot is its residual's): no miss */
  else
    r->need[v] = bytes;
  if (p && p->offset[v] >= 0 && bytes <= p->size[v]) {
    ait_tensor *h = &r->hdr[v];
    memset(h, 0, sizeof *h);
    h->kind = AIT_KIND_TENSOR;
    h->dtype = dt;
    h->rank = rank;
    memcpy(h->dims, dims, sizeof(int64_t) * (size_t)rank);
    h->data = (char *)r->s->arena + p->offset[v];
    r->val[v] = h;
    *t = h;
    return AIT_OK;
  }
  if (p) r->miss = true;
  ait_tensor *h = NULL;
  if (r->direct[v] && dt != AIT_STRING) {
    /* the kernel writes every element: no zeroing (a memset of the whole
     * output on memory malloc hands back) */
    void *data = malloc(bytes > 0 ? (size_t)bytes : 1);
    if (data && !(h = ait_tensor_wrap(dt, rank, dims, data))) free(data);
    if (h) h->owns = true;
  } else {
    h = ait_tensor_new(dt, rank, dims);
  }
  if (!h) return AIT_E_NOMEM;
  r->heap[v] = h;
  r->val[v] = h;
  *t = h;
  return AIT_OK;
}

static bool scratch_poison;
void nat_set_scratch_poison(bool on) { scratch_poison = on; }

void *nat_scratch(nat_run *r, int64_t bytes) {
  nat_state *s = r->s;
  if (bytes > s->scratch_cap) {
    free(s->scratch);
    int64_t cap = (bytes + 4095) / 4096 * 4096;
    s->scratch = aligned_alloc(64, (size_t)cap);
    s->scratch_cap = s->scratch ? cap : 0;
    if (!s->scratch) {
      ait_err(AIT_E_NOMEM, "out of memory for %lld bytes of scratch", (long long)bytes);
      return NULL;
    }
  }
  if (scratch_poison) memset(s->scratch, 0x7f, (size_t)bytes); /* floats of 3.4e38 */
  return s->scratch;
}

nat_pool *nat_run_pool(nat_run *r) { return r->s->pool; }
void *nat_run_user(nat_run *r) { return r->s->ext.user; }

/* A node's packed copy: the key and size it was made for, then the data
 * at the next 64-byte boundary. */
typedef struct node_pack {
  int64_t key[4];
  size_t bytes;
} node_pack;

static void *pack_data(node_pack *h) {
  return (void *)(((uintptr_t)(h + 1) + 63) & ~(uintptr_t)63);
}

static bool pack_is(const node_pack *h, const int64_t key[4], size_t bytes) {
  return h && h->bytes == bytes && !memcmp(h->key, key, sizeof h->key);
}

/* The shared block's published pack of slot i when it was made for (key,
 * bytes), else NULL. */
static node_pack *shared_pack(nat_shared *sh, size_t i, const int64_t key[4], size_t bytes) {
  if (!sh) return NULL;
  pthread_mutex_lock(sh->lock);
  node_pack *h = sh->packs ? sh->packs[i] : NULL;
  pthread_mutex_unlock(sh->lock);
  return pack_is(h, key, bytes) ? h : NULL;
}

/* Packs are looked up in the state's own table, then among those its
 * clones published (read-only, filled); a new one is the state's own until
 * the run ends well and nat_exec_publish_packs hands it to the block. */
void *nat_node_pack(nat_run *r, int kind, const int64_t key[4], size_t bytes, bool *fresh) {
  nat_state *s = r->s;
  size_t n = (size_t)s->g->n_nodes * NAT_DATA_KINDS;
  if (!s->node_data && !(s->node_data = calloc(n, sizeof *s->node_data))) return NULL;
  size_t i = (size_t)r->node * NAT_DATA_KINDS + (size_t)kind;
  void **slot = &s->node_data[i];
  node_pack *h = *slot;
  *fresh = false;
  if (pack_is(h, key, bytes)) return pack_data(h);
  node_pack *pub = shared_pack(s->shared, i, key, bytes);
  if (pub) return pack_data(pub);
  free(h); /* made for another shape: never read a stale copy */
  if (!(*slot = h = malloc(sizeof *h + 64 + bytes))) return NULL;
  memcpy(h->key, key, sizeof h->key);
  h->bytes = bytes;
  *fresh = true;
  return pack_data(h);
}

void nat_exec_publish_packs(nat_state *s) {
  nat_shared *sh = s->shared;
  /* a state without clones keeps its packs (nothing to share them with) */
  if (!sh || !s->node_data || atomic_load_explicit(&sh->refs, memory_order_acquire) < 2) return;
  size_t n = (size_t)s->g->n_nodes * NAT_DATA_KINDS;
  pthread_mutex_lock(sh->lock);
  if (!sh->packs) sh->packs = calloc(n, sizeof *sh->packs);
  for (size_t i = 0; sh->packs && i < n; i++) {
    node_pack *h = s->node_data[i];
    if (!h) continue;
    if (!sh->packs[i]) {
      sh->packs[i] = h;
      s->node_data[i] = NULL;
    } else if (pack_is(sh->packs[i], h->key, h->bytes)) {
      /* a clone packed the same at the same time and published first: the
       * run is over, nobody reads this copy, the shared one serves next */
      free(h);
      s->node_data[i] = NULL;
    }
  }
  pthread_mutex_unlock(sh->lock);
}

int64_t nat_exec_pack_bytes(const nat_state *s) {
  size_t n = (size_t)s->g->n_nodes * NAT_DATA_KINDS;
  int64_t b = 0;
  for (size_t i = 0; s->node_data && i < n; i++)
    if (s->node_data[i]) b += (int64_t)((node_pack *)s->node_data[i])->bytes;
  nat_shared *sh = s->shared;
  if (!sh) return b;
  pthread_mutex_lock(sh->lock);
  for (size_t i = 0; sh->packs && i < n; i++)
    if (sh->packs[i]) b += (int64_t)((node_pack *)sh->packs[i])->bytes;
  pthread_mutex_unlock(sh->lock);
  return b;
}

bool nat_run_gemv_pack(nat_run *r) { return r->s->gemv_pack; }
bool nat_run_tiles(nat_run *r) { return r->s->tiles; }
bool nat_run_winograd(nat_run *r) { return r->s->winograd; }

bool nat_input_is_const(nat_run *r, int k) {
  const ait_node *n = &r->g->nodes[r->node];
  return k >= 0 && k < n->n_in && n->in[k] >= 0 && r->g->values[n->in[k]].init != NULL;
}
nat_gemm_fn nat_run_gemm(nat_run *r) { return r->s->gemm; }
_Atomic long long *nat_run_gemm_calls(nat_run *r) { return &r->s->gemm_calls; }
int nat_run_threads(nat_run *r) { return r->s->threads; }

int64_t nat_chunk(nat_run *r, int64_t n, int64_t min_chunk) {
  int64_t parts = (int64_t)r->s->threads * 4;
  int64_t c = (n + parts - 1) / (parts ? parts : 1);
  if (c < min_chunk) c = min_chunk;
  return c < 1 ? 1 : c;
}

/* ---- running nodes --------------------------------------------------- */

static ait_status run_view(nat_run *r, const ait_node *n, const ait_tensor *const *in, bool *done) {
  int rank = 0;
  int64_t dims[AIT_MAX_RANK];
  *done = false;
  const ait_tensor *x = in[0];
  if (!x || x->kind != AIT_KIND_TENSOR || nat_view_shape(n, in, n->n_in, &rank, dims) != AIT_OK) {
    ait_err_clear();
    return AIT_OK;
  }
  int v = n->out[0];
  ait_tensor *h = &r->hdr[v];
  memset(h, 0, sizeof *h);
  h->kind = AIT_KIND_TENSOR;
  h->dtype = x->dtype;
  h->rank = rank;
  memcpy(h->dims, dims, sizeof(int64_t) * (size_t)rank);
  h->data = x->data;
  r->val[v] = h;
  *done = true;
  return AIT_OK;
}

static ait_status run_body(void *user, const ait_graph *body, const ait_tensor *const *in, int n_in,
                           ait_tensor **out);

static bool has_body(const ait_node *n) {
  for (int k = 0; k < n->n_attrs; k++)
    if (n->attrs[k].g) return true;
  return false;
}

static ait_status run_ref(nat_run *r, const ait_node *n, const ait_tensor *const *in) {
  ait_tensor *out[64];
  AIT_TRY(has_body(n) ? ait_eager_run_node_bodies(n, in, n->n_in, out, run_body, r)
                      : ait_eager_run_node(n, in, n->n_in, out));
  for (int k = 0; k < n->n_out; k++) {
    int v = n->out[k];
    if (v < 0) {
      ait_tensor_free(out[k]);
      continue;
    }
    r->heap[v] = out[k];
    r->val[v] = out[k];
  }
  return AIT_OK;
}

/* ---- control-flow bodies ---------------------------------------------------- */

/* A native state for body b of run r: a copy of its graph (initializers
 * borrowed from r's graph, which outlives it) with the parent's options,
 * and where each of its outer-scope values lives. */
static ait_status body_state(nat_run *r, nat_body *b) {
  nat_state *s = r->s;
  ait_graph *copy = nat_graph_clone(b->src, (ait_graph *)r->g, true);
  if (!copy) return AIT_E_NOMEM;
  nat_state *bs = NULL;
  int prev_isa = nat_isa_enter(s->isa); /* the passes see the parent's level */
  ait_status st = nat_state_new(copy, s->threads, s->gemm_name[0] ? s->gemm_name : NULL,
                                s->fuse ? NAT_PASSES : 0, s->ext.kernel ? &s->ext : NULL, &bs);
  nat_isa_enter(prev_isa);
  AIT_TRY(st);
  bs->isa = s->isa;
  bs->fuse = s->fuse;
  bs->gemv_pack = s->gemv_pack;
  bs->tiles = s->tiles;
  bs->winograd = s->winograd;
  const ait_graph *bg = bs->g;
  nat_run *br = bs->run;
  br->outer_run = calloc((size_t)bg->n_values + 1, sizeof *br->outer_run);
  br->outer_src = malloc(sizeof(int) * ((size_t)bg->n_values + 1));
  if (!br->outer_run || !br->outer_src) {
    nat_state_free(bs);
    return ait_err(AIT_E_NOMEM, "out of memory for a control-flow body");
  }
  for (int v = 0; v < bg->n_values; v++) {
    br->outer_src[v] = -1;
    if (!bg->values[v].outer) continue;
    /* the nearest enclosing graph that has the name (an outer value there
     * is filled from further out when that graph's run starts) */
    const nat_run *e = r;
    int src = -1;
    while (e && (src = ait_graph_find_value(e->g, bg->values[v].name)) < 0)
      e = e->outer_up;
    br->outer_run[v] = src >= 0 ? e : NULL;
    br->outer_src[v] = src;
  }
  br->outer_up = r;
  b->st = bs;
  return AIT_OK;
}

static ait_status run_body(void *user, const ait_graph *body, const ait_tensor *const *in, int n_in,
                           ait_tensor **out) {
  nat_run *r = user;
  nat_body *b = NULL;
  for (int i = 0; i < r->n_bodies && !b; i++)
    if (r->bodies[i].src == body) b = &r->bodies[i];
  if (!b) return ait_err(AIT_E_INTERNAL, "subgraph '%s' is not one of the graph's", body->name);
  if (!b->st) AIT_TRY(body_state(r, b));
  nat_state *bs = b->st;
  bs->pool = r->s->pool; /* the parent's threads, borrowed for the run */
  ait_status st = nat_exec_run(bs, in, n_in, out);
  bs->pool = NULL;
  return st;
}

static ait_status run_node_uncached(nat_run *r, int i, const ait_node *n,
                                    const ait_tensor *const *in);

/* Keep the outputs of shape-only node i for later runs of this signature. */
static void record(nat_run *r, int i, const ait_node *n, const ait_tensor *const *in) {
  nat_plan *p = r->plan;
  if (is_shape_op(n)) {
    int64_t *seen = p->seen + (size_t)i * (AIT_MAX_RANK + 1);
    seen[0] = in[0] ? in[0]->rank : -1;
    if (in[0]) memcpy(seen + 1, in[0]->dims, sizeof(int64_t) * (size_t)in[0]->rank);
  }
  for (int k = 0; k < n->n_out; k++) {
    int v = n->out[k];
    const ait_tensor *t = v >= 0 ? r->val[v] : NULL;
    if (!t || t->kind != AIT_KIND_TENSOR || p->cache[v]) continue;
    p->cache[v] = ait_tensor_clone(t); /* NULL (out of memory) just means not cached */
  }
}

static ait_status run_node(nat_run *r, int i) {
  const ait_graph *g = r->g;
  const ait_node *n = &g->nodes[i];
  const ait_tensor *in[64];
  if (n->n_in > 64 || n->n_out > 64)
    return ait_err(AIT_E_UNSUPPORTED, "%s has more than 64 inputs or outputs", ait_node_desc(n));
  for (int k = 0; k < n->n_in; k++) {
    in[k] = n->in[k] >= 0 ? r->val[n->in[k]] : NULL;
    if (n->in[k] >= 0 && !in[k])
      return ait_err(AIT_E_INVALID_MODEL, "%s: input '%s' has no value", ait_node_desc(n),
                     g->values[n->in[k]].name);
  }
  r->node = i;
  if (r->s->shape_only[i] && r->plan && r->plan->cached) {
    bool hit = true;
    if (is_shape_op(n)) { /* the shape it reads must be the one it saw */
      const int64_t *seen = r->plan->seen + (size_t)i * (AIT_MAX_RANK + 1);
      hit = in[0] && in[0]->rank == seen[0] &&
            !memcmp(in[0]->dims, seen + 1, sizeof(int64_t) * (size_t)in[0]->rank);
    }
    for (int k = 0; hit && k < n->n_out; k++)
      hit = n->out[k] < 0 || r->plan->cache[n->out[k]];
    if (hit) {
      for (int k = 0; k < n->n_out; k++)
        if (n->out[k] >= 0) r->val[n->out[k]] = r->plan->cache[n->out[k]];
      return AIT_OK;
    }
    /* shapes moved: compute from here on; the cache goes after this run
     * (earlier nodes of this run may still be reading it) */
    r->plan->cached = false;
    r->drop_cache = true;
    r->recording = false;
  }
  AIT_TRY(run_node_uncached(r, i, n, in));
  if (r->recording && r->s->shape_only[i]) record(r, i, n, in);
  return AIT_OK;
}

static ait_status run_node_uncached(nat_run *r, int i, const ait_node *n,
                                    const ait_tensor *const *in) {
  const nat_node *nd = &r->s->nodes[i];
  if (nd->kind == NAT_VIEW) {
    bool done;
    AIT_TRY(run_view(r, n, in, &done));
    if (done) return AIT_OK;
  } else if (nd->kind == NAT_FAST) {
    r->requested = false;
    ait_status st = nd->fast(r, n, in, n->n_in);
    if (st == AIT_OK) return AIT_OK;
    if (st != AIT_E_UNSUPPORTED || r->requested)
      return ait_err_prefix(st, "%s (native kernel)", ait_node_desc(n));
    ait_err_clear(); /* outside the fast kernel's cases: the reference runs it */
  }
  return run_ref(r, n, in);
}

/* Free what dies after node i (and everything at the end, i = -1). */
static void release(nat_run *r, int i) {
  nat_state *s = r->s;
  if (i < 0) {
    for (int v = 0; v < r->g->n_values; v++) {
      ait_tensor_free(r->heap[v]);
      r->heap[v] = NULL;
      r->val[v] = NULL;
    }
    return;
  }
  for (int j = s->free_at[i]; j < s->free_at[i + 1]; j++) {
    int v = s->free_list[j];
    ait_tensor_free(r->heap[v]);
    r->heap[v] = NULL;
    r->val[v] = NULL;
  }
}

/* Outputs: hand over heap tensors nobody else shares, copy the rest. */
static ait_status take_outputs(nat_run *r, ait_tensor **out) {
  const ait_graph *g = r->g;
  nat_state *s = r->s;
  for (int k = 0; k < g->n_outputs; k++) {
    int v = g->outputs[k];
    bool shared = false;
    for (int j = 0; j < g->n_outputs; j++)
      shared |= j != k && s->root[g->outputs[j]] == s->root[v];
    if (r->heap[v] && !shared) {
      out[k] = r->heap[v];
      r->heap[v] = NULL;
      r->val[v] = out[k]; /* still readable for a later duplicate */
      continue;
    }
    if (!r->val[v]) {
      out[k] = NULL;
      return ait_err(AIT_E_INVALID_MODEL, "graph output '%s' has no value", g->values[v].name);
    }
    if (!(out[k] = ait_tensor_clone(r->val[v]))) return AIT_E_NOMEM;
  }
  return AIT_OK;
}

/* ---- plans ---------------------------------------------------------------- */

/* (Re)compute plan p from the sizes this run needed. */
static ait_status plan_update(nat_state *s, nat_plan *p, const int64_t *need) {
  const ait_graph *g = s->g;
  int nv = g->n_values;
  int *first = malloc(sizeof(int) * ((size_t)nv + 1));
  int *share = malloc(sizeof(int) * ((size_t)nv + 1));
  if (!first || !share) {
    free(first);
    free(share);
    return ait_err(AIT_E_NOMEM, "out of memory planning the arena");
  }
  for (int v = 0; v < nv; v++) {
    first[v] = g->values[v].producer;
    if (need[v] > p->size[v]) p->size[v] = need[v];
    if (first[v] < 0) p->size[v] = 0;
  }
  /* in place: an output over its dead residual of the same size */
  int shared = 0;
  bool now = in_place_now();
  for (int v = 0; v < nv; v++) {
    int z = s->run->share[v];
    share[v] = now && z >= 0 && p->size[v] > 0 && p->size[z] == p->size[v] ? z : -1;
    shared += share[v] >= 0;
  }
  p->in_place = shared;
  atomic_fetch_add(&in_place_planned, shared);
  ait_status st = ait_plan_assign_shared(nv, p->size, first, s->last, shared ? share : NULL,
                                         p->offset, &p->arena_bytes);
  free(first);
  free(share);
  return st;
}

/* A plan for in's signature from the sizes this run needed, kept in the
 * shared cache (the least recently used of AIT_PLAN_CACHE_MAX goes). */
static ait_status plan_new(nat_state *s, const ait_tensor *const *in, int n_in,
                           const int64_t *need) {
  const ait_graph *g = s->g;
  nat_plan *p = calloc(1, sizeof *p);
  if (!p) return ait_err(AIT_E_NOMEM, "out of memory for a plan");
  p->n_values = g->n_values;
  p->offset = malloc(sizeof(int64_t) * ((size_t)g->n_values + 1));
  p->size = calloc((size_t)g->n_values + 1, sizeof(int64_t));
  p->cache = calloc((size_t)g->n_values + 1, sizeof *p->cache);
  p->seen = calloc(((size_t)g->n_nodes + 1) * (AIT_MAX_RANK + 1), sizeof(int64_t));
  ait_status st = AIT_OK;
  if (!p->offset || !p->size || !p->cache || !p->seen)
    st = ait_err(AIT_E_NOMEM, "out of memory for a plan");
  if (!st) st = plan_update(s, p, need);
  if (st) {
    plan_free(p);
    return st;
  }
  return ait_plan_cache_add(&s->plans, in, n_in, p); /* frees p on failure */
}

static ait_status arena_reserve(nat_state *s, int64_t bytes) {
  if (bytes <= s->arena_cap) return AIT_OK;
  free(s->arena);
  int64_t cap = (bytes + 4095) / 4096 * 4096;
  s->arena = aligned_alloc(64, (size_t)cap);
  s->arena_cap = s->arena ? cap : 0;
  if (!s->arena)
    return ait_err(AIT_E_NOMEM, "out of memory for an arena of %lld bytes", (long long)bytes);
  return AIT_OK;
}

/* ---- a run ---------------------------------------------------------------- */

static ait_status run_graph(nat_state *s, const ait_tensor *const *in, int n_in, ait_tensor **out);

/* The run at the state's ISA level (native_isa.h), restored afterwards. */
ait_status nat_exec_run(nat_state *s, const ait_tensor *const *in, int n_in, ait_tensor **out) {
  const ait_graph *g = s->g;
  for (int k = 0; k < g->n_outputs; k++)
    out[k] = NULL;
  int prev_isa = nat_isa_enter(s->isa);
  nat_blas_enter(); /* the pool is the only parallelism: GEMM libraries on 1 thread */
  ait_status st = run_graph(s, in, n_in, out);
  if (!st) nat_exec_publish_packs(s);
  nat_blas_leave();
  nat_isa_enter(prev_isa);
  return st;
}

static ait_status run_graph(nat_state *s, const ait_tensor *const *in, int n_in, ait_tensor **out) {
  const ait_graph *g = s->g;
  if (n_in != g->n_inputs)
    return ait_err(AIT_E_INVALID_ARG, "graph '%s' takes %d inputs, got %d", g->name, g->n_inputs,
                   n_in);
  if (!s->pool && s->threads > 1 && !(s->pool = nat_pool_new(s->threads))) return AIT_E_NOMEM;
  nat_run *r = s->run;
  r->s = s;
  r->g = g;
  r->plan = ait_plan_cache_find(&s->plans, in, n_in);
  r->miss = false;
  r->recording = r->plan && !r->plan->cached;
  r->drop_cache = false;
  if (r->plan) AIT_TRY(arena_reserve(s, r->plan->arena_bytes));
  for (int v = 0; v < g->n_values; v++) {
    const ait_value *val = &g->values[v];
    r->val[v] = val->init && val->producer < 0 ? val->init : NULL;
    r->heap[v] = NULL;
    r->need[v] = 0;
  }
  for (int v = 0; r->outer_src && v < g->n_values; v++)
    if (r->outer_src[v] >= 0) r->val[v] = r->outer_run[v]->val[r->outer_src[v]];
  for (int i = 0; i < n_in; i++)
    r->val[g->inputs[i]] = in[i];
  ait_status st = AIT_OK;
  for (int i = 0; i < g->n_nodes && !st; i++) {
    double t0 = ait_observing() ? ait_observe_now() : 0;
    st = run_node(r, i);
    if (t0 > 0) ait_observe_node(&g->nodes[i], ait_observe_now() - t0);
    release(r, i);
  }
  if (!st) st = take_outputs(r, out);
  release(r, -1);
  if (r->plan && (r->drop_cache || (st && r->recording))) plan_drop_cache(r->plan, g->n_values);
  if (st) {
    for (int k = 0; k < g->n_outputs; k++) {
      ait_tensor_free(out[k]);
      out[k] = NULL;
    }
    return st;
  }
  if (!r->plan) return plan_new(s, in, n_in, r->need);
  if (r->recording) r->plan->cached = true;
  r->plan->runs++;
  if (r->miss) {
    r->plan->misses++;
    return plan_update(s, r->plan, r->need);
  }
  return AIT_OK;
}
