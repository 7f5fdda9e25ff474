"""ait.tune, ait.load and TunedModel."""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from . import _core, _export, _samples, _strategies, _tensors
from ._progress import Progress, log_line, logger

__all__ = ["TunedModel", "tune", "load"]


class TunedModel:
    """A tuned model: call it as the original (torch in -> torch out, numpy
    in -> numpy out). ``.backend``, ``.batch_size``, ``.report`` (a dict),
    ``.save(dir)``.

    Threading: calls may come from any number of threads; they are
    serialized on this object (the C API runs one call at a time per
    module), with the GIL released while the library runs. For parallel
    calls, give each thread a ``.clone()`` (shares the weights) or load the
    saved folder once per thread (docs/python.md).
    """

    def __init__(self, core, meta: Optional[dict] = None):
        self._core = core
        self._meta = meta
        graph_inputs = [row[0] for row in core.inputs]
        self.input_names: List[str] = graph_inputs
        self.output_names: List[str] = [row[0] for row in core.outputs]
        self._out_spec = None
        self._torch_model = False
        # "dynamo" or "torchscript" for an exported nn.Module, None for an ONNX model
        self.exporter: Optional[str] = meta.get("exporter") if meta else None
        if meta:
            self._sig = _samples.signature_from_rows(meta["signature"])
            call_names = list(meta.get("inputs") or graph_inputs)
            self._out_spec_text = meta.get("outputs")
            self._torch_model = True
        else:
            self._sig = _samples.names_signature(graph_inputs)
            call_names = graph_inputs
            self._out_spec_text = None
        missing = [n for n in graph_inputs if n not in call_names]
        if missing:  # exported names that do not match: by position then
            logger.debug("graph inputs %s are not the call's %s: bound by position",
                         graph_inputs, call_names)
            call_names = call_names[:len(graph_inputs)]
            self._rename = dict(zip(call_names, graph_inputs))
        else:
            self._rename = None
        self._call_names = call_names
        # the fast path: positional arguments that are the graph's inputs
        self._direct = call_names == graph_inputs and all(
            p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            for p in list(self._sig.parameters.values())[:len(graph_inputs)])
        self._n = len(graph_inputs)
        self._run = core.run
        self._single = len(self.output_names) == 1 and self._spec_is_leaf()
        self._report = None
        core.set_log(log_line)

    # ---- calling -------------------------------------------------------------

    def _inputs(self, args: tuple, kwargs: dict):
        if self._direct and not kwargs and len(args) == self._n:
            return args
        values = _samples.bind(self._sig, args, kwargs)
        if self._rename:
            values = {self._rename.get(k, k): v for k, v in values.items()}
        try:
            return [values[n] for n in self.input_names]
        except KeyError as e:
            raise _core.Error(f"input {e.args[0]!r} is missing: the model takes "
                              f"{self.input_names}") from None

    def __call__(self, *args, **kwargs):
        # the fast path: positional inputs in graph order, one output
        if kwargs or not self._direct or len(args) != self._n:
            args = self._inputs(args, kwargs)
        outs = self._run(args)
        if self._single:
            out = outs[0]  # a torch tensor only when args[0] is one
            return out if out.__class__ is np.ndarray or args[0].is_cpu else out.to(args[0].device)
        return self._structure(outs, args)

    def run(self, *args, out=None, views: bool = False, **kwargs):
        """Call with the outputs as a tuple, in graph order. With CUDA inputs
        (a module tuned with io_mem="cuda") the outputs are torch CUDA
        tensors: new ones (cloned on the device), ``out`` (a tensor per
        output, filled by a device-to-device copy), or with ``views=True``
        the library's own device memory, valid until the next call."""
        if kwargs or not self._direct or len(args) != self._n:
            args = self._inputs(args, kwargs)
        return self._core.run(list(args), out=out, views=views)

    def _spec(self):
        if self._out_spec is None and self._out_spec_text:
            try:
                from torch.utils import _pytree as pytree
                self._out_spec = pytree.treespec_loads(self._out_spec_text)
            except Exception as e:  # no torch here, or another version's format
                logger.debug("output structure not restored (%s): a tuple is returned", e)
                self._out_spec_text = None
        return self._out_spec

    def _spec_is_leaf(self) -> bool:
        spec = self._spec()
        return spec is None or spec.is_leaf()

    def _structure(self, outs, args):
        torch = sys.modules.get("torch")
        if torch is not None and args and isinstance(args[0], torch.Tensor) \
                and args[0].device.type != "cpu":
            outs = [t.to(args[0].device) for t in outs]
        spec = self._spec()
        if spec is not None and spec.num_leaves == len(outs):
            from torch.utils import _pytree as pytree
            return pytree.tree_unflatten(list(outs), spec)
        return outs[0] if len(outs) == 1 else tuple(outs)

    # ---- what was tuned ------------------------------------------------------

    @property
    def backend(self) -> str:
        """The backend it runs on ("native:threads=2", ...)."""
        return self._core.backend

    @property
    def batch_size(self) -> int:
        """The batch size the decision was made at."""
        return self._core.batch_size

    @property
    def report(self) -> dict:
        """The tuning report (docs/tuning.md, "Report") as a dict."""
        if self._report is None:
            self._report = json.loads(self._core.report_json())
        return self._report

    def clone(self) -> "TunedModel":
        """Another TunedModel of the same tuned module for another thread:
        it shares the weights and compiled state where the backend can
        (native, onednn, eager, and partitions of those; others reload a
        copy), with its own work memory and lock, so the two run at once."""
        return TunedModel(self._core.clone(), self._meta)

    def save(self, path, *, force: bool = False) -> None:
        """Write the tuned folder (atomically). An existing folder is replaced
        only when it is a tuned folder, unless force=True."""
        self._core.save(os.fspath(path), force=force)

    def __repr__(self) -> str:
        return (f"TunedModel(backend={self.backend!r}, batch_size={self.batch_size}, "
                f"inputs={self.input_names})")


