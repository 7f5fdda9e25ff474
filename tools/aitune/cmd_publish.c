/* aitune publish: write a tuned folder into a Triton model repository, as a
 * python-backend model that runs it through the aitune_c package. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "core/error.h"
#include "core/fileio.h"
#include "publish.h"

static const char usage[] =
    "usage: aitune publish DIR --triton REPO [options]\n"
    "  DIR                      a tuned model folder (aitune tune --out DIR)\n"
    "  --triton REPO            the Triton model repository (created if needed);\n"
    "                           writes REPO/NAME/config.pbtxt and REPO/NAME/1/ (model.py\n"
    "                           and a copy of DIR), replacing only an earlier publish\n"
    "  --name N                 the model's name (default: DIR's base name); letters,\n"
    "                           digits, '_', '-', '.', not starting with '.'\n"
    "  --instances K            instance_group count (default: the tuned machine's cores)\n"
    "  --max-batch-size B       cap of dynamic batching (default: the tuned batch)\n"
    "  --max-queue-delay-us U   how long a request may wait for a batch (default 100)\n"
    "  --no-dynamic-batching    no dynamic_batching block\n"
    "  --triton-backend B       python (default): a model.py on Triton's python backend, one\n"
    "                           process and one copy of the weights per instance; aitune: the\n"
    "                           C backend libtriton_aitune.so, instances as threads of the\n"
    "                           server sharing one copy (ait_module_clone)\n" CLI_LOAD_USAGE
    "Serving it needs the aitune_c package in the server's Python (python backend) or\n"
    "libtriton_aitune.so in the server's backends/aitune/ (docs/serving.md).\n";

#define PUB_MARK "# Written by `aitune publish`"

typedef struct pub_args {
  const char *dir, *repo, *name;
  int instances, max_batch;
  long long delay_us;
  bool no_dynamic;
  const char *backend; /* "python" or "aitune" */
  ait_load_options lo; /* to load DIR's model */
} pub_args;

static int parse(int argc, char **argv, pub_args *a) {
  *a = (pub_args){.delay_us = 100, .backend = "python"};
  ait_load_options_init(&a->lo);
  for (int i = 1; i < argc; i++) {
    const char *v;
    int rc = 0;
    if (cli_is_help(argv[i])) {
      fputs(usage, stdout);
      return -1;
    }
    if (cli_load_limit(usage, argc, argv, &i, &a->lo, &rc)) {
      /* rc says how the value parsed */
    } else if (cli_opt(argc, argv, &i, "--triton", &v))
      a->repo = v;
    else if (cli_opt(argc, argv, &i, "--name", &v))
      a->name = v;
    else if (cli_opt(argc, argv, &i, "--instances", &v))
      rc = cli_int32(usage, "--instances", v, 1, 1024, &a->instances);
    else if (cli_opt(argc, argv, &i, "--max-batch-size", &v))
      rc = cli_int32(usage, "--max-batch-size", v, 1, 1 << 20, &a->max_batch);
    else if (cli_opt(argc, argv, &i, "--max-queue-delay-us", &v))
      rc = cli_int(usage, "--max-queue-delay-us", v, 0, 60000000, &a->delay_us);
    else if (cli_opt(argc, argv, &i, "--triton-backend", &v)) {
      if (strcmp(v, "python") && strcmp(v, "aitune"))
        return cli_usage(usage, "--triton-backend takes python or aitune");
      a->backend = v;
    } else if (!strcmp(argv[i], "--no-dynamic-batching"))
      a->no_dynamic = true;
    else if (argv[i][0] == '-' || a->dir)
      return cli_bad_arg(usage, argv[i]);
    else
      a->dir = argv[i];
    if (rc) return rc;
  }
  if (!a->dir) return cli_usage(usage, "publish needs a tuned model folder DIR");
  if (!a->repo) return cli_usage(usage, "publish needs --triton REPO");
  return 0;
}

/* Triton takes a model's name from its folder: one path component, and a
 * leading '.' would hide it. */
static bool name_ok(const char *s) {
  size_t n = strlen(s);
  if (!n || n > 128 || s[0] == '.') return false;
  for (; *s; s++)
    if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.", *s))
      return false;
  return true;
}

/* The default name: DIR's last component with characters Triton's folder
 * names do not take replaced by '_'. */
static void default_name(const char *dir, char *out, size_t n) {
  size_t len = strlen(dir);
  while (len > 1 && dir[len - 1] == '/')
    len--;
  size_t start = len;
  while (start > 0 && dir[start - 1] != '/')
    start--;
  size_t k = 0;
  for (size_t i = start; i < len && k + 1 < n; i++, k++)
    out[k] = strchr("/ \"\\", dir[i]) || (k == 0 && dir[i] == '.') ? '_' : dir[i];
  out[k] = 0;
  if (!k) snprintf(out, n, "model");
}

