/* The rewritten graph on native's executor. quant selects nodes from the
 * graph native's passes made (so a quantized product keeps the bias,
 * residual and activation native fused into it), rewrites each selected
 * node into an ai.aitune.quant op whose weight input is dropped, and runs
 * the graph on native's executor: quantized ops on the kernels here
 * (claimed through native's extension hook), every other node on native's
 * kernels (fused attention pieces, LayerNorm, Softmax, GELU, views, the
 * arena). The copy borrows the model's constant data (the model outlives
 * the state), so only the quantized weights and folded constants are new
 * memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/quant/quant.h"
#include "core/error.h"
#include "ir/passes/passes.h"
#include "runtime/eager.h"

/* ---- weights behind views ------------------------------------------------ */

/* Ops folded here when all their inputs are constant: index arithmetic
 * and the views a weight goes through. None makes more elements than its
 * largest input (Concat: no more than all of them). */
static bool foldable(const ait_node *n) {
  static const char *const ops[] = {"Slice",  "Transpose", "Reshape",  "Squeeze", "Unsqueeze",
                                    "Gather", "Concat",    "Cast",     "Add",     "Sub",
                                    "Mul",    "Div",       "Identity", "Flatten"};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (ait_is_op(n, ops[i])) return true;
  return false;
}

/* Export-time attention (nn.MultiheadAttention's cross attention) slices
 * its key and value weights out of one in-projection constant, at bounds
 * computed from the query's shape: Slice(Shape(q)) -> Unsqueeze, Add ->
 * Slice(W) -> Transpose -> MatMul. native's folding keeps these (a Shape
 * of a tensor is not constant), so those products had no constant weight
 * and ran in float32 (a sixth of nn.Transformer's time at batch 8). The
 * shared passes fold what is taken from the Shape's known dims, then the
 * views of constants after it (only ops that materialize no more than
 * they read: `foldable`); dead nodes go. */
static ait_status fold_weight_views(ait_graph *g) {
  bool *dead = calloc((size_t)(g->n_nodes ? g->n_nodes : 1), sizeof *dead);
  if (!dead) return ait_err(AIT_E_NOMEM, "out of memory");
  int folded = 0;
  ait_status st = ait_pass_fold_known_shapes(g, dead, ait_eager_run_node, &folded);
  if (!st && folded)
    st = ait_pass_fold_constants_if(g, dead, ait_eager_run_node, foldable, &folded);
  if (!st && folded) st = nat_graph_compact(g, dead);
  free(dead);
  return st;
}

ait_status qnt_graph_prepare(const ait_graph *g, bool attn_bf16, ait_graph **out) {
  *out = NULL;
  ait_graph *c = nat_graph_clone(g, NULL, true);
  if (!c) return AIT_E_NOMEM;
  nat_pass_stats stats;
  ait_status st = nat_run_passes_ex(c, &stats, true);
  if (!st) st = fold_weight_views(c);
  if (!st && attn_bf16) st = nat_attention_bf16(c);
  if (st) {
    ait_graph_free(c);
    return ait_err_prefix(st, "quant: optimising the graph");
  }
  *out = c;
  return AIT_OK;
}

/* Node i becomes Q<op> in QNT_DOMAIN with attribute qidx = k; the weight
 * input goes (the quantized node holds it); fused attributes (activation,
 * alpha...) and the other inputs stay for the kernel. */
static ait_status rewrite_node(ait_node *n, const qnt_site *site, int k) {
  char op[32];
  snprintf(op, sizeof op, "Q%s", qnt_site_op(site));
  char *t = strdup(op), *d = strdup(QNT_DOMAIN);
  if (!t || !d) {
    free(t);
    free(d);
    return ait_err(AIT_E_NOMEM, "out of memory");
  }
  free(n->op_type);
  free(n->domain);
  n->op_type = t;
  n->domain = d;
  n->op = NULL;
  if (site->kind == QNT_K_GATHER) { /* QGather(indices) */
    n->in[0] = n->in[1];
    n->n_in = 1;
  }
  n->in[1] = -1;
  /* qidx: which quantized weight the kernel runs */
  return nat_attr_set_int(n, "qidx", k);
}

