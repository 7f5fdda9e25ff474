#!/usr/bin/env python3
"""Benchmark aitune against ONNX Runtime and PyTorch; write docs/benchmarks.md.

    python3 bench/run.py [--models resnet50,mobilenetv2,bert_base,bert_4l_256,mlp]
        [--batches 1,8] [--iters N] [--warmup N] [--seconds S] [--rounds R] [--aitune PATH]
        [--out docs/benchmarks.md] [--json PATH] [--keep] [--quick]

For every model and batch size, each engine runs in its own process on the
same inputs (the model's committed sample repeated along axis 0):
  - aitune: `aitune bench` for every backend `aitune backends` lists as
    available (and each non-default precision choice it offers), and the
    tuned pick (`aitune tune --batch-sizes N`, then `aitune bench DIR`);
  - ONNX Runtime fp32 and ONNX Runtime int8 (its quantize_dynamic)
    via bench/ort_worker.py;
  - PyTorch eager via bench/torch_worker.py.
Outputs are checked against ONNX Runtime fp32 on those inputs. Missing models
are generated with scripts/make_models.py. --quick: batch 1, ~1.5 s per
engine, one round, without bert_base. --iters N fixes the timed runs (else
each engine times runs for about --seconds); --rounds R times every engine R
times, interleaved over the whole run, and keeps each engine's lowest median.
"""
import argparse
import json
import os
import shlex
import shutil
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import common  # noqa: E402
import engines  # noqa: E402
import flops  # noqa: E402
import machine  # noqa: E402
import report  # noqa: E402
from torch_worker import load_make_models  # noqa: E402

DEFAULT_MODELS = ["resnet50", "mobilenetv2", "bert_base", "bert_4l_256", "mlp"]
TITLES = {
    "resnet50": "ResNet-50 (224×224)",
    "mobilenetv2": "MobileNetV2 (224×224)",
    "bert_base": "BERT-base encoder (12 layers, hidden 768, seq 128)",
    "bert_4l_256": "BERT 4 layers, hidden 256 (seq 128)",
    "mlp": "MLP 784-1024-1024-10",
}
ORT, ORT8, TORCH = "onnxruntime", "onnxruntime int8 (dynamic)", "pytorch"

METHOD = [
    "Inputs: the model's committed sample (`test_data_set_0`, written by "
    "`scripts/make_models.py`) repeated along axis 0 to the batch size, saved once as "
    "`.npy` (ONNX Runtime, PyTorch) and `.pb` (`aitune run`, `aitune tune --samples`).",
    "Models with symbolic dims other than the batch (the BERTs: `seq`) are benchmarked on a copy "
    "whose other dims are fixed to the sample's (seq = 128), batch left symbolic; every ONNX engine "
    "(aitune, ONNX Runtime fp32 and int8) runs that same file.",
    "`aitune bench --inputs` times the same input files as the peers (the sample, as `.pb`); "
    "the numeric check runs them too (`aitune run --inputs`). Until session 8 `aitune bench` timed "
    "seeded random inputs of the same shapes, the same work for these models until native began to "
    "skip padded attention keys (the BERT samples pad 32 of 128 tokens).",
    "Timing: warm-up (at least one run, then until ~1 s or 5 runs), then the timed runs; the count is "
    "chosen from the warm-up so that each engine spends about the target seconds (3 to 1000 runs). "
    "aitune times itself in C (`aitune bench --warmup W --iters N`; W and N from a probe of one "
    "warm-up and 2 timed runs in round 1, reused in later rounds); "
    "the workers time `session.run` / `model(*inputs)` with `time.perf_counter`. Throughput = "
    "batch / median latency.",
    "Threads: all engines use every core: ONNX Runtime `intra_op_num_threads` = cores, "
    "`inter_op_num_threads` = 1, `ORT_ENABLE_ALL`; PyTorch `torch.set_num_threads(cores)` under "
    "`torch.inference_mode()`; aitune backends with a `threads` option get `threads=<cores>`.",
    "ONNX Runtime int8: `onnxruntime.quantization.quantize_dynamic(weight_type=QInt8)` with its "
    "default operator set (MatMulInteger / ConvInteger with dynamically quantized activations); "
    "the peer for aitune's quantized configurations.",
    "PyTorch: the same `nn.Module` rebuilt from `scripts/make_models.py` with the exporter's seed, "
    "so its weights equal the ONNX model's (its `max rel err` shows it).",
    "Tuned pick: `aitune tune MODEL --samples INPUTS --out DIR --no-cache --batch-sizes N` (every "
    "available backend with the tuner's own variants, e.g. `native:threads=1`; default strategy "
    "max-throughput; validated against `eager`), once per model and batch in round 1, so the "
    "decision is measured under whatever load the machine had then; then `aitune bench DIR "
    "--batch N --inputs` in every round and `aitune run DIR --inputs` for the check.",
    "FLOPs: 2 × MACs of every Conv, MatMul and Gemm node at the benchmark's input shapes (`bench/flops.py`; "
    "shapes from one ONNX Runtime run, since shape inference cannot resolve the BERT head size).",
    "SGEMM ceiling: `bench/gemm_ceiling.c`, square row-major SGEMM with OpenBLAS and oneDNN at "
    "threads = cores, best of the runs; the best over libraries and sizes is the ceiling.",
]


