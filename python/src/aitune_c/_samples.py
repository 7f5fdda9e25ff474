"""Samples and call signatures: how a call's arguments become the graph's
inputs, in order.

A sample is a tensor (one input), a tuple of tensors (positional inputs) or
a dict (named inputs); ``samples`` is one sample or a list of them. A call
signature is a list of (name, kind) rows, stored in the exported model's
metadata so a folder loaded in another process binds calls the same way.
"""

from __future__ import annotations

import inspect
from typing import Any, Dict, List, Sequence, Tuple

Sample = Tuple[tuple, dict]  # (args, kwargs)

_KINDS = {
    inspect.Parameter.POSITIONAL_ONLY: "positional",
    inspect.Parameter.POSITIONAL_OR_KEYWORD: "either",
    inspect.Parameter.VAR_POSITIONAL: "var_positional",
    inspect.Parameter.KEYWORD_ONLY: "keyword",
    inspect.Parameter.VAR_KEYWORD: "var_keyword",
}
_FROM_KIND = {v: k for k, v in _KINDS.items()}


def normalize(samples) -> List[Sample]:
    """One sample or a list of them, as [(args, kwargs)]."""
    if samples is None:
        return []
    items = samples if isinstance(samples, list) else [samples]
    out = []
    for s in items:
        if isinstance(s, dict):
            out.append(((), dict(s)))
        elif isinstance(s, tuple):
            out.append((s, {}))
        else:
            out.append(((s,), {}))
    return out


def signature_rows(sig: inspect.Signature) -> List[List[Any]]:
    return [[p.name, _KINDS[p.kind], p.default is not inspect.Parameter.empty]
            for p in sig.parameters.values()]


def signature_from_rows(rows) -> inspect.Signature:
    params = []
    for name, kind, has_default in rows:
        k = _FROM_KIND[kind]
        default = None if has_default and k not in (inspect.Parameter.VAR_POSITIONAL,
                                                     inspect.Parameter.VAR_KEYWORD) \
            else inspect.Parameter.empty
        params.append(inspect.Parameter(name, k, default=default))
    return inspect.Signature(params)


def names_signature(names: Sequence[str]) -> inspect.Signature:
    """The signature of an ONNX file's graph: its input names, in order."""
    return inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                              for n in names])


def bind(sig: inspect.Signature, args: tuple, kwargs: dict) -> Dict[str, Any]:
    """Arguments by name, in signature order; *args expand as NAME_0, NAME_1.
    A single dict argument with no keywords means named inputs."""
    if len(args) == 1 and not kwargs and isinstance(args[0], dict) and not _takes_dict(sig):
        args, kwargs = (), args[0]
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"the call does not fit the model's signature {sig}: {e}") from None
    out: Dict[str, Any] = {}
    for name, value in bound.arguments.items():
        kind = sig.parameters[name].kind
        if kind == inspect.Parameter.VAR_POSITIONAL:
            for i, v in enumerate(value):
                out[f"{name}_{i}"] = v
        elif kind == inspect.Parameter.VAR_KEYWORD:
            out.update(value)
        else:
            out[name] = value
    return out


def _takes_dict(sig: inspect.Signature) -> bool:
    """A forward whose one parameter is annotated as a dict takes it whole."""
    ps = list(sig.parameters.values())
    return len(ps) == 1 and ps[0].annotation in (dict, Dict, "dict")
