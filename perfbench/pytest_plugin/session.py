"""One pytest run's perfbench state: what it measured, what it compares with, where it saves."""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest

from .allocator import steady_heap
from .records import BenchRecord, benchmark_document
from .revision import RevisionCheckout
from .store import RunStore, SavedRun, machine_key


class PerfbenchSession:
    def __init__(self, config: pytest.Config):
        self.config = config
        self.records: list[BenchRecord] = []   # gathered from test reports (so from xdist workers too)
        self.saved: SavedRun | None = None     # what --perfbench-compare compares with
        self.saved_to: Path | None = None      # where --perfbench-save wrote this run
        self.against: RevisionCheckout | None = None   # --perfbench-against's worktree
        self.owns_checkout = False             # this process made it (and removes it)
        serve = config.getoption("perfbench_serve")
        self.serving = serve is not None       # this is REV's process of --perfbench-against (remote.py)
        self.serve_fd: int | None = None if serve is None else int(serve)   # its socket, until used

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Records come on test reports (fixture.py puts them there): in a plain run from this
        process's tests, under pytest-xdist from every worker's."""
        self.records.extend(BenchRecord.from_dict(d) for d in getattr(report, "perfbench_records", ()))

    @property
    def is_xdist_worker(self) -> bool:
        return hasattr(self.config, "workerinput")

    @property
    def writes_results(self) -> bool:
        """The process that writes files and the summary: not an xdist worker nor REV's process."""
        return not self.is_xdist_worker and not self.serving

    @functools.cached_property
    def fingerprint(self) -> dict[str, Any]:
        """This machine, GPU included when there is one (saved runs are keyed by it)."""
        import torch

        from ..device.fingerprint import fingerprint
        return fingerprint("cuda" if torch.cuda.is_available() else "cpu")

    @functools.cached_property
    def malloc(self) -> str:
        """The heap policy in force (allocator.py), set when a test first asks for the fixture:
        a session that measures nothing keeps the system's."""
        return steady_heap() if self.config.getoption("perfbench_malloc") == "steady" else "system"

    @functools.cached_property
    def store(self) -> RunStore:
        root = Path(self.config.rootpath) / self.config.getoption("perfbench_storage")
        return RunStore(root, machine_key(self.fingerprint))

    def worker_args(self) -> tuple[str, ...]:
        """Options of REV's process: one process (no xdist), the same heap policy."""
        args = ["-n", "0"] if self.config.pluginmanager.hasplugin("xdist") else []
        return (*args, f"--perfbench-malloc={self.config.getoption('perfbench_malloc')}")

    def document(self) -> dict[str, Any]:
        doc = benchmark_document(self.records, machine_key=self.store.key, fingerprint=self.fingerprint,
                                 malloc=self.malloc)
        if self.against is not None:
            doc["perfbench"]["against"] = {"rev": self.against.rev, "sha": self.against.sha}
        return doc


SESSION = pytest.StashKey[PerfbenchSession]()
