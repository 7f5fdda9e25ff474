#include "backends/partition.h"

#include "backends/defaults.h"

#include <cjson/cJSON.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "core/fileio.h"
#include "ir/copy.h"
#include "ir/flops.h"
#include "ops/op.h"
#include "runtime/eager.h"

typedef struct segment {
  ait_backend_config cfg;
  char desc[600];
  ait_graph *sub; /* owned; borrows g's constants */
  void *state;
  int *in_map, *out_map; /* sub input/output i -> value in g */
  int *nodes, n_nodes;   /* node indices in g */
  bool primary;          /* on the backend asked for, not on the fallback (which may be the
                            same backend: native with native as its fallback) */
} segment;

/* A clone copies seg[] (its own states) and shares everything else: the
 * segments' graphs, maps and node lists and last_use are immutable after the
 * build, freed by the last of the clones (refs). */
typedef struct part_state {
  const ait_graph *g;
  segment *seg;
  int n_seg;
  int *last_use;     /* per value of g: last segment that reads it; n_seg for graph outputs */
  _Atomic int *refs; /* states sharing the segments' graphs; NULL until finish_state */
} part_state;

static void part_destroy(void *p) {
  part_state *s = p;
  if (!s) return;
  for (int i = 0; i < s->n_seg; i++)
    if (s->seg[i].state) s->seg[i].cfg.iface->destroy(s->seg[i].state);
  if (s->refs && atomic_fetch_sub_explicit(s->refs, 1, memory_order_acq_rel) > 1) {
    free(s->seg);
    free(s);
    return;
  }
  free((void *)s->refs);
  for (int i = 0; i < s->n_seg; i++) {
    segment *sg = &s->seg[i];
    ait_graph_free(sg->sub);
    free(sg->in_map);
    free(sg->out_map);
    free(sg->nodes);
  }
  free(s->seg);
  free(s->last_use);
  free(s);
}

static ait_status part_infer(void *p, const ait_tensor *const *in, int n_in, ait_tensor **out) {
  part_state *s = p;
  const ait_graph *g = s->g;
  int nv = g->n_values;
  const ait_tensor **env = calloc((size_t)nv + 1, sizeof *env);
  ait_tensor **owned = calloc((size_t)nv + 1, sizeof *owned);
  /* segment inputs/outputs, sized for the widest segment */
  int wide = 1;
  for (int k = 0; k < s->n_seg; k++) {
    if (s->seg[k].sub->n_inputs > wide) wide = s->seg[k].sub->n_inputs;
    if (s->seg[k].sub->n_outputs > wide) wide = s->seg[k].sub->n_outputs;
  }
  const ait_tensor **sin = calloc((size_t)wide, sizeof *sin);
  ait_tensor **sout = calloc((size_t)wide, sizeof *sout);
  ait_status st = env && owned && sin && sout ? AIT_OK : ait_err(AIT_E_NOMEM, "out of memory");
  for (int i = 0; !st && i < n_in && i < g->n_inputs; i++)
    env[g->inputs[i]] = in[i];
  for (int k = 0; !st && k < s->n_seg; k++) {
    segment *sg = &s->seg[k];
    for (int i = 0; i < sg->sub->n_inputs; i++) {
      sin[i] = env[sg->in_map[i]];
      if (!sin[i])
        st = ait_err(AIT_E_INTERNAL, "partition: segment %d input '%s' has no value", k,
                     g->values[sg->in_map[i]].name);
    }
    if (!st) st = sg->cfg.iface->infer(sg->state, sin, sg->sub->n_inputs, sout);
    /* the next segment runs on another backend: this one's spinning
     * threads would take its cores (xnnpack + native on 2 cores: 25x slower) */
    if (!st && k + 1 < s->n_seg && sg->cfg.iface->idle) sg->cfg.iface->idle(sg->state);
    if (st) {
      ait_err_prefix(st, "segment %d on %s", k, sg->desc);
      break;
    }
    for (int i = 0; i < sg->sub->n_outputs; i++) {
      int v = sg->out_map[i];
      owned[v] = sout[i];
      env[v] = sout[i];
    }
    for (int v = 0; v < nv; v++) /* free what no later segment reads */
      if (owned[v] && s->last_use[v] == k) {
        ait_tensor_free(owned[v]);
        owned[v] = NULL;
        env[v] = NULL;
      }
  }
  for (int i = 0; !st && i < g->n_outputs; i++) {
    int v = g->outputs[i];
    if (owned[v]) {
      out[i] = owned[v];
      owned[v] = NULL;
    } else if (env[v]) {
      if (!(out[i] = ait_tensor_clone(env[v]))) st = AIT_E_NOMEM;
    } else {
      st = ait_err(AIT_E_INTERNAL, "partition: graph output '%s' has no value", g->values[v].name);
    }
  }
  if (st) /* everything in out[] was moved or cloned: ours to free */
    for (int i = 0; i < g->n_outputs; i++) {
      ait_tensor_free(out[i]);
      out[i] = NULL;
    }
  for (int v = 0; owned && v < nv; v++)
    ait_tensor_free(owned[v]);
  free(env);
  free(owned);
  free(sin);
  free(sout);
  return st;
}