void qnt_state_free(qnt_state *s) {
  if (!s) return;
  for (int i = 0; i < s->n_q; i++)
    qnt_weight_free(&s->q[i].w);
  free(s->q);
  for (int i = 0; i < s->n_bufs; i++)
    free(s->bufs[i].mem);
  free(s->bufs);
  nat_state_free(s->ns);
  free(s);
}

/* The features quant's kernels may use under option kernels, and whether
 * kernels=avx512|avx2 finds what it needs (isa= is capped by the CPU, as
 * native:isa is). Without VNNI or BF16 the dq presets have AVX2 tiles to
 * fall back on (QUAD7, and float tiles on e4m3-rounded activations), so
 * only the level itself counts. */
static ait_status kernel_cpu(const qnt_config *c, qnt_cpu *cpu) {
  if (c->kernels == QNT_ISA_PORTABLE) *cpu = (qnt_cpu){false, false, false, false, false};
  if (c->kernels == QNT_ISA_AVX2) cpu->avx512 = cpu->vnni = cpu->bf16 = false;
  bool z = c->kernels == QNT_ISA_AVX512, y = c->kernels == QNT_ISA_AVX2;
  const char *need = z && !cpu->avx512 ? "avx512f/avx512bw/avx512vl"
                     : y && !cpu->avx2 ? "avx2/fma/f16c"
                                       : NULL;
  if (need)
    return ait_err(AIT_E_UNSUPPORTED,
                   "quant: kernels=%s needs %s, which this CPU (or its level: isa, "
                   "AIT_MAX_ISA) lacks",
                   z ? "avx512" : "avx2", need);
  return AIT_OK;
}

static nat_kernel claim(void *user, const ait_graph *g, const ait_node *n) {
  return n->domain && !strcmp(n->domain, QNT_DOMAIN) ? qnt_k_op : NULL;
}

/* Layouts whose products quantize their activations to u8 rows. */
static bool u8_rows(qnt_layout l) { return l == QNT_L_QUAD || l == QNT_L_QUAD7; }

/* Products with int8 activations that read the same value with the same
 * activation layout (reduction length, groups, zero points) share one
 * quantization of it: Q, K and V of an attention read one LayerNorm. */
static ait_status share_inputs(qnt_state *s, const ait_graph *g) {
  for (int i = 0; i < s->n_q; i++)
    s->q[i].share = -1;
  if (!s->cfg.act) return AIT_OK;
  for (int i = 0; i < s->n_q; i++) {
    qnt_node *a = &s->q[i];
    if (a->share >= 0 || a->site.kind != QNT_K_MATMUL || !u8_rows(a->w.layout)) continue;
    int x = g->nodes[a->site.node].in[0];
    for (int j = i + 1; j < s->n_q; j++) {
      qnt_node *b = &s->q[j];
      if (b->share >= 0 || b->site.kind != QNT_K_MATMUL || b->w.layout != a->w.layout ||
          g->nodes[b->site.node].in[0] != x || b->w.K != a->w.K || b->w.G != a->w.G ||
          b->w.gsize != a->w.gsize || b->w.asym != a->w.asym)
        continue;
      if (a->share < 0) {
        qnt_actbuf *nb = realloc(s->bufs, sizeof *nb * (size_t)(s->n_bufs + 1));
        if (!nb) return ait_err(AIT_E_NOMEM, "out of memory");
        s->bufs = nb;
        memset(&nb[s->n_bufs], 0, sizeof *nb);
        a->share = s->n_bufs++;
      }
      b->share = a->share;
    }
  }
  return AIT_OK;
}