static cJSON *read_json(const char *dir, const char *file) {
  char *p = ait_path_join(dir, file);
  void *text = NULL;
  size_t size = 0;
  cJSON *j = NULL;
  if (p && ait_read_file(p, &text, &size) == AIT_OK) j = cJSON_Parse(text);
  free(text);
  free(p);
  return j;
}

/* "cores=N" of a fingerprint string; 1 when absent. */
static int fingerprint_cores(const cJSON *decision) {
  const cJSON *fp = cJSON_GetObjectItemCaseSensitive(decision, "fingerprint");
  const char *s = cJSON_IsString(fp) ? strstr(fp->valuestring, "cores=") : NULL;
  int cores = s ? atoi(s + 6) : 0;
  return cores > 0 ? cores : 1;
}

/* Batching is on when the graph spec says the model has a batch axis and
 * every input and output has axis 0 not fixed (Triton drops it from dims). */
static bool batch_axis_ok(const cJSON *decision, const ait_model *m) {
  const cJSON *spec = cJSON_GetObjectItemCaseSensitive(decision, "graph_spec");
  if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(spec, "has_batch"))) return false;
  const cJSON *ax;
  cJSON_ArrayForEach(ax, cJSON_GetObjectItemCaseSensitive(spec, "axes")) {
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ax, "batch")) &&
        cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(ax, "axis")) != 0)
      return false;
  }
  for (int out = 0; out < 2; out++) {
    size_t n = out ? ait_model_num_outputs(m) : ait_model_num_inputs(m);
    for (size_t i = 0; i < n; i++) {
      ait_tensor_info v;
      if ((out ? ait_model_output(m, i, &v) : ait_model_input(m, i, &v)) != AIT_OK) return false;
      if (v.rank < 1 || v.dims[0] >= 0) return false;
    }
  }
  return true;
}

/* Preferred batch sizes: those the selected candidate was profiled at, up
 * to the cap; under a latency budget only the budget's pick (the decided
 * batch), since larger batches broke it. */
static int preferred_sizes(const cJSON *report, int decided, int cap, int *out) {
  const cJSON *strat = cJSON_GetObjectItemCaseSensitive(report, "strategy");
  const cJSON *sname = cJSON_GetObjectItemCaseSensitive(strat, "name");
  int n = 0;
  if (cJSON_IsString(sname) && !strcmp(sname->valuestring, "latency-budget")) {
    out[n++] = decided < cap ? decided : cap;
    return n;
  }
  const cJSON *c;
  cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(report, "candidates")) {
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(c, "status");
    if (!cJSON_IsString(status) || strcmp(status->valuestring, "selected")) continue;
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(c, "profile")) {
      int b = (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(p, "batch"));
      bool seen = false;
      for (int k = 0; k < n; k++)
        seen |= out[k] == b;
      if (b >= 1 && b <= cap && !seen && n < PUB_MAX_BATCHES) out[n++] = b;
    }
  }
  for (int i = 1; i < n; i++) /* ascending */
    for (int k = i; k > 0 && out[k - 1] > out[k]; k--) {
      int t = out[k];
      out[k] = out[k - 1];
      out[k - 1] = t;
    }
  if (!n) out[n++] = cap;
  return n;
}

static ait_status write_text(const char *dir, const char *file, const char *text, size_t n) {
  char *p = ait_path_join(dir, file);
  if (!p) return ait_err(AIT_E_NOMEM, "out of memory");
  ait_status st = ait_write_file_atomic(p, text, n);
  free(p);
  return st;
}

/* Fill the staging folder: config.pbtxt, 1/model.py, 1/aitune/ (the copy). */
static ait_status stage(const char *tmp, const char *dir, const pub_config *c) {
  char *ver = ait_path_join(tmp, "1"), *copy = ver ? ait_path_join(ver, "aitune") : NULL;
  char *text = NULL;
  size_t n = 0;
  ait_status st = AIT_OK;
  FILE *f = NULL;
  if (!ver || !copy) st = ait_err(AIT_E_NOMEM, "out of memory");
  if (!st && mkdir(ver, 0755)) st = ait_err(AIT_E_IO, "cannot create %s: %s", ver, strerror(errno));
  if (!st) st = pub_copy_tree(dir, copy);
  if (!st && !strcmp(c->backend, "python"))
    st = write_text(ver, "model.py", pub_model_py, strlen(pub_model_py));
  if (!st && !(f = open_memstream(&text, &n))) st = ait_err(AIT_E_NOMEM, "out of memory");
  if (!st) st = pub_write_config(f, c);
  if (f && fclose(f) && !st) st = ait_err(AIT_E_NOMEM, "out of memory");
  if (!st) st = write_text(tmp, "config.pbtxt", text, n);
  free(text);
  free(copy);
  free(ver);
  return st;
}

/* An existing REPO/NAME is replaced only when an earlier publish wrote it. */
static bool is_published(const char *path) {
  char *p = ait_path_join(path, "config.pbtxt");
  void *text = NULL;
  size_t size = 0;
  bool ok =
      p && ait_read_file(p, &text, &size) == AIT_OK && !strncmp(text, PUB_MARK, strlen(PUB_MARK));
  free(text);
  free(p);
  return ok;
}

