"""The orphan guard (isolation/sandbox/orphan_guard.py) on its own: what a SIGKILLed process told
it is removed, a child forked from that process does not keep the guard waiting, and what the
process removed itself is forgotten.  (tests/integration/test_killed_scorer.py kills real scores.)"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from perfbench.isolation.sandbox import orphan_guard

# A stand-in scorer: a directory and a process in a session of its own, told to its guard; with
# "fork", a child forked after that which outlives it.
SCORER = r'''
import os, subprocess, sys, tempfile, time
from perfbench.isolation.sandbox.orphan_guard import guard
d = tempfile.mkdtemp(prefix="perfbench-guard-test-")
p = subprocess.Popen(["sleep", "60"], start_new_session=True)
guard().watch_dir(d)
guard().watch_process(p.pid)
if sys.argv[1] == "fork" and os.fork() == 0:
    time.sleep(60)
    os._exit(0)
print(d, p.pid, guard().pid, flush=True)
time.sleep(60)
'''


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def _killed_scorer_leaves(mode: str) -> tuple[Path, int, int]:
    scorer = subprocess.Popen([sys.executable, "-c", SCORER, mode], stdout=subprocess.PIPE, text=True)
    d, pid, guard_pid = scorer.stdout.readline().split()
    assert Path(d).is_dir() and not _gone(int(pid)) and not _gone(int(guard_pid))
    scorer.kill()
    scorer.wait()
    deadline = time.monotonic() + 5
    while (Path(d).exists() or not _gone(int(pid)) or not _gone(int(guard_pid))) and time.monotonic() < deadline:
        time.sleep(0.02)
    return Path(d), int(pid), int(guard_pid)


def test_what_a_killed_process_told_its_guard_is_removed_and_the_guard_exits():
    d, pid, guard_pid = _killed_scorer_leaves("plain")
    assert not d.exists() and _gone(pid) and _gone(guard_pid)


def test_a_child_forked_from_the_scorer_does_not_keep_its_guard_waiting():
    """The pipe's write end is closed in a forked child (os.register_at_fork): else the guard
    would read end-of-file only once that child ended too."""
    d, pid, guard_pid = _killed_scorer_leaves("fork")
    assert not d.exists() and _gone(pid) and _gone(guard_pid)


def test_a_cgroup_is_thawed_emptied_and_removed(tmp_path):
    """remove_cgroup on a cgroup-like directory's files: thawed (both freezers' files), then its
    processes killed; an empty one is removed."""
    d = tmp_path / "cg"
    d.mkdir()
    (d / "freezer.state").write_text("FROZEN")
    (d / "cgroup.freeze").write_text("1")
    sleeper = subprocess.Popen(["sleep", "60"])
    (d / "cgroup.procs").write_text(f"{sleeper.pid}\n")
    assert orphan_guard.empty_cgroup([d], timeout_s=0.2) is False   # (a real cgroup.procs empties itself)
    assert sleeper.wait(timeout=5) == -signal.SIGKILL
    assert (d / "freezer.state").read_text() == "THAWED" and (d / "cgroup.freeze").read_text() == "0"
    empty = tmp_path / "empty"
    empty.mkdir()
    orphan_guard.remove_cgroup([empty])
    assert not empty.exists()


def test_what_the_scorer_removed_itself_is_forgotten(tmp_path):
    """A long-lived caller (a batch, a pytest session) makes and removes thousands of things: the
    guard holds no more than a few dozen of them at a time, and no pidfd of an ended process."""
    watched = orphan_guard._Watched()
    for k in range(orphan_guard.PRUNE_ABOVE + 10):
        d = tmp_path / f"d{k}"
        d.mkdir()
        watched.add(f"dir {d}")
        d.rmdir()
    done = subprocess.Popen(["true"])
    done.wait()
    watched.add(f"pid {os.getpid()}")
    kept = tmp_path / "kept"
    kept.mkdir()
    watched.add(f"dir {kept}")
    watched.prune()
    assert watched.dirs == {kept} and set(watched.pidfds) == {os.getpid()}
    watched.add("pid not-a-pid")
    watched.add("bogus line")
    assert watched.size() == 2


def test_a_killed_guard_is_replaced_at_the_next_watch(tmp_path):
    """A guard killed under the scorer (EPIPE on its pipe) is not left dead for the rest of a
    long-lived process: the next watch starts a fresh one, which then guards what follows."""
    g = orphan_guard.OrphanGuard()
    g.watch_dir(tmp_path / "first")
    first = g.pid
    os.kill(first, signal.SIGKILL)
    os.waitpid(first, 0)
    g.watch_dir(tmp_path / "lost")        # EPIPE: left to the next run's sweep
    g.watch_dir(tmp_path / "second")
    assert g.pid is not None and g.pid != first and not _gone(g.pid)
    g._forget()   # (closing the pipe ends the new guard: nothing of the test's is there to remove)


def test_every_watched_freezer_is_thawed_before_any_cgroup_is_emptied(tmp_path, monkeypatch):
    """Under v1 a cgroup is one directory per controller, each watched alone: the pids directory,
    emptied before the freezer's was thawed, waited on a frozen task that could not die and was
    left behind (CI: a scorer killed in the gate left /sys/fs/cgroup/pids/perfbench-candidate-...)."""
    pids, freezer = tmp_path / "pids" / "cg", tmp_path / "freezer" / "cg"
    for d in (pids, freezer):
        d.mkdir(parents=True)
    (freezer / "freezer.state").write_text("FROZEN")
    seen = []
    monkeypatch.setattr(orphan_guard, "remove_cgroup",
                        lambda dirs, timeout_s: seen.append((dirs[0].parent.name, (freezer / "freezer.state").read_text())))
    watched = orphan_guard._Watched()
    for d in (pids, freezer):
        watched.add(f"cgroup {d}")
    watched.remove_all()
    assert sorted(seen) == [("freezer", "THAWED"), ("pids", "THAWED")]   # thawed before either was emptied
