"""Nothing outlives a killed scorer (#64): a `perfbench score` SIGKILLed at several points of a
score (in the gate, mid-pair, between worker processes, during the live solution's blocks), and a
score-batch row killed on its timeout and retried, leave within 5 s no perfbench process, no
cgroup and no private or log directory of that scorer (isolation/sandbox/orphan_guard.py).

Each case waits for the CLI's own progress line, then kills the scorer alone (its workers, its
zygotes, its warm parent and its guard are in sessions of their own, as after a harness's
`kill -9 PID`)."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from perfbench.system.procfs import pid_namespace

REPO = Path(__file__).resolve().parents[2]
TASK = REPO / "tests" / "fixtures" / "tiny_task"
SETTLE_S = 5.0

pytestmark = pytest.mark.slow


# A scorer's processes: warm parents, zygotes and workers (and what they forked), its orphan
# guard, and a batch's row scorer; each test's scorer runs with a tag of its own in its
# environment, which all of them inherit, so another perfbench run on the machine is not counted.
_OURS = re.compile(rb"perfbench[./](isolation|cli|batch)")
TAG_VAR = "PERFBENCH_KILL_TEST"


def tagged_processes(tag: str) -> set[int]:
    """Every perfbench process (by its command line) whose environment carries `tag`."""
    found, mark = set(), f"{TAG_VAR}={tag}".encode()
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                if _OURS.search(Path(f"/proc/{entry}/cmdline").read_bytes()) and \
                        mark in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0"):
                    found.add(int(entry))
            except OSError:
                continue
    return found


def owned_by(scorers: set[int]) -> tuple[list[str], list[str]]:
    """The cgroups and temp directories named with one of `scorers`' owner tags."""
    tags = tuple(f"-{pid_namespace()}-{pid}-" for pid in scorers)
    cgroups = subprocess.run(["find", "/sys/fs/cgroup", "-maxdepth", "8", "-type", "d", "-name", "perfbench-*"],
                             capture_output=True, text=True).stdout.split()
    temp = [str(p) for p in Path(tempfile.gettempdir()).glob("perfbench-*")]
    return [c for c in cgroups if any(t in c for t in tags)], [d for d in temp if any(t in Path(d).name for t in tags)]


def left_behind(scorers: set[int], tag: str) -> dict[str, list]:
    """What is still there `SETTLE_S` after the kill, polled so a clean case returns at once."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        alive = sorted(p for p in tagged_processes(tag) if "Z" not in _state(p))
        cgroups, dirs = owned_by(scorers)
        if not (alive or cgroups or dirs) or time.monotonic() > deadline:
            return {"processes": [(p, _cmdline(p)) for p in alive], "cgroups": cgroups, "dirs": dirs}
        time.sleep(0.1)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "Z"


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:120]
    except OSError:
        return ""


@pytest.mark.parametrize("where,line,after_s,args", [
    ("the gate", "correctness gate:", 0.1, ["--s-ref", "1.5"]),
    ("mid-pair", "timing AB-BA pairs (", 0.3, ["--s-ref", "1.5"]),
    ("between processes", "starting workers (2 of", 0.0, ["--s-ref", "1.5"]),
    ("the live solution's blocks", "timing AB-BA pairs, the solution's", 0.3, ["--s-ref", "live"]),
])
def test_a_scorer_killed_leaves_nothing(where, line, after_s, args, sandboxable):
    tag = uuid.uuid4().hex
    scorer = subprocess.Popen([sys.executable, "-m", "perfbench.cli.main", "score", str(TASK), str(TASK / "solution.py"),
                               "--processes", "3", "--pairs", "10", *args], cwd=REPO,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              env=dict(os.environ, **{TAG_VAR: tag}))
    said = []
    try:
        for said_line in scorer.stderr:
            said.append(said_line.strip())
            if line in said_line:
                break
        else:
            pytest.fail(f"the score ended before {line!r}: {said}")
        time.sleep(after_s)
        assert scorer.poll() is None, said
        made = owned_by({scorer.pid})
        assert made[0] and made[1], f"nothing to leave behind at {where}? {made}"
        running = tagged_processes(tag)   # the scorer and what it started: the count is not vacuous
        assert scorer.pid in running and len(running) >= 3, running
        os.kill(scorer.pid, signal.SIGKILL)
        scorer.wait()
    finally:
        if scorer.poll() is None:
            scorer.kill()
            scorer.wait()
    left = left_behind({scorer.pid}, tag)
    assert left == {"processes": [], "cgroups": [], "dirs": []}, (where, left)


def test_a_batch_row_killed_on_its_timeout_and_retried_leaves_nothing(tmp_path, sandboxable, monkeypatch):
    """score-batch's timeout path: the row's scorer process is SIGKILLed when no record came in
    time, and the retry too; each attempt's cgroups, directories and workers go with it."""
    from perfbench.batch.manifest import BatchRow
    from perfbench.batch.row import BatchOptions
    from perfbench.batch.runner import RowServer, score_with_retries

    tag = uuid.uuid4().hex
    monkeypatch.setenv(TAG_VAR, tag)   # (the row scorer inherits this process's environment)
    server = RowServer(BatchOptions(s_ref=1.5))
    scorers: set[int] = set()
    start = server._start

    def start_and_note() -> None:
        start()
        scorers.add(server.proc.pid)

    server._start = start_and_note
    try:
        record = score_with_retries(server, BatchRow("r0", str(TASK), str(TASK / "solution.py")), retries=1,
                                    timeout_s=4.0)
    finally:
        server.close()
    assert record.error_kind == "infrastructure" and record.attempts == 2, record
    assert re.search(r"no record within 4 s", record.error), record.error
    assert len(scorers) == 2
    left = left_behind(scorers, tag)
    assert left == {"processes": [], "cgroups": [], "dirs": []}, left
