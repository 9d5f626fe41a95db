"""The zygote: one warmed interpreter per side of a score, from which each worker process is
forked (`python -m perfbench.isolation.processes.zygote FD`, started by fork_server.ForkServer; or a
child of a warm parent that entered the zygote's sandbox itself and calls `serve`,
warm_parent.py).

Importing torch is most of a worker's start-up (~1.5 s of CPU here).  The zygote does it once,
inside the same sandbox a worker would have (the scorer wraps it exactly as it wraps a worker),
then forks one worker per request.  A forked worker is as fresh as a new interpreter in what the
measurement depends on: no task or candidate code has run in the zygote, its thread pools start
after the fork, the allocator's heap beyond torch's import is its own, and its physical pages
are new; what it shares is the virtual layout of the import (docs/verdict.md, "Forked processes").

The request channel is a SOCK_SEQPACKET socket: one JSON message per request, the fork request
carrying the new worker's fds (its socket, two arenas, its log).  Requests:
  fork              -> {"pid": the child's pid in the zygote's PID namespace}
  wait {pid, timeout_s} -> {"code": exit code as Popen reports it (-N: signal N) or null}
  exit
The child detaches from the zygote before serving: it closes the request channel (it cannot ask
for more forks), starts its own session, and the scorer moves it into a cgroup of its own before
sending its first request.  The zygote makes itself non-dumpable and ignores the signals it can,
so a worker of the same uid can neither read its memory nor stop it.
"""
from __future__ import annotations

import contextlib
import importlib
import json
import os
import signal
import socket
import sys
import time
import traceback
from typing import NoReturn

from ...system.host import PR_SET_PDEATHSIG, prctl

MAX_MESSAGE = 4096
WARM_IMPORTS = ("multiprocessing.connection", "torch", "perfbench.isolation.wire.protocol", "perfbench.isolation.sandbox.plan",
                "perfbench.isolation.processes.worker", "perfbench.core.errors", "perfbench.task.user_files")
FORK_FDS = 4   # the worker's socket, input arena, output table, log file


