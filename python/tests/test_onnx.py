"""ONNX models (a file, bytes): named inputs, every strategy, save and load
in a new process, bad input, and the threading contract."""
import json
import logging
import subprocess
import sys
import threading

import numpy as np
import pytest

import aitune_c as ait
from conftest import FAST, mlp_reference, onnx_mlp, onnx_two_inputs

rng = np.random.default_rng(1)


def ab(n=2):
    return (rng.standard_normal((n, 4)).astype(np.float32),
            rng.standard_normal((n, 4)).astype(np.float32))


def test_named_inputs_from_a_file(two_inputs_file):
    a, b = ab()
    tuned = ait.tune(two_inputs_file, {"a": a, "b": b}, strategy=ait.OneBackend("native"), **FAST)
    assert tuned.input_names == ["a", "b"] and tuned.output_names == ["sum", "prod"]
    want = (a + b, np.maximum(a * b, 0))
    for got in (tuned(a, b), tuned(a=a, b=b), tuned(b=b, a=a), tuned({"a": a, "b": b}),
                tuned(a, b=b)):
        assert isinstance(got, tuple) and len(got) == 2
        np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-6)
    with pytest.raises(TypeError, match="missing a required argument: 'b'"):
        tuned(a)
    with pytest.raises(TypeError, match="signature"):
        tuned(a, b, c=a)


def test_bytes_and_positional_samples():
    a, b = ab(3)
    tuned = ait.tune(onnx_two_inputs(), [(a, b), (a[:1], b[:1])], strategy=ait.OneBackend("eager"), **FAST)
    got_sum, _ = tuned(a, b)
    np.testing.assert_array_equal(got_sum, a + b)
    assert tuned.report["model"]["path"] == "(memory)"
    assert tuned.report["samples"] == 2


@pytest.mark.parametrize("strategy, name", [
    (ait.OneBackend("native"), "one-backend"),
    (ait.FirstWins(["native", "eager"]), "first-wins"),
    (ait.MaxThroughput(), "max-throughput"),
    (ait.MinLatency(), "min-latency"),
    (ait.LatencyBudget(1e5), "latency-budget"),
    ("max-throughput", "max-throughput"),
    ("min_latency", "min-latency"),
])
def test_every_strategy(strategy, name):
    model = onnx_mlp()
    x = rng.standard_normal((2, 32)).astype(np.float32)
    backends = None if isinstance(strategy, (ait.OneBackend, ait.FirstWins)) else ["native"]
    tuned = ait.tune(model, x, strategy=strategy, backends=backends, batch_sizes=[1, 2], **FAST)
    assert tuned.report["strategy"]["name"] == name
    assert tuned.backend.split(":")[0] in ("native", "eager")
    assert tuned.batch_size in (1, 2)
    np.testing.assert_allclose(tuned(x), mlp_reference(model, x), rtol=1e-4, atol=1e-5)


def test_strategy_parameters_reach_the_tuner():
    s = ait.MaxThroughput(perf_validation=False, min_speedup=0.25)
    tuned = ait.tune(onnx_mlp(), None, strategy=s, backends=["native"], batch_sizes=[1], **FAST)
    r = tuned.report["strategy"]
    assert r["perf_validation"] is False and abs(r["min_speedup_ratio"] - 0.25) < 1e-12
    assert tuned.backend == "native"  # no baseline to beat
    s = ait.LatencyBudget(50.0, min_speedup=0.5)
    r = ait.tune(onnx_mlp(), None, strategy=s, backends=["native"], batch_sizes=[1], **FAST).report
    assert abs(r["strategy"]["latency_budget_ms"] - 50.0) < 1e-9
    assert abs(r["strategy"]["min_speedup_ratio"] - 0.5) < 1e-12
    assert repr(s) == "LatencyBudget(50.0, perf_validation=True, min_speedup=0.5)"