def log(msg):
    print(time.strftime("[%H:%M:%S] ") + msg, file=sys.stderr, flush=True)


def model_dir(mm, name):
    """models/NAME (committed) or models/gen/NAME, generated when missing."""
    if name not in mm.MODELS:
        raise SystemExit(f"unknown model {name}; known: {', '.join(mm.MODELS)}")
    parent = os.path.join(REPO, "models") if mm.MODELS[name][1] else os.path.join(REPO, "models", "gen")
    d = os.path.join(parent, name)
    if not os.path.exists(os.path.join(d, "model.onnx")):
        log(f"{name}: generating with scripts/make_models.py")
        mm.export(name, parent)
    return d


def read_sample(d):
    from onnx import TensorProto, numpy_helper
    folder, out = os.path.join(d, "test_data_set_0"), []
    while os.path.exists(os.path.join(folder, f"input_{len(out)}.pb")):
        with open(os.path.join(folder, f"input_{len(out)}.pb"), "rb") as f:
            out.append(numpy_helper.to_array(TensorProto.FromString(f.read())))
    if not out:
        raise SystemExit(f"{folder}: no input_K.pb")
    return out


def bench_model(src, sample, work):
    """src, or a copy in work/ whose symbolic non-batch input dims are fixed
    to the sample's (see METHOD). Returns (path, {dim_name: value})."""
    import onnx
    m = onnx.load(src)
    init = {t.name for t in m.graph.initializer}
    fixed = {}
    ins = [i for i in m.graph.input if i.name not in init]
    for i, x in zip(ins, sample):
        for k, d in enumerate(i.type.tensor_type.shape.dim):
            if k > 0 and not d.HasField("dim_value"):
                fixed[d.dim_param or f"{i.name}[{k}]"] = x.shape[k]
                d.ClearField("dim_param")
                d.dim_value = x.shape[k]
    if not fixed:
        return src, fixed
    path = os.path.join(work, "model.onnx")
    onnx.save(m, path)
    return path, fixed


