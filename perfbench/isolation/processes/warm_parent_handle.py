"""The scorer's handle on a warm parent (warm_parent.py): a root process that imported torch once
and forks each zygote into that zygote's own fresh sandbox, instead of the scorer spawning a new
interpreter that imports torch again (~2.5-3 s on a two-core host).

    with WarmParent(threading) as parent:
        with ForkServer("candidate", untrusted=True, expose=..., parent=parent) as server:
            server.start(timeout_s)     # the zygote, forked from `parent`, answers
            ...

Requests are sent as soon as they are made and answered in order; a ForkServer collects its
reply in `start`, so one score's two zygotes are asked for while the warm parent and the scorer
are still importing torch side by side.
"""
from __future__ import annotations

import atexit
import contextlib
import itertools
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import time
from threading import Lock

from ...core.errors import EnvironmentUnavailable
from ..sandbox.entry import unsupported
from ..sandbox.orphan_guard import guard
from ..sandbox.plan import SandboxPlan, worker_log_dir
from ..sandbox.worker_view import WorkerView
from .cpu_threads import CpuThreading
from .launch import child_env, kill_group, last_output, read_tail, spawn
from .warm_parent import MAX_REQUEST

UNKNOWN_EXIT = 255   # a zygote's exit status belongs to the warm parent, which reaps it


class PidfdProcess:
    """A process the scorer did not start (the warm parent's child), with the part of
    `subprocess.Popen` ForkServer and `kill_group` use.  Held through a pidfd, so its pid can
    never name another process; `returncode` is UNKNOWN_EXIT once it has ended."""

    def __init__(self, pid: int, pidfd: int):
        self.pid, self._pidfd = pid, pidfd
        self.returncode: int | None = None

    def _ended_within(self, timeout_s: float) -> bool:
        if self._pidfd < 0:
            return True
        poller = select.poll()
        poller.register(self._pidfd, select.POLLIN)
        return bool(poller.poll(max(0, int(timeout_s * 1000))))

    def poll(self) -> int | None:
        if self.returncode is None and self._ended_within(0):
            self.returncode = UNKNOWN_EXIT
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None and not self._ended_within(3600.0 if timeout is None else timeout):
            raise subprocess.TimeoutExpired(f"zygote {self.pid}", timeout)
        self.returncode = UNKNOWN_EXIT
        return self.returncode

    def kill(self) -> None:
        """SIGKILL through the pidfd: never another process that reused the pid.  (A
        sandboxed zygote's PID 1 dies with it: PR_SET_PDEATHSIG.)"""
        if self._pidfd >= 0:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)

    def close(self) -> None:
        if self._pidfd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._pidfd)
            self._pidfd = -1


class PendingZygote:
    """A zygote asked for and not yet answered."""

    def __init__(self, parent: "WarmParent", req_id: int):
        self.parent, self.req_id = parent, req_id

    def result(self, timeout_s: float) -> PidfdProcess:
        return self.parent._collect(self.req_id, timeout_s)