static ait_status part_activate(void *p) {
  part_state *s = p;
  for (int i = 0; i < s->n_seg; i++)
    if (s->seg[i].cfg.iface->activate) AIT_TRY(s->seg[i].cfg.iface->activate(s->seg[i].state));
  return AIT_OK;
}

static ait_status part_deactivate(void *p) {
  part_state *s = p;
  for (int i = 0; i < s->n_seg; i++)
    if (s->seg[i].cfg.iface->deactivate) AIT_TRY(s->seg[i].cfg.iface->deactivate(s->seg[i].state));
  return AIT_OK;
}

/* rebuild: each segment's save_rebuild where it has one */
static ait_status part_save_as(part_state *s, const char *dir, bool rebuild) {
  cJSON *root = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(root, "segments");
  ait_status st = AIT_OK;
  for (int k = 0; k < s->n_seg && !st; k++) {
    segment *sg = &s->seg[k];
    cJSON *o = cJSON_CreateObject(), *nodes = cJSON_AddArrayToObject(o, "nodes");
    cJSON_AddStringToObject(o, "backend", sg->desc);
    for (int i = 0; i < sg->n_nodes; i++)
      cJSON_AddItemToArray(nodes, cJSON_CreateNumber(sg->nodes[i]));
    cJSON_AddItemToArray(arr, o);
    char name[32];
    snprintf(name, sizeof name, "seg_%d", k);
    char *sdir = ait_path_join(dir, name);
    if (!sdir || mkdir(sdir, 0777) != 0)
      st = ait_err(AIT_E_IO, "cannot create %s/%s", dir, name);
    else if (rebuild && sg->cfg.iface->save_rebuild)
      st = sg->cfg.iface->save_rebuild(sg->state, sdir);
    else
      st = sg->cfg.iface->save(sg->state, sdir);
    free(sdir);
  }
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  if (!st) {
    char *path = ait_path_join(dir, "partition.json");
    st = path && text ? ait_write_file_atomic(path, text, strlen(text)) : AIT_E_NOMEM;
    free(path);
  }
  free(text);
  return st;
}

static ait_status part_save(void *p, const char *dir) { return part_save_as(p, dir, false); }
static ait_status part_save_rebuild(void *p, const char *dir) { return part_save_as(p, dir, true); }

/* Every segment's backend must share (its clone hook); one that cannot makes
 * the whole clone AIT_E_UNSUPPORTED, and ait_module_clone reloads instead. */
static ait_status part_clone(void *p, void **out) {
  const part_state *s = p;
  for (int k = 0; k < s->n_seg; k++)
    if (!s->seg[k].cfg.iface->clone)
      return ait_err(AIT_E_UNSUPPORTED, "segment %d (%s) cannot share its state", k,
                     s->seg[k].desc);
  part_state *c = calloc(1, sizeof *c);
  segment *seg = c ? malloc(sizeof *seg * ((size_t)s->n_seg + 1)) : NULL;
  if (!seg) {
    free(c);
    return ait_err(AIT_E_NOMEM, "out of memory");
  }
  memcpy(seg, s->seg, sizeof *seg * (size_t)s->n_seg);
  for (int k = 0; k < s->n_seg; k++)
    seg[k].state = NULL;
  *c = *s;
  c->seg = seg;
  atomic_fetch_add_explicit(s->refs, 1, memory_order_relaxed);
  ait_status st = AIT_OK;
  for (int k = 0; k < s->n_seg && !st; k++)
    st = s->seg[k].cfg.iface->clone(s->seg[k].state, &seg[k].state);
  if (st) {
    part_destroy(c);
    return st;
  }
  *out = c;
  return AIT_OK;
}

