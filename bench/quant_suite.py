#!/usr/bin/env python3
"""int8dq against native fp32 on the suite's transformer models (issue 17's quant target).

    python3 bench/quant_suite.py [--models a,b] [--batch 8] [--iters 6] [--isa avx512|avx2]
        [--no-avxvnni] [--lib build/libaitune.so] [--models-dir models/gen/suite]

For each model (bench/suite/models.py makes them; its inputs.json gives the inputs, as
bench/suite.py makes them: ids in range, masks padding the tail) it runs
`native:threads=1,isa=ISA` and `quant:preset=int8dq,threads=1,isa=ISA` in one process,
in turn, each iteration in a random order, and reads the CPU time of each run
(time.process_time: one thread each, so load from other jobs on a shared machine
moves it much less than wall time). Prints the median CPU ms of both, the median of the
per-iteration ratio fp32/int8dq (the speed-up), and the cosine of every float output of
int8dq against native fp32 on the same inputs (the worst output's).
--no-avxvnni sets AIT_QUANT_NO_AVXVNNI=1 (quant's AVX2 path without AVX-VNNI, as on
AMD Zen 2/3: vpmaddubsw + vpmaddwd). Run the script under bench/cpuid_avx2.c
(LD_PRELOAD) to have every library see an AVX2-only CPU.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import interleaved as il  # noqa: E402
import suite  # noqa: E402

TRANSFORMERS = "distilbert_like,all_minilm_l6_v2,paraphrase_minilm_l3,transformer_encdec,gpt2_step_kv"


def cosine(a, b):
    a, b = a.ravel(), b.ravel()
    d = np.linalg.norm(a) * np.linalg.norm(b)
    return float(a @ b / d) if d > 0 else float(np.array_equal(a, b))


def one(lib, path, meta, a):
    with tempfile.TemporaryDirectory() as work:
        model = suite.fixed_copy(path, meta["batch_axis"], work)
        npy, _, _ = suite.make_inputs(meta, a.batch, model, work)
        k, inputs = 0, []
        while os.path.exists(os.path.join(npy, f"input_{k}.npy")):
            inputs.append(np.ascontiguousarray(np.load(os.path.join(npy, f"input_{k}.npy"))))
            k += 1
        eng = [il.Aitune(lib, model, f"native:threads=1,isa={a.isa}", inputs),
               il.Aitune(lib, model, f"quant:preset=int8dq,threads=1,isa={a.isa}", inputs)]
        for e in eng:
            e.run()
        outs = []
        for e in eng:
            o, i = [], 0
            while True:
                try:
                    o.append(e.output(i))
                except RuntimeError:
                    break
                i += 1
            outs.append(o)
        cos = min((cosine(x, y) for x, y in zip(outs[0], outs[1]) if x is not None and y is not None),
                  default=float("nan"))
        t = il.cpu_times(eng, a.iters)
        f32, q = (t[e.name] for e in eng)
        for e in eng:
            e.close()
        return statistics.median(f32), statistics.median(q), statistics.median(x / y for x, y in zip(f32, q)), cos


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=TRANSFORMERS)
    ap.add_argument("--models-dir", default=os.path.join(HERE, "..", "models", "gen", "suite"))
    ap.add_argument("--lib", default=os.path.join(HERE, "..", "build", "libaitune.so"))
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--iters", type=int, default=6)
    ap.add_argument("--isa", default="avx512", choices=["avx512", "avx2", "portable"])
    ap.add_argument("--no-avxvnni", action="store_true")
    a = ap.parse_args()
    if a.no_avxvnni:
        os.environ["AIT_QUANT_NO_AVXVNNI"] = "1"
    lib = il.open_lib(a.lib)
    print(f"batch {a.batch}, isa={a.isa}{' without AVX-VNNI' if a.no_avxvnni else ''}, one thread, CPU ms (median of {a.iters})")
    print(f"{'model':24s} {'fp32 ms':>9s} {'int8dq ms':>9s} {'speed-up':>8s} {'cosine':>9s}")
    for name in a.models.split(","):
        path = os.path.join(a.models_dir, name, "model.onnx")
        meta_path = os.path.join(a.models_dir, name, "inputs.json")
        if not os.path.exists(path) or not os.path.exists(meta_path):
            print(f"{name:24s} (not generated: python3 bench/suite/models.py --models {name})")
            continue
        try:
            f32, q, r, cos = one(lib, path, json.load(open(meta_path)), a)
        except RuntimeError as e:
            print(f"{name:24s} failed: {e}")
            continue
        print(f"{name:24s} {f32:9.1f} {q:9.1f} {r:7.2f}x {cos:9.6f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
