"""Timers: how long a block of calls took.

All timers share one protocol: `time_block(fn, inputs, flush)` calls `fn(*args)` once per input
tuple and returns the total time of the calls (ns) and their outputs.  `flush`, when given, is
called before every call and is never inside the timed region.

- `CpuTimer`: `perf_counter_ns` around synchronous calls.
- `CudaEventTimer` (timing/cuda/timer.py): CUDA events around each call on a held stream.
- `FakeTimer`: simulated durations with seeded noise, drift and step changes, so the statistics
  and the schedule can be tested exactly.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence

import numpy as np


@dataclass(frozen=True)
class BlockTiming:
    total_ns: float
    outputs: tuple[Any, ...]
    host_ns: float | None = None   # the block on the host's clock, where the timer is not it
    mode: str | None = None        # how a CUDA block was timed (events, events-unheld, graph)
    digests: tuple | None = None   # CUDA: per call, per output, (sum, weighted sum) of its bytes at
                                   # the end event (timing/checksum.py); None where not taken


class Timer(Protocol):
    name: str

    def time_block(self, fn: Callable[..., Any], inputs: Sequence[tuple],
                   flush: Callable[[], None] | None) -> BlockTiming: ...

    def resolution_ns(self) -> float: ...

    def clock_s(self) -> float:
        """Seconds on the clock that budgets (warm-up, time budget) are measured with."""
        ...


class CpuTimer:
    """Host wall clock around synchronous calls."""

    name = "cpu_perf_counter"

    def time_block(self, fn, inputs, flush):
        outputs = []
        if flush is None:
            # One clock read around the whole block: the block is sized well above resolution.
            t0 = time.perf_counter_ns()
            for args in inputs:
                outputs.append(fn(*args))
            total = time.perf_counter_ns() - t0
        else:
            total = 0
            for args in inputs:
                flush()
                t0 = time.perf_counter_ns()
                outputs.append(fn(*args))
                total += time.perf_counter_ns() - t0
        return BlockTiming(float(total), tuple(outputs))

    def clock_s(self) -> float:
        return time.perf_counter()

    def resolution_ns(self) -> float:
        """Smallest observed non-zero step of the clock (its real granularity plus read cost)."""
        steps = []
        for _ in range(200):
            a = time.perf_counter_ns()
            b = time.perf_counter_ns()
            while b == a:
                b = time.perf_counter_ns()
            steps.append(b - a)
        return float(min(steps))


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
