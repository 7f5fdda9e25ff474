#!/usr/bin/env python3
"""Per-call overhead of the Python package over the C API (docs/python.md).

    python3 bench/python_overhead.py [--build build] [--backend native] [--sizes 16,65536]
                                     [--calls 20000] [--rounds 9]

A tiny model, y = Relu(x) with x [1, SIZE] float, is tuned on one backend
(aitune_c.tune, OneBackend, no performance check) and saved. Then, in
alternating rounds, bench/c_call_overhead.c (compiled here against
BUILD/libaitune.so) times CALLS calls of ait_module_infer + ait_module_output
on the saved folder, without and with a copy of the output into fresh memory
(the package's one copy), and this process times CALLS calls of tuned(x) on
the same folder with a numpy array and with a torch tensor, and of the
extension's run() alone. Each mode's result is the median over the rounds
of its µs per call; overhead = Python's median - C's median (same run, same
machine, rounds interleaved so a busy spell hits both).
"""
import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from onnx import TensorProto, helper

import aitune_c as ait

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def tiny_model(size: int) -> bytes:
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "tiny",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, size])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, size])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def time_calls(f, calls: int) -> float:
    t0 = time.perf_counter_ns()
    for _ in range(calls):
        f()
    return (time.perf_counter_ns() - t0) / calls / 1000.0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--backend", default="native")
    ap.add_argument("--sizes", default="16,65536")
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=9)
    a = ap.parse_args()
    import torch  # the torch-in, torch-out path
    tmp = tempfile.mkdtemp(prefix="ait_overhead_")
    exe = os.path.join(tmp, "c_call_overhead")
    build = os.path.abspath(a.build)
    subprocess.run(["cc", "-O2", "-I", os.path.join(ROOT, "include"),
                    os.path.join(ROOT, "bench", "c_call_overhead.c"), "-L", build, "-laitune",
                    f"-Wl,-rpath,{build}", "-o", exe], check=True)
    print(f"CPU: {cpu_name()}; aitune {ait.library_version()}, backend {a.backend}; "
          f"{a.calls} calls per round, {a.rounds} rounds; medians in µs per call")
    print()
    print("| output floats | C infer+output | C + copy | Python tuned(numpy) | Python tuned(torch) "
          "| run() alone | overhead numpy | overhead torch |")
    print("|---|---|---|---|---|---|---|---|")
    for size in (int(s) for s in a.sizes.split(",")):
        folder = os.path.join(tmp, f"relu_{size}")
        tuned = ait.tune(tiny_model(size), None, strategy=ait.OneBackend(a.backend, perf_validation=False),
                         cache_dir="", quiet=True, time_budget_s=0.1)
        tuned.save(folder)
        tuned = ait.load(folder)
        x = np.linspace(-1, 1, size, dtype=np.float32).reshape(1, size)
        xt = torch.from_numpy(x.copy())
        run = tuned._core.run
        modes = {"py_numpy": lambda: tuned(x), "py_torch": lambda: tuned(xt),
                 "run": lambda: run((x,))}
        for f in modes.values():  # warm-up
            time_calls(f, a.calls // 4)
        res = {k: [] for k in ["c", "c_copy", *modes]}
        for _ in range(a.rounds):
            out = subprocess.run([exe, folder, str(a.calls), "1"], check=True, capture_output=True,
                                 text=True).stdout
            for line in out.splitlines():
                k, v = line.split()
                res[k].append(float(v))
            for k, f in modes.items():
                res[k].append(time_calls(f, a.calls))
        med = {k: statistics.median(v) for k, v in res.items()}
        print(f"| {size} | {med['c']:.2f} | {med['c_copy']:.2f} | {med['py_numpy']:.2f} | "
              f"{med['py_torch']:.2f} | {med['run']:.2f} | {med['py_numpy'] - med['c']:.2f} | "
              f"{med['py_torch'] - med['c']:.2f} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
