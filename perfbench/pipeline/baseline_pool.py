"""Baseline workers kept between the scores of one scorer process.

`score-batch` scores many candidates of one task in a row: the baseline is the same trusted
code each time, so its worker interpreters (one per worker-process index of a score) and its
time alone are kept, and only the candidate's workers start fresh.  A candidate's CI still
covers the variance between baseline processes: score j of every row pairs with baseline
process j, a different interpreter for each j.  One task at a time: a row of another task
closes the kept workers first, so a long mixed batch never holds more than one task's."""
from __future__ import annotations

from contextlib import suppress
from typing import Callable, Hashable

from ..isolation.processes.worker_client import WorkerClient


class BaselinePool:
    def __init__(self) -> None:
        self._key: Hashable | None = None
        self._workers: dict[int | None, WorkerClient] = {}   # (None: the untimed process's)
        self.alone_ns: list[float] | None = None   # the baseline alone (the untimed process, before any candidate)
        self.started = 0                           # interpreters started so far (for tests and the log)

    def worker(self, key: Hashable, j: int | None, make: Callable[[], WorkerClient]) -> WorkerClient:
        """Baseline worker j for `key` (task, files, device, cores, sandbox), None for the untimed
        process's: kept, or made now."""
        if key != self._key:
            self.close()
            self._key = key
        w = self._workers.get(j)
        if w is None or w.proc.poll() is not None:
            if w is not None:
                with suppress(Exception):
                    w.close()
            w = self._workers[j] = make()
            self.started += 1
        return w

    def close(self) -> None:
        for w in self._workers.values():
            with suppress(Exception):
                w.close()
        self._workers.clear()
        self._key, self.alone_ns = None, None
