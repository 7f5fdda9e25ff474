#!/usr/bin/env python3
"""Markdown table of bench/gpu_suite.py timing results (device level).

    python3 bench/gpu_table.py RESULTS.jsonl [MORE.jsonl ...] [--dtype bf16]

For every (model, batch): aitune cuda's median with inputs and outputs in
CUDA memory and host to host, torch eager, torch.compile reduce-overhead and
max-autotune-no-cudagraphs (CUDA-event medians, the same call), and the
ratio best torch.compile / aitune (> 1: aitune is faster). A later file's
row replaces an earlier one's for the same model, batch and config, so a
re-timed model reads its newest figure. The geometric mean is over the rows
that have both sides. A model with a segment on the CPU (device_io_ms < 0:
device-resident I/O is impossible) shows its host-to-host ratio, marked
"(host)", and stays out of the geometric mean.
"""
import argparse
import json
import math


def load(paths, dtype):
    ait, torch = {}, {}
    for p in paths:
        for line in open(p):
            line = line.strip()
            if not line.startswith("{"):
                continue
            r = json.loads(line)
            key = (r.get("model"), r.get("batch"))
            if r.get("engine") == "aitune" and r.get("config") == f"cuda:dtype={dtype}":
                if r.get("device_io_ms") or r.get("host_io_ms"):
                    ait[key] = r
            elif r.get("engine") == "torch" and r.get("events_ms"):
                torch.setdefault(key, {})[r["config"].split()[0]] = r["events_ms"]
    return ait, torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--dtype", default="bf16")
    a = ap.parse_args()
    ait, torch = load(a.files, a.dtype)
    print("| model | batch | aitune cuda device I/O ms | host I/O ms | torch eager ms | "
          "reduce-overhead ms | max-autotune-no-cudagraphs ms | best torch.compile / aitune |")
    print("|---|---|---|---|---|---|---|---|")
    ratios, host_only = [], []
    for key in sorted(set(ait) | set(torch), key=lambda k: (k[0] or "", k[1] or 0)):
        r, t = ait.get(key), torch.get(key, {})
        comp = [t[m] for m in ("reduce-overhead", "max-autotune-no-cudagraphs") if m in t]
        best = min(comp) if comp else None
        dev = r and r.get("device_io_ms") and r["device_io_ms"] > 0
        host = r and not dev and r.get("host_io_ms") and r["host_io_ms"] > 0
        ratio = best / (r["device_io_ms"] if dev else r["host_io_ms"]) if (dev or host) and best else None
        if ratio:
            (ratios if dev else host_only).append(ratio)

        def f(x):
            return f"{x:.3f}" if isinstance(x, (int, float)) else "–"
        print(f"| {key[0]} | {key[1]} | {f(r['device_io_ms'] if dev else None)} | {f(r and r.get('host_io_ms'))} | "
              f"{f(t.get('eager'))} | {f(t.get('reduce-overhead'))} | "
              f"{f(t.get('max-autotune-no-cudagraphs'))} | "
              f"{('**%.2f×**' % ratio + ('' if dev else ' (host)')) if ratio else '–'} |")
    if ratios:
        g = math.exp(sum(map(math.log, ratios)) / len(ratios))
        print(f"\nGeometric mean over {len(ratios)} rows: **{g:.2f}×**; "
              f"≥ 1.0 in {sum(x >= 1.0 for x in ratios)} of {len(ratios)}.")
    if host_only:
        print(f"Rows with a CPU segment (no device-resident I/O; host-to-host ratio, not in the mean): "
              f"{len(host_only)}, ≥ 1.0 in {sum(x >= 1.0 for x in host_only)}.")


if __name__ == "__main__":
    main()
