#!/usr/bin/env python3
"""Per-op profiles of ONNX Runtime and an aitune backend on one model, side by side.

    python3 bench/op_profile.py MODEL [--batch N] [--iters N] [--backend native]
        [--aitune PATH] [--threads T] [--json PATH]

MODEL is a name from scripts/make_models.py (mobilenetv2, bert_4l_256, ...).
Both engines run the harness's file and inputs (bench/run.py: the sample
repeated to the batch, symbolic dims other than the batch fixed to the
sample's), one after the other in separate processes:
  - ONNX Runtime (CPU, intra_op_num_threads = T, all graph optimizations) with
    its profiler on; per-node kernel times of the timed runs, averaged per run;
  - `aitune profile MODEL --backend B --inputs DIR --iters N` (its own timer
    around every node).
ONNX Runtime's profiler adds time per node (up to 2x a run here): each op's
ms without it is estimated as its profiled ms less a fixed cost per node,
the one that brings the profiled per-run total down to ORT's unprofiled
median (a session without the profiler; best of three medians, alternating
with `aitune bench`). aitune's timer costs well under a microsecond a node,
so its profiled ms are shown as they are. The machine's slow phases can
fall on one of the runs and not the other: run it twice. ORT's nodes that
kept an original Conv/MatMul/Gemm name are also grouped by what they compute
(pointwise, depthwise, other conv, matmul, gemm) with their GFLOP/s.
Prints a markdown report to stdout.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import common  # noqa: E402
import engines  # noqa: E402
import flops  # noqa: E402
import ort_worker  # noqa: E402
import run as harness  # noqa: E402
from torch_worker import load_make_models  # noqa: E402


def ort_profile(model, arrays, threads, warmup, iters, tmp):
    """{op type: ms/run}, {node: (op type, ms/run)}, ms/run over the timed runs."""
    sess = ort_worker.session(model, threads, profile_prefix=os.path.join(tmp, "ort"))
    feeds = dict(zip([i.name for i in sess.get_inputs()], arrays))
    for _ in range(warmup + iters):
        sess.run(None, feeds)
    with open(sess.end_profiling()) as f:
        events = json.load(f)
    runs = sorted((e for e in events if e.get("name") == "model_run"), key=lambda e: e["ts"])
    timed = runs[warmup:]
    t0 = timed[0]["ts"]
    by_op, by_node = {}, {}
    for e in events:
        if e.get("cat") != "Node" or not e["name"].endswith("_kernel_time") or e["ts"] < t0:
            continue
        node, op, ms = e["name"][:-len("_kernel_time")], e["args"].get("op_name", "?"), e["dur"] / 1e3 / len(timed)
        by_op[op] = by_op.get(op, 0.0) + ms
        by_node[node] = (op, by_node.get(node, (op, 0.0))[1] + ms)
    total = sum(r["dur"] for r in timed) / 1e3 / len(timed)
    return by_op, by_node, total


def ort_median(model, arrays, threads, warmup, iters):
    """ORT's median ms per run without its profiler (which slows it by up to 2x here),
    timed as the harness's worker times it (common.time_loop)."""
    sess = ort_worker.session(model, threads)
    feeds = dict(zip([i.name for i in sess.get_inputs()], arrays))
    return common.time_loop(lambda: sess.run(None, feeds), 1, iters, warmup)["latency_ms"]["median"]


def aitune_median(aitune, model, pb, backend, iters):
    """`aitune bench`'s median ms per run on the inputs in pb (no per-node timers),
    through the harness's own call (engines.bench)."""
    r = engines.bench(aitune, model, 1, backend, iters, 2, inputs=pb)
    if "error" in r:
        raise SystemExit(f"aitune bench failed: {r['error']}")
    return r["latency_ms"]["median"]


def aitune_profile(aitune, model, pb, backend, iters):
    """{op type: (nodes, ms/run)}, ms/run from `aitune profile`'s table."""
    out = subprocess.run([aitune, "profile", model, "--backend", backend, "--inputs", pb,
                          "--iters", str(iters), "--top", "0"], capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"aitune profile failed: {out.stderr.strip()}")
    lines = out.stdout.splitlines()
    total = float(lines[0].split(": ")[1].split(" ms")[0])
    ops, on = {}, False
    for ln in lines[1:]:
        f = ln.split()
        if f[:2] == ["op", "nodes"]:
            on = True
        elif on and len(f) == 4:
            ops[f[0]] = (int(f[1]), float(f[2]))
        elif on and not f:
            break
    return ops, total


def aliases(model, per_node):
    """{name: counted node} for every name ORT may give a node it made from a
    counted node: the node's own name, and the output tensors of it and of
    the elementwise chain after it (ORT's NCHWc nodes are named after the
    fused chain's output tensor, plus "_nchwc")."""
    import onnx
    g = onnx.load(model, load_external_data=False).graph
    users = {}
    for n in g.node:
        for t in n.input:
            users.setdefault(t, []).append(n)
    out = {}
    for n in g.node:
        if n.name not in per_node:
            continue
        out[n.name] = n.name
        t = n.output[0]
        while True:
            out[t] = out[t + "_nchwc"] = n.name
            nxt = users.get(t, [])
            if len(nxt) != 1 or nxt[0].op_type not in ("Clip", "Relu", "Add", "BatchNormalization"):
                break
            t = nxt[0].output[0]
    return out


