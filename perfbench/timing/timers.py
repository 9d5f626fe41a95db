"""Timers: how long a block of calls took.

All timers share one protocol: `time_block(fn, inputs, flush)` calls `fn(*args)` once per input
tuple and returns the total time of the calls (ns) and their outputs.  `flush`, when given, is
called before every call and is never inside the timed region.

- `CpuTimer`: `perf_counter_ns` around synchronous calls.
- `CudaEventTimer` (timing/cuda/timer.py): CUDA events around each call on a held stream.
- `FakeTimer` (perfbench/testing/timers.py): simulated durations, for tests.

A timer that is `simulated` measures no device: nothing to flush, no host to fingerprint.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence


@dataclass(frozen=True)
class BlockTiming:
    total_ns: float
    outputs: tuple[Any, ...]
    host_ns: float | None = None   # the block on the host's clock, where the timer is not it
    mode: str | None = None        # how a CUDA block was timed (events, events-unheld, graph)
    digests: tuple | None = None   # CUDA: per call, per output, (sum, weighted sum) of its bytes at
                                   # the end event (timing/cuda/checksum.py); None where not taken


class Timer(Protocol):
    name: str
    simulated: bool   # a test double's clock, not a device's

    def time_block(self, fn: Callable[..., Any], inputs: Sequence[tuple],
                   flush: Callable[[], None] | None) -> BlockTiming: ...

    def resolution_ns(self) -> float: ...

    def clock_s(self) -> float:
        """Seconds on the clock that budgets (warm-up, time budget) are measured with."""
        ...


class CpuTimer:
    """Host wall clock around synchronous calls."""

    name = "cpu_perf_counter"
    simulated = False

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
