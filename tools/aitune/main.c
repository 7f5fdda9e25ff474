/* aitune: command-line entry point; one function per command. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "core/error.h"

static const char usage[] =
    "usage: aitune <command> [options]\n"
    "\n"
    "commands:\n"
    "  info MODEL [--ops]        describe a model (inputs, outputs, opsets, ops, size, FLOPs);\n"
    "                            --ops prints the operator support table instead\n"
    "  run MODEL|DIR [options]   run a model on a backend, or a tuned model folder\n"
    "  conformance DIR...        run ONNX backend-test folders and compare outputs\n"
    "  tune MODEL --out DIR      build, validate and profile every backend; keep the best\n"
    "  report DIR                print the report of a tuned model\n"
    "  bench MODEL|DIR           time one backend or a tuned model\n"
    "  backends                  list backends, their availability and options\n"
    "  batch MODEL               best batch size for a backend, learned across runs\n"
    "  hw                        CPU, RAM, GPUs, memory pressure and the fingerprint\n"
    "  profile MODEL             time per node and per op type on a backend\n"
    "  publish DIR --triton REPO write a tuned folder into a Triton model repository\n"
    "  version                   print the version\n"
    "\n"
    "Run 'aitune <command> --help' for a command's options. Options take their value\n"
    "as --opt VALUE or --opt=VALUE; --json prints one JSON document instead of text\n"
    "(info, run, tune, report, bench, profile, batch, backends, hw; schemas/).\n";

int cli_fail(ait_status st, const char *what) {
  const char *msg = ait_last_error();
  fprintf(stderr, "aitune: %s: %s%s%s\n", what, ait_strerror(st), msg[0] ? ": " : "", msg);
  return 1;
}

int cli_usage(const char *use, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "aitune: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n%s", use);
  va_end(ap);
  return 2;
}

bool cli_is_help(const char *arg) { return !strcmp(arg, "-h") || !strcmp(arg, "--help"); }

int main(int argc, char **argv) {
  if (argc < 2) {
    fputs(usage, stderr);
    return 2;
  }
  const char *cmd = argv[1];
  if (cli_is_help(cmd) || !strcmp(cmd, "help")) {
    fputs(usage, stdout);
    return 0;
  }
  if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
    printf("aitune %s\n", ait_version());
    return 0;
  }
  if (!strcmp(cmd, "info")) return cmd_info(argc - 1, argv + 1);
  if (!strcmp(cmd, "run")) return cmd_run(argc - 1, argv + 1);
  if (!strcmp(cmd, "conformance")) return cmd_conformance(argc - 1, argv + 1);
  if (!strcmp(cmd, "tune")) return cmd_tune(argc - 1, argv + 1);
  if (!strcmp(cmd, "report")) return cmd_report(argc - 1, argv + 1);
  if (!strcmp(cmd, "bench")) return cmd_bench(argc - 1, argv + 1);
  if (!strcmp(cmd, "backends")) return cmd_backends(argc - 1, argv + 1);
  if (!strcmp(cmd, "batch")) return cmd_batch(argc - 1, argv + 1);
  if (!strcmp(cmd, "hw")) return cmd_hw(argc - 1, argv + 1);
  if (!strcmp(cmd, "profile")) return cmd_profile(argc - 1, argv + 1);
  if (!strcmp(cmd, "publish")) return cmd_publish(argc - 1, argv + 1);
  fprintf(stderr, "aitune: unknown command '%s'\n%s", cmd, usage);
  return 2;
}
