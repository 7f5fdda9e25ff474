"""FLOPs of a model at given inputs: 2 x multiply-accumulates of every Conv,
MatMul and Gemm node (the work a GEMM ceiling bounds; elementwise ops,
normalisation and softmax are not counted).

Shapes come from the real inputs: ONNX shape inference cannot resolve every
dim of an exported BERT (the head size goes through Shape/Gather/Div), so the
operands of the counted nodes are made graph outputs of a copy of the model
and ONNX Runtime runs it once without graph optimizations. Initializer and
graph-input shapes are read directly.
"""
import numpy as np

COUNTED = ("Conv", "MatMul", "Gemm")


def _attr(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return a.i
    return default


def _node_flops(node, shape):
    out, a, b = shape(node.output[0]), shape(node.input[0]), shape(node.input[1])
    if node.op_type == "Conv":
        return 2 * int(np.prod(out)) * int(np.prod(b[1:]))  # b = [Cout, Cin/group, kh, kw]
    if node.op_type == "MatMul":
        return 2 * int(np.prod(out)) * int(a[-1])
    k = a[0] if _attr(node, "transA", 0) else a[-1]  # Gemm
    return 2 * int(np.prod(out)) * int(k)


def per_node(model_path, inputs):
    """{node name: (op type, FLOPs, class)} for every counted node of
    model_path run on `inputs`; class is "depthwise", "pointwise" (1x1),
    "conv" (other convolutions), "matmul" or "gemm"."""
    import onnx
    import onnxruntime as ort
    m = onnx.load(model_path)
    known = {t.name: list(t.dims) for t in m.graph.initializer}
    names = [i.name for i in m.graph.input if i.name not in known]
    known.update({n: list(x.shape) for n, x in zip(names, inputs)})
    want = []
    for n in m.graph.node:
        if n.op_type in COUNTED:
            for t in (n.input[0], n.input[1], n.output[0]):
                if t not in known and t not in want:
                    want.append(t)
    have = {o.name for o in m.graph.output}
    for t in want:
        if t not in have:
            m.graph.output.append(onnx.helper.make_empty_tensor_value_info(t))
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    if want:
        for t, v in zip(want, sess.run(want, dict(zip(names, inputs)))):
            known[t] = list(np.shape(v))
    out = {}
    for n in m.graph.node:
        if n.op_type in COUNTED:
            out[n.name] = (n.op_type, _node_flops(n, lambda t: known[t]), _klass(n, known))
    return out


def _klass(node, known):
    if node.op_type != "Conv":
        return node.op_type.lower()
    w = known[node.input[1]]  # [Cout, Cin/group, kh, kw]
    if _attr(node, "group", 1) > 1 and w[1] == 1:
        return "depthwise"
    return "pointwise" if w[2:] == [1, 1] else "conv"


def count(model_path, inputs):
    """FLOPs of model_path run on `inputs` (arrays in graph-input order) and
    a per-op-type breakdown {op: flops}."""
    total, by_op = 0, {}
    for op, f, _ in per_node(model_path, inputs).values():
        total += f
        by_op[op] = by_op.get(op, 0) + f
    return total, by_op
