/* `aitune publish`: config.pbtxt for Triton's python backend, and the
 * model.py that serves the tuned folder through the aitune_c package. */
#include <string.h>

#include "core/error.h"
#include "publish.h"

/* ONNX element types -> Triton's data types (model_config.proto). */
static const struct {
  ait_dtype dt;
  const char *triton;
} triton_types[] = {
    {AIT_FLOAT32, "TYPE_FP32"},  {AIT_FLOAT16, "TYPE_FP16"},  {AIT_BFLOAT16, "TYPE_BF16"},
    {AIT_FLOAT64, "TYPE_FP64"},  {AIT_INT8, "TYPE_INT8"},     {AIT_INT16, "TYPE_INT16"},
    {AIT_INT32, "TYPE_INT32"},   {AIT_INT64, "TYPE_INT64"},   {AIT_UINT8, "TYPE_UINT8"},
    {AIT_UINT16, "TYPE_UINT16"}, {AIT_UINT32, "TYPE_UINT32"}, {AIT_UINT64, "TYPE_UINT64"},
    {AIT_BOOL, "TYPE_BOOL"},     {AIT_STRING, "TYPE_STRING"},
};

const char *pub_triton_type(ait_dtype dt) {
  for (size_t i = 0; i < sizeof triton_types / sizeof *triton_types; i++)
    if (triton_types[i].dt == dt) return triton_types[i].triton;
  return NULL;
}

