"""Competing load, started on demand: how benchmarks and `selfcheck` model a noisy neighbour."""
from __future__ import annotations

import multiprocessing as mp
import os


def _spin(stop) -> None:  # pragma: no cover - runs in a child process
    x = 0
    while not stop.is_set():
        for _ in range(10_000):
            x = (x * 1103515245 + 12345) & 0x7FFFFFFF


class CpuLoad:
    """`n` busy processes; start() and stop() may be called at any point, stop() is idempotent.

    Use as a context manager so the processes never outlive the measurement.
    """

    def __init__(self, n: int | None = None):
        self.n = n if n is not None else max(1, (os.cpu_count() or 2))
        self._ctx = mp.get_context("spawn")
        self._stop = self._ctx.Event()
        self._procs: list = []

    def start(self) -> None:
        if self._procs:
            return
        self._procs = [self._ctx.Process(target=_spin, args=(self._stop,), daemon=True) for _ in range(self.n)]
        for p in self._procs:
            p.start()

    def stop(self) -> None:
        self._stop.set()
        for p in self._procs:
            if p.pid is None:   # start() failed before this one started
                continue
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
        self._procs = []
        self._stop = self._ctx.Event()

    def __enter__(self) -> "CpuLoad":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
