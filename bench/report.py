"""docs/benchmarks.md from the harness's results (bench/run.py)."""
import datetime
import statistics

HOW_TO_READ = """\
**How to read.** Every engine ran in its own process, one after the other, on the
same machine in the same run, on the same inputs (see *Method*). These machines are
shared and noisy: compare the ratios within one run (`× ORT` = throughput over
ONNX Runtime fp32's throughput in the same table), never absolute times across
runs. Each engine was timed in several rounds (each round a fresh process; the
rounds are interleaved over the whole run, so a busy neighbour hits every engine
alike); a row shows the round with the lowest median, `spread` how much slower its
slowest round was. Median and p90 are over that round's timed runs (count in
`runs`). `GFLOP/s` counts
only Conv/MatMul/Gemm work (2 × MACs) over the median latency; `% ceiling` divides
it by the measured SGEMM ceiling below, so it shows how much of the machine's
dense-math speed an engine reaches. `max rel err` is max |out − ORT fp32| / max |ORT fp32|
on the benchmark inputs; `check` applies the tuner's tolerance for the engine's
precision (fp32 ≤ 1e-3 and cosine ≥ 0.9999, bf16 ≤ 5e-2 / 0.99, int8 ≤ 1e-1 / 0.99).
An aitune result that fails its check never counts as "best aitune". The ceiling
is an fp32 one: int8 rows can exceed 100%."""


def _f(x, fmt="{:.2f}", none="–"):
    return none if x is None else fmt.format(x)


def _err(x):
    if x is None:
        return "–"
    return "0" if x == 0 else f"{x:.1e}"


def _spread(row):
    """Worst over best median of the rounds, as a percentage; None for one round."""
    meds = [x["latency_ms"]["median"] for x in row.get("rounds", []) if "error" not in x]
    return (max(meds) / min(meds) - 1) * 100 if len(meds) > 1 else None


def _row_cells(row, case, ort_tp, ceiling):
    r = row.get("result", {})
    if "error" in r:
        msg = r["error"] if len(r["error"]) <= 300 else r["error"][:297] + "..."
        return [row["label"], row["precision"], "failed: " + msg.replace("|", "\\|"),
                "", "", "", "", "", "", "", "", ""]
    lat, tp = r["latency_ms"], r["throughput"]
    gflops = case["flops"] / (lat["median"] * 1e-3) * 1e-9 if case.get("flops") else None
    chk = row.get("check")
    if chk is None:
        verdict = "–"
    elif chk.get("why"):
        verdict = "✗ " + chk["why"]
    else:
        verdict = "✓" if row.get("passed") else "✗"
    return [row["label"], row["precision"], f"{lat['median']:.2f}", f"{lat['p90']:.2f}",
            str(r.get("iters", "?")), _f(_spread(row), "{:.0f}%"), f"{tp:.1f}",
            _f(tp / ort_tp if ort_tp else None),
            _f(gflops, "{:.1f}"), _f(gflops / ceiling * 100 if gflops and ceiling else None, "{:.0f}%"),
            _err(chk.get("max_rel_error") if chk else None), verdict]


def _table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return out


def throughput(row):
    r = row.get("result", {})
    return None if "error" in r else r["throughput"]


def best_aitune(case, precisions):
    """The aitune row of highest throughput among the precisions given that
    ran and passed its numeric check; None if there is none."""
    cands = [r for r in case["rows"] if r["kind"] == "aitune" and r["precision"] in precisions
             and throughput(r) and r.get("passed")]
    return max(cands, key=throughput, default=None)


def peer(case, label):
    return next((r for r in case["rows"] if r["label"] == label), None)


def _ratio(a, b):
    ta, tb = (throughput(a) if a else None), (throughput(b) if b else None)
    return f"{ta / tb:.2f}" if ta and tb else "–"


def _round_ratio(a, b):
    """Median over rounds of a's throughput over b's in the same round (the
    rounds are interleaved over the run, so round k of every engine ran close
    in time): less swayed than best-over-best by one lucky or unlucky round of
    either engine. "–" unless both have every round."""
    ma = [x["latency_ms"]["median"] for x in (a or {}).get("rounds", []) if "latency_ms" in x]
    mb = [x["latency_ms"]["median"] for x in (b or {}).get("rounds", []) if "latency_ms" in x]
    if not ma or len(ma) != len(mb):
        return "–"
    return f"{statistics.median(y / x for x, y in zip(ma, mb)):.2f}"


def _short(row):
    return row["label"][len("aitune "):] if row["label"].startswith("aitune ") else row["label"]


