#!/usr/bin/env python3
"""Time ONNX Runtime (CPU execution provider) on one model and one input set.

    python3 bench/ort_worker.py MODEL --inputs DIR [--threads T] [--int8]
        [--iters N] [--warmup N] [--seconds S] [--save-outputs DIR]

SessionOptions: intra_op_num_threads = T (default: os.cpu_count()),
graph_optimization_level = ORT_ENABLE_ALL. --int8 first quantizes the model
with ONNX Runtime's own dynamic quantization (quantize_dynamic, QInt8 weights,
default operator set) into a temporary file and times that. Inputs are
DIR/input_K.npy in graph-input order. Prints one JSON line: latency_ms
{median,p90,p99,min,mean}, throughput, iters, batch, plus the quantization
time for --int8. Run by bench/run.py in its own process.
"""
import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def quantize(model, folder):
    from onnxruntime.quantization import QuantType, quantize_dynamic
    out = os.path.join(folder, "model_int8.onnx")
    t0 = time.perf_counter()
    quantize_dynamic(model, out, weight_type=QuantType.QInt8)
    return out, time.perf_counter() - t0


def session(model, threads, profile_prefix=None):
    """The harness's ONNX Runtime session: CPU, `threads` intra-op threads,
    sequential, all graph optimizations; its profiler on when
    profile_prefix is given (bench/op_profile.py)."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if profile_prefix:
        so.enable_profiling = True
        so.profile_file_prefix = profile_prefix
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--inputs", required=True)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--int8", action="store_true")
    ap.add_argument("--iters", type=int, default=None)
    ap.add_argument("--warmup", type=int, default=None)
    ap.add_argument("--seconds", type=float, default=6.0)
    ap.add_argument("--save-outputs", default=None)
    a = ap.parse_args()

    import onnxruntime as ort
    with tempfile.TemporaryDirectory(prefix="ait-ort-") as tmp:
        model, qtime = (quantize(a.model, tmp) if a.int8 else (a.model, None))
        sess = session(model, a.threads)
        inputs = common.load_inputs(a.inputs)
        names = [i.name for i in sess.get_inputs()]
        if len(names) != len(inputs):
            sys.exit(f"ort_worker: the model has {len(names)} inputs, {a.inputs} holds {len(inputs)}")
        feeds = dict(zip(names, inputs))
        if a.save_outputs:
            common.save_outputs(a.save_outputs, sess.run(None, feeds))
        r = common.time_loop(lambda: sess.run(None, feeds), inputs[0].shape[0], a.iters, a.warmup,
                             a.seconds)
    r["engine"] = "onnxruntime-int8" if a.int8 else "onnxruntime"
    r["threads"] = a.threads
    r["version"] = ort.__version__
    if qtime is not None:
        r["quantize_s"] = qtime
    common.emit(r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
