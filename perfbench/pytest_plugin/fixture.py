"""The `perfbench` fixture: what a test calls, and the measurements behind each call."""
from __future__ import annotations

import contextlib
import os
import secrets
import time
import zlib
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from ..core import stats
from ..core.errors import PerfbenchError
from ..core.results import PairedSamples
from ..device.lease import acquire
from ..timing.inprocess import InProcessSide
from ..timing.sampler import SamplerConfig, Side, sample_pairs
from ..timing.served_side import SideUnavailable
from .judge import judge, unpaired_speedup
from .records import AGAINST, PAIRED, SINGLE, BenchRecord
from .remote import serve_test, start_test_process
from .revision import worker_env
from .session import PerfbenchSession

# Marker keyword -> type.  Anything else is a mistake worth a clear error, not a silent default.
MARKER_KWARGS: dict[str, type] = {"threshold": float, "min_pairs": int, "max_pairs": int, "time_budget_s": float,
                                  "device": str}
# Short by default: a test suite runs many of these.  A marker or SamplerConfig widens them.
DEFAULT_SAMPLER = SamplerConfig(min_pairs=6, max_pairs=40, warmup_s=0.05, time_budget_s=5.0, target_rel_ci=0.02)
RECORDS = pytest.StashKey[list]()   # a test's records (plain dicts), put on its report for the controller


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


# A plugin measurement waits this long for its device before the test fails (a score holding
# it runs for minutes at most).
LEASE_TIMEOUT_S = 3600.0


@contextlib.contextmanager
def device_lock(device: str) -> Iterator[list[float]]:
    """One measurement at a time per device on this machine: the device lease `perfbench score`
    takes (device/lease.py), so a plugin measurement, another pytest run (an xdist worker) and a
    score never time on one GPU, or on one core, at once.  On the CPU the measurement runs in
    this process on whichever cores it may use, so it takes all of them.  Yields the
    measurement's window, filled in with its Unix start and end times."""
    threads = len(os.sched_getaffinity(0)) if device == "cpu" else 1
    with acquire(device, threads, timeout_s=LEASE_TIMEOUT_S):
        window = [time.time()]
        yield window
        window.append(time.time())