/* A protobuf text string: quotes and backslashes escaped. */
static void put_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fputc('\\', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

static ait_status put_value(FILE *f, const ait_tensor_info *v, int skip, bool last) {
  const char *type = pub_triton_type(v->dtype);
  if (!type)
    return ait_err(AIT_E_UNSUPPORTED, "'%s' is %s, which Triton has no data type for", v->name,
                   ait_dtype_name(v->dtype));
  if (v->rank < 0)
    return ait_err(AIT_E_UNSUPPORTED, "'%s' has an unknown rank; Triton needs its dims", v->name);
  fprintf(f, "  {\n    name: ");
  put_string(f, v->name);
  fprintf(f, "\n    data_type: %s\n    dims: [", type);
  for (int k = skip; k < v->rank; k++)
    fprintf(f, "%s %lld", k > skip ? "," : "", (long long)(v->dims[k] >= 0 ? v->dims[k] : -1));
  /* A value that is only the batch axis: Triton wants dims, the model
   * wants no more axes than the batch. */
  if (v->rank == skip)
    fprintf(f, " 1 ]\n    reshape: { shape: [ ] }\n");
  else
    fprintf(f, " ]\n");
  fprintf(f, "  }%s\n", last ? "" : ",");
  return AIT_OK;
}

ait_status pub_write_config(FILE *f, const pub_config *c) {
  int skip = c->max_batch_size > 0;
  fprintf(f, "# Written by `aitune publish` from %s (docs/serving.md).\n", c->source);
  bool py = !c->backend || !strcmp(c->backend, "python");
  if (py)
    fprintf(f, "# The python backend runs model.py, which loads the tuned folder in 1/aitune.\n");
  else
    fprintf(f, "# The aitune backend (libtriton_aitune.so) loads the tuned folder in 1/aitune\n"
               "# once; its instances are clones sharing the weights.\n");
  fprintf(f, "name: ");
  put_string(f, c->name);
  fprintf(f, "\nbackend: \"%s\"\nmax_batch_size: %d\n", py ? "python" : "aitune",
          c->max_batch_size);
  size_t n_in = ait_model_num_inputs(c->model), n_out = ait_model_num_outputs(c->model);
  fprintf(f, "input [\n");
  for (size_t i = 0; i < n_in; i++) {
    ait_tensor_info v;
    AIT_TRY(ait_model_input(c->model, i, &v));
    AIT_TRY(put_value(f, &v, skip, i + 1 == n_in));
  }
  fprintf(f, "]\noutput [\n");
  for (size_t i = 0; i < n_out; i++) {
    ait_tensor_info v;
    AIT_TRY(ait_model_output(c->model, i, &v));
    AIT_TRY(put_value(f, &v, skip, i + 1 == n_out));
  }
  fprintf(f, "]\n");
  if (c->n_preferred > 0) {
    fprintf(f, "dynamic_batching {\n  preferred_batch_size: [");
    for (int i = 0; i < c->n_preferred; i++)
      fprintf(f, "%s %d", i ? "," : "", c->preferred[i]);
    fprintf(f, " ]\n  max_queue_delay_microseconds: %lld\n}\n", c->queue_delay_us);
  }
  fprintf(f, "instance_group [\n  {\n    count: %d\n    kind: KIND_CPU\n  }\n]\n", c->instances);
  return AIT_OK;
}

/* The python backend's model: one aitune_c module per instance (a stub
 * process each). Batched requests are stacked along axis 0, run once, and
 * split back; requests that do not stack (another sequence length) or fail
 * are run one by one, so one bad request gets its own error response. */
const char pub_model_py[] =
    "# Written by `aitune publish` (docs/serving.md): Triton's python backend\n"
    "# runs the tuned folder beside this file (aitune/) through aitune_c.\n"
    "import json\n"
    "import os\n"
    "\n"
    "import numpy as np\n"
    "import triton_python_backend_utils as pb_utils\n"
    "\n"
    "try:\n"
    "    import aitune_c\n"
    "except ImportError as e:  # the stub's Python is the first python3 on PATH\n"
    "    raise ImportError(\n"
    "        'aitune publish: cannot import aitune_c (%s); start tritonserver with the bin '\n"
    "        'folder of the venv that has it first on PATH (docs/serving.md)' % e)\n"
    "\n"
    "\n"
    "class TritonPythonModel:\n"
    "    def initialize(self, args):\n"
    "        cfg = json.loads(args['model_config'])\n"
    "        self.batching = cfg.get('max_batch_size', 0) > 0\n"
    "        here = os.path.dirname(os.path.abspath(__file__))\n"
    "        self.model = aitune_c.load(os.path.join(here, 'aitune'))\n"
    "        self.inputs = [v['name'] for v in cfg['input']]\n"
    "        self.outputs = [(v['name'], pb_utils.triton_string_to_numpy(v['data_type']))\n"
    "                        for v in cfg['output']]\n"
    "\n"
    "    def _run(self, arrays):\n"
    "        outs = self.model(*arrays)\n"
    "        if not isinstance(outs, (tuple, list)):\n"
    "            outs = (outs,)\n"
    "        if len(outs) != len(self.outputs):\n"
    "            raise RuntimeError('the model gave %d outputs, the config declares %d'\n"
    "                               % (len(outs), len(self.outputs)))\n"
    "        return [np.asarray(o).astype(dt, copy=False) for o, (_, dt) in zip(outs, "
    "self.outputs)]\n"
    "\n"
    "    def _response(self, outs):\n"
    "        return pb_utils.InferenceResponse(output_tensors=[\n"
    "            pb_utils.Tensor(name, np.ascontiguousarray(o))\n"
    "            for o, (name, _) in zip(outs, self.outputs)])\n"
    "\n"
    "    def _stacked(self, feeds):\n"
    "        sizes = [f[0].shape[0] for f in feeds]\n"
    "        outs = self._run([np.concatenate([f[k] for f in feeds], axis=0)\n"
    "                          for k in range(len(self.inputs))])\n"
    "        cuts = np.cumsum(sizes)[:-1]\n"
    "        parts = []\n"
    "        for o in outs:\n"
    "            if o.ndim == 0 or o.shape[0] != sum(sizes):\n"
    "                raise ValueError('an output without the batch axis')\n"
    "            parts.append(np.split(o, cuts, axis=0))\n"
    "        return [self._response([p[j] for p in parts]) for j in range(len(feeds))]\n"
    "\n"
    "    def execute(self, requests):\n"
    "        feeds = [[pb_utils.get_input_tensor_by_name(r, n).as_numpy() for n in self.inputs]\n"
    "                 for r in requests]\n"
    "        if self.batching and len(feeds) > 1:\n"
    "            try:\n"
    "                return self._stacked(feeds)\n"
    "            except Exception:\n"
    "                pass  # shapes that do not stack, or a failing request: one by one\n"
    "        responses = []\n"
    "        for f in feeds:\n"
    "            try:\n"
    "                responses.append(self._response(self._run(f)))\n"
    "            except Exception as e:\n"
    "                responses.append(pb_utils.InferenceResponse(\n"
    "                    error=pb_utils.TritonError('aitune: %s' % e)))\n"
    "        return responses\n"
    "\n"
    "    def finalize(self):\n"
    "        self.model = None\n";