/* Build REPO/.NAME.tmp-PID, then swap it in with renames: a server polling
 * the repository sees the old model or the new one, never half of one. */
static ait_status publish_into(const char *repo, const char *name, const char *dir,
                               const pub_config *c) {
  struct stat rs;
  if (!stat(repo, &rs) && !S_ISDIR(rs.st_mode))
    return ait_err(AIT_E_IO, "%s is not a folder; --triton names a model repository", repo);
  AIT_TRY(ait_mkdir_p(repo));
  if (access(repo, W_OK)) return ait_err(AIT_E_IO, "cannot write to %s: %s", repo, strerror(errno));
  char tmp_name[200], old_name[200];
  snprintf(tmp_name, sizeof tmp_name, ".%s.tmp-%ld", name, (long)getpid());
  snprintf(old_name, sizeof old_name, ".%s.old-%ld", name, (long)getpid());
  char *dst = ait_path_join(repo, name), *tmp = ait_path_join(repo, tmp_name),
       *old = ait_path_join(repo, old_name);
  ait_status st = dst && tmp && old ? AIT_OK : ait_err(AIT_E_NOMEM, "out of memory");
  struct stat sb;
  bool exists = !st && !lstat(dst, &sb);
  if (exists && !is_published(dst))
    st = ait_err(AIT_E_INVALID_ARG,
                 "%s exists and was not written by aitune publish; not replacing it", dst);
  if (!st) st = pub_remove_tree(tmp);
  if (!st && mkdir(tmp, 0755)) st = ait_err(AIT_E_IO, "cannot create %s: %s", tmp, strerror(errno));
  if (!st) st = stage(tmp, dir, c);
  if (!st && exists && rename(dst, old))
    st = ait_err(AIT_E_IO, "cannot move the earlier %s aside: %s", dst, strerror(errno));
  if (!st && rename(tmp, dst)) {
    st = ait_err(AIT_E_IO, "cannot rename %s to %s: %s", tmp, dst, strerror(errno));
    if (exists) rename(old, dst); /* put the earlier one back */
  }
  if (!st && exists) pub_remove_tree(old);
  if (st && tmp) pub_remove_tree(tmp);
  free(dst);
  free(tmp);
  free(old);
  return st;
}

int cmd_publish(int argc, char **argv) {
  pub_args a;
  int rc = parse(argc, argv, &a);
  if (rc) return rc < 0 ? 0 : rc;
  char name[129];
  if (a.name && !name_ok(a.name))
    return cli_usage(usage,
                     "--name '%s' is not a model name: 1 to 128 letters, digits, '_', '-', '.', "
                     "not starting with '.'",
                     a.name);
  if (a.name)
    snprintf(name, sizeof name, "%s", a.name);
  else
    default_name(a.dir, name, sizeof name);
  /* Loading checks the folder (manifest, decision, backend state) and warns
   * when this machine's fingerprint differs from the tuning one: the copy
   * served here runs as it was tuned elsewhere. */
  ait_module *m = NULL;
  ait_status st = ait_module_load_opts(a.dir, cli_log, NULL, &a.lo, &m);
  if (st) {
    fprintf(stderr, "aitune: %s is not a tuned model folder (aitune tune --out DIR)\n", a.dir);
    return cli_fail(st, "cannot load the tuned model");
  }
  cJSON *decision = read_json(a.dir, "decision.json"), *report = read_json(a.dir, "report.json");
  if (!decision || !report) {
    fprintf(stderr, "aitune: %s: decision.json or report.json is missing or not JSON\n", a.dir);
    rc = 1;
    goto done;
  }
  const ait_model *model = ait_module_model(m);
  pub_config c = {.name = name,
                  .backend = a.backend,
                  .source = a.dir,
                  .model = model,
                  .queue_delay_us = a.delay_us,
                  .instances = a.instances ? a.instances : fingerprint_cores(decision)};
  int decided = ait_module_batch_size(m);
  if (batch_axis_ok(decision, model)) {
    c.max_batch_size = a.max_batch ? a.max_batch : decided > 0 ? decided : 1;
    if (!a.no_dynamic)
      c.n_preferred = preferred_sizes(report, decided, c.max_batch_size, c.preferred);
  } else if (a.max_batch) {
    fprintf(stderr, "aitune: --max-batch-size: the model has no batch axis 0 that varies\n");
    rc = 2;
    goto done;
  }
  st = publish_into(a.repo, name, a.dir, &c);
  if (st) {
    rc = cli_fail(st, "cannot publish");
    goto done;
  }
  fprintf(stderr, "aitune: published %s as %s/%s (max_batch_size %d, %d instance%s)\n", a.dir,
          a.repo, name, c.max_batch_size, c.instances, c.instances == 1 ? "" : "s");
done:
  cJSON_Delete(decision);
  cJSON_Delete(report);
  ait_module_free(m);
  return rc;
}
