"""A worker's stdout and stderr: a pipe the scorer drains, keeping only the last 64 KiB in its
own memory (#58 (5)).

They were a file in the scorer's temp directory: a candidate could append hundreds of MiB and
start the disk's writeback while the other side was timed, and docs/security.md promises that
nothing a candidate writes reaches a disk.  A pipe holds at most its buffer in the kernel; a
thread of the scorer reads it as it fills (a worker that printed more than a pipe's buffer in
one call would otherwise block, and time out), so a worker's output costs the scorer a read
per 64 KiB and never more memory than LIMIT.  While the other side is timed, the candidate is
frozen and writes nothing.
"""
from __future__ import annotations

import fcntl
import os
import select
import threading

LIMIT = 64 * 1024
_CHUNK = 64 * 1024


class LogTail:
    """The read end of a worker's output pipe and the last `limit` bytes read from it.  Pass
    `write_fd` to the worker as its fds 1 and 2, then `started()` closes this process's copy."""

    def __init__(self, label: str, limit: int = LIMIT):
        self.limit = limit
        self._read_fd, self.write_fd = os.pipe2(os.O_CLOEXEC)
        fcntl.fcntl(self._read_fd, fcntl.F_SETFL, fcntl.fcntl(self._read_fd, fcntl.F_GETFL) | os.O_NONBLOCK)
        self._stop_r, self._stop_w = os.pipe2(os.O_CLOEXEC)
        self._buf = bytearray()
        self._lock = threading.Lock()
        self._eof = False
        self.total = 0   # bytes the worker wrote
        self._thread = threading.Thread(target=self._drain, name=f"perfbench-log-{label}", daemon=True)
        self._thread.start()

    def started(self) -> None:
        """The worker holds the write end now: close ours, so its exit is the pipe's end."""
        if self.write_fd >= 0:
            os.close(self.write_fd)
            self.write_fd = -1

    def _read_available(self) -> None:
        """Everything the pipe holds now (under the lock: reads stay in the order written)."""
        while not self._eof:
            try:
                chunk = os.read(self._read_fd, _CHUNK)
            except BlockingIOError:
                return
            if not chunk:
                self._eof = True
                return
            self.total += len(chunk)
            self._buf += chunk
            if len(self._buf) > self.limit:
                del self._buf[:len(self._buf) - self.limit]

    def _drain(self) -> None:
        while True:
            ready, _, _ = select.select([self._read_fd, self._stop_r], [], [])
            if self._stop_r in ready:
                return
            with self._lock:
                self._read_available()
                if self._eof:
                    return

    def tail(self, limit: int = 4000) -> str:
        """The last `limit` bytes the worker wrote (what it wrote up to now included)."""
        with self._lock:
            if self._read_fd >= 0:
                self._read_available()
            return bytes(self._buf[-limit:]).decode(errors="replace") if limit > 0 else ""

    def close(self) -> None:
        """Stop the reader and close the pipe (the tail stays readable)."""
        self.started()
        if self._read_fd < 0:
            return
        os.write(self._stop_w, b"x")
        self._thread.join(timeout=5)
        with self._lock:
            self._read_available()   # what was written before the stop, if the reader had not yet
            if not self._thread.is_alive():
                for fd in (self._read_fd, self._stop_r, self._stop_w):
                    os.close(fd)
                self._read_fd = self._stop_r = self._stop_w = -1
