#!/usr/bin/env python3
"""Build test models from real architectures with PyTorch (random weights, fixed seed).

    python3 scripts/make_models.py [--out DIR] [--only NAME,...] [--list]

Each model is exported to ONNX (opset 17) with a symbolic batch dim (encoder_dynamo,
decoder_op18, decoder_op23: torch's dynamo exporter at opsets 20, 18 and 23, static
shapes) and saved
with a sample input and ONNX Runtime's outputs in the ONNX test layout:
    DIR/NAME/model.onnx, DIR/NAME/test_data_set_0/{input,output}_K.pb
The small ones are committed under models/; the rest are generated into
models/gen/ (git-ignored) by the test suite.
"""
import argparse
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn


class BertLayer(nn.Module):
    """One BERT encoder layer written out as in the original model:
    multi-head self-attention with an additive mask, GELU feed-forward,
    post-LayerNorm residuals."""

    def __init__(self, hidden, heads, ffn):
        super().__init__()
        self.heads = heads
        self.qkv = nn.ModuleList([nn.Linear(hidden, hidden) for _ in range(3)])
        self.out = nn.Linear(hidden, hidden)
        self.ln1 = nn.LayerNorm(hidden, eps=1e-12)
        self.ff1 = nn.Linear(hidden, ffn)
        self.ff2 = nn.Linear(ffn, hidden)
        self.ln2 = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x, mask):
        b, s, h = x.shape
        d = h // self.heads
        q, k, v = [m(x).view(b, s, self.heads, d).transpose(1, 2) for m in self.qkv]
        att = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d) + mask
        ctx = torch.matmul(torch.softmax(att, dim=-1), v).transpose(1, 2).reshape(b, s, h)
        x = self.ln1(x + self.out(ctx))
        return self.ln2(x + self.ff2(nn.functional.gelu(self.ff1(x))))


class BertEncoder(nn.Module):
    def __init__(self, vocab, hidden, layers, heads, ffn, max_pos=512):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(max_pos, hidden)
        self.ln = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList([BertLayer(hidden, heads, ffn) for _ in range(layers)])

    def forward(self, input_ids, attention_mask):
        s = input_ids.shape[1]
        pos = torch.arange(s, device=input_ids.device).unsqueeze(0)
        x = self.ln(self.word(input_ids) + self.pos(pos))
        mask = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in self.layers:
            x = layer(x, mask)
        return x


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                                 nn.Linear(1024, 10))

    def forward(self, x):
        return self.net(x)


