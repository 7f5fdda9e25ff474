#!/usr/bin/env python3
"""Structure-aware fuzz of the ONNX node tests: bad attributes and integer inputs.

    python3 tests/fuzz_nodes.py --aitune build-asan/aitune [--seed 1] [--cases 150]
                                [--timeout 30] [--data /usr/share/libonnx-testdata/data/node]

Each case takes one node test (libonnx-testdata), and either sets some of its
attributes to extreme values (0, -1, 2^31-1, 2^40, -2^62, NaN, inf, ...) or
writes such values into one of its integer inputs (shapes, axes, indices,
pads, split sizes, repeats), then runs it with `aitune run` on eager and on
native. A case passes when aitune exits 0 (the mutant was still valid) or 1
with an "aitune:" message; it fails on any other exit (a crash, an abort), a
sanitizer report (run it on the address/undefined build), or a run longer
than --timeout seconds. Failing cases are copied to --keep for reproduction.

Models with Loop or Scan are left out of the integer-input cases: their trip
counts are the model's to choose, and a model asking for 2^31 iterations may
legitimately run for hours. Seeded: one seed is one fixed list of cases.

Session 5 found with it: a 2^31-wide LRN and 2^40-tap SAME pools that ran for
hours, and 64-bit overflows in Reshape, Split, GatherND and Scan sizes.
"""
import argparse
import glob
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

INTS = [0, -1, 1, -2, 2, 3, 7, 1 << 20, -(1 << 31), (1 << 31) - 1, 1 << 40, -(1 << 62), (1 << 63) - 1]
FLOATS = [0.0, -1.0, float("nan"), float("inf"), -float("inf"), 1e30, -1e-30, 3.5]
SANITIZER = re.compile(r"ERROR: \w*Sanitizer|\.(c|h):[0-9]+:[0-9]+: runtime error")


def mutate_attrs(rng, model):
    changed = False
    for node in model.graph.node:
        for a in node.attribute:
            if rng.random() < 0.5:
                continue
            if a.type == onnx.AttributeProto.INT:
                a.i = rng.choice(INTS)
            elif a.type == onnx.AttributeProto.INTS and len(a.ints):
                a.ints[rng.randrange(len(a.ints))] = rng.choice(INTS)
            elif a.type == onnx.AttributeProto.FLOAT:
                a.f = rng.choice(FLOATS)
            elif a.type == onnx.AttributeProto.FLOATS and len(a.floats):
                a.floats[rng.randrange(len(a.floats))] = rng.choice(FLOATS)
            else:
                continue
            changed = True
    return changed


def mutate_int_input(rng, path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    a = numpy_helper.to_array(t).copy()
    if a.size == 0:
        return False
    flat = a.reshape(-1)
    for _ in range(rng.randint(1, 2)):
        v = rng.choice(INTS)
        flat[rng.randrange(a.size)] = np.int64(v).astype(a.dtype) if a.dtype != np.int64 else v
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(a, t.name).SerializeToString())
    return True


def int_inputs(d):
    out = []
    for f in sorted(glob.glob(os.path.join(d, "test_data_set_0", "input_*.pb"))):
        t = onnx.TensorProto()
        with open(f, "rb") as fh:
            t.ParseFromString(fh.read())
        if t.data_type in (onnx.TensorProto.INT32, onnx.TensorProto.INT64):
            out.append(os.path.basename(f))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--aitune", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=150)
    ap.add_argument("--timeout", type=float, default=30.0)
    ap.add_argument("--data", default="/usr/share/libonnx-testdata/data/node")
    ap.add_argument("--keep", default=os.path.join(tempfile.gettempdir(), "aitune_fuzz_nodes"))
    a = ap.parse_args()
    tests = sorted(glob.glob(os.path.join(a.data, "*", "model.onnx")))
    if not tests:
        print(f"fuzz_nodes: no node tests under {a.data}", file=sys.stderr)
        return 1
    rng = random.Random(a.seed)
    # Memory is capped (1 GiB per allocation under ASan, 4 GiB of address
    # space otherwise): a mutant asking for a 2^31-long window must fail
    # with "out of memory", not spend minutes filling 8 GB.
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=1:"
               "max_allocation_size_mb=1024")
    with open(a.aitune, "rb") as f:
        asan = b"__asan_init" in f.read()

    def cap():
        if not asan:
            import resource
            resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    failed = ran = 0
    with tempfile.TemporaryDirectory() as tmp:
        while ran < a.cases:
            src = os.path.dirname(rng.choice(tests))
            try:
                model = onnx.load(os.path.join(src, "model.onnx"))
            except Exception:
                continue
            case = os.path.join(tmp, "case")
            shutil.rmtree(case, ignore_errors=True)
            os.makedirs(os.path.join(case, "in"))
            for f in glob.glob(os.path.join(src, "test_data_set_0", "input_*.pb")):
                shutil.copy(f, os.path.join(case, "in"))
            ints = int_inputs(src)
            loops = any(n.op_type in ("Loop", "Scan") for n in model.graph.node)
            if ints and not loops and rng.random() < 0.5:
                how = "input " + (pick := rng.choice(ints))
                if not mutate_int_input(rng, os.path.join(case, "in", pick)):
                    continue
            elif mutate_attrs(rng, model):
                how = "attributes"
            else:
                continue
            onnx.save(model, os.path.join(case, "model.onnx"))
            ran += 1
            for backend in ("eager", "native"):
                cmd = [a.aitune, "run", os.path.join(case, "model.onnx"), "--backend", backend,
                       "--inputs", os.path.join(case, "in"), "--outputs", os.path.join(case, "out")]
                why = None
                try:
                    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=a.timeout,
                                       preexec_fn=cap)
                    if p.returncode not in (0, 1) or SANITIZER.search(p.stderr):
                        why = f"exit {p.returncode}: {p.stderr.strip()[-600:]}"
                    elif p.returncode == 1 and "aitune: " not in p.stderr:
                        why = f"exit 1 without a message: {p.stderr.strip()[-300:]}"
                except subprocess.TimeoutExpired:
                    why = f"ran over {a.timeout:g} s"
                if why:
                    failed += 1
                    keep = os.path.join(a.keep, f"{os.path.basename(src)}_{ran}_{backend}")
                    shutil.copytree(case, keep, dirs_exist_ok=True)
                    print(f"FAIL {os.path.basename(src)} ({how}) on {backend}: {why}\n  kept in {keep}")
    print(f"fuzz_nodes: {ran} mutated node tests (seed {a.seed}) on eager and native, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
