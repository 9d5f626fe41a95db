"""Device leases: never two measurements on one device at once, across processes.

A score holds a lease on what it times on for the whole run: on the CPU the cores its workers
are pinned to (the first free ones this process may use), on CUDA the device.  Leases are file
locks (`filelock`) in one directory per host (`/tmp/perfbench-locks` whatever $TMPDIR says, or
$PERFBENCH_LOCK_DIR), so concurrent `perfbench score` commands, the
slots of `score-batch` and Ray workers on one node all share them; a lock dies with its process,
so a killed scorer never leaves a device taken.
"""
from __future__ import annotations

import os
import time
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from filelock import FileLock, Timeout

LOCK_DIR_VAR = "PERFBENCH_LOCK_DIR"
_POLL_S = 0.2


# One directory for the whole host, whatever TMPDIR a scorer runs with (leases must meet).
DEFAULT_LOCK_DIR = Path("/tmp/perfbench-locks")


def lock_dir() -> Path:
    d = Path(os.environ.get(LOCK_DIR_VAR) or DEFAULT_LOCK_DIR)
    if not d.is_dir():
        d.mkdir(parents=True, exist_ok=True)
        with suppress(OSError):
            d.chmod(0o1777)   # other users' scorers lock here too (sticky: nobody removes theirs)
    return d


@dataclass
class DeviceLease:
    """What one score holds: `cpus` (CPU tasks) or the CUDA device; release() or `with`."""

    device: str
    cpus: tuple[int, ...] = ()
    _locks: list[FileLock] = field(default_factory=list, repr=False)

    def release(self) -> None:
        for lock in self._locks:
            lock.release()
        self._locks.clear()

    def __enter__(self) -> "DeviceLease":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _try(name: str) -> FileLock | None:
    return _try_lock(FileLock(str(lock_dir() / f"{name}.lock")))


def _try_lock(lock: FileLock) -> FileLock | None:
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return None
    return lock


def acquire(device: str, threads: int = 1, *, timeout_s: float = 3600.0,
            waiting: Callable[[str], None] | None = None) -> DeviceLease:
    """Wait (up to `timeout_s`) for `device`: a CUDA device, or `threads` free cores among
    those this process may use (all of them when it may use fewer).  `waiting` is told once
    when the lease is not free at once.

    CPU leases are served in turn: whoever waits for cores holds a turnstile while it waits, and
    every CPU lease passes the turnstile first.  Without it a lease of several cores (the pytest
    plugin takes every core) waited as long as one-core scores kept overlapping, each taking a
    core the moment another was freed: 90 s behind a second test worker's scores."""
    deadline = time.monotonic() + timeout_s
    told = False

    def wait(what: str) -> None:
        nonlocal told
        if time.monotonic() > deadline:
            raise TimeoutError(f"{device}: no free {what} within {timeout_s:g} s "
                               f"(held by other perfbench runs; locks in {lock_dir()})")
        if waiting is not None and not told:
            waiting(f"waiting for {'a free core' if device == 'cpu' else device} (another measurement holds it)")
            told = True
        time.sleep(_POLL_S)

    turnstile = FileLock(str(lock_dir() / "cpu-turnstile.lock")) if device == "cpu" else None
    try:
        while turnstile is not None and _try_lock(turnstile) is None:
            wait("cores")
        while True:
            lease = _try_acquire(device, threads)
            if lease is not None:
                return lease
            wait("cores" if device == "cpu" else "device")
    finally:
        if turnstile is not None and turnstile.is_locked:
            turnstile.release()


def _cuda_lock_name(device: str) -> str:
    """The physical GPU (its PCI address): CUDA_VISIBLE_DEVICES renumbers devices per process."""
    from .device_session import cuda_pci_bus_id

    try:
        bus = cuda_pci_bus_id(device)
    except (RuntimeError, AssertionError):
        bus = None
    return "cuda-" + (bus or device.partition(":")[2] or "0").replace(":", "-")


def _try_acquire(device: str, threads: int) -> DeviceLease | None:
    if device != "cpu":
        lock = _try(_cuda_lock_name(device))
        return None if lock is None else DeviceLease(device, (), [lock])
    allowed = sorted(os.sched_getaffinity(0))
    want = min(threads, len(allowed))
    held: list[tuple[int, FileLock]] = []
    for cpu in allowed:
        lock = _try(f"cpu-{cpu}")
        if lock is not None:
            held.append((cpu, lock))
            if len(held) == want:
                return DeviceLease(device, tuple(c for c, _ in held), [lk for _, lk in held])
    for _, lock in held:
        lock.release()
    return None