def bert(vocab, hidden, layers, heads, ffn, seq):
    def make():
        m = BertEncoder(vocab, hidden, layers, heads, ffn)
        ids = torch.randint(0, vocab, (1, seq), dtype=torch.int64)
        mask = torch.ones(1, seq, dtype=torch.int64)
        mask[0, seq - seq // 4:] = 0  # padded tail exercises the mask
        return m, (ids, mask), ["input_ids", "attention_mask"], {0: "batch", 1: "seq"}
    return make


def vision(ctor, size=224, **kw):
    def make():
        import torchvision
        m = getattr(torchvision.models, ctor)(weights=None, **kw)
        return m, (torch.randn(1, 3, size, size),), ["input"], {0: "batch"}
    return make


def mlp():
    return MLP(), (torch.randn(1, 784),), ["input"], {0: "batch"}


class TorchEncoder(nn.Module):
    """PyTorch's own nn.TransformerEncoder (GELU feed-forward, pre-built
    attention) with a classifier head: what a user hands over straight from
    torch. Exported by the dynamo exporter at opset 20, whose graphs differ
    from the TorchScript exporter's: the `Gelu` op, Gemm for the projections,
    LayerNormalization, Squeeze/Unsqueeze around the heads."""

    def __init__(self, hidden=64, heads=4, ffn=128, layers=2, classes=10):
        super().__init__()
        layer = nn.TransformerEncoderLayer(hidden, heads, ffn, activation="gelu", batch_first=True,
                                           dropout=0.0)
        self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.head(nn.functional.silu(self.enc(x))).softmax(-1)


def encoder_dynamo():
    return TorchEncoder(), (torch.randn(2, 16, 64),), ["input"], {}


class RMSDecoder(nn.Module):
    """A pre-norm decoder (RMSNorm, causal scaled_dot_product_attention, GELU
    MLP), what today's LLM blocks look like: the dynamo exporter writes it at
    opset 23 with RMSNormalization and Attention, at opset 18 (its lowest) as the
    primitive ops. Both exports are kept (same weights), so the two graphs
    are compared on speed and against ONNX Runtime."""

    def __init__(self, hidden=64, heads=4, layers=2):
        super().__init__()
        self.heads = heads
        self.blocks = nn.ModuleList()
        for _ in range(layers):
            self.blocks.append(nn.ModuleDict({
                "n1": nn.RMSNorm(hidden), "qkv": nn.Linear(hidden, 3 * hidden), "o": nn.Linear(hidden, hidden),
                "n2": nn.RMSNorm(hidden),
                "ff": nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.GELU(), nn.Linear(4 * hidden, hidden))}))
        for b in self.blocks:  # RMSNorm weights other than ones, so the scale matters
            with torch.no_grad():
                b["n1"].weight.uniform_(0.5, 1.5)
                b["n2"].weight.uniform_(0.5, 1.5)

    def forward(self, x):
        B, S, D = x.shape
        for b in self.blocks:
            q, k, v = b["qkv"](b["n1"](x)).split(D, dim=-1)
            q, k, v = [t.view(B, S, self.heads, D // self.heads).transpose(1, 2) for t in (q, k, v)]
            a = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + b["o"](a.transpose(1, 2).reshape(B, S, D))
            x = x + b["ff"](b["n2"](x))
        return x


def rms_decoder():
    return RMSDecoder(), (torch.randn(1, 32, 64),), ["input"], {}


# name -> (builder, committed to the repo?)
MODELS = {
    "mobilenetv2_035": (vision("mobilenet_v2", size=160, width_mult=0.35), True),
    "bert_tiny": (bert(vocab=1000, hidden=128, layers=2, heads=2, ffn=512, seq=32), True),
    "mlp": (mlp, False),
    "resnet18": (vision("resnet18"), False),
    "mobilenetv2": (vision("mobilenet_v2"), False),
    "resnet50": (vision("resnet50"), False),
    "bert_4l_256": (bert(vocab=30522, hidden=256, layers=4, heads=4, ffn=1024, seq=128), False),
    "bert_base": (bert(vocab=30522, hidden=768, layers=12, heads=12, ffn=3072, seq=128), False),
    "encoder_dynamo": (encoder_dynamo, True),
    "decoder_op18": (rms_decoder, True),
    "decoder_op23": (rms_decoder, True),
}
# exported with torch's dynamo exporter (needs onnxscript), static shapes: name -> opset
DYNAMO = {"encoder_dynamo": 20, "decoder_op18": 18, "decoder_op23": 23}
# what the test suite builds when torch is available
TEST_SET = ["resnet18", "mobilenetv2", "bert_4l_256"]


def save_pb(arr, path, name):
    from onnx import numpy_helper
    t = numpy_helper.from_array(arr, name)
    with open(path, "wb") as f:
        f.write(t.SerializeToString())


def export(name, out_dir):
    import onnxruntime as ort
    torch.manual_seed(0)
    np.random.seed(0)
    model, inputs, in_names, dyn = MODELS[name][0]()
    model.eval()
    d = os.path.join(out_dir, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    path = os.path.join(d, "model.onnx")
    dynamic_axes = {n: dict(dyn) if n == "input_ids" or n == "input" else {0: "batch", 1: "seq"}
                    for n in in_names}
    dynamic_axes["output"] = {0: "batch"}
    with torch.no_grad():
        if name in DYNAMO:
            torch.onnx.export(model, inputs, path, input_names=in_names, output_names=["output"],
                              opset_version=DYNAMO[name], dynamo=True, external_data=False)
        else:
            torch.onnx.export(model, inputs, path, input_names=in_names, output_names=["output"],
                              dynamic_axes=dynamic_axes, opset_version=17, dynamo=False)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = {n: t.numpy() for n, t in zip(in_names, inputs)}
    outs = sess.run(None, feeds)
    for k, n in enumerate(in_names):
        save_pb(feeds[n], os.path.join(d, "test_data_set_0", f"input_{k}.pb"), n)
    for k, o in enumerate(outs):
        save_pb(o, os.path.join(d, "test_data_set_0", f"output_{k}.pb"), "output")
    print(f"{name}: {os.path.getsize(path) / 1e6:.1f} MB -> {d}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=None, help="output folder (default: models/ for committed, models/gen/ otherwise)")
    ap.add_argument("--only", default=None, help="comma-separated model names")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    if a.list:
        for n, (_, committed) in MODELS.items():
            print(n, "(committed)" if committed else "")
        return 0
    names = a.only.split(",") if a.only else list(MODELS)
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models")
    for n in names:
        if n not in MODELS:
            print(f"unknown model {n}", file=sys.stderr)
            return 2
        out = a.out or (root if MODELS[n][1] else os.path.join(root, "gen"))
        export(n, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