class PerfbenchFixture:
    """`perfbench(fn, make_inputs)` times one function (and compares it with its version at
    --perfbench-against=REV, or a saved run); `perfbench.compare(baseline, candidate,
    make_inputs)` pairs two, AB-BA, now.  Both return the function's own result on
    `make_inputs(0)` so the test still asserts correctness."""

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

    # -- what tests call -------------------------------------------------------------------
    def __call__(self, fn: Callable, make_inputs: Callable[[int], tuple]) -> Any:
        if self._session.serving:      # REV's process: serve blocks to the main session
            serve_test(self._take_serve_fd(), lambda device: self._side("served", fn, make_inputs, device))
        elif not self._disabled:
            self._claim()
            self._record(self._against(fn, make_inputs) if self._session.against is not None
                         else self._alone(fn, make_inputs))
        return fn(*make_inputs(0))

    def compare(self, baseline: Callable, candidate: Callable, make_inputs: Callable[[int], tuple]) -> Any:
        if self._session.serving:      # nothing to serve: this test pairs two functions itself
            serve_test(self._take_serve_fd(), None)
        elif not self._disabled:
            self._claim()
            with device_lock(self.device) as window:
                result = self._compare(baseline, candidate, make_inputs)
            self._record(BenchRecord(
                self._node.nodeid, self._node.name, PAIRED, result.samples.candidate_ns,
                baseline_ns=result.samples.baseline_ns,
                judgement=judge(result.speedup, result.ci, threshold=self.threshold, paired=True),
                reference="baseline", window_s=tuple(window)))
        return candidate(*make_inputs(0))

    # -- the measurements ------------------------------------------------------------------
    def _alone(self, fn: Callable, make_inputs: Callable[[int], tuple], note: str = "") -> BenchRecord:
        """fn against itself (A/A: both sides' blocks are samples of fn), then against the saved
        run when there is one."""
        with device_lock(self.device) as window:
            samples = self._compare(fn, fn, make_inputs).samples
        times = samples.baseline_ns + samples.candidate_ns
        saved, verdict, reference = self._session.saved, None, ""
        if saved is not None and self._node.nodeid in saved.samples_ns:
            seed = zlib.crc32(self._node.nodeid.encode())   # same data, same CI: reruns agree
            s, ci = unpaired_speedup(saved.samples_ns[self._node.nodeid], times, seed=seed)
            verdict, reference = judge(s, ci, threshold=self.threshold, paired=False), saved.path.stem
        elif saved is not None:
            note = note or "not in the saved run"
        return BenchRecord(self._node.nodeid, self._node.name, SINGLE, times, judgement=verdict,
                           reference=reference, note=note, window_s=tuple(window))

    def _against(self, fn: Callable, make_inputs: Callable[[int], tuple]) -> BenchRecord:
        """fn's test in the working tree paired AB-BA with the same test at REV, each side in a
        fresh pytest process; `processes` such pairs of processes one after the other, and a CI
        that covers the variation between them (stats.summarize, as `perfbench score` does).
        When a side cannot time it (the test is new, or fails at REV), fn alone, with why."""
        checkout, session = self._session.against, self._session
        n = session.config.getoption("perfbench_against_processes")
        seeds = [self._seed if self._seed is not None else secrets.randbits(62) for _ in range(n)]
        parts: list[PairedSamples] = []
        try:
            with device_lock(self.device) as window:
                for j in range(n):   # both interpreters start together; they take turns at timing
                    with start_test_process(checkout.label, checkout.root, worker_env(checkout), self._node.nodeid,
                                            session.worker_args()) as rev, \
                         start_test_process("the working tree", Path(session.config.rootpath), dict(os.environ),
                                            self._node.nodeid, session.worker_args()) as cur:
                        rev.start(device=self.device)
                        cur.start(device=self.device)
                        parts.append(self._sample(rev, cur, self.sampler.per_process(n), seeds[j] + j,
                                                  iters=parts[0].iters_per_block if parts else None))
        except SideUnavailable as exc:
            return self._alone(fn, make_inputs, note=f"not compared: {exc}")
        samples = PairedSamples.concat(parts)
        summary = stats.summarize(samples.baseline_ns, samples.candidate_ns, seed=seeds[0], processes=samples.processes,
                                  confidence=self.sampler.confidence, n_resamples=self.sampler.n_resamples,
                                  baseline_first=samples.baseline_first)
        verdict = judge(summary.speedup.value, (summary.speedup.low, summary.speedup.high),
                        threshold=self.threshold, paired=True)
        return BenchRecord(self._node.nodeid, self._node.name, AGAINST, samples.candidate_ns,
                           baseline_ns=samples.baseline_ns, judgement=verdict, reference=checkout.label,
                           window_s=tuple(window), processes=samples.processes)

    def _side(self, label: str, fn: Callable, make_inputs: Callable[[int], tuple],
              device: str | None = None) -> InProcessSide:
        from ..device.check import check_device
        from ..pipeline.compare import make_flusher, make_timer
        try:
            device = check_device(device or self.device)
        except PerfbenchError as exc:
            pytest.fail(f"perfbench: {self._node.nodeid}: {exc}", pytrace=False)
        timer = make_timer(device)
        return InProcessSide(label, fn, make_inputs, timer, make_flusher(device, self.sampler, timer))

    def _sample(self, baseline: Side, candidate: Side, cfg: SamplerConfig, seed: int, *,
                iters: int | None = None) -> PairedSamples:
        try:
            return sample_pairs(baseline, candidate, cfg, seed=seed, iters=iters)
        except PerfbenchError as exc:
            pytest.fail(f"perfbench: {self._node.nodeid}: {exc}", pytrace=False)

    def _compare(self, baseline: Callable, candidate: Callable, make_inputs: Callable[[int], tuple]):
        """AB-BA pairs of two functions in this process (pipeline.compare)."""
        from ..pipeline.compare import compare
        try:
            return compare(baseline, candidate, make_inputs, device=self.device, config=self.sampler,
                           seed=self._seed if self._seed is not None else secrets.randbits(62))
        except PerfbenchError as exc:
            pytest.fail(f"perfbench: {self._node.nodeid}: {exc}", pytrace=False)

    def _claim(self) -> None:
        if self._used:
            pytest.fail(f"{self._node.nodeid}: one perfbench measurement per test (parametrize for more)", pytrace=False)
        self._used = True

    def _take_serve_fd(self) -> int:
        fd, self._session.serve_fd = self._session.serve_fd, None   # REV's process serves one call
        if fd is None:
            pytest.fail(f"{self._node.nodeid}: one perfbench measurement per test", pytrace=False)
        return fd

    def _record(self, record: BenchRecord) -> None:
        self._node.stash.setdefault(RECORDS, []).append(record.to_dict())
        j = record.judgement
        if j is not None and j.regression and self._session.config.getoption("perfbench_fail_on") == "regression":
            pytest.fail(f"perfbench: {record.fullname}: {j.describe()} against {record.reference}", pytrace=False)
