#!/usr/bin/env python3
"""Time OpenVINO (CPU plugin) on one ONNX model and one input set.

    python3 bench/ov_worker.py MODEL --inputs DIR [--threads T]
        [--iters N] [--warmup N] [--seconds S] [--save-outputs DIR]

The model is read from the ONNX file, reshaped to the inputs' shapes and
compiled for "CPU" with PERFORMANCE_HINT = LATENCY, INFERENCE_NUM_THREADS = T
(default: os.cpu_count()) and INFERENCE_PRECISION_HINT = f32, so it computes
in float32 like the other fp32 engines. Inputs are DIR/input_K.npy in
graph-input order. Prints one JSON line as bench/ort_worker.py does.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--inputs", required=True)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--iters", type=int, default=None)
    ap.add_argument("--warmup", type=int, default=None)
    ap.add_argument("--seconds", type=float, default=6.0)
    ap.add_argument("--save-outputs", default=None)
    a = ap.parse_args()

    import openvino as ov
    core = ov.Core()
    model = core.read_model(a.model)
    inputs = common.load_inputs(a.inputs)
    if len(model.inputs) != len(inputs):
        sys.exit(f"ov_worker: the model has {len(model.inputs)} inputs, {a.inputs} holds {len(inputs)}")
    model.reshape({p.get_any_name(): ov.PartialShape(list(x.shape))
                   for p, x in zip(model.inputs, inputs)})
    compiled = core.compile_model(model, "CPU", {"PERFORMANCE_HINT": "LATENCY",
                                                 "INFERENCE_NUM_THREADS": a.threads,
                                                 "INFERENCE_PRECISION_HINT": "f32"})
    req = compiled.create_infer_request()
    feeds = {k: x for k, x in enumerate(inputs)}

    def run():
        req.infer(feeds)
    if a.save_outputs:
        run()
        common.save_outputs(a.save_outputs, [req.get_output_tensor(k).data.copy()
                                             for k in range(len(compiled.outputs))])
    r = common.time_loop(run, inputs[0].shape[0] if inputs[0].ndim else 1, a.iters, a.warmup,
                         a.seconds)
    r["engine"] = "openvino"
    r["threads"] = a.threads
    r["version"] = ov.__version__
    common.emit(r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
