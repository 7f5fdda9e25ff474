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

TOL = {"float16": (1e-2, 1e-3), "bfloat16": (2e-2, 1e-2), "float32": (1e-3, 1e-5),
       "complex64": (1e-3, 1e-5), "float64": (1e-6, 1e-7), "complex128": (1e-6, 1e-7)}


def load_pb(path, vtype=None):
    """A value file as numpy: a TensorProto, or by the declared type a
    SequenceProto (a list) or an OptionalProto (None or its value)."""
    import onnx
    from onnx import numpy_helper
    data = open(path, "rb").read()
    if vtype is not None and vtype.HasField("sequence_type"):
        p = onnx.SequenceProto()
        p.ParseFromString(data)
        return numpy_helper.to_list(p)
    if vtype is not None and vtype.HasField("optional_type"):
        p = onnx.OptionalProto()
        p.ParseFromString(data)
        return numpy_helper.to_optional(p)
    t = onnx.TensorProto()
    t.ParseFromString(data)
    return numpy_helper.to_array(t)


def compare(g, w):
    import numpy as np
    if isinstance(g, list) or isinstance(w, list):
        if not isinstance(g, list) or not isinstance(w, list) or len(g) != len(w):
            return "sequence lengths differ"
        for a, b in zip(g, w):
            why = compare(a, b)
            if why:
                return why
        return None
    if g is None or w is None:
        return None if g is None and w is None else "optional: one is empty"
    if w.dtype == np.uint16 and str(g.dtype) == "bfloat16":
        # ONNX <= 1.12 stored bfloat16 test tensors as their uint16 bits
        w = (w.astype(np.uint32) << 16).view(np.float32)
        g = g.astype(np.float32)
        rtol, atol = TOL["bfloat16"]
        ok = g.shape == w.shape and np.allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
        return None if ok else "values differ"
    if g.shape != w.shape or g.dtype != w.dtype:
        return f"{g.dtype}{list(g.shape)} vs {w.dtype}{list(w.shape)}"
    name = str(w.dtype)
    if name in TOL:
        rtol, atol = TOL[name]
        gg, ww = g.astype(np.complex128 if "complex" in name else np.float64), w.astype(
            np.complex128 if "complex" in name else np.float64)
        if not np.allclose(gg, ww, rtol=rtol, atol=atol, equal_nan=True):
            return "values differ"
    elif name.startswith(("float8", "float4")):  # ml_dtypes' small floats: exact, NaN equals NaN
        if not np.array_equal(g.astype(np.float64), w.astype(np.float64), equal_nan=True):
            return "values differ"
    elif not np.array_equal(g, w):
        return "values differ"
    return None


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
                    w = load_pb(os.path.join(s, f"output_{k}.pb"), outs[k].type)
                except Exception as e:  # a map, say: cannot be a pass
                    return f"cannot decode expected output_{k}.pb: {e}"
                g = load_pb(os.path.join(tmp, f"output_{k}.pb"), outs[k].type)
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
    for root in a.dirs:
        tests = [root] if os.path.exists(os.path.join(root, "model.onnx")) else sorted(
            os.path.dirname(p) for p in glob.glob(os.path.join(root, "*", "model.onnx")))
        for d in tests:
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