def load(path) -> TunedModel:
    """Load a folder written by TunedModel.save (or `aitune tune --out`):
    no re-tuning, no rebuild. Warns (logging) when it was tuned on another
    machine."""
    core = _core.Module.load(os.fspath(path), log=log_line)
    return TunedModel(core, _export.read_metadata(core.metadata(_export.METADATA_KEY)))


# ---- tune ------------------------------------------------------------------------


def _is_torch_module(model) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(model, torch.nn.Module)


def _graph_inputs(core, samples) -> List[list]:
    """Each sample's inputs in graph order (an ONNX file's samples)."""
    names = [row[0] for row in core.inputs]
    sig = _samples.names_signature(names)
    out = []
    for i, (a, k) in enumerate(samples):
        try:
            values = _samples.bind(sig, a, k)
        except TypeError as e:
            raise TypeError(f"sample {i}: {e}") from None
        missing = [n for n in names if n not in values]
        if missing:
            raise _core.Error(f"sample {i}: inputs {missing} are missing (the model takes {names})")
        out.append([values[n] for n in names])
    return out


def _graph_order(core, exported: _export.Exported) -> List[int]:
    """Where each graph input is among the exported call's tensors: by name,
    or by position when the exporter renamed them."""
    graph = [row[0] for row in core.inputs]
    if all(n in exported.names for n in graph):
        return [exported.names.index(n) for n in graph]
    if len(graph) == len(exported.names):
        return list(range(len(graph)))
    raise _core.Error(f"the exported graph's inputs {graph} do not match forward's tensor "
                      f"arguments {exported.names}")


def _check_export(core, exported: _export.Exported) -> None:
    """Run each sample on the reference (eager), which also records it as a
    tuning sample, and compare with PyTorch's outputs: an export that
    computes something else is said before tuning spends time on it."""
    order = _graph_order(core, exported)
    for i, (inputs, want) in enumerate(zip(exported.inputs, exported.references)):
        got = core.run([inputs[k] for k in order])
        if len(got) != len(want):
            logger.warning("the exported graph has %d outputs, PyTorch's forward %d leaves",
                           len(got), len(want))
            return
        for j, (g, w) in enumerate(zip(got, want)):
            g = _tensors.as_numpy(g)
            if not isinstance(w, np.ndarray) or g.shape != w.shape:
                logger.warning("sample %d output %d: the export gives shape %s, PyTorch %s", i, j,
                               g.shape, getattr(w, "shape", type(w).__name__))
                continue
            if g.dtype.kind == "f" and g.size:
                err = float(np.max(np.abs(g.astype(np.float64) - w.astype(np.float64))))
                scale = float(np.max(np.abs(w))) or 1.0
                if err > 1e-3 * max(1.0, scale):
                    logger.warning("sample %d output %d: the exported graph differs from PyTorch "
                                   "by %.3g (max |output| %.3g)", i, j, err, scale)
            elif not np.array_equal(g, w):
                logger.warning("sample %d output %d: the exported graph differs from PyTorch", i, j)


