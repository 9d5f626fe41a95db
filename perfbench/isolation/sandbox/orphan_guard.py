"""Nothing outlives a killed scorer (#64): a process that outlives the scorer by design, only to
remove what the scorer made once the scorer is gone, whatever ended it (SIGKILL from a harness's
timeout, the OOM killer, Ctrl-C twice).

The scorer cleans up after itself on every path Python runs (`finally`, context managers,
atexit); a SIGKILL runs none of them.  Then its warm parent and zygotes see their channel close
and exit, but a worker that was frozen in its cgroup (the idle side of a pair) cannot see
anything: it stays, a root process holding its arenas, with its cgroups and the scorer's
private and log directories.  So the first time a scorer makes one of these it starts this
guard: a small interpreter in a session of its own (a signal to the scorer's process group does
not reach it), holding the read end of a pipe whose only writer is the scorer.  The scorer
writes one line per thing it makes:

    cgroup PATH     a cgroup directory (each v1 controller's is its own line)
    dir PATH        a private or log directory
    pid PID         a process the scorer started in a session of its own (warm parent, zygote,
                    spawned worker); the guard holds a pidfd of it at once, so its pid can never
                    name another process

When the pipe reads end-of-file, the scorer is gone: the guard kills every process still
running (the session of each, then each cgroup's members, thawed first: a frozen task takes no
signal), removes the cgroups and then the directories, and exits (well within 5 s).  Between
lines it blocks in read (nothing of it runs while the scorer times blocks); once it holds more
than `PRUNE_ABOVE` entries it drops those the scorer removed in the normal way, so a long-lived
caller (a batch, a pytest session) holds it to a few dozen.

Left to the next run (cgroup.sweep_stale, plan.sweep_stale_private_dirs, by the owner tag in
their names): what a scorer made in the microseconds before it told the guard, and everything
of a scorer whose guard was killed too (a kill of the whole cgroup the scorer ran in).

Standard library only: the guard runs as `python -I -S` on this file (importing perfbench would
import numpy, on the cores the zygotes are starting on).  The scorer imports it as a module for
`guard()` and the cgroup helpers, which WorkerCgroup uses too, so there is one way to empty and
remove a cgroup.
"""
from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Iterable

PRUNE_ABOVE = 64   # entries held before the guard drops those the scorer removed itself
EMPTY_TIMEOUT_S = 5.0


# -- emptying and removing a cgroup (the scorer's WorkerCgroup and the guard alike) -----------------
def cgroup_pids(dirs: Iterable[Path]) -> set[int]:
    pids: set[int] = set()
    for d in dirs:
        with contextlib.suppress(OSError, ValueError):
            pids.update(int(x) for x in (d / "cgroup.procs").read_text().split())
    return pids


def thaw_cgroup(dirs: Iterable[Path]) -> None:
    """Thaw wherever a freezer is (v2's cgroup.freeze, v1's freezer.state): a frozen v1 task only
    dies once thawed, and a thawed one can also take its parent's death signal."""
    for d in dirs:
        for name, value in (("cgroup.freeze", "0"), ("freezer.state", "THAWED")):
            with contextlib.suppress(OSError):
                fd = os.open(d / name, os.O_WRONLY)   # (never created: only a freezer's own file)
                try:
                    os.write(fd, value.encode())
                finally:
                    os.close(fd)


def empty_cgroup(dirs: Iterable[Path], timeout_s: float = EMPTY_TIMEOUT_S) -> bool:
    """SIGKILL every process in the cgroup (its directories `dirs`) until it is empty, or
    `timeout_s` has passed; whether it is empty."""
    dirs = list(dirs)
    deadline = time.monotonic() + timeout_s
    thaw_cgroup(dirs)
    for d in dirs:   # v2 >= 5.14: the whole cgroup in one write
        if (d / "cgroup.kill").exists():
            with contextlib.suppress(OSError):
                (d / "cgroup.kill").write_text("1")
    while True:
        left = cgroup_pids(dirs)
        if not left:
            return True
        if time.monotonic() > deadline:
            return False
        for pid in left:   # v1, or a v2 kernel without cgroup.kill: one by one until empty
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.005)


def remove_cgroup(dirs: Iterable[Path], timeout_s: float = EMPTY_TIMEOUT_S) -> None:
    """Empty the cgroup, then remove its directories (retrying while the last exits are reaped)."""
    dirs = list(dirs)
    empty_cgroup(dirs, timeout_s)
    for d in dirs:
        for _ in range(200):
            try:
                d.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.005)


