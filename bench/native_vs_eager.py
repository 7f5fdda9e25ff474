#!/usr/bin/env python3
"""native against eager on the real models, in one run, same inputs.

    python3 bench/native_vs_eager.py [--aitune build/aitune] [--rounds 3] [--out docs/native.md]

Each round times eager and then native with `aitune bench --inputs` on each
model's committed sample (BERT at seq 128), alternating so that machine noise
hits both; the table reports the median of the per-round medians and the
ratio native/eager (lower is faster).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
MODELS = ["bert_tiny", "mobilenetv2_035", "gen/mlp", "gen/resnet18", "gen/resnet50", "gen/mobilenetv2",
          "gen/bert_4l_256", "gen/bert_base"]


def bench(aitune, model_dir, backend, iters):
    cmd = [aitune, "bench", os.path.join(model_dir, "model.onnx"), "--backend", backend, "--inputs",
           os.path.join(model_dir, "test_data_set_0"), "--warmup", "2", "--iters", str(iters), "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip())
    return json.loads(r.stdout)["latency_ms"]["median"]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--aitune", default=os.path.join(ROOT, "build", "aitune"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "native.md"))
    a = ap.parse_args()
    rows = []
    for name in MODELS:
        d = os.path.join(ROOT, "models", name)
        if not os.path.exists(os.path.join(d, "model.onnx")):
            print(f"skip {name}: not generated (python3 scripts/make_models.py)", file=sys.stderr)
            continue
        iters = 3 if "bert_base" in name or "resnet50" in name else 10
        e, n = [], []
        for _ in range(a.rounds):
            e.append(bench(a.aitune, d, "eager", iters))
            n.append(bench(a.aitune, d, "native", iters))
        me, mn = statistics.median(e), statistics.median(n)
        rows.append((name, me, mn, mn / me))
        print(f"{name}: eager {me:.2f} ms, native {mn:.2f} ms, ratio {mn / me:.2f}", flush=True)
    cpu = [l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")][0]
    with open(a.out, "w") as f:
        f.write("# native against eager\n\n")
        f.write("`native` (graph passes, fused ops, arena, thread pool, OpenBLAS) against the reference "
                "`eager`, batch 1, each model's committed sample (BERT: seq 128), outputs checked "
                "against ONNX Runtime by `tests/real_models.py`. Median of per-round medians over "
                f"{a.rounds} alternating rounds; ratio = native / eager (lower is faster).\n\n")
        f.write(f"Machine: {cpu}, {os.cpu_count()} cores, shared and noisy: read the ratios. "
                "Reproduce: `python3 bench/native_vs_eager.py`.\n\n")
        f.write("| model | eager median ms | native median ms | native / eager |\n|---|---|---|---|\n")
        for name, me, mn, r in rows:
            f.write(f"| {name} | {me:.2f} | {mn:.2f} | {r:.2f} |\n")
    return 0 if all(r < 1 for *_, r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
