"""Simulated timing for tests: `FakeTimer` times `FakeKernel` objects on a seeded clock, with
noise, drift and step changes, so the statistics and the schedule can be tested exactly."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..timing.timers import BlockTiming


@dataclass(frozen=True)
class FakeKernel:
    """A stand-in kernel for FakeTimer: it costs `cost_ns` per call and returns `output`."""

    name: str
    cost_ns: float
    output: Any = None

    def __call__(self, *args):
        return self.output


def step_drift(at_s: float, factor: float) -> Callable[[float], float]:
    """Machine slows by `factor` from simulated time `at_s` on (a neighbour starts, a clock drops)."""
    return lambda t_s: factor if t_s >= at_s else 1.0


def linear_drift(rate_per_s: float) -> Callable[[float], float]:
    """Machine slows by `rate_per_s` (fraction) per simulated second (thermal creep)."""
    return lambda t_s: 1.0 + rate_per_s * t_s


class FakeTimer:
    """Simulated clock for tests: deterministic given `seed`.

    A call to FakeKernel k at simulated time t lasts ``k.cost_ns * drift(t) * exp(N(0, noise))``;
    every call also advances simulated time by `overhead_ns` (not counted in the timing).
    """

    name = "fake"
    simulated = True

    def __init__(self, *, noise: float = 0.0, drift: Callable[[float], float] | None = None,
                 overhead_ns: float = 0.0, seed: int = 0):
        if noise < 0 or not math.isfinite(noise):
            raise ValueError(f"noise must be a finite sigma >= 0, got {noise}")
        self._noise = noise
        self._drift = drift or (lambda t_s: 1.0)
        self._overhead_ns = overhead_ns
        self._rng = np.random.default_rng(seed)
        self.now_ns = 0.0
        self.calls: list[str] = []  # names of kernels in call order (schedule tests read this)

    def time_block(self, fn, inputs, flush):
        if not isinstance(fn, FakeKernel):
            raise TypeError(f"FakeTimer times FakeKernel objects, got {type(fn).__name__}")
        total = 0.0
        outputs = []
        for args in inputs:
            if flush is not None:
                flush()
            d = fn.cost_ns * self._drift(self.now_ns * 1e-9)
            if self._noise:
                d *= math.exp(self._rng.normal(0.0, self._noise))
            outputs.append(fn(*args))
            self.calls.append(fn.name)
            total += d
            self.now_ns += d + self._overhead_ns
        return BlockTiming(total, tuple(outputs))

    def clock_s(self) -> float:
        """Simulated seconds: budgets under FakeTimer are deterministic."""
        return self.now_ns * 1e-9

    def resolution_ns(self) -> float:
        return 1.0
