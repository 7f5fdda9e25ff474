"""Strategies as objects: which candidate wins, and the performance check.

Each one maps to an ``ait_strategy`` of the C API (docs/tuning.md,
"Strategies") plus the options it carries.
"""

from __future__ import annotations

from typing import Optional, Sequence

from . import _core

__all__ = ["Strategy", "OneBackend", "FirstWins", "MaxThroughput", "MinLatency", "LatencyBudget"]


class Strategy:
    """Base of the strategies.

    perf_validation: a candidate must beat the reference backend (eager) by
        ``min_speedup`` (a ratio: 0.01 = 1% more throughput) to win.
    """

    name = ""  # the C API's strategy name

    def __init__(self, *, perf_validation: bool = True, min_speedup: float = 0.01):
        self.perf_validation = bool(perf_validation)
        self.min_speedup = float(min_speedup)

    def _backends(self) -> Optional[list]:
        return None

    def _options(self) -> dict:
        code = _core.strategy_parse(self.name)
        assert code >= 0, self.name
        return {
            "strategy": code,
            "perf_validation": int(self.perf_validation),
            "min_speedup_ratio": self.min_speedup,
        }

    def _fields(self) -> str:
        return ""

    def __repr__(self) -> str:
        extra = self._fields()
        return (f"{type(self).__name__}({extra}{', ' if extra else ''}"
                f"perf_validation={self.perf_validation}, min_speedup={self.min_speedup})")

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and vars(self) == vars(other)

    __hash__ = None  # mutable attributes


class OneBackend(Strategy):
    """Exactly one candidate, e.g. ``OneBackend("native:threads=2")``; its
    errors are raised. Correct but not faster than the reference: the model
    runs on eager (unless ``perf_validation=False``)."""

    name = "one-backend"

    def __init__(self, backend: str, **kw):
        super().__init__(**kw)
        if not isinstance(backend, str) or not backend:
            raise TypeError("OneBackend takes a backend string, e.g. 'native' or 'quant:preset=int8dq'")
        self.backend = backend

    def _backends(self):
        return [self.backend]

    def _fields(self):
        return repr(self.backend)


class FirstWins(Strategy):
    """Candidates in order; the first correct (and, with perf_validation,
    faster) one wins and the rest are not tried."""

    name = "first-wins"

    def __init__(self, backends: Optional[Sequence[str]] = None, **kw):
        super().__init__(**kw)
        if isinstance(backends, str):
            raise TypeError("FirstWins takes a list of backend strings, not one string")
        self.backends = list(backends) if backends is not None else None

    def _backends(self):
        return self.backends

    def _fields(self):
        return repr(self.backends) if self.backends is not None else ""


class MaxThroughput(Strategy):
    """Profile every candidate over the batch sizes; the highest throughput wins."""

    name = "max-throughput"


class MinLatency(Strategy):
    """Profile every candidate at batch 1; the lowest latency wins."""

    name = "min-latency"


class LatencyBudget(Strategy):
    """The highest throughput whose median latency fits ``budget_ms``; an
    ``aitune_c.Error`` when none does."""

    name = "latency-budget"

    def __init__(self, budget_ms: float, **kw):
        super().__init__(**kw)
        self.budget_ms = float(budget_ms)
        if not self.budget_ms > 0:
            raise ValueError(f"LatencyBudget needs a budget in ms > 0, got {budget_ms!r}")

    def _options(self):
        o = super()._options()
        o["latency_budget_ms"] = self.budget_ms
        return o

    def _fields(self):
        return repr(self.budget_ms)


_BY_NAME = {"max-throughput": MaxThroughput, "min-latency": MinLatency, "first-wins": FirstWins}


def resolve(strategy) -> Strategy:
    """A Strategy from an object or a name ("max-throughput", "min_latency")."""
    if isinstance(strategy, Strategy):
        return strategy
    if isinstance(strategy, str):
        key = strategy.replace("_", "-").lower()
        if key in _BY_NAME:
            return _BY_NAME[key]()
        if key == "one-backend":
            raise ValueError("strategy 'one-backend' needs its backend: use ait.OneBackend('native')")
        if key == "latency-budget":
            raise ValueError("strategy 'latency-budget' needs a budget: use ait.LatencyBudget(ms)")
        raise ValueError(f"unknown strategy {strategy!r}: one of max-throughput, min-latency, "
                         "first-wins, or an object (ait.OneBackend, ait.LatencyBudget, ...)")
    raise TypeError(f"strategy must be a name or an ait.Strategy, not {type(strategy).__name__}")
