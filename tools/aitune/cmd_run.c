/* aitune run: run a model once on a backend. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/devio.h"
#include "api/model_impl.h"
#include "cli.h"
#include "core/error.h"
#include "core/fileio.h"
#include "onnx/onnx_io.h"
#include "tune/tune.h"

static const char usage[] =
    "usage: aitune run MODEL|DIR [--backend NAME] [--inputs DIR] [--outputs DIR]\n"
    "                        [--dim NAME=VALUE]... [--seed N] [--int-range [INPUT=]LO:HI]\n"
    "                        [--output-format pb|npy] [--json] [--max-depth N]...\n"
    "  MODEL             an .onnx file; DIR: a tuned model folder (aitune tune --out)\n"
    "  --backend NAME    backend to run MODEL on (default eager), e.g. native:threads=2\n"
    "  --inputs DIR      input_K.pb (TensorProto) or input_K.npy files in graph-input\n"
    "                    order (--samples is the same); without it, seeded random inputs\n"
    "                    of the declared shapes\n"
    "  --outputs DIR     write output_K.pb (or .npy) files in graph-output order\n"
    "  --output-format F pb (default) or npy\n"
    "  --dim NAME=VALUE  size of a symbolic dim (seq) or an axis (INPUT:AXIS) of the\n"
    "                    inputs (default 1; files are resized: rows repeat or are cut)\n"
    "  --seed N          seed of the random inputs (default 1)\n"
    "  --int-range [INPUT=]LO:HI  random integers in [LO, HI] (default 0:1)\n"
    "  --json            print the outputs' summaries as one JSON object\n"
    "                    (schemas/run.schema.json)\n" CLI_LOAD_USAGE
    "Options take their value as --opt VALUE or --opt=VALUE.\n";

int cmd_run(int argc, char **argv) {
  const char *model_path = NULL, *backend = NULL, *in_dir = NULL, *out_dir = NULL, *val;
  static const char *const inputs_flag[] = {"--inputs", "--samples", NULL};
  cli_inputs ci = {0};
  bool npy = false, json = false;
  int rc;
  ait_load_options lo;
  ait_load_options_init(&lo);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (cli_is_help(a)) {
      fputs(usage, stdout);
      return 0;
    }
    if (cli_load_limit(usage, argc, argv, &i, &lo, &rc)) {
      if (rc) return rc;
    } else if (cli_opt(argc, argv, &i, "--backend", &val))
      backend = val;
    else if (cli_opt_any(argc, argv, &i, inputs_flag, &val))
      in_dir = val;
    else if (cli_opt(argc, argv, &i, "--outputs", &val))
      out_dir = val;
    else if (cli_opt(argc, argv, &i, "--output-format", &val)) {
      if (strcmp(val, "pb") && strcmp(val, "npy"))
        return cli_usage(usage, "--output-format expects pb or npy, got '%s'", val);
      npy = !strcmp(val, "npy");
    } else if (cli_opt(argc, argv, &i, "--seed", &val)) {
      long long seed;
      if ((rc = cli_int(usage, "--seed", val, 0, CLI_NO_MAX, &seed))) return rc;
      ci.seed = (unsigned long long)seed;
    } else if (cli_opt(argc, argv, &i, "--dim", &val)) {
      if ((rc = cli_parse_dim(usage, "--dim", val, false, &ci))) return rc;
    } else if (cli_opt(argc, argv, &i, "--int-range", &val)) {
      if ((rc = cli_parse_int_range(usage, val, &ci))) return rc;
    } else if (!strcmp(a, "--json"))
      json = true;
    else if (a[0] == '-' || model_path)
      return cli_bad_arg(usage, a);
    else
      model_path = a;
  }
  if (!model_path) return cli_usage(usage, "run needs a MODEL");

  ait_model *own_model = NULL;
  const ait_model *model = NULL;
  ait_module *mod = NULL;
  ait_session *sess = NULL;
  ait_status st;
  if (cli_is_tuned_dir(model_path)) {
    if (backend) return cli_usage(usage, "--backend does not apply to a tuned model folder");
    if ((st = ait_module_load_opts(model_path, cli_log, NULL, &lo, &mod)))
      return cli_fail(st, "cannot load the tuned model");
    model = ait_module_model(mod);
  } else {
    if ((st = ait_model_load_opts(model_path, &lo, &own_model)))
      return cli_fail(st, "cannot load model");
    model = own_model;
  }
  rc = 0;
  size_t n_in = ait_model_num_inputs(model), n_out = ait_model_num_outputs(model);
  ait_sample in = {0};
  ait_tensor_view *views = calloc(n_in + 1, sizeof *views);
  if (!views) {
    rc = cli_fail(ait_err(AIT_E_NOMEM, "out of memory"), "run");
    goto out;
  }
  if ((st = cli_build_sample(ait_model_graph(model), in_dir, &ci, CLI_AT_OPT, &in))) {
    rc = cli_fail(st, "cannot prepare inputs");
    goto out;
  }
  for (size_t i = 0; i < n_in; i++) {
    const ait_tensor *t = in.inputs[i];
    if (t->kind != AIT_KIND_TENSOR) {
      if (mod) { /* a tuned module takes dense tensors only; a session takes any value */
        rc = cli_fail(ait_err(AIT_E_UNSUPPORTED, "input %zu is not a tensor", i), "run");
        goto out;
      }
      continue;
    }
    views[i].dtype = t->dtype;
    views[i].rank = t->rank;
    memcpy(views[i].dims, t->dims, sizeof views[i].dims);
    views[i].data = t->data;
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
    if ((st = ait_session_run_values(sess, (const ait_tensor *const *)in.inputs, n_in)) != AIT_OK) {
      rc = cli_fail(st, "run failed");
      goto out;
    }
  }
  if (out_dir) mkdir(out_dir, 0777); /* may exist already; a write error names it below */
  cJSON *root = json ? cJSON_CreateObject() : NULL, *outs = NULL;
  if (root) {
    cJSON_AddStringToObject(root, "model", model_path);
    cJSON_AddStringToObject(root, "backend",
                            mod       ? ait_module_backend(mod)
                            : backend ? backend
                                      : "eager");
    outs = cJSON_AddArrayToObject(root, "outputs");
  }
  for (size_t i = 0; i < n_out; i++) {
    ait_tensor_info info;
    ait_model_output(model, i, &info);
    /* a tuned module's outputs through the public API: a view, borrowed as a tensor */
    ait_tensor_view v;
    ait_tensor *wrapped = NULL;
    if (mod && (st = ait_module_output(mod, i, &v)) == AIT_OK && !(wrapped = ait_api_wrap_view(&v)))
      st = AIT_E_NOMEM;
    if (mod && st) {
      cJSON_Delete(root);
      rc = cli_fail(st, "cannot read the outputs");
      goto out;
    }
    const ait_tensor *t = mod ? wrapped : sess->outputs[i];
    if (out_dir) {
      char name[64];
      snprintf(name, sizeof name, "output_%zu.%s", i, npy ? "npy" : "pb");
      char *p = ait_path_join(out_dir, name);
      const ait_graph *g = ait_model_graph(model);
      st = !p    ? AIT_E_NOMEM
           : npy ? cli_npy_write(p, t)
                 : ait_value_file_write(p, t, g->values[g->outputs[i]].type, info.name);
      free(p);
      if (st) {
        ait_tensor_free(wrapped);
        cJSON_Delete(root);
        rc = cli_fail(st, "cannot write outputs");
        goto out;
      }
    }
    if (outs)
      cJSON_AddItemToArray(outs, cli_summary_json(info.name, t));
    else if (!out_dir)
      cli_print_summary(stdout, info.name, t);
    ait_tensor_free(wrapped);
  }
  if (out_dir && !root) printf("wrote %zu outputs to %s\n", n_out, out_dir);
  if (root) rc = cli_print_json(root);
out:
  ait_sample_free(&in);
  free(views);
  ait_session_free(sess);
  ait_model_free(own_model);
  ait_module_free(mod);
  return rc;
}
