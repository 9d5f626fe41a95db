"""What the scorer can see of a worker from outside: CPU time of everything in its session.

Read from /proc by the trusted parent, so the candidate cannot fake it.  Linux only; elsewhere
the functions report None and the checks that use them are skipped.
"""
from __future__ import annotations

import functools
import os
import time

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
# The unit /proc counts a process's CPU in (a clock tick, 10 ms on Linux): its user and system
# times are each cut down to whole ticks, so a reading is up to two ticks below the truth.
TICK_S = 1.0 / _TICKS
# What a process's CPU clock counts in (clock_gettime on the clock of its pid: nanoseconds).
CPU_CLOCK_S = 1e-9


def _stat_fields(pid: str) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _live_pids_where(field: int, value: int) -> list[int]:
    """Live (non-zombie) processes whose stat field `field` (after the ')') equals `value`."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    out = []
    for e in entries:
        if e.isdigit():
            f = _stat_fields(e)
            if f is not None and len(f) > field and f[field] == str(value) and f[0] != "Z":
                out.append(int(e))
    return out


def session_pids(sid: int) -> list[int]:
    """Live processes in session `sid`."""
    return _live_pids_where(3, sid)


def child_pids(ppid: int) -> list[int]:
    """Live processes whose parent is `ppid`."""
    return _live_pids_where(1, ppid)


def host_pid_of(ns_pid: int, parent: int) -> int | None:
    """The pid (in our namespace) of `parent`'s child whose pid in its own PID namespace is
    `ns_pid` (the last field of NSpid), or None."""
    for kid in child_pids(parent):
        try:
            for line in open(f"/proc/{kid}/status", encoding="ascii", errors="replace"):
                if line.startswith("NSpid:"):
                    if int(line.split()[-1]) == ns_pid:
                        return kid
                    break
        except (OSError, ValueError):
            continue
    return None


def _process_clock_s(pid: int) -> float | None:
    """CPU seconds of every thread process `pid` ran, exited threads included, to the
    nanosecond: the process's CPU clock (Linux's clock id for a pid, CPUCLOCK_SCHED).  None once
    the process is reaped, or where the kernel has no such clock."""
    try:
        return time.clock_gettime(((~pid) << 3) | 2)
    except (OSError, OverflowError, AttributeError):
        return None


@functools.cache
def process_clocks_readable() -> bool:
    """Whether this kernel lets us read a process's CPU clock (asked once, of ourselves)."""
    return _process_clock_s(os.getpid()) is not None


def session_cpu_seconds(sid: int) -> float | None:
    """CPU seconds used by session `sid` (the worker's own): each of its processes (zombies
    too) by its CPU clock, and what each reaped of its children.

    A process's clock counts in nanoseconds, so a second thread is seen however short its work
    in a block.  Where a clock cannot be read (the process was reaped between the two reads, or
    the kernel has none), /proc's user and system ticks stand in.  Reaped children are known
    only to /proc, in ticks (cutime, cstime): without them a child that did its work and was
    waited for inside a block would not be counted at all.  A process that left the session
    (setsid) is not counted: only a cgroup holds every process a worker starts."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    total = 0.0
    for e in entries:
        if not e.isdigit():
            continue
        f = _stat_fields(e)
        # after the ')': state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
        # utime stime cutime cstime
        if f is None or len(f) <= 14 or f[3] != str(sid):
            continue
        own = _process_clock_s(int(e))
        total += (int(f[11]) + int(f[12])) / _TICKS if own is None else own
        total += (int(f[13]) + int(f[14])) / _TICKS
    return total


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def pid_namespace() -> str:
    """This process's pid namespace id (digits of /proc/self/ns/pid)."""
    try:
        return "".join(c for c in os.readlink("/proc/self/ns/pid") if c.isdigit()) or "0"
    except OSError:
        return "0"


def owner_tag() -> str:
    """`<pid namespace>-<pid>`: put in the name of what this scorer leaves in shared places (a
    cgroup, a private directory), so a later scorer can tell when its owner is gone."""
    return f"{pid_namespace()}-{os.getpid()}"


def owner_gone(namespace: str, pid: str) -> bool:
    """The owner named by a tag is dead.  Only decidable in our own pid namespace (scorers in other
    containers may share the hierarchy or /tmp): elsewhere, never assumed gone."""
    return namespace == pid_namespace() and not pid_alive(int(pid))
