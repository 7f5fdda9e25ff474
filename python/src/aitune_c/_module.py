"""ait.Module: wrap an nn.Module, record its calls, tune on them.

    m = ait.Module(model)
    for x in data: m(x)              # runs the model, records the inputs (up to 16 calls)
    m.tune(strategy=ait.MinLatency())
    y = m(x)                         # now the tuned model

It is an nn.Module itself (the wrapped one is its submodule ``module``), so
``.to()``, ``.parameters()``, ``state_dict()`` and attribute access reach
the original. If ``tune()`` fails, the reason is logged and kept in
``.tune_error``, and calls keep running the original.
"""

from __future__ import annotations

from ._progress import logger

MAX_RECORDED = 16  # as the C API's ait_module_infer records


def _detached(x):
    import torch
    if isinstance(x, torch.Tensor):
        return x.detach().clone()
    if isinstance(x, tuple):
        return tuple(_detached(v) for v in x)
    if isinstance(x, list):
        return [_detached(v) for v in x]
    if isinstance(x, dict):
        return {k: _detached(v) for k, v in x.items()}
    return x


def make_module_class():
    import torch

    from . import _tuned

    class Module(torch.nn.Module):
        """A recording wrapper of ``module``; ``.tune(**options)`` takes
        ait.tune's options (defaults given here are used when not passed)."""

        def __init__(self, module: torch.nn.Module, name=None, **tune_options):
            super().__init__()
            if not isinstance(module, torch.nn.Module):
                raise TypeError(f"ait.Module wraps a torch.nn.Module, not {type(module).__name__}")
            self.module = module
            self._name = name or type(module).__name__
            self._options = dict(tune_options)
            self._recorded = []
            self.tuned = None  # the TunedModel once tune() succeeded
            self.tune_error = None  # why the last tune() failed

        def forward(self, *args, **kwargs):
            if self.tuned is not None:
                return self.tuned(*args, **kwargs)
            if len(self._recorded) < MAX_RECORDED:
                self._recorded.append((_detached(args), _detached(kwargs)))
            return self.module(*args, **kwargs)

        @property
        def recorded(self) -> int:
            """How many calls were recorded (the tuning samples)."""
            return len(self._recorded)

        def tune(self, **options) -> "Module":
            opts = {**self._options, **options}
            opts.setdefault("name", self._name)
            samples = [a if not k else {**dict(zip(_positional_names(self.module, len(a)), a)), **k}
                       for a, k in self._recorded]
            try:
                if not samples:
                    raise RuntimeError("no calls recorded: call the module on example inputs first")
                self.tuned = _tuned.tune(self.module, samples, **opts)
                self.tune_error = None
            except Exception as e:  # noqa: BLE001 - any failure keeps the original running
                self.tune_error = e
                logger.warning("tuning %s failed (%s: %s); calls keep running the original module",
                               self._name, type(e).__name__, e)
            return self

        def save(self, path, **kw) -> None:
            if self.tuned is None:
                raise RuntimeError("nothing to save: tune() first")
            self.tuned.save(path, **kw)

        def __getattr__(self, name):
            try:
                return super().__getattr__(name)
            except AttributeError:
                return getattr(super().__getattr__("module"), name)

    return Module


def _positional_names(module, n):
    """Names of forward's first n positional parameters (to merge a call that
    mixes positional and keyword arguments into one named sample)."""
    import inspect
    ps = [p.name for p in inspect.signature(module.forward).parameters.values()
          if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return ps[:n]
