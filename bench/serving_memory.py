#!/usr/bin/env python3
"""Server memory with K = 1, 2, 4 instances of one published model.

Tunes models/mobilenetv2_035 (native), publishes it with --instances K
through each --triton-backend asked for, starts tritonserver
(tests/test_serving.py's helpers), waits until the model is ready and
prints the RSS of the server and its stub processes, summed (shared library
pages are counted once per process, so with the python backend this is an
upper bound).
  python: each instance is its own stub process with its own aitune_c
          module: K copies of the weights;
  aitune: the C backend (libtriton_aitune.so beside --aitune) loads the
          folder once, and its instances are threads of the server running
          clones (ait_module_clone) that share the weights.
After the model is ready, --warm N batch-1 requests go to every instance
(N per instance, sent K at a time), so each has made its work memory and
packed weights, and the RSS is read again.

usage: bench/serving_memory.py [--aitune build/aitune] [--triton-backend aitune,python]
                               [--warm 8] [--json OUT]
"""
import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import serving_load as sl  # noqa: E402
import test_serving as ts  # noqa: E402


def warm(grpc_port, k, n):
    """n * k batch-1 requests, k in flight at a time (Triton spreads them
    over the instances)."""
    import numpy as np
    import tritonclient.grpc as tg
    c = tg.InferenceServerClient("127.0.0.1:%d" % grpc_port)
    x = np.zeros((1, 3, 160, 160), np.float32)
    inp = tg.InferInput("input", list(x.shape), "FP32")
    inp.set_data_from_numpy(x)
    for _ in range(n):
        pending = []
        for _ in range(k):
            f = []
            # the client calls back with keywords: result=..., error=...
            c.async_infer(ts.NAME, [inp], lambda result, error, f=f: f.append(error))
            pending.append(f)
        deadline = time.monotonic() + 120
        while any(not f for f in pending):
            if time.monotonic() > deadline:
                raise SystemExit("warm-up requests unanswered after 120 s")
            time.sleep(0.005)
        if any(f[0] is not None for f in pending):
            raise SystemExit("a warm-up request failed: %s" % [f[0] for f in pending])
    c.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--aitune", default=os.path.join(ROOT, "build", "aitune"))
    ap.add_argument("--triton-backend", default="aitune,python")
    ap.add_argument("--warm", type=int, default=8)
    ap.add_argument("--json")
    a = ap.parse_args()
    kinds = a.triton_backend.split(",")
    server_root = ts.wheel_or_skip(need_aitune_c="python" in kinds)
    tmp = tempfile.mkdtemp(prefix="ait_mem_")
    rows = []
    try:
        tuned = os.path.join(tmp, "tuned")
        ts.run([a.aitune, "tune", os.path.join(ROOT, ts.MODEL), "--out", tuned, "--backends",
                "native", "--batch-sizes", "1,2", "--time-budget", "0.2", "--runoff", "0",
                "--no-cache", "--no-history", "--quiet"])
        aitune_so = ts.aitune_backend(a.aitune) if "aitune" in kinds else None
        backends = ts.backend_dir(server_root, tmp, aitune_so)
        for kind in kinds:
            base = base_warm = None
            for k in (1, 2, 4):
                repo = os.path.join(tmp, "repo_%s%d" % (kind, k))
                ts.run([a.aitune, "publish", tuned, "--triton", repo, "--name", ts.NAME,
                        "--instances", str(k), "--triton-backend", kind])
                proc, http, grpc, log = ts.start_server(server_root, repo, backends, tmp)
                try:
                    ts.wait_ready(proc, http, log)
                    mib = sl.rss_kib(proc.pid) / 1024
                    warm(grpc, k, a.warm)
                    mib_w = sl.rss_kib(proc.pid) / 1024
                    base, base_warm = base or mib, base_warm or mib_w
                    r = {"backend": kind, "instances": k, "ready_rss_mib": round(mib, 1),
                         "ready_ratio": round(mib / base, 3), "warm_rss_mib": round(mib_w, 1),
                         "warm_ratio": round(mib_w / base_warm, 3)}
                    rows.append(r)
                    print(json.dumps(r), flush=True)
                finally:
                    proc.send_signal(signal.SIGTERM)
                    proc.wait(timeout=120)
        if a.json:
            with open(a.json, "w") as f:
                json.dump(rows, f, indent=1)
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