static const ait_backend_iface partition_iface = {
    .name = "partition",
    .summary = "a backend on its supported segments, the rest on the fallback",
    .infer = part_infer,
    .activate = part_activate,
    .deactivate = part_deactivate,
    .save = part_save,
    .save_rebuild = part_save_rebuild,
    .destroy = part_destroy,
    .clone = part_clone,
};

/* Liveness of the original values across segments. */
static ait_status finish_state(part_state *s) {
  const ait_graph *g = s->g;
  s->last_use = malloc(sizeof(int) * ((size_t)g->n_values + 1));
  s->refs = malloc(sizeof *s->refs);
  if (!s->last_use || !s->refs) return ait_err(AIT_E_NOMEM, "out of memory");
  atomic_init(s->refs, 1);
  for (int v = 0; v < g->n_values; v++)
    s->last_use[v] = -1;
  for (int k = 0; k < s->n_seg; k++)
    for (int i = 0; i < s->seg[k].sub->n_inputs; i++)
      s->last_use[s->seg[k].in_map[i]] = k;
  for (int i = 0; i < g->n_outputs; i++)
    s->last_use[g->outputs[i]] = s->n_seg;
  /* an output nobody reads can go right after its segment */
  for (int k = 0; k < s->n_seg; k++)
    for (int i = 0; i < s->seg[k].sub->n_outputs; i++)
      if (s->last_use[s->seg[k].out_map[i]] < k) s->last_use[s->seg[k].out_map[i]] = k;
  return AIT_OK;
}

static ait_status add_segment(part_state *s, const ait_backend_config *cfg, bool primary,
                              const int *nodes, int n) {
  segment *sg = &s->seg[s->n_seg];
  memset(sg, 0, sizeof *sg);
  sg->cfg = *cfg;
  sg->primary = primary;
  ait_backend_describe(cfg, sg->desc, sizeof sg->desc);
  int nv = s->g->n_values;
  sg->in_map = malloc(sizeof(int) * ((size_t)nv + 1));
  sg->out_map = malloc(sizeof(int) * ((size_t)nv + 1));
  sg->nodes = malloc(sizeof(int) * ((size_t)n + 1));
  if (!sg->in_map || !sg->out_map || !sg->nodes) {
    free(sg->in_map);
    free(sg->out_map);
    free(sg->nodes);
    return ait_err(AIT_E_NOMEM, "out of memory");
  }
  memcpy(sg->nodes, nodes, sizeof(int) * (size_t)n);
  sg->n_nodes = n;
  s->n_seg++;
  return ait_graph_extract(s->g, nodes, n, &sg->sub, sg->in_map, sg->out_map);
}

/* Order nodes topologically, staying on the current support class while a
 * node of that class is ready, so segments come out as long as possible. */
static ait_status order_by_class(const ait_graph *g, const char *sup, int *order) {
  int nn = g->n_nodes;
  int *pending = calloc((size_t)nn + 1, sizeof(int));
  int *producer = malloc(sizeof(int) * ((size_t)g->n_values + 1));
  char *done = calloc((size_t)nn + 1, 1);
  if (!pending || !producer || !done) {
    free(pending);
    free(producer);
    free(done);
    return ait_err(AIT_E_NOMEM, "out of memory");
  }
  for (int v = 0; v < g->n_values; v++)
    producer[v] = g->values[v].producer;
  for (int i = 0; i < nn; i++)
    for (int k = 0; k < g->nodes[i].n_in; k++) {
      int v = g->nodes[i].in[k];
      if (v >= 0 && producer[v] >= 0) pending[i]++;
    }
  int cls = nn ? sup[0] : 0;
  for (int n = 0; n < nn; n++) {
    int pick = -1;
    for (int i = 0; i < nn && pick < 0; i++)
      if (!done[i] && !pending[i] && sup[i] == cls) pick = i;
    for (int i = 0; i < nn && pick < 0; i++)
      if (!done[i] && !pending[i]) pick = i;
    if (pick < 0) break; /* cannot happen on a sorted graph */
    cls = sup[pick];
    done[pick] = 1;
    order[n] = pick;
    for (int k = 0; k < g->nodes[pick].n_out; k++) {
      int v = g->nodes[pick].out[k];
      if (v < 0) continue;
      for (int i = 0; i < nn; i++)
        for (int j = 0; j < g->nodes[i].n_in; j++)
          if (g->nodes[i].in[j] == v) pending[i]--;
    }
  }
  free(pending);
  free(producer);
  free(done);
  return AIT_OK;
}

