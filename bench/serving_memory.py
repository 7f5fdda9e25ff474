#!/usr/bin/env python3
"""Server memory with K = 1, 2, 4 instances of one published model.

Tunes models/mobilenetv2_035 (native), publishes it with --instances K,
starts tritonserver (tests/test_serving.py's helpers), waits until the
model is ready and prints the RSS of the server and its stub processes,
summed (shared library pages are counted once per process, so this is an
upper bound). Each instance is its own stub process holding its own
aitune_c module: the weights are not shared (docs/serving.md).

usage: bench/serving_memory.py [--aitune build/aitune]
"""
import argparse
import os
import shutil
import signal
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import serving_load as sl  # noqa: E402
import test_serving as ts  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--aitune", default=os.path.join(ROOT, "build", "aitune"))
    a = ap.parse_args()
    server_root = ts.wheel_or_skip()
    tmp = tempfile.mkdtemp(prefix="ait_mem_")
    try:
        tuned = os.path.join(tmp, "tuned")
        ts.run([a.aitune, "tune", os.path.join(ROOT, ts.MODEL), "--out", tuned, "--backends",
                "native", "--batch-sizes", "1,2", "--time-budget", "0.2", "--runoff", "0",
                "--no-cache", "--no-history", "--quiet"])
        backends = ts.backend_dir(server_root, tmp)
        base = None
        for k in (1, 2, 4):
            repo = os.path.join(tmp, "repo%d" % k)
            ts.run([a.aitune, "publish", tuned, "--triton", repo, "--name", ts.NAME,
                    "--instances", str(k)])
            proc, http, _, log = ts.start_server(server_root, repo, backends, tmp)
            try:
                ts.wait_ready(proc, http, log)
                mib = sl.rss_kib(proc.pid) / 1024
                base = base or mib
                print("K=%d: %.0f MiB (%.2fx K=1)" % (k, mib, mib / base), flush=True)
            finally:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=120)
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
