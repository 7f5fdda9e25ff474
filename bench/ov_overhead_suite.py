#!/usr/bin/env python3
"""bench/ov_overhead.py over the suite's models: aitune's openvino candidate
(its tuned folder, as the suite's aitune:openvino row runs it) against
OpenVINO alone (as the suite's openvino row runs it), in one process,
interleaved.

    python3 bench/ov_overhead_suite.py [--models a,b] [--iters 30] [--aitune build/aitune]
        [--engines ov,tuned,...] [--threads N] [--clock wall|cpu] [--out results.jsonl]

For each model folder of models/gen/suite (batch 1, TorchScript exports and
the trained files): the suite's input preparation (bench/suite.py's
fixed_copy and make_inputs: the same seeded inputs), `aitune tune MODEL
--backends openvino:threads=N --batch-sizes 1 --inputs DIR --no-perf-validation`
(the candidate is kept even where eager timed faster), then
bench/ov_overhead.py on that folder. One JSON line per model to --out and
a table at the end: the median of the paired ratios OpenVINO alone time /
engine time (>= 1: the engine is as fast).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import suite  # noqa: E402  (fixed_copy, make_inputs, cases_of)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=None)
    ap.add_argument("--models-dir", default=os.path.join(HERE, "..", "models", "gen", "suite"))
    ap.add_argument("--aitune", default=os.path.join(HERE, "..", "build", "aitune"))
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--engines", default="ov,tuned")
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    names = a.models.split(",") if a.models else None
    tmp = tempfile.mkdtemp(prefix="ov-overhead-")
    rows = []
    for name, meta, batch, path in suite.cases_of(a.models_dir, names, ["torchscript"], [1]):
        if "@" in name:
            continue
        work = os.path.join(tmp, name)
        os.makedirs(work, exist_ok=True)
        model = suite.fixed_copy(path, meta["batch_axis"], work)
        _, pb, _ = suite.make_inputs(meta, batch, model, work)
        tdir = os.path.join(work, "tuned")
        t = subprocess.run([a.aitune, "tune", model, "--out", tdir, "--backends",
                            f"openvino:threads={a.threads}", "--batch-sizes", str(batch),
                            "--inputs", pb, "--no-cache", "--no-perf-validation"],
                           capture_output=True, text=True)
        if t.returncode:
            print(f"{name}: tune failed: {t.stderr.strip().splitlines()[-1:]}", flush=True)
            continue
        j = os.path.join(work, "res.json")
        r = subprocess.run([sys.executable, os.path.join(HERE, "ov_overhead.py"), model, "--tuned", tdir,
                            "--inputs", pb, "--iters", str(a.iters), "--engines", a.engines,
                            "--threads", str(a.threads), "--clock", a.clock,
                            "--lib", os.path.join(os.path.dirname(os.path.abspath(a.aitune)), "libaitune.so"),
                            "--json", j], capture_output=True, text=True)
        if r.returncode:
            print(f"{name}: ov_overhead failed: {r.stderr.strip().splitlines()[-1:]}", flush=True)
            continue
        res = json.load(open(j))
        res["name"] = name
        res["selected"] = json.load(open(os.path.join(tdir, "decision.json"))).get("backend")
        rows.append(res)
        line = " ".join(f"{e} {v['median']:.2f} ms ({v['ratio']:.3f})" for e, v in res["engines"].items())
        print(f"{name} [{res['selected']}]: {line}; load {res['loadavg'][0]:.1f}", flush=True)
        if a.out:
            with open(a.out, "a") as f:
                f.write(json.dumps(res) + "\n")
    print("| model | " + " | ".join(f"{e} ms" for e in a.engines.split(",")) + " | " +
          " | ".join(f"ov / {e}" for e in a.engines.split(",")[1:]) + " | load |")
    print("|---|" + "---|" * (2 * len(a.engines.split(",")) - 1) + "---|")
    for res in rows:
        es = res["engines"]
        print(f"| {res['name']} | " + " | ".join(f"{es[e]['median']:.2f}" for e in a.engines.split(",")) +
              " | " + " | ".join(f"{es[e]['ratio']:.2f}" for e in a.engines.split(",")[1:]) +
              f" | {res['loadavg'][0]:.1f} |")


if __name__ == "__main__":
    main()
