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
                             [--triton-backend aitune|python] [--model M.onnx]
--model serves another model: its inputs and first output by their graph
names, the request from its folder's test_data_set_0 (e.g.
models/bert_tiny/model.onnx: input_ids and attention_mask, [1, 32] int64).
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

INPUTS, OUTPUT = %r, %r


class TritonPythonModel:
    def initialize(self, args):
        here = os.path.dirname(os.path.abspath(__file__))
        self.s = ort.InferenceSession(os.path.join(here, "model.onnx"),
                                      providers=["CPUExecutionProvider"])

    def execute(self, requests):
        xs = {n: [pb_utils.get_input_tensor_by_name(r, n).as_numpy() for r in requests]
              for n in INPUTS}
        sizes = [x.shape[0] for x in xs[INPUTS[0]]]
        y = self.s.run([OUTPUT], {n: np.concatenate(v, axis=0) for n, v in xs.items()})[0]
        parts = np.split(y, np.cumsum(sizes)[:-1], axis=0)
        return [pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor(OUTPUT, p)])
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


TRITON_DTYPE = {np.dtype(np.float32): "FP32", np.dtype(np.int64): "INT64",
                np.dtype(np.int32): "INT32", np.dtype(np.float16): "FP16"}


def model_io(onnx_path):
    """Graph input names, the first output's name, and the sample inputs:
    the model folder's test_data_set_0/input_K.pb where it has them, else one
    float32 input of [1, 3, 160, 160] (models/mobilenetv2_035)."""
    import onnx
    from onnx import numpy_helper
    g = onnx.load(onnx_path, load_external_data=False).graph
    inits = {i.name for i in g.initializer}
    names = [i.name for i in g.input if i.name not in inits]
    d = os.path.join(os.path.dirname(onnx_path), "test_data_set_0")
    xs = []
    for k in range(len(names)):
        f = os.path.join(d, "input_%d.pb" % k)
        if not os.path.exists(f):
            xs = [np.random.default_rng(1).standard_normal((1, 3, 160, 160), dtype=np.float32)]
            break
        t = onnx.TensorProto()
        with open(f, "rb") as fh:
            t.ParseFromString(fh.read())
        xs.append(numpy_helper.to_array(t))
    return names, g.output[0].name, xs


def reference_all(aitune, tuned, tmp, xs, tag):
    d = os.path.join(tmp, "ref_" + tag)
    os.makedirs(d)
    for k, x in enumerate(xs):
        np.save(os.path.join(d, "input_%d.npy" % k), x)
    ts.run([aitune, "run", tuned, "--inputs", d, "--outputs", d, "--output-format", "npy"])
    return np.load(os.path.join(d, "output_0.npy"))


def load(port, model, clients, seconds, xs, want, io):
    import tritonclient.grpc as tg
    names, out_name = io
    lat, errors, wrong = [], [0], [0]
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def worker():
        c = tg.InferenceServerClient("127.0.0.1:%d" % port)
        inp = []
        for n, x in zip(names, xs):
            i = tg.InferInput(n, list(x.shape), TRITON_DTYPE[x.dtype])
            i.set_data_from_numpy(x)
            inp.append(i)
        mine = []
        while time.monotonic() < stop:
            t0 = time.perf_counter()
            try:
                y = c.infer(model, inp).as_numpy(out_name)
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
    ap.add_argument("--model", default=os.path.join(ROOT, ts.MODEL),
                    help="an ONNX file; its folder's test_data_set_0 gives the request "
                         "(default: models/mobilenetv2_035, a random image)")
    ap.add_argument("--json")
    ap.add_argument("--triton-backend", default="aitune", choices=("aitune", "python"))
    ap.add_argument("--max-queue-delay-us", type=int, default=2000,
                    help="the dynamic batcher's queue delay of the batching row (0: batch only "
                         "what is already queued, never wait)")
    a = ap.parse_args()
    server_root = ts.wheel_or_skip(need_aitune_c=a.triton_backend == "python")
    tmp = tempfile.mkdtemp(prefix="ait_load_")
    proc = None
    try:
        onnx = a.model
        names, out_name, xs = model_io(onnx)
        tuned = os.path.join(tmp, "tuned")
        samples = []
        if os.path.isdir(os.path.join(os.path.dirname(onnx), "test_data_set_0")):
            samples = ["--samples", os.path.join(os.path.dirname(onnx), "test_data_set_0")]
        ts.run([a.aitune, "tune", onnx, "--out", tuned, "--backends", "native",
                "--batch-sizes", "1,2,4,8", "--no-cache", "--no-history", "--quiet"] + samples)
        repo = os.path.join(tmp, "repo")
        common = ["--instances", "1", "--max-batch-size", "8", "--triton-backend",
                  a.triton_backend]
        ts.run([a.aitune, "publish", tuned, "--triton", repo, "--name", "aitune",
                "--max-queue-delay-us", str(a.max_queue_delay_us)] + common)
        ts.run([a.aitune, "publish", tuned, "--triton", repo, "--name", "aitune_b1",
                "--no-dynamic-batching"] + common)
        os.makedirs(os.path.join(repo, "ort", "1"))
        with open(os.path.join(repo, "aitune", "config.pbtxt")) as f:
            cfg = f.read().replace('name: "aitune"', 'name: "ort"').replace(
                'backend: "aitune"', 'backend: "python"')
        with open(os.path.join(repo, "ort", "config.pbtxt"), "w") as f:
            f.write(cfg)
        with open(os.path.join(repo, "ort", "1", "model.py"), "w") as f:
            f.write(ORT_MODEL_PY % (names, out_name))
        shutil.copy2(onnx, os.path.join(repo, "ort", "1", "model.onnx"))
        want = reference_all(a.aitune, tuned, tmp, xs, "b1")
        backends = ts.backend_dir(server_root, tmp, ts.aitune_backend(a.aitune)
                                  if a.triton_backend == "aitune" else None)
        proc, http, grpc, log = ts.start_server(server_root, repo, backends, tmp)
        for name in ("aitune", "aitune_b1", "ort"):
            ts.NAME = name
            ts.wait_ready(proc, http, log)
        rows = [{"idle_rss_mib": rss_kib(proc.pid) / 1024, "triton_backend": a.triton_backend,
                 "model": os.path.relpath(onnx, ROOT), "max_queue_delay_us": a.max_queue_delay_us}]
        print("server RSS after load: %.0f MiB" % rows[0]["idle_rss_mib"], flush=True)
        for clients in (1, 4, 16):
            for model in ("aitune", "aitune_b1", "ort"):  # interleaved: same load moment
                load(grpc, model, clients, 1.0, xs, want, (names, out_name))  # warm-up
                before = counts(http, model)
                r = load(grpc, model, clients, a.seconds, xs, want, (names, out_name))
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
