/* aitune info: describe a model, or print the operator support table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/model_impl.h"
#include "cli.h"
#include "ir/flops.h"
#include "ops/op.h"

static const char usage[] = "usage: aitune info MODEL\n"
                            "       aitune info --ops\n"
                            "  MODEL  print inputs, outputs, opsets, op histogram, parameters and\n"
                            "         estimated FLOPs (symbolic dims counted as 1)\n"
                            "  --ops  print the operator support table of the reference backend\n";

static void print_value(const char *kind, const ait_value *v) {
  printf("  %s %-24s %-8s ", kind, v->name, ait_dtype_name(v->dtype));
  if (v->type == AIT_VT_SEQUENCE)
    printf("sequence");
  else if (v->type == AIT_VT_OPTIONAL)
    printf("optional");
  if (v->rank < 0) {
    printf("[?]\n");
    return;
  }
  printf("[");
  for (int k = 0; k < v->rank; k++) {
    if (k) printf(",");
    if (v->dims[k].v >= 0)
      printf("%lld", (long long)v->dims[k].v);
    else
      printf("%s", v->dims[k].sym ? v->dims[k].sym : "?");
  }
  printf("]\n");
}

typedef struct op_count {
  const char *name;
  int count;
} op_count;

static void walk(const ait_graph *g, op_count *hist, int *n_hist, int max, double *flops) {
  for (int i = 0; i < g->n_nodes; i++) {
    const ait_node *n = &g->nodes[i];
    int j = 0;
    while (j < *n_hist && strcmp(hist[j].name, n->op_type))
      j++;
    if (j == *n_hist && *n_hist < max) hist[(*n_hist)++] = (op_count){n->op_type, 0};
    if (j < *n_hist) hist[j].count++;
    *flops += ait_node_flops(g, n);
    for (int k = 0; k < n->n_attrs; k++)
      if (n->attrs[k].g) walk(n->attrs[k].g, hist, n_hist, max, flops);
  }
}

static int by_count(const void *x, const void *y) {
  const op_count *a = x, *b = y;
  return a->count != b->count ? b->count - a->count : strcmp(a->name, b->name);
}

static int print_ops(void) {
  printf("%-12s %-28s %-6s %s\n", "family", "op", "since", "dtypes(input 0)");
  for (int f = 0; ait_op_families[f].name; f++)
    for (int i = 0; i < ait_op_family_size(f); i++) {
      const ait_op_def *r = &ait_op_families[f].rows[i];
      if (!strncmp(r->name, "__", 2)) continue;
      char name[96];
      snprintf(name, sizeof name, "%s%s%s", r->domain[0] ? r->domain : "", r->domain[0] ? "." : "",
               r->name);
      printf("%-12s %-28s %-6d ", ait_op_families[f].name, name, r->since);
      if (!r->dtypes) printf("any");
      for (int d = 1, first = 1; d <= AIT_DTYPE_LAST; d++)
        if (r->dtypes & AIT_DT_BIT(d)) {
          printf("%s%s", first ? "" : ",", ait_dtype_name((ait_dtype)d));
          first = 0;
        }
      printf("\n");
    }
  return 0;
}

int cmd_info(int argc, char **argv) {
  const char *path = NULL;
  for (int i = 1; i < argc; i++) {
    if (cli_is_help(argv[i])) {
      fputs(usage, stdout);
      return 0;
    }
    if (!strcmp(argv[i], "--ops")) return print_ops();
    if (argv[i][0] == '-') return cli_usage(usage, "unknown option '%s'", argv[i]);
    if (path) return cli_usage(usage, "unexpected argument '%s'", argv[i]);
    path = argv[i];
  }
  if (!path) return cli_usage(usage, "info needs a MODEL or --ops");
  ait_model *m = NULL;
  ait_status st = ait_model_load(path, &m);
  if (st) return cli_fail(st, "cannot load model");
  const ait_graph *g = ait_model_graph(m);
  printf("model: %s\n", path);
  printf("ir_version: %lld, producer: %s %s\n", (long long)m->meta.ir_version, m->meta.producer,
         m->meta.producer_version);
  printf("opsets:");
  for (int i = 0; i < g->n_opsets; i++)
    printf(" %s=%lld", g->opsets[i].domain[0] ? g->opsets[i].domain : "ai.onnx",
           (long long)g->opsets[i].version);
  printf("\ninputs:\n");
  for (int i = 0; i < g->n_inputs; i++)
    print_value("in ", &g->values[g->inputs[i]]);
  printf("outputs:\n");
  for (int i = 0; i < g->n_outputs; i++)
    print_value("out", &g->values[g->outputs[i]]);
  long long params = 0, bytes = 0;
  for (int i = 0; i < g->n_values; i++)
    if (g->values[i].init && g->values[i].producer < 0) {
      params += ait_tensor_numel(g->values[i].init);
      bytes += (long long)ait_tensor_nbytes(g->values[i].init);
    }
  op_count hist[512];
  int n_hist = 0;
  double flops = 0;
  walk(g, hist, &n_hist, 512, &flops);
  qsort(hist, (size_t)n_hist, sizeof *hist, by_count);
  printf("parameters: %lld (%.2f MB)\n", params, (double)bytes / 1e6);
  printf("nodes: %d, estimated FLOPs: %.3g\n", g->n_nodes, flops);
  printf("ops:\n");
  int unsupported = 0;
  for (int i = 0; i < n_hist; i++)
    printf("  %-28s %d\n", hist[i].name, hist[i].count);
  for (int i = 0; i < g->n_nodes; i++)
    if (!g->nodes[i].op) {
      if (!unsupported++) printf("unsupported by eager:\n");
      printf("  %s (opset %d)\n", ait_node_desc(&g->nodes[i]), g->nodes[i].opset);
    }
  ait_model_free(m);
  return 0;
}
