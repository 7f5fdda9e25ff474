#!/usr/bin/env python3
"""The conformance suite measured through `aitune run` output files.

For every test folder under the given roots: `aitune run model.onnx
--inputs test_data_set_N --outputs TMP`, then compare TMP/output_K.pb with
the expected output_K.pb in numpy, with the tolerances of docs/conformance.md
(exact for integers, bools and strings). Independent of the C comparator
used by `aitune conformance`, so the two check each other.
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from onnx_values import compare, load_value, test_dirs  # noqa: E402


def run_test(aitune, d):
    import onnx
    outs = onnx.load(os.path.join(d, "model.onnx"), load_external_data=False).graph.output
    sets = sorted(glob.glob(os.path.join(d, "test_data_set_*")))
    for s in sets:
        n_out = len(glob.glob(os.path.join(s, "output_*.pb")))
        with tempfile.TemporaryDirectory() as tmp:
            r = subprocess.run([aitune, "run", os.path.join(d, "model.onnx"), "--inputs", s,
                                "--outputs", tmp], capture_output=True, text=True, timeout=300)
            if r.returncode != 0:
                return r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}"
            for k in range(n_out):
                try:
                    w = load_value(os.path.join(s, f"output_{k}.pb"), outs[k].type)
                except Exception as e:  # a map, say: cannot be a pass
                    return f"cannot decode expected output_{k}.pb: {e}"
                g = load_value(os.path.join(tmp, f"output_{k}.pb"), outs[k].type)
                why = compare(g, w)
                if why:
                    return f"output {k}: {why}"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--aitune", required=True)
    ap.add_argument("--min-pass", type=int, default=-1)
    ap.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    passed = failed = 0
    for d in test_dirs(a.dirs):
        why = run_test(a.aitune, d)
        print(f"{'PASS' if why is None else 'FAIL'} {d}{'' if why is None else ': ' + why}", flush=True)
        passed += why is None
        failed += why is not None
    print(f"{passed} passed, {failed} failed, 0 skipped")
    if a.min_pass >= 0:
        return 0 if passed >= a.min_pass else 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
