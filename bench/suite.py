#!/usr/bin/env python3
"""The public suite (bench/suite/models.py) against ONNX Runtime and OpenVINO.

    python3 bench/suite.py [--quick] [--models a,b] [--exporters torchscript,dynamo]
        [--batches 1,8] [--rounds R] [--seconds S] [--backends native,onednn,xnnpack]
        [--isa avx2] [--label NAME] [--out docs/benchmarks.md] [--json PATH] [--aitune PATH]

For every model folder and batch size, each engine runs in its own process on
the same input files (seeded random inputs of the model's shapes; token ids
in range, attention masks padding the last quarter):
  - ONNX Runtime: CPU, intra-op threads = cores, ORT_ENABLE_ALL (also the
    reference outputs);
  - OpenVINO: CPU, LATENCY hint, threads = cores, f32 (bench/ov_worker.py);
  - aitune's tuned pick: `aitune tune MODEL --samples DIR --batch-sizes N
    --no-cache` with the defaults, then `aitune bench DIR`;
  - each aitune backend of --backends (`aitune bench MODEL --backend B`);
  - aitune:openvino, aitune's openvino candidate alone: `aitune tune MODEL
    --backends openvino` (the tuner's own openvino candidate, partitioned
    where it refuses nodes), then `aitune bench DIR` (its saved state: the
    exported compiled model), compared with OpenVINO alone: the wrapper's
    overhead (--no-ov-candidate leaves it out; --isa runs do).
Every engine's outputs are checked against ONNX Runtime's with the harness's
tolerances (bench/engines.py); an aitune row that fails its check counts as
0x. Rounds are interleaved over the whole run (round k of every engine ran
close in time); the ratio of a case is the median over rounds of that
round's throughput ratio. --isa avx2 caps aitune's kernels (AIT_MAX_ISA,
ONEDNN_MAX_CPU_ISA, OPENBLAS_CORETYPE; XNNPACK has no cap and runs its
AVX-512 kernels) for tuning and timing; the peers keep the machine's full
ISA, so those ratios are conservative; the openvino candidate is left out
there (ISA_CANDIDATES says why). The one peer that can be capped too, OpenVINO
(its CPU plugin reads ONEDNN_MAX_CPU_ISA), gets a second row `openvino@ISA`
timed at the same level: the like-for-like comparison (ONNX Runtime's MLAS
dispatches on cpuid and has no cap). --quick: the TorchScript exports only,
batch 1, one round of ~1 s per engine, no per-backend rows (< 30 min on 2
cores). The section of --out between `<!-- suite:LABEL -->` markers is
replaced (LABEL: --label, default the ISA level).
"""
import argparse
import json
import math
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "suite"))
import common  # noqa: E402
import engines  # noqa: E402
import machine  # noqa: E402
import models as suite_models  # noqa: E402
from run import aitune_check, check_row, new_row, time_row  # noqa: E402

ORT, OV, OVC = "onnxruntime", "openvino", "aitune:openvino"
ONEDNN_ISA = {"avx2": "AVX2", "portable": "SSE41"}  # ONEDNN_MAX_CPU_ISA per --isa


def ov_capped_label(isa, cap_cpuid):
    """The label of the OpenVINO row capped at --isa's level, or None: none
    under --cap-cpuid, where the plain OpenVINO row is already capped."""
    return f"{OV}@{isa}" if isa in ONEDNN_ISA and not cap_cpuid else None


def ov_capped(a):
    return ov_capped_label(a.isa, a.cap_cpuid)
# The tuner's default candidates without openvino, for --isa runs: OpenVINO
# 2026.4 reads ONEDNN_MAX_CPU_ISA too (its CPU plugin is built on oneDNN) and
# crashes under ONEDNN_MAX_CPU_ISA=AVX2 on some models (SIGSEGV compiling
# wav2vec2_like), which takes the tuning process down with it.
ISA_CANDIDATES = ("native,native:threads=1,native:gemm=blis,onednn,onednn:threads=1,"
                  "onednn:conv=winograd,xnnpack,xnnpack:threads=1")


def log(msg):
    print(time.strftime("[%H:%M:%S] ") + msg, file=sys.stderr, flush=True)


