"""The scorer's handle on one worker process: spawn, request with a timeout, kill, clean up.

Every way a worker can fail becomes a `CandidateRejected` with a named reason:
`candidate.timeout` (no answer in time; the worker is killed), `candidate.crashed` (killed by a
signal, e.g. SIGSEGV), `candidate.exited` (called exit), `tamper.protocol` (an answer that is not
a well-formed reply to this request).
"""
from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import perfbench

from ..errors import CandidateRejected, UsageError
from .procfs import session_pids
from .protocol import ProtocolError, recv

MAX_BLOB_BYTES = 1 << 31


def _worker_env() -> dict[str, str]:
    # The worker must import this very perfbench, installed or not.
    env = dict(os.environ)
    root = str(Path(perfbench.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    # Two workers take turns on the same cores.  OpenMP's default is to let idle threads spin
    # for a while after each parallel region, which steals the cores from the *other* worker's
    # next block and inflates whichever side runs second; passive waiting puts them to sleep.
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    return env


class WorkerClient:
    """One worker process.  Use as a context manager: the process never outlives it."""

    def __init__(self, label: str, *, untrusted: bool, log_dir: Path | None = None):
        self.label = label
        self.untrusted = untrusted
        self._log_dir = log_dir or Path(tempfile.mkdtemp(prefix="perfbench-worker-"))
        self.log_path = self._log_dir / f"{label}.log"
        ours, theirs = socket.socketpair()
        with open(self.log_path, "wb") as log:
            # A fresh interpreter in its own session: no fds but the socket and the log file, and
            # killpg() reaches anything it starts.
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "perfbench.isolation.worker", str(theirs.fileno())],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                pass_fds=(theirs.fileno(),), start_new_session=True, env=_worker_env())
        theirs.close()
        self._conn = Connection(ours.detach())
        self._ids = itertools.count(1)

    # -- requests --------------------------------------------------------------------------------
    def request(self, op: str, timeout_s: float, **fields: Any) -> tuple[dict[str, Any], list[bytes]]:
        rid = next(self._ids)
        try:
            self._conn.send_bytes(json.dumps(dict(fields, op=op, id=rid)).encode())
            ready = self._conn.poll(timeout_s)
        except (BrokenPipeError, EOFError, OSError):
            raise self._death(op) from None
        if not ready:
            self.kill()
            raise CandidateRejected("candidate.timeout", f"{self.label} did not finish '{op}' within {timeout_s:g} s")
        try:
            header, blobs = recv(self._conn, MAX_BLOB_BYTES)
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
            reason, message = str(header["error"]), str(header.get("message", ""))
            if reason in ("usage", "worker.error") and not self.untrusted:
                raise UsageError(f"{self.label}: {message}")
            if reason == "usage":
                reason = "candidate.raised"
            raise CandidateRejected(reason, f"{self.label}: {message}")
        return header, blobs

    def _death(self, op: str) -> CandidateRejected:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.proc.returncode
        last = self.log_tail(400).strip().splitlines()
        said = f"; last output: {last[-1][:200]}" if last else ""
        if code is not None and code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return CandidateRejected("candidate.crashed", f"{self.label} was killed by {name} during '{op}'{said}")
        return CandidateRejected("candidate.exited", f"{self.label} exited (status {code}) during '{op}'{said}")

    # -- lifetime --------------------------------------------------------------------------------
    def log_tail(self, limit: int = 4000) -> str:
        try:
            data = self.log_path.read_bytes()
        except OSError:
            return ""
        return data[-limit:].decode(errors="replace")

    def kill(self) -> None:
        """SIGKILL the worker's whole process group (its own session) and wait until it is gone,
        grandchildren included, so nothing the candidate started outlives the score."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL is not ignorable
            pass
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
                self.request("exit", timeout_s=2)
            except (CandidateRejected, UsageError):
                pass
        self.kill()  # also reaps anything the worker left in its group
        self._conn.close()

    def __enter__(self) -> "WorkerClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