def test_dynamic_shapes_range():
    x = rng.standard_normal((3, 32)).astype(np.float32)
    tuned = ait.tune(onnx_mlp(), x, strategy=ait.OneBackend("native"), batch_sizes=[2, 4],
                     dynamic_shapes={"x": {0: (2, 3, 6)}}, **FAST)
    axis = tuned.report["graph_spec"]["axes"][0]
    assert (axis["input"], axis["axis"], axis["opt"]) == (0, 0, 3)
    assert axis["min"] <= 2 and axis["max"] >= 6
    with pytest.raises(ait.Error, match="fixed at 32") as e:
        ait.tune(onnx_mlp(), x, dynamic_shapes={"x": {1: (1, 32, 64)}}, **FAST)
    assert e.value.status == ait._core.E_INVALID_ARG
    with pytest.raises(ait.Error, match="no input 'y'"):
        ait.tune(onnx_mlp(), x, dynamic_shapes={"y": {0: (1, 2, 4)}}, **FAST)


def test_bad_input_raises():
    x = rng.standard_normal((2, 32)).astype(np.float32)
    tuned = ait.tune(onnx_mlp(), x, strategy=ait.OneBackend("native"), **FAST)
    with pytest.raises(ait.Error) as e:  # wrong shape
        tuned(np.zeros((2, 31), np.float32))
    assert e.value.status == ait._core.E_SHAPE and e.value.status_name
    assert "31" in str(e.value)
    with pytest.raises(ait.Error) as e:  # wrong dtype
        tuned(x.astype(np.float64))
    assert e.value.status == ait._core.E_DTYPE
    with pytest.raises(TypeError, match="too many positional"):
        tuned(x, x)
    with pytest.raises(ait.Error, match="takes 1 inputs, got 2"):
        tuned._core.run((x, x))
    with pytest.raises(TypeError, match="got list"):
        tuned([[1.0] * 32])
    with pytest.raises(ait.Error) as e:  # an element type the library does not take
        tuned(np.zeros((2, 32), np.complex64))
    assert e.value.status == ait._core.E_DTYPE


def test_bad_tune_requests_raise():
    with pytest.raises(ait.Error, match="nosuch") as e:  # an unknown backend
        ait.tune(onnx_mlp(), None, strategy=ait.OneBackend("nosuch"), **FAST)
    assert e.value.status < 0
    with pytest.raises(ait.Error, match="budget") as e:  # an impossible budget
        ait.tune(onnx_mlp(), None, strategy=ait.LatencyBudget(1e-6), backends=["native"],
                 batch_sizes=[1], **FAST)
    with pytest.raises(ValueError, match="unknown strategy"):
        ait.tune(onnx_mlp(), None, strategy="fastest", **FAST)
    with pytest.raises(ValueError, match="needs a budget"):
        ait.tune(onnx_mlp(), None, strategy="latency-budget", **FAST)
    with pytest.raises(ValueError, match="names its backends"):
        ait.tune(onnx_mlp(), None, strategy=ait.OneBackend("native"), backends=["eager"], **FAST)
    with pytest.raises(ait.Error, match="precision"):
        ait.tune(onnx_mlp(), None, precision="fp3", **FAST)
    with pytest.raises(ait.Error) as e:
        ait.tune(b"not a model", None, **FAST)
    assert e.value.status == ait._core.E_PARSE
    with pytest.raises(ait.Error) as e:
        ait.tune("/nonexistent/model.onnx", None, **FAST)
    assert e.value.status == ait._core.E_IO
    with pytest.raises(TypeError, match="model must be"):
        ait.tune(42, None)
    with pytest.raises(TypeError, match="unexpected keyword"):
        ait._core.Module.from_bytes(onnx_mlp()).tune(bogus=1)


def test_save_and_load_in_a_new_process(tmp_path):
    model = onnx_two_inputs()
    a, b = ab(2)
    tuned = ait.tune(model, (a, b), strategy=ait.OneBackend("native"), **FAST)
    folder = tmp_path / "two.ait"
    tuned.save(folder)
    tuned.save(folder)  # a tuned folder is replaced
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "keep.txt").write_text("mine")
    with pytest.raises(ait.Error, match="not a tuned folder|refus"):
        tuned.save(tmp_path / "other")
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    code = ("import json, sys, numpy as np, aitune_c as ait\n"
            f"t = ait.load({str(folder)!r})\n"
            f"a = np.load({str(tmp_path / 'a.npy')!r}); b = np.load({str(tmp_path / 'b.npy')!r})\n"
            "s, p = t(a=a, b=b)\n"
            "print(json.dumps({'backend': t.backend, 'batch': t.batch_size, 'sum': s.tolist(),"
            " 'prod': p.tolist(), 'inputs': t.input_names}))\n")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    got = json.loads(out.stdout)
    assert got["backend"] == tuned.backend and got["batch"] == tuned.batch_size
    assert got["inputs"] == ["a", "b"]
    np.testing.assert_allclose(np.array(got["sum"], np.float32), a + b, rtol=1e-6)
    np.testing.assert_allclose(np.array(got["prod"], np.float32), np.maximum(a * b, 0), rtol=1e-6)
    with pytest.raises(ait.Error) as e:
        ait.load(tmp_path / "nothing_here")
    assert e.value.status < 0