# -- the scorer's handle ------------------------------------------------------------------------------
class OrphanGuard:
    """The scorer's end of its guard: started on the first `watch_*`.  A child forked from the
    scorer closes the scorer's pipe (`os.register_at_fork`), or the guard would wait for the
    child too; a child that watches something starts a guard of its own."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fd = -1     # the pipe's write end; -1: no guard started by this process
        self.pid: int | None = None   # the guard process's

    def watch_cgroup(self, path: Path | str) -> None:
        self._tell("cgroup", str(path))

    def watch_dir(self, path: Path | str) -> None:
        self._tell("dir", str(path))

    def watch_process(self, pid: int) -> None:
        self._tell("pid", str(int(pid)))

    def _tell(self, kind: str, value: str) -> None:
        if "\n" in value:
            raise ValueError(f"a watched {kind} has a newline in its name: {value!r}")
        with self._lock:
            try:
                if self._fd < 0:
                    self._start()
                os.write(self._fd, f"{kind} {value}\n".encode())   # < PIPE_BUF: one write, whole
            except OSError:
                # No guard: it could not start, or it was killed (EPIPE).  This entry is left to
                # the next run's sweep; the next watch starts a fresh guard.
                self._forget()

    def _forget(self) -> None:
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
        self._fd, self.pid = -1, None

    def _start(self) -> None:
        read, write = os.pipe()   # (both close-on-exec: the guard gets the read end as its stdin only)
        try:
            # posix_spawn, not Popen: nobody is to wait for it (it must outlive this process), and
            # a Popen still running warns when collected.  It closes every other fd it inherits.
            self.pid = os.posix_spawn(sys.executable, [sys.executable, "-I", "-S", str(Path(__file__).resolve())],
                                      dict(os.environ), setsid=True,
                                      file_actions=[(os.POSIX_SPAWN_DUP2, read, 0),
                                                    (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                                                    (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)])
        except BaseException:
            os.close(write)
            raise
        finally:
            os.close(read)
        self._fd = write

    def _after_fork_in_child(self) -> None:
        self._forget()
        self._lock = threading.Lock()


_GUARD = OrphanGuard()
os.register_at_fork(after_in_child=_GUARD._after_fork_in_child)


def guard() -> OrphanGuard:
    """This process's guard (started on its first watch)."""
    return _GUARD


# -- the guard process ---------------------------------------------------------------------------------
class _Watched:
    def __init__(self) -> None:
        self.cgroups: set[Path] = set()
        self.dirs: set[Path] = set()
        self.pidfds: dict[int, int] = {}

    def add(self, line: str) -> None:
        kind, _, value = line.partition(" ")
        if kind == "cgroup":
            self.cgroups.add(Path(value))
        elif kind == "dir":
            self.dirs.add(Path(value))
        elif kind == "pid" and value.isdigit() and int(value) not in self.pidfds:
            with contextlib.suppress(OSError):   # (already gone: nothing to kill)
                self.pidfds[int(value)] = os.pidfd_open(int(value))

    def size(self) -> int:
        return len(self.cgroups) + len(self.dirs) + len(self.pidfds)

    def prune(self) -> None:
        """Forget what the scorer removed itself: ended processes, directories gone."""
        for pid, fd in list(self.pidfds.items()):
            if _ended(fd):
                os.close(fd)
                del self.pidfds[pid]
        self.cgroups = {c for c in self.cgroups if c.exists()}
        self.dirs = {d for d in self.dirs if d.exists()}

    def remove_all(self) -> None:
        for pid, fd in self.pidfds.items():   # the scorer's sessions: warm parent, zygotes, workers
            if not _ended(fd):
                with contextlib.suppress(OSError):
                    os.killpg(pid, signal.SIGKILL)   # (spawned in a session of its own: pgid = pid)
                with contextlib.suppress(OSError):
                    signal.pidfd_send_signal(fd, signal.SIGKILL)
        # Every freezer first: under v1 one cgroup is a directory per controller, each watched
        # alone, and a frozen task dies only once its freezer's directory is thawed; emptied
        # pids-first, the pids directory waited on tasks that could not die yet, and stayed.
        thaw_cgroup(self.cgroups)
        # deepest first: a v2 cgroup with children cannot be removed
        for c in sorted(self.cgroups, key=lambda p: len(p.parts), reverse=True):
            remove_cgroup([c], timeout_s=2.0)
        for d in self.dirs:
            shutil.rmtree(d, ignore_errors=True)


def _ended(pidfd: int) -> bool:
    return bool(select.select([pidfd], [], [], 0)[0])


def serve(fd: int) -> None:
    """Read watch lines from `fd` until end-of-file, then remove everything still there.  Blocks
    in read between lines: no timer wakes it while the scorer times blocks."""
    watched, pending = _Watched(), b""
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            watched.add(line.decode(errors="replace"))
        if watched.size() > PRUNE_ABOVE:
            watched.prune()
    watched.remove_all()


def main() -> None:
    os.closerange(3, os.sysconf("SC_OPEN_MAX"))   # nothing of the scorer's: a worker's channel held
    # here would never read end-of-file when the scorer dies
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGTSTP, signal.SIGTTIN,
                signal.SIGTTOU, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)
    with contextlib.suppress(OSError):   # the kernel's last pick when memory runs out is the scorer's job
        Path("/proc/self/oom_score_adj").write_text("-500")
    os.chdir("/")
    serve(sys.stdin.fileno())


if __name__ == "__main__":
    main()
