"""The scorer's handle on one worker process: spawn, request with a timeout, kill, clean up.

Every way a worker can fail becomes a `CandidateRejected` with a named reason:
`candidate.timeout` (no answer in time; the worker is killed), `candidate.crashed` (killed by a
signal, e.g. SIGSEGV), `candidate.exited` (called exit), `resource.memory` (killed by the kernel
for going over its cgroup's memory limit), `tamper.protocol` (an answer that is not a well-formed
reply to this request).
"""
from __future__ import annotations

import itertools
import json
import os
import re
import signal
import socket
import subprocess
import time
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from ...core.deadline import Deadline
from ...core.errors import CandidateRejected, UsageError
from ...system.procfs import CPU_CLOCK_S, TICK_S, process_clocks_readable, session_cpu_seconds, session_pids
from ..sandbox.cgroup import CgroupError
from ..sandbox.plan import Isolation, SandboxPlan, isolation_from_probe, plan_sandbox
from ..wire.arena import SharedArena
from ..wire.protocol import Op, ProtocolError, recv
from .cpu_threads import CpuThreading
from .launch import interpreter_pid, kill_group, last_output, spawn
from .log_tail import LogTail

if TYPE_CHECKING:
    from .fork_server import ForkServer

MAX_BLOB_BYTES = 1 << 31
MAX_MESSAGE_CHARS = 2000
# The reason codes a worker may answer with: the candidate's own failures (what the worker raises:
# candidate.raised, candidate.signature, tamper.timer_patched, resource.disk, ..., worker.error).
CANDIDATE_REASON = re.compile(r"(candidate|tamper|correctness|output|resource|worker)\.[a-z_]{1,40}")


def candidate_reason(code: object) -> str | None:
    """The verdict's reason for an untrusted worker's error `code`, or None where the code is not
    the candidate's to give: it may only blame the candidate (a code like `infra.retry` could get
    a caught cheat another roll from a harness), so anything else is `tamper.protocol`."""
    if code == "usage":
        return "candidate.raised"
    if not isinstance(code, str) or not CANDIDATE_REASON.fullmatch(code):
        return None
    return code


