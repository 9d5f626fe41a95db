"""A `Side` whose blocks run in another process of the user's own code, on request.

For comparisons whose two sides cannot share a process: a test at two git revisions
(pytest_plugin/remote.py), two Scorch checkouts (sparse/worker.py).  The main process starts
the worker with one end of a socket pair, and drives it with JSON lines:

    worker -> {"hello": {...}}
    main   -> {"op": "start", ...parameters}     worker -> {"started": {...}} or {"error": why}
    main   -> {"op": "block", "iters": N, "seed": S}   worker -> {"ns": mean} or {"error": why}
    main   -> {"op": "done"}

Each side times itself with its own timer on inputs from the same seeds; the sampler pairs
their blocks AB-BA.  Both processes run trusted code: this is a measurement arrangement, not a
trust boundary (isolation/ is that, for candidates).
"""
from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Callable

from ..core.errors import PerfbenchError

if TYPE_CHECKING:   # (a served worker need not import the sampler)
    from .sampler import Side

# A worker imports, collects and prepares (a first compile) before it answers; past this it
# is reported as unavailable, never waited on forever.
WORKER_TIMEOUT_S = 600.0


class SideUnavailable(Exception):
    """The other process cannot time this (gone, refused, failed): the message says why."""


class Refused(Exception):
    """Raised by a worker's `start` to refuse, with the reason sent to the main process."""


def send(f: BinaryIO, msg: dict[str, Any]) -> None:
    f.write(json.dumps(msg).encode() + b"\n")
    f.flush()


def recv(f: BinaryIO) -> dict[str, Any] | None:
    """The next message, or None when the other side has gone (EOF, reset, timeout)."""
    try:
        line = f.readline()
    except OSError:
        return None
    return json.loads(line) if line else None


def last_log_line(log: str) -> str:
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    picked = next((ln for ln in reversed(lines) if ln.startswith(("E ", "FAILED", "ERROR", "SKIPPED", "Error", "error"))),
                  lines[-1] if lines else "")
    return picked[:200]


class ServedSide:
    """The main process's handle on one worker: a `Side` for the sampler once started."""

    def __init__(self, label: str, argv: Callable[[int], list[str]], *, cwd: Path, env: dict[str, str],
                 explain_exit: Callable[[int, str], str | None] = lambda rc, log: None):
        """Start the worker (`argv(fd)` is its command line given its socket's fd); it imports
        while the other side's worker starts too."""
        self.label = label
        self._explain = explain_exit
        self._sock, child = socket.socketpair()
        self._log = tempfile.TemporaryFile()
        self._proc = subprocess.Popen(argv(child.fileno()), cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                      stdout=self._log, stderr=subprocess.STDOUT, pass_fds=(child.fileno(),))
        child.close()
        self._sock.settimeout(WORKER_TIMEOUT_S)
        self._file = self._sock.makefile("rwb")

    def __enter__(self) -> "ServedSide":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self, **params: Any) -> dict[str, Any]:
        """Wait for the worker's hello, send the parameters, return what it says it started."""
        self.request_start(**params)
        return self.started()

    def request_start(self, **params: Any) -> None:
        """The first half of `start`: several workers can then prepare (compile) at once."""
        if recv(self._file) is None:
            raise SideUnavailable(self._why_gone())
        self._request({"op": "start", **params})

    def started(self) -> dict[str, Any]:
        return self._reply().get("started", {})

    def run_block(self, iters: int, seed: int) -> float:
        self._request({"op": "block", "iters": iters, "seed": seed})
        return float(self._reply()["ns"])

    def _request(self, msg: dict[str, Any]) -> None:
        try:
            send(self._file, msg)
        except OSError:
            raise SideUnavailable(self._why_gone()) from None

    def _reply(self) -> dict[str, Any]:
        reply = recv(self._file)
        if reply is None:
            raise SideUnavailable(self._why_gone())
        if "error" in reply:
            raise SideUnavailable(f"in {self.label}: {reply['error']}")
        return reply

    def _why_gone(self) -> str:
        try:
            rc = self._proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            return f"in {self.label} the worker did not answer within {WORKER_TIMEOUT_S:.0f} s"
        self._log.seek(0)
        log = self._log.read().decode(errors="replace")
        return self._explain(rc, log) or f"in {self.label} the worker ended (exit {rc}): {last_log_line(log)}"

    def close(self) -> None:
        with contextlib.suppress(OSError):   # the worker may be gone already
            send(self._file, {"op": "done"})
        for closing in (self._file.close, self._sock.close):
            with contextlib.suppress(OSError):
                closing()
        try:
            self._proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._log.close()


def serve(fd: int, hello: dict[str, Any], start: Callable[[dict[str, Any]], tuple[Side | None, dict[str, Any]]]) -> None:
    """The worker's end: hello; `start(parameters)` gives the side to time (None: nothing to
    time, e.g. the gate failed) and what to report; then blocks until done or the main process
    has gone.  `start` raises `Refused` to refuse."""
    with socket.socket(fileno=fd) as sock, sock.makefile("rwb") as f:
        send(f, {"hello": hello})
        msg = recv(f)
        if msg is None or msg.get("op") != "start":
            return
        try:
            side, info = start(msg)
        except Refused as exc:
            send(f, {"error": str(exc)})
            return
        send(f, {"started": info})
        while side is not None and (msg := recv(f)) is not None and msg.get("op") == "block":
            try:
                ns = side.run_block(int(msg["iters"]), int(msg["seed"]))
            except PerfbenchError as exc:
                send(f, {"error": str(exc)})
                return
            send(f, {"ns": ns})
