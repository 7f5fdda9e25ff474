/* aitune run: run a model once on a backend. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/model_impl.h"
#include "cli.h"
#include "core/error.h"
#include "core/fileio.h"
#include "onnx/onnx_io.h"
#include "tune/module_impl.h"

static const char usage[] =
    "usage: aitune run MODEL|DIR [--backend NAME] [--inputs DIR] [--outputs DIR]\n"
    "                        [--dim NAME=VALUE]... [--seed N]\n"
    "  MODEL             an .onnx file; DIR: a tuned model folder (aitune tune --out)\n"
    "  --backend NAME    backend to run MODEL on (default eager), e.g. native:threads=2\n"
    "  --inputs DIR      input_K.pb TensorProto files in graph-input order\n"
    "                    (without it, seeded random inputs of the declared shapes)\n"
    "  --outputs DIR     write output_K.pb files in graph-output order\n"
    "  --dim NAME=VALUE  size of a symbolic dimension for random inputs (default 1)\n"
    "  --seed N          seed of the random inputs (default 1)\n";

#define MAX_DIMS 32

typedef struct dim_arg {
  char name[128];
  int64_t value;
} dim_arg;

/* Build the random input for a declaration, sizing symbolic dims from --dim. */
static ait_status random_input(const ait_tensor_info *info, const dim_arg *dims, int n_dims,
                               unsigned long long *seed, ait_tensor **out) {
  if (info->rank < 0)
    return ait_err(AIT_E_SHAPE, "input '%s' has no declared shape; pass --inputs", info->name);
  if (info->dtype == AIT_STRING || !ait_dtype_traits_of(info->dtype))
    return ait_err(AIT_E_UNSUPPORTED,
                   "cannot make random values of dtype %s for input '%s'; pass --inputs",
                   ait_dtype_name(info->dtype), info->name);
  int64_t shape[AIT_MAX_RANK];
  for (int k = 0; k < info->rank; k++) {
    shape[k] = info->dims[k] >= 0 ? info->dims[k] : 1;
    for (int j = 0; j < n_dims && info->dim_names[k]; j++)
      if (!strcmp(dims[j].name, info->dim_names[k])) shape[k] = dims[j].value;
  }
  ait_tensor *t = ait_tensor_new(info->dtype, info->rank, shape);
  if (!t) return AIT_E_NOMEM;
  cli_fill_random(t, seed);
  *out = t;
  return AIT_OK;
}

