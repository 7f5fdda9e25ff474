#!/usr/bin/env python3
"""Opset 23 against opset 18 on the native backend: one decoder, two exports.

    python3 bench/opset23.py [--aitune build/aitune] [--rounds 5] [--hidden 256]
                             [--layers 4] [--seq 128] [--heads 4]

Builds scripts/make_models.py's RMSDecoder (pre-norm, RMSNorm, causal
scaled_dot_product_attention, GELU MLP; random weights, seed 0) at the given
size and exports it twice with torch's dynamo exporter: opset 18 (the
exporter's lowest: RMSNorm and attention as primitive ops) and opset 23
(RMSNormalization and Attention nodes). Checks both against ONNX Runtime on
one input, then times `aitune bench MODEL --backend native` on the two in
alternating rounds (the machine is shared: rounds interleave so drift hits
both) and prints the median of each and the ratio per round.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "scripts"))


def bench_ms(aitune, model, backend):
    r = subprocess.run([aitune, "bench", model, "--backend", backend, "--iters", "50"],
                       capture_output=True, text=True)
    m = re.search(r"median ([0-9.]+) ms", r.stdout + r.stderr)
    if not m:
        raise RuntimeError(r.stdout + r.stderr)
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--aitune", default=os.path.join(ROOT, "build", "aitune"))
    ap.add_argument("--backend", default="native")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--seq", type=int, default=128)
    a = ap.parse_args()
    import numpy as np
    import onnxruntime as ort
    import torch
    import make_models
    torch.manual_seed(0)
    model = make_models.RMSDecoder(a.hidden, a.heads, a.layers).eval()
    x = torch.randn(1, a.seq, a.hidden)
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for op in (18, 23):
            paths[op] = os.path.join(tmp, f"decoder_op{op}.onnx")
            with torch.no_grad():
                torch.onnx.export(model, (x,), paths[op], input_names=["input"], output_names=["output"],
                                  opset_version=op, dynamo=True, external_data=False)
            want = ort.InferenceSession(paths[op], providers=["CPUExecutionProvider"]).run(
                None, {"input": x.numpy()})[0]
            inp, out = os.path.join(tmp, f"in{op}"), os.path.join(tmp, f"out{op}")
            os.makedirs(inp)
            make_models.save_pb(x.numpy(), os.path.join(inp, "input_0.pb"), "input")
            subprocess.run([a.aitune, "run", paths[op], "--backend", a.backend, "--inputs", inp,
                            "--outputs", out], check=True, capture_output=True)
            got = make_models_load(os.path.join(out, "output_0.pb"))
            rel = float(np.max(np.abs(got - want)) / (np.max(np.abs(want)) or 1))
            print(f"opset {op}: max rel. error vs ONNX Runtime {rel:.2e}")
        t = {18: [], 23: []}
        for r in range(a.rounds):
            for op in ((18, 23) if r % 2 == 0 else (23, 18)):
                t[op].append(bench_ms(a.aitune, paths[op], a.backend))
            print(f"round {r}: opset 18 {t[18][-1]:.3f} ms, opset 23 {t[23][-1]:.3f} ms, "
                  f"23/18 {t[23][-1] / t[18][-1]:.3f}")
        m18, m23 = statistics.median(t[18]), statistics.median(t[23])
        ratios = [b / c for b, c in zip(t[23], t[18])]
        print(f"median: opset 18 {m18:.3f} ms, opset 23 {m23:.3f} ms; 23/18 of medians {m23 / m18:.3f}, "
              f"median of per-round ratios {statistics.median(ratios):.3f}")
    return 0


def make_models_load(path):
    import onnx
    from onnx import numpy_helper
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


if __name__ == "__main__":
    sys.exit(main())
