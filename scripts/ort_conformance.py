#!/usr/bin/env python3
"""ONNX Runtime on folders in the ONNX backend-test layout, for comparison.

    python3 scripts/ort_conformance.py [--jobs N] DIR...

DIR is one test folder (holding model.onnx) or a folder of test folders, as
for `aitune conformance`. Prints the same lines (PASS/FAIL name[: reason])
and the same summary, with the tolerances of docs/conformance.md: floats
|got - want| <= atol + rtol * |want| (float32 1e-3/1e-5, float64 1e-6/1e-7,
float16 1e-2/1e-3, bfloat16 2e-2/1e-2), NaN equal to NaN, everything else
exact. Tests run in worker processes, so a crash fails that test only (a dead
worker's pool is replaced; the test it was running is the one that fails,
with two workers possibly its neighbour).
Inputs and outputs are read with numpy_helper (sequences, optionals and maps
too, which the onnx wheel can decode).
"""
import argparse
import concurrent.futures
import glob
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from onnx_values import compare, load_value, test_dirs  # noqa: E402


def run_test(d):
    try:
        import onnx
        import onnxruntime as ort
        model = onnx.load(os.path.join(d, "model.onnx"))
        so = ort.SessionOptions()
        so.log_severity_level = 4
        sess = ort.InferenceSession(os.path.join(d, "model.onnx"), so,
                                    providers=["CPUExecutionProvider"])
        g = model.graph
        init = {i.name for i in g.initializer}
        ins = [v for v in g.input if v.name not in init]
        for s in sorted(glob.glob(os.path.join(d, "test_data_set_*"))):
            feeds = {}
            for k, v in enumerate(ins):
                p = os.path.join(s, f"input_{k}.pb")
                if os.path.exists(p):
                    feeds[v.name] = load_value(p, v.type)
            outs = sess.run(None, feeds)
            for k, v in enumerate(g.output):
                p = os.path.join(s, f"output_{k}.pb")
                if not os.path.exists(p):
                    continue
                why = compare(outs[k], load_value(p, v.type), strict_dtype=False)
                if why:
                    return f"{os.path.basename(s)}: output {k} ('{v.name}'): {why}"
        return None
    except Exception as e:  # noqa: BLE001 - any refusal is a failure, with its text
        return " ".join(str(e).split())[:300] or type(e).__name__


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    tests = test_dirs(a.dirs)
    passed = failed = 0
    # Workers are reused (importing onnxruntime costs seconds); one that dies
    # fails the test it ran, and a fresh pool takes the rest.
    todo = list(tests)
    while todo:
        ex = concurrent.futures.ProcessPoolExecutor(a.jobs)
        futs = [ex.submit(run_test, d) for d in todo]
        done = 0
        for d, f in zip(todo, futs):
            try:
                why = f.result(timeout=a.timeout)
            except concurrent.futures.process.BrokenProcessPool:
                why = "worker died (crash)"
                done += 1
                print(f"FAIL {d}: {why}", flush=True)
                failed += 1
                break
            except Exception as e:  # noqa: BLE001 - a time-out, say
                why = f"worker failed: {type(e).__name__}"
            done += 1
            print(f"{'PASS' if why is None else 'FAIL'} {d}{'' if why is None else ': ' + why}", flush=True)
            passed += why is None
            failed += why is not None
        ex.shutdown(wait=False, cancel_futures=True)
        todo = todo[done:]
    print(f"{passed} passed, {failed} failed, 0 skipped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
