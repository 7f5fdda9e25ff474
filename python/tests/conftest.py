"""Shared pieces of the aitune_c tests: short tuning options (a loaded
2-core machine runs the whole file in well under 3 minutes) and small ONNX
models written with onnx.helper."""
import numpy as np
import pytest

# profiling cut to a few runs; no decision cache, no runoff, no progress bar
FAST = dict(time_budget_s=0.05, warmup=1, min_runs=2, max_runs=3, cv_target=0.0,
            runoff_rounds=0, cache_dir="", quiet=True)


def onnx_two_inputs() -> bytes:
    """a [N, 4], b [N, 4] (named) -> sum = a + b, prod = Relu(a * b)."""
    from onnx import TensorProto, helper
    f = TensorProto.FLOAT
    g = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["sum"]),
         helper.make_node("Mul", ["a", "b"], ["ab"]),
         helper.make_node("Relu", ["ab"], ["prod"])],
        "two_inputs",
        [helper.make_tensor_value_info("a", f, ["N", 4]), helper.make_tensor_value_info("b", f, ["N", 4])],
        [helper.make_tensor_value_info("sum", f, ["N", 4]), helper.make_tensor_value_info("prod", f, ["N", 4])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def onnx_mlp(width=32) -> bytes:
    """x [N, width] -> y = Relu(x W + c) [N, width], one float input."""
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((width, width)).astype(np.float32) * 0.1, "w")
    c = numpy_helper.from_array(rng.standard_normal(width).astype(np.float32), "c")
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["xw"]), helper.make_node("Add", ["xw", "c"], ["h"]),
         helper.make_node("Relu", ["h"], ["y"])],
        "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", width])], initializer=[w, c])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def mlp_reference(model_bytes: bytes, x: np.ndarray) -> np.ndarray:
    import onnx
    from onnx import numpy_helper
    m = onnx.load_from_string(model_bytes)
    init = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    return np.maximum(x @ init["w"] + init["c"], 0)


@pytest.fixture
def two_inputs_file(tmp_path):
    p = tmp_path / "two_inputs.onnx"
    p.write_bytes(onnx_two_inputs())
    return p