class WorkerClient:
    """One worker process.  Use as a context manager: the process never outlives it.

    `sandbox=True` puts it in every layer of sandbox/plan.py this machine allows (its own cgroup
    always, with a cpuset of `threading`'s cores; the namespaces and dropped privileges for
    untrusted workers); `hide` names trusted files the worker must not read, `expose` the files
    it must (the candidate, the task) when the scorer's home is hidden from it.  What was active is in `isolation` after `start()`.
    With `server`, the worker is forked from that zygote (fork_server.py) instead of started as
    a fresh interpreter: it runs in the zygote's sandbox, in a cgroup of its own.
    """

    def __init__(self, label: str, *, untrusted: bool, sandbox: bool = True,
                 hide: tuple[str, ...] = (), expose: tuple[str, ...] = (), threading: CpuThreading | None = None,
                 server: "ForkServer | None" = None, deadline: Deadline | None = None):
        self.label = label
        self.untrusted = untrusted
        self.deadline = deadline   # the score's: no request waits past it (core/deadline.py)
        self.log = LogTail(label)   # its stdout and stderr: a pipe, the last 64 KiB kept (log_tail.py)
        cpus = threading.cpus if threading is not None else None
        if server is not None:
            self.plan = server.child_plan(label, cpus)
        elif sandbox:
            self.plan = plan_sandbox(label, untrusted=untrusted, hide=hide, expose=expose, cpus=cpus)
        else:
            self.plan = SandboxPlan(None, False, missing=("sandbox: switched off by the caller",))
        self.isolation: Isolation | None = None
        # Shared memory for the CPU timing protocol (arena.py): inputs in, output addresses out.
        self.input_arena, self.output_table = SharedArena(f"{label}-inputs"), SharedArena(f"{label}-table")
        arena_fds = (self.input_arena.fd, self.output_table.fd)
        ours, theirs = socket.socketpair()
        t0 = time.perf_counter()
        self.forked = server is not None
        try:
            if server is not None:
                self.proc = server.fork(self.plan, (theirs.fileno(), *arena_fds, self.log.write_fd))
            else:
                self.proc = spawn("perfbench.isolation.processes.worker", [str(theirs.fileno()), *map(str, arena_fds)],
                                  self.plan, (theirs.fileno(), *arena_fds), self.log.write_fd, threading)
        except BaseException:
            ours.close()
            self.input_arena.close()
            self.output_table.close()
            self.plan.remove()
            self.log.close()
            raise
        finally:
            theirs.close()
            self.log.started()
        self._conn = Connection(ours.detach())
        self._ids = itertools.count(1)
        self._started = t0
        self.startup_s: float | None = None
        self._frozen = False
        self.worker_pid: int | None = None

    def start(self, timeout_s: float) -> Isolation:
        """Wait until the worker answers; record the isolation it reports before any code loads."""
        self.request(Op.PING, timeout_s)
        self.startup_s = time.perf_counter() - self._started
        if self.plan.cgroup is not None:
            # Up to here both workers imported torch side by side; from here on the worker stays
            # on the task's cores (it pinned itself too, cpu_threads.pin_from_env).
            try:
                self.plan.cgroup.hold_cpus()
            except OSError as exc:   # recorded as a missing layer (isolation_from_probe), not a crash
                self.plan.cgroup.cpus, self.plan.cgroup.cpuset_missing = None, f"cpuset: {exc}"
        header, _ = self.request(Op.PROBE, timeout_s)
        probe = header.get("probe") if isinstance(header.get("probe"), dict) else {}
        self.isolation = isolation_from_probe(probe, self.plan)
        # The interpreter itself (its memory holds the outputs the scorer reads).
        self.worker_pid = self.proc.pid if self.forked else interpreter_pid(self.proc.pid, self.plan)
        return self.isolation

    # -- the cgroup ------------------------------------------------------------------------------
    def freeze(self) -> None:
        """Stop every process of this worker (no-op without a cgroup).  A candidate's worker
        that does not freeze in time is rejected (`candidate.unfreezable`), never a crash of the
        scorer: its verdict would depend on a freeze that did not happen (#39)."""
        if self.plan.cgroup is not None and not self._frozen:
            try:
                self.plan.cgroup.freeze()
            except (CgroupError, OSError) as exc:
                if not self.untrusted:
                    raise
                raise CandidateRejected("candidate.unfreezable",
                                        f"{self.label}'s worker could not be frozen: {exc}") from None
            self._frozen = True

    def thaw(self) -> None:
        if self.plan.cgroup is not None and self._frozen:
            self.plan.cgroup.thaw()
            self._frozen = False

    def cpu_seconds(self) -> float | None:
        """CPU used so far by everything this worker started: its cgroup, else its session."""
        if self.plan.cgroup is not None:
            return self.plan.cgroup.cpu_seconds()
        return session_cpu_seconds(self.proc.pid)

    @property
    def cpu_resolution_s(self) -> float:
        """The unit `cpu_seconds` counts in: a cgroup's (v2 microseconds, v1 nanoseconds: the
        coarser one stands for both), else the processes' CPU clocks (nanoseconds), else /proc's
        clock ticks.  (Children reaped inside a block are counted in ticks even then: honest
        workers start no process while timed.)"""
        if self.plan.cgroup is not None:
            return 1e-6
        return CPU_CLOCK_S if process_clocks_readable() else TICK_S

    # -- requests --------------------------------------------------------------------------------
    def request(self, op: Op, timeout_s: float, *, reply_bytes: int = 0,
                **fields: Any) -> tuple[dict[str, Any], list[bytes]]:
        """Send `op` with `fields`; its reply's header and blobs.  `reply_bytes`: the most the
        reply's blobs may hold (what this request can legitimately return: 0 but for CHECK and
        FETCH); a reply past it, or past the header's limits, is `tamper.protocol`."""
        rid = next(self._ids)
        limit, by_deadline = (timeout_s, False) if self.deadline is None else self.deadline.bound(timeout_s)
        if by_deadline and limit <= 0:
            self.kill()
            raise self.deadline.exceeded(f"{self.label}'s '{op}'")
        self.thaw()   # a frozen worker cannot answer
        try:
            self._conn.send_bytes(json.dumps(dict(fields, op=op, id=rid)).encode())
            ready = self._conn.poll(limit)
        except (BrokenPipeError, EOFError, OSError):
            raise self._death(op) from None
        if not ready:
            self.kill()
            if by_deadline:
                raise self.deadline.exceeded(f"{self.label}'s '{op}'")
            raise CandidateRejected("candidate.timeout", f"{self.label} did not finish '{op}' within {timeout_s:g} s")
        try:
            header, blobs = recv(self._conn, min(reply_bytes, MAX_BLOB_BYTES))
        except (EOFError, OSError):
            try:  # a crashing worker closes its socket a moment before it is reaped
                self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:  # alive, so it wrote something that is not a reply
                self.kill()
                raise CandidateRejected("tamper.protocol", f"{self.label} wrote malformed data to its "
                                        f"channel during '{op}'") from None
            raise self._death(op) from None
        except ProtocolError as exc:
            self.kill()
            raise CandidateRejected("tamper.protocol", f"{self.label}: {exc}") from None
        if header.get("id") != rid:
            self.kill()
            raise CandidateRejected("tamper.protocol", f"{self.label} answered a request it was not asked")
        if "error" in header:
            reason, message = header["error"], str(header.get("message", ""))[:MAX_MESSAGE_CHARS]
            if reason in ("usage", "worker.error") and not self.untrusted:
                raise UsageError(f"{self.label}: {message}")
            code = candidate_reason(reason)
            if code is None:
                self.kill()
                raise CandidateRejected("tamper.protocol", f"{self.label} answered with the error code "
                                        f"{str(reason)[:80]!r}")
            raise CandidateRejected(code, f"{self.label}: {message}")
        return header, blobs

    def _death(self, op: str) -> CandidateRejected:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.proc.returncode
        said = last_output(self.log_tail(400))
        cgroup = self.plan.cgroup
        if cgroup is not None and cgroup.oom_kills():   # the kernel killed it (or one of its processes)
            limit = cgroup.memory_max
            return CandidateRejected("resource.memory", f"{self.label} went over its memory limit "
                                     f"({limit / 2**30:.1f} GiB) during '{op}'{said}" if limit else
                                     f"{self.label} went over its memory limit during '{op}'{said}")
        if code is not None and code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return CandidateRejected("candidate.crashed", f"{self.label} was killed by {name} during '{op}'{said}")
        return CandidateRejected("candidate.exited", f"{self.label} exited (status {code}) during '{op}'{said}")

    # -- lifetime --------------------------------------------------------------------------------
    def log_tail(self, limit: int = 4000) -> str:
        return self.log.tail(limit)

    def kill(self) -> None:
        """SIGKILL the worker's whole process group (its own session) and wait until it is gone,
        grandchildren included, so nothing the candidate started outlives the score."""
        kill_group(self.plan, self.proc)
        self._frozen = False
        deadline = time.monotonic() + 5
        while session_pids(self.proc.pid) and time.monotonic() < deadline:
            for pid in session_pids(self.proc.pid):  # members that left the group but not the session
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(0.01)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.request(Op.EXIT, timeout_s=2)
            except (CandidateRejected, UsageError):
                pass
        self.kill()  # also reaps anything the worker left in its group
        self._conn.close()
        self.input_arena.close()
        self.output_table.close()
        self.plan.remove()
        self.log.close()   # (its tail stays readable)

    def __enter__(self) -> "WorkerClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