def make_inputs(model_path, sample, batch, work):
    """The batch's inputs as work/npy/input_K.npy and work/pb/input_K.pb
    (the sample's rows repeated cyclically along axis 0)."""
    import onnx
    from onnx import numpy_helper
    g = onnx.load(model_path, load_external_data=False).graph
    init = {t.name for t in g.initializer}
    names = [i.name for i in g.input if i.name not in init]
    npy, pb = os.path.join(work, "npy"), os.path.join(work, "pb")
    os.makedirs(npy, exist_ok=True)
    os.makedirs(pb, exist_ok=True)
    arrays = []
    for k, (n, x) in enumerate(zip(names, sample)):
        a = np.ascontiguousarray(np.take(x, np.arange(batch) % x.shape[0], axis=0))
        np.save(os.path.join(npy, f"input_{k}.npy"), a)
        with open(os.path.join(pb, f"input_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(a, n).SerializeToString())
        arrays.append(a)
    desc = ", ".join(f"{n} {list(a.shape)} {a.dtype}" for n, a in zip(names, arrays))
    return npy, pb, arrays, desc


def check_row(row, got_dir, ref):
    """Compare an engine's outputs in got_dir with the ORT fp32 reference."""
    if ref is None:
        return
    got = common.load_outputs(got_dir)
    row["check"] = common.compare(got, ref) if got else {"max_rel_error": None, "min_cosine": None,
                                                         "why": "no outputs"}
    row["passed"] = engines.passes(row["check"], row["precision"])


def new_row(label, kind, precision, cmd):
    """A table row; cmd says how to time it again in a later round."""
    return {"label": label, "kind": kind, "precision": precision, "cmd": cmd, "rounds": []}


def time_row(a, row, save=None):
    """Time the row's engine once more in its own process; keep the round of
    lowest median as the row's result (noise only ever adds time)."""
    c = row["cmd"]
    row.setdefault("load", []).append(os.getloadavg()[0])  # how busy the machine was
    if c["type"] == "worker":
        args = c["args"] + (["--save-outputs", save] if save else [])
        r = engines.worker(c["script"], args + engines.timing_args(a.iters, a.warmup, a.seconds),
                           c.get("env"))
    else:
        r = engines.bench(a.aitune, c["target"], c["batch"], c.get("backend"), a.iters, a.warmup,
                          a.seconds, c.get("plan"), c.get("inputs"))
        c.setdefault("plan", r.get("plan"))  # later rounds skip the probe
    row["rounds"].append(r)
    ok = [x for x in row["rounds"] if "error" not in x]
    row["result"] = min(ok, key=lambda x: x["latency_ms"]["median"]) if ok else row["rounds"][0]
    return r


def peer_rows(a, name, model, npy, work):
    """ONNX Runtime fp32 (also the reference outputs), int8, PyTorch."""
    thr = ["--threads", str(a.threads)]
    rows, ref = [], None
    for label, script, target, extra, prec in [
            (ORT, "ort_worker.py", model, [], "fp32"),
            (ORT8, "ort_worker.py", model, ["--int8"], "int8"),
            (TORCH, "torch_worker.py", name, [], "fp32")]:
        out = os.path.join(work, "out_" + label.split()[0] + ("8" if extra else ""))
        log(f"  {label}")
        row = new_row(label, "peer", prec, {"type": "worker", "script": script,
                                            "args": [target, "--inputs", npy] + thr + extra})
        r = time_row(a, row, save=out)
        if label == ORT and "error" not in r:
            ref = common.load_outputs(out)
        elif "error" not in r:
            check_row(row, out, ref)
        rows.append(row)
    return rows, ref


def aitune_check(a, row, target, pb, out, ref, backend=None):
    err = engines.run_outputs(a.aitune, target, pb, out, backend)
    if err:
        row["check"] = {"max_rel_error": None, "min_cosine": None, "why": "aitune run: " + err}
    else:
        check_row(row, out, ref)


def aitune_rows(a, variants, model, pb, batch, work, ref, notes):
    rows = []
    for k, v in enumerate(variants):
        log(f"  aitune {v['config']}")
        row = new_row("aitune " + v["config"], "aitune", v["precision"],
                      {"type": "aitune", "target": model, "backend": v["config"], "batch": batch,
                       "inputs": pb})
        if "error" not in time_row(a, row):
            aitune_check(a, row, model, pb, os.path.join(work, f"out_aitune_{k}"), ref, v["config"])
        rows.append(row)
    log("  aitune tune")
    tdir = os.path.join(work, "tuned")
    t = engines.tune(a.aitune, model, pb, tdir, batch)
    if "error" in t:
        row = new_row("aitune tuned", "aitune", "fp32", None)
        row["result"] = t
        return rows + [row]
    sel = t["selected"] or "?"
    prec = engines.config_precision(sel)
    base = next((v for v in variants if v["config"].partition(":")[0] == sel.partition(":")[0]), None)
    if prec == "fp32" and base:  # options at their defaults: the backend's default precision
        prec = base["precision"]
    row = new_row(f"aitune tuned → {sel}", "aitune", prec,
                  {"type": "aitune", "target": tdir, "batch": batch, "inputs": pb})
    if "error" not in time_row(a, row):
        aitune_check(a, row, tdir, pb, os.path.join(work, "out_tuned"), ref)
    rows.append(row)
    cands = "; ".join(f"{b} {s}" + (f" ({e})" if e else "") for b, s, e in t["candidates"]) or "none"
    notes.append(f"Tuning ({_fmt_s(t['tuning_s'])}): selected `{sel}`"
                 f"{' (the baseline)' if t['is_baseline'] else ''}; candidates: {cands}.")
    return rows


def _fmt_s(s):
    return f"{s:.3g} s" if isinstance(s, (int, float)) else "? s"


def _log_rows(case):
    for r in case["rows"]:
        res = r["rounds"][-1] if r["rounds"] else r["result"]
        log(f"    {r['label']}: " + (f"error {res['error']}" if "error" in res else
                                     f"{res['latency_ms']['median']:.2f} ms, {res['throughput']:.1f}/s"))


def run_case(a, mm, name, batch, variants, tmp):
    """Round 1 of one model and batch: inputs, FLOPs, every engine timed
    once, numeric checks, the tuned pick."""
    d = model_dir(mm, name)
    work = os.path.join(tmp, f"{name}_b{batch}")
    os.makedirs(work, exist_ok=True)
    sample = read_sample(d)
    model, fixed = bench_model(os.path.join(d, "model.onnx"), sample, work)
    npy, pb, arrays, desc = make_inputs(model, sample, batch, work)
    log(f"{name} batch {batch}: {desc}")
    case = {"model": name, "title": TITLES.get(name, name), "batch": batch, "inputs": desc,
            "fixed_dims": fixed, "notes": []}
    try:
        case["flops"], case["flops_by_op"] = flops.count(model, arrays)
    except Exception as e:  # FLOPs are a column, not a reason to stop
        case["flops"], case["flops_by_op"] = None, {}
        case["notes"].append(f"FLOPs not counted: {e}")
    rows, ref = peer_rows(a, name, model, npy, work)
    if ref is None:
        case["notes"].append("ONNX Runtime fp32 failed: no reference, no ratios, no checks.")
    case["rows"] = rows + aitune_rows(a, variants, model, pb, batch, work, ref, case["notes"])
    _log_rows(case)
    return case


def another_round(a, cases, k):
    """Round k: every engine that ran in round 1 is timed again."""
    for c in cases:
        log(f"round {k}: {c['model']} batch {c['batch']}")
        for row in c["rows"]:
            if row["cmd"] and "error" not in row["rounds"][0]:
                time_row(a, row)
        _log_rows(c)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=None,
                    help="comma-separated (default: " + ",".join(DEFAULT_MODELS) + ")")
    ap.add_argument("--batches", default=None, help="comma-separated batch sizes (default 1,8)")
    ap.add_argument("--iters", type=int, default=None, help="fixed timed runs per engine")
    ap.add_argument("--warmup", type=int, default=None, help="fixed warm-up runs per engine")
    ap.add_argument("--seconds", type=float, default=None,
                    help="target timed seconds per engine and round (4; --quick 1.5)")
    ap.add_argument("--rounds", type=int, default=None,
                    help="time every engine this many times, rounds interleaved over the whole run, "
                         "keep each engine's lowest median (default 3; --quick or --iters: 1)")
    ap.add_argument("--aitune", default=os.path.join(REPO, "build", "aitune"))
    ap.add_argument("--out", default=os.path.join(REPO, "docs", "benchmarks.md"))
    ap.add_argument("--json", default=None, help="also write the raw results here")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    ap.add_argument("--quick", action="store_true", help="batch 1, ~1.5 s per engine, no bert_base")
    ap.add_argument("--report-only", metavar="JSON", default=None,
                    help="only rewrite --out from the results of an earlier --json run")
    a = ap.parse_args(argv)
    if a.report_only:
        return a
    a.models = a.models.split(",") if a.models else [m for m in DEFAULT_MODELS
                                                     if not (a.quick and m == "bert_base")]
    a.batches = [int(b) for b in a.batches.split(",")] if a.batches else ([1] if a.quick else [1, 8])
    a.seconds = a.seconds or (1.5 if a.quick else 4.0)
    a.rounds = max(1, a.rounds or (1 if a.quick or a.iters else 3))
    a.threads = os.cpu_count()
    a.aitune = os.path.abspath(a.aitune)
    if not os.access(a.aitune, os.X_OK):
        raise SystemExit(f"{a.aitune}: not an executable; build aitune or pass --aitune PATH")
    return a


def main(argv):
    a = parse_args(argv)
    if a.report_only:
        with open(a.report_only) as f:
            report.write(a.out, json.load(f))
        log(f"wrote {a.out} from {a.report_only}")
        return 0
    t0, started = time.time(), report.now()
    tmp = tempfile.mkdtemp(prefix="aitune-bench-")
    try:
        # a private copy: others may rebuild build/ while the benchmark runs
        a.aitune_src, a.aitune = a.aitune, os.path.join(tmp, "aitune")
        shutil.copy2(a.aitune_src, a.aitune)
        mach = machine.describe(a.aitune, REPO)
        if not mach["aitune"]:
            raise SystemExit(f"{a.aitune_src}: `aitune version` failed (being rebuilt?)")
        log(f"{mach['cpu']}, {mach['cores']} cores; SGEMM ceiling")
        ceiling = machine.gemm_ceiling(tmp, a.threads)
        log(f"ceiling {ceiling.get('ceiling_gflops', ceiling.get('error'))}")
        blist = engines.backends(a.aitune)
        variants = engines.variants(blist, a.threads)
        log("aitune configurations: " + ", ".join(v["config"] for v in variants))
        mm = load_make_models()
        cases = [run_case(a, mm, n, b, variants, tmp) for n in a.models for b in a.batches]
        for k in range(2, a.rounds + 1):
            another_round(a, cases, k)
        end = machine.gemm_ceiling(tmp, a.threads)
        log(f"ceiling at the end {end.get('ceiling_gflops', end.get('error'))}")
        ceiling = machine.best_ceiling(ceiling, end)
        res = {"command": "python3 bench/run.py " + " ".join(shlex.quote(x) for x in argv),
               "started": started, "finished": report.now(), "elapsed_s": time.time() - t0,
               "settings": {"seconds": a.seconds, "iters": a.iters, "threads": a.threads,
                            "rounds": a.rounds,
                            "aitune": os.path.relpath(a.aitune_src, REPO)},
               "machine": mach, "ceiling": ceiling, "backends": blist, "cases": cases,
               "load": sorted(x for c in cases for r in c["rows"] for x in r.get("load", [])),
               "method": METHOD}
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        report.write(a.out, res)
        if a.json:
            with open(a.json, "w") as f:
                json.dump(res, f, indent=1, default=str)
        log(f"wrote {a.out} in {(time.time() - t0) / 60:.1f} min")
    finally:
        if a.keep:
            log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