int cmd_run(int argc, char **argv) {
  const char *model_path = NULL, *backend = NULL, *in_dir = NULL, *out_dir = NULL;
  dim_arg dims[MAX_DIMS];
  int n_dims = 0;
  unsigned long long seed = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (cli_is_help(a)) {
      fputs(usage, stdout);
      return 0;
    }
    bool has_val = i + 1 < argc;
    if (!strcmp(a, "--backend") && has_val)
      backend = argv[++i];
    else if (!strcmp(a, "--inputs") && has_val)
      in_dir = argv[++i];
    else if (!strcmp(a, "--outputs") && has_val)
      out_dir = argv[++i];
    else if (!strcmp(a, "--seed") && has_val)
      seed = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(a, "--dim") && has_val) {
      const char *spec = argv[++i], *eq = strchr(spec, '=');
      char *end = NULL;
      if (!eq || eq == spec || (size_t)(eq - spec) >= sizeof dims[0].name || n_dims == MAX_DIMS)
        return cli_usage(usage, "--dim expects NAME=VALUE, got '%s'", spec);
      long long v = strtoll(eq + 1, &end, 10);
      if (!end || *end || v < 0)
        return cli_usage(usage, "--dim %s: VALUE must be a non-negative integer", spec);
      memcpy(dims[n_dims].name, spec, (size_t)(eq - spec));
      dims[n_dims].name[eq - spec] = '\0';
      dims[n_dims++].value = v;
    } else if (a[0] == '-')
      return cli_usage(usage, "unknown or incomplete option '%s'", a);
    else if (!model_path)
      model_path = a;
    else
      return cli_usage(usage, "unexpected argument '%s'", a);
  }
  if (!model_path) return cli_usage(usage, "run needs a MODEL");

  ait_model *own_model = NULL;
  const ait_model *model = NULL;
  ait_module *mod = NULL;
  ait_session *sess = NULL;
  ait_status st;
  if (cli_is_tuned_dir(model_path)) {
    if (backend) return cli_usage(usage, "--backend does not apply to a tuned model folder");
    if ((st = ait_module_load(model_path, cli_log, NULL, &mod)))
      return cli_fail(st, "cannot load the tuned model");
    model = ait_module_model(mod);
  } else {
    if ((st = ait_model_load(model_path, &own_model))) return cli_fail(st, "cannot load model");
    model = own_model;
  }
  int rc = 0;
  size_t n_in = ait_model_num_inputs(model), n_out = ait_model_num_outputs(model);
  ait_tensor **ins = calloc(n_in + 1, sizeof *ins);
  ait_tensor_view *views = calloc(n_in + 1, sizeof *views);
  if (!ins || !views) {
    rc = cli_fail(ait_err(AIT_E_NOMEM, "out of memory"), "run");
    goto out;
  }
  for (size_t i = 0; i < n_in; i++) {
    ait_tensor_info info;
    ait_model_input(model, i, &info);
    if (in_dir) {
      char name[64];
      snprintf(name, sizeof name, "input_%zu.pb", i);
      char *p = ait_path_join(in_dir, name);
      const ait_graph *g = ait_model_graph(model);
      st = p ? cli_read_tensor_for(p, &g->values[g->inputs[i]], &ins[i]) : AIT_E_NOMEM;
      free(p);
    } else {
      st = random_input(&info, dims, n_dims, &seed, &ins[i]);
    }
    if (st) {
      rc = cli_fail(st, "cannot prepare inputs");
      goto out;
    }
    if (ins[i]->kind != AIT_KIND_TENSOR) {
      if (mod) { /* a tuned module takes dense tensors only; a session takes any value */
        rc = cli_fail(ait_err(AIT_E_UNSUPPORTED, "input %zu is not a tensor", i), "run");
        goto out;
      }
      continue;
    }
    views[i].dtype = ins[i]->dtype;
    views[i].rank = ins[i]->rank;
    memcpy(views[i].dims, ins[i]->dims, sizeof views[i].dims);
    views[i].data = ins[i]->data;
  }
  if (mod) {
    if ((st = ait_module_infer(mod, views, n_in)) != AIT_OK) {
      rc = cli_fail(st, "run failed");
      goto out;
    }
  } else {
    if ((st = ait_session_create(model, backend, &sess)) != AIT_OK) {
      rc = cli_fail(st, "cannot create session");
      goto out;
    }
    if ((st = ait_session_run_values(sess, (const ait_tensor *const *)ins, n_in)) != AIT_OK) {
      rc = cli_fail(st, "run failed");
      goto out;
    }
  }
  if (out_dir) mkdir(out_dir, 0777); /* may exist already; a write error names it below */
  for (size_t i = 0; i < n_out; i++) {
    ait_tensor_info info;
    ait_model_output(model, i, &info);
    const ait_tensor *t = mod ? mod->outputs[i] : sess->outputs[i];
    if (out_dir) {
      char name[64];
      snprintf(name, sizeof name, "output_%zu.pb", i);
      char *p = ait_path_join(out_dir, name);
      const ait_graph *g = ait_model_graph(model);
      st = p ? ait_value_file_write(p, t, g->values[g->outputs[i]].type, info.name) : AIT_E_NOMEM;
      free(p);
      if (st) {
        rc = cli_fail(st, "cannot write outputs");
        goto out;
      }
    } else {
      cli_print_summary(stdout, info.name, t);
    }
  }
  if (out_dir) printf("wrote %zu outputs to %s\n", n_out, out_dir);
out:
  for (size_t i = 0; ins && i < n_in; i++)
    ait_tensor_free(ins[i]);
  free(ins);
  free(views);
  ait_session_free(sess);
  ait_model_free(own_model);
  ait_module_free(mod);
  return rc;
}
