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
int cmd_publish(int argc, char **argv);

struct ait_graph;
struct ait_sample;
struct ait_graph_spec;
struct ait_value;

/* ---- arguments (cli_args.c) ---- */

/* argv[*i] is `name VALUE` or `name=VALUE`: *val gets VALUE and *i moves
 * past it. False for another option, or `name` with no value left. */
bool cli_opt(int argc, char **argv, int *i, const char *name, const char **val);
/* cli_opt for any of a NULL-terminated list of names (aliases). */
bool cli_opt_any(int argc, char **argv, int *i, const char *const *names, const char **val);
/* The usage error for an argument no option took (exit code 2). */
int cli_bad_arg(const char *use, const char *arg);
#define CLI_NO_MAX 9223372036854775807LL
/* Parse a whole integer (or number) in [lo, hi] for `flag`: 0 and *out, or
 * a usage error naming the flag and the value (returns 2). */
int cli_int(const char *use, const char *flag, const char *text, long long lo, long long hi,
            long long *out);
int cli_int32(const char *use, const char *flag, const char *text, int lo, int hi, int *out);
/* The load limits (ait_load_options) of info, run and tune: when argv[*i]
 * is one of the flags below, parse it into *lo (range-checked, naming the
 * flag) and return true with *rc 0 or the usage error's code; false for
 * another argument. */
bool cli_load_limit(const char *use, int argc, char **argv, int *i, ait_load_options *lo, int *rc);
#define CLI_LOAD_USAGE                                                                             \
  "  --max-depth N           load limit: protobuf nesting (default 100, about 32\n"                \
  "                          subgraphs inside each other; at most 1000)\n"                         \
  "  --max-nodes N           load limit: nodes, subgraphs' included (default 10000000)\n"          \
  "  --max-tensor-bytes N    load limit: one tensor's bytes (default 2^40)\n"                      \
  "  --max-fold-elements N   load-time constant folding keeps results this small\n"                \
  "                          (default 4096)\n"
int cli_double(const char *use, const char *flag, const char *text, double lo, double hi,
               double *out);

/* ---- inputs (cli_inputs.c) ---- */

#define CLI_MAX_DIMS 16
/* --dim NAME=V or --shape NAME=MIN:OPT:MAX: NAME is a symbolic dim of the
 * model or INPUT:AXIS. */
typedef struct cli_dim {
  char name[128];
  int64_t min, opt, max;
} cli_dim;
/* --int-range [INPUT=]LO:HI: random integers for one input (or all). */
typedef struct cli_int_range {
  char input[128]; /* "" = every integer input */
  long long lo, hi;
} cli_int_range;
typedef struct cli_inputs {
  cli_dim dims[CLI_MAX_DIMS];
  int n_dims;
  cli_int_range ints[CLI_MAX_DIMS];
  int n_ints;
  unsigned long long seed; /* of random inputs; 0 = 1 */
} cli_inputs;
typedef enum cli_point { CLI_AT_OPT, CLI_AT_MIN, CLI_AT_MAX } cli_point;

/* Parse one --dim (range false) or --shape (range true) into ci; 0, or a
 * usage error (2). */
int cli_parse_dim(const char *use, const char *flag, const char *text, bool range, cli_inputs *ci);
/* Parse one --int-range into ci; 0 or 2. */
int cli_parse_int_range(const char *use, const char *text, cli_inputs *ci);
/* Every dim of ci names an axis of g's inputs that may vary; else an error
 * that lists the model's dynamic axes. */
ait_status cli_check_dims(const struct ait_graph *g, const cli_inputs *ci);
/* Input k of a folder: input_K.pb (TensorProto) or input_K.npy, for the
 * graph input declared as decl. *out is new (caller frees). */
ait_status cli_read_input(const char *dir, int k, const struct ait_value *decl, ait_tensor **out);
/* One sample: the files of dir (NULL: seeded random values of the declared
 * shapes, symbolic dims 1), with the axes ci names sized to their value at
 * `at`. *out owns its tensors (ait_sample_free). */
ait_status cli_build_sample(const struct ait_graph *g, const char *dir, const cli_inputs *ci,
                            cli_point at, struct ait_sample *out);
/* cli_build_sample at OPT, and *spec its dynamic axes (for timing). */
ait_status cli_make_sample(const struct ait_graph *g, const char *in_dir, const cli_inputs *ci,
                           struct ait_sample *base, struct ait_graph_spec *spec);

/* .npy files (cli_npy.c): read one (validated: header, dtype, C order,
 * size); write one (little-endian, format 1.0). */
ait_status cli_npy_read(const char *path, ait_tensor **out);
ait_status cli_npy_write(const char *path, const ait_tensor *t);

struct cJSON;
/* Print j (then deleted) as one JSON document on stdout; 0, or 1 when out
 * of memory. */
int cli_print_json(struct cJSON *j);

/* Print a tuning report (JSON text) as a table; 1 when it is not a report. */
int cli_print_report(FILE *f, const char *json);
/* Write the report (and the decision, when not NULL) as one self-contained
 * HTML page at path, atomically; src names where they came from, for the
 * footer. 0, or 1 after a message on stderr. */
int cli_report_html(const char *report_json, const char *decision_json, const char *src,
                    const char *path);
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

/* Read the file of a graph input/output declared as `decl`: a TensorProto,
 * or for sequences and optionals onnx-data.proto's SequenceProto /
 * OptionalProto (ait_value_file_read). ONNX <= 1.12 wrote bfloat16 test data
 * with data_type UINT16: such a file read for a bfloat16 declaration is taken
 * as the bfloat16 bit patterns it holds. */
ait_status cli_read_tensor_for(const char *path, const struct ait_value *decl, ait_tensor **out);

/* One-line summary of a tensor: dtype, shape, min/max/mean, first values. */
void cli_print_summary(FILE *f, const char *name, const ait_tensor *t);
/* The same as a new JSON object: name, kind, dtype, shape, min, max, mean,
 * first (up to 5 values; null for NaN/Inf). */
struct cJSON *cli_summary_json(const char *name, const ait_tensor *t);

#endif
