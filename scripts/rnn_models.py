"""Small real-ish recurrent models for native's RNN and control-flow numbers
(docs/native.md, "Recurrent ops and control flow"), and their timing against
ONNX Runtime.

  .venv/bin/python3 scripts/rnn_models.py make            # models/gen/rnn/*.onnx + inputs
  .venv/bin/python3 scripts/rnn_models.py bench [AITUNE]  # paired rounds, medians

bench interleaves, per round and model: aitune bench on native, on
native:isa=avx2 (and on a second aitune binary, e.g. main's, when given),
then ONNX Runtime with 2 intra-op threads on the same inputs; it prints the
median of the per-round medians and the ratio ORT / native."""
import json, os, statistics, subprocess, sys, time
import numpy as np
here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models", "gen", "rnn")

def make():
    torch.manual_seed(0)
    os.makedirs(here, exist_ok=True)
    cases = [
        (Tagger(), (torch.randint(0, 5000, (1, 32)),), "lstm_tagger", ["ids"]),
        (GruSeq(), (torch.randn(1, 50, 64),), "gru_seq", ["x"]),
        (Kws(), (torch.randn(1, 40, 98),), "kws_lstm", ["x"]),
        (torch.jit.script(Vad()), (torch.randn(1, 1, 512), torch.tensor(16000), torch.zeros(1, 1, 64),
                                   torch.zeros(1, 1, 64)), "vad_if", ["x", "sr", "h", "c"]),
    ]
    for m, args, name, names in cases:
        export(m, args, name + ".onnx", names)
        write_inputs(name, [a.numpy() for a in args])


def write_inputs(name, arrays):
    import onnx.numpy_helper as nh
    d = os.path.join(here, name + "_inputs")
    os.makedirs(d, exist_ok=True)
    for k, a in enumerate(arrays):
        with open(os.path.join(d, "input_%d.pb" % k), "wb") as f:
            f.write(nh.from_array(a).SerializeToString())


try:
    import torch, torch.nn as nn
    Module = nn.Module
except ImportError:  # bench alone needs no torch
    torch = nn = None
    Module = object


class Tagger(Module):  # embedding -> 2-layer bi-LSTM 128 -> linear
    def __init__(s):
        super().__init__(); s.emb = nn.Embedding(5000, 100)
        s.lstm = nn.LSTM(100, 128, num_layers=2, bidirectional=True, batch_first=True)
        s.out = nn.Linear(256, 17)
    def forward(s, ids):
        y, _ = s.lstm(s.emb(ids)); return s.out(y)

class GruSeq(Module):  # 2-layer GRU 256 over features -> last state -> classes
    def __init__(s):
        super().__init__(); s.gru = nn.GRU(64, 256, num_layers=2, batch_first=True)
        s.fc = nn.Linear(256, 10)
    def forward(s, x):
        y, h = s.gru(x); return s.fc(h[-1])

class Kws(Module):  # conv front end over MFCCs + two small LSTMs (64)
    def __init__(s):
        super().__init__()
        s.conv = nn.Sequential(nn.Conv1d(40, 64, 5, padding=2), nn.ReLU(),
                               nn.Conv1d(64, 64, 3, padding=1), nn.ReLU())
        s.l1 = nn.LSTM(64, 64, batch_first=True); s.l2 = nn.LSTM(64, 64, batch_first=True)
        s.fc = nn.Linear(64, 12)
    def forward(s, x):  # x [B, 40, T]
        y = s.conv(x).transpose(1, 2)
        y, _ = s.l1(y); y, (h, c) = s.l2(y); return s.fc(h[-1])

class Vad(Module):  # Silero-VAD-like: an If on the sample rate picks a branch
    def __init__(s):
        super().__init__()
        s.enc16 = nn.Sequential(nn.Conv1d(1, 64, 16, stride=8), nn.ReLU(), nn.Conv1d(64, 64, 3, padding=1), nn.ReLU())
        s.enc8 = nn.Sequential(nn.Conv1d(1, 64, 8, stride=4), nn.ReLU(), nn.Conv1d(64, 64, 3, padding=1), nn.ReLU())
        s.lstm = nn.LSTM(64, 64, batch_first=True)
        s.fc = nn.Linear(64, 1)
    def forward(s, x, sr, h, c):
        if sr == 16000:
            y = s.enc16(x)
        else:
            y = s.enc8(x)
        y, (h2, c2) = s.lstm(y.transpose(1, 2), (h, c))
        return torch.sigmoid(s.fc(y[:, -1])), h2, c2

def export(m, args, name, names, dyn=None):
    m.eval()
    path = os.path.join(here, name)
    torch.onnx.export(m, args, path, opset_version=17, dynamo=False, input_names=names)
    print(path)


NAMES = ["lstm_tagger", "gru_seq", "kws_lstm", "vad_if"]


def aitune_ms(aitune, model, backend, inputs):
    r = subprocess.run([aitune, "bench", model, "--backend", backend, "--inputs", inputs,
                        "--iters", "200", "--warmup", "20", "--json"], capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stderr.strip()[-300:], file=sys.stderr)
        return float("nan")
    return json.loads(r.stdout[r.stdout.index("{"):])["latency_ms"]["median"]  # --json: one indented object


def ort_ms(model, inputs):
    import onnx, onnx.numpy_helper as nh, onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    feeds = {}
    for k, i in enumerate(sess.get_inputs()):
        t = onnx.TensorProto()
        with open(os.path.join(inputs, "input_%d.pb" % k), "rb") as f:
            t.ParseFromString(f.read())
        feeds[i.name] = nh.to_array(t)
    for _ in range(20):
        sess.run(None, feeds)
    ts = []
    for _ in range(200):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def bench(aitune, other, rounds=5):
    for name in NAMES:
        model, inputs = os.path.join(here, name + ".onnx"), os.path.join(here, name + "_inputs")
        runs = {"native": [], "native:isa=avx2": [], "ort": []}
        if other:
            runs["other native"] = []
        for _ in range(rounds):
            runs["native"].append(aitune_ms(aitune, model, "native", inputs))
            runs["native:isa=avx2"].append(aitune_ms(aitune, model, "native:isa=avx2", inputs))
            if other:
                runs["other native"].append(aitune_ms(other, model, "native", inputs))
            runs["ort"].append(ort_ms(model, inputs))
        med = {k: statistics.median(v) for k, v in runs.items()}
        line = " ".join("%s %.3f ms" % (k, v) for k, v in med.items())
        print("%-12s %s | ort/native %.2fx, ort/avx2 %.2fx" % (
            name, line, med["ort"] / med["native"], med["ort"] / med["native:isa=avx2"]), flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "make":
        make()
    else:
        root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
        bench(sys.argv[2] if len(sys.argv) > 2 else os.path.join(root, "build", "aitune"),
              sys.argv[3] if len(sys.argv) > 3 else None)
