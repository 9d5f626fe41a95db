"""Where a score's worker processes come from: `Workers`, and `ForkedWorkers`, the real source.

`TimingRun` asks its `Workers` for each worker process pair (and the solution's worker with a
live s_ref); it never starts a process itself.  The real source forks each worker from its
side's zygote (or starts a fresh interpreter), sandboxes the candidate's, and keeps a batch's
baseline workers (`BaselinePool`).  A test passes in-process workers instead and runs a whole
score (gate, pairs, timed checks, the stop) without a process (tests/unit/test_fake_workers.py).
"""
from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Protocol

from ..core import stats
from ..isolation.processes.worker_client import WorkerClient
from ..timing.schedule import SOLUTION
from .gate import candidate_worker

if TYPE_CHECKING:
    from ..isolation.processes.fork_server import ForkServer
    from .baseline_pool import BaselinePool
    from .config import RunSetup


class Workers(Protocol):
    """The worker handles one score's processes use (`WorkerClient`'s interface)."""

    nondumpable: bool   # the scorer made itself non-dumpable before any sandboxed process

    def ready(self, timeout_s: float) -> None:
        """Wait until workers can be made (the zygotes have imported torch)."""

    def candidate(self, setup: RunSetup) -> AbstractContextManager[WorkerClient]:
        """A fresh worker for the candidate, in its sandbox, not yet started."""

    def baseline(self, setup: RunSetup, j: int | None) -> AbstractContextManager[WorkerClient]:
        """The baseline's worker for timed process j, or (None) for the untimed one that times
        the baseline alone and gates the candidate: fresh, or kept from an earlier score."""

    def solution(self, setup: RunSetup) -> AbstractContextManager[WorkerClient | None]:
        """--s-ref live: the task's solution's worker (trusted); None without a solution."""

    def provenance(self) -> dict:
        """What the verdict records of where the candidate's workers came from."""


class ForkedWorkers:
    """The real source: workers forked from each side's zygote (`servers`; none: fresh
    interpreters), the baseline's kept in `baselines` between the scores of a batch."""

    def __init__(self, servers: dict[str, ForkServer], baselines: BaselinePool | None, nondumpable: bool):
        self.servers, self.baselines, self.nondumpable = dict(servers), baselines, nondumpable

    def ready(self, timeout_s: float) -> None:
        waiting = [server for server in self.servers.values() if server.zygote_pid is None]
        if waiting:
            stats.preload()   # scipy.stats is imported while the zygotes import torch
        for server in waiting:
            server.start(timeout_s)

    def candidate(self, setup: RunSetup) -> WorkerClient:
        return candidate_worker(setup.spec, setup.cand_path, setup.cfg, setup.threading, self.servers.get("candidate"),
                                setup.deadline)

    def baseline(self, setup: RunSetup, j: int | None) -> AbstractContextManager[WorkerClient]:
        def make() -> WorkerClient:
            return WorkerClient("baseline", untrusted=False, sandbox=setup.cfg.sandbox, threading=setup.threading,
                                server=self.servers.get("baseline"))

        if self.baselines is None:
            return make()
        key = (str(setup.baseline_file), setup.spec.name, tuple(sorted(setup.spec.overrides.items())), setup.device,
               setup.threading, setup.cfg.sandbox)
        return nullcontext(self.baselines.worker(key, j, make))

    def solution(self, setup: RunSetup) -> AbstractContextManager[WorkerClient | None]:
        if setup.solution_file is None:
            return nullcontext(None)
        return WorkerClient(SOLUTION, untrusted=False, sandbox=setup.cfg.sandbox, threading=setup.threading,
                            server=self.servers.get("baseline"))   # trusted: the baseline's zygote

    def provenance(self) -> dict:
        server = self.servers.get("candidate")
        if server is None:
            return {}
        return {"zygote_startup_ms": round(server.startup_s * 1e3, 1), "zygote_source": server.source}
