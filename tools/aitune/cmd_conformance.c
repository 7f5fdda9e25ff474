/* aitune conformance: run folders in the ONNX backend-test layout
 * (model.onnx, test_data_set_N/input_K.pb, output_K.pb) and compare.
 * Each test runs in its own process (as libuv's test runner does), so a
 * crash or a hang fails that test and the run goes on. */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "api/model_impl.h"
#include "cli.h"
#include "core/error.h"
#include "core/fileio.h"
#include "onnx/onnx_io.h"

static const char usage[] =
    "usage: aitune conformance [--backend NAME] [--timeout SEC] [--min-pass N] DIR...\n"
    "  DIR is one test folder (holding model.onnx) or a folder of test folders.\n"
    "  Prints one line per test (PASS/FAIL/SKIP name [reason]) and then\n"
    "  'N passed, N failed, N skipped'. Exits 1 when a test fails, unless\n"
    "  --min-pass is given: then exits 1 only when fewer than N tests pass.\n";

static bool is_file(const char *p) {
  struct stat sb;
  return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}
static bool is_dir(const char *p) {
  struct stat sb;
  return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* Run one data set; returns 0 pass, 1 fail (why filled). */
static int run_data_set(const ait_model *model, ait_session *sess, const char *set_dir, char *why,
                        size_t n) {
  size_t n_in = ait_model_num_inputs(model), n_out = ait_model_num_outputs(model);
  ait_tensor *ins[64] = {0};
  int rc = 1;
  if (n_in > 64) {
    snprintf(why, n, "too many inputs");
    return 1;
  }
  for (size_t i = 0; i < n_in; i++) {
    char name[64];
    snprintf(name, sizeof name, "input_%zu.pb", i);
    char *p = ait_path_join(set_dir, name);
    const ait_graph *g = ait_model_graph(model);
    ait_status st = cli_read_tensor_for(p, &g->values[g->inputs[i]], &ins[i]);
    free(p);
    if (st) {
      snprintf(why, n, "cannot decode %s: %s", name, ait_last_error());
      goto out;
    }
  }
  ait_status st = ait_session_run_values(sess, (const ait_tensor *const *)ins, n_in);
  if (st) {
    snprintf(why, n, "run failed: %s", ait_last_error());
    goto out;
  }
  for (size_t i = 0; i < n_out; i++) {
    char name[64];
    snprintf(name, sizeof name, "output_%zu.pb", i);
    char *p = ait_path_join(set_dir, name);
    ait_tensor *want = NULL;
    const ait_graph *g = ait_model_graph(model);
    st = cli_read_tensor_for(p, &g->values[g->outputs[i]], &want);
    free(p);
    if (st) {
      snprintf(why, n, "cannot decode %s: %s", name, ait_last_error());
      goto out;
    }
    char reason[400];
    bool ok = cli_compare(sess->outputs[i], want, reason, sizeof reason);
    ait_tensor_free(want);
    if (!ok) {
      ait_tensor_info info;
      ait_model_output(model, i, &info);
      snprintf(why, n, "output %zu ('%s'): %s", i, info.name, reason);
      goto out;
    }
  }
  rc = 0;
out:
  for (size_t i = 0; i < n_in; i++)
    ait_tensor_free(ins[i]);
  return rc;
}

static int name_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names of entries of dir that start with prefix. Caller frees. */
static char **list_dir(const char *dir, const char *prefix, int *count) {
  DIR *d = opendir(dir);
  char **names = NULL;
  int n = 0, cap = 0;
  *count = 0;
  if (!d) return NULL;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.' || strncmp(e->d_name, prefix, strlen(prefix))) continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 64;
      char **nn = realloc(names, sizeof(char *) * (size_t)cap);
      if (!nn) break;
      names = nn;
    }
    names[n++] = strdup(e->d_name);
  }
  closedir(d);
  if (n) qsort(names, (size_t)n, sizeof *names, name_cmp);
  *count = n;
  return names;
}

static void free_list(char **names, int n) {
  for (int i = 0; i < n; i++)
    free(names[i]);
  free(names);
}

/* The test itself, in the child process. Writes "PASS" / "FAIL reason" /
 * "SKIP reason" to fd. */
static void child_test(const char *test_dir, const char *backend, int fd) {
  char why[600] = "";
  const char *verdict = "FAIL";
  char *model_path = ait_path_join(test_dir, "model.onnx");
  ait_model *model = NULL;
  ait_session *sess = NULL;
  int n_sets = 0;
  char **sets = list_dir(test_dir, "test_data_set_", &n_sets);
  ait_status st = ait_model_load(model_path, &model);
  if (st)
    snprintf(why, sizeof why, "load: %s", ait_last_error());
  else if ((st = ait_session_create(model, backend, &sess)))
    snprintf(why, sizeof why, "%s", ait_last_error());
  else if (n_sets == 0) {
    verdict = "SKIP";
    snprintf(why, sizeof why, "no test_data_set_N folders");
  } else {
    verdict = "PASS";
    for (int i = 0; i < n_sets; i++) {
      char *set_dir = ait_path_join(test_dir, sets[i]);
      char sub[560];
      int bad = run_data_set(model, sess, set_dir, sub, sizeof sub);
      free(set_dir);
      if (bad) {
        verdict = "FAIL";
        snprintf(why, sizeof why, "%s: %s", sets[i], sub);
        break;
      }
    }
  }
  char line[700];
  int len = snprintf(line, sizeof line, "%s%s%s", verdict, why[0] ? " " : "", why);
  if (write(fd, line, (size_t)(len < (int)sizeof line ? len : (int)sizeof line - 1)) < 0) {
    /* the parent reports a missing verdict */
  }
  free_list(sets, n_sets);
  ait_session_free(sess);
  ait_model_free(model);
  free(model_path);
}

