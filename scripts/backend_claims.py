#!/usr/bin/env python3
"""Does each backend pass every node test of the ops it claims? (issue 21)

    python3 scripts/backend_claims.py [--aitune build/aitune]
        [--backends native,onednn,xnnpack,openvino,quant] [--suites old,new]
        [--json out.json] [--markdown out.md] [--timeout 60]

Runs `aitune conformance --backend B` for eager and each backend on the
ONNX 1.12 node tests (Debian's libonnx-testdata, "old") and on the installed
onnx package's node tests ("new", written by scripts/onnx_node_tests.py into
build/onnx-node-tests), and sorts every test a backend does not pass:

- refused:  the backend declined the graph, naming the node and the reason
            (it takes none of it, OpenVINO's frontend or compiler refuses it,
            quant has nothing to quantize). Not a claim.
- wrong:    the backend ran and the values or shapes differ (a claim broken),
            split into "eager passes" (a backend bug) and "eager fails too"
            (the test's own trouble: random ops, data that disagrees with the
            spec; docs/conformance.md lists those for eager).
- error:    the backend took the graph and then failed at run with a message.

Exits 1 when some backend is wrong on a test that eager passes.
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SUITES = {"old": "/usr/share/libonnx-testdata/data/node",
          "new": os.path.join(ROOT, "build", "onnx-node-tests", "node")}
# A failure line that says the backend declined the graph before running it.
REFUSED = re.compile(r"takes 0 of \d+ nodes|first unsupported|no node to quantize|"
                     r"compiling the model|reading the model|is not an op the|refuses|cannot take|"
                     r"not supported by|unsupported|is not implemented by")
WRONG = re.compile(r"output \d+ \(.*\): (element|shape|dtype|rank|type|expected|got|\d+ element)|"
                   r"expected shape|expected dtype|expected rank|is [^,]+, expected")


def run(aitune, backend, folder, timeout):
    r = subprocess.run([aitune, "conformance", "--backend", backend, "--timeout", str(timeout), folder],
                       capture_output=True, text=True)
    tests = collections.OrderedDict()
    for line in r.stdout.splitlines():
        verdict, _, rest = line.partition(" ")
        if verdict not in ("PASS", "FAIL", "SKIP"):
            continue
        path, _, reason = rest.partition(": ")
        tests[os.path.basename(path)] = (verdict, reason)
    if not tests:
        raise RuntimeError(f"{backend} on {folder}: no verdicts: {r.stdout[-500:]}{r.stderr[-500:]}")
    return tests


def classify(verdict, reason):
    if verdict == "PASS":
        return "pass"
    if verdict == "SKIP":
        return "skip"
    if WRONG.search(reason):
        return "wrong"
    if REFUSED.search(reason):
        return "refused"
    return "error"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--aitune", default=os.path.join(ROOT, "build", "aitune"))
    ap.add_argument("--backends", default="native,onednn,xnnpack,openvino,quant")
    ap.add_argument("--suites", default="old,new")
    ap.add_argument("--timeout", type=int, default=60)
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    a = ap.parse_args()
    suites = a.suites.split(",")
    if "new" in suites and not os.path.isdir(SUITES["new"]):
        subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "onnx_node_tests.py"), "--out",
                        os.path.dirname(SUITES["new"]), "--quiet"], check=True)
    result, bugs = {}, 0
    md = ["| suite | backend | passed | tests | refused by name | error at run | wrong, eager passes | "
          "wrong, eager fails too |", "|---|---|---|---|---|---|---|---|"]
    for s in suites:
        eager = run(a.aitune, "eager", SUITES[s], a.timeout)
        result[s] = {"eager": {k: v[0] for k, v in eager.items()}}
        for b in a.backends.split(","):
            got = run(a.aitune, b, SUITES[s], a.timeout)
            per = collections.defaultdict(list)
            for name, (verdict, reason) in got.items():
                c = classify(verdict, reason)
                if c == "wrong":
                    c = "wrong_eager_passes" if eager.get(name, ("FAIL",))[0] == "PASS" else "wrong_eager_fails"
                per[c].append((name, reason[:300]))
            bugs += len(per["wrong_eager_passes"])
            result[s][b] = {k: v for k, v in per.items()}
            n = len(got)
            md.append(f"| {s} | {b} | {len(per['pass'])} | {n} | {len(per['refused'])} | {len(per['error'])} | "
                      f"{len(per['wrong_eager_passes'])} | {len(per['wrong_eager_fails'])} |")
            print(md[-1], flush=True)
            for k in ("wrong_eager_passes", "wrong_eager_fails", "error"):
                for name, reason in per[k]:
                    print(f"  {s} {b} {k}: {name}: {reason[:200]}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("\n".join(md) + "\n")
    print("\n".join(md))
    return 1 if bugs else 0


if __name__ == "__main__":
    sys.exit(main())