def make_inputs(meta, batch, model_path, work):
    """Seeded inputs for `batch` as work/npy/input_K.npy and work/pb/input_K.pb."""
    import onnx
    from onnx import numpy_helper
    rng = np.random.default_rng(17)
    g = onnx.load(model_path, load_external_data=False).graph
    init = {t.name for t in g.initializer}
    names = [i.name for i in g.input if i.name not in init]
    npy, pb = os.path.join(work, "npy"), os.path.join(work, "pb")
    os.makedirs(npy, exist_ok=True)
    os.makedirs(pb, exist_ok=True)
    arrays = []
    for k, (name, spec) in enumerate(zip(names, meta["inputs"])):
        shape = ([batch] if meta["batch_axis"] else []) + spec["shape"]
        dt, r = spec["dtype"], spec["range"]
        if dt == "mask":
            a = np.ones(shape, np.int64)
            a[..., r:] = 0
        elif r is not None:
            a = rng.integers(0, r, size=shape).astype(dt)
        else:
            a = rng.standard_normal(shape).astype(dt)
        np.save(os.path.join(npy, f"input_{k}.npy"), a)
        with open(os.path.join(pb, f"input_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(a, name).SerializeToString())
        arrays.append(a)
    return npy, pb, ", ".join(f"{n} {list(a.shape)} {a.dtype}" for n, a in zip(names, arrays))


def fixed_copy(path, batch_axis, work):
    """path, or a copy whose symbolic dims other than the batch are fixed
    (the PyPI files: seq) to what the inputs use."""
    import onnx
    m = onnx.load(path)
    init = {t.name for t in m.graph.initializer}
    meta = json.load(open(os.path.join(os.path.dirname(path), "inputs.json")))
    changed = False
    ins = [i for i in m.graph.input if i.name not in init]
    for i, spec in zip(ins, meta["inputs"]):
        dims = i.type.tensor_type.shape.dim
        for k, d in enumerate(dims):
            if (k > 0 or not batch_axis) and not d.HasField("dim_value"):
                want = spec["shape"][k - 1 if batch_axis else k]
                d.ClearField("dim_param")
                d.dim_value = want
                changed = True
    if not changed:
        return path
    out = os.path.join(work, "model.onnx")
    onnx.save(m, out)
    return out


def cases_of(root, names, exporters, batches):
    """(folder name, meta, batch, model path) for every made model folder."""
    out = []
    for d in sorted(os.listdir(root)):
        base, _, ex = d.partition("@")
        meta_p = os.path.join(root, d, "inputs.json")
        if d.startswith("_") or not os.path.exists(meta_p) or (names and base not in names):
            continue
        meta = json.load(open(meta_p))
        ex = ex or meta["exporter"]
        if ex not in exporters and not (ex == "trained" and "torchscript" in exporters):
            continue
        for b in (batches if meta["batch_axis"] else [1]):
            f = meta["files"].get(str(b)) or meta["files"].get("*")
            if f:
                out.append((d, meta, b, os.path.join(root, d, f)))
    return out


def run_case(a, name, meta, batch, path, tmp):
    work = os.path.join(tmp, f"{name}_b{batch}".replace("@", "_"))
    os.makedirs(work, exist_ok=True)
    model = fixed_copy(path, meta["batch_axis"], work)
    npy, pb, desc = make_inputs(meta, batch, model, work)
    log(f"{name} batch {batch}: {desc}")
    case = {"model": name, "family": meta["family"], "exporter": meta["exporter"],
            "source": meta.get("source"), "batch": batch, "inputs": desc, "notes": []}
    thr = ["--threads", str(a.threads)]
    rows, ref = [], None
    peers = [(ORT, "ort_worker.py", None), (OV, "ov_worker.py", None)]
    if ov_capped(a):
        peers.append((ov_capped(a), "ov_worker.py", {"ONEDNN_MAX_CPU_ISA": ONEDNN_ISA[a.isa]}))
    for label, script, env in peers:
        out = os.path.join(work, "out_" + label.replace("@", "_"))
        row = new_row(label, "peer", "fp32", {"type": "worker", "script": script, "env": env,
                                              "args": [model, "--inputs", npy] + thr})
        r = time_row(a, row, save=out)
        if label == ORT and "error" not in r:
            ref = common.load_outputs(out)
        elif "error" not in r:
            check_row(row, out, ref)
        rows.append(row)
    for b in a.backends:
        cfg = f"{b}:threads={a.threads}" if b in ("native", "onednn", "xnnpack") else b
        row = new_row("aitune " + cfg, "aitune", engines.config_precision(cfg),
                      {"type": "aitune", "target": model, "backend": cfg, "batch": batch,
                       "inputs": pb})
        if "error" not in time_row(a, row):
            aitune_check(a, row, model, pb, os.path.join(work, "out_" + b), ref, cfg)
        rows.append(row)
    if a.ov_candidate:
        rows.append(ov_candidate_row(a, model, pb, batch, work, ref))
    tdir = os.path.join(work, "tuned")
    t0 = time.time()
    t = engines.tune(a.aitune, model, pb, tdir, batch, ISA_CANDIDATES if a.isa else None)
    if "error" in t:
        row = new_row("aitune tuned", "tuned", "fp32", None)
        row["result"] = t
        row["rounds"] = [t]
    else:
        sel = t["selected"] or "?"
        row = new_row("aitune tuned", "tuned", engines.config_precision(sel),
                      {"type": "aitune", "target": tdir, "batch": batch, "inputs": pb})
        row["selected"] = sel
        row["tuning_s"] = time.time() - t0
        row["candidates"] = t["candidates"]
        if "error" not in time_row(a, row):
            aitune_check(a, row, tdir, pb, os.path.join(work, "out_tuned"), ref)
    rows.append(row)
    case["rows"] = rows
    if ref is None:
        case["notes"].append("ONNX Runtime failed: no reference")
    for r in rows:
        res = r["rounds"][-1] if r["rounds"] else r.get("result", {})
        log(f"    {r['label']}{' -> ' + r['selected'] if r.get('selected') else ''}: " +
            (f"error {res.get('error')}" if "error" in res else
             f"{res['latency_ms']['median']:.3f} ms" +
             ("" if r.get("passed", True) else " (FAILED check)")))
    return case


def ov_candidate_row(a, model, pb, batch, work, ref):
    """aitune's openvino candidate alone: a `--backends openvino` tune, timed
    from its tuned folder like the pick."""
    odir = os.path.join(work, "tuned_openvino")
    t = engines.tune(a.aitune, model, pb, odir, batch, "openvino")
    if "error" in t:
        row = new_row(OVC, "ovcand", "fp32", None)
        row["result"] = t
        row["rounds"] = [t]
        return row
    row = new_row(OVC, "ovcand", "fp32",
                  {"type": "aitune", "target": odir, "batch": batch, "inputs": pb})
    row["selected"] = t["selected"] or "?"
    if not row["selected"].startswith("openvino"):
        # A --backends openvino tune keeps the eager baseline as a fallback:
        # when openvino fails its check or build the folder holds that pick,
        # and timing it would pass eager off as the wrapper's speed.
        err = {"error": f"the tune picked {row['selected']}, not openvino"}
        row["result"], row["rounds"] = err, [err]
        return row
    if "error" not in time_row(a, row):
        aitune_check(a, row, odir, pb, os.path.join(work, "out_ovcand"), ref)
    return row


def another_round(a, cases, k):
    for c in cases:
        log(f"round {k}: {c['model']} batch {c['batch']}")
        for row in c["rows"]:
            if row["cmd"] and row["rounds"] and "error" not in row["rounds"][0]:
                time_row(a, row)


def ratio(case, label, peer):
    """Median over rounds of (label's throughput / peer's) in the same round;
    0 for a row that failed its check or did not run; None without the peer."""
    rows = {r["label"]: r for r in case["rows"]}
    p, x = rows.get(peer), rows.get(label)
    if not p or not p["rounds"] or any("error" in r for r in p["rounds"]):
        return None
    if not x or not x["rounds"] or "error" in x["rounds"][0] or x.get("passed") is False or \
            (x.get("passed") is None and x["kind"] != "peer"):
        return 0.0
    rs = [xr["throughput"] / pr["throughput"] for xr, pr in zip(x["rounds"], p["rounds"])
          if "error" not in xr and "error" not in pr]
    return statistics.median(rs) if rs else 0.0


def geomean(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return None
    if any(x <= 0 for x in xs):
        return 0.0
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def _ms(row):
    if not row or not row["rounds"] or "error" in row["rounds"][0]:
        return "–"
    return f"{statistics.median(r['latency_ms']['median'] for r in row['rounds'] if 'error' not in r):.3g}"


def section(res):
    m, a = res["machine"], res["settings"]
    lines = [f"### Suite: {res['label']} ({res['started']})", "",
             f"Machine: {m['cpu']}, {m['cores']} cores, ISA {res['isa_desc']}. "
             f"aitune kernels at `{a['isa']}`; ONNX Runtime {res['versions'].get(ORT, '?')} and "
             f"OpenVINO {res['versions'].get(OV, '?')} "
             + ("under bench/cpuid_avx2.c (CPUID reports AVX2+FMA only to every engine), "
                if a.get("cap_cpuid") else "at the machine's full ISA, ") +
             f"{a['threads']} threads each. {a['rounds']} round(s), ~{a['seconds']} s per engine "
             f"and round. Command: `{res['command']}` ({res['elapsed_s'] / 60:.0f} min).", ""]
    cases = res["cases"]
    tuned = [ratio(c, "aitune tuned", ORT) for c in cases]
    tuned_ov = [ratio(c, "aitune tuned", OV) for c in cases]
    ok = [x for x in tuned if x is not None]
    lines += [f"**Tuned pick vs ONNX Runtime:** geometric mean **{_f(geomean(ok))}×** over "
              f"{len(ok)} cases; ≥ 1.0× in {sum(x >= 1.0 for x in ok)} of {len(ok)}; "
              f"lowest {_f(min(ok) if ok else None)}×. "
              f"**vs OpenVINO:** geometric mean {_f(geomean(tuned_ov))}×. "
              f"OpenVINO vs ONNX Runtime: {_f(geomean([ratio(c, OV, ORT) for c in cases]))}×.", ""]
    ovc = [(c["model"], ratio(c, OVC, OV)) for c in cases if any(r["label"] == OVC for r in c["rows"])]
    ovc = [(n, x) for n, x in ovc if x is not None]
    if ovc:
        low = min(ovc, key=lambda t: t[1])
        lines += [f"**aitune's openvino candidate vs OpenVINO alone** (the wrapper's overhead): "
                  f"geometric mean {_f(geomean([x for _, x in ovc]))}× over {len(ovc)} cases; "
                  f"≥ 0.97× in {sum(x >= 0.97 for _, x in ovc)} of {len(ovc)}; lowest "
                  f"{_f(low[1])}× ({low[0]}).", ""]
    cap = ov_capped_label(a["isa"], a.get("cap_cpuid"))
    capped = [ratio(c, "aitune tuned", cap) for c in cases] if cap else []
    if cap:
        okc = [x for x in capped if x is not None]
        lines += [f"**Like for like, vs OpenVINO capped at `{a['isa']}`** (ONEDNN_MAX_CPU_ISA="
                  f"{ONEDNN_ISA[a['isa']]}): geometric mean **{_f(geomean(okc))}×** over {len(okc)} "
                  f"cases; ≥ 1.0× in {sum(x >= 1.0 for x in okc)} of {len(okc)}; lowest "
                  f"{_f(min(okc) if okc else None)}×.", ""]
    backs = [r["label"] for r in cases[0]["rows"] if r["kind"] == "aitune"] if cases else []
    head = ["model", "family", "exporter", "batch", "ORT ms", "OV ms"] + \
        ([f"OV@{a['isa']} ms"] if cap else []) + ["tuned ms", "pick", "tuned ×ORT", "tuned ×OV"] + \
        ([f"tuned ×OV@{a['isa']}"] if cap else []) + [b.replace("aitune ", "") + " ×ORT" for b in backs]
    has_ovc = any(r["label"] == OVC for c in cases for r in c["rows"])
    if has_ovc:
        head += ["aitune:openvino ms", "aitune:openvino ×OV"]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for i, (c, tr, to) in enumerate(zip(cases, tuned, tuned_ov)):
        rows = {r["label"]: r for r in c["rows"]}
        t = rows.get("aitune tuned")
        pick = t.get("selected") or (t.get("result") or {}).get("error", "?")
        if t.get("passed") is False:
            pick += " (failed check)"
        cells = [c["model"], c["family"], c["exporter"], str(c["batch"]), _ms(rows.get(ORT)),
                 _ms(rows.get(OV))] + ([_ms(rows.get(cap))] if cap else []) + \
            [_ms(t), f"`{pick}`", _f(tr), _f(to)] + ([_f(capped[i])] if cap else [])
        cells += [_f(ratio(c, b, ORT)) for b in backs]
        if has_ovc:
            o = rows.get(OVC)
            sel = (o or {}).get("selected")
            cells += [_ms(o) + ("" if not sel or sel.startswith("openvino") else f" (`{sel}`)"),
                      _f(ratio(c, OVC, OV))]
        lines.append("| " + " | ".join(cells) + " |")
    fails = [(c["model"], c["batch"], r["label"], (r["rounds"][0] if r["rounds"] else {}).get("error")
              or (r.get("check") or {}).get("why") or "check failed")
             for c in cases for r in c["rows"]
             if (r["rounds"] and "error" in r["rounds"][0]) or r.get("passed") is False]
    if fails:
        lines += ["", "Failures (errors and failed checks; an aitune row that fails counts as 0×):", ""]
        lines += [f"- {m} b{b} {lbl}: {str(e)[:300]}" for m, b, lbl, e in fails]
    if res.get("missing"):
        lines += ["", "Not made (export failed): " + ", ".join(res["missing"])]
    return "\n".join(lines) + "\n"


def _f(x):
    return "–" if x is None else f"{x:.2f}"


def write_section(path, label, text):
    begin, end = f"<!-- suite:{label} -->", f"<!-- /suite:{label} -->"
    old = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
    block = f"{begin}\n{text}{end}\n"
    if begin in old and end in old:
        new = old[:old.index(begin)] + block + old[old.index(end) + len(end) + 1:]
    else:
        new = old.rstrip("\n") + "\n\n" + block
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(new)
    os.replace(tmp, path)


def isa_desc():
    flags = set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                flags = set(line.split(":")[1].split())
                break
    have = [x for x in ("avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16",
                        "avx_vnni", "amx_tile") if x in flags]
    return "+".join(have) if have else "no AVX2"


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=None)
    ap.add_argument("--exporters", default=None, help="torchscript,dynamo (quick: torchscript)")
    ap.add_argument("--batches", default=None, help="default 1,8 (quick: 1)")
    ap.add_argument("--rounds", type=int, default=None, help="default 3 (quick: 1)")
    ap.add_argument("--seconds", type=float, default=None, help="default 2 (quick: 1)")
    ap.add_argument("--iters", type=int, default=None)
    ap.add_argument("--warmup", type=int, default=None)
    ap.add_argument("--backends", default=None,
                    help="aitune backends timed alone too (default native,onednn,xnnpack; quick: none)")
    ap.add_argument("--isa", default=None, choices=["avx512", "avx2", "portable"])
    ap.add_argument("--cap-cpuid", action="store_true",
                    help="with --isa avx2: every engine (ONNX Runtime and OpenVINO too) runs under "
                         "bench/cpuid_avx2.c, which makes CPUID report no AVX-512/AMX/AVX-VNNI")
    ap.add_argument("--label", default=None)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--models-dir", default=os.path.join(REPO, "models", "gen", "suite"))
    ap.add_argument("--aitune", default=os.path.join(REPO, "build", "aitune"))
    ap.add_argument("--out", default=os.path.join(REPO, "docs", "benchmarks.md"))
    ap.add_argument("--json", default=None)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--no-ov-candidate", dest="ov_candidate", action="store_false",
                    help="leave out the aitune:openvino row (a --backends openvino tune)")
    a = ap.parse_args(argv)
    a.names = a.models.split(",") if a.models else None
    a.exporters = (a.exporters or ("torchscript" if a.quick else "torchscript,dynamo")).split(",")
    a.batches = [int(b) for b in (a.batches or ("1" if a.quick else "1,8")).split(",")]
    a.rounds = a.rounds or (1 if a.quick else 3)
    a.seconds = a.seconds or (1.0 if a.quick else 2.0)
    a.backends = [b for b in (a.backends if a.backends is not None else
                              ("" if a.quick else "native,onednn,xnnpack")).split(",") if b]
    a.threads = os.cpu_count()
    if a.cap_cpuid and a.isa != "avx2":
        ap.error("--cap-cpuid goes with --isa avx2")
    a.label = a.label or ((a.isa or "native-isa") + ("-cpuid" if a.cap_cpuid else ""))
    a.aitune = os.path.abspath(a.aitune)
    a.ov_candidate = a.ov_candidate and not a.isa  # ISA_CANDIDATES says why
    return a


def build_cpuid_cap(tmp):
    """bench/cpuid_avx2.c as a shared object in tmp; its path. Checked: a capped
    child must see no AVX-512F in CPUID leaf 7, else the run would be mislabelled."""
    so = os.path.join(tmp, "cpuid_avx2.so")
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", so,
                    os.path.join(REPO, "bench", "cpuid_avx2.c")], check=True)
    probe = ("import ctypes, mmap\n"
             "code = bytes([0x53,0xb8,7,0,0,0,0x31,0xc9,0x0f,0xa2,0x89,0xd8,0x5b,0xc3])\n"
             "m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ|mmap.PROT_WRITE|mmap.PROT_EXEC)\n"
             "m.write(code)\n"
             "f = ctypes.CFUNCTYPE(ctypes.c_uint32)(ctypes.addressof(ctypes.c_char.from_buffer(m)))\n"
             "print((f() >> 16) & 1)\n")
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                       env=dict(os.environ, LD_PRELOAD=so))
    if r.stdout.strip() != "0":
        raise SystemExit(f"--cap-cpuid: the CPUID cap did not take here ({r.stderr.strip()})")
    return so


