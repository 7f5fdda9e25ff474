"""nn.Modules: a torchvision model and a transformer-like module tuned from
PyTorch and matching its outputs, the TorchScript fallback, ait.Module
recording, save and load in a new process, tensors read in place."""
import importlib.util
import json
import logging
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")
nn = torch.nn

import aitune_c as ait  # noqa: E402
from conftest import FAST  # noqa: E402

HAVE_ONNXSCRIPT = importlib.util.find_spec("onnxscript") is not None


class Block(nn.Module):
    """Pre-norm attention + MLP, as in BERT/GPT blocks."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, h, bias):
        b, s, d = h.shape
        q, k, v = self.qkv(self.ln1(h)).reshape(b, s, 3, self.heads, d // self.heads).unbind(2)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        att = torch.softmax(q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5 + bias, dim=-1)
        h = h + self.proj((att @ v).transpose(1, 2).reshape(b, s, d))
        return h + self.mlp(self.ln2(h))


class TinyEncoder(nn.Module):
    """A transformer encoder with a classification head: ids and mask in,
    a dict of logits and hidden states out."""

    def __init__(self, vocab=50, d=32, heads=4, layers=2, classes=3):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(64, d) * 0.1)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes)

    def forward(self, input_ids, attention_mask):
        h = self.emb(input_ids) + self.pos[: input_ids.shape[1]]
        bias = (1.0 - attention_mask[:, None, None, :].float()) * -1e4
        for blk in self.blocks:
            h = blk(h, bias)
        h = self.norm(h)
        m = attention_mask[..., None].float()
        return {"logits": self.head((h * m).sum(1) / m.sum(1)), "hidden": h}


def encoder_inputs(batch, seq, seed):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, 50, (batch, seq), generator=g)
    mask = torch.ones(batch, seq, dtype=torch.int64)
    mask[0, seq - 2:] = 0
    return {"input_ids": ids, "attention_mask": mask}


@pytest.fixture(scope="module")
def encoder():
    torch.manual_seed(0)
    model = TinyEncoder().eval()
    samples = [encoder_inputs(2, 8, 1), encoder_inputs(2, 12, 2)]
    tuned = ait.tune(model, samples, strategy=ait.OneBackend("native"), batch_sizes=[1, 2], **FAST)
    return model, tuned


def test_torchvision_resnet18():
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10).eval()
    x = torch.randn(2, 3, 32, 32)
    tuned = ait.tune(model, x, strategy=ait.OneBackend("native"), exporter="torchscript", **FAST)
    assert tuned.exporter == "torchscript" and tuned.input_names == ["x"]
    with torch.no_grad():
        want = model(x)
    got = tuned(x)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float32
    torch.testing.assert_close(got, want, rtol=1e-3, atol=1e-4)
    got_np = tuned(x.numpy())  # numpy in, numpy out
    assert isinstance(got_np, np.ndarray)
    np.testing.assert_allclose(got_np, want.numpy(), rtol=1e-3, atol=1e-4)
    with pytest.raises(ait.Error) as e:  # the export's spatial size is fixed
        tuned(torch.randn(2, 3, 16, 16))
    assert e.value.status == ait._core.E_SHAPE
    with pytest.raises(ait.Error) as e:
        tuned(x.double())
    assert e.value.status == ait._core.E_DTYPE


def test_transformer_matches_pytorch(encoder):
    model, tuned = encoder
    if HAVE_ONNXSCRIPT:
        assert tuned.exporter == "dynamo"
    assert tuned.input_names == ["input_ids", "attention_mask"]
    for batch, seq, seed in ((2, 10, 3), (1, 8, 4), (2, 12, 5)):  # sizes inside the tuned range
        inputs = encoder_inputs(batch, seq, seed)
        with torch.no_grad():
            want = model(**inputs)
        got = tuned(**inputs)
        assert isinstance(got, dict) and list(got) == ["logits", "hidden"]
        torch.testing.assert_close(got["logits"], want["logits"], rtol=1e-3, atol=1e-4)
        torch.testing.assert_close(got["hidden"], want["hidden"], rtol=1e-3, atol=1e-4)
    args = encoder_inputs(2, 9, 6)
    got = tuned(args["input_ids"], args["attention_mask"])  # positional, as forward takes them
    torch.testing.assert_close(got["logits"], model(**args)["logits"].detach(), rtol=1e-3,
                               atol=1e-4)
    spec = tuned.report["graph_spec"]
    assert spec["has_batch"] and {(a["input"], a["axis"]) for a in spec["axes"]} >= {(0, 1), (1, 1)}


def test_transformer_saved_and_loaded_in_a_new_process(encoder, tmp_path):
    model, tuned = encoder
    folder = tmp_path / "encoder.ait"
    tuned.save(folder)
    inputs = encoder_inputs(2, 11, 7)
    torch.save(inputs, tmp_path / "inputs.pt")
    code = ("import json, torch, aitune_c as ait\n"
            f"t = ait.load({str(folder)!r})\n"
            f"inputs = torch.load({str(tmp_path / 'inputs.pt')!r})\n"
            "out = t(**inputs)\n"
            "print(json.dumps({'keys': list(out), 'logits': out['logits'].tolist(),"
            " 'backend': t.backend, 'exporter': t.exporter}))\n")
    res = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    got = json.loads(res.stdout)
    assert got["keys"] == ["logits", "hidden"] and got["backend"] == tuned.backend
    with torch.no_grad():
        want = model(**inputs)["logits"]
    torch.testing.assert_close(torch.tensor(got["logits"]), want, rtol=1e-3, atol=1e-4)


class NotExportable(nn.Module):
    """torch.export refuses it (as it would a model with untraceable Python);
    the TorchScript tracer takes it."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 4)

    def forward(self, x):
        if torch.compiler.is_exporting():
            raise RuntimeError("this forward does not go through torch.export")
        return torch.tanh(self.lin(x))


