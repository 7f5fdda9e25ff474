#!/usr/bin/env python3
"""Interleaved latency: aitune backends and ONNX Runtime in one process, one run each in turn.

    python3 bench/interleaved.py --model M.onnx --inputs DIR [--backend B]... [--ort M.onnx]...
                                 [--ov M.onnx]... [--ov-unpinned M.onnx]...
                                 [--iters 30] [--warmup 3] [--lib build/libaitune.so] [--json OUT]
                                 [--clock wall|cpu]

Every iteration runs each engine once (or --block times back to back, timing the median
of the block after one untimed run), each iteration in its own random order (seeded),
with a short pause between engines (so the thread pools that spin after a run, ONNX
Runtime's and aitune's, have gone quiet; measured: the engine run right after ONNX
Runtime ran 1.5-1.9x slower even after a 20 ms pause, so no engine may always follow
it).
Load from other processes then hits all engines alike within an iteration,
which a benchmark that runs one engine after the other cannot promise on a shared
machine. Reported per engine: median, min and p90 latency in ms, and against the first
engine the median of the per-iteration ratios (paired, so slow drifts of the machine's
load cancel).

aitune runs through its C API (libaitune.so: ait_session_create / ait_session_run) on
the same inputs (input_K.pb files of DIR, in the model's input order); ONNX Runtime with
intra_op_num_threads = the cores this process may use and all graph optimizations;
OpenVINO (--ov) as bench/ov_worker.py runs it (reshaped to the inputs' shapes, LATENCY
hint, threads = those cores, f32, its default thread pinning), --ov-unpinned the same
with ENABLE_CPU_PINNING=NO as aitune's openvino backend sets it: `--backend openvino
--ov M --ov-unpinned M` separates the wrapper's overhead from the pinning.
"""
import argparse
import ctypes
import glob
import json
import os
import random
import statistics
import time

import numpy as np

AIT_MAX_RANK = 8
DTYPES = {np.dtype(np.float32): 1, np.dtype(np.uint8): 2, np.dtype(np.int8): 3, np.dtype(np.int32): 6,
          np.dtype(np.int64): 7, np.dtype(np.bool_): 9, np.dtype(np.float16): 10, np.dtype(np.float64): 11}


class View(ctypes.Structure):  # ait_tensor_view (include/aitune.h); mem 0 = AIT_MEM_HOST
    _fields_ = [("dtype", ctypes.c_int), ("rank", ctypes.c_int), ("dims", ctypes.c_int64 * AIT_MAX_RANK),
                ("data", ctypes.c_void_p), ("mem", ctypes.c_int), ("device", ctypes.c_int)]


def load_inputs(d):
    import onnx
    from onnx import numpy_helper
    files = sorted(glob.glob(os.path.join(d, "input_*.pb")), key=lambda p: int(p.rsplit("_", 1)[1][:-3]))
    out = []
    for f in files:
        t = onnx.TensorProto()
        with open(f, "rb") as fh:
            t.ParseFromString(fh.read())
        out.append(np.ascontiguousarray(numpy_helper.to_array(t)))
    return out


def make_views(inputs):
    """ait_tensor_view array over numpy arrays (host memory; the arrays must outlive it)."""
    views = (View * len(inputs))()
    for i, a in enumerate(inputs):
        v = views[i]
        v.dtype = DTYPES[a.dtype]
        v.rank = a.ndim
        for k, n in enumerate(a.shape):
            v.dims[k] = n
        v.data = a.ctypes.data
    return views


def cpu_times(engines, iters, seed=1):
    """{engine.name: [CPU ms of each run]}: every iteration runs each engine once, in its own
    seeded random order, timed by time.process_time (bench/cpu_time.py says why)."""
    t = {e.name: [] for e in engines}
    rng = random.Random(seed)
    for _ in range(iters):
        order = list(engines)
        rng.shuffle(order)
        for e in order:
            c = time.process_time()
            e.run()
            t[e.name].append((time.process_time() - c) * 1e3)
    return t


class Aitune:
    def __init__(self, lib, model, backend, inputs, label=""):
        self.lib = lib
        self.name = f"aitune {label}{backend}"
        self.model = ctypes.c_void_p()
        self.sess = ctypes.c_void_p()
        if lib.ait_model_load(model.encode(), ctypes.byref(self.model)):
            raise RuntimeError(lib.ait_last_error().decode())
        if lib.ait_session_create(self.model, backend.encode(), ctypes.byref(self.sess)):
            raise RuntimeError(f"{backend}: {lib.ait_last_error().decode()}")
        self.keep = inputs
        self.views = make_views(inputs)

    def run(self):
        if self.lib.ait_session_run(self.sess, self.views, len(self.keep)):
            raise RuntimeError(f"{self.name}: {self.lib.ait_last_error().decode()}")

    def output(self, i):
        """Output i of the last run as a float64 copy (float32/float16 outputs)."""
        v = View()
        if self.lib.ait_session_output(self.sess, i, ctypes.byref(v)):
            raise RuntimeError(f"{self.name}: {self.lib.ait_last_error().decode()}")
        n = int(np.prod([v.dims[k] for k in range(v.rank)]))
        dt = {1: np.float32, 10: np.float16, 11: np.float64}.get(v.dtype)
        if dt is None or n == 0:
            return None
        buf = (ctypes.c_char * (n * np.dtype(dt).itemsize)).from_address(v.data)
        return np.frombuffer(buf, dtype=dt).astype(np.float64)

    def close(self):
        self.lib.ait_session_free(self.sess)
        self.lib.ait_model_free(self.model)