ait_status ait_runner_build(const ait_backend_config *cfg, const ait_graph *g,
                            const ait_build_info *info, ait_runner *out) {
  memset(out, 0, sizeof *out);
  int nn = g->n_nodes;
  char *sup = calloc((size_t)nn + 1, 1);
  int *order = malloc(sizeof(int) * ((size_t)nn + 1));
  char why[512], first[600] = "";
  ait_status st = AIT_OK;
  part_state *s = NULL;
  if (!sup || !order) {
    st = ait_err(AIT_E_NOMEM, "out of memory");
    goto out;
  }
  double total = 0, mine = 0;
  for (int i = 0; i < nn; i++) {
    const ait_node *n = &g->nodes[i];
    sup[i] = cfg->iface->supports(cfg, g, n, why, sizeof why);
    double f = ait_node_flops(g, n);
    total += f;
    if (sup[i]) {
      out->nodes_primary++;
      mine += f;
      continue;
    }
    /* Unsupported is loud: a node the backend refuses and that has no
     * reference kernel cannot run on the fallback either, whatever share
     * the backend takes; say which op, domain and opset, not "too little to
     * pay off" (which is all the reference itself would otherwise say). */
    if (!n->op || !n->op->kernel) {
      st = ait_eager_unsupported(n);
      goto out;
    }
    if (!first[0]) snprintf(first, sizeof first, "%s: %s", ait_node_desc(n), why);
  }
  out->nodes_total = nn;
  out->flops_share = total > 0 ? mine / total : (nn ? (double)out->nodes_primary / nn : 1);
  out->n_segments = 1;
  if (out->nodes_primary == nn) { /* the whole graph: no partitioning */
    out->iface = cfg->iface;
    st = cfg->iface->build(cfg, g, info, &out->state);
    goto out;
  }
  if (out->flops_share < AIT_PARTITION_MIN_SHARE) {
    st = ait_err(
        AIT_E_UNSUPPORTED,
        "takes %d of %d nodes (%.0f%% of the FLOPs), too little to pay off; first unsupported: %s",
        out->nodes_primary, nn, out->flops_share * 100, first);
    goto out;
  }
  ait_backend_config fb;
  ait_backend_fallback(&fb);
  snprintf(out->fallback, sizeof out->fallback, "%s", fb.iface->name);
  if ((st = order_by_class(g, sup, order))) goto out;
  s = calloc(1, sizeof *s);
  if (!s || !(s->seg = calloc((size_t)nn + 1, sizeof *s->seg))) {
    st = ait_err(AIT_E_NOMEM, "out of memory");
    goto out;
  }
  s->g = g;
  /* A node the backend takes in the whole graph may not be one it takes in
   * its segment: a Reshape whose shape the backend computes from Shape ops
   * needs those ops in the same segment; cut off, the shape arrives as a
   * run-time input. Ask again on each segment's own graph and move what it
   * refuses to the fallback, until the segments are stable. */
  for (int round = 0; round <= nn && !st; round++) {
    if (round > 0 && (st = order_by_class(g, sup, order))) break;
    for (int start = 0; start < nn && !st;) {
      int end = start;
      while (end < nn && sup[order[end]] == sup[order[start]])
        end++;
      st = add_segment(s, sup[order[start]] ? cfg : &fb, sup[order[start]], order + start,
                       end - start);
      start = end;
    }
    bool changed = false;
    for (int k = 0; k < s->n_seg && !st; k++) {
      segment *sg = &s->seg[k];
      if (!sg->primary || !sg->sub || sg->sub->n_nodes != sg->n_nodes) continue;
      for (int j = 0; j < sg->n_nodes; j++)
        if (!cfg->iface->supports(cfg, sg->sub, &sg->sub->nodes[j], why, sizeof why)) {
          sup[sg->nodes[j]] = 0;
          out->nodes_primary--;
          changed = true;
        }
    }
    if (st || !changed) break;
    for (int k = 0; k < s->n_seg; k++) { /* again, from the new classes */
      segment *sg = &s->seg[k];
      ait_graph_free(sg->sub);
      free(sg->in_map);
      free(sg->out_map);
      free(sg->nodes);
    }
    s->n_seg = 0;
  }
  if (!st && s->n_seg == 0 && nn > 0)
    st = ait_err(AIT_E_INTERNAL, "partition: no segments for %d nodes", nn);
  out->n_segments = s->n_seg;
  /* a segment's inputs are cut tensors, not the model's: the model's samples
   * and graph spec do not describe them, so segments get neither (the node
   * filter and cache folder still apply) */
  ait_build_info seg_info = {0};
  if (info) {
    seg_info.cache_dir = info->cache_dir;
    seg_info.node_filter = info->node_filter;
    seg_info.node_filter_user = info->node_filter_user;
  }
  for (int k = 0; k < s->n_seg && !st; k++) {
    segment *sg = &s->seg[k];
    if ((st = sg->cfg.iface->build(&sg->cfg, sg->sub, &seg_info, &sg->state)))
      ait_err_prefix(st, "segment %d (%d nodes) on %s", k, sg->n_nodes, sg->desc);
  }
  if (!st) st = finish_state(s);
  if (!st) {
    out->iface = &partition_iface;
    out->state = s;
    s = NULL;
  }
out:
  part_destroy(s);
  free(sup);
  free(order);
  if (st) out->state = NULL;
  return st;
}

