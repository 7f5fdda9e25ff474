"""Running the engines, each in its own process: the Python workers
(ONNX Runtime, PyTorch) and the aitune CLI (`backends`, `bench`, `tune`,
`run`). Every function returns a dict; a failure is a dict with "error"
(the command's last stderr line), never an exception, so one broken engine
shows up in the table instead of stopping the run."""
import json
import os
import re
import subprocess
import sys

import common

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT_S = 3600

# Tolerances of the numeric check against ONNX Runtime fp32, by the precision
# an engine computes in: max |got - want| / max |want| and minimum cosine.
# fp32 matches the tuner's float32 rtol; the others its per-precision floors.
TOLERANCE = {"fp32": (1e-3, 0.9999), "fp16": (1e-2, 0.999), "bf16": (5e-2, 0.99),
             "int8": (1e-1, 0.99), "fp8": (1e-1, 0.99), "fp4": (2e-1, 0.98)}
PRECISION_OPTIONS = ("dtype", "precision", "quant", "quantize")


def _last_line(text):
    lines = [l for l in (text or "").strip().splitlines() if l.strip()]
    return lines[-1].strip() if lines else "no message"


# The environment of every aitune command (bench/suite.py --isa sets
# AIT_MAX_ISA there); None: this process's.
AITUNE_ENV = None


def _run(cmd, env=None):
    """Run cmd; returns (stdout, error-or-None)."""
    if env is None and cmd and os.path.basename(cmd[0]).startswith("aitune"):
        env = AITUNE_ENV
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired:
        return "", f"timed out after {TIMEOUT_S} s"
    except OSError as e:
        return "", str(e)
    if p.returncode:
        return p.stdout, f"exit {p.returncode}: {_last_line(p.stderr)}"
    return p.stdout, None


def _json_tail(stdout):
    """The last JSON object of the output: one line (the workers) or pretty-printed over
    several lines (`aitune ... --json` prints cJSON's formatted output)."""
    lines = stdout.strip().splitlines()
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].startswith("{"):
            try:
                return json.loads("\n".join(lines[i:]))
            except ValueError:
                continue
    raise ValueError("no JSON object in the output")


def worker(script, args, env=None):
    """python3 bench/SCRIPT ARGS...; the parsed JSON result or {"error"}. env: extra
    environment variables for the worker (e.g. an ISA cap), on top of this process's."""
    out, err = _run([sys.executable, os.path.join(HERE, script)] + args,
                    dict(os.environ, **env) if env else None)
    if err:
        return {"error": err}
    try:
        return _json_tail(out)
    except ValueError as e:
        return {"error": str(e)}


def timing_args(iters, warmup, seconds):
    a = ["--seconds", str(seconds)]
    if iters:
        a += ["--iters", str(iters)]
    if warmup is not None:
        a += ["--warmup", str(warmup)]
    return a


# ---- aitune -----------------------------------------------------------------

def precision_of(value):
    """The precision class of an option value (fp32 unless it names another)."""
    v = (value or "").lower()
    if any(s in v for s in ("int8", "i8", "q8", "u8")):
        return "int8"
    if "bf16" in v or "bfloat16" in v:
        return "bf16"
    if any(s in v for s in ("fp8", "f8")):
        return "fp8"
    if any(s in v for s in ("fp4", "f4")):
        return "fp4"
    if any(s in v for s in ("f16", "fp16", "half", "float16")):
        return "fp16"
    return "fp32"


def config_precision(config):
    """The precision class of "name:k=v,..." from its option values."""
    for kv in config.partition(":")[2].split(","):
        p = precision_of(kv.partition("=")[2])
        if p != "fp32":
            return p
    return "fp32"


def _is_precision_option(o):
    """dtype=..., precision=..., or any option whose choices name a precision
    (e.g. a quantization preset int8dq|fp8wo)."""
    return o["name"] in PRECISION_OPTIONS or any(precision_of(c) != "fp32" for c in o["choices"])


def parse_backends(text):
    """`aitune backends` output -> [{name, available, summary, reason, options:
    [{name, default, choices[]}]}]."""
    backends, cur = [], None
    opt = re.compile(r"^\s+([A-Za-z_][\w-]*)=(\S*)(?: \(([^)]*)\))?(?:\s{2,}(.*))?$")
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line[0].isspace():
            name, _, state = line.partition(" ")
            cur = {"name": name, "available": state.strip() == "available", "summary": None,
                   "reason": None, "options": []}
            backends.append(cur)
        elif cur is None:
            continue
        elif cur["summary"] is None:
            cur["summary"] = line.strip()
        elif line.strip().startswith("reason:"):
            cur["reason"] = line.strip()[len("reason:"):].strip()
        else:
            m = opt.match(line)
            if m:
                choices = [c for c in re.split(r"[|,/ ]+", m.group(3) or "") if c]
                cur["options"].append({"name": m.group(1), "default": m.group(2),
                                       "choices": choices})
    return backends


