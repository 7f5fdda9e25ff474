#!/usr/bin/env python3
"""A model of the ops native's AVX2 math and attention kernels serve, for A/B timing.

    python3 bench/avx2_math_model.py OUT_DIR [--seq 128] [--heads 4] [--head 64] [--batch 1]
                                     [--attention-only]

Writes OUT_DIR/model.onnx and OUT_DIR/test_data_set_0/input_K.pb: BERT's attention as
PyTorch exports it (Transposes, MatMul, Div, Add of a padding mask, Softmax, MatMul,
Transpose: native fuses it to one FusedAttention), then Reshape to [B, S, H*D],
LayerNormalization, Gelu (opset 20, erf form), Tanh, Sigmoid and a Softmax over the
hidden axis, each a standalone op (no product to fuse into); --attention-only stops
after the Reshape. Feed it to
bench/interleaved.py.
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--head", type=int, default=64)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--attention-only", action="store_true")
    a = ap.parse_args()
    B, S, H, D = a.batch, a.seq, a.heads, a.head
    f = TensorProto.FLOAT
    ins = [helper.make_tensor_value_info(n, f, [B, S, H, D]) for n in ("q", "k", "v")]
    ins.append(helper.make_tensor_value_info("mask", f, [B, 1, 1, S]))
    out = helper.make_tensor_value_info("y", f, [B, S, H * D])
    inits = [numpy_helper.from_array(np.array(np.sqrt(D), np.float32), "scale"),
             numpy_helper.from_array(np.array([B, S, H * D], np.int64), "shape"),
             numpy_helper.from_array(np.random.RandomState(1).rand(H * D).astype(np.float32) + 0.5, "gamma"),
             numpy_helper.from_array(np.random.RandomState(2).rand(H * D).astype(np.float32), "beta")]
    N = helper.make_node
    nodes = [N("Transpose", ["q"], ["qt"], perm=[0, 2, 1, 3]), N("Transpose", ["k"], ["kt"], perm=[0, 2, 3, 1]),
             N("Transpose", ["v"], ["vt"], perm=[0, 2, 1, 3]), N("MatMul", ["qt", "kt"], ["s0"]),
             N("Div", ["s0", "scale"], ["s1"]), N("Add", ["s1", "mask"], ["s2"]),
             N("Softmax", ["s2"], ["p"], axis=-1), N("MatMul", ["p", "vt"], ["y0"]),
             N("Transpose", ["y0"], ["y1"], perm=[0, 2, 1, 3]), N("Reshape", ["y1", "shape"], ["r"]),
             N("LayerNormalization", ["r", "gamma", "beta"], ["l"], axis=-1), N("Gelu", ["l"], ["g"]),
             N("Tanh", ["g"], ["t"]), N("Sigmoid", ["t"], ["sg"]), N("Softmax", ["sg"], ["y"], axis=-1)]
    if a.attention_only:
        nodes = nodes[:10]
        nodes[-1].output[0] = "y"
    g = helper.make_graph(nodes, "avx2_math", ins, [out], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])
    m.ir_version = 9
    onnx.checker.check_model(m)
    os.makedirs(os.path.join(a.out, "test_data_set_0"), exist_ok=True)
    onnx.save(m, os.path.join(a.out, "model.onnx"))
    rs = np.random.RandomState(0)
    feeds = [rs.randn(B, S, H, D).astype(np.float32) for _ in range(3)]
    mask = np.zeros((B, 1, 1, S), np.float32)
    mask[..., S - S // 8:] = -10000.0  # a padded tail
    for k, arr in enumerate(feeds + [mask]):
        with open(os.path.join(a.out, "test_data_set_0", f"input_{k}.pb"), "wb") as fh:
            fh.write(numpy_helper.from_array(arr).SerializeToString())


if __name__ == "__main__":
    main()