def test_inputs_are_read_in_place():
    x = rng.standard_normal((2, 32)).astype(np.float32)
    ptr, copied, dtype, dims = ait._core.input_view(x)
    assert ptr == x.ctypes.data and not copied and dtype == 1 and dims == (2, 32)
    ptr, copied, _, _ = ait._core.input_view(memoryview(x))
    assert ptr == x.ctypes.data and not copied

    class Interface:  # __array_interface__ only
        def __init__(self, a):
            self.a = a
            self.__array_interface__ = a.__array_interface__

    ptr, copied, _, dims = ait._core.input_view(Interface(x))
    assert ptr == x.ctypes.data and not copied and dims == (2, 32)
    strided = x[:, ::2]  # not contiguous: one copy, in C order
    ptr, copied, _, dims = ait._core.input_view(strided)
    assert copied and ptr != x.ctypes.data and dims == (2, 16)
    tuned = ait.tune(onnx_mlp(16), None, strategy=ait.OneBackend("eager"), **FAST)
    np.testing.assert_allclose(tuned(strided), mlp_reference(onnx_mlp(16), strided), rtol=1e-5)


def test_outputs_are_owned_by_the_caller():
    a, b = ab(2)
    tuned = ait.tune(onnx_two_inputs(), (a, b), strategy=ait.OneBackend("native"), **FAST)
    s1, p1 = tuned(a, b)
    keep = s1.copy()
    s2, _ = tuned(a * 3, b * 3)  # the library's buffers are reused; ours are not
    np.testing.assert_array_equal(s1, keep)
    assert not np.shares_memory(s1, s2) and s1.flags.writeable and s1.flags.c_contiguous
    assert isinstance(s1.base, memoryview)  # wraps the extension's Buffer: no second copy


def test_threads_share_one_tuned_model():
    model = onnx_mlp()
    tuned = ait.tune(model, None, strategy=ait.OneBackend("native"), **FAST)
    xs = [rng.standard_normal((2, 32)).astype(np.float32) for _ in range(4)]
    want = [mlp_reference(model, x) for x in xs]
    errors = []

    def work(i):
        try:
            for _ in range(50):
                np.testing.assert_allclose(tuned(xs[i]), want[i], rtol=1e-4, atol=1e-5)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


@pytest.mark.parametrize("backend", ["native", "onednn", "eager", "xnnpack"])
def test_clones_run_at_once_and_outlive_the_original(backend):
    """clone(): the same outputs bit for bit, each clone on its own thread at
    once, and the clones run on after the original is gone (shared weights
    on native/onednn/eager; xnnpack reloads a copy)."""
    if backend not in ait.backends():
        pytest.skip(f"{backend} is not built here")
    model = onnx_mlp()
    tuned = ait.tune(model, None, strategy=ait.OneBackend(backend), **FAST)
    xs = [rng.standard_normal((2, 32)).astype(np.float32) for _ in range(4)]
    want = [tuned(x) for x in xs]
    clones = [tuned.clone() for _ in range(3)]
    assert all(c.backend == tuned.backend and c.batch_size == tuned.batch_size for c in clones)
    del tuned
    errors = []

    def work(i):
        try:
            for _ in range(30):
                np.testing.assert_array_equal(clones[i](xs[i]), want[i])
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert clones[0].clone()(xs[3]).tobytes() == want[3].tobytes()


def test_clone_of_an_untuned_module_raises():
    core = ait._core.Module.from_bytes(onnx_mlp())
    with pytest.raises(ait.Error, match="not tuned"):
        core.clone()


