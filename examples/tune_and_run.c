/* The smallest program that tunes a model with libaitune and runs it: built
 * against an installed copy by tests/test_install.sh, with pkg-config and
 * with CMake's find_package (CMakeLists.txt here).
 * usage: tune_and_run MODEL.onnx [BACKEND]...   (none: every available one) */
#include <aitune.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  if (argc < 2) return fprintf(stderr, "usage: %s MODEL.onnx [BACKEND]...\n", argv[0]), 2;
  ait_tune_options o;
  ait_tune_options_init(&o); /* the defaults, and o.struct_size */
  o.backends = argc > 2 ? (const char *const *)argv + 2 : NULL;
  o.n_backends = (size_t)(argc - 2);
  o.time_budget_s = 0.2; /* a short measurement: this is an example */
  o.cache_dir = "";      /* no decision cache */
  ait_module *m = NULL;
  if (ait_module_create(argv[1], NULL, &m) || ait_module_tune(m, &o))
    return fprintf(stderr, "%s\n", ait_last_error()), ait_module_free(m), 1;

  /* one run on zeros of the declared shapes (unknown dims: 1) */
  const ait_model *model = ait_module_model(m);
  size_t n = ait_model_num_inputs(model);
  ait_tensor_view *in = calloc(n + 1, sizeof *in), out;
  for (size_t i = 0; i < n; i++) {
    ait_tensor_info t;
    ait_model_input(model, i, &t);
    size_t count = 1;
    in[i].dtype = t.dtype;
    in[i].rank = t.rank;
    for (int d = 0; d < t.rank; d++)
      count *= (size_t)(in[i].dims[d] = t.dims[d] > 0 ? t.dims[d] : 1);
    in[i].data = calloc(count, ait_dtype_size(t.dtype));
  }
  ait_status st = ait_module_infer(m, in, n);
  if (!st) st = ait_module_output(m, 0, &out);
  if (st)
    fprintf(stderr, "%s\n", ait_last_error());
  else
    printf("aitune %s: %s picked; output 0 has rank %d\n", ait_version(), ait_module_backend(m),
           out.rank);
  for (size_t i = 0; i < n; i++)
    free(in[i].data);
  free(in);
  ait_module_free(m);
  return st ? 1 : 0;
}
