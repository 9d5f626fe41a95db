"""The scorer's handle on a zygote (zygote.py): one warmed interpreter per side of a score,
sandboxed exactly as a worker of that side would be, that forks a fresh worker for each process
pair instead of the scorer starting a new interpreter (which imports torch again, ~1.5 s of CPU).
The zygote is itself spawned, or (`parent`) forked into its sandbox by a warm parent that
imported torch once (warm_parent.py, warm_parent_handle.py).

    with ForkServer("candidate", untrusted=True, expose=...) as server:
        server.start(timeout_s)
        with WorkerClient("candidate", untrusted=True, server=server) as w:   # forked
            ...

A forked worker's isolation is probed and recorded like a spawned one's: same namespaces, view,
uid and capabilities (the zygote's), and a cgroup of its own that it is moved into before the
scorer sends it anything.  The zygote runs nothing of the task; a worker cannot reach it
(docs/security.md, "Forked workers").
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from typing import TYPE_CHECKING

from ...core.errors import CandidateRejected, EnvironmentUnavailable
from ...system.procfs import host_pid_of, pid_alive
from ..sandbox.plan import SandboxPlan, plan_forked, plan_sandbox, worker_log_dir
from ..sandbox.orphan_guard import guard
from .cpu_threads import CpuThreading
from .launch import interpreter_pid, kill_group, last_output, read_tail, spawn
from .warm_parent_handle import PendingZygote, PidfdProcess
from .zygote import MAX_MESSAGE

if TYPE_CHECKING:
    from .warm_parent_handle import WarmParent


class ForkServer:
    """One zygote.  `label` names the side ("candidate", "baseline"); the other arguments are
    WorkerClient's and apply to every worker it forks (`threading`: their cores and thread counts;
    the zygote itself is not pinned, it only imports)."""

    def __init__(self, label: str, *, untrusted: bool, sandbox: bool = True, hide: tuple[str, ...] = (),
                 expose: tuple[str, ...] = (), threading: CpuThreading | None = None,
                 parent: "WarmParent | None" = None):
        if parent is not None and not parent.suits(threading):
            raise ValueError(f"{label}'s zygote wants {threading}, its warm parent was started for {parent.threading}")
        self.label, self.untrusted = label, untrusted
        self.plan = (plan_sandbox(f"{label}-zygote", untrusted=untrusted, hide=hide, expose=expose) if sandbox
                     else SandboxPlan(None, False, missing=("sandbox: switched off by the caller",)))
        self._log_dir = worker_log_dir()
        self.log_path = self._log_dir / f"{label}-zygote.log"
        self.threading = threading
        self._started = time.perf_counter()
        # Spawned (a new interpreter imports torch), or forked by a warm parent that did already:
        # then `proc` is known once the parent answers (start).
        self.proc: subprocess.Popen | PidfdProcess | None = None
        self._pending: PendingZygote | None = None
        self.source = "warm parent" if parent is not None else "spawned"
        try:
            try:
                self._launch(parent)
            except EnvironmentUnavailable as exc:   # the warm parent took no request: spawned
                if parent is None:
                    raise
                self._spawn_instead(exc)
        except BaseException:
            self._cleanup()
            raise
        self.zygote_pid: int | None = None
        self.startup_s: float | None = None
        self.forks = 0

    def _launch(self, parent: "WarmParent | None") -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._chan = ours
        try:
            if parent is not None:
                with open(self.log_path, "wb") as log:
                    self._pending = parent.request(self.plan, theirs.fileno(), log.fileno(), self.threading)
            else:
                self.proc = spawn("perfbench.isolation.processes.zygote", [str(theirs.fileno())], self.plan,
                                  (theirs.fileno(),), self.log_path, self.threading)
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()

    def _spawn_instead(self, exc: EnvironmentUnavailable) -> None:
        """The warm parent could not make this zygote (a kernel that refuses one of the in-process
        steps, a warm parent gone): spawned as without one, and the verdict says so."""
        self.source = f"spawned (the warm parent failed: {str(exc)[:300]})"
        self._launch(None)

    # -- the channel -------------------------------------------------------------------------------
    def _ask(self, req: dict, timeout_s: float, fds: tuple[int, ...] = ()) -> dict:
        try:
            self._chan.settimeout(timeout_s)
            socket.send_fds(self._chan, [json.dumps(req).encode()], list(fds))
            reply = json.loads(self._chan.recv(MAX_MESSAGE) or b"null")
        except (OSError, ValueError) as exc:   # (socket.timeout is an OSError)
            raise self._lost(f"'{req['op']}' failed: {exc}") from None
        if not isinstance(reply, dict) or "error" in reply:
            raise self._lost(f"'{req['op']}' answered {reply!r}")
        return reply

    def _lost(self, what: str) -> Exception:
        """The zygote stopped answering.  Before any worker ran it is the machine's problem; after,
        the workers it forked are the only processes that could have reached it."""
        msg = f"{self.label}'s fork server {what}" + last_output(self.log_tail(300))
        if not self.forks:
            return EnvironmentUnavailable(msg)
        return CandidateRejected("candidate.crashed" if self.untrusted else "tamper.baseline_interference", msg)

    def start(self, timeout_s: float) -> None:
        """Wait until the zygote has imported what workers import; find its pid here.
        `startup_s` runs from the spawn to its answer, so it includes any time the scorer spent
        before asking (its own torch import: pipeline/score.py spawns the zygotes first)."""
        if self._pending is not None:
            try:
                self.proc, self._pending = self._pending.result(timeout_s), None
                self._ask({"op": "ping"}, timeout_s)
            except EnvironmentUnavailable as exc:
                self._end_zygote()
                if self.plan.private_dir:   # what its view script left there (the new root's mount point)
                    shutil.rmtree(self.plan.private_dir, ignore_errors=True)
                    os.mkdir(self.plan.private_dir, 0o700)
                self._spawn_instead(exc)
        self._ask({"op": "ping"}, timeout_s)
        self.startup_s = time.perf_counter() - self._started
        self.zygote_pid = interpreter_pid(self.proc.pid, self.plan)

    # -- workers -----------------------------------------------------------------------------------
    def child_plan(self, label: str, cpus: tuple[int, ...] | None) -> SandboxPlan:
        return plan_forked(self.plan, label, cpus)

    def fork(self, plan: SandboxPlan, fds: tuple[int, ...], timeout_s: float = 30.0) -> "ForkedProcess":
        """A new worker serving on fds[0] (then its two arenas and its log); in `plan`'s cgroup
        before the caller can send it anything."""
        if self.zygote_pid is None:
            raise RuntimeError("ForkServer.start() first")
        ns_pid = int(self._ask({"op": "fork"}, timeout_s, fds)["pid"])
        self.forks += 1
        pid = host_pid_of(ns_pid, self.zygote_pid) if self.plan.namespaces else ns_pid
        if pid is None:
            raise self._lost(f"forked pid {ns_pid}, which is not its child")
        guard().watch_process(pid)
        if plan.cgroup is not None:
            plan.cgroup.adopt(pid)
        return ForkedProcess(self, pid, ns_pid)

    def wait_child(self, ns_pid: int, timeout_s: float) -> int | None:
        """The exit code of a worker it forked (as Popen.returncode), or None if still running."""
        if self.proc.poll() is not None:   # the zygote is gone, and a namespace's processes with it
            return -signal.SIGKILL
        reply = self._ask({"op": "wait", "pid": ns_pid, "timeout_s": timeout_s}, timeout_s + 10)
        return reply.get("code")

    # -- lifetime ----------------------------------------------------------------------------------
    def log_tail(self, limit: int = 4000) -> str:
        return read_tail(self.log_path, limit)

    def _cleanup(self) -> None:
        self.plan.remove()
        shutil.rmtree(self._log_dir, ignore_errors=True)

    def _end_zygote(self) -> None:
        """Stop the zygote and everything in its cgroup; close the channel."""
        if self._pending is not None:   # asked for, never started: it may exist by now
            with contextlib.suppress(EnvironmentUnavailable):
                self.proc = self._pending.result(30.0)
            self._pending = None
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(OSError):
                self._chan.settimeout(2)
                self._chan.send(json.dumps({"op": "exit"}).encode())
        if isinstance(self.proc, PidfdProcess):   # not the scorer's child: its pid is not for killpg
            if self.plan.cgroup is not None:
                self.plan.cgroup.kill()
            self.proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(5)
            self.proc.close()
        elif self.proc is not None:
            kill_group(self.plan, self.proc)
        elif self.plan.cgroup is not None:
            self.plan.cgroup.kill()
        self.proc = None
        self._chan.close()

    def close(self) -> None:
        self._end_zygote()
        self._cleanup()

    def __enter__(self) -> "ForkServer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ForkedProcess:
    """A worker the zygote forked, with the part of `subprocess.Popen` WorkerClient uses (the
    scorer is not its parent: the zygote reaps it and reports how it ended)."""

    def __init__(self, server: ForkServer, pid: int, ns_pid: int):
        self.server, self.pid, self.ns_pid = server, pid, ns_pid
        self.returncode: int | None = None

    def _ended(self, timeout_s: float) -> int | None:
        try:
            return self.server.wait_child(self.ns_pid, timeout_s)
        except (EnvironmentUnavailable, CandidateRejected):   # the zygote is gone: so is its child
            return None if pid_alive(self.pid) else -signal.SIGKILL

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._ended(0.0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.returncode = self._ended(3600.0 if timeout is None else timeout)
        if self.returncode is None:
            raise subprocess.TimeoutExpired(f"forked worker {self.pid}", timeout)
        return self.returncode