def backends(aitune):
    out, err = _run([aitune, "backends"])
    if err:
        raise SystemExit(f"aitune backends failed: {err}")
    return parse_backends(out)


def variants(backend_list, threads):
    """The configurations to benchmark: every available backend as it comes
    (threads=<cores> where it has a threads option, like the peers), plus one
    per non-default choice of a precision option (dtype=int8, ...).
    Returns [{"config": "name:opt=v,...", "precision": "fp32"|...}]."""
    res = []
    for b in backend_list:
        if not b["available"]:
            continue
        base = {}
        if any(o["name"] == "threads" for o in b["options"]):
            base["threads"] = str(threads)
        prec_opt = next((o for o in b["options"] if _is_precision_option(o)), None)

        def cfg(extra):
            kv = dict(base, **extra)
            return b["name"] + (":" + ",".join(f"{k}={v}" for k, v in kv.items()) if kv else "")

        res.append({"config": cfg({}), "precision": precision_of(prec_opt["default"] if prec_opt else "")})
        for c in (prec_opt["choices"] if prec_opt else []):
            if c != prec_opt["default"]:
                res.append({"config": cfg({prec_opt["name"]: c}), "precision": precision_of(c)})
    return res


def bench(aitune, target, batch, backend=None, iters=None, warmup=None, seconds=6.0, plan=None,
          inputs=None):
    """`aitune bench TARGET [--backend B] --batch N [--inputs DIR] --json`. Without a fixed
    iteration count or a plan [warmup, iters] from an earlier round, a 2-run
    probe (after one warm-up run) picks warm-up and timed runs with the workers' policy
    (bench/common.py). The result holds the plan it used under "plan"."""
    base = [aitune, "bench", target, "--batch", str(batch), "--json"]
    if inputs:
        base += ["--inputs", inputs]
    if backend:
        base += ["--backend", backend]
    if not iters and plan:
        warmup, iters = plan
    elif not iters:
        out, err = _run(base + ["--warmup", "1", "--iters", "2"])
        if err:
            return {"error": err}
        t = _json_tail(out)["latency_ms"]["min"] * 1e-3
        iters = common.plan_iters(t, seconds)
        warmup = common.plan_warmup(t) if warmup is None else warmup
    warmup = 2 if warmup is None else warmup
    out, err = _run(base + ["--warmup", str(warmup), "--iters", str(iters)])
    if err:
        return {"error": err}
    try:
        r = _json_tail(out)
    except ValueError as e:
        return {"error": str(e)}
    r["engine"] = "aitune"
    r["plan"] = [warmup, iters]
    return r


def run_outputs(aitune, target, inputs_pb, out_dir, backend=None):
    """`aitune run TARGET --inputs DIR --outputs DIR`; error message or None."""
    cmd = [aitune, "run", target, "--inputs", inputs_pb, "--outputs", out_dir]
    if backend:
        cmd += ["--backend", backend]
    os.makedirs(out_dir, exist_ok=True)
    return _run(cmd)[1]


def tune(aitune, model, samples_pb, out_dir, batch, backends=None):
    """`aitune tune MODEL --samples DIR --out DIR --no-cache --batch-sizes N`;
    returns {"selected", "is_baseline", "tuning_s", "candidates": [(backend,
    status, error)]} from report.json, or {"error"}."""
    cmd = [aitune, "tune", model, "--out", out_dir, "--samples", samples_pb, "--no-cache",
           "--batch-sizes", str(batch), "--quiet"] + (["--backends", backends] if backends else [])
    _, err = _run(cmd)
    if err:
        return {"error": err}
    try:
        with open(os.path.join(out_dir, "report.json")) as f:
            rep = json.load(f)
    except (OSError, ValueError) as e:
        return {"error": f"report.json: {e}"}
    sel = rep.get("selection", {})
    name = sel.get("backend")
    for c in rep.get("candidates", []):  # the selected configuration with its options
        if c.get("status") == "selected" and isinstance(c.get("config"), dict):
            opts = c["config"].get("options") or {}
            name = c["config"].get("backend", name) + (
                ":" + ",".join(f"{k}={v}" for k, v in opts.items()) if opts else "")
    return {"selected": name, "is_baseline": sel.get("is_baseline"),
            "tuning_s": rep.get("tuning_s"),
            "candidates": [(c.get("backend"), c.get("status"), c.get("error"))
                           for c in rep.get("candidates", [])]}


def passes(check, precision):
    """Whether a numeric check is inside the tolerance of its precision."""
    if not check or check.get("max_rel_error") is None:
        return False
    rel, cos = TOLERANCE.get(precision, TOLERANCE["fp32"])
    return check["max_rel_error"] <= rel and (check.get("min_cosine") or 0) >= cos
