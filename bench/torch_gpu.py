#!/usr/bin/env python3
"""Time PyTorch on an NVIDIA GPU: the baseline for aitune's `cuda` backend.

    python3 bench/torch_gpu.py [--models resnet50,bert_base] [--batches 1,32]
        [--seq 128] [--modes eager_fp32,eager_bf16,compile_fp32,compile_bf16,
        reduce_overhead_bf16] [--iters 50] [--warmup 10] [--budget S] [--json PATH]

The nn.Modules are rebuilt from scripts/make_models.py's MODELS with the seed
the exporter uses (torch.manual_seed(0), np.random.seed(0) before the
builder), so their weights equal the exported ONNX models'. BERT inputs are
[batch, seq] token ids and an all-ones mask; vision inputs [batch, 3, 224, 224].

Modes: eager_fp32, eager_bf16 (model and float inputs in bfloat16),
eager_tf32 (fp32 with TF32 matmuls/convs), compile_fp32, compile_bf16
(torch.compile, default mode), reduce_overhead_fp32, reduce_overhead_bf16
(torch.compile mode="reduce-overhead": CUDA graphs). dynamic=False: one
compilation per batch size.

Two timings per mode, median of `iters` runs after `warmup`:
  device_ms  inputs already on the GPU, output left there, CUDA events around
             each call (how PyTorch is usually measured);
  host_ms    host inputs copied in and the output copied back every call,
             wall clock (what `aitune bench` measures: its infer() takes host
             tensors and returns host tensors); the output as
             `out.float().cpu()`: a new pageable tensor each call;
  host_pinned_ms  the same, but the output copied into one page-locked
             tensor allocated before timing (`dst.copy_(out.float(),
             non_blocking=True)` then a synchronize): what aitune's `cuda`
             backend does with its outputs (page-locked memory reused by
             every run).
Also: compile_s (first call of a compiled model) and max_abs_diff / cosine
against eager fp32 on the same inputs.

Prints one JSON object per result line; --json writes the list. Without
torch, CUDA or a GPU it prints one {"skipped": reason} line and exits 0, so
scripts/gpu_check.sh can run it anywhere.
"""
import argparse
import importlib.util
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ALL_MODES = ["eager_fp32", "eager_tf32", "eager_bf16", "compile_fp32", "compile_bf16",
             "reduce_overhead_fp32", "reduce_overhead_bf16"]
DEFAULT_MODES = "eager_fp32,eager_bf16,compile_fp32,compile_bf16,reduce_overhead_bf16"


def load_make_models():
    path = os.path.join(HERE, "..", "scripts", "make_models.py")
    spec = importlib.util.spec_from_file_location("make_models", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def build(mm, name):
    import numpy as np
    import torch
    torch.manual_seed(0)
    np.random.seed(0)
    return mm.MODELS[name][0]()[0].eval()


def make_inputs(name, model, batch, seq):
    """Host (CPU) inputs for one call at this batch size."""
    import torch
    g = torch.Generator().manual_seed(1)
    if name.startswith("bert"):
        vocab = model.word.num_embeddings
        ids = torch.randint(0, vocab, (batch, seq), generator=g, dtype=torch.int64)
        return [ids, torch.ones(batch, seq, dtype=torch.int64)]
    if name == "mlp":
        return [torch.randn(batch, 784, generator=g)]
    size = 160 if name == "mobilenetv2_035" else 224
    return [torch.randn(batch, 3, size, size, generator=g)]


DEV = "cuda"


def sync():
    import torch
    if DEV == "cuda":
        torch.cuda.synchronize()


def to_device(xs, dtype):
    out = []
    for x in xs:
        x = x.to(DEV)
        out.append(x.to(dtype) if x.is_floating_point() else x)
    return out


def time_device(fn, args, iters, warmup):
    import torch
    for _ in range(warmup):
        fn(*args)
    sync()
    if DEV != "cuda":  # debugging the script without a GPU
        ms = []
        for _ in range(iters):
            t0 = time.perf_counter()
            fn(*args)
            ms.append((time.perf_counter() - t0) * 1e3)
        return ms
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
          for _ in range(iters)]
    for a, b in ev:
        a.record()
        fn(*args)
        b.record()
    torch.cuda.synchronize()
    return [a.elapsed_time(b) for a, b in ev]


def time_calls(once, iters, warmup):
    """Wall-clock ms of each of `iters` calls of once(), after `warmup` calls."""
    for _ in range(warmup):
        once()
    sync()
    ms = []
    for _ in range(iters):
        t0 = time.perf_counter()
        once()
        ms.append((time.perf_counter() - t0) * 1e3)
    return ms


