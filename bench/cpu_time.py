#!/usr/bin/env python3
"""CPU time per run: aitune backends (and ONNX Runtime on one thread) in one process.

    python3 bench/cpu_time.py MODEL [--lib build/libaitune.so] [--alt NAME=LIB]...
        [--backend [NAME@]B]... [--ort] [--ov] [--iters 10] [--batch 1]

On a shared machine the wall time of a run swings with the other jobs; the CPU
time it costs (time.process_time around each run) swings much less, so A/B
comparisons of kernels read it. Meaningful for single-threaded engines only
(a pool's spinning workers count too): give aitune backends threads=1; ONNX
Runtime runs with one intra-op thread. Engines run in turn, each iteration in
its own random order, on seeded standard-normal float32 inputs of the model's
declared shapes (symbolic dims: --batch), or, for a suite model (an inputs.json
beside it), bench/suite.py's inputs: ids in range, masks padding the tail. Prints per engine the minimum and
median ms and the median of its per-iteration ratio to the first engine.
--alt loads another build of libaitune.so beside --lib (bench/interleaved.py's
--alt-lib); NAME@B runs backend B on it.
"""
import argparse
import os
import statistics
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import interleaved as il  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--lib", default=os.path.join(os.path.dirname(__file__), "..", "build", "libaitune.so"))
    ap.add_argument("--alt", action="append", default=[])
    ap.add_argument("--backend", action="append", default=[])
    ap.add_argument("--ort", action="store_true")
    ap.add_argument("--ov", action="store_true",
                    help="OpenVINO too (CPU, LATENCY, one thread, f32; honours ONEDNN_MAX_CPU_ISA)")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--batch", type=int, default=1)
    a = ap.parse_args()
    import onnx
    m = onnx.load(a.model, load_external_data=False)
    init = {t.name for t in m.graph.initializer}
    rng = np.random.default_rng(17)
    inputs = []
    meta_path = os.path.join(os.path.dirname(os.path.abspath(a.model)), "inputs.json")
    if os.path.exists(meta_path):
        # A suite model (bench/suite/models.py): its declared dtypes, id ranges
        # and masks, as bench/suite.py makes them.
        import json
        import tempfile
        import suite
        meta = json.load(open(meta_path))
        with tempfile.TemporaryDirectory() as work:
            npy, _, _ = suite.make_inputs(meta, a.batch, a.model, work)
            k = 0
            while os.path.exists(os.path.join(npy, f"input_{k}.npy")):
                inputs.append(np.load(os.path.join(npy, f"input_{k}.npy")))
                k += 1
    else:
        for i in m.graph.input:
            if i.name in init:
                continue
            shape = [x.dim_value if x.dim_value > 0 else a.batch for x in i.type.tensor_type.shape.dim]
            inputs.append(rng.standard_normal(shape).astype(np.float32))
    libs = {"": il.open_lib(a.lib)}
    for s in a.alt:
        n, p = s.split("=", 1)
        libs[n] = il.open_lib(p)
    eng = []
    for b in a.backend:
        lab, _, be = b.rpartition("@")
        eng.append(il.Aitune(libs[lab], a.model, be, inputs, label=(lab + "@") if lab else ""))
    if a.ort:
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        so.inter_op_num_threads = 1
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        s = ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])
        feed = {i.name: x for i, x in zip(s.get_inputs(), inputs)}

        class Ort:
            name = "ORT 1 thread"

            def run(self):
                s.run(None, feed)
        eng.append(Ort())
    if a.ov:
        import openvino as ov
        core = ov.Core()
        om = core.read_model(a.model)
        om.reshape({p.get_any_name(): ov.PartialShape(list(x.shape)) for p, x in zip(om.inputs, inputs)})
        compiled = core.compile_model(om, "CPU", {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_NUM_THREADS": 1,
                                                  "INFERENCE_PRECISION_HINT": "f32"})
        req = compiled.create_infer_request()
        ov_feed = dict(enumerate(inputs))

        class Ov:
            name = "OpenVINO 1 thread"

            def run(self):
                req.infer(ov_feed)
        eng.append(Ov())
    for e in eng:
        for _ in range(2):
            e.run()
    t = il.cpu_times(eng, a.iters)
    base = eng[0].name
    for e in eng:
        r = statistics.median(x / y for x, y in zip(t[e.name], t[base]))
        print(f"{e.name:50s} min {min(t[e.name]):8.2f}  med {statistics.median(t[e.name]):8.2f} ms CPU"
              f"   x{r:.3f} of first")
    return 0


if __name__ == "__main__":
    sys.exit(main())
