#!/usr/bin/env python3
"""CPU time of every suite model, aitune's backends against ONNX Runtime and
OpenVINO on one thread each, as a markdown table.

    python3 bench/cpu_sweep.py [--exporters dynamo,torchscript] [--batches 1,8]
        [--backends native,onednn] [--models a,b] [--iters 5] [--lib build/libaitune.so]
        [--label L] [--json OUT.json] [--base OLD/libaitune.so] [--no-peers]

Each case runs bench/cpu_time.py (one process a case, engines in turn, each
iteration in its own random order, seeded inputs as bench/suite.py makes
them). CPU time, unlike wall time, reads the same on a loaded 2-core machine
(see bench/cpu_time.py), so this is the kernel-level comparison; the wall-clock
numbers of the tuned pick with every engine at full threads are bench/suite.py's.
Ratios are ORT's (or OpenVINO's) median time over aitune's: > 1, aitune is
faster. "best aitune" is the faster of the listed backends, as the tuner
would pick between them.

--base OLD.so adds the same backends from another build (bench/cpu_time.py's
--alt) in the same process, interleaved: the paired check that a change is no
slower on any model ("best aitune ×base" = best base time over best new time;
the summary gives its geometric mean, lowest, and the cases below 0.98).
--no-peers leaves ONNX Runtime and OpenVINO out (a quicker paired run). Run it under LD_PRELOAD=build/cpuid_avx2.so (and
--label) for the AVX2-only view: every engine then sees an AVX2 CPU.
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LINE = re.compile(r"^(.*?)\s+min\s+([\d.]+)\s+med\s+([\d.]+) ms CPU")


def cases(root, models, exporters, batches):
    """bench/suite.py's cases, with each folder's exporter."""
    sys.path.insert(0, HERE)
    import suite
    for d, meta, b, path in suite.cases_of(root, models, exporters, batches):
        yield d, d.partition("@")[2] or meta["exporter"], b, path


def gmean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--exporters", default="torchscript,dynamo")
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--backends", default="native,onednn")
    ap.add_argument("--models", default="")
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--lib", default=os.path.join(ROOT, "build", "libaitune.so"))
    ap.add_argument("--root", default=os.path.join(ROOT, "models", "gen", "suite"))
    ap.add_argument("--label", default="")
    ap.add_argument("--json", default="")
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--base", default="", help="another libaitune.so, timed paired with --lib")
    ap.add_argument("--no-peers", action="store_true", help="no ONNX Runtime / OpenVINO")
    a = ap.parse_args()
    models = set(filter(None, a.models.split(",")))
    backends = [b for b in a.backends.split(",") if b]
    rows = []
    for name, ex, b, path in cases(a.root, models, a.exporters.split(","), [int(x) for x in a.batches.split(",")]):
        heavy = any(k in name for k in ("r3d_18", "swin_t", "convnext", "densenet"))
        it = max(2, a.iters // 2) if heavy and b > 1 else a.iters
        cmd = [sys.executable, os.path.join(HERE, "cpu_time.py"), path, "--lib", a.lib, "--batch", str(b),
               "--iters", str(it)] + ([] if a.no_peers else ["--ort", "--ov"])
        if a.base:
            cmd += ["--alt", f"base={a.base}"]
        for be in backends:
            cmd += ["--backend", f"{be}:threads=1"] + (["--backend", f"base@{be}:threads=1"] if a.base else [])
        err = "timeout"
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
            out, err = p.stdout, p.stderr[-300:]
        except subprocess.TimeoutExpired:
            out = ""
        med = {}
        for line in out.splitlines():
            m = LINE.match(line.strip())
            if m:
                med[m.group(1).strip()] = float(m.group(3))
        row = {"model": name.partition("@")[0], "exporter": ex, "batch": b, "ms": med}
        if not med:
            row["error"] = err or "no output"
        rows.append(row)
        print(f"{name} b{b}: {med}", file=sys.stderr, flush=True)
    ort, ov = "ORT 1 thread", "OpenVINO 1 thread"
    heads = [f"aitune {b} ms" for b in backends]
    bh = " base ms | best aitune ×base |" if a.base else ""
    print(f"| model | exporter | batch | {' | '.join(heads)} |{bh} ORT ms | OpenVINO ms | "
          f"best aitune ×ORT | best aitune ×OV |")
    print("|---|---|---|" + "---|" * (len(heads) + 4 + (2 if a.base else 0)))
    r_ort, r_ov, r_base = [], [], []
    for r in rows:
        m = r["ms"]
        ours = [m.get(f"aitune {b}:threads=1") for b in backends]
        best = min([x for x in ours if x] or [float("nan")])
        bcol = ""
        if a.base:
            olds = [m.get(f"aitune base@{b}:threads=1") for b in backends]
            bbest = min([x for x in olds if x] or [float("nan")])
            xb = bbest / best if best == best and bbest == bbest else float("nan")
            if xb == xb:
                r_base.append((xb, r))
            bcol = f" {bbest:.2f} | **{xb:.3f}** |"
        xo = m.get(ort, float("nan")) / best if m.get(ort) else float("nan")
        xv = m.get(ov, float("nan")) / best if m.get(ov) else float("nan")
        if xo == xo:
            r_ort.append(xo)
        if xv == xv:
            r_ov.append(xv)
        f = lambda x: f"{x:.2f}" if x else "–"  # noqa: E731
        print(f"| {r['model']} | {r['exporter']} | {r['batch']} | " + " | ".join(f(x) for x in ours) +
              f" |{bcol} {f(m.get(ort))} | {f(m.get(ov))} | **{xo:.2f}** | {xv:.2f} |")
    print(f"\nGeometric mean, best aitune backend over ORT: **{gmean(r_ort):.2f}×** over {len(r_ort)} cases "
          f"(≥ 1.0 in {sum(x >= 1 for x in r_ort)}); over OpenVINO: **{gmean(r_ov):.2f}×** ({len(r_ov)} cases).")
    if r_base:
        xs = [x for x, _ in r_base]
        low = [f"{r['model']} {r['exporter']} b{r['batch']} {x:.3f}" for x, r in r_base if x < 0.98]
        print(f"\nPaired against the base build: geometric mean **{gmean(xs):.3f}×** over {len(xs)} cases, "
              f"lowest {min(xs):.3f}; below 0.98: {', '.join(low) if low else 'none'}.")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"label": a.label, "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
