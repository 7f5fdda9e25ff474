#!/usr/bin/env python3
"""Write the installed onnx package's node tests in the backend-test layout.

    python3 scripts/onnx_node_tests.py [--out DIR] [--op OP_TYPE] [--quiet]

The onnx wheel ships the generators of its node tests (each op's expect()
calls in onnx/backend/test/case/node/), not their data. This script runs
them (onnx.backend.test.case.node.collect_testcases()) and writes each case
as DIR/node/<name>/model.onnx plus test_data_set_N/input_K.pb, output_K.pb,
the layout `aitune conformance` reads, with numpy_helper as onnx's own
`backend-test-tools generate-data` does (sequences as SequenceProto,
optionals as OptionalProto, maps as MapProto).

DIR defaults to build/onnx-node-tests/<onnx version>; it is git-ignored
(build*/) and rewritten only when the onnx, ml_dtypes or numpy version it
was written with differs (the file DIR/VERSION), so the tests are made at
test time, never committed. The generators seed numpy's random state, so the data is the same
on every run of one onnx version.
"""
import argparse
import os
import shutil
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def write_value(path, value, vtype, name):
    """One input_K.pb / output_K.pb, encoded by the declared value type."""
    from onnx import TensorProto, numpy_helper
    if vtype.HasField("map_type"):
        proto = numpy_helper.from_dict(value, name)
    elif vtype.HasField("sequence_type"):
        proto = numpy_helper.from_list(value, name)
    elif vtype.HasField("optional_type"):
        proto = numpy_helper.from_optional(value, name)
    elif isinstance(value, TensorProto):
        proto = value
    else:
        proto = numpy_helper.from_array(value, name)
    with open(path, "wb") as f:
        f.write(proto.SerializeToString())


def write_case(case, node_dir):
    out = os.path.join(node_dir, case.name)
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    with open(os.path.join(out, "model.onnx"), "wb") as f:
        f.write(case.model.SerializeToString())
    g = case.model.graph
    for i, (inputs, outputs) in enumerate(case.data_sets or []):
        ds = os.path.join(out, f"test_data_set_{i}")
        os.makedirs(ds)
        for j, v in enumerate(inputs):
            write_value(os.path.join(ds, f"input_{j}.pb"), v, g.input[j].type, g.input[j].name)
        for j, v in enumerate(outputs):
            write_value(os.path.join(ds, f"output_{j}.pb"), v, g.output[j].type, g.output[j].name)


def main():
    import onnx
    from onnx.backend.test.case import node
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "onnx-node-tests", onnx.__version__))
    ap.add_argument("--op", default=None, help="only this op type's tests (onnx's own filter)")
    ap.add_argument("--force", action="store_true", help="rewrite even when DIR/VERSION matches")
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args()
    stamp = os.path.join(a.out, "VERSION")
    node_dir = os.path.join(a.out, "node")
    # the data depends on more than onnx: ml_dtypes makes the small types'
    # expected values (0.5.4 wraps out-of-range int4 casts, older gave 0)
    versions = [f"onnx {onnx.__version__}"]
    for mod in ("ml_dtypes", "numpy"):
        try:
            versions.append(f"{mod} {__import__(mod).__version__}")
        except ImportError:
            pass
    want = f"{' '.join(versions)} op={a.op or '*'}\n"
    if not a.force and os.path.exists(stamp) and open(stamp).read() == want:
        if not a.quiet:
            print(f"{node_dir}: already written for {want.strip()}")
        return 0
    if os.path.exists(a.out):
        shutil.rmtree(a.out)
    os.makedirs(node_dir)
    cases = [c for c in node.collect_testcases(a.op) if c.kind == "node"]
    names = set()
    for c in cases:
        if c.name in names:
            print(f"duplicate test name {c.name}", file=sys.stderr)
            return 1
        names.add(c.name)
        write_case(c, node_dir)
    with open(stamp, "w") as f:  # written last: a cut run is rewritten next time
        f.write(want)
    if not a.quiet:
        print(f"{node_dir}: {len(cases)} node tests of onnx {onnx.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