def classes(by_node, per_node, alias):
    """ORT's kernel time and FLOPs by class, for its nodes that are (or were
    fused from) a counted node."""
    out = {}
    for node, (op, ms) in by_node.items():
        hit = per_node.get(alias.get(node, ""))
        if hit is None:
            continue
        _, f, k = hit
        ms0, f0, n0 = out.get(k, (0.0, 0, 0))
        out[k] = (ms0 + ms, f0 + f, n0 + 1)
    return out


def estimate(ops, counts, profiled, unprofiled):
    """Each op's ms without the profiler: its profiled ms less a fixed cost
    per node, the cost that makes the per-run totals agree ((profiled -
    unprofiled) / nodes per run). A profiler's cost is per node, not per
    ms, so scaling shares would shrink the big products too little."""
    nodes = sum(counts.values())
    per = max(0.0, (profiled - unprofiled) / nodes) if nodes else 0.0
    return {op: max(0.0, ms - counts.get(op, 0) * per) for op, ms in ops.items()}, per


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--backend", default="native")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--aitune", default=os.path.join(REPO, "build", "aitune"))
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    mm = load_make_models()
    d = harness.model_dir(mm, a.model)
    sample = harness.read_sample(d)
    with tempfile.TemporaryDirectory(prefix="ait-opprof-") as tmp:
        model, _ = harness.bench_model(os.path.join(d, "model.onnx"), sample, tmp)
        _, pb, arrays, desc = harness.make_inputs(model, sample, a.batch, tmp)
        per_node = flops.per_node(model, arrays)
        alias = aliases(model, per_node)
        o_ops, o_nodes, o_total = ort_profile(model, arrays, a.threads, a.warmup, a.iters, tmp)
        backend = a.backend if "threads=" in a.backend else f"{a.backend}{':' if ':' not in a.backend else ','}threads={a.threads}"
        n_ops, n_total = aitune_profile(a.aitune, model, pb, backend, a.iters)
        # unprofiled medians, alternating engines so a drift of the machine hits both
        o_med, n_med = [], []
        for _ in range(3):
            o_med.append(ort_median(model, arrays, a.threads, a.warmup, a.iters))
            n_med.append(aitune_median(a.aitune, model, pb, backend, a.iters))
        o_med, n_med = min(o_med), min(n_med)
    o_counts = {}
    for op, _ in o_nodes.values():
        o_counts[op] = o_counts.get(op, 0) + 1
    o_est, o_per = estimate(o_ops, o_counts, o_total, o_med)
    # aitune's timer costs well under a µs a node (its nodes' times add up to
    # ~98% of a profiled run): its profiled ms stand as they are
    n_est = {k: v[1] for k, v in n_ops.items()}
    gflop = sum(f for _, f, _ in per_node.values()) / 1e9
    print(f"### {a.model}, batch {a.batch}: ONNX Runtime vs aitune {backend}\n")
    print(f"{a.iters} profiled runs each after {a.warmup} warm-up runs (aitune: 2), {a.threads} threads; "
          f"inputs {desc}; {gflop:.3f} GFLOP per run.\n")
    print(f"| | ONNX Runtime | aitune {backend} |\n|---|---|---|")
    print(f"| ms per run, unprofiled (best of 3 medians, alternating) | {o_med:.3f} | {n_med:.3f} |")
    print(f"| GFLOP/s, unprofiled | {gflop / o_med * 1e3:.1f} | {gflop / n_med * 1e3:.1f} |")
    print(f"| ms per profiled run | {o_total:.3f} | {n_total:.3f} |")
    print(f"| profiler's cost per node (µs) | {o_per * 1e3:.1f} | (not subtracted) |\n")
    print("Per op type: profiled ms per run, and the estimate without the profiler (\"est. ms\": "
          "less the profiler's cost per node).\n")
    rows = sorted(o_ops.items(), key=lambda kv: -kv[1])
    print("| ORT op | nodes | profiled ms | est. ms | | aitune op | nodes | profiled ms | est. ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    nrows = sorted(n_ops.items(), key=lambda kv: -kv[1][1])
    for k in range(max(len(rows), len(nrows))):
        left = (f"{rows[k][0]} | {o_counts.get(rows[k][0], 0)} | {rows[k][1]:.3f} | {o_est[rows[k][0]]:.3f}"
                if k < len(rows) else " | | | ")
        right = (f"{nrows[k][0]} | {nrows[k][1][0]} | {nrows[k][1][1]:.3f} | {n_est[nrows[k][0]]:.3f}"
                 if k < len(nrows) else " | | | ")
        print(f"| {left} | | {right} |")
    cl = classes(o_nodes, per_node, alias)
    if cl:
        print("\nONNX Runtime's counted nodes by what they compute:\n")
        print("| class | nodes | profiled ms | est. ms | GFLOP | est. GFLOP/s |\n|---|---|---|---|---|---|")
        for k, (ms, f, n) in sorted(cl.items(), key=lambda kv: -kv[1][0]):
            est = max(1e-9, ms - n * o_per)
            print(f"| {k} | {n} | {ms:.3f} | {est:.3f} | {f / 1e9:.3f} | {f / 1e9 / est * 1e3:.1f} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"model": a.model, "batch": a.batch, "backend": backend, "gflop": gflop,
                       "ort": {"total_ms": o_total, "median_ms": o_med, "ops": o_ops,
                               "classes": {k: list(v) for k, v in cl.items()}},
                       "aitune": {"total_ms": n_total, "median_ms": n_med, "ops": n_ops}}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