@pytest.mark.skipif(not HAVE_ONNXSCRIPT, reason="the dynamo exporter needs onnxscript")
def test_torchscript_fallback_with_the_reason_logged(caplog):
    model = NotExportable().eval()
    x = torch.randn(3, 8)
    with caplog.at_level(logging.INFO, logger="aitune_c"):
        tuned = ait.tune(model, x, strategy=ait.OneBackend("native"), **FAST)
    assert tuned.exporter == "torchscript"
    msgs = [r.getMessage() for r in caplog.records if r.name == "aitune_c"]
    assert any("dynamo exporter failed" in m and "does not go through torch.export" in m
               for m in msgs), msgs
    torch.testing.assert_close(tuned(x), model(x).detach(), rtol=1e-4, atol=1e-5)


def test_module_records_then_tunes(caplog):
    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).eval()
    mlp.note = "reachable"
    m = ait.Module(mlp)
    assert isinstance(m, nn.Module) and m.note == "reachable"
    for b in (1, 3, 2):
        x = torch.randn(b, 16)
        torch.testing.assert_close(m(x), mlp(x))
    assert m.recorded == 3 and m.tuned is None
    assert m.tune(strategy=ait.OneBackend("native"), exporter="torchscript", **FAST) is m
    assert m.tune_error is None and m.tuned is not None
    assert m.tuned.report["samples"] == 3
    for b in (2, 3):  # inside the recorded batch range
        x = torch.randn(b, 16)
        with torch.no_grad():
            torch.testing.assert_close(m(x), mlp(x), rtol=1e-4, atol=1e-5)

    failing = ait.Module(mlp)
    x = torch.randn(2, 16)
    failing(x)
    with caplog.at_level(logging.WARNING, logger="aitune_c"):
        failing.tune(strategy=ait.OneBackend("nosuch"), exporter="torchscript", **FAST)
    assert isinstance(failing.tune_error, ait.Error) and failing.tuned is None
    assert any("keep running the original" in r.getMessage() for r in caplog.records)
    torch.testing.assert_close(failing(x), mlp(x))  # still the original
    empty = ait.Module(mlp).tune(**FAST)
    assert isinstance(empty.tune_error, RuntimeError) and "no calls recorded" in str(empty.tune_error)


def test_torch_inputs_read_in_place():
    x = torch.randn(4, 8)
    ptr, copied, dtype, dims = ait._core.input_view(x)
    assert ptr == x.data_ptr() and not copied and dtype == 1 and dims == (4, 8)
    ids = torch.arange(6).reshape(2, 3)
    ptr, copied, dtype, _ = ait._core.input_view(ids)
    assert ptr == ids.data_ptr() and not copied and dtype == 7
    g = torch.randn(4, 8, requires_grad=True)  # no detach needed
    assert ait._core.input_view(g)[0] == g.data_ptr()
    t = x.t()  # not contiguous: one copy by torch
    ptr, copied, _, dims = ait._core.input_view(t)
    assert copied and ptr != x.data_ptr() and dims == (8, 4)
    with pytest.raises(ait.Error) as e:
        ait._core.input_view(torch.zeros(2, dtype=torch.complex64))
    assert e.value.status == ait._core.E_DTYPE

    model = nn.Linear(8, 8).eval()
    tuned = ait.tune(model, x, strategy=ait.OneBackend("native"), exporter="torchscript", **FAST)
    y1 = tuned(x)
    keep = y1.clone()
    y2 = tuned(x * 2)
    torch.testing.assert_close(y1, keep)  # outputs are the caller's
    assert y1.data_ptr() != y2.data_ptr() and y1.is_contiguous()
    torch.testing.assert_close(tuned(t.t()), model(x).detach(), rtol=1e-4, atol=1e-5)