/* Fork, run, and collect one test's verdict line into buf. */
static void run_isolated(const char *test_dir, const char *backend, int timeout_s, char *buf,
                         size_t n) {
  int fds[2];
  if (pipe(fds) != 0) {
    snprintf(buf, n, "FAIL cannot create a pipe: %s", strerror(errno));
    return;
  }
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(buf, n, "FAIL cannot fork: %s", strerror(errno));
    close(fds[0]);
    close(fds[1]);
    return;
  }
  if (pid == 0) {
    close(fds[0]);
    child_test(test_dir, backend, fds[1]);
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  size_t got = 0;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  bool timed_out = false;
  for (;;) {
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long left_ms = timeout_s * 1000L -
                   ((t1.tv_sec - t0.tv_sec) * 1000L + (t1.tv_nsec - t0.tv_nsec) / 1000000L);
    if (left_ms <= 0) {
      timed_out = true;
      break;
    }
    struct pollfd p = {fds[0], POLLIN, 0};
    int r = poll(&p, 1, (int)left_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    ssize_t k = read(fds[0], buf + got, n - 1 - got);
    if (k <= 0) break;
    got += (size_t)k;
    if (got >= n - 1) break;
  }
  buf[got] = '\0';
  close(fds[0]);
  int status = 0;
  if (timed_out) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    snprintf(buf, n, "FAIL timed out after %d s", timeout_s);
    return;
  }
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status))
    snprintf(buf, n, "FAIL crashed with signal %d", WTERMSIG(status));
  else if (got == 0)
    snprintf(buf, n, "FAIL no verdict (exit status %d)", WEXITSTATUS(status));
}

int cmd_conformance(int argc, char **argv) {
  const char *backend = "eager";
  int timeout_s = 120;
  long min_pass = -1;
  int first_dir = 0;
  char **dirs = calloc((size_t)argc + 1, sizeof *dirs);
  int n_dirs = 0;
  if (!dirs) return cli_fail(ait_err(AIT_E_NOMEM, "out of memory"), "conformance");
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (cli_is_help(a)) {
      fputs(usage, stdout);
      free(dirs);
      return 0;
    }
    const char *val;
    int rc = 0;
    long long v;
    if (cli_opt(argc, argv, &i, "--backend", &val))
      backend = val;
    else if (cli_opt(argc, argv, &i, "--timeout", &val)) {
      if (!(rc = cli_int(usage, "--timeout", val, 1, 1000000, &v))) timeout_s = (int)v;
    } else if (cli_opt(argc, argv, &i, "--min-pass", &val)) {
      if (!(rc = cli_int(usage, "--min-pass", val, 0, CLI_NO_MAX, &v))) min_pass = (long)v;
    } else if (a[0] == '-')
      rc = cli_bad_arg(usage, a);
    else
      dirs[n_dirs++] = argv[i];
    if (rc) {
      free(dirs);
      return rc;
    }
  }
  (void)first_dir;
  if (n_dirs == 0) {
    free(dirs);
    return cli_usage(usage, "conformance needs at least one DIR");
  }
  if (timeout_s <= 0) timeout_s = 120;
  long passed = 0, failed = 0, skipped = 0;
  for (int d = 0; d < n_dirs; d++) {
    char *model = ait_path_join(dirs[d], "model.onnx");
    bool single = is_file(model);
    free(model);
    int n_tests = 0;
    char **tests = NULL;
    if (!single) {
      if (!is_dir(dirs[d])) {
        printf("FAIL %s: not a test folder or a folder of tests\n", dirs[d]);
        failed++;
        continue;
      }
      tests = list_dir(dirs[d], "", &n_tests);
    }
    for (int t = 0; t < (single ? 1 : n_tests); t++) {
      char *test_dir = single ? strdup(dirs[d]) : ait_path_join(dirs[d], tests[t]);
      char *m = ait_path_join(test_dir, "model.onnx");
      bool has_model = is_file(m);
      free(m);
      if (!has_model) {
        free(test_dir);
        continue;
      }
      char verdict[800];
      run_isolated(test_dir, backend, timeout_s, verdict, sizeof verdict);
      const char *sp = strchr(verdict, ' ');
      size_t vlen = sp ? (size_t)(sp - verdict) : strlen(verdict);
      printf("%.*s %s%s%s\n", (int)vlen, verdict, test_dir, sp ? ": " : "", sp ? sp + 1 : "");
      fflush(stdout);
      if (!strncmp(verdict, "PASS", 4))
        passed++;
      else if (!strncmp(verdict, "SKIP", 4))
        skipped++;
      else
        failed++;
      free(test_dir);
    }
    free_list(tests, n_tests);
  }
  free(dirs);
  printf("%ld passed, %ld failed, %ld skipped\n", passed, failed, skipped);
  if (min_pass >= 0) {
    if (passed < min_pass) {
      fprintf(stderr, "aitune: conformance: %ld tests passed, below the floor of %ld\n", passed,
              min_pass);
      return 1;
    }
    return 0;
  }
  return failed ? 1 : 0;
}