def leave_child(code: int) -> NoReturn:
    """End a forked child: flush what it printed, never return into its parent's code."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def empty_owned(path: str) -> int:
    """Remove everything under `path` that this uid owns (what its workers left), however they
    set its modes; the directory itself stays.  Returns the entries removed."""
    removed = 0
    try:
        entries = list(os.scandir(path))
    except OSError:
        return 0
    for entry in entries:
        with contextlib.suppress(OSError):   # (gone already, or not ours to remove: left)
            if entry.stat(follow_symlinks=False).st_uid != os.getuid():
                continue
            if entry.is_dir(follow_symlinks=False):
                os.chmod(entry.path, 0o700)   # a worker may have left it unreadable to itself
                removed += empty_owned(entry.path)
                os.rmdir(entry.path)
            else:
                os.unlink(entry.path)
            removed += 1
    return removed


class _Zygote:
    def __init__(self, fd: int, handlers: dict):
        self.chan = socket.socket(fileno=fd)
        self.handlers = handlers
        self.codes: dict[int, int] = {}   # reaped children (and orphans it inherited as PID 1)
        self.live: set[int] = set()       # the workers it forked that are not reaped yet
        # Its sandbox's own /dev/shm (plan.py mounts one in every sandbox; without a sandbox this
        # is the host's, never to be emptied): what a worker left there is removed as it ends
        # (#58 (4)), never kept for the next worker, charged to no cgroup.
        self.private_shm = bool(os.environ.get("PERFBENCH_SANDBOX_PRIVATE"))

    def reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.codes[pid] = os.waitstatus_to_exitcode(status)
            if pid in self.live:
                self.live.discard(pid)
                if not self.live and self.private_shm:
                    empty_owned("/dev/shm")

    def wait(self, pid: int, timeout_s: float) -> int | None:
        deadline = time.monotonic() + timeout_s
        while True:
            self.reap()
            if pid in self.codes:
                return self.codes.pop(pid)
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.002)

    def fork(self, fds: list[int]) -> int:
        zygote = os.getpid()
        pid = os.fork()
        if pid == 0:
            self._become_worker(fds, zygote)   # never returns
        for fd in fds:
            os.close(fd)
        self.live.add(pid)
        self.codes.pop(pid, None)   # an earlier process that had this pid is not this one
        return pid

    def _become_worker(self, fds: list[int], zygote: int) -> None:
        code = 1
        try:
            # Dies with the zygote, which ends when the scorer does (its channel closes): a worker
            # that outlived its scorer would hold its arenas for good (#64).  The zygote forks from
            # its one thread, so the signal follows the zygote itself; checked after the prctl, for
            # a zygote that died before it.
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != zygote:
                os._exit(1)
            conn_fd, in_fd, tab_fd, log_fd = fds
            self.chan.close()
            os.dup2(log_fd, 1)
            os.dup2(log_fd, 2)
            os.close(log_fd)
            os.setsid()   # its own session and process group, as a spawned worker's
            for sig, handler in self.handlers.items():   # as a fresh interpreter has them
                signal.signal(sig, handler)
            from ..sandbox.hardening import close_other_fds, set_dumpable

            set_dumpable(1)   # as any process: the scorer reads its outputs from its memory
            from .worker import serve

            close_other_fds({conn_fd, in_fd, tab_fd})
            serve(conn_fd, (in_fd, tab_fd))
            code = 0
        except SystemExit as exc:   # the candidate called sys.exit: its status, as a spawned worker's
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:  # noqa: BLE001 - report, then leave without returning into the zygote
            traceback.print_exc()
        finally:
            leave_child(code)

    def serve(self) -> None:
        while True:
            try:
                msg, fds, _, _ = socket.recv_fds(self.chan, MAX_MESSAGE, FORK_FDS)
            except OSError:
                return
            if not msg:
                return   # the scorer went away
            self.reap()
            req = json.loads(msg)
            op = req.get("op")
            if op == "exit":
                return
            if op == "fork" and len(fds) == FORK_FDS:
                reply = {"pid": self.fork(fds)}
            elif op == "wait":
                reply = {"code": self.wait(int(req["pid"]), float(req["timeout_s"]))}
            elif op == "ping":
                reply = {"ok": True}
            else:
                for fd in fds:
                    os.close(fd)
                reply = {"error": f"bad request {op!r} with {len(fds)} fds"}
            self.chan.send(json.dumps(reply).encode())


# Every signal a same-uid process could send it whose action it must not take (SIGKILL and
# SIGSTOP cannot be ignored; as its PID namespace's init, it does not receive them from inside).
_IGNORED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2,
            signal.SIGALRM, signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU)


def ignore_signals() -> dict:
    """Ignore what `_IGNORED` names; returns the handlers a forked worker restores."""
    handlers = {sig: signal.getsignal(sig) for sig in _IGNORED}
    for sig in _IGNORED:
        signal.signal(sig, signal.SIG_IGN)
    return handlers


def warm_imports() -> None:
    """What every worker imports before it serves; nothing of the task."""
    for module in WARM_IMPORTS:
        importlib.import_module(module)


def serve(fd: int, handlers: dict) -> None:
    """Serve fork requests on `fd` until the scorer says exit or goes away.  The process is
    hardened already (harden_process: by `main`, or by the warm parent its child was forked
    from, warm_parent.py); non-dumpable again here, since a uid switch resets that."""
    from ..sandbox.hardening import set_dumpable

    set_dumpable(0)
    _Zygote(fd, handlers).serve()


def main(fd: int) -> None:
    from ..sandbox.hardening import harden_process, set_dumpable

    harden_process({fd})   # inherited by every worker it forks
    set_dumpable(0)
    handlers = ignore_signals()
    warm_imports()
    serve(fd, handlers)


if __name__ == "__main__":
    main(int(sys.argv[1]))