def main(argv):
    a = parse_args(argv)
    t0, started = time.time(), time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    made = suite_models.generate(a.models_dir, a.names, a.exporters)
    wanted = set(a.names or suite_models.ALL)
    missing = sorted(n for n in wanted if n in suite_models.TORCH for ex in a.exporters
                     if (n if ex == "torchscript" else n + "@dynamo") not in made)
    tmp = tempfile.mkdtemp(prefix="aitune-suite-")
    try:
        src, a.aitune = a.aitune, os.path.join(tmp, "aitune")
        shutil.copy2(src, a.aitune)  # others may rebuild build/ meanwhile
        if a.cap_cpuid:
            os.environ["LD_PRELOAD"] = build_cpuid_cap(tmp)  # inherited by every engine
        if a.isa:
            env = dict(os.environ, AIT_MAX_ISA=a.isa)
            if a.isa != "avx512":
                env["ONEDNN_MAX_CPU_ISA"] = "AVX2" if a.isa == "avx2" else "SSE41"
                # OpenBLAS (native's GEMM provider for Gemm and NCHW leftovers)
                # picks its kernels from cpuid, not from AIT_MAX_ISA: Haswell's
                # are what an AVX2-only CPU runs
                env["OPENBLAS_CORETYPE"] = "Haswell" if a.isa == "avx2" else "Prescott"
            engines.AITUNE_ENV = env
        mach = machine.describe(a.aitune, REPO)
        cases = [run_case(a, *c, tmp) for c in cases_of(a.models_dir, a.names, a.exporters,
                                                         a.batches)]
        for k in range(2, a.rounds + 1):
            another_round(a, cases, k)
        versions = {}
        for c in cases:
            for r in c["rows"]:
                v = (r.get("result") or {}).get("version")
                if v:
                    versions[r["label"]] = v
        res = {"label": a.label, "command": "python3 bench/suite.py " + " ".join(
                   shlex.quote(x) for x in argv), "started": started,
               "elapsed_s": time.time() - t0, "machine": mach, "isa_desc": isa_desc(),
               "versions": versions, "missing": missing,
               "settings": {"isa": a.isa or "auto", "cap_cpuid": a.cap_cpuid, "threads": a.threads,
                            "rounds": a.rounds, "seconds": a.seconds, "backends": a.backends}, "cases": cases}
        if a.json:
            with open(a.json, "w") as f:
                json.dump(res, f, indent=1, default=str)
        write_section(a.out, a.label, section(res))
        log(f"wrote the '{a.label}' section of {a.out} in {(time.time() - t0) / 60:.1f} min")
    finally:
        if a.keep:
            log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