def summary(cases):
    rows = []
    for c in cases:
        ort, ort8, pt = peer(c, "onnxruntime"), peer(c, "onnxruntime int8 (dynamic)"), peer(c, "pytorch")
        best = best_aitune(c, ("fp32",))
        best_h = best_aitune(c, ("bf16", "fp16"))
        best_q = best_aitune(c, ("int8", "fp8", "fp4"))
        tuned = next((r for r in c["rows"] if r["label"].startswith("aitune tuned")), None)
        tuned_ok = tuned if tuned and tuned.get("passed") else None
        rows.append([c["title"], c["batch"], _f(c.get("flops") and c["flops"] / c["batch"] * 1e-9, "{:.3g}"),
                     _f(throughput(ort) if ort else None, "{:.1f}"),
                     _short(best) if best else "none passed", _ratio(best, ort),
                     (_short(tuned_ok)[len("tuned → "):] + ": " + _ratio(tuned_ok, ort)) if tuned_ok
                     else "–", _round_ratio(tuned_ok, ort) if tuned_ok else "–", _ratio(pt, ort),
                     (_short(best_h) + ": " + _ratio(best_h, ort)) if best_h else "–",
                     _ratio(ort8, ort),
                     (_short(best_q) + ": " + _ratio(best_q, ort8)) if best_q else "–"])
    return _table(["model", "batch", "GFLOP/sample", "ORT fp32 samples/s", "best aitune (fp32)",
                   "aitune / ORT", "tuned pick / ORT", "tuned pick / ORT, median of rounds",
                   "PyTorch / ORT", "aitune bf16/fp16 / ORT",
                   "ORT int8 / ORT",
                   "aitune int8/fp8 / ORT int8"], rows)


FP16_TINY = 5.96e-8  # smallest positive fp16 (subnormal)


def flags(cases):
    """Things a reader should not miss, found in the results; the same
    failure of one configuration on several models is one line."""
    out, grouped = [], {}
    for c in cases:
        where = f"{c['model']} b{c['batch']}"
        best = best_aitune(c, ("fp32",))
        tuned = next((r for r in c["rows"] if r["label"].startswith("aitune tuned")), None)
        if best and tuned and throughput(tuned) and throughput(tuned) < 0.9 * throughput(best):
            out.append(f"{where}: the tuned pick ({_short(tuned)[len('tuned → '):]}) reached "
                       f"{throughput(tuned) / throughput(best):.2f}× the best configuration timed "
                       f"here ({_short(best)}).")
        for r in c["rows"]:
            if r["kind"] != "aitune":
                continue
            if "error" in r.get("result", {}):
                key = (_short(r), "did not run: " + r["result"]["error"][:200])
            elif r.get("check") and not r.get("passed"):
                chk = r["check"]
                msg = chk.get("why") or (f"max rel err {_err(chk.get('max_rel_error'))}, cosine "
                                         f"{_f(chk.get('min_cosine'), '{:.4f}')}")
                if r["precision"] == "fp16" and (chk.get("ref_max") or 1) < FP16_TINY:
                    msg += (f" — the reference outputs (max |x| {chk['ref_max']:.1e}) lie below fp16's "
                            "smallest value: random weights make this model's outputs tiny")
                key = (_short(r), "failed the numeric check: " + msg)
            else:
                continue
            grouped.setdefault(key, []).append(where)
    out += [f"`{cfg}` on {', '.join(w)}: {msg}" for (cfg, msg), w in grouped.items()]
    noisy = sum(1 for c in cases for r in c["rows"] if (_spread(r) or 0) > 100)
    if noisy:
        out.append(f"{noisy} rows have a spread over 100%: a neighbour was busy during at least one "
                   "of their rounds; their best round is shown.")
    return out