def _options(strategy, backends, batch_sizes, precision, cache_dir, extra) -> dict:
    s = _strategies.resolve(strategy)
    o = s._options()
    sb = s._backends()
    if sb is not None and backends is not None:
        raise ValueError(f"{type(s).__name__} names its backends already: drop backends= "
                         "(or use ait.MaxThroughput() with backends=)")
    chosen = sb if sb is not None else backends
    if isinstance(chosen, str):
        chosen = [chosen]
    if chosen is not None:
        o["backends"] = list(chosen)
    if batch_sizes is not None:
        o["batch_sizes"] = [int(b) for b in batch_sizes]
    o["precision"] = precision
    if cache_dir is not None:
        o["cache_dir"] = os.fspath(cache_dir)
    o.update({k: v for k, v in extra.items() if v is not None})
    return o


def _samples_on_cuda(samples) -> bool:
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    found = []

    def walk(x):
        if isinstance(x, torch.Tensor):
            found.append(x.is_cuda)
        elif isinstance(x, (list, tuple)):
            for v in x:
                walk(v)
        elif isinstance(x, dict):
            for v in x.values():
                walk(v)
    walk(samples)
    return bool(found) and all(found)


def _set_ranges(core, dynamic_shapes, names):
    for name, axes in (dynamic_shapes or {}).items():
        if name not in names:
            raise _core.Error(f"dynamic_shapes: the model has no input {name!r} (inputs: {names})")
        for axis, rng in axes.items():
            if rng is None:
                continue  # dynamic, over the samples' sizes
            try:
                mn, opt, mx = (int(v) for v in rng)
            except (TypeError, ValueError):
                raise ValueError(f"dynamic_shapes[{name!r}][{axis}]: (min, opt, max), "
                                 f"not {rng!r}") from None
            core.set_axis_range(name, int(axis), mn, opt, mx)


def tune(model, samples=None, *, strategy="max-throughput", backends: Optional[Sequence[str]] = None,
         batch_sizes: Optional[Sequence[int]] = None,
         dynamic_shapes: Optional[Dict[str, Dict[int, Any]]] = None, precision: str = "fp32",
         cache_dir=None, quiet: bool = False, name: Optional[str] = None,
         exporter: str = "auto", time_budget_s: Optional[float] = None,
         warmup: Optional[int] = None, min_runs: Optional[int] = None,
         max_runs: Optional[int] = None, cv_target: Optional[float] = None,
         runoff_rounds: Optional[int] = None, rtol: Optional[float] = None,
         atol: Optional[float] = None, min_cosine: Optional[float] = None,
         min_top1: Optional[float] = None, use_cache: Optional[bool] = None,
         io_mem: Optional[str] = None) -> TunedModel:
    """Tune ``model`` (a torch.nn.Module, a path to an .onnx file, or its
    bytes) on ``samples`` and return the TunedModel. See docs/python.md.
    ``io_mem``: where the tuned model's inputs will live, "host" or "cuda"
    (only backends that read device memory, timed by device time); default
    "cuda" when the samples are CUDA tensors, else "host"."""
    if io_mem is None and _samples_on_cuda(samples):
        io_mem = "cuda"
    extra = {"io_mem": io_mem,
             "time_budget_s": time_budget_s, "warmup": warmup, "min_runs": min_runs,
             "max_runs": max_runs, "cv_target": cv_target, "runoff_rounds": runoff_rounds,
             "rtol": rtol, "atol": atol, "min_cosine": min_cosine, "min_top1": min_top1,
             "use_decision_cache": None if use_cache is None else int(bool(use_cache))}
    opts = _options(strategy, backends, batch_sizes, precision, cache_dir, extra)
    norm = _samples.normalize(samples)
    exported = None
    if _is_torch_module(model):
        exported = _export.export(model, norm, dynamic_shapes=dynamic_shapes,
                                  batch_sizes=batch_sizes, exporter=exporter)
        core = _core.Module.from_bytes(exported.onnx, name=name or type(model).__name__)
    elif isinstance(model, (bytes, bytearray, memoryview)):
        core = _core.Module.from_bytes(bytes(model), name=name)
    elif isinstance(model, (str, os.PathLike)):
        core = _core.Module.from_file(os.fspath(model), name=name)
    else:
        raise TypeError("model must be a torch.nn.Module, a path to an .onnx file or its bytes, "
                        f"not {type(model).__name__}")
    names = [row[0] for row in core.inputs]
    if exported is not None:
        _check_export(core, exported)
    else:
        for inputs in _graph_inputs(core, norm):
            core.add_sample(inputs)
    _set_ranges(core, dynamic_shapes, names)
    progress = Progress(quiet=quiet)
    try:
        core.tune(log=progress, **opts)
    finally:
        progress.close()
    meta = _export.read_metadata(core.metadata(_export.METADATA_KEY))
    tuned = TunedModel(core, meta)
    logger.log(10 if quiet else 20, "tuned: %s (batch %d)", tuned.backend, tuned.batch_size)
    return tuned