static ait_status prepare(qnt_state *s, ait_graph *g) {
  ait_status st = kernel_cpu(&s->cfg, &s->cpu);
  for (int i = 0; i < s->n_q && !st; i++) {
    qnt_node *q = &s->q[i];
    ait_node *n = &g->nodes[q->site.node];
    /* grouped convolutions run per group on rows; the packed panels hold
     * whole matrices */
    bool grouped = q->site.kind == QNT_K_CONV && ait_attr_int(n, "group", 1) != 1;
    /* tables are read a row at a time: canonical rows */
    bool rows = grouped || q->site.kind == QNT_K_GATHER;
    qnt_layout l = rows ? QNT_L_ROWS : qnt_layout_for(q->w.type, s->cfg.act, s->cpu);
    if (l == QNT_L_QUAD7 && q->w.asym) l = QNT_L_ROWS; /* 7-bit codes are symmetric */
    if (q->w.layout == QNT_L_ROWS) st = qnt_weight_pack(&q->w, l);
    q->w.ymm = !s->cpu.avx512;
    if (!st) st = rewrite_node(n, &q->site, i);
    s->qbytes += qnt_weight_bytes(&q->w);
    s->float_bytes += (size_t)(q->w.N * q->w.K) * sizeof(float);
  }
  if (!st) st = share_inputs(s, g);
  if (st) {
    ait_graph_free(g);
    return st;
  }
  int threads = s->cfg.threads > 0 ? s->cfg.threads : nat_auto_threads();
  nat_ext ext = {claim, s};
  st = nat_state_new(g, threads, NULL, false, &ext, &s->ns);
  if (!st) s->g = nat_state_graph(s->ns);
  return st;
}

qnt_layout qnt_state_layout(const qnt_config *c, qnt_wtype t) {
  int want = c->isa == QNT_ISA_AVX512     ? NAT_ISA_AVX512
             : c->isa == QNT_ISA_AVX2     ? NAT_ISA_AVX2
             : c->isa == QNT_ISA_PORTABLE ? NAT_ISA_PORTABLE
                                          : (int)nat_isa_cpu();
  int prev = nat_isa_enter(want);
  qnt_cpu cpu = qnt_cpu_detect();
  nat_isa_enter(prev);
  if (kernel_cpu(c, &cpu)) { /* the build reports it */
    ait_err_clear();
    return QNT_L_ROWS;
  }
  return qnt_layout_for(t, c->act, cpu);
}

ait_status qnt_state_make(const qnt_config *c, ait_graph *g, qnt_node *q, int n, qnt_state **out) {
  qnt_state *s = calloc(1, sizeof *s);
  if (!s) {
    for (int i = 0; i < n; i++)
      qnt_weight_free(&q[i].w);
    free(q);
    ait_graph_free(g);
    return ait_err(AIT_E_NOMEM, "out of memory");
  }
  s->cfg = *c;
  s->q = q;
  s->n_q = n;
  /* the state's level: option isa, else native's default (AIT_MAX_ISA);
   * native's state made in prepare() takes it too, so the kernels chosen
   * here are the ones its runs (and its pool's workers) ask for */
  static const int levels[] = {[QNT_ISA_AUTO] = -1,
                               [QNT_ISA_AVX512] = NAT_ISA_AVX512,
                               [QNT_ISA_AVX2] = NAT_ISA_AVX2,
                               [QNT_ISA_PORTABLE] = NAT_ISA_PORTABLE};
  int want = levels[c->isa];
  int prev = nat_isa_enter(want >= 0 ? want : (int)nat_isa_cpu());
  s->cpu = qnt_cpu_detect(); /* all false at the portable level */
  ait_status st = prepare(s, g);
  nat_isa_enter(prev);
  if (st) {
    qnt_state_free(s);
    return st;
  }
  *out = s;
  return AIT_OK;
}

ait_status qnt_state_run(qnt_state *s, const ait_tensor *const *in, int n_in, ait_tensor **out) {
  s->run++; /* shared activations of an earlier run are stale */
  return nat_exec_run(s->ns, in, n_in, out);
}