def machine_section(m, ceiling, load):
    lines = ["| | |", "|---|---|",
             f"| CPU | {m['cpu']} ({m['cpu_family_model']})"
             f"{' under a hypervisor' if m['hypervisor'] else ''} |",
             f"| cores used | {m['cores']} (every engine: threads = cores) |",
             f"| ISA | {', '.join(m['isa']) or 'none of note'} |",
             f"| RAM | {_f(m['ram_gib'], '{:.1f}')} GiB |",
             f"| OS | {m['os']}, Python {m['python']} |",
             f"| aitune | {m['aitune']} (commit {m['aitune_commit']}) |",
             f"| ONNX Runtime | {m['onnxruntime']} (PyPI, CPUExecutionProvider) |",
             f"| PyTorch | {m['torch']} (PyPI, eager) |",
             f"| onnx / numpy | {m['onnx']} / {m['numpy']} |",
             f"| OpenBLAS / oneDNN | {m['openblas']} / {m['onednn']} (Debian packages) |"]
    if load:
        lines.append(f"| 1-min load average before each engine run | min {load[0]:.1f}, median "
                     f"{load[len(load) // 2]:.1f}, max {load[-1]:.1f} (one engine alone adds up to "
                     f"{m['cores']}) |")
    lines.append("")
    if "error" in ceiling:
        lines.append(f"**SGEMM ceiling:** not measured ({ceiling['error']}); `% ceiling` is left empty.")
        return lines
    lines.append(f"**SGEMM ceiling: {ceiling['ceiling_gflops']:.1f} GFLOP/s** "
                 f"({ceiling['lib']}, n = {ceiling['n']}, {ceiling['threads']} threads, best of "
                 f"{ceiling.get('reps', '?')} runs; `bench/gemm_ceiling.c`; measured at the start "
                 f"and at the end: {' and '.join(f'{x:.1f}' for x in ceiling.get('measured', []))}):")
    lines.append("")
    lines += _table(["library", "n", "best ms", "GFLOP/s"],
                    [[r["lib"], r["n"], f"{r['best_ms']:.2f}", f"{r['gflops']:.1f}"]
                     for r in ceiling["runs"]])
    return lines


def case_section(c, ceiling):
    ort = peer(c, "onnxruntime")
    ort_tp = throughput(ort) if ort else None
    lines = [f"### {c['title']}, batch {c['batch']}", ""]
    if c.get("flops"):
        ops = ", ".join(f"{k} {v * 1e-9:.3g}" for k, v in sorted(c["flops_by_op"].items()))
        lines.append(f"{c['flops'] * 1e-9:.3g} GFLOP per run ({ops}); inputs {c['inputs']}.")
        lines.append("")
    lines += _table(["engine", "precision", "median ms", "p90 ms", "runs", "spread", "samples/s", "× ORT",
                     "GFLOP/s", "% ceiling", "max rel err", "check"],
                    [_row_cells(r, c, ort_tp, ceiling.get("ceiling_gflops")) for r in c["rows"]])
    for n in c.get("notes", []):
        lines += ["", n]
    lines.append("")
    return lines


def write(path, res):
    m, ceiling = res["machine"], res["ceiling"]
    lines = ["# Benchmarks", "",
             "aitune against ONNX Runtime and PyTorch on real architectures, written by the "
             "harness in `bench/` (`bench/run.py`). Regenerate with:", "",
             "```sh", res["command"], "```", "",
             f"Run {res['started']} – {res['finished']} (UTC), {res['elapsed_s'] / 60:.0f} min; "
             + (f"{res['settings']['iters']} timed runs per engine" if res["settings"].get("iters")
                else f"about {res['settings']['seconds']:g} s of timed runs per engine")
             + f", {res['settings']['rounds']} round(s)"
             + f"; aitune binary `{res['settings']['aitune']}` (copied before the run).",
             "", HOW_TO_READ, "", "## Machine", ""]
    lines += machine_section(m, ceiling, res.get("load"))
    lines += ["", "## Summary", "",
              "Throughput ratios to ONNX Runtime fp32 in the same run (> 1: faster than ORT). "
              "\"best aitune\" is the fastest aitune configuration (a backend or the tuned pick) "
              "whose outputs passed the check against ORT (the maximum of several noisy "
              "measurements, so biased upwards; \"tuned pick\" is what `aitune tune` chose, "
              "timed once per round like every engine; its ratios compare best round with best "
              "round, and \"median of rounds\" is the median over rounds of the ratio within each "
              "round, which one lucky or unlucky round of either engine does not decide); "
              "reduced-precision floats (bf16, fp16) "
              "are compared with ORT fp32, quantized ones (int8, fp8) with ORT's own dynamic int8.", ""]
    lines += summary(res["cases"])
    fl = flags(res["cases"])
    if fl:
        lines += ["", "Flags (found in the results by `bench/report.py`):", ""] + [f"- {x}" for x in fl]
    lines += ["", "## Results", ""]
    for c in res["cases"]:
        lines += case_section(c, ceiling)
    lines += ["## Method", ""] + [f"- {n}" for n in res["method"]]
    if res.get("backends"):
        lines += ["", "aitune backends at run time:", ""]
        lines += _table(["backend", "state"],
                        [[b["name"], "available" if b["available"] else
                          "not available: " + (b["reason"] or "?")] for b in res["backends"]])
    lines.append("")
    with open(path, "w") as f:
        f.write("\n".join(lines))


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")

