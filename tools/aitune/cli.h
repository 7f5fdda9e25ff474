/* Shared pieces of the aitune command-line tool. The CLI is a client of the
 * library; it uses internal headers only for TensorProto files and the
 * model's graph (for `info`). */
#ifndef AIT_CLI_H
#define AIT_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "aitune.h"
#include "core/tensor.h"

int cmd_info(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_conformance(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_backends(int argc, char **argv);
int cmd_batch(int argc, char **argv);
int cmd_hw(int argc, char **argv);
int cmd_profile(int argc, char **argv);

struct ait_graph;
struct ait_sample;
struct ait_graph_spec;
/* Inputs for timing: input_K.pb files of in_dir, or seeded random values of
 * the declared shapes; then symbolic axes named in dim_name sized to
 * dim_value (--dim seq=128). *spec receives the dynamic axes. */
ait_status cli_make_sample(const struct ait_graph *g, const char *in_dir, char (*dim_name)[64],
                           const int64_t *dim_value, int n_dims, struct ait_sample *base,
                           struct ait_graph_spec *spec);

/* Print a tuning report (JSON text) as a table; 1 when it is not a report. */
int cli_print_report(FILE *f, const char *json);
/* Progress/warning sink for tuning: one line to stderr. */
void cli_log(void *user, int is_warning, const char *line);
/* True when path is a folder: a model is a file, so it must be a tuned model
 * (loading it says what is missing). */
bool cli_is_tuned_dir(const char *path);

/* Print "aitune: <what>: <library message>" to stderr; returns 1 (exit code). */
int cli_fail(ait_status st, const char *what);
/* Print a usage error to stderr; returns 2. */
int cli_usage(const char *usage, const char *fmt, ...);
/* True when argv[i] is -h or --help. */
bool cli_is_help(const char *arg);

/* Tolerances of the numeric comparison, per dtype (docs/conformance.md). */
typedef struct cli_tol {
  double rtol, atol;
} cli_tol;
cli_tol cli_tolerance(ait_dtype dt);
/* Compare got with want: shapes, dtypes, values (exact for integers, bools,
 * strings; |got - want| <= atol + rtol * |want| for floats, NaN == NaN).
 * On mismatch writes a reason into why and returns false. */
bool cli_compare(const ait_tensor *got, const ait_tensor *want, char *why, size_t n);

struct ait_value;
/* Read the file of a graph input/output declared as `decl`: a TensorProto,
 * or for sequences and optionals onnx-data.proto's SequenceProto /
 * OptionalProto (ait_value_file_read). ONNX <= 1.12 wrote bfloat16 test data
 * with data_type UINT16: such a file read for a bfloat16 declaration is taken
 * as the bfloat16 bit patterns it holds. */
ait_status cli_read_tensor_for(const char *path, const struct ait_value *decl, ait_tensor **out);

/* Fill t with seeded pseudo-random values suited to its dtype. */
void cli_fill_random(ait_tensor *t, unsigned long long *seed);
/* One-line summary of a tensor: dtype, shape, min/max/mean, first values. */
void cli_print_summary(FILE *f, const char *name, const ait_tensor *t);

#endif
