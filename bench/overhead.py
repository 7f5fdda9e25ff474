#!/usr/bin/env python3
"""Fixed cost per run and per node: chains of N tiny nodes, aitune against ONNX Runtime.

    python3 bench/overhead.py [--lib build/libaitune.so] [--alt-lib NAME=PATH]... [--backend B]...
                              [--nodes 1,8,32,128] [--runs 500] [--rounds 7] [--size 16]

Each model is x [1, size] through N nodes that no pass fuses or removes (Abs, then Add(., x),
alternating), so every node runs. Each engine runs `runs` times back to back per round, rounds
interleaved between engines (in a seeded random order), each run timed on its own; per engine
and N the fastest single run (on a shared machine the runs that no other process interrupted). Per node: the slope between the smallest and the largest N; per run: the intercept.
Both engines are called from Python (aitune through its C API, ONNX Runtime through its Python
API), so the interpreter's call overhead (about a microsecond) is in both.
"""
import argparse
import os
import random
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(__file__))
from interleaved import Aitune, Ort, open_lib  # noqa: E402


def chain(n, size, path):
    nodes, prev = [], "x"
    for i in range(n):
        out = "y" if i == n - 1 else f"v{i}"
        if i % 2 == 0:
            nodes.append(helper.make_node("Abs", [prev], [out]))
        else:
            nodes.append(helper.make_node("Add", [prev, "x"], [out]))
        prev = out
    g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, size])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, size])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", default=os.path.join(os.path.dirname(__file__), "..", "build", "libaitune.so"))
    ap.add_argument("--alt-lib", action="append", default=[], metavar="NAME=PATH")
    ap.add_argument("--backend", action="append", default=[])
    ap.add_argument("--nodes", default="1,8,32,128")
    ap.add_argument("--runs", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--size", type=int, default=16)
    a = ap.parse_args()
    libs = {"": open_lib(a.lib)}
    for spec in a.alt_lib:
        name, path = spec.split("=", 1)
        libs[name] = open_lib(path)
    backends = a.backend or ["native"]
    ns = [int(v) for v in a.nodes.split(",")]
    x = [np.random.default_rng(0).standard_normal((1, a.size), dtype=np.float32)]
    tmp = tempfile.mkdtemp()
    best = {}
    for n in ns:
        path = os.path.join(tmp, f"chain{n}.onnx")
        chain(n, a.size, path)
        engines = []
        for b in backends:
            name, b = b.split("@", 1) if "@" in b else ("", b)
            engines.append(Aitune(libs[name], path, b, x, f"{name}@" if name else ""))
        engines.append(Ort(path, x, "ort"))
        for e in engines:
            for _ in range(50):
                e.run()
        rng = random.Random(n)
        for _ in range(a.rounds):
            for e in rng.sample(engines, len(engines)):
                for _ in range(a.runs):
                    t = time.perf_counter()
                    e.run()
                    us = (time.perf_counter() - t) * 1e6
                    best[(e.name, n)] = min(best.get((e.name, n), 1e30), us)
        for e in engines:
            if hasattr(e, "close"):
                e.close()
    names = list(dict.fromkeys(k[0] for k in best))
    print(f"size {a.size}, {len(os.sched_getaffinity(0))} cores; microseconds per run (fastest of "
          f"{a.runs * a.rounds} runs)")
    print("| engine | " + " | ".join(f"N = {n}" for n in ns) + " | per run (us) | per node (us) |")
    print("|---|" + "---|" * (len(ns) + 2))
    for nm in names:
        t = [best[(nm, n)] for n in ns]
        slope = (t[-1] - t[0]) / (ns[-1] - ns[0])
        print(f"| {nm} | " + " | ".join(f"{v:.1f}" for v in t) + f" | {t[0] - slope * ns[0]:.1f} | {slope:.2f} |")


if __name__ == "__main__":
    main()