ait_status ait_runner_load(const ait_backend_config *cfg, const ait_graph *g, const char *dir,
                           ait_runner *out) {
  memset(out, 0, sizeof *out);
  char *ppath = ait_path_join(dir, "partition.json");
  void *text = NULL;
  size_t size = 0;
  struct stat sb;
  bool partitioned = ppath && stat(ppath, &sb) == 0;
  if (!partitioned) {
    free(ppath);
    out->iface = cfg->iface;
    out->n_segments = 1;
    out->nodes_primary = out->nodes_total = g->n_nodes;
    return cfg->iface->load(cfg, g, dir, &out->state);
  }
  ait_status st = ait_read_file_max(ppath, AIT_MAX_META_BYTES, &text, &size);
  free(ppath);
  if (st) return st;
  cJSON *root = cJSON_Parse(text);
  free(text);
  const cJSON *segs = cJSON_GetObjectItemCaseSensitive(root, "segments"), *o;
  part_state *s = calloc(1, sizeof *s);
  int n = cJSON_GetArraySize(segs);
  if (!s || !root || !cJSON_IsArray(segs) || n < 1 ||
      !(s->seg = calloc((size_t)n + 1, sizeof *s->seg))) {
    cJSON_Delete(root);
    part_destroy(s);
    return ait_err(AIT_E_PARSE, "%s/partition.json is corrupted", dir);
  }
  s->g = g;
  int *nodes = malloc(sizeof(int) * ((size_t)g->n_nodes + 1));
  int k = 0;
  cJSON_ArrayForEach(o, segs) {
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(o, "backend");
    const cJSON *ns = cJSON_GetObjectItemCaseSensitive(o, "nodes"), *x;
    int m = 0;
    bool ok =
        nodes && cJSON_IsString(b) && cJSON_IsArray(ns) && cJSON_GetArraySize(ns) <= g->n_nodes;
    cJSON_ArrayForEach(x, ns) {
      if (!ok || !cJSON_IsNumber(x) || x->valueint < 0 || x->valueint >= g->n_nodes) {
        ok = false;
        break;
      }
      nodes[m++] = x->valueint;
    }
    ait_backend_config scfg;
    if (!ok || m == 0)
      st = ait_err(AIT_E_PARSE, "%s/partition.json: segment %d is corrupted", dir, k);
    else if (!(st = ait_backend_config_parse(b->valuestring, &scfg)) &&
             /* primary only matters to the build's re-check; a loaded
              * partition is not re-checked */
             !(st = add_segment(s, &scfg, false, nodes, m))) {
      char name[32];
      snprintf(name, sizeof name, "seg_%d", k);
      char *sdir = ait_path_join(dir, name);
      st = sdir ? scfg.iface->load(&scfg, s->seg[k].sub, sdir, &s->seg[k].state) : AIT_E_NOMEM;
      free(sdir);
      if (st) ait_err_prefix(st, "segment %d on %s", k, b->valuestring);
      if (scfg.iface != cfg->iface)
        snprintf(out->fallback, sizeof out->fallback, "%s", scfg.iface->name);
      else
        out->nodes_primary += m;
    }
    if (st) break;
    k++;
  }
  free(nodes);
  cJSON_Delete(root);
  if (!st) st = finish_state(s);
  if (st) {
    part_destroy(s);
    return st;
  }
  out->iface = &partition_iface;
  out->state = s;
  out->n_segments = s->n_seg;
  out->nodes_total = g->n_nodes;
  return AIT_OK;
}

void ait_runner_destroy(ait_runner *r) {
  if (r->state && r->iface) r->iface->destroy(r->state);
  r->state = NULL;
}
