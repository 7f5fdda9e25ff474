#!/usr/bin/env python3
"""Publish -> serve -> infer against the real Triton Inference Server.

Tunes a bundled model (models/mobilenetv2_035, native backend, a few runs),
checks `aitune publish`'s errors and its config.pbtxt, starts `tritonserver`
from the nvidia-pytriton wheel on loopback ports with the python backend
(its stub copied into a temp folder; the wheel is not modified), then infers
over HTTP and gRPC (single, batched, concurrent requests so dynamic batching
stacks them) and compares with `aitune run`'s outputs; a wrong shape, dtype
or input name must get an error response while the server keeps serving;
finally the server is stopped with SIGTERM and must exit 0. Then the same
again through the aitune C backend (libtriton_aitune.so beside AITUNE, in a
backends/aitune folder) with 2 instances, which share one copy of the
weights (ait_module_clone).

usage: test_serving.py AITUNE ROOT
Exit 77 (skipped) only when the wheel cannot be installed here (glibc older
than 2.35, the wheel's floor); a missing wheel on a machine that can take it
is a failure: run scripts/deps.sh test.
"""
import concurrent.futures
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np

SKIP = 77
MODEL = "models/mobilenetv2_035/model.onnx"
NAME = "mobilenet"
TIMEOUT_S = 240  # server start and model load on a loaded 2-core machine


def fail(msg):
    print("test_serving: FAIL: " + msg, flush=True)
    sys.exit(1)


def step(msg):
    print("test_serving: " + msg, flush=True)


def wheel_or_skip(need_aitune_c=True):
    try:
        import pytriton  # noqa: F401
        import tritonclient.grpc  # noqa: F401
        import tritonclient.http  # noqa: F401
    except ImportError as e:
        lib, ver = platform.libc_ver()
        parts = tuple(int(x) for x in ver.split(".")[:2]) if lib == "glibc" and ver else (0, 0)
        if parts < (2, 35):
            print("test_serving: SKIP: nvidia-pytriton needs glibc >= 2.35, this machine has "
                  "%s %s (%s)" % (lib or "no glibc", ver, e), flush=True)
            sys.exit(SKIP)
        fail("%s; install it with scripts/deps.sh test (nvidia-pytriton, tritonclient[http,grpc])"
             % e)
    try:
        if need_aitune_c:
            import aitune_c  # noqa: F401
    except ImportError as e:
        fail("%s: the python backend runs the model through aitune_c; pip install ./python" % e)
    import pytriton
    return os.path.join(os.path.dirname(pytriton.__file__), "tritonserver")


