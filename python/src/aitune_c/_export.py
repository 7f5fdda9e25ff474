"""torch.nn.Module -> ONNX bytes, with the call signature and the output
structure recorded in the model's metadata.

The dynamo exporter (torch.export based) is tried first; when it fails, the
TorchScript one, with the reason logged. Dynamic axes are those given in
``dynamic_shapes``, those whose size differs between the samples, and axis 0
of every input when ``batch_sizes`` is given. The model is exported in eval
mode (restored after) and without gradients.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import json
import logging
import re
import time
import warnings
from typing import Any, Dict, List, Optional

from . import _samples
from ._progress import logger

METADATA_KEY = "aitune_c.python"
OPSET = 18  # TorchScript fallback; the dynamo exporter picks its own


class Exported:
    """What export() gives: the ONNX bytes, the graph inputs' names in call
    order (forward's parameters holding tensors), one list of inputs and one
    list of reference outputs (flattened, numpy) per sample."""

    def __init__(self, onnx: bytes, names: List[str], inputs: List[List[Any]],
                 references: List[list], exporter: str):
        self.onnx = onnx
        self.names = names
        self.inputs = inputs
        self.references = references
        self.exporter = exporter


def _torch():
    import torch
    return torch


def _flatten_outputs(out):
    """(leaves, spec text or None) of a forward's result."""
    try:
        from torch.utils import _pytree as pytree
        leaves, spec = pytree.tree_flatten(out)
        try:
            text = pytree.treespec_dumps(spec)
        except Exception:  # a type pytree cannot serialize: a tuple then
            text = None
        return leaves, text
    except ImportError:
        return (list(out) if isinstance(out, (tuple, list)) else [out]), None


def _tensor_args(sig, samples) -> (List[str], List[Dict[str, Any]]):
    """Names of the tensor arguments (signature order) and each sample bound."""
    torch = _torch()
    bound = [_samples.bind(sig, a, k) for a, k in samples]
    names = [n for n, v in bound[0].items() if isinstance(v, torch.Tensor)]
    for i, b in enumerate(bound[1:], 1):
        got = [n for n, v in b.items() if isinstance(v, torch.Tensor)]
        if got != names:
            raise ValueError(f"sample {i} passes tensors {got}, sample 0 {names}: "
                             "every sample must pass the same arguments")
        for n, v in b.items():
            if n not in names and not _same_constant(v, bound[0].get(n)):
                raise ValueError(f"sample {i}: argument '{n}' is not a tensor and differs from "
                                 "sample 0's (non-tensor arguments are constants of the export)")
    return names, bound


def _same_constant(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return a is b


def _dynamic_axes(names, bound, dynamic_shapes, batch_sizes) -> Dict[str, Dict[int, str]]:
    """{input: {axis: dim name}}: axes whose sizes agree in every sample
    share a name (the batch of ids and mask, their sequence length)."""
    dynamic_shapes = dynamic_shapes or {}
    unknown = set(dynamic_shapes) - set(names)
    if unknown:
        raise ValueError(f"dynamic_shapes names {sorted(unknown)}, not tensor arguments of "
                         f"forward ({names})")
    axes: Dict[str, Dict[int, str]] = {}
    groups: Dict[tuple, str] = {}
    for n in names:
        rank = bound[0][n].dim()
        want = set(int(a) for a in dynamic_shapes.get(n, {}))
        sizes = {a: tuple(int(b[n].shape[a]) for b in bound) for a in range(rank)}
        want |= {a for a, s in sizes.items() if len(set(s)) > 1}
        if batch_sizes and rank >= 1:
            want.add(0)
        for a in sorted(want):
            if not 0 <= a < rank:
                raise ValueError(f"dynamic_shapes: input '{n}' has rank {rank}, no axis {a}")
            rng = tuple(dynamic_shapes.get(n, {}).get(a, ()))
            key = ("batch",) if a == 0 and batch_sizes else (a == 0, sizes[a], rng)
            name = groups.setdefault(key, "batch" if key == ("batch",) else f"{n}_dim{a}")
            axes.setdefault(n, {})[a] = name
    return axes


def _example(names, bound0, axes):
    """The export example: sample 0 with every dynamic axis of size 1 grown to
    2 (rows repeated), as torch.export specializes sizes 0 and 1."""
    torch = _torch()
    ex = dict(bound0)
    for n, ax in axes.items():
        t = ex[n]
        for a in ax:
            if t.shape[a] < 2:
                t = torch.cat([t] * (2 // max(1, t.shape[a])), dim=a) if t.shape[a] else t
        ex[n] = t
    return ex


def _call_parts(sig, values: Dict[str, Any]):
    """(args, kwargs) for forward from bound values (the reverse of bind):
    positional while no positional parameter was left out, by name after."""
    args, kwargs, by_name, spread = [], {}, False, set()
    for p in sig.parameters.values():
        if p.kind == inspect.Parameter.VAR_POSITIONAL:
            i = 0
            while f"{p.name}_{i}" in values:
                spread.add(f"{p.name}_{i}")
                args.append(values[f"{p.name}_{i}"])
                i += 1
        elif p.kind == inspect.Parameter.VAR_KEYWORD:
            kwargs.update({k: v for k, v in values.items()
                           if k not in sig.parameters and k not in spread})
        elif p.name in values:
            if p.kind == inspect.Parameter.KEYWORD_ONLY or by_name:
                kwargs[p.name] = values[p.name]
            else:
                args.append(values[p.name])
        elif p.kind != inspect.Parameter.KEYWORD_ONLY:
            by_name = True
    return tuple(args), kwargs


# loggers of the exporters' own libraries, quieted to warnings while exporting
_CHATTY = ("onnx_ir", "onnxscript", "torch.onnx", "torch.export", "torch._export")


@contextlib.contextmanager
def _levels(names, level):
    saved = [(logging.getLogger(n), logging.getLogger(n).level) for n in names]
    for lg, _ in saved:
        lg.setLevel(max(level, lg.getEffectiveLevel()))
    try:
        yield
    finally:
        for lg, old in saved:
            lg.setLevel(old)


def _quiet_export():
    """Export chatter (stdout lines, warnings, INFO logs) into our DEBUG log."""
    out = io.StringIO()
    stack = contextlib.ExitStack()
    stack.enter_context(contextlib.redirect_stdout(out))
    stack.enter_context(warnings.catch_warnings())
    stack.enter_context(_levels(_CHATTY, logging.WARNING))
    warnings.simplefilter("ignore")
    return stack, out


def _first_line(e: Exception) -> str:
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(e)).strip()  # the exporter colours its messages
    return text.splitlines()[0][:300] if text else ""


def _dynamo(model, args, kwargs, names, axes) -> bytes:
    torch = _torch()
    Dim = torch.export.Dim
    shapes = {n: {a: Dim.AUTO for a in axes[n]} if n in axes else None for n in names}
    stack, out = _quiet_export()
    with stack:
        prog = torch.onnx.export(model, args, kwargs=kwargs, dynamo=True, external_data=False,
                                 dynamic_shapes=_shapes_for(model, args, kwargs, shapes),
                                 optimize=True, verbose=False)
    for line in out.getvalue().splitlines():
        logger.debug("%s", line)
    return prog.model_proto.SerializeToString()


def _shapes_for(model, args, kwargs, by_name):
    """dynamic_shapes keyed by forward's argument names, for the arguments
    actually passed (torch.export wants the structure of the call)."""
    sig = inspect.signature(model.forward)
    bound = sig.bind(*args, **kwargs)
    return {n: by_name.get(n) for n in bound.arguments}


def _torchscript(model, args, kwargs, names, axes) -> bytes:
    torch = _torch()
    f = io.BytesIO()
    if kwargs:  # the legacy exporter takes keyword arguments as a trailing dict
        args = tuple(args) + (dict(kwargs),)
    stack, out = _quiet_export()
    with stack:
        torch.onnx.export(model, tuple(args), f, dynamo=False, input_names=list(names),
                          dynamic_axes={n: dict(a) for n, a in axes.items()},
                          opset_version=OPSET, do_constant_folding=True)
    for line in out.getvalue().splitlines():
        logger.debug("%s", line)
    return f.getvalue()


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def with_metadata(onnx: bytes, key: str, value: str) -> bytes:
    """Append a ModelProto.metadata_props entry (field 14) to serialized model
    bytes: protobuf merges appended fields into the message, so the model is
    not parsed here (ait_model_metadata reads it back)."""
    k, v = key.encode(), value.encode()
    entry = b"\x0a" + _varint(len(k)) + k + b"\x12" + _varint(len(v)) + v
    return onnx + b"\x72" + _varint(len(entry)) + entry


EXPORTERS = ("auto", "dynamo", "torchscript")


def export(model, samples, *, dynamic_shapes=None, batch_sizes=None,
           exporter: str = "auto") -> Exported:
    torch = _torch()
    if exporter not in EXPORTERS:
        raise ValueError(f"exporter must be one of {EXPORTERS}, not {exporter!r}")
    if not samples:
        raise ValueError("tuning an nn.Module needs samples: ait.tune(model, example_input)")
    sig = inspect.signature(model.forward)
    names, bound = _tensor_args(sig, samples)
    if not names:
        raise ValueError("the samples pass no tensors to forward")
    axes = _dynamic_axes(names, bound, dynamic_shapes, batch_sizes)
    example = _example(names, bound[0], axes)
    args, kwargs = _call_parts(sig, example)
    t0 = time.monotonic()
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            refs, spec = [], None
            for b in bound:
                a, k = _call_parts(sig, b)
                leaves, text = _flatten_outputs(model(*a, **k))
                spec = text if spec is None else spec
                refs.append([x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else x
                             for x in leaves])
            onnx, used = None, None
            if exporter in ("auto", "dynamo"):
                try:
                    onnx, used = _dynamo(model, args, kwargs, names, axes), "dynamo"
                except Exception as e:
                    if exporter == "dynamo":
                        raise
                    cause = e.__cause__ or e.__context__
                    logger.info("the dynamo exporter failed (%s: %s%s); using the TorchScript "
                                "exporter", type(e).__name__, _first_line(e),
                                f"; caused by {type(cause).__name__}: {_first_line(cause)}"
                                if cause is not None else "")
            if onnx is None:
                onnx, used = _torchscript(model, args, kwargs, names, axes), "torchscript"
    finally:
        model.train(was_training)
    meta = {"format": "aitune_c.python", "version": 1, "signature": _samples.signature_rows(sig),
            "inputs": names, "outputs": spec, "exporter": used}
    onnx = with_metadata(onnx, METADATA_KEY, json.dumps(meta))
    logger.info("exported %s with the %s exporter in %.1f s (%d bytes; dynamic axes %s)",
                type(model).__name__, used, time.monotonic() - t0, len(onnx), axes or "none")
    inputs = [[b[n] for n in names] for b in bound]
    return Exported(onnx, names, inputs, refs, used)


def read_metadata(text: Optional[str]) -> Optional[dict]:
    if not text:
        return None
    try:
        meta = json.loads(text)
    except ValueError:
        logging.getLogger("aitune_c").warning("ignoring unreadable %s metadata", METADATA_KEY)
        return None
    return meta if isinstance(meta, dict) and meta.get("format") == "aitune_c.python" else None
