/* aitune info: describe a model, or print the operator support table. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/model_impl.h"
#include "cli.h"
#include "ir/flops.h"
#include "ops/op.h"

static const char usage[] = "usage: aitune info MODEL [--json] [--max-depth N] [--max-nodes N]\n"
                            "                   [--max-tensor-bytes N] [--max-fold-elements N]\n"
                            "       aitune info --ops [--json]\n"
                            "  MODEL  print inputs, outputs, opsets, op histogram, parameters and\n"
                            "         estimated FLOPs (symbolic dims counted as 1)\n"
                            "  --ops  print the operator support table of the reference backend\n"
                            "  --json print one JSON object (schemas/info.schema.json,\n"
                            "         schemas/info-ops.schema.json)\n" CLI_LOAD_USAGE;

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

/* A value's declaration as JSON: dims are numbers, names, or null (unknown). */
static cJSON *value_json(const ait_value *v) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "name", v->name);
  cJSON_AddStringToObject(o, "dtype", ait_dtype_name(v->dtype));
  cJSON_AddStringToObject(o, "type",
                          v->type == AIT_VT_SEQUENCE   ? "sequence"
                          : v->type == AIT_VT_OPTIONAL ? "optional"
                                                       : "tensor");
  if (v->rank < 0) {
    cJSON_AddNullToObject(o, "shape");
    return o;
  }
  cJSON *shape = cJSON_AddArrayToObject(o, "shape");
  for (int k = 0; k < v->rank; k++)
    cJSON_AddItemToArray(shape, v->dims[k].v >= 0 ? cJSON_CreateNumber((double)v->dims[k].v)
                                : v->dims[k].sym  ? cJSON_CreateString(v->dims[k].sym)
                                                  : cJSON_CreateNull());
  return o;
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

/* The dtypes of a row as "float32,int64" (or "any"). */
static const char *row_dtypes(const ait_op_def *r, char *buf, size_t n) {
  size_t at = (size_t)snprintf(buf, n, "%s", r->dtypes ? "" : "any");
  for (int d = 1; d <= AIT_DTYPE_LAST && at < n; d++)
    if (r->dtypes & AIT_DT_BIT(d))
      at += (size_t)snprintf(buf + at, n - at, "%s%s", at ? "," : "", ait_dtype_name((ait_dtype)d));
  return buf;
}

static int print_ops(bool json) {
  cJSON *root = json ? cJSON_CreateObject() : NULL;
  cJSON *ops = root ? cJSON_AddArrayToObject(root, "ops") : NULL;
  if (!json) printf("%-12s %-28s %-6s %s\n", "family", "op", "since", "dtypes(input 0)");
  for (int f = 0; ait_op_families[f].name; f++)
    for (int i = 0; i < ait_op_family_size(f); i++) {
      const ait_op_def *r = &ait_op_families[f].rows[i];
      if (!strncmp(r->name, "__", 2)) continue;
      char name[96], dts[512];
      snprintf(name, sizeof name, "%s%s%s", r->domain[0] ? r->domain : "", r->domain[0] ? "." : "",
               r->name);
      row_dtypes(r, dts, sizeof dts);
      if (ops) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(ops, o);
        cJSON_AddStringToObject(o, "family", ait_op_families[f].name);
        cJSON_AddStringToObject(o, "domain", r->domain);
        cJSON_AddStringToObject(o, "op", r->name);
        cJSON_AddNumberToObject(o, "since", r->since);
        cJSON_AddStringToObject(o, "dtypes", dts);
      } else {
        printf("%-12s %-28s %-6d %s\n", ait_op_families[f].name, name, r->since, dts);
      }
    }
  return json ? cli_print_json(root) : 0;
}

/* --json: schemas/info.schema.json. */
static int print_json(const char *path, const ait_model *m, long long params, long long bytes,
                      double flops, const op_count *hist, int n_hist) {
  const ait_graph *g = ait_model_graph(m);
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "model", path);
  cJSON_AddNumberToObject(j, "ir_version", (double)m->meta.ir_version);
  cJSON_AddStringToObject(j, "producer", m->meta.producer);
  cJSON_AddStringToObject(j, "producer_version", m->meta.producer_version);
  cJSON *ops = cJSON_AddObjectToObject(j, "opsets");
  for (int i = 0; i < g->n_opsets; i++)
    cJSON_AddNumberToObject(ops, g->opsets[i].domain[0] ? g->opsets[i].domain : "ai.onnx",
                            (double)g->opsets[i].version);
  cJSON *ins = cJSON_AddArrayToObject(j, "inputs"), *outs = cJSON_AddArrayToObject(j, "outputs");
  for (int i = 0; i < g->n_inputs; i++)
    cJSON_AddItemToArray(ins, value_json(&g->values[g->inputs[i]]));
  for (int i = 0; i < g->n_outputs; i++)
    cJSON_AddItemToArray(outs, value_json(&g->values[g->outputs[i]]));
  cJSON_AddNumberToObject(j, "parameters", (double)params);
  cJSON_AddNumberToObject(j, "parameter_bytes", (double)bytes);
  cJSON_AddNumberToObject(j, "nodes", g->n_nodes);
  cJSON_AddNumberToObject(j, "flops", flops);
  cJSON *h = cJSON_AddArrayToObject(j, "op_histogram");
  for (int i = 0; i < n_hist; i++) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToArray(h, o);
    cJSON_AddStringToObject(o, "op", hist[i].name);
    cJSON_AddNumberToObject(o, "count", hist[i].count);
  }
  cJSON *u = cJSON_AddArrayToObject(j, "unsupported");
  for (int i = 0; i < g->n_nodes; i++)
    if (!g->nodes[i].op) {
      cJSON *o = cJSON_CreateObject();
      cJSON_AddItemToArray(u, o);
      cJSON_AddStringToObject(o, "node", ait_node_desc(&g->nodes[i]));
      cJSON_AddNumberToObject(o, "opset", g->nodes[i].opset);
    }
  return cli_print_json(j);
}

int cmd_info(int argc, char **argv) {
  const char *path = NULL;
  bool json = false, ops = false;
  ait_load_options lo;
  ait_load_options_init(&lo);
  int rc;
  for (int i = 1; i < argc; i++) {
    if (cli_is_help(argv[i])) {
      fputs(usage, stdout);
      return 0;
    }
    if (cli_load_limit(usage, argc, argv, &i, &lo, &rc)) {
      if (rc) return rc;
    } else if (!strcmp(argv[i], "--ops"))
      ops = true;
    else if (!strcmp(argv[i], "--json"))
      json = true;
    else if (argv[i][0] == '-' || path)
      return cli_bad_arg(usage, argv[i]);
    else
      path = argv[i];
  }
  if (ops) return print_ops(json);
  if (!path) return cli_usage(usage, "info needs a MODEL or --ops");
  ait_model *m = NULL;
  ait_status st = ait_model_load_opts(path, &lo, &m);
  if (st) return cli_fail(st, "cannot load model");
  const ait_graph *g = ait_model_graph(m);
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
  if (json) {
    rc = print_json(path, m, params, bytes, flops, hist, n_hist);
    ait_model_free(m);
    return rc;
  }
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