class WarmParent:
    """One warm parent, for zygotes whose workers run with `threading` (its OpenMP runtime read
    the thread counts at import, so the zygotes must want the same ones)."""

    def __init__(self, threading: CpuThreading | None):
        why = unsupported()
        if why is not None:
            raise EnvironmentUnavailable(f"warm parent: {why}")
        self.threading = threading
        self._log_dir = worker_log_dir()
        self.log_path = self._log_dir / "warm-parent.log"
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._chan = ours
        self._ids = itertools.count(1)
        self._replies: dict[int, tuple[dict, list[int]]] = {}
        self._lock = Lock()   # scores on several threads of one process share it
        try:
            # No sandbox around it: it must be root to make each zygote's (docs/security.md).
            self.proc = spawn("perfbench.isolation.processes.warm_parent", [str(theirs.fileno())],
                              SandboxPlan(None, False), (theirs.fileno(),), self.log_path, threading)
        except BaseException:
            ours.close()
            shutil.rmtree(self._log_dir, ignore_errors=True)
            raise
        finally:
            theirs.close()

    def suits(self, threading: CpuThreading | None) -> bool:
        """Whether zygotes whose workers run with `threading` may be forked from this one."""
        return _key(threading) == _key(self.threading)

    def request(self, plan: SandboxPlan, chan_fd: int, log_fd: int, threading: CpuThreading | None) -> PendingZygote:
        """Ask for a zygote in `plan` whose workers run with `threading`, serving on `chan_fd`,
        writing to `log_fd` (both are sent, the caller still closes its copies).  Its
        environment is exactly what a spawned zygote's would be."""
        view = plan.view or WorkerView((), ())
        req_id = next(self._ids)
        req = {"op": "zygote", "id": req_id, "env": child_env(plan, threading),
               "cgroup_procs": plan.cgroup.procs_files if plan.cgroup is not None else [],
               "namespaces": plan.namespaces, "view_script": plan.view_script(view) if plan.namespaces else "",
               "private_dir": plan.private_dir, "uid": view.uid, "gid": view.gid}
        msg = json.dumps(req).encode()
        if len(msg) > MAX_REQUEST:
            raise EnvironmentUnavailable(f"warm parent: a zygote request of {len(msg)} bytes (limit {MAX_REQUEST})")
        try:
            with self._lock:
                socket.send_fds(self._chan, [msg], [chan_fd, log_fd])
        except OSError as exc:
            raise self._lost(f"took no request ({exc})") from None
        return PendingZygote(self, req_id)

    def _collect(self, req_id: int, timeout_s: float) -> PidfdProcess:
        with self._lock:   # a reply read here may be another thread's: kept for it in _replies
            reply, fds = self._await_reply(req_id, timeout_s)
        if "error" in reply or len(fds) != 1:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
            raise self._lost(f"answered {reply!r}")
        guard().watch_process(int(reply["pid"]))   # (the pidfd is the guard's own: it opens one)
        return PidfdProcess(int(reply["pid"]), fds[0])

    def _await_reply(self, req_id: int, timeout_s: float) -> tuple[dict, list[int]]:
        deadline = time.monotonic() + timeout_s
        while req_id not in self._replies:
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._lost(f"did not answer in {timeout_s:.0f} s")
            try:
                self._chan.settimeout(left)
                msg, fds, _, _ = socket.recv_fds(self._chan, 4096, 1)
            except OSError as exc:   # (socket.timeout is an OSError)
                raise self._lost(f"stopped answering ({exc})") from None
            if not msg:
                raise self._lost("exited")
            reply = json.loads(msg)
            self._replies[int(reply.get("id", -1))] = (reply, fds)
        return self._replies.pop(req_id)

    def _lost(self, what: str) -> EnvironmentUnavailable:
        return EnvironmentUnavailable(f"warm parent {what}" + last_output(read_tail(self.log_path, 300)))

    def close(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                self._chan.settimeout(2)
                self._chan.send(json.dumps({"op": "exit"}).encode())
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)
        kill_group(SandboxPlan(None, False), self.proc)
        self._chan.close()
        for _, fds in self._replies.values():
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
        shutil.rmtree(self._log_dir, ignore_errors=True)

    def __enter__(self) -> "WarmParent":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _key(threading: CpuThreading | None) -> tuple | None:
    return threading.runtime_key() if threading is not None else None


class WarmParents:
    """Warm parents kept across scores: one per OpenMP setting (`CpuThreading.runtime_key`),
    started on first use and again if one has died.  `shared()` is this process's: every score
    that is not handed another uses it, so a process that scores many candidates (a batch's row
    server, an RL loop, a test session) imports torch for its zygotes once."""

    def __init__(self) -> None:
        self._parents: dict[tuple | None, WarmParent] = {}
        self._pid = os.getpid()
        self._lock = Lock()

    def get(self, threading: CpuThreading | None) -> WarmParent:
        with self._lock:
            if os.getpid() != self._pid:   # a forked copy of the owner: its channels are the owner's
                self._parents, self._pid = {}, os.getpid()
            parent = self._parents.get(_key(threading))
            if parent is None or parent.proc.poll() is not None:
                if parent is not None:
                    parent.close()
                parent = self._parents[_key(threading)] = WarmParent(threading)
            return parent

    def close(self) -> None:
        if os.getpid() == self._pid:
            for parent in self._parents.values():
                parent.close()
        self._parents.clear()

    _shared: "WarmParents | None" = None

    @classmethod
    def shared(cls) -> "WarmParents":
        """This process's warm parents, closed when it exits."""
        if cls._shared is None:
            cls._shared = cls()
            atexit.register(cls._shared.close)
        return cls._shared
