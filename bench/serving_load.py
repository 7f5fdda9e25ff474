#!/usr/bin/env python3
"""Bounded load test of a published model on the real Triton server.

Tunes models/mobilenetv2_035 (native), publishes it twice into one model
repository -- `aitune` with dynamic batching (max batch 8) and `aitune_b1`
without (batch-1 serving) -- plus `ort`, the same ONNX file served by a
python-backend model.py through ONNX Runtime (the peer, same config as the
dynamic one). One tritonserver (loopback, one instance per model) serves
them; for each model and 1, 4, 16 concurrent gRPC clients (one client per
thread, batch-1 requests) it runs for --seconds and records throughput,
p50/p99 latency, errors, outputs checked against `aitune run` every
request, the mean requests per model execution (Triton's statistics: how
much dynamic batching stacked), and the server's memory (RSS of tritonserver and its stub
processes, summed).

--triton-backend picks how the two aitune models are served: aitune (the
default; the C backend libtriton_aitune.so beside --aitune) or python
(model.py through aitune_c). `ort` is always a python-backend model.

usage: bench/serving_load.py [--aitune build/aitune] [--seconds 8] [--json OUT]
                             [--triton-backend aitune|python]
Uses tests/test_serving.py's server helpers (the stub copied beside the
backend, PATH for the stub's Python).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import test_serving as ts  # noqa: E402

ORT_MODEL_PY = '''import json, os
import numpy as np
import onnxruntime as ort
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        here = os.path.dirname(os.path.abspath(__file__))
        self.s = ort.InferenceSession(os.path.join(here, "model.onnx"),
                                      providers=["CPUExecutionProvider"])

    def execute(self, requests):
        xs = [pb_utils.get_input_tensor_by_name(r, "input").as_numpy() for r in requests]
        sizes = [x.shape[0] for x in xs]
        y = self.s.run(None, {"input": np.concatenate(xs, axis=0)})[0]
        parts = np.split(y, np.cumsum(sizes)[:-1], axis=0)
        return [pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("output", p)])
                for p in parts]
'''


def rss_kib(pid):
    """RSS of pid and its children (the python backend's stub processes)."""
    total = 0
    pids = [pid]
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        pids.append(int(d))
            except OSError:
                pass
    for p in pids:
        try:
            with open("/proc/%d/status" % p) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def counts(port, model):
    """(inferences, executions) so far: Triton's statistics for model."""
    import tritonclient.http as th
    st = th.InferenceServerClient("127.0.0.1:%d" % port).get_inference_statistics(model)
    m = st["model_stats"][0]
    return int(m["inference_count"]), int(m["execution_count"])


def load(port, model, clients, seconds, x, want):
    import tritonclient.grpc as tg
    lat, errors, wrong = [], [0], [0]
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def worker():
        c = tg.InferenceServerClient("127.0.0.1:%d" % port)
        inp = tg.InferInput("input", list(x.shape), "FP32")
        inp.set_data_from_numpy(x)
        mine = []
        while time.monotonic() < stop:
            t0 = time.perf_counter()
            try:
                y = c.infer(model, [inp]).as_numpy("output")
            except Exception:
                with lock:
                    errors[0] += 1
                continue
            mine.append(time.perf_counter() - t0)
            if not np.allclose(y, want, rtol=1e-3, atol=1e-4):
                with lock:
                    wrong[0] += 1
        with lock:
            lat.extend(mine)
        c.close()

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    lat.sort()
    return {"model": model, "clients": clients, "requests": len(lat),
            "throughput_rps": len(lat) / wall,
            "p50_ms": 1e3 * statistics.median(lat) if lat else None,
            "p99_ms": 1e3 * lat[min(len(lat) - 1, int(0.99 * len(lat)))] if lat else None,
            "errors": errors[0], "wrong_outputs": wrong[0]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--aitune", default=os.path.join(ROOT, "build", "aitune"))
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--json")
    ap.add_argument("--triton-backend", default="aitune", choices=("aitune", "python"))
    a = ap.parse_args()
    server_root = ts.wheel_or_skip(need_aitune_c=a.triton_backend == "python")
    tmp = tempfile.mkdtemp(prefix="ait_load_")
    proc = None
    try:
        onnx = os.path.join(ROOT, ts.MODEL)
        tuned = os.path.join(tmp, "tuned")
        ts.run([a.aitune, "tune", onnx, "--out", tuned, "--backends", "native",
                "--batch-sizes", "1,2,4,8", "--no-cache", "--no-history", "--quiet"])
        repo = os.path.join(tmp, "repo")
        common = ["--instances", "1", "--max-batch-size", "8", "--triton-backend",
                  a.triton_backend]
        ts.run([a.aitune, "publish", tuned, "--triton", repo, "--name", "aitune",
                "--max-queue-delay-us", "2000"] + common)
        ts.run([a.aitune, "publish", tuned, "--triton", repo, "--name", "aitune_b1",
                "--no-dynamic-batching"] + common)
        os.makedirs(os.path.join(repo, "ort", "1"))
        with open(os.path.join(repo, "aitune", "config.pbtxt")) as f:
            cfg = f.read().replace('name: "aitune"', 'name: "ort"').replace(
                'backend: "aitune"', 'backend: "python"')
        with open(os.path.join(repo, "ort", "config.pbtxt"), "w") as f:
            f.write(cfg)
        with open(os.path.join(repo, "ort", "1", "model.py"), "w") as f:
            f.write(ORT_MODEL_PY)
        shutil.copy2(onnx, os.path.join(repo, "ort", "1", "model.onnx"))
        x = np.random.default_rng(1).standard_normal((1, 3, 160, 160), dtype=np.float32)
        want = ts.reference(a.aitune, tuned, tmp, x, "b1")
        backends = ts.backend_dir(server_root, tmp, ts.aitune_backend(a.aitune)
                                  if a.triton_backend == "aitune" else None)
        proc, http, grpc, log = ts.start_server(server_root, repo, backends, tmp)
        for name in ("aitune", "aitune_b1", "ort"):
            ts.NAME = name
            ts.wait_ready(proc, http, log)
        rows = [{"idle_rss_mib": rss_kib(proc.pid) / 1024, "triton_backend": a.triton_backend}]
        print("server RSS after load: %.0f MiB" % rows[0]["idle_rss_mib"], flush=True)
        for clients in (1, 4, 16):
            for model in ("aitune", "aitune_b1", "ort"):  # interleaved: same load moment
                load(grpc, model, clients, 1.0, x, want)  # warm-up
                before = counts(http, model)
                r = load(grpc, model, clients, a.seconds, x, want)
                after = counts(http, model)
                # requests per model execution: > 1 when dynamic batching stacked them
                r["mean_batch"] = (after[0] - before[0]) / max(1, after[1] - before[1])
                r["rss_mib"] = rss_kib(proc.pid) / 1024
                rows.append(r)
                print(json.dumps(r), flush=True)
        if a.json:
            with open(a.json, "w") as f:
                json.dump(rows, f, indent=1)
        return 0
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=120)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