def test_progress_goes_to_logging_and_tqdm(monkeypatch, caplog):
    bars = []

    class FakeBar:
        def __init__(self, total, **kw):
            self.total, self.n, self.closed = total, 0, False
            bars.append(self)

        def set_postfix_str(self, s, refresh=True):
            self.last = s

        def refresh(self):
            pass

        def close(self):
            self.closed = True

    import types
    fake = types.ModuleType("tqdm.auto")
    fake.tqdm = FakeBar
    monkeypatch.setitem(sys.modules, "tqdm.auto", fake)
    monkeypatch.setitem(sys.modules, "tqdm", types.ModuleType("tqdm"))
    opts = {**FAST, "quiet": False}
    with caplog.at_level(logging.INFO, logger="aitune_c"):
        ait.tune(onnx_mlp(), None, strategy=ait.FirstWins(["native", "eager"]), **opts)
    lines = [r.getMessage() for r in caplog.records if r.name == "aitune_c"]
    assert any("candidate 1 of 2" in m for m in lines)
    assert any(m.startswith("selected ") for m in lines)
    assert len(bars) == 1 and bars[0].total == 2 and bars[0].closed
    caplog.clear()
    bars.clear()
    with caplog.at_level(logging.INFO, logger="aitune_c"):  # quiet: no bar, progress at DEBUG
        ait.tune(onnx_mlp(), None, strategy=ait.OneBackend("native"), **FAST)
    assert not bars and not [r for r in caplog.records if r.levelno == logging.INFO
                             and "candidate" in r.getMessage()]


def test_log_callback_exception_reaches_the_caller():
    core = ait._core.Module.from_bytes(onnx_mlp())

    def boom(is_warning, line):
        raise KeyError("from the logger")

    opts = {k: v for k, v in FAST.items() if k != "quiet"}
    with pytest.raises(KeyError, match="from the logger"):
        core.tune(log=boom, strategy=0, backends=["native"], **opts)
    assert json.loads(core.report_json())["selection"]  # the tune itself finished


def test_run_time_warnings_reach_logging(tmp_path, caplog):
    model = onnx_mlp()
    x = rng.standard_normal((2, 32)).astype(np.float32)
    tuned = ait.tune(model, x, strategy=ait.OneBackend("native"), batch_sizes=[1, 2], **FAST)
    tuned.save(tmp_path / "mlp.ait")
    big = rng.standard_normal((9, 32)).astype(np.float32)  # batch 9: outside the tuned [1, 2]
    for t in (tuned, ait.load(tmp_path / "mlp.ait")):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="aitune_c"):
            np.testing.assert_allclose(t(big), mlp_reference(model, big), rtol=1e-4, atol=1e-5)
            t(big)
        warned = [r for r in caplog.records if "outside the tuned range" in r.getMessage()]
        assert len(warned) == 1  # once per module


def test_gil_is_released_while_tuning():
    """Another thread runs while the tuner is inside C, outside any log
    callback (the only Python code the tuning thread runs meanwhile). The
    window opens and closes inside callbacks (the first line, "selected"), so
    no bytecode of the tuning thread outside them is in it: were the GIL held
    in C, the watcher could only run inside a callback.

    On a loaded machine the watcher may simply not be scheduled inside one
    short window (CI saw that once), so the tune is repeated until it is seen,
    up to a bound: with the GIL held it is never seen, however often."""
    state = {"tuning": False, "in_callback": False, "saw": False, "done": False}

    def watcher():
        while not state["done"]:
            if state["tuning"] and not state["in_callback"]:
                state["saw"] = True
                return
            threading.Event().wait(0.0005)

    def log(is_warning, line):
        state["in_callback"] = True
        state["tuning"] = not line.startswith("selected ")
        state["in_callback"] = False  # the last statement: nothing runs after it here

    core = ait._core.Module.from_bytes(onnx_mlp(256))
    t = threading.Thread(target=watcher)
    t.start()
    # Runs bounded by time, not count: a tiny MLP does 1000 runs in a few ms,
    # too short a window for a descheduled watcher.
    opts = {**{k: v for k, v in FAST.items() if k != "quiet"}, "time_budget_s": 0.3, "min_runs": 5,
            "max_runs": 5000}
    tries = 0
    try:
        while not state["saw"] and tries < 12:
            tries += 1
            core.tune(log=log, strategy=2, backends=["native", "eager"], batch_sizes=[1, 4], **opts)
            state["tuning"] = False
    finally:
        state["done"] = True
        t.join()
    assert state["saw"], f"the watcher never ran while C was tuning ({tries} tunes)"
