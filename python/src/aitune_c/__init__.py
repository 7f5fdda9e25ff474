"""aitune_c: tune a PyTorch nn.Module or an ONNX model for this machine.

    import aitune_c as ait
    tuned = ait.tune(model, x)          # nn.Module, or a path to / bytes of an .onnx file
    y = tuned(x)                        # torch in -> torch out, numpy in -> numpy out
    tuned.save("m.ait"); tuned = ait.load("m.ait")

A CPython extension over aitune's C library (include/aitune.h); see
docs/python.md for the API, the threading contract and the measurements.
torch is imported only when a model or tensor of it is given.
"""

from ._core import Error
from ._core import version as _library_version
from ._strategies import FirstWins, LatencyBudget, MaxThroughput, MinLatency, OneBackend, Strategy
from ._tuned import TunedModel, load, tune

__version__ = "0.1.0"

__all__ = ["tune", "load", "TunedModel", "Module", "Error", "Strategy", "OneBackend",
           "FirstWins", "MaxThroughput", "MinLatency", "LatencyBudget", "backends",
           "library_version"]


def backends() -> list:
    """Names of the backends compiled into the library (`aitune backends`)."""
    from ._core import backend_names
    return backend_names()


def library_version() -> str:
    return _library_version()


def __getattr__(name):
    # ait.Module subclasses torch.nn.Module: defined (and torch imported) on first use
    if name == "Module":
        from ._module import make_module_class
        cls = make_module_class()
        globals()["Module"] = cls
        return cls
    raise AttributeError(f"module 'aitune_c' has no attribute {name!r}")
