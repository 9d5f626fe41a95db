"""perfbench's pytest plugin: "did this change make the kernel slower?" answered with paired
timing and a significance test, inside the test run a team already has (docs/pytest.md).

Registered through the `pytest11` entry point.  Layers: `judge` (statistics, pure), `store`
(saved runs), `records` (the pytest-benchmark JSON layout); this module is pytest's side only.
"""
from __future__ import annotations

import functools
import json
import secrets
import zlib
from pathlib import Path
from typing import Any, Callable

import pytest

from ..errors import PerfbenchError
from ..timing.sampler import SamplerConfig
from .allocator import steady_heap
from .judge import Judgement, judge, unpaired_speedup
from .records import PAIRED, SINGLE, BenchRecord, benchmark_document
from .store import RunStore, SavedRun, StoreError, machine_key, valid_run_name

# Marker keyword -> type.  Anything else is a mistake worth a clear error, not a silent default.
MARKER_KWARGS: dict[str, type] = {"threshold": float, "min_pairs": int, "max_pairs": int, "time_budget_s": float,
                                  "device": str}
# Short by default: a test suite runs many of these.  A marker or SamplerConfig widens them.
DEFAULT_SAMPLER = SamplerConfig(min_pairs=6, max_pairs=40, warmup_s=0.05, time_budget_s=5.0, target_rel_ci=0.02)


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("perfbench", "perfbench: paired regression checks")
    g.addoption("--perfbench-save", metavar="NAME", help="save this run's timings as NAME (under --perfbench-storage)")
    g.addoption("--perfbench-compare", metavar="NAME", nargs="?", const="", default=None,
                help="compare with a saved run of this machine: NAME, its number, a file; the latest if omitted "
                     "(unpaired: the threshold is widened)")
    g.addoption("--perfbench-fail-on", choices=["regression", "never"], default="never",
                help="regression: fail a test whose slowdown is statistically significant AND beyond the threshold")
    g.addoption("--perfbench-threshold", type=float, default=0.05, metavar="FRACTION",
                help="slowdown allowed before failing (default 0.05 = 5%%; x3 against a saved run)")
    g.addoption("--perfbench-json", metavar="PATH", help="write the run in pytest-benchmark's JSON layout")
    g.addoption("--perfbench-storage", metavar="DIR", default=".perfbench",
                help="where saved runs live, relative to the rootdir (default .perfbench)")
    g.addoption("--perfbench-disable", action="store_true", help="call each function once, time nothing")
    g.addoption("--perfbench-seed", type=int, default=None, help="seed of the input schedule (default: random)")
    g.addoption("--perfbench-malloc", choices=["steady", "system"], default="steady",
                help="steady (default): fix glibc's heap thresholds for the session so runs compare; "
                     "system: leave them drifting")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "perfbench(threshold=, min_pairs=, max_pairs=, time_budget_s=, device=): "
                                       "per-test settings of the perfbench fixture")
    if not 0 <= config.getoption("perfbench_threshold") < 10:
        raise pytest.UsageError("--perfbench-threshold: a fraction >= 0, e.g. 0.05 for 5%")
    save = config.getoption("perfbench_save")
    if save is not None and not valid_run_name(save):
        raise pytest.UsageError(f"--perfbench-save={save!r}: use letters, digits, '.', '_' or '-'")
    session = PerfbenchSession(config)
    config.stash[_SESSION] = session
    if config.getoption("perfbench_compare") is not None and not config.getoption("perfbench_disable"):
        try:   # up front: a missing or foreign saved run stops the run before anything is timed
            session.saved = session.store.load(config.getoption("perfbench_compare") or None)
        except StoreError as exc:
            raise pytest.UsageError(str(exc)) from None