class Ort:
    def __init__(self, path, inputs, label):
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.intra_op_num_threads = len(os.sched_getaffinity(0))
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        self.feed = {i.name: a for i, a in zip(self.s.get_inputs(), inputs)}
        self.name = label

    def run(self):
        self.s.run(None, self.feed)

    def close(self):
        pass


class Ov:
    def __init__(self, path, inputs, label, pinned):
        import openvino as ov
        core = ov.Core()
        m = core.read_model(path)
        m.reshape({p.get_any_name(): ov.PartialShape(list(x.shape)) for p, x in zip(m.inputs, inputs)})
        props = {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_NUM_THREADS": len(os.sched_getaffinity(0)),
                 "INFERENCE_PRECISION_HINT": "f32"}
        if not pinned:
            props["ENABLE_CPU_PINNING"] = "NO"
        self.req = core.compile_model(m, "CPU", props).create_infer_request()
        self.feed = {k: x for k, x in enumerate(inputs)}
        self.name = label

    def run(self):
        self.req.infer(self.feed)

    def close(self):
        pass


def open_lib(path):
    lib = ctypes.CDLL(os.path.abspath(path))
    lib.ait_last_error.restype = ctypes.c_char_p
    lib.ait_session_run.argtypes = [ctypes.c_void_p, ctypes.POINTER(View), ctypes.c_size_t]
    lib.ait_session_create.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.ait_model_load.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.ait_session_free.argtypes = [ctypes.c_void_p]
    lib.ait_model_free.argtypes = [ctypes.c_void_p]
    lib.ait_session_output.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(View)]
    return lib


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--inputs", required=True)
    ap.add_argument("--backend", action="append", default=[])
    ap.add_argument("--ort", action="append", default=[], help="an ONNX file for ONNX Runtime "
                    "(LABEL=PATH to name it)")
    ap.add_argument("--ov", action="append", default=[], help="an ONNX file for OpenVINO (LABEL=PATH)")
    ap.add_argument("--ov-unpinned", action="append", default=[],
                    help="the same with ENABLE_CPU_PINNING=NO, as aitune's openvino backend")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--pause-ms", type=float, default=20)
    ap.add_argument("--block", type=int, default=1,
                    help="runs of an engine back to back per turn (the first of each block untimed): "
                         "1 measures each run after the others ran (cold thread pools), more measures "
                         "steady back-to-back runs")
    ap.add_argument("--lib", default=os.path.join(os.path.dirname(__file__), "..", "build", "libaitune.so"))
    ap.add_argument("--alt-lib", action="append", default=[], metavar="NAME=PATH",
                    help="another build of libaitune.so, loaded beside --lib (RTLD_LOCAL: each "
                         "resolves its own symbols); --backend NAME@B runs B on it (A/B of two builds "
                         "in one process)")
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                    help="cpu: the process's CPU time per run (time.process_time) instead of wall "
                         "time: on a machine shared with other jobs, time spent descheduled does not "
                         "count; meant for one thread (taskset -c N, native:threads=1), since pool "
                         "threads spinning after a run would count")
    ap.add_argument("--json")
    a = ap.parse_args()
    clock = time.process_time if a.clock == "cpu" else time.perf_counter
    libs = {"": open_lib(a.lib)}
    for spec in a.alt_lib:
        name, path = spec.split("=", 1)
        libs[name] = open_lib(path)
    inputs = load_inputs(a.inputs)
    engines = []
    for b in a.backend:
        name, b = b.split("@", 1) if "@" in b else ("", b)
        engines.append(Aitune(libs[name], a.model, b, inputs, f"{name}@" if name else ""))
    for o in a.ort:
        label, path = o.split("=", 1) if "=" in o else (f"ort {os.path.basename(o)}", o)
        engines.append(Ort(path, inputs, label))
    for pinned, specs in ((True, a.ov), (False, a.ov_unpinned)):
        for o in specs:
            tag = "ov" if pinned else "ov unpinned"
            label, path = o.split("=", 1) if "=" in o else (f"{tag} {os.path.basename(o)}", o)
            engines.append(Ov(path, inputs, label, pinned))
    times = {e.name: [] for e in engines}
    rng = random.Random(1)
    for it in range(a.warmup + a.iters):
        # each turn in its own (seeded) random order: whatever an engine
        # leaves behind (ONNX Runtime's threads stay busy past the pause)
        # then slows a different engine each turn, and the medians of the
        # paired ratios ignore it (a rotation would keep the same neighbours)
        for e in rng.sample(engines, len(engines)):
            time.sleep(a.pause_ms / 1e3)
            if a.block > 1:
                e.run()
            ts = []
            for _ in range(a.block if a.block > 1 else 1):
                t = clock()
                e.run()
                ts.append((clock() - t) * 1e3)
            if it >= a.warmup:
                times[e.name].append(statistics.median(ts))
    base = engines[0].name
    res = {"iters": a.iters, "block": a.block, "clock": a.clock, "loadavg": os.getloadavg(), "engines": {}}
    print(f"| engine | median ms | min ms | p90 ms | {base} / engine (median of paired ratios) |")
    print("|---|---|---|---|---|")
    for e in engines:
        t = times[e.name]
        ratio = statistics.median(b / x for b, x in zip(times[base], t))
        p90 = sorted(t)[int(0.9 * (len(t) - 1))]
        res["engines"][e.name] = dict(median=statistics.median(t), min=min(t), p90=p90, ratio_to_first=ratio,
                                      runs=t)
        print(f"| {e.name} | {statistics.median(t):.2f} | {min(t):.2f} | {p90:.2f} | {ratio:.2f} |")
    print(f"load average during the run: {res['loadavg'][0]:.2f}")
    for e in engines:
        e.close()
    if a.json:
        os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
