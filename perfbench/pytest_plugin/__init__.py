"""perfbench's pytest plugin: "did this change make the kernel slower?" answered with paired
timing and a significance test, inside the test run a team already has (docs/pytest.md).

Registered through the `pytest11` entry point.  Layers: `judge` (statistics, pure), `store`
(saved runs), `records` (the pytest-benchmark JSON layout), `revision` + `remote`
(--perfbench-against), `plot` (--perfbench-histogram), `fixture` (what tests call); this module
is pytest's hooks only.  Records travel on test reports, so under pytest-xdist the controller
gathers every worker's and writes the files.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from .fixture import RECORDS, PerfbenchFixture
from .revision import RevisionCheckout, RevisionError, check_out, remove
from .session import SESSION, PerfbenchSession
from .store import StoreError, valid_run_name

_AGAINST_KEY = "perfbench_against"   # xdist workerinput: the controller's worktree


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
    g.addoption("--perfbench-against", metavar="REV",
                help="pair each perfbench(fn, ...) test AB-BA with the same test at git revision REV, "
                     "run live in a second process (a worktree of the repository under test)")
    g.addoption("--perfbench-against-processes", type=int, default=3, metavar="N",
                help="fresh process pairs (REV, working tree) a --perfbench-against measurement is split between "
                     "(default 3; the CI covers the variation between them)")
    g.addoption("--perfbench-json", metavar="PATH", help="write the run in pytest-benchmark's JSON layout")
    g.addoption("--perfbench-histogram", metavar="PATH", nargs="?", const="perfbench-histogram.png", default=None,
                help="write a PNG of each benchmark's times beside what it was compared with "
                     "(default perfbench-histogram.png)")
    g.addoption("--perfbench-storage", metavar="DIR", default=".perfbench",
                help="where saved runs live, relative to the rootdir (default .perfbench)")
    g.addoption("--perfbench-disable", action="store_true", help="call each function once, time nothing")
    g.addoption("--perfbench-seed", type=int, default=None, help="seed of the input schedule (default: random)")
    g.addoption("--perfbench-malloc", choices=["steady", "system"], default="steady",
                help="steady (default): fix glibc's heap thresholds for the session so runs compare; "
                     "system: leave them drifting")
    g.addoption("--perfbench-serve", metavar="FD", default=None, help=argparse.SUPPRESS)   # remote.py


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "perfbench(threshold=, min_pairs=, max_pairs=, time_budget_s=, device=): "
                                       "per-test settings of the perfbench fixture")
    if not 0 <= config.getoption("perfbench_threshold") < 10:
        raise pytest.UsageError("--perfbench-threshold: a fraction >= 0, e.g. 0.05 for 5%")
    if config.getoption("perfbench_against_processes") < 1:
        raise pytest.UsageError("--perfbench-against-processes: at least 1")
    save = config.getoption("perfbench_save")
    if save is not None and not valid_run_name(save):
        raise pytest.UsageError(f"--perfbench-save={save!r}: use letters, digits, '.', '_' or '-'")
    session = PerfbenchSession(config)
    config.stash[SESSION] = session
    config.pluginmanager.register(session, "perfbench-session")   # it gathers records from reports
    measuring = not config.getoption("perfbench_disable") and not session.serving
    rev = config.getoption("perfbench_against")
    if rev is not None and config.getoption("perfbench_compare") is not None:
        raise pytest.UsageError("--perfbench-against and --perfbench-compare: choose one (against pairs live, "
                                "compare reads a saved run)")
    if config.getoption("perfbench_compare") is not None and measuring:
        try:   # up front: a missing or foreign saved run stops the run before anything is timed
            session.saved = session.store.load(config.getoption("perfbench_compare") or None)
        except StoreError as exc:
            raise pytest.UsageError(str(exc)) from None
    if rev is not None and measuring:
        if session.is_xdist_worker:   # the controller made the worktree (pytest_configure_node)
            session.against = RevisionCheckout.from_dict(config.workerinput[_AGAINST_KEY])
        else:
            try:
                session.against, session.owns_checkout = check_out(config.rootpath, rev), True
            except RevisionError as exc:
                raise pytest.UsageError(str(exc)) from None


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """pytest-xdist's controller: each worker uses the controller's worktree."""
    session = node.config.stash.get(SESSION, None)
    if session is not None and session.against is not None:
        node.workerinput[_AGAINST_KEY] = session.against.to_dict()


def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.stash.get(SESSION, None)
    if session is None:
        return
    config.pluginmanager.unregister(session)
    if session.owns_checkout and session.against is not None:
        remove(session.against)


@pytest.fixture
def perfbench(request: pytest.FixtureRequest) -> PerfbenchFixture:
    session = request.config.stash[SESSION]
    if not request.config.getoption("perfbench_disable"):
        session.malloc   # noqa: B018 - applies the heap policy before the first measurement
    return PerfbenchFixture(session, request.node)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "teardown" and item.stash.get(RECORDS, None):
        report.perfbench_records = item.stash[RECORDS]   # plain data: xdist carries it to the controller


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    s = session.config.stash.get(SESSION, None)
    if s is None or not s.records or not s.writes_results:
        return
    doc = s.document()
    if path := session.config.getoption("perfbench_json"):
        Path(path).write_text(json.dumps(doc, indent=2))
    if path := session.config.getoption("perfbench_histogram"):
        from .plot import write_histogram
        write_histogram(s.records, Path(path), saved=s.saved)
    if name := session.config.getoption("perfbench_save"):
        s.saved_to = s.store.save(name, doc)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    from .summary import summary_lines
    s = config.stash.get(SESSION, None)
    if s is None or not s.records or not s.writes_results:
        return
    against = f", against {s.against.label}" if s.against is not None else ""
    terminalreporter.section(f"perfbench: {len(s.records)} benchmark(s) on {s.store.key}, heap {s.malloc}{against}")
    for line in summary_lines(s.records):
        terminalreporter.write_line(line)
    if s.saved_to is not None:
        terminalreporter.write_line(f"saved: {s.saved_to}")
    if hist := config.getoption("perfbench_histogram"):
        terminalreporter.write_line(f"histogram: {hist}")
