#!/usr/bin/env python3
"""The public suite on the GPU at device level: aitune's `cuda` backend with
device-resident inputs and outputs against torch.compile, in one run.

    python3 bench/gpu_suite.py --bench build/gpu_io_bench [--models a,b] [--batches 1,32]
        [--work DIR] [--budget S] [--out results.jsonl]

For each model of bench/suite/models.py (torch builders, the suite's seed):
  * export it to ONNX (TorchScript exporter, opset 17, dynamic batch);
  * aitune: `gpu_io_bench MODEL cuda:dtype=bf16 B` — median wall time of a
    synchronous ait_session_run with inputs and outputs in CUDA memory
    (device_io_ms), and host to host (host_io_ms); dtype=fp8 at the largest
    batch for the transformer families;
  * torch (bf16 weights and inputs, on the device): eager, torch.compile
    mode="reduce-overhead" and mode="max-autotune-no-cudagraphs"
    (dynamic=False), median wall time of a call followed by
    torch.cuda.synchronize() (the same synchronous measure as aitune's),
    and the median of CUDA events around the call.
Every result is one JSON line, appended to --out as it comes, so a run cut
off by its time budget keeps what it measured. max-autotune compiles are
the slowest part: they run in a second pass, while the budget lasts.

    python3 bench/gpu_suite.py --check --aitune AITUNE --test-cuda TEST_CUDA [--models ...]

--check is the correctness pass instead (issue 25): every suite torch model
(default: all of bench/suite/models.py's TORCH list) exported on this machine,
then `test_cuda --coverage` (what the cuda backend takes and, by op, what
falls back to the host, with the first reason), and `aitune tune --backends
cuda:dtype=bf16 --batch-sizes 1 --no-perf-validation`, whose report says
whether the candidate (partitioned to native where cuda lacks ops) passed the
numeric check at its precision, with the error figures. One JSON line per
model ("check": true).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "suite"))
TRANSFORMERS = {"encoder", "transformer-encdec", "window-attention", "decoder-kv-cache"}


def emit(out, rec):
    line = json.dumps(rec)
    print(line, flush=True)
    with open(out, "a") as f:
        f.write(line + "\n")


def time_torch(fn, args, iters, warmup):
    import torch
    for _ in range(warmup):
        fn(*args)
    torch.cuda.synchronize()
    wall, ev = [], []
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(iters):
        t0 = time.perf_counter()
        s.record()
        fn(*args)
        e.record()
        torch.cuda.synchronize()
        wall.append((time.perf_counter() - t0) * 1e3)
        ev.append(s.elapsed_time(e))
    return statistics.median(wall), statistics.median(ev)


def check(a, left):
    """The correctness pass (see the module docstring)."""
    import models as suite  # bench/suite/models.py
    names = list(suite.TORCH) if a.models_given is None else a.models_given
    for name in names:
        if left() < 45:
            emit(a.out, {"model": name, "check": True, "skipped": "time budget"})
            continue
        family = suite.TORCH[name][1]
        rec = {"model": name, "family": family, "check": True}
        t0 = time.time()
        suite.export_torch(name, a.work, ("torchscript",))
        onnx = os.path.join(a.work, name, "model.onnx")
        rec["export_s"] = round(time.time() - t0, 1)
        if not os.path.exists(onnx):
            rec["error"] = "export failed"
            emit(a.out, rec)
            continue
        try:
            r = subprocess.run([a.test_cuda, "--coverage", onnx], capture_output=True, text=True,
                               timeout=60)
            cov = json.loads(r.stdout.strip().splitlines()[-1])
            rec.update(nodes=cov["nodes"], on_cuda=cov["on_cuda"], fallback=cov["fallback"])
        except Exception as e:  # noqa: BLE001 - a failure is a result
            rec["coverage_error"] = f"{type(e).__name__}: {e}"[:300]
        spec = a.check_spec
        d = os.path.join(a.work, name, "tuned")
        try:
            r = subprocess.run([a.aitune, "tune", onnx, "--backends", spec, "--batch-sizes", "1",
                                "--no-perf-validation", "--no-cache", "--no-history", "--quiet",
                                "--json", "--force", "--runoff", "0", "--warmup", "1", "--min-runs",
                                "2", "--max-runs", "3", "--out", d],
                               capture_output=True, text=True, timeout=min(150, max(10, left() - 20)))
            rep = json.loads(r.stdout) if r.stdout.strip().startswith("{") else {}
            if r.returncode and not rep:
                rec["tune_error"] = (r.stderr.strip() or r.stdout.strip())[-400:]
            for c in rep.get("candidates", []):
                if not c.get("backend", "").startswith("cuda"):
                    continue
                rec["status"] = c.get("status")
                rec["error"] = c.get("error") or None
                rec["partition"] = c.get("partition")
                v = c.get("validation") or {}
                rec["validation"] = {k: v.get(k) for k in ("passed", "max_abs_error",
                                                          "max_rel_error", "min_cosine",
                                                          "top1_agreement", "mismatches",
                                                          "nan_inf")}
                rec["tolerance"] = (v.get("tolerance") or {}).get("precision")
            rec["selected"] = (rep.get("selection") or {}).get("backend")
        except Exception as e:  # noqa: BLE001
            rec["tune_error"] = f"{type(e).__name__}: {e}"[:300]
        rec["check_s"] = round(time.time() - t0, 1)
        emit(a.out, rec)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", help="gpu_io_bench (the timing pass)")
    ap.add_argument("--models", default="resnet50,mobilenet_v2,efficientnet_b1,convnext_tiny,"
                    "swin_t,distilbert_like,transformer_encdec")
    ap.add_argument("--batches", default="1,32")
    ap.add_argument("--work", default="/tmp/gpu_suite")
    ap.add_argument("--budget", type=float, default=500)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--out", default="gpu_suite.jsonl")
    ap.add_argument("--autotune-only", action="store_true",
                    help="only the max-autotune-no-cudagraphs pass (a second call's work)")
    ap.add_argument("--check", action="store_true", help="the correctness pass (see above)")
    ap.add_argument("--aitune", help="the aitune CLI (--check)")
    ap.add_argument("--test-cuda", help="test_cuda, for --coverage (--check)")
    ap.add_argument("--check-spec", default="cuda:dtype=bf16")
    a = ap.parse_args()
    a.models_given = a.models.split(",") if "--models" in sys.argv else None
    t_start = time.time()
    left = lambda: a.budget - (time.time() - t_start)  # noqa: E731
    if a.check:
        import torch
        emit(a.out, {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
                     "check": True})
        return check(a, left)
    import torch
    import models as suite  # bench/suite/models.py
    emit(a.out, {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__})
    batches = [int(b) for b in a.batches.split(",")]
    names = a.models.split(",")
    built = {}
    for name in names:
        if left() < 60:
            break
        builder, family = suite.TORCH[name]
        if a.autotune_only:
            model, ins = builder()
            built[name] = (model.cuda().to(torch.bfloat16).eval(), ins, family)
            continue
        t0 = time.time()
        suite.export_torch(name, a.work, ("torchscript",))
        onnx = os.path.join(a.work, name, "model.onnx")
        emit(a.out, {"model": name, "family": family, "export_s": round(time.time() - t0, 1),
                     "exported": os.path.exists(onnx)})
        for b in batches:
            specs = ["cuda:dtype=bf16"]
            if family in TRANSFORMERS and b == max(batches):
                specs.append("cuda:dtype=fp8")
            for spec in specs:
                if not os.path.exists(onnx) or left() < 30:
                    continue
                try:
                    r = subprocess.run([a.bench, onnx, spec, str(b), "--iters", str(a.iters)],
                                       capture_output=True, text=True, timeout=min(180, left()))
                    rec = json.loads(r.stdout.strip().splitlines()[-1]) if r.stdout.strip() else {}
                    if r.returncode:
                        rec["error"] = r.stderr.strip()[-300:]
                except Exception as e:  # noqa: BLE001 - a failure is a result
                    rec = {"error": f"{type(e).__name__}: {e}"[:300]}
                rec.update(model=name, family=family, engine="aitune", config=spec, batch=b)
                emit(a.out, rec)
        model, ins = builder()
        model = model.cuda().to(torch.bfloat16).eval()
        built[name] = (model, ins, family)
        for b in batches:
            args = tuple(x.cuda().to(torch.bfloat16) if x.is_floating_point() else x.cuda()
                         for x in suite._example(ins, b))
            for mode in ("eager", "reduce-overhead"):
                if left() < 30:
                    break
                rec = {"model": name, "family": family, "engine": "torch", "config": f"{mode} bf16",
                       "batch": b}
                try:
                    with torch.no_grad():
                        t0 = time.time()
                        fn = model if mode == "eager" else torch.compile(model, mode=mode,
                                                                          dynamic=False)
                        fn(*args)
                        rec["compile_s"] = round(time.time() - t0, 1)
                        rec["wall_ms"], rec["events_ms"] = time_torch(fn, args, a.iters, 10)
                except Exception as e:  # noqa: BLE001
                    rec["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
                emit(a.out, rec)
        torch._dynamo.reset()
    # the second pass: max-autotune-no-cudagraphs while the budget lasts
    for name in names:
        if name not in built:
            continue
        model, ins, family = built[name]
        for b in batches:
            if left() < 90:
                break
            args = tuple(x.cuda().to(torch.bfloat16) if x.is_floating_point() else x.cuda()
                         for x in suite._example(ins, b))
            rec = {"model": name, "family": family, "engine": "torch",
                   "config": "max-autotune-no-cudagraphs bf16", "batch": b}
            try:
                with torch.no_grad():
                    t0 = time.time()
                    fn = torch.compile(model, mode="max-autotune-no-cudagraphs", dynamic=False)
                    fn(*args)
                    rec["compile_s"] = round(time.time() - t0, 1)
                    rec["wall_ms"], rec["events_ms"] = time_torch(fn, args, a.iters, 10)
            except Exception as e:  # noqa: BLE001
                rec["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
            emit(a.out, rec)
            torch._dynamo.reset()


if __name__ == "__main__":
    main()
