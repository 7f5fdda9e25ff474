#!/usr/bin/env python3
"""Load time of a tuned folder whose pick is openvino: imported from its
exported compiled model, against compiled from the graph.

    python3 bench/ov_load.py [--aitune build/aitune] [--rounds 5] DIR...

Each DIR is an `aitune tune MODEL --backends openvino --out DIR` folder. Two
copies are made beside it: DIR.compile (its openvino.txt names another
OpenVINO build, so load compiles from the graph; the blob is still there and
still hashed by the manifest check) and DIR.noblob (no blob at all: what
load did before the export). Every round times `aitune run` on the three,
in a rotating order (a new process each: library load, manifest check,
state load, one run on seeded inputs); the ratio of a round is its compile
time over its import time, and the figure is the median over rounds.
"""
import argparse
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import time


def variant(src, kind):
    dst = f"{src}.{kind}"
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    idx = os.path.join(dst, "backend", "openvino.txt")
    head = open(idx).read().split("\n")[0].rsplit(" ", 1)[0]
    with open(idx, "w") as f:
        f.write(head + " another-build\n")
    if kind == "noblob":
        os.remove(os.path.join(dst, "backend", "openvino_0.blob"))
    man = os.path.join(dst, "MANIFEST.sha256")
    lines = []
    for line in open(man):
        rel = line.rstrip("\n")[66:]
        p = os.path.join(dst, rel)
        if os.path.exists(p):
            lines.append(f"{hashlib.sha256(open(p, 'rb').read()).hexdigest()}  {rel}\n")
    open(man, "w").write("".join(lines))
    return dst


def run_s(aitune, d):
    t = time.perf_counter()
    subprocess.run([aitune, "run", d], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--aitune", default="build/aitune")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    for d in a.dirs:
        ds = {"import": d, "compile": variant(d, "compile"), "noblob": variant(d, "noblob")}
        blob = os.path.getsize(os.path.join(d, "backend", "openvino_0.blob"))
        run_s(a.aitune, d)  # page cache warm
        times = {k: [] for k in ds}
        order = list(ds)
        for r in range(a.rounds):
            for k in order[r % 3:] + order[:r % 3]:
                times[k].append(run_s(a.aitune, ds[k]))
        med = {k: statistics.median(v) for k, v in times.items()}
        rc = statistics.median(c / i for c, i in zip(times["compile"], times["import"]))
        rn = statistics.median(c / i for c, i in zip(times["noblob"], times["import"]))
        print(f"{os.path.basename(d)}: blob {blob / 1e6:.1f} MB; aitune run median import "
              f"{med['import']:.3f} s, compile (blob hashed) {med['compile']:.3f} s, compile "
              f"(no blob) {med['noblob']:.3f} s; compile/import {rc:.2f}x, no-blob/import "
              f"{rn:.2f}x (median of {a.rounds} rounds' ratios)", flush=True)


if __name__ == "__main__":
    sys.exit(main())
