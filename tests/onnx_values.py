"""Reading and comparing ONNX test values, shared by the conformance scripts
(tests/conformance_via_run.py: aitune through `aitune run`;
scripts/ort_conformance.py: ONNX Runtime), so both judge by the same rules:
the tolerances of docs/conformance.md, |got - want| <= atol + rtol * |want|
for floats, NaN equal to NaN, everything else exact.
"""
import glob
import os

TOL = {"float16": (1e-2, 1e-3), "bfloat16": (2e-2, 1e-2), "float32": (1e-3, 1e-5),
       "complex64": (1e-3, 1e-5), "float64": (1e-6, 1e-7), "complex128": (1e-6, 1e-7)}


def test_dirs(roots):
    """The test folders (holding model.onnx) of each root: the root itself, or
    its children, sorted."""
    out = []
    for root in roots:
        out += [root] if os.path.exists(os.path.join(root, "model.onnx")) else sorted(
            os.path.dirname(p) for p in glob.glob(os.path.join(root, "*", "model.onnx")))
    return out


def load_value(path, vtype=None):
    """A value file as numpy: a TensorProto, or by the declared type (an onnx
    TypeProto) a SequenceProto (a list), an OptionalProto (None or its value)
    or a MapProto (a dict)."""
    import onnx
    from onnx import numpy_helper
    data = open(path, "rb").read()
    for field, proto, conv in (("sequence_type", onnx.SequenceProto, numpy_helper.to_list),
                               ("optional_type", onnx.OptionalProto, numpy_helper.to_optional),
                               ("map_type", onnx.MapProto, numpy_helper.to_dict)):
        if vtype is not None and vtype.HasField(field):
            p = proto()
            p.ParseFromString(data)
            return conv(p)
    t = onnx.TensorProto()
    t.ParseFromString(data)
    return numpy_helper.to_array(t)


def compare(g, w, strict_dtype=True):
    """None when got g matches want w, else why not. strict_dtype: the dtypes
    must be equal too (aitune's files carry the dtype the graph declares)."""
    import numpy as np
    if isinstance(g, list) or isinstance(w, list):
        if not isinstance(g, list) or not isinstance(w, list) or len(g) != len(w):
            return "sequence lengths differ"
        for a, b in zip(g, w):
            why = compare(a, b, strict_dtype)
            if why:
                return why
        return None
    if g is None or w is None:
        return None if g is None and w is None else "optional: one is empty"
    if isinstance(w, dict) or isinstance(g, dict):
        return None if g == w else "maps differ"
    g, w = np.asarray(g), np.asarray(w)
    if w.dtype == np.uint16 and str(g.dtype) == "bfloat16":
        # ONNX <= 1.12 stored bfloat16 test tensors as their uint16 bits
        w = (w.astype(np.uint32) << 16).view(np.float32)
        g = g.astype(np.float32)
        rtol, atol = TOL["bfloat16"]
        ok = g.shape == w.shape and np.allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
        return None if ok else "values differ"
    if g.shape != w.shape or (strict_dtype and g.dtype != w.dtype):
        return f"{g.dtype}{list(g.shape)} vs {w.dtype}{list(w.shape)}"
    name = str(w.dtype)
    if name in TOL:
        rtol, atol = TOL[name]
        kind = np.complex128 if "complex" in name else np.float64
        if not np.allclose(g.astype(kind), w.astype(kind), rtol=rtol, atol=atol, equal_nan=True):
            return "values differ"
    elif name.startswith(("float8", "float4")):  # ml_dtypes' small floats: exact, NaN equals NaN
        if not np.array_equal(g.astype(np.float64), w.astype(np.float64), equal_nan=True):
            return "values differ"
    elif not np.array_equal(g, w):
        return "values differ"
    return None