def time_host(fn, host_args, dtype, iters, warmup):
    return time_calls(lambda: fn(*to_device(host_args, dtype)).float().cpu(), iters, warmup)


def time_host_pinned(fn, host_args, dtype, iters, warmup):
    import torch
    dst = []

    def once():
        out = fn(*to_device(host_args, dtype)).float()
        if not dst:
            dst.append(torch.empty(out.shape, dtype=out.dtype, pin_memory=DEV == "cuda"))
        dst[0].copy_(out, non_blocking=DEV == "cuda")
        sync()
        return dst[0]
    return time_calls(once, iters, warmup)


def summarize(ms, batch):
    ms = sorted(ms)
    med = statistics.median(ms)
    return {"median": med, "min": ms[0], "p90": ms[max(0, int(0.9 * len(ms) + 0.5) - 1)],
            "throughput": batch / (med * 1e-3)}


def run_mode(mm, name, batch, mode, a, ref):
    import torch
    kind, prec = mode.rsplit("_", 1)
    torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"
    torch.backends.cudnn.allow_tf32 = prec == "tf32"
    dtype = torch.bfloat16 if prec == "bf16" else torch.float32
    model = build(mm, name).to(DEV).to(dtype)
    host = make_inputs(name, model, batch, a.seq)
    args = to_device(host, dtype)
    res = {"model": name, "batch": batch, "mode": mode, "seq": a.seq if name.startswith("bert") else None}
    with torch.inference_mode():
        fn = model
        if kind != "eager":
            fn = torch.compile(model, mode="reduce-overhead" if kind == "reduce_overhead" else None,
                               dynamic=False)
            t0 = time.perf_counter()
            fn(*args)
            sync()
            res["compile_s"] = time.perf_counter() - t0
        out = fn(*args).float()
        if ref is not None:
            d = (out - ref).abs().max().item()
            cos = torch.nn.functional.cosine_similarity(out.flatten(), ref.flatten(), dim=0).item()
            res["max_abs_diff"] = d
            res["cosine"] = cos
        res["device_ms"] = summarize(time_device(fn, args, a.iters, a.warmup), batch)
        res["host_ms"] = summarize(time_host(fn, host, dtype, max(5, a.iters // 2), 3), batch)
        res["host_pinned_ms"] = summarize(time_host_pinned(fn, host, dtype, max(5, a.iters // 2), 3),
                                          batch)
    if kind == "eager" and prec == "fp32":
        res["_ref"] = out.detach()
    del model, fn
    if DEV == "cuda":
        torch.cuda.empty_cache()
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="resnet50,bert_base")
    ap.add_argument("--batches", default="1,32")
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--modes", default=DEFAULT_MODES)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--budget", type=float, default=1e9, help="seconds; later modes are skipped")
    ap.add_argument("--json", default=None)
    ap.add_argument("--device", default="cuda", help=argparse.SUPPRESS)  # cpu: test the script
    a = ap.parse_args()
    global DEV
    DEV = a.device
    results = []

    def emit(r):
        results.append(r)
        print(json.dumps(r), flush=True)

    def finish():
        if a.json:
            with open(a.json, "w") as f:
                json.dump(results, f, indent=1)
        return 0

    try:
        import torch
    except Exception as e:  # noqa: BLE001 - any import failure means "no torch here"
        emit({"skipped": f"no torch: {e}"})
        return finish()
    if DEV == "cuda" and not torch.cuda.is_available():
        emit({"skipped": "no CUDA device visible to torch"})
        return finish()
    modes = [m for m in a.modes.split(",") if m]
    for m in modes:
        if m not in ALL_MODES:
            sys.exit(f"torch_gpu: unknown mode {m} (known: {', '.join(ALL_MODES)})")
    mm = load_make_models()
    start = time.perf_counter()
    emit({"device": torch.cuda.get_device_name(0) if DEV == "cuda" else DEV, "torch": torch.__version__,
          "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version()})
    for name in [m for m in a.models.split(",") if m]:
        for batch in [int(b) for b in a.batches.split(",") if b]:
            ref = None
            for mode in modes:
                if time.perf_counter() - start > a.budget:
                    emit({"model": name, "batch": batch, "mode": mode, "skipped": "time budget"})
                    continue
                try:
                    r = run_mode(mm, name, batch, mode, a, ref)
                    if "_ref" in r:
                        ref = r.pop("_ref")
                    emit(r)
                except Exception as e:  # noqa: BLE001 - a failing mode is a row, not a stop
                    emit({"model": name, "batch": batch, "mode": mode, "error": f"{type(e).__name__}: {e}"[:500]})
                    if DEV == "cuda":
                        torch.cuda.empty_cache()
    return finish()


if __name__ == "__main__":
    sys.exit(main())
