"""Shared pieces of the benchmark harness: the timing policy, latency
statistics, the input files every engine reads, and the error measure.

The timing policy is the same for every engine (bench/ort_worker.py,
bench/torch_worker.py in-process; bench/run.py for `aitune bench`, which
times itself in C): warm up (at least one run, then until ~1 s or 5 runs),
then time a number of runs chosen so the engine spends about `seconds`
(clamped to [min_iters, max_iters]), unless a fixed count is given.
"""
import glob
import json
import math
import os
import statistics
import time

import numpy as np

WARMUP_SECONDS = 1.0
WARMUP_MAX = 5
MIN_ITERS = 3
MAX_ITERS = 1000


def plan_warmup(t_run):
    """Warm-up runs for an engine whose single run takes t_run seconds."""
    return max(1, min(WARMUP_MAX, int(WARMUP_SECONDS / max(t_run, 1e-9))))


def plan_iters(t_run, seconds, min_iters=MIN_ITERS, max_iters=MAX_ITERS):
    """Timed runs so that the loop takes about `seconds`."""
    return max(min_iters, min(max_iters, int(seconds / max(t_run, 1e-9))))


def percentile(sorted_ms, p):
    """Nearest-rank percentile of an ascending list (as aitune's profiler)."""
    k = max(1, math.ceil(p / 100.0 * len(sorted_ms)))
    return sorted_ms[k - 1]


def stats(times_s, batch):
    """Latency statistics in ms and throughput in samples/s from run times."""
    ms = sorted(t * 1e3 for t in times_s)
    med = statistics.median(ms)
    return {
        "iters": len(ms),
        "batch": batch,
        "latency_ms": {"median": med, "p90": percentile(ms, 90), "p99": percentile(ms, 99),
                       "min": ms[0], "mean": statistics.fmean(ms)},
        "throughput": batch / (med * 1e-3),
    }


def time_loop(fn, batch, iters=None, warmup=None, seconds=6.0):
    """Run fn() for warm-up, then timed runs (time.perf_counter); returns stats().
    iters/warmup None: chosen by the policy above from the warm-up runs."""
    warm = []
    start = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        fn()
        warm.append(time.perf_counter() - t0)
        if warmup is not None:
            if len(warm) >= max(1, warmup):
                break
        elif len(warm) >= WARMUP_MAX or time.perf_counter() - start >= WARMUP_SECONDS:
            break
    n = iters if iters else plan_iters(min(warm), seconds)
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return stats(times, batch)


def load_inputs(folder):
    """The benchmark inputs: folder/input_K.npy in graph-input order."""
    files = sorted(glob.glob(os.path.join(folder, "input_*.npy")),
                   key=lambda p: int(os.path.basename(p)[6:-4]))
    return [np.load(p) for p in files]


def save_outputs(folder, outputs):
    os.makedirs(folder, exist_ok=True)
    for k, o in enumerate(outputs):
        np.save(os.path.join(folder, f"output_{k}.npy"), np.asarray(o))


def load_outputs(folder):
    """output_K.npy (workers) or output_K.pb (aitune run) in output order."""
    out = []
    for k in range(1 << 16):
        npy, pb = os.path.join(folder, f"output_{k}.npy"), os.path.join(folder, f"output_{k}.pb")
        if os.path.exists(npy):
            out.append(np.load(npy))
        elif os.path.exists(pb):
            from onnx import TensorProto, numpy_helper
            with open(pb, "rb") as f:
                out.append(numpy_helper.to_array(TensorProto.FromString(f.read())))
        else:
            return out


def compare(got, want):
    """Max relative error (max |got - want| over max |want|, as the tuner
    reports it) and minimum cosine similarity over all outputs; None for an
    output whose shape differs."""
    if len(got) != len(want):
        return {"max_rel_error": None, "min_cosine": None,
                "why": f"{len(got)} outputs, expected {len(want)}"}
    rel, cos, ref_max = 0.0, 1.0, 0.0
    for g, w in zip(got, want):
        if g.shape != w.shape:
            return {"max_rel_error": None, "min_cosine": None,
                    "why": f"shape {g.shape}, expected {w.shape}"}
        g64, w64 = g.astype(np.float64).ravel(), w.astype(np.float64).ravel()
        if not np.all(np.isfinite(g64)):
            return {"max_rel_error": float("inf"), "min_cosine": None, "why": "NaN/Inf in output"}
        ref_max = max(ref_max, float(np.max(np.abs(w64))) if w64.size else 0.0)
        scale = max(float(np.max(np.abs(w64))) if w64.size else 0.0, 1e-30)
        rel = max(rel, float(np.max(np.abs(g64 - w64))) / scale)
        den = float(np.linalg.norm(g64) * np.linalg.norm(w64))
        if den > 0:
            cos = min(cos, float(np.dot(g64, w64)) / den)
        elif np.any(g64) or np.any(w64):  # one side all zeros: no similarity
            cos = 0.0
    return {"max_rel_error": rel, "min_cosine": cos, "ref_max": ref_max, "why": None}


def emit(result):
    """A worker's result: one JSON line on stdout (the last line is parsed)."""
    print(json.dumps(result), flush=True)
