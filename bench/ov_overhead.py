#!/usr/bin/env python3
"""aitune's openvino candidate against OpenVINO alone, in one process, interleaved.

    python3 bench/ov_overhead.py MODEL --tuned DIR [--inputs DIR] [--iters 40]
        [--warmup 3] [--engines a,b,...] [--threads N] [--clock wall|cpu] [--json OUT]

Separates what could make the candidate slower than OpenVINO alone (issue 20's
"≥ 0.97× of OpenVINO alone"), each an engine run on the same inputs:
  - ov          OpenVINO from Python as bench/ov_worker.py runs it (the suite's
                "openvino" row): the ONNX file, reshaped, LATENCY, threads =
                cores, f32, OpenVINO's default pinning;
  - ov-nopin    the same with ENABLE_CPU_PINNING=NO;
  - ov-import   the tuned folder's blob (backend/openvino_0.blob) imported by
                Python with the ov row's properties: the compiled graph aitune
                exported (its IR written back to ONNX), without aitune;
  - aitune      a session on `openvino` built from MODEL (compiles);
                `aitune:OPTS` with options added (aitune:pinning=off);
  - tuned       the tuned folder through ait_module_load / ait_module_infer
                (imports the blob: what the suite's aitune:openvino row times).
Every iteration runs each engine once in a seeded random order with a short
pause between; per engine the median, and the median over iterations of
ov's time over the engine's (paired: load that hits one iteration hits all
engines alike). Above 1: the engine is faster than OpenVINO alone. The
effective properties of each Python-side compiled model are printed too.
Inputs: DIR/input_K.pb or .npy (default: the tuned folder's samples).
"""
import argparse
import ctypes
import glob
import json
import os
import random
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import interleaved  # noqa: E402  (View, DTYPES, open_lib, load_inputs, Aitune)

PROPS = ("PERFORMANCE_HINT", "INFERENCE_NUM_THREADS", "NUM_STREAMS", "ENABLE_CPU_PINNING",
         "INFERENCE_PRECISION_HINT", "ENABLE_HYPER_THREADING", "SCHEDULING_CORE_TYPE")


def load_inputs(d):
    if glob.glob(os.path.join(d, "input_*.pb")):
        return interleaved.load_inputs(d)
    files = sorted(glob.glob(os.path.join(d, "input_*.npy")),
                   key=lambda p: int(p.rsplit("_", 1)[1][:-4]))
    return [np.ascontiguousarray(np.load(f)) for f in files]


def worker_props(pinned, threads):
    p = {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_NUM_THREADS": threads,
         "INFERENCE_PRECISION_HINT": "f32"}
    if not pinned:
        p["ENABLE_CPU_PINNING"] = "NO"
    return p


class Ov:
    def __init__(self, name, compiled):
        self.name = name
        self.compiled = compiled
        self.req = compiled.create_infer_request()

    def feed(self, inputs):
        self.inputs = {k: x for k, x in enumerate(inputs)}
        return self

    def props(self):
        out = {}
        for k in PROPS:
            try:
                out[k] = str(self.compiled.get_property(k))
            except Exception:  # noqa: BLE001 - a key this build lacks
                pass
        return out

    def run(self):
        self.req.infer(self.inputs)


class Tuned:
    def __init__(self, lib, d, inputs):
        self.name = "tuned"
        self.lib = lib
        lib.ait_module_load.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p,
                                        ctypes.POINTER(ctypes.c_void_p)]
        lib.ait_module_infer.argtypes = [ctypes.c_void_p, ctypes.POINTER(interleaved.View),
                                         ctypes.c_size_t]
        lib.ait_module_free.argtypes = [ctypes.c_void_p]
        self.m = ctypes.c_void_p()
        if lib.ait_module_load(d.encode(), None, None, ctypes.byref(self.m)):
            raise RuntimeError(lib.ait_last_error().decode())
        self.keep = inputs
        self.views = interleaved.make_views(inputs)

    def run(self):
        if self.lib.ait_module_infer(self.m, self.views, len(self.keep)):
            raise RuntimeError(f"tuned: {self.lib.ait_last_error().decode()}")

    def close(self):
        self.lib.ait_module_free(self.m)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--tuned", required=True, help="a `aitune tune --backends openvino` folder")
    ap.add_argument("--inputs", default=None)
    ap.add_argument("--iters", type=int, default=40)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--pause-ms", type=float, default=20)
    ap.add_argument("--engines", default="ov,ov-nopin,ov-import,aitune,tuned")
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                    help="cpu: the process's CPU time per run (time.process_time), for --threads 1")
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)),
                    help="OpenVINO's threads for ov, ov-nopin, ov-import and aitune (the tuned "
                         "folder keeps the threads it was tuned with)")
    ap.add_argument("--lib", default=os.path.join(HERE, "..", "build", "libaitune.so"))
    ap.add_argument("--json")
    a = ap.parse_args()
    import openvino as ov
    inputs = load_inputs(a.inputs or os.path.join(a.tuned, "samples", "0"))
    want = a.engines.split(",")
    core = ov.Core()
    engines = []
    for name in want:
        if name in ("ov", "ov-nopin"):
            m = core.read_model(a.model)
            m.reshape({p.get_any_name(): ov.PartialShape(list(x.shape)) for p, x in zip(m.inputs, inputs)})
            engines.append(Ov(name, core.compile_model(m, "CPU", worker_props(name == "ov", a.threads))).feed(inputs))
        elif name == "ov-import":
            with open(os.path.join(a.tuned, "backend", "openvino_0.blob"), "rb") as f:
                blob = f.read()
            c2 = ov.Core()
            c2.set_property("CPU", worker_props(True, a.threads))
            engines.append(Ov(name, c2.import_model(blob, "CPU")).feed(inputs))
        elif name.split(":")[0] == "aitune":
            opts = "".join("," + o for o in name.split(":", 1)[1:])
            e = interleaved.Aitune(interleaved.open_lib(a.lib), a.model,
                                   f"openvino:threads={a.threads}{opts}", inputs)
            e.name = name
            engines.append(e)
        elif name == "tuned":
            engines.append(Tuned(interleaved.open_lib(a.lib), os.path.abspath(a.tuned), inputs))
        else:
            sys.exit(f"ov_overhead: unknown engine {name}")
    for e in engines:
        if isinstance(e, Ov):
            print(f"{e.name}: {e.props()}")
    clock = time.process_time if a.clock == "cpu" else time.perf_counter
    times = {e.name: [] for e in engines}
    rng = random.Random(1)
    for it in range(a.warmup + a.iters):
        for e in rng.sample(engines, len(engines)):
            time.sleep(a.pause_ms / 1e3)
            t = clock()
            e.run()
            if it >= a.warmup:
                times[e.name].append((clock() - t) * 1e3)
    base = engines[0].name
    res = {"model": a.model, "iters": a.iters, "clock": a.clock, "loadavg": os.getloadavg(), "engines": {}}
    print(f"| engine | median ms | min ms | {base} / engine (median of paired ratios) |")
    print("|---|---|---|---|")
    for e in engines:
        t = times[e.name]
        r = statistics.median(b / x for b, x in zip(times[base], t))
        res["engines"][e.name] = {"median": statistics.median(t), "min": min(t), "ratio": r}
        print(f"| {e.name} | {statistics.median(t):.2f} | {min(t):.2f} | {r:.3f} |")
    print(f"load average: {res['loadavg'][0]:.1f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    for e in engines:
        if hasattr(e, "close"):
            e.close()


if __name__ == "__main__":
    main()
