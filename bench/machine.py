"""The machine a benchmark ran on, and its measured SGEMM ceiling
(bench/gemm_ceiling.c, built here with the system compiler)."""
import json
import os
import platform
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
OPENBLAS_INCLUDE = "/usr/include/x86_64-linux-gnu/openblas-pthread"
ISA_FLAGS = ["avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx_vnni",
             "avx512_bf16", "amx_tile", "amx_bf16", "amx_int8"]


def _cpuinfo():
    info = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if ":" in line:
                    k, v = line.split(":", 1)
                    info.setdefault(k.strip(), v.strip())
    except OSError:
        pass
    return info


def _meminfo_gib():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) / (1 << 20)
    except OSError:
        pass
    return None


def _pkg_version(pkg):
    try:
        return subprocess.run(["dpkg-query", "-W", "-f", "${Version}", pkg], capture_output=True,
                              text=True, timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def _py_version(mod):
    try:
        return __import__(mod).__version__
    except Exception:  # a missing peer is reported, not fatal here
        return None


def describe(aitune, repo):
    """A dict describing CPU, memory, OS and the versions of every engine."""
    ci = _cpuinfo()
    flags = set(ci.get("flags", "").split())
    try:
        ver = subprocess.run([aitune, "version"], capture_output=True, text=True,
                             timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        ver = None
    try:
        rev = subprocess.run(["git", "-C", repo, "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=30).stdout.strip()
        dirty = subprocess.run(["git", "-C", repo, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=30).stdout.strip()
        rev = rev + (" + uncommitted changes" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        rev = None
    return {
        "cpu": ci.get("model name", platform.processor() or "unknown"),
        "cpu_family_model": f"family {ci.get('cpu family', '?')}, model {ci.get('model', '?')}, "
                            f"stepping {ci.get('stepping', '?')}",
        "cores": os.cpu_count(),
        "isa": [f for f in ISA_FLAGS if f in flags],
        "hypervisor": "hypervisor" in flags,
        "ram_gib": _meminfo_gib(),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "onnxruntime": _py_version("onnxruntime"),
        "torch": _py_version("torch"),
        "onnx": _py_version("onnx"),
        "numpy": _py_version("numpy"),
        "aitune": ver,
        "aitune_commit": rev,
        "openblas": _pkg_version("libopenblas0-pthread") or _pkg_version("libopenblas0"),
        "onednn": _pkg_version("libdnnl2"),
    }


def gemm_ceiling(work, threads, reps=10, sizes=(1024, 2048)):
    """Build and run bench/gemm_ceiling.c; returns {"runs": [...], "ceiling_gflops",
    "lib", "n"} or {"error": message}."""
    exe = os.path.join(work, "gemm_ceiling")
    cc = os.environ.get("CC", "cc")
    cmd = [cc, "-O2", "-std=c11", "-fopenmp", "-I" + OPENBLAS_INCLUDE,
           os.path.join(HERE, "gemm_ceiling.c"), "-lopenblas", "-ldnnl", "-o", exe]
    b = subprocess.run(cmd, capture_output=True, text=True)
    if b.returncode:
        return {"error": "build failed: " + (b.stderr.strip().splitlines() or ["?"])[-1]}
    r = subprocess.run([exe, "--threads", str(threads), "--reps", str(reps)] + [str(s) for s in sizes],
                       capture_output=True, text=True, timeout=600)
    runs = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    if not runs or "ceiling_gflops" not in runs[-1]:
        return {"error": "run failed: " + (r.stderr.strip() or "no output")}
    res = dict(runs[-1])
    res["runs"], res["reps"] = runs[:-1], reps
    if r.returncode:
        res["warning"] = r.stderr.strip()
    return res


def best_ceiling(*measurements):
    """The measurement with the highest ceiling (noise only lowers it), with
    every measurement's ceiling listed under "measured"."""
    ok = [m for m in measurements if "error" not in m]
    if not ok:
        return measurements[0]
    best = dict(max(ok, key=lambda m: m["ceiling_gflops"]))
    best["measured"] = [m["ceiling_gflops"] for m in ok]
    return best