def run(cmd, expect=0, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if expect is not None and p.returncode != expect:
        fail("%s: exit %d, wanted %d\n%s%s" % (" ".join(cmd), p.returncode, expect, p.stdout,
                                               p.stderr))
    return p


def free_ports(n):
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def check_publish_errors(aitune, tmp, tuned):
    repo = os.path.join(tmp, "errs")
    p = run([aitune, "publish", os.path.join(tmp, "nothing"), "--triton", repo], expect=1)
    if "not a tuned model folder" not in p.stderr:
        fail("publish of a missing folder: no clear message: " + p.stderr)
    p = run([aitune, "publish", tuned, "--triton", repo, "--name", "../up"], expect=2)
    if "not a model name" not in p.stderr:
        fail("publish --name ../up: no clear message: " + p.stderr)
    blocker = os.path.join(tmp, "a_file")
    open(blocker, "w").close()
    p = run([aitune, "publish", tuned, "--triton", blocker], expect=1)
    if "cannot publish" not in p.stderr:
        fail("publish into a file: no clear message: " + p.stderr)
    run([aitune, "publish", tuned, "--triton", repo, "--instances", "0"], expect=2)
    run([aitune, "publish", tuned], expect=2)
    os.makedirs(os.path.join(repo, "mine"))
    p = run([aitune, "publish", tuned, "--triton", repo, "--name", "mine"], expect=1)
    if "not written by aitune publish" not in p.stderr:
        fail("publish over a foreign folder: no clear message: " + p.stderr)
    if os.listdir(repo) != ["mine"] or os.listdir(os.path.join(repo, "mine")):
        fail("a refused publish left files behind: %s" % os.listdir(repo))


def check_config(repo, backend="python", count=1):
    cfg = open(os.path.join(repo, NAME, "config.pbtxt")).read()
    for want in ('name: "%s"' % NAME, 'backend: "%s"' % backend, "max_batch_size: 4",
                 'name: "input"', "data_type: TYPE_FP32", "dims: [ 3, 160, 160 ]",
                 'name: "output"', "dims: [ 1000 ]", "preferred_batch_size: [ 1, 2, 4 ]",
                 "max_queue_delay_microseconds: 2000", "count: %d" % count, "kind: KIND_CPU"):
        if want not in cfg:
            fail("config.pbtxt lacks %r:\n%s" % (want, cfg))
    ver = os.path.join(repo, NAME, "1")
    files = ("aitune/decision.json", "aitune/MANIFEST.sha256")
    for f in files + (("model.py",) if backend == "python" else ()):
        if not os.path.isfile(os.path.join(ver, f)):
            fail("the version folder lacks " + f)
    if backend != "python" and os.path.exists(os.path.join(ver, "model.py")):
        fail("an aitune-backend publish wrote a model.py")


def aitune_backend(aitune):
    """libtriton_aitune.so, built beside the CLI (AIT_TRITON)."""
    so = os.path.join(os.path.dirname(aitune), "libtriton_aitune.so")
    if not os.path.isfile(so):
        fail("%s is missing: build with AIT_TRITON=auto (the default)" % so)
    return so


def backend_dir(server_root, tmp, aitune_so=None):
    """backends/python with the stub of this Python beside libtriton_python.so,
    and backends/aitune/libtriton_aitune.so when aitune_so is given."""
    stub = os.path.join(server_root, "python_backend_stubs", "%d.%d" % sys.version_info[:2],
                        "triton_python_backend_stub")
    if not os.path.isfile(stub):
        fail("the wheel has no python backend stub for Python %d.%d" % sys.version_info[:2])
    dst = os.path.join(tmp, "backends", "python")
    os.makedirs(dst)
    src = os.path.join(server_root, "backends", "python")
    for f in ("libtriton_python.so", "triton_python_backend_utils.py"):
        shutil.copy2(os.path.join(src, f), dst)
    shutil.copy2(stub, dst)
    if aitune_so:
        os.makedirs(os.path.join(tmp, "backends", "aitune"))
        shutil.copy2(aitune_so, os.path.join(tmp, "backends", "aitune", "libtriton_aitune.so"))
    return os.path.dirname(dst)


def reference(aitune, tuned, tmp, x, tag):
    d = os.path.join(tmp, "ref_" + tag)
    os.makedirs(d)
    np.save(os.path.join(d, "input_0.npy"), x)
    run([aitune, "run", tuned, "--inputs", d, "--outputs", d, "--output-format", "npy"])
    return np.load(os.path.join(d, "output_0.npy"))


def close(got, want, what):
    if got.shape != want.shape or got.dtype != want.dtype:
        fail("%s: got %s %s, aitune run gave %s %s" % (what, got.dtype, got.shape, want.dtype,
                                                       want.shape))
    if not np.allclose(got, want, rtol=1e-4, atol=1e-5):
        fail("%s: max |diff| %g against aitune run" % (what, float(np.max(np.abs(got - want)))))


def start_server(server_root, repo, backends, tmp):
    http, grpc, metrics = free_ports(3)
    env = dict(os.environ)
    libs = os.path.join(os.path.dirname(os.path.dirname(server_root)), "nvidia_pytriton.libs")
    env["LD_LIBRARY_PATH"] = ":".join(p for p in (libs, env.get("LD_LIBRARY_PATH")) if p)
    # The stub embeds Python and ignores PYTHONPATH; it finds its prefix
    # through the first python3 on PATH, so this interpreter's folder first
    # (a venv's bin) gives it the site-packages with numpy and aitune_c.
    env["PATH"] = os.path.dirname(sys.executable) + ":" + env.get("PATH", "")
    log = open(os.path.join(tmp, "tritonserver.log"), "w")
    cmd = [os.path.join(server_root, "bin", "tritonserver"), "--model-repository", repo,
           "--backend-directory", backends, "--http-address", "127.0.0.1", "--http-port",
           str(http), "--grpc-address", "127.0.0.1", "--grpc-port", str(grpc),
           "--metrics-address", "127.0.0.1", "--metrics-port", str(metrics),
           "--exit-on-error", "true", "--strict-readiness", "true"]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    return proc, http, grpc, log.name


def server_log(path):
    with open(path) as f:
        return f.read()[-6000:]


def wait_ready(proc, http_port, log):
    import tritonclient.http as th
    c = th.InferenceServerClient("127.0.0.1:%d" % http_port)
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            fail("tritonserver exited with %d before it was ready:\n%s" % (proc.returncode,
                                                                        server_log(log)))
        try:
            if c.is_server_ready() and c.is_model_ready(NAME):
                return
        except Exception:
            pass
        time.sleep(0.5)
    fail("tritonserver not ready in %d s:\n%s" % (TIMEOUT_S, server_log(log)))


def infer(mod, client, x, name="input", dtype="FP32"):
    inp = mod.InferInput(name, list(x.shape), dtype)
    inp.set_data_from_numpy(x)
    return client.infer(NAME, [inp], outputs=[mod.InferRequestedOutput("output")]).as_numpy(
        "output")


def inputs_of(mod, x):
    inp = mod.InferInput("input", list(x.shape), "FP32")
    inp.set_data_from_numpy(x)
    return [inp]


def infer_concurrent(mod, client, rows):
    """All rows in flight at once (the clients' async calls; the HTTP client
    is not thread-safe, so no threads)."""
    out = [mod.InferRequestedOutput("output")]
    if mod.__name__.endswith("http"):
        pending = [client.async_infer(NAME, inputs_of(mod, r), outputs=out) for r in rows]
        return [p.get_result().as_numpy("output") for p in pending]
    futures = [concurrent.futures.Future() for _ in rows]
    for f, r in zip(futures, rows):
        def done(result, error, f=f):
            if error is not None:
                f.set_exception(error)
            else:
                f.set_result(result.as_numpy("output"))
        client.async_infer(NAME, inputs_of(mod, r), done, outputs=out)
    return [f.result(timeout=TIMEOUT_S) for f in futures]


def check_protocol(mod, client, what, x1, want1, x3, want3):
    close(infer(mod, client, x1), want1, what + " batch 1")
    close(infer(mod, client, x3), want3, what + " batch 3")
    # Concurrent single requests: dynamic batching stacks them, model.py
    # splits them back; each must get its own row.
    rows = [x3[i:i + 1] for i in range(3)] * 4
    got = infer_concurrent(mod, client, rows)
    for i, g in enumerate(got):
        close(g, want3[i % 3:i % 3 + 1], "%s concurrent request %d" % (what, i))
    bad = [("a wrong shape", lambda: infer(mod, client, np.zeros((1, 3, 99, 99), np.float32))),
           ("a wrong dtype", lambda: infer(mod, client, x1.astype(np.float64), dtype="FP64")),
           ("a wrong input name", lambda: infer(mod, client, x1, name="nope"))]
    for label, call in bad:
        try:
            call()
        except Exception as e:  # InferenceServerException: the error response
            step("%s, %s: error response: %s" % (what, label, str(e).splitlines()[0][:160]))
        else:
            fail("%s with %s was answered instead of refused" % (what, label))
        close(infer(mod, client, x1), want1, "%s after %s" % (what, label))


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    aitune, root = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    server_root = wheel_or_skip()
    tmp = tempfile.mkdtemp(prefix="ait_serving_")
    try:
        tuned = os.path.join(tmp, "tuned")
        step("tune %s (native, few runs)" % MODEL)
        run([aitune, "tune", os.path.join(root, MODEL), "--out", tuned, "--backends", "native",
             "--batch-sizes", "1,2,4", "--warmup", "1", "--min-runs", "2", "--max-runs", "3",
             "--time-budget", "0.2", "--runoff", "0", "--no-cache", "--no-history", "--quiet"],
            env=dict(os.environ, AITUNE_CACHE_DIR=os.path.join(tmp, "cache")))
        check_publish_errors(aitune, tmp, tuned)
        repo = os.path.join(tmp, "repo")
        run([aitune, "publish", tuned, "--triton", repo, "--name", NAME, "--instances", "1",
             "--max-batch-size", "4", "--max-queue-delay-us", "2000"])
        # Publishing again replaces the earlier publish in place.
        run([aitune, "publish", tuned, "--triton", repo, "--name", NAME, "--instances", "1",
             "--max-batch-size", "4", "--max-queue-delay-us", "2000"])
        if sorted(os.listdir(repo)) != [NAME]:
            fail("the repository holds more than the model: %s" % os.listdir(repo))
        check_config(repo)
        rng = np.random.default_rng(1)
        x1 = rng.standard_normal((1, 3, 160, 160), dtype=np.float32)
        x3 = rng.standard_normal((3, 3, 160, 160), dtype=np.float32)
        want1 = reference(aitune, tuned, tmp, x1, "b1")
        want3 = reference(aitune, tuned, tmp, x3, "b3")
        backends = backend_dir(server_root, tmp, aitune_backend(aitune))
        serve(server_root, repo, backends, tmp, (x1, want1, x3, want3), "python backend")
        repo2 = os.path.join(tmp, "repo_c")
        run([aitune, "publish", tuned, "--triton", repo2, "--name", NAME, "--instances", "2",
             "--max-batch-size", "4", "--max-queue-delay-us", "2000", "--triton-backend",
             "aitune"])
        check_config(repo2, "aitune", 2)
        serve(server_root, repo2, backends, tmp, (x1, want1, x3, want3),
              "aitune backend, 2 instances")
        step("PASS")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def serve(server_root, repo, backends, tmp, data, what):
    x1, want1, x3, want3 = data
    import tritonclient.grpc as tg
    import tritonclient.http as th
    proc = None
    try:
        step("%s: start tritonserver on loopback" % what)
        proc, http_port, grpc_port, log = start_server(server_root, repo, backends, tmp)
        wait_ready(proc, http_port, log)
        step("ready; infer over HTTP")
        check_protocol(th, th.InferenceServerClient("127.0.0.1:%d" % http_port,
                                                    concurrency=16), "HTTP", x1, want1, x3, want3)
        step("infer over gRPC")
        check_protocol(tg, tg.InferenceServerClient("127.0.0.1:%d" % grpc_port), "gRPC", x1,
                       want1, x3, want3)
        if proc.poll() is not None:
            fail("tritonserver died while serving:\n" + server_log(log))
        step("stop the server (SIGTERM)")
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            fail("tritonserver did not stop within 120 s of SIGTERM:\n" + server_log(log))
        if rc != 0:
            fail("tritonserver exited with %d:\n%s" % (rc, server_log(log)))
        proc = None
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    sys.exit(main())