class PerfbenchSession:
    """What one pytest run measured, and where it is compared and saved."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.records: list[BenchRecord] = []
        self.saved: SavedRun | None = None    # what --perfbench-compare compares with
        self.saved_to: Path | None = None     # where --perfbench-save wrote this run

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

    def document(self) -> dict[str, Any]:
        return benchmark_document(self.records, machine_key=self.store.key, fingerprint=self.fingerprint,
                                  malloc=self.malloc)


_SESSION = pytest.StashKey[PerfbenchSession]()


def _settings(node: pytest.Item) -> dict[str, Any]:
    marker = node.get_closest_marker("perfbench")
    if marker is None:
        return {}
    if marker.args:
        pytest.fail(f"{node.nodeid}: @pytest.mark.perfbench takes keywords only ({', '.join(MARKER_KWARGS)})", pytrace=False)
    out = {}
    for key, value in marker.kwargs.items():
        want = MARKER_KWARGS.get(key)
        if want is None:
            pytest.fail(f"{node.nodeid}: @pytest.mark.perfbench has no setting {key!r} "
                        f"(known: {', '.join(MARKER_KWARGS)})", pytrace=False)
        fits = isinstance(value, (int, float) if want is float else want) and not isinstance(value, bool)
        if not fits or (key == "threshold" and not 0 <= value < 10):
            expected = "a fraction >= 0, e.g. 0.05" if key == "threshold" else want.__name__
            pytest.fail(f"{node.nodeid}: @pytest.mark.perfbench {key}={value!r}: expected {expected}", pytrace=False)
        out[key] = value
    return out


def _sampler(node: pytest.Item, settings: dict[str, Any]) -> SamplerConfig:
    try:
        return SamplerConfig(**{**DEFAULT_SAMPLER.to_dict(), **settings})
    except ValueError as exc:
        problem = str(exc)
    pytest.fail(f"{node.nodeid}: @pytest.mark.perfbench: {problem}", pytrace=False)


class PerfbenchFixture:
    """`perfbench(fn, make_inputs)` times one function (and compares it with a saved run);
    `perfbench.compare(baseline, candidate, make_inputs)` pairs two, AB-BA, now.  Both return the
    function's own result on `make_inputs(0)` so the test still asserts correctness."""

    def __init__(self, session: PerfbenchSession, node: pytest.Item):
        self._session, self._node = session, node
        opt = session.config.getoption
        s = _settings(node)
        self.threshold: float = s.get("threshold", opt("perfbench_threshold"))
        self.device: str = s.get("device", "cpu")
        self.sampler = _sampler(node, {k: s[k] for k in ("min_pairs", "max_pairs", "time_budget_s") if k in s})
        self._disabled = opt("perfbench_disable")
        self._seed = opt("perfbench_seed")
        self._used = False

    def _compare(self, baseline: Callable, candidate: Callable, make_inputs: Callable[[int], tuple]):
        from ..pipeline import compare
        if self._used:
            pytest.fail(f"{self._node.nodeid}: one perfbench measurement per test (parametrize for more)", pytrace=False)
        self._used = True
        try:
            return compare(baseline, candidate, make_inputs, device=self.device, config=self.sampler,
                           seed=self._seed if self._seed is not None else secrets.randbits(62))
        except PerfbenchError as exc:
            pytest.fail(f"perfbench: {self._node.nodeid}: {exc}", pytrace=False)

    def __call__(self, fn: Callable, make_inputs: Callable[[int], tuple]) -> Any:
        if not self._disabled:
            result = self._compare(fn, fn, make_inputs)   # A/A: both sides' blocks are samples of fn
            samples = tuple(result.samples.baseline_ns) + tuple(result.samples.candidate_ns)
            verdict = None
            saved = self._session.saved
            if saved is not None and self._node.nodeid in saved.samples_ns:
                seed = zlib.crc32(self._node.nodeid.encode())   # same data, same CI: reruns agree
                s, ci = unpaired_speedup(saved.samples_ns[self._node.nodeid], samples, seed=seed)
                verdict = judge(s, ci, threshold=self.threshold, paired=False)
            self._record(BenchRecord(self._node.nodeid, self._node.name, SINGLE, samples, judgement=verdict))
        return fn(*make_inputs(0))

    def compare(self, baseline: Callable, candidate: Callable, make_inputs: Callable[[int], tuple]) -> Any:
        if not self._disabled:
            result = self._compare(baseline, candidate, make_inputs)
            verdict = judge(result.speedup, result.ci, threshold=self.threshold, paired=True)
            self._record(BenchRecord(self._node.nodeid, self._node.name, PAIRED, tuple(result.samples.candidate_ns),
                                     baseline_ns=tuple(result.samples.baseline_ns), judgement=verdict))
        return candidate(*make_inputs(0))

    def _record(self, record: BenchRecord) -> None:
        self._session.records.append(record)
        j: Judgement | None = record.judgement
        if j is not None and j.regression and self._session.config.getoption("perfbench_fail_on") == "regression":
            pytest.fail(f"perfbench: {record.fullname}: {j.describe()}", pytrace=False)


@pytest.fixture
def perfbench(request: pytest.FixtureRequest) -> PerfbenchFixture:
    session = request.config.stash[_SESSION]
    if not request.config.getoption("perfbench_disable"):
        session.malloc   # noqa: B018 - applies the heap policy before the first measurement
    return PerfbenchFixture(session, request.node)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    s = session.config.stash.get(_SESSION, None)
    if s is None or not s.records:
        return
    doc = s.document()
    if path := session.config.getoption("perfbench_json"):
        Path(path).write_text(json.dumps(doc, indent=2))
    if name := session.config.getoption("perfbench_save"):
        s.saved_to = s.store.save(name, doc)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    from .summary import summary_lines
    s = config.stash.get(_SESSION, None)
    if s is None or not s.records:
        return
    terminalreporter.section(f"perfbench: {len(s.records)} benchmark(s) on {s.store.key}, heap {s.malloc}")
    for line in summary_lines(s.records, saved=s.saved):
        terminalreporter.write_line(line)
    if s.saved_to is not None:
        terminalreporter.write_line(f"saved: {s.saved_to}")
